/* kern_neon_b32.h - private to kern_neon_b32.c and kern_i8mm_vd.c: decoding a 32-element
 * block (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL) into signed codes, its sdot lanes, and the
 * scalar tail every ggml_vec_dot of these types ends with for an odd block count. */
#ifndef G4_KERN_NEON_B32_H
#define G4_KERN_NEON_B32_H

#include "kern_neon.h"

enum { B_Q4_0, B_Q4_1, B_Q5_0, B_Q5_1, B_Q8_0, B_IQ4_NL };

static const int8_t IQ4NL_VALUES[16] = G4_IQ4NL_VALUES;

NINLINE size_t b32_bytes(const int ty) {
    return ty == B_Q4_0 || ty == B_IQ4_NL ? 18 : ty == B_Q4_1 ? 20 : ty == B_Q5_0 ? 22 : ty == B_Q5_1 ? 24 : 34;
}

/* 0x10 in byte j of half h where bit 16h + j of the 32-bit qh is set */
NINLINE uint8x16_t hbit16(uint32_t qh, int h) {
    static const uint8_t IDX[2][16] = { { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1 },
                                        { 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 } };
    static const uint8_t BIT[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t sel = vqtbl1q_u8(vreinterpretq_u8_u32(vdupq_n_u32(qh)), vld1q_u8(IDX[h]));
    return vandq_u8(vtstq_u8(sel, vld1q_u8(BIT)), vdupq_n_u8(0x10));
}

/* block b of type ty -> signed codes of elements 0..15 (*lo) and 16..31 (*hi) */
NINLINE void b32_codes(const int ty, const uint8_t *b, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    if (ty == B_Q8_0) { *lo = nld8(b + 2); *hi = nld8(b + 18); return; }
    const int qo = ty == B_Q4_0 || ty == B_IQ4_NL ? 2 : ty == B_Q4_1 ? 4 : ty == B_Q5_0 ? 6 : 8;
    const uint8x16_t q = vld1q_u8(b + qo);
    uint8x16_t l = vandq_u8(q, m4), h = vshrq_n_u8(q, 4);
    if (ty == B_IQ4_NL) {
        const int8x16_t v = vld1q_s8(IQ4NL_VALUES);
        *lo = vqtbl1q_s8(v, l);
        *hi = vqtbl1q_s8(v, h);
        return;
    }
    if (ty == B_Q5_0 || ty == B_Q5_1) {
        const uint32_t qh = quant_rd32(b + (ty == B_Q5_0 ? 2 : 4));
        l = vorrq_u8(l, hbit16(qh, 0));
        h = vorrq_u8(h, hbit16(qh, 1));
    }
    *lo = vreinterpretq_s8_u8(l);
    *hi = vreinterpretq_s8_u8(h);
    if (ty == B_Q4_0) { *lo = vsubq_s8(*lo, vdupq_n_s8(8)); *hi = vsubq_s8(*hi, vdupq_n_s8(8)); }
    if (ty == B_Q5_0) { *lo = vsubq_s8(*lo, vdupq_n_s8(16)); *hi = vsubq_s8(*hi, vdupq_n_s8(16)); }
}

/* the 4 sdot lanes of one block against activation qs at a */
NINLINE int32x4_t b32_lanes(int8x16_t lo, int8x16_t hi, const uint8_t *a) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo, nld8(a)), hi, nld8(a + 16));
}

/* the last block ib of an odd block count: ggml_vec_dot's scalar tail (the same C in its
 * NEON and SVE builds) on out[t], the sum of the blocks before */
NINLINE void b32_vd_tail(const int ty, const uint8_t *w, const uint8_t *x, size_t xrb, int64_t ib, const int nt, float *out) {
    const int q81 = ty == B_Q4_1 || ty == B_Q5_1;
    const size_t ab = q81 ? 36 : 34, aq = q81 ? 4 : 2;
    const uint8_t *b = w + (size_t)ib * b32_bytes(ty);
    int8x16_t lo, hi;
    b32_codes(ty, b, &lo, &hi);
    const float dw = nh2f(b);
    NUNROLL for (int t = 0; t < nt; t++) {
        const uint8_t *a = x + (size_t)t * xrb + (size_t)ib * ab;
        const float sumi = (float)vaddvq_s32(b32_lanes(lo, hi, a + aq)), da = nh2f(a);
        if (ty == B_Q4_0) out[t] = fmaf(sumi * dw, da, out[t]);        /* sumi*d_x*d_y */
        else if (q81) out[t] += fmaf(dw * da, sumi, nh2f(b + 2) * nh2f(a + 2));
        else out[t] = fmaf(dw * da, sumi, out[t]);
    }
}

#endif
