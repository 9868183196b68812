/* kern_neon.c - aarch64 NEON + dotprod + fp16 kernel table (aarch64 builds; chosen at run
 * time when getauxval reports asimd, asimddp and asimdhp). The only file built with
 * -march=armv8.2-a+dotprod+fp16.
 *
 * Contract (kern.h): W is [n_out][w_row_bytes] in GGUF block layout (unaligned loads only),
 * xq is [n_tok][xq_row_bytes] in the weight type's dot type, y[t*ldy + r] for r in
 * [row0, row1), t < n_tok. One weight row at a time, dotted with each token while the row is
 * in L1 (the row streams from DRAM once per chunk).
 * Accumulation: sdot (s8 x s8 -> s32) gives exact block sums (codes re-centred to signed:
 * Q4_0 q-8, Q4_K q (0..15), Q5_K q (0..31), Q6_K q-32); sub-block scales applied in int32;
 * block scaling and accumulation in f32 lanes. Expected NMSE vs the scalar table <= 1e-6.
 * Activation quantizers: the x86 convention for Q8_0/Q8_1 (id = 127/amax, round half to
 * even via vcvtnq), so every ISA quantizes activations identically; bit-exact with
 * quant_ref.c (checked by tests/test_kern.c under qemu-aarch64, tests/sh/neon.sh).
 */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kern_isa.h"
#include "quant/quant_ref.h"

/* ==== Helpers ==== */

static inline float h2f(const uint8_t *p) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(quant_rd16(p)))), 0);
}
static inline float rdf(const uint8_t *p) { float f; memcpy(&f, p, 4); return f; }
static inline int16_t rdi16(const uint8_t *p) { return (int16_t)quant_rd16(p); }

/* ==== Dot products: one weight row x one token ==== */

static float dot_f32(const uint8_t *restrict w, const uint8_t *restrict x, int64_t n) {
    const float *a = (const float *)(const void *)w, *b = (const float *)(const void *)x;
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    }
    double s = (double)vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; i++) s += (double)a[i] * (double)b[i];
    return (float)s;
}

static float dot_f16(const uint8_t *restrict w, const uint8_t *restrict x, int64_t n) {
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const float16x8_t a = vreinterpretq_f16_u8(vld1q_u8(w + 2 * i)), b = vreinterpretq_f16_u8(vld1q_u8(x + 2 * i));
        s0 = vfmaq_f32(s0, vcvt_f32_f16(vget_low_f16(a)), vcvt_f32_f16(vget_low_f16(b)));
        s1 = vfmaq_f32(s1, vcvt_high_f32_f16(a), vcvt_high_f32_f16(b));
    }
    double s = (double)vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; i++) s += (double)(h2f(w + 2 * i) * h2f(x + 2 * i));
    return (float)s;
}

static float dot_bf16(const uint8_t *restrict w, const uint8_t *restrict x, int64_t n) {
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint16x8_t a = vreinterpretq_u16_u8(vld1q_u8(w + 2 * i)), b = vreinterpretq_u16_u8(vld1q_u8(x + 2 * i));
        s0 = vfmaq_f32(s0, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(a), 16)),
                       vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(b), 16)));
        s1 = vfmaq_f32(s1, vreinterpretq_f32_u32(vshll_high_n_u16(a, 16)),
                       vreinterpretq_f32_u32(vshll_high_n_u16(b, 16)));
    }
    double s = (double)vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; i++) s += (double)(g4_bf16_to_f32(quant_rd16(w + 2 * i)) * g4_bf16_to_f32(quant_rd16(x + 2 * i)));
    return (float)s;
}

static float dot_q8_0(const uint8_t *restrict w, const uint8_t *restrict a, int64_t n) {
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / 32; i++, w += 34, a += 34) {
        int32x4_t s = vdotq_s32(vdupq_n_s32(0), vld1q_s8((const int8_t *)(const void *)(w + 2)),
                                vld1q_s8((const int8_t *)(const void *)(a + 2)));
        s = vdotq_s32(s, vld1q_s8((const int8_t *)(const void *)(w + 18)), vld1q_s8((const int8_t *)(const void *)(a + 18)));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), h2f(w) * h2f(a));
    }
    return vaddvq_f32(acc);
}

static float dot_q4_0(const uint8_t *restrict w, const uint8_t *restrict a, int64_t n) {
    float32x4_t acc = vdupq_n_f32(0);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    const int8x16_t e8 = vdupq_n_s8(8);
    for (int64_t i = 0; i < n / 32; i++, w += 18, a += 34) {
        const uint8x16_t q = vld1q_u8(w + 2);
        const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), e8);
        const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), e8);
        int32x4_t s = vdotq_s32(vdupq_n_s32(0), lo, vld1q_s8((const int8_t *)(const void *)(a + 2)));
        s = vdotq_s32(s, hi, vld1q_s8((const int8_t *)(const void *)(a + 18)));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), h2f(w) * h2f(a));
    }
    return vaddvq_f32(acc);
}

