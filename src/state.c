/* state.c - g4_session_save / g4_session_load: a session's positions and KV rows in a file.
 *
 * Owns: the state file format and its validation. Little-endian throughout:
 *
 *   header, 64 bytes
 *     0  "G4ST"                  8  u64 model file size    16  u64 model hash (model_hash)
 *     4  u32 version (1)        24  u32 cache type (ggml)  28  u32 KV slots
 *    32  u32 n_past             36  u32 ring_lo: first position of the sliding slots
 *    40  u32 sliding window     44  u32 n_tokens (0 or n_past) 48  u64 payload bytes
 *    56  u64 FNV-1a 64 of the tokens and the payload
 *   slots, 16 bytes each: u32 head_dim, u32 n_head_kv, u32 sliding (0/1), u32 row bytes
 *   tokens: n_tokens x i32, the ids at positions 0 .. n_past-1 (what the caller gave)
 *   payload: slot by slot, position by position (full slots [0, n_past), sliding slots
 *     [ring_lo, n_past)), KV head by KV head: the K row then the V row (row bytes each; a
 *     transposed V cache is gathered into a row)
 *
 * A load reads the file twice: first the header, slots and payload are checked against the
 * model and the session (sizes, geometry, ranges, the checksum) without touching the
 * session; only then are the rows copied in. Nothing is allocated: rows move through a
 * 64 KiB stack buffer. If the second read fails (the file changed in between) the session is
 * reset and the error says so. Does not own: the cache layout (forward.h g4_kv_slot).
 */
#include "forward.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define ST_MAGIC "G4ST"
#define ST_VERSION 1u
#define ST_HDR 64u
#define ST_SLOT 16u
#define ST_BUF 65536u /* >= 2 rows of the largest head_dim (model.c MAX_HEAD_DIM) in f32 */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
#define FNV0 0xcbf29ce484222325ull

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

/* hash of the model: its tensor table (names, types, shapes, data offsets) and 4 samples of
 * 64 bytes of each tensor's data, so same-shaped models with other weights differ too
 * (a few pages per tensor; save and load are rare) */
static uint64_t model_hash(const g4_model *m) {
    uint64_t h = FNV0;
    const size_t n = gguf_n_tensors(m->gguf);
    for (size_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(m->gguf, i);
        uint8_t rec[8 + 8 * GGUF_MAX_DIMS + 8];
        put32(rec, t->type);
        put32(rec + 4, t->n_dims);
        for (int d = 0; d < GGUF_MAX_DIMS; d++) put64(rec + 8 + 8 * d, (uint64_t)t->ne[d]);
        put64(rec + 8 + 8 * GGUF_MAX_DIMS, t->offset);
        h = fnv(h, t->name, strlen(t->name) + 1);
        h = fnv(h, rec, sizeof rec);
        const uint64_t span = t->nbytes < 64 ? t->nbytes : 64;
        for (int k = 0; k < 4 && span; k++) h = fnv(h, t->data + (t->nbytes - span) / 3 * (uint64_t)k, (size_t)span);
    }
    return h;
}

/* positions [lo, n_past) a slot stores */
static int64_t slot_lo(const g4_kv_slot *kv, int64_t ring_lo) { return kv->swa ? ring_lo : 0; }

/* One record: K then V of KV head g at position p (cell p % n_cells), 2 * k_row_bytes. */
static void rec_get(const g4_session *s, const g4_kv_slot *kv, int64_t p, int g, uint8_t *dst) {
    const size_t rb = kv->k_row_bytes, nr = (size_t)kv->n_rows, c = (size_t)(p % kv->n_cells);
    memcpy(dst, kv->k + ((size_t)g * nr + c) * rb, rb);
    if (s->kv_type == G4_TYPE_Q8_0) { memcpy(dst + rb, kv->v + ((size_t)g * nr + c) * rb, rb); return; }
    const size_t esz = s->kv_type == G4_TYPE_F16 ? 2 : 4, hd = (size_t)kv->head_dim;
    const uint8_t *vt = kv->v + (size_t)g * hd * nr * esz;
    for (size_t d = 0; d < hd; d++) memcpy(dst + rb + d * esz, vt + (d * nr + c) * esz, esz);
}

