/* kern_neon_tanh.c - the final logit soft-cap, y = c * tanhf(y / c), on 4 NEON lanes with the
 * bits of glibc's aarch64 tanhf (up to at least 2.36: fdlibm's float steps built with GCC's
 * fused multiply-adds; kern_tanh.c kern_tanhf_fdf is the same steps one value at a time).
 * Model open runs it only where kern_softcap_check finds the C library's tanhf gives these
 * bits (else libm's tanhf, as llama.cpp's ggml_tanh calls it). Every branch of expm1f is
 * computed on every lane and the lane's own one selected, as the x86 tables' softcap does.
 */
#include "kern_neon.h"

NINLINE float32x4_t fdup(float v) { return vdupq_n_f32(v); }
NINLINE uint32x4_t udup(uint32_t v) { return vdupq_n_u32(v); }
NINLINE float32x4_t asf(uint32x4_t v) { return vreinterpretq_f32_u32(v); }
NINLINE uint32x4_t asu(float32x4_t v) { return vreinterpretq_u32_f32(v); }
/* a * b + c rounded once */
NINLINE float32x4_t fma4(float32x4_t a, float32x4_t b, float32x4_t c) { return vfmaq_f32(c, a, b); }

/* expm1 of a (|a| < 44, finite), kern_tanh.c expm1f_fd with fused = 1 */
NINLINE float32x4_t expm1f_v(float32x4_t a) {
    const uint32x4_t hx = vandq_u32(asu(a), udup(0x7fffffffu));
    const uint32x4_t neg = vcltq_s32(vreinterpretq_s32_f32(a), vdupq_n_s32(0));
    const uint32x4_t red = vcgtq_u32(hx, udup(0x3eb17218u));  /* |a| > ln2 / 2 */
    const uint32x4_t tiny = vcltq_u32(hx, udup(0x33000000u)); /* |a| < 2^-25 */
    const uint32x4_t near = vcltq_u32(hx, udup(0x3f851592u)); /* |a| < 1.5 ln2: k = +-1 */
    const float32x4_t ln2_hi = fdup(6.9313812256e-01f), ln2_lo = fdup(9.0580006145e-06f);
    const float32x4_t hi1 = vbslq_f32(neg, vaddq_f32(a, ln2_hi), vsubq_f32(a, ln2_hi));
    const float32x4_t lo1 = vbslq_f32(neg, fdup(-9.0580006145e-06f), ln2_lo);
    const int32x4_t k1 = vbslq_s32(neg, vdupq_n_s32(-1), vdupq_n_s32(1));
    /* k = trunc(invln2 a +- 0.5), not fused */
    const float32x4_t kf = vaddq_f32(vmulq_f32(fdup(1.4426950216e+00f), a), vbslq_f32(neg, fdup(-0.5f), fdup(0.5f)));
    const int32x4_t kn = vcvtq_s32_f32(kf); /* toward zero */
    const float32x4_t tk = vcvtq_f32_s32(kn);
    const float32x4_t hin = fma4(vnegq_f32(tk), ln2_hi, a);
    const float32x4_t lon = vmulq_f32(tk, ln2_lo);
    const float32x4_t hi = vbslq_f32(near, hi1, hin), lo = vbslq_f32(near, lo1, lon);
    const int32x4_t k = vbslq_s32(red, vbslq_s32(near, k1, kn), vdupq_n_s32(0));
    const float32x4_t xr = vsubq_f32(hi, lo);
    const float32x4_t x = vbslq_f32(red, xr, a);
    const float32x4_t c = vsubq_f32(vsubq_f32(hi, xr), lo);
    const float32x4_t hfx = vmulq_f32(fdup(0.5f), x);
    const float32x4_t hxs = vmulq_f32(x, hfx);
    float32x4_t r1 = fma4(hxs, fdup(-2.0109921195e-07f), fdup(4.0082177293e-06f));
    r1 = fma4(hxs, r1, fdup(-7.9365076090e-05f));
    r1 = fma4(hxs, r1, fdup(1.5873016091e-03f));
    r1 = fma4(hxs, r1, fdup(-3.3333335072e-02f));
    r1 = fma4(hxs, r1, fdup(1.0f));
    const float32x4_t t = fma4(vnegq_f32(r1), hfx, fdup(3.0f));
    const float32x4_t e = vmulq_f32(hxs, vdivq_f32(vsubq_f32(r1, t), fma4(vnegq_f32(x), t, fdup(6.0f))));
    const float32x4_t res0 = vsubq_f32(x, fma4(x, e, vnegq_f32(hxs)));
    const float32x4_t e2 = vsubq_f32(fma4(x, vsubq_f32(e, c), vnegq_f32(c)), hxs);
    const float32x4_t twopk = asf(vshlq_n_u32(vreinterpretq_u32_s32(vaddq_s32(k, vdupq_n_s32(0x7f))), 23));
    const float32x4_t xe = vsubq_f32(x, e2);
    const float32x4_t rm1 = fma4(xe, fdup(0.5f), fdup(-0.5f));
    const float32x4_t rp1a = vmulq_f32(fdup(-2.0f), vsubq_f32(e2, vaddq_f32(x, fdup(0.5f))));
    const float32x4_t rp1b = fma4(xe, fdup(2.0f), fdup(1.0f));
    const float32x4_t rp1 = vbslq_f32(vcltq_f32(x, fdup(-0.25f)), rp1a, rp1b);
    const float32x4_t rbig = vsubq_f32(vmulq_f32(vsubq_f32(fdup(1.0f), vsubq_f32(e2, x)), twopk), fdup(1.0f));
    /* 2 <= k < 23: t = 1 - 2^-k; 23 <= k <= 56: t = 2^-k (k >= 2 on these lanes: the shifts are in range) */
    const int32x4_t kc = vmaxq_s32(vminq_s32(k, vdupq_n_s32(56)), vdupq_n_s32(2));
    const float32x4_t tlo = asf(vsubq_u32(udup(0x3f800000u), vshlq_u32(udup(0x1000000u), vnegq_s32(kc))));
    const float32x4_t rlo = vmulq_f32(vsubq_f32(tlo, vsubq_f32(e2, x)), twopk);
    const float32x4_t thi = asf(vshlq_n_u32(vreinterpretq_u32_s32(vsubq_s32(vdupq_n_s32(0x7f), kc)), 23));
    const float32x4_t rhi = vmulq_f32(vaddq_f32(vsubq_f32(x, vaddq_f32(e2, thi)), fdup(1.0f)), twopk);
    const uint32x4_t kbig = vorrq_u32(vcltq_s32(k, vdupq_n_s32(-1)), vcgtq_s32(k, vdupq_n_s32(56)));
    float32x4_t r = vbslq_f32(vcltq_s32(k, vdupq_n_s32(23)), rlo, rhi);
    r = vbslq_f32(kbig, rbig, r);
    r = vbslq_f32(vceqq_s32(k, vdupq_n_s32(1)), rp1, r);
    r = vbslq_f32(vceqq_s32(k, vdupq_n_s32(-1)), rm1, r);
    r = vbslq_f32(vceqq_s32(k, vdupq_n_s32(0)), res0, r);
    return vbslq_f32(tiny, a, r);
}

