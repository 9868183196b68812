/* g4-mkbad - writes the hostile-model catalog: one defect per file, each with the error it
 * must produce (reliability.md §3A-§3B), for tests/sh/hostile.sh.
 *
 *   g4-mkbad DIR    writes DIR/NNN-name.gguf and DIR/manifest.tsv ("file<TAB>expected")
 *
 * "expected" is a substring of the one-line error `g4 info` must print with exit status 1,
 * or "OK" for files that must load (the "must still load" cases). Model-level defects start
 * from a valid random model (src/testgen.c) with keys/tensors skipped or replaced; container
 * defects are built byte by byte.
 */
/* the case table relies on zero-initialised trailing fields */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant/quant.h"
#include "testgen.h"

enum { KU32 = 1, KI32, KF32, KSTR, KBOOL, KARR_U32, KARR_F32, KARR_BOOL, KU16, KARR_STR };

typedef struct kvset {
    const char *key;
    int         kind;
    uint32_t    u;      /* value, or array length for arrays (filled with `fill`) */
    float       f;
    const char *s;
    uint32_t    fill;   /* array element value */
} kvset;

typedef struct tset {
    const char *name;
    uint32_t    type;
    int64_t     ne0, ne1;
    int         nan_at; /* > 0: f32 data with a NaN at this index */
    int64_t     ne2;    /* > 0: a 3-D tensor */
} tset;

typedef struct bad {
    const char *name;
    const char *want;
    const char *skip[6];
    kvset       kv[4];
    tset        t[2];
    int         n_ff;   /* opts override when > 0 */
    int         moe;    /* 1: the base model is MoE (8 experts, top 2, width 64, fused gate/up); 2: split */
} bad;

static uint8_t *g_zero; /* zero data for extra tensors (tools may use globals; the library may not) */

static void add_kvs(gguf_writer *w, void *ud) {
    const bad *b = ud;
    for (int i = 0; i < 4 && b->kv[i].key; i++) {
        const kvset *k = &b->kv[i];
        uint32_t *arr = NULL;
        if (k->kind >= KARR_U32 && k->kind <= KARR_BOOL) {
            arr = calloc(k->u ? k->u : 1, 4);
            for (uint32_t j = 0; j < k->u; j++) arr[j] = k->fill;
        }
        switch (k->kind) {
        case KU32: gguf_w_u32(w, k->key, k->u); break;
        case KU16: gguf_w_u16(w, k->key, (uint16_t)k->u); break;
        case KI32: gguf_w_i32(w, k->key, (int32_t)k->u); break;
        case KF32: gguf_w_f32(w, k->key, k->f); break;
        case KSTR: gguf_w_str(w, k->key, k->s, strlen(k->s)); break;
        case KBOOL: gguf_w_bool(w, k->key, (int)k->u); break;
        case KARR_U32: gguf_w_arr(w, k->key, GGUF_UINT32, arr, k->u); break;
        case KARR_F32: {
            float *fa = (float *)(void *)arr;
            for (uint32_t j = 0; j < k->u; j++) fa[j] = (float)k->fill;
            gguf_w_arr(w, k->key, GGUF_FLOAT32, fa, k->u);
            break;
        }
        case KARR_BOOL: {
            uint8_t *ba = (uint8_t *)arr;
            for (uint32_t j = 0; j < k->u; j++) ba[j] = (uint8_t)k->fill;
            gguf_w_arr(w, k->key, GGUF_BOOL, ba, k->u);
            break;
        }
        case KARR_STR: {
            const char *one[1] = { k->s };
            gguf_w_arr_str(w, k->key, one, NULL, 1);
            break;
        }
        }
        free(arr);
    }
}

static void add_tensors(gguf_writer *w, void *ud) {
    const bad *b = ud;
    for (int i = 0; i < 2 && b->t[i].name; i++) {
        const tset *t = &b->t[i];
        int64_t ne[3] = { t->ne0, t->ne1, t->ne2 };
        const void *data = g_zero;
        if (t->nan_at > 0) {
            float *f = (float *)(void *)(g_zero + (1 << 20));
            for (int64_t j = 0; j < t->ne0; j++) f[j] = 1.0f;
            f[t->nan_at] = NAN;
            data = f;
        }
        gguf_w_tensor(w, t->name, t->type, t->ne2 ? 3 : t->ne1 ? 2 : 1, ne, data);
    }
}

/* The base model: 10 layers SSSSFSSSSF, E 128, 2 heads, 1 KV head, head dim 32/64, FFN 192,
 * 5 shared layers, P 32, window 8, vocabulary 512, context 512, Q8_0 matrices. */
