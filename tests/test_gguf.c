/* test_gguf.c - the GGUF container: hand-built hostile files (one defect each, with the
 * message it must produce), truncation at every byte, allocation bounds, the typed accessors
 * and writer -> reader round trips. reliability.md §3A items are cited as #N. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "g4_impl.h"
#include "gguf.h"
#include "quant/quant.h"
#include "t.h"

/* ==== A raw byte builder, for files the writer would refuse to make ==== */

typedef struct bb { uint8_t *p; size_t n, cap; } bb;

static void bb_put(bb *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void bb_u8(bb *b, uint8_t v) { bb_put(b, &v, 1); }
static void bb_u32(bb *b, uint32_t v) { uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) }; bb_put(b, x, 4); }
static void bb_u64(bb *b, uint64_t v) { bb_u32(b, (uint32_t)v); bb_u32(b, (uint32_t)(v >> 32)); }
static void bb_str(bb *b, const char *s) { bb_u64(b, strlen(s)); bb_put(b, s, strlen(s)); }
static void bb_hdr(bb *b, uint32_t ver, uint64_t nt, uint64_t nkv) { bb_put(b, "GGUF", 4); bb_u32(b, ver); bb_u64(b, nt); bb_u64(b, nkv); }
static void bb_pad(bb *b, size_t a) { while (b->n % a) bb_u8(b, 0); }
/* a tensor info record */
static void bb_ti(bb *b, const char *name, uint32_t nd, const uint64_t *ne, uint32_t type, uint64_t off) {
    bb_str(b, name);
    bb_u32(b, nd);
    for (uint32_t i = 0; i < nd; i++) bb_u64(b, ne[i]);
    bb_u32(b, type);
    bb_u64(b, off);
}

/* counting allocator: peak bytes live, for the "no allocation larger than the file" rule */
typedef struct cnt { size_t live, peak, biggest; long n_alloc, fail_at; } cnt;
static void *cnt_alloc(void *ud, void *ptr, size_t old, size_t nsz) {
    cnt *c = ud;
    if (nsz == 0) { free(ptr); c->live -= old; return NULL; }
    if (c->fail_at && ++c->n_alloc == c->fail_at) return NULL;
    void *p = realloc(ptr, nsz);
    if (!p) return NULL;
    c->live += nsz - old;
    if (c->live > c->peak) c->peak = c->live;
    if (nsz > c->biggest) c->biggest = nsz;
    return p;
}

/* parses buf; expects failure with msg containing want (or success when want is NULL) */
static void expect(const char *label, const void *buf, size_t n, const char *want) {
    cnt c = {0};
    gguf_alloc al = { cnt_alloc, &c };
    char err[512] = "";
    gguf_file *f = NULL;
    g4_status st = gguf_open_mem(&f, buf, n, "t.gguf", &al, err, sizeof err);
    if (want) {
        T_CHECKF(st != G4_OK && f == NULL, "%s: accepted, expected error containing '%s'", label, want);
        T_CHECKF(strstr(err, want) != NULL, "%s: error '%s' lacks '%s'", label, err, want);
        T_CHECKF(strncmp(err, "t.gguf: ", 8) == 0, "%s: error '%s' does not name the file", label, err);
    } else {
        T_CHECKF(st == G4_OK, "%s: refused: %s", label, err);
    }
    gguf_close(f);
    T_CHECKF(c.live == 0, "%s: %zu bytes leaked", label, c.live);
    T_CHECKF(c.peak <= n + (8u << 20), "%s: peak allocation %zu for a %zu-byte file", label, c.peak, n);
}

