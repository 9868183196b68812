/* test_json.c - the strict JSON reader and the string quoting (src/json.c): values, escapes,
 * every rejection of reliability.md #68 with its message, limits, the fuzz corpus replay. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "g4.h"
#include "t.h"

static int parses(const char *s) {
    g4_json *d = NULL;
    g4_status st = g4_json_parse(&d, s, strlen(s), 0, NULL, 0);
    g4_json_free(d);
    return st == G4_OK;
}

/* parse must fail with a message containing want */
static int rejects(const char *s, size_t n, const char *want) {
    g4_json *d = (g4_json *)1;
    char err[200] = "";
    g4_status st = g4_json_parse(&d, s, n, 8, err, sizeof err);
    int ok = st == G4_ERR_ARG && d == NULL && strstr(err, want) != NULL && strncmp(err, "JSON: ", 6) == 0;
    if (!ok) fprintf(stderr, "    input '%.*s': status %d, message '%s' (want '%s')\n", (int)n, s, st, err, want);
    return ok;
}
#define REJ(lit, want) T_CHECK(rejects(lit, sizeof(lit) - 1, want))

static void values(void) {
    static const char doc[] = " {\"a\": [1, -2.5e1, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"b\": {}, "
                              "\"c\": [], \"big\": 18446744073709551615, \"neg\": -9223372036854775808, \"f\": 2.0,"
                              " \"nul\": \"a\\u0000b\", \"\": 0 } ";
    g4_json *d = NULL;
    char err[160];
    T_CHECK(g4_json_parse(&d, doc, sizeof doc - 1, 0, err, sizeof err) == G4_OK);
    const g4_jv *r = g4_json_root(d);
    T_CHECK(g4_jv_type(r) == G4_JSON_OBJECT && g4_jv_len(r) == 8);
    const g4_jv *a = g4_jv_get(r, "a");
    T_CHECK(g4_jv_type(a) == G4_JSON_ARRAY && g4_jv_len(a) == 6);
    int64_t i = 0;
    T_CHECK(g4_jv_int(g4_jv_at(a, 0), &i) && i == 1);
    T_CHECK(g4_jv_num(g4_jv_at(a, 1)) == -25.0 && g4_jv_int(g4_jv_at(a, 1), &i) && i == -25);
    T_CHECK(g4_jv_type(g4_jv_at(a, 2)) == G4_JSON_TRUE && g4_jv_type(g4_jv_at(a, 3)) == G4_JSON_FALSE &&
            g4_jv_type(g4_jv_at(a, 4)) == G4_JSON_NULL);
    size_t n = 0;
    const char *s = g4_jv_str(g4_jv_at(a, 5), &n);
    T_CHECK(s && n == 8 && memcmp(s, "x\xc3\xa9\xf0\x9f\x98\x80\n", 8) == 0);
    T_CHECK(g4_jv_at(a, 6) == NULL && g4_jv_at(NULL, 0) == NULL);
    T_CHECK(g4_jv_type(g4_jv_get(r, "b")) == G4_JSON_OBJECT && g4_jv_len(g4_jv_get(r, "b")) == 0);
    T_CHECK(g4_jv_type(g4_jv_get(r, "c")) == G4_JSON_ARRAY && g4_jv_len(g4_jv_get(r, "c")) == 0);
    uint64_t u = 0;
    T_CHECK(g4_jv_uint(g4_jv_get(r, "big"), &u) && u == UINT64_MAX && !g4_jv_int(g4_jv_get(r, "big"), &i));
    T_CHECK(g4_jv_int(g4_jv_get(r, "neg"), &i) && i == INT64_MIN && !g4_jv_uint(g4_jv_get(r, "neg"), &u));
    T_CHECK(g4_jv_int(g4_jv_get(r, "f"), &i) && i == 2);
    s = g4_jv_str(g4_jv_get(r, "nul"), &n);
    T_CHECK(s && n == 3 && s[1] == 0 && s[2] == 'b');
    T_CHECK(g4_jv_int(g4_jv_get(r, ""), &i) && i == 0);
    T_CHECK(g4_jv_get(r, "zz") == NULL && g4_jv_type(g4_jv_get(r, "zz")) == G4_JSON_NONE);
    size_t kl = 0;
    T_CHECK(strcmp(g4_jv_key(r, 1, &kl), "b") == 0 && kl == 1);
    const char *raw = g4_jv_raw(a, &n);
    T_CHECK(raw && n > 10 && raw[0] == '[' && raw[n - 1] == ']');
    T_CHECK(g4_jv_str(a, &n) == NULL && n == 0);
    g4_json_free(d);

    T_CHECK(parses("0") && parses("-0") && parses("\"\"") && parses("[[[]]]") && parses("1e-400") && parses("1E+2"));
    T_CHECK(parses("\t\r\n 5 \n"));
    /* a 64-deep document passes the default limit, 65 does not */
    char deep[200];
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    deep[128] = 0;
    T_CHECK(parses(deep));
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    deep[130] = 0;
    T_CHECK(!parses(deep));
}

