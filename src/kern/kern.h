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

/* gate[i] = gelu(gate[i]) * up[i], ggml's GeGLU with its fp16 GELU table tab[65536]
 * (vec.h ggml_vec_geglu_f32, GGML_GELU_FP16): x <= -10 gives +0, x >= 10 gives x * up, else
 * f32(tab[f16(x)]) * up with f16 rounding to nearest even */
typedef void (*g4_geglu_fn)(float *restrict gate, const float *restrict up, const uint16_t *restrict tab, int64_t n);

typedef struct g4_kern {
    const char     *name;                          /* "scalar", "avx2", "avx512", "neon" */
    g4_matmul_fn    matmul[G4_TYPE_COUNT];         /* by weight type; NULL = not available */
    /* The same product in the float order llama.cpp's CPU backend uses when an op has
     * several activation columns, where that differs from matmul's (one column) order;
     * NULL = use matmul. kern_grp_count says for which tokens. */
    g4_matmul_fn    matmul_grp[G4_TYPE_COUNT];
    g4_quant_act_fn quantize_act[G4_TYPE_COUNT];   /* by dot type: F32, F16, BF16, Q8_0, Q8_1, Q8_K */
    g4_geglu_fn     geglu;                         /* never NULL (kern_geglu_ref at least) */
} g4_kern;

/* the portable GeGLU (the scalar table's; the SIMD ones equal it bit for bit) */
void kern_geglu_ref(float *restrict gate, const float *restrict up, const uint16_t *restrict tab, int64_t n);

/* Whether column col of an op llama.cpp runs on N columns of an n_in x n_out weight takes
 * matmul_grp's float order: float weights (F32/F16/BF16) every column when N >= 2,
 * n_in % 8 == 0 and n_out % 4 == 0 (tinyBLAS, sgemm.cpp tinyBLAS::matmul; else and for one
 * column: ggml_vec_dot); Q4_K the columns below N - N % 4 (its
 * repacked 4-column gemm; the rest its gemv); IQ4_XS every column when N >= 8 and
 * n_out % 8 == 0 (the IQ panel gemm, iqp.cpp); other types none. A column's result depends
 * only on its own order, so any subset of columns may be computed together. */
static inline int kern_grp_col(uint32_t type, int64_t N, int64_t col, int64_t n_in, int64_t n_out) {
    if (type == G4_TYPE_F32 || type == G4_TYPE_F16 || type == G4_TYPE_BF16) return N >= 2 && n_in % 8 == 0 && n_out % 4 == 0;
    if (type == G4_TYPE_IQ4_XS) return N >= 8 && n_out % 8 == 0;
    if (type == G4_TYPE_Q4_K) return col < N - N % 4;
    return 0;
}

/* Of n_tok tokens that are columns [first, first + n_tok) of such an op, how many leading
 * ones take matmul_grp (kern_grp_col is monotone: grouped columns come first). */
static inline int kern_grp_count(uint32_t type, int64_t N, int64_t first, int n_tok, int64_t n_in, int64_t n_out) {
    int k = 0;
    while (k < n_tok && kern_grp_col(type, N, first + k, n_in, n_out)) k++;
    return k;
}

/* Bytes of one activation row of n elements in dot type dt (F32 4n, F16/BF16 2n, Q8_0 34n/32,
 * Q8_1 36n/32, Q8_K 292n/256). */
size_t kern_act_row_bytes(int dt, int64_t n);

/* Chooses the best table for this CPU, or the one named by force (NULL = $G4_ISA or best).
 * Returns NULL with a message when force names a set this CPU or build cannot run. */
const g4_kern *kern_select(const char *force, char *err, size_t errlen);
/* Every table compiled in and runnable here ("scalar" first); for tests and benchmarks. */
int kern_list(const g4_kern **out, int cap);

#endif
