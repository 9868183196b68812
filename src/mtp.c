/* mtp.c - the Gemma 4 assistant's forward pass (multi-token prediction) and its draft chain.
 *
 * Owns: one draft step as llama.cpp v0.5.0 computes it (src/models/gemma4-assistant.cpp,
 * gemma4-architecture.md §4.9), the scratch of those steps (one row), llama.cpp's draft-mtp
 * chain rule (common/speculative.cpp common_speculative_impl_draft_mtp::draft with a memory-
 * sharing assistant: every step at the same position, the top token of a top-10 sampler,
 * p_min on its probability).
 * Does not own: the decoder layer (forward.c forward_layer, attention.c), which it runs with
 * the assistant as the work's model: its layers own no KV and attend, with attn_prev, to the
 * target session's cache (positions < pos: the token being drafted from is not in it).
 *
 * One step for token t at position p with the target's hidden state h (E values):
 *   x = target.token_embd[t] * sqrt(E)                        "inp_embd_target"
 *   cur = nextn_proj_pre . [x, h]                             "inp_xh", "pre_proj"
 *   4 x decoder layer (q only; K/V of target layers L-2 / L-1) "out_scaled"
 *   cur = RMS(cur, output_norm)                               "result_norm"
 *   logits = token_embd . cur (no soft-cap)                   "result_output"
 *   h' = nextn_proj_post . cur                                "h_nextn"
 * Every matmul is one column (llama.cpp decodes each draft step as a one-token ubatch).
 * No allocation after mtp_create.
 */
#include <math.h>
#include <string.h>

#include "kern/kern.h"
#include "quant/quant.h"
#include "quant/quant_ref.h"
#include "spec.h"

struct mtp_state {
    const g4_assistant *a;
    g4_session *t;          /* the target session whose cache the layers read */
    g4_work     w;          /* one row of the assistant's widths */
    float      *xh;         /* [2E] target embedding (scaled), then h */
    float      *hb;         /* [2][E] hidden states of the chain (ping-pong) */
    uint8_t    *arena;      /* 64-byte aligned */
    void       *arena_raw;
    size_t      arena_bytes;
};

static size_t act_rb(const g4_tensor *w) { return kern_act_row_bytes(quant_traits(w->type)->dot_type, w->ne[0]); }

g4_status mtp_create(mtp_state **out, const g4_assistant *a, g4_session *target, char *err, size_t errlen) {
    *out = NULL;
    const g4_model *m = &a->base;
    const g4_allocator *al = &target->m->al;
    const uint64_t E = (uint64_t)a->n_embd_out;
    g4_plan p = {0, 0};
    g4_work_plan wp;
    work_plan(&p, m, 1, 1, &wp);
    size_t act = wp.act_row_max, r;
    if ((r = act_rb(a->proj_pre)) > act) act = r;
    if ((r = act_rb(a->proj_post)) > act) act = r;
    const uint64_t off_act = plan_take(&p, 1, act);
    const uint64_t off_xh = plan_take(&p, 2 * E, 4);
    const uint64_t off_hb = plan_take(&p, 2 * E, 4);
    if (p.ovf || p.off > SIZE_MAX) return g4_errf(G4_ERR_NOMEM, err, errlen, "assistant scratch does not fit in size_t");
    mtp_state *st = g4_calloc(al, 1, sizeof *st);
    void *raw = NULL;
    uint8_t *arena = st ? g4_malloc_al64(al, (size_t)p.off, &raw) : NULL;
    if (!arena) {
        g4_free(al, st, sizeof *st);
        return g4_errf(G4_ERR_NOMEM, err, errlen, "out of memory (assistant scratch, %.1f MiB)", (double)p.off / 1048576.0);
    }
    st->a = a;
    st->t = target;
    st->arena = arena;
    st->arena_raw = raw;
    st->arena_bytes = (size_t)p.off;
    work_bind(&st->w, m, arena, &wp);
    st->w.act = arena + off_act;
    st->w.act_row_max = act;
    st->w.attn_prev = 1;
    st->xh = (float *)(void *)(arena + off_xh);
    st->hb = (float *)(void *)(arena + off_hb);
    *out = st;
    return G4_OK;
}

void mtp_free(mtp_state *st) {
    if (!st) return;
    const g4_allocator al = st->t->m->al;
    g4_free_al64(&al, st->arena_raw, st->arena_bytes);
    g4_free(&al, st, sizeof *st);
}

