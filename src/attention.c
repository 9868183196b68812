/* attention.c - Gemma 4 self-attention: q/k/v norms, NEOX RoPE (with rope_freqs on full
 * layers), the KV cache write, and causal / sliding-window attention with scale 1.0 and GQA.
 *
 * Owns: the cell layout of the KV cache (forward.h g4_kv_slot), the mapping from positions to
 * cells (sliding layers keep a ring), and the attention arithmetic.
 * Does not own: projections (forward.c), cache sizing (session.c).
 *
 * Numerics mirror llama.cpp v0.5.0 with flash attention off (gemma4-architecture.md §5.6):
 * K and V are rounded to the cache type when stored; scores are the kernels' matmul of the
 * K rows with q converted to K's dot type (F16 for an F16 cache, as ggml_mul_mat does);
 * softmax in f32 with the sum in double; the probabilities are converted to V's dot type
 * (F16 for an F16 cache) and multiplied with the transposed V rows, again by the matmul
 * kernel. A Q8_0 V cache (llama.cpp needs flash attention for it) is read row by row.
 *
 * Invariant: a query at position p reads only cells of positions [lo, p] of its own
 * sequence, all written by this or an earlier chunk (the ring holds n_swa + n_ubatch - 1
 * cells, enough for a whole chunk; §4.5), so cells never written are never read. The window
 * is always one contiguous cell range (mirrored ring, forward.h), summed in position order.
 */
#include "forward.h"

#include <math.h>
#include <string.h>

#include "kern/kern.h"
#include "pool.h"
#include "quant/quant.h"
#include "quant/quant_ref.h"

static inline const float *fvec(const g4_tensor *t) { return (const float *)(const void *)t->data; }

/* ==== RoPE ==== */

/* ref: ggml-cpu/ops.cpp ggml_compute_forward_rope_flt + ggml_rope_cache_init + rope_yarn with
 * freq_scale 1, ext_factor 0, mscale 1: theta_scale = powf(base, -2/n_dims); the angle is
 * built cumulatively in f32 (theta_0 = pos, theta_{j+1} = theta_j * theta_scale) and divided
 * by the frequency factor (rope_freqs on full layers) before cosf/sinf. */
void attn_rope_cs(float *cs, int64_t pos, const float *ff, float base, int n_rot) {
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int i0 = 0; i0 < n_rot; i0 += 2) {
        const float th = ff ? theta / ff[i0 / 2] : theta;
        cs[i0 + 0] = cosf(th);
        cs[i0 + 1] = sinf(th);
        theta *= theta_scale;
    }
}

static void rope_row(g4_session *s, const void *arg, int t) {
    const g4_layer *l = arg;
    float *cs = s->rope_cs + (size_t)t * (size_t)s->head_dim_max; /* [n_rot/2] (cos, sin) */
    attn_rope_cs(cs, s->pos[t], l->swa ? NULL : s->m->rope_freqs, l->rope_base, l->n_rot);
}

void attn_rope_cache(g4_session *s, const g4_layer *l, int r0, int T) {
    forward_rows(s, r0, T, rope_row, l);
}

/* NEOX (rotate-half): pair j with j + n_rot/2; dims >= n_rot pass through.
 * ref: ops.cpp rotate_pairs(n_dims, n_dims/2, ...): x0*cos - x1*sin and x0*sin + x1*cos,
 * which llama.cpp's FMA builds (haswell and up, NEON) compile into one fused multiply-add
 * each, the second product rounded first; fmaf reproduces that on every ISA (g4-ggml-ops). */
void attn_rope_neox(float *x, const float *cs, int n_rot) {
    const int half = n_rot / 2;
    for (int j = 0; j < half; j++) {
        const float c = cs[2 * j], sn = cs[2 * j + 1];
        const float x0 = x[j], x1 = x[j + half];
        const float x1s = x1 * sn, x1c = x1 * c;
        x[j]        = fmaf(x0, c, -x1s);
        x[j + half] = fmaf(x0, sn, x1c);
    }
}

/* ==== Q, K, V preparation ==== */

