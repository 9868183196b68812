/* status.c - status strings, error formatting, version, the internal assert. */
#include "g4_impl.h"

#include <stdio.h>
#include <stdlib.h>

const char *g4_version(void) { return G4_VERSION_STRING; }

const char *g4_status_str(g4_status st) {
    switch (st) {
    case G4_OK:              return "ok";
    case G4_ERR_ARG:         return "invalid argument";
    case G4_ERR_IO:          return "i/o error";
    case G4_ERR_FORMAT:      return "malformed file";
    case G4_ERR_UNSUPPORTED: return "unsupported";
    case G4_ERR_NOMEM:       return "out of memory";
    case G4_ERR_BUFFER:      return "buffer too small";
    case G4_ERR_CTX_FULL:    return "context full";
    case G4_ERR_ABORTED:     return "aborted";
    }
    return "unknown status";
}

g4_status g4_verrf(g4_status st, char *err, size_t errlen, const char *fmt, va_list ap) {
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    return st;
}

g4_status g4_errf(g4_status st, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g4_verrf(st, err, errlen, fmt, ap);
    va_end(ap);
    return st;
}

void g4_assert_fail(const char *file, int line, const char *cond) {
    fprintf(stderr, "%s:%d: internal error: assertion failed: %s\n", file, line, cond);
    abort();
}
