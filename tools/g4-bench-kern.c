/* g4-bench-kern.c - kernel benchmarks (`make bench`): matvec weight-streaming rate at Gemma 4
 * E2B shapes next to the single-thread DRAM read rate measured in the same run, and Q4_K
 * prefill GEMM throughput next to a measured int8 dot peak.
 *
 *   build/g4-bench-kern [-k scalar|avx2|avx512] [-r reps] [-q] [-T types] [-S shape] [-1] [-H] [-D] [-B|-BL] [-A] [-E] [-G]
 *   (-q: quick, small shapes; -T q4_K,q6_K: only these weight types; -S LM: only shapes whose
 *   label contains this; -1: matvec on 1 thread only, no 2-thread runs, no GEMM; -H: matvec
 *   weights in transparent huge pages (madvise), to compare with 4 KiB pages; -D: only the
 *   DRAM read rates, 1 and 2 threads, for scripts/bench_vs_llama.sh; -B: batched decode (-BL: L2-resident)
 *   per-token costs; -A: the attention products of one decoded token at depth; -E: the routed
 *   experts of a 26B-A4B layer; -G: the Q4_K prompt gemm at E2B and 31B shapes)
 *
 * Shapes are ggml order n_in x n_out (ffn_gate/up 1536x6144, ffn_down 6144x1536, layers
 * 15-34 gate/up 1536x12288, LM head 1536x262144). Weights are random blocks (random bytes,
 * finite f16 scales) so no quantizer runs. Every figure is the median of `reps` timed runs
 * after one warm-up run (the fastest run is shown too: on a shared host interference only
 * slows runs down); matvec rates are bytes of weights / time. 2-thread figures depend on
 * whether the host gives the two vCPUs separate cores (performance.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "kern/kern.h"
#include "pool.h"
#include "quant/quant_ref.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
/* after median(): v is sorted */
static double v_min(const double *v) { return v[0]; }

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint8_t *weights_alloc(size_t bytes, int huge);

/* ==== DRAM read bandwidth: load-sum over a buffer, one thread ==== */

#if defined(__x86_64__)
__attribute__((target("avx2"))) static uint64_t sum_avx2(const uint8_t *p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 128) {
        a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)(const void *)(p + i)));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(const void *)(p + i + 32)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(const void *)(p + i + 64)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(const void *)(p + i + 96)));
    }
    a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    uint64_t o[4];
    _mm256_storeu_si256((__m256i *)(void *)o, a0);
    return o[0] + o[1] + o[2] + o[3];
}

__attribute__((target("avx512f"))) static uint64_t sum_avx512(const uint8_t *p, size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 256) {
        a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)(p + i)));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *)(p + i + 64)));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *)(p + i + 128)));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *)(p + i + 192)));
    }
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
}

static uint64_t sum_buf(const uint8_t *p, size_t n) { return __builtin_cpu_supports("avx512f") ? sum_avx512(p, n) : sum_avx2(p, n); }
static const char *sum_what(void) { return __builtin_cpu_supports("avx512f") ? "zmm" : "ymm"; }
#else
static const char *sum_what(void) { return "8 x 64-bit"; }
static uint64_t sum_buf(const uint8_t *p, size_t n) { /* 4 independent 64-bit lanes (vectorized by the compiler) */
    uint64_t a[8] = { 0 };
    for (size_t i = 0; i < n; i += 64)
        for (int k = 0; k < 8; k++) { uint64_t v; memcpy(&v, p + i + 8 * k, 8); a[k] += v; }
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}
#endif

/* The second probe: each 1 MiB span read as 8 streams (its eighths) in turn, 256 bytes each,
 * every stream's line 1 KiB ahead prefetched; on huge pages. The load-sum alone is one
 * stream, which a single core of some hosts reads at a fraction of what it reads from several
 * (Zen 5 VM: ~10 GB/s on one strided stream, 20-30 GB/s on 4-8 prefetched ones), so it can
 * sit below what a kernel streaming 16-row weight tiles reads; a ceiling must not. */
#define DRAM_STREAMS 8
#define DRAM_PF 1024
#if defined(__x86_64__)
__attribute__((target("avx512f"))) static uint64_t sum_streams_avx512(const uint8_t *p, size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    const size_t len = n / DRAM_STREAMS;
    for (size_t o = 0; o < len; o += 256)
        for (int s = 0; s < DRAM_STREAMS; s++) {
            const uint8_t *q = p + (size_t)s * len + o;
            _mm_prefetch((const char *)q + DRAM_PF, _MM_HINT_T0);
            _mm_prefetch((const char *)q + DRAM_PF + 64, _MM_HINT_T0);
            _mm_prefetch((const char *)q + DRAM_PF + 128, _MM_HINT_T0);
            _mm_prefetch((const char *)q + DRAM_PF + 192, _MM_HINT_T0);
            a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)q));
            a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *)(q + 64)));
            a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *)(q + 128)));
            a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *)(q + 192)));
        }
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
}
__attribute__((target("avx2"))) static uint64_t sum_streams_avx2(const uint8_t *p, size_t n) {
    __m256i a[8];
    for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_si256();
    const size_t len = n / DRAM_STREAMS;
    for (size_t o = 0; o < len; o += 256)
        for (int s = 0; s < DRAM_STREAMS; s++) {
            const uint8_t *q = p + (size_t)s * len + o;
            for (int l = 0; l < 4; l++) _mm_prefetch((const char *)q + DRAM_PF + 64 * l, _MM_HINT_T0);
            for (int k = 0; k < 8; k++) a[k] = _mm256_add_epi64(a[k], _mm256_load_si256((const __m256i *)(const void *)(q + 32 * k)));
        }
    for (int k = 1; k < 8; k++) a[0] = _mm256_add_epi64(a[0], a[k]);
    uint64_t o4[4];
    _mm256_storeu_si256((__m256i *)(void *)o4, a[0]);
    return o4[0] + o4[1] + o4[2] + o4[3];
}
#endif
static uint64_t sum_streams_c(const uint8_t *p, size_t n) {
    uint64_t a[8] = { 0 };
    const size_t len = n / DRAM_STREAMS;
    for (size_t o = 0; o < len; o += 256)
        for (int s = 0; s < DRAM_STREAMS; s++) {
            const uint8_t *q = p + (size_t)s * len + o;
            for (int l = 0; l < 4; l++) __builtin_prefetch(q + DRAM_PF + 64 * l);
            for (int i = 0; i < 256; i += 64)
                for (int k = 0; k < 8; k++) { uint64_t v; memcpy(&v, q + i + 8 * k, 8); a[k] += v; }
        }
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}
static uint64_t sum_streams(const uint8_t *p, size_t n) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) return sum_streams_avx512(p, n);
    if (__builtin_cpu_supports("avx2")) return sum_streams_avx2(p, n);