static void expect_bb(const char *label, bb *b, const char *want) {
    expect(label, b->p, b->n, want);
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ==== §3A container cases ==== */

T_GROUP(gguf_hostile) {
    bb b = {0};
    /* #1 empty and short files */
    expect("empty", "", 0, "file is empty");
    expect("3 bytes", "GGU", 3, "truncated in the header");
    expect("magic only", "GGUF", 4, "truncated in the header");
    bb_put(&b, "GGUF", 4); bb_u32(&b, 3); expect_bb("magic+version", &b, "truncated in the header");
    /* #2 bad magic */
    bb_put(&b, "FUGG", 4); bb_u32(&b, 3); bb_u64(&b, 0); bb_u64(&b, 0); expect_bb("FUGG", &b, "not a GGUF file: magic is 46 55 47 47");
    bb_put(&b, "lmgg", 4); bb_u32(&b, 1); bb_u64(&b, 0); bb_u64(&b, 0); expect_bb("ggml magic", &b, "old GGML");
    /* #3 versions */
    bb_hdr(&b, 0, 0, 0); expect_bb("version 0", &b, "unsupported GGUF version 0");
    bb_hdr(&b, 1, 0, 0); expect_bb("version 1", &b, "GGUF v1 is not supported");
    bb_hdr(&b, 4, 0, 0); expect_bb("version 4", &b, "unsupported GGUF version 4");
    bb_hdr(&b, 0x03000000u, 0, 0); expect_bb("big-endian", &b, "big-endian");
    /* valid minimal files must load: zero KVs and tensors, v2 and v3 */
    bb_hdr(&b, 3, 0, 0); expect_bb("empty v3", &b, NULL);
    bb_hdr(&b, 2, 0, 0); expect_bb("empty v2", &b, NULL);
    /* #5 / #6 huge counts */
    bb_hdr(&b, 3, UINT64_MAX, 0); expect_bb("n_tensors max", &b, "tensors: more than the limit");
    bb_hdr(&b, 3, 1ull << 63, 0); expect_bb("n_tensors 2^63", &b, "tensors: more than the limit");
    bb_hdr(&b, 3, 100, 0); expect_bb("n_tensors > bytes", &b, "header declares 100 tensors");
    bb_hdr(&b, 3, 0, UINT64_MAX); expect_bb("n_kv max", &b, "metadata records");
    bb_hdr(&b, 3, 0, 1000); expect_bb("n_kv > bytes", &b, "header declares 1000 metadata records");
    /* #7 keys */
    bb_hdr(&b, 3, 0, 1); bb_u64(&b, UINT64_MAX); bb_put(&b, "xxxxxxxxxxxxxxxx", 16); expect_bb("key len max", &b, "exceeds the limit");
    bb_hdr(&b, 3, 0, 1); bb_u64(&b, 70000); bb_put(&b, "xxxxxxxxxxxxxxxx", 16); expect_bb("key len 70000", &b, "exceeds the limit of 65535");
    bb_hdr(&b, 3, 0, 1); bb_u64(&b, 500); bb_put(&b, "xxxxxxxxxxxxxxxx", 16); expect_bb("key past end", &b, "beyond the end of the file");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, ""); bb_u32(&b, GGUF_UINT8); bb_u8(&b, 1); bb_put(&b, "xxxx", 4); expect_bb("empty key", &b, "empty key");
    bb_hdr(&b, 3, 0, 1); bb_u64(&b, 3); bb_put(&b, "a\0b", 3); bb_u32(&b, GGUF_UINT8); bb_u8(&b, 1); bb_put(&b, "xxxx", 4);
    expect_bb("NUL in key", &b, "contains byte 0x00");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k\xc3\xa9y"); bb_u32(&b, GGUF_UINT8); bb_u8(&b, 1); bb_put(&b, "xxxx", 4);
    expect_bb("non-ASCII key", &b, "contains byte 0xc3");
    /* #8 duplicate key */
    bb_hdr(&b, 3, 0, 2); bb_str(&b, "a.b"); bb_u32(&b, GGUF_UINT8); bb_u8(&b, 1); bb_str(&b, "a.b"); bb_u32(&b, GGUF_UINT8); bb_u8(&b, 2);
    expect_bb("duplicate key", &b, "duplicate key 'a.b'");
    /* #9 unknown value / element types */
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, 13); bb_put(&b, "xxxxxxxxxxxx", 12); expect_bb("type 13", &b, "unknown value type 13");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, 0xffffffffu); bb_put(&b, "xxxxxxxxxxxx", 12); expect_bb("type -1", &b, "unknown value type 4294967295");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, GGUF_ARRAY); bb_u32(&b, 77); bb_u64(&b, 1); bb_put(&b, "xxxxxxxx", 8);
    expect_bb("elem type 77", &b, "unknown array element type 77");
    /* #10 strings */
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, GGUF_STRING); bb_u64(&b, 1000); bb_put(&b, "abc", 3);
    expect_bb("string past end", &b, "beyond the end of the file");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, GGUF_STRING); bb_u64(&b, 17u << 20); bb_put(&b, "abc", 3);
    expect_bb("string over cap", &b, "exceeds the limit");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, GGUF_STRING); bb_u64(&b, UINT64_MAX); bb_put(&b, "abc", 3);
    expect_bb("string len max", &b, "exceeds the limit");
    /* #11 arrays */
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, GGUF_ARRAY); bb_u32(&b, GGUF_UINT8); bb_u64(&b, 1ull << 63);
    expect_bb("array 2^63", &b, "exceeds the limit");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, GGUF_ARRAY); bb_u32(&b, GGUF_UINT64); bb_u64(&b, 1u << 29); bb_put(&b, "xxxxxxxx", 8);
    expect_bb("array n*8 > left", &b, "beyond the end of the file");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, GGUF_ARRAY); bb_u32(&b, GGUF_STRING); bb_u64(&b, 1000); bb_put(&b, "xxxxxxxx", 8);
    expect_bb("string array n*8 > left", &b, "needs at least");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, GGUF_ARRAY); bb_u32(&b, GGUF_STRING); bb_u64(&b, 2); bb_str(&b, "ok");
    bb_u64(&b, 99); bb_put(&b, "xxxxxxxx", 8);
    expect_bb("string in array past end", &b, "key 'k': string 1: length 99 is beyond the end");
    /* #12 nested arrays */
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "k"); bb_u32(&b, GGUF_ARRAY); bb_u32(&b, GGUF_ARRAY); bb_u64(&b, 1); bb_u32(&b, GGUF_UINT8);
    bb_u64(&b, 1); bb_u8(&b, 1);
    expect_bb("nested array", &b, "nested arrays are not supported");
    /* #14 alignment */
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "general.alignment"); bb_u32(&b, GGUF_UINT64); bb_u64(&b, 32);
    expect_bb("alignment u64", &b, "'general.alignment' has type u64, expected u32");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "general.alignment"); bb_u32(&b, GGUF_UINT32); bb_u32(&b, 0);
    expect_bb("alignment 0", &b, "must be a power of two");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "general.alignment"); bb_u32(&b, GGUF_UINT32); bb_u32(&b, 13);
    expect_bb("alignment 13", &b, "must be a power of two");
    bb_hdr(&b, 3, 0, 1); bb_str(&b, "general.alignment"); bb_u32(&b, GGUF_UINT32); bb_u32(&b, 1u << 30);
    expect_bb("alignment 2^30", &b, "must be a power of two from 1 to 1048576");

    /* tensor infos: one F32 tensor [8] unless stated; data follows padded to 32 */
    const uint64_t ne8[1] = { 8 };
    /* #15 names */
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "", 1, ne8, 0, 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("empty tensor name", &b, "empty name");
    char long_name[80];
    memset(long_name, 'a', 64);
    long_name[64] = 0;
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, long_name, 1, ne8, 0, 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("64-byte tensor name", &b, "the limit is 63");
    bb_hdr(&b, 3, 1, 0); bb_u64(&b, 3); bb_put(&b, "a\0b", 3); bb_u32(&b, 1); bb_u64(&b, 8); bb_u32(&b, 0); bb_u64(&b, 0);
    bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("NUL in tensor name", &b, "contains byte 0x00");
    bb_hdr(&b, 3, 1, 0); bb_u64(&b, 5000); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 58);
    expect_bb("tensor name past end", &b, "beyond the end of the file");
    /* #16 duplicate tensor names */
    bb_hdr(&b, 3, 2, 0); bb_ti(&b, "w", 1, ne8, 0, 0); bb_ti(&b, "w", 1, ne8, 0, 32); bb_pad(&b, 32);
    for (int i = 0; i < 64; i++) bb_u8(&b, 0);
    expect_bb("duplicate tensor", &b, "duplicate tensor name 'w'");
    /* #17 n_dims */
    const uint32_t bad_nd[] = { 0, 5, 255, UINT32_MAX };
    for (int k = 0; k < 4; k++) {
        bb_hdr(&b, 3, 1, 0); bb_str(&b, "w"); bb_u32(&b, bad_nd[k]);
        for (int i = 0; i < 48; i++) bb_u8(&b, 1);
        expect_bb("n_dims", &b, "dimensions, expected 1 to 4");
    }
    /* #18 zero / negative dims */
    const uint64_t z2[2] = { 8, 0 }, neg[2] = { 8, (uint64_t)-5 };
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "w", 2, z2, 0, 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("zero dim", &b, "dimension 1 is 0, must be positive");
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "w", 2, neg, 0, 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("negative dim", &b, "dimension 1 is -5, must be positive");
    /* #19 element-count overflow */
    const uint64_t big[3] = { 1ull << 32, 1ull << 32, 4 };
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "w", 3, big, 0, 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("element overflow", &b, "element count overflows");
    /* #20 unknown / removed type ids */
    const uint32_t bad_types[] = { 4, 5, 31, 36, 43, 1000 };
    for (int k = 0; k < 6; k++) {
        bb_hdr(&b, 3, 1, 0); bb_ti(&b, "w", 1, ne8, bad_types[k], 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
        expect_bb("bad type", &b, "unknown or removed type id");
    }
    /* #21 row length vs block size */
    const uint64_t q6[2] = { 8, 64 }, q4k[1] = { 32 };
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "w", 2, q6, G4_TYPE_Q6_K, 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("q6_K [8,64]", &b, "row length 8 is not a multiple of the q6_K block size 256");
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "w", 1, q4k, G4_TYPE_Q4_K, 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("q4_K [32]", &b, "not a multiple of the q4_K block size 256");
    /* #22 byte size not representable */
    const uint64_t huge[2] = { 1ull << 31, 1ull << 31 };
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "w", 2, huge, 0, 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("bytes overflow", &b, "byte size is not representable");
    /* #23 unaligned offset */
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "blk.3.ffn_up.weight", 1, ne8, 0, 123); bb_pad(&b, 32); for (int i = 0; i < 200; i++) bb_u8(&b, 0);
    expect_bb("unaligned", &b, "tensor 'blk.3.ffn_up.weight': offset 123 is not aligned to 32");
    /* #24 gaps, overlaps, order */
    bb_hdr(&b, 3, 2, 0); bb_ti(&b, "a", 1, ne8, 0, 0); bb_ti(&b, "b", 1, ne8, 0, 64); bb_pad(&b, 32); for (int i = 0; i < 128; i++) bb_u8(&b, 0);
    expect_bb("gap", &b, "tensor 'b': offset 64, expected 32");
    bb_hdr(&b, 3, 2, 0); bb_ti(&b, "a", 1, ne8, 0, 0); bb_ti(&b, "b", 1, ne8, 0, 0); bb_pad(&b, 32); for (int i = 0; i < 64; i++) bb_u8(&b, 0);
    expect_bb("overlap", &b, "tensor 'b': offset 0, expected 32");
    bb_hdr(&b, 3, 2, 0); bb_ti(&b, "a", 1, ne8, 0, 32); bb_ti(&b, "b", 1, ne8, 0, 0); bb_pad(&b, 32); for (int i = 0; i < 64; i++) bb_u8(&b, 0);
    expect_bb("out of order", &b, "tensor 'a': offset 32, expected 0");
    /* #25 running sum: the huge tensor is refused (it cannot lie inside the file) */
    const uint64_t h2[1] = { 1ull << 60 };
    bb_hdr(&b, 3, 2, 0); bb_ti(&b, "a", 1, h2, G4_TYPE_I8, 0); bb_ti(&b, "b", 1, h2, G4_TYPE_I8, 1ull << 60); bb_pad(&b, 32);
    for (int i = 0; i < 64; i++) bb_u8(&b, 0);
    expect_bb("sum overflow", &b, "file incomplete");
    /* #27 data past EOF */
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "w", 1, ne8, 0, 0);
    expect_bb("no data section", &b, "the data section starts at offset 64, file has 57 bytes");
    bb_hdr(&b, 3, 1, 0); bb_ti(&b, "w", 1, ne8, 0, 0); bb_pad(&b, 32); bb_put(&b, "xxxxxxxxxxxxxxx", 15);
    expect_bb("short data", &b, "file incomplete: tensor 'w'");
    /* a custom alignment must still load; data exactly at EOF (unpadded end) is fine */
    bb_hdr(&b, 3, 1, 1); bb_str(&b, "general.alignment"); bb_u32(&b, GGUF_UINT32); bb_u32(&b, 64);
    bb_ti(&b, "w", 1, ne8, 0, 0); bb_pad(&b, 64); bb_put(&b, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 32);
    expect_bb("alignment 64", &b, NULL);
}

