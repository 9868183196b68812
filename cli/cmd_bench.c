/* cmd_bench.c - g4 bench: prompt-processing and generation speed, as llama-bench measures it.
 *
 *   g4 bench -m MODEL [-t 1,2] [-p 512] [-n 128] [-r 5] [-ub 512] [-o md|json]
 *   g4 bench -m MODEL -np 1,4,8 [-p 128] [-n 32] ...   (batched: llama-batched-bench)
 *   g4 bench -m MODEL -d 0,4096 ...                      (tests after a prefilled context)
 *
 * Every combination of the comma lists runs: for each model and thread count (the model is
 * opened once per thread count, since g4_model_opts.n_threads is fixed at open), a pp test
 * per -p value (BOS + random ids evaluated as one prompt from an empty cache) and a tg test
 * per -n value (BOS then random ids, one token per eval, from an empty cache); with -d LIST
 * (llama-bench's --n-depth) every test runs after that many random tokens are already in
 * the cache (prefilled once, untimed; each repetition truncates back to the depth, or
 * prefills again when a sliding ring cannot go back that far). Each test runs
 * once untimed (warm-up, unless --no-warmup), then -r timed repetitions; a repetition's rate
 * is tokens / seconds of g4_session_eval calls only (no tokenization, no sampling). The
 * table shows mean ± sample standard deviation of the repetitions' rates.
 *
 * With -np LIST the tests are batched instead (bench_batch.c): for each N in LIST, N
 * sessions evaluate a -p token prompt each in one g4_batch_eval, then decode -n tokens
 * together; the table shows the prompt rate and the aggregate and per-sequence decode
 * rates (llama-batched-bench's S_PP, S_TG), mean ± stddev over -r repetitions.
 *
 * stdout: llama-bench's Markdown table (rows printed as tests finish) or, with -o json, one
 * JSON array at the end. stderr: load timings, progress, a summary.
 * Exit: 0 ok, 1 runtime error, 2 usage, 130 interrupted (rows done so far are printed).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_batch.h"
#include "cli.h"
#include "g4.h"
#include "g4_impl.h"
#include "gguf.h"
#include "progress.h"
#include "quant/quant.h"

#define MAX_LIST 32
#define MAX_MODELS 16

static void usage(FILE *out) {
    fprintf(out,
            "usage: g4 bench -m MODEL [options]\n"
            "  -m, --model FILE        GGUF model (repeat for several)\n"
            "  -t, --threads LIST      thread counts, comma-separated (default: online CPUs)\n"
            "  -p, --n-prompt LIST     prompt lengths for pp tests (default 512; 0 = none)\n"
            "  -n, --n-gen LIST        generated tokens for tg tests (default 128; 0 = none)\n"
            "  -r, --repetitions N     timed repetitions per test (default 5)\n"
            "  -ub, --ubatch-size LIST prompt chunk size (default 512)\n"
            "  -d, --n-depth LIST      tokens already in the cache before each test (default 0)\n"
            "  -np, -npl LIST          batched: sequences decoding together (llama-batched-bench;\n"
            "                          -p/-n are then per sequence, defaults 128 / 32)\n"
            "  -ctk, --cache-type-k T  KV cache type: f16 (default), f32, q8_0\n"
            "  -o, --output md|json    output format (default md)\n"
            "  --no-warmup             skip the untimed warm-up run\n"
            "  -s, --seed N            seed of the synthetic tokens (default 1)\n"
            "  -v, --verbose           loader messages on stderr\n"
            "  -h, --help              this text\n"
            "Every combination of the lists runs; rates are tokens per second, mean ± stddev over -r runs.\n");
}

static volatile sig_atomic_t g_int;
static void on_sigint(int sig) { (void)sig; g_int = 1; }

/* "1,2,4" -> vals; 0 + message on error */
static int parse_list(const char *flag, const char *s, long lo, long hi, long *vals, int *n) {
    char buf[512];
    if (!s || strlen(s) >= sizeof buf) { fprintf(stderr, "g4 bench: %s: list too long\n", flag); return 0; }
    strcpy(buf, s);
    *n = 0;
    char *tok = buf;
    for (;;) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        if (*n >= MAX_LIST) { fprintf(stderr, "g4 bench: %s: at most %d values\n", flag, MAX_LIST); return 0; }
        if (!cli_int(flag, tok, lo, hi, &vals[*n])) return 0;
        (*n)++;
        if (!comma) break;
        tok = comma + 1;
    }
    if (*n == 0 || s[0] == ',' || s[strlen(s) - 1] == ',') {
        fprintf(stderr, "g4 bench: %s expects a comma-separated list of integers from %ld to %ld, got '%s'\n", flag, lo, hi, s);
        return 0;
    }
    return 1;
}

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* llama_model_ftype_name for the file types g4 writes or reads */
static const char *ftype_name(uint32_t ft) {
    switch (ft) {
    case 0: return "all F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K - Medium";
    case 11: return "Q3_K - Small";
    case 12: return "Q3_K - Medium";
    case 13: return "Q3_K - Large";
    case 14: return "Q4_K - Small";
    case 15: return "Q4_K - Medium";
    case 16: return "Q5_K - Small";
    case 17: return "Q5_K - Medium";
    case 18: return "Q6_K";
    case 25: return "IQ4_NL - 4.5 bpw";
    case 30: return "IQ4_XS - 4.25 bpw";
    case 32: return "BF16";
    default: return NULL;
    }
}

