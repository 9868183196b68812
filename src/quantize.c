/* quantize.c - GGUF -> GGUF conversion with llama-quantize's per-tensor rules (quantize.h).
 *
 * Facts taken from llama.cpp v0.5.0 src/llama-quant.cpp (tensor_allows_quantization,
 * tensor_get_category, llama_tensor_get_type(_impl), tensor_type_fallback, the ftype table);
 * the code is our own. Rows are converted with the scalar references of quant_ref.c, which
 * are byte-identical with ggml's *_ref quantizers, i.e. with imatrix-free llama-quantize.
 */
#include "quantize.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "quant/quant.h"
#include "quant/quant_ref.h"

/* ==== names ==== */

typedef struct ftype_info {
    const char *name;
    int         ftype;
    uint32_t    type;
    int         pure;
} ftype_info;

static const ftype_info FTYPES[] = {
    { "Q4_0",   QZ_FTYPE_Q4_0,   G4_TYPE_Q4_0, 0 },
    { "Q4_1",   QZ_FTYPE_Q4_1,   G4_TYPE_Q4_1, 0 },
    { "Q5_0",   QZ_FTYPE_Q5_0,   G4_TYPE_Q5_0, 0 },
    { "Q5_1",   QZ_FTYPE_Q5_1,   G4_TYPE_Q5_1, 0 },
    { "Q8_0",   QZ_FTYPE_Q8_0,   G4_TYPE_Q8_0, 0 },
    { "Q4_K",   QZ_FTYPE_Q4_K_M, G4_TYPE_Q4_K, 1 }, /* every matrix Q4_K (llama-quantize --pure) */
    { "Q5_K",   QZ_FTYPE_Q5_K_M, G4_TYPE_Q5_K, 1 },
    { "Q6_K",   QZ_FTYPE_Q6_K,   G4_TYPE_Q6_K, 0 },
    { "Q4_K_S", QZ_FTYPE_Q4_K_S, G4_TYPE_Q4_K, 0 },
    { "Q4_K_M", QZ_FTYPE_Q4_K_M, G4_TYPE_Q4_K, 0 },
    { "Q5_K_S", QZ_FTYPE_Q5_K_S, G4_TYPE_Q5_K, 0 },
    { "Q5_K_M", QZ_FTYPE_Q5_K_M, G4_TYPE_Q5_K, 0 },
    { "F16",    QZ_FTYPE_F16,    G4_TYPE_F16,  0 },
    { "BF16",   QZ_FTYPE_BF16,   G4_TYPE_BF16, 0 },
    { "F32",    QZ_FTYPE_F32,    G4_TYPE_F32,  0 },
};
#define N_FTYPES (sizeof FTYPES / sizeof FTYPES[0])

g4_status qz_ftype_from_name(const char *name, int *ftype, uint32_t *default_type, int *pure) {
    if (!name) return G4_ERR_ARG;
    for (size_t i = 0; i < N_FTYPES; i++) {
        if (strcasecmp(name, FTYPES[i].name) == 0) {
            *ftype = FTYPES[i].ftype;
            *default_type = FTYPES[i].type;
            *pure = FTYPES[i].pure;
            return G4_OK;
        }
    }
    return G4_ERR_ARG;
}

const char *qz_ftype_names(void) {
    return "Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K Q5_K Q6_K Q4_K_S Q4_K_M Q5_K_S Q5_K_M F16 BF16 F32";
}

int qz_type_from_name(const char *name) {
    if (!name) return -1;
    int t = quant_type_from_name(name);
    if (t < 0) return -1;
    const g4_type_traits *tr = quant_traits((uint32_t)t);
    if (!tr || !tr->weight || !quant_can_quantize((uint32_t)t)) return -1;
    return t;
}

