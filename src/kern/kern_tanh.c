/* kern_tanh.c - the final logit soft-cap's tanh as the C library computes it, portably.
 *
 * llama.cpp's soft-cap is ggml_tanh, i.e. libm's tanhf on the user's machine, so g4 must give
 * libm's bits. glibc up to at least 2.36 (Debian 12, Ubuntu 22.04 / 24.04) computes tanhf
 * with the classic fdlibm float algorithm on top of its expm1f (argument reduction by ln2 in
 * a hi/lo pair, a degree-5 rational correction in hxs = x^2/2, a per-k reconstruction), one
 * IEEE single operation per step, no fused multiply-add. kern_tanhf_fd is that sequence in
 * plain C (the library builds with -ffp-contract=off); the AVX-512 table's soft-cap
 * (kern_x86_tmpl.h) is the same steps on 16 lanes. Other C libraries (glibc 2.41's correctly
 * rounded tanhf, musl, macOS) differ in the last bit for some inputs: model open only uses a
 * table's soft-cap after probing that the C library's tanhf gives the same bits
 * (kern_softcap_check), else libm's tanhf runs as before.
 *
 * glibc's aarch64 build compiles the same C with GCC's default -ffp-contract=fast, which fuses
 * nine of the steps into fused multiply-adds (found in the compiled code; the steps below with
 * fused = 1 then give glibc 2.36 aarch64's tanhf bits on a 4M-input sweep under qemu):
 * hi = a - t ln2_hi; the five steps of the r1 polynomial; t = 3 - r1 hfx; 6 - x t;
 * x e - hxs (k = 0); x (e - c) - c; 0.5 (x - e) - 0.5 (k = -1); 1 + 2 (x - e) (k = 1). Not
 * fused there: invln2 a +- 0.5, the reconstruction by 2^k. kern_tanhf_fdf is that form (the
 * NEON tables' soft-cap, kern_neon_tanh.c, on 4 lanes).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kern.h"

static inline float f_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t u_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* a * b + c, rounded once (fused) or twice */
static inline float mad(const int fused, float a, float b, float c) { return fused ? fmaf(a, b, c) : a * b + c; }

