/* kern_x86_rqb32.h - Q8_0, Q5_0 and Q4_0 stored repacked in 16-row tiles (one row per i32 lane), for
 * the zmm tables. Included by kern_x86_tmpl.h in the AVX-512 build (KX_F512) after
 * kern_x86_rq4k.h (rq_dp, rq_store).
 *
 * Q8_0 and Q5_0's float order is the row-major kernels' (dot_q8_0 / dot_q5_0, llama.cpp's
 * ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q5_0_q8_0; one order for one column or many): per row,
 * 8 i32 lanes per 32-element block, lane L the exact dot of codes 4L .. 4L + 3 with the token's
 * activations there (code: Q8_0 as stored, Q5_0 nibble + 16 * fifth bit - 16), then
 *   acc[L] = fma(d(row) * d(token), (float)lane[L], acc[L])   per block in order,
 *   y = ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7))   (hsum_ps).
 * Only the exact integers are formed another way, so the bits are the same.
 *
 * The row-major zmm kernels put two rows in a register (8 lanes each) and spend most of their
 * vector ops unpacking a row pair's codes, its two scales and folding its lanes; one pass reads
 * two or four interleaved row streams. Here lane r of a vector is row r: per block, 16 rows and
 * one token take one vpdpbusd per lane L (the token's 4 activations a broadcast dword), a
 * conversion and an FMA; the codes need no sign handling: u8 codes u = code + c (Q8_0: c = 128,
 * the code's sign bit flipped at repack; Q5_0: c = 16, the nibble plus the fifth bit as a mask
 * register), and the i32 lane starts from -c * (the 4 activations' sum), a correction made once
 * per call for each token and block (rqb_prep). A tile is one stream.
 *
 * Tile layout (16 rows of nb blocks, row bytes wrb = nb * bb): block i of the tile is 16 bb
 * bytes at 16 bb i (Q8_0: bb = 34, Q5_0: 22):
 *   Q8_0  bytes 64L + 4r + b   = row r's code 4L + b, xor 0x80            (L < 8)
 *         bytes 512 + 2r + b   = row r's d (f16)
 *   Q5_0  bytes 64k + 4r + b   = row r's qs byte 4k + b                   (k < 4: codes 4k.., 16 + 4k..)
 *         bytes 256 + 8L ..    = a 64-bit mask, bit 4r + b = row r's qh bit 4L + b  (L < 8)
 *         bytes 320 + 2r + b   = row r's d (f16)
 *   Q4_0  bytes 64k + 4r + b   = row r's qs byte 4k + b                   (as Q5_0's, bb = 18)
 *         bytes 256 + 2r + b   = row r's d (f16)
 * in the same bytes as the 16 rows (tile j where rows 16j .. 16j + 15 were).
 *
 * Q4_0 follows another float order, that of its row-major kernels (tile_q4_0_z: ggml's
 * repacked q4_0_8x8 gemv and gemm, which llama.cpp's x86 builds run for Q4_0 matrices of
 * 8k rows): per row and block one exact integer, the block's whole dot (u = nibble, c = 8: the
 * eight lanes' dots summed, as integers, from -8 * (the block's 32 activations summed)), then
 *   acc = fma((float)isum, d(row) * d(token), acc)   per block in order, y = acc. */
#define RQB_TG 3      /* tokens per pass: 24 accumulators (Zen 5, 1 thread, 16-128 tokens: 2 -> 3
                       * 1.25-1.40x -> 1.40-1.78x the row-major kernels, 4 no faster) */
#define RQB_NB 1024   /* token-blocks of corrections per call chunk (32 KB): rows up to 32768 elements */
#ifndef RQB_PF
#define RQB_PF 4096   /* prefetch lead of a one-token pass, bytes */
#endif

/* the SIMDe test build keeps the tile loops rolled (as kern_x86_rq6k.h) */
#if defined(G4_SIMDE_AVX512)
#define RQB_UNROLL _Pragma("GCC unroll 1")
#else
#define RQB_UNROLL KUNROLL
#endif

