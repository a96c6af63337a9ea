/* kernels_cpu_gemm.c — a one-thread AVX-512 SGEMM for the products whose B is read as stored
 * (op(B) = B: the weight gradients Xᵀ·dY and the LSTM's small recurrent products), where OpenBLAS
 * spends a pass over both operands packing them. Here nothing is packed: the micro-kernel
 * broadcasts A's elements straight from memory (12 rows of op(A): 12 floats of one row of a
 * transposed A, or one float from each of 12 rows of a plain one) and reads B's rows as 32-float
 * vectors, C's 12×32 tile in 24 registers; K goes in blocks of KC so that a block of both
 * operands stays in L2 while every tile of C passes over it.
 *
 * Measured against OpenBLAS's Cooperlake kernels on a Zen 4 (tests/bench/bench_ops,
 * docs/benchmarks.md): 1.09-1.10x on one thread (1.07-1.12x on the pool) for weight gradients over
 * 10752-12288 rows, 1.04-1.05x (1.06-1.07x) for the LSTM's [64, 160]·[160, 640] steps and their
 * backward, but 0.82-0.93x in a scratch program on plain products with a long, cold A (there
 * OpenBLAS's packing pays: its packed A gives a tile one line to broadcast from, ours 12 rows) —
 * so kn_avx512_gemm takes only the shapes it wins and OpenBLAS keeps the rest. LG_GEMM=openblas
 * turns it off.
 *
 * Numerics: the same products summed in another order (K ascending within a block, blocks in
 * order), FMA throughout; deterministic for a given shape and strides. */
#include <stdlib.h>
#include <string.h>

#include "kernels_cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define MR 12  /* rows of C a tile */
#define NR 32  /* columns of C a tile: two 16-float vectors */
#define KC 160 /* K a block: 160 rows of a [·, 160] operand, 100 KiB, twice, in a 1 MiB L2 */

#define TGT __attribute__((target("avx512f,fma")))

/* The tile's arguments: op(A)(r, k) at a[r·ars + k·aks]; B(k, j) at b[k·ldb + j] for the j that
 * m0 (columns 0-15) and m1 (16-31) select; C = alpha·A·B + beta·C over the tile. */
#define TILE_ARGS                                                                                  \
    int kc, const float *restrict a, int64_t ars, int64_t aks, const float *restrict b,            \
        int64_t ldb, float *restrict c, int64_t ldc, float alpha, float beta, __mmask16 m0,        \
        __mmask16 m1

/* One tile of ROWS rows: ROWS·2 accumulators, fully unrolled so that they stay in registers. */
#define TILE_BODY(ROWS)                                                                            \
    __m512 acc[ROWS][2];                                                                           \
    for (int r = 0; r < ROWS; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();                    \
    for (int k = 0; k < kc; k++) {                                                                 \
        const float *bk = b + k * ldb, *ak = a + k * aks;                                          \
        __m512 b0 = _mm512_maskz_loadu_ps(m0, bk), b1 = _mm512_maskz_loadu_ps(m1, bk + 16);        \
        _Pragma("GCC unroll 16") for (int r = 0; r < ROWS; r++)                                    \
        {                                                                                          \
            __m512 x = _mm512_set1_ps(ak[r * ars]);                                                \
            acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);                                         \
            acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);                                         \
        }                                                                                          \
    }                                                                                              \
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);                                  \
    _Pragma("GCC unroll 16") for (int r = 0; r < ROWS; r++)                                        \
    {                                                                                              \
        float *cr = c + r * ldc;                                                                   \
        __m512 v0 = _mm512_mul_ps(va, acc[r][0]), v1 = _mm512_mul_ps(va, acc[r][1]);               \
        if (beta != 0.0f) { /* BLAS: beta 0 never reads C (it may be uninitialised) */             \
            v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cr), v0);                           \
            v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cr + 16), v1);                      \
        }                                                                                          \
        _mm512_mask_storeu_ps(cr, m0, v0);                                                         \
        _mm512_mask_storeu_ps(cr + 16, m1, v1);                                                    \
    }

