/* kernels_cpu.c — the CPU kernel table (kernels.h): memory, GEMM (OpenBLAS, and the own
 * AVX-512 GEMM of kernels_cpu_gemm.c), and the table itself. Elementwise kernels are in
 * kernels_cpu_ew.c, rows and reductions in kernels_cpu_rows.c, the network-level kernels in
 * kernels_cpu_nn.c (kernels_cpu.h).
 *
 * Every kernel that is worth it runs on the pool's threads (kn_pool.h). A GEMM is split into
 * blocks of C's rows (or columns, when C is wide and short), each a one-thread call (OpenBLAS, or
 * on AVX-512 the shapes kernels_cpu_gemm.c does faster): one set of threads for the whole library,
 * and none spinning against another. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels_cpu.h"
#include "kn_blas.h"
#include "kn_math.h"

/* ---- memory ------------------------------------------------------------------------------- */

struct mem {
    float *dst;
    const float *src;
    int64_t cols, ld_dst, ld_src;
    float v;
};

static void zero_chunk(void *p, int64_t b, int64_t e)
{
    const struct mem *m = p;
    memset(m->dst + b, 0, (size_t)(e - b) * sizeof *m->dst);
}

void kn_cpu_zero(float *x, int64_t n)
{
    kn_parallel_for(n, 4 * KN_GRAIN, zero_chunk, &(struct mem){.dst = x});
}

void kn_cpu_add_scalar(float *restrict x, float v, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] += v;
}

KN_SIMD static void scale_chunk(void *p, int64_t b, int64_t e)
{
    const struct mem *m = p;
    float *y = m->dst, s = m->v;
    const float *x = m->src;
    for (int64_t i = b; i < e; i++) y[i] = s * x[i]; /* in place allowed: no restrict */
}

void kn_cpu_scale(float *y, const float *x, float s, int64_t n)
{
    kn_parallel_for(n, KN_GRAIN, scale_chunk, &(struct mem){.dst = y, .src = x, .v = s});
}

static void copy2d_chunk(void *p, int64_t b, int64_t e)
{
    const struct mem *m = p;
    for (int64_t r = b; r < e; r++)
        memcpy(m->dst + r * m->ld_dst, m->src + r * m->ld_src, (size_t)m->cols * sizeof *m->dst);
}

void kn_cpu_copy2d(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld_dst,
                   int64_t ld_src)
{
    kn_parallel_for(rows, kn_row_grain(cols), copy2d_chunk,
                    &(struct mem){dst, src, cols, ld_dst, ld_src, 0.0f});
}

KN_SIMD static void dcopy2d_chunk(void *p, int64_t b, int64_t e)
{
    const struct mem *m = p;
    for (int64_t r = b; r < e; r++) {
        float *restrict d = m->dst + r * m->ld_dst;
        const float *restrict s = m->src + r * m->ld_src;
        for (int64_t j = 0; j < m->cols; j++) d[j] += s[j];
    }
}

void kn_cpu_dcopy2d(float *dsrc, const float *ddst, int64_t rows, int64_t cols, int64_t ld_src,
                    int64_t ld_dst)
{
    kn_parallel_for(rows, kn_row_grain(cols), dcopy2d_chunk,
                    &(struct mem){dsrc, ddst, cols, ld_src, ld_dst, 0.0f});
}

/* ---- GEMM ----------------------------------------------------------------------------------- */

/* Below this many flops (2·m·n·k) a product is one call on this thread: waking a worker and
 * packing B twice cost more than the half it would take. */
#define KN_GEMM_SPLIT_FLOPS (2.0 * 1024 * 1024)

