/* cmd_run.c - g4 run: one prompt, one completion, through the public API only.
 *
 *   g4 run -m MODEL -p "The capital of France is" -n 32          text in, text streamed out
 *   g4 run -m MODEL -p "2,17,33" --ids -n 16 --temp 0 --dump-logits L.f32
 *
 * --ids is the test contract: the prompt is comma-separated token ids used exactly as given
 * (no BOS), the output is the generated ids, comma-separated on one stdout line, exactly n of
 * them with -n n (no stop on end-of-generation tokens, so runs line up with llama.cpp's), and
 * --dump-logits writes the last prompt position's logits (after the soft-cap) as n_vocab
 * little-endian float32. Text mode tokenizes -p / -f with BOS (special tokens parsed) and
 * stops at an end-of-generation token.
 * Exit: 0 ok, 1 runtime error (one line on stderr), 2 usage, 130 interrupted.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "g4.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: g4 run -m MODEL (-p PROMPT | -f FILE) [options]\n"
            "  -m, --model FILE       GGUF model\n"
            "  -p, --prompt TEXT      prompt text (with --ids: comma-separated token ids)\n"
            "  -f, --file FILE        read the prompt from FILE\n"
            "  --ids                  prompt and output are token ids (no BOS added; with -n N exactly N ids out)\n"
            "  -n, --n-predict N      tokens to generate (default -1: until end of generation or context full)\n"
            "  -c, --ctx-size N       context size (default min(model context, 4096))\n"
            "  --ubatch N             prompt chunk size (default 128)\n"
            "  --cache-type T         KV cache type: f16 (default), f32, q8_0\n"
            "  -t, --threads N        threads (default: online CPUs)\n"
            "  --no-repack            keep weights as stored, read in place (no repack or copy at open; llama.cpp's -nr)\n"
            "  -s, --seed N           sampler seed (default: time)\n"
            "  --temp X               temperature (0 = greedy)\n"
            "  --top-k N, --top-p X, --min-p X, --repeat-penalty X, --repeat-last-n N\n"
            "                         sampling as llama.cpp (defaults from the model file, else\n"
            "                         top-k 40, top-p 0.95, min-p 0.05, temp 0.8, repeat 1.0 over 64)\n"
            "  --ignore-eos           do not stop at end-of-generation tokens\n"
            "  --dump-logits FILE     write the last prompt position's logits as n_vocab float32 (LE)\n"
            "  --prompt-cache FILE    reuse the state saved in FILE for the prompt's common prefix, and\n"
            "                         save the state after the prompt there (llama.cpp's --prompt-cache)\n"
            "  --prompt-cache-ro      with --prompt-cache: load only, do not write FILE\n"
            "  --expert-stats         mixture of experts: after the prompt, per MoE layer, how many experts\n"
            "                         its rows were routed to (stderr)\n"
            "%s"
            "  -v, --verbose          memory plan, timings, speculative counts and loader messages on stderr\n"
            "  -h, --help             this text\n", cli_spec_usage());
}

/* SIGINT: stop generating, flush, report, exit 130 (house-style §9). CLI-only state. */
static volatile sig_atomic_t g_interrupted;
static void on_sigint(int sig) { (void)sig; g_interrupted = 1; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "2,17,33" -> ids (malloc'ed); 0 on a syntax error */
static int parse_ids(const char *s, int32_t **out, size_t *n_out) {
    size_t cap = 16, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ') p++;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX) { free(ids); return 0; }
        if (n == cap) {
            int32_t *nb = realloc(ids, 2 * cap * sizeof *ids);
            if (!nb) { free(ids); return 0; }
            ids = nb;
            cap *= 2;
        }
        ids[n++] = (int32_t)v;
        p = end;
        while (*p == ' ') p++;
        if (*p == '\0') break;
        if (*p != ',') { free(ids); return 0; }
        p++;
    }
    *out = ids;
    *n_out = n;
    return 1;
}

static int write_logits(const char *path, const float *logits, int32_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "g4 run: %s: %s\n", path, strerror(errno));
        return 0;
    }
    int ok = 1;
    for (int32_t i = 0; i < n && ok; i++) { /* little-endian whatever the host */
        uint32_t u;
        memcpy(&u, &logits[i], 4);
        unsigned char b[4] = { (unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16), (unsigned char)(u >> 24) };
        ok = fwrite(b, 1, 4, f) == 4;
    }
    if (fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "g4 run: %s: write error\n", path);
    return ok;
}

