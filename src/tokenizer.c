/* tokenizer.c - builds and validates the gemma4 vocabulary from a GGUF's tokenizer.ggml.* keys.
 *
 * Owns: reading tokens, token types, scores (validated, unused), merges, special ids,
 * suppress_tokens and the chat-template markers; the text -> id and (left, right) -> merge
 * hash tables; the 256-entry byte-token table; the end-of-generation set. Encoding and
 * decoding live in tok_encode.c. Rules: shared/docs/gemma4-architecture.md §6,
 * reliability.md #41-#49. Every message names the file, the key and the index.
 *
 * Policy decisions (documented in the architecture notes):
 *  - duplicate token texts load; text lookup gives the later id; one warning (§6.5);
 *  - byte fallback uses the byte-type tokens, which must cover 0x00..0xFF exactly once;
 *  - a merge whose pieces are not tokens is rejected; a merge whose concatenation is not a
 *    token is kept (its result falls back to bytes, as llama.cpp does);
 *  - absent special-id keys mean "none" (llama.cpp has no gemma4 defaults); present ones
 *    must be in range; BOS is required because gemma4 always adds it;
 *  - "<eos>", "<turn|>", "<|tool_response>" are end-of-generation and treated as control
 *    tokens whatever their stored type (llama.cpp does the same).
 */
#include "tok_impl.h"

#include "chat.h"

#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ==== Logging and helpers ==== */

static void vlog(const g4_vocab *v, int level, const char *fmt, ...) G4_PRINTF(3, 4);
static void vlog(const g4_vocab *v, int level, const char *fmt, ...) {
    if (!v->log) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    v->log(v->log_ud, level, msg);
}

/* Escapes untrusted token text for messages: printable ASCII as is, the rest as \xHH. */
static const char *esc(const char *s, size_t n, char *buf, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, cap - o, "\\x%02X", c);
    }
    if (o + 5 >= cap && cap > 4) { buf[cap - 4] = '.'; buf[cap - 3] = '.'; buf[cap - 2] = '.'; o = cap - 1; }
    buf[o] = 0;
    return buf;
}

/* Word at byte p of a query text of n bytes: m[0..n) itself, or (split) the concatenation of
 * a merge string "a b"'s pieces, a = m[0..na) and b = m[na+1..n+1). p + 8 <= n. */
static inline uint64_t q_word(const char *m, size_t na, int split, size_t p) {
    uint64_t lo = tok_load64(m + p);
    if (!split || p + 8 <= na) return lo;
    uint64_t hi = tok_load64(m + p + 1);
    if (p >= na) return hi;
    uint64_t mask = ((uint64_t)1 << (8 * (na - p))) - 1;
    return (lo & mask) | (hi & ~mask);
}

/* tok_hash of the query text (see q_word) */
static inline uint64_t q_hash(const char *m, size_t n, size_t na, int split, uint64_t *key) {
    if (!split) return tok_hash(m, n, key);
    uint64_t h = (uint64_t)n;
    if (n <= 8) { /* na <= 7: the right piece is not empty */
        *key = tok_word(m, na) | tok_word(m + na + 1, n - na) << (8 * na);
        return tok_mix(tok_hash_step(h, *key));
    }
    for (size_t i = 0; i + 8 < n; i += 8) h = tok_hash_step(h, q_word(m, na, 1, i));
    h = tok_mix(tok_hash_step(h, q_word(m, na, 1, n - 8)));
    *key = h >> 32;
    return h;
}

/* token text t equals the query text, n > 8 */
static inline int q_text_eq(const char *t, const char *m, size_t n, size_t na, int split) {
    for (size_t p = 0; p + 8 < n; p += 8)
        if (tok_load64(t + p) != q_word(m, na, split, p)) return 0;
    return tok_load64(t + n - 8) == q_word(m, na, split, n - 8);
}

/* probes from slot i on */
static inline int32_t q_probe(const g4_vocab *v, const tok_slot *tab, uint32_t mask, const char *m, size_t n,
                              size_t na, int split, uint64_t key, uint32_t i) {
    for (;; i = (i + 1) & mask) {
        const tok_slot *e = &tab[i];
        if (e->len == 0) return -1;
        if (e->len != n) continue;
        if (n <= 8) {
            if (e->key == key) return e->id;
        } else if ((uint32_t)e->key == (uint32_t)key && q_text_eq(v->text + (e->key >> 32), m, n, na, split)) {
            return e->id;
        }
    }
}

int32_t tok_lookup(const g4_vocab *v, const tok_slot *tab, uint32_t mask, const char *s, size_t n, uint64_t key,
                   uint64_t h) {
    return q_probe(v, tab, mask, s, n, 0, 0, key, (uint32_t)h & mask);
}

/* Inserts id (whose text hashes to h, key from tok_hash) under its text; returns the id it
 * replaced (duplicate text) or -1. */
static int32_t tab_put(g4_vocab *v, tok_slot *tab, uint32_t mask, int32_t id, uint64_t key, uint64_t h) {
    const char *s = tok_str(v, id);
    size_t      n = tok_len(v, id);
    if (n > 8) key = (uint64_t)v->off[id] << 32 | (uint32_t)key;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        tok_slot *e = &tab[i];
        if (e->len == 0) { e->key = key; e->id = id; e->len = (uint32_t)n; return -1; }
        if (e->len != n) continue;
        if (n <= 8 ? e->key == key
                   : (uint32_t)e->key == (uint32_t)key && memcmp(tok_str(v, e->id), s, n) == 0) {
            int32_t old = e->id;
            e->id = id; /* the later id wins (reliability.md #45) */
            e->key = key;
            return old;
        }
    }
}

/* The two big tables (8 MiB text -> id, 16 MiB merges for the real vocabulary) are probed at
 * random while loading and encoding; with 4 KiB pages nearly every probe is also a TLB miss,
 * and the ~30 MiB block holding them (zeroed_block) would take ~7000 page faults: huge pages
 * are asked for (g4_want_huge_pages). */
