/* sampler.c - token sampling from logits: penalties, top-k, top-p, min-p, temperature, and a
 * seeded RNG with explicit state (no globals: same seed + params + logits => same token).
 *
 * Owns g4_sampler_*. Does not own the logits (the session does) nor the vocabulary; it copies
 * the model's suppress_tokens at create time.
 *
 * Order, as llama.cpp's default chain (common/sampling.cpp): penalties -> top-k -> top-p ->
 * min-p -> temperature -> draw. Details:
 *  - NaN and +-Inf logits, and suppress_tokens, are never picked (treated as -inf). If no
 *    finite logit remains, the result is 0.
 *  - Penalties use the last repeat_last_n accepted tokens: a token seen c > 0 times gets
 *    l / repeat_penalty when l > 0 and l * repeat_penalty otherwise, then
 *    l -= c * frequency_penalty + presence_penalty (llama.cpp llama_sampler_penalties).
 *  - temp == 0 is greedy: the highest logit after penalties, lowest id on ties.
 *  - top-p keeps the shortest prefix (by logit, then id) whose probability mass reaches
 *    top_p; min-p keeps tokens with p >= min_p * p_max; both use probabilities at
 *    temperature 1 over the top-k survivors, and both keep at least one token. Since both
 *    keep a prefix of the same order, min-p is applied first to shorten the sort.
 *  - The draw: weights exp((l - l_max) / temp) in double, u uniform in [0, 1) from
 *    xoshiro256** seeded through splitmix64.
 *
 * Parameter table (g4_sampler_create refuses anything else with G4_ERR_ARG):
 *   temp               finite, >= 0
 *   top_k              0 (off) .. any; values >= n_vocab mean off
 *   top_p              finite, [0, 1]   (1 = off, 0 = keep the top token)
 *   min_p              finite, [0, 1]   (0 = off)
 *   repeat_penalty     finite, > 0      (1 = off)
 *   repeat_last_n      0 .. 1048576
 *   presence/frequency finite, [-100, 100] (0 = off)
 *   seed               any uint64
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "g4_impl.h"
#include "spec.h"
#include "tokenizer.h"

#define SAMP_MAX_LAST_N (1 << 20)

typedef struct cand { float l; int32_t id; } cand;

struct g4_sampler {
    g4_allocator      al;
    g4_sampler_params p;
    int32_t           n_vocab;
    int32_t          *suppress;   /* [n_suppress] */
    size_t            n_suppress;
    int32_t          *hist;       /* [p.repeat_last_n] ring of accepted tokens */
    int32_t          *hist_tmp;   /* [p.repeat_last_n] sorted copy for counting */
    int32_t           hist_n, hist_pos;
    uint64_t          rng[4];     /* xoshiro256** state */
    cand             *c;          /* [n_vocab] candidates */
    float            *l;          /* [n_vocab] working logits */
};

/* ==== RNG ==== */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t xoshiro(uint64_t *s) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return r;
}
static void seed_rng(g4_sampler *s) {
    uint64_t x = s->p.seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
}
static double uniform01(g4_sampler *s) { return (double)(xoshiro(s->rng) >> 11) * (1.0 / 9007199254740992.0); }

/* ==== Parameters ==== */

void g4_sampler_defaults(const g4_model *m, g4_sampler_params *p) {
    if (!p) return;
    uint64_t seed = p->seed;
    memset(p, 0, sizeof *p);
    p->seed = seed;
    p->temp = 0.8f;
    p->top_k = 40;
    p->top_p = 0.95f;
    p->min_p = 0.05f;
    p->repeat_penalty = 1.0f;
    p->repeat_last_n = 64;
    if (m) { /* general.sampling.* (model.c validated them) */
        if (m->has_samp_temp) p->temp = m->samp_temp;
        if (m->has_samp_top_k) p->top_k = m->samp_top_k;
        if (m->has_samp_top_p) p->top_p = m->samp_top_p;
    }
}

