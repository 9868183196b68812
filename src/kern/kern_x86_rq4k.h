/* kern_x86_rq4k.h - the Q4_K prompt gemm (grp order) on 16 rows repacked per call: one row per
 * i32 lane, so no lane reductions. Included by kern_x86_tmpl.h in the AVX-512 build (KX_F512),
 * after tile_q4_K_z and its driver mm_q4_K_grp_zt, for the zmm tables.
 *
 * The float order is tile_q4_K_z's grp = 1 (llama.cpp's repacked q4_K 4-column gemm): per row,
 * super-block i and pair of sub-blocks k in order,
 *   acc  = fma((float)isum(i, k), dw * da, acc),   isum = s(2k) dot(2k) + s(2k+1) dot(2k+1)
 *   accm = fma((float)imin(i, k), dmin * da, accm), imin = m(2k) bs(2k) + m(2k+1) bs(2k+1)
 * and y = acc - accm. Only the exact integers are formed another way, so the bits are the same.
 *
 * tile_q4_K_z spends most of its time summing lanes: a row's codes fill whole vectors, so every
 * row's products end up spread over 16 lanes and are folded across lanes for each row, token and
 * pair. Here 16 rows' codes of a super-block are first transposed (rq4k_pack: a 16 x 16 dword
 * transpose of each 64-byte half, nibbles split) so that lane r of a vector holds row r's codes
 * 4g .. 4g + 3 of a sub-block; a token's four activations of those positions are one broadcast
 * dword, so vpdpbusd (with the broadcast as its memory operand) accumulates each row's dot in its
 * own lane: 8 vpdpbusd per sub-block, one vpmulld by the 16 rows' scales, nothing else per
 * code. The transposed super-blocks (5 KB per 16 rows) are reused by every token of a block of
 * RQ_TB tokens, so the transpose costs a few percent. */

/* Measured on Zen 5 (g4-bench-kern -G): 4 super-blocks per chunk, 128 tokens per block; below
 * 24 tokens the weights stream from DRAM faster through mm_q4_K_grp_zt (its prefetch is spread
 * over its loop; here a chunk's lines are asked for in one burst) */
#define RQ_SBC 4   /* super-blocks per repacked chunk (20 KB of stack) */
#define RQ_PF 2    /* chunks of weights prefetched ahead */
#define RQ_TB 128  /* tokens per block: each chunk is repacked once per block (16 KB of state) */
#define RQ_TG 8    /* tokens per pass: 8 vpdpbusd chains cover its latency at 2 per cycle */
#define RQ_MIN 24  /* fewer tokens: mm_q4_K_grp_zt */

typedef struct rq4k_sb {        /* one super-block of 16 rows, repacked (lane r = row r) */
    float d[16], dm[16];        /* the rows' d and dmin as f32 */
    int32_t sc[8][16];          /* sub-block s's scale of row r */
    int32_t mn[4][16];          /* (m(2k), m(2k+1)) as two i16 per row, for vpmaddwd */
    uint8_t q[8][8][64];        /* sub-block s, group g: row r's codes 4g .. 4g + 3 at bytes 4r .. 4r + 3 */
} rq4k_sb;

