/* test_moe.c - the mixture-of-experts block (src/moe.c) against itself and a plain double
 * reference (no node needed; llama.cpp's numbers: tests/sh/oracle_forward.sh):
 *   - moe_route: probabilities sum to 1, the top k in order, ties to the lower index,
 *     renormalised weights, the n % 8 tail of the softmax;
 *   - moe_ffn on F32 models, fused and split gate/up, with per-expert scales, against a direct
 *     evaluation of gemma4-architecture.md §4.8 in double;
 *   - per-expert .scale tensors of powers of two give the logits of the same model with the
 *     expert's weights scaled, bit for bit;
 *   - g4_session_expert_counts, decode bytes and active parameters are consistent with the
 *     shapes; the scratch plan is zero for a dense model.
 * Models come from testgen (random, well conditioned), opened from memory.
 */
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "g4_impl.h"
#include "kern/kern.h"
#include "moe.h"
#include "quant/quant.h"
#include "testgen.h"
#include "t.h"

static g4_model *open_mem(const g4_testgen_opts *o, void **buf) {
    char err[512];
    size_t len;
    *buf = NULL;
    if (testgen_write_mem(buf, &len, o, err, sizeof err) != G4_OK) {
        fprintf(stderr, "    testgen: %s\n", err);
        return NULL;
    }
    g4_model_opts mo = {0};
    mo.n_threads = 1;
    g4_model *m = NULL;
    if (model_open_mem(&m, *buf, len, "moe.gguf", &mo, err, sizeof err) != G4_OK) {
        fprintf(stderr, "    open: %s\n", err);
        free(*buf);
        *buf = NULL;
    }
    return m;
}

static g4_session *sess(g4_model *m, int n_ctx, int n_ubatch) {
    g4_session_opts so = {0};
    so.n_ctx = n_ctx;
    so.n_ubatch = n_ubatch;
    so.cache_type = G4_CACHE_F32;
    g4_session *s = NULL;
    char err[256];
    if (g4_session_create(&s, m, &so, err, sizeof err) != G4_OK) fprintf(stderr, "    session: %s\n", err);
    return s;
}

/* ==== moe_route ==== */

static void check_route(void) {
    /* ties go to the lower index; weights renormalised over the chosen ones */
    float p[12] = { 1, 3, 3, 0, 2, 3, 1, 1, 0, 0, 2, 2 };
    int32_t sel[4];
    float w[4];
    moe_route(kern_select(NULL, NULL, 0), p, 12, 4, sel, w);
    T_CHECKF(sel[0] == 1 && sel[1] == 2 && sel[2] == 5 && sel[3] == 4, "sel %d %d %d %d", sel[0], sel[1], sel[2], sel[3]);
    double sp = 0, sw = 0;
    for (int i = 0; i < 12; i++) sp += (double)p[i];
    for (int i = 0; i < 4; i++) sw += (double)w[i];
    T_NEAR(sp, 1.0, 1e-6);
    T_NEAR(sw, 1.0, 1e-6);
    T_CHECK(w[0] == w[1] && w[1] == w[2] && w[2] > w[3]);
    /* probabilities against a double softmax, for every tail length n % 8 */
    uint64_t rs = 7;
    for (int n = 1; n <= 40; n++) {
        float x[40], q[40];
        int32_t s1[1];
        float w1[1];
        double mx = -1e30, z = 0;
        for (int i = 0; i < n; i++) { x[i] = 4.0f * t_rng_uniform(&rs); q[i] = x[i]; if ((double)x[i] > mx) mx = (double)x[i]; }
        for (int i = 0; i < n; i++) z += exp((double)x[i] - mx);
        moe_route(kern_select(NULL, NULL, 0), q, n, 1, s1, w1);
        double e = 0;
        int best = 0;
        for (int i = 0; i < n; i++) {
            double r = exp((double)x[i] - mx) / z;
            if (fabs((double)q[i] - r) > e) e = fabs((double)q[i] - r);
            if (x[i] > x[best]) best = i;
        }
        T_CHECKF(e < 1e-6, "n %d: softmax max error %.3g", n, e);
        T_CHECKF(s1[0] == best && w1[0] == 1.0f, "n %d: top-1 %d (want %d), weight %g", n, s1[0], best, (double)w1[0]);
    }
}