static g4_status check_params(const g4_sampler_params *p, char *err, size_t errlen) {
#define BAD(name, val, rule) g4_errf(G4_ERR_ARG, err, errlen, "sampler: %s = %g: %s", name, (double)(val), rule)
    if (!isfinite(p->temp) || p->temp < 0) return BAD("temp", p->temp, "must be a finite number >= 0");
    if (p->top_k < 0) return g4_errf(G4_ERR_ARG, err, errlen, "sampler: top_k = %d: must be >= 0", (int)p->top_k);
    if (!isfinite(p->top_p) || p->top_p < 0 || p->top_p > 1) return BAD("top_p", p->top_p, "must be in [0, 1]");
    if (!isfinite(p->min_p) || p->min_p < 0 || p->min_p > 1) return BAD("min_p", p->min_p, "must be in [0, 1]");
    if (!isfinite(p->repeat_penalty) || p->repeat_penalty <= 0)
        return BAD("repeat_penalty", p->repeat_penalty, "must be a finite number > 0");
    if (p->repeat_last_n < 0 || p->repeat_last_n > SAMP_MAX_LAST_N)
        return g4_errf(G4_ERR_ARG, err, errlen, "sampler: repeat_last_n = %d: must be in [0, %d]", (int)p->repeat_last_n,
                       SAMP_MAX_LAST_N);
    if (!isfinite(p->presence_penalty) || fabsf(p->presence_penalty) > 100)
        return BAD("presence_penalty", p->presence_penalty, "must be in [-100, 100]");
    if (!isfinite(p->frequency_penalty) || fabsf(p->frequency_penalty) > 100)
        return BAD("frequency_penalty", p->frequency_penalty, "must be in [-100, 100]");
#undef BAD
    return G4_OK;
}

/* ==== Lifetime ==== */

void g4_sampler_free(g4_sampler *s) {
    if (!s) return;
    const g4_allocator al = s->al;
    size_t nv = (size_t)s->n_vocab, nh = (size_t)s->p.repeat_last_n;
    g4_free(&al, s->suppress, s->n_suppress * sizeof *s->suppress);
    g4_free(&al, s->hist, nh * sizeof *s->hist);
    g4_free(&al, s->hist_tmp, nh * sizeof *s->hist_tmp);
    g4_free(&al, s->c, nv * sizeof *s->c);
    g4_free(&al, s->l, nv * sizeof *s->l);
    g4_free(&al, s, sizeof *s);
}

g4_status g4_sampler_create(g4_sampler **out, const g4_model *m, const g4_sampler_params *p, char *err, size_t errlen) {
    if (!out) return g4_errf(G4_ERR_ARG, err, errlen, "sampler: out is NULL");
    *out = NULL;
    if (!m || !p) return g4_errf(G4_ERR_ARG, err, errlen, "sampler: NULL model or params");
    int32_t nv = m->vocab ? tok_n_vocab(m->vocab) : m->cfg.n_vocab;
    if (nv <= 0) return g4_errf(G4_ERR_ARG, err, errlen, "sampler: the model has no vocabulary");
    g4_status st = check_params(p, err, errlen);
    if (st != G4_OK) return st;
    g4_sampler *s = g4_calloc(&m->al, 1, sizeof *s);
    if (!s) return g4_errf(G4_ERR_NOMEM, err, errlen, "sampler: out of memory");
    s->al = m->al;
    s->p = *p;
    s->p.repeat_last_n = 0; /* sizes for g4_sampler_free until the buffers exist */
    s->c = g4_malloc(&s->al, (size_t)nv * sizeof *s->c);
    s->l = g4_malloc(&s->al, (size_t)nv * sizeof *s->l);
    if (s->c && s->l) s->n_vocab = nv;
    else {
        g4_free(&s->al, s->c, (size_t)nv * sizeof *s->c);
        g4_free(&s->al, s->l, (size_t)nv * sizeof *s->l);
        s->c = NULL; s->l = NULL;
    }
    size_t ns = 0;
    const int32_t *sup = m->vocab ? tok_suppress(m->vocab, &ns) : NULL;
    if (ns) {
        s->suppress = g4_malloc(&s->al, ns * sizeof *s->suppress);
        if (s->suppress) { memcpy(s->suppress, sup, ns * sizeof *sup); s->n_suppress = ns; }
    }
    size_t nh = (size_t)p->repeat_last_n;
    if (nh) {
        s->hist = g4_malloc(&s->al, nh * sizeof *s->hist);
        s->hist_tmp = g4_malloc(&s->al, nh * sizeof *s->hist_tmp);
        if (s->hist && s->hist_tmp) s->p.repeat_last_n = p->repeat_last_n;
        else {
            g4_free(&s->al, s->hist, nh * sizeof *s->hist);
            g4_free(&s->al, s->hist_tmp, nh * sizeof *s->hist_tmp);
            s->hist = s->hist_tmp = NULL;
        }
    }
    if (!s->c || (ns && !s->suppress) || (nh && !s->hist)) {
        g4_sampler_free(s);
        return g4_errf(G4_ERR_NOMEM, err, errlen, "sampler: out of memory");
    }
    seed_rng(s);
    *out = s;
    return G4_OK;
}

