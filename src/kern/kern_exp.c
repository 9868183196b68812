/* kern_exp.c - the exponential of the attention softmax (ggml's ggml_v_expf), portably, and
 * the x86 tables' block sums of it (ggml_vec_soft_max_f32, AVX2 build): the scalar, AVX2 and
 * AVX-512 tables' expsum. kern_neon.c has the NEON lanes and its 4-cell sums.
 * Plain C (and GCC/clang generic vectors where they evaluate float and double in their own
 * precision); compiled with the library's common flags, no ISA flags.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kern.h"

static inline float f_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t u_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* One lane of ggml_v_expf (ggml-cpu/vec.h, the AVX2+FMA build; the NEON one is the same
 * lane for lane, the AVX-512 one is not: scalef, 16-cell blocks): exp(x) = 2^n * (1 + j) with
 * n = round(x*log2(e)) and a degree-5 polynomial j of the reduced argument b; |n| > 126
 * rescales in two steps, |n| > 192 saturates. Every fused multiply-add of the original is an
 * fmaf here (one rounding on any ISA); integer steps are 32-bit wrapping arithmetic on the
 * bit patterns. (A double-precision a*b+c would also do for every x <= 0, checked
 * exhaustively, but is no faster without FMA hardware: about 25 ns a call either way, 4x
 * libm's expf.) */
float kern_expf(float x) {
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const uint32_t e = u_of(z) << 23;
    const float k = f_of(e + u_of(1.0f));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                         u, 0x1.ffffecp-1f * b);
    if (!(fabsf(n) > 126.0f)) return fmaf(j, k, k);
    const uint32_t g = n <= 0.0f ? 0x82000000u : 0u;
    const float s1 = f_of(g + 0x7f000000u);
    if (fabsf(n) > 192.0f) return s1 * s1;
    const float s2 = f_of(e - g);
    return fmaf(s2, j, s2) * s1;
}

/* kern_expf on 4 lanes at once where the compiler has generic vectors (GCC >= 12, clang) and
 * evaluates float and double in their own precision. Each fused multiply-add a*b + c of the
 * normal path (|n| <= 126) is done in double, rounded once to float: the product of two
 * floats is exact in double and, for every input x <= 0, the double sum rounds to the same
 * float as a fused operation would (checked exhaustively over all 2^31 non-positive floats
 * against kern_expf). Lanes that need the |n| > 126 path are redone by kern_expf. Plain C:
 * SSE2 on x86-64, NEON on AArch64; about 2x faster than the fmaf calls. */
#if defined(KERN_GENERIC_VEC)
#define KERN_EXP4 1
typedef float   kern_v4f __attribute__((vector_size(16)));
typedef int32_t kern_v4i __attribute__((vector_size(16)));
typedef float   kern_v2f __attribute__((vector_size(8)));
typedef double  kern_v2d __attribute__((vector_size(16)));

static inline kern_v4f v4(float f) { return (kern_v4f){ f, f, f, f }; }

static inline kern_v2d v2d_lo(kern_v4f a) { return __builtin_convertvector(__builtin_shufflevector(a, a, 0, 1), kern_v2d); }
static inline kern_v2d v2d_hi(kern_v4f a) { return __builtin_convertvector(__builtin_shufflevector(a, a, 2, 3), kern_v2d); }

/* float(a*b + c) with the product exact and one double add (see above) */
static inline kern_v4f fma4(kern_v4f a, kern_v4f b, kern_v4f c) {
    const kern_v2f l = __builtin_convertvector(v2d_lo(a) * v2d_lo(b) + v2d_lo(c), kern_v2f);
    const kern_v2f h = __builtin_convertvector(v2d_hi(a) * v2d_hi(b) + v2d_hi(c), kern_v2f);
    return __builtin_shufflevector(l, h, 0, 1, 2, 3);
}