/* t[j] lane r = dword j of r[r]: a 16 x 16 transpose of dwords */
KINLINE void rq_tr16(const __m512i *r, __m512i *t) {
    __m512i a[16], u[16];
    KUNROLL
    for (int i = 0; i < 8; i++) {
        a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);     /* per 128-bit lane l: R0.4l, R1.4l, R0.4l+1, R1.4l+1 */
        a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]); /* R0.4l+2, R1.4l+2, R0.4l+3, R1.4l+3 */
    }
    /* u[4G + e] lane l: rows 4G .. 4G + 3 of dword 4l + e */
    KUNROLL
    for (int G = 0; G < 4; G++) {
        u[4 * G + 0] = _mm512_unpacklo_epi64(a[4 * G], a[4 * G + 2]);
        u[4 * G + 1] = _mm512_unpackhi_epi64(a[4 * G], a[4 * G + 2]);
        u[4 * G + 2] = _mm512_unpacklo_epi64(a[4 * G + 1], a[4 * G + 3]);
        u[4 * G + 3] = _mm512_unpackhi_epi64(a[4 * G + 1], a[4 * G + 3]);
    }
    /* a 4 x 4 transpose of 128-bit lanes for each e: t[4l + e] lane G = u[4G + e] lane l */
    KUNROLL
    for (int e = 0; e < 4; e++) {
        const __m512i p = _mm512_shuffle_i32x4(u[e], u[4 + e], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i q = _mm512_shuffle_i32x4(u[e], u[4 + e], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512i v = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i w = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], _MM_SHUFFLE(3, 2, 3, 2));
        t[e] = _mm512_shuffle_i32x4(p, v, _MM_SHUFFLE(2, 0, 2, 0));
        t[4 + e] = _mm512_shuffle_i32x4(p, v, _MM_SHUFFLE(3, 1, 3, 1));
        t[8 + e] = _mm512_shuffle_i32x4(q, w, _MM_SHUFFLE(2, 0, 2, 0));
        t[12 + e] = _mm512_shuffle_i32x4(q, w, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* super-block of the 16 rows wr[r] at byte off -> *o */
static void rq4k_pack(const uint8_t *const *wr, size_t off, rq4k_sb *restrict o) {
    uint16_t dh[2][16]; /* the rows' f16 d, dmin */
    for (int r = 0; r < 16; r++) dh[0][r] = quant_rd16(wr[r] + off), dh[1][r] = quant_rd16(wr[r] + off + 2);
    _mm512_store_ps(o->d, _mm512_cvtph_ps(ld256(dh[0])));
    _mm512_store_ps(o->dm, _mm512_cvtph_ps(ld256(dh[1])));
    /* Z[q] lane j: row q + 4j's scale bytes (s0..s7, m0..m7); after a 4 x 4 dword transpose per
     * 128-bit lane, U[c] element 4j + q = dword c of row 4j + q: lane r = row r */
    __m512i Z[4], U[4];
    KUNROLL
    for (int q = 0; q < 4; q++)
        Z[q] = kq_scales_z4(ld4x128(wr[q] + off + 4, wr[q + 4] + off + 4, wr[q + 8] + off + 4, wr[q + 12] + off + 4));
    {
        const __m512i t0 = _mm512_unpacklo_epi32(Z[0], Z[1]), t1 = _mm512_unpackhi_epi32(Z[0], Z[1]);
        const __m512i t2 = _mm512_unpacklo_epi32(Z[2], Z[3]), t3 = _mm512_unpackhi_epi32(Z[2], Z[3]);
        U[0] = _mm512_unpacklo_epi64(t0, t2), U[1] = _mm512_unpackhi_epi64(t0, t2);
        U[2] = _mm512_unpacklo_epi64(t1, t3), U[3] = _mm512_unpackhi_epi64(t1, t3);
    }
    const __m512i ff = _mm512_set1_epi32(0xff);
    KUNROLL
    for (int s = 0; s < 8; s++) _mm512_store_si512(o->sc[s], _mm512_and_si512(_mm512_srli_epi32(U[s >> 2], 8 * (s & 3)), ff));
    const __m512i mlo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, -1, 1, -1, 4, -1, 5, -1, 8, -1, 9, -1, 12, -1, 13, -1));
    const __m512i mhi = _mm512_broadcast_i32x4(_mm_setr_epi8(2, -1, 3, -1, 6, -1, 7, -1, 10, -1, 11, -1, 14, -1, 15, -1));
    KUNROLL
    for (int k = 0; k < 4; k++) _mm512_store_si512(o->mn[k], _mm512_shuffle_epi8(U[2 + (k >> 1)], (k & 1) ? mhi : mlo));
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    KUNROLL
    for (int c = 0; c < 2; c++) { /* bytes 64c .. 64c + 63 of the codes: pairs 2c, 2c + 1 */
        __m512i R[16], T[16];
        KUNROLL
        for (int r = 0; r < 16; r++) R[r] = ld512(wr[r] + off + 16 + 64 * c);
        rq_tr16(R, T);
        KUNROLL
        for (int j = 0; j < 16; j++) { /* byte 64c + 4j: pair k = 2c + j / 8, group j % 8 */
            const int k = 2 * c + (j >> 3), g = j & 7;
            _mm512_storeu_si512(o->q[2 * k][g], _mm512_and_si512(T[j], m4));
            _mm512_storeu_si512(o->q[2 * k + 1][g], _mm512_and_si512(_mm512_srli_epi16(T[j], 4), m4));
        }
    }
}

/* the weight lines at p + o for o = o0, o0 + 64, .. < o1 prefetched (KX_PF_HINT): the tiles'
 * stream, p already their lead ahead */
KINLINE void rq_pf_lines(const uint8_t *p, int o0, int o1) {
    for (int o = o0; o < o1; o += 64) _mm_prefetch((const char *)p + o, KX_PF_HINT);
}

