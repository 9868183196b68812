/* g4-ggml-kern.c - our kernels against ggml's own CPU kernels, bit for bit.
 *
 * llama.cpp's CPU backend ships as one shared library per x86 level (node-llama-cpp's
 * prebuilt: libggml-cpu-haswell.so for AVX2 machines) and exports its dot-product kernels
 * (ggml_vec_dot_<type>_q8_<k>) and activation quantizers (quantize_row_q8_0/q8_1/q8_K).
 * This tool loads that library with dlopen and, for each weight type and row length, checks
 * that our activation quantizer gives the same bytes and that our kernel table's matmul gives
 * the same float, bit for bit, as ggml's vec_dot on the same weights and activations, for one
 * column and (where the table's pick for 4 columns is the same kernel) for 4 columns in one
 * call, each against its own vec_dot. Rows are written by our quantizers from random data;
 * lengths cover 1..48 blocks (E2B's 12288).
 *
 * The repacked kernels llama.cpp uses instead of vec_dot for Q4_0, Q4_K and IQ4_NL weights on
 * AVX2 (8-row interleaved gemv/gemm) are not reachable this way; their float order (one
 * exact integer sum per block or super-block, then f32 FMA into a per-row accumulator) is
 * checked against an emulation here (--repacked), and end to end by oracle_forward.sh.
 * F32 / F16 / BF16 weights go through a one-op ggml graph with the weight in the plain CPU
 * buffer (ggml_vec_dot_<t> for one column, llamafile's tinyBLAS for more).
 *
 * Built for aarch64 (tests/sh/oracle_kern_neon.sh: cross-compiled, run under qemu-aarch64)
 * it loads node-llama-cpp's arm64 prebuilt instead (default libggml-cpu-armv8.2_2.so: dotprod
 * + fp16, no SVE/i8mm) and our "neon" table, compares against vec_dot for every type, runs
 * the types ggml's ARM build repacks (q4_0/iq4_nl/q8_0 4x4, q4_K/q5_K/q6_K 8x4 on dotprod)
 * through a real one-op ggml graph with the weight in the CPU_REPACK buffer, every type
 * through the same graph with the weight in the plain CPU buffer (vec_dot, or llamafile's
 * tinyBLAS for q8_0/q4_0 with >= 2 tokens), and checks its emulation of every ARM kernel's
 * float order (arm_vec_dot, arm_tinyblas, arm_repacked) against ggml's.
 * There it also prints one machine-readable "check ..." line per type for the script's gates.
 *
 * Usage: g4-ggml-kern LIBDIR [ISA [CPU-LIB]]   (LIBDIR holds libggml-base.so and the CPU-LIB,
 * default libggml-cpu-haswell.so, or libggml-cpu-armv8.2_2.so on aarch64; ISA: our table,
 * default "avx2", "neon" on aarch64; "i8mm" against libggml-cpu-armv8.6_1.so). Our kernels run as
 * the forward runs them: consecutive columns with the same pick in one call. Prints one line
 * per mismatch class and "N passed, M failed".
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern/kern.h"
#include "quant/quant_ref.h"

#if defined(__aarch64__)
#define DEFAULT_ISA "neon"
#define DEFAULT_CPU_LIB "libggml-cpu-armv8.2_2.so"
#define X86_REPACK 0
#else
#define DEFAULT_ISA "avx2"
#define DEFAULT_CPU_LIB "libggml-cpu-haswell.so"
#define X86_REPACK 1
#endif

typedef void (*vec_dot_fn)(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy,
                           size_t by, int nrc);
typedef void (*quant_fn)(const float *x, void *y, int64_t k);
typedef void (*dequant_fn)(const void *x, float *y, int64_t k);

/* dlsym's object pointer as a function pointer (ISO C has no cast between them) */
#define SYM(h, name, fp) do { void *p_ = dlsym((h), (name)); memcpy(&(fp), &p_, sizeof(fp)); if (!p_) (fp) = NULL; } while (0)

/* ---- ggml's repacked AVX2 kernels' float order (repack.cpp q4_0_8x8, iq4_nl_8x8, q4_K_8x8),
 * emulated: exact integer sums per block (32) / super-block (256, gemv) / sub-block pair
 * (64, gemm), one fmaf per span and row. ---- */
static const int8_t IQ4NL[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };
static float rep_b32(const uint8_t *w, const uint8_t *a, int64_t n, int iq) {
    float acc = 0;
    for (int64_t i = 0; i < n / 32; i++, w += 18, a += 34) {
        const int8_t *qa = (const int8_t *)(const void *)(a + 2);
        int isum = 0;
        for (int j = 0; j < 16; j++) {
            const int lo = iq ? IQ4NL[w[2 + j] & 15] : (w[2 + j] & 15) - 8;
            const int hi = iq ? IQ4NL[w[2 + j] >> 4] : (w[2 + j] >> 4) - 8;
            isum += lo * qa[j] + hi * qa[j + 16];
        }
        acc = fmaf((float)isum, quant_rdh(w) * quant_rdh(a), acc);
    }
    return acc;
}
static float rep_q4_K(const uint8_t *w, const uint8_t *a, int64_t n, int grp) {
    float acc = 0, accm = 0;
    for (int64_t i = 0; i < n / 256; i++, w += 144, a += 292) {
        float da; memcpy(&da, a, 4);
        const float d = quant_rdh(w) * da, dm = quant_rdh(w + 2) * da;
        const int8_t *qa = (const int8_t *)(const void *)(a + 4);
        int isum = 0, imin = 0;
        for (int k = 0; k < 4; k++) {
            for (int h = 0; h < 2; h++) {
                const int sb = 2 * k + h;
                uint8_t sc, m;
                quant_scale_min_k4(sb, w + 4, &sc, &m);
                int ss = 0;
                for (int p = 0; p < 32; p++)
                    ss += (h ? w[16 + 32 * k + p] >> 4 : w[16 + 32 * k + p] & 15) * qa[32 * sb + p];
                isum += sc * ss;
                imin += m * ((int16_t)quant_rd16(a + 260 + 4 * sb) + (int16_t)quant_rd16(a + 262 + 4 * sb));
            }
            if (grp || k == 3) {
                acc = fmaf((float)isum, d, acc);
                accm = fmaf((float)imin, dm, accm);
                isum = imin = 0;
            }
        }
    }
    return acc - accm;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static float rndf(void) { return ((float)(rnd32() & 0xffffff) / 16777216.0f) * 2.0f - 1.0f; }

/* llama.cpp's q4_K_8x8 layout (repack.h block_q4_Kx8, 1152 bytes): the 8 rows' d, dmin, 96
 * bytes of 6-bit scales/mins regrouped per sub-block, qs interleaved 8 bytes per row */
static void repack_q4_Kx8(const uint8_t *const in[8], uint8_t *out) {
    for (int i = 0; i < 8; i++) { memcpy(out + 2 * i, in[i], 2); memcpy(out + 16 + 2 * i, in[i] + 2, 2); }
    uint8_t *sc = out + 32, *qs = out + 128;
    for (int i = 0; i < 128; i++) memcpy(qs + 8 * i, in[i % 8] + 16 + (i / 8) * 8, 8);
    for (int half = 0; half < 2; half++)
        for (int i = 0; i < 4; i++) {
            uint8_t s8[8], m8[8];
            for (int j = 0; j < 8; j++) {
                const uint8_t *q = in[j] + 4;
                if (!half) { s8[j] = q[i] & 63; m8[j] = q[i + 4] & 63; }
                else {
                    s8[j] = (uint8_t)(((q[i] & 192) >> 2) | (q[i + 8] & 15));
                    m8[j] = (uint8_t)(((q[i + 4] & 192) >> 2) | ((q[i + 8] & 240) >> 4));
                }
            }
            uint8_t *o = sc + 48 * half + 12 * i;
            for (int j = 0; j < 4; j++) {
                o[j] = (uint8_t)((s8[j] & 63) + ((s8[j + 4] & 48) << 2));
                o[4 + j] = (uint8_t)((m8[j] & 63) + ((m8[j + 4] & 48) << 2));
                o[8 + j] = (uint8_t)((s8[j + 4] & 15) + ((m8[j + 4] & 15) << 4));
            }
        }
}

/* block_q2_Kx8 (repack.h, make_block_q2_Kx8): d[8], dmin[8] (f16), scales[128] (scale/min
 * bytes of sub-blocks 2i, 2i+1 of the 8 rows in turn), qs[512] (8-byte chunks of the rows in
 * turn); in[r] = row r's block_q2_K (scales 0, qs 16, d 80, dmin 82) */
static void repack_q2_Kx8(const uint8_t *const in[8], uint8_t *out) {
    for (int i = 0; i < 8; i++) { memcpy(out + 2 * i, in[i] + 80, 2); memcpy(out + 16 + 2 * i, in[i] + 82, 2); }
    for (int i = 0; i < 128; i++) out[32 + i] = in[(i % 16) / 2][(i / 16) * 2 + (i % 2)];
    for (int i = 0; i < 64; i++) memcpy(out + 160 + 8 * i, in[i % 8] + 16 + (i / 8) * 8, 8);
}

/* block_q4_0x8 / block_iq4_nlx8 (repack.h, make_block_q4_0x8 / make_block_iq4_nlx8 with an
 * interleave of 8): d[8] (f16), qs[128] (8-byte chunks of the rows in turn; Q4_0's with every
 * nibble xor 8, so the codes are signed); in[r] = row r's 18-byte block (d 0, qs 2) */
static void repack_b32x8(const uint8_t *const in[8], uint8_t *out, int xor8) {
    for (int i = 0; i < 8; i++) memcpy(out + 2 * i, in[i], 2);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) out[16 + 8 * i + j] = (uint8_t)(in[i % 8][2 + (i / 8) * 8 + j] ^ (xor8 ? 0x88 : 0));
}
static void repack_q4_0x8(const uint8_t *const in[8], uint8_t *out) { repack_b32x8(in, out, 1); }
static void repack_iq4_nlx8(const uint8_t *const in[8], uint8_t *out) { repack_b32x8(in, out, 0); }

