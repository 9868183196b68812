/* g4.c - main(): the subcommand table and exit codes. The only code allowed to exit. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "g4.h"

typedef struct cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} cmd;

static const cmd CMDS[] = {
    { "run",        cmd_run,        "generate text (or ids) from a prompt" },
    { "chat",       cmd_chat,       "interactive chat in the Gemma 4 turn format" },
    { "bench",      cmd_bench,      "prompt-processing and generation speed (llama-bench style)" },
    { "perplexity", cmd_perplexity, "perplexity of a text file (llama-perplexity style)" },
    { "tokenize",   cmd_tokenize,   "show the token ids of a text" },
    { "info",       cmd_info,       "show a GGUF file's metadata, hyperparameters and tensors" },
    { "quantize",   cmd_quantize,   "convert a GGUF to another weight type" },
    { "serve",      cmd_serve,      "OpenAI-compatible HTTP server with a chat page" },
};
#define N_CMDS (sizeof CMDS / sizeof CMDS[0])

static void usage(FILE *out) {
    fprintf(out, "usage: g4 <command> [options]   (g4 <command> --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < N_CMDS; i++) fprintf(out, "  %-11s %s\n", CMDS[i].name, CMDS[i].help);
    fprintf(out, "\ng4 --version prints the version.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("g4 %s\n", g4_version());
        return 0;
    }
    for (size_t i = 0; i < N_CMDS; i++)
        if (!strcmp(argv[1], CMDS[i].name)) return CMDS[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "g4: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
