/* spec.c - g4_spec: speculative decoding for one session. Draft, verify in one batched pass,
 * accept a prefix, roll the session back past the first rejection.
 *
 * Owns: the loop of g4_spec_step, the session's token history (the n-gram drafters search
 * it), the hidden state the MTP drafter starts from, the counts of g4_spec_stats, option
 * defaults and checks.
 * Does not own: the drafters (ngram.c, mtp.c), the acceptance rule (sampler.c
 * sampler_verify), the forward pass.
 *
 * Exactness: the drafted tokens are evaluated with G4_EVAL_DECODE_ORDER, which gives every
 * token the float order of a one-token eval, so the logits of position i are the bits plain
 * decoding computes there. With greedy sampling the returned tokens are therefore exactly
 * plain decoding's, whatever the drafter proposes (tests/test_spec.c checks it for every
 * drafter, forced always right and always wrong too). Rejected tokens leave K/V entries past
 * the new n_past; g4_session_truncate forgets them (the sliding rings keep n_ubatch - 1
 * positions of slack, so going back at most n_max < n_ubatch positions always works).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "spec.h"

struct g4_spec {
    g4_session  *s;
    g4_spec_opts o;        /* defaults resolved */
    int32_t     *hist;     /* [n_ctx] the tokens in the session, in order */
    size_t       n_hist;
    int32_t     *batch;    /* [n_max + 1] last, then the draft */
    float       *h;        /* [n_embd] hidden state of the last evaluated token (draft-mtp) */
    int          have_h;
    mtp_state   *mtp;
    g4_spec_stats st;
    char         err[256];
};

static const struct { const char *name; int type; } TYPES[] = {
    { "none", G4_SPEC_NONE }, { "ngram-simple", G4_SPEC_NGRAM_SIMPLE }, { "draft-mtp", G4_SPEC_DRAFT_MTP },
    { "custom", G4_SPEC_CUSTOM },
};

int g4_spec_type_from_name(const char *name) {
    if (!name) return -1;
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (!strcmp(name, TYPES[i].name)) return TYPES[i].type;
    return -1;
}

const char *g4_spec_type_name(int type) {
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (TYPES[i].type == type) return TYPES[i].name;
    return "unknown";
}

/* ==== Options ==== */

enum { SPEC_MAX_DRAFT = 1024 };

static void resolve(const g4_spec_opts *in, g4_spec_opts *o) {
    *o = *in;
    if (!o->ngram_n) o->ngram_n = 12;
    if (!o->ngram_m) o->ngram_m = 48;
    if (!o->n_max) o->n_max = o->type == G4_SPEC_DRAFT_MTP ? 3 : o->type == G4_SPEC_NGRAM_SIMPLE ? o->ngram_m : 8;
}

static g4_status check_opts(const g4_spec_opts *o, char *err, size_t errlen) {
    if (o->type < G4_SPEC_NGRAM_SIMPLE || o->type > G4_SPEC_CUSTOM)
        return g4_errf(G4_ERR_ARG, err, errlen, "spec: type %d is not ngram-simple (1), draft-mtp (2) or custom (3)", o->type);
    if (o->n_max < 1 || o->n_max > SPEC_MAX_DRAFT)
        return g4_errf(G4_ERR_ARG, err, errlen, "spec: n_max %d is outside [1, %d]", (int)o->n_max, SPEC_MAX_DRAFT);
    if (o->n_min < 0 || o->n_min > o->n_max)
        return g4_errf(G4_ERR_ARG, err, errlen, "spec: n_min %d is outside [0, n_max %d]", (int)o->n_min, (int)o->n_max);
    if (!isfinite(o->p_min) || o->p_min < 0 || o->p_min > 1)
        return g4_errf(G4_ERR_ARG, err, errlen, "spec: p_min %g is outside [0, 1]", (double)o->p_min);
    if (o->ngram_n < 1 || o->ngram_n > SPEC_MAX_DRAFT || o->ngram_m < 1 || o->ngram_m > SPEC_MAX_DRAFT)
        return g4_errf(G4_ERR_ARG, err, errlen, "spec: ngram sizes n %d, m %d must be in [1, %d]", (int)o->ngram_n,
                       (int)o->ngram_m, SPEC_MAX_DRAFT);
    if (o->type == G4_SPEC_DRAFT_MTP && !o->assistant)
        return g4_errf(G4_ERR_ARG, err, errlen, "spec: draft-mtp needs an assistant model (g4_assistant_open, -md FILE)");
    if (o->type == G4_SPEC_CUSTOM && !o->draft_fn) return g4_errf(G4_ERR_ARG, err, errlen, "spec: custom drafter without draft_fn");
    return G4_OK;
}