/* ==== Repack ==== */

/* the n_out rows (a multiple of 16) of a Q8_0, Q5_0 or Q4_0 (ty) matrix at src -> tiles at dst */
static void rqb_repack(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in, int64_t n_out, const uint32_t ty) {
    const size_t bb = ty == G4_TYPE_Q8_0 ? 34 : ty == G4_TYPE_Q5_0 ? 22 : 18;
    const int64_t nb = n_in / 32;
    for (int64_t rt = 0; rt + 16 <= n_out; rt += 16)
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *o = dst + (size_t)rt * wrb + (size_t)i * 16 * bb;
            uint64_t mask[8] = { 0 };
            for (int r = 0; r < 16; r++) {
                const uint8_t *b = src + (size_t)(rt + r) * wrb + (size_t)i * bb;
                memcpy(o + 16 * (bb - 2) + 2 * r, b, 2); /* d: the tile block's last 32 bytes */
                if (ty == G4_TYPE_Q8_0) {
                    for (int L = 0; L < 8; L++)
                        for (int j = 0; j < 4; j++) o[64 * L + 4 * r + j] = (uint8_t)(b[2 + 4 * L + j] ^ 0x80);
                    continue;
                }
                const size_t qs = ty == G4_TYPE_Q5_0 ? 6 : 2;
                for (int k = 0; k < 4; k++) memcpy(o + 64 * k + 4 * r, b + qs + 4 * k, 4);
                if (ty == G4_TYPE_Q5_0) {
                    const uint32_t qh = quant_rd32(b + 2);
                    for (int L = 0; L < 8; L++) mask[L] |= (uint64_t)(qh >> (4 * L) & 15) << (4 * r);
                }
            }
            if (ty == G4_TYPE_Q5_0) memcpy(o + 256, mask, sizeof mask); /* little-endian: bit n of mask L at byte 256 + 8L + n / 8 */
        }
}
static void rqb_repack_q8_0(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in, int64_t n_out) {
    rqb_repack(dst, src, wrb, n_in, n_out, G4_TYPE_Q8_0);
}
static void rqb_repack_q5_0(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in, int64_t n_out) {
    rqb_repack(dst, src, wrb, n_in, n_out, G4_TYPE_Q5_0);
}
static void rqb_repack_q4_0(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in, int64_t n_out) {
    rqb_repack(dst, src, wrb, n_in, n_out, G4_TYPE_Q4_0);
}

/* ==== Multiply ==== */

/* T tokens' block scales and lane corrections for blocks [0, nb): da[t * nb + i], corr[(t * nb + i) * 8 + L] =
 * -c * (activations 4L .. 4L + 3 of block i summed); whole (Q4_0's one integer per block):
 * corr[(t * nb + i) * 8] = -c * (block i's 32 activations summed), the other seven unused */
KINLINE void rqb_prep(const uint8_t *restrict x, size_t xrb, int64_t nb, int T, int c, float *restrict da, int32_t *restrict corr,
                      const int whole) {
    const __m256i cc = _mm256_set1_epi8((char)c);
    for (int t = 0; t < T; t++)
        for (int64_t i = 0; i < nb; i++) {
            const uint8_t *b = x + (size_t)t * xrb + (size_t)i * 34;
            da[t * nb + i] = h2f(b);
            const __m256i s = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), cc, ld256(b + 2)));
            if (!whole) {
                _mm256_storeu_si256((__m256i *)(void *)(corr + (t * nb + i) * 8), s);
                continue;
            }
            const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            const __m128i q = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
            corr[(t * nb + i) * 8] = _mm_cvtsi128_si32(_mm_add_epi32(q, _mm_shuffle_epi32(q, 0xb1)));
        }
}