/* Zeroed memory for the vocabulary's big arrays, in one block. From the default libc
 * allocator it comes from calloc, which skips clearing fresh pages, with huge pages asked
 * for (above); a caller's allocator gets g4_calloc. */
static void *zeroed_block(const g4_allocator *al, size_t n) {
    if (al->fn != g4_libc_alloc) return g4_calloc(al, 1, n);
    void *p = calloc(1, n);
    g4_want_huge_pages(al, p, n);
    return p;
}

/* table sizes: n <= 2 * TOK_MAX_COUNT = 2^31, so the result fits in 32 bits */
static uint32_t pow2_at_least(uint64_t n) {
    uint64_t p = 16;
    while (p < n) p <<= 1;
    G4_ASSERT(p <= UINT32_MAX);
    return (uint32_t)p;
}

void tok_vocab_free(g4_vocab *v) {
    if (!v) return;
    const g4_allocator al = v->al;
    g4_free(&al, v->block, v->block_bytes);
    g4_free(&al, v->spec, (size_t)v->n_spec * sizeof *v->spec);
    if (v->stab) g4_free(&al, v->stab, ((size_t)v->stab_mask + 1) * sizeof *v->stab);
    g4_free(&al, v->suppress, v->n_suppress * sizeof *v->suppress);
    g4_free(&al, v, sizeof *v);
}

/* ==== Tokens, types, scores ==== */

static int bits_for(uint64_t n) { /* bits of the values 0..n-1 (at least 1) */
    int b = 1;
    while (b < 64 && n > ((uint64_t)1 << b)) b++;
    return b;
}

static g4_status load_tokens(g4_vocab *v, const gguf_file *f, unsigned opts, char *err, size_t errlen) {
    const char *fn = gguf_name(f);
    const gguf_kv *kv = NULL;
    g4_status st = gguf_get_arr(f, "tokenizer.ggml.tokens", 1, 1u << GGUF_STRING, &kv, NULL, err, errlen);
    if (st != G4_OK) return st;
    if (kv->n == 0 || kv->n > TOK_MAX_COUNT)
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.tokens: %llu tokens (need 1..%u)",
                       fn, (unsigned long long)kv->n, TOK_MAX_COUNT);
    size_t nt = (size_t)kv->n;
    /* one zeroed block: the text and merge tables (empty slots are zero), merge results,
     * offsets, texts, types; the merge count is read here and validated by load_merges */
    const gguf_kv *mk = gguf_find(f, "tokenizer.ggml.merges");
    uint64_t nm = mk && mk->type == GGUF_ARRAY && mk->arr_type == GGUF_STRING && mk->n <= TOK_MAX_COUNT ? mk->n : 0;
    uint32_t tsz = pow2_at_least((uint64_t)nt * 2), msz = pow2_at_least(nm * 2);
    v->m_ib = bits_for(nt);
    v->m_rb = bits_for(nm);
    int compact = !(opts & TOK_OPT_WIDE_MERGES) && 2 * v->m_ib + v->m_rb <= 63;
    uint64_t part[6] = {(uint64_t)tsz * sizeof *v->tab, (uint64_t)msz * (compact ? sizeof *v->mtab8 : sizeof *v->mtab),
                        nm * sizeof *v->merge_id,
                        ((uint64_t)nt + 1) * sizeof *v->off, (uint64_t)kv->soff[nt] + TOK_TEXT_PAD, nt};
    uint64_t at[6], total = 0;
    for (int i = 0; i < 6; i++) {
        at[i] = total;
        total += (part[i] + 63) & ~(uint64_t)63;
    }
    v->block = total <= SIZE_MAX ? zeroed_block(&v->al, (size_t)total) : NULL;
    if (!v->block) return g4_errf(G4_ERR_NOMEM, err, errlen, "%s: out of memory for %zu tokens", fn, nt);
    v->block_bytes = (size_t)total;
    char *b = v->block;
    v->tab = (tok_slot *)(void *)(b + at[0]);
    v->tab_mask = tsz - 1;
    if (compact) v->mtab8 = (uint64_t *)(void *)(b + at[1]);
    else v->mtab = (tok_merge *)(void *)(b + at[1]);
    v->mtab_mask = msz - 1;
    v->merge_id = nm ? (int32_t *)(void *)(b + at[2]) : NULL;
    v->off = (uint32_t *)(void *)(b + at[3]);
    v->text = b + at[4];
    v->text_bytes = (size_t)part[4];
    v->type = (uint8_t *)(b + at[5]);
    v->n = (int32_t)nt;
    memcpy(v->text, kv->sblob, kv->soff[nt]);
    memcpy(v->off, kv->soff, ((size_t)v->n + 1) * sizeof *v->off);

    /* token_type: required (byte fallback needs the byte-type tokens) */
    const gguf_kv *tt = NULL;
    st = gguf_get_arr(f, "tokenizer.ggml.token_type", 1, 1u << GGUF_INT32, &tt, NULL, err, errlen);
    if (st != G4_OK) return st;
    if (tt->n != kv->n)
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.token_type: %llu entries, expected %d (one per token)",
                       fn, (unsigned long long)tt->n, v->n);
    const int32_t *types = tt->arr;
    for (int32_t i = 0; i < v->n; i++) {
        int32_t t = types[i];
        if (t < TT_NORMAL || t > TT_BYTE)
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.token_type[%d] = %d: outside 1..6", fn, i, t);
        v->type[i] = (uint8_t)t;
    }

    /* scores: optional and unused by gemma4, but must match when present */
    const gguf_kv *sc = NULL;
    int found = 0;
    st = gguf_get_arr(f, "tokenizer.ggml.scores", 0, 1u << GGUF_FLOAT32, &sc, &found, err, errlen);
    if (st != G4_OK) return st;
    if (found && sc->n != kv->n)
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.scores: %llu entries, expected %d (one per token)",
                       fn, (unsigned long long)sc->n, v->n);

    /* texts: cap, no NUL, non-empty unless unused */
    char e[64];
    for (int32_t i = 0; i < v->n; i++) {
        uint32_t n = tok_len(v, i);
        const char *s = tok_str(v, i);
        if (n > TOK_MAX_TEXT)
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.tokens[%d]: %u bytes (limit %u)", fn, i, n, TOK_MAX_TEXT);
        if (n == 0 && v->type[i] != TT_UNUSED)
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.tokens[%d]: empty text (type %d)", fn, i, v->type[i]);
        if (memchr(s, 0, n))
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.tokens[%d] '%s': contains a NUL byte", fn, i,
                           esc(s, n, e, sizeof e));
        if (n > v->max_len) v->max_len = n;
    }
    return G4_OK;
}

