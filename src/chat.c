/* chat.c - Gemma 4 chat format, rendered natively (no template engine: reliability.md #49).
 *
 * Owns g4_chat_render and chat_render (chat.h). Renders the text subset of the official
 * templates (gemma4-architecture.md §7): roles, system turn, thinking flag, history with
 * thought channels stripped, generation prompt. Tools, images and audio are not rendered.
 * Template differences are read from tokenizer.chat_template markers at load (tokenizer.c):
 * "<|think|>\n" vs "<|think|>", the empty thought block of the no-thinking generation
 * prompt, and the 31B template's merged consecutive assistant turns.
 *
 * Rules, as the templates write them:
 *  - BOS first; a system turn when thinking is on or the first message is system/developer:
 *    "<|turn>system\n" [ "<|think|>" ["\n"] ] [first message content, trimmed] "<turn|>\n";
 *  - every other message: "<|turn>" role "\n" content "<turn|>\n", where assistant -> model
 *    and any other accepted role (user, system, developer, model) is written as given;
 *  - content is trimmed (JavaScript String.prototype.trim whitespace, as @huggingface/jinja,
 *    which renders the goldens); model content first loses every "<|channel>...<channel|>"
 *    block (the templates' strip_thinking);
 *  - generation prompt "<|turn>model\n", plus "<|channel>thought\n<channel|>" when thinking
 *    is off and the template has the empty thought block.
 */
#include <string.h>

#include "chat.h"
#include "tokenizer.h"

/* ==== Trimming ==== */

/* length of the JS whitespace character starting at s[i] (0 if none) */
static size_t ws_at(const unsigned char *s, size_t i, size_t n) {
    unsigned char c = s[i];
    if (c == ' ' || (c >= 0x09 && c <= 0x0d)) return 1;
    if (c == 0xc2 && i + 1 < n && s[i + 1] == 0xa0) return 2;                    /* U+00A0 */
    if (c == 0xe1 && i + 2 < n && s[i + 1] == 0x9a && s[i + 2] == 0x80) return 3; /* U+1680 */
    if (c == 0xe2 && i + 2 < n) {
        unsigned char b1 = s[i + 1], b2 = s[i + 2];
        if (b1 == 0x80 && (b2 <= 0x8a || b2 == 0xa8 || b2 == 0xa9 || b2 == 0xaf)) return 3; /* 2000-200A 2028 2029 202F */
        if (b1 == 0x81 && b2 == 0x9f) return 3;                                   /* U+205F */
    }
    if (c == 0xe3 && i + 2 < n && s[i + 1] == 0x80 && s[i + 2] == 0x80) return 3; /* U+3000 */
    if (c == 0xef && i + 2 < n && s[i + 1] == 0xbb && s[i + 2] == 0xbf) return 3; /* U+FEFF */
    return 0;
}

static void trim(const char **s, size_t *n) {
    const unsigned char *p = (const unsigned char *)*s;
    size_t a = 0, b = *n, k;
    while (a < b && (k = ws_at(p, a, b)) > 0) a += k;
    for (;;) { /* from the end: a whitespace character of 1, 2 or 3 bytes ending at b */
        size_t found = 0;
        for (size_t back = 1; back <= 3 && back <= b - a && !found; back++)
            if (ws_at(p, b - back, b) == back) found = back;
        if (!found) break;
        b -= found;
    }
    *s += a;
    *n = b - a;
}

/* ==== Rendering ==== */

typedef struct rsink { chat_emit_fn emit; void *ud; int stop; } rsink;

static void put(rsink *o, const char *s, size_t n, int marker) {
    if (!o->stop && n) o->stop = o->emit(o->ud, s, n, marker);
}
#define PUTM(o, lit) put(o, lit, sizeof(lit) - 1, 1)

static const char *find(const char *s, size_t n, const char *pat, size_t pn) {
    return n >= pn ? memmem(s, n, pat, pn) : NULL;
}

/* model content: strip "<|channel>...<channel|>" (the templates' strip_thinking), then trim.
 * strip_thinking: for each part of content.split('<channel|>'), keep what precedes the first
 * '<|channel>' in it. The result is emitted in pieces; trimming spans pieces, so the kept
 * ranges are collected first (bounded by the content length). */
