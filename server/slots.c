/* slots.c - the slot scheduler: continuous batching over -np sessions (slots.h).
 *
 * One thread owns the model's sessions. Each step it admits queued jobs into idle slots, then
 * advances every busy slot together with one g4_batch_eval call: a slot still reading its
 * prompt contributes its next chunk (at most n_ubatch tokens), a decoding slot its last
 * sampled token, so a new request's prompt joins the running decodes. After the step each
 * slot that reached the end of its input samples, detokenizes, checks stop strings and
 * limits, and appends to its job.
 *
 * Prefix reuse: a slot keeps its KV cache and the ids in it when its job ends. A new job goes
 * to the idle slot whose ids (or checkpoint) share the longest prefix with its prompt; the
 * slot is truncated to that prefix and only the rest of the prompt is evaluated.
 * g4_session_truncate hands back less when the sliding-window rings no longer hold what
 * continuing there needs (the answer generated after a long prompt overwrote the window): then
 * the slot's context checkpoint (ckpt.h), saved when a long prompt was evaluated, is loaded
 * and cut back instead, so a resent conversation costs only what follows the shared prefix.
 *
 * Speculative decoding (sched_opts.spec): a decoding slot drafts after its last sampled token
 * (g4_spec_draft: n-gram lookup in its own ids, or the assistant over its cache) and the
 * step's one g4_batch_eval_ex verifies that token and the draft together with every token's
 * logits in a one-token eval's float order, while prompt-phase slots keep their batch order;
 * g4_spec_accept then takes the accepted prefix and the token after it (the library's
 * rejection rule for sampled jobs), rolls the session back past the first rejection, and
 * the tokens are emitted one by one as plain decoding would. The draft is cut to the job's
 * remaining tokens and the context; tokens verified past a stop stay in the cache (the ids
 * record them, so prefix reuse stays exact).
 *
 * Cancellation: the connection sets job->cancel; the scheduler sees it before the next step
 * and frees the slot, and during a step every session's abort callback (polled by the library
 * before each forward chunk) stops the batched eval: the library rolls every session of the
 * step back, and the next step runs without the cancelled slot. A client that disconnects
 * costs at most one forward chunk.
 */
#include "slots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckpt.h"

enum { PH_IDLE = 0, PH_PROMPT, PH_DECODE };

typedef struct slot {
    struct sched *owner;
    g4_session *s;
    int32_t    *toks;      /* [n_ctx] ids in the KV cache, in order */
    int32_t     n_toks;
    job        *j;         /* running job, or NULL */
    size_t      p_done;    /* prompt ids already in the cache */
    int32_t     pending;   /* sampled id to evaluate next (decode) */
    int         phase;
    uint64_t    used;      /* step of the last use, for choosing among equal prefixes */
    ckpt        ck;        /* the last long prompt's state */
    g4_spec    *sp;        /* speculative decoder of the session, NULL = none */
    int32_t    *vt;        /* [n_max + 1] this step's tokens: pending, then the draft */
    int32_t    *acc;       /* [n_max + 1] what g4_spec_accept returned */
    float      *lrow;      /* [n_vocab] a logprobs job's logits row (accept forgets the session's) */
} slot;

struct sched {
    g4_model  *m;
    g4_batch  *b;
    sched_opts o;
    int32_t    n_vocab;
    int32_t    n_max;      /* most drafted tokens per step (speculative decoding), 0 = none */
    slot      *slots;      /* [n_slots] */
    pthread_t  th;
    int        th_started;
    pthread_mutex_t mu;    /* queue, flags, stats */
    pthread_cond_t  cv;
    job       *q_head, *q_tail;
    int        n_queued;
    int        stopping, draining;
    double     deadline;
    atomic_int halt;       /* stop evaluating now: sched_free */
    atomic_llong cut_ns;   /* the drain deadline in ns of sched_now (0 = none): evals stop after it */
    double     t_begin;    /* creation, for the rates' window */
    rates      rt;         /* under mu */
    sched_stats st;
    /* step scratch */
    g4_session **bs;       /* [n_slots] */
    const int32_t **bt;
    size_t    *bn;
    int       *bi;         /* slot index per batch entry */
    unsigned  *bf;         /* G4_EVAL_* flags per batch entry */
    int32_t   *bpast;      /* n_past before the step */
};