static const bad CASES[] = {
    { "valid", "OK", {0}, {{0}}, {{0}}, 0 },
    { "unknown-extra-tensor", "OK", {0}, {{0}}, {{ "v.blk.0.attn_q.weight", G4_TYPE_F32, 64, 64, 0 }}, 0 },
    /* #30 architecture */
    { "arch-missing", "missing required key 'general.architecture'", { "general.architecture" }, {{0}}, {{0}}, 0 },
    { "arch-wrong-type", "key 'general.architecture' has type u32, expected string", { "general.architecture" },
      {{ "general.architecture", KU32, 7 }}, {{0}}, 0 },
    { "arch-llama", "architecture 'llama' is not supported (supported: gemma4)", { "general.architecture" },
      {{ "general.architecture", KSTR, 0, 0, "llama" }}, {{0}}, 0 },
    /* #31 required keys */
    { "missing-block-count", "missing required key 'gemma4.block_count'", { "gemma4.block_count" }, {{0}}, {{0}}, 0 },
    { "missing-context", "missing required key 'gemma4.context_length'", { "gemma4.context_length" }, {{0}}, {{0}}, 0 },
    { "missing-embd", "missing required key 'gemma4.embedding_length'", { "gemma4.embedding_length" }, {{0}}, {{0}}, 0 },
    { "missing-ff", "missing required key 'gemma4.feed_forward_length'", { "gemma4.feed_forward_length" }, {{0}}, {{0}}, 0 },
    { "missing-heads", "missing required key 'gemma4.attention.head_count'", { "gemma4.attention.head_count" }, {{0}}, {{0}}, 0 },
    { "missing-window", "missing required key 'gemma4.attention.sliding_window'", { "gemma4.attention.sliding_window" }, {{0}}, {{0}}, 0 },
    { "missing-pattern", "missing required key 'gemma4.attention.sliding_window_pattern'",
      { "gemma4.attention.sliding_window_pattern" }, {{0}}, {{0}}, 0 },
    { "missing-key-length", "missing required key 'gemma4.attention.key_length'", { "gemma4.attention.key_length" }, {{0}}, {{0}}, 0 },
    { "missing-key-length-swa", "missing required key 'gemma4.attention.key_length_swa'",
      { "gemma4.attention.key_length_swa" }, {{0}}, {{0}}, 0 },
    { "missing-eps", "missing required key 'gemma4.attention.layer_norm_rms_epsilon'",
      { "gemma4.attention.layer_norm_rms_epsilon" }, {{0}}, {{0}}, 0 },
    { "missing-ple-width", "missing required key 'gemma4.embedding_length_per_layer_input'",
      { "gemma4.embedding_length_per_layer_input" }, {{0}}, {{0}}, 0 },
    /* #32 wrong types */
    { "block-count-string", "key 'gemma4.block_count' has type string, expected u32", { "gemma4.block_count" },
      {{ "gemma4.block_count", KSTR, 0, 0, "ten" }}, {{0}}, 0 },
    { "block-count-i32", "key 'gemma4.block_count' has type i32, expected u32", { "gemma4.block_count" },
      {{ "gemma4.block_count", KI32, 10 }}, {{0}}, 0 },
    { "pattern-scalar", "key 'gemma4.attention.sliding_window_pattern' has type u32, expected an array",
      { "gemma4.attention.sliding_window_pattern" }, {{ "gemma4.attention.sliding_window_pattern", KU32, 1 }}, {{0}}, 0 },
    { "pattern-f32-array", "has type array of f32, expected an array of u32 or i32 or bool",
      { "gemma4.attention.sliding_window_pattern" }, {{ "gemma4.attention.sliding_window_pattern", KARR_F32, 10, 0, 0, 1 }}, {{0}}, 0 },
    { "ff-f32-array", "key 'gemma4.feed_forward_length' has type array of f32, expected u32 or an array of u32/i32",
      { "gemma4.feed_forward_length" }, {{ "gemma4.feed_forward_length", KARR_F32, 10, 0, 0, 192 }}, {{0}}, 0 },
    { "eps-u32", "key 'gemma4.attention.layer_norm_rms_epsilon' has type u32, expected f32",
      { "gemma4.attention.layer_norm_rms_epsilon" }, {{ "gemma4.attention.layer_norm_rms_epsilon", KU32, 1 }}, {{0}}, 0 },
    /* #33 zero / absurd */
    { "block-count-0", "key 'gemma4.block_count' is 0, expected 1 to 512", { "gemma4.block_count" },
      {{ "gemma4.block_count", KU32, 0 }}, {{0}}, 0 },
    { "block-count-1000", "key 'gemma4.block_count' is 1000, expected 1 to 512", { "gemma4.block_count" },
      {{ "gemma4.block_count", KU32, 1000 }}, {{0}}, 0 },
    { "embd-0", "key 'gemma4.embedding_length' is 0", { "gemma4.embedding_length" },
      {{ "gemma4.embedding_length", KU32, 0 }}, {{0}}, 0 },
    { "heads-0", "key 'gemma4.attention.head_count': layer 0 is 0", { "gemma4.attention.head_count" },
      {{ "gemma4.attention.head_count", KU32, 0 }}, {{0}}, 0 },
    { "kv-heads-0", "key 'gemma4.attention.head_count_kv': layer 0 is 0", { "gemma4.attention.head_count_kv" },
      {{ "gemma4.attention.head_count_kv", KU32, 0 }}, {{0}}, 0 },
    { "kv-heads-3", "key 'gemma4.attention.head_count_kv': layer 0 is 3, must be 1 to 2", { "gemma4.attention.head_count_kv" },
      {{ "gemma4.attention.head_count_kv", KU32, 3 }}, {{0}}, 0 },
    { "context-0", "key 'gemma4.context_length' is 0", { "gemma4.context_length" },
      {{ "gemma4.context_length", KU32, 0 }}, {{0}}, 0 },
    { "window-over-context", "key 'gemma4.attention.sliding_window' is 100000, expected 1 to 512",
      { "gemma4.attention.sliding_window" }, {{ "gemma4.attention.sliding_window", KU32, 100000 }}, {{0}}, 0 },
    { "rope-dims-over-head", "key 'gemma4.rope.dimension_count_swa' is 64, must be even and 2 to key_length_swa 32",
      { "gemma4.rope.dimension_count_swa" }, {{ "gemma4.rope.dimension_count_swa", KU32, 64 }}, {{0}}, 0 },
    { "rope-dims-odd", "key 'gemma4.rope.dimension_count' is 63, must be even", { "gemma4.rope.dimension_count" },
      {{ "gemma4.rope.dimension_count", KU32, 63 }}, {{0}}, 0 },
    { "shared-all", "key 'gemma4.attention.shared_kv_layers' is 10, must be below block_count 10",
      { "gemma4.attention.shared_kv_layers" }, {{ "gemma4.attention.shared_kv_layers", KU32, 10 }}, {{0}}, 0 },
    { "shared-layout", "KV sharing needs layer 5 full and layer 4 sliding",
      { "gemma4.attention.shared_kv_layers" }, {{ "gemma4.attention.shared_kv_layers", KU32, 4 }}, {{0}}, 0 },
    { "pattern-no-sliding", "marks no layer as sliding", { "gemma4.attention.sliding_window_pattern" },
      {{ "gemma4.attention.sliding_window_pattern", KARR_BOOL, 10, 0, 0, 0 }}, {{0}}, 0 },
    { "moe-count-only", "missing required key 'gemma4.expert_used_count' (expert_count is 8)", {0},
      {{ "gemma4.expert_count", KU32, 8 }}, {{0}}, 0 },
    { "rope-scaling", "RoPE scaling is not supported", {0}, {{ "gemma4.rope.scaling.factor", KF32, 0, 4.0f }}, {{0}}, 0 },
    /* #34 floats */
    { "eps-nan", "key 'gemma4.attention.layer_norm_rms_epsilon' is nan", { "gemma4.attention.layer_norm_rms_epsilon" },
      {{ "gemma4.attention.layer_norm_rms_epsilon", KF32, 0, NAN }}, {{0}}, 0 },
    { "eps-0", "key 'gemma4.attention.layer_norm_rms_epsilon' is 0, expected a finite positive number",
      { "gemma4.attention.layer_norm_rms_epsilon" }, {{ "gemma4.attention.layer_norm_rms_epsilon", KF32, 0, 0.0f }}, {{0}}, 0 },
    { "rope-base-negative", "key 'gemma4.rope.freq_base' is -1", { "gemma4.rope.freq_base" },
      {{ "gemma4.rope.freq_base", KF32, 0, -1.0f }}, {{0}}, 0 },
    { "rope-base-swa-inf", "key 'gemma4.rope.freq_base_swa' is inf", { "gemma4.rope.freq_base_swa" },
      {{ "gemma4.rope.freq_base_swa", KF32, 0, INFINITY }}, {{0}}, 0 },
    { "softcap-nan", "key 'gemma4.final_logit_softcapping' is nan", { "gemma4.final_logit_softcapping" },
      {{ "gemma4.final_logit_softcapping", KF32, 0, NAN }}, {{0}}, 0 },
    /* #35 shape consistency */
    { "key-value-length-differ", "key_length 64 and value_length 48 differ", { "gemma4.attention.value_length" },
      {{ "gemma4.attention.value_length", KU32, 48 }}, {{0}}, 0 },
    { "key-length-vs-tensors", "tensor 'rope_freqs.weight' has shape [32], expected [24]",
      { "gemma4.attention.key_length", "gemma4.attention.value_length", "gemma4.rope.dimension_count" },
      {{ "gemma4.attention.key_length", KU32, 48 }, { "gemma4.attention.value_length", KU32, 48 },
       { "gemma4.rope.dimension_count", KU32, 48 }}, {{0}}, 0 },
    /* #36 per-layer arrays */
    { "ff-array-short", "key 'gemma4.feed_forward_length' has 9 entries, expected 10", { "gemma4.feed_forward_length" },
      {{ "gemma4.feed_forward_length", KARR_U32, 9, 0, 0, 192 }}, {{0}}, 0 },
    { "kv-heads-array-long", "key 'gemma4.attention.head_count_kv' has 11 entries, expected 10",
      { "gemma4.attention.head_count_kv" }, {{ "gemma4.attention.head_count_kv", KARR_U32, 11, 0, 0, 1 }}, {{0}}, 0 },
    { "pattern-long", "key 'gemma4.attention.sliding_window_pattern' has 11 entries, expected 10",
      { "gemma4.attention.sliding_window_pattern" }, {{ "gemma4.attention.sliding_window_pattern", KARR_BOOL, 11, 0, 0, 1 }}, {{0}}, 0 },
    { "block-count-vs-arrays", "has 10 entries, expected 9", { "gemma4.block_count" },
      {{ "gemma4.block_count", KU32, 9 }}, {{0}}, 0 },
    /* #37 missing tensors */
    { "missing-attn-q", "missing required tensor 'blk.7.attn_q.weight'", { "blk.7.attn_q.weight" }, {{0}}, {{0}}, 0 },
    { "missing-output-norm", "missing required tensor 'output_norm.weight'", { "output_norm.weight" }, {{0}}, {{0}}, 0 },
    { "missing-token-embd", "missing required tensor 'token_embd.weight'", { "token_embd.weight" }, {{0}}, {{0}}, 0 },
    { "missing-rope-freqs", "missing required tensor 'rope_freqs.weight'", { "rope_freqs.weight" }, {{0}}, {{0}}, 0 },
    { "missing-ple-table", "missing required tensor 'per_layer_token_embd.weight'", { "per_layer_token_embd.weight" }, {{0}}, {{0}}, 0 },
    { "missing-owner-k", "missing required tensor 'blk.0.attn_k.weight'", { "blk.0.attn_k.weight" }, {{0}}, {{0}}, 0 },
    { "missing-k-norm", "missing required tensor 'blk.2.attn_k_norm.weight'", { "blk.2.attn_k_norm.weight" }, {{0}}, {{0}}, 0 },
    { "missing-ffn-down", "missing required tensor 'blk.9.ffn_down.weight'", { "blk.9.ffn_down.weight" }, {{0}}, {{0}}, 0 },
    /* #38 wrong shapes */
    { "attn-q-transposed", "tensor 'blk.3.attn_q.weight' has shape [64, 128], expected [128, 64]", { "blk.3.attn_q.weight" },
      {{0}}, {{ "blk.3.attn_q.weight", G4_TYPE_F32, 64, 128, 0 }}, 0 },
    { "ffn-up-off-by-one", "tensor 'blk.1.ffn_up.weight' has shape [128, 193], expected [128, 192]", { "blk.1.ffn_up.weight" },
      {{0}}, {{ "blk.1.ffn_up.weight", G4_TYPE_F32, 128, 193, 0 }}, 0 },
    { "attn-k-mha", "tensor 'blk.0.attn_k.weight' has shape [128, 64], expected [128, 32]", { "blk.0.attn_k.weight" },
      {{0}}, {{ "blk.0.attn_k.weight", G4_TYPE_F32, 128, 64, 0 }}, 0 },
    { "norm-wrong-length", "tensor 'blk.5.attn_norm.weight' has shape [127], expected [128]", { "blk.5.attn_norm.weight" },
      {{0}}, {{ "blk.5.attn_norm.weight", G4_TYPE_F32, 127, 0, 0 }}, 0 },
    /* #39 types for roles */
    { "norm-f16", "tensor 'blk.0.attn_norm.weight' has type f16, expected f32", { "blk.0.attn_norm.weight" },
      {{0}}, {{ "blk.0.attn_norm.weight", G4_TYPE_F16, 128, 0, 0 }}, 0 },
    { "matrix-i32", "tensor 'blk.0.ffn_up.weight' has type i32, expected a supported weight type", { "blk.0.ffn_up.weight" },
      {{0}}, {{ "blk.0.ffn_up.weight", G4_TYPE_I32, 128, 192, 0 }}, 0 },
    { "matrix-iq2_xxs", "tensor 'blk.0.ffn_down.weight' has type iq2_xxs, expected a supported weight type",
      { "blk.0.ffn_down.weight" }, {{0}}, {{ "blk.0.ffn_down.weight", G4_TYPE_IQ2_XXS, 256, 128, 0 }}, 256 },
    { "fused-qkv", "fused QKV projections are not supported yet", {0}, {{0}},
      {{ "blk.0.attn_qkv.weight", G4_TYPE_F32, 128, 128, 0 }}, 0 },
    { "moe-router-no-count", "tensor 'blk.0.ffn_gate_inp.weight' is a mixture-of-experts router, but key 'gemma4.expert_count' is 0 or absent",
      {0}, {{0}}, {{ "blk.0.ffn_gate_inp.weight", G4_TYPE_F32, 128, 8, 0 }}, 0 },
    /* mixture of experts (26B-A4B): the base is an MoE model, 8 experts, top 2, width 64 */
    { "moe-valid", "OK", {0}, {{0}}, {{0}}, 0, 1 },
    { "moe-valid-split", "OK", {0}, {{0}}, {{0}}, 0, 2 },
    { "moe-used-over-count", "key 'gemma4.expert_used_count' is 9, expected 1 to expert_count 8", { "gemma4.expert_used_count" },
      {{ "gemma4.expert_used_count", KU32, 9 }}, {{0}}, 0, 1 },
    { "moe-used-zero", "key 'gemma4.expert_used_count' is 0, expected 1 to expert_count 8", { "gemma4.expert_used_count" },
      {{ "gemma4.expert_used_count", KU32, 0 }}, {{0}}, 0, 1 },
    { "moe-zero-experts", "key 'gemma4.expert_used_count' is 2 but expert_count is 0", { "gemma4.expert_count" },
      {{ "gemma4.expert_count", KU32, 0 }}, {{0}}, 0, 1 },
    { "moe-no-expert-keys", "tensor 'blk.0.ffn_gate_inp.weight' is a mixture-of-experts router, but key 'gemma4.expert_count' is 0 or absent",
      { "gemma4.expert_count", "gemma4.expert_used_count", "gemma4.expert_feed_forward_length" }, {{0}}, {{0}}, 0, 1 },
    { "moe-count-huge", "key 'gemma4.expert_count' is 5000, expected 0 to 1024", { "gemma4.expert_count" },
      {{ "gemma4.expert_count", KU32, 5000 }}, {{0}}, 0, 1 },
    { "moe-count-i32", "key 'gemma4.expert_count' has type i32, expected u32", { "gemma4.expert_count" },
      {{ "gemma4.expert_count", KI32, 8 }}, {{0}}, 0, 1 },
    { "moe-missing-ff-exp", "missing required key 'gemma4.expert_feed_forward_length' (expert_count is 8)",
      { "gemma4.expert_feed_forward_length" }, {{0}}, {{0}}, 0, 1 },
    { "moe-used-array-short", "key 'gemma4.expert_used_count' has 9 entries, expected 10", { "gemma4.expert_used_count" },
      {{ "gemma4.expert_used_count", KARR_U32, 9, 0, 0, 2 }}, {{0}}, 0, 1 },
    { "moe-missing-down", "missing required tensor 'blk.3.ffn_down_exps.weight'", { "blk.3.ffn_down_exps.weight" },
      {{0}}, {{0}}, 0, 1 },
    { "moe-missing-gate-up", "missing required tensor 'blk.6.ffn_gate_exps.weight'", { "blk.6.ffn_gate_up_exps.weight" },
      {{0}}, {{0}}, 0, 1 },
    { "moe-missing-up-split", "missing required tensor 'blk.2.ffn_up_exps.weight'", { "blk.2.ffn_up_exps.weight" },
      {{0}}, {{0}}, 0, 2 },
    { "moe-missing-router-scale", "missing required tensor 'blk.1.ffn_gate_inp.scale'", { "blk.1.ffn_gate_inp.scale" },
      {{0}}, {{0}}, 0, 1 },
    { "moe-missing-norm", "missing required tensor 'blk.4.pre_ffw_norm_2.weight'", { "blk.4.pre_ffw_norm_2.weight" },
      {{0}}, {{0}}, 0, 1 },
    { "moe-wrong-third-dim", "tensor 'blk.2.ffn_gate_up_exps.weight' has shape [128, 128, 7], expected [128, 128, 8]",
      { "blk.2.ffn_gate_up_exps.weight" }, {{0}}, {{ "blk.2.ffn_gate_up_exps.weight", G4_TYPE_Q8_0, 128, 128, 0, 7 }}, 0, 1 },
    { "moe-expert-2d", "tensor 'blk.5.ffn_down_exps.weight' has shape [64, 1024], expected [64, 128, 8]",
      { "blk.5.ffn_down_exps.weight" }, {{0}}, {{ "blk.5.ffn_down_exps.weight", G4_TYPE_Q8_0, 64, 1024, 0 }}, 0, 1 },
    { "moe-router-shape", "tensor 'blk.0.ffn_gate_inp.weight' has shape [128, 7], expected [128, 8]",
      { "blk.0.ffn_gate_inp.weight" }, {{0}}, {{ "blk.0.ffn_gate_inp.weight", G4_TYPE_F32, 128, 7, 0 }}, 0, 1 },
    { "moe-router-i32", "tensor 'blk.0.ffn_gate_inp.weight' has type i32, expected a supported weight type",
      { "blk.0.ffn_gate_inp.weight" }, {{0}}, {{ "blk.0.ffn_gate_inp.weight", G4_TYPE_I32, 128, 8, 0 }}, 0, 1 },
    { "moe-scale-length", "tensor 'blk.3.ffn_down_exps.scale' has shape [7], expected [8]", {0}, {{0}},
      {{ "blk.3.ffn_down_exps.scale", G4_TYPE_F32, 7, 0, 0 }}, 0, 1 },
    { "moe-router-scale-nan", "tensor 'blk.1.ffn_gate_inp.scale': element 5 is nan", { "blk.1.ffn_gate_inp.scale" },
      {{0}}, {{ "blk.1.ffn_gate_inp.scale", G4_TYPE_F32, 128, 0, 5 }}, 0, 1 },
    { "moe-fused-and-split", "tensor 'blk.0.ffn_gate_exps.weight' cannot be used with the fused 'blk.0.ffn_gate_up_exps.weight'",
      {0}, {{0}}, {{ "blk.0.ffn_gate_exps.weight", G4_TYPE_Q8_0, 128, 64, 0, 8 }}, 0, 1 },
    { "moe-orphan-expert", "tensor 'blk.0.ffn_down_exps.weight' belongs to a mixture-of-experts layer, but layer 0 has no router",
      {0}, {{0}}, {{ "blk.0.ffn_down_exps.weight", G4_TYPE_Q8_0, 64, 128, 0, 8 }}, 0, 0 },
    { "moe-no-router", "key 'gemma4.expert_count' is 8 but no layer has a router", {0},
      {{ "gemma4.expert_count", KU32, 8 }, { "gemma4.expert_used_count", KU32, 2 }, { "gemma4.expert_feed_forward_length", KU32, 64 }},
      {{0}}, 0, 0 },
    /* #42 vocabulary vs embedding rows */
    { "embd-rows-below-vocab", "tensor 'token_embd.weight' has shape [128, 400], expected [128, >= 512]",
      { "token_embd.weight" }, {{0}}, {{ "token_embd.weight", G4_TYPE_F32, 128, 400, 0 }}, 0 },
    /* #50 NaN in a small tensor */
    { "norm-nan", "tensor 'blk.1.ffn_norm.weight': element 5 is nan", { "blk.1.ffn_norm.weight" },
      {{0}}, {{ "blk.1.ffn_norm.weight", G4_TYPE_F32, 128, 0, 5 }}, 0 },
    /* #29 split files */
    { "split", "split GGUF files are not supported", {0}, {{ "split.count", KU16, 2 }}, {{0}}, 0 },
    /* #41-#49 vocabulary: the tokenizer's own tests cover the details; here the file level */
    { "vocab-missing", "tokenizer.ggml.tokens", { "tokenizer.ggml.tokens" }, {{0}}, {{0}}, 0 },
    { "vocab-wrong-type", "tokenizer.ggml.tokens", { "tokenizer.ggml.tokens" },
      {{ "tokenizer.ggml.tokens", KARR_U32, 512, 0, 0, 7 }}, {{0}}, 0 },
    { "scores-short", "tokenizer.ggml.scores", { "tokenizer.ggml.scores" },
      {{ "tokenizer.ggml.scores", KARR_F32, 10, 0, 0, 0 }}, {{0}}, 0 },
    { "token-type-wrong-type", "tokenizer.ggml.token_type", { "tokenizer.ggml.token_type" },
      {{ "tokenizer.ggml.token_type", KARR_F32, 512, 0, 0, 1 }}, {{0}}, 0 },
    { "token-type-out-of-range", "tokenizer.ggml.token_type", { "tokenizer.ggml.token_type" },
      {{ "tokenizer.ggml.token_type", KARR_U32, 512, 0, 0, 9 }}, {{0}}, 0 },
    { "merges-missing", "tokenizer.ggml.merges", { "tokenizer.ggml.merges" }, {{0}}, {{0}}, 0 },
    { "merge-no-space", "tokenizer.ggml.merges", { "tokenizer.ggml.merges" },
      {{ "tokenizer.ggml.merges", KARR_STR, 0, 0, "ab" }}, {{0}}, 0 },
    { "merge-unknown-piece", "tokenizer.ggml.merges", { "tokenizer.ggml.merges" },
      {{ "tokenizer.ggml.merges", KARR_STR, 0, 0, "zzzq qqqz" }}, {{0}}, 0 },
    { "bos-out-of-range", "bos", { "tokenizer.ggml.bos_token_id" }, {{ "tokenizer.ggml.bos_token_id", KU32, 99999 }}, {{0}}, 0 },
    { "eos-out-of-range", "eos", { "tokenizer.ggml.eos_token_id" },
      {{ "tokenizer.ggml.eos_token_id", KU32, 0xffffffffu }}, {{0}}, 0 },
    { "tokenizer-model-unknown", "tokenizer.ggml.model", { "tokenizer.ggml.model" },
      {{ "tokenizer.ggml.model", KSTR, 0, 0, "llama" }}, {{0}}, 0 },
};