static void emit_model_content(rsink *o, const char *s, size_t n) {
    static const char open[] = "<|channel>", close[] = "<channel|>";
    /* pass 1: total kept length and the first/last kept non-whitespace positions */
    const char *p = s, *end = s + n;
    const char *first = NULL, *last = NULL; /* range [first, last) of kept text, trimmed */
    for (int pass = 0; pass < 2; pass++) {
        p = s;
        for (;;) {
            const char *c = find(p, (size_t)(end - p), close, sizeof close - 1);
            const char *pe = c ? c : end;
            const char *op = find(p, (size_t)(pe - p), open, sizeof open - 1);
            const char *ke = op ? op : pe; /* kept: [p, ke) */
            if (pass == 0) {
                const char *a = p;
                size_t kn = (size_t)(ke - p);
                const char *t = a;
                size_t tn = kn;
                trim(&t, &tn);
                if (tn) {
                    if (!first) first = t;
                    last = t + tn;
                }
            } else {
                const char *a = p < first ? first : p, *b = ke > last ? last : ke;
                if (first && a < b) put(o, a, (size_t)(b - a), 0);
            }
            if (!c) break;
            p = c + sizeof close - 1;
        }
        if (!first) return;
    }
}

static void emit_content(rsink *o, const char *s, size_t n, int model) {
    if (model) { emit_model_content(o, s, n); return; }
    trim(&s, &n);
    put(o, s, n, 0);
}

static int role_is(const g4_chat_msg *m, const char *r) { return strcmp(m->role, r) == 0; }

g4_status chat_render(const chat_variant *cv, const g4_chat_msg *msgs, size_t n_msgs, const char *bos, int add_gen,
                      int thinking, int cont, chat_emit_fn emit, void *ud, char *err, size_t errlen) {
    if (!cv || !emit || (!msgs && n_msgs)) return g4_errf(G4_ERR_ARG, err, errlen, "chat: NULL argument");
    for (size_t i = 0; i < n_msgs; i++) {
        const g4_chat_msg *m = &msgs[i];
        if (!m->role) return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: role is NULL", i);
        if (!role_is(m, "system") && !role_is(m, "developer") && !role_is(m, "user") && !role_is(m, "assistant") &&
            !role_is(m, "model")) {
            char r[24];
            size_t k = 0;
            for (; m->role[k] && k < sizeof r - 4; k++) r[k] = (m->role[k] >= 0x20 && m->role[k] < 0x7f) ? m->role[k] : '?';
            r[k] = 0;
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: role '%s%s' (expected system, developer, user, "
                           "assistant or model)", i, r, m->role[k] ? "..." : "");
        }
        if (!m->content && m->content_len)
            return g4_errf(G4_ERR_ARG, err, errlen, "chat: message %zu: content is NULL with length %zu", i, m->content_len);
    }
    rsink o = {emit, ud, 0};
    if (bos) put(&o, bos, strlen(bos), 1);
    size_t start = 0;
    int first_sys = !cont && n_msgs > 0 && (role_is(&msgs[0], "system") || role_is(&msgs[0], "developer"));
    if (!cont && (thinking || first_sys)) {
        PUTM(&o, "<|turn>system\n");
        if (thinking) {
            PUTM(&o, "<|think|>");
            if (cv->think_nl) PUTM(&o, "\n");
        }
        if (first_sys) {
            emit_content(&o, msgs[0].content ? msgs[0].content : "", msgs[0].content_len, 0);
            start = 1;
        }
        PUTM(&o, "<turn|>\n");
    }
    for (size_t i = start; i < n_msgs; i++) {
        const g4_chat_msg *m = &msgs[i];
        int model = role_is(m, "assistant") || role_is(m, "model");
        const char *role = model ? "model" : m->role;
        /* 31B template: an assistant right after an assistant continues the same turn (it
         * compares the previous message's role with 'assistant' literally) */
        int same = cv->merge_model && model && i > start && role_is(&msgs[i - 1], "assistant");
        if (!same) {
            PUTM(&o, "<|turn>");
            put(&o, role, strlen(role), 1);
            PUTM(&o, "\n");
        }
        emit_content(&o, m->content ? m->content : "", m->content_len, model);
        PUTM(&o, "<turn|>\n");
    }
    if (add_gen) {
        PUTM(&o, "<|turn>model\n");
        if (!thinking && cv->empty_thought) PUTM(&o, "<|channel>thought\n<channel|>");
    }
    return o.stop ? G4_ERR_ABORTED : G4_OK;
}

