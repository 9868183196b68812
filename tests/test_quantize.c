/* test_quantize.c - group `quantize`: src/quantize.c's per-tensor type choice against
 * llama-quantize's rules worked out by hand (llama.cpp v0.5.0 src/llama-quant.cpp), name and
 * pattern parsing, the conversion itself (round trip through our reader, values close to the
 * source), NaN refusal, abort, and that a failed run leaves no output file.
 * tests/sh/quantize.sh compares whole files with llama.cpp's own llama_model_quantize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "g4_impl.h"
#include "quant/quant.h"
#include "quant/quant_ref.h"
#include "quantize.h"
#include "testgen.h"
#include "t.h"

static int use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* testgen model in memory + its parsed view */
typedef struct tmodel { void *buf; size_t len; gguf_file *f; } tmodel;

static int tm_make(tmodel *m, g4_testgen_opts *o) {
    char err[256];
    memset(m, 0, sizeof *m);
    if (testgen_write_mem(&m->buf, &m->len, o, err, sizeof err) != G4_OK) { fprintf(stderr, "%s\n", err); return 0; }
    if (gguf_open_mem(&m->f, m->buf, m->len, "t.gguf", NULL, err, sizeof err) != G4_OK) { fprintf(stderr, "%s\n", err); return 0; }
    return 1;
}
static void tm_free(tmodel *m) { gguf_close(m->f); free(m->buf); }

static uint32_t type_of(const gguf_file *f, const qz_choice *c, const char *name) {
    for (size_t i = 0; i < gguf_n_tensors(f); i++)
        if (!strcmp(gguf_tensor_at(f, i)->name, name)) return c[i].dst_type;
    return 9999;
}

static g4_testgen_opts d256(void) {
    g4_testgen_opts o;
    memset(&o, 0, sizeof o);
    o.n_embd = 256; o.n_head = 4; o.head_dim_swa = 64; o.head_dim_full = 128;
    o.n_ff = 256; o.n_ff_shared = 512; o.n_per_layer = 256;
    return o;
}

