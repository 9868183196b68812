/* cmd_info.c - g4 info -m FILE [--tensors] [--json]: what a GGUF holds and whether gemma4.c
 * would load it. The container is parsed first (any file), then the model is validated
 * (g4_model_open); either failure is reported on stderr with exit status 1. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "g4.h"
#include "g4_impl.h"
#include "gguf.h"
#include "quant/quant.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: g4 info -m FILE [-md ASSISTANT] [--tensors] [--json]\n"
            "  -m, --model FILE  GGUF file\n"
            "  -md FILE          also open a gemma4-assistant (MTP draft model) against it\n"
            "  --tensors         list every tensor (name, type, shape, bytes, offset)\n"
            "  --json            machine-readable output\n"
            "  -v                show warnings from the loader\n");
}

static void json_str(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c < 0x20 || c == 0x7f) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* text form of a scalar value, or a short array summary */
static void kv_text(const gguf_kv *kv, char *buf, size_t cap) {
    switch (kv->type) {
    case GGUF_UINT8: snprintf(buf, cap, "%u", kv->v.u8); break;
    case GGUF_INT8: snprintf(buf, cap, "%d", kv->v.i8); break;
    case GGUF_UINT16: snprintf(buf, cap, "%u", kv->v.u16); break;
    case GGUF_INT16: snprintf(buf, cap, "%d", kv->v.i16); break;
    case GGUF_UINT32: snprintf(buf, cap, "%u", kv->v.u32); break;
    case GGUF_INT32: snprintf(buf, cap, "%d", kv->v.i32); break;
    case GGUF_FLOAT32: snprintf(buf, cap, "%.9g", (double)kv->v.f32); break;
    case GGUF_BOOL: snprintf(buf, cap, "%s", kv->v.b ? "true" : "false"); break;
    case GGUF_UINT64: snprintf(buf, cap, "%" PRIu64, kv->v.u64); break;
    case GGUF_INT64: snprintf(buf, cap, "%" PRId64, kv->v.i64); break;
    case GGUF_FLOAT64: snprintf(buf, cap, "%.17g", kv->v.f64); break;
    case GGUF_STRING: {
        size_t o = 0, n = kv->str_len > 60 ? 60 : (size_t)kv->str_len;
        for (size_t i = 0; i < n && o + 5 < cap; i++) {
            unsigned char c = (unsigned char)kv->str[i];
            if (c >= 0x20 && c < 0x7f) buf[o++] = (char)c;
            else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
        }
        buf[o] = 0;
        if (kv->str_len > 60 && o + 4 < cap) strcat(buf, "...");
        break;
    }
    case GGUF_ARRAY: snprintf(buf, cap, "[%" PRIu64 " x %s]", kv->n, gguf_vtype_name(kv->arr_type)); break;
    default: snprintf(buf, cap, "?"); break;
    }
}

static void json_kv_value(const gguf_kv *kv) {
    char b[128];
    if (kv->type == GGUF_STRING) { json_str(kv->str, (size_t)kv->str_len); return; }
    if (kv->type == GGUF_ARRAY) {
        /* arrays: small ones in full, large ones summarised */
        if (kv->n > 64 || kv->arr_type == GGUF_STRING) {
            printf("{\"type\": \"%s\", \"n\": %" PRIu64 "}", gguf_vtype_name(kv->arr_type), kv->n);
            return;
        }
        putchar('[');
        gguf_kv e = { .type = kv->arr_type };
        size_t es = gguf_vtype_size(kv->arr_type);
        for (uint64_t i = 0; i < kv->n; i++) {
            memset(&e.v, 0, sizeof e.v);
            memcpy(&e.v, (const uint8_t *)kv->arr + i * es, es);
            kv_text(&e, b, sizeof b);
            printf("%s%s", i ? ", " : "", b);
        }
        putchar(']');
        return;
    }
    kv_text(kv, b, sizeof b);
    if (kv->type == GGUF_FLOAT32 || kv->type == GGUF_FLOAT64) {
        if (strstr(b, "nan") || strstr(b, "inf")) { printf("\"%s\"", b); return; }
    }
    fputs(b, stdout);
}

static uint64_t nel(const gguf_tensor *t) {
    uint64_t n = 1;
    for (uint32_t j = 0; j < t->n_dims; j++) n *= (uint64_t)t->ne[j];
    return n;
}

static void human_bytes(double b, char *buf, size_t cap) {
    const char *u[] = { "B", "KB", "MB", "GB", "TB" };
    int i = 0;
    while (b >= 1000 && i < 4) { b /= 1000; i++; }
    snprintf(buf, cap, i ? "%.2f %s" : "%.0f %s", b, u[i]);
}

