/* gguf_write.c - deterministic GGUF v3 writer (gguf-format.md §9).
 *
 * Owns: serialising metadata records as they are added (into one growing byte buffer), the
 * tensor-info table with offsets = padded running sums, and the padded data section. It is
 * what `g4 quantize`, the random test-model generator and the tests use. Errors (duplicate
 * key or tensor, bad shape, allocation) are sticky and reported by gguf_writer_write*.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "g4_impl.h"
#include "gguf.h"
#include "quant/quant.h"

typedef struct wtensor {
    char        name[GGUF_MAX_NAME + 1];
    uint32_t    type, n_dims;
    int64_t     ne[GGUF_MAX_DIMS];
    uint64_t    nbytes, offset;
    const void *data;
} wtensor;

struct gguf_writer {
    uint8_t  *kv;      /* serialised KV records */
    size_t    kv_len, kv_cap;
    uint64_t  n_kv;
    char    **keys;    /* [n_kv] copies, for duplicate checks */
    size_t    keys_cap;
    wtensor  *t;
    size_t    n_t, t_cap;
    uint32_t  align;
    char      err[256];
};

gguf_writer *gguf_writer_new(void) {
    gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->align = GGUF_DEFAULT_ALIGN;
    return w;
}

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    free(w->keys);
    free(w->kv);
    free(w->t);
    free(w);
}

static void werr(gguf_writer *w, const char *msg, const char *name) {
    if (!w->err[0]) snprintf(w->err, sizeof w->err, "%s '%s'", msg, name);
}

static int put(gguf_writer *w, const void *p, size_t n) {
    if (w->err[0]) return -1;
    if (w->kv_len + n > w->kv_cap) {
        size_t cap = w->kv_cap ? w->kv_cap : 4096;
        while (cap < w->kv_len + n) cap *= 2;
        uint8_t *nb = realloc(w->kv, cap);
        if (!nb) { snprintf(w->err, sizeof w->err, "out of memory"); return -1; }
        w->kv = nb;
        w->kv_cap = cap;
    }
    if (n) memcpy(w->kv + w->kv_len, p, n);
    w->kv_len += n;
    return 0;
}

static void put_le(gguf_writer *w, uint64_t v, int n) {
    uint8_t b[8];
    for (int i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
    put(w, b, (size_t)n);
}

static void put_str(gguf_writer *w, const char *s, size_t len) {
    put_le(w, len, 8);
    put(w, s, len);
}

/* starts a record: checks the key, writes key + type */
static int begin(gguf_writer *w, const char *key, uint32_t type) {
    if (w->err[0]) return -1;
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->keys[i], key) == 0) { werr(w, "duplicate key", key); return -1; }
    if (w->n_kv == w->keys_cap) {
        size_t cap = w->keys_cap ? 2 * w->keys_cap : 64;
        char **nk = realloc(w->keys, cap * sizeof *nk);
        if (!nk) { snprintf(w->err, sizeof w->err, "out of memory"); return -1; }
        w->keys = nk;
        w->keys_cap = cap;
    }
    size_t n = strlen(key);
    char *k = malloc(n + 1);
    if (!k) { snprintf(w->err, sizeof w->err, "out of memory"); return -1; }
    memcpy(k, key, n + 1);
    w->keys[w->n_kv++] = k;
    put_str(w, key, n);
    put_le(w, type, 4);
    return w->err[0] ? -1 : 0;
}