/* #13 BOOL bytes are normalised; typed accessors check exact types */
T_GROUP(gguf_accessors) {
    bb b = {0};
    bb_hdr(&b, 3, 0, 6);
    bb_str(&b, "b"); bb_u32(&b, GGUF_BOOL); bb_u8(&b, 2);
    bb_str(&b, "u"); bb_u32(&b, GGUF_UINT32); bb_u32(&b, 7);
    bb_str(&b, "i"); bb_u32(&b, GGUF_INT32); bb_u32(&b, (uint32_t)-3);
    bb_str(&b, "s"); bb_u32(&b, GGUF_STRING); bb_str(&b, "hi");
    bb_str(&b, "ab"); bb_u32(&b, GGUF_ARRAY); bb_u32(&b, GGUF_BOOL); bb_u64(&b, 3); bb_u8(&b, 0); bb_u8(&b, 9); bb_u8(&b, 1);
    bb_str(&b, "ai"); bb_u32(&b, GGUF_ARRAY); bb_u32(&b, GGUF_INT32); bb_u64(&b, 2); bb_u32(&b, 5); bb_u32(&b, (uint32_t)-1);
    char err[256];
    gguf_file *f;
    T_CHECK(gguf_open_mem(&f, b.p, b.n, "a.gguf", NULL, err, sizeof err) == G4_OK);
    if (!f) { free(b.p); return; }
    int v = 0, found = 0;
    T_CHECK(gguf_get_bool(f, "b", 1, &v, &found, err, sizeof err) == G4_OK && v == 1 && found);
    const gguf_kv *ab = gguf_find(f, "ab");
    T_CHECK(ab && ((const uint8_t *)ab->arr)[1] == 1);
    uint32_t u = 0;
    T_CHECK(gguf_get_u32(f, "u", 1, &u, NULL, err, sizeof err) == G4_OK && u == 7);
    T_CHECK(gguf_get_u32(f, "i", 1, &u, NULL, err, sizeof err) == G4_ERR_FORMAT);
    T_CHECKF(strstr(err, "key 'i' has type i32, expected u32") != NULL, "%s", err);
    T_CHECK(gguf_get_u32(f, "missing", 1, &u, NULL, err, sizeof err) == G4_ERR_FORMAT && strstr(err, "missing required key 'missing'"));
    u = 42;
    T_CHECK(gguf_get_u32(f, "missing", 0, &u, &found, err, sizeof err) == G4_OK && u == 42 && !found);
    const char *s;
    uint64_t sl;
    T_CHECK(gguf_get_str(f, "s", 1, &s, &sl, NULL, err, sizeof err) == G4_OK && sl == 2 && !strcmp(s, "hi"));
    T_CHECK(gguf_get_str(f, "ab", 1, &s, &sl, NULL, err, sizeof err) == G4_ERR_FORMAT && strstr(err, "array of bool"));
    uint32_t per[2];
    T_CHECK(gguf_get_u32_or_arr(f, "ai", 1, 2, per, NULL, err, sizeof err) == G4_ERR_FORMAT && strstr(err, "must not be negative"));
    T_CHECK(gguf_get_u32_or_arr(f, "ai", 1, 3, per, NULL, err, sizeof err) == G4_ERR_FORMAT && strstr(err, "has 2 entries, expected 3"));
    T_CHECK(gguf_get_u32_or_arr(f, "u", 1, 2, per, NULL, err, sizeof err) == G4_OK && per[0] == 7 && per[1] == 7);
    const gguf_kv *kv;
    T_CHECK(gguf_get_arr(f, "ai", 1, 1u << GGUF_UINT32, &kv, NULL, err, sizeof err) == G4_ERR_FORMAT && strstr(err, "expected an array of u32"));
    gguf_close(f);
    free(b.p);
}