double sched_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ==== Jobs ==== */

job *job_new(void) {
    job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    atomic_init(&j->cancel, 0);
    atomic_init(&j->refs, 1);
    j->n_predict = -1;
    j->top_logprobs = -1;
    j->slot = -1;
    return j;
}

void job_release(job *j) {
    if (!j || atomic_fetch_sub(&j->refs, 1) != 1) return;
    g4_sampler_free(j->smp);
    free(j->prompt);
    free(j->text);
    free(j->ev);
    free(j->hold);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np) return 0;
    *p = np;
    *cap = nc;
    return 1;
}

/* appends released text (caller holds j->mu) */
static void release_text(job *j, const char *s, size_t n) {
    if (!n) return;
    if (!grow((void **)&j->text, &j->text_cap, j->text_len + n + 1, 1)) return;
    memcpy(j->text + j->text_len, s, n);
    j->text_len += n;
    j->text[j->text_len] = 0;
}

/* new detokenized bytes: stop-string matching with hold-back. Returns 1 when a stop string
 * matched (the text before it is released, the rest dropped). */
static int push_text(job *j, const char *s, size_t n) {
    if (n && !grow((void **)&j->hold, &j->hold_cap, j->n_hold + n, 1)) return 0;
    if (n) memcpy(j->hold + j->n_hold, s, n);
    j->n_hold += n;
    size_t best = SIZE_MAX;
    for (int k = 0; k < j->n_stop; k++) {
        const char *f = j->stop_len[k] <= j->n_hold ? memmem(j->hold, j->n_hold, j->stop[k], j->stop_len[k]) : NULL;
        if (f && (size_t)(f - j->hold) < best) best = (size_t)(f - j->hold);
    }
    if (best != SIZE_MAX) {
        release_text(j, j->hold, best);
        j->n_hold = 0;
        return 1;
    }
    /* keep the longest suffix that could still become a stop string */
    size_t keep = 0;
    for (int k = 0; k < j->n_stop; k++) {
        size_t L = j->stop_len[k] - 1 < j->n_hold ? j->stop_len[k] - 1 : j->n_hold;
        for (size_t q = L; q > keep; q--)
            if (memcmp(j->hold + j->n_hold - q, j->stop[k], q) == 0) { keep = q; break; }
    }
    release_text(j, j->hold, j->n_hold - keep);
    if (keep) memmove(j->hold, j->hold + j->n_hold - keep, keep);
    j->n_hold = keep;
    return 0;
}

/* ==== Slots ==== */

