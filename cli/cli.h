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

/* ==== speculative decoding for run and chat (cli/spec.c) ==== */

struct g4_spec_opts;
struct g4_assistant;
struct g4_spec;
struct g4_session;
struct g4_sampler;

typedef struct cli_spec {
    const char *draft_model; /* -md */
    int         type, have_type;
    long        n_max, n_min, ngram_n, ngram_m; /* 0 = the library's defaults */
    double      p_min;
} cli_spec;
/* Parses a speculative-decoding flag at argv[*i] (as cli_samp_arg). */
int         cli_spec_arg(cli_spec *c, const char *cmd, int argc, char **argv, int *i);
const char *cli_spec_usage(void);
/* 0 and a usage message when the flags contradict each other (after parsing) */
int         cli_spec_valid(const cli_spec *c, const char *cmd);
/* Fills o from the flags (type none when speculative decoding is off); opens the assistant
 * for draft-mtp (*asst, close with g4_assistant_close). 0 and a message on error. */
int cli_spec_setup(const cli_spec *c, struct g4_model *m, const char *cmd, int log_level, struct g4_spec_opts *o,
                   struct g4_assistant **asst);
/* "g4 CMD: speculative: ..." counts on stderr (-v); nothing for NULL */
void cli_spec_report(const struct g4_spec *sp, const char *cmd);

/* The tokens of a generation, from plain decode steps or from g4_spec_step. The caller
 * emits tok, then asks for the one after it: cli_gen_next puts tok in the session (or finds
 * it there) and returns the next (already given to g4_sampler_accept). budget: most tokens
 * still wanted after tok (<= 0: no limit). */
typedef struct cli_gen {
    struct g4_session *s;
    struct g4_sampler *smp;
    struct g4_spec    *sp;  /* NULL = plain decoding */
    int32_t           *pend; /* [cap] the last step's tokens */
    size_t             np, ip, cap;
} cli_gen;
int         cli_gen_init(cli_gen *g, struct g4_session *s, struct g4_sampler *smp, struct g4_spec *sp, int32_t n_max);
void        cli_gen_free(cli_gen *g);
int         cli_gen_next(cli_gen *g, int32_t tok, long budget, int32_t *next);
/* Makes tok (the last emitted) the session's last position and drops unemitted tokens. */
int         cli_gen_flush(cli_gen *g, int32_t tok);
const char *cli_gen_errmsg(const cli_gen *g);

#endif