static void build_text_table(g4_vocab *v, const gguf_file *f) {
    const char *fn = gguf_name(f);
    int32_t n_dup = 0;
    char msg[256];
    size_t mo = 0;
    msg[0] = 0;
    enum { BLK = 64 };
    uint64_t hb[BLK], kb[BLK];
    for (int32_t i = 0; i < v->n; i++) {
        if (i % BLK == 0) /* hash a block ahead and prefetch its slots: the table is ~8 MB */
            for (int32_t j = 0; j < BLK && i + j < v->n; j++) {
                hb[j] = tok_hash(tok_str(v, i + j), tok_len(v, i + j), &kb[j]);
                __builtin_prefetch(&v->tab[(uint32_t)hb[j] & v->tab_mask], 1);
            }
        if (tok_len(v, i) == 0) continue;
        int32_t old = tab_put(v, v->tab, v->tab_mask, i, kb[i % BLK], hb[i % BLK]);
        if (old >= 0) {
            if (n_dup < 4 && mo < sizeof msg - 64) {
                char e[40];
                mo += (size_t)snprintf(msg + mo, sizeof msg - mo, "%s'%s' (%d, %d)", n_dup ? ", " : "",
                                       esc(tok_str(v, i), tok_len(v, i), e, sizeof e), old, i);
            }
            n_dup++;
        }
    }
    v->n_dup = n_dup;
    if (n_dup)
        vlog(v, G4_LOG_WARN, "%s: tokenizer.ggml.tokens: %d duplicate token texts, text lookup uses the later id: %s%s",
             fn, n_dup, msg, n_dup > 4 ? ", ..." : "");
    for (int c = 0; c < 128; c++) {
        char ch = (char)c;
        v->ascii_id[c] = tok_find(v, &ch, 1);
    }
}

/* ==== Byte tokens ==== */

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static g4_status build_byte_table(g4_vocab *v, const gguf_file *f, char *err, size_t errlen) {
    const char *fn = gguf_name(f);
    for (int b = 0; b < 256; b++) v->byte_id[b] = -1;
    char e[64];
    for (int32_t i = 0; i < v->n; i++) {
        if (v->type[i] != TT_BYTE) continue;
        const char *s = tok_str(v, i);
        uint32_t    n = tok_len(v, i);
        int hi = n == 6 ? hexval(s[3]) : -1, lo = n == 6 ? hexval(s[4]) : -1;
        if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>' || hi < 0 || lo < 0)
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.tokens[%d] '%s': byte token is not <0xHH>",
                           fn, i, esc(s, n, e, sizeof e));
        int b = hi * 16 + lo;
        if (v->byte_id[b] >= 0)
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.tokens[%d]: byte token <0x%02X> duplicates token %d",
                           fn, i, b, v->byte_id[b]);
        v->byte_id[b] = i;
    }
    for (int b = 0; b < 256; b++)
        if (v->byte_id[b] < 0)
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.tokens: byte token <0x%02X> is missing "
                           "(byte fallback needs all 256 byte-type tokens)", fn, b);
    return G4_OK;
}

/* ==== Merges ==== */

/* Merge strings are resolved to (left id, right id, result id) in parallel chunks (read-only
 * lookups), then inserted into the merge table in rank order on one thread, so a duplicated
 * pair keeps its first rank whatever the thread count. */
typedef struct merge_job {
    const g4_vocab *v;
    const gguf_kv  *kv;
    uint64_t       *keys;     /* [n] (left << 32 | right), UINT64_MAX where the merge is bad */
    int32_t        *res;      /* [n] result ids (v->merge_id) */
    int64_t        *first_bad;/* [n_threads] lowest bad rank seen by each thread */
    int             guess;    /* no duplicate texts: results may be guessed (merge_resolve) */
    int             direct;   /* one thread, in rank order: insert into v->mtab (keys unused) */
    const char     *blob_end; /* the end of the merge strings */
} merge_job;

static inline uint64_t spaces8(uint64_t w) { /* 0x80 in each byte of w that is ' ' */
    const uint64_t lo7 = 0x7f7f7f7f7f7f7f7full, t = w ^ 0x2020202020202020ull;
    return ~(((t & lo7) + lo7) | t | lo7);
}

/* splits merge r at the first space after its first byte (llama.cpp: find(' ', 1)); 0 if
 * it is not two non-empty pieces separated by exactly one space */
static int merge_split(const gguf_kv *kv, size_t r, const char **s, size_t *nl, const char **rp, size_t *nr) {
    uint64_t len;
    const char *m = *s = gguf_arr_str(kv, r, &len);
    size_t sp = 0;
    for (size_t p = 0; p < len; p += 8) { /* the one space at index >= 1, eight bytes at a time */
        uint64_t b = spaces8(p + 8 <= len ? tok_load64(m + p) : tok_word(m + p, (size_t)len - p));
        if (p == 0) b &= ~(uint64_t)0x80;
        if (!b) continue;
        if (sp || (b & (b - 1))) return 0;
        sp = p + (size_t)__builtin_ctzll(b) / 8;
    }
    if (!sp || sp + 1 == len) return 0;
    *nl = sp;
    *rp = m + sp + 1;
    *nr = (size_t)len - sp - 1;
    return 1;
}

