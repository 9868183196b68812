/* kern_neon_k.c - aarch64 NEON + dotprod kernels for the 256-element super-block types (Q2_K,
 * Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS x Q8_K) in each float order llama.cpp's armv8.2_2 build uses
 * (kern_neon.h: _vd vec_dot, _rp / _rpv / _rpm the 8x4 repacked gemv and gemm).
 *
 * Per super-block, row and token the integer work is exact: sdot over 16 or 32 codes, times
 * the sub-block scale in int32 lanes (|sum| < 2^31 for every type's code and scale range),
 * one horizontal add per super-block (per 64 elements for the Q4_K/Q5_K repacked order), and
 * the min term from the activation's 16 bsums. The float steps then follow llama.cpp, with
 * dy the activation scale, dx/dmx the row's f16 scales (K: 2 ... 4 fmas per super-block):
 *   Q2_K vd   s = fma(-dy * dmx, mins, s); s = fma(dy * dx, isum, s)
 *   Q4_K vd   s = fma(-(dy * dmx), mins, s); s = fma(dy * dx, isum, s)
 *   Q5_K vd   s += fma(dy * dx, isum, -(mins * (dy * dmx)))
 *   Q3_K, Q6_K, IQ4_XS vd   s = fma(dx * dy, isum, s)
 *   Q4_K/Q5_K rp   per 64 elements s = fma(dx * dy, isum64, s); then s = fma(-mins, dmx * dy, s)
 *   Q6_K rpv  s = s + isum * (dx * dy) (not fused); rpm s = fma(isum, dx * dy, s)
 * and the i8mm build's 8x8 repacked kernels (armv8.6_1; the table kern_i8mm.c picks them):
 *   Q4_K/Q5_K rpi  gemv: per 32 elements s = fma(dx * dy, isum32, s), Q5_K after each 64
 *             s = fma(-(dmx * dy), mins64, s), Q4_K at the end s = fma(-mins, dmx * dy, s)
 *   Q4_K/Q5_K rpim gemm: s = fma(-mins, dmx * dy, s); s = fma(isum, dx * dy, s) (for Q4_K the
 *             same bits as vd)
 * Activations: Q8_K rows (292 bytes per 256: f32 d, 256 int8, 16 int16 bsums).
 */
#include "kern_neon.h"

enum { K_Q2, K_Q3, K_Q4, K_Q5, K_Q6, K_IQ4XS };

static const int8_t IQ4NL_VALUES[16] = G4_IQ4NL_VALUES;

NINLINE size_t k_bytes(const int ty) {
    return ty == K_Q2 ? 84 : ty == K_Q3 ? 110 : ty == K_Q4 ? 144 : ty == K_Q5 ? 176 : ty == K_Q6 ? 210 : 136;
}

NINLINE int32x4_t sdot1(int8x16_t w, const uint8_t *a) { return vdotq_s32(vdupq_n_s32(0), w, nld8(a)); }
NINLINE int32x4_t sdot2(int8x16_t w0, int8x16_t w1, const uint8_t *a) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, nld8(a)), w1, nld8(a + 16));
}

/* sum over the 8 sub-blocks of mins[sb] * (bsum[2sb] + bsum[2sb+1]) */
NINLINE int k4_mins(const uint8_t mn[8], const uint8_t *a) {
    const int16x8_t bs = vpaddq_s16(vld1q_s16((const int16_t *)(const void *)(a + 260)),
                                    vld1q_s16((const int16_t *)(const void *)(a + 276)));
    const int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
    return vaddvq_s32(vaddq_s32(vmull_s16(vget_low_s16(bs), vget_low_s16(m)), vmull_s16(vget_high_s16(bs), vget_high_s16(m))));
}

/* One super-block b of type ty against nt tokens (activation blocks a[t]): exact isum[t]
 * (scales applied) and, for Q2_K/Q4_K/Q5_K, mins[t]; split (Q4_K/Q5_K) 1: isq[t][k] of the
 * four 64-element quarters instead of isum, 2: isq[t][j] of the eight 32-element sub-blocks
 * and mins64[t][k] the min term of each quarter. */