static void gemm1(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n, int k,
                  float alpha, int lda, int ldb, float beta, int ldc)
{
    if (m == 0 || n == 0) return;
    if (k == 0) { /* an empty sum: C = beta·C (BLAS would reject lda = 0) */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                c[(int64_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[(int64_t)i * ldc + j];
        return;
    }
    if (kn_avx512_gemm(c, a, b, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc)) return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, alpha, a, lda, b, ldb, beta, c, ldc);
}

struct gemm_job {
    float *c;
    const float *a, *b;
    bool ta, tb, by_rows;
    int m, n, k, lda, ldb, ldc, block;
    float alpha, beta;
};

/* Block `blk` of C: rows [blk·block, …) when by_rows, else columns. */
static void gemm_block(void *p, int64_t blk)
{
    const struct gemm_job *j = p;
    int lo = (int)blk * j->block, len = j->block;
    if (j->by_rows) {
        if (lo + len > j->m) len = j->m - lo;
        const float *a = j->ta ? j->a + lo : j->a + (int64_t)lo * j->lda;
        gemm1(j->c + (int64_t)lo * j->ldc, a, j->b, j->ta, j->tb, len, j->n, j->k, j->alpha, j->lda,
              j->ldb, j->beta, j->ldc);
    } else {
        if (lo + len > j->n) len = j->n - lo;
        const float *b = j->tb ? j->b + (int64_t)lo * j->ldb : j->b + lo;
        gemm1(j->c + lo, j->a, b, j->ta, j->tb, j->m, len, j->k, j->alpha, j->lda, j->ldb, j->beta,
              j->ldc);
    }
}

/* ---- a long inner dimension: split K, sum the parts ------------------------------------------ */

/* The other threads' partial products of a K-split GEMM: static (untracked, like the threads:
 * the kernels allocate nothing), used by one GEMM at a time; pages are touched only as far as
 * the largest such product of the run (a [640, 160] weight gradient: 400 KiB). */
#define KN_KSPLIT_FLOATS (1 << 20)
static float ksplit_scratch[KN_KSPLIT_FLOATS];
static pthread_mutex_t ksplit_mu = PTHREAD_MUTEX_INITIALIZER;

struct ksplit_job {
    struct gemm_job g;
    int parts, kpart;
};

/* Part p of K: into C (with beta) for part 0, into its scratch (beta 0) for the others. */
static void ksplit_part(void *p, int64_t part)
{
    const struct ksplit_job *j = p;
    const struct gemm_job *g = &j->g;
    int lo = (int)part * j->kpart, len = lo + j->kpart > g->k ? g->k - lo : j->kpart;
    /* op(A) [m, k]: columns lo… of A, or rows when A is stored transposed; op(B) [k, n] */
    const float *a = g->ta ? g->a + (int64_t)lo * g->lda : g->a + lo;
    const float *b = g->tb ? g->b + lo : g->b + (int64_t)lo * g->ldb;
    if (part == 0)
        gemm1(g->c, a, b, g->ta, g->tb, g->m, g->n, len, g->alpha, g->lda, g->ldb, g->beta, g->ldc);
    else
        gemm1(ksplit_scratch + (part - 1) * (int64_t)g->m * g->n, a, b, g->ta, g->tb, g->m, g->n,
              len, g->alpha, g->lda, g->ldb, 0.0f, g->n);
}

/* C += the scratch parts, in part order (rows of C spread over the threads). */
KN_SIMD static void ksplit_sum(void *p, int64_t r0, int64_t r1)
{
    const struct ksplit_job *j = p;
    const struct gemm_job *g = &j->g;
    for (int part = 1; part < j->parts; part++)
        for (int64_t r = r0; r < r1; r++) {
            float *restrict cr = g->c + r * g->ldc;
            const float *restrict pr = ksplit_scratch + ((part - 1) * (int64_t)g->m + r) * g->n;
            for (int64_t x = 0; x < g->n; x++) cr[x] += pr[x];
        }
}

/* A GEMM whose C is small and K long (a weight gradient over every row of a batch): splitting
 * C would pack all of the long operand on every thread (measured: slower than one thread for
 * [160, 160] over K = 10752, against 1.9x faster split over K). False when the scratch is taken
 * or too small: the caller splits C instead. */
static bool gemm_ksplit(const struct gemm_job *g, int threads)
{
    int64_t mn = (int64_t)g->m * g->n;
    if (mn * (threads - 1) > KN_KSPLIT_FLOATS || pthread_mutex_trylock(&ksplit_mu) != 0)
        return false;
    struct ksplit_job j = {*g, threads, (g->k + threads - 1) / threads};
    kn_parallel_chunks(threads, ksplit_part, &j);
    kn_parallel_for(g->m, kn_row_grain(g->n), ksplit_sum, &j);
    pthread_mutex_unlock(&ksplit_mu);
    return true;
}

/* Blocks of C per GEMM: a few per thread for a large product (a thread that loses its core
 * leaves its share), one per thread for a small one (measured on the LSTM's [64, 640] step: two
 * blocks 71 µs, six 80 µs), multiples of 16 (the kernels' vector width). */
#define KN_GEMM_BLOCK_FLOPS (8.0 * 1024 * 1024)

static _Atomic uint64_t gemm_flops; /* kn_cpu_gemm_flops; a relaxed add per product */

double kn_cpu_gemm_flops(void)
{
    return (double)atomic_load_explicit(&gemm_flops, memory_order_relaxed);
}

/* ---- the per-shape profile (kernels.h) ------------------------------------------------------- */

static atomic_bool prof_on;
static pthread_mutex_t prof_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kn_gemm_shape prof_rows[KN_GEMM_PROFILE_MAX + 1]; /* + the row for the rest */
static int prof_n;

void kn_cpu_gemm_profile(bool on)
{
    pthread_mutex_lock(&prof_mu);
    if (on) {
        memset(prof_rows, 0, sizeof prof_rows);
        prof_n = 0;
    }
    atomic_store(&prof_on, on);
    pthread_mutex_unlock(&prof_mu);
}

static double prof_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void prof_add(int m, int n, int k, bool ta, bool tb, int64_t calls, double seconds)
{
    pthread_mutex_lock(&prof_mu);
    struct kn_gemm_shape *r = prof_rows;
    while (r < prof_rows + prof_n &&
           !(r->m == m && r->n == n && r->k == k && r->ta == ta && r->tb == tb))
        r++;
    if (r == prof_rows + prof_n) {
        if (prof_n < KN_GEMM_PROFILE_MAX)
            *r = (struct kn_gemm_shape){m, n, k, ta, tb, 0, 0, 0}, prof_n++;
        else
            r = prof_rows + KN_GEMM_PROFILE_MAX; /* the rest: m = n = k = 0 */
    }
    r->calls += calls;
    r->seconds += seconds;
    r->flops += 2.0 * m * n * k * (double)calls;
    pthread_mutex_unlock(&prof_mu);
}

static int prof_cmp(const void *a, const void *b)
{
    double x = ((const struct kn_gemm_shape *)a)->seconds;
    double y = ((const struct kn_gemm_shape *)b)->seconds;
    return x > y ? -1 : x < y;
}

int kn_cpu_gemm_profile_rows(struct kn_gemm_shape *out, int max)
{
    pthread_mutex_lock(&prof_mu);
    struct kn_gemm_shape all[KN_GEMM_PROFILE_MAX + 1];
    int n = prof_n;
    memcpy(all, prof_rows, (size_t)n * sizeof *all);
    if (prof_rows[KN_GEMM_PROFILE_MAX].calls) all[n++] = prof_rows[KN_GEMM_PROFILE_MAX];
    pthread_mutex_unlock(&prof_mu);
    qsort(all, (size_t)n, sizeof *all, prof_cmp);
    if (n > max) n = max < 0 ? 0 : max;
    memcpy(out, all, (size_t)n * sizeof *out);
    return n;
}

/* ---- the entry points ------------------------------------------------------------------------ */

static void gemm_run(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n,
                     int k, float alpha, int lda, int ldb, float beta, int ldc)
{
    kn_blas_info(); /* OpenBLAS's core chosen by the CPU's features (before main; a safety net) */
    int threads = kn_threads();
    double flops = 2.0 * m * n * k;
    atomic_fetch_add_explicit(&gemm_flops, (uint64_t)flops, memory_order_relaxed);
    if (threads < 2 || flops < KN_GEMM_SPLIT_FLOPS || (m < 32 && n < 32 && k < 128)) {
        gemm1(c, a, b, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc);
        return;
    }
    bool by_rows = m >= n;
    struct gemm_job j = {c, a, b, ta, tb, by_rows, m, n, k, lda, ldb, ldc, 0, alpha, beta};
    if (k >= 4 * (m > n ? m : n) && gemm_ksplit(&j, threads)) return;
    int len = by_rows ? m : n;
    int blocks = flops / (3 * threads) >= KN_GEMM_BLOCK_FLOPS ? 3 * threads : threads;
    int block = (len + blocks - 1) / blocks;
    j.block = (block + 15) / 16 * 16;
    kn_parallel_chunks((len + j.block - 1) / j.block, gemm_block, &j);
}

void kn_cpu_gemm(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n, int k,
                 float alpha, int lda, int ldb, float beta, int ldc)
{
    if (!atomic_load_explicit(&prof_on, memory_order_relaxed)) {
        gemm_run(c, a, b, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc);
        return;
    }
    double t0 = prof_now();
    gemm_run(c, a, b, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc);
    prof_add(m, n, k, ta, tb, 1, prof_now() - t0);
}

struct gemm_batch_job {
    float *c;
    const float *a, *b;
    bool ta, tb;
    int m, n, k, lda, ldb, ldc;
    float alpha, beta;
    int64_t sa, sb, sc;
};

static void gemm_batch_entry(void *p, int64_t i)
{
    const struct gemm_batch_job *j = p;
    gemm1(j->c + i * j->sc, j->a + i * j->sa, j->b + i * j->sb, j->ta, j->tb, j->m, j->n, j->k,
          j->alpha, j->lda, j->ldb, j->beta, j->ldc);
}

static void gemm_batched_run(float *c, const float *a, const float *b, bool ta, bool tb, int m,
                             int n, int k, float alpha, int lda, int ldb, float beta, int ldc,
                             int batch, int64_t stride_a, int64_t stride_b, int64_t stride_c)
{
    kn_blas_info();
    double flops = 2.0 * m * n * k;
    if (stride_c == 0 || flops >= KN_GEMM_SPLIT_FLOPS || batch < 2 ||
        flops * batch < KN_GEMM_SPLIT_FLOPS) {
        /* entries that add into one C run in order; large ones split themselves; a small batch
         * stays on this thread */
        for (int i = 0; i < batch; i++)
            gemm_run(c + i * stride_c, a + i * stride_a, b + i * stride_b, ta, tb, m, n, k, alpha,
                     lda, ldb, beta, ldc);
        return;
    }
    struct gemm_batch_job j = {c,   a,   b,   ta,    tb,   m,        n,        k,
                               lda, ldb, ldc, alpha, beta, stride_a, stride_b, stride_c};
    atomic_fetch_add_explicit(&gemm_flops, (uint64_t)(flops * batch), memory_order_relaxed);
    kn_parallel_chunks(batch, gemm_batch_entry, &j);
}

void kn_cpu_gemm_batched(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n,
                         int k, float alpha, int lda, int ldb, float beta, int ldc, int batch,
                         int64_t stride_a, int64_t stride_b, int64_t stride_c)
{
    if (!atomic_load_explicit(&prof_on, memory_order_relaxed)) {
        gemm_batched_run(c, a, b, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc, batch, stride_a,
                         stride_b, stride_c);
        return;
    }
    double t0 = prof_now();
    gemm_batched_run(c, a, b, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc, batch, stride_a,
                     stride_b, stride_c);
    prof_add(m, n, k, ta, tb, batch, prof_now() - t0);
}

/* ---- the table ------------------------------------------------------------------------------- */

#define KN_CPU_ENTRY(k) .k = kn_cpu_##k,
const struct kn_backend kn_cpu = {.name = "cpu", KN_KERNELS(KN_CPU_ENTRY)};
#undef KN_CPU_ENTRY

/* KN_KERNELS lists every member of the table (a member it missed would be NULL) */
#define KN_ONE(k) +1
_Static_assert(sizeof(struct kn_backend) ==
                   sizeof(const char *) + (0 KN_KERNELS(KN_ONE)) * sizeof(void (*)(void)),
               "KN_KERNELS must name every kernel of struct kn_backend");
#undef KN_ONE

const struct kn_backend *kn_backend_for(enum tn_device dev)
{
#ifdef LG_HAVE_CUDA
    if (dev == TN_CUDA) return &kn_cuda;
#endif
    return dev == TN_CPU ? &kn_cpu : NULL;
}
