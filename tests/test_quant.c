/* test_quant.c - group `quant`: the scalar reference conversions (src/quant/quant_ref.c).
 *
 * 1. golden SHA-256 of ggml's *_ref quantizers on the quant-formats.md §6.5 input
 * 2. f16 <-> f32 against the F16C hardware (all 65536 halves; a large float sample)
 * 3. bf16 conversions
 * 4. dequantize goldens from ggml v0.5.0 (tests/vectors/quant_dequant.txt)
 * 5. round-trip NMSE per type, bounds measured and kept honest
 * 6. vec_dot vs a double evaluation of dequantized weights x dequantized activations
 * 7. activation quantizers: both Q8_0 conventions, Q8_1, Q8_K, edge cases
 */
#include "t.h"

#include <stdlib.h>
#include <string.h>

#include "quant/quant_ref.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

/* ==== SHA-256 (FIPS 180-4), small and slow ==== */

typedef struct { uint32_t h[8]; uint64_t len; uint8_t buf[64]; size_t nbuf; } sha256_ctx;

static uint32_t ror32(uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }

static void sha256_block(sha256_ctx *c, const uint8_t *p) {
    static const uint32_t K[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        const uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int i = 0; i < 64; i++) {
        const uint32_t S1 = ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25);
        const uint32_t ch = (e & f) ^ (~e & g);
        const uint32_t t1 = h + S1 + ch + K[i] + w[i];
        const uint32_t S0 = ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22);
        const uint32_t mj = (a & b) ^ (a & cc) ^ (b & cc);
        const uint32_t t2 = S0 + mj;
        h = g; g = f; f = e; e = d + t1; d = cc; cc = b; b = a; a = t1 + t2;
    }
    c->h[0] += a; c->h[1] += b; c->h[2] += cc; c->h[3] += d;
    c->h[4] += e; c->h[5] += f; c->h[6] += g; c->h[7] += h;
}

static void sha256_hex(const void *data, size_t n, char out[65]) {
    sha256_ctx c = {{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}, 0, {0}, 0};
    const uint8_t *p = data;
    c.len = (uint64_t)n * 8;
    while (n >= 64) { sha256_block(&c, p); p += 64; n -= 64; }
    uint8_t last[128] = {0};
    memcpy(last, p, n);
    last[n] = 0x80;
    const size_t tot = n + 9 <= 64 ? 64 : 128;
    for (int i = 0; i < 8; i++) last[tot - 1 - i] = (uint8_t)(c.len >> (8 * i));
    sha256_block(&c, last);
    if (tot == 128) sha256_block(&c, last + 64);
    for (int i = 0; i < 8; i++) snprintf(out + 8 * i, 9, "%08x", c.h[i]);
}

/* ==== helpers ==== */