/* a valid file with KVs of every type and tensors of several types, from our writer */
static void *make_valid(size_t *len) {
    gguf_writer *w = gguf_writer_new();
    gguf_w_u8(w, "t.u8", 200); gguf_w_i8(w, "t.i8", -100); gguf_w_u16(w, "t.u16", 60000); gguf_w_i16(w, "t.i16", -30000);
    gguf_w_u32(w, "t.u32", 4000000000u); gguf_w_i32(w, "t.i32", -2000000000); gguf_w_f32(w, "t.f32", 1.5f);
    gguf_w_bool(w, "t.bool", 1); gguf_w_u64(w, "t.u64", 1ull << 40); gguf_w_i64(w, "t.i64", -(1ll << 40));
    gguf_w_f64(w, "t.f64", 0.25); gguf_w_str(w, "t.str", "h\xc3\xa9llo", 6);
    const int32_t ai[3] = { 1, -2, 3 };
    gguf_w_arr(w, "t.arr_i32", GGUF_INT32, ai, 3);
    const char *ss[3] = { "a", "", "\xe2\x96\x81the" };
    gguf_w_arr_str(w, "t.arr_str", ss, NULL, 3);
    static float f32d[16];
    static uint16_t f16d[64];
    static uint8_t q8d[34 * 4];
    for (int i = 0; i < 16; i++) f32d[i] = (float)i * 0.5f;
    for (int i = 0; i < 64; i++) f16d[i] = g4_f32_to_f16((float)i);
    for (int i = 0; i < (int)sizeof q8d; i++) q8d[i] = (uint8_t)(i * 7);
    int64_t ne1[1] = { 16 }, ne2[2] = { 32, 2 }, ne3[2] = { 64, 2 };
    gguf_w_tensor(w, "a.f32", G4_TYPE_F32, 1, ne1, f32d);
    gguf_w_tensor(w, "b.f16", G4_TYPE_F16, 2, ne2, f16d);
    gguf_w_tensor(w, "c.q8_0", G4_TYPE_Q8_0, 2, ne3, q8d);
    void *buf;
    char err[256];
    g4_status st = gguf_writer_write_mem(w, &buf, len, NULL, NULL, err, sizeof err);
    gguf_writer_free(w);
    return st == G4_OK ? buf : NULL;
}