/* x[0..4) = kern_expf(x[0..4)) for x <= 0 */
static void expf4(float *x) {
    kern_v4f xv;
    memcpy(&xv, x, sizeof xv);
    const kern_v4f r = v4(0x1.8p23f);
    const kern_v4f z = fma4(xv, v4(0x1.715476p+0f), r);
    const kern_v4f n = z - r;
    const kern_v4f b = fma4(-n, v4(0x1.7f7d1cp-20f), fma4(-n, v4(0x1.62e4p-1f), xv));
    kern_v4i zi;
    memcpy(&zi, &z, sizeof zi);
    const kern_v4i ki = (kern_v4i)((zi << 23) + 0x3f800000); /* u_of(1.0f) */
    kern_v4f k;
    memcpy(&k, &ki, sizeof k);
    const kern_v4f u = b * b;
    const kern_v4f j = fma4(fma4(fma4(v4(0x1.0e4020p-7f), b, v4(0x1.573e2ep-5f)), u, fma4(v4(0x1.555e66p-3f), b, v4(0x1.fffdb6p-2f))),
                            u, v4(0x1.ffffecp-1f) * b);
    const kern_v4f res = fma4(j, k, k);
    const kern_v4i big = (n > v4(126.0f)) | (n < v4(-126.0f));
    if (big[0] | big[1] | big[2] | big[3])
        for (int i = 0; i < 4; i++) x[i] = kern_expf(x[i]);
    else
        memcpy(x, &res, sizeof res);
}
#endif

void kern_expf_n(float *x, int64_t n) {
    int64_t i = 0;
#ifdef KERN_EXP4
    for (; i + 4 <= n; i += 4) expf4(x + i);
#endif
    for (; i < n; i++) x[i] = kern_expf(x[i]);
}


/* ggml_vec_soft_max_f32 (AVX2): blocks of 8 cells aligned on the row, each summed in f32 as
 * ((c0+c4)+(c2+c6))+((c1+c5)+(c3+c7)) and added to a double */
double kern_expsum_x86(float *x, int64_t n, int64_t cell0) {
    kern_expf_n(x, n);
    double sum = 0.0;
    for (int64_t i = -(cell0 % 8); i < n; i += 8) {
        float c[8];
        for (int k = 0; k < 8; k++) c[k] = i + k >= 0 && i + k < n ? x[i + k] : 0.0f;
        sum += (double)(((c[0] + c[4]) + (c[2] + c[6])) + ((c[1] + c[5]) + (c[3] + c[7])));
    }
    return sum;
}

/* One lane of the AVX-512 build's ggml_v_expf (vec.h, __AVX512F__ && __AVX512DQ__): the same
 * reduction, the polynomial's last term fma(c1, b, 1) (1 + j in one step), then vscalefps:
 * j * 2^n rounded once (only subnormal results round); |n| > 192 gives +0 (n <= 0) or +inf. */
float kern_expf_z(float x) {
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    if (!(fabsf(n) <= 192.0f)) return n <= 0.0f ? 0.0f : INFINITY; /* NaN n (x = -inf): +0 */
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                         u, fmaf(0x1.ffffecp-1f, b, 1.0f));
    return ldexpf(j, (int)n);
}

/* ggml_vec_soft_max_f32 (AVX-512 build): blocks of 16 cells aligned on the row, each summed as
 * _mm512_reduce_add_ps (GCC): h[i] = c[i] + c[i+8], q[i] = h[i] + h[i+4], (q0 + q2) + (q1 + q3),
 * added to a double */
double kern_expsum_z16(float *x, int64_t n, int64_t cell0) {
    for (int64_t i = 0; i < n; i++) x[i] = kern_expf_z(x[i]);
    double sum = 0.0;
    for (int64_t i = -(cell0 % 16); i < n; i += 16) {
        float c[16], h[8], q[4];
        for (int k = 0; k < 16; k++) c[k] = i + k >= 0 && i + k < n ? x[i + k] : 0.0f;
        for (int k = 0; k < 8; k++) h[k] = c[k] + c[k + 8];
        for (int k = 0; k < 4; k++) q[k] = h[k] + h[k + 4];
        sum += (double)((q[0] + q[2]) + (q[1] + q[3]));
    }
    return sum;
}
