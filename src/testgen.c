/* testgen.c - writes random Gemma 4 models (see testgen.h).
 *
 * Owns: the synthetic vocabulary (specials, 256 byte tokens, printable ASCII, ▁, newline
 * runs, and merges learned from a small embedded text), the key set a gemma4 file needs, and
 * the tensor list with per-tensor deterministic values. Tensor data is produced one tensor
 * at a time through the writer's fill callback, so even E2B-sized files need little memory.
 */
#include "testgen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "quant/quant_ref.h"

enum { K_MATRIX, K_EMBED, K_NORM, K_QKNORM, K_ROPE, K_LSCALE, K_ROUTER };

typedef struct tspec {
    char     name[GGUF_MAX_NAME + 1];
    uint32_t type;
    int64_t  ne0, ne1, ne2;  /* ne2 > 0: a 3-D expert tensor of ne2 matrices */
    int      kind;
} tspec;

typedef struct gen {
    const g4_testgen_opts *o;
    tspec *t;
    size_t n_t, cap;
    int    hd_full;
    int32_t *pred;         /* [n_vocab] script models: the token after which row r of the head is
                            * the next token (-1 = none) */
    int32_t loop_first, loop_last; /* script_loop: loop_first's row also follows loop_last */
    float  *loop_row;      /* [n_embd] script_loop: scratch for loop_last's embedding */
} gen;

#define SCRIPT_GAIN 2.0f   /* head row = gain x embedding of the previous token */
#define SCRIPT_POST 1e-4f  /* post-norm scale of script models */

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t name_seed(const char *s, uint64_t seed) {
    uint64_t h = 1469598103934665603ull ^ seed;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return mix64(h);
}

