/* test_norm.c - RMSNorm's sum of squares (forward.c forward_sumsq): taken in lanes, it must
 * give llama.cpp's element-order double sum's mean, (float)(sum / n), bit for bit on every row:
 *   - random rows of many lengths and magnitudes (narrow, 2^-60 .. 2^60 spreads, zeros,
 *     subnormal squares, squares past FLT_MAX), one to eleven rows a call;
 *   - rows built so that the lanes' mean sits on a float rounding tie: forward_sumsq_safe
 *     must refuse them, and the element-order chain must then give the mean (nine such rows
 *     among eleven in one call);
 *   - forward_sumsq_safe on sums placed at float ties and exactly on floats. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "t.h"

static uint64_t rs = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return rs;
}
static double unif(void) { return (double)(rnd() >> 11) * 0x1p-53; }

static int same_mean(double a, double b, int64_t n) {
    const float x = (float)(a / (double)n), y = (float)(b / (double)n);
    return memcmp(&x, &y, sizeof x) == 0;
}

/* one random row: kind 0 unit normal-ish, 1 exponents over 2^-60 .. 2^60, 2 mostly zeros,
 * 3 tiny (squares subnormal or zero), 4 huge (squares past FLT_MAX: inf) */
static void fill(float *x, int64_t n, int kind) {
    for (int64_t i = 0; i < n; i++) {
        const double s = rnd() & 1 ? -1.0 : 1.0;
        switch (kind) {
        case 0: x[i] = (float)(s * (unif() + unif() + unif() - 1.5)); break;
        case 1: x[i] = (float)(s * (1.0 + unif()) * ldexp(1.0, (int)(rnd() % 121) - 60)); break;
        case 2: x[i] = rnd() % 16 ? 0.0f : (float)(s * unif()); break;
        case 3: x[i] = (float)(s * unif() * 0x1p-70); break;
        default: x[i] = (float)(s * (1.0 + unif()) * (rnd() % 64 ? 1.0 : 0x1p70)); break;
        }
    }
}

T_GROUP(norm) {
    /* random rows against the element-order chain */
    enum { NMAX = 5000, RMAX = 11 };
    float *buf = malloc(sizeof(float) * NMAX * RMAX);
    T_CHECK(buf != NULL);
    if (!buf) return;
    long rows = 0, bad = 0, refused = 0;
    static const int64_t lens[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 64, 255, 256, 512, 1536, 2048, 2816, 5000 };
    for (int it = 0; it < 2400; it++) {
        const int64_t n = it % 3 ? lens[rnd() % (sizeof lens / sizeof lens[0])] : 1 + (int64_t)(rnd() % NMAX);
        const int nr = 1 + (int)(rnd() % RMAX), kind = (int)(rnd() % 5);
        const float *xr[RMAX];
        double got[RMAX], ref[RMAX];
        for (int r = 0; r < nr; r++) {
            fill(buf + (size_t)r * NMAX, n, kind);
            xr[r] = buf + (size_t)r * NMAX;
        }
        forward_sumsq(xr, nr, n, got);
        forward_sumsq_ref(xr, nr, n, ref);
        for (int r = 0; r < nr; r++, rows++) {
            if (!same_mean(got[r], ref[r], n)) bad++;
            if (!forward_sumsq_safe(got[r], n)) refused++;
        }
    }
    T_CHECKF(bad == 0, "%ld of %ld rows: the lanes' mean differs from the element-order one", bad, rows);
    (void)refused;

    /* a row on a tie: squares of 1 + 2^-23 and 1 - 2^-24 are 1 + 2^-22 and 1 - 2^-23, their
     * sum 2 + 2^-23, the mean 1 + 2^-24: halfway between the floats 1 and 1 + 2^-23 */
    const float tie[2] = { 1.0f + 0x1p-23f, 1.0f - 0x1p-24f };
    const double st = (double)(tie[0] * tie[0]) + (double)(tie[1] * tie[1]);
    T_CHECK(st == 2.0 + 0x1p-23);
    T_CHECK(!forward_sumsq_safe(st, 2));
    const float *xt[RMAX];
    double gt[RMAX], rt[RMAX];
    for (int r = 0; r < RMAX; r++) xt[r] = r % 6 == 1 ? buf : tie; /* 9 of 11 rows refused */
    fill(buf, 2, 0);
    forward_sumsq(xt, RMAX, 2, gt);
    forward_sumsq_ref(xt, RMAX, 2, rt);
    int tie_ok = 1;
    for (int r = 0; r < RMAX; r++) tie_ok &= memcmp(&gt[r], &rt[r], sizeof gt[r]) == 0 || (r % 6 == 1 && same_mean(gt[r], rt[r], 2));
    T_CHECK(tie_ok);

    /* the check itself: sums whose mean is a float tie are refused, exact floats pass, and
     * so do zero; NaN and infinities are refused */
    for (int i = 0; i < 200; i++) {
        const float f = (float)((1.0 + unif()) * ldexp(1.0, (int)(rnd() % 200) - 100));
        const double mid = 0.5 * ((double)f + (double)nextafterf(f, INFINITY));
        const int64_t n = 1 + (int64_t)(rnd() % 4096);
        T_CHECK(!forward_sumsq_safe(mid * (double)n, n) || mid * (double)n / (double)n != mid);
        T_CHECK(forward_sumsq_safe((double)f * (double)n, n) || (double)f * (double)n / (double)n != (double)f);
    }
    T_CHECK(forward_sumsq_safe(0.0, 1536));
    T_CHECK(!forward_sumsq_safe(NAN, 1536));
    T_CHECK(!forward_sumsq_safe(INFINITY, 1536));
    free(buf);
}
