/* kern_x86_rq6k.h - Q6_K stored repacked in 16-row tiles (one row per i32 lane), for the zmm
 * tables. Included by kern_x86_tmpl.h in the AVX-512 build (KX_F512) after kern_x86_rq4k.h
 * (rq_tr16) and the row-major Q6_K kernels, whose bits it gives.
 *
 * The float order is dot_q6_K_ymm's (one order for one column or many: llama.cpp's
 * ggml_vec_dot_q6_K_q8_K): per row, 8 i32 lanes per super-block, lane L holding
 *   sum over chunks j < 8 of scale[2j + (L >= 4)] * dot(codes 32j + 4L .. + 3, a same)
 *     - 32 * (scale[2L] * bsum[2L] + scale[2L + 1] * bsum[2L + 1])
 * (codes 0..63, stored q + 32; a: the token's Q8_K values), then
 *   acc[L] = fma(d(token) * d(row), (float)lane[L], acc[L])   per super-block in order,
 *   y = ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7))   (hsum_ps).
 * Only the exact integers are formed another way, so the bits are the same.
 *
 * The row-major kernels spend about as many vector ops unpacking codes and folding each row's
 * lanes as multiplying (q6_dots_z, dot_q6_K_zt). Here a tile's lane r is row r, so every
 * vector of codes, scales and sums serves 16 rows and nothing is folded across lanes: per 16
 * rows, 4 codes and one token, one vpdpbusd (the token's 4 activations a broadcast dword) and
 * one vpdpwssd by the rows' scales; the unpacking is shared by the tokens of a pass.
 *
 * Tile layout (16 rows of nb super-blocks, rows r of 210 bytes per super-block): super-block i
 * of the tile is RQ6_SB bytes at 3360 i, the 16 rows' super-blocks i transposed by dwords:
 *   bytes 64k + 4r + b = row r's byte 4k + b, k < 52 (ql: k < 32, qh: 32..47, scales 48..51)
 *   bytes 3328 + 2r + b = row r's byte 208 + b (d)
 * in the same bytes as the 16 rows (kern.h repack_q6_K; kern_q6_K_rq_block reads rows back). */
#define RQ6_SB 3360
#define RQ6_PF (2 * RQ6_SB) /* prefetch lead of the first token group's pass (3 -> 2 super-blocks:
                             * 31.4-34.2 -> 32.7-36.5 GB/s; with the lines by halves, 1.5 or 3
                             * super-blocks ahead or by quarters (as rq16_run's) no better) */
/* The lines are prefetched half a super-block at a time, 26 at each half's start (lanes 0-3,
 * 4-7), not each next to its load nor all 53 at the super-block's start. Zen 5, the LM head 1536
 * x 262144 from DRAM against the row-major kernel on the same matrix, alternating in one process
 * (4 runs of 5, a window where 2 threads read barely more than 1): next to each load 0.88-0.97 of
 * it on 1 thread and 0.73-0.78 on 2 (the tiles' 2-thread rate stuck at their 1-thread one),
 * all at the start 0.92-0.97 and 0.92-1.00, by halves 0.96-0.99 and 0.86-0.96 (next to each
 * load had replaced all at the start on 1-thread runs: 96-97% -> 105-109% of a load-sum) */
#define RQ6_TG 4            /* tokens per pass */
#define RQ6_SBC 4           /* super-blocks per chunk: a chunk's tiles stay in L1 for the block's tokens */
#define RQ6_TB 32           /* tokens per block (16 KB of state) */

/* rows 0 .. 15 of src (row bytes wrb, nb super-blocks each) -> one tile at dst */
static void rq6_repack_tile(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *o = dst + (size_t)i * RQ6_SB;
        KUNROLL
        for (int c = 0; c < 3; c++) { /* bytes 64c .. 64c + 63: ql, ql, qh */
            __m512i R[16], T[16];
            KUNROLL
            for (int r = 0; r < 16; r++) R[r] = ld512(src + (size_t)r * wrb + (size_t)i * 210 + 64 * c);
            rq_tr16(R, T);
            KUNROLL
            for (int k = 0; k < 16; k++) _mm512_storeu_si512(o + 64 * (16 * c + k), T[k]);
        }
        for (int r = 0; r < 16; r++) {
            const uint8_t *b = src + (size_t)r * wrb + (size_t)i * 210;
            for (int k = 48; k < 52; k++) memcpy(o + 64 * k + 4 * r, b + 4 * k, 4);
            memcpy(o + 3328 + 2 * r, b + 208, 2);
        }
    }
}

