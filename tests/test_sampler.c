/* test_sampler.c - the sampler on crafted logits: parameter validation, greedy ties and
 * non-finite logits, suppress_tokens, seeded determinism, and the distribution each knob
 * produces (frequencies over many draws, within binomial tolerances). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "tok_impl.h"

#define NV 8

typedef struct fake { g4_model m; g4_vocab v; int32_t sup[2]; } fake;

static void fake_init(fake *f) {
    memset(f, 0, sizeof *f);
    g4_allocator_init(&f->m.al, NULL, NULL);
    f->v.n = NV;
    f->sup[0] = 7;
    f->v.suppress = f->sup;
    f->v.n_suppress = 1;
    f->m.vocab = &f->v;
    f->m.cfg.n_vocab = NV;
}

static g4_sampler *mk(const g4_model *m, float temp, int32_t top_k, float top_p, float min_p, uint64_t seed) {
    g4_sampler_params p;
    g4_sampler_defaults(NULL, &p);
    p.temp = temp; p.top_k = top_k; p.top_p = top_p; p.min_p = min_p; p.seed = seed;
    g4_sampler *s = NULL;
    char err[128];
    T_CHECKF(g4_sampler_create(&s, m, &p, err, sizeof err) == G4_OK, "%s", err);
    return s;
}

/* draws n samples, fills freq[NV] */
static void draw(g4_sampler *s, const float *l, int n, double *freq) {
    long cnt[NV] = {0};
    for (int i = 0; i < n; i++) {
        int32_t t = g4_sampler_sample(s, l);
        if (t >= 0 && t < NV) cnt[t]++;
    }
    for (int i = 0; i < NV; i++) freq[i] = (double)cnt[i] / n;
}

static void check_freq(const double *got, const double *want, int n, int line) {
    for (int i = 0; i < NV; i++) {
        double tol = 4.5 * sqrt(want[i] * (1 - want[i]) / n) + 1e-9; /* ~4.5 sigma */
        T_CHECKF(fabs(got[i] - want[i]) <= tol, "line %d: token %d freq %.4f, want %.4f", line, i, got[i], want[i]);
    }
}

static void test_validation(const g4_model *m) {
    struct { const char *what; g4_sampler_params p; } bad[14];
    int nb = 0;
    for (int i = 0; i < 14; i++) g4_sampler_defaults(NULL, &bad[i].p);
    bad[nb].what = "temp";           bad[nb++].p.temp = NAN;
    bad[nb].what = "temp";           bad[nb++].p.temp = -0.5f;
    bad[nb].what = "temp";           bad[nb++].p.temp = INFINITY;
    bad[nb].what = "top_k";          bad[nb++].p.top_k = -1;
    bad[nb].what = "top_p";          bad[nb++].p.top_p = 1.5f;
    bad[nb].what = "top_p";          bad[nb++].p.top_p = NAN;
    bad[nb].what = "min_p";          bad[nb++].p.min_p = -0.1f;
    bad[nb].what = "min_p";          bad[nb++].p.min_p = NAN;
    bad[nb].what = "repeat_penalty"; bad[nb++].p.repeat_penalty = 0;
    bad[nb].what = "repeat_penalty"; bad[nb++].p.repeat_penalty = NAN;
    bad[nb].what = "repeat_last_n";  bad[nb++].p.repeat_last_n = -1;
    bad[nb].what = "presence";       bad[nb++].p.presence_penalty = NAN;
    bad[nb].what = "frequency";      bad[nb++].p.frequency_penalty = -INFINITY;
    for (int i = 0; i < nb; i++) {
        static char junk;
        g4_sampler *s = (g4_sampler *)(void *)&junk; /* must be reset to NULL */
        char err[128] = "";
        g4_status st = g4_sampler_create(&s, m, &bad[i].p, err, sizeof err);
        T_CHECKF(st == G4_ERR_ARG && s == NULL && strstr(err, bad[i].what), "case %d: %d '%s'", i, (int)st, err);
    }
    g4_sampler_params p;
    g4_sampler_defaults(NULL, &p);
    g4_sampler *s = NULL;
    T_CHECK(g4_sampler_create(&s, NULL, &p, NULL, 0) == G4_ERR_ARG && s == NULL);
    T_CHECK(g4_sampler_create(NULL, m, &p, NULL, 0) == G4_ERR_ARG);
    p.top_k = 1000000; /* more than the vocabulary: off */
    T_CHECK(g4_sampler_create(&s, m, &p, NULL, 0) == G4_OK);
    g4_sampler_free(s);
    g4_sampler_free(NULL);
    T_CHECK(g4_sampler_sample(NULL, NULL) == 0);
}

