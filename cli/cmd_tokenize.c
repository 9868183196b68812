/* cmd_tokenize.c - `g4 tokenize`: the token ids of a text, from the model's vocabulary only.
 *
 *   g4 tokenize -m MODEL (-p TEXT | -f FILE) [--ids] [--no-bos] [--no-parse-special]
 *
 * Default output: one "id -> 'piece'" line per token (control tokens shown as their text,
 * bytes that are not printable UTF-8 as \xHH). --ids: one line "[2, 9259, 1902]". Special
 * tokens are parsed by default (as llama.cpp's llama-tokenize). Opens the model with
 * vocab_only = 1, so vocabulary-only GGUFs work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "g4.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: g4 tokenize -m MODEL (-p TEXT | -f FILE) [options]\n"
            "\n"
            "Prints the tokens of TEXT (or of FILE's bytes) in MODEL's vocabulary.\n"
            "\n"
            "  -m, --model PATH      GGUF file (a vocabulary-only file is enough)\n"
            "  -p, --prompt TEXT     text to tokenize\n"
            "  -f, --file PATH       file whose bytes are tokenized\n"
            "      --ids             print only the ids, as [2, 9259, 1902]\n"
            "      --no-bos          do not prepend BOS\n"
            "      --no-parse-special  treat control-token text such as <|turn> as plain text\n"
            "  -h, --help            this help\n");
}

/* piece as readable text: printable bytes and valid UTF-8 as is, the rest escaped */
static void print_piece(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t k = c < 0x80 ? 1 : (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
        int ok = k > 0 && i + k <= n;
        for (size_t j = 1; ok && j < k; j++) ok = (p[i + j] & 0xc0) == 0x80;
        if (ok && k == 1) {
            if (c == '\n') fputs("\\n", stdout);
            else if (c == '\t') fputs("\\t", stdout);
            else if (c == '\r') fputs("\\r", stdout);
            else if (c == '\\') fputs("\\\\", stdout);
            else if (c == '\'') fputs("\\'", stdout);
            else if (c < 0x20 || c == 0x7f) printf("\\x%02X", c);
            else putchar(c);
            i++;
        } else if (ok) {
            fwrite(p + i, 1, k, stdout);
            i += k;
        } else {
            printf("\\x%02X", c);
            i++;
        }
    }
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *file = NULL;
    int ids_only = 0, bos = 1, special = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--ids")) ids_only = 1;
        else if (!strcmp(a, "--no-bos")) bos = 0;
        else if (!strcmp(a, "--no-parse-special")) special = 0;
        else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has_val) model = argv[++i];
        else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && has_val) prompt = argv[++i];
        else if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && has_val) file = argv[++i];
        else {
            int known = !strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-p") || !strcmp(a, "--prompt") ||
                        !strcmp(a, "-f") || !strcmp(a, "--file");
            fprintf(stderr, "g4 tokenize: %s '%s' (see g4 tokenize --help)\n", known ? "missing value for" : "unknown option", a);
            return 2;
        }
    }
    if (!model) { fprintf(stderr, "g4 tokenize: -m MODEL is required (see g4 tokenize --help)\n"); return 2; }
    if (!!prompt == !!file) { fprintf(stderr, "g4 tokenize: give exactly one of -p TEXT and -f FILE\n"); return 2; }

    size_t len = 0;
    char *text = NULL;
    if (file) {
        text = cli_read_file(file, &len);
        if (!text) return 1;
    } else {
        len = strlen(prompt);
    }
    const char *src = file ? text : prompt;

    int level = G4_LOG_WARN;
    g4_model_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.vocab_only = 1;
    mo.log = cli_log;
    mo.log_ud = &level;
    char err[512];
    g4_model *m = NULL;
    if (g4_model_open(&m, model, &mo, err, sizeof err) != G4_OK) {
        fprintf(stderr, "g4 tokenize: %s\n", err);
        free(text);
        return 1;
    }
    unsigned flags = (bos ? G4_TOK_ADD_BOS : 0) | (special ? G4_TOK_PARSE_SPECIAL : 0);
    size_t cap = len + 8, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    g4_status st = ids ? g4_tokenize(m, src, len, flags, ids, cap, &n) : G4_ERR_NOMEM;
    if (st == G4_ERR_BUFFER) { /* more tokens than bytes + 8 cannot happen, but be exact */
        int32_t *more = realloc(ids, n * sizeof *ids);
        st = more ? g4_tokenize(m, src, len, flags, (ids = more), n, &n) : G4_ERR_NOMEM;
    }
    int rc = 0;
    if (st != G4_OK) {
        fprintf(stderr, "g4 tokenize: %s\n", g4_status_str(st));
        rc = 1;
    } else if (ids_only) {
        putchar('[');
        for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", (int)ids[i]);
        puts("]");
    } else {
        char piece[1024];
        char *big = NULL;
        for (size_t i = 0; i < n && rc == 0; i++) {
            size_t pn = 0;
            const char *pp = piece;
            g4_status ps = g4_token_to_piece(m, ids[i], G4_PIECE_SPECIAL, piece, sizeof piece, &pn);
            if (ps == G4_ERR_BUFFER) {
                free(big);
                big = malloc(pn);
                ps = big ? g4_token_to_piece(m, ids[i], G4_PIECE_SPECIAL, big, pn, &pn) : G4_ERR_NOMEM;
                pp = big;
            }
            if (ps != G4_OK) { fprintf(stderr, "g4 tokenize: %s\n", g4_status_str(ps)); rc = 1; break; }
            printf("%6d -> '", (int)ids[i]);
            print_piece((const unsigned char *)pp, pn);
            puts("'");
        }
        free(big);
    }
    if (fflush(stdout) != 0 && rc == 0) { fprintf(stderr, "g4 tokenize: write error\n"); rc = 1; }
    free(ids);
    free(text);
    g4_model_close(m);
    return rc;
}
