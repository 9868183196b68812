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
 * kernel. With an F16 cache, tables that have them use the kernels' forms that take q and p
 * as f16 values held in f32 (kern.h matmul_f16x: the same bits, no conversion per cache
 * row). A Q8_0 V cache (llama.cpp needs flash attention for it) is read row by row.
 *
 * Invariant: a query at position p reads only cells of positions [lo, p] of its own
 * sequence, all written by this or an earlier chunk (the ring holds n_swa + n_ubatch - 1
 * cells, enough for a whole chunk; §4.5), so cells never written are never read. The window
 * is always one contiguous cell range (mirrored ring, forward.h), summed in position order.
 */
#include "forward.h"

#include <math.h>
#include <stdint.h>
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

static void rope_row(g4_work *w, const void *arg, int t) {
    const g4_layer *l = arg;
    float *cs = w->rope_cs + (size_t)t * (size_t)w->head_dim_max; /* [n_rot/2] (cos, sin) */
    attn_rope_cs(cs, w->pos[t], l->swa ? NULL : w->m->rope_freqs, l->rope_base, l->n_rot);
}

void attn_rope_cache(g4_work *w, const g4_layer *l, int r0, int T) {
    forward_rows(w, r0, T, rope_row, l);
}

/* NEOX (rotate-half): pair j with j + n_rot/2; dims >= n_rot pass through.
 * ref: ops.cpp rotate_pairs(n_dims, n_dims/2, ...): x0*cos - x1*sin and x0*sin + x1*cos,
 * which llama.cpp's FMA builds (haswell and up, NEON) compile into one fused multiply-add
 * each, the second product rounded first; fmaf reproduces that on every ISA (g4-ggml-ops). */
void attn_rope_neox(float *x, const float *cs, int n_rot) { kern_rope_neox_ref(x, cs, n_rot); }

/* the table's form of it (kern.h rope_neox: the same bits), or the portable loop */
static void rope_neox(const g4_work *w, float *x, const float *cs, int n_rot) {
    if (w->m->kern->rope_neox) w->m->kern->rope_neox(x, cs, n_rot);
    else kern_rope_neox_ref(x, cs, n_rot);
}

/* ==== Q, K, V preparation ==== */

/* ref: gemma4.cpp "Qcur_normed" (build_norm with attn_q_norm per head), "Qcur_pos" */
static void q_prep_row(g4_work *w, const void *arg, int t) {
    const g4_layer *l = arg;
    const int hd = l->head_dim;
    const size_t q_dim = (size_t)hd * (size_t)l->n_head;
    const float *cs = w->rope_cs + (size_t)t * (size_t)w->head_dim_max;
    float *q = w->Qcur + (size_t)t * q_dim;
    forward_rms_norm_n(q, (size_t)hd, q, (size_t)hd, l->n_head, hd, fvec(l->attn_q_norm), w->m->cfg.rms_eps);
    for (int h = 0; h < l->n_head; h++) rope_neox(w, q + (size_t)h * (size_t)hd, cs, l->n_rot);
}

void attn_q_prep(g4_work *w, const g4_layer *l, int r0, int T) {
    forward_rows(w, r0, T, q_prep_row, l);
}

/* Stores one head row x[head_dim] into K-like row storage (row-major cells). */
static void store_row(const g4_session *s, uint8_t *dst, const float *x, int hd) {
    switch (s->kv_type) {
    case G4_TYPE_F32: memcpy(dst, x, (size_t)hd * sizeof(float)); break;
    case G4_TYPE_F16: /* the table's converter: F16C / NEON where there is one, RNE as g4_f32_to_f16 */
        s->m->kern->quantize_act[G4_TYPE_F16](x, dst, hd);
        break;
    default: /* Q8_0: ggml's cpy f32 -> q8_0 uses the CPU from_float, the activation quantizer */
        s->m->kern->quantize_act[G4_TYPE_Q8_0](x, dst, hd);
        break;
    }
}

