/* kern_avx2.c - AVX2 + FMA + F16C kernel table (x86-64 builds; chosen at run time when
 * CPUID and XGETBV say the CPU and OS support it). The only file built with -mavx2 -mfma
 * -mf16c. Bodies, contract and accuracy: kern_x86_tmpl.h (shared with kern_avx512.c).
 * Integer dots: vpmaddubsw (u8 x s8 -> i16 pairs) + vpmaddwd; exact for the code ranges
 * used (|u| <= 128, |s| <= 127).
 */
#define KX(name) name##_avx2
#define KX_NAME "avx2"
#ifndef KX_PF_DIST
#define KX_PF_DIST 4096 /* weight prefetch distance for the K-quant matvec (kern_x86_tmpl.h); 1024 -> 4096: +6-9% cold Q4_K/Q6_K matvec on the Zen 1 host */
#endif
#define KX_DOT_U8S8(acc, u, s) \
    ((acc) = _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1))))

#include "kern_x86_tmpl.h"
