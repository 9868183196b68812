/* buf.h - a growable byte buffer for building responses (server/buf.c). An allocation
 * failure sets oom and turns later appends into no-ops, so callers check once at the end. */
#ifndef G4_SERVER_BUF_H
#define G4_SERVER_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct buf {
    char  *p;   /* [len] bytes (+ a NUL kept after them) */
    size_t len, cap;
    int    oom;
} buf;

void buf_free(buf *b);
void buf_put(buf *b, const void *s, size_t n);
void buf_puts(buf *b, const char *s);
void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_json_str(buf *b, const char *s, size_t n); /* a JSON string literal (g4_json_quote) */
void buf_json_num(buf *b, double v);                /* a finite number, or null */

#endif
