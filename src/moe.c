/* moe.c - the mixture-of-experts FFN (moe.h): router, top-k, expert grouping, the experts'
 * GeGLU, the weighted sum and the norms around it.
 *
 * Owns: the MoE block's arithmetic and its float order, the grouping of a chunk's rows by
 * expert, the expert matrix products (one parallel job per stage over all routed experts).
 * Does not own: the shared MLP (forward.c ffn), buffer sizing (work.c, from moe_plan),
 * kernels (kern/).
 *
 * Float order, as llama.cpp v0.5.0's CPU backend (haswell build) computes the graph of
 * src/models/gemma4.cpp + build_moe_ffn:
 *   router input  r = ((x1 * rms_scale) * (1/sqrtf(E))) * ffn_gate_inp.scale  (ggml_rms_norm,
 *                 ggml_scale, ggml_mul: three f32 roundings; no fusion, the op after the norm
 *                 is a scale);
 *   logits        ggml_mul_mat(ffn_gate_inp, r): a dense matmul, llama.cpp's batch order
 *                 (forward_matmul);
 *   probabilities ggml_soft_max (moe_route);
 *   experts       ggml_mul_mat_id: every expert matrix is multiplied one activation column at
 *                 a time, in the one-column order of its type: ggml's vec_dot for non-repacked
 *                 types and the repacked gemv for Q4_0 / IQ4_NL / Q4_K (repack.cpp's
 *                 forward_mul_mat_id never takes the 4-column gemm), i.e. the kernels' matmul,
 *                 never matmul_grp; except IQ4_XS, whose IQ panel gemm (iqp.cpp) takes an
 *                 expert with >= 8 routed columns (then matmul_grp). llama.cpp counts those
 *                 columns over its whole ubatch; here over the chunk, the same when the chunk
 *                 is the eval (n_ubatch >= prompt);
 *   per expert    y *= scale[e] (ggml_mul after mul_mat_id); GeGLU through the fp16 table on
 *                 gate = first F rows, up = next F (fused) or the two tensors; down;
 *                 out *= down_scale[e]; out *= w_k (ggml_mul with the weights);
 *   sum           ((o_0 + o_1) + o_2) + ... in slot order (the ggml_add chain);
 *   then          RMS(sum, post_ffw_norm_2) + RMS(shared MLP, post_ffw_norm_1).
 * Known difference: llama.cpp takes the IQ4_XS panel gemm when >= 8 of its ubatch's columns
 * go to an expert, in every layer; here the count is over the rows computed in the chunk, and
 * layers from the last KV owner on compute only the rows whose logits are wanted (forward.c),
 * so IQ4_XS experts there (and across chunk boundaries) may round differently (seen: last-
 * logit NMSE 3e-14 on random models). Every other type has a single order and matches.
 * Activation rows are converted to each weight's dot type once per row, as ggml does.
 */
#include "moe.h"

#include <math.h>
#include <string.h>

#include "forward.h"
#include "kern/kern.h"
#include "pool.h"
#include "quant/quant.h"

#define MOE_ROWS 16 /* weight rows per work item: two 8-row kernel tiles */

static inline const float *fv(const g4_tensor *t) { return (const float *)(const void *)t->data; }

/* ==== Router ==== */

/* ref: ops.cpp ggml_compute_forward_soft_max_f32 (scale 1, no mask) with vec.cpp
 * ggml_vec_soft_max_f32: the table's expsum over the first n - n % vec_w cells (ggml_v_expf
 * over blocks of vec_w, each block summed in f32 and added to a double: kern.h), the tail
 * with libm expf, each added to the double; then x *= (float)(1.0 / sum). */
