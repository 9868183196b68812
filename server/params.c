/* params.c - OpenAI request fields into generation parameters and prompt ids (params.h).
 *
 * One declared table of ranges (reliability.md #62-#66): temperature [0, 2], top_p and min_p
 * [0, 1], top_k [0, n_vocab], presence/frequency penalties [-2, 2], max_tokens >= 0, seed any
 * 64-bit integer, stop: a string or up to 16 strings of up to 255 bytes (empty ones never
 * match and are dropped), top_logprobs [0, 20], n = 1, response_format {"type": "text"}.
 * Absent sampling fields take the model's defaults (g4_sampler_defaults), as `g4 run` does,
 * so a request and `g4 run` with the same prompt and seed give the same text.
 */
#include "params.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int perr_set(perr *e, const char *param, const char *code, const char *fmt, ...) {
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    e->code = code;
    if (!e->status) e->status = 400;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *tname(const g4_jv *v) {
    switch (g4_jv_type(v)) {
    case G4_JSON_NULL: return "null";
    case G4_JSON_TRUE: case G4_JSON_FALSE: return "a boolean";
    case G4_JSON_NUMBER: return "a number";
    case G4_JSON_STRING: return "a string";
    case G4_JSON_ARRAY: return "an array";
    case G4_JSON_OBJECT: return "an object";
    }
    return "absent";
}

/* present and not null */
static const g4_jv *field(const g4_jv *o, const char *k) {
    const g4_jv *v = g4_jv_get(o, k);
    return g4_jv_type(v) == G4_JSON_NULL ? NULL : v;
}

static int num_in(const g4_jv *o, const char *k, double lo, double hi, float *out, perr *e) {
    const g4_jv *v = field(o, k);
    if (!v) return 0;
    if (g4_jv_type(v) != G4_JSON_NUMBER) return perr_set(e, k, "invalid_type", "%s: expected a number, got %s", k, tname(v));
    double d = g4_jv_num(v);
    if (!(d >= lo && d <= hi)) return perr_set(e, k, "invalid_value", "%s: %g is outside [%g, %g]", k, d, lo, hi);
    *out = (float)d;
    return 1;
}

static int int_in(const g4_jv *o, const char *k, int64_t lo, int64_t hi, int64_t *out, perr *e) {
    const g4_jv *v = field(o, k);
    if (!v) return 0;
    int64_t i;
    if (g4_jv_type(v) != G4_JSON_NUMBER) return perr_set(e, k, "invalid_type", "%s: expected an integer, got %s", k, tname(v));
    if (!g4_jv_int(v, &i)) return perr_set(e, k, "invalid_type", "%s: expected an integer, got %g", k, g4_jv_num(v));
    if (i < lo || i > hi) return perr_set(e, k, "invalid_value", "%s: %lld is outside [%lld, %lld]", k, (long long)i, (long long)lo, (long long)hi);
    *out = i;
    return 1;
}

static int bool_of(const g4_jv *o, const char *k, int *out, perr *e) {
    const g4_jv *v = field(o, k);
    if (!v) return 0;
    if (g4_jv_type(v) != G4_JSON_TRUE && g4_jv_type(v) != G4_JSON_FALSE)
        return perr_set(e, k, "invalid_type", "%s: expected a boolean, got %s", k, tname(v));
    *out = g4_jv_type(v) == G4_JSON_TRUE;
    return 1;
}

static int add_stop(gen_params *p, const char *s, size_t n, perr *e) {
    if (n == 0) return 0; /* an empty stop string never matches */
    if (n >= SCHED_MAX_STOP_LEN) return perr_set(e, "stop", "invalid_value", "stop: a stop string is %zu bytes (at most %d)", n, SCHED_MAX_STOP_LEN - 1);
    if (p->n_stop >= SCHED_MAX_STOP) return perr_set(e, "stop", "invalid_value", "stop: more than %d stop strings", SCHED_MAX_STOP);
    memcpy(p->stop[p->n_stop], s, n);
    p->stop_len[p->n_stop++] = n;
    return 0;
}