/* acc += vpdpbusd(w, the dword at p broadcast), the broadcast as the instruction's memory
 * operand (GCC 12 does not fold _mm512_set1_epi32 of a load into it) */
KINLINE __m512i rq_dp(__m512i acc, __m512i w, const uint8_t *p) {
#if defined(G4_SIMDE_AVX512)
    return _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32((int)quant_rd32(p)));
#else
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)(const void *)p));
    return acc;
#endif
}

/* ns repacked super-blocks (i0 .. i0 + ns - 1 of the rows) x T tokens (x: token 0's Q8_K row,
 * xrb apart); st[t][0] / st[t][1]: token t's acc / accm lanes, carried over calls */
KINLINE void rq4k_run(const rq4k_sb *restrict p, int ns, const uint8_t *restrict x, size_t xrb, int64_t i0,
                      const int T, float (*restrict st)[2][16]) {
    const __m512i zero = _mm512_setzero_si512();
    for (int j = 0; j < ns; j++, p++) {
        const uint8_t *xb = x + (size_t)(i0 + j) * 292;
        const uint8_t *xt[RQ_TG];
        KUNROLL
        for (int t = 0; t < T; t++) xt[t] = xb + t * xrb + 4;
        int32_t bsw[RQ_TG][4];
        float dat[RQ_TG];
        _Alignas(64) float dd[RQ_TG][2][16]; /* token t's dw * da, dmin * da */
        KUNROLL
        for (int t = 0; t < T; t++) {
            q4k_bsw(xb + t * xrb, bsw[t], &dat[t]);
            const __m512 da = _mm512_set1_ps(dat[t]);
            _mm512_store_ps(dd[t][0], _mm512_mul_ps(_mm512_load_ps(p->d), da));
            _mm512_store_ps(dd[t][1], _mm512_mul_ps(_mm512_load_ps(p->dm), da));
        }
        KUNROLL
        for (int k = 0; k < 4; k++) {
            __m512i P[RQ_TG];
            KUNROLL
            for (int h = 0; h < 2; h++) {
                const int s = 2 * k + h;
                /* two chains per token when there are too few tokens to hide the latency */
                __m512i D[RQ_TG], E[RQ_TG];
                KUNROLL
                for (int t = 0; t < T; t++) D[t] = E[t] = zero;
                KUNROLL
                for (int g = 0; g < 8; g++) {
                    const __m512i w = _mm512_load_si512(p->q[s][g]);
                    KUNROLL
                    for (int t = 0; t < T; t++) {
                        const uint8_t *a = xt[t] + 32 * s + 4 * g;
                        if (T <= 4 && (g & 1)) E[t] = rq_dp(E[t], w, a);
                        else D[t] = rq_dp(D[t], w, a);
                    }
                }
                const __m512i sc = _mm512_load_si512(p->sc[s]);
                KUNROLL
                for (int t = 0; t < T; t++) {
                    const __m512i dot = T <= 4 ? _mm512_add_epi32(D[t], E[t]) : D[t];
                    const __m512i v = _mm512_mullo_epi32(dot, sc);
                    P[t] = h ? _mm512_add_epi32(P[t], v) : v;
                }
            }
            const __m512i mn = _mm512_load_si512(p->mn[k]);
            KUNROLL
            for (int t = 0; t < T; t++) {
                const __m512 a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(P[t]), _mm512_load_ps(dd[t][0]), _mm512_load_ps(st[t][0]));
                const __m512i im = _mm512_madd_epi16(mn, _mm512_set1_epi32(bsw[t][k]));
                const __m512 m = _mm512_fmadd_ps(_mm512_cvtepi32_ps(im), _mm512_load_ps(dd[t][1]), _mm512_load_ps(st[t][1]));
                _mm512_store_ps(st[t][0], a);
                _mm512_store_ps(st[t][1], m);
            }
        }
    }
}

/* prefetch chunk c (RQ_SBC super-blocks) of the tile at row rt, or past its last chunk the
 * next tile's (rows below row1 only; a partial tile's missing rows are not fetched) */
static void rq4k_prefetch(const uint8_t *w, size_t w_row_bytes, int64_t rt, int64_t row1, int64_t nb, int64_t c) {
    const int64_t nc = (nb + RQ_SBC - 1) / RQ_SBC;
    if (c >= nc) rt += 16, c -= nc;
    if (c >= nc) return; /* rows of fewer than RQ_PF chunks: past the next tile's too */
    const int64_t i0 = c * RQ_SBC, ns = nb - i0 < RQ_SBC ? nb - i0 : RQ_SBC;
    for (int64_t r = rt; r < rt + 16 && r < row1; r++) {
        const char *q = (const char *)w + (size_t)r * w_row_bytes + (size_t)i0 * 144;
        for (size_t o = 0; o < (size_t)ns * 144; o += 64) _mm_prefetch(q + o, _MM_HINT_T0);
        _mm_prefetch(q + (size_t)ns * 144 - 1, _MM_HINT_T0);
    }
}