/* Assistants (gemma4-assistant, MTP draft models) for the base model above, each opened with
 * `g4 info -m asst-target.gguf -md FILE`: 4 layers SSSF, E 64, 2 heads, FFN 128. */
#define AK "gemma4-assistant."
static const bad ACASES[] = {
    { "valid", "OK", {0}, {{0}}, {{0}}, 0 },
    { "arch-gemma4", "architecture 'gemma4' is not gemma4-assistant", { "general.architecture" },
      {{ "general.architecture", KSTR, 0, 0, "gemma4" }}, {{0}}, 0 },
    { "missing-block-count", "missing required key '" AK "block_count'", { AK "block_count" }, {{0}}, {{0}}, 0 },
    { "block-count-100", "key '" AK "block_count' is 100, expected 1 to 64", { AK "block_count" },
      {{ AK "block_count", KU32, 100 }}, {{0}}, 0 },
    { "missing-nextn-layers", "missing required key '" AK "nextn_predict_layers'", { AK "nextn_predict_layers" }, {{0}}, {{0}}, 0 },
    { "nextn-layers-2", "nextn_predict_layers' is 2, expected block_count 4", { AK "nextn_predict_layers" },
      {{ AK "nextn_predict_layers", KU32, 2 }}, {{0}}, 0 },
    { "missing-embd-out", "missing required key '" AK "embedding_length_out'", { AK "embedding_length_out" }, {{0}}, {{0}}, 0 },
    { "embd-out-96", "embedding_length_out' is 96, but the target's embedding_length is 128", { AK "embedding_length_out" },
      {{ AK "embedding_length_out", KU32, 96 }}, {{0}}, 0 },
    { "embd-equals-out", "embedding_length_out' 128 equals embedding_length", { AK "embedding_length" },
      {{ AK "embedding_length", KU32, 128 }}, {{0}}, 0 },
    { "window-16", "sliding window 16 is larger than the target's 8", { AK "attention.sliding_window" },
      {{ AK "attention.sliding_window", KU32, 16 }}, {{0}}, 0 },
    { "window-1", "key '" AK "attention.sliding_window' is 1, expected 2 to 512", { AK "attention.sliding_window" },
      {{ AK "attention.sliding_window", KU32, 1 }}, {{0}}, 0 },
    { "pattern-short", "sliding_window_pattern' has 3 entries, expected 4", { AK "attention.sliding_window_pattern" },
      {{ AK "attention.sliding_window_pattern", KARR_BOOL, 3, 0, 0, 1 }}, {{0}}, 0 },
    { "missing-eps", "missing required key '" AK "attention.layer_norm_rms_epsilon'", { AK "attention.layer_norm_rms_epsilon" },
      {{0}}, {{0}}, 0 },
    { "eps-nan", "layer_norm_rms_epsilon' is nan", { AK "attention.layer_norm_rms_epsilon" },
      {{ AK "attention.layer_norm_rms_epsilon", KF32, 0, NAN }}, {{0}}, 0 },
    { "key-value-differ", "key_length 64 and value_length 48 differ", { AK "attention.value_length" },
      {{ AK "attention.value_length", KU32, 48 }}, {{0}}, 0 },
    { "head-size-vs-target", "layer 0 reads the cache of target layer 8 (1 KV heads of 32) but has 1 KV heads of 16",
      { AK "attention.key_length_swa", AK "attention.value_length_swa", AK "rope.dimension_count_swa" },
      {{ AK "attention.key_length_swa", KU32, 16 }, { AK "attention.value_length_swa", KU32, 16 },
       { AK "rope.dimension_count_swa", KU32, 16 }}, {{0}}, 0 },
    { "kv-heads-vs-target", "but has 2 KV heads of 32", { AK "attention.head_count_kv" },
      {{ AK "attention.head_count_kv", KU32, 2 }}, {{0}}, 0 },
    { "too-many-query-heads", "has 4 query heads per KV head, more than the target's 2", { AK "attention.head_count" },
      {{ AK "attention.head_count", KU32, 4 }}, {{0}}, 0 },
    { "rope-scaling", "RoPE scaling is not supported", {0}, {{ AK "rope.scaling.factor", KF32, 0, 2.0f }}, {{0}}, 0 },
    { "vocab-short", "its vocabulary has 10 tokens, the target's 512", { "tokenizer.ggml.tokens" },
      {{ "tokenizer.ggml.tokens", KARR_U32, 10, 0, 0, 7 }}, {{0}}, 0 },
    { "missing-pre-projection", "missing required tensor 'nextn.pre_projection.weight'", { "nextn.pre_projection.weight" },
      {{0}}, {{0}}, 0 },
    { "pre-projection-shape", "tensor 'nextn.pre_projection.weight' has shape [128, 64], expected [256, 64]",
      { "nextn.pre_projection.weight" }, {{0}}, {{ "nextn.pre_projection.weight", G4_TYPE_F32, 128, 64, 0 }}, 0 },
    { "post-projection-shape", "tensor 'nextn.post_projection.weight' has shape [64, 64], expected [64, 128]",
      { "nextn.post_projection.weight" }, {{0}}, {{ "nextn.post_projection.weight", G4_TYPE_F32, 64, 64, 0 }}, 0 },
    { "missing-layer-scale", "missing required tensor 'blk.2.layer_output_scale.weight'", { "blk.2.layer_output_scale.weight" },
      {{0}}, {{0}}, 0 },
    { "missing-rope-freqs", "missing required tensor 'rope_freqs.weight'", { "rope_freqs.weight" }, {{0}}, {{0}}, 0 },
    { "embd-rows-400", "tensor 'token_embd.weight' has shape [64, 400], expected [64, >= 512]", { "token_embd.weight" },
      {{0}}, {{ "token_embd.weight", G4_TYPE_F32, 64, 400, 0 }}, 0 },
    { "norm-nan", "tensor 'blk.1.ffn_norm.weight': element 3 is nan", { "blk.1.ffn_norm.weight" },
      {{0}}, {{ "blk.1.ffn_norm.weight", G4_TYPE_F32, 64, 0, 3 }}, 0 },
    { "norm-f16", "tensor 'output_norm.weight' has type f16, expected f32", { "output_norm.weight" },
      {{0}}, {{ "output_norm.weight", G4_TYPE_F16, 64, 0, 0 }}, 0 },
};
#undef AK