static void check_q4_k_m(void) {
    g4_testgen_opts o = d256();
    tmodel m;
    T_CHECK(tm_make(&m, &o));
    if (!m.f) return;
    qz_params p;
    char err[256];
    T_CHECK(qz_params_init(&p, "q4_k_m", err, sizeof err) == G4_OK);
    T_CHECK(p.ftype == QZ_FTYPE_Q4_K_M && p.default_type == G4_TYPE_Q4_K && !p.pure);
    size_t n = gguf_n_tensors(m.f);
    qz_choice *c = calloc(n, sizeof *c);
    T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
    /* tied model: token_embd and per_layer_token_embd take the output rule -> Q6_K */
    T_CHECK(type_of(m.f, c, "token_embd.weight") == G4_TYPE_Q6_K);
    T_CHECK(type_of(m.f, c, "per_layer_token_embd.weight") == G4_TYPE_Q6_K);
    T_CHECK(type_of(m.f, c, "per_layer_model_proj.weight") == G4_TYPE_F32);
    T_CHECK(type_of(m.f, c, "per_layer_proj_norm.weight") == G4_TYPE_F32);
    T_CHECK(type_of(m.f, c, "rope_freqs.weight") == G4_TYPE_F32);
    T_CHECK(type_of(m.f, c, "output_norm.weight") == G4_TYPE_F32);
    /* 10 layers, the last 5 share KV (no attn_v): attn_v counter runs over 5 tensors */
    int n_v = 0;
    for (int l = 0; l < 10; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blk.%d.attn_v.weight", l);
        uint32_t tv = type_of(m.f, c, nm);
        if (tv != 9999) {
            T_CHECKF(tv == (use_more_bits(n_v, 5) ? G4_TYPE_Q6_K : G4_TYPE_Q4_K), "%s %u", nm, tv);
            n_v++;
        }
        snprintf(nm, sizeof nm, "blk.%d.ffn_down.weight", l);
        T_CHECKF(type_of(m.f, c, nm) == (use_more_bits(l, 10) ? G4_TYPE_Q6_K : G4_TYPE_Q4_K), "%s", nm);
        snprintf(nm, sizeof nm, "blk.%d.ffn_up.weight", l);
        T_CHECK(type_of(m.f, c, nm) == G4_TYPE_Q4_K);
        snprintf(nm, sizeof nm, "blk.%d.attn_q.weight", l);
        T_CHECK(type_of(m.f, c, nm) == G4_TYPE_Q4_K);
        snprintf(nm, sizeof nm, "blk.%d.inp_gate.weight", l);
        T_CHECK(type_of(m.f, c, nm) == G4_TYPE_Q4_K);
        snprintf(nm, sizeof nm, "blk.%d.attn_norm.weight", l);
        T_CHECK(type_of(m.f, c, nm) == G4_TYPE_F32);
        snprintf(nm, sizeof nm, "blk.%d.layer_output_scale.weight", l);
        T_CHECK(type_of(m.f, c, nm) == G4_TYPE_F32);
    }
    T_CHECK(n_v == 5);
    /* the exact layers (n = 5: 2, 4; n = 10: 0, 3, 6, 8, 9) */
    T_CHECK(type_of(m.f, c, "blk.2.attn_v.weight") == G4_TYPE_Q6_K);
    T_CHECK(type_of(m.f, c, "blk.4.attn_v.weight") == G4_TYPE_Q6_K);
    T_CHECK(type_of(m.f, c, "blk.1.attn_v.weight") == G4_TYPE_Q4_K);
    T_CHECK(type_of(m.f, c, "blk.8.ffn_down.weight") == G4_TYPE_Q6_K);
    T_CHECK(type_of(m.f, c, "blk.7.ffn_down.weight") == G4_TYPE_Q4_K);

    /* Q4_K_S: attn_v of the first 4 and ffn_down of layer < n/8 -> Q5_K */
    T_CHECK(qz_params_init(&p, "Q4_K_S", err, sizeof err) == G4_OK);
    T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
    T_CHECK(type_of(m.f, c, "blk.3.attn_v.weight") == G4_TYPE_Q5_K);
    T_CHECK(type_of(m.f, c, "blk.4.attn_v.weight") == G4_TYPE_Q4_K);
    T_CHECK(type_of(m.f, c, "blk.0.ffn_down.weight") == G4_TYPE_Q5_K);
    T_CHECK(type_of(m.f, c, "blk.1.ffn_down.weight") == G4_TYPE_Q4_K);

    /* Q4_K (pure): everything quantizable is Q4_K, embeddings included */
    T_CHECK(qz_params_init(&p, "Q4_K", err, sizeof err) == G4_OK);
    T_CHECK(p.pure && p.ftype == QZ_FTYPE_Q4_K_M);
    T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
    T_CHECK(type_of(m.f, c, "token_embd.weight") == G4_TYPE_Q4_K);
    T_CHECK(type_of(m.f, c, "blk.0.ffn_down.weight") == G4_TYPE_Q4_K);
    T_CHECK(type_of(m.f, c, "blk.0.attn_norm.weight") == G4_TYPE_F32);

    /* Q8_0: tied embedding stays Q8_0 (the output rule keeps Q8_0) */
    T_CHECK(qz_params_init(&p, "Q8_0", err, sizeof err) == G4_OK);
    T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
    T_CHECK(type_of(m.f, c, "token_embd.weight") == G4_TYPE_Q8_0);
    T_CHECK(type_of(m.f, c, "blk.0.ffn_down.weight") == G4_TYPE_Q8_0);
    /* Q4_0: tied embedding -> Q6_K */
    T_CHECK(qz_params_init(&p, "Q4_0", err, sizeof err) == G4_OK);
    T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
    T_CHECK(type_of(m.f, c, "token_embd.weight") == G4_TYPE_Q6_K);
    T_CHECK(type_of(m.f, c, "blk.0.attn_v.weight") == G4_TYPE_Q4_0);

    /* explicit embedding types and patterns, in llama-quantize's precedence */
    T_CHECK(qz_params_init(&p, "Q4_K_M", err, sizeof err) == G4_OK);
    p.token_embd_type = G4_TYPE_Q4_0;
    T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
    T_CHECK(type_of(m.f, c, "token_embd.weight") == G4_TYPE_Q4_0);
    T_CHECK(type_of(m.f, c, "per_layer_token_embd.weight") == G4_TYPE_Q4_0);
    p.per_layer_type = G4_TYPE_Q8_0;
    T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
    T_CHECK(type_of(m.f, c, "per_layer_token_embd.weight") == G4_TYPE_Q8_0);
    T_CHECK(qz_parse_override("per_layer_token_embd=q5_0", &p.overrides[0], err, sizeof err) == G4_OK);
    T_CHECK(qz_parse_override("ffn_(up|gate)=Q8_0", &p.overrides[1], err, sizeof err) == G4_OK);
    T_CHECK(qz_parse_override("blk\\.0\\.ffn_down=q4_K", &p.overrides[2], err, sizeof err) == G4_OK);
    p.n_overrides = 3;
    T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
    T_CHECK(type_of(m.f, c, "per_layer_token_embd.weight") == G4_TYPE_Q5_0);
    T_CHECK(type_of(m.f, c, "blk.3.ffn_up.weight") == G4_TYPE_Q8_0);
    T_CHECK(type_of(m.f, c, "blk.3.ffn_gate.weight") == G4_TYPE_Q8_0);
    T_CHECK(type_of(m.f, c, "blk.0.ffn_down.weight") == G4_TYPE_Q4_K);   /* manual beats the mix */
    /* as in llama.cpp, a manual choice does not advance the ffn_down counter: layer 3 is the
     * counter's i = 2 (not use_more_bits), layer 4 is i = 3 (use_more_bits) */
    T_CHECK(type_of(m.f, c, "blk.3.ffn_down.weight") == G4_TYPE_Q4_K);
    T_CHECK(type_of(m.f, c, "blk.4.ffn_down.weight") == G4_TYPE_Q6_K);
    /* F16 target: no mix rules, embeddings F16 */
    T_CHECK(qz_params_init(&p, "f16", err, sizeof err) == G4_OK);
    T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
    T_CHECK(type_of(m.f, c, "token_embd.weight") == G4_TYPE_F16);
    T_CHECK(type_of(m.f, c, "blk.0.attn_norm.weight") == G4_TYPE_F32);
    free(c);
    tm_free(&m);
}