int params_parse(srv *sv, const g4_jv *root, int chat, gen_params *p, perr *e) {
    memset(p, 0, sizeof *p);
    p->max_tokens = -1;
    p->top_logprobs = -1;
    g4_sampler_defaults(sv->m, &p->sp);
    const g4_jv *v;
    if ((v = field(root, "model")) && g4_jv_type(v) != G4_JSON_STRING)
        return perr_set(e, "model", "invalid_type", "model: expected a string, got %s", tname(v));
    if (bool_of(root, "stream", &p->stream, e) < 0) return -1;
    if ((v = field(root, "stream_options"))) {
        if (g4_jv_type(v) != G4_JSON_OBJECT) return perr_set(e, "stream_options", "invalid_type", "stream_options: expected an object, got %s", tname(v));
        if (bool_of(v, "include_usage", &p->include_usage, e) < 0) { snprintf(e->param, sizeof e->param, "stream_options.include_usage"); return -1; }
    }
    int64_t i = 0;
    int r;
    const char *mt = field(root, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if ((r = int_in(root, mt, 0, INT32_MAX, &i, e)) < 0) return -1;
    if (r) p->max_tokens = (int32_t)i;
    if ((r = int_in(root, "n_predict", -1, INT32_MAX, &i, e)) < 0) return -1; /* llama-server's name */
    if (r && p->max_tokens < 0) p->max_tokens = (int32_t)i;
    if (num_in(root, "temperature", 0, 2, &p->sp.temp, e) < 0) return -1;
    if (num_in(root, "top_p", 0, 1, &p->sp.top_p, e) < 0) return -1;
    if (num_in(root, "min_p", 0, 1, &p->sp.min_p, e) < 0) return -1;
    if ((r = int_in(root, "top_k", 0, g4_model_n_vocab(sv->m), &i, e)) < 0) return -1;
    if (r) p->sp.top_k = (int32_t)i;
    if (num_in(root, "presence_penalty", -2, 2, &p->sp.presence_penalty, e) < 0) return -1;
    if (num_in(root, "frequency_penalty", -2, 2, &p->sp.frequency_penalty, e) < 0) return -1;
    if (num_in(root, "repeat_penalty", 1e-6, 1e6, &p->sp.repeat_penalty, e) < 0) return -1;
    if ((v = field(root, "seed"))) {
        uint64_t u;
        if (g4_jv_uint(v, &u)) p->sp.seed = u;
        else if (g4_jv_int(v, &i)) p->sp.seed = (uint64_t)i; /* negative seeds are 64-bit patterns too */
        else return perr_set(e, "seed", "invalid_type", "seed: expected an integer, got %s", g4_jv_type(v) == G4_JSON_NUMBER ? "a fraction or a huge number" : tname(v));
        p->have_seed = 1;
    }
    if (!p->have_seed) { /* random, but reported nowhere: a client wanting repeatability sends one */
        uint64_t x = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)atomic_fetch_add(&sv->ids, 1) * 0xbf58476d1ce4e5b9ull;
        p->sp.seed = x ^ (x >> 31);
    }
    if ((v = field(root, "stop"))) {
        if (g4_jv_type(v) == G4_JSON_STRING) {
            size_t n;
            const char *s = g4_jv_str(v, &n);
            if (add_stop(p, s, n, e) < 0) return -1;
        } else if (g4_jv_type(v) == G4_JSON_ARRAY) {
            for (size_t k = 0; k < g4_jv_len(v); k++) {
                const g4_jv *x = g4_jv_at(v, k);
                if (g4_jv_type(x) != G4_JSON_STRING) return perr_set(e, "stop", "invalid_type", "stop[%zu]: expected a string, got %s", k, tname(x));
                size_t n;
                const char *s = g4_jv_str(x, &n);
                if (add_stop(p, s, n, e) < 0) return -1;
            }
        } else {
            return perr_set(e, "stop", "invalid_type", "stop: expected a string or an array of strings, got %s", tname(v));
        }
    }
    if ((r = int_in(root, "n", 1, INT32_MAX, &i, e)) < 0) return -1;
    if (r && i != 1) return perr_set(e, "n", "unsupported_value", "n: only 1 choice per request is supported, got %lld", (long long)i);
    if ((v = field(root, "response_format"))) {
        const g4_jv *t = g4_jv_get(v, "type");
        size_t n;
        const char *ts = g4_jv_str(t, &n);
        if (g4_jv_type(v) != G4_JSON_OBJECT || !ts) return perr_set(e, "response_format", "invalid_type", "response_format: expected an object with a string \"type\"");
        if (strcmp(ts, "text") != 0) return perr_set(e, "response_format", "unsupported_value", "response_format: type '%.40s' is not supported yet (only \"text\")", ts);
    }
    if (chat) {
        int lp = 0;
        if (bool_of(root, "logprobs", &lp, e) < 0) return -1;
        if ((r = int_in(root, "top_logprobs", 0, SCHED_MAX_TOP, &i, e)) < 0) return -1;
        if (r && !lp) return perr_set(e, "top_logprobs", "invalid_value", "top_logprobs: needs \"logprobs\": true");
        p->top_logprobs = lp ? (r ? (int)i : 0) : -1;
        /* thinking: llama-server's chat_template_kwargs.enable_thinking, or reasoning_effort */
        if ((v = field(root, "reasoning_effort"))) {
            size_t n;
            const char *s = g4_jv_str(v, &n);
            if (!s) return perr_set(e, "reasoning_effort", "invalid_type", "reasoning_effort: expected a string, got %s", tname(v));
            if (strcmp(s, "none") && strcmp(s, "minimal") && strcmp(s, "low") && strcmp(s, "medium") && strcmp(s, "high"))
                return perr_set(e, "reasoning_effort", "invalid_value", "reasoning_effort: '%.40s' is not one of none, minimal, low, medium, high", s);
            p->thinking = strcmp(s, "none") != 0;
        }
        if ((v = field(root, "chat_template_kwargs"))) {
            if (g4_jv_type(v) != G4_JSON_OBJECT) return perr_set(e, "chat_template_kwargs", "invalid_type", "chat_template_kwargs: expected an object, got %s", tname(v));
            if (bool_of(v, "enable_thinking", &p->thinking, e) < 0) { snprintf(e->param, sizeof e->param, "chat_template_kwargs.enable_thinking"); return -1; }
        }
    } else {
        if ((r = int_in(root, "logprobs", 0, 5, &i, e)) < 0) return -1;
        if (r) p->top_logprobs = (int)i;
    }
    if (bool_of(root, "ignore_eos", &p->ignore_eos, e) < 0) return -1;
    /* the sampler validates the combination once more (NaN and ranges it knows) */
    char err[256];
    g4_sampler *smp = NULL;
    if (g4_sampler_create(&smp, sv->m, &p->sp, err, sizeof err) != G4_OK) return perr_set(e, NULL, "invalid_value", "%s", err);
    g4_sampler_free(smp);
    return 0;
}

