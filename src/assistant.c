/* assistant.c - g4_assistant_open: a gemma4-assistant GGUF (the Gemma 4 multi-token-prediction
 * draft model), validated on its own and against the target it drafts for.
 *
 * Owns: the assistant's keys and tensors (llama.cpp v0.5.0 src/models/gemma4-assistant.cpp
 * load_arch_hparams / load_arch_tensors, and the generic load_hparams it relies on), the
 * pairing rules with the target (gemma4-architecture.md §4.9), and the g4_model view of the
 * assistant that lets the decoder-layer code run it (spec.h struct g4_assistant).
 * Does not own: the forward pass (mtp.c), the draft loop (spec.c).
 *
 * Pairing rules, each a one-line error naming the file and both values:
 *  - embedding_length_out = the target's embedding_length (llama.cpp: the target h_nextn
 *    width), and it differs from the assistant's own embedding_length (llama.cpp throws);
 *  - nextn_predict_layers = block_count (every layer is a draft layer: llama.cpp runs
 *    n_layer_nextn layers);
 *  - its layers read the caches of target layer L-2 (sliding) and L-1 (full) (llama.cpp's
 *    share callback): those must be sliding and full, with the assistant layer's head size
 *    and KV head count;
 *  - its sliding window is 2 .. the target's (the target's rings hold that many positions);
 *  - its vocabulary (token_embd rows, tokenizer.ggml.tokens when present) is the target's;
 *  - query heads per KV head at most the target's largest (the target session's attention
 *    scratch is sized for those).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "quant/quant.h"
#include "spec.h"
#include "tokenizer.h"

#define A_MAX_LAYERS 64
#define A_MAX_EMBD   65536
#define A_MAX_HEADS  1024
#define A_MAX_HD     4096
#define A_MAX_FF     (1 << 20)
#define A_PFX        "gemma4-assistant."

typedef struct aload {
    g4_assistant *a;
    gguf_file    *f;
    const char   *fname;
    char         *err;
    size_t        errlen;
    size_t        n_views;
    uint8_t      *used;     /* [n_tensors] */
    size_t       *vec_off;  /* [n_tensors] float offset into f32 of a vector view, or SIZE_MAX */
    float        *f32;      /* copies of the f32 vectors */
    size_t        f32_len, f32_cap;
} aload;

G4_PRINTF(3, 4)
static g4_status aerr(aload *ld, g4_status st, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return g4_errf(st, ld->err, ld->errlen, "%s: %s", ld->fname, msg);
}

/* ==== Keys ==== */

static g4_status key_u32(aload *ld, const char *k, int req, uint32_t *v, uint32_t lo, uint32_t hi) {
    char key[96];
    snprintf(key, sizeof key, A_PFX "%s", k);
    int found = 0;
    g4_status st = gguf_get_u32(ld->f, key, req, v, &found, ld->err, ld->errlen);
    if (st) return st;
    if (found && (*v < lo || *v > hi)) return aerr(ld, G4_ERR_FORMAT, "key '%s' is %u, expected %u to %u", key, *v, lo, hi);
    return G4_OK;
}

static g4_status key_f32(aload *ld, const char *k, int req, float *v, int allow_zero) {
    char key[96];
    snprintf(key, sizeof key, A_PFX "%s", k);
    int found = 0;
    g4_status st = gguf_get_f32(ld->f, key, req, v, &found, ld->err, ld->errlen);
    if (st) return st;
    if (found && (!isfinite(*v) || *v < 0 || (!allow_zero && *v == 0)))
        return aerr(ld, G4_ERR_FORMAT, "key '%s' is %g, expected a finite positive number", key, (double)*v);
    return G4_OK;
}

/* per-layer u32 key: scalar or an array of L entries, each in [lo, hi] */
static g4_status key_arr(aload *ld, const char *k, int req, uint32_t L, uint32_t *v, uint32_t lo, uint32_t hi) {
    char key[96];
    snprintf(key, sizeof key, A_PFX "%s", k);
    g4_status st = gguf_get_u32_or_arr(ld->f, key, req, L, v, NULL, ld->err, ld->errlen);
    if (st) return st;
    for (uint32_t i = 0; i < L; i++)
        if (v[i] < lo || v[i] > hi) return aerr(ld, G4_ERR_FORMAT, "key '%s': layer %u is %u, expected %u to %u", key, i, v[i], lo, hi);
    return G4_OK;
}

