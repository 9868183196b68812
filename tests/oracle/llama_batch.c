/* llama_batch.c - llama.cpp v0.5.0 decoding several sequences together, as an oracle for
 * g4_batch_eval (tools/g4-batchrun.c runs the same schedule through gemma4.c).
 * Not built by the Makefile: tests/sh/oracle_batch.sh compiles it against llama.h from the
 * llama.cpp tree inside node-llama-cpp and links the npm package's prebuilt libllama; the CPU
 * backend is the one library named on the command line (pinned, e.g. the haswell variant).
 *
 *   llama_batch CPU_LIB MODEL SCHEDULE LOGITS_OUT [--kv f32|f16] [-t N]
 *
 * SCHEDULE (the same file g4-batchrun reads), one directive per line:
 *   seqs N              N sequences (first line), ids 0 .. N-1
 *   eval S:ID,ID,... S:ID,...
 *                       one llama_decode holding those tokens (sequence by sequence, in the
 *                       order given, each at its next positions); the last token of each
 *                       listed sequence is an output
 *   gen K [S,S,...]     K steps; each step one llama_decode of every listed sequence's (or
 *                       every sequence's) greedy token from its latest logits
 * Output: LOGITS_OUT gets every output's logits (n_vocab float32), in decode order and within
 * a decode in sequence order; stdout one line per decode: the greedy id of each output.
 * Greedy = the lowest id among the maximal logits. Context: a KV cache per sequence
 * (kv_unified false, llama.cpp's default), flash attention off, n_batch = n_ubatch = 4096.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

#define MAX_SEQ 64
#define MAX_TOK 8192

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

static void die(const char *m) {
    fprintf(stderr, "llama_batch: %s\n", m);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 5) die("usage: llama_batch CPU_LIB MODEL SCHEDULE LOGITS_OUT [--kv f32|f16] [-t N]");
    enum ggml_type kv = GGML_TYPE_F32;
    int threads = 1;
    for (int i = 5; i < argc; i++) {
        if (!strcmp(argv[i], "--kv") && i + 1 < argc) { i++; kv = !strcmp(argv[i], "f16") ? GGML_TYPE_F16 : GGML_TYPE_F32; }
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else die("bad argument");
    }
    if (!ggml_backend_load(argv[1])) die("cannot load the CPU backend library");
    FILE *sf = fopen(argv[3], "r");
    if (!sf) die("cannot open the schedule");
    FILE *lf = fopen(argv[4], "wb");
    if (!lf) die("cannot write the logits file");

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[2], mp);
    if (!model) die("cannot load the model");
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);

    static char line[1 << 17];
    int n_seq = 0;
    if (!fgets(line, sizeof line, sf) || sscanf(line, "seqs %d", &n_seq) != 1 || n_seq < 1 || n_seq > MAX_SEQ)
        die("the schedule must start with 'seqs N'");
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 8192u * (uint32_t)n_seq;
    cp.n_batch = cp.n_ubatch = MAX_TOK;
    cp.n_seq_max = (uint32_t)n_seq;
    cp.kv_unified = false;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = cp.type_v = kv;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) die("cannot create the context");

    struct llama_batch b = llama_batch_init(MAX_TOK, 0, 1);
    int n_past[MAX_SEQ] = {0}, last[MAX_SEQ] = {0};
    float *lg = malloc((size_t)n_vocab * sizeof(float));
    if (!lg) die("out of memory");
    int steps = 0;
    while (fgets(line, sizeof line, sf)) {
        int reps = 1, only[MAX_SEQ], n_only = 0, gen = 0;
        if (!strncmp(line, "gen ", 4)) {
            gen = 1;
            char list[4096] = "";
            if (sscanf(line + 4, "%d %4095s", &reps, list) < 1 || reps < 0) die("bad gen line");
            for (char *p = strtok(list, ","); p; p = strtok(NULL, ",")) only[n_only++] = atoi(p);
            if (!n_only) for (int q = 0; q < n_seq; q++) only[n_only++] = q;
        } else if (strncmp(line, "eval ", 5)) {
            continue;
        }
        for (int r = 0; r < reps; r++) {
            b.n_tokens = 0;
            int out_seq[MAX_SEQ], out_idx[MAX_SEQ], n_out = 0;
            if (gen) {
                for (int k = 0; k < n_only; k++) {
                    const int q = only[k];
                    b.token[b.n_tokens] = last[q];
                    b.pos[b.n_tokens] = n_past[q]++;
                    b.n_seq_id[b.n_tokens] = 1;
                    b.seq_id[b.n_tokens][0] = q;
                    b.logits[b.n_tokens] = 1;
                    out_seq[n_out] = q;
                    out_idx[n_out++] = b.n_tokens++;
                }
            } else {
                char *save = NULL;
                for (char *g = strtok_r(line + 5, " \n", &save); g; g = strtok_r(NULL, " \n", &save)) {
                    int q = atoi(g);
                    char *c = strchr(g, ':');
                    if (!c || q < 0 || q >= n_seq) die("bad eval group");
                    char *s2 = NULL;
                    for (char *t = strtok_r(c + 1, ",", &s2); t; t = strtok_r(NULL, ",", &s2)) {
                        if (b.n_tokens >= MAX_TOK) die("too many tokens");
                        b.token[b.n_tokens] = atoi(t);
                        b.pos[b.n_tokens] = n_past[q]++;
                        b.n_seq_id[b.n_tokens] = 1;
                        b.seq_id[b.n_tokens][0] = q;
                        b.logits[b.n_tokens] = 0;
                        b.n_tokens++;
                    }
                    b.logits[b.n_tokens - 1] = 1;
                    out_seq[n_out] = q;
                    out_idx[n_out++] = b.n_tokens - 1;
                }
            }
            if (b.n_tokens == 0) continue;
            if (llama_decode(ctx, b) != 0) die("llama_decode failed");
            for (int k = 0; k < n_out; k++) {
                const float *l = llama_get_logits_ith(ctx, out_idx[k]);
                if (!l) die("no logits");
                memcpy(lg, l, (size_t)n_vocab * sizeof(float));
                if (fwrite(lg, sizeof(float), (size_t)n_vocab, lf) != (size_t)n_vocab) die("write failed");
                last[out_seq[k]] = argmax(lg, n_vocab);
                printf("%s%d", k ? " " : "", last[out_seq[k]]);
            }
            printf("\n");
            steps++;
        }
    }
    fclose(lf);
    fclose(sf);
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    free(lg);
    return steps > 0 ? 0 : 1;
}
