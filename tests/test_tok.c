/* test_tok.c - tokenizer tests.
 *
 *   tok       synthetic vocabularies built in memory with the GGUF writer: the encoding
 *             rules of gemma4-architecture.md §6.2 one by one, pieces and the streaming
 *             detokenizer, and one hostile vocabulary per validation rule (reliability.md
 *             #41-#48), plus an allocation-failure sweep over the loader.
 *   tok_real  the real Gemma 4 vocabulary ($G4_VOCAB, set by tests/sh/tok_real.sh, which
 *             finds llama.cpp's models/ggml-vocab-gemma-4.gguf; skipped without it):
 *             llama.cpp's 46 .inp/.out cases, the JS-reference fixture
 *             tests/vectors/tok_ref.txt, round trips, load time and encode speed.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat.h"
#include "pool.h"
#include "t.h"
#include "tok_impl.h"

/* ==== Helpers ==== */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* allocator that counts live bytes and can fail the Nth allocation */
typedef struct cnt_alloc { long live, n_alloc, fail_at; } cnt_alloc;
static void *cnt_fn(void *ud, void *p, size_t old, size_t nw) {
    cnt_alloc *c = ud;
    if (nw == 0) { if (p) c->live -= (long)old; free(p); return NULL; }
    if (c->fail_at > 0 && ++c->n_alloc == c->fail_at) return NULL;
    void *q = realloc(p, nw);
    if (q) c->live += (long)nw - (long)(p ? old : 0);
    return q;
}

/* encode into a fixed array; returns count or -1 */
static int enc(const g4_vocab *v, const char *s, size_t n, unsigned flags, int32_t *ids, size_t cap) {
    size_t got = 0;
    g4_status st = tok_encode(v, s, n, flags, ids, cap, &got);
    return st == G4_OK ? (int)got : -1;
}