static void test_defaults(void) {
    g4_sampler_params p;
    p.seed = 42;
    g4_sampler_defaults(NULL, &p);
    T_CHECK(p.seed == 42 && p.temp == 0.8f && p.top_k == 40 && p.top_p == 0.95f && p.min_p == 0.05f &&
            p.repeat_penalty == 1.0f && p.repeat_last_n == 64);
    g4_model m;
    memset(&m, 0, sizeof m);
    m.has_samp_temp = 1; m.samp_temp = 1.0f;
    m.has_samp_top_k = 1; m.samp_top_k = 64;
    m.has_samp_top_p = 1; m.samp_top_p = 0.9f;
    g4_sampler_defaults(&m, &p);
    T_CHECK(p.temp == 1.0f && p.top_k == 64 && p.top_p == 0.9f && p.seed == 42);
}

static void test_greedy(const g4_model *m) {
    g4_sampler *s = mk(m, 0, 0, 1, 0, 1);
    if (!s) return;
    float l[NV] = {1, 3, 3, 2, -1, 0, 0, 9};      /* 7 is suppressed */
    T_CHECK(g4_sampler_sample(s, l) == 1);         /* tie 1/2: lowest id */
    float nan_l[NV] = {NAN, INFINITY, 0.5f, -INFINITY, 0.25f, NAN, 0, 0};
    T_CHECK(g4_sampler_sample(s, nan_l) == 2);
    float all_bad[NV] = {NAN, NAN, INFINITY, -INFINITY, NAN, NAN, NAN, 1};
    T_CHECK(g4_sampler_sample(s, all_bad) == 0);
    g4_sampler_free(s);
    s = mk(m, 0.8f, 40, 0.95f, 0.05f, 1);         /* non-greedy never picks a non-finite logit */
    int ok = 1;
    for (int i = 0; i < 200; i++) { int32_t t = g4_sampler_sample(s, nan_l); ok &= t == 2 || t == 4 || t == 6; }
    T_CHECK(ok);
    T_CHECK(g4_sampler_sample(s, all_bad) == 0);
    g4_sampler_free(s);
}

static void test_determinism(const g4_model *m) {
    float l[NV] = {0.1f, 0.5f, 0.3f, 0.9f, 0.2f, 0.4f, 0.6f, 0};
    g4_sampler *a = mk(m, 1.5f, 0, 1, 0, 1234), *b = mk(m, 1.5f, 0, 1, 0, 1234), *c = mk(m, 1.5f, 0, 1, 0, 99);
    if (!a || !b || !c) return;
    int32_t sa[200], same = 1, diff = 0;
    for (int i = 0; i < 200; i++) {
        sa[i] = g4_sampler_sample(a, l);
        int32_t tb = g4_sampler_sample(b, l), tc = g4_sampler_sample(c, l);
        same &= sa[i] == tb;
        diff += sa[i] != tc;
    }
    T_CHECK(same);
    T_CHECK(diff > 20);
    g4_sampler_reset(a); /* back to the seed */
    same = 1;
    for (int i = 0; i < 200; i++) same &= g4_sampler_sample(a, l) == sa[i];
    T_CHECK(same);
    g4_sampler_free(a); g4_sampler_free(b); g4_sampler_free(c);
}

