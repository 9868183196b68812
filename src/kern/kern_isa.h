/* kern_isa.h - private glue between cpu.c and the per-ISA kernel files.
 *
 * Each kernel file exports one accessor returning its static const table; the scalar file
 * also exports its per-type matmul entries so that an ISA table can fall back to them for
 * the types it does not accelerate (the entry then runs the reference dot per row).
 */
#ifndef G4_KERN_ISA_H
#define G4_KERN_ISA_H

#include "kern.h"

/* CPU features that decide which tables can run (filled by kern_cpu_detect, cpu.c) */
typedef struct kern_cpu {
    int avx2, fma, f16c;                     /* x86: AVX2 table needs all three + OS AVX state */
    int avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16; /* + OS zmm state */
    int avxvnni;                             /* x86: AVX-VNNI (VEX), CPUID 7.1 EAX bit 4 */
    int zmm;                                 /* x86: the AVX-512 table's integer kernels,
                                              * KERN_ZMM_* below (G4_ZMM=0 / h / 1 overrides,
                                              * for tests) */
    int neon, dotprod, fp16, sve, i8mm;      /* aarch64 */
} kern_cpu;

/* kern_cpu.zmm */
enum {
    KERN_ZMM_OFF = 0, /* the ymm bodies (G4_ZMM=0) */
    KERN_ZMM_NOQ6,    /* zmm kernels and tiles but Q6_K's: AVX-512 VNNI without AVX-VNNI, Zen 4's
                       * half-width cores (G4_ZMM=h) */
    KERN_ZMM_ALL,     /* every zmm kernel: with AVX-VNNI, full-width 512-bit cores, Zen 5 (G4_ZMM=1) */
};

void kern_cpu_detect(kern_cpu *c);

const g4_kern *kern_table_scalar(void);
const g4_kern *kern_table_avx2(void);   /* kern_avx2.c (x86-64 builds only) */
const g4_kern *kern_table_avx512(void); /* kern_avx512.c (x86-64 builds only) */
const g4_kern *kern_table_neon(void);   /* kern_neon.c (aarch64 builds only) */
const g4_kern *kern_table_i8mm(void);   /* kern_i8mm.c (aarch64 builds only) */

/* Scalar matmul entries by weight type (kern_scalar.c): reference vec_dot per row x token. */
#define KERN_REF_MM(t) \
    void kern_ref_mm_##t(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, \
                         const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0,       \
                         int64_t row1, int n_tok);
KERN_REF_MM(f32) KERN_REF_MM(f16) KERN_REF_MM(bf16)
KERN_REF_MM(q4_0) KERN_REF_MM(q4_1) KERN_REF_MM(q5_0) KERN_REF_MM(q5_1) KERN_REF_MM(q8_0)
KERN_REF_MM(iq4_nl) KERN_REF_MM(q2_K) KERN_REF_MM(q3_K) KERN_REF_MM(q4_K) KERN_REF_MM(q5_K)
KERN_REF_MM(q6_K) KERN_REF_MM(iq4_xs)
#undef KERN_REF_MM

/* Table initialiser fragments shared by every ISA file */
#define KERN_REF_MATMUL_ALL                                                                     \
    [G4_TYPE_F32] = kern_ref_mm_f32, [G4_TYPE_F16] = kern_ref_mm_f16,                         \
    [G4_TYPE_BF16] = kern_ref_mm_bf16, [G4_TYPE_Q4_0] = kern_ref_mm_q4_0,                     \
    [G4_TYPE_Q4_1] = kern_ref_mm_q4_1, [G4_TYPE_Q5_0] = kern_ref_mm_q5_0,                     \
    [G4_TYPE_Q5_1] = kern_ref_mm_q5_1, [G4_TYPE_Q8_0] = kern_ref_mm_q8_0,                     \
    [G4_TYPE_IQ4_NL] = kern_ref_mm_iq4_nl, [G4_TYPE_Q2_K] = kern_ref_mm_q2_K,                 \
    [G4_TYPE_Q3_K] = kern_ref_mm_q3_K, [G4_TYPE_Q4_K] = kern_ref_mm_q4_K,                     \
    [G4_TYPE_Q5_K] = kern_ref_mm_q5_K, [G4_TYPE_Q6_K] = kern_ref_mm_q6_K,                     \
    [G4_TYPE_IQ4_XS] = kern_ref_mm_iq4_xs

#endif