static int ids_eq(const int32_t *a, int na, const int32_t *b, int nb) {
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

/* detokenize ids through the streaming API into out; returns bytes */
static size_t detok_all(const g4_model *m, const int32_t *ids, size_t n, unsigned flags, char *out, size_t cap) {
    g4_detok d = {{0}, 0};
    size_t o = 0;
    for (size_t i = 0; i < n; i++) o += g4_detok_push(&d, m, ids[i], flags, out + o, cap - o);
    o += g4_detok_flush(&d, out + o, cap - o);
    return o;
}

/* ==== Synthetic vocabularies ==== */

typedef struct logcap { int n_warn; char last[512]; } logcap;
static void cap_log(void *ud, int level, const char *msg) {
    logcap *c = ud;
    if (level == G4_LOG_WARN) c->n_warn++;
    snprintf(c->last, sizeof c->last, "%s", msg);
}

#define TV_MAX 400
typedef struct tv {
    const char *tok[TV_MAX];
    size_t      len[TV_MAX];
    int32_t     type[TV_MAX];
    int         n;
    const char *merge[160];
    int         nm;
    char        bytes[256][7];
    g4_log_fn   log;         /* NULL = silent */
    void       *log_ud;
    unsigned    opts;        /* tok_vocab_load_opts */
} tv;

static int tv_add(tv *t, const char *s, int type) {
    t->tok[t->n] = s;
    t->len[t->n] = strlen(s);
    t->type[t->n] = type;
    return t->n++;
}

#define W "\xe2\x96\x81" /* U+2581 */
/* ids: 0 <pad> 1 <eos> 2 <bos> 3 <unk> 4 <|turn> 5 <turn|> 6 <|channel> 7 <|tool_response>
 * 8..263 <0x00>..<0xFF>, then the normal tokens below */
enum { T_PAD, T_EOS, T_BOS, T_UNK, T_TURN, T_TURN_END, T_CHAN, T_TOOLRESP, T_BYTE0 };
static const char *const normal_toks[] = {
    "a", "b", "c", "ab", "abc", W, W W, "\n", "\n\n", "h", "e", "l", "o", "he", "ll", "llo", "hello",
    W "hello", "aa", "x", "\xc3\xa9" /* é */, "<", "|", "t", "u", "r", "n", ">", "tu", "rn", "turn", "\xef\xbf\xbd",
};
static const char *const base_merges[] = {
    "a b", "ab c", W " " W, "h e", "l l", "ll o", "he llo", W " hello", "a a", "t u", "r n", "tu rn",
    "c a", /* "ca" is not a token: kept, and its result falls back to bytes (as llama.cpp) */
};

static void tv_base(tv *t) {
    memset(t, 0, sizeof *t);
    tv_add(t, "<pad>", TT_CONTROL);
    tv_add(t, "<eos>", TT_CONTROL);
    tv_add(t, "<bos>", TT_CONTROL);
    tv_add(t, "<unk>", TT_UNKNOWN);
    tv_add(t, "<|turn>", TT_CONTROL);
    tv_add(t, "<turn|>", TT_CONTROL);
    tv_add(t, "<|channel>", TT_USER);
    tv_add(t, "<|tool_response>", TT_USER);
    for (int b = 0; b < 256; b++) {
        snprintf(t->bytes[b], sizeof t->bytes[b], "<0x%02X>", b);
        tv_add(t, t->bytes[b], TT_BYTE);
    }
    for (size_t i = 0; i < sizeof normal_toks / sizeof normal_toks[0]; i++) tv_add(t, normal_toks[i], TT_NORMAL);
    for (size_t i = 0; i < sizeof base_merges / sizeof base_merges[0]; i++) t->merge[t->nm++] = base_merges[i];
}

static int32_t tv_id(const tv *t, const char *s) {
    for (int i = t->n - 1; i >= 0; i--) if (t->len[i] == strlen(s) && memcmp(t->tok[i], s, t->len[i]) == 0) return i;
    return -1;
}

/* hostile variants: each breaks one rule */
enum {
    V_OK, V_NO_TOKENS, V_TOKENS_INT, V_TYPES_SHORT, V_TYPES_U8, V_TYPE_RANGE, V_SCORES_SHORT, V_SCORES_I32,
    V_MERGE_NOSPACE, V_MERGE_PIECE, V_MERGE_TWO_SPACES, V_MERGES_MISSING, V_BOS_RANGE, V_BOS_MISSING, V_BOS_F32,
    V_EOS_RANGE, V_MODEL_LLAMA, V_NO_MODEL, V_BYTE_MALFORMED, V_BYTE_MISSING, V_BYTE_DUP, V_TOKEN_NUL,
    V_TOKEN_EMPTY, V_TOKEN_HUGE, V_CHARSMAP_SHORT, V_SUPPRESS_STR, V_COUNT
};

static g4_status tv_load(tv *t, int variant, const char *tmpl, const g4_allocator *al, g4_vocab **out,
                         char *err, size_t errlen) {
    gguf_writer *w = gguf_writer_new();
    if (!w) return G4_ERR_NOMEM;
    static char huge[TOK_MAX_TEXT + 2];
    const char *tok[TV_MAX];
    size_t len[TV_MAX];
    int32_t type[TV_MAX];
    float scores[TV_MAX] = {0};
    int n = t->n;
    memcpy(tok, t->tok, sizeof tok);
    memcpy(len, t->len, sizeof len);
    memcpy(type, t->type, sizeof type);
    if (variant == V_TYPE_RANGE) type[20] = 7;
    if (variant == V_BYTE_MALFORMED) tok[T_BYTE0 + 0x41] = "<0xZZ>";
    if (variant == V_BYTE_MISSING) type[T_BYTE0 + 0x41] = TT_NORMAL;
    if (variant == V_BYTE_DUP) { tok[T_BYTE0 + 0x41] = "<0x42>"; }
    if (variant == V_TOKEN_NUL) { tok[290] = "a\0b"; len[290] = 3; }
    if (variant == V_TOKEN_EMPTY) { tok[290] = ""; len[290] = 0; }
    if (variant == V_TOKEN_HUGE) { memset(huge, 'q', sizeof huge - 1); tok[290] = huge; len[290] = TOK_MAX_TEXT + 1; }
    if (variant != V_NO_MODEL)
        gguf_w_str(w, "tokenizer.ggml.model", variant == V_MODEL_LLAMA ? "llama" : "gemma4", variant == V_MODEL_LLAMA ? 5 : 6);
    if (variant == V_TOKENS_INT) gguf_w_arr(w, "tokenizer.ggml.tokens", GGUF_INT32, type, (uint64_t)n);
    else if (variant != V_NO_TOKENS) gguf_w_arr_str(w, "tokenizer.ggml.tokens", tok, len, (uint64_t)n);
    if (variant == V_TYPES_U8) {
        uint8_t u[TV_MAX];
        for (int i = 0; i < n; i++) u[i] = (uint8_t)type[i];
        gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_UINT8, u, (uint64_t)n);
    } else {
        gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, type, (uint64_t)(variant == V_TYPES_SHORT ? n - 1 : n));
    }
    if (variant == V_SCORES_I32) gguf_w_arr(w, "tokenizer.ggml.scores", GGUF_INT32, type, (uint64_t)n);
    else gguf_w_arr(w, "tokenizer.ggml.scores", GGUF_FLOAT32, scores, (uint64_t)(variant == V_SCORES_SHORT ? n - 1 : n));
    const char *merges[170];
    int nm = t->nm;
    memcpy(merges, t->merge, (size_t)nm * sizeof *merges);
    if (variant == V_MERGE_NOSPACE) merges[nm++] = "abc";
    if (variant == V_MERGE_PIECE) merges[nm++] = "a zz";
    if (variant == V_MERGE_TWO_SPACES) merges[nm++] = "a b c";
    if (variant != V_MERGES_MISSING) gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, NULL, (uint64_t)nm);
    if (variant == V_BOS_RANGE) gguf_w_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)n);
    else if (variant == V_BOS_F32) gguf_w_f32(w, "tokenizer.ggml.bos_token_id", 2.0f);
    else if (variant != V_BOS_MISSING) gguf_w_u32(w, "tokenizer.ggml.bos_token_id", T_BOS);
    gguf_w_u32(w, "tokenizer.ggml.eos_token_id", variant == V_EOS_RANGE ? 0xffffffffu : T_EOS);
    gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", T_UNK);
    gguf_w_bool(w, "tokenizer.ggml.add_bos_token", 1);
    if (variant == V_CHARSMAP_SHORT) {
        uint8_t cm[6] = {100, 0, 0, 0, 1, 2};
        gguf_w_arr(w, "tokenizer.ggml.precompiled_charsmap", GGUF_UINT8, cm, 6);
    }
    if (variant == V_SUPPRESS_STR) gguf_w_arr_str(w, "tokenizer.ggml.suppress_tokens", tok, len, 2);
    else {
        int32_t sup[4] = {T_UNK, -5, 100000, T_PAD};
        gguf_w_arr(w, "tokenizer.ggml.suppress_tokens", GGUF_INT32, sup, 4);
    }
    if (tmpl) gguf_w_str(w, "tokenizer.chat_template", tmpl, strlen(tmpl));
    void *buf = NULL;
    size_t blen = 0;
    g4_status st = gguf_writer_write_mem(w, &buf, &blen, NULL, NULL, err, errlen);
    gguf_writer_free(w);
    if (st != G4_OK) return st;
    gguf_file *f = NULL;
    st = gguf_open_mem(&f, buf, blen, "tiny.gguf", NULL, err, errlen);
    if (st == G4_OK) st = tok_vocab_load_opts(out, f, al, NULL, t->opts, t->log, t->log_ud, err, errlen);
    gguf_close(f);
    free(buf);
    return st;
}

static g4_vocab *tiny(const char *tmpl) {
    static tv t;
    tv_base(&t);
    g4_allocator al;
    g4_allocator_init(&al, NULL, NULL);
    g4_vocab *v = NULL;
    char err[256] = "";
    g4_status st = tv_load(&t, V_OK, tmpl, &al, &v, err, sizeof err);
    T_CHECKF(st == G4_OK, "tiny vocab: %s", err);
    return v;
}

/* ==== Group tok: encoding rules on a tiny vocabulary ==== */

#define ENC(s, fl) (n = enc(v, s, sizeof(s) - 1, fl, ids, 64))
#define EXPECT(...) do { const int32_t e_[] = {__VA_ARGS__}; \
        T_CHECKF(ids_eq(ids, n, e_, (int)(sizeof e_ / sizeof e_[0])), "line %d: got %d ids", __LINE__, n); } while (0)