static g4_status load_hparams(aload *ld) {
    g4_assistant *a = ld->a;
    g4_model *m = &a->base;
    const g4_model *t = a->target;
    g4_config *c = &m->cfg;
    g4_status st;
    uint32_t L = 0, nl = 0, ctx = 0, n = 0, e_out = 0, win = 0, kl = 0, vl = 0, kls = 0, vls = 0;
    float eps = 0;
#define TRY(x) do { if ((st = (x)) != G4_OK) return st; } while (0)
    TRY(key_u32(ld, "block_count", 1, &L, 1, A_MAX_LAYERS));
    TRY(key_u32(ld, "nextn_predict_layers", 1, &nl, 0, A_MAX_LAYERS));
    if (nl != L)
        return aerr(ld, G4_ERR_FORMAT, "key '" A_PFX "nextn_predict_layers' is %u, expected block_count %u (every assistant layer drafts)", nl, L);
    TRY(key_u32(ld, "context_length", 1, &ctx, 1, 1u << 24));
    TRY(key_u32(ld, "embedding_length", 1, &n, 1, A_MAX_EMBD));
    TRY(key_u32(ld, "embedding_length_out", 1, &e_out, 1, A_MAX_EMBD));
    if (e_out != (uint32_t)t->cfg.n_embd)
        return aerr(ld, G4_ERR_FORMAT, "key '" A_PFX "embedding_length_out' is %u, but the target's embedding_length is %d",
                    e_out, (int)t->cfg.n_embd);
    if (e_out == n)
        return aerr(ld, G4_ERR_FORMAT, "key '" A_PFX "embedding_length_out' %u equals embedding_length: it must carry the target's hidden size", e_out);
    TRY(key_u32(ld, "attention.sliding_window", 1, &win, 2, ctx));
    if ((int32_t)win > t->cfg.n_swa)
        return aerr(ld, G4_ERR_UNSUPPORTED, "sliding window %u is larger than the target's %d (its caches hold only that)", win,
                    (int)t->cfg.n_swa);
    TRY(key_f32(ld, "attention.layer_norm_rms_epsilon", 1, &eps, 0));
    if (eps >= 1) return aerr(ld, G4_ERR_FORMAT, "key '" A_PFX "attention.layer_norm_rms_epsilon' is %g, expected < 1", (double)eps);
    const gguf_kv *rs = gguf_find(ld->f, A_PFX "rope.scaling.type");
    if (rs && !(rs->type == GGUF_STRING && (strcmp(rs->str, "none") == 0 || strcmp(rs->str, "linear") == 0)))
        return aerr(ld, G4_ERR_UNSUPPORTED, "key '" A_PFX "rope.scaling.type': only none/linear (factor 1) are supported");
    float rsf = 1.0f;
    TRY(gguf_get_f32(ld->f, A_PFX "rope.scaling.factor", 0, &rsf, NULL, ld->err, ld->errlen));
    if (rsf != 1.0f && rsf != 0.0f)
        return aerr(ld, G4_ERR_UNSUPPORTED, "key '" A_PFX "rope.scaling.factor' is %g: RoPE scaling is not supported", (double)rsf);

    /* per-layer values */
    uint32_t ff[A_MAX_LAYERS], nh[A_MAX_LAYERS], nkv[A_MAX_LAYERS];
    int swa[A_MAX_LAYERS];
    TRY(key_arr(ld, "feed_forward_length", 1, L, ff, 1, A_MAX_FF));
    TRY(key_arr(ld, "attention.head_count", 1, L, nh, 1, A_MAX_HEADS));
    memcpy(nkv, nh, sizeof nkv);
    TRY(key_arr(ld, "attention.head_count_kv", 0, L, nkv, 1, A_MAX_HEADS));
    const gguf_kv *pat;
    TRY(gguf_get_arr(ld->f, A_PFX "attention.sliding_window_pattern", 1,
                     (1u << GGUF_BOOL) | (1u << GGUF_UINT32) | (1u << GGUF_INT32), &pat, NULL, ld->err, ld->errlen));
    if (pat->n != L)
        return aerr(ld, G4_ERR_FORMAT, "key '" A_PFX "attention.sliding_window_pattern' has %llu entries, expected %u (one per layer)",
                    (unsigned long long)pat->n, L);
    const uint8_t *pa = pat->arr;
    for (uint32_t i = 0; i < L; i++)
        swa[i] = pat->arr_type == GGUF_BOOL ? pa[i] != 0 : (pa[4 * i] | pa[4 * i + 1] | pa[4 * i + 2] | pa[4 * i + 3]) != 0;

    TRY(key_u32(ld, "attention.key_length", 1, &kl, 2, A_MAX_HD));
    TRY(key_u32(ld, "attention.value_length", 1, &vl, 2, A_MAX_HD));
    TRY(key_u32(ld, "attention.key_length_swa", 1, &kls, 2, A_MAX_HD));
    TRY(key_u32(ld, "attention.value_length_swa", 1, &vls, 2, A_MAX_HD));
    if (kl != vl) return aerr(ld, G4_ERR_FORMAT, "key_length %u and value_length %u differ (the assistant needs them equal)", kl, vl);
    if (kls != vls)
        return aerr(ld, G4_ERR_FORMAT, "key_length_swa %u and value_length_swa %u differ (the assistant needs them equal)", kls, vls);
    uint32_t nrot = kl, nrot_swa;
    TRY(key_u32(ld, "rope.dimension_count", 0, &nrot, 0, A_MAX_HD));
    nrot_swa = nrot; /* llama.cpp: the sliding default is the full-layer value */
    TRY(key_u32(ld, "rope.dimension_count_swa", 0, &nrot_swa, 0, A_MAX_HD));
    if (nrot == 0 || nrot % 2 || nrot > kl)
        return aerr(ld, G4_ERR_FORMAT, "key '" A_PFX "rope.dimension_count' is %u, must be even and 2 to key_length %u", nrot, kl);
    if (nrot_swa == 0 || nrot_swa % 2 || nrot_swa > kls)
        return aerr(ld, G4_ERR_FORMAT, "key '" A_PFX "rope.dimension_count_swa' is %u, must be even and 2 to key_length_swa %u",
                    nrot_swa, kls);
    float base = 10000.0f, base_swa = 10000.0f;
    TRY(key_f32(ld, "rope.freq_base", 0, &base, 0));
    TRY(key_f32(ld, "rope.freq_base_swa", 0, &base_swa, 0));

    /* the target layers whose caches the assistant reads (llama.cpp's share callback) */
    const int TL = t->cfg.n_layer;
    if (TL < 2 || !t->layers[TL - 2].swa || t->layers[TL - 1].swa)
        return aerr(ld, G4_ERR_UNSUPPORTED, "the target's layers %d and %d must be sliding and full (the assistant reads their caches)",
                    TL - 2, TL - 1);
    int gqa_max = 1;
    for (int i = 0; i < TL; i++)
        if (t->layers[i].n_head / t->layers[i].n_head_kv > gqa_max) gqa_max = t->layers[i].n_head / t->layers[i].n_head_kv;

    c->n_layer = (int32_t)L;
    c->n_embd = (int32_t)n;
    c->n_vocab = t->cfg.n_vocab;
    c->n_ctx_train = (int32_t)ctx;
    c->n_embd_per_layer = 0;
    c->n_swa = (int32_t)win;
    c->n_layer_kv = 0;
    c->n_kv_owner = 0;
    c->head_dim_full = (int32_t)kl;
    c->head_dim_swa = (int32_t)kls;
    c->rms_eps = eps;
    c->rope_base = base;
    c->rope_base_swa = base_swa;
    c->softcap = 0; /* the assistant's logits are not soft-capped (gemma4-assistant.cpp) */
    c->tied = 1;
    a->n_embd_out = (int32_t)e_out;
    m->layers = g4_calloc(&m->al, L, sizeof *m->layers);
    if (!m->layers) return aerr(ld, G4_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < L; i++) {
        g4_layer *ly = &m->layers[i];
        const g4_layer *src = &t->layers[swa[i] ? TL - 2 : TL - 1];
        ly->swa = swa[i];
        ly->n_head = (int)nh[i];
        ly->n_head_kv = (int)nkv[i];
        ly->head_dim = (int)(swa[i] ? kls : kl);
        ly->n_rot = (int)(swa[i] ? nrot_swa : nrot);
        ly->rope_base = swa[i] ? base_swa : base;
        ly->n_ff = (int)ff[i];
        ly->has_kv = 0;
        ly->kv_src = src->kv_src;
        ly->kv_slot = src->kv_slot;
        ly->out_scale = 1.0f;
        ly->scale_q = ly->scale_k = ly->scale_v = ly->scale_o = ly->scale_gate = ly->scale_up = ly->scale_down = 1.0f;
        if (nh[i] % nkv[i])
            return aerr(ld, G4_ERR_FORMAT, "layer %u: head_count_kv %u does not divide head_count %u", i, nkv[i], nh[i]);
        if (ly->head_dim != src->head_dim || ly->n_head_kv != src->n_head_kv)
            return aerr(ld, G4_ERR_FORMAT, "layer %u reads the cache of target layer %d (%d KV heads of %d) but has %d KV heads of %d",
                        i, swa[i] ? TL - 2 : TL - 1, src->n_head_kv, src->head_dim, ly->n_head_kv, ly->head_dim);
        if (ly->n_head / ly->n_head_kv > gqa_max)
            return aerr(ld, G4_ERR_UNSUPPORTED, "layer %u has %d query heads per KV head, more than the target's %d", i,
                        ly->n_head / ly->n_head_kv, gqa_max);
        if ((uint64_t)ly->head_dim * (uint64_t)ly->n_head > (uint64_t)A_MAX_FF)
            return aerr(ld, G4_ERR_FORMAT, "layer %u: head_dim %d x head_count %d is too large", i, ly->head_dim, ly->n_head);
    }
    /* the vocabulary: the target's */
    const gguf_kv *toks = gguf_find(ld->f, "tokenizer.ggml.tokens");
    if (toks && !(toks->type == GGUF_ARRAY && toks->n == (uint64_t)t->cfg.n_vocab))
        return aerr(ld, G4_ERR_FORMAT, "its vocabulary has %llu tokens, the target's %d", (unsigned long long)toks->n,
                    (int)t->cfg.n_vocab);
#undef TRY
    return G4_OK;
}

