/* test_batch.c - g4_batch_eval, g4_session_truncate, abort and saved state, against
 * themselves (no node needed; llama.cpp's multi-sequence decoding is tests/sh/oracle_batch.sh):
 *   - a schedule of four sessions (prompts of 40, 3, 17 and 1 tokens, decoding together at
 *     different depths, one pausing and coming back, uneven chunks) batched vs each session
 *     evaluated alone with the same tokens: bit for bit on a table whose float order does not
 *     depend on the batch (scalar), within the float-order bounds otherwise; dense models and
 *     mixture-of-experts ones (every session's rows routed and grouped by expert together);
 *   - the batch's chunking (rows, logits rows, each session's n_ubatch) and threads never
 *     change a bit; a batch of one equals g4_session_eval bit for bit;
 *   - errors leave every session unchanged (bad token, duplicate, foreign session, full
 *     context, NULLs) and name the session;
 *   - truncate and continue equals a fresh evaluation of the same tokens; a deep cut behind a
 *     sliding ring returns 0;
 *   - abort between chunks: nothing appended, the same results after a retry;
 *   - per-session flags (g4_batch_eval_ex): decode-order sessions verifying drafts next to
 *     sessions reading prompts give each one's own bits;
 *   - save / load round trips; hostile state files leave the session as it was.
 */
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "forward.h"
#include "kern/kern.h"
#include "t.h"
#include "t_model.h"

#define NS 4
#define N_STEPS 17
#define MAX_T 40

/* tokens per session per step: prompts, decoding together, session 3 pausing, uneven chunks */
static const int STEP_N[N_STEPS][NS] = {
    { 40, 3, 17, 1 },
    { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 },
    { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 },
    { 1, 1, 1, 0 }, { 1, 1, 1, 0 }, { 1, 1, 1, 0 }, { 1, 1, 1, 0 },
    { 2, 1, 3, 0 },
    { 1, 1, 1, 1 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1 },
};

static int32_t pool_tok(int step, int sess, int k) { return (int32_t)(2 + (step * 131 + sess * 37 + k * 11) % 380); }

typedef struct run_cfg {
    int ub, n_out, sess_ub, cache, threads_model; /* threads_model: index into the models */
    uint64_t *counts; /* MoE, non-NULL: [NS][n_layer][n_expert] expert counts at the end */
} run_cfg;

/* One run of the schedule. batched: one g4_batch_eval per step; else each session alone.
 * tok_in: NULL = greedy (recorded into tok_out), else the tokens to feed (teacher forcing).
 * out: [N_STEPS][NS][V] logits after each step (untouched where a session sat out). */
static int run_sched(g4_model *m, const run_cfg *c, int batched, int n_sess, const int32_t (*tok_in)[NS][MAX_T],
                     int32_t (*tok_out)[NS][MAX_T], float *out) {
    const int32_t V = g4_model_n_vocab(m);
    g4_session *s[NS] = {0};
    g4_batch *b = NULL;
    char err[256];
    int ok = 1;
    for (int i = 0; i < n_sess; i++) ok &= (s[i] = t_sess(m, 256, c->sess_ub, c->cache, 0)) != NULL;
    g4_batch_opts bo = { .n_ubatch = c->ub, .n_out = c->n_out };
    if (ok && batched && g4_batch_create(&b, m, &bo, err, sizeof err) != G4_OK) { fprintf(stderr, "    batch: %s\n", err); ok = 0; }
    int32_t last[NS] = {0};
    for (int st = 0; ok && st < N_STEPS; st++) {
        g4_session *bs[NS];
        const int32_t *bt[NS];
        size_t bn[NS];
        int idx[NS], n = 0;
        for (int i = 0; i < n_sess; i++) {
            const int k = STEP_N[st][i];
            if (!k) continue;
            int32_t *t = tok_out[st][i];
            for (int j = 0; j < k; j++)
                t[j] = tok_in ? tok_in[st][i][j] : (st == 0 ? (j == 0 ? 2 : pool_tok(0, i, j)) : k == 1 ? last[i] : pool_tok(st, i, j));
            bs[n] = s[i];
            bt[n] = t;
            bn[n] = (size_t)k;
            idx[n++] = i;
        }
        if (batched) {
            if (g4_batch_eval(b, bs, bt, bn, (size_t)n) != G4_OK) { fprintf(stderr, "    step %d: %s\n", st, g4_batch_errmsg(b)); ok = 0; }
        } else {
            for (int k = 0; ok && k < n; k++)
                if (g4_session_eval(bs[k], bt[k], bn[k]) != G4_OK) { fprintf(stderr, "    step %d: %s\n", st, g4_session_errmsg(bs[k])); ok = 0; }
        }
        for (int k = 0; ok && k < n; k++) {
            const float *l = g4_session_logits(bs[k]);
            memcpy(out + ((size_t)st * NS + (size_t)idx[k]) * (size_t)V, l, (size_t)V * sizeof(float));
            last[idx[k]] = t_argmax(l, V);
        }
    }
    const int32_t L = g4_model_n_layer(m), Ne = g4_model_n_expert(m);
    for (int i = 0; ok && c->counts && i < n_sess; i++)
        for (int32_t il = 0; il < L; il++) {
            uint64_t *dst = c->counts + ((size_t)i * (size_t)L + (size_t)il) * (size_t)Ne;
            if (g4_session_expert_counts(s[i], il, dst, (size_t)Ne) != G4_OK) memset(dst, 0, (size_t)Ne * sizeof *dst);
        }
    g4_batch_free(b);
    for (int i = 0; i < n_sess; i++) g4_session_free(s[i]);
    return ok;
}

/* whether the table's pick gives a weight of this type and shape one kernel whatever the op's
 * column count and the token's column (and no separate multi-column order) */
static int one_kernel(const g4_kern *k, uint32_t type, int64_t n_in, int64_t n_out, unsigned flags) {
    if (k->matmul_grp[type]) return 0;
    const g4_matmul_fn f1 = kern_pick(k, type, 1, 0, n_in, n_out, flags);
    for (int64_t N = 2; N <= 17; N++)
        for (int64_t col = 0; col < N; col++)
            if (kern_pick(k, type, N, col, n_in, n_out, flags) != f1) return 0;
    return 1;
}

