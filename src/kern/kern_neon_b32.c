/* kern_neon_b32.c - aarch64 NEON + dotprod kernels for the 32-element block types (Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, IQ4_NL) in each float order llama.cpp's armv8.2_2 build uses for them
 * (kern_neon.h: _vd vec_dot, _tb tinyBLAS_Q0_ARM, _rp the 4x4 repacked gemv/gemm).
 *
 * A block decodes to two int8x16 halves (elements 0..15 and 16..31, signed codes: Q4_0 q-8,
 * Q5_0 q-16, Q8_0 q, IQ4_NL its table value; Q4_1/Q5_1 the unsigned q, their min term comes
 * from the activation's s). Two sdot give the 4 lanes ggml's vdotq_s32 pair gives (lane j:
 * elements 4j..4j+3 of both halves), exact. Then, per block and token, with d = dw * da:
 *   _vd  lanes into one of two f32x4 accumulators (even / odd block), fused; the sum
 *        (vaddv(even) + vaddv(odd)) then Q4_1's pairwise min sums or Q5_1's two; a last odd
 *        block as the scalar tail of each ggml_vec_dot (per type below). IQ4_NL: whole-block
 *        sums, sumf += fma(d0, i0, d1 * i1) per pair.
 *   _tb  lanes into one f32x4 accumulator, fused; vaddv at the end.
 *   _rp  the whole-block sum, acc = fma(sum, d, acc) in one f32 per row.
 * Activations: Q8_0 (34 bytes: d, 32 int8) or Q8_1 (36: d, s, 32 int8) rows of n/32 blocks.
 */
#include "kern_neon_b32.h"

/* ggml_vec_dot_{q4_0,q5_0,q8_0}_q8_0 / {q4_1,q5_1}_q8_1 (NEON, dotprod, nrc 1) */
NINLINE void b32_vd(const int ty, const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    const int q81 = ty == B_Q4_1 || ty == B_Q5_1;
    const size_t wb = b32_bytes(ty), ab = q81 ? 36 : 34, aq = q81 ? 4 : 2;
    const int64_t nb = n / 32;
    float32x4_t acc[2][NT];
    float ms[2][NT];
    NUNROLL for (int t = 0; t < NT; t++) { acc[0][t] = acc[1][t] = vdupq_n_f32(0); ms[0][t] = ms[1][t] = 0; }
    int64_t ib = 0;
    for (; ib + 1 < nb; ib += 2) {
        float m[2] = { 0, 0 };
        NUNROLL for (int h = 0; h < 2; h++) {
            const uint8_t *b = w + (size_t)(ib + h) * wb;
            int8x16_t lo, hi;
            b32_codes(ty, b, &lo, &hi);
            const float dw = nh2f(b);
            if (q81) m[h] = nh2f(b + 2);
            NUNROLL for (int t = 0; t < nt; t++) {
                const uint8_t *a = x + (size_t)t * xrb + (size_t)(ib + h) * ab;
                acc[h][t] = vfmaq_n_f32(acc[h][t], vcvtq_f32_s32(b32_lanes(lo, hi, a + aq)), dw * nh2f(a));
            }
        }
        if (q81)
            NUNROLL for (int t = 0; t < nt; t++) {
                const uint8_t *a = x + (size_t)t * xrb + (size_t)ib * ab;
                const float s0 = nh2f(a + 2), s1 = nh2f(a + ab + 2);
                if (ty == B_Q4_1) ms[0][t] += fmaf(m[0], s0, m[1] * s1);
                else { ms[0][t] = fmaf(m[0], s0, ms[0][t]); ms[1][t] = fmaf(m[1], s1, ms[1][t]); }
            }
    }
    NUNROLL for (int t = 0; t < nt; t++) {
        float sumf = nhsum(acc[0][t]) + nhsum(acc[1][t]);
        if (ty == B_Q4_1) sumf += ms[0][t];
        if (ty == B_Q5_1) sumf = (sumf + ms[0][t]) + ms[1][t];
        out[t] = sumf;
    }
    if (ib < nb) b32_vd_tail(ty, w, x, xrb, ib, nt, out);
}

