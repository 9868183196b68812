/* testgen.h - random, well-conditioned Gemma 4 GGUF files written with our own writer.
 *
 * The everyday test input (no real weights exist on these machines): E2B-like topology
 * scaled down, with a small synthetic BPE vocabulary. Values follow shared/docs/oracle.md §7
 * (matrices N(0, 0.05), embeddings N(0, 0.1), norms 1 + N(0, 0.1), q/k norms with mean
 * head_dim^-0.25), seeded per tensor from its name, so files are byte-reproducible.
 * Used by tests, `make demo`, tools/g4-mkmodel and the benchmark model. MoE models
 * (n_expert > 0) carry the 26B-A4B tensor set: router, its scale, the three extra norms and
 * 3-D expert tensors, fused or split gate/up.
 */
#ifndef G4_TESTGEN_H
#define G4_TESTGEN_H

#include <stddef.h>
#include <stdint.h>

#include "g4_impl.h"
#include "gguf.h"

typedef struct g4_testgen_opts {
    int      n_layer;        /* 10 */
    int      n_embd;         /* 128 */
    int      n_head;         /* 2 */
    int      n_head_kv;      /* 1 (sliding layers) */
    int      n_head_kv_full; /* 0 = n_head_kv; else head_count_kv is written as a per-layer array */
    int      head_dim_swa;   /* 32 */
    int      head_dim_full;  /* 64 */
    int      n_ff;           /* 192 */
    int      n_ff_shared;    /* 0 = n_ff; else feed_forward_length is a per-layer array */
    int      n_shared;       /* shared_kv_layers, 5 (-1 = 0) */
    int      full_every;     /* layer i is full when i % full_every == full_every - 1; 5 */
    int      n_per_layer;    /* P, 16 (-1 = 0: no per-layer embeddings) */
    int      window;         /* 8 */
    int      n_vocab;        /* 512 (>= 400) */
    int      n_ctx;          /* 512 */
    float    softcap;        /* 30 (-1 = write 0: no soft-cap) */
    int      untied;         /* 1 = write output.weight */
    int      k_eq_v;         /* 1 = no attn_v on KV-owning layers (V = K) */
    int      shared_kv_tensors; /* 1 = shared layers carry (unused) attn_k/attn_v/attn_k_norm */
    int      no_layer_scale; /* 1 = omit layer_output_scale */
    uint32_t wtype;          /* type of the projection matrices (F32) */
    uint32_t embd_type;      /* token_embd / per_layer_token_embd type (0 = wtype) */
    int      q4_k_m;         /* 1 = llama-quantize Q4_K_M-like mix (overrides wtype/embd_type) */
    int      f32_twin;       /* 1 = write quantize->dequantize round trips as F32 */
    int      k_eq_v_full;    /* 1 = no attn_v on full layers only (V = K there; 26B-A4B, 31B) */
    /* mixture of experts (26B-A4B): n_expert > 0 makes layers >= moe_first MoE layers */
    int      n_expert;       /* 0 = dense */
    int      n_expert_used;  /* top-k; 0 = min(8, n_expert) */
    int      n_ff_exp;       /* expert FFN width; 0 = n_ff / 2 */
    int      moe_first;      /* first MoE layer (earlier layers stay dense) */
    int      moe_split;      /* 1 = ffn_gate_exps + ffn_up_exps instead of the fused ffn_gate_up_exps */
    int      moe_scales;     /* 1 = write ffn_down_exps.scale (and the gate/up scales when split) */
    uint32_t exp_type;       /* type of the expert matrices (0 = wtype) */
    int      fast_fill;      /* 1 = rows drawn from 64 distinct random rows per tensor: valid
                              * data at memcpy speed, for timing-only models (E2B size) */
    uint64_t seed;           /* 0 = 1 */
    /* A test device: the model answers every prompt that ends in a newline token with this
     * text (greedy, and with any sampling that keeps only likely tokens). The vocabulary gains
     * the Gemma 4 tool tokens (<|tool> <tool|> <|tool_call> <tool_call|> <tool_response|>
     * <|"|>, user-defined, after the other specials); the text is spelled with tokens used once
     * each (a character's own token, its byte token, or a longer piece), "\n" -> t1 -> ... ->
     * <eos> is wired into an untied output head whose row for each next token is a multiple of
     * the current token's embedding, and the post-norms that add to the residual stream are
     * scaled by 1e-4 so the last hidden state stays close to the current token's embedding.
     * Fails with a message when the text cannot be spelled so. NULL = an ordinary model. */
    const char *script;
    /* with script: the text repeats forever instead of ending in <eos> (its first token follows
     * its last one too): a test and benchmark device for n-gram drafters, whose drafts are then
     * right, with margins wide enough that every float order gives the same greedy tokens */
    int      script_loop;
    /* assistant = 1: write a gemma4-assistant (MTP draft model) for the target the fields
     * above describe instead: its vocabulary, head sizes, KV heads and window, embedding_length_out
     * = n_embd; the last of its layers full, the others sliding */
    int      assistant;
    int      asst_n_embd;    /* 64 (must differ from n_embd) */
    int      asst_n_layer;   /* 4 */
    int      asst_n_head;    /* 0 = n_head */
    int      asst_n_ff;      /* 128 */
    /* defect injection for hostile-model tests */
    const char *const *skip; /* NULL-terminated keys / tensor names to omit */
    void (*extra)(gguf_writer *w, void *ud); /* called after the keys, before the tensors */
    void (*extra_tensors)(gguf_writer *w, void *ud); /* called after the tensors */
    void    *extra_ud;
} g4_testgen_opts;

/* Fills unset (zero) fields with the defaults above. */
G4_INTERNAL void testgen_defaults(g4_testgen_opts *o);
/* The E2B shape (35 layers, E 1536, real hyperparameters) for benchmarks. */
G4_INTERNAL void testgen_e2b(g4_testgen_opts *o);
/* An assistant for it (after testgen_e2b): 4 layers of 256, 4 heads, FFN 2048 (a guess at
 * the released E2B assistant's size, ~76 M parameters, most of them the tied head). */
G4_INTERNAL void testgen_e2b_assistant(g4_testgen_opts *o);
/* The 26B-A4B shape (30 layers, E 2816, 16 heads, KV heads 8 sliding / 2 full, K = V on full
 * layers, window 1024, shared MLP 2112, 128 experts top 8 of width 704, no PLE, no KV
 * sharing; gemma4-architecture.md §1). */
G4_INTERNAL void testgen_26b(g4_testgen_opts *o);
/* The 31B shape (60 layers, E 5376, 32 heads, KV heads 16 / 4, K = V on full layers, window
 * 1024, FFN 21504, no PLE, no KV sharing). */
G4_INTERNAL void testgen_31b(g4_testgen_opts *o);

G4_INTERNAL g4_status testgen_write(const char *path, const g4_testgen_opts *o, char *err, size_t errlen);
/* Into a malloc'ed buffer (free with free()). */
G4_INTERNAL g4_status testgen_write_mem(void **buf, size_t *len, const g4_testgen_opts *o, char *err, size_t errlen);

#endif
