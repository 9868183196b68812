/* session.c - g4_session: the KV cache and every scratch buffer of the forward pass in one
 * arena sized at create time, plus the eval API (validation, chunking into n_ubatch pieces).
 *
 * Owns: session options and their defaults, the memory plan (checked arithmetic throughout),
 * eval's all-or-nothing contract (everything is validated before the first cache write, and
 * nothing after that can fail), the logits buffer.
 * Does not own: the arithmetic (forward.c, attention.c, ple.c).
 *
 * KV cache (forward.h g4_kv_slot): one slot per KV-owning layer (layers >= S read the slots
 * of S-2 / S-1). Full layers get n_ctx cells; sliding layers a ring of
 * min(n_ctx, n_swa + n_ubatch - 1) cells, which holds the window of every row of a chunk
 * (gemma4-architecture.md §4.5), so their memory does not grow with the context. The ring
 * is stored mirrored (2 x cells) so every window is contiguous (forward.h).
 */
#include "forward.h"

#include <stdio.h>
#include <string.h>

#include "kern/kern.h"
#include "pool.h"
#include "quant/quant.h"

static g4_status fail(char *err, size_t errlen, g4_status st, const char *msg) {
    return g4_errf(st, err, errlen, "%s", msg);
}

/* ==== Create / free ==== */

