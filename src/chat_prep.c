/* chat_prep.c - a chat request (chat.h chat_req) validated and turned into the turns the
 * renderer walks (chat_turn): roles mapped, the JSON of tools and tool calls parsed, call
 * arguments parsed from their strings, and, for the older templates (CHAT_T_LEGACY),
 * llama.cpp's conversion of OpenAI "tool" turns into tool responses.
 *
 * As llama-server prepares messages for a Gemma 4 template (llama.cpp v0.5.0 common/chat.cpp
 * and common/parsers/gemma4.cpp): "developer" becomes "system"; a call's arguments string is
 * parsed as JSON (one that does not parse is an error); for a template without the OpenAI
 * tool handling, an assistant turn with tool calls, the "tool" turns after it and a following
 * assistant turn with content and no calls become one assistant turn whose tool responses
 * are the results (each parsed as JSON when it is JSON, else the text) named after the call
 * at the same position (else the result's tool_call_id), whose content is the following
 * turn's, and whose reasoning is its own.
 *
 * Memory: the turn array, the call and response arrays and the parsed documents, all owned
 * by the chat_prep (chat_prep_free).
 */
#include <stdlib.h>
#include <string.h>

#include "chat.h"

enum { JSON_DEPTH = 64 };

static void *own(chat_prep *p, void *x, int doc) {
    if (!x) return NULL;
    if (p->n_own == p->cap_own) {
        size_t nc = p->cap_own ? 2 * p->cap_own : 16;
        void **np = realloc(p->own, nc * sizeof *np);
        if (!np) { if (doc) g4_json_free(x); else free(x); return NULL; }
        p->own = np;
        p->cap_own = nc;
    }
    /* documents are tagged by the low bit of their slot index: kept apart below */
    p->own[p->n_own++] = doc ? (void *)((uintptr_t)x | 1u) : x;
    return x;
}

static void *alloc(chat_prep *p, size_t n, size_t size) {
    if (n == 0) return NULL;
    return own(p, calloc(n, size), 0);
}

void chat_prep_free(chat_prep *p) {
    for (size_t i = 0; i < p->n_own; i++) {
        uintptr_t x = (uintptr_t)p->own[i];
        if (x & 1u) g4_json_free((g4_json *)(x & ~(uintptr_t)1));
        else free((void *)x);
    }
    free(p->own);
    memset(p, 0, sizeof *p);
}

/* parsed JSON (owned by p), or NULL with *bad set when it does not parse */
static const g4_jv *parse(chat_prep *p, const char *s, size_t n, char *why, size_t whylen, int *nomem) {
    g4_json *d = NULL;
    g4_status st = g4_json_parse(&d, s, n, JSON_DEPTH, why, whylen);
    if (st != G4_OK) { *nomem = st == G4_ERR_NOMEM; return NULL; }
    if (!own(p, d, 1)) { *nomem = 1; return NULL; }
    return g4_json_root(d);
}

static int is(const char *s, const char *lit) { return strcmp(s, lit) == 0; }

static const char *jstr(const g4_jv *v, size_t *n) {
    const char *s = g4_jv_str(v, n);
    if (!s) *n = 0;
    return s;
}

static const char *printable(const char *s, char *buf, size_t cap) { /* a role in a message */
    size_t k = 0;
    for (; s[k] && k + 4 < cap; k++) buf[k] = (s[k] >= 0x20 && s[k] < 0x7f) ? s[k] : '?';
    if (s[k]) memcpy(buf + k, "...", 3), k += 3;
    buf[k] = 0;
    return buf;
}