/* ggml_vec_dot_iq4_nl_q8_0 (NEON): whole-block sums, two blocks per step */
NINLINE void iq4nl_vd(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    const int64_t nb = n / 32;
    float sumf[NT];
    NUNROLL for (int t = 0; t < NT; t++) sumf[t] = 0;
    int64_t ib = 0;
    for (; ib + 1 < nb; ib += 2) {
        int8x16_t lo0, hi0, lo1, hi1;
        const uint8_t *b = w + (size_t)ib * 18;
        b32_codes(B_IQ4_NL, b, &lo0, &hi0);
        b32_codes(B_IQ4_NL, b + 18, &lo1, &hi1);
        const float dw0 = nh2f(b), dw1 = nh2f(b + 18);
        NUNROLL for (int t = 0; t < nt; t++) {
            const uint8_t *a = x + (size_t)t * xrb + (size_t)ib * 34;
            const float i0 = (float)vaddvq_s32(b32_lanes(lo0, hi0, a + 2));
            const float i1 = (float)vaddvq_s32(b32_lanes(lo1, hi1, a + 36));
            sumf[t] += fmaf(dw0 * nh2f(a), i0, dw1 * nh2f(a + 34) * i1);
        }
    }
    if (ib < nb) {
        int8x16_t lo, hi;
        const uint8_t *b = w + (size_t)ib * 18;
        b32_codes(B_IQ4_NL, b, &lo, &hi);
        NUNROLL for (int t = 0; t < nt; t++) {
            const uint8_t *a = x + (size_t)t * xrb + (size_t)ib * 34;
            sumf[t] = fmaf(nh2f(a) * nh2f(b), (float)vaddvq_s32(b32_lanes(lo, hi, a + 2)), sumf[t]);
        }
    }
    NUNROLL for (int t = 0; t < nt; t++) out[t] = sumf[t];
}

/* tinyBLAS_Q0_ARM (q4_0, q8_0): one f32x4 accumulator of the sdot lanes */
NINLINE void b32_tb(const int ty, const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    const size_t wb = b32_bytes(ty);
    float32x4_t acc[NT];
    NUNROLL for (int t = 0; t < NT; t++) acc[t] = vdupq_n_f32(0);
    for (int64_t ib = 0; ib < n / 32; ib++) {
        const uint8_t *b = w + (size_t)ib * wb;
        int8x16_t lo, hi;
        b32_codes(ty, b, &lo, &hi);
        const float dw = nh2f(b);
        NUNROLL for (int t = 0; t < nt; t++) {
            const uint8_t *a = x + (size_t)t * xrb + (size_t)ib * 34;
            acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(b32_lanes(lo, hi, a + 2)), dw * nh2f(a));
        }
    }
    NUNROLL for (int t = 0; t < nt; t++) out[t] = nhsum(acc[t]);
}

/* the 4x4 repacked gemv/gemm (q4_0, q8_0, iq4_nl): acc = fma(block sum, da * dw, acc) */
NINLINE void b32_rp(const int ty, const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    const size_t wb = b32_bytes(ty);
    float acc[NT];
    NUNROLL for (int t = 0; t < NT; t++) acc[t] = 0;
    for (int64_t ib = 0; ib < n / 32; ib++) {
        const uint8_t *b = w + (size_t)ib * wb;
        int8x16_t lo, hi;
        b32_codes(ty, b, &lo, &hi);
        const float dw = nh2f(b);
        NUNROLL for (int t = 0; t < nt; t++) {
            const uint8_t *a = x + (size_t)t * xrb + (size_t)ib * 34;
            acc[t] = fmaf((float)vaddvq_s32(b32_lanes(lo, hi, a + 2)), nh2f(a) * dw, acc[t]);
        }
    }
    NUNROLL for (int t = 0; t < nt; t++) out[t] = acc[t];
}

/* the 4x4 repacked gemv itself (q4_0, q8_0, iq4_nl), four rows x one token: lane = row, as in
 * llama.cpp's block_x4 layout: the rows' block sums in one vector, acc = fma(sum, da * dw, acc)
 * on four lanes (decode; the activation block loaded once) */