/* the grp-order Q4_K matmul of the zmm tables (kern.h contract) */
static void mm_q4_K_grp_z(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,
                          const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1,
                          int n_tok) {
    if (n_tok < RQ_MIN) {
        mm_q4_K_grp_zt(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, row0, row1, n_tok);
        return;
    }
    const uint8_t *x = xq;
    const int64_t nb = n_in / 256;
    _Alignas(64) rq4k_sb buf[RQ_SBC];
    _Alignas(64) float st[RQ_TB][2][16];
    for (int64_t rt = row0; rt < row1; rt += 16) {
        const int nr = row1 - rt < 16 ? (int)(row1 - rt) : 16;
        const uint8_t *wr[16];
        for (int r = 0; r < 16; r++) wr[r] = w + (size_t)(rt + (r < nr ? r : nr - 1)) * w_row_bytes;
        for (int tb = 0; tb < n_tok; tb += RQ_TB) {
            const int ntb = n_tok - tb < RQ_TB ? n_tok - tb : RQ_TB;
            memset(st, 0, (size_t)ntb * sizeof st[0]);
            const uint8_t *xt = x + (size_t)tb * xq_row_bytes;
            for (int64_t i0 = 0; i0 < nb; i0 += RQ_SBC) {
                const int ns = nb - i0 < RQ_SBC ? (int)(nb - i0) : RQ_SBC;
                for (int j = 0; j < ns; j++) rq4k_pack(wr, (size_t)(i0 + j) * 144, &buf[j]);
                if (tb == 0) /* the weights RQ_PF chunks ahead (into the next tile), while this one runs */
                    rq4k_prefetch(w, w_row_bytes, rt, row1, nb, i0 / RQ_SBC + RQ_PF);
                for (int t = 0; t < ntb; t += RQ_TG) {
                    const uint8_t *xg = xt + (size_t)t * xq_row_bytes;
                    switch (ntb - t < RQ_TG ? ntb - t : RQ_TG) {
                    case 8: rq4k_run(buf, ns, xg, xq_row_bytes, i0, 8, st + t); break;
                    case 7: rq4k_run(buf, ns, xg, xq_row_bytes, i0, 7, st + t); break;
                    case 6: rq4k_run(buf, ns, xg, xq_row_bytes, i0, 6, st + t); break;
                    case 5: rq4k_run(buf, ns, xg, xq_row_bytes, i0, 5, st + t); break;
                    case 4: rq4k_run(buf, ns, xg, xq_row_bytes, i0, 4, st + t); break;
                    case 3: rq4k_run(buf, ns, xg, xq_row_bytes, i0, 3, st + t); break;
                    case 2: rq4k_run(buf, ns, xg, xq_row_bytes, i0, 2, st + t); break;
                    default: rq4k_run(buf, ns, xg, xq_row_bytes, i0, 1, st + t); break;
                    }
                }
            }
            for (int t = 0; t < ntb; t++) {
                const __m512 v = _mm512_sub_ps(_mm512_load_ps(st[t][0]), _mm512_load_ps(st[t][1]));
                float *yy = y + (size_t)(tb + t) * ldy + (size_t)rt;
                if (nr == 16) _mm512_storeu_ps(yy, v);
                else { float tmp[16]; _mm512_storeu_ps(tmp, v); memcpy(yy, tmp, (size_t)nr * 4); }
            }
        }
    }
}

