/* forward.c - the Gemma 4 text decoder, hand-written: embedding -> layers -> final norm ->
 * LM head -> soft-cap, for one chunk of at most n_ubatch tokens (prefill and decode alike).
 *
 * Owns: the layer loop and its schedule (which rows each layer runs on), the matmul helper
 * (activation rows converted once to the weight's dot type, output rows split over the
 * pool), RMSNorm, the fp16 GELU table and GeGLU, the FFN and the output head.
 * Does not own: attention and the KV cache (attention.c), per-layer embeddings (ple.c),
 * buffer sizing (session.c), kernels (kern/).
 *
 * Schedule (gemma4-architecture.md §8, performance.md §5). Layers 0..S-2 run on every row of
 * the chunk. Layer S-1, the last one that owns K/V, writes K/V for every row; its attention,
 * FFN and PLE block run only on the rows whose logits are wanted (the last n_out rows of the
 * chunk), and so do layers S..L-1, the final norm and the head. Shared layers read the caches
 * of layers S-2 / S-1, which already hold every position of the chunk. Per-row arithmetic is
 * the same on every path, so the result does not depend on the schedule.
 *
 * Numerics follow llama.cpp v0.5.0's CPU backend (§5): RMSNorm squares in f32 summed in
 * double; GELU through the fp16 table; every matmul sees its activations in the weight's dot
 * type; scales are f32 multiplies; soft-cap = c * tanhf(x * (1/c)).
 * No allocation here: every buffer is in the session arena.
 */
#include "forward.h"

#include <math.h>
#include <string.h>

#include "kern/kern.h"
#include "pool.h"
#include "quant/quant.h"
#include "quant/quant_ref.h"

/* ==== Small numeric helpers ==== */

/* ref: ggml-cpu/vec.h ggml_gelu_f32 (GELU_COEF_A, SQRT_2_OVER_PI) as ggml_cpu_init computes
 * it in llama.cpp's FMA builds (haswell and up, NEON): 1 + (a*x)*x is one fused multiply-add,
 * every other step rounds on its own (the table then matches all 65536 entries; without the
 * FMA one entry differs; g4-ggml-ops). One operation per statement so no compiler contracts
 * anything else. */
static float gelu_f32(float x) {
    const float coef_a = 0.044715f;
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    const float ax = coef_a * x;
    float inner = fmaf(ax, x, 1.0f);
    float arg = sqrt_2_over_pi * x;
    arg = arg * inner;
    float th = tanhf(arg);
    float half = 0.5f * x;
    float one_p = 1.0f + th;
    return half * one_p;
}

/* ref: ggml-cpu.c ggml_cpu_init: table_gelu_f16[i] = fp16(ggml_gelu_f32(fp32(i))) */
void forward_gelu_table(uint16_t *t) {
    for (uint32_t i = 0; i < 65536u; i++)
        t[i] = g4_f32_to_f16(gelu_f32(g4_f16_to_f32((uint16_t)i)));
}

/* ref: ggml-cpu/ops.cpp ggml_compute_forward_rms_norm_f32: each row's f32 squares added in
 * double in element order, and the sum used only as mean = (float)(sum / n) (forward_rms_apply).
 * That chain of n dependent double adds is most of a norm's cost (1.05 us for 1536 values on
 * Zen 5, five norms a layer; the lanes below 0.69 us), so the sum is first taken in eight
 * lanes, an order of its own, and the element-order chain runs only when that could give
 * another mean:
 *  - every term t_i = (double)(x_i * x_i) is >= 0, so both orders are within gamma_n * S of the
 *    exact sum S (recursive summation, depth <= n; gamma_n = n u / (1 - n u), u = 2^-53), and
 *    the element-order sum lies in [s - e, s + e] around the lanes' s, e = s * n * 2^-50 (more
 *    than 2 gamma_n / (1 - gamma_n) * s, with room for the rounding of e, s - e, s + e);
 *  - x -> (float)(x / n), a correctly rounded division then a correctly rounded conversion, is
 *    non-decreasing, so when both ends of that interval give the same float, so does every sum
 *    inside it: s then gives the element-order sum's mean bit for bit.
 * A float rounding tie falls inside the interval for about one row in 30,000 (1536 values);
 * those rows, and any with an infinite or NaN sum, take the element-order chain. */
#if defined(KERN_GENERIC_VEC)
/* generic vectors (kern.h KERN_GENERIC_VEC): SSE2 on x86-64, NEON on AArch64; the squares in
 * float, each pair widened and added in double */
