/* g4-ggml-ops.c - the float (non-matmul) ops of the forward pass, bit for bit against ggml.
 *
 *   build/g4-ggml-ops LIBDIR [CPU-LIB]
 *
 * LIBDIR holds llama.cpp's shared libraries (node-llama-cpp's prebuilt CPU backend:
 * libggml-base.so and libggml-cpu-<variant>.so; CPU-LIB defaults to libggml-cpu-haswell.so,
 * the variant llama.cpp loads on an AVX2 host). Both are dlopen'ed (base first, RTLD_GLOBAL)
 * and driven through ggml's public C API, declared below from ggml.h / ggml-cpu.h so no
 * llama.cpp header is needed to build. Each op runs as a one-op graph on 1 thread on random
 * inputs of Gemma 4 shapes, and through gemma4.c's own function; every output value must be
 * bitwise identical (a 1-ulp difference anywhere can flip an 8-bit activation rounding later).
 *
 * Ops: rms_norm (weightless, and fused with the weight multiply), NEOX RoPE (sliding: plain;
 * full: proportional with rope_freqs), soft_max_ext on llama.cpp KQ rows (n_kv padded to 256,
 * -inf mask outside the causal / sliding window), GELU (every f16 input and random floats),
 * the logit soft-cap (scale, tanh, scale), and the rule attention multiplies V by: ggml's
 * own kqv product over the 32-aligned hull of a window equals its product over all cells.
 * --all adds the ops of src/quant and src/kern: ggml_get_rows of every weight type (the
 * embedding lookups), the activation conversions (ggml-cpu from_float to F16, BF16, Q8_0,
 * Q8_1, Q8_K) and one-row dot products (ggml-cpu vec_dot) against every kernel table here.
 * Output: "ok OP (N values)" or "FAIL OP: ..." per op, then "N passed, M failed".
 * Exit status: 0 all bitwise equal, 1 a mismatch, 2 the libraries could not be used.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "kern/kern.h"
#include "quant/quant_ref.h"

/* glibc before 2.34 keeps dlopen in libdl, which the Makefile's tools rule does not link:
 * weak references let the tool link anyway and say so at run time. */
#if defined(__linux__) && defined(__GNUC__)
#pragma weak dlopen
#pragma weak dlsym
#pragma weak dlerror
#endif

/* ==== ggml's API, declared locally (ggml.h of llama.cpp de3ff81) ==== */

enum { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_I32 = 26, GGML_ROPE_TYPE_NEOX = 2 };

struct g_init_params { /* struct ggml_init_params */
    size_t mem_size;
    void  *mem_buffer;
    bool   no_alloc;
};

typedef void gctx;   /* struct ggml_context */
typedef void gten;   /* struct ggml_tensor  */
typedef void ggraph; /* struct ggml_cgraph  */

struct g_traits_cpu { /* struct ggml_type_traits_cpu (ggml-cpu.h) */
    void (*from_float)(const float *, void *, int64_t);
    void (*vec_dot)(int, float *, size_t, const void *, size_t, const void *, size_t, int);
    int      vec_dot_type;
    int64_t  nrows;
};

typedef struct gapi {
    gctx  *(*init)(struct g_init_params);
    void   (*free_ctx)(gctx *);
    gten  *(*new_1d)(gctx *, int, int64_t);
    gten  *(*new_2d)(gctx *, int, int64_t, int64_t);
    gten  *(*new_3d)(gctx *, int, int64_t, int64_t, int64_t);
    void  *(*get_data)(const gten *);
    gten  *(*rms_norm)(gctx *, gten *, float);
    gten  *(*mul)(gctx *, gten *, gten *);
    gten  *(*scale)(gctx *, gten *, float);
    gten  *(*tanh_)(gctx *, gten *);
    gten  *(*gelu)(gctx *, gten *);
    gten  *(*soft_max_ext)(gctx *, gten *, gten *, float, float);
    gten  *(*rope_ext)(gctx *, gten *, gten *, gten *, int, int, int, float, float, float, float, float, float);
    ggraph *(*new_graph)(gctx *);
    void   (*expand)(ggraph *, gten *);
    int    (*compute)(gctx *, ggraph *, int);
    void   (*cpu_init)(void);
    gten  *(*get_rows)(gctx *, gten *, gten *);
    gten  *(*mul_mat)(gctx *, gten *, gten *);
    size_t (*quantize_chunk)(int, const float *, void *, int64_t, int64_t, int64_t, const float *);
    const struct g_traits_cpu *(*traits_cpu)(int);
} gapi;

