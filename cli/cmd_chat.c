/* cmd_chat.c - g4 chat: a conversation in the Gemma 4 turn format.
 *
 *   g4 chat -m MODEL [-sys TEXT] [--think]                  interactive: one user turn per line
 *   g4 chat -m MODEL -p "What is 2+2?" --temp 0 -n 64       one turn, then exit
 *
 * The context keeps the whole conversation: each turn appends only its own tokens
 * ("<turn|>\n" closing the model's answer, the user's turn and the generation prompt), so
 * earlier turns are never re-evaluated. Markers are tokenized with special parsing and user
 * text without (a user typing "<|turn>system" gets text, reliability.md #60). Answers stream
 * to stdout at UTF-8 boundaries; prompts ("> ") and messages go to stderr.
 * Exit: 0 ok (EOF ends the conversation), 1 runtime error, 2 usage, 130 interrupted.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chat.h"
#include "cli.h"
#include "g4.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: g4 chat -m MODEL [options]\n"
            "  -m, --model FILE       GGUF model\n"
            "  -sys, --system TEXT    system prompt\n"
            "  -p, --prompt TEXT      answer this one user message and exit (default: read one\n"
            "                         message per line from stdin until EOF)\n"
            "  --think                enable thinking (<|think|> in the system turn)\n"
            "  -n, --n-predict N      most tokens per answer (default -1: until end of turn)\n"
            "  -c, --ctx-size N       context size (default min(model context, 4096))\n"
            "  -t, --threads N        threads (default: online CPUs)\n"
            "  --no-repack            keep weights as stored, read in place (no repack or copy at open; llama.cpp's -nr)\n"
            "  -s, --seed N           sampler seed (default: time)\n"
            "  --temp X, --top-k N, --top-p X, --min-p X, --repeat-penalty X, --repeat-last-n N\n"
            "                         sampling (defaults from the model file, as g4 run)\n"
            "%s"
            "  -v, --verbose          loader messages, timings and speculative counts on stderr\n"
            "  -h, --help             this text\n", cli_spec_usage());
}

static volatile sig_atomic_t g_chat_interrupted;
static void on_sigint(int sig) { (void)sig; g_chat_interrupted = 1; }

typedef struct chat_opts {
    const char *model, *system, *prompt;
    int think, verbose, no_repack;
    long n_predict, n_ctx, threads;
    cli_samp samp;
    cli_spec spec;
} chat_opts;

static int parse_args(int argc, char **argv, chat_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_predict = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r;
#define NEED() do { if (!v) { fprintf(stderr, "g4 chat: %s needs a value\n", a); return 0; } i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return -1; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEED(); o->model = v; }
        else if (!strcmp(a, "-sys") || !strcmp(a, "--system")) { NEED(); o->system = v; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) { NEED(); o->prompt = v; }
        else if (!strcmp(a, "--think")) o->think = 1;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->verbose = 1;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { NEED(); if (!cli_int(a, v, -1, INT32_MAX, &o->n_predict)) return 0; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { NEED(); if (!cli_int(a, v, 0, INT32_MAX, &o->n_ctx)) return 0; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { NEED(); if (!cli_int(a, v, 0, 512, &o->threads)) return 0; }
        else if (!strcmp(a, "--no-repack") || !strcmp(a, "-nr")) o->no_repack = 1;
        else if ((r = cli_samp_arg(&o->samp, "chat", argc, argv, &i, 1e-6, 1 << 20)) != 0) { if (r < 0) return 0; }
        else if ((r = cli_spec_arg(&o->spec, "chat", argc, argv, &i)) != 0) { if (r < 0) return 0; }
        else { fprintf(stderr, "g4 chat: unknown option '%s'\n", a); return 0; }
#undef NEED
    }
    if (!o->model) { fprintf(stderr, "g4 chat: -m MODEL is required\n"); return 0; }
    if (!cli_spec_valid(&o->spec, "chat")) return 0;
    return 1;
}

/* growable id buffer filled by chat_tokenize */
typedef struct idbuf { int32_t *ids; size_t n, cap; } idbuf;

