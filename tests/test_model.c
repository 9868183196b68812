/* test_model.c - g4_model_open on generated models: every testgen variant loads and binds what
 * was written; fail-the-Nth-allocation sweep with zero leaks; the fuzz corpus replays with
 * exact allocation accounting (a size mismatch in a free is a bug too). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "g4_impl.h"
#include "quant/quant.h"
#include "testgen.h"
#include "t.h"

typedef struct acct { size_t live, peak; long n, fail_at; } acct;

static void *acct_alloc(void *ud, void *ptr, size_t old, size_t nsz) {
    acct *a = ud;
    if (nsz == 0) { free(ptr); a->live -= old; return NULL; }
    if (a->fail_at && ++a->n == a->fail_at) return NULL;
    void *p = realloc(ptr, nsz);
    if (!p) return NULL;
    a->live += nsz - old;
    if (a->live > a->peak) a->peak = a->live;
    return p;
}

static g4_status open_buf(g4_model **m, const void *buf, size_t len, acct *a, char *err, size_t errlen) {
    g4_model_opts mo = {0};
    mo.n_threads = 1;
    mo.kernels = "scalar";
    mo.alloc = acct_alloc;
    mo.alloc_ud = a;
    return model_open_mem(m, buf, len, "t.gguf", &mo, err, errlen);
}

T_GROUP(model_variants) {
    struct { const char *name; g4_testgen_opts o; } v[] = {
        { "default f32", {0} },
        { "no ple", { .n_per_layer = -1 } },
        { "untied", { .untied = 1 } },
        { "gqa arrays", { .n_head = 4, .n_head_kv = 2, .n_head_kv_full = 1 } },
        { "k=v", { .k_eq_v = 1 } },
        { "shared kv tensors", { .shared_kv_tensors = 1 } },
        { "no sharing", { .n_shared = -1 } },
        { "double-wide ffn", { .n_ff_shared = 384 } },
        { "q8_0", { .wtype = G4_TYPE_Q8_0, .n_per_layer = 32 } },
        { "q4_k", { .wtype = G4_TYPE_Q4_K, .n_embd = 256, .n_ff = 256, .head_dim_swa = 128, .head_dim_full = 256,
                    .n_per_layer = 256 } },
        { "q4_k_m mix", { .q4_k_m = 1, .n_embd = 256, .n_ff = 256, .head_dim_swa = 128, .head_dim_full = 256,
                          .n_per_layer = 256 } },
        { "no softcap, no layer scale", { .softcap = -1, .no_layer_scale = 1 } },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        void *buf;
        size_t len;
        char err[512];
        g4_status st = testgen_write_mem(&buf, &len, &v[i].o, err, sizeof err);
        T_CHECKF(st == G4_OK, "%s: write: %s", v[i].name, err);
        if (st) continue;
        acct a = {0};
        g4_model *m = NULL;
        st = open_buf(&m, buf, len, &a, err, sizeof err);
        T_CHECKF(st == G4_OK, "%s: open: %s", v[i].name, err);
        if (m) {
            g4_testgen_opts o = v[i].o;
            testgen_defaults(&o);
            const g4_config *c = &m->cfg;
            int S = o.n_layer - (o.n_shared > 0 ? o.n_shared : 0);
            T_CHECK(c->n_layer == o.n_layer && c->n_embd == o.n_embd && c->n_vocab == o.n_vocab);
            T_CHECK(c->n_layer_kv == S && c->n_embd_per_layer == (o.n_per_layer > 0 ? o.n_per_layer : 0));
            T_CHECK(c->tied == !o.untied && (m->output != NULL) == (o.untied != 0));
            T_CHECK(c->softcap == (o.softcap < 0 ? 0.0f : o.softcap));
            for (int l = 0; l < c->n_layer; l++) {
                const g4_layer *ly = &m->layers[l];
                int full = l % o.full_every == o.full_every - 1;
                T_CHECK(ly->swa == !full && ly->head_dim == (full ? o.head_dim_full : o.head_dim_swa));
                T_CHECK(ly->has_kv == (l < S));
                T_CHECK(ly->kv_src == (l < S ? l : full ? S - 1 : S - 2));
                T_CHECK(ly->n_head_kv == (full && o.n_head_kv_full ? o.n_head_kv_full : o.n_head_kv));
                T_CHECK(ly->n_ff == (l >= S && o.n_ff_shared ? o.n_ff_shared : o.n_ff));
                T_CHECK(ly->v_is_k == (ly->has_kv && o.k_eq_v));
                T_CHECK(!ly->has_kv ? ly->attn_k == NULL && ly->attn_v == NULL : ly->attn_k != NULL);
                T_CHECK(o.no_layer_scale ? ly->out_scale == 1.0f : ly->out_scale >= 0.5f && ly->out_scale <= 1.0f);
                T_CHECK(((uintptr_t)ly->attn_norm->data & 3) == 0); /* f32 vectors are aligned copies */
            }
            T_CHECK(m->rope_freqs && m->rope_freqs[0] == 1.0f && m->rope_freqs[c->head_dim_full / 2 - 1] == 1e30f);
            if (o.q4_k_m) {
                T_CHECK(m->token_embd->type == G4_TYPE_Q6_K && m->layers[0].ffn_down->type == G4_TYPE_Q6_K &&
                        m->layers[2].ffn_down->type == G4_TYPE_Q4_K && m->layers[0].attn_q->type == G4_TYPE_Q4_K);
                T_CHECK(m->per_layer_model_proj->type == G4_TYPE_BF16 && m->layers[0].inp_gate->type == G4_TYPE_F32);
            }
            g4_model_close(m);
        }
        T_CHECKF(a.live == 0, "%s: %zu bytes leaked", v[i].name, a.live);
        free(buf);
    }
}

