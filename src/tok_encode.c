/* tok_encode.c - gemma4 BPE encoding, token pieces and the streaming detokenizer.
 *
 * Owns: g4_tokenize, g4_token_to_piece, g4_detok_push/flush and their internal forms
 * (tok_encode, tok_piece). The vocabulary is immutable here; every call keeps its own
 * scratch buffers, so one g4_vocab serves any number of threads.
 *
 * Encoding follows gemma4-architecture.md §6.2 (llama.cpp v0.5.0 llama-vocab.cpp):
 *   1. split out special-token text, longest candidates first (control/unknown only with
 *      G4_TOK_PARSE_SPECIAL, user-defined always);
 *   2. in the remaining text, ' ' -> U+2581; decode UTF-8 as llama.cpp's unicode.cpp does
 *      (a byte that does not start a complete sequence becomes U+FFFD, overlongs are
 *      re-encoded in shortest form, > U+10FFFF becomes U+FFFD);
 *   3. pre-split into runs of '\n' and runs of everything else; a run of '\n' that is itself
 *      a token is emitted whole;
 *   4. BPE: one symbol per code point, repeatedly merge the adjacent pair with the lowest
 *      merge rank (leftmost on ties) - a binary heap keyed (rank, left index) with stale
 *      entries skipped on pop, over a doubly linked symbol list;
 *   5. a final symbol that is not a token falls back to its bytes' <0xXX> tokens.
 * Memory per call is O(longest run): about 48 bytes per code point of the longest run.
 */
#include "tok_impl.h"

#include <string.h>

/* ==== Scratch buffers ==== */

typedef struct frag { size_t start, len; int32_t id; } frag;   /* id -1 = raw text */
typedef struct sym  { int32_t id, len, prev, next; } sym;       /* len 0 = merged away */
typedef struct hent { int32_t rank, left, lid, rid; } hent;     /* candidate pair (left, next) */

typedef struct work {
    const g4_vocab *v;
    int32_t *out;            /* sink: at most cap ids are written, n counts all */
    size_t   cap, n;
    char    *run;            /* [run_cap] current run, re-encoded UTF-8 */
    size_t   run_cap, run_n;
    sym     *sym;            /* [sym_cap] one per code point of the run */
    size_t   sym_cap, sym_n;
    hent    *heap;           /* [heap_cap] */
    size_t   heap_cap, heap_n;
    frag    *fa, *fb;        /* special-token split: current and next fragment lists */
    size_t   fa_cap, fb_cap, fa_n, fb_n;
    int      nomem;
} work;

static int grow(const g4_allocator *al, void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / elem) return 0;
        nc *= 2;
    }
    void *q = al->fn(al->ud, *p, *cap * elem, nc * elem);
    if (!q) return 0;
    *p = q;
    *cap = nc;
    return 1;
}
#define GROW(w, field, capf, need) \
    (grow(&(w)->v->al, (void **)&(w)->field, &(w)->capf, (need), sizeof *(w)->field) || ((w)->nomem = 1, 0))

static void work_free(work *w) {
    const g4_allocator *al = &w->v->al;
    g4_free(al, w->run, w->run_cap);
    g4_free(al, w->sym, w->sym_cap * sizeof *w->sym);
    g4_free(al, w->heap, w->heap_cap * sizeof *w->heap);
    g4_free(al, w->fa, w->fa_cap * sizeof *w->fa);
    g4_free(al, w->fb, w->fb_cap * sizeof *w->fb);
}

static inline void emit(work *w, int32_t id) {
    if (w->n < w->cap) w->out[w->n] = id;
    w->n++;
}

/* ==== BPE over one run ==== */

static inline int hless(const hent *a, const hent *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(work *w, int32_t left, int32_t right) {
    const sym *s = w->sym;
    int32_t lid = s[left].id, rid = s[right].id;
    if (lid < 0 || rid < 0) return;
    int32_t rank = tok_merge_find(w->v, lid, rid);
    if (rank < 0) return;
    if (!GROW(w, heap, heap_cap, w->heap_n + 1)) return;
    hent e = {rank, left, lid, rid};
    size_t i = w->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hless(&e, &w->heap[p])) break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = e;
}