static float gauss(uint64_t *s) { /* Box-Muller */
    double u1 = ((double)(t_rng_next(s) >> 11) + 1.0) / 9007199254740993.0;
    double u2 = (double)(t_rng_next(s) >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* ==== 1. golden SHA-256 (quant-formats.md §6.5) ==== */

static void golden_hashes(void) {
    float x[512];
    for (int i = 0; i < 512; i++) x[i] = (float)((i * 7919) % 1021 - 510) / 128.0f;
    char hex[65];
    sha256_hex(x, sizeof x, hex);
    T_CHECKF(!strcmp(hex, "331fca1f663040cc821c76edf75df1d8896b52f6ed4a79b32d91d74ee2fb019a"), "input %s", hex);

    static const struct { uint32_t type; size_t bytes; const char *sha; } G[] = {
        { G4_TYPE_Q8_0, 544, "76676f13b7d138715d7589ad08c6524274b236f33b44ea619bb00cbfbe1bd56b" },
        { G4_TYPE_Q4_0, 288, "af01435ba3ac504eda835747a22fa3534135cb41487fa1ba1137897d5adf74bc" },
        { G4_TYPE_Q4_K, 288, "64b778fa943cd2f459f97c86e3532bafb7fe6f45e57c6719af3b33f7eba89e62" },
        { G4_TYPE_Q5_K, 352, "0d2cd1bc3f73b20228de522cea9860aff56747e22748c80e377048ea600da72d" },
        { G4_TYPE_Q6_K, 420, "eb95a4e1f7ecb76459368f5e66e6e84250eb289fd09b87287ec09540d66634c8" },
    };
    uint8_t buf[1024];
    for (size_t k = 0; k < sizeof G / sizeof G[0]; k++) {
        memset(buf, 0xAA, sizeof buf);
        size_t n = quant_quantize_row(G[k].type, x, buf, 512);
        T_CHECKF(n == G[k].bytes, "type %u wrote %zu", G[k].type, n);
        sha256_hex(buf, G[k].bytes, hex);
        T_CHECKF(!strcmp(hex, G[k].sha), "type %u sha %s", G[k].type, hex);
    }
    quant_act_q8_K(x, buf, 512);
    sha256_hex(buf, 584, hex);
    T_CHECKF(!strcmp(hex, "04de01228862c54988430395a7baf7e934c7f489dccc5d1867715aeadd6f4d90"), "q8_K sha %s", hex);
    float d;
    memcpy(&d, buf, 4);
    T_CHECK(fabsf(d - 0.0313730314f) < 1e-9f);
    T_CHECK((int8_t)buf[4] == -127 && (int8_t)buf[5] == 65);
}

/* ==== 2-3. f16 / bf16 ==== */

#if defined(__x86_64__)
static int have_f16c(void) { /* CPUID.1:ECX.F16C[bit 29] (clang has no "f16c" for __builtin_cpu_supports) */
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1) && (c >> 28 & 1) && (c >> 27 & 1);
}
__attribute__((target("f16c"))) static float hw_h2f(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) static uint16_t hw_f2h(float f) { return (uint16_t)_cvtss_sh(f, 0); }
#endif

#if defined(__x86_64__)
static int same_f32(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) && signbit(a) == signbit(b);
    return f2u(a) == f2u(b);
}
#endif

static void f16_conversions(void) {
    /* software-only properties, any CPU */
    T_CHECK(g4_f16_to_f32(0x3c00) == 1.0f && g4_f16_to_f32(0xc000) == -2.0f);
    T_CHECK(g4_f16_to_f32(0x0001) == ldexpf(1.0f, -24) && g4_f16_to_f32(0x7bff) == 65504.0f);
    T_CHECK(g4_f32_to_f16(65519.0f) == 0x7bff && g4_f32_to_f16(65520.0f) == 0x7c00);
    T_CHECK(g4_f32_to_f16(ldexpf(1.0f, -25)) == 0 && g4_f32_to_f16(ldexpf(1.5f, -25)) == 1);
    T_CHECK(g4_f32_to_f16(1.0f + ldexpf(1.0f, -11)) == 0x3c00);        /* tie -> even */
    T_CHECK(g4_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)) == 0x3c02);    /* tie -> even (up) */
    long bad = 0;
    for (uint32_t h = 0; h < 65536; h++) { /* f16 -> f32 -> f16 is the identity except NaN payload */
        const float f = g4_f16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        if (g4_f32_to_f16(f) != h) bad++;
    }
    T_CHECKF(bad == 0, "%ld halves do not round-trip", bad);
#if defined(__x86_64__)
    if (!have_f16c()) return;
    long bad_h2f = 0, bad_f2h = 0;
    for (uint32_t h = 0; h < 65536; h++)
        if (!same_f32(g4_f16_to_f32((uint16_t)h), hw_h2f((uint16_t)h))) bad_h2f++;
    T_CHECKF(bad_h2f == 0, "%ld halves differ from vcvtph2ps", bad_h2f);
    uint64_t s = 42;
    long n = 0;
    for (int e = 0; e < 256; e++) {          /* every exponent, both signs */
        for (int k = 0; k < 2000; k++) {
            uint32_t m = (uint32_t)t_rng_next(&s) & 0x7fffff;
            if (k % 4 == 1) m = (m & ~0x1fffu) | 0x1000u;    /* exact f16 ties */
            if (k % 4 == 2) m &= ~0xfffu;                    /* near ties */
            const uint32_t u = (uint32_t)(k & 1) << 31 | (uint32_t)e << 23 | m;
            const float f = u2f(u);
            const uint16_t a = g4_f32_to_f16(f), b = hw_f2h(f);
            if (a != b) bad_f2h++;
            n++;
        }
    }
    /* subnormal-result ties: multiples of 2^-25 around the f16 subnormal grid */
    for (int k = -3000; k <= 3000; k++) {
        const float f = ldexpf((float)k, -25) + (k % 3 == 0 ? ldexpf((float)k, -40) : 0.0f);
        if (g4_f32_to_f16(f) != hw_f2h(f)) bad_f2h++;
        n++;
    }
    const float specials[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65519.99f, 65520.0f,
                               u2f(0x7f800001), u2f(0xffc00001), u2f(0x00000001), u2f(0x387fe000) };
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        if (g4_f32_to_f16(specials[i]) != hw_f2h(specials[i])) bad_f2h++;
        n++;
    }
    T_CHECKF(bad_f2h == 0, "%ld of %ld floats differ from vcvtps2ph", bad_f2h, n);
