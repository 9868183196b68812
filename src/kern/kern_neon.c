/* kern_neon.c - the aarch64 NEON + dotprod + fp16 kernel table (aarch64 builds; chosen at run
 * time when getauxval reports asimd, asimddp and asimdhp): llama.cpp's choice of kernel per
 * op (neon_pick), the activation quantizers and GeGLU (shared with the i8mm table,
 * kern_i8mm.c, which changes four of neon_pick's choices). The matmul kernels live in
 * kern_neon_b32.c, kern_neon_k.c and kern_neon_f.c; every kern_neon*.c file is built with
 * -march=armv8.2-a+dotprod+fp16 and nothing else is.
 *
 * The table follows llama.cpp's armv8.2_2 CPU library (dotprod + fp16: what a Cortex-A76 /
 * Raspberry Pi 5 loads) bit for bit: per op it picks the kernel that library would run
 * (repack.cpp ggml_repack_get_optimal_repack_type, ggml-cpu.c mul_mat's llamafile_sgemm
 * attempts, sgemm.cpp's size conditions), and each kernel repeats that kernel's float order
 * (kern_neon.h). Activation quantizers: Q8_0/Q8_1 as arch/arm/quants.c (d = amax/127,
 * id = 1/d, round half to even: act_q8_inv), Q8_K as the reference; bit-exact with
 * quant_ref.c's arm64 convention (tests/test_kern.c under qemu, tests/sh/neon.sh) and with
 * the library (tests/sh/oracle_kern_neon.sh).
 */
#include "kern_neon.h"

/* ==== llama.cpp's kernel choice (armv8.2_2: dotprod, fp16 vector arithmetic) ==== */

/* Repacked (CPU_REPACK buffer, weights it can repack: n_out % 4 for q4_0/q8_0/iq4_nl 4x4,
 * % 8 for q4_K/q5_K/q6_K 8x4; never the KV cache): the repack's
 * gemm for the columns below N - N % 4, gemv for the rest, which have the same float order
 * except for q6_K. Otherwise mul_mat: llamafile_sgemm when N >= 2 and it takes the type and
 * shape (tinyBLAS_Q0_ARM for q8_0/q4_0; f32 with N >= 4, n_in % 4, n_out % 4; fp16 with
 * N >= 8, n_in % 8, n_out % 4), else vec_dot. */
g4_matmul_fn neon_pick(const g4_kern *k, uint32_t type, int64_t N, int64_t col, int64_t n_in,
                              int64_t n_out, unsigned flags) {
    const int rp = !(flags & KERN_PLAIN);
    switch (type) {
    case G4_TYPE_F32: return N >= 4 && n_in % 4 == 0 && n_out % 4 == 0 ? neon_f32_tb : neon_f32_vd;
    case G4_TYPE_F16: return N >= 8 && n_in % 8 == 0 && n_out % 4 == 0 ? neon_f16_tb : neon_f16_vd;
    case G4_TYPE_Q4_0: return rp && n_out % 4 == 0 ? neon_q4_0_rp : N >= 2 ? neon_q4_0_tb : neon_q4_0_vd;
    case G4_TYPE_Q8_0: return rp && n_out % 4 == 0 ? neon_q8_0_rp : N >= 2 ? neon_q8_0_tb : neon_q8_0_vd;
    case G4_TYPE_IQ4_NL: return rp && n_out % 4 == 0 ? neon_iq4_nl_rp : neon_iq4_nl_vd;
    case G4_TYPE_Q4_K: return rp && n_out % 8 == 0 ? neon_q4_K_rp : neon_q4_K_vd;
    case G4_TYPE_Q5_K: return rp && n_out % 8 == 0 ? neon_q5_K_rp : neon_q5_K_vd;
    case G4_TYPE_Q6_K: return rp && n_out % 8 == 0 ? (col < N - N % 4 ? neon_q6_K_rpm : neon_q6_K_rpv) : neon_q6_K_vd;
    default: return k->matmul[type];
    }
}

/* ==== Activation quantizers ==== */