static int one_kernel_w(const g4_kern *k, const g4_tensor *w) { return one_kernel(k, w->type, w->ne[0], w->ne[1], 0); }

/* every weight the forward pass multiplies (and the KV cache: KQ over 256-row blocks of
 * head-dim columns, KQV over hd rows) has one float order */
static int order_free(const g4_model *m, int cache) {
    const g4_kern *k = m->kern;
    const uint32_t kv = cache == G4_CACHE_F16 ? G4_TYPE_F16 : G4_TYPE_F32;
    const int64_t hds[2] = { m->cfg.head_dim_full, m->cfg.head_dim_swa };
    for (int i = 0; i < 2; i++)
        if (!one_kernel(k, kv, hds[i], 256, KERN_PLAIN) || !one_kernel(k, kv, 256, hds[i], KERN_PLAIN)) return 0;
    if (m->per_layer_model_proj && !one_kernel_w(k, m->per_layer_model_proj)) return 0;
    if (!one_kernel_w(k, m->output ? m->output : m->token_embd)) return 0;
    for (int i = 0; i < m->cfg.n_layer; i++) {
        const g4_layer *l = &m->layers[i];
        const g4_tensor *ws[] = { l->attn_q, l->attn_k, l->attn_v, l->attn_output, l->ffn_gate, l->ffn_up, l->ffn_down,
                                  l->inp_gate, l->proj, l->ffn_gate_inp };
        for (size_t j = 0; j < sizeof ws / sizeof ws[0]; j++)
            if (ws[j] && !one_kernel_w(k, ws[j])) return 0;
        /* experts take their type's one-column order, except IQ4_XS's panel gemm (moe.c) */
        const g4_tensor *ex[] = { l->ffn_gate_up_exps, l->ffn_gate_exps, l->ffn_up_exps, l->ffn_down_exps };
        for (size_t j = 0; j < sizeof ex / sizeof ex[0]; j++)
            if (ex[j] && ex[j]->type == G4_TYPE_IQ4_XS && k->matmul_grp[G4_TYPE_IQ4_XS]) return 0;
    }
    return 1;
}

static void check_batch_model(const char *name, const g4_testgen_opts *o, const char *kernels, int cache) {
    t_model t1, t2;
    if (!t_model_open(&t1, o, 1, kernels)) { T_CHECKF(0, "%s: open", name); return; }
    if (!t_model_open_buf(&t2, t1.buf, t1.len, 0, 2, kernels)) { T_CHECKF(0, "%s: open 2 threads", name); t_model_close(&t1); return; }
    const int32_t V = g4_model_n_vocab(t1.m);
    const size_t per = (size_t)N_STEPS * NS * (size_t)V;
    float *ref = calloc(per * 2, sizeof(float)), *got = ref + per;
    static int32_t tok[N_STEPS][NS][MAX_T], tok2[N_STEPS][NS][MAX_T];
    const char *kn = g4_model_kernels(t1.m);
    /* MoE: every session's expert counts, batched then alone */
    const size_t n_cnt = (size_t)NS * (size_t)g4_model_n_layer(t1.m) * (size_t)g4_model_n_expert(t1.m);
    uint64_t *cnt = n_cnt ? calloc(2 * n_cnt, sizeof *cnt) : NULL;
    const run_cfg base = { 128, 16, 64, cache, 0, cnt };
    int ok = run_sched(t1.m, &base, 1, NS, NULL, tok, ref);
    T_CHECKF(ok, "%s [%s]: batched run", name, kn);
    if (!ok) goto out;

    /* chunking and threads: identical bits */
    const run_cfg vars[] = { { 3, 1, 2, cache, 0, NULL }, { 5, 2, 64, cache, 0, NULL }, { 128, 16, 7, cache, 1, NULL } };
    for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
        memset(got, 0, per * sizeof(float));
        ok = run_sched(vars[v].threads_model ? t2.m : t1.m, &vars[v], 1, NS, (const int32_t(*)[NS][MAX_T])tok, tok2, got);
        T_CHECKF(ok && !memcmp(ref, got, per * sizeof(float)), "%s [%s]: batch ub %d out %d session ub %d threads %d changes bits",
                 name, kn, vars[v].ub, vars[v].n_out, vars[v].sess_ub, vars[v].threads_model + 1);
    }

    /* each session alone with the same tokens */
    memset(got, 0, per * sizeof(float));
    const run_cfg solo = { 128, 16, 64, cache, 0, cnt ? cnt + n_cnt : NULL };
    ok = run_sched(t1.m, &solo, 0, NS, (const int32_t(*)[NS][MAX_T])tok, tok2, got);
    T_CHECKF(ok, "%s [%s]: solo run", name, kn);
    if (ok && cnt) {
        /* the same rows computed per session, so the same routings where the bits agree, and
         * the same number of them in every layer otherwise (n_expert_used per computed row) */
        const int32_t L = g4_model_n_layer(t1.m), Ne = g4_model_n_expert(t1.m);
        int same = 1, sums = 1;
        uint64_t total = 0;
        for (size_t r = 0; r < (size_t)NS * (size_t)L; r++) {
            uint64_t sa = 0, sb = 0;
            for (int32_t e = 0; e < Ne; e++) {
                sa += cnt[r * (size_t)Ne + (size_t)e];
                sb += cnt[n_cnt + r * (size_t)Ne + (size_t)e];
            }
            sums &= sa == sb;
            total += sa;
        }
        same = !memcmp(cnt, cnt + n_cnt, n_cnt * sizeof *cnt);
        T_CHECKF(total > 0 && sums, "%s [%s]: expert counts: %llu routings batched, per layer and session as alone: %d", name,
                 kn, (unsigned long long)total, sums);
        if (order_free(t1.m, cache)) T_CHECKF(same, "%s [%s]: expert counts batched vs alone differ", name, kn);
    }
    if (ok) {
        const int exact = order_free(t1.m, cache);
        const int quantized = o->wtype && o->wtype != G4_TYPE_F32 && o->wtype != G4_TYPE_F16;
        /* float-order bounds as test_forward's; an F16 cache rounds q and p to F16, which
         * turns order noise into rounding flips (test_forward: f16 vs f32 cache 1e-4) */
        const double tol = exact ? 0.0 : (quantized || o->q4_k_m) ? 1e-2 : cache == G4_CACHE_F16 ? 1e-4 : 1e-5;
        double worst = 0;
        for (int st = 0; st < N_STEPS; st++)
            for (int i = 0; i < NS; i++) {
                if (!STEP_N[st][i]) continue;
                const float *a = ref + ((size_t)st * NS + (size_t)i) * (size_t)V, *b = got + ((size_t)st * NS + (size_t)i) * (size_t)V;
                const double e = exact ? (memcmp(a, b, (size_t)V * sizeof(float)) ? 1.0 : 0.0) : t_nmse(a, b, (size_t)V);
                if (e > worst) worst = e;
            }
        T_CHECKF(worst <= tol, "%s [%s]: batched vs alone: worst %s %.3g > %.3g", name, kn, exact ? "bits differ" : "NMSE", worst, tol);
    }

    /* a batch of one is g4_session_eval */
    {
        float *a = calloc(per * 2, sizeof(float)), *b = a + per;
        static int32_t t1tok[N_STEPS][NS][MAX_T];
        ok = a && run_sched(t1.m, &base, 1, 1, NULL, t1tok, a) &&
             run_sched(t1.m, &base, 0, 1, (const int32_t(*)[NS][MAX_T])t1tok, tok2, b);
        T_CHECKF(ok && !memcmp(a, b, per * sizeof(float)), "%s [%s]: batch of one vs g4_session_eval", name, kn);
        free(a);
    }