/* ref: gemma4.cpp "Qcur_normed" (build_norm with attn_q_norm per head), "Qcur_pos" */
static void q_prep_row(g4_session *s, const void *arg, int t) {
    const g4_layer *l = arg;
    const int hd = l->head_dim;
    const size_t q_dim = (size_t)hd * (size_t)l->n_head;
    const float *cs = s->rope_cs + (size_t)t * (size_t)s->head_dim_max;
    for (int h = 0; h < l->n_head; h++) {
        float *q = s->Qcur + (size_t)t * q_dim + (size_t)h * (size_t)hd;
        forward_rms_norm(q, q, fvec(l->attn_q_norm), hd, s->m->cfg.rms_eps);
        attn_rope_neox(q, cs, l->n_rot);
    }
}

void attn_q_prep(g4_session *s, const g4_layer *l, int r0, int T) {
    forward_rows(s, r0, T, q_prep_row, l);
}

/* Stores one head row x[head_dim] into K-like row storage (row-major cells). */
static void store_row(g4_session *s, uint8_t *dst, const float *x, int hd) {
    switch (s->kv_type) {
    case G4_TYPE_F32: memcpy(dst, x, (size_t)hd * sizeof(float)); break;
    case G4_TYPE_F16: {
        uint16_t h;
        for (int i = 0; i < hd; i++) { h = g4_f32_to_f16(x[i]); memcpy(dst + 2 * (size_t)i, &h, 2); }
        break;
    }
    default: /* Q8_0: ggml's cpy f32 -> q8_0 uses the CPU from_float, the activation quantizer */
        s->m->kern->quantize_act[G4_TYPE_Q8_0](x, dst, hd);
        break;
    }
}

/* ref: gemma4.cpp "Kcur_normed" (attn_k_norm), "Vcur_normed" (ggml_rms_norm, no weight),
 * "Kcur_pos"; then llama_kv_cache::cpy_k / cpy_v (F16 by ggml_cpy, RNE; V transposed when
 * flash attention is off). */
/* Rows of one chunk write distinct cells (T <= n_cells), so rows may run in parallel. */
static void kv_store_row(g4_session *s, const void *arg, int t) {
    const g4_layer *l = arg;
    const g4_kv_slot *kv = &s->kv[l->kv_slot];
    const int hd = l->head_dim, nkv = l->n_head_kv;
    const size_t kv_dim = (size_t)hd * (size_t)nkv, nc = (size_t)kv->n_cells, nr = (size_t)kv->n_rows;
    const float eps = s->m->cfg.rms_eps;
    const float *cs = s->rope_cs + (size_t)t * (size_t)s->head_dim_max;
    const size_t c = (size_t)s->pos[t] % nc; /* full layers: n_cells = n_ctx > pos */
    for (int g = 0; g < nkv; g++) {
        float *k = s->Kcur + (size_t)t * kv_dim + (size_t)g * (size_t)hd;
        float *v = s->Vcur + (size_t)t * kv_dim + (size_t)g * (size_t)hd;
        forward_rms_norm(k, k, fvec(l->attn_k_norm), hd, eps);
        attn_rope_neox(k, cs, l->n_rot);
        forward_rms_norm(v, v, NULL, hd, eps);
        /* the cell, and its mirror on a ring */
        for (size_t cc = c; cc < (kv->swa ? 2 * nc : nc); cc += nc) {
            store_row(s, kv->k + ((size_t)g * nr + cc) * kv->k_row_bytes, k, hd);
            if (s->kv_type == G4_TYPE_Q8_0) {
                store_row(s, kv->v + ((size_t)g * nr + cc) * kv->k_row_bytes, v, hd);
            } else if (s->kv_type == G4_TYPE_F16) {
                uint16_t *vt = (uint16_t *)(void *)kv->v + (size_t)g * (size_t)hd * nr + cc;
                for (int d = 0; d < hd; d++) vt[(size_t)d * nr] = g4_f32_to_f16(v[d]);
            } else {
                float *vt = (float *)(void *)kv->v + (size_t)g * (size_t)hd * nr + cc;
                for (int d = 0; d < hd; d++) vt[(size_t)d * nr] = v[d];
            }
        }
    }
}

