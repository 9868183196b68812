/* reply.h - the chat answer as OpenAI fields (server/reply.c): content, reasoning_content and
 * tool_calls accumulated from the generated text through g4_reply, with the deltas of each
 * push for streaming. */
#ifndef G4_SERVER_REPLY_H
#define G4_SERVER_REPLY_H

#include "buf.h"
#include "g4.h"

typedef struct reply_call {
    char   id[32];   /* "call_..." */
    char  *name;     /* [name_len] */
    size_t name_len;
    char  *args;     /* [args_len] JSON object text */
    size_t args_len;
} reply_call;

typedef struct reply {
    g4_reply   *p;
    buf         content, reasoning;
    reply_call *calls;
    int         n_calls, cap_calls;
    unsigned    seq;
} reply;

typedef struct reply_delta {      /* what one reply_push added; borrowed from the reply */
    const char       *content, *reasoning;
    size_t            content_len, reasoning_len;
    const reply_call *calls;      /* [n_calls], call indices first_call... */
    int               first_call, n_calls;
} reply_delta;

int  reply_init(reply *r, int chat);
void reply_free(reply *r);
void reply_push(reply *r, const char *s, size_t n, int end, reply_delta *d);

#endif
