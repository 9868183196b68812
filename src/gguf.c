/* gguf.c - bounds-checked GGUF v2/v3 parser over a mapping or a caller's buffer.
 *
 * Owns: the container rules of shared/docs/gguf-format.md §8 and reliability.md §3A. It does
 * not know what a Gemma model is (model.c does). Invariants after a successful parse:
 *  - every metadata value was copied into the arena; nothing points into the file except
 *    gguf_tensor.data;
 *  - keys and tensor names are unique, non-empty, free of NUL and control bytes;
 *  - every tensor has 1..4 positive dims, a known type, ne[0] a multiple of its block size,
 *    a representable byte size, an offset equal to the padded running sum, and lies wholly
 *    inside the file.
 * The parser never recurses (nested arrays are refused) and never allocates from a count it
 * has not checked against the bytes that remain.
 */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "g4_impl.h"
#include "quant/quant.h"

/* ==== Arena: chunked, 8-byte aligned, freed at once ==== */

typedef struct arena_blk {
    struct arena_blk *next;
    size_t            size; /* bytes of this allocation, header included */
    size_t            used;
    /* data follows */
} arena_blk;

typedef struct arena {
    g4_allocator al;
    arena_blk   *head;
    size_t       total;   /* bytes handed out */
} arena;

#define ARENA_CHUNK ((size_t)1 << 20)