void attn_kv_store(g4_session *s, const g4_layer *l, int r0, int T) {
    G4_ASSERT(T - r0 <= s->kv[l->kv_slot].n_cells);
    forward_rows(s, r0, T, kv_store_row, l);
}

/* ==== Softmax ==== */

/* ref: ops.cpp ggml_compute_forward_soft_max_f32 (scale 1, no ALiBi, no sinks) on llama.cpp's
 * KQ row: one entry per KV cell [0, n_kv), masked cells -inf. vec.cpp ggml_vec_soft_max_f32:
 * exp with ggml_v_expf, summed in f32 over aligned blocks of cells (8 on AVX2, 4 on NEON: the
 * kernel table's expsum) each added to a double; scalar expf only for a tail of n_kv % 8
 * cells, which never occurs (llama.cpp pads n_kv to a multiple of 256). Masked cells give
 * exp(-inf) = +0, so only the visible cells [cell0, cell0 + n) need computing; their place
 * within the blocks decides the rounding of the block sums.
 * x[0..n) in: scores, out: probabilities. */
void attn_softmax(const g4_kern *k, float *x, int64_t n, int64_t cell0) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    for (int64_t i = 0; i < n; i++) x[i] -= max;
    const float inv = (float)(1.0 / k->expsum(x, n, cell0));
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

/* ==== Attention ==== */

typedef struct attn_ctx {
    g4_session *s;
    const g4_layer *l;
    const g4_kv_slot *kv;
    int r0;
    int n_split;   /* query heads of one KV head are split into n_split items */
} attn_ctx;

/* llama.cpp's view of the cache (one sequence, no context shift): position q in cell q, the
 * KQ row spans n_kv cells (a multiple of 256), every cell outside the window masked. Only the
 * lanes of the window matter: masked cells contribute exact zeros, to the softmax's 8-cell
 * block sums (attn_softmax) and to kqv = mul_mat(v, kq), whose dot products over the cells
 * run in lanes of 8 (tinyBLAS) or 4 x 8 (ggml_vec_dot_f32/f16) counted from cell 0. So kqv
 * is computed over the 32-aligned hull of the window, [a, a + nw) with a = floor32(lo),
 * a + nw = ceil32(p + 1), zeros outside [lo, p]: the same lanes and the same sums as
 * llama.cpp's whole row. (On sliding layers llama.cpp's cell = position only holds for the
 * first swa-cache-size positions; later its cells wrap.) */
typedef struct attn_win {
    int64_t p, lo, n;   /* query position, first visible position, n = p - lo + 1 */
    int64_t a, nw, off; /* hull [a, a + nw), off = lo - a */
    int64_t c0;         /* row of position lo in the slot (K rows, V rows or channels) */
} attn_win;

void attn_hull(int64_t lo, int64_t p, int64_t *a, int64_t *nw) {
    *a = lo & ~(int64_t)31;
    *nw = ((p + 32) & ~(int64_t)31) - *a;
}

static attn_win attn_window(const g4_session *s, const g4_layer *l, const g4_kv_slot *kv, int t) {
    attn_win w;
    w.p = s->pos[t];
    w.lo = l->swa && w.p - s->m->cfg.n_swa + 1 > 0 ? w.p - s->m->cfg.n_swa + 1 : 0;
    w.n = w.p - w.lo + 1;
    attn_hull(w.lo, w.p, &w.a, &w.nw);
    w.off = w.lo - w.a;
    w.c0 = w.lo % kv->n_cells;
    G4_ASSERT(w.n <= kv->n_cells && w.c0 + w.n <= kv->n_rows && w.nw <= s->n_cells_max);
    return w;
}

/* The transposed V rows of KV head g over the hull: straight from the cache when the hull's
 * cells are one row range there (always on full layers, rows = ceil32(n_ctx), and on rings
 * with room); else copied into ws_v with zeros outside the window (small rings). Cache
 * cells never written are zero (session.c), so every value read is finite. */