/* ==== Tensors ==== */

enum { A_MATRIX, A_EMBED, A_VECTOR };

static g4_status bind(aload *ld, const char *name, int role, int64_t ne0, int64_t ne1, int required, const g4_tensor **out) {
    *out = NULL;
    g4_model *m = &ld->a->base;
    const gguf_tensor *gt = gguf_find_tensor(ld->f, name);
    if (!gt) return required ? aerr(ld, G4_ERR_FORMAT, "missing required tensor '%s'", name) : G4_OK;
    const size_t idx = (size_t)(gt - gguf_tensor_at(ld->f, 0));
    const g4_type_traits *tr = quant_traits(gt->type);
    const int ok_type = role == A_VECTOR ? gt->type == G4_TYPE_F32 : (tr && tr->weight);
    if (!ok_type) {
        char b[32];
        return aerr(ld, tr && !tr->weight && role != A_VECTOR ? G4_ERR_UNSUPPORTED : G4_ERR_FORMAT, "tensor '%s' has type %s, expected %s",
                    name, quant_type_name(gt->type, b, sizeof b), role == A_VECTOR ? "f32" : "a supported weight type");
    }
    const int nd = ne1 ? 2 : 1;
    int bad = (int)gt->n_dims != nd || gt->ne[0] != ne0 || (nd == 2 && gt->ne[1] != ne1);
    if (role == A_EMBED) bad = gt->n_dims != 2 || gt->ne[0] != ne0 || gt->ne[1] < ne1;
    if (bad) {
        char got[96];
        int o = snprintf(got, sizeof got, "[%lld", (long long)gt->ne[0]);
        for (uint32_t j = 1; j < gt->n_dims; j++) o += snprintf(got + o, sizeof got - (size_t)o, ", %lld", (long long)gt->ne[j]);
        snprintf(got + o, sizeof got - (size_t)o, "]");
        if (nd == 2)
            return aerr(ld, G4_ERR_FORMAT, "tensor '%s' has shape %s, expected [%lld, %s%lld]", name, got, (long long)ne0,
                        role == A_EMBED ? ">= " : "", (long long)ne1);
        return aerr(ld, G4_ERR_FORMAT, "tensor '%s' has shape %s, expected [%lld]", name, got, (long long)ne0);
    }
    if (ld->used[idx]) return aerr(ld, G4_ERR_FORMAT, "tensor '%s' bound twice", name);
    g4_tensor *v = &m->tensors[ld->n_views++];
    v->name = gt->name;
    v->type = gt->type;
    for (int j = 0; j < 4; j++) v->ne[j] = gt->ne[j];
    v->row_bytes = quant_row_bytes(gt->type, gt->ne[0]);
    v->data = gt->data;
    if (role == A_VECTOR) { /* an aligned, checked copy (pointer fixed up when all are copied) */
        const size_t k = (size_t)(gt->nbytes / 4);
        if (ld->f32_len + k > ld->f32_cap) {
            size_t cap = ld->f32_cap ? ld->f32_cap : 1024;
            while (cap < ld->f32_len + k) cap *= 2;
            float *nb = m->al.fn(m->al.ud, ld->f32, ld->f32_cap * sizeof(float), cap * sizeof(float));
            if (!nb) return aerr(ld, G4_ERR_NOMEM, "out of memory");
            ld->f32 = nb;
            ld->f32_cap = cap;
        }
        float *dst = ld->f32 + ld->f32_len;
        memcpy(dst, gt->data, k * sizeof(float));
        const int rope = strcmp(name, "rope_freqs.weight") == 0;
        for (size_t i = 0; i < k; i++)
            if (!isfinite(dst[i]) && !(rope && dst[i] > 0))
                return aerr(ld, G4_ERR_FORMAT, "tensor '%s': element %zu is %g (NaN or Inf)", name, i, (double)dst[i]);
        ld->vec_off[ld->n_views - 1] = ld->f32_len;
        ld->f32_len += k;
    }
    ld->used[idx] = 1;
    *out = v;
    return G4_OK;
}