static int sym(void *lib, const char *name, void *fp, size_t fp_size) {
    void *p = dlsym(lib, name);
    if (!p) { fprintf(stderr, "g4-ggml-ops: %s not found: %s\n", name, dlerror()); return 0; }
    memcpy(fp, &p, fp_size); /* object pointer -> function pointer without a cast ISO C lacks */
    return 1;
}
#define SYM(lib, name, field) sym(lib, name, &(field), sizeof(field))

static int load(gapi *g, const char *dir, const char *cpu) {
    char path[4096];
    snprintf(path, sizeof path, "%s/libggml-base.so", dir);
    void *base = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!base) { fprintf(stderr, "g4-ggml-ops: %s\n", dlerror()); return 0; }
    snprintf(path, sizeof path, "%s/%s", dir, cpu);
    void *lc = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!lc) { fprintf(stderr, "g4-ggml-ops: %s\n", dlerror()); return 0; }
    return SYM(base, "ggml_init", g->init) && SYM(base, "ggml_free", g->free_ctx) &&
           SYM(base, "ggml_new_tensor_1d", g->new_1d) && SYM(base, "ggml_new_tensor_2d", g->new_2d) &&
           SYM(base, "ggml_new_tensor_3d", g->new_3d) && SYM(base, "ggml_get_data", g->get_data) &&
           SYM(base, "ggml_rms_norm", g->rms_norm) && SYM(base, "ggml_mul", g->mul) &&
           SYM(base, "ggml_scale", g->scale) && SYM(base, "ggml_tanh", g->tanh_) &&
           SYM(base, "ggml_gelu", g->gelu) && SYM(base, "ggml_soft_max_ext", g->soft_max_ext) &&
           SYM(base, "ggml_rope_ext", g->rope_ext) && SYM(base, "ggml_new_graph", g->new_graph) &&
           SYM(base, "ggml_build_forward_expand", g->expand) &&
           SYM(lc, "ggml_graph_compute_with_ctx", g->compute) && SYM(lc, "ggml_cpu_init", g->cpu_init) &&
           SYM(base, "ggml_get_rows", g->get_rows) && SYM(base, "ggml_mul_mat", g->mul_mat) && SYM(base, "ggml_quantize_chunk", g->quantize_chunk) &&
           SYM(lc, "ggml_get_type_traits_cpu", g->traits_cpu);
}

static gctx *ctx_new(const gapi *g, size_t bytes) {
    struct g_init_params p = { bytes, NULL, false };
    return g->init(p);
}

static float *fdata(const gapi *g, const gten *t) { return (float *)g->get_data(t); }

/* runs the graph of `out` on 1 thread */
static int run(const gapi *g, gctx *c, gten *out) {
    ggraph *gr = g->new_graph(c);
    g->expand(gr, out);
    return g->compute(c, gr, 1) == 0;
}

/* ==== random inputs ==== */

typedef struct tally { int pass, fail; uint64_t rng; } tally; /* results and the input generator */

static uint32_t rnd_u32(tally *t) { /* xorshift64 */
    t->rng ^= t->rng << 13; t->rng ^= t->rng >> 7; t->rng ^= t->rng << 17;
    return (uint32_t)(t->rng >> 16);
}
static float rnd_uniform(tally *t) { return (float)((double)rnd_u32(t) / 4294967296.0); } /* [0, 1) */
static float rnd_normal(tally *t) { /* sum of 4 uniforms, centred: bell-shaped, var 1/3 */
    return (rnd_uniform(t) + rnd_uniform(t) + rnd_uniform(t) + rnd_uniform(t) - 2.0f) * 1.7320508f;
}