static const uint8_t *v_hull(const g4_session *s, const g4_kv_slot *kv, const attn_win *w, int g, int hd,
                             uint8_t *ws, size_t *stride) {
    const size_t esz = s->kv_type == G4_TYPE_F16 ? 2 : 4, nr = (size_t)kv->n_rows;
    const uint8_t *vg = kv->v + (size_t)g * (size_t)hd * nr * esz; /* [hd] rows of nr cells */
    int64_t ra = w->c0 - w->off;                                     /* row of cell a */
    if (ra < 0 && kv->swa) ra += kv->n_cells;                        /* its mirror */
    if (ra >= 0 && ra + w->nw <= kv->n_rows) { *stride = nr * esz; return vg + (size_t)ra * esz; }
    uint8_t *dst = ws + s->ws_v;
    const size_t nw = (size_t)w->nw, off = (size_t)w->off, n = (size_t)w->n;
    G4_ASSERT(s->ws_v_cells >= w->nw);
    for (int d = 0; d < hd; d++) {
        uint8_t *o = dst + (size_t)d * nw * esz;
        memset(o, 0, nw * esz);
        memcpy(o + off * esz, vg + ((size_t)d * nr + (size_t)w->c0) * esz, n * esz);
    }
    *stride = nw * esz;
    return dst;
}

/* One row t and query heads [h0, h0 + nq) that share KV head g: kq over the visible cells
 * for all nq heads in one kernel call (K is read once per group, not once per head),
 * softmax per head, kqv again in one call over the 32-aligned hull of the window.
 * ref: llm_graph_context::build_attn_mha, flash attention off: kq = mul_mat(k, q) (GQA by
 * broadcasting K over the heads of a group); ggml_soft_max_ext(kq, mask, scale 1.0)
 * (ops.cpp ggml_compute_forward_soft_max_f32); kqv = mul_mat(v, kq). */