NINLINE void k_sb(const int ty, const int split, const uint8_t *b, const uint8_t *const *a, const int nt,
                  int isum[NT], int isq[NT][8], int mins[NT], int mins64[NT][4]) {
    int32x4_t acc[NT];
    NUNROLL for (int t = 0; t < NT; t++) acc[t] = vdupq_n_s32(0);
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3), one = vdupq_n_u8(1);
    if (ty == K_Q4 || ty == K_Q5) {
        uint8_t sc[8], mn[8];
        k4_scales(b + 4, sc, mn);
        const uint8_t *qs = b + (ty == K_Q5 ? 48 : 16);
        uint8x16_t h0 = vdupq_n_u8(0), h1 = h0;
        if (ty == K_Q5) { h0 = vld1q_u8(b + 16); h1 = vld1q_u8(b + 32); }
        NUNROLL for (int k = 0; k < 4; k++) {
            const uint8x16_t q0 = vld1q_u8(qs + 32 * k), q1 = vld1q_u8(qs + 32 * k + 16);
            uint8x16_t l0 = vandq_u8(q0, m4), l1 = vandq_u8(q1, m4), u0 = vshrq_n_u8(q0, 4), u1 = vshrq_n_u8(q1, 4);
            if (ty == K_Q5) {
                l0 = vorrq_u8(l0, vshlq_n_u8(vandq_u8(h0, one), 4));
                l1 = vorrq_u8(l1, vshlq_n_u8(vandq_u8(h1, one), 4));
                u0 = vorrq_u8(u0, vshlq_n_u8(vandq_u8(vshrq_n_u8(h0, 1), one), 4));
                u1 = vorrq_u8(u1, vshlq_n_u8(vandq_u8(vshrq_n_u8(h1, 1), one), 4));
                h0 = vshrq_n_u8(h0, 2);
                h1 = vshrq_n_u8(h1, 2);
            }
            NUNROLL for (int t = 0; t < nt; t++) {
                const uint8_t *q8 = a[t] + 4 + 64 * k;
                const int32x4_t sl = sdot2(vreinterpretq_s8_u8(l0), vreinterpretq_s8_u8(l1), q8);
                const int32x4_t sh = sdot2(vreinterpretq_s8_u8(u0), vreinterpretq_s8_u8(u1), q8 + 32);
                if (split == 2) {
                    isq[t][2 * k] = vaddvq_s32(sl) * sc[2 * k];
                    isq[t][2 * k + 1] = vaddvq_s32(sh) * sc[2 * k + 1];
                } else if (split) isq[t][k] = vaddvq_s32(vmlaq_n_s32(vmulq_n_s32(sl, sc[2 * k]), sh, sc[2 * k + 1]));
                else acc[t] = vmlaq_n_s32(vmlaq_n_s32(acc[t], sl, sc[2 * k]), sh, sc[2 * k + 1]);
            }
        }
        NUNROLL for (int t = 0; t < nt; t++) mins[t] = k4_mins(mn, a[t]);
        if (split == 2)
            NUNROLL for (int t = 0; t < nt; t++) {
                const int16x8_t bs = vpaddq_s16(vld1q_s16((const int16_t *)(const void *)(a[t] + 260)),
                                                vld1q_s16((const int16_t *)(const void *)(a[t] + 276)));
                const int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
                const int32x4_t q = vpaddq_s32(vmull_s16(vget_low_s16(bs), vget_low_s16(m)), vmull_high_s16(bs, m));
                vst1q_s32(mins64[t], q);
            }
    } else if (ty == K_Q6) {
        const int8_t *sc = (const int8_t *)(const void *)(b + 192);
        const int8x16_t c32 = vdupq_n_s8(32);
        NUNROLL for (int c = 0; c < 2; c++)
            NUNROLL for (int half = 0; half < 2; half++) {
                const int o = 16 * half;
                const uint8x16_t l0 = vld1q_u8(b + 64 * c + o), l1 = vld1q_u8(b + 64 * c + 32 + o);
                const uint8x16_t h = vld1q_u8(b + 128 + 32 * c + o);
                int8x16_t q[4];
                q[0] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(h, m3), 4))), c32);
                q[1] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m3), 4))), c32);
                q[2] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m3), 4))), c32);
                q[3] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4))), c32);
                NUNROLL for (int j = 0; j < 4; j++) { /* elements 128c + 32j + o .. +16: group 8c + 2j + half */
                    const int e = 128 * c + 32 * j + o;
                    NUNROLL for (int t = 0; t < nt; t++) acc[t] = vmlaq_n_s32(acc[t], sdot1(q[j], a[t] + 4 + e), sc[e / 16]);
                }
            }
    } else if (ty == K_Q2) {
        const uint8_t *sc = b, *qs = b + 16;
        NUNROLL for (int c = 0; c < 2; c++) {
            uint8x16_t q0 = vld1q_u8(qs + 32 * c), q1 = vld1q_u8(qs + 32 * c + 16);
            NUNROLL for (int j = 0; j < 4; j++) {
                const int e = 128 * c + 32 * j, g = e / 16;
                const int8x16_t v0 = vreinterpretq_s8_u8(vandq_u8(q0, m3)), v1 = vreinterpretq_s8_u8(vandq_u8(q1, m3));
                q0 = vshrq_n_u8(q0, 2);
                q1 = vshrq_n_u8(q1, 2);
                NUNROLL for (int t = 0; t < nt; t++) {
                    acc[t] = vmlaq_n_s32(acc[t], sdot1(v0, a[t] + 4 + e), sc[g] & 15);
                    acc[t] = vmlaq_n_s32(acc[t], sdot1(v1, a[t] + 4 + e + 16), sc[g + 1] & 15);
                }
            }
        }
        const uint8x16_t mv = vshrq_n_u8(vld1q_u8(sc), 4);
        const int16x8_t ml = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mv))), mh = vreinterpretq_s16_u16(vmovl_high_u8(mv));
        NUNROLL for (int t = 0; t < nt; t++) {
            const int16x8_t b0 = vld1q_s16((const int16_t *)(const void *)(a[t] + 260));
            const int16x8_t b1 = vld1q_s16((const int16_t *)(const void *)(a[t] + 276));
            int32x4_t p = vmull_s16(vget_low_s16(b0), vget_low_s16(ml));
            p = vmlal_s16(p, vget_high_s16(b0), vget_high_s16(ml));
            p = vmlal_s16(p, vget_low_s16(b1), vget_low_s16(mh));
            p = vmlal_s16(p, vget_high_s16(b1), vget_high_s16(mh));
            mins[t] = vaddvq_s32(p);
        }
    } else if (ty == K_Q3) {
        const uint8_t *s = b + 96, *qs = b + 32;
        int sc[16];
        for (int g = 0; g < 16; g++) {
            const int low = g < 8 ? (s[g] & 0xF) : (s[g - 8] >> 4);
            sc[g] = (low | ((s[8 + g % 4] >> (2 * (g / 4))) & 3) << 4) - 32;
        }
        uint8x16_t hm0 = vld1q_u8(b), hm1 = vld1q_u8(b + 16);
        const int8x16_t c4 = vdupq_n_s8(4);
        NUNROLL for (int c = 0; c < 2; c++) {
            uint8x16_t q0 = vld1q_u8(qs + 32 * c), q1 = vld1q_u8(qs + 32 * c + 16);
            NUNROLL for (int j = 0; j < 4; j++) { /* high bit 4c + j of hmask */
                const int e = 128 * c + 32 * j, g = e / 16;
                const int8x16_t v0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q0, m3), vshlq_n_u8(vandq_u8(hm0, one), 2))), c4);
                const int8x16_t v1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q1, m3), vshlq_n_u8(vandq_u8(hm1, one), 2))), c4);
                q0 = vshrq_n_u8(q0, 2);
                q1 = vshrq_n_u8(q1, 2);
                hm0 = vshrq_n_u8(hm0, 1);
                hm1 = vshrq_n_u8(hm1, 1);
                NUNROLL for (int t = 0; t < nt; t++) {
                    acc[t] = vmlaq_n_s32(acc[t], sdot1(v0, a[t] + 4 + e), sc[g]);
                    acc[t] = vmlaq_n_s32(acc[t], sdot1(v1, a[t] + 4 + e + 16), sc[g + 1]);
                }
            }
        }
    } else { /* IQ4_XS */
        const int8x16_t vals = vld1q_s8(IQ4NL_VALUES);
        const uint16_t sh = quant_rd16(b + 2);
        const uint8_t *sl = b + 4, *qs = b + 8;
        NUNROLL for (int k = 0; k < 8; k++) {
            const int ls = (((sl[k / 2] >> 4 * (k % 2)) & 0xF) | (((sh >> 2 * k) & 3) << 4)) - 32;
            const uint8x16_t q = vld1q_u8(qs + 16 * k);
            const int8x16_t lo = vqtbl1q_s8(vals, vandq_u8(q, m4)), hi = vqtbl1q_s8(vals, vshrq_n_u8(q, 4));
            NUNROLL for (int t = 0; t < nt; t++) acc[t] = vmlaq_n_s32(acc[t], sdot2(lo, hi, a[t] + 4 + 32 * k), ls);
        }
    }
    if (!split) NUNROLL for (int t = 0; t < nt; t++) isum[t] = vaddvq_s32(acc[t]);
}