/* the n_out rows (a multiple of 16) of a Q6_K matrix at src -> dst, tile by tile */
static void rq6_repack(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in, int64_t n_out) {
    for (int64_t r = 0; r + 16 <= n_out; r += 16) rq6_repack_tile(dst + (size_t)r * wrb, src + (size_t)r * wrb, wrb, n_in / 256);
}

/* vpshufb controls (per 128-bit lane): RQ6_SCB[b]: byte b of each dword to byte 1, zeros
 * elsewhere (then vpsraw 8: the signed scale in the dword's low word, a zero above, as
 * vpdpwssd's exact multiplier of a dword that fits an i16); RQ6_S2[h]: bytes 2h, 2h + 1 of
 * each dword to bytes 1 and 3 (then vpsraw 3: the two scales times 32 as two words) */
#define RQ6_X 0x80 /* + 4, 8, 12 below: still bit 7, a zero byte */
#define RQ6_L4(a, b, c, d) a, b, c, d, 4 + (a), 4 + (b), 4 + (c), 4 + (d), 8 + (a), 8 + (b), 8 + (c), 8 + (d), 12 + (a), 12 + (b), 12 + (c), 12 + (d)
#define RQ6_Z4(a, b, c, d) RQ6_L4(a, b, c, d), RQ6_L4(a, b, c, d), RQ6_L4(a, b, c, d), RQ6_L4(a, b, c, d)
static const uint8_t RQ6_SCB[4][64] __attribute__((aligned(64))) = {
    { RQ6_Z4(RQ6_X, 0, RQ6_X, RQ6_X) }, { RQ6_Z4(RQ6_X, 1, RQ6_X, RQ6_X) },
    { RQ6_Z4(RQ6_X, 2, RQ6_X, RQ6_X) }, { RQ6_Z4(RQ6_X, 3, RQ6_X, RQ6_X) },
};
static const uint8_t RQ6_S2[2][64] __attribute__((aligned(64))) = {
    { RQ6_Z4(RQ6_X, 0, RQ6_X, 1) }, { RQ6_Z4(RQ6_X, 2, RQ6_X, 3) },
};
#undef RQ6_Z4
#undef RQ6_L4
#undef RQ6_X

/* the SIMDe test build keeps rq6_run's loops rolled: unrolled copies of SIMDe's emulation
 * took minutes to compile */
#if defined(G4_SIMDE_AVX512)
#define RQ6_UNROLL _Pragma("GCC unroll 1")
#else
#define RQ6_UNROLL KUNROLL
#endif

KINLINE __m512i rq6_bcast(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return _mm512_set1_epi32(v); }

/* ns repacked super-blocks at p (i0 .. of the rows) x T tokens (x: token 0's Q8_K row, xrb
 * apart); st[t][L]: token t's acc lane L of the 16 rows, carried over calls; pf: prefetch;
 * fresh: the state starts here (rq_st) */