static void rejections(void) {
    REJ("", "empty input");
    REJ("   ", "empty input");
    REJ("{\"a\":1,\"a\":2}", "duplicate key 'a'");
    REJ("{\"b\":1,\"a\":{\"x\":1,\"y\":2,\"x\":3}}", "duplicate key 'x'");
    REJ("\"\\ud800\"", "lone high surrogate");
    REJ("\"\\udc00\"", "lone low surrogate");
    REJ("\"\\ud800\\u0041\"", "lone high surrogate");
    REJ("\"\xff\"", "invalid UTF-8");
    REJ("\"\xc0\x80\"", "invalid UTF-8");          /* overlong NUL */
    REJ("\"\xed\xa0\x80\"", "invalid UTF-8");      /* UTF-8-encoded surrogate */
    REJ("\"\xf4\x90\x80\x80\"", "invalid UTF-8");  /* > U+10FFFF */
    REJ("\"\xe6\xad\"", "invalid UTF-8");          /* truncated */
    REJ("\"a\nb\"", "control character");
    REJ("\"\\x\"", "unknown escape");
    REJ("\"\\u12\"", "bad \\u escape");
    REJ("\"abc", "unterminated string");
    REJ("1e400", "number out of range");
    REJ("-1e400", "number out of range");
    REJ("01", "leading zero");
    REJ("1.", "digits expected after '.'");
    REJ("1e", "exponent digits");
    REJ("-", "invalid number");
    REJ("+1", "a value expected");
    REJ(".5", "a value expected");
    REJ("NaN", "a value expected");
    REJ("\xef\xbb\xbf{}", "byte order mark");
    REJ("{} x", "trailing data");
    REJ("{}{}", "trailing data");
    REJ("[1,]", "a value expected");
    REJ("[1 2]", "',' or ']' expected");
    REJ("{\"a\" 1}", "':' expected");
    REJ("{\"a\":1,}", "a key (string) expected");
    REJ("{a:1}", "a key (string) expected");
    REJ("[", "unexpected end of input");
    REJ("{\"a\":", "unexpected end of input");
    REJ("tru", "invalid literal");
    REJ("nul", "invalid literal");
    REJ("[[[[[[[[[1]]]]]]]]]", "nesting deeper than 8"); /* rejects() uses max_depth 8 */
    REJ("'a'", "a value expected");
    REJ("[1]\x00", "trailing data");
    /* byte offsets */
    char err[128];
    g4_json *d;
    T_CHECK(g4_json_parse(&d, "[1, x]", 6, 0, err, sizeof err) == G4_ERR_ARG && strstr(err, "at byte 4"));
    T_CHECK(g4_json_parse(NULL, "1", 1, 0, err, sizeof err) == G4_ERR_ARG);
    T_CHECK(g4_json_parse(&d, NULL, 3, 0, err, sizeof err) == G4_ERR_ARG && d == NULL);
    /* 100k nested '[' fails fast at the depth limit, no recursion */
    size_t big = 100000;
    char *b = malloc(big);
    memset(b, '[', big);
    T_CHECK(g4_json_parse(&d, b, big, 0, err, sizeof err) == G4_ERR_ARG && strstr(err, "nesting deeper than 64"));
    /* 20,000 distinct keys: accepted (duplicate check is not quadratic) */
    char *o = malloc(20000 * 16 + 16);
    size_t k = 0;
    o[k++] = '{';
    for (int j = 0; j < 20000; j++) k += (size_t)sprintf(o + k, "%s\"k%d\":%d", j ? "," : "", j, j);
    o[k++] = '}';
    T_CHECK(g4_json_parse(&d, o, k, 0, err, sizeof err) == G4_OK && g4_jv_len(g4_json_root(d)) == 20000);
    int64_t v = 0;
    T_CHECK(g4_jv_int(g4_jv_get(g4_json_root(d), "k19999"), &v) && v == 19999);
    g4_json_free(d);
    k--; /* drop the '}' and add a second k0 */
    k += (size_t)sprintf(o + k, ",\"k0\":1}");
    T_CHECK(g4_json_parse(&d, o, k, 0, err, sizeof err) == G4_ERR_ARG && strstr(err, "duplicate key 'k0'"));
    free(o);
    free(b);
}