/* one super-block b's float step for one token (dy its activation scale) into *s, in the
 * order's sequence (see the top); order: 0 vec_dot, 1 repacked (Q4_K/Q5_K 8x4; Q6_K gemv),
 * 2 Q6_K repacked gemm, 3 Q4_K/Q5_K i8mm gemv (isq per 32), 4 Q4_K/Q5_K i8mm gemm */
NINLINE void k_acc(const int ty, const int order, const uint8_t *b, float dy, int isum, const int *isq, int mins,
                   const int *mins64, float *s) {
    const float dx = nh2f(b + (ty == K_Q2 ? 80 : ty == K_Q3 ? 108 : ty == K_Q6 ? 208 : 0));
    const float dmx = ty == K_Q2 ? nh2f(b + 82) : ty == K_Q4 || ty == K_Q5 ? nh2f(b + 2) : 0.0f;
    if (order == 1 && (ty == K_Q4 || ty == K_Q5)) {
        const float d = dx * dy;
        NUNROLL for (int k = 0; k < 4; k++) *s = fmaf(d, (float)isq[k], *s);
        *s = fmaf(-(float)mins, dmx * dy, *s);
    } else if (order == 3) {
        const float d = dx * dy, dm = dmx * dy;
        NUNROLL for (int k = 0; k < 4; k++) {
            *s = fmaf(d, (float)isq[2 * k], *s);
            *s = fmaf(d, (float)isq[2 * k + 1], *s);
            if (ty == K_Q5) *s = fmaf(-dm, (float)mins64[k], *s);
        }
        if (ty == K_Q4) *s = fmaf(-(float)mins, dm, *s);
    } else if (order == 4) {
        *s = fmaf(-(float)mins, dmx * dy, *s);
        *s = fmaf((float)isum, dx * dy, *s);
    } else if (ty == K_Q6 && order == 1) {
        const float p = (float)isum * (dx * dy); /* its own statement: never contracted */
        *s += p;
    } else if (ty == K_Q6 && order == 2) {
        *s = fmaf((float)isum, dx * dy, *s);
    } else if (ty == K_Q2) {
        *s = fmaf(-dy * dmx, (float)mins, *s);
        *s = fmaf(dy * dx, (float)isum, *s);
    } else if (ty == K_Q4) {
        *s = fmaf(-(dy * dmx), (float)mins, *s);
        *s = fmaf(dy * dx, (float)isum, *s);
    } else if (ty == K_Q5) {
        *s += fmaf(dy * dx, (float)isum, -((float)mins * (dy * dmx)));
    } else {
        *s = fmaf(dx * dy, (float)isum, *s);
    }
}

