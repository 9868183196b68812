/* quant_ref.c - scalar reference: dequantize, quantize, activation quantizers, dot products.
 *
 * Owns: the oracle every SIMD kernel is tested against, and the quantizers the GGUF writer
 * and `g4 quantize` use. Does not own: block layouts and traits (quant.h, types.c), fast
 * kernels (src/kern/).
 *
 * Invariants:
 * - Compiled with -ffp-contract=off: every float expression is evaluated in ggml's order
 *   with one rounding per operation, so dequantization and the *_ref quantizers are
 *   bit/byte-identical with ggml v0.5.0 (quant-formats.md §3-6).
 * - Fields are read through byte pointers (quant_rd16 and friends): mapped GGUF rows carry
 *   no alignment promise beyond the file's, and blocks of 18/34 bytes break any struct one.
 * - n is a multiple of the block size (callers check); no allocation, no global state.
 */
#include "quant_ref.h"

#include <float.h>
#include <math.h>
#include <string.h>

static const int8_t KVALUES_IQ4NL[16] = G4_IQ4NL_VALUES;

#define GROUP_MAX_EPS 1e-15f

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

static inline void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void wrh(uint8_t *p, float f) { wr16(p, g4_f32_to_f16(f)); }

/* ==== Dequantization (ggml dequantize_row_*) ==== */

static void dq_q4_0(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 18, y += 32) {
        const float d = quant_rdh(b);
        const uint8_t *qs = b + 2;
        for (int j = 0; j < 16; j++) {
            const int x0 = (qs[j] & 0x0F) - 8, x1 = (qs[j] >> 4) - 8;
            y[j] = (float)x0 * d;
            y[j + 16] = (float)x1 * d;
        }
    }
}

static void dq_q4_1(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 20, y += 32) {
        const float d = quant_rdh(b), m = quant_rdh(b + 2);
        const uint8_t *qs = b + 4;
        for (int j = 0; j < 16; j++) {
            y[j] = (float)(qs[j] & 0x0F) * d + m;
            y[j + 16] = (float)(qs[j] >> 4) * d + m;
        }
    }
}

static void dq_q5_0(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 22, y += 32) {
        const float d = quant_rdh(b);
        const uint32_t qh = quant_rd32(b + 2);
        const uint8_t *qs = b + 6;
        for (int j = 0; j < 16; j++) {
            const int h0 = (int)((qh >> j) & 1) << 4, h1 = (int)((qh >> (j + 16)) & 1) << 4;
            y[j] = (float)(((qs[j] & 0x0F) | h0) - 16) * d;
            y[j + 16] = (float)(((qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

static void dq_q5_1(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 24, y += 32) {
        const float d = quant_rdh(b), m = quant_rdh(b + 2);
        const uint32_t qh = quant_rd32(b + 4);
        const uint8_t *qs = b + 8;
        for (int j = 0; j < 16; j++) {
            const int h0 = (int)((qh >> j) & 1) << 4, h1 = (int)((qh >> (j + 16)) & 1) << 4;
            y[j] = (float)((qs[j] & 0x0F) | h0) * d + m;
            y[j + 16] = (float)((qs[j] >> 4) | h1) * d + m;
        }
    }
}

/* Q8_0 (34 B) and Q8_1 (36 B): qs at off */
static void dq_q8(const uint8_t *b, float *y, int64_t nb, size_t bytes, size_t off) {
    for (int64_t i = 0; i < nb; i++, b += bytes, y += 32) {
        const float d = quant_rdh(b);
        const int8_t *qs = (const int8_t *)(const void *)(b + off);
        for (int j = 0; j < 32; j++) y[j] = (float)qs[j] * d;
    }
}

static void dq_iq4_nl(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 18, y += 32) {
        const float d = quant_rdh(b);
        const uint8_t *qs = b + 2;
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)KVALUES_IQ4NL[qs[j] & 0xF];
            y[j + 16] = d * (float)KVALUES_IQ4NL[qs[j] >> 4];
        }
    }
}

static void dq_q2_K(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 84) {
        const uint8_t *sc = b, *q = b + 16;
        const float d = quant_rdh(b + 80), dmin = quant_rdh(b + 82);
        int is = 0;
        for (int n = 0; n < 256; n += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    const uint8_t s = sc[is++];
                    const float dl = d * (float)(s & 0xF), ml = dmin * (float)(s >> 4);
                    for (int l = 0; l < 16; l++) *y++ = dl * (float)((q[l + 16 * half] >> shift) & 3) - ml;
                }
            }
            q += 32;
        }
    }
}

/* 6-bit signed scale of group g of a Q3_K block (value - 32) */
static inline int q3k_scale(const uint8_t *s, int g) {
    const int low = g < 8 ? (s[g] & 0xF) : (s[g - 8] >> 4);
    const int high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
    return (low | high << 4) - 32;
}

static void dq_q3_K(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 110) {
        const uint8_t *hm = b, *q = b + 32, *sc = b + 96;
        const float d_all = quant_rdh(b + 108);
        int is = 0;
        uint8_t m = 1;
        for (int n = 0; n < 256; n += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    const float dl = d_all * (float)q3k_scale(sc, is++);
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        const int v = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
                        *y++ = dl * (float)v;
                    }
                }
                m = (uint8_t)(m << 1);
            }
            q += 32;
        }
    }
}

