/* test_pool.c - group `pool`: src/pool.c. Every item runs exactly once, thread ids are in
 * range, back-to-back jobs do not mix, a stalled thread's share is taken by the others,
 * guided jobs cut at multiples of their chunk with shrinking claims, allocation failure is
 * clean. Also meant to run under `make tsan`. */
#include "t.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool.h"

typedef struct count_ctx {
    _Atomic int *hits;      /* [n] */
    _Atomic int  bad_tid;
    _Atomic long calls;
    int          n_threads;
    int          slow_tid;  /* this thread sleeps 2 ms per chunk (-1: none) */
    long         tag;       /* job identity, checked by the task */
    _Atomic int  bad_tag;
    long         want_tag;
    int64_t      align;     /* > 0: every claim must start at a multiple of it */
    _Atomic int  bad_align;
    _Atomic int64_t first;  /* size of the claim that started at item 0 */
    _Atomic int *tid;       /* NULL, or [n]: the thread that ran each item */
} count_ctx;

static void count_task(void *vctx, int64_t i0, int64_t i1, int thread) {
    count_ctx *c = vctx;
    if (thread < 0 || thread >= c->n_threads) atomic_fetch_add(&c->bad_tid, 1);
    if (c->tag != c->want_tag) atomic_fetch_add(&c->bad_tag, 1);
    atomic_fetch_add(&c->calls, 1);
    if (c->align > 0 && i0 % c->align != 0) atomic_fetch_add(&c->bad_align, 1);
    if (i0 == 0) atomic_store(&c->first, i1 - i0);
    if (thread == c->slow_tid) {
        struct timespec ts = { 0, 2000000 };
        nanosleep(&ts, NULL);
    }
    for (int64_t i = i0; i < i1; i++) {
        atomic_fetch_add(&c->hits[i], 1);
        if (c->tid) atomic_store(&c->tid[i], thread);
    }
}

static void zero(_Atomic int *h, int64_t n) { for (int64_t i = 0; i < n; i++) atomic_store(&h[i], 0); }

/* items [0, n) ran once and nothing past n ran (hits has room for n + 64) */
static int all_once(count_ctx *c, int64_t n) {
    for (int64_t i = 0; i < n; i++) if (atomic_load(&c->hits[i]) != 1) return 0;
    for (int64_t i = n; i < n + 64; i++) if (atomic_load(&c->hits[i]) != 0) return 0;
    return 1;
}

static int fail_after;
static void *failing_alloc(void *ud, void *ptr, size_t old_size, size_t new_size) {
    (void)ud;
    if (new_size && fail_after-- <= 0) return NULL;
    return g4_libc_alloc(NULL, ptr, old_size, new_size);
}