void neon_act_f32(const float *restrict x, void *restrict y, int64_t n) { memcpy(y, x, (size_t)n * 4); }

void neon_act_f16(const float *restrict x, void *restrict y, int64_t n) {
    uint8_t *o = y;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16((uint16_t *)(void *)(o + 2 * i), vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < n; i++) { const uint16_t h = g4_f32_to_f16(x[i]); memcpy(o + 2 * i, &h, 2); }
}

void neon_act_bf16(const float *restrict x, void *restrict y, int64_t n) {
    uint8_t *o = y;
    for (int64_t i = 0; i < n; i++) { const uint16_t b = g4_f32_to_bf16(x[i]); memcpy(o + 2 * i, &b, 2); }
}

/* quantize_row_q8_0 / q8_1 of arch/arm/quants.c */
NINLINE void act_q8(const float *restrict x, uint8_t *restrict y, int64_t n, const int q81) {
    const size_t bytes = q81 ? 36 : 34, off = q81 ? 4 : 2;
    for (int64_t i = 0; i < n / 32; i++, x += 32, y += bytes) {
        float32x4_t v[8];
        float32x4_t mx = vdupq_n_f32(0);
        for (int k = 0; k < 8; k++) { v[k] = vld1q_f32(x + 4 * k); mx = vmaxq_f32(mx, vabsq_f32(v[k])); }
        const float d = vmaxvq_f32(mx) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = g4_f32_to_f16(d);
        memcpy(y, &dh, 2);
        int32x4_t sum = vdupq_n_s32(0);
        int8_t *qs = (int8_t *)(void *)(y + off);
        for (int k = 0; k < 8; k += 2) {
            const int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(v[k], id)), b = vcvtnq_s32_f32(vmulq_n_f32(v[k + 1], id));
            sum = vaddq_s32(sum, vaddq_s32(a, b));
            vst1_s8(qs + 4 * k, vmovn_s16(vcombine_s16(vmovn_s32(a), vmovn_s32(b)))); /* int32 -> int8 as ggml's stores */
        }
        if (q81) {
            const uint16_t sh = g4_f32_to_f16(d * (float)vaddvq_s32(sum));
            memcpy(y + 2, &sh, 2);
        }
    }
}
void neon_act_q8_0(const float *restrict x, void *restrict y, int64_t n) { act_q8(x, y, n, 0); }
void neon_act_q8_1(const float *restrict x, void *restrict y, int64_t n) { act_q8(x, y, n, 1); }
void neon_act_q8_K(const float *restrict x, void *restrict y, int64_t n) { quant_act_q8_K(x, y, n); }

/* ==== GeGLU (kern.h): f16 rounding 4 lanes at a time, the table lookup per element ==== */

void neon_geglu(float *restrict gate, const float *restrict up, const uint16_t *restrict tab, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t x = vld1q_f32(gate + i);
        uint16_t h[4];
        vst1_u16(h, vreinterpret_u16_f16(vcvt_f16_f32(x)));
        float g[4];
        vst1q_f32(g, x);
        for (int k = 0; k < 4; k++)
            gate[i + k] = g[k] <= -10.0f ? 0.0f : (g[k] >= 10.0f ? g[k] : nh2f((const uint8_t *)(const void *)(tab + h[k]))) * up[i + k];
    }
    kern_geglu_ref(gate + i, up + i, tab, n - i);
}

/* ==== Softmax exponentials (kern.h expsum): vec.h ggml_v_expf (NEON), op for op ==== */

