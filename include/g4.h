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
 * thread pool, so their evals run one after another; g4_batch_eval advances many sessions
 * in one pass over the weights.
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
    const char  *kernels;    /* NULL = best for this CPU (or $G4_ISA); "scalar", "avx2", "avx512", "neon", "i8mm" */
    int          no_mmap;    /* 0 = map the file read-only; 1 = read it into memory */
    int          vocab_only; /* 1 = load the tokenizer only (no tensors needed, e.g. vocab GGUFs) */
    g4_alloc_fn  alloc;      /* NULL = libc */
    void        *alloc_ud;
    g4_log_fn    log;        /* NULL = silent */
    void        *log_ud;
    /* 0 = where the kernel set has a faster layout for a weight type (today Q4_K and Q6_K on
     * the zmm AVX-512 set), the model's matrices of that type are repacked into it at open, in memory
     * of the same size (the file's pages of them are released); and where the OS gives
     * transparent huge pages on request (Linux), the other matrices a decoded token streams are
     * copied into huge pages the same way. Results are unchanged. Together they take at most
     * 3/4 of the memory available at open (Linux MemAvailable): what does not fit stays as
     * stored, with a warning (a model near the size of RAM then runs from its file).
     * 1 = keep every matrix as stored, read in place from the file (llama.cpp's --no-repack).
     * $G4_REPACK=0 does the same; $G4_COPY=0 skips only the copy. */
    int          no_repack;
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
    int32_t n_logits;   /* logits rows an eval may return (G4_EVAL_ALL_LOGITS), 0 = 1
                         * (n_ubatch with logits_all) */
    int     batch_only; /* 1 = evaluated only through g4_batch_eval: no rows scratch of its
                         * own (g4_session_eval then fails), so an added session costs its KV
                         * cache and one logits row; n_ubatch still bounds its tokens per chunk */
    int     keep_hidden; /* 1 = keep, next to each logits row, the post-final-norm hidden state
                          * of that token (the LM head's input, n_embd floats): g4_session_hidden.
                          * The MTP drafter (G4_SPEC_DRAFT_MTP) reads it */
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
/* Flags of g4_session_eval_ex:
 * G4_EVAL_ALL_LOGITS: logits of every token of this eval (n_tok <= the session's n_logits),
 *   read with g4_session_logits_ith (what logits_all does for every eval);
 * G4_EVAL_DECODE_ORDER: every token in the float order of a one-token eval, so evaluating
 *   k tokens at once gives the bits of k evals of one token each (verifying drafted tokens
 *   in one pass gives exactly what plain decoding would have). Without it a multi-token eval
 *   follows llama.cpp's batch float order, as g4_session_eval does. */
enum { G4_EVAL_ALL_LOGITS = 1, G4_EVAL_DECODE_ORDER = 2 };
G4_API g4_status    g4_session_eval_ex(g4_session *s, const int32_t *tok, size_t n_tok, unsigned flags);
/* Logits of the i-th token of the last eval call (0 <= i < n_tok) when it returned every
 * token's (logits_all or G4_EVAL_ALL_LOGITS), else NULL. */
G4_API const float *g4_session_logits_ith(const g4_session *s, size_t i);
/* [n_embd] post-final-norm hidden state of the i-th logits row of the last eval (i = 0 only
 * after an eval that returned one row, 0 <= i < n_tok after one that returned every token's),
 * valid until the next eval/reset/truncate/free; NULL without keep_hidden or out of range. */
G4_API const float *g4_session_hidden(const g4_session *s, size_t i);
G4_API void         g4_session_reset(g4_session *s);               /* forget all positions */
G4_API int32_t      g4_session_n_past(const g4_session *s);
G4_API int32_t      g4_session_n_ctx(const g4_session *s);
G4_API const char  *g4_session_errmsg(const g4_session *s);        /* last error, "" if none */
/* Memory plan of the session: bytes of KV cache and of scratch buffers. */
G4_API void         g4_session_memory(const g4_session *s, size_t *kv_bytes, size_t *scratch_bytes);
/* Mixture of experts: counts[e] = how many (token, slot) routings expert e of layer il
 * received since the session was created or reset, over the rows the session computed (the
 * layers from the last KV-owning one on compute only the rows whose logits are wanted), in
 * g4_session_eval and g4_batch_eval alike.
 * counts holds n >= g4_model_n_expert() entries. G4_ERR_ARG for NULL pointers, a layer out of
 * range or without experts, or n too small. */