void gguf_w_u8(gguf_writer *w, const char *key, uint8_t v) { if (!begin(w, key, GGUF_UINT8)) put_le(w, v, 1); }
void gguf_w_i8(gguf_writer *w, const char *key, int8_t v) { if (!begin(w, key, GGUF_INT8)) put_le(w, (uint8_t)v, 1); }
void gguf_w_u16(gguf_writer *w, const char *key, uint16_t v) { if (!begin(w, key, GGUF_UINT16)) put_le(w, v, 2); }
void gguf_w_i16(gguf_writer *w, const char *key, int16_t v) { if (!begin(w, key, GGUF_INT16)) put_le(w, (uint16_t)v, 2); }
void gguf_w_u32(gguf_writer *w, const char *key, uint32_t v) { if (!begin(w, key, GGUF_UINT32)) put_le(w, v, 4); }
void gguf_w_i32(gguf_writer *w, const char *key, int32_t v) { if (!begin(w, key, GGUF_INT32)) put_le(w, (uint32_t)v, 4); }
void gguf_w_bool(gguf_writer *w, const char *key, int v) { if (!begin(w, key, GGUF_BOOL)) put_le(w, v != 0, 1); }
void gguf_w_u64(gguf_writer *w, const char *key, uint64_t v) { if (!begin(w, key, GGUF_UINT64)) put_le(w, v, 8); }
void gguf_w_i64(gguf_writer *w, const char *key, int64_t v) { if (!begin(w, key, GGUF_INT64)) put_le(w, (uint64_t)v, 8); }

void gguf_w_f32(gguf_writer *w, const char *key, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    if (!begin(w, key, GGUF_FLOAT32)) put_le(w, u, 4);
}

void gguf_w_f64(gguf_writer *w, const char *key, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    if (!begin(w, key, GGUF_FLOAT64)) put_le(w, u, 8);
}

void gguf_w_str(gguf_writer *w, const char *key, const char *s, size_t len) {
    if (!begin(w, key, GGUF_STRING)) put_str(w, s, len);
}

void gguf_w_arr(gguf_writer *w, const char *key, uint32_t elem_type, const void *data, uint64_t n) {
    size_t es = gguf_vtype_size(elem_type);
    if (!es) { werr(w, "unsupported array element type for key", key); return; }
    if (begin(w, key, GGUF_ARRAY)) return;
    put_le(w, elem_type, 4);
    put_le(w, n, 8);
    /* elements are little-endian in memory on every platform we build for; write bytewise */
    const uint8_t *p = data;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = 0;
        memcpy(&v, p + i * es, es); /* host order (little-endian) */
        put_le(w, v, (int)es);
    }
}

void gguf_w_arr_str(gguf_writer *w, const char *key, const char *const *strs, const size_t *lens, uint64_t n) {
    if (begin(w, key, GGUF_ARRAY)) return;
    put_le(w, GGUF_STRING, 4);
    put_le(w, n, 8);
    for (uint64_t i = 0; i < n; i++) put_str(w, strs[i], lens ? lens[i] : strlen(strs[i]));
}

void gguf_w_copy_kv(gguf_writer *w, const gguf_kv *kv) {
    if (kv->type == GGUF_STRING) { gguf_w_str(w, kv->key, kv->str, (size_t)kv->str_len); return; }
    if (kv->type == GGUF_ARRAY) {
        if (kv->arr_type == GGUF_STRING) {
            if (begin(w, kv->key, GGUF_ARRAY)) return;
            put_le(w, GGUF_STRING, 4);
            put_le(w, kv->n, 8);
            for (uint64_t i = 0; i < kv->n; i++) {
                uint64_t len;
                const char *s = gguf_arr_str(kv, i, &len);
                put_str(w, s, (size_t)len);
            }
        } else {
            gguf_w_arr(w, kv->key, kv->arr_type, kv->arr, kv->n);
        }
        return;
    }
    if (begin(w, kv->key, kv->type)) return;
    size_t es = gguf_vtype_size(kv->type);
    uint64_t v = 0;
    switch (kv->type) {
    case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: v = kv->v.u8; break;
    case GGUF_UINT16: case GGUF_INT16: v = kv->v.u16; break;
    case GGUF_UINT32: case GGUF_INT32: v = kv->v.u32; break;
    case GGUF_FLOAT32: { uint32_t u; memcpy(&u, &kv->v.f32, 4); v = u; break; }
    case GGUF_FLOAT64: memcpy(&v, &kv->v.f64, 8); break;
    default: v = kv->v.u64; break;
    }
    put_le(w, v, (int)es);
}

void gguf_w_alignment(gguf_writer *w, uint32_t align) {
    if (align == 0 || (align & (align - 1))) { werr(w, "alignment must be a power of two, key", "general.alignment"); return; }
    w->align = align;
    gguf_w_u32(w, "general.alignment", align);
}

void gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
                   const void *data) {
    if (w->err[0]) return;
    size_t nl = strlen(name);
    if (nl == 0 || nl > GGUF_MAX_NAME) { werr(w, "bad tensor name length", name); return; }
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0) { werr(w, "duplicate tensor", name); return; }
    const g4_type_traits *tr = quant_traits(type);
    if (!tr || n_dims == 0 || n_dims > GGUF_MAX_DIMS) { werr(w, "bad type or dimension count for tensor", name); return; }
    uint64_t nel = 1;
    for (uint32_t j = 0; j < n_dims; j++) {
        if (ne[j] <= 0 || g4_mul_ovf(nel, (uint64_t)ne[j], &nel)) { werr(w, "bad dimension for tensor", name); return; }
    }
    if ((uint64_t)ne[0] % tr->blck) { werr(w, "row length not a multiple of the block size for tensor", name); return; }
    if (w->n_t == w->t_cap) {
        size_t cap = w->t_cap ? 2 * w->t_cap : 64;
        wtensor *nt = realloc(w->t, cap * sizeof *nt);
        if (!nt) { snprintf(w->err, sizeof w->err, "out of memory"); return; }
        w->t = nt;
        w->t_cap = cap;
    }
    wtensor *t = &w->t[w->n_t++];
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, nl + 1);
    t->type = type;
    t->n_dims = n_dims;
    for (int j = 0; j < GGUF_MAX_DIMS; j++) t->ne[j] = j < (int)n_dims ? ne[j] : 1;
    t->nbytes = nel / tr->blck * tr->bytes;
    t->data = data;
}

/* ==== Output: a sink that is either a FILE or a memory buffer ==== */

typedef struct sink {
    FILE    *fp;
    uint8_t *buf;
    size_t   len, cap;
    int      failed;
} sink;

static void sink_put(sink *s, const void *p, size_t n) {
    if (s->failed || n == 0) return;
    if (s->fp) {
        if (fwrite(p, 1, n, s->fp) != n) s->failed = 1;
        return;
    }
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 1 << 16;
        while (cap < s->len + n) cap *= 2;
        uint8_t *nb = realloc(s->buf, cap);
        if (!nb) { s->failed = 1; return; }
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

static void sink_le(sink *s, uint64_t v, int n) {
    uint8_t b[8];
    for (int i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
    sink_put(s, b, (size_t)n);
}

static void sink_pad(sink *s, uint64_t pos, uint32_t align) {
    static const uint8_t zeros[64];
    uint64_t pad = (align - pos % align) % align;
    while (pad) {
        size_t k = pad > sizeof zeros ? sizeof zeros : (size_t)pad;
        sink_put(s, zeros, k);
        pad -= k;
    }
}

static g4_status emit(gguf_writer *w, sink *s, gguf_fill_fn fill, gguf_fill_part_fn part, size_t part_cap, void *ud,
                      char *err, size_t errlen) {
    if (w->err[0]) return g4_errf(G4_ERR_ARG, err, errlen, "gguf writer: %s", w->err);
    uint64_t pos = 0, off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        uint64_t padded = (w->t[i].nbytes + w->align - 1) / w->align * w->align;
        off += padded;
    }
    sink_put(s, "GGUF", 4);
    sink_le(s, 3, 4);
    sink_le(s, w->n_t, 8);
    sink_le(s, w->n_kv, 8);
    sink_put(s, w->kv, w->kv_len);
    pos = 24 + w->kv_len;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        size_t nl = strlen(t->name);
        sink_le(s, nl, 8);
        sink_put(s, t->name, nl);
        sink_le(s, t->n_dims, 4);
        for (uint32_t j = 0; j < t->n_dims; j++) sink_le(s, (uint64_t)t->ne[j], 8);
        sink_le(s, t->type, 4);
        sink_le(s, t->offset, 8);
        pos += 8 + nl + 4 + 8ull * t->n_dims + 4 + 8;
    }
    if (w->n_t) {
        sink_pad(s, pos, w->align);
        pos = (pos + w->align - 1) / w->align * w->align;
    }
    void *tmp = NULL;
    size_t tmp_cap = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        const void *d = t->data;
        if (!d && part) { /* produced in parts of at most part_cap bytes (gguf_writer_write_parts) */
            size_t want = part_cap < t->nbytes ? part_cap : (size_t)t->nbytes;
            if (want > tmp_cap) {
                free(tmp);
                tmp = malloc(want);
                tmp_cap = tmp ? want : 0;
                if (!tmp) return g4_errf(G4_ERR_NOMEM, err, errlen, "gguf writer: out of memory for tensor '%s'", t->name);
            }
            for (uint64_t done = 0; done < t->nbytes;) {
                size_t cap = t->nbytes - done < tmp_cap ? (size_t)(t->nbytes - done) : tmp_cap;
                size_t got = part(ud, i, done, tmp, cap);
                if (got == 0 || got > cap) {
                    free(tmp);
                    return g4_errf(G4_ERR_ABORTED, err, errlen, "gguf writer: producing tensor '%s' failed", t->name);
                }
                sink_put(s, tmp, got);
                done += got;
            }
            sink_pad(s, t->nbytes, w->align);
            continue;
        }
        if (!d) {
            if (!fill) { free(tmp); return g4_errf(G4_ERR_ARG, err, errlen, "gguf writer: tensor '%s' has no data", t->name); }
            if (t->nbytes > tmp_cap) {
                free(tmp);
                tmp = malloc((size_t)t->nbytes);
                tmp_cap = tmp ? (size_t)t->nbytes : 0;
                if (!tmp) return g4_errf(G4_ERR_NOMEM, err, errlen, "gguf writer: out of memory for tensor '%s'", t->name);
            }
            if (fill(ud, i, tmp, (size_t)t->nbytes)) {
                free(tmp);
                return g4_errf(G4_ERR_ABORTED, err, errlen, "gguf writer: producing tensor '%s' failed", t->name);
            }
            d = tmp;
        }
        sink_put(s, d, (size_t)t->nbytes);
        sink_pad(s, t->nbytes, w->align);
    }
    free(tmp);
    if (s->failed) return g4_errf(G4_ERR_IO, err, errlen, "gguf writer: write failed: %s", strerror(errno));
    return G4_OK;
}

