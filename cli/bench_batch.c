/* bench_batch.c - g4 bench -np: N sessions decoding together through one g4_batch, as
 * llama-batched-bench measures it (-npp = -p tokens of prompt per sequence, -ntg = -n
 * generated tokens per sequence, -npl = -np sequences).
 *
 * One repetition: every session is reset; the N prompts (BOS + random ids) are evaluated in
 * one g4_batch_eval (S_PP = N * p / that time); then n steps, each one g4_batch_eval of one
 * random id per session (S_TG = N * n / their time: the aggregate decode rate; a sequence
 * decodes at S_TG / N). Only g4_batch_eval calls are timed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_batch.h"
#include "progress.h"

static uint64_t bb_rng(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int bench_batch_open(bench_batch *bb, g4_model *m, int np, int n_ctx, int cache, char *err, size_t errlen) {
    memset(bb, 0, sizeof *bb);
    bb->np = np;
    bb->s = calloc((size_t)np, sizeof *bb->s);
    bb->tok = calloc((size_t)np, sizeof *bb->tok);
    bb->n = calloc((size_t)np, sizeof *bb->n);
    bb->toks = calloc((size_t)np * (size_t)n_ctx, sizeof *bb->toks);
    if (!bb->s || !bb->tok || !bb->n || !bb->toks) { snprintf(err, errlen, "out of memory"); return 0; }
    g4_session_opts so = {0};
    so.n_ctx = n_ctx;
    so.cache_type = cache;
    so.batch_only = 1;
    for (int i = 0; i < np; i++)
        if (g4_session_create(&bb->s[i], m, &so, err, errlen) != G4_OK) return 0;
    g4_batch_opts bo = {0};
    bo.n_ubatch = 512;
    bo.n_out = np;
    if (g4_batch_create(&bb->b, m, &bo, err, errlen) != G4_OK) return 0;
    bb->n_ctx = n_ctx;
    return 1;
}

void bench_batch_close(bench_batch *bb) {
    if (bb->s) for (int i = 0; i < bb->np; i++) g4_session_free(bb->s[i]);
    g4_batch_free(bb->b);
    free(bb->s);
    free(bb->tok);
    free(bb->n);
    free(bb->toks);
    memset(bb, 0, sizeof *bb);
}

int bench_batch_once(bench_batch *bb, const g4_model *m, long n_prompt, long n_gen, uint64_t *rng,
                     const volatile int *stop, double *t_pp, double *t_tg) {
    const int32_t nv = g4_model_n_vocab(m), bos = g4_model_token_bos(m);
    *t_pp = *t_tg = 0;
    for (int i = 0; i < bb->np; i++) {
        g4_session_reset(bb->s[i]);
        int32_t *t = bb->toks + (size_t)i * (size_t)bb->n_ctx;
        for (long k = 0; k < n_prompt + n_gen; k++) t[k] = (int32_t)(bb_rng(rng) % (uint64_t)nv);
        if (bos >= 0) t[0] = bos;
        bb->tok[i] = t;
        bb->n[i] = (size_t)n_prompt;
    }
    if (n_prompt > 0) {
        double t0 = progress_now();
        if (g4_batch_eval(bb->b, bb->s, bb->tok, bb->n, (size_t)bb->np) != G4_OK) return 0;
        *t_pp = progress_now() - t0;
    }
    double t0 = progress_now();
    for (long k = 0; k < n_gen && !*stop; k++) {
        for (int i = 0; i < bb->np; i++) {
            bb->tok[i] = bb->toks + (size_t)i * (size_t)bb->n_ctx + n_prompt + k;
            bb->n[i] = 1;
        }
        if (g4_batch_eval(bb->b, bb->s, bb->tok, bb->n, (size_t)bb->np) != G4_OK) return 0;
    }
    *t_tg = progress_now() - t0;
    return 1;
}

void bench_batch_memory(const bench_batch *bb, size_t *kv, size_t *scratch, size_t *batch) {
    g4_session_memory(bb->s[0], kv, scratch);
    *batch = g4_batch_memory(bb->b);
}