static void dq_q4_K(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 144) {
        const float d = quant_rdh(b), dmin = quant_rdh(b + 2);
        const uint8_t *scales = b + 4, *q = b + 16;
        for (int j = 0; j < 8; j += 2, q += 32) {
            uint8_t sc, m;
            quant_scale_min_k4(j, scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            quant_scale_min_k4(j + 1, scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

static void dq_q5_K(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 176) {
        const float d = quant_rdh(b), dmin = quant_rdh(b + 2);
        const uint8_t *scales = b + 4, *qh = b + 16, *ql = b + 48;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < 8; j += 2, ql += 32) {
            uint8_t sc, m;
            quant_scale_min_k4(j, scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            quant_scale_min_k4(j + 1, scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
            u1 = (uint8_t)(u1 << 2); u2 = (uint8_t)(u2 << 2);
        }
    }
}

static void dq_q6_K(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 210) {
        const float d = quant_rdh(b + 208);
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(const void *)(b + 192);
        for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8, y += 128) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                y[l] = d * (float)sc[is] * (float)q1;
                y[l + 32] = d * (float)sc[is + 2] * (float)q2;
                y[l + 64] = d * (float)sc[is + 4] * (float)q3;
                y[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

static void dq_iq4_xs(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 136) {
        const float d = quant_rdh(b);
        const uint16_t sh = quant_rd16(b + 2);
        const uint8_t *sl = b + 4, *qs = b + 8;
        for (int ib = 0; ib < 8; ib++, qs += 16, y += 32) {
            const int ls = ((sl[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((sh >> 2 * ib) & 3) << 4);
            const float dl = d * (float)(ls - 32);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * (float)KVALUES_IQ4NL[qs[j] & 0xf];
                y[j + 16] = dl * (float)KVALUES_IQ4NL[qs[j] >> 4];
            }
        }
    }
}

static void dq_q8_K(const uint8_t *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, b += 292, y += 256) {
        float d;
        memcpy(&d, b, 4);
        const int8_t *qs = (const int8_t *)(const void *)(b + 4);
        for (int j = 0; j < 256; j++) y[j] = d * (float)qs[j];
    }
}

int quant_can_dequant(uint32_t type) {
    switch (type) {
    case G4_TYPE_F32: case G4_TYPE_F16: case G4_TYPE_BF16:
    case G4_TYPE_Q4_0: case G4_TYPE_Q4_1: case G4_TYPE_Q5_0: case G4_TYPE_Q5_1:
    case G4_TYPE_Q8_0: case G4_TYPE_Q8_1: case G4_TYPE_IQ4_NL:
    case G4_TYPE_Q2_K: case G4_TYPE_Q3_K: case G4_TYPE_Q4_K: case G4_TYPE_Q5_K:
    case G4_TYPE_Q6_K: case G4_TYPE_IQ4_XS: case G4_TYPE_Q8_K:
        return 1;
    default:
        return 0;
    }
}

void quant_dequant_row(uint32_t type, const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    switch (type) {
    case G4_TYPE_F32: memcpy(dst, src, (size_t)n * 4); return;
    case G4_TYPE_F16: for (int64_t i = 0; i < n; i++) dst[i] = g4_f16_to_f32(quant_rd16(b + 2 * i)); return;
    case G4_TYPE_BF16: for (int64_t i = 0; i < n; i++) dst[i] = g4_bf16_to_f32(quant_rd16(b + 2 * i)); return;
    case G4_TYPE_Q4_0: dq_q4_0(b, dst, n / 32); return;
    case G4_TYPE_Q4_1: dq_q4_1(b, dst, n / 32); return;
    case G4_TYPE_Q5_0: dq_q5_0(b, dst, n / 32); return;
    case G4_TYPE_Q5_1: dq_q5_1(b, dst, n / 32); return;
    case G4_TYPE_Q8_0: dq_q8(b, dst, n / 32, 34, 2); return;
    case G4_TYPE_Q8_1: dq_q8(b, dst, n / 32, 36, 4); return;
    case G4_TYPE_IQ4_NL: dq_iq4_nl(b, dst, n / 32); return;
    case G4_TYPE_Q2_K: dq_q2_K(b, dst, n / 256); return;
    case G4_TYPE_Q3_K: dq_q3_K(b, dst, n / 256); return;
    case G4_TYPE_Q4_K: dq_q4_K(b, dst, n / 256); return;
    case G4_TYPE_Q5_K: dq_q5_K(b, dst, n / 256); return;
    case G4_TYPE_Q6_K: dq_q6_K(b, dst, n / 256); return;
    case G4_TYPE_IQ4_XS: dq_iq4_xs(b, dst, n / 256); return;
    case G4_TYPE_Q8_K: dq_q8_K(b, dst, n / 256); return;
    default: memset(dst, 0, (size_t)n * sizeof *dst); return;
    }
}

/* ==== Weight quantizers: 32-element formats (ggml quantize_row_*_ref) ==== */

static void q_q8_0(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32, y += 34) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) { const float a = fabsf(x[j]); amax = amax > a ? amax : a; }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wrh(y, d);
        for (int j = 0; j < 32; j++) y[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
    }
}

/* signed value with the largest |x| (first on ties) */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
    }
    return max;
}

static void q_q4_0(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32, y += 18) {
        const float max = signed_absmax(x, 32);
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wrh(y, d);
        for (int j = 0; j < 16; j++) {
            const int a = imin(15, (int8_t)(x[j] * id + 8.5f));
            const int c = imin(15, (int8_t)(x[j + 16] * id + 8.5f));
            y[2 + j] = (uint8_t)(a | c << 4);
        }
    }
}

static void minmax(const float *x, int n, float *mn, float *mx) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *mn = lo; *mx = hi;
}

