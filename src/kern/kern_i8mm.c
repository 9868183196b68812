/* kern_i8mm.c - the aarch64 table for cores with i8mm (smmla) and SVE, built with
 * -march=armv8.2-a+dotprod+fp16+i8mm+sve (nothing else is): chosen at run time when getauxval
 * reports asimd, asimddp, asimdhp, sve and i8mm.
 *
 * Which llama.cpp it follows: on such a core llama.cpp's arm64 CPU backend loads its
 * armv8.6_1 library (dotprod, fp16, SVE, MATMUL_INT8; the Linux variants with i8mm all need
 * SVE, so a core with i8mm and no SVE loads armv8.2_2, the neon table's). That library
 * repacks q4_K, q5_K and q6_K 8x8 and q4_0, q8_0 4x8 (ggml_repack_get_optimal_repack_type)
 * and runs their i8mm gemm (4 tokens) and gemv. Of those, only the q4_K and q5_K kernels
 * sum in another float order than the dotprod 8x4 / 4x4 ones the neon table follows
 * (tools/g4-ggml-kern.c arm_repacked, checked against the library under qemu):
 *   gemv  per 32 elements s = fma(d, isum32, s); Q5_K per 64 s = fma(-dm, mins64, s);
 *         Q4_K at the end s = fma(-mins, dm, s)                 (kern_neon_k.c _rpi)
 *   gemm  per super-block s = fma(-mins, dm, s); s = fma(isum, d, s)   (_rpim; here the
 *         Q4_K gemm, i8mm_q4_K_mm, by smmla)
 * so this table is the neon table with those four choices changed, its Q4_K and Q6_K gemm
 * (Q6_K: s = fma(isum, d, s), the 8x4 order) on smmla, and F32 / F16 weights and caches on
 * the library's SVE vec_dot (below; it is built without tinyBLAS). At 256-bit SVE its q4_0
 * 8x8 kernel keeps the 4x4 float order. For weights it does not repack, its SVE vec_dot of
 * q8_0, q4_0 and q2_K and its i8mm two-row vec_dot (q4_0, q4_1, q8_0, q4_K when llama.cpp's row
 * and column chunks are even: i8mm_nrc2) are kern_i8mm_vd.c's.
 *
 * i8mm_q4_K_mm, i8mm_q6_K_mm: two weight rows x four tokens per pass. smmla multiplies a 2x8
 * int8 block (8 codes of each row) by an 8x2 block (8 activation values of each of two tokens) into a
 * 2x2 int32 block, so one instruction does the work of two sdot for four (row, token)
 * pairs. The activations of the four tokens are interleaved once per call, eight values of
 * one token then eight of the next (the layout llama.cpp's block_q8_Kx4 has), in chunks of
 * I8_CHUNK super-blocks on the stack; the partial sums of a chunk go to y and come back
 * for the next, so each (row, token) still sums its super-blocks in order. Exact integer
 * sums, then the gemm's two fmas per super-block on the four pairs as lanes.
 */
#include "kern_neon.h" /* arm_neon.h */

#include <arm_sve.h>

#define I8_CHUNK 8 /* super-blocks of interleaved activations per pass over the rows */

/* [x0 e0..7, x1 e0..7] and [x0 e8..15, x1 e8..15] */
NINLINE int8x16_t zlo(int8x16_t a, int8x16_t b) { return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b))); }
NINLINE int8x16_t zhi(int8x16_t a, int8x16_t b) { return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b))); }

/* sum of the mins term [r0 t0, r0 t1, r1 t0, r1 t1] of two rows' mins and two tokens' 32-sums */
NINLINE int32x4_t mins2x2(int16x8_t m0, int16x8_t m1, int16x8_t b0, int16x8_t b1) {
    const int32x4_t p00 = vmlal_high_s16(vmull_s16(vget_low_s16(m0), vget_low_s16(b0)), m0, b0);
    const int32x4_t p01 = vmlal_high_s16(vmull_s16(vget_low_s16(m0), vget_low_s16(b1)), m0, b1);
    const int32x4_t p10 = vmlal_high_s16(vmull_s16(vget_low_s16(m1), vget_low_s16(b0)), m1, b0);
    const int32x4_t p11 = vmlal_high_s16(vmull_s16(vget_low_s16(m1), vget_low_s16(b1)), m1, b1);
    return vpaddq_s32(vpaddq_s32(p00, p01), vpaddq_s32(p10, p11));
}

