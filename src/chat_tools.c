/* chat_tools.c - the tool syntax of the Gemma 4 chat templates, rendered natively.
 *
 * Owns the templates' macros format_function_declaration, format_parameters (both the older
 * form and the 31B-it one), format_argument and the tool call / tool response blocks, with
 * the value semantics of @huggingface/jinja, which renders the goldens
 * (tests/vectors/chat_ref.txt): object keys in dictsort order (case-insensitive), numbers as
 * JavaScript prints them, null printing nothing, truthiness as JavaScript's. Strings are
 * written between <|"|> tokens.
 *
 * Tokenization (chat.h chat_emit_fn): special tokens are markers; everything else, user text
 * and the plain syntax around it ("declaration:", "{", ":"), is content, so the text between
 * two special tokens is tokenized as one piece, as llama.cpp tokenizes the whole prompt.
 *
 * Where @huggingface/jinja stops with an error (a property whose "type" is not a string, a
 * "required" that is a string), this renders empty values instead. Key order compares
 * ASCII-lowercased UTF-8 bytes (JavaScript lowercases all of Unicode and compares UTF-16
 * units; the two agree on ASCII keys). Recursion follows the JSON nesting, which the parser
 * bounds (64).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"

void chat_put(chat_out *o, const char *s, size_t n, int marker) {
    if (o->stop || !n) return;
    o->stop = o->emit(o->ud, s, n, marker);
    o->turn_end = marker && n == 8 && memcmp(s, "<turn|>\n", 8) == 0;
}

static void nomem(chat_out *o) {
    o->st = G4_ERR_NOMEM;
    o->stop = 1;
}

#define Q(o) CHAT_SP(o, "<|\"|>")

static const char *jstr(const g4_jv *v, size_t *n) {
    const char *s = g4_jv_str(v, n);
    if (!s) *n = 0;
    return s;
}

int chat_truthy(const g4_jv *v) {
    switch (g4_jv_type(v)) {
    case G4_JSON_TRUE: return 1;
    case G4_JSON_NUMBER: return g4_jv_num(v) != 0;
    case G4_JSON_STRING: case G4_JSON_ARRAY: case G4_JSON_OBJECT: return g4_jv_len(v) > 0;
    }
    return 0;
}

/* ==== Numbers as JavaScript writes them ==== */

size_t chat_js_number(double x, char *buf) {
    if (x == 0) { memcpy(buf, "0", 2); return 1; } /* -0 too */
    char e[40], dig[20];
    int p = 1;
    for (; p <= 17; p++) { /* the shortest digits that read back as x */
        snprintf(e, sizeof e, "%.*e", p - 1, x);
        if (strtod(e, NULL) == x) break;
    }
    const char *s = e;
    int neg = *s == '-';
    if (neg) s++;
    int k = 0;
    for (; *s && *s != 'e'; s++) if (*s >= '0' && *s <= '9') dig[k++] = *s;
    while (k > 1 && dig[k - 1] == '0') k--;
    int n = atoi(s + 1) + 1; /* x = 0.d1d2... * 10^n */
    size_t o = 0;
    if (neg) buf[o++] = '-';
    if (k <= n && n <= 21) {
        memcpy(buf + o, dig, (size_t)k), o += (size_t)k;
        for (int i = k; i < n; i++) buf[o++] = '0';
    } else if (0 < n && n <= 21) {
        memcpy(buf + o, dig, (size_t)n), o += (size_t)n;
        buf[o++] = '.';
        memcpy(buf + o, dig + n, (size_t)(k - n)), o += (size_t)(k - n);
    } else if (-6 < n && n <= 0) {
        buf[o++] = '0', buf[o++] = '.';
        for (int i = 0; i < -n; i++) buf[o++] = '0';
        memcpy(buf + o, dig, (size_t)k), o += (size_t)k;
    } else {
        buf[o++] = dig[0];
        if (k > 1) { buf[o++] = '.'; memcpy(buf + o, dig + 1, (size_t)(k - 1)); o += (size_t)(k - 1); }
        o += (size_t)snprintf(buf + o, 8, "e%c%d", n - 1 >= 0 ? '+' : '-', n - 1 >= 0 ? n - 1 : 1 - n);
    }
    buf[o] = 0;
    return o;
}