/* the inverse, into the cell and, on a ring, its mirror */
static void rec_put(const g4_session *s, const g4_kv_slot *kv, int64_t p, int g, const uint8_t *src) {
    const size_t rb = kv->k_row_bytes, nr = (size_t)kv->n_rows, nc = (size_t)kv->n_cells;
    for (size_t c = (size_t)(p % kv->n_cells); c < (kv->swa ? 2 * nc : nc); c += nc) {
        memcpy(kv->k + ((size_t)g * nr + c) * rb, src, rb);
        if (s->kv_type == G4_TYPE_Q8_0) { memcpy(kv->v + ((size_t)g * nr + c) * rb, src + rb, rb); continue; }
        const size_t esz = s->kv_type == G4_TYPE_F16 ? 2 : 4, hd = (size_t)kv->head_dim;
        uint8_t *vt = kv->v + (size_t)g * hd * nr * esz;
        for (size_t d = 0; d < hd; d++) memcpy(vt + (d * nr + c) * esz, src + rb + d * esz, esz);
    }
}

static uint64_t payload_bytes(const g4_session *s, int64_t n_past, int64_t ring_lo) {
    uint64_t n = 0;
    for (int i = 0; i < s->m->cfg.n_kv_owner; i++) {
        const g4_kv_slot *kv = &s->kv[i];
        n += (uint64_t)(n_past - slot_lo(kv, ring_lo)) * (uint64_t)kv->n_head_kv * 2u * kv->k_row_bytes;
    }
    return n;
}