G4_API g4_status    g4_session_expert_counts(const g4_session *s, int32_t il, uint64_t *counts, size_t n);
/* The KV cache split: bytes per position of context (the full-attention layers that own a
 * cache: they hold every position) and bytes that do not grow with n_ctx (the sliding
 * layers' rings of window + n_ubatch - 1 positions). */
G4_API void         g4_session_kv_split(const g4_session *s, size_t *per_position, size_t *rings);

/* Forgets positions >= n_keep (prefix reuse: keep a shared prefix, evaluate what changed).
 * Returns the new n_past: min(n_keep, n_past) when the sliding-window layers still hold
 * what continuing there needs, else 0 (then re-evaluate from the start). Their rings hold
 * the window plus n_ubatch - 1 positions, so going back up to n_ubatch positions behind the
 * furthest position written always works; a deeper cut of a long session may not. Logits are
 * forgotten (g4_session_logits is NULL until the next eval). */
G4_API int32_t      g4_session_truncate(g4_session *s, int32_t n_keep);

/* Abort: fn(ud) is called before each forward chunk (n_ubatch tokens) of every eval of s
 * (alone or in a batch); nonzero stops the eval with G4_ERR_ABORTED. Nothing is appended:
 * every session of the eval is back at its n_past from before the call, or at 0 when its
 * sliding rings no longer hold that position's window (an eval stopped within its first
 * chunk always keeps it; see g4_session_truncate). fn NULL removes the callback. */
typedef int (*g4_abort_fn)(void *ud);
G4_API void         g4_session_set_abort(g4_session *s, g4_abort_fn fn, void *ud);

/* Saved state (llama.cpp's --prompt-cache, llama_state_save_file / load_file): the positions
 * in use and their KV rows, and optionally the token ids at those positions (n_tokens 0, or
 * n_past ids), bound to the model file (its size and a hash of its tensor table and sampled
 * weights) and the session's cache type. Load checks everything before it changes anything:
 * on any error (another model, another cache type, a truncated, oversized or hostile file,
 * G4_ERR_BUFFER when cap is too small, *n_tokens then the count needed) the session is left as
 * it was and g4_session_errmsg says what is wrong; on success *n_tokens ids are in tokens
 * (tokens may be NULL when the file holds none). Logits are not saved: evaluate at least one
 * token after a load (e.g. truncate to n_past - 1 and evaluate the last token again). */
G4_API g4_status    g4_session_save(g4_session *s, const char *path, const int32_t *tokens, size_t n_tokens);
G4_API g4_status    g4_session_load(g4_session *s, const char *path, int32_t *tokens, size_t cap, size_t *n_tokens);

/* ==== Many sessions at once ==== */

/* A batch evaluates several sessions of one model in one pass: every weight matrix streams
 * once per chunk for all of them (continuous batching: some sessions decode one token while
 * others feed prompt chunks); attention runs per session against its own cache. The batch
 * owns the rows scratch of those passes; sessions keep their caches. */
typedef struct g4_batch g4_batch;

enum { G4_BATCH_MAX_SEQ = 256 }; /* sessions in one g4_batch_eval */

typedef struct g4_batch_opts {
    int32_t n_ubatch;  /* rows (tokens over all sessions) of one forward chunk, 0 = 128 */
    int32_t n_out;     /* logits rows of one chunk, 0 = 16: sessions finishing in one chunk
                        * (a logits_all session's every token counts) */
} g4_batch_opts;

G4_API g4_status g4_batch_create(g4_batch **out, g4_model *m, const g4_batch_opts *opts,
                                 char *err, size_t errlen);
G4_API void      g4_batch_free(g4_batch *b); /* NULL-safe */

/* Advances s[i] by tok[i][0 .. n_tok[i]) for every i < n (n <= G4_BATCH_MAX_SEQ distinct
 * sessions of b's model, every n_tok[i] >= 1). Afterwards g4_session_logits(s[i]) is the
 * logits of s[i]'s last token, as after g4_session_eval. All-or-nothing as g4_session_eval:
 * on an error no session changed and g4_batch_errmsg names the session (its index in s) and
 * the reason. Each session's results are what llama.cpp gives for that sequence when it
 * decodes the same sequences together (sequence ids 0..n-1 in the order of s, one
 * llama_batch, a KV cache per sequence): a session decoding one token next to others takes
 * their batch's float order, so its logits may differ in the last bits from a lone eval.
 * Sessions are used by this call only: not concurrently elsewhere. */
