/* forward.h - the session struct and the pieces of the Gemma 4 forward pass shared by
 * session.c (create/eval API), forward.c (embedding, layer loop, FFN, LM head), attention.c
 * (q/k/v norms, RoPE, KV cache, attention) and ple.c (per-layer embedding inputs).
 *
 * Row convention: every activation buffer is [n_ubatch][width] f32, row t of the current
 * chunk at buf + t*width, packed with the current layer's width. A chunk holds T <= n_ubatch
 * tokens at positions pos[0..T-1]; only rows [r0, T) reach the layers after the last
 * KV-owning layer (the rows whose logits are wanted; gemma4-architecture.md §8).
 */
#ifndef G4_FORWARD_H
#define G4_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "g4_impl.h"
#include "quant/quant.h"

/* ==== KV cache ==== */

typedef struct g4_kv_slot {
    /* K: [n_head_kv][n_rows] rows of k_row_bytes (head_dim elements of kv_type), after
     *    k-norm and RoPE. Head-major so that one KV head is one weight-like matrix for the
     *    kernels' matmul (scores = K_head . q).
     * V: F32/F16: transposed, [n_head_kv][head_dim][n_rows] elements (one row per channel,
     *    as llama.cpp's non-flash V cache), so V_head . p is again a matmul over cells;
     *    Q8_0: [n_head_kv][n_rows] rows of k_row_bytes (blocks cannot be transposed).
     * Full layers: n_cells = n_ctx, position p in cell p; n_rows = n_ctx rounded up to 32
     *    (attention reads 32-aligned cell ranges; cells never written are zero in V).
     * Sliding layers: a mirrored ring, n_rows = 2 * n_cells: position p is written to cells
     *    p % n_cells and p % n_cells + n_cells, so any window of <= n_cells positions is one
     *    contiguous cell range in position order, [lo % n_cells, lo % n_cells + count).
     *    Every read then sums in the same order as without a ring: results do not depend on
     *    n_ubatch or on where the ring wraps. */
    uint8_t *k;
    uint8_t *v;
    int32_t  n_cells;     /* n_ctx (full) or min(n_ctx, n_swa + n_ubatch - 1) (sliding) */
    int32_t  n_rows;      /* ceil32(n_cells), or 2 * n_cells for a ring */
    int32_t  n_head_kv;
    int32_t  head_dim;
    int      swa;         /* 1 = mirrored ring */
    size_t   k_row_bytes; /* one head's row of head_dim elements */
} g4_kv_slot;

/* ==== Session ==== */

struct g4_session {
    g4_model *m;
    int32_t   n_ctx;        /* positions the session can hold */
    int32_t   n_ubatch;     /* tokens per forward chunk */
    uint32_t  kv_type;      /* G4_TYPE_F16 / F32 / Q8_0 */
    int       logits_all;   /* 1 = logits of every position of an eval */
    int       n_threads;    /* pool_n_threads(m->pool) */
    int32_t   n_past;       /* positions in the cache */

    g4_kv_slot *kv;         /* [cfg.n_kv_owner], indexed by g4_layer.kv_slot */

    /* scratch, all in the arena; W_q = max n_head*head_dim, W_kv = max n_head_kv*head_dim */
    float   *inpL;          /* [n_ubatch][n_embd]      residual stream (inp_scaled, l_out)   */
    float   *cur;           /* [n_ubatch][n_embd]      attn_norm / ffn_norm / projections    */
    float   *Qcur;          /* [n_ubatch][W_q]         queries, normed and rotated           */
    float   *Kcur;          /* [n_ubatch][W_kv]        keys before the cache write           */
    float   *Vcur;          /* [n_ubatch][W_kv]        values before the cache write         */
    float   *kqv_out;       /* [n_ubatch][W_q]         attention output, heads concatenated  */
    float   *ffn_gate;      /* [n_ubatch][max n_ff]    gate branch, then gelu(gate)*up       */
    float   *ffn_up;        /* [n_ubatch][max n_ff]    up branch                             */
    float   *pe;            /* [n_ubatch][P]           PLE gate                              */
    float   *inp_per_layer; /* [n_ubatch][n_layer*P]   per-layer inputs (§4.2), slice l at l*P */
    float   *pl_proj;       /* [n_ubatch][n_layer*P]   per_layer_model_proj output           */
    float   *rope_cs;       /* [n_ubatch][max head_dim] (cos, sin) pairs of the current layer */
    int32_t *pos;           /* [n_ubatch]              position of each chunk row            */
    uint8_t *act;           /* [n_ubatch][act_row_max] activation rows in a weight's dot type */
    size_t   act_row_max;   /* bytes of the widest activation row (F32 bound)              */
    uint8_t *attn_ws;       /* [n_threads][attn_ws_bytes] per-thread attention scratch, for */
    size_t   attn_ws_bytes; /*   up to G = max n_head/n_head_kv query heads: kq [G][n_cells] */
    size_t   ws_pq, ws_qq, ws_o; /* f32 at 0, p [G] rows in V's dot type at ws_pq, q [G] rows */
                                 /* in K's dot type at ws_qq, [head_dim_max] f32 at ws_o     */
    size_t   ws_v;          /* [head_dim_max][ws_v_cells] V hull copy (attention.c v_hull)  */
    int32_t  ws_v_cells;    /* 0 when every ring holds every hull                           */
    int32_t  head_dim_max;  /* largest head_dim of any layer (rope_cs row stride)           */
    int32_t  n_cells_max;   /* largest n_cells of any slot + 64: bound of a window's hull   */
    float   *logits;        /* [n_logit_rows][n_vocab] after the soft-cap                   */
    int32_t  n_logit_rows;  /* capacity: n_ubatch with logits_all, else 1                   */
    int32_t  n_logits;      /* rows valid from the last eval (0 before the first eval)      */
    /* Float order of the matmuls (kern.h kern_pick, per kernel table): llama.cpp runs every
     * layer op on all batch_n tokens of an eval (one ubatch); this chunk's rows are tokens
     * [chunk_off, chunk_off + chunk_T) of it (set by the eval loop and forward_chunk). */
    int64_t  batch_n;
    int64_t  chunk_off;
    int32_t  chunk_T;

