/* cpu.c - CPU feature detection and kernel-table selection.
 *
 * Owns: which tables this build contains and which of them this CPU (and OS) can run.
 * x86-64: CPUID leaves 1 and 7 plus XGETBV, so a table is offered only when the OS saves
 * the ymm/zmm state. aarch64: getauxval(AT_HWCAP). Nothing is cached: kern_select runs
 * once per model open and the result lives in the model (no globals).
 */
#include "kern_isa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#define G4_X86 1
#include <cpuid.h>
#elif defined(__aarch64__)
#define G4_ARM64 1
#include <sys/auxv.h>
#endif

#if defined(G4_X86)
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}
#endif

void kern_cpu_detect(kern_cpu *c) {
    memset(c, 0, sizeof *c);
#if defined(G4_X86)
    unsigned a, b, cx, d;
    if (!__get_cpuid(1, &a, &b, &cx, &d)) return;
    const int osxsave = (cx >> 27) & 1, avx = (cx >> 28) & 1;
    const int fma = (cx >> 12) & 1, f16c = (cx >> 29) & 1;
    if (!osxsave || !avx) return;
    const uint64_t xcr0 = xgetbv0();
    const int os_ymm = (xcr0 & 0x6) == 0x6;              /* SSE + AVX state */
    const int os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;  /* opmask, ZMM_Hi256, Hi16_ZMM */
    if (!os_ymm) return;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    unsigned b7 = 0, c7 = 0, a71 = 0;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b7, c7, d);
        unsigned sub = a;
        if (sub >= 1) { unsigned bb, cc, dd; __cpuid_count(7, 1, a71, bb, cc, dd); (void)bb; (void)cc; (void)dd; }
    }
    c->fma = fma;
    c->f16c = f16c;
    c->avx2 = (b7 >> 5) & 1;
    if (os_zmm) {
        c->avx512f = (b7 >> 16) & 1;
        c->avx512dq = (b7 >> 17) & 1;
        c->avx512bw = (b7 >> 30) & 1;
        c->avx512vl = (b7 >> 31) & 1;
        c->avx512vnni = (c7 >> 11) & 1;
        c->avx512bf16 = (a71 >> 5) & 1;
    }
    c->avxvnni = (a71 >> 4) & 1;
    c->zmm = !(c->avx512f && c->avx512bw && c->avx512vnni) ? KERN_ZMM_OFF : c->avxvnni ? KERN_ZMM_ALL : KERN_ZMM_NOQ6;
    const char *z = getenv("G4_ZMM");
    if (z && !strcmp(z, "0")) c->zmm = KERN_ZMM_OFF;
    if (z && !strcmp(z, "h")) c->zmm = KERN_ZMM_NOQ6;
    if (z && !strcmp(z, "1")) c->zmm = KERN_ZMM_ALL;
#elif defined(G4_ARM64)
    unsigned long hw = getauxval(AT_HWCAP);
    c->neon = (hw & (1ul << 1)) != 0;     /* HWCAP_ASIMD */
    c->fp16 = (hw & (1ul << 10)) != 0;    /* HWCAP_ASIMDHP */
    c->dotprod = (hw & (1ul << 20)) != 0; /* HWCAP_ASIMDDP */
    c->sve = (hw & (1ul << 22)) != 0;     /* HWCAP_SVE */
    c->i8mm = (getauxval(AT_HWCAP2) & (1ul << 13)) != 0; /* HWCAP2_I8MM */
#else
    (void)c;
#endif
}

size_t kern_act_row_bytes(int dt, int64_t n) {
    switch (dt) {
    case G4_TYPE_F32: return (size_t)n * 4;
    case G4_TYPE_F16: case G4_TYPE_BF16: return (size_t)n * 2;
    case G4_TYPE_Q8_0: return (size_t)(n / 32) * 34;
    case G4_TYPE_Q8_1: return (size_t)(n / 32) * 36;
    case G4_TYPE_Q8_K: return (size_t)(n / 256) * 292;
    default: return 0;
    }
}

/* ==== Table registry: name, accessor, whether this CPU runs it (best last) ==== */

typedef struct isa_entry {
    const char *name;
    const g4_kern *(*table)(void);
    int (*runnable)(const kern_cpu *c);
} isa_entry;

static int run_scalar(const kern_cpu *c) { (void)c; return 1; }
#if defined(G4_X86)
static int run_avx2(const kern_cpu *c) { return c->avx2 && c->fma && c->f16c; }
static int run_avx512(const kern_cpu *c) {
#if defined(G4_SIMDE_AVX512) /* test-only build: kern_avx512.c runs on SIMDe's emulation */
    if (run_avx2(c)) return 1;
#endif
    /* no BF16 instructions are used: Ice Lake class CPUs (VNNI without BF16) qualify */
    return run_avx2(c) && c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq && c->avx512vnni;
}
#elif defined(G4_ARM64)
static int run_neon(const kern_cpu *c) { return c->neon && c->dotprod && c->fp16; }
/* i8mm and SVE: the cores llama.cpp gives its armv8.6_1 library (kern_i8mm.c); an i8mm core
 * without SVE loads armv8.2_2, the neon table's */
static int run_i8mm(const kern_cpu *c) { return run_neon(c) && c->sve && c->i8mm; }
#endif

static const isa_entry ISAS[] = {
    { "scalar", kern_table_scalar, run_scalar },
#if defined(G4_X86)
    { "avx2", kern_table_avx2, run_avx2 },
    { "avx512", kern_table_avx512, run_avx512 },
#elif defined(G4_ARM64)
    { "neon", kern_table_neon, run_neon },
    { "i8mm", kern_table_i8mm, run_i8mm },
#endif
};
#define N_ISAS ((int)(sizeof ISAS / sizeof ISAS[0]))

static int known_name(const char *s) {
    return !strcmp(s, "scalar") || !strcmp(s, "avx2") || !strcmp(s, "avx512") || !strcmp(s, "neon") || !strcmp(s, "i8mm");
}

const g4_kern *kern_select(const char *force, char *err, size_t errlen) {
    kern_cpu c;
    kern_cpu_detect(&c);
    if (!force || !*force) {
        const char *env = getenv("G4_ISA");
        if (env && *env) force = env;
    }
    if (!force || !*force) {
        for (int i = N_ISAS - 1; i >= 0; i--)
            if (ISAS[i].runnable(&c)) return ISAS[i].table();
        return kern_table_scalar();
    }
    for (int i = 0; i < N_ISAS; i++) {
        if (strcmp(force, ISAS[i].name) != 0) continue;
        if (ISAS[i].runnable(&c)) return ISAS[i].table();
        if (err && errlen) snprintf(err, errlen, "kernel set '%s' needs CPU features this machine lacks", force);
        return NULL;
    }
    if (err && errlen) {
        if (known_name(force))
            snprintf(err, errlen, "kernel set '%s' is not built for this architecture", force);
        else
            snprintf(err, errlen, "unknown kernel set '%s' (scalar, avx2, avx512, neon, i8mm)", force);
    }
    return NULL;
}

int kern_list(const g4_kern **out, int cap) {
    kern_cpu c;
    kern_cpu_detect(&c);
    int n = 0;
    for (int i = 0; i < N_ISAS; i++)
        if (ISAS[i].runnable(&c) && n < cap) out[n++] = ISAS[i].table();
    return n;
}
