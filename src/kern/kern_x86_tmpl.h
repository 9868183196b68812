/* kern_x86_tmpl.h - x86 kernel bodies shared by kern_avx2.c and kern_avx512.c.
 *
 * Included (once) by each x86 kernel file, which is compiled with its own ISA flags and
 * defines before inclusion:
 *   KX(name)                 the file's suffix for the table accessor (kern_table_avx2 ...)
 *   KX_NAME                  "avx2" / "avx512"
 *   KX_DOT_U8S8(acc, u, s)   acc (8 x i32) += sum of 4 adjacent u8*s8 products, exact
 *                            (AVX2: vpmaddubsw + vpmaddwd + vpaddd, exact for |u| <= 128;
 *                             AVX-512 VNNI: vpdpbusd ymm)
 *   KX_F512                  (kern_avx512.c) F32/F16 dots, the softmax, Q2_K and (with
 *                            __AVX512BF16__) BF16 in the AVX-512 builds' orders
 *   KX_PF_DIST               optional weight prefetch distance for the K-quant kernels
 * so both tables run the same algorithms, with the same functions in the same order.
 *
 * Contract (kern.h): W is [n_out][w_row_bytes] in GGUF block layout (no alignment assumed:
 * unaligned loads only), xq is [n_tok][xq_row_bytes] in the weight type's dot type,
 * y[t*ldy + r] for r in [row0, row1), t < n_tok. n_in is a multiple of the block size.
 * Matmul: each weight row is dotted with up to 4 tokens at once (weights decoded once per
 * block for the 4), over tiles of 8 rows, so a row chunk streams its weights from DRAM once
 * for all tokens.
 * Accumulation: integer sums within a block are exact (u8 x s8 pairs never saturate int16:
 * codes <= 63, |a| <= 128); block scaling and accumulation in f32 FMA lanes, reduced at the
 * end. The order differs from quant_ref.c: expected NMSE vs the scalar table <= 1e-6 (the
 * kern tests check that). Activation quantizers are bit-exact with quant_ref.c's.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kern_isa.h"
#include "quant/quant_ref.h"

#define KMAXT 4   /* tokens per weight-row pass */
#define KINLINE static inline __attribute__((always_inline))
/* full unrolling keeps per-token accumulator arrays in registers (GCC 12 spills them otherwise) */
#define KUNROLL _Pragma("GCC unroll 8")
/* Software prefetch of the K-quant weight stream, KX_PF_DIST bytes ahead (one line per 64
 * bytes of block; 0 = off). Set per ISA file: a tuning knob, measured only on the AVX2 host
 * (noisy shared 2-vCPU VM, small gain at 1024); prefetches never fault past the end. */
#ifndef KX_PF_DIST
#define KX_PF_DIST 0
#endif
/* The hint of every weight-stream prefetch (these, the tiles', kern_x86_rq4k.h's): weights are
 * read once per token, so a table may fetch them non-temporally (KX_PF_HINT _MM_HINT_NTA) */
#ifndef KX_PF_HINT
#define KX_PF_HINT _MM_HINT_T0
#endif
#if KX_PF_DIST > 0
#define KPREFETCH(p, bytes) do { for (int pf_ = 0; pf_ < (int)(bytes); pf_ += 64) \
        _mm_prefetch((const char *)(p) + KX_PF_DIST + pf_, KX_PF_HINT); } while (0)
#else
#define KPREFETCH(p, bytes) ((void)0)
#endif

/* ==== Helpers ==== */

KINLINE __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
KINLINE __m128i ld128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
/* 8 bytes in both 64-bit halves (vmovddup; memcpy: p need not be 8-byte aligned) */
KINLINE __m128i ld64dup(const void *p) { int64_t v; memcpy(&v, p, 8); return _mm_set1_epi64x(v); }
KINLINE float h2f(const uint8_t *p) { return _cvtsh_ss(quant_rd16(p)); }
KINLINE float rdf(const uint8_t *p) { float f; memcpy(&f, p, 4); return f; }

KINLINE float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
/* the T tokens' float step of Q8_K super-block i (x: token 0's activation rows, xrb apart):
 * acc[t] += (d(token t) * dw) * float(sumi[t]), ggml's fma per super-block */
KINLINE void kq_acc_t(__m256 *acc, const __m256i *sumi, const uint8_t *restrict x, size_t xrb, int64_t i,
                      float dw, const int T) {
    KUNROLL
    for (int t = 0; t < T; t++)
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(rdf(x + t * xrb + i * 292) * dw), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
}

KINLINE int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* 32 4-bit codes of 16 bytes: low nibbles -> bytes 0..15, high nibbles -> bytes 16..31 */
KINLINE __m256i nib32(const uint8_t *p) {
    const __m128i x = ld128(p), m4 = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x, 4), m4), _mm_and_si128(x, m4));
}

/* ==== Dot kernels: one weight row x T tokens (T constant after inlining) ==== */

/* F32 / F16 / BF16 weights with same-type activations: 8 f32 lanes, FMA */
KINLINE __m256 ld_f32(const uint8_t *p) { return _mm256_loadu_ps((const float *)(const void *)p); }
KINLINE __m256 ld_f16(const uint8_t *p) { return _mm256_cvtph_ps(ld128(p)); }
KINLINE __m256 ld_bf16(const uint8_t *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(ld128(p)), 16));
}

/* The last step of a one-column float dot, 4 lanes to 1: ggml_vec_dot_f32 / _f16 reduce
 * with two hadds, (l0+l1)+(l2+l3); ggml_vec_dot_bf16 with movehl + movehdup, (l0+l2)+(l1+l3). */
KINLINE float red4_hadd(__m128 t0) {
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    return _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
}
KINLINE float red4_shuf(__m128 t0) {
    const __m128 t1 = _mm_add_ps(t0, _mm_movehl_ps(t0, t0));
    return _mm_cvtss_f32(_mm_add_ss(t1, _mm_movehdup_ps(t1)));
}

/* W-lane f32 vectors (W = 8: ymm, 16: zmm), for the float dots of both widths */
#define KV_T_8 __m256
#define KV_T_16 __m512
#define KV_ZERO_8 _mm256_setzero_ps
#define KV_ZERO_16 _mm512_setzero_ps
#define KV_FMA_8 _mm256_fmadd_ps
#define KV_FMA_16 _mm512_fmadd_ps
#define KV_ADD_8 _mm256_add_ps
#define KV_ADD_16 _mm512_add_ps
#define KV_LDF_8 _mm256_loadu_ps
#define KV_LDF_16 _mm512_loadu_ps
#define KV_STF_8 _mm256_storeu_ps
#define KV_STF_16 _mm512_storeu_ps
#define KV_SET1_8 _mm256_set1_ps
#define KV_SET1_16 _mm512_set1_ps
#define KV_MAX_8 _mm256_max_ps
#define KV_MAX_16 _mm512_max_ps
#define KV_SUB_8 _mm256_sub_ps
#define KV_SUB_16 _mm512_sub_ps
#define KV_MUL_8 _mm256_mul_ps
#define KV_MUL_16 _mm512_mul_ps
#define KV_FOLD_8 fold8
#define KV_FOLD_16 fold16
KINLINE __m128 fold8(__m256 v) { return _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); }
#if defined(KX_F512)
KINLINE __m128 fold16(__m512 v) { /* lo256 + hi256, then lo128 + hi128 */
    return fold8(_mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}
/* _mm512_reduce_add_ps as GCC builds it: ((l0 + l2) + (l1 + l3)) of fold16 */
KINLINE float zred16(__m512 v) { return red4_shuf(fold16(v)); }
KINLINE __m512 ldz_f32(const uint8_t *p) { return _mm512_loadu_ps((const float *)(const void *)p); }
KINLINE __m512 ldz_f16(const uint8_t *p) { return _mm512_cvtph_ps(ld256(p)); }
#endif

/* tokens whose one-column float dots (dot_<t>, dot_bf16z) share each weight load: each token
 * keeps its own 4 (2) accumulators, so its bits are the one-token dot's (16 zmm accumulators
 * for 4 tokens; the 16-register AVX2 table takes 2) */
#if defined(KX_F512)
#define KX_FT 4
#else
#define KX_FT 2
#endif
/* Two float orders, as llama.cpp's builds multiply F32/F16/BF16 weights, in W lanes (AVX2: 8;
 * the AVX-512 builds: 16 for F32/F16, 8 for BF16 without vdpbf16ps, as their AVX2 code):
 *  dot_<t>    (one activation column: ggml_vec_dot_f32 / _f16 / _bf16): 4 x W FMA lanes over
 *             steps of 4W (the bf16 one's mul + add contracted to FMA by GCC in llama.cpp's
 *             build), reduced (s0+s2, s1+s3, then s0+s1, folded to 4 lanes, then RED4: AVX2
 *             f32/f16 two hadds, bf16 and the AVX-512 _mm512_reduce_add_ps red4_shuf); the
 *             tail as KX_TAIL;
 *  dot_<t>_tb (two or more columns: llamafile's tinyBLAS): one W-lane FMA chain over k, then
 *             red4_shuf of the fold (hsum); tinyBLAS needs k % W == 0, else llama.cpp falls back
 *             to the first. */
/* The n % STEP tail of one dot, as GCC 11 vectorized ggml's `sumf += x[i]*y[i]` loop in
 * llama.cpp's builds: f32 (vec_dot_f32): W-lane blocks while W remain, one W/2 block if W/2
 * remain (products rounded, then added one at a time in order), the last < W/2 by scalar
 * FMA (W = 8 haswell, 16 AVX-512); f16 / bf16: each product rounded to f32, added in double. */
KINLINE float tail_f32(float sf, const uint8_t *restrict w, const uint8_t *restrict x, int64_t i, int64_t n, const int W) {
    for (; n - i >= W; i += W)
        for (int q = 0; q < W; q++) { const float pr = rdf(w + (i + q) * 4) * rdf(x + (i + q) * 4); sf = sf + pr; }
    if (n - i >= W / 2) {
        for (int q = 0; q < W / 2; q++) { const float pr = rdf(w + (i + q) * 4) * rdf(x + (i + q) * 4); sf = sf + pr; }
        i += W / 2;
    }
    for (; i < n; i++) sf = fmaf(rdf(w + i * 4), rdf(x + i * 4), sf);
    return sf;
}
/* the tail of dot_<t>: f32 (TAILT float) by tail_f32, f16 / bf16 (double) product by product */
#define KX_TAIL(TAILT, sf, TOF, esz, w, xt, np, n, W)                                               \
    do {                                                                                            \
        if (esz == 4) { sf = (TAILT)tail_f32((float)sf, w, xt, np, n, W); break; }                  \
        for (int64_t i_ = np; i_ < n; i_++) {                                                       \
            const float pr = TOF(w + i_ * esz) * TOF(xt + i_ * esz);                                \
            sf = sf + (TAILT)pr;                                                                    \
        }                                                                                           \
    } while (0)
#define DEF_DOT_FLOAT(tname, esz, LD, TOF, TAILT, RED4, W)                                          \
    KINLINE void dot_##tname(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb,      \
                             int64_t n, const int T, float *restrict out) {                          \
        const int64_t np = n & ~(int64_t)(4 * W - 1);                                                 \
        KUNROLL                                                                                       \
        for (int t0 = 0; t0 < T; t0 += KX_FT) {                                                       \
            const int tn = T - t0 < KX_FT ? T - t0 : KX_FT;                                           \
            KV_T_##W s4[KX_FT][4];                                                                    \
            KUNROLL                                                                                   \
            for (int t = 0; t < tn; t++)                                                              \
                for (int j = 0; j < 4; j++) s4[t][j] = KV_ZERO_##W();                                 \
            for (int64_t i = 0; i < np; i += 4 * W) {                                                 \
                if (T > 1) KPREFETCH(w + i * esz, 4 * W * esz); /* the longer loop's weight stream */ \
                KUNROLL                                                                               \
                for (int j = 0; j < 4; j++) {                                                         \
                    const KV_T_##W wj = LD(w + (i + W * j) * esz);                                    \
                    KUNROLL                                                                           \
                    for (int t = 0; t < tn; t++)                                                      \
                        s4[t][j] = KV_FMA_##W(wj, LD(x + (t0 + t) * xrb + (i + W * j) * esz), s4[t][j]); \
                }                                                                                     \
            }                                                                                         \
            KUNROLL                                                                                   \
            for (int t = 0; t < tn; t++) {                                                            \
                const uint8_t *xt = x + (t0 + t) * xrb;                                               \
                s4[t][0] = KV_ADD_##W(s4[t][0], s4[t][2]);                                            \
                s4[t][1] = KV_ADD_##W(s4[t][1], s4[t][3]);                                            \
                TAILT sf = (TAILT)RED4(KV_FOLD_##W(KV_ADD_##W(s4[t][0], s4[t][1])));                  \
                KX_TAIL(TAILT, sf, TOF, esz, w, xt, np, n, W);                                        \
                out[t0 + t] = (float)sf;                                                              \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    KINLINE void dot_##tname##_tb(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb,  \
                                  int64_t n, const int T, float *restrict out) {                     \
        if (n % W) { dot_##tname(w, x, xrb, n, T, out); return; }                                     \
        KV_T_##W acc[KMAXT];                                                                         \
        KUNROLL                                                                                       \
        for (int t = 0; t < T; t++) acc[t] = KV_ZERO_##W();                                          \
        for (int64_t i = 0; i < n; i += W) {                                                          \
            if (T > 1 && i % (64 / esz) == 0) KPREFETCH(w + i * esz, 64);                             \
            const KV_T_##W w0 = LD(w + i * esz);                                                      \
            KUNROLL                                                                                   \
            for (int t = 0; t < T; t++) acc[t] = KV_FMA_##W(w0, LD(x + t * xrb + i * esz), acc[t]);  \
        }                                                                                             \
        KUNROLL                                                                                       \
        for (int t = 0; t < T; t++) out[t] = red4_shuf(KV_FOLD_##W(acc[t]));                         \
    }
KINLINE float tof_f32(const uint8_t *p) { return rdf(p); }
KINLINE float tof_f16(const uint8_t *p) { return h2f(p); }
KINLINE float tof_bf16(const uint8_t *p) { return g4_bf16_to_f32(quant_rd16(p)); }
#if defined(KX_F512)
DEF_DOT_FLOAT(f32, 4, ldz_f32, tof_f32, float, red4_shuf, 16)
DEF_DOT_FLOAT(f16, 2, ldz_f16, tof_f16, double, red4_shuf, 16)
#else
DEF_DOT_FLOAT(f32, 4, ld_f32, tof_f32, float, red4_hadd, 8)
DEF_DOT_FLOAT(f16, 2, ld_f16, tof_f16, double, red4_hadd, 8)
#endif
/* BF16 in 8 lanes on both tables; the AVX-512 table's CPUs with AVX512_BF16 use dot_bf16z */
DEF_DOT_FLOAT(bf16, 2, ld_bf16, tof_bf16, double, red4_shuf, 8)
#if defined(KX_F512) && defined(__AVX512BF16__)
/* BF16 as llama.cpp's AVX512_BF16 builds (zen4, cooperlake, sapphirerapids) multiply it, with
 * vdpbf16ps (pairs of bf16 products into f32 lanes, the CPU's own rounding):
 *  dot_bf16z    ggml_vec_dot_bf16: two 16-lane accumulators over steps of 64 (32 elements
 *               each), each reduced by zred16 and added to a double, c1 first; the n % 64 tail
 *               product by product in double;
 *  dot_bf16z_tb tinyBLAS<32, __m512, __m512bh>: one chain over k in steps of 32, zred16;
 *               k % 32 == 0, else vec_dot. */
KINLINE __m512bh ldbh(const uint8_t *p) { return (__m512bh)_mm512_loadu_ps((const float *)(const void *)p); }
KINLINE void dot_bf16z(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n, const int T,
                       float *restrict out) {
    __m512 c1[KMAXT], c2[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) c1[t] = c2[t] = _mm512_setzero_ps();
    const int64_t np = n & ~(int64_t)63;
    for (int64_t i = 0; i < np; i += 64) {
        if (T > 1) KPREFETCH(w + i * 2, 128);
        const __m512bh w1 = ldbh(w + i * 2), w2 = ldbh(w + (i + 32) * 2);
        KUNROLL
        for (int t = 0; t < T; t++) {
            c1[t] = _mm512_dpbf16_ps(c1[t], w1, ldbh(x + t * xrb + i * 2));
            c2[t] = _mm512_dpbf16_ps(c2[t], w2, ldbh(x + t * xrb + (i + 32) * 2));
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) {
        const uint8_t *xt = x + t * xrb;
        double sf = 0.0;
        sf += (double)zred16(c1[t]);
        sf += (double)zred16(c2[t]);
        for (int64_t i = np; i < n; i++) {
            const float pr = tof_bf16(w + i * 2) * tof_bf16(xt + i * 2);
            sf += (double)pr;
        }
        out[t] = (float)sf;
    }
}
KINLINE void dot_bf16z_tb(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n, const int T,
                          float *restrict out) {
    if (n % 32) { dot_bf16z(w, x, xrb, n, T, out); return; }
    __m512 acc[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 32) {
        if (T > 1) KPREFETCH(w + i * 2, 64);
        const __m512bh w0 = ldbh(w + i * 2);
        KUNROLL
        for (int t = 0; t < T; t++) acc[t] = _mm512_dpbf16_ps(acc[t], w0, ldbh(x + t * xrb + i * 2));
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = zred16(acc[t]);
}
#endif

/* 32-element blocks with Q8_0 activations: signed codes s (32 x i8) via the sign trick,
 * |s| x sign(a, s) as u8 x s8 (|s| <= 128 so pairs stay below 2^15). */
/* da: the activation block scales of this row segment as f32, da[t*KDA_MAX + i] (filled
 * once per token group by the matmul driver instead of one f16 conversion per row). */
#define KDA_MAX 1024 /* rows up to 32768 elements are one FMA chain */

#define DEF_DOT_B32(tname, wbytes, DECODE)                                                         \
    KINLINE void dot_##tname(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb,      \
                             int64_t n, const int T, float *restrict out, const float *restrict da) { \
        /* one FMA chain per token, as ggml's vec_dot / tinyBLAS (AVX2): bit-exact with them */     \
        __m256 acc[KMAXT];                                                                           \
        KUNROLL \
        for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();                                    \
        const int64_t nb = n / 32;                                                                    \
        for (int64_t i = 0; i < nb; i++, w += wbytes) {                                               \
            const __m256i s = DECODE(w);                                                              \
            const __m256i us = _mm256_sign_epi8(s, s);                                                \
            const __m256 dw = _mm256_set1_ps(h2f(w));                                                 \
            KUNROLL \
            for (int t = 0; t < T; t++) {                                                             \
                const uint8_t *a = x + t * xrb + i * 34;                                              \
                __m256i p = _mm256_setzero_si256();                                                   \
                KX_DOT_U8S8(p, us, _mm256_sign_epi8(ld256(a + 2), s));                                \
                const __m256 d = _mm256_mul_ps(dw, _mm256_broadcast_ss(da + t * KDA_MAX + i));        \
                acc[t] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[t]);                           \
            }                                                                                         \
        }                                                                                             \
        KUNROLL \
        for (int t = 0; t < T; t++) out[t] = hsum_ps(acc[t]);                                        \
    }

KINLINE __m256i dec_q8_0(const uint8_t *b) { return ld256(b + 2); }
KINLINE __m256i dec_q4_0(const uint8_t *b) { return _mm256_sub_epi8(nib32(b + 2), _mm256_set1_epi8(8)); }
/* 5-bit codes: low nibbles at qs, fifth bit e of the u32 at qhp -> 0x10 in byte e */
KINLINE __m256i q5_codes(const uint8_t *qhp, const uint8_t *qs) {
    const uint32_t qh = quant_rd32(qhp);
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i h = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), shuf);
    h = _mm256_cmpeq_epi8(_mm256_and_si256(h, bit), bit);          /* 0xff where set */
    return _mm256_or_si256(nib32(qs), _mm256_and_si256(h, _mm256_set1_epi8(0x10)));
}
/* Q5_0 signed values code - 16 directly: low nibble, or low nibble - 16 = nibble | 0xF0 where
 * the fifth bit is clear (one operation less than codes then a subtraction) */
KINLINE __m256i dec_q5_0(const uint8_t *b) {
    const uint32_t qh = quant_rd32(b + 2);
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i h = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), shuf);
    h = _mm256_cmpeq_epi8(_mm256_and_si256(h, bit), bit);          /* 0xff where set */
    return _mm256_or_si256(nib32(b + 6), _mm256_andnot_si256(h, _mm256_set1_epi8((char)0xF0)));
}

/* Q4_1 / Q5_1 x Q8_1: unsigned codes straight into vpmaddubsw; + m_w * s_a per block */
#define DEF_DOT_B32_1(tname, wbytes, CODES)                                                        \
    KINLINE void dot_##tname(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb,      \
                             int64_t n, const int T, float *restrict out) {                          \
        __m256 acc[KMAXT];                                                                           \
        float ms[KMAXT];                                                                             \
        KUNROLL                                                                                      \
        for (int t = 0; t < T; t++) { acc[t] = _mm256_setzero_ps(); ms[t] = 0; }                     \
        const __m256i ones = _mm256_set1_epi16(1);                                                   \
        const int64_t nb = n / 32;                                                                    \
        for (int64_t i = 0; i < nb; i++, w += wbytes) {                                               \
            const __m256i u = CODES(w);                                                               \
            const float dw = h2f(w), mw = h2f(w + 2);                                                 \
            KUNROLL                                                                                   \
            for (int t = 0; t < T; t++) {                                                             \
                const uint8_t *a = x + t * xrb + i * 36;                                              \
                const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u, ld256(a + 4)), ones);     \
                acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * h2f(a)), _mm256_cvtepi32_ps(p), acc[t]);  \
                ms[t] += mw * h2f(a + 2);                                                             \
            }                                                                                         \
        }                                                                                             \
        KUNROLL                                                                                       \
        for (int t = 0; t < T; t++) out[t] = hsum_ps(acc[t]) + ms[t];                                \
    }
KINLINE __m256i codes_q4_1(const uint8_t *b) { return nib32(b + 4); }
KINLINE __m256i codes_q5_1(const uint8_t *b) { return q5_codes(b + 4, b + 8); }
DEF_DOT_B32_1(q4_1, 20, codes_q4_1)
DEF_DOT_B32_1(q5_1, 24, codes_q5_1)
KINLINE __m256i dec_iq4_nl(const uint8_t *b) {
    const __m128i k = _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
    return _mm256_shuffle_epi8(_mm256_set_m128i(k, k), nib32(b + 2));
}
DEF_DOT_B32(q8_0, 34, dec_q8_0)
DEF_DOT_B32(q5_0, 22, dec_q5_0)

/* Q4_K / Q5_K x Q8_K. Per 64-element chunk k: codes of sub-blocks 2k (low nibbles) and
 * 2k+1 (high nibbles, + fifth bits for Q5_K), u8 x s8 pairs, then vpmaddwd by the 6-bit
 * scale; the min term uses the activation's bsums: sum_sb m[sb]*(bsums[2sb]+bsums[2sb+1]). */
