/* quantize.h - GGUF -> GGUF weight conversion with llama-quantize's per-tensor rules
 * (llama.cpp v0.5.0, src/llama-quant.cpp, without an importance matrix). Internal: the CLI
 * (`g4 quantize`) and the tests use it.
 *
 * What is converted: 2-D (or larger) tensors whose name ends in "weight", except norms,
 * per_layer_model_proj and the small tensors llama-quantize leaves alone. Everything else
 * (norms, scalars, rope_freqs, ...) is copied byte for byte. Metadata is copied in order;
 * general.file_type and general.quantization_version are set, split keys dropped.
 *
 * Type choice, in llama-quantize's order of precedence:
 *   1. a tensor that may not be quantized keeps its type;
 *   2. token_embd / per_layer_token_embd: the explicit embedding types (per_layer_token_embd:
 *      a --tensor-type pattern naming it, then per_layer_type, then token_embd_type);
 *      output: output_type;
 *   3. (quantized targets only) the first --tensor-type pattern that matches (POSIX
 *      extended regex, searched anywhere in the name), else the mix rules unless `pure`:
 *      tied embeddings / output -> Q6_K (Q8_0 if the row length is not a multiple of the
 *      target's block), attn_v and ffn_down -> Q6_K on use_more_bits layers for Q4_K_M /
 *      Q5_K_M, Q5_K on the first layers for Q4_K_S;
 *   4. fallback when the row length is not a multiple of the block: Q4_K -> Q5_0,
 *      Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0, IQ4_XS -> IQ4_NL; F16 if that still
 *      does not fit. (llama-quantize skips this for explicit embedding/output types and then
 *      fails; here the fallback applies to every choice, so the output is always valid.)
 * Counters (which attn_v / ffn_down this is) advance in llama.cpp's tensor order: by layer
 * number (non-layer tensors first), then by name. Mixture-of-experts files (expert_count > 1):
 * 3-D expert tensors are quantized like the other matrices, ffn_down(_exps) by the layer number
 * in the name, the router (ffn_gate_inp) never; with exactly 8 experts attn_v / attn_k take
 * Q8_0 and attn_output Q5_K (Q4_K_S, Q4_K_M), as llama-quantize.
 *
 * Memory: the input is mapped; the output is produced in parts of 16 MiB (or one row, if
 * larger) through gguf_writer_write_parts, plus one row of floats per thread.
 */
#ifndef G4_QUANTIZE_H
#define G4_QUANTIZE_H

#include <stddef.h>
#include <stdint.h>

#include "g4_impl.h"
#include "gguf.h"

/* llama_ftype values (llama.h) written as general.file_type */
enum {
    QZ_FTYPE_F32 = 0, QZ_FTYPE_F16 = 1, QZ_FTYPE_Q4_0 = 2, QZ_FTYPE_Q4_1 = 3, QZ_FTYPE_Q8_0 = 7,
    QZ_FTYPE_Q5_0 = 8, QZ_FTYPE_Q5_1 = 9, QZ_FTYPE_Q4_K_S = 14, QZ_FTYPE_Q4_K_M = 15,
    QZ_FTYPE_Q5_K_S = 16, QZ_FTYPE_Q5_K_M = 17, QZ_FTYPE_Q6_K = 18, QZ_FTYPE_BF16 = 32
};

#define QZ_MAX_OVERRIDES 64

typedef struct qz_override {
    char     pattern[256];  /* POSIX ERE */
    uint32_t type;
} qz_override;

/* progress: tensor i of n (0-based, the one just finished or in progress), bytes of input
 * tensor data processed so far of total */
typedef void (*qz_progress_fn)(void *ud, size_t i, size_t n, uint64_t done, uint64_t total, const char *name);

typedef struct qz_params {
    int         ftype;           /* QZ_FTYPE_* */
    uint32_t    default_type;    /* g4_type of the ftype */
    int         pure;            /* 1 = no mix rules (llama-quantize --pure) */
    int         token_embd_type; /* -1 = rules */
    int         per_layer_type;  /* -1 = follow token_embd_type, else rules */
    int         output_type;     /* -1 = rules */
    qz_override overrides[QZ_MAX_OVERRIDES];
    int         n_overrides;
    int         n_threads;       /* <= 0: 1 */
    qz_progress_fn progress;     /* may be NULL */
    void       *progress_ud;
    int       (*should_abort)(void *ud); /* polled between slabs; nonzero stops (G4_ERR_ABORTED) */
    void       *abort_ud;
    size_t      part_bytes;      /* output produced in parts of this size (0 = 16 MiB; at least one row) */
    g4_log_fn   log;             /* fallback warnings etc.; may be NULL */
    void       *log_ud;
} qz_params;

/* Per-tensor decision */
typedef struct qz_choice {
    uint32_t src_type, dst_type;
    int      quantizable;       /* passes llama-quantize's name/shape filter */
    int      fallback;          /* 1 = the row length forced a fallback type */
    uint64_t src_bytes, dst_bytes;
} qz_choice;

typedef struct qz_stats {
    size_t   n_tensors, n_converted, n_copied, n_fallback;
    uint64_t src_bytes, dst_bytes;    /* tensor data */
    uint64_t n_params;
} qz_stats;

/* "Q4_K_M", "q8_0", "Q4_K" (every matrix Q4_K: llama-quantize --pure Q4_K_M), "F16", ...
 * Fills ftype, default_type and pure (0/1). G4_ERR_ARG for an unknown name. */
G4_INTERNAL g4_status qz_ftype_from_name(const char *name, int *ftype, uint32_t *default_type, int *pure);
/* Space-separated list of the names qz_ftype_from_name accepts (for usage text). */
G4_INTERNAL const char *qz_ftype_names(void);
/* A tensor type usable as an explicit target ("q4_0", "Q6_K", "f16", ...), or -1: it must be
 * writable by quant_quantize_row and readable by gemma4.c. */
G4_INTERNAL int qz_type_from_name(const char *name);
/* "PATTERN=TYPE" -> o; G4_ERR_ARG with a message for a bad regex or type. */
G4_INTERNAL g4_status qz_parse_override(const char *arg, qz_override *o, char *err, size_t errlen);
/* Default params for an ftype name (0 on success); sets every field. */
G4_INTERNAL g4_status qz_params_init(qz_params *p, const char *ftype_name, char *err, size_t errlen);

/* Chooses every tensor's output type (choices[gguf_n_tensors(f)]). G4_ERR_ARG for bad
 * patterns, G4_ERR_UNSUPPORTED when a tensor must be converted from a type gemma4.c cannot
 * read. */
G4_INTERNAL g4_status qz_plan(const gguf_file *f, const qz_params *p, qz_choice *choices, char *err, size_t errlen);

/* Reads in_path, writes out_path (removed again on failure). out_path must not be in_path. */
G4_INTERNAL g4_status qz_quantize_file(const char *in_path, const char *out_path, const qz_params *p, qz_stats *stats,
                           char *err, size_t errlen);

#endif
