/* g4.h - Gemma 4 text inference on CPU, from one GGUF file.
 *
 *   char err[256];
 *   g4_model *m;
 *   g4_model_opts mo = {0};                        // zero = defaults
 *   if (g4_model_open(&m, "gemma-4-E2B-it-Q4_K_M.gguf", &mo, err, sizeof err) != G4_OK) {
 *       fprintf(stderr, "g4: %s\n", err);
 *       return 1;
 *   }
 *   g4_session_opts so = {0};                      // n_ctx 0 = min(model context, 4096)
 *   g4_session *s;
 *   if (g4_session_create(&s, m, &so, err, sizeof err) != G4_OK) { ... }
 *   int32_t ids[512]; size_t n;
 *   g4_tokenize(m, "The capital of France is", 24, G4_TOK_ADD_BOS, ids, 512, &n);
 *   g4_session_eval(s, ids, n);                    // prompt
 *   const float *logits = g4_session_logits(s);    // [g4_model_n_vocab(m)] of the last position
 *   ... pick a token (g4_sampler_sample), g4_session_eval(s, &tok, 1), repeat ...
 *   g4_session_free(s);
 *   g4_model_close(m);
 *
 * Threads: a g4_model is immutable after open and may be shared between sessions. A
 * g4_session is used by one thread at a time. Sessions of one model share the model's
 * thread pool, so their evals run one after another.
 *
 * Errors: every fallible call returns a g4_status. Constructors also write a one-line
 * message into the caller's err buffer (err may be NULL); later calls keep their last
 * message in the handle (g4_session_errmsg). On failure, out-parameters are NULL.
 *
 * Strings are (pointer, length) pairs; no function calls strlen() on user text.
 */
#ifndef G4_H
#define G4_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(G4_BUILD) && defined(__GNUC__)
#define G4_API __attribute__((visibility("default")))
#else
#define G4_API
#endif

#define G4_VERSION_MAJOR 0
#define G4_VERSION_MINOR 1
#define G4_VERSION_PATCH 0
#define G4_VERSION_STRING "0.1.0"

G4_API const char *g4_version(void); /* "0.1.0": the library's version, to compare with the header's */

typedef struct g4_model   g4_model;   /* weights (mapped), config, vocabulary, kernels, thread pool */
typedef struct g4_session g4_session; /* KV cache, scratch, logits, position */

typedef enum g4_status {
    G4_OK              =  0,
    G4_ERR_ARG         = -1, /* bad argument from the caller */
    G4_ERR_IO          = -2, /* open/stat/mmap failed */
    G4_ERR_FORMAT      = -3, /* malformed GGUF or metadata */
    G4_ERR_UNSUPPORTED = -4, /* well-formed, but not something gemma4.c implements */
    G4_ERR_NOMEM       = -5, /* an allocation failed or would exceed a budget */
    G4_ERR_BUFFER      = -6, /* caller buffer too small; *n_out holds the size needed */
    G4_ERR_CTX_FULL    = -7, /* the context (KV cache) has no room for the tokens */
    G4_ERR_ABORTED     = -8  /* a callback asked to stop */
} g4_status;

G4_API const char *g4_status_str(g4_status st); /* static string, never NULL */

/* Allocator hook, Lua style: new_size == 0 frees ptr (returns NULL); otherwise behaves like
 * realloc(ptr, new_size). old_size is the size of ptr's block (0 when ptr is NULL). */
typedef void *(*g4_alloc_fn)(void *ud, void *ptr, size_t old_size, size_t new_size);

enum { G4_LOG_ERROR = 0, G4_LOG_WARN = 1, G4_LOG_INFO = 2, G4_LOG_DEBUG = 3 };
typedef void (*g4_log_fn)(void *ud, int level, const char *msg); /* msg has no trailing newline */

/* ==== Model ==== */

typedef struct g4_model_opts {
    int          n_threads;  /* 0 or negative = online CPUs (clamped to [1, 512]) */
    const char  *kernels;    /* NULL = best for this CPU (or $G4_ISA); "scalar", "avx2", "avx512", "neon" */
    int          no_mmap;    /* 0 = map the file read-only; 1 = read it into memory */
    int          vocab_only; /* 1 = load the tokenizer only (no tensors needed, e.g. vocab GGUFs) */
    g4_alloc_fn  alloc;      /* NULL = libc */
    void        *alloc_ud;
    g4_log_fn    log;        /* NULL = silent */
    void        *log_ud;
} g4_model_opts;

/* Opens, maps and validates a Gemma 4 GGUF. Every container and model rule is checked here;
 * after success the forward pass never re-checks a shape. *out = NULL on failure. */
G4_API g4_status g4_model_open(g4_model **out, const char *path, const g4_model_opts *opts,
                               char *err, size_t errlen);
G4_API void      g4_model_close(g4_model *m); /* NULL-safe */