static void q_q4_1(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32, y += 20) {
        float min, max;
        minmax(x, 32, &min, &max);
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wrh(y, d);
        wrh(y + 2, min);
        for (int j = 0; j < 16; j++) {
            const int a = imin(15, (int8_t)((x[j] - min) * id + 0.5f));
            const int c = imin(15, (int8_t)((x[j + 16] - min) * id + 0.5f));
            y[4 + j] = (uint8_t)(a | c << 4);
        }
    }
}

static void wr32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static void q_q5_0(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32, y += 22) {
        const float max = signed_absmax(x, 32);
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wrh(y, d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const unsigned a = (unsigned)imin(31, (int8_t)(x[j] * id + 16.5f));
            const unsigned c = (unsigned)imin(31, (int8_t)(x[j + 16] * id + 16.5f));
            y[6 + j] = (uint8_t)((a & 0x0F) | (c & 0x0F) << 4);
            qh |= ((a & 0x10u) >> 4) << j;
            qh |= ((c & 0x10u) >> 4) << (j + 16);
        }
        wr32(y + 2, qh);
    }
}

static void q_q5_1(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32, y += 24) {
        float min, max;
        minmax(x, 32, &min, &max);
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wrh(y, d);
        wrh(y + 2, min);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const unsigned a = (uint8_t)((x[j] - min) * id + 0.5f);
            const unsigned c = (uint8_t)((x[j + 16] - min) * id + 0.5f);
            y[8 + j] = (uint8_t)((a & 0x0F) | (c & 0x0F) << 4);
            qh |= ((a & 0x10u) >> 4) << j;
            qh |= ((c & 0x10u) >> 4) << (j + 16);
        }
        wr32(y + 4, qh);
    }
}

/* nearest IQ4_NL code-book index for v (ties to the lower index) */
static int iq4_best_index(float v) {
    int best = 0;
    float berr = fabsf(v - (float)KVALUES_IQ4NL[0]);
    for (int k = 1; k < 16; k++) {
        const float e = fabsf(v - (float)KVALUES_IQ4NL[k]);
        if (e < berr) { berr = e; best = k; }
    }
    return best;
}

/* Own encoder: least-squares scale over a small set of candidate inverse scales (both
 * signs, since the code book is asymmetric). Returns the scale; idx[n] the codes for it. */
static float iq4_search(const float *x, int n, uint8_t *idx) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) if (fabsf(x[j]) > amax) amax = fabsf(x[j]);
    if (amax < GROUP_MAX_EPS) {
        for (int j = 0; j < n; j++) idx[j] = 8;
        return 0.0f;
    }
    float best_d = 0.0f;
    double best_err = 1e300;
    uint8_t cand[32];
    for (int sgn = -1; sgn <= 1; sgn += 2) {
        for (int t = 0; t <= 14; t++) {
            const float id = (float)sgn * (99.0f + 2.0f * (float)t) / amax;
            double sxk = 0, skk = 0;
            for (int j = 0; j < n; j++) {
                cand[j] = (uint8_t)iq4_best_index(x[j] * id);
                const double k = KVALUES_IQ4NL[cand[j]];
                sxk += (double)x[j] * k;
                skk += k * k;
            }
            const float d = skk > 0 ? (float)(sxk / skk) : 0.0f;
            double err = 0;
            for (int j = 0; j < n; j++) {
                const double e = (double)x[j] - (double)d * KVALUES_IQ4NL[cand[j]];
                err += e * e;
            }
            if (err < best_err) { best_err = err; best_d = d; memcpy(idx, cand, (size_t)n); }
        }
    }
    return best_d;
}

static void iq4_requant(const float *x, int n, float d, uint8_t *idx) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < n; j++) idx[j] = (uint8_t)(d != 0.0f ? iq4_best_index(x[j] * id) : 8);
}

static void q_iq4_nl(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32, y += 18) {
        uint8_t idx[32];
        const float d = iq4_search(x, 32, idx);
        const uint16_t dh = g4_f32_to_f16(d);
        wr16(y, dh);
        iq4_requant(x, 32, g4_f16_to_f32(dh), idx);
        for (int j = 0; j < 16; j++) y[2 + j] = (uint8_t)(idx[j] | idx[j + 16] << 4);
    }
}

static void q_iq4_xs(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 256, y += 136) {
        uint8_t idx[32];
        float sc[8], amax = 0.0f, max = 0.0f;
        for (int b = 0; b < 8; b++) {
            sc[b] = iq4_search(x + 32 * b, 32, idx);
            if (fabsf(sc[b]) > amax) { amax = fabsf(sc[b]); max = sc[b]; }
        }
        memset(y, 0, 136);
        const float d = amax < GROUP_MAX_EPS ? 0.0f : max / -32.0f;
        const uint16_t dh = g4_f32_to_f16(d);
        const float df = g4_f16_to_f32(dh);
        const float id = df != 0.0f ? 1.0f / df : 0.0f;
        wr16(y, dh);
        uint16_t sh = 0;
        for (int b = 0; b < 8; b++) {
            const int l = imax(-32, imin(31, quant_nearest_int(id * sc[b])));
            const int ls = l + 32;
            y[4 + b / 2] |= (uint8_t)((ls & 0xF) << 4 * (b % 2));
            sh |= (uint16_t)((ls >> 4) << 2 * b);
            iq4_requant(x + 32 * b, 32, df * (float)l, idx);
            for (int j = 0; j < 16; j++) y[8 + 16 * b + j] = (uint8_t)(idx[j] | idx[j + 16] << 4);
        }
        wr16(y + 2, sh);
    }
}

