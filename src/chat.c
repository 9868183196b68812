/* chat.c - Gemma 4 chat format, rendered natively (no template engine: reliability.md #49).
 *
 * Owns g4_chat_render(_turns), g4_chat_tokenize(_turns) and chat_render(_req) (chat.h): the
 * conversation walk of the official templates (gemma4-architecture.md §7): roles, system
 * turn, thinking flag, tool declarations, history with thought channels stripped, tool calls
 * and tool responses, generation prompt. Images and audio are not rendered. Template
 * differences are read from tokenizer.chat_template markers at load (tokenizer.c):
 * "<|think|>\n" vs "<|think|>", the empty thought block of the no-thinking generation
 * prompt, the 31B template's merged consecutive assistant turns, and how tools are written
 * (chat.h CHAT_T_*). The tool syntax itself is chat_tools.c; the request's validation and
 * llama.cpp's message conversions are chat_prep.c.
 *
 * Rules, as the templates write them:
 *  - BOS first; a system turn when thinking is on, tools are given, or the first message is
 *    system/developer: "<|turn>system\n" [ "<|think|>" ["\n"] ] [first message content,
 *    trimmed] [ "<|tool>" declaration "<tool|>" per tool ] "<turn|>\n";
 *  - every other message: "<|turn>" role "\n" [reasoning] [tool calls] [tool responses]
 *    content "<turn|>\n", where assistant -> model, developer -> system;
 *  - content is trimmed (JavaScript String.prototype.trim whitespace, as @huggingface/jinja,
 *    which renders the goldens); model content first loses every "<|channel>...<channel|>"
 *    block (the templates' strip_thinking);
 *  - tool results: the 31B-it template writes the "tool" messages after an assistant's calls
 *    into that turn ("<|tool_response>response:NAME{value:...}<tool_response|>"), leaving the
 *    turn open when it has no content; the older ones get them as tool responses (chat_prep.c);
 *  - generation prompt "<|turn>model\n", plus "<|channel>thought\n<channel|>" when thinking
 *    is off and the template has the empty thought block; none after an open tool response;
 *    and, as llama.cpp does, "<|turn>model\n" when the text would end with "<turn|>\n".
 */
#include <stdlib.h>
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

#define PUTM(o, lit) chat_put(o, lit, sizeof(lit) - 1, 1)

static const char *find(const char *s, size_t n, const char *pat, size_t pn) {
    return n >= pn ? memmem(s, n, pat, pn) : NULL;
}

/* model content: strip "<|channel>...<channel|>" (the templates' strip_thinking), then trim.
 * strip_thinking: for each part of content.split('<channel|>'), keep what precedes the first
 * '<|channel>' in it. The result is emitted in pieces; trimming spans pieces, so the kept
 * ranges are collected first (bounded by the content length). */
static void emit_model_content(chat_out *o, const char *s, size_t n) {
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
                if (first && a < b) chat_put(o, a, (size_t)(b - a), 0);
            }
            if (!c) break;
            p = c + sizeof close - 1;
        }
        if (!first) return;
    }
}

static void emit_content(chat_out *o, const char *s, size_t n, int model) {
    if (model) { emit_model_content(o, s, n); return; }
    trim(&s, &n);
    chat_put(o, s, n, 0);
}

/* ==== The conversation ==== */

enum { PT_NONE, PT_CALL, PT_RESP }; /* the templates' ns.prev_message_type, as far as it matters */

static void header(chat_out *o, const chat_turn *t) {
    PUTM(o, "<|turn>");
    chat_put(o, t->role, strlen(t->role), 1);
    PUTM(o, "\n");
}

static void thought(chat_out *o, const chat_turn *t, int nl) {
    CHAT_SP(o, "<|channel>");
    CHAT_TX(o, "thought\n");
    chat_put(o, t->reasoning, t->reasoning_len, 0);
    if (nl) CHAT_TX(o, "\n");
    CHAT_SP(o, "<channel|>");
}

static void calls(chat_out *o, const chat_turn *t) {
    for (size_t k = 0; k < t->n_calls && !o->stop; k++) chat_tool_call(o, t->calls[k].name, t->calls[k].name_len, t->calls[k].args);
}

/* tc.get('id') == follow.get('tool_call_id'): equal strings, or both absent */
static int id_match(const chat_call *c, const chat_turn *f) {
    if (!c->id || !f->call_id) return !c->id && !f->call_id;
    return c->id_len == f->call_id_len && memcmp(c->id, f->call_id, c->id_len) == 0;
}

