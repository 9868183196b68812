/* tok_impl.h - the vocabulary struct shared by tokenizer.c (load, validation) and
 * tok_encode.c (encode, decode, public tokenizer API). Private to those two files.
 *
 * Invariants after tok_vocab_load succeeds:
 *  - 1 <= n <= TOK_MAX_COUNT; every token text is <= TOK_MAX_TEXT bytes, has no NUL byte;
 *  - type[i] is in 1..6 (after the end-of-generation promotion, see tokenizer.c);
 *  - byte_id[b] is a byte-type token for every b in 0..255;
 *  - every special id (bos, eos, ...) is -1 or in [0, n);
 *  - every merge in the merge table has left and right pieces that are tokens; its result id
 *    merge_id[rank] is the token of the concatenated text, or -1 when that text is not a token.
 */
#ifndef G4_TOK_IMPL_H
#define G4_TOK_IMPL_H

#include "tokenizer.h"

#include <string.h>

enum { /* tokenizer.ggml.token_type values (llama.cpp llama_token_type) */
    TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6
};

#define TOK_MAX_TEXT   65536u      /* bytes of one token text (reliability.md #45) */
#define TOK_MAX_COUNT  (1u << 30)  /* tokens, merges (GGUF_MAX_ARRAY; far below INT32_MAX) */
#define TOK_MAX_TMPL   (1u << 20)  /* chat template bytes inspected for markers (#49) */
#define TOK_MAX_EOG    8
#define TOK_TEXT_PAD   16

typedef struct tok_slot {  /* text -> id hash slot; len 0 = empty (empty texts are not stored) */
    uint64_t key;          /* len <= 8: the text itself (tok_word), so a probe reads nothing
                            * else; len > 8: text offset << 32 | high 32 bits of the hash */
    int32_t  id;
    uint32_t len;
} tok_slot;

/* The merge table: (left id, right id) -> rank (index in tokenizer.ggml.merges, lower merges
 * first), open addressing, home slot tok_merge_home. Compact layout when ids and ranks fit in
 * 63 bits (any real vocabulary: 18 + 18 + 20 bits for Gemma 4): one word per slot,
 * ~(left << (m_ib + m_rb) | right << m_rb | rank); else the wide layout. 0 = empty in both. */
typedef struct tok_merge {
    uint64_t key;          /* ~((uint64)left << 32 | right) */
    int64_t  rank;
} tok_merge;

struct g4_vocab {
    g4_allocator al;
    g4_log_fn    log;
    void        *log_ud;
    int32_t      n;            /* tokens */
    void        *block;        /* [block_bytes] one allocation: tab, mtab, merge_id, off, text, type */
    size_t       block_bytes;
    char        *text;         /* [text_bytes] all token texts, each followed by a NUL, then
                                * TOK_TEXT_PAD zero bytes (word loads past a text) */
    size_t       text_bytes;
    uint32_t    *off;          /* [n+1] text of token i is text[off[i] .. off[i+1]-1) */
    uint8_t     *type;         /* [n] token type, EOG texts promoted to TT_CONTROL */
    uint32_t     max_len;      /* longest token text */
    int32_t      n_dup;        /* tokens whose text a later token repeats */
    tok_slot    *tab;          /* [tab_mask+1] every non-empty text -> id (later id wins) */
    uint32_t     tab_mask;
    uint64_t    *mtab8;        /* [mtab_mask+1] compact layout, or NULL */
    tok_merge   *mtab;         /* [mtab_mask+1] wide layout, or NULL */
    size_t       mtab_mask;
    int          m_ib, m_rb;   /* compact layout: bits of an id, of a rank */
    int32_t     *merge_id;     /* [n_merges] result token of merge rank r (-1 = none) */
    int32_t      n_merges;     /* merges stored (duplicates of a pair keep the first rank) */
    int32_t      byte_id[256]; /* byte b -> its <0xXX> byte-type token */
    int32_t      ascii_id[128];/* single ASCII character -> token, -1 if none */
    /* special-token splitting (§6.2 step 1): control, user-defined and unknown tokens */
    int32_t     *spec;         /* [n_spec] ids sorted by text length, longest first */
    int32_t      n_spec;
    tok_slot    *stab;         /* [stab_mask+1] special text -> id */
    uint32_t     stab_mask;
    int32_t      bos, eos, unk, pad, mask, eot, eom; /* -1 = none */
    int32_t      eog[TOK_MAX_EOG];
    int          n_eog;
    int32_t     *suppress;     /* [n_suppress] tokenizer.ggml.suppress_tokens, in range */
    size_t       n_suppress;
    int          add_bos;      /* always 1 for gemma4 (llama.cpp PR #21500) */
    char         model[32];    /* tokenizer.ggml.model */
    int          has_template; /* tokenizer.chat_template present and inspected */
    int          chat_think_nl;      /* template writes "<|think|>\n" */
    int          chat_empty_thought; /* thinking off: gen prompt ends "<|channel>thought\n<channel|>" */
    int          chat_merge_model;   /* an assistant message right after an assistant message
                                      * continues its turn (31B template, continue_same_model_turn) */
    unsigned     chat_tools;         /* how tools are written (chat.h CHAT_T_*) */
};

