/* kern_avx512.c - AVX-512 (F/BW/VL/DQ + VNNI) kernel table (x86-64 builds; chosen at run time
 * only when CPUID reports every one of these and XGETBV shows the OS saves zmm state). The
 * only file built with -mavx512*.
 *
 * It follows llama.cpp's AVX-512 CPU libraries (zen4 on a Zen 4, skylakex ... sapphirerapids
 * elsewhere), which differ from its haswell library where their code differs:
 * - the quantized types: the same kernels and float order as the AVX2 table (those builds
 *   compile ggml's AVX2 vec_dot and repacked kernels for them: checked against zen4 by
 *   g4-ggml-kern), with VNNI's vpdpbusd for the exact u8 x s8 dots;
 * - F32 and F16: ggml_vec_dot in 4 x 16 lanes and tinyBLAS in 16 lanes (KX_F512);
 * - the softmax: the AVX-512 ggml_v_expf (vscalefps) over 16-cell blocks.
 * Not followed yet: BF16 (zen4 multiplies it with vdpbf16ps; the AVX2 bodies run here).
 * Bodies, contract and accuracy: kern_x86_tmpl.h (shared with kern_avx2.c).
 *
 * Test-only: -DG4_SIMDE_AVX512 builds this file against SIMDe's portable AVX-512 (package
 * libsimde-dev) so its logic can be checked on CPUs without AVX-512 (tests/sh/avx512_simde.sh).
 */
#if defined(G4_SIMDE_AVX512)
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#endif

#define KX(name) name##_avx512
#define KX_NAME "avx512"
#define KX_F512 1
#ifndef KX_PF_DIST
#define KX_PF_DIST 4096 /* as the AVX2 table's */
#endif
#define KX_DOT_U8S8(acc, u, s) ((acc) = _mm256_dpbusd_epi32((acc), (u), (s)))

#include "kern_x86_tmpl.h"
