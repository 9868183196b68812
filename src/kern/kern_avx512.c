/* kern_avx512.c - AVX-512 (F/BW/VL/DQ + VNNI + BF16) kernel table (x86-64 builds; chosen at
 * run time only when CPUID reports every one of these and XGETBV shows the OS saves zmm
 * state). The only file built with -mavx512*.
 *
 * Bodies, contract and accuracy: kern_x86_tmpl.h (shared with kern_avx2.c). Here:
 * - Q4_K, Q5_K, Q6_K use zmm kernels (KX_ZMM): 64 codes per vector in element order, so
 *   one 64-byte activation load serves 64 weights; vpmaddubsw + vpmaddwd by a vpermw-built
 *   scale vector (exact: codes <= 63, pairs < 2^15); one int32 -> f32 step per block;
 * - Q8_0 and Q4_0 use zmm vpdpbusd (AVX512-VNNI) on two blocks per vector, with unsigned
 *   codes and an offset term (sum of activations, also by vpdpbusd);
 * - Q5_0 and IQ4_NL use the shared ymm bodies with vpdpbusd (256-bit form) for u8 x s8.
 *
 * Test-only: -DG4_SIMDE_AVX512 builds this file against SIMDe's portable AVX-512 (package
 * libsimde-dev) so its logic can be checked on CPUs without AVX-512 (tests/sh/avx512_simde.sh).
 */
#if defined(G4_SIMDE_AVX512)
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#undef _mm512_madd_epi16 /* SIMDe 0.7.4 aliases the masked form under this name */
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16(a, b)
/* not in SIMDe 0.7.4: built from two ymm conversions */
static inline __m512 g4_simde_cvtepi32_ps(__m512i v) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_cvtepi32_ps(_mm512_castsi512_si256(v))),
                              _mm256_cvtepi32_ps(_mm512_extracti64x4_epi64(v, 1)), 1);
}
#define _mm512_cvtepi32_ps(v) g4_simde_cvtepi32_ps(v)
#endif

#define KX(name) name##_avx512
#define KX_NAME "avx512"
#define KX_ZMM 1
#define KX_DOT_U8S8(acc, u, s) ((acc) = _mm256_dpbusd_epi32((acc), (u), (s)))

#include "kern_x86_tmpl.h"
