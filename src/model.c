/* model.c - g4_model_open: GGUF metadata -> g4_config + g4_layer[n_layer], table-driven
 * tensor binding, and every model-semantics rule of reliability.md §3B.
 *
 * Owns: hyperparameter keys (exact types, ranges), per-layer derived values (sliding vs
 * full, head dims, KV source layer), tensor presence/shape/type-for-role checks, NaN/Inf
 * checks of small f32 tensors (copied into aligned model memory), kernel and thread-pool
 * set-up. It does not compute anything (forward.c) or tokenize (tokenizer.c).
 * Invariant: when g4_model_open returns G4_OK, the forward pass may index every bound
 * tensor by the config without further checks.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward.h"
#include "g4_impl.h"
#include "kern/kern.h"
#include "pool.h"
#include "quant/quant_ref.h"
#include "quant/quant.h"
#include "tokenizer.h"

#define MAX_LAYERS     512
#define MAX_EMBD       65536
#define MAX_HEADS      1024
#define MAX_HEAD_DIM   4096
#define MAX_FF         (1 << 20)
#define MAX_CTX        (1 << 24)
#define MAX_EXPERTS    1024       /* llama.cpp's LLAMA_MAX_EXPERTS */

void g4_log(const g4_model *m, int level, const char *fmt, ...) {
    if (!m || !m->log) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    m->log(m->log_ud, level, buf);
}

typedef struct loader {
    g4_model   *m;
    gguf_file  *f;
    const char *fname;
    char       *err;
    size_t      errlen;
    size_t      n_views, cap_views;
    uint8_t    *used;    /* [n_tensors] 1 = bound */
    uint8_t    *vec;     /* [n_tensors] 1 = view i holds an offset into f32buf (fixed up later) */
    float      *f32buf;  /* copies of small f32 tensors (norms, scales, rope_freqs) */
    size_t      f32_len, f32_cap; /* floats */
} loader;

G4_PRINTF(3, 4)
static g4_status lerr(loader *ld, g4_status st, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return g4_errf(st, ld->err, ld->errlen, "%s: %s", ld->fname, msg);
}

/* ==== Hyperparameters ==== */

static g4_status need_range_u32(loader *ld, const char *key, uint32_t v, uint32_t lo, uint32_t hi) {
    if (v < lo || v > hi) return lerr(ld, G4_ERR_FORMAT, "key '%s' is %u, expected %u to %u", key, v, lo, hi);
    return G4_OK;
}

static g4_status need_pos_f32(loader *ld, const char *key, float v, int allow_zero) {
    if (!isfinite(v) || v < 0 || (!allow_zero && v == 0))
        return lerr(ld, G4_ERR_FORMAT, "key '%s' is %g, expected a finite %s number", key, (double)v,
                    allow_zero ? "non-negative" : "positive");
    return G4_OK;
}

/* sliding_window_pattern: bool / u32 / i32 array of exactly L entries */
static g4_status load_swa_pattern(loader *ld, uint32_t L, int *swa) {
    const gguf_kv *kv;
    g4_status st = gguf_get_arr(ld->f, "gemma4.attention.sliding_window_pattern", 1,
                                (1u << GGUF_BOOL) | (1u << GGUF_UINT32) | (1u << GGUF_INT32), &kv, NULL, ld->err,
                                ld->errlen);
    if (st) return st;
    if (kv->n != L)
        return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.attention.sliding_window_pattern' has %llu entries, expected %u (one per layer)",
                    (unsigned long long)kv->n, L);
    const uint8_t *a = kv->arr;
    int any = 0;
    for (uint32_t i = 0; i < L; i++) {
        uint32_t v;
        if (kv->arr_type == GGUF_BOOL) v = a[i];
        else v = (uint32_t)a[4 * i] | (uint32_t)a[4 * i + 1] << 8 | (uint32_t)a[4 * i + 2] << 16 | (uint32_t)a[4 * i + 3] << 24;
        swa[i] = v != 0;
        any |= swa[i];
    }
    if (!any) return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.attention.sliding_window_pattern' marks no layer as sliding (Gemma 4 needs at least one)");
    return G4_OK;
}

/* A u32 or per-layer array key whose entries must all be equal (llama.cpp sizes every MoE
 * layer from one value): *out = the value, *found = present. scratch holds L entries. */
static g4_status load_uniform(loader *ld, const char *key, uint32_t L, uint32_t *scratch, uint32_t *out, int *found) {
    for (uint32_t i = 0; i < L; i++) scratch[i] = 0;
    g4_status st = gguf_get_u32_or_arr(ld->f, key, 0, L, scratch, found, ld->err, ld->errlen);
    if (st) return st;
    *out = scratch[0];
    for (uint32_t i = 1; *found && i < L; i++)
        if (scratch[i] != scratch[0])
            return lerr(ld, G4_ERR_UNSUPPORTED, "key '%s': layer %u is %u but layer 0 is %u (per-layer values are not supported)",
                        key, i, scratch[i], scratch[0]);
    return G4_OK;
}

/* expert_count / expert_used_count / expert_feed_forward_length (MoE, gemma4-architecture.md
 * §2): 0 < used <= count <= 1024; absent or 0 count = a dense model. scratch holds L entries. */
static g4_status load_moe_hparams_in(loader *ld, uint32_t L, uint32_t *scratch) {
    g4_config *c = &ld->m->cfg;
    uint32_t n_exp = 0, n_used = 0, n_ffe = 0;
    int have_used = 0, have_ffe = 0;
    g4_status st = gguf_get_u32(ld->f, "gemma4.expert_count", 0, &n_exp, NULL, ld->err, ld->errlen);
    if (st) return st;
    if (n_exp > MAX_EXPERTS)
        return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.expert_count' is %u, expected 0 to %d", n_exp, MAX_EXPERTS);
    if ((st = load_uniform(ld, "gemma4.expert_used_count", L, scratch, &n_used, &have_used))) return st;
    if (n_exp == 0) {
        if (have_used && n_used != 0)
            return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.expert_used_count' is %u but expert_count is 0", n_used);
        return G4_OK;
    }
    if (!have_used) return lerr(ld, G4_ERR_FORMAT, "missing required key 'gemma4.expert_used_count' (expert_count is %u)", n_exp);
    if (n_used == 0 || n_used > n_exp)
        return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.expert_used_count' is %u, expected 1 to expert_count %u", n_used, n_exp);
    if ((st = load_uniform(ld, "gemma4.expert_feed_forward_length", L, scratch, &n_ffe, &have_ffe))) return st;
    if (!have_ffe)
        return lerr(ld, G4_ERR_FORMAT, "missing required key 'gemma4.expert_feed_forward_length' (expert_count is %u)", n_exp);
    if (n_ffe == 0 || n_ffe > MAX_FF)
        return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.expert_feed_forward_length' is %u, expected 1 to %d", n_ffe, MAX_FF);
    c->n_expert = (int32_t)n_exp;
    c->n_expert_used = (int32_t)n_used;
    c->n_ff_exp = (int32_t)n_ffe;
    return G4_OK;
}

static g4_status load_moe_hparams(loader *ld, uint32_t L) {
    uint32_t *scratch = g4_calloc(&ld->m->al, L, sizeof *scratch);
    if (!scratch) return lerr(ld, G4_ERR_NOMEM, "out of memory");
    g4_status st = load_moe_hparams_in(ld, L, scratch);
    g4_free(&ld->m->al, scratch, L * sizeof *scratch);
    return st;
}

