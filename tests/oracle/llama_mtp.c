/* llama_mtp.c - llama.cpp v0.5.0 running a Gemma 4 assistant (gemma4-assistant, MTP) next to
 * its target, as an oracle for gemma4.c's assistant (tools/g4-mtprun.c does the same through
 * gemma4.c). Not built by the Makefile: tests/sh/oracle_mtp.sh compiles it against llama.h
 * from the llama.cpp tree inside node-llama-cpp and links the npm package's prebuilt
 * libllama; the CPU backend is the one library named on the command line (pinned).
 *
 *   llama_mtp CPU_LIB TARGET ASSISTANT IDS STEPS OUT [--kv f32|f16] [-t N]
 *
 * The MTP wiring is llama.cpp's own (common/speculative.cpp, draft-mtp with a memory-sharing
 * assistant): the draft context is created with ctx_type LLAMA_CONTEXT_TYPE_MTP and the
 * target context as ctx_other (its layers then view the target's KV cache); the target
 * exposes its post-final-norm hidden states (llama_set_embeddings_nextn(ctx, true, false)),
 * the draft context its next hidden state (..., true, true). Schedule: the target decodes the
 * prompt IDS (comma-separated) in one batch; t = greedy token of the last position, h = the
 * target's hidden state of that position; then STEPS draft steps, each one llama_decode of
 * the draft context with token t and embedding h at position n (the prompt length: every
 * step at the same position, as llama.cpp drafts), t = greedy token of the step's logits,
 * h = its h_nextn. Output files: OUT.h0.f32 (the target's h, n_embd float32), OUT.logits.f32
 * (each step's logits, n_vocab float32), OUT.h.f32 (each step's next h); stdout: the target's
 * greedy token, then each step's, one line. Greedy = the lowest id among the maxima.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

/* llama.cpp's staging API (src/llama-ext.h, C++ linkage): exported by libllama under these
 * mangled names; the MTP driver in common/speculative.cpp uses exactly these two */
extern void _Z26llama_set_embeddings_nextnP13llama_contextbb(struct llama_context *ctx, bool value, bool masked);
extern float *_Z30llama_get_embeddings_nextn_ithP13llama_contexti(struct llama_context *ctx, int32_t i);
#define set_nextn _Z26llama_set_embeddings_nextnP13llama_contextbb
#define get_nextn _Z30llama_get_embeddings_nextn_ithP13llama_contexti

#define MAX_TOK 4096

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

static void die(const char *m) {
    fprintf(stderr, "llama_mtp: %s\n", m);
    exit(1);
}

static FILE *open_out(const char *prefix, const char *suffix) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", prefix, suffix);
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot write an output file");
    return f;
}

static void put(FILE *f, const float *x, int n) {
    if (fwrite(x, sizeof(float), (size_t)n, f) != (size_t)n) die("write failed");
}

int main(int argc, char **argv) {
    if (argc < 7) die("usage: llama_mtp CPU_LIB TARGET ASSISTANT IDS STEPS OUT [--kv f32|f16] [-t N]");
    enum ggml_type kv = GGML_TYPE_F16;
    int threads = 1;
    for (int i = 7; i < argc; i++) {
        if (!strcmp(argv[i], "--kv") && i + 1 < argc) { i++; kv = !strcmp(argv[i], "f16") ? GGML_TYPE_F16 : GGML_TYPE_F32; }
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else die("bad argument");
    }
    const int steps = atoi(argv[5]);
    if (!ggml_backend_load(argv[1])) die("cannot load the CPU backend library");
    static int ids[MAX_TOK];
    int n = 0;
    for (char *p = strtok(argv[4], ","); p && n < MAX_TOK; p = strtok(NULL, ",")) ids[n++] = atoi(p);
    if (n < 1) die("no prompt ids");

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *tm = llama_model_load_from_file(argv[2], mp);
    if (!tm) die("cannot load the target");
    struct llama_model *am = llama_model_load_from_file(argv[3], mp);
    if (!am) die("cannot load the assistant");
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(tm));
    const int n_embd = llama_model_n_embd(tm);
    if (llama_model_n_embd_out(am) != n_embd) die("the assistant's n_embd_out is not the target's n_embd");

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = cp.n_ubatch = MAX_TOK;
    cp.n_seq_max = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = cp.type_v = kv;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context *ct = llama_init_from_model(tm, cp);
    if (!ct) die("cannot create the target context");
    set_nextn(ct, true, false);
    struct llama_context_params dp = cp;
    dp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
    dp.ctx_other = ct;
    struct llama_context *cd = llama_init_from_model(am, dp);
    if (!cd) die("cannot create the assistant (MTP) context");
    set_nextn(cd, true, true);

    /* the prompt through the target */
    struct llama_batch b = llama_batch_init(MAX_TOK, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = ids[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i == n - 1;
    }
    b.n_tokens = n;
    if (llama_decode(ct, b) != 0) die("llama_decode (target) failed");
    const float *lt = llama_get_logits_ith(ct, n - 1);
    const float *h0 = get_nextn(ct, n - 1);
    if (!lt || !h0) die("no target logits or hidden state");
    float *h = malloc((size_t)n_embd * sizeof *h);
    if (!h) die("out of memory");
    memcpy(h, h0, (size_t)n_embd * sizeof *h);
    FILE *fh0 = open_out(argv[6], "h0.f32"), *fl = open_out(argv[6], "logits.f32"), *fh = open_out(argv[6], "h.f32");
    put(fh0, h, n_embd);
    int t = argmax(lt, n_vocab);
    printf("%d", t);

    /* the draft chain: token + embedding batches, as common/speculative.cpp builds them */
    struct llama_batch d = llama_batch_init(1, n_embd, 1);
    d.token = malloc(sizeof *d.token);
    if (!d.token) die("out of memory");
    for (int s = 0; s < steps; s++) {
        d.n_tokens = 1;
        d.token[0] = t;
        memcpy(d.embd, h, (size_t)n_embd * sizeof *h);
        d.pos[0] = n;
        d.n_seq_id[0] = 1;
        d.seq_id[0][0] = 0;
        d.logits[0] = 1;
        if (llama_decode(cd, d) != 0) die("llama_decode (assistant) failed");
        const float *ld = llama_get_logits_ith(cd, 0);
        const float *hn = get_nextn(cd, 0);
        if (!ld || !hn) die("no assistant logits or hidden state");
        put(fl, ld, n_vocab);
        put(fh, hn, n_embd);
        memcpy(h, hn, (size_t)n_embd * sizeof *h);
        t = argmax(ld, n_vocab);
        printf(" %d", t);
    }
    printf("\n");
    fclose(fh0);
    fclose(fl);
    fclose(fh);
    free(d.token);
    d.token = NULL;
    llama_batch_free(d);
    llama_batch_free(b);
    llama_free(cd);
    llama_free(ct);
    llama_model_free(am);
    llama_model_free(tm);
    free(h);
    return 0;
}