typedef void (*gemx_fn)(int n, float *s, size_t bs, const void *vx, const void *vy, int nr, int nc);

/* A type llama.cpp's x86 builds repack into 8-row blocks, with its exported kernels */
typedef struct rep_type {
    uint32_t type;
    const char *gemm, *gemv;     /* ggml's 4-token gemm and one-token gemv on the repacked rows */
    size_t blk, rp_blk;          /* bytes of one block, of 8 rows' blocks repacked */
    void (*repack)(const uint8_t *const in[8], uint8_t *out);
    int qk;                      /* elements per block */
    uint32_t act;                /* activation type, its 4-token interleaver and row quantizer */
    const char *qmat, *qrow;
    size_t xm_blk;               /* bytes of one block of 4 interleaved tokens */
} rep_type;
#define REP_K8 256, G4_TYPE_Q8_K, "ggml_quantize_mat_q8_K_4x8", "quantize_row_q8_K", 1168
#define REP_08 32, G4_TYPE_Q8_0, "ggml_quantize_mat_q8_0_4x8", "quantize_row_q8_0", 136
static const rep_type REP_Q4_K = { G4_TYPE_Q4_K, "ggml_gemm_q4_K_8x8_q8_K", "ggml_gemv_q4_K_8x8_q8_K", 144, 1152, repack_q4_Kx8, REP_K8 };
static const rep_type REP_Q2_K = { G4_TYPE_Q2_K, "ggml_gemm_q2_K_8x8_q8_K", "ggml_gemv_q2_K_8x8_q8_K", 84, 672, repack_q2_Kx8, REP_K8 };
static const rep_type REP_Q4_0 = { G4_TYPE_Q4_0, "ggml_gemm_q4_0_8x8_q8_0", "ggml_gemv_q4_0_8x8_q8_0", 18, 144, repack_q4_0x8, REP_08 };
static const rep_type REP_IQ4_NL = { G4_TYPE_IQ4_NL, "ggml_gemm_iq4_nl_8x8_q8_0", "ggml_gemv_iq4_nl_8x8_q8_0", 18, 144, repack_iq4_nlx8, REP_08 };

/* nr rows (8, or 16 for the zmm loop of Q2_K's AVX-512 gemm) x 4 tokens of type rt through
 * ggml's own repacked gemm, each token through its gemv, against our matmul_grp (matmul where
 * the table has none) / matmul. Returns mismatching outputs, -1 without the symbols. */
static int check_repacked(void *h, const g4_kern *k, const rep_type *rt, int64_t n, int nr, int *n_out) {
    gemx_fn gemm, gemv;
    quant_fn qmat, qrow;
    SYM(h, rt->gemm, gemm);
    SYM(h, rt->gemv, gemv);
    SYM(h, rt->qmat, qmat);
    SYM(h, rt->qrow, qrow);
    if (!gemm || !gemv || !qmat || !qrow) return -1;
    const int64_t nb = n / rt->qk;
    const size_t wrb = quant_row_bytes(rt->type, n), xrb = kern_act_row_bytes(rt->act, n);
    float *wf = malloc((size_t)n * 4), *x = malloc((size_t)n * 16);
    uint8_t *w = malloc(wrb * (size_t)nr), *rp = malloc((size_t)nb * rt->rp_blk * (size_t)(nr / 8)), *xq = malloc(xrb * 4),
            *xm = malloc((size_t)nb * rt->xm_blk * 2);
    for (int r = 0; r < nr; r++) {
        for (int64_t i = 0; i < n; i++) wf[i] = rndf();
        quant_quantize_row(rt->type, wf, w + (size_t)r * wrb, n);
    }
    for (int64_t i = 0; i < 4 * n; i++) x[i] = rndf() * (1 + (i % 7 == 0) * 8);
    for (int g = 0; g < nr / 8; g++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *in[8];
            for (int r = 0; r < 8; r++) in[r] = w + (size_t)(8 * g + r) * wrb + (size_t)b * rt->blk;
            rt->repack(in, rp + ((size_t)g * (size_t)nb + (size_t)b) * rt->rp_blk);
        }
    for (int t = 0; t < 4; t++) qrow(x + (size_t)t * n, xq + (size_t)t * xrb, n);
    qmat(x, xm, n);
    float yg[64], yv[64], o1[64], o2[64];
    gemm((int)n, yg, (size_t)nr, rp, xm, 4, nr);
    for (int t = 0; t < 4; t++) gemv((int)n, yv + nr * t, (size_t)nr, rp, xq + (size_t)t * xrb, 1, nr);
    k->matmul[rt->type](o1, (size_t)nr, w, wrb, xq, xrb, n, 0, nr, 4);
    (k->matmul_grp[rt->type] ? k->matmul_grp[rt->type] : k->matmul[rt->type])(o2, (size_t)nr, w, wrb, xq, xrb, n, 0, nr, 4);
    int bad = 0, badg = 0;
    for (int i = 0; i < 4 * nr; i++) bad += memcmp(&yv[i], &o1[i], 4) != 0, badg += memcmp(&yg[i], &o2[i], 4) != 0;
    if (getenv("G4_GK_VERBOSE"))
        printf("%s n=%lld rows %d: gemv mismatches %d, gemm mismatches %d (gemm vs gemv differ %d)\n", quant_traits(rt->type)->name,
               (long long)n, nr, bad, badg, memcmp(yg, yv, (size_t)(4 * nr) * sizeof(float)) != 0);
    *n_out = 8 * nr;
    free(wf); free(x); free(w); free(rp); free(xq); free(xm);
    return bad + badg;
}

