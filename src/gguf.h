/* gguf.h - GGUF v2/v3 reader (bounds-checked, over a mapping or a memory buffer) and writer.
 *
 * Reader: every count, length, size and offset from the file is checked against the bytes
 * that remain and for overflow before it is used (shared/docs/gguf-format.md §8, the
 * container part of reliability.md §3A). All metadata is copied out of the file during the
 * parse; tensor infos keep pointers into the mapped data only. Errors name the file, the
 * key or tensor, the rule and the byte offset:
 *   "m.gguf: tensor 'blk.3.ffn_up.weight': offset 123 is not aligned to 32"
 *
 * Memory: one arena for all metadata, bounded by the metadata bytes in the file plus a
 * small per-record overhead (counts are capped: GGUF_MAX_KV, GGUF_MAX_TENSORS).
 *
 * Writer: deterministic GGUF v3 files (same inputs => same bytes), alignment 32 unless set.
 */
#ifndef G4_GGUF_H
#define G4_GGUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "g4.h"

typedef enum gguf_vtype {
    GGUF_UINT8 = 0, GGUF_INT8 = 1, GGUF_UINT16 = 2, GGUF_INT16 = 3, GGUF_UINT32 = 4,
    GGUF_INT32 = 5, GGUF_FLOAT32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9,
    GGUF_UINT64 = 10, GGUF_INT64 = 11, GGUF_FLOAT64 = 12, GGUF_VTYPE_COUNT = 13
} gguf_vtype;

#define GGUF_MAX_KV        16384u      /* real Gemma 4 files hold ~40-60 keys */
#define GGUF_MAX_TENSORS   16384u      /* E2B has 601 tensors; multimodal files ~2000 */
#define GGUF_MAX_DIMS      4
#define GGUF_MAX_NAME      63          /* tensor name bytes (ggml: < 64 with the NUL) */
#define GGUF_MAX_KEY       65535u      /* key bytes (spec) */
#define GGUF_MAX_STR       (16u << 20) /* one string value, except whitelisted keys */
#define GGUF_MAX_ARRAY     (1u << 30)  /* array elements */
#define GGUF_MAX_META      (512u << 20) /* all metadata bytes */
#define GGUF_MAX_ALIGN     (1u << 20)
#define GGUF_DEFAULT_ALIGN 32u

/* A metadata value. Scalars live in .v; arrays and strings in arena memory. */
typedef struct gguf_kv {
    const char *key;      /* NUL-terminated copy (keys never contain NUL: checked) */
    uint32_t    key_len;
    uint32_t    type;     /* gguf_vtype */
    uint32_t    arr_type; /* element type when type == GGUF_ARRAY */
    uint64_t    n;        /* array elements (1 for scalars) */
    union {
        uint64_t u64; int64_t i64; double f64; float f32;
        uint32_t u32; int32_t i32; uint16_t u16; int16_t i16; uint8_t u8; int8_t i8; uint8_t b;
    } v;                  /* scalar value (BOOL normalised to 0/1) */
    const char     *str;  /* GGUF_STRING: NUL-terminated copy (may contain NUL bytes: use str_len) */
    uint64_t        str_len;
    const void     *arr;  /* fixed-size arrays: n packed little-endian elements (copied, aligned 8) */
    const char     *sblob;/* string arrays: all strings, each followed by a NUL */
    const uint32_t *soff; /* string arrays: [n+1] offsets into sblob; string i is
                           * sblob[soff[i] .. soff[i+1]-1) (length soff[i+1]-soff[i]-1) */
    uint64_t    offset;   /* file offset of the record (for messages) */
} gguf_kv;

typedef struct gguf_tensor {
    char           name[GGUF_MAX_NAME + 1];
    uint32_t       n_dims;
    int64_t        ne[GGUF_MAX_DIMS]; /* missing dims are 1 */
    uint32_t       type;              /* ggml type id, known to quant_traits() */
    uint64_t       offset;            /* relative to the data section */
    uint64_t       nbytes;
    const uint8_t *data;              /* into the mapping / buffer */
    uint64_t       info_offset;       /* file offset of the tensor-info record */
} gguf_tensor;

