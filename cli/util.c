/* util.c - small helpers shared by the g4 subcommands: strict number parsing, logging,
 * file reading. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "g4.h"

int cli_int(const char *flag, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "g4: %s expects an integer from %ld to %ld, got '%s'\n", flag, lo, hi, s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

int cli_float(const char *flag, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || errno || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "g4: %s expects a number from %g to %g, got '%s'\n", flag, lo, hi, s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

void cli_log(void *ud, int level, const char *msg) {
    int max = ud ? *(const int *)ud : G4_LOG_WARN;
    if (level > max) return;
    const char *tag = level == G4_LOG_ERROR ? "error: " : level == G4_LOG_WARN ? "warning: " : "";
    fprintf(stderr, "g4: %s%s\n", tag, msg);
}

char *cli_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "g4: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
        if (n == cap) {
            char *nb = cap > ((size_t)1 << 30) ? NULL : realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        fprintf(stderr, "g4: %s: %s\n", path, bad ? "read error" : "file too large or out of memory");
        return NULL;
    }
    *len = n;
    return buf;
}
