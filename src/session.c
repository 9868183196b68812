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

#define ARENA_ALIGN 64u

/* ==== Memory plan ==== */

typedef struct plan {
    uint64_t off; /* bytes so far */
    int      ovf; /* 1 = some size overflowed */
} plan;

/* Reserves n elements of size bytes, 64-byte aligned; returns the offset. */
static uint64_t plan_take(plan *p, uint64_t n, uint64_t size) {
    uint64_t bytes, start, end;
    if (g4_mul_ovf(n, size, &bytes) || g4_add_ovf(p->off, ARENA_ALIGN - 1, &start)) { p->ovf = 1; return 0; }
    start &= ~(uint64_t)(ARENA_ALIGN - 1);
    if (g4_add_ovf(start, bytes, &end)) { p->ovf = 1; return 0; }
    p->off = end;
    return start;
}

static size_t act_rb(const g4_tensor *w) {
    return w ? kern_act_row_bytes(quant_traits(w->type)->dot_type, w->ne[0]) : 0;
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

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
    int64_t hd_max = 0, q_max = 0, kv_max = 0, ff_max = 0, gqa_max = 1;
    size_t act_max = max_sz(act_rb(m->output ? m->output : m->token_embd), act_rb(m->per_layer_model_proj));
    for (int i = 0; i < L; i++) {
        const g4_layer *l = &m->layers[i];
        const int64_t hd = l->head_dim;
        if (hd > hd_max) hd_max = hd;
        if (hd * l->n_head > q_max) q_max = hd * l->n_head;
        if (hd * l->n_head_kv > kv_max) kv_max = hd * l->n_head_kv;
        if (l->n_ff > ff_max) ff_max = l->n_ff;
        if (l->n_head / l->n_head_kv > gqa_max) gqa_max = l->n_head / l->n_head_kv;
        const g4_tensor *ws[] = { l->attn_q, l->has_kv ? l->attn_k : NULL, l->has_kv ? l->attn_v : NULL,
                                  l->attn_output, l->ffn_gate, l->ffn_up, l->ffn_down, l->inp_gate, l->proj,
                                  l->ffn_gate_inp };
        for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) act_max = max_sz(act_max, act_rb(ws[k]));
        if (l->has_kv && kv_type == G4_TYPE_Q8_0 && hd % 32 != 0)
            return g4_errf(G4_ERR_UNSUPPORTED, err, errlen,
                           "cache type q8_0 needs head_dim a multiple of 32 (layer %d has %d)", i, (int)hd);
    }

    /* plan: the struct is separate, everything else in one arena */
    const int n_threads = pool_n_threads(m->pool);
    const int n_slots = c->n_kv_owner;
    const int kdt = quant_traits(kv_type)->dot_type;
    const uint64_t E = (uint64_t)c->n_embd, LP = (uint64_t)L * (uint64_t)c->n_embd_per_layer;
    const uint64_t V = (uint64_t)c->n_vocab, U = (uint64_t)n_ub;
    const int32_t n_logit_rows = o.logits_all ? n_ub : 1;
    plan p = {0, 0};
    uint64_t off_kv_slots = plan_take(&p, (uint64_t)n_slots, sizeof(g4_kv_slot));
    uint64_t off_k[512], off_v[512];
    int32_t cells[512], rows_of[512];
    size_t krb[512];
    int32_t n_cells_max = 1, v_hull_max = 0;
    G4_ASSERT(n_slots <= 512 && n_slots <= L);
    for (int i = 0; i < n_slots; i++) {
        const g4_layer *l = &m->layers[i];
        G4_ASSERT(l->has_kv && l->kv_slot == i);
        int64_t nc = n_ctx;
        if (l->swa && (int64_t)c->n_swa + n_ub - 1 < nc) nc = (int64_t)c->n_swa + n_ub - 1;
        cells[i] = (int32_t)nc;
        /* full layers: rows up to a multiple of 32, so attention's 32-aligned hull of any
         * window is one row range (attention.c attn_window) */
        rows_of[i] = (int32_t)(l->swa ? 2 * nc : (nc + 31) / 32 * 32);
        if (nc > n_cells_max) n_cells_max = (int32_t)nc;
        /* a small ring cannot always hold the hull: attention copies it (ws_v) */
        const int64_t win = c->n_swa < nc ? c->n_swa : nc;
        if (l->swa && win + 64 > nc && win + 64 > v_hull_max) v_hull_max = (int32_t)(win + 64);
        krb[i] = quant_row_bytes(kv_type, l->head_dim);
        uint64_t rows;
        if (g4_mul_ovf((uint64_t)l->n_head_kv, (uint64_t)rows_of[i], &rows)) p.ovf = 1;
        off_k[i] = plan_take(&p, rows, krb[i]);
        off_v[i] = plan_take(&p, rows, krb[i]); /* transposed V holds the same element count */
    }
    const uint64_t kv_end = p.off;
    uint64_t off_inpL = plan_take(&p, U * E, 4);
    uint64_t off_cur = plan_take(&p, U * E, 4);
    uint64_t off_q = plan_take(&p, U * (uint64_t)q_max, 4);
    uint64_t off_kc = plan_take(&p, U * (uint64_t)kv_max, 4);
    uint64_t off_vc = plan_take(&p, U * (uint64_t)kv_max, 4);
    uint64_t off_kqv = plan_take(&p, U * (uint64_t)q_max, 4);
    uint64_t off_gate = plan_take(&p, U * (uint64_t)ff_max, 4);
    uint64_t off_up = plan_take(&p, U * (uint64_t)ff_max, 4);
    uint64_t off_pe = plan_take(&p, U * (uint64_t)c->n_embd_per_layer, 4);
    uint64_t off_ipl = plan_take(&p, U * LP, 4);
    uint64_t off_plp = plan_take(&p, U * LP, 4);
    uint64_t off_rope = plan_take(&p, U * (uint64_t)hd_max, 4);
    uint64_t off_pos = plan_take(&p, U, 4);
    uint64_t off_act = plan_take(&p, U, act_max);
    /* per-thread attention scratch, for the query heads of one KV head, over the 32-aligned
     * hull of a window (at most n_cells + 62 cells, attention.c attn_window):
     * kq [gqa][hull] | p [gqa] rows (V dot type) | q [gqa] rows (K dot type) | o [hd] |
     * V hull copy [hd][v_hull_max] (small rings only) */
    n_cells_max += 64;
    plan w = {0, 0};
    plan_take(&w, (uint64_t)gqa_max * (uint64_t)n_cells_max, 4);
    const uint64_t ws_pq = plan_take(&w, (uint64_t)gqa_max, kern_act_row_bytes(kdt, n_cells_max));
    const uint64_t ws_qq = plan_take(&w, (uint64_t)gqa_max, kern_act_row_bytes(kdt, hd_max));
    const uint64_t ws_o = plan_take(&w, (uint64_t)hd_max, 4);
    const uint64_t ws_v = plan_take(&w, (uint64_t)hd_max * (uint64_t)v_hull_max, 4);
    plan_take(&w, 0, 1); /* round the per-thread block up to the alignment */
    uint64_t off_ws = plan_take(&p, (uint64_t)n_threads, w.off);
    /* MoE layers' scratch (moe.h) */
    uint64_t moe_need[MOE_N_BUFS], off_moe[MOE_N_BUFS];
    const int n_moe = moe_plan(m, n_ub, moe_need);
    for (int i = 0; i < n_moe; i++) off_moe[i] = moe_need[i] ? plan_take(&p, moe_need[i], 1) : 0;
    uint64_t rows_v;
    if (g4_mul_ovf((uint64_t)n_logit_rows, V, &rows_v)) p.ovf = 1;
    uint64_t off_logits = plan_take(&p, rows_v, 4);
    if (p.ovf || w.ovf || p.off > SIZE_MAX || p.off == 0)
        return g4_errf(G4_ERR_NOMEM, err, errlen, "session memory for n_ctx %d does not fit in size_t", (int)n_ctx);

    g4_session *s = g4_calloc(&m->al, 1, sizeof *s);
    if (!s) return fail(err, errlen, G4_ERR_NOMEM, "out of memory (session)");
    uint8_t *a = g4_malloc(&m->al, (size_t)p.off);
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
    s->inpL = (float *)(void *)(a + off_inpL);
    s->cur = (float *)(void *)(a + off_cur);
    s->Qcur = (float *)(void *)(a + off_q);
    s->Kcur = (float *)(void *)(a + off_kc);
    s->Vcur = (float *)(void *)(a + off_vc);
    s->kqv_out = (float *)(void *)(a + off_kqv);
    s->ffn_gate = (float *)(void *)(a + off_gate);
    s->ffn_up = (float *)(void *)(a + off_up);
    s->pe = (float *)(void *)(a + off_pe);
    s->inp_per_layer = (float *)(void *)(a + off_ipl);
    s->pl_proj = (float *)(void *)(a + off_plp);
    s->rope_cs = (float *)(void *)(a + off_rope);
    s->pos = (int32_t *)(void *)(a + off_pos);
    s->act = a + off_act;
    s->act_row_max = act_max;
    s->attn_ws = a + off_ws;
    s->attn_ws_bytes = (size_t)w.off;
    s->ws_pq = (size_t)ws_pq;
    s->ws_qq = (size_t)ws_qq;
    s->ws_o = (size_t)ws_o;
    s->ws_v = (size_t)ws_v;
    s->ws_v_cells = v_hull_max;
    s->head_dim_max = (int32_t)hd_max;
    s->n_cells_max = n_cells_max;
    uint8_t *moe_bufs[MOE_N_BUFS] = { 0 };
    for (int i = 0; i < n_moe; i++) moe_bufs[i] = moe_need[i] ? a + off_moe[i] : NULL;
    moe_bind(&s->moe, m, moe_bufs);
    s->logits = (float *)(void *)(a + off_logits);
    s->n_logit_rows = n_logit_rows;
    s->n_logits = 0;
    s->n_past = 0;
    *out = s;
    return G4_OK;
}