typedef float  fw_v4f __attribute__((vector_size(16)));
typedef double fw_v2d __attribute__((vector_size(16)));
static double sumsq_lanes(const float *a, int64_t n) {
    fw_v2d l0 = { 0, 0 }, l1 = l0, l2 = l0, l3 = l0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        fw_v4f x, y;
        memcpy(&x, a + i, sizeof x);
        memcpy(&y, a + i + 4, sizeof y);
        x = x * x, y = y * y;
        l0 += __builtin_convertvector(__builtin_shufflevector(x, x, 0, 1), fw_v2d);
        l1 += __builtin_convertvector(__builtin_shufflevector(x, x, 2, 3), fw_v2d);
        l2 += __builtin_convertvector(__builtin_shufflevector(y, y, 0, 1), fw_v2d);
        l3 += __builtin_convertvector(__builtin_shufflevector(y, y, 2, 3), fw_v2d);
    }
    const fw_v2d t = (l0 + l1) + (l2 + l3);
    double r = t[0] + t[1];
    for (; i < n; i++) r += (double)(a[i] * a[i]);
    return r;
}
#else
static double sumsq_lanes(const float *a, int64_t n) {
    double l[8] = { 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) l[k] += (double)(a[i + k] * a[i + k]);
    for (; i < n; i++) l[0] += (double)(a[i] * a[i]);
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}
#endif

/* 1 when s (a sum of n squares in any order) gives the element-order sum's (float)(sum / n) */
int forward_sumsq_safe(double s, int64_t n) {
    if (s == 0.0) return 1; /* every term +0: so is every order's sum */
    if (!(s > 0.0) || !isfinite(s) || n > (INT64_C(1) << 40)) return 0;
    const double e = s * (double)n * 0x1p-50, dn = (double)n;
    return (float)((s - e) / dn) == (float)((s + e) / dn);
}

/* the element-order sums of nr rows, their chains side by side (the adds' latency overlaps) */
static void sumsq_chain(const float *const *x, int nr, int64_t n, double *s) {
    int r = 0;
    for (; r + 4 <= nr; r += 4) {
        const float *a = x[r], *b = x[r + 1], *c = x[r + 2], *d = x[r + 3];
        double sa = 0.0, sb = 0.0, sc = 0.0, sd = 0.0;
        for (int64_t i = 0; i < n; i++) {
            sa += (double)(a[i] * a[i]);
            sb += (double)(b[i] * b[i]);
            sc += (double)(c[i] * c[i]);
            sd += (double)(d[i] * d[i]);
        }
        s[r] = sa, s[r + 1] = sb, s[r + 2] = sc, s[r + 3] = sd;
    }
    for (; r + 2 <= nr; r += 2) {
        const float *a = x[r], *b = x[r + 1];
        double sa = 0.0, sb = 0.0;
        for (int64_t i = 0; i < n; i++) {
            sa += (double)(a[i] * a[i]);
            sb += (double)(b[i] * b[i]);
        }
        s[r] = sa, s[r + 1] = sb;
    }
    for (; r < nr; r++) {
        const float *a = x[r];
        double sa = 0.0;
        for (int64_t i = 0; i < n; i++) sa += (double)(a[i] * a[i]);
        s[r] = sa;
    }
}

void forward_sumsq_ref(const float *const *x, int nr, int64_t n, double *s) { sumsq_chain(x, nr, n, s); }

void forward_sumsq(const float *const *x, int nr, int64_t n, double *s) {
    for (int r = 0; r < nr; r++) {
        s[r] = sumsq_lanes(x[r], n);
        if (!forward_sumsq_safe(s[r], n)) sumsq_chain(x + r, 1, n, s + r); /* rare: its own chain */
    }
}

/* y[i] = (x[i] * sc) * w[i] (w NULL: x[i] * sc), 4 at a time so -O2's block vectorizer takes
 * them; y == x (in place) or disjoint */
static void scale_mul(float *y, const float *x, const float *w, int64_t n, float sc) {
    int64_t i = 0;
    if (w) {
        for (; i + 4 <= n; i += 4) {
            const float a0 = x[i] * sc, a1 = x[i + 1] * sc, a2 = x[i + 2] * sc, a3 = x[i + 3] * sc;
            const float b0 = a0 * w[i], b1 = a1 * w[i + 1], b2 = a2 * w[i + 2], b3 = a3 * w[i + 3];
            y[i] = b0, y[i + 1] = b1, y[i + 2] = b2, y[i + 3] = b3;
        }
        for (; i < n; i++) y[i] = x[i] * sc * w[i];
    } else {
        for (; i + 4 <= n; i += 4) {
            const float a0 = x[i] * sc, a1 = x[i + 1] * sc, a2 = x[i + 2] * sc, a3 = x[i + 3] * sc;
            y[i] = a0, y[i + 1] = a1, y[i + 2] = a2, y[i + 3] = a3;
        }
        for (; i < n; i++) y[i] = x[i] * sc;
    }
}