out:
    free(cnt);
    free(ref);
    t_model_close(&t2);
    t_model_close(&t1);
}

/* ==== errors ==== */

static void check_batch_errors(void) {
    t_model t, u;
    g4_testgen_opts o = {0};
    if (!t_model_open(&t, &o, 1, NULL)) { T_CHECK(0); return; }
    if (!t_model_open_buf(&u, t.buf, t.len, 0, 1, NULL)) { T_CHECK(0); t_model_close(&t); return; }
    const int32_t V = g4_model_n_vocab(t.m);
    char err[256];
    g4_batch *b = NULL;
    g4_batch_opts bo = { .n_ubatch = -1 };
    T_CHECK(g4_batch_create(&b, t.m, &bo, err, sizeof err) == G4_ERR_ARG && b == NULL && strstr(err, "n_ubatch"));
    T_CHECK(g4_batch_create(&b, NULL, NULL, err, sizeof err) == G4_ERR_ARG && b == NULL);
    T_CHECK(g4_batch_create(NULL, t.m, NULL, err, sizeof err) == G4_ERR_ARG);
    T_CHECK(g4_batch_create(&b, t.m, NULL, err, sizeof err) == G4_OK && b);
    T_CHECK(g4_batch_memory(b) > 0);
    g4_session *s[3], *x = t_sess(u.m, 64, 16, G4_CACHE_F32, 0);
    for (int i = 0; i < 3; i++) s[i] = t_sess(t.m, 16, 8, G4_CACHE_F32, 0);
    int32_t p[16] = { 2, 17, 33, 45, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110 };
    const int32_t *tk[3] = { p, p + 3, p + 5 };
    size_t n[3] = { 3, 2, 4 };
    float *snap = malloc((size_t)V * 3 * sizeof(float));
    T_CHECK(g4_batch_eval(b, s, tk, n, 3) == G4_OK && b && g4_batch_errmsg(b)[0] == '\0');
    for (int i = 0; i < 3; i++) memcpy(snap + (size_t)i * (size_t)V, g4_session_logits(s[i]), (size_t)V * sizeof(float));
    int32_t bad[2] = { 5, V };
    const int32_t *tb[3] = { p, p, bad };
    size_t nb[3] = { 1, 1, 2 };
    T_CHECK(g4_batch_eval(b, s, tb, nb, 3) == G4_ERR_ARG && strstr(g4_batch_errmsg(b), "session 2"));
    g4_session *dup[3] = { s[0], s[1], s[0] };
    T_CHECK(g4_batch_eval(b, dup, tk, n, 3) == G4_ERR_ARG && strstr(g4_batch_errmsg(b), "session 2 is also session 0"));
    g4_session *foreign[2] = { s[0], x };
    T_CHECK(g4_batch_eval(b, foreign, tk, n, 2) == G4_ERR_ARG && strstr(g4_batch_errmsg(b), "another model"));
    size_t big[3] = { 1, 12, 1 }; /* session 1 has 16 - 2 = 14 left: 12 fit, 15 do not */
    const int32_t *tbig[3] = { p, p, p };
    big[1] = 15;
    T_CHECK(g4_batch_eval(b, s, tbig, big, 3) == G4_ERR_CTX_FULL && strstr(g4_batch_errmsg(b), "session 1"));
    size_t zero[3] = { 1, 0, 1 };
    T_CHECK(g4_batch_eval(b, s, tk, zero, 3) == G4_ERR_ARG && strstr(g4_batch_errmsg(b), "session 1"));
    g4_session *withnull[2] = { s[0], NULL };
    T_CHECK(g4_batch_eval(b, withnull, tk, n, 2) == G4_ERR_ARG);
    T_CHECK(g4_batch_eval(b, NULL, tk, n, 2) == G4_ERR_ARG);
    T_CHECK(g4_batch_eval(b, s, tk, n, 0) == G4_ERR_ARG);
    T_CHECK(g4_batch_eval(b, s, tk, n, (size_t)G4_BATCH_MAX_SEQ + 1) == G4_ERR_ARG);
    T_CHECK(g4_batch_eval(NULL, s, tk, n, 3) == G4_ERR_ARG);
    /* nothing changed */
    T_CHECK(g4_session_n_past(s[0]) == 3 && g4_session_n_past(s[1]) == 2 && g4_session_n_past(s[2]) == 4);
    for (int i = 0; i < 3; i++)
        T_CHECK(!memcmp(snap + (size_t)i * (size_t)V, g4_session_logits(s[i]), (size_t)V * sizeof(float)));
    /* batch_only: no scratch of its own, same results through the batch */
    {
        g4_session_opts so = { .n_ctx = 16, .n_ubatch = 8, .cache_type = G4_CACHE_F32, .batch_only = 1 };
        g4_session *lean = NULL, *fat = t_sess(t.m, 16, 8, G4_CACHE_F32, 0);
        T_CHECK(g4_session_create(&lean, t.m, &so, err, sizeof err) == G4_OK);
        size_t kl, sl, kf, sf;
        g4_session_memory(lean, &kl, &sl);
        g4_session_memory(fat, &kf, &sf);
        T_CHECKF(kl == kf && sl < sf, "batch_only memory: kv %zu / %zu, scratch %zu / %zu", kl, kf, sl, sf);
        T_CHECK(g4_session_eval(lean, p, 3) == G4_ERR_ARG && strstr(g4_session_errmsg(lean), "batch_only"));
        g4_session *pair[2] = { lean, fat };
        const int32_t *tp[2] = { p, p };
        size_t np2[2] = { 5, 5 };
        T_CHECK(g4_batch_eval(b, pair, tp, np2, 2) == G4_OK);
        T_CHECK(!memcmp(g4_session_logits(lean), g4_session_logits(fat), (size_t)V * sizeof(float)));
        g4_session_free(lean);
        g4_session_free(fat);
    }
    free(snap);
    for (int i = 0; i < 3; i++) g4_session_free(s[i]);
    g4_session_free(x);
    g4_batch_free(b);
    g4_batch_free(NULL);
    t_model_close(&u);
    t_model_close(&t);
}

