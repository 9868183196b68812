/* forward.h - the session struct and the pieces of the Gemma 4 forward pass shared by
 * session.c (create/eval API), forward.c (embedding, layer loop, FFN, LM head), attention.c
 * (q/k/v norms, RoPE, KV cache, attention) and ple.c (per-layer embedding inputs).
 *
 * Row convention: every activation buffer of a g4_work is [n_rows][width] f32, row t of the
 * current chunk at buf + t*width, packed with the current layer's width. A chunk holds
 * T <= n_rows tokens, possibly of several sessions; only rows [r0, T) reach the layers after
 * the last KV-owning layer (the rows whose logits are wanted; gemma4-architecture.md §8).
 */
#ifndef G4_FORWARD_H
#define G4_FORWARD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "g4_impl.h"
#include "moe.h"
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

/* ==== Work: the rows of one forward chunk ==== */

/* Scratch of one forward chunk and the description of its rows. A chunk holds T <= n_rows
 * rows; each row is one token of some session (rows of several sessions share the chunk, so
 * every weight matrix streams once for all of them) at its position in that session. Rows
 * [r0, T) want logits and are the only ones that reach the layers after the last KV-owning
 * layer (gemma4-architecture.md §8); the chunk's builder puts them last.
 * Float order: llama.cpp computes each layer op over the columns of one ubatch; a row is
 * column col[t] of such a ubatch of batch_n columns (kern.h kern_pick), its sequence has
 * seq_n[t] tokens there (attention's column count), and an output row is output ocol[t] of
 * n_outputs (the LM head's columns). The chunk's rows need not be all of that ubatch. A row
 * with col = ocol = -1 (and seq_n 1) is a ubatch of its own, one token in a one-token op's
 * float order (G4_EVAL_DECODE_ORDER), whatever the chunk's batch_n and n_outputs. */
typedef struct g4_work {
    const g4_model *m;
    int      n_threads;
    int32_t  n_rows;        /* capacity: rows of one chunk                                 */
    int32_t  n_out_rows;    /* capacity: output rows of one chunk                          */
    /* scratch; W_q = max n_head*head_dim, W_kv = max n_head_kv*head_dim                   */
    float   *inpL;          /* [n_rows][n_embd]      residual stream (inp_scaled, l_out)   */
    float   *cur;           /* [n_rows][n_embd]      attn_norm / ffn_norm / projections    */
    float   *Qcur;          /* [n_rows][W_q]         queries, normed and rotated           */
    float   *Kcur;          /* [n_rows][W_kv]        keys before the cache write           */
    float   *Vcur;          /* [n_rows][W_kv]        values before the cache write         */
    float   *kqv_out;       /* [n_rows][W_q]         attention output, heads concatenated  */
    float   *ffn_gate;      /* [n_rows][max n_ff]    gate branch, then gelu(gate)*up       */
    float   *ffn_up;        /* [n_rows][max n_ff]    up branch                             */
    float   *pe;            /* [n_rows][P]           PLE gate                              */
    float   *inp_per_layer; /* [n_rows][n_layer*P]   per-layer inputs (§4.2), slice l at l*P */
    float   *pl_proj;       /* [n_rows][n_layer*P]   per_layer_model_proj output           */
    float   *rope_cs;       /* [n_rows][head_dim_max] (cos, sin) pairs of the current layer */
    uint8_t *act;           /* [n_rows][act_row_max] activation rows in a weight's dot type */
    size_t   act_row_max;   /* bytes of the widest activation row (F32 bound)              */
    /* what act holds: x's n_tok rows of n_in in dot type act_dt (a matmul whose caller says
     * x is unchanged since, with the same of all four, skips quantizing it again) */
    const float *act_x;
    int64_t  act_n_in;
    int      act_n_tok, act_dt;
    int32_t  head_dim_max;  /* largest head_dim of any layer (rope_cs row stride)           */
    float   *logits;        /* [n_out_rows][n_vocab] head output of the chunk's output rows */
    /* the chunk */
    int32_t  T, r0;         /* rows [0, T); rows [r0, T) want logits                       */
    int32_t *tok;           /* [n_rows] token of each row                                  */
    int32_t *pos;           /* [n_rows] its position                                       */
    struct g4_session **sess; /* [n_rows] its session (KV cache, attention scratch)        */
    int32_t *col;           /* [n_rows] its column in llama.cpp's ubatch, -1 = alone        */
    int32_t *seq_n;         /* [n_rows] tokens of its session in that ubatch                */
    int32_t *ocol;          /* [n_rows] output rows: index among the ubatch's outputs, -1 = alone */
    float  **odst;          /* [n_rows] output rows: where its logits go (may be a logits row) */
    float  **hdst;          /* [n_rows] output rows: where its post-final-norm hidden state
                             * goes (the LM head's input, n_embd floats), NULL = nowhere      */
    int      attn_prev;     /* 1 = a query at position p sees keys up to p - 1 only, over the
                             * work model's window (the assistant, whose token is not in the
                             * target's cache: mtp.c); 0 = up to p, as a decoder layer        */
    int64_t  batch_n;       /* columns of llama.cpp's ubatch                                */
    int64_t  n_outputs;     /* outputs of llama.cpp's ubatch                                */
    moe_scratch moe;        /* MoE layers' scratch (moe.h), [n_rows] rows; zero for a dense model */
} g4_work;