typedef struct rng { uint64_t s; } rng;
static double rng_u(rng *r) { r->s += 0x9e3779b97f4a7c15ull; return ((double)(mix64(r->s) >> 11) + 0.5) / 9007199254740992.0; }
static float rng_gauss(rng *r) {
    double u1 = rng_u(r), u2 = rng_u(r);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static int skipped(const g4_testgen_opts *o, const char *name) {
    if (!o->skip) return 0;
    for (const char *const *p = o->skip; *p; p++)
        if (strcmp(*p, name) == 0) return 1;
    return 0;
}

void testgen_defaults(g4_testgen_opts *o) {
#define D(f, v) if (!o->f) o->f = v
    D(n_layer, 10); D(n_embd, 128); D(n_head, 2); D(n_head_kv, 1); D(head_dim_swa, 32); D(head_dim_full, 64);
    D(n_ff, 192); D(n_shared, 5); D(full_every, 5); D(n_per_layer, 16); D(window, 8); D(n_vocab, 512);
    D(n_ctx, 512); D(softcap, 30.0f); D(seed, 1);
    D(asst_n_embd, 64); D(asst_n_layer, 4); D(asst_n_head, o->n_head); D(asst_n_ff, 128);
    if (o->n_expert > 0) {
        D(n_expert_used, o->n_expert < 8 ? o->n_expert : 8);
        D(n_ff_exp, o->n_ff / 2);
    }
#undef D
}

void testgen_26b(g4_testgen_opts *o) {
    o->n_layer = 30; o->n_embd = 2816; o->n_head = 16; o->n_head_kv = 8; o->n_head_kv_full = 2;
    o->head_dim_swa = 256; o->head_dim_full = 512; o->n_ff = 2112; o->n_shared = -1; o->full_every = 6;
    o->n_per_layer = -1; o->window = 1024; o->n_vocab = 262144; o->n_ctx = 262144; o->softcap = 30.0f;
    o->k_eq_v_full = 1; o->n_expert = 128; o->n_expert_used = 8; o->n_ff_exp = 704;
}

void testgen_31b(g4_testgen_opts *o) {
    o->n_layer = 60; o->n_embd = 5376; o->n_head = 32; o->n_head_kv = 16; o->n_head_kv_full = 4;
    o->head_dim_swa = 256; o->head_dim_full = 512; o->n_ff = 21504; o->n_shared = -1; o->full_every = 6;
    o->n_per_layer = -1; o->window = 1024; o->n_vocab = 262144; o->n_ctx = 262144; o->softcap = 30.0f;
    o->k_eq_v_full = 1;
}

void testgen_e2b(g4_testgen_opts *o) {
    o->n_layer = 35; o->n_embd = 1536; o->n_head = 8; o->n_head_kv = 1; o->head_dim_swa = 256;
    o->head_dim_full = 512; o->n_ff = 6144; o->n_ff_shared = 12288; o->n_shared = 20; o->full_every = 5;
    o->n_per_layer = 256; o->window = 512; o->n_vocab = 262144; o->n_ctx = 131072; o->softcap = 30.0f;
}

void testgen_e2b_assistant(g4_testgen_opts *o) {
    o->assistant = 1; o->asst_n_embd = 256; o->asst_n_layer = 4; o->asst_n_head = 4; o->asst_n_ff = 2048;
}

/* ==== Vocabulary ==== */

static const char CORPUS[] =
    "the quick brown fox jumps over the lazy dog. it is a truth universally acknowledged, that a single man "
    "in possession of a good fortune, must be in want of a wife. the capital of france is paris. hello world! "
    "in the beginning was the word, and the word was with the model. there is nothing either good or bad "
    "but thinking makes it so. to be or not to be, that is the question. we hold these truths to be self "
    "evident, that all men are created equal. def main(): return 0 if x else 1 # code and numbers 12345";

typedef struct vocab {
    char   **tok;    /* [n] */
    size_t  *len;
    int32_t *type;
    float   *score;
    char   **merge;  /* [n_merge] "left right" */
    size_t  *mlen;
    size_t   n, n_merge;
} vocab;

static void vocab_free(vocab *v) {
    for (size_t i = 0; i < v->n; i++) free(v->tok[i]);
    for (size_t i = 0; i < v->n_merge; i++) free(v->merge[i]);
    free(v->tok); free(v->len); free(v->type); free(v->score); free(v->merge); free(v->mlen);
}

static int vocab_find(const vocab *v, const char *s, size_t n) {
    for (size_t i = 0; i < v->n; i++)
        if (v->len[i] == n && memcmp(v->tok[i], s, n) == 0) return (int)i;
    return -1;
}

static int vocab_add(vocab *v, const char *s, size_t n, int32_t type) {
    char *c = malloc(n + 1);
    if (!c) return -1;
    memcpy(c, s, n);
    c[n] = 0;
    v->tok[v->n] = c;
    v->len[v->n] = n;
    v->type[v->n] = type;
    v->score[v->n] = -1000.0f;
    v->n++;
    return 0;
}

/* Learns merges on CORPUS (spaces as ▁) until the vocabulary has n_vocab tokens. */
static int build_vocab(vocab *v, int n_vocab, int tool_tokens) {
    size_t cap = (size_t)n_vocab;
    v->tok = calloc(cap, sizeof *v->tok); v->len = calloc(cap, sizeof *v->len);
    v->type = calloc(cap, sizeof *v->type); v->score = calloc(cap, sizeof *v->score);
    v->merge = calloc(cap, sizeof *v->merge); v->mlen = calloc(cap, sizeof *v->mlen);
    if (!v->tok || !v->len || !v->type || !v->score || !v->merge || !v->mlen) return -1;
    static const char *const specials[] = { "<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>",
                                            "<|think|>", "<|channel>", "<channel|>", "<|tool_response>" };
    static const int32_t stype[] = { 3, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4 };
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
        if (vocab_add(v, specials[i], strlen(specials[i]), stype[i])) return -1;
    static const char *const tool_specials[] = { "<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", "<tool_response|>", "<|\"|>" };
    for (size_t i = 0; tool_tokens && i < sizeof tool_specials / sizeof *tool_specials; i++)
        if (vocab_add(v, tool_specials[i], strlen(tool_specials[i]), 4)) return -1;
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        if (vocab_add(v, s, 6, 6)) return -1;
    }
    if (vocab_add(v, "\xe2\x96\x81", 3, 1) || vocab_add(v, "\n", 1, 1) || vocab_add(v, "\n\n", 2, 1)) return -1;
    for (int ch = 0x21; ch < 0x7f; ch++) {
        char s = (char)ch;
        if (vocab_add(v, &s, 1, 1)) return -1;
    }
    /* symbols of the corpus: code points, spaces as ▁ */
    size_t cn = sizeof CORPUS - 1, ns = 0;
    int *sym = malloc(cn * sizeof *sym);
    if (!sym) return -1;
    for (size_t i = 0; i < cn; i++) {
        int id = CORPUS[i] == ' ' ? vocab_find(v, "\xe2\x96\x81", 3) : vocab_find(v, &CORPUS[i], 1);
        sym[ns++] = id;
    }
    int rc = 0;
    while ((int)v->n < n_vocab) {
        /* most frequent adjacent pair (first on ties); never merge across a ▁ boundary start */
        int ba = -1, bb = -1, bc = 0;
        for (size_t i = 0; i + 1 < ns; i++) {
            int a = sym[i], b = sym[i + 1];
            if (v->tok[b][0] == '\xe2') continue; /* words start with ▁ */
            int c = 0;
            for (size_t j = 0; j + 1 < ns; j++) c += sym[j] == a && sym[j + 1] == b;
            if (c > bc) { bc = c; ba = a; bb = b; }
        }
        if (bc < 1) break;
        size_t la = v->len[ba], lb = v->len[bb];
        char buf[256];
        if (la + lb + 1 >= sizeof buf) break;
        memcpy(buf, v->tok[ba], la);
        memcpy(buf + la, v->tok[bb], lb);
        int id = vocab_find(v, buf, la + lb);
        if (id < 0) {
            if (vocab_add(v, buf, la + lb, 1)) { rc = -1; break; }
            id = (int)v->n - 1;
        }
        char mb[260];
        memcpy(mb, v->tok[ba], la);
        mb[la] = ' ';
        memcpy(mb + la + 1, v->tok[bb], lb);
        v->merge[v->n_merge] = malloc(la + lb + 2);
        if (!v->merge[v->n_merge]) { rc = -1; break; }
        memcpy(v->merge[v->n_merge], mb, la + lb + 1);
        v->merge[v->n_merge][la + lb + 1] = 0;
        v->mlen[v->n_merge++] = la + lb + 1;
        size_t o = 0;
        for (size_t i = 0; i < ns; i++) {
            if (i + 1 < ns && sym[i] == ba && sym[i + 1] == bb) { sym[o++] = id; i++; }
            else sym[o++] = sym[i];
        }
        ns = o;
    }
    /* fill the rest with unused normal tokens */
    while (rc == 0 && (int)v->n < n_vocab) {
        char s[32];
        snprintf(s, sizeof s, "<unused%zu>", v->n);
        if (vocab_add(v, s, strlen(s), 1)) rc = -1;
    }
    free(sym);
    return rc;
}