static void router_softmax(const g4_kern *k, float *x, int n) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    const int nb = n - n % k->vec_w;
    for (int i = 0; i < n; i++) x[i] -= max;
    double sum = k->expsum(x, nb, 0);
    for (int i = nb; i < n; i++) {
        x[i] = expf(x[i]);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

void moe_route(const g4_kern *kt, float *p, int n_expert, int k, int32_t *sel, float *wts) {
    router_softmax(kt, p, n_expert);
    /* ref: ggml_argsort_top_k (argsort descending, first k): k passes of a max search; equal
     * probabilities go to the lower index */
    uint8_t taken[1024 / 8] = { 0 }; /* n_expert <= 1024 (model.c) */
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < n_expert; e++) {
            if (taken[e >> 3] >> (e & 7) & 1) continue;
            if (best < 0 || p[e] > p[best]) best = e;
        }
        sel[j] = best;
        taken[best >> 3] = (uint8_t)(taken[best >> 3] | 1u << (best & 7));
    }
    /* ref: build_moe_ffn norm_w: get_rows, ggml_sum_rows (ggml_vec_sum_f32: double), ggml_clamp
     * at 6.103515625e-5, ggml_div */
    double sum = 0.0;
    for (int j = 0; j < k; j++) {
        wts[j] = p[sel[j]];
        sum += (double)wts[j];
    }
    float s = (float)sum;
    s = s < 6.103515625e-5f ? 6.103515625e-5f : s;
    for (int j = 0; j < k; j++) wts[j] = wts[j] / s;
}

/* ==== Parallel pieces ==== */

typedef struct moe_ctx {
    const g4_model *m;
    const g4_layer *l;
    const moe_scratch *sc;
    const float *x1;       /* [n][E] */
    float *y;              /* [n][E] */
    int n, K;
    int dt_g, dt_u, dt_d;  /* dot types of gate (or gate_up), up, down */
    int two;               /* 1 = up's dot type differs from gate's: a second activation copy */
    const moe_entry *ent;
    int n_ent;
} moe_ctx;

/* rows [i0, i1): the router input ((x1 * rms) * 1/sqrt(E)) * ffn_gate_inp.scale */
static void router_in_task(void *vc, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const moe_ctx *c = vc;
    const int64_t E = c->m->cfg.n_embd;
    const float inv = 1.0f / sqrtf((float)E);
    const float *s = fv(c->l->ffn_gate_inp_s);
    for (int64_t t = i0; t < i1; t++) {
        float *r = c->sc->xin + t * E;
        forward_rms_norm(r, c->x1 + t * E, NULL, E, c->m->cfg.rms_eps);
        for (int64_t i = 0; i < E; i++) r[i] = r[i] * inv;
        for (int64_t i = 0; i < E; i++) r[i] = r[i] * s[i];
    }
}

/* rows [i0, i1): softmax, top-k, weights */
static void route_task(void *vc, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const moe_ctx *c = vc;
    const int Ne = c->m->cfg.n_expert, K = c->K;
    for (int64_t t = i0; t < i1; t++)
        moe_route(c->m->kern, c->sc->logits + t * Ne, Ne, K, c->sc->sel + t * K, c->sc->wts + t * K);
}

/* rows [i0, i1): z = RMS(x1, pre_ffw_norm_2), in the dot type(s) of gate and up */
static void expert_in_task(void *vc, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const moe_ctx *c = vc;
    const moe_scratch *sc = c->sc;
    const int64_t E = c->m->cfg.n_embd;
    for (int64_t t = i0; t < i1; t++) {
        float *z = sc->xin + t * E;
        forward_rms_norm(z, c->x1 + t * E, fv(c->l->pre_ffw_norm_2), E, c->m->cfg.rms_eps);
        c->m->kern->quantize_act[c->dt_g](z, sc->xq + (size_t)t * sc->xq_rb, E);
        if (c->two) c->m->kern->quantize_act[c->dt_u](z, sc->xqu + (size_t)t * sc->xq_rb, E);
    }
}