static hent heap_pop(work *w) {
    hent top = w->heap[0], last = w->heap[--w->heap_n];
    size_t n = w->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && hless(&w->heap[c + 1], &w->heap[c])) c++;
        if (!hless(&w->heap[c], &last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

static void bpe_run(work *w, int all_nl) {
    const g4_vocab *v = w->v;
    size_t n = w->sym_n;
    if (n == 0) return;
    if (all_nl) { /* PR #21343: a newline run that is a token stays whole */
        int32_t id = tok_find(v, w->run, w->run_n);
        if (id >= 0) { emit(w, id); return; }
    }
    sym *s = w->sym;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)w->run[off];
        s[i].id = s[i].len == 1 && c < 128 ? v->ascii_id[c] : tok_find(v, w->run + off, (size_t)s[i].len);
        s[i].prev = (int32_t)i - 1;
        s[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        off += (size_t)s[i].len;
    }
    w->heap_n = 0;
    for (size_t i = 0; i + 1 < n; i++) heap_push(w, (int32_t)i, (int32_t)i + 1);
    while (w->heap_n) {
        hent e = heap_pop(w);
        sym *l = &s[e.left];
        if (l->len == 0 || l->next < 0) continue;
        sym *r = &s[l->next];
        if (l->id != e.lid || r->id != e.rid) continue; /* stale: a neighbour changed */
        l->id = v->merge_id[e.rank];
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (l->next >= 0) s[l->next].prev = e.left;
        if (l->prev >= 0) heap_push(w, l->prev, e.left);
        if (l->next >= 0) heap_push(w, e.left, l->next);
    }
    off = 0;
    for (int32_t i = 0; i >= 0; i = s[i].next) { /* symbol 0 always survives */
        if (s[i].id >= 0) emit(w, s[i].id);
        else
            for (int32_t k = 0; k < s[i].len; k++) emit(w, v->byte_id[(unsigned char)w->run[off + (size_t)k]]);
        off += (size_t)s[i].len;
    }
}

/* ==== Text fragments: whitespace escape, UTF-8 decode, newline pre-split ==== */

/* llama.cpp unicode_cpt_from_utf8: lead byte decides the length, continuation bytes must be
 * 10xxxxxx, no overlong/surrogate check. Returns bytes consumed (0 = invalid at this byte). */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp) {
    unsigned char b = p[0];
    if (b < 0x80) { *cp = b; return 1; }
    if (!(b & 0x40)) return 0;
    if (!(b & 0x20)) {
        if (n < 2 || (p[1] & 0xc0) != 0x80) return 0;
        *cp = (uint32_t)(b & 0x1f) << 6 | (p[1] & 0x3f);
        return 2;
    }
    if (!(b & 0x10)) {
        if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80) return 0;
        *cp = (uint32_t)(b & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
        return 3;
    }
    if (!(b & 0x08)) {
        if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80) return 0;
        *cp = (uint32_t)(b & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 | (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
        return 4;
    }
    return 0;
}

static size_t utf8_encode(uint32_t cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xc0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static void encode_text(work *w, const char *text, size_t len) {
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0;
    int    cur_nl = 0;
    w->run_n = w->sym_n = 0;
    while (i < len) {
        uint32_t cp;
        size_t   adv = utf8_decode(p + i, len - i, &cp);
        if (adv == 0) { cp = 0xFFFD; adv = 1; }
        if (cp == ' ') cp = 0x2581;
        else if (cp > 0x10FFFF) cp = 0xFFFD; /* llama.cpp throws; gemma4.c [DECISION] */
        int is_nl = cp == '\n';
        if (is_nl != cur_nl && w->sym_n) {
            bpe_run(w, cur_nl);
            if (w->nomem) return;
            w->run_n = w->sym_n = 0;
        }
        cur_nl = is_nl;
        if (!GROW(w, run, run_cap, w->run_n + 4) || !GROW(w, sym, sym_cap, w->sym_n + 1)) return;
        size_t k = utf8_encode(cp, w->run + w->run_n);
        w->run_n += k;
        w->sym[w->sym_n++].len = (int32_t)k;
        i += adv;
    }
    bpe_run(w, cur_nl);
}

/* ==== Special-token split ==== */

static void push_frag(work *w, size_t start, size_t len, int32_t id) {
    if (!GROW(w, fb, fb_cap, w->fb_n + 1)) return;
    w->fb[w->fb_n++] = (frag){start, len, id};
}

/* Byte filters of one length group: a candidate position must match the first, second and
 * last byte of some special token of that length before the text is hashed. */
typedef struct bytes3 { uint8_t first[32], second[32], last[32]; int n_first; unsigned char only; } bytes3;
#define BIT_HAS(set, c) ((set)[(unsigned char)(c) >> 3] & (1u << ((unsigned char)(c) & 7)))
#define BIT_SET(set, c) ((set)[(unsigned char)(c) >> 3] |= (uint8_t)(1u << ((unsigned char)(c) & 7)))

/* Splits fragment f at every non-overlapping occurrence (left to right) of a candidate of
 * length L. */
static void split_frag(work *w, const char *text, const frag *f, uint32_t L, const bytes3 *b, int parse_special) {
    const g4_vocab *v = w->v;
    size_t p = f->start, seg = f->start, end = f->start + f->len;
    while (p + L <= end) {
        if (b->n_first == 1) {
            const char *q = memchr(text + p, b->only, end - L + 1 - p);
            if (!q) break;
            p = (size_t)(q - text);
        } else if (!BIT_HAS(b->first, text[p])) {
            p++;
            continue;
        }
        if ((L > 1 && !BIT_HAS(b->second, text[p + 1])) || !BIT_HAS(b->last, text[p + L - 1])) {
            p++;
            continue;
        }
        uint64_t key, h = tok_hash(text + p, L, &key);
        int32_t  id = tok_lookup(v, v->stab, v->stab_mask, text + p, L, key, h);
        if (id >= 0 && (parse_special || v->type[id] == TT_USER)) {
            if (p > seg) push_frag(w, seg, p - seg, -1);
            push_frag(w, p, L, id);
            p += L;
            seg = p;
        } else {
            p++;
        }
    }
    if (seg < end) push_frag(w, seg, end - seg, -1);
}

/* llama.cpp tokenizer_st_partition: candidates longest first, each splitting every raw-text
 * fragment at its non-overlapping occurrences. Candidates of equal length are searched in one
 * pass (their relative order is unspecified in llama.cpp too). Cost: one scan of the text per
 * distinct candidate length (about 10 for Gemma vocabularies). */
static void split_specials(work *w, const char *text, size_t len, int parse_special) {
    const g4_vocab *v = w->v;
    w->fa_n = 0;
    if (!GROW(w, fa, fa_cap, 1)) return;
    w->fa[w->fa_n++] = (frag){0, len, -1};
    for (int32_t gi = 0, gj; gi < v->n_spec && !w->nomem; gi = gj) {
        uint32_t L = tok_len(v, v->spec[gi]);
        bytes3   b;
        memset(&b, 0, sizeof b);
        for (gj = gi; gj < v->n_spec && tok_len(v, v->spec[gj]) == L; gj++) {
            int32_t id = v->spec[gj];
            if (!parse_special && v->type[id] != TT_USER) continue;
            const char *t = tok_str(v, id);
            if (!BIT_HAS(b.first, t[0])) { BIT_SET(b.first, t[0]); b.n_first++; b.only = (unsigned char)t[0]; }
            if (L > 1) BIT_SET(b.second, t[1]);
            BIT_SET(b.last, t[L - 1]);
        }
        if (b.n_first == 0 || L > len) continue;
        w->fb_n = 0;
        for (size_t k = 0; k < w->fa_n && !w->nomem; k++) {
            frag f = w->fa[k];
            if (f.id >= 0 || f.len < L) push_frag(w, f.start, f.len, f.id);
            else split_frag(w, text, &f, L, &b, parse_special);
        }
        frag *t = w->fa; w->fa = w->fb; w->fb = t;
        size_t tc = w->fa_cap; w->fa_cap = w->fb_cap; w->fb_cap = tc;
        w->fa_n = w->fb_n;
    }
}

/* ==== Encoding entry points ==== */

g4_status tok_encode(const g4_vocab *v, const char *text, size_t len, unsigned flags, int32_t *out, size_t cap,
                     size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!v || !n_out || (!text && len) || (!out && cap) || (flags & ~(unsigned)(G4_TOK_ADD_BOS | G4_TOK_PARSE_SPECIAL)))
        return G4_ERR_ARG;
    if (len > (size_t)INT32_MAX) return G4_ERR_ARG; /* symbol indices are int32 */
    work w;
    memset(&w, 0, sizeof w);
    w.v = v;
    w.out = out;
    w.cap = cap;
    if ((flags & G4_TOK_ADD_BOS) && v->bos >= 0) emit(&w, v->bos);
    if (len) {
        split_specials(&w, text, len, (flags & G4_TOK_PARSE_SPECIAL) != 0);
        for (size_t k = 0; k < w.fa_n && !w.nomem; k++) {
            if (w.fa[k].id >= 0) emit(&w, w.fa[k].id);
            else encode_text(&w, text + w.fa[k].start, w.fa[k].len);
        }
    }
    work_free(&w);
    if (w.nomem) return G4_ERR_NOMEM;
    *n_out = w.n;
    return w.n > cap ? G4_ERR_BUFFER : G4_OK;
}

g4_status g4_tokenize(const g4_model *m, const char *text, size_t len, unsigned flags, int32_t *out, size_t cap,
                      size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!m || !m->vocab) return G4_ERR_ARG;
    return tok_encode(m->vocab, text, len, flags, out, cap, n_out);
}