const float *mtp_step(mtp_state *st, int32_t tok, int32_t pos, const float *h_in, float *h_out) {
    const g4_assistant *a = st->a;
    const g4_model *m = &a->base, *tm = a->target;
    g4_work *w = &st->w;
    const int64_t E = a->n_embd_out, n = m->cfg.n_embd, V = m->cfg.n_vocab;
    G4_ASSERT(pos >= 1 && pos <= st->t->n_past && tok >= 0 && tok < V);

    /* ref: gemma4-assistant.cpp: x = get_rows(target tok_embd, tokens) * sqrtf(n_embd_backbone),
     * concat(x, inp_h) along the row, mul_mat(nextn_proj_pre, xh) */
    const g4_tensor *te = tm->token_embd;
    model_row_f32(te, tok, st->xh); /* E columns: the assistant checked it against the target */
    const float sc = sqrtf((float)E);
    for (int64_t i = 0; i < E; i++) st->xh[i] *= sc;
    memcpy(st->xh + E, h_in, (size_t)E * sizeof(float));

    w->T = 1;
    w->r0 = 0;
    w->tok[0] = tok;
    w->pos[0] = pos;
    w->sess[0] = st->t;
    w->col[0] = 0;
    w->seq_n[0] = 1;
    w->ocol[0] = 0;
    w->odst[0] = NULL;
    w->hdst[0] = NULL;
    w->batch_n = 1;
    w->n_outputs = 1;
    forward_matmul(w, a->proj_pre, st->xh, 0, 1, w->inpL, (size_t)n, 0, n, 1.0f);

    /* the layers: attn_norm, q, q_norm, RoPE, attention over the target's cache, attn_output,
     * post norm + residual, ffn_norm, GeGLU FFN, post norm + residual, layer_output_scale */
    for (int il = 0; il < m->cfg.n_layer; il++) forward_layer(w, il, 0, 0, 1);

    /* ref: "result_norm", build_lora_mm(output = tok_embd), "h_nextn" = mul_mat(nextn_proj_post, cur) */
    forward_rms_norm(w->cur, w->inpL, (const float *)(const void *)m->output_norm->data, n, m->cfg.rms_eps);
    forward_matmul(w, m->token_embd, w->cur, 0, 1, w->logits, (size_t)V, 0, V, 1.0f);
    forward_matmul(w, a->proj_post, w->cur, 0, 1, h_out, (size_t)E, 0, E, 1.0f);
    return w->logits;
}

/* The top token of logits (lowest id on ties; suppressed tokens and non-finite values never)
 * and, when p needed, its probability under llama.cpp's draft sampler: top_k(10) then dist,
 * i.e. expf(l - max) over the 10 best summed in double (llama_sampler_dist_apply), p = 1/sum.
 * Returns -1 when no logit is usable. */
static int32_t top_token(const mtp_state *st, const float *logits, int want_p, float *p_out) {
    const g4_assistant *a = st->a;
    const int32_t V = a->base.cfg.n_vocab;
    float top[10];
    int nt = 0;
    int32_t best = -1;
    for (int32_t i = 0; i < V; i++) {
        const float l = logits[i];
        if (!isfinite(l)) continue;
        int sup = 0; /* the suppress list is short and unsorted */
        for (size_t si = 0; si < a->n_suppress; si++)
            if (a->suppress[si] == i) { sup = 1; break; }
        if (sup) continue;
        if (best < 0 || l > logits[best]) best = i;
        if (!want_p) continue;
        if (nt < 10) { /* keep the 10 largest, smallest first */
            int j = nt++;
            while (j > 0 && top[j - 1] > l) { top[j] = top[j - 1]; j--; }
            top[j] = l;
        } else if (l > top[0]) {
            int j = 0;
            while (j + 1 < 10 && top[j + 1] < l) { top[j] = top[j + 1]; j++; }
            top[j] = l;
        }
    }
    if (best >= 0 && want_p) {
        const float mx = top[nt - 1];
        double sum = 0.0;
        for (int j = 0; j < nt; j++) sum += (double)expf(top[j] - mx);
        *p_out = (float)(1.0 / sum);
    }
    return best;
}

size_t mtp_draft(mtp_state *st, const float *h, int32_t last, int32_t pos, float p_min, int32_t *draft, size_t max) {
    const int64_t E = st->a->n_embd_out;
    const float *hin = h;
    int32_t tok = last;
    size_t k = 0;
    for (size_t i = 0; i < max; i++) {
        float *hout = st->hb + (size_t)(i % 2) * (size_t)E;
        const float *lg = mtp_step(st, tok, pos, hin, hout);
        float p = 1.0f;
        const int32_t id = top_token(st, lg, p_min > 0.0f, &p);
        if (id < 0 || p < p_min) break; /* ref: "only collect very high-confidence draft tokens" */
        draft[k++] = id;
        tok = id;
        hin = hout;
    }
    return k;
}