/* ==== truncate, abort ==== */

static const int32_t LONG_P[MAX_T] = {
    2, 17, 33, 45, 99, 100, 101, 102, 103, 104, 105, 106, 260, 261, 300, 301, 302, 303, 310, 311,
    320, 321, 330, 331, 340, 341, 350, 351, 360, 361, 370, 371, 380, 381, 390, 391, 400, 401, 410, 411,
};
static const int32_t Q[5] = { 7, 9, 11, 13, 15 };

typedef struct abort_ctl { int calls, stop_at; } abort_ctl;
static int abort_cb(void *ud) { abort_ctl *a = ud; return ++a->calls >= a->stop_at; }

static void check_truncate_abort(const char *kernels) {
    t_model t;
    g4_testgen_opts o = {0}; /* F32 weights: every eval of >= 2 tokens takes one float order */
    if (!t_model_open(&t, &o, 1, kernels)) { T_CHECK(0); return; }
    const int32_t V = g4_model_n_vocab(t.m);
    const size_t lb = (size_t)V * sizeof(float);
    float *ref = malloc(lb);
    g4_session *a = t_sess(t.m, 128, 64, G4_CACHE_F32, 0), *r = t_sess(t.m, 128, 64, G4_CACHE_F32, 0);
    /* truncate and continue == the same tokens fresh */
    T_CHECK(g4_session_eval(r, LONG_P, 20) == G4_OK && g4_session_eval(r, Q, 5) == G4_OK);
    memcpy(ref, g4_session_logits(r), lb);
    T_CHECK(g4_session_eval(a, LONG_P, 20) == G4_OK && g4_session_eval(a, LONG_P + 20, 20) == G4_OK);
    T_CHECK(g4_session_truncate(a, 20) == 20 && g4_session_n_past(a) == 20 && g4_session_logits(a) == NULL);
    T_CHECK(g4_session_eval(a, Q, 5) == G4_OK && !memcmp(ref, g4_session_logits(a), lb));
    T_CHECK(g4_session_truncate(a, 100) == 25 && g4_session_truncate(a, -3) == 0 && g4_session_n_past(a) == 0);
    g4_session_free(a);

    /* a small ring (window 8, n_ubatch 4: 11 cells) cannot go back far */
    a = t_sess(t.m, 128, 4, G4_CACHE_F32, 0);
    T_CHECK(g4_session_eval(a, LONG_P, 40) == G4_OK);
    T_CHECK(g4_session_truncate(a, 10) == 0 && g4_session_n_past(a) == 0);
    T_CHECK(g4_session_eval(a, LONG_P, 40) == G4_OK);
    T_CHECK(g4_session_truncate(a, 37) == 37); /* positions 30..36 are still in the ring */
    g4_session_reset(r);
    T_CHECK(g4_session_eval(r, LONG_P, 37) == G4_OK && g4_session_eval(r, Q, 5) == G4_OK);
    memcpy(ref, g4_session_logits(r), lb);
    T_CHECK(g4_session_eval(a, Q, 5) == G4_OK && !memcmp(ref, g4_session_logits(a), lb));
    g4_session_free(a);

    /* abort: stop before the 2nd chunk of 8 (8 tokens written past n_past 10: the ring of
     * 15 cells still holds the window of position 10), retry gives the uninterrupted result */
    a = t_sess(t.m, 128, 8, G4_CACHE_F32, 0);
    g4_session_reset(r);
    T_CHECK(g4_session_eval(r, LONG_P, 10) == G4_OK && g4_session_eval(r, LONG_P + 10, 30) == G4_OK);
    memcpy(ref, g4_session_logits(r), lb);
    abort_ctl ac = { 0, 2 };
    T_CHECK(g4_session_eval(a, LONG_P, 10) == G4_OK);
    g4_session_set_abort(a, abort_cb, &ac);
    T_CHECK(g4_session_eval(a, LONG_P + 10, 30) == G4_ERR_ABORTED && strstr(g4_session_errmsg(a), "aborted"));
    T_CHECK(g4_session_n_past(a) == 10 && g4_session_logits(a) == NULL);
    g4_session_set_abort(a, NULL, NULL);
    T_CHECK(g4_session_eval(a, LONG_P + 10, 30) == G4_OK && !memcmp(ref, g4_session_logits(a), lb));
    /* stopped at the 3rd chunk: 16 positions written, the ring lost position 10's window */
    g4_session_reset(a);
    T_CHECK(g4_session_eval(a, LONG_P, 10) == G4_OK);
    ac = (abort_ctl){ 0, 3 };
    g4_session_set_abort(a, abort_cb, &ac);
    T_CHECK(g4_session_eval(a, LONG_P + 10, 30) == G4_ERR_ABORTED && g4_session_n_past(a) == 0);
    g4_session_set_abort(a, NULL, NULL);

    /* in a batch: one session's callback stops everyone; a retry gives the same results */
    g4_batch *b = NULL;
    char err[256];
    T_CHECK(g4_batch_create(&b, t.m, NULL, err, sizeof err) == G4_OK);
    g4_session *bs[2] = { a, r };
    g4_session_reset(a);
    g4_session_reset(r);
    const int32_t *bt[2] = { LONG_P, LONG_P + 5 };
    size_t bn[2] = { 6, 6 };
    T_CHECK(b && g4_batch_eval(b, bs, bt, bn, 2) == G4_OK);
    float *ref2 = malloc(2 * lb);
    const int32_t *bt2[2] = { Q, Q + 1 };
    size_t bn2[2] = { 1, 1 };
    T_CHECK(b && g4_batch_eval(b, bs, bt2, bn2, 2) == G4_OK);
    memcpy(ref2, g4_session_logits(a), lb);
    memcpy(ref2 + V, g4_session_logits(r), lb);
    T_CHECK(g4_session_truncate(a, 6) == 6 && g4_session_truncate(r, 6) == 6);
    ac = (abort_ctl){ 0, 1 };
    g4_session_set_abort(r, abort_cb, &ac);
    T_CHECK(b && g4_batch_eval(b, bs, bt2, bn2, 2) == G4_ERR_ABORTED && strstr(g4_batch_errmsg(b), "session 1"));
    T_CHECK(g4_session_n_past(a) == 6 && g4_session_n_past(r) == 6);
    g4_session_set_abort(r, NULL, NULL);
    T_CHECK(b && g4_batch_eval(b, bs, bt2, bn2, 2) == G4_OK);
    T_CHECK(!memcmp(ref2, g4_session_logits(a), lb) && !memcmp(ref2 + V, g4_session_logits(r), lb));
    free(ref2);
    g4_batch_free(b);
    g4_session_free(a);
    g4_session_free(r);
    free(ref);
    t_model_close(&t);
}

