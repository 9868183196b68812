/* reply.c - OpenAI answer fields from g4_reply's split (reply.h). */
#include "reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int reply_init(reply *r, int chat) {
    (void)chat;
    memset(r, 0, sizeof *r);
    r->seq = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)r;
    return g4_reply_create(&r->p) == G4_OK ? 0 : -1;
}

void reply_free(reply *r) {
    g4_reply_free(r->p);
    buf_free(&r->content);
    buf_free(&r->reasoning);
    for (int i = 0; i < r->n_calls; i++) { free(r->calls[i].name); free(r->calls[i].args); }
    free(r->calls);
    memset(r, 0, sizeof *r);
}

static int on_piece(void *ud, int kind, const char *s, size_t n, const char *name, size_t nl) {
    reply *r = ud;
    if (kind == G4_REPLY_CONTENT) buf_put(&r->content, s, n);
    else if (kind == G4_REPLY_REASONING) buf_put(&r->reasoning, s, n);
    else {
        if (r->n_calls == r->cap_calls) {
            int nc = r->cap_calls ? r->cap_calls * 2 : 4;
            reply_call *np = realloc(r->calls, (size_t)nc * sizeof *np);
            if (!np) return 1;
            r->calls = np;
            r->cap_calls = nc;
        }
        reply_call *c = &r->calls[r->n_calls];
        memset(c, 0, sizeof *c);
        c->name = malloc(nl + 1);
        c->args = malloc(n + 1);
        if (!c->name || !c->args) { free(c->name); free(c->args); return 1; }
        memcpy(c->name, name, nl);
        c->name[nl] = 0;
        c->name_len = nl;
        memcpy(c->args, s, n);
        c->args[n] = 0;
        c->args_len = n;
        unsigned x = r->seq++ * 2654435761u;
        snprintf(c->id, sizeof c->id, "call_%08x%04x", x, (unsigned)r->n_calls);
        r->n_calls++;
    }
    return 0;
}

void reply_push(reply *r, const char *s, size_t n, int end, reply_delta *d) {
    size_t c0 = r->content.len, r0 = r->reasoning.len;
    int k0 = r->n_calls;
    if (r->p) g4_reply_push(r->p, s, n, end, on_piece, r);
    else buf_put(&r->content, s, n);
    d->content = r->content.p ? r->content.p + c0 : "";
    d->content_len = r->content.len - c0;
    d->reasoning = r->reasoning.p ? r->reasoning.p + r0 : "";
    d->reasoning_len = r->reasoning.len - r0;
    d->first_call = k0;
    d->n_calls = r->n_calls - k0;
    d->calls = r->calls ? r->calls + k0 : NULL;
}