static void test_rules(void) {
    tv t;
    tv_base(&t);
    g4_vocab *v = tiny(NULL);
    if (!v) return;
    int32_t ids[64];
    int n;
    size_t got0 = 0;
    int32_t a = tv_id(&t, "a"), b = tv_id(&t, "b"), c = tv_id(&t, "c"), ab = tv_id(&t, "ab"), abc = tv_id(&t, "abc");
    int32_t aa = tv_id(&t, "aa"), sp = tv_id(&t, W), sp2 = tv_id(&t, W W), nl = tv_id(&t, "\n"), nl2 = tv_id(&t, "\n\n");
    int32_t hello = tv_id(&t, "hello"), shello = tv_id(&t, W "hello"), x = tv_id(&t, "x");
    int32_t turn = tv_id(&t, "turn"), lt = tv_id(&t, "<"), bar = tv_id(&t, "|"), gt = tv_id(&t, ">");

    ENC("", 0); T_CHECK(n == 0);
    ENC("", G4_TOK_ADD_BOS); EXPECT(T_BOS);
    ENC("abc", 0); EXPECT(abc);
    ENC("abc", G4_TOK_ADD_BOS); EXPECT(T_BOS, abc);
    ENC("ab", 0); EXPECT(ab);
    ENC("ba", 0); EXPECT(b, a);
    ENC("aaa", 0); EXPECT(aa, a);           /* equal ranks: leftmost first */
    ENC("aaaa", 0); EXPECT(aa, aa);
    ENC("cab", 0); EXPECT(c, ab);             /* "a b" (rank 0) before "c a" */
    ENC("ca", 0); EXPECT(T_BYTE0 + 'c', T_BYTE0 + 'a');
    T_CHECK(tok_encode(v, "x", (size_t)INT32_MAX + 1, 0, ids, 64, &got0) == G4_ERR_ARG); /* never read */
    ENC("hello", 0); EXPECT(hello);
    ENC(" hello", 0); EXPECT(shello);       /* space -> U+2581, then merges */
    ENC("  ", 0); EXPECT(sp2);
    ENC("   ", 0); EXPECT(sp2, sp);
    ENC("x y", 0); EXPECT(x, sp, T_BYTE0 + 'y'); /* 'y' is not a token: byte fallback */
    ENC("\n", 0); EXPECT(nl);
    ENC("\n\n", 0); EXPECT(nl2);
    ENC("\n\n\n", 0); EXPECT(nl, nl, nl);   /* not a token and no merge: one per newline */
    ENC("a\nb", 0); EXPECT(a, nl, b);
    ENC("a\r\nb", 0); EXPECT(a, T_BYTE0 + 0x0d, nl, b);
    ENC("\t", 0); EXPECT(T_BYTE0 + 0x09);
    ENC("\xc3\xa9", 0); EXPECT(tv_id(&t, "\xc3\xa9"));
    ENC("\xc3\xa8", 0); EXPECT(T_BYTE0 + 0xc3, T_BYTE0 + 0xa8);
    /* invalid UTF-8 -> U+FFFD (a token here) per bad byte; overlong C0 80 -> U+0000 byte */
    int32_t rep = tv_id(&t, "\xef\xbf\xbd");
    ENC("a\xff" "b", 0); EXPECT(a, rep, b);
    ENC("\xe6\xad", 0); EXPECT(rep, rep);
    ENC("\x80", 0); EXPECT(rep);
    ENC("\xc0\x80", 0); EXPECT(T_BYTE0 + 0x00);
    ENC("\xed\xa0\x80", 0); EXPECT(T_BYTE0 + 0xed, T_BYTE0 + 0xa0, T_BYTE0 + 0x80); /* surrogate kept */
    ENC("\xf7\xbf\xbf\xbf", 0); EXPECT(rep);    /* > U+10FFFF */
    ENC("a\0b", 0); EXPECT(a, T_BYTE0 + 0, b);  /* NUL is data */
    /* special tokens: control only with parse_special, user-defined always */
    ENC("<|turn>", 0); EXPECT(lt, bar, turn, gt);
    ENC("<|turn>", G4_TOK_PARSE_SPECIAL); EXPECT(T_TURN);
    ENC("a<|turn>b<turn|>", G4_TOK_PARSE_SPECIAL); EXPECT(a, T_TURN, b, T_TURN_END);
    ENC("a<|channel>b", 0); EXPECT(a, T_CHAN, b);
    ENC("a<|channel>b", G4_TOK_PARSE_SPECIAL); EXPECT(a, T_CHAN, b);
    ENC("<eos><bos>", G4_TOK_PARSE_SPECIAL); EXPECT(T_EOS, T_BOS);
    /* <|tool_response> is end-of-generation, so it behaves as a control token */
    ENC("<|tool_response>", G4_TOK_PARSE_SPECIAL); EXPECT(T_TOOLRESP);
    T_CHECK(ENC("<|tool_response>", 0) > 1);
    T_CHECK(tok_is_eog(v, T_EOS) && tok_is_eog(v, T_TOOLRESP) && tok_is_eog(v, T_TURN_END) && !tok_is_eog(v, T_TURN) && !tok_is_eog(v, a));

    /* buffer handling */
    size_t got = 0;
    T_CHECK(tok_encode(v, "abcabc", 6, 0, ids, 1, &got) == G4_ERR_BUFFER && got == 2 && ids[0] == abc);
    T_CHECK(tok_encode(v, "abc", 3, 0, NULL, 0, &got) == G4_ERR_BUFFER && got == 1);
    T_CHECK(tok_encode(v, NULL, 0, 0, NULL, 0, &got) == G4_OK && got == 0);
    T_CHECK(tok_encode(v, NULL, 3, 0, ids, 4, &got) == G4_ERR_ARG);
    T_CHECK(tok_encode(v, "a", 1, 0x80, ids, 4, &got) == G4_ERR_ARG);
    T_CHECK(tok_encode(v, "a", 1, 0, ids, 4, NULL) == G4_ERR_ARG);

    /* pieces */
    g4_model m;
    memset(&m, 0, sizeof m);
    m.vocab = v;
    char buf[64];
    size_t pn;
    T_CHECK(g4_token_to_piece(&m, shello, 0, buf, sizeof buf, &pn) == G4_OK && pn == 6 && memcmp(buf, " hello", 6) == 0);
    T_CHECK(g4_token_to_piece(&m, T_BYTE0 + 0x41, 0, buf, sizeof buf, &pn) == G4_OK && pn == 1 && buf[0] == 'A');
    T_CHECK(g4_token_to_piece(&m, T_TURN, 0, buf, sizeof buf, &pn) == G4_OK && pn == 0);
    T_CHECK(g4_token_to_piece(&m, T_TURN, G4_PIECE_SPECIAL, buf, sizeof buf, &pn) == G4_OK && pn == 7);
    T_CHECK(g4_token_to_piece(&m, T_CHAN, 0, buf, sizeof buf, &pn) == G4_OK && pn == 10);
    T_CHECK(g4_token_to_piece(&m, T_TOOLRESP, 0, buf, sizeof buf, &pn) == G4_OK && pn == 0);
    T_CHECK(g4_token_to_piece(&m, shello, 0, buf, 3, &pn) == G4_ERR_BUFFER && pn == 6);
    T_CHECK(g4_token_to_piece(&m, -1, 0, buf, sizeof buf, &pn) == G4_ERR_ARG);
    T_CHECK(g4_token_to_piece(&m, tok_n_vocab(v), 0, buf, sizeof buf, &pn) == G4_ERR_ARG);

    /* streaming: a multi-byte character split over byte tokens is held back */
    g4_detok d = {{0}, 0};
    T_CHECK(g4_detok_push(&d, &m, T_BYTE0 + 0xc3, 0, buf, sizeof buf) == 0);
    T_CHECK(g4_detok_push(&d, &m, T_BYTE0 + 0xa8, 0, buf, sizeof buf) == 2 && memcmp(buf, "\xc3\xa8", 2) == 0);
    T_CHECK(g4_detok_push(&d, &m, T_BYTE0 + 0xe6, 0, buf, sizeof buf) == 0);
    T_CHECK(g4_detok_push(&d, &m, T_BYTE0 + 0xad, 0, buf, sizeof buf) == 0);
    T_CHECK(g4_detok_flush(&d, buf, sizeof buf) == 3 && memcmp(buf, "\xef\xbf\xbd", 3) == 0);
    T_CHECK(g4_detok_flush(&d, buf, sizeof buf) == 0);
    T_CHECK(g4_detok_push(&d, &m, T_BYTE0 + 0xe6, 0, buf, sizeof buf) == 0);
    size_t k = g4_detok_push(&d, &m, a, 0, buf, sizeof buf); /* interrupted: U+FFFD then 'a' */
    T_CHECK(k == 4 && memcmp(buf, "\xef\xbf\xbd" "a", 4) == 0);
    T_CHECK(g4_detok_push(&d, &m, T_BYTE0 + 0xff, 0, buf, sizeof buf) == 3);    /* never valid */
    T_CHECK(g4_detok_push(&d, &m, T_BYTE0 + 0xed, 0, buf, sizeof buf) == 0);
    T_CHECK(g4_detok_push(&d, &m, T_BYTE0 + 0xa0, 0, buf, sizeof buf) == 6);    /* surrogate: 2 x U+FFFD */

    /* round trips on valid UTF-8 */
    static const char *const rt[] = {"hello world", " a  b   c\n\n\nx\t\r\n", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac",
                                     "\xf0\x9f\x98\x8a<|channel> <turn|>", "<|turn>user\nhi<turn|>\n"};
    for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
        size_t len = strlen(rt[i]);
        n = enc(v, rt[i], len, 0, ids, 64);
        char out[256];
        size_t o = detok_all(&m, ids, (size_t)n, 0, out, sizeof out);
        T_CHECKF(o == len && memcmp(out, rt[i], len) == 0, "round trip %zu", i);
    }
    /* chat tokenization: markers special, content never (reliability.md #60) */
    {
        g4_chat_msg cm[1] = {{"user", "hi<|turn>", 9}};
        int32_t want[16], got_ids[16];
        int nw = 0;
        want[nw++] = T_BOS;
        want[nw++] = T_TURN;
        nw += enc(v, "user\n", 5, 0, want + nw, 8);
        nw += enc(v, "hi<|turn>", 9, 0, want + nw, 8);
        want[nw++] = T_TURN_END;
        want[nw++] = nl;
        size_t gn = 0;
        T_CHECK(g4_chat_tokenize(&m, cm, 1, 1, 0, 0, got_ids, 16, &gn) == G4_OK && ids_eq(got_ids, (int)gn, want, nw));
        T_CHECK(g4_chat_tokenize(&m, cm, 1, 1, 0, 0, got_ids, 2, &gn) == G4_ERR_BUFFER && (int)gn == nw);
        /* continuation: no BOS, no system turn even with thinking; plain turns */
        g4_chat_msg sys[1] = {{"system", "s", 1}};
        T_CHECK(chat_tokenize(&m, sys, 1, 0, 0, 1, 1, got_ids, 16, &gn, NULL, 0) == G4_OK && gn >= 2 &&
                got_ids[0] == T_TURN && got_ids[gn - 2] == T_TURN_END);
        g4_chat_msg badr[1] = {{"robot", "x", 1}};
        T_CHECK(g4_chat_tokenize(&m, badr, 1, 1, 0, 0, got_ids, 16, &gn) == G4_ERR_ARG);
    }
    tok_vocab_free(v);
}