KINLINE void kq_scales(const uint8_t *sc12, uint8_t out[16]) {
    uint32_t u[4];
    memcpy(u, sc12, 12);
    const uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
    const uint32_t aux = u[1] & k1;
    u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
    u[2] = aux;
    u[0] &= k1;
    memcpy(out, u, 16); /* out[0..7] scales, out[8..15] mins */
}

/* kq_scales in one xmm (no scalar unpacking, no trip through memory): bytes 0..7 scales,
 * 8..15 mins, from the 12 scale bytes at p (16 bytes are read: the block continues). */
KINLINE __m128i kq_scales_v(const uint8_t *p) {
    const __m128i v = ld128(p);
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    const __m128i lo = _mm_and_si128(a, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
    const __m128i m47 = _mm_and_si128(_mm_srli_epi16(a, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
    const __m128i hi = _mm_srli_epi16(_mm_and_si128(b, _mm_set1_epi8((char)0xc0)), 2);
    return _mm_or_si128(_mm_or_si128(lo, m47), hi);
}
/* i16 scale broadcasts for sub-block j from [s0..s7 | s0..s7] (i16): bytes 2j, 2j+1 */
static const uint8_t K4_SEL[8][32] = {
#define S1(a) a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1
    { S1(0), S1(0) }, { S1(2), S1(2) }, { S1(4), S1(4) }, { S1(6), S1(6) },
    { S1(8), S1(8) }, { S1(10), S1(10) }, { S1(12), S1(12) }, { S1(14), S1(14) },
#undef S1
};

/* i16 scales for two vphaddw'd pairs k, k+1 (k = 0, 2): [s(2k) x2 .. s(2k+3) x2] per lane */
static const uint8_t K4_QUAD[2][32] = {
#define S2x(a) a, a + 1, a, a + 1
    { S2x(0), S2x(2), S2x(4), S2x(6), S2x(0), S2x(2), S2x(4), S2x(6) },
    { S2x(8), S2x(10), S2x(12), S2x(14), S2x(8), S2x(10), S2x(12), S2x(14) },
#undef S2x
};
/* i16 scales for a vphaddw'd pair k: [s(2k) x4, s(2k+1) x4] in both 128-bit lanes */
static const uint8_t K4_PAIR[4][32] = {
#define S4(a) a, a + 1, a, a + 1, a, a + 1, a, a + 1
    { S4(0), S4(2), S4(0), S4(2) }, { S4(4), S4(6), S4(4), S4(6) },
    { S4(8), S4(10), S4(8), S4(10) }, { S4(12), S4(14), S4(12), S4(14) },
#undef S4
};

#if defined(KX_F512)
static const uint8_t K4Z_SC[4][64] = { /* word j of 128-bit lane l: scale byte b(k, l), zero */
#define Z4(a) a, 0x80, a, 0x80, a, 0x80, a, 0x80, a, 0x80, a, 0x80, a, 0x80, a, 0x80
#define ZL(a, b) Z4(a), Z4(a), Z4(b), Z4(b)
    { ZL(0, 2) }, { ZL(1, 3) }, { ZL(4, 6) }, { ZL(5, 7) },
#undef ZL
#undef Z4
};
/* word j of 128-bit lane l for pair vector j (sub-blocks 4j..4j + 3): lanes 0, 1 [s(4j) x4,
 * s(4j + 1) x4], lanes 2, 3 [s(4j + 2) x4, s(4j + 3) x4]: the partners of vpackssdw(d(2j),
 * d(2j + 1)) where d(k) = vpdpbusd(z[k], az[k]) */
static const uint8_t K4Z_SCP[2][64] = {
#define Z2(a) a, 0x80, a, 0x80, a, 0x80, a, 0x80
#define ZP(a) Z2(a), Z2(a + 1), Z2(a), Z2(a + 1), Z2(a + 2), Z2(a + 3), Z2(a + 2), Z2(a + 3)
    { ZP(0) }, { ZP(4) },
#undef ZP
#undef Z2
};
KINLINE __m512i ld512(const void *p) { return _mm512_loadu_si512(p); }
/* four 16-byte loads, one per 128-bit lane */
KINLINE __m512i ld4x128(const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, const uint8_t *p3) {
    return _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(ld128(p0)), ld128(p1), 1),
                                                 ld128(p2), 2), ld128(p3), 3);
}
/* the 8 sub-block scales (bytes 0..7 of sm, kq_scales_v) as the zmm kernels' i16 words */
KINLINE void kq_sc_z(__m128i sm, __m512i sc[4]) {
    const __m512i sb = _mm512_broadcast_i32x4(sm);
    KUNROLL
    for (int k = 0; k < 4; k++) sc[k] = _mm512_shuffle_epi8(sb, ld512(K4Z_SC[k]));
}
/* the 256 activations of a super-block (qs at q) arranged for the zmm K-quant kernels: az[k] =
 * [sub-block s | sub-block s + 2], s = (k & 1) + 4 (k >> 1), the partners of a zmm of codes */
KINLINE void kq_act_z(const uint8_t *q, __m512i az[4]) {
    KUNROLL
    for (int k = 0; k < 4; k++) {
        const int s = (k & 1) + 4 * (k >> 1);
        az[k] = _mm512_inserti64x4(_mm512_castsi256_si512(ld256(q + 32 * s)), ld256(q + 32 * s + 64), 1);
    }
}
/* a Q8_K block's (bs(2k), bs(2k+1)) i16 pairs, bs(j) = sub-block j's 32 activations summed,
 * for the min terms (madd with q4k_mins_transpose's minsk[k]); da its scale */
KINLINE void q4k_bsw(const uint8_t *a, int32_t bsw[4], float *da) {
    *da = rdf(a);
    const __m256i b32 = _mm256_madd_epi16(ld256(a + 260), _mm256_set1_epi16(1));
    const __m256i p16 = _mm256_packs_epi32(b32, b32);
    bsw[0] = _mm256_extract_epi32(p16, 0);
    bsw[1] = _mm256_extract_epi32(p16, 1);
    bsw[2] = _mm256_extract_epi32(p16, 4);
    bsw[3] = _mm256_extract_epi32(p16, 5);
}
/* one Q4_K row's super-block at w (scales at w + 4, codes at w + 16): codes z[0..3] (low, high
 * nibbles of the two 64-byte loads: the partners of kq_act_z's az[k]), the scale and min bytes
 * (*sm, kq_scales_v: the caller forms its scale words), the mins as i16 (*mrow) */
KINLINE void q4k_row_z(const uint8_t *w, __m512i z[4], __m128i *sm, __m128i *mrow) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    *sm = kq_scales_v(w + 4);
    *mrow = _mm_cvtepu8_epi16(_mm_srli_si128(*sm, 8));
    const __m512i q0 = ld512(w + 16), q1 = ld512(w + 80);
    z[0] = _mm512_and_si512(q0, m4), z[1] = _mm512_and_si512(_mm512_srli_epi16(q0, 4), m4);
    z[2] = _mm512_and_si512(q1, m4), z[3] = _mm512_and_si512(_mm512_srli_epi16(q1, 4), m4);
}
#endif

#if defined(KX_F512)
/* dot_q5_K_ggml's integer part in zmm (z = 1), the same 8 i32 lanes: a zmm holds chunks k, k + 1
 * (one 64-byte load of qs; the 32 qh bytes in both halves, bits 2k / 2k + 2 and 2k + 1 / 2k + 3
 * moved to bit 4 by vpsllvw), the activations arranged by kq_act_z, scale words by kq_sc_z;
 * the halves' lanes added at the end. The same float steps after, so the same bits. */
static const uint16_t Q5Z_SH[2][32] = { /* vpsllvw counts: qh bit b of half h to bit 4 */
#define H16(a) a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a
    { H16(4), H16(2) }, { H16(3), H16(1) },
#undef H16
};
/* a Q5_K super-block's 256 five-bit codes at w as 4 zmm, the partners of kq_act_z's az[k] */
KINLINE void q5k_codes_z(const uint8_t *restrict w, __m512i z[4]) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10);
    const __m512i shl = ld512(Q5Z_SH[0]), shh = ld512(Q5Z_SH[1]);
    const __m512i qh = _mm512_broadcast_i64x4(ld256(w + 16));
    const __m512i qh2 = _mm512_srli_epi16(qh, 4); /* chunks 2, 3: bits 4..7 as 0..3 */
    const __m512i q0 = ld512(w + 48), q1 = ld512(w + 112);
    z[0] = _mm512_or_si512(_mm512_and_si512(q0, m4), _mm512_and_si512(_mm512_sllv_epi16(qh, shl), m10));
    z[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(q0, 4), m4), _mm512_and_si512(_mm512_sllv_epi16(qh, shh), m10));
    z[2] = _mm512_or_si512(_mm512_and_si512(q1, m4), _mm512_and_si512(_mm512_sllv_epi16(qh2, shl), m10));
    z[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(q1, 4), m4), _mm512_and_si512(_mm512_sllv_epi16(qh2, shh), m10));
}
/* the 8 i32 lanes of codes z times arranged activations az with scale words sc */
KINLINE __m256i q5k_lanes_z(const __m512i z[4], const __m512i az[4], const __m512i sc[4]) {
    __m512i v = _mm512_madd_epi16(_mm512_maddubs_epi16(z[0], az[0]), sc[0]);
    KUNROLL
    for (int k = 1; k < 4; k++) v = _mm512_dpwssd_epi32(v, _mm512_maddubs_epi16(z[k], az[k]), sc[k]);
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}
KINLINE void q5k_sumi_z(const uint8_t *restrict w, __m128i sm, const uint8_t *restrict a0, size_t xrb,
                        const int T, __m256i *sumi) {
    __m512i sc[4], z[4];
    kq_sc_z(sm, sc);
    q5k_codes_z(w, z);
    KUNROLL
    for (int t = 0; t < T; t++) {
        __m512i az[4];
        kq_act_z(a0 + t * xrb, az);
        sumi[t] = q5k_lanes_z(z, az, sc);
    }
}
#endif

/* Q5_K in ggml_vec_dot_q5_K_q8_K's (AVX2) float order, bit-exact with it: scale term in 8
 * f32 lanes, acc = fma(da*dw, sumi, acc); min term a scalar chain summs = fma(-(da*dmin),
 * imin, summs) over super-blocks (GCC contracts ggml's summs += dmin * i); y = hsum(acc) +
 * summs. */
KINLINE void dot_q5_K_ggml(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb,
                           int64_t n, const int T, float *restrict out, const int z) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    const __m128i dup = _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
    __m256 acc[KMAXT];
    __m128 summs[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) { acc[t] = _mm256_setzero_ps(); summs[t] = _mm_setzero_ps(); }
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++, w += 176) {
        const __m128i sm = kq_scales_v(w + 4);
        const float dw = h2f(w), dmw = h2f(w + 2);
        const __m256i sdup = _mm256_cvtepu8_epi16(_mm_unpacklo_epi64(sm, sm));
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(sm, dup));
        const uint8_t *qs = w + 48;
        __m256i qh = ld256(w + 16);
        __m256i sumi[KMAXT];
#if defined(KX_F512)
        if (z) q5k_sumi_z(w, sm, x + i * 292 + 4, xrb, T, sumi);
#else
        (void)z;
#endif
        KUNROLL
        for (int t = 0; t < T && !z; t++) sumi[t] = _mm256_setzero_si256();
        KUNROLL
        for (int k = 0; k < 4 && !z; k++) {
            const __m256i q = ld256(qs + 32 * k);
            __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            lo = _mm256_add_epi8(lo, _mm256_slli_epi16(_mm256_and_si256(qh, one), 4));
            hi = _mm256_add_epi8(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 1), one), 4));
            qh = _mm256_srli_epi16(qh, 2);
            const __m256i s_lo = _mm256_shuffle_epi8(sdup, ld256(K4_SEL[2 * k]));
            const __m256i s_hi = _mm256_shuffle_epi8(sdup, ld256(K4_SEL[2 * k + 1]));
            KUNROLL
            for (int t = 0; t < T; t++) {
                const uint8_t *a = x + t * xrb + i * 292 + 4 + 64 * k;
                const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, ld256(a)), s_lo);
                const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, ld256(a + 32)), s_hi);
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p_lo, p_hi));
            }
        }
        KUNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *a = x + t * xrb + i * 292;
            const float da = rdf(a);
            /* imin summed and converted in the vector unit (lane 0: (float)imin, as a scalar
             * conversion gives), no round trip through a general register */
            const __m256i mv = _mm256_madd_epi16(ld256(a + 260), mins);
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(mv), _mm256_extracti128_si256(mv, 1));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(da * dw), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            summs[t] = _mm_fmadd_ss(_mm_set1_ps(-(da * dmw)), _mm_cvtepi32_ps(s4), summs[t]);
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = hsum_ps(acc[t]) + _mm_cvtss_f32(summs[t]);
}
KINLINE void dot_q5_K(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n,
                      const int T, float *restrict out) { dot_q5_K_ggml(w, x, xrb, n, T, out, 0); }
#if defined(KX_F512)
KINLINE void dot_q5_K_z(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n,
                        const int T, float *restrict out) { dot_q5_K_ggml(w, x, xrb, n, T, out, 1); }
/* kq_scales_v on four rows at once, one per 128-bit lane (its shuffles and masks act per lane) */
KINLINE __m512i kq_scales_z4(__m512i v) {
    const __m512i a = _mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11)));
    const __m512i b = _mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(_mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7)));
    const __m512i lo = _mm512_and_si512(a, _mm512_broadcast_i32x4(_mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)));
    const __m512i m47 = _mm512_and_si512(_mm512_srli_epi16(a, 4), _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
    const __m512i hi = _mm512_srli_epi16(_mm512_and_si512(b, _mm512_set1_epi8((char)0xc0)), 2);
    return _mm512_or_si512(_mm512_or_si512(lo, m47), hi);
}
/* decode (one token), four rows (w .. w + 3 wrb) per pass: dot_q5_K_ggml's float steps per row
 * (acc lanes = fma(da * dw, sumi, acc), the min chain summs = fma(-(da * dmin), imin, summs)),
 * with the token's activations arranged once per super-block for the four, the rows' scale
 * bytes decoded together (kq_scales_z4), the four imin sums by one vphaddd tree and the four
 * min chains as the lanes of one vector (each lane the scalar fma of its row) */
KINLINE void dot4_q5_K_z1(const uint8_t *restrict w, size_t wrb, const uint8_t *restrict x, int64_t n, float *restrict out,
                          const char *pf) {
    const __m128i dup = _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
    const __m256i dsel = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    __m256 acc[4];
    KUNROLL
    for (int r = 0; r < 4; r++) acc[r] = _mm256_setzero_ps();
    __m128 summs = _mm_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++, w += 176) {
        /* the four rows' share of the stream pf .. (contiguous rows: 4 x 176 bytes per step) */
        for (int j = 0; j < 4 * 176; j += 64) _mm_prefetch(pf + (size_t)i * 4 * 176 + j, KX_PF_HINT);
        _mm_prefetch(pf + (size_t)i * 4 * 176 + 4 * 176 - 1, KX_PF_HINT);
        const uint8_t *a = x + i * 292;
        __m512i az[4];
        kq_act_z(a + 4, az);
        const __m256i bs = ld256(a + 260);
        /* [d0 d1 d2 d3 | dmin0 .. dmin3] * da */
        const __m128i dh = _mm_setr_epi32((int)quant_rd32(w), (int)quant_rd32(w + wrb), (int)quant_rd32(w + 2 * wrb),
                                          (int)quant_rd32(w + 3 * wrb));
        const __m256 dd = _mm256_mul_ps(_mm256_permutevar8x32_ps(_mm256_cvtph_ps(dh), dsel), _mm256_set1_ps(rdf(a)));
        const __m512i S = kq_scales_z4(ld4x128(w + 4, w + wrb + 4, w + 2 * wrb + 4, w + 3 * wrb + 4));
        __m256i mv[4];
        KUNROLL
        for (int r = 0; r < 4; r++) {
            /* row r's lane of S (vpermd: no immediate, so builds that keep the loop compile) */
            const __m128i sm = _mm512_castsi512_si128(_mm512_permutexvar_epi32(
                _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3), _mm512_set1_epi32(4 * r)), S));
            __m512i sc[4], z[4];
            kq_sc_z(sm, sc);
            q5k_codes_z(w + (size_t)r * wrb, z);
            const __m256i sumi = q5k_lanes_z(z, az, sc);
            mv[r] = _mm256_madd_epi16(bs, _mm256_cvtepu8_epi16(_mm_shuffle_epi8(sm, dup)));
            acc[r] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(dd, _mm256_set1_epi32(r)), _mm256_cvtepi32_ps(sumi), acc[r]);
        }
        /* per 128-bit half: [row 0, row 1, row 2, row 3] partial sums; the halves added */
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(mv[0], mv[1]), _mm256_hadd_epi32(mv[2], mv[3]));
        const __m128i imin = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        const __m128 ndm = _mm_xor_ps(_mm256_extractf128_ps(dd, 1), _mm_set1_ps(-0.0f));
        summs = _mm_fmadd_ps(ndm, _mm_cvtepi32_ps(imin), summs);
    }
    float sm4[4];
    _mm_storeu_ps(sm4, summs);
    KUNROLL
    for (int r = 0; r < 4; r++) out[r] = hsum_ps(acc[r]) + sm4[r];
}
#endif

/* byte selectors: low 128 lane -> i16 element 2k, high lane -> element 2k+1 (k = 0..3) */
static const uint8_t Q6_SEL[4][32] = {
#define S2(a) a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1
    { S2(0), S2(2) }, { S2(4), S2(6) }, { S2(8), S2(10) }, { S2(12), S2(14) },
#undef S2
};

/* the 6-bit codes of half c (128 elements) of a Q6_K super-block w as 4 x 32 bytes: high bit
 * pairs moved straight to bits 4-5 of each byte (one shift each, none for pair 2): vector
 * shifts are the scarce port on Zen 1, as multiplies are */
KINLINE void q6_unpack(const uint8_t *restrict w, int c, __m256i m4, __m256i m30, __m256i q[4]) {
    const uint8_t *ql = w + 64 * c, *qhp = w + 128 + 32 * c;
    const __m256i l0 = ld256(ql), l1 = ld256(ql + 32), h = ld256(qhp);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m30));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
}
/* Q6_K x Q8_K: codes 0..63 (stored q + 32) as u8, per 16-element group int8 scale via
 * vpmaddwd, minus 32 * sum_g scale[g]*bsums[g]. Chunk j (32 elements, groups 2j, 2j+1). */
KINLINE void dot_q6_K_ymm(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n,
                          const int T, float *restrict out) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    __m256 acc[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++, w += 210) {
        KPREFETCH(w, 210);
        const float dw = h2f(w + 208);
        const __m256i sc16 = _mm256_cvtepi8_epi16(ld128(w + 192));         /* 16 x i16 */
        /* per chunk j: low 128 = scale[2j] x 8, high 128 = scale[2j+1] x 8, picked from
         * scales 0..7 (or 8..15) in both halves: sign-extended from a duplicated 64-bit load
         * (vperm2i128 of sc16 is 8 uops on Zen 1) */
        const __m256i sc_lo = _mm256_cvtepi8_epi16(ld64dup(w + 192));
        const __m256i sc_hi = _mm256_cvtepi8_epi16(ld64dup(w + 200));
        __m256i sumi[KMAXT];
        KUNROLL
        for (int t = 0; t < T; t++) sumi[t] = _mm256_setzero_si256();
        KUNROLL
        for (int c = 0; c < 2; c++) {
            __m256i q[4];
            q6_unpack(w, c, m4, m30, q);
            KUNROLL
            for (int tq = 0; tq < 4; tq++) {
                const int j = 4 * c + tq; /* chunk: groups 2j, 2j+1 */
                const __m256i src = j < 4 ? sc_lo : sc_hi;
                const __m256i sel = ld256(Q6_SEL[j & 3]);
                const __m256i scv = _mm256_shuffle_epi8(src, sel);
                KUNROLL
                for (int t = 0; t < T; t++) {
                    const uint8_t *a = x + t * xrb + i * 292 + 4 + 128 * c + 32 * tq;
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[tq], ld256(a)), scv));
                }
            }
        }
        KUNROLL
        for (int t = 0; t < T; t++) {
            const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(ld256(x + t * xrb + i * 292 + 260), sc16), 5);
            sumi[t] = _mm256_sub_epi32(sumi[t], corr);
        }
        kq_acc_t(acc, sumi, x, xrb, i, dw, T);
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = hsum_ps(acc[t]);
}

/* Decode (one token) has its own Q6_K loop: inside DEF_MM's token-group switch GCC keeps
 * dot_q6_K_ymm's accumulator on the stack (a store-forwarding round trip on every FMA) and
 * re-materializes its constants per row, which cost ~8% on rows of 6 super-blocks (n_in
 * 1536: the LM head, attn_v). Lanes and float order are dot_q6_K_ymm's with T = 1.
 * Measured on the Zen 1 host and not kept: two rows per pass (shares the activation loads,
 * but two weight streams: LM head from DRAM 8.2 vs 8.8 GB/s), the q0/q1 high bits by a
 * vpshufb table (one op fewer, slower: vpshufb costs more than shift + and there), the scale
 * vectors by vpshufd from a pre-shuffled pair vector, shifts as vpmullw/vpmulhuw, and other
 * prefetch distances or hints (2-8 KiB, T1, NTA: within noise or slower). The loop is bound
 * by its ~85 vector ops per super-block (unpacking ~35 of them), not by the multiplies. */
KINLINE __m256i q6_sb1(const uint8_t *restrict w, const uint8_t *restrict a) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    const __m256i sc_lo = _mm256_cvtepi8_epi16(ld64dup(w + 192));
    const __m256i sc_hi = _mm256_cvtepi8_epi16(ld64dup(w + 200));
    __m256i sumi = _mm256_setzero_si256();
    KUNROLL
    for (int c = 0; c < 2; c++) {
        __m256i q[4];
        q6_unpack(w, c, m4, m30, q);
        KUNROLL
        for (int tq = 0; tq < 4; tq++) {
            const int j = 4 * c + tq;
            const __m256i scv = _mm256_shuffle_epi8(j < 4 ? sc_lo : sc_hi, ld256(Q6_SEL[j & 3]));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(q[tq], ld256(a + 4 + 32 * j)), scv));
        }
    }
    const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(ld256(a + 260), _mm256_cvtepi8_epi16(ld128(w + 192))), 5);
    return _mm256_sub_epi32(sumi, corr);
}

#if defined(KX_F512)
/* q6_sb1 in zmm, the same 8 i32 lanes: a zmm holds two consecutive chunks (j, j + 1), whose
 * codes are one 64-byte load of ql (low or high nibbles) and the 32 qh bytes in both halves
 * shifted per half (vpsllvw / vpsrlvw), and whose activations are one contiguous 64-byte load;
 * scale words by vpermw (128-bit lane l of pair m: group 4m + l). Lane L of the two halves is
 * added at the end: the same exact integer per lane as q6_sb1, so the same float steps after.
 * About half of q6_sb1's vector ops per super-block (the ymm unpacking dominates there). */