/* expm1 on the finite arguments tanhf passes (|a| < 44); fused: glibc's aarch64 steps */
static inline float expm1f_fd(float a, const int fused) {
    const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f, invln2 = 1.4426950216e+00f;
    const float q1 = -3.3333335072e-02f, q2 = 1.5873016091e-03f, q3 = -7.9365076090e-05f;
    const float q4 = 4.0082177293e-06f, q5 = -2.0109921195e-07f;
    const uint32_t hx = u_of(a) & 0x7fffffffu;
    const int neg = u_of(a) >> 31;
    int k = 0;
    float x = a, c = 0.0f;
    if (hx > 0x3eb17218u) {         /* |a| > ln2 / 2: a = k ln2 + x + c */
        float hi, lo;
        if (hx < 0x3f851592u) {     /* |a| < 1.5 ln2: k = +-1 */
            hi = neg ? a + ln2_hi : a - ln2_hi;
            lo = neg ? -ln2_lo : ln2_lo;
            k = neg ? -1 : 1;
        } else {
            const float kf = invln2 * a + (neg ? -0.5f : 0.5f);
            k = (int)kf;            /* truncation, as cvttss2si */
            const float t = (float)k;
            hi = mad(fused, -t, ln2_hi, a);
            lo = t * ln2_lo;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (hx < 0x33000000u) {  /* |a| < 2^-25 */
        return a;
    }
    const float hfx = 0.5f * x;
    const float hxs = x * hfx;
    const float r1 = mad(fused, hxs, mad(fused, hxs, mad(fused, hxs, mad(fused, hxs, mad(fused, hxs, q5, q4), q3), q2), q1), 1.0f);
    const float t = mad(fused, -r1, hfx, 3.0f);
    float e = hxs * ((r1 - t) / mad(fused, -x, t, 6.0f));
    if (k == 0) return x - mad(fused, x, e, -hxs);
    const float twopk = f_of((uint32_t)(0x7f + k) << 23);
    e = mad(fused, x, e - c, -c);
    e = e - hxs;
    if (k == -1) return mad(fused, x - e, 0.5f, -0.5f);
    if (k == 1) return x < -0.25f ? -2.0f * (e - (x + 0.5f)) : mad(fused, x - e, 2.0f, 1.0f);
    if (k <= -2 || k > 56) return (1.0f - (e - x)) * twopk - 1.0f;
    if (k < 23) return (f_of(0x3f800000u - (0x1000000u >> k)) - (e - x)) * twopk;
    return ((x - (e + f_of((uint32_t)(0x7f - k) << 23))) + 1.0f) * twopk;
}

static inline float tanhf_fd(float x, const int fused) {
    const uint32_t jx = u_of(x), ix = jx & 0x7fffffffu;
    if (ix > 0x7f7fffffu) return tanhf(x); /* inf, NaN: the C library's own answer */
    float z;
    if (ix >= 0x41b00000u) {                /* |x| >= 22 */
        z = 1.0f - 1.0e-30f;
    } else if (ix < 0x24000000u) {          /* |x| < 2^-55 (and +-0): x (1 + x), signed already */
        return x * (1.0f + x);
    } else if (ix >= 0x3f800000u) {         /* |x| >= 1 */
        const float t = expm1f_fd(fabsf(x) + fabsf(x), fused);
        z = 1.0f - 2.0f / (t + 2.0f);
    } else {
        const float t = expm1f_fd(-2.0f * fabsf(x), fused);
        z = -t / (t + 2.0f);
    }
    return jx >> 31 ? -z : z;
}

float kern_tanhf_fd(float x) { return tanhf_fd(x, 0); }
float kern_tanhf_fdf(float x) { return tanhf_fd(x, 1); }

void kern_softcap_fd(float *y, int64_t n, float c) {
    const float inv = 1.0f / c;
    for (int64_t i = 0; i < n; i++) y[i] = kern_tanhf_fd(y[i] * inv) * c;
}

void kern_softcap_fdf(float *y, int64_t n, float c) {
    const float inv = 1.0f / c;
    for (int64_t i = 0; i < n; i++) y[i] = kern_tanhf_fdf(y[i] * inv) * c;
}

/* Probe: the table's soft-cap against libm's tanhf on values through every branch of the
 * algorithm (each binade of |x / c| from 2^-60 to 2^6 with spread mantissas, both signs, the
 * branch edges and their neighbours). Returns 1 when every output has the same bits. A C
 * library with another tanhf differs on a share of inputs that can be small: glibc 2.36
 * built with fused multiply-adds (aarch64) differs from these steps on 133 of 4M sampled
 * inputs, so the probe takes 2^18 values (4.4 ms at model open on Zen 5). */
int kern_softcap_check(void (*cap)(float *y, int64_t n, float c), float c) {
    enum { N = 4096, ROUNDS = 64 };
    float in[N], a[N];
    uint32_t s = 0x2545f491u;
    static const uint32_t edge[] = { 0x24000000u, 0x33000000u, 0x3eb17218u, 0x3f800000u, 0x3f851592u, 0x41b00000u };
    const float inv = 1.0f / c;
    for (int round = 0; round < ROUNDS; round++) {
        int n = 0;
        if (round == 0)
            for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
                for (int d = -2; d <= 2; d++)
                    for (int sg = 0; sg < 2; sg++) in[n++] = f_of((edge[i] + (uint32_t)d) | (uint32_t)sg << 31) * c;
        while (n < N) {
            s ^= s << 13; s ^= s >> 17; s ^= s << 5;
            const uint32_t e = 67u + (s >> 8) % 67u; /* binades 2^-60 .. 2^6 */
            in[n++] = f_of((s & 0x80000000u) | e << 23 | (s & 0x7fffffu)) * c;
        }
        memcpy(a, in, sizeof a);
        cap(a, N, c);
        for (int i = 0; i < N; i++) {
            const float r = tanhf(in[i] * inv) * c;
            if (u_of(r) != u_of(a[i])) return 0;
        }
    }
    return 1;
}