static void test_distributions(const g4_model *m) {
    const int N = 40000;
    float l[NV];
    const double p[3] = {0.5, 0.3, 0.2};
    for (int i = 0; i < NV; i++) l[i] = i < 3 ? logf((float)p[i]) : -INFINITY;
    double got[NV];
    g4_sampler *s;

    s = mk(m, 1, 0, 1, 0, 7);                       /* plain softmax */
    draw(s, l, N, got);
    check_freq(got, (double[NV]){0.5, 0.3, 0.2}, N, __LINE__);
    g4_sampler_free(s);

    s = mk(m, 0.5f, 0, 1, 0, 7);                    /* temperature: p^2 renormalised */
    draw(s, l, N, got);
    check_freq(got, (double[NV]){0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38}, N, __LINE__);
    g4_sampler_free(s);

    s = mk(m, 1, 2, 1, 0, 7);                       /* top-k 2 */
    draw(s, l, N, got);
    check_freq(got, (double[NV]){0.625, 0.375}, N, __LINE__);
    g4_sampler_free(s);

    s = mk(m, 1, 1, 1, 0, 7);                       /* top-k 1 = argmax */
    draw(s, l, 1000, got);
    T_CHECK(got[0] == 1.0);
    g4_sampler_free(s);

    s = mk(m, 1, 0, 0.6f, 0, 7);                    /* top-p: 0.5 < 0.6 <= 0.8 keeps 2 */
    draw(s, l, N, got);
    check_freq(got, (double[NV]){0.625, 0.375}, N, __LINE__);
    g4_sampler_free(s);

    s = mk(m, 1, 0, 0.0f, 0, 7);                    /* top-p 0 keeps the top token */
    draw(s, l, 1000, got);
    T_CHECK(got[0] == 1.0);
    g4_sampler_free(s);

    s = mk(m, 1, 0, 1, 0.5f, 7);                    /* min-p 0.5: p >= 0.25 */
    draw(s, l, N, got);
    check_freq(got, (double[NV]){0.625, 0.375}, N, __LINE__);
    g4_sampler_free(s);

    s = mk(m, 1, 0, 0.9f, 0.3f, 7);                 /* both: min-p (p >= 0.15) keeps 3, top-p 0.9 keeps 3 */
    draw(s, l, N, got);
    check_freq(got, (double[NV]){0.5, 0.3, 0.2}, N, __LINE__);
    g4_sampler_free(s);

    s = mk(m, 1e-6f, 0, 1, 0, 7);                   /* tiny temperature: argmax */
    draw(s, l, 1000, got);
    T_CHECK(got[0] == 1.0);
    g4_sampler_free(s);

    s = mk(m, 1e6f, 0, 1, 0, 7);                    /* huge temperature: uniform over finite */
    draw(s, l, N, got);
    check_freq(got, (double[NV]){1 / 3.0, 1 / 3.0, 1 / 3.0}, N, __LINE__);
    g4_sampler_free(s);
}

static g4_sampler *mk_pen(const g4_model *m, float rp, int32_t last_n, float pres, float freq) {
    g4_sampler_params p;
    g4_sampler_defaults(NULL, &p);
    p.temp = 0; p.repeat_penalty = rp; p.repeat_last_n = last_n; p.presence_penalty = pres; p.frequency_penalty = freq;
    g4_sampler *s = NULL;
    T_CHECK(g4_sampler_create(&s, m, &p, NULL, 0) == G4_OK);
    return s;
}