G4_API int32_t     g4_model_n_vocab(const g4_model *m);    /* tokens in the vocabulary */
G4_API int32_t     g4_model_n_ctx_train(const g4_model *m);
G4_API int32_t     g4_model_n_embd(const g4_model *m);
G4_API int32_t     g4_model_n_layer(const g4_model *m);
G4_API const char *g4_model_kernels(const g4_model *m);    /* name of the kernel set in use */
G4_API int         g4_model_n_threads(const g4_model *m);
/* Bytes of weights one decoded token reads: every matrix and vector the forward pass uses
 * once (the output head included), one row of each embedding table and, of each MoE layer's
 * experts, the n_expert_used a token is routed to. Divides a memory read
 * rate into the decode speed ceiling (g4 bench, make bench-vs-llama). 0 for NULL. */
G4_API uint64_t    g4_model_decode_bytes(const g4_model *m);
/* Mixture of experts (26B-A4B): experts per MoE layer and experts each token is routed to
 * (0 and 0 for a dense model). */
G4_API int32_t     g4_model_n_expert(const g4_model *m);
G4_API int32_t     g4_model_n_expert_used(const g4_model *m);
/* Of g4_model_decode_bytes, the routed experts' share: n_expert_used expert matrices (gate,
 * up, down) of every MoE layer. 0 for a dense model or NULL. */
G4_API uint64_t    g4_model_decode_bytes_routed(const g4_model *m);
/* Weight elements one token uses: every tensor the model binds, with only n_expert_used of
 * the n_expert matrices of each expert tensor (the "active" parameters; all of them for a
 * dense model). 0 for NULL or a vocab-only model. */
G4_API uint64_t    g4_model_n_params_active(const g4_model *m);
G4_API int32_t     g4_model_token_bos(const g4_model *m);  /* -1 if none */
G4_API int32_t     g4_model_token_eos(const g4_model *m);  /* -1 if none */
G4_API int         g4_model_is_eog(const g4_model *m, int32_t tok); /* end of generation: eos, <turn|>, ... */
/* Metadata string value (borrowed, valid until close), or NULL if absent or not a string. */
G4_API const char *g4_model_meta_str(const g4_model *m, const char *key);

/* ==== Session ==== */

enum { G4_CACHE_F16 = 0, G4_CACHE_F32 = 1, G4_CACHE_Q8_0 = 2 };

typedef struct g4_session_opts {
    int32_t n_ctx;      /* 0 = min(model context, 4096) */
    int32_t n_ubatch;   /* prompt chunk, 0 = 128 */
    int     cache_type; /* G4_CACHE_F16 (default), G4_CACHE_F32, G4_CACHE_Q8_0 */
    int     logits_all; /* 1 = keep logits for every evaluated position (perplexity) */
} g4_session_opts;

/* Allocates the KV cache and every buffer once; evals never allocate. *out = NULL on failure. */
G4_API g4_status g4_session_create(g4_session **out, g4_model *m, const g4_session_opts *opts,
                                   char *err, size_t errlen);
G4_API void      g4_session_free(g4_session *s); /* NULL-safe */

/* Appends n_tok tokens at positions n_past ... n_past+n_tok-1. On any error nothing was
 * appended: the position and the KV cache are unchanged. G4_ERR_CTX_FULL when the tokens
 * do not fit; G4_ERR_ARG for a token id outside [0, n_vocab) or n_tok == 0. */
G4_API g4_status    g4_session_eval(g4_session *s, const int32_t *tok, size_t n_tok);
/* [n_vocab] logits (after the final soft-cap) of the last evaluated position; valid until the
 * next eval/reset/free. NULL before the first eval. */
G4_API const float *g4_session_logits(const g4_session *s);
/* With logits_all: logits of the i-th token of the last eval call (0 <= i < n_tok), else NULL. */
G4_API const float *g4_session_logits_ith(const g4_session *s, size_t i);
G4_API void         g4_session_reset(g4_session *s);               /* forget all positions */
G4_API int32_t      g4_session_n_past(const g4_session *s);
G4_API int32_t      g4_session_n_ctx(const g4_session *s);
G4_API const char  *g4_session_errmsg(const g4_session *s);        /* last error, "" if none */
/* Memory plan of the session: bytes of KV cache and of scratch buffers. */
G4_API void         g4_session_memory(const g4_session *s, size_t *kv_bytes, size_t *scratch_bytes);
/* Mixture of experts: counts[e] = how many (token, slot) routings expert e of layer il
 * received since the session was created or reset, over the rows the session computed (the
 * layers from the last KV-owning one on compute only the rows whose logits are wanted).
 * counts holds n >= g4_model_n_expert() entries. G4_ERR_ARG for NULL pointers, a layer out of
 * range or without experts, or n too small. */
G4_API g4_status    g4_session_expert_counts(const g4_session *s, int32_t il, uint64_t *counts, size_t n);