void g4_sampler_accept(g4_sampler *s, int32_t tok) {
    if (!s || s->p.repeat_last_n <= 0) return;
    s->hist[s->hist_pos] = tok;
    s->hist_pos = (s->hist_pos + 1) % s->p.repeat_last_n;
    if (s->hist_n < s->p.repeat_last_n) s->hist_n++;
}

void g4_sampler_reset(g4_sampler *s) {
    if (!s) return;
    s->hist_n = s->hist_pos = 0;
    seed_rng(s);
}

/* ==== Sampling ==== */

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}
/* candidate order: higher logit first, then lower id */
static inline int cand_before(const cand *a, const cand *b) { return a->l > b->l || (a->l == b->l && a->id < b->id); }
static int cmp_cand(const void *a, const void *b) {
    const cand *x = a, *y = b;
    return cand_before(x, y) ? -1 : cand_before(y, x) ? 1 : 0;
}

static void apply_penalties(g4_sampler *s, float *l) {
    const g4_sampler_params *p = &s->p;
    if (s->hist_n == 0 || (p->repeat_penalty == 1.0f && p->presence_penalty == 0.0f && p->frequency_penalty == 0.0f))
        return;
    int32_t n = s->hist_n;
    memcpy(s->hist_tmp, s->hist, (size_t)n * sizeof *s->hist);
    qsort(s->hist_tmp, (size_t)n, sizeof *s->hist_tmp, cmp_i32);
    for (int32_t i = 0; i < n;) {
        int32_t t = s->hist_tmp[i], c = 0;
        while (i < n && s->hist_tmp[i] == t) { i++; c++; }
        if (t < 0 || t >= s->n_vocab || !isfinite(l[t])) continue;
        float x = l[t];
        x = x > 0 ? x / p->repeat_penalty : x * p->repeat_penalty;
        x -= (float)c * p->frequency_penalty + p->presence_penalty;
        l[t] = x;
    }
}

/* moves the k best of c[0..n) to c[0..k) (unordered), by a min-heap of size k */
static void select_top_k(cand *c, int32_t n, int32_t k) {
    /* heap root = the worst of the kept k */
    for (int32_t i = k / 2 - 1; i >= 0; i--) {
        for (int32_t j = i;;) {
            int32_t a = 2 * j + 1, w = j;
            if (a < k && cand_before(&c[w], &c[a])) w = a;
            if (a + 1 < k && cand_before(&c[w], &c[a + 1])) w = a + 1;
            if (w == j) break;
            cand t = c[j]; c[j] = c[w]; c[w] = t; j = w;
        }
    }
    for (int32_t i = k; i < n; i++) {
        if (!cand_before(&c[i], &c[0])) continue;
        c[0] = c[i];
        for (int32_t j = 0;;) {
            int32_t a = 2 * j + 1, w = j;
            if (a < k && cand_before(&c[w], &c[a])) w = a;
            if (a + 1 < k && cand_before(&c[w], &c[a + 1])) w = a + 1;
            if (w == j) break;
            cand t = c[j]; c[j] = c[w]; c[w] = t; j = w;
        }
    }
}

/* Sorts the shortest prefix of c[0..n) (by logit, then id) whose probability mass reaches
 * top_p and returns its length. Bucketing by logit first (as llama.cpp does) finds which
 * candidates can be in that prefix, so only those are sorted; the result equals sorting all n. */