/* every allocation of g4_model_open failing in turn: G4_ERR_NOMEM, nothing leaked */
T_GROUP(model_oom) {
    g4_testgen_opts o = { .wtype = G4_TYPE_Q8_0, .n_per_layer = 32 };
    void *buf;
    size_t len;
    char err[512];
    if (testgen_write_mem(&buf, &len, &o, err, sizeof err) != G4_OK) { T_CHECK(0); return; }
    long n_fail = 0, bad = 0;
    for (long at = 1; at < 2000; at++) {
        acct a = { .fail_at = at };
        g4_model *m = NULL;
        g4_status st = open_buf(&m, buf, len, &a, err, sizeof err);
        if (st == G4_OK) { g4_model_close(m); T_CHECK(a.live == 0); break; }
        n_fail++;
        if ((st != G4_ERR_NOMEM || a.live != 0 || m) && bad++ < 5)
            fprintf(stderr, "    fail at %ld: st %d live %zu: %s\n", at, st, a.live, err);
    }
    T_CHECKF(bad == 0, "%ld of %ld failure points not clean", bad, n_fail);
    T_CHECK(n_fail > 5);
    free(buf);
}

/* tests/fuzz/corpus: inputs that once crashed or leaked; each must now be refused or load,
 * with exact allocation accounting and a bounded peak */
T_GROUP(model_fuzz_corpus) {
    DIR *d = opendir("tests/fuzz/corpus");
    if (!d) { T_CHECK(0); return; }
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "tests/fuzz/corpus/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        long sz = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(sz > 0 ? (size_t)sz : 1);
        size_t got = buf ? fread(buf, 1, (size_t)(sz > 0 ? sz : 0), f) : 0;
        fclose(f);
        acct a = {0};
        g4_model *m = NULL;
        char err[512];
        open_buf(&m, buf, got, &a, err, sizeof err);
        g4_model_close(m);
        T_CHECKF(a.live == 0, "%s: %zu bytes unaccounted", e->d_name, a.live);
        T_CHECKF(a.peak <= got + (16u << 20), "%s: peak %zu for %zu bytes", e->d_name, a.peak, got);
        free(buf);
        n++;
    }
    closedir(d);
    T_CHECK(n >= 1);
}