/* ref: ggml_compute_forward_rms_norm_f32, fused with ggml_mul by the weight: mean =
 * (float)(sum/n), scale = 1/sqrtf(mean+eps), y = (x*scale)*w. */
void forward_rms_apply(float *y, const float *x, const float *w, int64_t n, double sum, float eps) {
    const float mean = (float)(sum / (double)n);
    scale_mul(y, x, w, n, 1.0f / sqrtf(mean + eps));
}

void forward_rms_norm_n(float *y, size_t ys, const float *x, size_t xs, int nr, int64_t n, const float *w, float eps) {
    for (int r0 = 0; r0 < nr; r0 += 8) {
        const int k = nr - r0 < 8 ? nr - r0 : 8;
        const float *xr[8];
        double sum[8];
        for (int r = 0; r < k; r++) xr[r] = x + (size_t)(r0 + r) * xs;
        forward_sumsq(xr, k, n, sum);
        for (int r = 0; r < k; r++) forward_rms_apply(y + (size_t)(r0 + r) * ys, xr[r], w, n, sum[r], eps);
    }
}

void forward_rms_norm(float *y, const float *x, const float *w, int64_t n, float eps) {
    forward_rms_norm_n(y, 0, x, 0, 1, n, w, eps);
}

/* ref: gemma4.cpp ggml_scale(1/c) -> ggml_tanh (vec.h ggml_vec_tanh_f32: tanhf) -> ggml_scale(c) */
void forward_softcap(float *y, int64_t n, float c) {
    const float inv = 1.0f / c;
    for (int64_t i = 0; i < n; i++) y[i] = tanhf(y[i] * inv) * c;
}

static inline const float *fvec(const g4_tensor *t) { return (const float *)(const void *)t->data; }

/* ==== Matmul: activations -> dot type once, rows over the pool ==== */

typedef struct mm_ctx {
    const g4_kern *kern;
    const g4_tensor *w;
    const float *x;        /* [n_tok][n_in] f32 */
    uint8_t *xq;           /* [n_tok][xq_rb] converted rows */
    size_t xq_rb;
    int dot_type;
    float *y;
    size_t ldy;
    int64_t row0;
    int n_tok;
    const int32_t *cols;   /* [n_tok] column of each token in llama.cpp's op over N columns,
                            * -1 = a one-column op of its own */
    int64_t N;
    unsigned flags;        /* kern_pick flags (KERN_PLAIN) */
    float scale;
    float softcap;         /* 0 = none; else y = c * tanhf(y * (1/c)) after the scale */
    void (*capf)(float *y, int64_t n, float c); /* the model's soft-cap (g4_model.softcap) */
    float *const *dst;     /* NULL, or [n_tok]: copy each finished y row there (NULL = keep) */
    /* fused passes (matmul_parts, matmul_gate_up): more matrices of the same input in one pass */
    const struct mm_part *part; /* NULL, or [n_part]: the pass's rows are the parts' rows, one
                                 * after the other (w, y, ldy, scale above unused) */
    int n_part;
    const g4_tensor *w_up; /* non-NULL: rows r of w (gate, into y) and of w_up (into y_up),
                            * then y = geglu(y, y_up) on those rows (geglu, gelu_tab) */
    float *y_up;
    float scale_up;
    g4_geglu_fn geglu;
    const uint16_t *gelu_tab;
} mm_ctx;

/* one matrix of a fused pass: its rows [0, ne[1]) are the pass's rows [at, at + ne[1]) */
typedef struct mm_part {
    const g4_tensor *w;
    float *y;              /* [n_tok][ldy] */
    size_t ldy;
    float scale;
    int64_t at;
} mm_part;

static void mm_quant_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    mm_ctx *c = vctx;
    const int64_t n_in = c->w->ne[0];
    for (int64_t t = i0; t < i1; t++)
        c->kern->quantize_act[c->dot_type](c->x + t * n_in, c->xq + (size_t)t * c->xq_rb, n_in);
}

/* the kernel of token t for weight w: column cols[t] of an op over N columns; a column of -1
 * is an op of its own (a decode-order row: G4_EVAL_DECODE_ORDER) */