static int write_raw(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int rc = fwrite(p, 1, n, f) == n ? 0 : -1;
    if (fclose(f)) rc = -1;
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: g4-mkbad DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.tsv", dir);
    FILE *man = fopen(path, "w");
    if (!man) { perror(path); return 1; }
    g_zero = calloc(2 << 20, 1);
    if (!g_zero) return 1;
    int n = 0, rc = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const bad *b = &CASES[i];
        g4_testgen_opts o;
        memset(&o, 0, sizeof o);
        o.wtype = G4_TYPE_Q8_0;   /* small files: ~1 MB each */
        o.n_per_layer = 32;
        o.skip = b->skip;
        o.extra = add_kvs;
        o.extra_tensors = add_tensors;
        o.extra_ud = (void *)(uintptr_t)b;
        if (b->n_ff) o.n_ff = b->n_ff;
        if (b->moe) {
            o.n_expert = 8;
            o.n_expert_used = 2;
            o.n_ff_exp = 64;
            o.moe_split = b->moe == 2;
        }
        char name[128], err[512];
        snprintf(name, sizeof name, "m%03d-%s.gguf", n++, b->name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (testgen_write(path, &o, err, sizeof err) != G4_OK) {
            fprintf(stderr, "g4-mkbad: %s: %s\n", b->name, err);
            rc = 1;
            continue;
        }
        fprintf(man, "%s\t%s\n", name, b->want);
    }
    /* assistants: a target, then one defect per assistant (asst-manifest.tsv) */
    snprintf(path, sizeof path, "%s/asst-manifest.tsv", dir);
    FILE *aman = fopen(path, "w");
    if (!aman) { perror(path); return 1; }
    for (int pass = 0; pass < 2; pass++) {
        const size_t na = pass ? sizeof ACASES / sizeof ACASES[0] : 1;
        for (size_t i = 0; i < na; i++) {
            const bad *b = &ACASES[i];
            g4_testgen_opts o;
            memset(&o, 0, sizeof o);
            o.wtype = G4_TYPE_Q8_0;
            o.n_per_layer = 32;
            o.assistant = pass;
            if (pass) {
                o.skip = b->skip;
                o.extra = add_kvs;
                o.extra_tensors = add_tensors;
                o.extra_ud = (void *)(uintptr_t)b;
            }
            char name[128], err[512];
            if (pass) snprintf(name, sizeof name, "a%03d-%s.gguf", (int)i, b->name);
            else snprintf(name, sizeof name, "asst-target.gguf");
            snprintf(path, sizeof path, "%s/%s", dir, name);
            if (testgen_write(path, &o, err, sizeof err) != G4_OK) {
                fprintf(stderr, "g4-mkbad: assistant %s: %s\n", b->name, err);
                rc = 1;
                continue;
            }
            if (pass) fprintf(aman, "%s\t%s\n", name, b->want);
        }
    }
    fclose(aman);
    /* container-level defects, built by hand from a valid model's bytes */
    g4_testgen_opts o;
    memset(&o, 0, sizeof o);
    o.wtype = G4_TYPE_Q8_0;
    o.n_per_layer = 32;
    void *buf;
    size_t len;
    char err[512];
    if (testgen_write_mem(&buf, &len, &o, err, sizeof err) != G4_OK) { fprintf(stderr, "g4-mkbad: %s\n", err); return 1; }
    uint8_t *p = buf, *q = malloc(len);
    struct { const char *name; size_t cut; uint32_t off; uint64_t val; int width; const char *want; } raw[] = {
        { "empty", 0, 0, 0, 0, "file is empty" },
        { "three-bytes", 3, 0, 0, 0, "truncated in the header" },
        { "magic-only", 4, 0, 0, 0, "truncated in the header" },
        { "cut-in-metadata", 8000, 0, 0, 0, "beyond the end of the file" },
        { "cut-in-data", len - 100, 0, 0, 0, "file incomplete" },
        { "bad-magic", len, 0, 0x47475546, 4, "not a GGUF file" },
        { "version-1", len, 4, 1, 4, "GGUF v1 is not supported" },
        { "big-endian", len, 4, 0x03000000, 4, "big-endian" },
        { "n-tensors-huge", len, 8, UINT64_MAX, 8, "tensors: more than the limit" },
        { "n-kv-huge", len, 16, 1ull << 62, 8, "metadata records" },
        { "first-key-length-huge", len, 24, UINT64_MAX, 8, "exceeds the limit" },
        { "first-value-type-bad", len, 24 + 8 + 20, 99, 4, "unknown value type 99" },
    };
    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
        memcpy(q, p, len);
        uint64_t v = raw[i].val;
        for (int k = 0; k < raw[i].width; k++) q[raw[i].off + k] = (uint8_t)(v >> (8 * k));
        char name[128];
        snprintf(name, sizeof name, "c%03d-%s.gguf", (int)i, raw[i].name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (write_raw(path, q, raw[i].cut)) { perror(path); rc = 1; continue; }
        fprintf(man, "%s\t%s\n", name, raw[i].want);
    }
    free(q);
    free(buf);
    free(g_zero);
    fclose(man);
    return rc;
}
