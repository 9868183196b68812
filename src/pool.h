/* pool.h - persistent thread pool: parallel_for over chunks, each thread on a contiguous share
 * of them first, then stealing from the others' shares, so a descheduled thread's share is
 * taken by the others (this VM's two vCPUs are uneven). Threads are created once (model open),
 * never per call. */
#ifndef G4_POOL_H
#define G4_POOL_H

#include <stdint.h>

#include "g4_impl.h"

typedef struct g4_pool g4_pool;

/* fn processes items [i0, i1); thread is 0..n_threads-1 (0 = the caller) */
typedef void (*g4_task_fn)(void *ctx, int64_t i0, int64_t i1, int thread);

/* n_threads >= 1; with 1 no thread is created. *out = NULL on failure. */
g4_status pool_create(g4_pool **out, int n_threads, const g4_allocator *al);
void      pool_free(g4_pool *p);   /* NULL-safe; joins the threads */
int       pool_n_threads(const g4_pool *p); /* 1 for NULL */
/* Runs fn over [0, n) in chunks of `chunk` items; returns when all are done. p NULL or
 * n <= chunk: runs inline on the caller. Calls must not nest; calls from several threads (sessions
 * sharing a model) are serialized, one whole pool_for at a time. */
void      pool_for(g4_pool *p, int64_t n, int64_t chunk, g4_task_fn fn, void *ctx);
/* The same with shrinking claims (guided): a thread takes a quarter of what is left of its own
 * share (a thief half of what is left of another's), in multiples of `chunk` and at least
 * `chunk`, so the last claims are small and the threads finish together (a large job's tail is
 * one small chunk, not one big one). */
void      pool_for_guided(g4_pool *p, int64_t n, int64_t chunk, g4_task_fn fn, void *ctx);

#endif