static g4_matmul_fn mm_pick(const mm_ctx *c, const g4_tensor *w, int t) {
    const int64_t col = c->cols[t];
    const g4_matmul_fn fn = col < 0 ? kern_pick(c->kern, w->type, 1, 0, w->ne[0], w->ne[1], c->flags)
                                    : kern_pick(c->kern, w->type, c->N, col, w->ne[0], w->ne[1], c->flags);
    if (!w->rq) return fn;
    /* a repacked matrix: the same order from its tiles (Q4_K: matmul's or matmul_grp's; the
     * other types have one) */
    G4_ASSERT(fn == c->kern->matmul[w->type] || (w->type == G4_TYPE_Q4_K && fn == c->kern->matmul_grp[G4_TYPE_Q4_K]));
    return kern_rq_matmul(c->kern, w->type, fn);
}

/* rows [r0, r1) of w for every token into y (row r of token t at y[t * ldy + r]), scaled */
static void mm_rows(const mm_ctx *c, const g4_tensor *w, float *y, size_t ldy, float scale, int64_t r0, int64_t r1) {
    /* runs of tokens with the same kernel (float order): usually one or two */
    for (int t0 = 0; t0 < c->n_tok;) {
        const g4_matmul_fn fn = mm_pick(c, w, t0);
        int t1 = t0 + 1;
        while (t1 < c->n_tok && mm_pick(c, w, t1) == fn) t1++;
        fn(y + (size_t)t0 * ldy, ldy, w->data, w->row_bytes, c->xq + (size_t)t0 * c->xq_rb, c->xq_rb, w->ne[0], r0, r1,
           t1 - t0);
        t0 = t1;
    }
    if (scale != 1.0f) /* ref: llm_graph_context::build_lora_mm, y = ggml_mul(W x, w_s) */
        for (int t = 0; t < c->n_tok; t++) {
            float *yt = y + (size_t)t * ldy;
            for (int64_t r = r0; r < r1; r++) yt[r] *= scale;
        }
}

static void mm_rows_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    mm_ctx *c = vctx;
    if (c->part) { /* fused: the parts these rows fall in */
        for (int k = 0; k < c->n_part; k++) {
            const mm_part *q = &c->part[k];
            const int64_t a = i0 > q->at ? i0 : q->at, b = i1 < q->at + q->w->ne[1] ? i1 : q->at + q->w->ne[1];
            if (a < b) mm_rows(c, q->w, q->y, q->ldy, q->scale, a - q->at, b - q->at);
        }
        return;
    }
    const int64_t r0 = c->row0 + i0, r1 = c->row0 + i1;
    mm_rows(c, c->w, c->y, c->ldy, c->scale, r0, r1);
    if (c->w_up) { /* the same rows of up, then GeGLU on them (a row's result is the same
                    * wherever the rows are cut: geglu is per element) */
        mm_rows(c, c->w_up, c->y_up, c->ldy, c->scale_up, r0, r1);
        for (int t = 0; t < c->n_tok; t++)
            c->geglu(c->y + (size_t)t * c->ldy + r0, c->y_up + (size_t)t * c->ldy + r0, c->gelu_tab, r1 - r0);
    }
    if (c->softcap != 0.0f)
        for (int t = 0; t < c->n_tok; t++)
            c->capf(c->y + (size_t)t * c->ldy + r0, r1 - r0, c->softcap);
    if (c->dst)
        for (int t = 0; t < c->n_tok; t++) {
            const float *yt = c->y + (size_t)t * c->ldy;
            if (c->dst[t] && c->dst[t] != yt) memcpy(c->dst[t] + r0, yt + r0, (size_t)(r1 - r0) * sizeof(float));
        }
}

/* the context of a matmul of w by x's n_tok rows (act holding them in w's dot type: mm_run) */
static mm_ctx mm_make(g4_work *wk, const g4_tensor *w, const float *x, int n_tok, const int32_t *cols, int64_t N,
                      unsigned flags, float *y, size_t ldy, int64_t row0, float scale) {
    const g4_model *m = wk->m;
    mm_ctx c = {
        .kern = m->kern, .w = w, .x = x, .xq = wk->act,
        .dot_type = quant_traits(w->type)->dot_type,
        .y = y, .ldy = ldy, .row0 = row0, .n_tok = n_tok, .cols = cols, .N = N, .flags = flags, .scale = scale,
        .capf = m->softcap,
    };
    c.xq_rb = kern_act_row_bytes(c.dot_type, w->ne[0]);
    G4_ASSERT(c.xq_rb <= wk->act_row_max && n_tok <= wk->n_rows);
    return c;
}