/* ---- Q4_K weights stored repacked at open (kern.h: repack_q4_K, matmul_rq) ----
 * mm_q4_K_grp_z above repacks 16 rows on every call, which costs as much as its dots when a
 * call has few tokens (batched decode, speculative verification: 2 .. 23 columns). Here the
 * model's Q4_K matrices are repacked once, at open, into 16-row tiles in the same bytes (tile j
 * = rows 16j .. 16j + 15 where those rows were; the tensor's size and every row tile's offset
 * stay), so a pass reads one contiguous stream and its dots run as rq4k_run's, lane r = row r.
 * One super-block of a tile, RQ16_SB = 16 x 144 bytes (the 16 rows' own bytes, moved):
 *   [0, 32)      the rows' d (f16), row r at 2r
 *   [32, 64)     their dmin
 *   [64, 256)    their 12 scale bytes as 3 dwords: dword c of row r at 64 + 64c + 4r
 *   [256, 2304)  codes: 64 bytes per (pair k, group g), k 0..3, g 0..7, at 256 + 64 (8k + g):
 *                row r's qs bytes 32k + 4g .. 32k + 4g + 3 at 4r (low nibbles: sub-block 2k,
 *                high nibbles: 2k + 1)
 * Both orders are the row-major kernels' float steps (tile_q4_K_z): grp = 0 the gemv (per
 * super-block acc = fma(isum, dw * da, acc), accm = fma(imin, dmin * da, accm)), grp = 1 the
 * 4-column gemm (the same per pair of sub-blocks); y = acc - accm. */
#define RQ16_SB 2304
/* prefetch lead of the first token group's pass: three super-blocks (non-temporal, KX_PF_HINT),
 * a quarter super-block (9 lines) at the start of each of its four code pairs. Zen 5, one thread,
 * 100 DRAM-resident 1536 x 6144 matrices in huge pages (as a model's), 1 token, against the
 * row-major kernel on the same matrices in one process, 3 alternating runs of 3: all 36 lines
 * at the super-block's start 2 super-blocks ahead 0.92-0.97 of it, by quarters 0.98-1.00 (2
 * ahead) and 1.00-1.02 (3 ahead; 4 ahead 0.97-0.98, by eighths 0.93-0.96); the LM head 1536 x
 * 262144: 37.3-37.8 -> 41.1-41.5 GB/s on 1 thread, 2 threads the same. (Before: all lines at
 * the start, 4 super-blocks ahead 32.1-36.5 GB/s, 2: 36.8-38.4, 1: 31-32; T0 or T1 hints no
 * better) */
#define RQ16_PF (3 * RQ16_SB)
#define RQ16_TG 8 /* tokens per pass of the gemv order: up to 4 with two chains per sub-block, 5 .. 8 with one */

/* the 128 code bytes at src of 16 rows (wrb apart) -> 32 x 64 bytes at dst by rq_tr16: bytes
 * 64 (16c + j) + 4r .. + 3 = row r's code bytes 64c + 4j .. + 3 (c < 2, j < 16: pair 2c + j / 8,
 * group j % 8 of a Q4_K or Q5_K super-block's qs) */
KINLINE void rq_codes_tr(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb) {
    KUNROLL
    for (int c = 0; c < 2; c++) {
        __m512i R[16], T[16];
        KUNROLL
        for (int r = 0; r < 16; r++) R[r] = ld512(src + (size_t)r * wrb + 64 * c);
        rq_tr16(R, T);
        KUNROLL
        for (int j = 0; j < 16; j++) _mm512_storeu_si512(dst + 64 * (16 * c + j), T[j]);
    }
}

/* rows 0 .. 15 of src (row bytes wrb, nb super-blocks each) -> one tile at dst: each 64-byte
 * half of the codes by rq_codes_tr (lane r = row r), d / dmin / scale dwords a row at a time */
static void rq16_repack_tile(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *o = dst + (size_t)i * RQ16_SB;
        uint32_t hd[16], sc[3][16];
        for (int r = 0; r < 16; r++) {
            const uint8_t *b = src + (size_t)r * wrb + (size_t)i * 144;
            memcpy(&hd[r], b, 4);
            memcpy(&sc[0][r], b + 4, 4), memcpy(&sc[1][r], b + 8, 4), memcpy(&sc[2][r], b + 12, 4);
        }
        for (int r = 0; r < 16; r++) memcpy(o + 2 * r, &hd[r], 2), memcpy(o + 32 + 2 * r, (const uint8_t *)&hd[r] + 2, 2);
        memcpy(o + 64, sc, sizeof sc);
        rq_codes_tr(o + 256, src + (size_t)i * 144 + 16, wrb);
    }
}

/* the n_out rows (a multiple of 16) of a Q4_K matrix at src -> dst, tile by tile */
static void rq16_repack(uint8_t *restrict dst, const uint8_t *restrict src, size_t wrb, int64_t n_in, int64_t n_out) {
    for (int64_t r = 0; r + 16 <= n_out; r += 16)
        rq16_repack_tile(dst + (size_t)r * wrb, src + (size_t)r * wrb, wrb, n_in / 256);
}

/* a token's carried f32 lanes, or +0 where the sum starts (fresh: no memset of the state; an
 * FMA onto +0 is the same operation either way) */