NINLINE float32x4_t v_expf(float32x4_t x) {
    const float32x4_t r = vdupq_n_f32(0x1.8p23f);
    const float32x4_t z = vfmaq_f32(r, x, vdupq_n_f32(0x1.715476p+0f));
    const float32x4_t n = vsubq_f32(z, r);
    const float32x4_t b = vfmsq_f32(vfmsq_f32(x, n, vdupq_n_f32(0x1.62e4p-1f)), n, vdupq_n_f32(0x1.7f7d1cp-20f));
    const uint32x4_t e = vshlq_n_u32(vreinterpretq_u32_f32(z), 23);
    const float32x4_t k = vreinterpretq_f32_u32(vaddq_u32(e, vreinterpretq_u32_f32(vdupq_n_f32(1))));
    const uint32x4_t c = vcagtq_f32(n, vdupq_n_f32(126));
    const float32x4_t u = vmulq_f32(b, b);
    const float32x4_t j = vfmaq_f32(vmulq_f32(vdupq_n_f32(0x1.ffffecp-1f), b),
                                    vfmaq_f32(vfmaq_f32(vdupq_n_f32(0x1.fffdb6p-2f), vdupq_n_f32(0x1.555e66p-3f), b),
                                              vfmaq_f32(vdupq_n_f32(0x1.573e2ep-5f), vdupq_n_f32(0x1.0e4020p-7f), b), u),
                                    u);
    if (!vmaxvq_u32(c)) return vfmaq_f32(k, j, k);
    const uint32x4_t d = vandq_u32(vclezq_f32(n), vdupq_n_u32(0x82000000u));
    const float32x4_t s1 = vreinterpretq_f32_u32(vaddq_u32(d, vdupq_n_u32(0x7f000000u)));
    const float32x4_t s2 = vreinterpretq_f32_u32(vsubq_u32(e, d));
    return vbslq_f32(vcagtq_f32(n, vdupq_n_f32(192)), vmulq_f32(s1, s1),
                     vbslq_f32(c, vmulq_f32(vfmaq_f32(s2, s2, j), s1), vfmaq_f32(k, k, j)));
}

/* the pairwise tree of w (a power of two >= 4) values: svaddv's order, vaddvq's for w = 4 */
static float tree_sum(const float *c, int w) {
    return w == 4 ? (c[0] + c[1]) + (c[2] + c[3]) : tree_sum(c, w / 2) + tree_sum(c + w / 2, w / 2);
}

/* ggml_vec_soft_max_f32 (NEON: w = 4; SVE: w = svcntw()): blocks of w cells aligned on the
 * row, each summed as a pairwise tree ((c0+c1)+(c2+c3) for 4) and added to a double; a block's
 * masked cells enter as -inf (exp +0), as in the row. ggml_v_expf's NEON and SVE forms agree
 * lane for lane. */
double neon_expsum_w(float *x, int64_t n, int64_t cell0, int w) {
    double sum = 0.0;
    for (int64_t i = -(cell0 % w); i < n; i += w) {
        float c[64]; /* w <= 64: SVE's 2048 bits */
        const int whole = i >= 0 && i + w <= n;
        float *b = whole ? x + i : c;
        if (!whole)
            for (int k = 0; k < w; k++) c[k] = i + k >= 0 && i + k < n ? x[i + k] : -INFINITY;
        for (int k = 0; k < w; k += 4) vst1q_f32(b + k, v_expf(vld1q_f32(b + k)));
        if (!whole)
            for (int k = 0; k < w; k++) if (i + k >= 0 && i + k < n) x[i + k] = c[k];
        sum += (double)tree_sum(b, w);
    }
    return sum;
}

double neon_expsum(float *x, int64_t n, int64_t cell0) { return neon_expsum_w(x, n, cell0, 4); }

/* ==== Table ==== */

static const g4_kern TABLE = {
    .name = "neon",
    .geglu = neon_geglu,
    .pick = neon_pick,
    .expsum = neon_expsum,
    .softcap = neon_softcap,
    .softcap_ref = kern_softcap_fdf,
    .vec_w = 4,
    .act_q8_inv = 1,
    .f16_lanes = 1,
    /* one column of a weight llama.cpp does not repack: vec_dot */
    .matmul = NEON_MATMUL_VD(neon_f32_vd, neon_f16_vd, neon_q4_0_vd, neon_q8_0_vd, neon_q2_K_vd),
    .quantize_act = NEON_QUANT_ACT,
};

const g4_kern *kern_table_neon(void) { return &TABLE; }