/* one row x nt tokens (each super-block decoded once for all of them) */
NINLINE void k_row(const int ty, const int order, const uint8_t *w, const uint8_t *x, size_t xrb, int64_t n,
                   const int nt, float *out) {
    const size_t wb = k_bytes(ty);
    const int split = (ty == K_Q4 || ty == K_Q5) ? (order == 1 ? 1 : order == 3 ? 2 : 0) : 0;
    float s[NT];
    NUNROLL for (int t = 0; t < NT; t++) s[t] = 0;
    for (int64_t i = 0; i < n / 256; i++) {
        const uint8_t *b = w + (size_t)i * wb;
        const uint8_t *a[NT];
        NUNROLL for (int t = 0; t < NT; t++) a[t] = x + (size_t)(t < nt ? t : 0) * xrb + (size_t)i * 292;
        int isum[NT], isq[NT][8], mins[NT], mins64[NT][4];
        k_sb(ty, split, b, a, nt, isum, isq, mins, mins64);
        NUNROLL for (int t = 0; t < nt; t++) k_acc(ty, order, b, nrdf(a[t]), isum[t], isq[t], mins[t], mins64[t], &s[t]);
    }
    NUNROLL for (int t = 0; t < nt; t++) out[t] = s[t];
}

/* 4 f16 scales at byte offset off of the rows' super-block i, as f32 lanes */
NINLINE float32x4_t k_h4(const uint8_t *w, size_t wrb, size_t off) {
    const uint16_t h[4] = { quant_rd16(w + off), quant_rd16(w + wrb + off), quant_rd16(w + 2 * wrb + off), quant_rd16(w + 3 * wrb + off) };
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

/* [sum p0, sum p1, sum p2, sum p3] */
NINLINE int32x4_t k_hadd4(int32x4_t p0, int32x4_t p1, int32x4_t p2, int32x4_t p3) {
    return vpaddq_s32(vpaddq_s32(p0, p1), vpaddq_s32(p2, p3));
}

/* [sum v0, sum v1, sum v2, sum v3] of four sub-block lane vectors */
#define K_SUMS4(v0, v1, v2, v3) k_hadd4(v0, v1, v2, v3)

/* the 4x4 transpose of rows r[0..3] (lane k of r[j] -> lane j of r[k]) */
NINLINE void k_tr4(int32x4_t r[4]) {
    const int32x4_t a = vtrn1q_s32(r[0], r[1]), b = vtrn2q_s32(r[0], r[1]), c = vtrn1q_s32(r[2], r[3]), d = vtrn2q_s32(r[2], r[3]);
    r[0] = vreinterpretq_s32_s64(vtrn1q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(c)));
    r[1] = vreinterpretq_s32_s64(vtrn1q_s64(vreinterpretq_s64_s32(b), vreinterpretq_s64_s32(d)));
    r[2] = vreinterpretq_s32_s64(vtrn2q_s64(vreinterpretq_s64_s32(a), vreinterpretq_s64_s32(c)));
    r[3] = vreinterpretq_s32_s64(vtrn2q_s64(vreinterpretq_s64_s32(b), vreinterpretq_s64_s32(d)));
}