/* the u8 codes of lane L of a tile block (16 rows x 4): Q8_0 as repacked; Q5_0 nibble + 16 * fifth bit */
KINLINE __m512i rqb_codes_q8_0(const uint8_t *blk, int L) { return ld512(blk + 64 * L); }
KINLINE __m512i rqb_codes_q5_0(const uint8_t *blk, int L) {
    const __m512i q = ld512(blk + 64 * (L & 3));
    const __m512i nib = _mm512_and_si512(L < 4 ? q : _mm512_srli_epi16(q, 4), _mm512_set1_epi8(0x0f));
    uint64_t hb;
    memcpy(&hb, blk + 256 + 8 * L, 8);
    return _mm512_mask_add_epi8(nib, (__mmask64)hb, nib, _mm512_set1_epi8(16));
}

/* one tile (16 rows at p, nb blocks of bb bytes) x T tokens (activation rows x, xrb apart; their
 * da / corr from rqb_prep, nbp blocks apart) -> out[t][16] (ggml's lane sum); pf: prefetch ahead */
#define DEF_RQB_TILE(tname, bb)                                                                        \
    KINLINE void rqb_tile_##tname(const uint8_t *restrict p, int64_t nb, const uint8_t *restrict x, size_t xrb, \
                                  const float *restrict da, const int32_t *restrict corr, int64_t nbp, const int T, \
                                  const int pf, __m512 *out) {                                         \
        __m512 acc[RQB_TG][8];                                                                         \
        RQB_UNROLL                                                                                        \
        for (int t = 0; t < T; t++)                                                                    \
            RQB_UNROLL                                                                                    \
            for (int L = 0; L < 8; L++) acc[t][L] = _mm512_setzero_ps();                              \
        for (int64_t i = 0; i < nb; i++, p += 16 * (bb)) {                                             \
            if (pf)                                                                                    \
                rq_pf_lines(p + RQB_PF, 0, 16 * (bb));                                                \
            const __m512 dw = _mm512_cvtph_ps(ld256(p + 16 * ((bb) - 2)));                             \
            __m512 dd[RQB_TG];                                                                         \
            RQB_UNROLL                                                                                    \
            for (int t = 0; t < T; t++) dd[t] = _mm512_mul_ps(dw, _mm512_set1_ps(da[t * nbp + i]));    \
            RQB_UNROLL                                                                                    \
            for (int L = 0; L < 8; L++) {                                                              \
                const __m512i u = rqb_codes_##tname(p, L);                                             \
                RQB_UNROLL                                                                                \
                for (int t = 0; t < T; t++) {                                                          \
                    const __m512i c = _mm512_set1_epi32(corr[(t * nbp + i) * 8 + L]);                  \
                    const __m512i s = rq_dp(c, u, x + (size_t)t * xrb + (size_t)i * 34 + 2 + 4 * L);  \
                    acc[t][L] = _mm512_fmadd_ps(dd[t], _mm512_cvtepi32_ps(s), acc[t][L]);             \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
        RQB_UNROLL                                                                                        \
        for (int t = 0; t < T; t++) { /* hsum_ps's order on each row's 8 lanes */                     \
            __m512 *a = acc[t];                                                                        \
            out[t] = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),     \
                                   _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));    \
        }                                                                                              \
    }
DEF_RQB_TILE(q8_0, 34)
DEF_RQB_TILE(q5_0, 22)

/* Q4_0's tile (the rqb_tile_* contract, corrections from rqb_prep's whole form): per block and token
 * the 16 rows' whole-block integers in two vpdpbusd chains (even and odd lanes), one FMA */
