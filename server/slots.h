/* slots.h - the slot scheduler (server/slots.c): -np sessions advanced together by the
 * batched step, a bounded queue in front of them, prefix reuse, cancellation.
 *
 * A connection thread fills a job (prompt ids, sampler, limits), submits it and then reads
 * what the scheduler appends: text that is safe to send (whole UTF-8 characters, never part
 * of a possible stop string) and, per generated token, its id, byte range and log
 * probabilities. It sets cancel when its client goes away. Jobs are reference counted: the
 * connection and the scheduler each hold one reference.
 */
#ifndef G4_SERVER_SLOTS_H
#define G4_SERVER_SLOTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "g4.h"
#include "rates.h"

enum { FIN_NONE = 0, FIN_STOP, FIN_LENGTH, FIN_ERROR, FIN_CANCEL };
enum { SCHED_MAX_STOP = 16, SCHED_MAX_STOP_LEN = 256, SCHED_MAX_TOP = 20 };

typedef struct tok_ev {
    int32_t id;
    uint32_t text0, text1; /* bytes of job->text this token completed (may be empty) */
    float    logprob;      /* log softmax of the raw logits (when logprobs were asked for) */
    int      n_top;
    int32_t  top_id[SCHED_MAX_TOP];
    float    top_lp[SCHED_MAX_TOP];
} tok_ev;

typedef struct job {
    /* ---- input, written before sched_submit, read-only afterwards ---- */
    int32_t    *prompt;      /* [n_prompt] */
    size_t      n_prompt;
    g4_sampler *smp;         /* owned by the job */
    int32_t     n_predict;   /* most tokens to generate; -1 = until the context is full */
    int         ignore_eos;
    int         top_logprobs; /* -1 = no log probabilities; 0..20 alternatives per token */
    int         n_stop;
    char        stop[SCHED_MAX_STOP][SCHED_MAX_STOP_LEN];
    size_t      stop_len[SCHED_MAX_STOP];
    /* ---- output, under mu ---- */
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    char       *text;        /* [text_len] released text */
    size_t      text_len, text_cap;
    tok_ev     *ev;          /* [n_ev] one per generated token */
    size_t      n_ev, ev_cap;
    int         finish;      /* FIN_*; nonzero = the job is over */
    char        errmsg[256];
    int32_t     n_cached;    /* prompt tokens reused from a slot's cache */
    int32_t     n_gen;
    int32_t     n_drafted;   /* speculative decoding: drafted tokens verified, and accepted */
    int32_t     n_accepted;
    double      t_submit, t_start, t_first, t_end; /* monotonic seconds */
    int         slot;        /* slot index while running, -1 otherwise */
    /* ---- shared ---- */
    atomic_int  cancel;      /* set by the connection: stop and free the slot */
    atomic_int  refs;
    /* ---- scheduler private ---- */
    g4_detok    dt;
    char       *hold;        /* [n_hold] detokenized bytes not yet released (possible stop prefix) */
    size_t      n_hold, hold_cap;
    struct job *next;
} job;

typedef struct sched_opts {
    int     n_slots;    /* -np */
    int32_t n_ctx;      /* per slot */
    int     max_queue;  /* jobs waiting beyond the slots */
    int32_t n_ubatch;   /* prompt chunk per slot and step */
    const char *ckpt_dir; /* context checkpoints (ckpt.h) in this directory; NULL = none */
    /* speculative decoding, NULL = none: every decoding slot drafts (g4_spec_draft), one
     * g4_batch_eval_ex verifies every slot's last token and draft (G4_EVAL_ALL_LOGITS |
     * G4_EVAL_DECODE_ORDER) next to the prompt chunks, g4_spec_accept per slot. Greedy
     * answers are then exactly those of plain decoding alone (one-token evals' bits); jobs
     * asking for log probabilities draft nothing. The assistant must outlive the scheduler. */
    const g4_spec_opts *spec;
    int32_t ckpt_min;   /* checkpoint prompts of at least this many ids (0 = 2 x n_ubatch) */
    /* a test device (tests/test_sched.c), NULL in the server: called each time the library
     * polls a slot's abort callback, that is before each forward chunk of a step */
    void  (*test_poll)(void *ud, int slot);
    void   *test_ud;
} sched_opts;

typedef struct sched_stats { /* for /metrics and /health */
    uint64_t prompt_tokens, cached_tokens, gen_tokens, requests_done, steps;
    uint64_t aborted_steps;            /* steps stopped between chunks for a cancelled job */
    uint64_t ckpt_saves, ckpt_loads;   /* context checkpoints written, and used for a prompt */
    uint64_t draft_tokens, draft_accepted; /* speculative decoding: drafted tokens verified, accepted */
    double   prompt_s, decode_s;
    int      queued, busy, slots;
    rates_sum recent;                  /* the last minute (rates.h) */
} sched_stats;

typedef struct sched sched;

int  sched_create(sched **out, g4_model *m, const sched_opts *o, char *err, size_t errlen);
/* Stops the thread (cancelling what is still queued or running) and frees everything. */
void sched_free(sched *s);
/* Asks the scheduler to finish what it runs, refuse new jobs, and stop once idle or at the
 * deadline (seconds from now), whichever comes first. */
void sched_drain(sched *s, double grace_s);

job *job_new(void);
void job_release(job *j); /* drops one reference; the last one frees */
/* 0 queued; -1 the queue is full (503); -2 shutting down. Takes a reference on success. */
int  sched_submit(sched *s, job *j);
int32_t sched_n_ctx(const sched *s);
void sched_get_stats(sched *s, sched_stats *st);
/* seconds since the epoch of the monotonic clock */
double sched_now(void);

#endif