static size_t lcp(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    size_t n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

static void finish(sched *s, slot *sl, job *j, int fin, const char *msg) {
    /* the counters first, so whoever the job's end wakes sees them settled */
    pthread_mutex_lock(&s->mu);
    s->st.requests_done++;
    rates_request(&s->rt, sched_now());
    s->st.gen_tokens += (uint64_t)j->n_gen;
    if (sl) s->st.busy--;
    pthread_mutex_unlock(&s->mu);
    if (sl) {
        sl->j = NULL;
        sl->phase = PH_IDLE;
    }
    pthread_mutex_lock(&j->mu);
    if (fin == FIN_STOP || fin == FIN_LENGTH) { /* flush: held text and an incomplete character */
        char tail[64];
        size_t k = g4_detok_flush(&j->dt, tail, sizeof tail);
        release_text(j, j->hold, j->n_hold);
        release_text(j, tail, k);
    }
    j->n_hold = 0;
    j->finish = fin;
    if (msg) snprintf(j->errmsg, sizeof j->errmsg, "%s", msg);
    j->t_end = sched_now();
    j->slot = -1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    job_release(j);
}

/* job j enters slot sl: reuse the longest cached prefix (or the checkpoint's) */
static void assign(sched *s, slot *sl, job *j) {
    size_t common = lcp(sl->toks, (size_t)sl->n_toks, j->prompt, j->n_prompt);
    int32_t keep = (int32_t)(common < j->n_prompt ? common : j->n_prompt - 1); /* evaluate >= 1 id for logits */
    int32_t pos = g4_session_truncate(sl->s, keep);
    if (pos < 0 || pos > keep) pos = 0, g4_session_reset(sl->s);
    int loaded = 0;
    if (sl->ck.n > pos) { /* the checkpoint may share more */
        int32_t p2 = ckpt_restore(&sl->ck, sl->s, j->prompt, j->n_prompt, pos, (int32_t)j->n_prompt - 1, s->o.n_ubatch, sl->toks);
        if (p2 >= 0) pos = p2, loaded = 1;
    }
    sl->n_toks = pos;
    sl->p_done = (size_t)pos;
    sl->j = j;
    sl->phase = PH_PROMPT;
    sl->used = s->st.steps;
    for (size_t i = 0; i < j->n_prompt; i++) g4_sampler_accept(j->smp, j->prompt[i]);
    pthread_mutex_lock(&j->mu);
    j->n_cached = pos;
    j->slot = (int)(sl - s->slots);
    j->t_start = sched_now();
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_lock(&s->mu);
    s->st.cached_tokens += (uint64_t)pos;
    s->st.prompt_tokens += (uint64_t)(j->n_prompt - (size_t)pos);
    s->st.ckpt_loads += (uint64_t)loaded;
    pthread_mutex_unlock(&s->mu);
}

/* the library polls this before each forward chunk of an eval holding the slot's session */
static int slot_abort(void *ud) {
    slot *sl = ud;
    sched *s = sl->owner;
    if (s->o.test_poll) s->o.test_poll(s->o.test_ud, (int)(sl - s->slots));
    long long cut = atomic_load(&s->cut_ns);
    return atomic_load(&s->halt) || (cut && sched_now() * 1e9 > (double)cut) ||
           (sl->j && sl->phase != -1 && atomic_load(&sl->j->cancel));
}

static void logprobs(sched *s, job *j, const float *lg, int32_t tok, tok_ev *e) {
    (void)s;
    float mx = -INFINITY;
    for (int32_t i = 0; i < s->n_vocab; i++) if (lg[i] > mx) mx = lg[i];
    double sum = 0;
    for (int32_t i = 0; i < s->n_vocab; i++) sum += exp((double)(lg[i] - mx));
    double lse = (double)mx + log(sum);
    e->logprob = (float)((double)lg[tok] - lse);
    int k = j->top_logprobs > SCHED_MAX_TOP ? SCHED_MAX_TOP : j->top_logprobs;
    e->n_top = 0;
    for (int32_t i = 0; i < s->n_vocab && k > 0; i++) {
        float v = lg[i];
        if (e->n_top == k && v <= e->top_lp[k - 1]) continue;
        int p = e->n_top < k ? e->n_top++ : k - 1;
        while (p > 0 && e->top_lp[p - 1] < v) { e->top_lp[p] = e->top_lp[p - 1]; e->top_id[p] = e->top_id[p - 1]; p--; }
        e->top_lp[p] = v;
        e->top_id[p] = i;
    }
    for (int q = 0; q < e->n_top; q++) e->top_lp[q] = (float)((double)e->top_lp[q] - lse);
}

/* tok was generated (sampled from lg, which log probabilities read) when the slot's cache
 * held n_in tokens: emit it and decide what follows. Returns 1 (a token was generated). */
static int emit(sched *s, slot *sl, int32_t tok, const float *lg, int32_t n_in) {
    job *j = sl->j;
    if (tok < 0 || tok >= s->n_vocab) { finish(s, sl, j, FIN_ERROR, "sampled an id outside the vocabulary"); return 0; }
    tok_ev e;
    memset(&e, 0, sizeof e);
    e.id = tok;
    if (j->top_logprobs >= 0) logprobs(s, j, lg, tok, &e);
    if (!j->ignore_eos && g4_model_is_eog(s->m, tok)) { finish(s, sl, j, FIN_STOP, NULL); return 1; }
    char piece[1100];
    size_t k = g4_detok_push(&j->dt, s->m, tok, 0, piece, sizeof piece);
    pthread_mutex_lock(&j->mu);
    e.text0 = (uint32_t)j->text_len;
    int stopped = push_text(j, piece, k);
    e.text1 = (uint32_t)j->text_len;
    j->n_gen++;
    if (!j->t_first) j->t_first = sched_now();
    if (grow((void **)&j->ev, &j->ev_cap, j->n_ev + 1, sizeof *j->ev)) j->ev[j->n_ev++] = e;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (stopped) { /* what followed the stop string is dropped, incomplete character included */
        memset(&j->dt, 0, sizeof j->dt);
        finish(s, sl, j, FIN_STOP, NULL);
        return 1;
    }
    if (j->n_predict >= 0 && j->n_gen >= j->n_predict) { finish(s, sl, j, FIN_LENGTH, NULL); return 1; }
    if (n_in >= s->o.n_ctx) { finish(s, sl, j, FIN_LENGTH, NULL); return 1; } /* context full */
    sl->pending = tok;
    sl->phase = PH_DECODE;
    return 1;
}

/* after the slot's input reached its end: one generated token (returns 1 when one was) */
static int generate(sched *s, slot *sl) {
    job *j = sl->j;
    const float *lg = g4_session_logits(sl->s);
    if (j->n_predict >= 0 && j->n_gen >= j->n_predict) { finish(s, sl, j, FIN_LENGTH, NULL); return 0; }
    int32_t tok = g4_sampler_sample(j->smp, lg);
    g4_sampler_accept(j->smp, tok);
    return emit(s, sl, tok, lg, sl->n_toks);
}

/* The slot's last token and draft (vt[0 .. n)) were verified: accept, emit. Returns the
 * tokens generated. */
static int spec_after(sched *s, slot *sl, size_t n) {
    job *j = sl->j;
    const int32_t n0 = sl->n_toks;
    if (j->top_logprobs >= 0) memcpy(sl->lrow, g4_session_logits_ith(sl->s, 0), (size_t)s->n_vocab * sizeof(float));
    g4_spec_stats a, b;
    g4_spec_get_stats(sl->sp, &a);
    size_t na = 0;
    if (g4_spec_accept(sl->sp, j->smp, sl->vt[0], sl->vt + 1, n - 1, sl->acc, (size_t)s->n_max + 1, &na) != G4_OK) {
        char msg[300];
        snprintf(msg, sizeof msg, "speculative decoding: %s", g4_spec_errmsg(sl->sp));
        g4_session_reset(sl->s);
        sl->n_toks = 0;
        finish(s, sl, j, FIN_ERROR, msg);
        return 0;
    }
    g4_spec_get_stats(sl->sp, &b);
    /* the cache holds the last token and the accepted drafts: vt[0 .. na) */
    memcpy(sl->toks + n0, sl->vt, na * sizeof(int32_t));
    sl->n_toks = n0 + (int32_t)na;
    const uint64_t dd = b.n_drafted - a.n_drafted, da = b.n_accepted - a.n_accepted;
    pthread_mutex_lock(&s->mu); /* before the job can end: whoever it wakes sees them */
    s->st.draft_tokens += dd;
    s->st.draft_accepted += da;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&j->mu);
    j->n_drafted += (int32_t)dd;
    j->n_accepted += (int32_t)da;
    pthread_mutex_unlock(&j->mu);
    int got = 0;
    for (size_t i = 0; i < na && sl->j == j; i++) {
        if (j->n_predict >= 0 && j->n_gen >= j->n_predict) { finish(s, sl, j, FIN_LENGTH, NULL); break; }
        got += emit(s, sl, sl->acc[i], j->top_logprobs >= 0 ? sl->lrow : NULL, n0 + (int32_t)i + 1);
    }
    return got;
}