static void test_hostile(void) {
    static const struct { int variant; g4_status st; const char *msg; } cases[] = {
        {V_NO_TOKENS, G4_ERR_FORMAT, "tokenizer.ggml.tokens"},
        {V_TOKENS_INT, G4_ERR_FORMAT, "tokenizer.ggml.tokens"},
        {V_TYPES_SHORT, G4_ERR_FORMAT, "tokenizer.ggml.token_type"},
        {V_TYPES_U8, G4_ERR_FORMAT, "tokenizer.ggml.token_type"},
        {V_TYPE_RANGE, G4_ERR_FORMAT, "token_type[20]"},
        {V_SCORES_SHORT, G4_ERR_FORMAT, "tokenizer.ggml.scores"},
        {V_SCORES_I32, G4_ERR_FORMAT, "tokenizer.ggml.scores"},
        {V_MERGE_NOSPACE, G4_ERR_FORMAT, "merges[13]"},
        {V_MERGE_PIECE, G4_ERR_FORMAT, "merges[13]"},
        {V_MERGE_TWO_SPACES, G4_ERR_FORMAT, "merges[13]"},
        {V_MERGES_MISSING, G4_ERR_FORMAT, "tokenizer.ggml.merges"},
        {V_BOS_RANGE, G4_ERR_FORMAT, "bos_token_id"},
        {V_BOS_MISSING, G4_ERR_FORMAT, "bos_token_id"},
        {V_BOS_F32, G4_ERR_FORMAT, "bos_token_id"},
        {V_EOS_RANGE, G4_ERR_FORMAT, "eos_token_id"},
        {V_MODEL_LLAMA, G4_ERR_UNSUPPORTED, "tokenizer.ggml.model"},
        {V_NO_MODEL, G4_ERR_FORMAT, "tokenizer.ggml.model"},
        {V_BYTE_MALFORMED, G4_ERR_FORMAT, "<0xZZ>"},
        {V_BYTE_MISSING, G4_ERR_FORMAT, "<0x41> is missing"},
        {V_BYTE_DUP, G4_ERR_FORMAT, "duplicates"},
        {V_TOKEN_NUL, G4_ERR_FORMAT, "tokens[290]"},
        {V_TOKEN_EMPTY, G4_ERR_FORMAT, "tokens[290]"},
        {V_TOKEN_HUGE, G4_ERR_FORMAT, "tokens[290]"},
        {V_CHARSMAP_SHORT, G4_ERR_FORMAT, "precompiled_charsmap"},
        {V_SUPPRESS_STR, G4_ERR_FORMAT, "suppress_tokens"},
    };
    tv t;
    tv_base(&t);
    g4_allocator al;
    g4_allocator_init(&al, NULL, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        g4_vocab *v = (g4_vocab *)&t; /* must be reset to NULL */
        char err[256] = "";
        g4_status st = tv_load(&t, cases[i].variant, NULL, &al, &v, err, sizeof err);
        T_CHECKF(st == cases[i].st && v == NULL && strstr(err, cases[i].msg) && strstr(err, "tiny.gguf"),
                 "variant %d: status %d, message '%s'", cases[i].variant, (int)st, err);
        tok_vocab_free(v == (g4_vocab *)&t ? NULL : v);
    }
}