/* A V row x[hd] into cell c, and c2 (a ring's mirror) unless it is SIZE_MAX, of the transposed
 * rows vt ([hd] rows of nr cells, F16 or F32): converted VT_BLOCK values at a time. */
#define VT_BLOCK 256
static void store_vt(const g4_session *s, uint8_t *vt, size_t nr, const float *x, int hd, size_t c, size_t c2) {
    if (s->kv_type == G4_TYPE_F32) {
        float *o = (float *)(void *)vt;
        for (int d = 0; d < hd; d++) {
            o[(size_t)d * nr + c] = x[d];
            if (c2 != SIZE_MAX) o[(size_t)d * nr + c2] = x[d];
        }
        return;
    }
    uint16_t *o = (uint16_t *)(void *)vt, h[VT_BLOCK];
    for (int d0 = 0; d0 < hd; d0 += VT_BLOCK) {
        const int n = hd - d0 < VT_BLOCK ? hd - d0 : VT_BLOCK;
        s->m->kern->quantize_act[G4_TYPE_F16](x + d0, h, n);
        for (int i = 0; i < n; i++) {
            o[(size_t)(d0 + i) * nr + c] = h[i];
            if (c2 != SIZE_MAX) o[(size_t)(d0 + i) * nr + c2] = h[i];
        }
    }
}

/* ref: gemma4.cpp "Kcur_normed" (attn_k_norm), "Vcur_normed" (ggml_rms_norm, no weight),
 * "Kcur_pos"; then llama_kv_cache::cpy_k / cpy_v (F16 by ggml_cpy, RNE; V transposed when
 * flash attention is off). */
/* The rows of one session in a chunk write distinct cells (at most n_ubatch <= n_cells of
 * them), and sessions have their own caches, so rows may run in parallel. */
static void kv_store_row(g4_work *w, const void *arg, int t) {
    const g4_layer *l = arg;
    const g4_session *s = w->sess[t];
    const g4_kv_slot *kv = &s->kv[l->kv_slot];
    const int hd = l->head_dim, nkv = l->n_head_kv;
    const size_t kv_dim = (size_t)hd * (size_t)nkv, nc = (size_t)kv->n_cells, nr = (size_t)kv->n_rows;
    const size_t rb = kv->k_row_bytes;
    const float eps = w->m->cfg.rms_eps;
    const float *cs = w->rope_cs + (size_t)t * (size_t)w->head_dim_max;
    const size_t c = (size_t)w->pos[t] % nc; /* full layers: n_cells = n_ctx > pos */
    const size_t c2 = kv->swa ? c + nc : SIZE_MAX; /* a ring's mirror cell */
    for (int g = 0; g < nkv; g++) {
        float *k = w->Kcur + (size_t)t * kv_dim + (size_t)g * (size_t)hd;
        float *v = w->Vcur + (size_t)t * kv_dim + (size_t)g * (size_t)hd;
        const float *kv2[2] = { k, v };
        double sum[2];
        forward_sumsq(kv2, 2, hd, sum); /* K's and V's sums side by side */
        forward_rms_apply(k, k, fvec(l->attn_k_norm), hd, sum[0], eps);
        rope_neox(w, k, cs, l->n_rot);
        forward_rms_apply(v, v, NULL, hd, sum[1], eps);
        /* the cell, and its mirror on a ring (a copy of the cell's bytes) */
        uint8_t *kr = kv->k + ((size_t)g * nr + c) * rb;
        store_row(s, kr, k, hd);
        if (c2 != SIZE_MAX) memcpy(kr + nc * rb, kr, rb);
        if (s->kv_type == G4_TYPE_Q8_0) {
            uint8_t *vr = kv->v + ((size_t)g * nr + c) * rb;
            store_row(s, vr, v, hd);
            if (c2 != SIZE_MAX) memcpy(vr + nc * rb, vr, rb);
        } else {
            store_vt(s, kv->v + (size_t)g * (size_t)hd * nr * (s->kv_type == G4_TYPE_F16 ? 2 : 4), nr, v, hd, c, c2);
        }
    }
}