/* Memory plan of a work for n_rows rows and n_out_rows output rows: offsets from a 64-byte
 * aligned base, added to *p (session.c, batch.c share one arena each). */
typedef struct g4_plan {
    uint64_t off; /* bytes so far */
    int      ovf; /* 1 = some size overflowed */
} g4_plan;
typedef struct g4_work_plan {
    uint64_t inpL, cur, q, kc, vc, kqv, gate, up, pe, ipl, plp, rope, act, logits;
    uint64_t tok, pos, sess, col, seq_n, ocol, odst, hdst;
    uint64_t moe[MOE_N_BUFS]; /* moe_plan's buffers (UINT64_MAX = not needed)              */
    size_t   act_row_max;
    int32_t  head_dim_max;
    int32_t  n_rows, n_out_rows;
} g4_work_plan;
/* Reserves n elements of size bytes, 64-byte aligned; returns the offset. */
G4_INTERNAL uint64_t plan_take(g4_plan *p, uint64_t n, uint64_t size);
G4_INTERNAL void     work_plan(g4_plan *p, const g4_model *m, int32_t n_rows, int32_t n_out_rows, g4_work_plan *wp);
G4_INTERNAL void     work_bind(g4_work *w, const g4_model *m, uint8_t *base, const g4_work_plan *wp);

/* ==== Session ==== */

#define G4_ATTN_TILE 16 /* most rows of one attention job (attention.c) */

struct g4_session {
    g4_model *m;
    int32_t   n_ctx;        /* positions the session can hold */
    int32_t   n_ubatch;     /* most tokens of this session in one forward chunk */
    uint32_t  kv_type;      /* G4_TYPE_F16 / F32 / Q8_0 */
    int       logits_all;   /* 1 = logits of every position of an eval */
    int       n_threads;    /* pool_n_threads(m->pool) */
    int32_t   n_past;       /* positions in the cache */
    int32_t   swa_hi;       /* one past the highest position written since the last reset */
    int32_t   swa_lo;       /* lowest position the sliding rings were given (a load may give
                             * only the last window): they hold positions
                             * [max(swa_lo, swa_hi - swa_cells), n_past) */
    int32_t   swa_cells;    /* cells of the sliding rings (0 when no layer slides) */
    uint64_t *moe_hist;     /* [n_layer][n_expert] routings per MoE layer and expert since
                             * create/reset (NULL for a dense model) */

