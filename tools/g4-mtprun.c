/* g4-mtprun - the schedule of tests/oracle/llama_mtp.c through gemma4.c: a target prompt,
 * then a chain of assistant (MTP) draft steps, writing the same files, for
 * tests/sh/oracle_mtp.sh to compare bit for bit.
 *
 *   g4-mtprun -m TARGET -a ASSISTANT -p IDS -k STEPS -o OUT [--kv f32|f16] [-t N]
 *
 * OUT.h0.f32: the target's post-final-norm hidden state of the last prompt position;
 * OUT.logits.f32 / OUT.h.f32: each draft step's logits and next hidden state; stdout: the
 * target's greedy token and each step's. Kernels: $G4_ISA (the oracle pins avx2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

static int put(const char *prefix, const char *suffix, const float *x, size_t n, const char *mode) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", prefix, suffix);
    FILE *f = fopen(path, mode);
    if (!f) return 0;
    const int ok = fwrite(x, sizeof(float), n, f) == n;
    return fclose(f) == 0 && ok;
}

int main(int argc, char **argv) {
    const char *tpath = NULL, *apath = NULL, *ids = NULL, *out = NULL, *kv = "f16";
    int steps = 0, threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) tpath = argv[i + 1];
        else if (!strcmp(argv[i], "-a")) apath = argv[i + 1];
        else if (!strcmp(argv[i], "-p")) ids = argv[i + 1];
        else if (!strcmp(argv[i], "-k")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-o")) out = argv[i + 1];
        else if (!strcmp(argv[i], "--kv")) kv = argv[i + 1];
        else if (!strcmp(argv[i], "-t")) threads = atoi(argv[i + 1]);
        else { fprintf(stderr, "g4-mtprun: unknown option '%s'\n", argv[i]); return 2; }
    }
    if (!tpath || !apath || !ids || !out || steps < 0) {
        fprintf(stderr, "usage: g4-mtprun -m TARGET -a ASSISTANT -p IDS -k STEPS -o OUT [--kv f32|f16] [-t N]\n");
        return 2;
    }
    int32_t prompt[4096];
    size_t n = 0;
    char *dup = strdup(ids);
    for (char *p = strtok(dup, ","); p && n < 4096; p = strtok(NULL, ",")) prompt[n++] = (int32_t)atoi(p);
    free(dup);
    char err[512];
    g4_model *m = NULL;
    g4_model_opts mo = { .n_threads = threads };
    if (g4_model_open(&m, tpath, &mo, err, sizeof err) != G4_OK) { fprintf(stderr, "g4-mtprun: %s\n", err); return 1; }
    g4_assistant *a = NULL;
    if (g4_assistant_open(&a, m, apath, NULL, err, sizeof err) != G4_OK) {
        fprintf(stderr, "g4-mtprun: %s\n", err);
        g4_model_close(m);
        return 1;
    }
    g4_session_opts so = { .n_ctx = 2048, .cache_type = !strcmp(kv, "f32") ? G4_CACHE_F32 : G4_CACHE_F16, .keep_hidden = 1 };
    g4_session *s = NULL;
    mtp_state *st = NULL;
    int rc = 1;
    const int V = g4_model_n_vocab(m), E = g4_model_n_embd(m);
    float *h = malloc(2 * (size_t)E * sizeof *h);
    if (!h || g4_session_create(&s, m, &so, err, sizeof err) != G4_OK || mtp_create(&st, a, s, err, sizeof err) != G4_OK) {
        fprintf(stderr, "g4-mtprun: %s\n", h ? err : "out of memory");
        goto done;
    }
    if (g4_session_eval(s, prompt, n) != G4_OK) { fprintf(stderr, "g4-mtprun: %s\n", g4_session_errmsg(s)); goto done; }
    memcpy(h, g4_session_hidden(s, 0), (size_t)E * sizeof *h);
    int t = argmax(g4_session_logits(s), V);
    printf("%d", t);
    if (!put(out, "h0.f32", h, (size_t)E, "wb") || !put(out, "logits.f32", h, 0, "wb") || !put(out, "h.f32", h, 0, "wb")) goto io;
    for (int k = 0; k < steps; k++) {
        float *hn = h + (size_t)((k + 1) % 2) * (size_t)E, *hc = h + (size_t)(k % 2) * (size_t)E;
        const float *lg = mtp_step(st, t, (int32_t)n, hc, hn);
        if (!put(out, "logits.f32", lg, (size_t)V, "ab") || !put(out, "h.f32", hn, (size_t)E, "ab")) goto io;
        t = argmax(lg, V);
        printf(" %d", t);
    }
    printf("\n");
    rc = 0;
    goto done;
io:
    fprintf(stderr, "g4-mtprun: cannot write %s.*\n", out);
done:
    mtp_free(st);
    g4_session_free(s);
    g4_assistant_close(a);
    g4_model_close(m);
    free(h);
    return rc;
}