/* One super-block of rows w0, w1 against four tokens: xi the interleaved activation values
 * (two pairs of 512 bytes: pair p, 8-value group g at xi + 512 p + 16 g), a[t] the tokens'
 * Q8_K blocks (d and bsums); s[p] lanes [r0 t2p, r0 t2p+1, r1 t2p, r1 t2p+1]. */
NINLINE void q4k_sb_2x4(const uint8_t *w0, const uint8_t *w1, const int8_t *xi, const uint8_t *const a[4], float32x4_t s[2]) {
    uint8_t sc0[8], mn0[8], sc1[8], mn1[8];
    k4_scales(w0 + 4, sc0, mn0);
    k4_scales(w1 + 4, sc1, mn1);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    int32x4_t acc[2] = { vdupq_n_s32(0), vdupq_n_s32(0) };
    NUNROLL for (int k = 0; k < 4; k++) {
        const uint8x16_t q00 = vld1q_u8(w0 + 16 + 32 * k), q01 = vld1q_u8(w0 + 32 + 32 * k);
        const uint8x16_t q10 = vld1q_u8(w1 + 16 + 32 * k), q11 = vld1q_u8(w1 + 32 + 32 * k);
        /* sub-block 2k: the low nibbles (elements 64k .. +31), 2k + 1: the high ones */
        const int8x16_t l00 = vreinterpretq_s8_u8(vandq_u8(q00, m4)), l01 = vreinterpretq_s8_u8(vandq_u8(q01, m4));
        const int8x16_t l10 = vreinterpretq_s8_u8(vandq_u8(q10, m4)), l11 = vreinterpretq_s8_u8(vandq_u8(q11, m4));
        const int8x16_t h00 = vreinterpretq_s8_u8(vshrq_n_u8(q00, 4)), h01 = vreinterpretq_s8_u8(vshrq_n_u8(q01, 4));
        const int8x16_t h10 = vreinterpretq_s8_u8(vshrq_n_u8(q10, 4)), h11 = vreinterpretq_s8_u8(vshrq_n_u8(q11, 4));
        const int8x16_t L[4] = { zlo(l00, l10), zhi(l00, l10), zlo(l01, l11), zhi(l01, l11) };
        const int8x16_t H[4] = { zlo(h00, h10), zhi(h00, h10), zlo(h01, h11), zhi(h01, h11) };
        const int32_t sl[4] = { sc0[2 * k], sc0[2 * k], sc1[2 * k], sc1[2 * k] };
        const int32_t sh[4] = { sc0[2 * k + 1], sc0[2 * k + 1], sc1[2 * k + 1], sc1[2 * k + 1] };
        const int32x4_t vsl = vld1q_s32(sl), vsh = vld1q_s32(sh);
        NUNROLL for (int p = 0; p < 2; p++) {
            const int8_t *g = xi + 512 * p + 16 * 8 * k;
            int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
            NUNROLL for (int j = 0; j < 4; j++) {
                lo = vmmlaq_s32(lo, L[j], vld1q_s8(g + 16 * j));
                hi = vmmlaq_s32(hi, H[j], vld1q_s8(g + 64 + 16 * j));
            }
            acc[p] = vmlaq_s32(vmlaq_s32(acc[p], lo, vsl), hi, vsh);
        }
    }
    const int16x8_t mm0 = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn0))), mm1 = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn1)));
    const float16x4_t hd = vreinterpret_f16_u16(vcreate_u16((uint64_t)quant_rd16(w0) | (uint64_t)quant_rd16(w0 + 2) << 16 |
                                                            (uint64_t)quant_rd16(w1) << 32 | (uint64_t)quant_rd16(w1 + 2) << 48));
    const float32x4_t f = vcvt_f32_f16(hd); /* [dx0, dmx0, dx1, dmx1] */
    const float32x4_t dx = vcombine_f32(vdup_laneq_f32(f, 0), vdup_laneq_f32(f, 2));
    const float32x4_t dmx = vcombine_f32(vdup_laneq_f32(f, 1), vdup_laneq_f32(f, 3));
    NUNROLL for (int p = 0; p < 2; p++) {
        const uint8_t *ae = a[2 * p], *ao = a[2 * p + 1];
        const int16x8_t be = vpaddq_s16(vld1q_s16((const int16_t *)(const void *)(ae + 260)), vld1q_s16((const int16_t *)(const void *)(ae + 276)));
        const int16x8_t bo = vpaddq_s16(vld1q_s16((const int16_t *)(const void *)(ao + 260)), vld1q_s16((const int16_t *)(const void *)(ao + 276)));
        const float32x4_t mf = vcvtq_f32_s32(mins2x2(mm0, mm1, be, bo));
        const float dyv[4] = { nrdf(ae), nrdf(ao), nrdf(ae), nrdf(ao) };
        const float32x4_t dy = vld1q_f32(dyv);
        const float32x4_t d = vmulq_f32(dx, dy), dm = vmulq_f32(dmx, dy);
        s[p] = vfmsq_f32(s[p], mf, dm);                     /* fma(-mins, dm, s) */
        s[p] = vfmaq_f32(s[p], vcvtq_f32_s32(acc[p]), d);   /* fma(isum, d, s) */
    }
}

