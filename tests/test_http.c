/* test_http.c - the HTTP/1.1 request parser (server/http.c): valid requests whole, byte by
 * byte and pipelined; chunked bodies; Expect: 100-continue; the hostile catalogue with the
 * status each case must get; the fuzz corpus replay. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "t.h"

typedef struct res { int rc, status; char method[16], target[64], body[256]; size_t body_len; int keep, cont, chunked; } res;

/* feeds s in pieces of `step` bytes (0 = at once) until done or error */
static res run(const char *s, size_t n, size_t step, size_t max_body) {
    res r;
    memset(&r, 0, sizeof r);
    http_parser p;
    http_parser_init(&p, max_body);
    size_t off = 0;
    int rc = HTTP_NEED;
    while (rc == HTTP_NEED || rc == HTTP_HEAD) {
        if (rc == HTTP_HEAD) r.cont = p.req.expect_continue;
        if (rc == HTTP_NEED || off < n) {
            if (off >= n) break;
            size_t k = step && n - off > step ? step : n - off;
            if (http_feed(&p, s + off, k) < 0) { rc = HTTP_ERROR; break; }
            off += k;
        }
        rc = http_step(&p);
    }
    r.rc = rc;
    r.status = p.status;
    if (rc == HTTP_DONE) {
        snprintf(r.method, sizeof r.method, "%s", p.req.method);
        snprintf(r.target, sizeof r.target, "%.*s", (int)p.req.target_len, p.req.target);
        r.body_len = p.req.body_len;
        memcpy(r.body, p.req.body, p.req.body_len < sizeof r.body ? p.req.body_len : sizeof r.body);
        r.keep = p.req.keep_alive;
        r.chunked = p.req.chunked;
    } else if (rc == HTTP_ERROR && getenv("G4_TEST_VERBOSE")) {
        fprintf(stderr, "    %d %s\n", p.status, p.msg);
    }
    http_parser_free(&p);
    return r;
}
#define RUN(lit, step) run(lit, sizeof(lit) - 1, step, 1 << 20)