static g4_status load_hparams(loader *ld, uint32_t *n_alloc, int **swa_out, uint32_t **ff_out, uint32_t **nh_out,
                              uint32_t **nkv_out) {
    g4_model *m = ld->m;
    gguf_file *f = ld->f;
    g4_config *c = &m->cfg;
    char *E = ld->err;
    size_t EL = ld->errlen;
    g4_status st;
    uint32_t L = 0, ctx = 0, embd = 0, P = 0, win = 0, kl = 0, vl = 0, kls = 0, vls = 0, shared = 0;
    float eps = 0;
#define TRY(x) do { if ((st = (x)) != G4_OK) return st; } while (0)
    TRY(gguf_get_u32(f, "gemma4.block_count", 1, &L, NULL, E, EL));
    TRY(need_range_u32(ld, "gemma4.block_count", L, 1, MAX_LAYERS));
    TRY(gguf_get_u32(f, "gemma4.context_length", 1, &ctx, NULL, E, EL));
    TRY(need_range_u32(ld, "gemma4.context_length", ctx, 1, MAX_CTX));
    TRY(gguf_get_u32(f, "gemma4.embedding_length", 1, &embd, NULL, E, EL));
    TRY(need_range_u32(ld, "gemma4.embedding_length", embd, 1, MAX_EMBD));
    TRY(gguf_get_u32(f, "gemma4.embedding_length_per_layer_input", 1, &P, NULL, E, EL));
    TRY(need_range_u32(ld, "gemma4.embedding_length_per_layer_input", P, 0, MAX_EMBD));
    TRY(gguf_get_u32(f, "gemma4.attention.sliding_window", 1, &win, NULL, E, EL));
    TRY(need_range_u32(ld, "gemma4.attention.sliding_window", win, 1, ctx));
    TRY(gguf_get_f32(f, "gemma4.attention.layer_norm_rms_epsilon", 1, &eps, NULL, E, EL));
    TRY(need_pos_f32(ld, "gemma4.attention.layer_norm_rms_epsilon", eps, 0));
    if (eps >= 1) return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.attention.layer_norm_rms_epsilon' is %g, expected < 1", (double)eps);

    const gguf_kv *rs = gguf_find(f, "gemma4.rope.scaling.type");
    if (rs && !(rs->type == GGUF_STRING && (strcmp(rs->str, "none") == 0 || strcmp(rs->str, "linear") == 0)))
        return lerr(ld, G4_ERR_UNSUPPORTED, "key 'gemma4.rope.scaling.type': only none/linear (factor 1) are supported");
    float rsf = 1.0f;
    TRY(gguf_get_f32(f, "gemma4.rope.scaling.factor", 0, &rsf, NULL, E, EL));
    if (rsf != 1.0f && rsf != 0.0f)
        return lerr(ld, G4_ERR_UNSUPPORTED, "key 'gemma4.rope.scaling.factor' is %g: RoPE scaling is not supported", (double)rsf);

    *n_alloc = L; /* the caller frees the four arrays with this count */
    int *swa = g4_calloc(&m->al, L, sizeof *swa);
    uint32_t *ff = g4_calloc(&m->al, L, sizeof *ff), *nh = g4_calloc(&m->al, L, sizeof *nh),
             *nkv = g4_calloc(&m->al, L, sizeof *nkv);
    *swa_out = swa; *ff_out = ff; *nh_out = nh; *nkv_out = nkv;
    if (!swa || !ff || !nh || !nkv) return lerr(ld, G4_ERR_NOMEM, "out of memory");

    TRY(load_swa_pattern(ld, L, swa));
    TRY(gguf_get_u32_or_arr(f, "gemma4.feed_forward_length", 1, L, ff, NULL, E, EL));
    TRY(gguf_get_u32_or_arr(f, "gemma4.attention.head_count", 1, L, nh, NULL, E, EL));
    for (uint32_t i = 0; i < L; i++) nkv[i] = nh[i];
    TRY(gguf_get_u32_or_arr(f, "gemma4.attention.head_count_kv", 0, L, nkv, NULL, E, EL));
    for (uint32_t i = 0; i < L; i++) {
        if (ff[i] == 0 || ff[i] > MAX_FF)
            return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.feed_forward_length': layer %u is %u, expected 1 to %d", i, ff[i], MAX_FF);
        if (nh[i] == 0 || nh[i] > MAX_HEADS)
            return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.attention.head_count': layer %u is %u, expected 1 to %d", i, nh[i], MAX_HEADS);
        if (nkv[i] == 0 || nkv[i] > nh[i] || nh[i] % nkv[i])
            return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.attention.head_count_kv': layer %u is %u, must be 1 to %u and divide head_count %u",
                        i, nkv[i], nh[i], nh[i]);
    }

    TRY(load_moe_hparams(ld, L));

    TRY(gguf_get_u32(f, "gemma4.attention.key_length", 1, &kl, NULL, E, EL));
    TRY(gguf_get_u32(f, "gemma4.attention.value_length", 1, &vl, NULL, E, EL));
    TRY(gguf_get_u32(f, "gemma4.attention.key_length_swa", 1, &kls, NULL, E, EL));
    TRY(gguf_get_u32(f, "gemma4.attention.value_length_swa", 1, &vls, NULL, E, EL));
    TRY(need_range_u32(ld, "gemma4.attention.key_length", kl, 2, MAX_HEAD_DIM));
    TRY(need_range_u32(ld, "gemma4.attention.key_length_swa", kls, 2, MAX_HEAD_DIM));
    if (kl != vl) return lerr(ld, G4_ERR_FORMAT, "key_length %u and value_length %u differ (Gemma 4 needs them equal)", kl, vl);
    if (kls != vls)
        return lerr(ld, G4_ERR_FORMAT, "key_length_swa %u and value_length_swa %u differ (Gemma 4 needs them equal)", kls, vls);

    uint32_t nrot = kl, nrot_swa;
    int have_nrot = 0, have_nrot_swa = 0;
    TRY(gguf_get_u32(f, "gemma4.rope.dimension_count", 0, &nrot, &have_nrot, E, EL));
    nrot_swa = nrot;
    TRY(gguf_get_u32(f, "gemma4.rope.dimension_count_swa", 0, &nrot_swa, &have_nrot_swa, E, EL));
    if (nrot == 0 || nrot % 2 || nrot > kl)
        return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.rope.dimension_count' is %u, must be even and 2 to key_length %u", nrot, kl);
    if (nrot_swa == 0 || nrot_swa % 2 || nrot_swa > kls)
        return lerr(ld, G4_ERR_FORMAT, "%s 'gemma4.rope.dimension_count_swa' is %u, must be even and 2 to key_length_swa %u",
                    have_nrot_swa ? "key" : "missing key: the default for", nrot_swa, kls);

    float base = 10000.0f, base_swa = 10000.0f, softcap = 30.0f;
    TRY(gguf_get_f32(f, "gemma4.rope.freq_base", 0, &base, NULL, E, EL));
    TRY(need_pos_f32(ld, "gemma4.rope.freq_base", base, 0));
    TRY(gguf_get_f32(f, "gemma4.rope.freq_base_swa", 0, &base_swa, NULL, E, EL));
    TRY(need_pos_f32(ld, "gemma4.rope.freq_base_swa", base_swa, 0));
    TRY(gguf_get_f32(f, "gemma4.final_logit_softcapping", 0, &softcap, NULL, E, EL));
    TRY(need_pos_f32(ld, "gemma4.final_logit_softcapping", softcap, 1));

    TRY(gguf_get_u32(f, "gemma4.attention.shared_kv_layers", 0, &shared, NULL, E, EL));
    if (shared >= L) return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.attention.shared_kv_layers' is %u, must be below block_count %u", shared, L);
    uint32_t S = L - shared;
    if (shared > 0) {
        /* llama.cpp's reuse map: shared sliding -> S-2, shared full -> S-1 (architecture §4.6) */
        if (S < 2 || swa[S - 1] || !swa[S - 2])
            return lerr(ld, G4_ERR_FORMAT, "KV sharing needs layer %d full and layer %d sliding (first shared layer %u)",
                        (int)S - 1, (int)S - 2, S);
    }

    c->n_layer = (int32_t)L;
    c->n_embd = (int32_t)embd;
    c->n_ctx_train = (int32_t)ctx;
    c->n_embd_per_layer = (int32_t)P;
    c->n_swa = (int32_t)win;
    c->n_layer_kv = (int32_t)S;
    c->n_kv_owner = (int32_t)S;
    c->head_dim_full = (int32_t)kl;
    c->head_dim_swa = (int32_t)kls;
    c->rms_eps = eps;
    c->rope_base = base;
    c->rope_base_swa = base_swa;
    c->softcap = softcap;

    m->layers = g4_calloc(&m->al, L, sizeof *m->layers);
    if (!m->layers) return lerr(ld, G4_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < L; i++) {
        g4_layer *ly = &m->layers[i];
        ly->swa = swa[i];
        ly->n_head = (int)nh[i];
        ly->n_head_kv = (int)nkv[i];
        ly->head_dim = (int)(swa[i] ? kls : kl);
        ly->n_rot = (int)(swa[i] ? nrot_swa : nrot);
        ly->rope_base = swa[i] ? base_swa : base;
        ly->n_ff = (int)ff[i];
        ly->has_kv = i < S;
        ly->kv_src = ly->has_kv ? (int)i : (int)(swa[i] ? S - 2 : S - 1);
        ly->kv_slot = ly->kv_src;
        ly->out_scale = 1.0f;
        ly->scale_q = ly->scale_k = ly->scale_v = ly->scale_o = 1.0f;
        ly->scale_gate = ly->scale_up = ly->scale_down = 1.0f;
        uint64_t qw;
        if (g4_mul_ovf((uint64_t)ly->head_dim, (uint64_t)ly->n_head, &qw) || qw > (uint64_t)MAX_FF)
            return lerr(ld, G4_ERR_FORMAT, "layer %u: head_dim %d x head_count %d is too large", i, ly->head_dim, ly->n_head);
    }
    for (uint32_t i = 0; i < L; i++) {
        /* a shared layer reads a cache of its source's head layout: must match */
        g4_layer *ly = &m->layers[i], *src = &m->layers[ly->kv_src];
        if (!ly->has_kv && (src->n_head_kv != ly->n_head_kv || src->head_dim != ly->head_dim))
            return lerr(ld, G4_ERR_FORMAT, "layer %u shares the KV cache of layer %d but has %d KV heads of %d (source: %d of %d)",
                        i, ly->kv_src, ly->n_head_kv, ly->head_dim, src->n_head_kv, src->head_dim);
    }