#endif
}

static void bf16_conversions(void) {
    T_CHECK(g4_bf16_to_f32(0x3f80) == 1.0f && g4_f32_to_bf16(1.0f) == 0x3f80);
    T_CHECK(g4_f32_to_bf16(u2f(0x3f808000)) == 0x3f80);   /* tie -> even (down) */
    T_CHECK(g4_f32_to_bf16(u2f(0x3f818000)) == 0x3f82);   /* tie -> even (up) */
    T_CHECK(g4_f32_to_bf16(u2f(0x3f808001)) == 0x3f81);
    T_CHECK(g4_f32_to_bf16(u2f(0x7f7fffff)) == 0x7f80);   /* max float rounds to Inf */
    T_CHECK(g4_f32_to_bf16(INFINITY) == 0x7f80 && g4_f32_to_bf16(-INFINITY) == 0xff80);
    T_CHECK(g4_f32_to_bf16(u2f(0x7f800001)) == 0x7fc0);   /* signalling NaN quieted */
    T_CHECK(isnan(g4_bf16_to_f32(g4_f32_to_bf16(NAN))));
    /* random floats: result is the nearest bf16, ties to even */
    uint64_t s = 7;
    long bad = 0;
    for (int k = 0; k < 200000; k++) {
        const uint32_t u = (uint32_t)t_rng_next(&s) & 0x7f7fffffu;   /* finite */
        const float f = u2f(u);
        const uint16_t b = g4_f32_to_bf16(f);
        const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
        const uint32_t rem = u & 0xffffu;
        uint32_t want = rem > 0x8000u ? hi : rem < 0x8000u ? lo : ((lo >> 16) & 1 ? hi : lo);
        if (b != (uint16_t)(want >> 16)) bad++;
    }
    T_CHECKF(bad == 0, "%ld bf16 roundings wrong", bad);
}

/* ==== 4. dequantize goldens from ggml (tests/vectors/quant_dequant.txt) ==== */

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static void dequant_goldens(void) {
    FILE *f = fopen("tests/vectors/quant_dequant.txt", "r");
    if (!f) {
        fprintf(stderr, "    (tests/vectors/quant_dequant.txt not found: run from the repo root)\n");
        T_CHECK(!"quant_dequant.txt present");
        return;
    }
    static char line[1 << 16];
    uint8_t blk[4096];
    int n_cases = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        /* <type> <n> <hex bytes> <f32 bits hex ...> */
        char *p = line, *end;
        unsigned type = (unsigned)strtoul(p, &end, 10); p = end;
        long n = strtol(p, &end, 10); p = end;
        while (*p == ' ') p++;
        size_t nb = 0;
        while (p[0] && p[0] != ' ' && nb < sizeof blk) { blk[nb++] = (uint8_t)(hexval(p[0]) << 4 | hexval(p[1])); p += 2; }
        if (n <= 0 || n > 1024 || nb != quant_row_bytes(type, n)) { bad++; continue; }
        float got[1024];
        quant_dequant_row(type, blk, got, n);
        int ok = 1;
        for (long i = 0; i < n; i++) {
            const uint32_t want = (uint32_t)strtoul(p, &end, 16); p = end;
            if (f2u(got[i]) != want && !(isnan(got[i]) && isnan(u2f(want)))) {
                if (ok) fprintf(stderr, "    type %u elem %ld: %08x vs ggml %08x\n", type, i, f2u(got[i]), want);
                ok = 0;
            }
        }
        bad += !ok;
        n_cases++;
    }
    fclose(f);
    T_CHECKF(n_cases >= 14 * 4, "only %d dequant cases", n_cases);
    T_CHECKF(bad == 0, "%d of %d dequant goldens differ from ggml", bad, n_cases);
}