/* check_repacked over row lengths of 1 .. 48 super-blocks and 8 .. nr_max rows; one "label: N of M
 * outputs differ" line, counted in pass / fail */
static void run_repacked(void *h, const g4_kern *k, const rep_type *rt, int nr_max, const char *label, int *pass, int *fail) {
    int bad = 0, tot = 0, no = 0;
    for (int nbk = 1; nbk <= 48 && bad >= 0; nbk += (nbk < 8 ? 1 : 5))
        for (int nr = 8; nr <= nr_max && bad >= 0; nr += 8) {
            const int r = check_repacked(h, k, rt, (int64_t)nbk * 256, nr, &no);
            if (r < 0) { bad = -1; break; }
            bad += r; tot += no;
        }
    if (bad < 0) { printf("%s repacked: ggml's gemm/gemv not found, skipped\n", quant_traits(rt->type)->name); return; }
    printf("%s: %d of %d outputs differ\n", label, bad, tot);
    if (bad) ++*fail; else ++*pass;
}

/* ---- llama.cpp's arm64 kernels' float order (armv8.2 dotprod build: vec_dot of
 * ggml-cpu/arch/arm/quants.c, gemv/gemm of the dotprod repack types in arch/arm/repack.cpp),
 * emulated from exact integer sums, as compiled (GCC contracts a*b+c into fmla/fmadd: fmaf
 * here). Integer codes come from our dequantizer on one block with patched scales
 * (d = 1, min = 0: scale x code, signed; d = 0, min = 1: minus the min term). ---- */
typedef struct { int qk, bytes, od, om; } blk_fmt;
static blk_fmt arm_fmt(uint32_t ty) {
    switch (ty) {
    case G4_TYPE_Q4_0: case G4_TYPE_IQ4_NL: return (blk_fmt){ 32, 18, 0, -1 };
    case G4_TYPE_Q4_1: return (blk_fmt){ 32, 20, 0, 2 };
    case G4_TYPE_Q5_0: return (blk_fmt){ 32, 22, 0, -1 };
    case G4_TYPE_Q5_1: return (blk_fmt){ 32, 24, 0, 2 };
    case G4_TYPE_Q8_0: return (blk_fmt){ 32, 34, 0, -1 };
    case G4_TYPE_Q2_K: return (blk_fmt){ 256, 84, 80, 82 };
    case G4_TYPE_Q3_K: return (blk_fmt){ 256, 110, 108, -1 };
    case G4_TYPE_Q4_K: return (blk_fmt){ 256, 144, 0, 2 };
    case G4_TYPE_Q5_K: return (blk_fmt){ 256, 176, 0, 2 };
    case G4_TYPE_Q6_K: return (blk_fmt){ 256, 210, 208, -1 };
    case G4_TYPE_IQ4_XS: return (blk_fmt){ 256, 136, 0, -1 };
    default: return (blk_fmt){ 0, 0, 0, -1 };
    }
}
/* out[e] = the block's integer code (minpart 0) or min coefficient (minpart 1) of element e */
static void arm_codes(uint32_t ty, const uint8_t *blk, int minpart, int *out) {
    const blk_fmt f = arm_fmt(ty);
    uint8_t tmp[256];
    float v[256];
    memcpy(tmp, blk, (size_t)f.bytes);
    tmp[f.od] = 0; tmp[f.od + 1] = minpart ? 0 : 0x3c;
    if (f.om >= 0) { tmp[f.om] = 0; tmp[f.om + 1] = minpart ? 0x3c : 0; }
    quant_dequant_row(ty, tmp, v, f.qk);
    for (int e = 0; e < f.qk; e++) out[e] = minpart ? -(int)lrintf(v[e]) : (int)lrintf(v[e]);
}
static float hsum4(const float *v) { return (v[0] + v[1]) + (v[2] + v[3]); } /* vaddvq_f32 */

/* ggml_vec_dot_<ty>_q8_x (NEON, dotprod, nrc 1) on a row of n (n a multiple of 64) */
static float arm_vec_dot(uint32_t ty, const uint8_t *w, const uint8_t *a, int64_t n) {
    const blk_fmt f = arm_fmt(ty);
    int c[256], m[256];
    if (f.qk == 32) {
        const int q81 = ty == G4_TYPE_Q4_1 || ty == G4_TYPE_Q5_1, ab = q81 ? 36 : 34;
        float sv[2][4] = { { 0, 0, 0, 0 }, { 0, 0, 0, 0 } }, summs = 0, summs2[2] = { 0, 0 }, sumf = 0, ip[2] = { 0, 0 }, dp[2] = { 0, 0 };
        for (int64_t ib = 0; ib < n / 32; ib++) {
            const uint8_t *wb = w + ib * f.bytes, *ab_ = a + ib * ab;
            const int8_t *qa = (const int8_t *)(const void *)(ab_ + (q81 ? 4 : 2));
            arm_codes(ty, wb, 0, c);
            const float d = quant_rdh(wb) * quant_rdh(ab_);
            if (ty == G4_TYPE_IQ4_NL) { /* two blocks: sumf += d0*i0 + d1*i1 */
                int is = 0;
                for (int e = 0; e < 32; e++) is += c[e] * qa[e];
                ip[ib & 1] = (float)is; dp[ib & 1] = d;
                if (ib & 1) sumf += fmaf(dp[0], ip[0], dp[1] * ip[1]);
                continue;
            }
            for (int j = 0; j < 4; j++) {
                int l = 0;
                for (int e = 0; e < 32; e++) if ((e % 16) / 4 == j) l += c[e] * qa[e];
                sv[ib & 1][j] = fmaf((float)l, d, sv[ib & 1][j]);
            }
            if (q81) {
                const float ms = quant_rdh(wb + 2) * quant_rdh(ab_ + 2);
                if (ty == G4_TYPE_Q5_1) summs2[ib & 1] = fmaf(quant_rdh(wb + 2), quant_rdh(ab_ + 2), summs2[ib & 1]);
                else if (ib & 1) summs += fmaf(quant_rdh(wb + 2 - f.bytes), quant_rdh(ab_ + 2 - ab), ms);
            }
        }
        if (ty == G4_TYPE_IQ4_NL) return sumf;
        const float h = hsum4(sv[0]) + hsum4(sv[1]);
        return ty == G4_TYPE_Q4_1 ? h + summs : ty == G4_TYPE_Q5_1 ? (h + summs2[0]) + summs2[1] : h;
    }
    float sum = 0;
    for (int64_t i = 0; i < n / 256; i++) {
        const uint8_t *wb = w + i * f.bytes, *ab_ = a + i * 292;
        const int8_t *qa = (const int8_t *)(const void *)(ab_ + 4);
        float dy; memcpy(&dy, ab_, 4);
        arm_codes(ty, wb, 0, c);
        int is = 0, ms = 0;
        for (int e = 0; e < 256; e++) is += c[e] * qa[e];
        if (f.om >= 0) { arm_codes(ty, wb, 1, m); for (int e = 0; e < 256; e++) ms += m[e] * qa[e]; }
        const float dx = quant_rdh(wb + f.od), dmx = f.om >= 0 ? quant_rdh(wb + f.om) : 0;
        switch (ty) {
        case G4_TYPE_Q2_K: sum = fmaf(-dy * dmx, (float)ms, sum); sum = fmaf(dy * dx, (float)is, sum); break;
        case G4_TYPE_Q4_K: sum = fmaf(-(dy * dmx), (float)ms, sum); sum = fmaf(dy * dx, (float)is, sum); break;
        case G4_TYPE_Q5_K: sum += fmaf(dy * dx, (float)is, -((float)ms * (dy * dmx))); break;
        default: sum = fmaf(dx * dy, (float)is, sum); break; /* q3_K, q6_K, iq4_xs */
        }
    }
    return sum;
}