static const uint16_t Q6Z_SH[2][32] = { /* shift counts per 16-bit word: [4 x16 | 2 x16], [0 | 2] */
    { 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2 },
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2 },
};
static const uint16_t Q6Z_SC[4][32] = { /* vpermw indices: word of lane l of pair m = group 4m + l */
#define L8(g) g, g, g, g, g, g, g, g
    { L8(0), L8(1), L8(2), L8(3) }, { L8(4), L8(5), L8(6), L8(7) },
    { L8(8), L8(9), L8(10), L8(11) }, { L8(12), L8(13), L8(14), L8(15) },
#undef L8
};
/* the codes' dots of one super-block for T tokens: v[t] lanes 0-7 and 8-15 are the two halves
 * of token t's 8 lanes (q6_sb1's integers before the halves are added and the bsums correction
 * subtracted); the codes and scale words are formed once for all T; a[t] = token t's Q8_K block */
KINLINE void q6_dots_z(const uint8_t *restrict w, const uint8_t *const a[KMAXT], const int T, __m512i v[KMAXT]) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    const __m512i shl = _mm512_loadu_si512(Q6Z_SH[0]), shr = _mm512_loadu_si512(Q6Z_SH[1]);
    const __m512i scz = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(ld128(w + 192)));
    KUNROLL
    for (int t = 0; t < T; t++) v[t] = _mm512_setzero_si512();
    KUNROLL
    for (int c = 0; c < 2; c++) {
        const __m512i ql = _mm512_loadu_si512(w + 64 * c);
        const __m512i qh = _mm512_broadcast_i64x4(ld256(w + 128 + 32 * c));
        const __m512i qa = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_and_si512(_mm512_sllv_epi16(qh, shl), m30));
        const __m512i qb = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                           _mm512_and_si512(_mm512_srlv_epi16(qh, shr), m30));
        const __m512i sa = _mm512_permutexvar_epi16(_mm512_loadu_si512(Q6Z_SC[2 * c]), scz);
        const __m512i sb = _mm512_permutexvar_epi16(_mm512_loadu_si512(Q6Z_SC[2 * c + 1]), scz);
        KUNROLL
        for (int t = 0; t < T; t++) {
            v[t] = _mm512_dpwssd_epi32(v[t], _mm512_maddubs_epi16(qa, _mm512_loadu_si512(a[t] + 4 + 128 * c)), sa);
            v[t] = _mm512_dpwssd_epi32(v[t], _mm512_maddubs_epi16(qb, _mm512_loadu_si512(a[t] + 4 + 128 * c + 64)), sb);
        }
    }
}
/* one token's 8 i32 lanes from its dots v (q6_dots_z) and its block a: the halves added, the
 * bsums correction (32 * sum_g scale[g] * bsums[g]) subtracted; sc16 = the 16 scales as i16 */
KINLINE __m256i q6_fin1_z(__m512i v, const uint8_t *restrict a, __m256i sc16) {
    const __m256i s = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    return _mm256_sub_epi32(s, _mm256_slli_epi32(_mm256_madd_epi16(ld256(a + 260), sc16), 5));
}
/* the T tokens' 8 i32 lanes of one super-block (sumi[t], as q6_sb1 gives for token t) */
KINLINE void q6_sbt_z(const uint8_t *restrict w, const uint8_t *const a[KMAXT], const int T, __m256i sumi[KMAXT]) {
    const __m256i sc16 = _mm256_cvtepi8_epi16(ld128(w + 192));
    __m512i v[KMAXT];
    q6_dots_z(w, a, T, v);
    KUNROLL
    for (int t = 0; t < T; t++) sumi[t] = q6_fin1_z(v[t], a[t], sc16);
}
KINLINE __m256i q6_sb1_z(const uint8_t *restrict w, const uint8_t *restrict a) {
    const uint8_t *at[KMAXT] = { a };
    __m256i s[KMAXT];
    q6_sbt_z(w, at, 1, s);
    return s[0];
}
/* dot_q6_K_ymm's lanes and float steps for T tokens with q6_sbt_z's integer part (prompt
 * chunks, batched decode). Tokens go in pairs through one zmm after the codes' dots: lanes 0-7
 * token 2p's 8 lanes, 8-15 token 2p + 1's, so the halves' sums, the bsums correction and the
 * float step (each lane's own fma, as kq_acc_t's) take one op per pair instead of one per
 * token; an odd last token goes as before. */
KINLINE void dot_q6_K_zt(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n,
                         const int T, float *restrict out) {
    enum { NP = KMAXT / 2 };
    const int P = T / 2, odd = T & 1;
    __m512 acc2[NP];
    __m256 acc1 = _mm256_setzero_ps();
    KUNROLL
    for (int q = 0; q < P; q++) acc2[q] = _mm512_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++, w += 210) {
        KPREFETCH(w, 210);
        const float dw = h2f(w + 208);
        const uint8_t *a[KMAXT];
        KUNROLL
        for (int t = 0; t < T; t++) a[t] = x + t * xrb + i * 292;
        const __m256i sc16 = _mm256_cvtepi8_epi16(ld128(w + 192));
        const __m512i sc2 = _mm512_broadcast_i64x4(sc16);
        __m512i v[KMAXT];
        q6_dots_z(w, a, T, v);
        KUNROLL
        for (int q = 0; q < P; q++) {
            const __m512i v0 = v[2 * q], v1 = v[2 * q + 1];
            const __m512i s = _mm512_add_epi32(_mm512_shuffle_i32x4(v0, v1, _MM_SHUFFLE(1, 0, 1, 0)),
                                               _mm512_shuffle_i32x4(v0, v1, _MM_SHUFFLE(3, 2, 3, 2)));
            const __m512i bs = _mm512_inserti64x4(_mm512_castsi256_si512(ld256(a[2 * q] + 260)), ld256(a[2 * q + 1] + 260), 1);
            const __m512i sumi = _mm512_sub_epi32(s, _mm512_slli_epi32(_mm512_madd_epi16(bs, sc2), 5));
            const __m512 dd = _mm512_insertf32x8(_mm512_set1_ps(rdf(a[2 * q]) * dw), _mm256_set1_ps(rdf(a[2 * q + 1]) * dw), 1);
            acc2[q] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(sumi), acc2[q]);
        }
        if (odd)
            acc1 = _mm256_fmadd_ps(_mm256_set1_ps(rdf(a[T - 1]) * dw), _mm256_cvtepi32_ps(q6_fin1_z(v[T - 1], a[T - 1], sc16)), acc1);
    }
    KUNROLL
    for (int q = 0; q < P; q++) {
        out[2 * q] = hsum_ps(_mm512_castps512_ps256(acc2[q]));
        out[2 * q + 1] = hsum_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc2[q]), 1)));
    }
    if (odd) out[T - 1] = hsum_ps(acc1);
}
#endif

KINLINE float dot_q6_K_1(const uint8_t *restrict w, const uint8_t *restrict x, int64_t n, const int z) {
    __m256 acc = _mm256_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++, w += 210, x += 292) {
        KPREFETCH(w, 210);
#if defined(KX_F512)
        const __m256i sb = z ? q6_sb1_z(w, x) : q6_sb1(w, x);
#else
        const __m256i sb = ((void)z, q6_sb1(w, x));
#endif
        acc = _mm256_fmadd_ps(_mm256_set1_ps(rdf(x) * h2f(w + 208)), _mm256_cvtepi32_ps(sb), acc);
    }
    return hsum_ps(acc);
}

/* The 16 6-bit signed scales of a Q3_K block (quant-formats.md 4.2; group g: low nibble of
 * s[g] for g < 8, else the high nibble of s[g - 8], and bits 2 (g / 4) of s[8 + g % 4] as its
 * bits 4-5, minus 32) as i8, four groups per 32-bit word (ggml's kmask steps): a handful of
 * integer ops for all 16, where one group at a time took ~6 each */
KINLINE __m128i q3k_scales16(const uint8_t *s) {
    const uint32_t a0 = quant_rd32(s), a1 = quant_rd32(s + 4), a2 = quant_rd32(s + 8);
    const uint32_t m2 = 0x03030303u, m4 = 0x0f0f0f0fu;
    const __m128i u = _mm_setr_epi32((int)((a0 & m4) | (a2 & m2) << 4), (int)((a1 & m4) | (a2 >> 2 & m2) << 4),
                                     (int)((a0 >> 4 & m4) | (a2 >> 4 & m2) << 4), (int)((a1 >> 4 & m4) | (a2 >> 6 & m2) << 4));
    return _mm_sub_epi8(u, _mm_set1_epi8(32));
}

/* Q3_K / Q2_K x Q8_K: 2-bit codes of chunk jj (32 elements, groups 2jj and 2jj+1) from
 * qs[32c..] >> 2j with c = jj/4, j = jj%4; Q3_K adds 4*h (h: bit jj of hmask) so codes are
 * u = v + 4 in 0..7, and the -4 comes back through the bsums; per-16 scales via vpmaddwd. */
KINLINE __m256i k16_scale(__m256i lo8, __m256i hi8, int jj) {
    return _mm256_shuffle_epi8(jj < 4 ? lo8 : hi8, ld256(Q6_SEL[jj & 3]));
}

KINLINE void dot_q23_K(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n,
                       const int T, float *restrict out, const int q3) {
    const size_t wb = q3 ? 110 : 84;
    const __m256i m2 = _mm256_set1_epi8(0x03), one = _mm256_set1_epi8(1);
    __m256 acc[KMAXT], accm[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++, w += wb) {
        __m128i sc;
        __m256i mins = _mm256_setzero_si256();
        float dw, dmw = 0;
        const uint8_t *qs;
        if (q3) {
            sc = q3k_scales16(w + 96);
            dw = h2f(w + 108);
            qs = w + 32;
        } else {
            const __m128i s8 = ld128(w);
            sc = _mm_and_si128(s8, _mm_set1_epi8(0x0f));
            mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(0x0f)));
            dw = h2f(w + 80);
            dmw = h2f(w + 82);
            qs = w + 16;
        }
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc);
        const __m256i sc_lo = _mm256_permute2x128_si256(sc16, sc16, 0x00);
        const __m256i sc_hi = _mm256_permute2x128_si256(sc16, sc16, 0x11);
        __m256i hm = _mm256_setzero_si256();
        if (q3) hm = ld256(w);
        __m256i sumi[KMAXT];
        KUNROLL
        for (int t = 0; t < T; t++) sumi[t] = _mm256_setzero_si256();
        KUNROLL
        for (int c = 0; c < 2; c++) {
            __m256i q = ld256(qs + 32 * c);
            KUNROLL
            for (int j = 0; j < 4; j++) {
                const int jj = 4 * c + j;
                const __m256i u = _mm256_and_si256(q, m2);
                /* Q3_K as ggml_vec_dot_q3_K_q8_K (AVX2): the -4 of a clear high bit subtracted
                 * in each i16 lane (4 * (1 - h) times the activation), so lanes match its own */
                __m256i nh4 = _mm256_setzero_si256();
                if (q3) {
                    nh4 = _mm256_slli_epi16(_mm256_andnot_si256(hm, one), 2);
                    hm = _mm256_srli_epi16(hm, 1);
                }
                q = _mm256_srli_epi16(q, 2);
                const __m256i scv = k16_scale(sc_lo, sc_hi, jj);
                KUNROLL
                for (int t = 0; t < T; t++) {
                    const __m256i av = ld256(x + t * xrb + i * 292 + 4 + 32 * jj);
                    __m256i p16 = _mm256_maddubs_epi16(u, av);
                    if (q3) p16 = _mm256_sub_epi16(p16, _mm256_maddubs_epi16(nh4, av));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p16, scv));
                }
            }
        }
        KUNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *a = x + t * xrb + i * 292;
            const float da = rdf(a);
            const __m256i bs = ld256(a + 260);
            __m256i s = sumi[t];
            /* Q2_K as ggml_vec_dot_q2_K_q8_K (AVX2): one chain, min term first, dmin negated */
            if (!q3) acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(-(da * dmw)), _mm256_cvtepi32_ps(_mm256_madd_epi16(bs, mins)), acc[t]);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(da * dw), _mm256_cvtepi32_ps(s), acc[t]);
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = hsum_ps(_mm256_sub_ps(acc[t], accm[t]));
}
KINLINE void dot_q2_K(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n,
                      const int T, float *restrict out) { dot_q23_K(w, x, xrb, n, T, out, 0); }
KINLINE void dot_q3_K(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n,
                      const int T, float *restrict out) { dot_q23_K(w, x, xrb, n, T, out, 1); }

/* IQ4_XS x Q8_K: per 32-element sub-block b, code-book values (vpshufb) as s8, sign trick,
 * vpmaddubsw (|v| <= 127: pairs < 2^15) then vpmaddwd by the 6-bit signed scale ls - 32.
 * iq4_xs_sb: super-block w (136 bytes) x activation super-block i of T tokens -> sumi[t],
 * ggml's 8 i32 lanes (exact integers). */
KINLINE void iq4_xs_sb(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t i,
                       const int T, __m256i *sumi) {
    const __m128i k = _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
    const __m256i kv = _mm256_set_m128i(k, k);
    const uint16_t sh = quant_rd16(w + 2);
    KUNROLL
    for (int t = 0; t < T; t++) sumi[t] = _mm256_setzero_si256();
    KUNROLL
    for (int b = 0; b < 8; b++) {
        const int ls = ((w[4 + b / 2] >> 4 * (b % 2)) & 0xf) | (((sh >> 2 * b) & 3) << 4);
        const __m256i v = _mm256_shuffle_epi8(kv, nib32(w + 8 + 16 * b));
        const __m256i uv = _mm256_sign_epi8(v, v), scv = _mm256_set1_epi16((short)(ls - 32));
        KUNROLL
        for (int t = 0; t < T; t++) {
            const __m256i a = ld256(x + t * xrb + i * 292 + 4 + 32 * b);
            sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(uv, _mm256_sign_epi8(a, v)), scv));
        }
    }
}
KINLINE void dot_iq4_xs(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n,
                        const int T, float *restrict out) {
    __m256 acc[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++, w += 136) {
        const float dw = h2f(w);
        __m256i sumi[KMAXT];
        iq4_xs_sb(w, x, xrb, i, T, sumi);
        kq_acc_t(acc, sumi, x, xrb, i, dw, T);
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = hsum_ps(acc[t]);
}

KINLINE void dot_q6_K_multi(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n,
                            const int T, float *restrict out) { dot_q6_K_ymm(w, x, xrb, n, T, out); }

/* ==== ggml's repacked kernels' float order: tiles of 8 rows ====
 * llama.cpp's AVX2 build repacks Q4_0, IQ4_NL and Q4_K weights into 8-row interleaved blocks
 * (ggml-cpu repack.cpp q4_0_8x8, iq4_nl_8x8, q4_K_8x8) and sums each row's exact integer
 * dot of a block (32) or part of a super-block before one f32 FMA per row:
 *   acc = fma((float)isum, dw * da, acc)        (Q4_K also accm = fma(imin, dmin * da, accm))
 * These tiles reproduce that bit for bit: each row's 8 i32 lanes are reduced across 8 rows
 * at once (tree8) into one vector of row sums. Q4_K: the decode kernel (gemv, also a batch's
 * last n % 4 tokens) adds per 256-element super-block, the 4-token gemm per 64-element pair
 * of sub-blocks (grp = 1); the min term per the same span. */
KINLINE __m256i tree8(const __m256i *p) { /* p[8] -> lane r = sum of the 8 lanes of p[r] */
    const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    /* [a.lo | b.lo] + [a.hi | b.hi], with inserts (vperm2i128 is slow on Zen 1) */
    return _mm256_add_epi32(_mm256_inserti128_si256(a, _mm256_castsi256_si128(b), 1),
                            _mm256_inserti128_si256(b, _mm256_extracti128_si256(a, 1), 0));
}
/* the f16 at byte off of each of 8 rows, as 8 f32 lanes */
KINLINE __m256 h8(const uint8_t *const *wr, size_t off) {
    return _mm256_cvtph_ps(_mm_setr_epi16((short)quant_rd16(wr[0] + off), (short)quant_rd16(wr[1] + off),
                                          (short)quant_rd16(wr[2] + off), (short)quant_rd16(wr[3] + off),
                                          (short)quant_rd16(wr[4] + off), (short)quant_rd16(wr[5] + off),
                                          (short)quant_rd16(wr[6] + off), (short)quant_rd16(wr[7] + off)));
}

/* the f16 pair (d, dmin) at byte off of each of 8 rows, as two vectors of 8 f32 lanes: one
 * 32-bit load per row instead of two 16-bit ones (h8 twice) */
KINLINE void h8x2(const uint8_t *const *wr, size_t off, __m256 *d, __m256 *dm) {
    const __m256i v = _mm256_setr_epi32((int)quant_rd32(wr[0] + off), (int)quant_rd32(wr[1] + off),
                                        (int)quant_rd32(wr[2] + off), (int)quant_rd32(wr[3] + off),
                                        (int)quant_rd32(wr[4] + off), (int)quant_rd32(wr[5] + off),
                                        (int)quant_rd32(wr[6] + off), (int)quant_rd32(wr[7] + off));
    /* per 128-bit lane [d d d d | dm dm dm dm], then the 64-bit quarters to [d0..7 | dm0..7] */
    const __m256i s = _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                                              0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
    const __m256i p = _mm256_permute4x64_epi64(s, 0xd8);
    *d = _mm256_cvtph_ps(_mm256_castsi256_si128(p));
    *dm = _mm256_cvtph_ps(_mm256_extracti128_si256(p, 1));
}

/* Q4_0 / IQ4_NL x Q8_0, 8 rows x T tokens: out[t] lane r = row r.
 * Integer part (exact, in any order): the 16 code bytes of row q and row q + 4 (q < 4) of a
 * block share one "quad" vector, one row per 128-bit lane, low nibbles and high nibbles in
 * two vectors; each is dotted with the block's activations a[0..15] / a[16..31] broadcast to
 * every 128-bit lane, so a row's block dot is the sum of its 4 i32 lanes, and red4x4 turns
 * the 4 quads into [rows 0..3 | rows 4..7] per block with no cross-lane step. Q4_0's codes go
 * in as the unsigned nibbles u = v + 8 and every row's dot starts from -8 * sum(a), so
 * sum(u * a) - 8 * sum(a) = sum(v * a) exactly. IQ4_NL keeps the sign trick (its values + 128
 * would saturate vpmaddubsw at 241 * 127 * 2).
 * Float part, as ggml's q4_0_8x8 gemv per block i in order: acc = fma((float)isum, dw * da,
 * acc), dw = the 8 rows' f16 scales, da the token's. */
KINLINE __m256i red4x4(__m256i a, __m256i b, __m256i c, __m256i d) { /* per 128-bit lane: [sum a, sum b, sum c, sum d] */
    const __m256i t0 = _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
    const __m256i t1 = _mm256_add_epi32(_mm256_unpacklo_epi32(c, d), _mm256_unpackhi_epi32(c, d));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(t0, t1), _mm256_unpackhi_epi64(t0, t1));
}
KINLINE __m128i iq4nl_book(void) {
    return _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
}
/* one block per step, 256-bit quads [row q | row q+4] (AVX-512 too: there KX_DOT_U8S8 is
 * vpdpbusd; a zmm form with two blocks per step measured slower on Zen 4, 19-20 vs 26 GB/s in
 * L3); pf (the next tile, contiguous rows, or NULL): its pf_total bytes prefetched in whole
 * lines spread over the blocks (the hardware prefetchers lose the 8 row streams of short rows:
 * ~7 GB/s from DRAM without) */
KINLINE void tile_b32(const uint8_t *const *wr, const uint8_t *restrict x, size_t xrb, int64_t n,
                      const int T, __m256 *out, const int iq, const uint8_t *pf, size_t pf_total) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), c8 = _mm256_set1_epi8(8);
    const __m256i book = _mm256_broadcastsi128_si256(iq4nl_book());
    __m256 acc[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    const int64_t nb = n / 32;
    const size_t pf_step = pf ? ((pf_total + (size_t)nb - 1) / (size_t)nb + 63) & ~(size_t)63 : 0;
    for (int64_t i = 0; i < nb; i++) {
        const size_t off = (size_t)i * 18;
        for (size_t j = 0; j < pf_step; j += 64) _mm_prefetch((const char *)pf + (size_t)i * pf_step + j, KX_PF_HINT);
        const __m256 dwv = h8(wr, off);
        __m256i lo[4], hi[4]; /* quad q: Q4_0 nibbles u, IQ4_NL code book values v */
        KUNROLL
        for (int q = 0; q < 4; q++) {
            const __m256i v = _mm256_set_m128i(ld128(wr[q + 4] + off + 2), ld128(wr[q] + off + 2));
            lo[q] = _mm256_and_si256(v, m4);
            hi[q] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if (iq) lo[q] = _mm256_shuffle_epi8(book, lo[q]), hi[q] = _mm256_shuffle_epi8(book, hi[q]);
        }
        KUNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *a = x + t * xrb + i * 34;
            const __m256i al = _mm256_broadcastsi128_si256(ld128(a + 2)), ah = _mm256_broadcastsi128_si256(ld128(a + 18));
            __m256i p[4];
            if (iq) {
                KUNROLL
                for (int q = 0; q < 4; q++) {
                    p[q] = _mm256_setzero_si256();
                    KX_DOT_U8S8(p[q], _mm256_sign_epi8(lo[q], lo[q]), _mm256_sign_epi8(al, lo[q]));
                    KX_DOT_U8S8(p[q], _mm256_sign_epi8(hi[q], hi[q]), _mm256_sign_epi8(ah, hi[q]));
                }
            } else {
                __m256i s = _mm256_setzero_si256();
                KX_DOT_U8S8(s, c8, al);
                KX_DOT_U8S8(s, c8, ah);
                const __m256i nv = _mm256_sub_epi32(_mm256_setzero_si256(), s);
                KUNROLL
                for (int q = 0; q < 4; q++) {
                    p[q] = nv;
                    KX_DOT_U8S8(p[q], lo[q], al);
                    KX_DOT_U8S8(p[q], hi[q], ah);
                }
            }
            const __m256 d = _mm256_mul_ps(dwv, _mm256_set1_ps(h2f(a)));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(red4x4(p[0], p[1], p[2], p[3])), d, acc[t]);
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = acc[t];
}

#if defined(KX_F512)
/* tile_b32 for Q4_0 with the integer part in zmm: the 16 code bytes of rows [0 | 4 | 1 | 5] and
 * [2 | 6 | 3 | 7] of a block in two vectors, one row per 128-bit lane, each dotted by vpdpbusd
 * with the activations broadcast to every lane (from the same -8 * sum(a) start), the 8 rows'
 * lane sums folded and put in row order by one vpermd. The same exact integers and the same
 * float step per block (acc = fma((float)isum, dw * da, acc)), so the same bits. IQ4_NL keeps
 * the ymm tile (its sign trick has no zmm vpsignb). */
