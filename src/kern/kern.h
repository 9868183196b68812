/* kern.h - the kernel table: matmul by weight type, activation quantizers, chosen once.
 *
 * Layout contract for every matmul entry:
 *   W  : [n_out] rows of w_row_bytes bytes, each row n_in elements in the GGUF block layout
 *   xq : [n_tok] activation rows of xq_row_bytes bytes, already converted to the weight
 *        type's dot type (quant_traits(type)->dot_type) by quantize_act[dot_type]
 *   y  : y[t*ldy + r] = dot(W row r, activation row t), for r in [row0, row1), t < n_tok
 * n_in is a multiple of the block size (the loader guarantees it). Kernels know nothing
 * about Gemma. Accumulation: per-block integer sums exact, block scaling and accumulation in
 * f32 (order ISA-specific); expected NMSE vs the scalar reference <= 1e-6.
 */
#ifndef G4_KERN_H
#define G4_KERN_H

#include <stddef.h>
#include <stdint.h>

#include "quant/quant.h"

typedef void (*g4_matmul_fn)(float *restrict y, size_t ldy,
                             const uint8_t *restrict w, size_t w_row_bytes,
                             const void *restrict xq, size_t xq_row_bytes,
                             int64_t n_in, int64_t row0, int64_t row1, int n_tok);

/* x[n] f32 -> xq in the dot type's row format (n a multiple of its block size) */
typedef void (*g4_quant_act_fn)(const float *restrict x, void *restrict xq, int64_t n);

typedef struct g4_kern {
    const char     *name;                          /* "scalar", "avx2", "avx512", "neon" */
    g4_matmul_fn    matmul[G4_TYPE_COUNT];         /* by weight type; NULL = not available */
    /* The same product in the float order llama.cpp uses for tokens that its CPU backend
     * multiplies in groups of 4 (a batch's first n - n % 4 tokens; its repacked gemm), where
     * that differs from matmul's (decode) order; NULL = use matmul. */
    g4_matmul_fn    matmul_grp[G4_TYPE_COUNT];
    g4_quant_act_fn quantize_act[G4_TYPE_COUNT];   /* by dot type: F32, F16, BF16, Q8_0, Q8_1, Q8_K */
} g4_kern;

/* Bytes of one activation row of n elements in dot type dt (F32 4n, F16/BF16 2n, Q8_0 34n/32,
 * Q8_1 36n/32, Q8_K 292n/256). */
size_t kern_act_row_bytes(int dt, int64_t n);

/* Chooses the best table for this CPU, or the one named by force (NULL = $G4_ISA or best).
 * Returns NULL with a message when force names a set this CPU or build cannot run. */
const g4_kern *kern_select(const char *force, char *err, size_t errlen);
/* Every table compiled in and runnable here ("scalar" first); for tests and benchmarks. */
int kern_list(const g4_kern **out, int cap);

#endif
