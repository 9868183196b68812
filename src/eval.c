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
    size_t done[G4_BATCH_MAX_SEQ];     /* tokens of s[i] in finished ubatches */
    int32_t past0[G4_BATCH_MAX_SEQ];   /* n_past of s[i] before the eval */
    int32_t hi[G4_BATCH_MAX_SEQ];      /* one past the last position of s[i] written */
    int32_t out_base[G4_BATCH_MAX_SEQ];/* outputs of the ubatch before s[i]'s columns */
    size_t a, k;                       /* ubatch: sequences [a, a + n_ub), k tokens each */
    size_t n_ub;
    int64_t n_outputs;
    size_t n_chunks;
    int all_out;                       /* every token of every session is an output */
    int decode_order;                  /* every token as its own one-token ubatch */
} sched;

static int all_out(const sched *c, size_t i) { return c->all_out || c->s[i]->logits_all; }

static int is_out(const sched *c, size_t i, size_t idx) {
    return all_out(c, i) || idx + 1 == c->n_tok[i];
}

/* Runs ubatch columns [c0, c1) as one chunk. */
static g4_status run_chunk(sched *c, int64_t c0, int64_t c1, char *err, size_t errlen) {
    g4_work *w = c->w;
    const size_t V = (size_t)w->m->cfg.n_vocab;
    const size_t i0 = c->a + (size_t)c0 / c->k, i1 = c->a + (size_t)(c1 - 1) / c->k;
    for (size_t i = i0; i <= i1; i++) {
        g4_session *s = c->s[i];
        if (s->abort_fn && s->abort_fn(s->abort_ud))
            return g4_errf(G4_ERR_ABORTED, err, errlen, "eval aborted by the callback of session %zu after %zu chunks",
                           i, c->n_chunks);
    }
    int32_t r = 0;
    for (int pass = 0; pass < 2; pass++) { /* non-output rows, then output rows */
        if (pass == 1) w->r0 = r;
        for (int64_t col = c0; col < c1; col++) {
            const size_t i = c->a + (size_t)col / c->k, j = (size_t)col % c->k, idx = c->done[i] + j;
            const int out = is_out(c, i, idx);
            if (out != pass) continue;
            g4_session *s = c->s[i];
            w->tok[r] = c->tok[i][idx];
            w->pos[r] = c->past0[i] + (int32_t)idx;
            w->sess[r] = s;
            w->col[r] = c->decode_order ? 0 : (int32_t)col;
            w->seq_n[r] = c->decode_order ? 1 : (int32_t)c->k;
            w->ocol[r] = !out || c->decode_order ? 0 : c->out_base[i] + (all_out(c, i) ? (int32_t)j : 0);
            w->odst[r] = out ? s->logits + (all_out(c, i) ? idx : 0) * V : NULL;
            if (w->pos[r] + 1 > c->hi[i]) c->hi[i] = w->pos[r] + 1;
            r++;
        }
    }
    w->T = r;
    w->batch_n = c->decode_order ? 1 : (int64_t)(c->k * c->n_ub);
    w->n_outputs = c->decode_order ? 1 : c->n_outputs;
    forward_chunk(w);
    c->n_chunks++;
    return G4_OK;
}

/* The ubatch at c->a .. : cut into chunks and run them. */
static g4_status run_ubatch(sched *c, char *err, size_t errlen) {
    g4_work *w = c->w;
    const int64_t N = (int64_t)(c->k * c->n_ub);
    int32_t nout = 0;
    for (size_t u = 0; u < c->n_ub; u++) {
        const size_t i = c->a + u;
        c->out_base[i] = nout;
        nout += all_out(c, i) ? (int32_t)c->k : (c->done[i] + c->k == c->n_tok[i]);
    }
    c->n_outputs = nout;
    for (int64_t c0 = 0; c0 < N;) {
        int64_t c1 = c0;
        int32_t rows = 0, outs = 0;
        while (c1 < N) {
            const size_t u = (size_t)c1 / c->k, i = c->a + u;
            const int64_t seq_first = (int64_t)(u * c->k);
            const int64_t in_chunk = c1 - (c0 > seq_first ? c0 : seq_first); /* s[i]'s tokens already in */
            const int out = is_out(c, i, c->done[i] + (size_t)c1 % c->k);
            if (rows + 1 > w->n_rows || in_chunk + 1 > c->s[i]->n_ubatch || (out && outs + 1 > w->n_out_rows)) break;
            rows++;
            outs += out;
            c1++;
        }
        G4_ASSERT(c1 > c0);
        g4_status st = run_chunk(c, c0, c1, err, errlen);
        if (st != G4_OK) return st;
        c0 = c1;
    }
    return G4_OK;
}

g4_status eval_sessions(g4_work *w, g4_session *const *s, const int32_t *const *tok,
                        const size_t *n_tok, size_t n, unsigned flags, char *err, size_t errlen) {
    G4_ASSERT(n >= 1 && n <= G4_BATCH_MAX_SEQ);
    sched c;
    c.w = w;
    c.s = s;
    c.tok = tok;
    c.n_tok = n_tok;
    c.n_chunks = 0;
    c.all_out = (flags & G4_EVAL_ALL_LOGITS) != 0;
    c.decode_order = (flags & G4_EVAL_DECODE_ORDER) != 0;
    for (size_t i = 0; i < n; i++) {
        c.done[i] = 0;
        c.past0[i] = s[i]->n_past;
        c.hi[i] = s[i]->n_past;
        s[i]->n_logits = 0;
    }
    g4_status st = G4_OK;
    for (;;) {
        size_t a = 0;
        while (a < n && c.done[a] == n_tok[a]) a++;
        if (a == n) break;
        size_t b = a + 1, k = n_tok[a] - c.done[a];
        while (b < n && c.done[b] < n_tok[b]) {
            if (n_tok[b] - c.done[b] < k) k = n_tok[b] - c.done[b];
            b++;
        }
        c.a = a;
        c.n_ub = b - a;
        c.k = k;
        st = run_ubatch(&c, err, errlen);
        if (st != G4_OK) break;
        for (size_t i = a; i < b; i++) c.done[i] += k;
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
