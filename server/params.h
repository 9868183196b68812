/* params.h - OpenAI request fields, validated (server/params.c): sampling, limits, stop
 * strings, log probabilities, streaming options, thinking; and the prompt ids of a chat or
 * completion request. Every rejection names the field (OpenAI's "param") and says what is
 * wrong in one line; unknown fields are ignored, as OpenAI's server does. */
#ifndef G4_SERVER_PARAMS_H
#define G4_SERVER_PARAMS_H

#include "slots.h"
#include "srv.h"

typedef struct gen_params {
    int               stream, include_usage;
    int32_t           max_tokens;    /* -1 = until end of generation or context full */
    g4_sampler_params sp;
    int               have_seed;
    int               n_stop;
    char              stop[SCHED_MAX_STOP][SCHED_MAX_STOP_LEN];
    size_t            stop_len[SCHED_MAX_STOP];
    int               top_logprobs;  /* -1 = none */
    int               thinking;      /* chat: 1 = thinking on */
    int               ignore_eos;
} gen_params;

typedef struct perr {
    char        param[64];
    char        msg[400];
    const char *code;                /* OpenAI-style code or NULL */
    int         status;              /* 400 unless said otherwise */
} perr;

/* chat = 1 for /v1/chat/completions (logprobs is a boolean there), 0 for /v1/completions. */
int params_parse(srv *sv, const g4_jv *root, int chat, gen_params *p, perr *e);
/* The conversation's prompt ids (BOS, turns, generation prompt). */
int chat_prompt(srv *sv, const g4_jv *root, const gen_params *p, int32_t **ids, size_t *n, perr *e);
/* /v1/completions "prompt": a string, one string in an array, or an array of token ids. */
int completion_prompt(srv *sv, const g4_jv *root, int32_t **ids, size_t *n, perr *e);
/* tokenize text (BOS and special tokens as asked) into a malloc'ed array */
int tokenize_text(srv *sv, const char *s, size_t n, unsigned flags, int32_t **ids, size_t *n_ids);

int perr_set(perr *e, const char *param, const char *code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