static void check_untied_and_fallback(void) {
    /* untied: output -> Q6_K, token_embd keeps the default type */
    g4_testgen_opts o = d256();
    o.untied = 1;
    tmodel m;
    T_CHECK(tm_make(&m, &o));
    char err[256];
    qz_params p;
    qz_choice c[512];
    if (m.f && gguf_n_tensors(m.f) <= 512) {
        T_CHECK(qz_params_init(&p, "Q4_K_M", err, sizeof err) == G4_OK);
        T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
        T_CHECK(type_of(m.f, c, "output.weight") == G4_TYPE_Q6_K);
        T_CHECK(type_of(m.f, c, "token_embd.weight") == G4_TYPE_Q4_K);
        T_CHECK(type_of(m.f, c, "per_layer_token_embd.weight") == G4_TYPE_Q4_K);
        p.output_type = G4_TYPE_Q8_0;
        T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
        T_CHECK(type_of(m.f, c, "output.weight") == G4_TYPE_Q8_0);
    }
    tm_free(&m);

    /* n_embd 128: K-quants fall back (Q4_K -> Q5_0, Q6_K -> Q8_0 for the tied embedding) */
    memset(&o, 0, sizeof o);
    o.n_per_layer = 32;
    T_CHECK(tm_make(&m, &o));
    if (m.f && gguf_n_tensors(m.f) <= 512) {
        T_CHECK(qz_params_init(&p, "Q4_K_M", err, sizeof err) == G4_OK);
        T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
        T_CHECK(type_of(m.f, c, "token_embd.weight") == G4_TYPE_Q8_0); /* 128 % 256: output rule -> Q8_0 */
        T_CHECK(type_of(m.f, c, "blk.0.attn_q.weight") == G4_TYPE_Q5_0);
        /* ffn_down rows are n_ff = 192: layer 0 wants Q6_K -> Q8_0, layer 1 Q4_K -> Q5_0 */
        T_CHECK(type_of(m.f, c, "blk.0.ffn_down.weight") == G4_TYPE_Q8_0);
        T_CHECK(type_of(m.f, c, "blk.1.ffn_down.weight") == G4_TYPE_Q5_0);
        int nf = 0;
        for (size_t i = 0; i < gguf_n_tensors(m.f); i++) nf += c[i].fallback;
        T_CHECK(nf > 0);
        T_CHECK(qz_params_init(&p, "Q5_K_M", err, sizeof err) == G4_OK);
        T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
        T_CHECK(type_of(m.f, c, "blk.0.attn_q.weight") == G4_TYPE_Q5_1);
        T_CHECK(qz_params_init(&p, "Q4_0", err, sizeof err) == G4_OK);
        T_CHECK(qz_plan(m.f, &p, c, err, sizeof err) == G4_OK);
        T_CHECK(type_of(m.f, c, "blk.0.attn_q.weight") == G4_TYPE_Q4_0);
    }
    tm_free(&m);
}