typedef struct merge_q {     /* one merge in flight in merge_resolve */
    const char *s;           /* the merge string "left right" */
    size_t      nl, nr;
    int         ok;          /* two pieces */
    uint64_t    h[2], key[2];/* left, right */
    int32_t     id[2];       /* after stage 2: the id, -1, or -2: a candidate to verify */
    uint32_t    at[2];       /* the candidate's slot */
    uint64_t    mk;          /* after stage 3 (direct): the merge table key, UINT64_MAX = bad */
    size_t      mi;          /* and its home slot */
} merge_q;

static inline uint64_t low_bytes(size_t k) { /* the low k <= 8 bytes of a word */
    return k >= 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * k)) - 1;
}

/* tok_hash of p[0..k), 1 <= k <= 16, for p with 16 readable bytes */
static inline uint64_t hash16(const char *p, size_t k, uint64_t *key) {
    uint64_t w0 = tok_load64(p), wl = tok_load64(p + (k > 8 ? k - 8 : 0)), ks = w0 & low_bytes(k);
    uint64_t hs = tok_hash_step(k, ks), hl = tok_hash_step(tok_hash_step(k, w0), wl);
    uint64_t h = tok_mix(k <= 8 ? hs : hl);
    *key = k <= 8 ? ks : h >> 32;
    return h;
}

/* q_word(m, na, 1, p) for m with p + 9 readable bytes, without branches */
static inline uint64_t cat_word(const char *m, size_t na, size_t p) {
    uint64_t lo = tok_load64(m + p), hi = tok_load64(m + p + 1), mk = low_bytes(na > p ? na - p : 0);
    return (lo & mk) | (hi & ~mk);
}

/* token g has the n <= 15 byte text whose first word is c0 and whose word at
 * n - 8 is cl (n > 8); reads up to 16 bytes past the text (TOK_TEXT_PAD) */
static inline int text_is16(const g4_vocab *v, int32_t g, size_t n, uint64_t c0, uint64_t cl) {
    const char *t = v->text + v->off[g];
    uint64_t t0 = tok_load64(t), tl = tok_load64(t + (n > 8 ? n - 8 : 0));
    return (v->off[g + 1] - v->off[g] - 1 == n) & ((t0 & low_bytes(n)) == (c0 & low_bytes(n))) & (n <= 8 || tl == cl);
}

/* Stage 1 of merge_resolve for a merge string m of 3..16 bytes with 32 readable bytes:
 * split, hash the pieces, guess the result (last or last + 1); -2 when the guess fails. */
static inline int32_t stage1_short(const g4_vocab *v, merge_q *e, const char *m, size_t len, int32_t last) {
    uint64_t w0 = tok_load64(m), w1 = tok_load64(m + 8);
    uint64_t b0 = spaces8(w0) & low_bytes(len) & ~(uint64_t)0x80, b1 = spaces8(w1) & low_bytes(len > 8 ? len - 8 : 0);
    uint64_t b = b0 | b1;
    e->ok = 0;
    if (!b || (b0 && b1) || (b & (b - 1))) return -1;
    size_t sp = (size_t)(b0 ? __builtin_ctzll(b0) : 64 + __builtin_ctzll(b1)) / 8;
    if (sp + 1 == len) return -1;
    e->ok = 1;
    e->s = m;
    e->nl = sp;
    e->nr = len - sp - 1;
    e->h[0] = hash16(m, sp, &e->key[0]);
    e->h[1] = hash16(m + sp + 1, e->nr, &e->key[1]);
    size_t n = len - 1;
    uint64_t c0 = cat_word(m, sp, 0), cl = cat_word(m, sp, n > 8 ? n - 8 : 0);
    if (last >= 0 && last < v->n && text_is16(v, last, n, c0, cl)) return last;
    if (last + 1 < v->n && text_is16(v, last + 1, n, c0, cl)) return last + 1;
    return -2;
}

/* token g's text is the concatenation of merge string m's pieces (m[0..na), m[na+1..n+1)) */
static inline int cat_is(const g4_vocab *v, int32_t g, const char *m, size_t na, size_t n, uint64_t word) {
    if (g < 0 || g >= v->n || tok_len(v, g) != n) return 0;
    const char *t = tok_str(v, g);
    return n <= 8 ? tok_word(t, n) == word : q_text_eq(t, m, n, na, 1);
}

/* inserts merge rank (key from its pieces) at or after slot i; a repeated pair keeps its first
 * (lowest) rank, as ranks arrive in order */
static inline void mtab_put(const g4_vocab *v, uint64_t key, size_t i, int32_t rank) {
    if (v->mtab8) {
        const uint64_t pair = (key >> 32) << v->m_ib | (uint32_t)key;
        for (;; i = (i + 1) & v->mtab_mask) {
            uint64_t *m = &v->mtab8[i];
            if (*m == 0) { *m = ~(pair << v->m_rb | (uint64_t)rank); return; }
            if (~*m >> v->m_rb == pair) return;
        }
    }
    for (;; i = (i + 1) & v->mtab_mask) {
        tok_merge *m = &v->mtab[i];
        if (m->key == ~key) return;
        if (m->key == 0) { m->key = ~key; m->rank = rank; return; }
    }
}

static inline const void *mtab_slot(const g4_vocab *v, size_t i) {
    return v->mtab8 ? (const void *)&v->mtab8[i] : (const void *)&v->mtab[i];
}

static inline size_t mtab_home(const g4_vocab *v, uint64_t key) {
    return (size_t)(tok_mix(key * 0x9e3779b97f4a7c15ull) & v->mtab_mask);
}