T_GROUP(pool) {
    g4_allocator al;
    g4_allocator_init(&al, NULL, NULL);
    enum { NMAX = 10007 };
    void *hits_mem = calloc(NMAX + 64, sizeof(_Atomic int));
    _Atomic int *hits = hits_mem;

    /* NULL pool and small n run inline on the caller */
    T_CHECK(pool_n_threads(NULL) == 1);
    count_ctx c = { .hits = hits, .n_threads = 1, .slow_tid = -1 };
    pool_for(NULL, 100, 7, count_task, &c);
    T_CHECK(all_once(&c, 100) && atomic_load(&c.calls) == 1 && atomic_load(&c.bad_tid) == 0);
    pool_for(NULL, 0, 7, count_task, &c);
    T_CHECK(atomic_load(&c.calls) == 1);

    const int threads[] = { 1, 2, 3, 8 };
    for (int ti = 0; ti < 4; ti++) {
        g4_pool *p = NULL;
        T_CHECK(pool_create(&p, threads[ti], &al) == G4_OK && p);
        if (!p) continue;
        T_CHECK(pool_n_threads(p) == threads[ti]);
        const int64_t sizes[] = { 1, 2, 15, 16, 17, 1000, NMAX };
        const int64_t chunks[] = { 1, 3, 16, 64, 0 };
        int ok = 1;
        for (int si = 0; si < 7; si++) {
            for (int ci = 0; ci < 5; ci++) {
                zero(hits, NMAX + 64);
                count_ctx cc = { .hits = hits, .n_threads = threads[ti], .slow_tid = -1 };
                pool_for(p, sizes[si], chunks[ci], count_task, &cc);
                ok &= all_once(&cc, sizes[si]) && atomic_load(&cc.bad_tid) == 0;
            }
        }
        T_CHECKF(ok, "%d threads: items not run exactly once", threads[ti]);

        /* guided: every item once, claims start at multiples of the chunk, the claim at item 0
         * is at most a quarter of thread 0's share (its owner's first claim; a thief's are
         * smaller), far fewer calls than items */
        int okg = 1;
        for (int si = 0; si < 7; si++) {
            for (int ci = 0; ci < 4; ci++) {
                zero(hits, NMAX + 64);
                count_ctx cc = { .hits = hits, .n_threads = threads[ti], .slow_tid = -1, .align = chunks[ci] };
                pool_for_guided(p, sizes[si], chunks[ci], count_task, &cc);
                okg &= all_once(&cc, sizes[si]) && atomic_load(&cc.bad_tid) == 0 && atomic_load(&cc.bad_align) == 0;
                const int64_t n = sizes[si], ch = chunks[ci], share = (n + ch - 1) / ch / threads[ti];
                const int64_t want = (share / 4 > 1 ? share / 4 : 1) * ch;
                if (threads[ti] > 1 && n > ch) okg &= atomic_load(&cc.first) <= want;
                if (threads[ti] > 1 && n == NMAX && ch == 16) okg &= atomic_load(&cc.calls) < NMAX / 16 / 4;
            }
        }
        T_CHECKF(okg, "%d threads: guided jobs wrong", threads[ti]);

        /* many short jobs back to back: no chunk of one job runs with another's context */
        int ok2 = 1;
        for (int rep = 0; rep < 20000; rep++) {
            const int64_t n = 1 + rep % 37;
            zero(hits, n + 64);
            count_ctx cc = { .hits = hits, .n_threads = threads[ti], .slow_tid = -1, .tag = rep, .want_tag = rep };
            pool_for(p, n, 1 + rep % 3, count_task, &cc);
            ok2 &= all_once(&cc, n) && atomic_load(&cc.bad_tag) == 0 && atomic_load(&cc.bad_tid) == 0;
        }
        T_CHECKF(ok2, "%d threads: back-to-back jobs mixed", threads[ti]);

        /* a slow thread: the others take its share, every item still runs once */
        if (threads[ti] > 1) {
            zero(hits, NMAX + 64);
            _Atomic int tid[200];
            for (int i = 0; i < 200; i++) atomic_init(&tid[i], -1);
            count_ctx cc = { .hits = hits, .n_threads = threads[ti], .slow_tid = 1, .tid = tid };
            pool_for(p, 200, 4, count_task, &cc);
            T_CHECK(all_once(&cc, 200));
            /* thread 1's share (units [50 / n, 100 / n) of 4 items), mostly run by others */
            int others = 0;
            for (int i = 200 / threads[ti] / 4 * 4; i < 400 / threads[ti] / 4 * 4; i++) others += atomic_load(&tid[i]) != 1;
            T_CHECKF(others > 0, "%d threads: a slow thread's share was not taken by the others", threads[ti]);
        }
        pool_free(p);
    }
    pool_free(NULL);

    /* bad arguments and allocation failure: *out = NULL, nothing leaks (ASan) */
    g4_pool *p = (g4_pool *)&al;
    T_CHECK(pool_create(&p, 0, &al) == G4_ERR_ARG && p == NULL);
    g4_allocator fal;
    for (int k = 0; k < 2; k++) {
        g4_allocator_init(&fal, failing_alloc, NULL);
        fail_after = k;
        p = (g4_pool *)&al;
        T_CHECK(pool_create(&p, 4, &fal) == G4_ERR_NOMEM && p == NULL);
    }
    free(hits_mem);
}
