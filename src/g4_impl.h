/* g4_impl.h - private structs shared by the files under src/; never installed.
 *
 * g4_config (global hyperparameters), g4_layer (per-layer config and tensor bindings) and
 * g4_model are filled and validated once by model.c. After g4_model_open succeeds every
 * field here is consistent: shapes match, types are usable for their role, counts are
 * bounded. The forward pass relies on that and never re-checks.
 */
#ifndef G4_IMPL_H
#define G4_IMPL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "g4.h"
#include "gguf.h"

#if defined(__GNUC__)
#define G4_INTERNAL __attribute__((visibility("hidden")))
#define G4_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define G4_INTERNAL
#define G4_PRINTF(a, b)
#endif

/* Broken internal invariants only (never input validation): prints and aborts. */
#define G4_ASSERT(c) do { if (!(c)) g4_assert_fail(__FILE__, __LINE__, #c); } while (0)
G4_INTERNAL void g4_assert_fail(const char *file, int line, const char *cond);

/* ==== status.c: messages and checked arithmetic ==== */

/* snprintf into err (if err && errlen), returns st. */
G4_INTERNAL g4_status g4_errf(g4_status st, char *err, size_t errlen, const char *fmt, ...)
    G4_PRINTF(4, 5);
G4_INTERNAL g4_status g4_verrf(g4_status st, char *err, size_t errlen, const char *fmt, va_list ap);