#undef TRY
    return G4_OK;
}

/* ==== Tensor binding ==== */

enum { ROLE_MATRIX, ROLE_EMBED, ROLE_VECTOR };

static const char *role_desc(int role) {
    return role == ROLE_VECTOR ? "f32 (norms and scales)" : "a supported weight type";
}

/* Copies a small f32 tensor into aligned model memory and checks its values. Returns the
 * copy's offset in floats (pointers are fixed up after all copies). */
static g4_status copy_f32(loader *ld, const gguf_tensor *gt, size_t *off) {
    size_t n = (size_t)(gt->nbytes / 4);
    if (ld->f32_len + n > ld->f32_cap) {
        size_t cap = ld->f32_cap ? ld->f32_cap : 4096;
        while (cap < ld->f32_len + n) cap *= 2;
        float *nb = ld->m->al.fn(ld->m->al.ud, ld->f32buf, ld->f32_cap * sizeof(float), cap * sizeof(float));
        if (!nb) return lerr(ld, G4_ERR_NOMEM, "out of memory");
        ld->f32buf = nb;
        ld->f32_cap = cap;
    }
    float *dst = ld->f32buf + ld->f32_len;
    memcpy(dst, gt->data, n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        if (!isfinite(dst[i]) && !(strcmp(gt->name, "rope_freqs.weight") == 0 && dst[i] > 0))
            return lerr(ld, G4_ERR_FORMAT, "tensor '%s': element %zu is %g (NaN or Inf)", gt->name, i, (double)dst[i]);
    *off = ld->f32_len;
    ld->f32_len += n;
    return G4_OK;
}

/* Binds tensor `name`: checks presence, the role's allowed types and the exact shape
 * [ne0, ne1, ne2] (ne1 = 0 for vectors, ne2 = 0 for matrices; ne2 > 0: a 3-D expert tensor).
 * Returns the view or NULL (absent & optional). */
static g4_status bind_nd(loader *ld, const char *name, int role, int64_t ne0, int64_t ne1, int64_t ne2, int required,
                         const g4_tensor **out) {
    *out = NULL;
    const gguf_tensor *gt = gguf_find_tensor(ld->f, name);
    if (!gt) {
        if (required) return lerr(ld, G4_ERR_FORMAT, "missing required tensor '%s'", name);
        return G4_OK;
    }
    size_t idx = (size_t)(gt - gguf_tensor_at(ld->f, 0));
    const g4_type_traits *tr = quant_traits(gt->type);
    int ok_type = role == ROLE_VECTOR ? gt->type == G4_TYPE_F32 : (tr && tr->weight);
    if (!ok_type) {
        char b[32];
        return lerr(ld, tr && !tr->weight && role != ROLE_VECTOR ? G4_ERR_UNSUPPORTED : G4_ERR_FORMAT,
                    "tensor '%s' has type %s, expected %s", name, quant_type_name(gt->type, b, sizeof b), role_desc(role));
    }
    int nd = ne2 ? 3 : ne1 ? 2 : 1;
    int bad = (int)gt->n_dims != nd || gt->ne[0] != ne0 || (nd >= 2 && gt->ne[1] != ne1) || (nd == 3 && gt->ne[2] != ne2);
    if (role == ROLE_EMBED) bad = gt->n_dims != 2 || gt->ne[0] != ne0 || gt->ne[1] < ne1;
    if (bad) {
        char got[96], want[96];
        int o = snprintf(got, sizeof got, "[%lld", (long long)gt->ne[0]);
        for (uint32_t j = 1; j < gt->n_dims; j++) o += snprintf(got + o, sizeof got - (size_t)o, ", %lld", (long long)gt->ne[j]);
        snprintf(got + o, sizeof got - (size_t)o, "]");
        if (nd == 3) snprintf(want, sizeof want, "[%lld, %lld, %lld]", (long long)ne0, (long long)ne1, (long long)ne2);
        else if (nd == 2) snprintf(want, sizeof want, "[%lld, %s%lld]", (long long)ne0, role == ROLE_EMBED ? ">= " : "", (long long)ne1);
        else snprintf(want, sizeof want, "[%lld]", (long long)ne0);
        return lerr(ld, G4_ERR_FORMAT, "tensor '%s' has shape %s, expected %s", name, got, want);
    }
    G4_ASSERT(ld->n_views < ld->cap_views);
    g4_tensor *v = &ld->m->tensors[ld->n_views++];
    v->name = gt->name;
    v->type = gt->type;
    for (int j = 0; j < 4; j++) v->ne[j] = gt->ne[j];
    v->row_bytes = quant_row_bytes(gt->type, gt->ne[0]);
    v->data = gt->data;
    if (role == ROLE_VECTOR) {
        size_t off = 0;
        g4_status st = copy_f32(ld, gt, &off);
        if (st) return st;
        v->data = (const uint8_t *)(uintptr_t)off; /* fixed up to a pointer later */
        ld->vec[ld->n_views - 1] = 1;
    }
    ld->used[idx] = 1;
    *out = v;
    return G4_OK;
}

static g4_status bind(loader *ld, const char *name, int role, int64_t ne0, int64_t ne1, int required,
                      const g4_tensor **out) {
    return bind_nd(ld, name, role, ne0, ne1, 0, required, out);
}

static g4_status bindf(loader *ld, int role, int64_t ne0, int64_t ne1, int required, const g4_tensor **out,
                       const char *fmt, int il) {
    char name[GGUF_MAX_NAME + 1];
    snprintf(name, sizeof name, fmt, il);
    return bind(ld, name, role, ne0, ne1, required, out);
}

/* a 3-D expert tensor blk.il.<...> of shape [ne0, ne1, n_expert] */
static g4_status bindx(loader *ld, int64_t ne0, int64_t ne1, int required, const g4_tensor **out, const char *fmt, int il) {
    char name[GGUF_MAX_NAME + 1];
    snprintf(name, sizeof name, fmt, il);
    return bind_nd(ld, name, ROLE_MATRIX, ne0, ne1, ld->m->cfg.n_expert, required, out);
}

static int has_tensorf(loader *ld, const char *fmt, int il, char *name, size_t cap) {
    snprintf(name, cap, fmt, il);
    return gguf_find_tensor(ld->f, name) != NULL;
}

/* The MoE block of layer il (gemma4-architecture.md §3.2 and §4.8), or, on a layer without a
 * router, the check that no expert tensor is there. */
static g4_status bind_moe(loader *ld, g4_layer *ly, int il) {
    g4_config *c = &ld->m->cfg;
    const int64_t E = c->n_embd, Ne = c->n_expert, fe = c->n_ff_exp;
    static const char *const PARTS[] = {
        "blk.%d.ffn_gate_inp.scale", "blk.%d.pre_ffw_norm_2.weight", "blk.%d.post_ffw_norm_1.weight",
        "blk.%d.post_ffw_norm_2.weight", "blk.%d.ffn_gate_up_exps.weight", "blk.%d.ffn_gate_exps.weight",
        "blk.%d.ffn_up_exps.weight", "blk.%d.ffn_down_exps.weight", "blk.%d.ffn_down_exps.scale",
        "blk.%d.ffn_gate_exps.scale", "blk.%d.ffn_up_exps.scale", "blk.%d.ffn_gate_up_exps.scale",
    };
    char nm[GGUF_MAX_NAME + 1];
    g4_status st;
#define TRY(x) do { if ((st = (x)) != G4_OK) return st; } while (0)
    ly->moe = has_tensorf(ld, "blk.%d.ffn_gate_inp.weight", il, nm, sizeof nm);
    if (!ly->moe) {
        for (size_t k = 0; k < sizeof PARTS / sizeof PARTS[0]; k++)
            if (has_tensorf(ld, PARTS[k], il, nm, sizeof nm))
                return lerr(ld, G4_ERR_FORMAT, "tensor '%s' belongs to a mixture-of-experts layer, but layer %d has no router "
                            "'blk.%d.ffn_gate_inp.weight'", nm, il, il);
        return G4_OK;
    }
    if (Ne == 0)
        return lerr(ld, G4_ERR_FORMAT, "tensor '%s' is a mixture-of-experts router, but key 'gemma4.expert_count' is 0 or absent", nm);
    TRY(bindf(ld, ROLE_MATRIX, E, Ne, 1, &ly->ffn_gate_inp, "blk.%d.ffn_gate_inp.weight", il));
    TRY(bindf(ld, ROLE_VECTOR, E, 0, 1, &ly->ffn_gate_inp_s, "blk.%d.ffn_gate_inp.scale", il));
    TRY(bindf(ld, ROLE_VECTOR, E, 0, 1, &ly->pre_ffw_norm_2, "blk.%d.pre_ffw_norm_2.weight", il));
    TRY(bindf(ld, ROLE_VECTOR, E, 0, 1, &ly->post_ffw_norm_1, "blk.%d.post_ffw_norm_1.weight", il));
    TRY(bindf(ld, ROLE_VECTOR, E, 0, 1, &ly->post_ffw_norm_2, "blk.%d.post_ffw_norm_2.weight", il));
    TRY(bindx(ld, E, 2 * fe, 0, &ly->ffn_gate_up_exps, "blk.%d.ffn_gate_up_exps.weight", il));
    if (ly->ffn_gate_up_exps) {
        /* llama.cpp v0.5.0 loads neither the split tensors nor any gate/up scale next to a
         * fused tensor (its file would be refused: "wrong number of tensors") */
        static const char *const NOT_FUSED[] = { "blk.%d.ffn_gate_exps.weight", "blk.%d.ffn_up_exps.weight",
                                                 "blk.%d.ffn_gate_exps.scale", "blk.%d.ffn_up_exps.scale",
                                                 "blk.%d.ffn_gate_up_exps.scale" };
        for (size_t k = 0; k < sizeof NOT_FUSED / sizeof NOT_FUSED[0]; k++)
            if (has_tensorf(ld, NOT_FUSED[k], il, nm, sizeof nm))
                return lerr(ld, G4_ERR_FORMAT, "tensor '%s' cannot be used with the fused 'blk.%d.ffn_gate_up_exps.weight'", nm, il);
    } else {
        if (has_tensorf(ld, "blk.%d.ffn_gate_up_exps.scale", il, nm, sizeof nm))
            return lerr(ld, G4_ERR_FORMAT, "tensor '%s' has no 'blk.%d.ffn_gate_up_exps.weight' to scale", nm, il);
        TRY(bindx(ld, E, fe, 1, &ly->ffn_gate_exps, "blk.%d.ffn_gate_exps.weight", il));
        TRY(bindx(ld, E, fe, 1, &ly->ffn_up_exps, "blk.%d.ffn_up_exps.weight", il));
        TRY(bindf(ld, ROLE_VECTOR, Ne, 0, 0, &ly->gate_exps_s, "blk.%d.ffn_gate_exps.scale", il));
        TRY(bindf(ld, ROLE_VECTOR, Ne, 0, 0, &ly->up_exps_s, "blk.%d.ffn_up_exps.scale", il));
    }
    TRY(bindx(ld, fe, E, 1, &ly->ffn_down_exps, "blk.%d.ffn_down_exps.weight", il));
    TRY(bindf(ld, ROLE_VECTOR, Ne, 0, 0, &ly->down_exps_s, "blk.%d.ffn_down_exps.scale", il));
#undef TRY
    c->n_layer_moe++;
    return G4_OK;
}

/* the optional per-matmul output multiplier blk.i.<w>.scale ([1], f32) */
static g4_status bind_scale(loader *ld, int il, const char *w, float *out) {
    char name[GGUF_MAX_NAME + 1];
    const g4_tensor *t;
    snprintf(name, sizeof name, "blk.%d.%s.scale", il, w);
    g4_status st = bind(ld, name, ROLE_VECTOR, 1, 0, 0, &t);
    if (st) return st;
    if (t) {
        memcpy(out, ld->f32buf + (uintptr_t)t->data, sizeof(float));
    }
    return G4_OK;
}

static g4_status bind_tensors(loader *ld) {
    g4_model *m = ld->m;
    const g4_config *c = &m->cfg;
    const int64_t E = c->n_embd, P = c->n_embd_per_layer, L = c->n_layer, V = c->n_vocab;
    g4_status st;
#define TRY(x) do { if ((st = (x)) != G4_OK) return st; } while (0)
    TRY(bind(ld, "token_embd.weight", ROLE_EMBED, E, V, 1, &m->token_embd));
    TRY(bind(ld, "output.weight", ROLE_MATRIX, E, V, 0, &m->output));
    TRY(bind(ld, "output_norm.weight", ROLE_VECTOR, E, 0, 1, &m->output_norm));
    m->cfg.tied = m->output == NULL;
    m->cfg.n_embd_rows = (int32_t)m->token_embd->ne[1];
    if (P > 0) {
        TRY(bind(ld, "per_layer_token_embd.weight", ROLE_EMBED, P * L, V, 1, &m->per_layer_token_embd));
        TRY(bind(ld, "per_layer_model_proj.weight", ROLE_MATRIX, E, P * L, 1, &m->per_layer_model_proj));
        TRY(bind(ld, "per_layer_proj_norm.weight", ROLE_VECTOR, P, 0, 1, &m->per_layer_proj_norm));
    }
    int any_full = 0;
    for (int i = 0; i < (int)L; i++) any_full |= !m->layers[i].swa;
    const g4_tensor *rf = NULL;
    TRY(bind(ld, "rope_freqs.weight", ROLE_VECTOR, c->head_dim_full / 2, 0, any_full, &rf));
    if (rf) m->rope_freqs = (const float *)(uintptr_t)rf->data; /* offset; fixed up later */

    for (int i = 0; i < (int)L; i++) {
        g4_layer *ly = &m->layers[i];
        const int64_t hd = ly->head_dim, q = hd * ly->n_head, kv = hd * ly->n_head_kv, ff = ly->n_ff;
        TRY(bindf(ld, ROLE_VECTOR, E, 0, 1, &ly->attn_norm, "blk.%d.attn_norm.weight", i));
        char nm[GGUF_MAX_NAME + 1];
        snprintf(nm, sizeof nm, "blk.%d.attn_qkv.weight", i);
        if (gguf_find_tensor(ld->f, nm))
            return lerr(ld, G4_ERR_UNSUPPORTED, "tensor '%s': fused QKV projections are not supported yet", nm);
        TRY(bindf(ld, ROLE_MATRIX, E, q, 1, &ly->attn_q, "blk.%d.attn_q.weight", i));
        /* K/V/k_norm on shared layers are optional and unused (architecture §3.2): still
         * shape-checked when present, so a malformed file is refused */
        TRY(bindf(ld, ROLE_MATRIX, E, kv, ly->has_kv, &ly->attn_k, "blk.%d.attn_k.weight", i));
        TRY(bindf(ld, ROLE_MATRIX, E, kv, 0, &ly->attn_v, "blk.%d.attn_v.weight", i));
        TRY(bindf(ld, ROLE_VECTOR, hd, 0, 1, &ly->attn_q_norm, "blk.%d.attn_q_norm.weight", i));
        TRY(bindf(ld, ROLE_VECTOR, hd, 0, ly->has_kv, &ly->attn_k_norm, "blk.%d.attn_k_norm.weight", i));
        if (!ly->has_kv) ly->attn_k = ly->attn_v = ly->attn_k_norm = NULL;
        ly->v_is_k = ly->has_kv && ly->attn_v == NULL;
        TRY(bindf(ld, ROLE_MATRIX, q, E, 1, &ly->attn_output, "blk.%d.attn_output.weight", i));
        TRY(bindf(ld, ROLE_VECTOR, E, 0, 1, &ly->post_attention_norm, "blk.%d.post_attention_norm.weight", i));
        TRY(bindf(ld, ROLE_VECTOR, E, 0, 1, &ly->ffn_norm, "blk.%d.ffn_norm.weight", i));
        TRY(bindf(ld, ROLE_MATRIX, E, ff, 1, &ly->ffn_gate, "blk.%d.ffn_gate.weight", i));
        TRY(bindf(ld, ROLE_MATRIX, E, ff, 1, &ly->ffn_up, "blk.%d.ffn_up.weight", i));
        TRY(bindf(ld, ROLE_MATRIX, ff, E, 1, &ly->ffn_down, "blk.%d.ffn_down.weight", i));
        TRY(bindf(ld, ROLE_VECTOR, E, 0, 1, &ly->post_ffw_norm, "blk.%d.post_ffw_norm.weight", i));
        if (P > 0) {
            TRY(bindf(ld, ROLE_MATRIX, E, P, 1, &ly->inp_gate, "blk.%d.inp_gate.weight", i));
            TRY(bindf(ld, ROLE_MATRIX, P, E, 1, &ly->proj, "blk.%d.proj.weight", i));
            TRY(bindf(ld, ROLE_VECTOR, E, 0, 1, &ly->post_norm, "blk.%d.post_norm.weight", i));
        }
        const g4_tensor *los;
        TRY(bindf(ld, ROLE_VECTOR, 1, 0, 0, &los, "blk.%d.layer_output_scale.weight", i));
        if (los) memcpy(&ly->out_scale, ld->f32buf + (uintptr_t)los->data, sizeof(float));
        TRY(bind_scale(ld, i, "attn_q", &ly->scale_q));
        TRY(bind_scale(ld, i, "attn_k", &ly->scale_k));
        TRY(bind_scale(ld, i, "attn_v", &ly->scale_v));
        TRY(bind_scale(ld, i, "attn_output", &ly->scale_o));
        TRY(bind_scale(ld, i, "ffn_gate", &ly->scale_gate));
        TRY(bind_scale(ld, i, "ffn_up", &ly->scale_up));
        TRY(bind_scale(ld, i, "ffn_down", &ly->scale_down));
        TRY(bind_moe(ld, ly, i));
    }
    if (c->n_expert > 0 && c->n_layer_moe == 0)
        return lerr(ld, G4_ERR_FORMAT, "key 'gemma4.expert_count' is %d but no layer has a router (blk.N.ffn_gate_inp.weight)",
                    (int)c->n_expert);
#undef TRY
    return G4_OK;
}

/* After all copies are done the f32 buffer no longer moves: turn offsets into pointers. */
static void fixup_f32(loader *ld) {
    g4_model *m = ld->m;
    for (size_t i = 0; i < ld->n_views; i++)
        if (ld->vec[i]) m->tensors[i].data = (const uint8_t *)(ld->f32buf + (uintptr_t)m->tensors[i].data);
    if (m->rope_freqs) m->rope_freqs = ld->f32buf + (uintptr_t)m->rope_freqs;
}

static void warn_unused(loader *ld) {
    size_t n = gguf_n_tensors(ld->f), unused = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (!ld->used[i] && !unused++) first = i;
    if (unused)
        g4_log(ld->m, G4_LOG_WARN, "%s: %zu tensor(s) not used by the text model were ignored (first: '%s')",
               ld->fname, unused, gguf_tensor_at(ld->f, first)->name);
}

/* ==== Lookups ==== */

void model_row_f32(const g4_tensor *t, int64_t r, float *out) {
    if (!t->rq) { quant_dequant_row(t->type, t->data + (size_t)r * t->row_bytes, out, t->ne[0]); return; }
    const kern_rq_block_fn rd = kern_rq_block(t->type); /* the repacked types looked up (rq_candidate) */
    G4_ASSERT(rd);
    const int64_t blck = quant_traits(t->type)->blck;
    uint8_t b[210];
    for (int64_t i = 0; i < t->ne[0] / blck; i++) {
        rd(t->data, t->row_bytes, r, i, b);
        quant_dequant_row(t->type, b, out + blck * i, blck);
    }
}

/* ==== Open / close ==== */

static int online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 512 ? 512 : (int)n;
}