static void check_names(void) {
    int ft, pure;
    uint32_t t;
    T_CHECK(qz_ftype_from_name("Q5_K_M", &ft, &t, &pure) == G4_OK && ft == 17 && t == G4_TYPE_Q5_K && !pure);
    T_CHECK(qz_ftype_from_name("q6_k", &ft, &t, &pure) == G4_OK && ft == 18 && t == G4_TYPE_Q6_K);
    T_CHECK(qz_ftype_from_name("Q8_0", &ft, &t, &pure) == G4_OK && ft == 7);
    T_CHECK(qz_ftype_from_name("Q5_0", &ft, &t, &pure) == G4_OK && ft == 8);
    T_CHECK(qz_ftype_from_name("Q4_K", &ft, &t, &pure) == G4_OK && pure == 1);
    T_CHECK(qz_ftype_from_name("Q3_K_M", &ft, &t, &pure) == G4_ERR_ARG);
    T_CHECK(qz_ftype_from_name("", &ft, &t, &pure) == G4_ERR_ARG);
    T_CHECK(qz_type_from_name("q4_0") == G4_TYPE_Q4_0);
    T_CHECK(qz_type_from_name("Q6_K") == G4_TYPE_Q6_K);
    T_CHECK(qz_type_from_name("iq2_xxs") == -1); /* not writable */
    T_CHECK(qz_type_from_name("q8_1") == -1);    /* not a weight type */
    T_CHECK(qz_type_from_name("nope") == -1);
    qz_override o;
    char err[256];
    T_CHECK(qz_parse_override("attn_v=q8_0", &o, err, sizeof err) == G4_OK && o.type == G4_TYPE_Q8_0 && !strcmp(o.pattern, "attn_v"));
    T_CHECK(qz_parse_override("a=b=q8_0", &o, err, sizeof err) == G4_OK && !strcmp(o.pattern, "a=b"));
    T_CHECK(qz_parse_override("attn_v", &o, err, sizeof err) == G4_ERR_ARG);
    T_CHECK(qz_parse_override("=q8_0", &o, err, sizeof err) == G4_ERR_ARG);
    T_CHECK(qz_parse_override("attn_v=", &o, err, sizeof err) == G4_ERR_ARG);
    T_CHECK(qz_parse_override("([=q8_0", &o, err, sizeof err) == G4_ERR_ARG);
    char big[400];
    memset(big, 'a', sizeof big);
    memcpy(big + sizeof big - 6, "=q8_0", 6);
    T_CHECK(qz_parse_override(big, &o, err, sizeof err) == G4_ERR_ARG);
}

/* a file whose tensor holds NaN is refused; an abort stops the run; neither leaves a file */
static int abort_now(void *ud) { (void)ud; return 1; }