G4_API g4_status   g4_batch_eval(g4_batch *b, g4_session *const *s, const int32_t *const *tok,
                                 const size_t *n_tok, size_t n);
/* g4_batch_eval with flags per session: flags NULL (all 0) or [n], each 0 or G4_EVAL_* of
 * g4_session_eval_ex (an unknown bit, or G4_EVAL_ALL_LOGITS with more tokens than the
 * session's n_logits, is G4_ERR_ARG naming the session). A G4_EVAL_DECODE_ORDER session is
 * not part of llama.cpp's batch: its tokens get exactly the bits of its own
 * g4_session_eval_ex with the same flags (each token in a one-token eval's float order)
 * while sharing the pass over the weights; the other sessions are the llama_batch, as in
 * g4_batch_eval. This is how a server verifies every slot's drafted tokens in one pass
 * (g4_spec_draft, g4_batch_eval_ex with G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER, then
 * g4_spec_accept per slot) while other slots read their prompts. */
G4_API g4_status   g4_batch_eval_ex(g4_batch *b, g4_session *const *s, const int32_t *const *tok,
                                    const size_t *n_tok, const unsigned *flags, size_t n);
G4_API const char *g4_batch_errmsg(const g4_batch *b); /* last error, "" if none */
/* Bytes of the batch's scratch (rows of n_ubatch tokens and n_out logits rows). */
G4_API size_t      g4_batch_memory(const g4_batch *b);

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

/* ==== Speculative decoding ====
 * One decoded token reads every weight; verifying k drafted tokens in one pass
 * (g4_session_eval_ex with G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER) reads them once for all.
 * A g4_spec drives that loop for one session: a drafter proposes up to n_max tokens, the
 * target verifies them in one eval, the sampler accepts a prefix (greedy: exactly the tokens
 * plain decoding would have produced, bit for bit; sampled: the standard rejection rule, so
 * the output distribution is the target's), and the session is rolled back past the first
 * rejection. Drafters, with llama.cpp's names (--spec-type):
 *   G4_SPEC_NGRAM_SIMPLE  "ngram-simple": the last ngram_n tokens looked up earlier in the
 *                         history; the up to ngram_m tokens that followed them are the draft
 *                         (common/ngram-map.cpp common_ngram_simple_draft, same rule)
 *   G4_SPEC_DRAFT_MTP     "draft-mtp": the Gemma 4 assistant (a second GGUF, g4_assistant_open)
 *                         chains up to n_max drafts from the target's hidden state, reading the
 *                         target session's KV cache (llama.cpp's gemma4-assistant graph); a
 *                         draft whose top-10 softmax probability is below p_min ends the chain
 *   G4_SPEC_CUSTOM        draft_fn(ud, ...) proposes the draft (tests, other drafters)
 * Typical loop (the plain loop is: eval(tok); tok = sample()):
 *   g4_spec_session_opts(&spo, &so);  g4_session_create(&s, m, &so, ...);
 *   g4_session_eval(s, prompt, n);    g4_spec_create(&sp, s, &spo, ...);
 *   g4_spec_begin(sp, prompt, n);     tok = g4_sampler_sample(smp, g4_session_logits(s));
 *   g4_sampler_accept(smp, tok);
 *   for (;;) { emit tok; if (eog) break;
 *              g4_spec_step(sp, smp, tok, out, cap, &k);  emit out[0 .. k-1]; tok = out[k-1]; } */
typedef struct g4_assistant g4_assistant;

/* Opens a gemma4-assistant GGUF for target (which must outlive it) and validates it against
 * the target: embedding_length_out = the target's n_embd, same vocabulary, head sizes and KV
 * heads of the target layers whose caches it reads (L-2 sliding, L-1 full), a window the
 * target's sliding caches hold. It shares the target's kernels, thread pool and allocator
 * (opts, may be NULL: no_mmap and log are used). *out = NULL on failure. */
G4_API g4_status g4_assistant_open(g4_assistant **out, g4_model *target, const char *path,
                                   const g4_model_opts *opts, char *err, size_t errlen);
G4_API void      g4_assistant_close(g4_assistant *a); /* NULL-safe */
G4_API int32_t   g4_assistant_n_embd(const g4_assistant *a);  /* its own hidden size */
G4_API int32_t   g4_assistant_n_layer(const g4_assistant *a);
G4_API uint64_t  g4_assistant_draft_bytes(const g4_assistant *a); /* weight bytes one draft step reads */

