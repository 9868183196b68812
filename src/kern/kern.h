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

#include <float.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quant/quant.h"

/* Generic vectors (vector_size, __builtin_shufflevector / __builtin_convertvector) where the
 * compiler has them (GCC >= 12, clang) and float and double are evaluated in their own
 * precision: kern_exp.c's 4-lane exp, forward.c's sum of squares */
#if (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)) && defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#define KERN_GENERIC_VEC 1
#endif

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

/* What llama.cpp's CPU backend knows about a weight when it picks a kernel (kern_pick) */
#define KERN_PLAIN 1u /* not a weight it repacks: the KV cache (a tied LM head is one: llama.cpp
                       * loads token_embd a second time as the output tensor, repackable) */

/* The softmax's exponentials and their sum (vec.cpp ggml_vec_soft_max_f32): x[0..n) holds
 * scores minus the row max (<= 0) of the cells [cell0, cell0 + n) of a KQ row whose other
 * cells are masked (exp = +0); x[i] = exp(x[i]) as ggml_v_expf, lane for lane; returns their
 * sum as that build forms it: f32 sums of blocks aligned on the row (x86 AVX2: 8 cells,
 * NEON: 4), each added to a double. */
typedef double (*g4_expsum_fn)(float *x, int64_t n, int64_t cell0);

struct g4_kern;
/* The kernel whose float order llama.cpp's CPU backend (the build a table follows) uses for
 * column col of an op on N columns of an n_in x n_out weight of this type; flags KERN_PLAIN.
 * Only the column's own result depends on the choice, so columns with the same kernel may
 * run together. Never NULL for a type the table multiplies. */
typedef g4_matmul_fn (*g4_pick_fn)(const struct g4_kern *k, uint32_t type, int64_t N, int64_t col,
                                   int64_t n_in, int64_t n_out, unsigned flags);