// clang-format off
TGT static void tile12(TILE_ARGS) { TILE_BODY(12) }
TGT static void tile8(TILE_ARGS) { TILE_BODY(8) }
TGT static void tile4(TILE_ARGS) { TILE_BODY(4) }
TGT static void tile2(TILE_ARGS) { TILE_BODY(2) }
TGT static void tile1(TILE_ARGS) { TILE_BODY(1) }
// clang-format on

/* A tile of mr ≤ MR rows, as unrolled tiles of 12, 8, 4, 2 and 1 rows (7 = 4 + 2 + 1). */
TGT static void tile(int mr, TILE_ARGS)
{
    while (mr > 0) {
        int rows = mr >= 12 ? 12 : mr >= 8 ? 8 : mr >= 4 ? 4 : mr >= 2 ? 2 : 1;
        void (*f)(TILE_ARGS) = rows == 12  ? tile12
                               : rows == 8 ? tile8
                               : rows == 4 ? tile4
                               : rows == 2 ? tile2
                                           : tile1;
        f(kc, a, ars, aks, b, ldb, c, ldc, alpha, beta, m0, m1);
        a += rows * ars, c += rows * ldc, mr -= rows;
    }
}

TGT static void gemm_nb(float *c, const float *a, const float *b, bool ta, int m, int n, int k,
                        float alpha, int64_t lda, int64_t ldb, float beta, int64_t ldc)
{
    int64_t ars = ta ? 1 : lda, aks = ta ? lda : 1;
    for (int k0 = 0; k0 < k; k0 += KC) {
        int kc = k - k0 < KC ? k - k0 : KC;
        float be = k0 ? 1.0f : beta; /* later blocks add to what the first wrote */
        for (int i = 0; i < m; i += MR) {
            int mr = m - i < MR ? m - i : MR;
            for (int j = 0; j < n; j += NR) {
                int nr = n - j < NR ? n - j : NR;
                __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
                __mmask16 m1 = nr >= 32 ? 0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
                tile(mr, kc, a + i * ars + k0 * aks, ars, aks, b + k0 * ldb + j, ldb,
                     c + i * ldc + j, ldc, alpha, be, m0, m1);
            }
        }
    }
}

/* 1 when in use, 0 when not, -1 until first asked: then on where the CPU has AVX-512F and
 * LG_GEMM is not "openblas". */
static int own_on = -1;

static bool cpu_has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

bool kn_cpu_gemm_own(void)
{
    int on = __atomic_load_n(&own_on, __ATOMIC_RELAXED);
    if (on < 0) {
        const char *s = getenv("LG_GEMM");
        on = cpu_has_avx512() && !(s && strcmp(s, "openblas") == 0);
        __atomic_store_n(&own_on, on, __ATOMIC_RELAXED);
    }
    return on;
}

bool kn_cpu_gemm_use_own(bool on)
{
    on = on && cpu_has_avx512();
    __atomic_store_n(&own_on, on, __ATOMIC_RELAXED);
    return on;
}

bool kn_avx512_gemm(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n, int k,
                    float alpha, int lda, int ldb, float beta, int ldc)
{
    /* the shapes it wins (see the top): B as stored, and A transposed or short; not a row or
     * two (OpenBLAS's GEMV), nor a narrow C whose last tile would be mostly masked (the
     * attention's [24, 40] products: 1.3 ms a step against OpenBLAS's 1.0-1.2) */
    if (tb || !(ta || m <= 256) || m < 4 || n < 16 || (n < 128 && n % NR != 0) || k < 16 ||
        !kn_cpu_gemm_own())
        return false;
    gemm_nb(c, a, b, ta, m, n, k, alpha, lda, ldb, beta, ldc);
    return true;
}

#else /* not x86-64 GCC/Clang: OpenBLAS for every product */

bool kn_avx512_gemm(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n, int k,
                    float alpha, int lda, int ldb, float beta, int ldc)
{
    (void)c, (void)a, (void)b, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha;
    (void)lda, (void)ldb, (void)beta, (void)ldc;
    return false;
}

bool kn_cpu_gemm_own(void) { return false; }
bool kn_cpu_gemm_use_own(bool on)
{
    (void)on;
    return false;
}

#endif