enum { G4_SPEC_NONE = 0, G4_SPEC_NGRAM_SIMPLE = 1, G4_SPEC_DRAFT_MTP = 2, G4_SPEC_CUSTOM = 3 };

/* A custom drafter: writes at most max tokens predicted to follow hist[0..n_hist) (the
 * session's tokens) and then last (sampled, not yet evaluated); returns how many. */
typedef size_t (*g4_draft_fn)(void *ud, const int32_t *hist, size_t n_hist, int32_t last,
                              int32_t *draft, size_t max);

typedef struct g4_spec_opts {
    int           type;      /* G4_SPEC_* */
    int32_t       n_max;     /* most drafted tokens per step, 0 = the type's default: 3 for draft-mtp
                              * (llama.cpp's --spec-draft-n-max), ngram_m for ngram-simple, 8 custom */
    int32_t       n_min;     /* drafts shorter than this are not verified (0) */
    float         p_min;     /* draft-mtp: a draft below this top-10 probability ends the chain (0) */
    int32_t       ngram_n;   /* ngram-simple: lookup length, 0 = 12 (--spec-ngram-simple-size-n) */
    int32_t       ngram_m;   /* ngram-simple: draft length, 0 = 48 (--spec-ngram-simple-size-m) */
    g4_assistant *assistant; /* draft-mtp: opened for the session's model */
    g4_draft_fn   draft_fn;  /* custom */
    void         *draft_ud;
} g4_spec_opts;

typedef struct g4_spec_stats {
    uint64_t n_steps;    /* g4_spec_step calls that succeeded */
    uint64_t n_drafts;   /* steps that verified a non-empty draft */
    uint64_t n_drafted;  /* drafted tokens verified */
    uint64_t n_accepted; /* drafted tokens accepted */
    uint64_t n_tokens;   /* tokens returned */
} g4_spec_stats;

typedef struct g4_spec g4_spec;

/* Raises so's n_logits, n_ubatch and keep_hidden to what a g4_spec with o needs (n_max + 1
 * logits rows, n_ubatch >= n_max + 1 so a rollback never leaves the sliding rings). */
G4_API void      g4_spec_session_opts(const g4_spec_opts *o, g4_session_opts *so);
/* Binds a speculative decoder to s (s must outlive it and is driven only through it while
 * generating). Refuses a session that cannot verify n_max + 1 tokens at once, an assistant
 * of another model, a missing drafter. A batch_only session works with g4_spec_draft and
 * g4_spec_accept around the caller's g4_batch_eval_ex (g4_spec_step, which evaluates by
 * itself, then fails with G4_ERR_ARG). *out = NULL on failure. */
G4_API g4_status g4_spec_create(g4_spec **out, g4_session *s, const g4_spec_opts *o,
                                char *err, size_t errlen);
G4_API void      g4_spec_free(g4_spec *sp); /* NULL-safe */
/* The tokens in the session (n == g4_session_n_past), after the prompt eval and after any
 * change made to the session outside g4_spec_step (truncate, reset). draft-mtp takes the
 * hidden state of the session's last eval row (none after a truncate: that step drafts
 * nothing, and the next has one). */
G4_API g4_status g4_spec_begin(g4_spec *sp, const int32_t *tok, size_t n);
/* Evaluates last (sampled from the previous logits, already given to g4_sampler_accept)
 * followed by a draft, and samples with smp (g4_sampler_accept is called for each token
 * returned): out[0 .. *n_out) are the accepted drafts and one token sampled after them, the
 * new "last" (not yet evaluated), so 1 <= *n_out <= cap. An end-of-generation token ends
 * out. The draft is cut to fit cap - 1 and the context. With greedy sampling out is exactly
 * what that many plain steps give. Errors: G4_ERR_ARG (last out of range, cap 0),
 * G4_ERR_CTX_FULL (no room for last), G4_ERR_ABORTED; then the session, the sampler and the
 * history are as before. g4_spec_errmsg says what. */
G4_API g4_status g4_spec_step(g4_spec *sp, g4_sampler *smp, int32_t last, int32_t *out, size_t cap,
                              size_t *n_out);
/* The draft g4_spec_step would verify after last (at most min(max, n_max) tokens), without
 * evaluating anything: the session, the sampler and the history are unchanged (benchmarks,
 * inspection). */