/* The matrices the forward pass multiplies (forward_matmul: layers, per-layer embedding
 * projections, the head; moe.c: the experts, each a whole number of tiles) that the table can
 * repack: Q4_K, Q5_K, Q6_K, Q8_0, Q5_0 and Q4_0 in 16-row tiles (Q8_0 / Q5_0 / Q4_0 rows of at most
 * 32768 elements). Embedding tables (row lookups) stay as stored, but for a tied head in Q6_K or Q4_0:
 * its lookups read a row back from the tiles (model_row_f32). */
static int rq_candidate(const g4_model *m, const g4_tensor *t) {
    if (!t || t->ne[3] != 1 || t->ne[1] % 16 || t->rq || t == m->per_layer_token_embd) return 0;
    /* the token table: only as a tied head whose rows read back (kern_rq_block) */
    if (t == m->token_embd && (m->output || !kern_rq_block(t->type))) return 0;
    if (t->type == G4_TYPE_Q4_K) return m->kern->repack_q4_K != NULL;
    if (t->type == G4_TYPE_Q6_K) return m->kern->repack_q6_K && m->kern->matmul_rq6;
    /* the per-type repacks (Q8_0, Q5_0, Q4_0, Q5_K); 32-element blocks in rows of at most 32768
     * (a call's corrections for one token: kern_x86_rqb32.h RQB_NB) */
    if (t->type < G4_TYPE_COUNT && m->kern->repack_b32[t->type] && m->kern->matmul_rqb[t->type])
        return quant_traits(t->type)->blck != 32 || t->ne[0] <= 32768;
    return 0;
}