static inline uint32_t tok_len(const g4_vocab *v, int32_t id) { return v->off[id + 1] - v->off[id] - 1; }
static inline const char *tok_str(const g4_vocab *v, int32_t id) { return v->text + v->off[id]; }

/* Hash of a text: word at a time over 8-byte little-endian words (the last one overlapping the
 * one before it), then tok_mix. Reads only s[0..n). */
static inline uint64_t tok_load64(const char *s) {
    uint64_t w;
    memcpy(&w, s, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}
static inline uint64_t tok_load32(const char *s) {
    uint32_t w;
    memcpy(&w, s, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap32(w);
#endif
    return w;
}
/* s[0..n), n <= 8, as a little-endian word with zero high bytes */
static inline uint64_t tok_word(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    if (n >= 4) return tok_load32(s) | tok_load32(s + n - 4) << (8 * (n - 4));
    if (n == 0) return 0;
    return (uint64_t)p[0] | (uint64_t)p[n >> 1] << (8 * (n >> 1)) | (uint64_t)p[n - 1] << (8 * (n - 1));
}
static inline uint64_t tok_hash_step(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}
static inline uint64_t tok_mix(uint64_t h) {
    h ^= h >> 29; h *= 0xbf58476d1ce4e5b9ull; h ^= h >> 32;
    return h;
}
/* The hash of s[0..n) and its slot key: the text itself when n <= 8, else the hash's high 32
 * bits (tok_slot.key less the offset). */
static inline uint64_t tok_hash(const char *s, size_t n, uint64_t *key) {
    uint64_t h = (uint64_t)n;
    if (n <= 8) {
        *key = tok_word(s, n);
        return tok_mix(tok_hash_step(h, *key));
    }
    for (size_t i = 0; i + 8 < n; i += 8) h = tok_hash_step(h, tok_load64(s + i));
    h = tok_mix(tok_hash_step(h, tok_load64(s + n - 8)));
    *key = h >> 32;
    return h;
}

/* Looks up text s[0..n) (key and h from tok_hash) in a text -> id table; -1 if absent. */
G4_INTERNAL int32_t tok_lookup(const g4_vocab *v, const tok_slot *tab, uint32_t mask, const char *s, size_t n,
                               uint64_t key, uint64_t h);
static inline int32_t tok_find(const g4_vocab *v, const char *s, size_t n) {
    uint64_t key, h = tok_hash(s, n, &key);
    return tok_lookup(v, v->tab, v->tab_mask, s, n, key, h);
}
static inline size_t tok_merge_home(const g4_vocab *v, int32_t l, int32_t r) {
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    return (size_t)(tok_mix(key * 0x9e3779b97f4a7c15ull) & v->mtab_mask);
}
/* Merge lookup: the rank of the pair (l, r), or -1. */
static inline int32_t tok_merge_find(const g4_vocab *v, int32_t l, int32_t r) {
    size_t i = tok_merge_home(v, l, r);
    if (v->mtab8) {
        const uint64_t want = (uint64_t)(uint32_t)l << v->m_ib | (uint32_t)r;
        for (;; i = (i + 1) & v->mtab_mask) {
            const uint64_t e = ~v->mtab8[i];
            if (e == UINT64_MAX) return -1;
            if (e >> v->m_rb == want) return (int32_t)(e & (((uint64_t)1 << v->m_rb) - 1));
        }
    }
    const uint64_t key = ~((uint64_t)(uint32_t)l << 32 | (uint32_t)r);
    for (;; i = (i + 1) & v->mtab_mask) {
        const tok_merge *e = &v->mtab[i];
        if (e->key == key) return (int32_t)e->rank;
        if (e->key == 0) return -1;
    }
}

/* tok_vocab_load_pool with options (tests): TOK_OPT_WIDE_MERGES forces the wide merge table */
#define TOK_OPT_WIDE_MERGES 1u
G4_INTERNAL g4_status tok_vocab_load_opts(g4_vocab **out, const gguf_file *f, const g4_allocator *al,
                                          struct g4_pool *pool, unsigned opts, g4_log_fn log, void *log_ud,
                                          char *err, size_t errlen);

#endif