/* ==== per-eval flags: every token's logits, the decode float order ==== */

static void check_eval_flags(const char *name, const g4_testgen_opts *o, const char *kernels) {
    t_model t;
    if (!t_model_open(&t, o, 1, kernels)) { T_CHECKF(0, "%s: open", name); return; }
    const int32_t V = g4_model_n_vocab(t.m);
    const size_t lb = (size_t)V * sizeof(float);
    g4_session_opts so = { .n_ctx = 128, .n_ubatch = 4, .cache_type = G4_CACHE_F16, .n_logits = 9 };
    g4_session *a = NULL, *r = t_sess(t.m, 128, 4, G4_CACHE_F16, 0);
    char err[256];
    T_CHECK(g4_session_create(&a, t.m, &so, err, sizeof err) == G4_OK);
    float *one = malloc(9 * lb);
    /* a prompt, then 9 tokens one eval each vs one eval of the 9 in decode order (3 chunks
     * of n_ubatch 4, the sliding rings wrapping): the same bits, on every table */
    T_CHECK(g4_session_eval(r, LONG_P, 12) == G4_OK && g4_session_eval(a, LONG_P, 12) == G4_OK);
    for (int k = 0; k < 9; k++) {
        T_CHECK(g4_session_eval(r, LONG_P + 12 + k, 1) == G4_OK);
        memcpy(one + (size_t)k * (size_t)V, g4_session_logits(r), lb);
    }
    T_CHECK(g4_session_eval_ex(a, LONG_P + 12, 10, G4_EVAL_ALL_LOGITS) == G4_ERR_ARG && strstr(g4_session_errmsg(a), "n_logits"));
    T_CHECK(g4_session_eval_ex(a, LONG_P + 12, 9, 8) == G4_ERR_ARG && g4_session_n_past(a) == 12);
    T_CHECK(g4_session_eval_ex(a, LONG_P + 12, 9, G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER) == G4_OK);
    int same = 1;
    for (int k = 0; k < 9; k++) {
        const float *l = g4_session_logits_ith(a, (size_t)k);
        const int eq = l && !memcmp(l, one + (size_t)k * (size_t)V, lb);
        if (!eq && l) fprintf(stderr, "    row %d NMSE %.3g\n", k, t_nmse(one + (size_t)k * (size_t)V, l, (size_t)V));
        same &= eq;
    }
    T_CHECKF(same, "%s [%s]: 9 tokens in decode order vs 9 one-token evals", name, g4_model_kernels(t.m));
    T_CHECK(g4_session_logits(a) == g4_session_logits_ith(a, 8) && g4_session_logits_ith(a, 9) == NULL);
    /* every token's logits (the head's columns are then all of them, as in llama.cpp); a
     * later eval without the flag returns one row */
    g4_session_reset(a);
    T_CHECK(g4_session_eval_ex(a, LONG_P, 9, G4_EVAL_ALL_LOGITS) == G4_OK && g4_session_logits_ith(a, 8) != NULL);
    T_CHECK(g4_session_eval(a, LONG_P + 9, 1) == G4_OK && g4_session_logits_ith(a, 0) == NULL);
    free(one);
    g4_session_free(a);
    g4_session_free(r);
    t_model_close(&t);
}

/* ==== per-session flags in one batch (g4_batch_eval_ex) ==== */

enum { BF_N = 5 };

/* Sessions 0, 2, 3 verify drafts in decode order (ALL | DECODE, DECODE only, ALL | DECODE),
 * 1 and 4 read prompt chunks (0, ALL) next to them: one g4_batch_eval_ex vs each decode-order
 * session's own g4_session_eval_ex with the same flags, and the other two batched alone
 * (g4_batch_eval_ex of just them): the same bits, on every table, for tight and roomy
 * chunkings (the decode-order rows fill what the ubatches' chunks leave). */