/* llamafile's tinyBLAS_Q0_ARM (sgemm.cpp), which ggml's mul_mat takes for weights it has not
 * repacked when there are 2 or more tokens (q8_0, q4_0): one f32x4 accumulator of the sdot
 * lanes, fmla per block, vaddvq at the end */
static float arm_tinyblas(uint32_t ty, const uint8_t *w, const uint8_t *a, int64_t n) {
    const blk_fmt f = arm_fmt(ty);
    int c[32];
    float sv[4] = { 0, 0, 0, 0 };
    for (int64_t ib = 0; ib < n / 32; ib++) {
        const uint8_t *wb = w + ib * f.bytes, *ab_ = a + ib * 34;
        const int8_t *qa = (const int8_t *)(const void *)(ab_ + 2);
        arm_codes(ty, wb, 0, c);
        const float d = quant_rdh(wb) * quant_rdh(ab_);
        for (int j = 0; j < 4; j++) {
            int l = 0;
            for (int e = 0; e < 32; e++) if ((e % 16) / 4 == j) l += c[e] * qa[e];
            sv[j] = fmaf((float)l, d, sv[j]);
        }
    }
    return hsum4(sv);
}

/* the dotprod repacked kernels (q4_0/iq4_nl/q8_0 4x4, q4_K/q5_K/q6_K 8x4), one row and one
 * token; gemm: the 4-token kernel (differs from gemv for q6_K only). i8mm: the kernels an
 * i8mm build (armv8.6/9.2, NEON path: SVE width not 256) picks instead, q4_0/q8_0 4x8 and
 * q4_K/q5_K/q6_K 8x8, which differ for q4_K and q5_K only. */
static float arm_repacked(uint32_t ty, const uint8_t *w, const uint8_t *a, int64_t n, int gemm, int i8mm) {
    const blk_fmt f = arm_fmt(ty);
    int c[256], m[256];
    float acc = 0;
    if (f.qk == 32) {
        for (int64_t ib = 0; ib < n / 32; ib++) {
            const uint8_t *wb = w + ib * f.bytes, *ab_ = a + ib * 34;
            const int8_t *qa = (const int8_t *)(const void *)(ab_ + 2);
            arm_codes(ty, wb, 0, c);
            int is = 0;
            for (int e = 0; e < 32; e++) is += c[e] * qa[e];
            acc = fmaf((float)is, quant_rdh(wb) * quant_rdh(ab_), acc);
        }
        return acc;
    }
    for (int64_t i = 0; i < n / 256; i++) {
        const uint8_t *wb = w + i * f.bytes, *ab_ = a + i * 292;
        const int8_t *qa = (const int8_t *)(const void *)(ab_ + 4);
        float dy; memcpy(&dy, ab_, 4);
        arm_codes(ty, wb, 0, c);
        const float d = quant_rdh(wb + f.od) * dy;
        if (ty == G4_TYPE_Q6_K) {
            int is = 0;
            for (int e = 0; e < 256; e++) is += c[e] * qa[e];
            acc = gemm ? fmaf((float)is, d, acc) : acc + (float)is * d;
            continue;
        }
        arm_codes(ty, wb, 1, m);
        int ms = 0;
        for (int e = 0; e < 256; e++) ms += m[e] * qa[e];
        const float dm = quant_rdh(wb + f.om) * dy;
        if (i8mm && gemm) { /* q4_K/q5_K 8x8 gemm: the mins first, then one sum per super-block */
            int is = 0;
            for (int e = 0; e < 256; e++) is += c[e] * qa[e];
            acc = fmaf(-(float)ms, dm, acc);
            acc = fmaf((float)is, d, acc);
            continue;
        }
        if (i8mm) { /* 8x8 gemv: one fma per 32-element sub-block; q5_K subtracts mins per 64 */
            for (int k = 0; k < 4; k++) {
                for (int h = 0; h < 2; h++) {
                    int is = 0;
                    for (int e = 64 * k + 32 * h; e < 64 * k + 32 * h + 32; e++) is += c[e] * qa[e];
                    acc = fmaf(d, (float)is, acc);
                }
                if (ty == G4_TYPE_Q5_K) {
                    int mk = 0;
                    for (int e = 64 * k; e < 64 * k + 64; e++) mk += m[e] * qa[e];
                    acc = fmaf(-dm, (float)mk, acc);
                }
            }
            if (ty == G4_TYPE_Q4_K) acc = fmaf(-(float)ms, dm, acc);
            continue;
        }
        for (int k = 0; k < 4; k++) {
            int is = 0;
            for (int e = 64 * k; e < 64 * k + 64; e++) is += c[e] * qa[e];
            acc = fmaf(d, (float)is, acc);
        }
        acc = fmaf(-(float)ms, dm, acc);
    }
    return acc;
}

/* ---- the repacked path as llama.cpp runs it: a one-op ggml graph (mul_mat) whose weight
 * lives in the CPU backend's CPU_REPACK buffer (set_tensor repacks, the compute picks the
 * gemv/gemm of the repack type ggml chose for the library's CPU features), on 1 thread.
 * ggml's API is declared here (ggml.h / ggml-backend.h of llama.cpp de3ff81), opaque. ---- */
struct gk_init_params { size_t mem_size; void *mem_buffer; _Bool no_alloc; };
typedef struct gk_graph_api {
    void *(*init)(struct gk_init_params);
    void  (*free_ctx)(void *);
    void *(*new_2d)(void *, int, int64_t, int64_t);
    void *(*mul_mat)(void *, void *, void *);
    void *(*new_graph)(void *);
    void  (*expand)(void *, void *);
    void *(*alloc_ctx)(void *, void *);
    void  (*buf_free)(void *);
    void  (*tset)(void *, const void *, size_t, size_t);
    void  (*tget)(const void *, void *, size_t, size_t);
    int   (*compute)(void *, void *);
    void *(*cpu_buft)(void);
    const char *(*buft_name)(void *);
    void *(*cpu_reg)(void);
    void *(*reg_dev)(void *, size_t);
    void *(*reg_proc)(void *, const char *);
    void *(*be_init)(void);
    void  (*be_threads)(void *, int);
    void  (*be_free)(void *);
    void *repack;     /* the CPU_REPACK buffer type */
    void *be;
} gk_graph_api;