/* quantizer goldens: ggml's *_ref on gaussian rows with zero/constant/outlier blocks */
static void quantize_goldens(void) {
    FILE *f = fopen("tests/vectors/quant_quantize.txt", "r");
    if (!f) {
        T_CHECK(!"quant_quantize.txt present (run from the repo root)");
        return;
    }
    static char line[1 << 16];
    static uint8_t want[4096], got[4096];
    float x[1024];
    int n_cases = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char *p = line, *end;
        unsigned type = (unsigned)strtoul(p, &end, 10); p = end;
        long n = strtol(p, &end, 10); p = end;
        if (n <= 0 || n > 1024) { bad++; continue; }
        for (long i = 0; i < n; i++) { x[i] = u2f((uint32_t)strtoul(p, &end, 16)); p = end; }
        while (*p == ' ') p++;
        size_t nb = 0;
        while (p[0] && p[0] != '\n' && nb < sizeof want) { want[nb++] = (uint8_t)(hexval(p[0]) << 4 | hexval(p[1])); p += 2; }
        const size_t wrote = quant_quantize_row(type, x, got, n);
        const int ok = wrote == nb && memcmp(got, want, nb) == 0;
        if (!ok) {
            size_t i = 0;
            while (i < nb && got[i] == want[i]) i++;
            fprintf(stderr, "    quantize type %u n %ld: first difference at byte %zu\n", type, n, i);
        }
        bad += !ok;
        n_cases++;
    }
    fclose(f);
    T_CHECKF(n_cases >= 8 * 3, "only %d quantize cases", n_cases);
    T_CHECKF(bad == 0, "%d of %d quantize goldens differ from ggml", bad, n_cases);
}

/* ==== 5. round trips ==== */

static double roundtrip_nmse(uint32_t type, const float *x, int64_t n) {
    uint8_t *q = malloc(quant_row_bytes(type, n) + 16);
    float *y = malloc((size_t)n * sizeof *y);
    double e = (double)INFINITY;
    if (q && y && quant_quantize_row(type, x, q, n) == quant_row_bytes(type, n)) {
        quant_dequant_row(type, q, y, n);
        e = t_nmse(x, y, (size_t)n);
    }
    free(q);
    free(y);
    return e;
}