T_GROUP(gguf_roundtrip) {
    size_t n;
    uint8_t *buf = make_valid(&n);
    T_CHECK(buf != NULL);
    if (!buf) return;
    char err[256];
    gguf_file *f;
    T_CHECKF(gguf_open_mem(&f, buf, n, "v.gguf", NULL, err, sizeof err) == G4_OK, "%s", err);
    if (f) {
        T_CHECK(gguf_version(f) == 3 && gguf_n_kv(f) == 14 && gguf_n_tensors(f) == 3 && gguf_alignment(f) == 32);
        const gguf_kv *kv;
        T_CHECK((kv = gguf_find(f, "t.u8")) && kv->type == GGUF_UINT8 && kv->v.u8 == 200);
        T_CHECK((kv = gguf_find(f, "t.i8")) && kv->v.i8 == -100);
        T_CHECK((kv = gguf_find(f, "t.u16")) && kv->v.u16 == 60000);
        T_CHECK((kv = gguf_find(f, "t.i16")) && kv->v.i16 == -30000);
        T_CHECK((kv = gguf_find(f, "t.u32")) && kv->v.u32 == 4000000000u);
        T_CHECK((kv = gguf_find(f, "t.i32")) && kv->v.i32 == -2000000000);
        T_CHECK((kv = gguf_find(f, "t.f32")) && kv->v.f32 == 1.5f);
        T_CHECK((kv = gguf_find(f, "t.bool")) && kv->v.b == 1);
        T_CHECK((kv = gguf_find(f, "t.u64")) && kv->v.u64 == 1ull << 40);
        T_CHECK((kv = gguf_find(f, "t.i64")) && kv->v.i64 == -(1ll << 40));
        T_CHECK((kv = gguf_find(f, "t.f64")) && kv->v.f64 == 0.25);
        T_CHECK((kv = gguf_find(f, "t.str")) && kv->str_len == 6 && !memcmp(kv->str, "h\xc3\xa9llo", 6));
        T_CHECK((kv = gguf_find(f, "t.arr_i32")) && kv->n == 3 && ((const int32_t *)kv->arr)[1] == -2);
        uint64_t l;
        T_CHECK((kv = gguf_find(f, "t.arr_str")) && kv->n == 3 && !strcmp(gguf_arr_str(kv, 2, &l), "\xe2\x96\x81the") && l == 6);
        T_CHECK(kv && gguf_arr_str(kv, 1, &l)[0] == 0 && l == 0);
        const gguf_tensor *t = gguf_find_tensor(f, "c.q8_0");
        T_CHECK(t && t->type == G4_TYPE_Q8_0 && t->ne[0] == 64 && t->ne[1] == 2 && t->nbytes == 136 && t->offset == 64 + 128);
        T_CHECK(t && t->data[5] == 35);
        t = gguf_find_tensor(f, "a.f32");
        float x;
        if (t) memcpy(&x, t->data + 4 * 3, 4);
        T_CHECK(t && t->n_dims == 1 && x == 1.5f && ((uintptr_t)(t->data - buf)) % 32 == 0);
        /* writer determinism and copy_kv: re-serialise everything, get identical bytes */
        gguf_writer *w = gguf_writer_new();
        for (size_t i = 0; i < gguf_n_kv(f); i++) gguf_w_copy_kv(w, gguf_kv_at(f, i));
        for (size_t i = 0; i < gguf_n_tensors(f); i++) {
            const gguf_tensor *ti = gguf_tensor_at(f, i);
            gguf_w_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne, ti->data);
        }
        void *b2;
        size_t n2;
        T_CHECK(gguf_writer_write_mem(w, &b2, &n2, NULL, NULL, err, sizeof err) == G4_OK);
        T_CHECK(n2 == n && memcmp(b2, buf, n) == 0);
        free(b2);
        gguf_writer_free(w);
        gguf_close(f);
    }
    /* the writer refuses what the reader would refuse */
    gguf_writer *w = gguf_writer_new();
    gguf_w_u32(w, "k", 1);
    gguf_w_u32(w, "k", 2);
    void *b3;
    size_t n3;
    T_CHECK(gguf_writer_write_mem(w, &b3, &n3, NULL, NULL, err, sizeof err) == G4_ERR_ARG && strstr(err, "duplicate key 'k'"));
    gguf_writer_free(w);
    w = gguf_writer_new();
    int64_t bad[1] = { 100 };
    gguf_w_tensor(w, "q", G4_TYPE_Q4_0, 1, bad, NULL);
    T_CHECK(gguf_writer_write_mem(w, &b3, &n3, NULL, NULL, err, sizeof err) == G4_ERR_ARG && strstr(err, "block size"));
    gguf_writer_free(w);
    free(buf);
}