#endif
    return sum_streams_c(p, n);
}

typedef struct dram_job { const uint8_t *buf; int streams; uint64_t sink[8]; } dram_job;

static void dram_task(void *ctx, int64_t i0, int64_t i1, int thread) { /* items: 1 MiB spans */
    dram_job *j = ctx;
    const size_t mib = (size_t)1 << 20;
    if (j->streams) {
        for (int64_t i = i0; i < i1; i++) j->sink[thread & 7] += sum_streams(j->buf + (size_t)i * mib, mib);
        return;
    }
    const uint8_t *p = j->buf + (size_t)i0 * mib;
    const size_t n = (size_t)(i1 - i0) * mib;
    j->sink[thread & 7] += sum_buf(p, n);
}

/* read rate of `bytes` (a multiple of 2 MiB) by the pool's threads (NULL: the caller alone),
 * 1 MiB spans claimed from the pool's counter; median of reps passes after one warm-up.
 * streams: the 8-stream probe on huge pages (sum_streams), else the load-sum on 4 KiB pages */
static double dram_read_gbs(g4_pool *pool, int reps, size_t bytes, double *best, int streams) {
    uint8_t *buf = streams ? weights_alloc(bytes, 1) : aligned_alloc(4096, bytes);
    *best = 0;
    if (!buf) return 0;
    for (size_t i = 0; i < bytes; i += 8) { uint64_t v = i * 0x9e37u; memcpy(buf + i, &v, 8); }
    dram_job j = { buf, streams, { 0 } };
    const int64_t spans = (int64_t)(bytes >> 20);
    double t[32];
    for (int r = 0; r <= reps; r++) {
        const double t0 = now_s();
        if (pool) pool_for(pool, spans, 4, dram_task, &j);
        else dram_task(&j, 0, spans, 0);
        __asm__ volatile("" ::: "memory"); /* compiler barrier between passes */
        if (r) t[r - 1] = (double)bytes / (now_s() - t0) * 1e-9;
    }
    volatile uint64_t sink = j.sink[0] + j.sink[1];
    (void)sink;
    free(buf);
    const double med = median(t, reps);
    *best = t[reps - 1]; /* rates: the largest is the best */
    return med;
}

/* ==== int8 dot peak (one thread): 12 independent accumulators ==== */

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512vnni"))) static double peak_vnni(void) {
    __m512i acc[12];
    for (int k = 0; k < 12; k++) acc[k] = _mm512_set1_epi32(k);
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
    const long iters = 20000000;
    const double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        for (int k = 0; k < 12; k++) acc[k] = _mm512_dpbusd_epi32(acc[k], a, b);
        __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]), "+v"(acc[4]), "+v"(acc[5]));
    }
    const double dt = now_s() - t0;
    volatile int sink = 0;
    for (int k = 0; k < 12; k++) sink += _mm_cvtsi128_si32(_mm512_castsi512_si128(acc[k]));
    (void)sink;
    return (double)iters * 12 * 64 * 2 / dt * 1e-9; /* 64 MAC per instruction, 2 ops each */
}

__attribute__((target("avx2"))) static double peak_avx2(void) {
    __m256i acc[12];
    for (int k = 0; k < 12; k++) acc[k] = _mm256_set1_epi32(k);
    __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
    const __m256i one = _mm256_set1_epi16(1);
    const long iters = 10000000;
    const double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        __asm__ volatile("" : "+x"(a), "+x"(b)); /* keep the multiplies inside the loop */
        for (int k = 0; k < 12; k++)
            acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        __asm__ volatile("" : "+x"(acc[0]), "+x"(acc[1]), "+x"(acc[2]), "+x"(acc[3]));
    }
    const double dt = now_s() - t0;
    volatile int sink = 0;
    for (int k = 0; k < 12; k++) sink += _mm_cvtsi128_si32(_mm256_castsi256_si128(acc[k]));
    (void)sink;
    return (double)iters * 12 * 32 * 2 / dt * 1e-9;
}

