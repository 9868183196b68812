/* kern_neon.h - private to the aarch64 kernel files (kern_neon*.c, all built with
 * -march=armv8.2-a+dotprod+fp16): shared inline helpers, the per-order matmul entries each
 * file exports and the drivers' tile shape.
 *
 * Float orders (what "exact" means here): every entry reproduces one kernel of llama.cpp's
 * arm64 CPU backend (node-llama-cpp 3.22.1, libggml-cpu-armv8.2_2.so: dotprod + fp16
 * vector arithmetic, no SVE/i8mm) bit for bit, so the suffix names the llama.cpp kernel:
 *   _vd    ggml_vec_dot_<type> (arch/arm/quants.c, vec.cpp): one row x one column
 *   _tb    llamafile's tinyBLAS (sgemm.cpp: tinyBLAS_Q0_ARM, tinyBLAS<4, f32>, fp16 <8>)
 *   _rp    the dotprod repacked gemv/gemm (arch/arm/repack.cpp: q4_0/q8_0/iq4_nl 4x4,
 *          q4_K/q5_K 8x4); q6_K's 8x4 gemv (_rpv) and gemm (_rpm) differ
 * Integer block sums are exact however computed (sdot lanes, int32 scale products); the
 * float steps after them are written as the library executes them (built by clang 21, which
 * contracts a*b + c within an expression into one fused operation: fmaf / vfmaq here; an
 * unfused step is its own statement, so no compiler contracts it). kern_neon.c's pick says
 * which entry llama.cpp uses for an op (neon_pick).
 * Tiles: a weight row (block) is decoded once for up to NT tokens.
 */
#ifndef G4_KERN_NEON_H
#define G4_KERN_NEON_H

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kern_isa.h"
#include "quant/quant_ref.h"

#define NT 4 /* tokens per weight pass */
#define NINLINE static inline __attribute__((always_inline))
#define NUNROLL _Pragma("GCC unroll 8")

NINLINE float nh2f(const uint8_t *p) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(quant_rd16(p)))), 0); }
NINLINE float nrdf(const uint8_t *p) { float f; memcpy(&f, p, 4); return f; }
NINLINE int8x16_t nld8(const uint8_t *p) { return vld1q_s8((const int8_t *)(const void *)p); }
/* ARM's vaddvq_f32: (v0 + v1) + (v2 + v3) */
NINLINE float nhsum(float32x4_t v) { return vaddvq_f32(v); }

/* The row loop every entry uses: y[t*ldy + r] for r in [row0, row1), tokens in groups of NT.
 * ROWFN(wr, x, xrb, n, nt, out) fills out[0..nt) for weight row wr and nt tokens at x. */
#define NEON_MM(name, ROWFN)                                                                                \
    void name(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,                 \
              const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1,       \
              int n_tok) {                                                                                  \
        const uint8_t *x = xq;                                                                              \
        for (int64_t r = row0; r < row1; r++) {                                                             \
            const uint8_t *wr = w + (size_t)r * w_row_bytes;                                                \
            for (int t0 = 0; t0 < n_tok; t0 += NT) {                                                        \
                const int nt = n_tok - t0 < NT ? n_tok - t0 : NT;                                           \
                float out[NT];                                                                              \
                const uint8_t *xt = x + (size_t)t0 * xq_row_bytes;                                          \
                switch (nt) {                                                                               \
                case 4: ROWFN(wr, xt, xq_row_bytes, n_in, 4, out); break;                                   \
                case 3: ROWFN(wr, xt, xq_row_bytes, n_in, 3, out); break;                                   \
                case 2: ROWFN(wr, xt, xq_row_bytes, n_in, 2, out); break;                                   \
                default: ROWFN(wr, xt, xq_row_bytes, n_in, 1, out); break;                                  \
                }                                                                                           \
                for (int t = 0; t < nt; t++) y[(size_t)(t0 + t) * ldy + (size_t)r] = out[t];                \
            }                                                                                               \
        }                                                                                                   \
    }

/* The same, and for a single token ROW4FN(w, w_row_bytes, x, n, out) over four rows at a time:
 * out[0..4) for rows w, w + w_row_bytes, ... (decode: one activation load for four rows). */