static g4_status bindf(aload *ld, int role, int64_t ne0, int64_t ne1, const g4_tensor **out, const char *fmt, int il) {
    char name[GGUF_MAX_NAME + 1];
    snprintf(name, sizeof name, fmt, il);
    return bind(ld, name, role, ne0, ne1, 1, out);
}

static g4_status bind_tensors(aload *ld) {
    g4_assistant *a = ld->a;
    g4_model *m = &a->base;
    const int64_t n = m->cfg.n_embd, E = a->n_embd_out, V = m->cfg.n_vocab, L = m->cfg.n_layer;
    g4_status st;
#define TRY(x) do { if ((st = (x)) != G4_OK) return st; } while (0)
    TRY(bind(ld, "token_embd.weight", A_EMBED, n, V, 1, &m->token_embd));
    m->cfg.n_embd_rows = (int32_t)m->token_embd->ne[1];
    if (m->token_embd->ne[1] != a->target->cfg.n_embd_rows)
        return aerr(ld, G4_ERR_FORMAT, "tensor 'token_embd.weight' has %lld rows, the target's %d (the vocabularies differ)",
                    (long long)m->token_embd->ne[1], (int)a->target->cfg.n_embd_rows);
    TRY(bind(ld, "output_norm.weight", A_VECTOR, n, 0, 1, &m->output_norm));
    TRY(bind(ld, "nextn.pre_projection.weight", A_MATRIX, 2 * E, n, 1, &a->proj_pre));
    TRY(bind(ld, "nextn.post_projection.weight", A_MATRIX, n, E, 1, &a->proj_post));
    int any_full = 0;
    for (int i = 0; i < (int)L; i++) any_full |= !m->layers[i].swa;
    const g4_tensor *rf = NULL;
    TRY(bind(ld, "rope_freqs.weight", A_VECTOR, m->cfg.head_dim_full / 2, 0, any_full, &rf));
    for (int i = 0; i < (int)L; i++) {
        g4_layer *ly = &m->layers[i];
        const int64_t hd = ly->head_dim, q = hd * ly->n_head, ff = ly->n_ff;
        TRY(bindf(ld, A_VECTOR, n, 0, &ly->attn_norm, "blk.%d.attn_norm.weight", i));
        TRY(bindf(ld, A_MATRIX, n, q, &ly->attn_q, "blk.%d.attn_q.weight", i));
        TRY(bindf(ld, A_MATRIX, q, n, &ly->attn_output, "blk.%d.attn_output.weight", i));
        TRY(bindf(ld, A_VECTOR, hd, 0, &ly->attn_q_norm, "blk.%d.attn_q_norm.weight", i));
        TRY(bindf(ld, A_VECTOR, n, 0, &ly->post_attention_norm, "blk.%d.post_attention_norm.weight", i));
        const g4_tensor *los;
        TRY(bindf(ld, A_VECTOR, 1, 0, &los, "blk.%d.layer_output_scale.weight", i));
        TRY(bindf(ld, A_VECTOR, n, 0, &ly->ffn_norm, "blk.%d.ffn_norm.weight", i));
        TRY(bindf(ld, A_MATRIX, n, ff, &ly->ffn_gate, "blk.%d.ffn_gate.weight", i));
        TRY(bindf(ld, A_MATRIX, n, ff, &ly->ffn_up, "blk.%d.ffn_up.weight", i));
        TRY(bindf(ld, A_MATRIX, ff, n, &ly->ffn_down, "blk.%d.ffn_down.weight", i));
        TRY(bindf(ld, A_VECTOR, n, 0, &ly->post_ffw_norm, "blk.%d.post_ffw_norm.weight", i));
        ly->out_scale = ld->f32[ld->vec_off[(size_t)(los - m->tensors)]];
    }
#undef TRY
    /* the copies no longer move: offsets -> pointers */
    for (size_t i = 0; i < ld->n_views; i++)
        if (ld->vec_off[i] != SIZE_MAX) m->tensors[i].data = (const uint8_t *)(ld->f32 + ld->vec_off[i]);
    if (rf) m->rope_freqs = (const float *)(const void *)rf->data;
    m->f32_copy = ld->f32;
    m->f32_copy_bytes = ld->f32_cap * sizeof(float);
    ld->f32 = NULL;
    size_t nt = gguf_n_tensors(ld->f), unused = 0, first = 0;
    for (size_t i = 0; i < nt; i++)
        if (!ld->used[i] && !unused++) first = i;
    if (unused) /* e.g. the optional sparse-head masked_embd_* tensors */
        g4_log(m, G4_LOG_WARN, "%s: %zu assistant tensor(s) not used were ignored (first: '%s')", ld->fname, unused,
               gguf_tensor_at(ld->f, first)->name);
    return G4_OK;
}