static void quote(void) {
    char buf[64];
    size_t n = g4_json_quote(buf, sizeof buf, "a\"\\\n\x01\x7f", 6);
    T_CHECK(n == 21 && memcmp(buf, "\"a\\\"\\\\\\n\\u0001\\u007f\"", 21) == 0);
    n = g4_json_quote(buf, sizeof buf, "\xff\xe6\xad", 3); /* invalid and truncated: U+FFFD each */
    T_CHECK(n == 2 + 9 && memcmp(buf + 1, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9) == 0);
    n = g4_json_quote(buf, sizeof buf, "\xe2\x80\xa8\xc3\xa9", 5);
    T_CHECK(n == 2 + 6 + 2 && memcmp(buf, "\"\\u2028\xc3\xa9\"", 10) == 0);
    T_CHECK(g4_json_quote(NULL, 0, "abc", 3) == 5);
    T_CHECK(g4_json_quote(buf, 2, "abc", 3) == 5);
    /* quote -> parse round trip on every byte value */
    char raw[256];
    for (int i = 0; i < 128; i++) raw[i] = (char)i;
    char *q = malloc(6 * 128 + 2);
    n = g4_json_quote(q, 6 * 128 + 2, raw, 128);
    g4_json *d = NULL;
    T_CHECK(g4_json_parse(&d, q, n, 0, NULL, 0) == G4_OK);
    size_t sl = 0;
    const char *s = g4_jv_str(g4_json_root(d), &sl);
    T_CHECK(s && sl == 128 && memcmp(s, raw, 128) == 0);
    g4_json_free(d);
    free(q);
}

/* tests/fuzz/corpus-json: inputs that once crashed; each must parse or fail cleanly */
static void corpus(void) {
    DIR *dir = opendir("tests/fuzz/corpus-json");
    if (!dir) return;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "tests/fuzz/corpus-json/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        char *buf = malloc(1 << 20);
        size_t len = buf ? fread(buf, 1, 1 << 20, f) : 0;
        fclose(f);
        g4_json *d = NULL;
        g4_status st = g4_json_parse(&d, buf, len, 0, NULL, 0);
        T_CHECK(st == G4_OK || st == G4_ERR_ARG);
        g4_json_free(d);
        free(buf);
        n++;
    }
    closedir(dir);
    fprintf(stderr, "  json: %d corpus inputs replayed\n", n);
}

T_GROUP(json) {
    values();
    rejections();
    quote();
    corpus();
}