static void *arena_alloc(arena *a, size_t n) {
    n = (n + 7) & ~(size_t)7;
    if (n == 0) n = 8;
    const size_t hdr = (sizeof(arena_blk) + 7) & ~(size_t)7;
    arena_blk *b = a->head;
    if (!b || b->size - b->used < n) {
        size_t want = n + hdr;
        if (want < n) return NULL;
        /* small requests share 1 MiB chunks; big ones get their own block */
        size_t sz = n >= ARENA_CHUNK / 4 ? want : ARENA_CHUNK;
        b = g4_malloc(&a->al, sz);
        if (!b) return NULL;
        b->size = sz;
        b->used = hdr;
        if (n >= ARENA_CHUNK / 4 && a->head) { /* keep the partly used chunk at the head */
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = (char *)b + b->used;
    b->used += n;
    a->total += n;
    return p;
}

static void arena_free(arena *a) {
    arena_blk *b = a->head;
    while (b) {
        arena_blk *n = b->next;
        g4_free(&a->al, b, b->size);
        b = n;
    }
    a->head = NULL;
}

/* ==== The parsed file ==== */

struct gguf_file {
    arena          ar;
    char          *name;       /* arena */
    const uint8_t *base;       /* file bytes */
    uint64_t       size;
    int            mapped;     /* 1: munmap(base); 2: g4_free(base); 0: caller's buffer */
    uint32_t       version;
    uint32_t       align;
    uint64_t       data_off;
    gguf_kv       *kv;         /* [n_kv] */
    uint64_t       n_kv;
    gguf_tensor   *t;          /* [n_t] */
    uint64_t       n_t;
    uint32_t      *kv_hash;    /* [kv_hcap] index+1, 0 = empty */
    uint32_t      *t_hash;     /* [t_hcap] */
    uint32_t       kv_hcap, t_hcap;
};

typedef struct cursor {
    const uint8_t *p;
    uint64_t       len, pos;
    gguf_file     *f;
    char          *err;
    size_t         errlen;
    char           where[160]; /* section being read, for truncation messages */
} cursor;

G4_PRINTF(3, 4)
static g4_status fail(cursor *c, g4_status st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return g4_errf(st, c->err, c->errlen, "%s: %s", c->f->name ? c->f->name : "gguf", msg);
}

static int need(const cursor *c, uint64_t n) { return n <= c->len - c->pos; }

static g4_status trunc_err(cursor *c, uint64_t n) {
    return fail(c, G4_ERR_FORMAT, "file truncated in %s: need %llu bytes at offset %llu, file has %llu",
                c->where, (unsigned long long)n, (unsigned long long)c->pos, (unsigned long long)c->len);
}

/* n-byte little-endian value at p (n = 1, 2, 4, 8). On little-endian hosts the 4- and 8-byte
 * cases are one unaligned load (the string lengths of a 262k vocabulary are read ~1.5M times) */
static uint64_t rd_le(const uint8_t *p, int n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n == 8) { uint64_t v; memcpy(&v, p, 8); return v; }
    if (n == 4) { uint32_t v; memcpy(&v, p, 4); return v; }
#endif
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static g4_status rd_u32(cursor *c, uint32_t *v) {
    if (!need(c, 4)) return trunc_err(c, 4);
    *v = (uint32_t)rd_le(c->p + c->pos, 4);
    c->pos += 4;
    return G4_OK;
}

static g4_status rd_u64(cursor *c, uint64_t *v) {
    if (!need(c, 8)) return trunc_err(c, 8);
    *v = rd_le(c->p + c->pos, 8);
    c->pos += 8;
    return G4_OK;
}

static uint32_t hash_bytes(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static uint32_t pow2_at_least(uint64_t n) {
    uint32_t c = 16;
    while (c < 2 * n) c <<= 1;
    return c;
}

/* Reads a GGUF string's length and checks it against the remaining bytes and cap. */
static g4_status rd_str_len(cursor *c, uint64_t cap, const char *what, uint64_t *len) {
    uint64_t at = c->pos;
    g4_status st = rd_u64(c, len);
    if (st) return st;
    if (*len > cap)
        return fail(c, G4_ERR_FORMAT, "%s: length %llu exceeds the limit of %llu bytes (at offset %llu)",
                    what, (unsigned long long)*len, (unsigned long long)cap, (unsigned long long)at);
    if (!need(c, *len))
        return fail(c, G4_ERR_FORMAT, "%s: length %llu is beyond the end of the file (%llu bytes left, at offset %llu)",
                    what, (unsigned long long)*len, (unsigned long long)(c->len - c->pos), (unsigned long long)at);
    return G4_OK;
}

/* Escapes untrusted bytes for messages (printable ASCII kept, others as \xNN). */
static void esc(char *out, size_t cap, const char *s, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\'' && ch != '\\') out[o++] = (char)ch;
        else o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
    }
    if (n && o + 5 >= cap && o + 4 < cap) { out[o++] = '.'; out[o++] = '.'; out[o++] = '.'; }
    out[o] = 0;
}

size_t gguf_vtype_size(uint32_t t) {
    switch (t) {
    case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: return 1;
    case GGUF_UINT16: case GGUF_INT16: return 2;
    case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: return 4;
    case GGUF_UINT64: case GGUF_INT64: case GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

const char *gguf_vtype_name(uint32_t t) {
    static const char *const names[GGUF_VTYPE_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"
    };
    return t < GGUF_VTYPE_COUNT ? names[t] : "invalid";
}

/* ==== Metadata ==== */

static g4_status parse_kv(cursor *c, gguf_kv *kv, uint64_t idx) {
    gguf_file *f = c->f;
    uint64_t len, rec = c->pos;
    snprintf(c->where, sizeof c->where, "the key of metadata record %llu", (unsigned long long)idx);
    char what[96];
    snprintf(what, sizeof what, "metadata record %llu: key", (unsigned long long)idx);
    g4_status st = rd_str_len(c, GGUF_MAX_KEY, what, &len);
    if (st) return st;
    if (len == 0) return fail(c, G4_ERR_FORMAT, "metadata record %llu: empty key (at offset %llu)",
                              (unsigned long long)idx, (unsigned long long)rec);
    const char *k = (const char *)c->p + c->pos;
    for (uint64_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)k[i];
        if (ch < 0x20 || ch >= 0x7f) {
            char e[96];
            esc(e, sizeof e, k, (size_t)len);
            return fail(c, G4_ERR_FORMAT, "metadata record %llu: key '%s' contains byte 0x%02x (keys are printable ASCII; at offset %llu)",
                        (unsigned long long)idx, e, ch, (unsigned long long)(c->pos + i));
        }
    }
    char *key = arena_alloc(&f->ar, (size_t)len + 1);
    if (!key) return fail(c, G4_ERR_NOMEM, "out of memory reading metadata");
    memcpy(key, k, (size_t)len);
    key[len] = 0;
    c->pos += len;
    kv->key = key;
    kv->key_len = (uint32_t)len;
    kv->offset = rec;

    /* duplicate check (hash set, O(1) per key) */
    uint32_t h = hash_bytes(key, (size_t)len) & (f->kv_hcap - 1);
    while (f->kv_hash[h]) {
        const gguf_kv *o = &f->kv[f->kv_hash[h] - 1];
        if (o->key_len == len && memcmp(o->key, key, (size_t)len) == 0)
            return fail(c, G4_ERR_FORMAT, "duplicate key '%s' (records at offsets %llu and %llu)", key,
                        (unsigned long long)o->offset, (unsigned long long)rec);
        h = (h + 1) & (f->kv_hcap - 1);
    }
    f->kv_hash[h] = (uint32_t)idx + 1;

    snprintf(c->where, sizeof c->where, "the value of key '%s'", key);
    uint32_t type;
    uint64_t tpos = c->pos;
    if ((st = rd_u32(c, &type))) return st;
    if (type >= GGUF_VTYPE_COUNT)
        return fail(c, G4_ERR_FORMAT, "key '%s': unknown value type %u (at offset %llu)", key, type,
                    (unsigned long long)tpos);
    kv->type = type;
    kv->n = 1;
    if (type == GGUF_STRING) {
        uint64_t cap = strcmp(key, "tokenizer.chat_template") == 0 || strncmp(key, "tokenizer.", 10) == 0
                       ? (uint64_t)64 << 20 : GGUF_MAX_STR;
        snprintf(what, sizeof what, "key '%.60s': string value", key);
        if ((st = rd_str_len(c, cap, what, &len))) return st;
        char *s = arena_alloc(&f->ar, (size_t)len + 1);
        if (!s) return fail(c, G4_ERR_NOMEM, "out of memory reading key '%s'", key);
        memcpy(s, c->p + c->pos, (size_t)len);
        s[len] = 0;
        c->pos += len;
        kv->str = s;
        kv->str_len = len;
        return G4_OK;
    }
    if (type == GGUF_ARRAY) {
        uint32_t et;
        uint64_t n;
        uint64_t epos = c->pos;
        if ((st = rd_u32(c, &et))) return st;
        if (et >= GGUF_VTYPE_COUNT)
            return fail(c, G4_ERR_FORMAT, "key '%s': unknown array element type %u (at offset %llu)", key, et,
                        (unsigned long long)epos);
        if (et == GGUF_ARRAY)
            return fail(c, G4_ERR_FORMAT, "key '%s': nested arrays are not supported (at offset %llu)", key,
                        (unsigned long long)epos);
        uint64_t npos = c->pos;
        if ((st = rd_u64(c, &n))) return st;
        if (n > GGUF_MAX_ARRAY)
            return fail(c, G4_ERR_FORMAT, "key '%s': array of %llu elements exceeds the limit of %u (at offset %llu)",
                        key, (unsigned long long)n, GGUF_MAX_ARRAY, (unsigned long long)npos);
        kv->arr_type = et;
        kv->n = n;
        if (et == GGUF_STRING) {
            uint64_t minb;
            if (g4_mul_ovf(n, 8, &minb) || !need(c, minb))
                return fail(c, G4_ERR_FORMAT, "key '%s': array of %llu strings needs at least %llu bytes, %llu left (at offset %llu)",
                            key, (unsigned long long)n, (unsigned long long)n * 8ull,
                            (unsigned long long)(c->len - c->pos), (unsigned long long)npos);
            /* pass 1: lengths, bounds; pass 2: copy */
            uint64_t save = c->pos, blob = 0;
            for (uint64_t i = 0; i < n; i++) {
                /* fast path for the 777k strings of a real vocabulary; the label is
                 * formatted only when rd_str_len is about to fail */
                if (need(c, 8)) {
                    len = rd_le(c->p + c->pos, 8);
                    if (len <= GGUF_MAX_STR && len <= c->len - c->pos - 8) {
                        c->pos += 8 + len;
                        blob += len + 1; /* <= bytes consumed: no overflow */
                        continue;
                    }
                }
                snprintf(what, sizeof what, "key '%.60s': string %llu", key, (unsigned long long)i);
                if ((st = rd_str_len(c, GGUF_MAX_STR, what, &len))) return st;
                c->pos += len;
                blob += len + 1;
            }
            if (blob > GGUF_MAX_META)
                return fail(c, G4_ERR_FORMAT, "key '%s': %llu bytes of strings exceed the metadata limit", key,
                            (unsigned long long)blob);
            char *sb = arena_alloc(&f->ar, (size_t)blob);
            uint32_t *off = arena_alloc(&f->ar, (size_t)(n + 1) * sizeof(uint32_t));
            if (!sb || !off) return fail(c, G4_ERR_NOMEM, "out of memory reading key '%s'", key);
            c->pos = save;
            uint64_t o = 0;
            for (uint64_t i = 0; i < n; i++) {
                len = rd_le(c->p + c->pos, 8);
                c->pos += 8;
                off[i] = (uint32_t)o;
                memcpy(sb + o, c->p + c->pos, (size_t)len);
                sb[o + len] = 0;
                o += len + 1;
                c->pos += len;
            }
            off[n] = (uint32_t)o;
            kv->sblob = sb;
            kv->soff = off;
            return G4_OK;
        }
        size_t es = gguf_vtype_size(et);
        uint64_t bytes;
        if (g4_mul_ovf(n, es, &bytes) || !need(c, bytes))
            return fail(c, G4_ERR_FORMAT, "key '%s': array of %llu %s elements is beyond the end of the file (%llu bytes left, at offset %llu)",
                        key, (unsigned long long)n, gguf_vtype_name(et), (unsigned long long)(c->len - c->pos),
                        (unsigned long long)npos);
        uint8_t *a = arena_alloc(&f->ar, bytes ? (size_t)bytes : 1);
        if (!a) return fail(c, G4_ERR_NOMEM, "out of memory reading key '%s'", key);
        memcpy(a, c->p + c->pos, (size_t)bytes);
        if (et == GGUF_BOOL) /* never keep a non-0/1 byte that code may treat as _Bool */
            for (uint64_t i = 0; i < n; i++) a[i] = a[i] != 0;
        c->pos += bytes;
        kv->arr = a;
        return G4_OK;
    }
    size_t es = gguf_vtype_size(type);
    if (!need(c, es)) return trunc_err(c, es);
    uint64_t raw = rd_le(c->p + c->pos, (int)es);
    c->pos += es;
    switch (type) {
    case GGUF_UINT8:   kv->v.u8 = (uint8_t)raw; break;
    case GGUF_INT8:    kv->v.i8 = (int8_t)(uint8_t)raw; break;
    case GGUF_BOOL:    kv->v.b = raw != 0; break;
    case GGUF_UINT16:  kv->v.u16 = (uint16_t)raw; break;
    case GGUF_INT16:   kv->v.i16 = (int16_t)(uint16_t)raw; break;
    case GGUF_UINT32:  kv->v.u32 = (uint32_t)raw; break;
    case GGUF_INT32:   kv->v.i32 = (int32_t)(uint32_t)raw; break;
    case GGUF_FLOAT32: { uint32_t u = (uint32_t)raw; memcpy(&kv->v.f32, &u, 4); break; }
    case GGUF_UINT64:  kv->v.u64 = raw; break;
    case GGUF_INT64:   kv->v.i64 = (int64_t)raw; break;
    case GGUF_FLOAT64: memcpy(&kv->v.f64, &raw, 8); break;
    default: break;
    }
    return G4_OK;
}

/* ==== Tensor infos ==== */

static g4_status parse_tensor_info(cursor *c, gguf_tensor *t, uint64_t idx) {
    gguf_file *f = c->f;
    uint64_t len, rec = c->pos;
    g4_status st;
    char what[96];
    snprintf(c->where, sizeof c->where, "tensor info %llu", (unsigned long long)idx);
    snprintf(what, sizeof what, "tensor info %llu: name", (unsigned long long)idx);
    if ((st = rd_str_len(c, UINT64_MAX, what, &len))) return st;
    const char *nm = (const char *)c->p + c->pos;
    char e[96];
    if (len == 0) return fail(c, G4_ERR_FORMAT, "tensor info %llu: empty name (at offset %llu)",
                              (unsigned long long)idx, (unsigned long long)rec);
    if (len > GGUF_MAX_NAME) {
        esc(e, sizeof e, nm, (size_t)len);
        return fail(c, G4_ERR_FORMAT, "tensor info %llu: name '%s' is %llu bytes, the limit is %d (at offset %llu)",
                    (unsigned long long)idx, e, (unsigned long long)len, GGUF_MAX_NAME, (unsigned long long)rec);
    }
    for (uint64_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)nm[i];
        if (ch < 0x20 || ch == 0x7f) {
            esc(e, sizeof e, nm, (size_t)len);
            return fail(c, G4_ERR_FORMAT, "tensor info %llu: name '%s' contains byte 0x%02x (at offset %llu)",
                        (unsigned long long)idx, e, ch, (unsigned long long)(c->pos + i));
        }
    }
    memcpy(t->name, nm, (size_t)len);
    t->name[len] = 0;
    c->pos += len;
    t->info_offset = rec;

    uint32_t h = hash_bytes(t->name, (size_t)len) & (f->t_hcap - 1);
    while (f->t_hash[h]) {
        const gguf_tensor *o = &f->t[f->t_hash[h] - 1];
        if (strcmp(o->name, t->name) == 0)
            return fail(c, G4_ERR_FORMAT, "duplicate tensor name '%s' (infos at offsets %llu and %llu)", t->name,
                        (unsigned long long)o->info_offset, (unsigned long long)rec);
        h = (h + 1) & (f->t_hcap - 1);
    }
    f->t_hash[h] = (uint32_t)idx + 1;

    snprintf(c->where, sizeof c->where, "tensor info '%s'", t->name);
    uint64_t dpos = c->pos;
    if ((st = rd_u32(c, &t->n_dims))) return st;
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
        return fail(c, G4_ERR_FORMAT, "tensor '%s': %u dimensions, expected 1 to %d (at offset %llu)", t->name,
                    t->n_dims, GGUF_MAX_DIMS, (unsigned long long)dpos);
    for (int j = 0; j < GGUF_MAX_DIMS; j++) t->ne[j] = 1;
    uint64_t nel = 1;
    for (uint32_t j = 0; j < t->n_dims; j++) {
        uint64_t v, at = c->pos;
        if ((st = rd_u64(c, &v))) return st;
        if (v == 0 || v > (uint64_t)INT64_MAX)
            return fail(c, G4_ERR_FORMAT, "tensor '%s': dimension %u is %lld, must be positive (at offset %llu)", t->name,
                        j, (long long)v, (unsigned long long)at);
        t->ne[j] = (int64_t)v;
        if (g4_mul_ovf(nel, v, &nel) || nel > (uint64_t)INT64_MAX)
            return fail(c, G4_ERR_FORMAT, "tensor '%s': element count overflows (dimension %u = %llu, at offset %llu)",
                        t->name, j, (unsigned long long)v, (unsigned long long)at);
    }
    uint64_t tpos = c->pos;
    if ((st = rd_u32(c, &t->type))) return st;
    const g4_type_traits *tr = quant_traits(t->type);
    if (!tr)
        return fail(c, G4_ERR_FORMAT, "tensor '%s': unknown or removed type id %u (at offset %llu)", t->name, t->type,
                    (unsigned long long)tpos);
    if ((uint64_t)t->ne[0] % tr->blck)
        return fail(c, G4_ERR_FORMAT, "tensor '%s': row length %lld is not a multiple of the %s block size %u (at offset %llu)",
                    t->name, (long long)t->ne[0], tr->name, tr->blck, (unsigned long long)dpos);
    uint64_t nb;
    if (g4_mul_ovf(nel / tr->blck, tr->bytes, &nb) || nb > SIZE_MAX || nb > (uint64_t)INT64_MAX)
        return fail(c, G4_ERR_FORMAT, "tensor '%s': byte size is not representable (at offset %llu)", t->name,
                    (unsigned long long)dpos);
    t->nbytes = nb;
    uint64_t opos = c->pos;
    if ((st = rd_u64(c, &t->offset))) return st;
    (void)opos;
    return G4_OK;
}

/* ==== Whole file ==== */

static g4_status parse(gguf_file *f, char *err, size_t errlen) {
    cursor c = { .p = f->base, .len = f->size, .pos = 0, .f = f, .err = err, .errlen = errlen };
    g4_status st;
    snprintf(c.where, sizeof c.where, "the header");
    if (f->size == 0) return fail(&c, G4_ERR_FORMAT, "file is empty (a GGUF file starts with a 24-byte header)");
    if (!need(&c, 4)) return trunc_err(&c, 4);
    if (memcmp(f->base, "GGUF", 4) != 0) {
        const uint8_t *m = f->base;
        const char *hint = memcmp(m, "lmgg", 4) == 0 || memcmp(m, "tjgg", 4) == 0 || memcmp(m, "fmgg", 4) == 0
                           ? " (an old GGML/GGJT file: convert it to GGUF)" : "";
        return fail(&c, G4_ERR_FORMAT, "not a GGUF file: magic is %02x %02x %02x %02x, expected 47 47 55 46 ('GGUF')%s",
                    m[0], m[1], m[2], m[3], hint);
    }
    c.pos = 4;
    if ((st = rd_u32(&c, &f->version))) return st;
    if (f->version != 0 && (f->version & 0xffffu) == 0)
        return fail(&c, G4_ERR_FORMAT, "GGUF version 0x%08x: the file looks big-endian (wrong byte order); only little-endian files are supported",
                    f->version);
    if (f->version == 1) return fail(&c, G4_ERR_FORMAT, "GGUF v1 is not supported (convert it to v3)");
    if (f->version != 2 && f->version != 3)
        return fail(&c, G4_ERR_FORMAT, "unsupported GGUF version %u (expected 2 or 3)", f->version);
    uint64_t n_t, n_kv;
    if ((st = rd_u64(&c, &n_t))) return st;
    if ((st = rd_u64(&c, &n_kv))) return st;
    /* counts vs remaining bytes (a KV record is >= 14 bytes, a tensor info >= 33) before
     * allocating anything (TALOS-2024-1915/1916) */
    uint64_t left = c.len - c.pos;
    if (n_kv > GGUF_MAX_KV || n_kv > left / 14)
        return fail(&c, G4_ERR_FORMAT, "header declares %llu metadata records: more than the limit (%u) or than %llu bytes can hold (at offset 16)",
                    (unsigned long long)n_kv, GGUF_MAX_KV, (unsigned long long)left);
    if (n_t > GGUF_MAX_TENSORS || n_t > left / 33)
        return fail(&c, G4_ERR_FORMAT, "header declares %llu tensors: more than the limit (%u) or than %llu bytes can hold (at offset 8)",
                    (unsigned long long)n_t, GGUF_MAX_TENSORS, (unsigned long long)left);
    f->kv_hcap = pow2_at_least(n_kv);
    f->t_hcap = pow2_at_least(n_t);
    f->kv = arena_alloc(&f->ar, (size_t)(n_kv ? n_kv : 1) * sizeof(gguf_kv));
    f->t = arena_alloc(&f->ar, (size_t)(n_t ? n_t : 1) * sizeof(gguf_tensor));
    f->kv_hash = arena_alloc(&f->ar, (size_t)f->kv_hcap * sizeof(uint32_t));
    f->t_hash = arena_alloc(&f->ar, (size_t)f->t_hcap * sizeof(uint32_t));
    if (!f->kv || !f->t || !f->kv_hash || !f->t_hash) return fail(&c, G4_ERR_NOMEM, "out of memory");
    memset(f->kv, 0, (size_t)(n_kv ? n_kv : 1) * sizeof(gguf_kv));
    memset(f->t, 0, (size_t)(n_t ? n_t : 1) * sizeof(gguf_tensor));
    memset(f->kv_hash, 0, (size_t)f->kv_hcap * sizeof(uint32_t));
    memset(f->t_hash, 0, (size_t)f->t_hcap * sizeof(uint32_t));

    for (uint64_t i = 0; i < n_kv; i++) {
        if ((st = parse_kv(&c, &f->kv[i], i))) return st;
        f->n_kv = i + 1;
        if (f->ar.total > GGUF_MAX_META)
            return fail(&c, G4_ERR_FORMAT, "metadata exceeds the limit of %u bytes", GGUF_MAX_META);
    }
    f->align = GGUF_DEFAULT_ALIGN;
    const gguf_kv *al = gguf_find(f, "general.alignment");
    if (al) {
        if (al->type != GGUF_UINT32)
            return fail(&c, G4_ERR_FORMAT, "key 'general.alignment' has type %s, expected u32 (at offset %llu)",
                        al->type == GGUF_ARRAY ? "array" : gguf_vtype_name(al->type), (unsigned long long)al->offset);
        uint32_t a = al->v.u32;
        if (a == 0 || (a & (a - 1)) || a > GGUF_MAX_ALIGN)
            return fail(&c, G4_ERR_FORMAT, "key 'general.alignment' is %u: must be a power of two from 1 to %u (at offset %llu)",
                        a, GGUF_MAX_ALIGN, (unsigned long long)al->offset);
        f->align = a;
    }
    for (uint64_t i = 0; i < n_t; i++) {
        if ((st = parse_tensor_info(&c, &f->t[i], i))) return st;
        f->n_t = i + 1;
    }
    /* data section: pad(end of infos), then tensors contiguous in file order */
    uint64_t ds;
    if (g4_add_ovf(c.pos, f->align - 1, &ds)) return fail(&c, G4_ERR_FORMAT, "data offset overflows");
    ds = ds / f->align * f->align;
    if (n_t == 0) ds = c.pos;
    if (ds > f->size)
        return fail(&c, G4_ERR_FORMAT, "file truncated: the data section starts at offset %llu, file has %llu bytes",
                    (unsigned long long)ds, (unsigned long long)f->size);
    f->data_off = ds;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n_t; i++) {
        gguf_tensor *t = &f->t[i];
        if (t->offset % f->align)
            return fail(&c, G4_ERR_FORMAT, "tensor '%s': offset %llu is not aligned to %u", t->name,
                        (unsigned long long)t->offset, f->align);
        if (t->offset != sum)
            return fail(&c, G4_ERR_FORMAT, "tensor '%s': offset %llu, expected %llu (tensors must be contiguous, in file order, each padded to %u)",
                        t->name, (unsigned long long)t->offset, (unsigned long long)sum, f->align);
        uint64_t end, padded;
        if (g4_add_ovf(ds, t->offset, &end) || g4_add_ovf(end, t->nbytes, &end) || end > f->size)
            return fail(&c, G4_ERR_FORMAT, "file incomplete: tensor '%s' needs bytes up to offset %llu + %llu, file has %llu bytes",
                        t->name, (unsigned long long)(ds + t->offset), (unsigned long long)t->nbytes,
                        (unsigned long long)f->size);
        if (g4_add_ovf(t->nbytes, f->align - 1, &padded))
            return fail(&c, G4_ERR_FORMAT, "tensor '%s': padded size overflows", t->name);
        padded = padded / f->align * f->align;
        if (g4_add_ovf(sum, padded, &sum))
            return fail(&c, G4_ERR_FORMAT, "tensor '%s': data section size overflows", t->name);
        t->data = f->base + ds + t->offset;
    }
    return G4_OK;
}

