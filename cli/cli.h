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

/* ==== helpers shared by the subcommands (cli/util.c) ==== */

/* "-t 4": parses a whole decimal integer in [lo, hi]; returns 0 and prints a usage error
 * naming flag otherwise. */
int cli_int(const char *flag, const char *s, long lo, long hi, long *out);
int cli_float(const char *flag, const char *s, double lo, double hi, double *out);
/* log callback printing "g4: warning: ..." lines to stderr (levels <= *(int *)ud) */
void cli_log(void *ud, int level, const char *msg);
/* reads a whole file (for -f) into a malloc'ed buffer; NULL + message on error */
char *cli_read_file(const char *path, size_t *len);

#endif
