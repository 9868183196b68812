/* llama_forward.c - llama.cpp v0.5.0 (the libllama.v0.5.0.so of a node-llama-cpp prebuilt)
 * as a forward-pass oracle without node: one llama_decode of a prompt of ids, then greedy
 * steps. Not built by the Makefile: tests/sh/oracle_forward_neon.sh cross-compiles it for
 * aarch64 and runs it under qemu against the arm64 prebuilt (libggml, libllama and one CPU
 * variant are loaded with dlopen, nothing is linked against them).
 *
 *   llama_forward LIBDIR CPU-LIB MODEL.gguf IDS N KV LOGITS.f32
 *       LIBDIR holds libggml-base.so, libggml.v0.5.0.so, libllama.v0.5.0.so and CPU-LIB
 *       (e.g. libggml-cpu-armv8.2_2.so: loaded alone, so ggml cannot pick another variant);
 *       IDS: comma-separated token ids, used verbatim (no BOS added); N greedy steps (argmax,
 *       lowest id on ties); KV: f32 or f16 (K and V cache); flash attention off, 1 thread,
 *       context 512, the whole prompt in one ubatch.
 *   Writes the last prompt position's logits (n_vocab float32) to LOGITS.f32 and prints the
 *   N greedy ids, comma-separated, on stdout. Exit 0 on success.
 *
 * The structs below mirror llama.h of v0.5.0 (llama_model_params, llama_context_params,
 * llama_batch) field by field; everything else is opaque.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lf_model_params {
    void *devices;
    const void *tensor_buft_overrides;
    int32_t n_gpu_layers;
    int split_mode, load_mode, lazy_mode;
    int32_t main_gpu;
    const float *tensor_split;
    bool (*progress_callback)(float, void *);
    void *progress_callback_user_data;
    const void *kv_overrides;
    bool vocab_only, check_tensors, use_extra_bufts, no_host, no_alloc, load_mtp;
} lf_model_params;

typedef struct lf_context_params {
    uint32_t n_ctx, n_batch, n_ubatch, n_seq_max, n_rs_seq, n_outputs_max, n_outputs_max_per_seq;
    int32_t n_threads, n_threads_batch;
    int ctx_type, rope_scaling_type, pooling_type, attention_type, flash_attn_type;
    float rope_freq_base, rope_freq_scale, yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
    uint32_t yarn_orig_ctx;
    float defrag_thold;
    bool (*cb_eval)(void *, bool, void *);
    void *cb_eval_user_data;
    int type_k, type_v;
    bool (*abort_callback)(void *);
    void *abort_callback_data;
    bool embeddings, offload_kqv, no_perf, op_offload, swa_full, kv_unified;
    void *samplers;
    size_t n_samplers;
    void *ctx_other;
} lf_context_params;

typedef struct lf_batch {
    int32_t n_tokens;
    int32_t *token;
    float *embd;
    int32_t *pos;
    int32_t *n_seq_id;
    int32_t **seq_id;
    int8_t *logits;
} lf_batch;

static void quiet(int level, const char *text, void *ud) {
    (void)ud;
    if (level >= 4 /* GGML_LOG_LEVEL_ERROR */) fputs(text, stderr);
}

/* dlsym's object pointer as a function pointer (ISO C has no cast between them) */
#define SYM(h, name, fp) do { void *p_ = dlsym((h), (name)); memcpy(&(fp), &p_, sizeof(fp)); \
        if (!p_) { fprintf(stderr, "llama_forward: no %s\n", (name)); return 3; } } while (0)