static double peak_int8(const char **what) {
    const int vnni = __builtin_cpu_supports("avx512vnni");
    *what = vnni ? "vpdpbusd zmm" : "vpmaddubsw+vpmaddwd ymm";
    return vnni ? peak_vnni() : peak_avx2();
}
#elif defined(__aarch64__)
__attribute__((target("arch=armv8.2-a+dotprod"))) static double peak_sdot(void) {
    int32x4_t acc[12];
    for (int k = 0; k < 12; k++) acc[k] = vdupq_n_s32(k);
    int8x16_t a = vdupq_n_s8(3), b = vdupq_n_s8(-2);
    const long iters = 20000000;
    const double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        __asm__ volatile("" : "+w"(a), "+w"(b));
        for (int k = 0; k < 12; k++) acc[k] = vdotq_s32(acc[k], a, b);
    }
    const double dt = now_s() - t0;
    volatile int sink = 0;
    for (int k = 0; k < 12; k++) sink += vgetq_lane_s32(acc[k], 0);
    (void)sink;
    return (double)iters * 12 * 16 * 2 / dt * 1e-9; /* 16 MAC per sdot */
}

static double peak_int8(const char **what) { *what = "sdot q"; return peak_sdot(); } /* the neon table needs dotprod */
#else
static double peak_int8(const char **what) { *what = "none measured"; return 0; }
#endif