static void check_batch_flags(const char *name, const g4_testgen_opts *o, const char *kernels) {
    t_model t;
    if (!t_model_open(&t, o, 1, kernels)) { T_CHECKF(0, "%s: open", name); return; }
    const int32_t V = g4_model_n_vocab(t.m);
    const size_t lb = (size_t)V * sizeof(float);
    const char *kn = g4_model_kernels(t.m);
    static const int prompt[BF_N] = { 12, 5, 20, 7, 3 }, step_n[BF_N] = { 5, 9, 3, 1, 4 };
    const unsigned AD = G4_EVAL_ALL_LOGITS | G4_EVAL_DECODE_ORDER;
    const unsigned fl[BF_N] = { AD, 0, G4_EVAL_DECODE_ORDER, AD, G4_EVAL_ALL_LOGITS };
    const struct { int ub, out; } bc[] = { { 5, 3 }, { 128, 32 } };
    char err[256];
    for (size_t v = 0; v < sizeof bc / sizeof bc[0]; v++) {
        g4_session *s[BF_N] = {0}, *r[BF_N] = {0};
        g4_batch *b = NULL, *rb = NULL;
        const g4_batch_opts bo = { .n_ubatch = bc[v].ub, .n_out = bc[v].out };
        int ok = g4_batch_create(&b, t.m, &bo, err, sizeof err) == G4_OK && g4_batch_create(&rb, t.m, &bo, err, sizeof err) == G4_OK;
        for (int i = 0; i < BF_N; i++) {
            g4_session_opts so = { .n_ctx = 128, .n_ubatch = 4, .cache_type = G4_CACHE_F16, .n_logits = 9, .keep_hidden = 1 };
            ok &= g4_session_create(&s[i], t.m, &so, err, sizeof err) == G4_OK && g4_session_create(&r[i], t.m, &so, err, sizeof err) == G4_OK;
            ok &= ok && g4_session_eval(s[i], LONG_P + i, (size_t)prompt[i]) == G4_OK && g4_session_eval(r[i], LONG_P + i, (size_t)prompt[i]) == G4_OK;
        }
        T_CHECKF(ok, "%s: batch-flags setup", name);
        const int32_t *tk[BF_N];
        size_t nt[BF_N];
        for (int i = 0; i < BF_N; i++) tk[i] = LONG_P + 20 + i, nt[i] = (size_t)step_n[i];
        /* errors first: nothing changes, the session is named */
        unsigned bad[BF_N];
        memcpy(bad, fl, sizeof bad);
        bad[2] = 8;
        T_CHECK(ok && g4_batch_eval_ex(b, s, tk, nt, bad, BF_N) == G4_ERR_ARG && strstr(g4_batch_errmsg(b), "session 2") &&
                g4_session_n_past(s[0]) == prompt[0]);
        size_t big[BF_N];
        memcpy(big, nt, sizeof big);
        big[4] = 10; /* ALL_LOGITS over the 9 rows it keeps */
        T_CHECK(ok && g4_batch_eval_ex(b, s, tk, big, fl, BF_N) == G4_ERR_ARG && strstr(g4_batch_errmsg(b), "session 4"));
        /* an abort in the second chunk: every session is back where it was */
        abort_ctl ac = { 0, 2 };
        g4_session_set_abort(s[1], abort_cb, &ac);
        if (v == 0) {
            T_CHECK(ok && g4_batch_eval_ex(b, s, tk, nt, fl, BF_N) == G4_ERR_ABORTED);
            int back = 1;
            for (int i = 0; i < BF_N; i++) back &= g4_session_n_past(s[i]) == prompt[i];
            T_CHECKF(back, "%s [%s]: an aborted mixed batch leaves every session where it was", name, kn);
        }
        g4_session_set_abort(s[1], NULL, NULL);
        /* the batch, and the references */
        ok &= ok && g4_batch_eval_ex(b, s, tk, nt, fl, BF_N) == G4_OK;
        if (!ok) fprintf(stderr, "    %s\n", g4_batch_errmsg(b));
        for (int i = 0; ok && i < BF_N; i++)
            if (fl[i] & G4_EVAL_DECODE_ORDER) ok &= g4_session_eval_ex(r[i], tk[i], nt[i], fl[i]) == G4_OK;
        g4_session *rs[2] = { r[1], r[4] };
        const int32_t *rt[2] = { tk[1], tk[4] };
        const size_t rn[2] = { nt[1], nt[4] };
        const unsigned rf[2] = { fl[1], fl[4] };
        ok &= ok && g4_batch_eval_ex(rb, rs, rt, rn, rf, 2) == G4_OK;
        T_CHECKF(ok, "%s [%s]: batch-flags evals (ub %d)", name, kn, bc[v].ub);
        int same = ok;
        for (int i = 0; ok && i < BF_N; i++) {
            const int all = (fl[i] & G4_EVAL_ALL_LOGITS) != 0;
            same &= g4_session_n_past(s[i]) == g4_session_n_past(r[i]);
            for (int k = all ? 0 : step_n[i] - 1; k < step_n[i]; k++) {
                const float *a = all ? g4_session_logits_ith(s[i], (size_t)k) : g4_session_logits(s[i]);
                const float *e = all ? g4_session_logits_ith(r[i], (size_t)k) : g4_session_logits(r[i]);
                const float *ha = g4_session_hidden(s[i], all ? (size_t)k : 0), *he = g4_session_hidden(r[i], all ? (size_t)k : 0);
                const int eq = a && e && !memcmp(a, e, lb) && ha && he && !memcmp(ha, he, (size_t)g4_model_n_embd(t.m) * sizeof(float));
                if (!eq && a && e) fprintf(stderr, "    session %d row %d NMSE %.3g\n", i, k, t_nmse(e, a, (size_t)V));
                same &= eq;
            }
        }
        T_CHECKF(same, "%s [%s]: g4_batch_eval_ex with per-session flags (batch ub %d, out %d) vs each session's own eval",
                 name, kn, bc[v].ub, bc[v].out);
        /* and the sessions continue alike */
        for (int i = 0; ok && i < BF_N; i++) {
            const int32_t nx = 5;
            ok &= g4_session_eval(s[i], &nx, 1) == G4_OK && g4_session_eval(r[i], &nx, 1) == G4_OK &&
                  !memcmp(g4_session_logits(s[i]), g4_session_logits(r[i]), lb);
        }
        T_CHECKF(ok, "%s [%s]: the sessions continue alike after the mixed batch", name, kn);
        for (int i = 0; i < BF_N; i++) g4_session_free(s[i]), g4_session_free(r[i]);
        g4_batch_free(b);
        g4_batch_free(rb);
    }
    t_model_close(&t);
}

