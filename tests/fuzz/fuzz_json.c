/* fuzz_json.c - libFuzzer target over the strict JSON reader (src/json.c) and the quoting:
 * every input parses or fails with G4_ERR_ARG; a parsed document is walked whole (every
 * accessor), and every string value survives quote -> parse unchanged.
 * Crashers go to tests/fuzz/corpus-json/ and are replayed by `g4-test json`. */
#include <stdlib.h>
#include <string.h>

#include "g4.h"

static void walk(const g4_jv *v, int depth) {
    if (depth > 200) abort(); /* the parser's depth limit must hold */
    size_t n = g4_jv_len(v), len;
    int64_t i;
    uint64_t u;
    (void)g4_jv_raw(v, &len);
    (void)g4_jv_int(v, &i);
    (void)g4_jv_uint(v, &u);
    (void)g4_jv_num(v);
    switch (g4_jv_type(v)) {
    case G4_JSON_STRING: {
        const char *s = g4_jv_str(v, &len);
        if (!s || len != n) abort();
        size_t need = g4_json_quote(NULL, 0, s, len);
        char *q = malloc(need);
        if (!q || g4_json_quote(q, need, s, len) != need) abort();
        g4_json *d = NULL;
        if (g4_json_parse(&d, q, need, 0, NULL, 0) != G4_OK) abort();
        size_t l2;
        const char *s2 = g4_jv_str(g4_json_root(d), &l2);
        if (!s2 || l2 != len || memcmp(s, s2, len) != 0) abort(); /* valid UTF-8 in, same bytes out */
        g4_json_free(d);
        free(q);
        break;
    }
    case G4_JSON_OBJECT:
        for (size_t k = 0; k < n; k++) {
            const char *key = g4_jv_key(v, k, &len);
            if (!key || (g4_jv_get(v, key) == NULL && strlen(key) == len)) abort();
            walk(g4_jv_at(v, k), depth + 1);
        }
        break;
    case G4_JSON_ARRAY:
        for (size_t k = 0; k < n; k++) walk(g4_jv_at(v, k), depth + 1);
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    g4_json *d = NULL;
    char err[256];
    g4_status st = g4_json_parse(&d, (const char *)data, size, 0, err, sizeof err);
    if (st != G4_OK && st != G4_ERR_ARG) abort();
    if (st == G4_OK) walk(g4_json_root(d), 0);
    g4_json_free(d);
    return 0;
}
