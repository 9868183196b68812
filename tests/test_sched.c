/* test_sched.c - g4 serve's slot scheduler (server/slots.c) without HTTP, on a random model with
 * the scalar kernel table, whose results do not depend on how rows are batched, so answers
 * can be compared exactly on any host:
 *   abort  a job cancelled while a step is evaluating stops that step at its next forward chunk
 *          (the library rolls every session back); the other job's answer equals the one it
 *          gives alone, and the cancelled slot is never evaluated again;
 *   reuse  the second turn of a resent conversation after an answer longer than the sliding
 *          rings' slack: without a checkpoint nothing is reused (the window is lost), with one
 *          the shared prefix is (cached_tokens), and the answer equals a fresh evaluation's;
 *   spec   speculative decoding on two slots with three jobs (a prompt joining the verifying
 *          steps): drafters always right, always wrong and ngram-simple give each job's plain
 *          greedy answer alone; drafted / accepted counts per job and in the stats agree.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "slots.h"
#include "t.h"
#include "t_model.h"

static job *mkjob(g4_model *m, const int32_t *ids, size_t n, int32_t n_predict) {
    job *j = job_new();
    if (!j) return NULL;
    j->prompt = malloc(n * sizeof *ids);
    memcpy(j->prompt, ids, n * sizeof *ids);
    j->n_prompt = n;
    j->n_predict = n_predict;
    j->ignore_eos = 1;
    g4_sampler_params sp;
    g4_sampler_defaults(m, &sp);
    sp.temp = 0;
    g4_sampler_create(&j->smp, m, &sp, NULL, 0);
    return j;
}

static void wait_done(job *j) {
    pthread_mutex_lock(&j->mu);
    while (!j->finish) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

/* the generated ids of j */
static size_t ids_of(job *j, int32_t *out, size_t cap) {
    size_t n = j->n_ev < cap ? j->n_ev : cap;
    for (size_t i = 0; i < n; i++) out[i] = j->ev[i].id;
    return n;
}

static void prompt_ids(int32_t *ids, size_t n, uint64_t seed, int32_t n_vocab) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = 20 + (int32_t)((seed >> 33) % (uint64_t)(n_vocab - 20));
    }
}

/* one job alone on a fresh scheduler: its generated ids */
static size_t alone(g4_model *m, const sched_opts *o, const int32_t *p, size_t n, int32_t n_predict, int32_t *out, size_t cap) {
    char err[256];
    sched *s = NULL;
    if (sched_create(&s, m, o, err, sizeof err) != 0) { fprintf(stderr, "    sched: %s\n", err); return 0; }
    job *j = mkjob(m, p, n, n_predict);
    size_t k = 0;
    if (j && sched_submit(s, j) == 0) {
        wait_done(j);
        k = ids_of(j, out, cap);
    }
    job_release(j);
    sched_free(s);
    return k;
}

/* ==== abort ==== */

typedef struct poll_ctl {
    atomic_int polls_a;    /* polls of A's slot */
    atomic_int after;      /* polls of A's slot after the cancel */
    atomic_int slot_a;     /* A's slot, -1 until it runs */
    job       *a;
    int        cancel_at;  /* A's poll that cancels it */
} poll_ctl;

static void on_poll(void *ud, int slot) {
    poll_ctl *c = ud;
    if (slot != atomic_load(&c->slot_a)) return;
    if (atomic_load(&c->a->cancel)) { atomic_fetch_add(&c->after, 1); return; }
    if (atomic_fetch_add(&c->polls_a, 1) + 1 == c->cancel_at) atomic_store(&c->a->cancel, 1);
}