/* ref: ggml_compute_forward_mul_mat: src1 rows converted to vec_dot_type(src0) first; then
 * rows [0, n_rows) of the pass, a contiguous share per thread claimed in shrinking multiples
 * of 16 rows (whole 8-row kernel tiles) and stolen from the back in the same (pool.c): the
 * threads finish within a 16-row chunk of each other.
 * reuse: x unchanged since the last matmul (the caller's word); act then still holds it if
 * that one quantized the same rows to the same type */
static void mm_run(g4_work *wk, mm_ctx *c, int64_t n_rows, int reuse) {
    const g4_model *m = wk->m;
    const int64_t n_in = c->w->ne[0];
    if (!reuse || wk->act_x != c->x || wk->act_n_tok != c->n_tok || wk->act_n_in != n_in || wk->act_dt != c->dot_type) {
        /* a few short rows on this thread: cheaper than a pool pass's hand-over */
        pool_for(m->pool, c->n_tok, (int64_t)c->n_tok * n_in <= 16384 ? c->n_tok : 1, mm_quant_task, c);
        wk->act_x = c->x, wk->act_n_tok = c->n_tok, wk->act_n_in = n_in, wk->act_dt = c->dot_type;
    }
    pool_for_guided(m->pool, n_rows, wk->n_threads > 1 ? 16 : n_rows, mm_rows_task, c);
}

static void matmul_ex(g4_work *wk, const g4_tensor *w, const float *x, int n_tok, const int32_t *cols, int64_t N,
                      unsigned flags, float *y, size_t ldy, int64_t row0, int64_t row1, float scale, float softcap,
                      float *const *dst, int reuse) {
    mm_ctx c = mm_make(wk, w, x, n_tok, cols, N, flags, y, ldy, row0, scale);
    G4_ASSERT(row1 <= w->ne[1]);
    c.softcap = softcap, c.dst = dst;
    mm_run(wk, &c, row1 - row0, reuse);
}

/* Layer matmuls: chunk rows [a, b) are columns col[a..b) of llama.cpp's op over the
 * ubatch's batch_n columns. */
void forward_matmul(g4_work *w, const g4_tensor *wt, const float *x, int a, int b,
                    float *y, size_t ldy, int64_t row0, int64_t row1, float scale) {
    matmul_ex(w, wt, x, b - a, w->col + a, w->batch_n, 0, y, ldy, row0, row1, scale, 0.0f, NULL, 0);
}

/* all output rows of wt, packed: y is [b - a][wt->ne[1]] */
static void matmul(g4_work *w, const g4_tensor *wt, const float *x, int a, int b, float *y, float scale) {
    forward_matmul(w, wt, x, a, b, y, (size_t)wt->ne[1], 0, wt->ne[1], scale);
}

/* the same, x unchanged since the previous matmul (its quantized rows reused when they match) */
static void matmul_same_x(g4_work *w, const g4_tensor *wt, const float *x, int a, int b, float *y, float scale) {
    matmul_ex(w, wt, x, b - a, w->col + a, w->batch_n, 0, y, (size_t)wt->ne[1], 0, wt->ne[1], scale, 0.0f, NULL, 1);
}

/* Matrices of the same input in one pass (one hand-over instead of one each): each the same
 * kernels on the same rows as its own matmul (same bits), where they share the input width
 * and the dot type. */
static int mm_fusable(const g4_tensor *a, const g4_tensor *b) {
    return a->ne[0] == b->ne[0] && quant_traits(a->type)->dot_type == quant_traits(b->type)->dot_type;
}

/* parts[0 .. n) by x's rows [a, b), all output rows of each, packed ([b - a][ne[1]]): each run
 * of parts that fuse in one pass (x quantized again only where the dot type changes) */
static void matmul_parts(g4_work *w, mm_part *parts, int n, const float *x, int a, int b) {
    for (int k0 = 0, k1; k0 < n; k0 = k1) {
        int64_t at = 0;
        for (k1 = k0; k1 < n && mm_fusable(parts[k0].w, parts[k1].w); k1++) {
            parts[k1].ldy = (size_t)parts[k1].w->ne[1];
            parts[k1].at = at;
            at += parts[k1].w->ne[1];
        }
        mm_ctx c = mm_make(w, parts[k0].w, x, b - a, w->col + a, w->batch_n, 0, NULL, 0, 0, 1.0f);
        c.part = parts + k0, c.n_part = k1 - k0;
        mm_run(w, &c, at, k0 > 0); /* after the first run x is the same (act still holds it) */
    }
}

/* gate = geglu(gate x, up x) on x's rows [a, b) in one pass; 0 where gate and up differ in
 * input width or dot type (nothing done) */
