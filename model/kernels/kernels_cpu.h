/* kernels_cpu.h — private to the CPU kernels: the table's kernels kn_cpu_<kernel>, declared
 * from kernels.h's list with the signatures of struct kn_backend, and what their files share:
 * the grain of a parallel loop, the walk over a geometry's rows, fixed row blocks and the
 * layer norm's row arithmetic.
 *
 *   kernels_cpu.c       memory, GEMM (split over the pool's threads), the table
 *   kernels_cpu_gemm.c  a one-thread AVX-512 GEMM for the shapes it wins over OpenBLAS
 *   kernels_cpu_ew.c    elementwise: strided gathers, broadcast binaries, activations, dropout
 *   kernels_cpu_rows.c  rows and reductions: softmax, layer norm, sums, embedding, AdamW
 *   kernels_cpu_nn.c    network-level: the LSTM cell, GLU, gate-add-norm, losses, quantisation
 */
#ifndef LG_KERNELS_CPU_H
#define LG_KERNELS_CPU_H

#include <math.h>

#include "kernels.h"
#include "kn_pool.h"

/* The kernels' loops are compiled three times — AVX-512, AVX2 with FMA, and the x86-64 baseline
 * every build otherwise targets (SSE2: 4 floats a vector) — and the best the CPU has is picked
 * when the program loads (target_clones: an ifunc). Numerics: the AVX2 and
 * AVX-512 clones fuse multiply-adds, so results may differ in the last bits between CPUs.
 * GCC only: Clang 14 (the fuzz build's compiler) names the dispatcher "f.ifunc",
 * so a clone called from another file does not link; there the baseline loop is the kernel. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KN_SIMD __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KN_SIMD
#endif

/* Elements per chunk of an elementwise loop: below 2·KN_GRAIN a kernel runs on one thread
 * (waking a worker costs about as much as 16 Ki elements of arithmetic). */
#define KN_GRAIN 16384

/* Chunks of a reduction over rows whose result must not depend on the thread count: fixed, and
 * merged in order. */
#define KN_RED_CHUNKS 8

/* Rows of a kernel whose rows are n floats long, at least KN_GRAIN floats a chunk. */
static inline int64_t kn_row_grain(int64_t n) { return n > 0 && n < KN_GRAIN ? KN_GRAIN / n : 1; }

/* Rows [*r0, *r1) of block c of the KN_RED_CHUNKS fixed blocks over `rows` (empty past the
 * end). */
static inline void kn_red_block(int64_t c, int64_t rows, int64_t *r0, int64_t *r1)
{
    int64_t per = (rows + KN_RED_CHUNKS - 1) / KN_RED_CHUNKS;
    *r0 = c * per;
    *r1 = *r0 + per < rows ? *r0 + per : rows;
}

/* Widest rows whose weight and bias partial sums kn_cpu_wb_sums splits over the threads (their
 * blocks' sums live on the stack). */
#define KN_WB_MAX 1024

/* Rows [r0, r1) of a row kernel's weight and bias gradients: adds their terms into dw, db [n]
 * (either NULL when not wanted). */
typedef void (*kn_wb_rows_fn)(const void *arg, float *dw, float *db, int64_t r0, int64_t r1);

/* The layer norm of one row x [n] whose sum is `sum` (its callers take the sum on the way):
 * y = (x − m)·rs·w + b with m the mean and rs = 1/√(var + eps), which *mean, *rstd get. */
static inline __attribute__((always_inline)) void
kn_ln_row(float *restrict y, float *mean, float *rstd, const float *restrict x,
          const float *restrict w, const float *restrict b, float sum, int64_t n, float eps)
{
    float m = sum / (float)n, v = 0.0f;
#pragma omp simd reduction(+ : v)
    for (int64_t j = 0; j < n; j++) v += (x[j] - m) * (x[j] - m);
    float rs = 1.0f / sqrtf(v / (float)n + eps);
    for (int64_t j = 0; j < n; j++) y[j] = (x[j] - m) * rs * w[j] + b[j];
    *mean = m;
    *rstd = rs;
}

/* The layer norm's backward sums of a row: mean(w·dy) and mean(w·dy·x̂), x̂ = (x − m)·rs; the
 * layer norm's and GateAddNorm's backward share them. */
