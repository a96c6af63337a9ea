/* kn_pool.c — the CPU kernels' thread pool (kn_pool.h).
 *
 * One job at a time. The caller publishes the job (function, argument, chunk count), then bumps
 * `gen`, the futex word the workers watch. Chunks are claimed through one 64-bit ticket that
 * holds the job's generation and the next chunk, so a worker that wakes late — after the job it
 * saw is finished and another has started — fails its claim instead of running a chunk of a job
 * it never read. A job's fields are read only after a claim succeeds; the caller does not start
 * another job before every claimed chunk is done, so they cannot change under a running chunk.
 * Publishing closes the ticket first (the new generation, no chunk to take) and only then
 * changes the chunk count: a worker still in the last job's claim loop, which checks the count
 * between reading the ticket and claiming, could otherwise read the new, larger count beside
 * the old, spent ticket, claim a chunk past the old job's end, run the new job's chunk under
 * it (twice, with the real claim) and count it done, so that the caller returned while a chunk
 * still read its arguments (seen under ASan on a 2-core Zen 3: a worker reading the LSTM cell's
 * arguments from a stack frame the caller had left).
 * The caller claims chunks too, so a job finishes even when no worker ever wakes (after fork).
 * When the last chunks are a worker's and take long (its core taken by another process), the
 * caller sleeps on a futex the last chunk wakes, so the scheduler may run the worker on the
 * caller's core instead of the caller spinning there.
 */
#define _GNU_SOURCE
#include "kn_pool.h"

#include <cblas.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Pauses a waiting worker spins before it sleeps: ~50-100 µs on current x86 (a pause is 40-140
 * cycles), longer than the gap between two kernels of a step, shorter than anything a person
 * would see as a busy idle core. */
#define KN_SPIN 2000

/* A ticket's chunk index while a job is being published: above any chunk count. */
#define KN_CLOSED 0xffffffffu

static struct {
    pthread_once_t once;
    int default_threads;
    _Atomic int nthreads; /* threads used by jobs (the caller's included) */
    _Atomic int nworkers; /* workers started */
    _Atomic int busy;     /* a job is running */
    _Atomic uint32_t gen;
    _Atomic int sleepers;
    _Atomic uint64_t ticket; /* gen << 32 | next chunk */
    _Atomic int64_t done;
    _Atomic uint32_t done_word; /* futex word the caller sleeps on when a chunk takes long */
    _Atomic int caller_sleeps;
    kn_chunk_fn fn;
    void *arg;
    _Atomic int64_t nchunks; /* read by late workers too: atomic, relaxed */
} pool = {.once = PTHREAD_ONCE_INIT};

static _Thread_local bool in_chunk; /* this thread is running a chunk */

static void futex_wait(_Atomic uint32_t *w, uint32_t v)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

/* Sleeps while *w == v, at most ms milliseconds. */
static void futex_wait_ms(_Atomic uint32_t *w, uint32_t v, long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, v, &ts, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, KN_MAX_THREADS, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* kn_pool_set_publish_delay: pause rounds between a job's count and its open ticket */
static _Atomic int publish_delay_spins;

void kn_pool_set_publish_delay(int spins)
{
    atomic_store_explicit(&publish_delay_spins, spins, memory_order_relaxed);
}

static void publish_delay(void)
{
    int spins = atomic_load_explicit(&publish_delay_spins, memory_order_relaxed);
    for (int i = 0; i < spins; i++) cpu_relax();
}

/* Claims and runs chunks of generation g until none is left. */
static void run_chunks(uint32_t g)
{
    for (;;) {
        uint64_t t = atomic_load_explicit(&pool.ticket, memory_order_acquire);
        if ((uint32_t)(t >> 32) != g) return;
        int64_t c = (int64_t)(uint32_t)t;
        /* acquire: a count read here was stored after the ticket was closed, so a claim from a
         * spent ticket of an older job fails (the file's top) */
        if (c >= atomic_load_explicit(&pool.nchunks, memory_order_acquire))
            return; /* stable: g is current while its ticket is */
        if (!atomic_compare_exchange_weak_explicit(&pool.ticket, &t, t + 1, memory_order_acq_rel,
                                                   memory_order_relaxed))
            continue;
        in_chunk = true;
        pool.fn(pool.arg, c);
        in_chunk = false;
        if (atomic_fetch_add(&pool.done, 1) + 1 ==
                atomic_load_explicit(&pool.nchunks, memory_order_relaxed) &&
            atomic_load(&pool.caller_sleeps)) {
            atomic_fetch_add(&pool.done_word, 1);
            futex_wake_all(&pool.done_word);
        }
    }
}

static void *worker(void *index)
{
    int me = (int)(intptr_t)index; /* workers 0 … nthreads - 2 take part */
    uint32_t seen = atomic_load_explicit(&pool.gen, memory_order_acquire);
    for (;;) {
        uint32_t g = seen;
        for (int i = 0; i < KN_SPIN && g == seen; i++) {
            cpu_relax();
            g = atomic_load_explicit(&pool.gen, memory_order_acquire);
        }
        if (g == seen) {
            atomic_fetch_add(&pool.sleepers, 1);
            while ((g = atomic_load_explicit(&pool.gen, memory_order_acquire)) == seen)
                futex_wait(&pool.gen, seen);
            atomic_fetch_sub(&pool.sleepers, 1);
        }
        seen = g;
        if (me + 1 < pool.nthreads) run_chunks(g);
    }
    return NULL;
}

static int env_threads(void)
{
    const char *s = getenv("LG_THREADS");
    int n = s ? atoi(s) : 0;
    if (n < 1) {
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    }
    return n < 1 ? 1 : n > KN_MAX_THREADS ? KN_MAX_THREADS : n;
}

static void pool_init(void)
{
    pool.default_threads = env_threads();
    pool.nthreads = pool.default_threads;
    /* OpenBLAS's own threads would spin against these for the same cores: the pool splits the
     * GEMMs instead, each part a one-thread OpenBLAS call */
    openblas_set_num_threads(1);
}

/* Starts workers up to n - 1 (threads are never stopped; fewer are used when n shrinks). */
static void ensure_workers(int n)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    if (atomic_load_explicit(&pool.nworkers, memory_order_acquire) >= n - 1) return;
    pthread_mutex_lock(&mu);
    while (pool.nworkers < n - 1) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 1 << 20);
        pthread_t tid;
        int rc = pthread_create(&tid, &at, worker, (void *)(intptr_t)pool.nworkers);
        pthread_attr_destroy(&at);
        if (rc != 0) break; /* fewer threads: the caller still runs every chunk */
        pool.nworkers++;
    }
    pthread_mutex_unlock(&mu);
}

