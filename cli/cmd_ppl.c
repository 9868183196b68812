/* cmd_ppl.c - g4 perplexity: llama-perplexity's measurement, plus KL divergence, top-1
 * agreement and logit SQNR against a stored base run.
 *
 *   g4 perplexity -m MODEL -f TEXT [-c 512] [--chunks N]
 *   g4 perplexity -m BASE.gguf -f TEXT --kl-divergence-base base.kld       (store)
 *   g4 perplexity -m QUANT.gguf --kl-divergence-base base.kld --kl-divergence (compare)
 *
 * Perplexity, as llama-perplexity (tools/perplexity/perplexity.cpp of llama.cpp v0.5.0): the
 * whole file is tokenized once with BOS; it is cut into floor(n_tokens / c) chunks (at least
 * 2c tokens are needed); each chunk is evaluated from an empty cache with its first token
 * replaced by BOS; only the second half is scored: the logits at positions c/2 .. c-2 predict
 * the tokens c/2+1 .. c-1 (255 predictions at c = 512). stdout gets "[i]ppl," per chunk (one
 * line per chunk when stdout is a terminal) and "Final estimate: PPL = x +/- y" where y is
 * the standard error of the mean NLL times PPL.
 *
 * The KL base file ("G4KLD v1", little-endian) stores, for every scored position, the base
 * model's top-k logits and a bounded summary of the rest of the vocabulary:
 *
 *   header, 64 bytes:
 *     0  char[8] "G4KLDv1\n"
 *     8  u32 n_vocab          12 u32 n_ctx (c)
 *    16  u32 n_scored (= c - 1 - c/2)   20 u32 top_k (K, 1..1024)
 *    24  u32 n_sketch (m, 0..4096)      28 u32 n_chunks
 *    32  u64 sketch_seed      40 u32 bos (0xffffffff: none)
 *    44  u32 record_bytes (= 16 + 8K + 4m)   48..63 zero
 *   per chunk: u32 tokens[c] (as tokenized, before the BOS replacement), then n_scored records:
 *     f32 lse       log-sum-exp of the logits (max + log sum exp(l - max), f64 sum)
 *     f32 nll       -log p(next token)
 *     f32 tail      probability mass outside the top K (summed directly over the tail)
 *     f32 sum_sq    sum of squared logits over the whole vocabulary (SQNR signal)
 *     u32 ids[K]    top-K token ids, by logit descending (lower id first on ties)
 *     f32 logit[K]  their raw logits
 *     f32 sketch[m] CountSketch of the tail logits: bucket h(i), sign s(i) from
 *                   splitmix64(seed + i); sketch[h(i)] += s(i)·logit_i for i outside top K
 *
 * Size: 528 bytes per scored position at K = 32, m = 64 (llama.cpp's full-vocabulary uint16
 * format needs 2·n_vocab bytes: 512 KiB per position for Gemma's 262,144 tokens). Reading
 * validates everything: header fields and their ranges, the exact file size, token and top-K
 * ids below n_vocab and distinct, finite values, sorted logits, tail mass in [0, 1].
 *
 * Comparison per position (p = base, q = this model, T = the base's top K):
 *   KLD  = sum_{i in T} p_i log(p_i / q_i) + P_tail log(P_tail / Q_tail): the tail is lumped
 *          into one outcome, so this is a lower bound of the full KL divergence (log-sum
 *          inequality), exact when K covers the distribution; identical logits give exactly 0.
 *   top-1 agreement: argmax q == argmax p.
 *   SQNR = 10 log10(sum signal / sum noise) over all scored positions, where signal is
 *          sum_i p_logit_i^2 and noise is sum_{i in T} (p_logit_i - q_logit_i)^2 plus the
 *          CountSketch estimate of the tail's squared error (unbiased; relative error about
 *          sqrt(2/m) per position, averaging out over positions). Identical logits: inf.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "g4.h"
#include "progress.h"

#define KLD_MAGIC "G4KLDv1\n"
#define KLD_HDR 64
#define KLD_MAX_K 1024
#define KLD_MAX_M 4096

static void usage(FILE *out) {
    fprintf(out,
            "usage: g4 perplexity -m MODEL -f TEXT [options]\n"
            "  -m, --model FILE          GGUF model\n"
            "  -f, --file FILE           text to score (tokenized once, with BOS)\n"
            "  -c, --ctx-size N          tokens per chunk (default 512; the file needs at least 2N tokens)\n"
            "  --chunks N                score at most N chunks (default: all)\n"
            "  -ub, --ubatch-size N      tokens per evaluation step (default min(c, 512))\n"
            "  -t, --threads N           threads (default: online CPUs)\n"
            "  -ctk, --cache-type-k T    KV cache type: f16 (default), f32, q8_0\n"
            "  --kl-divergence-base FILE store this model's logits in FILE (compact: top-k + tail summary)\n"
            "  --kl-divergence           instead compare this model against FILE: mean KL divergence,\n"
            "                            top-1 agreement, logit SQNR (-f optional: FILE holds the tokens)\n"
            "  --kl-top-k N              logits kept per position in FILE (default 32, 1..1024)\n"
            "  --kl-sketch N             tail sketch size in FILE (default 64, 0..4096; 0 = no tail SQNR)\n"
            "  -v, --verbose             loader messages on stderr\n"
            "  -h, --help                this text\n");
}

static volatile sig_atomic_t g_int;
static void on_sigint(int sig) { (void)sig; g_int = 1; }

/* ==== little-endian packing ==== */

