/* spec.c - speculative decoding for g4 run and g4 chat: the flags (llama.cpp's spellings),
 * setting up the assistant and the g4_spec, the token feed both commands generate from, and
 * the -v report. Uses include/g4.h only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "g4.h"

int cli_spec_arg(cli_spec *c, const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    long n;
    double x;
#define IS(s) (!strcmp(a, s))
    if (!(IS("--spec-type") || IS("-md") || IS("--model-draft") || IS("--spec-draft-model") || IS("--spec-draft-n-max") ||
          IS("--draft-max") || IS("--draft") || IS("--draft-n") || IS("--spec-draft-n-min") || IS("--draft-min") ||
          IS("--draft-n-min") || IS("--spec-draft-p-min") || IS("--draft-p-min") || IS("--spec-ngram-simple-size-n") ||
          IS("--spec-ngram-simple-size-m")))
        return 0;
    if (!v) { fprintf(stderr, "g4 %s: %s needs a value\n", cmd, a); return -1; }
    (*i)++;
    if (IS("--spec-type")) {
        const int t = g4_spec_type_from_name(v);
        if (t < 0 || t == G4_SPEC_CUSTOM) {
            fprintf(stderr, "g4 %s: --spec-type expects none, ngram-simple or draft-mtp, got '%s'\n", cmd, v);
            return -1;
        }
        c->type = t;
        c->have_type = 1;
    } else if (IS("-md") || IS("--model-draft") || IS("--spec-draft-model")) {
        c->draft_model = v;
    } else if (IS("--spec-draft-p-min") || IS("--draft-p-min")) {
        if (!cli_float(a, v, 0, 1, &x)) return -1;
        c->p_min = x;
    } else {
        const int is_max = IS("--spec-draft-n-max") || IS("--draft-max") || IS("--draft") || IS("--draft-n");
        const int is_min = IS("--spec-draft-n-min") || IS("--draft-min") || IS("--draft-n-min");
        if (!cli_int(a, v, is_min ? 0 : 1, 1024, &n)) return -1;
        if (is_max) c->n_max = n;
        else if (is_min) c->n_min = n;
        else if (IS("--spec-ngram-simple-size-n")) c->ngram_n = n;
        else c->ngram_m = n;
    }
#undef IS
    return 1;
}

int cli_spec_valid(const cli_spec *c, const char *cmd) {
    if (c->have_type && c->type == G4_SPEC_DRAFT_MTP && !c->draft_model) {
        fprintf(stderr, "g4 %s: --spec-type draft-mtp needs the assistant model: -md FILE\n", cmd);
        return 0;
    }
    if (c->n_min > 0 && c->n_max > 0 && c->n_min > c->n_max) {
        fprintf(stderr, "g4 %s: --spec-draft-n-min %ld is above --spec-draft-n-max %ld\n", cmd, c->n_min, c->n_max);
        return 0;
    }
    return 1;
}

const char *cli_spec_usage(void) {
    return "  --spec-type T          speculative decoding: none (default), ngram-simple (prompt lookup),\n"
           "                         draft-mtp (the Gemma 4 assistant given with -md; the default with -md)\n"
           "  -md, --model-draft FILE  the assistant GGUF (gemma4-assistant) for draft-mtp\n"
           "  --spec-draft-n-max N, --draft-max N   most drafted tokens per step (draft-mtp 3, ngram-simple\n"
           "                         its size-m)\n"
           "  --spec-draft-n-min N, --draft-min N   shorter drafts are not verified (0)\n"
           "  --spec-draft-p-min X, --draft-p-min X draft-mtp: stop a chain below this probability (0)\n"
           "  --spec-ngram-simple-size-n N, --spec-ngram-simple-size-m N   lookup / draft lengths (12, 48)\n";
}

int cli_spec_setup(const cli_spec *c, g4_model *m, const char *cmd, int log_level, g4_spec_opts *o, g4_assistant **asst) {
    (void)log_level;
    memset(o, 0, sizeof *o);
    *asst = NULL;
    int type = c->have_type ? c->type : c->draft_model ? G4_SPEC_DRAFT_MTP : G4_SPEC_NONE;
    if (type != G4_SPEC_DRAFT_MTP && c->draft_model)
        fprintf(stderr, "g4 %s: warning: -md is used only by --spec-type draft-mtp; ignored\n", cmd);
    o->type = type;
    o->n_max = (int32_t)c->n_max;
    o->n_min = (int32_t)c->n_min;
    o->p_min = (float)c->p_min;
    o->ngram_n = (int32_t)c->ngram_n;
    o->ngram_m = (int32_t)c->ngram_m;
    if (type == G4_SPEC_DRAFT_MTP) {
        char err[512];
        g4_model_opts ao;
        memset(&ao, 0, sizeof ao);
        if (g4_assistant_open(asst, m, c->draft_model, &ao, err, sizeof err) != G4_OK) {
            fprintf(stderr, "g4 %s: %s\n", cmd, err);
            return 0;
        }
        o->assistant = *asst;
    }
    return 1;
}

/* ==== The token feed ==== */

