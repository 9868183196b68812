/* http.c - HTTP/1.1 request parser (RFC 9112) and socket write helpers.
 *
 * Owns: the incremental parser of http.h. Strict where leniency has caused request
 * smuggling or hangs elsewhere: CRLF line ends only, no obs-fold, no whitespace before a
 * header colon, one Host for HTTP/1.1, Content-Length digits only and not together with
 * Transfer-Encoding, only the "chunked" coding, chunk sizes checked for overflow, every part
 * bounded (line, head, header count, chunk line, trailers, body). The head is parsed once the
 * blank line arrives (the search resumes where it stopped: no quadratic rescans for a client
 * sending a byte at a time); chunked bodies are decoded in place as bytes arrive.
 * Does not own: timeouts and connections (serve.c), routing (routes.c).
 */
#define _GNU_SOURCE 1
#include "http.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

enum { ST_HEAD, ST_BODY_LEN, ST_CHUNK_SIZE, ST_CHUNK_DATA, ST_CHUNK_CRLF, ST_TRAILER, ST_DONE, ST_ERROR };

void http_parser_init(http_parser *p, size_t max_body) {
    memset(p, 0, sizeof *p);
    p->max_body = max_body;
    p->state = ST_HEAD;
}

void http_parser_free(http_parser *p) {
    free(p->buf);
    p->buf = NULL;
    p->len = p->cap = 0;
}

static int err(http_parser *p, int status, const char *fmt, const char *arg) {
    p->state = ST_ERROR;
    p->status = status;
    snprintf(p->msg, sizeof p->msg, fmt, arg ? arg : "");
    return HTTP_ERROR;
}

int http_feed(http_parser *p, const char *data, size_t n) {
    if (p->state == ST_ERROR) return -1;
    size_t limit = HTTP_MAX_HEAD + (p->max_body + p->max_body / 4) + 65536 + HTTP_MAX_HEAD; /* head + framed body + pipelined head */
    if (n > limit || p->len > limit - n) {
        err(p, p->state == ST_HEAD ? 431 : 413, "request too large%s", "");
        return -1;
    }
    if (p->len + n > p->cap) {
        size_t nc = p->cap ? p->cap : 4096;
        while (nc < p->len + n) nc *= 2;
        if (nc > limit) nc = limit;
        char *nb = realloc(p->buf, nc);
        if (!nb) { err(p, 503, "out of memory%s", ""); return -1; }
        p->buf = nb;
        p->cap = nc;
    }
    memcpy(p->buf + p->len, data, n);
    p->len += n;
    return 0;
}

/* ==== Head ==== */

static int is_tchar(unsigned char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* printable copy of untrusted bytes for a message */
static const char *show(const char *s, size_t n, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\'') out[o++] = (char)c;
        else o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    }
    if (o + 4 < cap && n > 0 && o >= cap - 6) { out[o++] = '.'; out[o++] = '.'; out[o++] = '.'; }
    out[o] = 0;
    return out;
}

static int tokens_has(const char *v, size_t n, const char *tok) {
    size_t tl = strlen(tok), i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
        size_t s = i;
        while (i < n && v[i] != ',') i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
        if (e - s == tl && strncasecmp(v + s, tok, tl) == 0) return 1;
    }
    return 0;
}

static void rebuild(http_parser *p) {
    http_req *r = &p->req;
    r->target = p->buf + p->toff;
    for (int i = 0; i < r->n_hdr; i++) {
        r->hdr[i].name = p->buf + p->hoff[i][0];
        r->hdr[i].name_len = p->hoff[i][1];
        r->hdr[i].value = p->buf + p->hoff[i][2];
        r->hdr[i].value_len = p->hoff[i][3];
    }
    r->body = p->buf + p->head_len;
    r->body_len = p->body_len;
}