typedef struct model_desc {
    char     name[160];   /* "gemma4 E2B Q4_K - Medium" */
    uint64_t size;        /* tensor bytes */
    uint64_t params;
    uint64_t decode_bytes; /* weights one decoded token reads (g4_model_decode_bytes) */
} model_desc;

static void describe(const g4_model *m, model_desc *d) {
    const gguf_file *f = m->gguf;
    uint64_t by_type[G4_TYPE_COUNT] = {0};
    d->size = d->params = 0;
    d->decode_bytes = g4_model_decode_bytes(m);
    for (size_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        uint64_t ne = (uint64_t)t->ne[0] * (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
        d->size += t->nbytes;
        d->params += ne;
        if (t->n_dims >= 2 && t->type < G4_TYPE_COUNT) by_type[t->type] += ne;
    }
    const char *arch = g4_model_meta_str(m, "general.architecture");
    const char *label = g4_model_meta_str(m, "general.size_label");
    const gguf_kv *ft = gguf_find(f, "general.file_type");
    const char *fts = ft && ft->type == GGUF_UINT32 ? ftype_name(ft->v.u32) : NULL;
    char guess[48];
    if (!fts) { /* no file type: llama.cpp's guess from the most common matrix type */
        static const struct { uint32_t type, ft; } G[] = {
            { G4_TYPE_F32, 0 }, { G4_TYPE_F16, 1 }, { G4_TYPE_Q4_0, 2 }, { G4_TYPE_Q4_1, 3 }, { G4_TYPE_Q8_0, 7 },
            { G4_TYPE_Q5_0, 8 }, { G4_TYPE_Q5_1, 9 }, { G4_TYPE_Q2_K, 10 }, { G4_TYPE_Q3_K, 12 }, { G4_TYPE_Q4_K, 15 },
            { G4_TYPE_Q5_K, 17 }, { G4_TYPE_Q6_K, 18 }, { G4_TYPE_IQ4_NL, 25 }, { G4_TYPE_IQ4_XS, 30 }, { G4_TYPE_BF16, 32 },
        };
        uint32_t best = 0;
        for (uint32_t t = 0; t < G4_TYPE_COUNT; t++) if (by_type[t] > by_type[best]) best = t;
        const char *gn = NULL;
        for (size_t k = 0; k < sizeof G / sizeof G[0]; k++) if (G[k].type == best) gn = ftype_name(G[k].ft);
        char b[32];
        snprintf(guess, sizeof guess, "%s (guessed)", gn ? gn : quant_type_name(best, b, sizeof b));
        fts = guess;
    }
    char sz[32];
    if (label && strlen(label) < 24) snprintf(sz, sizeof sz, "%s", label);
    else if (d->params >= 1000000000ull) snprintf(sz, sizeof sz, "%.1fB", (double)d->params / 1e9);
    else snprintf(sz, sizeof sz, "%.1fM", (double)d->params / 1e6);
    snprintf(d->name, sizeof d->name, "%.40s %s %s", arch ? arch : "?", sz, fts);
}

typedef struct result {
    int      model;
    long     n_prompt, n_gen, threads, ubatch;
    long     np;            /* batched tests: sequences (0 = a llama-bench test) */
    long     depth;         /* tokens in the cache before the test */
    double   pp_avg, pp_sd; /* batched: prompt tokens/s over all sequences */
    double   avg, sd;       /* tokens/s */
    double   avg_ns, sd_ns; /* per repetition */
    double   samples_ts[64], samples_ns[64];
    int      n_samples;
} result;

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static void md_header(void) {
    printf("| %-30s | %10s | %10s | %7s | %15s | %20s |\n", "model", "size", "params", "threads", "test", "t/s");
    printf("| %.30s | %.10s | %.10s | %.7s | %.15s | %.20s |\n", "------------------------------", "---------:",
           "---------:", "------:", "--------------:", "-------------------:");
    fflush(stdout);
}

static void md_row(const model_desc *d, const result *r) {
    char size[32], params[32], test[32], ts[48];
    if (d->size >= (1ull << 30)) snprintf(size, sizeof size, "%.2f GiB", (double)d->size / (1024.0 * 1024.0 * 1024.0));
    else snprintf(size, sizeof size, "%.2f MiB", (double)d->size / (1024.0 * 1024.0));
    if (d->params >= 1000000000ull) snprintf(params, sizeof params, "%.2f B", (double)d->params / 1e9);
    else snprintf(params, sizeof params, "%.2f M", (double)d->params / 1e6);
    if (r->n_prompt) snprintf(test, sizeof test, "pp%ld", r->n_prompt);
    else snprintf(test, sizeof test, "tg%ld", r->n_gen);
    if (r->depth) snprintf(test + strlen(test), sizeof test - strlen(test), " @ d%ld", r->depth);
    snprintf(ts, sizeof ts, "%.2f ± %.2f", r->avg, r->sd);
    /* "±" is two bytes in UTF-8: pad by one more so the column lines up */
    printf("| %-30.30s | %10s | %10s | %7ld | %15s | %21s |\n", d->name, size, params, r->threads, test, ts);
    fflush(stdout);
}

static void md_header_np(void) {
    printf("| %-30s | %7s | %4s | %5s | %5s | %18s | %18s | %12s |\n", "model", "threads", "B", "PP", "TG", "S_PP t/s",
           "S_TG t/s", "S_TG/seq t/s");
    printf("| %.30s | %.7s | %.4s | %.5s | %.5s | %.18s | %.18s | %.12s |\n", "------------------------------", "------:",
           "---:", "----:", "----:", "-----------------:", "-----------------:", "-----------:");
    fflush(stdout);
}

static void md_row_np(const model_desc *d, const result *r) {
    char pp[48], tg[48], per[32];
    snprintf(pp, sizeof pp, "%.2f ± %.2f", r->pp_avg, r->pp_sd);
    snprintf(tg, sizeof tg, "%.2f ± %.2f", r->avg, r->sd);
    snprintf(per, sizeof per, "%.2f", r->avg / (double)r->np);
    printf("| %-30.30s | %7ld | %4ld | %5ld | %5ld | %19s | %19s | %12s |\n", d->name, r->threads, r->np, r->n_prompt,
           r->n_gen, pp, tg, per);
    fflush(stdout);
}

static void json_all(const model_desc *d, const char *const *paths, const result *rs, int n, const char *kernels[]) {
    printf("[\n");
    for (int i = 0; i < n; i++) {
        const result *r = &rs[i];
        printf("  {\"model_filename\": ");
        json_str(paths[r->model]);
        printf(", \"model_type\": ");
        json_str(d[r->model].name);
        printf(", \"model_size\": %" PRIu64 ", \"model_n_params\": %" PRIu64 ", \"decode_bytes\": %" PRIu64
               ", \"backends\": \"CPU\", \"kernels\": ", d[r->model].size, d[r->model].params, d[r->model].decode_bytes);
        json_str(kernels[r->model] ? kernels[r->model] : "");
        if (r->np)
            printf(", \"n_parallel\": %ld, \"pp_avg_ts\": %.6f, \"pp_stddev_ts\": %.6f, \"tg_per_seq_ts\": %.6f", r->np,
                   r->pp_avg, r->pp_sd, r->avg / (double)r->np);
        printf(", \"n_ubatch\": %ld, \"n_threads\": %ld, \"n_prompt\": %ld, \"n_gen\": %ld, \"n_depth\": %ld, \"test\": \"%s%ld\", "
               "\"avg_ns\": %.0f, \"stddev_ns\": %.0f, \"avg_ts\": %.6f, \"stddev_ts\": %.6f, \"samples_ns\": [",
               r->ubatch, r->threads, r->n_prompt, r->n_gen, r->depth, r->n_prompt && !r->np ? "pp" : "tg",
               r->n_prompt && !r->np ? r->n_prompt : r->n_gen,
               r->avg_ns, r->sd_ns, r->avg, r->sd);
        for (int k = 0; k < r->n_samples; k++) printf("%s%.0f", k ? ", " : "", r->samples_ns[k]);
        printf("], \"samples_ts\": [");
        for (int k = 0; k < r->n_samples; k++) printf("%s%.6f", k ? ", " : "", r->samples_ts[k]);
        printf("]}%s\n", i + 1 < n ? "," : "");
    }
    printf("]\n");
    fflush(stdout);
}

/* Brings s to `depth` random tokens in the cache: truncates when it holds them already,
 * else prefills (untimed). *have = the depth s holds. 0 on error. */
static int at_depth(g4_session *s, const g4_model *m, long depth, long *have, int32_t *toks, uint64_t seed) {
    if (*have == depth && g4_session_truncate(s, (int32_t)depth) == (int32_t)depth) return 1;
    g4_session_reset(s);
    *have = 0;
    if (depth > 0) {
        const int32_t nv = g4_model_n_vocab(m), bos = g4_model_token_bos(m);
        uint64_t rng = seed ^ 0x5eedd0u;
        for (long i = 0; i < depth; i++) toks[i] = (int32_t)(rng_next(&rng) % (uint64_t)nv);
        if (bos >= 0) toks[0] = bos;
        if (g4_session_eval(s, toks, (size_t)depth) != G4_OK) return 0;
    }
    *have = depth;
    return 1;
}

/* one timed run after `depth` cached tokens: seconds spent in the test's g4_session_eval
 * calls, or < 0 on error */
static double run_once(g4_session *s, const g4_model *m, long depth, long *have, long n_prompt, long n_gen, int32_t *toks,
                       uint64_t *rng, uint64_t seed) {
    const int32_t nv = g4_model_n_vocab(m), bos = g4_model_token_bos(m);
    if (!at_depth(s, m, depth, have, toks, seed)) return -1;
    long n = n_prompt ? n_prompt : n_gen;
    for (long i = 0; i < n; i++) toks[i] = (int32_t)(rng_next(rng) % (uint64_t)nv);
    if (bos >= 0 && depth == 0) toks[0] = bos;
    double t0 = progress_now();
    if (n_prompt) {
        if (g4_session_eval(s, toks, (size_t)n_prompt) != G4_OK) return -1;
    } else {
        for (long i = 0; i < n_gen && !g_int; i++)
            if (g4_session_eval(s, &toks[i], 1) != G4_OK) return -1;
    }
    return progress_now() - t0;
}

int cmd_bench(int argc, char **argv) {
    const char *models[MAX_MODELS];
    int n_models = 0, json = 0, warmup = 1, verbose = 0;
    long th[MAX_LIST], pp[MAX_LIST], tg[MAX_LIST], ub[MAX_LIST], npl[MAX_LIST], dep[MAX_LIST], reps = 5;
    int n_th = 0, n_pp = 1, n_tg = 1, n_ub = 1, n_np = 0, have_pp = 0, have_tg = 0, n_dep = 1;
    dep[0] = 0;
    pp[0] = 512; tg[0] = 128; ub[0] = 512;
    const char *cache = NULL;
    unsigned long long seed = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED() do { if (!v) { fprintf(stderr, "g4 bench: %s needs a value\n", a); return 2; } i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            NEED();
            if (n_models >= MAX_MODELS) { fprintf(stderr, "g4 bench: at most %d models\n", MAX_MODELS); return 2; }
            models[n_models++] = v;
        }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { NEED(); if (!parse_list(a, v, 1, 512, th, &n_th)) return 2; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt") || !strcmp(a, "-npp")) {
            NEED();
            if (!parse_list(a, v, 0, 1 << 20, pp, &n_pp)) return 2;
            have_pp = 1;
        }
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen") || !strcmp(a, "-ntg")) {
            NEED();
            if (!parse_list(a, v, 0, 1 << 20, tg, &n_tg)) return 2;
            have_tg = 1;
        }
        else if (!strcmp(a, "-d") || !strcmp(a, "--n-depth")) { NEED(); if (!parse_list(a, v, 0, 1 << 20, dep, &n_dep)) return 2; }
        else if (!strcmp(a, "-np") || !strcmp(a, "-npl") || !strcmp(a, "--n-parallel")) {
            NEED();
            if (!parse_list(a, v, 1, G4_BATCH_MAX_SEQ, npl, &n_np)) return 2;
        }
        else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch-size")) { NEED(); if (!parse_list(a, v, 1, 1 << 16, ub, &n_ub)) return 2; }
        else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) { NEED(); if (!cli_int(a, v, 1, 64, &reps)) return 2; }
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            NEED();
            if (!strcmp(v, "md")) json = 0;
            else if (!strcmp(v, "json")) json = 1;
            else { fprintf(stderr, "g4 bench: %s expects md or json, got '%s'\n", a, v); return 2; }
        }
        else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") || !strcmp(a, "--cache-type")) {
            NEED();
            if (strcmp(v, "f16") && strcmp(v, "f32") && strcmp(v, "q8_0")) {
                fprintf(stderr, "g4 bench: %s expects f16, f32 or q8_0, got '%s'\n", a, v);
                return 2;
            }
            cache = v;
        }
        else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
            NEED();
            char *end;
            errno = 0;
            seed = strtoull(v, &end, 10);
            if (!*v || *end || errno || *v == '-') { fprintf(stderr, "g4 bench: %s expects a non-negative integer, got '%s'\n", a, v); return 2; }
        }
        else if (!strcmp(a, "--no-warmup")) warmup = 0;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) verbose = 1;
        else { fprintf(stderr, "g4 bench: unknown option '%s'\n(g4 bench --help for usage)\n", a); return 2; }
