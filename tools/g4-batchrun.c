/* g4-batchrun - runs a schedule of batched evals through g4_batch_eval (g4.h only), the
 * counterpart of tests/oracle/llama_batch.c (same schedule format, same outputs; see there).
 *
 *   g4-batchrun -m MODEL -s SCHEDULE -o LOGITS_OUT [--kv f32|f16|q8_0] [-t N] [-ub N]
 *               [--out N] [--sub N]
 *
 * -ub: rows of one forward chunk of the batch (default 128); --out: logits rows of one chunk
 * (default 16); --sub N: each session's n_ubatch (its most tokens per chunk; default 128).
 * Results must not depend on any of the three (chunking never changes the float order).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g4.h"

#define MAX_SEQ 64
#define MAX_TOK 8192

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

static int die(const char *m, const char *detail) {
    fprintf(stderr, "g4-batchrun: %s%s%s\n", m, detail ? ": " : "", detail ? detail : "");
    return 1;
}

int main(int argc, char **argv) {
    const char *model = NULL, *sched = NULL, *out = NULL;
    int cache = G4_CACHE_F32, threads = 1, ub = 0, n_out = 0, sub = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return die("missing value for", a);
        if (!strcmp(a, "-m")) model = v;
        else if (!strcmp(a, "-s")) sched = v;
        else if (!strcmp(a, "-o")) out = v;
        else if (!strcmp(a, "--kv")) cache = !strcmp(v, "f16") ? G4_CACHE_F16 : !strcmp(v, "q8_0") ? G4_CACHE_Q8_0 : G4_CACHE_F32;
        else if (!strcmp(a, "-t")) threads = atoi(v);
        else if (!strcmp(a, "-ub")) ub = atoi(v);
        else if (!strcmp(a, "--out")) n_out = atoi(v);
        else if (!strcmp(a, "--sub")) sub = atoi(v);
        else return die("unknown argument", a);
        i++;
    }
    if (!model || !sched || !out) return die("usage: g4-batchrun -m MODEL -s SCHEDULE -o LOGITS_OUT [options]", NULL);
    char err[512];
    g4_model *m = NULL;
    g4_model_opts mo = {0};
    mo.n_threads = threads;
    if (g4_model_open(&m, model, &mo, err, sizeof err) != G4_OK) return die("open", err);
    const int V = g4_model_n_vocab(m);
    FILE *sf = fopen(sched, "r"), *lf = fopen(out, "wb");
    if (!sf || !lf) return die("cannot open the schedule or the output", NULL);
    static char line[1 << 17];
    int n_seq = 0;
    if (!fgets(line, sizeof line, sf) || sscanf(line, "seqs %d", &n_seq) != 1 || n_seq < 1 || n_seq > MAX_SEQ)
        return die("the schedule must start with 'seqs N'", NULL);
    g4_session *s[MAX_SEQ];
    g4_session_opts so = {0};
    so.n_ctx = 8192;
    so.n_ubatch = sub;
    so.cache_type = cache;
    for (int q = 0; q < n_seq; q++)
        if (g4_session_create(&s[q], m, &so, err, sizeof err) != G4_OK) return die("session", err);
    g4_batch *b = NULL;
    g4_batch_opts bo = {0};
    bo.n_ubatch = ub;
    bo.n_out = n_out;
    if (g4_batch_create(&b, m, &bo, err, sizeof err) != G4_OK) return die("batch", err);

    static int32_t toks[MAX_SEQ][MAX_TOK];
    int last[MAX_SEQ] = {0};
    int steps = 0;
    while (fgets(line, sizeof line, sf)) {
        int reps = 1, only[MAX_SEQ], n_only = 0, gen = 0;
        if (!strncmp(line, "gen ", 4)) {
            gen = 1;
            char list[4096] = "";
            if (sscanf(line + 4, "%d %4095s", &reps, list) < 1 || reps < 0) return die("bad gen line", line);
            for (char *p = strtok(list, ","); p; p = strtok(NULL, ",")) only[n_only++] = atoi(p);
            if (!n_only) for (int q = 0; q < n_seq; q++) only[n_only++] = q;
        } else if (strncmp(line, "eval ", 5)) {
            continue;
        }
        for (int r = 0; r < reps; r++) {
            g4_session *bs[MAX_SEQ];
            const int32_t *bt[MAX_SEQ];
            size_t bn[MAX_SEQ];
            int seq[MAX_SEQ], n = 0;
            if (gen) {
                for (int k = 0; k < n_only; k++) {
                    const int q = only[k];
                    toks[q][0] = last[q];
                    seq[n] = q;
                    bn[n++] = 1;
                }
            } else {
                char *save = NULL;
                for (char *g = strtok_r(line + 5, " \n", &save); g; g = strtok_r(NULL, " \n", &save)) {
                    const int q = atoi(g);
                    char *c = strchr(g, ':');
                    if (!c || q < 0 || q >= n_seq) return die("bad eval group", g);
                    size_t k = 0;
                    char *s2 = NULL;
                    for (char *t = strtok_r(c + 1, ",", &s2); t && k < MAX_TOK; t = strtok_r(NULL, ",", &s2))
                        toks[q][k++] = (int32_t)atoi(t);
                    seq[n] = q;
                    bn[n++] = k;
                }
            }
            if (n == 0) continue;
            for (int k = 0; k < n; k++) {
                bs[k] = s[seq[k]];
                bt[k] = toks[seq[k]];
            }
            if (g4_batch_eval(b, bs, bt, bn, (size_t)n) != G4_OK) return die("eval", g4_batch_errmsg(b));
            for (int k = 0; k < n; k++) {
                const float *l = g4_session_logits(bs[k]);
                if (fwrite(l, sizeof(float), (size_t)V, lf) != (size_t)V) return die("write failed", NULL);
                last[seq[k]] = argmax(l, V);
                printf("%s%d", k ? " " : "", last[seq[k]]);
            }
            printf("\n");
            steps++;
        }
    }
    fclose(lf);
    fclose(sf);
    g4_batch_free(b);
    for (int q = 0; q < n_seq; q++) g4_session_free(s[q]);
    g4_model_close(m);
    return steps > 0 ? 0 : 1;
}