static g4_status file_new(gguf_file **out, const char *name, const gguf_alloc *al) {
    g4_allocator a;
    g4_allocator_init(&a, al ? al->fn : NULL, al ? al->ud : NULL);
    gguf_file *f = g4_calloc(&a, 1, sizeof *f);
    if (!f) return G4_ERR_NOMEM;
    f->ar.al = a;
    size_t n = strlen(name);
    f->name = arena_alloc(&f->ar, n + 1);
    if (!f->name) {
        g4_free(&a, f, sizeof *f);
        return G4_ERR_NOMEM;
    }
    memcpy(f->name, name, n + 1);
    *out = f;
    return G4_OK;
}

g4_status gguf_open_mem(gguf_file **out, const void *buf, size_t len, const char *name, const gguf_alloc *al,
                        char *err, size_t errlen) {
    if (!out) return g4_errf(G4_ERR_ARG, err, errlen, "gguf_open_mem: out is NULL");
    *out = NULL;
    if (!buf && len) return g4_errf(G4_ERR_ARG, err, errlen, "gguf_open_mem: NULL buffer");
    gguf_file *f;
    if (file_new(&f, name ? name : "<memory>", al)) return g4_errf(G4_ERR_NOMEM, err, errlen, "out of memory");
    f->base = buf;
    f->size = len;
    g4_status st = parse(f, err, errlen);
    if (st) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return G4_OK;
}

