/* kern_x86_rq5k.h - Q5_K stored repacked in 16-row tiles (one row per i32 lane), for the zmm
 * tables. Included by kern_x86_tmpl.h in the AVX-512 build (KX_F512) after kern_x86_rq4k.h
 * (rq_codes_tr, rq_scales_mins, rq_dp, rq_st, rq_store) and the row-major Q5_K kernels, whose bits it gives.
 *
 * The float order is dot_q5_K_ggml's (llama.cpp's ggml_vec_dot_q5_K_q8_K, one order for one
 * column or many): per row and super-block, 8 i32 lanes, lane L holding
 *   sum over sub-blocks s of scale[s] * dot(codes 32s + 4L .. + 3, the token's activations there)
 * (codes 0..31: low nibble + 16 * high bit), and one integer imin = sum over s of min[s] * bsum[s];
 * then per super-block in order
 *   acc[L] = fma(d(token) * d(row), (float)lane[L], acc[L]),
 *   summs  = fma(-(d(token) * dmin(row)), (float)imin, summs),
 * and y = ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7)) + summs (hsum_ps).
 * Only the exact integers are formed another way, so the bits are the same.
 *
 * The row-major kernels read four row streams (dot4_q5_K_z1) and fold each row's lanes; here a
 * tile's lane r is row r: per 16 rows, 4 codes and one token, one vpdpbusd (the token's 4
 * activations a broadcast dword) and one vpdpwssd by the rows' scales, the high bits merged once
 * per code vector for the tokens of a pass. A tile is one stream.
 *
 * Tile layout (16 rows of nb super-blocks, rows r of 176 bytes per super-block): super-block i
 * of the tile is RQ5_SB bytes at 2816 i:
 *   [0, 32)      the rows' d (f16), row r at 2r
 *   [32, 64)     their dmin
 *   [64, 256)    their 12 scale bytes as 3 dwords: dword c of row r at 64 + 64c + 4r
 *   [256, 768)   qh: row r's qh bytes 4g .. 4g + 3 at 256 + 64g + 4r (g < 8)
 *   [768, 2816)  codes: row r's qs bytes 32k + 4g .. + 3 at 768 + 64 (8k + g) + 4r (k < 4, g < 8;
 *                low nibbles: sub-block 2k, high: 2k + 1; their high bits: qh bits 2k, 2k + 1)
 * in the same bytes as the 16 rows (tile j where rows 16j .. 16j + 15 were). */
#define RQ5_SB 2816
#ifndef RQ5_PF
/* prefetch lead of the first token group's pass, 2.5 super-blocks, the lines a quarter
 * super-block (11 lines) at a time, at lane groups 0, 2, 4, 6 (as rq16_run's quarters). Zen 5,
 * against the row-major kernel in one process (1 thread): 80 DRAM-resident 1536 x 6144 matrices,
 * 3 runs of 3, by halves 2 ahead 0.95-0.98 of it, by quarters 2 / 2.5 / 3 ahead 0.92-0.97 /
 * 0.98-0.99 / 0.94-0.96, by halves 2.5 ahead 0.96-0.97; the LM head 1536 x 262144 0.95-0.97 ->
 * 0.99-1.01. (Before: by halves instead of all lines at the super-block's start, the LM head
 * 0.93-0.94 -> 0.95-0.98; each line next to its load had measured as all at the start) */
#define RQ5_PF (5 * RQ5_SB / 2)
#endif
#define RQ5_TG 4  /* tokens per pass */
#define RQ5_SBC 4 /* super-blocks per chunk: a chunk's tiles stay in L1/L2 for the block's tokens */
#define RQ5_TB 32 /* tokens per block (18 KB of state) */

