/* chat.h - Gemma 4 chat rendering internals (chat.c), shared with tests and the CLI's chat. */
#ifndef G4_CHAT_H
#define G4_CHAT_H

#include "g4_impl.h"

typedef struct chat_variant { /* read from tokenizer.chat_template markers (tokenizer.c) */
    int think_nl;      /* "<|think|>\n" instead of "<|think|>" */
    int empty_thought; /* thinking off: the generation prompt ends "<|channel>thought\n<channel|>" */
    int merge_model;   /* an assistant message after an assistant message continues its turn */
} chat_variant;

/* Called once per piece of output in order. marker = 1 for text the renderer wrote (turn
 * markers, BOS, roles): tokenize it with special parsing; marker = 0 for message content:
 * tokenize it without (reliability.md #60). Returns nonzero to stop. */
typedef int (*chat_emit_fn)(void *ud, const char *s, size_t n, int marker);

/* Validates msgs (known roles, content pointers) and emits the rendering. bos = BOS text
 * (NULL = none). cont = 1 continues a conversation already in the context: no system turn,
 * every message rendered as a plain turn (thinking then only affects the generation prompt).
 * G4_ERR_ARG names the message and field; G4_ERR_ABORTED if emit stopped. */
G4_INTERNAL g4_status chat_render(const chat_variant *cv, const g4_chat_msg *msgs, size_t n_msgs, const char *bos,
                                  int add_gen, int thinking, int cont, chat_emit_fn emit, void *ud, char *err,
                                  size_t errlen);
/* Renders and tokenizes (markers with special parsing, content without, as g4_chat_tokenize)
 * into out[cap]; *n_out = ids produced or needed (G4_ERR_BUFFER). */
G4_INTERNAL g4_status chat_tokenize(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs, int add_bos,
                                    int add_gen, int thinking, int cont, int32_t *out, size_t cap, size_t *n_out,
                                    char *err, size_t errlen);
G4_INTERNAL void      chat_variant_of(const g4_model *m, chat_variant *cv);

#endif