g4_status qz_parse_override(const char *arg, qz_override *o, char *err, size_t errlen) {
    const char *eq = arg ? strrchr(arg, '=') : NULL;
    if (!eq || eq == arg)
        return g4_errf(G4_ERR_ARG, err, errlen, "--tensor-type expects PATTERN=TYPE, got '%s'", arg ? arg : "");
    size_t plen = (size_t)(eq - arg);
    if (plen >= sizeof o->pattern)
        return g4_errf(G4_ERR_ARG, err, errlen, "--tensor-type: pattern longer than %zu bytes", sizeof o->pattern - 1);
    int t = qz_type_from_name(eq + 1);
    if (t < 0)
        return g4_errf(G4_ERR_ARG, err, errlen, "--tensor-type: '%s' is not a type gemma4.c can write and read", eq + 1);
    memcpy(o->pattern, arg, plen);
    o->pattern[plen] = '\0';
    o->type = (uint32_t)t;
    regex_t re;
    int rc = regcomp(&re, o->pattern, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char msg[128];
        regerror(rc, &re, msg, sizeof msg);
        return g4_errf(G4_ERR_ARG, err, errlen, "--tensor-type: bad pattern '%s': %s", o->pattern, msg);
    }
    regfree(&re);
    return G4_OK;
}

g4_status qz_params_init(qz_params *p, const char *ftype_name, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    p->token_embd_type = p->per_layer_type = p->output_type = -1;
    p->n_threads = 1;
    if (qz_ftype_from_name(ftype_name, &p->ftype, &p->default_type, &p->pure) != G4_OK)
        return g4_errf(G4_ERR_ARG, err, errlen, "unknown quantization type '%s' (one of %s)",
                       ftype_name ? ftype_name : "", qz_ftype_names());
    return G4_OK;
}

/* ==== per-tensor rules ==== */

enum { CAT_TOKEN_EMBD, CAT_ATTN_Q, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_QKV, CAT_ATTN_KV_B, CAT_ATTN_OUT,
       CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN, CAT_OUTPUT, CAT_OTHER };

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static int category(const char *name) {
    if (!strcmp(name, "output.weight")) return CAT_OUTPUT;
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight")) return CAT_TOKEN_EMBD;
    if (has(name, "attn_qkv.weight")) return CAT_ATTN_QKV;
    if (has(name, "attn_kv_b.weight")) return CAT_ATTN_KV_B;
    if (has(name, "attn_v.weight")) return CAT_ATTN_V;
    if (has(name, "attn_k.weight")) return CAT_ATTN_K;
    if (has(name, "attn_q.weight")) return CAT_ATTN_Q;
    if (has(name, "attn_output.weight")) return CAT_ATTN_OUT;
    if (has(name, "ffn_up")) return CAT_FFN_UP;
    if (has(name, "ffn_gate")) return CAT_FFN_GATE;
    if (has(name, "ffn_down")) return CAT_FFN_DOWN;
    return CAT_OTHER;
}

static int cat_is_attn_v(int c) { return c == CAT_ATTN_V || c == CAT_ATTN_QKV || c == CAT_ATTN_KV_B; }

static int n_dims_of(const gguf_tensor *t) { /* ggml_n_dims: trailing 1s do not count */
    for (int i = GGUF_MAX_DIMS - 1; i >= 1; i--)
        if (t->ne[i] > 1) return i + 1;
    return 1;
}

/* tensor_allows_quantization (the parts that can name a tensor of a GGUF) */
static int allows_quantization(const gguf_tensor *t) {
    if (n_dims_of(t) < 2) return 0;
    const char *n = t->name;
    size_t len = strlen(n);
    if (len < 6 || strcmp(n + len - 6, "weight") != 0) return 0;
    static const char *const NOT[] = {
        "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
        "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
        "indexer.q_proj.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd",
        "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook",
        "mm.a.code_embd", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
        "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
        "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
        "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
        "time_mix_lerp_fused.weight",
    };
    for (size_t i = 0; i < sizeof NOT / sizeof NOT[0]; i++)
        if (has(n, NOT[i])) return 0;
    if (!strcmp(n, "position_embd.weight") || !strcmp(n, "token_types.weight")) return 0;
    return 1;
}

static int use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

typedef struct plan_state {
    const qz_params *p;
    regex_t re[QZ_MAX_OVERRIDES];
    int     n_re;
    int     tied;
    int     n_attn_v, i_attn_v;
    int     n_ffn_down, i_ffn_down;
    int     n_expert;       /* <arch>.expert_count (0 = dense) */
    const char *bad_layer;  /* an expert model's ffn_down without a valid blk.N. (an error) */
} plan_state;

static long layer_of(const char *name);

