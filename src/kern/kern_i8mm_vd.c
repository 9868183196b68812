/* kern_i8mm_vd.c - the i8mm table's vec_dot orders for weights llama.cpp's armv8.6_1 library
 * does not repack (the plain buffer: a tied output head, Q4_1 and Q2_K everywhere, Q8_0 / Q4_0
 * rows it cannot repack), built like kern_i8mm.c with -march=armv8.2-a+dotprod+fp16+i8mm+sve.
 *
 * That library's ggml_vec_dot (arch/arm/quants.c, built with SVE and MATMUL_INT8) differs from
 * armv8.2_2's NEON one (the neon table's _vd) in two ways:
 *  - _sv: the SVE vec_dot (nrc 1) of q4_0, q8_0 and q2_K. The per-block steps are the NEON
 *    ones, fused, but on the vector length's lanes, and the accumulators are added lane by lane
 *    before one svaddv:
 *      q4_0, q8_0  two accumulators (even / odd block), acc = fma(lanes, dx * dy, acc), then
 *                  svaddv(even + odd). At 128 bits lane j is the sdot of bytes 4j .. 4j + 3 of
 *                  both halves of the block (the NEON lanes); at 256 bits lanes 0-3 are the
 *                  first half's sdot and lanes 4-7 the second's. q8_0 at 512 bits packs two
 *                  blocks in one vector: one accumulator of 16 lanes, even blocks in 0-7.
 *                  q4_0 at 512 bits runs the 256-bit lanes. An odd last block: the scalar tail.
 *      q2_K        per super-block acc = fma(mins, -dy * dmin, acc), acc = fma(sums, dy * d,
 *                  acc), then svaddv. At 128 bits lane j holds, over the 16 groups g of 16,
 *                  the sdot lane j of each group times its scale, and m(j + 4i) bs(j + 4i)
 *                  for i = 0..3; at 256 (and 512) bits lanes 0-3 sum the even groups, 4-7 the
 *                  odd ones, and lane j's mins are m(j) bs(j) + m(j + 8) bs(j + 8).
 *  - _mm: the i8mm vec_dot (nrc 2: two rows x two columns per smmla) of q4_0, q4_1, q8_0 and
 *    q4_K, which mul_mat runs when its rows, its columns and the chunk it works on are even
 *    (i8mm_nrc2 in kern_i8mm.c). Each output is then one chain over the blocks of whole-block
 *    integer sums: acc = fma(isum, dx * dy, acc); q4_1 adds an unfused chain of m * s last;
 *    q4_K per super-block acc = fma(isum, dy * d, acc), then acc = fma(-(dy * dmin), mins, acc).
 * svaddv is FADDV, a pairwise tree: over 8 lanes ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 +
 * l7)), which the two NEON vaddvq of the halves, added, give exactly. Integer sums are exact
 * however formed, so NEON sdot forms them here at every vector length (the blocks decoded as
 * kern_neon_b32.c's, kern_neon_b32.h); svcntb() says which lanes the float steps take.
 */
#include "kern_neon_b32.h"

#include <arm_sve.h>

/* ==== _sv: ggml_vec_dot_{q4_0,q8_0}_q8_0 under SVE, vl = svcntb() bytes per vector ==== */
NINLINE void sv_b32_row(const int ty, const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt,
                        float *out) {
    const int vl = (int)svcntb();
    const size_t wb = b32_bytes(ty);
    const int64_t nb = n / 32;
    float32x4_t acc[2][2][NT]; /* [block parity][lanes 0-3, 4-7][token] */
    NUNROLL for (int t = 0; t < NT; t++) acc[0][0][t] = acc[0][1][t] = acc[1][0][t] = acc[1][1][t] = vdupq_n_f32(0);
    int64_t ib = 0;
    for (; ib + 1 < nb; ib += 2)
        NUNROLL for (int h = 0; h < 2; h++) {
            const uint8_t *b = w + (size_t)(ib + h) * wb;
            int8x16_t lo, hi;
            b32_codes(ty, b, &lo, &hi);
            const float dw = nh2f(b);
            NUNROLL for (int t = 0; t < nt; t++) {
                const uint8_t *a = x + (size_t)t * xrb + (size_t)(ib + h) * 34;
                const float d = dw * nh2f(a);
                if (vl == 16) {
                    acc[h][0][t] = vfmaq_n_f32(acc[h][0][t], vcvtq_f32_s32(b32_lanes(lo, hi, a + 2)), d);
                } else {
                    acc[h][0][t] = vfmaq_n_f32(acc[h][0][t], vcvtq_f32_s32(vdotq_s32(vdupq_n_s32(0), lo, nld8(a + 2))), d);
                    acc[h][1][t] = vfmaq_n_f32(acc[h][1][t], vcvtq_f32_s32(vdotq_s32(vdupq_n_s32(0), hi, nld8(a + 18))), d);
                }
            }
        }
    NUNROLL for (int t = 0; t < nt; t++) {
        if (vl == 16) out[t] = nhsum(vaddq_f32(acc[0][0][t], acc[1][0][t]));
        else if (ty == B_Q8_0 && vl >= 64)
            out[t] = (nhsum(acc[0][0][t]) + nhsum(acc[0][1][t])) + (nhsum(acc[1][0][t]) + nhsum(acc[1][1][t]));
        else out[t] = nhsum(vaddq_f32(acc[0][0][t], acc[1][0][t])) + nhsum(vaddq_f32(acc[0][1][t], acc[1][1][t]));
    }
    if (ib < nb) b32_vd_tail(ty, w, x, xrb, ib, nt, out); /* the same C in the SVE build */
}

