/* bench_spec.h - g4 bench --verify (bench_spec.c), on g4.h only. */
#ifndef G4_BENCH_SPEC_H
#define G4_BENCH_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "g4.h"

typedef struct bench_spec_row {
    long   k;      /* tokens verified in one pass (1 = a plain decode step) */
    int    draft;  /* 1 = one assistant draft step instead */
    double med_s;  /* median seconds per call */
} bench_spec_row;

/* Times decode/verify of each k in ks[0..nk) (and one draft step when md names an
 * assistant) at context depth, reps repetitions after warmup untimed ones; rows[nk + 1].
 * batch_order: verify in llama.cpp's batch float order (no G4_EVAL_DECODE_ORDER), for
 * comparison. 1 ok; 0 with a message in err (or *stop set). */
int bench_spec_run(g4_model *m, const char *md, const long *ks, int nk, long depth, long reps, int warmup, uint64_t seed,
                   int batch_order, const volatile int *stop, bench_spec_row *rows, int *n_rows, char *err, size_t errlen);

#endif