/* One super-block of rows w0, w1 of Q6_K against four tokens, as q4k_sb_2x4: sixteen
 * 16-element groups, each two smmla per token pair times the rows' int8 group scales; the 8x8
 * gemm's float step s = fma(isum, d, s). */
NINLINE void q6k_sb_2x4(const uint8_t *w0, const uint8_t *w1, const int8_t *xi, const uint8_t *const a[4], float32x4_t s[2]) {
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3);
    const int8x16_t c32 = vdupq_n_s8(32);
    const int8_t *sc0 = (const int8_t *)(const void *)(w0 + 192), *sc1 = (const int8_t *)(const void *)(w1 + 192);
    int32x4_t acc[2] = { vdupq_n_s32(0), vdupq_n_s32(0) };
    NUNROLL for (int c = 0; c < 2; c++)
        NUNROLL for (int half = 0; half < 2; half++) {
            const int o = 16 * half;
            int8x16_t q[2][4];
            NUNROLL for (int r = 0; r < 2; r++) {
                const uint8_t *b = r ? w1 : w0;
                const uint8x16_t l0 = vld1q_u8(b + 64 * c + o), l1 = vld1q_u8(b + 64 * c + 32 + o), h = vld1q_u8(b + 128 + 32 * c + o);
                q[r][0] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(h, m3), 4))), c32);
                q[r][1] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m3), 4))), c32);
                q[r][2] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m3), 4))), c32);
                q[r][3] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4))), c32);
            }
            NUNROLL for (int j = 0; j < 4; j++) { /* elements e .. e + 15: group 8c + 2j + half */
                const int e = 128 * c + 32 * j + o, g = e / 16;
                const int8x16_t A0 = zlo(q[0][j], q[1][j]), A1 = zhi(q[0][j], q[1][j]);
                const int32_t sv[4] = { sc0[g], sc0[g], sc1[g], sc1[g] };
                const int32x4_t vs = vld1q_s32(sv);
                NUNROLL for (int p = 0; p < 2; p++) {
                    const int8_t *x8 = xi + 512 * p + 16 * (e / 8);
                    const int32x4_t d = vmmlaq_s32(vmmlaq_s32(vdupq_n_s32(0), A0, vld1q_s8(x8)), A1, vld1q_s8(x8 + 16));
                    acc[p] = vmlaq_s32(acc[p], d, vs);
                }
            }
        }
    const float32x4_t f = vcvt_f32_f16(vreinterpret_f16_u16(vcreate_u16((uint64_t)quant_rd16(w0 + 208) | (uint64_t)quant_rd16(w1 + 208) << 16)));
    const float32x4_t dx = vcombine_f32(vdup_laneq_f32(f, 0), vdup_laneq_f32(f, 1));
    NUNROLL for (int p = 0; p < 2; p++) {
        const float dyv[4] = { nrdf(a[2 * p]), nrdf(a[2 * p + 1]), nrdf(a[2 * p]), nrdf(a[2 * p + 1]) };
        s[p] = vfmaq_f32(s[p], vcvtq_f32_s32(acc[p]), vmulq_f32(dx, vld1q_f32(dyv))); /* fma(isum, d, s) */
    }
}