g4_status gguf_open(gguf_file **out, const char *path, int no_mmap, const gguf_alloc *al, char *err, size_t errlen) {
    if (!out) return g4_errf(G4_ERR_ARG, err, errlen, "gguf_open: out is NULL");
    *out = NULL;
    if (!path) return g4_errf(G4_ERR_ARG, err, errlen, "gguf_open: path is NULL");
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; we refuse it after fstat */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return g4_errf(G4_ERR_IO, err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return g4_errf(G4_ERR_IO, err, errlen, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return g4_errf(G4_ERR_IO, err, errlen, "%s: not a regular file (%s)", path,
                       S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO"
                       : S_ISCHR(sb.st_mode) ? "a character device" : S_ISSOCK(sb.st_mode) ? "a socket" : "special file");
    }
    gguf_file *f;
    if (file_new(&f, path, al)) {
        close(fd);
        return g4_errf(G4_ERR_NOMEM, err, errlen, "out of memory");
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (size > SIZE_MAX) {
        close(fd);
        gguf_close(f);
        return g4_errf(G4_ERR_IO, err, errlen, "%s: file too large for this platform", path);
    }
    if (size > 0 && !no_mmap) {
        void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            gguf_close(f);
            return g4_errf(G4_ERR_IO, err, errlen, "%s: cannot map: %s", path, strerror(e));
        }
        f->base = p;
        f->mapped = 1;
    } else if (size > 0) {
        uint8_t *p = g4_malloc(&f->ar.al, (size_t)size);
        if (!p) {
            close(fd);
            gguf_close(f);
            return g4_errf(G4_ERR_NOMEM, err, errlen, "%s: out of memory reading %llu bytes", path,
                           (unsigned long long)size);
        }
        uint64_t got = 0;
        while (got < size) {
            ssize_t r = read(fd, p + got, (size_t)(size - got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                int e = r < 0 ? errno : 0;
                g4_free(&f->ar.al, p, (size_t)size);
                close(fd);
                gguf_close(f);
                return g4_errf(G4_ERR_IO, err, errlen, "%s: read failed: %s", path, e ? strerror(e) : "file shrank");
            }
            got += (uint64_t)r;
        }
        f->base = p;
        f->mapped = 2;
    }
    close(fd);
    f->size = size;
    g4_status st = parse(f, err, errlen);
    if (st) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return G4_OK;
}

void gguf_will_read(const gguf_file *f, const void *p, size_t n) {
    if (!f || f->mapped != 1 || !n) return;
    const long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    const uintptr_t a = (uintptr_t)p / (uintptr_t)pg * (uintptr_t)pg;
#if defined(MADV_POPULATE_READ)
    if (madvise((void *)a, (uintptr_t)p + n - a, MADV_POPULATE_READ) == 0) return;
#endif
    (void)madvise((void *)a, (uintptr_t)p + n - a, MADV_WILLNEED);
}

int gguf_mapped_range(const gguf_file *f, const void *p, size_t n) {
    if (!f || f->mapped != 1) return 0;
    const uintptr_t a = (uintptr_t)p, b = (uintptr_t)f->base;
    return a >= b && a - b <= f->size && n <= f->size - (a - b);
}

void gguf_drop_pages(const gguf_file *f, const void *p, size_t n) {
    if (!f || f->mapped != 1 || !n) return;
    const long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    const uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) / (uintptr_t)pg * (uintptr_t)pg;
    const uintptr_t e = ((uintptr_t)p + n) / (uintptr_t)pg * (uintptr_t)pg;
    if (e > a) (void)madvise((void *)a, (size_t)(e - a), MADV_DONTNEED);
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    if (f->mapped == 1) munmap((void *)(uintptr_t)f->base, (size_t)f->size);
    else if (f->mapped == 2) g4_free(&f->ar.al, (void *)(uintptr_t)f->base, (size_t)f->size);
    g4_allocator a = f->ar.al;
    arena_free(&f->ar);
    g4_free(&a, f, sizeof *f);
}

const char *gguf_name(const gguf_file *f) { return f->name; }
uint32_t gguf_version(const gguf_file *f) { return f->version; }
uint32_t gguf_alignment(const gguf_file *f) { return f->align; }
uint64_t gguf_file_size(const gguf_file *f) { return f->size; }
uint64_t gguf_data_offset(const gguf_file *f) { return f->data_off; }
size_t gguf_n_kv(const gguf_file *f) { return (size_t)f->n_kv; }
const gguf_kv *gguf_kv_at(const gguf_file *f, size_t i) { return i < f->n_kv ? &f->kv[i] : NULL; }
size_t gguf_n_tensors(const gguf_file *f) { return (size_t)f->n_t; }
const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i) { return i < f->n_t ? &f->t[i] : NULL; }
size_t gguf_meta_bytes(const gguf_file *f) { return f->ar.total; }