g4_status g4_session_create(g4_session **out, g4_model *m, const g4_session_opts *opts,
                            char *err, size_t errlen) {
    if (err && errlen) err[0] = '\0';
    if (!out) return fail(err, errlen, G4_ERR_ARG, "g4_session_create: out is NULL");
    *out = NULL;
    if (!m) return fail(err, errlen, G4_ERR_ARG, "g4_session_create: model is NULL");
    if (m->vocab_only || !m->layers || !m->kern)
        return fail(err, errlen, G4_ERR_ARG, "g4_session_create: the model was opened vocab_only (no weights)");
    g4_session_opts o = {0};
    if (opts) o = *opts;
    const g4_config *c = &m->cfg;

    /* options */
    if (o.n_ctx < 0) return g4_errf(G4_ERR_ARG, err, errlen, "n_ctx %d is negative", (int)o.n_ctx);
    if (o.n_ctx > (1 << 30)) return g4_errf(G4_ERR_ARG, err, errlen, "n_ctx %d is above the limit of 2^30", (int)o.n_ctx);
    if (o.n_ubatch < 0) return g4_errf(G4_ERR_ARG, err, errlen, "n_ubatch %d is negative", (int)o.n_ubatch);
    int32_t n_ctx = o.n_ctx ? o.n_ctx : (c->n_ctx_train < 4096 ? c->n_ctx_train : 4096);
    int32_t n_ub = o.n_ubatch ? o.n_ubatch : 128;
    if (n_ub > n_ctx) n_ub = n_ctx;
    uint32_t kv_type;
    switch (o.cache_type) {
    case G4_CACHE_F16: kv_type = G4_TYPE_F16; break;
    case G4_CACHE_F32: kv_type = G4_TYPE_F32; break;
    case G4_CACHE_Q8_0: kv_type = G4_TYPE_Q8_0; break;
    default: return g4_errf(G4_ERR_ARG, err, errlen, "cache_type %d is not f16 (0), f32 (1) or q8_0 (2)", o.cache_type);
    }
    if (o.n_ctx > c->n_ctx_train)
        g4_log(m, G4_LOG_WARN, "n_ctx %d exceeds the training context %d", (int)o.n_ctx, (int)c->n_ctx_train);

    /* widths */
    const int L = c->n_layer;
    int64_t hd_max = 0, gqa_max = 1;
    for (int i = 0; i < L; i++) {
        const g4_layer *l = &m->layers[i];
        if (l->head_dim > hd_max) hd_max = l->head_dim;
        if (l->n_head / l->n_head_kv > gqa_max) gqa_max = l->n_head / l->n_head_kv;
        if (l->has_kv && kv_type == G4_TYPE_Q8_0 && l->head_dim % 32 != 0)
            return g4_errf(G4_ERR_UNSUPPORTED, err, errlen,
                           "cache type q8_0 needs head_dim a multiple of 32 (layer %d has %d)", i, (int)l->head_dim);
    }

    /* plan: the struct is separate, everything else in one arena */
    const int n_threads = pool_n_threads(m->pool);
    const int n_slots = c->n_kv_owner;
    const int kdt = quant_traits(kv_type)->dot_type;
    if (o.n_logits < 0 || o.n_logits > n_ctx)
        return g4_errf(G4_ERR_ARG, err, errlen, "n_logits %d is outside [0, n_ctx %d]", (int)o.n_logits, (int)n_ctx);
    int32_t n_logit_rows = o.n_logits ? o.n_logits : 1;
    if (o.logits_all && n_logit_rows < n_ub) n_logit_rows = n_ub;
    g4_plan p = {0, 0};
    uint64_t off_kv_slots = plan_take(&p, (uint64_t)n_slots, sizeof(g4_kv_slot));
    uint64_t off_k[512], off_v[512];
    int32_t cells[512], rows_of[512];
    size_t krb[512];
    int32_t n_cells_max = 1, v_hull_max = 0, swa_cells = 0;
    G4_ASSERT(n_slots <= 512 && n_slots <= L);
    for (int i = 0; i < n_slots; i++) {
        const g4_layer *l = &m->layers[i];
        G4_ASSERT(l->has_kv && l->kv_slot == i);
        int64_t nc = n_ctx;
        if (l->swa && (int64_t)c->n_swa + n_ub - 1 < nc) nc = (int64_t)c->n_swa + n_ub - 1;
        cells[i] = (int32_t)nc;
        if (l->swa) swa_cells = (int32_t)nc;
        /* full layers: rows up to a multiple of G4_ATTN_HULL, so attention's hull of any
         * window is one row range (attention.c attn_window) */
        rows_of[i] = (int32_t)(l->swa ? 2 * nc : (nc + G4_ATTN_HULL - 1) / G4_ATTN_HULL * G4_ATTN_HULL);
        if (nc > n_cells_max) n_cells_max = (int32_t)nc;
        /* a small ring cannot always hold the hull: attention copies it (ws_v) */
        const int64_t win = c->n_swa < nc ? c->n_swa : nc;
        if (l->swa && win + 2 * G4_ATTN_HULL > nc && win + 2 * G4_ATTN_HULL > v_hull_max) v_hull_max = (int32_t)(win + 2 * G4_ATTN_HULL);
        krb[i] = quant_row_bytes(kv_type, l->head_dim);
        uint64_t rows;
        if (g4_mul_ovf((uint64_t)l->n_head_kv, (uint64_t)rows_of[i], &rows)) p.ovf = 1;
        off_k[i] = plan_take(&p, rows, krb[i]);
        off_v[i] = plan_take(&p, rows, krb[i]); /* transposed V holds the same element count */
    }
    const uint64_t kv_end = p.off;
    /* the rows scratch of g4_session_eval; its logits are the session's */
    g4_work_plan wp;
    work_plan(&p, m, o.batch_only ? 0 : n_ub, n_logit_rows, &wp);
    /* hidden states of the logits rows (keep_hidden: the MTP drafter's input) */
    const uint64_t off_hidden = o.keep_hidden ? plan_take(&p, (uint64_t)n_logit_rows * (uint64_t)c->n_embd, 4) : 0;
    /* per-thread attention scratch of one job (attention.c: up to ATTN_TILE rows x the G
     * query heads of a KV head, over the hull of their windows' union, aligned to at most
     * G4_ATTN_HULL cells; a lone row's hull is at most n_cells + 2 * (G4_ATTN_HULL - 1) cells):
     * kq [kq_cap] f32 | p rows (V dot type) | q [q_cap] rows (K dot type) | o [q_cap + 1][hd] |
     * V hull copy [hd][v_cells] (small rings only) */
    n_cells_max += 2 * G4_ATTN_HULL;
    const int64_t win = c->n_swa < n_ctx ? c->n_swa : n_ctx;
    int64_t kq_cap = win + G4_ATTN_TILE + 2 * G4_ATTN_HULL;
    kq_cap *= G4_ATTN_TILE;
    if (kq_cap < n_cells_max) kq_cap = n_cells_max;
    kq_cap *= gqa_max;
    const int64_t q_cap = (int64_t)G4_ATTN_TILE * gqa_max;
    if (v_hull_max) v_hull_max += G4_ATTN_TILE;
    g4_plan w = {0, 0};
    plan_take(&w, (uint64_t)kq_cap, 4);
    const uint64_t ws_pq = plan_take(&w, (uint64_t)kq_cap, kdt == G4_TYPE_F16 ? 2 : 4);
    /* F16 caches: q rows may be f16 values in f32 (attention.c, kern.h matmul_f16x) */
    const uint64_t ws_qq = plan_take(&w, (uint64_t)q_cap, kdt == G4_TYPE_F16 ? 4 * (uint64_t)hd_max : kern_act_row_bytes(kdt, hd_max));
    const uint64_t ws_o = plan_take(&w, (uint64_t)(q_cap + 1) * (uint64_t)hd_max, 4);
    const uint64_t ws_v = plan_take(&w, (uint64_t)hd_max * (uint64_t)v_hull_max, 4);
    plan_take(&w, 0, 1); /* round the per-thread block up to the alignment */
    uint64_t off_ws = plan_take(&p, (uint64_t)n_threads, w.off);
    /* routings per MoE layer and expert (g4_session_expert_counts) */
    uint64_t hist_elems = 0, off_hist = 0;
    if (c->n_layer_moe) {
        if (g4_mul_ovf((uint64_t)L, (uint64_t)c->n_expert, &hist_elems)) p.ovf = 1;
        off_hist = plan_take(&p, hist_elems, sizeof(uint64_t));
    }
    if (p.ovf || w.ovf || p.off > SIZE_MAX || p.off == 0)
        return g4_errf(G4_ERR_NOMEM, err, errlen, "session memory for n_ctx %d does not fit in size_t", (int)n_ctx);

    g4_session *s = g4_calloc(&m->al, 1, sizeof *s);
    if (!s) return fail(err, errlen, G4_ERR_NOMEM, "out of memory (session)");
    void *raw;
    uint8_t *a = g4_malloc_al64(&m->al, (size_t)p.off, &raw);
    if (!a) {
        g4_free(&m->al, s, sizeof *s);
        return g4_errf(G4_ERR_NOMEM, err, errlen, "out of memory: the session needs %.1f MiB (KV cache %.1f MiB) for n_ctx %d",
                       (double)p.off / 1048576.0, (double)kv_end / 1048576.0, (int)n_ctx);
    }
    s->m = m;
    s->n_ctx = n_ctx;
    s->n_ubatch = n_ub;
    s->kv_type = kv_type;
    s->logits_all = o.logits_all != 0;
    s->n_threads = n_threads;
    s->arena = a;
    s->arena_raw = raw;
    s->arena_bytes = (size_t)p.off;
    s->kv_bytes = (size_t)(kv_end - (off_kv_slots + (uint64_t)n_slots * sizeof(g4_kv_slot)));
    s->scratch_bytes = s->arena_bytes - s->kv_bytes;
    s->kv = (g4_kv_slot *)(void *)(a + off_kv_slots);
    for (int i = 0; i < n_slots; i++) {
        const g4_layer *l = &m->layers[i];
        /* V cells not yet written are read (times probability 0) by attention's hull:
         * zero them once, as llama.cpp clears its cache */
        memset(a + off_v[i], 0, (size_t)l->n_head_kv * (size_t)rows_of[i] * krb[i]);
        s->kv[i] = (g4_kv_slot){
            .k = a + off_k[i], .v = a + off_v[i], .n_cells = cells[i], .n_rows = rows_of[i], .n_head_kv = l->n_head_kv,
            .head_dim = l->head_dim, .swa = l->swa, .k_row_bytes = krb[i],
        };
    }
    work_bind(&s->work, m, a, &wp);
    s->attn_ws = a + off_ws;
    s->attn_ws_bytes = (size_t)w.off;
    s->ws_pq = (size_t)ws_pq;
    s->ws_qq = (size_t)ws_qq;
    s->ws_o = (size_t)ws_o;
    s->ws_v = (size_t)ws_v;
    s->ws_v_cells = v_hull_max;
    s->ws_kq_cap = kq_cap;
    s->ws_q_cap = (int32_t)q_cap;
    s->n_cells_max = n_cells_max;
    s->swa_cells = swa_cells;
    s->logits = s->work.logits;
    s->hidden = o.keep_hidden ? (float *)(void *)(a + off_hidden) : NULL;
    if (c->n_layer_moe) {
        s->moe_hist = (uint64_t *)(void *)(a + off_hist);
        memset(s->moe_hist, 0, (size_t)hist_elems * sizeof *s->moe_hist);
    }
    s->n_logit_rows = n_logit_rows;
    s->n_logits = 0;
    s->n_past = 0;
    *out = s;
    return G4_OK;
}

