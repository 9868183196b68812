/* eval.c - the schedule of an eval over one or several sessions, and rollback.
 *
 * Owns: how the tokens of an eval become forward chunks. Two levels:
 *  1. llama.cpp's ubatches, for the float order. An eval of sessions s[0..n) is what
 *     llama.cpp does with one llama_batch holding sequences 0..n-1 (sequence i = s[i]'s
 *     tokens, in order, batch order sequence by sequence) and a non-unified KV cache (one
 *     stream per sequence, llama.cpp's default): llama_batch_allocr::split_equal(n_ubatch,
 *     sequential = true) with n_ubatch at least the batch's tokens. Each ubatch takes the
 *     first run of consecutive sequences that still have tokens and the same number k of
 *     tokens from each, k = the fewest any of them has left; its columns are sequence a's k
 *     tokens, then a+1's, and so on. A token is an output when its session wants its logits
 *     (its last token of the eval, or every token with logits_all). One session alone is one
 *     ubatch of all its tokens.
 *  2. chunks, for memory: a ubatch's columns in order, cut so that a chunk holds at most
 *     w->n_rows rows, w->n_out_rows outputs and n_ubatch tokens of any one session (its
 *     sliding rings hold n_swa + n_ubatch - 1 cells); within a chunk the output rows go last
 *     (forward.c runs the KV-shared layers on them only). Every row keeps its ubatch column,
 *     so the chunking never changes a result.
 *  Decode-order sessions (G4_EVAL_DECODE_ORDER, per session) are not part of that
 *  llama_batch: each of their tokens is a one-token ubatch of its own (col -1, seq_n 1), so
 *  their rows fill whatever room the ubatches' chunks leave and then chunks of their own,
 *  with the bits of the session's own g4_session_eval_ex.
 * Rollback: the sliding rings are overwritten as positions advance; a session can go back to
 * n_keep only while its rings still hold the window that position needs (swa_hi tracks the
 * highest position written since the last reset).
 * Does not own: validation (session.c, batch.c), the arithmetic (forward.c).
 * No allocation: the schedule's state is on the stack, the rows in the work.
 */
#include "forward.h"

#include <string.h>

int32_t session_rollback(g4_session *s, int32_t n_keep) {
    if (n_keep < 0) n_keep = 0;
    if (n_keep < s->n_past) s->n_past = n_keep;
    if (s->swa_cells > 0 && s->n_past > 0) {
        /* continuing at n_past attends to positions [n_past - n_swa + 1, n_past) on the
         * sliding layers; the rings hold [swa_hi - cells, swa_hi) at best */
        const int64_t need_lo = (int64_t)s->n_past - s->m->cfg.n_swa + 1;
        if ((need_lo > 0 ? need_lo : 0) < session_ring_lo(s)) s->n_past = 0;
    }
    s->n_logits = 0;
    if (s->n_past == 0) s->swa_hi = s->swa_lo = 0;
    return s->n_past;
}

int64_t session_ring_lo(const g4_session *s) {
    const int64_t a = (int64_t)s->swa_hi - s->swa_cells;
    return a > s->swa_lo ? a : s->swa_lo;
}

typedef struct sched {
    g4_work *w;
    g4_session *const *s;
    const int32_t *const *tok;
    const size_t *n_tok;
    const unsigned *fl;                /* [n] G4_EVAL_* per session, NULL = 0 */
    size_t done[G4_BATCH_MAX_SEQ];     /* tokens of s[i] in finished chunks */
    int32_t past0[G4_BATCH_MAX_SEQ];   /* n_past of s[i] before the eval */
    int32_t hi[G4_BATCH_MAX_SEQ];      /* one past the last position of s[i] written */
    int32_t out_base[G4_BATCH_MAX_SEQ];/* outputs of the ubatch before s[i]'s columns */
    uint16_t nd[G4_BATCH_MAX_SEQ];     /* the llama_batch: sessions in batch order */
    uint16_t dq[G4_BATCH_MAX_SEQ];     /* decode-order sessions, in order */
    size_t n_nd, n_dq;
    size_t a, k;                       /* ubatch: sequences nd[a .. a + n_ub), k tokens each */
    size_t n_ub;
    int64_t n_outputs;
    size_t n_chunks;
    size_t dqi;                        /* decode-order rows not yet run: from session dq[dqi] */
} sched;

static int all_out(const sched *c, size_t i) { return (c->fl && (c->fl[i] & G4_EVAL_ALL_LOGITS)) || c->s[i]->logits_all; }

static int is_out(const sched *c, size_t i, size_t idx) {
    return all_out(c, i) || idx + 1 == c->n_tok[i];
}

/* A decode-order row: its own one-token op (col -1: kern_pick sees a lone column),
 * attention in a one-token ubatch's order. */