typedef struct run_opts {
    const char *model, *prompt, *file, *dump, *cache, *pcache;
    int ids, verbose, ignore_eos, pcache_ro, expert_stats, no_repack;
    long n_predict, n_ctx, n_ubatch, threads;
    cli_samp samp;
    cli_spec spec;
} run_opts;

/* 1 ok, 0 usage error (message printed), -1 help printed */
static int parse_args(int argc, char **argv, run_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_predict = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r;
#define NEED() do { if (!v) { fprintf(stderr, "g4 run: %s needs a value\n", a); return 0; } i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return -1; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEED(); o->model = v; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) { NEED(); o->prompt = v; }
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) { NEED(); o->file = v; }
        else if (!strcmp(a, "--ids")) o->ids = 1;
        else if (!strcmp(a, "--ignore-eos")) o->ignore_eos = 1;
        else if (!strcmp(a, "--expert-stats")) o->expert_stats = 1;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->verbose = 1;
        else if (!strcmp(a, "--dump-logits")) { NEED(); o->dump = v; }
        else if (!strcmp(a, "--prompt-cache")) { NEED(); o->pcache = v; }
        else if (!strcmp(a, "--prompt-cache-ro")) o->pcache_ro = 1;
        else if (!strcmp(a, "--cache-type") || !strcmp(a, "-ctk")) { NEED(); o->cache = v; }
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { NEED(); if (!cli_int(a, v, -1, INT32_MAX, &o->n_predict)) return 0; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { NEED(); if (!cli_int(a, v, 0, INT32_MAX, &o->n_ctx)) return 0; }
        else if (!strcmp(a, "--ubatch") || !strcmp(a, "-ub")) { NEED(); if (!cli_int(a, v, 1, 1 << 20, &o->n_ubatch)) return 0; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { NEED(); if (!cli_int(a, v, 0, 512, &o->threads)) return 0; }
        else if (!strcmp(a, "--no-repack") || !strcmp(a, "-nr")) o->no_repack = 1;
        else if ((r = cli_samp_arg(&o->samp, "run", argc, argv, &i, 0, INT32_MAX)) != 0) { if (r < 0) return 0; }
        else if ((r = cli_spec_arg(&o->spec, "run", argc, argv, &i)) != 0) { if (r < 0) return 0; }
        else { fprintf(stderr, "g4 run: unknown option '%s'\n", a); return 0; }
#undef NEED
    }
    if (!o->model) { fprintf(stderr, "g4 run: -m MODEL is required\n"); return 0; }
    if (!cli_spec_valid(&o->spec, "run")) return 0;
    if (!o->prompt == !o->file) { fprintf(stderr, "g4 run: give exactly one of -p PROMPT or -f FILE\n"); return 0; }
    if (o->cache && strcmp(o->cache, "f16") && strcmp(o->cache, "f32") && strcmp(o->cache, "q8_0")) {
        fprintf(stderr, "g4 run: --cache-type expects f16, f32 or q8_0, got '%s'\n", o->cache);
        return 0;
    }
    return 1;
}

/* One line per MoE layer: experts used by the rows computed so far, fewest and most routings */
static int print_expert_stats(const g4_model *m, const g4_session *s) {
    const int32_t ne = g4_model_n_expert(m);
    if (ne <= 0) { fprintf(stderr, "g4 run: experts: the model has none\n"); return 1; }
    uint64_t *c = malloc((size_t)ne * sizeof *c);
    if (!c) { fprintf(stderr, "g4 run: out of memory\n"); return 0; }
    for (int32_t il = 0; il < g4_model_n_layer(m); il++) {
        if (g4_session_expert_counts(s, il, c, (size_t)ne) != G4_OK) continue; /* a dense layer */
        uint64_t lo = c[0], hi = c[0];
        int used = 0;
        for (int32_t e = 0; e < ne; e++) {
            used += c[e] > 0;
            if (c[e] < lo) lo = c[e];
            if (c[e] > hi) hi = c[e];
        }
        fprintf(stderr, "g4 run: experts: layer %d: %d of %d used, fewest %llu, most %llu routings\n", (int)il, used,
                (int)ne, (unsigned long long)lo, (unsigned long long)hi);
    }
    free(c);
    return 1;
}