static void test_duplicates_and_extras(void) {
    /* duplicate texts load; text lookup gives the later id */
    tv t;
    tv_base(&t);
    int32_t dup = tv_add(&t, "abc", TT_NORMAL);
    tv_add(&t, "<0x41>", TT_NORMAL); /* same text as a byte token: byte fallback is unaffected */
    logcap lc = {0, ""};
    t.log = cap_log;
    t.log_ud = &lc;
    g4_allocator al;
    g4_allocator_init(&al, NULL, NULL);
    g4_vocab *v = NULL;
    char err[256] = "";
    T_CHECKF(tv_load(&t, V_OK, NULL, &al, &v, err, sizeof err) == G4_OK, "%s", err);
    /* one warning for the duplicates (plus one for the out-of-range suppress ids) */
    T_CHECKF(lc.n_warn == 2, "%d warnings, last '%s'", lc.n_warn, lc.last);
    t.log = NULL;
    if (v) {
        int32_t ids[8];
        T_CHECK(enc(v, "abc", 3, 0, ids, 8) == 1 && ids[0] == dup);
        T_CHECK(enc(v, "\xc3\xa8", 2, 0, ids, 8) == 2 && ids[0] == T_BYTE0 + 0xc3 && ids[1] == T_BYTE0 + 0xa8);
        T_CHECK(v->byte_id[0x41] == T_BYTE0 + 0x41);
        size_t ns;
        const int32_t *sup = tok_suppress(v, &ns);
        T_CHECK(ns == 2 && sup[0] == T_UNK && sup[1] == T_PAD);
        T_CHECK(tok_bos(v) == T_BOS && tok_eos(v) == T_EOS && strcmp(tok_model_name(v), "gemma4") == 0);
        tok_vocab_free(v);
    }
    /* chat template markers */
    int nl, et, mm;
    v = tiny("{{- '<|think|>\\n' -}} ... {{- '<|channel>thought\\n<channel|>' -}}");
    tok_chat_variant(v, &nl, &et, &mm);
    T_CHECK(nl == 1 && et == 1);
    tok_vocab_free(v);
    v = tiny("{{- '<|think|>' -}} {{- '<|turn>model\\n' -}}");
    tok_chat_variant(v, &nl, &et, &mm);
    T_CHECK(nl == 0 && et == 0);
    tok_vocab_free(v);

    /* allocation failures at every step of the load: clean error, nothing leaked */
    tv_base(&t);
    int ok_seen = 0;
    for (long k = 1; k < 200 && !ok_seen; k++) {
        cnt_alloc ca = {0, 0, k};
        g4_allocator cal;
        g4_allocator_init(&cal, cnt_fn, &ca);
        v = NULL;
        g4_status st = tv_load(&t, V_OK, NULL, &cal, &v, err, sizeof err);
        if (st == G4_OK) { ok_seen = 1; tok_vocab_free(v); }
        else T_CHECKF(st == G4_ERR_NOMEM && v == NULL, "fail at %ld: %d %s", k, (int)st, err);
        T_CHECKF(ca.live == 0, "fail at %ld: %ld bytes leaked", k, ca.live);
    }
    T_CHECK(ok_seen);

    /* allocation failures inside tok_encode (scratch growth): NOMEM, no leak, then recovery */
    {
        cnt_alloc ca = {0, 0, 0};
        g4_allocator cal;
        g4_allocator_init(&cal, cnt_fn, &ca);
        v = NULL;
        T_CHECK(tv_load(&t, V_OK, NULL, &cal, &v, err, sizeof err) == G4_OK);
        if (v) {
            char text[3000];
            for (size_t i = 0; i < sizeof text; i++) text[i] = "ab <|turn>\n"[i % 11];
            int32_t ids[4000];
            size_t got = 0;
            long live0 = ca.live;
            int n_nomem = 0;
            for (long k = 1; k <= 12; k++) {
                ca.n_alloc = 0;
                ca.fail_at = k;
                g4_status st = tok_encode(v, text, sizeof text, G4_TOK_PARSE_SPECIAL, ids, 4000, &got);
                T_CHECK(st == G4_OK || (st == G4_ERR_NOMEM && got == 0));
                n_nomem += st == G4_ERR_NOMEM;
                T_CHECK(ca.live == live0);
            }
            ca.fail_at = 0;
            T_CHECK(n_nomem > 0 && tok_encode(v, text, sizeof text, G4_TOK_PARSE_SPECIAL, ids, 4000, &got) == G4_OK);
            tok_vocab_free(v);
        }
        T_CHECK(ca.live == 0);
    }
}

/* Text and merge lookups against a linear search: texts of 1..20 bytes (the hash and the
 * slot key change at 8), merges whose pieces and results cross 8-byte words at every split,
 * results out of vocabulary order and results that are not tokens, a repeated pair; with and
 * without a duplicated text (the later id wins); compact and wide merge tables. */
static int32_t naive_find(const tv *t, const char *s, size_t n) {
    for (int i = t->n - 1; i >= 0; i--) if (t->len[i] == n && n && memcmp(t->tok[i], s, n) == 0) return i;
    return -1;
}