/* 31B-it: the "tool" turns after t[i] answer its calls, inside its turn; returns whether any did */
static int responses_after(chat_out *o, const chat_turn *t, size_t n, size_t i) {
    int any = 0;
    for (size_t k = i + 1; k < n && t[k].kind == CHAT_R_TOOL && !o->stop; k++) {
        const char *name = t[k].name ? t[k].name : "unknown";
        size_t nl = t[k].name ? t[k].name_len : 7;
        for (size_t c = 0; c < t[i].n_calls; c++)
            if (id_match(&t[i].calls[c], &t[k])) name = t[i].calls[c].name, nl = t[i].calls[c].name_len;
        chat_tool_response(o, name, nl, NULL, t[k].content, t[k].content_len);
        any = 1;
    }
    return any;
}

static void conversation(const chat_variant *cv, const chat_req *rq, const chat_prep *p, chat_out *o) {
    const chat_turn *t = p->t;
    const size_t n = p->n;
    const int legacy = (cv->tools & CHAT_T_LEGACY) != 0;
    const int has_tools = p->tools && g4_jv_len(p->tools) > 0;
    if (rq->bos) chat_put(o, rq->bos, strlen(rq->bos), 1);
    size_t start = 0;
    int first_sys = !rq->cont && n > 0 && t[0].kind == CHAT_R_SYSTEM;
    if (!rq->cont && (rq->thinking || first_sys || has_tools)) {
        PUTM(o, "<|turn>system\n");
        if (rq->thinking) {
            PUTM(o, "<|think|>");
            if (cv->think_nl) PUTM(o, "\n");
        }
        if (first_sys) {
            emit_content(o, t[0].content, t[0].content_len, 0);
            start = 1;
        }
        for (size_t k = 0; has_tools && k < g4_jv_len(p->tools) && !o->stop; k++) {
            CHAT_SP(o, "<|tool>");
            chat_declaration(o, g4_jv_at(p->tools, k), cv->tools);
            CHAT_SP(o, "<tool|>");
        }
        PUTM(o, "<turn|>\n");
    }
    size_t last_user = SIZE_MAX;
    for (size_t i = start; i < n; i++) if (t[i].kind == CHAT_R_USER) last_user = i;
    int prev = PT_NONE;
    for (size_t i = start; i < n && !o->stop; i++) {
        const chat_turn *m = &t[i];
        const int model = m->kind == CHAT_R_MODEL, after_user = last_user == SIZE_MAX || i > last_user;
        if (!legacy) {
            if (m->kind == CHAT_R_TOOL) continue; /* written with the calls they answer */
            prev = PT_NONE;
            /* 31B template: an assistant right after an assistant (tool turns between do not
             * count) continues the same turn; it compares the role with 'assistant' */
            int same = 0;
            if (cv->merge_model && model)
                for (size_t j = i; j-- > start;)
                    if (t[j].kind != CHAT_R_TOOL) { same = t[j].assistant; break; }
            if (!same) header(o, m);
            if ((cv->tools & CHAT_T_REASON_V2) && m->reasoning_len && after_user && m->n_calls) thought(o, m, 1);
            calls(o, m);
            if (m->n_calls) prev = PT_CALL;
            int answered = m->n_calls ? responses_after(o, t, n, i) : 0;
            if (answered) prev = PT_RESP;
            emit_content(o, m->content, m->content_len, model);
            if (prev == PT_CALL && !answered) CHAT_SP(o, "<|tool_response>");
            else if (!(answered && !m->content_len)) PUTM(o, "<turn|>\n");
        } else {
            if (!((cv->tools & CHAT_T_JOIN_CALLS) && prev == PT_RESP && m->n_calls)) header(o, m);
            prev = PT_NONE;
            if (m->n_calls) {
                if ((cv->tools & CHAT_T_REASON_V1) && m->reasoning_len && after_user) thought(o, m, 0);
                calls(o, m);
                prev = PT_CALL;
            }
            for (size_t k = 0; k < m->n_resp && !o->stop; k++) {
                const chat_resp *r = &m->resp[k];
                chat_tool_response(o, r->name, r->name_len, r->val, r->str, r->str_len);
                prev = PT_RESP;
            }
            emit_content(o, m->content, m->content_len, model);
            if (!(m->n_resp && !m->content_len)) PUTM(o, "<turn|>\n");
        }
    }
    if (rq->add_gen) {
        const int turn = legacy ? prev != PT_RESP : prev != PT_RESP && prev != PT_CALL;
        if (turn) PUTM(o, "<|turn>model\n");
        if (!rq->thinking && cv->empty_thought && (turn || legacy)) PUTM(o, "<|channel>thought\n<channel|>");
        if (o->turn_end) PUTM(o, "<|turn>model\n"); /* llama.cpp's common_chat_params_init_gemma4 */
    }
}

