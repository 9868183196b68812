/* http.h - HTTP/1.1 request parsing (RFC 9112), strict, incremental and free of I/O, plus the
 * socket helpers the server writes responses with (server/http.c).
 *
 * A connection owns one http_parser. Bytes are appended with http_feed as they arrive and
 * http_step advances: it reports a complete head (so the caller can answer Expect:
 * 100-continue before the body comes), a complete request, or an error with the status to
 * answer and a one-line message. Pipelined requests stay in the buffer: http_next drops the
 * finished request and keeps what follows it.
 */
#ifndef G4_SERVER_HTTP_H
#define G4_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>

enum {
    HTTP_MAX_LINE    = 8192,  /* request line: longer is 414 */
    HTTP_MAX_HEAD    = 16384, /* request line + headers: more is 431 */
    HTTP_MAX_HEADERS = 64,    /* header fields: more is 431 */
    HTTP_MAX_CHUNK_LINE = 1024 /* chunk-size line with extensions; trailers share HTTP_MAX_HEAD */
};

enum { HTTP_NEED = 0, HTTP_HEAD = 1, HTTP_DONE = 2, HTTP_ERROR = -1 };

typedef struct http_hdr {
    const char *name, *value; /* into the parser's buffer; value without surrounding spaces */
    size_t      name_len, value_len;
} http_hdr;

typedef struct http_req {
    char        method[16];
    const char *target;      /* request-target as sent (origin-form: "/v1/models?x=1") */
    size_t      target_len;
    int         minor;       /* HTTP/1.minor */
    http_hdr    hdr[HTTP_MAX_HEADERS];
    int         n_hdr;
    int         keep_alive;  /* the connection stays open after the response */
    int         expect_continue;
    int         chunked;
    int64_t     content_length; /* -1 when absent */
    const char *body;        /* [body_len] bytes, decoded (chunked framing removed) */
    size_t      body_len;
} http_req;

typedef struct http_parser {
    char    *buf;       /* [cap] received bytes; the current request starts at 0 */
    size_t   len, cap;
    size_t   max_body;  /* larger bodies are 413 */
    int      state;     /* internal */
    size_t   scan;      /* head: where the search for the blank line resumes */
    size_t   head_len;  /* bytes of the head once parsed */
    size_t   rpos;      /* body: raw bytes consumed so far (absolute offset) */
    size_t   body_len;  /* body: decoded bytes, stored in place from head_len */
    uint64_t chunk_left;
    size_t   trailer;   /* bytes of trailer fields read */
    size_t   hoff[HTTP_MAX_HEADERS][4]; /* name/value offsets and lengths (pointers are rebuilt) */
    size_t   toff;
    http_req req;
    int      status;    /* on HTTP_ERROR: the status to answer */
    char     msg[192];  /* on HTTP_ERROR: one line naming what is wrong */
} http_parser;

void http_parser_init(http_parser *p, size_t max_body);
void http_parser_free(http_parser *p);
/* Appends n bytes; -1 (with status and msg set) when the buffer would outgrow the limits. */
int  http_feed(http_parser *p, const char *data, size_t n);
/* Advances; returns HTTP_NEED (more bytes), HTTP_HEAD (head complete, body still coming:
 * returned once per request), HTTP_DONE (p->req complete) or HTTP_ERROR. */
int  http_step(http_parser *p);
/* After HTTP_DONE: forget the request, keep pipelined bytes that followed it. */
void http_next(http_parser *p);

/* Header value by name (case-insensitive), NULL if absent. */
const http_hdr *http_find(const http_req *r, const char *name);
const char *http_reason(int status);

/* ==== Socket helpers ==== */
/* Writes all n bytes within timeout_ms per wait; 0 ok, -1 on error, timeout or a closed peer
 * (never SIGPIPE). */
int  http_send_all(int fd, const void *buf, size_t n, int timeout_ms);
/* 1 when the peer has closed or reset the connection (checked without blocking or consuming
 * pipelined bytes), else 0. */
int  http_peer_gone(int fd);

#endif