static void number(chat_out *o, const g4_jv *v) {
    char b[32];
    size_t n = chat_js_number(g4_jv_num(v), b);
    chat_put(o, b, n, 0);
}

/* ==== Object members in dictsort order ==== */

typedef struct kref { const char *k; size_t n, i; } kref;

static int kcmp(const void *pa, const void *pb) {
    const kref *a = pa, *b = pb;
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a->k[i], y = (unsigned char)b->k[i];
        if (x >= 'A' && x <= 'Z') x = (unsigned char)(x + 32);
        if (y >= 'A' && y <= 'Z') y = (unsigned char)(y + 32);
        if (x != y) return x < y ? -1 : 1;
    }
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i; /* a stable sort: source order on ties */
}

/* member indices of obj sorted by key; NULL (and *n 0) for none or out of memory */
static kref *sorted(chat_out *o, const g4_jv *obj, size_t *n) {
    *n = g4_jv_type(obj) == G4_JSON_OBJECT ? g4_jv_len(obj) : 0;
    if (!*n) return NULL;
    kref *r = malloc(*n * sizeof *r);
    if (!r) { nomem(o); *n = 0; return NULL; }
    for (size_t i = 0; i < *n; i++) {
        r[i].k = g4_jv_key(obj, i, &r[i].n);
        r[i].i = i;
    }
    qsort(r, *n, sizeof *r, kcmp);
    return r;
}

/* ==== Values ==== */

static void json_text(chat_out *o, const g4_jv *v);

static void json_string(chat_out *o, const char *s, size_t n) {
    size_t need = g4_json_quote(NULL, 0, s, n);
    char *q = malloc(need);
    if (!q) { nomem(o); return; }
    g4_json_quote(q, need, s, n);
    chat_put(o, q, need, 0);
    free(q);
}

/* a container printed by "{{ }}": JSON with ", " and ": " (jinja's toJSON) */
static void json_text(chat_out *o, const g4_jv *v) {
    size_t n;
    switch (g4_jv_type(v)) {
    case G4_JSON_STRING: { const char *s = jstr(v, &n); json_string(o, s, n); return; }
    case G4_JSON_NUMBER: number(o, v); return;
    case G4_JSON_TRUE: CHAT_TX(o, "true"); return;
    case G4_JSON_FALSE: CHAT_TX(o, "false"); return;
    case G4_JSON_NULL: CHAT_TX(o, "null"); return;
    case G4_JSON_ARRAY:
        CHAT_TX(o, "[");
        for (size_t i = 0; i < g4_jv_len(v) && !o->stop; i++) {
            if (i) CHAT_TX(o, ", ");
            json_text(o, g4_jv_at(v, i));
        }
        CHAT_TX(o, "]");
        return;
    case G4_JSON_OBJECT:
        CHAT_TX(o, "{");
        for (size_t i = 0; i < g4_jv_len(v) && !o->stop; i++) {
            const char *k = g4_jv_key(v, i, &n);
            if (i) CHAT_TX(o, ", ");
            json_string(o, k, n);
            CHAT_TX(o, ": ");
            json_text(o, g4_jv_at(v, i));
        }
        CHAT_TX(o, "}");
        return;
    }
}

void chat_scalar(chat_out *o, const g4_jv *v) {
    size_t n;
    switch (g4_jv_type(v)) {
    case G4_JSON_STRING: { const char *s = jstr(v, &n); chat_put(o, s, n, 0); return; }
    case G4_JSON_NUMBER: number(o, v); return;
    case G4_JSON_TRUE: CHAT_TX(o, "true"); return;
    case G4_JSON_FALSE: CHAT_TX(o, "false"); return;
    case G4_JSON_ARRAY: case G4_JSON_OBJECT: json_text(o, v); return;
    }
}