KINLINE __m512 rq_st(const float *p, int z) { return z ? _mm512_setzero_ps() : _mm512_load_ps(p); }
/* the 16 f32 lanes of a tile's rows rt .. rt + 15 into y[rt ..], only rows [r0, r1) */
KINLINE void rq_store(float *restrict y, int64_t rt, int64_t r0, int64_t r1, __m512 v) {
    if (r0 == rt && r1 == rt + 16) { _mm512_storeu_ps(y + rt, v); return; }
#if defined(G4_SIMDE_AVX512) /* SIMDe 0.7.4 has no masked store */
    float o[16];
    _mm512_storeu_ps(o, v);
    memcpy(y + r0, o + (r0 - rt), (size_t)(r1 - r0) * sizeof(float));
#else
    _mm512_mask_storeu_ps(y + rt, (__mmask16)(((1u << (r1 - rt)) - 1) & ~((1u << (r0 - rt)) - 1)), v);
#endif
}

/* the scale and min bytes of a Q4_K / Q5_K tile super-block's 16 rows at once (its dwords at
 * p + 64 .. p + 255; ggml's kmask steps, per dword lane): SM[0] / SM[1] the scales of sub-blocks
 * 0..3 / 4..7 as the bytes of each row's dword, SM[2] / SM[3] the mins */
KINLINE void rq_scales_mins(const uint8_t *p, __m512i SM[4]) {
    const __m512i k1 = _mm512_set1_epi32(0x3f3f3f3f), k2 = _mm512_set1_epi32(0x0f0f0f0f), k3 = _mm512_set1_epi32(0x03030303);
    const __m512i U0 = ld512(p + 64), U1 = ld512(p + 128), U2 = ld512(p + 192);
    SM[0] = _mm512_and_si512(U0, k1);
    SM[1] = _mm512_or_si512(_mm512_and_si512(U2, k2), _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(U0, 6), k3), 4));
    SM[2] = _mm512_and_si512(U1, k1);
    SM[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(U2, 4), k2),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(U1, 6), k3), 4));
}

/* ns repacked super-blocks at p (i0 .. of the rows) x T tokens (x: token 0's Q8_K row, xrb
 * apart); st[t]: token t's acc / accm lanes, carried over calls; pf: prefetch RQ16_PF ahead;
 * fresh: the state starts here (at super-block 0) */