static void put_u32(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24); }
static void put_f32(unsigned char *p, float f) { uint32_t u; memcpy(&u, &f, 4); put_u32(p, u); }
static uint32_t get_u32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static float get_f32(const unsigned char *p) { uint32_t u = get_u32(p); float f; memcpy(&f, &u, 4); return f; }
static uint64_t get_u64(const unsigned char *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }
static void put_u64(unsigned char *p, uint64_t v) { put_u32(p, (uint32_t)v); put_u32(p + 4, (uint32_t)(v >> 32)); }

static uint64_t splitmix(uint64_t x) {
    uint64_t z = x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ==== per-position work ==== */

typedef struct kld_hdr {
    uint32_t n_vocab, n_ctx, n_scored, top_k, n_sketch, n_chunks, bos, rec_bytes;
    uint64_t seed;
} kld_hdr;

typedef struct pos_work {
    int32_t   V, K, M;
    uint32_t *hash;     /* [V] bucket | sign << 31 (M > 0) */
    uint8_t  *mark;     /* [V] 1 = in the base's top K (cleared after use) */
    int32_t  *heap_id;  /* [K] */
    float    *heap_v;
    double   *sk;       /* [M] */
} pos_work;

/* as llama-perplexity: max, then a double sum of expf(l - max); returns that sum */
static double sum_exp(const float *l, int32_t V, float *mx_out) {
    float mx = l[0];
    for (int32_t i = 1; i < V; i++) if (l[i] > mx) mx = l[i];
    double s = 0;
    for (int32_t i = 0; i < V; i++) s += (double)expf(l[i] - mx);
    *mx_out = mx;
    return s;
}

/* "a ranks above b": higher logit, then lower id */
static int above(float va, int32_t ia, float vb, int32_t ib) { return va > vb || (va == vb && ia < ib); }

/* top K of l into ids/vals, best first (min-heap of the K best so far) */
static void top_k(pos_work *w, const float *l, int32_t *ids, float *vals) {
    const int32_t K = w->K;
    int32_t n = 0;
    int32_t *hi = w->heap_id;
    float *hv = w->heap_v;
    for (int32_t i = 0; i < w->V; i++) {
        float v = l[i];
        if (n < K) {
            int32_t c = n++; /* sift up: the root is the worst */
            while (c > 0) {
                int32_t p = (c - 1) / 2;
                if (!above(hv[p], hi[p], v, i)) break;
                hv[c] = hv[p]; hi[c] = hi[p];
                c = p;
            }
            hv[c] = v; hi[c] = i;
        } else if (above(v, i, hv[0], hi[0])) {
            int32_t c = 0; /* replace the root, sift down */
            for (;;) {
                int32_t a = 2 * c + 1, b = a + 1, w2 = c;
                float wv = v; int32_t wi = i;
                if (a < K && above(wv, wi, hv[a], hi[a])) { w2 = a; wv = hv[a]; wi = hi[a]; }
                if (b < K && above(wv, wi, hv[b], hi[b])) { w2 = b; }
                if (w2 == c) break;
                hv[c] = hv[w2]; hi[c] = hi[w2];
                c = w2;
            }
            hv[c] = v; hi[c] = i;
        }
    }
    /* pop worst-first into the back of the output */
    for (int32_t k = K - 1; k >= 0; k--) {
        ids[k] = hi[0]; vals[k] = hv[0];
        int32_t last = k; /* heap size after pop = k */
        float v = hv[last]; int32_t id = hi[last];
        int32_t c = 0;
        for (;;) {
            int32_t a = 2 * c + 1, b = a + 1, w2 = c;
            float wv = v; int32_t wi = id;
            if (a < last && above(wv, wi, hv[a], hi[a])) { w2 = a; wv = hv[a]; wi = hi[a]; }
            if (b < last && above(wv, wi, hv[b], hi[b])) { w2 = b; }
            if (w2 == c) break;
            hv[c] = hv[w2]; hi[c] = hi[w2];
            c = w2;
        }
        hv[c] = v; hi[c] = id;
    }
}

/* tail mass (outside the marked ids) relative to the whole sum, and the tail sketch */
static float tail_and_sketch(pos_work *w, const float *l, float mx, double sum, double *sk) {
    double t = 0;
    for (int32_t j = 0; j < w->M; j++) sk[j] = 0;
    for (int32_t i = 0; i < w->V; i++) {
        if (w->mark[i]) continue;
        t += (double)expf(l[i] - mx);
        if (w->M) {
            uint32_t h = w->hash[i];
            double v = (double)l[i];
            sk[h & 0x7fffffffu] += (h >> 31) ? v : -v;
        }
    }
    double tail = t / sum;
    if (tail > 1) tail = 1;
    return (float)tail;
}

/* ==== statistics ==== */

typedef struct stats {
    double nll, nll2;      /* this model */
    double bnll, bnll2;    /* base (compare mode) */
    long   count;
    double kld, kld2, kld_max;
    float *klds;           /* [capacity] for the median / percentiles */
    long   n_kld, cap_kld;
    long   same_top;
    double sig, noise;
} stats;

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static void ppl_final(double nll, double nll2, long count, double *ppl, double *err) {
    nll /= (double)count;
    nll2 /= (double)count;
    *ppl = exp(nll);
    nll2 -= nll * nll;
    *err = nll2 > 0 && count > 1 ? sqrt(nll2 / (double)(count - 1)) * *ppl : 0;
}

/* ==== base file ==== */

static int write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n; }