static void test_lookups(void) {
    static const char word[] = "qwertyuiopasdfghjklz"; /* 20 distinct bytes */
    static char pre[21][24], suf[21][24], cat[160][48];
    for (int var = 0; var < 4; var++) {
        int dupv = var & 1;
        tv t;
        tv_base(&t);
        t.opts = var & 2 ? TOK_OPT_WIDE_MERGES : 0;
        static char one[20][2];
        for (int k = 0; k < 20; k++) { /* its bytes */
            one[k][0] = word[k];
            if (tv_id(&t, one[k]) < 0) tv_add(&t, one[k], TT_NORMAL);
        }
        for (int k = 2; k <= 20; k++) { /* prefixes and suffixes of word */
            memcpy(pre[k], word, (size_t)k);
            pre[k][k] = 0;
            tv_add(&t, pre[k], TT_NORMAL);
            memcpy(suf[k], word + 20 - k, (size_t)k + 1);
            if (k < 20) tv_add(&t, suf[k], TT_NORMAL);
        }
        if (dupv) tv_add(&t, word, TT_NORMAL); /* a later id for the 20-byte text */
        memcpy(pre[1], word, 1);
        memcpy(suf[1], word + 19, 2);
        int nc = 0;
        for (int k = 2; k <= 20; k++) { /* pre[k] from pre[k-1] and one byte: results in order */
            snprintf(cat[nc], sizeof cat[nc], "%s %c", pre[k - 1], word[k - 1]);
            t.merge[t.nm++] = cat[nc++];
        }
        for (int k = 1; k < 20; k++) { /* word from every (prefix, suffix) split */
            snprintf(cat[nc], sizeof cat[nc], "%s %s", pre[k], suf[20 - k]);
            t.merge[t.nm++] = cat[nc++];
        }
        /* out of order, and results that are not tokens (of 2, 9 and 21 bytes) */
        t.merge[t.nm++] = "q w";
        t.merge[t.nm++] = "w q";
        t.merge[t.nm++] = "qwertyui q";
        t.merge[t.nm++] = "qwertyuiopasdfghjklz q";
        t.merge[t.nm++] = "qwer t";
        t.merge[t.nm++] = "q w"; /* repeated: keeps its first rank */
        g4_allocator al;
        g4_allocator_init(&al, NULL, NULL);
        g4_vocab *v = NULL;
        char err[256] = "";
        T_CHECKF(tv_load(&t, V_OK, NULL, &al, &v, err, sizeof err) == G4_OK, "%s", err);
        if (!v) return;
        T_CHECK(v->n_dup == dupv && (v->mtab8 != NULL) == !(var & 2));
        int bad = 0;
        for (int i = 0; i < t.n; i++) {
            bad += tok_find(v, t.tok[i], t.len[i]) != naive_find(&t, t.tok[i], t.len[i]);
            char x[32]; /* one byte changed: not a token */
            if (t.len[i] < 2 || t.len[i] > 20 || t.type[i] != TT_NORMAL) continue;
            memcpy(x, t.tok[i], t.len[i]);
            x[t.len[i] - 1] = '#';
            bad += tok_find(v, x, t.len[i]) != -1;
            x[0] = '#';
            bad += tok_find(v, x, t.len[i] - 1) != -1;
        }
        T_CHECKF(bad == 0, "%d text lookups differ", bad);
        bad = 0;
        for (int r = 0; r < t.nm; r++) {
            const char *m = t.merge[r], *sp = strchr(m + 1, ' ');
            size_t nl = (size_t)(sp - m), nr = strlen(sp + 1);
            char c[64];
            memcpy(c, m, nl);
            memcpy(c + nl, sp + 1, nr);
            int32_t l = naive_find(&t, m, nl), rt = naive_find(&t, sp + 1, nr), res = naive_find(&t, c, nl + nr);
            int32_t first = r; /* a repeated pair keeps its first rank */
            for (int q = 0; q < r; q++) if (strcmp(t.merge[q], m) == 0) { first = q; break; }
            bad += v->merge_id[r] != res || tok_merge_find(v, l, rt) != first;
        }
        T_CHECKF(bad == 0, "%d merges differ", bad);
        tok_vocab_free(v);
    }
}

T_GROUP(tok) {
    test_rules();
    test_lookups();
    test_hostile();
    test_duplicates_and_extras();
}

/* ==== Group tok_real: the real Gemma 4 vocabulary ==== */

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[n] = 0; *len = (size_t)n; }
    return b;
}

static int parse_ids(const char *s, int32_t *ids, int cap) {
    int n = 0;
    while (*s && *s != '\n' && *s != '\t') {
        char *e;
        long x = strtol(s, &e, 10);
        if (e == s) break;
        if (n < cap) ids[n] = (int32_t)x;
        n++;
        s = e;
        while (*s == ' ') s++;
    }
    return n;
}