KINLINE void tile_q4_0_z(const uint8_t *const *wr, const uint8_t *restrict x, size_t xrb, int64_t n,
                         const int T, __m256 *out, const uint8_t *pf, size_t pf_total) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), c8 = _mm512_set1_epi8(8);
    const __m512i perm = _mm512_setr_epi32(0, 8, 1, 9, 4, 12, 5, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    __m256 acc[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    const int64_t nb = n / 32;
    const size_t pf_step = pf ? ((pf_total + (size_t)nb - 1) / (size_t)nb + 63) & ~(size_t)63 : 0;
    for (int64_t i = 0; i < nb; i++) {
        const size_t off = (size_t)i * 18;
        for (size_t j = 0; j < pf_step; j += 64) _mm_prefetch((const char *)pf + (size_t)i * pf_step + j, KX_PF_HINT);
        const __m256 dwv = h8(wr, off);
        const __m512i z0 = ld4x128(wr[0] + off + 2, wr[4] + off + 2, wr[1] + off + 2, wr[5] + off + 2);
        const __m512i z1 = ld4x128(wr[2] + off + 2, wr[6] + off + 2, wr[3] + off + 2, wr[7] + off + 2);
        const __m512i lo0 = _mm512_and_si512(z0, m4), hi0 = _mm512_and_si512(_mm512_srli_epi16(z0, 4), m4);
        const __m512i lo1 = _mm512_and_si512(z1, m4), hi1 = _mm512_and_si512(_mm512_srli_epi16(z1, 4), m4);
        KUNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *a = x + t * xrb + i * 34;
            const __m512i al = _mm512_broadcast_i32x4(ld128(a + 2)), ah = _mm512_broadcast_i32x4(ld128(a + 18));
            const __m512i nv = _mm512_sub_epi32(_mm512_setzero_si512(),
                                                _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), c8, al), c8, ah));
            const __m512i p0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(nv, lo0, al), hi0, ah);
            const __m512i p1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(nv, lo1, al), hi1, ah);
            /* elements 0, 1 of each lane: the row sums of p0, p1; lanes hold rows (0, 2) (4, 6) (1, 3) (5, 7) */
            const __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi32(p0, p1), _mm512_unpackhi_epi32(p0, p1));
            const __m512i v = _mm512_add_epi32(u, _mm512_unpackhi_epi64(u, u)); /* elements 0, 1 of each lane */
            const __m256i rs = _mm512_castsi512_si256(_mm512_permutexvar_epi32(perm, v));
            const __m256 d = _mm256_mul_ps(dwv, _mm256_set1_ps(h2f(a)));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rs), d, acc[t]);
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = acc[t];
}
#endif

/* minsk[k] lane r = (m_r[2k], m_r[2k+1]) as two i16: a 4x8 transpose of the 8 rows' mins mrow[r] */
KINLINE void q4k_mins_transpose(const __m128i mrow[8], __m256i minsk[4]) {
    const __m256i R0 = _mm256_set_m128i(mrow[4], mrow[0]), R1 = _mm256_set_m128i(mrow[5], mrow[1]);
    const __m256i R2 = _mm256_set_m128i(mrow[6], mrow[2]), R3 = _mm256_set_m128i(mrow[7], mrow[3]);
    const __m256i t0 = _mm256_unpacklo_epi32(R0, R1), t1 = _mm256_unpacklo_epi32(R2, R3);
    const __m256i t2 = _mm256_unpackhi_epi32(R0, R1), t3 = _mm256_unpackhi_epi32(R2, R3);
    minsk[0] = _mm256_unpacklo_epi64(t0, t1);
    minsk[1] = _mm256_unpackhi_epi64(t0, t1);
    minsk[2] = _mm256_unpacklo_epi64(t2, t3);
    minsk[3] = _mm256_unpackhi_epi64(t2, t3);
}

/* Q4_K x Q8_K, 8 rows x T tokens (grp: 4-token gemm order). The 8 rows are contiguous in
 * memory: pf (the next tile, or NULL) is prefetched 1/nb per super-block, one stream, a few
 * lines per row. Every line needs its software prefetch on the Zen 1 host: without them the
 * DRAM matvec falls from ~7.3 to ~4 GB/s, with every other line ~3 GB/s. */
KINLINE void tile_q4_K(const uint8_t *const *wr, const uint8_t *restrict x, size_t xrb, int64_t n,
                       const int T, __m256 *out, const int grp, const uint8_t *pf, size_t pf_step) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc[KMAXT], accm[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++) {
        const size_t off = (size_t)i * 144;
        __m256 dwv, dmv;
        h8x2(wr, off, &dwv, &dmv);
        /* per token: (bs(2k), bs(2k+1)) i16 pairs, bs(j) = the 32 codes of sub-block j summed */
        __m256i bsp[KMAXT][4];
        __m256 dat[KMAXT];
        KUNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *a = x + t * xrb + i * 292;
            dat[t] = _mm256_set1_ps(rdf(a));
            const __m256i b16 = ld256(a + 260);                 /* 16 x i16 group sums */
            const __m256i b32 = _mm256_madd_epi16(b16, _mm256_set1_epi16(1)); /* bs(0..7), i32 */
            const __m256i p16 = _mm256_packs_epi32(b32, b32);   /* [bs0..3 bs0..3 | bs4..7 bs4..7] i16 */
            bsp[t][0] = _mm256_set1_epi32(_mm256_extract_epi32(p16, 0));
            bsp[t][1] = _mm256_set1_epi32(_mm256_extract_epi32(p16, 1));
            bsp[t][2] = _mm256_set1_epi32(_mm256_extract_epi32(p16, 4));
            bsp[t][3] = _mm256_set1_epi32(_mm256_extract_epi32(p16, 5));
        }
        /* P[k][t][r]: row r's i32 lanes for pair k (grp) or the whole super-block (k = 0) */
        __m256i P[4][KMAXT][8];
        __m128i mrow[8];
        KUNROLL
        for (int r = 0; r < 8; r++) {
            if (pf) {
                /* the next tile's share for this super-block (pf_step = 8 * 144 = 1152 bytes, 18
                 * lines for unpadded rows), 2 or 3 lines per row: spread over the rows instead of
                 * a burst of 18 at the top (which stalled demand loads on Zen 1: +3-5% here) */
                const char *q = (const char *)pf + (size_t)i * pf_step;
                _mm_prefetch(q + 128 * r, KX_PF_HINT);
                _mm_prefetch(q + 128 * r + 64, KX_PF_HINT);
                if (r < 2) _mm_prefetch(q + 1024 + 64 * r, KX_PF_HINT);
            }
            const __m128i sm = kq_scales_v(wr[r] + off + 4);
            const __m256i sdup = _mm256_cvtepu8_epi16(_mm_unpacklo_epi64(sm, sm));
            mrow[r] = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)); /* i32 k = (m[2k], m[2k+1]) */
            __m256i sum[KMAXT];
            if (!grp) {
                /* gemv: two pairs folded twice with vphaddw (|sum| <= 8 * 15 * 127 fits i16),
                 * one vpmaddwd by the 4 sub-block scales: 5 multiply-pipe ops per 128 codes */
                KUNROLL
                for (int k2 = 0; k2 < 2; k2++) {
                    const __m256i qa = ld256(wr[r] + off + 16 + 64 * k2), qb = ld256(wr[r] + off + 48 + 64 * k2);
                    const __m256i la = _mm256_and_si256(qa, m4), ha = _mm256_and_si256(_mm256_srli_epi16(qa, 4), m4);
                    const __m256i lb = _mm256_and_si256(qb, m4), hb = _mm256_and_si256(_mm256_srli_epi16(qb, 4), m4);
                    const __m256i sq = _mm256_shuffle_epi8(sdup, ld256(K4_QUAD[k2]));
                    KUNROLL
                    for (int t = 0; t < T; t++) {
                        const uint8_t *a = x + t * xrb + i * 292 + 4 + 128 * k2;
                        const __m256i h0 = _mm256_hadd_epi16(_mm256_maddubs_epi16(la, ld256(a)), _mm256_maddubs_epi16(ha, ld256(a + 32)));
                        const __m256i h1 = _mm256_hadd_epi16(_mm256_maddubs_epi16(lb, ld256(a + 64)), _mm256_maddubs_epi16(hb, ld256(a + 96)));
                        const __m256i p = _mm256_madd_epi16(_mm256_hadd_epi16(h0, h1), sq);
                        sum[t] = k2 == 0 ? p : _mm256_add_epi32(sum[t], p);
                    }
                }
                KUNROLL
                for (int t = 0; t < T; t++) {
                    /* tree8's hadd tree as the rows come (fewer live vectors, no spills) */
                    if (r & 1) P[1][t][r >> 1] = _mm256_hadd_epi32(P[0][t][r - 1], sum[t]);
                    else P[0][t][r] = sum[t];
                    if (r == 3) P[2][t][0] = _mm256_hadd_epi32(P[1][t][0], P[1][t][1]);
                    if (r == 7) P[2][t][1] = _mm256_hadd_epi32(P[1][t][2], P[1][t][3]);
                }
                continue;
            }
            KUNROLL
            for (int k = 0; k < 4; k++) {
                const __m256i q = ld256(wr[r] + off + 16 + 32 * k);
                const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                /* the two sub-blocks' i16 pair sums folded by vphaddw (|sum| <= 4 * 15 * 128 fits
                 * i16), then one vpmaddwd by [s(2k) x4, s(2k+1) x4]: the multiply pipe is Zen 1's
                 * bottleneck here. Only each row's total matters (tree8), not the lanes. */
                const __m256i sp = _mm256_shuffle_epi8(sdup, ld256(K4_PAIR[k]));
                KUNROLL
                for (int t = 0; t < T; t++) {
                    const uint8_t *a = x + t * xrb + i * 292 + 4 + 64 * k;
                    const __m256i p = _mm256_madd_epi16(_mm256_hadd_epi16(_mm256_maddubs_epi16(lo, ld256(a)),
                                                                          _mm256_maddubs_epi16(hi, ld256(a + 32))), sp);
                    if (grp) P[k][t][r] = p;
                    else sum[t] = k == 0 ? p : _mm256_add_epi32(sum[t], p);
                }
            }
            if (!grp) {
                KUNROLL
                for (int t = 0; t < T; t++) P[0][t][r] = sum[t];
            }
        }
        __m256i minsk[4];
        q4k_mins_transpose(mrow, minsk);
        KUNROLL
        for (int t = 0; t < T; t++) {
            const __m256 d = _mm256_mul_ps(dwv, dat[t]), dm = _mm256_mul_ps(dmv, dat[t]);
            if (grp) {
                KUNROLL
                for (int k = 0; k < 4; k++) {
                    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tree8(P[k][t])), d, acc[t]);
                    accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(minsk[k], bsp[t][k])), dm, accm[t]);
                }
            } else {
                __m256i M = _mm256_madd_epi16(minsk[0], bsp[t][0]);
                KUNROLL
                for (int k = 1; k < 4; k++) M = _mm256_add_epi32(M, _mm256_madd_epi16(minsk[k], bsp[t][k]));
                const __m256i a = P[2][t][0], b = P[2][t][1];
                const __m256i rs = _mm256_add_epi32(_mm256_inserti128_si256(a, _mm256_castsi256_si128(b), 1),
                                                    _mm256_inserti128_si256(b, _mm256_extracti128_si256(a, 1), 0));
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rs), d, acc[t]);
                accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(M), dm, accm[t]);
            }
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = _mm256_sub_ps(acc[t], accm[t]);
}

#if defined(KX_F512)
/* tile_q4_K's orders with the integer part in zmm: grp = 0 its gemv (one fma per row and
 * super-block for the codes, one for the mins), grp = 1 its 4-token gemm (per pair of
 * sub-blocks k). The same float steps, so the same bits; only the exact integer sums are formed
 * another way. A row's 128 code bytes are two zmm loads; the low and high nibbles of each meet
 * the token's activations arranged once per super-block (kq_act_z: [sub-block s | s + 2] per
 * 256-bit half), vpmaddubsw gives i16 pairs (|2 * 15 * 128| fits) and vpdpwssd multiplies
 * them by the sub-block scales: v0 holds pairs 0 | 1 (one per half), v1 pairs 2 | 3 (gemm:
 * vpdpbusd per zmm of codes, two packed to words and multiplied by K4Z_SCP's scale words, as
 * the gemm sums each half's lanes anyway; 6 multiply-pipe ops per row and token instead of 8,
 * measured ~2% faster on Zen 5 in g4-bench-kern -B, within noise in the model). gemv: one
 * accumulator per row, 8 rows summed by zred8; gemm: rows reduced two and four at a time as they come
 * (fewer live vectors), then across 128-bit lanes into the four [row 0 .. 7] vectors of sums.
 * Per 128 codes 2 multiply-pipe ops against tile_q4_K's 5 plus its vphaddw folds: on
 * full-width AVX-512 cores (Zen 5) the ymm tile is bound by those ops, not by DRAM. */
/* 8 rows' i32 vectors -> [sum row 0 .. sum row 7] */
KINLINE __m256i zred8(const __m512i *v) {
    const __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[0], v[1]), _mm512_unpackhi_epi32(v[0], v[1]));
    const __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2], v[3]), _mm512_unpackhi_epi32(v[2], v[3]));
    const __m512i t2 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[4], v[5]), _mm512_unpackhi_epi32(v[4], v[5]));
    const __m512i t3 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[6], v[7]), _mm512_unpackhi_epi32(v[6], v[7]));
    /* per 128-bit lane: [rows 0..3] in a, [rows 4..7] in b */
    const __m512i a = _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
    const __m512i b = _mm512_add_epi32(_mm512_unpacklo_epi64(t2, t3), _mm512_unpackhi_epi64(t2, t3));
    /* [a0 a2 b0 b2] + [a1 a3 b1 b3], then lanes (0 + 1) and (2 + 3) */
    const __m512i s = _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i f = _mm512_add_epi32(s, _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castsi512_si256(_mm512_shuffle_i32x4(f, f, _MM_SHUFFLE(2, 0, 2, 0)));
}
KINLINE void tile_q4_K_z(const uint8_t *const *wr, const uint8_t *restrict x, size_t xrb, int64_t n,
                         const int T, __m256 *out, const int grp, const uint8_t *pf, size_t pf_step) {
    __m256 acc[KMAXT], accm[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++) {
        const size_t off = (size_t)i * 144;
        __m256 dwv, dmv;
        h8x2(wr, off, &dwv, &dmv);
        int32_t bsw[KMAXT][4];
        float dat[KMAXT];
        __m512i Az[KMAXT][4];
        KUNROLL
        for (int t = 0; t < T; t++) {
            q4k_bsw(x + t * xrb + i * 292, bsw[t], &dat[t]);
            kq_act_z(x + t * xrb + i * 292 + 4, Az[t]);
        }
        __m128i mrow[8];
        __m512i P[KMAXT][8];                                  /* gemv: v0 + v1 per row */
        __m512i X[KMAXT][2], Y[KMAXT][2], H[2][KMAXT][2];     /* gemm: 1, 2 and 4 rows reduced */
        KUNROLL
        for (int r = 0; r < 8; r++) {
            if (pf) { /* as tile_q4_K */
                const char *q = (const char *)pf + (size_t)i * pf_step;
                _mm_prefetch(q + 128 * r, KX_PF_HINT);
                _mm_prefetch(q + 128 * r + 64, KX_PF_HINT);
                if (r < 2) _mm_prefetch(q + 1024 + 64 * r, KX_PF_HINT);
            }
            __m512i z[4], sc[4], scp[2]; /* scale words: sc the gemv's (K4Z_SC), scp the gemm's */
            __m128i sm;
            q4k_row_z(wr[r] + off, z, &sm, &mrow[r]);
            if (grp) {
                const __m512i sb = _mm512_broadcast_i32x4(sm);
                scp[0] = _mm512_shuffle_epi8(sb, ld512(K4Z_SCP[0]));
                scp[1] = _mm512_shuffle_epi8(sb, ld512(K4Z_SCP[1]));
            } else {
                kq_sc_z(sm, sc);
            }
            KUNROLL
            for (int t = 0; t < T; t++) {
                if (!grp) { /* one chain over the 4 (an add of two chains measured ~4% slower) */
                    __m512i v = _mm512_madd_epi16(_mm512_maddubs_epi16(z[0], Az[t][0]), sc[0]);
                    KUNROLL
                    for (int k = 1; k < 4; k++) v = _mm512_dpwssd_epi32(v, _mm512_maddubs_epi16(z[k], Az[t][k]), sc[k]);
                    P[t][r] = v;
                    continue;
                }
                /* vpdpbusd's i32 of 4 products (|4 * 15 * 128| fits i16), packed to words of
                 * two sub-blocks and multiplied by their scales: 3 multiply-pipe ops per
                 * pair of sub-blocks instead of 4 */
                const __m512i zero = _mm512_setzero_si512();
                const __m512i v0 = _mm512_madd_epi16(_mm512_packs_epi32(_mm512_dpbusd_epi32(zero, z[0], Az[t][0]),
                                                                        _mm512_dpbusd_epi32(zero, z[1], Az[t][1])), scp[0]);
                const __m512i v1 = _mm512_madd_epi16(_mm512_packs_epi32(_mm512_dpbusd_epi32(zero, z[2], Az[t][2]),
                                                                        _mm512_dpbusd_epi32(zero, z[3], Az[t][3])), scp[1]);
                if ((r & 1) == 0) { X[t][0] = v0; X[t][1] = v1; continue; }
                const __m512i p0 = _mm512_add_epi32(_mm512_unpacklo_epi32(X[t][0], v0), _mm512_unpackhi_epi32(X[t][0], v0));
                const __m512i p1 = _mm512_add_epi32(_mm512_unpacklo_epi32(X[t][1], v1), _mm512_unpackhi_epi32(X[t][1], v1));
                if ((r & 2) == 0) { Y[t][0] = p0; Y[t][1] = p1; continue; }
                H[r >> 2][t][0] = _mm512_add_epi32(_mm512_unpacklo_epi64(Y[t][0], p0), _mm512_unpackhi_epi64(Y[t][0], p0));
                H[r >> 2][t][1] = _mm512_add_epi32(_mm512_unpacklo_epi64(Y[t][1], p1), _mm512_unpackhi_epi64(Y[t][1], p1));
            }
        }
        __m256i minsk[4];
        q4k_mins_transpose(mrow, minsk);
        KUNROLL
        for (int t = 0; t < T; t++) {
            const __m256 da = _mm256_set1_ps(dat[t]);
            if (!grp) {
                const __m256 d = _mm256_mul_ps(dwv, da), dm = _mm256_mul_ps(dmv, da);
                __m256i M = _mm256_madd_epi16(minsk[0], _mm256_set1_epi32(bsw[t][0]));
                KUNROLL
                for (int k = 1; k < 4; k++) M = _mm256_add_epi32(M, _mm256_madd_epi16(minsk[k], _mm256_set1_epi32(bsw[t][k])));
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(zred8(P[t])), d, acc[t]);
                accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(M), dm, accm[t]);
                continue;
            }
            /* per 128-bit lane of H: lanes 0, 1 pair 2h, lanes 2, 3 pair 2h + 1 */
            __m256i rs[4];
            KUNROLL
            for (int h = 0; h < 2; h++) {
                const __m512i a = H[0][t][h], b = H[1][t][h];
                const __m512i sv = _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                                                    _mm512_shuffle_i32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
                rs[2 * h] = _mm512_castsi512_si256(_mm512_shuffle_i32x4(sv, sv, _MM_SHUFFLE(3, 1, 2, 0)));
                rs[2 * h + 1] = _mm512_castsi512_si256(_mm512_shuffle_i32x4(sv, sv, _MM_SHUFFLE(2, 0, 3, 1)));
            }
            KUNROLL
            for (int k = 0; k < 4; k++) {
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rs[k]), _mm256_mul_ps(dwv, da), acc[t]);
                accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(minsk[k], _mm256_set1_epi32(bsw[t][k]))),
                                          _mm256_mul_ps(dmv, da), accm[t]);
            }
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = _mm256_sub_ps(acc[t], accm[t]);
}
#endif

/* The 4-token gemm order of tile_q4_K (grp = 1) with the pairs k outermost: every row's
 * integer sum for pair k is reduced across the 8 rows as the rows come (tree8's hadd tree,
 * the same integers), so only a few vectors per token are live instead of tile_q4_K's
 * [4][T][8] (which spilled to the stack: ~46 instructions per row, super-block and token
 * against ~30 here). Each token's f32 chain is unchanged: per super-block, per pair k in
 * order, acc = fma(isum, dw * da, acc) and accm = fma(imin, dmin * da, accm). */
KINLINE void tile_q4_K_g(const uint8_t *const *wr, const uint8_t *restrict x, size_t xrb, int64_t n,
                         const int T, __m256 *out, const uint8_t *pf, size_t pf_step) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc[KMAXT], accm[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++) {
        const size_t off = (size_t)i * 144;
        __m256 dwv, dmv;
        h8x2(wr, off, &dwv, &dmv);
        int32_t bsw[KMAXT][4]; /* per token: (bs(2k), bs(2k+1)) as two i16 in one i32 */
        float dat[KMAXT];
        KUNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *a = x + t * xrb + i * 292;
            dat[t] = rdf(a);
            const __m256i b32 = _mm256_madd_epi16(ld256(a + 260), _mm256_set1_epi16(1)); /* bs(0..7), i32 */
            const __m256i p16 = _mm256_packs_epi32(b32, b32);
            bsw[t][0] = _mm256_extract_epi32(p16, 0);
            bsw[t][1] = _mm256_extract_epi32(p16, 1);
            bsw[t][2] = _mm256_extract_epi32(p16, 4);
            bsw[t][3] = _mm256_extract_epi32(p16, 5);
        }
        __m256i sdup[8];
        __m128i mrow[8];
        KUNROLL
        for (int r = 0; r < 8; r++) {
            if (pf) { /* as tile_q4_K: the next tile's share of this super-block, spread */
                const char *q = (const char *)pf + (size_t)i * pf_step;
                _mm_prefetch(q + 128 * r, KX_PF_HINT);
                _mm_prefetch(q + 128 * r + 64, KX_PF_HINT);
                if (r < 2) _mm_prefetch(q + 1024 + 64 * r, KX_PF_HINT);
            }
            const __m128i sm = kq_scales_v(wr[r] + off + 4);
            sdup[r] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi64(sm, sm));
            mrow[r] = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
        }
        __m256i minsk[4];
        q4k_mins_transpose(mrow, minsk);
        KUNROLL
        for (int k = 0; k < 4; k++) {
            const __m256i selk = ld256(K4_PAIR[k]);
            __m256i h1[KMAXT], h2[KMAXT][2];
            KUNROLL
            for (int r = 0; r < 8; r += 2) {
                __m256i v[KMAXT][2];
                KUNROLL
                for (int u = 0; u < 2; u++) {
                    const __m256i q = ld256(wr[r + u] + off + 16 + 32 * k);
                    const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                    const __m256i sp = _mm256_shuffle_epi8(sdup[r + u], selk);
                    KUNROLL
                    for (int t = 0; t < T; t++) {
                        const uint8_t *a = x + t * xrb + i * 292 + 4 + 64 * k;
                        v[t][u] = _mm256_madd_epi16(_mm256_hadd_epi16(_mm256_maddubs_epi16(lo, ld256(a)),
                                                                      _mm256_maddubs_epi16(hi, ld256(a + 32))), sp);
                    }
                }
                KUNROLL
                for (int t = 0; t < T; t++) {
                    const __m256i pr = _mm256_hadd_epi32(v[t][0], v[t][1]);
                    if ((r & 2) == 0) h1[t] = pr;
                    else h2[t][r >> 2] = _mm256_hadd_epi32(h1[t], pr);
                }
            }
            KUNROLL
            for (int t = 0; t < T; t++) {
                const __m256i a = h2[t][0], b = h2[t][1];
                const __m256i rs = _mm256_add_epi32(_mm256_inserti128_si256(a, _mm256_castsi256_si128(b), 1),
                                                    _mm256_inserti128_si256(b, _mm256_extracti128_si256(a, 1), 0));
                const __m256 da = _mm256_set1_ps(dat[t]);
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rs), _mm256_mul_ps(dwv, da), acc[t]);
                accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(minsk[k], _mm256_set1_epi32(bsw[t][k]))),
                                          _mm256_mul_ps(dmv, da), accm[t]);
            }
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = _mm256_sub_ps(acc[t], accm[t]);
}