void g4_spec_session_opts(const g4_spec_opts *in, g4_session_opts *so) {
    if (!in || !so) return;
    g4_spec_opts o;
    resolve(in, &o);
    if (o.n_max < 1 || o.n_max > SPEC_MAX_DRAFT) return; /* g4_spec_create reports it */
    const int32_t need = o.n_max + 1;
    if (so->n_logits < need) so->n_logits = need;
    if ((so->n_ubatch ? so->n_ubatch : 128) < need) so->n_ubatch = need;
    if (o.type == G4_SPEC_DRAFT_MTP) so->keep_hidden = 1;
}

/* ==== Create / free ==== */

void g4_spec_free(g4_spec *sp) {
    if (!sp) return;
    const g4_allocator al = sp->s->m->al;
    mtp_free(sp->mtp);
    g4_free(&al, sp->hist, (size_t)sp->s->n_ctx * sizeof *sp->hist);
    g4_free(&al, sp->batch, (size_t)(sp->o.n_max + 1) * sizeof *sp->batch);
    g4_free(&al, sp->h, (size_t)sp->s->m->cfg.n_embd * sizeof *sp->h);
    g4_free(&al, sp, sizeof *sp);
}

g4_status g4_spec_create(g4_spec **out, g4_session *s, const g4_spec_opts *in, char *err, size_t errlen) {
    if (err && errlen) err[0] = '\0';
    if (!out) return g4_errf(G4_ERR_ARG, err, errlen, "g4_spec_create: out is NULL");
    *out = NULL;
    if (!s || !in) return g4_errf(G4_ERR_ARG, err, errlen, "g4_spec_create: session or options NULL");
    g4_spec_opts o;
    resolve(in, &o);
    g4_status st = check_opts(&o, err, errlen);
    if (st != G4_OK) return st;
    const int32_t need = o.n_max + 1;
    if (s->n_logit_rows < need)
        return g4_errf(G4_ERR_ARG, err, errlen, "spec: the session keeps %d logits rows, verifying n_max %d drafts needs %d "
                       "(session option n_logits; g4_spec_session_opts)", (int)s->n_logit_rows, (int)o.n_max, (int)need);
    if (s->n_ubatch < need)
        return g4_errf(G4_ERR_ARG, err, errlen, "spec: the session's n_ubatch %d is below n_max + 1 = %d (one pass must hold "
                       "the draft, and rollback stays within the sliding rings)", (int)s->n_ubatch, (int)need);
    if (o.type == G4_SPEC_DRAFT_MTP) {
        if (o.assistant->target != s->m)
            return g4_errf(G4_ERR_ARG, err, errlen, "spec: the assistant was opened for another target model");
        if (!s->hidden)
            return g4_errf(G4_ERR_ARG, err, errlen, "spec: draft-mtp needs a session created with keep_hidden (g4_spec_session_opts)");
    }
    const g4_allocator *al = &s->m->al;
    g4_spec *sp = g4_calloc(al, 1, sizeof *sp);
    if (!sp) return g4_errf(G4_ERR_NOMEM, err, errlen, "spec: out of memory");
    sp->s = s;
    sp->o = o;
    sp->hist = g4_malloc(al, (size_t)s->n_ctx * sizeof *sp->hist);
    sp->batch = g4_malloc(al, (size_t)need * sizeof *sp->batch);
    sp->h = g4_malloc(al, (size_t)s->m->cfg.n_embd * sizeof *sp->h);
    if (!sp->hist || !sp->batch || !sp->h) {
        g4_spec_free(sp);
        return g4_errf(G4_ERR_NOMEM, err, errlen, "spec: out of memory");
    }
    if (o.type == G4_SPEC_DRAFT_MTP && (st = mtp_create(&sp->mtp, o.assistant, s, err, errlen)) != G4_OK) {
        g4_spec_free(sp);
        return st;
    }
    *out = sp;
    return G4_OK;
}

/* ==== History ==== */

/* the hidden state of the session's last logits row, if it kept one */
static void take_hidden(g4_spec *sp) {
    const g4_session *s = sp->s;
    const float *h = s->n_logits > 0 ? g4_session_hidden(s, (size_t)(s->n_logits - 1)) : NULL;
    sp->have_h = h != NULL;
    if (h) memcpy(sp->h, h, (size_t)s->m->cfg.n_embd * sizeof *sp->h);
}

