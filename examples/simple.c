/* simple.c - load a Gemma 4 GGUF and print a greedy continuation, using only g4.h.
 *
 *   cc simple.c $(pkg-config --cflags --libs g4) -o simple
 *   ./simple gemma-4-E2B-it-Q4_K_M.gguf "The capital of France is" 32
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g4.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [N_TOKENS]\n", argv[0]);
        return 2;
    }
    const char *prompt = argc > 2 ? argv[2] : "The capital of France is";
    int n_gen = argc > 3 ? atoi(argv[3]) : 32;
    char err[512];

    g4_model *m;
    g4_model_opts mo = {0}; /* zero = defaults: all CPUs, best kernels, mmap */
    if (g4_model_open(&m, argv[1], &mo, err, sizeof err) != G4_OK) {
        fprintf(stderr, "simple: %s\n", err);
        return 1;
    }
    g4_session *s;
    g4_session_opts so = {0}; /* context: min(model, 4096) */
    if (g4_session_create(&s, m, &so, err, sizeof err) != G4_OK) {
        fprintf(stderr, "simple: %s\n", err);
        g4_model_close(m);
        return 1;
    }

    int32_t ids[1024];
    size_t n_ids = 0;
    g4_status st = g4_tokenize(m, prompt, strlen(prompt), G4_TOK_ADD_BOS, ids, 1024, &n_ids);
    if (st == G4_OK) st = g4_session_eval(s, ids, n_ids);

    g4_detok dt = {0};
    char piece[256];
    fputs(prompt, stdout);
    for (int i = 0; st == G4_OK && i < n_gen; i++) {
        /* greedy: the highest logit (lowest id on ties) */
        const float *logits = g4_session_logits(s);
        int32_t best = 0;
        for (int32_t t = 1; t < g4_model_n_vocab(m); t++)
            if (logits[t] > logits[best]) best = t;
        if (g4_model_is_eog(m, best)) break;
        fwrite(piece, 1, g4_detok_push(&dt, m, best, 0, piece, sizeof piece), stdout);
        fflush(stdout);
        st = g4_session_eval(s, &best, 1);
    }
    fwrite(piece, 1, g4_detok_flush(&dt, piece, sizeof piece), stdout);
    putchar('\n');
    if (st != G4_OK) fprintf(stderr, "simple: %s: %s\n", g4_status_str(st), g4_session_errmsg(s));

    g4_session_free(s);
    g4_model_close(m);
    return st == G4_OK ? 0 : 1;
}