/* The tile driver: rows in pairs, tokens in fours, activations interleaved per chunk; the
 * rest (an odd last row, the last n_tok % 4 tokens) by rest, the same order one row at a time. */
NINLINE void i8mm_mm(const int q6, g4_matmul_fn rest, float *restrict y, size_t ldy, const uint8_t *restrict w, size_t wrb,
                     const void *restrict xq, size_t xrb, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    const uint8_t *x = xq;
    const size_t wb = q6 ? 210 : 144;
    const int64_t nb = n_in / 256, r_even = row0 + (row1 - row0) / 2 * 2;
    int t0 = 0;
    for (; t0 + 4 <= n_tok; t0 += 4) {
        const uint8_t *xt = x + (size_t)t0 * xrb;
        float *yt = y + (size_t)t0 * ldy;
        for (int64_t c0 = 0; c0 < nb; c0 += I8_CHUNK) {
            const int64_t nc = nb - c0 < I8_CHUNK ? nb - c0 : I8_CHUNK;
            int8_t xi[I8_CHUNK][1024]; /* [super-block][pair][group][token of the pair][8] */
            for (int64_t i = 0; i < nc; i++)
                for (int p = 0; p < 2; p++) {
                    const uint8_t *ae = xt + (size_t)(2 * p) * xrb + (size_t)(c0 + i) * 292 + 4, *ao = ae + xrb;
                    for (int h = 0; h < 16; h++) {
                        const int8x16_t e = nld8(ae + 16 * h), o = nld8(ao + 16 * h);
                        vst1q_s8(xi[i] + 512 * p + 32 * h, zlo(e, o));
                        vst1q_s8(xi[i] + 512 * p + 32 * h + 16, zhi(e, o));
                    }
                }
            for (int64_t r = row0; r < r_even; r += 2) {
                float32x4_t s[2];
                float *o[2][4];
                for (int p = 0; p < 2; p++) {
                    o[p][0] = yt + (size_t)(2 * p) * ldy + r;
                    o[p][1] = yt + (size_t)(2 * p + 1) * ldy + r;
                    o[p][2] = o[p][0] + 1;
                    o[p][3] = o[p][1] + 1;
                    const float v[4] = { *o[p][0], *o[p][1], *o[p][2], *o[p][3] };
                    s[p] = c0 ? vld1q_f32(v) : vdupq_n_f32(0);
                }
                const uint8_t *w0 = w + (size_t)r * wrb, *w1 = w0 + wrb;
                for (int64_t i = 0; i < nc; i++) {
                    const size_t bo = (size_t)(c0 + i) * wb, ao = (size_t)(c0 + i) * 292;
                    const uint8_t *a[4] = { xt + ao, xt + xrb + ao, xt + 2 * xrb + ao, xt + 3 * xrb + ao };
                    if (q6) q6k_sb_2x4(w0 + bo, w1 + bo, xi[i], a, s);
                    else q4k_sb_2x4(w0 + bo, w1 + bo, xi[i], a, s);
                }
                for (int p = 0; p < 2; p++) {
                    float v[4];
                    vst1q_f32(v, s[p]);
                    for (int j = 0; j < 4; j++) *o[p][j] = v[j];
                }
            }
        }
        if (r_even < row1) rest(yt, ldy, w, wrb, xt, xrb, n_in, r_even, row1, 4);
    }
    if (t0 < n_tok) rest(y + (size_t)t0 * ldy, ldy, w, wrb, x + (size_t)t0 * xrb, xrb, n_in, row0, row1, n_tok - t0);
}

