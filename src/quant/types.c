/* types.c - the GGUF type-id table.
 *
 * Owns: block size, bytes per block and dot-product pairing of every ggml type id (v0.5.0),
 * indexed by a range-checked id. Removed ids (4, 5, 31-33, 36-38) have no entry, so a file
 * that uses them is refused instead of dividing by a zero block size (llama.cpp #8816).
 */
#include "quant.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define T(id, nm, b, by, w, dt) [id] = { nm, b, by, w, dt }

static const g4_type_traits TRAITS[G4_TYPE_COUNT] = {
    T(G4_TYPE_F32,     "f32",     1,   4,   1, G4_TYPE_F32),
    T(G4_TYPE_F16,     "f16",     1,   2,   1, G4_TYPE_F16),
    T(G4_TYPE_Q4_0,    "q4_0",    32,  18,  1, G4_TYPE_Q8_0),
    T(G4_TYPE_Q4_1,    "q4_1",    32,  20,  1, G4_TYPE_Q8_1),
    T(G4_TYPE_Q5_0,    "q5_0",    32,  22,  1, G4_TYPE_Q8_0),
    T(G4_TYPE_Q5_1,    "q5_1",    32,  24,  1, G4_TYPE_Q8_1),
    T(G4_TYPE_Q8_0,    "q8_0",    32,  34,  1, G4_TYPE_Q8_0),
    T(G4_TYPE_Q8_1,    "q8_1",    32,  36,  0, G4_TYPE_Q8_1),
    T(G4_TYPE_Q2_K,    "q2_K",    256, 84,  1, G4_TYPE_Q8_K),
    T(G4_TYPE_Q3_K,    "q3_K",    256, 110, 1, G4_TYPE_Q8_K),
    T(G4_TYPE_Q4_K,    "q4_K",    256, 144, 1, G4_TYPE_Q8_K),
    T(G4_TYPE_Q5_K,    "q5_K",    256, 176, 1, G4_TYPE_Q8_K),
    T(G4_TYPE_Q6_K,    "q6_K",    256, 210, 1, G4_TYPE_Q8_K),
    T(G4_TYPE_Q8_K,    "q8_K",    256, 292, 0, G4_TYPE_Q8_K),
    T(G4_TYPE_IQ2_XXS, "iq2_xxs", 256, 66,  0, G4_TYPE_Q8_K),
    T(G4_TYPE_IQ2_XS,  "iq2_xs",  256, 74,  0, G4_TYPE_Q8_K),
    T(G4_TYPE_IQ3_XXS, "iq3_xxs", 256, 98,  0, G4_TYPE_Q8_K),
    T(G4_TYPE_IQ1_S,   "iq1_s",   256, 50,  0, G4_TYPE_Q8_K),
    T(G4_TYPE_IQ4_NL,  "iq4_nl",  32,  18,  1, G4_TYPE_Q8_0),
    T(G4_TYPE_IQ3_S,   "iq3_s",   256, 110, 0, G4_TYPE_Q8_K),
    T(G4_TYPE_IQ2_S,   "iq2_s",   256, 82,  0, G4_TYPE_Q8_K),
    T(G4_TYPE_IQ4_XS,  "iq4_xs",  256, 136, 1, G4_TYPE_Q8_K),
    T(G4_TYPE_I8,      "i8",      1,   1,   0, G4_TYPE_I8),
    T(G4_TYPE_I16,     "i16",     1,   2,   0, G4_TYPE_I16),
    T(G4_TYPE_I32,     "i32",     1,   4,   0, G4_TYPE_I32),
    T(G4_TYPE_I64,     "i64",     1,   8,   0, G4_TYPE_I64),
    T(G4_TYPE_F64,     "f64",     1,   8,   0, G4_TYPE_F64),
    T(G4_TYPE_IQ1_M,   "iq1_m",   256, 56,  0, G4_TYPE_Q8_K),
    T(G4_TYPE_BF16,    "bf16",    1,   2,   1, G4_TYPE_BF16),
    T(G4_TYPE_TQ1_0,   "tq1_0",   256, 54,  0, G4_TYPE_Q8_K),
    T(G4_TYPE_TQ2_0,   "tq2_0",   256, 66,  0, G4_TYPE_Q8_K),
    T(G4_TYPE_MXFP4,   "mxfp4",   32,  17,  0, G4_TYPE_Q8_0),
    T(G4_TYPE_NVFP4,   "nvfp4",   64,  36,  0, G4_TYPE_Q8_0),
    T(G4_TYPE_Q1_0,    "q1_0",    128, 18,  0, G4_TYPE_Q8_0),
    T(G4_TYPE_Q2_0,    "q2_0",    64,  18,  0, G4_TYPE_Q8_0),
};

const g4_type_traits *quant_traits(uint32_t type) {
    if (type >= G4_TYPE_COUNT || TRAITS[type].blck == 0) return NULL;
    return &TRAITS[type];
}

const char *quant_type_name(uint32_t type, char *buf, size_t cap) {
    const g4_type_traits *t = quant_traits(type);
    if (t) return t->name;
    snprintf(buf, cap, "type %u", (unsigned)type);
    return buf;
}

int quant_type_from_name(const char *name) {
    for (int i = 0; i < G4_TYPE_COUNT; i++) {
        const char *n = TRAITS[i].name;
        if (!n) continue;
        size_t k = 0;
        while (n[k] && name[k] && tolower((unsigned char)n[k]) == tolower((unsigned char)name[k])) k++;
        if (!n[k] && !name[k]) return i;
    }
    return -1;
}

size_t quant_row_bytes(uint32_t type, int64_t ne0) {
    const g4_type_traits *t = quant_traits(type);
    if (!t || ne0 <= 0 || ne0 % t->blck) return 0;
    return (size_t)(ne0 / t->blck) * t->bytes;
}