static int argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[b]) b = i;
    return b;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: llama_forward LIBDIR CPU-LIB MODEL.gguf IDS N KV LOGITS.f32\n");
        return 2;
    }
    const int n_gen = atoi(argv[5]), kv = !strcmp(argv[6], "f16") ? 1 : 0;
    if (n_gen < 0 || n_gen > 4096 || (kv == 0 && strcmp(argv[6], "f32"))) { fprintf(stderr, "llama_forward: bad N or KV\n"); return 2; }
    int32_t *ids = malloc(strlen(argv[4]) * sizeof *ids + sizeof *ids);
    int n_ids = 0;
    for (char *p = argv[4]; *p;) {
        char *e;
        const long v = strtol(p, &e, 10);
        if (e == p || v < 0 || v > INT32_MAX) { fprintf(stderr, "llama_forward: bad ids\n"); return 2; }
        ids[n_ids++] = (int32_t)v;
        p = *e == ',' ? e + 1 : e;
    }
    if (n_ids < 1 || n_ids + n_gen > 512) { fprintf(stderr, "llama_forward: 1 .. 512 tokens in all\n"); return 2; }

    char path[4096];
    static const char *LIBS[] = { "libggml-base.so", "libggml.v0.5.0.so", "libllama.v0.5.0.so" };
    void *h[3];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", argv[1], LIBS[i]);
        h[i] = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (!h[i]) { fprintf(stderr, "llama_forward: %s\n", dlerror()); return 3; }
    }
    void *(*backend_load)(const char *);
    void (*log_set)(void (*)(int, const char *, void *), void *), (*backend_init)(void);
    lf_model_params (*model_defaults)(void);
    lf_context_params (*ctx_defaults)(void);
    void *(*model_load)(const char *, lf_model_params), *(*ctx_init)(void *, lf_context_params);
    lf_batch (*batch_one)(int32_t *, int32_t);
    int32_t (*decode)(void *, lf_batch);
    float *(*logits_ith)(void *, int32_t);
    const void *(*get_vocab)(const void *);
    int32_t (*n_tokens)(const void *);
    void (*ctx_free)(void *), (*model_free)(void *);
    SYM(h[1], "ggml_backend_load", backend_load);
    SYM(h[2], "llama_log_set", log_set);
    SYM(h[2], "llama_backend_init", backend_init);
    SYM(h[2], "llama_model_default_params", model_defaults);
    SYM(h[2], "llama_context_default_params", ctx_defaults);
    SYM(h[2], "llama_model_load_from_file", model_load);
    SYM(h[2], "llama_init_from_model", ctx_init);
    SYM(h[2], "llama_batch_get_one", batch_one);
    SYM(h[2], "llama_decode", decode);
    SYM(h[2], "llama_get_logits_ith", logits_ith);
    SYM(h[2], "llama_model_get_vocab", get_vocab);
    SYM(h[2], "llama_vocab_n_tokens", n_tokens);
    SYM(h[2], "llama_free", ctx_free);
    SYM(h[2], "llama_model_free", model_free);
    log_set(quiet, NULL);
    snprintf(path, sizeof path, "%s/%s", argv[1], argv[2]);
    if (!backend_load(path)) { fprintf(stderr, "llama_forward: cannot load %s\n", path); return 3; }
    backend_init(); /* a backend is registered: it loads no other */

    lf_model_params mp = model_defaults();
    mp.n_gpu_layers = 0;
    void *model = model_load(argv[3], mp);
    if (!model) { fprintf(stderr, "llama_forward: cannot load %s\n", argv[3]); return 1; }
    lf_context_params cp = ctx_defaults();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 512;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.flash_attn_type = 0; /* LLAMA_FLASH_ATTN_TYPE_DISABLED */
    cp.type_k = cp.type_v = kv; /* GGML_TYPE_F32 0, F16 1 */
    cp.no_perf = true;
    void *ctx = ctx_init(model, cp);
    if (!ctx) { fprintf(stderr, "llama_forward: no context\n"); return 1; }
    const int nv = n_tokens(get_vocab(model));

    if (decode(ctx, batch_one(ids, n_ids)) != 0) { fprintf(stderr, "llama_forward: prompt decode failed\n"); return 1; }
    const float *lg = logits_ith(ctx, -1);
    FILE *f = fopen(argv[7], "wb");
    if (!lg || !f || fwrite(lg, sizeof *lg, (size_t)nv, f) != (size_t)nv || fclose(f) != 0) {
        fprintf(stderr, "llama_forward: cannot write %s\n", argv[7]);
        return 1;
    }
    int32_t tok = argmax(lg, nv);
    for (int k = 0; k < n_gen; k++) {
        printf(k ? ",%d" : "%d", (int)tok);
        if (k + 1 == n_gen) break;
        if (decode(ctx, batch_one(&tok, 1)) != 0) { fprintf(stderr, "llama_forward: decode failed\n"); return 1; }
        tok = argmax(logits_ith(ctx, -1), nv);
    }
    printf("\n");
    ctx_free(ctx);
    model_free(model);
    free(ids);
    return 0;
}