static int kld_write_header(FILE *f, const kld_hdr *h) {
    unsigned char b[KLD_HDR] = {0};
    memcpy(b, KLD_MAGIC, 8);
    put_u32(b + 8, h->n_vocab);
    put_u32(b + 12, h->n_ctx);
    put_u32(b + 16, h->n_scored);
    put_u32(b + 20, h->top_k);
    put_u32(b + 24, h->n_sketch);
    put_u32(b + 28, h->n_chunks);
    put_u64(b + 32, h->seed);
    put_u32(b + 40, h->bos);
    put_u32(b + 44, h->rec_bytes);
    return fseek(f, 0, SEEK_SET) == 0 && write_all(f, b, sizeof b);
}

/* reads and validates the header against the file size; 0 + message on error */
static int kld_read_header(FILE *f, const char *path, kld_hdr *h) {
    unsigned char b[KLD_HDR];
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) { fprintf(stderr, "g4 perplexity: %s: %s\n", path, strerror(errno)); return 0; }
    if (fread(b, 1, sizeof b, f) != sizeof b || memcmp(b, KLD_MAGIC, 8) != 0) {
        fprintf(stderr, "g4 perplexity: %s: not a g4 KL-divergence base file (G4KLDv1)\n", path);
        return 0;
    }
    h->n_vocab = get_u32(b + 8); h->n_ctx = get_u32(b + 12); h->n_scored = get_u32(b + 16);
    h->top_k = get_u32(b + 20); h->n_sketch = get_u32(b + 24); h->n_chunks = get_u32(b + 28);
    h->seed = get_u64(b + 32); h->bos = get_u32(b + 40); h->rec_bytes = get_u32(b + 44);
    const char *bad = NULL;
    for (int i = 48; i < KLD_HDR; i++) if (b[i]) bad = "reserved header bytes are not zero";
    if (h->n_vocab < 2 || h->n_vocab > (1u << 24)) bad = "n_vocab out of range";
    else if (h->n_ctx < 4 || h->n_ctx > (1u << 20)) bad = "n_ctx out of range";
    else if (h->n_scored != h->n_ctx - 1 - h->n_ctx / 2) bad = "n_scored does not match n_ctx";
    else if (h->top_k < 1 || h->top_k > KLD_MAX_K || h->top_k > h->n_vocab) bad = "top_k out of range";
    else if (h->n_sketch > KLD_MAX_M) bad = "n_sketch out of range";
    else if (h->n_chunks < 1) bad = "no chunks";
    else if (h->bos != 0xffffffffu && h->bos >= h->n_vocab) bad = "bos id out of range";
    else if (h->rec_bytes != 16 + 8 * h->top_k + 4 * h->n_sketch) bad = "record size does not match top_k and n_sketch";
    if (!bad) {
        /* exact size: 64 + n_chunks * (4 n_ctx + n_scored * rec_bytes); all factors are bounded above,
         * so the product fits in 64 bits */
        uint64_t chunk = 4ull * h->n_ctx + (uint64_t)h->n_scored * h->rec_bytes;
        uint64_t want = KLD_HDR + (uint64_t)h->n_chunks * chunk;
        if (sb.st_size < 0 || (uint64_t)sb.st_size != want) bad = "file size does not match the header (truncated or padded)";
    }
    if (bad) { fprintf(stderr, "g4 perplexity: %s: %s\n", path, bad); return 0; }
    return 1;
}