KINLINE void rq16_run(const uint8_t *restrict p, int ns, const uint8_t *restrict x, size_t xrb, int64_t i0,
                      const int T, const int grp, float (*restrict st)[2][16], const int pf, const int fresh) {
    const __m512i zero = _mm512_setzero_si512(), m4 = _mm512_set1_epi8(0x0f), ff = _mm512_set1_epi32(0xff);
    const __m512i mlo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, -1, 1, -1, 4, -1, 5, -1, 8, -1, 9, -1, 12, -1, 13, -1));
    const __m512i mhi = _mm512_broadcast_i32x4(_mm_setr_epi8(2, -1, 3, -1, 6, -1, 7, -1, 10, -1, 11, -1, 14, -1, 15, -1));
    for (int j = 0; j < ns; j++, p += RQ16_SB) {
        const uint8_t *xb = x + (size_t)(i0 + j) * 292;
        __m512i SM[4]; /* S0, S1, M0, M1 */
        rq_scales_mins(p, SM);
        const __m512i S0 = SM[0], S1 = SM[1], M0 = SM[2], M1 = SM[3];
        const __m512 d = _mm512_cvtph_ps(ld256(p)), dm = _mm512_cvtph_ps(ld256(p + 32));
        int32_t bsw[RQ16_TG][4];
        float dat[RQ16_TG];
        const uint8_t *xt[RQ16_TG];
        KUNROLL
        for (int t = 0; t < T; t++) {
            q4k_bsw(xb + t * xrb, bsw[t], &dat[t]);
            xt[t] = xb + t * xrb + 4;
        }
        /* isb: the gemv's isum over the super-block so far (grp 0; the 4-column order takes
         * at most 4 tokens a pass, mm_q4_K_rq's tg) */
        __m512i isb[RQ16_TG];
        KUNROLL
        for (int k = 0; k < 4; k++) {
            if (pf) rq_pf_lines(p + RQ16_PF, RQ16_SB / 4 * k, RQ16_SB / 4 * (k + 1)); /* lines 9k .. 9k + 8 */
            const __m512i S = k < 2 ? S0 : S1;
            const __m512i sa = _mm512_and_si512(_mm512_srli_epi32(S, 16 * (k & 1)), ff);
            const __m512i sb = _mm512_and_si512(_mm512_srli_epi32(S, 16 * (k & 1) + 8), ff);
            __m512i D0[RQ16_TG], D1[RQ16_TG], E0[RQ16_TG], E1[RQ16_TG];
            KUNROLL
            for (int t = 0; t < T; t++) D0[t] = D1[t] = E0[t] = E1[t] = zero;
            KUNROLL
            for (int g = 0; g < 8; g++) {
                const __m512i P = ld512(p + 256 + 64 * (8 * k + g));
                const __m512i lo = _mm512_and_si512(P, m4), hi = _mm512_and_si512(_mm512_srli_epi16(P, 4), m4);
                KUNROLL
                for (int t = 0; t < T; t++) {
                    const uint8_t *a = xt[t] + 64 * k + 4 * g;
                    /* up to 4 tokens two chains per sub-block (too few tokens to hide
                     * vpdpbusd's latency otherwise); 5 .. 8 tokens one, multiplied by the
                     * scales after its first four groups (registers) */
                    if (T <= 4 && (g & 1)) E0[t] = rq_dp(E0[t], lo, a), E1[t] = rq_dp(E1[t], hi, a + 32);
                    else D0[t] = rq_dp(D0[t], lo, a), D1[t] = rq_dp(D1[t], hi, a + 32);
                }
                if (T > 4 && g == 3)
                    KUNROLL
                    for (int t = 0; t < T; t++) {
                        isb[t] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(k ? isb[t] : zero, D0[t], sa), D1[t], sb);
                        D0[t] = D1[t] = zero;
                    }
            }
            KUNROLL
            for (int t = 0; t < T; t++) {
                /* each chain's lanes (4 vpdpbusd: |sum| <= 16 * 15 * 128) fit an i16, and sa / sb
                 * hold the scale in each dword's low word, a zero above: vpmaddwd / vpdpwssd
                 * multiply them exactly, the sum of the four products added into the dword
                 * (the same integer as (D0 + E0) * sa + (D1 + E1) * sb, without vpmulld) */
                __m512i is;
                if (T > 4) is = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(isb[t], D0[t], sa), D1[t], sb);
                else {
                    const __m512i ip = grp ? _mm512_madd_epi16(D0[t], sa) : _mm512_dpwssd_epi32(k ? isb[t] : zero, D0[t], sa);
                    is = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(_mm512_dpwssd_epi32(ip, E0[t], sa), D1[t], sb), E1[t], sb);
                }
                if (grp) {
                    const __m512i im = _mm512_madd_epi16(_mm512_shuffle_epi8(k < 2 ? M0 : M1, (k & 1) ? mhi : mlo),
                                                         _mm512_set1_epi32(bsw[t][k]));
                    const __m512 da = _mm512_set1_ps(dat[t]);
                    const int z = fresh && j == 0 && k == 0;
                    _mm512_store_ps(st[t][0], _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_mul_ps(d, da), rq_st(st[t][0], z)));
                    _mm512_store_ps(st[t][1], _mm512_fmadd_ps(_mm512_cvtepi32_ps(im), _mm512_mul_ps(dm, da), rq_st(st[t][1], z)));
                } else {
                    isb[t] = is;
                }
            }
        }
        if (!grp) {
            /* the mins' sum over the four pairs (exact integers, after the dots: registers) */
            __m512i mn[4];
            KUNROLL
            for (int k = 0; k < 4; k++) mn[k] = _mm512_shuffle_epi8(k < 2 ? M0 : M1, (k & 1) ? mhi : mlo);
            KUNROLL
            for (int t = 0; t < T; t++) {
                __m512i imb = _mm512_madd_epi16(mn[0], _mm512_set1_epi32(bsw[t][0]));
                KUNROLL
                for (int k = 1; k < 4; k++) imb = _mm512_add_epi32(imb, _mm512_madd_epi16(mn[k], _mm512_set1_epi32(bsw[t][k])));
                const __m512 da = _mm512_set1_ps(dat[t]);
                const int z = fresh && j == 0;
                _mm512_store_ps(st[t][0], _mm512_fmadd_ps(_mm512_cvtepi32_ps(isb[t]), _mm512_mul_ps(d, da), rq_st(st[t][0], z)));
                _mm512_store_ps(st[t][1], _mm512_fmadd_ps(_mm512_cvtepi32_ps(imb), _mm512_mul_ps(dm, da), rq_st(st[t][1], z)));
            }
        }
    }
}

