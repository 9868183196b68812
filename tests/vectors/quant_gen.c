/* quant_gen.c - offline generator of tests/vectors/quant_dequant.txt and quant_quantize.txt
 * from ggml's own reference code (llama.cpp v0.5.0, the tree in node-llama-cpp@3.22.1).
 * Never part of the build; see tests/vectors/README.md for the exact command.
 *
 * quant_dequant.txt : "<type> <n> <block bytes hex> <f32 bits hex> x n" per line, random
 *                     blocks (random bytes, f16 scale fields set to finite values) through
 *                     ggml's dequantize_row_*.
 * quant_quantize.txt: "<type> <n> <f32 input bits hex> x n <output bytes hex>" per line,
 *                     ggml's quantize_row_*_ref on gaussian-ish rows with edge blocks.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "ggml.h"
#include "ggml-quants.h"

/* stubs for the few ggml.c symbols ggml-quants.o references (unused by these paths) */
void ggml_abort(const char *file, int line, const char *fmt, ...) { (void)fmt; fprintf(stderr, "abort %s:%d\n", file, line); exit(1); }
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void)type; (void)ne; return 0; }
const char *ggml_type_name(enum ggml_type type) { (void)type; return "?"; }
size_t ggml_type_size(enum ggml_type type) { (void)type; return 0; }

static uint64_t st = 0x1234567;
static uint32_t rnd(void) { st = st * 6364136223846793005ull + 1442695040888963407ull; return (uint32_t)(st >> 33); }
static float unif(void) { return (float)rnd() / 2147483648.0f - 1.0f; }
static float gaussf(void) { float s = 0; for (int i = 0; i < 6; i++) s += unif(); return s * 0.7f; }

/* a finite f16 with exponent in [lo, hi] (biased), random sign */
static uint16_t rand_f16(int lo, int hi) {
    int e = lo + (int)(rnd() % (unsigned)(hi - lo + 1));
    return (uint16_t)((rnd() & 1) << 15 | e << 10 | (rnd() & 0x3ff));
}

typedef void (*dq_fn)(const void *x, float *y, int64_t k);
typedef void (*q_fn)(const float *x, void *y, int64_t k);

struct dq_case { int type; int blck; int bytes; int f16_off[2]; dq_fn fn; };

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: quant_gen dequant.txt quantize.txt\n"); return 2; }
    const struct dq_case C[] = {
        { 2,  32, 18,  { 0, -1 },    (dq_fn)dequantize_row_q4_0 },
        { 3,  32, 20,  { 0, 2 },     (dq_fn)dequantize_row_q4_1 },
        { 6,  32, 22,  { 0, -1 },    (dq_fn)dequantize_row_q5_0 },
        { 7,  32, 24,  { 0, 2 },     (dq_fn)dequantize_row_q5_1 },
        { 8,  32, 34,  { 0, -1 },    (dq_fn)dequantize_row_q8_0 },
        { 20, 32, 18,  { 0, -1 },    (dq_fn)dequantize_row_iq4_nl },
        { 10, 256, 84, { 80, 82 },   (dq_fn)dequantize_row_q2_K },
        { 11, 256, 110, { 108, -1 }, (dq_fn)dequantize_row_q3_K },
        { 12, 256, 144, { 0, 2 },    (dq_fn)dequantize_row_q4_K },
        { 13, 256, 176, { 0, 2 },    (dq_fn)dequantize_row_q5_K },
        { 14, 256, 210, { 208, -1 }, (dq_fn)dequantize_row_q6_K },
        { 23, 256, 136, { 0, -1 },   (dq_fn)dequantize_row_iq4_xs },
    };
    FILE *f = fopen(argv[1], "w");
    if (!f) return 1;
    fprintf(f, "# ggml v0.5.0 dequantize_row_* on random blocks: type n bytes-hex f32-bits-hex...\n");
    for (size_t c = 0; c < sizeof C / sizeof C[0]; c++) {
        for (int rep = 0; rep < 6; rep++) {
            const int nblk = C[c].blck == 32 ? 3 : 2;
            const int n = nblk * C[c].blck;
            uint8_t buf[1024];
            float y[1024];
            for (int i = 0; i < nblk * C[c].bytes; i++) buf[i] = (uint8_t)rnd();
            for (int b = 0; b < nblk; b++)
                for (int k = 0; k < 2; k++) {
                    if (C[c].f16_off[k] < 0) continue;
                    uint16_t h = rep == 5 && b == 0 ? (uint16_t)(rnd() & 0x3ff) /* subnormal */ : rand_f16(5, 20);
                    memcpy(buf + b * C[c].bytes + C[c].f16_off[k], &h, 2);
                }
            C[c].fn(buf, y, n);
            fprintf(f, "%d %d ", C[c].type, n);
            for (int i = 0; i < nblk * C[c].bytes; i++) fprintf(f, "%02x", buf[i]);
            for (int i = 0; i < n; i++) { uint32_t u; memcpy(&u, &y[i], 4); fprintf(f, " %08x", u); }
            fprintf(f, "\n");
        }
    }
    fclose(f);

    struct { int type; int bytes_per_256; q_fn fn; } Q[] = {
        { 8,  34 * 8, (q_fn)quantize_row_q8_0_ref },
        { 2,  18 * 8, (q_fn)quantize_row_q4_0_ref },
        { 3,  20 * 8, (q_fn)quantize_row_q4_1_ref },
        { 6,  22 * 8, (q_fn)quantize_row_q5_0_ref },
        { 7,  24 * 8, (q_fn)quantize_row_q5_1_ref },
        { 12, 144,    (q_fn)quantize_row_q4_K_ref },
        { 13, 176,    (q_fn)quantize_row_q5_K_ref },
        { 14, 210,    (q_fn)quantize_row_q6_K_ref },
    };
    f = fopen(argv[2], "w");
    if (!f) return 1;
    fprintf(f, "# ggml v0.5.0 quantize_row_*_ref: type n f32-bits-hex... bytes-hex\n");
    for (size_t q = 0; q < sizeof Q / sizeof Q[0]; q++) {
        for (int rep = 0; rep < 3; rep++) {
            const int n = 512;
            float x[512];
            uint8_t out[2048];
            for (int i = 0; i < n; i++) x[i] = gaussf() * (rep == 1 ? 0.02f : 1.0f) + (rep == 2 ? 0.3f : 0.0f);
            if (rep == 0) {
                for (int i = 0; i < 32; i++) x[i] = 0.0f;            /* a zero block */
                for (int i = 32; i < 64; i++) x[i] = 0.25f;          /* a constant block */
                x[300] = 25.0f;                                      /* an outlier */
            }
            if (rep == 2) for (int i = 256; i < 512; i++) x[i] = fabsf(x[i]); /* all positive */
            Q[q].fn(x, out, n);
            fprintf(f, "%d %d", Q[q].type, n);
            for (int i = 0; i < n; i++) { uint32_t u; memcpy(&u, &x[i], 4); fprintf(f, " %08x", u); }
            fprintf(f, " ");
            for (int i = 0; i < Q[q].bytes_per_256 * 2; i++) fprintf(f, "%02x", out[i]);
            fprintf(f, "\n");
        }
    }
    fclose(f);
    return 0;
}