/* IQ4_XS x Q8_K in llama.cpp's IQ panel order (ggml-cpu iqp.cpp, used for ops with >= 8
 * activation columns): per row and super-block the exact integer sum of (ls - 32) x code x
 * activation, then one f32 FMA per row, acc = fma((float)isum, d * da, acc). The per-row
 * integer work is dot_iq4_xs's; the 8 rows' sums are reduced together with tree8. */
KINLINE void tile_iq4_xs(const uint8_t *const *wr, const uint8_t *restrict x, size_t xrb, int64_t n,
                         const int T, __m256 *out) {
    __m256 acc[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    const int64_t nb = n / 256;
    for (int64_t i = 0; i < nb; i++) {
        const size_t off = (size_t)i * 136;
        const __m256 dwv = h8(wr, off);
        __m256i P[KMAXT][8];
        for (int r = 0; r < 8; r++) {
            __m256i sumi[KMAXT];
            iq4_xs_sb(wr[r] + off, x, xrb, i, T, sumi);
            KUNROLL
            for (int t = 0; t < T; t++) P[t][r] = sumi[t];
        }
        KUNROLL
        for (int t = 0; t < T; t++) {
            const __m256 d = _mm256_mul_ps(dwv, _mm256_set1_ps(rdf(x + t * xrb + i * 292)));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tree8(P[t])), d, acc[t]);
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = acc[t];
}

/* Driver: tiles of 8 rows (a partial last tile repeats its last row and stores only the
 * valid ones) x token groups of 4. */
#define DEF_MM_TILE(mname, CALL)                                                                     \
    static void mm_##mname(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, \
                           const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0,    \
                           int64_t row1, int n_tok) {                                                   \
        const uint8_t *x = xq;                                                                         \
        for (int64_t rt = row0; rt < row1; rt += 8) {                                                  \
            const int nr = row1 - rt < 8 ? (int)(row1 - rt) : 8;                                       \
            const uint8_t *wr[8];                                                                      \
            for (int r = 0; r < 8; r++) wr[r] = w + (size_t)(rt + (r < nr ? r : nr - 1)) * w_row_bytes; \
            /* next tile (contiguous rows), prefetched during this one's first token group */      \
            const uint8_t *pf = rt + 16 <= row1 ? w + (size_t)(rt + 8) * w_row_bytes : NULL;         \
            for (int t = 0; t < n_tok; t += 4) {                                                       \
                const uint8_t *xt = x + (size_t)t * xq_row_bytes;                                      \
                const int nt = n_tok - t < 4 ? n_tok - t : 4;                                          \
                __m256 o[KMAXT];                                                                       \
                const uint8_t *pft = t == 0 ? pf : NULL;                                               \
                switch (nt) {                                                                          \
                case 4: CALL(wr, xt, xq_row_bytes, n_in, 4, o, pft, 8 * w_row_bytes); break;           \
                case 3: CALL(wr, xt, xq_row_bytes, n_in, 3, o, pft, 8 * w_row_bytes); break;           \
                case 2: CALL(wr, xt, xq_row_bytes, n_in, 2, o, pft, 8 * w_row_bytes); break;           \
                default: CALL(wr, xt, xq_row_bytes, n_in, 1, o, pft, 8 * w_row_bytes); break;          \
                }                                                                                      \
                for (int k = 0; k < nt; k++) {                                                         \
                    float *yy = y + (size_t)(t + k) * ldy + (size_t)rt;                                \
                    if (nr == 8) _mm256_storeu_ps(yy, o[k]);                                           \
                    else { float tmp[8]; _mm256_storeu_ps(tmp, o[k]); memcpy(yy, tmp, (size_t)nr * 4); } \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
    }
/* pf_total: the next tile's bytes (8 rows); per-block prefetch step = pf_total / blocks */
#define CALL_Q4_0(wr, x, xrb, n, T, o, pf, pft)   tile_b32(wr, x, xrb, n, T, o, 0, pf, pft)
#define CALL_IQ4_NL(wr, x, xrb, n, T, o, pf, pft) tile_b32(wr, x, xrb, n, T, o, 1, pf, pft)
#define CALL_Q4_K(wr, x, xrb, n, T, o, pf, pft)   tile_q4_K(wr, x, xrb, n, T, o, 0, pf, (pft) / (size_t)((n) / 256))
#define CALL_Q4_K_G(wr, x, xrb, n, T, o, pf, pft) tile_q4_K_g(wr, x, xrb, n, T, o, pf, (pft) / (size_t)((n) / 256))
DEF_MM_TILE(q4_0, CALL_Q4_0)
DEF_MM_TILE(iq4_nl, CALL_IQ4_NL)
DEF_MM_TILE(q4_K, CALL_Q4_K)
DEF_MM_TILE(q4_K_grp, CALL_Q4_K_G)
#if defined(KX_F512) /* the zmm tiles (TABLE_Z) */
#define CALL_Q4_0_Z(wr, x, xrb, n, T, o, pf, pft) tile_q4_0_z(wr, x, xrb, n, T, o, pf, pft)
#define CALL_Q4_K_Z(wr, x, xrb, n, T, o, pf, pft) tile_q4_K_z(wr, x, xrb, n, T, o, 0, pf, (pft) / (size_t)((n) / 256))
#define CALL_Q4_K_GZ(wr, x, xrb, n, T, o, pf, pft) tile_q4_K_z(wr, x, xrb, n, T, o, 1, pf, (pft) / (size_t)((n) / 256))
DEF_MM_TILE(q4_0_z, CALL_Q4_0_Z)
DEF_MM_TILE(q4_K_z, CALL_Q4_K_Z)
DEF_MM_TILE(q4_K_grp_zt, CALL_Q4_K_GZ)
#include "kern_x86_rq4k.h" /* mm_q4_K_grp_z: mm_q4_K_grp_zt below RQ_MIN tokens */
#include "kern_x86_rq6k.h" /* Q6_K stored repacked: mm_q6_K_rq_z */
#include "kern_x86_rqb32.h" /* Q8_0 / Q5_0 / Q4_0 stored repacked: mm_q8_0_rq_z, mm_q5_0_rq_z, mm_q4_0_rq_z */
#include "kern_x86_rq5k.h"  /* Q5_K stored repacked: mm_q5_K_rq_z */
#endif
#define CALL_IQ4_XS_P(wr, x, xrb, n, T, o, pf, pft) ((void)(pf), tile_iq4_xs(wr, x, xrb, n, T, o))
DEF_MM_TILE(iq4_xs_p, CALL_IQ4_XS_P)

#if defined(KX_F512)
/* ==== Q2_K as llama.cpp's AVX-512 builds multiply it ====
 * ggml_cpu_has_avx512() repacks Q2_K weights into q2_K_8x8 (repack.cpp); its gemv (one
 * token: the decode kernel and a batch's last n % 4 tokens) and its 4-token gemm (x86
 * repack.cpp) sum, per row, exact integers and then
 *   acc = fma((float)isum, dw * da, acc), accm = fma((float)imin, dmin * da, accm)
 * per 256-element super-block (gemv) or per 128-element half (gemm); out = acc - accm.
 * isum: scale x (codes . activations) over the span's 16-element sub-blocks, imin: min x
 * bsum over them. A scalar fmaf per row is the same operation as their one f32 lane. */
/* the exact integers of one super-block w and one token's activations a, per 128-element half
 * h: isum[h] = sum of scale x (codes . activations) over its 16-element groups, imin[h] = sum
 * of min x bsum over them. The integer steps of dot_q23_K's Q2_K with the two halves in the
 * two 256-bit halves of a zmm (codes qs[0..32) | qs[32..64)), each reduced on its own. */
KINLINE void q2k_halves(const uint8_t *restrict w, const uint8_t *restrict a, int32_t isum[2], int32_t imin[2]) {
    const __m512i m2 = _mm512_set1_epi8(0x03);
    const __m128i s8 = ld128(w);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_and_si128(s8, _mm_set1_epi8(0x0f)));
    /* [groups 0-7 | groups 8-15] as i16, each broadcast over its 256-bit half */
    const __m512i scz = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(sc16, sc16, 0x00)),
                                           _mm256_permute2x128_si256(sc16, sc16, 0x11), 1);
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(0x0f)));
    __m512i q = ld512(w + 16), s = _mm512_setzero_si512();
    KUNROLL
    for (int j = 0; j < 4; j++) {
        /* chunk j of half 0 (elements 32 j ..) and of half 1 (128 + 32 j ..) */
        const __m512i av = _mm512_inserti64x4(_mm512_castsi256_si512(ld256(a + 4 + 32 * j)), ld256(a + 132 + 32 * j), 1);
        const __m512i p16 = _mm512_maddubs_epi16(_mm512_and_si512(q, m2), av);
        s = _mm512_add_epi32(s, _mm512_madd_epi16(p16, _mm512_shuffle_epi8(scz, _mm512_broadcast_i64x4(ld256(Q6_SEL[j])))));
        q = _mm512_srli_epi16(q, 2);
    }
    isum[0] = hsum_i32(_mm512_castsi512_si256(s));
    isum[1] = hsum_i32(_mm512_extracti64x4_epi64(s, 1));
    /* lanes 0-3: groups 0-7 (half 0), lanes 4-7: groups 8-15 */
    const __m256i mv = _mm256_madd_epi16(ld256(a + 260), mins);
    __m128i h = _mm_hadd_epi32(_mm256_castsi256_si128(mv), _mm256_extracti128_si256(mv, 1));
    h = _mm_hadd_epi32(h, h);
    imin[0] = _mm_cvtsi128_si32(h);
    imin[1] = _mm_extract_epi32(h, 1);
}
KINLINE void dot_q2_K_rp(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n, const int T,
                         float *restrict out, const int gemm) {
    float acc[KMAXT], accm[KMAXT];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = accm[t] = 0.0f;
    for (int64_t b = 0; b < n / 256; b++, w += 84) {
        const float dw = h2f(w + 80), dmw = h2f(w + 82);
        KUNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *a = x + t * xrb + (size_t)b * 292;
            const float da = rdf(a);
            int32_t is[2], im[2];
            q2k_halves(w, a, is, im);
            const int32_t i0 = is[0], i1 = is[1], m0 = im[0], m1 = im[1];
            if (gemm) {
                acc[t] = fmaf((float)i0, dw * da, acc[t]);
                accm[t] = fmaf((float)m0, dmw * da, accm[t]);
                acc[t] = fmaf((float)i1, dw * da, acc[t]);
                accm[t] = fmaf((float)m1, dmw * da, accm[t]);
            } else {
                acc[t] = fmaf((float)(i0 + i1), dw * da, acc[t]);
                accm[t] = fmaf((float)(m0 + m1), dmw * da, accm[t]);
            }
        }
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = acc[t] - accm[t];
}
KINLINE void dot_q2_K_rv(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n, const int T,
                         float *restrict out) { dot_q2_K_rp(w, x, xrb, n, T, out, 0); }
KINLINE void dot_q2_K_rm(const uint8_t *restrict w, const uint8_t *restrict x, size_t xrb, int64_t n, const int T,
                         float *restrict out) { dot_q2_K_rp(w, x, xrb, n, T, out, 1); }
#endif

/* ==== Matmul drivers: rows x token groups of <= 4 ==== */

/* Row tiles of KROWS rows x token groups of 4: the 4 tokens' activation rows stay in L1
 * while the tile's rows (which stay in L1/L2) pass under them; the tile's weights come from
 * DRAM once per call. */
#define KROWS 8
#define DEF_MM(tname)                                                                                \
    static void mm_##tname(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, \
                           const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0,    \
                           int64_t row1, int n_tok) {                                                   \
        const uint8_t *x = xq;                                                                         \
        float o[KMAXT];                                                                                \
        if (n_tok == 1) { /* decode: outside the switch GCC keeps the accumulators in registers */ \
            for (int64_t r = row0; r < row1; r++) {                                                    \
                dot_##tname(w + (size_t)r * w_row_bytes, x, xq_row_bytes, n_in, 1, o);                \
                y[r] = o[0];                                                                           \
            }                                                                                          \
            return;                                                                                    \
        }                                                                                              \
        for (int64_t rt = row0; rt < row1; rt += KROWS) {                                              \
            const int64_t rt1 = rt + KROWS < row1 ? rt + KROWS : row1;                                 \
            for (int t = 0; t < n_tok; t += 4) {                                                       \
                const uint8_t *xt = x + (size_t)t * xq_row_bytes;                                      \
                const int nt = n_tok - t < 4 ? n_tok - t : 4;                                          \
                for (int64_t r = rt; r < rt1; r++) {                                                   \
                    const uint8_t *wr = w + (size_t)r * w_row_bytes;                                   \
                    switch (nt) {                                                                      \
                    case 4: dot_##tname(wr, xt, xq_row_bytes, n_in, 4, o); break;                      \
                    case 3: dot_##tname(wr, xt, xq_row_bytes, n_in, 3, o); break;                      \
                    case 2: dot_##tname(wr, xt, xq_row_bytes, n_in, 2, o); break;                      \
                    default: dot_##tname(wr, xt, xq_row_bytes, n_in, 1, o); break;                     \
                    }                                                                                  \
                    for (int k = 0; k < nt; k++) y[(size_t)(t + k) * ldy + (size_t)r] = o[k];         \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
    }
/* Driver for the Q8_0-activation 32-element formats: per row tile, token group and segment
 * of <= KDA_MAX blocks, the activation scales are converted to f32 once (da, [4][KDA_MAX]
 * on the stack); rows longer than KDA_MAX blocks are summed over segments. */
#define DEF_MM_B32(tname, wbytes)                                                           \
    static void mm_##tname(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, \
                           const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0,    \
                           int64_t row1, int n_tok) {                                                   \
        const uint8_t *x = xq;                                                                         \
        float o[KMAXT], da[KMAXT * KDA_MAX];                                                           \
        const int64_t nb = n_in / 32;                                                                  \
        if (n_tok == 1) { /* decode: outside the switch GCC keeps the accumulators in registers */ \
            for (int64_t s0 = 0; s0 < nb; s0 += KDA_MAX) {                                             \
                const int64_t sn = nb - s0 < KDA_MAX ? nb - s0 : KDA_MAX;                              \
                const uint8_t *xt = x + (size_t)s0 * 34;                                               \
                for (int64_t b = 0; b < sn; b++) da[b] = h2f(xt + b * 34);                             \
                int64_t r = row0;                                                                      \
                for (; r < row1; r++) {                                                                \
                    dot_##tname(w + (size_t)r * w_row_bytes + (size_t)s0 * wbytes, xt, xq_row_bytes, sn * 32, 1, o, da); \
                    y[r] = s0 ? y[r] + o[0] : o[0];                                                    \
                }                                                                                      \
            }                                                                                          \
            return;                                                                                    \
        }                                                                                              \
        for (int64_t rt = row0; rt < row1; rt += KROWS) {                                              \
            const int64_t rt1 = rt + KROWS < row1 ? rt + KROWS : row1;                                 \
            for (int t = 0; t < n_tok; t += 4) {                                                       \
                const int nt = n_tok - t < 4 ? n_tok - t : 4;                                          \
                for (int64_t s0 = 0; s0 < nb; s0 += KDA_MAX) {                                         \
                    const int64_t sn = nb - s0 < KDA_MAX ? nb - s0 : KDA_MAX;                          \
                    const uint8_t *xt = x + (size_t)t * xq_row_bytes + (size_t)s0 * 34;                \
                    for (int k = 0; k < nt; k++)                                                       \
                        for (int64_t b = 0; b < sn; b++) da[k * KDA_MAX + b] = h2f(xt + k * xq_row_bytes + b * 34); \
                    for (int64_t r = rt; r < rt1; r++) {                                               \
                        const uint8_t *wr = w + (size_t)r * w_row_bytes + (size_t)s0 * wbytes;         \
                        switch (nt) {                                                                  \
                        case 4: dot_##tname(wr, xt, xq_row_bytes, sn * 32, 4, o, da); break;           \
                        case 3: dot_##tname(wr, xt, xq_row_bytes, sn * 32, 3, o, da); break;           \
                        case 2: dot_##tname(wr, xt, xq_row_bytes, sn * 32, 2, o, da); break;           \
                        default: dot_##tname(wr, xt, xq_row_bytes, sn * 32, 1, o, da); break;          \
                        }                                                                              \
                        for (int k = 0; k < nt; k++) {                                                 \
                            float *yy = &y[(size_t)(t + k) * ldy + (size_t)r];                         \
                            *yy = s0 ? *yy + o[k] : o[k];                                              \
                        }                                                                              \
                    }                                                                                  \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
    }
#if defined(KX_F512)
/* ==== Q8_0 / Q5_0 in zmm: two weight rows per register ====
 * [row r | row r + 1] in the two 256-bit halves, every lane the lane of dot_##tname's ymm
 * for its row: the same u8 x s8 sums of 4 (vpdpbusd; the signs moved onto the activations by
 * a byte mask, as vpsignb does in ymm), the same d = dw * da, one FMA chain per row and
 * token, each half reduced by hsum_ps: the same bits as dot_##tname. Codes, |codes|, their
 * sign mask and the row pair's scales are made once per block for all tokens. */
/* the two rows' signed codes of one block: Q8_0 as stored */
KINLINE __m512i dec2z_q8_0(const uint8_t *b0, const uint8_t *b1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(ld256(b0 + 2)), ld256(b1 + 2), 1);
}
/* Q5_0: 128-bit lanes [qs0, qs0 >> 4, qs1, qs1 >> 4] & 15 are the low four bits in element
 * order; code - 16 = nibble where the fifth bit is set, nibble - 16 where clear */
KINLINE __m512i dec2z_q5_0(const uint8_t *b0, const uint8_t *b1) {
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(b0 + 6))),
                                              _mm_loadu_si128((const __m128i *)(const void *)(b1 + 6)), 1);
    const __m512i z = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_castsi256_si512(q));
    const __m512i nib = _mm512_and_si512(_mm512_srlv_epi64(z, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)), _mm512_set1_epi8(0x0F));
    const __mmask64 clear = ~((uint64_t)quant_rd32(b0 + 2) | (uint64_t)quant_rd32(b1 + 2) << 32);
    return _mm512_mask_sub_epi8(nib, clear, nib, _mm512_set1_epi8(16));
}
/* [dw(row r) x 8 | dw(row r + 1) x 8] */
KINLINE __m512 dw2z(const uint8_t *b0, const uint8_t *b1) {
    const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)quant_rd16(b0))),
                                              _mm_set1_epi16((short)quant_rd16(b1)), 1);
    return _mm512_cvtph_ps(h);
}
#define KZT 8 /* tokens per pass of a row pair */
/* a token's 32 activation codes of Q8_0 block ablk in both halves */
KINLINE __m512i b32z_act(const uint8_t *ablk) { return _mm512_broadcast_i64x4(ld256(ablk + 2)); }
/* one block of a row pair for one token (a: b32z_act, da: its scale):
 * acc + (dw * da) * float(|codes| . activations with the codes' signs) */
KINLINE __m512 b32z_fma(__m512i u, __mmask64 neg, __m512 dw, __m512i a, float da, __m512 acc) {
    a = _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
    const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, a);
    return _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(da)), _mm512_cvtepi32_ps(p), acc);
}
/* the pair's two sums: each half reduced as dot_##tname's ymm */
KINLINE void hsum2z(__m512 acc, float *out) {
    out[0] = hsum_ps(_mm512_castps512_ps256(acc));
    out[1] = hsum_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)));
}
/* rows w and w + wrb, T tokens (x, xrb apart), n elements; out[2 * t + j]: row j, token t.
 * pf: the next row pair's first byte (prefetched, 2 * wbytes per block) */
#define DEF_DOT2Z_B32(tname, wbytes, DEC2)                                                            \
    KINLINE void dot2z_##tname(const uint8_t *restrict w, size_t wrb, const uint8_t *restrict x, size_t xrb, \
                               int64_t n, const int T, float *restrict out, const float *restrict da,  \
                               const char *pf) {                                                     \
        __m512 acc[KZT];                                                                             \
        KUNROLL                                                                                      \
        for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();                                    \
        const int64_t nb = n / 32;                                                                   \
        for (int64_t i = 0; i < nb; i++, w += wbytes) {                                              \
            /* the pair's two interleaved streams leave gaps the hardware prefetchers lose */        \
            _mm_prefetch(pf + 2 * (size_t)i * wbytes, KX_PF_HINT);                                  \
            _mm_prefetch(pf + 2 * (size_t)i * wbytes + 63, KX_PF_HINT);                             \
            const __m512i sc = DEC2(w, w + wrb);                                                     \
            const __m512i u = _mm512_abs_epi8(sc);                                                   \
            const __mmask64 neg = _mm512_movepi8_mask(sc);                                           \
            const __m512 dw = dw2z(w, w + wrb);                                                      \
            KUNROLL                                                                                  \
            for (int t = 0; t < T; t++) acc[t] = b32z_fma(u, neg, dw, b32z_act(x + t * xrb + i * 34), da[t * KDA_MAX + i], acc[t]); \
        }                                                                                            \
        KUNROLL                                                                                      \
        for (int t = 0; t < T; t++) hsum2z(acc[t], out + 2 * t);                                     \
    }
DEF_DOT2Z_B32(q8_0, 34, dec2z_q8_0)
DEF_DOT2Z_B32(q5_0, 22, dec2z_q5_0)
/* ==== One-token decode passes of the zmm Q8_0 / Q5_0 drivers ====
 * Both prefetch the rows' stream B32Z_PF_MIN or more ahead as they go (the hardware
 * prefetchers lose interleaved row streams). Q8_0 takes one row pair per pass (dot2z_q8_0):
 * four interleaved row streams read slower from DRAM than two, even prefetched (a plain
 * read of that pattern on Zen 5, 1 thread: 4 rows 24-36 GB/s, 2 rows 30-40; g4-bench-kern
 * -1 -S LM, Q8_0 LM head 20.6-22.1 -> 24.5-25.1 GB/s against two pairs per pass, -E experts
 * within the noise). Q5_0 takes two row pairs (rows w .. w + 3 wrb) per pass: two FMA chains
 * in flight, the token's activations loaded once for both pairs; each pair's lanes,
 * d = dw * da and FMA chain as dot2z1_q5_0's, so the same bits (in alternating runs no
 * slower than one pair per pass). Q5_0 takes unsigned codes u = nibble + 16 * fifth bit
 * (0 .. 31; the fifth bits as a mask register from the two rows' qh) by vpdpbusd from each
 * lane's correction -16 * (its 4 activations' sum), made once per block for all rows
 * (q5_0_corr): the same exact i32 lanes as the sign trick (sum (u - 16) a), without |codes|,
 * their sign mask and a negation of the activations per row pair (with the sign trick a
 * four-row Q5_0 pass measured slower, 23 -> 18.5 GB/s). */