/* ==== moe_ffn against a double reference ==== */

static double dot_f32(const float *w, const double *x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)w[i] * x[i];
    return s;
}

static void rms_d(double *y, const double *x, const float *w, int64_t n, double eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += x[i] * x[i];
    const double sc = 1.0 / sqrt(ss / (double)n + eps);
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * sc * (w ? (double)w[i] : 1.0);
}

static const float *fv(const g4_tensor *t) { return (const float *)(const void *)t->data; }
/* row r of expert e of a 3-D f32 tensor */
static const float *xrow(const g4_tensor *t, int e, int64_t r) {
    return (const float *)(const void *)(t->data + ((size_t)e * (size_t)t->ne[1] + (size_t)r) * t->row_bytes);
}

/* §4.8 for one row: y_in = shared MLP output, x1 = attention stream; returns the "combined" row */
static void moe_ref(const g4_model *m, const g4_layer *l, const float *x1f, const float *yf, double *out) {
    const int64_t E = m->cfg.n_embd, F = m->cfg.n_ff_exp;
    const int Ne = m->cfg.n_expert, K = m->cfg.n_expert_used;
    const double eps = m->cfg.rms_eps;
    double *x1 = calloc((size_t)(5 * E + 3 * F + Ne), sizeof(double));
    double *r = x1 + E, *z = r + E, *acc = z + E, *y = acc + E, *h = y + E, *gt = h + F, *up = gt + F, *lg = up + F;
    for (int64_t i = 0; i < E; i++) x1[i] = x1f[i];
    rms_d(r, x1, NULL, E, eps);
    for (int64_t i = 0; i < E; i++) r[i] *= (1.0 / sqrt((double)E)) * (double)fv(l->ffn_gate_inp_s)[i];
    float lgf[1024];
    for (int e = 0; e < Ne; e++) {
        lg[e] = dot_f32(fv(l->ffn_gate_inp) + (size_t)e * (size_t)E, r, E);
        lgf[e] = (float)lg[e];
    }
    int32_t sel[64];
    float w[64];
    moe_route(kern_select(NULL, NULL, 0), lgf, Ne, K, sel, w); /* (the float softmax; the selection is what matters here) */
    rms_d(z, x1, fv(l->pre_ffw_norm_2), E, eps);
    for (int k = 0; k < K; k++) {
        const int e = sel[k];
        for (int64_t j = 0; j < F; j++) {
            if (l->ffn_gate_up_exps) {
                gt[j] = dot_f32(xrow(l->ffn_gate_up_exps, e, j), z, E);
                up[j] = dot_f32(xrow(l->ffn_gate_up_exps, e, F + j), z, E);
            } else {
                gt[j] = dot_f32(xrow(l->ffn_gate_exps, e, j), z, E) * (double)(l->gate_exps_s ? fv(l->gate_exps_s)[e] : 1.0f);
                up[j] = dot_f32(xrow(l->ffn_up_exps, e, j), z, E) * (double)(l->up_exps_s ? fv(l->up_exps_s)[e] : 1.0f);
            }
            h[j] = (double)forward_gelu(m->gelu_f16, (float)gt[j]) * up[j];
        }
        const double ds = l->down_exps_s ? (double)fv(l->down_exps_s)[e] : 1.0;
        for (int64_t i = 0; i < E; i++) acc[i] += dot_f32(xrow(l->ffn_down_exps, e, i), h, F) * ds * (double)w[k];
    }
    rms_d(acc, acc, fv(l->post_ffw_norm_2), E, eps);
    for (int64_t i = 0; i < E; i++) y[i] = yf[i];
    rms_d(y, y, fv(l->post_ffw_norm_1), E, eps);
    for (int64_t i = 0; i < E; i++) out[i] = y[i] + acc[i];
    free(x1);
}