#undef NEED
    }
    if (!n_models) { fprintf(stderr, "g4 bench: -m MODEL is required\n(g4 bench --help for usage)\n"); return 2; }
    if (n_th == 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        th[0] = nc < 1 ? 1 : nc > 512 ? 512 : nc;
        n_th = 1;
    }
    long max_tok = 0;
    int n_tests = 0;
    if (n_np) { /* batched: llama-batched-bench's defaults, every (np, p, n) combination */
        if (!have_pp) pp[0] = 128;
        if (!have_tg) tg[0] = 32;
        long mp = 0, mg = 0;
        for (int i = 0; i < n_pp; i++) if (pp[i] > mp) mp = pp[i];
        for (int i = 0; i < n_tg; i++) if (tg[i] > mg) mg = tg[i];
        max_tok = mp + mg;
        if (mg == 0) { fprintf(stderr, "g4 bench: -np needs -n > 0\n"); return 2; }
        n_tests = n_np * n_pp * n_tg * n_th * n_models;
    } else {
        for (int i = 0; i < n_pp; i++) { if (pp[i] > max_tok) max_tok = pp[i]; if (pp[i] > 0) n_tests++; }
        for (int i = 0; i < n_tg; i++) { if (tg[i] > max_tok) max_tok = tg[i]; if (tg[i] > 0) n_tests++; }
        if (n_tests == 0) { fprintf(stderr, "g4 bench: nothing to run (-p and -n are all 0)\n"); return 2; }
        n_tests *= n_th * n_ub * n_models * n_dep;
    }
    long max_dep = 0;
    for (int i = 0; i < n_dep; i++) if (dep[i] > max_dep) max_dep = dep[i];
    if (n_np && max_dep) { fprintf(stderr, "g4 bench: -d is not supported with -np\n"); return 2; }
    if (max_tok > (1 << 20)) { fprintf(stderr, "g4 bench: -p + -n is above 2^20 tokens\n"); return 2; }
    for (int i = 0; i < n_models; i++) {
        struct stat sb;
        if (stat(models[i], &sb) != 0) { fprintf(stderr, "g4 bench: %s: %s\n", models[i], strerror(errno)); return 1; }
    }

    int rc = 0, log_level = verbose ? G4_LOG_INFO : G4_LOG_WARN;
    char err[512];
    result *res = calloc((size_t)n_tests, sizeof *res);
    int32_t *toks = malloc((size_t)(max_tok > max_dep ? max_tok : max_dep) * sizeof *toks);
    model_desc desc[MAX_MODELS];
    const char *kernels[MAX_MODELS] = {0};
    char kern_names[MAX_MODELS][32];
    if (!res || !toks) { fprintf(stderr, "g4 bench: out of memory\n"); free(res); free(toks); return 1; }
    int n_res = 0;
    if (!json) { if (n_np) md_header_np(); else md_header(); }
    cli_progress pr;
    const double runs_total = (double)n_tests * (double)(reps + warmup);
    double runs_done = 0;
    progress_begin(&pr, "g4 bench", runs_total, "runs", 0);
    void (*prev)(int) = signal(SIGINT, on_sigint);
    double t_all = progress_now();

    for (int mi = 0; mi < n_models && !g_int && rc == 0; mi++) {
        for (int ti = 0; ti < n_th && !g_int && rc == 0; ti++) {
            g4_model_opts mo = {0};
            mo.n_threads = (int)th[ti];
            mo.log = cli_log;
            mo.log_ud = &log_level;
            g4_model *m = NULL;
            double t0 = progress_now();
            if (g4_model_open(&m, models[mi], &mo, err, sizeof err) != G4_OK) {
                fprintf(stderr, "g4 bench: %s\n", err);
                rc = 1;
                break;
            }
            describe(m, &desc[mi]);
            snprintf(kern_names[mi], sizeof kern_names[mi], "%s", g4_model_kernels(m));
            kernels[mi] = kern_names[mi];
            fprintf(stderr, "g4 bench: loaded %s in %.3f s (%s, kernels %s, %d threads; a decoded token reads %.3f GB of weights)\n",
                    models[mi], progress_now() - t0, desc[mi].name, g4_model_kernels(m), g4_model_n_threads(m),
                    (double)desc[mi].decode_bytes / 1e9);
            const int cache_t = !cache || !strcmp(cache, "f16") ? G4_CACHE_F16 : !strcmp(cache, "f32") ? G4_CACHE_F32 : G4_CACHE_Q8_0;
            for (int ni = 0; ni < n_np && !g_int && rc == 0; ni++) {
                bench_batch bb;
                if (!bench_batch_open(&bb, m, (int)npl[ni], (int)max_tok, cache_t, err, sizeof err)) {
                    fprintf(stderr, "g4 bench: %s\n", err);
                    bench_batch_close(&bb);
                    rc = 1;
                    break;
                }
                size_t kvb, scb, bab;
                bench_batch_memory(&bb, &kvb, &scb, &bab);
                fprintf(stderr, "g4 bench: %ld sessions of %ld positions: each KV %.1f MiB + scratch %.1f MiB, batch scratch %.1f MiB\n",
                        npl[ni], max_tok, (double)kvb / 1048576.0, (double)scb / 1048576.0, (double)bab / 1048576.0);
                for (int pi = 0; pi < n_pp && !g_int && rc == 0; pi++)
                    for (int gi = 0; gi < n_tg && !g_int && rc == 0; gi++) {
                        if (tg[gi] <= 0) continue;
                        result *r = &res[n_res];
                        memset(r, 0, sizeof *r);
                        r->model = mi;
                        r->threads = th[ti];
                        r->ubatch = 512;
                        r->np = npl[ni];
                        r->n_prompt = pp[pi];
                        r->n_gen = tg[gi];
                        uint64_t rng = seed;
                        char detail[96];
                        snprintf(detail, sizeof detail, "B%ld pp%ld tg%ld t=%ld", r->np, r->n_prompt, r->n_gen, th[ti]);
                        double pps[64];
                        for (long k = -warmup; k < reps && !g_int; k++) {
                            double tp, tt;
                            if (!bench_batch_once(&bb, m, r->n_prompt, r->n_gen, &rng, (const volatile int *)&g_int, &tp, &tt)) {
                                fprintf(stderr, "g4 bench: %s\n", g4_batch_errmsg(bb.b));
                                rc = 1;
                                break;
                            }
                            runs_done += 1;
                            progress_update(&pr, runs_done, detail);
                            if (k < 0 || g_int) continue;
                            if (tt <= 0) tt = 1e-9;
                            pps[r->n_samples] = tp > 0 ? (double)(r->np * r->n_prompt) / tp : 0;
                            r->samples_ns[r->n_samples] = tt * 1e9;
                            r->samples_ts[r->n_samples] = (double)(r->np * r->n_gen) / tt;
                            r->n_samples++;
                        }
                        if (rc || r->n_samples < reps) break;
                        double sum = 0, sum_ns = 0, sum_pp = 0;
                        for (int k = 0; k < r->n_samples; k++) { sum += r->samples_ts[k]; sum_ns += r->samples_ns[k]; sum_pp += pps[k]; }
                        r->avg = sum / r->n_samples;
                        r->avg_ns = sum_ns / r->n_samples;
                        r->pp_avg = sum_pp / r->n_samples;
                        double v = 0, vn = 0, vp = 0;
                        for (int k = 0; k < r->n_samples; k++) {
                            v += (r->samples_ts[k] - r->avg) * (r->samples_ts[k] - r->avg);
                            vn += (r->samples_ns[k] - r->avg_ns) * (r->samples_ns[k] - r->avg_ns);
                            vp += (pps[k] - r->pp_avg) * (pps[k] - r->pp_avg);
                        }
                        r->sd = r->n_samples > 1 ? sqrt(v / (r->n_samples - 1)) : 0;
                        r->sd_ns = r->n_samples > 1 ? sqrt(vn / (r->n_samples - 1)) : 0;
                        r->pp_sd = r->n_samples > 1 ? sqrt(vp / (r->n_samples - 1)) : 0;
                        n_res++;
                        if (!json) {
                            progress_end(&pr, NULL);
                            md_row_np(&desc[mi], r);
                        }
                    }
                bench_batch_close(&bb);
            }
            for (int ui = 0; ui < n_ub && !n_np && !g_int && rc == 0; ui++) {
                g4_session_opts so = {0};
                so.n_ctx = (int32_t)(max_tok + max_dep);
                so.n_ubatch = (int32_t)ub[ui];
                so.cache_type = !cache || !strcmp(cache, "f16") ? G4_CACHE_F16 : !strcmp(cache, "f32") ? G4_CACHE_F32 : G4_CACHE_Q8_0;
                g4_session *s = NULL;
                if (g4_session_create(&s, m, &so, err, sizeof err) != G4_OK) {
                    fprintf(stderr, "g4 bench: %s\n", err);
                    rc = 1;
                    break;
                }
                long have = -1; /* depth the session holds */
                for (int di = 0; di < n_dep && !g_int && rc == 0; di++)
                for (int kind = 0; kind < 2 && !g_int && rc == 0; kind++) {
                    const long *list = kind == 0 ? pp : tg;
                    const int nl = kind == 0 ? n_pp : n_tg;
                    for (int li = 0; li < nl && !g_int && rc == 0; li++) {
                        if (list[li] <= 0) continue;
                        result *r = &res[n_res];
                        memset(r, 0, sizeof *r);
                        r->model = mi;
                        r->threads = th[ti];
                        r->ubatch = ub[ui];
                        r->n_prompt = kind == 0 ? list[li] : 0;
                        r->n_gen = kind == 1 ? list[li] : 0;
                        r->depth = dep[di];
                        uint64_t rng = seed;
                        char detail[96];
                        snprintf(detail, sizeof detail, "%s%ld d%ld t=%ld", kind ? "tg" : "pp", list[li], dep[di], th[ti]);
                        for (long k = -warmup; k < reps && !g_int; k++) {
                            double dt = run_once(s, m, r->depth, &have, r->n_prompt, r->n_gen, toks, &rng, seed);
                            if (dt < 0) {
                                fprintf(stderr, "g4 bench: %s\n", g4_session_errmsg(s));
                                rc = 1;
                                break;
                            }
                            runs_done += 1;
                            progress_update(&pr, runs_done, detail);
                            if (k < 0 || g_int) continue;
                            if (dt <= 0) dt = 1e-9;
                            r->samples_ns[r->n_samples] = dt * 1e9;
                            r->samples_ts[r->n_samples] = (double)list[li] / dt;
                            r->n_samples++;
                        }
                        if (rc || r->n_samples < reps) break;
                        double sum = 0, sum_ns = 0;
                        for (int k = 0; k < r->n_samples; k++) { sum += r->samples_ts[k]; sum_ns += r->samples_ns[k]; }
                        r->avg = sum / r->n_samples;
                        r->avg_ns = sum_ns / r->n_samples;
                        double v = 0, vn = 0;
                        for (int k = 0; k < r->n_samples; k++) {
                            v += (r->samples_ts[k] - r->avg) * (r->samples_ts[k] - r->avg);
                            vn += (r->samples_ns[k] - r->avg_ns) * (r->samples_ns[k] - r->avg_ns);
                        }
                        r->sd = r->n_samples > 1 ? sqrt(v / (r->n_samples - 1)) : 0;
                        r->sd_ns = r->n_samples > 1 ? sqrt(vn / (r->n_samples - 1)) : 0;
                        n_res++;
                        if (!json) {
                            progress_end(&pr, NULL); /* clear the live line before a row */
                            md_row(&desc[mi], r);
                        }
                    }
                }
                g4_session_free(s);
            }
            g4_model_close(m);
        }
    }
    signal(SIGINT, prev);
    progress_end(&pr, NULL);
    if (json) json_all(desc, models, res, n_res, kernels);
    char tb[32];
    progress_fmt_secs(progress_now() - t_all, tb, sizeof tb);
    fprintf(stderr, "g4 bench: %d tests, %ld repetitions each%s, in %s\n", n_res, reps, warmup ? " after a warm-up" : "", tb);
    free(res);
    free(toks);
    if (rc) return rc;
    return g_int ? 130 : 0;
}