static int hexv(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/* llama.cpp test-tokenizer-0 format: inputs separated by "\n__ggml_vocab_test__\n", one output line each */
static void real_inp_out(const g4_vocab *v, const char *path) {
    char p[1024];
    size_t ni = 0, no = 0;
    snprintf(p, sizeof p, "%s.inp", path);
    char *inp = read_file(p, &ni);
    snprintf(p, sizeof p, "%s.out", path);
    char *outf = read_file(p, &no);
    T_CHECKF(inp && outf, "missing %s.inp/.out", path);
    if (inp && outf) {
        static const char sep[] = "\n__ggml_vocab_test__\n";
        const char *s = inp, *o = outf;
        int n_case = 0, n_ok = 0;
        int32_t *ids = malloc(4096 * sizeof *ids), *exp = malloc(4096 * sizeof *exp);
        for (;;) {
            const char *e = strstr(s, sep);
            size_t len = e ? (size_t)(e - s) : strlen(s);
            int ne = parse_ids(o, exp, 4096);
            int n = enc(v, s, len, 0, ids, 4096);
            n_case++;
            int ok = ids_eq(ids, n, exp, ne);
            n_ok += ok;
            T_CHECKF(ok, "llama.cpp case %d: got %d ids, expected %d", n_case, n, ne);
            const char *nl = strchr(o, '\n');
            o = nl ? nl + 1 : o + strlen(o);
            if (!e) break;
            s = e + sizeof sep - 1;
        }
        fprintf(stderr, "  tok_real: llama.cpp .inp/.out: %d/%d cases match\n", n_ok, n_case);
        T_CHECK(n_case == 46);
        free(ids);
        free(exp);
    }
    free(inp);
    free(outf);
}

/* Fixture files written by scripts/tok_ref.mjs and scripts/tok_diff.mjs: one case per line,
 * "flags<TAB>hex(text)<TAB>llama.cpp ids or -<TAB>HF ids or -", '#' comments. The expected
 * ids are llama.cpp's; HF agreement is counted where HF ids exist and both references agree. */
static void real_fixture(const g4_model *m, const char *path, int required, int min_cases) {
    size_t n = 0;
    char *f = read_file(path, &n);
    if (!f) {
        if (required) T_CHECKF(0, "missing %s", path);
        return;
    }
    int n_case = 0, n_ok = 0, n_rt = 0, n_hf = 0, n_hf_ok = 0, n_ref_differ = 0;
    int32_t *ids = malloc(65536 * sizeof *ids), *exp = malloc(65536 * sizeof *exp), *hf = malloc(65536 * sizeof *hf);
    char *text = malloc(n + 1), *back = malloc(4 * n + 64);
    for (char *line = f; line && *line; ) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        if (*line == '#' || !*line) { line = next; continue; }
        unsigned flags = (unsigned)strtoul(line, &line, 10);
        if (*line == '\t') line++;
        size_t tl = 0;
        while (line[0] && line[0] != '\t' && line[1]) { text[tl++] = (char)(hexv(line[0]) * 16 + hexv(line[1])); line += 2; }
        if (*line == '\t') line++;
        int ne = *line == '-' ? -1 : parse_ids(line, exp, 65536);
        char *tab = strchr(line, '\t');
        int nh = !tab || tab[1] == '-' ? -1 : parse_ids(tab + 1, hf, 65536);
        if (ne < 0 && nh < 0) { line = next; continue; }
        int got = enc(m->vocab, text, tl, flags, ids, 65536);
        n_case++;
        int ok = ne >= 0 ? ids_eq(ids, got, exp, ne) : ids_eq(ids, got, hf, nh);
        n_ok += ok;
        T_CHECKF(ok, "%s case %d (flags %u, %zu bytes): got %d ids, expected %d", path, n_case, flags, tl, got, ne >= 0 ? ne : nh);
        if (nh >= 0) {
            if (ne >= 0 && !ids_eq(exp, ne, hf, nh)) n_ref_differ++;
            else { n_hf++; n_hf_ok += ids_eq(ids, got, hf, nh); }
        }
        int skip = (flags & G4_TOK_ADD_BOS) ? 1 : 0;
        size_t o = got > 0 ? detok_all(m, ids + skip, (size_t)(got - skip), G4_PIECE_SPECIAL, back, 4 * n + 64) : 0;
        int rt = o == tl && memcmp(back, text, tl) == 0;
        n_rt += rt;
        line = next;
    }
    fprintf(stderr, "  tok_real: %s: %d/%d cases match llama.cpp, %d/%d match HF (%d where the references differ), "
            "%d round-trip\n", path, n_ok, n_case, n_hf_ok, n_hf, n_ref_differ, n_rt);
    T_CHECK(n_case >= min_cases);
    T_CHECK(n_hf_ok == n_hf);
    T_CHECK(n_rt == n_case);
    free(ids); free(exp); free(hf); free(text); free(back); free(f);
}

static void real_speed(const g4_vocab *v) {
    /* ~1 MB of English-like text built from a fixed paragraph */
    static const char para[] =
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in "
        "want of a wife. However little known the feelings or views of such a man may be on his first entering a "
        "neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is considered "
        "the rightful property of some one or other of their daughters.\n\n\"My dear Mr. Bennet,\" said his lady to "
        "him one day, \"have you heard that Netherfield Park is let at last?\"\n";
    size_t pl = sizeof para - 1, total = 1u << 20, n = 0;
    char *text = malloc(total + pl);
    while (n < total) { memcpy(text + n, para, pl); n += pl; }
    int32_t *ids = malloc(n * sizeof *ids);
    size_t got = 0;
    double t0 = now_s();
    g4_status st = tok_encode(v, text, n, 0, ids, n, &got);
    double dt = now_s() - t0;
    fprintf(stderr, "  tok_real: encoded %zu bytes -> %zu tokens in %.3f s (%.1f MB/s)\n", n, got, dt, (double)n / dt / 1e6);
    T_CHECK(st == G4_OK && got > n / 8);
    /* speed is measured and printed above, never asserted (house rule: no timed unit tests) */
    free(ids);
    free(text);
}

static void real_every_token(const g4_model *m) {
    /* every normal token's piece re-encodes to that token alone, unless a longer merge path
     * differs: count, do not require (BPE is not guaranteed to reproduce every token) */
    const g4_vocab *v = m->vocab;
    int32_t ids[512];
    long n_norm = 0, n_same = 0, n_rt = 0, n_spec = 0, n_spec_ok = 0;
    char buf[TOK_MAX_TEXT + 16];
    for (int32_t id = 0; id < v->n; id++) {
        size_t pn = 0;
        if (tok_piece(v, id, G4_PIECE_SPECIAL, buf, sizeof buf, &pn) != G4_OK) { T_CHECK(0); continue; }
        if (v->type[id] == TT_CONTROL || v->type[id] == TT_USER) { /* special text parses to itself */
            n_spec++;
            int n = enc(v, buf, pn, G4_TOK_PARSE_SPECIAL, ids, 512);
            n_spec_ok += n == 1 && ids[0] == id;
            continue;
        }
        if (v->type[id] != TT_NORMAL) continue;
        n_norm++;
        int n = enc(v, buf, pn, 0, ids, 512);
        if (n == 1 && ids[0] == id) n_same++;
        char back[4 * sizeof buf / 3 + 64];
        size_t o = n > 0 ? detok_all(m, ids, (size_t)n, 0, back, sizeof back) : 0;
        n_rt += o == pn && memcmp(back, buf, pn) == 0;
    }
    fprintf(stderr, "  tok_real: %ld normal tokens, %ld re-encode to themselves, %ld round-trip; %ld/%ld special "
            "tokens parse to themselves\n", n_norm, n_same, n_rt, n_spec_ok, n_spec);
    T_CHECK(n_rt == n_norm);
    T_CHECK(n_spec == 24 && n_spec_ok == n_spec);
}