#define NEON_MM4(name, ROWFN, ROW4FN)                                                                       \
    static __attribute__((noinline)) NEON_MM(name##_rows, ROWFN)                                            \
    void name(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,                 \
              const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1,       \
              int n_tok) {                                                                                  \
        if (n_tok != 1) { name##_rows(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, row0, row1, n_tok); return; } \
        int64_t r = row0;                                                                                   \
        for (; r + 4 <= row1; r += 4) ROW4FN(w + (size_t)r * w_row_bytes, w_row_bytes, (const uint8_t *)xq, n_in, y + r); \
        if (r < row1) name##_rows(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, r, row1, 1);              \
    }

#define NEON_DECL(name)                                                                                     \
    void name(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,                 \
              const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1, int n_tok);

/* kern_neon_b32.c: 32-element block types */
NEON_DECL(neon_q4_0_vd) NEON_DECL(neon_q4_0_tb) NEON_DECL(neon_q4_0_rp)
NEON_DECL(neon_q8_0_vd) NEON_DECL(neon_q8_0_tb) NEON_DECL(neon_q8_0_rp)
NEON_DECL(neon_iq4_nl_vd) NEON_DECL(neon_iq4_nl_rp)
NEON_DECL(neon_q4_1_vd) NEON_DECL(neon_q5_0_vd) NEON_DECL(neon_q5_1_vd)
/* kern_neon_k.c: K-quants and IQ4_XS */
NEON_DECL(neon_q2_K_vd) NEON_DECL(neon_q3_K_vd) NEON_DECL(neon_q4_K_vd) NEON_DECL(neon_q5_K_vd)
NEON_DECL(neon_q6_K_vd) NEON_DECL(neon_iq4_xs_vd)
NEON_DECL(neon_q4_K_rp) NEON_DECL(neon_q5_K_rp) NEON_DECL(neon_q6_K_rpv) NEON_DECL(neon_q6_K_rpm)
/* the same file: the i8mm build's 8x8 orders (gemv, gemm) for the i8mm table (kern_i8mm.c) */
NEON_DECL(neon_q4_K_rpi) NEON_DECL(neon_q5_K_rpi) NEON_DECL(neon_q4_K_rpim) NEON_DECL(neon_q5_K_rpim)
/* kern_i8mm_vd.c: the i8mm table's vec_dot orders for plain weights (armv8.6_1's SVE vec_dot,
 * _sv, and its two-row i8mm vec_dot, _vd2) */
NEON_DECL(i8mm_q4_0_sv) NEON_DECL(i8mm_q8_0_sv) NEON_DECL(i8mm_q2_K_sv)
NEON_DECL(i8mm_q4_0_vd2) NEON_DECL(i8mm_q8_0_vd2) NEON_DECL(i8mm_q4_1_vd2) NEON_DECL(i8mm_q4_K_vd2)
/* kern_neon_f.c: float weights */
NEON_DECL(neon_f32_vd) NEON_DECL(neon_f32_tb) NEON_DECL(neon_f16_vd) NEON_DECL(neon_f16_tb) NEON_DECL(neon_bf16_vd)

/* kern_neon.c: armv8.2_2's kernel choice, the activation quantizers, GeGLU and the softmax
 * exponentials, shared by the neon and i8mm tables */
g4_matmul_fn neon_pick(const g4_kern *k, uint32_t type, int64_t N, int64_t col, int64_t n_in, int64_t n_out, unsigned flags);
void neon_act_f32(const float *restrict x, void *restrict y, int64_t n);
void neon_act_f16(const float *restrict x, void *restrict y, int64_t n);
void neon_act_bf16(const float *restrict x, void *restrict y, int64_t n);
void neon_act_q8_0(const float *restrict x, void *restrict y, int64_t n);
void neon_act_q8_1(const float *restrict x, void *restrict y, int64_t n);
void neon_act_q8_K(const float *restrict x, void *restrict y, int64_t n);
void neon_geglu(float *restrict gate, const float *restrict up, const uint16_t *restrict tab, int64_t n);
double neon_expsum(float *x, int64_t n, int64_t cell0);
double neon_expsum_w(float *x, int64_t n, int64_t cell0, int w); /* w-cell blocks (w = 4: neon_expsum) */
/* kern_neon_tanh.c: the soft-cap with glibc aarch64's tanhf steps (kern_softcap_fdf's bits) */
void neon_softcap(float *y, int64_t n, float c);

/* the tables' one-column (vec_dot) entries and activation quantizers */
#define NEON_MATMUL_VD(f32, f16, q4_0, q8_0, q2_K) {                                                         \
        [G4_TYPE_F32] = f32, [G4_TYPE_F16] = f16, [G4_TYPE_BF16] = neon_bf16_vd,                            \
        [G4_TYPE_Q4_0] = q4_0, [G4_TYPE_Q4_1] = neon_q4_1_vd, [G4_TYPE_Q5_0] = neon_q5_0_vd,                \
        [G4_TYPE_Q5_1] = neon_q5_1_vd, [G4_TYPE_Q8_0] = q8_0, [G4_TYPE_IQ4_NL] = neon_iq4_nl_vd,            \
        [G4_TYPE_Q2_K] = q2_K, [G4_TYPE_Q3_K] = neon_q3_K_vd, [G4_TYPE_Q4_K] = neon_q4_K_vd,        \
        [G4_TYPE_Q5_K] = neon_q5_K_vd, [G4_TYPE_Q6_K] = neon_q6_K_vd, [G4_TYPE_IQ4_XS] = neon_iq4_xs_vd,    \
    }
#define NEON_QUANT_ACT {                                                                                    \
        [G4_TYPE_F32] = neon_act_f32, [G4_TYPE_F16] = neon_act_f16, [G4_TYPE_BF16] = neon_act_bf16,         \
        [G4_TYPE_Q8_0] = neon_act_q8_0, [G4_TYPE_Q8_1] = neon_act_q8_1, [G4_TYPE_Q8_K] = neon_act_q8_K,     \
    }

/* Q4_K/Q5_K 6-bit scales and mins of the 8 sub-blocks (get_scale_min_k4 for all j) */
NINLINE void k4_scales(const uint8_t *q, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t u[3], s[2], m[2];
    memcpy(u, q, 12);
    s[0] = u[0] & 0x3f3f3f3fu;
    s[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    m[0] = u[1] & 0x3f3f3f3fu;
    m[1] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    memcpy(sc, s, 8);
    memcpy(mn, m, 8);
}

#endif
