/* reply.c - splits a Gemma 4 answer into content, reasoning and tool calls (g4_reply_*).
 *
 * The model writes its thinking as "<|channel>thought\n ... <channel|>" and a tool call as
 * "<|tool_call>call:NAME{key:value,...}<tool_call|>" with strings between <|"|> markers
 * (gemma4-architecture.md §7). These are user-defined tokens, which the detokenizer always
 * renders, so the split works on text. The parser is streaming: text is released as soon as
 * it cannot be the start of a marker, a tool call once it is complete, with its arguments
 * rewritten as a JSON object. A call that does not parse, or one that never closes, is given
 * back as content, markers included, so nothing the model wrote is lost.
 *
 * Bounds: a marker is held back at most 12 bytes; a tool call is buffered up to 1 MiB (more
 * is content); nested argument values at most 32 deep (the descent is bounded by that).
 */
#include <stdlib.h>
#include <string.h>

#include "g4_impl.h"

enum { M_CONTENT, M_CHANNEL_NAME, M_REASONING, M_TOOL };
#define MAX_CALL  ((size_t)1 << 20)
#define MAX_DEPTH 32

struct g4_reply {
    int    mode;
    char  *b;        /* [n] held bytes: a possible marker prefix, a channel name, or a tool call */
    size_t n, cap;
    char  *j;        /* JSON output scratch for a call */
    size_t jn, jcap;
};

static const char OPEN_CH[] = "<|channel>", CLOSE_CH[] = "<channel|>", OPEN_TC[] = "<|tool_call>",
                  CLOSE_TC[] = "<tool_call|>", QUOTE[] = "<|\"|>";

g4_status g4_reply_create(g4_reply **out) {
    if (!out) return G4_ERR_ARG;
    *out = calloc(1, sizeof **out);
    return *out ? G4_OK : G4_ERR_NOMEM;
}

void g4_reply_free(g4_reply *r) {
    if (!r) return;
    free(r->b);
    free(r->j);
    free(r);
}

static int hold(g4_reply *r, const char *s, size_t n) {
    if (r->n + n > r->cap) {
        size_t nc = r->cap ? r->cap : 64;
        while (nc < r->n + n) nc *= 2;
        char *nb = realloc(r->b, nc);
        if (!nb) return 0;
        r->b = nb;
        r->cap = nc;
    }
    memcpy(r->b + r->n, s, n);
    r->n += n;
    return 1;
}

/* ==== Tool call text -> JSON ==== */

typedef struct jw { g4_reply *r; int ok; } jw;
static void jput(jw *w, const char *s, size_t n) {
    g4_reply *r = w->r;
    if (!w->ok) return;
    if (r->jn + n > r->jcap) {
        size_t nc = r->jcap ? r->jcap : 256;
        while (nc < r->jn + n) nc *= 2;
        char *nj = realloc(r->j, nc);
        if (!nj) { w->ok = 0; return; }
        r->j = nj;
        r->jcap = nc;
    }
    memcpy(r->j + r->jn, s, n);
    r->jn += n;
}
static void jstr(jw *w, const char *s, size_t n) {
    size_t need = g4_json_quote(NULL, 0, s, n);
    char tmp[256];
    char *q = need <= sizeof tmp ? tmp : malloc(need);
    if (!q) { w->ok = 0; return; }
    g4_json_quote(q, need, s, n);
    jput(w, q, need);
    if (q != tmp) free(q);
}

static int starts(const char *p, const char *e, const char *lit) {
    size_t n = strlen(lit);
    return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

static const char *skip_sp(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
    return p;
}

/* a bare scalar: a JSON number / true / false / null as written, anything else as a string */
static int is_json_scalar(const char *s, size_t n) {
    if ((n == 4 && !memcmp(s, "true", 4)) || (n == 5 && !memcmp(s, "false", 5)) || (n == 4 && !memcmp(s, "null", 4))) return 1;
    g4_json *d = NULL;
    int ok = n && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) && g4_json_parse(&d, s, n, 1, NULL, 0) == G4_OK;
    g4_json_free(d);
    return ok;
}

static const char *value(jw *w, const char *p, const char *e, int depth);

static const char *string_lit(jw *w, const char *p, const char *e) { /* at <|"|> */
    p += sizeof QUOTE - 1;
    const char *q = e - p >= (ptrdiff_t)(sizeof QUOTE - 1) ? memmem(p, (size_t)(e - p), QUOTE, sizeof QUOTE - 1) : NULL;
    if (!q) return NULL;
    jstr(w, p, (size_t)(q - p));
    return q + sizeof QUOTE - 1;
}