T_GROUP(tok_real) {
    /* run by tests/sh/tok_real.sh and tok_diff.sh, which find the vocabulary */
    const char *path = getenv("G4_VOCAB");
    if (!path || !*path) {
        fprintf(stderr, "  tok_real: skipped (set G4_VOCAB, or run tests/sh/tok_real.sh)\n");
        return;
    }
    char err[256] = "";
    g4_allocator al;
    g4_allocator_init(&al, NULL, NULL);
    double t0 = now_s();
    gguf_file *f = NULL;
    g4_status st = gguf_open(&f, path, 0, NULL, err, sizeof err);
    double t1 = now_s();
    g4_vocab *v = NULL;
    if (st == G4_OK) st = tok_vocab_load(&v, f, &al, NULL, NULL, err, sizeof err);
    double t2 = now_s();
    T_CHECKF(st == G4_OK, "%s", err);
    gguf_close(f);
    if (!v) return;
    fprintf(stderr, "  tok_real: gguf parse %.1f ms + vocabulary build %.1f ms = %.1f ms\n", (t1 - t0) * 1e3,
            (t2 - t1) * 1e3, (t2 - t0) * 1e3);
    /* targets: 150 ms load, 0.5 s per MB on an idle machine: measured and printed above, not
     * asserted (house rule: no timed unit tests) */
    T_CHECK(tok_n_vocab(v) == 262144 && v->n_merges == 514906);
    T_CHECK(tok_bos(v) == 2 && tok_eos(v) == 1);
    T_CHECK(tok_is_eog(v, 1) && tok_is_eog(v, 106) && tok_is_eog(v, 50) && !tok_is_eog(v, 212) && !tok_is_eog(v, 2));
    int nl, et, mm;
    tok_chat_variant(v, &nl, &et, &mm);
    T_CHECK(v->has_template && nl == 0 && et == 1 && mm == 0);
    g4_model m;
    memset(&m, 0, sizeof m);
    m.vocab = v;
    const char *diff = getenv("G4_TOK_DIFF"); /* tests/sh/tok_diff.sh: random strings only */
    if (!diff || !*diff) {
        { /* merges resolved on a thread pool: identical tables */
            g4_pool *pool = NULL;
            gguf_file *f2 = NULL;
            g4_vocab *v2 = NULL;
            if (pool_create(&pool, 3, &al) == G4_OK && gguf_open(&f2, path, 0, NULL, err, sizeof err) == G4_OK) {
                double p0 = now_s();
                T_CHECKF(tok_vocab_load_pool(&v2, f2, &al, pool, NULL, NULL, err, sizeof err) == G4_OK, "%s", err);
                double p1 = now_s();
                if (v2) {
                    fprintf(stderr, "  tok_real: vocabulary build on 3 threads %.1f ms\n", (p1 - p0) * 1e3);
                    T_CHECK(v->mtab8 && v2->mtab8 && v2->mtab_mask == v->mtab_mask &&
                            memcmp(v2->mtab8, v->mtab8, (v->mtab_mask + 1) * sizeof *v->mtab8) == 0 &&
                            memcmp(v2->merge_id, v->merge_id, (size_t)v->n_merges * sizeof *v->merge_id) == 0);
                }
            }
            tok_vocab_free(v2);
            gguf_close(f2);
            pool_free(pool);
        }
    }
    if (diff && *diff) {
        real_fixture(&m, diff, 1, 10000);
    } else {
        real_inp_out(v, path);
        real_fixture(&m, "tests/vectors/tok_ref.txt", 1, 90);
        real_speed(v);
        real_every_token(&m);
        /* chat tokens for the vocabulary's own template (test-data.md §2 ids) */
        g4_chat_msg cm[1] = {{"user", "What is the capital of France?", 30}};
        static const int32_t want[] = {2, 105, 2364, 107, 3689, 563, 506, 5279, 529, 7001, 236881, 106, 107};
        int32_t got[32];
        size_t gn = 0;
        T_CHECK(g4_chat_tokenize(&m, cm, 1, 1, 0, 0, got, 32, &gn) == G4_OK && ids_eq(got, (int)gn, want, 13));
        static const int32_t gen_tail[] = {105, 4368, 107, 100, 45518, 107, 101}; /* <|turn>model\n + empty thought */
        T_CHECK(g4_chat_tokenize(&m, cm, 1, 1, 1, 0, got, 32, &gn) == G4_OK && gn == 20 && ids_eq(got + 13, 7, gen_tail, 7));
        /* a tool conversation: its tokens are the rendered text's with special parsing (the
         * text between two special tokens tokenized as one, as llama.cpp does), and the tool
         * syntax's markers are single tokens of this vocabulary */
        static const char tools[] = "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":"
                                    "\"Weather now.\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":"
                                    "{\"type\":\"string\"}},\"required\":[\"city\"]}}}]";
        static const char calls[] = "[{\"id\":\"c1\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]";
        g4_chat_turn ct[4] = {{"user", "Weather in Paris?", 17, NULL, 0, NULL, 0, NULL, 0, NULL, 0},
                              {"assistant", NULL, 0, NULL, 0, calls, sizeof calls - 1, NULL, 0, NULL, 0},
                              {"tool", "sunny, 21 C", 11, NULL, 0, NULL, 0, "c1", 2, NULL, 0},
                              {"assistant", "It is sunny.", 12, NULL, 0, NULL, 0, NULL, 0, NULL, 0}};
        g4_chat_opts co = {1, 1, 0, tools, sizeof tools - 1};
        char text[2048], cerr[256] = "";
        size_t tn = 0;
        int32_t a[512], b[512];
        size_t an = 0, bn = 0;
        T_CHECKF(g4_chat_render_turns(&m, ct, 4, &co, text, sizeof text, &tn, cerr, sizeof cerr) == G4_OK, "%s", cerr);
        T_CHECKF(g4_chat_tokenize_turns(&m, ct, 4, &co, a, 512, &an, cerr, sizeof cerr) == G4_OK, "%s", cerr);
        T_CHECK(tn > 5 && memcmp(text, "<bos>", 5) == 0 &&
                g4_tokenize(&m, text + 5, tn - 5, G4_TOK_ADD_BOS | G4_TOK_PARSE_SPECIAL, b, 512, &bn) == G4_OK &&
                ids_eq(a, (int)an, b, (int)bn));
        static const char *const marks[] = {"<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", "<|tool_response>",
                                            "<tool_response|>", "<|\"|>"};
        for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
            T_CHECKF(g4_tokenize(&m, marks[i], strlen(marks[i]), G4_TOK_PARSE_SPECIAL, b, 4, &bn) == G4_OK && bn == 1,
                     "%s is %zu tokens", marks[i], bn);
    }
    tok_vocab_free(v);
}
