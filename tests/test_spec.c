/* test_spec.c - speculative decoding (g4_spec, src/spec.c): the invariant, the rejection rule,
 * the assistant.
 *
 * spec:     with greedy sampling, speculative output equals plain output token for token, for
 *           every drafter (ngram-simple, the MTP assistant, custom drafters forced always right,
 *           always wrong, right for a random stretch), several n_max and output caps, on random
 *           models of several kinds and kernel tables; afterwards both sessions give the same
 *           logits bits for the same next token (the rolled-back cache is plain decoding's).
 * specrule: the sampled acceptance rule leaves the output distribution unchanged: seeded,
 *           on a 6-token distribution, one-hot and spread drafter distributions; two wrong
 *           rules fail the same bound (so it has power).
 * specapi:  argument checks, history checks, context end, hidden states, the assistant's
 *           validation against its target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec.h"
#include "t.h"
#include "t_model.h"

/* ==== Helpers ==== */

/* a prompt with repeats, so that n-gram lookups find matches */
static const int32_t PROMPT[] = { 2,   300, 301, 302, 303, 310, 45, 99, 300, 301, 302, 303, 310, 17, 33,
                                  300, 301, 302, 260, 261, 45, 99, 300, 301, 302, 303, 310, 45 };
#define N_PROMPT ((int)(sizeof PROMPT / sizeof PROMPT[0]))

static g4_sampler *greedy_sampler(g4_model *m, float rp) {
    g4_sampler_params sp;
    g4_sampler_defaults(m, &sp);
    sp.temp = 0;
    sp.repeat_penalty = rp; /* penalties make the sampler's history matter */
    g4_sampler *smp = NULL;
    char err[256];
    if (g4_sampler_create(&smp, m, &sp, err, sizeof err) != G4_OK) fprintf(stderr, "    sampler: %s\n", err);
    return smp;
}

/* plain greedy decoding: n tokens after the prompt; the session stays for later comparison */
static int plain_run(g4_model *m, g4_session *s, const int32_t *prompt, int np, int32_t *ref, int n, float rp) {
    g4_sampler *smp = greedy_sampler(m, rp);
    if (!smp || g4_session_eval(s, prompt, (size_t)np) != G4_OK) { g4_sampler_free(smp); return 0; }
    for (int i = 0; i < np; i++) g4_sampler_accept(smp, prompt[i]);
    int32_t tok = g4_sampler_sample(smp, g4_session_logits(s));
    g4_sampler_accept(smp, tok);
    ref[0] = tok;
    for (int i = 1; i < n; i++) {
        if (g4_session_eval(s, &tok, 1) != G4_OK) { g4_sampler_free(smp); return 0; }
        tok = g4_sampler_sample(smp, g4_session_logits(s));
        g4_sampler_accept(smp, tok);
        ref[i] = tok;
    }
    g4_sampler_free(smp);
    return 1;
}

enum { D_RIGHT, D_WRONG, D_MIXED };
typedef struct oracle {
    const g4_model *m;
    const int32_t *ref; /* the plain output */
    int n_ref;
    int mode;
    int32_t V;
    uint64_t rng;
} oracle;

/* a drafter that knows the plain output: hist holds the prompt and the outputs before last */
static size_t oracle_draft(void *ud, const int32_t *hist, size_t n_hist, int32_t last, int32_t *draft, size_t max) {
    oracle *o = ud;
    (void)hist;
    const size_t j = n_hist - (size_t)N_PROMPT; /* last = ref[j] */
    (void)last;
    size_t right = max;
    if (o->mode == D_WRONG) right = 0;
    if (o->mode == D_MIXED) right = (size_t)(t_rng_next(&o->rng) % (max + 1));
    size_t k = 0;
    for (; k < max && j + 1 + k < (size_t)o->n_ref; k++) {
        draft[k] = k < right ? o->ref[j + 1 + k] : (o->ref[j + 1 + k] + 1 + (int32_t)(t_rng_next(&o->rng) % 7)) % o->V;
        /* nothing after an end-of-generation token: g4_spec_step stops there (random models
         * emit them; which positions depends on the kernel table's float order) */
        if (g4_model_is_eog(o->m, draft[k])) { k++; break; }
    }
    return k;
}

/* speculative greedy decoding of n tokens; 1 when every token equals ref */
static int spec_run(g4_model *m, g4_session *s, const g4_spec_opts *so, size_t cap, const int32_t *prompt, int np,
                    const int32_t *ref, int n, float rp, g4_spec_stats *stats, const char *name) {
    char err[256];
    g4_sampler *smp = greedy_sampler(m, rp);
    g4_spec *sp = NULL;
    int ok = smp && g4_session_eval(s, prompt, (size_t)np) == G4_OK;
    if (ok && g4_spec_create(&sp, s, so, err, sizeof err) != G4_OK) { fprintf(stderr, "    %s: %s\n", name, err); ok = 0; }
    if (ok) ok = g4_spec_begin(sp, prompt, (size_t)np) == G4_OK;
    for (int i = 0; ok && i < np; i++) g4_sampler_accept(smp, prompt[i]);
    int32_t out[64];
    int got = 0;
    if (ok) {
        int32_t tok = g4_sampler_sample(smp, g4_session_logits(s));
        g4_sampler_accept(smp, tok);
        if (tok != ref[got++]) ok = 0;
        while (ok && got < n) {
            size_t k = 0, c = cap < (size_t)(n - got) ? cap : (size_t)(n - got);
            if (g4_spec_step(sp, smp, tok, out, c, &k) != G4_OK) {
                fprintf(stderr, "    %s: step: %s\n", name, g4_spec_errmsg(sp));
                ok = 0;
                break;
            }
            for (size_t i = 0; i < k && ok; i++)
                if (out[i] != ref[got++]) {
                    fprintf(stderr, "    %s: token %d is %d, plain decoding gives %d\n", name, got - 1, (int)out[i], (int)ref[got - 1]);
                    ok = 0;
                }
            tok = out[k - 1];
        }
        /* the last token is not evaluated yet: do it, so the sessions line up */
        if (ok && g4_session_eval(s, &tok, 1) != G4_OK) ok = 0;
    }
    g4_spec_get_stats(sp, stats);
    g4_spec_free(sp);
    g4_sampler_free(smp);
    return ok;
}