#define RQ_PER 13 /* matrices per layer */
/* matrix j of the model's repackable ones, or NULL past the last */
static const g4_tensor *rq_matrix(const g4_model *m, int64_t j) {
    const int64_t nl = m->cfg.n_layer;
    if (j < RQ_PER * nl) {
        const g4_layer *l = &m->layers[j / RQ_PER];
        const g4_tensor *ts[RQ_PER] = { l->attn_q, l->attn_k, l->attn_v, l->attn_output, l->ffn_gate, l->ffn_up,
                                        l->ffn_down, l->inp_gate, l->proj, l->ffn_gate_up_exps, l->ffn_gate_exps,
                                        l->ffn_up_exps, l->ffn_down_exps };
        return ts[j % RQ_PER];
    }
    j -= RQ_PER * nl;
    return j == 0 ? (m->output ? m->output : m->token_embd) : j == 1 ? m->per_layer_model_proj : NULL;
}
#define RQ_END(m) (RQ_PER * (int64_t)(m)->cfg.n_layer + 2)

typedef struct rq_job {
    kern_repack_fn repack;
    uint8_t *dst;
    const uint8_t *src;
    size_t wrb;
    int64_t n_in;
} rq_job;

static void rq_task(void *ctx, int64_t i0, int64_t i1, int thread) { /* tiles [i0, i1) */
    (void)thread;
    const rq_job *j = ctx;
    const size_t off = (size_t)i0 * 16 * j->wrb;
    j->repack(j->dst + off, j->src + off, j->wrb, j->n_in, 16 * (i1 - i0));
}

