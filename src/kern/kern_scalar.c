/* kern_scalar.c - portable kernel table: the reference dot product per (row, token).
 *
 * Contract (kern.h): W is [n_out][w_row_bytes] in GGUF block layout, xq is [n_tok] rows of
 * xq_row_bytes in the weight type's dot type, y[t*ldy + r] for r in [row0, row1).
 * No alignment assumed. Accumulation exactly as quant_vec_dot (quant_ref.c): integer block
 * sums, f32 block scaling and accumulation (F32/F16/BF16 in double). This table is the
 * oracle for the SIMD tables (tests/test_kern.c) and runs on any CPU. Loop order: each
 * weight row is read once and dotted with every token while it is in cache.
 */
#include <math.h>

#include "kern_isa.h"
#include "quant/quant_ref.h"

static inline void mm_ref(uint32_t type, float *restrict y, size_t ldy, const uint8_t *restrict w,
                          size_t w_row_bytes, const void *restrict xq, size_t xq_row_bytes,
                          int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    const uint8_t *x = xq;
    for (int64_t r = row0; r < row1; r++) {
        const uint8_t *wr = w + (size_t)r * w_row_bytes;
        for (int t = 0; t < n_tok; t++)
            y[(size_t)t * ldy + (size_t)r] = quant_vec_dot(type, wr, x + (size_t)t * xq_row_bytes, n_in);
    }
}

#define DEF_MM(t, T)                                                                              \
    void kern_ref_mm_##t(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, \
                         const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0,      \
                         int64_t row1, int n_tok) {                                                   \
        mm_ref(T, y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, row0, row1, n_tok);                \
    }
DEF_MM(f32, G4_TYPE_F32)
DEF_MM(f16, G4_TYPE_F16)
DEF_MM(bf16, G4_TYPE_BF16)
DEF_MM(q4_0, G4_TYPE_Q4_0)
DEF_MM(q4_1, G4_TYPE_Q4_1)
DEF_MM(q5_0, G4_TYPE_Q5_0)
DEF_MM(q5_1, G4_TYPE_Q5_1)
DEF_MM(q8_0, G4_TYPE_Q8_0)
DEF_MM(iq4_nl, G4_TYPE_IQ4_NL)
DEF_MM(q2_K, G4_TYPE_Q2_K)
DEF_MM(q3_K, G4_TYPE_Q3_K)
DEF_MM(q4_K, G4_TYPE_Q4_K)
DEF_MM(q5_K, G4_TYPE_Q5_K)
DEF_MM(q6_K, G4_TYPE_Q6_K)
DEF_MM(iq4_xs, G4_TYPE_IQ4_XS)

/* matmul_f16x (kern.h): quant_vec_dot's F16 sum on activations given as their f32 values */
static void mmx_f16_ref(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,
                        const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1,
                        int n_tok) {
    const float *x = xq;
    const size_t xs = xq_row_bytes / sizeof(float);
    for (int64_t r = row0; r < row1; r++) {
        const uint8_t *wr = w + (size_t)r * w_row_bytes;
        for (int t = 0; t < n_tok; t++) {
            double s = 0.0;
            for (int64_t i = 0; i < n_in; i++) s += (double)(g4_f16_to_f32(quant_rd16(wr + 2 * i)) * x[(size_t)t * xs + (size_t)i]);
            y[(size_t)t * ldy + (size_t)r] = (float)s;
        }
    }
}
static void round_f16_ref(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = g4_f16_to_f32(g4_f32_to_f16(x[i]));
}

static void act_f32(const float *restrict x, void *restrict y, int64_t n) { quant_act_f32(x, y, n); }
static void act_f16(const float *restrict x, void *restrict y, int64_t n) { quant_act_f16(x, y, n); }
static void act_bf16(const float *restrict x, void *restrict y, int64_t n) { quant_act_bf16(x, y, n); }
static void act_q8_0(const float *restrict x, void *restrict y, int64_t n) { quant_act_q8_0(x, y, n); }
static void act_q8_1(const float *restrict x, void *restrict y, int64_t n) { quant_act_q8_1(x, y, n); }
static void act_q8_K(const float *restrict x, void *restrict y, int64_t n) { quant_act_q8_K(x, y, n); }

void kern_rope_neox_ref(float *x, const float *cs, int n_rot) { kern_rope_neox_pairs(x, cs, n_rot / 2, 0); }

void kern_rope_neox_pairs(float *x, const float *cs, int half, int j0) {
    for (int j = j0; j < half; j++) {
        const float c = cs[2 * j], sn = cs[2 * j + 1];
        const float x0 = x[j], x1 = x[j + half];
        const float x1s = x1 * sn, x1c = x1 * c;
        x[j]        = fmaf(x0, c, -x1s);
        x[j + half] = fmaf(x0, sn, x1c);
    }
}

void kern_geglu_ref(float *restrict gate, const float *restrict up, const uint16_t *restrict tab, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float x = gate[i];
        gate[i] = x <= -10.0f ? 0.0f : (x >= 10.0f ? x : g4_f16_to_f32(tab[g4_f32_to_f16(x)])) * up[i];
    }
}

g4_matmul_fn kern_pick_x86(const g4_kern *k, uint32_t type, int64_t N, int64_t col, int64_t n_in,
                           int64_t n_out, unsigned flags) {
    (void)flags;
    if (k->matmul_vd[type] && n_out % 8) return k->matmul_vd[type];
    const int tb_k = type == G4_TYPE_BF16 && k->tb_k_bf16 ? k->tb_k_bf16 : k->vec_w;
    return kern_grp_col(type, N, col, n_in, n_out, tb_k) && k->matmul_grp[type] ? k->matmul_grp[type] : k->matmul[type];
}

static const g4_kern TABLE = {
    .name = "scalar",
    .geglu = kern_geglu_ref,
    .pick = kern_pick_x86,
    .expsum = kern_expsum_x86,
    .vec_w = 8,
    .matmul = { KERN_REF_MATMUL_ALL },
    .matmul_f16x = { mmx_f16_ref, mmx_f16_ref },
    .round_f16 = round_f16_ref,
    .quantize_act = {
        [G4_TYPE_F32] = act_f32, [G4_TYPE_F16] = act_f16, [G4_TYPE_BF16] = act_bf16,
        [G4_TYPE_Q8_0] = act_q8_0, [G4_TYPE_Q8_1] = act_q8_1, [G4_TYPE_Q8_K] = act_q8_K,
    },
};

const g4_kern *kern_table_scalar(void) { return &TABLE; }