/* ==== comparison ==== */

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* counts bitwise differences of n values; reports the first */
static int64_t diff(const float *ref, const float *got, int64_t n, int64_t *first) {
    int64_t d = 0;
    *first = -1;
    for (int64_t i = 0; i < n; i++)
        if (!same_bits(ref[i], got[i])) { if (d++ == 0) *first = i; }
    return d;
}

static void report(tally *t, const char *op, const float *ref, const float *got, int64_t n) {
    int64_t first;
    const int64_t d = diff(ref, got, n, &first);
    if (d == 0) { printf("ok   %s (%lld values)\n", op, (long long)n); t->pass++; return; }
    printf("FAIL %s: %lld of %lld values differ (first [%lld]: ggml %.9g, g4 %.9g)\n", op, (long long)d,
           (long long)n, (long long)first, (double)ref[first], (double)got[first]);
    t->fail++;
}

/* ==== ops ==== */

static const float EPS = 1e-6f;

/* ggml_rms_norm, alone and followed by ggml_mul with a weight row (the CPU backend fuses the
 * pair), on rows of n */
static void t_rms_norm(const gapi *g, tally *t, int64_t n, int weighted) {
    const int64_t rows = 16;
    gctx *c = ctx_new(g, 64u << 20);
    gten *x = g->new_2d(c, GGML_TYPE_F32, n, rows), *w = g->new_1d(c, GGML_TYPE_F32, n);
    float *xd = fdata(g, x), *wd = fdata(g, w);
    for (int64_t r = 0; r < rows; r++) {
        const float mag = powf(10.0f, (float)(r % 8) - 3.0f); /* 1e-3 .. 1e4 */
        for (int64_t i = 0; i < n; i++) xd[r * n + i] = rnd_normal(t) * mag;
    }
    for (int64_t i = 0; i < n; i++) wd[i] = 1.0f + 0.5f * rnd_normal(t);
    gten *y = g->rms_norm(c, x, EPS);
    if (weighted) y = g->mul(c, y, w);
    float *got = malloc((size_t)(n * rows) * sizeof(float));
    if (run(g, c, y) && got) {
        for (int64_t r = 0; r < rows; r++) forward_rms_norm(got + r * n, xd + r * n, weighted ? wd : NULL, n, EPS);
        char name[64];
        snprintf(name, sizeof name, "rms_norm%s n=%lld", weighted ? "+mul" : "", (long long)n);
        report(t, name, fdata(g, y), got, n * rows);
    } else { printf("FAIL rms_norm: ggml compute failed\n"); t->fail++; }
    free(got);
    g->free_ctx(c);
}

/* ggml_rope_ext NEOX on [hd][n_head][n_pos], n_dims = hd, ext_factor 0, attn_factor 1, with
 * rope_freqs (full layers: proportional RoPE) or without (sliding layers) */
