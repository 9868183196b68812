/* rates.c - one-second buckets over the last minute (rates.h). Not thread-safe: the
 * scheduler calls it under its lock. */
#include "rates.h"

#include <string.h>

void rates_init(rates *r) {
    memset(r, 0, sizeof *r);
    for (int i = 0; i < RATES_WINDOW; i++) r->b[i].sec = -1;
}

static rates_bucket *at(rates *r, double now) {
    int64_t sec = (int64_t)now;
    rates_bucket *b = &r->b[(uint64_t)sec % RATES_WINDOW];
    if (b->sec != sec) {
        memset(b, 0, sizeof *b);
        b->sec = sec;
    }
    return b;
}

void rates_step(rates *r, double now, double dt, uint64_t prompt_tok, uint64_t gen_tok) {
    rates_bucket *b = at(r, now);
    b->prompt_tok += prompt_tok;
    b->gen_tok += gen_tok;
    if (prompt_tok) b->prompt_s += dt; else b->decode_s += dt;
}

void rates_request(rates *r, double now) { at(r, now)->requests++; }

void rates_get(const rates *r, double now, double since, rates_sum *o) {
    memset(o, 0, sizeof *o);
    int64_t sec = (int64_t)now;
    for (int i = 0; i < RATES_WINDOW; i++) {
        const rates_bucket *b = &r->b[i];
        if (b->sec < 0 || b->sec > sec || b->sec <= sec - RATES_WINDOW) continue;
        o->prompt_tok += b->prompt_tok;
        o->gen_tok += b->gen_tok;
        o->requests += b->requests;
        o->prompt_s += b->prompt_s;
        o->decode_s += b->decode_s;
    }
    double w = now - since;
    o->window_s = w < RATES_WINDOW ? (w > 0 ? w : 0) : RATES_WINDOW;
}