/* §5.2: every prefix of a valid file is refused with a truncation message; allocation-failure
 * sweep: failing the Nth allocation gives G4_ERR_NOMEM and leaks nothing */
T_GROUP(gguf_truncate) {
    size_t n;
    uint8_t *buf = make_valid(&n);
    if (!buf) { T_CHECK(0); return; }
    /* the file may end right after the last tensor's bytes (its padding is optional) */
    size_t need = n;
    {
        gguf_file *f;
        char err[256];
        if (gguf_open_mem(&f, buf, n, "v.gguf", NULL, err, sizeof err) == G4_OK) {
            const gguf_tensor *t = gguf_tensor_at(f, gguf_n_tensors(f) - 1);
            need = (size_t)(gguf_data_offset(f) + t->offset + t->nbytes);
            gguf_close(f);
        }
        T_CHECK(need < n);
    }
    long bad = 0;
    for (size_t k = 0; k < need; k++) {
        cnt c = {0};
        gguf_alloc al = { cnt_alloc, &c };
        char err[512] = "";
        gguf_file *f = NULL;
        uint8_t *cut = malloc(k ? k : 1); /* exact-size copy: ASan sees any over-read */
        memcpy(cut, buf, k);
        g4_status st = gguf_open_mem(&f, cut, k, "cut.gguf", &al, err, sizeof err);
        int ok = st == G4_ERR_FORMAT && !f && c.live == 0 &&
                 (strstr(err, "truncated") || strstr(err, "beyond the end") || strstr(err, "incomplete") ||
                  strstr(err, "is empty") || strstr(err, "needs at least") || strstr(err, "can hold"));
        if (!ok && bad++ < 5) fprintf(stderr, "    prefix %zu: st %d: %s\n", k, st, err);
        gguf_close(f);
        free(cut);
    }
    T_CHECKF(bad == 0, "%ld of %zu prefixes not refused cleanly", bad, need);
    /* allocation failures */
    long fails = 0;
    for (long at = 1; at < 100; at++) {
        cnt c = { .fail_at = at };
        gguf_alloc al = { cnt_alloc, &c };
        char err[256];
        gguf_file *f = NULL;
        g4_status st = gguf_open_mem(&f, buf, n, "m.gguf", &al, err, sizeof err);
        if (st == G4_OK) { gguf_close(f); T_CHECK(c.live == 0); break; }
        fails++;
        T_CHECKF(st == G4_ERR_NOMEM && c.live == 0, "fail at %ld: st %d live %zu: %s", at, st, c.live, err);
    }
    T_CHECK(fails >= 1);
    free(buf);
}

