/* buf.c - growable byte buffer (buf.h). */
#include "buf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g4.h"

void buf_free(buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

static int reserve(buf *b, size_t n) {
    if (b->oom) return 0;
    if (n > SIZE_MAX / 2 - b->len) { b->oom = 1; return 0; }
    if (b->len + n + 1 <= b->cap) return 1;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + n + 1) nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) { b->oom = 1; return 0; }
    b->p = np;
    b->cap = nc;
    return 1;
}

void buf_put(buf *b, const void *s, size_t n) {
    if (!reserve(b, n)) return;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void buf_puts(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_printf(buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) { buf_put(b, tmp, (size_t)n); return; }
    if (!reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void buf_json_str(buf *b, const char *s, size_t n) {
    size_t need = g4_json_quote(NULL, 0, s, n);
    if (!reserve(b, need)) return;
    g4_json_quote(b->p + b->len, need, s, n);
    b->len += need;
    b->p[b->len] = 0;
}

void buf_json_num(buf *b, double v) {
    if (!isfinite(v)) { buf_puts(b, "null"); return; }
    buf_printf(b, "%.9g", v);
}