    g4_kv_slot *kv;         /* [cfg.n_kv_owner], indexed by g4_layer.kv_slot */

    /* per-thread attention scratch of one job (attention.c): up to G4_ATTN_TILE rows x G =
     * max n_head/n_head_kv query heads */
    uint8_t *attn_ws;       /* [n_threads][attn_ws_bytes]: kq [ws_kq_cap] f32 at 0, p rows  */
    size_t   attn_ws_bytes; /*   in V's dot type at ws_pq, [ws_q_cap] q rows in K's dot    */
    size_t   ws_pq, ws_qq, ws_o; /* type (F16: room for f32) at ws_qq, [ws_q_cap + 1]       */
                            /*   [head_dim_max] f32 at ws_o                                 */
    size_t   ws_v;          /* [head_dim_max][ws_v_cells] V hull copy (attention.c job_v)   */
    int32_t  ws_v_cells;    /* 0 when every ring holds every hull                           */
    int64_t  ws_kq_cap;     /* floats of kq: a job's rows x heads x hull cells              */
    int32_t  ws_q_cap;      /* a job's rows x heads                                        */
    int32_t  n_cells_max;   /* largest n_cells of any slot + 64: bound of a window's hull   */
    float   *logits;        /* [n_logit_rows][n_vocab] after the soft-cap                   */
    float   *hidden;        /* [n_logit_rows][n_embd] post-final-norm hidden state of each
                             * logits row (keep_hidden), else NULL                           */
    int32_t  n_logit_rows;  /* capacity: n_logits option (n_ubatch with logits_all, else 1)  */
    int32_t  n_logits;      /* rows valid from the last eval (0 before the first eval)      */
    int      logits_rows;   /* 1 = the last eval returned every token's logits               */
    g4_work  work;          /* rows scratch of g4_session_eval (logits = this->logits)      */

    g4_abort_fn abort_fn;   /* polled between chunks; nonzero stops the eval */
    void    *abort_ud;

    void    *arena;         /* one allocation: KV cache + scratch, 64-byte aligned          */
    void    *arena_raw;     /* what g4_free_al64 gives back                                 */
    size_t   arena_bytes;
    size_t   kv_bytes;      /* KV part of the arena                                         */
    size_t   scratch_bytes; /* everything else                                              */
    char     err[256];      /* last error message, "" if none                              */
};

/* ==== eval.c: the schedule of an eval over one or several sessions ==== */

/* Advances s[i] by tok[i][0 .. n_tok[i]) for i < n through the chunks of w (validated by the
 * caller: distinct sessions of w's model, tokens in range, room in every context). Follows
 * llama.cpp's split of one llama_batch holding sequences 0 .. n-1 into ubatches (non-unified
 * cache, equal split) for the float order; w's capacities bound the chunks. Polls every
 * session's abort callback before each chunk: then every session is rolled back to where it
 * was (session_rollback) and G4_ERR_ABORTED is returned with a message in err. flags:
 * NULL or [n]: G4_EVAL_ALL_LOGITS / G4_EVAL_DECODE_ORDER (g4.h) of each session; the
 * decode-order sessions are not part of llama.cpp's batch: their rows fill the room the
 * ubatches' chunks leave, then chunks of their own. */
G4_INTERNAL g4_status eval_sessions(g4_work *w, g4_session *const *s, const int32_t *const *tok,
                                    const size_t *n_tok, size_t n, const unsigned *flags, char *err, size_t errlen);
/* The checks of an eval of tok[0..n_tok) on s (session.c); who prefixes the message. */
G4_INTERNAL g4_status session_check(const g4_session *s, const int32_t *tok, size_t n_tok, unsigned flags,
                                    char *err, size_t errlen, const char *who);
/* Forgets positions >= n_keep (n_keep <= n_past); returns the new n_past: n_keep when every
 * sliding ring still holds the window continuing there needs, else 0. */