static g4_status serr(g4_session *s, g4_status st, const char *fmt, ...) G4_PRINTF(3, 4);
static g4_status serr(g4_session *s, g4_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g4_verrf(st, s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return st;
}

g4_status g4_session_save(g4_session *s, const char *path, const int32_t *tokens, size_t n_tokens) {
    if (!s) return G4_ERR_ARG;
    s->err[0] = '\0';
    if (!path) return serr(s, G4_ERR_ARG, "save: path is NULL");
    const g4_model *m = s->m;
    if (n_tokens && (n_tokens != (size_t)s->n_past || !tokens))
        return serr(s, G4_ERR_ARG, "save: %zu tokens given, the session holds %d positions (give 0 or all)", n_tokens, (int)s->n_past);
    for (size_t i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= m->cfg.n_vocab)
            return serr(s, G4_ERR_ARG, "save: token %d at index %zu is outside [0, %d)", (int)tokens[i], i, (int)m->cfg.n_vocab);
    /* the sliding rings' intact positions, at most what a ring holds */
    int64_t ring_lo = session_ring_lo(s);
    if (ring_lo < 0) ring_lo = 0;
    if (ring_lo > s->n_past) ring_lo = s->n_past;
    uint8_t hdr[ST_HDR] = {0};
    memcpy(hdr, ST_MAGIC, 4);
    put32(hdr + 4, ST_VERSION);
    put64(hdr + 8, gguf_file_size(m->gguf));
    put64(hdr + 16, model_hash(m));
    put32(hdr + 24, s->kv_type);
    put32(hdr + 28, (uint32_t)m->cfg.n_kv_owner);
    put32(hdr + 32, (uint32_t)s->n_past);
    put32(hdr + 36, (uint32_t)ring_lo);
    put32(hdr + 40, (uint32_t)m->cfg.n_swa);
    put32(hdr + 44, (uint32_t)n_tokens);
    put64(hdr + 48, payload_bytes(s, s->n_past, ring_lo));
    uint64_t h = FNV0;
    uint8_t rec[ST_BUF]; /* one record: 2 rows of head_dim <= MAX_HEAD_DIM f32 */
    for (size_t i = 0; i < n_tokens; i++) {
        uint8_t tb[4];
        put32(tb, (uint32_t)tokens[i]);
        h = fnv(h, tb, 4);
    }
    for (int i = 0; i < m->cfg.n_kv_owner; i++) {
        const g4_kv_slot *kv = &s->kv[i];
        G4_ASSERT(2 * kv->k_row_bytes <= sizeof rec);
        for (int64_t p = slot_lo(kv, ring_lo); p < s->n_past; p++)
            for (int g = 0; g < kv->n_head_kv; g++) {
                rec_get(s, kv, p, g, rec);
                h = fnv(h, rec, 2 * kv->k_row_bytes);
            }
    }
    put64(hdr + 56, h);
    FILE *f = fopen(path, "wb");
    if (!f) return serr(s, G4_ERR_IO, "save: %s: %s", path, strerror(errno));
    int ok = fwrite(hdr, 1, ST_HDR, f) == ST_HDR;
    for (int i = 0; ok && i < m->cfg.n_kv_owner; i++) {
        const g4_kv_slot *kv = &s->kv[i];
        uint8_t sl[ST_SLOT];
        put32(sl, (uint32_t)kv->head_dim);
        put32(sl + 4, (uint32_t)kv->n_head_kv);
        put32(sl + 8, (uint32_t)kv->swa);
        put32(sl + 12, (uint32_t)kv->k_row_bytes);
        ok = fwrite(sl, 1, ST_SLOT, f) == ST_SLOT;
    }
    for (size_t i = 0; ok && i < n_tokens; i++) {
        uint8_t tb[4];
        put32(tb, (uint32_t)tokens[i]);
        ok = fwrite(tb, 1, 4, f) == 4;
    }
    for (int i = 0; ok && i < m->cfg.n_kv_owner; i++) {
        const g4_kv_slot *kv = &s->kv[i];
        for (int64_t p = slot_lo(kv, ring_lo); ok && p < s->n_past; p++)
            for (int g = 0; ok && g < kv->n_head_kv; g++) {
                rec_get(s, kv, p, g, rec);
                ok = fwrite(rec, 1, 2 * kv->k_row_bytes, f) == 2 * kv->k_row_bytes;
            }
    }
    if (fclose(f) != 0) ok = 0;
    if (!ok) {
        remove(path);
        return serr(s, G4_ERR_IO, "save: %s: write failed", path);
    }
    return G4_OK;
}

/* reads exactly n bytes; 0 at a short read */
static int rd(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

g4_status g4_session_load(g4_session *s, const char *path, int32_t *tokens, size_t cap, size_t *n_tokens) {
    if (!s) return G4_ERR_ARG;
    s->err[0] = '\0';
    if (n_tokens) *n_tokens = 0;
    if (!path) return serr(s, G4_ERR_ARG, "load: path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f) return serr(s, G4_ERR_IO, "load: %s: %s", path, strerror(errno));
    g4_status st = state_load_fp(s, f, path, tokens, cap, n_tokens);
    fclose(f);
    return st;
}

g4_status state_load_fp(g4_session *s, FILE *f, const char *path, int32_t *tokens, size_t cap, size_t *n_tokens) {
    const g4_model *m = s->m;
    g4_status st = G4_OK;
    s->err[0] = '\0';
    if (n_tokens) *n_tokens = 0;
    uint8_t hdr[ST_HDR];
#define BAD(...) do { st = serr(s, G4_ERR_FORMAT, __VA_ARGS__); goto done; } while (0)
    if (!rd(f, hdr, ST_HDR)) BAD("load: %s: shorter than the %u-byte header", path, ST_HDR);
    if (memcmp(hdr, ST_MAGIC, 4) != 0) BAD("load: %s: not a gemma4.c state file (magic)", path);
    if (get32(hdr + 4) != ST_VERSION) BAD("load: %s: version %u, expected %u", path, get32(hdr + 4), ST_VERSION);
    if (get64(hdr + 8) != gguf_file_size(m->gguf) || get64(hdr + 16) != model_hash(m))
        BAD("load: %s: saved from another model (file size or tensor table differs)", path);
    if (get32(hdr + 24) != s->kv_type)
        BAD("load: %s: cache type %u, the session's is %u", path, get32(hdr + 24), s->kv_type);
    if (get32(hdr + 28) != (uint32_t)m->cfg.n_kv_owner || get32(hdr + 40) != (uint32_t)m->cfg.n_swa)
        BAD("load: %s: %u KV slots and window %u, the model has %d and %d", path, get32(hdr + 28), get32(hdr + 40),
            (int)m->cfg.n_kv_owner, (int)m->cfg.n_swa);
    const uint32_t n_past = get32(hdr + 32), ring_lo = get32(hdr + 36);
    if (n_past > (uint32_t)s->n_ctx) BAD("load: %s: %u positions, the session holds n_ctx %d", path, n_past, (int)s->n_ctx);
    if (ring_lo > n_past) BAD("load: %s: sliding positions start at %u, after n_past %u", path, ring_lo, n_past);
    const uint32_t n_tok = get32(hdr + 44);
    if (n_tok != 0 && n_tok != n_past) BAD("load: %s: %u tokens for %u positions (expected 0 or all)", path, n_tok, n_past);
    if (n_tok > cap || (n_tok && !tokens)) {
        if (n_tokens) *n_tokens = n_tok;
        st = serr(s, G4_ERR_BUFFER, "load: %s: holds %u tokens, the buffer takes %zu", path, n_tok, tokens ? cap : 0);
        goto done;
    }
    const int64_t need_lo = (int64_t)n_past - m->cfg.n_swa + 1;
    if (s->swa_cells > 0 && (int64_t)ring_lo > (need_lo > 0 ? need_lo : 0))
        BAD("load: %s: the sliding positions from %u do not cover the window of position %u", path, ring_lo, n_past);
    for (int i = 0; i < m->cfg.n_kv_owner; i++) {
        const g4_kv_slot *kv = &s->kv[i];
        uint8_t sl[ST_SLOT];
        if (!rd(f, sl, ST_SLOT)) BAD("load: %s: truncated in the slot table", path);
        if (get32(sl) != (uint32_t)kv->head_dim || get32(sl + 4) != (uint32_t)kv->n_head_kv ||
            get32(sl + 8) != (uint32_t)kv->swa || get32(sl + 12) != (uint32_t)kv->k_row_bytes)
            BAD("load: %s: slot %d geometry differs from the session's", path, i);
    }
    const uint64_t pay = payload_bytes(s, n_past, ring_lo);
    if (get64(hdr + 48) != pay) BAD("load: %s: payload of %llu bytes, expected %llu", path,
                                    (unsigned long long)get64(hdr + 48), (unsigned long long)pay);
    /* pass 1: the tokens' and payload's checksum and exact length */
    const long data_at = (long)(ST_HDR + ST_SLOT * (uint32_t)m->cfg.n_kv_owner + 4u * n_tok);
    uint8_t buf[ST_BUF];
    uint64_t h = FNV0, left = pay;
    for (uint32_t i = 0; i < n_tok; i++) {
        if (!rd(f, buf, 4)) BAD("load: %s: truncated in the tokens", path);
        h = fnv(h, buf, 4);
        const uint32_t t = get32(buf);
        if (t >= (uint32_t)m->cfg.n_vocab) BAD("load: %s: token %u at index %u is outside [0, %d)", path, t, i, (int)m->cfg.n_vocab);
    }
    while (left > 0) {
        const size_t n = left < sizeof buf ? (size_t)left : sizeof buf;
        if (!rd(f, buf, n)) BAD("load: %s: truncated: %llu payload bytes missing", path, (unsigned long long)left);
        h = fnv(h, buf, n);
        left -= n;
    }
    if (fgetc(f) != EOF) BAD("load: %s: trailing bytes after the payload", path);
    if (h != get64(hdr + 56)) BAD("load: %s: checksum mismatch (corrupt file)", path);
    /* the ring keeps at most swa_cells positions: skip the oldest if the saver held more */
    int64_t lo_keep = ring_lo;
    if (s->swa_cells > 0 && (int64_t)n_past - lo_keep > s->swa_cells) lo_keep = (int64_t)n_past - s->swa_cells;
    /* pass 2: copy (nothing above touched the session) */
    if (fseek(f, data_at - 4L * (long)n_tok, SEEK_SET) != 0) BAD("load: %s: cannot seek", path);
    uint64_t h2 = FNV0;
    for (uint32_t i = 0; i < n_tok; i++) {
        if (!rd(f, buf, 4)) goto changed;
        h2 = fnv(h2, buf, 4);
        tokens[i] = (int32_t)get32(buf);
    }
    for (int i = 0; i < m->cfg.n_kv_owner; i++) {
        const g4_kv_slot *kv = &s->kv[i];
        const size_t rb2 = 2 * kv->k_row_bytes;
        G4_ASSERT(rb2 <= sizeof buf);
        for (int64_t p = slot_lo(kv, ring_lo); p < (int64_t)n_past; p++)
            for (int g = 0; g < kv->n_head_kv; g++) {
                if (!rd(f, buf, rb2)) goto changed;
                h2 = fnv(h2, buf, rb2);
                if (!kv->swa || p >= lo_keep) rec_put(s, kv, p, g, buf);
            }
    }
    if (h2 != h) goto changed;
    s->n_past = (int32_t)n_past;
    s->swa_lo = (int32_t)lo_keep;
    s->swa_hi = (int32_t)n_past;
    s->n_logits = 0;
    if (n_tokens) *n_tokens = n_tok;
    goto done;
changed:
    g4_session_reset(s);
    st = serr(s, G4_ERR_IO, "load: %s: the file changed while it was read; the session was reset", path);
done:
#undef BAD
    return st;
}