void attn_kv_store(g4_work *w, const g4_layer *l, int r0, int T) {
    forward_rows(w, r0, T, kv_store_row, l);
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
    if (k->sub_max) {
        k->sub_max(x, n);
    } else {
        float max = -INFINITY;
        for (int64_t i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
        for (int64_t i = 0; i < n; i++) x[i] -= max;
    }
    const float inv = (float)(1.0 / k->expsum(x, n, cell0));
    if (k->scale) k->scale(x, n, inv);
    else for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

/* ==== Attention ==== */

/* llama.cpp's view of the cache (one sequence, no context shift): position q in cell q, the
 * KQ row spans n_kv cells (a multiple of 256), every cell outside the window masked. Only the
 * lanes of the window matter: masked cells contribute exact zeros, to the softmax's 8-cell
 * block sums (attn_softmax; 16 on AVX-512) and to kqv = mul_mat(v, kq), whose dot products
 * over the cells run in lanes of 8 (tinyBLAS) or 4 x 8 (ggml_vec_dot_f32/f16) counted from
 * cell 0 (AVX-512: 16 and 4 x 16; SVE: 8 vectors). So kqv is computed over a hull of the
 * window in whole blocks of h = kern_attn_hull cells (64; the i8mm table at 256-bit SVE 128),
 * [a, a + nw) with a = floor_h(lo), a + nw = ceil_h(p + 1), zeros outside [lo, p]: the same
 * lanes and the same sums as llama.cpp's whole row. (On
 * sliding layers llama.cpp's cell = position only holds for the first swa-cache-size
 * positions; later its cells wrap.)
 *
 * Work is organised in jobs: R consecutive rows of one session (positions p0 .. p0+R-1) and
 * one KV head g with its G = n_head / n_head_kv query heads. A job reads the K rows of the
 * union of its rows' windows, [lo(p0), p0+R-1], once for all R x G queries, and the V rows
 * of the union's hull once: each score and each output element is still its own dot
 * product in llama.cpp's order, so grouping changes no bit.
 *   kq    = K_g . q over the union's cells, one kernel call for the R x G queries
 *   softmax per (row, head) over its window, zeros elsewhere in the hull
 *   kqv   = V_g . p over the hull, one kernel call for the R x G probability rows
 * Many jobs (prefill) run in parallel, one job per work item. Few large jobs (decode deep in
 * the context) run one at a time with each phase split over the pool: kq by blocks of cells,
 * softmax by query heads, kqv by blocks of V channels. */
typedef struct attn_win {
    int64_t p, lo, n;   /* query position, first visible position, n = p - lo + 1 */
} attn_win;

void attn_hull(int64_t lo, int64_t p, int64_t h, int64_t *a, int64_t *nw) {
    G4_ASSERT(h > 0 && h <= G4_ATTN_HULL && (h & (h - 1)) == 0);
    *a = lo & ~(h - 1);
    *nw = ((p + h) & ~(h - 1)) - *a;
}

/* The window of a query at position pos: [pos - n_swa + 1, pos] on sliding layers (n_swa of
 * the work's model: the assistant brings its own), [0, pos] on full ones; with attn_prev the
 * key at pos itself is not there (the assistant attends to the target's cache, which holds
 * positions < pos: llama.cpp's mask over the shared cells), so the window ends at pos - 1. */
static attn_win attn_window(const g4_work *wk, const g4_layer *l, int64_t pos) {
    attn_win w;
    const int64_t n_swa = wk->m->cfg.n_swa;
    w.lo = l->swa && pos - n_swa + 1 > 0 ? pos - n_swa + 1 : 0;
    w.p = wk->attn_prev ? pos - 1 : pos;
    w.n = w.p - w.lo + 1;
    G4_ASSERT(w.n >= 1);
    return w;
}

/* one job: rows [t0, t0 + R) of the work (one session, consecutive positions), KV head g */
typedef struct attn_job {
    const g4_session *s;
    const g4_kv_slot *kv;
    const g4_layer   *l;
    int      t0, R, g, hd;
    int      G, h0;           /* its G query heads h0 .. h0+G-1 (all of KV head g's, or some) */
    int64_t  lo, hi;          /* union of the windows: positions [lo, hi] */
    int64_t  A, NW;           /* its hull [A, A + NW) */
    int64_t  c0;              /* row of position lo in the slot */
    int64_t  seq_n;           /* the session's tokens in llama.cpp's ubatch (float order) */
    uint8_t *ws;              /* the job's scratch (session.c: kq | pq | qq | o | v copy) */
    float   *kq;              /* [R*G][NW] scores, then probabilities over the hull */
    uint8_t *pq;              /* [R*G] rows of p in V's dot type over NW cells (not with kqv_x) */
    uint8_t *qq;              /* [R*G] rows of q in K's dot type (f16 values in f32 with kq_x) */
    float   *o;               /* [R*G][hd] outputs */
    size_t   pq_rb, qq_rb;
    const uint8_t *vg;        /* V channels over the hull: [hd] rows of NW cells */
    size_t   v_stride;
    g4_matmul_fn kq_fn, kqv_fn; /* the kernels of the two products (llama.cpp's float order) */
    int      kq_x, kqv_x;     /* they take q / p as f16 values in f32 (kern.h matmul_f16x) */
} attn_job;

/* The F16 cache kernel f, when the table has its f16-valued-f32 form (kern.h matmul_f16x):
 * the same bits without converting q or p again for each of thousands of cache rows. */
static g4_matmul_fn f16x_form(const g4_kern *k, g4_matmul_fn f) {
    if (!k->round_f16) return NULL;
    if (f == k->matmul[G4_TYPE_F16]) return k->matmul_f16x[0];
    if (f == k->matmul_grp[G4_TYPE_F16]) return k->matmul_f16x[1];
    return NULL;
}

/* The hull in whole blocks of kern_attn_hull cells: [floor_h(lo), ceil_h(hi + 1)). Query
 * heads hs .. hs+nh-1 of KV head g's group (nh = 0: all of them). */
static void job_init(attn_job *j, g4_work *w, const g4_layer *l, int t0, int R, int g, int hs, int nh, uint8_t *ws) {
    const g4_session *s = w->sess[t0];
    j->s = s;
    j->kv = &s->kv[l->kv_slot];
    j->l = l;
    j->t0 = t0;
    j->R = R;
    j->g = g;
    const int gsz = l->n_head / l->n_head_kv;
    j->G = nh ? nh : gsz;
    j->h0 = g * gsz + hs;
    j->hd = l->head_dim;
    j->lo = attn_window(w, l, w->pos[t0]).lo;
    j->hi = attn_window(w, l, w->pos[t0 + R - 1]).p;
    attn_hull(j->lo, j->hi, kern_attn_hull(w->m->kern), &j->A, &j->NW);
    j->c0 = j->lo % j->kv->n_cells;
    j->seq_n = w->seq_n[t0];
    G4_ASSERT(j->hi - j->lo + 1 <= j->kv->n_cells && j->c0 + (j->hi - j->lo + 1) <= j->kv->n_rows);
    G4_ASSERT((int64_t)R * j->G * j->NW <= s->ws_kq_cap && (int64_t)R * j->G <= s->ws_q_cap);
    const int kdt = quant_traits(s->kv_type)->dot_type;
    j->ws = ws;
    j->kq = (float *)(void *)ws;
    j->pq = ws + s->ws_pq;
    j->qq = ws + s->ws_qq;
    j->o = (float *)(void *)(ws + s->ws_o);
    /* llama.cpp's kq = mul_mat(k, q), one product per (head, sequence) over that sequence's
     * tokens in the ubatch: with an F32 K cache q is permuted, so always ggml's one-column
     * vec_dot order; with F16 K its tinyBLAS when the sequence has >= 2 tokens there (that
     * op's rows are llama.cpp's n_kv cells, a multiple of 256: llama-kv-cache.cpp get_n_kv).
     * kqv = mul_mat(v, kq): tinyBLAS order when the sequence has >= 2 tokens, else vec_dot.
     * Each score and output is its own dot product whatever else the call computes. */
    const g4_kern *kern = w->m->kern;
    j->kq_fn = s->kv_type == G4_TYPE_F16 ? kern_pick(kern, G4_TYPE_F16, j->seq_n, 0, j->hd, 256, KERN_PLAIN)
                                         : kern->matmul[s->kv_type];
    j->kqv_fn = kern_pick(kern, s->kv_type, j->seq_n, 0, j->NW, j->hd, KERN_PLAIN);
    const g4_matmul_fn kqx = f16x_form(kern, j->kq_fn);
    const g4_matmul_fn kqvx = kern->vp_f16_min && j->NW > kern->vp_f16_min && j->kqv_fn == kern->matmul[G4_TYPE_F16]
                                  ? NULL : f16x_form(kern, j->kqv_fn); /* kern.h vp_f16_min */
    j->kq_x = kqx != NULL;
    j->kqv_x = kqvx != NULL;
    if (kqx) j->kq_fn = kqx;
    if (kqvx) j->kqv_fn = kqvx;
    j->pq_rb = j->kqv_x ? (size_t)j->NW * sizeof(float) : kern_act_row_bytes(kdt, j->NW);
    j->qq_rb = j->kq_x ? (size_t)j->hd * sizeof(float) : kern_act_row_bytes(kdt, j->hd);
    j->vg = NULL;
    j->v_stride = 0;
}

/* q of queries [k0, k1) (query k = row k / G, head k % G) in K's dot type */
static void job_q(const attn_job *j, const g4_work *w, int k0, int k1) {
    const g4_kern *kern = w->m->kern;
    const int kdt = quant_traits(j->s->kv_type)->dot_type;
    const size_t q_dim = (size_t)j->hd * (size_t)j->l->n_head;
    for (int k = k0; k < k1; k++) {
        const int t = j->t0 + k / j->G, h = j->h0 + k % j->G;
        const float *q = w->Qcur + (size_t)t * q_dim + (size_t)h * (size_t)j->hd;
        uint8_t *qq = j->qq + (size_t)k * j->qq_rb;
        if (j->kq_x) {
            memcpy(qq, q, (size_t)j->hd * sizeof(float));
            kern->round_f16((float *)(void *)qq, j->hd);
        } else {
            kern->quantize_act[kdt](q, qq, j->hd);
        }
    }
}

/* scores of all R*G queries for the union's cells [c_a, c_b) (0 = position lo) */
static void job_kq(const attn_job *j, int64_t c_a, int64_t c_b) {
    const g4_kv_slot *kv = j->kv;
    const uint8_t *kg = kv->k + ((size_t)j->g * (size_t)kv->n_rows + (size_t)j->c0) * kv->k_row_bytes; /* position lo */
    j->kq_fn(j->kq + (j->lo - j->A), (size_t)j->NW, kg, kv->k_row_bytes, j->qq, j->qq_rb, j->hd, c_a, c_b, j->R * j->G);
}

/* softmax of queries [k0, k1) over their windows (scale 1.0, no soft-cap); zeros on the rest
 * of the hull; then p in V's dot type */
static void job_softmax(const attn_job *j, const g4_work *w, int k0, int k1) {
    const g4_kern *kern = w->m->kern;
    const int vdt = quant_traits(j->s->kv_type)->dot_type;
    for (int k = k0; k < k1; k++) {
        const attn_win win = attn_window(w, j->l, w->pos[j->t0 + k / j->G]);
        float *row = j->kq + (size_t)k * (size_t)j->NW;
        const int64_t off = win.lo - j->A;
        attn_softmax(kern, row + off, win.n, win.lo);
        memset(row, 0, (size_t)off * sizeof(float));
        memset(row + off + win.n, 0, (size_t)(j->NW - off - win.n) * sizeof(float));
        if (j->kqv_x) kern->round_f16(row + off, win.n); /* p is then the kq rows themselves */
        else if (j->s->kv_type != G4_TYPE_Q8_0) kern->quantize_act[vdt](row, j->pq + (size_t)k * j->pq_rb, j->NW);
    }
}

/* The transposed V rows of KV head g over the hull: straight from the cache when the hull's
 * cells are one row range there (always on full layers, rows = n_ctx rounded up to
 * G4_ATTN_HULL, and on rings with room); else copied into the job's scratch with zeros outside the union (small rings).
 * Cache cells never written are zero (session.c), so every value read is finite. */
static void job_v(attn_job *j) {
    const g4_session *s = j->s;
    const g4_kv_slot *kv = j->kv;
    const size_t esz = s->kv_type == G4_TYPE_F16 ? 2 : 4, nr = (size_t)kv->n_rows, hd = (size_t)j->hd;
    const uint8_t *vg = kv->v + (size_t)j->g * hd * nr * esz; /* [hd] rows of nr cells */
    int64_t ra = j->c0 - (j->lo - j->A);                        /* row of cell A */
    if (ra < 0 && kv->swa) ra += kv->n_cells;                   /* its mirror */
    if (ra >= 0 && ra + j->NW <= kv->n_rows) {
        j->vg = vg + (size_t)ra * esz;
        j->v_stride = nr * esz;
        return;
    }
    uint8_t *dst = j->ws + s->ws_v;
    const size_t nw = (size_t)j->NW, off = (size_t)(j->lo - j->A), n = (size_t)(j->hi - j->lo + 1);
    G4_ASSERT(s->ws_v_cells >= j->NW);
    for (size_t d = 0; d < hd; d++) {
        uint8_t *o = dst + d * nw * esz;
        memset(o, 0, nw * esz);
        memcpy(o + off * esz, vg + (d * nr + (size_t)j->c0) * esz, n * esz);
    }
    j->vg = dst;
    j->v_stride = nw * esz;
}

/* kqv = V_g . p for V channels [d0, d1) of all R*G queries into o */
static void job_kqv(const attn_job *j, int64_t d0, int64_t d1) {
    j->kqv_fn(j->o, (size_t)j->hd, j->vg, j->v_stride, j->kqv_x ? (const uint8_t *)j->kq : j->pq, j->pq_rb, j->NW, d0,
              d1, j->R * j->G);
}

/* A Q8_0 V cache (llama.cpp needs flash attention for it): row by row, no llama.cpp order. */
static void job_kqv_q8(const attn_job *j) {
    const g4_kv_slot *kv = j->kv;
    const int hd = j->hd, nq = j->R * j->G;
    float *vrow = j->o + (size_t)nq * (size_t)hd; /* [hd] after the outputs */
    memset(j->o, 0, (size_t)nq * (size_t)hd * sizeof(float));
    const uint8_t *vg = kv->v + ((size_t)j->g * (size_t)kv->n_rows + (size_t)j->c0) * kv->k_row_bytes;
    for (int64_t i = 0; i < j->hi - j->lo + 1; i++) {
        quant_dequant_row(G4_TYPE_Q8_0, vg + (size_t)i * kv->k_row_bytes, vrow, hd);
        for (int k = 0; k < nq; k++) {
            const float pk = j->kq[(size_t)k * (size_t)j->NW + (size_t)(j->lo - j->A + i)];
            float *ok = j->o + (size_t)k * (size_t)hd;
            for (int d = 0; d < hd; d++) ok[d] += pk * vrow[d];
        }
    }
}

/* outputs of the job into kqv_out */
static void job_store(const attn_job *j, g4_work *w) {
    const size_t q_dim = (size_t)j->hd * (size_t)j->l->n_head;
    for (int k = 0; k < j->R * j->G; k++) {
        const int t = j->t0 + k / j->G, h = j->h0 + k % j->G;
        memcpy(w->kqv_out + (size_t)t * q_dim + (size_t)h * (size_t)j->hd, j->o + (size_t)k * (size_t)j->hd,
               (size_t)j->hd * sizeof(float));
    }
}

/* the whole job on one thread */
static void job_run(attn_job *j, g4_work *w) {
    const int nq = j->R * j->G;
    job_q(j, w, 0, nq);
    job_kq(j, 0, j->hi - j->lo + 1);
    job_softmax(j, w, 0, nq);
    if (j->s->kv_type == G4_TYPE_Q8_0) job_kqv_q8(j);
    else {
        job_v(j);
        job_kqv(j, 0, j->hd);
    }
    job_store(j, w);
}

/* ---- scheduling ---- */

typedef struct attn_ctx {
    g4_work *w;
    const g4_layer *l;
    const int32_t *jt0, *jR; /* [n_jobs / n_head_kv] row ranges */
    int n_kv;
    int hg, n_hg;            /* jobs of hg query heads each, n_hg per KV head */
    attn_job *wide;          /* the one job of a wide phase */
} attn_ctx;

/* item = (row range, KV head, group of hg query heads; hg = G: all of them): a whole job on
 * one thread */
static void tile_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    const attn_ctx *c = vctx;
    const int G = c->l->n_head / c->l->n_head_kv;
    for (int64_t it = i0; it < i1; it++) {
        const int hq = (int)(it % c->n_hg), g = (int)(it / c->n_hg % c->n_kv), rr = (int)(it / c->n_hg / c->n_kv);
        const int hs = hq * c->hg, nh = G - hs < c->hg ? G - hs : c->hg;
        const g4_session *s = c->w->sess[c->jt0[rr]];
        attn_job j;
        job_init(&j, c->w, c->l, c->jt0[rr], c->jR[rr], g, hs, nh, s->attn_ws + (size_t)thread * s->attn_ws_bytes);
        job_run(&j, c->w);
    }
}

#define WIDE_CELLS 64  /* cells per kq item of a wide job (a sliding window's ~544 cells: 9 items) */
#define WIDE_DIMS 32   /* V channels per kqv item */

static void wide_kq_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const attn_ctx *c = vctx;
    const int64_t n = c->wide->hi - c->wide->lo + 1, b = i1 * WIDE_CELLS < n ? i1 * WIDE_CELLS : n;
    job_kq(c->wide, i0 * WIDE_CELLS, b);
}
static void wide_sm_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const attn_ctx *c = vctx;
    job_softmax(c->wide, c->w, (int)i0, (int)i1);
}
static void wide_kqv_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const attn_ctx *c = vctx;
    job_kqv(c->wide, i0 * WIDE_DIMS, i1 * WIDE_DIMS < c->wide->hd ? i1 * WIDE_DIMS : c->wide->hd);
}