/* types: NULL (all) or a comma-separated list of type names (quant_traits()->name) */
static int type_wanted(const char *types, uint32_t type) {
    if (!types) return 1;
    const char *name = quant_traits(type)->name;
    const size_t len = strlen(name);
    for (const char *p = types; *p;) {
        const char *e = strchr(p, ',');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == len && !strncmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* ==== matmul over the pool ==== */

typedef struct mm_job {
    const g4_kern *k;
    uint32_t type;
    float *y;          /* [n_tok][n_out] */
    const uint8_t *w;  /* [n_out] rows of wrb */
    size_t wrb;
    const uint8_t *xq; /* [n_tok] rows of xrb */
    size_t xrb;
    int64_t n_in, n_out;
    int n_tok;
    g4_matmul_fn fn;   /* the entry to time; NULL = matmul */
} mm_job;

static void mm_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const mm_job *j = vctx;
    (j->fn ? j->fn : j->k->matmul[j->type])(j->y, (size_t)j->n_out, j->w, j->wrb, j->xq, j->xrb, j->n_in, i0, i1,
                                            j->n_tok);
}

/* matvec weights: 64-byte aligned; huge: 2 MiB aligned with MADV_HUGEPAGE (transparent huge
 * pages where the kernel leaves them to madvise), to tell TLB / 4 KiB page effects apart */
static uint8_t *weights_alloc(size_t bytes, int huge) {
    if (!huge) return aligned_alloc(64, (bytes + 63) / 64 * 64);
    const size_t al = (size_t)2 << 20, sz = (bytes + al - 1) / al * al;
    uint8_t *w = aligned_alloc(al, sz);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (w) (void)madvise(w, sz, MADV_HUGEPAGE);
#endif
    return w;
}

static void random_blocks(uint32_t type, uint8_t *w, size_t bytes) {
    const g4_type_traits *tr = quant_traits(type);
    for (size_t i = 0; i + 8 <= bytes; i += 8) { uint64_t v = next_rand(); memcpy(w + i, &v, 8); }
    int off[2] = { -1, -1 };
    switch (type) {
    case G4_TYPE_Q4_0: case G4_TYPE_Q8_0: case G4_TYPE_Q5_0: case G4_TYPE_IQ4_NL: off[0] = 0; break;
    case G4_TYPE_Q4_K: case G4_TYPE_Q5_K: off[0] = 0; off[1] = 2; break;
    case G4_TYPE_Q6_K: off[0] = 208; break;
    default: break;
    }
    if (tr->blck == 1) { /* F16/BF16: keep values finite: clear the top exponent bit */
        for (size_t i = 1; i < bytes; i += 2) w[i] &= 0xbf;
        return;
    }
    for (size_t b = 0; b + tr->bytes <= bytes; b += tr->bytes)
        for (int k = 0; k < 2; k++)
            if (off[k] >= 0) { const uint16_t h = (uint16_t)(0x2000 | (next_rand() & 0x3ff)); memcpy(w + b + off[k], &h, 2); }
}

/* median seconds of one matmul of n_tok tokens over n_out rows; *best = the fastest run */
static double time_matmul_g(const g4_kern *k, g4_pool *pool, uint32_t type, const uint8_t *w, int64_t n_in,
                            int64_t n_out, int n_tok, int reps, int64_t chunk, double *best, g4_matmul_fn fn) {
    const int dt = quant_traits(type)->dot_type;
    const size_t xrb = kern_act_row_bytes(dt, n_in);
    float *x = malloc((size_t)n_in * (size_t)n_tok * sizeof *x);
    uint8_t *xq = malloc(xrb * (size_t)n_tok);
    float *y = malloc((size_t)n_out * (size_t)n_tok * sizeof *y);
    for (int64_t i = 0; i < n_in * n_tok; i++) x[i] = (float)((int64_t)(next_rand() % 2001) - 1000) * 1e-3f;
    for (int t = 0; t < n_tok; t++) k->quantize_act[dt](x + (size_t)t * (size_t)n_in, xq + (size_t)t * xrb, n_in);
    mm_job j = { k, type, y, w, quant_row_bytes(type, n_in), xq, xrb, n_in, n_out, n_tok, fn };
    double t[64];
    for (int r = 0; r <= reps; r++) {
        const double t0 = now_s();
        pool_for(pool, n_out, chunk, mm_task, &j);
        __asm__ volatile("" ::: "memory");
        if (r) t[r - 1] = now_s() - t0;
    }
    free(x); free(xq); free(y);
    const double med = median(t, reps);
    *best = v_min(t);
    return med;
}

static double time_matmul(const g4_kern *k, g4_pool *pool, uint32_t type, const uint8_t *w, int64_t n_in,
                          int64_t n_out, int n_tok, int reps, int64_t chunk, double *best) {
    return time_matmul_g(k, pool, type, w, n_in, n_out, n_tok, reps, chunk, best, NULL);
}

/* -B: per-token cost of decoding n_tok sessions together, at 1536 x 6144 (in L3); -BL: at
 * 1536 x 512 (in L2: the core's own cache, which other tenants of a VM host do not disturb) */
static void bench_batched(const g4_kern *k, int reps, const char *types, int l2) {
    static const uint32_t BT[] = { G4_TYPE_Q4_K, G4_TYPE_Q6_K, G4_TYPE_Q8_0, G4_TYPE_Q4_0, G4_TYPE_Q5_K, G4_TYPE_F16, G4_TYPE_BF16, G4_TYPE_F32 };
    const int64_t n_in = 1536, n_out = l2 ? 512 : 6144;
    printf("batched decode, 1 thread, %lldx%lld in %s: ns per row and token (best of %d), and vs n_tok 1\n",
           (long long)n_in, (long long)n_out, l2 ? "L2" : "cache", reps);
    for (size_t ti = 0; ti < sizeof BT / sizeof BT[0]; ti++) {
        if (types && !strstr(types, quant_traits(BT[ti])->name)) continue;
        const size_t bytes = quant_row_bytes(BT[ti], n_in) * (size_t)n_out;
        uint8_t *w = aligned_alloc(64, (bytes + 63) / 64 * 64);
        random_blocks(BT[ti], w, bytes);
        double one = 0;
        printf("%-6s", quant_traits(BT[ti])->name);
        for (int nt = 1; nt <= 8; nt *= 2) {
            const g4_matmul_fn fn = kern_pick(k, BT[ti], nt, 0, n_in, n_out, 0); /* the table's order for nt columns */
            const int grp = fn != k->matmul[BT[ti]];
            double b;
            time_matmul_g(k, NULL, BT[ti], w, n_in, n_out, nt, reps, n_out, &b, fn);
            const double ns = b * 1e9 / (double)n_out / nt;
            if (nt == 1) one = ns;
            printf("  n_tok %d%s %6.2f ns (%3.0f%%)", nt, grp ? "g" : " ", ns, 100.0 * ns / one);
        }
        /* Q4_K stored repacked at open (kern.h repack_q4_K): the same orders from the tiles */
        if (BT[ti] == G4_TYPE_Q4_K && k->repack_q4_K) {
            uint8_t *wp = aligned_alloc(64, (bytes + 63) / 64 * 64);
            k->repack_q4_K(wp, w, quant_row_bytes(BT[ti], n_in), n_in, n_out);
            printf("\n%-6s", "  rq");
            for (int nt = 1; nt <= 8; nt *= 2) {
                const int grp = kern_pick(k, BT[ti], nt, 0, n_in, n_out, 0) != k->matmul[BT[ti]];
                double b;
                time_matmul_g(k, NULL, BT[ti], wp, n_in, n_out, nt, reps, n_out, &b, k->matmul_rq[grp]);
                const double ns = b * 1e9 / (double)n_out / nt;
                printf("  n_tok %d%s %6.2f ns (%3.0f%%)", nt, grp ? "g" : " ", ns, 100.0 * ns / one);
            }
            printf("\n%-6s", "  rqd"); /* decode order (verification) from the tiles */
            for (int nt = 2; nt <= 8; nt *= 2) {
                double b;
                time_matmul_g(k, NULL, BT[ti], wp, n_in, n_out, nt, reps, n_out, &b, k->matmul_rq[0]);
                const double ns = b * 1e9 / (double)n_out / nt;
                printf("  n_tok %dd %6.2f ns (%3.0f%%)", nt, ns, 100.0 * ns / one);
            }
            free(wp);
        }
        /* Q6_K stored repacked at open (kern.h repack_q6_K): its one order from the tiles */
        if (BT[ti] == G4_TYPE_Q6_K && k->repack_q6_K && k->matmul_rq6) {
            uint8_t *wp = aligned_alloc(64, (bytes + 63) / 64 * 64);
            k->repack_q6_K(wp, w, quant_row_bytes(BT[ti], n_in), n_in, n_out);
            printf("\n%-6s", "  rq");
            for (int nt = 1; nt <= 8; nt *= 2) {
                double b;
                time_matmul_g(k, NULL, BT[ti], wp, n_in, n_out, nt, reps, n_out, &b, k->matmul_rq6);
                const double ns = b * 1e9 / (double)n_out / nt;
                printf("  n_tok %d  %6.2f ns (%3.0f%%)", nt, ns, 100.0 * ns / one);
            }
            free(wp);
        }
        /* the same tokens in decode order (each token the one-token kernel's bits: what
         * G4_EVAL_DECODE_ORDER, i.e. speculative verification, runs) where that is another kernel */
        if (kern_pick(k, BT[ti], 8, 0, n_in, n_out, 0) != k->matmul[BT[ti]]) {
            printf("\n%-6s", "  dec");
            for (int nt = 2; nt <= 8; nt *= 2) {
                double b;
                time_matmul_g(k, NULL, BT[ti], w, n_in, n_out, nt, reps, n_out, &b, k->matmul[BT[ti]]);
                const double ns = b * 1e9 / (double)n_out / nt;
                printf("  n_tok %dd %6.2f ns (%3.0f%%)", nt, ns, 100.0 * ns / one);
            }
        }
        printf("\n");
        free(w);
    }
}

/* -A: the attention products of one decoded token at depth n (E2B's full layers: 8 query
 * heads, head size 512, F16 cache): K.q over n cells and V.p over 512 channels, in the table's
 * f16-valued-f32 forms (kern.h matmul_f16x), 1 thread; GMAC/s = multiply-adds per second.
 * In cache (one K and V, reused), then from DRAM (every run reads another of >= 256 MiB of
 * caches, as a decoded token's layers do). V rows are n_ctx cells apart (here 2n). V.p takes
 * p as the attention does: in F16 past the table's vp_f16_min cells. */
static void bench_attn(const g4_kern *k, int reps) {
    if (!k->matmul_f16x[0]) { printf("attention products: the %s table has no matmul_f16x\n", k->name); return; }
    const int64_t hd = 512, depths[] = { 256, 512, 1024, 2048, 4096, 16384 };
    for (int dram = 0; dram < 2; dram++) {
        printf("attention products, 1 thread, query heads x %lld, F16 cache %s: median (best) of %d\n", (long long)hd,
               dram ? "from DRAM" : "in cache", reps);
        for (size_t di = 0; di < 2 * sizeof depths / sizeof depths[0]; di++) {
            const int nh = di % 2 ? 8 : 4;
            const int64_t n = depths[di / 2], vs = 2 * n; /* V row stride in cells */
            const size_t kb = (size_t)(n * hd * 2), vb = (size_t)(vs * hd * 2);
            const int nc = dram ? (int)((256u << 20) / (kb + vb)) + 1 : 1;
            uint8_t *kc = aligned_alloc(64, kb * (size_t)nc), *vc = aligned_alloc(64, vb * (size_t)nc);
            float *q = aligned_alloc(64, (size_t)(nh * hd) * sizeof(float)), *p = aligned_alloc(64, (size_t)(nh * n) * sizeof(float));
            float *y = aligned_alloc(64, (size_t)(nh * (n > hd ? n : hd)) * sizeof(float));
            random_blocks(G4_TYPE_F16, kc, kb * (size_t)nc);
            random_blocks(G4_TYPE_F16, vc, vb * (size_t)nc);
            for (int64_t i = 0; i < nh * hd; i++) q[i] = (float)((int64_t)(next_rand() % 2001) - 1000) * 1e-3f;
            for (int64_t i = 0; i < nh * n; i++) p[i] = (float)(next_rand() % 1000) * 1e-6f;
            k->round_f16(q, nh * hd);
            k->round_f16(p, nh * n);
            uint8_t *ph = NULL; /* p in F16 where the attention takes it so (kern.h vp_f16_min) */
            if (k->vp_f16_min && n > k->vp_f16_min) {
                ph = aligned_alloc(64, (size_t)(nh * n) * 2);
                for (int t = 0; t < nh; t++) k->quantize_act[G4_TYPE_F16](p + (size_t)t * (size_t)n, ph + (size_t)t * (size_t)n * 2, n);
            }
            double tk[64], tv[64];
            for (int r = 0; r <= reps; r++) {
                const size_t c = (size_t)(r % nc);
                double t0 = now_s();
                k->matmul_f16x[0](y, (size_t)n, kc + c * kb, (size_t)hd * 2, q, (size_t)hd * sizeof(float), hd, 0, n, nh);
                __asm__ volatile("" ::: "memory");
                double t1 = now_s();
                if (ph) k->matmul[G4_TYPE_F16](y, (size_t)hd, vc + c * vb, (size_t)vs * 2, ph, (size_t)n * 2, n, 0, hd, nh);
                else k->matmul_f16x[0](y, (size_t)hd, vc + c * vb, (size_t)vs * 2, p, (size_t)n * sizeof(float), n, 0, hd, nh);
                __asm__ volatile("" ::: "memory");
                if (r) { tk[r - 1] = t1 - t0; tv[r - 1] = now_s() - t1; }
            }
            const double macs = (double)n * (double)hd * nh, mk = median(tk, reps), mv = median(tv, reps);
            printf("%d heads, depth %6lld  K.q %8.1f us %5.1f GMAC/s (best %5.1f)   V.p %8.1f us %5.1f GMAC/s (best %5.1f)\n",
                   nh, (long long)n, mk * 1e6, macs / mk * 1e-9, macs / v_min(tk) * 1e-9, mv * 1e6, macs / mv * 1e-9,
                   macs / v_min(tv) * 1e-9);
            free(kc); free(vc); free(q); free(p); free(ph); free(y);
        }
    }
}

/* -E: the routed experts of one 26B-A4B layer (128 experts, 8 used; gate_up 2816 x 1408 in
 * Q4_K, down 704 x 2816 in Q5_0 or Q8_0, Q4_K_M's picks), 1 thread, weights from DRAM: each
 * timed run multiplies 8 distinct random experts of the 128, as moe.c's stages do, with n_tok
 * columns each (1: decode; 16: a 256-token prompt's average). Calls of `rows` weight rows
 * (moe.c's work items) or one call per expert; "rq": the same weights stored repacked, where
 * the table has that form (kern.h repack_q4_K, repack_b32). GB/s of weights, and ns per row
 * and column. */
static void bench_experts(const g4_kern *k, int reps, const char *types) {
    static const struct { uint32_t type; int64_t n_in, n_out; const char *what; } EX[] = {
        { G4_TYPE_Q4_K, 2816, 1408, "gate_up" }, { G4_TYPE_Q5_0, 704, 2816, "down" }, { G4_TYPE_Q8_0, 704, 2816, "down" },
    };
    printf("routed experts, 1 thread, 8 of 128 per run (new picks every run), medians of %d\n", reps);
    for (size_t ei = 0; ei < sizeof EX / sizeof EX[0]; ei++) {
        const uint32_t ty = EX[ei].type;
        if (!type_wanted(types, ty)) continue;
        const int64_t n_in = EX[ei].n_in, n_out = EX[ei].n_out;
        const size_t wrb = quant_row_bytes(ty, n_in), eb = wrb * (size_t)n_out;
        uint8_t *w = weights_alloc(eb * 128, 0);
        if (!w) continue;
        random_blocks(ty, w, eb * 128);
        const int dt = quant_traits(ty)->dot_type;
        const size_t xrb = kern_act_row_bytes(dt, n_in);
        enum { MAXT = 16 };
        float *x = malloc((size_t)n_in * MAXT * sizeof *x), *y = malloc((size_t)n_out * MAXT * sizeof *y);
        uint8_t *xq = malloc(xrb * MAXT);
        for (int64_t i = 0; i < n_in * MAXT; i++) x[i] = (float)((int64_t)(next_rand() % 2001) - 1000) * 1e-3f;
        for (int t = 0; t < MAXT; t++) k->quantize_act[dt](x + (size_t)t * (size_t)n_in, xq + (size_t)t * xrb, n_in);
        static const int NT[] = { 1, 16 };
        static const int64_t ROWS[] = { 16, 0 };
        const kern_repack_fn repack = kern_rq_repack(k, ty);
        for (int v = 0; v < 1 + (repack != NULL); v++) {
            g4_matmul_fn fn = k->matmul[ty];
            if (v) {
                uint8_t *src = malloc(eb * 128);
                if (!src) break;
                memcpy(src, w, eb * 128);
                repack(w, src, wrb, n_in, n_out * 128);
                free(src);
                fn = kern_rq_matmul(k, ty, fn);
            }
            for (int ni = 0; ni < 2; ni++)
                for (int ri = 0; ri < 2; ri++) {
                    const int64_t step = ROWS[ri] ? ROWS[ri] : n_out;
                    double t[64];
                    for (int r = 0; r <= reps; r++) {
                        int pick[8];
                        for (int e = 0; e < 8; e++) {
                            int again;
                            do { /* distinct experts */
                                pick[e] = (int)(next_rand() % 128);
                                again = 0;
                                for (int f = 0; f < e; f++) again |= pick[f] == pick[e];
                            } while (again);
                        }
                        const double t0 = now_s();
                        for (int e = 0; e < 8; e++)
                            for (int64_t r0 = 0; r0 < n_out; r0 += step)
                                fn(y, (size_t)n_out, w + (size_t)pick[e] * eb, wrb, xq, xrb, n_in, r0,
                                   r0 + step < n_out ? r0 + step : n_out, NT[ni]);
                        __asm__ volatile("" ::: "memory");
                        if (r) t[r - 1] = now_s() - t0;
                    }
                    const double med = median(t, reps);
                    char calls[32];
                    if (ROWS[ri]) snprintf(calls, sizeof calls, "%lld-row calls", (long long)ROWS[ri]);
                    else snprintf(calls, sizeof calls, "one call each");
                    printf("%-6s %-2s %-8s %4lldx%-5lld n_tok %2d, %-14s %5.1f GB/s %7.3f ns per row and column\n",
                           quant_traits(ty)->name, v ? "rq" : "", EX[ei].what, (long long)n_in, (long long)n_out, NT[ni], calls,
                           8.0 * (double)eb / med * 1e-9, med * 1e9 / (8.0 * (double)n_out * NT[ni]));
                }
        }
        free(x); free(y); free(xq); free(w);
    }
}

/* -G: the Q4_K prompt gemm (matmul_grp: llama.cpp's repacked 4-column order) and the same
 * tokens through matmul (its one-column order, which the last N % 4 columns and the MoE experts
 * take) at E2B's and 31B's FFN shapes, weights from DRAM for the 31B ones; 1 thread. GOP/s =
 * 2 * n_in * n_out * n_tok / time, median (best) of reps. */
static void bench_gemm_q4k(const g4_kern *k, int reps) {
    static const struct { int64_t n_in, n_out; const char *what; } SH[] = {
        { 1536, 6144, "E2B ffn_up (in cache)" }, { 5376, 21504, "31B ffn_up (DRAM)" }, { 21504, 5376, "31B ffn_down (DRAM)" },
    };
    static const int NT[] = { 8, 16, 32, 64, 256 };
    printf("Q4_K prompt gemm, 1 thread, %s table, median (best) of %d\n", k->name, reps);
    for (size_t si = 0; si < sizeof SH / sizeof SH[0]; si++) {
        const size_t bytes = quant_row_bytes(G4_TYPE_Q4_K, SH[si].n_in) * (size_t)SH[si].n_out;
        uint8_t *w = weights_alloc(bytes, 0);
        if (!w) continue;
        random_blocks(G4_TYPE_Q4_K, w, bytes);
        for (size_t ni = 0; ni < sizeof NT / sizeof NT[0]; ni++)
            for (int g = 1; g >= 0; g--) {
                const g4_matmul_fn fn = g && k->matmul_grp[G4_TYPE_Q4_K] ? k->matmul_grp[G4_TYPE_Q4_K] : k->matmul[G4_TYPE_Q4_K];
                double b;
                const double t = time_matmul_g(k, NULL, G4_TYPE_Q4_K, w, SH[si].n_in, SH[si].n_out, NT[ni], reps,
                                               SH[si].n_out, &b, fn);
                const double ops = 2.0 * (double)SH[si].n_in * (double)SH[si].n_out * NT[ni];
                printf("%-22s %5lldx%-5lld n_tok %3d %-10s %6.1f GOP/s (%6.1f)\n", SH[si].what, (long long)SH[si].n_in,
                       (long long)SH[si].n_out, NT[ni], g ? "matmul_grp" : "matmul", ops / t * 1e-9, ops / b * 1e-9);
            }
        free(w);
    }
}

int main(int argc, char **argv) {
    const char *force = NULL;
    int reps = 7, quick = 0, only1 = 0, huge = 0, dram_only = 0, batched = 0, attn = 0, experts = 0, gemm = 0;
    const char *types = NULL, *shapes = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-k") && i + 1 < argc) force = argv[++i];
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "-S") && i + 1 < argc) shapes = argv[++i];
        else if (!strcmp(argv[i], "-1")) only1 = 1;
        else if (!strcmp(argv[i], "-H")) huge = 1;
        else if (!strcmp(argv[i], "-D")) dram_only = 1;
        else if (!strcmp(argv[i], "-B")) batched = 1;
        else if (!strcmp(argv[i], "-BL")) batched = 2;
        else if (!strcmp(argv[i], "-A")) attn = 1;
        else if (!strcmp(argv[i], "-E")) experts = 1;
        else if (!strcmp(argv[i], "-G")) gemm = 1;
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-q")) quick = 1;
        else { fprintf(stderr, "usage: g4-bench-kern [-k scalar|avx2|avx512] [-r reps] [-q] [-T types] [-S shape] [-1] [-H] [-D] [-B|-BL] [-A] [-E] [-G]\n"); return 2; }
    }
    if (reps < 1) reps = 1;
    if (reps > 31) reps = 31;
    char err[128];
    const g4_kern *k = kern_select(force, err, sizeof err);
    if (!k) { fprintf(stderr, "g4-bench-kern: %s\n", err); return 1; }
    g4_allocator al;
    g4_allocator_init(&al, NULL, NULL);
    g4_pool *pool2 = NULL;
    if (pool_create(&pool2, 2, &al) != G4_OK) { fprintf(stderr, "g4-bench-kern: pool\n"); return 1; }

    if (batched) { bench_batched(k, reps, types, batched == 2); return 0; }
    if (attn) { bench_attn(k, reps); return 0; }
    if (experts) { bench_experts(k, reps, types); return 0; }
    if (gemm) { bench_gemm_q4k(k, reps); return 0; }
    printf("kernel set: %s, reps %d (medians)\n", k->name, reps);
    double bw_best = 0;
    const size_t dram_bytes = quick ? (size_t)256 << 20 : (size_t)1 << 30;
    const char *over = quick ? "256 MiB" : "1 GiB";
    const double bw = dram_read_gbs(NULL, reps, dram_bytes, &bw_best, 0);
    if (dram_only) { /* both probes, 1 and 2 threads: the decode ceilings take the faster */
        double b1s = 0, b2 = 0, b2s = 0;
        const double bw1s = dram_read_gbs(NULL, reps, dram_bytes, &b1s, 1);
        const double bw2 = dram_read_gbs(pool2, reps, dram_bytes, &b2, 0);
        const double bw2s = dram_read_gbs(pool2, reps, dram_bytes, &b2s, 1);
        printf("  load-sum (%s, one stream, 4 KiB pages) over %s: 1 thread %.1f GB/s median (%.1f best), 2 threads %.1f (%.1f)\n",
               sum_what(), over, bw, bw_best, bw2, b2);
        printf("  %d prefetched streams per MiB, huge pages, over %s: 1 thread %.1f GB/s median (%.1f best), 2 threads %.1f (%.1f)\n",
               DRAM_STREAMS, over, bw1s, b1s, bw2s, b2s);
        printf("DRAM read, 1 thread (the faster probe): %.1f GB/s median, %.1f best\n", bw1s > bw ? bw1s : bw,
               bw1s > bw ? b1s : bw_best);
        printf("DRAM read, 2 threads (the faster probe): %.1f GB/s median, %.1f best\n", bw2s > bw2 ? bw2s : bw2,
               bw2s > bw2 ? b2s : b2);
        pool_free(pool2);
        return 0;
    }
    printf("DRAM read, 1 thread (%s load-sum over %s): %.1f GB/s median, %.1f best\n", sum_what(), over, bw, bw_best);
    printf("(noisy host? 'best' = fastest run; %% figures use medians)\n");

    static const struct { int64_t n_in, n_out; const char *what; } SH[] = {
        { 1536, 6144, "ffn_gate/up" }, { 6144, 1536, "ffn_down" }, { 1536, 12288, "ffn_gate/up 15-34" },
        { 1536, 262144, "LM head" },
    };
    static const uint32_t TY[] = { G4_TYPE_Q4_K, G4_TYPE_Q6_K, G4_TYPE_Q8_0, G4_TYPE_Q4_0, G4_TYPE_Q5_K, G4_TYPE_BF16 };
    printf("\nmatvec (1 token), GB/s of weights; %% = of the 1-thread DRAM rate\n");
    printf("%-6s %-30s %7s %21s %14s\n", "type", "shape (n_in x n_out)", "MiB", "1 thread (best)", "2 threads");
    for (size_t ti = 0; ti < sizeof TY / sizeof TY[0]; ti++) {
        if (!type_wanted(types, TY[ti])) continue;
        for (size_t si = 0; si < sizeof SH / sizeof SH[0]; si++) {
            const int64_t n_out = quick ? SH[si].n_out / 8 : SH[si].n_out;
            if (TY[ti] == G4_TYPE_BF16 && SH[si].n_out > 100000) continue;
            if (shapes && !strstr(SH[si].what, shapes)) continue;
            const size_t bytes = quant_row_bytes(TY[ti], SH[si].n_in) * (size_t)n_out;
            uint8_t *w = weights_alloc(bytes, huge);
            if (!w) continue;
            random_blocks(TY[ti], w, bytes);
            double b1, b2 = 0;
            const double t1 = time_matmul(k, NULL, TY[ti], w, SH[si].n_in, n_out, 1, reps, n_out, &b1);
            const double t2 = only1 ? 1e30 : time_matmul(k, pool2, TY[ti], w, SH[si].n_in, n_out, 1, reps, 64, &b2);
            char shape[48];
            snprintf(shape, sizeof shape, "%lldx%lld %s", (long long)SH[si].n_in, (long long)n_out, SH[si].what);
            printf("%-6s %-30s %7.1f %5.1f (%3.0f%%) (%5.1f) %5.1f (%3.0f%%)\n", quant_traits(TY[ti])->name, shape,
                   (double)bytes / 1048576.0, (double)bytes / t1 * 1e-9, 100.0 * (double)bytes / t1 * 1e-9 / bw,
                   (double)bytes / b1 * 1e-9, (double)bytes / t2 * 1e-9, 100.0 * (double)bytes / t2 * 1e-9 / bw);
            /* the same matrix stored repacked, as a model open leaves it where the table repacks the type */
            const kern_repack_fn rp = kern_rq_repack(k, TY[ti]);
            const g4_matmul_fn rf = rp ? kern_rq_matmul(k, TY[ti], k->matmul[TY[ti]]) : NULL;
            uint8_t *wp = rp && rf && n_out % 16 == 0 ? weights_alloc(bytes, huge) : NULL;
            if (wp) {
                rp(wp, w, quant_row_bytes(TY[ti], SH[si].n_in), SH[si].n_in, n_out);
                free(w);
                w = NULL;
                const double r1 = time_matmul_g(k, NULL, TY[ti], wp, SH[si].n_in, n_out, 1, reps, n_out, &b1, rf);
                const double r2 = only1 ? 1e30 : time_matmul_g(k, pool2, TY[ti], wp, SH[si].n_in, n_out, 1, reps, 64, &b2, rf);
                printf("%-6s %-30s %7.1f %5.1f (%3.0f%%) (%5.1f) %5.1f (%3.0f%%)\n", "  rq", shape, (double)bytes / 1048576.0,
                       (double)bytes / r1 * 1e-9, 100.0 * (double)bytes / r1 * 1e-9 / bw, (double)bytes / b1 * 1e-9,
                       (double)bytes / r2 * 1e-9, 100.0 * (double)bytes / r2 * 1e-9 / bw);
                free(wp);
            }
            free(w);
        }
    }

    if (only1) { pool_free(pool2); return 0; }
    const char *what = "";
    double peak = 0; /* best of 3: interference only slows a compute loop down */
    for (int r = 0; r < 3; r++) { const double p = peak_int8(&what); if (p > peak) peak = p; }
    printf("\nint8 dot peak, 1 thread (%s, 12 accumulators, best of 3): %.0f GOP/s\n", what, peak);
    printf("prefill GEMM (n_tok tokens x weights), GOP/s = 2*n_in*n_out*n_tok / time\n");
    static const uint32_t GT[] = { G4_TYPE_Q4_K, G4_TYPE_Q8_0, G4_TYPE_Q4_0, G4_TYPE_Q6_K };
    for (size_t gi = 0; gi < sizeof GT / sizeof GT[0]; gi++) {
        const int64_t n_in = 1536, n_out = quick ? 768 : 6144;
        const size_t bytes = quant_row_bytes(GT[gi], n_in) * (size_t)n_out;
        uint8_t *w = aligned_alloc(64, (bytes + 63) / 64 * 64);
        random_blocks(GT[gi], w, bytes);
        const int toks[] = { 4, 32, 128 };
        for (int i = 0; i < 3; i++) {
            double b1, b2;
            const double t1 = time_matmul(k, NULL, GT[gi], w, n_in, n_out, toks[i], reps < 5 ? reps : 5, 16, &b1);
            const double t2 = time_matmul(k, pool2, GT[gi], w, n_in, n_out, toks[i], reps < 5 ? reps : 5, 16, &b2);
            const double ops = 2.0 * (double)n_in * (double)n_out * toks[i];
            printf("%-6s %lldx%lld n_tok %3d: 1 thread %6.1f GOP/s (%3.0f%% of peak, best %6.1f), 2 threads %6.1f GOP/s\n",
                   quant_traits(GT[gi])->name, (long long)n_in, (long long)n_out, toks[i], ops / t1 * 1e-9,
                   100.0 * ops / t1 * 1e-9 / peak, ops / b1 * 1e-9, ops / t2 * 1e-9);
        }
        free(w);
    }
    pool_free(pool2);
    return 0;
}