void chat_argument(chat_out *o, const g4_jv *v, int esc) {
    size_t n;
    switch (g4_jv_type(v)) {
    case G4_JSON_STRING: {
        const char *s = jstr(v, &n);
        Q(o);
        chat_put(o, s, n, 0);
        Q(o);
        return;
    }
    case G4_JSON_TRUE: CHAT_TX(o, "true"); return;
    case G4_JSON_FALSE: CHAT_TX(o, "false"); return;
    case G4_JSON_OBJECT: {
        size_t nk;
        kref *r = sorted(o, v, &nk);
        CHAT_TX(o, "{");
        for (size_t i = 0; i < nk && !o->stop; i++) {
            if (i) CHAT_TX(o, ",");
            if (esc) Q(o);
            chat_put(o, r[i].k, r[i].n, 0);
            if (esc) Q(o);
            CHAT_TX(o, ":");
            chat_argument(o, g4_jv_at(v, r[i].i), esc);
        }
        CHAT_TX(o, "}");
        free(r);
        return;
    }
    case G4_JSON_ARRAY:
        CHAT_TX(o, "[");
        for (size_t i = 0; i < g4_jv_len(v) && !o->stop; i++) {
            if (i) CHAT_TX(o, ",");
            chat_argument(o, g4_jv_at(v, i), esc);
        }
        CHAT_TX(o, "]");
        return;
    case G4_JSON_NUMBER: number(o, v); return;
    }
    /* null and absent print nothing */
}

/* ==== Declarations ==== */

/* value['type'] | upper == lit (ASCII upper case) */
static int upper_is(const g4_jv *v, const char *lit) {
    size_t sn;
    const char *s = jstr(v, &sn);
    if (!s || sn != strlen(lit)) return 0;
    for (size_t i = 0; i < sn; i++)
        if ((s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i]) != lit[i]) return 0;
    return 1;
}

/* <|"|>TYPE<|"|> of a type string */
static void type_str(chat_out *o, const g4_jv *t) {
    size_t sn;
    const char *s = jstr(t, &sn);
    Q(o);
    if (s) {
        char *u = malloc(sn + 1);
        if (!u) { nomem(o); return; }
        for (size_t i = 0; i < sn; i++) u[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i]);
        chat_put(o, u, sn, 0);
        free(u);
    }
    Q(o);
}

/* required:[<|"|>a<|"|>,...] of an array (or an object's keys) */
static void required_list(chat_out *o, const g4_jv *req) {
    CHAT_TX(o, "required:[");
    size_t n = g4_jv_type(req) == G4_JSON_ARRAY || g4_jv_type(req) == G4_JSON_OBJECT ? g4_jv_len(req) : 0;
    for (size_t i = 0; i < n && !o->stop; i++) {
        if (i) CHAT_TX(o, ",");
        Q(o);
        if (g4_jv_type(req) == G4_JSON_OBJECT) {
            size_t kn;
            const char *k = g4_jv_key(req, i, &kn);
            chat_put(o, k, kn, 0);
        } else {
            chat_scalar(o, g4_jv_at(req, i));
        }
        Q(o);
    }
    CHAT_TX(o, "]");
}

static int is_standard_key(const char *k, size_t n) {
    static const char *const std_keys[] = {"description", "type", "properties", "required", "nullable"};
    for (size_t i = 0; i < sizeof std_keys / sizeof *std_keys; i++)
        if (n == strlen(std_keys[i]) && memcmp(k, std_keys[i], n) == 0) return 1;
    return 0;
}

static void parameters(chat_out *o, const g4_jv *props, unsigned flags);

