/* quant_ref.h - scalar reference conversions for every GGUF type gemma4.c reads or writes.
 *
 * These are the oracle every SIMD kernel is tested against (tests/test_quant.c,
 * tests/test_kern.c). Layouts and formulas: shared/docs/quant-formats.md.
 *
 *   dequantize : bit-identical with ggml's dequantize_row_* (evaluation order kept, no FMA;
 *                quant_ref.c is compiled with -ffp-contract=off)
 *   quantize   : F32/F16/BF16/Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K byte-identical with
 *                ggml's quantize_row_*_ref; Q2_K/Q3_K/IQ4_NL/IQ4_XS use own error-minimising
 *                encoders (any valid encoding is readable)
 *   activations: Q8_0/Q8_1 with the x86 SIMD convention (id = 127/amax, round half even),
 *                with the arm64 one (id = 1/d, round half even) and with the scalar-reference
 *                convention (id = 1/d, roundf),
 *                Q8_K as quantize_row_q8_K_ref, F16/BF16 round-to-nearest-even
 *   vec_dot    : every (weight, activation) pair of quant-formats.md §5.1, integer-exact
 *                inner sums, f32 block scaling and accumulation (F16/BF16/F32: double)
 *
 * n is always a multiple of the type's block size (the callers guarantee it). No function
 * here allocates, keeps state or fails on any bit pattern (NaN/Inf scales propagate).
 */
#ifndef G4_QUANT_REF_H
#define G4_QUANT_REF_H

#include <stddef.h>
#include <stdint.h>

#include "quant.h"

/* 1 if quant_dequant_row / quant_vec_dot handle this type (every traits weight=1 type plus
 * Q8_0, Q8_1, Q8_K). */
int quant_can_dequant(uint32_t type);
/* 1 if quant_quantize_row can write this type. */
int quant_can_quantize(uint32_t type);

/* src: n elements of type in GGUF layout -> dst[n] f32. Unsupported type: dst zero-filled. */
void quant_dequant_row(uint32_t type, const void *src, float *dst, int64_t n);

/* src[n] f32 -> dst in type's layout; returns bytes written (quant_row_bytes), or 0 if the
 * type cannot be written or n is not a multiple of the block size (dst untouched). */
size_t quant_quantize_row(uint32_t type, const float *src, void *dst, int64_t n);

/* ==== Activation quantizers: x[n] f32 -> one row of the dot type ==== */
void quant_act_f32(const float *x, void *y, int64_t n);     /* copy */
void quant_act_f16(const float *x, void *y, int64_t n);     /* RNE */
void quant_act_bf16(const float *x, void *y, int64_t n);    /* RNE, NaN quieted */
void quant_act_q8_0(const float *x, void *y, int64_t n);    /* x86 SIMD convention */
void quant_act_q8_0_ref(const float *x, void *y, int64_t n); /* quantize_row_q8_0_ref */
void quant_act_q8_1(const float *x, void *y, int64_t n);    /* x86 SIMD convention */
void quant_act_q8_0_arm(const float *x, void *y, int64_t n); /* arm64 NEON convention */
void quant_act_q8_1_arm(const float *x, void *y, int64_t n); /* arm64 NEON convention */
void quant_act_q8_1_ref(const float *x, void *y, int64_t n); /* quantize_row_q8_1_ref */
void quant_act_q8_K(const float *x, void *y, int64_t n);    /* quantize_row_q8_K_ref */

/* Dot product of one weight row (wtype, n elements) with one activation row already in
 * quant_traits(wtype)->dot_type. 0 for an unsupported type. */
float quant_vec_dot(uint32_t wtype, const void *w, const void *xq, int64_t n);

/* F16 x F16 accumulated in fp16 lanes, every step rounded once to f16 (llama.cpp's arm64
 * fp16 build, vec.cpp ggml_vec_dot_f16 and sgemm.cpp tinyBLAS<8, float16x8_t>): tb = 0: 32
 * lanes (4 x 8) over n - n % 32 elements, reduced (l0 + l2) + (l1 + l3) per lane in fp16;
 * tb = 1: 8 lanes over n - n % 8. Then the 8 lanes widened, (r0+r4, .. r3+r7) summed as
 * (q0 + q1) + (q2 + q3) in f32, the tail as f32 products added to a double. */
float quant_dot_f16_fp16(const void *w, const void *x, int64_t n, int tb);

/* Round half to even for |v| < 2^22 (ggml's nearest_int). */
static inline int quant_nearest_int(float v) {
    float t = v + 12582912.0f;
    union { float f; int32_t i; } u = { t };
    return (u.i & 0x007fffff) - 0x00400000;
}

/* Unaligned little-endian field reads (mapped GGUF rows have no alignment promise). */
static inline uint16_t quant_rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t quant_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline float quant_rdh(const uint8_t *p) { return g4_f16_to_f32(quant_rd16(p)); }

/* Q4_K/Q5_K 6-bit scale and min of sub-block j (get_scale_min_k4). */
static inline void quant_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63; *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m  = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

#endif