/* grouped rows [i0, i1): copies of their token's activation rows */
static void gather_task(void *vc, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const moe_ctx *c = vc;
    const moe_scratch *sc = c->sc;
    for (int64_t g = i0; g < i1; g++) {
        const size_t t = (size_t)(sc->pair[g] / c->K);
        memcpy(sc->xg + (size_t)g * sc->xq_rb, sc->xq + t * sc->xq_rb, sc->xq_rb);
        if (c->two) memcpy(sc->xgu + (size_t)g * sc->xq_rb, sc->xqu + t * sc->xq_rb, sc->xq_rb);
    }
}

/* work items [i0, i1) of a stage (MOE_ROWS weight rows each): one kernel call per entry the
 * range covers, so a claim's rows of one expert stream as one run (the tiles prefetch the
 * next tile only inside a call) */
static void stage_task(void *vc, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const moe_ctx *c = vc;
    const g4_kern *k = c->m->kern;
    for (int64_t it = i0; it < i1;) {
        int lo = 0, hi = c->n_ent - 1; /* the last entry with item0 <= it */
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (c->ent[mid].item0 <= it) lo = mid; else hi = mid - 1;
        }
        const moe_entry *e = &c->ent[lo];
        const int64_t e_end = e->item0 + (e->n_rows + MOE_ROWS - 1) / MOE_ROWS;
        const int64_t it1 = e_end < i1 ? e_end : i1;
        const int64_t r0 = (it - e->item0) * MOE_ROWS;
        const int64_t r1 = (it1 - e->item0) * MOE_ROWS < e->n_rows ? (it1 - e->item0) * MOE_ROWS : e->n_rows;
        const g4_matmul_fn fn = e->rq ? kern_rq_matmul(k, e->type, k->matmul[e->type])
                                : e->grp ? k->matmul_grp[e->type] : k->matmul[e->type];
        fn(e->y, e->ldy, e->w, e->w_rb, e->xq, e->xq_rb, e->n_in, r0, r1, e->n_tok);
        if (e->scale != 1.0f) /* ref: build_lora_mm_id: ggml_mul(mul_mat_id, scale[e]) */
            for (int t = 0; t < e->n_tok; t++) {
                float *yt = e->y + (size_t)t * e->ldy;
                for (int64_t r = r0; r < r1; r++) yt[r] = yt[r] * e->scale;
            }
        it = it1;
    }
}

/* grouped rows [i0, i1): h = gelu(gate) * up (ggml_geglu_split), in down's dot type */
static void geglu_task(void *vc, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const moe_ctx *c = vc;
    const moe_scratch *sc = c->sc;
    const int64_t F = c->m->cfg.n_ff_exp;
    for (int64_t g = i0; g < i1; g++) {
        float *gate = sc->gu + (size_t)g * 2 * (size_t)F;
        c->m->kern->geglu(gate, gate + F, c->m->gelu_f16, F);
        c->m->kern->quantize_act[c->dt_d](gate, sc->hq + (size_t)g * sc->hq_rb, F);
    }
}

/* rows [i0, i1): the weighted expert sum and the norms, into y */
static void combine_task(void *vc, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const moe_ctx *c = vc;
    const moe_scratch *sc = c->sc;
    const int64_t E = c->m->cfg.n_embd;
    const int K = c->K;
    const float eps = c->m->cfg.rms_eps;
    for (int64_t t = i0; t < i1; t++) {
        const float *w = sc->wts + t * K;
        /* ref: build_moe_ffn: experts = ggml_mul(experts, weights); moe_out = e0 + e1 + ... */
        float *a = sc->eo + (size_t)sc->grow[t * K] * (size_t)E;
        for (int64_t i = 0; i < E; i++) a[i] = a[i] * w[0];
        for (int k = 1; k < K; k++) {
            const float *b = sc->eo + (size_t)sc->grow[t * K + k] * (size_t)E;
            for (int64_t i = 0; i < E; i++) a[i] = a[i] + b[i] * w[k];
        }
        /* ref: gemma4.cpp "ffn_moe" (post_ffw_norm_2), "ffn_mlp" (post_ffw_norm_1), "ffn_moe_combined" */
        float *yt = c->y + t * E;
        forward_rms_norm(a, a, fv(c->l->post_ffw_norm_2), E, eps);
        forward_rms_norm(yt, yt, fv(c->l->post_ffw_norm_1), E, eps);
        for (int64_t i = 0; i < E; i++) yt[i] = yt[i] + a[i];
    }
}