const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
    size_t n = strlen(key);
    uint32_t h = hash_bytes(key, n) & (f->kv_hcap - 1);
    while (f->kv_hash[h]) {
        const gguf_kv *kv = &f->kv[f->kv_hash[h] - 1];
        if (kv->key_len == n && memcmp(kv->key, key, n) == 0) return kv;
        h = (h + 1) & (f->kv_hcap - 1);
    }
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    size_t n = strlen(name);
    uint32_t h = hash_bytes(name, n) & (f->t_hcap - 1);
    while (f->t_hash[h]) {
        const gguf_tensor *t = &f->t[f->t_hash[h] - 1];
        if (strcmp(t->name, name) == 0) return t;
        h = (h + 1) & (f->t_hcap - 1);
    }
    return NULL;
}

/* ==== Typed accessors ==== */

static const char *kv_type_desc(const gguf_kv *kv, char *buf, size_t cap) {
    if (kv->type == GGUF_ARRAY) snprintf(buf, cap, "array of %s", gguf_vtype_name(kv->arr_type));
    else snprintf(buf, cap, "%s", gguf_vtype_name(kv->type));
    return buf;
}

static g4_status get_scalar(const gguf_file *f, const char *key, int required, uint32_t type, const gguf_kv **out,
                            int *found, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find(f, key);
    if (found) *found = kv != NULL;
    *out = kv;
    if (!kv) {
        if (required) return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: missing required key '%s'", f->name, key);
        return G4_OK;
    }
    if (kv->type != type) {
        char b[48];
        if (found) *found = 0;
        *out = NULL;
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: key '%s' has type %s, expected %s (at offset %llu)", f->name,
                       key, kv_type_desc(kv, b, sizeof b), gguf_vtype_name(type), (unsigned long long)kv->offset);
    }
    return G4_OK;
}