static void merge_resolve(void *ctx, int64_t i0, int64_t i1, int thread) {
    const merge_job *J = ctx;
    const g4_vocab *v = J->v;
    const tok_slot *tab = v->tab;
    const uint32_t mask = v->tab_mask;
    /* The result of a merge is nearly always the result of the merge before it or the token
     * after that (BPE vocabularies list tokens in merge order: 99.7% of the real vocabulary's
     * merges), so it is guessed and the guess compared with the text, in order (stage 1).
     * Without duplicate texts that is the id the text lookup gives; otherwise, or when the
     * guess fails, the text is looked up. The two pieces are hash lookups, each a likely cache
     * miss on the real vocabulary, in a three-stage pipeline: merge r is hashed and its slots
     * prefetched (stage 1); DA merges later its slots are probed, and where a text longer
     * than 8 bytes is to be compared its text is prefetched (stage 2); DB merges after that
     * the texts are compared (stage 3) and, inserting directly, the merge table slot is
     * prefetched; DC merges after that the merge is inserted (stage 4). */
    enum { R = 32, DA = 8, DB = 8, DC = 8 }; /* R >= DA + DB + DC */
    merge_q q[R];
    int32_t last = -1; /* the last result found */
    const int64_t end = i1 + DA + DB + (J->direct ? DC : 0);
    for (int64_t r = i0; r < end; r++) {
        int64_t r4 = r - DA - DB - DC, r3 = r - DA - DB, r2 = r - DA;
        if (J->direct && r4 >= i0) { /* stage 4 */
            merge_q *e = &q[r4 % R];
            if (e->mk != UINT64_MAX) mtab_put(v, e->mk, e->mi, (int32_t)r4);
        }
        if (r3 >= i0 && r3 < i1) { /* stage 3 */
            merge_q *e = &q[r3 % R];
            if (e->ok)
                for (int k = 0; k < 2; k++) {
                    if (e->id[k] != -2) continue;
                    const char *m = k ? e->s + e->nl + 1 : e->s;
                    size_t n = k ? e->nr : e->nl;
                    const tok_slot *sl = &tab[e->at[k]];
                    e->id[k] = q_text_eq(v->text + (sl->key >> 32), m, n, 0, 0)
                                   ? sl->id : q_probe(v, tab, mask, m, n, 0, 0, e->key[k], (e->at[k] + 1) & mask);
                }
            int32_t l = e->ok ? e->id[0] : -1, rt = e->ok ? e->id[1] : -1;
            uint64_t key = UINT64_MAX;
            if (l < 0 || rt < 0) {
                if (r3 < J->first_bad[thread]) J->first_bad[thread] = r3;
            } else {
                key = (uint64_t)(uint32_t)l << 32 | (uint32_t)rt;
            }
            if (J->direct) {
                e->mk = key;
                if (key != UINT64_MAX) {
                    e->mi = mtab_home(v, key);
                    __builtin_prefetch(mtab_slot(v, e->mi), 1);
                }
            } else {
                J->keys[r3] = key;
            }
        }
        if (r2 >= i0 && r2 < i1) { /* stage 2 */
            merge_q *e = &q[r2 % R];
            if (e->ok)
                for (int k = 0; k < 2; k++) {
                    size_t n = k ? e->nr : e->nl;
                    uint64_t key = e->key[k], km = n <= 8 ? ~(uint64_t)0 : 0xffffffffu;
                    uint32_t i = (uint32_t)e->h[k] & mask;
                    const tok_slot *sl;
                    for (;; i = (i + 1) & mask) { /* stops at a slot that may hold the text, or an empty one */
                        sl = &tab[i];
                        if ((sl->len == n && ((sl->key ^ key) & km) == 0) | (sl->len == 0)) break;
                    }
                    int32_t id = sl->len ? sl->id : -1;
                    int vfy = n > 8 && id >= 0;
                    const char *t = v->text + (vfy ? sl->key >> 32 : 0);
                    __builtin_prefetch(t);
                    __builtin_prefetch(t + (vfy ? n - 1 : 0));
                    e->id[k] = vfy ? -2 : id;
                    e->at[k] = i;
                }
        }
        if (r < i1) { /* stage 1 */
            merge_q *e = &q[r % R];
            int32_t res = -1;
            uint64_t len;
            const char *m = gguf_arr_str(J->kv, (uint64_t)r, &len);
            if (len >= 3 && len <= 16 && m + 32 <= J->blob_end && J->guess) {
                res = stage1_short(v, e, m, (size_t)len, last);
            } else {
                const char *rp;
                e->ok = merge_split(J->kv, (size_t)r, &e->s, &e->nl, &rp, &e->nr);
                if (e->ok) {
                    e->h[0] = tok_hash(e->s, e->nl, &e->key[0]);
                    e->h[1] = tok_hash(rp, e->nr, &e->key[1]);
                    size_t nl = e->nl, n = nl + e->nr;
                    uint64_t word = n <= 8 ? tok_word(e->s, nl) | tok_word(rp, e->nr) << (8 * nl) : 0;
                    res = -2;
                    if (J->guess && cat_is(v, last, e->s, nl, n, word)) res = last;
                    else if (J->guess && cat_is(v, last + 1, e->s, nl, n, word)) res = last + 1;
                }
            }
            if (e->ok) {
                for (int k = 0; k < 2; k++) __builtin_prefetch(&tab[(uint32_t)e->h[k] & mask]);
                if (res == -2) { /* not guessed */
                    size_t nl = e->nl, n = nl + e->nr;
                    uint64_t key, h = q_hash(e->s, n, nl, 1, &key);
                    res = q_probe(v, tab, mask, e->s, n, nl, 1, key, (uint32_t)h & mask);
                }
                J->res[r] = res;
                if (res >= 0) last = res;
            }
        }
    }
}