/* ==== The block ==== */

static int dot_of(const g4_tensor *t) { return quant_traits(t->type)->dot_type; }

/* items of MOE_ROWS rows, claimed in shrinking runs (guided) */
static void run_stage(g4_pool *pool, moe_ctx *c, moe_entry *ent, int n_ent) {
    int64_t items = 0;
    for (int i = 0; i < n_ent; i++) {
        ent[i].item0 = items;
        items += (ent[i].n_rows + MOE_ROWS - 1) / MOE_ROWS;
    }
    c->ent = ent;
    c->n_ent = n_ent;
    if (n_ent > 0) pool_for_guided(pool, items, 1, stage_task, c);
}

/* IQ4_XS experts with >= 8 columns take ggml's IQ panel gemm (ggml_cpu_iqp_mul_mat_id_min_batch) */
static int use_grp(const g4_kern *k, const g4_tensor *w, int n_tok) {
    return w->type == G4_TYPE_IQ4_XS && k->matmul_grp[w->type] && n_tok >= 8 && w->ne[1] % 8 == 0 && w->ne[0] % 256 == 0;
}

static moe_entry entry(const g4_kern *k, const g4_tensor *w, int e, const uint8_t *xq, size_t xq_rb, float *y, size_t ldy,
                       int n_tok, const g4_tensor *scale) {
    moe_entry r = {
        .w = w->data + (size_t)e * (size_t)w->ne[1] * w->row_bytes, .w_rb = w->row_bytes, .xq = xq, .xq_rb = xq_rb,
        .y = y, .ldy = ldy, .n_in = w->ne[0], .n_rows = w->ne[1], .type = w->type, .n_tok = n_tok,
        .grp = use_grp(k, w, n_tok), .rq = w->rq, .scale = scale ? fv(scale)[e] : 1.0f,
    };
    return r;
}