g4_status g4_spec_begin(g4_spec *sp, const int32_t *tok, size_t n) {
    if (!sp) return G4_ERR_ARG;
    sp->err[0] = '\0';
    const g4_session *s = sp->s;
    if (n != (size_t)s->n_past)
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: %zu history tokens for a session holding %d positions", n,
                       (int)s->n_past);
    if (n && !tok) return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: history tokens NULL");
    for (size_t i = 0; i < n; i++)
        if (tok[i] < 0 || tok[i] >= s->m->cfg.n_vocab)
            return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: history token %d at index %zu is outside [0, %d)",
                           (int)tok[i], i, (int)s->m->cfg.n_vocab);
    if (n) memcpy(sp->hist, tok, n * sizeof *tok);
    sp->n_hist = n;
    take_hidden(sp);
    return G4_OK;
}

/* ==== The step ==== */

/* Up to max drafted tokens after last into sp->batch + 1; returns how many. */
static size_t draft(g4_spec *sp, int32_t last, size_t max) {
    int32_t *d = sp->batch + 1;
    const int32_t V = sp->s->m->cfg.n_vocab;
    size_t k = 0;
    switch (sp->o.type) {
    case G4_SPEC_NGRAM_SIMPLE:
        k = ngram_simple_draft(sp->hist, sp->n_hist, last, sp->o.ngram_n, sp->o.ngram_m, d, max);
        break;
    case G4_SPEC_DRAFT_MTP:
        /* the chain starts from the hidden state of the token before last (the target's row
         * that sampled last), at last's position; none without one */
        if (sp->have_h && sp->s->n_past >= 1) k = mtp_draft(sp->mtp, sp->h, last, sp->s->n_past, sp->o.p_min, d, max);
        break;
    default:
        k = sp->o.draft_fn(sp->o.draft_ud, sp->hist, sp->n_hist, last, d, max);
        if (k > max) k = max;
        for (size_t i = 0; i < k; i++) /* an id outside the vocabulary ends the draft */
            if (d[i] < 0 || d[i] >= V) { k = i; break; }
        break;
    }
    return k < (size_t)sp->o.n_min ? 0 : k;
}

/* The session has just evaluated last and d[0..k) with every token's logits: accept a prefix
 * of d, sample the token after it, roll the session back, extend the history. Cannot fail. */
static g4_status accept(g4_spec *sp, g4_sampler *smp, int32_t last, const int32_t *d, size_t k, int32_t *out, size_t *n_out) {
    g4_session *s = sp->s;
    const g4_model *m = s->m;
    const int32_t n_past = s->n_past - (int32_t)(k + 1);
    /* row i's logits sample the token after batch[i]: a draft stands while it is what the
     * sampler takes there; the first other token (or the one after the whole draft) ends */
    size_t n = 0, n_acc = 0;
    for (size_t i = 0; i <= k; i++) {
        const float *lg = g4_session_logits_ith(s, i);
        int acc = 0;
        const int32_t y = i < k ? sampler_verify(smp, lg, d[i], NULL, &acc) : g4_sampler_sample(smp, lg);
        g4_sampler_accept(smp, y);
        out[n++] = y;
        n_acc += (size_t)acc;
        if (!acc || g4_model_is_eog(m, y)) break;
    }
    /* out[0 .. n-1) were evaluated as drafts and stay; out[n-1] is the new last. The hidden
     * state of row n-1 (the row that sampled it) starts the next draft chain. */
    if (sp->mtp) {
        const float *h = g4_session_hidden(s, n - 1);
        G4_ASSERT(h);
        memcpy(sp->h, h, (size_t)m->cfg.n_embd * sizeof *sp->h);
        sp->have_h = 1;
    }
    const int32_t keep = n_past + (int32_t)n;
    const int32_t kept = g4_session_truncate(s, keep);
    G4_ASSERT(kept == keep); /* k < n_ubatch: the rings hold it */
    sp->hist[sp->n_hist++] = last;
    for (size_t i = 0; i + 1 < n; i++) sp->hist[sp->n_hist++] = out[i];
    sp->st.n_steps++;
    sp->st.n_drafts += k > 0;
    sp->st.n_drafted += k;
    sp->st.n_accepted += n_acc;
    sp->st.n_tokens += n;
    *n_out = n;
    return G4_OK;
}