static void check_ffn_ref(const char *name, const g4_testgen_opts *o) {
    void *buf;
    g4_model *m = open_mem(o, &buf);
    if (!m) { T_CHECKF(0, "%s: open", name); return; }
    enum { N = 9 };
    g4_session *s = sess(m, 64, N);
    const int64_t E = m->cfg.n_embd;
    float *x1 = malloc(sizeof(float) * (size_t)(2 * N * E)), *y = x1 + N * E;
    double *ref = malloc(sizeof(double) * (size_t)E);
    uint64_t rs = 11;
    for (int64_t i = 0; i < 2 * N * E; i++) x1[i] = t_rng_uniform(&rs);
    const g4_layer *l = &m->layers[m->cfg.n_layer - 1];
    T_CHECK(s && l->moe);
    if (s && l->moe) {
        float *yin = malloc(sizeof(float) * (size_t)(N * E));
        memcpy(yin, y, sizeof(float) * (size_t)(N * E));
        /* the session's own rows scratch as one chunk of N rows of its ubatch */
        g4_work *w = &s->work;
        for (int t = 0; t < N; t++) {
            w->sess[t] = s;
            w->col[t] = t;
        }
        w->T = N;
        w->r0 = 0;
        w->batch_n = N;
        moe_ffn(w, l, x1, y, 0, N);
        double worst = 0;
        for (int t = 0; t < N; t++) {
            moe_ref(m, l, x1 + t * E, yin + t * E, ref);
            double num = 0, den = 0;
            for (int64_t i = 0; i < E; i++) {
                num += (ref[i] - (double)y[t * E + i]) * (ref[i] - (double)y[t * E + i]);
                den += ref[i] * ref[i];
            }
            if (num / den > worst) worst = num / den;
        }
        /* f32 sums against double; the GELU table and the routing are the same on both sides */
        T_CHECKF(worst < 1e-9, "%s: moe_ffn vs the double reference: worst row NMSE %.3g", name, worst);
        free(yin);
    }
    free(ref);
    free(x1);
    g4_session_free(s);
    g4_model_close(m);
    free(buf);
}

/* ==== per-expert scales: powers of two, against scaled weights ==== */

static float exp_scale(int e, int which) { return (float)ldexp(1.0, (e + which) % 3 - 1); } /* 1/2, 1, 2 */

static void add_exp_scales(gguf_writer *w, void *ud) {
    const g4_testgen_opts *o = ud;
    static float v[3][64];
    static const int64_t ne[1] = { 8 };
    static const char *const what[3] = { "ffn_down_exps", "ffn_gate_exps", "ffn_up_exps" };
    char name[GGUF_MAX_NAME + 1];
    for (int k = 0; k < 3; k++)
        for (int e = 0; e < 8; e++) v[k][e] = exp_scale(e, k);
    for (int i = o->moe_first; i < o->n_layer; i++)
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.scale", i, what[k]);
            gguf_w_tensor(w, name, G4_TYPE_F32, 1, ne, v[k]);
        }
}

