/* t_model.h - random test models and sessions for the test groups (testgen, from memory).
 *
 *   t_model t;
 *   if (t_model_open(&t, &opts, n_threads, NULL)) { ... t.m ...; t_model_close(&t); }
 *   g4_session *s = t_sess(t.m, n_ctx, n_ubatch, G4_CACHE_F32, 0);
 */
#ifndef G4_T_MODEL_H
#define G4_T_MODEL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g4_impl.h"
#include "testgen.h"

typedef struct t_model {
    void *buf;     /* the GGUF bytes (owned when own_buf) */
    size_t len;
    int own_buf;
    g4_model *m;
} t_model;

/* Opens buf[0..len) (taking it over when own); kernels NULL = default. 0 on failure. */
static inline int t_model_open_buf(t_model *t, void *buf, size_t len, int own, int n_threads, const char *kernels) {
    char err[512];
    t->buf = buf;
    t->len = len;
    t->own_buf = own;
    g4_model_opts mo = {0};
    mo.n_threads = n_threads;
    mo.kernels = kernels;
    if (model_open_mem(&t->m, buf, len, "t.gguf", &mo, err, sizeof err) != G4_OK) {
        fprintf(stderr, "    open: %s\n", err);
        if (own) free(buf);
        return 0;
    }
    return 1;
}

static inline int t_model_open(t_model *t, const g4_testgen_opts *o, int n_threads, const char *kernels) {
    char err[512];
    void *buf;
    size_t len;
    memset(t, 0, sizeof *t);
    if (testgen_write_mem(&buf, &len, o, err, sizeof err) != G4_OK) {
        fprintf(stderr, "    testgen: %s\n", err);
        return 0;
    }
    return t_model_open_buf(t, buf, len, 1, n_threads, kernels);
}

static inline void t_model_close(t_model *t) {
    g4_model_close(t->m);
    if (t->own_buf) free(t->buf);
}

static inline g4_session *t_sess(g4_model *m, int n_ctx, int n_ubatch, int cache, int logits_all) {
    g4_session_opts so = {0};
    so.n_ctx = n_ctx;
    so.n_ubatch = n_ubatch;
    so.cache_type = cache;
    so.logits_all = logits_all;
    g4_session *s = NULL;
    char err[256];
    if (g4_session_create(&s, m, &so, err, sizeof err) != G4_OK) fprintf(stderr, "    session: %s\n", err);
    return s;
}

static inline int32_t t_argmax(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

#endif