typedef struct gguf_file gguf_file;

typedef struct gguf_alloc {           /* allocator hook (see g4_alloc_fn); NULL fn = libc */
    g4_alloc_fn fn;
    void       *ud;
} gguf_alloc;

/* Opens and parses a file (mmap read-only unless no_mmap, then read into memory).
 * name_for_errors: what to call the file in messages (NULL = path). */
g4_status gguf_open(gguf_file **out, const char *path, int no_mmap, const gguf_alloc *al,
                    char *err, size_t errlen);
/* Parses a buffer in place (not copied; must outlive the gguf_file). */
g4_status gguf_open_mem(gguf_file **out, const void *buf, size_t len, const char *name,
                        const gguf_alloc *al, char *err, size_t errlen);
void      gguf_close(gguf_file *f); /* NULL-safe */
/* The file's bytes [p, p + n) will not be read again (model.c's repacked copies): where the
 * file is mapped, its whole pages in that range leave the process's resident set (a later read
 * would fault them in again from the file). No effect on a read or a caller's buffer. */
void      gguf_drop_pages(const gguf_file *f, const void *p, size_t n);
/* The file's bytes [p, p + n) are about to be read once, in order: where the file is mapped,
 * their pages are mapped in one call (MADV_POPULATE_READ where the kernel has it) rather than
 * fault by fault. Advisory. */
void      gguf_will_read(const gguf_file *f, const void *p, size_t n);
/* 1 when the file is mapped (not read into memory, not a caller's buffer) and [p, p + n) lies
 * in the mapping */
int       gguf_mapped_range(const gguf_file *f, const void *p, size_t n);

const char        *gguf_name(const gguf_file *f);     /* file name used in messages */
uint32_t           gguf_version(const gguf_file *f);
uint32_t           gguf_alignment(const gguf_file *f);
uint64_t           gguf_file_size(const gguf_file *f);
uint64_t           gguf_data_offset(const gguf_file *f); /* file offset of the data section */
size_t             gguf_n_kv(const gguf_file *f);
const gguf_kv     *gguf_kv_at(const gguf_file *f, size_t i);
const gguf_kv     *gguf_find(const gguf_file *f, const char *key);  /* NULL if absent */
size_t             gguf_n_tensors(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name); /* NULL if absent */
size_t             gguf_meta_bytes(const gguf_file *f);  /* arena bytes used by metadata */

/* String i of a string array (length in *len). i must be < kv->n. */
static inline const char *gguf_arr_str(const gguf_kv *kv, uint64_t i, uint64_t *len) {
    if (len) *len = kv->soff[i + 1] - kv->soff[i] - 1;
    return kv->sblob + kv->soff[i];
}
const char *gguf_vtype_name(uint32_t t); /* "u32", "string", "array", ... or "invalid" */
size_t      gguf_vtype_size(uint32_t t); /* bytes of a fixed-size element, 0 for string/array */

/* ==== Typed accessors ====
 * Each returns G4_OK and the value, or G4_ERR_FORMAT with a message naming the file, the key,
 * the expected and the actual type. When the key is absent: G4_ERR_FORMAT "missing" if
 * required, else G4_OK with *out untouched (the caller's default stands) and *found = 0.
 * found may be NULL. Exact types, as llama.cpp's getters (gguf-format.md §4). */
g4_status gguf_get_u32(const gguf_file *f, const char *key, int required, uint32_t *out,
                       int *found, char *err, size_t errlen);
g4_status gguf_get_i32(const gguf_file *f, const char *key, int required, int32_t *out,
                       int *found, char *err, size_t errlen);
g4_status gguf_get_f32(const gguf_file *f, const char *key, int required, float *out,
                       int *found, char *err, size_t errlen);
g4_status gguf_get_bool(const gguf_file *f, const char *key, int required, int *out,
                        int *found, char *err, size_t errlen);
