/* kern_avx512.c - AVX-512 (F/BW/VL/DQ + VNNI + BF16) kernel table (x86-64 builds; chosen at
 * run time only when CPUID reports every one of these and XGETBV shows the OS saves zmm
 * state). The only file built with -mavx512*. Same bodies as kern_avx2.c (kern_x86_tmpl.h),
 * on ymm vectors with the 32 EVEX registers, and vpdpbusd (AVX512-VNNI, 256-bit form) for the
 * u8 x s8 block dots: exact int32 accumulation, no int16 intermediate.
 * Contract and accuracy: kern_x86_tmpl.h.
 */
#define KX(name) name##_avx512
#define KX_NAME "avx512"
#define KX_DOT_U8S8(acc, u, s) ((acc) = _mm256_dpbusd_epi32((acc), (u), (s)))

#include "kern_x86_tmpl.h"