static void check_exp_scales(void) {
    g4_testgen_opts oa = { .n_expert = 8, .n_expert_used = 3, .n_ff_exp = 32, .moe_split = 1, .moe_first = 3 };
    oa.extra_tensors = add_exp_scales;
    oa.extra_ud = &oa;
    testgen_defaults(&oa);
    g4_testgen_opts ob = oa;
    ob.extra_tensors = NULL;
    char err[512];
    void *ba, *bb;
    size_t la, lb;
    if (testgen_write_mem(&ba, &la, &oa, err, sizeof err) || testgen_write_mem(&bb, &lb, &ob, err, sizeof err)) {
        T_CHECKF(0, "testgen: %s", err);
        return;
    }
    gguf_file *f = NULL;
    int ok = gguf_open_mem(&f, bb, lb, "b.gguf", NULL, err, sizeof err) == G4_OK;
    static const char *const what[3] = { "ffn_down_exps", "ffn_gate_exps", "ffn_up_exps" };
    for (int i = oa.moe_first; ok && i < oa.n_layer; i++)
        for (int k = 0; k < 3 && ok; k++) {
            char name[GGUF_MAX_NAME + 1];
            snprintf(name, sizeof name, "blk.%d.%s.weight", i, what[k]);
            const gguf_tensor *t = gguf_find_tensor(f, name);
            ok = t && t->type == G4_TYPE_F32 && t->ne[2] == 8;
            if (!ok) break;
            float *x = (float *)(void *)((uint8_t *)bb + (t->data - (const uint8_t *)bb));
            const uint64_t per = (uint64_t)(t->ne[0] * t->ne[1]);
            for (int e = 0; e < 8; e++)
                for (uint64_t j = 0; j < per; j++) x[(uint64_t)e * per + j] *= exp_scale(e, k);
        }
    T_CHECKF(ok, "model B: %s", err);
    gguf_close(f);
    g4_model_opts mo = {0};
    mo.n_threads = 1;
    g4_model *ma = NULL, *mb = NULL;
    if (ok && model_open_mem(&ma, ba, la, "a.gguf", &mo, err, sizeof err) == G4_OK &&
        model_open_mem(&mb, bb, lb, "b.gguf", &mo, err, sizeof err) == G4_OK) {
        T_CHECK(ma->layers[3].down_exps_s && ma->layers[3].gate_exps_s && ma->layers[3].up_exps_s && !mb->layers[3].down_exps_s);
        static const int32_t P[24] = { 2, 17, 33, 45, 99, 100, 101, 102, 103, 104, 105, 106,
                                       260, 261, 300, 301, 302, 303, 310, 311, 320, 321, 330, 331 };
        g4_session *sa = sess(ma, 64, 8), *sb = sess(mb, 64, 8);
        const int32_t V = g4_model_n_vocab(ma);
        T_CHECK(sa && sb && g4_session_eval(sa, P, 24) == G4_OK && g4_session_eval(sb, P, 24) == G4_OK);
        if (sa && sb) {
            double e = t_nmse(g4_session_logits(sb), g4_session_logits(sa), (size_t)V);
            T_CHECKF(e == 0, "expert .scale vs scaled expert weights: NMSE %.3g", e);
        }
        g4_session_free(sa);
        g4_session_free(sb);
    } else T_CHECKF(0, "open: %s", err);
    g4_model_close(ma);
    g4_model_close(mb);
    free(ba);
    free(bb);
}

/* ==== counts, bytes, parameters, memory ==== */