KINLINE __m512i dec2zu_q5_0(const uint8_t *b0, const uint8_t *b1) {
    /* [qs0 | qs0 | qs1 | qs1] by two 128-bit broadcast loads and a blend; >> [0, 4] per 64 bits */
    const __m512i z = _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(ld128(b0 + 6)), 0xff00, ld128(b1 + 6));
    const __m512i nib = _mm512_and_si512(_mm512_srlv_epi64(z, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)), _mm512_set1_epi8(0x0F));
    const __mmask64 hi = (__mmask64)((uint64_t)quant_rd32(b0 + 2) | (uint64_t)quant_rd32(b1 + 2) << 32);
    return _mm512_mask_add_epi8(nib, hi, nib, _mm512_set1_epi8(16));
}
/* the i32 lanes of block i of the row pair b0, b1 with the token's activations a (b32z_act),
 * from the block's lane corrections corr[8 i ..] */
KINLINE __m512i pair1_q5_0(const uint8_t *b0, const uint8_t *b1, __m512i a, const int32_t *corr, int64_t i) {
    return _mm512_dpbusd_epi32(_mm512_broadcast_i64x4(ld256(corr + 8 * i)), dec2zu_q5_0(b0, b1), a);
}
/* [dw(b0) x 8 | dw(b1) x 8] * da (dw2z's lanes times da): the two f16 scales through one xmm
 * (one 32-bit move, one conversion, the product on 4 lanes) and one vpermps */
KINLINE __m512 dwda2z(const uint8_t *b0, const uint8_t *b1, float da) {
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)quant_rd16(b0) | (uint32_t)quant_rd16(b1) << 16)));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                 _mm512_castps128_ps512(_mm_mul_ps(f, _mm_set1_ps(da))));
}
/* rows w .. w + 3 wrb (pairs w, w + wrb and w + 2 wrb, w + 3 wrb), one token; out[j]: row j;
 * pf: the first byte to prefetch, 4 * wbytes per block */
#define DEF_DOT4Z1_B32(tname, wbytes)                                                                 \
    KINLINE void dot4z1_##tname(const uint8_t *restrict w, size_t wrb, const uint8_t *restrict x, int64_t n, \
                                float *restrict out, const float *restrict da, const int32_t *restrict corr, \
                                const char *pf) {                                                     \
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();                                \
        const int64_t nb = n / 32;                                                                    \
        for (int64_t i = 0; i < nb; i++, w += wbytes) {                                               \
            _mm_prefetch(pf + 4 * (size_t)i * wbytes, KX_PF_HINT);                                   \
            _mm_prefetch(pf + 4 * (size_t)i * wbytes + 63, KX_PF_HINT);                              \
            _mm_prefetch(pf + 4 * (size_t)i * wbytes + 4 * wbytes - 1, KX_PF_HINT);                  \
            const __m512i a = b32z_act(x + i * 34);                                                   \
            const __m512i p0 = pair1_##tname(w, w + wrb, a, corr, i);                                 \
            const __m512i p1 = pair1_##tname(w + 2 * wrb, w + 3 * wrb, a, corr, i);                  \
            acc0 = _mm512_fmadd_ps(dwda2z(w, w + wrb, da[i]), _mm512_cvtepi32_ps(p0), acc0);          \
            acc1 = _mm512_fmadd_ps(dwda2z(w + 2 * wrb, w + 3 * wrb, da[i]), _mm512_cvtepi32_ps(p1), acc1); \
        }                                                                                             \
        hsum2z(acc0, out);                                                                            \
        hsum2z(acc1, out + 2);                                                                        \
    }
DEF_DOT4Z1_B32(q5_0, 22)
/* Q5_0's last row pair of a one-token pass (Q8_0 takes dot2z_q8_0's) */
KINLINE void dot2z1_q5_0(const uint8_t *restrict w, size_t wrb, const uint8_t *restrict x, int64_t n,
                         float *restrict out, const float *restrict da, const int32_t *restrict corr, const char *pf) {
    __m512 acc = _mm512_setzero_ps();
    const int64_t nb = n / 32;
    for (int64_t i = 0; i < nb; i++, w += 22) {
        _mm_prefetch(pf + 2 * (size_t)i * 22, KX_PF_HINT);
        _mm_prefetch(pf + 2 * (size_t)i * 22 + 63, KX_PF_HINT);
        const __m512i p = pair1_q5_0(w, w + wrb, b32z_act(x + i * 34), corr, i);
        acc = _mm512_fmadd_ps(dwda2z(w, w + wrb, da[i]), _mm512_cvtepi32_ps(p), acc);
    }
    hsum2z(acc, out);
}
/* corr[8 i + j] = -16 * (activations 4j .. 4j + 3 of block i summed), nb blocks of x */
KINLINE void q5_0_corr(const uint8_t *restrict x, int64_t nb, int32_t *restrict corr) {
    const __m256i c16 = _mm256_set1_epi8(16);
    for (int64_t i = 0; i < nb; i++)
        _mm256_storeu_si256((__m256i *)(void *)(corr + 8 * i),
                            _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), c16, ld256(x + i * 34 + 2))));
}
/* The four-row passes prefetch the rows whole groups of 4 ahead, at least B32Z_PF_MIN bytes:
 * with short rows (the 26B-A4B experts' 704-element down rows) the next group alone is too near
 * to cover DRAM latency (Zen 5, Q5_0 704 x 2816 from DRAM: 25 GB/s with the next group) */
#define B32Z_PF_MIN 8192
/* the stream lead of a pass over k rows of wrb bytes: B32Z_PF_MIN in whole groups of k rows */
#define B32Z_LEAD(k, wrb) ((k) * (wrb) * ((B32Z_PF_MIN + (k) * (wrb) - 1) / ((k) * (wrb))))
#define B32Z_PF_LEAD(wrb) B32Z_LEAD(4, wrb)
/* Q5_0's one-token pass: its corrections (past the token's scales in da), two row pairs per
 * pass, then its last row pairs (Q8_0's one-token pass is the driver's dot2z loop) */
#define B32Z_ROWS1_q8_0
#define B32Z_ROWS1_q5_0                                                                               \
    if (nt == 1) {                                                                                    \
        int32_t *corr = (int32_t *)(void *)(da + KDA_MAX);                                            \
        q5_0_corr(xt, sn, corr);                                                                      \
        for (; r + 4 <= row1; r += 4) {                                                               \
            const uint8_t *wr = w + (size_t)r * w_row_bytes + (size_t)s0 * 22;                        \
            dot4z1_q5_0(wr, w_row_bytes, xt, sn * 32, o, da, corr, (const char *)wr + B32Z_PF_LEAD(w_row_bytes)); \
            float *yy = y + (size_t)t * ldy + (size_t)r; /* the group's one token */                 \
            for (int j = 0; j < 4; j++) yy[j] = s0 ? yy[j] + o[j] : o[j];                             \
        }                                                                                             \
        for (; r < row1; r += 2) {                                                                    \
            const int two = r + 1 < row1;                                                             \
            const uint8_t *wr = w + (size_t)r * w_row_bytes + (size_t)s0 * 22;                        \
            dot2z1_q5_0(wr, two ? w_row_bytes : 0, xt, sn * 32, o, da, corr, (const char *)wr + 2 * w_row_bytes); \
            for (int j = 0; j < 1 + two; j++) {                                                       \
                float *yy = &y[(size_t)t * ldy + (size_t)(r + j)];                                    \
                *yy = s0 ? *yy + o[j] : o[j];                                                         \
            }                                                                                         \
        }                                                                                             \
    }
/* Driver: row pairs (an odd last row is paired with itself) x token groups of <= KZT, the pair
 * in L1 across the groups; segments of <= KDA_MAX blocks as DEF_MM_B32 */
