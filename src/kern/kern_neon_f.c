/* kern_neon_f.c - aarch64 NEON kernels for float weights (F32, F16, BF16 x the same type) in
 * each float order llama.cpp's armv8.2_2 build uses (kern_neon.h: _vd vec_dot, _tb tinyBLAS).
 *
 * That build has fp16 vector arithmetic, and ggml uses it: its F16 products accumulate in
 * fp16 lanes (vfmaq_f16, one rounding to fp16 per step), so do these.
 *   F32 vd   4 f32x4 accumulators over 16-element steps, reduced (a0 + a2) + (a1 + a3), vaddv
 *            into a float; then the n % 16 tail as compiled (vec.cpp's scalar loop, which
 *            the library's compiler vectorized): with 8 or more left, 8 products rounded and
 *            added in order; the rest fused into the sum one by one
 *   F32 tb   one f32x4 accumulator over 4-element steps, vaddv (tinyBLAS<4>, picked for
 *            n % 4 == 0 only; a tail is fused after the sum so any n is safe)
 *   F16 vd   4 fp16x8 accumulators over 32-element steps, reduced in fp16 as above, the two
 *            halves widened and added in f32, vaddv into a double; the tail as f32 products
 *            added to that double; rounded to float at the end
 *   F16 tb   one fp16x8 accumulator over 8-element steps, halves widened and added, vaddv
 *            (tinyBLAS<8, float16x8_t>, picked for n % 8 == 0; any tail as F16 vd's)
 *   BF16 vd  f32 products (exact) added to a double one by one (ggml's scalar loop: the
 *            armv8.2 build has no BF16 dot instructions)
 * Activations are rows of the weight's own type (F32, F16, BF16).
 */
#include "kern_neon.h"

NINLINE float32x4_t ldf(const uint8_t *p, int64_t i) { return vld1q_f32((const float *)(const void *)p + i); }
NINLINE float16x8_t ldh(const uint8_t *p, int64_t i) { return vreinterpretq_f16_u8(vld1q_u8(p + 2 * i)); }

NINLINE void f32_vd(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    const int64_t np = n & ~(int64_t)15;
    float32x4_t s[NT][4];
    NUNROLL for (int t = 0; t < NT; t++) NUNROLL for (int j = 0; j < 4; j++) s[t][j] = vdupq_n_f32(0);
    for (int64_t i = 0; i < np; i += 16)
        NUNROLL for (int j = 0; j < 4; j++) {
            const float32x4_t a = ldf(w, i + 4 * j);
            NUNROLL for (int t = 0; t < nt; t++) s[t][j] = vfmaq_f32(s[t][j], a, ldf(x + (size_t)t * xrb, i + 4 * j));
        }
    NUNROLL for (int t = 0; t < nt; t++) {
        const float32x4_t r = vaddq_f32(vaddq_f32(s[t][0], s[t][2]), vaddq_f32(s[t][1], s[t][3]));
        float sumf = nhsum(r);
        const float *a = (const float *)(const void *)w, *b = (const float *)(const void *)(x + (size_t)t * xrb);
        int64_t i = np;
        if (n - np >= 8) /* the library's compiler vectorized this loop: 8 products, added in order */
            for (const int64_t e = np + 8; i < e; i++) {
                const float p = a[i] * b[i]; /* its own statement: never contracted */
                sumf += p;
            }
        for (; i < n; i++) sumf = fmaf(a[i], b[i], sumf);
        out[t] = sumf;
    }
}

NINLINE void f32_tb(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    float32x4_t s[NT];
    NUNROLL for (int t = 0; t < NT; t++) s[t] = vdupq_n_f32(0);
    const int64_t np = n & ~(int64_t)3;
    for (int64_t i = 0; i < np; i += 4) {
        const float32x4_t a = ldf(w, i);
        NUNROLL for (int t = 0; t < nt; t++) s[t] = vfmaq_f32(s[t], ldf(x + (size_t)t * xrb, i), a);
    }
    NUNROLL for (int t = 0; t < nt; t++) {
        float sumf = nhsum(s[t]);
        const float *a = (const float *)(const void *)w, *b = (const float *)(const void *)(x + (size_t)t * xrb);
        for (int64_t i = np; i < n; i++) sumf = fmaf(a[i], b[i], sumf); /* never picked (n % 4 != 0) */
        out[t] = sumf;
    }
}