/* one job with every phase split over the pool (thread 0's scratch holds the job). kq and kqv
 * go in one even share per thread (a thread that comes late has its share taken whole): each
 * thread's cells, and its V channels, are one range, one kernel call, which the kernels'
 * prefetch-ahead covers from its first rows on. */
static void job_wide(attn_ctx *c, attn_job *j) {
    g4_pool *pool = c->w->m->pool;
    const int nq = j->R * j->G, nt = c->w->n_threads;
    const int64_t n_kq = (j->hi - j->lo + 1 + WIDE_CELLS - 1) / WIDE_CELLS, n_kqv = (j->hd + WIDE_DIMS - 1) / WIDE_DIMS;
    c->wide = j;
    job_q(j, c->w, 0, nq); /* a few hundred values per query: not worth a pool pass */
    pool_for(pool, n_kq, (n_kq + nt - 1) / nt, wide_kq_task, c);
    pool_for(pool, nq, 1, wide_sm_task, c);
    job_v(j);
    pool_for(pool, n_kqv, (n_kqv + nt - 1) / nt, wide_kqv_task, c);
    job_store(j, c->w);
}

/* Rows [r0, T) cut into jobs: runs of one session's consecutive rows, at most
 * (G4_ATTN_TILE) and what the session's scratch holds. With at least two jobs per thread they
 * run in parallel. Else, over windows shorter than WIDE_MIN cells, when jobs of 4 query heads
 * (kern.h matmul_f16x's columns per pass) share out evenly, those run in parallel (decode on
 * a sliding layer: E2B's 8 heads on 2 threads, one pass each, no barrier). Otherwise one by
 * one, each phase spread over the pool: deep in the context each thread then reads its part
 * of the cache, where jobs of 4 heads would each read all of it (E2B decode at depth 4,096, 2
 * threads, Zen 5: a full layer's attention 0.66-0.81 -> 0.50-0.61 ms, A/B by token in one
 * process). */