static int parse_head(http_parser *p, size_t end) { /* [0, end) holds the head, ending in CRLF CRLF */
    http_req *r = &p->req;
    memset(r, 0, sizeof *r);
    r->content_length = -1;
    const char *b = p->buf;
    size_t i = 0;
    while (i + 1 < end && b[i] == '\r' && b[i + 1] == '\n') i += 2; /* empty lines before the request line (RFC 9112 §2.2) */
    char tmp[80];
    /* request line: method SP target SP HTTP/1.x CRLF */
    size_t m0 = i;
    while (i < end && is_tchar((unsigned char)b[i])) i++;
    if (i == m0 || i >= end || b[i] != ' ') return err(p, 400, "malformed request line '%s'", show(b + m0, 40, tmp, sizeof tmp));
    if (i - m0 >= sizeof r->method) return err(p, 501, "method '%s' is not implemented", show(b + m0, i - m0, tmp, sizeof tmp));
    memcpy(r->method, b + m0, i - m0);
    r->method[i - m0] = 0;
    i++;
    size_t t0 = i;
    while (i < end && (unsigned char)b[i] > 0x20 && (unsigned char)b[i] < 0x7f) i++;
    if (i == t0 || i >= end || b[i] != ' ') return err(p, 400, "malformed request target '%s'", show(b + t0, i - t0 > 40 ? 40 : i - t0, tmp, sizeof tmp));
    p->toff = t0;
    r->target_len = i - t0;
    i++;
    if (end - i < 10 || memcmp(b + i, "HTTP/", 5) != 0) return err(p, 400, "malformed request line: HTTP version expected%s", "");
    if (!(b[i + 5] >= '0' && b[i + 5] <= '9' && b[i + 6] == '.' && b[i + 7] >= '0' && b[i + 7] <= '9' && b[i + 8] == '\r' &&
          b[i + 9] == '\n'))
        return err(p, 400, "malformed HTTP version '%s'", show(b + i, 10, tmp, sizeof tmp));
    if (b[i + 5] != '1') return err(p, 505, "HTTP version %s is not supported (HTTP/1.1 is)", show(b + i + 5, 3, tmp, sizeof tmp));
    r->minor = b[i + 7] - '0';
    i += 10;
    r->keep_alive = r->minor >= 1;
    int n_host = 0, have_te = 0, n_cl = 0;
    /* fields */
    while (i < end) {
        if (b[i] == '\r' && i + 1 < end && b[i + 1] == '\n') { i += 2; break; } /* blank line */
        if (b[i] == ' ' || b[i] == '\t') return err(p, 400, "obsolete line folding in a header%s", "");
        size_t n0 = i;
        while (i < end && is_tchar((unsigned char)b[i])) i++;
        if (i == n0 || i >= end || b[i] != ':') {
            if (i < end && (b[i] == ' ' || b[i] == '\t')) return err(p, 400, "whitespace before ':' in header '%s'", show(b + n0, i - n0, tmp, sizeof tmp));
            return err(p, 400, "malformed header line '%s'", show(b + n0, 30, tmp, sizeof tmp));
        }
        size_t nl = i - n0;
        i++;
        while (i < end && (b[i] == ' ' || b[i] == '\t')) i++;
        size_t v0 = i;
        while (i < end && b[i] != '\r') {
            unsigned char c = (unsigned char)b[i];
            if ((c < 0x20 && c != '\t') || c == 0x7f) return err(p, 400, "control character in header '%s'", show(b + n0, nl, tmp, sizeof tmp));
            i++;
        }
        if (i + 1 >= end || b[i + 1] != '\n') return err(p, 400, "bare CR in header '%s'", show(b + n0, nl, tmp, sizeof tmp));
        size_t v1 = i;
        while (v1 > v0 && (b[v1 - 1] == ' ' || b[v1 - 1] == '\t')) v1--;
        i += 2;
        if (r->n_hdr >= HTTP_MAX_HEADERS) return err(p, 431, "more than %s header fields", "64");
        p->hoff[r->n_hdr][0] = n0;
        p->hoff[r->n_hdr][1] = nl;
        p->hoff[r->n_hdr][2] = v0;
        p->hoff[r->n_hdr][3] = v1 - v0;
        r->n_hdr++;
        const char *name = b + n0, *val = b + v0;
        size_t vl = v1 - v0;
        if (nl == 4 && strncasecmp(name, "host", 4) == 0) n_host++;
        else if (nl == 14 && strncasecmp(name, "content-length", 14) == 0) {
            n_cl++;
            if (vl == 0 || vl > 18) return err(p, 400, "invalid Content-Length '%s'", show(val, vl, tmp, sizeof tmp));
            int64_t v = 0;
            for (size_t k = 0; k < vl; k++) {
                if (val[k] < '0' || val[k] > '9') return err(p, 400, "invalid Content-Length '%s'", show(val, vl, tmp, sizeof tmp));
                v = v * 10 + (val[k] - '0');
            }
            r->content_length = v;
        } else if (nl == 17 && strncasecmp(name, "transfer-encoding", 17) == 0) {
            if (have_te) return err(p, 400, "more than one Transfer-Encoding header%s", "");
            have_te = 1;
            if (vl == 7 && strncasecmp(val, "chunked", 7) == 0) r->chunked = 1;
            else return err(p, 501, "Transfer-Encoding '%s' is not supported (only chunked)", show(val, vl, tmp, sizeof tmp));
        } else if (nl == 10 && strncasecmp(name, "connection", 10) == 0) {
            if (tokens_has(val, vl, "close")) r->keep_alive = 0;
            else if (tokens_has(val, vl, "keep-alive")) r->keep_alive = 1;
        } else if (nl == 6 && strncasecmp(name, "expect", 6) == 0) {
            if (vl == 12 && strncasecmp(val, "100-continue", 12) == 0) r->expect_continue = r->minor >= 1;
            else return err(p, 417, "Expect '%s' is not supported", show(val, vl, tmp, sizeof tmp));
        }
    }
    if (i != end) return err(p, 400, "malformed header section%s", "");
    if (r->minor >= 1 && n_host != 1) return err(p, 400, n_host ? "more than one Host header%s" : "missing Host header%s", "");
    if (n_cl > 1) return err(p, 400, "more than one Content-Length header%s", "");
    if (have_te && n_cl) return err(p, 400, "both Transfer-Encoding and Content-Length%s", "");
    if (have_te && r->minor == 0) return err(p, 400, "Transfer-Encoding in an HTTP/1.0 request%s", "");
    if (r->content_length > 0 && (uint64_t)r->content_length > p->max_body) {
        char n[32];
        snprintf(n, sizeof n, "%zu", p->max_body);
        return err(p, 413, "request body larger than %s bytes", n);
    }
    p->head_len = end;
    p->rpos = end;
    p->body_len = 0;
    return HTTP_HEAD;
}

