/* spec.h - speculative decoding internals shared by spec.c (the loop), ngram.c (n-gram
 * drafters), assistant.c (the gemma4-assistant GGUF, validated against its target), mtp.c
 * (the assistant's forward pass and draft chain) and sampler.c (verification).
 */
#ifndef G4_SPEC_H
#define G4_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "forward.h"
#include "g4_impl.h"

/* ==== The assistant (assistant.c) ==== */

/* A gemma4-assistant model: `base` is a g4_model whose cfg and layers describe the
 * assistant (its own n_embd, RMS eps, window, rope_freqs; P = 0, no softcap) so that the
 * decoder-layer code runs it (forward_layer); its layers own no KV (has_kv 0) and read the
 * target's cache slots (kv_slot = the slot of target layer L-2 for sliding layers, L-1 for
 * full ones, as llama.cpp's share callback maps them). Kernels, pool and GELU table are the
 * target's (borrowed). */
struct g4_assistant {
    g4_model         base;
    const g4_model  *target;
    int32_t          n_embd_out;      /* = target n_embd (E)                                 */
    const g4_tensor *proj_pre;        /* nextn.pre_projection.weight  [2E, n]: concat -> n   */
    const g4_tensor *proj_post;       /* nextn.post_projection.weight [n, E]: next h        */
    const int32_t   *suppress;        /* the target's suppressed tokens (never drafted)      */
    size_t           n_suppress;
};

/* ==== The assistant's forward pass (mtp.c) ==== */

typedef struct mtp_state mtp_state; /* one draft step's scratch, per g4_spec */

G4_INTERNAL g4_status mtp_create(mtp_state **out, const g4_assistant *a, g4_session *target, char *err, size_t errlen);
G4_INTERNAL void      mtp_free(mtp_state *st);
/* One step of llama.cpp's gemma4-assistant graph for token tok at position pos (the target
 * session holds positions < pos) with the target-side hidden state h_in[E]: returns the
 * assistant's logits [n_vocab] (valid until the next step) and writes the next hidden state
 * h_out[E] (nextn_proj_post of the normed output). pos >= 1. */
G4_INTERNAL const float *mtp_step(mtp_state *st, int32_t tok, int32_t pos, const float *h_in, float *h_out);
/* llama.cpp's draft-mtp chain from (last at pos, h): up to max tokens, each the top token of
 * the previous step's logits (suppressed tokens excluded), stopping before a token whose
 * top-10 softmax probability is below p_min; every step at position pos (the assistant writes
 * no cache). Returns the number drafted. */
G4_INTERNAL size_t mtp_draft(mtp_state *st, const float *h, int32_t last, int32_t pos, float p_min,
                             int32_t *draft, size_t max);

/* ==== n-gram drafters (ngram.c) ==== */

/* llama.cpp's ngram-simple (common_ngram_simple_draft): the pattern is the last size_n - 1
 * tokens of hist and then last; its latest earlier occurrence (starting after index 0, not
 * the current one) gives the draft: the up to size_m tokens that followed it, none if fewer
 * than size_n follow. Writes at most max tokens; returns how many. */
G4_INTERNAL size_t ngram_simple_draft(const int32_t *hist, size_t n_hist, int32_t last, int size_n, int size_m,
                                      int32_t *draft, size_t max);

/* ==== Verification (sampler.c) ==== */

/* The token at a drafted position: greedy -> the argmax (accepted iff it equals draft);
 * sampled -> the rejection rule with the drafter's distribution q[n_vocab] (NULL: draft was
 * proposed with certainty). The result is distributed as the sampler's chain over logits.
 * Does not call g4_sampler_accept. */
G4_INTERNAL int32_t sampler_verify(g4_sampler *s, const float *logits, int32_t draft, const float *q, int *accepted);

#endif /* G4_SPEC_H */