static const char *object(jw *w, const char *p, const char *e, int depth) { /* at '{' */
    p++;
    jput(w, "{", 1);
    p = skip_sp(p, e);
    if (p < e && *p == '}') { jput(w, "}", 1); return p + 1; }
    for (int first = 1;; first = 0) {
        p = skip_sp(p, e);
        if (!first) jput(w, ",", 1);
        if (starts(p, e, QUOTE)) {
            p = string_lit(w, p, e);
            if (!p) return NULL;
        } else {
            const char *k = p;
            while (p < e && *p != ':' && *p != '{' && *p != '}' && *p != ',' && *p != '[' && *p != ']') p++;
            const char *ke = p;
            while (ke > k && (ke[-1] == ' ' || ke[-1] == '\n')) ke--;
            if (ke == k) return NULL;
            jstr(w, k, (size_t)(ke - k));
        }
        p = skip_sp(p, e);
        if (p >= e || *p != ':') return NULL;
        jput(w, ":", 1);
        p = value(w, p + 1, e, depth + 1);
        if (!p) return NULL;
        p = skip_sp(p, e);
        if (p < e && *p == ',') { p++; continue; }
        if (p < e && *p == '}') { jput(w, "}", 1); return p + 1; }
        return NULL;
    }
}

static const char *array(jw *w, const char *p, const char *e, int depth) { /* at '[' */
    p++;
    jput(w, "[", 1);
    p = skip_sp(p, e);
    if (p < e && *p == ']') { jput(w, "]", 1); return p + 1; }
    for (int first = 1;; first = 0) {
        if (!first) jput(w, ",", 1);
        p = value(w, p, e, depth + 1);
        if (!p) return NULL;
        p = skip_sp(p, e);
        if (p < e && *p == ',') { p++; continue; }
        if (p < e && *p == ']') { jput(w, "]", 1); return p + 1; }
        return NULL;
    }
}

static const char *value(jw *w, const char *p, const char *e, int depth) {
    if (depth > MAX_DEPTH) return NULL;
    p = skip_sp(p, e);
    if (p >= e) return NULL;
    if (starts(p, e, QUOTE)) return string_lit(w, p, e);
    if (*p == '{') return object(w, p, e, depth);
    if (*p == '[') return array(w, p, e, depth);
    const char *s = p;
    while (p < e && *p != ',' && *p != '}' && *p != ']') p++;
    const char *t = p;
    while (t > s && (t[-1] == ' ' || t[-1] == '\n')) t--;
    if (t == s) return NULL;
    if (is_json_scalar(s, (size_t)(t - s))) jput(w, s, (size_t)(t - s));
    else jstr(w, s, (size_t)(t - s));
    return p;
}

/* "call:NAME{...}" -> name and JSON arguments (in r->j); 0 if it does not parse */
static int parse_call(g4_reply *r, const char *s, size_t n, const char **name, size_t *name_len) {
    const char *p = s, *e = s + n;
    p = skip_sp(p, e);
    if (!starts(p, e, "call:")) return 0;
    p += 5;
    const char *nm = p;
    while (p < e && *p != '{') p++;
    if (p == nm || p >= e) return 0;
    *name = nm;
    *name_len = (size_t)(p - nm);
    for (const char *q = nm; q < p; q++) if ((unsigned char)*q <= ' ') return 0;
    r->jn = 0;
    jw w = {r, 1};
    p = object(&w, p, e, 0);
    if (!p || !w.ok) return 0;
    p = skip_sp(p, e);
    return p == e;
}

/* ==== Streaming ==== */

/* longest suffix of s[0..n) that is a proper prefix of lit */
static size_t partial(const char *s, size_t n, const char *lit) {
    size_t L = strlen(lit) - 1;
    if (L > n) L = n;
    for (size_t k = L; k > 0; k--) if (memcmp(s + n - k, lit, k) == 0) return k;
    return 0;
}

typedef struct emit { g4_reply_fn fn; void *ud; int stop; } emit;
static void out(emit *em, int kind, const char *s, size_t n, const char *name, size_t nl) {
    if (!em->stop && (n || kind == G4_REPLY_TOOL_CALL)) em->stop = em->fn(em->ud, kind, s, n, name, nl);
}