NINLINE float hsum_f16(float16x8_t v) { return vaddvq_f32(vaddq_f32(vcvt_f32_f16(vget_low_f16(v)), vcvt_high_f32_f16(v))); }

NINLINE void f16_vd(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    const int64_t np = n & ~(int64_t)31;
    float16x8_t s[NT][4];
    NUNROLL for (int t = 0; t < NT; t++) NUNROLL for (int j = 0; j < 4; j++) s[t][j] = vdupq_n_f16(0);
    for (int64_t i = 0; i < np; i += 32)
        NUNROLL for (int j = 0; j < 4; j++) {
            const float16x8_t a = ldh(w, i + 8 * j);
            NUNROLL for (int t = 0; t < nt; t++) s[t][j] = vfmaq_f16(s[t][j], a, ldh(x + (size_t)t * xrb, i + 8 * j));
        }
    NUNROLL for (int t = 0; t < nt; t++) {
        const float16x8_t r = vaddq_f16(vaddq_f16(s[t][0], s[t][2]), vaddq_f16(s[t][1], s[t][3]));
        double sumf = (double)hsum_f16(r);
        const uint8_t *b = x + (size_t)t * xrb;
        for (int64_t i = np; i < n; i++) sumf += (double)(nh2f(w + 2 * i) * nh2f(b + 2 * i));
        out[t] = (float)sumf;
    }
}

NINLINE void f16_tb(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    float16x8_t s[NT];
    NUNROLL for (int t = 0; t < NT; t++) s[t] = vdupq_n_f16(0);
    const int64_t np = n & ~(int64_t)7;
    for (int64_t i = 0; i < np; i += 8) {
        const float16x8_t a = ldh(w, i);
        NUNROLL for (int t = 0; t < nt; t++) s[t] = vfmaq_f16(s[t], ldh(x + (size_t)t * xrb, i), a);
    }
    NUNROLL for (int t = 0; t < nt; t++) {
        double sumf = (double)hsum_f16(s[t]);
        const uint8_t *b = x + (size_t)t * xrb;
        for (int64_t i = np; i < n; i++) sumf += (double)(nh2f(w + 2 * i) * nh2f(b + 2 * i)); /* never picked */
        out[t] = (float)sumf;
    }
}

NINLINE float32x4_t bf4(const uint8_t *p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)(const void *)p), 16)); }

NINLINE void bf16_vd(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    double s[NT];
    NUNROLL for (int t = 0; t < NT; t++) s[t] = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t a = bf4(w + 2 * i);
        NUNROLL for (int t = 0; t < nt; t++) {
            float p[4];
            vst1q_f32(p, vmulq_f32(a, bf4(x + (size_t)t * xrb + 2 * i)));
            s[t] = (((s[t] + (double)p[0]) + (double)p[1]) + (double)p[2]) + (double)p[3];
        }
    }
    for (; i < n; i++)
        NUNROLL for (int t = 0; t < nt; t++)
            s[t] += (double)(g4_bf16_to_f32(quant_rd16(w + 2 * i)) * g4_bf16_to_f32(quant_rd16(x + (size_t)t * xrb + 2 * i)));
    NUNROLL for (int t = 0; t < nt; t++) out[t] = (float)s[t];
}

#define ROW_F32_VD(w, x, xrb, n, nt, out) f32_vd(w, x, xrb, n, nt, out)
#define ROW_F32_TB(w, x, xrb, n, nt, out) f32_tb(w, x, xrb, n, nt, out)
#define ROW_F16_VD(w, x, xrb, n, nt, out) f16_vd(w, x, xrb, n, nt, out)
#define ROW_F16_TB(w, x, xrb, n, nt, out) f16_tb(w, x, xrb, n, nt, out)
#define ROW_BF16_VD(w, x, xrb, n, nt, out) bf16_vd(w, x, xrb, n, nt, out)

NEON_MM(neon_f32_vd, ROW_F32_VD)
NEON_MM(neon_f32_tb, ROW_F32_TB)
NEON_MM(neon_f16_vd, ROW_F16_VD)
NEON_MM(neon_f16_tb, ROW_F16_TB)
NEON_MM(neon_bf16_vd, ROW_BF16_VD)
