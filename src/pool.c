/* pool.c - persistent thread pool: pool_for over chunks, each thread on its own share first.
 *
 * Owns: n_threads-1 worker pthreads created once (pool_create) and joined once (pool_free);
 * thread 0 is the caller of pool_for, which always works too.
 *
 * Design (this VM's two vCPUs are uneven and get descheduled for up to ~0.15 s; a cache line
 * takes ~0.35 us to move between them):
 * - A job's n items are cut into units (chunks) and the units into one contiguous share per
 *   thread. Each share is one word, (gen << 40 | lo << 20 | hi) in units, in a cache line of
 *   its own: its owner claims from the front (lo), others steal from the back (hi), all by
 *   CAS. An owner's claims touch only its own line and follow each other in memory, so a
 *   matmul's weights stream on without a break at each claim (the prefetch runs ahead into
 *   the next one); a thread that is done with its share steals from the others' backs, so a
 *   descheduled thread's share is taken by the rest.
 * - Every claim's CAS checks the generation, so a worker that wakes late can never claim a
 *   unit of a newer job with stale job fields: it reads fn/ctx only after its claim
 *   succeeded, and a job's record cannot change until all its units are done. Job records
 *   alternate by generation parity.
 * - Completion is counted in items, not in workers: each thread adds what it ran once when
 *   it finds nothing left, and pool_for returns when every item is done, without waiting for
 *   a worker that never woke up to take a unit.
 * - Waiting is spin-then-sleep: workers spin ~50 us on the generation (pause, then
 *   sched_yield), then sleep on a condition variable; the caller likewise while the last
 *   units finish elsewhere. The mutex and the condition variables are touched only when
 *   someone sleeps (counted in `sleepers` / `caller_asleep`, Dekker-style with the
 *   generation and the done count, all sequentially consistent): a job handed to spinning
 *   workers costs one store.
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

#define GEN_SHIFT 40                    /* share word: gen (24 bits) | lo (20) | hi (20) */
#define UNIT_MAX  ((INT64_C(1) << 20) - 1) /* units per job, at most */
#define SHARE_STRIDE 8                  /* uint64 words between two threads' shares: 64 bytes */
#define SPIN_NS  50000