static const char *size_name(int32_t n_layer) {
    switch (n_layer) {
    case 35: return "E2B";
    case 42: return "E4B";
    case 30: return "26B-A4B";
    case 60: return "31B";
    default: return "unknown size";
    }
}

typedef struct by_type { uint64_t n, bytes, params; } by_type;

int cmd_info(int argc, char **argv) {
    const char *path = NULL, *md = NULL;
    int tensors = 0, json = 0, verbose = G4_LOG_ERROR;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc) path = argv[++i];
        else if ((!strcmp(a, "-md") || !strcmp(a, "--model-draft")) && i + 1 < argc) md = argv[++i];
        else if (!strcmp(a, "--tensors")) tensors = 1;
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "-v")) verbose = G4_LOG_WARN;
        else {
            fprintf(stderr, "g4 info: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "g4 info: -m FILE is required\n");
        usage(stderr);
        return 2;
    }
    char err[768];
    gguf_file *f;
    if (gguf_open(&f, path, 0, NULL, err, sizeof err) != G4_OK) {
        fprintf(stderr, "g4: %s\n", err);
        return 1;
    }
    /* validate as a model: vocab-only files (no tensors) get the tokenizer checks only */
    g4_model_opts mo = {0};
    mo.n_threads = 1;
    mo.kernels = "scalar";
    mo.vocab_only = gguf_n_tensors(f) == 0;
    mo.log = cli_log;
    mo.log_ud = &verbose;
    g4_model *m = NULL;
    if (g4_model_open(&m, path, &mo, err, sizeof err) != G4_OK) {
        fprintf(stderr, "g4: %s\n", err);
        gguf_close(f);
        return 1;
    }
    g4_assistant *asst = NULL;
    if (md && (mo.vocab_only || g4_assistant_open(&asst, m, md, &mo, err, sizeof err) != G4_OK)) {
        fprintf(stderr, "g4: %s\n", mo.vocab_only ? "-md needs a target with weights" : err);
        g4_model_close(m);
        gguf_close(f);
        return 1;
    }
    const g4_config *c = &m->cfg;
    by_type bt[G4_TYPE_COUNT];
    memset(bt, 0, sizeof bt);
    uint64_t params = 0, tbytes = 0;
    size_t nt = gguf_n_tensors(f);
    for (size_t i = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        bt[t->type].n++;
        bt[t->type].bytes += t->nbytes;
        bt[t->type].params += nel(t);
        params += nel(t);
        tbytes += t->nbytes;
    }
    const gguf_kv *merges = gguf_find(f, "tokenizer.ggml.merges");
    const gguf_kv *tmpl = gguf_find(f, "tokenizer.chat_template");
    const char *tokm = g4_model_meta_str(m, "tokenizer.ggml.model");
    const char *name = g4_model_meta_str(m, "general.name");
    int32_t bos = g4_model_token_bos(m), eos = g4_model_token_eos(m);
    char b1[64], b2[64];

    if (json) {
        printf("{\n  \"file\": ");
        json_str(path, strlen(path));
        printf(",\n  \"file_size\": %" PRIu64 ",\n  \"gguf_version\": %u,\n  \"alignment\": %u,\n", gguf_file_size(f),
               gguf_version(f), gguf_alignment(f));
        printf("  \"architecture\": \"gemma4\",\n  \"name\": ");
        if (name) json_str(name, strlen(name)); else fputs("null", stdout);
        printf(",\n  \"n_kv\": %zu,\n  \"n_tensors\": %zu,\n  \"n_params\": %" PRIu64 ",\n  \"tensor_bytes\": %" PRIu64 ",\n",
               gguf_n_kv(f), nt, params, tbytes);
        if (!mo.vocab_only) {
            printf("  \"hparams\": {\"n_layer\": %d, \"n_embd\": %d, \"n_vocab\": %d, \"n_ctx_train\": %d, "
                   "\"n_embd_per_layer\": %d, \"n_swa\": %d, \"n_layer_kv\": %d, \"head_dim_full\": %d, "
                   "\"head_dim_swa\": %d, \"rms_eps\": %.9g, \"rope_base\": %.9g, \"rope_base_swa\": %.9g, "
                   "\"softcap\": %.9g, \"tied\": %s, \"size\": \"%s\", \"n_expert\": %d, \"n_expert_used\": %d, "
                   "\"n_ff_exp\": %d, \"n_layer_moe\": %d,\n    \"layers\": [",
                   c->n_layer, c->n_embd, c->n_vocab, c->n_ctx_train, c->n_embd_per_layer, c->n_swa, c->n_layer_kv,
                   c->head_dim_full, c->head_dim_swa, (double)c->rms_eps, (double)c->rope_base,
                   (double)c->rope_base_swa, (double)c->softcap, c->tied ? "true" : "false", size_name(c->n_layer),
                   c->n_expert, c->n_expert_used, c->n_ff_exp, c->n_layer_moe);
            for (int i = 0; i < c->n_layer; i++) {
                const g4_layer *l = &m->layers[i];
                printf("%s\n      {\"swa\": %s, \"n_head\": %d, \"n_head_kv\": %d, \"head_dim\": %d, \"n_ff\": %d, "
                       "\"kv_src\": %d, \"v_is_k\": %s, \"out_scale\": %.9g, \"moe\": %s}",
                       i ? "," : "", l->swa ? "true" : "false", l->n_head, l->n_head_kv, l->head_dim, l->n_ff,
                       l->kv_src, l->v_is_k ? "true" : "false", (double)l->out_scale, l->moe ? "true" : "false");
            }
            printf("]},\n");
        }
        if (asst) {
            printf("  \"assistant\": {\"file\": ");
            json_str(md, strlen(md));
            printf(", \"n_layer\": %d, \"n_embd\": %d, \"draft_bytes\": %" PRIu64 "},\n", g4_assistant_n_layer(asst),
                   g4_assistant_n_embd(asst), g4_assistant_draft_bytes(asst));
        }
        printf("  \"types\": {");
        int first = 1;
        for (int t = 0; t < G4_TYPE_COUNT; t++) {
            if (!bt[t].n) continue;
            printf("%s\"%s\": {\"n\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"params\": %" PRIu64 "}", first ? "" : ", ",
                   quant_type_name((uint32_t)t, b1, sizeof b1), bt[t].n, bt[t].bytes, bt[t].params);
            first = 0;
        }
        printf("},\n  \"tokenizer\": {\"model\": ");
        if (tokm) json_str(tokm, strlen(tokm)); else fputs("null", stdout);
        printf(", \"n_vocab\": %d, \"n_merges\": %" PRIu64 ", \"bos\": %d, \"eos\": %d, \"chat_template\": %s, "
               "\"chat_template_bytes\": %" PRIu64 "},\n",
               g4_model_n_vocab(m), merges ? merges->n : 0, bos, eos, tmpl ? "true" : "false",
               tmpl && tmpl->type == GGUF_STRING ? tmpl->str_len : 0);
        printf("  \"metadata\": {");
        for (size_t i = 0; i < gguf_n_kv(f); i++) {
            const gguf_kv *kv = gguf_kv_at(f, i);
            printf("%s\n    ", i ? "," : "");
            json_str(kv->key, kv->key_len);
            printf(": ");
            json_kv_value(kv);
        }
        printf("\n  }");
        if (tensors) {
            printf(",\n  \"tensors\": [");
            for (size_t i = 0; i < nt; i++) {
                const gguf_tensor *t = gguf_tensor_at(f, i);
                printf("%s\n    {\"name\": ", i ? "," : "");
                json_str(t->name, strlen(t->name));
                printf(", \"type\": \"%s\", \"shape\": [", quant_type_name(t->type, b1, sizeof b1));
                for (uint32_t j = 0; j < t->n_dims; j++) printf("%s%" PRId64, j ? ", " : "", t->ne[j]);
                printf("], \"bytes\": %" PRIu64 ", \"offset\": %" PRIu64 "}", t->nbytes, t->offset);
            }
            printf("\n  ]");
        }
        printf("\n}\n");
    } else {
        human_bytes((double)gguf_file_size(f), b1, sizeof b1);
        printf("file:          %s (%s, GGUF v%u, alignment %u, %zu keys, %zu tensors)\n", path, b1, gguf_version(f),
               gguf_alignment(f), gguf_n_kv(f), nt);
        printf("architecture:  gemma4%s%s%s\n", mo.vocab_only ? " (vocabulary only)" : " (",
               mo.vocab_only ? "" : size_name(c->n_layer), mo.vocab_only ? "" : ")");
        if (name) printf("name:          %s\n", name);
        if (!mo.vocab_only) {
            int ff0 = m->layers[0].n_ff, ffl = m->layers[c->n_layer - 1].n_ff;
            printf("layers:        %d (%d own a KV cache, %d share one), pattern ", c->n_layer, c->n_layer_kv,
                   c->n_layer - c->n_layer_kv);
            for (int i = 0; i < c->n_layer; i++) putchar(m->layers[i].swa ? 'S' : 'F');
            printf("\nembedding:     %d, per-layer input %d, vocabulary %d, context %d, %s output head\n", c->n_embd,
                   c->n_embd_per_layer, c->n_vocab, c->n_ctx_train, c->tied ? "tied" : "separate");
            int fl = 0;
            while (fl < c->n_layer && m->layers[fl].swa) fl++;
            const g4_layer *sl = &m->layers[0], *fu = &m->layers[fl < c->n_layer ? fl : 0];
            printf("attention:     %d heads; sliding: %d KV heads x %d, window %d, rope base %g; full: %d KV heads x %d, rope base %g\n",
                   sl->n_head, sl->n_head_kv, c->head_dim_swa, c->n_swa, (double)c->rope_base_swa, fu->n_head_kv,
                   c->head_dim_full, (double)c->rope_base);
            printf("ffn:           %d", ff0);
            if (ffl != ff0) printf(" (%d on the last layers)", ffl);
            printf(", rms eps %g, final soft-cap %g\n", (double)c->rms_eps, (double)c->softcap);
            if (c->n_layer_moe > 0) {
                int fused = 0, split = 0, first = -1;
                for (int i = 0; i < c->n_layer; i++) {
                    if (!m->layers[i].moe) continue;
                    if (first < 0) first = i;
                    if (m->layers[i].ffn_gate_up_exps) fused++; else split++;
                }
                printf("experts:       %d per layer, %d used per token, expert FFN %d (gate/up %s), on %d of %d layers "
                       "(from layer %d), next to the shared MLP above\n",
                       c->n_expert, c->n_expert_used, c->n_ff_exp, !split ? "fused" : !fused ? "split" : "fused and split",
                       c->n_layer_moe, c->n_layer, first);
                printf("active:        %.3f M of the parameters per token; a decoded token reads %.2f MB of weights, "
                       "%.2f MB of them routed experts\n",
                       (double)g4_model_n_params_active(m) / 1e6, (double)g4_model_decode_bytes(m) / 1e6,
                       (double)g4_model_decode_bytes_routed(m) / 1e6);
            }
        }
        human_bytes((double)tbytes, b1, sizeof b1);
        if (params >= 1000000000ull) printf("tensors:       %zu, %.3f G parameters, %s\n", nt, (double)params / 1e9, b1);
        else printf("tensors:       %zu, %.3f M parameters, %s\n", nt, (double)params / 1e6, b1);
        for (int t = 0; t < G4_TYPE_COUNT; t++) {
            if (!bt[t].n) continue;
            human_bytes((double)bt[t].bytes, b2, sizeof b2);
            printf("  %-8s %5" PRIu64 " tensors  %12s\n", quant_type_name((uint32_t)t, b1, sizeof b1), bt[t].n, b2);
        }
        printf("tokenizer:     %s, %d tokens, %" PRIu64 " merges, bos %d, eos %d, chat template %s\n",
               tokm ? tokm : "?", g4_model_n_vocab(m), merges ? merges->n : 0, bos, eos,
               tmpl ? "present" : "absent");
        if (asst) {
            human_bytes((double)g4_assistant_draft_bytes(asst), b1, sizeof b1);
            printf("assistant:     %s: %d layers of %d, a draft step reads %s; fits this target\n", md, g4_assistant_n_layer(asst),
                   g4_assistant_n_embd(asst), b1);
        }
        if (tensors) {
            printf("\n%-40s %-8s %-24s %14s %14s\n", "tensor", "type", "shape", "bytes", "offset");
            for (size_t i = 0; i < nt; i++) {
                const gguf_tensor *t = gguf_tensor_at(f, i);
                char shape[64];
                int o = snprintf(shape, sizeof shape, "[%" PRId64, t->ne[0]);
                for (uint32_t j = 1; j < t->n_dims; j++) o += snprintf(shape + o, sizeof shape - (size_t)o, ", %" PRId64, t->ne[j]);
                snprintf(shape + o, sizeof shape - (size_t)o, "]");
                printf("%-40s %-8s %-24s %14" PRIu64 " %14" PRIu64 "\n", t->name, quant_type_name(t->type, b1, sizeof b1),
                       shape, t->nbytes, t->offset);
            }
        }
    }
    g4_assistant_close(asst);
    g4_model_close(m);
    gguf_close(f);
    return 0;
}
