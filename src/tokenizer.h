/* tokenizer.h - the gemma4 BPE tokenizer built from GGUF metadata (tokenizer.ggml.*). */
#ifndef G4_TOKENIZER_H
#define G4_TOKENIZER_H

#include "g4_impl.h"

/* Builds the vocabulary from f's tokenizer.ggml.* keys, validating everything
 * (reliability.md #41-#49). Messages name the file, key and index. *out = NULL on failure. */
G4_INTERNAL g4_status tok_vocab_load(g4_vocab **out, const gguf_file *f, const g4_allocator *al,
                                     g4_log_fn log, void *log_ud, char *err, size_t errlen);
/* The same, with the merge lookups (most of the load time of the real vocabulary) on pool's
 * threads (NULL = the caller only). The vocabulary is identical for every thread count. */
G4_INTERNAL g4_status tok_vocab_load_pool(g4_vocab **out, const gguf_file *f, const g4_allocator *al,
                                          struct g4_pool *pool, g4_log_fn log, void *log_ud, char *err,
                                          size_t errlen);
G4_INTERNAL void      tok_vocab_free(g4_vocab *v); /* NULL-safe */
G4_INTERNAL int32_t   tok_n_vocab(const g4_vocab *v);
G4_INTERNAL int32_t   tok_bos(const g4_vocab *v);  /* -1 if none */
G4_INTERNAL int32_t   tok_eos(const g4_vocab *v);  /* -1 if none */
G4_INTERNAL int       tok_is_eog(const g4_vocab *v, int32_t id);
G4_INTERNAL const char *tok_model_name(const g4_vocab *v); /* tokenizer.ggml.model */
/* tokenizer.ggml.suppress_tokens that lie in [0, n_vocab) (borrowed; *n = 0 if none). */
G4_INTERNAL const int32_t *tok_suppress(const g4_vocab *v, size_t *n);
/* Chat-format variant read from tokenizer.chat_template markers (chat.c). */
G4_INTERNAL void      tok_chat_variant(const g4_vocab *v, int *think_nl, int *empty_thought, int *merge_model);
/* The same flags from a template's text (what tok_vocab_load stores). */
G4_INTERNAL void      tok_chat_markers(const char *tmpl, size_t len, int *think_nl, int *empty_thought,
                                       int *merge_model);
/* How the template writes tools: chat.h CHAT_T_* flags (from the text; of a vocabulary) */
G4_INTERNAL unsigned  tok_chat_tool_markers(const char *tmpl, size_t len);
G4_INTERNAL unsigned  tok_chat_tools(const g4_vocab *v);

/* Encodes text[0..len) (flags: G4_TOK_ADD_BOS, G4_TOK_PARSE_SPECIAL). Writes at most cap ids
 * and sets *n_out to the number produced; G4_ERR_BUFFER when that exceeds cap. */
G4_INTERNAL g4_status tok_encode(const g4_vocab *v, const char *text, size_t len, unsigned flags,
                                 int32_t *out, size_t cap, size_t *n_out);
/* The bytes of token id into buf[cap] (flags: G4_PIECE_SPECIAL), as g4_token_to_piece. */
G4_INTERNAL g4_status tok_piece(const g4_vocab *v, int32_t id, unsigned flags, char *buf, size_t cap,
                                size_t *n_out);

#endif