/* ==== Pieces ==== */

/* Where the bytes of token id come from: (p, n), with U+2581 -> ' ' when *unesc. */
static g4_status piece_ref(const g4_vocab *v, int32_t id, unsigned flags, const char **p, size_t *n, int *unesc,
                           char *byte) {
    if (!v || id < 0 || id >= v->n) return G4_ERR_ARG;
    *p = tok_str(v, id);
    *n = tok_len(v, id);
    *unesc = 0;
    switch (v->type[id]) {
    case TT_NORMAL: *unesc = 1; break;
    case TT_USER: break;
    case TT_BYTE: {
        const char *s = *p;
        int hi = s[3] <= '9' ? s[3] - '0' : (s[3] | 0x20) - 'a' + 10;
        int lo = s[4] <= '9' ? s[4] - '0' : (s[4] | 0x20) - 'a' + 10;
        *byte = (char)(hi * 16 + lo);
        *p = byte;
        *n = 1;
        break;
    }
    case TT_CONTROL:
    case TT_UNKNOWN:
        if (!(flags & G4_PIECE_SPECIAL)) *n = 0;
        break;
    default: *n = 0; break; /* unused */
    }
    return G4_OK;
}

static int is_wsp(const char *s, size_t i, size_t n) {
    return i + 2 < n && (unsigned char)s[i] == 0xe2 && (unsigned char)s[i + 1] == 0x96 && (unsigned char)s[i + 2] == 0x81;
}

