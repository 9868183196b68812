/* cli.h - subcommands of the g4 program. Each takes argv with argv[0] = its own name and
 * returns the process exit status: 0 ok, 1 runtime error (one line on stderr), 2 usage. */
#ifndef G4_CLI_H
#define G4_CLI_H

#include <stddef.h>
#include <stdint.h>

int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_serve(int argc, char **argv); /* server/serve.c */

/* ==== helpers shared by the subcommands (cli/util.c) ==== */

/* "-t 4": parses a whole decimal integer in [lo, hi]; returns 0 and prints a usage error
 * naming flag otherwise. */
int cli_int(const char *flag, const char *s, long lo, long hi, long *out);
int cli_float(const char *flag, const char *s, double lo, double hi, double *out);
/* log callback printing "g4: warning: ..." lines to stderr (levels <= *(int *)ud) */
void cli_log(void *ud, int level, const char *msg);
/* reads a whole file (for -f) into a malloc'ed buffer; NULL + message on error */
char *cli_read_file(const char *path, size_t *len);

/* Sampling flags shared by run and chat (-s --temp --top-k --top-p --min-p --repeat-penalty
 * --repeat-last-n); have_* = given on the command line. */
typedef struct cli_samp {
    int                have_seed, have_temp, have_top_k, have_top_p, have_min_p, have_rp, have_rln;
    unsigned long long seed;
    long               top_k, repeat_last_n;
    double             temp, top_p, min_p, repeat_penalty;
} cli_samp;
/* Parses the sampling flag at argv[*i] (its value at argv[*i + 1], *i advanced past it).
 * rp_min / rln_max: the command's bounds for --repeat-penalty / --repeat-last-n.
 * Returns 1 consumed, 0 not a sampling flag, -1 usage error (message printed as "g4 CMD: ..."). */
int cli_samp_arg(cli_samp *s, const char *cmd, int argc, char **argv, int *i, double rp_min, long rln_max);
/* g4_sampler_defaults(m), then the given flags; the seed is time-based when not given, and
 * printed on stderr when verbose or when it is random and sampling is not greedy. */
struct g4_sampler_params;
struct g4_model;
void cli_samp_params(const cli_samp *s, const struct g4_model *m, const char *cmd, int verbose,
                     struct g4_sampler_params *sp);

#endif