void chat_variant_of(const g4_model *m, chat_variant *cv) {
    tok_chat_variant(m ? m->vocab : NULL, &cv->think_nl, &cv->empty_thought, &cv->merge_model);
}

/* ==== Public: render to text or to tokens ==== */

static const char *bos_text(const g4_model *m, char *buf, size_t cap) {
    int32_t id = m->vocab ? tok_bos(m->vocab) : -1;
    size_t bn = 0;
    if (id >= 0 && tok_piece(m->vocab, id, G4_PIECE_SPECIAL, buf, cap - 1, &bn) == G4_OK && bn) {
        buf[bn] = 0;
        return buf;
    }
    return "<bos>";
}

typedef struct ksink { const g4_model *m; int32_t *out; size_t cap, n; g4_status st; } ksink;

static int to_tokens(void *ud, const char *s, size_t n, int marker) {
    ksink *k = ud;
    size_t got = 0, room = k->n < k->cap ? k->cap - k->n : 0;
    g4_status st = tok_encode(k->m->vocab, s, n, marker ? G4_TOK_PARSE_SPECIAL : 0, room ? k->out + k->n : NULL, room, &got);
    if (st != G4_OK && st != G4_ERR_BUFFER) { k->st = st; return 1; }
    k->n += got;
    return 0;
}

g4_status chat_tokenize(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs, int add_bos, int add_gen,
                        int thinking, int cont, int32_t *out, size_t cap, size_t *n_out, char *err, size_t errlen) {
    if (n_out) *n_out = 0;
    if (!m || !m->vocab || !n_out || (!out && cap)) return g4_errf(G4_ERR_ARG, err, errlen, "chat: NULL argument");
    chat_variant cv;
    chat_variant_of(m, &cv);
    char bb[64];
    ksink k = {m, out, cap, 0, G4_OK};
    g4_status st = chat_render(&cv, msgs, n_msgs, add_bos ? bos_text(m, bb, sizeof bb) : NULL, add_gen, thinking, cont,
                               to_tokens, &k, err, errlen);
    if (st == G4_ERR_ABORTED && k.st != G4_OK) return g4_errf(k.st, err, errlen, "chat: tokenize: %s", g4_status_str(k.st));
    if (st != G4_OK) return st;
    *n_out = k.n;
    return k.n > cap ? G4_ERR_BUFFER : G4_OK;
}

g4_status g4_chat_tokenize(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs, int add_bos, int add_gen,
                           int thinking, int32_t *out, size_t cap, size_t *n_out) {
    return chat_tokenize(m, msgs, n_msgs, add_bos, add_gen, thinking, 0, out, cap, n_out, NULL, 0);
}

typedef struct tsink { char *buf; size_t cap, n; } tsink;

static int to_text(void *ud, const char *s, size_t n, int marker) {
    (void)marker;
    tsink *t = ud;
    if (t->n < t->cap) memcpy(t->buf + t->n, s, n <= t->cap - t->n ? n : t->cap - t->n);
    t->n += n;
    return 0;
}

g4_status g4_chat_render(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs, int add_bos, int add_gen,
                         int thinking, char *buf, size_t cap, size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!m || !n_out || (!buf && cap)) return G4_ERR_ARG;
    chat_variant cv;
    chat_variant_of(m, &cv);
    char bb[64];
    tsink t = {buf, cap, 0};
    g4_status st = chat_render(&cv, msgs, n_msgs, add_bos ? bos_text(m, bb, sizeof bb) : NULL, add_gen, thinking, 0,
                               to_text, &t, NULL, 0);
    if (st != G4_OK) return st;
    *n_out = t.n;
    return t.n > cap ? G4_ERR_BUFFER : G4_OK;
}