/* the "items:{...}" body of an ARRAY property */
static void items(chat_out *o, const g4_jv *it, unsigned flags) {
    size_t nk;
    kref *r = sorted(o, it, &nk);
    int first = 1;
    for (size_t i = 0; i < nk && !o->stop; i++) {
        const g4_jv *iv = g4_jv_at(it, r[i].i);
        if (g4_jv_type(iv) == G4_JSON_NULL) continue;
        if (!first) CHAT_TX(o, ",");
        first = 0;
        const char *k = r[i].k;
        size_t kn = r[i].n;
        if (kn == 10 && !memcmp(k, "properties", 10)) {
            CHAT_TX(o, "properties:{");
            if (g4_jv_type(iv) == G4_JSON_OBJECT) parameters(o, iv, flags);
            CHAT_TX(o, "}");
        } else if (kn == 8 && !memcmp(k, "required", 8)) {
            required_list(o, iv);
        } else if (kn == 4 && !memcmp(k, "type", 4)) {
            CHAT_TX(o, "type:");
            if (g4_jv_type(iv) == G4_JSON_STRING) {
                type_str(o, iv);
            } else if (g4_jv_type(iv) == G4_JSON_ARRAY) {
                CHAT_TX(o, "[");
                for (size_t j = 0; j < g4_jv_len(iv) && !o->stop; j++) {
                    if (j) CHAT_TX(o, ",");
                    const g4_jv *e = g4_jv_at(iv, j);
                    if (g4_jv_type(e) == G4_JSON_STRING) type_str(o, e);
                    else chat_argument(o, e, 1);
                }
                CHAT_TX(o, "]");
            }
        } else {
            chat_put(o, k, kn, 0);
            CHAT_TX(o, ":");
            chat_argument(o, iv, 1);
        }
    }
    free(r);
}

/* format_parameters(properties): one "key:{...}" per non-standard key */
static void parameters(chat_out *o, const g4_jv *props, unsigned flags) {
    size_t nk;
    kref *r = sorted(o, props, &nk);
    int first = 1;
    const int old = (flags & CHAT_T_PARAMS_OLD) != 0;
    for (size_t i = 0; i < nk && !o->stop; i++) {
        if (is_standard_key(r[i].k, r[i].n)) continue;
        const g4_jv *v = g4_jv_at(props, r[i].i);
        if (!first) CHAT_TX(o, ",");
        first = 0;
        chat_put(o, r[i].k, r[i].n, 0);
        CHAT_TX(o, ":{");
        int comma = 0; /* the templates' add_comma */
#define COMMA() do { if (comma) CHAT_TX(o, ","); else comma = 1; } while (0)
        const g4_jv *desc = g4_jv_get(v, "description"), *type = g4_jv_get(v, "type");
        const g4_jv *sub = g4_jv_get(v, "properties"), *req = g4_jv_get(v, "required");
        const g4_jv *it = g4_jv_get(v, "items");
        int is_str = upper_is(type, "STRING"), is_arr = upper_is(type, "ARRAY"), is_obj = upper_is(type, "OBJECT");
        int items_ok = g4_jv_type(it) == G4_JSON_OBJECT && g4_jv_len(it) > 0;
        if (chat_truthy(desc)) {
            CHAT_TX(o, "description:");
            Q(o);
            chat_scalar(o, desc);
            Q(o);
            comma = 1;
        }
        if (old && chat_truthy(g4_jv_get(v, "nullable"))) { COMMA(); CHAT_TX(o, "nullable:true"); }
        if (is_str) {
            if (chat_truthy(g4_jv_get(v, "enum"))) { COMMA(); CHAT_TX(o, "enum:"); chat_argument(o, g4_jv_get(v, "enum"), 1); }
        } else if (old && is_obj) { /* the older form writes its commas unconditionally */
            CHAT_TX(o, ",properties:{");
            parameters(o, g4_jv_type(sub) == G4_JSON_OBJECT ? sub : v, flags);
            CHAT_TX(o, "}");
            if (chat_truthy(req)) { CHAT_TX(o, ","); required_list(o, req); }
        } else if (is_arr && items_ok) {
            if (old) CHAT_TX(o, ",");
            else COMMA();
            CHAT_TX(o, "items:{");
            items(o, it, flags);
            CHAT_TX(o, "}");
        }
        if (!old) {
            if (chat_truthy(g4_jv_get(v, "nullable"))) { COMMA(); CHAT_TX(o, "nullable:true"); }
            if (is_obj) {
                COMMA();
                CHAT_TX(o, "properties:{");
                parameters(o, g4_jv_type(sub) == G4_JSON_OBJECT ? sub : v, flags);
                CHAT_TX(o, "}");
                if (chat_truthy(req)) { COMMA(); required_list(o, req); }
            }
        }
        COMMA();
        CHAT_TX(o, "type:");
        type_str(o, type);
        CHAT_TX(o, "}");
#undef COMMA
    }
    free(r);
}

