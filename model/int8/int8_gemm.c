/* int8_gemm.c — the s8 × s8 → s32 matrix product the quantised linears run on:
 * C[m, n] = Σ_k A[m, k] · B[n, k], both operands row-major along k (B is a Linear weight).
 *
 * AVX2, exact: 16 int8 values at a time are sign-extended to int16 (vpmovsxbw) and multiplied
 * pairwise with vpmaddwd, which adds each pair of int16 products into an int32 lane — no
 * saturation anywhere (|a·b| ≤ 128² and a pair sums to at most 2·128² = 32768 < 2³¹), unlike
 * the u8 × s8 vpmaddubsw. The micro-kernel computes a 4 × 2 tile of C with 8 vector
 * accumulators; columns of C are blocked so that a block of B stays in L2 while every row of
 * A streams past it. K % 16 tails, and the M and N edges, take a portable scalar/1 × 1 path.
 * The int32 sum cannot overflow while K ≤ Q8_GEMM_MAX_K (2³¹ / 128²).
 */
#include <immintrin.h>
#include <math.h>

#include "int8_impl.h"

#define Q8_GEMM_MAX_K (INT64_C(1) << 17) /* 131072 · 128² = 2³¹: one short of overflowing */
#define MR            4                  /* rows of A per micro-tile */
#define NR            2                  /* rows of B per micro-tile */
#define BLOCK_BYTES   (256 * 1024)       /* bytes of B per column block (L2) */

/* 16 int8 values sign-extended to 16 int16 lanes. */
static inline __m256i load16(const int8_t *p)
{
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
}

static inline int32_t hsum(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* The lane sums of eight vectors, in order: [Σv0, Σv1, ..., Σv7]. */
static inline __m256i hsum8(__m256i v0, __m256i v1, __m256i v2, __m256i v3, __m256i v4, __m256i v5,
                            __m256i v6, __m256i v7)
{
    __m256i t0 = _mm256_hadd_epi32(v0, v1), t1 = _mm256_hadd_epi32(v2, v3);
    __m256i t2 = _mm256_hadd_epi32(v4, v5), t3 = _mm256_hadd_epi32(v6, v7);
    __m256i u0 = _mm256_hadd_epi32(t0, t1); /* per 128-bit lane: partial Σv0..Σv3 */
    __m256i u1 = _mm256_hadd_epi32(t2, t3); /* per 128-bit lane: partial Σv4..Σv7 */
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
                            _mm256_permute2x128_si256(u0, u1, 0x31));
}

/* Σ_{k0 ≤ k < K} a[k]·b[k], the scalar tail. */
static inline int32_t dot_tail(const int8_t *a, const int8_t *b, int64_t k0, int64_t K)
{
    int32_t s = 0;
    for (int64_t k = k0; k < K; k++) s += (int32_t)a[k] * (int32_t)b[k];
    return s;
}

/* One element: Σ_k a[k]·b[k]. */
static int32_t dot_1x1(const int8_t *a /* [K] */, const int8_t *b /* [K] */, int64_t K)
{
    __m256i acc = _mm256_setzero_si256();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16)
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(load16(a + k), load16(b + k)));
    return hsum(acc) + dot_tail(a, b, k, K);
}

/* Where a product goes: C (int32) when y is NULL, else y[m, n] = sx·sw[n]·C[m, n] + bias[n]. */
struct out {
    int32_t *C;
    float *y;
    float sx;
    const float *sw, *bias;
    int64_t ldc;
};

static inline void put(const struct out *o, int64_t m, int64_t n, int32_t v)
{
    if (!o->y)
        o->C[m * o->ldc + n] = v;
    else
        o->y[m * o->ldc + n] = fmaf((float)v, o->sx * o->sw[n], o->bias ? o->bias[n] : 0.0f);
}

/* Writes a finished 4 × 2 tile r = [c00, c01, c10, c11, c20, c21, c30, c31] at (m, n), through
 * the epilogue when there is one (the same fmaf as put, eight at a time). */
