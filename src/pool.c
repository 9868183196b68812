/* pool.c - persistent thread pool: pool_for over small chunks claimed from an atomic counter.
 *
 * Owns: n_threads-1 worker pthreads created once (pool_create) and joined once (pool_free);
 * thread 0 is the caller of pool_for, which always works too.
 *
 * Design (this VM's two vCPUs are uneven and get descheduled for up to ~0.15 s):
 * - A job is published by storing (gen << 40 | 0) into `next` (release). Every claim is a
 *   CAS on `next` that checks the generation, so a worker that wakes late can never claim
 *   a chunk of a newer job with stale job fields: it reads fn/ctx only after its claim
 *   succeeded, and a job's record cannot change until all its chunks are done. Job records
 *   alternate by generation parity so the bound n seen with a stale `next` is its own.
 * - Completion is counted in items, not in workers: pool_for returns when every item is
 *   done, without waiting for a worker that never woke up to take a chunk.
 * - Waiting is spin-then-sleep: workers spin ~50 us on the generation (pause, then
 *   sched_yield), then sleep on a condition variable; the caller likewise while the last
 *   chunks finish elsewhere.
 * No globals; pool_for calls must not nest or run concurrently on one pool.
 */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ volatile("yield" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif

#define IDX_BITS 40
#define IDX_MASK ((UINT64_C(1) << IDX_BITS) - 1)
#define SPIN_NS  50000

struct g4_pool {
    g4_allocator     al;
    int              n_threads;     /* including the caller */
    pthread_t       *threads;       /* [n_threads - 1] */
    int              n_started;
    /* jobs, double-buffered by generation parity and written before `next` publishes them:
     * a claimer whose `next` snapshot is one generation old reads the old job's n, never the
     * new one (a single job record let a stale snapshot (gen, n_old) claim [n_old, n_new)). */
    struct pool_job {
        g4_task_fn      fn;
        void           *ctx;
        _Atomic int64_t n, chunk;   /* relaxed: a claimer two generations stale may read them */
        _Atomic int     guided;     /* 1: claims take (rest / (2 n_threads)), rounded down to chunks */
    } job[2];
    uint64_t         gen;           /* caller-side copy of the generation (24 bits used) */
    _Atomic uint64_t next;          /* gen << 40 | next unclaimed item */
    _Atomic uint64_t posted;        /* generation workers wait for */
    _Atomic int64_t  done;          /* items completed in the current job */
    _Atomic int      stop;
    pthread_mutex_t  call_mu;       /* one pool_for at a time: sessions of one model share the pool */
    pthread_mutex_t  mu;
    pthread_cond_t   wake;          /* workers: new job or stop */
    pthread_cond_t   finished;      /* caller: done == n */
};

typedef struct worker_arg { g4_pool *p; int id; } worker_arg;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Claims and runs chunks of generation gen until none are left. */
static void run_chunks(g4_pool *p, uint64_t gen, int id) {
    struct pool_job *j = &p->job[gen & 1];
    for (;;) {
        uint64_t cur = atomic_load_explicit(&p->next, memory_order_acquire);
        int64_t i0, i1, n;
        for (;;) {
            if ((cur >> IDX_BITS) != gen) return;
            i0 = (int64_t)(cur & IDX_MASK);
            n = atomic_load_explicit(&j->n, memory_order_relaxed);
            if (i0 >= n) return;
            const int64_t chunk = atomic_load_explicit(&j->chunk, memory_order_relaxed);
            int64_t c = chunk;
            if (atomic_load_explicit(&j->guided, memory_order_relaxed)) {
                c = (n - i0) / (2 * (int64_t)p->n_threads) / chunk * chunk;
                if (c < chunk) c = chunk;
            }
            i1 = i0 + c < n ? i0 + c : n;
            if (atomic_compare_exchange_weak_explicit(&p->next, &cur, gen << IDX_BITS | (uint64_t)i1,
                                                      memory_order_acq_rel, memory_order_acquire))
                break;
        }
        /* claimed: job gen (fn, ctx, n) cannot change until this chunk is counted done */
        j->fn(j->ctx, i0, i1, id);
        const int64_t k = i1 - i0;
        if (atomic_fetch_add_explicit(&p->done, k, memory_order_acq_rel) + k == n && id != 0) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->finished);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void *worker_main(void *varg) {
    worker_arg *arg = varg;
    g4_pool *p = arg->p;
    const int id = arg->id;
    uint64_t seen = 0;
    for (;;) {
        uint64_t g = atomic_load_explicit(&p->posted, memory_order_acquire);
        if (g == seen && !atomic_load_explicit(&p->stop, memory_order_acquire)) {
            const uint64_t t0 = now_ns();
            for (unsigned it = 1;; it++) {
                g = atomic_load_explicit(&p->posted, memory_order_acquire);
                if (g != seen || atomic_load_explicit(&p->stop, memory_order_relaxed)) break;
                if ((it & 63) == 0) {
                    if (now_ns() - t0 > SPIN_NS) break;
                    sched_yield();
                } else {
                    cpu_relax();
                }
            }
            if (g == seen) {
                pthread_mutex_lock(&p->mu);
                while ((g = atomic_load_explicit(&p->posted, memory_order_acquire)) == seen &&
                       !atomic_load_explicit(&p->stop, memory_order_acquire))
                    pthread_cond_wait(&p->wake, &p->mu);
                pthread_mutex_unlock(&p->mu);
            }
        }
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) break;
        seen = g;
        run_chunks(p, g & 0xffffffu, id);
    }
    return NULL;
}

g4_status pool_create(g4_pool **out, int n_threads, const g4_allocator *al) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 512 || !al) return G4_ERR_ARG;
    g4_pool *p = g4_calloc(al, 1, sizeof *p);
    if (!p) return G4_ERR_NOMEM;
    p->al = *al;
    p->n_threads = n_threads;
    atomic_init(&p->next, 0);
    atomic_init(&p->posted, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->stop, 0);
    for (int k = 0; k < 2; k++) {
        atomic_init(&p->job[k].n, 0);
        atomic_init(&p->job[k].chunk, 1);
        atomic_init(&p->job[k].guided, 0);
    }
    if (n_threads == 1) { *out = p; return G4_OK; }
    p->threads = g4_calloc(al, (size_t)n_threads, sizeof *p->threads + sizeof(worker_arg));
    if (!p->threads) { g4_free(al, p, sizeof *p); return G4_ERR_NOMEM; }
    worker_arg *args = (worker_arg *)(void *)(p->threads + n_threads);
    pthread_mutex_init(&p->call_mu, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->finished, NULL);
    for (int i = 1; i < n_threads; i++) {
        args[i].p = p;
        args[i].id = i;
        if (pthread_create(&p->threads[i - 1], NULL, worker_main, &args[i]) != 0) {
            pool_free(p);
            return G4_ERR_NOMEM;
        }
        p->n_started++;
    }
    *out = p;
    return G4_OK;
}

