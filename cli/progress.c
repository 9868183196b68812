/* progress.c - see progress.h. */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double progress_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_fmt_secs(double s, char *buf, int cap) {
    if (!(s >= 0) || s > 1e8) { snprintf(buf, (size_t)cap, "?"); return; }
    if (s < 60) { snprintf(buf, (size_t)cap, "%.1f s", s); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, (size_t)cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, (size_t)cap, "%ld:%02ld", t / 60, t % 60);
}

void progress_begin(cli_progress *p, const char *what, double total, const char *unit, int quiet) {
    p->what = what;
    p->unit = unit ? unit : "";
    p->total = total;
    p->t0 = p->t_last = progress_now();
    p->tty = isatty(2);
    p->drawn = 0;
    p->quiet = quiet;
    p->interval = p->tty ? 0.1 : 5.0;
    const char *e = getenv("G4_PROGRESS_INTERVAL");
    if (e && *e) {
        char *end;
        double v = strtod(e, &end);
        if (!*end && v >= 0 && v < 1e6) p->interval = v;
    }
}

void progress_update(cli_progress *p, double done, const char *detail) {
    if (p->quiet) return;
    double now = progress_now();
    if (now - p->t_last < p->interval && !(p->total > 0 && done >= p->total && p->tty)) return;
    p->t_last = now;
    double el = now - p->t0;
    double rate = el > 0 ? done / el : 0;
    char eta[32] = "?";
    if (p->total > 0 && rate > 0) progress_fmt_secs((p->total - done) / rate, eta, sizeof eta);
    char line[256];
    const int dec = strcmp(p->unit, "MiB") == 0 ? 1 : 0; /* counted units print as integers */
    if (p->total > 0)
        snprintf(line, sizeof line, "%s: %5.1f%% %.*f/%.*f %s  %.2f %s/s  ETA %s%s%s", p->what, 100.0 * done / p->total,
                 dec, done, dec, p->total, p->unit, rate, p->unit, eta, detail ? "  " : "", detail ? detail : "");
    else
        snprintf(line, sizeof line, "%s: %.*f %s  %.2f %s/s%s%s", p->what, dec, done, p->unit, rate, p->unit,
                 detail ? "  " : "", detail ? detail : "");
    if (p->tty) {
        fprintf(stderr, "\r%s\033[K", line);
        p->drawn = 1;
    } else {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
}

double progress_end(cli_progress *p, const char *summary) {
    double el = progress_now() - p->t0;
    if (p->drawn) fprintf(stderr, "\r\033[K");
    p->drawn = 0;
    if (summary) fprintf(stderr, "%s: %s\n", p->what, summary);
    fflush(stderr);
    return el;
}