static g4_status run(g4_reply *r, emit *em, int end) {
    for (;;) {
        if (em->stop) return G4_ERR_ABORTED;
        if (!r->b) return G4_OK; /* nothing pushed yet */
        char *b = r->b;
        size_t n = r->n;
        if (r->mode == M_CONTENT || r->mode == M_REASONING) {
            const char *m1 = r->mode == M_CONTENT ? OPEN_CH : CLOSE_CH, *m2 = r->mode == M_CONTENT ? OPEN_TC : NULL;
            char *f1 = n ? memmem(b, n, m1, strlen(m1)) : NULL, *f2 = m2 && n ? memmem(b, n, m2, strlen(m2)) : NULL;
            char *f = f1 && (!f2 || f1 < f2) ? f1 : f2;
            int kind = r->mode == M_CONTENT ? G4_REPLY_CONTENT : G4_REPLY_REASONING;
            if (!f) {
                size_t keep = end ? 0 : partial(b, n, m1);
                if (m2 && !end) { size_t k2 = partial(b, n, m2); if (k2 > keep) keep = k2; }
                out(em, kind, b, n - keep, NULL, 0);
                memmove(b, b + n - keep, keep);
                r->n = keep;
                return G4_OK;
            }
            size_t at = (size_t)(f - b), ml = f == f1 ? strlen(m1) : strlen(m2);
            out(em, kind, b, at, NULL, 0);
            r->mode = r->mode == M_REASONING ? M_CONTENT : f == f1 ? M_CHANNEL_NAME : M_TOOL;
            if (r->mode == M_TOOL) { /* keep the opening marker: a call that fails to parse goes back as content */
                memmove(b, f, n - at);
                r->n = n - at;
                /* continue below with the marker in the buffer */
            } else {
                memmove(b, b + at + ml, n - at - ml);
                r->n = n - at - ml;
            }
            continue;
        }
        if (r->mode == M_CHANNEL_NAME) { /* "thought\n": the channel's name line */
            char *nl = n ? memchr(b, '\n', n) : NULL;
            if (!nl && n < 32 && !end) return G4_OK;
            size_t skip = nl ? (size_t)(nl - b) + 1 : 0;
            memmove(b, b + skip, n - skip);
            r->n = n - skip;
            r->mode = M_REASONING;
            continue;
        }
        /* M_TOOL: buffer holds "<|tool_call>..." */
        char *c = n > sizeof OPEN_TC - 1 ? memmem(b + sizeof OPEN_TC - 1, n - (sizeof OPEN_TC - 1), CLOSE_TC, sizeof CLOSE_TC - 1) : NULL;
        if (!c) {
            if (!end && n <= MAX_CALL) return G4_OK;
            out(em, G4_REPLY_CONTENT, b, n, NULL, 0); /* never closed, or too long: content */
            r->n = 0;
            r->mode = M_CONTENT;
            if (end) return em->stop ? G4_ERR_ABORTED : G4_OK;
            continue;
        }
        size_t body0 = sizeof OPEN_TC - 1, body1 = (size_t)(c - b), tot = body1 + sizeof CLOSE_TC - 1;
        const char *name = NULL;
        size_t nl = 0;
        if (parse_call(r, b + body0, body1 - body0, &name, &nl)) out(em, G4_REPLY_TOOL_CALL, r->j, r->jn, name, nl);
        else out(em, G4_REPLY_CONTENT, b, tot, NULL, 0);
        memmove(b, b + tot, n - tot);
        r->n = n - tot;
        r->mode = M_CONTENT;
    }
}

g4_status g4_reply_push(g4_reply *r, const char *s, size_t n, int end, g4_reply_fn fn, void *ud) {
    if (!r || !fn || (!s && n)) return G4_ERR_ARG;
    if (n && !hold(r, s, n)) return G4_ERR_NOMEM;
    emit em = {fn, ud, 0};
    g4_status st = run(r, &em, end);
    if (end && st == G4_OK) {
        if (r->mode == M_CHANNEL_NAME || r->mode == M_REASONING) out(&em, G4_REPLY_REASONING, r->b, r->n, NULL, 0);
        else if (r->n) out(&em, G4_REPLY_CONTENT, r->b, r->n, NULL, 0);
        r->n = 0;
        r->mode = M_CONTENT;
    }
    return em.stop ? G4_ERR_ABORTED : st;
}
