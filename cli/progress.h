/* progress.h - progress and timing lines on stderr for long CLI operations (model open,
 * quantize, perplexity, bench).
 *
 * stderr a terminal: one line redrawn in place at most 10 times a second,
 *   "g4 quantize: 42.0% 123.4/293.8 MiB  56.7 MiB/s  ETA 0:03  blk.7.ffn_up.weight"
 * otherwise: a plain line every 5 seconds (G4_PROGRESS_INTERVAL overrides, in seconds; 0 =
 * every update), so logs of CI runs stay short. progress_end() clears the line and prints
 * the timing summary. stdout is never touched.
 */
#ifndef G4_CLI_PROGRESS_H
#define G4_CLI_PROGRESS_H

typedef struct cli_progress {
    const char *what;   /* "g4 quantize" */
    const char *unit;   /* "MiB", "chunks", ... */
    double      total;  /* units (0 = unknown) */
    double      t0, t_last;
    double      interval;
    int         tty, drawn, quiet;
} cli_progress;

double progress_now(void); /* monotonic seconds */

/* quiet = 1: no progress lines (summary still printed by progress_end) */
void progress_begin(cli_progress *p, const char *what, double total, const char *unit, int quiet);
/* done units so far; detail (may be NULL) is appended */
void progress_update(cli_progress *p, double done, const char *detail);
/* clears the live line, then prints "<what>: <summary>" unless summary is NULL; returns the
 * seconds since progress_begin */
double progress_end(cli_progress *p, const char *summary);
/* "1:02:03", "4:05", "7.2 s" */
void progress_fmt_secs(double s, char *buf, int cap);

#endif