/* rows 0 .. 15 of src (row bytes wrb, nb super-blocks each) -> one tile at dst */
static void rq5_repack_tile(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *o = dst + (size_t)i * RQ5_SB;
        for (int r = 0; r < 16; r++) {
            const uint8_t *b = src + (size_t)r * wrb + (size_t)i * 176;
            memcpy(o + 2 * r, b, 2), memcpy(o + 32 + 2 * r, b + 2, 2);
            for (int c = 0; c < 3; c++) memcpy(o + 64 + 64 * c + 4 * r, b + 4 + 4 * c, 4);
            for (int g = 0; g < 8; g++) memcpy(o + 256 + 64 * g + 4 * r, b + 16 + 4 * g, 4);
        }
        rq_codes_tr(o + 768, src + (size_t)i * 176 + 48, wrb);
    }
}

/* the n_out rows (a multiple of 16) of a Q5_K matrix at src -> dst, tile by tile */
static void rq5_repack(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in, int64_t n_out) {
    for (int64_t r = 0; r + 16 <= n_out; r += 16) rq5_repack_tile(dst + (size_t)r * wrb, src + (size_t)r * wrb, wrb, n_in / 256);
}

/* the SIMDe test build keeps the loops rolled (as kern_x86_rq6k.h) */
#if defined(G4_SIMDE_AVX512)
#define RQ5_UNROLL _Pragma("GCC unroll 1")
#else
#define RQ5_UNROLL KUNROLL
#endif

/* qh bit b of each byte moved to bit 4 (the rest of the byte is masked off after) */
KINLINE __m512i rq5_hbit(__m512i qh, int b) {
    return b < 4 ? _mm512_slli_epi16(qh, 4 - b) : b > 4 ? _mm512_srli_epi16(qh, b - 4) : qh;
}

/* ns repacked super-blocks at p (i0 .. of the rows) x T tokens (x: token 0's Q8_K row, xrb
 * apart); st[t][L]: token t's acc lane L (L < 8) and summs (L = 8) of the 16 rows, carried over
 * calls; pf: prefetch RQ5_PF ahead; fresh: the state starts here */