KINLINE void rq6_run(const uint8_t *restrict p, int ns, const uint8_t *restrict x, size_t xrb, int64_t i0,
                     const int T, float (*restrict st)[8][16], const int pf, const int fresh) {
    const __m512i zero = _mm512_setzero_si512(), m4 = _mm512_set1_epi8(0x0f), m33 = _mm512_set1_epi8(0x33);
    /* bits 0-3 of a, 4-7 of b (vpternlogd 0xe4: m4 ? a : b, bit by bit) */
#define RQ6_SEL(a, b) _mm512_ternarylogic_epi32(a, b, m4, 0xe4)
    for (int j = 0; j < ns; j++, p += RQ6_SB) {
        /* the d fields' line here, lines 26h .. 26h + 25 at half h's start: the 53 lines of
         * [p, p + RQ6_SB) whatever p's alignment */
        if (pf) rq_pf_lines(p + RQ6_PF, 3328, 3329);
        const uint8_t *xb = x + (size_t)(i0 + j) * 292;
        const __m512 d = _mm512_cvtph_ps(ld256(p + 3328));
        __m512 dd[RQ6_TG];
        RQ6_UNROLL
        for (int t = 0; t < T; t++) dd[t] = _mm512_mul_ps(d, _mm512_set1_ps(rdf(xb + t * xrb)));
        RQ6_UNROLL
        for (int h = 0; h < 2; h++) { /* lanes 4h .. 4h + 3: the scales of groups 2jj + h */
            if (pf) rq_pf_lines(p + RQ6_PF, 64 * 26 * h, 64 * (26 * h + 26));
            __m512i S[8];
            RQ6_UNROLL
            for (int jj = 0; jj < 8; jj++) {
                const int g = 2 * jj + h;
                S[jj] = _mm512_srai_epi16(_mm512_shuffle_epi8(ld512(p + 64 * (48 + g / 4)), _mm512_load_si512(RQ6_SCB[g % 4])), 8);
            }
            for (int l = 0; l < 4; l++) { /* rolled: unrolled measured slower (registers) */
                const int L = 4 * h + l;
                /* (-32 scale[2L], -32 scale[2L + 1]) as two words: the bsums correction */
                const __m512i S2 = _mm512_sub_epi16(zero, _mm512_srai_epi16(_mm512_shuffle_epi8(ld512(p + 64 * (48 + L / 2)),
                                                                                               _mm512_load_si512(RQ6_S2[L % 2])), 3));
                __m512i acc[RQ6_TG];
                RQ6_UNROLL
                for (int t = 0; t < T; t++) acc[t] = _mm512_dpwssd_epi32(zero, S2, rq6_bcast(xb + t * xrb + 260 + 4 * L));
                RQ6_UNROLL
                for (int c = 0; c < 2; c++) {
                    const __m512i QL0 = ld512(p + 64 * (16 * c + L)), QL1 = ld512(p + 64 * (16 * c + 8 + L));
                    const __m512i QH = ld512(p + 64 * (32 + 8 * c + L));
                    /* code k = low nibble | qh field k << 4: the fields 0, 2 and 1, 3 apart, so
                     * that each shift leaves zeros in bits 6-7 (the next byte's bits that move
                     * in land in bits 0-3, which the bit-select takes from the low nibbles) */
                    const __m512i Q02 = _mm512_and_si512(QH, m33), Q13 = _mm512_andnot_si512(m33, QH);
                    __m512i W[4];
                    W[0] = RQ6_SEL(QL0, _mm512_slli_epi16(Q02, 4));
                    W[1] = RQ6_SEL(QL1, _mm512_slli_epi16(Q13, 2));
                    W[2] = RQ6_SEL(_mm512_srli_epi16(QL0, 4), Q02);
                    W[3] = RQ6_SEL(_mm512_srli_epi16(QL1, 4), _mm512_srli_epi16(Q13, 2));
                    RQ6_UNROLL
                    for (int k = 0; k < 4; k++) {
                        const int jj = 4 * c + k;
                        RQ6_UNROLL
                        for (int t = 0; t < T; t++) {
                            /* |dot of 4| <= 4 * 63 * 128: an i16, multiplied exactly by vpdpwssd */
                            /* the broadcast as vpdpbusd's memory operand (rq_dp): as a separate
                             * vpbroadcastd measured 1.2-1.5x slower in L2 */
                            const __m512i D = rq_dp(zero, W[k], xb + t * xrb + 4 + 32 * jj + 4 * L);
                            acc[t] = _mm512_dpwssd_epi32(acc[t], D, S[jj]);
                        }
                    }
                }
                RQ6_UNROLL
                for (int t = 0; t < T; t++)
                    _mm512_store_ps(st[t][L], _mm512_fmadd_ps(dd[t], _mm512_cvtepi32_ps(acc[t]), rq_st(st[t][L], fresh && j == 0)));
            }
        }
    }
}