static void abort_mid_step(g4_model *m) {
    const int32_t nv = g4_model_n_vocab(m);
    int32_t pa[200], pb[150], want[64], got[64];
    prompt_ids(pa, 200, 11, nv);
    prompt_ids(pb, 150, 12, nv);
    sched_opts o;
    memset(&o, 0, sizeof o);
    o.n_slots = 2;
    o.n_ctx = 512;
    o.max_queue = 4;
    o.n_ubatch = 16;
    size_t nw = alone(m, &o, pb, 150, 24, want, 64);
    T_CHECK(nw == 24);

    poll_ctl c;
    memset(&c, 0, sizeof c);
    atomic_init(&c.slot_a, -1);
    c.cancel_at = 3;
    o.test_poll = on_poll;
    o.test_ud = &c;
    char err[256];
    sched *s = NULL;
    T_CHECKF(sched_create(&s, m, &o, err, sizeof err) == 0, "%s", err);
    if (!s) return;
    job *b = mkjob(m, pb, 150, 24), *a = mkjob(m, pa, 200, 24);
    c.a = a;
    T_CHECK(sched_submit(s, b) == 0);
    T_CHECK(sched_submit(s, a) == 0);
    /* A's slot, once the scheduler gives it one (polls before that are B's) */
    for (int i = 0; i < 20000 && atomic_load(&c.slot_a) < 0; i++) {
        pthread_mutex_lock(&a->mu);
        int sl = a->slot, fin = a->finish;
        pthread_mutex_unlock(&a->mu);
        if (sl >= 0) atomic_store(&c.slot_a, sl);
        if (fin) break;
        usleep(100);
    }
    wait_done(a);
    wait_done(b);
    sched_stats st;
    sched_get_stats(s, &st);
    size_t ng = ids_of(b, got, 64);
    /* A may have been admitted before its slot was read: then its first polls went uncounted
     * and the cancel came later, still inside an eval, which is what is checked */
    T_CHECKF(a->finish == FIN_CANCEL && a->n_gen < 24, "A: finish %d, %d tokens", a->finish, (int)a->n_gen);
    T_CHECKF(st.aborted_steps >= 1, "aborted steps %llu", (unsigned long long)st.aborted_steps);
    T_CHECKF(atomic_load(&c.after) == 0, "A's slot polled %d times after the cancel", atomic_load(&c.after));
    T_CHECKF(b->finish == FIN_LENGTH && ng == nw && memcmp(got, want, nw * sizeof *got) == 0,
             "B: finish %d, %zu tokens; its answer %s the one it gives alone", b->finish, ng,
             ng == nw && memcmp(got, want, nw * sizeof *got) == 0 ? "equals" : "differs from");
    T_CHECK(st.busy == 0);
    job_release(a);
    job_release(b);
    sched_free(s);
}

/* ==== prefix reuse past the rings ==== */

static void reuse_at_depth(g4_model *m) {
    const int32_t nv = g4_model_n_vocab(m);
    enum { N1 = 300, NEW = 40, ANS = 60 };
    int32_t p1[N1], p2[N1 - 2 + NEW], want[32], got[32];
    prompt_ids(p1, N1, 21, nv);
    memcpy(p2, p1, (N1 - 2) * sizeof *p1);         /* the conversation resent without the last */
    prompt_ids(p2 + N1 - 2, NEW, 22, nv);          /* two ids, and a new turn */
    const size_t n2 = N1 - 2 + NEW;
    char dir[600], err[256];
    T_CHECKF(ckpt_dir_create(dir, sizeof dir, err, sizeof err) == 0, "%s", err);
    for (int with = 0; with <= 1; with++) {
        sched_opts o;
        memset(&o, 0, sizeof o);
        o.n_slots = 1;
        o.n_ctx = 1024;
        o.max_queue = 4;
        o.n_ubatch = 16;                           /* rings: window + 15, far less than the answer */
        o.ckpt_dir = with ? dir : NULL;
        size_t nw = alone(m, &o, p2, n2, 20, want, 32);
        sched *s = NULL;
        T_CHECKF(sched_create(&s, m, &o, err, sizeof err) == 0, "%s", err);
        if (!s) break;
        job *j1 = mkjob(m, p1, N1, ANS);
        T_CHECK(sched_submit(s, j1) == 0);
        wait_done(j1);
        job *j2 = mkjob(m, p2, n2, 20);
        T_CHECK(sched_submit(s, j2) == 0);
        wait_done(j2);
        sched_stats st;
        sched_get_stats(s, &st);
        size_t ng = ids_of(j2, got, 32);
        if (!with) {
            T_CHECKF(j2->n_cached < 20, "no checkpoint: %d ids reused after the rings moved on", (int)j2->n_cached);
        } else {
            T_CHECKF(j2->n_cached == N1 - 2 && st.ckpt_saves >= 1 && st.ckpt_loads == 1,
                     "checkpoint: %d ids reused (want %d), %llu saved, %llu used", (int)j2->n_cached, N1 - 2,
                     (unsigned long long)st.ckpt_saves, (unsigned long long)st.ckpt_loads);
        }
        T_CHECKF(j2->finish == FIN_LENGTH && ng == nw && nw == 20 && memcmp(got, want, nw * sizeof *got) == 0,
                 "%s checkpoint: the second turn's answer %s a fresh evaluation's", with ? "with" : "without",
                 ng == nw && memcmp(got, want, nw * sizeof *got) == 0 ? "equals" : "differs from");
        job_release(j1);
        job_release(j2);
        sched_free(s);
    }
    ckpt_dir_remove(dir);
    T_CHECK(access(dir, F_OK) != 0);
}

/* ==== speculative decoding ==== */

enum { SP_JOBS = 3, SP_N = 30, SP_P = 40 };

typedef struct oracle {
    int32_t prompt[SP_JOBS][SP_P];
    int32_t want[SP_JOBS][SP_N];
    int     wrong; /* 1 = propose what the answer does not say */
    const g4_model *m;
} oracle;

