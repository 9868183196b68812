/* g4-depth - what decoding deep in the context costs, measured so that a noisy host's drifts
 * cancel: two sessions of one model, one holding DEPTH random tokens and one nearly empty,
 * decode in turn, one token each, and the medians of their per-token times are compared.
 * (g4 bench -d 0,N times the two depths minutes apart, when this VM's neighbours may have
 * changed its memory bandwidth by 10-20%.)
 *
 *   g4-depth -m FILE [-d DEPTH] [-t THREADS] [-r ROUNDS] [-s STEPS]
 *
 * Each round restarts the shallow session and cuts the deep one back to DEPTH, then runs
 * STEPS token pairs. Prints both medians and the loss, 1 - t(shallow) / t(deep): the share of
 * the shallow rate lost at depth (issue 17's "own loss"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "g4.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int usage(FILE *f, int rc) {
    fprintf(f, "usage: g4-depth -m FILE [-d DEPTH (4096)] [-t THREADS (2)] [-r ROUNDS (6)] [-s STEPS (32)]\n");
    return rc;
}

static int arg_int(const char *s, int lo, int hi, int *out) {
    char *end;
    const long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int depth = 4096, threads = 2, rounds = 6, steps = 32;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(stdout, 0);
        if (i + 1 >= argc) return usage(stderr, 2);
        const char *o = argv[i], *v = argv[++i];
        int ok = 1;
        if (!strcmp(o, "-m")) path = v;
        else if (!strcmp(o, "-d")) ok = arg_int(v, 1, 1 << 20, &depth);
        else if (!strcmp(o, "-t")) ok = arg_int(v, 1, 512, &threads);
        else if (!strcmp(o, "-r")) ok = arg_int(v, 1, 1000, &rounds);
        else if (!strcmp(o, "-s")) ok = arg_int(v, 1, 4096, &steps);
        else ok = 0;
        if (!ok) {
            fprintf(stderr, "g4-depth: bad option %s %s\n", o, v);
            return usage(stderr, 2);
        }
    }
    if (!path) return usage(stderr, 2);

    char err[256];
    g4_model_opts mo = { .n_threads = threads };
    g4_model *m;
    if (g4_model_open(&m, path, &mo, err, sizeof err) != G4_OK) {
        fprintf(stderr, "g4-depth: %s\n", err);
        return 1;
    }
    const g4_session_opts so = { .n_ctx = depth + steps + 1, .n_ubatch = 512 };
    g4_session *shallow = NULL, *deep = NULL;
    if (g4_session_create(&shallow, m, &so, err, sizeof err) != G4_OK ||
        g4_session_create(&deep, m, &so, err, sizeof err) != G4_OK) {
        fprintf(stderr, "g4-depth: %s\n", err);
        g4_session_free(shallow);
        g4_model_close(m);
        return 1;
    }
    const int n = rounds * steps;
    int32_t *tok = malloc((size_t)depth * sizeof *tok);          /* [depth] the deep session's tokens */
    double *ts = malloc((size_t)n * sizeof *ts), *td = malloc((size_t)n * sizeof *td); /* [n] seconds */
    int rc = 1;
    if (!tok || !ts || !td) {
        fprintf(stderr, "g4-depth: out of memory\n");
        goto done;
    }
    const int32_t nv = g4_model_n_vocab(m);
    uint32_t s = 1;
    for (int i = 0; i < depth; i++) {
        s = s * 1103515245u + 12345u;
        tok[i] = 2 + (int32_t)((s >> 8) % (uint32_t)(nv > 2 ? nv - 2 : 1));
    }
    fprintf(stderr, "g4-depth: filling %d positions\n", depth);
    if (g4_session_eval(deep, tok, (size_t)depth) != G4_OK) {
        fprintf(stderr, "g4-depth: %s\n", g4_session_errmsg(deep));
        goto done;
    }
    int k = 0;
    for (int r = 0; r < rounds; r++) {
        g4_session_reset(shallow);
        g4_session_truncate(deep, depth);
        if (g4_session_eval(shallow, tok, 1) != G4_OK) goto eval_fail;
        for (int i = 0; i < steps; i++, k++) {
            const int32_t t = tok[(r * steps + i + 1) % depth];
            const double a = now_s();
            if (g4_session_eval(shallow, &t, 1) != G4_OK) goto eval_fail;
            const double b = now_s();
            if (g4_session_eval(deep, &t, 1) != G4_OK) goto eval_fail;
            ts[k] = b - a;
            td[k] = now_s() - b;
        }
    }
    qsort(ts, (size_t)n, sizeof *ts, cmp_d);
    qsort(td, (size_t)n, sizeof *td, cmp_d);
    printf("%d threads: depth 1..%d %.2f ms, depth %d..%d %.2f ms per token (medians of %d); loss at depth %.1f%%\n",
           threads, steps, ts[n / 2] * 1e3, depth, depth + steps - 1, td[n / 2] * 1e3, n, (1.0 - ts[n / 2] / td[n / 2]) * 100.0);
    rc = 0;
    goto done;
eval_fail:
    fprintf(stderr, "g4-depth: eval failed: %s / %s\n", g4_session_errmsg(shallow), g4_session_errmsg(deep));
done:
    free(tok);
    free(ts);
    free(td);
    g4_session_free(shallow);
    g4_session_free(deep);
    g4_model_close(m);
    return rc;
}