int tokenize_text(srv *sv, const char *s, size_t n, unsigned flags, int32_t **ids, size_t *n_ids) {
    size_t cap = n + 8, got = 0;
    int32_t *out = malloc(cap * sizeof *out);
    if (!out) return -1;
    g4_status st = g4_tokenize(sv->m, s, n, flags, out, cap, &got);
    if (st == G4_ERR_BUFFER) {
        free(out);
        cap = got;
        out = malloc(cap * sizeof *out);
        if (!out) return -1;
        st = g4_tokenize(sv->m, s, n, flags, out, cap, &got);
    }
    if (st != G4_OK) { free(out); return -1; }
    *ids = out;
    *n_ids = got;
    return 0;
}

int completion_prompt(srv *sv, const g4_jv *root, int32_t **ids, size_t *n, perr *e) {
    const g4_jv *v = g4_jv_get(root, "prompt");
    if (g4_jv_type(v) == G4_JSON_ARRAY && g4_jv_len(v) == 1 && g4_jv_type(g4_jv_at(v, 0)) == G4_JSON_STRING) v = g4_jv_at(v, 0);
    if (g4_jv_type(v) == G4_JSON_STRING) {
        size_t len;
        const char *s = g4_jv_str(v, &len);
        /* as llama-server and `g4 run`: BOS, special tokens recognised */
        if (tokenize_text(sv, s, len, G4_TOK_ADD_BOS | G4_TOK_PARSE_SPECIAL, ids, n) < 0) return perr_set(e, "prompt", NULL, "prompt: cannot tokenize (out of memory)");
        return 0;
    }
    if (g4_jv_type(v) == G4_JSON_ARRAY) {
        size_t k = g4_jv_len(v);
        if (k == 0) return perr_set(e, "prompt", "invalid_value", "prompt: the array is empty");
        if (g4_jv_type(g4_jv_at(v, 0)) == G4_JSON_STRING) return perr_set(e, "prompt", "unsupported_value", "prompt: only one prompt per request is supported");
        int32_t *out = malloc(k * sizeof *out);
        if (!out) return perr_set(e, "prompt", NULL, "prompt: out of memory");
        int32_t nv = g4_model_n_vocab(sv->m);
        for (size_t i = 0; i < k; i++) {
            int64_t t;
            if (!g4_jv_int(g4_jv_at(v, i), &t) || t < 0 || t >= nv) {
                free(out);
                return perr_set(e, "prompt", "invalid_value", "prompt[%zu]: expected a token id in [0, %d)", i, (int)nv);
            }
            out[i] = (int32_t)t;
        }
        *ids = out;
        *n = k;
        return 0;
    }
    if (!v) return perr_set(e, "prompt", "missing_field", "prompt: required");
    return perr_set(e, "prompt", "invalid_type", "prompt: expected a string or an array of token ids, got %s", tname(v));
}