/* ==== Body ==== */

static int find_crlf(const char *b, size_t from, size_t to, size_t *at) {
    for (size_t i = from; i + 1 < to; i++) if (b[i] == '\r' && b[i + 1] == '\n') { *at = i; return 1; }
    return 0;
}

static int chunked(http_parser *p) {
    char *b = p->buf;
    for (;;) {
        size_t at;
        switch (p->state) {
        case ST_CHUNK_SIZE: {
            size_t lim = p->len < p->rpos + HTTP_MAX_CHUNK_LINE ? p->len : p->rpos + HTTP_MAX_CHUNK_LINE;
            if (!find_crlf(b, p->rpos, lim, &at)) {
                if (p->len - p->rpos >= HTTP_MAX_CHUNK_LINE) return err(p, 400, "chunk-size line too long%s", "");
                return HTTP_NEED;
            }
            uint64_t v = 0;
            size_t k = p->rpos, nd = 0;
            for (; k < at; k++, nd++) {
                char c = b[k];
                int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                if (h < 0) break;
                if (nd >= 15) return err(p, 400, "chunk size too large%s", "");
                v = v * 16 + (uint64_t)h;
            }
            if (nd == 0 || (k < at && b[k] != ';' && b[k] != ' ' && b[k] != '\t')) return err(p, 400, "malformed chunk size%s", "");
            for (; k < at; k++)
                if ((unsigned char)b[k] < 0x20 && b[k] != '\t') return err(p, 400, "control character in a chunk extension%s", "");
            p->rpos = at + 2;
            if (v > p->max_body || p->body_len + v > p->max_body) {
                char n[32];
                snprintf(n, sizeof n, "%zu", p->max_body);
                return err(p, 413, "request body larger than %s bytes", n);
            }
            p->chunk_left = v;
            p->state = v ? ST_CHUNK_DATA : ST_TRAILER;
            p->trailer = 0;
            break;
        }
        case ST_CHUNK_DATA: {
            size_t avail = p->len - p->rpos;
            size_t take = avail < p->chunk_left ? avail : (size_t)p->chunk_left;
            if (take == 0) return HTTP_NEED;
            memmove(b + p->head_len + p->body_len, b + p->rpos, take); /* decoded <= raw: in place */
            p->body_len += take;
            p->rpos += take;
            p->chunk_left -= take;
            if (p->chunk_left == 0) p->state = ST_CHUNK_CRLF;
            break;
        }
        case ST_CHUNK_CRLF:
            if (p->len - p->rpos < 2) return HTTP_NEED;
            if (b[p->rpos] != '\r' || b[p->rpos + 1] != '\n') return err(p, 400, "chunk data not followed by CRLF%s", "");
            p->rpos += 2;
            p->state = ST_CHUNK_SIZE;
            break;
        case ST_TRAILER: {
            size_t lim = p->len;
            if (!find_crlf(b, p->rpos, lim, &at)) {
                if (p->trailer + (p->len - p->rpos) > HTTP_MAX_HEAD) return err(p, 431, "trailer section too large%s", "");
                return HTTP_NEED;
            }
            size_t ln = at - p->rpos;
            p->trailer += ln + 2;
            if (p->trailer > HTTP_MAX_HEAD) return err(p, 431, "trailer section too large%s", "");
            for (size_t k = p->rpos; k < at; k++)
                if ((unsigned char)b[k] < 0x20 && b[k] != '\t') return err(p, 400, "control character in a trailer%s", "");
            p->rpos = at + 2;
            if (ln == 0) { p->state = ST_DONE; return HTTP_DONE; }
            break;
        }
        default: return HTTP_ERROR;
        }
    }
}