/* ==== Weight quantizers: super-blocks (ggml make_qx_quants / make_qkx2_quants) ==== */

/* Signed symmetric search, L[i] in [0, 2*nmax). ggml make_qx_quants with qw == NULL,
 * rmse_type 1 (weights x^2). */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = quant_nearest_int(iscale * x[i]);
        l = imax(-nmax, imin(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = quant_nearest_int(iscale * x[i]);
            l = imax(-nmax, imin(nmax - 1, l));
            const float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                const int l = quant_nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + imax(-nmax, imin(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Weighted least-squares x ~ scale*L + mn, L in [0, nmax], mn <= 0; returns scale, *the_min
 * = -mn. use_mad: absolute instead of squared error (Q2_K). */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *w, uint8_t *L,
                              float *the_min, float rmin, float rdelta, int nstep, int use_mad) {
    uint8_t Laux[32];
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; i++) L[i] = 0;
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        const int l = quant_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)imax(0, imin(nmax, l));
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = quant_nearest_int(iscale * (x[i] - min));
            l = imax(0, imin(nmax, l));
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += w[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* Q4_K (nmax 15) and Q5_K (nmax 31): quantize_row_q4_K_ref / quantize_row_q5_K_ref */
static void q_q45_K(const float *x, uint8_t *y, int64_t nb, int nmax) {
    const size_t bytes = nmax == 15 ? 144 : 176;
    for (int64_t i = 0; i < nb; i++, x += 256, y += bytes) {
        uint8_t L[256];
        float w[32], mins[8], scales[8];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) {
            float sum_x2 = 0;
            for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
            const float av_x = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(x[32 * j + l]);
            scales[j] = nmax == 15
                ? make_qkx2_quants(32, 15, x + 32 * j, w, L + 32 * j, &mins[j], -1.0f, 0.1f, 20, 0)
                : make_qkx2_quants(32, 31, x + 32 * j, w, L + 32 * j, &mins[j], -0.5f, 0.1f, 15, 0);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
        const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
        uint8_t *sc = y + 4;
        for (int j = 0; j < 8; j++) {
            uint8_t ls = (uint8_t)quant_nearest_int(inv_scale * scales[j]);
            uint8_t lm = (uint8_t)quant_nearest_int(inv_min * mins[j]);
            ls = (uint8_t)imin(63, ls);
            lm = (uint8_t)imin(63, lm);
            if (j < 4) {
                sc[j] = ls;
                sc[j + 4] = lm;
            } else {
                sc[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
                sc[j - 4] |= (uint8_t)((ls >> 4) << 6);
                sc[j] |= (uint8_t)((lm >> 4) << 6);
            }
        }
        wrh(y, max_scale / 63.0f);
        wrh(y + 2, max_min / 63.0f);
        const float df = quant_rdh(y), dminf = quant_rdh(y + 2);
        for (int j = 0; j < 8; j++) {
            uint8_t s, m;
            quant_scale_min_k4(j, sc, &s, &m);
            const float d = df * (float)s;
            if (d == 0.0f) continue;
            const float dm = dminf * (float)m;
            for (int ii = 0; ii < 32; ii++) {
                const int l = quant_nearest_int((x[32 * j + ii] + dm) / d);
                L[32 * j + ii] = (uint8_t)imax(0, imin(nmax, l));
            }
        }
        if (nmax == 15) {
            uint8_t *q = y + 16;
            for (int j = 0; j < 256; j += 64, q += 32)
                for (int l = 0; l < 32; l++) q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
        } else {
            uint8_t *qh = y + 16, *ql = y + 48;
            memset(qh, 0, 32);
            uint8_t m1 = 1, m2 = 2;
            for (int n = 0; n < 256; n += 64, ql += 32) {
                for (int j = 0; j < 32; j++) {
                    int l1 = L[n + j], l2 = L[n + j + 32];
                    if (l1 > 15) { l1 -= 16; qh[j] |= m1; }
                    if (l2 > 15) { l2 -= 16; qh[j] |= m2; }
                    ql[j] = (uint8_t)(l1 | l2 << 4);
                }
                m1 = (uint8_t)(m1 << 2); m2 = (uint8_t)(m2 << 2);
            }
        }
    }
}

static void q_q6_K(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 256, y += 210) {
        int8_t L[256];
        float scales[16];
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < 16; ib++) {
            const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            if (fabsf(scale) > max_abs_scale) { max_abs_scale = fabsf(scale); max_scale = scale; }
        }
        if (max_abs_scale < GROUP_MAX_EPS) {
            memset(y, 0, 210);
            continue;
        }
        const float iscale = -128.0f / max_scale;
        wrh(y + 208, 1 / iscale);
        int8_t *sc = (int8_t *)(void *)(y + 192);
        for (int ib = 0; ib < 16; ib++) sc[ib] = (int8_t)imin(127, quant_nearest_int(iscale * scales[ib]));
        const float df = quant_rdh(y + 208);
        for (int j = 0; j < 16; j++) {
            const float d = df * (float)sc[j];
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ii++) {
                const int l = quant_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)(imax(-32, imin(31, l)) + 32);
            }
        }
        uint8_t *ql = y, *qh = y + 128;
        for (int j = 0; j < 256; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; l++) {
                const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
                const int q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | q3 << 4);
                ql[l + 32] = (uint8_t)(q2 | q4 << 4);
                qh[l] = (uint8_t)((L[j + l] >> 4) | (L[j + l + 32] >> 4) << 2 |
                                  (L[j + l + 64] >> 4) << 4 | (L[j + l + 96] >> 4) << 6);
            }
        }
    }
}