static int matmul_gate_up(g4_work *w, const g4_layer *l, const float *x, int a, int b) {
    if (!mm_fusable(l->ffn_gate, l->ffn_up) || l->ffn_gate->ne[1] != l->ffn_up->ne[1]) return 0;
    mm_ctx c = mm_make(w, l->ffn_gate, x, b - a, w->col + a, w->batch_n, 0, w->ffn_gate, (size_t)l->n_ff, 0,
                       l->scale_gate);
    c.w_up = l->ffn_up, c.y_up = w->ffn_up, c.scale_up = l->scale_up;
    c.geglu = w->m->kern->geglu, c.gelu_tab = w->m->gelu_f16;
    mm_run(w, &c, l->n_ff, 0);
    return 1;
}

/* ==== Row-parallel helper ==== */

typedef struct rows_ctx {
    g4_work *w;
    forward_row_fn fn;
    const void *arg;
    int r0;
} rows_ctx;

static void rows_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const rows_ctx *c = vctx;
    for (int64_t i = i0; i < i1; i++) c->fn(c->w, c->arg, c->r0 + (int)i);
}

void forward_rows(g4_work *w, int r0, int T, forward_row_fn fn, const void *arg) {
    if (r0 >= T) return;
    rows_ctx c = { .w = w, .fn = fn, .arg = arg, .r0 = r0 };
    const int64_t n = T - r0, per = 2 * (int64_t)w->n_threads;
    pool_for(w->m->pool, n, (n + per - 1) / per, rows_task, &c);
}

/* ==== Embedding ==== */

/* ref: gemma4.cpp graph: inpL = ggml_scale(get_rows(tok_embd, tokens), sqrtf(n_embd)),
 * "inp_scaled"; the row lookup is a plain dequantization (no activation rounding). */
static void embed(g4_work *w) {
    const g4_model *m = w->m;
    const int64_t E = m->cfg.n_embd;
    const float sc = sqrtf((float)E);
    for (int t = 0; t < w->T; t++) {
        float *x = w->inpL + (size_t)t * E;
        model_row_f32(m->token_embd, w->tok[t], x);
        for (int64_t i = 0; i < E; i++) x[i] *= sc;
    }
}

/* ==== Layer ==== */

typedef struct norm_arg {
    float *y;              /* [T][n_embd] */
    const float *x;        /* [T][n_embd] (may be y) */
    const float *w;        /* [n_embd] */
    int add;               /* 1: inpL += RMS(x, w) (x is y) */
    g4_work *work;
    int r0;
} norm_arg;

/* rows [i0, i1) of the norm's (past r0), their sums side by side (forward_rms_norm_n) */
static void norm_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const norm_arg *a = vctx;
    g4_work *w = a->work;
    const int64_t E = w->m->cfg.n_embd;
    const float eps = w->m->cfg.rms_eps;
    const int64_t t0 = a->r0 + i0, t1 = a->r0 + i1;
    forward_rms_norm_n(a->y + (size_t)t0 * E, (size_t)E, a->x + (size_t)t0 * E, (size_t)E, (int)(t1 - t0), E, a->w, eps);
    if (a->add)
        for (int64_t t = t0; t < t1; t++) {
            const float *dt = a->y + (size_t)t * E;
            float *xt = w->inpL + (size_t)t * E;
            for (int64_t i = 0; i < E; i++) xt[i] = dt[i] + xt[i];
        }
}

/* rows [r0, T), a share of them per thread; up to 8 rows on the calling thread: their sums
 * run side by side in the time of one (forward_rms_norm_n), so a pool pass would only add its
 * hand-over (verification and batched decode: ~140 of them per step) */
static void norm_run(g4_work *w, norm_arg *a, int r0, int T) {
    if (r0 >= T) return;
    a->work = w, a->r0 = r0;
    const int64_t n = T - r0, nt = w->n_threads;
    pool_for(w->m->pool, n, n <= 8 ? n : (n + nt - 1) / nt, norm_task, a);
}

/* Rows [r0, T) of inpL: inpL = inpL + RMS(d, norm), d normed in place (stride n_embd).
 * ref: gemma4.cpp "attn_post_norm" + "attn_out", "ffn_post_norm" + residual. */
static void add_post_norm(g4_work *w, float *d, const g4_tensor *norm, int r0, int T) {
    norm_arg a = { .y = d, .x = d, .w = fvec(norm), .add = 1 };
    norm_run(w, &a, r0, T);
}