struct g4_pool {
    g4_allocator     al;
    int              n_threads;     /* including the caller */
    pthread_t       *threads;       /* [n_threads - 1] */
    int              n_started;
    /* jobs, double-buffered by generation parity and written before `posted` publishes them;
     * read only after a claim of their generation succeeded */
    struct pool_job {
        g4_task_fn      fn;
        void           *ctx;
        _Atomic int64_t n, unit;    /* items, items per unit (the chunk, or more past UNIT_MAX units) */
        _Atomic int     guided;     /* 1: claims take a share of what is left, 0: one unit each */
    } job[2];
    uint64_t         gen;           /* caller-side copy of the generation (24 bits used) */
    _Atomic uint64_t *share;        /* [n_threads * SHARE_STRIDE]: thread k's word at k * SHARE_STRIDE */
    _Atomic uint64_t posted;        /* generation workers wait for */
    _Atomic int64_t  done;          /* items completed in the current job */
    _Atomic int      stop;
    _Atomic int      sleepers;      /* workers in (or about to enter) their wait on `wake` */
    _Atomic int      caller_asleep; /* the caller in (or about to enter) its wait on `finished` */
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

static inline uint64_t share_word(uint64_t gen, int64_t lo, int64_t hi) {
    return gen << GEN_SHIFT | (uint64_t)lo << 20 | (uint64_t)hi;
}

/* Claims units of thread k's share: its owner (own = 1) from the front, others from the back;
 * guided claims take a quarter (owner) or a half (thief) of what is left, at least one unit.
 * Returns 0 when the share is empty or belongs to another generation, else the unit range. */
static int claim(g4_pool *p, uint64_t gen, int k, int own, int guided, int64_t *u0, int64_t *u1) {
    _Atomic uint64_t *w = &p->share[(size_t)k * SHARE_STRIDE];
    uint64_t cur = atomic_load_explicit(w, memory_order_acquire);
    for (;;) {
        if ((cur >> GEN_SHIFT) != gen) return 0;
        const int64_t lo = (int64_t)(cur >> 20 & UNIT_MAX), hi = (int64_t)(cur & UNIT_MAX);
        if (lo >= hi) return 0;
        int64_t c = guided ? (hi - lo) / (own ? 4 : 2) : 1;
        if (c < 1) c = 1;
        const uint64_t nw = own ? share_word(gen, lo + c, hi) : share_word(gen, lo, hi - c);
        if (atomic_compare_exchange_weak_explicit(w, &cur, nw, memory_order_acq_rel, memory_order_acquire)) {
            *u0 = own ? lo : hi - c, *u1 = own ? lo + c : hi;
            return 1;
        }
    }
}

/* Runs units of generation gen until none are left: its own share, then the others'. */
static void run_chunks(g4_pool *p, uint64_t gen, int id) {
    struct pool_job *j = &p->job[gen & 1];
    const int nt = p->n_threads;
    int64_t ran = 0, n = 0, u0, u1;
    for (int s = 0; s < nt; s++) {
        const int k = (id + s) % nt;
        /* guided is read before a claim: stale, it only sizes a claim that then fails */
        const int guided = atomic_load_explicit(&j->guided, memory_order_relaxed);
        while (claim(p, gen, k, s == 0, guided, &u0, &u1)) {
            /* claimed: job gen (fn, ctx, n) cannot change until these items are counted done */
            const int64_t unit = atomic_load_explicit(&j->unit, memory_order_relaxed);
            n = atomic_load_explicit(&j->n, memory_order_relaxed);
            const int64_t i0 = u0 * unit, i1 = u1 * unit < n ? u1 * unit : n;
            j->fn(j->ctx, i0, i1, id);
            ran += i1 - i0;
        }
    }
    if (ran && atomic_fetch_add(&p->done, ran) + ran == n && id != 0 && atomic_load(&p->caller_asleep)) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_signal(&p->finished);
        pthread_mutex_unlock(&p->mu);
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
                atomic_fetch_add(&p->sleepers, 1); /* before the check: a poster then sees it */
                while ((g = atomic_load(&p->posted)) == seen && !atomic_load_explicit(&p->stop, memory_order_acquire))
                    pthread_cond_wait(&p->wake, &p->mu);
                atomic_fetch_sub(&p->sleepers, 1);
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
    atomic_init(&p->posted, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_asleep, 0);
    for (int k = 0; k < 2; k++) {
        atomic_init(&p->job[k].n, 0);
        atomic_init(&p->job[k].unit, 1);
        atomic_init(&p->job[k].guided, 0);
    }
    if (n_threads == 1) { *out = p; return G4_OK; }
    p->threads = g4_calloc(al, (size_t)n_threads, sizeof *p->threads + sizeof(worker_arg));
    p->share = g4_calloc(al, (size_t)n_threads * SHARE_STRIDE, sizeof *p->share);
    if (!p->threads || !p->share) {
        g4_free(al, p->threads, (size_t)n_threads * (sizeof *p->threads + sizeof(worker_arg)));
        g4_free(al, p->share, (size_t)n_threads * SHARE_STRIDE * sizeof *p->share);
        g4_free(al, p, sizeof *p);
        return G4_ERR_NOMEM;
    }
    for (size_t i = 0; i < (size_t)n_threads * SHARE_STRIDE; i++) atomic_init(&p->share[i], 0);
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
        g4_free(&p->al, p->share, (size_t)p->n_threads * SHARE_STRIDE * sizeof *p->share);
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
    atomic_store(&p->caller_asleep, 1); /* before the check: the last finisher then sees it */
    while (atomic_load(&p->done) != n) pthread_cond_wait(&p->finished, &p->mu);
    atomic_store(&p->caller_asleep, 0);
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
    /* units of whole chunks (several past UNIT_MAX of them), a contiguous share per thread */
    const int64_t unit = (n + chunk - 1) / chunk > UNIT_MAX ? ((n + UNIT_MAX - 1) / UNIT_MAX + chunk - 1) / chunk * chunk : chunk;
    const int64_t units = (n + unit - 1) / unit, nt = p->n_threads;
    atomic_store_explicit(&j->n, n, memory_order_relaxed);
    atomic_store_explicit(&j->unit, unit, memory_order_relaxed);
    atomic_store_explicit(&j->guided, guided, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    for (int64_t k = 0; k < nt; k++)
        atomic_store_explicit(&p->share[(size_t)k * SHARE_STRIDE], share_word(p->gen, units * k / nt, units * (k + 1) / nt),
                              memory_order_release);
    atomic_store(&p->posted, atomic_load_explicit(&p->posted, memory_order_relaxed) + 1);
    if (atomic_load(&p->sleepers)) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }

    run_chunks(p, p->gen, 0);
    wait_done(p, n);
    pthread_mutex_unlock(&p->call_mu);
}

void pool_for(g4_pool *p, int64_t n, int64_t chunk, g4_task_fn fn, void *ctx) { pool_run(p, n, chunk, 0, fn, ctx); }

void pool_for_guided(g4_pool *p, int64_t n, int64_t chunk, g4_task_fn fn, void *ctx) {
    pool_run(p, n, chunk, 1, fn, ctx);
}