static void i8mm_q4_K_mm(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t wrb, const void *restrict xq,
                         size_t xrb, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    i8mm_mm(0, neon_q4_K_rpim, y, ldy, w, wrb, xq, xrb, n_in, row0, row1, n_tok);
}

static void i8mm_q6_K_mm(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t wrb, const void *restrict xq,
                         size_t xrb, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    i8mm_mm(1, neon_q6_K_rpm, y, ldy, w, wrb, xq, xrb, n_in, row0, row1, n_tok);
}

/* ==== F32 and F16 weights: the SVE vec_dot (vec.cpp ggml_vec_dot_f32 / _f16, __ARM_FEATURE_SVE),
 * written with the same SVE operations in the same order, so the sums are that library's at
 * any vector length. armv8.6_1 is built without llamafile (ggml-cpu.c undefines
 * GGML_USE_LLAMAFILE under SVE or MATMUL_INT8), so this is its kernel for every column. ==== */

/* 8 accumulators of svcntw() lanes, a one-vector loop, a predicated tail into the first, then
 * ((s1 + s2) + (s3 + s4)) + ((s5 + s6) + (s7 + s8)) and svaddv */
static float sve_dot_f32(const float *x, const float *y, int n) {
    const svbool_t pg = svptrue_b32();
    const int epr = (int)svcntw(), step = 8 * epr;
    const int np = n & ~(step - 1), np2 = n & ~(epr - 1);
    svfloat32_t s1 = svdup_n_f32(0.0f), s2 = s1, s3 = s1, s4 = s1, s5 = s1, s6 = s1, s7 = s1, s8 = s1;
#define SVE_FMA32(acc, j) acc = svmad_f32_m(pg, svld1_f32(pg, x + i + (j) * epr), svld1_f32(pg, y + i + (j) * epr), acc)
    for (int i = 0; i < np; i += step) {
        SVE_FMA32(s1, 0); SVE_FMA32(s2, 1); SVE_FMA32(s3, 2); SVE_FMA32(s4, 3);
        SVE_FMA32(s5, 4); SVE_FMA32(s6, 5); SVE_FMA32(s7, 6); SVE_FMA32(s8, 7);
    }
    for (int i = np; i < np2; i += epr) SVE_FMA32(s1, 0);
#undef SVE_FMA32
    if (np2 < n) {
        const svbool_t pt = svwhilelt_b32_s32(np2, n);
        s1 = svmla_f32_m(pt, s1, svld1_f32(pt, x + np2), svld1_f32(pt, y + np2));
    }
    s1 = svadd_f32_m(pg, s1, s2);
    s3 = svadd_f32_m(pg, s3, s4);
    s5 = svadd_f32_m(pg, s5, s6);
    s7 = svadd_f32_m(pg, s7, s8);
    s1 = svadd_f32_m(pg, s1, s3);
    s5 = svadd_f32_m(pg, s5, s7);
    s1 = svadd_f32_m(pg, s1, s5);
    return svaddv_f32(pg, s1);
}

/* ggml_sve_f16_fma_widened without SVE2: even and odd f16 lanes widened, fused into lo / hi */
NINLINE void sve_f16_fma(svfloat32_t *lo, svfloat32_t *hi, svfloat16_t x, svfloat16_t y) {
    const svbool_t pg = svptrue_b32();
    *lo = svmla_f32_x(pg, *lo, svcvt_f32_f16_x(pg, svtrn1_f16(x, x)), svcvt_f32_f16_x(pg, svtrn1_f16(y, y)));
    *hi = svmla_f32_x(pg, *hi, svcvt_f32_f16_x(pg, svtrn2_f16(x, x)), svcvt_f32_f16_x(pg, svtrn2_f16(y, y)));
}

/* 4 accumulator pairs over 8 vectors of svcnth() lanes per step, the one-vector loop and the
 * predicated tail into the first pair, the pairs summed as (1 + 2) + (3 + 4), then
 * svaddv(lo) + svaddv(hi) */