static inline __attribute__((always_inline)) void
kn_ln_dmeans(float *dn_mean, float *dn_norm_mean, const float *restrict w, const float *restrict dy,
             const float *restrict x, float m, float rs, int64_t n)
{
    float a = 0.0f, b = 0.0f;
#pragma omp simd reduction(+ : a, b)
    for (int64_t j = 0; j < n; j++) {
        float dn = w[j] * dy[j];
        a += dn;
        b += dn * (x[j] - m) * rs;
    }
    *dn_mean = a / (float)n;
    *dn_norm_mean = b / (float)n;
}

/* The outer three dims of a geometry as one row index r: rows r ∈ [rb, re) in order, with
 * oa_/ob_ the operands' offsets of row r (row_ is r, po the output row when out is not NULL). */
#define KN_FOR_ROWS(g, out, rb, re, ...)                                                           \
    do {                                                                                           \
        int64_t n12_ = (g)->ne[1] * (g)->ne[2], r_ = (rb);                                         \
        int64_t i0 = r_ / n12_, i1 = (r_ % n12_) / (g)->ne[2], i2 = r_ % (g)->ne[2];               \
        for (int64_t row_ = r_; row_ < (re); row_++) {                                             \
            int64_t oa_ = i0 * (g)->sa[0] + i1 * (g)->sa[1] + i2 * (g)->sa[2];                     \
            int64_t ob_ = i0 * (g)->sb[0] + i1 * (g)->sb[1] + i2 * (g)->sb[2];                     \
            float *po = (out) ? (out) + row_ * (g)->ne[3] : NULL;                                  \
            (void)ob_;                                                                             \
            (void)po;                                                                              \
            __VA_ARGS__;                                                                           \
            if (++i2 == (g)->ne[2]) {                                                              \
                i2 = 0;                                                                            \
                if (++i1 == (g)->ne[1]) i1 = 0, i0++;                                              \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static inline int64_t kn_geom_rows(const struct kn_geom *g)
{
    return g->ne[0] * g->ne[1] * g->ne[2];
}

/* Rows that may be split between threads for a kernel that writes through the geometry's
 * strides `s` (a gradient read back through a broadcast): the rows of one index of the outermost
 * dim of more than one element, when that dim has a stride (its rows then write apart); 0 when
 * the rows may collide and the loop must stay on one thread. */
static inline int64_t kn_scatter_unit(const struct kn_geom *g, const int64_t *s)
{
    for (int k = 0; k < 3; k++) {
        if (g->ne[k] == 1) continue;
        if (s[k] == 0) return 0;
        int64_t u = 1;
        for (int j = k + 1; j < 3; j++) u *= g->ne[j];
        return u;
    }
    return 0; /* one row */
}

/* The table's kernels, kn_cpu_<kernel> for every entry of KN_KERNELS, each declared with its
 * member's signature (kernels.h has the contracts); each is defined in the file of its kind
 * (the list above). */
#define KN_CPU_DECLARE(k) extern __typeof__(*kn_cpu.k) kn_cpu_##k;
KN_KERNELS(KN_CPU_DECLARE)
#undef KN_CPU_DECLARE

/* kernels_cpu_rows.c, for the row kernels' weight and bias gradients */
/* Σ over rows of dy [rows, n] (row stride ld) into acc[n] (+=), in KN_RED_CHUNKS fixed row
 * blocks merged in order */
void kn_cpu_colsum(float *acc, const float *dy, int64_t rows, int64_t n, int64_t ld);
/* dw, db [n] (+=; either may be NULL) of a row kernel whose rows' terms fn adds: on one thread
 * when the rows are few or longer than KN_WB_MAX, else in KN_RED_CHUNKS fixed row blocks, each
 * into partial sums of its own, merged in block order (the same bits on any thread count). */
void kn_cpu_wb_sums(float *dw, float *db, int64_t rows, int64_t n, kn_wb_rows_fn fn,
                    const void *arg);

/* kernels_cpu_gemm.c: one thread's C = alpha·op(A)·op(B) + beta·C (BLAS conventions, k > 0) when
 * the CPU has AVX-512, LG_GEMM is not "openblas" and the shape is one it wins (B as stored; A
 * transposed or at most 256 rows; at least 4 rows; C's width a multiple of 32 or at least 128):
 * true when done, false for OpenBLAS to do it. */
bool kn_avx512_gemm(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n, int k,
                    float alpha, int lda, int ldb, float beta, int ldc);

#endif