#define DEF_MM_B32Z(tname, wbytes)                                                              \
    static void mm_##tname##_z(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, \
                               const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, \
                               int64_t row1, int n_tok) {                                                 \
        const uint8_t *x = xq;                                                                           \
        float o[2 * KZT], da[KZT * KDA_MAX + KDA_MAX]; /* Q5_0 decode: corrections past da */    \
        const int64_t nb = n_in / 32;                                                                    \
        for (int64_t s0 = 0; s0 < nb; s0 += KDA_MAX) {                                                   \
            const int64_t sn = nb - s0 < KDA_MAX ? nb - s0 : KDA_MAX;                                    \
            for (int t = 0; t < n_tok; t += KZT) {                                                     \
                const int nt = n_tok - t < KZT ? n_tok - t : KZT;                                    \
                const uint8_t *xt = x + (size_t)t * xq_row_bytes + (size_t)s0 * 34;                      \
                for (int k = 0; k < nt; k++)                                                             \
                    for (int64_t b = 0; b < sn; b++) da[k * KDA_MAX + b] = h2f(xt + k * xq_row_bytes + b * 34); \
                int64_t r = row0;                                                                        \
                B32Z_ROWS1_##tname                                                                       \
                for (; r < row1; r += 2) {                                                               \
                    const int two = r + 1 < row1;                                                        \
                    const uint8_t *wr = w + (size_t)r * w_row_bytes + (size_t)s0 * wbytes;               \
                    const size_t wrb = two ? w_row_bytes : 0;                                            \
                    /* the stream ahead (may pass row1: never faults) */                              \
                    const char *pf = (const char *)wr + (nt == 1 ? B32Z_LEAD(2, w_row_bytes) : 2 * w_row_bytes); \
                    switch (nt) {                                                                        \
                    case 8: dot2z_##tname(wr, wrb, xt, xq_row_bytes, sn * 32, 8, o, da, pf); break;      \
                    case 7: dot2z_##tname(wr, wrb, xt, xq_row_bytes, sn * 32, 7, o, da, pf); break;      \
                    case 6: dot2z_##tname(wr, wrb, xt, xq_row_bytes, sn * 32, 6, o, da, pf); break;      \
                    case 5: dot2z_##tname(wr, wrb, xt, xq_row_bytes, sn * 32, 5, o, da, pf); break;      \
                    case 4: dot2z_##tname(wr, wrb, xt, xq_row_bytes, sn * 32, 4, o, da, pf); break;      \
                    case 3: dot2z_##tname(wr, wrb, xt, xq_row_bytes, sn * 32, 3, o, da, pf); break;      \
                    case 2: dot2z_##tname(wr, wrb, xt, xq_row_bytes, sn * 32, 2, o, da, pf); break;      \
                    default: dot2z_##tname(wr, wrb, xt, xq_row_bytes, sn * 32, 1, o, da, pf); break;     \
                    }                                                                                    \
                    for (int k = 0; k < nt; k++)                                                         \
                        for (int j = 0; j < 1 + two; j++) {                                              \
                            float *yy = &y[(size_t)(t + k) * ldy + (size_t)(r + j)];                     \
                            *yy = s0 ? *yy + o[2 * k + j] : o[2 * k + j];                                \
                        }                                                                                \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }
#endif
DEF_MM(f32)
DEF_MM(f16)
DEF_MM(bf16)
DEF_MM(f32_tb)
DEF_MM(f16_tb)
DEF_MM(bf16_tb)
#if defined(KX_F512) && defined(__AVX512BF16__)
DEF_MM(bf16z)
DEF_MM(bf16z_tb)
#endif

/* ==== F16 weights x f32 activations holding f16 values (kern.h matmul_f16x) ====
 * The products and sums of dot_f16 / dot_f16_tb, lane for lane: an f16 activation converted
 * to f32 is the f32 given here, so only where the conversion happens changes. Each weight
 * vector is converted once for T columns (4 in vec_dot's 4 x 8 lanes: 16 accumulators, one
 * spilled, measured faster than 3 on Zen 1; 8 in tinyBLAS's one chain), the columns are
 * loaded as they are. */
/* Both widths: W-lane vectors as dot_f16 / dot_f16_tb (W = 16 on the AVX-512 table). */
#if defined(KX_F512)
#define KX_FW 16
#define KX_RED4F red4_shuf
#define KX_LDH ldz_f16
#else
#define KX_FW 8
#define KX_RED4F red4_hadd
#define KX_LDH ld_f16
#endif
#define KX_F16X_STEP (4 * KX_FW) /* vec_dot_f16's step: dotx8_f16 takes rows of whole steps */
#define KX_TB_K KX_FW            /* tinyBLAS's k multiple */
#define KXV_T KV_T_W(KX_FW)
#define KV_T_W(W) KV_T_W_(W)
#define KV_T_W_(W) KV_T_##W
#define KXV(op) KXV_(op, KX_FW)
#define KXV_(op, W) KXV__(op, W)
#define KXV__(op, W) KV_##op##_##W
/* vec_dot_f16's four accumulators of one dot folded to 4 lanes ((s0 + s2) + (s1 + s3), then
 * the halves), and red4_hadd of 4 such dots at once (lane t = dot t: the AVX2 table's order) */
KINLINE __m128 fold4_f16(const KXV_T s[4]) {
    return KXV(FOLD)(KXV(ADD)(KXV(ADD)(s[0], s[2]), KXV(ADD)(s[1], s[3])));
}
KINLINE void store4_hadd(float *out, const __m128 h[4]) {
    _mm_storeu_ps(out, _mm_hadd_ps(_mm_hadd_ps(h[0], h[1]), _mm_hadd_ps(h[2], h[3])));
}
KINLINE void dotx_f16(const uint8_t *restrict w, const float *restrict x, size_t xs, int64_t n, const int T,
                      float *restrict out) {
    KXV_T s4[4][4];
    KUNROLL
    for (int t = 0; t < T; t++)
        KUNROLL
        for (int j = 0; j < 4; j++) s4[t][j] = KXV(ZERO)();
    const int64_t np = n & ~(int64_t)(KX_F16X_STEP - 1);
    for (int64_t i = 0; i < np; i += KX_F16X_STEP) {
        KUNROLL
        for (int j = 0; j < 4; j++) {
            const KXV_T wv = KX_LDH(w + (i + KX_FW * j) * 2);
            KUNROLL
            for (int t = 0; t < T; t++) s4[t][j] = KXV(FMA)(wv, KXV(LDF)(x + (size_t)t * xs + i + KX_FW * j), s4[t][j]);
        }
    }
    __m128 h[4];
    KUNROLL
    for (int t = 0; t < T; t++) h[t] = fold4_f16(s4[t]);
    if (KX_FW == 8 && T == 4 && np == n) { /* no tail: the four red4_hadd at once */
        store4_hadd(out, h);
        return;
    }
    KUNROLL
    for (int t = 0; t < T; t++) {
        double sf = (double)KX_RED4F(h[t]);
        for (int64_t i = np; i < n; i++) sf = sf + (double)(h2f(w + i * 2) * x[(size_t)t * xs + i]);
        out[t] = (float)sf;
    }
}
/* dotx_f16 for 5 to 8 columns of a short weight row (n % KX_F16X_STEP == 0, n <= DOTX8_MAX:
 * the columns stay in L1): the same 4 accumulators per dot, each summed in the same order, but
 * built one accumulator lane group j at a time, so each weight vector is converted once for
 * all T columns with T live accumulators (dotx_f16 converts it once per 4; on Zen 1 the
 * conversion costs about 2.5 FMAs). The sums between groups wait in memory. The attention's
 * K.q over 8 query heads (g4-bench-kern -A). */
#define DOTX8_MAX 512
KINLINE void dotx8_f16(const uint8_t *restrict w, const float *restrict x, size_t xs, int64_t n, const int T,
                       float *restrict out) {
    KXV_T s4[8][4];
#pragma GCC unroll 1
    for (int j = 0; j < 4; j++) {
        KXV_T a[8];
        KUNROLL
        for (int t = 0; t < T; t++) a[t] = KXV(ZERO)();
        for (int64_t i = KX_FW * j; i < n; i += KX_F16X_STEP) {
            const KXV_T v = KX_LDH(w + i * 2);
            KUNROLL
            for (int t = 0; t < T; t++) a[t] = KXV(FMA)(v, KXV(LDF)(x + (size_t)t * xs + i), a[t]);
        }
        KUNROLL
        for (int t = 0; t < T; t++) s4[t][j] = a[t];
    }
    __m128 h[8];
    KUNROLL
    for (int t = 0; t < T; t++) h[t] = fold4_f16(s4[t]);
    int t0 = 0;
    if (KX_FW == 8)
        for (; t0 + 4 <= T; t0 += 4) store4_hadd(out + t0, h + t0);
    KUNROLL
    for (int t = t0; t < T; t++) out[t] = (float)(double)KX_RED4F(h[t]);
}
#if KX_FW == 16
/* The 16 one-column reductions of zred16 (fold16, then red4_shuf) at once, transposed: lane
 * d = zred16(v[d]), bit for bit (each level adds the lanes fold16 / red4_shuf add: i + 8,
 * i + 4, i + 2, i + 1; the additions are the same, only which lanes of which register hold
 * them differs). 45 shuffles and adds, and one permute, for 16 dots where zred16 takes 8 each. */
KINLINE __m512 zred16x16(const __m512 v[16]) {
    __m512 a[8], b[4], c[2];
    KUNROLL
    for (int k = 0; k < 8; k++) /* dots 2k, 2k+1: lanes i + (i + 8) */
        a[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    KUNROLL
    for (int k = 0; k < 4; k++) /* quarter e = dot 4k + e: lanes i + (i + 4) */
        b[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    KUNROLL
    for (int k = 0; k < 2; k++) /* quarter e: dot 8k + e, dot 8k + 4 + e, two partial sums each: (l0 + l2), (l1 + l3) */
        c[k] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * k], b[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(b[2 * k], b[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    /* quarter e: dots e, 4 + e, 8 + e, 12 + e */
    const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
}
/* dotx8_f16 for two weight rows under 8 columns (the attention's K.q of 8 query heads over two
 * cache rows): each column vector loaded once for both rows (16 accumulators per lane group),
 * the 16 dots reduced together (zred16x16); the same sums per dot. out[r * 8 + t]. Zen 5, a
 * standalone loop over rows in L2: 3.6-3.8 -> 5.0 G FMA/s; g4-bench-kern -A, 8 heads
 * at 4,096 cells from DRAM, 311-317 -> 284-285 us (in cache unchanged, 277-283 us). */
KINLINE void dotx8r2_f16(const uint8_t *restrict w, size_t wrb, const float *restrict x, size_t xs, int64_t n,
                         float *restrict out) {
    __m512 s4[4][16];
#pragma GCC unroll 1
    for (int j = 0; j < 4; j++) {
        __m512 a0[8], a1[8]; /* rows 0 and 1 (one array of 16 GCC keeps in memory) */
        KUNROLL
        for (int t = 0; t < 8; t++) a0[t] = a1[t] = _mm512_setzero_ps();
        for (int64_t i = KX_FW * j; i < n; i += KX_F16X_STEP) {
            const __m512 v0 = ldz_f16(w + i * 2), v1 = ldz_f16(w + wrb + i * 2);
            KUNROLL
            for (int t = 0; t < 8; t++) {
                __m512 xv = _mm512_loadu_ps(x + (size_t)t * xs + i);
#if !defined(G4_SIMDE_AVX512)
                __asm__("" : "+v"(xv)); /* one load for both rows (GCC would fold it into each fma) */
#endif
                a0[t] = _mm512_fmadd_ps(v0, xv, a0[t]);
                a1[t] = _mm512_fmadd_ps(v1, xv, a1[t]);
            }
        }
        KUNROLL
        for (int t = 0; t < 8; t++) {
            s4[j][t] = a0[t];
            s4[j][8 + t] = a1[t];
        }
    }
    __m512 f[16];
    KUNROLL
    for (int d = 0; d < 16; d++) f[d] = _mm512_add_ps(_mm512_add_ps(s4[0][d], s4[2][d]), _mm512_add_ps(s4[1][d], s4[3][d]));
    _mm512_storeu_ps(out, zred16x16(f));
}
#endif
/* dotx_f16 for RB weight rows at once under the same T <= 4 columns (long rows: the attention's
 * V.p over thousands of cells): the same 4 accumulators per dot, each summed in the same order,
 * built one lane group j at a time, so each column vector loaded serves all the rows, whose data
 * stay close (L1 at 4,096 cells) over the 4 passes; the columns are read once per RB rows, not
 * once per row. out[r * T + t] = row r times column t. The columns (xrb bytes apart) are f16
 * values as f32 (XH = 0: matmul_f16x) or F16 (XH = 1: matmul[F16], quantize_act[F16]'s rows,
 * converted where loaded). pf (or NULL): the next block's RB rows, prefetched line by line
 * across them over the 4 passes (the prefetchers lose the strided row streams). */
#if KX_FW == 16
#define DOTXR_RB 4  /* f32 columns: 4 columns of 4,096 cells are 64 KiB, more than L1 holds */
#define DOTXRH_RB 6 /* F16 columns: half the bytes; 24 accumulators, each column vector serves 6 rows */
#else
#define DOTXR_RB 2
#define DOTXRH_RB 2
#endif
KINLINE void dotxr_rows(const uint8_t *restrict w, size_t wrb, const uint8_t *restrict x, size_t xrb, int64_t n,
                        const int T, float *restrict out, const uint8_t *pf, const int RB, const int XH) {
    enum { RBM = DOTXR_RB > DOTXRH_RB ? DOTXR_RB : DOTXRH_RB };
    const int pf_it = (RB * KX_F16X_STEP + 127) / 128; /* lines per step: the block over the 4 passes */
    KXV_T s4[RBM][4][4];
    const int64_t np = n & ~(int64_t)(KX_F16X_STEP - 1);
    const size_t nb = (size_t)n * 2;
    int pf_q = 0;      /* row of the next block */
    size_t pf_o = 0;   /* its byte */
#pragma GCC unroll 1
    for (int j = 0; j < 4; j++) {
        KXV_T a[RBM][4];
        KUNROLL
        for (int r = 0; r < RB; r++)
            KUNROLL
            for (int t = 0; t < T; t++) a[r][t] = KXV(ZERO)();
        for (int64_t i = KX_FW * j; i < np; i += KX_F16X_STEP) {
            KUNROLL
            for (int q = 0; q < pf_it; q++)
                if (pf && pf_o < nb + 63) {
                    _mm_prefetch((const char *)(pf + (size_t)pf_q * wrb + pf_o), _MM_HINT_T0);
                    if (++pf_q == RB) {
                        pf_q = 0;
                        pf_o += 64;
                    }
                }
            KXV_T xv[4];
            KUNROLL
            for (int t = 0; t < T; t++)
                xv[t] = XH ? KX_LDH(x + (size_t)t * xrb + (size_t)i * 2)
                           : KXV(LDF)((const float *)(const void *)(x + (size_t)t * xrb) + i);
            KUNROLL
            for (int r = 0; r < RB; r++) {
                const KXV_T v = KX_LDH(w + (size_t)r * wrb + (size_t)i * 2);
                KUNROLL
                for (int t = 0; t < T; t++) a[r][t] = KXV(FMA)(v, xv[t], a[r][t]);
            }
        }
        KUNROLL
        for (int r = 0; r < RB; r++)
            KUNROLL
            for (int t = 0; t < T; t++) s4[r][t][j] = a[r][t];
    }
    KUNROLL
    for (int r = 0; r < RB; r++)
        KUNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *wr = w + (size_t)r * wrb, *xt = x + (size_t)t * xrb;
            double sf = (double)KX_RED4F(fold4_f16(s4[r][t]));
            for (int64_t i = np; i < n; i++)
                sf = sf + (double)(h2f(wr + i * 2) * (XH ? h2f(xt + i * 2) : ((const float *)(const void *)xt)[i]));
            out[r * T + t] = (float)sf;
        }
}
/* f32 columns xs floats apart (Two rows under 8 columns: slower on Zen 5.) */
KINLINE void dotxr_f16(const uint8_t *restrict w, size_t wrb, const float *restrict x, size_t xs, int64_t n, const int T,
                       float *restrict out) {
    dotxr_rows(w, wrb, (const uint8_t *)(const void *)x, xs * sizeof(float), n, T, out, NULL, DOTXR_RB, 0);
}
/* F16 columns: the attention's V.p deep in the context (kern.h vp_f16_min); Zen 5, one thread,
 * V from DRAM, 8 heads x 4,096 cells x 512 channels: 402-414 us as dotxr_f16 -> 283-325 us */
KINLINE void dotxrh_f16(const uint8_t *restrict w, size_t wrb, const uint8_t *restrict x, size_t xrb, int64_t n,
                        const int T, float *restrict out, const uint8_t *pf) {
    dotxr_rows(w, wrb, x, xrb, n, T, out, pf, DOTXRH_RB, 1);
}
KINLINE void dotx_f16_tb(const uint8_t *restrict w, const float *restrict x, size_t xs, int64_t n, const int T,
                         float *restrict out) {
    KXV_T acc[8];
    KUNROLL
    for (int t = 0; t < T; t++) acc[t] = KXV(ZERO)();
    for (int64_t i = 0; i < n; i += KX_FW) {
        const KXV_T wv = KX_LDH(w + i * 2);
        KUNROLL
        for (int t = 0; t < T; t++) acc[t] = KXV(FMA)(wv, KXV(LDF)(x + (size_t)t * xs + i), acc[t]);
    }
    KUNROLL
    for (int t = 0; t < T; t++) out[t] = red4_shuf(KXV(FOLD)(acc[t]));
}
/* Drivers: each block of RB weight rows (cache rows, in L1) passes under every column group of
 * <= TM columns; DOTS(nt) dots the rows wr .. (RB rows) with the group xt of nt columns into o,
 * row rr's at o[rr * nt ..] (nt a constant in each case). Rows past the last whole block are
 * left (r: the first of them). */
#define MMX_DRIVER_RB(RB, TM, DOTS) MMX_DRIVER_ROWS(RB, TM, , DOTS)
#define MMX_DRIVER_ROWS(RB, TM, ROW, DOTS) /* ROW: once per block of rows */                    \
    const float *x = xq;                                                                         \
    const size_t xs = xq_row_bytes / sizeof(float);                                              \
    float o[(RB) * (TM)];                                                                        \
    int64_t r = row0;                                                                            \
    for (; r + (RB) <= row1; r += (RB)) {                                                        \
        const uint8_t *wr = w + (size_t)r * w_row_bytes;                                         \
        ROW                                                                                      \
        for (int t = 0; t < n_tok; t += TM) {                                                    \
            const float *xt = x + (size_t)t * xs;                                                \
            const int nt = n_tok - t < TM ? n_tok - t : TM;                                      \
            DOTS                                                                                 \
            for (int rr = 0; rr < (RB); rr++)                                                    \
                for (int k = 0; k < nt; k++) y[(size_t)(t + k) * ldy + (size_t)(r + rr)] = o[rr * nt + k]; \
        }                                                                                        \
    }
#define MMX_DRIVER(TM, DOTS) MMX_DRIVER_RB(1, TM, DOTS)
/* Rows the hardware prefetchers do not follow get the row MMX_PF_ROWS ahead prefetched whole,
 * when it is one of this call's:
 *  - strided short rows (the attention's V.p over a sliding window or a few hundred cells:
 *    each cache row is one channel, its cells n_rows apart): the prefetchers start over on
 *    every row. g4-bench-kern -A, from DRAM, Zen 5: V.p of 4 heads at 256 / 512 / 1,024 cells
 *    72 / 71 / 150 -> 17 / 25 / 55 us;
 *  - dotx8_f16's rows, contiguous or not: its first lane-group pass touches every other cache
 *    line, which the prefetchers do not follow. K.q of 8 heads at 1,024 / 4,096 cells
 *    153-162 / 718-726 -> 80-94 / 389-399 us.
 * dotx_f16 over contiguous rows (K.q of 4 heads) streams without it: there it only costs. */
#define MMX_PF_ROWS 16
KINLINE void pf_row_ahead(const uint8_t *w, size_t wrb, size_t nb, int64_t r, int64_t row1) {
    if (r + MMX_PF_ROWS >= row1) return;
    const uint8_t *p = w + (size_t)(r + MMX_PF_ROWS) * wrb;
    for (size_t b = 0; b < nb; b += 64) _mm_prefetch((const char *)(p + b), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + nb - 1), _MM_HINT_T0);
}
#define MMX_PF_DRIVER(TM, DOTS) MMX_DRIVER_ROWS(1, TM, if (pf) pf_row_ahead(w, w_row_bytes, nb, r, row1);, DOTS)
#define MMX_CASE(FN, k) case k: FN(wr, xt, xs, n_in, k, o); break;
/* row W under the group's nt <= 8 columns into O */
#define MMX_CASEW(FN, k, W, O) case k: FN(W, xt, xs, n_in, k, O); break;
#define MMX_SWITCH8(W, O) switch (nt) { MMX_CASEW(dotx8_f16, 8, W, O) MMX_CASEW(dotx8_f16, 7, W, O) MMX_CASEW(dotx8_f16, 6, W, O) \
                                        MMX_CASEW(dotx8_f16, 5, W, O) MMX_CASEW(dotx_f16, 4, W, O) MMX_CASEW(dotx_f16, 3, W, O) \
                                        MMX_CASEW(dotx_f16, 2, W, O) default: dotx_f16(W, xt, xs, n_in, 1, O); }
#define MMXR_CASE(k) case k: dotxr_f16(wr, w_row_bytes, xt, xs, n_in, k, o); break;
#define DOTXR_MIN 1024 /* rows longer than this go DOTXR_RB at a time (dotxr_f16: columns past L1) */
static void mmx_f16(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, const void *restrict xq,
                    size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    const size_t nb = (size_t)n_in * 2;
    int pf = w_row_bytes > nb && n_in <= DOTXR_MIN; /* strided short rows: pf_row_ahead */
    if (n_in % KX_F16X_STEP == 0 && n_in <= DOTX8_MAX && n_tok >= 5) {
        pf = 1; /* dotx8_f16 */
#if KX_FW == 16
        if (n_tok >= 8) { /* two rows at a time under each group of 8 columns; any last row alone (below) */
            MMX_DRIVER_ROWS(2, 8, pf_row_ahead(w, w_row_bytes, nb, r, row1); pf_row_ahead(w, w_row_bytes, nb, r + 1, row1);,
                            if (nt == 8) dotx8r2_f16(wr, w_row_bytes, xt, xs, n_in, o);
                            else for (int r2 = 0; r2 < 2; r2++) MMX_SWITCH8(wr + (size_t)r2 * w_row_bytes, o + r2 * nt))
            row0 = r;
        }
#endif
        MMX_PF_DRIVER(8, MMX_SWITCH8(wr, o))
        return;
    }
    if (n_in > DOTXR_MIN) { /* long rows: DOTXR_RB at a time, any last ones alone (below) */
        MMX_DRIVER_RB(DOTXR_RB, 4, switch (nt) { MMXR_CASE(4) MMXR_CASE(3) MMXR_CASE(2)
                                                 default: dotxr_f16(wr, w_row_bytes, xt, xs, n_in, 1, o); })
        row0 = r;
    }
    MMX_PF_DRIVER(4, switch (nt) { MMX_CASE(dotx_f16, 4) MMX_CASE(dotx_f16, 3) MMX_CASE(dotx_f16, 2) default: dotx_f16(wr, xt, xs, n_in, 1, o); })
}
static void mmx_f16_tb(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, const void *restrict xq,
                       size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    if (n_in % KX_TB_K) { /* as dot_f16_tb: tinyBLAS needs k % 8 (AVX-512: 16) == 0, else vec_dot */
        mmx_f16(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, row0, row1, n_tok);
        return;
    }
    MMX_DRIVER(8, switch (nt) { MMX_CASE(dotx_f16_tb, 8) MMX_CASE(dotx_f16_tb, 7) MMX_CASE(dotx_f16_tb, 6) MMX_CASE(dotx_f16_tb, 5)
                                MMX_CASE(dotx_f16_tb, 4) MMX_CASE(dotx_f16_tb, 3) MMX_CASE(dotx_f16_tb, 2)
                                default: dotx_f16_tb(wr, xt, xs, n_in, 1, o); })
}
#if KX_FW == 16
/* matmul[F16]: mm_f16, with rows longer than DOTXR_MIN under 2 or more columns DOTXRH_RB at a
 * time (dotxrh_f16; any last rows by mm_f16) */
#define MMH_CASE(k) case k: dotxrh_f16(wr, w_row_bytes, xt, xq_row_bytes, n_in, k, o, pfb); break;
static void mm_f16h(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, const void *restrict xq,
                    size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    if (n_in > DOTXR_MIN && n_tok > 1) {
        const uint8_t *x = xq;
        float o[DOTXRH_RB * 4];
        int64_t r = row0;
        for (; r + DOTXRH_RB <= row1; r += DOTXRH_RB) {
            const uint8_t *wr = w + (size_t)r * w_row_bytes;
            for (int t = 0; t < n_tok; t += 4) {
                const uint8_t *xt = x + (size_t)t * xq_row_bytes;
                const int nt = n_tok - t < 4 ? n_tok - t : 4;
                const uint8_t *pfb = t == 0 && r + 2 * DOTXRH_RB <= row1 ? wr + DOTXRH_RB * w_row_bytes : NULL;
                switch (nt) { MMH_CASE(4) MMH_CASE(3) MMH_CASE(2) default: dotxrh_f16(wr, w_row_bytes, xt, xq_row_bytes, n_in, 1, o, pfb); }
                for (int rr = 0; rr < DOTXRH_RB; rr++)
                    for (int k = 0; k < nt; k++) y[(size_t)(t + k) * ldy + (size_t)(r + rr)] = o[rr * nt + k];
            }
        }
        row0 = r;
    }
    mm_f16(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, row0, row1, n_tok);
}
#define KX_MM_F16 mm_f16h
#define KX_VP_F16_MIN DOTXR_MIN
#else
#define KX_MM_F16 mm_f16
#define KX_VP_F16_MIN 0
#endif
static void round_f16_x86(float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
    for (; i < n; i++) x[i] = g4_f16_to_f32(g4_f32_to_f16(x[i]));
}

DEF_MM_B32(q8_0, 34)
DEF_MM_B32(q5_0, 22)
#if defined(KX_F512)
DEF_MM_B32Z(q8_0, 34)
DEF_MM_B32Z(q5_0, 22)
#endif
DEF_MM(q5_K)
#if defined(KX_F512)
#define dot_q5_K_zm dot_q5_K_z
DEF_MM(q5_K_zm)
/* the zmm table's Q5_K: decode by dot4_q5_K_z1 (four rows per pass, the rows B32Z_PF_LEAD
 * ahead prefetched as it goes: the hardware prefetchers lose the four row streams; Zen 5,
 * g4-bench-kern -1 -S LM, 1 thread, LM head from DRAM 18-21 -> 24-31 GB/s), else mm_q5_K_zm */
static void mm_q5_K_z(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,
                      const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    if (n_tok != 1) {
        mm_q5_K_zm(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, row0, row1, n_tok);
        return;
    }
    int64_t r = row0;
    for (; r + 4 <= row1; r += 4) {
        const uint8_t *wr = w + (size_t)r * w_row_bytes;
        dot4_q5_K_z1(wr, w_row_bytes, xq, n_in, y + r, (const char *)wr + B32Z_PF_LEAD(w_row_bytes));
    }
    if (r < row1) mm_q5_K_zm(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, r, row1, 1);
}
#endif
DEF_MM(q6_K_multi)
#if defined(KX_F512)
DEF_MM(q6_K_zt)
#define KX_Q6_MULTI_Z mm_q6_K_zt
#else
#define KX_Q6_MULTI_Z mm_q6_K_multi
#endif
#define DEF_MM_Q6_K(sfx, Z)                                                                             \
    static void mm_q6_K##sfx(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, \
                             const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0,    \
                             int64_t row1, int n_tok) {                                                   \
        if (n_tok > 1) {                                                                                 \
            (Z ? KX_Q6_MULTI_Z : mm_q6_K_multi)(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, row0, row1, n_tok); \
            return;                                                                                      \
        }                                                                                                \
        for (int64_t r = row0; r < row1; r++) y[r] = dot_q6_K_1(w + (size_t)r * w_row_bytes, xq, n_in, Z); \
    }
DEF_MM_Q6_K(, 0)
#if defined(KX_F512)
DEF_MM_Q6_K(_z, 1)
#endif
DEF_MM(q2_K)
#if defined(KX_F512) /* Q2_K repacked (weights of n_out % 8 == 0), vec_dot for the others */
DEF_MM(q2_K_rv)
DEF_MM(q2_K_rm)
#define KX_MM_Q2K mm_q2_K_rv
#define KX_GRP_Q2K [G4_TYPE_Q2_K] = mm_q2_K_rm,
#define KX_VD_Q2K [G4_TYPE_Q2_K] = mm_q2_K,
#else
#define KX_MM_Q2K mm_q2_K
#define KX_GRP_Q2K
#define KX_VD_Q2K [G4_TYPE_Q2_K] = NULL,
#endif
DEF_MM(q3_K)
DEF_MM(iq4_xs)
DEF_MM(q4_1)
DEF_MM(q5_1)

/* ==== Activation quantizers (bit-exact with quant_ref.c) ==== */

static void act_f32(const float *restrict x, void *restrict y, int64_t n) { memcpy(y, x, (size_t)n * 4); }

static void act_f16(const float *restrict x, void *restrict y, int64_t n) {
    uint8_t *o = y;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(o + 2 * i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) { const uint16_t h = g4_f32_to_f16(x[i]); memcpy(o + 2 * i, &h, 2); }
}

static void act_bf16(const float *restrict x, void *restrict y, int64_t n) {
    uint8_t *o = y;
    int64_t i = 0;
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i r7 = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), q = _mm256_set1_epi32(0x40);
    for (; i + 16 <= n; i += 16) {
        __m256i h[2];
        for (int k = 0; k < 2; k++) {
            const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(x + i + 8 * k));
            const __m256i isnan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
            const __m256i rne = _mm256_srli_epi32(
                _mm256_add_epi32(u, _mm256_add_epi32(r7, _mm256_and_si256(_mm256_srli_epi32(u, 16), one))), 16);
            const __m256i qn = _mm256_or_si256(_mm256_srli_epi32(u, 16), q);
            h[k] = _mm256_blendv_epi8(rne, qn, isnan);
        }
        /* 16 x u32 (values < 2^16) -> 16 x u16 in order */
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(h[0], h[1]), 0xd8);
        _mm256_storeu_si256((__m256i *)(void *)(o + 2 * i), p);
    }
    for (; i < n; i++) { const uint16_t b = g4_f32_to_bf16(x[i]); memcpy(o + 2 * i, &b, 2); }
}

/* x86 convention (ggml quantize_row_q8_0/q8_1 for AVX2): id = 127/amax, RNE */
KINLINE void act_q8(const float *restrict x, uint8_t *restrict y, int64_t n, const int q81) {
    const size_t bytes = q81 ? 36 : 34, off = q81 ? 4 : 2;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < n / 32; i++, x += 32, y += bytes) {
        __m256 v[4];
        KUNROLL
        for (int k = 0; k < 4; k++) v[k] = _mm256_loadu_ps(x + 8 * k);
        __m256 mx = _mm256_andnot_ps(sign, v[0]);
        for (int k = 1; k < 4; k++) mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, v[k]));
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(mx, 1), _mm256_castps256_ps128(mx));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        const uint16_t dh = (uint16_t)_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        memcpy(y, &dh, 2);
        const __m256 mul = _mm256_set1_ps(id);
        __m256i iv[4];
        KUNROLL
        for (int k = 0; k < 4; k++)
            iv[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        if (q81) {
            const int sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(iv[0], iv[1]), _mm256_add_epi32(iv[2], iv[3])));
            const uint16_t sh = (uint16_t)_cvtss_sh(d * (float)sum, _MM_FROUND_TO_NEAREST_INT);
            memcpy(y + 2, &sh, 2);
        }
        const __m256i p01 = _mm256_packs_epi32(iv[0], iv[1]), p23 = _mm256_packs_epi32(iv[2], iv[3]);
        const __m256i p = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p01, p23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(void *)(y + off), p);
    }
}
static void act_q8_0(const float *restrict x, void *restrict y, int64_t n) { act_q8(x, y, n, 0); }
static void act_q8_1(const float *restrict x, void *restrict y, int64_t n) { act_q8(x, y, n, 1); }

/* quantize_row_q8_K_ref: signed max (first on ties), iscale = -127/max, RNE, min(127) */
static void act_q8_K(const float *restrict x, void *restrict vy, int64_t n) {
    uint8_t *y = vy;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t i = 0; i < n / 256; i++, x += 256, y += 292) {
        __m256 mq[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
        for (int k = 0; k < 32; k++) mq[k & 3] = _mm256_max_ps(mq[k & 3], _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
        const __m256 mx = _mm256_max_ps(_mm256_max_ps(mq[0], mq[1]), _mm256_max_ps(mq[2], mq[3])); /* max: any order */
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(mx, 1), _mm256_castps256_ps128(mx));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (amax == 0.0f) {
            memset(y, 0, 292);
            continue;
        }
        float max = 0.0f; /* the first x[j] with |x[j]| == amax */
        const __m256 va = _mm256_set1_ps(amax);
        for (int k = 0; k < 32; k++) {
            const int mk = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), va, _CMP_EQ_OQ));
            if (mk) { max = x[8 * k + __builtin_ctz((unsigned)mk)]; break; }
        }
        const float iscale = -127.0f / max;
        const __m256 mul = _mm256_set1_ps(iscale);
        const __m256i lim = _mm256_set1_epi32(127);
        int8_t *qs = (int8_t *)(void *)(y + 4);
        for (int k = 0; k < 8; k++) {
            __m256i iv[4];
            for (int m = 0; m < 4; m++)
                iv[m] = _mm256_min_epi32(lim, _mm256_cvtps_epi32(_mm256_round_ps(
                    _mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8 * m), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
            const __m256i p = _mm256_permutevar8x32_epi32(
                _mm256_packs_epi16(_mm256_packs_epi32(iv[0], iv[1]), _mm256_packs_epi32(iv[2], iv[3])),
                _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)(void *)(qs + 32 * k), p);
            /* bsums of the two 16-element groups of these 32 codes */
            const __m256i s16 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), p), _mm256_set1_epi16(1));
            /* s16: 8 x i32, each the sum of 4 codes; lanes 0..3 -> group 2k, 4..7 -> group 2k+1 */
            const __m128i lo = _mm256_castsi256_si128(s16), hi = _mm256_extracti128_si256(s16, 1);
            const __m128i h = _mm_hadd_epi32(lo, hi);           /* [l0+l1, l2+l3, h0+h1, h2+h3] */
            const __m128i g = _mm_hadd_epi32(h, h);             /* [grp 2k, grp 2k+1, ...] */
            const int16_t b0 = (int16_t)_mm_cvtsi128_si32(g), b1 = (int16_t)_mm_extract_epi32(g, 1);
            memcpy(y + 260 + 4 * k, &b0, 2);
            memcpy(y + 262 + 4 * k, &b1, 2);
        }
        const float d = 1 / iscale;
        memcpy(y, &d, 4);
    }
}

/* ==== NEOX RoPE (kern.h rope_neox): kern_rope_neox_ref's fmaf as vfmsub / vfmadd (one
 * rounding each, as fmaf), 8 pairs a step; the (cos, sin) pairs split into a cos and a sin
 * vector ==== */
static void rope_neox_x86(float *x, const float *cs, int n_rot) {
    const int half = n_rot / 2;
    int j = 0;
    for (; j + 8 <= half; j += 8) {
        const __m256 a = _mm256_loadu_ps(cs + 2 * j), b = _mm256_loadu_ps(cs + 2 * j + 8);
        /* a = c0 s0 c1 s1 | c2 s2 c3 s3, b = c4 s4 c5 s5 | c6 s6 c7 s7 */
        const __m256i ord = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
        const __m256 c = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), ord);
        const __m256 sn = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)), ord);
        const __m256 x0 = _mm256_loadu_ps(x + j), x1 = _mm256_loadu_ps(x + j + half);
        const __m256 x1s = _mm256_mul_ps(x1, sn), x1c = _mm256_mul_ps(x1, c);
        _mm256_storeu_ps(x + j, _mm256_fmsub_ps(x0, c, x1s));
        _mm256_storeu_ps(x + j + half, _mm256_fmadd_ps(x0, sn, x1c));
    }
    kern_rope_neox_pairs(x, cs, half, j);
}

/* ==== GeGLU (kern.h g4_geglu_fn): F16C rounds to nearest even as g4_f32_to_f16 does ==== */
static void geglu_x86(float *restrict g, const float *restrict up, const uint16_t *restrict tab, int64_t n) {
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        uint16_t h[8];
        _mm_storeu_si128((__m128i *)(void *)h, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
        const __m256 t = _mm256_cvtph_ps(_mm_setr_epi16((short)tab[h[0]], (short)tab[h[1]], (short)tab[h[2]], (short)tab[h[3]],
                                                        (short)tab[h[4]], (short)tab[h[5]], (short)tab[h[6]], (short)tab[h[7]]));
        const __m256 v = _mm256_mul_ps(_mm256_blendv_ps(t, x, _mm256_cmp_ps(x, hi, _CMP_GE_OQ)), _mm256_loadu_ps(up + i));
        _mm256_storeu_ps(g + i, _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LE_OQ), v));
    }
    if (i < n) kern_geglu_ref(g + i, up + i, tab, n - i);
}

/* ==== Softmax exponentials (kern.h expsum): vec.h ggml_v_expf (AVX2 + FMA), op for op ====
 * Lane for lane kern_expf (kern_exp.c); lanes of a vector with |n| > 126 are redone by it.
 * The sums as kern_expsum_x86: 8-cell blocks aligned on the row, hsum_ps order
 * ((c0+c4)+(c2+c6))+((c1+c5)+(c3+c7)), each added to a double; masked cells are +0. The
 * AVX-512 table runs these too (llama.cpp's AVX-512 build has its own ggml_v_expf: issue 12). */