g4_status chat_render_req(const chat_variant *cv, const chat_req *rq, chat_emit_fn emit, void *ud, char *err,
                          size_t errlen) {
    if (!cv || !emit || !rq) return g4_errf(G4_ERR_ARG, err, errlen, "chat: NULL argument");
    chat_prep p;
    g4_status st = chat_prepare(&p, rq, cv->tools, err, errlen);
    if (st == G4_OK) {
        chat_out o = {emit, ud, 0, G4_OK, 0};
        conversation(cv, rq, &p, &o);
        st = o.st != G4_OK ? g4_errf(o.st, err, errlen, "chat: out of memory") : o.stop ? G4_ERR_ABORTED : G4_OK;
    }
    chat_prep_free(&p);
    return st;
}

/* plain messages as turns (malloc'ed; *out NULL for none) */
static g4_status as_turns(const g4_chat_msg *msgs, size_t n, g4_chat_turn **out, char *err, size_t errlen) {
    *out = NULL;
    if (!msgs && n) return g4_errf(G4_ERR_ARG, err, errlen, "chat: NULL argument");
    if (!n) return G4_OK;
    g4_chat_turn *t = calloc(n, sizeof *t);
    if (!t) return g4_errf(G4_ERR_NOMEM, err, errlen, "chat: out of memory");
    for (size_t i = 0; i < n; i++) {
        t[i].role = msgs[i].role;
        t[i].content = msgs[i].content;
        t[i].content_len = msgs[i].content_len;
    }
    *out = t;
    return G4_OK;
}

g4_status chat_render(const chat_variant *cv, const g4_chat_msg *msgs, size_t n_msgs, const char *bos, int add_gen,
                      int thinking, int cont, chat_emit_fn emit, void *ud, char *err, size_t errlen) {
    g4_chat_turn *t;
    g4_status st = as_turns(msgs, n_msgs, &t, err, errlen);
    if (st != G4_OK) return st;
    chat_req rq = {t, n_msgs, bos, add_gen, thinking, cont, NULL, 0};
    st = chat_render_req(cv, &rq, emit, ud, err, errlen);
    free(t);
    return st;
}