g4_status tok_piece(const g4_vocab *v, int32_t id, unsigned flags, char *buf, size_t cap, size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!n_out || (!buf && cap)) return G4_ERR_ARG;
    const char *p;
    size_t n;
    int unesc;
    char byte;
    g4_status st = piece_ref(v, id, flags, &p, &n, &unesc, &byte);
    if (st != G4_OK) return st;
    size_t need = n;
    if (unesc)
        for (size_t i = 0; i < n; i++) if (is_wsp(p, i, n)) { need -= 2; i += 2; }
    *n_out = need;
    if (need > cap) return G4_ERR_BUFFER;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (unesc && is_wsp(p, i, n)) { buf[o++] = ' '; i += 2; }
        else buf[o++] = p[i];
    }
    return G4_OK;
}

g4_status g4_token_to_piece(const g4_model *m, int32_t tok, unsigned flags, char *buf, size_t cap, size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!m || !m->vocab) return G4_ERR_ARG;
    return tok_piece(m->vocab, tok, flags, buf, cap, n_out);
}

/* ==== Streaming detokenizer ====
 * Strict UTF-8 (no overlongs, surrogates or > U+10FFFF): complete sequences pass through,
 * each maximal invalid subsequence becomes one U+FFFD, an incomplete tail is held in d->pend
 * until the next push or the flush. The output is always valid UTF-8. */