static void attn_rows(const attn_ctx *c, int t, int g, int h0, int nq, uint8_t *ws) {
    g4_session *s = c->s;
    const g4_layer *l = c->l;
    const g4_kv_slot *kv = c->kv;
    const g4_kern *kern = s->m->kern;
    const int hd = l->head_dim;
    const size_t q_dim = (size_t)hd * (size_t)l->n_head, nr = (size_t)kv->n_rows;
    const int kdt = quant_traits(s->kv_type)->dot_type;
    const attn_win w = attn_window(s, l, kv, t);
    const size_t n = (size_t)w.n, nw = (size_t)w.nw, off = (size_t)w.off;

    float   *kq = (float *)(void *)ws;   /* [nq][nw] probabilities over the hull      */
    uint8_t *pq = ws + s->ws_pq;         /* [nq] rows of p in V's dot type            */
    uint8_t *qq = ws + s->ws_qq;         /* [nq] rows of q in K's dot type            */
    const size_t qq_rb = kern_act_row_bytes(kdt, hd);
    const float *q = s->Qcur + (size_t)t * q_dim + (size_t)h0 * (size_t)hd; /* [nq][hd] */
    float *out = s->kqv_out + (size_t)t * q_dim + (size_t)h0 * (size_t)hd;  /* [nq][hd] */

    /* kq = K_g . q on the visible cells, at [off, off + n) of each hull row */
    const uint8_t *kg = kv->k + ((size_t)g * nr + (size_t)w.c0) * kv->k_row_bytes; /* [n] rows */
    for (int j = 0; j < nq; j++) kern->quantize_act[kdt](q + (size_t)j * (size_t)hd, qq + (size_t)j * qq_rb, hd);
    /* llama.cpp's kq = mul_mat(k, q): with an F32 K cache q is permuted, so always ggml's
     * one-column vec_dot order; with F16 K its tinyBLAS when the ubatch has >= 2 tokens */
    const g4_matmul_fn kq_fn = s->kv_type == G4_TYPE_F16 ? kern_pick(kern, G4_TYPE_F16, s->batch_n, 0, hd, w.nw, KERN_PLAIN)
                                                         : kern->matmul[s->kv_type];
    kq_fn(kq + off, nw, kg, kv->k_row_bytes, qq, qq_rb, hd, 0, w.n, nq);

    /* softmax per head (scale 1.0, no soft-cap); zeros on the masked cells of the hull */
    for (int j = 0; j < nq; j++) {
        float *kj = kq + (size_t)j * nw;
        attn_softmax(kern, kj + off, w.n, w.lo);
        memset(kj, 0, off * sizeof(float));
        memset(kj + off + n, 0, (nw - off - n) * sizeof(float));
    }

    /* kqv = V_g . p */
    if (s->kv_type == G4_TYPE_Q8_0) { /* no llama.cpp counterpart without flash attention */
        float *vrow = (float *)(void *)(ws + s->ws_o); /* [head_dim] */
        memset(out, 0, (size_t)nq * (size_t)hd * sizeof(float));
        const uint8_t *vg = kv->v + ((size_t)g * nr + (size_t)w.c0) * kv->k_row_bytes;
        for (size_t i = 0; i < n; i++) {
            quant_dequant_row(G4_TYPE_Q8_0, vg + i * kv->k_row_bytes, vrow, hd);
            for (int j = 0; j < nq; j++) {
                const float pj = kq[(size_t)j * nw + off + i];
                float *oj = out + (size_t)j * (size_t)hd;
                for (int d = 0; d < hd; d++) oj[d] += pj * vrow[d];
            }
        }
        return;
    }
    const int vdt = kdt; /* F16 -> F16, F32 -> F32 */
    const size_t pq_rb = kern_act_row_bytes(vdt, w.nw);
    size_t v_stride;
    const uint8_t *vg = v_hull(s, kv, &w, g, hd, ws, &v_stride); /* [hd] rows of nw cells */
    for (int j = 0; j < nq; j++) kern->quantize_act[vdt](kq + (size_t)j * nw, pq + (size_t)j * pq_rb, w.nw);
    /* kqv = mul_mat(v, kq): tinyBLAS order when the ubatch has >= 2 tokens, else vec_dot */
    const g4_matmul_fn kqv_fn = kern_pick(kern, s->kv_type, s->batch_n, 0, w.nw, hd, KERN_PLAIN);
    kqv_fn(out, (size_t)hd, vg, v_stride, pq, pq_rb, w.nw, 0, hd, nq);
}

static void attn_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    const attn_ctx *c = vctx;
    const g4_layer *l = c->l;
    const int n_gqa = l->n_head / l->n_head_kv, nq = n_gqa / c->n_split;
    const int64_t per_row = (int64_t)l->n_head_kv * c->n_split;
    uint8_t *ws = c->s->attn_ws + (size_t)thread * c->s->attn_ws_bytes;
    for (int64_t it = i0; it < i1; it++) {
        const int t = c->r0 + (int)(it / per_row);
        const int k = (int)(it % per_row), g = k / c->n_split, part = k % c->n_split;
        attn_rows(c, t, g, g * n_gqa + part * nq, nq, ws);
    }
}

/* Work items: (row, KV head, part of its query heads). Parts are as large as possible
 * (fewest K/V reads) while still giving every thread about two items: decode of a model
 * with one KV head (E2B) splits the 8 query heads over the threads. */
void attn_compute(g4_session *s, const g4_layer *l, int r0, int T) {
    const int n_gqa = l->n_head / l->n_head_kv;
    const int64_t rows_x_kv = (int64_t)(T - r0) * l->n_head_kv;
    int n_split = 1;
    while (n_split < n_gqa && rows_x_kv * n_split < 2 * (int64_t)s->n_threads) {
        int d = n_split + 1;
        while (n_gqa % d) d++; /* next divisor of n_gqa */
        n_split = d;
    }
    attn_ctx c = { .s = s, .l = l, .kv = &s->kv[l->kv_slot], .r0 = r0, .n_split = n_split };
    pool_for(s->m->pool, rows_x_kv * n_split, 1, attn_task, &c);
}