static void round_trips(void) {
    enum { N = 4096 };
    float *g = malloc(N * sizeof *g), *sm = malloc(N * sizeof *sm);
    uint64_t s = 1234;
    for (int i = 0; i < N; i++) {
        g[i] = gauss(&s) * 0.05f;                                   /* weight-like */
        sm[i] = sinf((float)i * 0.013f) + 0.3f * cosf((float)i * 0.2f); /* smooth */
    }
    /* NMSE = sum (x - deq(q(x)))^2 / sum x^2 on 4096 gaussian (sigma 0.05) and smooth values.
     * Bounds are about 1.5x what this data gives (x86-64, GCC 12; the data is deterministic),
     * capped by the targets 8-bit 1e-4, 5/6-bit 2e-3, 4-bit 1e-2. G4_TEST_VERBOSE=1 prints. */
    static const struct { uint32_t type; double gauss, smooth; } B[] = {
        { G4_TYPE_F32,    0,      0 },
        { G4_TYPE_F16,    7e-8,   7e-8 },     /* measured 4.5e-8 4.7e-8 */
        { G4_TYPE_BF16,   4.5e-6, 4.5e-6 },   /* 2.9e-6 2.9e-6 */
        { G4_TYPE_Q8_0,   4.5e-5, 1.5e-5 },   /* 2.9e-5 9.1e-6 */
        { G4_TYPE_Q6_K,   5e-4,   1.6e-4 },   /* 3.1e-4 1.0e-4 */
        { G4_TYPE_Q5_0,   2e-3,   9e-4 },     /* 1.85e-3 5.6e-4 */
        { G4_TYPE_Q5_1,   2e-3,   1e-4 },     /* 1.45e-3 6.9e-5 */
        { G4_TYPE_Q5_K,   2e-3,   1.8e-4 },   /* 1.34e-3 1.2e-4 */
        { G4_TYPE_Q4_0,   1e-2,   3.5e-3 },   /* 7.3e-3 2.3e-3 */
        { G4_TYPE_Q4_1,   9.5e-3, 4.5e-4 },   /* 6.4e-3 2.9e-4 */
        { G4_TYPE_Q4_K,   8e-3,   7e-4 },     /* 5.3e-3 4.5e-4 */
        { G4_TYPE_IQ4_NL, 8.5e-3, 5e-3 },     /* 5.7e-3 3.2e-3 */
        { G4_TYPE_IQ4_XS, 8.5e-3, 5e-3 },     /* 5.8e-3 3.3e-3 */
        { G4_TYPE_Q3_K,   3.5e-2, 9e-3 },     /* 2.3e-2 6.0e-3 */
        { G4_TYPE_Q2_K,   1.4e-1, 1e-2 },     /* 9.1e-2 6.6e-3 */
    };
    for (size_t k = 0; k < sizeof B / sizeof B[0]; k++) {
        const double eg = roundtrip_nmse(B[k].type, g, N), es = roundtrip_nmse(B[k].type, sm, N);
        if (getenv("G4_TEST_VERBOSE")) fprintf(stderr, "    round trip %-7s gauss %.3g smooth %.3g\n",
                                               quant_traits(B[k].type)->name, eg, es);
        T_CHECKF(eg <= B[k].gauss, "%s gauss NMSE %.3g > %.3g", quant_traits(B[k].type)->name, eg, B[k].gauss);
        T_CHECKF(es <= B[k].smooth, "%s smooth NMSE %.3g > %.3g", quant_traits(B[k].type)->name, es, B[k].smooth);
    }
    /* zero input round-trips to zero; a non-multiple length is refused */
    memset(g, 0, N * sizeof *g);
    for (size_t k = 0; k < sizeof B / sizeof B[0]; k++) T_CHECK(roundtrip_nmse(B[k].type, g, 512) == 0);
    uint8_t tmp[64];
    T_CHECK(quant_quantize_row(G4_TYPE_Q4_K, sm, tmp, 100) == 0);
    T_CHECK(quant_quantize_row(G4_TYPE_Q8_K, sm, tmp, 256) == 0);
    free(g);
    free(sm);
}

/* ==== 6. dot products ==== */

static void fill_act(int dt, const float *x, void *y, int64_t n) {
    switch (dt) {
    case G4_TYPE_F32: quant_act_f32(x, y, n); break;
    case G4_TYPE_F16: quant_act_f16(x, y, n); break;
    case G4_TYPE_BF16: quant_act_bf16(x, y, n); break;
    case G4_TYPE_Q8_0: quant_act_q8_0(x, y, n); break;
    case G4_TYPE_Q8_1: quant_act_q8_1(x, y, n); break;
    case G4_TYPE_Q8_K: quant_act_q8_K(x, y, n); break;
    default: break;
    }
}