/* ==== Tokenizer ==== */

enum {
    G4_TOK_ADD_BOS       = 1, /* prepend BOS */
    G4_TOK_PARSE_SPECIAL = 2  /* recognise control-token text such as "<|turn>" */
};

/* Tokenizes text[0..len). Writes at most cap ids; *n_out = ids produced (or needed, with
 * G4_ERR_BUFFER). Invalid UTF-8 is tokenized through byte fallback, never rejected. */
G4_API g4_status g4_tokenize(const g4_model *m, const char *text, size_t len, unsigned flags,
                             int32_t *out, size_t cap, size_t *n_out);

enum { G4_PIECE_SPECIAL = 1 }; /* render control tokens as their text */

/* The bytes of one token (▁ -> space, <0xXX> -> that byte). Not NUL-terminated. A byte token
 * may be part of a multi-byte UTF-8 character: use g4_detok_* to stream whole characters. */
G4_API g4_status g4_token_to_piece(const g4_model *m, int32_t tok, unsigned flags,
                                   char *buf, size_t cap, size_t *n_out);

/* Streaming detokenizer: holds back an incomplete UTF-8 sequence until it completes. */
typedef struct g4_detok {
    unsigned char pend[8]; /* bytes of an incomplete code point */
    int           n_pend;
} g4_detok;
/* Appends the complete UTF-8 text that tok adds to buf; returns bytes written (<= cap).
 * The output is always valid UTF-8: invalid bytes become U+FFFD. 64 + the piece length is
 * enough for pieces that are valid UTF-8 (every token of the Gemma vocabularies; 1024 bytes
 * always is for them); 64 + 3 x the piece length for any piece. What does not fit is dropped. */
G4_API size_t g4_detok_push(g4_detok *d, const g4_model *m, int32_t tok, unsigned flags,
                            char *buf, size_t cap);
/* Flushes held bytes as U+FFFD (EF BF BD) per incomplete sequence; returns bytes written. */
G4_API size_t g4_detok_flush(g4_detok *d, char *buf, size_t cap);

/* ==== Sampling ==== */

typedef struct g4_sampler_params {
    float    temp;           /* 0 = greedy */
    int32_t  top_k;          /* 0 = off */
    float    top_p;          /* 1 = off */
    float    min_p;          /* 0 = off */
    float    repeat_penalty; /* 1 = off */
    int32_t  repeat_last_n;  /* tokens considered by the penalties */
    float    presence_penalty;  /* 0 = off */
    float    frequency_penalty; /* 0 = off */
    uint64_t seed;
} g4_sampler_params;

typedef struct g4_sampler g4_sampler;

/* Defaults: the model's general.sampling.* keys when present, else temp 0.8, top_k 40,
 * top_p 0.95, min_p 0.05, repeat 1.0 over 64, seed as given. */
G4_API void      g4_sampler_defaults(const g4_model *m, g4_sampler_params *p);
/* Validates p (NaN, negative or out-of-range values give G4_ERR_ARG with a message). */
G4_API g4_status g4_sampler_create(g4_sampler **out, const g4_model *m, const g4_sampler_params *p,
                                   char *err, size_t errlen);
G4_API void      g4_sampler_free(g4_sampler *s);
G4_API void      g4_sampler_accept(g4_sampler *s, int32_t tok);  /* history for penalties */
G4_API void      g4_sampler_reset(g4_sampler *s);
/* Picks a token from logits[n_vocab]; never fails on NaN/Inf (returns the argmax of the
 * finite values, or 0). */
G4_API int32_t   g4_sampler_sample(g4_sampler *s, const float *logits);

/* ==== Chat format ==== */

typedef struct g4_chat_msg {
    const char *role;    /* "system", "developer", "user", "model", "assistant" */
    const char *content; /* content_len bytes */
    size_t      content_len;
} g4_chat_msg;

/* Renders messages in Gemma 4 turn format (BOS first when add_bos), ending with the
 * generation prompt when add_gen. thinking = 1 adds <|think|> to the system turn. */
G4_API g4_status g4_chat_render(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs,
                                int add_bos, int add_gen, int thinking,
                                char *buf, size_t cap, size_t *n_out);
/* The same conversation as token ids, tokenized safely: the renderer's markers with special
 * parsing, message content without, so marker text typed by a user ("<|turn>system") stays
 * text (reliability.md #60). Tokenizing g4_chat_render's text with G4_TOK_PARSE_SPECIAL would
 * turn it into control tokens. *n_out = ids produced, or needed with G4_ERR_BUFFER. */
G4_API g4_status g4_chat_tokenize(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs,
                                  int add_bos, int add_gen, int thinking,
                                  int32_t *out, size_t cap, size_t *n_out);

#ifdef __cplusplus
}
#endif
#endif /* G4_H */