KINLINE void rq5_run(const uint8_t *restrict p, int ns, const uint8_t *restrict x, size_t xrb, int64_t i0,
                     const int T, float (*restrict st)[9][16], const int pf, const int fresh) {
    const __m512i zero = _mm512_setzero_si512(), m4 = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10);
    const __m512i ff = _mm512_set1_epi32(0xff);
    const __m512i mlo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, -1, 1, -1, 4, -1, 5, -1, 8, -1, 9, -1, 12, -1, 13, -1));
    const __m512i mhi = _mm512_broadcast_i32x4(_mm_setr_epi8(2, -1, 3, -1, 6, -1, 7, -1, 10, -1, 11, -1, 14, -1, 15, -1));
    for (int j = 0; j < ns; j++, p += RQ5_SB) {
        const uint8_t *xb = x + (size_t)(i0 + j) * 292;
        const int z = fresh && j == 0;
        __m512i SM[4]; /* the scales of sub-blocks 0..3, 4..7, then the mins */
        rq_scales_mins(p, SM);
        /* sc[2k + h]: sub-block 2k + h's scale of each row in its dword's low word, a zero above
         * (vpdpwssd's exact multiplier of a dword that fits an i16) */
        __m512i sc[8];
        RQ5_UNROLL
        for (int s = 0; s < 8; s++) sc[s] = _mm512_and_si512(_mm512_srli_epi32(SM[s >> 2], 8 * (s & 3)), ff);
        const __m512 d = _mm512_cvtph_ps(ld256(p)), dm = _mm512_cvtph_ps(ld256(p + 32));
        /* (m(2k), m(2k + 1)) of each row as two i16, for vpmaddwd with a token's sub-block sums */
        __m512i mn[4];
        RQ5_UNROLL
        for (int k = 0; k < 4; k++) mn[k] = _mm512_shuffle_epi8(SM[2 + (k >> 1)], (k & 1) ? mhi : mlo);
        __m512 dd[RQ5_TG];
        RQ5_UNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *a = xb + t * xrb;
            int32_t bsw[4];
            float da;
            q4k_bsw(a, bsw, &da);
            dd[t] = _mm512_mul_ps(d, _mm512_set1_ps(da));
            /* imin: the rows' mins times the token's sub-block sums, exactly */
            __m512i im = _mm512_madd_epi16(mn[0], _mm512_set1_epi32(bsw[0]));
            RQ5_UNROLL
            for (int k = 1; k < 4; k++) im = _mm512_add_epi32(im, _mm512_madd_epi16(mn[k], _mm512_set1_epi32(bsw[k])));
            /* -(da * dmin): the sign bit flipped, as C's negation (0 - v would give +0 for +0) */
            const __m512 ndm = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_mul_ps(dm, _mm512_set1_ps(da))),
                                                                    _mm512_set1_epi32(INT32_MIN)));
            _mm512_store_ps(st[t][8], _mm512_fmadd_ps(ndm, _mm512_cvtepi32_ps(im), rq_st(st[t][8], z)));
        }
        for (int g = 0; g < 8; g++) { /* rolled: lane g of every row and token */
            if (pf && !(g & 1)) /* a quarter of the super-block's lines at lane groups 0, 2, 4, 6 */
                rq_pf_lines(p + RQ5_PF, RQ5_SB / 4 * (g / 2), RQ5_SB / 4 * (g / 2 + 1));
            const __m512i QH = ld512(p + 256 + 64 * g);
            __m512i acc[RQ5_TG];
            RQ5_UNROLL
            for (int t = 0; t < T; t++) acc[t] = zero;
            RQ5_UNROLL
            for (int k = 0; k < 4; k++) {
                const __m512i P = ld512(p + 768 + 64 * (8 * k + g));
                const __m512i lo = _mm512_or_si512(_mm512_and_si512(P, m4), _mm512_and_si512(rq5_hbit(QH, 2 * k), m10));
                const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(P, 4), m4),
                                                   _mm512_and_si512(rq5_hbit(QH, 2 * k + 1), m10));
                RQ5_UNROLL
                for (int t = 0; t < T; t++) {
                    /* |dot of 4| <= 4 * 31 * 127: an i16, multiplied exactly by vpdpwssd */
                    const uint8_t *a = xb + t * xrb + 4 + 64 * k + 4 * g;
                    acc[t] = _mm512_dpwssd_epi32(acc[t], rq_dp(zero, lo, a), sc[2 * k]);
                    acc[t] = _mm512_dpwssd_epi32(acc[t], rq_dp(zero, hi, a + 32), sc[2 * k + 1]);
                }
            }
            RQ5_UNROLL
            for (int t = 0; t < T; t++)
                _mm512_store_ps(st[t][g], _mm512_fmadd_ps(dd[t], _mm512_cvtepi32_ps(acc[t]), rq_st(st[t][g], z)));
        }
    }
}

#if defined(G4_SIMDE_AVX512)
static __attribute__((noinline)) void rq5_run_rt(const uint8_t *restrict p, int ns, const uint8_t *restrict x, size_t xrb,
                                                 int64_t i0, int T, float (*restrict st)[9][16], int pf, int fresh) {
    rq5_run(p, ns, x, xrb, i0, T, st, pf, fresh);
}
#define RQ5_RUN(p, ns, x, xrb, i0, T, st, pf, fr) rq5_run_rt(p, ns, x, xrb, i0, T, st, pf, fr)
#else
#define RQ5_RUN(p, ns, x, xrb, i0, T, st, pf, fr) rq5_run(p, ns, x, xrb, i0, T, st, pf, fr)
#endif

/* the Q5_K matmul over repacked tiles (kern.h contract; w as rq5_repack left it): lanes 0..7
 * and the min chain (lane 8) */
_Static_assert(RQ5_TG == 4, "DEF_MM_RQ_LANES passes up to 4 tokens");
DEF_MM_RQ_LANES(mm_q5_K_rq_z, RQ5_RUN, RQ5_SB, RQ5_SBC, RQ5_TB, 9)