static inline int bucket_of(float l, float mx, double scale, int nb) {
    int b = (int)(((double)mx - (double)l) * scale);
    return b < 0 ? 0 : b >= nb ? nb - 1 : b; /* never outside the table, whatever the rounding */
}

static int32_t top_p_prefix(cand *c, int32_t n, float mx, double sum, double top_p) {
    enum { NB = 1024 };
    float lo = mx;
    for (int32_t i = 0; i < n; i++) if (c[i].l < lo) lo = c[i].l;
    int32_t k = n;
    if (n > 4 * NB && mx - lo > 0) {
        double mass[NB] = {0}, scale = (double)(NB - 1) / ((double)mx - (double)lo);
        int32_t cnt[NB] = {0};
        for (int32_t i = 0; i < n; i++) { /* bucket 0 holds the highest logits */
            int b = bucket_of(c[i].l, mx, scale, NB);
            mass[b] += exp((double)c[i].l - (double)mx) / sum;
            cnt[b]++;
        }
        double cum = 0;
        int last = NB - 1;
        k = 0;
        for (int b = 0; b < NB; b++) {
            cum += mass[b];
            k += cnt[b];
            if (cum >= top_p) { last = b; break; }
        }
        if (last < NB - 1) { /* move buckets 0..last (every logit above a bound) to the front */
            int32_t o = 0;
            for (int32_t i = 0; i < n; i++)
                if (bucket_of(c[i].l, mx, scale, NB) <= last) { cand t = c[o]; c[o] = c[i]; c[i] = t; o++; }
            k = o;
        } else {
            k = n;
        }
    }
    for (;;) {
        qsort(c, (size_t)k, sizeof *c, cmp_cand);
        double cum = 0;
        for (int32_t i = 0; i < k; i++) {
            cum += exp((double)c[i].l - (double)mx) / sum;
            if (cum >= top_p) return i + 1;
        }
        if (k == n) return n; /* rounding: the whole mass stayed below top_p */
        k = n;                /* rounding at the bucket edge: sort everything */
    }
}

/* The chain up to the draw: c[0..*n) are the candidates left, in order (by logit, then id),
 * with weights exp((l - *mx) / temp); *n = 0 when no logit is finite. Works on s->l
 * (prep_logits); greedy (temp 0) is not handled here. */
static void chain(g4_sampler *s, int32_t *n_out, float *mx_out) {
    const g4_sampler_params *p = &s->p;
    const int32_t nv = s->n_vocab;
    const float *l = s->l;
    cand *c = s->c;
    int32_t n = 0;
    for (int32_t i = 0; i < nv; i++)
        if (isfinite(l[i])) c[n++] = (cand){l[i], i};
    *n_out = 0;
    *mx_out = 0;
    if (n == 0) return;
    if (p->top_k > 0 && p->top_k < n) {
        select_top_k(c, n, p->top_k);
        n = p->top_k;
    }
    float mx = c[0].l;
    for (int32_t i = 1; i < n; i++) if (c[i].l > mx) mx = c[i].l;
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += exp((double)c[i].l - (double)mx);
    if (p->min_p > 0.0f) { /* p_i >= min_p * p_max  <=>  l_i >= l_max + log(min_p) */
        double thr = (double)mx + log((double)p->min_p);
        int32_t k = 0;
        for (int32_t i = 0; i < n; i++) if ((double)c[i].l >= thr) c[k++] = c[i];
        n = k; /* the maximum always stays */
    }
    if (p->top_p < 1.0f) n = top_p_prefix(c, n, mx, sum, (double)p->top_p);
    else if (n > 1) qsort(c, (size_t)n, sizeof *c, cmp_cand);
    *n_out = n;
    *mx_out = mx;
}

/* logits -> s->l: non-finite and suppressed tokens -inf, penalties applied */
static void prep_logits(g4_sampler *s, const float *logits) {
    const int32_t nv = s->n_vocab;
    float *l = s->l;
    for (int32_t i = 0; i < nv; i++) l[i] = isfinite(logits[i]) ? logits[i] : -INFINITY;
    for (size_t i = 0; i < s->n_suppress; i++) l[s->suppress[i]] = -INFINITY;
    apply_penalties(s, l);
}