static void dot_products(void) {
    static const uint32_t W[] = { G4_TYPE_F32, G4_TYPE_F16, G4_TYPE_BF16, G4_TYPE_Q4_0, G4_TYPE_Q4_1,
                                  G4_TYPE_Q5_0, G4_TYPE_Q5_1, G4_TYPE_Q8_0, G4_TYPE_IQ4_NL, G4_TYPE_Q2_K,
                                  G4_TYPE_Q3_K, G4_TYPE_Q4_K, G4_TYPE_Q5_K, G4_TYPE_Q6_K, G4_TYPE_IQ4_XS };
    enum { NMAX = 7 * 256 };
    static float xw[NMAX], xa[NMAX], dw[NMAX], da[NMAX];
    static uint8_t qw[NMAX * 4 + 64], qa[NMAX * 4 + 64];
    uint64_t s = 99;
    for (size_t k = 0; k < sizeof W / sizeof W[0]; k++) {
        const g4_type_traits *tr = quant_traits(W[k]);
        const int blocks[] = { 1, 2, 7 };
        for (int bi = 0; bi < 3; bi++) {
            for (int rep = 0; rep < 4; rep++) {
                const int64_t n = (int64_t)blocks[bi] * (tr->blck == 1 ? 32 : tr->blck);
                for (int64_t i = 0; i < n; i++) {
                    xw[i] = gauss(&s) * (rep == 3 ? 100.0f : 0.1f) + (rep == 2 ? 0.05f : 0.0f);
                    xa[i] = gauss(&s) * (rep == 1 ? 0.001f : 1.0f);
                }
                if (rep == 2) xa[3] = 40.0f; /* an outlier activation */
                quant_quantize_row(W[k], xw, qw, n);
                fill_act(tr->dot_type, xa, qa, n);
                quant_dequant_row(W[k], qw, dw, n);
                quant_dequant_row((uint32_t)tr->dot_type, qa, da, n);
                double ref = 0, mag = 0, tol_extra = 0;
                for (int64_t i = 0; i < n; i++) {
                    ref += (double)dw[i] * (double)da[i];
                    mag += fabs((double)dw[i] * (double)da[i]);
                }
                if (tr->dot_type == G4_TYPE_Q8_1) {
                    /* the +m*s term uses s = fp16(d * sum q): allow its rounding */
                    const size_t wb = tr->bytes;
                    for (int64_t b = 0; b < n / 32; b++) {
                        const uint8_t *ab = qa + b * 36;
                        int sum = 0;
                        for (int j = 0; j < 32; j++) sum += (int8_t)ab[4 + j];
                        const double exact = (double)quant_rdh(ab) * sum;
                        tol_extra += fabs((double)quant_rdh(qw + b * wb + 2)) * fabs((double)quant_rdh(ab + 2) - exact);
                    }
                    /* ... and the d_w*d_a product vs dequantized d_a*q */
                }
                const double got = (double)quant_vec_dot(W[k], qw, qa, n);
                const double tol = 2e-6 * mag + tol_extra * 1.0001 + 1e-30;
                T_CHECKF(fabs(got - ref) <= tol, "%s n=%lld rep %d: %.9g vs %.9g (tol %.3g)",
                         tr->name, (long long)n, rep, got, ref, tol);
            }
        }
    }
}

/* ==== 7. activation quantizers ==== */

static int8_t qs_at(const uint8_t *blk, int off, int j) { return (int8_t)blk[off + j]; }