/* ==== The loop ==== */

static void admit(sched *s) { /* under s->mu */
    job **pp = &s->q_head, *prev = NULL;
    while (*pp) {
        job *j = *pp;
        if (atomic_load(&j->cancel)) { /* gone before it started */
            *pp = j->next;
            if (s->q_tail == j) s->q_tail = prev;
            s->n_queued--;
            pthread_mutex_unlock(&s->mu);
            finish(s, NULL, j, FIN_CANCEL, NULL);
            pthread_mutex_lock(&s->mu);
            pp = &s->q_head, prev = NULL; /* restart: the list may have changed */
            continue;
        }
        int best = -1;
        size_t best_len = 0;
        for (int i = 0; i < s->o.n_slots; i++) {
            slot *sl = &s->slots[i];
            if (sl->j) continue;
            size_t c = lcp(sl->toks, (size_t)sl->n_toks, j->prompt, j->n_prompt);
            size_t c2 = lcp(sl->ck.toks, (size_t)sl->ck.n, j->prompt, j->n_prompt);
            if (c2 > c) c = c2;
            if (best < 0 || c > best_len || (c == best_len && sl->used < s->slots[best].used)) { best = i; best_len = c; }
        }
        if (best < 0) break; /* no idle slot: FIFO, wait */
        *pp = j->next;
        if (s->q_tail == j) s->q_tail = prev;
        s->n_queued--;
        s->st.busy++;
        s->slots[best].j = j; /* reserve; set up outside the lock */
        s->slots[best].phase = -1;
    }
}