/* ==== Tensors ==== */

static int add_t3(gen *g, const char *name, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, int kind);
static int add_t(gen *g, const char *name, uint32_t type, int64_t ne0, int64_t ne1, int kind) {
    return add_t3(g, name, type, ne0, ne1, 0, kind);
}

static int add_t3(gen *g, const char *name, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, int kind) {
    if (skipped(g->o, name)) return 0;
    if (g->n_t == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 256;
        tspec *nt = realloc(g->t, cap * sizeof *nt);
        if (!nt) return -1;
        g->t = nt;
        g->cap = cap;
    }
    tspec *t = &g->t[g->n_t++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->ne2 = ne2;
    t->kind = kind;
    return 0;
}

/* llama-quantize's use_more_bits(i, n) for the Q4_K_M mix */
static int more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* llama-quantize's tensor_type_fallback for a row of ne0 elements (the Q4_K_M mix only:
 * e.g. the 26B-A4B's 704-wide expert down rows and 2112-wide shared down rows) */
static uint32_t mix_fit(uint32_t type, int64_t ne0) {
    const g4_type_traits *tr = quant_traits(type);
    if (!tr || ne0 % tr->blck == 0) return type;
    uint32_t r = type == G4_TYPE_Q4_K ? G4_TYPE_Q5_0 : type == G4_TYPE_Q5_K ? G4_TYPE_Q5_1
               : type == G4_TYPE_Q6_K ? G4_TYPE_Q8_0 : type;
    return ne0 % quant_traits(r)->blck == 0 ? r : G4_TYPE_F16;
}

static int plan_tensors(gen *g) {
    const g4_testgen_opts *o = g->o;
    const int L = o->n_layer, E = o->n_embd, P = o->n_per_layer > 0 ? o->n_per_layer : 0;
    const int S = L - (o->n_shared > 0 ? o->n_shared : 0);
    uint32_t wt = o->wtype, et = o->embd_type ? o->embd_type : o->wtype;
    if (o->q4_k_m) { wt = G4_TYPE_Q4_K; et = G4_TYPE_Q6_K; }
    const uint32_t xt = o->q4_k_m ? G4_TYPE_Q4_K : o->exp_type ? o->exp_type : wt;
    const int mix = o->q4_k_m;
    /* llama-quantize: the 8-expert rules (attn_v, attn_k -> Q8_0; attn_output -> Q5_K) */
    const int x8 = mix && o->n_expert == 8;
    char nm[GGUF_MAX_NAME + 1];
    int rc = 0;
    rc |= add_t(g, "token_embd.weight", et, E, o->n_vocab, K_EMBED);
    if (o->untied) rc |= add_t(g, "output.weight", o->q4_k_m ? G4_TYPE_Q6_K : wt, E, o->n_vocab, K_MATRIX);
    rc |= add_t(g, "output_norm.weight", G4_TYPE_F32, E, 0, K_NORM);
    if (P) {
        rc |= add_t(g, "per_layer_token_embd.weight", o->q4_k_m ? G4_TYPE_Q5_K : et, (int64_t)P * L, o->n_vocab, K_EMBED);
        rc |= add_t(g, "per_layer_model_proj.weight", o->q4_k_m ? G4_TYPE_BF16 : wt, E, (int64_t)P * L, K_MATRIX);
        rc |= add_t(g, "per_layer_proj_norm.weight", G4_TYPE_F32, P, 0, K_NORM);
    }
    rc |= add_t(g, "rope_freqs.weight", G4_TYPE_F32, o->head_dim_full / 2, 0, K_ROPE);
    for (int i = 0; i < L; i++) {
        int full = i % o->full_every == o->full_every - 1;
        int hd = full ? o->head_dim_full : o->head_dim_swa;
        int nkv = full && o->n_head_kv_full ? o->n_head_kv_full : o->n_head_kv;
        int ff = i >= S && o->n_ff_shared ? o->n_ff_shared : o->n_ff;
        /* the attn_v counter and (dense files) the ffn_down counter advance once per layer,
         * so both follow the layer number, as the MoE rule (layer parsed from the name) does */
        uint32_t vt = mix && more_bits(i, L) ? G4_TYPE_Q6_K : wt;
        const int moe = o->n_expert > 0 && i >= o->moe_first;
        const int v_absent = o->k_eq_v || (o->k_eq_v_full && full);
        /* mix: every matrix through the row-length fallback (mix_fit) */
#define MT(ty, ne0) (mix ? mix_fit(ty, ne0) : (ty))
#define T(fmt, ty, a, b, k) do { snprintf(nm, sizeof nm, fmt, i); rc |= add_t(g, nm, ty, a, b, k); } while (0)
#define X(fmt, ty, a, b) do { snprintf(nm, sizeof nm, fmt, i); rc |= add_t3(g, nm, MT(ty, a), a, b, o->n_expert, K_MATRIX); } while (0)
        T("blk.%d.attn_norm.weight", G4_TYPE_F32, E, 0, K_NORM);
        T("blk.%d.attn_q.weight", MT(wt, E), E, (int64_t)hd * o->n_head, K_MATRIX);
        if (i < S || o->shared_kv_tensors) {
            T("blk.%d.attn_k.weight", x8 ? G4_TYPE_Q8_0 : MT(wt, E), E, (int64_t)hd * nkv, K_MATRIX);
            if (!v_absent) T("blk.%d.attn_v.weight", x8 ? G4_TYPE_Q8_0 : MT(vt, E), E, (int64_t)hd * nkv, K_MATRIX);
            T("blk.%d.attn_k_norm.weight", G4_TYPE_F32, hd, 0, K_QKNORM);
        }
        T("blk.%d.attn_q_norm.weight", G4_TYPE_F32, hd, 0, K_QKNORM);
        T("blk.%d.attn_output.weight", x8 ? MT(G4_TYPE_Q5_K, (int64_t)hd * o->n_head) : MT(wt, (int64_t)hd * o->n_head),
          (int64_t)hd * o->n_head, E, K_MATRIX);
        T("blk.%d.post_attention_norm.weight", G4_TYPE_F32, E, 0, K_NORM);
        T("blk.%d.ffn_norm.weight", G4_TYPE_F32, E, 0, K_NORM);
        T("blk.%d.ffn_gate.weight", MT(wt, E), E, ff, K_MATRIX);
        T("blk.%d.ffn_up.weight", MT(wt, E), E, ff, K_MATRIX);
        T("blk.%d.ffn_down.weight", MT(vt, ff), ff, E, K_MATRIX);
        T("blk.%d.post_ffw_norm.weight", G4_TYPE_F32, E, 0, K_NORM);
        if (moe) {
            const int64_t Ne = o->n_expert, fe = o->n_ff_exp;
            /* the router is never quantized (llama-quantize); its input scale and the norms f32 */
            T("blk.%d.ffn_gate_inp.weight", mix ? G4_TYPE_F32 : wt, E, Ne, K_ROUTER);
            T("blk.%d.ffn_gate_inp.scale", G4_TYPE_F32, E, 0, K_NORM);
            T("blk.%d.pre_ffw_norm_2.weight", G4_TYPE_F32, E, 0, K_NORM);
            T("blk.%d.post_ffw_norm_1.weight", G4_TYPE_F32, E, 0, K_NORM);
            T("blk.%d.post_ffw_norm_2.weight", G4_TYPE_F32, E, 0, K_NORM);
            if (o->moe_split) {
                X("blk.%d.ffn_gate_exps.weight", xt, E, fe);
                X("blk.%d.ffn_up_exps.weight", xt, E, fe);
            } else {
                X("blk.%d.ffn_gate_up_exps.weight", xt, E, 2 * fe);
            }
            X("blk.%d.ffn_down_exps.weight", mix && more_bits(i, L) ? G4_TYPE_Q6_K : xt, fe, E);
            if (o->moe_scales) {
                T("blk.%d.ffn_down_exps.scale", G4_TYPE_F32, Ne, 0, K_NORM);
                if (o->moe_split) {
                    T("blk.%d.ffn_gate_exps.scale", G4_TYPE_F32, Ne, 0, K_NORM);
                    T("blk.%d.ffn_up_exps.scale", G4_TYPE_F32, Ne, 0, K_NORM);
                }
            }
        }
#undef X
#undef MT
        if (P) {
            T("blk.%d.inp_gate.weight", o->q4_k_m ? G4_TYPE_F32 : wt, E, P, K_MATRIX);
            T("blk.%d.proj.weight", o->q4_k_m ? G4_TYPE_F32 : wt, P, E, K_MATRIX);
            T("blk.%d.post_norm.weight", G4_TYPE_F32, E, 0, K_NORM);
        }
        if (!o->no_layer_scale) T("blk.%d.layer_output_scale.weight", G4_TYPE_F32, 1, 0, K_LSCALE);
#undef T
    }
    return rc;
}

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

/* The assistant's tensors (llama.cpp gemma4-assistant.cpp load_arch_tensors); a layer is
 * full when it is the last one. */
static int asst_full(const g4_testgen_opts *o, int i) { return i == o->asst_n_layer - 1; }

static int plan_tensors_asst(gen *g) {
    const g4_testgen_opts *o = g->o;
    const int n = o->asst_n_embd, E = o->n_embd;
    uint32_t wt = o->wtype, et = o->embd_type ? o->embd_type : o->wtype;
    if (o->q4_k_m) { wt = G4_TYPE_Q4_K; et = G4_TYPE_Q6_K; }
    char nm[GGUF_MAX_NAME + 1];
    int rc = 0;
    rc |= add_t(g, "token_embd.weight", et, n, o->n_vocab, K_EMBED);
    rc |= add_t(g, "output_norm.weight", G4_TYPE_F32, n, 0, K_NORM);
    rc |= add_t(g, "nextn.pre_projection.weight", wt, 2 * (int64_t)E, n, K_MATRIX);
    rc |= add_t(g, "nextn.post_projection.weight", wt, n, E, K_MATRIX);
    rc |= add_t(g, "rope_freqs.weight", G4_TYPE_F32, o->head_dim_full / 2, 0, K_ROPE);
    for (int i = 0; i < o->asst_n_layer; i++) {
        const int hd = asst_full(o, i) ? o->head_dim_full : o->head_dim_swa, q = hd * o->asst_n_head;
#define T(fmt, ty, a, b, k) do { snprintf(nm, sizeof nm, fmt, i); rc |= add_t(g, nm, ty, a, b, k); } while (0)
        T("blk.%d.attn_norm.weight", G4_TYPE_F32, n, 0, K_NORM);
        T("blk.%d.attn_q.weight", wt, n, q, K_MATRIX);
        T("blk.%d.attn_q_norm.weight", G4_TYPE_F32, hd, 0, K_QKNORM);
        T("blk.%d.attn_output.weight", wt, q, n, K_MATRIX);
        T("blk.%d.post_attention_norm.weight", G4_TYPE_F32, n, 0, K_NORM);
        T("blk.%d.layer_output_scale.weight", G4_TYPE_F32, 1, 0, K_LSCALE);
        T("blk.%d.ffn_norm.weight", G4_TYPE_F32, n, 0, K_NORM);
        T("blk.%d.ffn_gate.weight", wt, n, o->asst_n_ff, K_MATRIX);
        T("blk.%d.ffn_up.weight", wt, n, o->asst_n_ff, K_MATRIX);
        T("blk.%d.ffn_down.weight", wt, o->asst_n_ff, n, K_MATRIX);
        T("blk.%d.post_ffw_norm.weight", G4_TYPE_F32, n, 0, K_NORM);
#undef T
    }
    return rc;
}

/* f32 values of tensor t, row r (ne0 floats) */
static void gen_row(const gen *g, const tspec *t, int64_t r, float *x) {
    if (g->pred && strcmp(t->name, "output.weight") == 0 && g->pred[r] >= 0) { /* script: next token's row */
        tspec e = *t;
        snprintf(e.name, sizeof e.name, "token_embd.weight");
        e.kind = K_EMBED;
        gen_row(g, &e, g->pred[r], x);
        if (g->o->script_loop && r == g->loop_first) { /* after the last token as well as after "\n" */
            gen_row(g, &e, g->loop_last, g->loop_row);
            for (int64_t i = 0; i < t->ne0; i++) x[i] += g->loop_row[i];
        }
        for (int64_t i = 0; i < t->ne0; i++) x[i] *= SCRIPT_GAIN;
        return;
    }
    rng R = { name_seed(t->name, g->o->seed ^ (g->o->assistant ? 0xa55157a47ull : 0)) ^ mix64((uint64_t)r + 1) };
    if (g->pred && t->kind == K_NORM && (ends_with(t->name, ".post_attention_norm.weight") ||
                                        ends_with(t->name, ".post_ffw_norm.weight") || ends_with(t->name, ".post_norm.weight"))) {
        for (int64_t i = 0; i < t->ne0; i++) x[i] = SCRIPT_POST * (1.0f + 0.1f * rng_gauss(&R));
        return;
    }
    switch (t->kind) {
    case K_MATRIX: case K_ROUTER: for (int64_t i = 0; i < t->ne0; i++) x[i] = 0.05f * rng_gauss(&R); break;
    case K_EMBED:  for (int64_t i = 0; i < t->ne0; i++) x[i] = 0.1f * rng_gauss(&R); break;
    case K_NORM:   for (int64_t i = 0; i < t->ne0; i++) x[i] = 1.0f + 0.1f * rng_gauss(&R); break;
    case K_QKNORM: {
        /* mean head_dim^-0.25 keeps attention (scale 1.0) well conditioned (oracle.md §7) */
        float mu = powf((float)t->ne0, -0.25f);
        for (int64_t i = 0; i < t->ne0; i++) x[i] = mu * (1.0f + 0.1f * rng_gauss(&R));
        break;
    }
    case K_ROPE: { /* proportional RoPE: 1.0 for the first hd*0.25/2 pairs, 1e30 after */
        int64_t ones = (int64_t)g->hd_full / 8;
        for (int64_t i = 0; i < t->ne0; i++) x[i] = i < ones ? 1.0f : 1e30f;
        break;
    }
    case K_LSCALE: x[0] = (float)(0.5 + 0.5 * rng_u(&R)); break;
    }
}

#define FAST_POOL 64

static int fill(void *ud, size_t idx, void *dst, size_t nbytes) {
    const gen *g = ud;
    if (idx >= g->n_t) { /* a tensor added by extra_tensors without data: zeros */
        memset(dst, 0, nbytes);
        return 0;
    }
    const tspec *t = &g->t[idx];
    int64_t rows = (t->ne1 ? t->ne1 : 1) * (t->ne2 ? t->ne2 : 1);
    uint32_t type = t->type;
    int twin = g->o->f32_twin && type != G4_TYPE_F32;
    size_t rb = quant_row_bytes(twin ? G4_TYPE_F32 : type, t->ne0);
    if (!rb || rb * (size_t)rows != nbytes) return -1;
    float *x = malloc((size_t)t->ne0 * sizeof(float));
    uint8_t *q = twin ? malloc(quant_row_bytes(type, t->ne0)) : NULL;
    if (!x || (twin && !q)) { free(x); free(q); return -1; }
    /* fast fill: only the first FAST_POOL rows are generated; the others copy one of them */
    /* (never for the router: repeated router rows would tie experts and leave some unused) */
    /* (nor for a script model's embeddings and head, whose rows must all differ) */
    const int whole = t->kind == K_ROPE || t->kind == K_ROUTER ||
                      (g->pred && (!strcmp(t->name, "token_embd.weight") || !strcmp(t->name, "output.weight")));
    int64_t gen_rows = g->o->fast_fill && !whole && rows > FAST_POOL ? FAST_POOL : rows;
    int rc = 0;
    for (int64_t r = 0; r < gen_rows && !rc; r++) {
        uint8_t *out = (uint8_t *)dst + (size_t)r * rb;
        gen_row(g, t, r, x);
        if (twin) {
            if (!quant_quantize_row(type, x, q, t->ne0)) rc = -1;
            quant_dequant_row(type, q, (float *)(void *)out, t->ne0);
        } else if (type == G4_TYPE_F32) {
            memcpy(out, x, rb);
        } else if (!quant_quantize_row(type, x, out, t->ne0)) {
            rc = -1;
        }
    }
    for (int64_t r = gen_rows; r < rows && !rc; r++)
        memcpy((uint8_t *)dst + (size_t)r * rb, (uint8_t *)dst + (size_t)(mix64((uint64_t)r) % FAST_POOL) * rb, rb);
    free(x);
    free(q);
    return rc;
}

/* ==== Keys ==== */

static void kv_u32(gguf_writer *w, const g4_testgen_opts *o, const char *k, uint32_t v) { if (!skipped(o, k)) gguf_w_u32(w, k, v); }
static void kv_f32(gguf_writer *w, const g4_testgen_opts *o, const char *k, float v) { if (!skipped(o, k)) gguf_w_f32(w, k, v); }
static void kv_str(gguf_writer *w, const g4_testgen_opts *o, const char *k, const char *v) { if (!skipped(o, k)) gguf_w_str(w, k, v, strlen(v)); }

static const char TEMPLATE[] =
    "{{ bos_token }}{%- for message in messages -%}<|turn>{{ message['role'] }}\n{{ message['content'] | trim }}"
    "<turn|>\n{%- endfor -%}{%- if add_generation_prompt -%}<|turn>model\n{%- endif -%}";

/* the text of token i as it detokenizes (▁ -> space; a byte token -> its byte) into buf */
static size_t tok_text(const vocab *v, size_t i, char *buf, size_t cap) {
    if (v->type[i] == 6) { buf[0] = (char)strtol(v->tok[i] + 3, NULL, 16); return 1; }
    size_t n = 0;
    for (size_t k = 0; k < v->len[i] && n < cap; k++) {
        if (k + 2 < v->len[i] && !memcmp(v->tok[i] + k, "\xe2\x96\x81", 3)) { buf[n++] = ' '; k += 2; }
        else buf[n++] = v->tok[i][k];
    }
    return n;
}

/* script models: spell o->script with tokens used once each, "\n" first, <eos> last; pred[] */
static g4_status script_chain(gen *g, const vocab *v, char *err, size_t errlen) {
    const char *s = g->o->script;
    size_t n = strlen(s), pos = 0;
    g->pred = malloc(v->n * sizeof *g->pred);
    char *used = calloc(v->n, 1);
    if (!g->pred || !used) { free(used); return g4_errf(G4_ERR_NOMEM, err, errlen, "testgen: out of memory"); }
    for (size_t i = 0; i < v->n; i++) g->pred[i] = -1;
    int prev = vocab_find(v, "\n", 1);
    used[prev] = 1;
    while (pos < n) {
        int best = -1;
        size_t best_len = 0;
        for (size_t i = 0; i < v->n; i++) {
            if (used[i] || (v->type[i] != 1 && v->type[i] != 4 && v->type[i] != 6)) continue;
            char t[256];
            size_t tl = tok_text(v, i, t, sizeof t);
            if (tl > best_len && tl <= n - pos && !memcmp(t, s + pos, tl)) { best = (int)i; best_len = tl; }
        }
        if (best < 0) {
            free(used);
            return g4_errf(G4_ERR_ARG, err, errlen, "testgen: script: no unused token spells byte %zu ('%c') of '%s'", pos, s[pos], s);
        }
        g->pred[best] = prev;
        if (!pos) g->loop_first = best;
        used[best] = 1;
        prev = best;
        pos += best_len;
    }
    if (g->o->script_loop) g->loop_last = prev; /* then the first token again, no <eos> */
    else g->pred[1] = prev;                     /* then <eos> */
    free(used);
    return G4_OK;
}

/* gemma4-assistant keys (llama.cpp load_hparams + gemma4-assistant load_arch_hparams) */
#define AK "gemma4-assistant."
static g4_status asst_keys(gguf_writer *w, const g4_testgen_opts *o, char *err, size_t errlen) {
    const int L = o->asst_n_layer;
    if (L < 1 || L > 64 || o->asst_n_embd == o->n_embd)
        return g4_errf(G4_ERR_ARG, err, errlen, "testgen: assistant needs 1..64 layers and an n_embd other than the target's");
    uint32_t kvh[64];
    uint8_t pat[64];
    int kv_arr = 0;
    for (int i = 0; i < L; i++) {
        pat[i] = !asst_full(o, i);
        kvh[i] = (uint32_t)(asst_full(o, i) && o->n_head_kv_full ? o->n_head_kv_full : o->n_head_kv);
        kv_arr |= kvh[i] != kvh[0];
    }
    kv_str(w, o, "general.architecture", "gemma4-assistant");
    kv_str(w, o, "general.name", "gemma4.c random test assistant");
    kv_u32(w, o, "general.quantization_version", 2);
    kv_u32(w, o, AK "block_count", (uint32_t)L);
    kv_u32(w, o, AK "nextn_predict_layers", (uint32_t)L);
    kv_u32(w, o, AK "context_length", (uint32_t)o->n_ctx);
    kv_u32(w, o, AK "embedding_length", (uint32_t)o->asst_n_embd);
    kv_u32(w, o, AK "embedding_length_out", (uint32_t)o->n_embd);
    kv_u32(w, o, AK "feed_forward_length", (uint32_t)o->asst_n_ff);
    kv_u32(w, o, AK "attention.head_count", (uint32_t)o->asst_n_head);
    if (kv_arr) { if (!skipped(o, AK "attention.head_count_kv")) gguf_w_arr(w, AK "attention.head_count_kv", GGUF_UINT32, kvh, (uint64_t)L); }
    else kv_u32(w, o, AK "attention.head_count_kv", kvh[0]);
    kv_u32(w, o, AK "attention.key_length", (uint32_t)o->head_dim_full);
    kv_u32(w, o, AK "attention.value_length", (uint32_t)o->head_dim_full);
    kv_u32(w, o, AK "attention.key_length_swa", (uint32_t)o->head_dim_swa);
    kv_u32(w, o, AK "attention.value_length_swa", (uint32_t)o->head_dim_swa);
    kv_u32(w, o, AK "rope.dimension_count", (uint32_t)o->head_dim_full);
    kv_u32(w, o, AK "rope.dimension_count_swa", (uint32_t)o->head_dim_swa);
    kv_f32(w, o, AK "rope.freq_base", 1000000.0f);
    kv_f32(w, o, AK "rope.freq_base_swa", 10000.0f);
    kv_u32(w, o, AK "attention.sliding_window", (uint32_t)o->window);
    if (!skipped(o, AK "attention.sliding_window_pattern"))
        gguf_w_arr(w, AK "attention.sliding_window_pattern", GGUF_BOOL, pat, (uint64_t)L);
    kv_u32(w, o, AK "attention.shared_kv_layers", (uint32_t)L);
    kv_f32(w, o, AK "attention.layer_norm_rms_epsilon", 1e-6f);
    return G4_OK;
}
#undef AK

static g4_status target_keys(gguf_writer *w, const g4_testgen_opts *o, char *err, size_t errlen) {
    const int L = o->n_layer;
    kv_str(w, o, "general.architecture", "gemma4");
    kv_str(w, o, "general.name", "gemma4.c random test model");
    kv_u32(w, o, "general.quantization_version", 2);
    kv_u32(w, o, "gemma4.block_count", (uint32_t)L);
    kv_u32(w, o, "gemma4.context_length", (uint32_t)o->n_ctx);
    kv_u32(w, o, "gemma4.embedding_length", (uint32_t)o->n_embd);
    kv_u32(w, o, "gemma4.embedding_length_per_layer_input", (uint32_t)(o->n_per_layer > 0 ? o->n_per_layer : 0));
    int S = L - (o->n_shared > 0 ? o->n_shared : 0);
    uint32_t *arr = calloc((size_t)L, sizeof *arr);
    uint8_t *pat = calloc((size_t)L, 1);
    if (!arr || !pat) { free(arr); free(pat); return g4_errf(G4_ERR_NOMEM, err, errlen, "testgen: out of memory"); }
    if (o->n_ff_shared) {
        for (int i = 0; i < L; i++) arr[i] = (uint32_t)(i >= S ? o->n_ff_shared : o->n_ff);
        if (!skipped(o, "gemma4.feed_forward_length")) gguf_w_arr(w, "gemma4.feed_forward_length", GGUF_UINT32, arr, (uint64_t)L);
    } else {
        kv_u32(w, o, "gemma4.feed_forward_length", (uint32_t)o->n_ff);
    }
    kv_u32(w, o, "gemma4.attention.head_count", (uint32_t)o->n_head);
    if (o->n_head_kv_full) {
        for (int i = 0; i < L; i++)
            arr[i] = (uint32_t)(i % o->full_every == o->full_every - 1 ? o->n_head_kv_full : o->n_head_kv);
        if (!skipped(o, "gemma4.attention.head_count_kv")) gguf_w_arr(w, "gemma4.attention.head_count_kv", GGUF_UINT32, arr, (uint64_t)L);
    } else {
        kv_u32(w, o, "gemma4.attention.head_count_kv", (uint32_t)o->n_head_kv);
    }
    kv_u32(w, o, "gemma4.attention.key_length", (uint32_t)o->head_dim_full);
    kv_u32(w, o, "gemma4.attention.value_length", (uint32_t)o->head_dim_full);
    kv_u32(w, o, "gemma4.attention.key_length_swa", (uint32_t)o->head_dim_swa);
    kv_u32(w, o, "gemma4.attention.value_length_swa", (uint32_t)o->head_dim_swa);
    kv_u32(w, o, "gemma4.rope.dimension_count", (uint32_t)o->head_dim_full);
    kv_u32(w, o, "gemma4.rope.dimension_count_swa", (uint32_t)o->head_dim_swa);
    kv_f32(w, o, "gemma4.rope.freq_base", 1000000.0f);
    kv_f32(w, o, "gemma4.rope.freq_base_swa", 10000.0f);
    kv_u32(w, o, "gemma4.attention.sliding_window", (uint32_t)o->window);
    for (int i = 0; i < L; i++) pat[i] = i % o->full_every != o->full_every - 1;
    if (!skipped(o, "gemma4.attention.sliding_window_pattern"))
        gguf_w_arr(w, "gemma4.attention.sliding_window_pattern", GGUF_BOOL, pat, (uint64_t)L);
    if (o->n_shared > 0) kv_u32(w, o, "gemma4.attention.shared_kv_layers", (uint32_t)o->n_shared);
    kv_f32(w, o, "gemma4.attention.layer_norm_rms_epsilon", 1e-6f);
    if (o->n_expert > 0) {
        kv_u32(w, o, "gemma4.expert_count", (uint32_t)o->n_expert);
        kv_u32(w, o, "gemma4.expert_used_count", (uint32_t)o->n_expert_used);
        kv_u32(w, o, "gemma4.expert_feed_forward_length", (uint32_t)o->n_ff_exp);
    }
    kv_f32(w, o, "gemma4.final_logit_softcapping", o->softcap < 0 ? 0.0f : o->softcap);
    free(arr);
    free(pat);

    return G4_OK;
}

static g4_status build(gguf_writer *w, gen *g, vocab *v, char *err, size_t errlen) {
    const g4_testgen_opts *o = g->o;
    if (o->n_vocab < 400) return g4_errf(G4_ERR_ARG, err, errlen, "testgen: n_vocab must be >= 400");
    if (build_vocab(v, o->n_vocab, o->script != NULL)) return g4_errf(G4_ERR_NOMEM, err, errlen, "testgen: out of memory");
    if (o->script) {
        g4_status st = script_chain(g, v, err, errlen);
        if (st != G4_OK) return st;
    }
    g4_status st = o->assistant ? asst_keys(w, o, err, errlen) : target_keys(w, o, err, errlen);
    if (st) return st;
    kv_str(w, o, "tokenizer.ggml.model", "gemma4");
    kv_str(w, o, "tokenizer.ggml.pre", "gemma4");
    if (!skipped(o, "tokenizer.ggml.tokens"))
        gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tok, v->len, v->n);
    if (!skipped(o, "tokenizer.ggml.scores")) gguf_w_arr(w, "tokenizer.ggml.scores", GGUF_FLOAT32, v->score, v->n);
    if (!skipped(o, "tokenizer.ggml.token_type")) gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, v->type, v->n);
    if (!skipped(o, "tokenizer.ggml.merges"))
        gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merge, v->mlen, v->n_merge);
    kv_u32(w, o, "tokenizer.ggml.bos_token_id", 2);
    kv_u32(w, o, "tokenizer.ggml.eos_token_id", 1);
    kv_u32(w, o, "tokenizer.ggml.unknown_token_id", 3);
    kv_u32(w, o, "tokenizer.ggml.padding_token_id", 0);
    if (!skipped(o, "tokenizer.ggml.add_bos_token")) gguf_w_bool(w, "tokenizer.ggml.add_bos_token", 1);
    if (!skipped(o, "tokenizer.ggml.add_space_prefix")) gguf_w_bool(w, "tokenizer.ggml.add_space_prefix", 0);
    kv_str(w, o, "tokenizer.chat_template", TEMPLATE);
    if (o->extra) o->extra(w, o->extra_ud);

    if (o->assistant ? plan_tensors_asst(g) : plan_tensors(g)) return g4_errf(G4_ERR_NOMEM, err, errlen, "testgen: out of memory");
    for (size_t i = 0; i < g->n_t; i++) {
        const tspec *t = &g->t[i];
        uint32_t type = o->f32_twin ? G4_TYPE_F32 : t->type;
        const g4_type_traits *tr = quant_traits(t->type);
        if (!tr || t->ne0 % tr->blck)
            return g4_errf(G4_ERR_ARG, err, errlen, "testgen: tensor '%s': row length %lld is not a multiple of the %s block size",
                           t->name, (long long)t->ne0, tr ? tr->name : "?");
        if (t->type != G4_TYPE_F32 && !quant_can_quantize(t->type))
            return g4_errf(G4_ERR_ARG, err, errlen, "testgen: cannot write type %s", tr->name);
        int64_t ne[3] = { t->ne0, t->ne1, t->ne2 };
        gguf_w_tensor(w, t->name, type, t->ne2 ? 3 : t->ne1 ? 2 : 1, ne, NULL);
    }
    if (o->extra_tensors) o->extra_tensors(w, o->extra_ud);
    return G4_OK;
}

