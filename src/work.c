/* work.c - the memory plan of a g4_work (the rows scratch of one forward chunk), shared by
 * sessions (their own work for g4_session_eval) and batches (one work for many sessions).
 *
 * Owns: the widths every row buffer needs for a model (largest head, FFN, activation row in
 * any weight's dot type), checked arithmetic of the plan, binding a plan to its arena.
 * Does not own: the arena itself (session.c, batch.c allocate it once).
 */
#include "forward.h"

#include "kern/kern.h"
#include "pool.h"
#include "quant/quant.h"

#define ARENA_ALIGN 64u

uint64_t plan_take(g4_plan *p, uint64_t n, uint64_t size) {
    uint64_t bytes, start, end;
    if (g4_mul_ovf(n, size, &bytes) || g4_add_ovf(p->off, ARENA_ALIGN - 1, &start)) { p->ovf = 1; return 0; }
    start &= ~(uint64_t)(ARENA_ALIGN - 1);
    if (g4_add_ovf(start, bytes, &end)) { p->ovf = 1; return 0; }
    p->off = end;
    return start;
}

static size_t act_rb(const g4_tensor *w) {
    return w ? kern_act_row_bytes(quant_traits(w->type)->dot_type, w->ne[0]) : 0;
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

void work_plan(g4_plan *p, const g4_model *m, int32_t n_rows, int32_t n_out_rows, g4_work_plan *wp) {
    const g4_config *c = &m->cfg;
    const int L = c->n_layer;
    int64_t hd_max = 0, q_max = 0, kv_max = 0, ff_max = 0;
    size_t act_max = max_sz(act_rb(m->output ? m->output : m->token_embd), act_rb(m->per_layer_model_proj));
    for (int i = 0; i < L; i++) {
        const g4_layer *l = &m->layers[i];
        const int64_t hd = l->head_dim;
        if (hd > hd_max) hd_max = hd;
        if (hd * l->n_head > q_max) q_max = hd * l->n_head;
        if (hd * l->n_head_kv > kv_max) kv_max = hd * l->n_head_kv;
        if (l->n_ff > ff_max) ff_max = l->n_ff;
        const g4_tensor *ws[] = { l->attn_q, l->has_kv ? l->attn_k : NULL, l->has_kv ? l->attn_v : NULL,
                                  l->attn_output, l->ffn_gate, l->ffn_up, l->ffn_down, l->inp_gate, l->proj };
        for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) act_max = max_sz(act_max, act_rb(ws[k]));
    }
    const uint64_t E = (uint64_t)c->n_embd, LP = (uint64_t)L * (uint64_t)c->n_embd_per_layer;
    const uint64_t U = (uint64_t)n_rows, O = (uint64_t)n_out_rows;
    uint64_t logit_elems;
    if (g4_mul_ovf(O, (uint64_t)c->n_vocab, &logit_elems)) p->ovf = 1;
    wp->inpL = plan_take(p, U * E, 4);
    wp->cur = plan_take(p, U * E, 4);
    wp->q = plan_take(p, U * (uint64_t)q_max, 4);
    wp->kc = plan_take(p, U * (uint64_t)kv_max, 4);
    wp->vc = plan_take(p, U * (uint64_t)kv_max, 4);
    wp->kqv = plan_take(p, U * (uint64_t)q_max, 4);
    wp->gate = plan_take(p, U * (uint64_t)ff_max, 4);
    wp->up = plan_take(p, U * (uint64_t)ff_max, 4);
    wp->pe = plan_take(p, U * (uint64_t)c->n_embd_per_layer, 4);
    wp->ipl = plan_take(p, U * LP, 4);
    wp->plp = plan_take(p, U * LP, 4);
    wp->rope = plan_take(p, U * (uint64_t)hd_max, 4);
    wp->act = plan_take(p, U, act_max);
    wp->logits = n_out_rows ? plan_take(p, logit_elems, 4) : 0;
    wp->tok = plan_take(p, U, 4);
    wp->pos = plan_take(p, U, 4);
    wp->sess = plan_take(p, U, sizeof(g4_session *));
    wp->col = plan_take(p, U, 4);
    wp->seq_n = plan_take(p, U, 4);
    wp->ocol = plan_take(p, U, 4);
    wp->odst = plan_take(p, U, sizeof(float *));
    wp->act_row_max = act_max;
    wp->head_dim_max = (int32_t)hd_max;
    wp->n_rows = n_rows;
    wp->n_out_rows = n_out_rows;
}

void work_bind(g4_work *w, const g4_model *m, uint8_t *base, const g4_work_plan *wp) {
    *w = (g4_work){
        .m = m,
        .n_threads = pool_n_threads(m->pool),
        .n_rows = wp->n_rows,
        .n_out_rows = wp->n_out_rows,
        .inpL = (float *)(void *)(base + wp->inpL),
        .cur = (float *)(void *)(base + wp->cur),
        .Qcur = (float *)(void *)(base + wp->q),
        .Kcur = (float *)(void *)(base + wp->kc),
        .Vcur = (float *)(void *)(base + wp->vc),
        .kqv_out = (float *)(void *)(base + wp->kqv),
        .ffn_gate = (float *)(void *)(base + wp->gate),
        .ffn_up = (float *)(void *)(base + wp->up),
        .pe = (float *)(void *)(base + wp->pe),
        .inp_per_layer = (float *)(void *)(base + wp->ipl),
        .pl_proj = (float *)(void *)(base + wp->plp),
        .rope_cs = (float *)(void *)(base + wp->rope),
        .act = base + wp->act,
        .act_row_max = wp->act_row_max,
        .head_dim_max = wp->head_dim_max,
        .logits = wp->n_out_rows ? (float *)(void *)(base + wp->logits) : NULL,
        .tok = (int32_t *)(void *)(base + wp->tok),
        .pos = (int32_t *)(void *)(base + wp->pos),
        .sess = (g4_session **)(void *)(base + wp->sess),
        .col = (int32_t *)(void *)(base + wp->col),
        .seq_n = (int32_t *)(void *)(base + wp->seq_n),
        .ocol = (int32_t *)(void *)(base + wp->ocol),
        .odst = (float **)(void *)(base + wp->odst),
    };
}