#if defined(G4_SIMDE_AVX512)
/* the SIMDe test build: one body with T and grp at run time (the same steps; eight inlined
 * copies of SIMDe's emulation would add minutes to its compile) */
static __attribute__((noinline)) void rq16_run_rt(const uint8_t *restrict p, int ns, const uint8_t *restrict x,
                                                   size_t xrb, int64_t i0, int T, int grp, float (*restrict st)[2][16],
                                                   int pf, int fresh) {
    rq16_run(p, ns, x, xrb, i0, T, grp, st, pf, fresh);
}
#define RQ16_RUN(p, ns, x, xrb, i0, T, grp, st, pf, fr) rq16_run_rt(p, ns, x, xrb, i0, T, grp, st, pf, fr)
#else
#define RQ16_RUN(p, ns, x, xrb, i0, T, grp, st, pf, fr) rq16_run(p, ns, x, xrb, i0, T, grp, st, pf, fr)
#endif

/* the Q4_K matmul over repacked tiles (kern.h contract; w as rq16_repack left it). Rows
 * row0 .. row1 - 1 may cut tiles: a cut tile is computed whole and its rows in range stored. */
KINLINE void mm_q4_K_rq(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,
                        const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1,
                        int n_tok, const int grp) {
    const uint8_t *x = xq;
    const int64_t nb = n_in / 256;
    const int tg = grp ? 4 : RQ16_TG; /* tokens per pass (the 4-column order: 8 measured slower) */
    _Alignas(64) float st[RQ_TB][2][16];
    for (int64_t rt = row0 & ~(int64_t)15; rt < row1; rt += 16) {
        const uint8_t *tile = w + (size_t)rt * w_row_bytes;
        const int64_t r0 = rt < row0 ? row0 : rt, r1 = rt + 16 < row1 ? rt + 16 : row1;
        for (int tb = 0; tb < n_tok; tb += RQ_TB) {
            const int ntb = n_tok - tb < RQ_TB ? n_tok - tb : RQ_TB;
            const uint8_t *xt = x + (size_t)tb * xq_row_bytes;
            for (int64_t i0 = 0; i0 < nb; i0 += RQ_SBC) {
                const int ns = nb - i0 < RQ_SBC ? (int)(nb - i0) : RQ_SBC;
                const uint8_t *p = tile + (size_t)i0 * RQ16_SB;
                const int fr = i0 == 0;
                for (int t = 0; t < ntb; t += tg) {
                    const uint8_t *xg = xt + (size_t)t * xq_row_bytes;
                    const int pf = tb == 0 && t == 0;
                    switch (ntb - t < tg ? ntb - t : tg) {
                    case 8: /* (grp 0 only) */ RQ16_RUN(p, ns, xg, xq_row_bytes, i0, 8, 0, st + t, pf, fr); break;
                    case 7: RQ16_RUN(p, ns, xg, xq_row_bytes, i0, 7, 0, st + t, pf, fr); break;
                    case 6: RQ16_RUN(p, ns, xg, xq_row_bytes, i0, 6, 0, st + t, pf, fr); break;
                    case 5: RQ16_RUN(p, ns, xg, xq_row_bytes, i0, 5, 0, st + t, pf, fr); break;
                    case 4: RQ16_RUN(p, ns, xg, xq_row_bytes, i0, 4, grp, st + t, pf, fr); break;
                    case 3: RQ16_RUN(p, ns, xg, xq_row_bytes, i0, 3, grp, st + t, pf, fr); break;
                    case 2: RQ16_RUN(p, ns, xg, xq_row_bytes, i0, 2, grp, st + t, pf, fr); break;
                    default: RQ16_RUN(p, ns, xg, xq_row_bytes, i0, 1, grp, st + t, pf, fr); break;
                    }
                }
            }
            for (int t = 0; t < ntb; t++)
                rq_store(y + (size_t)(tb + t) * ldy, rt, r0, r1, _mm512_sub_ps(_mm512_load_ps(st[t][0]), _mm512_load_ps(st[t][1])));
        }
    }
}
static void mm_q4_K_rq1_z(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,
                          const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    mm_q4_K_rq(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, row0, row1, n_tok, 0);
}
static void mm_q4_K_rqg_z(float *restrict y, size_t ldy, const uint8_t *restrict w, size_t w_row_bytes,
                          const void *restrict xq, size_t xq_row_bytes, int64_t n_in, int64_t row0, int64_t row1, int n_tok) {
    mm_q4_K_rq(y, ldy, w, w_row_bytes, xq, xq_row_bytes, n_in, row0, row1, n_tok, 1);
}