NINLINE void sv_q4_0_row(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    sv_b32_row(B_Q4_0, w, x, xrb, n, nt, out);
}
NINLINE void sv_q8_0_row(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    sv_b32_row(B_Q8_0, w, x, xrb, n, nt, out);
}
NEON_MM(i8mm_q4_0_sv, sv_q4_0_row)
NEON_MM(i8mm_q8_0_sv, sv_q8_0_row)

/* ==== _sv: ggml_vec_dot_q2_K_q8_K under SVE (128 bits; 256 and 512 share their lanes) ==== */
NINLINE void sv_q2_K_row(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    const int vl = (int)svcntb();
    const int64_t nb = n / 256;
    float32x4_t acc[2][NT]; /* lanes 0-3, 4-7 */
    NUNROLL for (int t = 0; t < NT; t++) acc[0][t] = acc[1][t] = vdupq_n_f32(0);
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = w + (size_t)i * 84; /* scales[16], qs[64], d, dmin */
        const float dw = nh2f(b + 80), dmw = nh2f(b + 82);
        int32_t sc[16], mn[16];
        for (int g = 0; g < 16; g++) sc[g] = b[g] & 0xf, mn[g] = b[g] >> 4;
        int32x4_t s[2][NT]; /* the codes' lanes: 128 bits all groups in s[0]; wider, odd groups in s[1] */
        NUNROLL for (int t = 0; t < NT; t++) s[0][t] = s[1][t] = vdupq_n_s32(0);
        for (int g = 0; g < 16; g++) { /* group g: elements 16g .. 16g + 15 */
            const uint8x16_t q = vld1q_u8(b + 16 + 32 * (g >> 3) + 16 * (g & 1));
            const int8x16_t c = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q, vdupq_n_s8((int8_t)-(2 * ((g & 7) >> 1)))), vdupq_n_u8(3)));
            const int h = vl == 16 ? 0 : g & 1;
            NUNROLL for (int t = 0; t < nt; t++) {
                const int32x4_t p = vdotq_s32(vdupq_n_s32(0), c, nld8(x + (size_t)t * xrb + (size_t)i * 292 + 4 + 16 * g));
                s[h][t] = vmlaq_n_s32(s[h][t], p, sc[g]);
            }
        }
        NUNROLL for (int t = 0; t < nt; t++) {
            const uint8_t *a = x + (size_t)t * xrb + (size_t)i * 292;
            const float dy = nrdf(a);
            const float d = dy * dw, dmin = -dy * dmw;
            int16_t bs[16];
            memcpy(bs, a + 260, 32);
            int32_t m[8];
            for (int j = 0; j < 8; j++)
                m[j] = vl == 16 ? (j < 4 ? mn[j] * bs[j] + mn[j + 4] * bs[j + 4] + mn[j + 8] * bs[j + 8] + mn[j + 12] * bs[j + 12] : 0)
                                : mn[j] * bs[j] + mn[j + 8] * bs[j + 8];
            acc[0][t] = vfmaq_n_f32(acc[0][t], vcvtq_f32_s32(vld1q_s32(m)), dmin);
            acc[0][t] = vfmaq_n_f32(acc[0][t], vcvtq_f32_s32(s[0][t]), d);
            if (vl != 16) {
                acc[1][t] = vfmaq_n_f32(acc[1][t], vcvtq_f32_s32(vld1q_s32(m + 4)), dmin);
                acc[1][t] = vfmaq_n_f32(acc[1][t], vcvtq_f32_s32(s[1][t]), d);
            }
        }
    }
    NUNROLL for (int t = 0; t < nt; t++) out[t] = vl == 16 ? nhsum(acc[0][t]) : nhsum(acc[0][t]) + nhsum(acc[1][t]);
}

NEON_MM(i8mm_q2_K_sv, sv_q2_K_row)