static int32_t greedy(const g4_sampler *s) { /* lowest id among the maxima */
    const float *l = s->l;
    int32_t best = -1;
    for (int32_t i = 0; i < s->n_vocab; i++)
        if (isfinite(l[i]) && (best < 0 || l[i] > l[best])) best = i;
    return best < 0 ? 0 : best;
}

static inline double weight(const cand *c, float mx, double inv_t) { return exp(((double)c->l - (double)mx) * inv_t); }

int32_t g4_sampler_sample(g4_sampler *s, const float *logits) {
    if (!s || !logits) return 0;
    prep_logits(s, logits);
    if (s->p.temp == 0.0f) return greedy(s);
    int32_t n;
    float mx;
    chain(s, &n, &mx);
    if (n == 0) return 0;
    const cand *c = s->c;
    /* temperature and the draw */
    double tot = 0, inv_t = 1.0 / (double)s->p.temp;
    for (int32_t i = 0; i < n; i++) tot += weight(&c[i], mx, inv_t);
    if (!(tot > 0) || !isfinite(tot)) return c[0].id; /* tiny temperature: all mass on the top */
    double u = uniform01(s) * tot, acc = 0;
    for (int32_t i = 0; i < n; i++) {
        acc += weight(&c[i], mx, inv_t);
        if (u < acc) return c[i].id;
    }
    return c[n - 1].id;
}

/* ==== Speculative verification ==== */

/* The token at a drafted position (spec.c). Greedy: the argmax, which accepts draft iff it
 * is draft. Sampled, with p the chain's distribution and q the drafter's (q[n_vocab], or NULL
 * for a drafter that proposes draft with certainty: n-grams, the assistant's top token), the
 * standard rejection rule (Leviathan et al. 2023; Chen et al. 2023): accept draft with
 * probability min(1, p(draft) / q(draft)); otherwise draw from max(0, p - q), normalised.
 * The result is distributed exactly as p whatever q is. *accepted = 1 when the draft stands. */
int32_t sampler_verify(g4_sampler *s, const float *logits, int32_t draft, const float *q, int *accepted) {
    *accepted = 0;
    if (!s || !logits) return 0;
    prep_logits(s, logits);
    int32_t y;
    if (s->p.temp == 0.0f) {
        y = greedy(s);
        *accepted = y == draft;
        return y;
    }
    int32_t n;
    float mx;
    chain(s, &n, &mx);
    if (n == 0) return 0;
    const cand *c = s->c;
    const double inv_t = 1.0 / (double)s->p.temp;
    double tot = 0, wd = 0;
    for (int32_t i = 0; i < n; i++) {
        const double wi = weight(&c[i], mx, inv_t);
        tot += wi;
        if (c[i].id == draft) wd = wi;
    }
    if (!(tot > 0) || !isfinite(tot)) { /* tiny temperature: all mass on the top */
        *accepted = c[0].id == draft;
        return c[0].id;
    }
    const double pd = wd / tot;
    const double qd = q ? (draft >= 0 && draft < s->n_vocab ? (double)q[draft] : 0.0) : 1.0;
    if (pd > 0 && (qd <= pd || uniform01(s) * qd < pd)) {
        *accepted = 1;
        return draft;
    }
    /* residual max(0, p - q) over the candidates (p is 0 elsewhere) */
    double rt = 0;
    for (int32_t i = 0; i < n; i++) {
        const double pi = weight(&c[i], mx, inv_t) / tot;
        const double qi = q ? (double)q[c[i].id] : (c[i].id == draft ? 1.0 : 0.0);
        if (pi > qi) rt += pi - qi;
    }
    if (!(rt > 0)) return c[0].id == draft && n > 1 ? c[1].id : c[0].id; /* p == q up to rounding */
    double u = uniform01(s) * rt, acc = 0;
    int32_t last = c[0].id;
    for (int32_t i = 0; i < n; i++) {
        const double pi = weight(&c[i], mx, inv_t) / tot;
        const double qi = q ? (double)q[c[i].id] : (c[i].id == draft ? 1.0 : 0.0);
        if (pi <= qi) continue;
        last = c[i].id;
        acc += pi - qi;
        if (u < acc) return c[i].id;
    }
    return last;
}