/* tanhf of finite v, kern_tanhf_fdf's steps */
NINLINE float32x4_t tanhf_v(float32x4_t v) {
    const uint32x4_t jx = asu(v);
    const uint32x4_t ix = vandq_u32(jx, udup(0x7fffffffu));
    const float32x4_t ax = asf(ix);
    const uint32x4_t ge1 = vcgtq_u32(ix, udup(0x3f7fffffu));
    const float32x4_t a = vbslq_f32(ge1, vaddq_f32(ax, ax), vmulq_f32(fdup(-2.0f), ax));
    const float32x4_t t = expm1f_v(a);
    const float32x4_t t2 = vaddq_f32(t, fdup(2.0f));
    const float32x4_t zp = vsubq_f32(fdup(1.0f), vdivq_f32(fdup(2.0f), t2));
    const float32x4_t zm = vdivq_f32(vnegq_f32(t), t2);
    float32x4_t z = vbslq_f32(ge1, zp, zm);
    z = vbslq_f32(vcgtq_u32(ix, udup(0x41afffffu)), vsubq_f32(fdup(1.0f), fdup(1.0e-30f)), z);
    z = asf(veorq_u32(asu(z), vandq_u32(jx, udup(0x80000000u))));
    return vbslq_f32(vcltq_u32(ix, udup(0x24000000u)), vmulq_f32(v, vaddq_f32(fdup(1.0f), v)), z);
}

void neon_softcap(float *y, int64_t n, float c) {
    const float inv = 1.0f / c;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vmulq_f32(vld1q_f32(y + i), fdup(inv));
        if (vmaxvq_u32(vcgtq_u32(vandq_u32(asu(v), udup(0x7fffffffu)), udup(0x7f7fffffu)))) { /* Inf, NaN */
            kern_softcap_fdf(y + i, 4, c);
            continue;
        }
        vst1q_f32(y + i, vmulq_f32(tanhf_v(v), fdup(c)));
    }
    kern_softcap_fdf(y + i, n - i, c);
}