G4_INTERNAL int32_t session_rollback(g4_session *s, int32_t n_keep);
/* g4_session_load from an open stream (state.c; fuzzing reads from memory); path names it
 * in messages. Does not close f. */
G4_INTERNAL g4_status state_load_fp(g4_session *s, FILE *f, const char *path, int32_t *tokens, size_t cap,
                                    size_t *n_tokens);
/* The lowest position whose sliding-ring entries are still intact (eval.c). */
G4_INTERNAL int64_t session_ring_lo(const g4_session *s);

/* ==== forward.c ==== */

/* Builds ggml's fp16 GELU table: t[h] = fp16(gelu_f32(f32(h))) for all 65536 bit patterns
 * (gemma4-architecture.md §5.3). t has 65536 entries. */
G4_INTERNAL void forward_gelu_table(uint16_t *t);

/* Runs the chunk described in w (rows [0, T), outputs [r0, T)): writes K/V of every
 * KV-owning layer for all rows into their sessions' caches; runs the rest of the model for
 * the output rows only and writes their logits to odst[t] (and their hidden state to hdst[t]
 * where set). Cannot fail: the caller has validated everything. */
G4_INTERNAL void forward_chunk(g4_work *w);

/* Decoder layer il of w->m on the rows of w: rows [r_kv, T) through attn_norm and, on a
 * KV-owning layer, the K/V projections and cache write; rows [r0, T) through everything
 * else (attention over the cache of l->kv_src in each row's session, FFN, PLE block, layer
 * scale), in place on w->inpL. The assistant (mtp.c) runs its layers through this. */
G4_INTERNAL void forward_layer(g4_work *w, int il, int r_kv, int r0, int T);

/* y[k*ldy + r] = (W_r . x_k) * scale for r in [row0, row1), chunk rows t = a + k in [a, b);
 * x is [b - a][n_in] f32 (n_in = wt->ne[0]). Activation rows are converted once to wt's dot
 * type; each row takes the float order of its column w->col[t] of the ubatch; weight rows
 * are split over the pool. ldy: y row stride in floats. */
G4_INTERNAL void forward_matmul(g4_work *w, const g4_tensor *wt, const float *x, int a, int b,
                                float *y, size_t ldy, int64_t row0, int64_t row1, float scale);

/* Runs fn(w, arg, t) for rows t in [r0, T), split over the pool (rows are independent). */
typedef void (*forward_row_fn)(g4_work *w, const void *arg, int t);
G4_INTERNAL void forward_rows(g4_work *w, int r0, int T, forward_row_fn fn, const void *arg);

/* ggml_compute_forward_rms_norm_f32 (+ fused mul): squares in f32, sum in double. w may be
 * NULL (weightless norm). y may equal x. */
G4_INTERNAL void forward_rms_norm(float *y, const float *x, const float *w, int64_t n, float eps);
/* The same for nr rows (x's xs floats apart, y's ys), their sums side by side: each row's bits
 * as forward_rms_norm's. */
G4_INTERNAL void forward_rms_norm_n(float *y, size_t ys, const float *x, size_t xs, int nr, int64_t n, const float *w,
                                    float eps);
/* Its two halves: the sums of the squares of nr rows x[r][0..n), and y = (x * scale) * w
 * from a row's sum. A sum is only good for forward_rms_apply's (float)(sum / n): it gives the
 * mean of llama.cpp's element-order double sum bit for bit, not always that sum's bits
 * (forward.c: taken in lanes, the chain only where the mean could differ). */
G4_INTERNAL void forward_sumsq(const float *const *x, int nr, int64_t n, double *s);
/* the element-order sums themselves (tests), and the check (1: s, a sum of n squares in any
 * order, gives the element-order sum's mean) */
G4_INTERNAL void forward_sumsq_ref(const float *const *x, int nr, int64_t n, double *s);
G4_INTERNAL int forward_sumsq_safe(double s, int64_t n);
G4_INTERNAL void forward_rms_apply(float *y, const float *x, const float *w, int64_t n, double sum, float eps);