static void quiet_log(int level, const char *text, void *ud) { (void)level; (void)text; (void)ud; }

static int graph_api_load(gk_graph_api *g, void *hb, void *h) {
    memset(g, 0, sizeof *g);
    void (*log_set)(void (*)(int, const char *, void *), void *);
    SYM(hb, "ggml_log_set", log_set);
    if (log_set) log_set(quiet_log, NULL); /* "repack: repack tensor ..." per graph */
    SYM(hb, "ggml_init", g->init); SYM(hb, "ggml_free", g->free_ctx);
    SYM(hb, "ggml_new_tensor_2d", g->new_2d); SYM(hb, "ggml_mul_mat", g->mul_mat);
    SYM(hb, "ggml_new_graph", g->new_graph); SYM(hb, "ggml_build_forward_expand", g->expand);
    SYM(hb, "ggml_backend_alloc_ctx_tensors_from_buft", g->alloc_ctx);
    SYM(hb, "ggml_backend_buffer_free", g->buf_free);
    SYM(hb, "ggml_backend_tensor_set", g->tset); SYM(hb, "ggml_backend_tensor_get", g->tget);
    SYM(hb, "ggml_backend_graph_compute", g->compute);
    SYM(hb, "ggml_backend_cpu_buffer_type", g->cpu_buft); SYM(hb, "ggml_backend_buft_name", g->buft_name);
    SYM(hb, "ggml_backend_reg_dev_get", g->reg_dev); SYM(hb, "ggml_backend_reg_get_proc_address", g->reg_proc);
    SYM(hb, "ggml_backend_free", g->be_free);
    SYM(h, "ggml_backend_cpu_reg", g->cpu_reg); SYM(h, "ggml_backend_cpu_init", g->be_init);
    SYM(h, "ggml_backend_cpu_set_n_threads", g->be_threads);
    if (!g->init || !g->free_ctx || !g->new_2d || !g->mul_mat || !g->new_graph || !g->expand ||
        !g->alloc_ctx || !g->buf_free || !g->tset || !g->tget || !g->compute || !g->cpu_buft ||
        !g->buft_name || !g->reg_dev || !g->reg_proc || !g->be_free || !g->cpu_reg || !g->be_init ||
        !g->be_threads)
        return 0;
    void *reg = g->cpu_reg();
    void *(*extra)(void *);
    void *pa = g->reg_proc(reg, "ggml_backend_dev_get_extra_bufts");
    memcpy(&extra, &pa, sizeof extra);
    if (!pa) return 0;
    for (void **b = extra(g->reg_dev(reg, 0)); b && *b; b++)
        if (!strcmp(g->buft_name(*b), "CPU_REPACK")) g->repack = *b;
    if (!g->repack) return 0;
    g->be = g->be_init();
    if (!g->be) return 0;
    g->be_threads(g->be, 1);
    return 1;
}

/* y[t*nr + r] = row r of w (nr rows of n, type ty, in CPU_REPACK) . column t of x (n floats),
 * through ggml's graph; 0 on failure */
static int graph_mul_mat(const gk_graph_api *g, uint32_t ty, int plain, const void *w, int64_t nr, const float *x,
                         int64_t n, int ntok, float *y) {
    struct gk_init_params pw = { 1 << 16, NULL, 1 }, pa = { 1 << 22, NULL, 1 };
    void *cw = g->init(pw), *ca = g->init(pa);
    if (!cw || !ca) return 0;
    void *W = g->new_2d(cw, (int)ty, n, nr), *X = g->new_2d(ca, 0 /* F32 */, n, ntok);
    void *Y = g->mul_mat(ca, W, X);
    void *gr = g->new_graph(ca);
    g->expand(gr, Y);
    void *bw = g->alloc_ctx(cw, plain ? g->cpu_buft() : g->repack), *ba = g->alloc_ctx(ca, g->cpu_buft());
    int ok = bw && ba;
    if (ok) {
        g->tset(W, w, 0, quant_row_bytes(ty, n) * (size_t)nr);
        g->tset(X, x, 0, (size_t)n * (size_t)ntok * 4);
        ok = g->compute(g->be, gr) == 0;
        if (ok) g->tget(Y, y, 0, (size_t)nr * (size_t)ntok * 4);
    }
    if (bw) g->buf_free(bw);
    if (ba) g->buf_free(ba);
    g->free_ctx(cw); g->free_ctx(ca);
    return ok;
}

/* one type through ggml's graph: 8 rows, 1 token (gemv) and 5 and 8 tokens (gemm: the
 * repacked gemm for 4 of 5 columns and its gemv for the fifth, or tinyBLAS: fp16 from 8) per
 * length, each column against the kernel our table picks for it (kern_pick with the op's
 * shape; KERN_PLAIN for the plain buffer). Lengths: multiples of 256, for 32-element blocks one
 * with an odd block count, for float types ones with vec_dot tails. Counts into *bad1, *badm
 * (outputs differing), *tot1, *totm; worst relative difference into *worst; the emulations'
 * differences into *emu1, *emum (quantized types, even block counts). */