static g4_status run(const char *path, void **buf, size_t *len, const g4_testgen_opts *in, char *err, size_t errlen) {
    g4_testgen_opts o = *in;
    testgen_defaults(&o);
    if (o.script_loop && !o.script) return g4_errf(G4_ERR_ARG, err, errlen, "testgen: script_loop needs a script");
    if (o.script) o.untied = 1;
    gen g = { .o = &o, .hd_full = o.head_dim_full };
    if (o.script_loop && !(g.loop_row = malloc((size_t)o.n_embd * sizeof *g.loop_row)))
        return g4_errf(G4_ERR_NOMEM, err, errlen, "testgen: out of memory");
    vocab v = {0};
    gguf_writer *w = gguf_writer_new();
    if (!w) { free(g.loop_row); return g4_errf(G4_ERR_NOMEM, err, errlen, "testgen: out of memory"); }
    g4_status st = build(w, &g, &v, err, errlen);
    if (!st) st = path ? gguf_writer_write(w, path, fill, &g, err, errlen)
                       : gguf_writer_write_mem(w, buf, len, fill, &g, err, errlen);
    gguf_writer_free(w);
    vocab_free(&v);
    free(g.t);
    free(g.pred);
    free(g.loop_row);
    return st;
}

g4_status testgen_write(const char *path, const g4_testgen_opts *o, char *err, size_t errlen) {
    return run(path, NULL, NULL, o, err, errlen);
}

g4_status testgen_write_mem(void **buf, size_t *len, const g4_testgen_opts *o, char *err, size_t errlen) {
    return run(NULL, buf, len, o, err, errlen);
}