static int is_quantized(uint32_t type) {
    return type != G4_TYPE_F32 && type != G4_TYPE_F16 && type != G4_TYPE_BF16;
}

static uint32_t blck(uint32_t type) {
    const g4_type_traits *t = quant_traits(type);
    return t ? t->blck : 1;
}

/* llama_tensor_get_type_impl for the ftypes of FTYPES (no imatrix, no Falcon/70B cases). MoE
 * files (expert_count > 1): ffn_down's layer is read from the name ("blk.N."), not counted
 * (a layer has ffn_down and ffn_down_exps); with exactly 8 experts attn_v and attn_k take
 * Q8_0 and attn_output Q5_K (Q4_K_S / Q4_K_M). The router (ffn_gate_inp) is never quantized
 * (allows_quantization); ffn_gate_up_exps is an ffn_gate tensor, like ffn_gate_exps. */
static uint32_t mix_rules(plan_state *s, const gguf_tensor *t, uint32_t nt, int cat) {
    const int ft = s->p->ftype;
    if (cat == CAT_OUTPUT || (s->tied && cat == CAT_TOKEN_EMBD)) {
        if (s->p->output_type >= 0) return (uint32_t)s->p->output_type;
        if (t->ne[0] % blck(nt) != 0) return G4_TYPE_Q8_0;
        if (nt != G4_TYPE_Q8_0) return G4_TYPE_Q6_K;
        return nt;
    }
    if (cat == CAT_TOKEN_EMBD) return nt;
    if (cat_is_attn_v(cat)) {
        if ((ft == QZ_FTYPE_Q4_K_M || ft == QZ_FTYPE_Q5_K_M) && use_more_bits(s->i_attn_v, s->n_attn_v))
            nt = G4_TYPE_Q6_K;
        else if (ft == QZ_FTYPE_Q4_K_S && s->i_attn_v < 4)
            nt = G4_TYPE_Q5_K;
        if (s->n_expert == 8) nt = G4_TYPE_Q8_0; /* "for the 8-expert model, bumping this to Q8_0" */
        s->i_attn_v++;
        return nt;
    }
    if (cat == CAT_ATTN_K && s->n_expert == 8) return G4_TYPE_Q8_0;
    if (cat == CAT_ATTN_OUT && s->n_expert == 8 && (ft == QZ_FTYPE_Q4_K_S || ft == QZ_FTYPE_Q4_K_M)) return G4_TYPE_Q5_K;
    if (cat == CAT_FFN_DOWN) {
        int i = s->i_ffn_down, n = s->n_ffn_down;
        if (s->n_expert > 1) { /* ref: layer_info */
            long l = layer_of(t->name);
            if (l < 0 || l >= n) {
                s->bad_layer = t->name;
                return nt;
            }
            i = (int)l;
        }
        if (ft == QZ_FTYPE_Q4_K_M && use_more_bits(i, n)) nt = G4_TYPE_Q6_K;
        else if (ft == QZ_FTYPE_Q5_K_M && use_more_bits(i, n)) nt = G4_TYPE_Q6_K;
        else if (ft == QZ_FTYPE_Q4_K_S && i < n / 8) nt = G4_TYPE_Q5_K;
        s->i_ffn_down++;
        return nt;
    }
    return nt;
}

/* tensor_type_fallback */
static uint32_t fallback(const gguf_tensor *t, uint32_t nt, int *fell) {
    *fell = 0;
    if (t->ne[0] % blck(nt) == 0) return nt;
    *fell = 1;
    uint32_t r;
    switch (nt) {
    case G4_TYPE_Q2_K: case G4_TYPE_Q3_K: r = G4_TYPE_Q4_0; break;
    case G4_TYPE_Q4_K: r = G4_TYPE_Q5_0; break;
    case G4_TYPE_Q5_K: r = G4_TYPE_Q5_1; break;
    case G4_TYPE_Q6_K: r = G4_TYPE_Q8_0; break;
    case G4_TYPE_IQ4_XS: r = G4_TYPE_IQ4_NL; break;
    default: r = nt; break;
    }
    if (t->ne[0] % blck(r) != 0) r = G4_TYPE_F16;
    return r;
}