static void step(sched *s) {
    size_t n = 0;
    for (int i = 0; i < s->o.n_slots; i++) {
        slot *sl = &s->slots[i];
        if (!sl->j) continue;
        if (sl->phase == -1) assign(s, sl, sl->j);
        job *j = sl->j;
        if (atomic_load(&j->cancel)) { finish(s, sl, j, FIN_CANCEL, NULL); continue; }
        const int32_t *t;
        size_t k;
        if (sl->phase == PH_PROMPT) {
            k = j->n_prompt - sl->p_done;
            if (k > (size_t)s->o.n_ubatch) k = (size_t)s->o.n_ubatch;
            t = j->prompt + sl->p_done;
        } else if (sl->sp) {
            /* draft after the pending token: at most n_max, the job's remaining tokens less
             * the one sampled after the draft, and the context's room less the pending one */
            size_t d = 0, dmax = (size_t)s->n_max;
            const int64_t left = j->n_predict >= 0 ? (int64_t)j->n_predict - j->n_gen - 1 : INT64_MAX;
            const int64_t room = (int64_t)s->o.n_ctx - sl->n_toks - 1;
            if (left < (int64_t)dmax) dmax = left > 0 ? (size_t)left : 0;
            if (room < (int64_t)dmax) dmax = room > 0 ? (size_t)room : 0;
            if (j->top_logprobs >= 0) dmax = 0; /* their logits row is kept for one token only */
            sl->vt[0] = sl->pending;
            if (dmax && g4_spec_draft(sl->sp, sl->pending, sl->vt + 1, dmax, &d) != G4_OK) d = 0;
            k = 1 + d;
            t = sl->vt;
        } else {
            k = 1;
            t = &sl->pending;
        }
        if ((size_t)sl->n_toks + k > (size_t)s->o.n_ctx) { finish(s, sl, j, FIN_LENGTH, NULL); continue; }
        s->bs[n] = sl->s;
        s->bt[n] = t;
        s->bn[n] = k;
        s->bf[n] = sl->sp && sl->phase == PH_DECODE ? G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER : 0;
        s->bi[n] = i;
        s->bpast[n] = g4_session_n_past(sl->s);
        n++;
    }
    if (!n) return;
    double t0 = sched_now();
    g4_status st = g4_batch_eval_ex(s->b, s->bs, s->bt, s->bn, s->n_max ? s->bf : NULL, n);
    double dt = sched_now() - t0;
    if (st == G4_ERR_ABORTED) {
        /* a job was cancelled (or the server stops) between chunks: every session is back where
         * it was; the next step runs without the cancelled job. A session that could not go back
         * (its rings lost the window: never for the one chunk per slot a step holds) restarts
         * its prompt, or its job fails when it was generating. */
        for (size_t e = 0; e < n; e++) {
            slot *sl = &s->slots[s->bi[e]];
            int32_t np = g4_session_n_past(sl->s);
            if (np == s->bpast[e]) continue;
            sl->n_toks = np;
            if (sl->phase == PH_PROMPT) sl->p_done = (size_t)np;
            else finish(s, sl, sl->j, FIN_ERROR, "the slot's cache was lost when a neighbouring request was cancelled");
        }
        pthread_mutex_lock(&s->mu);
        s->st.aborted_steps++;
        rates_step(&s->rt, sched_now(), dt, 0, 0);
        pthread_mutex_unlock(&s->mu);
        return;
    }
    int any_prompt = 0;
    uint64_t n_prompt_tok = 0, n_gen = 0, saves = 0;
    for (size_t e = 0; e < n; e++) {
        slot *sl = &s->slots[s->bi[e]];
        int advanced = g4_session_n_past(sl->s) == s->bpast[e] + (int32_t)s->bn[e];
        if (st != G4_OK && !advanced) {
            /* the real call changes no session on error and names the one at fault; fail
             * that job (or all of them when the message names none) */
            char msg[320];
            snprintf(msg, sizeof msg, "evaluation failed: %s", g4_batch_errmsg(s->b));
            char tag[32];
            snprintf(tag, sizeof tag, "session %zu", e);
            if (strstr(g4_batch_errmsg(s->b), tag) || !strstr(g4_batch_errmsg(s->b), "session ")) {
                g4_session_reset(sl->s);
                sl->n_toks = 0;
                finish(s, sl, sl->j, FIN_ERROR, msg);
            }
            continue;
        }
        if (s->bf[e] & G4_EVAL_DECODE_ORDER) { /* a verified draft */
            sl->used = s->st.steps;
            n_gen += (uint64_t)spec_after(s, sl, s->bn[e]);
            continue;
        }
        memcpy(sl->toks + sl->n_toks, s->bt[e], s->bn[e] * sizeof(int32_t));
        sl->n_toks += (int32_t)s->bn[e];
        sl->used = s->st.steps;
        if (sl->phase == PH_PROMPT) {
            any_prompt = 1;
            n_prompt_tok += s->bn[e];
            sl->p_done += s->bn[e];
            if (sl->p_done < sl->j->n_prompt) continue;
            /* a long prompt is in: its state is what the next turn of this conversation starts from */
            if (sl->ck.path[0] && sl->j->n_prompt >= (size_t)s->o.ckpt_min && sl->j->n_prompt > (size_t)sl->j->n_cached + 1 &&
                ckpt_save(&sl->ck, sl->s, sl->toks) == 0)
                saves++;
            if (sl->j->n_predict == 0) { finish(s, sl, sl->j, FIN_LENGTH, NULL); continue; }
            if (sl->sp && g4_spec_begin(sl->sp, sl->toks, (size_t)sl->n_toks) != G4_OK) {
                char msg[300];
                snprintf(msg, sizeof msg, "speculative decoding: %s", g4_spec_errmsg(sl->sp));
                finish(s, sl, sl->j, FIN_ERROR, msg);
                continue;
            }
        }
        n_gen += (uint64_t)generate(s, sl);
    }
    pthread_mutex_lock(&s->mu);
    s->st.steps++;
    s->st.ckpt_saves += saves;
    if (any_prompt) s->st.prompt_s += dt; else s->st.decode_s += dt;
    rates_step(&s->rt, sched_now(), dt, n_prompt_tok, n_gen);
    pthread_mutex_unlock(&s->mu);
}