static g4_status tokenize_turn(const g4_model *m, const g4_chat_msg *msgs, size_t n, int first, int think, idbuf *b,
                               char *err, size_t errlen) {
    for (;;) {
        size_t got = 0;
        g4_status st = chat_tokenize(m, msgs, n, first, 1, think, !first, b->ids, b->cap, &got, err, errlen);
        if (st != G4_ERR_BUFFER) { b->n = got; return st; }
        int32_t *nb = realloc(b->ids, got * sizeof *nb);
        if (!nb) return G4_ERR_NOMEM;
        b->ids = nb;
        b->cap = got;
    }
}

static int idbuf_push(idbuf *b, const int32_t *t, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        int32_t *nb = realloc(b->ids, cap * sizeof *nb);
        if (!nb) return 0;
        b->ids = nb;
        b->cap = cap;
    }
    memcpy(b->ids + b->n, t, n * sizeof *t);
    b->n += n;
    return 1;
}

/* one line from stdin without its newline (malloc'ed; NULL at EOF) */
static char *read_line(size_t *len) {
    size_t cap = 256, n = 0;
    char *s = malloc(cap);
    int c = EOF;
    while (s && (c = getchar()) != EOF && c != '\n') {
        if (n + 1 == cap) {
            char *ns = cap > ((size_t)1 << 26) ? NULL : realloc(s, cap * 2);
            if (!ns) { free(s); return NULL; }
            s = ns;
            cap *= 2;
        }
        s[n++] = (char)c;
    }
    if (!s || (c == EOF && n == 0)) { free(s); return NULL; }
    if (n && s[n - 1] == '\r') n--;
    s[n] = 0;
    *len = n;
    return s;
}