/* Q4_K / Q5_K, four rows x one token (decode): each activation super-block is loaded once for
 * the four rows; per row the eight sub-block sums are formed as lanes (pairwise adds of the
 * sdot lanes) and scaled in int32 vectors; the rows' results meet in one vector (lane = row)
 * and every float step of the order runs on the four lanes at once, exactly as per row
 * (k_acc). order 0 vec_dot, 1 the 8x4 repacked gemv (per 64 elements), 3 the i8mm 8x8 gemv
 * (per 32 elements). */
NINLINE void k45_rows4(const int q5, const int order, const uint8_t *w, size_t wrb, const uint8_t *x, int64_t n, float *out) {
    const size_t wb = q5 ? 176 : 144;
    const uint8x16_t m4 = vdupq_n_u8(0x0f), one = vdupq_n_u8(1);
    float32x4_t s = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / 256; i++) {
        const uint8_t *a = x + (size_t)i * 292, *b = w + (size_t)i * wb;
        const int16x8_t bs = vpaddq_s16(vld1q_s16((const int16_t *)(const void *)(a + 260)),
                                        vld1q_s16((const int16_t *)(const void *)(a + 276)));
        int8x16_t av[16];
        NUNROLL for (int k = 0; k < 16; k++) av[k] = nld8(a + 4 + 16 * k);
        int32x4_t res[4], res_hi[4], mins[4];
        NUNROLL for (int r = 0; r < 4; r++) {
            const uint8_t *br = b + (size_t)r * wrb;
            uint8_t sc[8], mn[8];
            k4_scales(br + 4, sc, mn);
            const int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
            const int32x4_t mlo = vmull_s16(vget_low_s16(bs), vget_low_s16(m)), mhi = vmull_high_s16(bs, m);
            mins[r] = order == 3 ? vpaddq_s32(mlo, mhi) /* the four 64-element min terms */ : vaddq_s32(mlo, mhi);
            const uint16x8_t sc16 = vmovl_u8(vld1_u8(sc));
            const int32x4_t sc_lo = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(sc16))), sc_hi = vreinterpretq_s32_u32(vmovl_high_u16(sc16));
            const uint8_t *qs = br + (q5 ? 48 : 16);
            uint8x16_t h0 = vdupq_n_u8(0), h1 = h0;
            if (q5) { h0 = vld1q_u8(br + 16); h1 = vld1q_u8(br + 32); }
            int32x4_t sb[8];
            NUNROLL for (int k = 0; k < 4; k++) {
                const uint8x16_t q0 = vld1q_u8(qs + 32 * k), q1 = vld1q_u8(qs + 32 * k + 16);
                uint8x16_t l0 = vandq_u8(q0, m4), l1 = vandq_u8(q1, m4), u0 = vshrq_n_u8(q0, 4), u1 = vshrq_n_u8(q1, 4);
                if (q5) {
                    l0 = vorrq_u8(l0, vshlq_n_u8(vandq_u8(h0, one), 4));
                    l1 = vorrq_u8(l1, vshlq_n_u8(vandq_u8(h1, one), 4));
                    u0 = vorrq_u8(u0, vshlq_n_u8(vandq_u8(vshrq_n_u8(h0, 1), one), 4));
                    u1 = vorrq_u8(u1, vshlq_n_u8(vandq_u8(vshrq_n_u8(h1, 1), one), 4));
                    h0 = vshrq_n_u8(h0, 2);
                    h1 = vshrq_n_u8(h1, 2);
                }
                sb[2 * k] = vdotq_s32(vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(l0), av[4 * k]), vreinterpretq_s8_u8(l1), av[4 * k + 1]);
                sb[2 * k + 1] = vdotq_s32(vdotq_s32(vdupq_n_s32(0), vreinterpretq_s8_u8(u0), av[4 * k + 2]), vreinterpretq_s8_u8(u1), av[4 * k + 3]);
            }
            /* scale x sub-block sum, for sub-blocks 0..3 and 4..7 */
            const int32x4_t p0 = vmulq_s32(K_SUMS4(sb[0], sb[1], sb[2], sb[3]), sc_lo);
            const int32x4_t p1 = vmulq_s32(K_SUMS4(sb[4], sb[5], sb[6], sb[7]), sc_hi);
            res[r] = order == 3 ? p0 : order ? vpaddq_s32(p0, p1) /* the four 64-element sums */ : vaddq_s32(p0, p1);
            res_hi[r] = p1;
        }
        const float dy = nrdf(a);
        const float32x4_t d = vmulq_n_f32(k_h4(b, wrb, 0), dy), dm = vmulq_n_f32(k_h4(b, wrb, 2), dy);
        const float32x4_t mf = vcvtq_f32_s32(k_hadd4(mins[0], mins[1], mins[2], mins[3]));
        if (order == 3) {
            k_tr4(res);    /* res[j]: sub-block j's scaled sum of each row */
            k_tr4(res_hi); /* res_hi[j]: sub-block 4 + j's */
            if (q5) k_tr4(mins);
            NUNROLL for (int k = 0; k < 4; k++) {
                s = vfmaq_f32(s, d, vcvtq_f32_s32(k < 2 ? res[2 * k] : res_hi[2 * k - 4]));         /* fma(d, isum32, s) */
                s = vfmaq_f32(s, d, vcvtq_f32_s32(k < 2 ? res[2 * k + 1] : res_hi[2 * k - 3]));
                if (q5) s = vfmsq_f32(s, dm, vcvtq_f32_s32(mins[k]));                              /* fma(-dm, mins64, s) */
            }
            if (!q5) s = vfmsq_f32(s, mf, dm);                                                    /* fma(-mins, dm, s) */
            continue;
        }
        if (order) {
            k_tr4(res); /* res[k]: the k-th 64-element sum of each row */
            NUNROLL for (int k = 0; k < 4; k++) s = vfmaq_f32(s, d, vcvtq_f32_s32(res[k])); /* fma(d, isum64, s) */
            s = vfmsq_f32(s, mf, dm);                                                      /* fma(-mins, dm, s) */
            continue;
        }
        const float32x4_t is = vcvtq_f32_s32(k_hadd4(res[0], res[1], res[2], res[3]));
        if (q5) s = vaddq_f32(s, vfmaq_f32(vnegq_f32(vmulq_f32(mf, dm)), d, is));     /* s += fma(d, is, -(mins*dm)) */
        else s = vfmaq_f32(vfmsq_f32(s, dm, mf), d, is);                                /* fma(-dm, mins, s); fma(d, is, s) */
    }
    vst1q_f32(out, s);
}