void moe_ffn(struct g4_work *w, const g4_layer *l, const float *x1, float *y, int r0, int T) {
    const g4_model *m = w->m;
    const moe_scratch *sc = &w->moe;
    const int Ne = m->cfg.n_expert, K = m->cfg.n_expert_used;
    const int64_t E = m->cfg.n_embd, F = m->cfg.n_ff_exp;
    const g4_tensor *wg = l->ffn_gate_up_exps ? l->ffn_gate_up_exps : l->ffn_gate_exps;
    const int n = T - r0;
    G4_ASSERT(l->moe && n >= 1 && T <= w->n_rows && sc->logits);
    moe_ctx c = {
        .m = m, .l = l, .sc = sc, .x1 = x1, .y = y, .n = n, .K = K,
        .dt_g = dot_of(wg), .dt_u = l->ffn_up_exps ? dot_of(l->ffn_up_exps) : dot_of(wg), .dt_d = dot_of(l->ffn_down_exps),
    };
    c.two = c.dt_u != c.dt_g;
    G4_ASSERT(kern_act_row_bytes(c.dt_g, E) <= sc->xq_rb && kern_act_row_bytes(c.dt_u, E) <= sc->xq_rb &&
              kern_act_row_bytes(c.dt_d, F) <= sc->hq_rb && (!c.two || sc->xqu));
    g4_pool *pool = m->pool;
    const int64_t per = 2 * (int64_t)pool_n_threads(pool);

    /* router: logits [n][Ne] ("ffn_moe_logits"), then probabilities, top-k and weights */
    pool_for(pool, n, (n + per - 1) / per, router_in_task, &c);
    forward_matmul(w, l->ffn_gate_inp, sc->xin, r0, T, sc->logits, (size_t)Ne, 0, Ne, 1.0f);
    pool_for(pool, n, (n + per - 1) / per, route_task, &c);

    /* group the n*K (row, slot) pairs by expert, rows in order within an expert (as
     * ggml_compute_forward_mul_mat_id's matrix_rows) */
    for (int e = 0; e <= Ne; e++) sc->off[e] = 0;
    for (int i = 0; i < n * K; i++) sc->off[sc->sel[i] + 1]++;
    for (int e = 0; e < Ne; e++) {
        sc->off[e + 1] += sc->off[e];
        sc->fill[e] = sc->off[e];
    }
    for (int i = 0; i < n * K; i++) {
        const int g = sc->fill[sc->sel[i]]++;
        sc->grow[i] = g;
        sc->pair[g] = i;
    }
    /* routings per session, layer and expert (g4_session_expert_counts) */
    const size_t il = (size_t)(l - m->layers);
    for (int i = 0; i < n * K; i++) {
        uint64_t *hist = w->sess[r0 + i / K]->moe_hist;
        G4_ASSERT(hist);
        hist[il * (size_t)Ne + (size_t)sc->sel[i]]++;
    }

    /* the experts' input z ("ffn_norm_2") in gate's (and up's) dot type, gathered by expert */
    pool_for(pool, n, (n + per - 1) / per, expert_in_task, &c);
    const int64_t G = (int64_t)n * K;
    pool_for(pool, G, (G + per - 1) / per, gather_task, &c);

    /* stage 1: gate and up of every routed expert ("ffn_moe_gate_up" / "ffn_moe_gate", "ffn_moe_up") */
    moe_entry *ent = sc->ent;
    int ne = 0;
    for (int e = 0; e < Ne; e++) {
        const int c0 = sc->off[e], cn = sc->off[e + 1] - c0;
        if (cn == 0) continue;
        float *gu = sc->gu + (size_t)c0 * 2 * (size_t)F;
        const uint8_t *xg = sc->xg + (size_t)c0 * sc->xq_rb;
        if (l->ffn_gate_up_exps) {
            ent[ne++] = entry(m->kern, l->ffn_gate_up_exps, e, xg, sc->xq_rb, gu, 2 * (size_t)F, cn, NULL);
        } else {
            ent[ne++] = entry(m->kern, l->ffn_gate_exps, e, xg, sc->xq_rb, gu, 2 * (size_t)F, cn, l->gate_exps_s);
            const uint8_t *xu = c.two ? sc->xgu + (size_t)c0 * sc->xq_rb : xg;
            ent[ne++] = entry(m->kern, l->ffn_up_exps, e, xu, sc->xq_rb, gu + F, 2 * (size_t)F, cn, l->up_exps_s);
        }
    }
    run_stage(pool, &c, ent, ne);

    /* GeGLU ("ffn_moe_geglu") and down's activation rows */
    pool_for(pool, G, (G + per - 1) / per, geglu_task, &c);

    /* stage 2: down ("ffn_moe_down", "ffn_moe_down_scaled") */
    ne = 0;
    for (int e = 0; e < Ne; e++) {
        const int c0 = sc->off[e], cn = sc->off[e + 1] - c0;
        if (cn == 0) continue;
        ent[ne++] = entry(m->kern, l->ffn_down_exps, e, sc->hq + (size_t)c0 * sc->hq_rb, sc->hq_rb,
                          sc->eo + (size_t)c0 * (size_t)E, (size_t)E, cn, l->down_exps_s);
    }
    run_stage(pool, &c, ent, ne);

    /* weighted sum, post_ffw_norm_2, plus the shared MLP after post_ffw_norm_1 */
    pool_for(pool, n, (n + per - 1) / per, combine_task, &c);
}

/* ==== Scratch plan ==== */

static size_t act_rb(const g4_tensor *w, int64_t n) {
    return w ? kern_act_row_bytes(quant_traits(w->type)->dot_type, n) : 0;
}