/* ==== main ==== */

int cmd_perplexity(int argc, char **argv) {
    const char *model = NULL, *file = NULL, *kld_path = NULL, *cache = NULL;
    long n_ctx = 512, n_ub = 0, threads = 0, max_chunks = -1, top_kk = 32, sketch = 64;
    int kld_cmp = 0, verbose = 0, have_c = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED() do { if (!v) { fprintf(stderr, "g4 perplexity: %s needs a value\n", a); return 2; } i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEED(); model = v; }
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) { NEED(); file = v; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { NEED(); if (!cli_int(a, v, 4, 1 << 20, &n_ctx)) return 2; have_c = 1; }
        else if (!strcmp(a, "--chunks")) { NEED(); if (!cli_int(a, v, 1, 1 << 30, &max_chunks)) return 2; }
        else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch-size") || !strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            NEED(); if (!cli_int(a, v, 1, 1 << 20, &n_ub)) return 2;
        }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { NEED(); if (!cli_int(a, v, 0, 512, &threads)) return 2; }
        else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") || !strcmp(a, "--cache-type")) {
            NEED();
            if (strcmp(v, "f16") && strcmp(v, "f32") && strcmp(v, "q8_0")) {
                fprintf(stderr, "g4 perplexity: %s expects f16, f32 or q8_0, got '%s'\n", a, v);
                return 2;
            }
            cache = v;
        }
        else if (!strcmp(a, "--kl-divergence-base")) { NEED(); kld_path = v; }
        else if (!strcmp(a, "--kl-divergence")) kld_cmp = 1;
        else if (!strcmp(a, "--kl-top-k")) { NEED(); if (!cli_int(a, v, 1, KLD_MAX_K, &top_kk)) return 2; }
        else if (!strcmp(a, "--kl-sketch")) { NEED(); if (!cli_int(a, v, 0, KLD_MAX_M, &sketch)) return 2; }
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) verbose = 1;
        else { fprintf(stderr, "g4 perplexity: unknown option '%s'\n(g4 perplexity --help for usage)\n", a); return 2; }