void pool_free(g4_pool *p) {
    if (!p) return;
    if (p->threads) {
        pthread_mutex_lock(&p->mu);
        atomic_store_explicit(&p->stop, 1, memory_order_release);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->n_started; i++) pthread_join(p->threads[i], NULL);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->finished);
        pthread_mutex_destroy(&p->call_mu);
        pthread_mutex_destroy(&p->mu);
        g4_free(&p->al, p->threads, (size_t)p->n_threads * (sizeof *p->threads + sizeof(worker_arg)));
    }
    g4_allocator al = p->al;
    g4_free(&al, p, sizeof *p);
}

int pool_n_threads(const g4_pool *p) { return p ? p->n_threads : 1; }

/* Spins briefly (a descheduled partner usually finishes soon), then sleeps until done == n. */
static void wait_done(g4_pool *p, int64_t n) {
    if (atomic_load_explicit(&p->done, memory_order_acquire) == n) return;
    const uint64_t t0 = now_ns();
    for (unsigned it = 1; atomic_load_explicit(&p->done, memory_order_acquire) != n; it++) {
        if ((it & 63) == 0) {
            if (now_ns() - t0 > SPIN_NS) break;
            sched_yield();
        } else {
            cpu_relax();
        }
    }
    if (atomic_load_explicit(&p->done, memory_order_acquire) == n) return;
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->done, memory_order_acquire) != n) pthread_cond_wait(&p->finished, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

static void pool_run(g4_pool *p, int64_t n, int64_t chunk, int guided, g4_task_fn fn, void *ctx) {
    if (n <= 0) return;
    if (chunk < 1) chunk = 1;
    if (!p || p->n_threads == 1 || n <= chunk) {
        fn(ctx, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&p->call_mu);
    p->gen = (p->gen + 1) & 0xffffffu;
    struct pool_job *j = &p->job[p->gen & 1];
    j->fn = fn;
    j->ctx = ctx;
    atomic_store_explicit(&j->n, n, memory_order_relaxed);
    atomic_store_explicit(&j->chunk, chunk, memory_order_relaxed);
    atomic_store_explicit(&j->guided, guided, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store_explicit(&p->next, p->gen << IDX_BITS, memory_order_release);
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->posted, atomic_load_explicit(&p->posted, memory_order_relaxed) + 1,
                          memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_chunks(p, p->gen, 0);
    wait_done(p, n);
    pthread_mutex_unlock(&p->call_mu);
}

void pool_for(g4_pool *p, int64_t n, int64_t chunk, g4_task_fn fn, void *ctx) { pool_run(p, n, chunk, 0, fn, ctx); }

void pool_for_guided(g4_pool *p, int64_t n, int64_t chunk, g4_task_fn fn, void *ctx) {
    pool_run(p, n, chunk, 1, fn, ctx);
}
