/* util.c - small helpers shared by the g4 subcommands: strict number parsing, logging,
 * file reading. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int cli_samp_arg(cli_samp *s, const char *cmd, int argc, char **argv, int *i, double rp_min, long rln_max) {
    const char *a = argv[*i];
    static const char *const flags[] = { "-s", "--seed", "--temp", "--top-k", "--top-p", "--min-p",
                                         "--repeat-penalty", "--repeat-last-n" };
    int known = 0;
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) known |= !strcmp(a, flags[k]);
    if (!known) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "g4 %s: %s needs a value\n", cmd, a);
        return -1;
    }
    const char *v = argv[++*i];
    if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
        char *end;
        errno = 0;
        s->seed = strtoull(v, &end, 10);
        if (!*v || *end || errno || *v == '-') {
            fprintf(stderr, "g4 %s: %s expects a non-negative integer, got '%s'\n", cmd, a, v);
            return -1;
        }
        s->have_seed = 1;
    } else if (!strcmp(a, "--temp")) {
        if (!cli_float(a, v, 0, 1e6, &s->temp)) return -1;
        s->have_temp = 1;
    } else if (!strcmp(a, "--top-k")) {
        if (!cli_int(a, v, 0, INT32_MAX, &s->top_k)) return -1;
        s->have_top_k = 1;
    } else if (!strcmp(a, "--top-p")) {
        if (!cli_float(a, v, 0, 1, &s->top_p)) return -1;
        s->have_top_p = 1;
    } else if (!strcmp(a, "--min-p")) {
        if (!cli_float(a, v, 0, 1, &s->min_p)) return -1;
        s->have_min_p = 1;
    } else if (!strcmp(a, "--repeat-penalty")) {
        if (!cli_float(a, v, rp_min, 1e6, &s->repeat_penalty)) return -1;
        s->have_rp = 1;
    } else {
        if (!cli_int(a, v, 0, rln_max, &s->repeat_last_n)) return -1;
        s->have_rln = 1;
    }
    return 1;
}

void cli_samp_params(const cli_samp *s, const g4_model *m, const char *cmd, int verbose, g4_sampler_params *sp) {
    g4_sampler_defaults(m, sp);
    if (s->have_temp) sp->temp = (float)s->temp;
    if (s->have_top_k) sp->top_k = (int32_t)s->top_k;
    if (s->have_top_p) sp->top_p = (float)s->top_p;
    if (s->have_min_p) sp->min_p = (float)s->min_p;
    if (s->have_rp) sp->repeat_penalty = (float)s->repeat_penalty;
    if (s->have_rln) sp->repeat_last_n = (int32_t)s->repeat_last_n;
    sp->seed = s->have_seed ? (uint64_t)s->seed : (uint64_t)time(NULL);
    if (verbose || (!s->have_seed && sp->temp > 0))
        fprintf(stderr, "g4 %s: seed %llu\n", cmd, (unsigned long long)sp->seed);
}
