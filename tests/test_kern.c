/* test_kern.c - group `kern`: every kernel table this CPU runs, against the scalar table.
 *
 * - activation quantizers: bit-exact with the scalar table (random rows, edge blocks)
 * - matmul: every weight type x n_tok in {1,2,3,7,32} x odd row ranges, on quantized
 *   gaussian rows and on random blocks (random bytes, finite f16 scales); NMSE <= 1e-6 vs
 *   the scalar table on the same activation bytes; NaN/Inf in the same places; guard
 *   sentinels around the written rows untouched; the same for every other kernel of the
 *   type (matmul_grp, and whatever the table's pick chooses: llama.cpp's other float orders);
 *   a table whose F16 kernels accumulate in fp16 lanes (f16_lanes) is checked bit for bit
 *   against quant_dot_f16_fp16 instead
 * - every matmul / matmul_grp: an output's bits do not depend on the other columns (70 tokens
 *   at once = 4 at a time) or rows (1 and 3 tokens over 34 rows = one row at a time) of the call
 * - geglu: bit-exact with kern_geglu_ref over a table of scattered finite f16 values (random
 *   gates over the table's range and past +-10, the +-10 edges, f16 rounding ties, signed
 *   zeros, tails): every lookup index and the edges must agree
 * - expsum: every lane kern_expf's, the sum near the exact one, for every table
 * - sub_max / scale: bit for bit the softmax's scalar loops (tails, signed zeros at the max)
 * - rope_neox: bit for bit kern_rope_neox_ref (every n_rot up to 66 and the model's, tails)
 * - matmul_f16x / round_f16: bit for bit the F16 kernels they stand for (f16x)
 * - kern_select: forcing, $G4_ISA, unknown and unrunnable names
 * Set G4_TEST_VERBOSE=1 to print the worst NMSE per table and type.
 */
#include "t.h"

#include <stdlib.h>
#include <string.h>

#include "kern/kern.h"
#include "quant/quant_ref.h"

static const uint32_t WTYPES[] = { G4_TYPE_F32, G4_TYPE_F16, G4_TYPE_BF16, G4_TYPE_Q4_0, G4_TYPE_Q4_1,
                                   G4_TYPE_Q5_0, G4_TYPE_Q5_1, G4_TYPE_Q8_0, G4_TYPE_IQ4_NL, G4_TYPE_Q2_K,
                                   G4_TYPE_Q3_K, G4_TYPE_Q4_K, G4_TYPE_Q5_K, G4_TYPE_Q6_K, G4_TYPE_IQ4_XS };
#define N_WTYPES ((int)(sizeof WTYPES / sizeof WTYPES[0]))

