/* cmd_todo.c - subcommands not written yet say so plainly (weak: the real implementation,
 * when its file exists, replaces each one at link time). */
#include <stdio.h>

#include "cli.h"

#define TODO(fn, name, issue)                                                                  \
    __attribute__((weak)) int fn(int argc, char **argv) {                                      \
        (void)argc; (void)argv;                                                                \
        fprintf(stderr, "g4 %s: not implemented yet (tracked in issue %d)\n", name, issue);     \
        return 1;                                                                              \
    }

TODO(cmd_run, "run", 4)
TODO(cmd_chat, "chat", 5)
TODO(cmd_tokenize, "tokenize", 5)