NINLINE void b32_rp4(const int ty, const uint8_t *w, size_t wrb, const uint8_t *x, int64_t n, float *out) {
    const size_t wb = b32_bytes(ty);
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t ib = 0; ib < n / 32; ib++) {
        const uint8_t *a = x + (size_t)ib * 34, *b = w + (size_t)ib * wb;
        const int8x16_t alo = nld8(a + 2), ahi = nld8(a + 18);
        int32x4_t l[4];
        uint16_t dh[4];
        NUNROLL for (int r = 0; r < 4; r++) {
            int8x16_t lo, hi;
            b32_codes(ty, b + (size_t)r * wrb, &lo, &hi);
            l[r] = vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo, alo), hi, ahi);
            dh[r] = quant_rd16(b + (size_t)r * wrb);
        }
        const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(dh)));
        const int32x4_t is = vpaddq_s32(vpaddq_s32(l[0], l[1]), vpaddq_s32(l[2], l[3]));
        acc = vfmaq_f32(acc, vcvtq_f32_s32(is), vmulq_n_f32(dw, nh2f(a)));
    }
    vst1q_f32(out, acc);
}

#define ROW_Q4_0_VD(w, x, xrb, n, nt, out) b32_vd(B_Q4_0, w, x, xrb, n, nt, out)
#define ROW_Q4_1_VD(w, x, xrb, n, nt, out) b32_vd(B_Q4_1, w, x, xrb, n, nt, out)
#define ROW_Q5_0_VD(w, x, xrb, n, nt, out) b32_vd(B_Q5_0, w, x, xrb, n, nt, out)
#define ROW_Q5_1_VD(w, x, xrb, n, nt, out) b32_vd(B_Q5_1, w, x, xrb, n, nt, out)
#define ROW_Q8_0_VD(w, x, xrb, n, nt, out) b32_vd(B_Q8_0, w, x, xrb, n, nt, out)
#define ROW_IQ4_NL_VD(w, x, xrb, n, nt, out) iq4nl_vd(w, x, xrb, n, nt, out)
#define ROW_Q4_0_TB(w, x, xrb, n, nt, out) b32_tb(B_Q4_0, w, x, xrb, n, nt, out)
#define ROW_Q8_0_TB(w, x, xrb, n, nt, out) b32_tb(B_Q8_0, w, x, xrb, n, nt, out)
#define ROW_Q4_0_RP(w, x, xrb, n, nt, out) b32_rp(B_Q4_0, w, x, xrb, n, nt, out)
#define ROW_Q8_0_RP(w, x, xrb, n, nt, out) b32_rp(B_Q8_0, w, x, xrb, n, nt, out)
#define ROW_IQ4_NL_RP(w, x, xrb, n, nt, out) b32_rp(B_IQ4_NL, w, x, xrb, n, nt, out)
#define ROW_Q4_0_RP4(w, wrb, x, n, out) b32_rp4(B_Q4_0, w, wrb, x, n, out)
#define ROW_Q8_0_RP4(w, wrb, x, n, out) b32_rp4(B_Q8_0, w, wrb, x, n, out)
#define ROW_IQ4_NL_RP4(w, wrb, x, n, out) b32_rp4(B_IQ4_NL, w, wrb, x, n, out)

NEON_MM(neon_q4_0_vd, ROW_Q4_0_VD)
NEON_MM(neon_q4_1_vd, ROW_Q4_1_VD)
NEON_MM(neon_q5_0_vd, ROW_Q5_0_VD)
NEON_MM(neon_q5_1_vd, ROW_Q5_1_VD)
NEON_MM(neon_q8_0_vd, ROW_Q8_0_VD)
NEON_MM(neon_iq4_nl_vd, ROW_IQ4_NL_VD)
NEON_MM(neon_q4_0_tb, ROW_Q4_0_TB)
NEON_MM(neon_q8_0_tb, ROW_Q8_0_TB)
NEON_MM4(neon_q4_0_rp, ROW_Q4_0_RP, ROW_Q4_0_RP4)
NEON_MM4(neon_q8_0_rp, ROW_Q8_0_RP, ROW_Q8_0_RP4)
NEON_MM4(neon_iq4_nl_rp, ROW_IQ4_NL_RP, ROW_IQ4_NL_RP4)
