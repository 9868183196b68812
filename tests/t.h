/* t.h - the test harness: groups, checks, NMSE. No framework.
 *
 *   T_GROUP(gguf) { T_CHECK(1 + 1 == 2); T_NEAR(x, 1.0, 1e-6); }
 *
 * Groups register themselves (constructor attribute) and run from tests/test_main.c:
 *   build/g4-test            all groups
 *   build/g4-test gguf quant only these
 * The runner prints one line per failed check and ends with "N passed, M failed",
 * counting checks.
 */
#ifndef G4_T_H
#define G4_T_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*t_fn)(void);
void t_register(const char *name, t_fn fn);
void t_result(int ok, const char *file, int line, const char *expr);
extern const char *t_current_group;
extern long t_n_pass, t_n_fail;

#define T_GROUP(name)                                                              \
    static void t_group_##name(void);                                              \
    __attribute__((constructor)) static void t_reg_##name(void) {                  \
        t_register(#name, t_group_##name);                                         \
    }                                                                              \
    static void t_group_##name(void)

#define T_CHECK(c) t_result(!!(c), __FILE__, __LINE__, #c)
/* check with a printf-style explanation on failure */
#define T_CHECKF(c, ...) do { int t_ok_ = !!(c); t_result(t_ok_, __FILE__, __LINE__, #c); \
        if (!t_ok_) { fprintf(stderr, "    "); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)
#define T_NEAR(a, b, tol) do { double t_a_ = (a), t_b_ = (b);                       \
        int t_ok_ = fabs(t_a_ - t_b_) <= (tol);                                    \
        t_result(t_ok_, __FILE__, __LINE__, #a " ~ " #b);                          \
        if (!t_ok_) fprintf(stderr, "    %.9g vs %.9g (tol %g)\n", t_a_, t_b_, (double)(tol)); } while (0)

/* normalised mean squared error sum((ref-out)^2)/sum(ref^2); 0 when both are all zero */
static inline double t_nmse(const float *ref, const float *out, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)ref[i] - (double)out[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    if (den == 0) return num == 0 ? 0 : (double)INFINITY;
    return num / den;
}

/* deterministic test RNG (splitmix64) */
static inline uint64_t t_rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline float t_rng_uniform(uint64_t *s) { /* [-1, 1) */
    return (float)((double)(t_rng_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

#endif