#define WIDE_MIN 1024
void attn_compute(g4_work *w, const g4_layer *l, int r0, int T) {
    int32_t jt0[1024], jR[1024]; /* n_rows <= 65536 rows, jobs of >= 1 row: bounded below */
    int n_j = 0;
    const int G = l->n_head / l->n_head_kv;
    for (int t = r0; t < T;) {
        const g4_session *s = w->sess[t];
        int R = 1;
        while (t + R < T && R < G4_ATTN_TILE && w->sess[t + R] == s && w->pos[t + R] == w->pos[t] + R) {
            /* the union of R + 1 rows must fit the scratch */
            int64_t lo = attn_window(w, l, w->pos[t]).lo, a, nw;
            attn_hull(lo, attn_window(w, l, w->pos[t] + R).p, kern_attn_hull(w->m->kern), &a, &nw);
            if ((int64_t)(R + 1) * G * nw > s->ws_kq_cap || (R + 1) * G > s->ws_q_cap) break;
            R++;
        }
        if (n_j == (int)(sizeof jt0 / sizeof jt0[0])) { /* flush a full list */
            attn_ctx c = { .w = w, .l = l, .jt0 = jt0, .jR = jR, .n_kv = l->n_head_kv, .hg = G, .n_hg = 1 };
            pool_for(w->m->pool, (int64_t)n_j * l->n_head_kv, 1, tile_task, &c);
            n_j = 0;
        }
        jt0[n_j] = t;
        jR[n_j] = R;
        n_j++;
        t += R;
    }
    attn_ctx c = { .w = w, .l = l, .jt0 = jt0, .jR = jR, .n_kv = l->n_head_kv, .hg = G, .n_hg = 1 };
    const int64_t n_items = (int64_t)n_j * l->n_head_kv;
    if (n_items >= 2 * (int64_t)w->n_threads || w->n_threads == 1) {
        pool_for(w->m->pool, n_items, 1, tile_task, &c);
        return;
    }
    c.hg = 4;
    c.n_hg = (G + c.hg - 1) / c.hg;
    const int64_t n_head_items = n_items * c.n_hg;
    int64_t cells = 0; /* the longest job's union of windows */
    for (int k = 0; k < n_j; k++) {
        const int64_t n = attn_window(w, l, w->pos[jt0[k] + jR[k] - 1]).p - attn_window(w, l, w->pos[jt0[k]]).lo + 1;
        cells = n > cells ? n : cells;
    }
    if (cells < WIDE_MIN && c.n_hg > 1 && (n_head_items % w->n_threads == 0 || n_head_items >= 2 * (int64_t)w->n_threads)) {
        pool_for(w->m->pool, n_head_items, 1, tile_task, &c);
        return;
    }
    for (int k = 0; k < n_j; k++)
        for (int g = 0; g < l->n_head_kv; g++) {
            const g4_session *s = w->sess[jt0[k]];
            attn_job j;
            job_init(&j, w, l, jt0[k], jR[k], g, 0, 0, s->attn_ws);
            if (s->kv_type == G4_TYPE_Q8_0) job_run(&j, w);
            else job_wide(&c, &j);
        }
}