static g4_status tools_check(const g4_jv *tools, char *err, size_t errlen) {
    if (g4_jv_type(tools) != G4_JSON_ARRAY) return g4_errf(G4_ERR_ARG, err, errlen, "chat: tools: expected an array");
    for (size_t i = 0; i < g4_jv_len(tools); i++) {
        const g4_jv *t = g4_jv_at(tools, i), *ty = g4_jv_get(t, "type"), *fn = g4_jv_get(t, "function");
        size_t n;
        if (g4_jv_type(t) != G4_JSON_OBJECT) return g4_errf(G4_ERR_ARG, err, errlen, "chat: tools[%zu]: expected an object", i);
        if (ty && !(g4_jv_str(ty, &n) && is(g4_jv_str(ty, &n), "function")))
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: tools[%zu].type: only \"function\" tools are supported", i);
        if (g4_jv_type(fn) != G4_JSON_OBJECT) return g4_errf(G4_ERR_ARG, err, errlen, "chat: tools[%zu].function: expected an object", i);
        if (!jstr(g4_jv_get(fn, "name"), &n) || n == 0)
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: tools[%zu].function.name: expected a non-empty string", i);
        const g4_jv *d = g4_jv_get(fn, "description"), *pa = g4_jv_get(fn, "parameters");
        if (d && g4_jv_type(d) != G4_JSON_STRING && g4_jv_type(d) != G4_JSON_NULL)
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: tools[%zu].function.description: expected a string", i);
        if (pa && g4_jv_type(pa) != G4_JSON_OBJECT && g4_jv_type(pa) != G4_JSON_NULL)
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: tools[%zu].function.parameters: expected an object", i);
    }
    return G4_OK;
}

/* the tool_calls of turn i */
static g4_status calls_of(chat_prep *p, size_t i, const g4_chat_turn *in, chat_turn *t, char *err, size_t errlen) {
    char why[160];
    int nomem = 0;
    const g4_jv *a = parse(p, in->tool_calls, in->tool_calls_len, why, sizeof why, &nomem);
    if (nomem) return g4_errf(G4_ERR_NOMEM, err, errlen, "chat: out of memory");
    if (!a) return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: tool_calls: %s", i, why);
    if (g4_jv_type(a) == G4_JSON_NULL) return G4_OK;
    if (g4_jv_type(a) != G4_JSON_ARRAY) return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: tool_calls: expected an array", i);
    t->n_calls = g4_jv_len(a);
    t->calls = alloc(p, t->n_calls, sizeof *t->calls);
    if (t->n_calls && !t->calls) return g4_errf(G4_ERR_NOMEM, err, errlen, "chat: out of memory");
    for (size_t k = 0; k < t->n_calls; k++) {
        const g4_jv *c = g4_jv_at(a, k), *fn = g4_jv_get(c, "function"), *id = g4_jv_get(c, "id");
        chat_call *cc = &t->calls[k];
        if (g4_jv_type(c) != G4_JSON_OBJECT || g4_jv_type(fn) != G4_JSON_OBJECT)
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: tool_calls[%zu].function: expected an object", i, k);
        cc->name = jstr(g4_jv_get(fn, "name"), &cc->name_len);
        if (!cc->name || !cc->name_len)
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: tool_calls[%zu].function.name: expected a non-empty string", i, k);
        if (id && g4_jv_type(id) != G4_JSON_NULL && !(cc->id = jstr(id, &cc->id_len)))
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: tool_calls[%zu].id: expected a string", i, k);
        const g4_jv *args = g4_jv_get(fn, "arguments");
        size_t an;
        const char *as = jstr(args, &an);
        if (as) { /* OpenAI's form: a string holding a JSON object */
            cc->args = parse(p, as, an, why, sizeof why, &nomem);
            if (nomem) return g4_errf(G4_ERR_NOMEM, err, errlen, "chat: out of memory");
            if (!cc->args)
                return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: tool_calls[%zu].function.arguments: not JSON (%s)", i, k, why);
        } else {
            cc->args = args;
        }
    }
    return G4_OK;
}

