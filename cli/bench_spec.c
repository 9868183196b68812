/* bench_spec.c - g4 bench --verify: what speculative decoding costs, measured where acceptance
 * does not enter (random weights make acceptance meaningless): one decode step, verifying k
 * drafted tokens in one pass (G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER, what g4_spec_step
 * evaluates), and one draft step of the assistant (-md). On g4.h only.
 *
 * Protocol: a session prefilled with DEPTH random tokens; each repetition times, in turn,
 * every test once (round robin, so drift on a shared host hits all of them alike): k random
 * tokens evaluated at position DEPTH, then the session truncated back to DEPTH; one draft
 * step from the prefill's hidden state. Reported: the median seconds per call over the
 * repetitions and its ratio to the decode step's median. The cost of a speculative step with
 * k drafts is then draft_k + verify_{k+1}; at acceptance a per token the expected tokens per
 * step are (1 - a^(k+1)) / (1 - a), which is how README turns this curve into a speed model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_spec.h"
#include "progress.h"

static uint64_t mix(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_spec_run(g4_model *m, const char *md, const long *ks, int nk, long depth, long reps, int warmup, uint64_t seed,
                   int batch_order, const volatile int *stop, bench_spec_row *rows, int *n_rows, char *err, size_t errlen) {
    *n_rows = 0;
    long kmax = 1;
    for (int i = 0; i < nk; i++) if (ks[i] > kmax) kmax = ks[i];
    const int32_t V = g4_model_n_vocab(m);
    int ok = 0;
    g4_assistant *a = NULL;
    g4_session *s = NULL;
    g4_spec *sp = NULL;
    int32_t *toks = malloc((size_t)(depth + kmax + 1) * sizeof *toks);
    double *t = calloc((size_t)(nk + 1) * (size_t)reps, sizeof *t);
    if (!toks || !t) { snprintf(err, errlen, "out of memory"); goto done; }
    if (md && g4_assistant_open(&a, m, md, NULL, err, errlen) != G4_OK) goto done;
    g4_session_opts so = { .n_ctx = (int32_t)(depth + kmax + 1), .n_ubatch = 512, .n_logits = (int32_t)kmax,
                           .keep_hidden = a != NULL };
    if (so.n_ubatch < kmax + 1) so.n_ubatch = (int32_t)(kmax + 1);
    if (g4_session_create(&s, m, &so, err, errlen) != G4_OK) goto done;
    uint64_t rng = seed;
    for (long i = 0; i < depth; i++) toks[i] = (int32_t)(mix(&rng) % (uint64_t)V);
    if (g4_model_token_bos(m) >= 0) toks[0] = g4_model_token_bos(m);
    if (g4_session_eval(s, toks, (size_t)depth) != G4_OK) { snprintf(err, errlen, "%s", g4_session_errmsg(s)); goto done; }
    if (a) {
        g4_spec_opts o = { .type = G4_SPEC_DRAFT_MTP, .n_max = 1, .assistant = a };
        if (g4_spec_create(&sp, s, &o, err, errlen) != G4_OK) goto done;
        if (g4_spec_begin(sp, toks, (size_t)depth) != G4_OK) { snprintf(err, errlen, "%s", g4_spec_errmsg(sp)); goto done; }
    }
    const int nt = nk + (a ? 1 : 0);
    for (long r = -warmup; r < reps && !*stop; r++) {
        for (int i = 0; i < nt && !*stop; i++) {
            double dt;
            if (i < nk) {
                const long k = ks[i];
                for (long j = 0; j < k; j++) toks[depth + j] = (int32_t)(mix(&rng) % (uint64_t)V);
                const double t0 = progress_now();
                const unsigned fl = k == 1 ? 0 : batch_order ? G4_EVAL_ALL_LOGITS : G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER;
                const g4_status st = g4_session_eval_ex(s, toks + depth, (size_t)k, fl);
                dt = progress_now() - t0;
                if (st != G4_OK) { snprintf(err, errlen, "%s", g4_session_errmsg(s)); goto done; }
                if (g4_session_truncate(s, (int32_t)depth) != (int32_t)depth) { snprintf(err, errlen, "rollback failed"); goto done; }
            } else {
                int32_t d;
                size_t nd = 0;
                const double t0 = progress_now();
                const g4_status st = g4_spec_draft(sp, (int32_t)(mix(&rng) % (uint64_t)V), &d, 1, &nd);
                dt = progress_now() - t0;
                if (st != G4_OK || nd != 1) { snprintf(err, errlen, "draft: %s", g4_spec_errmsg(sp)); goto done; }
            }
            if (r >= 0) t[(size_t)i * (size_t)reps + (size_t)r] = dt;
        }
    }
    if (*stop) goto done;
    for (int i = 0; i < nt; i++) {
        bench_spec_row *w = &rows[(*n_rows)++];
        w->k = i < nk ? ks[i] : 0;
        w->draft = i >= nk;
        w->med_s = median(t + (size_t)i * (size_t)reps, (int)reps);
    }
    ok = 1;
done:
    g4_spec_free(sp);
    g4_session_free(s);
    g4_assistant_close(a);
    free(toks);
    free(t);
    return ok;
}