KINLINE __m512i rqb_codes_q4_0(const uint8_t *blk, int L) {
    const __m512i q = ld512(blk + 64 * (L & 3));
    return _mm512_and_si512(L < 4 ? q : _mm512_srli_epi16(q, 4), _mm512_set1_epi8(0x0f));
}
KINLINE void rqb_tile_q4_0(const uint8_t *restrict p, int64_t nb, const uint8_t *restrict x, size_t xrb,
                           const float *restrict da, const int32_t *restrict corr, int64_t nbp, const int T,
                           const int pf, __m512 *out) {
    __m512 acc[RQB_TG];
    RQB_UNROLL
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++, p += 16 * 18) {
        if (pf)
            rq_pf_lines(p + RQB_PF, 0, 16 * 18);
        const __m512 dw = _mm512_cvtph_ps(ld256(p + 256));
        __m512i u[8];
        RQB_UNROLL
        for (int L = 0; L < 8; L++) u[L] = rqb_codes_q4_0(p, L);
        RQB_UNROLL
        for (int t = 0; t < T; t++) {
            const uint8_t *a = x + (size_t)t * xrb + (size_t)i * 34 + 2;
            __m512i s0 = _mm512_set1_epi32(corr[(t * nbp + i) * 8]), s1 = _mm512_setzero_si512();
            RQB_UNROLL
            for (int L = 0; L < 8; L += 2) s0 = rq_dp(s0, u[L], a + 4 * L), s1 = rq_dp(s1, u[L + 1], a + 4 * L + 4);
            const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(da[t * nbp + i]));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)), d, acc[t]);
        }
    }
    RQB_UNROLL
    for (int t = 0; t < T; t++) out[t] = acc[t];
}

/* the matmul over repacked tiles (kern.h contract; w as rqb_repack_* left it, n_in <= 32 RQB_NB).
 * Tokens in blocks whose corrections fit RQB_NB; per block, tile by tile (the tile stays in L1/L2
 * for the block's passes), passes of RQB_TG tokens. Rows row0 .. row1 - 1 may cut tiles: a cut
 * tile is computed whole and its rows in range stored. */
#define DEF_MM_RQB(tname, bb, cval, whole)                                                             \
    static void mm_##tname##_rq_z(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes, \
                                  const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0,    \
                                  int64_t row1, int n_tok) {                                                   \
        const uint8_t *x = xq;                                                                         \
        const int64_t nb = n_in / 32;                                                                  \
        const int tb = nb >= RQB_NB ? 1 : (int)(RQB_NB / nb);                                          \
        _Alignas(64) int32_t corr[RQB_NB * 8];                                                         \
        float da[RQB_NB];                                                                              \
        for (int t0 = 0; t0 < n_tok; t0 += tb) {                                                       \
            const int nt = n_tok - t0 < tb ? n_tok - t0 : tb;                                          \
            const uint8_t *xt = x + (size_t)t0 * xq_row_bytes;                                         \
            rqb_prep(xt, xq_row_bytes, nb, nt, cval, da, corr, whole);                                 \
            for (int64_t rt = row0 & ~(int64_t)15; rt < row1; rt += 16) {                              \
                const uint8_t *tile = w + (size_t)rt * w_row_bytes;                                    \
                const int64_t r0 = rt < row0 ? row0 : rt, r1 = rt + 16 < row1 ? rt + 16 : row1;        \
                for (int t = 0; t < nt; t += RQB_TG) {                                                 \
                    __m512 o[RQB_TG];                                                                  \
                    const uint8_t *xg = xt + (size_t)t * xq_row_bytes;                                 \
                    const float *dg = da + (size_t)t * nb;                                             \
                    const int32_t *cg = corr + (size_t)t * nb * 8;                                     \
                    const int n = nt - t < RQB_TG ? nt - t : RQB_TG;                                   \
                    if (n == 3) rqb_tile_##tname(tile, nb, xg, xq_row_bytes, dg, cg, nb, 3, t == 0, o); \
                    else if (n == 2) rqb_tile_##tname(tile, nb, xg, xq_row_bytes, dg, cg, nb, 2, t == 0, o); \
                    else rqb_tile_##tname(tile, nb, xg, xq_row_bytes, dg, cg, nb, 1, t == 0, o);       \
                    for (int k = 0; k < n; k++) rq_store(y + (size_t)(t0 + t + k) * ldy, rt, r0, r1, o[k]); \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
    }
DEF_MM_RQB(q8_0, 34, 128, 0)
DEF_MM_RQB(q5_0, 22, 16, 0)
DEF_MM_RQB(q4_0, 18, 8, 1)