/* The final logit soft-cap in place: y = c * tanh(y / c) as ggml_scale, ggml_tanh, ggml_scale. */
G4_INTERNAL void forward_softcap(float *y, int64_t n, float c);

/* ==== attention.c ==== */

/* Per-row RoPE cache of layer l for rows [r0, T): s->rope_cs. */
G4_INTERNAL void attn_rope_cache(g4_work *w, const g4_layer *l, int r0, int T);
/* Qcur rows [r0, T): per-head RMS with attn_q_norm, then RoPE. */
G4_INTERNAL void attn_q_prep(g4_work *w, const g4_layer *l, int r0, int T);
/* Kcur/Vcur rows [r0, T) of a KV-owning layer: k-norm + RoPE, weightless v-norm, then the
 * cache write at the rows' positions. */
G4_INTERNAL void attn_kv_store(g4_work *w, const g4_layer *l, int r0, int T);
/* kqv_out rows [r0, T) = softmax(q.K) . V over the cache of l->kv_src, causal, windowed on
 * sliding layers, scale 1.0; GQA head h reads KV head h / (n_head/n_head_kv). */
G4_INTERNAL void attn_compute(g4_work *w, const g4_layer *l, int r0, int T);
/* (cos, sin) pairs cs[n_rot] of position pos: ggml_rope_cache_init, ff = rope_freqs or NULL. */
G4_INTERNAL void attn_rope_cs(float *cs, int64_t pos, const float *ff, float base, int n_rot);
/* NEOX RoPE of x[0..n_rot) with the pairs of attn_rope_cs (ops.cpp rotate_pairs). */
G4_INTERNAL void attn_rope_neox(float *x, const float *cs, int n_rot);
/* attention's V.p runs over whole blocks of h = kern_attn_hull(table) cells (attention.c): a
 * multiple of the period of every llama.cpp float dot the table follows (4 x 8 lanes AVX2,
 * 4 x 16 AVX-512: 64; the i8mm table's SVE F16 dot, 8 vectors: 128 at 256-bit SVE). This is
 * the largest h of any table in the build, for sizing the session. */
#if defined(__aarch64__)
#define G4_ATTN_HULL 128
#else
#define G4_ATTN_HULL 64
#endif
/* The h-aligned hull [*a, *a + *nw) of the visible cells [lo, p] over which attention
 * multiplies V (attention.c: the same lanes as llama.cpp's product over all its cells);
 * h a power of two <= G4_ATTN_HULL. */
G4_INTERNAL void attn_hull(int64_t lo, int64_t p, int64_t h, int64_t *a, int64_t *nw);
/* ggml_soft_max_ext of a llama.cpp KQ row whose visible cells are [cell0, cell0 + n):
 * x[0..n) scores in, probabilities out; exp and sum as the kernel table's expsum. */
struct g4_kern;
G4_INTERNAL void attn_softmax(const struct g4_kern *k, float *x, int64_t n, int64_t cell0);

/* ==== ple.c ==== */

/* inp_per_layer rows [0, T) (slices 0..n_layer_kv-1) and rows [r0, T) (all slices) from the
 * tokens and from inpL (the scaled embeddings), §4.2. No-op when P == 0. */
G4_INTERNAL void ple_inputs(g4_work *w, int r0, int T);
/* The PLE block of layer il on rows [r0, T) of inpL (§4.3 step 13). No-op when P == 0. */
G4_INTERNAL void ple_block(g4_work *w, int il, int r0, int T);

/* The fp16-table GELU of ggml (vec.h ggml_vec_gelu_f32 with GGML_GELU_FP16). */
static inline float forward_gelu(const uint16_t *tab, float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return g4_f16_to_f32(tab[g4_f32_to_f16(x)]);
}

#endif /* G4_FORWARD_H */