static void put_row(sched *c, int32_t r, size_t i, size_t idx, int out, int32_t col, int32_t seq_n, int32_t ocol) {
    g4_work *w = c->w;
    g4_session *s = c->s[i];
    const size_t V = (size_t)w->m->cfg.n_vocab;
    w->tok[r] = c->tok[i][idx];
    w->pos[r] = c->past0[i] + (int32_t)idx;
    w->sess[r] = s;
    w->col[r] = col;
    w->seq_n[r] = seq_n;
    w->ocol[r] = out ? ocol : 0;
    w->odst[r] = out ? s->logits + (all_out(c, i) ? idx : 0) * V : NULL;
    w->hdst[r] = out && s->hidden ? s->hidden + (all_out(c, i) ? idx : 0) * (size_t)w->m->cfg.n_embd : NULL;
    if (w->pos[r] + 1 > c->hi[i]) c->hi[i] = w->pos[r] + 1;
}

static int poll_abort(const sched *c, size_t i, char *err, size_t errlen, g4_status *st) {
    g4_session *s = c->s[i];
    if (s->abort_fn && s->abort_fn(s->abort_ud)) {
        *st = g4_errf(G4_ERR_ABORTED, err, errlen, "eval aborted by the callback of session %zu after %zu chunks", i, c->n_chunks);
        return 1;
    }
    return 0;
}

/* How many decode-order rows (from dq[dqi], done[] tokens in) fit next to rows / outs
 * already in the chunk; at most n_ubatch tokens of one session per chunk. */
static size_t decode_fill(const sched *c, int32_t rows, int32_t outs) {
    const g4_work *w = c->w;
    size_t q = 0;
    for (size_t d = c->dqi; d < c->n_dq; d++) {
        const size_t i = c->dq[d];
        size_t j = c->done[i], in_chunk = 0;
        for (; j < c->n_tok[i]; j++, in_chunk++) {
            const int out = is_out(c, i, j);
            if (rows + 1 > w->n_rows || (out && outs + 1 > w->n_out_rows) || (int64_t)in_chunk + 1 > c->s[i]->n_ubatch) return q;
            rows++;
            outs += out;
            q++;
        }
    }
    return q;
}

/* Runs ubatch columns [c0, c1) (none when c0 == c1) and the next q decode-order rows as one
 * chunk. */
static g4_status run_chunk(sched *c, int64_t c0, int64_t c1, size_t q, char *err, size_t errlen) {
    g4_work *w = c->w;
    g4_status st = G4_OK;
    if (c1 > c0) {
        const size_t u0 = (size_t)c0 / c->k, u1 = (size_t)(c1 - 1) / c->k;
        for (size_t u = u0; u <= u1; u++)
            if (poll_abort(c, c->nd[c->a + u], err, errlen, &st)) return st;
    }
    {
        size_t d = c->dqi, j = d < c->n_dq ? c->done[c->dq[d]] : 0;
        for (size_t t = 0; t < q; t++) { /* each session once */
            while (j == c->n_tok[c->dq[d]]) d++, j = c->done[c->dq[d]];
            if (j == c->done[c->dq[d]] && poll_abort(c, c->dq[d], err, errlen, &st)) return st;
            j++;
        }
    }
    int32_t r = 0;
    size_t qd = c->dqi, qj = 0;
    for (int pass = 0; pass < 2; pass++) { /* non-output rows, then output rows */
        if (pass == 1) w->r0 = r;
        for (int64_t col = c0; col < c1; col++) {
            const size_t u = (size_t)col / c->k, i = c->nd[c->a + u], j = (size_t)col % c->k, idx = c->done[i] + j;
            const int out = is_out(c, i, idx);
            if (out != pass) continue;
            put_row(c, r++, i, idx, out, (int32_t)col, (int32_t)c->k, c->out_base[i] + (all_out(c, i) ? (int32_t)j : 0));
        }
        size_t d = c->dqi, idx = d < c->n_dq ? c->done[c->dq[d]] : 0;
        for (size_t t = 0; t < q; t++) {
            while (idx == c->n_tok[c->dq[d]]) d++, idx = c->done[c->dq[d]];
            const size_t i = c->dq[d];
            const int out = is_out(c, i, idx);
            if (out == pass) put_row(c, r++, i, idx, out, -1, 1, -1);
            idx++;
            qd = d, qj = idx;
        }
    }
    /* the decode-order rows taken: advance their sessions */
    for (size_t t = 0, d = c->dqi; t < q;) {
        const size_t i = c->dq[d], take = (d == qd ? qj : c->n_tok[i]) - c->done[i];
        c->done[i] += take;
        t += take;
        if (c->done[i] == c->n_tok[i]) d++;
    }
    while (c->dqi < c->n_dq && c->done[c->dq[c->dqi]] == c->n_tok[c->dq[c->dqi]]) c->dqi++;
    w->T = r;
    w->batch_n = c1 > c0 ? (int64_t)(c->k * c->n_ub) : 1;
    w->n_outputs = c1 > c0 ? c->n_outputs : 1;
    forward_chunk(w);
    c->n_chunks++;
    return G4_OK;
}