typedef struct dsink { char *buf; size_t cap, o; } dsink;

static void put(dsink *s, const void *p, size_t n) {
    if (s->o + n > s->cap) { s->cap = s->o; return; } /* cut: nothing after this fits */
    memcpy(s->buf + s->o, p, n);
    s->o += n;
}
static const char fffd[3] = {(char)0xef, (char)0xbf, (char)0xbd};

static size_t utf8_need(unsigned char b) {
    if (b < 0x80) return 1;
    if (b >= 0xc2 && b <= 0xdf) return 2;
    if (b >= 0xe0 && b <= 0xef) return 3;
    if (b >= 0xf0 && b <= 0xf4) return 4;
    return 0;
}

static void feed(g4_detok *d, dsink *s, unsigned char b) {
    for (;;) {
        if (d->n_pend <= 0 || d->n_pend > 3) {
            d->n_pend = 0;
            size_t k = utf8_need(b);
            if (k == 1) put(s, &b, 1);
            else if (k == 0) put(s, fffd, 3);
            else { d->pend[0] = b; d->n_pend = 1; }
            return;
        }
        unsigned char lead = d->pend[0], lo = 0x80, hi = 0xbf;
        if (d->n_pend == 1) {
            if (lead == 0xe0) lo = 0xa0;
            else if (lead == 0xed) hi = 0x9f;
            else if (lead == 0xf0) lo = 0x90;
            else if (lead == 0xf4) hi = 0x8f;
        }
        if (b >= lo && b <= hi) {
            d->pend[d->n_pend++] = b;
            if ((size_t)d->n_pend == utf8_need(lead)) { put(s, d->pend, (size_t)d->n_pend); d->n_pend = 0; }
            return;
        }
        put(s, fffd, 3); /* the held bytes were an incomplete sequence; b starts afresh */
        d->n_pend = 0;
    }
}

size_t g4_detok_push(g4_detok *d, const g4_model *m, int32_t tok, unsigned flags, char *buf, size_t cap) {
    if (!d || !m || !m->vocab || (!buf && cap)) return 0;
    const char *p;
    size_t n;
    int unesc;
    char byte;
    if (piece_ref(m->vocab, tok, flags, &p, &n, &unesc, &byte) != G4_OK) return 0;
    dsink s = {buf, cap, 0};
    for (size_t i = 0; i < n; i++) {
        if (unesc && is_wsp(p, i, n)) { feed(d, &s, ' '); i += 2; }
        else feed(d, &s, (unsigned char)p[i]);
    }
    return s.o;
}

size_t g4_detok_flush(g4_detok *d, char *buf, size_t cap) {
    if (!d) return 0;
    size_t o = 0;
    if (d->n_pend > 0 && buf && cap >= 3) { memcpy(buf, fffd, 3); o = 3; }
    d->n_pend = 0;
    return o;
}