G4_API g4_status   g4_spec_draft(g4_spec *sp, int32_t last, int32_t *out, size_t max, size_t *n_out);
/* The second half of g4_spec_step, for callers that run the verifying eval themselves (a
 * server verifying several sessions' drafts in one batched pass): the session's last eval
 * must have been last followed by draft[0 .. k) right after the history, with every token's
 * logits (G4_EVAL_ALL_LOGITS; G4_EVAL_DECODE_ORDER for plain decoding's bits). Then as
 * g4_spec_step: out[0 .. *n_out), cap >= k + 1, the session rolled back past the first
 * rejection. G4_ERR_ARG (nothing changed) when the session's last eval was not that. */
G4_API g4_status   g4_spec_accept(g4_spec *sp, g4_sampler *smp, int32_t last, const int32_t *draft, size_t k,
                                  int32_t *out, size_t cap, size_t *n_out);
G4_API void        g4_spec_get_stats(const g4_spec *sp, g4_spec_stats *st);
G4_API const char *g4_spec_errmsg(const g4_spec *sp); /* last error, "" if none */
/* "ngram-simple" -> G4_SPEC_NGRAM_SIMPLE etc. (llama.cpp's names; "none" = G4_SPEC_NONE);
 * -1 if unknown. */
G4_API int         g4_spec_type_from_name(const char *name);
G4_API const char *g4_spec_type_name(int type);

/* ==== Chat format ==== */