/* Everything after argument parsing; returns the exit status. Resources are released by the
 * caller-visible cleanup at the end (one exit path). */
int cmd_run(int argc, char **argv) {
    run_opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr < 0) return 0;
    if (pr == 0) { fprintf(stderr, "(g4 run --help for usage)\n"); return 2; }

    int rc = 1, log_level = o.verbose ? G4_LOG_INFO : G4_LOG_WARN;
    char err[512];
    g4_model *m = NULL;
    g4_session *s = NULL;
    g4_sampler *smp = NULL;
    g4_assistant *asst = NULL;
    g4_spec *sp = NULL;
    cli_gen gen = { 0 };
    char *text = NULL;
    size_t text_len = 0;
    int32_t *prompt = NULL;
    size_t n_prompt = 0;

    /* prompt ids (syntax errors of --ids are usage errors) */
    if (o.file) {
        text = cli_read_file(o.file, &text_len);
        if (!text) return 1;
    } else {
        text_len = strlen(o.prompt);
    }
    const char *ptext = o.file ? text : o.prompt;
    if (o.ids) {
        char *z = malloc(text_len + 1);
        if (!z) { fprintf(stderr, "g4 run: out of memory\n"); goto done; }
        memcpy(z, ptext, text_len);
        z[text_len] = '\0';
        while (text_len && (z[text_len - 1] == '\n' || z[text_len - 1] == '\r' || z[text_len - 1] == ' ')) z[--text_len] = '\0';
        int ok = parse_ids(z, &prompt, &n_prompt);
        free(z);
        if (!ok) {
            fprintf(stderr, "g4 run: --ids expects comma-separated non-negative integers, got '%.60s'\n", ptext);
            rc = 2;
            goto done;
        }
    }

    g4_model_opts mo = {0};
    mo.n_threads = (int)o.threads;
    mo.no_repack = o.no_repack;
    mo.log = cli_log;
    mo.log_ud = &log_level;
    double t0 = now_s();
    g4_status st = g4_model_open(&m, o.model, &mo, err, sizeof err);
    if (st != G4_OK) { fprintf(stderr, "g4 run: %s\n", err); goto done; }
    double t_load = now_s() - t0;
    const int32_t n_vocab = g4_model_n_vocab(m);

    if (!o.ids) {
        size_t cap = text_len + 16;
        prompt = malloc(cap * sizeof *prompt);
        if (!prompt) { fprintf(stderr, "g4 run: out of memory\n"); goto done; }
        st = g4_tokenize(m, ptext, text_len, G4_TOK_ADD_BOS | G4_TOK_PARSE_SPECIAL, prompt, cap, &n_prompt);
        if (st == G4_ERR_BUFFER) {
            free(prompt);
            cap = n_prompt;
            prompt = malloc(cap * sizeof *prompt);
            if (!prompt) { fprintf(stderr, "g4 run: out of memory\n"); goto done; }
            st = g4_tokenize(m, ptext, text_len, G4_TOK_ADD_BOS | G4_TOK_PARSE_SPECIAL, prompt, cap, &n_prompt);
        }
        if (st != G4_OK) { fprintf(stderr, "g4 run: tokenize: %s\n", g4_status_str(st)); goto done; }
    }
    if (n_prompt == 0) { fprintf(stderr, "g4 run: the prompt is empty\n"); goto done; }

    g4_spec_opts spo;
    if (!cli_spec_setup(&o.spec, m, "run", log_level, &spo, &asst)) goto done;
    g4_session_opts so = {0};
    so.n_ctx = (int32_t)o.n_ctx;
    so.n_ubatch = (int32_t)o.n_ubatch;
    so.cache_type = !o.cache || !strcmp(o.cache, "f16") ? G4_CACHE_F16 : !strcmp(o.cache, "f32") ? G4_CACHE_F32 : G4_CACHE_Q8_0;
    if (spo.type != G4_SPEC_NONE) g4_spec_session_opts(&spo, &so);
    st = g4_session_create(&s, m, &so, err, sizeof err);
    if (st != G4_OK) { fprintf(stderr, "g4 run: %s\n", err); goto done; }

    if (o.verbose) {
        size_t kv = 0, scratch = 0;
        struct stat sb;
        double wmb = stat(o.model, &sb) == 0 ? (double)sb.st_size / 1048576.0 : 0.0;
        g4_session_memory(s, &kv, &scratch);
        fprintf(stderr, "g4 run: kernels %s, %d threads, n_ctx %d, load %.2f s\n", g4_model_kernels(m),
                g4_model_n_threads(m), (int)g4_session_n_ctx(s), t_load);
        size_t per_pos = 0, rings = 0;
        g4_session_kv_split(s, &per_pos, &rings);
        fprintf(stderr, "g4 run: memory: weights %.1f MiB mapped, KV cache %.2f MiB (%s: %zu bytes per position of context "
                "in the full-attention layers, %.2f MiB of sliding-window rings), scratch %.2f MiB\n",
                wmb, (double)kv / 1048576.0, o.cache ? o.cache : "f16", per_pos, (double)rings / 1048576.0,
                (double)scratch / 1048576.0);
        fprintf(stderr, "g4 run: prompt %zu tokens\n", n_prompt);
    }

    /* sampler */
    g4_sampler_params sprm;
    cli_samp_params(&o.samp, m, "run", o.verbose, &sprm);
    st = g4_sampler_create(&smp, m, &sprm, err, sizeof err);
    if (st != G4_OK) { fprintf(stderr, "g4 run: %s\n", err); goto done; }

    void (*prev)(int) = signal(SIGINT, on_sigint);

    /* prompt: with a prompt cache, what it holds of the prompt's prefix is kept (at least the
     * last token is evaluated again, for its logits) */
    double t1 = now_s();
    size_t reuse = 0;
    if (o.pcache && access(o.pcache, F_OK) == 0) {
        const size_t cap = (size_t)g4_session_n_ctx(s);
        int32_t *cached = malloc(cap * sizeof *cached);
        size_t n_cached = 0;
        if (!cached) { fprintf(stderr, "g4 run: out of memory\n"); signal(SIGINT, prev); goto done; }
        st = g4_session_load(s, o.pcache, cached, cap, &n_cached);
        if (st != G4_OK) {
            fprintf(stderr, "g4 run: prompt cache: %s\n", g4_session_errmsg(s));
            free(cached);
            signal(SIGINT, prev);
            goto done;
        }
        size_t common = 0;
        while (common < n_cached && common < n_prompt && cached[common] == prompt[common]) common++;
        free(cached);
        if (common >= n_prompt) common = n_prompt - 1;
        reuse = (size_t)g4_session_truncate(s, (int32_t)common);
        if (o.verbose) fprintf(stderr, "g4 run: prompt cache %s: %zu of %zu prompt tokens reused\n", o.pcache, reuse, n_prompt);
    }
    st = g4_session_eval(s, prompt + reuse, n_prompt - reuse);
    if (st != G4_OK) { fprintf(stderr, "g4 run: prompt: %s\n", g4_session_errmsg(s)); signal(SIGINT, prev); goto done; }
    if (o.pcache && !o.pcache_ro && g4_session_save(s, o.pcache, prompt, n_prompt) != G4_OK) {
        fprintf(stderr, "g4 run: prompt cache: %s\n", g4_session_errmsg(s));
        st = G4_ERR_IO;
        signal(SIGINT, prev);
        goto done;
    }
    double t_prompt = now_s() - t1;
    const float *logits = g4_session_logits(s);
    if (o.dump && !write_logits(o.dump, logits, n_vocab)) { signal(SIGINT, prev); goto done; }
    if (o.expert_stats && !print_expert_stats(m, s)) { signal(SIGINT, prev); goto done; }
    for (size_t i = 0; i < n_prompt; i++) g4_sampler_accept(smp, prompt[i]);
    if (spo.type != G4_SPEC_NONE) {
        st = g4_spec_create(&sp, s, &spo, err, sizeof err);
        if (st == G4_OK) st = g4_spec_begin(sp, prompt, n_prompt);
        if (st != G4_OK) { fprintf(stderr, "g4 run: %s\n", sp ? g4_spec_errmsg(sp) : err); signal(SIGINT, prev); goto done; }
        if (o.verbose) fprintf(stderr, "g4 run: speculative decoding: %s\n", g4_spec_type_name(spo.type));
    }
    if (cli_gen_init(&gen, s, smp, sp, so.n_logits - 1) != G4_OK) { fprintf(stderr, "g4 run: out of memory\n"); signal(SIGINT, prev); goto done; }

    /* generation */
    g4_detok dt = {0};
    char piece[1024];
    long n_gen = 0;
    double t2 = now_s();
    /* --ids with -n N: exactly N ids (parity runs); otherwise stop at end of generation */
    int stop_eog = !o.ignore_eos && (!o.ids || o.n_predict < 0), ctx_full = 0;
    /* tok: the next token to print; cli_gen_next evaluates it (one decode step, or a
     * speculative step that may return several verified tokens) and gives the one after */
    int32_t tok = g4_sampler_sample(smp, logits);
    g4_sampler_accept(smp, tok);
    for (;;) {
        if (o.n_predict >= 0 && n_gen >= o.n_predict) break;
        if (g_interrupted) break;
        if (stop_eog && g4_model_is_eog(m, tok)) break;
        n_gen++;
        if (o.ids) printf("%s%d", n_gen > 1 ? "," : "", (int)tok);
        else {
            size_t k = g4_detok_push(&dt, m, tok, 0, piece, sizeof piece);
            fwrite(piece, 1, k, stdout);
        }
        fflush(stdout);
        if (o.n_predict >= 0 && n_gen >= o.n_predict) break;
        st = cli_gen_next(&gen, tok, o.n_predict >= 0 ? o.n_predict - n_gen : 0, &tok);
        if (st == G4_ERR_CTX_FULL && g4_session_n_past(s) >= g4_session_n_ctx(s)) { ctx_full = 1; break; }
        if (st != G4_OK) { fprintf(stderr, "\ng4 run: %s\n", cli_gen_errmsg(&gen)); signal(SIGINT, prev); goto done; }
    }
    double t_gen = now_s() - t2;
    signal(SIGINT, prev);
    if (o.ids) printf("\n");
    else {
        size_t k = g4_detok_flush(&dt, piece, sizeof piece);
        fwrite(piece, 1, k, stdout);
        if (n_gen) printf("\n");
    }
    fflush(stdout);
    if (ctx_full) fprintf(stderr, "g4 run: context full (%d tokens), stopped\n", (int)g4_session_n_ctx(s));
    if (o.verbose) {
        fprintf(stderr, "g4 run: prompt %zu tokens in %.3f s (%.2f tok/s)\n", n_prompt, t_prompt,
                t_prompt > 0 ? (double)n_prompt / t_prompt : 0.0);
        fprintf(stderr, "g4 run: generated %ld tokens in %.3f s (%.2f tok/s)\n", n_gen, t_gen,
                t_gen > 0 && n_gen > 1 ? (double)(n_gen - 1) / t_gen : 0.0);
        cli_spec_report(sp, "run");
    }
    rc = g_interrupted ? 130 : 0;

done:
    cli_gen_free(&gen);
    g4_spec_free(sp);
    g4_sampler_free(smp);
    g4_session_free(s);
    g4_assistant_close(asst);
    g4_model_close(m);
    free(prompt);
    free(text);
    return rc;
}