g4_status g4_spec_step(g4_spec *sp, g4_sampler *smp, int32_t last, int32_t *out, size_t cap, size_t *n_out) {
    if (!sp) return G4_ERR_ARG;
    sp->err[0] = '\0';
    if (n_out) *n_out = 0;
    g4_session *s = sp->s;
    const g4_model *m = s->m;
    if (!smp || !out || !n_out || cap == 0)
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: step needs a sampler and an output buffer (cap >= 1)");
    if (last < 0 || last >= m->cfg.n_vocab)
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: token %d is outside [0, %d)", (int)last, (int)m->cfg.n_vocab);
    const int32_t n_past = s->n_past, room = s->n_ctx - n_past;
    if (sp->n_hist != (size_t)n_past)
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: the session holds %d positions but the history %zu "
                       "(call g4_spec_begin after changing the session)", (int)n_past, sp->n_hist);
    if (room < 1)
        return g4_errf(G4_ERR_CTX_FULL, sp->err, sizeof sp->err, "spec: context full: %d positions used, n_ctx %d", (int)n_past,
                       (int)s->n_ctx);

    /* draft, cut to the output buffer and the context */
    size_t kmax = (size_t)sp->o.n_max;
    if (kmax > cap - 1) kmax = cap - 1;
    if (kmax > (size_t)(room - 1)) kmax = (size_t)(room - 1);
    sp->batch[0] = last;
    const size_t k = kmax > 0 ? draft(sp, last, kmax) : 0;
    const int32_t *d = sp->batch + 1;

    /* verify: last and the draft in one pass, each in a one-token eval's float order (a
     * batch_only session fails here: it is verified by its caller, g4_spec_accept) */
    g4_status st = g4_session_eval_ex(s, sp->batch, k + 1, G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER);
    if (st != G4_OK) {
        snprintf(sp->err, sizeof sp->err, "spec: %s", g4_session_errmsg(s));
        return st;
    }
    return accept(sp, smp, last, d, k, out, n_out);
}

g4_status g4_spec_accept(g4_spec *sp, g4_sampler *smp, int32_t last, const int32_t *draft, size_t k, int32_t *out,
                         size_t cap, size_t *n_out) {
    if (!sp) return G4_ERR_ARG;
    sp->err[0] = '\0';
    if (n_out) *n_out = 0;
    const g4_session *s = sp->s;
    if (!smp || !out || !n_out || (k && !draft) || cap < k + 1)
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: accept needs a sampler, the draft and room for k + 1 tokens");
    if (k > (size_t)sp->o.n_max) /* the rollback must stay within the sliding rings */
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: a draft of %zu tokens is above n_max %d", k, (int)sp->o.n_max);
    if (!s->logits_rows || s->n_logits != (int32_t)(k + 1) || (size_t)s->n_past != sp->n_hist + k + 1)
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: accept expects the session's last eval to be last and the %zu "
                       "drafted tokens after the history, with every token's logits", k);
    if (sp->mtp && !s->hidden)
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: draft-mtp needs the hidden states of that eval");
    return accept(sp, smp, last, draft, k, out, n_out);
}

g4_status g4_spec_draft(g4_spec *sp, int32_t last, int32_t *out, size_t max, size_t *n_out) {
    if (!sp) return G4_ERR_ARG;
    sp->err[0] = '\0';
    if (n_out) *n_out = 0;
    const g4_session *s = sp->s;
    if (!out || !n_out) return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: draft needs an output buffer");
    if (last < 0 || last >= s->m->cfg.n_vocab)
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: token %d is outside [0, %d)", (int)last, (int)s->m->cfg.n_vocab);
    if (sp->n_hist != (size_t)s->n_past)
        return g4_errf(G4_ERR_ARG, sp->err, sizeof sp->err, "spec: the session holds %d positions but the history %zu "
                       "(call g4_spec_begin after changing the session)", (int)s->n_past, sp->n_hist);
    if (max > (size_t)sp->o.n_max) max = (size_t)sp->o.n_max;
    const size_t k = max ? draft(sp, last, max) : 0;
    memcpy(out, sp->batch + 1, k * sizeof *out);
    *n_out = k;
    return G4_OK;
}

void g4_spec_get_stats(const g4_spec *sp, g4_spec_stats *st) {
    if (!st) return;
    if (!sp) memset(st, 0, sizeof *st);
    else *st = sp->st;
}

const char *g4_spec_errmsg(const g4_spec *sp) { return sp ? sp->err : "spec is NULL"; }