static void valid(void) {
    static const char get[] = "GET /v1/models HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n";
    for (size_t step = 0; step <= 3; step++) {
        res r = RUN(get, step);
        T_CHECK(r.rc == HTTP_DONE && !strcmp(r.method, "GET") && !strcmp(r.target, "/v1/models") && r.body_len == 0 && r.keep);
    }
    static const char post[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n"
                               "Connection: close\r\n\r\n{\"a\":\"bcd\"}";
    res r = RUN(post, 0);
    T_CHECK(r.rc == HTTP_DONE && r.body_len == 11 && !memcmp(r.body, "{\"a\":\"bcd\"}", 11) && !r.keep);
    r = RUN(post, 1);
    T_CHECK(r.rc == HTTP_DONE && r.body_len == 11);
    static const char ch[] = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: 1\r\n\r\n";
    for (size_t step = 0; step <= 2; step++) {
        r = RUN(ch, step);
        T_CHECK(r.rc == HTTP_DONE && r.chunked && r.body_len == 23 && !memcmp(r.body, "Wikipedia in\r\n\r\nchunks.", 23));
    }
    static const char cont[] = "POST /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok";
    r = RUN(cont, 1);
    T_CHECK(r.rc == HTTP_DONE && r.cont && r.body_len == 2);
    static const char h10[] = "GET / HTTP/1.0\r\n\r\n";
    r = RUN(h10, 0);
    T_CHECK(r.rc == HTTP_DONE && !r.keep);
    static const char h10k[] = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    r = RUN(h10k, 0);
    T_CHECK(r.rc == HTTP_DONE && r.keep);
    static const char lead[] = "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
    r = RUN(lead, 0);
    T_CHECK(r.rc == HTTP_DONE && !strcmp(r.target, "/"));

    /* pipelining: two requests in one buffer, parsed one after the other */
    static const char two[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyzGET /c HTTP/1.1\r\nHost: x\r\n\r\n";
    http_parser p;
    http_parser_init(&p, 100);
    T_CHECK(http_feed(&p, two, sizeof two - 1) == 0);
    T_CHECK(http_step(&p) == HTTP_DONE && p.req.target_len == 2 && !memcmp(p.req.target, "/a", 2));
    http_next(&p);
    int rc = http_step(&p);
    if (rc == HTTP_HEAD) rc = http_step(&p);
    T_CHECK(rc == HTTP_DONE && !memcmp(p.req.target, "/b", 2) && p.req.body_len == 3 && !memcmp(p.req.body, "xyz", 3));
    const http_hdr *h = http_find(&p.req, "content-LENGTH");
    T_CHECK(h && h->value_len == 1 && h->value[0] == '3');
    http_next(&p);
    T_CHECK(http_step(&p) == HTTP_DONE && !memcmp(p.req.target, "/c", 2));
    http_next(&p);
    T_CHECK(http_step(&p) == HTTP_NEED && p.len == 0);
    http_parser_free(&p);
}

static void hostile(void) {
    static const struct { const char *in; int status; } cases[] = {
        {"GET\r\n\r\n", 400},
        {"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400},
        {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
        {"GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505},
        {"GET / FTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n\r\n", 400},                                 /* no Host */
        {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400},                     /* space before colon */
        {"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01" "b\r\n\r\n", 400},
        {"GET / HTTP/1.1\nHost: a\n\n", 400},                           /* bare LF */
        {"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: a\r\nnocolon\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 501},
        {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n", 413},
        {"POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", 417},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n", 400},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n200000\r\n", 413},
        {"GET / HTTP/1.1\r\nHost: a\x00\r\n\r\n", 400},
        {"VERYLONGMETHODNAMEXX / HTTP/1.1\r\nHost: a\r\n\r\n", 501},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].in);
        if (i == 29) n = 26; /* the case with a NUL byte */
        for (size_t step = 0; step <= 1; step++) {
            res r = run(cases[i].in, n, step, 1 << 20);
            T_CHECKF(r.rc == HTTP_ERROR && r.status == cases[i].status, "case %zu step %zu: rc %d status %d (want %d)", i, step,
                     r.rc, r.status, cases[i].status);
        }
    }
    /* sizes: a 9 KB request line is 414, 17 KB of headers 431, 65 headers 431 */
    char *big = malloc(40000);
    memcpy(big, "GET /", 5);
    memset(big + 5, 'a', 9000);
    res r = run(big, 9005, 0, 100);
    T_CHECK(r.rc == HTTP_ERROR && r.status == 414);
    size_t k = (size_t)sprintf(big, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < 300; i++) k += (size_t)sprintf(big + k, "X-Filler-%03d: %060d\r\n", i, 0);
    r = run(big, k, 0, 100);
    T_CHECK(r.rc == HTTP_ERROR && r.status == 431);
    k = (size_t)sprintf(big, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < 65; i++) k += (size_t)sprintf(big + k, "X%d: 1\r\n", i);
    k += (size_t)sprintf(big + k, "\r\n");
    r = run(big, k, 0, 100);
    T_CHECK(r.rc == HTTP_ERROR && r.status == 431);
    /* chunked body adding up past the limit */
    k = (size_t)sprintf(big, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 30; i++) { k += (size_t)sprintf(big + k, "a\r\n"); memset(big + k, 'z', 10); k += 10; k += (size_t)sprintf(big + k, "\r\n"); }
    r = run(big, k, 7, 100);
    T_CHECK(r.rc == HTTP_ERROR && r.status == 413);
    /* a truncated chunked body is never done */
    static const char trunc[] = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab";
    r = RUN(trunc, 0);
    T_CHECK(r.rc == HTTP_NEED);
    free(big);
}

static void corpus(void) {
    DIR *dir = opendir("tests/fuzz/corpus-http");
    if (!dir) return;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "tests/fuzz/corpus-http/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        char *buf = malloc(1 << 20);
        size_t len = buf ? fread(buf, 1, 1 << 20, f) : 0;
        fclose(f);
        for (size_t step = 0; step <= 1; step++) {
            res r = run(buf, len, step, 4096);
            T_CHECK(r.rc == HTTP_DONE || r.rc == HTTP_NEED || (r.rc == HTTP_ERROR && r.status >= 400 && r.status < 600));
        }
        free(buf);
        n++;
    }
    closedir(dir);
    fprintf(stderr, "  http: %d corpus inputs replayed\n", n);
}

T_GROUP(http) {
    valid();
    hostile();
    corpus();
}