/* Q6_K, four rows x one token: the sixteen 16-element group sums as lanes, times the int8
 * scales widened to int32; order 0 vec_dot (s = fma(d, isum, s)), 1 the 8x4 gemv
 * (s = s + isum * d, not fused) */
NINLINE void k6_rows4(const int order, const uint8_t *w, size_t wrb, const uint8_t *x, int64_t n, float *out) {
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3);
    const int8x16_t c32 = vdupq_n_s8(32);
    float32x4_t s = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / 256; i++) {
        const uint8_t *a = x + (size_t)i * 292, *b = w + (size_t)i * 210;
        int8x16_t av[16];
        NUNROLL for (int k = 0; k < 16; k++) av[k] = nld8(a + 4 + 16 * k);
        int32x4_t res[4];
        NUNROLL for (int r = 0; r < 4; r++) {
            const uint8_t *br = b + (size_t)r * wrb;
            int32x4_t g[16]; /* sdot lanes of group 8c + 2j + half */
            NUNROLL for (int c = 0; c < 2; c++)
                NUNROLL for (int half = 0; half < 2; half++) {
                    const int o = 16 * half;
                    const uint8x16_t l0 = vld1q_u8(br + 64 * c + o), l1 = vld1q_u8(br + 64 * c + 32 + o), h = vld1q_u8(br + 128 + 32 * c + o);
                    int8x16_t q[4];
                    q[0] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(h, m3), 4))), c32);
                    q[1] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m3), 4))), c32);
                    q[2] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m3), 4))), c32);
                    q[3] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4))), c32);
                    NUNROLL for (int j = 0; j < 4; j++) g[8 * c + 2 * j + half] = vdotq_s32(vdupq_n_s32(0), q[j], av[8 * c + 2 * j + half]);
                }
            const int8x16_t sc = nld8(br + 192);
            const int16x8_t s_lo = vmovl_s8(vget_low_s8(sc)), s_hi = vmovl_high_s8(sc);
            int32x4_t t = vmulq_s32(K_SUMS4(g[0], g[1], g[2], g[3]), vmovl_s16(vget_low_s16(s_lo)));
            t = vmlaq_s32(t, K_SUMS4(g[4], g[5], g[6], g[7]), vmovl_high_s16(s_lo));
            t = vmlaq_s32(t, K_SUMS4(g[8], g[9], g[10], g[11]), vmovl_s16(vget_low_s16(s_hi)));
            res[r] = vmlaq_s32(t, K_SUMS4(g[12], g[13], g[14], g[15]), vmovl_high_s16(s_hi));
        }
        const float32x4_t d = vmulq_n_f32(k_h4(b, wrb, 208), nrdf(a));
        const float32x4_t is = vcvtq_f32_s32(k_hadd4(res[0], res[1], res[2], res[3]));
        if (order) s = vaddq_f32(s, vmulq_f32(is, d));
        else s = vfmaq_f32(s, d, is);
    }
    vst1q_f32(out, s);
}