g4_status gguf_writer_write(gguf_writer *w, const char *path, gguf_fill_fn fill, void *ud, char *err, size_t errlen) {
    sink s = {0};
    s.fp = fopen(path, "wb");
    if (!s.fp) return g4_errf(G4_ERR_IO, err, errlen, "%s: cannot create: %s", path, strerror(errno));
    g4_status st = emit(w, &s, fill, NULL, 0, ud, err, errlen);
    if (fclose(s.fp) != 0 && st == G4_OK)
        st = g4_errf(G4_ERR_IO, err, errlen, "%s: write failed: %s", path, strerror(errno));
    if (st) remove(path);
    return st;
}

g4_status gguf_writer_write_parts(gguf_writer *w, const char *path, gguf_fill_part_fn part, size_t part_cap, void *ud,
                                  char *err, size_t errlen) {
    if (!part || part_cap == 0) return g4_errf(G4_ERR_ARG, err, errlen, "gguf writer: no part callback or zero part size");
    sink s = {0};
    s.fp = fopen(path, "wb");
    if (!s.fp) return g4_errf(G4_ERR_IO, err, errlen, "%s: cannot create: %s", path, strerror(errno));
    g4_status st = emit(w, &s, NULL, part, part_cap, ud, err, errlen);
    if (fclose(s.fp) != 0 && st == G4_OK)
        st = g4_errf(G4_ERR_IO, err, errlen, "%s: write failed: %s", path, strerror(errno));
    if (st) remove(path);
    return st;
}

g4_status gguf_writer_write_mem(gguf_writer *w, void **out, size_t *len, gguf_fill_fn fill, void *ud, char *err,
                                size_t errlen) {
    sink s = {0};
    *out = NULL;
    *len = 0;
    g4_status st = emit(w, &s, fill, NULL, 0, ud, err, errlen);
    if (st) { free(s.buf); return st; }
    if (s.failed) { free(s.buf); return g4_errf(G4_ERR_NOMEM, err, errlen, "gguf writer: out of memory"); }
    *out = s.buf;
    *len = s.len;
    return G4_OK;
}