/* Q2_K: ggml's scheme (asymmetric 2-bit per 16 elements, 4-bit scales and mins). */
static void q_q2_K(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 256, y += 84) {
        uint8_t L[256];
        float w[16], mins[16], scales[16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, 1);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        uint8_t *sc = y;
        memset(sc, 0, 16);
        if (max_scale > 0) {
            const float iscale = 15.0f / max_scale;
            for (int j = 0; j < 16; j++) sc[j] = (uint8_t)imin(15, quant_nearest_int(iscale * scales[j]));
            wrh(y + 80, max_scale / 15.0f);
        } else {
            wrh(y + 80, 0.0f);
        }
        if (max_min > 0) {
            const float iscale = 15.0f / max_min;
            for (int j = 0; j < 16; j++) sc[j] |= (uint8_t)(imin(15, quant_nearest_int(iscale * mins[j])) << 4);
            wrh(y + 82, max_min / 15.0f);
        } else {
            wrh(y + 82, 0.0f);
        }
        const float df = quant_rdh(y + 80), dminf = quant_rdh(y + 82);
        for (int j = 0; j < 16; j++) {
            const float d = df * (float)(sc[j] & 0xF);
            if (d == 0.0f) continue;
            const float dm = dminf * (float)(sc[j] >> 4);
            for (int ii = 0; ii < 16; ii++) {
                const int l = quant_nearest_int((x[16 * j + ii] + dm) / d);
                L[16 * j + ii] = (uint8_t)imax(0, imin(3, l));
            }
        }
        uint8_t *qs = y + 16;
        for (int j = 0; j < 256; j += 128)
            for (int l = 0; l < 32; l++)
                qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
    }
}

/* Q3_K: signed 3-bit per element (-4..3), signed 6-bit scales per 16, weighted search. */
static void q_q3_K(const float *x, uint8_t *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 256, y += 110) {
        int8_t L[256];
        float scales[16], max_scale = 0, amax = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) { amax = fabsf(scales[j]); max_scale = scales[j]; }
        }
        memset(y, 0, 110);
        uint8_t *hm = y, *qs = y + 32, *sc = y + 96;
        if (amax >= GROUP_MAX_EPS) {
            const float iscale = -32.0f / max_scale;
            for (int j = 0; j < 16; j++) {
                const int l = imax(-32, imin(31, quant_nearest_int(iscale * scales[j]))) + 32;
                if (j < 8) sc[j] = (uint8_t)(l & 0xF);
                else sc[j - 8] |= (uint8_t)((l & 0xF) << 4);
                sc[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            wrh(y + 108, 1 / iscale);
        }
        const float df = quant_rdh(y + 108);
        for (int j = 0; j < 16; j++) {
            const float d = df * (float)q3k_scale(sc, j);
            if (d == 0.0f) {
                for (int ii = 0; ii < 16; ii++) L[16 * j + ii] = 4; /* value 0 */
                continue;
            }
            for (int ii = 0; ii < 16; ii++) {
                const int l = quant_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)(imax(-4, imin(3, l)) + 4);
            }
        }
        /* element e: low bits in qs[32c + p] >> 2j, high bit (1 = no -4) in hmask[p] bit 4c+j */
        for (int e = 0; e < 256; e++) {
            const int c = e / 128, jj = (e % 128) / 32, p = e % 32;
            const int v = L[e];
            qs[32 * c + p] |= (uint8_t)((v & 3) << (2 * jj));
            if (v > 3) hm[p] |= (uint8_t)(1u << (4 * c + jj));
        }
    }
}

int quant_can_quantize(uint32_t type) {
    switch (type) {
    case G4_TYPE_F32: case G4_TYPE_F16: case G4_TYPE_BF16:
    case G4_TYPE_Q4_0: case G4_TYPE_Q4_1: case G4_TYPE_Q5_0: case G4_TYPE_Q5_1:
    case G4_TYPE_Q8_0: case G4_TYPE_IQ4_NL:
    case G4_TYPE_Q2_K: case G4_TYPE_Q3_K: case G4_TYPE_Q4_K: case G4_TYPE_Q5_K:
    case G4_TYPE_Q6_K: case G4_TYPE_IQ4_XS:
        return 1;
    default:
        return 0;
    }
}

size_t quant_quantize_row(uint32_t type, const float *src, void *dst, int64_t n) {
    if (!quant_can_quantize(type)) return 0;
    const size_t bytes = quant_row_bytes(type, n);
    if (bytes == 0) return 0;
    uint8_t *y = dst;
    switch (type) {
    case G4_TYPE_F32: memcpy(dst, src, (size_t)n * 4); break;
    case G4_TYPE_F16: quant_act_f16(src, dst, n); break;
    case G4_TYPE_BF16: quant_act_bf16(src, dst, n); break;
    case G4_TYPE_Q4_0: q_q4_0(src, y, n / 32); break;
    case G4_TYPE_Q4_1: q_q4_1(src, y, n / 32); break;
    case G4_TYPE_Q5_0: q_q5_0(src, y, n / 32); break;
    case G4_TYPE_Q5_1: q_q5_1(src, y, n / 32); break;
    case G4_TYPE_Q8_0: q_q8_0(src, y, n / 32); break;
    case G4_TYPE_IQ4_NL: q_iq4_nl(src, y, n / 32); break;
    case G4_TYPE_Q2_K: q_q2_K(src, y, n / 256); break;
    case G4_TYPE_Q3_K: q_q3_K(src, y, n / 256); break;
    case G4_TYPE_Q4_K: q_q45_K(src, y, n / 256, 15); break;
    case G4_TYPE_Q5_K: q_q45_K(src, y, n / 256, 31); break;
    case G4_TYPE_Q6_K: q_q6_K(src, y, n / 256); break;
    case G4_TYPE_IQ4_XS: q_iq4_xs(src, y, n / 256); break;
    default: return 0;
    }
    return bytes;
}