static char *write_tmp(const g4_testgen_opts *o) {
    char *path = malloc(64);
    if (!path) return NULL;
    snprintf(path, 64, "/tmp/g4-test-asst-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) { free(path); return NULL; }
    close(fd);
    char err[256];
    if (testgen_write(path, o, err, sizeof err) != G4_OK) {
        fprintf(stderr, "    testgen: %s\n", err);
        unlink(path);
        free(path);
        return NULL;
    }
    return path;
}

/* ==== The invariant ==== */

static void check_invariant(const char *name, const g4_testgen_opts *to, const char *kernels, int cache, int n_threads) {
    t_model t;
    if (!t_model_open(&t, to, n_threads, kernels)) { T_CHECKF(0, "%s: open", name); return; }
    g4_model *m = t.m;
    const int32_t V = g4_model_n_vocab(m);
    enum { N = 40 };
    /* references without and with a repeat penalty (without, random models repeat themselves,
     * so the n-gram drafters find matches) */
    int32_t ref[2][N];
    float *lref[2] = { malloc((size_t)V * sizeof(float)), malloc((size_t)V * sizeof(float)) };
    const float rps[2] = { 1.0f, 1.1f };
    const int32_t probe = 77;
    g4_session_opts so = { .n_ctx = 256, .n_ubatch = 16, .cache_type = cache };
    char err[256];
    int32_t ref_past = 0;
    for (int k = 0; k < 2; k++) {
        g4_session *r = NULL;
        T_CHECK(g4_session_create(&r, m, &so, err, sizeof err) == G4_OK);
        if (!r || !plain_run(m, r, PROMPT, N_PROMPT, ref[k], N, rps[k])) { T_CHECKF(0, "%s: plain run", name); g4_session_free(r); goto done; }
        /* the last plain token evaluated, then a probe token: the reference state */
        T_CHECK(g4_session_eval(r, &ref[k][N - 1], 1) == G4_OK && g4_session_eval(r, &probe, 1) == G4_OK);
        memcpy(lref[k], g4_session_logits(r), (size_t)V * sizeof(float));
        ref_past = g4_session_n_past(r);
        g4_session_free(r);
    }

    /* an assistant for this target */
    g4_testgen_opts ao = *to;
    ao.assistant = 1;
    char *apath = write_tmp(&ao);
    g4_assistant *a = NULL;
    if (apath && g4_assistant_open(&a, m, apath, NULL, err, sizeof err) != G4_OK) fprintf(stderr, "    %s: assistant: %s\n", name, err);
    T_CHECKF(a != NULL, "%s: assistant opens", name);

    oracle orc = { .m = m, .n_ref = N, .V = V, .rng = 7 };
    /* expect: 1 all drafts accepted, 2 none, 3 some, 4 some drafted (n-grams) */
    struct { const char *what; g4_spec_opts o; size_t cap; int expect; int rp; } v[] = {
        { "ngram-simple n2 m5", { .type = G4_SPEC_NGRAM_SIMPLE, .ngram_n = 2, .ngram_m = 5 }, 64, 0, 0 },
        { "ngram-simple n1 m3 cap 2", { .type = G4_SPEC_NGRAM_SIMPLE, .ngram_n = 1, .ngram_m = 3 }, 2, 4, 0 },
        { "ngram-simple defaults", { .type = G4_SPEC_NGRAM_SIMPLE }, 64, 0, 0 },
        { "always right n_max 7", { .type = G4_SPEC_CUSTOM, .n_max = 7, .draft_fn = oracle_draft, .draft_ud = &orc }, 64, 1, 1 },
        { "always right n_max 1", { .type = G4_SPEC_CUSTOM, .n_max = 1, .draft_fn = oracle_draft, .draft_ud = &orc }, 64, 1, 0 },
        { "always right cap 3", { .type = G4_SPEC_CUSTOM, .n_max = 15, .draft_fn = oracle_draft, .draft_ud = &orc }, 3, 1, 1 },
        { "always wrong n_max 5", { .type = G4_SPEC_CUSTOM, .n_max = 5, .draft_fn = oracle_draft, .draft_ud = &orc }, 64, 2, 1 },
        { "mixed n_max 6", { .type = G4_SPEC_CUSTOM, .n_max = 6, .draft_fn = oracle_draft, .draft_ud = &orc }, 64, 3, 1 },
        { "mixed n_min 3", { .type = G4_SPEC_CUSTOM, .n_max = 6, .n_min = 3, .draft_fn = oracle_draft, .draft_ud = &orc }, 64, 3, 0 },
        { "draft-mtp n_max 3", { .type = G4_SPEC_DRAFT_MTP, .assistant = a }, 64, 0, 1 },
        { "draft-mtp n_max 6 p_min 0.2", { .type = G4_SPEC_DRAFT_MTP, .n_max = 6, .p_min = 0.2f, .assistant = a }, 64, 0, 0 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        if (v[i].o.type == G4_SPEC_DRAFT_MTP && !a) continue;
        const int k = v[i].rp;
        orc.ref = ref[k];
        orc.mode = v[i].expect == 1 ? D_RIGHT : v[i].expect == 2 ? D_WRONG : D_MIXED;
        orc.rng = 7 + i;
        g4_session_opts sso = so;
        g4_spec_session_opts(&v[i].o, &sso);
        g4_session *s = NULL;
        T_CHECK(g4_session_create(&s, m, &sso, err, sizeof err) == G4_OK);
        if (!s) continue;
        g4_spec_stats st;
        char label[160];
        snprintf(label, sizeof label, "%s [%s, %s]", name, v[i].what, g4_model_kernels(m));
        const int same = spec_run(m, s, &v[i].o, v[i].cap, PROMPT, N_PROMPT, ref[k], N, rps[k], &st, label);
        T_CHECKF(same, "%s: speculative output = plain output", label);
        if (same) { /* the rolled-back cache is plain decoding's: same bits for the next token */
            T_CHECK(g4_session_n_past(s) == ref_past - 1);
            T_CHECK(g4_session_eval(s, &probe, 1) == G4_OK);
            T_CHECKF(!memcmp(lref[k], g4_session_logits(s), (size_t)V * sizeof(float)), "%s: next-token logits bit for bit", label);
        }
        T_CHECKF(st.n_tokens == N - 1, "%s: %llu tokens from steps", label, (unsigned long long)st.n_tokens);
        if (v[i].expect == 1) T_CHECKF(st.n_drafted > 0 && st.n_accepted == st.n_drafted, "%s: all %llu accepted", label, (unsigned long long)st.n_drafted);
        if (v[i].expect == 2) T_CHECKF(st.n_drafted > 0 && st.n_accepted == 0, "%s: none accepted", label);
        if (v[i].expect == 3) T_CHECKF(st.n_accepted > 0 && st.n_accepted < st.n_drafted, "%s: some accepted (%llu of %llu)", label,
                                       (unsigned long long)st.n_accepted, (unsigned long long)st.n_drafted);
        if (v[i].expect == 4) T_CHECKF(st.n_drafts > 0, "%s: drafted", label);
        if (getenv("G4_SPEC_VERBOSE"))
            fprintf(stderr, "    %s: %llu steps, %llu drafts, %llu drafted, %llu accepted\n", label, (unsigned long long)st.n_steps,
                    (unsigned long long)st.n_drafts, (unsigned long long)st.n_drafted, (unsigned long long)st.n_accepted);
        if (v[i].o.type == G4_SPEC_DRAFT_MTP && v[i].o.p_min == 0) /* chains of n_max, shorter only near the end */
            T_CHECKF(st.n_drafts > 0 && st.n_drafted + 6 >= 3 * st.n_drafts, "%s: full chains (%llu in %llu)", label,
                     (unsigned long long)st.n_drafted, (unsigned long long)st.n_drafts);
        g4_session_free(s);
    }
    g4_assistant_close(a);
    if (apath) { unlink(apath); free(apath); }
done:
    free(lref[0]);
    free(lref[1]);
    t_model_close(&t);
}

T_GROUP(spec) {
    const g4_testgen_opts d256 = { .wtype = G4_TYPE_Q4_K, .n_embd = 256, .n_head = 4, .head_dim_swa = 64, .head_dim_full = 128,
                                   .n_ff = 512, .n_per_layer = 256, .asst_n_embd = 128 };
    g4_testgen_opts mix = d256;
    mix.wtype = 0;
    mix.q4_k_m = 1;
    mix.asst_n_embd = 512; /* Q6_K / Q4_K rows: multiples of 256 */
    mix.asst_n_ff = 256;
    struct { const char *name; g4_testgen_opts o; int cache; int scalar; } v[] = {
        { "default f32", {0}, G4_CACHE_F32, 1 },
        { "f16 weights, f16 kv", { .wtype = G4_TYPE_F16 }, G4_CACHE_F16, 1 },
        { "no ple, no sharing", { .n_per_layer = -1, .n_shared = -1 }, G4_CACHE_F16, 0 },
        { "gqa arrays, k=v, untied", { .n_head = 4, .n_head_kv = 2, .n_head_kv_full = 1, .k_eq_v = 1, .untied = 1, .n_ff_shared = 256 },
          G4_CACHE_F16, 0 },
        { "q8_0, q8_0 kv", { .wtype = G4_TYPE_Q8_0, .n_per_layer = 32 }, G4_CACHE_Q8_0, 0 },
        { "q4_k_m mix", mix, G4_CACHE_F16, 0 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        check_invariant(v[i].name, &v[i].o, NULL, v[i].cache, i == 0 ? 2 : 1);
        if (v[i].scalar) check_invariant(v[i].name, &v[i].o, "scalar", v[i].cache, 1);
    }
}

/* A real drafter with real acceptance: a script-loop device (testgen.h) repeats its text
 * forever with wide margins, so from the second round on ngram-simple's drafts are right.
 * The text's tokens, in order, are the loop; speculative output must equal plain output and
 * nearly every drafted token must be accepted. */
static void check_loop(const char *kernels) {
    static const char TEXT[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    t_model t;
    if (!t_model_open(&t, &(g4_testgen_opts){ .script = TEXT, .script_loop = 1, .seed = 5 }, 1, kernels)) { T_CHECK(0); return; }
    g4_model *m = t.m;
    char err[256];
    int32_t prompt[8], ref[96];
    size_t np = 0;
    enum { N = 96 };
    T_CHECK(g4_tokenize(m, "hi\n", 3, G4_TOK_ADD_BOS, prompt, 8, &np) == G4_OK && np >= 2);
    g4_session *s = t_sess(m, 256, 16, G4_CACHE_F16, 0);
    int ok = s && plain_run(m, s, prompt, (int)np, ref, N, 1.0f);
    g4_session_free(s);
    /* the loop: the first round spells TEXT, then every token repeats P tokens later */
    char txt[sizeof TEXT];
    size_t tl = 0;
    int P = 0;
    for (; ok && P < N && tl < sizeof TEXT - 1; P++) {
        size_t k = 0;
        if (g4_token_to_piece(m, ref[P], 0, txt + tl, sizeof txt - tl, &k) != G4_OK) break;
        tl += k;
    }
    T_CHECKF(ok && tl == sizeof TEXT - 1 && !memcmp(txt, TEXT, tl), "loop device: first round spells the text (%d tokens)", P);
    int periodic = ok && P > 1 && 2 * P < N;
    for (int i = P; periodic && i < N; i++) periodic = ref[i] == ref[i - P];
    T_CHECKF(periodic, "loop device: greedy output repeats every %d tokens", P);

    g4_spec_opts so = { .type = G4_SPEC_NGRAM_SIMPLE, .ngram_n = 2, .ngram_m = 8 };
    g4_session_opts sso = { .n_ctx = 256, .n_ubatch = 16, .cache_type = G4_CACHE_F16 };
    g4_spec_session_opts(&so, &sso);
    s = NULL;
    g4_spec_stats st = {0};
    char label[64];
    snprintf(label, sizeof label, "loop device [%s]", g4_model_kernels(m));
    ok = g4_session_create(&s, m, &sso, err, sizeof err) == G4_OK && spec_run(m, s, &so, 16, prompt, (int)np, ref, N, 1.0f, &st, label);
    T_CHECKF(ok, "%s: speculative output = plain output", label);
    /* every token after the first round and the n-gram's two can be drafted right */
    T_CHECKF(st.n_drafted >= (uint64_t)(N - 2 * P) && st.n_accepted * 10 >= st.n_drafted * 9,
             "%s: %llu of %llu drafted accepted, %llu steps", label, (unsigned long long)st.n_accepted,
             (unsigned long long)st.n_drafted, (unsigned long long)st.n_steps);
    g4_session_free(s);
    t_model_close(&t);
}

T_GROUP(specloop) {
    check_loop(NULL);
    check_loop("scalar");
}

/* ==== The rejection rule ==== */

/* logits of a 6-token distribution (the rest of the vocabulary -inf) */
static const float L6[6] = { 1.0f, 0.2f, -0.5f, 0.8f, -1.5f, 0.0f };

typedef int32_t (*rule_fn)(g4_sampler *s, const float *logits, int32_t draft, const float *q, int *acc, uint64_t *rng,
                           const double *p);

static int32_t rule_ok(g4_sampler *s, const float *logits, int32_t draft, const float *q, int *acc, uint64_t *rng, const double *p) {
    (void)rng; (void)p;
    return sampler_verify(s, logits, draft, q, acc);
}
/* wrong: always keep the draft */
static int32_t rule_keep(g4_sampler *s, const float *logits, int32_t draft, const float *q, int *acc, uint64_t *rng, const double *p) {
    (void)s; (void)logits; (void)q; (void)rng; (void)p;
    *acc = 1;
    return draft;
}
/* wrong: accept with p(draft), but redraw from p itself instead of the residual */
static double u01(uint64_t *r) { return (double)(t_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static int32_t rule_redraw(g4_sampler *s, const float *logits, int32_t draft, const float *q, int *acc, uint64_t *rng, const double *p) {
    (void)s; (void)logits; (void)q;
    *acc = u01(rng) < p[draft];
    if (*acc) return draft;
    double u = u01(rng), c = 0;
    for (int i = 0; i < 6; i++) { c += p[i]; if (u < c) return i; }
    return 5;
}

/* max over tokens of |freq - p| / sigma for n trials of rule with drafts from q */
static double deviation(g4_model *m, rule_fn rule, const double *qd, int n, uint64_t seed) {
    const int32_t V = g4_model_n_vocab(m);
    float *lg = malloc((size_t)V * sizeof *lg), *q = calloc((size_t)V, sizeof *q);
    for (int32_t i = 0; i < V; i++) lg[i] = i < 6 ? L6[i] : -INFINITY;
    double p[6], z = 0;
    for (int i = 0; i < 6; i++) z += exp((double)L6[i] / 0.7);
    for (int i = 0; i < 6; i++) p[i] = exp((double)L6[i] / 0.7) / z;
    for (int i = 0; i < 6; i++) q[i] = (float)qd[i];
    int onehot = -1;
    for (int i = 0; i < 6; i++) if (qd[i] == 1.0) onehot = i;
    g4_sampler_params sp;
    g4_sampler_defaults(m, &sp);
    sp.temp = 0.7f; sp.top_k = 0; sp.top_p = 1.0f; sp.min_p = 0.0f; sp.repeat_penalty = 1.0f; sp.seed = seed;
    g4_sampler *s = NULL;
    char err[256];
    long cnt[6] = {0};
    uint64_t rng = seed * 31 + 1;
    if (g4_sampler_create(&s, m, &sp, err, sizeof err) == G4_OK) {
        for (int t = 0; t < n; t++) {
            double u = u01(&rng), c = 0;
            int32_t d = 5;
            for (int i = 0; i < 6; i++) { c += qd[i]; if (u < c) { d = i; break; } }
            int acc;
            const int32_t y = rule(s, lg, d, onehot >= 0 ? NULL : q, &acc, &rng, p);
            if (y >= 0 && y < 6) cnt[y]++;
        }
    }
    g4_sampler_free(s);
    double worst = 0;
    for (int i = 0; i < 6; i++) {
        const double f = (double)cnt[i] / n, sig = sqrt(p[i] * (1 - p[i]) / n), dv = fabs(f - p[i]) / sig;
        if (dv > worst) worst = dv;
    }
    free(lg);
    free(q);
    return worst;
}

T_GROUP(specrule) {
    t_model t;
    if (!t_model_open(&t, &(g4_testgen_opts){ .n_layer = 2, .full_every = 2, .n_shared = -1 }, 1, NULL)) { T_CHECK(0); return; }
    const int n = 60000;
    /* 6 tokens: a one-hot drafter at a likely and at an unlikely token, and two spread q */
    const double q_hot0[6] = { 1, 0, 0, 0, 0, 0 }, q_hot4[6] = { 0, 0, 0, 0, 1, 0 };
    const double q_flat[6] = { 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6 };
    const double q_skew[6] = { 0.05, 0.5, 0.05, 0.05, 0.3, 0.05 };
    const double *qs[] = { q_hot0, q_hot4, q_flat, q_skew };
    const char *qn[] = { "one-hot at a likely token", "one-hot at an unlikely token", "uniform q", "skewed q" };
    /* bound: 4.5 sigma on the worst of 6 tokens (false alarm ~ 1e-4 per run; the run is seeded) */
    const double bound = 4.5;
    for (int k = 0; k < 4; k++) {
        const double d = deviation(t.m, rule_ok, qs[k], n, 11 + (uint64_t)k);
        T_CHECKF(d < bound, "rejection rule, %s: output distribution = p (worst deviation %.2f sigma)", qn[k], d);
        const double dk = deviation(t.m, rule_keep, qs[k], n, 11 + (uint64_t)k);
        T_CHECKF(dk > bound, "keeping every draft, %s, is detected (%.2f sigma)", qn[k], dk);
        if (k < 2) { /* the redraw-from-p rule is wrong for one-hot drafters */
            const double dr = deviation(t.m, rule_redraw, qs[k], n, 11 + (uint64_t)k);
            T_CHECKF(dr > bound, "redrawing from p instead of the residual, %s, is detected (%.2f sigma)", qn[k], dr);
        }
    }
    /* greedy: the argmax, accepted iff it is the draft */
    g4_sampler_params sp;
    g4_sampler_defaults(t.m, &sp);
    sp.temp = 0;
    g4_sampler *s = NULL;
    char err[256];
    T_CHECK(g4_sampler_create(&s, t.m, &sp, err, sizeof err) == G4_OK);
    const int32_t V = g4_model_n_vocab(t.m);
    float *lg = malloc((size_t)V * sizeof *lg);
    for (int32_t i = 0; i < V; i++) lg[i] = i < 6 ? L6[i] : -INFINITY;
    int acc = -1;
    T_CHECK(sampler_verify(s, lg, 0, NULL, &acc) == 0 && acc == 1);
    T_CHECK(sampler_verify(s, lg, 3, NULL, &acc) == 0 && acc == 0);
    free(lg);
    g4_sampler_free(s);
    t_model_close(&t);
}

/* ==== API, hidden states, assistant validation ==== */

static size_t draft_junk(void *ud, const int32_t *hist, size_t n_hist, int32_t last, int32_t *draft, size_t max) {
    (void)ud; (void)hist; (void)n_hist; (void)last;
    for (size_t i = 0; i < max; i++) draft[i] = i == 1 ? -5 : 7; /* an invalid id ends the draft */
    return max + 100;                                          /* and too many are cut */
}

T_GROUP(specapi) {
    t_model t;
    if (!t_model_open(&t, &(g4_testgen_opts){0}, 1, NULL)) { T_CHECK(0); return; }
    g4_model *m = t.m;
    const int32_t E = g4_model_n_embd(m);
    char err[256];

    /* hidden states: a one-token eval and the same token in a decode-order batch agree */
    g4_session_opts ho = { .n_ctx = 64, .n_ubatch = 8, .n_logits = 4, .keep_hidden = 1 };
    g4_session *a = NULL, *b = NULL;
    T_CHECK(g4_session_create(&a, m, &ho, err, sizeof err) == G4_OK && g4_session_create(&b, m, &ho, err, sizeof err) == G4_OK);
    T_CHECK(g4_session_hidden(a, 0) == NULL);
    T_CHECK(g4_session_eval(a, PROMPT, 10) == G4_OK && g4_session_eval(b, PROMPT, 10) == G4_OK);
    T_CHECK(g4_session_hidden(a, 0) != NULL && g4_session_hidden(a, 1) == NULL);
    T_CHECK(!memcmp(g4_session_hidden(a, 0), g4_session_hidden(b, 0), (size_t)E * sizeof(float)));
    T_CHECK(g4_session_eval(a, PROMPT + 10, 1) == G4_OK);
    float *h1 = malloc((size_t)E * sizeof *h1);
    memcpy(h1, g4_session_hidden(a, 0), (size_t)E * sizeof *h1);
    T_CHECK(g4_session_eval_ex(b, PROMPT + 10, 3, G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER) == G4_OK);
    T_CHECK(g4_session_hidden(b, 0) && !memcmp(h1, g4_session_hidden(b, 0), (size_t)E * sizeof *h1));
    T_CHECK(g4_session_hidden(b, 2) != NULL && g4_session_hidden(b, 3) == NULL);
    g4_session_truncate(b, 11);
    T_CHECK(g4_session_hidden(b, 0) == NULL);
    free(h1);
    g4_session_free(a);
    g4_session_free(b);

    /* create: options and session checks */
    g4_session *s = t_sess(m, 64, 8, G4_CACHE_F16, 0); /* n_logits 1 */
    g4_spec *sp = (g4_spec *)&err;                     /* must become NULL */
    g4_spec_opts o = { .type = G4_SPEC_NGRAM_SIMPLE, .n_max = 4 };
    T_CHECK(g4_spec_create(&sp, s, &o, err, sizeof err) == G4_ERR_ARG && sp == NULL && strstr(err, "logits rows"));
    g4_spec_opts bad[] = { { .type = 0 }, { .type = 9 }, { .type = G4_SPEC_CUSTOM }, { .type = G4_SPEC_DRAFT_MTP },
                           { .type = G4_SPEC_NGRAM_SIMPLE, .n_max = 5000 }, { .type = G4_SPEC_NGRAM_SIMPLE, .n_max = 3, .n_min = 4 },
                           { .type = G4_SPEC_NGRAM_SIMPLE, .p_min = -1 }, { .type = G4_SPEC_NGRAM_SIMPLE, .ngram_n = -2 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        T_CHECKF(g4_spec_create(&sp, s, &bad[i], err, sizeof err) == G4_ERR_ARG && sp == NULL && err[0], "bad options %zu", i);
    g4_session_free(s);
    g4_session_opts so = { .n_ctx = 40, .n_ubatch = 2 };
    g4_spec_session_opts(&o, &so);
    T_CHECK(so.n_logits == 5 && so.n_ubatch == 5 && !so.keep_hidden);
    so.n_ubatch = 4;
    T_CHECK(g4_session_create(&s, m, &so, err, sizeof err) == G4_OK);
    T_CHECK(g4_spec_create(&sp, s, &o, err, sizeof err) == G4_ERR_ARG && strstr(err, "n_ubatch"));
    g4_session_free(s);
    so.n_ubatch = 5;
    T_CHECK(g4_session_create(&s, m, &so, err, sizeof err) == G4_OK);
    T_CHECK(g4_spec_create(&sp, s, &o, err, sizeof err) == G4_OK);

    /* history and step checks */
    g4_sampler *smp = greedy_sampler(m, 1.1f);
    int32_t out[8];
    size_t k = 99;
    T_CHECK(g4_spec_step(sp, smp, 5, out, 8, &k) == G4_OK && k == 1 && g4_session_n_past(s) == 1); /* empty session */
    T_CHECK(g4_spec_step(sp, smp, g4_model_n_vocab(m), out, 8, &k) == G4_ERR_ARG && k == 0 && strstr(g4_spec_errmsg(sp), "outside"));
    T_CHECK(g4_spec_step(sp, smp, 5, out, 0, &k) == G4_ERR_ARG);
    T_CHECK(g4_spec_step(sp, NULL, 5, out, 8, &k) == G4_ERR_ARG);
    T_CHECK(g4_session_eval(s, PROMPT, 3) == G4_OK);
    T_CHECK(g4_spec_step(sp, smp, 5, out, 8, &k) == G4_ERR_ARG && strstr(g4_spec_errmsg(sp), "g4_spec_begin"));
    T_CHECK(g4_spec_begin(sp, PROMPT, 3) == G4_ERR_ARG); /* the session holds 4 */
    int32_t h4[4] = { 5, 2, 300, 301 };
    T_CHECK(g4_spec_begin(sp, h4, 4) == G4_OK);
    h4[2] = -1;
    T_CHECK(g4_spec_begin(sp, h4, 4) == G4_ERR_ARG && strstr(g4_spec_errmsg(sp), "outside"));
    h4[2] = 300;
    T_CHECK(g4_spec_begin(sp, h4, 4) == G4_OK);
    /* run to the end of the context: drafts shrink to fit, then CTX_FULL, nothing breaks */
    int32_t tok = 300;
    g4_status st = G4_OK;
    for (int i = 0; i < 100 && st == G4_OK; i++) {
        st = g4_spec_step(sp, smp, tok, out, 8, &k);
        if (st == G4_OK) tok = out[k - 1];
        T_CHECK(g4_session_n_past(s) <= g4_session_n_ctx(s));
    }
    T_CHECK(st == G4_ERR_CTX_FULL && g4_session_n_past(s) == g4_session_n_ctx(s));
    g4_spec_stats ss;
    g4_spec_get_stats(sp, &ss);
    T_CHECK(ss.n_tokens == (uint64_t)(g4_session_n_ctx(s) - 4 + 1));
    g4_spec_free(sp);
    /* a custom drafter returning too many tokens and an invalid id */
    g4_session_reset(s);
    g4_spec_opts co = { .type = G4_SPEC_CUSTOM, .n_max = 4, .draft_fn = draft_junk };
    T_CHECK(g4_spec_create(&sp, s, &co, err, sizeof err) == G4_OK);
    T_CHECK(g4_spec_step(sp, smp, 5, out, 8, &k) == G4_OK);
    g4_spec_get_stats(sp, &ss);
    T_CHECK(ss.n_drafted == 1);
    g4_spec_free(sp);
    T_CHECK(g4_spec_type_from_name("ngram-simple") == G4_SPEC_NGRAM_SIMPLE && g4_spec_type_from_name("draft-mtp") == G4_SPEC_DRAFT_MTP &&
            g4_spec_type_from_name("none") == G4_SPEC_NONE && g4_spec_type_from_name("bogus") == -1 &&
            !strcmp(g4_spec_type_name(G4_SPEC_NGRAM_SIMPLE), "ngram-simple"));
    g4_sampler_free(smp);
    g4_session_free(s);
    g4_spec_free(NULL);
    g4_assistant_close(NULL);

    /* g4_spec_draft + an eval of the caller's + g4_spec_accept = g4_spec_step */
    {
        oracle orc = { .mode = D_MIXED, .V = g4_model_n_vocab(m), .rng = 3 };
        int32_t ref[24];
        g4_session *r = t_sess(m, 64, 8, G4_CACHE_F16, 0);
        T_CHECK(r && plain_run(m, r, PROMPT, N_PROMPT, ref, 24, 1.0f));
        g4_session_free(r);
        orc.ref = ref;
        orc.n_ref = 24;
        g4_spec_opts xo = { .type = G4_SPEC_CUSTOM, .n_max = 4, .draft_fn = oracle_draft, .draft_ud = &orc };
        g4_session_opts xso = { .n_ctx = 64, .n_ubatch = 8 };
        g4_spec_session_opts(&xo, &xso);
        g4_session *x = NULL;
        T_CHECK(g4_session_create(&x, m, &xso, err, sizeof err) == G4_OK && g4_session_eval(x, PROMPT, N_PROMPT) == G4_OK);
        T_CHECK(g4_spec_create(&sp, x, &xo, err, sizeof err) == G4_OK && g4_spec_begin(sp, PROMPT, N_PROMPT) == G4_OK);
        g4_sampler *xs = greedy_sampler(m, 1.0f);
        for (int i = 0; i < N_PROMPT; i++) g4_sampler_accept(xs, PROMPT[i]);
        int32_t lt = g4_sampler_sample(xs, g4_session_logits(x)), got = 1, same = lt == ref[0];
        g4_sampler_accept(xs, lt);
        int32_t bt[8], o8[8];
        while (same && got < 20) {
            size_t nd = 0, no = 0;
            T_CHECK(g4_spec_draft(sp, lt, bt + 1, 4, &nd) == G4_OK);
            bt[0] = lt;
            T_CHECK(g4_session_eval_ex(x, bt, nd + 1, G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER) == G4_OK);
            if (g4_spec_accept(sp, xs, lt, bt + 1, nd, o8, 8, &no) != G4_OK) { same = 0; break; }
            for (size_t i = 0; i < no && got < 24; i++) same &= o8[i] == ref[got++];
            lt = o8[no - 1];
        }
        T_CHECKF(same, "draft + own eval + accept = plain decoding");
        /* accept after an eval that was not last + the draft: refused, nothing changed */
        T_CHECK(g4_session_eval(x, &lt, 1) == G4_OK);
        const int32_t np = g4_session_n_past(x);
        size_t no = 0;
        T_CHECK(g4_spec_accept(sp, xs, lt, bt + 1, 2, o8, 8, &no) == G4_ERR_ARG && no == 0 && g4_session_n_past(x) == np);
        g4_spec_free(sp);
        g4_sampler_free(xs);
        g4_session_free(x);
    }

    /* ngram-simple, llama.cpp's rule on a hand-made history */
    const int32_t hist[] = { 1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 9, 9, 9, 9, 9, 1, 2 };
    int32_t d[8];
    /* pattern (2, 3): the latest earlier match is at 7, followed by 9 9 9 9 9 1 2 */
    T_CHECK(ngram_simple_draft(hist, 17, 3, 2, 4, d, 8) == 4 && d[0] == 9 && d[3] == 9);
    T_CHECK(ngram_simple_draft(hist, 17, 3, 2, 4, d, 2) == 2);
    T_CHECK(ngram_simple_draft(hist, 17, 8, 2, 4, d, 8) == 0);  /* no match */
    T_CHECK(ngram_simple_draft(hist, 7, 3, 2, 4, d, 8) == 0);   /* history too short */
    T_CHECK(ngram_simple_draft(hist, 17, 3, 3, 4, d, 8) == 4 && d[0] == 9); /* (1, 2, 3) at 7 */

    /* the assistant against a target it does not fit */
    g4_testgen_opts ao = { .assistant = 1 };
    char *ok_path = write_tmp(&ao);
    g4_assistant *as = NULL;
    T_CHECK(ok_path && g4_assistant_open(&as, m, ok_path, NULL, err, sizeof err) == G4_OK);
    T_CHECK(g4_assistant_n_layer(as) == 4 && g4_assistant_n_embd(as) == 64 && g4_assistant_draft_bytes(as) > 0);
    {   /* draft-mtp needs keep_hidden, and an assistant opened for this very model */
        g4_spec_opts mo = { .type = G4_SPEC_DRAFT_MTP, .assistant = as };
        g4_session_opts no = { .n_ctx = 64, .n_ubatch = 8, .n_logits = 4 };
        T_CHECK(g4_session_create(&s, m, &no, err, sizeof err) == G4_OK);
        T_CHECK(g4_spec_create(&sp, s, &mo, err, sizeof err) == G4_ERR_ARG && strstr(err, "keep_hidden"));
        g4_session_free(s);
        t_model t2;
        if (t_model_open(&t2, &(g4_testgen_opts){0}, 1, NULL)) {
            no.keep_hidden = 1;
            T_CHECK(g4_session_create(&s, t2.m, &no, err, sizeof err) == G4_OK);
            T_CHECK(g4_spec_create(&sp, s, &mo, err, sizeof err) == G4_ERR_ARG && strstr(err, "another target"));
            g4_session_free(s);
            t_model_close(&t2);
        }
    }
    g4_assistant_close(as);
    struct { const char *what; g4_testgen_opts o; const char *msg; } mism[] = {
        { "embedding_length_out", { .n_embd = 96 }, "embedding_length_out" },
        { "window", { .window = 16 }, "sliding window 16 is larger" },
        { "head size", { .head_dim_swa = 16 }, "KV heads of" },
        { "vocabulary", { .n_vocab = 600 }, "vocabular" },
    };
    for (size_t i = 0; i < sizeof mism / sizeof mism[0]; i++) {
        g4_testgen_opts mo2 = mism[i].o;
        mo2.assistant = 1;
        char *pth = write_tmp(&mo2);
        as = (g4_assistant *)(void *)&so;
        const g4_status r = pth ? g4_assistant_open(&as, m, pth, NULL, err, sizeof err) : G4_ERR_IO;
        T_CHECKF(r != G4_OK && as == NULL && strstr(err, mism[i].msg), "assistant with another %s: '%s'", mism[i].what, err);
        if (pth) { unlink(pth); free(pth); }
    }
    /* a target model is not an assistant, and the reverse */
    T_CHECK(g4_assistant_open(&as, m, "/nonexistent.gguf", NULL, err, sizeof err) == G4_ERR_IO);
    g4_model *am = NULL;
    T_CHECK(ok_path && g4_model_open(&am, ok_path, NULL, err, sizeof err) != G4_OK && strstr(err, "gemma4-assistant"));
    if (ok_path) { unlink(ok_path); free(ok_path); }
    t_model_close(&t);
}

/* ==== Allocation failures ==== */

typedef struct sacct { size_t live; long n, fail_at; } sacct;

static void *acct_alloc(void *ud, void *ptr, size_t old, size_t nsz) {
    sacct *a = ud;
    if (nsz == 0) { free(ptr); a->live -= old; return NULL; }
    if (a->fail_at && ++a->n == a->fail_at) return NULL;
    void *p = realloc(ptr, nsz);
    if (!p) return NULL;
    a->live += nsz - old;
    return p;
}

/* every allocation of assistant open + session + g4_spec_create (draft-mtp) failing in turn:
 * G4_ERR_NOMEM, out NULL, nothing leaked (exact accounting through the target's allocator) */
T_GROUP(specoom) {
    g4_testgen_opts o = { .wtype = G4_TYPE_Q8_0, .n_per_layer = 32 }, ao = o;
    ao.assistant = 1;
    void *buf;
    size_t len;
    char err[512];
    char *apath = write_tmp(&ao);
    if (!apath || testgen_write_mem(&buf, &len, &o, err, sizeof err) != G4_OK) { T_CHECK(0); free(apath); return; }
    sacct a = {0};
    g4_model_opts mo = { .n_threads = 1, .kernels = "scalar", .alloc = acct_alloc, .alloc_ud = &a };
    g4_model *m = NULL;
    T_CHECK(model_open_mem(&m, buf, len, "t.gguf", &mo, err, sizeof err) == G4_OK);
    const size_t live0 = m ? a.live : 0;
    long n_fail = 0, bad = 0;
    for (long at = 1; m && at < 500; at++) {
        a.n = 0;
        a.fail_at = at;
        g4_assistant *as = NULL;
        g4_session *s = NULL;
        g4_spec *sp = NULL;
        g4_status st = g4_assistant_open(&as, m, apath, NULL, err, sizeof err);
        g4_spec_opts so = { .type = G4_SPEC_DRAFT_MTP, .assistant = as, .n_max = 4 };
        g4_session_opts sso = { .n_ctx = 64, .n_ubatch = 8 };
        g4_spec_session_opts(&so, &sso);
        if (st == G4_OK) st = g4_session_create(&s, m, &sso, err, sizeof err);
        if (st == G4_OK) st = g4_spec_create(&sp, s, &so, err, sizeof err);
        const int done = st == G4_OK;
        if (!done) {
            n_fail++;
            if ((st != G4_ERR_NOMEM || sp) && bad++ < 5) fprintf(stderr, "    fail at %ld: st %d: %s\n", at, st, err);
        }
        g4_spec_free(sp);
        g4_session_free(s);
        g4_assistant_close(as);
        a.fail_at = 0;
        if (a.live != live0 && bad++ < 5) fprintf(stderr, "    fail at %ld: %zu bytes leaked\n", at, a.live - live0);
        if (done) break;
    }
    T_CHECKF(bad == 0, "%ld of %ld failure points not clean", bad, n_fail);
    T_CHECK(n_fail > 5);
    g4_model_close(m);
    T_CHECK(a.live == 0);
    unlink(apath);
    free(apath);
    free(buf);
}