void g4_session_free(g4_session *s) {
    if (!s) return;
    const g4_allocator al = s->m->al;
    g4_free_al64(&al, s->arena_raw, s->arena_bytes);
    g4_free(&al, s, sizeof *s);
}

/* ==== Eval ==== */

g4_status session_check(const g4_session *s, const int32_t *tok, size_t n_tok, unsigned flags, char *err,
                        size_t errlen, const char *who) {
    if (!tok || n_tok == 0) return g4_errf(G4_ERR_ARG, err, errlen, "%s: no tokens (tok %s, n_tok %zu)", who, tok ? "set" : "NULL", n_tok);
    const int32_t V = s->m->cfg.n_vocab;
    for (size_t i = 0; i < n_tok; i++)
        if (tok[i] < 0 || tok[i] >= V)
            return g4_errf(G4_ERR_ARG, err, errlen, "%s: token %d at index %zu is outside [0, %d)", who, (int)tok[i], i, (int)V);
    if (n_tok > (size_t)(s->n_ctx - s->n_past))
        return g4_errf(G4_ERR_CTX_FULL, err, errlen, "%s: context full: %d positions used + %zu tokens > n_ctx %d", who,
                       (int)s->n_past, n_tok, (int)s->n_ctx);
    if (s->logits_all && n_tok > (size_t)s->n_ubatch)
        return g4_errf(G4_ERR_ARG, err, errlen, "%s: with logits_all an eval takes at most n_ubatch (%d) tokens, got %zu", who,
                       (int)s->n_ubatch, n_tok);
    if ((flags & G4_EVAL_ALL_LOGITS) && n_tok > (size_t)s->n_logit_rows)
        return g4_errf(G4_ERR_ARG, err, errlen, "%s: G4_EVAL_ALL_LOGITS takes at most the session's n_logits (%d) tokens, got %zu",
                       who, (int)s->n_logit_rows, n_tok);
    return G4_OK;
}