/* §3A #4 and the file path: not-regular files, mapped and read modes */
T_GROUP(gguf_files) {
    char err[512];
    gguf_file *f;
    T_CHECK(gguf_open(&f, "/", 0, NULL, err, sizeof err) == G4_ERR_IO && strstr(err, "not a regular file (a directory)"));
    T_CHECK(gguf_open(&f, "/dev/zero", 0, NULL, err, sizeof err) == G4_ERR_IO && strstr(err, "character device"));
    T_CHECK(gguf_open(&f, "/nonexistent/x.gguf", 0, NULL, err, sizeof err) == G4_ERR_IO && strstr(err, "cannot open"));
    char dir[] = "/tmp/g4testXXXXXX";
    if (!mkdtemp(dir)) { T_CHECK(0); return; }
    char fifo[64], path[64];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(path, sizeof path, "%s/v.gguf", dir);
    if (mkfifo(fifo, 0600) == 0) {
        T_CHECK(gguf_open(&f, fifo, 0, NULL, err, sizeof err) == G4_ERR_IO && strstr(err, "a FIFO"));
        unlink(fifo);
    }
    size_t n;
    void *buf = make_valid(&n);
    FILE *fp = fopen(path, "wb");
    if (fp && buf) {
        fwrite(buf, 1, n, fp);
        fclose(fp);
        for (int mode = 0; mode < 2; mode++) {
            T_CHECKF(gguf_open(&f, path, mode, NULL, err, sizeof err) == G4_OK, "%s", err);
            if (f) {
                T_CHECK(gguf_file_size(f) == n && gguf_n_tensors(f) == 3);
                gguf_close(f);
            }
        }
        /* empty file */
        fp = fopen(path, "wb");
        if (fp) fclose(fp);
        T_CHECK(gguf_open(&f, path, 0, NULL, err, sizeof err) == G4_ERR_FORMAT && strstr(err, "file is empty"));
    }
    free(buf);
    unlink(path);
    rmdir(dir);
}