static void *loop(void *arg) {
    sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int busy = s->st.busy;
        if (s->stopping) break;
        if (s->draining && (sched_now() > s->deadline || (!busy && !s->q_head))) break;
        if (!busy && !s->q_head) {
            if (s->draining) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 100000000;
                if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
                pthread_cond_timedwait(&s->cv, &s->mu, &ts);
            } else {
                pthread_cond_wait(&s->cv, &s->mu);
            }
            continue;
        }
        admit(s);
        pthread_mutex_unlock(&s->mu);
        step(s);
        pthread_mutex_lock(&s->mu);
    }
    /* stopping: cut what runs, refuse what waits */
    job *q = s->q_head;
    s->q_head = s->q_tail = NULL;
    s->n_queued = 0;
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->o.n_slots; i++) {
        slot *sl = &s->slots[i];
        if (!sl->j) continue;
        if (sl->phase == -1) {
            job *j = sl->j;
            finish(s, sl, j, FIN_ERROR, "the server is shutting down");
        } else {
            finish(s, sl, sl->j, FIN_LENGTH, NULL);
        }
    }
    while (q) {
        job *nx = q->next;
        finish(s, NULL, q, FIN_ERROR, "the server is shutting down");
        q = nx;
    }
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ==== Public ==== */

int sched_create(sched **out, g4_model *m, const sched_opts *o, char *err, size_t errlen) {
    *out = NULL;
    sched *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return -1; }
    s->m = m;
    s->o = *o;
    if (s->o.n_ubatch <= 0) s->o.n_ubatch = 128;
    if (s->o.ckpt_min <= 0) s->o.ckpt_min = 2 * s->o.n_ubatch;
    s->n_vocab = g4_model_n_vocab(m);
    atomic_init(&s->halt, 0);
    atomic_init(&s->cut_ns, 0);
    s->t_begin = sched_now();
    rates_init(&s->rt);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    int n = o->n_slots;
    s->slots = calloc((size_t)n, sizeof *s->slots);
    s->bs = calloc((size_t)n, sizeof *s->bs);
    s->bt = calloc((size_t)n, sizeof *s->bt);
    s->bn = calloc((size_t)n, sizeof *s->bn);
    s->bi = calloc((size_t)n, sizeof *s->bi);
    s->bf = calloc((size_t)n, sizeof *s->bf);
    s->bpast = calloc((size_t)n, sizeof *s->bpast);
    if (!s->slots || !s->bs || !s->bt || !s->bn || !s->bi || !s->bf || !s->bpast) { snprintf(err, errlen, "out of memory"); sched_free(s); return -1; }
    s->st.slots = n;
    g4_session_opts so;
    memset(&so, 0, sizeof so);
    so.n_ctx = o->n_ctx;
    so.n_ubatch = s->o.n_ubatch;
    so.batch_only = 1; /* evaluated through the batch only: no scratch of its own */
    if (o->spec) { /* logits rows, n_ubatch and hidden states for verifying n_max + 1 tokens */
        g4_spec_session_opts(o->spec, &so);
        s->n_max = so.n_logits - 1;
    }
    g4_batch_opts bo = {0};
    bo.n_ubatch = o->n_ubatch; /* rows of one forward chunk over all slots */
    bo.n_out = n;              /* every slot may finish a prompt or decode in one chunk */
    if (s->n_max > 0) bo.n_out = n * (s->n_max + 1) < 65536 ? n * (s->n_max + 1) : 65536; /* the batch caps it at n_ubatch */
    if (g4_batch_create(&s->b, m, &bo, err, errlen) != G4_OK) { sched_free(s); return -1; }
    for (int i = 0; i < n; i++) {
        if (g4_session_create(&s->slots[i].s, m, &so, err, errlen) != G4_OK) { sched_free(s); return -1; }
        if (s->n_max > 0) {
            slot *sl = &s->slots[i];
            if (g4_spec_create(&sl->sp, sl->s, o->spec, err, errlen) != G4_OK) { sched_free(s); return -1; }
            sl->vt = malloc((size_t)(s->n_max + 1) * sizeof *sl->vt);
            sl->acc = malloc((size_t)(s->n_max + 1) * sizeof *sl->acc);
            sl->lrow = malloc((size_t)s->n_vocab * sizeof *sl->lrow);
            if (!sl->vt || !sl->acc || !sl->lrow) { snprintf(err, errlen, "out of memory"); sched_free(s); return -1; }
        }
        s->slots[i].owner = s;
        s->slots[i].toks = malloc((size_t)o->n_ctx * sizeof(int32_t));
        if (!s->slots[i].toks || ckpt_init(&s->slots[i].ck, o->ckpt_dir, i, o->n_ctx) < 0) {
            snprintf(err, errlen, "out of memory");
            sched_free(s);
            return -1;
        }
        g4_session_set_abort(s->slots[i].s, slot_abort, &s->slots[i]);
    }
    s->o.n_ctx = g4_session_n_ctx(s->slots[0].s);
    if (pthread_create(&s->th, NULL, loop, s) != 0) { snprintf(err, errlen, "cannot start the scheduler thread"); sched_free(s); return -1; }
    s->th_started = 1;
    *out = s;
    return 0;
}