int moe_plan(const g4_model *m, int32_t n_rows, uint64_t need[MOE_N_BUFS]) {
    const g4_config *c = &m->cfg;
    for (int i = 0; i < MOE_N_BUFS; i++) need[i] = 0;
    if (c->n_layer_moe == 0) return 0;
    const uint64_t U = (uint64_t)n_rows, K = (uint64_t)c->n_expert_used, Ne = (uint64_t)c->n_expert;
    const uint64_t E = (uint64_t)c->n_embd, F = (uint64_t)c->n_ff_exp;
    size_t xq_rb = 0, hq_rb = 0;
    int two = 0;
    for (int i = 0; i < c->n_layer; i++) {
        const g4_layer *l = &m->layers[i];
        if (!l->moe) continue;
        const g4_tensor *wg = l->ffn_gate_up_exps ? l->ffn_gate_up_exps : l->ffn_gate_exps;
        size_t a = act_rb(wg, (int64_t)E), b = act_rb(l->ffn_up_exps, (int64_t)E), d = act_rb(l->ffn_down_exps, (int64_t)F);
        if (a > xq_rb) xq_rb = a;
        if (b > xq_rb) xq_rb = b;
        if (d > hq_rb) hq_rb = d;
        if (l->ffn_up_exps && quant_traits(l->ffn_up_exps->type)->dot_type != quant_traits(wg->type)->dot_type) two = 1;
    }
    /* products of values bounded by the loader (U <= 2^30, E, F <= 2^20, Ne <= 1024): no
     * overflow in 64 bits; work_plan checks the sum */
    const uint64_t UK = U * K;
    need[0] = U * Ne * 4;            /* logits */
    need[1] = UK * 4;                /* sel */
    need[2] = UK * 4;                /* wts */
    need[3] = (Ne + 1) * 4;          /* off */
    need[4] = Ne * 4;                /* fill */
    need[5] = UK * 4;                /* grow */
    need[6] = UK * 4;                /* pair */
    need[7] = U * E * 4;             /* xin */
    need[8] = U * xq_rb;             /* xq */
    need[9] = two ? U * xq_rb : 0;   /* xqu */
    need[10] = UK * xq_rb;           /* xg */
    need[11] = two ? UK * xq_rb : 0; /* xgu */
    need[12] = UK * 2 * F * 4;       /* gu */
    need[13] = UK * hq_rb;           /* hq */
    need[14] = UK * E * 4;           /* eo */
    need[15] = 2 * Ne * sizeof(moe_entry); /* ent */
    return MOE_N_BUFS;
}

void moe_bind(moe_scratch *sc, const g4_model *m, uint8_t *const b[MOE_N_BUFS]) {
    const g4_config *c = &m->cfg;
    memset(sc, 0, sizeof *sc);
    if (c->n_layer_moe == 0) return;
    uint64_t need[MOE_N_BUFS];
    moe_plan(m, 1, need); /* row sizes do not depend on n_rows */
    sc->logits = (float *)(void *)b[0];
    sc->sel = (int32_t *)(void *)b[1];
    sc->wts = (float *)(void *)b[2];
    sc->off = (int32_t *)(void *)b[3];
    sc->fill = (int32_t *)(void *)b[4];
    sc->grow = (int32_t *)(void *)b[5];
    sc->pair = (int32_t *)(void *)b[6];
    sc->xin = (float *)(void *)b[7];
    sc->xq = b[8];
    sc->xqu = b[9];
    sc->xg = b[10];
    sc->xgu = b[11];
    sc->gu = (float *)(void *)b[12];
    sc->hq = b[13];
    sc->eo = (float *)(void *)b[14];
    sc->ent = (moe_entry *)(void *)b[15];
    sc->xq_rb = (size_t)need[8];
    sc->hq_rb = (size_t)(need[13] / (uint64_t)c->n_expert_used);
}