typedef struct g4_kern {
    const char     *name;                          /* "scalar", "avx2", "avx512", "neon", "i8mm" */
    g4_matmul_fn    matmul[G4_TYPE_COUNT];         /* by weight type; NULL = not available */
    /* The same product in the float order llama.cpp's CPU backend uses when an op has
     * several activation columns, where that differs from matmul's (one column) order;
     * NULL = use matmul. The table's pick says for which columns. */
    g4_matmul_fn    matmul_grp[G4_TYPE_COUNT];
    g4_pick_fn      pick;                          /* never NULL */
    /* For a type whose matmul / matmul_grp follow llama.cpp's repacked kernels only because
     * llama.cpp repacks it when n_out % 8 == 0: its vec_dot order, for the other weights
     * (NULL = no such type; today Q2_K on the AVX-512 table) */
    g4_matmul_fn    matmul_vd[G4_TYPE_COUNT];
    /* Q4_K matrices stored repacked (model.c repacks them at open where a table has this):
     * repack_q4_K turns the n_out rows (n_out % 16 == 0) of an n_in-wide Q4_K matrix at src
     * (row bytes wrb) into the table's 16-row tiles at dst, in the same bytes (tile j where
     * rows 16j .. 16j + 15 were); matmul_rq[0] / [1] then give, from dst, the bits matmul[Q4_K]
     * / matmul_grp[Q4_K] give from src, for any rows [row0, row1). NULL = none (every table
     * but the zmm AVX-512 ones: kern_x86_rq4k.h). */
    void          (*repack_q4_K)(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in,
                                 int64_t n_out);
    g4_matmul_fn    matmul_rq[2];
    /* Q6_K matrices stored repacked, the same way (repack_q6_K: 16-row tiles in the same bytes;
     * matmul_rq6 gives from them the bits of matmul[Q6_K], its one order for any number of
     * columns; kern_q6_K_rq_block reads rows back). NULL = none (the zmm AVX-512 tables have
     * them: kern_x86_rq6k.h, which defines the tile layout). */
    void          (*repack_q6_K)(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in,
                                 int64_t n_out);
    g4_matmul_fn    matmul_rq6;
    /* Q8_0, Q5_0, Q4_0 (n_in <= 32768) and Q5_K matrices stored repacked the same way
     * (repack_b32[type]: 16-row tiles in the same bytes; matmul_rqb[type] gives from them the bits
     * of matmul[type], its one order for any number of columns). NULL = none (the zmm AVX-512
     * tables have them: kern_x86_rqb32.h and kern_x86_rq5k.h, which define the tile layouts). */
    void          (*repack_b32[G4_TYPE_COUNT])(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb,
                                               int64_t n_in, int64_t n_out);
    g4_matmul_fn    matmul_rqb[G4_TYPE_COUNT];
    g4_quant_act_fn quantize_act[G4_TYPE_COUNT];   /* by dot type: F32, F16, BF16, Q8_0, Q8_1, Q8_K */
    /* Q8_0/Q8_1 activation scale: 0 = x86 SIMD convention (id = 127/amax), 1 = llama.cpp's
     * arm64 build (id = 1/(amax/127)); both round half to even (quant_ref.h) */
    int             act_q8_inv;
    /* F16 weights: 1 = pick's kernels accumulate in fp16 lanes (llama.cpp's arm64 fp16 build,
     * quant_dot_f16_fp16: tinyBLAS order when pick gives it for N >= 8, else vec_dot's) */
    int             f16_lanes;
    /* F16 weights times f32 activation rows whose values are all f16 values (round_f16's
     * output; xq_row_bytes a multiple of 4): bit for bit what matmul[F16] ([0]) and
     * matmul_grp[F16] ([1]) give on those values in F16, without converting the activations
     * again for every weight row (the attention's F16 K and V caches times q and p, reused
     * over thousands of cells). NULL = not in this table: convert to F16. */
    g4_matmul_fn    matmul_f16x[2];
    /* The attention's V.p of one token per sequence (matmul[F16]) over more cells than this
     * takes p in F16 (quantize_act[F16]) rather than as f16 values in f32 (matmul_f16x[0]):
     * the same bits, where this table's matmul[F16] reads the columns' half bytes faster.
     * 0 = never. */
    int64_t         vp_f16_min;
    void          (*round_f16)(float *x, int64_t n); /* x[i] = f32(f16(x[i])), nearest even, as
                                                      * quantize_act[F16]; set with matmul_f16x */
    g4_geglu_fn     geglu;                         /* never NULL (kern_geglu_ref at least) */
    g4_expsum_fn    expsum;                        /* never NULL */
    /* The softmax's other passes over a row (attention.c attn_softmax), or NULL (its scalar
     * loops): sub_max subtracts the row's max, max(x[i] > m ? x[i] : m) from -inf, from every
     * x[i] and returns it; scale: x[i] *= s. The scalar loops' bits (of equal maxima the
     * first: the sign of a zero). */
    float         (*sub_max)(float *x, int64_t n);
    void          (*scale)(float *x, int64_t n, float s);
    /* NEOX RoPE of x[0 .. n_rot) by the (cos, sin) pairs cs[0 .. n_rot) (attention.c
     * attn_rope_cs): x[j] = fmaf(x[j], c, -(x[j + h] * s)), x[j + h] = fmaf(x[j], s, x[j + h] * c),
     * h = n_rot / 2, the bits of kern_rope_neox_ref (ops.cpp rotate_pairs as llama.cpp's FMA
     * builds compile it); NULL = that loop (where fmaf is an instruction, or on no SIMD) */
    void          (*rope_neox)(float *x, const float *cs, int n_rot);
    /* y = c * tanhf(y * (1/c)) with softcap_ref's steps (glibc's fdlibm tanhf: kern_softcap_fd,
     * or kern_softcap_fdf with its aarch64 build's fused steps), or NULL; used only where
     * kern_softcap_check finds the C library's tanhf gives those bits */
    void          (*softcap)(float *y, int64_t n, float c);
    void          (*softcap_ref)(float *y, int64_t n, float c);
    /* f32 lanes of the SIMD vectors of the llama.cpp build the table follows: 8 (scalar, AVX2:
     * haswell), 16 (AVX-512: zen4, skylakex ...), 4 (NEON); the softmax's exp and blocks, the
     * float dots' periods and tinyBLAS's k multiple go with it */
    int             vec_w;
    /* the attention's V.p hull alignment in cells (attention.c attn_hull): a multiple of the
     * period of the table's F32 and F16 dots over the cells, whose lanes count from cell 0;
     * 0 = 64 (every x86 and NEON table); the i8mm table's SVE dots: 8 vectors of F16 */
    int             attn_hull;
    int             tb_k_bf16;  /* tinyBLAS's k multiple for BF16 where not vec_w (32: vdpbf16ps) */
} g4_kern;