static g4_status load_merges(g4_vocab *v, const gguf_file *f, g4_pool *pool, char *err, size_t errlen) {
    const char *fn = gguf_name(f);
    const gguf_kv *kv = NULL;
    g4_status st = gguf_get_arr(f, "tokenizer.ggml.merges", 1, 1u << GGUF_STRING, &kv, NULL, err, errlen);
    if (st != G4_OK) return st;
    if (kv->n > TOK_MAX_COUNT)
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.merges: %llu merges (limit %u)", fn,
                       (unsigned long long)kv->n, TOK_MAX_COUNT);
    size_t nm = (size_t)kv->n; /* the tables in v->block were sized for this count (load_tokens) */
    G4_ASSERT((nm == 0 || v->merge_id) && v->mtab_mask + 1 == pow2_at_least((uint64_t)nm * 2));
    v->n_merges = (int32_t)nm;
    int nt = pool_n_threads(pool), direct = nt == 1;
    uint64_t *keys = nm && !direct ? zeroed_block(&v->al, nm * sizeof *keys) : NULL;
    int64_t *first_bad = g4_malloc(&v->al, (size_t)nt * sizeof *first_bad);
    if ((nm && !direct && !keys) || !first_bad) {
        g4_free(&v->al, keys, nm * sizeof *keys);
        g4_free(&v->al, first_bad, (size_t)nt * sizeof *first_bad);
        return g4_errf(G4_ERR_NOMEM, err, errlen, "%s: out of memory for %zu merges", fn, nm);
    }
    for (int t = 0; t < nt; t++) first_bad[t] = INT64_MAX;
    merge_job job = {v, kv, keys, v->merge_id, first_bad, !v->n_dup, direct, kv->sblob + (nm ? kv->soff[nm] : 0)};
    if (direct) merge_resolve(&job, 0, (int64_t)nm, 0);
    else pool_for(pool, (int64_t)nm, 4096, merge_resolve, &job);
    int64_t bad = INT64_MAX;
    for (int t = 0; t < nt; t++) if (first_bad[t] < bad) bad = first_bad[t];
    g4_free(&v->al, first_bad, (size_t)nt * sizeof *first_bad);
    if (bad != INT64_MAX) { /* the lowest bad rank, described as a serial pass would */
        g4_free(&v->al, keys, nm * sizeof *keys);
        const char *s, *rp;
        size_t nl, nr;
        char e[64];
        uint64_t len;
        if (!merge_split(kv, (size_t)bad, &s, &nl, &rp, &nr)) {
            s = gguf_arr_str(kv, (size_t)bad, &len);
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.merges[%lld] '%s': not two pieces "
                           "separated by one space", fn, (long long)bad, esc(s, (size_t)len, e, sizeof e));
        }
        int left_ok = tok_find(v, s, nl) >= 0;
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.merges[%lld] '%s': %s piece is not a token",
                       fn, (long long)bad, esc(s, nl + nr + 1, e, sizeof e), left_ok ? "right" : "left");
    }
    if (!direct) { /* insert in rank order: a duplicate pair keeps its first (lowest) rank */
        enum { BLK = 64 };
        size_t mi[BLK];
        for (size_t r0 = 0; r0 < nm; r0 += BLK) {
            size_t nb = nm - r0 < BLK ? nm - r0 : BLK;
            for (size_t j = 0; j < nb; j++) {
                mi[j] = mtab_home(v, keys[r0 + j]);
                __builtin_prefetch(mtab_slot(v, mi[j]), 1);
            }
            for (size_t j = 0; j < nb; j++) mtab_put(v, keys[r0 + j], mi[j], (int32_t)(r0 + j));
        }
    }
    g4_free(&v->al, keys, nm * sizeof *keys);
    return G4_OK;
}

/* ==== Special ids, end of generation, special-token candidates ==== */

static g4_status get_id(g4_vocab *v, const gguf_file *f, const char *key, int32_t *out, char *err, size_t errlen) {
    *out = -1;
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return G4_OK; /* gemma4 has no default special ids */
    int64_t id;
    if (kv->type == GGUF_UINT32) id = kv->v.u32;
    else if (kv->type == GGUF_INT32) id = kv->v.i32;
    else
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: %s: type %s, expected u32", gguf_name(f), key, gguf_vtype_name(kv->type));
    if (id < 0 || id >= v->n)
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: %s = %lld: outside the vocabulary [0, %d)", gguf_name(f), key,
                       (long long)id, v->n);
    *out = (int32_t)id;
    return G4_OK;
}

static void add_eog(g4_vocab *v, int32_t id) {
    if (id < 0) return;
    for (int i = 0; i < v->n_eog; i++) if (v->eog[i] == id) return;
    if (v->n_eog < TOK_MAX_EOG) v->eog[v->n_eog++] = id;
}

static int spec_cmp_len(const g4_vocab *v, int32_t a, int32_t b) {
    uint32_t la = tok_len(v, a), lb = tok_len(v, b);
    if (la != lb) return la > lb ? -1 : 1;
    return a < b ? -1 : a > b;
}