static void norm_rows(g4_work *w, float *y, const float *x, const g4_tensor *wt, int r0, int T) {
    norm_arg a = { .y = y, .x = x, .w = fvec(wt), .add = 0 };
    norm_run(w, &a, r0, T);
}

typedef struct geglu_ctx {
    float *gate;           /* [n] in: gate branch, out: gelu(gate) * up */
    const float *up;       /* [n] */
    const uint16_t *tab;
    g4_geglu_fn fn;
} geglu_ctx;

static void geglu_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    geglu_ctx *c = vctx;
    /* ref: vec.h ggml_vec_geglu_f32 (GGML_GELU_FP16): x <= -10 gives +0 whatever up is */
    c->fn(c->gate + i0, c->up + i0, c->tab, i1 - i0);
}

/* FFN on rows [r0, T) of cur (ffn_norm output); result ffn_out into cur.
 * ref: llm_graph_context::build_ffn(LLM_FFN_GELU, LLM_FFN_PAR): down(gelu(gate x) * up x),
 * GeGLU as ggml_vec_geglu_f32 with GGML_GELU_FP16. */
static void ffn(g4_work *w, const g4_layer *l, int r0, int T) {
    const int64_t E = w->m->cfg.n_embd, F = l->n_ff;
    const int n = T - r0;
    float *x = w->cur + (size_t)r0 * E;
    if (!matmul_gate_up(w, l, x, r0, T)) { /* [n][F] */
        matmul(w, l->ffn_gate, x, r0, T, w->ffn_gate, l->scale_gate); /* [n][F] */
        matmul_same_x(w, l->ffn_up, x, r0, T, w->ffn_up, l->scale_up); /* [n][F] */
        geglu_ctx g = { .gate = w->ffn_gate, .up = w->ffn_up, .tab = w->m->gelu_f16, .fn = w->m->kern->geglu };
        pool_for(w->m->pool, (int64_t)n * F, 16384, geglu_task, &g);
    }
    matmul(w, l->ffn_down, w->ffn_gate, r0, T, x, l->scale_down); /* [n][E] "ffn_out" */
}

/* Layer il. Rows [r_kv, T) go through attn_norm and, on a KV-owning layer, the K/V
 * projections and the cache write; rows [r0, T) (r0 >= r_kv) through everything else.
 * ref: llama_model_gemma4::graph, one iteration of the layer loop. */
static void layer(g4_work *w, int il, int r_kv, int r0, int T) {
    const g4_model *m = w->m;
    const g4_layer *l = &m->layers[il];
    const int64_t E = m->cfg.n_embd;
    const int64_t q_dim = (int64_t)l->head_dim * l->n_head, kv_dim = (int64_t)l->head_dim * l->n_head_kv;
    const int r_norm = l->has_kv ? r_kv : r0;

    /* 1. attn_norm */
    norm_rows(w, w->cur, w->inpL, l->attn_norm, r_norm, T);

    /* RoPE angles for every row that rotates something (K from r_kv, Q from r0) */
    attn_rope_cache(w, l, r_norm, T);

    /* 3-6. K/V projections, k-norm + RoPE, v-norm, cache write; V = raw K without attn_v */
    /* Q with K and V in one pass where they take the same rows (2. below) */
    const int q_with_kv = l->has_kv && r_kv == r0 && r_kv < T;
    if (l->has_kv && r_kv < T) {
        const int n = T - r_kv;
        mm_part kvq[3] = { { .w = l->attn_k, .y = w->Kcur + (size_t)r_kv * kv_dim, .scale = l->scale_k } };
        int np = 1;
        if (!l->v_is_k) kvq[np++] = (mm_part){ .w = l->attn_v, .y = w->Vcur + (size_t)r_kv * kv_dim, .scale = l->scale_v };
        if (q_with_kv) kvq[np++] = (mm_part){ .w = l->attn_q, .y = w->Qcur + (size_t)r0 * q_dim, .scale = l->scale_q };
        matmul_parts(w, kvq, np, w->cur + (size_t)r_kv * E, r_kv, T);
        if (l->v_is_k) memcpy(w->Vcur + (size_t)r_kv * kv_dim, w->Kcur + (size_t)r_kv * kv_dim, (size_t)n * (size_t)kv_dim * sizeof(float));
        attn_kv_store(w, l, r_kv, T);
    }
    if (r0 >= T) return;

    /* 2. Q projection, q-norm, RoPE ("Qcur", "Qcur_normed", "Qcur_pos") */
    if (!q_with_kv) matmul(w, l->attn_q, w->cur + (size_t)r0 * E, r0, T, w->Qcur + (size_t)r0 * q_dim, l->scale_q);
    attn_q_prep(w, l, r0, T);

    /* 7. attention over the cache of kv_src ("kqv_out") */
    attn_compute(w, l, r0, T);

    /* 8-9. output projection, post-attention norm, residual ("attn_out") */
    matmul(w, l->attn_output, w->kqv_out + (size_t)r0 * q_dim, r0, T, w->cur + (size_t)r0 * E, l->scale_o);
    add_post_norm(w, w->cur, l->post_attention_norm, r0, T);

    /* 10-12. FFN ("ffn_norm", "ffn_out", "ffn_post_norm") and residual */
    norm_rows(w, w->cur, w->inpL, l->ffn_norm, r0, T);
    ffn(w, l, r0, T);
    /* 11. MoE layers: cur = RMS(cur, post_ffw_norm_1) + RMS(routed experts, post_ffw_norm_2) */
    if (l->moe) moe_ffn(w, l, w->inpL + (size_t)r0 * E, w->cur + (size_t)r0 * E, r0, T);
    add_post_norm(w, w->cur, l->post_ffw_norm, r0, T);

    /* 13. per-layer embedding block ("pe_in", "per_layer_embd_out") */
    ple_block(w, il, r0, T);

    /* 14. layer_output_scale on the whole stream ("out_scaled", "l_out") */
    if (l->out_scale != 1.0f)
        for (size_t i = (size_t)r0 * (size_t)E; i < (size_t)T * (size_t)E; i++) w->inpL[i] *= l->out_scale;
}