/* Q4_K (q5 = 0) / Q5_K (q5 = 1) x Q8_K */
static inline float dot_q45_K(const uint8_t *restrict w, const uint8_t *restrict a, int64_t n, const int q5) {
    const size_t wb = q5 ? 176 : 144;
    const uint8x16_t m4 = vdupq_n_u8(0x0f), one = vdupq_n_u8(1);
    float sum = 0;
    for (int64_t i = 0; i < n / 256; i++, w += wb, a += 292) {
        const uint8_t *qs = w + (q5 ? 48 : 16);
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        uint8x16_t h0 = vdupq_n_u8(0), h1 = h0;
        if (q5) { h0 = vld1q_u8(w + 16); h1 = vld1q_u8(w + 32); }
        int32_t isum = 0, msum = 0;
        for (int k = 0; k < 4; k++) {
            const uint8x16_t q0 = vld1q_u8(qs + 32 * k), q1 = vld1q_u8(qs + 32 * k + 16);
            uint8x16_t l0 = vandq_u8(q0, m4), l1 = vandq_u8(q1, m4);
            uint8x16_t u0 = vshrq_n_u8(q0, 4), u1 = vshrq_n_u8(q1, 4);
            if (q5) {
                l0 = vorrq_u8(l0, vshlq_n_u8(vandq_u8(h0, one), 4));
                l1 = vorrq_u8(l1, vshlq_n_u8(vandq_u8(h1, one), 4));
                u0 = vorrq_u8(u0, vshlq_n_u8(vandq_u8(vshrq_n_u8(h0, 1), one), 4));
                u1 = vorrq_u8(u1, vshlq_n_u8(vandq_u8(vshrq_n_u8(h1, 1), one), 4));
                h0 = vshrq_n_u8(h0, 2);
                h1 = vshrq_n_u8(h1, 2);
            }
            int32x4_t sl = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(l0), vld1q_s8(qa + 64 * k));
            sl = vdotq_s32(sl, vreinterpretq_s8_u8(l1), vld1q_s8(qa + 64 * k + 16));
            int32x4_t sh = vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(u0), vld1q_s8(qa + 64 * k + 32));
            sh = vdotq_s32(sh, vreinterpretq_s8_u8(u1), vld1q_s8(qa + 64 * k + 48));
            uint8_t sc, m;
            quant_scale_min_k4(2 * k, w + 4, &sc, &m);
            isum += sc * vaddvq_s32(sl);
            msum += m * (rdi16(a + 260 + 8 * k) + rdi16(a + 262 + 8 * k));
            quant_scale_min_k4(2 * k + 1, w + 4, &sc, &m);
            isum += sc * vaddvq_s32(sh);
            msum += m * (rdi16(a + 264 + 8 * k) + rdi16(a + 266 + 8 * k));
        }
        const float da = rdf(a);
        sum += da * h2f(w) * (float)isum - da * h2f(w + 2) * (float)msum;
    }
    return sum;
}
static float dot_q4_K(const uint8_t *restrict w, const uint8_t *restrict a, int64_t n) { return dot_q45_K(w, a, n, 0); }
static float dot_q5_K(const uint8_t *restrict w, const uint8_t *restrict a, int64_t n) { return dot_q45_K(w, a, n, 1); }

static float dot_q6_K(const uint8_t *restrict w, const uint8_t *restrict a, int64_t n) {
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m2 = vdupq_n_u8(0x03);
    const int8x16_t c32 = vdupq_n_s8(32);
    float sum = 0;
    for (int64_t i = 0; i < n / 256; i++, w += 210, a += 292) {
        const int8_t *sc = (const int8_t *)(const void *)(w + 192);
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        int32_t isum = 0;
        for (int c = 0; c < 2; c++) {
            for (int half = 0; half < 2; half++) { /* 16 of the 32 bytes per load */
                const int o = 16 * half;
                const uint8x16_t l0 = vld1q_u8(w + 64 * c + o), l1 = vld1q_u8(w + 64 * c + 32 + o);
                const uint8x16_t h = vld1q_u8(w + 128 + 32 * c + o);
                uint8x16_t q[4];
                q[0] = vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(h, m2), 4));
                q[1] = vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m2), 4));
                q[2] = vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m2), 4));
                q[3] = vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4));
                for (int t = 0; t < 4; t++) {
                    /* elements 128c + 32t + o .. +16: group 8c + 2t + half */
                    const int e = 128 * c + 32 * t + o;
                    const int32x4_t s = vdotq_s32(vdupq_n_s32(0), vsubq_s8(vreinterpretq_s8_u8(q[t]), c32), vld1q_s8(qa + e));
                    isum += sc[e / 16] * vaddvq_s32(s);
                }
            }
        }
        sum += rdf(a) * h2f(w + 208) * (float)isum;
    }
    return sum;
}

/* ==== Matmul drivers ==== */