#define ROW_Q2_K_VD(w, x, xrb, n, nt, out) k_row(K_Q2, 0, w, x, xrb, n, nt, out)
#define ROW_Q3_K_VD(w, x, xrb, n, nt, out) k_row(K_Q3, 0, w, x, xrb, n, nt, out)
#define ROW_Q4_K_VD(w, x, xrb, n, nt, out) k_row(K_Q4, 0, w, x, xrb, n, nt, out)
#define ROW_Q4_K_VD4(w, wrb, x, n, out) k45_rows4(0, 0, w, wrb, x, n, out)
#define ROW_Q5_K_VD(w, x, xrb, n, nt, out) k_row(K_Q5, 0, w, x, xrb, n, nt, out)
#define ROW_Q5_K_VD4(w, wrb, x, n, out) k45_rows4(1, 0, w, wrb, x, n, out)
#define ROW_Q6_K_VD(w, x, xrb, n, nt, out) k_row(K_Q6, 0, w, x, xrb, n, nt, out)
#define ROW_Q6_K_VD4(w, wrb, x, n, out) k6_rows4(0, w, wrb, x, n, out)
#define ROW_IQ4_XS_VD(w, x, xrb, n, nt, out) k_row(K_IQ4XS, 0, w, x, xrb, n, nt, out)
#define ROW_Q4_K_RP(w, x, xrb, n, nt, out) k_row(K_Q4, 1, w, x, xrb, n, nt, out)
#define ROW_Q4_K_RP4(w, wrb, x, n, out) k45_rows4(0, 1, w, wrb, x, n, out)
#define ROW_Q5_K_RP(w, x, xrb, n, nt, out) k_row(K_Q5, 1, w, x, xrb, n, nt, out)
#define ROW_Q5_K_RP4(w, wrb, x, n, out) k45_rows4(1, 1, w, wrb, x, n, out)
#define ROW_Q6_K_RPV(w, x, xrb, n, nt, out) k_row(K_Q6, 1, w, x, xrb, n, nt, out)
#define ROW_Q6_K_RPV4(w, wrb, x, n, out) k6_rows4(1, w, wrb, x, n, out)
#define ROW_Q6_K_RPM(w, x, xrb, n, nt, out) k_row(K_Q6, 2, w, x, xrb, n, nt, out)
#define ROW_Q4_K_RPI(w, x, xrb, n, nt, out) k_row(K_Q4, 3, w, x, xrb, n, nt, out)
#define ROW_Q4_K_RPI4(w, wrb, x, n, out) k45_rows4(0, 3, w, wrb, x, n, out)
#define ROW_Q5_K_RPI(w, x, xrb, n, nt, out) k_row(K_Q5, 3, w, x, xrb, n, nt, out)
#define ROW_Q5_K_RPI4(w, wrb, x, n, out) k45_rows4(1, 3, w, wrb, x, n, out)
#define ROW_Q4_K_RPIM(w, x, xrb, n, nt, out) k_row(K_Q4, 4, w, x, xrb, n, nt, out)
#define ROW_Q5_K_RPIM(w, x, xrb, n, nt, out) k_row(K_Q5, 4, w, x, xrb, n, nt, out)