/* ==== saved state ==== */

static int write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static void *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = sz > 0 ? malloc((size_t)sz) : NULL;
    if (p && fread(p, 1, (size_t)sz, f) != (size_t)sz) { free(p); p = NULL; }
    fclose(f);
    *n = p ? (size_t)sz : 0;
    return p;
}

static void check_state(int cache) {
    t_model t, u;
    g4_testgen_opts o = {0}, o2 = { .seed = 9 };
    if (!t_model_open(&t, &o, 1, NULL)) { T_CHECK(0); return; }
    if (!t_model_open(&u, &o2, 1, NULL)) { T_CHECK(0); t_model_close(&t); return; }
    const int32_t V = g4_model_n_vocab(t.m);
    const size_t lb = (size_t)V * sizeof(float);
    char path[64], bad[64];
    snprintf(path, sizeof path, "/tmp/g4-test-state-%d.bin", (int)getpid());
    snprintf(bad, sizeof bad, "/tmp/g4-test-state-%d.bad", (int)getpid());
    float *ref = malloc(lb), *got = malloc(lb);
    g4_session *a = t_sess(t.m, 128, 16, cache, 0), *b = t_sess(t.m, 128, 16, cache, 0);
    /* a long prompt (the sliding rings wrap), saved, loaded into a fresh session: the next
     * tokens give the same bits */
    T_CHECK(g4_session_eval(a, LONG_P, 40) == G4_OK);
    T_CHECK(g4_session_save(a, path, LONG_P, 39) == G4_ERR_ARG); /* not n_past ids */
    T_CHECKF(g4_session_save(a, path, LONG_P, 40) == G4_OK, "save: %s", g4_session_errmsg(a));
    T_CHECK(g4_session_eval(a, Q, 5) == G4_OK);
    memcpy(ref, g4_session_logits(a), lb);
    int32_t ids[64];
    size_t n_ids = 0;
    T_CHECK(g4_session_load(b, path, ids, 39, &n_ids) == G4_ERR_BUFFER && n_ids == 40 && g4_session_n_past(b) == 0);
    T_CHECKF(g4_session_load(b, path, ids, 64, &n_ids) == G4_OK, "load: %s", g4_session_errmsg(b));
    T_CHECK(n_ids == 40 && !memcmp(ids, LONG_P, sizeof(int32_t) * 40));
    T_CHECK(g4_session_n_past(b) == 40 && g4_session_logits(b) == NULL);
    T_CHECK(g4_session_eval(b, Q, 5) == G4_OK && !memcmp(ref, g4_session_logits(b), lb));
    /* loaded into a session with a smaller ring (n_ubatch 2): still the same */
    g4_session *c = t_sess(t.m, 64, 2, cache, 0);
    T_CHECKF(c && g4_session_load(c, path, ids, 64, NULL) == G4_OK, "load small: %s", g4_session_errmsg(c));
    T_CHECK(c && g4_session_eval(c, Q, 1) == G4_OK);
    if (c) {
        g4_session_truncate(a, 40);
        T_CHECK(g4_session_eval(a, Q, 1) == G4_OK);
        T_CHECKF(t_nmse(g4_session_logits(a), g4_session_logits(c), (size_t)V) == 0, "small-ring load NMSE %.3g",
                 t_nmse(g4_session_logits(a), g4_session_logits(c), (size_t)V));
    }
    g4_session_free(c);

    /* refused, session unchanged: b holds 45 positions; every bad load must leave them */
    g4_session_truncate(b, 44);
    T_CHECK(g4_session_eval(b, Q + 4, 1) == G4_OK);
    memcpy(got, g4_session_logits(b), lb);
    size_t n = 0;
    uint8_t *img = read_file(path, &n);
    T_CHECK(img && n > 64);
    int n_bad = 0, n_refused = 0;
    if (img) {
        g4_session *x = t_sess(u.m, 128, 16, cache, 0);
        T_CHECK(x && g4_session_load(x, path, ids, 64, &n_ids) == G4_ERR_FORMAT && strstr(g4_session_errmsg(x), "another model"));
        g4_session_free(x);
        x = t_sess(t.m, 128, 16, cache == G4_CACHE_F32 ? G4_CACHE_F16 : G4_CACHE_F32, 0);
        T_CHECK(x && g4_session_load(x, path, ids, 64, &n_ids) == G4_ERR_FORMAT && strstr(g4_session_errmsg(x), "cache type"));
        g4_session_free(x);
        x = t_sess(t.m, 32, 16, cache, 0);
        T_CHECK(x && g4_session_load(x, path, ids, 64, &n_ids) == G4_ERR_FORMAT && strstr(g4_session_errmsg(x), "n_ctx"));
        g4_session_free(x);
        T_CHECK(g4_session_load(b, "/nonexistent/g4-state", ids, 64, &n_ids) == G4_ERR_IO);
        T_CHECK(g4_session_load(b, NULL, ids, 64, &n_ids) == G4_ERR_ARG && g4_session_save(b, NULL, NULL, 0) == G4_ERR_ARG);
        /* every prefix length at a stride, one flipped bit at a stride, one extra byte */
        uint8_t *mut = malloc(n + 1);
        for (size_t cut = 0; cut < n; cut += (cut < 128 ? 1 : 97)) {
            n_bad++;
            if (write_file(bad, img, cut) && g4_session_load(b, bad, ids, 64, &n_ids) != G4_OK) n_refused++;
        }
        for (size_t pos = 0; pos < n; pos += (pos < 128 ? 1 : 89)) {
            memcpy(mut, img, n);
            mut[pos] ^= (uint8_t)(1u << (pos % 8));
            n_bad++;
            if (write_file(bad, mut, n) && g4_session_load(b, bad, ids, 64, &n_ids) != G4_OK) n_refused++;
        }
        memcpy(mut, img, n);
        mut[n] = 0;
        n_bad++;
        if (write_file(bad, mut, n + 1) && g4_session_load(b, bad, ids, 64, &n_ids) != G4_OK) n_refused++;
        free(mut);
        T_CHECKF(n_refused == n_bad, "hostile state files: %d of %d refused", n_refused, n_bad);
        T_CHECK(g4_session_n_past(b) == 45);
        g4_session_truncate(b, 44);
        T_CHECK(g4_session_eval(b, Q + 4, 1) == G4_OK && !memcmp(got, g4_session_logits(b), lb));
        free(img);
    }
    /* an empty session saves and loads too */
    g4_session_reset(a);
    T_CHECK(g4_session_save(a, path, NULL, 0) == G4_OK && g4_session_load(b, path, NULL, 0, &n_ids) == G4_OK &&
            g4_session_n_past(b) == 0 && n_ids == 0);
    remove(path);
    remove(bad);
    g4_session_free(a);
    g4_session_free(b);
    free(ref);
    free(got);
    t_model_close(&u);
    t_model_close(&t);
}

