/* shim.h - TEMPORARY stand-in for the batched-evaluation API of issue 13 (g4_batch_*,
 * g4_session_truncate), which the library is gaining in include/g4.h. Same names and
 * signatures as the lead's API, so the scheduler (slots.c) is written against the real
 * interface. Delete this file and shim.c when g4.h has them.
 *
 * What the shim does is NOT batching: g4_batch_eval evaluates the sessions one after another
 * with g4_session_eval, and g4_session_truncate keeps the cache only when nothing has to be
 * forgotten (otherwise it resets the session and returns 0, which the caller handles by
 * re-evaluating from there, as the real call's contract allows). */
#ifndef G4_SERVER_SHIM_H
#define G4_SERVER_SHIM_H

#include "g4.h"

typedef struct g4_batch g4_batch;
typedef struct g4_batch_opts { int32_t n_ubatch; /* rows per forward chunk, 0 = 128 */ } g4_batch_opts;
g4_status   g4_batch_create(g4_batch **out, g4_model *m, const g4_batch_opts *o, char *err, size_t errlen);
void        g4_batch_free(g4_batch *b);
g4_status   g4_batch_eval(g4_batch *b, g4_session *const *s, const int32_t *const *tok, const size_t *n_tok, size_t n);
const char *g4_batch_errmsg(const g4_batch *b);
int32_t     g4_session_truncate(g4_session *s, int32_t n_keep);

#endif