g4_status g4_session_eval_ex(g4_session *s, const int32_t *tok, size_t n_tok, unsigned flags) {
    if (!s) return G4_ERR_ARG;
    s->err[0] = '\0';
    if (flags & ~(unsigned)(G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER))
        return g4_errf(G4_ERR_ARG, s->err, sizeof s->err, "eval: unknown flags 0x%x", flags);
    if (s->work.n_rows == 0)
        return g4_errf(G4_ERR_ARG, s->err, sizeof s->err, "eval: the session was created batch_only: evaluate it with g4_batch_eval");
    g4_status st = session_check(s, tok, n_tok, flags, s->err, sizeof s->err, "eval");
    if (st != G4_OK) return st;
    /* Nothing below can fail but an abort (eval.c: the eval is one llama.cpp ubatch, run in
     * chunks of n_ubatch tokens; only the last one wants logits, every row with logits_all) */
    return eval_sessions(&s->work, &s, &tok, &n_tok, 1, &flags, s->err, sizeof s->err);
}

g4_status g4_session_eval(g4_session *s, const int32_t *tok, size_t n_tok) { return g4_session_eval_ex(s, tok, n_tok, 0); }

const float *g4_session_logits(const g4_session *s) {
    if (!s || s->n_logits <= 0) return NULL;
    return s->logits + (size_t)(s->n_logits - 1) * (size_t)s->m->cfg.n_vocab;
}