typedef struct g4_chat_msg {
    const char *role;    /* "system", "developer", "user", "model", "assistant", "tool" */
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

/* Tool calling, in OpenAI's shapes. A turn may carry what OpenAI's chat messages carry:
 * an assistant turn its tool_calls (the JSON text of the array:
 * [{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}], the
 * arguments a JSON object or a string holding one) and its reasoning_content; a "tool" turn
 * the result of a call (content) with tool_call_id and/or name. opts->tools is the JSON text
 * of OpenAI's tools array ([{"type":"function","function":{"name","description",
 * "parameters"}}], JSON-schema parameters), rendered into the system turn as the model's
 * template does ("<|tool>declaration:NAME{...}<tool|>"); calls render as
 * "<|tool_call>call:NAME{...}<tool_call|>" and results as
 * "<|tool_response>response:NAME{...}<tool_response|>", where and how the template puts them
 * (read from tokenizer.chat_template; the older Gemma 4 templates get llama.cpp's conversion
 * of "tool" turns into the assistant turn's tool responses). Roles: system, developer (as
 * system), user, assistant (or model), tool. Errors (G4_ERR_ARG) name the message and the
 * field ("chat: message 2: tool_calls[0].function.name: expected a string") in err. */
typedef struct g4_chat_turn {
    const char *role;
    const char *content;        /* content_len bytes (NULL with 0: empty) */
    size_t      content_len;
    const char *reasoning;      /* assistant: reasoning_content, NULL = none */
    size_t      reasoning_len;
    const char *tool_calls;     /* assistant: JSON text of its tool_calls array, NULL = none */
    size_t      tool_calls_len;
    const char *tool_call_id;   /* tool: id of the call this answers, NULL = none */
    size_t      tool_call_id_len;
    const char *name;           /* tool: name of the function that answered, NULL = none */
    size_t      name_len;
} g4_chat_turn;

typedef struct g4_chat_opts {
    int         add_bos, add_gen, thinking; /* as g4_chat_render's */
    const char *tools;          /* JSON text of the tools array, NULL = none */
    size_t      tools_len;
} g4_chat_opts;

/* g4_chat_render / g4_chat_tokenize for turns with tool fields; err (may be NULL) gets the
 * reason of a G4_ERR_ARG. */
G4_API g4_status g4_chat_render_turns(const g4_model *m, const g4_chat_turn *turns, size_t n_turns,
                                      const g4_chat_opts *opts, char *buf, size_t cap, size_t *n_out,
                                      char *err, size_t errlen);
G4_API g4_status g4_chat_tokenize_turns(const g4_model *m, const g4_chat_turn *turns, size_t n_turns,
                                        const g4_chat_opts *opts, int32_t *out, size_t cap, size_t *n_out,
                                        char *err, size_t errlen);


/* ==== JSON reader and string quoting ====
 * A strict RFC 8259 reader for programs that take JSON from the network (g4 serve) and for
 * the chat renderer's tool declarations. Errors (G4_ERR_ARG, message "JSON: ... at byte N"):
 * invalid syntax, duplicate keys, lone surrogates in \u escapes, invalid UTF-8, unescaped
 * control characters, numbers outside the double range, a byte order mark, trailing data,
 * nesting deeper than max_depth (0 = 64). The parser never recurses; its memory is linear in
 * len. A document is immutable; values (g4_jv) are borrowed from it until g4_json_free. */
typedef struct g4_json g4_json;
typedef struct g4_jv   g4_jv;
enum { G4_JSON_NONE = 0, /* absent (a NULL g4_jv) */
       G4_JSON_NULL, G4_JSON_FALSE, G4_JSON_TRUE, G4_JSON_NUMBER, G4_JSON_STRING, G4_JSON_ARRAY, G4_JSON_OBJECT };

G4_API g4_status    g4_json_parse(g4_json **out, const char *text, size_t len, int max_depth,
                                  char *err, size_t errlen);           /* *out = NULL on failure */
G4_API void         g4_json_free(g4_json *d);                         /* NULL-safe */
G4_API const g4_jv *g4_json_root(const g4_json *d);
/* Every accessor accepts NULL (and answers "absent": NONE, 0, NULL). */
G4_API int          g4_jv_type(const g4_jv *v);
G4_API size_t       g4_jv_len(const g4_jv *v);                /* array elements, object members, string bytes */
G4_API const g4_jv *g4_jv_at(const g4_jv *v, size_t i);      /* i-th element / member value, in source order */
G4_API const char  *g4_jv_key(const g4_jv *obj, size_t i, size_t *len); /* i-th member's key (decoded, NUL-terminated) */
G4_API const g4_jv *g4_jv_get(const g4_jv *obj, const char *key);      /* member by key, NULL if absent */
/* Decoded string (UTF-8, NUL-terminated; may hold NUL bytes: use *len), NULL if not a string. */
G4_API const char  *g4_jv_str(const g4_jv *v, size_t *len);
G4_API double       g4_jv_num(const g4_jv *v);                /* 0 if not a number */
/* 1 and *out when v is a number with an exact integer value (2, 2.0, 2e0; integers written
 * without fraction or exponent are read exactly from the text), else 0. */
G4_API int          g4_jv_int(const g4_jv *v, int64_t *out);
G4_API int          g4_jv_uint(const g4_jv *v, uint64_t *out);
G4_API const char  *g4_jv_raw(const g4_jv *v, size_t *len);  /* the value's source text */
/* Writes s[0..n) as a JSON string literal (quotes included) into out[cap]; returns the bytes
 * it needs (write nothing past cap; call with cap 0 to size). Invalid UTF-8 bytes become
 * U+FFFD, so the output is always valid JSON; U+2028/2029 are escaped. At most 6 n + 2. */
G4_API size_t       g4_json_quote(char *out, size_t cap, const char *s, size_t n);


/* ==== A Gemma 4 answer: content, reasoning and tool calls ====
 * Splits generated text (detokenized with flags 0: the markers below are user-defined tokens,
 * always rendered) into the answer, the thinking ("<|channel>thought\n...<channel|>") and
 * tool calls ("<|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>"), streaming: push
 * text as it is generated; fn receives each piece as soon as it is certain (a marker prefix
 * is held back at most 12 bytes). A tool call comes whole, with its name and its arguments
 * as a JSON object (strings quoted, numbers/true/false/null kept, other bare words as
 * strings); one that does not parse, or never closes (or passes 1 MiB), comes back as
 * content, markers included. end = 1 flushes. fn returns nonzero to stop (G4_ERR_ABORTED). */
typedef struct g4_reply g4_reply;
enum { G4_REPLY_CONTENT = 0, G4_REPLY_REASONING = 1, G4_REPLY_TOOL_CALL = 2 };
typedef int (*g4_reply_fn)(void *ud, int kind, const char *text, size_t n, const char *name, size_t name_len);
G4_API g4_status g4_reply_create(g4_reply **out);  /* *out = NULL on failure */
G4_API void      g4_reply_free(g4_reply *r);       /* NULL-safe */
G4_API g4_status g4_reply_push(g4_reply *r, const char *text, size_t n, int end, g4_reply_fn fn, void *ud);
/* Tool calls are parsed unless this turns them off (parse 0): then call text stays content,
 * markers included (a request without tools, or with tool_choice "none", as llama-server
 * does). Call before the first push. NULL-safe. */
G4_API void      g4_reply_set_tool_calls(g4_reply *r, int parse);

#ifdef __cplusplus
}
#endif
#endif /* G4_H */