#if defined(G4_SIMDE_AVX512)
static __attribute__((noinline)) void rq6_run_rt(const uint8_t *restrict p, int ns, const uint8_t *restrict x, size_t xrb,
                                                 int64_t i0, int T, float (*restrict st)[8][16], int pf, int fresh) {
    rq6_run(p, ns, x, xrb, i0, T, st, pf, fresh);
}
#define RQ6_RUN(p, ns, x, xrb, i0, T, st, pf, fr) rq6_run_rt(p, ns, x, xrb, i0, T, st, pf, fr)
#else
#define RQ6_RUN(p, ns, x, xrb, i0, T, st, pf, fr) rq6_run(p, ns, x, xrb, i0, T, st, pf, fr)
#endif

/* A matmul over repacked tiles whose state is 8 f32 lanes per row and token, summed at the end
 * in hsum_ps's order, then a min chain in lane 8 added where NL = 9 (kern.h contract): its RUN
 * over chunks of SBC super-blocks of SB bytes, passes of up to 4 tokens, blocks of TB tokens (the
 * chunk's tiles stay in L1/L2 for the block's passes). Rows row0 .. row1 - 1 may cut tiles: a
 * cut tile is computed whole and its rows in range stored. Q6_K here, Q5_K (kern_x86_rq5k.h). */
#define DEF_MM_RQ_LANES(name, RUN, SB, SBC, TB, NL)                                                    \
    static void name(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,     \
                     const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1, \
                     int n_tok) {                                                                       \
        const uint8_t *x = xq;                                                                         \
        const int64_t nb = n_in / 256;                                                                 \
        _Alignas(64) float st[TB][NL][16];                                                             \
        for (int64_t rt = row0 & ~(int64_t)15; rt < row1; rt += 16) {                                  \
            const uint8_t *tile = w + (size_t)rt * w_row_bytes;                                        \
            const int64_t r0 = rt < row0 ? row0 : rt, r1 = rt + 16 < row1 ? rt + 16 : row1;           \
            for (int tb = 0; tb < n_tok; tb += TB) {                                                   \
                const int ntb = n_tok - tb < TB ? n_tok - tb : TB;                                     \
                const uint8_t *xt = x + (size_t)tb * xq_row_bytes;                                     \
                for (int64_t i0 = 0; i0 < nb; i0 += SBC) {                                             \
                    const int ns = nb - i0 < SBC ? (int)(nb - i0) : SBC;                               \
                    const uint8_t *p = tile + (size_t)i0 * SB;                                         \
                    const int fr = i0 == 0;                                                            \
                    for (int t = 0; t < ntb; t += 4) {                                                 \
                        const uint8_t *xg = xt + (size_t)t * xq_row_bytes;                             \
                        const int pf = tb == 0 && t == 0;                                              \
                        switch (ntb - t < 4 ? ntb - t : 4) {                                           \
                        case 4: RUN(p, ns, xg, xq_row_bytes, i0, 4, st + t, pf, fr); break;            \
                        case 3: RUN(p, ns, xg, xq_row_bytes, i0, 3, st + t, pf, fr); break;            \
                        case 2: RUN(p, ns, xg, xq_row_bytes, i0, 2, st + t, pf, fr); break;            \
                        default: RUN(p, ns, xg, xq_row_bytes, i0, 1, st + t, pf, fr); break;           \
                        }                                                                              \
                    }                                                                                  \
                }                                                                                      \
                for (int t = 0; t < ntb; t++) {                                                        \
                    __m512 a[8];                                                                       \
                    KUNROLL                                                                            \
                    for (int L = 0; L < 8; L++) a[L] = _mm512_load_ps(st[t][L]);                      \
                    /* hsum_ps's order on each row's 8 lanes */                                        \
                    __m512 v = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])), \
                                             _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7]))); \
                    if ((NL) > 8) v = _mm512_add_ps(v, _mm512_load_ps(st[t][(NL) - 1]));              \
                    rq_store(y + (size_t)(tb + t) * ldy, rt, r0, r1, v);                               \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
    }
_Static_assert(RQ6_TG == 4, "DEF_MM_RQ_LANES passes up to 4 tokens");
DEF_MM_RQ_LANES(mm_q6_K_rq_z, RQ6_RUN, RQ6_SB, RQ6_SBC, RQ6_TB, 8)