static int env_zero(const char *name) {
    const char *v = getenv(name);
    return v && !strcmp(v, "0");
}

/* The repack and the copy below move matrices out of the file mapping into anonymous memory,
 * which the OS cannot drop and re-read as it can a mapping's pages: a model near the size of
 * RAM could then be killed for memory at open instead of running from its file. So together
 * they take at most 3/4 of the memory available at open (g4_mem_available; the rest is for
 * the sessions, the matrices read in place and everyone else); what does not fit, or cannot be
 * allocated, stays as stored (same results, slower), with a warning. move_budget: the bytes
 * they may take, UINT64_MAX where unknown. */
static uint64_t move_budget(void) {
    const int64_t a = g4_mem_available();
    return a < 0 ? UINT64_MAX : (uint64_t)a / 4 * 3;
}

/* one 64-byte-aligned block of `total` bytes for `what` (n matrices moved out of the mapping:
 * repacked or copied), huge pages asked for, within *budget (less it on success); NULL, with a
 * warning, when it does not fit or cannot be had */
static uint8_t *weights_block(g4_model *m, uint64_t total, uint64_t *budget, const char *what, int n, void **raw) {
    uint8_t *p = total <= *budget && total <= SIZE_MAX ? g4_malloc_al64(&m->al, (size_t)total, raw) : NULL;
    if (!p) {
        g4_log(m, G4_LOG_WARN, "%d matrices (%.1f MiB) kept as stored, not %s: %s", n, (double)total / 1048576.0, what,
               total <= *budget ? "out of memory" : "more than 3/4 of the memory available");
        return NULL;
    }
    g4_want_huge_pages(&m->al, p, (size_t)total);
    *budget -= total;
    return p;
}

/* Q4_K, Q5_K, Q6_K, Q8_0, Q5_0 and Q4_0 matrices into the kernel table's repacked layouts (kern.h
 * repack_q4_K, repack_q6_K, repack_b32), where it has them and the caller did not opt out; results are the same bits
 * (test_kern: repacked). */
static void repack_weights(g4_model *m, const g4_model_opts *o, uint64_t *budget) {
    const g4_kern *k = m->kern;
    if (o->no_repack || env_zero("G4_REPACK")) return; /* a table without repacks finds no candidate */
    uint64_t total = 0;
    int n = 0;
    for (int64_t j = 0; j < RQ_END(m); j++) {
        const g4_tensor *t = rq_matrix(m, j);
        if (!rq_candidate(m, t)) continue;
        g4_tensor *mt = &m->tensors[t - m->tensors];
        mt->rq = 1; /* marks it seen (a tensor bound twice is counted once) */
        total += (uint64_t)t->row_bytes * (uint64_t)(t->ne[1] * t->ne[2]);
        n++;
    }
    if (!n) return;
    m->rq_copy = weights_block(m, total, budget, "repacked", n, &m->rq_raw);
    if (!m->rq_copy) {
        for (size_t i = 0; i < m->n_tensors_bound; i++) m->tensors[i].rq = 0;
        return;
    }
    m->rq_bytes = (size_t)total;
    size_t off = 0;
    for (size_t i = 0; i < m->n_tensors_bound; i++) {
        g4_tensor *t = &m->tensors[i];
        if (!t->rq) continue;
        const int64_t rows = t->ne[1] * t->ne[2]; /* experts: ne[2] matrices of whole tiles */
        const size_t bytes = t->row_bytes * (size_t)rows;
        gguf_will_read(m->gguf, t->data, bytes);
        rq_job j = { .repack = kern_rq_repack(k, t->type), .dst = m->rq_copy + off,
                     .src = t->data, .wrb = t->row_bytes, .n_in = t->ne[0] };
        pool_for(m->pool, rows / 16, 64, rq_task, &j);
        gguf_drop_pages(m->gguf, t->data, bytes);
        t->data = m->rq_copy + off;
        off += bytes;
    }
    g4_log(m, G4_LOG_INFO, "repacked %d Q4_K / Q5_K / Q6_K / Q8_0 / Q5_0 / Q4_0 matrices (%.1f MiB) for the %s kernels", n, (double)total / 1048576.0,
           k->name);
}

/* The matrices every decoded token streams whole that the repack left as stored (Q6_K, Q5_0,
 * Q8_0, F32, BF16, ...; the tied head: the token table) are copied out of the file mapping into
 * one block of anonymous memory given huge pages, where the mapping has 4 KiB pages: a token's
 * weight stream then walks far fewer pages. Zen 5, E2B-shaped Q4_K_M file, g4 bench tg32 in 4
 * alternating pairs each: 1 thread 14.1-15.6 -> 16.2-17.9 t/s, 2 threads 23.3-25.4 -> 25.0-28.0
 * (G4_COPY=0 against the default). Skipped as the repack is (no_repack, G4_REPACK=0) and with
 * G4_COPY=0. Only where huge pages are given (g4_huge_pages_on) and the
 * file is mapped; the same bytes, so the same results. The file's pages of them are released
 * (the resident set stays the same). The per-layer token table (a row per layer and token) and
 * the vectors (already copied, fixup_f32) stay. */
static void cp_task(void *ctx, int64_t i0, int64_t i1, int thread) { /* MiB [i0, i1) of one tensor */
    (void)thread;
    const uint8_t *const *j = ctx; /* dst, src, end of src */
    const size_t a = (size_t)i0 << 20, b = (size_t)i1 << 20, n = (size_t)(j[2] - j[1]);
    memcpy((uint8_t *)(uintptr_t)j[0] + a, j[1] + a, (b < n ? b : n) - a);
}

static int cp_candidate(const g4_model *m, const g4_tensor *t) {
    return t && !t->rq && !t->cp && t->ne[1] > 1 && t != m->per_layer_token_embd &&
           gguf_mapped_range(m->gguf, t->data, t->row_bytes * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]));
}