static int check_graph_type(const gk_graph_api *g, const g4_kern *k, quant_fn qrow, uint32_t ty, int plain, int i8mm, int nbk_max,
                            int *bad1, int *badm, int *tot1, int *totm, double *worst, int *emu1, int *emum) {
    const int64_t nmax = (int64_t)nbk_max * 256, nr = 8;
    enum { TMAX = 8 };
    const uint32_t dt = quant_traits(ty)->dot_type;
    const int fl = quant_traits(ty)->blck == 1;
    float *wf = malloc((size_t)nmax * 4), *x = malloc((size_t)nmax * 4 * TMAX), yg[8 * TMAX], yo[8 * TMAX];
    uint8_t *w = malloc(quant_row_bytes(ty, nmax) * (size_t)nr), *xq = malloc(kern_act_row_bytes(dt, nmax) * TMAX);
    uint8_t *xgq = malloc(kern_act_row_bytes(dt, nmax) * TMAX);
    int ok = 1;
    static const int64_t EXTRA_B32[] = { 32 * 37 }, EXTRA_F[] = { 200, 264, 37 * 8 + 4 };
    const int n_extra = fl ? 3 : quant_traits(ty)->blck == 32 ? 1 : 0;
    for (int nbk = 1, li = 0; ok && (nbk <= nbk_max || li < n_extra);) {
        const int64_t n = nbk <= nbk_max ? (int64_t)nbk * 256 : fl ? EXTRA_F[li] : EXTRA_B32[li];
        if (nbk <= nbk_max) nbk += nbk < 8 ? 1 : 5; else li++;
        const size_t wrb = quant_row_bytes(ty, n), xrb = kern_act_row_bytes(dt, n);
        for (int r = 0; r < nr; r++) {
            for (int64_t i = 0; i < n; i++) { const float v = rndf(); wf[i] = r == 3 ? v * v * v * 100.0f : v; }
            quant_quantize_row(ty, wf, w + (size_t)r * wrb, n);
        }
        for (int64_t i = 0; i < TMAX * n; i++) x[i] = rndf() * (1 + (i % 7 == 0) * 8);
        for (int t = 0; t < TMAX; t++) {
            k->quantize_act[dt](x + (size_t)t * n, xq + (size_t)t * xrb, n);
            if (qrow) qrow(x + (size_t)t * n, xgq + (size_t)t * xrb, n);
        }
        static const int NTS[3] = { 1, 5, 8 };
        for (int ni = 0; ni < 3 && ok; ni++) {
            const int nt = NTS[ni];
            if (!graph_mul_mat(g, ty, plain, w, nr, x, n, nt, yg)) { ok = 0; break; }
            /* as the forward runs them: consecutive columns with the same kernel in one call */
            for (int t = 0, t1; t < nt; t = t1) {
                const g4_matmul_fn fn = kern_pick(k, ty, nt, t, n, nr, plain ? KERN_PLAIN : 0);
                for (t1 = t + 1; t1 < nt && kern_pick(k, ty, nt, t1, n, nr, plain ? KERN_PLAIN : 0) == fn; t1++) {}
                fn(yo + (size_t)t * nr, (size_t)nr, w, wrb, xq + (size_t)t * xrb, xrb, n, 0, nr, t1 - t);
            }
            for (int i = 0; i < nr * nt; i++) {
                if (!memcmp(&yg[i], &yo[i], 4)) continue;
                *(nt == 1 ? bad1 : badm) += 1;
                const double rel = fabs((double)yg[i] - (double)yo[i]) / (fabs((double)yg[i]) + 1e-30);
                if (rel > *worst) *worst = rel;
            }
            *(nt == 1 ? tot1 : totm) += (int)(nr * nt);
            if (fl || !qrow || n % 512) continue;
            for (int t = 0; t < nt; t++)
                for (int r = 0; r < nr; r++) {
                    const uint8_t *wr = w + (size_t)r * wrb, *xr = xgq + (size_t)t * xrb;
                    const float e = !plain ? arm_repacked(ty, wr, xr, n, t < nt - nt % 4, i8mm)
                                  : nt > 1 && (ty == G4_TYPE_Q8_0 || ty == G4_TYPE_Q4_0) ? arm_tinyblas(ty, wr, xr, n)
                                  : arm_vec_dot(ty, wr, xr, n);
                    *(nt == 1 ? emu1 : emum) += memcmp(&e, &yg[t * nr + r], 4) != 0;
                }
        }
    }
    free(wf); free(x); free(w); free(xq); free(xgq);
    return ok;
}

/* $G4_GK_ONLY (comma-separated type names) limits the run to those types, for development */
static int wanted(const char *name) {
    const char *only = getenv("G4_GK_ONLY");
    if (!only || !*only) return 1;
    const size_t l = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += l)
        if ((p == only || p[-1] == ',') && (p[l] == ',' || p[l] == 0)) return 1;
    return 0;
}

/* F32 / F16 / BF16 weights as llama.cpp multiplies them: a one-op graph with the weight in the
 * plain CPU buffer (ggml converts the F32 activations to the weight's type, then vec_dot for
 * one column, llamafile's tinyBLAS for two or more when n % 8 == 0, else vec_dot), against our
 * quantize_act + the kernel the table picks (kern_pick). Lengths with n % 32 and
 * n % 8 tails; 1, 2, 3 and 5 columns; 12 rows, and 11 (tinyBLAS needs rows % 4 == 0, else
 * vec_dot for every column). Counts like check_graph_type; 0 if the graph failed. */