/* the scalar getters differ only in the stored type and the union member they read */
#define SCALAR_GETTER(fn, ctype, vtype, member)                                                       \
    g4_status fn(const gguf_file *f, const char *key, int required, ctype *out, int *found, char *err, \
                 size_t errlen) {                                                                   \
        const gguf_kv *kv;                                                                          \
        g4_status st = get_scalar(f, key, required, vtype, &kv, found, err, errlen);                \
        if (!st && kv) *out = kv->v.member;                                                         \
        return st;                                                                                  \
    }

SCALAR_GETTER(gguf_get_u32, uint32_t, GGUF_UINT32, u32)
SCALAR_GETTER(gguf_get_i32, int32_t, GGUF_INT32, i32)
SCALAR_GETTER(gguf_get_f32, float, GGUF_FLOAT32, f32)
SCALAR_GETTER(gguf_get_bool, int, GGUF_BOOL, b)

g4_status gguf_get_str(const gguf_file *f, const char *key, int required, const char **out, uint64_t *len,
                       int *found, char *err, size_t errlen) {
    const gguf_kv *kv;
    g4_status st = get_scalar(f, key, required, GGUF_STRING, &kv, found, err, errlen);
    if (!st && kv) {
        *out = kv->str;
        if (len) *len = kv->str_len;
    }
    return st;
}

