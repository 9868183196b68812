/* ple.c - per-layer embeddings (PLE) of Gemma 4 E2B/E4B: the per-layer inputs computed once
 * per chunk before layer 0 (gemma4-architecture.md §4.2) and the PLE block at the end of each
 * layer (§4.3 step 13). Everything here is a no-op when n_embd_per_layer (P) is 0.
 *
 * Owns: inp_per_layer [n_rows][n_layer][P] and pl_proj (same shape) in the work.
 * Rows that need no logits only ever reach layers < S (forward.c), so for them only the
 * slices 0..S-1 of the context projection are computed.
 */
#include "forward.h"

#include <math.h>

#include "quant/quant_ref.h"

static inline const float *fvec(const g4_tensor *t) { return (const float *)(const void *)t->data; }

/* ref: gemma4.cpp build_inp_per_layer ("inp_per_layer_selected": get_rows, scale sqrtf(P))
 * and project_per_layer_inputs ("per_layer_proj": mul_mat on inp_scaled, scale 1/sqrtf(E),
 * RMS per P-slice with per_layer_proj_norm; "inp_per_layer": add, scale 1/sqrtf(2)). */
void ple_inputs(g4_work *w, int r0, int T) {
    const g4_model *m = w->m;
    const int64_t P = m->cfg.n_embd_per_layer, L = m->cfg.n_layer, S = m->cfg.n_layer_kv;
    const int64_t E = m->cfg.n_embd, LP = L * P;
    if (P == 0) return;
    const g4_tensor *te = m->per_layer_token_embd, *pmp = m->per_layer_model_proj;
    const float tok_scale = sqrtf((float)P);
    const float proj_scale = 1.0f / sqrtf((float)E);
    const float inp_scale = 1.0f / sqrtf(2.0f);

    /* context part: slices [0, S) for every row, [S, L) for the output rows */
    forward_matmul(w, pmp, w->inpL, 0, T, w->pl_proj, (size_t)LP, 0, S * P, 1.0f);
    if (S < L && r0 < T)
        forward_matmul(w, pmp, w->inpL + (size_t)r0 * (size_t)E, r0, T, w->pl_proj + (size_t)r0 * (size_t)LP,
                       (size_t)LP, S * P, LP, 1.0f);

    for (int t = 0; t < T; t++) {
        float *ipl = w->inp_per_layer + (size_t)t * (size_t)LP; /* [L][P] */
        float *pp = w->pl_proj + (size_t)t * (size_t)LP;         /* [L][P] */
        const int64_t n_slices = t >= r0 ? L : S;
        /* token part: a row lookup (plain dequantization) */
        quant_dequant_row(te->type, te->data + (size_t)w->tok[t] * te->row_bytes, ipl, LP);
        for (int64_t i = 0; i < n_slices * P; i++) pp[i] *= proj_scale;
        forward_rms_norm_n(pp, (size_t)P, pp, (size_t)P, (int)n_slices, P, fvec(m->per_layer_proj_norm), m->cfg.rms_eps);
        for (int64_t i = 0; i < n_slices * P; i++) {
            const float tp = ipl[i] * tok_scale; /* own statement: no FMA contraction */
            ipl[i] = (pp[i] + tp) * inp_scale;
        }
    }
}

/* ref: gemma4.cpp "pe_in" -> build_lora_mm(per_layer_inp_gate) -> ggml_gelu -> ggml_mul with
 * the layer's slice of inp_per_layer -> build_lora_mm(per_layer_proj) -> build_norm
 * (per_layer_post_norm) "per_layer_embd_out" -> ggml_add(pe_in, cur). */
void ple_block(g4_work *w, int il, int r0, int T) {
    const g4_model *m = w->m;
    const int64_t P = m->cfg.n_embd_per_layer, E = m->cfg.n_embd, LP = m->cfg.n_layer * P;
    if (P == 0 || r0 >= T) return;
    const g4_layer *l = &m->layers[il];
    const int n = T - r0;
    const uint16_t *tab = m->gelu_f16;
    float *x = w->inpL + (size_t)r0 * (size_t)E;
    float *y = w->cur + (size_t)r0 * (size_t)E;

    forward_matmul(w, l->inp_gate, x, r0, T, w->pe, (size_t)P, 0, P, 1.0f); /* [n][P] */
    for (int k = 0; k < n; k++) {
        float *g = w->pe + (size_t)k * (size_t)P;
        const float *sl = w->inp_per_layer + (size_t)(r0 + k) * (size_t)LP + (size_t)il * (size_t)P;
        for (int64_t i = 0; i < P; i++) g[i] = forward_gelu(tab, g[i]) * sl[i];
    }
    forward_matmul(w, l->proj, w->pe, r0, T, y, (size_t)E, 0, E, 1.0f); /* [n][E] */
    forward_rms_norm_n(y, (size_t)E, y, (size_t)E, n, E, fvec(l->post_norm), m->cfg.rms_eps);
    for (int64_t i = 0; i < (int64_t)n * E; i++) x[i] = x[i] + y[i];
}
