/* json.c - a strict JSON reader (RFC 8259) into one immutable allocation, and the string
 * quoting the writers use.
 *
 * Owns g4_json_parse and the g4_jv accessors (g4.h). Strict on purpose, because what is read
 * here comes from the network (reliability.md #68): duplicate keys, lone surrogates, invalid
 * UTF-8, control characters in strings, numbers outside the double range, a byte order mark,
 * trailing data and nesting deeper than the caller's limit are all errors naming the byte
 * offset. The parser never recurses: containers open on an explicit stack of max_depth
 * entries. Memory is linear in the input: at most one node per input byte plus the decoded
 * strings (never longer than their source).
 *
 * Layout: nodes[0] is the root; every container's children are listed contiguously in kids[]
 * (built after the parse), so g4_jv_at is O(1). A node finds its document through its own
 * index (nodes[] is the flexible array member of struct g4_json).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "g4_impl.h"

struct g4_jv {
    uint8_t  type;     /* G4_JSON_* */
    uint8_t  is_int;   /* number written without fraction or exponent */
    uint32_t n;        /* string: bytes; array/object: children */
    uint32_t a;        /* string: offset in strs; container: offset in kids */
    uint32_t key;      /* object member: key offset in strs */
    uint32_t key_len;
    uint32_t src;      /* span of the value in the source text */
    uint32_t src_len;
    uint32_t idx;      /* own index in nodes[] */
    uint32_t parent;   /* during the parse: index of the container (UINT32_MAX for the root) */
    double   num;
};

struct g4_json {
    char     *text;    /* [len + 1] copy of the source (g4_jv_raw) */
    char     *strs;    /* decoded strings and keys, each NUL-terminated */
    uint32_t *kids;    /* [n_nodes - 1] children indices, contiguous per container */
    size_t    n_nodes;
    g4_jv     nodes[];
};

#define MAX_INPUT ((size_t)1 << 30) /* offsets are 32-bit */

/* ==== Parser ==== */

typedef struct parser {
    const unsigned char *s;
    size_t n, p;
    g4_jv *nodes;
    size_t n_nodes, cap_nodes;
    char *strs;
    size_t n_strs;
    char *err;
    size_t errlen;
} parser;

static g4_status fail(parser *ps, size_t at, const char *what) {
    return g4_errf(G4_ERR_ARG, ps->err, ps->errlen, "JSON: %s at byte %zu", what, at);
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->n) {
        unsigned char c = ps->s[ps->p];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        ps->p++;
    }
}