/* llama.cpp's convert_tool_responses_gemma4 over t[0..n) -> out[] (at most n entries) */
static g4_status convert_legacy(chat_prep *p, chat_turn *t, size_t n, chat_turn *out, size_t *n_out, char *err,
                                size_t errlen) {
    size_t i = 0, o = 0;
    while (i < n) {
        if (!(t[i].assistant && t[i].n_calls)) { out[o++] = t[i++]; continue; }
        chat_turn m = t[i++];
        m.content = "";
        m.content_len = 0;
        size_t n_tool = 0;
        while (i + n_tool < n && t[i + n_tool].kind == CHAT_R_TOOL) n_tool++;
        m.resp = alloc(p, n_tool, sizeof *m.resp);
        if (n_tool && !m.resp) return g4_errf(G4_ERR_NOMEM, err, errlen, "chat: out of memory");
        for (size_t k = 0; k < n_tool; k++, i++) {
            chat_resp *r = &m.resp[k];
            char why[8];
            int nomem = 0;
            r->val = t[i].content_len ? parse(p, t[i].content, t[i].content_len, why, sizeof why, &nomem) : NULL;
            if (nomem) return g4_errf(G4_ERR_NOMEM, err, errlen, "chat: out of memory");
            r->str = t[i].content;
            r->str_len = t[i].content_len;
            if (k < m.n_calls) r->name = m.calls[k].name, r->name_len = m.calls[k].name_len;
            if (!r->name_len) r->name = t[i].call_id ? t[i].call_id : "", r->name_len = t[i].call_id_len;
        }
        m.n_resp = n_tool;
        if (i < n && t[i].assistant && !t[i].n_calls && t[i].content_len) {
            m.content = t[i].content;
            m.content_len = t[i].content_len;
            i++;
        }
        out[o++] = m;
    }
    *n_out = o;
    return G4_OK;
}

g4_status chat_prepare(chat_prep *p, const chat_req *rq, unsigned flags, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    if (!rq || (!rq->turns && rq->n)) return g4_errf(G4_ERR_ARG, err, errlen, "chat: NULL argument");
    if (rq->tools) {
        char why[160];
        int nomem = 0;
        p->tools = parse(p, rq->tools, rq->tools_len, why, sizeof why, &nomem);
        if (nomem) return g4_errf(G4_ERR_NOMEM, err, errlen, "chat: out of memory");
        if (!p->tools) return g4_errf(G4_ERR_ARG, err, errlen, "chat: tools: %s", why);
        if (g4_jv_type(p->tools) == G4_JSON_NULL) p->tools = NULL;
        g4_status st = p->tools ? tools_check(p->tools, err, errlen) : G4_OK;
        if (st != G4_OK) return st;
    }
    chat_turn *t = alloc(p, rq->n ? rq->n : 1, sizeof *t);
    if (!t) return g4_errf(G4_ERR_NOMEM, err, errlen, "chat: out of memory");
    for (size_t i = 0; i < rq->n; i++) {
        const g4_chat_turn *in = &rq->turns[i];
        chat_turn *x = &t[i];
        const char *r = in->role;
        char rb[24];
        if (!r) return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: role is NULL", i);
        if (is(r, "system") || is(r, "developer")) x->kind = CHAT_R_SYSTEM, x->role = "system";
        else if (is(r, "user")) x->kind = CHAT_R_USER, x->role = "user";
        else if (is(r, "assistant") || is(r, "model")) x->kind = CHAT_R_MODEL, x->role = "model", x->assistant = is(r, "assistant");
        else if (is(r, "tool")) x->kind = CHAT_R_TOOL, x->role = "tool";
        else
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: role '%s' (expected system, developer, user, "
                           "assistant, model or tool)", i, printable(r, rb, sizeof rb));
        if (!in->content && in->content_len)
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: content is NULL with length %zu", i, in->content_len);
        if ((!in->reasoning && in->reasoning_len) || (!in->tool_calls && in->tool_calls_len) ||
            (!in->tool_call_id && in->tool_call_id_len) || (!in->name && in->name_len))
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: a NULL field with a length", i);
        x->content = in->content ? in->content : "";
        x->content_len = in->content_len;
        x->reasoning = in->reasoning;
        x->reasoning_len = in->reasoning_len;
        x->call_id = in->tool_call_id;
        x->call_id_len = in->tool_call_id_len;
        x->name = in->name;
        x->name_len = in->name_len;
        if (in->tool_calls) {
            if (x->kind != CHAT_R_MODEL)
                return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: tool_calls: only assistant messages make calls", i);
            g4_status st = calls_of(p, i, in, x, err, errlen);
            if (st != G4_OK) return st;
        }
    }
    p->t = t;
    p->n = rq->n;
    if (flags & CHAT_T_LEGACY) {
        chat_turn *c = alloc(p, rq->n ? rq->n : 1, sizeof *c);
        if (!c) return g4_errf(G4_ERR_NOMEM, err, errlen, "chat: out of memory");
        g4_status st = convert_legacy(p, t, rq->n, c, &p->n, err, errlen);
        if (st != G4_OK) return st;
        p->t = c;
    }
    return G4_OK;
}