KINLINE __m256 v_expf(__m256 x, int *big) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1.0f))));
    const __m256 c = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), n), _mm256_set1_ps(126.0f), _CMP_GT_OQ);
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                                                     _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
                                     u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
    *big = _mm256_movemask_ps(c);
    return _mm256_fmadd_ps(j, k, k);
}
#if defined(KX_F512)
/* The AVX-512 build's ggml_v_expf (vec.h), op for op (kern_expf_z one lane), and its
 * ggml_vec_soft_max_f32 sums: 16-cell blocks aligned on the row, zred16 each, added to a
 * double (kern_expsum_z16); masked cells are +0. */
KINLINE __m512 v_expf512(__m512 x) {
    const __m512 r = _mm512_set1_ps(0x1.8p23f);
    const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
    const __m512 n = _mm512_sub_ps(z, r);
    const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
    const __mmask16 d = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192), _CMP_GT_OQ);
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 j = _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                                                     _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
                                     u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
    const __m512 res = _mm512_scalef_ps(j, n);
    if (d == 0) return res; /* kortestz */
    const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ), _mm512_set1_ps(INFINITY),
                                            _mm512_setzero_ps());
    return _mm512_mask_blend_ps(d, res, alt);
}
static double expsum_z16v(float *x, int64_t n, int64_t cell0) {
    double sum = 0.0;
    for (int64_t i = -(cell0 % 16); i < n; i += 16) {
        const int64_t q0 = i < 0 ? -i : 0, q1 = n - i < 16 ? n - i : 16; /* cells [q0, q1) of the block are in [0, n) */
        if (q0 == 0 && q1 == 16) {
            const __m512 e = v_expf512(_mm512_loadu_ps(x + i));
            _mm512_storeu_ps(x + i, e);
            sum += (double)zred16(e);
            continue;
        }
        float c[16] = { 0 };
        for (int64_t q = q0; q < q1; q++) c[q] = x[i + q];
        const __mmask16 m = (__mmask16)(((1u << q1) - 1u) & ~((1u << q0) - 1u));
        const __m512 e = _mm512_maskz_mov_ps(m, v_expf512(_mm512_loadu_ps(c)));
        _mm512_storeu_ps(c, e);
        for (int64_t q = q0; q < q1; q++) x[i + q] = c[q];
        sum += (double)zred16(e);
    }
    return sum;
}
#else
static double expsum_x86v(float *x, int64_t n, int64_t cell0) {
    double sum = 0.0;
    for (int64_t i = -(cell0 % 8); i < n; i += 8) {
        const int whole = i >= 0 && i + 8 <= n;
        float c[8]; /* the block; cells outside [0, n) are masked: they enter as 0, leave as +0 */
        if (whole) memcpy(c, x + i, sizeof c);
        else for (int q = 0; q < 8; q++) c[q] = i + q >= 0 && i + q < n ? x[i + q] : 0.0f;
        int big;
        const __m256 v = v_expf(_mm256_loadu_ps(c), &big);
        float e[8];
        _mm256_storeu_ps(e, v);
        if (big) /* rare: a score below the row max by more than 87 */
            for (int q = 0; q < 8; q++) if (big >> q & 1) e[q] = kern_expf(c[q]);
        if (whole) memcpy(x + i, e, sizeof e);
        else
            for (int q = 0; q < 8; q++) {
                if (i + q >= 0 && i + q < n) x[i + q] = e[q];
                else e[q] = 0.0f;
            }
        sum += (double)hsum_ps(_mm256_loadu_ps(e));
    }
    return sum;
}
#endif

/* ==== The softmax's max and scale passes (kern.h sub_max, scale), in KX_FW lanes ==== */
static float sub_max_x86(float *x, int64_t n) {
    KXV_T v = KXV(SET1)(-INFINITY); /* lane maxima: vmaxps(a, b) is a > b ? a : b, as the scalar loop */
    int64_t i = 0;
    for (; i + KX_FW <= n; i += KX_FW) v = KXV(MAX)(KXV(LDF)(x + i), v);
    float m = -INFINITY, l[KX_FW];
    KXV(STF)(l, v);
    for (int q = 0; q < KX_FW; q++) m = l[q] > m ? l[q] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    /* the scalar loop keeps the first of equal values: a max of zero takes the first zero's sign */
    if (m == 0.0f)
        for (i = 0; i < n; i++)
            if (x[i] == 0.0f) { m = x[i]; break; }
    const KXV_T mv = KXV(SET1)(m);
    for (i = 0; i + KX_FW <= n; i += KX_FW) KXV(STF)(x + i, KXV(SUB)(KXV(LDF)(x + i), mv));
    for (; i < n; i++) x[i] -= m;
    return m;
}
static void scale_x86(float *x, int64_t n, float s) {
    const KXV_T sv = KXV(SET1)(s);
    int64_t i = 0;
    for (; i + KX_FW <= n; i += KX_FW) KXV(STF)(x + i, KXV(MUL)(KXV(LDF)(x + i), sv));
    for (; i < n; i++) x[i] *= s;
}

/* ==== Table ==== */

/* ==== The soft-cap's tanh: kern_tanhf_fd (kern_tanh.c) on the table's KX_FW lanes ====
 * Every branch of the scalar sequence is evaluated and each lane picks its own (AVX-512 by
 * mask registers, AVX2 by blends on compare results): the same IEEE single operations in the
 * same order, so the same bits. Blocks with a non-finite lane go through the scalar function.
 * The magnitudes' bit patterns (sign cleared) compare as signed integers. KT(op) is the
 * width's intrinsic where the names agree; KT_* the ones that differ. */
#if defined(KX_F512)
#define KT(op) _mm512_##op
typedef __m512 kt_v;
typedef __m512i kt_i;
typedef __mmask16 kt_m;
#define KT_AND _mm512_and_si512
#define KT_XOR _mm512_xor_si512
#define KT_ASI _mm512_castps_si512
#define KT_APS _mm512_castsi512_ps
#define KT_GT(a, b) _mm512_cmpgt_epi32_mask(a, b)
#define KT_EQ(a, b) _mm512_cmpeq_epi32_mask(a, b)
#define KT_LT_PS(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define KT_OR_M(a, b) ((kt_m)((a) | (b)))
#define KT_SEL(a, b, m) _mm512_mask_mov_ps(a, m, b)      /* b in the lanes of m, else a */
#define KT_SELI(a, b, m) _mm512_mask_mov_epi32(a, m, b)
#define KT_NEG(i) _mm512_movepi32_mask(i)                /* the lanes with the sign bit set */
#define KT_ANY(m) ((m) != 0)
#else
#define KT(op) _mm256_##op
typedef __m256 kt_v;
typedef __m256i kt_i;
typedef __m256i kt_m;
#define KT_AND _mm256_and_si256
#define KT_XOR _mm256_xor_si256
#define KT_ASI _mm256_castps_si256
#define KT_APS _mm256_castsi256_ps
#define KT_GT(a, b) _mm256_cmpgt_epi32(a, b)
#define KT_EQ(a, b) _mm256_cmpeq_epi32(a, b)
#define KT_LT_PS(a, b) _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_LT_OQ))
#define KT_OR_M(a, b) _mm256_or_si256(a, b)
#define KT_SEL(a, b, m) _mm256_blendv_ps(a, b, _mm256_castsi256_ps(m))
#define KT_SELI(a, b, m) _mm256_blendv_epi8(a, b, m)
#define KT_NEG(i) _mm256_srai_epi32(i, 31)
#define KT_ANY(m) (!_mm256_testz_si256(m, m))
#endif
KINLINE kt_v kt1(float f) { return KT(set1_ps)(f); }
KINLINE kt_i kti(int v) { return KT(set1_epi32)(v); }
KINLINE kt_v expm1f_fd_v(kt_v a) {
    const kt_i ia = KT_ASI(a);
    const kt_i hx = KT_AND(ia, kti(0x7fffffff));
    const kt_m neg = KT_NEG(ia);
    const kt_m red = KT_GT(hx, kti(0x3eb17218));
    const kt_m tiny = KT_GT(kti(0x33000000), hx);
    const kt_m near = KT_GT(kti(0x3f851592), hx);
    /* k = +-1 */
    const kt_v hi1 = KT_SEL(KT(sub_ps)(a, kt1(6.9313812256e-01f)), KT(add_ps)(a, kt1(6.9313812256e-01f)), neg);
    const kt_v lo1 = KT_SEL(kt1(9.0580006145e-06f), kt1(-9.0580006145e-06f), neg);
    const kt_i k1 = KT_SELI(kti(1), kti(-1), neg);
    /* k = trunc(invln2 a +- 0.5) */
    const kt_v kf = KT(add_ps)(KT(mul_ps)(kt1(1.4426950216e+00f), a), KT_SEL(kt1(0.5f), kt1(-0.5f), neg));
    const kt_i kn = KT(cvttps_epi32)(kf);
    const kt_v tk = KT(cvtepi32_ps)(kn);
    const kt_v hin = KT(sub_ps)(a, KT(mul_ps)(tk, kt1(6.9313812256e-01f)));
    const kt_v lon = KT(mul_ps)(tk, kt1(9.0580006145e-06f));
    const kt_v hi = KT_SEL(hin, hi1, near), lo = KT_SEL(lon, lo1, near);
    const kt_i k = KT_SELI(kti(0), KT_SELI(kn, k1, near), red);
    const kt_v xr = KT(sub_ps)(hi, lo);
    const kt_v x = KT_SEL(a, xr, red);
    const kt_v c = KT(sub_ps)(KT(sub_ps)(hi, xr), lo);
    const kt_v hfx = KT(mul_ps)(kt1(0.5f), x);
    const kt_v hxs = KT(mul_ps)(x, hfx);
    kt_v r1 = KT(add_ps)(kt1(4.0082177293e-06f), KT(mul_ps)(hxs, kt1(-2.0109921195e-07f)));
    r1 = KT(add_ps)(kt1(-7.9365076090e-05f), KT(mul_ps)(hxs, r1));
    r1 = KT(add_ps)(kt1(1.5873016091e-03f), KT(mul_ps)(hxs, r1));
    r1 = KT(add_ps)(kt1(-3.3333335072e-02f), KT(mul_ps)(hxs, r1));
    r1 = KT(add_ps)(kt1(1.0f), KT(mul_ps)(hxs, r1));
    const kt_v t = KT(sub_ps)(kt1(3.0f), KT(mul_ps)(r1, hfx));
    const kt_v e = KT(mul_ps)(hxs, KT(div_ps)(KT(sub_ps)(r1, t), KT(sub_ps)(kt1(6.0f), KT(mul_ps)(x, t))));
    const kt_v res0 = KT(sub_ps)(x, KT(sub_ps)(KT(mul_ps)(x, e), hxs));
    const kt_v e2 = KT(sub_ps)(KT(sub_ps)(KT(mul_ps)(x, KT(sub_ps)(e, c)), c), hxs);
    const kt_v twopk = KT_APS(KT(slli_epi32)(KT(add_epi32)(k, kti(0x7f)), 23));
    const kt_v rm1 = KT(sub_ps)(KT(mul_ps)(kt1(0.5f), KT(sub_ps)(x, e2)), kt1(0.5f));
    const kt_v rp1a = KT(mul_ps)(kt1(-2.0f), KT(sub_ps)(e2, KT(add_ps)(x, kt1(0.5f))));
    const kt_v rp1b = KT(add_ps)(kt1(1.0f), KT(mul_ps)(kt1(2.0f), KT(sub_ps)(x, e2)));
    const kt_v rp1 = KT_SEL(rp1b, rp1a, KT_LT_PS(x, kt1(-0.25f)));
    const kt_v rbig = KT(sub_ps)(KT(mul_ps)(KT(sub_ps)(kt1(1.0f), KT(sub_ps)(e2, x)), twopk), kt1(1.0f));
    /* 2 <= k < 23: t = 1 - 2^-k; 23 <= k <= 56: t = 2^-k */
    const kt_v tlo = KT_APS(KT(sub_epi32)(kti(0x3f800000), KT(srlv_epi32)(kti(0x1000000), k)));
    const kt_v rlo = KT(mul_ps)(KT(sub_ps)(tlo, KT(sub_ps)(e2, x)), twopk);
    const kt_v thi = KT_APS(KT(slli_epi32)(KT(sub_epi32)(kti(0x7f), k), 23));
    const kt_v rhi = KT(mul_ps)(KT(add_ps)(KT(sub_ps)(x, KT(add_ps)(e2, thi)), kt1(1.0f)), twopk);
    const kt_m kbig = KT_OR_M(KT_GT(kti(-1), k), KT_GT(k, kti(56)));
    kt_v r = KT_SEL(rhi, rlo, KT_GT(kti(23), k));
    r = KT_SEL(r, rbig, kbig);
    r = KT_SEL(r, rp1, KT_EQ(k, kti(1)));
    r = KT_SEL(r, rm1, KT_EQ(k, kti(-1)));
    r = KT_SEL(r, res0, KT_EQ(k, kti(0)));
    return KT_SEL(r, a, tiny);
}
KINLINE kt_v tanhf_fd_v(kt_v v) {
    const kt_i jx = KT_ASI(v);
    const kt_i ix = KT_AND(jx, kti(0x7fffffff));
    const kt_v ax = KT_APS(ix);
    const kt_m ge1 = KT_GT(ix, kti(0x3f7fffff));
    const kt_v a = KT_SEL(KT(mul_ps)(kt1(-2.0f), ax), KT(add_ps)(ax, ax), ge1);
    const kt_v t = expm1f_fd_v(a);
    const kt_v zp = KT(sub_ps)(kt1(1.0f), KT(div_ps)(kt1(2.0f), KT(add_ps)(t, kt1(2.0f))));
    const kt_v zm = KT(div_ps)(KT_APS(KT_XOR(KT_ASI(t), kti((int)0x80000000u))), KT(add_ps)(t, kt1(2.0f)));
    kt_v z = KT_SEL(zm, zp, ge1);
    z = KT_SEL(z, KT(sub_ps)(kt1(1.0f), kt1(1.0e-30f)), KT_GT(ix, kti(0x41afffff)));
    z = KT_APS(KT_XOR(KT_ASI(z), KT_AND(jx, kti((int)0x80000000u))));
    return KT_SEL(z, KT(mul_ps)(v, KT(add_ps)(kt1(1.0f), v)), KT_GT(kti(0x24000000), ix));
}
/* y = c * tanhf(y * (1/c)) */
static void softcap_x86(float *y, int64_t n, float c) {
    const float inv = 1.0f / c;
    int64_t i = 0;
    for (; i + KX_FW <= n; i += KX_FW) {
        const kt_v v = KT(mul_ps)(KT(loadu_ps)(y + i), kt1(inv));
        if (KT_ANY(KT_GT(KT_AND(KT_ASI(v), kti(0x7fffffff)), kti(0x7f7fffff)))) { kern_softcap_fd(y + i, KX_FW, c); continue; }
        KT(storeu_ps)(y + i, KT(mul_ps)(tanhf_fd_v(v), kt1(c)));
    }
    kern_softcap_fd(y + i, n - i, c);
}
#if defined(KX_F512)
#define KX_EXPSUM expsum_z16v
#define KX_VEC_W 16
#else
#define KX_EXPSUM expsum_x86v
#define KX_VEC_W 8
#endif
/* Q4_K stored repacked: the zmm tables only (kern_x86_rq4k.h) */
#define KX_RQ_REPACK NULL
#define mm_q4_K_rq1 NULL
#define mm_q4_K_rqg NULL
#define KX_RQ_REPACK_z rq16_repack
#define KX_RQ6_REPACK NULL
#define mm_q6_K_rq NULL
#define KX_RQ6_REPACK_z rq6_repack
#define KX_RQB_Q8_0 NULL
#define KX_RQB_Q5_0 NULL
#define mm_q8_0_rq NULL
#define mm_q5_0_rq NULL
#define KX_RQB_Q4_0 NULL
#define mm_q4_0_rq NULL
#define KX_RQB_Q8_0_z rqb_repack_q8_0
#define KX_RQB_Q5_0_z rqb_repack_q5_0
#define KX_RQB_Q4_0_z rqb_repack_q4_0
#define KX_RQ5 NULL
#define mm_q5_K_rq NULL
#define KX_RQ5_z rq5_repack
/* Z: the integer kernels' suffix (empty: the ymm bodies, _z: the zmm kernels and tiles); Z6 the
 * same for Q6_K alone */
#define KX_TABLE(MM_BF16, MM_BF16_GRP, TB_K_BF16, Z, Z6) {                                  \
    .name = KX_NAME,                                                                        \
    .geglu = geglu_x86,                                                                     \
    .pick = kern_pick_x86,                                                                  \
    .matmul_vd = { KX_VD_Q2K },                                                             \
    .expsum = KX_EXPSUM,                                                                    \
    .sub_max = sub_max_x86,                                                                 \
    .scale = scale_x86,                                                                     \
    .rope_neox = rope_neox_x86,                                                             \
    .softcap = softcap_x86,                                                                  \
    .softcap_ref = kern_softcap_fd,                                                          \
    .vec_w = KX_VEC_W,                                                                      \
    .matmul = {                                                                             \
        [G4_TYPE_F32] = mm_f32, [G4_TYPE_F16] = KX_MM_F16, [G4_TYPE_BF16] = MM_BF16,        \
        [G4_TYPE_Q8_0] = mm_q8_0##Z, [G4_TYPE_Q4_0] = mm_q4_0##Z, [G4_TYPE_Q5_0] = mm_q5_0##Z, \
        [G4_TYPE_IQ4_NL] = mm_iq4_nl, [G4_TYPE_Q4_K] = mm_q4_K##Z, [G4_TYPE_Q5_K] = mm_q5_K##Z, \
        [G4_TYPE_Q6_K] = mm_q6_K##Z6, [G4_TYPE_Q2_K] = KX_MM_Q2K, [G4_TYPE_Q3_K] = mm_q3_K,   \
        [G4_TYPE_IQ4_XS] = mm_iq4_xs, [G4_TYPE_Q4_1] = mm_q4_1, [G4_TYPE_Q5_1] = mm_q5_1,   \
    },                                                                                      \
    .matmul_grp = {                                                                         \
        [G4_TYPE_F32] = mm_f32_tb, [G4_TYPE_F16] = mm_f16_tb, [G4_TYPE_BF16] = MM_BF16_GRP, \
        [G4_TYPE_Q4_K] = mm_q4_K_grp##Z, [G4_TYPE_IQ4_XS] = mm_iq4_xs_p, KX_GRP_Q2K                  \
    },                                                                                      \
    .quantize_act = {                                                                       \
        [G4_TYPE_F32] = act_f32, [G4_TYPE_F16] = act_f16, [G4_TYPE_BF16] = act_bf16,        \
        [G4_TYPE_Q8_0] = act_q8_0, [G4_TYPE_Q8_1] = act_q8_1, [G4_TYPE_Q8_K] = act_q8_K,    \
    },                                                                                      \
    .matmul_f16x = { mmx_f16, mmx_f16_tb }, .vp_f16_min = KX_VP_F16_MIN,                    \
    .repack_q4_K = KX_RQ_REPACK##Z, .matmul_rq = { mm_q4_K_rq1##Z, mm_q4_K_rqg##Z },         \
    .repack_q6_K = KX_RQ6_REPACK##Z6, .matmul_rq6 = mm_q6_K_rq##Z6,                           \
    .repack_b32 = { [G4_TYPE_Q8_0] = KX_RQB_Q8_0##Z, [G4_TYPE_Q5_0] = KX_RQB_Q5_0##Z,       \
                    [G4_TYPE_Q4_0] = KX_RQB_Q4_0##Z, [G4_TYPE_Q5_K] = KX_RQ5##Z },          \
    .matmul_rqb = { [G4_TYPE_Q8_0] = mm_q8_0_rq##Z, [G4_TYPE_Q5_0] = mm_q5_0_rq##Z,         \
                    [G4_TYPE_Q4_0] = mm_q4_0_rq##Z, [G4_TYPE_Q5_K] = mm_q5_K_rq##Z },       \
    .round_f16 = round_f16_x86,                                                             \
    .tb_k_bf16 = TB_K_BF16,                                                                 \
}
static const g4_kern TABLE = KX_TABLE(mm_bf16, mm_bf16_tb, 0, , );
#if defined(KX_F512)
/* TABLE with the zmm integer kernels (TABLE_Z, TABLE_ZH below) on an AVX-512 CPU without AVX512_BF16 */
static const g4_kern TABLE_Z0 = KX_TABLE(mm_bf16, mm_bf16_tb, 0, _z, _z);
static const g4_kern TABLE_ZH0 = KX_TABLE(mm_bf16, mm_bf16_tb, 0, _z, );
#endif

#if defined(KX_F512) && defined(__AVX512BF16__)
/* The same table for CPUs with AVX512_BF16 (the zen4 class of llama.cpp's builds): BF16 by
 * vdpbf16ps, tinyBLAS taking BF16 in k steps of 32 */
static const g4_kern TABLE_BF16 = KX_TABLE(mm_bf16z, mm_bf16z_tb, 32, , );
/* TABLE_BF16 with the zmm integer kernels (Q4_K decode and prompt tiles, Q4_0 tile, Q5_K, Q6_K
 * decode) and the two-row Q8_0 / Q5_0 decode: the same float steps, so the same bits. Chosen
 * on CPUs with AVX-VNNI too (Zen 5, Sapphire Rapids and later: 512-bit operations at full
 * width; measured on Zen 5) */
static const g4_kern TABLE_Z = KX_TABLE(mm_bf16z, mm_bf16z_tb, 32, _z, _z);
/* TABLE_Z with Q6_K by the ymm kernels, not its tiles: the AVX-512 VNNI CPUs without AVX-VNNI
 * (Zen 4, which runs 512-bit operations in two halves; kern_cpu.zmm). Zen 4, E2B-shaped Q4_K_M
 * file, g4 bench tg64 on 1 thread, alternating: TABLE_BF16 12.2 / 13.6 t/s, TABLE_Z 11.4 / 12.2,
 * this 17.0 / 17.3; pp256 91 -> 173. The Q6_K tiles read an LM head from DRAM at 11.4 GB/s there
 * (the ymm kernel 28.5, the zmm row-major one 24.6; the tiles 45 GB/s from L3): a super-block's
 * lines are read 512 bytes apart, which Zen 4's prefetchers do not follow */
static const g4_kern TABLE_ZH = KX_TABLE(mm_bf16z, mm_bf16z_tb, 32, _z, );
const g4_kern *KX(kern_table)(void) {
    kern_cpu c;
    kern_cpu_detect(&c);
    if (!c.avx512bf16) return c.zmm == KERN_ZMM_ALL ? &TABLE_Z0 : c.zmm == KERN_ZMM_NOQ6 ? &TABLE_ZH0 : &TABLE;
    return c.zmm == KERN_ZMM_ALL ? &TABLE_Z : c.zmm == KERN_ZMM_NOQ6 ? &TABLE_ZH : &TABLE_BF16;
}
#elif defined(KX_F512)
const g4_kern *KX(kern_table)(void) {
    kern_cpu c;
    kern_cpu_detect(&c);
    return c.zmm == KERN_ZMM_ALL ? &TABLE_Z0 : c.zmm == KERN_ZMM_NOQ6 ? &TABLE_ZH0 : &TABLE;
}
#else
const g4_kern *KX(kern_table)(void) { return &TABLE; }
#endif