void chat_declaration(chat_out *o, const g4_jv *tool, unsigned flags) {
    const g4_jv *fn = g4_jv_get(tool, "function");
    CHAT_TX(o, "declaration:");
    chat_scalar(o, g4_jv_get(fn, "name"));
    CHAT_TX(o, "{description:");
    Q(o);
    chat_scalar(o, g4_jv_get(fn, "description"));
    Q(o);
    const g4_jv *p = g4_jv_get(fn, "parameters");
    if (chat_truthy(p)) {
        CHAT_TX(o, ",parameters:{");
        const g4_jv *props = g4_jv_get(p, "properties"), *req = g4_jv_get(p, "required"), *type = g4_jv_get(p, "type");
        if (chat_truthy(props)) {
            CHAT_TX(o, "properties:{");
            if (g4_jv_type(props) == G4_JSON_OBJECT) parameters(o, props, flags);
            CHAT_TX(o, "},");
        }
        if (chat_truthy(req)) {
            required_list(o, req);
            CHAT_TX(o, ",");
        }
        if (chat_truthy(type)) {
            CHAT_TX(o, "type:");
            type_str(o, type);
            CHAT_TX(o, "}");
        }
    }
    const g4_jv *resp = g4_jv_get(fn, "response");
    if (resp) {
        CHAT_TX(o, ",response:{");
        const g4_jv *d = g4_jv_get(resp, "description");
        if (chat_truthy(d)) {
            CHAT_TX(o, "description:");
            Q(o);
            chat_scalar(o, d);
            Q(o);
            CHAT_TX(o, ",");
        }
        if (upper_is(g4_jv_get(resp, "type"), "OBJECT")) {
            CHAT_TX(o, "type:");
            type_str(o, g4_jv_get(resp, "type"));
            CHAT_TX(o, "}");
        }
    }
    CHAT_TX(o, "}");
}

/* ==== Calls and responses ==== */

/* key:format_argument(value, escape_keys=False) of every member, sorted, comma-separated */
static void members(chat_out *o, const g4_jv *obj) {
    size_t nk;
    kref *r = sorted(o, obj, &nk);
    for (size_t i = 0; i < nk && !o->stop; i++) {
        if (i) CHAT_TX(o, ",");
        chat_put(o, r[i].k, r[i].n, 0);
        CHAT_TX(o, ":");
        chat_argument(o, g4_jv_at(obj, r[i].i), 0);
    }
    free(r);
}

void chat_tool_call(chat_out *o, const char *name, size_t name_len, const g4_jv *args) {
    CHAT_SP(o, "<|tool_call>");
    CHAT_TX(o, "call:");
    chat_put(o, name, name_len, 0);
    CHAT_TX(o, "{");
    if (g4_jv_type(args) == G4_JSON_OBJECT) members(o, args);
    else if (g4_jv_type(args) == G4_JSON_STRING) chat_scalar(o, args);
    CHAT_TX(o, "}");
    CHAT_SP(o, "<tool_call|>");
}

void chat_tool_response(chat_out *o, const char *name, size_t name_len, const g4_jv *val, const char *str,
                        size_t str_len) {
    CHAT_SP(o, "<|tool_response>");
    CHAT_TX(o, "response:");
    chat_put(o, name, name_len, 0);
    if (g4_jv_type(val) == G4_JSON_OBJECT) {
        CHAT_TX(o, "{");
        members(o, val);
        CHAT_TX(o, "}");
    } else {
        CHAT_TX(o, "{value:");
        if (val) chat_argument(o, val, 0);
        else { Q(o); chat_put(o, str, str_len, 0); Q(o); }
        CHAT_TX(o, "}");
    }
    CHAT_SP(o, "<tool_response|>");
}