/* tests/fuzz/corpus-state: inputs of the fuzz_state target (its model: the same options) that
 * once crashed; each must load and evaluate, or be refused leaving the session empty */
static void replay_state_corpus(void) {
    DIR *dir = opendir("tests/fuzz/corpus-state");
    if (!dir) return;
    t_model t;
    g4_testgen_opts o = { .n_layer = 4, .full_every = 2, .n_shared = 2, .n_embd = 32, .n_head = 2, .head_dim_swa = 16,
                          .head_dim_full = 32, .n_ff = 32, .window = 4, .n_vocab = 400, .n_ctx = 64 };
    if (!t_model_open(&t, &o, 1, "scalar")) { T_CHECK(0); closedir(dir); return; }
    g4_session *s = t_sess(t.m, 64, 8, G4_CACHE_F16, 0);
    int n = 0;
    for (struct dirent *e; s && (e = readdir(dir)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char path[600];
        snprintf(path, sizeof path, "tests/fuzz/corpus-state/%s", e->d_name);
        g4_session_reset(s);
        int32_t ids[64];
        size_t k = 0;
        const int32_t tok = 5;
        if (g4_session_load(s, path, ids, 64, &k) == G4_OK) {
            if (g4_session_n_past(s) < g4_session_n_ctx(s)) T_CHECKF(g4_session_eval(s, &tok, 1) == G4_OK, "%s: eval after load", path);
        } else {
            T_CHECKF(g4_session_n_past(s) == 0 && g4_session_errmsg(s)[0], "%s: refused but changed", path);
        }
        n++;
    }
    closedir(dir);
    fprintf(stderr, "  batch: %d state corpus inputs replayed\n", n);
    g4_session_free(s);
    t_model_close(&t);
}

T_GROUP(batch) {
    replay_state_corpus();
    check_batch_errors();
    {
        const g4_testgen_opts q4 = { .wtype = G4_TYPE_Q4_K, .n_embd = 256, .n_head = 4, .head_dim_swa = 64, .head_dim_full = 128,
                                     .n_ff = 512, .n_per_layer = 256 };
        const g4_testgen_opts f16 = { .wtype = G4_TYPE_F16, .untied = 1 };
        check_eval_flags("q4_k", &q4, NULL);
        check_eval_flags("f16", &f16, NULL);
        check_eval_flags("f16", &f16, "scalar");
        const g4_testgen_opts f32 = {0};
        check_batch_flags("q4_k", &q4, NULL);
        check_batch_flags("f16", &f16, NULL);
        check_batch_flags("f32", &f32, "scalar");
        check_batch_flags("q4_k", &q4, "scalar");
    }
    check_truncate_abort(NULL);
    check_truncate_abort("scalar");
    check_state(G4_CACHE_F32);
    check_state(G4_CACHE_F16);
    check_state(G4_CACHE_Q8_0);
    const g4_testgen_opts d256 = { .wtype = G4_TYPE_Q4_K, .n_embd = 256, .n_head = 4, .head_dim_swa = 64, .head_dim_full = 128,
                                   .n_ff = 512, .n_per_layer = 256 };
    g4_testgen_opts mix = d256;
    mix.wtype = 0;
    mix.q4_k_m = 1;
    struct { const char *name; g4_testgen_opts o; int cache; int scalar; } v[] = {
        { "default f32", {0}, G4_CACHE_F32, 1 },
        { "f16 weights, f16 kv", { .wtype = G4_TYPE_F16 }, G4_CACHE_F16, 0 },
        { "no ple, no sharing", { .n_per_layer = -1, .n_shared = -1 }, G4_CACHE_F32, 0 },
        { "gqa arrays, k=v, untied", { .n_head = 4, .n_head_kv = 2, .n_head_kv_full = 1, .k_eq_v = 1, .untied = 1,
                                       .n_ff_shared = 256 }, G4_CACHE_F16, 0 },
        { "q8_0", { .wtype = G4_TYPE_Q8_0, .n_per_layer = 32 }, G4_CACHE_F32, 1 },
        { "q4_k", d256, G4_CACHE_F32, 0 },
        { "q4_k_m mix", mix, G4_CACHE_F16, 0 },
        /* mixture of experts: rows of several sessions routed and grouped by expert together */
        { "moe f32 16/4", { .n_expert = 16, .n_expert_used = 4, .n_ff_exp = 64, .n_per_layer = -1, .n_shared = -1,
                            .k_eq_v_full = 1, .n_head = 4, .n_head_kv = 2, .n_head_kv_full = 1 }, G4_CACHE_F32, 1 },
        { "moe q8_0 split, scales", { .wtype = G4_TYPE_Q8_0, .n_per_layer = 32, .n_expert = 8, .n_expert_used = 2,
                                      .n_ff_exp = 64, .moe_split = 1, .moe_scales = 1, .moe_first = 2 }, G4_CACHE_F16, 1 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        check_batch_model(v[i].name, &v[i].o, NULL, v[i].cache);
        if (v[i].scalar) check_batch_model(v[i].name, &v[i].o, "scalar", v[i].cache);
    }
}