/* a message's text: a string, or the text parts of an array joined */
static int content_text(const g4_jv *c, size_t mi, buf *out, perr *e) {
    if (!c || g4_jv_type(c) == G4_JSON_NULL) return 0;
    if (g4_jv_type(c) == G4_JSON_STRING) {
        size_t n;
        const char *s = g4_jv_str(c, &n);
        buf_put(out, s, n);
        return 0;
    }
    if (g4_jv_type(c) != G4_JSON_ARRAY)
        return perr_set(e, "messages", "invalid_type", "messages[%zu].content: expected a string or an array of parts, got %s", mi, tname(c));
    for (size_t k = 0; k < g4_jv_len(c); k++) {
        const g4_jv *part = g4_jv_at(c, k);
        const char *t = g4_jv_str(g4_jv_get(part, "type"), NULL);
        if (g4_jv_type(part) != G4_JSON_OBJECT || !t)
            return perr_set(e, "messages", "invalid_type", "messages[%zu].content[%zu]: expected an object with a \"type\"", mi, k);
        if (strcmp(t, "text") != 0)
            return perr_set(e, "messages", "unsupported_value", "messages[%zu].content[%zu]: part type '%.30s' is not supported (text only)", mi, k, t);
        size_t n;
        const char *s = g4_jv_str(g4_jv_get(part, "text"), &n);
        if (!s) return perr_set(e, "messages", "invalid_type", "messages[%zu].content[%zu].text: expected a string", mi, k);
        buf_put(out, s, n);
    }
    return 0;
}

int chat_prompt(srv *sv, const g4_jv *root, const gen_params *p, int32_t **ids, size_t *n_ids, perr *e) {
    const g4_jv *msgs = g4_jv_get(root, "messages");
    if (!msgs) return perr_set(e, "messages", "missing_field", "messages: required");
    if (g4_jv_type(msgs) != G4_JSON_ARRAY) return perr_set(e, "messages", "invalid_type", "messages: expected an array, got %s", tname(msgs));
    size_t nm = g4_jv_len(msgs);
    if (nm == 0) return perr_set(e, "messages", "invalid_value", "messages: the array is empty");
    if (nm > 100000) return perr_set(e, "messages", "invalid_value", "messages: %zu messages (at most 100000)", nm);
    g4_chat_msg *cm = calloc(nm, sizeof *cm);
    buf *texts = calloc(nm, sizeof *texts);
    int rc = -1;
    if (!cm || !texts) { perr_set(e, "messages", NULL, "out of memory"); goto done; }
    for (size_t i = 0; i < nm; i++) {
        const g4_jv *m = g4_jv_at(msgs, i);
        if (g4_jv_type(m) != G4_JSON_OBJECT) { perr_set(e, "messages", "invalid_type", "messages[%zu]: expected an object, got %s", i, tname(m)); goto done; }
        const char *role = g4_jv_str(g4_jv_get(m, "role"), NULL);
        if (!role) { perr_set(e, "messages", "invalid_type", "messages[%zu].role: expected a string", i); goto done; }
        if (strcmp(role, "system") && strcmp(role, "developer") && strcmp(role, "user") && strcmp(role, "assistant")) {
            perr_set(e, "messages", "invalid_value", "messages[%zu].role: '%.30s' is not one of system, developer, user, assistant", i, role);
            goto done;
        }
        if (content_text(g4_jv_get(m, "content"), i, &texts[i], e) < 0) goto done;
        if (texts[i].oom) { perr_set(e, "messages", NULL, "out of memory"); goto done; }
        cm[i].role = role;
        cm[i].content = texts[i].p ? texts[i].p : "";
        cm[i].content_len = texts[i].len;
    }
    {
        size_t cap = 256, got = 0;
        for (size_t i = 0; i < nm; i++) cap += texts[i].len + 16;
        int32_t *out = malloc(cap * sizeof *out);
        if (!out) { perr_set(e, "messages", NULL, "out of memory"); goto done; }
        g4_status st = g4_chat_tokenize(sv->m, cm, nm, 1, 1, p->thinking, out, cap, &got);
        if (st == G4_ERR_BUFFER) {
            free(out);
            cap = got;
            out = malloc(cap * sizeof *out);
            st = out ? g4_chat_tokenize(sv->m, cm, nm, 1, 1, p->thinking, out, cap, &got) : G4_ERR_NOMEM;
        }
        if (st != G4_OK) { free(out); perr_set(e, "messages", NULL, "messages: cannot render the conversation (%s)", g4_status_str(st)); goto done; }
        *ids = out;
        *n_ids = got;
        rc = 0;
    }
done:
    if (texts) for (size_t i = 0; i < nm; i++) buf_free(&texts[i]);
    free(texts);
    free(cm);
    return rc;
}