static void act_quantizers(void) {
    float x[256];
    uint8_t a[292], b[292];

    /* all-zero block */
    memset(x, 0, sizeof x);
    memset(a, 0x5a, sizeof a);
    quant_act_q8_0(x, a, 32);
    int z = quant_rd16(a) == 0;
    for (int j = 0; j < 32; j++) z &= a[2 + j] == 0;
    T_CHECK(z);
    memset(a, 0x5a, sizeof a);
    quant_act_q8_0_ref(x, a, 32);
    z = quant_rd16(a) == 0;
    for (int j = 0; j < 32; j++) z &= a[2 + j] == 0;
    T_CHECK(z);
    memset(a, 0x5a, sizeof a);
    quant_act_q8_1(x, a, 32);
    z = quant_rd16(a) == 0 && quant_rd16(a + 2) == 0;
    for (int j = 0; j < 32; j++) z &= a[4 + j] == 0;
    T_CHECK(z);
    memset(a, 0x5a, sizeof a);
    quant_act_q8_K(x, a, 256);
    z = 1;
    for (int j = 0; j < 292; j++) z &= a[j] == 0;
    T_CHECK(z);

    /* ties: amax 127 -> id = 1 in both conventions; x = k + 0.5 */
    memset(x, 0, sizeof x);
    x[0] = 127.0f; x[1] = 2.5f; x[2] = -2.5f; x[3] = 3.5f; x[4] = -0.5f; x[5] = 0.5f; x[6] = 126.5f;
    quant_act_q8_0(x, a, 32);      /* half to even */
    quant_act_q8_0_ref(x, b, 32);  /* half away from zero */
    T_CHECK(quant_rd16(a) == g4_f32_to_f16(1.0f) && quant_rd16(b) == quant_rd16(a));
    T_CHECK(qs_at(a, 2, 0) == 127 && qs_at(a, 2, 1) == 2 && qs_at(a, 2, 2) == -2 && qs_at(a, 2, 3) == 4);
    T_CHECK(qs_at(a, 2, 4) == 0 && qs_at(a, 2, 5) == 0 && qs_at(a, 2, 6) == 126);
    T_CHECK(qs_at(b, 2, 0) == 127 && qs_at(b, 2, 1) == 3 && qs_at(b, 2, 2) == -3 && qs_at(b, 2, 3) == 4);
    T_CHECK(qs_at(b, 2, 4) == -1 && qs_at(b, 2, 5) == 1 && qs_at(b, 2, 6) == 127);
    quant_act_q8_1(x, a, 32);
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += qs_at(a, 4, j);
    T_CHECK(sum == 127 + 2 - 2 + 4 + 126 && quant_rd16(a + 2) == g4_f32_to_f16((float)sum));

    /* single non-zero element, negative: maps to -127 */
    memset(x, 0, sizeof x);
    x[5] = -3.0f;
    quant_act_q8_0(x, a, 32);
    T_CHECK(qs_at(a, 2, 5) == -127 && quant_rd16(a) == g4_f32_to_f16(3.0f / 127.0f));
    quant_act_q8_K(x, a, 256);
    float d;
    memcpy(&d, a, 4);
    T_CHECK(qs_at(a, 4, 5) == -127 && d == 1 / (-127.0f / -3.0f));
    int16_t bs0;
    memcpy(&bs0, a + 260, 2);
    T_CHECK(bs0 == -127);

    /* maxima at both signs: +m and -m give +127 and -127 */
    memset(x, 0, sizeof x);
    x[1] = 0.75f; x[30] = -0.75f; x[7] = 0.1f;
    quant_act_q8_0(x, a, 32);
    T_CHECK(qs_at(a, 2, 1) == 127 && qs_at(a, 2, 30) == -127 && qs_at(a, 2, 7) == 17);
    /* Q8_K keeps the first of tied maxima: max = -2 (index 3), so d > 0 */
    memset(x, 0, sizeof x);
    x[3] = -2.0f; x[10] = 2.0f; x[200] = 1.0f;
    quant_act_q8_K(x, a, 256);
    memcpy(&d, a, 4);
    T_CHECK(d > 0 && qs_at(a, 4, 3) == -127 && qs_at(a, 4, 10) == 127 && qs_at(a, 4, 200) == 64);
    /* ... and a positive maximum gives d < 0 and code -127 */
    x[3] = 0; x[10] = 0;
    quant_act_q8_K(x, a, 256);
    memcpy(&d, a, 4);
    T_CHECK(d < 0 && qs_at(a, 4, 200) == -127);

    /* random data: x86 convention equals an independent evaluation with nearbyintf */
    uint64_t s = 5;
    long bad = 0;
    for (int rep = 0; rep < 200; rep++) {
        for (int j = 0; j < 32; j++) x[j] = gauss(&s) * (rep % 7 == 0 ? 1e-3f : 2.0f);
        quant_act_q8_0(x, a, 32);
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float id = 127.0f / amax;
        if (quant_rd16(a) != g4_f32_to_f16(amax / 127.0f)) bad++;
        for (int j = 0; j < 32; j++) if (qs_at(a, 2, j) != (int)nearbyintf(x[j] * id)) bad++;
        quant_act_q8_0_ref(x, b, 32);
        const float dd = amax / 127.0f, idr = 1.0f / dd;
        for (int j = 0; j < 32; j++) if (qs_at(b, 2, j) != (int)roundf(x[j] * idr)) bad++;
    }
    T_CHECKF(bad == 0, "%ld activation codes differ", bad);
}

T_GROUP(quant) {
    golden_hashes();
    f16_conversions();
    bf16_conversions();
    dequant_goldens();
    quantize_goldens();
    round_trips();
    dot_products();
    act_quantizers();
}