void chat_variant_of(const g4_model *m, chat_variant *cv) {
    tok_chat_variant(m ? m->vocab : NULL, &cv->think_nl, &cv->empty_thought, &cv->merge_model);
    cv->tools = tok_chat_tools(m ? m->vocab : NULL);
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

/* tokens: a marker with special parsing; content gathered while it comes in one run, then
 * tokenized as one text without (the text between two markers, as llama.cpp would see it) */
typedef struct ksink {
    const g4_model *m;
    int32_t *out;
    size_t   cap, n;
    char    *pend;   /* [pend_n] content not yet tokenized */
    size_t   pend_n, pend_cap;
    g4_status st;
} ksink;

static int encode(ksink *k, const char *s, size_t n, unsigned flags) {
    size_t got = 0, room = k->n < k->cap ? k->cap - k->n : 0;
    g4_status st = tok_encode(k->m->vocab, s, n, flags, room ? k->out + k->n : NULL, room, &got);
    if (st != G4_OK && st != G4_ERR_BUFFER) { k->st = st; return 1; }
    k->n += got;
    return 0;
}

static int flush(ksink *k) {
    if (!k->pend_n) return 0;
    size_t n = k->pend_n;
    k->pend_n = 0;
    return encode(k, k->pend, n, 0);
}

static int to_tokens(void *ud, const char *s, size_t n, int marker) {
    ksink *k = ud;
    if (marker) return flush(k) || encode(k, s, n, G4_TOK_PARSE_SPECIAL);
    if (k->pend_n + n > k->pend_cap) {
        size_t nc = k->pend_cap ? k->pend_cap : 256;
        while (nc < k->pend_n + n) nc *= 2;
        char *np = realloc(k->pend, nc);
        if (!np) { k->st = G4_ERR_NOMEM; return 1; }
        k->pend = np;
        k->pend_cap = nc;
    }
    memcpy(k->pend + k->pend_n, s, n);
    k->pend_n += n;
    return 0;
}

static g4_status tokenize_req(const g4_model *m, const chat_req *rq, int32_t *out, size_t cap, size_t *n_out, char *err,
                              size_t errlen) {
    chat_variant cv;
    chat_variant_of(m, &cv);
    ksink k = {m, out, cap, 0, NULL, 0, 0, G4_OK};
    g4_status st = chat_render_req(&cv, rq, to_tokens, &k, err, errlen);
    if (st == G4_OK && flush(&k)) st = G4_ERR_ABORTED;
    free(k.pend);
    if (st == G4_ERR_ABORTED && k.st != G4_OK) return g4_errf(k.st, err, errlen, "chat: tokenize: %s", g4_status_str(k.st));
    if (st != G4_OK) return st;
    *n_out = k.n;
    return k.n > cap ? G4_ERR_BUFFER : G4_OK;
}

g4_status chat_tokenize(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs, int add_bos, int add_gen,
                        int thinking, int cont, int32_t *out, size_t cap, size_t *n_out, char *err, size_t errlen) {
    if (n_out) *n_out = 0;
    if (!m || !m->vocab || !n_out || (!out && cap)) return g4_errf(G4_ERR_ARG, err, errlen, "chat: NULL argument");
    g4_chat_turn *t;
    g4_status st = as_turns(msgs, n_msgs, &t, err, errlen);
    if (st != G4_OK) return st;
    char bb[64];
    chat_req rq = {t, n_msgs, add_bos ? bos_text(m, bb, sizeof bb) : NULL, add_gen, thinking, cont, NULL, 0};
    st = tokenize_req(m, &rq, out, cap, n_out, err, errlen);
    free(t);
    return st;
}

g4_status g4_chat_tokenize(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs, int add_bos, int add_gen,
                           int thinking, int32_t *out, size_t cap, size_t *n_out) {
    return chat_tokenize(m, msgs, n_msgs, add_bos, add_gen, thinking, 0, out, cap, n_out, NULL, 0);
}

g4_status g4_chat_tokenize_turns(const g4_model *m, const g4_chat_turn *turns, size_t n_turns, const g4_chat_opts *opts,
                                 int32_t *out, size_t cap, size_t *n_out, char *err, size_t errlen) {
    if (n_out) *n_out = 0;
    if (!m || !m->vocab || !n_out || !opts || (!out && cap)) return g4_errf(G4_ERR_ARG, err, errlen, "chat: NULL argument");
    char bb[64];
    chat_req rq = {turns, n_turns, opts->add_bos ? bos_text(m, bb, sizeof bb) : NULL, opts->add_gen, opts->thinking, 0,
                   opts->tools, opts->tools_len};
    return tokenize_req(m, &rq, out, cap, n_out, err, errlen);
}

typedef struct tsink { char *buf; size_t cap, n; } tsink;

static int to_text(void *ud, const char *s, size_t n, int marker) {
    (void)marker;
    tsink *t = ud;
    if (t->n < t->cap) memcpy(t->buf + t->n, s, n <= t->cap - t->n ? n : t->cap - t->n);
    t->n += n;
    return 0;
}

static g4_status render_req(const g4_model *m, chat_req *rq, int add_bos, char *buf, size_t cap, size_t *n_out, char *err,
                            size_t errlen) {
    chat_variant cv;
    chat_variant_of(m, &cv);
    char bb[64];
    rq->bos = add_bos ? bos_text(m, bb, sizeof bb) : NULL;
    tsink t = {buf, cap, 0};
    g4_status st = chat_render_req(&cv, rq, to_text, &t, err, errlen);
    if (st != G4_OK) return st;
    *n_out = t.n;
    return t.n > cap ? G4_ERR_BUFFER : G4_OK;
}

g4_status g4_chat_render(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs, int add_bos, int add_gen,
                         int thinking, char *buf, size_t cap, size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!m || !n_out || (!buf && cap)) return G4_ERR_ARG;
    g4_chat_turn *t;
    g4_status st = as_turns(msgs, n_msgs, &t, NULL, 0);
    if (st != G4_OK) return st;
    chat_req rq = {t, n_msgs, NULL, add_gen, thinking, 0, NULL, 0};
    st = render_req(m, &rq, add_bos, buf, cap, n_out, NULL, 0);
    free(t);
    return st;
}

g4_status g4_chat_render_turns(const g4_model *m, const g4_chat_turn *turns, size_t n_turns, const g4_chat_opts *opts,
                               char *buf, size_t cap, size_t *n_out, char *err, size_t errlen) {
    if (n_out) *n_out = 0;
    if (!m || !n_out || !opts || (!buf && cap)) return g4_errf(G4_ERR_ARG, err, errlen, "chat: NULL argument");
    chat_req rq = {turns, n_turns, NULL, opts->add_gen, opts->thinking, 0, opts->tools, opts->tools_len};
    return render_req(m, &rq, opts->add_bos, buf, cap, n_out, err, errlen);
}
