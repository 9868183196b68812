/* bench_batch.h - the batched test of g4 bench (-np), on g4.h only. */
#ifndef G4_BENCH_BATCH_H
#define G4_BENCH_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "g4.h"

typedef struct bench_batch {
    int           np;     /* sessions decoding together */
    int           n_ctx;  /* positions of each session */
    g4_session  **s;      /* [np] */
    g4_batch     *b;
    const int32_t **tok;  /* [np] current token pointers */
    size_t       *n;      /* [np] */
    int32_t      *toks;   /* [np][n_ctx] the random ids of one repetition */
} bench_batch;

/* np sessions of n_ctx positions (cache: G4_CACHE_*) and one batch; 0 + message on failure
 * (call bench_batch_close either way). */
int  bench_batch_open(bench_batch *bb, g4_model *m, int np, int n_ctx, int cache, char *err, size_t errlen);
void bench_batch_close(bench_batch *bb);
/* One repetition (see bench_batch.c): seconds of the prompt eval and of the n_gen decode
 * steps. 0 on an eval error (g4_batch_errmsg(bb->b)). *stop cuts the decode loop short. */
int  bench_batch_once(bench_batch *bb, const g4_model *m, long n_prompt, long n_gen, uint64_t *rng,
                      const volatile int *stop, double *t_pp, double *t_tg);
/* bytes: one session's KV cache and scratch, the batch's scratch */
void bench_batch_memory(const bench_batch *bb, size_t *kv, size_t *scratch, size_t *batch);

#endif