static void copy_weights(g4_model *m, const g4_model_opts *o, uint64_t *budget) {
    if (o->no_repack || env_zero("G4_REPACK") || env_zero("G4_COPY") || !g4_huge_pages_on(&m->al)) return;
    uint64_t total = 0;
    int n = 0;
    for (int64_t j = 0; j <= RQ_END(m); j++) {
        const g4_tensor *t = j < RQ_END(m) ? rq_matrix(m, j) : m->output ? NULL : m->token_embd;
        if (!cp_candidate(m, t)) continue;
        m->tensors[t - m->tensors].cp = 1; /* marks it seen; set for good below */
        total += ((uint64_t)t->row_bytes * (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]) + 63) / 64 * 64;
        n++;
    }
    if (!n) return;
    m->cp_copy = weights_block(m, total, budget, "copied into huge pages", n, &m->cp_raw);
    if (!m->cp_copy) {
        for (size_t i = 0; i < m->n_tensors_bound; i++) m->tensors[i].cp = 0;
        return;
    }
    m->cp_bytes = (size_t)total;
    size_t off = 0;
    for (size_t i = 0; i < m->n_tensors_bound; i++) {
        g4_tensor *t = &m->tensors[i];
        if (!t->cp) continue;
        const size_t bytes = t->row_bytes * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
        gguf_will_read(m->gguf, t->data, bytes);
        const uint8_t *j[3] = { m->cp_copy + off, t->data, t->data + bytes };
        pool_for(m->pool, (int64_t)((bytes + (1u << 20) - 1) >> 20), 4, cp_task, (void *)j);
        gguf_drop_pages(m->gguf, t->data, bytes);
        t->data = m->cp_copy + off;
        off += (bytes + 63) / 64 * 64;
    }
    g4_log(m, G4_LOG_INFO, "copied %d matrices (%.1f MiB) into huge pages", n, (double)total / 1048576.0);
}

static g4_status open_impl(g4_model *m, const char *path, const void *buf, size_t len, const g4_model_opts *o,
                           char *err, size_t errlen) {
    g4_status st;
    gguf_alloc ga = { o->alloc, o->alloc_ud };
    if (buf) st = gguf_open_mem(&m->gguf, buf, len, path, &ga, err, errlen);
    else st = gguf_open(&m->gguf, path, o->no_mmap, &ga, err, errlen);
    if (st) return st;
    loader ld = { .m = m, .f = m->gguf, .fname = path, .err = err, .errlen = errlen };
    const char *arch;
    uint64_t alen;
    if ((st = gguf_get_str(m->gguf, "general.architecture", 1, &arch, &alen, NULL, err, errlen))) return st;
    if (alen != 6 || memcmp(arch, "gemma4", 6) != 0) {
        char e[64];
        size_t k = 0;
        for (uint64_t i = 0; i < alen && k + 5 < sizeof e; i++) {
            unsigned char ch = (unsigned char)arch[i];
            if (ch >= 0x20 && ch < 0x7f) e[k++] = (char)ch;
            else k += (size_t)snprintf(e + k, sizeof e - k, "\\x%02x", ch);
        }
        e[k] = 0;
        if (!strcmp(e, "gemma4-assistant"))
            return lerr(&ld, G4_ERR_UNSUPPORTED, "architecture 'gemma4-assistant' is a Gemma 4 assistant (MTP draft model): "
                        "open it next to its target (-md FILE, g4_assistant_open)");
        return lerr(&ld, G4_ERR_UNSUPPORTED, "architecture '%s' is not supported (supported: gemma4)", e);
    }
    const gguf_kv *split = gguf_find(m->gguf, "split.count");
    if (split && !(split->type == GGUF_UINT16 && split->v.u16 <= 1))
        return lerr(&ld, G4_ERR_UNSUPPORTED, "split GGUF files are not supported (merge them with gguf-split --merge)");

    /* the pool exists before the vocabulary: merge resolution runs on it */
    m->n_threads = o->n_threads > 0 ? (o->n_threads > 512 ? 512 : o->n_threads) : online_cpus();
    if (m->n_threads > 1 && (st = pool_create(&m->pool, m->n_threads, &m->al)))
        return lerr(&ld, st, "cannot start %d threads", m->n_threads);
    if ((st = tok_vocab_load_pool(&m->vocab, m->gguf, &m->al, m->pool, m->log, m->log_ud, err, errlen))) return st;
    m->cfg.n_vocab = tok_n_vocab(m->vocab);
    m->vocab_only = o->vocab_only;

    /* general.sampling.* defaults (types as observed: top_k i32 or u32, top_p/temp f32) */
    const gguf_kv *kv = gguf_find(m->gguf, "general.sampling.top_k");
    if (kv && (kv->type == GGUF_INT32 || kv->type == GGUF_UINT32) && kv->v.i32 >= 0) {
        m->has_samp_top_k = 1;
        m->samp_top_k = kv->v.i32;
    }
    kv = gguf_find(m->gguf, "general.sampling.top_p");
    if (kv && kv->type == GGUF_FLOAT32 && isfinite(kv->v.f32) && kv->v.f32 >= 0 && kv->v.f32 <= 1) {
        m->has_samp_top_p = 1;
        m->samp_top_p = kv->v.f32;
    }
    kv = gguf_find(m->gguf, "general.sampling.temp");
    if (kv && kv->type == GGUF_FLOAT32 && isfinite(kv->v.f32) && kv->v.f32 >= 0) {
        m->has_samp_temp = 1;
        m->samp_temp = kv->v.f32;
    }
    if (o->vocab_only) return G4_OK;

    int *swa = NULL;
    uint32_t *ff = NULL, *nh = NULL, *nkv = NULL, na = 0;
    st = load_hparams(&ld, &na, &swa, &ff, &nh, &nkv);
    g4_free(&m->al, swa, sizeof *swa * na);
    g4_free(&m->al, ff, sizeof *ff * na);
    g4_free(&m->al, nh, sizeof *nh * na);
    g4_free(&m->al, nkv, sizeof *nkv * na);
    if (st) return st;

    size_t nt = gguf_n_tensors(m->gguf);
    ld.cap_views = nt;
    ld.used = g4_calloc(&m->al, nt ? nt : 1, 1);
    ld.vec = g4_calloc(&m->al, nt ? nt : 1, 1);
    m->tensors = g4_calloc(&m->al, nt ? nt : 1, sizeof *m->tensors);
    if (!ld.used || !ld.vec || !m->tensors) st = lerr(&ld, G4_ERR_NOMEM, "out of memory");
    if (!st) st = bind_tensors(&ld);
    if (!st) {
        m->n_tensors_bound = ld.n_views;
        fixup_f32(&ld);
        m->f32_copy = ld.f32buf;
        m->f32_copy_bytes = ld.f32_cap * sizeof(float);
        ld.f32buf = NULL;
        warn_unused(&ld);
    }
    g4_free(&m->al, ld.f32buf, ld.f32_cap * sizeof(float));
    g4_free(&m->al, ld.used, nt ? nt : 1);
    g4_free(&m->al, ld.vec, nt ? nt : 1);
    if (st) return st;

    /* compute set-up: kernels, GELU table, thread pool */
    char kerr[200];
    m->kern = kern_select(o->kernels, kerr, sizeof kerr);
    if (!m->kern) return g4_errf(G4_ERR_ARG, err, errlen, "%s", kerr);
    m->gelu_f16 = g4_malloc(&m->al, 65536 * sizeof(uint16_t));
    if (!m->gelu_f16) return lerr(&ld, G4_ERR_NOMEM, "out of memory");
    forward_gelu_table(m->gelu_f16);
    m->softcap = m->kern->softcap && m->cfg.softcap > 0.0f && kern_softcap_check(m->kern->softcap, m->cfg.softcap)
                     ? m->kern->softcap : forward_softcap;
    uint64_t budget = move_budget();
    repack_weights(m, o, &budget);
    copy_weights(m, o, &budget);
    return G4_OK;
}

