/* moe.h - the mixture-of-experts FFN of Gemma 4 26B-A4B (gemma4-architecture.md §4.8), as
 * llama.cpp v0.5.0 computes it (src/models/gemma4.cpp, llm_graph_context::build_moe_ffn, ggml's
 * CPU mul_mat_id).
 *
 * Interface: rows in, rows out. moe_ffn takes n rows of the post-attention stream x1 and the
 * n rows of the shared (dense) MLP's output y, and leaves in y
 *     RMS(y, post_ffw_norm_1) + RMS(sum_k w_k * expert_k(RMS(x1, pre_ffw_norm_2)), post_ffw_norm_2)
 * ("ffn_moe_combined"). All scratch is a moe_scratch in the chunk's g4_work, sized with it
 * (moe_plan from work_plan); the token loop allocates nothing. The rows may belong to several
 * sessions (g4_batch_eval): each row's routings are counted in its own session.
 *
 * Schedule (llama.cpp's mul_mat_id): the chunk's (token, slot) pairs are grouped by expert, so
 * each routed expert's weights stream once per chunk for all of its tokens; a decoded token
 * reads only its n_expert_used experts. Expert matrices are read in place, in their stored
 * type, one expert = one contiguous slice of the 3-D tensor.
 */
#ifndef G4_MOE_H
#define G4_MOE_H

#include <stddef.h>
#include <stdint.h>

#include "g4_impl.h"

/* one expert matrix product of a stage: y[t*ldy + r] = (W_e row r . xq row t) * scale */
typedef struct moe_entry {
    const uint8_t *w;       /* the expert's first row */
    size_t         w_rb;    /* bytes of one weight row */
    const uint8_t *xq;      /* [n_tok] activation rows of xq_rb bytes, in w's dot type */
    size_t         xq_rb;
    float         *y;
    size_t         ldy;     /* floats */
    int64_t        n_in, n_rows;
    int64_t        item0;   /* first work item of this entry (items of MOE_ROWS rows) */
    uint32_t       type;
    int            n_tok;
    int            grp;     /* 1 = the kernels' grouped float order (IQ4_XS panel gemm) */
    int            rq;      /* 1 = w is repacked (g4_tensor.rq): kern_rq_matmul's kernel */
    float          scale;   /* per-expert output scale (1 = none) */
} moe_entry;

typedef struct moe_scratch {
    /* U = the work's n_rows, K = n_expert_used, Ne = n_expert, E = n_embd, F = n_ff_exp */
    float     *logits;  /* [U][Ne]      router logits, then probabilities                    */
    int32_t   *sel;     /* [U][K]       experts of each row, highest probability first       */
    float     *wts;     /* [U][K]       routing weights, renormalised                        */
    int32_t   *off;     /* [Ne + 1]     first grouped row of each expert (rows by expert)    */
    int32_t   *fill;    /* [Ne]         grouping cursor                                       */
    int32_t   *grow;    /* [U * K]      grouped row of (row t, slot k), at t*K + k            */
    int32_t   *pair;    /* [U * K]      t*K + k of grouped row g                              */
    float     *xin;     /* [U][E]       router input, then RMS(x1, pre_ffw_norm_2)            */
    uint8_t   *xq;      /* [U][xq_rb]   experts' input in gate's dot type, per row            */
    uint8_t   *xqu;     /* [U][xq_rb]   the same in up's dot type (only if some layer needs it) */
    uint8_t   *xg;      /* [U*K][xq_rb] xq gathered in grouped order                          */
    uint8_t   *xgu;     /* [U*K][xq_rb] xqu gathered (with xqu)                               */
    float     *gu;      /* [U*K][2F]    gate | up; gelu(gate)*up in the first half            */
    uint8_t   *hq;      /* [U*K][hq_rb] gelu(gate)*up in down's dot type                      */
    float     *eo;      /* [U*K][E]     expert outputs (x scale), then the weighted sum       */
    moe_entry *ent;     /* [2 * Ne]     a stage's matrix products                             */
    size_t     xq_rb, hq_rb;
} moe_scratch;

/* Scratch sizes for a work of n_rows rows: fills *need (byte sizes of each buffer above, in
 * declaration order, 0 = not needed) for the model's MoE layers. Returns the number of buffers
 * (MOE_N_BUFS) or 0 for a dense model. */
enum { MOE_N_BUFS = 16 };
G4_INTERNAL int moe_plan(const g4_model *m, int32_t n_rows, uint64_t need[MOE_N_BUFS]);
/* Points the scratch at buffers laid out by the caller from moe_plan's sizes (bufs[i] NULL
 * where need[i] was 0). */
G4_INTERNAL void moe_bind(moe_scratch *sc, const g4_model *m, uint8_t *const bufs[MOE_N_BUFS]);

/* Router arithmetic on one row (exposed for tests): logits[Ne] in, probabilities out
 * (ggml_soft_max: the table's expsum, blocks of its vec_w summed in f32 then double, libm
 * expf for the tail, scaled by 1/sum); the K most probable experts, highest first, ties to the lower index
 * (std::sort leaves ties unspecified); weights p / max(sum p, 2^-14) (ggml_sum_rows,
 * ggml_clamp, ggml_div). */
struct g4_kern;
G4_INTERNAL void moe_route(const struct g4_kern *kt, float *logits, int n_expert, int k, int32_t *sel, float *wts);

struct g4_work;
/* The MoE FFN of layer l on chunk rows [r0, T) of w: x1 [T - r0][E] the post-attention stream
 * ("attn_out"), y [T - r0][E] in: the shared MLP's output ("ffn_out" before post_ffw_norm_1),
 * out: "ffn_moe_combined". The router matmul follows llama.cpp's ubatch order through
 * forward_matmul (the rows' columns w->col). Adds each row's routings to the moe_hist of its
 * session w->sess[t]. */
G4_INTERNAL void moe_ffn(struct g4_work *w, const g4_layer *l, const float *x1, float *y, int r0, int T);

#endif /* G4_MOE_H */