static float sve_dot_f16(const uint8_t *xb, const uint8_t *yb, int n) {
    const __fp16 *x = (const __fp16 *)(const void *)xb, *y = (const __fp16 *)(const void *)yb;
    const svbool_t p16 = svptrue_b16(), p32 = svptrue_b32();
    const int epr = (int)svcnth(), step = 8 * epr;
    const int np = n - n % step, np2 = n - n % epr;
    svfloat32_t l1 = svdup_n_f32(0.0f), h1 = l1, l2 = l1, h2 = l1, l3 = l1, h3 = l1, l4 = l1, h4 = l1;
#define SVE_FMA16(lo, hi, j) sve_f16_fma(&lo, &hi, svld1_f16(p16, x + i + (j) * epr), svld1_f16(p16, y + i + (j) * epr))
    for (int i = 0; i < np; i += step) {
        SVE_FMA16(l1, h1, 0); SVE_FMA16(l2, h2, 1); SVE_FMA16(l3, h3, 2); SVE_FMA16(l4, h4, 3);
        SVE_FMA16(l1, h1, 4); SVE_FMA16(l2, h2, 5); SVE_FMA16(l3, h3, 6); SVE_FMA16(l4, h4, 7);
    }
    for (int i = np; i < np2; i += epr) SVE_FMA16(l1, h1, 0);
#undef SVE_FMA16
    if (np2 < n) {
        const svbool_t pt = svwhilelt_b16_s32(np2, n);
        sve_f16_fma(&l1, &h1, svld1_f16(pt, x + np2), svld1_f16(pt, y + np2));
    }
    l1 = svadd_f32_m(p32, l1, l2);
    h1 = svadd_f32_m(p32, h1, h2);
    l3 = svadd_f32_m(p32, l3, l4);
    h3 = svadd_f32_m(p32, h3, h4);
    l1 = svadd_f32_m(p32, l1, l3);
    h1 = svadd_f32_m(p32, h1, h3);
    return svaddv_f32(p32, l1) + svaddv_f32(p32, h1);
}

static void sve_f32_vd(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t wrb, const void *restrict xq,
                       size_t xrb, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    for (int64_t r = row0; r < row1; r++)
        for (int t = 0; t < n_tok; t++)
            y[(size_t)t * ldy + (size_t)r] = sve_dot_f32((const float *)(const void *)(w + (size_t)r * wrb),
                                                         (const float *)(const void *)((const uint8_t *)xq + (size_t)t * xrb), (int)n_in);
}

static void sve_f16_vd(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t wrb, const void *restrict xq,
                       size_t xrb, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    for (int64_t r = row0; r < row1; r++)
        for (int t = 0; t < n_tok; t++)
            y[(size_t)t * ldy + (size_t)r] = sve_dot_f16(w + (size_t)r * wrb, (const uint8_t *)xq + (size_t)t * xrb, (int)n_in);
}

/* Whether ggml_compute_forward_mul_mat runs the two-row i8mm vec_dot (nrc 2) on column col of
 * an op with N columns and n_out rows: rows and columns even, and the chunk of rows and of
 * columns it works on even. Chunks: 16 x 16 (as many as fit: the column chunks are
 * ceil(N / ceil(N / 16)) wide). Not followed: its re-chunking by thread when that plan has fewer
 * than 4 chunks per thread (ops under 64 x nth rows x columns: not a Gemma weight's). */
static int i8mm_nrc2(int64_t N, int64_t col, int64_t n_out) {
    if (N % 2 || n_out % 2) return 0;
    const int64_t nc0 = (n_out + 15) / 16, dr0 = (n_out + nc0 - 1) / nc0;
    const int64_t nc1 = (N + 15) / 16, dr1 = (N + nc1 - 1) / nc1;
    const int64_t c1 = col / dr1, w1 = (c1 + 1) * dr1 <= N ? dr1 : N - c1 * dr1;
    return dr0 % 2 == 0 && (n_out - (nc0 - 1) * dr0) % 2 == 0 && w1 % 2 == 0;
}