static float gauss(uint64_t *s) {
    double u1 = ((double)(t_rng_next(s) >> 11) + 1.0) / 9007199254740993.0;
    double u2 = (double)(t_rng_next(s) >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* byte offsets of the f16 scale fields of one block (-1 = none) */
static void f16_fields(uint32_t type, int off[2]) {
    off[0] = off[1] = -1;
    switch (type) {
    case G4_TYPE_Q4_0: case G4_TYPE_Q5_0: case G4_TYPE_Q8_0: case G4_TYPE_IQ4_NL: case G4_TYPE_IQ4_XS: off[0] = 0; break;
    case G4_TYPE_Q4_1: case G4_TYPE_Q5_1: case G4_TYPE_Q4_K: case G4_TYPE_Q5_K: off[0] = 0; off[1] = 2; break;
    case G4_TYPE_Q2_K: off[0] = 80; off[1] = 82; break;
    case G4_TYPE_Q3_K: off[0] = 108; break;
    case G4_TYPE_Q6_K: off[0] = 208; break;
    default: break;
    }
}

/* n_rows rows of n_in: mode 0 = quantized gaussian rows, 1 = random blocks */
static void make_weights(uint32_t type, int mode, int64_t n_rows, int64_t n_in, uint8_t *w, uint64_t *s) {
    const g4_type_traits *tr = quant_traits(type);
    const size_t rb = quant_row_bytes(type, n_in);
    float *x = malloc((size_t)n_in * sizeof *x);
    for (int64_t r = 0; r < n_rows; r++) {
        uint8_t *row = w + (size_t)r * rb;
        if (mode != 1 || tr->blck == 1) {
            const float scale = 0.02f * (float)(1 + r % 5);
            for (int64_t i = 0; i < n_in; i++) x[i] = gauss(s) * scale + (r % 3 == 1 ? 0.01f : 0.0f);
            quant_quantize_row(type, x, row, n_in);
        } else {
            for (size_t i = 0; i < rb; i++) row[i] = (uint8_t)t_rng_next(s);
            int off[2];
            f16_fields(type, off);
            for (size_t b = 0; b < rb / tr->bytes; b++)
                for (int k = 0; k < 2; k++) {
                    if (off[k] < 0) continue;
                    /* finite, |v| in [2^-10, 2^-3) */
                    const uint16_t h = (uint16_t)((t_rng_next(s) & 1) << 15 | (5 + t_rng_next(s) % 7) << 10 | (t_rng_next(s) & 0x3ff));
                    memcpy(row + b * tr->bytes + off[k], &h, 2);
                }
        }
    }
    free(x);
}

static const g4_kern *scalar_table(const g4_kern **ks, int nk) {
    for (int i = 0; i < nk; i++) if (!strcmp(ks[i]->name, "scalar")) return ks[i];
    return NULL;
}

/* the reference of a table's Q8_0/Q8_1 activation convention (kern.h act_q8_inv) */
static g4_quant_act_fn act_ref(const g4_kern *ref, const g4_kern *k, int dt) {
    if (k->act_q8_inv && dt == G4_TYPE_Q8_0) return quant_act_q8_0_arm;
    if (k->act_q8_inv && dt == G4_TYPE_Q8_1) return quant_act_q8_1_arm;
    return ref->quantize_act[dt];
}

static void act_quantizers(const g4_kern *ref, const g4_kern *k) {
    static const int DT[] = { G4_TYPE_F32, G4_TYPE_F16, G4_TYPE_BF16, G4_TYPE_Q8_0, G4_TYPE_Q8_1, G4_TYPE_Q8_K };
    enum { N = 2048 };
    float *x = malloc(N * sizeof *x);
    uint8_t *a = malloc(N * 4 + 64), *b = malloc(N * 4 + 64);
    uint64_t s = 3;
    for (int d = 0; d < 6; d++) {
        const int dt = DT[d];
        T_CHECKF(k->quantize_act[dt] != NULL, "%s: no quantize_act for dot type %d", k->name, dt);
        if (!k->quantize_act[dt]) continue;
        int bad = 0;
        for (int rep = 0; rep < 12; rep++) {
            const int64_t n = dt == G4_TYPE_Q8_K ? 256 * (1 + rep % 8) : 32 * (1 + rep * 5);
            for (int64_t i = 0; i < n; i++) x[i] = gauss(&s) * (rep % 4 == 0 ? 1e-3f : 3.0f);
            if (rep == 1) memset(x, 0, (size_t)n * sizeof *x);                     /* all zero */
            if (rep == 2) for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 9) - 4.0f + 0.5f; /* ties */
            if (rep == 3) { for (int64_t i = 0; i < n; i++) x[i] = 0; x[n / 2] = -7.0f; x[1] = 7.0f; }
            if (rep == 4) { x[0] = 1e-30f; x[1] = -1e-40f; x[2] = 65519.0f; x[3] = -65520.0f; } /* f16 edges */
            if (rep == 5) for (int64_t i = 0; i < n; i += 7) x[i] = (float)(i % 255) * 0.5f;  /* exact multiples */
            /* odd lengths for the float types (tails) */
            const int64_t nn = dt <= G4_TYPE_F16 || dt == G4_TYPE_BF16 ? n + rep % 7 : n;
            const size_t bytes = kern_act_row_bytes(dt, nn);
            memset(a, 0x11, bytes + 16);
            memset(b, 0x22, bytes + 16);
            act_ref(ref, k, dt)(x, a, nn);
            k->quantize_act[dt](x, b, nn);
            if (memcmp(a, b, bytes) != 0) bad++;
            if (b[bytes] != 0x22 || b[bytes + 15] != 0x22) bad++;
        }
        T_CHECKF(bad == 0, "%s: quantize_act dot type %d differs from its reference in %d rows", k->name, dt, bad);
    }
    free(x);
    free(a);
    free(b);
}

static int same_class(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return 1;
}

/* Every kernel a table has for a type: matmul, matmul_grp and whatever its pick chooses for
 * ops of 1 ... 16 columns, either storage (KERN_PLAIN or not) and n_out a multiple of 8 or
 * odd; up to cap, without repeats. */
static int kernels_of(const g4_kern *k, uint32_t type, g4_matmul_fn *fns, int cap) {
    int n = 0;
    g4_matmul_fn cand[2 + 6 * 2 * 2 * 2];
    int nc = 0;
    cand[nc++] = k->matmul[type];
    cand[nc++] = k->matmul_grp[type];
    static const int64_t NS[] = { 1, 2, 3, 4, 8, 16 };
    for (int i = 0; i < 6; i++)
        for (int c = 0; c < 2; c++)
            for (int o = 0; o < 2; o++)
                for (unsigned f = 0; f < 2; f++)
                    cand[nc++] = kern_pick(k, type, NS[i], c ? NS[i] - 1 : 0, 768, o ? 13 : 64, f ? KERN_PLAIN : 0);
    for (int i = 0; i < nc; i++) {
        int seen = !cand[i];
        for (int j = 0; j < n && !seen; j++) seen = fns[j] == cand[i];
        if (!seen && n < cap) fns[n++] = cand[i];
    }
    return n;
}

static void matmuls(const g4_kern *ref, const g4_kern *k) {
    const int toks[] = { 1, 2, 3, 7, 9, 32 }; /* 9: a one-token group after a full one of 8 */
    const float SENT = -12345.678f;
    uint64_t s = 77;
    for (int wi = 0; wi < N_WTYPES; wi++) {
        const uint32_t type = WTYPES[wi];
        const g4_type_traits *tr = quant_traits(type);
        const int dt = tr->dot_type;
        if (!ref->matmul[type]) continue;
        g4_matmul_fn fns[8];
        const int nf = kernels_of(k, type, fns, 8);
        T_CHECKF(k->matmul[type] != NULL, "%s: no matmul for %s", k->name, tr->name);
        for (int fi = 0; fi < nf; fi++) {
            const g4_matmul_fn fn = fns[fi];
            /* fp16-lane tables: their F16 kernels are bit-exact with the fp16 model instead */
            const int f16m = type == G4_TYPE_F16 && k->f16_lanes ? (fn == kern_pick(k, type, 8, 0, 768, 64, 0) ? 1 : 0) : -1;
            double worst = 0;
            int inexact = 0;
            for (int mode = 0; mode < 3; mode++) {
                /* K-quants: 3 super-blocks; 32-blocks: 7 blocks, or 24; float types: odd lengths;
                 * mode 2: quantized rows of ffn_down length (6144); 32-blocks: 289 blocks, past the
                 * x86 drivers' 256-block activation-scale segments, with an odd last segment */
                const int64_t n_in = mode == 2 ? (tr->blck == 32 ? 32 * 289 : 6144)
                                   : tr->blck == 256 ? 768 : tr->blck == 32 ? (mode ? 768 : 224) : (mode ? 768 : 37);
                const int64_t n_out = 13;
                const size_t wrb = quant_row_bytes(type, n_in), xrb = kern_act_row_bytes(dt, n_in);
                uint8_t *w = malloc(wrb * (size_t)n_out);
                make_weights(type, mode, n_out, n_in, w, &s);
                for (int ti = 0; ti < (int)(sizeof toks / sizeof toks[0]); ti++) {
                    const int n_tok = toks[ti];
                    if (mode == 2 && n_tok > 7) continue;
                    const size_t ldy = (size_t)n_out + 3;
                    float *x = malloc((size_t)n_in * (size_t)n_tok * sizeof *x);
                    uint8_t *xq = malloc(xrb * (size_t)n_tok + 16);
                    float *y0 = malloc(ldy * (size_t)n_tok * sizeof *y0 + 64), *y1 = malloc(ldy * (size_t)n_tok * sizeof *y1 + 64);
                    for (int64_t i = 0; i < n_in * n_tok; i++) x[i] = gauss(&s) * (i % 11 == 0 ? 4.0f : 1.0f);
                    for (int t = 0; t < n_tok; t++) ref->quantize_act[dt](x + (size_t)t * (size_t)n_in, xq + (size_t)t * xrb, n_in);
                    const int64_t ranges[2][2] = { { 0, n_out }, { 2, n_out - 2 } };
                    for (int ri = 0; ri < 2; ri++) {
                        const int64_t r0 = ranges[ri][0], r1 = ranges[ri][1];
                        for (size_t i = 0; i < ldy * (size_t)n_tok + 16; i++) y0[i] = y1[i] = SENT;
                        ref->matmul[type](y0, ldy, w, wrb, xq, xrb, n_in, r0, r1, n_tok);
                        fn(y1, ldy, w, wrb, xq, xrb, n_in, r0, r1, n_tok);
                        int guards = 1, classes = 1;
                        double num = 0, den = 0;
                        for (int t = 0; t < n_tok; t++)
                            for (size_t r = 0; r < ldy; r++) {
                                const size_t i = (size_t)t * ldy + r;
                                const int written = (int64_t)r >= r0 && (int64_t)r < r1;
                                if (!written) { guards &= y1[i] == SENT; continue; }
                                classes &= same_class(y0[i], y1[i]);
                                if (f16m >= 0) {
                                    const float e = quant_dot_f16_fp16(w + r * wrb, xq + (size_t)t * xrb, n_in, f16m);
                                    inexact += memcmp(&e, &y1[i], sizeof e) != 0;
                                } else if (isfinite(y0[i]) && isfinite(y1[i])) {
                                    const double d = (double)y0[i] - (double)y1[i];
                                    num += d * d;
                                    den += (double)y0[i] * (double)y0[i];
                                }
                            }
                        for (size_t i = ldy * (size_t)n_tok; i < ldy * (size_t)n_tok + 16; i++) guards &= y1[i] == SENT;
                        const double nmse = den > 0 ? num / den : num;
                        if (nmse > worst) worst = nmse;
                        T_CHECKF(guards, "%s %s n_tok %d rows [%lld,%lld): wrote outside its rows", k->name, tr->name,
                                 n_tok, (long long)r0, (long long)r1);
                        T_CHECKF(classes, "%s %s n_tok %d: NaN/Inf differ", k->name, tr->name, n_tok);
                        T_CHECKF(nmse <= 1e-6, "%s %s kernel %d mode %d n_tok %d rows [%lld,%lld): NMSE %.3g", k->name, tr->name,
                                 fi, mode, n_tok, (long long)r0, (long long)r1, nmse);
                    }
                    free(x); free(xq); free(y0); free(y1);
                }
                free(w);
            }
            T_CHECKF(inexact == 0, "%s %s kernel %d: %d outputs differ from the fp16 model (tb %d)", k->name, tr->name, fi, inexact, f16m);
            if (getenv("G4_TEST_VERBOSE"))
                fprintf(stderr, "    %-7s %-7s kernel %d worst NMSE %.3g%s\n", k->name, tr->name, fi, worst, f16m >= 0 ? " (fp16 model: exact)" : "");
        }
    }
}

/* A column's result does not depend on the other columns of the call: every matmul and
 * matmul_grp on 70 tokens at once (the AVX-512 Q4_K gemm's repacked path: blocks of 64 tokens,
 * groups of 8, 16-row tiles, chunks of 4 super-blocks) equals, bit for bit, the same kernel on
 * the same tokens 4 at a time (below its repacking threshold), over rows [3, 37) of 40. */
static void column_splits(const g4_kern *k) {
    uint64_t s = 99;
    enum { NT = 70, NO = 40, PIECE = 4 };
    for (int wi = 0; wi < N_WTYPES; wi++) {
        const uint32_t type = WTYPES[wi];
        const g4_type_traits *tr = quant_traits(type);
        const int dt = tr->dot_type;
        if (!k->matmul[type]) continue;
        const int64_t n_in = 6144;
        const size_t wrb = quant_row_bytes(type, n_in), xrb = kern_act_row_bytes(dt, n_in);
        uint8_t *w = malloc(wrb * NO), *xq = malloc(xrb * NT);
        float *x = malloc((size_t)n_in * sizeof *x), *y0 = malloc(NO * NT * sizeof *y0), *y1 = malloc(NO * NT * sizeof *y1);
        make_weights(type, 0, NO, n_in, w, &s);
        for (int t = 0; t < NT; t++) {
            for (int64_t i = 0; i < n_in; i++) x[i] = gauss(&s) * (i % 11 == 0 ? 4.0f : 1.0f);
            k->quantize_act[dt](x, xq + (size_t)t * xrb, n_in);
        }
        for (int g = 0; g < 2; g++) {
            const g4_matmul_fn fn = g ? k->matmul_grp[type] : k->matmul[type];
            if (!fn) continue;
            memset(y0, 0, NO * NT * sizeof *y0);
            memset(y1, 0, NO * NT * sizeof *y1);
            fn(y0, NO, w, wrb, xq, xrb, n_in, 3, NO - 3, NT);
            for (int t = 0; t < NT; t += PIECE)
                fn(y1 + (size_t)t * NO, NO, w, wrb, xq + (size_t)t * xrb, xrb, n_in, 3, NO - 3, NT - t < PIECE ? NT - t : PIECE);
            int bad = 0;
            for (int i = 0; i < NO * NT; i++) bad += memcmp(&y0[i], &y1[i], sizeof *y0) != 0;
            T_CHECKF(bad == 0, "%s %s %s: %d of %d outputs change with the columns in the call", k->name, tr->name,
                     g ? "matmul_grp" : "matmul", bad, NO * NT);
            /* nor on the other rows: 1 and 3 tokens over rows [3, 37) at once = one row at a time
             * (the decode kernels' passes of 2 and 4 rows, their odd rows and tails) */
            for (int nt = 1; nt <= 3; nt += 2) {
                fn(y0, NO, w, wrb, xq, xrb, n_in, 3, NO - 3, nt);
                for (int r = 3; r < NO - 3; r++) fn(y1, NO, w, wrb, xq, xrb, n_in, r, r + 1, nt);
                int badr = 0;
                for (int t = 0; t < nt; t++)
                    for (int r = 3; r < NO - 3; r++) badr += memcmp(&y0[t * NO + r], &y1[t * NO + r], sizeof *y0) != 0;
                T_CHECKF(badr == 0, "%s %s %s n_tok %d: %d outputs change with the rows in the call", k->name, tr->name,
                         g ? "matmul_grp" : "matmul", nt, badr);
            }
        }
        free(w); free(xq); free(x); free(y0); free(y1);
    }
}

/* A weight type stored repacked (kern.h repack_q4_K / repack_q6_K, where a table has it): for
 * each of the n_ord float orders, rq[o] on the repacked bytes gives ref[o]'s bits on the rows,
 * for token counts across the passes' token groups and blocks and row ranges that cut tiles,
 * on gaussian and random blocks; for Q6_K and Q4_0, kern_q6_K_rq_block / kern_q4_0_rq_block read
 * every row's blocks back. one_col (a type of one order for one column or many: Q6_K): the
 * reference is ref one token at a time (its one-token kernel), and ref on all the tokens at once
 * (its token-group kernel) must give the same bits too */
static void check_repacked(const g4_kern *k, uint32_t type, kern_repack_fn repack, int n_ord, const g4_matmul_fn *ref,
                           const g4_matmul_fn *rq, uint64_t s, const int one_col) {
    const char *tn = quant_traits(type)->name;
    enum { NO = 48, NT = 70 };
    /* 32-element blocks: one block, the 26B-A4B expert and shared down widths, rows whose
     * corrections fill a call's buffer for one token (kern_x86_rqb32.h RQB_NB) */
    static const int64_t NIN[2][4] = { { 256, 1536, 2560, 0 }, { 32, 704, 2112, 32768 } };
    static const int NTOK[] = { 1, 2, 3, 4, 5, 8, 9, 17, 33, 70 };
    static const int64_t RANGE[][2] = { { 0, 48 }, { 16, 32 }, { 3, 45 }, { 17, 18 }, { 40, 48 } };
    const int b32 = quant_traits(type)->blck == 32;
    for (int ni = 0; ni < 4 && NIN[b32][ni]; ni++)
        for (int mode = 0; mode < 2; mode++) {
            const int64_t n_in = NIN[b32][ni];
            const int dt = quant_traits(type)->dot_type;
            const size_t wrb = quant_row_bytes(type, n_in), xrb = kern_act_row_bytes(dt, n_in);
            uint8_t *w = malloc(wrb * NO), *wp = malloc(wrb * NO), *xq = malloc(xrb * NT);
            float *x = malloc((size_t)n_in * sizeof *x), *y0 = malloc(NO * NT * sizeof *y0), *y1 = malloc(NO * NT * sizeof *y1);
            make_weights(type, mode, NO, n_in, w, &s);
            for (int t = 0; t < NT; t++) {
                for (int64_t i = 0; i < n_in; i++) x[i] = gauss(&s) * (i % 11 == 0 ? 4.0f : 1.0f);
                k->quantize_act[dt](x, xq + (size_t)t * xrb, n_in);
            }
            repack(wp, w, wrb, n_in, NO);
            T_CHECKF(memcmp(w, wp, wrb * NO) != 0, "%s: %s repack left the bytes as they were", k->name, tn);
            /* the types a tied head may have repacked: every row's blocks read back */
            const kern_rq_block_fn rd = kern_rq_block(type);
            if (rd) {
                const size_t bb = quant_traits(type)->bytes;
                int back = 0;
                for (int64_t r = 0; r < NO; r++)
                    for (int64_t i = 0; i < n_in / quant_traits(type)->blck; i++) {
                        uint8_t b[210];
                        rd(wp, wrb, r, i, b);
                        back += memcmp(b, w + (size_t)r * wrb + (size_t)i * bb, bb) != 0;
                    }
                T_CHECKF(back == 0, "%s: %s repacked, n_in %lld: %d blocks read back differ", k->name, tn, (long long)n_in, back);
            }
            int bad = 0, runs = 0, bad_multi = 0;
            for (int o = 0; o < n_ord; o++)
                for (int ti = 0; ti < (int)(sizeof NTOK / sizeof NTOK[0]); ti++)
                    for (int ri = 0; ri < 5; ri++) {
                        const int nt = NTOK[ti];
                        const int64_t r0 = RANGE[ri][0], r1 = RANGE[ri][1];
                        memset(y0, 0xa5, NO * NT * sizeof *y0);
                        memset(y1, 0xa5, NO * NT * sizeof *y1);
                        if (one_col)
                            for (int t = 0; t < nt; t++) ref[o](y0 + (size_t)t * NO, NO, w, wrb, xq + (size_t)t * xrb, xrb, n_in, r0, r1, 1);
                        else
                            ref[o](y0, NO, w, wrb, xq, xrb, n_in, r0, r1, nt);
                        rq[o](y1, NO, wp, wrb, xq, xrb, n_in, r0, r1, nt);
                        bad += memcmp(y0, y1, NO * (size_t)nt * sizeof *y0) != 0;
                        if (one_col) {
                            memset(y1, 0xa5, NO * NT * sizeof *y1);
                            ref[o](y1, NO, w, wrb, xq, xrb, n_in, r0, r1, nt);
                            bad_multi += memcmp(y0, y1, NO * (size_t)nt * sizeof *y0) != 0;
                        }
                        runs++;
                    }
            T_CHECKF(bad == 0, "%s: %s repacked, n_in %lld, %s blocks: %d of %d calls differ from the row-major kernels",
                     k->name, tn, (long long)n_in, mode ? "random" : "gaussian", bad, runs);
            T_CHECKF(bad_multi == 0, "%s: %s as stored, n_in %lld, %s blocks: %d of %d calls on all tokens differ from one token at a time",
                     k->name, tn, (long long)n_in, mode ? "random" : "gaussian", bad_multi, runs);
            free(w); free(wp); free(xq); free(x); free(y0); free(y1);
        }
}

/* Q4_K: matmul_rq[0] / [1] against matmul / matmul_grp (the one-column and 4-column gemm
 * orders); Q6_K: matmul_rq6, Q8_0 / Q5_0 / Q4_0 / Q5_K: matmul_rqb against matmul, their one order */
static void repacked(const g4_kern *k) {
    if (k->repack_q4_K) {
        T_CHECKF(k->matmul_rq[0] && k->matmul_rq[1] && k->matmul[G4_TYPE_Q4_K] && k->matmul_grp[G4_TYPE_Q4_K],
                 "%s: repack_q4_K without its kernels", k->name);
        const g4_matmul_fn ref[2] = { k->matmul[G4_TYPE_Q4_K], k->matmul_grp[G4_TYPE_Q4_K] };
        if (ref[0] && ref[1] && k->matmul_rq[0] && k->matmul_rq[1])
            check_repacked(k, G4_TYPE_Q4_K, k->repack_q4_K, 2, ref, k->matmul_rq, 7, 0);
    }
    if (k->repack_q6_K) {
        T_CHECKF(k->matmul_rq6 && k->matmul[G4_TYPE_Q6_K], "%s: repack_q6_K without its kernel", k->name);
        const g4_matmul_fn ref = k->matmul[G4_TYPE_Q6_K], rq = k->matmul_rq6;
        if (ref && rq) check_repacked(k, G4_TYPE_Q6_K, k->repack_q6_K, 1, &ref, &rq, 11, 1);
    }
    static const uint32_t B32[] = { G4_TYPE_Q8_0, G4_TYPE_Q5_0, G4_TYPE_Q4_0, G4_TYPE_Q5_K };
    for (int i = 0; i < (int)(sizeof B32 / sizeof B32[0]); i++) {
        const uint32_t ty = B32[i];
        if (!k->repack_b32[ty]) continue;
        T_CHECKF(k->matmul_rqb[ty] && k->matmul[ty], "%s: repack_b32[%s] without its kernel", k->name, quant_traits(ty)->name);
        const g4_matmul_fn ref = k->matmul[ty], rq = k->matmul_rqb[ty];
        if (ref && rq) check_repacked(k, ty, k->repack_b32[ty], 1, &ref, &rq, 13 + (uint64_t)i, 0);
    }
}

static void geglus(const g4_kern *k, const uint16_t *tab) {
    T_CHECKF(k->geglu != NULL, "%s: no geglu", k->name);
    if (!k->geglu) return;
    enum { N = 4099 };
    float *x = malloc(N * sizeof *x), *up = malloc(N * sizeof *up), *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint64_t s = 11;
    int bad = 0;
    for (int rep = 0; rep < 64; rep++) {
        for (int i = 0; i < N; i++) {
            x[i] = gauss(&s) * (rep % 3 == 0 ? 0.01f : rep % 3 == 1 ? 2.0f : 7.0f);
            up[i] = gauss(&s);
        }
        if (rep == 1) { /* edges: +-10 and neighbours, zeros, f16 ties (11 mantissa bits + 1) */
            const float e[] = { 10.0f, -10.0f, nextafterf(10.0f, 0), nextafterf(-10.0f, 0), nextafterf(-10.0f, -20.0f),
                                0.0f, -0.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, -(1.0f + 1.0f / 2048), 6e-8f, -3e-8f, 1e-30f };
            for (int i = 0; i < (int)(sizeof e / sizeof e[0]); i++) x[i * 5] = e[i];
        }
        const int n = rep < 8 ? rep + 1 : N - rep % 7; /* tails */
        memcpy(a, x, (size_t)n * sizeof *x);
        memcpy(b, x, (size_t)n * sizeof *x);
        kern_geglu_ref(a, up, tab, n);
        k->geglu(b, up, tab, n);
        bad += memcmp(a, b, (size_t)n * sizeof *a) != 0;
    }
    T_CHECKF(bad == 0, "%s: geglu differs from kern_geglu_ref in %d of 64 runs", k->name, bad);
    free(x); free(up); free(a); free(b);
}

/* expsum: every lane is kern_expf's (ggml_v_expf) bit for bit, masked block edges included
 * (any cell0, any n), including the |n| > 126 paths, nothing written past n; the sum within
 * 1e-6 of the exact one (its block order is the table's: checked against ggml by oracle_ops /
 * oracle_forward_neon), and on the x86 tables bit for bit kern_expsum_x86's. The AVX-512
 * table (vec_w 16) follows the AVX-512 build: kern_expf_z lanes, kern_expsum_z16 sums. */
static void expsums(const g4_kern *k) {
    T_CHECKF(k->expsum != NULL, "%s: no expsum", k->name);
    if (!k->expsum) return;
    enum { N = 1031 };
    float *x = malloc(N * sizeof *x), *y = malloc((N + 8) * sizeof *y), *z = malloc(N * sizeof *z);
    uint64_t s = 5;
    int bad = 0, badsum = 0, notx86 = 0, guard = 0;
    const int x86 = !k->act_q8_inv; /* the scalar, AVX2 and AVX-512 tables (not neon, i8mm) */
    const int z16 = k->vec_w == 16;
    float (*lane)(float) = z16 ? kern_expf_z : kern_expf;
    for (int rep = 0; rep < 40; rep++) {
        const int n = rep < 8 ? rep + 1 : N - rep;
        const int64_t cell0 = rep * 3;
        for (int i = 0; i < n; i++) x[i] = -fabsf(gauss(&s)) * (rep % 4 == 3 ? 60.0f : 4.0f);
        x[rep % n] = 0.0f;
        memcpy(y, x, (size_t)n * sizeof *x);
        for (int i = n; i < n + 8; i++) y[i] = -1.0f;
        const double sum = k->expsum(y, n, cell0);
        for (int i = n; i < n + 8; i++) guard += y[i] != -1.0f;
        if (x86) {
            memcpy(z, x, (size_t)n * sizeof *x);
            const double zs = z16 ? kern_expsum_z16(z, n, cell0) : kern_expsum_x86(z, n, cell0);
            notx86 += memcmp(&zs, &sum, sizeof zs) != 0;
        }
        double exact = 0;
        for (int i = 0; i < n; i++) {
            const float e = lane(x[i]);
            bad += memcmp(&e, &y[i], sizeof e) != 0;
            exact += (double)e;
        }
        badsum += !(fabs(sum - exact) <= 1e-6 * exact);
    }
    T_CHECKF(bad == 0, "%s: expsum lanes differ from %s in %d values", k->name, z16 ? "kern_expf_z" : "kern_expf", bad);
    T_CHECKF(badsum == 0, "%s: expsum sum off in %d of 40 rows", k->name, badsum);
    T_CHECKF(notx86 == 0, "%s: expsum sum differs from %s's in %d of 40 rows", k->name, z16 ? "kern_expsum_z16" : "kern_expsum_x86", notx86);
    T_CHECKF(guard == 0, "%s: expsum wrote past its n cells (%d)", k->name, guard);
    free(x); free(y); free(z);
}

/* sub_max / scale (the softmax's other passes): what attn_softmax's scalar loops give, bit for
 * bit, on rows of every length up to 70 and long ones (every tail), scores spread and equal,
 * and signed zeros at the max; nothing written past n */
static void softmax_steps(const g4_kern *k) {
    T_CHECKF(!k->sub_max == !k->scale, "%s: sub_max and scale come together", k->name);
    if (!k->sub_max) return;
    enum { N = 4133 };
    float *x = malloc((N + 4) * sizeof *x), *y = malloc(N * sizeof *y);
    uint64_t s = 11;
    int bad = 0, badmax = 0, guard = 0;
    for (int rep = 0; rep < 90; rep++) {
        const int n = rep < 70 ? rep + 1 : N - 7 * (rep - 70);
        for (int i = 0; i < n; i++) x[i] = gauss(&s) * (rep % 3 == 0 ? 30.0f : 2.0f);
        if (rep % 5 == 1) for (int i = 0; i < n; i++) x[i] = x[i] > 0 ? (i & 1 ? -0.0f : 0.0f) : x[i];
        if (rep % 7 == 2) for (int i = 0; i < n; i++) x[i] = 1.5f;
        for (int i = n; i < n + 4; i++) x[i] = 7.0f;
        memcpy(y, x, (size_t)n * sizeof *x);
        float max = -INFINITY;
        for (int i = 0; i < n; i++) max = y[i] > max ? y[i] : max;
        for (int i = 0; i < n; i++) y[i] -= max;
        const float m = k->sub_max(x, n);
        badmax += !(m == max);
        const float inv = 1.0f / (float)(rep + 3);
        for (int i = 0; i < n; i++) y[i] *= inv;
        k->scale(x, n, inv);
        for (int i = 0; i < n; i++) bad += memcmp(&x[i], &y[i], sizeof *x) != 0;
        for (int i = n; i < n + 4; i++) guard += x[i] != 7.0f;
    }
    T_CHECKF(badmax == 0, "%s: sub_max's max differs in %d of 90 rows", k->name, badmax);
    T_CHECKF(bad == 0, "%s: sub_max + scale differ from the scalar loops in %d values", k->name, bad);
    T_CHECKF(guard == 0, "%s: sub_max / scale wrote past n (%d)", k->name, guard);
    free(x); free(y);
}

/* rope_neox: kern_rope_neox_ref's bits for every even n_rot up to 66 and 128 / 256 / 512 (the
 * models' head sizes), angles over many turns, values spread over magnitudes; the dims past
 * n_rot and past the row untouched */
static void ropes(const g4_kern *k) {
    if (!k->rope_neox) return;
    enum { N = 512 + 8 };
    float x[N], y[N], cs[N];
    uint64_t s = 5;
    int bad = 0, guard = 0, runs = 0;
    for (int rep = 0; rep < 46; rep++) {
        const int n_rot = rep < 33 ? 2 * (rep + 1) : rep < 42 ? 2 * (rep - 32) + 48 : 128 << (rep % 3);
        for (int i = 0; i < N; i++) x[i] = gauss(&s) * (i % 5 == 0 ? 1e3f : i % 7 == 0 ? 1e-3f : 1.0f);
        for (int i = 0; i < n_rot; i += 2) {
            const float th = gauss(&s) * 40.0f;
            cs[i] = cosf(th), cs[i + 1] = sinf(th);
        }
        memcpy(y, x, sizeof x);
        kern_rope_neox_ref(y, cs, n_rot);
        k->rope_neox(x, cs, n_rot);
        for (int i = 0; i < n_rot; i++) bad += memcmp(&x[i], &y[i], sizeof *x) != 0;
        for (int i = n_rot; i < N; i++) guard += memcmp(&x[i], &y[i], sizeof *x) != 0;
        runs++;
    }
    T_CHECKF(bad == 0 && runs == 46, "%s: rope_neox differs from kern_rope_neox_ref in %d values", k->name, bad);
    T_CHECKF(guard == 0, "%s: rope_neox wrote past n_rot (%d)", k->name, guard);
}

/* the soft-cap's tanh: a table's SIMD form (kern.h softcap) gives its portable steps' bits
 * (softcap_ref: kern_softcap_fd on x86, kern_softcap_fdf with glibc aarch64's fused steps on
 * the NEON tables) on a sweep of bit patterns through every binade (both signs, subnormals,
 * zeros, Inf, NaN, lengths that are not a multiple of the lanes); kern_tanhf_fd and
 * kern_tanhf_fdf give the C library's tanhf bits where kern_softcap_check says this C library
 * computes it that way (glibc's fdlibm tanhf, built without or with fused multiply-adds), else
 * that part is skipped */
static void softcaps(const g4_kern *k) {
    enum { N = 1 << 16 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *x = malloc(N * sizeof *x);
    int bad = 0, badlibm = 0;
    const int libm_fd = kern_softcap_check(kern_softcap_fd, 30.0f), libm_fdf = kern_softcap_check(kern_softcap_fdf, 30.0f);
    void (*ref)(float *, int64_t, float) = k->softcap_ref ? k->softcap_ref : kern_softcap_fd;
    int badlibmf = 0;
    for (int rep = 0; rep < 64; rep++) {
        const int n = N - rep * 7;
        for (int i = 0; i < n; i++) {
            const uint32_t u = (uint32_t)(i + rep * N) * 16411u; /* 2^32 / 16411 apart: every binade */
            memcpy(&x[i], &u, 4);
        }
        memcpy(a, x, (size_t)n * sizeof *x);
        memcpy(b, x, (size_t)n * sizeof *x);
        if (k->softcap) k->softcap(a, n, 30.0f);
        ref(b, n, 30.0f);
        for (int i = 0; k->softcap && i < n; i++)
            bad += memcmp(&a[i], &b[i], 4) != 0 && !(a[i] != a[i] && b[i] != b[i]);
        for (int f = 0; f < 2; f++) {
            if (!(f ? libm_fdf : libm_fd)) continue;
            memcpy(b, x, (size_t)n * sizeof *x);
            (f ? kern_softcap_fdf : kern_softcap_fd)(b, n, 30.0f);
            for (int i = 0; i < n; i++) {
                const float r = tanhf(x[i] * (1.0f / 30.0f)) * 30.0f;
                *(f ? &badlibmf : &badlibm) += memcmp(&r, &b[i], 4) != 0 && !(r != r && b[i] != b[i]);
            }
        }
    }
    T_CHECKF(bad == 0, "%s: softcap differs from its portable steps in %d values", k->name, bad);
    T_CHECKF(badlibm == 0, "kern_tanhf_fd differs from the C library's tanhf in %d values", badlibm);
    T_CHECKF(badlibmf == 0, "kern_tanhf_fdf differs from the C library's tanhf in %d values", badlibmf);
    if (!libm_fd && !libm_fdf && getenv("G4_TEST_VERBOSE"))
        fprintf(stderr, "    this C library's tanhf is not fdlibm's: the SIMD soft-cap stays off (checked against kern_tanhf_fd only)\n");
    free(a); free(b); free(x);
}

/* matmul_f16x and round_f16 (the attention's F16 cache products): round_f16 is
 * quantize_act[F16] and back, bit for bit (ties, subnormals, overflow, tails); each
 * matmul_f16x form gives exactly the bits of the kernel it stands for (matmul[F16],
 * matmul_grp[F16] or matmul where the table has no grp) on the same values in F16, for odd
 * lengths, 1 ... 17 columns, padded activation rows and row ranges, writing nothing else. */
static void f16x(const g4_kern *k) {
    T_CHECKF(!k->matmul_f16x[0] == !k->round_f16 && !k->matmul_f16x[1] == !k->round_f16, "%s: matmul_f16x and round_f16 come together", k->name);
    if (!k->round_f16 || !k->matmul[G4_TYPE_F16]) return;
    const float SENT = -12345.678f;
    uint64_t s = 91;
    enum { NR = 2053 };
    float *a = malloc(NR * sizeof *a), *b = malloc(NR * sizeof *b);
    uint16_t *h = malloc(NR * sizeof *h);
    int bad = 0;
    for (int rep = 0; rep < 12; rep++) {
        const int n = rep < 6 ? rep * 3 + 1 : NR - rep;
        for (int i = 0; i < n; i++) {
            const float g = gauss(&s);
            a[i] = rep % 4 == 0 ? g * 1e-6f : rep % 4 == 1 ? g * 7e4f : rep % 4 == 2 ? 1.0f + (float)(i % 64) / 4096.0f : g;
        }
        memcpy(b, a, (size_t)n * sizeof *a);
        k->quantize_act[G4_TYPE_F16](a, h, n);
        k->round_f16(b, n);
        for (int i = 0; i < n; i++) {
            const float e = g4_f16_to_f32(h[i]);
            bad += memcmp(&e, &b[i], sizeof e) != 0;
        }
    }
    T_CHECKF(bad == 0, "%s: round_f16 differs from quantize_act[F16] in %d values", k->name, bad);
    free(a); free(b); free(h);
    static const int64_t NIN[] = { 37, 224, 512, 768, 4101, 4160 }; /* 224, 512: the 8-column form (K.q) */
    static const int TOKS[] = { 1, 2, 3, 4, 5, 7, 8, 9, 17 };
    for (int ni = 0; ni < (int)(sizeof NIN / sizeof NIN[0]); ni++) {
        const int64_t n_in = NIN[ni], n_out = 13;
        const size_t wrb = (size_t)n_in * 2, xrb16 = (size_t)n_in * 2, xrb32 = ((size_t)n_in + 5) * 4;
        uint8_t *w = malloc(wrb * (size_t)n_out);
        make_weights(G4_TYPE_F16, 0, n_out, n_in, w, &s);
        for (int ti = 0; ti < 9; ti++) {
            const int n_tok = TOKS[ti];
            const size_t ldy = (size_t)n_out + 3;
            float *x = malloc(xrb32 * (size_t)n_tok), *y0 = malloc((ldy * (size_t)n_tok + 16) * sizeof *y0),
                  *y1 = malloc((ldy * (size_t)n_tok + 16) * sizeof *y1);
            uint8_t *xq = malloc(xrb16 * (size_t)n_tok);
            for (int t = 0; t < n_tok; t++) {
                float *xt = (float *)(void *)((uint8_t *)x + (size_t)t * xrb32);
                for (int64_t i = 0; i < n_in + 5; i++) xt[i] = gauss(&s) * (i % 11 == 0 ? 4.0f : 1.0f);
                k->quantize_act[G4_TYPE_F16](xt, xq + (size_t)t * xrb16, n_in);
                k->round_f16(xt, n_in);
            }
            for (int form = 0; form < 2; form++) {
                const g4_matmul_fn base = form && k->matmul_grp[G4_TYPE_F16] ? k->matmul_grp[G4_TYPE_F16] : k->matmul[G4_TYPE_F16];
                const int64_t ranges[2][2] = { { 0, n_out }, { 2, n_out - 3 } };
                for (int ri = 0; ri < 2; ri++) {
                    const int64_t r0 = ranges[ri][0], r1 = ranges[ri][1];
                    for (size_t i = 0; i < ldy * (size_t)n_tok + 16; i++) y0[i] = y1[i] = SENT;
                    base(y0, ldy, w, wrb, xq, xrb16, n_in, r0, r1, n_tok);
                    k->matmul_f16x[form](y1, ldy, w, wrb, x, xrb32, n_in, r0, r1, n_tok);
                    T_CHECKF(!memcmp(y0, y1, (ldy * (size_t)n_tok + 16) * sizeof *y0),
                             "%s matmul_f16x[%d] n_in %lld n_tok %d rows [%lld,%lld): not the bits of its F16 kernel", k->name,
                             form, (long long)n_in, n_tok, (long long)r0, (long long)r1);
                }
            }
            free(x); free(y0); free(y1); free(xq);
        }
        free(w);
    }
}

static void selection(void) {
    char err[128];
    const g4_kern *ks[8];
    const int nk = kern_list(ks, 8);
    T_CHECK(nk >= 1 && !strcmp(ks[0]->name, "scalar"));
    const g4_kern *best = kern_select(NULL, err, sizeof err);
    const char *env = getenv("G4_ISA");
    T_CHECK(best != NULL);
    if (best && !(env && *env)) T_CHECK(best == ks[nk - 1]); /* the last listed is the best */
    const g4_kern *sc = kern_select("scalar", err, sizeof err);
    T_CHECK(sc && !strcmp(sc->name, "scalar"));
    err[0] = 0;
    T_CHECK(kern_select("sse9", err, sizeof err) == NULL && strstr(err, "unknown") != NULL);
#if defined(__x86_64__)
    err[0] = 0;
    T_CHECK(kern_select("neon", err, sizeof err) == NULL && strstr(err, "not built") != NULL);
#endif
    /* every listed table can be forced by name; an unlisted known one is refused */
    static const char *NAMES[] = { "scalar", "avx2", "avx512", "neon", "i8mm" };
    for (int i = 0; i < 5; i++) {
        int listed = 0;
        for (int j = 0; j < nk; j++) listed |= !strcmp(ks[j]->name, NAMES[i]);
        const g4_kern *f = kern_select(NAMES[i], err, sizeof err);
        T_CHECKF(listed ? f && !strcmp(f->name, NAMES[i]) : f == NULL, "forcing %s", NAMES[i]);
    }
    /* $G4_ISA is honoured when force is NULL */
    char *saved = env ? strdup(env) : NULL;
    setenv("G4_ISA", "scalar", 1);
    sc = kern_select(NULL, err, sizeof err);
    T_CHECK(sc && !strcmp(sc->name, "scalar"));
    setenv("G4_ISA", "bogus", 1);
    T_CHECK(kern_select(NULL, err, sizeof err) == NULL);
    if (saved) { setenv("G4_ISA", saved, 1); free(saved); } else unsetenv("G4_ISA");
    T_CHECK(kern_act_row_bytes(G4_TYPE_Q8_K, 512) == 584 && kern_act_row_bytes(G4_TYPE_Q8_0, 64) == 68 &&
            kern_act_row_bytes(G4_TYPE_Q8_1, 64) == 72 && kern_act_row_bytes(G4_TYPE_F16, 3) == 6 &&
            kern_act_row_bytes(G4_TYPE_F32, 3) == 12);
}

T_GROUP(kern) {
    selection();
    const g4_kern *ks[8];
    const int nk = kern_list(ks, 8);
    const g4_kern *ref = scalar_table(ks, nk);
    T_CHECK(ref != NULL);
    if (!ref) return;
    /* the scalar table covers every weight type the traits table marks usable */
    for (int t = 0; t < G4_TYPE_COUNT; t++) {
        const g4_type_traits *tr = quant_traits((uint32_t)t);
        if (tr && tr->weight) T_CHECKF(ref->matmul[t] && ref->quantize_act[tr->dot_type], "scalar lacks %s", tr->name);
    }
    for (int i = 0; i < nk; i++) {
        if (ks[i] == ref) continue;
        if (getenv("G4_TEST_VERBOSE")) fprintf(stderr, "    testing kernel set %s\n", ks[i]->name);
        act_quantizers(ref, ks[i]);
        matmuls(ref, ks[i]);
        column_splits(ks[i]);
        repacked(ks[i]);
    }
    /* any table of finite f16 values shows a wrong index or edge: scattered values, the
     * exponent's low bit cleared so none is Inf/NaN */
    uint16_t *tab = malloc(65536 * sizeof *tab);
    for (uint32_t h = 0; h < 65536; h++) tab[h] = (uint16_t)(((h * 2654435761u) >> 16) & 0xfbffu);
    for (int i = 0; i < nk; i++) geglus(ks[i], tab);
    for (int i = 0; i < nk; i++) expsums(ks[i]);
    for (int i = 0; i < nk; i++) softmax_steps(ks[i]);
    for (int i = 0; i < nk; i++) ropes(ks[i]);
    for (int i = 0; i < nk; i++) f16x(ks[i]);
    for (int i = 0; i < nk; i++) softcaps(ks[i]);
    free(tab);
}