/* a drafter that knows each job's greedy answer (or proposes anything else) */
static size_t oracle_draft(void *ud, const int32_t *hist, size_t n_hist, int32_t last, int32_t *draft, size_t max) {
    const oracle *o = ud;
    (void)last;
    for (int q = 0; q < SP_JOBS; q++) {
        if (n_hist < SP_P || memcmp(hist, o->prompt[q], SP_P * sizeof *hist)) continue;
        size_t at = n_hist - SP_P + 1, k = 0; /* want[at - 1] is last */
        for (; k < max && at + k < SP_N; k++) {
            draft[k] = o->wrong ? (o->want[q][at + k] + 1) % 500 : o->want[q][at + k];
            /* the library ends a step at an end-of-generation token (the job ignores it) */
            if (g4_model_is_eog(o->m, o->want[q][at + k])) return k + 1;
        }
        return k;
    }
    return 0;
}

/* Three greedy jobs on two slots (the third's prompt joins the others' verifying steps): with
 * every drafter the answers are each job's plain answer alone, and the counts add up. */
static void spec_greedy(g4_model *m) {
    const int32_t nv = g4_model_n_vocab(m);
    static oracle orc;
    orc.m = m;
    sched_opts o;
    memset(&o, 0, sizeof o);
    o.n_slots = 2;
    o.n_ctx = 256;
    o.max_queue = 4;
    o.n_ubatch = 16;
    for (int q = 0; q < SP_JOBS; q++) {
        prompt_ids(orc.prompt[q], SP_P, 31 + (uint64_t)q, nv);
        for (int i = 20; i < SP_P; i++) orc.prompt[q][i] = orc.prompt[q][i - 10 + q % 2]; /* repeats for the n-grams */
        T_CHECK(alone(m, &o, orc.prompt[q], SP_P, SP_N, orc.want[q], SP_N) == SP_N);
    }
    const struct { const char *name; g4_spec_opts so; int wrong; } v[] = {
        { "oracle", { .type = G4_SPEC_CUSTOM, .n_max = 4, .draft_fn = oracle_draft, .draft_ud = &orc }, 0 },
        { "always wrong", { .type = G4_SPEC_CUSTOM, .n_max = 3, .draft_fn = oracle_draft, .draft_ud = &orc }, 1 },
        { "ngram-simple", { .type = G4_SPEC_NGRAM_SIMPLE, .ngram_n = 1, .ngram_m = 5 }, 0 },
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        orc.wrong = v[k].wrong;
        o.spec = &v[k].so;
        char err[256];
        sched *s = NULL;
        T_CHECKF(sched_create(&s, m, &o, err, sizeof err) == 0, "%s", err);
        if (!s) continue;
        job *j[SP_JOBS];
        for (int q = 0; q < SP_JOBS; q++) {
            j[q] = mkjob(m, orc.prompt[q], SP_P, SP_N);
            T_CHECK(sched_submit(s, j[q]) == 0);
        }
        int same = 1;
        uint64_t drafted = 0, accepted = 0;
        for (int q = 0; q < SP_JOBS; q++) {
            int32_t got[SP_N];
            wait_done(j[q]);
            same &= j[q]->finish == FIN_LENGTH && ids_of(j[q], got, SP_N) == SP_N && !memcmp(got, orc.want[q], sizeof got);
            drafted += (uint64_t)j[q]->n_drafted;
            accepted += (uint64_t)j[q]->n_accepted;
        }
        sched_stats st;
        sched_get_stats(s, &st);
        T_CHECKF(same, "%s: speculative answers on 2 slots equal each job's plain answer alone", v[k].name);
        T_CHECKF(st.draft_tokens == drafted && st.draft_accepted == accepted && accepted <= drafted,
                 "%s: counts: stats %llu / %llu, jobs %llu / %llu", v[k].name, (unsigned long long)st.draft_tokens,
                 (unsigned long long)st.draft_accepted, (unsigned long long)drafted, (unsigned long long)accepted);
        if (k == 0) T_CHECKF(drafted > 30 && accepted == drafted, "oracle: %llu drafted, %llu accepted",
                             (unsigned long long)drafted, (unsigned long long)accepted);
        if (k == 1) T_CHECKF(drafted > 30 && accepted == 0, "always wrong: %llu drafted, %llu accepted",
                             (unsigned long long)drafted, (unsigned long long)accepted);
        /* fewer steps than tokens when every draft is right */
        if (k == 0) T_CHECKF(st.steps < SP_JOBS * SP_N / 2, "oracle: %llu steps for %d tokens", (unsigned long long)st.steps, SP_JOBS * SP_N);
        for (int q = 0; q < SP_JOBS; q++) job_release(j[q]);
        sched_free(s);
    }
}

T_GROUP(sched) {
    g4_testgen_opts go = {0};
    go.n_ctx = 2048;
    t_model t;
    if (!t_model_open(&t, &go, 1, "scalar")) { T_CHECK(0); return; }
    abort_mid_step(t.m);
    reuse_at_depth(t.m);
    spec_greedy(t.m);
    t_model_close(&t);
}