void g4_session_free(g4_session *s) {
    if (!s) return;
    const g4_allocator al = s->m->al;
    g4_free(&al, s->arena, s->arena_bytes);
    g4_free(&al, s, sizeof *s);
}

/* ==== Eval ==== */

static g4_status serr(g4_session *s, g4_status st, const char *fmt, ...) G4_PRINTF(3, 4);
static g4_status serr(g4_session *s, g4_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g4_verrf(st, s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return st;
}

g4_status g4_session_eval(g4_session *s, const int32_t *tok, size_t n_tok) {
    if (!s) return G4_ERR_ARG;
    s->err[0] = '\0';
    if (!tok || n_tok == 0) return serr(s, G4_ERR_ARG, "eval: no tokens (tok %s, n_tok %zu)", tok ? "set" : "NULL", n_tok);
    const int32_t V = s->m->cfg.n_vocab;
    for (size_t i = 0; i < n_tok; i++)
        if (tok[i] < 0 || tok[i] >= V)
            return serr(s, G4_ERR_ARG, "eval: token %d at index %zu is outside [0, %d)", (int)tok[i], i, (int)V);
    if (n_tok > (size_t)(s->n_ctx - s->n_past))
        return serr(s, G4_ERR_CTX_FULL, "eval: context full: %d positions used + %zu tokens > n_ctx %d",
                    (int)s->n_past, n_tok, (int)s->n_ctx);
    if (s->logits_all && n_tok > (size_t)s->n_ubatch)
        return serr(s, G4_ERR_ARG, "eval: with logits_all an eval takes at most n_ubatch (%d) tokens, got %zu",
                    (int)s->n_ubatch, n_tok);

    /* Nothing below can fail. Chunks of n_ubatch tokens; only the last one wants logits
     * (every row with logits_all). ref: llama_context::decode splitting a batch in ubatches. */
    s->n_logits = 0;
    for (size_t off = 0; off < n_tok;) {
        const int T = (int)(n_tok - off < (size_t)s->n_ubatch ? n_tok - off : (size_t)s->n_ubatch);
        const int last = off + (size_t)T == n_tok;
        const int n_out = s->logits_all ? T : (last ? 1 : 0);
        s->batch_n = (int64_t)n_tok;
        s->chunk_off = (int64_t)off;
        forward_chunk(s, tok + off, T, n_out);
        s->n_past += T;
        off += (size_t)T;
    }
    return G4_OK;
}

const float *g4_session_logits(const g4_session *s) {
    if (!s || s->n_logits <= 0) return NULL;
    return s->logits + (size_t)(s->n_logits - 1) * (size_t)s->m->cfg.n_vocab;
}

const float *g4_session_logits_ith(const g4_session *s, size_t i) {
    if (!s || !s->logits_all || i >= (size_t)s->n_logits) return NULL;
    return s->logits + i * (size_t)s->m->cfg.n_vocab;
}

void g4_session_reset(g4_session *s) {
    if (!s) return;
    s->n_past = 0;    /* cells are overwritten before they are read again */
    s->n_logits = 0;
    if (s->moe.hist) memset(s->moe.hist, 0, (size_t)s->m->cfg.n_layer * (size_t)s->m->cfg.n_expert * sizeof *s->moe.hist);
    s->err[0] = '\0';
}

int32_t g4_session_n_past(const g4_session *s) { return s ? s->n_past : 0; }
int32_t g4_session_n_ctx(const g4_session *s) { return s ? s->n_ctx : 0; }
const char *g4_session_errmsg(const g4_session *s) { return s ? s->err : "session is NULL"; }

g4_status g4_session_expert_counts(const g4_session *s, int32_t il, uint64_t *counts, size_t n) {
    if (!s || !counts || il < 0 || il >= s->m->cfg.n_layer || !s->m->layers[il].moe || !s->moe.hist ||
        n < (size_t)s->m->cfg.n_expert)
        return G4_ERR_ARG;
    const size_t Ne = (size_t)s->m->cfg.n_expert;
    memcpy(counts, s->moe.hist + (size_t)il * Ne, Ne * sizeof *counts);
    return G4_OK;
}

void g4_session_memory(const g4_session *s, size_t *kv_bytes, size_t *scratch_bytes) {
    if (kv_bytes) *kv_bytes = s ? s->kv_bytes : 0;
    if (scratch_bytes) *scratch_bytes = s ? s->scratch_bytes : 0;
}