static int match_override(plan_state *s, const char *name, uint32_t *type) {
    for (int i = 0; i < s->n_re; i++) {
        if (regexec(&s->re[i], name, 0, NULL, 0) == 0) {
            *type = s->p->overrides[i].type;
            return 1;
        }
    }
    return 0;
}

static uint32_t choose(plan_state *s, const gguf_tensor *t, int *fell) {
    *fell = 0;
    const qz_params *p = s->p;
    const int cat = category(t->name);
    uint32_t nt = p->default_type, forced;
    int explicit_type = 0;
    if (cat == CAT_TOKEN_EMBD && !strcmp(t->name, "per_layer_token_embd.weight") &&
        (p->per_layer_type >= 0 || p->token_embd_type >= 0)) {
        if (match_override(s, t->name, &forced)) nt = forced;
        else nt = (uint32_t)(p->per_layer_type >= 0 ? p->per_layer_type : p->token_embd_type);
        explicit_type = 1;
    } else if (cat == CAT_TOKEN_EMBD && p->token_embd_type >= 0) {
        nt = (uint32_t)p->token_embd_type;
        explicit_type = 1;
    } else if (cat == CAT_OUTPUT && p->output_type >= 0) {
        nt = (uint32_t)p->output_type;
        explicit_type = 1;
    }
    if (explicit_type || is_quantized(p->default_type)) {
        if (!explicit_type) {
            if (match_override(s, t->name, &forced)) nt = forced;
            else if (!p->pure) nt = mix_rules(s, t, nt, cat);
        }
        nt = fallback(t, nt, fell);
    }
    return nt;
}

/* "blk.N." layer number as sscanf("blk.%d.") reads it; -1 otherwise */
static long layer_of(const char *name) {
    if (strncmp(name, "blk.", 4) != 0) return -1;
    const char *q = name + 4;
    int neg = 0;
    if (*q == '-' || *q == '+') neg = *q++ == '-';
    if (*q < '0' || *q > '9') return -1;
    long v = 0;
    while (*q >= '0' && *q <= '9' && v < 100000000) v = v * 10 + (*q++ - '0');
    return neg ? -v : v;
}

typedef struct order_item { long layer; const char *name; size_t idx; } order_item;

static int cmp_order(const void *a, const void *b) {
    const order_item *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return strcmp(x->name, y->name);
}

