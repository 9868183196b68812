/* fuzz_tok.c - libFuzzer target over the tokenizer, the streaming detokenizer and the chat
 * renderer, on a fixed synthetic vocabulary (specials, byte tokens, ASCII, U+2581 runs,
 * newline runs, a few merges). Input: byte 0 = tokenize flags, the rest = text.
 * Failures: crashes and sanitizer reports, ids outside the vocabulary, detokenizer output
 * that is not valid UTF-8, and a round trip detok(encode(s)) != s for valid UTF-8 s.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc -D_GNU_SOURCE -DG4_BUILD \
 *         tests/fuzz/fuzz_tok.c src/alloc.c src/status.c src/gguf.c src/gguf_write.c \
 *         src/quant/types.c src/pool.c src/tokenizer.c src/tok_encode.c src/chat.c -lm -lpthread \
 *         -o build/fuzz_tok
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "tok_impl.h"

static g4_vocab *vocab_once(void) {
    static g4_vocab *v; /* harness state: built on the first input, kept for the process */
    if (v) return v;
    static const char *const specials[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<|turn>", "<turn|>", "<|channel>",
                                           "<channel|>", "<|tool_response>", "<|\"|>"};
    static const int32_t stype[] = {3, 3, 3, 2, 3, 3, 4, 4, 4, 4};
    static const char *const extra[] = {"\xe2\x96\x81", "\xe2\x96\x81\xe2\x96\x81", "\n", "\n\n", "\t", "th", "the",
                                        "\xe2\x96\x81the", "in", "ing", "\xc3\xa9", "\xef\xbf\xbd", "<", ">", "|"};
    static const char *const merges[] = {"t h", "th e", "\xe2\x96\x81 the", "i n", "in g",
                                         "\xe2\x96\x81 \xe2\x96\x81", "\n \n"};
    const char *tok[512];
    int32_t type[512];
    static char bytes[256][7];
    static char ascii[128][2];
    int n = 0;
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) { tok[n] = specials[i]; type[n++] = stype[i]; }
    for (int b = 0; b < 256; b++) { snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b); tok[n] = bytes[b]; type[n++] = 6; }
    for (int c = 0x21; c < 0x7f; c++) {
        if (c == '<' || c == '>' || c == '|') continue;
        ascii[c][0] = (char)c;
        tok[n] = ascii[c];
        type[n++] = 1;
    }
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) { tok[n] = extra[i]; type[n++] = 1; }
    gguf_writer *w = gguf_writer_new();
    if (!w) abort();
    gguf_w_str(w, "tokenizer.ggml.model", "gemma4", 6);
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", tok, NULL, (uint64_t)n);
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, type, (uint64_t)n);
    gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, NULL, sizeof merges / sizeof *merges);
    gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 2);
    gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 1);
    void *buf = NULL;
    size_t len = 0;
    char err[256];
    gguf_file *f = NULL;
    g4_allocator al;
    g4_allocator_init(&al, NULL, NULL);
    if (gguf_writer_write_mem(w, &buf, &len, NULL, NULL, err, sizeof err) != G4_OK ||
        gguf_open_mem(&f, buf, len, "fuzz-vocab", NULL, err, sizeof err) != G4_OK ||
        tok_vocab_load(&v, f, &al, NULL, NULL, err, sizeof err) != G4_OK) {
        fprintf(stderr, "fuzz_tok: vocabulary: %s\n", err);
        abort();
    }
    gguf_close(f);
    gguf_writer_free(w);
    free(buf);
    return v;
}

/* strict UTF-8 (no overlongs, surrogates, > U+10FFFF) */
static int valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t k = c < 0x80 ? 1 : (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
        if (!k || i + k > n) return 0;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c == 0xe0) lo = 0xa0; else if (c == 0xed) hi = 0x9f; else if (c == 0xf0) lo = 0x90; else if (c == 0xf4) hi = 0x8f;
        for (size_t j = 1; j < k; j++) {
            if (s[i + j] < (j == 1 ? lo : 0x80) || s[i + j] > (j == 1 ? hi : 0xbf)) return 0;
        }
        i += k;
    }
    return 1;
}

static int count_emit(void *ud, const char *s, size_t n, int marker) {
    (void)s; (void)marker;
    *(size_t *)ud += n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0 || size > (1u << 16)) return 0;
    const g4_vocab *v = vocab_once();
    unsigned flags = data[0] & 3;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    size_t n = 0;
    int32_t *ids = malloc((4 * len + 8) * sizeof *ids);
    if (!ids) return 0;
    if (tok_encode(v, text, len, flags, ids, 4 * len + 8, &n) != G4_OK) abort();
    for (size_t i = 0; i < n; i++) if (ids[i] < 0 || ids[i] >= v->n) abort();

    g4_model m;
    memset(&m, 0, sizeof m);
    m.vocab = (g4_vocab *)(uintptr_t)v;
    size_t cap = 3 * len + 64, o = 0;
    char *out = malloc(cap);
    if (!out) { free(ids); return 0; }
    g4_detok d;
    memset(&d, 0, sizeof d);
    size_t skip = (flags & G4_TOK_ADD_BOS) ? 1 : 0;
    for (size_t i = skip; i < n; i++) o += g4_detok_push(&d, &m, ids[i], G4_PIECE_SPECIAL, out + o, cap - o);
    o += g4_detok_flush(&d, out + o, cap - o);
    if (!valid_utf8((const unsigned char *)out, o)) abort();
    if (valid_utf8((const unsigned char *)text, len) && (o != len || memcmp(out, text, len) != 0)) abort();

    /* the same bytes as chat content: renders, never crashes */
    chat_variant cv = {data[0] >> 2 & 1, data[0] >> 3 & 1, data[0] >> 4 & 1};
    g4_chat_msg msgs[2] = {{"user", text, len}, {"assistant", text, len}};
    size_t total = 0;
    if (chat_render(&cv, msgs, 2, "<bos>", 1, data[0] >> 5 & 1, 0, count_emit, &total, NULL, 0) != G4_OK) abort();
    /* ... and as the JSON of tools, of tool calls and of a tool result, for each tool flavour:
     * accepted or refused with G4_ERR_ARG, never anything else */
    cv.tools = (unsigned)(data[0] >> 6) * 0x0bu;
    g4_chat_turn t[3] = {{"user", "q", 1, NULL, 0, NULL, 0, NULL, 0, NULL, 0},
                         {"assistant", NULL, 0, text, len, text, len, NULL, 0, NULL, 0},
                         {"tool", text, len, NULL, 0, NULL, 0, text, len, text, len}};
    chat_req rq = {t, 3, "<bos>", 1, data[0] >> 5 & 1, 0, text, len};
    g4_status st = chat_render_req(&cv, &rq, count_emit, &total, NULL, 0);
    if (st != G4_OK && st != G4_ERR_ARG) abort();
    rq.tools = NULL;
    rq.tools_len = 0;
    st = chat_render_req(&cv, &rq, count_emit, &total, NULL, 0);
    if (st != G4_OK && st != G4_ERR_ARG) abort();
    free(out);
    free(ids);
    return 0;
}