/* ==== Activation quantizers (quant-formats.md §5.2-5.3) ==== */

void quant_act_f32(const float *x, void *y, int64_t n) { memcpy(y, x, (size_t)n * sizeof *x); }

void quant_act_f16(const float *x, void *y, int64_t n) {
    uint8_t *o = y;
    for (int64_t i = 0; i < n; i++) wr16(o + 2 * i, g4_f32_to_f16(x[i]));
}

void quant_act_bf16(const float *x, void *y, int64_t n) {
    uint8_t *o = y;
    for (int64_t i = 0; i < n; i++) wr16(o + 2 * i, g4_f32_to_bf16(x[i]));
}

/* Q8_0 / Q8_1 activations over nb blocks of 32 (bytes each; with_sum: Q8_1's s = fp16(d * sum)),
 * in one of three conventions, d = amax / 127 in all:
 *   ACT_X86  id = 127/amax, round half to even (llama.cpp's x86 quantize_row_q8_0/q8_1)
 *   ACT_ARM  id = 1/d, round half to even (arch/arm/quants.c, NEON vcvtnq)
 *   ACT_REF  id = 1/d, roundf (the scalar reference quantize_row_q8_0_ref) */
enum { ACT_X86, ACT_ARM, ACT_REF };
static void act_q8(const float *x, uint8_t *y, int64_t nb, size_t bytes, int with_sum, int conv) {
    const size_t off = with_sum ? 4 : 2;
    for (int64_t i = 0; i < nb; i++, x += 32, y += bytes) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) { const float a = fabsf(x[j]); amax = amax > a ? amax : a; }
        const float d = amax / 127.0f;
        const float id = conv == ACT_X86 ? (amax != 0.0f ? 127.0f / amax : 0.0f) : (d != 0.0f ? 1.0f / d : 0.0f);
        wrh(y, d);
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            const int q = conv == ACT_REF ? (int)roundf(x[j] * id) : quant_nearest_int(x[j] * id);
            y[off + j] = (uint8_t)(int8_t)q;
            sum += q;
        }
        if (with_sum) wrh(y + 2, d * (float)sum);
    }
}

void quant_act_q8_0(const float *x, void *y, int64_t n) { act_q8(x, y, n / 32, 34, 0, ACT_X86); }
void quant_act_q8_0_arm(const float *x, void *y, int64_t n) { act_q8(x, y, n / 32, 34, 0, ACT_ARM); }
void quant_act_q8_1_arm(const float *x, void *y, int64_t n) { act_q8(x, y, n / 32, 36, 1, ACT_ARM); }
void quant_act_q8_0_ref(const float *x, void *y, int64_t n) { act_q8(x, y, n / 32, 34, 0, ACT_REF); }
void quant_act_q8_1(const float *x, void *y, int64_t n) { act_q8(x, y, n / 32, 36, 1, ACT_X86); }
void quant_act_q8_1_ref(const float *x, void *y, int64_t n) { act_q8(x, y, n / 32, 36, 1, ACT_REF); }

void quant_act_q8_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t i = 0; i < n / 256; i++, x += 256, y += 292) {
        int8_t *qs = (int8_t *)(void *)(y + 4);
        float max = 0, amax = 0;
        for (int j = 0; j < 256; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) { amax = ax; max = x[j]; }
        }
        if (amax == 0.0f) {
            memset(y, 0, 292);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < 256; j++) qs[j] = (int8_t)imin(127, quant_nearest_int(iscale * x[j]));
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int k = 0; k < 16; k++) sum += qs[16 * g + k];
            const int16_t s16 = (int16_t)sum;
            memcpy(y + 260 + 2 * g, &s16, 2);
        }
        const float d = 1 / iscale;
        memcpy(y, &d, 4);
    }
}

/* ==== fp16 arithmetic (llama.cpp's arm64 F16 kernels: vfmaq_f16 / vaddq_f16) ==== */

/* a + b = s + e exactly (TwoSum; this file is built without FP contraction) */
static inline void two_sum(float a, float b, float *s, float *e) {
    const float t = a + b, bb = t - a;
    *s = t;
    *e = (a - (t - bb)) + (b - bb);
}

/* the exact value s + e (0 < |e| <= ulp(s) / 2) rounded once to f16, half to even: as s,
 * unless s is itself a boundary (halfway between two f16 values): then as the float next to s
 * on e's side, which is none (boundaries are 2^12 floats apart) and lies on the same side */
static uint16_t f16_round2(float s, float e) {
    const uint16_t h = g4_f32_to_f16(s);
    if (e == 0.0f || !isfinite(s)) return h;
    const float a = fabsf(s), hf = g4_f16_to_f32((uint16_t)(h & 0x7fffu));
    const uint16_t m = (uint16_t)(h & 0x7fffu);
    int tie;
    if (m == 0x7c00u) tie = a == 65520.0f; /* halfway between 65504 and the first step past it */
    else if (hf == a) tie = 0;
    else tie = fabsf(a - hf) == fabsf(g4_f16_to_f32((uint16_t)(a > hf ? m + 1 : m - 1)) - a);
    return tie ? g4_f32_to_f16(nextafterf(s, e > 0.0f ? INFINITY : -INFINITY)) : h;
}