#undef NEED
    }
    if (!model) { fprintf(stderr, "g4 perplexity: -m MODEL is required\n(g4 perplexity --help for usage)\n"); return 2; }
    if (kld_cmp && !kld_path) { fprintf(stderr, "g4 perplexity: --kl-divergence needs --kl-divergence-base FILE\n"); return 2; }
    if (!file && !kld_cmp) { fprintf(stderr, "g4 perplexity: -f TEXT is required\n(g4 perplexity --help for usage)\n"); return 2; }

    int rc = 1, log_level = verbose ? G4_LOG_INFO : G4_LOG_WARN;
    char err[512];
    g4_model *m = NULL;
    g4_session *s = NULL;
    FILE *kf = NULL;
    char *text = NULL;
    int32_t *all = NULL, *ctok = NULL, *etok = NULL, *ids = NULL;
    float *vals = NULL;
    unsigned char *rec = NULL;
    pos_work w;
    memset(&w, 0, sizeof w);
    stats st;
    memset(&st, 0, sizeof st);
    kld_hdr h;
    memset(&h, 0, sizeof h);
    size_t n_all = 0;
    int wrote_base = 0, out_tty = isatty(1);

    /* base file first in compare mode: its n_ctx decides the chunking */
    if (kld_cmp) {
        kf = fopen(kld_path, "rb");
        if (!kf) { fprintf(stderr, "g4 perplexity: %s: %s\n", kld_path, strerror(errno)); return 1; }
        if (!kld_read_header(kf, kld_path, &h)) { fclose(kf); return 1; }
        if (have_c && (uint32_t)n_ctx != h.n_ctx) {
            fprintf(stderr, "g4 perplexity: -c %ld differs from the base file's %u\n", n_ctx, h.n_ctx);
            fclose(kf);
            return 2;
        }
        n_ctx = (long)h.n_ctx;
        top_kk = (long)h.top_k;
        sketch = (long)h.n_sketch;
    }
    if (n_ub <= 0) n_ub = n_ctx < 512 ? n_ctx : 512;
    if (n_ub > n_ctx) n_ub = n_ctx;

    /* model */
    g4_model_opts mo = {0};
    mo.n_threads = (int)threads;
    mo.log = cli_log;
    mo.log_ud = &log_level;
    double t0 = progress_now();
    if (g4_model_open(&m, model, &mo, err, sizeof err) != G4_OK) { fprintf(stderr, "g4 perplexity: %s\n", err); goto done; }
    fprintf(stderr, "g4 perplexity: loaded %s in %.3f s (kernels %s, %d threads)\n", model, progress_now() - t0,
            g4_model_kernels(m), g4_model_n_threads(m));
    const int32_t V = g4_model_n_vocab(m);
    const int32_t bos = g4_model_token_bos(m);
    if (kld_cmp) {
        if (h.n_vocab != (uint32_t)V) {
            fprintf(stderr, "g4 perplexity: %s was written for a vocabulary of %u tokens, the model has %d\n", kld_path,
                    h.n_vocab, (int)V);
            goto done;
        }
        if (h.bos != (bos < 0 ? 0xffffffffu : (uint32_t)bos)) {
            fprintf(stderr, "g4 perplexity: %s: BOS id %d differs from the model's %d\n", kld_path, (int)h.bos, (int)bos);
            goto done;
        }
    }

    /* tokens */
    long n_chunk;
    if (file) {
        size_t len = 0;
        text = cli_read_file(file, &len);
        if (!text) goto done;
        double tt = progress_now();
        size_t cap = len + 16;
        all = malloc(cap * sizeof *all);
        g4_status ts = all ? g4_tokenize(m, text, len, bos >= 0 ? G4_TOK_ADD_BOS : 0, all, cap, &n_all) : G4_ERR_NOMEM;
        if (ts == G4_ERR_BUFFER) {
            free(all);
            cap = n_all;
            all = malloc(cap * sizeof *all);
            ts = all ? g4_tokenize(m, text, len, bos >= 0 ? G4_TOK_ADD_BOS : 0, all, cap, &n_all) : G4_ERR_NOMEM;
        }
        if (ts != G4_OK) { fprintf(stderr, "g4 perplexity: tokenize: %s\n", g4_status_str(ts)); goto done; }
        fprintf(stderr, "g4 perplexity: tokenized %s: %zu bytes -> %zu tokens in %.3f s\n", file, len, n_all, progress_now() - tt);
        if (n_all < 2 * (size_t)n_ctx) {
            fprintf(stderr, "g4 perplexity: %s tokenizes to %zu tokens; at least %ld (2 x -c %ld) are needed\n", file, n_all,
                    2 * n_ctx, n_ctx);
            goto done;
        }
        n_chunk = (long)(n_all / (size_t)n_ctx);
        if (kld_cmp && n_chunk > (long)h.n_chunks) n_chunk = (long)h.n_chunks;
    } else {
        n_chunk = (long)h.n_chunks;
    }
    if (max_chunks > 0 && n_chunk > max_chunks) n_chunk = max_chunks;

    /* buffers */
    const long first = n_ctx / 2, n_scored = n_ctx - 1 - first;
    const int32_t K = (int32_t)top_kk, M = (int32_t)sketch;
    w.V = V; w.K = K; w.M = M;
    ctok = malloc((size_t)n_ctx * sizeof *ctok);
    etok = malloc((size_t)n_ctx * sizeof *etok);
    w.mark = calloc((size_t)V, 1);
    w.heap_id = malloc((size_t)K * sizeof *w.heap_id);
    w.heap_v = malloc((size_t)K * sizeof *w.heap_v);
    w.sk = malloc((size_t)(M ? M : 1) * sizeof *w.sk);
    w.hash = M ? malloc((size_t)V * sizeof *w.hash) : NULL;
    ids = malloc((size_t)K * sizeof *ids);
    vals = malloc((size_t)K * sizeof *vals);
    const size_t rec_bytes = 16 + 8 * (size_t)K + 4 * (size_t)M;
    rec = malloc(rec_bytes > (size_t)n_ctx * 4 ? rec_bytes : (size_t)n_ctx * 4);
    if (kld_cmp) {
        st.cap_kld = n_chunk * n_scored;
        st.klds = malloc((size_t)st.cap_kld * sizeof *st.klds);
    }
    if (!ctok || !etok || !w.mark || !w.heap_id || !w.heap_v || !w.sk || (M && !w.hash) || !ids || !vals || !rec ||
        (kld_cmp && !st.klds)) {
        fprintf(stderr, "g4 perplexity: out of memory\n");
        goto done;
    }
    if (!kld_cmp && kld_path) {
        h.n_vocab = (uint32_t)V; h.n_ctx = (uint32_t)n_ctx; h.n_scored = (uint32_t)n_scored;
        h.top_k = (uint32_t)K; h.n_sketch = (uint32_t)M; h.n_chunks = 0;
        h.seed = 0x6734u; h.bos = bos < 0 ? 0xffffffffu : (uint32_t)bos; h.rec_bytes = (uint32_t)rec_bytes;
        if ((size_t)K > (size_t)V) { fprintf(stderr, "g4 perplexity: --kl-top-k %d exceeds the vocabulary (%d)\n", (int)K, (int)V); rc = 2; goto done; }
        kf = fopen(kld_path, "wb");
        if (!kf || !kld_write_header(kf, &h)) { fprintf(stderr, "g4 perplexity: %s: %s\n", kld_path, strerror(errno)); goto done; }
        wrote_base = 1;
    }
    if (M) for (int32_t i = 0; i < V; i++) {
        uint64_t z = splitmix(h.seed + (uint64_t)i);
        w.hash[i] = (uint32_t)((z >> 33) % (uint64_t)M) | (uint32_t)(z & 1) << 31;
    }

    g4_session_opts so = {0};
    so.n_ctx = (int32_t)n_ctx;
    so.n_ubatch = (int32_t)n_ub;
    so.logits_all = 1;
    so.cache_type = !cache || !strcmp(cache, "f16") ? G4_CACHE_F16 : !strcmp(cache, "f32") ? G4_CACHE_F32 : G4_CACHE_Q8_0;
    if (g4_session_create(&s, m, &so, err, sizeof err) != G4_OK) { fprintf(stderr, "g4 perplexity: %s\n", err); goto done; }
    fprintf(stderr, "g4 perplexity: %ld chunks of %ld tokens, %ld scored per chunk, ubatch %ld%s%s\n", n_chunk, n_ctx,
            n_scored, n_ub, kld_path ? (kld_cmp ? ", comparing with " : ", storing base logits in ") : "",
            kld_path ? kld_path : "");

    cli_progress pr;
    progress_begin(&pr, "g4 perplexity", (double)n_chunk, "chunks", 0);
    void (*prev)(int) = signal(SIGINT, on_sigint);
    long done_chunks = 0;
    int fail = 0;
    for (long c = 0; c < n_chunk && !g_int && !fail; c++) {
        /* chunk tokens */
        if (kld_cmp) {
            if (fread(rec, 4, (size_t)n_ctx, kf) != (size_t)n_ctx) { fprintf(stderr, "g4 perplexity: %s: read error\n", kld_path); fail = 1; break; }
            for (long j = 0; j < n_ctx; j++) {
                uint32_t t = get_u32(rec + 4 * j);
                if (t >= (uint32_t)V) { fprintf(stderr, "g4 perplexity: %s: chunk %ld: token id %u out of range\n", kld_path, c + 1, t); fail = 1; break; }
                ctok[j] = (int32_t)t;
            }
            if (fail) break;
            if (all && memcmp(ctok, all + c * n_ctx, (size_t)n_ctx * sizeof *ctok) != 0) {
                fprintf(stderr, "g4 perplexity: chunk %ld of %s differs from the tokens of %s (different text, -c or tokenizer)\n",
                        c + 1, kld_path, file);
                fail = 1;
                break;
            }
        } else {
            memcpy(ctok, all + c * n_ctx, (size_t)n_ctx * sizeof *ctok);
            if (kf) {
                for (long j = 0; j < n_ctx; j++) put_u32(rec + 4 * j, (uint32_t)ctok[j]);
                if (!write_all(kf, rec, (size_t)n_ctx * 4)) { fprintf(stderr, "g4 perplexity: %s: write error\n", kld_path); fail = 1; break; }
            }
        }
        memcpy(etok, ctok, (size_t)n_ctx * sizeof *etok);
        if (bos >= 0) etok[0] = bos;

        g4_session_reset(s);
        for (long off = 0; off < n_ctx && !fail; off += n_ub) {
            long nt = n_ctx - off < n_ub ? n_ctx - off : n_ub;
            if (g4_session_eval(s, etok + off, (size_t)nt) != G4_OK) {
                fprintf(stderr, "g4 perplexity: %s\n", g4_session_errmsg(s));
                fail = 1;
                break;
            }
            for (long j = off; j < off + nt; j++) {
                if (j < first || j >= n_ctx - 1) continue;
                const float *l = g4_session_logits_ith(s, (size_t)(j - off));
                const int32_t tgt = ctok[j + 1];
                float mx;
                const double se = sum_exp(l, V, &mx);
                const float lse_f = (float)((double)mx + log(se));
                const double nll = -((double)(l[tgt] - mx) - log(se));
                st.nll += nll;
                st.nll2 += nll * nll;
                st.count++;
                if (!kf) continue;
                if (!kld_cmp) { /* store */
                    top_k(&w, l, ids, vals);
                    for (int32_t k = 0; k < K; k++) w.mark[ids[k]] = 1;
                    float tail = tail_and_sketch(&w, l, mx, se, w.sk);
                    for (int32_t k = 0; k < K; k++) w.mark[ids[k]] = 0;
                    double ss = 0;
                    for (int32_t i = 0; i < V; i++) ss += (double)l[i] * (double)l[i];
                    put_f32(rec, lse_f);
                    put_f32(rec + 4, (float)nll);
                    put_f32(rec + 8, tail);
                    put_f32(rec + 12, (float)ss);
                    for (int32_t k = 0; k < K; k++) {
                        put_u32(rec + 16 + 4 * (size_t)k, (uint32_t)ids[k]);
                        put_f32(rec + 16 + 4 * (size_t)K + 4 * (size_t)k, vals[k]);
                    }
                    for (int32_t q = 0; q < M; q++) put_f32(rec + 16 + 8 * (size_t)K + 4 * (size_t)q, (float)w.sk[q]);
                    if (!write_all(kf, rec, rec_bytes)) { fprintf(stderr, "g4 perplexity: %s: write error\n", kld_path); fail = 1; break; }
                    continue;
                }
                /* compare: read and validate one record */
                if (fread(rec, 1, rec_bytes, kf) != rec_bytes) { fprintf(stderr, "g4 perplexity: %s: read error\n", kld_path); fail = 1; break; }
                const float b_lse = get_f32(rec), b_nll = get_f32(rec + 4), b_tail = get_f32(rec + 8), b_ss = get_f32(rec + 12);
                const char *bad = NULL;
                if (!isfinite(b_lse) || !isfinite(b_nll) || b_nll < -1e-3f || !(b_tail >= 0 && b_tail <= 1.0001f) ||
                    !isfinite(b_ss) || b_ss < 0)
                    bad = "a summary value is not finite or out of range";
                for (int32_t k = 0; k < K && !bad; k++) {
                    uint32_t id = get_u32(rec + 16 + 4 * (size_t)k);
                    float v = get_f32(rec + 16 + 4 * (size_t)K + 4 * (size_t)k);
                    if (id >= (uint32_t)V) bad = "a top-k id is out of range";
                    else if (w.mark[id]) bad = "a top-k id repeats";
                    else if (!isfinite(v) || (k > 0 && v > vals[k - 1]) || v > b_lse + 1e-3f) bad = "top-k logits are not finite and sorted";
                    else { ids[k] = (int32_t)id; vals[k] = v; w.mark[id] = 1; }
                }
                for (int32_t q = 0; q < M && !bad; q++) {
                    float v = get_f32(rec + 16 + 8 * (size_t)K + 4 * (size_t)q);
                    if (!isfinite(v)) bad = "a sketch value is not finite";
                }
                if (bad) {
                    memset(w.mark, 0, (size_t)V);
                    fprintf(stderr, "g4 perplexity: %s: chunk %ld, position %ld: %s\n", kld_path, c + 1, j, bad);
                    fail = 1;
                    break;
                }
                float q_tail = tail_and_sketch(&w, l, mx, se, w.sk);
                for (int32_t k = 0; k < K; k++) w.mark[ids[k]] = 0;
                double kld = 0, noise = 0;
                for (int32_t k = 0; k < K; k++) {
                    const double lp = (double)vals[k] - (double)b_lse, lq = (double)l[ids[k]] - (double)lse_f;
                    kld += exp(lp) * (lp - lq);
                    const double d = (double)vals[k] - (double)l[ids[k]];
                    noise += d * d;
                }
                if (b_tail > 0) kld += (double)b_tail * (log((double)b_tail) - log(q_tail > 0 ? (double)q_tail : 1e-45));
                for (int32_t q = 0; q < M; q++) {
                    const double d = (double)get_f32(rec + 16 + 8 * (size_t)K + 4 * (size_t)q) - (double)(float)w.sk[q];
                    noise += d * d;
                }
                int32_t am = 0;
                for (int32_t i = 1; i < V; i++) if (l[i] > l[am]) am = i;
                st.same_top += am == ids[0];
                st.kld += kld;
                st.kld2 += kld * kld;
                if (kld > st.kld_max) st.kld_max = kld;
                if (st.n_kld < st.cap_kld) st.klds[st.n_kld++] = (float)kld;
                st.bnll += (double)b_nll;
                st.bnll2 += (double)b_nll * (double)b_nll;
                st.sig += (double)b_ss;
                st.noise += noise;
            }
        }
        if (fail) break;
        done_chunks++;
        double ppl = exp(st.nll / (double)st.count);
        if (out_tty) { progress_end(&pr, NULL); printf("[%ld]%.4f,\n", c + 1, ppl); }
        else printf("[%ld]%.4f,", c + 1, ppl);
        fflush(stdout);
        char detail[64];
        snprintf(detail, sizeof detail, "ppl %.4f", ppl);
        progress_update(&pr, (double)done_chunks, detail);
    }
    signal(SIGINT, prev);
    double el = progress_end(&pr, NULL);
    if (!out_tty && done_chunks) printf("\n");
    if (fail) goto done;
    if (kf && !kld_cmp) {
        h.n_chunks = (uint32_t)done_chunks;
        if (done_chunks == 0 || !kld_write_header(kf, &h) || fflush(kf) != 0) {
            fprintf(stderr, "g4 perplexity: %s: %s\n", kld_path, done_chunks ? "write error" : "no chunk finished");
            goto done;
        }
    }
    if (st.count == 0) { fprintf(stderr, "g4 perplexity: nothing scored\n"); goto done; }
    double ppl, pe;
    ppl_final(st.nll, st.nll2, st.count, &ppl, &pe);
    printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, pe);
    if (kld_cmp) {
        double bppl, bpe;
        ppl_final(st.bnll, st.bnll2, st.count, &bppl, &bpe);
        const double n = (double)st.count;
        const double km = st.kld / n;
        double kv = st.kld2 / n - km * km;
        const double kse = kv > 0 && n > 1 ? sqrt(kv / (n - 1)) : 0;
        qsort(st.klds, (size_t)st.n_kld, sizeof *st.klds, cmp_float);
        const double p_same = (double)st.same_top / n;
        const double p_se = n > 1 ? sqrt(p_same * (1 - p_same) / (n - 1)) : 0;
        printf("\n====== Perplexity statistics ======\n");
        printf("Mean PPL(Q)     : %12.6f ± %10.6f\n", ppl, pe);
        printf("Mean PPL(base)  : %12.6f ± %10.6f\n", bppl, bpe);
        printf("PPL ratio       : %12.6f\n", ppl / bppl);
        printf("\n====== KL divergence statistics ======\n");
        printf("Mean    KLD: %12.6f ± %10.6f\n", km, kse);
        printf("Maximum KLD: %12.6f\n", st.kld_max);
        printf("99.9%%   KLD: %12.6f\n", (double)st.klds[(size_t)((double)(st.n_kld - 1) * 0.999)]);
        printf("99.0%%   KLD: %12.6f\n", (double)st.klds[(size_t)((double)(st.n_kld - 1) * 0.99)]);
        printf("Median  KLD: %12.6f\n", (double)st.klds[(size_t)(st.n_kld - 1) / 2]);
        printf("Minimum KLD: %12.6f\n", (double)st.klds[0]);
        printf("\n====== Token probability statistics ======\n");
        printf("Same top p: %7.3f ± %6.3f %%\n", 100.0 * p_same, 100.0 * p_se);
        if (st.noise > 0) printf("Logit SQNR: %8.3f dB%s\n", 10.0 * log10(st.sig / st.noise), M || K >= V ? "" : " (noise of the top-k logits only)");
        else printf("Logit SQNR: inf dB\n");
        printf("(KLD over the base's top %d tokens plus the lumped tail; tail SQNR from a %d-bucket sketch)\n", (int)K, (int)M);
    }
    fflush(stdout);
    {
        char tb[32];
        progress_fmt_secs(el, tb, sizeof tb);
        fprintf(stderr, "g4 perplexity: %ld chunks, %ld scored tokens in %s (%.1f tokens/s evaluated)\n", done_chunks,
                st.count, tb, el > 0 ? (double)(done_chunks * n_ctx) / el : 0.0);
    }
    rc = g_int ? 130 : 0;
    wrote_base = 0; /* keep the file */

done:
    if (kf) fclose(kf);
    if (wrote_base && kld_path) remove(kld_path);
    g4_session_free(s);
    g4_model_close(m);
    free(text); free(all); free(ctok); free(etok); free(ids); free(vals); free(rec);
    free(w.mark); free(w.heap_id); free(w.heap_v); free(w.sk); free(w.hash); free(st.klds);
    return rc;
}