void forward_layer(g4_work *w, int il, int r_kv, int r0, int T) { layer(w, il, r_kv, r0, T); }

/* ==== Output ==== */

/* Final norm, LM head and soft-cap for rows [r0, T) -> logits rows [0, T-r0) of the work,
 * each copied to its row's destination as it is finished.
 * ref: gemma4.cpp "result_norm", build_lora_mm(output), ggml_scale(1/c) -> ggml_tanh ->
 * ggml_scale(c), "result_output". */
static void output(g4_work *w, int r0, int T) {
    const g4_model *m = w->m;
    const int64_t E = m->cfg.n_embd, V = m->cfg.n_vocab;
    const int n = T - r0;
    G4_ASSERT(n <= w->n_out_rows);
    norm_rows(w, w->cur, w->inpL, m->output_norm, r0, T);
    for (int t = r0; t < T; t++) /* "h_nextn": the LM head's input, for the MTP drafter */
        if (w->hdst[t]) memcpy(w->hdst[t], w->cur + (size_t)t * E, (size_t)E * sizeof(float));
    const g4_tensor *head = m->output ? m->output : m->token_embd; /* tied: rows [0, n_vocab) */
    /* the head sees only the output rows, as llama.cpp's graph after ggml_get_rows(out_ids):
     * its columns are the ubatch's outputs. Rows bound for consecutive logits rows (one
     * session's tokens) are written there directly; others (several sessions) go through the
     * work's logits rows and are copied as they finish. A tied head too is a weight llama.cpp
     * may repack: it loads token_embd a second time as the output tensor (TENSOR_DUPLICATED),
     * placed by the output's rules (kern_pick flags 0). */
    int direct = 1;
    for (int t = r0 + 1; t < T; t++) direct &= w->odst[t] == w->odst[t - 1] + V;
    float *y = direct ? w->odst[r0] : w->logits;
    G4_ASSERT(direct || w->logits);
    matmul_ex(w, head, w->cur + (size_t)r0 * E, n, w->ocol + r0, w->n_outputs, 0, y, (size_t)V, 0, V, 1.0f,
              m->cfg.softcap, direct ? NULL : w->odst + r0, 0);
}

/* ==== Chunk ==== */

void forward_chunk(g4_work *w) {
    const g4_model *m = w->m;
    const int L = m->cfg.n_layer, S = m->cfg.n_layer_kv;
    const int T = w->T, r0 = w->r0; /* rows [r0, T) need logits */
    G4_ASSERT(T >= 1 && T <= w->n_rows && r0 >= 0 && r0 <= T && S >= 1 && S <= L);

    embed(w);
    ple_inputs(w, r0, T);

    for (int il = 0; il < L; il++) {
        if (il < S - 1) layer(w, il, 0, 0, T);        /* all rows */
        else if (il == S - 1) layer(w, il, 0, r0, T); /* K/V for all rows, the rest for outputs */
        else layer(w, il, r0, r0, T);                 /* KV-shared: output rows only */
        if (r0 >= T && il >= S - 1) break;            /* no logits wanted from this chunk */
    }
    if (r0 < T) output(w, r0, T);
}