const float *g4_session_logits_ith(const g4_session *s, size_t i) {
    if (!s || !s->logits_rows || i >= (size_t)s->n_logits) return NULL;
    return s->logits + i * (size_t)s->m->cfg.n_vocab;
}

const float *g4_session_hidden(const g4_session *s, size_t i) {
    if (!s || !s->hidden || i >= (size_t)s->n_logits) return NULL;
    return s->hidden + i * (size_t)s->m->cfg.n_embd;
}

void g4_session_reset(g4_session *s) {
    if (!s) return;
    s->n_past = 0;    /* cells are overwritten before they are read again */
    s->swa_hi = s->swa_lo = 0;
    s->n_logits = 0;
    if (s->moe_hist) memset(s->moe_hist, 0, (size_t)s->m->cfg.n_layer * (size_t)s->m->cfg.n_expert * sizeof *s->moe_hist);
    s->err[0] = '\0';
}

int32_t g4_session_truncate(g4_session *s, int32_t n_keep) {
    if (!s) return 0;
    s->err[0] = '\0';
    return session_rollback(s, n_keep);
}

void g4_session_set_abort(g4_session *s, g4_abort_fn fn, void *ud) {
    if (!s) return;
    s->abort_fn = fn;
    s->abort_ud = ud;
}

int32_t g4_session_n_past(const g4_session *s) { return s ? s->n_past : 0; }
int32_t g4_session_n_ctx(const g4_session *s) { return s ? s->n_ctx : 0; }
const char *g4_session_errmsg(const g4_session *s) { return s ? s->err : "session is NULL"; }

g4_status g4_session_expert_counts(const g4_session *s, int32_t il, uint64_t *counts, size_t n) {
    if (!s || !counts || il < 0 || il >= s->m->cfg.n_layer || !s->m->layers[il].moe || !s->moe_hist ||
        n < (size_t)s->m->cfg.n_expert)
        return G4_ERR_ARG;
    const size_t Ne = (size_t)s->m->cfg.n_expert;
    memcpy(counts, s->moe_hist + (size_t)il * Ne, Ne * sizeof *counts);
    return G4_OK;
}

void g4_session_kv_split(const g4_session *s, size_t *per_position, size_t *rings) {
    size_t pp = 0, rg = 0;
    for (int i = 0; s && i < s->m->cfg.n_kv_owner; i++) {
        const g4_kv_slot *kv = &s->kv[i];
        const size_t row = 2 * (size_t)kv->n_head_kv * kv->k_row_bytes; /* K and V of one position */
        if (kv->swa) rg += row * (size_t)kv->n_rows;
        else pp += row;
    }
    if (per_position) *per_position = pp;
    if (rings) *rings = rg;
}

void g4_session_memory(const g4_session *s, size_t *kv_bytes, size_t *scratch_bytes) {
    if (kv_bytes) *kv_bytes = s ? s->kv_bytes : 0;
    if (scratch_bytes) *scratch_bytes = s ? s->scratch_bytes : 0;
}
