/* fuzz_http.c - libFuzzer target over the HTTP/1.1 request parser (server/http.c). Byte 0
 * picks the split size; the rest is fed in pieces of that size, requests are taken one after
 * another (pipelining) until the input ends or an error. Checks: no crash or sanitizer
 * report, errors carry a 4xx/5xx status and a message, a finished request's body lies inside
 * the buffer, and feeding whole or in pieces gives the same sequence of results.
 * Crashers go to tests/fuzz/corpus-http/ and are replayed by `g4-test http`. */
#include <stdlib.h>
#include <string.h>

#include "http.h"

static unsigned long run(const unsigned char *d, size_t n, size_t step) {
    http_parser p;
    http_parser_init(&p, 4096);
    unsigned long sig = 0;
    size_t off = 0;
    for (int guard = 0; guard < 100000; guard++) {
        int rc = http_step(&p);
        if (rc == HTTP_ERROR) {
            if (p.status < 400 || p.status > 599 || !p.msg[0]) abort();
            sig = sig * 31 + (unsigned long)p.status;
            break;
        }
        if (rc == HTTP_DONE) {
            if (p.req.body_len && (p.req.body < p.buf || p.req.body + p.req.body_len > p.buf + p.len)) abort();
            sig = sig * 31 + 7 + p.req.body_len;
            http_next(&p);
            continue;
        }
        if (off >= n) break;
        size_t k = n - off < step ? n - off : step;
        if (http_feed(&p, (const char *)d + off, k) < 0) { sig = sig * 31 + (unsigned long)p.status; break; }
        off += k;
    }
    http_parser_free(&p);
    return sig;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (size < 1) return 0;
    size_t step = (size_t)data[0] % 17 + 1;
    unsigned long a = run(data + 1, size - 1, size), b = run(data + 1, size - 1, step);
    if (a != b) abort();
    return 0;
}