#define DEF_MM(tname)                                                                                \
    static void mm_##tname(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, \
                           const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0,    \
                           int64_t row1, int n_tok) {                                                   \
        const uint8_t *x = xq;                                                                         \
        for (int64_t r = row0; r < row1; r++) {                                                        \
            const uint8_t *wr = w + (size_t)r * w_row_bytes;                                           \
            for (int t = 0; t < n_tok; t++)                                                            \
                y[(size_t)t * ldy + (size_t)r] = dot_##tname(wr, x + (size_t)t * xq_row_bytes, n_in);  \
        }                                                                                              \
    }
DEF_MM(f32)
DEF_MM(f16)
DEF_MM(bf16)
DEF_MM(q8_0)
DEF_MM(q4_0)
DEF_MM(q4_K)
DEF_MM(q5_K)
DEF_MM(q6_K)

/* ==== Activation quantizers (bit-exact with quant_ref.c) ==== */

static void act_f32(const float *restrict x, void *restrict y, int64_t n) { memcpy(y, x, (size_t)n * 4); }

static void act_f16(const float *restrict x, void *restrict y, int64_t n) {
    uint8_t *o = y;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16((uint16_t *)(void *)(o + 2 * i), vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < n; i++) { const uint16_t h = g4_f32_to_f16(x[i]); memcpy(o + 2 * i, &h, 2); }
}

static void act_bf16(const float *restrict x, void *restrict y, int64_t n) {
    uint8_t *o = y;
    for (int64_t i = 0; i < n; i++) { const uint16_t b = g4_f32_to_bf16(x[i]); memcpy(o + 2 * i, &b, 2); }
}

static inline void act_q8(const float *restrict x, uint8_t *restrict y, int64_t n, const int q81) {
    const size_t bytes = q81 ? 36 : 34, off = q81 ? 4 : 2;
    for (int64_t i = 0; i < n / 32; i++, x += 32, y += bytes) {
        float32x4_t v[8];
        float32x4_t mx = vdupq_n_f32(0);
        for (int k = 0; k < 8; k++) { v[k] = vld1q_f32(x + 4 * k); mx = vmaxq_f32(mx, vabsq_f32(v[k])); }
        const float amax = vmaxvq_f32(mx);
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        const uint16_t dh = g4_f32_to_f16(d);
        memcpy(y, &dh, 2);
        int32x4_t sum = vdupq_n_s32(0);
        int8_t *qs = (int8_t *)(void *)(y + off);
        for (int k = 0; k < 8; k += 2) {
            const int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(v[k], id)), b = vcvtnq_s32_f32(vmulq_n_f32(v[k + 1], id));
            sum = vaddq_s32(sum, vaddq_s32(a, b));
            const int16x8_t p = vcombine_s16(vqmovn_s32(a), vqmovn_s32(b));
            vst1_s8(qs + 4 * k, vqmovn_s16(p));
        }
        if (q81) {
            const uint16_t sh = g4_f32_to_f16(d * (float)vaddvq_s32(sum));
            memcpy(y + 2, &sh, 2);
        }
    }
}
static void act_q8_0(const float *restrict x, void *restrict y, int64_t n) { act_q8(x, y, n, 0); }
static void act_q8_1(const float *restrict x, void *restrict y, int64_t n) { act_q8(x, y, n, 1); }
static void act_q8_K(const float *restrict x, void *restrict y, int64_t n) { quant_act_q8_K(x, y, n); }

/* ==== Table ==== */

static const g4_kern TABLE = {
    .name = "neon",
    .geglu = kern_geglu_ref,
    .matmul = {
        /* not accelerated here: the reference entries */
        [G4_TYPE_Q4_1] = kern_ref_mm_q4_1, [G4_TYPE_Q5_1] = kern_ref_mm_q5_1,
        [G4_TYPE_Q5_0] = kern_ref_mm_q5_0, [G4_TYPE_IQ4_NL] = kern_ref_mm_iq4_nl,
        [G4_TYPE_Q2_K] = kern_ref_mm_q2_K, [G4_TYPE_Q3_K] = kern_ref_mm_q3_K,
        [G4_TYPE_IQ4_XS] = kern_ref_mm_iq4_xs,
        [G4_TYPE_F32] = mm_f32, [G4_TYPE_F16] = mm_f16, [G4_TYPE_BF16] = mm_bf16,
        [G4_TYPE_Q8_0] = mm_q8_0, [G4_TYPE_Q4_0] = mm_q4_0, [G4_TYPE_Q4_K] = mm_q4_K,
        [G4_TYPE_Q5_K] = mm_q5_K, [G4_TYPE_Q6_K] = mm_q6_K,
    },
    .quantize_act = {
        [G4_TYPE_F32] = act_f32, [G4_TYPE_F16] = act_f16, [G4_TYPE_BF16] = act_bf16,
        [G4_TYPE_Q8_0] = act_q8_0, [G4_TYPE_Q8_1] = act_q8_1, [G4_TYPE_Q8_K] = act_q8_K,
    },
};

const g4_kern *kern_table_neon(void) { return &TABLE; }