static g4_status model_open(g4_model **out, const char *path, const void *buf, size_t len, const g4_model_opts *opts,
                            char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!out) return g4_errf(G4_ERR_ARG, err, errlen, "g4_model_open: out is NULL");
    *out = NULL;
    if (!path) return g4_errf(G4_ERR_ARG, err, errlen, "g4_model_open: path is NULL");
    g4_model_opts def = {0};
    const g4_model_opts *o = opts ? opts : &def;
    g4_allocator al;
    g4_allocator_init(&al, o->alloc, o->alloc_ud);
    g4_model *m = g4_calloc(&al, 1, sizeof *m);
    if (!m) return g4_errf(G4_ERR_NOMEM, err, errlen, "out of memory");
    m->al = al;
    m->log = o->log;
    m->log_ud = o->log_ud;
    size_t pl = strlen(path);
    m->path = g4_malloc(&al, pl + 1);
    if (!m->path) {
        g4_model_close(m);
        return g4_errf(G4_ERR_NOMEM, err, errlen, "out of memory");
    }
    memcpy(m->path, path, pl + 1);
    g4_status st = open_impl(m, path, buf, len, o, err, errlen);
    if (st) {
        g4_model_close(m);
        return st;
    }
    *out = m;
    return G4_OK;
}

g4_status g4_model_open(g4_model **out, const char *path, const g4_model_opts *opts, char *err, size_t errlen) {
    return model_open(out, path, NULL, 0, opts, err, errlen);
}

g4_status model_open_mem(g4_model **out, const void *buf, size_t len, const char *name, const g4_model_opts *opts,
                         char *err, size_t errlen) {
    if (!buf) return g4_errf(G4_ERR_ARG, err, errlen, "model_open_mem: NULL buffer");
    return model_open(out, name ? name : "<memory>", buf, len, opts, err, errlen);
}

void g4_model_close(g4_model *m) {
    if (!m) return;
    g4_allocator al = m->al;
    pool_free(m->pool);
    g4_free(&al, m->gelu_f16, 65536 * sizeof(uint16_t));
    tok_vocab_free(m->vocab);
    if (m->layers) g4_free(&al, m->layers, sizeof *m->layers * (size_t)m->cfg.n_layer);
    if (m->tensors) g4_free(&al, m->tensors, sizeof *m->tensors * (gguf_n_tensors(m->gguf) ? gguf_n_tensors(m->gguf) : 1));
    g4_free(&al, m->f32_copy, m->f32_copy_bytes);
    if (m->rq_raw) g4_free_al64(&al, m->rq_raw, m->rq_bytes);
    if (m->cp_raw) g4_free_al64(&al, m->cp_raw, m->cp_bytes);
    gguf_close(m->gguf);
    if (m->path) g4_free(&al, m->path, strlen(m->path) + 1);
    g4_free(&al, m, sizeof *m);
}

/* ==== Accessors ==== */

int32_t g4_model_n_vocab(const g4_model *m) { return m ? m->cfg.n_vocab : 0; }
int32_t g4_model_n_ctx_train(const g4_model *m) { return m ? m->cfg.n_ctx_train : 0; }
int32_t g4_model_n_embd(const g4_model *m) { return m ? m->cfg.n_embd : 0; }
int32_t g4_model_n_layer(const g4_model *m) { return m ? m->cfg.n_layer : 0; }
const char *g4_model_kernels(const g4_model *m) { return m && m->kern ? m->kern->name : "none"; }
int g4_model_n_threads(const g4_model *m) { return m ? m->n_threads : 0; }

static uint64_t t_bytes(const g4_tensor *t) { return t ? (uint64_t)t->row_bytes * (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]) : 0; }
static uint64_t t_row(const g4_tensor *t) { return t ? (uint64_t)t->row_bytes : 0; }

/* bytes of one expert's slice of a 3-D expert tensor */
static uint64_t t_expert(const g4_tensor *t) { return t ? (uint64_t)t->row_bytes * (uint64_t)t->ne[1] : 0; }

/* the routed experts' bytes one token reads: n_expert_used slices of each MoE layer */
static uint64_t routed_bytes(const g4_model *m) {
    uint64_t b = 0;
    for (int32_t il = 0; il < m->cfg.n_layer; il++) {
        const g4_layer *l = &m->layers[il];
        if (!l->moe) continue;
        b += (uint64_t)m->cfg.n_expert_used *
             (t_expert(l->ffn_gate_up_exps) + t_expert(l->ffn_gate_exps) + t_expert(l->ffn_up_exps) + t_expert(l->ffn_down_exps));
    }
    return b;
}

uint64_t g4_model_decode_bytes_routed(const g4_model *m) { return m && m->layers ? routed_bytes(m) : 0; }
int32_t g4_model_n_expert(const g4_model *m) { return m ? m->cfg.n_expert : 0; }
int32_t g4_model_n_expert_used(const g4_model *m) { return m ? m->cfg.n_expert_used : 0; }

static uint64_t t_params(const g4_tensor *t) { return t ? (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]) : 0; }

uint64_t g4_model_n_params_active(const g4_model *m) {
    if (!m || !m->layers) return 0;
    uint64_t n = 0;
    for (size_t i = 0; i < m->n_tensors_bound; i++) n += t_params(&m->tensors[i]);
    /* each token uses n_expert_used of the n_expert matrices of every expert tensor */
    for (int32_t il = 0; il < m->cfg.n_layer; il++) {
        const g4_layer *l = &m->layers[il];
        if (!l->moe) continue;
        const g4_tensor *xs[] = { l->ffn_gate_up_exps, l->ffn_gate_exps, l->ffn_up_exps, l->ffn_down_exps };
        for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++)
            if (xs[k]) n -= (uint64_t)(m->cfg.n_expert - m->cfg.n_expert_used) * (uint64_t)(xs[k]->ne[0] * xs[k]->ne[1]);
    }
    return n;
}

uint64_t g4_model_decode_bytes(const g4_model *m) {
    if (!m || !m->layers) return 0;
    uint64_t b = 0;
    for (int32_t il = 0; il < m->cfg.n_layer; il++) {
        const g4_layer *l = &m->layers[il];
        const g4_tensor *ts[] = { l->attn_norm, l->attn_q, l->attn_q_norm, l->attn_output, l->post_attention_norm,
                                  l->ffn_norm, l->ffn_gate, l->ffn_up, l->ffn_down, l->post_ffw_norm,
                                  l->inp_gate, l->proj, l->post_norm,
                                  /* MoE: the router and the norms and scales around the experts */
                                  l->ffn_gate_inp, l->ffn_gate_inp_s, l->pre_ffw_norm_2, l->post_ffw_norm_1,
                                  l->post_ffw_norm_2, l->down_exps_s, l->gate_exps_s, l->up_exps_s };
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) b += t_bytes(ts[k]);
        if (l->has_kv) b += t_bytes(l->attn_k) + t_bytes(l->attn_k_norm) + (l->v_is_k ? 0 : t_bytes(l->attn_v));
    }
    b += routed_bytes(m);
    /* the head (token_embd when tied) in full, plus the token's embedding row(s) */
    b += (m->output ? t_bytes(m->output) : t_row(m->token_embd) * (uint64_t)m->cfg.n_vocab) + t_row(m->token_embd) +
         t_bytes(m->output_norm);
    /* per-layer embeddings: one row of per_layer_token_embd, the projection in full */
    b += t_row(m->per_layer_token_embd) + t_bytes(m->per_layer_model_proj) + t_bytes(m->per_layer_proj_norm);
    return b;
}
int32_t g4_model_token_bos(const g4_model *m) { return m && m->vocab ? tok_bos(m->vocab) : -1; }
int32_t g4_model_token_eos(const g4_model *m) { return m && m->vocab ? tok_eos(m->vocab) : -1; }
int g4_model_is_eog(const g4_model *m, int32_t tok) { return m && m->vocab ? tok_is_eog(m->vocab, tok) : 0; }

const char *g4_model_meta_str(const g4_model *m, const char *key) {
    if (!m || !key) return NULL;
    const gguf_kv *kv = gguf_find(m->gguf, key);
    return kv && kv->type == GGUF_STRING ? kv->str : NULL;
}