static void t_rope(const gapi *g, tally *t, int hd, float base, int with_ff) {
    static const int32_t P[] = { 0, 1, 2, 3, 7, 8, 15, 16, 31, 39, 40, 100, 255, 256, 511, 1000,
                                 4095, 8191, 32767, 131071 };
    const int np = (int)(sizeof P / sizeof P[0]), nh = 4;
    gctx *c = ctx_new(g, 64u << 20);
    gten *x = g->new_3d(c, GGML_TYPE_F32, hd, nh, np), *pos = g->new_1d(c, GGML_TYPE_I32, np);
    gten *ff = with_ff ? g->new_1d(c, GGML_TYPE_F32, hd / 2) : NULL;
    float *xd = fdata(g, x), *ffd = ff ? fdata(g, ff) : NULL;
    memcpy(g->get_data(pos), P, sizeof P);
    for (int64_t i = 0; i < (int64_t)hd * nh * np; i++) xd[i] = rnd_normal(t);
    /* Gemma 4's proportional RoPE: factor 1 on the rotated quarter, 1e30 (no rotation) on the
     * rest; a few other factors too */
    if (ffd) for (int i = 0; i < hd / 2; i++) ffd[i] = i < hd / 8 ? 1.0f : i < hd / 6 ? 1.0f + 3.0f * rnd_uniform(t) : 1e30f;
    gten *y = g->rope_ext(c, x, pos, ff, hd, GGML_ROPE_TYPE_NEOX, 0, base, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    const size_t nv = (size_t)hd * (size_t)nh * (size_t)np;
    float *got = malloc(nv * sizeof(float)), *cs = malloc((size_t)hd * sizeof(float));
    if (got && cs && run(g, c, y)) {
        memcpy(got, xd, nv * sizeof(float));
        for (int p = 0; p < np; p++) {
            attn_rope_cs(cs, P[p], ffd, base, hd);
            for (int h = 0; h < nh; h++) attn_rope_neox(got + ((size_t)p * (size_t)nh + (size_t)h) * (size_t)hd, cs, hd);
        }
        char name[64];
        snprintf(name, sizeof name, "rope_neox hd=%d base=%g%s", hd, (double)base, with_ff ? " rope_freqs" : "");
        report(t, name, fdata(g, y), got, (int64_t)nv);
    } else { printf("FAIL rope: ggml compute failed\n"); t->fail++; }
    free(got); free(cs);
    g->free_ctx(c);
}

/* the table the engine would run on this CPU (its expsum decides the softmax's sums) */
static const g4_kern *best_kern(void) { return kern_select(NULL, NULL, 0); }

/* ggml_soft_max_ext(kq, mask, 1.0, 0.0) on KQ rows of n_kv cells as llama.cpp builds them for
 * one sequence in a fresh cache (cell = position): query row r at position pos0 + r sees
 * cells [lo, p] (lo = p - n_swa + 1 on sliding layers, else 0), the mask is -inf elsewhere.
 * `spread` scales the scores (large values reach ggml_v_expf's |n| > 126 paths). */
static void t_softmax(const gapi *g, tally *t, int64_t n_kv, int n_tok, int64_t pos0, int n_swa, float spread) {
    const int nh = 3;
    gctx *c = ctx_new(g, 64u << 20);
    gten *kq = g->new_3d(c, GGML_TYPE_F32, n_kv, n_tok, nh), *mask = g->new_2d(c, GGML_TYPE_F32, n_kv, n_tok);
    float *kd = fdata(g, kq), *md = fdata(g, mask);
    for (int64_t i = 0; i < n_kv * n_tok * nh; i++) kd[i] = rnd_normal(t) * spread;
    for (int r = 0; r < n_tok; r++) {
        const int64_t p = pos0 + r, lo = n_swa > 0 && p - n_swa + 1 > 0 ? p - n_swa + 1 : 0;
        for (int64_t i = 0; i < n_kv; i++) md[r * n_kv + i] = i >= lo && i <= p ? 0.0f : -INFINITY;
    }
    gten *y = g->soft_max_ext(c, kq, mask, 1.0f, 0.0f);
    const size_t nv = (size_t)(n_kv * n_tok * nh);
    float *got = calloc(nv, sizeof(float));
    if (got && run(g, c, y)) {
        for (int h = 0; h < nh; h++)
            for (int r = 0; r < n_tok; r++) {
                const int64_t p = pos0 + r, lo = n_swa > 0 && p - n_swa + 1 > 0 ? p - n_swa + 1 : 0;
                float *row = got + ((size_t)h * (size_t)n_tok + (size_t)r) * (size_t)n_kv;
                const float *src = kd + ((size_t)h * (size_t)n_tok + (size_t)r) * (size_t)n_kv;
                memcpy(row + lo, src + lo, (size_t)(p - lo + 1) * sizeof(float));
                attn_softmax(best_kern(), row + lo, p - lo + 1, lo);
            }
        char name[96];
        snprintf(name, sizeof name, "soft_max_ext n_kv=%lld pos %lld..%lld swa=%d spread=%g", (long long)n_kv,
                 (long long)pos0, (long long)(pos0 + n_tok - 1), n_swa, (double)spread);
        report(t, name, fdata(g, y), got, (int64_t)nv);
    } else { printf("FAIL soft_max_ext: ggml compute failed\n"); t->fail++; }
    free(got);
    g->free_ctx(c);
}

/* ggml_v_expf alone: soft_max of one row [x, 0, 0, ...]-like inputs is too indirect, so the
 * lane function is checked through soft_max rows whose max is 0 (exp(x - 0) = exp(x)). */
static void t_expf(const gapi *g, tally *t) {
    const int64_t n_kv = 256, rows = 1024;
    gctx *c = ctx_new(g, 64u << 20);
    gten *kq = g->new_2d(c, GGML_TYPE_F32, n_kv, rows);
    float *kd = fdata(g, kq);
    for (int64_t r = 0; r < rows; r++) {
        kd[r * n_kv] = 0.0f;
        for (int64_t i = 1; i < n_kv; i++) kd[r * n_kv + i] = -rnd_uniform(t) * (r < rows / 2 ? 20.0f : 110.0f);
    }
    /* unnormalised exps are not observable; compare the normalised rows instead */
    gten *y = g->soft_max_ext(c, kq, NULL, 1.0f, 0.0f);
    float *got = malloc((size_t)(n_kv * rows) * sizeof(float));
    if (got && run(g, c, y)) {
        memcpy(got, kd, (size_t)(n_kv * rows) * sizeof(float));
        for (int64_t r = 0; r < rows; r++) attn_softmax(best_kern(), got + r * n_kv, n_kv, 0);
        report(t, "soft_max (exp down to -110, no mask)", fdata(g, y), got, n_kv * rows);
    } else { printf("FAIL soft_max: ggml compute failed\n"); t->fail++; }
    free(got);
    g->free_ctx(c);
}

/* kqv = mul_mat(v, kq) as llama.cpp runs it, over all n_kv cells with zero probabilities
 * outside the window, against the same ggml product over only attention's hull (attn_hull,
 * aligned to the kernel table's kern_attn_hull): ggml's lanes must make the two equal bit for bit, for n_col query columns of
 * one window (1: ggml_vec_dot_f32/f16, >= 2: tinyBLAS) and V in F32 or F16. This checks the
 * hull rule itself; whether kern's matmul reproduces ggml's product is oracle_kern's part. */
static void t_kqv_hull(const gapi *g, tally *t, int vtype, int n_col) {
    const int64_t n_kv = 512, hd = 64;
    static const int64_t W[][2] = { { 0, 0 }, { 0, 39 }, { 32, 39 }, { 33, 40 }, { 100, 131 }, { 200, 455 },
                                    { 31, 32 }, { 64, 511 }, { 480, 511 }, { 7, 300 } };
    int64_t bad = 0, total = 0;
    for (size_t wi = 0; wi < sizeof W / sizeof W[0]; wi++) {
        const int64_t lo = W[wi][0], p = W[wi][1];
        int64_t a, nw;
        attn_hull(lo, p, kern_attn_hull(best_kern()), &a, &nw);
        gctx *c = ctx_new(g, 64u << 20);
        gten *vf = g->new_2d(c, GGML_TYPE_F32, n_kv, hd), *vh = g->new_2d(c, GGML_TYPE_F32, nw, hd);
        gten *pf = g->new_2d(c, GGML_TYPE_F32, n_kv, n_col), *ph = g->new_2d(c, GGML_TYPE_F32, nw, n_col);
        float *vfd = fdata(g, vf), *vhd = fdata(g, vh), *pfd = fdata(g, pf), *phd = fdata(g, ph);
        for (int64_t i = 0; i < n_kv * hd; i++) vfd[i] = rnd_normal(t);
        for (int64_t j = 0; j < n_col; j++)
            for (int64_t i = 0; i < n_kv; i++) pfd[j * n_kv + i] = i >= lo && i <= p ? rnd_uniform(t) / (float)(p - lo + 1) : 0.0f;
        for (int64_t d = 0; d < hd; d++) memcpy(vhd + d * nw, vfd + d * n_kv + a, (size_t)nw * sizeof(float));
        for (int64_t j = 0; j < n_col; j++) memcpy(phd + j * nw, pfd + j * n_kv + a, (size_t)nw * sizeof(float));
        gten *yf, *yh;
        if (vtype == GGML_TYPE_F16) { /* the F16 cache: V rounded once, the same in both */
            gten *vf16 = g->new_2d(c, vtype, n_kv, hd), *vh16 = g->new_2d(c, vtype, nw, hd);
            uint16_t *a16 = g->get_data(vf16), *b16 = g->get_data(vh16);
            for (int64_t i = 0; i < n_kv * hd; i++) a16[i] = g4_f32_to_f16(vfd[i]);
            for (int64_t d = 0; d < hd; d++) memcpy(b16 + d * nw, a16 + d * n_kv + a, (size_t)nw * 2);
            yf = g->mul_mat(c, vf16, pf);
            yh = g->mul_mat(c, vh16, ph);
        } else {
            yf = g->mul_mat(c, vf, pf);
            yh = g->mul_mat(c, vh, ph);
        }
        if (run(g, c, yf) && run(g, c, yh)) {
            int64_t first;
            bad += diff(fdata(g, yf), fdata(g, yh), hd * n_col, &first);
            total += hd * n_col;
        } else bad++;
        g->free_ctx(c);
    }
    char name[64];
    snprintf(name, sizeof name, "kqv hull %s %d column%s", vtype == GGML_TYPE_F16 ? "f16" : "f32", n_col, n_col > 1 ? "s" : "");
    if (bad == 0) { printf("ok   %s (%lld values)\n", name, (long long)total); t->pass++; }
    else { printf("FAIL %s: %lld of %lld values differ\n", name, (long long)bad, (long long)total); t->fail++; }
}

/* ggml_gelu (fp16 table): every finite f16 value as input, then random floats */
static void t_gelu(const gapi *g, tally *t) {
    const int64_t n = 65536 + 65536;
    gctx *c = ctx_new(g, 64u << 20);
    gten *x = g->new_1d(c, GGML_TYPE_F32, n);
    float *xd = fdata(g, x);
    for (int64_t i = 0; i < 65536; i++) {
        const float f = g4_f16_to_f32((uint16_t)i);
        xd[i] = isfinite(f) ? f : 0.0f;
    }
    for (int64_t i = 65536; i < n; i++) xd[i] = rnd_normal(t) * 6.0f;
    gten *y = g->gelu(c, x);
    uint16_t *tab = malloc(65536 * sizeof(uint16_t));
    float *got = malloc((size_t)n * sizeof(float));
    if (tab && got && run(g, c, y)) {
        forward_gelu_table(tab);
        for (int64_t i = 0; i < n; i++) got[i] = forward_gelu(tab, xd[i]);
        report(t, "gelu (fp16 table)", fdata(g, y), got, n);
    } else { printf("FAIL gelu: ggml compute failed\n"); t->fail++; }
    free(tab); free(got);
    g->free_ctx(c);
}

/* the logit soft-cap: ggml_scale(1/c) -> ggml_tanh -> ggml_scale(c) */
static void t_softcap(const gapi *g, tally *t, float cap) {
    const int64_t n = 262144;
    gctx *c = ctx_new(g, 64u << 20);
    gten *x = g->new_1d(c, GGML_TYPE_F32, n);
    float *xd = fdata(g, x);
    for (int64_t i = 0; i < n; i++) xd[i] = rnd_normal(t) * (i % 2 ? 5.0f : 60.0f);
    gten *y = g->scale(c, g->tanh_(c, g->scale(c, x, 1.0f / cap)), cap);
    float *got = malloc((size_t)n * sizeof(float));
    if (got && run(g, c, y)) {
        memcpy(got, xd, (size_t)n * sizeof(float));
        forward_softcap(got, n, cap);
        char name[48];
        snprintf(name, sizeof name, "softcap c=%g", (double)cap);
        report(t, name, fdata(g, y), got, n);
    } else { printf("FAIL softcap: ggml compute failed\n"); t->fail++; }
    free(got);
    g->free_ctx(c);
}

/* ==== ops of the kernels and quantizers (src/kern, src/quant; --all) ==== */

static const uint32_t QTYPES[] = { G4_TYPE_F16, G4_TYPE_BF16, G4_TYPE_Q4_0, G4_TYPE_Q4_1, G4_TYPE_Q5_0,
                                   G4_TYPE_Q5_1, G4_TYPE_Q8_0, G4_TYPE_Q2_K, G4_TYPE_Q3_K, G4_TYPE_Q4_K,
                                   G4_TYPE_Q5_K, G4_TYPE_Q6_K, G4_TYPE_IQ4_NL, G4_TYPE_IQ4_XS };

/* ggml_get_rows of a quantized matrix (the embedding lookups) against quant_dequant_row */
static void t_get_rows(const gapi *g, tally *t, uint32_t type) {
    const int64_t n = 1536, rows = 8;
    gctx *c = ctx_new(g, 64u << 20);
    gten *w = g->new_2d(c, (int)type, n, rows), *idx = g->new_1d(c, GGML_TYPE_I32, rows);
    float *src = malloc((size_t)(n * rows) * sizeof(float)), *got = malloc((size_t)(n * rows) * sizeof(float));
    int32_t *id = g->get_data(idx);
    for (int64_t i = 0; i < n * rows; i++) src[i] = rnd_normal(t) * 0.05f;
    for (int64_t r = 0; r < rows; r++) id[r] = (int32_t)(rows - 1 - r);
    const size_t rb = quant_row_bytes(type, n);
    g->quantize_chunk((int)type, src, g->get_data(w), 0, rows, n, NULL);
    gten *y = g->get_rows(c, w, idx);
    if (src && got && run(g, c, y)) {
        for (int64_t r = 0; r < rows; r++)
            quant_dequant_row(type, (const uint8_t *)g->get_data(w) + (size_t)id[r] * rb, got + r * n, n);
        char name[64];
        snprintf(name, sizeof name, "get_rows %s", quant_traits(type)->name);
        report(t, name, fdata(g, y), got, n * rows);
    } else { printf("FAIL get_rows: ggml compute failed\n"); t->fail++; }
    free(src); free(got);
    g->free_ctx(c);
}

/* activation conversion to a dot type: ggml-cpu's from_float against kern quantize_act */
static void t_act(const gapi *g, tally *t, const g4_kern *k, uint32_t dt) {
    const int64_t n = 1536 * 2;
    const size_t rb = kern_act_row_bytes((int)dt, n);
    float *x = malloc((size_t)n * sizeof(float));
    uint8_t *a = calloc(1, rb), *b = calloc(1, rb);
    for (int64_t i = 0; i < n; i++) x[i] = rnd_normal(t) * (i < n / 2 ? 1.0f : 37.0f);
    g->traits_cpu((int)dt)->from_float(x, a, n);
    k->quantize_act[dt](x, b, n);
    size_t d = 0, first = 0;
    for (size_t i = 0; i < rb; i++) if (a[i] != b[i]) { if (d++ == 0) first = i; }
    if (d == 0) { printf("ok   act %s %s (%zu bytes)\n", quant_traits(dt)->name, k->name, rb); t->pass++; }
    else { printf("FAIL act %s %s: %zu of %zu bytes differ (first at %zu)\n", quant_traits(dt)->name, k->name, d, rb, first); t->fail++; }
    free(x); free(a); free(b);
}

/* one weight row . one activation row: ggml-cpu's vec_dot (on its own activation bytes)
 * against kern matmul with n_tok 1. llama.cpp's mul_mat may use other paths (tinyBLAS,
 * repacked weights) for the same product; this is the plain one. */
static void t_vec_dot(const gapi *g, tally *t, const g4_kern *k, uint32_t type) {
    const int64_t n = 1536, rows = 16;
    const struct g_traits_cpu *tr = g->traits_cpu((int)type);
    const uint32_t dt = quant_traits(type)->dot_type;
    if (!k->matmul[type] || !tr->vec_dot || (uint32_t)tr->vec_dot_type != dt) return;
    const size_t rb = quant_row_bytes(type, n), ab = kern_act_row_bytes((int)dt, n);
    float *src = malloc((size_t)(n * rows) * sizeof(float)), *x = malloc((size_t)n * sizeof(float));
    uint8_t *w = malloc(rb * (size_t)rows), *xa = calloc(1, ab), *xb = calloc(1, ab);
    float ref[16], got[16];
    for (int64_t i = 0; i < n * rows; i++) src[i] = rnd_normal(t) * 0.05f;
    for (int64_t i = 0; i < n; i++) x[i] = rnd_normal(t);
    g->quantize_chunk((int)type, src, w, 0, rows, n, NULL);
    g->traits_cpu((int)dt)->from_float(x, xa, n);
    k->quantize_act[dt](x, xb, n);
    for (int64_t r = 0; r < rows; r++) tr->vec_dot((int)n, &ref[r], 0, w + (size_t)r * rb, 0, xa, 0, 1);
    k->matmul[type](got, 1, w, rb, xb, ab, n, 0, rows, 1);
    char name[64];
    snprintf(name, sizeof name, "vec_dot %s %s", quant_traits(type)->name, k->name);
    report(t, name, ref, got, rows);
    free(src); free(x); free(w); free(xa); free(xb);
}

static void t_kern_all(const gapi *g, tally *t) {
    for (size_t i = 0; i < sizeof QTYPES / sizeof QTYPES[0]; i++) t_get_rows(g, t, QTYPES[i]);
    const g4_kern *ks[8];
    const int nk = kern_list(ks, 8);
    static const uint32_t DTS[] = { G4_TYPE_F16, G4_TYPE_BF16, G4_TYPE_Q8_0, G4_TYPE_Q8_1, G4_TYPE_Q8_K };
    for (int j = 0; j < nk; j++) {
        for (size_t i = 0; i < sizeof DTS / sizeof DTS[0]; i++)
            if (ks[j]->quantize_act[DTS[i]]) t_act(g, t, ks[j], DTS[i]);
        t_vec_dot(g, t, ks[j], G4_TYPE_F32);
        for (size_t i = 0; i < sizeof QTYPES / sizeof QTYPES[0]; i++) t_vec_dot(g, t, ks[j], QTYPES[i]);
    }
}

int main(int argc, char **argv) {
    int all = 0;
    if (argc > 1 && !strcmp(argv[1], "--all")) { all = 1; argc--; argv++; }
    if (argc < 2 || argc > 3 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: g4-ggml-ops [--all] LIBDIR [libggml-cpu-VARIANT.so]\n");
        return argc < 2 || argc > 3 ? 2 : 0;
    }
    if (!dlopen) { /* weak, see above */
        printf("g4-ggml-ops: skipped (no dlopen in this build)\n0 passed, 0 failed\n");
        return 0;
    }
    gapi g;
    if (!load(&g, argv[1], argc > 2 ? argv[2] : "libggml-cpu-haswell.so")) {
        printf("0 passed, 1 failed\n");
        return 2;
    }
    g.cpu_init();
    tally t = { 0, 0, 0x9E3779B97F4A7C15ull };

    static const int64_t widths[] = { 64, 128, 256, 512, 1536 };
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        t_rms_norm(&g, &t, widths[i], 0);
        t_rms_norm(&g, &t, widths[i], 1);
    }
    static const int hds[] = { 64, 128, 256, 512 };
    for (size_t i = 0; i < sizeof hds / sizeof hds[0]; i++) {
        t_rope(&g, &t, hds[i], 10000.0f, 0);
        t_rope(&g, &t, hds[i], 1000000.0f, 1);
    }
    t_expf(&g, &t);
    t_softmax(&g, &t, 256, 40, 0, 0, 1.0f);     /* a 40-token prompt, full layer */
    t_softmax(&g, &t, 256, 40, 0, 8, 1.0f);     /* ... sliding window 8 */
    t_softmax(&g, &t, 256, 16, 40, 8, 3.0f);    /* decode-like rows after the prompt */
    t_softmax(&g, &t, 512, 64, 300, 0, 10.0f);  /* n_kv 512 */
    t_softmax(&g, &t, 512, 64, 300, 128, 10.0f);
    t_softmax(&g, &t, 256, 40, 0, 0, 60.0f);    /* scores spread beyond exp's normal range */
    t_kqv_hull(&g, &t, GGML_TYPE_F32, 1);
    t_kqv_hull(&g, &t, GGML_TYPE_F32, 2);
    t_kqv_hull(&g, &t, GGML_TYPE_F16, 1);
    t_kqv_hull(&g, &t, GGML_TYPE_F16, 3);
    t_gelu(&g, &t);
    t_softcap(&g, &t, 30.0f);
    t_softcap(&g, &t, 15.0f);
    if (all) t_kern_all(&g, &t);

    printf("%d passed, %d failed\n", t.pass, t.fail);
    return t.fail ? 1 : 0;
}
