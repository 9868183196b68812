/* srv.h - what the pieces of g4 serve share: the server context, one connection, and the
 * functions each file provides. The server uses include/g4.h only. */
#ifndef G4_SERVER_SRV_H
#define G4_SERVER_SRV_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "g4.h"
#include "http.h"
#include "slots.h"

typedef struct srv {
    g4_model   *m;
    sched      *sc;
    char        model_name[128];
    char        api_key[512];   /* "" = no key */
    size_t      api_key_len;
    size_t      max_body;
    int         timeout_s;      /* slow clients: head, body, and a response nobody reads */
    int         n_slots;
    int         spec;           /* speculative decoding on: timings carry draft_n, draft_n_accepted */
    int32_t     n_ctx_slot;
    int64_t     created;        /* unix time of start, for /v1/models */
    atomic_int  stopping;
    atomic_int  conns_open;
    atomic_uint_fast64_t conns_total, ids;
    atomic_uint_fast64_t req_total, req_2xx, req_4xx, req_5xx, req_stream, req_cancelled;
} srv;

typedef struct conn {
    srv        *sv;
    int         fd;
    http_parser hp;
    int         close_after; /* the response ends the connection */
    int         status;      /* of the last response, for the counters */
} conn;

/* ==== routes.c ==== */
/* Answers one request. Returns 0 when the connection may serve another, -1 to close it. */
int  route(conn *c, const http_req *r);

/* ==== respond.c: writing responses ==== */
int  respond(conn *c, int status, const char *ctype, const char *body, size_t n, const char *extra);
/* OpenAI's error shape: {"error":{"message","type","param","code"}}; param/code may be NULL. */
int  respond_error(conn *c, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Server-sent events over a chunked (HTTP/1.1) or close-delimited (HTTP/1.0) body. */
int  sse_begin(conn *c);
int  sse_data(conn *c, const char *data, size_t n); /* one "data: ...\n\n" event */
int  sse_end(conn *c);

/* ==== metrics.c ==== */
void metrics_text(srv *sv, buf *out);

/* ==== page.c (generated from server/page.html) ==== */
extern const unsigned char serve_page[];
extern const size_t serve_page_len;

int cmd_serve(int argc, char **argv);

#endif
