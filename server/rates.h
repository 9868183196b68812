/* rates.h - prompt and decode rates over the last minute, for /metrics (server/rates.c):
 * the scheduler adds each step; readers get sums over one-second buckets. */
#ifndef G4_SERVER_RATES_H
#define G4_SERVER_RATES_H

#include <stdint.h>

enum { RATES_WINDOW = 60 }; /* seconds */

typedef struct rates_bucket {
    int64_t  sec;                      /* whole seconds of the monotonic clock; -1 = empty */
    uint64_t prompt_tok, gen_tok, requests;
    double   prompt_s, decode_s;       /* step time: steps with prompt tokens / decode-only steps */
} rates_bucket;

typedef struct rates { rates_bucket b[RATES_WINDOW]; } rates;

typedef struct rates_sum {
    double   window_s;                 /* seconds covered (up to RATES_WINDOW; less after a start) */
    uint64_t prompt_tok, gen_tok, requests;
    double   prompt_s, decode_s;
} rates_sum;

void rates_init(rates *r);
/* one step at time now: its duration, the prompt ids it evaluated, the tokens it generated */
void rates_step(rates *r, double now, double dt, uint64_t prompt_tok, uint64_t gen_tok);
void rates_request(rates *r, double now); /* a generation ended */
/* sums over the buckets of the last RATES_WINDOW seconds; since = when counting began */
void rates_get(const rates *r, double now, double since, rates_sum *out);

#endif