static int check_float_graph(const gk_graph_api *g, const g4_kern *k, uint32_t ty, int *bad1, int *badn,
                             int *tot1, int *totn, double *worst) {
    static const int64_t L[] = { 8, 20, 27, 32, 40, 61, 72, 100, 107, 256, 264, 1000, 1536, 2560, 6144 };
    const int64_t nmax = 6144, nrmax = 12;
    const int ntmax = 5;
    float *wf = malloc((size_t)nmax * 4), *x = malloc((size_t)nmax * ntmax * 4);
    float *yg = malloc((size_t)nrmax * ntmax * 4), *yo = malloc((size_t)nrmax * ntmax * 4);
    uint8_t *w = malloc((size_t)nmax * 4 * (size_t)nrmax), *xq = malloc((size_t)nmax * 4 * ntmax);
    int ok = wf && x && yg && yo && w && xq;
    for (size_t li = 0; li < 2 * (sizeof L / sizeof L[0]) && ok; li++) {
        const int64_t n = L[li / 2], nr = li % 2 ? nrmax - 1 : nrmax;
        const size_t wrb = quant_row_bytes(ty, n), xrb = kern_act_row_bytes((int)ty, n);
        for (int r = 0; r < nr; r++) {
            for (int64_t i = 0; i < n; i++) { const float v = rndf(); wf[i] = r == 3 ? v * v * v * 100.0f : v; }
            quant_quantize_row(ty, wf, w + (size_t)r * wrb, n);
        }
        for (int64_t i = 0; i < ntmax * n; i++) x[i] = rndf() * (1 + (i % 7 == 0) * 8);
        for (int t = 0; t < ntmax; t++) k->quantize_act[ty](x + (size_t)t * n, xq + (size_t)t * xrb, n);
        static const int NT[] = { 1, 2, 3, 5 };
        for (int ti = 0; ti < 4 && ok; ti++) {
            const int nt = NT[ti];
            if (!graph_mul_mat(g, ty, 1, w, nr, x, n, nt, yg)) { ok = 0; break; }
            const g4_matmul_fn mm = kern_pick(k, ty, nt, 0, n, nr, KERN_PLAIN); /* every column the same here */
            mm(yo, (size_t)nr, w, wrb, xq, xrb, n, 0, nr, nt);
            *(nt == 1 ? tot1 : totn) += (int)(nr * nt);
            for (int i = 0; i < nr * nt; i++) {
                if (!memcmp(&yg[i], &yo[i], 4)) continue;
                *(nt == 1 ? bad1 : badn) += 1;
                if (getenv("G4_GK_VERBOSE")) printf("  %s n %lld rows %lld columns %d: output %d differs\n", quant_traits(ty)->name, (long long)n, (long long)nr, nt, i);
                const double rel = fabs((double)yg[i] - (double)yo[i]) / (fabs((double)yg[i]) + 1e-30);
                if (rel > *worst) *worst = rel;
            }
        }
    }
    free(wf); free(x); free(yg); free(yo); free(w); free(xq);
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: g4-ggml-kern LIBDIR [ISA [CPU-LIB]]\n");
        return 2;
    }
    const char *isa = argc > 2 ? argv[2] : DEFAULT_ISA;
    const char *cpulib = argc > 3 ? argv[3] : DEFAULT_CPU_LIB;
    char path[4096];
    snprintf(path, sizeof path, "%s/libggml-base.so", argv[1]);
    void *hb = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!hb) { fprintf(stderr, "g4-ggml-kern: %s\n", dlerror()); return 1; }
    snprintf(path, sizeof path, "%s/%s", argv[1], cpulib);
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) { fprintf(stderr, "g4-ggml-kern: %s\n", dlerror()); return 1; }
    void (*cpu_init)(void);
    SYM(h, "ggml_cpu_init", cpu_init);
    if (cpu_init) cpu_init();

    char err[256];
    const g4_kern *k = kern_select(isa, err, sizeof err);
    if (!k) { fprintf(stderr, "g4-ggml-kern: %s\n", err); return 1; }

    static const struct { uint32_t type; const char *dot, *deq; } T[] = {
        { G4_TYPE_Q8_0, "ggml_vec_dot_q8_0_q8_0", "dequantize_row_q8_0" },
        { G4_TYPE_Q4_0, "ggml_vec_dot_q4_0_q8_0", "dequantize_row_q4_0" },
        { G4_TYPE_Q4_1, "ggml_vec_dot_q4_1_q8_1", "dequantize_row_q4_1" },
        { G4_TYPE_Q5_0, "ggml_vec_dot_q5_0_q8_0", "dequantize_row_q5_0" },
        { G4_TYPE_Q5_1, "ggml_vec_dot_q5_1_q8_1", "dequantize_row_q5_1" },
        { G4_TYPE_Q2_K, "ggml_vec_dot_q2_K_q8_K", "dequantize_row_q2_K" },
        { G4_TYPE_Q3_K, "ggml_vec_dot_q3_K_q8_K", "dequantize_row_q3_K" },
        { G4_TYPE_Q4_K, "ggml_vec_dot_q4_K_q8_K", "dequantize_row_q4_K" },
        { G4_TYPE_Q5_K, "ggml_vec_dot_q5_K_q8_K", "dequantize_row_q5_K" },
        { G4_TYPE_Q6_K, "ggml_vec_dot_q6_K_q8_K", "dequantize_row_q6_K" },
        { G4_TYPE_IQ4_NL, "ggml_vec_dot_iq4_nl_q8_0", "dequantize_row_iq4_nl" },
        { G4_TYPE_IQ4_XS, "ggml_vec_dot_iq4_xs_q8_K", "dequantize_row_iq4_xs" },
    };
    int pass = 0, fail = 0;
    const int64_t nmax = 48 * 256;
    float *x = malloc((size_t)nmax * 4), *wf = malloc((size_t)nmax * 4);
    uint8_t *w = malloc((size_t)nmax * 2), *xq = malloc((size_t)nmax * 2), *xg = malloc((size_t)nmax * 2);
    float *xr = malloc((size_t)nmax * 4);          /* [nmax] one rotated column */
    uint8_t *xg4 = malloc((size_t)nmax * 2 * 4);  /* [4][act row bytes] the columns, ggml-quantized */
    for (size_t ti = 0; ti < sizeof T / sizeof T[0]; ti++) {
        const g4_type_traits *tr = quant_traits(T[ti].type);
        vec_dot_fn vd;
        SYM(h, T[ti].dot, vd);
        const char *qn = tr->dot_type == G4_TYPE_Q8_K ? "quantize_row_q8_K"
                       : tr->dot_type == G4_TYPE_Q8_1 ? "quantize_row_q8_1" : "quantize_row_q8_0";
        quant_fn qf;
        SYM(h, qn, qf);
        dequant_fn dq;
        SYM(h, T[ti].deq, dq);
        const uint32_t ty = T[ti].type;
        const int repk = X86_REPACK && (ty == G4_TYPE_Q4_0 || ty == G4_TYPE_IQ4_NL || ty == G4_TYPE_Q4_K);
        if (!wanted(tr->name)) continue;
        if (!vd || !qf || !k->matmul[T[ti].type]) { printf("skip %s\n", tr->name); continue; }
        int bad_q = 0, bad_d = 0, bad_dq = 0, n_case = 0, bad_emu = 0;
        double worst = 0;
        /* under qemu (the aarch64 build) 16 of the 48 lengths, and for 32-element blocks 4 with
         * an odd block count (the vec_dot tails) */
        const int n_odd = !X86_REPACK && tr->blck == 32 ? 4 : 0;
        for (int li = 0, nbk = 1; nbk <= 48 || li < n_odd; ) {
            static const int64_t ODD[4] = { 32, 96, 224, 32 * 37 };
            const int64_t n = nbk <= 48 ? (int64_t)nbk * 256 : ODD[li];
            if (nbk <= 48) nbk += (X86_REPACK || nbk < 8) ? 1 : 5; else li++;
            for (int rep = 0; rep < 8; rep++) {
                /* weights and activations: uniform, spiky, tiny, heavy-tailed, one outlier,
                 * wide weight range, values from a small set (ties of |x|), sparse */
                const float amp = rep == 3 ? 1e-3f : 1.0f;
                for (int64_t i = 0; i < n; i++) {
                    const float r = rndf(), q = rndf();
                    wf[i] = rep == 5 ? r * r * r * 100.0f : r * amp;
                    x[i] = rep == 3 ? r / (fabsf(q) + 0.01f)
                         : rep == 4 ? (i == n / 3 ? 300.0f : r)
                         : rep == 6 ? (float)((int)(r * 4.0f)) * 0.5f
                         : rep == 7 ? (q > 0.8f ? r : 0.0f)
                         : r * (1 + (i % 7 == 0) * 8);
                }
                quant_quantize_row(T[ti].type, wf, w, n);
                qf(x, xg, n);
                if (dq) {
                    float *da = malloc((size_t)n * 8);
                    dq(w, da, n);
                    quant_dequant_row(T[ti].type, w, da + n, n);
                    if (memcmp(da, da + n, (size_t)n * 4)) bad_dq++;
                    free(da);
                }
                k->quantize_act[tr->dot_type](x, xq, n);
                const size_t xb = kern_act_row_bytes(tr->dot_type, n);
                if (memcmp(xg, xq, xb)) bad_q++;
                float sg = 0, so = 0;
                /* llama.cpp (AVX2) multiplies these types with its repacked kernels, the
                 * others with vec_dot (or tinyBLAS, in the same order) */
                if (!repk) vd((int)n, &sg, 0, w, 0, xg, 0, 1);
                else if (ty == G4_TYPE_Q4_K) sg = rep_q4_K(w, xg, n, 0);
                else sg = rep_b32(w, xg, n, ty == G4_TYPE_IQ4_NL);
                /* one column of a weight llama.cpp does not repack: its vec_dot */
                kern_pick(k, ty, 1, 0, n, 1, KERN_PLAIN)(&so, 1, w, quant_row_bytes(ty, n), xg, xb, n, 0, 1, 1);
                float sgg = sg, sog = so;
                if (X86_REPACK && ty == G4_TYPE_Q4_K && k->matmul_grp[ty]) {
                    sgg = rep_q4_K(w, xg, n, 1);
                    k->matmul_grp[ty](&sog, 1, w, quant_row_bytes(ty, n), xg, xb, n, 0, 1, 1);
                }
                if (!X86_REPACK && n % 512 == 0) { /* the emulation: even block counts only */
                    const float se = arm_vec_dot(ty, w, xg, n);
                    bad_emu += memcmp(&se, &sg, 4) != 0;
                }
                /* several columns in one call (prompt chunks, batches), where the pick for 4
                 * columns is the one-column kernel (llama.cpp: vec_dot per column): column c is
                 * x rotated by 37c, so a kernel that mixes up its columns' activations shows */
                int bad_cols = 0;
                const g4_matmul_fn mm1 = kern_pick(k, ty, 1, 0, n, 1, KERN_PLAIN);
                if (!repk && kern_pick(k, ty, 4, 0, n, 1, KERN_PLAIN) == mm1) {
                    float gc[4], oc[4];
                    for (int c = 0; c < 4; c++) {
                        for (int64_t i = 0; i < n; i++) xr[i] = x[(i + 37 * c) % n];
                        qf(xr, xg4 + (size_t)c * xb, n);
                        vd((int)n, &gc[c], 0, w, 0, xg4 + (size_t)c * xb, 0, 1);
                    }
                    mm1(oc, 1, w, quant_row_bytes(ty, n), xg4, xb, n, 0, 1, 4);
                    bad_cols = memcmp(gc, oc, sizeof gc) != 0;
                }
                n_case++;
                if (memcmp(&sg, &so, 4) || memcmp(&sgg, &sog, 4) || bad_cols) {
                    bad_d++;
                    const double r = fabs((double)sg - (double)so) / (fabs((double)sg) + 1e-30);
                    if (r > worst) worst = r;
                }
            }
        }
        const int info = 0; /* a type whose dot is reported but not gated (none now) */
        printf("%-7s %3d cases: dequantization differs %d, activations differ %d, dot differs %d (worst rel %.2e)%s\n",
               tr->name, n_case, bad_dq, bad_q, bad_d, worst, info ? " [dot order not matched yet]" : "");
        if (!X86_REPACK)
            printf("check %s dequant %d act %d dot %d of %d worst %.2e emu %d\n", tr->name, bad_dq, bad_q, bad_d, n_case, worst, bad_emu);
        if (bad_q || bad_dq || (bad_d && !info)) fail++; else pass++;
    }
    if (X86_REPACK && k->matmul_grp[G4_TYPE_Q2_K] && wanted("q2_K"))
        run_repacked(h, k, &REP_Q2_K, 16, "q2_K repacked gemv/gemm (ggml's own kernels, 8 and 16 rows)", &pass, &fail);
    if (X86_REPACK) run_repacked(h, k, &REP_Q4_K, 8, "q4_K repacked gemv/gemm (ggml's own kernels)", &pass, &fail);
    if (X86_REPACK && wanted("q4_0")) run_repacked(h, k, &REP_Q4_0, 8, "q4_0 repacked gemv/gemm (ggml's own kernels)", &pass, &fail);
    if (X86_REPACK && wanted("iq4_nl")) run_repacked(h, k, &REP_IQ4_NL, 8, "iq4_nl repacked gemv/gemm (ggml's own kernels)", &pass, &fail);
    if (X86_REPACK) {
        gk_graph_api g;
        if (!graph_api_load(&g, hb, h)) printf("float weights: ggml's backend API not found, skipped\n");
        else {
            static const uint32_t F[] = { G4_TYPE_F32, G4_TYPE_F16, G4_TYPE_BF16 };
            for (size_t fi = 0; fi < sizeof F / sizeof F[0]; fi++) {
                int b1 = 0, bn = 0, t1 = 0, tn = 0;
                double worst = 0;
                const char *tn_ = quant_traits(F[fi])->name;
                if (!k->matmul[F[fi]]) { printf("skip %s\n", tn_); continue; }
                if (!check_float_graph(&g, k, F[fi], &b1, &bn, &t1, &tn, &worst)) {
                    printf("%-7s plain mul_mat: ggml graph failed\n", tn_);
                    fail++;
                    continue;
                }
                printf("%-7s plain mul_mat (ggml graph: vec_dot / tinyBLAS): 1 column %d of %d differ, 2-5 columns %d of %d differ (worst rel %.2e)\n",
                       tn_, b1, t1, bn, tn, worst);
                if (b1 || bn) fail++; else pass++;
            }
            g.be_free(g.be);
        }
    }
    if (!X86_REPACK) {
        /* the types llama.cpp's ARM build repacks (repack.cpp, ggml_repack_get_optimal_repack_type:
         * dotprod: q4_0/iq4_nl/q8_0 4x4, q4_K/q5_K/q6_K 8x4; i8mm: q4_0/q8_0 4x8, q4_K/q5_K/q6_K 8x8) */
        static const uint32_t R[] = { G4_TYPE_Q8_0, G4_TYPE_Q4_0, G4_TYPE_IQ4_NL, G4_TYPE_Q4_K, G4_TYPE_Q5_K, G4_TYPE_Q6_K };
        gk_graph_api g;
        const int i8mm = strstr(cpulib, "armv8.6") || strstr(cpulib, "armv9"); /* MATMUL_INT8 builds */
        if (strstr(cpulib, "armv8.0")) printf("graph: %s repacks nothing (no dotprod), skipped\n", cpulib);
        else if (!graph_api_load(&g, hb, h)) printf("graph: ggml's backend API / CPU_REPACK not found, skipped\n");
        else
            /* plain: the weight in the CPU buffer (what ggml does with a weight it does not
             * repack: vec_dot for 1 token, tinyBLAS or vec_dot for more); then CPU_REPACK */
            for (int plain = 1; plain >= 0; plain--) {
                static const uint32_t F[] = { G4_TYPE_F32, G4_TYPE_F16, G4_TYPE_BF16 };
                const size_t nt = plain ? sizeof T / sizeof T[0] + 3 : sizeof R / sizeof R[0];
                for (size_t ri = 0; ri < nt; ri++) {
                    const uint32_t ty = !plain ? R[ri] : ri < sizeof T / sizeof T[0] ? T[ri].type : F[ri - sizeof T / sizeof T[0]];
                    const char *tn = quant_traits(ty)->name, *mode = plain ? "plain" : "repacked";
                    int b1 = 0, b4 = 0, t1 = 0, t4 = 0, e1 = 0, e4 = 0;
                    double worst = 0;
                    const uint32_t dt = quant_traits(ty)->dot_type;
                    quant_fn qrow = NULL;
                    if (quant_traits(ty)->blck > 1)
                        SYM(h, dt == G4_TYPE_Q8_K ? "quantize_row_q8_K" : dt == G4_TYPE_Q8_1 ? "quantize_row_q8_1" : "quantize_row_q8_0", qrow);
                    if (!wanted(tn) || !k->matmul[ty] || (quant_traits(ty)->blck > 1 && !qrow)) continue;
                    if (!check_graph_type(&g, k, qrow, ty, plain, i8mm, 48, &b1, &b4, &t1, &t4, &worst, &e1, &e4)) {
                        printf("%-7s %s: ggml graph failed\n", tn, mode);
                        fail++;
                        continue;
                    }
                    printf("%-7s %s mul_mat (ggml graph%s): 1 token %d of %d differ, 5 and 8 tokens %d of %d differ (worst rel %.2e)\n",
                           tn, mode, plain ? "" : ", CPU_REPACK", b1, t1, b4, t4, worst);
                    printf("check %s %s gemv %d gemm %d of %d %d worst %.2e emu %d %d\n", tn, mode, b1, b4, t1, t4, worst, e1, e4);
                    if (b1 || b4) fail++; else pass++;
                }
            }
    }
    printf("%d passed, %d failed\n", pass, fail);
    free(x); free(wf); free(w); free(xq); free(xg); free(xr); free(xg4);
    return fail ? 1 : 0;
}