int http_step(http_parser *p) {
    int rc;
    switch (p->state) {
    case ST_ERROR: return HTTP_ERROR;
    case ST_DONE: rebuild(p); return HTTP_DONE;
    case ST_HEAD: {
        size_t from = p->scan > 3 ? p->scan - 3 : 0, end = 0;
        const char *b = p->buf;
        int found = 0;
        for (size_t i = from; i + 3 < p->len; i++) {
            if (b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n') {
                /* leading blank lines are not the end of a head */
                size_t lead = 0;
                while (lead + 1 < p->len && b[lead] == '\r' && b[lead + 1] == '\n') lead += 2;
                if (i + 2 <= lead) continue;
                end = i + 4;
                found = 1;
                break;
            }
        }
        p->scan = p->len;
        if (!found) {
            /* the request line alone over its limit is 414, the head 431 */
            const char *nl = p->len ? memchr(b, '\n', p->len < HTTP_MAX_LINE ? p->len : HTTP_MAX_LINE) : NULL;
            if (!nl && p->len >= HTTP_MAX_LINE) return err(p, 414, "request line longer than 8192 bytes%s", "");
            if (p->len > HTTP_MAX_HEAD) return err(p, 431, "request header section larger than 16384 bytes%s", "");
            for (size_t i = from; i < p->len; i++) /* reject garbage early (new bytes only): no NUL or bare LF */
                if (b[i] == 0 || (b[i] == '\n' && (i == 0 || b[i - 1] != '\r')))
                    return err(p, 400, b[i] ? "bare LF in the request head%s" : "NUL byte in the request head%s", "");
            return HTTP_NEED;
        }
        if (end > HTTP_MAX_HEAD) return err(p, 431, "request header section larger than 16384 bytes%s", "");
        {
            const char *nl = memchr(b, '\n', end);
            if (nl && (size_t)(nl - b) > HTTP_MAX_LINE) return err(p, 414, "request line longer than 8192 bytes%s", "");
        }
        for (size_t i = 0; i < end; i++)
            if (b[i] == 0 || (b[i] == '\n' && (i == 0 || b[i - 1] != '\r')))
                return err(p, 400, b[i] ? "bare LF in the request head%s" : "NUL byte in the request head%s", "");
        rc = parse_head(p, end);
        if (rc == HTTP_ERROR) return rc;
        p->state = p->req.chunked ? ST_CHUNK_SIZE : ST_BODY_LEN;
        rebuild(p);
        if (p->req.content_length <= 0 && !p->req.chunked) { p->state = ST_DONE; return HTTP_DONE; }
        return HTTP_HEAD;
    }
    case ST_BODY_LEN: {
        size_t want = (size_t)p->req.content_length;
        if (p->len - p->head_len < want) return HTTP_NEED;
        p->body_len = want;
        p->rpos = p->head_len + want;
        p->state = ST_DONE;
        rebuild(p);
        return HTTP_DONE;
    }
    default:
        rc = chunked(p);
        if (rc == HTTP_DONE) rebuild(p);
        return rc;
    }
}

void http_next(http_parser *p) {
    if (p->state != ST_DONE) return;
    size_t keep = p->len - p->rpos;
    memmove(p->buf, p->buf + p->rpos, keep);
    p->len = keep;
    p->state = ST_HEAD;
    p->scan = 0;
    p->head_len = p->rpos = p->body_len = 0;
    p->chunk_left = 0;
    memset(&p->req, 0, sizeof p->req);
}

const http_hdr *http_find(const http_req *r, const char *name) {
    size_t nl = strlen(name);
    for (int i = 0; i < r->n_hdr; i++)
        if (r->hdr[i].name_len == nl && strncasecmp(r->hdr[i].name, name, nl) == 0) return &r->hdr[i];
    return NULL;
}

const char *http_reason(int status) {
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    }
    return "Unknown";
}

/* ==== Sockets ==== */

int http_send_all(int fd, const void *buf, size_t n, int timeout_ms) {
    const char *b = buf;
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w > 0) { b += w; n -= (size_t)w; continue; }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pf = {fd, POLLOUT, 0};
            int r = poll(&pf, 1, timeout_ms);
            if (r <= 0 || (pf.revents & (POLLERR | POLLHUP))) return -1;
            continue;
        }
        return -1;
    }
    return 0;
}

int http_peer_gone(int fd) {
#ifdef POLLRDHUP
    short ev = POLLIN | POLLRDHUP;
#else
    short ev = POLLIN;
#endif
    struct pollfd pf = {fd, ev, 0};
    if (poll(&pf, 1, 0) <= 0) return 0;
    if (pf.revents & (POLLERR | POLLHUP | POLLNVAL)) return 1;
#ifdef POLLRDHUP
    if (pf.revents & POLLRDHUP) return 1;
#endif
    if (pf.revents & POLLIN) { /* data (a pipelined request) or EOF */
        char c;
        ssize_t r = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r == 0) return 1;
        if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return 1;
    }
    return 0;
}