void sched_drain(sched *s, double grace_s) {
    pthread_mutex_lock(&s->mu);
    s->draining = 1;
    s->deadline = sched_now() + grace_s;
    atomic_store(&s->cut_ns, (long long)(s->deadline * 1e9));
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void sched_free(sched *s) {
    if (!s) return;
    if (s->th_started) {
        atomic_store(&s->halt, 1);
        pthread_mutex_lock(&s->mu);
        s->stopping = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th, NULL);
    }
    if (s->slots)
        for (int i = 0; i < s->o.n_slots; i++) {
            g4_spec_free(s->slots[i].sp);
            free(s->slots[i].vt);
            free(s->slots[i].acc);
            free(s->slots[i].lrow);
            g4_session_free(s->slots[i].s);
            free(s->slots[i].toks);
            ckpt_free(&s->slots[i].ck);
        }
    g4_batch_free(s->b);
    free(s->slots);
    free(s->bs);
    free(s->bt);
    free(s->bn);
    free(s->bi);
    free(s->bf);
    free(s->bpast);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

int sched_submit(sched *s, job *j) {
    pthread_mutex_lock(&s->mu);
    if (s->draining || s->stopping) { pthread_mutex_unlock(&s->mu); return -2; }
    int idle = s->o.n_slots - s->st.busy;
    if (s->n_queued >= s->o.max_queue + (idle > 0 ? idle : 0)) { pthread_mutex_unlock(&s->mu); return -1; }
    atomic_fetch_add(&j->refs, 1);
    j->t_submit = sched_now();
    j->next = NULL;
    if (s->q_tail) s->q_tail->next = j; else s->q_head = j;
    s->q_tail = j;
    s->n_queued++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int32_t sched_n_ctx(const sched *s) { return s->o.n_ctx; }

void sched_get_stats(sched *s, sched_stats *st) {
    pthread_mutex_lock(&s->mu);
    *st = s->st;
    st->queued = s->n_queued;
    rates_get(&s->rt, sched_now(), s->t_begin, &st->recent);
    pthread_mutex_unlock(&s->mu);
}