/* ==== Open / close ==== */

void g4_assistant_close(g4_assistant *a) {
    if (!a) return;
    g4_model *m = &a->base;
    const g4_allocator al = m->al;
    if (m->layers) g4_free(&al, m->layers, sizeof *m->layers * (size_t)m->cfg.n_layer);
    if (m->tensors) g4_free(&al, m->tensors, sizeof *m->tensors * (gguf_n_tensors(m->gguf) ? gguf_n_tensors(m->gguf) : 1));
    g4_free(&al, m->f32_copy, m->f32_copy_bytes);
    gguf_close(m->gguf);
    /* kern, pool, gelu_f16 and suppress are the target's */
    g4_free(&al, a, sizeof *a);
}

g4_status g4_assistant_open(g4_assistant **out, g4_model *target, const char *path, const g4_model_opts *opts, char *err,
                            size_t errlen) {
    if (err && errlen) err[0] = '\0';
    if (!out) return g4_errf(G4_ERR_ARG, err, errlen, "g4_assistant_open: out is NULL");
    *out = NULL;
    if (!target || !path) return g4_errf(G4_ERR_ARG, err, errlen, "g4_assistant_open: target or path is NULL");
    if (target->vocab_only || !target->layers || !target->kern)
        return g4_errf(G4_ERR_ARG, err, errlen, "g4_assistant_open: the target was opened vocab_only (no weights)");
    g4_model_opts def = {0};
    const g4_model_opts *o = opts ? opts : &def;
    g4_assistant *a = g4_calloc(&target->al, 1, sizeof *a);
    if (!a) return g4_errf(G4_ERR_NOMEM, err, errlen, "out of memory");
    g4_model *m = &a->base;
    m->al = target->al;
    m->log = o->log ? o->log : target->log;
    m->log_ud = o->log ? o->log_ud : target->log_ud;
    a->target = target;
    gguf_alloc ga = { m->al.fn, m->al.ud };
    g4_status st = gguf_open(&m->gguf, path, o->no_mmap, &ga, err, errlen);
    if (st) { g4_assistant_close(a); return st; }
    aload ld = { .a = a, .f = m->gguf, .fname = path, .err = err, .errlen = errlen };
    const char *arch;
    uint64_t alen;
    st = gguf_get_str(m->gguf, "general.architecture", 1, &arch, &alen, NULL, err, errlen);
    if (!st && !(alen == 16 && memcmp(arch, "gemma4-assistant", 16) == 0))
        st = aerr(&ld, G4_ERR_UNSUPPORTED, "architecture '%.*s' is not gemma4-assistant (a Gemma 4 MTP draft model)",
                  (int)(alen < 40 ? alen : 40), arch);
    if (!st) st = load_hparams(&ld);
    const size_t nt = gguf_n_tensors(m->gguf);
    if (!st) {
        ld.used = g4_calloc(&m->al, nt ? nt : 1, 1);
        ld.vec_off = g4_calloc(&m->al, nt ? nt : 1, sizeof *ld.vec_off);
        m->tensors = g4_calloc(&m->al, nt ? nt : 1, sizeof *m->tensors);
        if (!ld.used || !ld.vec_off || !m->tensors) st = aerr(&ld, G4_ERR_NOMEM, "out of memory");
        else for (size_t i = 0; i < nt; i++) ld.vec_off[i] = SIZE_MAX;
    }
    if (!st) st = bind_tensors(&ld);
    g4_free(&m->al, ld.f32, ld.f32_cap * sizeof(float));
    g4_free(&m->al, ld.used, nt ? nt : 1);
    g4_free(&m->al, ld.vec_off, (nt ? nt : 1) * sizeof *ld.vec_off);
    if (st) { g4_assistant_close(a); return st; }
    m->n_tensors_bound = ld.n_views;
    m->kern = target->kern;
    m->pool = target->pool;
    m->n_threads = target->n_threads;
    m->gelu_f16 = target->gelu_f16;
    m->softcap = target->softcap; /* never called: the assistant's cfg.softcap is 0 */
    a->suppress = target->vocab ? tok_suppress(target->vocab, &a->n_suppress) : NULL;
    *out = a;
    return G4_OK;
}