/* The ubatch at nd[c->a ..]: cut into chunks and run them, decode-order rows filling what
 * room the chunks leave. */
static g4_status run_ubatch(sched *c, char *err, size_t errlen) {
    g4_work *w = c->w;
    const int64_t N = (int64_t)(c->k * c->n_ub);
    int32_t nout = 0;
    for (size_t u = 0; u < c->n_ub; u++) {
        const size_t i = c->nd[c->a + u];
        c->out_base[i] = nout;
        nout += all_out(c, i) ? (int32_t)c->k : (c->done[i] + c->k == c->n_tok[i]);
    }
    c->n_outputs = nout;
    for (int64_t c0 = 0; c0 < N;) {
        int64_t c1 = c0;
        int32_t rows = 0, outs = 0;
        while (c1 < N) {
            const size_t u = (size_t)c1 / c->k, i = c->nd[c->a + u];
            const int64_t seq_first = (int64_t)(u * c->k);
            const int64_t in_chunk = c1 - (c0 > seq_first ? c0 : seq_first); /* s[i]'s tokens already in */
            const int out = is_out(c, i, c->done[i] + (size_t)c1 % c->k);
            if (rows + 1 > w->n_rows || in_chunk + 1 > c->s[i]->n_ubatch || (out && outs + 1 > w->n_out_rows)) break;
            rows++;
            outs += out;
            c1++;
        }
        G4_ASSERT(c1 > c0);
        g4_status st = run_chunk(c, c0, c1, decode_fill(c, rows, outs), err, errlen);
        if (st != G4_OK) return st;
        c0 = c1;
    }
    return G4_OK;
}

g4_status eval_sessions(g4_work *w, g4_session *const *s, const int32_t *const *tok,
                        const size_t *n_tok, size_t n, const unsigned *flags, char *err, size_t errlen) {
    G4_ASSERT(n >= 1 && n <= G4_BATCH_MAX_SEQ);
    sched c;
    c.w = w;
    c.s = s;
    c.tok = tok;
    c.n_tok = n_tok;
    c.fl = flags;
    c.n_chunks = 0;
    c.n_nd = c.n_dq = c.dqi = 0;
    for (size_t i = 0; i < n; i++) {
        c.done[i] = 0;
        c.past0[i] = s[i]->n_past;
        c.hi[i] = s[i]->n_past;
        s[i]->n_logits = 0;
        if (flags && (flags[i] & G4_EVAL_DECODE_ORDER)) c.dq[c.n_dq++] = (uint16_t)i;
        else c.nd[c.n_nd++] = (uint16_t)i;
    }
    g4_status st = G4_OK;
    /* llama.cpp's ubatches of the sessions in batch order (decode-order rows ride along) */
    for (;;) {
        size_t a = 0;
        while (a < c.n_nd && c.done[c.nd[a]] == n_tok[c.nd[a]]) a++;
        if (a == c.n_nd) break;
        size_t b = a + 1, k = n_tok[c.nd[a]] - c.done[c.nd[a]];
        while (b < c.n_nd && c.done[c.nd[b]] < n_tok[c.nd[b]]) {
            if (n_tok[c.nd[b]] - c.done[c.nd[b]] < k) k = n_tok[c.nd[b]] - c.done[c.nd[b]];
            b++;
        }
        c.a = a;
        c.n_ub = b - a;
        c.k = k;
        st = run_ubatch(&c, err, errlen);
        if (st != G4_OK) break;
        for (size_t u = a; u < b; u++) c.done[c.nd[u]] += k;
    }
    /* decode-order rows left over: chunks of their own */
    while (st == G4_OK && c.dqi < c.n_dq) {
        c.k = 1;
        c.n_ub = 0;
        st = run_chunk(&c, 0, 0, decode_fill(&c, 0, 0), err, errlen);
    }
    for (size_t i = 0; i < n; i++) {
        g4_session *si = s[i];
        if (c.hi[i] > si->swa_hi) si->swa_hi = c.hi[i];
        if (st == G4_OK) {
            si->n_past = c.past0[i] + (int32_t)n_tok[i];
            si->logits_rows = all_out(&c, i);
            si->n_logits = si->logits_rows ? (int32_t)n_tok[i] : 1;
        } else {
            session_rollback(si, c.past0[i]); /* n_past is still past0: kept, or 0 if a ring lost it */
        }
    }
    return st;
}