/* Row r's super-block i (210 bytes, as in the file) back from a Q6_K matrix stored repacked
 * (repack_q6_K's 16-row tiles of row bytes wrb; layout: kern_x86_rq6k.h) */
static inline void kern_q6_K_rq_block(const uint8_t *w, size_t wrb, int64_t r, int64_t i, uint8_t *out) {
    const uint8_t *sb = w + (size_t)(r & ~(int64_t)15) * wrb + (size_t)i * 3360;
    const size_t rr = (size_t)(r & 15);
    for (int k = 0; k < 52; k++) memcpy(out + 4 * k, sb + 64 * k + 4 * rr, 4);
    memcpy(out + 208, sb + 3328 + 2 * rr, 2);
}

/* Row r's block i (18 bytes, as in the file) back from a Q4_0 matrix stored repacked
 * (repack_b32's 16-row tiles of row bytes wrb; layout: kern_x86_rqb32.h) */
static inline void kern_q4_0_rq_block(const uint8_t *w, size_t wrb, int64_t r, int64_t i, uint8_t *out) {
    const uint8_t *b = w + (size_t)(r & ~(int64_t)15) * wrb + (size_t)i * 288;
    const size_t rr = (size_t)(r & 15);
    memcpy(out, b + 256 + 2 * rr, 2);
    for (int k = 0; k < 4; k++) memcpy(out + 2 + 4 * k, b + 64 * k + 4 * rr, 4);
}

/* The read-back of a repacked type whose tiles a tied head's lookups read (kern_q6_K_rq_block,
 * kern_q4_0_rq_block: block i of row r as in the file), or NULL where the rows stay unreadable */
typedef void (*kern_rq_block_fn)(const uint8_t *w, size_t wrb, int64_t r, int64_t i, uint8_t *out);
static inline kern_rq_block_fn kern_rq_block(uint32_t type) {
    return type == G4_TYPE_Q6_K ? kern_q6_K_rq_block : type == G4_TYPE_Q4_0 ? kern_q4_0_rq_block : NULL;
}

/* The repacked counterpart (g4_tensor.rq) of fn, the kernel kern_pick gave for a matrix of this
 * type: matmul_rq[0] / [1] for Q4_K's matmul / matmul_grp, matmul_rq6 for Q6_K, matmul_rqb for
 * Q8_0, Q5_0, Q4_0 and Q5_K (their one order) */
static inline g4_matmul_fn kern_rq_matmul(const g4_kern *k, uint32_t type, g4_matmul_fn fn) {
    if (type == G4_TYPE_Q4_K) return k->matmul_rq[fn != k->matmul[G4_TYPE_Q4_K]];
    return type == G4_TYPE_Q6_K ? k->matmul_rq6 : type < G4_TYPE_COUNT ? k->matmul_rqb[type] : NULL;
}

/* The table's repack for a matrix of this type (repack_q4_K, repack_q6_K, repack_b32: Q8_0, Q5_0,
 * Q4_0, Q5_K), or NULL */
typedef void (*kern_repack_fn)(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in, int64_t n_out);
static inline kern_repack_fn kern_rq_repack(const g4_kern *k, uint32_t type) {
    return type == G4_TYPE_Q4_K ? k->repack_q4_K : type == G4_TYPE_Q6_K ? k->repack_q6_K : type < G4_TYPE_COUNT ? k->repack_b32[type] : NULL;
}