static g4_jv *new_node(parser *ps, int type, uint32_t parent) {
    if (ps->n_nodes == ps->cap_nodes) {
        size_t nc = ps->cap_nodes ? ps->cap_nodes * 2 : 16;
        if (nc > ps->n + 2) nc = ps->n + 2; /* a value takes at least one byte */
        if (nc <= ps->n_nodes) return NULL;
        g4_jv *nn = realloc(ps->nodes, nc * sizeof *nn);
        if (!nn) return NULL;
        ps->nodes = nn;
        ps->cap_nodes = nc;
    }
    g4_jv *v = &ps->nodes[ps->n_nodes];
    memset(v, 0, sizeof *v);
    v->type = (uint8_t)type;
    v->idx = (uint32_t)ps->n_nodes;
    v->parent = parent;
    v->src = (uint32_t)ps->p;
    ps->n_nodes++;
    return v;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(const unsigned char *s, size_t n, size_t p, unsigned *out) {
    if (p + 4 > n) return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(s[p + (size_t)i]);
        if (h < 0) return 0;
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return 1;
}

/* length of the valid UTF-8 sequence at s[p] (strict: no overlongs, surrogates, > U+10FFFF), 0 if invalid */
static size_t utf8_len(const unsigned char *s, size_t n, size_t p) {
    unsigned char c = s[p];
    if (c < 0x80) return 1;
    size_t k;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) k = 2;
    else if (c >= 0xe0 && c <= 0xef) { k = 3; if (c == 0xe0) lo = 0xa0; if (c == 0xed) hi = 0x9f; }
    else if (c >= 0xf0 && c <= 0xf4) { k = 4; if (c == 0xf0) lo = 0x90; if (c == 0xf4) hi = 0x8f; }
    else return 0;
    if (p + k > n) return 0;
    if (s[p + 1] < lo || s[p + 1] > hi) return 0;
    for (size_t i = 2; i < k; i++) if ((s[p + i] & 0xc0) != 0x80) return 0;
    return k;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xc0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* parses the string at ps->p (the opening quote) into strs, located by *off and *len */
static g4_status parse_string(parser *ps, uint32_t *off, uint32_t *len) {
    const unsigned char *s = ps->s;
    size_t p = ps->p + 1, start = ps->n_strs;
    char *o = ps->strs + ps->n_strs;
    for (;;) {
        if (p >= ps->n) return fail(ps, ps->p, "unterminated string");
        unsigned char c = s[p];
        if (c == '"') { p++; break; }
        if (c < 0x20) return fail(ps, p, "control character in a string (must be escaped)");
        if (c == '\\') {
            if (p + 1 >= ps->n) return fail(ps, p, "unterminated escape");
            unsigned char e = s[p + 1];
            switch (e) {
            case '"': *o++ = '"'; p += 2; continue;
            case '\\': *o++ = '\\'; p += 2; continue;
            case '/': *o++ = '/'; p += 2; continue;
            case 'b': *o++ = '\b'; p += 2; continue;
            case 'f': *o++ = '\f'; p += 2; continue;
            case 'n': *o++ = '\n'; p += 2; continue;
            case 'r': *o++ = '\r'; p += 2; continue;
            case 't': *o++ = '\t'; p += 2; continue;
            case 'u': {
                unsigned u;
                if (!hex4(s, ps->n, p + 2, &u)) return fail(ps, p, "bad \\u escape (4 hex digits expected)");
                if (u >= 0xdc00 && u <= 0xdfff) return fail(ps, p, "lone low surrogate in a \\u escape");
                if (u >= 0xd800 && u <= 0xdbff) {
                    unsigned u2;
                    if (p + 7 >= ps->n || s[p + 6] != '\\' || s[p + 7] != 'u' || !hex4(s, ps->n, p + 8, &u2) ||
                        u2 < 0xdc00 || u2 > 0xdfff)
                        return fail(ps, p, "lone high surrogate in a \\u escape");
                    u = 0x10000 + ((u - 0xd800) << 10) + (u2 - 0xdc00);
                    p += 6;
                }
                o += put_utf8(o, u); /* 6 or 12 source bytes give at most 4 */
                p += 6;
                continue;
            }
            default: return fail(ps, p, "unknown escape in a string");
            }
        }
        size_t k = utf8_len(s, ps->n, p);
        if (!k) return fail(ps, p, "invalid UTF-8 in a string");
        memcpy(o, s + p, k);
        o += k;
        p += k;
    }
    *o++ = 0;
    size_t used = (size_t)(o - (ps->strs + start));
    *off = (uint32_t)start;
    *len = (uint32_t)(used - 1);
    ps->n_strs += used;
    ps->p = p;
    return G4_OK;
}

static g4_status parse_number(parser *ps, g4_jv *v) {
    const unsigned char *s = ps->s;
    size_t p = ps->p, st = p;
    int is_int = 1;
    if (p < ps->n && s[p] == '-') p++;
    if (p >= ps->n || s[p] < '0' || s[p] > '9') return fail(ps, st, "invalid number");
    if (s[p] == '0') {
        p++;
        if (p < ps->n && s[p] >= '0' && s[p] <= '9') return fail(ps, st, "leading zero in a number");
    } else {
        while (p < ps->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p < ps->n && s[p] == '.') {
        is_int = 0;
        p++;
        if (p >= ps->n || s[p] < '0' || s[p] > '9') return fail(ps, st, "invalid number (digits expected after '.')");
        while (p < ps->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p < ps->n && (s[p] == 'e' || s[p] == 'E')) {
        is_int = 0;
        p++;
        if (p < ps->n && (s[p] == '+' || s[p] == '-')) p++;
        if (p >= ps->n || s[p] < '0' || s[p] > '9') return fail(ps, st, "invalid number (exponent digits expected)");
        while (p < ps->n && s[p] >= '0' && s[p] <= '9') p++;
    }
    size_t len = p - st;
    char buf[64], *tmp = len < sizeof buf ? buf : malloc(len + 1);
    if (!tmp) return g4_errf(G4_ERR_NOMEM, ps->err, ps->errlen, "JSON: out of memory");
    memcpy(tmp, s + st, len);
    tmp[len] = 0;
    errno = 0;
    double d = strtod(tmp, NULL);
    int range = errno == ERANGE && (d > 1.0 || d < -1.0); /* overflow; underflow to 0 is fine */
    if (tmp != buf) free(tmp);
    if (range) return fail(ps, st, "number out of range");
    v->num = d;
    v->is_int = (uint8_t)is_int;
    ps->p = p;
    return G4_OK;
}

static int lit(parser *ps, const char *w, size_t n) {
    if (ps->n - ps->p < n || memcmp(ps->s + ps->p, w, n) != 0) return 0;
    ps->p += n;
    return 1;
}

typedef struct kref { const char *k; uint32_t n; } kref;
static int kref_cmp(const void *a, const void *b) {
    const kref *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->k, y->k, m);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* object just closed: duplicate keys (sorted copy, O(k log k): no quadratic scan) */
static g4_status check_dups(parser *ps, uint32_t obj) {
    size_t k = ps->nodes[obj].n;
    if (k < 2) return G4_OK;
    kref *r = malloc(k * sizeof *r);
    if (!r) return g4_errf(G4_ERR_NOMEM, ps->err, ps->errlen, "JSON: out of memory");
    size_t j = 0;
    for (size_t i = obj + 1; i < ps->n_nodes && j < k; i++)
        if (ps->nodes[i].parent == obj) r[j++] = (kref){ps->strs + ps->nodes[i].key, ps->nodes[i].key_len};
    qsort(r, j, sizeof *r, kref_cmp);
    for (size_t i = 1; i < j; i++) {
        if (kref_cmp(&r[i - 1], &r[i]) == 0) {
            char what[96];
            size_t sh = r[i].n > 40 ? 40 : r[i].n, o = 0;
            char esc[48];
            for (size_t q = 0; q < sh; q++) esc[o++] = (r[i].k[q] >= 0x20 && r[i].k[q] < 0x7f) ? r[i].k[q] : '?';
            esc[o] = 0;
            snprintf(what, sizeof what, "duplicate key '%s%s'", esc, r[i].n > 40 ? "..." : "");
            free(r);
            return fail(ps, ps->nodes[obj].src, what);
        }
    }
    free(r);
    return G4_OK;
}

static g4_status parse_all(parser *ps, int max_depth) {
    uint32_t *stack = malloc((size_t)max_depth * sizeof *stack);
    if (!stack) return g4_errf(G4_ERR_NOMEM, ps->err, ps->errlen, "JSON: out of memory");
    int depth = 0;
    g4_status st = G4_OK;
    uint32_t key_off = 0, key_len = 0;
    int have_key = 0;
    /* expect a value; after it, close containers / separators */
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->n) { st = fail(ps, ps->p, depth ? "unexpected end of input" : "empty input"); break; }
        uint32_t parent = depth ? stack[depth - 1] : UINT32_MAX;
        unsigned char c = ps->s[ps->p];
        g4_jv *v = NULL;
        int type = c == '{' ? G4_JSON_OBJECT : c == '[' ? G4_JSON_ARRAY : c == '"' ? G4_JSON_STRING :
                   c == 't' ? G4_JSON_TRUE : c == 'f' ? G4_JSON_FALSE : c == 'n' ? G4_JSON_NULL :
                   (c == '-' || (c >= '0' && c <= '9')) ? G4_JSON_NUMBER : G4_JSON_NONE;
        if (type == G4_JSON_NONE) {
            st = fail(ps, ps->p, c == 0xef ? "byte order mark or invalid character (a value expected)" : "a value expected");
            break;
        }
        v = new_node(ps, type, parent);
        if (!v) { st = g4_errf(G4_ERR_NOMEM, ps->err, ps->errlen, "JSON: out of memory"); break; }
        if (have_key) { v->key = key_off; v->key_len = key_len; have_key = 0; }
        if (parent != UINT32_MAX) ps->nodes[parent].n++;
        uint32_t vi = v->idx;
        if (type == G4_JSON_OBJECT || type == G4_JSON_ARRAY) {
            if (depth >= max_depth) {
                char what[64];
                snprintf(what, sizeof what, "nesting deeper than %d", max_depth);
                st = fail(ps, ps->p, what);
                break;
            }
            ps->p++;
            stack[depth++] = vi;
            skip_ws(ps);
            if (ps->p < ps->n && ps->s[ps->p] == (type == G4_JSON_OBJECT ? '}' : ']')) {
                ps->p++;
                depth--;
                ps->nodes[vi].src_len = (uint32_t)(ps->p - ps->nodes[vi].src);
            } else if (type == G4_JSON_OBJECT) {
                /* first key */
                if (ps->p >= ps->n || ps->s[ps->p] != '"') { st = fail(ps, ps->p, "a key (string) expected"); break; }
                if ((st = parse_string(ps, &key_off, &key_len)) != G4_OK) break;
                skip_ws(ps);
                if (ps->p >= ps->n || ps->s[ps->p] != ':') { st = fail(ps, ps->p, "':' expected after a key"); break; }
                ps->p++;
                have_key = 1;
                continue;
            } else {
                continue;
            }
        } else if (type == G4_JSON_STRING) {
            if ((st = parse_string(ps, &ps->nodes[vi].a, &ps->nodes[vi].n)) != G4_OK) break;
        } else if (type == G4_JSON_NUMBER) {
            if ((st = parse_number(ps, &ps->nodes[vi])) != G4_OK) break;
        } else {
            int ok = type == G4_JSON_TRUE ? lit(ps, "true", 4) : type == G4_JSON_FALSE ? lit(ps, "false", 5) : lit(ps, "null", 4);
            if (!ok) { st = fail(ps, ps->p, "invalid literal"); break; }
        }
        if (type != G4_JSON_OBJECT && type != G4_JSON_ARRAY) ps->nodes[vi].src_len = (uint32_t)(ps->p - ps->nodes[vi].src);
        /* after a value: separators and closings */
        int again = 0;
        while (depth > 0 && !again && st == G4_OK) {
            uint32_t top = stack[depth - 1];
            int obj = ps->nodes[top].type == G4_JSON_OBJECT;
            skip_ws(ps);
            if (ps->p >= ps->n) { st = fail(ps, ps->p, "unexpected end of input"); break; }
            unsigned char d = ps->s[ps->p];
            if (d == ',') {
                ps->p++;
                if (obj) {
                    skip_ws(ps);
                    if (ps->p >= ps->n || ps->s[ps->p] != '"') { st = fail(ps, ps->p, "a key (string) expected"); break; }
                    if ((st = parse_string(ps, &key_off, &key_len)) != G4_OK) break;
                    skip_ws(ps);
                    if (ps->p >= ps->n || ps->s[ps->p] != ':') { st = fail(ps, ps->p, "':' expected after a key"); break; }
                    ps->p++;
                    have_key = 1;
                }
                again = 1;
            } else if (d == (obj ? '}' : ']')) {
                ps->p++;
                ps->nodes[top].src_len = (uint32_t)(ps->p - ps->nodes[top].src);
                if (obj && (st = check_dups(ps, top)) != G4_OK) break;
                depth--;
            } else {
                st = fail(ps, ps->p, obj ? "',' or '}' expected" : "',' or ']' expected");
            }
        }
        if (st != G4_OK || again) { if (st != G4_OK) break; continue; }
        /* the root value is complete */
        skip_ws(ps);
        if (ps->p != ps->n) st = fail(ps, ps->p, "trailing data after the value");
        break;
    }
    free(stack);
    return st;
}

g4_status g4_json_parse(g4_json **out, const char *text, size_t len, int max_depth, char *err, size_t errlen) {
    if (out) *out = NULL;
    if (!out || (!text && len)) return g4_errf(G4_ERR_ARG, err, errlen, "JSON: NULL argument");
    if (len >= MAX_INPUT) return g4_errf(G4_ERR_ARG, err, errlen, "JSON: input of %zu bytes is too large", len);
    if (max_depth <= 0) max_depth = 64;
    if (max_depth > 100000) max_depth = 100000;
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.s = (const unsigned char *)(text ? text : "");
    ps.n = len;
    ps.err = err;
    ps.errlen = errlen;
    ps.strs = malloc(len + 1);
    if (!ps.strs) return g4_errf(G4_ERR_NOMEM, err, errlen, "JSON: out of memory");
    g4_status st = parse_all(&ps, max_depth);
    g4_json *d = NULL;
    if (st == G4_OK) {
        size_t n = ps.n_nodes;
        d = malloc(sizeof *d + n * sizeof(g4_jv));
        char *txt = malloc(len + 1);
        uint32_t *kids = n > 1 ? malloc((n - 1) * sizeof *kids) : NULL;
        if (!d || !txt || (n > 1 && !kids)) {
            free(d); free(txt); free(kids);
            d = NULL;
            st = g4_errf(G4_ERR_NOMEM, err, errlen, "JSON: out of memory");
        } else {
            memcpy(d->nodes, ps.nodes, n * sizeof(g4_jv));
            memcpy(txt, ps.s, len);
            txt[len] = 0;
            d->text = txt;
            d->kids = kids;
            d->n_nodes = n;
            /* children contiguous per container: offsets by prefix sums, filled in node order
             * (children were created in source order) */
            uint32_t off = 0;
            for (size_t i = 0; i < n; i++) {
                g4_jv *v = &d->nodes[i];
                if (v->type == G4_JSON_OBJECT || v->type == G4_JSON_ARRAY) { v->a = off; off += v->n; }
            }
            /* fill cursors, one per container */
            uint32_t *fill = n ? calloc(n, sizeof *fill) : NULL;
            if (!fill) {
                g4_json_free(d);
                d = NULL;
                st = g4_errf(G4_ERR_NOMEM, err, errlen, "JSON: out of memory");
            } else {
                for (size_t i = 1; i < n; i++) {
                    uint32_t p = d->nodes[i].parent;
                    kids[d->nodes[p].a + fill[p]++] = (uint32_t)i;
                }
                free(fill);
                /* strings: keep the arena (offsets stay valid) */
                d->strs = ps.strs;
                ps.strs = NULL;
            }
        }
    }
    free(ps.nodes);
    free(ps.strs);
    if (st == G4_OK) *out = d;
    return st;
}

void g4_json_free(g4_json *d) {
    if (!d) return;
    free(d->text);
    free(d->strs);
    free(d->kids);
    free(d);
}

/* ==== Accessors ==== */

static const g4_json *doc_of(const g4_jv *v) {
    const g4_jv *base = v - v->idx;
    return (const g4_json *)(const void *)((const char *)base - offsetof(g4_json, nodes));
}

const g4_jv *g4_json_root(const g4_json *d) { return d && d->n_nodes ? &d->nodes[0] : NULL; }
int g4_jv_type(const g4_jv *v) { return v ? v->type : G4_JSON_NONE; }

size_t g4_jv_len(const g4_jv *v) {
    if (!v) return 0;
    return v->type == G4_JSON_STRING || v->type == G4_JSON_ARRAY || v->type == G4_JSON_OBJECT ? v->n : 0;
}

const g4_jv *g4_jv_at(const g4_jv *v, size_t i) {
    if (!v || (v->type != G4_JSON_ARRAY && v->type != G4_JSON_OBJECT) || i >= v->n) return NULL;
    const g4_json *d = doc_of(v);
    return &d->nodes[d->kids[v->a + i]];
}

const char *g4_jv_key(const g4_jv *obj, size_t i, size_t *len) {
    const g4_jv *m = obj && obj->type == G4_JSON_OBJECT ? g4_jv_at(obj, i) : NULL;
    if (len) *len = m ? m->key_len : 0;
    return m ? doc_of(m)->strs + m->key : NULL;
}

const g4_jv *g4_jv_get(const g4_jv *obj, const char *key) {
    if (!obj || obj->type != G4_JSON_OBJECT || !key) return NULL;
    size_t kl = strlen(key);
    const g4_json *d = doc_of(obj);
    for (uint32_t i = 0; i < obj->n; i++) {
        const g4_jv *m = &d->nodes[d->kids[obj->a + i]];
        if (m->key_len == kl && memcmp(d->strs + m->key, key, kl) == 0) return m;
    }
    return NULL;
}

const char *g4_jv_str(const g4_jv *v, size_t *len) {
    if (!v || v->type != G4_JSON_STRING) { if (len) *len = 0; return NULL; }
    if (len) *len = v->n;
    return doc_of(v)->strs + v->a;
}

double g4_jv_num(const g4_jv *v) { return v && v->type == G4_JSON_NUMBER ? v->num : 0.0; }

int g4_jv_int(const g4_jv *v, int64_t *out) {
    if (!v || v->type != G4_JSON_NUMBER) return 0;
    if (v->is_int) { /* exact, from the text: no double rounding for big integers */
        const char *s = doc_of(v)->text + v->src;
        errno = 0;
        char *end;
        long long x = strtoll(s, &end, 10);
        if (errno || end != s + v->src_len) return 0;
        if (out) *out = (int64_t)x;
        return 1;
    }
    double d = v->num; /* 1.0, 1e3: integral values written as floats */
    if (d != d || d < -9007199254740992.0 || d > 9007199254740992.0 || (double)(int64_t)d != d) return 0;
    if (out) *out = (int64_t)d;
    return 1;
}

int g4_jv_uint(const g4_jv *v, uint64_t *out) {
    if (!v || v->type != G4_JSON_NUMBER) return 0;
    const char *s = doc_of(v)->text + v->src;
    if (v->is_int && s[0] != '-') {
        errno = 0;
        char *end;
        unsigned long long x = strtoull(s, &end, 10);
        if (errno || end != s + v->src_len) return 0;
        if (out) *out = (uint64_t)x;
        return 1;
    }
    int64_t i;
    if (!g4_jv_int(v, &i) || i < 0) return 0;
    if (out) *out = (uint64_t)i;
    return 1;
}

const char *g4_jv_raw(const g4_jv *v, size_t *len) {
    if (!v) { if (len) *len = 0; return NULL; }
    if (len) *len = v->src_len;
    return doc_of(v)->text + v->src;
}

/* ==== Writing: string quoting ==== */

size_t g4_json_quote(char *out, size_t cap, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
#define PUT(c) do { if (o < cap) out[o] = (char)(c); o++; } while (0)
    PUT('"');
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (c < 0x80) {
            switch (c) {
            case '"': PUT('\\'); PUT('"'); break;
            case '\\': PUT('\\'); PUT('\\'); break;
            case '\n': PUT('\\'); PUT('n'); break;
            case '\r': PUT('\\'); PUT('r'); break;
            case '\t': PUT('\\'); PUT('t'); break;
            case '\b': PUT('\\'); PUT('b'); break;
            case '\f': PUT('\\'); PUT('f'); break;
            default:
                if (c < 0x20 || c == 0x7f) { PUT('\\'); PUT('u'); PUT('0'); PUT('0'); PUT(hex[c >> 4]); PUT(hex[c & 15]); }
                else PUT(c);
            }
            i++;
            continue;
        }
        size_t k = utf8_len(u, n, i);
        if (!k) { /* invalid byte: U+FFFD, never an invalid document (reliability.md #56) */
            PUT(0xef); PUT(0xbf); PUT(0xbd);
            i++;
            continue;
        }
        if (k == 3 && c == 0xe2 && u[i + 1] == 0x80 && (u[i + 2] == 0xa8 || u[i + 2] == 0xa9)) {
            PUT('\\'); PUT('u'); PUT('2'); PUT('0'); PUT('2'); PUT(u[i + 2] == 0xa8 ? '8' : '9'); /* JS line breaks */
        } else {
            for (size_t q = 0; q < k; q++) PUT(u[i + q]);
        }
        i += k;
    }
    PUT('"');
#undef PUT
    return o;
}