static void check_accounting(void) {
    g4_testgen_opts o = { .wtype = G4_TYPE_Q8_0, .n_per_layer = 32, .n_expert = 16, .n_expert_used = 4, .n_ff_exp = 64,
                          .moe_first = 2 };
    void *buf;
    g4_model *m = open_mem(&o, &buf);
    if (!m) { T_CHECK(0); return; }
    const g4_config *c = &m->cfg;
    T_CHECK(c->n_expert == 16 && c->n_expert_used == 4 && c->n_ff_exp == 64 && c->n_layer_moe == c->n_layer - 2);
    T_CHECK(g4_model_n_expert(m) == 16 && g4_model_n_expert_used(m) == 4);
    /* routed bytes: 4 of 16 experts, fused gate/up [128, 128] + down [64, 128], Q8_0 */
    const uint64_t per_exp = 128 * quant_row_bytes(G4_TYPE_Q8_0, 128) + 128 * quant_row_bytes(G4_TYPE_Q8_0, 64);
    T_CHECKF(g4_model_decode_bytes_routed(m) == (uint64_t)(c->n_layer - 2) * 4 * per_exp, "routed %llu",
             (unsigned long long)g4_model_decode_bytes_routed(m));
    T_CHECK(g4_model_decode_bytes(m) > g4_model_decode_bytes_routed(m));
    uint64_t all = 0;
    for (size_t i = 0; i < m->n_tensors_bound; i++)
        all += (uint64_t)(m->tensors[i].ne[0] * m->tensors[i].ne[1] * m->tensors[i].ne[2] * m->tensors[i].ne[3]);
    const uint64_t unrouted = (uint64_t)(c->n_layer - 2) * 12 * (128 * 128 + 64 * 128);
    T_CHECKF(g4_model_n_params_active(m) == all - unrouted, "active %llu of %llu",
             (unsigned long long)g4_model_n_params_active(m), (unsigned long long)all);

    /* expert counts: n_tok * K routings per MoE layer that runs every row */
    g4_session *s = sess(m, 64, 16);
    uint64_t cnt[16];
    static const int32_t P[20] = { 2, 17, 33, 45, 99, 100, 101, 102, 103, 104, 105, 106, 260, 261, 300, 301, 302, 303, 310, 311 };
    T_CHECK(s && g4_session_eval(s, P, 20) == G4_OK);
    if (s) {
        T_CHECK(g4_session_expert_counts(s, 0, cnt, 16) == G4_ERR_ARG); /* a dense layer */
        T_CHECK(g4_session_expert_counts(s, 2, cnt, 15) == G4_ERR_ARG);
        T_CHECK(g4_session_expert_counts(s, c->n_layer, cnt, 16) == G4_ERR_ARG);
        T_CHECK(g4_session_expert_counts(NULL, 2, cnt, 16) == G4_ERR_ARG);
        T_CHECK(g4_session_expert_counts(s, 2, NULL, 16) == G4_ERR_ARG);
        T_CHECK(g4_session_expert_counts(s, 2, cnt, 16) == G4_OK);
        uint64_t sum = 0;
        for (int e = 0; e < 16; e++) sum += cnt[e];
        T_CHECKF(sum == 20 * 4, "layer 2: %llu routings", (unsigned long long)sum);
        g4_session_reset(s);
        T_CHECK(g4_session_expert_counts(s, 2, cnt, 16) == G4_OK && cnt[0] == 0 && cnt[7] == 0);
    }
    g4_session_free(s);
    g4_model_close(m);
    free(buf);

    /* a dense model: no MoE scratch, counts refused */
    g4_testgen_opts d = {0};
    m = open_mem(&d, &buf);
    if (!m) { T_CHECK(0); return; }
    uint64_t need[MOE_N_BUFS];
    T_CHECK(moe_plan(m, 128, need) == 0 && need[0] == 0);
    T_CHECK(g4_model_decode_bytes_routed(m) == 0 && g4_model_n_expert(m) == 0);
    s = sess(m, 64, 16);
    T_CHECK(s && s->moe_hist == NULL && s->work.moe.logits == NULL && g4_session_expert_counts(s, 0, cnt, 16) == G4_ERR_ARG);
    g4_session_free(s);
    g4_model_close(m);
    free(buf);
}

T_GROUP(moe) {
    check_route();
    const g4_testgen_opts fused = { .n_expert = 12, .n_expert_used = 3, .n_ff_exp = 48, .n_per_layer = -1, .n_shared = -1 };
    const g4_testgen_opts split = { .n_expert = 8, .n_expert_used = 2, .n_ff_exp = 32, .moe_split = 1, .moe_scales = 1,
                                    .n_layer = 4, .full_every = 2, .n_shared = -1 };
    check_ffn_ref("fused 12/3", &fused);
    check_ffn_ref("split 8/2 scales", &split);
    check_exp_scales();
    check_accounting();
}
