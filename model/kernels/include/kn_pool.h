/* kn_pool.h — the CPU kernels' threads: one small pool that every CPU kernel shares, GEMMs
 * included (OpenBLAS itself is kept to one thread, so that two runtimes never spin against each
 * other for the same cores).
 *
 * Worked example (a kernel over n elements in chunks of at least 16 Ki):
 *
 *   struct args { float *y; const float *x; };
 *   static void half(void *p, int64_t b, int64_t e)            // one chunk: elements [b, e)
 *   {
 *       struct args *a = p;
 *       for (int64_t i = b; i < e; i++) a->y[i] = 0.5f * a->x[i];
 *   }
 *   kn_parallel_for(n, 16384, half, &(struct args){y, x});   // returns when every chunk ran
 *
 * The caller's thread works too; idle workers spin for a few tens of microseconds (kernels come
 * back to back in a training step), then sleep on a futex. Chunks are handed out one at a time,
 * so a core taken by another process slows a kernel by its share, not by the whole kernel.
 * A call from inside a chunk, or from a second thread while the pool is busy, runs its chunks
 * on the calling thread: correct, never a deadlock. The threads are made on the first parallel
 * call and live as long as the process; they allocate nothing from the tracker.
 *
 * Reductions that must not depend on the thread count split the work into a fixed number of
 * chunks with kn_parallel_chunks and merge the chunks' partial results in chunk order.
 */
#ifndef LG_KN_POOL_H
#define LG_KN_POOL_H

#include <stdint.h>

#define KN_MAX_THREADS 16

/* One chunk of a parallel loop: items [begin, end). */
typedef void (*kn_range_fn)(void *arg, int64_t begin, int64_t end);
/* One chunk of kn_parallel_chunks: chunk number c of n. */
typedef void (*kn_chunk_fn)(void *arg, int64_t c);

/* Threads the CPU kernels use (the caller's included): LG_THREADS from the environment when
 * set (1 … KN_MAX_THREADS), else the CPUs this process may run on, at most KN_MAX_THREADS. */
int kn_threads(void);
/* Sets the thread count for later calls (tests, benchmarks); 0 restores the default. Not to be
 * called while a kernel runs. */
void kn_set_threads(int n);

/* Runs fn over [0, n) in chunks of at least `grain` items (one chunk, on this thread, when n is
 * below 2·grain or the pool has one thread). */
void kn_parallel_for(int64_t n, int64_t grain, kn_range_fn fn, void *arg);
/* Runs fn(arg, c) for c in [0, n), spread over the threads. */
void kn_parallel_chunks(int64_t n, kn_chunk_fn fn, void *arg);

/* For tests: the caller pauses `spins` rounds (a pause instruction each) between publishing a
 * job's chunk count and opening its chunks to claims, widening the window in which a worker
 * still in the last job's claim loop sees the new count (kn_pool.c's top); 0, the default, for
 * none. */
void kn_pool_set_publish_delay(int spins);

#endif