g4_status qz_plan(const gguf_file *f, const qz_params *p, qz_choice *choices, char *err, size_t errlen) {
    const size_t n = gguf_n_tensors(f);
    plan_state s;
    memset(&s, 0, sizeof s);
    s.p = p;
    if (p->n_overrides < 0 || p->n_overrides > QZ_MAX_OVERRIDES)
        return g4_errf(G4_ERR_ARG, err, errlen, "quantize: too many --tensor-type patterns (max %d)", QZ_MAX_OVERRIDES);
    for (int i = 0; i < p->n_overrides; i++) {
        if (regcomp(&s.re[i], p->overrides[i].pattern, REG_EXTENDED | REG_NOSUB) != 0) {
            for (int k = 0; k < s.n_re; k++) regfree(&s.re[k]);
            return g4_errf(G4_ERR_ARG, err, errlen, "quantize: bad pattern '%s'", p->overrides[i].pattern);
        }
        s.n_re++;
    }
    /* n_layer for the ffn_down counter: <arch>.block_count, else the highest blk.N + 1 */
    long n_layer = -1;
    const gguf_kv *arch = gguf_find(f, "general.architecture");
    if (arch && arch->type == GGUF_STRING && arch->str_len < 200) {
        char key[256];
        snprintf(key, sizeof key, "%s.block_count", arch->str);
        const gguf_kv *bc = gguf_find(f, key);
        if (bc && bc->type == GGUF_UINT32 && bc->v.u32 <= 100000) n_layer = (long)bc->v.u32;
    }
    s.tied = 1;
    long max_layer = -1;
    for (size_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        int c = category(t->name);
        if (cat_is_attn_v(c)) s.n_attn_v++;
        if (c == CAT_OUTPUT) s.tied = 0;
        long l = layer_of(t->name);
        if (l > max_layer) max_layer = l;
    }
    if (n_layer < 0) n_layer = max_layer + 1;
    s.n_ffn_down = (int)n_layer;
    if (arch && arch->type == GGUF_STRING && arch->str_len < 200) {
        char key[256];
        snprintf(key, sizeof key, "%s.expert_count", arch->str);
        const gguf_kv *ec = gguf_find(f, key);
        if (ec && ec->type == GGUF_UINT32 && ec->v.u32 <= 100000) s.n_expert = (int)ec->v.u32;
    }

    order_item *ord = n ? malloc(n * sizeof *ord) : NULL;
    if (n && !ord) {
        for (int k = 0; k < s.n_re; k++) regfree(&s.re[k]);
        return g4_errf(G4_ERR_NOMEM, err, errlen, "quantize: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        ord[i].layer = layer_of(t->name);
        ord[i].name = t->name;
        ord[i].idx = i;
    }
    if (n) qsort(ord, n, sizeof *ord, cmp_order);

    g4_status st = G4_OK;
    for (size_t k = 0; k < n && st == G4_OK; k++) {
        const size_t i = ord[k].idx;
        const gguf_tensor *t = gguf_tensor_at(f, i);
        qz_choice *c = &choices[i];
        memset(c, 0, sizeof *c);
        c->src_type = c->dst_type = t->type;
        c->src_bytes = c->dst_bytes = t->nbytes;
        c->quantizable = allows_quantization(t);
        if (c->quantizable) c->dst_type = choose(&s, t, &c->fallback);
        if (s.bad_layer) {
            st = g4_errf(G4_ERR_FORMAT, err, errlen, "quantize: tensor '%s': no layer number in [0, %d) in its name (expert model)",
                         s.bad_layer, s.n_ffn_down);
            break;
        }
        if (c->dst_type != c->src_type) {
            char b1[32], b2[32];
            if (!quant_can_dequant(t->type) && t->type != G4_TYPE_F32)
                st = g4_errf(G4_ERR_UNSUPPORTED, err, errlen, "tensor '%s': cannot convert from %s", t->name,
                             quant_type_name(t->type, b1, sizeof b1));
            else if (!quant_can_quantize(c->dst_type))
                st = g4_errf(G4_ERR_UNSUPPORTED, err, errlen, "tensor '%s': cannot write %s", t->name,
                             quant_type_name(c->dst_type, b2, sizeof b2));
            else if (quant_row_bytes(t->type, t->ne[0]) == 0 || quant_row_bytes(c->dst_type, t->ne[0]) == 0)
                st = g4_errf(G4_ERR_FORMAT, err, errlen, "tensor '%s': row length %lld does not fit its type", t->name,
                             (long long)t->ne[0]);
            else {
                uint64_t rows = t->nbytes / quant_row_bytes(t->type, t->ne[0]);
                c->dst_bytes = rows * quant_row_bytes(c->dst_type, t->ne[0]);
            }
        }
        if (c->fallback && p->log) {
            char b1[32], b2[32], msg[256];
            snprintf(msg, sizeof msg, "%s: row length %lld is not a multiple of %u (%s): using %s", t->name,
                     (long long)t->ne[0], blck(p->default_type), quant_type_name(p->default_type, b1, sizeof b1),
                     quant_type_name(c->dst_type, b2, sizeof b2));
            p->log(p->log_ud, G4_LOG_INFO, msg);
        }
    }
    free(ord);
    for (int k = 0; k < s.n_re; k++) regfree(&s.re[k]);
    return st;
}

/* ==== conversion ==== */

typedef struct conv_job {
    const gguf_tensor *t;
    uint32_t dst_type;
    const uint8_t *src;   /* first row of the slab */
    uint8_t *dst;
    int64_t  r0, r1;      /* rows of this worker, relative to src/dst */
    size_t   src_row, dst_row;
    float   *buf;         /* [ne0] */
    int64_t  bad_row;     /* -1 or first row with a non-finite value */
} conv_job;

static void *conv_worker(void *arg) {
    conv_job *j = arg;
    const int64_t ne0 = j->t->ne[0];
    for (int64_t r = j->r0; r < j->r1; r++) {
        const uint8_t *s = j->src + (size_t)r * j->src_row;
        if (j->t->type == G4_TYPE_F32) memcpy(j->buf, s, (size_t)ne0 * sizeof(float));
        else quant_dequant_row(j->t->type, s, j->buf, ne0);
        for (int64_t k = 0; k < ne0; k++) {
            if (!isfinite(j->buf[k])) {
                if (j->bad_row < 0) j->bad_row = r;
                break;
            }
        }
        if (j->bad_row >= 0) break;
        quant_quantize_row(j->dst_type, j->buf, j->dst + (size_t)r * j->dst_row, ne0);
    }
    return NULL;
}

typedef struct fill_ctx {
    const gguf_file *f;
    const qz_params *p;
    const qz_choice *ch;
    size_t   n;
    uint64_t done, total;
    float   *bufs;        /* [n_threads][max_ne0] */
    int64_t  max_ne0;
    int      n_threads;
    char     msg[256];
} fill_ctx;

/* output part size: one write of the writer; bounds the memory of a conversion */
#define PART_BYTES ((size_t)16 << 20)

/* Produces whole output rows [offset/dst_row, ...) of tensor idx, at most cap bytes. */
static size_t fill_part(void *ud, size_t idx, uint64_t offset, void *dst, size_t cap) {
    fill_ctx *fc = ud;
    const gguf_tensor *t = gguf_tensor_at(fc->f, idx);
    const qz_choice *c = &fc->ch[idx];
    const qz_params *p = fc->p;
    if (p->should_abort && p->should_abort(p->abort_ud)) {
        snprintf(fc->msg, sizeof fc->msg, "interrupted");
        return 0;
    }
    if (c->dst_type == t->type) { /* plain copy */
        size_t n = t->nbytes - offset < cap ? (size_t)(t->nbytes - offset) : cap;
        memcpy(dst, t->data + offset, n);
        fc->done += n;
        if (p->progress) p->progress(p->progress_ud, idx, fc->n, fc->done, fc->total, t->name);
        return n;
    }
    const size_t src_row = quant_row_bytes(t->type, t->ne[0]);
    const size_t dst_row = quant_row_bytes(c->dst_type, t->ne[0]);
    const int64_t rows = (int64_t)(t->nbytes / src_row);
    if (dst_row == 0 || offset % dst_row != 0 || cap < dst_row) {
        snprintf(fc->msg, sizeof fc->msg, "tensor '%s': internal part size error", t->name);
        return 0;
    }
    const int64_t r = (int64_t)(offset / dst_row);
    int64_t nr = (int64_t)(cap / dst_row);
    if (nr > rows - r) nr = rows - r;
    const uint8_t *s = t->data + (size_t)r * src_row;
    uint8_t *d = dst;
    int nt = fc->n_threads;
    if (nt > nr) nt = (int)nr;
    conv_job jobs[64];
    pthread_t th[64];
    int started[64] = {0};
    for (int k = 0; k < nt; k++)
        jobs[k] = (conv_job){ t, c->dst_type, s, d, nr * k / nt, nr * (k + 1) / nt, src_row, dst_row,
                              fc->bufs + (size_t)k * (size_t)fc->max_ne0, -1 };
    for (int k = 1; k < nt; k++) started[k] = pthread_create(&th[k], NULL, conv_worker, &jobs[k]) == 0;
    conv_worker(&jobs[0]);
    for (int k = 1; k < nt; k++) {
        if (started[k]) pthread_join(th[k], NULL);
        else conv_worker(&jobs[k]); /* could not start a thread: do its share here */
    }
    for (int k = 0; k < nt; k++) {
        if (jobs[k].bad_row >= 0) {
            snprintf(fc->msg, sizeof fc->msg, "tensor '%s': row %lld holds NaN or Inf values", t->name,
                     (long long)(r + jobs[k].bad_row));
            return 0;
        }
    }
    fc->done += (uint64_t)nr * src_row;
    if (p->progress) p->progress(p->progress_ud, idx, fc->n, fc->done, fc->total, t->name);
    return (size_t)nr * dst_row;
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

g4_status qz_quantize_file(const char *in_path, const char *out_path, const qz_params *p, qz_stats *stats,
                           char *err, size_t errlen) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!in_path || !out_path || !p) return g4_errf(G4_ERR_ARG, err, errlen, "quantize: NULL argument");
    if (same_file(in_path, out_path))
        return g4_errf(G4_ERR_ARG, err, errlen, "%s: the output would overwrite the input", out_path);
    gguf_file *f = NULL;
    g4_status st = gguf_open(&f, in_path, 0, NULL, err, errlen);
    if (st != G4_OK) return st;
    const size_t n = gguf_n_tensors(f);
    qz_choice *ch = calloc(n ? n : 1, sizeof *ch);
    gguf_writer *w = gguf_writer_new();
    fill_ctx fc;
    memset(&fc, 0, sizeof fc);
    if (!ch || !w) { st = g4_errf(G4_ERR_NOMEM, err, errlen, "quantize: out of memory"); goto done; }
    st = qz_plan(f, p, ch, err, errlen);
    if (st != G4_OK) goto done;

    /* metadata, in the input's order */
    const gguf_kv *al = gguf_find(f, "general.alignment");
    if (al && al->type == GGUF_UINT32) gguf_w_alignment(w, al->v.u32);
    int have_ft = 0, have_qv = 0;
    for (size_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!strcmp(kv->key, "general.alignment") && kv->type == GGUF_UINT32) continue;
        if (!strcmp(kv->key, "split.no") || !strcmp(kv->key, "split.count") || !strcmp(kv->key, "split.tensors.count"))
            continue;
        if (!strcmp(kv->key, "general.file_type")) { gguf_w_u32(w, kv->key, (uint32_t)p->ftype); have_ft = 1; continue; }
        if (!strcmp(kv->key, "general.quantization_version")) { gguf_w_u32(w, kv->key, 2); have_qv = 1; continue; }
        gguf_w_copy_kv(w, kv);
    }
    if (!have_qv) gguf_w_u32(w, "general.quantization_version", 2);
    if (!have_ft) gguf_w_u32(w, "general.file_type", (uint32_t)p->ftype);

    int64_t max_ne0 = 1;
    for (size_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        gguf_w_tensor(w, t->name, ch[i].dst_type, t->n_dims, t->ne, NULL);
        if (ch[i].dst_type != ch[i].src_type && t->nbytes > 0 && t->ne[0] > max_ne0) max_ne0 = t->ne[0];
        fc.total += t->nbytes;
        if (stats) {
            stats->n_tensors++;
            stats->src_bytes += ch[i].src_bytes;
            stats->dst_bytes += ch[i].dst_bytes;
            stats->n_params += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
            if (ch[i].dst_type != ch[i].src_type) stats->n_converted++;
            else stats->n_copied++;
            if (ch[i].fallback) stats->n_fallback++;
        }
    }
    fc.f = f;
    fc.p = p;
    fc.ch = ch;
    fc.n = n;
    fc.max_ne0 = max_ne0;
    fc.n_threads = p->n_threads < 1 ? 1 : p->n_threads > 64 ? 64 : p->n_threads;
    uint64_t nb;
    if (g4_mul_ovf((uint64_t)fc.n_threads, (uint64_t)max_ne0 * sizeof(float), &nb) || nb > SIZE_MAX ||
        !(fc.bufs = malloc((size_t)nb))) {
        st = g4_errf(G4_ERR_NOMEM, err, errlen, "quantize: out of memory");
        goto done;
    }
    size_t part = p->part_bytes ? p->part_bytes : PART_BYTES;
    for (size_t i = 0; i < n; i++) { /* a part holds at least one output row */
        if (ch[i].dst_type == ch[i].src_type) continue; /* copies go in any part size */
        size_t rb = quant_row_bytes(ch[i].dst_type, gguf_tensor_at(f, i)->ne[0]);
        if (rb > part) part = rb;
    }
    st = gguf_writer_write_parts(w, out_path, fill_part, part, &fc, err, errlen);
    if (st != G4_OK && fc.msg[0]) {
        g4_status s2 = !strcmp(fc.msg, "interrupted") ? G4_ERR_ABORTED : G4_ERR_FORMAT;
        st = g4_errf(s2, err, errlen, "%s: %s", gguf_name(f), fc.msg);
    }
done:
    free(fc.bufs);
    gguf_writer_free(w);
    free(ch);
    gguf_close(f);
    return st;
}
