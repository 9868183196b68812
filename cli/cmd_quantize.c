/* cmd_quantize.c - g4 quantize: convert a GGUF's weights to another type, with llama-quantize's
 * per-tensor rules (src/quantize.h has the rules).
 *
 *   g4 quantize IN.gguf OUT.gguf Q4_K_M [-t 8]
 *   g4 quantize IN.gguf OUT.gguf Q4_0 --token-embedding-type q4_0 --per-layer-embedding-type q4_0
 *   g4 quantize IN.gguf OUT.gguf Q8_0 --tensor-type 'ffn_down=q6_K' --dry-run
 *
 * stdout: nothing (with --dry-run: the plan, one tensor per line). stderr: progress, the
 * summary, warnings. Exit: 0 ok, 1 runtime error, 2 usage, 130 interrupted (the partial
 * output file is removed).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "g4.h"
#include "g4_impl.h"
#include "gguf.h"
#include "progress.h"
#include "quant/quant.h"
#include "quantize.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: g4 quantize [options] IN.gguf OUT.gguf TYPE [N_THREADS]\n"
            "  TYPE: %s\n"
            "        Q4_K / Q5_K: every matrix of that type (llama-quantize --pure Q4_K_M / Q5_K_M);\n"
            "        Q4_K_M, Q5_K_M, Q4_K_S, Q5_K_S: llama-quantize's mixes; the others use its rules for\n"
            "        token_embd/output (Q6_K, or Q8_0 when the row length does not fit)\n"
            "  --token-embedding-type T       type of token_embd (and per_layer_token_embd unless given)\n"
            "  --per-layer-embedding-type T   type of per_layer_token_embd\n"
            "  --output-tensor-type T         type of output.weight (and of a tied token_embd)\n"
            "  --tensor-type PATTERN=T        tensors whose name matches PATTERN (POSIX extended regex,\n"
            "                                 searched anywhere in the name) get T; repeatable, first match wins\n"
            "  --pure                         no mix rules: every quantizable matrix gets TYPE\n"
            "  --dry-run                      print the plan on stdout, write nothing\n"
            "  -t, --threads N                threads (default: online CPUs)\n"
            "  -v, --verbose                  one line per tensor on stderr\n"
            "  -h, --help                     this text\n"
            "T: q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl q2_K q3_K q4_K q5_K q6_K iq4_xs f16 bf16 f32\n"
            "Norms, scalars, rope_freqs and per_layer_model_proj keep their type; metadata is copied\n"
            "(general.file_type updated).\n",
            qz_ftype_names());
}

static volatile sig_atomic_t g_int;
static void on_sigint(int sig) { (void)sig; g_int = 1; }
static int should_abort(void *ud) { (void)ud; return g_int != 0; }

static void on_progress(void *ud, size_t i, size_t n, uint64_t done, uint64_t total, const char *name) {
    cli_progress *pr = ud;
    pr->total = (double)total / 1048576.0;
    char detail[128];
    snprintf(detail, sizeof detail, "[%zu/%zu] %s", i + 1, n, name);
    progress_update(ud, (double)done / 1048576.0, detail);
}

static int parse_type(const char *flag, const char *v, int *out) {
    int t = qz_type_from_name(v);
    if (t < 0) {
        fprintf(stderr, "g4 quantize: %s expects a tensor type (q4_0, q8_0, q4_K, q6_K, f16, ...), got '%s'\n", flag, v);
        return 0;
    }
    *out = t;
    return 1;
}

static void shape_str(const gguf_tensor *t, char *buf, size_t cap) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, cap - k, "[");
    for (uint32_t d = 0; d < t->n_dims && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%" PRId64, d ? ", " : "", t->ne[d]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

int cmd_quantize(int argc, char **argv) {
    const char *pos[4];
    int n_pos = 0, pure = 0, dry = 0, verbose = 0;
    int tok_type = -1, ple_type = -1, out_type = -1;
    long threads = 0;
    int have_threads = 0;
    qz_override ov[QZ_MAX_OVERRIDES];
    int n_ov = 0;
    char err[512];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED() do { if (!v) { fprintf(stderr, "g4 quantize: %s needs a value\n", a); return 2; } i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--token-embedding-type")) { NEED(); if (!parse_type(a, v, &tok_type)) return 2; }
        else if (!strcmp(a, "--per-layer-embedding-type")) { NEED(); if (!parse_type(a, v, &ple_type)) return 2; }
        else if (!strcmp(a, "--output-tensor-type")) { NEED(); if (!parse_type(a, v, &out_type)) return 2; }
        else if (!strcmp(a, "--tensor-type")) {
            NEED();
            if (n_ov >= QZ_MAX_OVERRIDES) { fprintf(stderr, "g4 quantize: at most %d --tensor-type options\n", QZ_MAX_OVERRIDES); return 2; }
            if (qz_parse_override(v, &ov[n_ov], err, sizeof err) != G4_OK) { fprintf(stderr, "g4 quantize: %s\n", err); return 2; }
            n_ov++;
        }
        else if (!strcmp(a, "--pure")) pure = 1;
        else if (!strcmp(a, "--dry-run")) dry = 1;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) verbose = 1;
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads") || !strcmp(a, "--nthreads")) {
            NEED();
            if (!cli_int(a, v, 0, 512, &threads)) return 2;
            have_threads = 1;
        }
        else if (a[0] == '-' && a[1] != '\0') { fprintf(stderr, "g4 quantize: unknown option '%s'\n(g4 quantize --help for usage)\n", a); return 2; }
        else {
            if (n_pos >= 4) { fprintf(stderr, "g4 quantize: unexpected argument '%s'\n", a); return 2; }
            pos[n_pos++] = a;
        }
#undef NEED
    }
    if (n_pos < 3) {
        fprintf(stderr, "g4 quantize: expected IN.gguf OUT.gguf TYPE\n(g4 quantize --help for usage)\n");
        return 2;
    }
    if (n_pos == 4) { /* llama-quantize's trailing thread count */
        if (have_threads) { fprintf(stderr, "g4 quantize: thread count given twice\n"); return 2; }
        if (!cli_int("N_THREADS", pos[3], 0, 512, &threads)) return 2;
    }
    const char *in = pos[0], *out = pos[1];
    qz_params p;
    if (qz_params_init(&p, pos[2], err, sizeof err) != G4_OK) { fprintf(stderr, "g4 quantize: %s\n", err); return 2; }
    if (pure) p.pure = 1;
    p.token_embd_type = tok_type;
    p.per_layer_type = ple_type;
    p.output_type = out_type;
    memcpy(p.overrides, ov, sizeof(qz_override) * (size_t)n_ov);
    p.n_overrides = n_ov;
    if (threads <= 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        threads = nc > 0 ? nc : 1;
    }
    p.n_threads = threads > 64 ? 64 : (int)threads;
    int log_level = verbose ? G4_LOG_INFO : G4_LOG_WARN;
    p.log = cli_log;
    p.log_ud = &log_level;

    if (!strcmp(in, out)) { fprintf(stderr, "g4 quantize: the output would overwrite the input (%s)\n", in); return 2; }
    struct stat si, so;
    if (stat(in, &si) != 0) { fprintf(stderr, "g4 quantize: %s: %s\n", in, strerror(errno)); return 1; }
    if (stat(out, &so) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
        fprintf(stderr, "g4 quantize: the output would overwrite the input (%s is %s)\n", out, in);
        return 2;
    }

    /* the input must be a model gemma4.c loads (every container and model rule checked), so the
     * output is one too */
    {
        g4_model_opts mo = {0};
        mo.n_threads = 1;
        mo.no_repack = 1; /* validation only */
        mo.log = cli_log;
        mo.log_ud = &log_level;
        g4_model *m = NULL;
        double t0 = progress_now();
        if (g4_model_open(&m, in, &mo, err, sizeof err) != G4_OK) { fprintf(stderr, "g4 quantize: %s\n", err); return 1; }
        g4_model_close(m);
        if (verbose) fprintf(stderr, "g4 quantize: %s validated in %.3f s\n", in, progress_now() - t0);
    }

    /* the plan: shown with -v / --dry-run */
    if (verbose || dry) {
        gguf_file *f = NULL;
        if (gguf_open(&f, in, 0, NULL, err, sizeof err) != G4_OK) { fprintf(stderr, "g4 quantize: %s\n", err); return 1; }
        size_t n = gguf_n_tensors(f);
        qz_choice *ch = calloc(n ? n : 1, sizeof *ch);
        if (!ch) { gguf_close(f); fprintf(stderr, "g4 quantize: out of memory\n"); return 1; }
        g4_status st = qz_plan(f, &p, ch, err, sizeof err);
        if (st != G4_OK) { free(ch); gguf_close(f); fprintf(stderr, "g4 quantize: %s\n", err); return 1; }
        uint64_t sb = 0, db = 0;
        for (size_t i = 0; i < n; i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            char b1[32], b2[32], shp[96];
            shape_str(t, shp, sizeof shp);
            FILE *o = dry ? stdout : stderr;
            fprintf(o, "[%4zu/%4zu] %-40s %-20s %6s -> %-6s %10.3f -> %10.3f MiB%s\n", i + 1, n, t->name, shp,
                    quant_type_name(ch[i].src_type, b1, sizeof b1), quant_type_name(ch[i].dst_type, b2, sizeof b2),
                    (double)ch[i].src_bytes / 1048576.0, (double)ch[i].dst_bytes / 1048576.0,
                    ch[i].fallback ? " (fallback)" : "");
            sb += ch[i].src_bytes;
            db += ch[i].dst_bytes;
        }
        if (dry) printf("total: %.3f MiB -> %.3f MiB\n", (double)sb / 1048576.0, (double)db / 1048576.0);
        free(ch);
        gguf_close(f);
        if (dry) return 0;
    }

    cli_progress pr;
    progress_begin(&pr, "g4 quantize", (double)si.st_size / 1048576.0, "MiB", 0);
    p.progress = on_progress;
    p.progress_ud = &pr;
    p.should_abort = should_abort;
    void (*prev)(int) = signal(SIGINT, on_sigint);
    qz_stats stats;
    g4_status st = qz_quantize_file(in, out, &p, &stats, err, sizeof err);
    signal(SIGINT, prev);
    if (st != G4_OK) {
        progress_end(&pr, NULL);
        fprintf(stderr, "g4 quantize: %s\n", err);
        return st == G4_ERR_ABORTED && g_int ? 130 : 1;
    }
    double el = progress_end(&pr, NULL);
    char tb[32];
    progress_fmt_secs(el, tb, sizeof tb);
    fprintf(stderr,
            "g4 quantize: %s -> %s (%s): %.2f MiB -> %.2f MiB (%.2f bits per weight), %zu tensors: %zu converted, "
            "%zu copied, %zu fallbacks; %s, %.1f MiB/s, %d threads\n",
            in, out, pos[2], (double)stats.src_bytes / 1048576.0, (double)stats.dst_bytes / 1048576.0,
            stats.n_params ? 8.0 * (double)stats.dst_bytes / (double)stats.n_params : 0.0, stats.n_tensors,
            stats.n_converted, stats.n_copied, stats.n_fallback, tb,
            el > 0 ? (double)stats.src_bytes / 1048576.0 / el : 0.0, p.n_threads);
    return 0;
}
