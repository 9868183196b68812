/* llama_quantize.c - llama.cpp v0.5.0's own llama_model_quantize (the code behind
 * llama-quantize) as an oracle for `g4 quantize`, plus a tensor-by-tensor GGUF comparison.
 * Not built by the Makefile: tests/sh/quantize.sh compiles it when tests/oracle/node_modules
 * holds the node-llama-cpp prebuilt (libllama.v0.5.0.so is loaded with dlopen, nothing is
 * linked against it).
 *
 *   llama_quantize quant LIBDIR IN.gguf OUT.gguf FTYPE [--pure] [--tok T] [--output T] [--tt PATTERN=T]...
 *       FTYPE: llama_ftype number (2 Q4_0, 15 Q4_K_M, ...); T: ggml type number
 *   llama_quantize cmp A.gguf B.gguf [--types-only]
 *       same tensor set; per tensor: type, shape and (unless --types-only) data bytes; the
 *       general.file_type values. Prints one line per mismatch, then "N passed, M failed".
 *
 * The struct below mirrors llama.h's llama_model_quantize_params of v0.5.0 field by field.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g4_impl.h"
#include "gguf.h"

typedef struct lq_override { const char *pattern; int type; } lq_override;

typedef struct lq_params {
    int32_t nthread;
    int ftype;
    int output_tensor_type;
    int token_embedding_type;
    bool allow_requantize;
    bool quantize_output_tensor;
    bool only_copy;
    bool pure;
    bool keep_split;
    bool dry_run;
    const void *imatrix;
    const void *kv_overrides;
    const lq_override *tt_overrides;
    const int32_t *prune_layers;
    size_t max_buf_size;
} lq_params;

static void quiet(int level, const char *text, void *ud) {
    (void)ud;
    if (level >= 4 /* GGML_LOG_LEVEL_ERROR */) fputs(text, stderr);
}

static int do_quant(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: llama_quantize quant LIBDIR IN OUT FTYPE [...]\n"); return 2; }
    char path[4096];
    snprintf(path, sizeof path, "%s/libllama.v0.5.0.so", argv[2]);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "llama_quantize: %s\n", dlerror()); return 3; }
    lq_params (*defaults)(void) = (lq_params (*)(void))dlsym(h, "llama_model_quantize_default_params");
    uint32_t (*quant)(const char *, const char *, const lq_params *) =
        (uint32_t (*)(const char *, const char *, const lq_params *))dlsym(h, "llama_model_quantize");
    void (*log_set)(void (*)(int, const char *, void *), void *) =
        (void (*)(void (*)(int, const char *, void *), void *))dlsym(h, "llama_log_set");
    void (*backend_init)(void) = (void (*)(void))dlsym(h, "llama_backend_init");
    if (!defaults || !quant || !log_set || !backend_init) { fprintf(stderr, "llama_quantize: missing symbols\n"); return 3; }
    log_set(quiet, NULL);
    backend_init();
    lq_params p = defaults();
    p.ftype = atoi(argv[5]);
    p.nthread = 2;
    p.allow_requantize = true;
    static lq_override ov[65];
    int n_ov = 0;
    for (int i = 6; i < argc; i++) {
        if (!strcmp(argv[i], "--pure")) p.pure = true;
        else if (!strcmp(argv[i], "--tok") && i + 1 < argc) p.token_embedding_type = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--output") && i + 1 < argc) p.output_tensor_type = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tt") && i + 1 < argc && n_ov < 64) {
            char *a = argv[++i], *eq = strrchr(a, '=');
            if (!eq) return 2;
            *eq = '\0';
            ov[n_ov].pattern = a;
            ov[n_ov].type = atoi(eq + 1);
            n_ov++;
        } else { fprintf(stderr, "llama_quantize: bad argument %s\n", argv[i]); return 2; }
    }
    ov[n_ov].pattern = NULL;
    if (n_ov) p.tt_overrides = ov;
    uint32_t rc = quant(argv[3], argv[4], &p);
    return rc ? 1 : 0;
}

static int do_cmp(int argc, char **argv) {
    if (argc < 4) return 2;
    int types_only = argc > 4 && !strcmp(argv[4], "--types-only");
    char err[512];
    gguf_file *a = NULL, *b = NULL;
    if (gguf_open(&a, argv[2], 0, NULL, err, sizeof err) || gguf_open(&b, argv[3], 0, NULL, err, sizeof err)) {
        fprintf(stderr, "cmp: %s\n", err);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    long pass = 0, fail = 0;
#define CHECK(c, ...) do { if (c) pass++; else { fail++; fprintf(stderr, "MISMATCH: " __VA_ARGS__); fputc('\n', stderr); } } while (0)
    CHECK(gguf_n_tensors(a) == gguf_n_tensors(b), "tensor count %zu vs %zu", gguf_n_tensors(a), gguf_n_tensors(b));
    for (size_t i = 0; i < gguf_n_tensors(a); i++) {
        const gguf_tensor *x = gguf_tensor_at(a, i), *y = gguf_find_tensor(b, x->name);
        CHECK(y != NULL, "%s missing in %s", x->name, argv[3]);
        if (!y) continue;
        CHECK(x->type == y->type, "%s: type %u vs %u", x->name, x->type, y->type);
        CHECK(!memcmp(x->ne, y->ne, sizeof x->ne), "%s: shape differs", x->name);
        if (!types_only && x->type == y->type && x->nbytes == y->nbytes) {
            size_t nd = 0, first = 0;
            for (size_t k = 0; k < x->nbytes; k++)
                if (x->data[k] != y->data[k]) { if (!nd) first = k; nd++; }
            CHECK(nd == 0, "%s: %zu of %llu bytes differ (first at %zu)", x->name, nd, (unsigned long long)x->nbytes, first);
        }
    }
    const gguf_kv *fa = gguf_find(a, "general.file_type"), *fb = gguf_find(b, "general.file_type");
    CHECK(fa && fb && fa->v.u32 == fb->v.u32, "general.file_type %u vs %u", fa ? fa->v.u32 : 9999, fb ? fb->v.u32 : 9999);
    for (size_t i = 0; i < gguf_n_kv(a); i++) {
        const gguf_kv *k = gguf_kv_at(a, i);
        CHECK(gguf_find(b, k->key) != NULL, "key %s missing in %s", k->key, argv[3]);
    }
    CHECK(gguf_n_kv(a) == gguf_n_kv(b), "key count %zu vs %zu", gguf_n_kv(a), gguf_n_kv(b));
    gguf_close(a);
    gguf_close(b);
    printf("%ld passed, %ld failed\n", pass, fail);
    return fail ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "quant")) return do_quant(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "cmp")) return do_cmp(argc, argv);
    fprintf(stderr, "usage: llama_quantize quant LIBDIR IN OUT FTYPE [...] | cmp A B [--types-only]\n");
    return 2;
}
