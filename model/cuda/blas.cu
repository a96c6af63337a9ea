/* blas.cu — matrix products on the device: FP32 GEMMs through cuBLAS (row-major operands
 * passed as their column-major transposes), and the INT8 GEMM with int32 accumulation
 * (cublasGemmEx, or a tiled kernel where cuBLAS declines the shape). */
#include <limits.h>

#include "cuda_impl.h"

static cublasOperation_t op_of(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

/* c[i, j] = beta·c[i, j] (0 when beta is 0: an empty sum) for i < m, j < n */
__global__ void k_scale2d(float *c /* [m, ldc] */, float beta, int64_t m, int64_t n, int64_t ldc)
{
    KN_LOOP(t, m * n)
    {
        float *p = c + (t / n) * ldc + t % n;
        *p = beta == 0.0f ? 0.0f : beta * *p;
    }
}

/* Row-major C = alpha·op(A)·op(B) + beta·C is, read column-major,
 * Cᵀ = alpha·op(B)ᵀ·op(A)ᵀ + beta·Cᵀ: cuBLAS gets B first, with the same transposition flags
 * and leading dimensions. */
void kn_cuda_gemm(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n, int k,
                  float alpha, int lda, int ldb, float beta, int ldc)
{
    if (m == 0 || n == 0) return;
    if (k == 0) { /* BLAS would reject lda = 0; the product is empty */
        k_scale2d<<<kn_grid((int64_t)m * n), KN_THREADS>>>(c, beta, m, n, ldc);
        KN_CHECK_LAUNCH("k_scale2d");
        return;
    }
    cublasHandle_t h = kn_cuda_blas();
    if (!h) return;
    cublasStatus_t st = kn_cublas_api()->sgemm(h, op_of(tb), op_of(ta), n, m, k, &alpha, b, ldb, a,
                                               lda, &beta, c, ldc);
    kn_cuda_record_blas(st, "cublasSgemm");
}

void kn_cuda_gemm_batched(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n,
                          int k, float alpha, int lda, int ldb, float beta, int ldc, int batch,
                          int64_t stride_a, int64_t stride_b, int64_t stride_c)
{
    if (batch <= 0 || m == 0 || n == 0) return;
    if (k == 0 || (stride_c == 0 && batch > 1)) {
        /* one C for every entry: the products add into it in order, as on the CPU */
        for (int i = 0; i < batch; i++)
            kn_cuda_gemm(c + i * stride_c, a + i * stride_a, b + i * stride_b, ta, tb, m, n, k,
                         alpha, lda, ldb, beta, ldc);
        return;
    }
    cublasHandle_t h = kn_cuda_blas();
    if (!h) return;
    cublasStatus_t st = kn_cublas_api()->sgemm_strided_batched(
        h, op_of(tb), op_of(ta), n, m, k, &alpha, b, ldb, stride_b, a, lda, stride_a, &beta, c, ldc,
        stride_c, batch);
    kn_cuda_record_blas(st, "cublasSgemmStridedBatched");
}

/* ---- INT8 ---------------------------------------------------------------------------------- */

#define Q8_TILE  16
#define Q8_MAX_K (INT64_C(1) << 17) /* 131072 · 128² = 2³¹: as q8_gemm_s8s8s32 */

static bool force_kernel;
extern "C" void kn_cuda_int8_force_kernel(bool on) { force_kernel = on; }

/* C[m, n] = Σ_k A[m, k]·B[n, k]: 16×16 tiles of C, 16-wide slices of k staged in shared memory,
 * int32 accumulation (exact: |a·b| ≤ 128², and K ≤ 2¹⁷ keeps the sum below 2³¹). */
__global__ void k_gemm_s8s8s32(int32_t *C /* [M, N] */, const int8_t *A /* [M, K] */,
                               const int8_t *B /* [N, K] */, int64_t M, int64_t N, int64_t K)
{
    __shared__ int32_t sa[Q8_TILE][Q8_TILE + 1], sb[Q8_TILE][Q8_TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t n = (int64_t)blockIdx.x * Q8_TILE + tx;
    int64_t tiles_m = (M + Q8_TILE - 1) / Q8_TILE;
    for (int64_t bm = blockIdx.y; bm < tiles_m; bm += gridDim.y) {
        int64_t m = bm * Q8_TILE + ty;
        int64_t brow = (int64_t)blockIdx.x * Q8_TILE + ty; /* the row of B this thread stages */
        int32_t acc = 0;
        for (int64_t k0 = 0; k0 < K; k0 += Q8_TILE) {
            int64_t k = k0 + tx;
            sa[ty][tx] = m < M && k < K ? (int32_t)A[m * K + k] : 0;
            sb[ty][tx] = brow < N && k < K ? (int32_t)B[brow * K + k] : 0;
            __syncthreads();
            for (int kk = 0; kk < Q8_TILE; kk++) acc += sa[ty][kk] * sb[tx][kk];
            __syncthreads();
        }
        if (m < M && n < N) C[m * N + n] = acc;
    }
}

/* Column-major view: Cᵀ [N, M] = Bᵀ·A where B [N, K] row-major is a K×N column-major matrix
 * (op T) and A [M, K] row-major is K×M (op N): the "TN" layout cuBLAS's int8 path wants. */
static cublasStatus_t gemm_s8_blas(int32_t *C /* [M, N] */, const int8_t *A /* [M, K] */,
                                   const int8_t *B /* [N, K] */, int M, int N, int K)
{
    cublasHandle_t h = kn_cuda_blas();
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    const int32_t one = 1, zero = 0;
    return kn_cublas_api()->gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, B, CUDA_R_8I, K, A,
                                    CUDA_R_8I, K, &zero, C, CUDA_R_32I, N, CUBLAS_COMPUTE_32I,
                                    CUBLAS_GEMM_DEFAULT);
}

/* What cuBLAS documents for cublasGemmEx with CUDA_R_8I inputs and CUBLAS_COMPUTE_32I: alpha
 * and beta 0 or 1 (ours are 1 and 0), A and B 32-bit aligned, lda and ldb multiples of 4 (both
 * are K here). Beyond the documented: N (ldc) a multiple of 4 and C 16-byte aligned, which the
 * IMMA kernels want, and sizes that fit cuBLAS's int. A shape cuBLAS still declines is caught
 * by its status (kn_cuda_gemm_s8s8s32). */
static bool s8_blas_takes(const int32_t *C, const int8_t *A, const int8_t *B, int64_t M, int64_t N,
                          int64_t K)
{
    return K % 4 == 0 && N % 4 == 0 && (uintptr_t)A % 4 == 0 && (uintptr_t)B % 4 == 0 &&
           (uintptr_t)C % 16 == 0 && M <= INT_MAX && N <= INT_MAX && K <= INT_MAX;
}

/* cuBLAS declining a shape (NOT_SUPPORTED), or rejecting it as an argument it will not take
 * (INVALID_VALUE: a dimension or alignment rule of the int8 path): nothing was launched, so
 * the tiled kernel computes the same exact product instead. Any other status is a failure. */
static bool s8_blas_declined(cublasStatus_t st)
{
    return st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE;
}

static int s8_blas_fallbacks; /* how often cuBLAS declined and the kernel ran instead */
extern "C" int kn_cuda_int8_fallbacks(void) { return s8_blas_fallbacks; }

extern "C" int kn_cuda_gemm_s8s8s32(int32_t *C, const int8_t *A, const int8_t *B, int64_t M,
                                    int64_t N, int64_t K)
{
    LG_ASSERT(M >= 0 && N >= 0 && K >= 0 && K <= Q8_MAX_K &&
              "kn_cuda_gemm_s8s8s32: sizes negative or K past int32 exactness");
    int rc = kn_cuda_error();
    if (rc != LG_OK)
        return lg_fail(rc, "int8 GEMM: earlier device work failed: %s", kn_cuda_errmsg());
    if (M == 0 || N == 0) return LG_OK;
    if (K == 0) {
        cudaError_t e = cudaMemsetAsync(C, 0, (size_t)(M * N) * sizeof *C, 0);
        kn_cuda_record(e, "cudaMemsetAsync (int8 GEMM, K = 0)");
        return e == cudaSuccess ? LG_OK : lg_fail(LG_ECUDA, "int8 GEMM: %s", kn_cuda_errmsg());
    }
    if (!force_kernel && s8_blas_takes(C, A, B, M, N, K)) {
        cublasStatus_t st = gemm_s8_blas(C, A, B, (int)M, (int)N, (int)K);
        if (st == CUBLAS_STATUS_SUCCESS) return LG_OK;
        if (!s8_blas_declined(st)) {
            kn_cuda_record_blas(st, "cublasGemmEx (int8)");
            return lg_fail(LG_ECUDA, "int8 GEMM [%lld, %lld]·[%lld, %lld]ᵀ: %s", (long long)M,
                           (long long)K, (long long)N, (long long)K, kn_cuda_errmsg());
        }
        s8_blas_fallbacks++; /* declined: the kernel below handles any shape */
    }
    dim3 block(Q8_TILE, Q8_TILE);
    int64_t tiles_n = (N + Q8_TILE - 1) / Q8_TILE, tiles_m = (M + Q8_TILE - 1) / Q8_TILE;
    LG_ASSERT(tiles_n <= INT_MAX && "kn_cuda_gemm_s8s8s32: N too large for the grid");
    dim3 grid((unsigned)tiles_n, (unsigned)(tiles_m < 65535 ? tiles_m : 65535));
    k_gemm_s8s8s32<<<grid, block>>>(C, A, B, M, N, K);
    cudaError_t e = cudaGetLastError();
    kn_cuda_record(e, "k_gemm_s8s8s32");
    return e == cudaSuccess ? LG_OK : lg_fail(LG_ECUDA, "int8 GEMM: %s", kn_cuda_errmsg());
}