g4_status gguf_get_arr(const gguf_file *f, const char *key, int required, uint32_t elem_mask, const gguf_kv **out,
                       int *found, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find(f, key);
    if (found) *found = 0;
    *out = NULL;
    if (!kv) {
        if (required) return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: missing required key '%s'", f->name, key);
        return G4_OK;
    }
    if (kv->type != GGUF_ARRAY || !(elem_mask & (1u << kv->arr_type))) {
        char b[48], want[128];
        size_t o = 0;
        want[0] = 0;
        for (uint32_t t = 0; t < GGUF_VTYPE_COUNT; t++)
            if (elem_mask & (1u << t))
                o += (size_t)snprintf(want + o, sizeof want - o, "%s%s", o ? " or " : "", gguf_vtype_name(t));
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: key '%s' has type %s, expected an array of %s (at offset %llu)",
                       f->name, key, kv_type_desc(kv, b, sizeof b), want, (unsigned long long)kv->offset);
    }
    if (found) *found = 1;
    *out = kv;
    return G4_OK;
}

g4_status gguf_get_u32_or_arr(const gguf_file *f, const char *key, int required, uint32_t n, uint32_t *out,
                              int *found, char *err, size_t errlen) {
    const gguf_kv *kv = gguf_find(f, key);
    if (found) *found = 0;
    if (!kv) {
        if (required) return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: missing required key '%s'", f->name, key);
        return G4_OK;
    }
    if (kv->type == GGUF_UINT32) {
        for (uint32_t i = 0; i < n; i++) out[i] = kv->v.u32;
        if (found) *found = 1;
        return G4_OK;
    }
    if (kv->type == GGUF_ARRAY && (kv->arr_type == GGUF_UINT32 || kv->arr_type == GGUF_INT32)) {
        if (kv->n != n)
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: key '%s' has %llu entries, expected %u (one per layer)",
                           f->name, key, (unsigned long long)kv->n, n);
        const uint8_t *a = kv->arr;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t v = (uint32_t)rd_le(a + 4 * (size_t)i, 4);
            if (kv->arr_type == GGUF_INT32 && (int32_t)v < 0)
                return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: key '%s': entry %u is %d, must not be negative",
                               f->name, key, i, (int32_t)v);
            out[i] = v;
        }
        if (found) *found = 1;
        return G4_OK;
    }
    char b[48];
    return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: key '%s' has type %s, expected u32 or an array of u32/i32 (at offset %llu)",
                   f->name, key, kv_type_desc(kv, b, sizeof b), (unsigned long long)kv->offset);
}