static inline int g4_add_ovf(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline int g4_mul_ovf(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }

/* ==== alloc.c: allocator hook wrappers ==== */

typedef struct g4_allocator {
    g4_alloc_fn fn; /* never NULL after g4_allocator_init */
    void       *ud;
} g4_allocator;
G4_INTERNAL void  g4_allocator_init(g4_allocator *a, g4_alloc_fn fn, void *ud);
G4_INTERNAL void *g4_malloc(const g4_allocator *a, size_t n);        /* NULL on failure or n == 0 */
G4_INTERNAL void *g4_calloc(const g4_allocator *a, size_t n, size_t size); /* checked n*size */
G4_INTERNAL void  g4_free(const g4_allocator *a, void *p, size_t n); /* NULL-safe */
/* An arena on a cache-line boundary (the kernels' vector loads of the KV cache and the
 * activations: a load across two 64-byte lines costs two; the hook's memory is only 16-byte
 * aligned). Takes n + 63 bytes from the hook and returns the first 64-byte boundary in them;
 * *raw is what g4_free_al64 gives back. NULL on failure, n == 0 or overflow. */
G4_INTERNAL void *g4_malloc_al64(const g4_allocator *a, size_t n, void **raw);
G4_INTERNAL void  g4_free_al64(const g4_allocator *a, void *raw, size_t n); /* n as given to g4_malloc_al64 */
/* Large blocks that are streamed or probed at random (the vocabulary's tables, repacked
 * weights): asks for transparent huge pages where the kernel leaves it to madvise (fewer page
 * faults and TLB misses), only for memory from the default libc allocator (a caller's
 * allocator owns its memory policy). Advisory; errors are ignored. */
G4_INTERNAL void  g4_want_huge_pages(const g4_allocator *al, void *p, size_t n);
/* 1 where g4_want_huge_pages can have an effect: Linux, the libc allocator, and transparent
 * huge pages set to "always" or "madvise" (/sys/kernel/mm/transparent_hugepage/enabled) */
G4_INTERNAL int   g4_huge_pages_on(const g4_allocator *al);
/* Bytes of memory the OS can give without swapping: Linux's MemAvailable (/proc/meminfo),
 * or G4_MEM_AVAILABLE (MiB) where set, for tests; -1 where unknown */
G4_INTERNAL int64_t g4_mem_available(void);
G4_INTERNAL void *g4_libc_alloc(void *ud, void *ptr, size_t old_size, size_t new_size);

/* ==== Model ==== */

typedef struct g4_tensor {        /* a validated view of one GGUF tensor */
    const char    *name;
    uint32_t       type;          /* g4_type, usable for its role */
    int64_t        ne[4];         /* ggml order: ne[0] = row length */
    size_t         row_bytes;     /* bytes of one row of ne[0] elements */
    const uint8_t *data;          /* [ne[1]*ne[2]*ne[3]] rows of row_bytes, in the mapping;
                                   * a 3-D expert tensor holds ne[2] matrices of ne[1] rows,
                                   * expert e at data + e*ne[1]*row_bytes */
    int            rq;            /* 1 = data is a copy in the kernel table's repacked layout
                                   * (kern.h repack_q4_K / repack_q6_K / repack_b32; matmuls
                                   * take kern_rq_matmul's kernel, lookups model_row_f32), not
                                   * the file's */
    int            cp;            /* 1 = data is a plain copy of the file's bytes in huge pages
                                   * (model.c copy_weights) */
} g4_tensor;

typedef struct g4_layer {
    /* config */
    int   swa;            /* 1 = sliding-window layer, 0 = full attention */
    int   n_head;         /* query heads */
    int   n_head_kv;      /* KV heads (divides n_head) */
    int   head_dim;       /* key_length_swa or key_length */
    int   n_rot;          /* rotated dims (even, <= head_dim) */
    float rope_base;      /* freq_base_swa or freq_base */
    int   n_ff;           /* FFN width */
    int   has_kv;         /* 1 = owns K/V (layer < S) */
    int   kv_src;         /* layer whose cache is read (itself when has_kv) */
    int   kv_slot;        /* index of the cache of kv_src among the KV-owning layers */
    int   v_is_k;         /* 1 = no attn_v: V = raw K projection */
    float out_scale;      /* layer_output_scale (1 if absent) */
    /* per-matmul output scales (the optional blk.i.<name>.scale tensors), 1 if absent */
    float scale_q, scale_k, scale_v, scale_o, scale_gate, scale_up, scale_down;
    /* weights; NULL where optional and absent (or unused on shared layers) */
    const g4_tensor *attn_norm;           /* [n_embd] f32 */
    const g4_tensor *attn_q;              /* [n_embd, head_dim*n_head] */
    const g4_tensor *attn_k;              /* [n_embd, head_dim*n_head_kv], has_kv only */
    const g4_tensor *attn_v;              /* [n_embd, head_dim*n_head_kv], has_kv && !v_is_k */
    const g4_tensor *attn_q_norm;         /* [head_dim] f32 */
    const g4_tensor *attn_k_norm;         /* [head_dim] f32, has_kv only */
    const g4_tensor *attn_output;         /* [head_dim*n_head, n_embd] */
    const g4_tensor *post_attention_norm; /* [n_embd] f32 */
    const g4_tensor *ffn_norm;            /* [n_embd] f32 */
    const g4_tensor *ffn_gate;            /* [n_embd, n_ff] */
    const g4_tensor *ffn_up;              /* [n_embd, n_ff] */
    const g4_tensor *ffn_down;            /* [n_ff, n_embd] */
    const g4_tensor *post_ffw_norm;       /* [n_embd] f32 */
    const g4_tensor *inp_gate;            /* [n_embd, n_embd_per_layer], P > 0 */
    const g4_tensor *proj;                /* [n_embd_per_layer, n_embd], P > 0 */
    const g4_tensor *post_norm;           /* [n_embd] f32, P > 0 */
    /* mixture of experts (26B-A4B; gemma4-architecture.md §4.8): moe = 1 when the layer has a
     * router (ffn_gate_inp); the dense ffn_* above are then its shared MLP. Expert matrices
     * are 3-D, [in, out, n_expert], read in place in their stored type. */
    int   moe;
    const g4_tensor *ffn_gate_inp;        /* [n_embd, n_expert] router (any weight type) */
    const g4_tensor *ffn_gate_inp_s;      /* [n_embd] f32 router input scale */
    const g4_tensor *pre_ffw_norm_2;      /* [n_embd] f32: norm of the experts' input */
    const g4_tensor *post_ffw_norm_1;     /* [n_embd] f32: after the shared MLP */
    const g4_tensor *post_ffw_norm_2;     /* [n_embd] f32: after the expert sum */
    const g4_tensor *ffn_gate_up_exps;    /* [n_embd, 2*n_ff_exp, n_expert]: gate rows, then up rows; */
    const g4_tensor *ffn_gate_exps;       /* [n_embd, n_ff_exp, n_expert]  or gate and up apart  */
    const g4_tensor *ffn_up_exps;         /* [n_embd, n_ff_exp, n_expert]  (NULL when fused)      */
    const g4_tensor *ffn_down_exps;       /* [n_ff_exp, n_embd, n_expert] */
    const g4_tensor *down_exps_s;         /* [n_expert] f32 output scales, NULL = 1 */
    const g4_tensor *gate_exps_s;         /* [n_expert] f32, split gate/up only, NULL = 1 */
    const g4_tensor *up_exps_s;           /* [n_expert] f32, split gate/up only, NULL = 1 */
} g4_layer;

typedef struct g4_config {
    int32_t n_layer;          /* L, 1..512 */
    int32_t n_embd;           /* E */
    int32_t n_vocab;          /* tokens in the vocabulary (<= token_embd rows) */
    int32_t n_embd_rows;      /* rows of token_embd (>= n_vocab) */
    int32_t n_ctx_train;
    int32_t n_embd_per_layer; /* P (0 = no per-layer embeddings) */
    int32_t n_swa;            /* sliding window */
    int32_t n_layer_kv;       /* S: first KV-shared layer (L when none are shared) */
    int32_t n_kv_owner;       /* layers that own a KV cache (= S) */
    int32_t head_dim_full;    /* key_length */
    int32_t head_dim_swa;     /* key_length_swa */
    float   rms_eps;
    float   rope_base;        /* full layers */
    float   rope_base_swa;
    float   softcap;          /* 0 = none */
    int     tied;             /* 1 = LM head is token_embd */
    int32_t n_expert;         /* experts per MoE layer (0 = dense model), <= 1024 */
    int32_t n_expert_used;    /* experts each token is routed to, 1..n_expert (0 if dense) */
    int32_t n_ff_exp;         /* expert FFN width (expert_feed_forward_length) */
    int32_t n_layer_moe;      /* layers with a router */
} g4_config;

typedef struct g4_vocab g4_vocab; /* tokenizer.c */

struct g4_model {
    g4_allocator  al;
    g4_log_fn     log;
    void         *log_ud;
    gguf_file    *gguf;
    char         *path;
    g4_config     cfg;
    g4_layer     *layers;           /* [n_layer] */
    g4_tensor    *tensors;          /* [n_bound] views referenced by the pointers below */
    size_t        n_tensors_bound;
    const g4_tensor *token_embd;    /* [n_embd, n_embd_rows] */
    const g4_tensor *output;        /* [n_embd, n_vocab], NULL when tied */
    const g4_tensor *output_norm;   /* [n_embd] f32 */
    const g4_tensor *per_layer_token_embd; /* [P*L, n_embd_rows], P > 0 */
    const g4_tensor *per_layer_model_proj; /* [n_embd, P*L], P > 0 */
    const g4_tensor *per_layer_proj_norm;  /* [P] f32, P > 0 */
    uint8_t      *rq_copy;          /* the repacked matrices (g4_tensor.rq), 64-byte aligned */
    void         *rq_raw;           /* what g4_free_al64 takes */
    size_t        rq_bytes;
    uint8_t      *cp_copy;          /* the streamed matrices copied out of the mapping (g4_tensor.cp) */
    void         *cp_raw;
    size_t        cp_bytes;
    float        *f32_copy;         /* aligned copies of every f32 vector tensor (norms, scales) */
    size_t        f32_copy_bytes;
    const float     *rope_freqs;    /* [head_dim_full/2] (f32, in the mapping), NULL if no full layer */
    g4_vocab     *vocab;            /* tokenizer; NULL only if the file has none (refused at open) */
    int           vocab_only;
    const struct g4_kern *kern;     /* kernel table chosen at open */
    struct g4_pool *pool;           /* thread pool, NULL when single-threaded */
    int           n_threads;
    uint16_t     *gelu_f16;         /* [65536] fp16 GELU table, as ggml's CPU backend */
    /* the final soft-cap: kern->softcap where it gives the C library's tanhf bits (probed at
     * open, kern_softcap_check), else forward_softcap (libm's tanhf) */
    void        (*softcap)(float *y, int64_t n, float c);
    /* general.sampling.* defaults when present (has_* = 1) */
    int           has_samp_top_k, has_samp_top_p, has_samp_temp;
    int32_t       samp_top_k;
    float         samp_top_p, samp_temp;
};

/* g4_model_open over a caller's buffer (must outlive the model): fuzzing and tests. */
G4_INTERNAL g4_status model_open_mem(g4_model **out, const void *buf, size_t len, const char *name,
                                     const g4_model_opts *opts, char *err, size_t errlen);
G4_INTERNAL void g4_log(const g4_model *m, int level, const char *fmt, ...) G4_PRINTF(3, 4);
/* row r of the matrix t (a lookup: token embeddings) as n = t->ne[0] floats, dequantized as
 * stored in the file, from the repacked tiles where t->rq */
G4_INTERNAL void model_row_f32(const g4_tensor *t, int64_t r, float *out);

#endif /* G4_IMPL_H */