int cmd_chat(int argc, char **argv) {
    chat_opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr < 0) return 0;
    if (pr == 0) { fprintf(stderr, "(g4 chat --help for usage)\n"); return 2; }

    int rc = 1, log_level = o.verbose ? G4_LOG_INFO : G4_LOG_WARN;
    char err[512];
    g4_model *m = NULL;
    g4_session *s = NULL;
    g4_sampler *smp = NULL;
    idbuf turn = {NULL, 0, 0}, hist = {NULL, 0, 0}; /* hist: every token in the session (speculative) */
    char *line = NULL;
    g4_assistant *asst = NULL;
    g4_spec *sp = NULL;
    cli_gen gen = {0};

    g4_model_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.n_threads = (int)o.threads;
    mo.no_repack = o.no_repack;
    mo.log = cli_log;
    mo.log_ud = &log_level;
    g4_status st = g4_model_open(&m, o.model, &mo, err, sizeof err);
    if (st != G4_OK) { fprintf(stderr, "g4 chat: %s\n", err); goto done; }
    g4_spec_opts spo;
    if (!cli_spec_setup(&o.spec, m, "chat", log_level, &spo, &asst)) goto done;
    g4_session_opts so;
    memset(&so, 0, sizeof so);
    so.n_ctx = (int32_t)o.n_ctx;
    if (spo.type != G4_SPEC_NONE) g4_spec_session_opts(&spo, &so);
    st = g4_session_create(&s, m, &so, err, sizeof err);
    if (st != G4_OK) { fprintf(stderr, "g4 chat: %s\n", err); goto done; }
    if (spo.type != G4_SPEC_NONE && (st = g4_spec_create(&sp, s, &spo, err, sizeof err)) != G4_OK) {
        fprintf(stderr, "g4 chat: %s\n", err);
        goto done;
    }
    g4_sampler_params sprm;
    cli_samp_params(&o.samp, m, "chat", o.verbose, &sprm);
    st = g4_sampler_create(&smp, m, &sprm, err, sizeof err);
    if (st != G4_OK) { fprintf(stderr, "g4 chat: %s\n", err); goto done; }
    if (cli_gen_init(&gen, s, smp, sp, so.n_logits - 1) != G4_OK) { fprintf(stderr, "g4 chat: out of memory\n"); goto done; }

    const int interactive = !o.prompt && isatty(STDIN_FILENO);
    void (*prev)(int) = signal(SIGINT, on_sigint);
    int first = 1, answered = 0;
    for (;;) {
        size_t len = 0;
        const char *text;
        if (o.prompt) {
            if (answered) break;
            text = o.prompt;
            len = strlen(text);
        } else {
            if (interactive) { fputs("> ", stderr); fflush(stderr); }
            free(line);
            line = read_line(&len);
            if (!line) break;
            if (len == 0) continue;
            text = line;
        }
        /* this turn's messages: [system] user on the first turn, then the user alone after
         * the closing of the previous answer */
        g4_chat_msg msgs[2];
        size_t nm = 0;
        if (first && o.system) msgs[nm++] = (g4_chat_msg){"system", o.system, strlen(o.system)};
        msgs[nm++] = (g4_chat_msg){"user", text, len};
        st = tokenize_turn(m, msgs, nm, first, o.think, &turn, err, sizeof err);
        if (st != G4_OK) { fprintf(stderr, "g4 chat: %s\n", st == G4_ERR_NOMEM ? "out of memory" : err); goto restore; }
        /* close the previous answer: "<turn|>" "\n" before the new turn */
        if (!first) {
            int32_t close[2];
            size_t nc = 0;
            static const char tail[] = "<turn|>\n";
            st = g4_tokenize(m, tail, sizeof tail - 1, G4_TOK_PARSE_SPECIAL, close, 2, &nc);
            if (st == G4_OK) st = g4_session_eval(s, close, nc);
            if (st != G4_OK) { fprintf(stderr, "g4 chat: %s\n", g4_session_errmsg(s)); goto restore; }
            if (!idbuf_push(&hist, close, nc)) { fprintf(stderr, "g4 chat: out of memory\n"); goto restore; }
        }
        first = 0;
        st = g4_session_eval(s, turn.ids, turn.n);
        if (st != G4_OK) {
            fprintf(stderr, "g4 chat: %s\n", st == G4_ERR_CTX_FULL ? "context full: the conversation no longer fits (-c)" :
                                                                     g4_session_errmsg(s));
            goto restore;
        }
        for (size_t i = 0; i < turn.n; i++) g4_sampler_accept(smp, turn.ids[i]);
        if (sp) { /* the speculative history: every token in the session */
            if (!idbuf_push(&hist, turn.ids, turn.n)) { fprintf(stderr, "g4 chat: out of memory\n"); goto restore; }
            if (g4_spec_begin(sp, hist.ids, hist.n) != G4_OK) { fprintf(stderr, "g4 chat: %s\n", g4_spec_errmsg(sp)); goto restore; }
        }

        /* the answer: every printed token ends up in the session (the end-of-turn token not),
         * from plain decode steps or verified speculative steps (cli_gen) */
        g4_detok dt;
        memset(&dt, 0, sizeof dt);
        char piece[1024];
        long n_gen = 0;
        int32_t tok = g4_sampler_sample(smp, g4_session_logits(s));
        g4_sampler_accept(smp, tok);
        while (!g_chat_interrupted && (o.n_predict < 0 || n_gen < o.n_predict)) {
            if (g4_model_is_eog(m, tok)) break;
            n_gen++;
            size_t k = g4_detok_push(&dt, m, tok, 0, piece, sizeof piece);
            fwrite(piece, 1, k, stdout);
            fflush(stdout);
            if (sp && !idbuf_push(&hist, &tok, 1)) { fprintf(stderr, "\ng4 chat: out of memory\n"); goto restore; }
            if (g_chat_interrupted || (o.n_predict >= 0 && n_gen >= o.n_predict)) st = cli_gen_flush(&gen, tok);
            else st = cli_gen_next(&gen, tok, o.n_predict >= 0 ? o.n_predict - n_gen : 0, &tok);
            if (st == G4_ERR_CTX_FULL && g4_session_n_past(s) >= g4_session_n_ctx(s)) {
                fprintf(stderr, "\ng4 chat: context full (%d tokens)\n", (int)g4_session_n_ctx(s));
                goto restore;
            }
            if (st != G4_OK) { fprintf(stderr, "\ng4 chat: %s\n", cli_gen_errmsg(&gen)); goto restore; }
        }
        size_t k = g4_detok_flush(&dt, piece, sizeof piece);
        fwrite(piece, 1, k, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        answered = 1;
        if (g_chat_interrupted) break;
    }
    if (o.verbose) cli_spec_report(sp, "chat");
    rc = g_chat_interrupted ? 130 : 0;
restore:
    signal(SIGINT, prev);
done:
    free(line);
    free(turn.ids);
    free(hist.ids);
    cli_gen_free(&gen);
    g4_spec_free(sp);
    g4_sampler_free(smp);
    g4_session_free(s);
    g4_assistant_close(asst);
    g4_model_close(m);
    return rc;
}
