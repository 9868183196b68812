/* kern_avx512.c - AVX-512 (F/BW/VL/DQ + VNNI) kernel table (x86-64 builds; chosen at run time
 * only when CPUID reports every one of these and XGETBV shows the OS saves zmm state). The
 * only file built with -mavx512* (-mavx512bf16 too: its instructions run only in the BF16
 * kernels of the table kern_table_avx512 returns on CPUs with AVX512_BF16).
 *
 * It follows llama.cpp's AVX-512 CPU libraries (zen4 on a Zen 4, skylakex ... sapphirerapids
 * elsewhere), which differ from its haswell library where their code differs:
 * - the quantized types: the same kernels and float order as the AVX2 table (those builds
 *   compile ggml's AVX2 vec_dot and repacked kernels for them: checked against zen4 by
 *   g4-ggml-kern), with VNNI's vpdpbusd for the exact u8 x s8 dots;
 * - F32 and F16: ggml_vec_dot in 4 x 16 lanes and tinyBLAS in 16 lanes (KX_F512);
 * - the softmax: the AVX-512 ggml_v_expf (vscalefps) over 16-cell blocks;
 * - Q2_K: the order of llama.cpp's AVX-512-only q2_K_8x8 repack;
 * - BF16: vdpbf16ps on CPUs with AVX512_BF16 (zen4, cooperlake, sapphirerapids). Not followed
 *   yet: the AVX512F BF16 order of skylakex / icelake (CPUs without it run the AVX2 bodies).
 * Bodies, contract and accuracy: kern_x86_tmpl.h (shared with kern_avx2.c).
 *
 * Test-only: -DG4_SIMDE_AVX512 builds this file against SIMDe's portable AVX-512 (package
 * libsimde-dev) so its logic can be checked on CPUs without AVX-512 (tests/sh/avx512_simde.sh).
 */
#if defined(G4_SIMDE_AVX512)
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
/* not in SIMDe 0.7.4: two F16C conversions */
static inline __m512 g4_simde_cvtph_ps(__m256i h) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_cvtph_ps(_mm256_castsi256_si128(h))),
                              _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), 1);
}
#define _mm512_cvtph_ps(h) g4_simde_cvtph_ps(h)
/* nor these conversions: the two halves by the ymm ones (the same rounding per lane) */
static inline __m512 g4_simde_cvtepi32_ps(__m512i v) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_cvtepi32_ps(_mm512_castsi512_si256(v))),
                              _mm256_cvtepi32_ps(_mm512_extracti64x4_epi64(v, 1)), 1);
}
#define _mm512_cvtepi32_ps(v) g4_simde_cvtepi32_ps(v)
static inline __m512i g4_simde_cvttps_epi32(__m512 v) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_cvttps_epi32(_mm512_castps512_ps256(v))),
                              _mm256_cvttps_epi32(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), 1);
}
#define _mm512_cvttps_epi32(v) g4_simde_cvttps_epi32(v)
/* SIMDe 0.7.4's vscalefps does not round subnormal results as the instruction does: a * 2^floor(b)
 * by ldexpf, rounded once (b clamped: ldexpf saturates the same way) */
#include <math.h>
static inline __m512 g4_simde_scalef_ps(__m512 a, __m512 b) {
    float x[16], y[16];
    _mm512_storeu_ps(x, a);
    _mm512_storeu_ps(y, b);
    for (int i = 0; i < 16; i++) {
        const float e = y[i] != y[i] ? 0.0f : fminf(fmaxf(floorf(y[i]), -1000.0f), 1000.0f);
        x[i] = y[i] != y[i] ? y[i] : ldexpf(x[i], (int)e);
    }
    return _mm512_loadu_ps(x);
}
#undef _mm512_scalef_ps
#define _mm512_scalef_ps(a, b) g4_simde_scalef_ps(a, b)
/* nor _mm512_shuffle_f32x4: the integer form moves the same 128-bit lanes */
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4(a, b, imm) \
    _mm512_castsi512_ps(_mm512_shuffle_i32x4(_mm512_castps_si512(a), _mm512_castps_si512(b), imm))
/* SIMDe 0.7.4's native alias of _mm512_madd_epi16 takes the masked form's four arguments */
#undef _mm512_madd_epi16
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16(a, b)
#endif

#define KX(name) name##_avx512
#define KX_NAME "avx512"
#define KX_F512 1
#ifndef KX_PF_DIST
#define KX_PF_DIST 4096 /* as the AVX2 table's */
#endif
/* Weight prefetches non-temporal (every kernel's weight stream; the attention's cache rows keep
 * T0): weights are read once per token. Zen 5, alternating A/B: E2B Q4_K_M 1-thread tg32 (Q6_K
 * and repacked Q4_K) 16.42 against 15.85 t/s mean of 9 pairs; 26B-A4B (Q5_0 / Q8_0 experts too)
 * 1-thread tg32 25.5 against 23.9, 2-thread 46.5 against 45.9 (3 pairs); prefill unchanged */
#ifndef KX_PF_HINT
#define KX_PF_HINT _MM_HINT_NTA
#endif
#define KX_DOT_U8S8(acc, u, s) ((acc) = _mm256_dpbusd_epi32((acc), (u), (s)))

#include "kern_x86_tmpl.h"
