/* batch.c - g4_batch: one rows scratch (g4_work) for evaluating many sessions of a model in
 * one pass over its weights.
 *
 * Owns: the batch's options and arena, validation of a batched eval (everything is checked
 * before the first cache write, errors name the session), the shared logits rows.
 * Does not own: the schedule (eval.c), the arithmetic (forward.c), the caches (session.c).
 */
#include "forward.h"

#include <stdio.h>
#include <string.h>

struct g4_batch {
    g4_model *m;
    g4_work   work;
    void     *arena;        /* 64-byte aligned */
    void     *arena_raw;
    size_t    arena_bytes;
    char      err[256];
};

g4_status g4_batch_create(g4_batch **out, g4_model *m, const g4_batch_opts *opts, char *err, size_t errlen) {
    if (err && errlen) err[0] = '\0';
    if (!out) return g4_errf(G4_ERR_ARG, err, errlen, "g4_batch_create: out is NULL");
    *out = NULL;
    if (!m) return g4_errf(G4_ERR_ARG, err, errlen, "g4_batch_create: model is NULL");
    if (m->vocab_only || !m->layers || !m->kern)
        return g4_errf(G4_ERR_ARG, err, errlen, "g4_batch_create: the model was opened vocab_only (no weights)");
    g4_batch_opts o = {0};
    if (opts) o = *opts;
    if (o.n_ubatch < 0 || o.n_ubatch > 65536)
        return g4_errf(G4_ERR_ARG, err, errlen, "batch n_ubatch %d is outside [0, 65536]", (int)o.n_ubatch);
    if (o.n_out < 0 || o.n_out > 65536)
        return g4_errf(G4_ERR_ARG, err, errlen, "batch n_out %d is outside [0, 65536]", (int)o.n_out);
    const int32_t n_rows = o.n_ubatch ? o.n_ubatch : 128;
    int32_t n_out = o.n_out ? o.n_out : 16;
    if (n_out > n_rows) n_out = n_rows;

    g4_plan p = {0, 0};
    g4_work_plan wp;
    work_plan(&p, m, n_rows, n_out, &wp);
    if (p.ovf || p.off > SIZE_MAX)
        return g4_errf(G4_ERR_NOMEM, err, errlen, "batch memory for n_ubatch %d does not fit in size_t", (int)n_rows);
    g4_batch *b = g4_calloc(&m->al, 1, sizeof *b);
    if (!b) return g4_errf(G4_ERR_NOMEM, err, errlen, "out of memory (batch)");
    void *raw;
    uint8_t *a = g4_malloc_al64(&m->al, (size_t)p.off, &raw);
    if (!a) {
        g4_free(&m->al, b, sizeof *b);
        return g4_errf(G4_ERR_NOMEM, err, errlen, "out of memory: the batch needs %.1f MiB for n_ubatch %d",
                       (double)p.off / 1048576.0, (int)n_rows);
    }
    b->m = m;
    b->arena = a;
    b->arena_raw = raw;
    b->arena_bytes = (size_t)p.off;
    work_bind(&b->work, m, a, &wp);
    *out = b;
    return G4_OK;
}

void g4_batch_free(g4_batch *b) {
    if (!b) return;
    const g4_allocator al = b->m->al;
    g4_free_al64(&al, b->arena_raw, b->arena_bytes);
    g4_free(&al, b, sizeof *b);
}

g4_status g4_batch_eval_ex(g4_batch *b, g4_session *const *s, const int32_t *const *tok, const size_t *n_tok,
                           const unsigned *flags, size_t n) {
    if (!b) return G4_ERR_ARG;
    b->err[0] = '\0';
    if (!s || !tok || !n_tok || n == 0)
        return g4_errf(G4_ERR_ARG, b->err, sizeof b->err, "batch: no sessions (s, tok or n_tok NULL, or n 0)");
    if (n > G4_BATCH_MAX_SEQ)
        return g4_errf(G4_ERR_ARG, b->err, sizeof b->err, "batch: %zu sessions, at most %d", n, (int)G4_BATCH_MAX_SEQ);
    for (size_t i = 0; i < n; i++) {
        if (!s[i]) return g4_errf(G4_ERR_ARG, b->err, sizeof b->err, "batch: session %zu is NULL", i);
        if (s[i]->m != b->m)
            return g4_errf(G4_ERR_ARG, b->err, sizeof b->err, "batch: session %zu belongs to another model", i);
        for (size_t j = 0; j < i; j++)
            if (s[j] == s[i])
                return g4_errf(G4_ERR_ARG, b->err, sizeof b->err, "batch: session %zu is also session %zu", i, j);
        const unsigned f = flags ? flags[i] : 0;
        if (f & ~(unsigned)(G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER))
            return g4_errf(G4_ERR_ARG, b->err, sizeof b->err, "batch: session %zu: unknown flags 0x%x", i, f);
        char who[40];
        snprintf(who, sizeof who, "batch: session %zu", i);
        g4_status st = session_check(s[i], tok[i], n_tok[i], f, b->err, sizeof b->err, who);
        if (st != G4_OK) return st;
    }
    return eval_sessions(&b->work, s, tok, n_tok, n, flags, b->err, sizeof b->err);
}

g4_status g4_batch_eval(g4_batch *b, g4_session *const *s, const int32_t *const *tok, const size_t *n_tok, size_t n) {
    return g4_batch_eval_ex(b, s, tok, n_tok, NULL, n);
}

const char *g4_batch_errmsg(const g4_batch *b) { return b ? b->err : "batch is NULL"; }

size_t g4_batch_memory(const g4_batch *b) { return b ? b->arena_bytes : 0; }