static g4_status load_specials(g4_vocab *v, const gguf_file *f, char *err, size_t errlen) {
    const char *fn = gguf_name(f);
    g4_status st;
    if ((st = get_id(v, f, "tokenizer.ggml.bos_token_id", &v->bos, err, errlen)) != G4_OK) return st;
    if ((st = get_id(v, f, "tokenizer.ggml.eos_token_id", &v->eos, err, errlen)) != G4_OK) return st;
    if ((st = get_id(v, f, "tokenizer.ggml.unknown_token_id", &v->unk, err, errlen)) != G4_OK) return st;
    if ((st = get_id(v, f, "tokenizer.ggml.padding_token_id", &v->pad, err, errlen)) != G4_OK) return st;
    if ((st = get_id(v, f, "tokenizer.ggml.mask_token_id", &v->mask, err, errlen)) != G4_OK) return st;
    if ((st = get_id(v, f, "tokenizer.ggml.eot_token_id", &v->eot, err, errlen)) != G4_OK) return st;
    if ((st = get_id(v, f, "tokenizer.ggml.eom_token_id", &v->eom, err, errlen)) != G4_OK) return st;
    int add_bos = 1, found = 0;
    if ((st = gguf_get_bool(f, "tokenizer.ggml.add_bos_token", 0, &add_bos, &found, err, errlen)) != G4_OK) return st;
    if (found && !add_bos)
        vlog(v, G4_LOG_INFO, "%s: tokenizer.ggml.add_bos_token = false overridden: gemma4 always adds BOS", fn);
    v->add_bos = 1;
    if (v->bos < 0)
        return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.bos_token_id: missing, but gemma4 always adds BOS", fn);

    /* end of generation: the declared ids plus the gemma4 texts (llama.cpp llama-vocab.cpp) */
    static const char *const eog_text[] = {"<eos>", "<turn|>", "<|tool_response>"};
    add_eog(v, v->eos);
    add_eog(v, v->eot);
    add_eog(v, v->eom);
    for (size_t k = 0; k < sizeof eog_text / sizeof eog_text[0]; k++) {
        int32_t id = tok_find(v, eog_text[k], strlen(eog_text[k]));
        if (id < 0) continue;
        add_eog(v, id);
        if (v->type[id] != TT_CONTROL) {
            if (v->type[id] != TT_USER)
                vlog(v, G4_LOG_WARN, "%s: token %d '%s' has type %d; treated as a control token", fn, id, eog_text[k], v->type[id]);
            v->type[id] = TT_CONTROL;
        }
    }

    /* candidates for special-token splitting */
    int32_t ns = 0;
    for (int32_t i = 0; i < v->n; i++) {
        int t = v->type[i];
        if ((t == TT_CONTROL || t == TT_USER || t == TT_UNKNOWN) && tok_len(v, i) > 0) ns++;
    }
    if (ns == 0) return G4_OK;
    v->spec = g4_malloc(&v->al, (size_t)ns * sizeof *v->spec);
    if (v->spec) v->n_spec = ns;
    uint32_t sz = pow2_at_least((uint64_t)ns * 2);
    v->stab = g4_calloc(&v->al, sz, sizeof *v->stab); /* empty slots are zero */
    if (v->stab) v->stab_mask = sz - 1;
    if (!v->spec || !v->stab) return g4_errf(G4_ERR_NOMEM, err, errlen, "%s: out of memory for special tokens", fn);
    ns = 0;
    for (int32_t i = 0; i < v->n; i++) {
        int t = v->type[i];
        if ((t == TT_CONTROL || t == TT_USER || t == TT_UNKNOWN) && tok_len(v, i) > 0) {
            v->spec[ns++] = i;
            uint64_t key, h = tok_hash(tok_str(v, i), tok_len(v, i), &key);
            tab_put(v, v->stab, v->stab_mask, i, key, h);
        }
    }
    /* insertion sort is too slow for hostile vocabularies: merge sort via a temp buffer */
    int32_t *tmp = g4_malloc(&v->al, (size_t)ns * sizeof *tmp);
    if (!tmp) return g4_errf(G4_ERR_NOMEM, err, errlen, "%s: out of memory for special tokens", fn);
    for (int32_t w = 1; w < ns; w *= 2) {
        for (int32_t lo = 0; lo < ns; lo += 2 * w) {
            int32_t mid = lo + w < ns ? lo + w : ns, hi = lo + 2 * w < ns ? lo + 2 * w : ns;
            int32_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = spec_cmp_len(v, v->spec[a], v->spec[b]) <= 0 ? v->spec[a++] : v->spec[b++];
            while (a < mid) tmp[o++] = v->spec[a++];
            while (b < hi) tmp[o++] = v->spec[b++];
        }
        memcpy(v->spec, tmp, (size_t)ns * sizeof *tmp);
    }
    g4_free(&v->al, tmp, (size_t)ns * sizeof *tmp);
    return G4_OK;
}

/* ==== suppress_tokens, precompiled_charsmap, chat template ==== */

/* Known markers (gemma4-architecture.md §7). Template sources write these as Jinja string
 * literals, so "\n" appears as a backslash and an 'n'. */
void tok_chat_markers(const char *tmpl, size_t len, int *think_nl, int *empty_thought, int *merge_model) {
    static const char nl[] = "'<|think|>\\n'", thought[] = "<|channel>thought\\n<channel|>",
                      merge[] = "continue_same_model_turn";
    *think_nl = memmem(tmpl, len, nl, sizeof nl - 1) != NULL;
    *empty_thought = memmem(tmpl, len, thought, sizeof thought - 1) != NULL;
    *merge_model = memmem(tmpl, len, merge, sizeof merge - 1) != NULL;
}

/* How the template writes tools (chat.h CHAT_T_*). A template without tool syntax gets the
 * newest official one's rendering (the 31B-it template's). */
unsigned tok_chat_tool_markers(const char *t, size_t len) {
#define HAS(lit) (memmem(t, len, lit, sizeof lit - 1) != NULL)
    static const char call[] = "'<|tool_call>call:'", openai[] = "{#- OpenAI Chat Completions:", old[] = ",items:{",
                      r1[] = "message['reasoning_content'] and loop.index0 > ns.last_user_message",
                      r2[] = "message.get('reasoning') or message.get('reasoning_content')",
                      join[] = "ns.prev_message_type == 'tool_response' and message['tool_calls']";
    if (!HAS(call)) return CHAT_T_REASON_V2;
    return (HAS(openai) ? 0u : CHAT_T_LEGACY) | (HAS(old) ? CHAT_T_PARAMS_OLD : 0u) | (HAS(r1) ? CHAT_T_REASON_V1 : 0u) |
           (HAS(r2) ? CHAT_T_REASON_V2 : 0u) | (HAS(join) ? CHAT_T_JOIN_CALLS : 0u);
#undef HAS
}