int32_t g4_assistant_n_embd(const g4_assistant *a) { return a ? a->base.cfg.n_embd : 0; }
int32_t g4_assistant_n_layer(const g4_assistant *a) { return a ? a->base.cfg.n_layer : 0; }

static uint64_t t_bytes(const g4_tensor *t) { return t ? (uint64_t)t->row_bytes * (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]) : 0; }

uint64_t g4_assistant_draft_bytes(const g4_assistant *a) {
    if (!a) return 0;
    const g4_model *m = &a->base;
    uint64_t b = t_bytes(a->proj_pre) + t_bytes(a->proj_post) + t_bytes(m->output_norm) +
                 (uint64_t)m->token_embd->row_bytes * (uint64_t)m->cfg.n_vocab +           /* the tied head */
                 (uint64_t)a->target->token_embd->row_bytes;                               /* one target row */
    for (int32_t i = 0; i < m->cfg.n_layer; i++) {
        const g4_layer *l = &m->layers[i];
        const g4_tensor *ts[] = { l->attn_norm, l->attn_q, l->attn_q_norm, l->attn_output, l->post_attention_norm,
                                  l->ffn_norm, l->ffn_gate, l->ffn_up, l->ffn_down, l->post_ffw_norm };
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) b += t_bytes(ts[k]);
    }
    return b;
}