static void test_penalties(const g4_model *m) {
    float pos[NV] = {2.0f, 1.5f, 0, 0, 0, 0, 0, 0};
    float neg[NV] = {-1.0f, -1.5f, -9, -9, -9, -9, -9, -9};
    float near[NV] = {1.0f, 0.9f, 0, 0, 0, 0, 0, 0};
    g4_sampler *s = mk_pen(m, 2.0f, 64, 0, 0);
    if (!s) return;
    T_CHECK(g4_sampler_sample(s, pos) == 0);
    g4_sampler_accept(s, 0);
    T_CHECK(g4_sampler_sample(s, pos) == 1);         /* 2.0 / 2 < 1.5 */
    T_CHECK(g4_sampler_sample(s, neg) == 1);         /* -1.0 * 2 < -1.5 */
    g4_sampler_reset(s);
    T_CHECK(g4_sampler_sample(s, pos) == 0);         /* history cleared */
    g4_sampler_accept(s, -5);                        /* out-of-range history ids are ignored */
    g4_sampler_accept(s, 1000);
    T_CHECK(g4_sampler_sample(s, pos) == 0);
    g4_sampler_free(s);

    s = mk_pen(m, 1.0f, 64, 0.2f, 0);                /* presence: 1.0 - 0.2 < 0.9 */
    g4_sampler_accept(s, 0);
    T_CHECK(g4_sampler_sample(s, near) == 1);
    g4_sampler_free(s);

    s = mk_pen(m, 1.0f, 64, 0, 0.04f);               /* frequency: 1.0 - 3 * 0.04 < 0.9 */
    g4_sampler_accept(s, 0);
    g4_sampler_accept(s, 0);
    T_CHECK(g4_sampler_sample(s, near) == 0);        /* 0.92 > 0.9 after two */
    g4_sampler_accept(s, 0);
    T_CHECK(g4_sampler_sample(s, near) == 1);
    g4_sampler_free(s);

    s = mk_pen(m, 2.0f, 1, 0, 0);                    /* window of one: only the last token counts */
    g4_sampler_accept(s, 0);
    g4_sampler_accept(s, 1);
    T_CHECK(g4_sampler_sample(s, pos) == 0);         /* 0 left the window; 1.5 / 2 */
    g4_sampler_free(s);

    s = mk_pen(m, 2.0f, 0, 0, 0);                    /* repeat_last_n 0: no penalties */
    g4_sampler_accept(s, 0);
    T_CHECK(g4_sampler_sample(s, pos) == 0);
    g4_sampler_free(s);
}

/* a large vocabulary takes the bucketed top-p path: the kept set must equal the exact one */
static void test_top_p_large(void) {
    enum { BIG = 50000 };
    fake f;
    fake_init(&f);
    f.v.n = BIG;
    f.v.n_suppress = 0;
    f.m.cfg.n_vocab = BIG;
    float *l = malloc(BIG * sizeof *l);
    if (!l) return;
    uint64_t st = 99;
    for (int i = 0; i < BIG; i++) l[i] = t_rng_uniform(&st); /* [-1, 1) */
    static const int32_t peaks[10] = {40001, 7, 123, 49999, 2500, 9000, 31337, 17, 44444, 600};
    for (int i = 0; i < 10; i++) l[peaks[i]] = 10.0f;
    /* mass of one peak: e^10 / (10 e^10 + sum of the rest) ~ 0.0816; top_p 0.6 keeps the 8
     * lowest-id peaks (cumulative 0.65), never 40001 or 49999 */
    double rest = 0;
    for (int i = 0; i < BIG; i++) if (l[i] < 5) rest += exp((double)l[i] - 10.0);
    double one = 1.0 / (10.0 + rest);
    int want_k = 0;
    for (double cum = 0; cum < 0.6; want_k++) cum += one;
    g4_sampler *s = mk(&f.m, 1.0f, 0, 0.6f, 0, 3);
    if (!s) { free(l); return; }
    static const int32_t sorted[10] = {7, 17, 123, 600, 2500, 9000, 31337, 40001, 44444, 49999};
    int seen[10] = {0}, outside = 0;
    for (int i = 0; i < 4000; i++) {
        int32_t t = g4_sampler_sample(s, l), k = -1;
        for (int j = 0; j < 10; j++) if (sorted[j] == t) k = j;
        if (k < 0 || k >= want_k) outside++;
        else seen[k]++;
    }
    int all = 1;
    for (int j = 0; j < want_k; j++) all &= seen[j] > 0;
    T_CHECK(want_k >= 2 && want_k < 10);
    T_CHECKF(outside == 0 && all, "top-p large: want %d tokens, %d draws outside", want_k, outside);
    g4_sampler_free(s);
    free(l);
}

T_GROUP(sampler) {
    test_top_p_large();
    fake f;
    fake_init(&f);
    test_validation(&f.m);
    test_defaults();
    test_greedy(&f.m);
    test_determinism(&f.m);
    test_distributions(&f.m);
    test_penalties(&f.m);
}