static uint16_t h_fma(uint16_t a, uint16_t b, uint16_t c) { /* c + a*b; the product is exact in f32 */
    float s, e;
    two_sum(g4_f16_to_f32(a) * g4_f16_to_f32(b), g4_f16_to_f32(c), &s, &e);
    return f16_round2(s, e);
}

static uint16_t h_add(uint16_t a, uint16_t b) {
    float s, e;
    two_sum(g4_f16_to_f32(a), g4_f16_to_f32(b), &s, &e);
    return f16_round2(s, e);
}

float quant_dot_f16_fp16(const void *vw, const void *vx, int64_t n, int tb) {
    const uint8_t *w = vw, *x = vx;
    const int lanes = tb ? 8 : 32;
    uint16_t acc[32] = { 0 }, r[8];
    const int64_t np = n - n % lanes;
    for (int64_t i = 0; i < np; i++)
        acc[i % lanes] = h_fma(quant_rd16(w + 2 * i), quant_rd16(x + 2 * i), acc[i % lanes]);
    for (int l = 0; l < 8; l++) r[l] = tb ? acc[l] : h_add(h_add(acc[l], acc[16 + l]), h_add(acc[8 + l], acc[24 + l]));
    float q[4];
    for (int l = 0; l < 4; l++) q[l] = g4_f16_to_f32(r[l]) + g4_f16_to_f32(r[l + 4]);
    double s = (double)((q[0] + q[1]) + (q[2] + q[3]));
    for (int64_t i = np; i < n; i++) s += (double)(quant_rdh(w + 2 * i) * quant_rdh(x + 2 * i));
    return (float)s;
}

/* ==== Dot products (quant-formats.md §5.4) ==== */

static inline float rdf32(const uint8_t *p) { float f; memcpy(&f, p, 4); return f; }
static inline int16_t rdi16(const uint8_t *p) { return (int16_t)quant_rd16(p); }

static float dot_q4_0(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 18, a += 34) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 2);
        int sumi = 0;
        for (int j = 0; j < 16; j++)
            sumi += ((w[2 + j] & 0xF) - 8) * qa[j] + ((w[2 + j] >> 4) - 8) * qa[j + 16];
        s += (float)sumi * (quant_rdh(w) * quant_rdh(a));
    }
    return s;
}

static float dot_q4_1(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 20, a += 36) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        int sumi = 0;
        for (int j = 0; j < 16; j++) sumi += (w[4 + j] & 0xF) * qa[j] + (w[4 + j] >> 4) * qa[j + 16];
        s += (float)sumi * (quant_rdh(w) * quant_rdh(a)) + quant_rdh(w + 2) * quant_rdh(a + 2);
    }
    return s;
}

static float dot_q5_0(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 22, a += 34) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 2);
        const uint32_t qh = quant_rd32(w + 2);
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            const int q0 = ((w[6 + j] & 0xF) | (int)((qh >> j) & 1) << 4) - 16;
            const int q1 = ((w[6 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) - 16;
            sumi += q0 * qa[j] + q1 * qa[j + 16];
        }
        s += (float)sumi * (quant_rdh(w) * quant_rdh(a));
    }
    return s;
}

static float dot_q5_1(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 24, a += 36) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        const uint32_t qh = quant_rd32(w + 4);
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            const int q0 = (w[8 + j] & 0xF) | (int)((qh >> j) & 1) << 4;
            const int q1 = (w[8 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            sumi += q0 * qa[j] + q1 * qa[j + 16];
        }
        s += (float)sumi * (quant_rdh(w) * quant_rdh(a)) + quant_rdh(w + 2) * quant_rdh(a + 2);
    }
    return s;
}

static float dot_q8_0(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 34, a += 34) {
        const int8_t *qw = (const int8_t *)(const void *)(w + 2), *qa = (const int8_t *)(const void *)(a + 2);
        int sumi = 0;
        for (int j = 0; j < 32; j++) sumi += qw[j] * qa[j];
        s += (float)sumi * (quant_rdh(w) * quant_rdh(a));
    }
    return s;
}

static float dot_iq4_nl(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 18, a += 34) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 2);
        int sumi = 0;
        for (int j = 0; j < 16; j++)
            sumi += KVALUES_IQ4NL[w[2 + j] & 0xF] * qa[j] + KVALUES_IQ4NL[w[2 + j] >> 4] * qa[j + 16];
        s += (float)sumi * (quant_rdh(w) * quant_rdh(a));
    }
    return s;
}

static float dot_q2_K(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 84, a += 292) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        const uint8_t *sc = w, *qs = w + 16;
        int isum = 0, summs = 0;
        for (int g = 0; g < 16; g++) summs += (sc[g] >> 4) * rdi16(a + 260 + 2 * g);
        for (int g = 0; g < 16; g++) {
            int gs = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                const int c = e / 128, j = (e % 128) / 32, p = e % 32;
                gs += ((qs[32 * c + p] >> (2 * j)) & 3) * qa[e];
            }
            isum += (sc[g] & 0xF) * gs;
        }
        const float da = rdf32(a);
        s += da * quant_rdh(w + 80) * (float)isum - da * quant_rdh(w + 82) * (float)summs;
    }
    return s;
}

