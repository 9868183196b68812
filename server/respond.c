/* respond.c - writing HTTP responses: plain bodies, OpenAI-shaped errors, server-sent events.
 * Every response carries Content-Length or chunked framing, so connections can be kept;
 * no CORS headers are sent (no wildcard CORS, reliability.md release gates). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "srv.h"

static const char *err_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 408: return "timeout_error";
    case 413: case 431: case 414: return "request_too_large";
    case 503: return "unavailable_error";
    case 500: return "server_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

int respond(conn *c, int status, const char *ctype, const char *body, size_t n, const char *extra) {
    char head[768];
    int k = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nServer: g4/%s\r\n%s%s\r\n", status,
                     http_reason(status), ctype, n, g4_version(), c->close_after ? "Connection: close\r\n" : "",
                     extra ? extra : "");
    c->status = status;
    if (k < 0 || (size_t)k >= sizeof head) return -1;
    if (http_send_all(c->fd, head, (size_t)k, c->sv->timeout_s * 1000) != 0) return -1;
    if (n && http_send_all(c->fd, body, n, c->sv->timeout_s * 1000) != 0) return -1;
    return 0;
}

int respond_error(conn *c, int status, const char *param, const char *code, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    buf b = {0};
    buf_puts(&b, "{\"error\":{\"message\":");
    buf_json_str(&b, msg, strlen(msg));
    buf_printf(&b, ",\"type\":\"%s\",\"param\":", err_type(status));
    if (param) buf_json_str(&b, param, strlen(param)); else buf_puts(&b, "null");
    buf_puts(&b, ",\"code\":");
    if (code) buf_json_str(&b, code, strlen(code)); else buf_puts(&b, "null");
    buf_puts(&b, "}}");
    const char *extra = status == 503 ? "Retry-After: 1\r\n" : status == 401 ? "WWW-Authenticate: Bearer\r\n" : NULL;
    if (status == 405) extra = NULL;
    int rc = b.oom ? -1 : respond(c, status, "application/json", b.p, b.len, extra);
    buf_free(&b);
    return rc;
}

static int chunked(const conn *c) { return c->hp.req.minor >= 1; }

int sse_begin(conn *c) {
    if (!chunked(c)) c->close_after = 1;
    char head[512];
    int k = snprintf(head, sizeof head,
                     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     "Server: g4/%s\r\n%s%s\r\n", g4_version(), chunked(c) ? "Transfer-Encoding: chunked\r\n" : "",
                     c->close_after ? "Connection: close\r\n" : "");
    c->status = 200;
    return http_send_all(c->fd, head, (size_t)k, c->sv->timeout_s * 1000);
}

int sse_data(conn *c, const char *data, size_t n) {
    char pre[32];
    size_t total = 6 + n + 2;
    int k = chunked(c) ? snprintf(pre, sizeof pre, "%zx\r\ndata: ", total) : snprintf(pre, sizeof pre, "data: ");
    int t = c->sv->timeout_s * 1000;
    if (http_send_all(c->fd, pre, (size_t)k, t) || http_send_all(c->fd, data, n, t) ||
        http_send_all(c->fd, chunked(c) ? "\n\n\r\n" : "\n\n", chunked(c) ? 4 : 2, t))
        return -1;
    return 0;
}

int sse_end(conn *c) {
    if (!chunked(c)) return 0;
    return http_send_all(c->fd, "0\r\n\r\n", 5, c->sv->timeout_s * 1000);
}