int kn_threads(void)
{
    pthread_once(&pool.once, pool_init);
    return pool.nthreads;
}

void kn_set_threads(int n)
{
    pthread_once(&pool.once, pool_init);
    pool.nthreads = n < 1 ? pool.default_threads : n > KN_MAX_THREADS ? KN_MAX_THREADS : n;
}

void kn_parallel_chunks(int64_t n, kn_chunk_fn fn, void *arg)
{
    if (n <= 0) return;
    int threads = kn_threads();
    int expect = 0;
    if (threads < 2 || n < 2 || n >= KN_CLOSED || in_chunk ||
        !atomic_compare_exchange_strong(&pool.busy, &expect, 1)) {
        for (int64_t c = 0; c < n; c++) fn(arg, c);
        return;
    }
    ensure_workers(threads);
    uint32_t g = atomic_load_explicit(&pool.gen, memory_order_relaxed) + 1;
    /* closed: no claim of the last job's ticket can succeed from here on, and none of this one's
     * yet (no chunk index reaches KN_CLOSED) */
    atomic_store_explicit(&pool.ticket, (uint64_t)g << 32 | KN_CLOSED, memory_order_relaxed);
    pool.fn = fn;
    pool.arg = arg;
    atomic_store_explicit(&pool.nchunks, n, memory_order_release);
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    publish_delay();
    atomic_store_explicit(&pool.ticket, (uint64_t)g << 32, memory_order_release);
    atomic_store_explicit(&pool.gen, g, memory_order_release);
    if (atomic_load(&pool.sleepers) > 0) futex_wake_all(&pool.gen);
    run_chunks(g);
    /* the last chunks are a worker's: spin a little, then sleep until it is done, so that a
     * worker whose core another process took can be run on this one */
    for (int i = 0; atomic_load_explicit(&pool.done, memory_order_acquire) < n; i++) {
        if (i < KN_SPIN) {
            cpu_relax();
            continue;
        }
        atomic_store(&pool.caller_sleeps, 1);
        uint32_t w = atomic_load(&pool.done_word);
        if (atomic_load(&pool.done) < n) futex_wait_ms(&pool.done_word, w, 1);
    }
    atomic_store(&pool.caller_sleeps, 0);
    atomic_store_explicit(&pool.busy, 0, memory_order_release);
}

struct range_job {
    kn_range_fn fn;
    void *arg;
    int64_t n, size;
};

static void range_chunk(void *p, int64_t c)
{
    struct range_job *j = p;
    int64_t b = c * j->size, e = b + j->size < j->n ? b + j->size : j->n;
    j->fn(j->arg, b, e);
}

void kn_parallel_for(int64_t n, int64_t grain, kn_range_fn fn, void *arg)
{
    if (n <= 0) return;
    int threads = kn_threads();
    if (grain < 1) grain = 1;
    if (threads < 2 || n < 2 * grain || in_chunk) {
        fn(arg, 0, n);
        return;
    }
    /* a few chunks per thread, so that a thread that loses its core leaves its share to the
     * others; never below the grain */
    int64_t chunks = n / grain, most = 4 * (int64_t)threads;
    if (chunks > most) chunks = most;
    struct range_job j = {fn, arg, n, (n + chunks - 1) / chunks};
    kn_parallel_chunks((n + j.size - 1) / j.size, range_chunk, &j);
}