static float dot_q3_K(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 110, a += 292) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        const uint8_t *hm = w, *qs = w + 32, *sc = w + 96;
        int isum = 0;
        for (int g = 0; g < 16; g++) {
            int gs = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                const int c = e / 128, j = (e % 128) / 32, p = e % 32;
                const int q = (qs[32 * c + p] >> (2 * j)) & 3;
                const int h = (hm[p] >> (4 * c + j)) & 1;
                gs += (h ? q : q - 4) * qa[e];
            }
            isum += q3k_scale(sc, g) * gs;
        }
        s += rdf32(a) * quant_rdh(w + 108) * (float)isum;
    }
    return s;
}

/* Q4_K (qh NULL) and Q5_K */
static float dot_q45_K(const uint8_t *w, const uint8_t *a, int64_t nb, int q5) {
    float s = 0;
    const size_t bytes = q5 ? 176 : 144;
    for (int64_t i = 0; i < nb; i++, w += bytes, a += 292) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        const uint8_t *scales = w + 4, *qh = w + 16, *qs = w + (q5 ? 48 : 16);
        int isum = 0, summs = 0;
        for (int sb = 0; sb < 8; sb++) {
            uint8_t sc, m;
            quant_scale_min_k4(sb, scales, &sc, &m);
            summs += m * (rdi16(a + 260 + 4 * sb) + rdi16(a + 262 + 4 * sb));
            const int k = sb / 2, hi = sb % 2;
            int ss = 0;
            for (int p = 0; p < 32; p++) {
                int q = hi ? qs[32 * k + p] >> 4 : qs[32 * k + p] & 0xF;
                if (q5) q += 16 * ((qh[p] >> sb) & 1);
                ss += q * qa[32 * sb + p];
            }
            isum += sc * ss;
        }
        const float da = rdf32(a);
        s += da * quant_rdh(w) * (float)isum - da * quant_rdh(w + 2) * (float)summs;
    }
    return s;
}

static float dot_q6_K(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 210, a += 292) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(const void *)(w + 192);
        int isum = 0;
        for (int g = 0; g < 16; g++) {
            int gs = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                const int c = e / 128, r = e % 128, t = r / 32, l = r % 32;
                const int lo = t & 1 ? ql[64 * c + 32 + l] : ql[64 * c + l];
                const int low = t < 2 ? lo & 0xF : lo >> 4;
                const int high = (qh[32 * c + l] >> (2 * t)) & 3;
                gs += ((low | high << 4) - 32) * qa[e];
            }
            isum += sc[g] * gs;
        }
        s += rdf32(a) * quant_rdh(w + 208) * (float)isum;
    }
    return s;
}

static float dot_iq4_xs(const uint8_t *w, const uint8_t *a, int64_t nb) {
    float s = 0;
    for (int64_t i = 0; i < nb; i++, w += 136, a += 292) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        const uint16_t sh = quant_rd16(w + 2);
        const uint8_t *sl = w + 4, *qs = w + 8;
        int isum = 0;
        for (int b = 0; b < 8; b++) {
            const int ls = ((sl[b / 2] >> 4 * (b % 2)) & 0xF) | (((sh >> 2 * b) & 3) << 4);
            int bs = 0;
            for (int j = 0; j < 16; j++)
                bs += KVALUES_IQ4NL[qs[16 * b + j] & 0xF] * qa[32 * b + j] +
                      KVALUES_IQ4NL[qs[16 * b + j] >> 4] * qa[32 * b + j + 16];
            isum += (ls - 32) * bs;
        }
        s += rdf32(a) * quant_rdh(w) * (float)isum;
    }
    return s;
}

float quant_vec_dot(uint32_t wtype, const void *vw, const void *vxq, int64_t n) {
    const uint8_t *w = vw, *a = vxq;
    switch (wtype) {
    case G4_TYPE_F32: {
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += (double)rdf32(w + 4 * i) * (double)rdf32(a + 4 * i);
        return (float)s;
    }
    case G4_TYPE_F16: {
        double s = 0;
        for (int64_t i = 0; i < n; i++)
            s += (double)(g4_f16_to_f32(quant_rd16(w + 2 * i)) * g4_f16_to_f32(quant_rd16(a + 2 * i)));
        return (float)s;
    }
    case G4_TYPE_BF16: {
        double s = 0;
        for (int64_t i = 0; i < n; i++)
            s += (double)(g4_bf16_to_f32(quant_rd16(w + 2 * i)) * g4_bf16_to_f32(quant_rd16(a + 2 * i)));
        return (float)s;
    }
    case G4_TYPE_Q4_0: return dot_q4_0(w, a, n / 32);
    case G4_TYPE_Q4_1: return dot_q4_1(w, a, n / 32);
    case G4_TYPE_Q5_0: return dot_q5_0(w, a, n / 32);
    case G4_TYPE_Q5_1: return dot_q5_1(w, a, n / 32);
    case G4_TYPE_Q8_0: return dot_q8_0(w, a, n / 32);
    case G4_TYPE_IQ4_NL: return dot_iq4_nl(w, a, n / 32);
    case G4_TYPE_Q2_K: return dot_q2_K(w, a, n / 256);
    case G4_TYPE_Q3_K: return dot_q3_K(w, a, n / 256);
    case G4_TYPE_Q4_K: return dot_q45_K(w, a, n / 256, 0);
    case G4_TYPE_Q5_K: return dot_q45_K(w, a, n / 256, 1);
    case G4_TYPE_Q6_K: return dot_q6_K(w, a, n / 256);
    case G4_TYPE_IQ4_XS: return dot_iq4_xs(w, a, n / 256);
    default: return 0.0f;
    }
}