static g4_status load_extras(g4_vocab *v, const gguf_file *f, char *err, size_t errlen) {
    const char *fn = gguf_name(f);
    const gguf_kv *kv = NULL;
    int found = 0;
    g4_status st = gguf_get_arr(f, "tokenizer.ggml.suppress_tokens", 0, 1u << GGUF_INT32, &kv, &found, err, errlen);
    if (st != G4_OK) return st;
    if (found && kv->n) {
        const int32_t *ids = kv->arr;
        size_t n_ok = 0, n_bad = 0;
        for (uint64_t i = 0; i < kv->n; i++) (ids[i] >= 0 && ids[i] < v->n) ? n_ok++ : n_bad++;
        if (n_bad)
            vlog(v, G4_LOG_WARN, "%s: tokenizer.ggml.suppress_tokens: %zu ids outside [0, %d) dropped", fn, n_bad, v->n);
        if (n_ok) {
            v->suppress = g4_malloc(&v->al, n_ok * sizeof *v->suppress);
            if (!v->suppress) return g4_errf(G4_ERR_NOMEM, err, errlen, "%s: out of memory", fn);
            for (uint64_t i = 0; i < kv->n; i++)
                if (ids[i] >= 0 && ids[i] < v->n) v->suppress[v->n_suppress++] = ids[i];
        }
    }

    /* unused by gemma4, but a blob shorter than its header is a malformed file (#47) */
    kv = gguf_find(f, "tokenizer.ggml.precompiled_charsmap");
    if (kv) {
        if (kv->type != GGUF_ARRAY || (kv->arr_type != GGUF_UINT8 && kv->arr_type != GGUF_INT8))
            return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.precompiled_charsmap: expected an array of u8", fn);
        if (kv->n > 0) {
            const uint8_t *p = kv->arr;
            uint64_t xcda = kv->n >= 4 ? (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 : 0;
            if (kv->n < 4 || xcda > kv->n - 4)
                return g4_errf(G4_ERR_FORMAT, err, errlen, "%s: tokenizer.ggml.precompiled_charsmap: %llu bytes, "
                               "shorter than its header", fn, (unsigned long long)kv->n);
        }
    }

    const char *tmpl = NULL;
    uint64_t tlen = 0;
    st = gguf_get_str(f, "tokenizer.chat_template", 0, &tmpl, &tlen, &found, err, errlen);
    if (st != G4_OK) return st;
    /* defaults without a template: the template inside llama.cpp's gemma-4 vocab file */
    v->chat_think_nl = 0;
    v->chat_empty_thought = 1;
    v->chat_tools = CHAT_T_LEGACY | CHAT_T_PARAMS_OLD;
    if (found && tlen > TOK_MAX_TMPL) {
        vlog(v, G4_LOG_WARN, "%s: tokenizer.chat_template: %llu bytes (limit %u), ignored", fn, (unsigned long long)tlen, TOK_MAX_TMPL);
    } else if (found) {
        v->has_template = 1;
        tok_chat_markers(tmpl, (size_t)tlen, &v->chat_think_nl, &v->chat_empty_thought, &v->chat_merge_model);
        v->chat_tools = tok_chat_tool_markers(tmpl, (size_t)tlen);
    }
    return G4_OK;
}

/* ==== Entry point ==== */

g4_status tok_vocab_load(g4_vocab **out, const gguf_file *f, const g4_allocator *al, g4_log_fn log, void *log_ud,
                         char *err, size_t errlen) {
    return tok_vocab_load_pool(out, f, al, NULL, log, log_ud, err, errlen);
}

g4_status tok_vocab_load_pool(g4_vocab **out, const gguf_file *f, const g4_allocator *al, g4_pool *pool, g4_log_fn log,
                              void *log_ud, char *err, size_t errlen) {
    return tok_vocab_load_opts(out, f, al, pool, 0, log, log_ud, err, errlen);
}

g4_status tok_vocab_load_opts(g4_vocab **out, const gguf_file *f, const g4_allocator *al, g4_pool *pool, unsigned opts,
                              g4_log_fn log, void *log_ud, char *err, size_t errlen) {
    if (!out) return g4_errf(G4_ERR_ARG, err, errlen, "tok_vocab_load: out is NULL");
    *out = NULL;
    if (!f || !al) return g4_errf(G4_ERR_ARG, err, errlen, "tok_vocab_load: NULL file or allocator");
    g4_vocab *v = g4_calloc(al, 1, sizeof *v);
    if (!v) return g4_errf(G4_ERR_NOMEM, err, errlen, "%s: out of memory", gguf_name(f));
    v->al = *al;
    v->log = log;
    v->log_ud = log_ud;
    v->bos = v->eos = v->unk = v->pad = v->mask = v->eot = v->eom = -1;

    const char *model = NULL;
    uint64_t mlen = 0;
    g4_status st = gguf_get_str(f, "tokenizer.ggml.model", 1, &model, &mlen, NULL, err, errlen);
    if (st == G4_OK && (mlen != 6 || memcmp(model, "gemma4", 6) != 0)) {
        char e[64];
        st = g4_errf(G4_ERR_UNSUPPORTED, err, errlen, "%s: tokenizer.ggml.model = '%s': only 'gemma4' is supported",
                     gguf_name(f), esc(model, (size_t)mlen, e, sizeof e));
    }
    if (st == G4_OK) {
        memcpy(v->model, model, (size_t)mlen);
        st = load_tokens(v, f, opts, err, errlen);
    }
    if (st == G4_OK) build_text_table(v, f);
    if (st == G4_OK) st = build_byte_table(v, f, err, errlen);
    if (st == G4_OK) st = load_merges(v, f, pool, err, errlen);
    if (st == G4_OK) st = load_specials(v, f, err, errlen);
    if (st == G4_OK) st = load_extras(v, f, err, errlen);
    if (st != G4_OK) {
        tok_vocab_free(v);
        return st;
    }
    *out = v;
    return G4_OK;
}

/* ==== Accessors ==== */

int32_t tok_n_vocab(const g4_vocab *v) { return v ? v->n : 0; }
int32_t tok_bos(const g4_vocab *v) { return v ? v->bos : -1; }
int32_t tok_eos(const g4_vocab *v) { return v ? v->eos : -1; }
const char *tok_model_name(const g4_vocab *v) { return v ? v->model : ""; }

int tok_is_eog(const g4_vocab *v, int32_t id) {
    if (!v) return 0;
    for (int i = 0; i < v->n_eog; i++) if (v->eog[i] == id) return 1;
    return 0;
}

const int32_t *tok_suppress(const g4_vocab *v, size_t *n) {
    *n = v ? v->n_suppress : 0;
    return v ? v->suppress : NULL;
}

unsigned tok_chat_tools(const g4_vocab *v) { return v ? v->chat_tools : CHAT_T_LEGACY | CHAT_T_PARAMS_OLD; }

void tok_chat_variant(const g4_vocab *v, int *think_nl, int *empty_thought, int *merge_model) {
    *think_nl = v ? v->chat_think_nl : 0;
    *empty_thought = v ? v->chat_empty_thought : 1;
    *merge_model = v ? v->chat_merge_model : 0;
}
