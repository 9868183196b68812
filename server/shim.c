/* shim.c - TEMPORARY: see shim.h. Sequential, not batched. */
#include "shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct g4_batch {
    g4_model *m;
    char      err[320];
};

g4_status g4_batch_create(g4_batch **out, g4_model *m, const g4_batch_opts *o, char *err, size_t errlen) {
    (void)o;
    *out = NULL;
    g4_batch *b = calloc(1, sizeof *b);
    if (!b) {
        if (err && errlen) snprintf(err, errlen, "batch: out of memory");
        return G4_ERR_NOMEM;
    }
    b->m = m;
    *out = b;
    return G4_OK;
}

void g4_batch_free(g4_batch *b) { free(b); }

g4_status g4_batch_eval(g4_batch *b, g4_session *const *s, const int32_t *const *tok, const size_t *n_tok, size_t n) {
    b->err[0] = 0;
    /* all-or-nothing like the real call is not possible sequentially: the first failure is
     * reported and the sessions before it have advanced. The scheduler only evaluates
     * inputs it has checked (ids, context room), so this path is for internal faults. */
    for (size_t i = 0; i < n; i++) {
        if (!n_tok[i]) continue;
        g4_status st = g4_session_eval(s[i], tok[i], n_tok[i]);
        if (st != G4_OK) {
            snprintf(b->err, sizeof b->err, "session %zu: %s", i, g4_session_errmsg(s[i]));
            return st;
        }
    }
    return G4_OK;
}

const char *g4_batch_errmsg(const g4_batch *b) { return b->err; }

int32_t g4_session_truncate(g4_session *s, int32_t n_keep) {
    int32_t n = g4_session_n_past(s);
    if (n_keep >= n) return n;
    g4_session_reset(s);
    return 0;
}