NEON_MM(neon_q2_K_vd, ROW_Q2_K_VD)
NEON_MM(neon_q3_K_vd, ROW_Q3_K_VD)
NEON_MM4(neon_q4_K_vd, ROW_Q4_K_VD, ROW_Q4_K_VD4)
NEON_MM4(neon_q5_K_vd, ROW_Q5_K_VD, ROW_Q5_K_VD4)
NEON_MM4(neon_q6_K_vd, ROW_Q6_K_VD, ROW_Q6_K_VD4)
NEON_MM(neon_iq4_xs_vd, ROW_IQ4_XS_VD)
NEON_MM4(neon_q4_K_rp, ROW_Q4_K_RP, ROW_Q4_K_RP4)
NEON_MM4(neon_q5_K_rp, ROW_Q5_K_RP, ROW_Q5_K_RP4)
NEON_MM4(neon_q6_K_rpv, ROW_Q6_K_RPV, ROW_Q6_K_RPV4)
NEON_MM(neon_q6_K_rpm, ROW_Q6_K_RPM)
NEON_MM4(neon_q4_K_rpi, ROW_Q4_K_RPI, ROW_Q4_K_RPI4)
NEON_MM4(neon_q5_K_rpi, ROW_Q5_K_RPI, ROW_Q5_K_RPI4)
NEON_MM(neon_q4_K_rpim, ROW_Q4_K_RPIM)
NEON_MM(neon_q5_K_rpim, ROW_Q5_K_RPIM)
