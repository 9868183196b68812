/* tokenizer.h - the gemma4 BPE tokenizer built from GGUF metadata (tokenizer.ggml.*). */
#ifndef G4_TOKENIZER_H
#define G4_TOKENIZER_H

#include "g4_impl.h"

/* Builds the vocabulary from f's tokenizer.ggml.* keys, validating everything
 * (reliability.md #41-#49). Messages name the file, key and index. *out = NULL on failure. */
G4_INTERNAL g4_status tok_vocab_load(g4_vocab **out, const gguf_file *f, const g4_allocator *al,
                                     g4_log_fn log, void *log_ud, char *err, size_t errlen);
G4_INTERNAL void      tok_vocab_free(g4_vocab *v); /* NULL-safe */
G4_INTERNAL int32_t   tok_n_vocab(const g4_vocab *v);
G4_INTERNAL int32_t   tok_bos(const g4_vocab *v);  /* -1 if none */
G4_INTERNAL int32_t   tok_eos(const g4_vocab *v);  /* -1 if none */
G4_INTERNAL int       tok_is_eog(const g4_vocab *v, int32_t id);
G4_INTERNAL const char *tok_model_name(const g4_vocab *v); /* tokenizer.ggml.model */

#endif