static void check_file(void) {
    char dir[] = "/tmp/g4-test-qz-XXXXXX";
    if (!mkdtemp(dir)) { T_CHECK(0); return; }
    char in[256], out[256], err[256];
    snprintf(in, sizeof in, "%s/in.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    g4_testgen_opts o = d256();
    o.n_layer = 2; o.full_every = 2; o.n_shared = -1; o.n_per_layer = -1;
    T_CHECK(testgen_write(in, &o, err, sizeof err) == G4_OK);
    qz_params p;
    T_CHECK(qz_params_init(&p, "Q4_K_M", err, sizeof err) == G4_OK);
    p.n_threads = 3;
    qz_stats st;
    T_CHECKF(qz_quantize_file(in, out, &p, &st, err, sizeof err) == G4_OK, "%s", err);
    T_CHECK(st.n_converted > 0 && st.n_copied > 0 && st.dst_bytes < st.src_bytes);
    gguf_file *a = NULL, *b = NULL;
    T_CHECK(gguf_open(&a, in, 0, NULL, err, sizeof err) == G4_OK);
    T_CHECK(gguf_open(&b, out, 0, NULL, err, sizeof err) == G4_OK);
    if (a && b) {
        T_CHECK(gguf_n_tensors(a) == gguf_n_tensors(b));
        const gguf_kv *ft = gguf_find(b, "general.file_type");
        T_CHECK(ft && ft->type == GGUF_UINT32 && ft->v.u32 == 15);
        for (size_t i = 0; i < gguf_n_kv(a); i++) T_CHECK(gguf_find(b, gguf_kv_at(a, i)->key) != NULL);
        /* every tensor: same name/shape; values = quantize->dequantize of the source */
        for (size_t i = 0; i < gguf_n_tensors(a) && i < gguf_n_tensors(b); i++) {
            const gguf_tensor *x = gguf_tensor_at(a, i), *y = gguf_tensor_at(b, i);
            T_CHECK(!strcmp(x->name, y->name) && !memcmp(x->ne, y->ne, sizeof x->ne));
            int64_t ne0 = x->ne[0], rows = (int64_t)(x->nbytes / quant_row_bytes(x->type, ne0));
            float *r = malloc((size_t)ne0 * 4), *q = malloc((size_t)ne0 * 4);
            uint8_t *blk = malloc(quant_row_bytes(G4_TYPE_F32, ne0));
            double num = 0, den = 0;
            int same = 1;
            for (int64_t k = 0; k < rows; k++) {
                memcpy(r, x->data + (size_t)k * (size_t)ne0 * 4, (size_t)ne0 * 4);
                quant_dequant_row(y->type, y->data + (size_t)k * quant_row_bytes(y->type, ne0), q, ne0);
                /* our own reference on the same row must give the same bytes */
                size_t rb = quant_row_bytes(y->type, ne0);
                uint8_t *mine = malloc(rb);
                quant_quantize_row(y->type, r, mine, ne0);
                same &= !memcmp(mine, y->data + (size_t)k * rb, rb);
                free(mine);
                for (int64_t j = 0; j < ne0; j++) { double d = (double)r[j] - (double)q[j]; num += d * d; den += (double)r[j] * (double)r[j]; }
            }
            T_CHECKF(same, "%s bytes", x->name);
            double e = den > 0 ? num / den : 0;
            T_CHECKF(e < (y->type == G4_TYPE_F32 ? 1e-30 : 2e-2), "%s nmse %g", x->name, e);
            free(r); free(q); free(blk);
        }
    }
    gguf_close(a);
    /* produced in tiny parts (one row each): the same bytes */
    char out2[256];
    snprintf(out2, sizeof out2, "%s/out2.gguf", dir);
    p.part_bytes = 1;
    p.n_threads = 2;
    T_CHECKF(qz_quantize_file(in, out2, &p, &st, err, sizeof err) == G4_OK, "%s", err);
    p.part_bytes = 0;
    gguf_file *b2 = NULL;
    T_CHECK(gguf_open(&b2, out2, 0, NULL, err, sizeof err) == G4_OK);
    T_CHECK(b && b2 && gguf_file_size(b) == gguf_file_size(b2));
    if (b && b2)
        for (size_t i = 0; i < gguf_n_tensors(b) && i < gguf_n_tensors(b2); i++) {
            const gguf_tensor *x = gguf_tensor_at(b, i), *y = gguf_tensor_at(b2, i);
            T_CHECKF(x->nbytes == y->nbytes && !memcmp(x->data, y->data, x->nbytes), "%s", x->name);
        }
    gguf_close(b2);
    gguf_close(b);
    remove(out2);

    /* output == input refused */
    T_CHECK(qz_quantize_file(in, in, &p, &st, err, sizeof err) == G4_ERR_ARG);
    /* abort: no file */
    remove(out);
    p.should_abort = abort_now;
    T_CHECK(qz_quantize_file(in, out, &p, &st, err, sizeof err) == G4_ERR_ABORTED);
    T_CHECK(access(out, F_OK) != 0);
    p.should_abort = NULL;

    /* NaN in a weight: refused with the tensor named, no file */
    gguf_writer *w = gguf_writer_new();
    float vals[64 * 2];
    for (int i = 0; i < 128; i++) vals[i] = (float)i / 100.0f;
    vals[77] = NAN;
    int64_t ne[2] = { 64, 2 };
    gguf_w_str(w, "general.architecture", "x", 1);
    gguf_w_tensor(w, "blk.0.ffn_up.weight", G4_TYPE_F32, 2, ne, vals);
    T_CHECK(gguf_writer_write(w, in, NULL, NULL, err, sizeof err) == G4_OK);
    gguf_writer_free(w);
    T_CHECK(qz_params_init(&p, "Q8_0", err, sizeof err) == G4_OK);
    T_CHECK(qz_quantize_file(in, out, &p, &st, err, sizeof err) == G4_ERR_FORMAT);
    T_CHECKF(strstr(err, "blk.0.ffn_up.weight") && strstr(err, "NaN"), "%s", err);
    T_CHECK(access(out, F_OK) != 0);
    /* a row length that is not a multiple of 32 at all -> F16 */
    {
        gguf_writer *w2 = gguf_writer_new();
        float v40[40 * 2] = {0};
        int64_t ne40[2] = { 40, 2 };
        gguf_w_tensor(w2, "blk.0.ffn_up.weight", G4_TYPE_F32, 2, ne40, v40);
        void *mb = NULL;
        size_t ml = 0;
        T_CHECK(gguf_writer_write_mem(w2, &mb, &ml, NULL, NULL, err, sizeof err) == G4_OK);
        gguf_writer_free(w2);
        gguf_file *g = NULL;
        T_CHECK(gguf_open_mem(&g, mb, ml, "m", NULL, err, sizeof err) == G4_OK);
        qz_choice c1[1];
        T_CHECK(qz_params_init(&p, "Q4_K_M", err, sizeof err) == G4_OK);
        if (g) {
            T_CHECK(qz_plan(g, &p, c1, err, sizeof err) == G4_OK);
            T_CHECK(c1[0].dst_type == G4_TYPE_F16 && c1[0].fallback);
        }
        gguf_close(g);
        free(mb);
        T_CHECK(qz_params_init(&p, "Q8_0", err, sizeof err) == G4_OK);
    }
    /* a type gemma4.c cannot read cannot be converted */
    w = gguf_writer_new();
    gguf_w_str(w, "general.architecture", "x", 1);
    int32_t iv[128] = {0};
    gguf_w_tensor(w, "blk.0.ffn_up.weight", G4_TYPE_I32, 2, ne, iv);
    T_CHECK(gguf_writer_write(w, in, NULL, NULL, err, sizeof err) == G4_OK);
    gguf_writer_free(w);
    T_CHECK(qz_quantize_file(in, out, &p, &st, err, sizeof err) == G4_ERR_UNSUPPORTED);
    remove(in);
    remove(out);
    rmdir(dir);
}

T_GROUP(quantize) {
    check_names();
    check_q4_k_m();
    check_untied_and_fallback();
    check_file();
}
