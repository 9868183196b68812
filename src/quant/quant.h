/* quant.h - GGUF tensor types: ids, block layouts, traits, reference conversions.
 *
 * Owns: the type-id table (every id ggml v0.5.0 knows, so the reader can size any tensor),
 * the block structs exactly as GGUF stores them, and the scalar reference functions
 * (quant_ref.c) that every SIMD kernel is tested against.
 * Layouts and formulas: shared/docs/quant-formats.md.
 */
#ifndef G4_QUANT_H
#define G4_QUANT_H

#include <stddef.h>
#include <stdint.h>

typedef enum g4_type {
    G4_TYPE_F32     = 0,
    G4_TYPE_F16     = 1,
    G4_TYPE_Q4_0    = 2,
    G4_TYPE_Q4_1    = 3,
    G4_TYPE_Q5_0    = 6,
    G4_TYPE_Q5_1    = 7,
    G4_TYPE_Q8_0    = 8,
    G4_TYPE_Q8_1    = 9,
    G4_TYPE_Q2_K    = 10,
    G4_TYPE_Q3_K    = 11,
    G4_TYPE_Q4_K    = 12,
    G4_TYPE_Q5_K    = 13,
    G4_TYPE_Q6_K    = 14,
    G4_TYPE_Q8_K    = 15,
    G4_TYPE_IQ2_XXS = 16,
    G4_TYPE_IQ2_XS  = 17,
    G4_TYPE_IQ3_XXS = 18,
    G4_TYPE_IQ1_S   = 19,
    G4_TYPE_IQ4_NL  = 20,
    G4_TYPE_IQ3_S   = 21,
    G4_TYPE_IQ2_S   = 22,
    G4_TYPE_IQ4_XS  = 23,
    G4_TYPE_I8      = 24,
    G4_TYPE_I16     = 25,
    G4_TYPE_I32     = 26,
    G4_TYPE_I64     = 27,
    G4_TYPE_F64     = 28,
    G4_TYPE_IQ1_M   = 29,
    G4_TYPE_BF16    = 30,
    G4_TYPE_TQ1_0   = 34,
    G4_TYPE_TQ2_0   = 35,
    G4_TYPE_MXFP4   = 39,
    G4_TYPE_NVFP4   = 40,
    G4_TYPE_Q1_0    = 41,
    G4_TYPE_Q2_0    = 42,
    G4_TYPE_COUNT   = 43
} g4_type;

typedef struct g4_type_traits {
    const char *name;      /* "q4_K" (ggml's spelling); NULL for removed/unknown ids */
    uint32_t    blck;      /* elements per block (0 for removed ids) */
    uint32_t    bytes;     /* bytes per block */
    int         weight;    /* 1 = gemma4.c can use it as a weight (dequantize + dot) */
    int         dot_type;  /* activation type for dot products (G4_TYPE_F32, F16, BF16, Q8_0, Q8_1, Q8_K) */
} g4_type_traits;

/* Traits of a type id, or NULL when the id is out of range or removed (block size 0). */
const g4_type_traits *quant_traits(uint32_t type);
/* Name of a type id for messages ("q4_K", or "type 77" style into buf). */
const char *quant_type_name(uint32_t type, char *buf, size_t cap);
/* Parse a type name (case-insensitive: "q4_k", "Q8_0", "f16", "bf16"); -1 if unknown. */
int quant_type_from_name(const char *name);
/* Row bytes for ne0 elements, or 0 if ne0 is not a multiple of the block size. */
size_t quant_row_bytes(uint32_t type, int64_t ne0);

/* ==== Half-precision conversions (no tables, no globals) ==== */

static inline float g4_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400u));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    union { uint32_t u; float f; } v = { bits };
    return v.f;
}

/* Round to nearest even, as F16C's vcvtps2ph and ggml's GGML_FP32_TO_FP16 do. */
static inline uint16_t g4_f32_to_f16(float f) {
    union { float f; uint32_t u; } v = { f };
    uint32_t x = v.u, sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* NaN, quiet */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  /* rounds to >= 65520: Inf */
    if (ax < 0x38800000u) {                                     /* result subnormal or zero */
        if (ax < 0x33000000u) return (uint16_t)sign;            /* < 2^-25: rounds to 0 */
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        /* value = m * 2^(e-150); in f16 subnormal units of 2^-24: m >> (126 - e) */
        uint32_t shift = 126 - e;
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ax - 0x38000000u;         /* rebias exponent 127 -> 15, in place */
    uint32_t h = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static inline float g4_bf16_to_f32(uint16_t h) {
    union { uint32_t u; float f; } v = { (uint32_t)h << 16 };
    return v.f;
}

/* Round to nearest even; NaN quieted (as ggml's GGML_FP32_TO_BF16). */
static inline uint16_t g4_f32_to_bf16(float f) {
    union { float f; uint32_t u; } v = { f };
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 64);
    return (uint16_t)((v.u + (0x7fffu + ((v.u >> 16) & 1))) >> 16);
}


/* ==== Block layouts (appended; quant-formats.md §3-4) ====
 * Exactly as GGUF stores them. f16 fields are raw uint16_t bits. Code that reads mapped
 * files must not assume struct alignment: quant_ref.c and the kernels read fields through
 * byte pointers (memcpy), and use these structs for sizes and offsets only. */
#define QK4_0 32
#define QK8_0 32
#define QK_K  256

typedef struct { uint16_t d; uint8_t qs[16]; } block_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[16]; } block_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } block_q5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } block_q5_1;
typedef struct { uint16_t d; int8_t qs[32]; } block_q8_0;
typedef struct { uint16_t d, s; int8_t qs[32]; } block_q8_1;
typedef struct { uint16_t d; uint8_t qs[16]; } block_iq4_nl;
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } block_q2_K;
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } block_q3_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } block_q4_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } block_q5_K;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } block_q6_K;
typedef struct { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } block_iq4_xs;
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } block_q8_K;

_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 size");
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1 size");
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0 size");
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1 size");
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 size");
_Static_assert(sizeof(block_q8_1) == 36, "block_q8_1 size");
_Static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl size");
_Static_assert(sizeof(block_q2_K) == 84, "block_q2_K size");
_Static_assert(sizeof(block_q3_K) == 110, "block_q3_K size");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K size");
_Static_assert(sizeof(block_q5_K) == 176, "block_q5_K size");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K size");
_Static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs size");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K size");

/* IQ4_NL / IQ4_XS non-linear code book (kvalues_iq4nl) */
#define G4_IQ4NL_VALUES { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 }

#endif /* G4_QUANT_H */