int cli_gen_init(cli_gen *g, g4_session *s, g4_sampler *smp, g4_spec *sp, int32_t n_max) {
    memset(g, 0, sizeof *g);
    g->s = s;
    g->smp = smp;
    g->sp = sp;
    g->cap = sp ? (size_t)n_max + 1 : 1;
    g->pend = malloc(g->cap * sizeof *g->pend);
    return g->pend ? G4_OK : G4_ERR_NOMEM;
}

void cli_gen_free(cli_gen *g) { free(g->pend); g->pend = NULL; }

int cli_gen_next(cli_gen *g, int32_t tok, long budget, int32_t *next) {
    if (g->ip < g->np) { /* verified already: tok is in the session */
        *next = g->pend[g->ip++];
        return G4_OK;
    }
    if (g4_session_n_past(g->s) >= g4_session_n_ctx(g->s)) return G4_ERR_CTX_FULL;
    if (!g->sp) {
        g4_status st = g4_session_eval(g->s, &tok, 1);
        if (st != G4_OK) return st;
        *next = g4_sampler_sample(g->smp, g4_session_logits(g->s));
        g4_sampler_accept(g->smp, *next);
        return G4_OK;
    }
    size_t cap = g->cap;
    if (budget >= 1 && (size_t)budget < cap) cap = (size_t)budget;
    size_t k = 0;
    g4_status st = g4_spec_step(g->sp, g->smp, tok, g->pend, cap, &k);
    if (st != G4_OK) return st;
    g->np = k;
    g->ip = 1;
    *next = g->pend[0];
    return G4_OK;
}

int cli_gen_flush(cli_gen *g, int32_t tok) {
    if (g->ip < g->np) { /* tok is in the session; the rest was not emitted: forget it */
        g4_session_truncate(g->s, g4_session_n_past(g->s) - (int32_t)(g->np - g->ip - 1));
        g->ip = g->np = 0;
        return G4_OK;
    }
    g->ip = g->np = 0;
    if (g4_session_n_past(g->s) >= g4_session_n_ctx(g->s)) return G4_ERR_CTX_FULL;
    return g4_session_eval(g->s, &tok, 1);
}

const char *cli_gen_errmsg(const cli_gen *g) { return g->sp ? g4_spec_errmsg(g->sp) : g4_session_errmsg(g->s); }

void cli_spec_report(const g4_spec *sp, const char *cmd) {
    if (!sp) return;
    g4_spec_stats st;
    g4_spec_get_stats(sp, &st);
    fprintf(stderr, "g4 %s: speculative: %llu steps, %llu drafts, drafted %llu, accepted %llu (%.1f%%), %.2f tokens per step\n",
            cmd, (unsigned long long)st.n_steps, (unsigned long long)st.n_drafts, (unsigned long long)st.n_drafted,
            (unsigned long long)st.n_accepted, st.n_drafted ? 100.0 * (double)st.n_accepted / (double)st.n_drafted : 0.0,
            st.n_steps ? (double)st.n_tokens / (double)st.n_steps : 0.0);
}