g4_status gguf_get_str(const gguf_file *f, const char *key, int required, const char **out,
                       uint64_t *len, int *found, char *err, size_t errlen);
/* Array of the given element type (any of several allowed: pass a bitmask of 1u << vtype). */
g4_status gguf_get_arr(const gguf_file *f, const char *key, int required, uint32_t elem_mask,
                       const gguf_kv **out, int *found, char *err, size_t errlen);
/* A u32 scalar or a per-layer array (u32 or i32 elements) of exactly n entries, into out[n].
 * A scalar fills all n. Negative array entries are an error. */
g4_status gguf_get_u32_or_arr(const gguf_file *f, const char *key, int required, uint32_t n,
                              uint32_t *out, int *found, char *err, size_t errlen);

/* ==== Writer ==== */

typedef struct gguf_writer gguf_writer;

/* Fills dst[nbytes] with the data of tensor idx when no data pointer was given. */
typedef int (*gguf_fill_fn)(void *ud, size_t idx, void *dst, size_t nbytes);

gguf_writer *gguf_writer_new(void);          /* NULL on allocation failure */
void         gguf_writer_free(gguf_writer *w);/* NULL-safe */
/* Each setter copies its arguments. Errors (duplicate key, allocation) are sticky and
 * reported by gguf_writer_write. */
void gguf_w_u8(gguf_writer *w, const char *key, uint8_t v);
void gguf_w_i8(gguf_writer *w, const char *key, int8_t v);
void gguf_w_u16(gguf_writer *w, const char *key, uint16_t v);
void gguf_w_i16(gguf_writer *w, const char *key, int16_t v);
void gguf_w_u32(gguf_writer *w, const char *key, uint32_t v);
void gguf_w_i32(gguf_writer *w, const char *key, int32_t v);
void gguf_w_f32(gguf_writer *w, const char *key, float v);
void gguf_w_bool(gguf_writer *w, const char *key, int v);
void gguf_w_u64(gguf_writer *w, const char *key, uint64_t v);
void gguf_w_i64(gguf_writer *w, const char *key, int64_t v);
void gguf_w_f64(gguf_writer *w, const char *key, double v);
void gguf_w_str(gguf_writer *w, const char *key, const char *s, size_t len);
void gguf_w_arr(gguf_writer *w, const char *key, uint32_t elem_type, const void *data, uint64_t n);
void gguf_w_arr_str(gguf_writer *w, const char *key, const char *const *strs, const size_t *lens,
                    uint64_t n); /* lens NULL = strlen */
/* Copies one KV record (any type) from a parsed file, e.g. for quantize. */
void gguf_w_copy_kv(gguf_writer *w, const gguf_kv *kv);
void gguf_w_alignment(gguf_writer *w, uint32_t align); /* writes general.alignment too */
/* Adds a tensor. data (borrowed, must live until write) holds its bytes, or NULL to have
 * fill() produce them at write time. ne[0] must be a multiple of the type's block size. */
void gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                   const int64_t *ne, const void *data);
g4_status gguf_writer_write(gguf_writer *w, const char *path, gguf_fill_fn fill, void *ud,
                            char *err, size_t errlen);
/* Same, into a malloc'ed buffer (*out, *len; free with free()). */
g4_status gguf_writer_write_mem(gguf_writer *w, void **out, size_t *len, gguf_fill_fn fill,
                                void *ud, char *err, size_t errlen);
/* Produces bytes [offset, offset + return) of tensor idx's data into dst (at most cap bytes);
 * returns how many it wrote (1..cap), 0 on failure. */
typedef size_t (*gguf_fill_part_fn)(void *ud, size_t idx, uint64_t offset, void *dst, size_t cap);
/* Like gguf_writer_write, but tensors without a data pointer are produced in parts of at most
 * part_cap bytes, so memory stays bounded whatever the tensor size (g4 quantize). */
g4_status gguf_writer_write_parts(gguf_writer *w, const char *path, gguf_fill_part_fn part, size_t part_cap,
                                  void *ud, char *err, size_t errlen);

#endif /* G4_GGUF_H */