    void    *arena;         /* one allocation: KV cache + scratch                          */
    size_t   arena_bytes;
    size_t   kv_bytes;      /* KV part of the arena                                         */
    size_t   scratch_bytes; /* everything else                                              */
    char     err[256];      /* last error message, "" if none                              */
};

/* ==== forward.c ==== */

/* Builds ggml's fp16 GELU table: t[h] = fp16(gelu_f32(f32(h))) for all 65536 bit patterns
 * (gemma4-architecture.md §5.3). t has 65536 entries. */
G4_INTERNAL void forward_gelu_table(uint16_t *t);

/* Runs one chunk: tok[0..T) at positions n_past.., T <= n_ubatch. Writes K/V of every
 * KV-owning layer for all T rows; runs the rest of the model for the last n_out rows only
 * and writes their logits to s->logits rows [0, n_out). n_out may be 0 (a prompt chunk
 * before the last). Cannot fail: the caller has validated everything. */
G4_INTERNAL void forward_chunk(g4_session *s, const int32_t *tok, int T, int n_out);

/* y[t*n_out + r] = (W_r . x_t) * scale for r in [row0, row1), t < n_tok; x is [n_tok][n_in]
 * f32 (n_in = w->ne[0]). Activation rows are converted once to w's dot type; rows are split
 * over the pool. ldy: y row stride in floats. */
G4_INTERNAL void forward_matmul(g4_session *s, const g4_tensor *w, const float *x, int n_tok,
                                float *y, size_t ldy, int64_t row0, int64_t row1, float scale);

/* Runs fn(s, arg, t) for rows t in [r0, T), split over the pool (rows are independent). */
typedef void (*forward_row_fn)(g4_session *s, const void *arg, int t);
G4_INTERNAL void forward_rows(g4_session *s, int r0, int T, forward_row_fn fn, const void *arg);

/* ggml_compute_forward_rms_norm_f32 (+ fused mul): squares in f32, sum in double. w may be
 * NULL (weightless norm). y may equal x. */
G4_INTERNAL void forward_rms_norm(float *y, const float *x, const float *w, int64_t n, float eps);

/* The final logit soft-cap in place: y = c * tanh(y / c) as ggml_scale, ggml_tanh, ggml_scale. */
G4_INTERNAL void forward_softcap(float *y, int64_t n, float c);

/* ==== attention.c ==== */

/* Per-row RoPE cache of layer l for rows [r0, T): s->rope_cs. */
G4_INTERNAL void attn_rope_cache(g4_session *s, const g4_layer *l, int r0, int T);
/* Qcur rows [r0, T): per-head RMS with attn_q_norm, then RoPE. */
G4_INTERNAL void attn_q_prep(g4_session *s, const g4_layer *l, int r0, int T);
/* Kcur/Vcur rows [r0, T) of a KV-owning layer: k-norm + RoPE, weightless v-norm, then the
 * cache write at the rows' positions. */
G4_INTERNAL void attn_kv_store(g4_session *s, const g4_layer *l, int r0, int T);
/* kqv_out rows [r0, T) = softmax(q.K) . V over the cache of l->kv_src, causal, windowed on
 * sliding layers, scale 1.0; GQA head h reads KV head h / (n_head/n_head_kv). */
G4_INTERNAL void attn_compute(g4_session *s, const g4_layer *l, int r0, int T);
/* (cos, sin) pairs cs[n_rot] of position pos: ggml_rope_cache_init, ff = rope_freqs or NULL. */
G4_INTERNAL void attn_rope_cs(float *cs, int64_t pos, const float *ff, float base, int n_rot);
/* NEOX RoPE of x[0..n_rot) with the pairs of attn_rope_cs (ops.cpp rotate_pairs). */
G4_INTERNAL void attn_rope_neox(float *x, const float *cs, int n_rot);
/* The 32-aligned hull [*a, *a + *nw) of the visible cells [lo, p] over which attention
 * multiplies V (attention.c: the same lanes as llama.cpp's product over all its cells). */
G4_INTERNAL void attn_hull(int64_t lo, int64_t p, int64_t *a, int64_t *nw);
/* ggml_soft_max_ext of a llama.cpp KQ row whose visible cells are [cell0, cell0 + n):
 * x[0..n) scores in, probabilities out; exp and sum as the kernel table's expsum. */
struct g4_kern;
G4_INTERNAL void attn_softmax(const struct g4_kern *k, float *x, int64_t n, int64_t cell0);

/* ==== ple.c ==== */

/* inp_per_layer rows [0, T) (slices 0..n_layer_kv-1) and rows [r0, T) (all slices) from the
 * tokens and from inpL (the scaled embeddings), §4.2. No-op when P == 0. */
G4_INTERNAL void ple_inputs(g4_session *s, const int32_t *tok, int r0, int T);
/* The PLE block of layer il on rows [r0, T) of inpL (§4.3 step 13). No-op when P == 0. */
G4_INTERNAL void ple_block(g4_session *s, int il, int r0, int T);

/* The fp16-table GELU of ggml (vec.h ggml_vec_gelu_f32 with GGML_GELU_FP16). */
static inline float forward_gelu(const uint16_t *tab, float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return g4_f16_to_f32(tab[g4_f32_to_f16(x)]);
}

#endif /* G4_FORWARD_H */