/* the portable NEOX RoPE (kern.h rope_neox; the SIMD ones equal it bit for bit) */
void kern_rope_neox_ref(float *x, const float *cs, int n_rot);
/* its pairs j0 .. half - 1 only (half = n_rot / 2): a SIMD form's tail */
void kern_rope_neox_pairs(float *x, const float *cs, int half, int j0);

/* the portable GeGLU (the scalar table's; the SIMD ones equal it bit for bit) */
void kern_geglu_ref(float *restrict gate, const float *restrict up, const uint16_t *restrict tab, int64_t n);

/* ggml_v_expf, one lane (vec.h; the AVX2 and NEON versions agree lane for lane), for x <= 0
 * over n values, and the x86 tables' expsum (kern_exp.c) */
float kern_expf(float x);
void kern_expf_n(float *x, int64_t n);
double kern_expsum_x86(float *x, int64_t n, int64_t cell0);
/* the AVX-512 build's ggml_v_expf, one lane (vscalefps; not the AVX2 one's bits), and the
 * AVX-512 table's expsum order (16-cell blocks), portably: the references of that table */
float kern_expf_z(float x);
double kern_expsum_z16(float *x, int64_t n, int64_t cell0);

/* glibc's (fdlibm) tanhf step for step, portably; y = c * that(y / c); 1 when cap gives the
 * C library's tanhf bits on a probe set through every branch (kern_tanh.c) */
float kern_tanhf_fd(float x);
void kern_softcap_fd(float *y, int64_t n, float c);
/* the same with glibc's aarch64 build's fused multiply-adds (kern_tanh.c) */
float kern_tanhf_fdf(float x);
void kern_softcap_fdf(float *y, int64_t n, float c);
int kern_softcap_check(void (*cap)(float *y, int64_t n, float c), float c);

/* The x86 rule (llama.cpp's AVX2 build): whether column col of an op llama.cpp runs on N
 * columns of an n_in x n_out weight takes matmul_grp's float order: float weights
 * (F32/F16/BF16) every column when N >= 2, n_in % tb_k == 0 and n_out % 4 == 0 (tinyBLAS,
 * sgemm.cpp tinyBLAS::matmul, tb_k its vector's lanes: 8 on AVX2, 16 on AVX-512; else and for
 * one column: ggml_vec_dot); Q4_K (and Q2_K where a table repacks it: AVX-512) the columns
 * below N - N % 4 (the repacked 4-column gemm; the rest its gemv); IQ4_XS every column when N >= 8
 * and n_out % 8 == 0 (the IQ panel gemm, iqp.cpp); other types none. */
static inline int kern_grp_col(uint32_t type, int64_t N, int64_t col, int64_t n_in, int64_t n_out, int tb_k) {
    if (type == G4_TYPE_F32 || type == G4_TYPE_F16 || type == G4_TYPE_BF16) return N >= 2 && n_in % tb_k == 0 && n_out % 4 == 0;
    if (type == G4_TYPE_IQ4_XS) return N >= 8 && n_out % 8 == 0;
    if (type == G4_TYPE_Q4_K || type == G4_TYPE_Q2_K) return col < N - N % 4;
    return 0;
}

/* The scalar, AVX2 and AVX-512 tables' pick: matmul_grp where kern_grp_col (tb_k = the
 * table's vec_w) says so, else
 * matmul; flags are not used (the x86 build repacks no type whose order KERN_PLAIN changes
 * for the KV cache). */
g4_matmul_fn kern_pick_x86(const struct g4_kern *k, uint32_t type, int64_t N, int64_t col, int64_t n_in,
                           int64_t n_out, unsigned flags);

static inline int64_t kern_attn_hull(const struct g4_kern *k) { return k->attn_hull ? k->attn_hull : 64; }

static inline g4_matmul_fn kern_pick(const g4_kern *k, uint32_t type, int64_t N, int64_t col, int64_t n_in,
                                     int64_t n_out, unsigned flags) {
    return k->pick(k, type, N, col, n_in, n_out, flags);
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