/* armv8.6_1's kernel choice: its 8x8 q4_K / q5_K kernels (gemm for the columns below
 * N - N % 4, gemv for the rest, as for the 8x4 ones); for the weights it does not repack its
 * vec_dot: two rows at a time by i8mm for q4_0, q4_1, q8_0 and q4_K where mul_mat allows
 * (i8mm_nrc2), else its SVE vec_dot for q4_0, q8_0 and q2_K (kern_i8mm_vd.c); everything else
 * as armv8.2_2 */
static g4_matmul_fn i8mm_pick(const g4_kern *k, uint32_t type, int64_t N, int64_t col, int64_t n_in, int64_t n_out,
                              unsigned flags) {
    const int plain = flags & KERN_PLAIN;
    if (!plain && n_out % 8 == 0) {
        const int gemm = col < N - N % 4;
        if (type == G4_TYPE_Q4_K) return gemm ? i8mm_q4_K_mm : neon_q4_K_rpi;
        if (type == G4_TYPE_Q5_K) return gemm ? neon_q5_K_rpim : neon_q5_K_rpi;
        if (type == G4_TYPE_Q6_K) return gemm ? i8mm_q6_K_mm : neon_q6_K_rpv;
    }
    const int b32 = type == G4_TYPE_Q8_0 || type == G4_TYPE_Q4_0;
    if (b32 && !plain && n_out % 4 == 0) return neon_pick(k, type, N, col, n_in, n_out, flags); /* repacked */
    if ((b32 || type == G4_TYPE_Q4_1 || type == G4_TYPE_Q4_K) && i8mm_nrc2(N, col, n_out))
        return type == G4_TYPE_Q8_0 ? i8mm_q8_0_vd2 : type == G4_TYPE_Q4_0 ? i8mm_q4_0_vd2
             : type == G4_TYPE_Q4_1 ? i8mm_q4_1_vd2 : i8mm_q4_K_vd2;
    /* no llamafile in that build: no tinyBLAS for Q8_0 / Q4_0 (nor F32 / F16) */
    if (type == G4_TYPE_F32 || type == G4_TYPE_F16 || b32 || type == G4_TYPE_Q2_K) return k->matmul[type];
    return neon_pick(k, type, N, col, n_in, n_out, flags);
}

/* vec.cpp ggml_vec_soft_max_f32 under SVE: blocks of svcntw() cells, each svaddv'd */
static double i8mm_expsum(float *x, int64_t n, int64_t cell0) { return neon_expsum_w(x, n, cell0, (int)svcntw()); }

/* The table at a vector length: the attention's V.p hull is the period of sve_dot_f16 (8
 * vectors: 64 cells at 128-bit SVE, 128 at 256; wider vectors keep 128, G4_ATTN_HULL, and are
 * not followed there). vec_w 1: SVE's softmax has no scalar tail (its last block is
 * predicated), so the router's softmax runs every cell through expsum (moe.c). */
#define I8MM_TABLE(hull) {                                                                                  \
        .name = "i8mm",                                                                                     \
        .geglu = neon_geglu,                                                                                \
        .pick = i8mm_pick,                                                                                  \
        .expsum = i8mm_expsum,                                                                              \
        .softcap = neon_softcap,                                                                            \
        .softcap_ref = kern_softcap_fdf,                                                                    \
        .vec_w = 1,                                                                                         \
        .attn_hull = hull,                                                                                  \
        .act_q8_inv = 1,                                                                                    \
        .f16_lanes = 0, /* F16: f32 accumulators (the SVE vec_dot) */                                       \
        .matmul = NEON_MATMUL_VD(sve_f32_vd, sve_f16_vd, i8mm_q4_0_sv, i8mm_q8_0_sv, i8mm_q2_K_sv),        \
        .quantize_act = NEON_QUANT_ACT,                                                                     \
    }
static const g4_kern TABLE_128 = I8MM_TABLE(64);
static const g4_kern TABLE_256 = I8MM_TABLE(128);

const g4_kern *kern_table_i8mm(void) { return svcntb() <= 16 ? &TABLE_128 : &TABLE_256; }