/* ==== _mm: the i8mm vec_dot (nrc 2), one chain per output ==== */
NINLINE void mm_b32_row(const int ty, const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    const size_t wb = b32_bytes(ty), ab = ty == B_Q4_1 ? 36 : 34, aq = ty == B_Q4_1 ? 4 : 2;
    const int64_t nb = n / 32;
    float acc[NT], ms[NT];
    NUNROLL for (int t = 0; t < NT; t++) acc[t] = ms[t] = 0;
    for (int64_t ib = 0; ib < nb; ib++) {
        const uint8_t *b = w + (size_t)ib * wb;
        int8x16_t lo, hi;
        b32_codes(ty, b, &lo, &hi);
        const float dw = nh2f(b);
        NUNROLL for (int t = 0; t < nt; t++) {
            const uint8_t *a = x + (size_t)t * xrb + (size_t)ib * ab;
            const int32_t isum = vaddvq_s32(b32_lanes(lo, hi, a + aq));
            acc[t] = fmaf((float)isum, dw * nh2f(a), acc[t]);
            if (ty == B_Q4_1) {
                const float p = nh2f(b + 2) * nh2f(a + 2); /* its own statement: not fused */
                ms[t] = ms[t] + p;
            }
        }
    }
    NUNROLL for (int t = 0; t < nt; t++) out[t] = ty == B_Q4_1 ? acc[t] + ms[t] : acc[t];
}

NINLINE void mm_q4_0_row(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    mm_b32_row(B_Q4_0, w, x, xrb, n, nt, out);
}
NINLINE void mm_q8_0_row(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    mm_b32_row(B_Q8_0, w, x, xrb, n, nt, out);
}
NINLINE void mm_q4_1_row(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    mm_b32_row(B_Q4_1, w, x, xrb, n, nt, out);
}

NINLINE void mm_q4_K_row(const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n, const int nt, float *out) {
    const int64_t nb = n / 256;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    float acc[NT];
    NUNROLL for (int t = 0; t < NT; t++) acc[t] = 0;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b = w + (size_t)i * 144; /* d, dmin, scales[12], qs[128] */
        uint8_t sc[8], mn[8];
        k4_scales(b + 4, sc, mn);
        const float dw = nh2f(b), dmw = nh2f(b + 2);
        int32x4_t s[NT];
        NUNROLL for (int t = 0; t < NT; t++) s[t] = vdupq_n_s32(0);
        NUNROLL for (int k = 0; k < 4; k++) { /* sub-blocks 2k (low nibbles), 2k + 1 (high) */
            const uint8x16_t q0 = vld1q_u8(b + 16 + 32 * k), q1 = vld1q_u8(b + 32 + 32 * k);
            const int8x16_t l0 = vreinterpretq_s8_u8(vandq_u8(q0, m4)), l1 = vreinterpretq_s8_u8(vandq_u8(q1, m4));
            const int8x16_t h0 = vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), h1 = vreinterpretq_s8_u8(vshrq_n_u8(q1, 4));
            NUNROLL for (int t = 0; t < nt; t++) {
                const uint8_t *a = x + (size_t)t * xrb + (size_t)i * 292 + 4 + 64 * k;
                const int32x4_t pl = vdotq_s32(vdotq_s32(vdupq_n_s32(0), l0, nld8(a)), l1, nld8(a + 16));
                const int32x4_t ph = vdotq_s32(vdotq_s32(vdupq_n_s32(0), h0, nld8(a + 32)), h1, nld8(a + 48));
                s[t] = vmlaq_n_s32(vmlaq_n_s32(s[t], pl, sc[2 * k]), ph, sc[2 * k + 1]);
            }
        }
        NUNROLL for (int t = 0; t < nt; t++) {
            const uint8_t *a = x + (size_t)t * xrb + (size_t)i * 292;
            int16_t bs[16];
            memcpy(bs, a + 260, 32);
            int32_t mins = 0;
            for (int j = 0; j < 8; j++) mins += mn[j] * (bs[2 * j] + bs[2 * j + 1]);
            const float dy = nrdf(a);
            acc[t] = fmaf((float)vaddvq_s32(s[t]), dy * dw, acc[t]);
            acc[t] = fmaf(-(dy * dmw), (float)mins, acc[t]);
        }
    }
    NUNROLL for (int t = 0; t < nt; t++) out[t] = acc[t];
}

NEON_MM(i8mm_q4_0_vd2, mm_q4_0_row)
NEON_MM(i8mm_q8_0_vd2, mm_q8_0_row)
NEON_MM(i8mm_q4_1_vd2, mm_q4_1_row)
NEON_MM(i8mm_q4_K_vd2, mm_q4_K_row)