static inline void put_4x2(const struct out *o, int64_t m, int64_t n, __m256i r)
{
    __m128 lo, hi;
    if (!o->y) {
        lo = _mm_castsi128_ps(_mm256_castsi256_si128(r));
        hi = _mm_castsi128_ps(_mm256_extracti128_si256(r, 1));
    } else {
        float s0 = o->sx * o->sw[n], s1 = o->sx * o->sw[n + 1];
        float b0 = o->bias ? o->bias[n] : 0.0f, b1 = o->bias ? o->bias[n + 1] : 0.0f;
        __m256 f =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(r), _mm256_setr_ps(s0, s1, s0, s1, s0, s1, s0, s1),
                            _mm256_setr_ps(b0, b1, b0, b1, b0, b1, b0, b1));
        lo = _mm256_castps256_ps128(f);
        hi = _mm256_extractf128_ps(f, 1);
    }
    float *base = o->y ? o->y : (float *)o->C; /* int32 and float are both 4 bytes */
    _mm_storel_pi((__m64 *)(base + m * o->ldc + n), lo);
    _mm_storeh_pi((__m64 *)(base + (m + 1) * o->ldc + n), lo);
    _mm_storel_pi((__m64 *)(base + (m + 2) * o->ldc + n), hi);
    _mm_storeh_pi((__m64 *)(base + (m + 3) * o->ldc + n), hi);
}

/* One row of A against the tile's two rows of B, 16 values of k: c0 += a·b0, c1 += a·b1. */
static inline void madd_1x2(__m256i *c0, __m256i *c1, __m256i va, __m256i vb0, __m256i vb1)
{
    *c0 = _mm256_add_epi32(*c0, _mm256_madd_epi16(va, vb0));
    *c1 = _mm256_add_epi32(*c1, _mm256_madd_epi16(va, vb1));
}

/* The 4 × 2 tile at (m, n): Σ_k A[m + i, k]·B[n + j, k] for i < 4, j < 2. */
static void kernel_4x2(const struct out *o, int64_t m, int64_t n, const int8_t *A /* [4, K] */,
                       const int8_t *B /* [2, K] */, int64_t K)
{
    const int8_t *a0 = A, *a1 = A + K, *a2 = A + 2 * K, *a3 = A + 3 * K, *b0 = B, *b1 = B + K;
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
            c30 = c00, c31 = c00;
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m256i vb0 = load16(b0 + k), vb1 = load16(b1 + k);
        madd_1x2(&c00, &c01, load16(a0 + k), vb0, vb1);
        madd_1x2(&c10, &c11, load16(a1 + k), vb0, vb1);
        madd_1x2(&c20, &c21, load16(a2 + k), vb0, vb1);
        madd_1x2(&c30, &c31, load16(a3 + k), vb0, vb1);
    }
    __m256i r = hsum8(c00, c01, c10, c11, c20, c21, c30, c31);
    if (k < K) {
        int32_t t[8];
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++) t[i * NR + j] = dot_tail(A + i * K, B + j * K, k, K);
        r = _mm256_add_epi32(r, _mm256_loadu_si256((const __m256i *)t));
    }
    put_4x2(o, m, n, r);
}

static void gemm(const struct out *o, const int8_t *A /* [M, K] */, const int8_t *B /* [N, K] */,
                 int64_t M, int64_t N, int64_t K)
{
    LG_ASSERT(M >= 0 && N >= 0 && K >= 0 && "q8 GEMM: negative size");
    LG_ASSERT(K < Q8_GEMM_MAX_K && "q8 GEMM: K too large for exact int32 accumulation");
    int64_t nb = K > 0 ? BLOCK_BYTES / K : N; /* rows of B per block, a multiple of NR */
    nb = LG_MAX(NR, nb - nb % NR);
    for (int64_t n0 = 0; n0 < N; n0 += nb) {
        int64_t n1 = LG_MIN(N, n0 + nb), n2 = n0 + (n1 - n0) / NR * NR, m = 0;
        for (; m + MR <= M; m += MR) {
            const int8_t *a = A + m * K;
            for (int64_t n = n0; n < n2; n += NR) kernel_4x2(o, m, n, a, B + n * K, K);
            for (int64_t n = n2; n < n1; n++)
                for (int i = 0; i < MR; i++) put(o, m + i, n, dot_1x1(a + i * K, B + n * K, K));
        }
        for (; m < M; m++)
            for (int64_t n = n0; n < n1; n++) put(o, m, n, dot_1x1(A + m * K, B + n * K, K));
    }
}

void q8_gemm_s8s8s32(int32_t *C /* [M, N] */, const int8_t *A /* [M, K] */,
                     const int8_t *B /* [N, K] */, int64_t M, int64_t N, int64_t K)
{
    gemm(&(struct out){.C = C, .ldc = N}, A, B, M, N, K);
}

void q8_gemm_s8s8_f32(float *y /* [M, N] */, const int8_t *A /* [M, K] */,
                      const int8_t *B /* [N, K] */, int64_t M, int64_t N, int64_t K, float sx,
                      const float *sw /* [N] */, const float *bias /* [N] or NULL */)
{
    gemm(&(struct out){.y = y, .sx = sx, .sw = sw, .bias = bias, .ldc = N}, A, B, M, N, K);
}
