/* cuda_impl.h — private to the .cu files of model/cuda: the C headers under C linkage, launch
 * helpers, the sticky error, the cuBLAS handle, and the device versions of the CPU kernels' math
 * (kn_math.h, operation for operation, so both devices round alike). */
#ifndef LG_CUDA_IMPL_H
#define LG_CUDA_IMPL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

/* lg_base.h is C11: its _Noreturn reads as C++'s [[noreturn]] here */
#ifndef _Noreturn
#define _Noreturn [[noreturn]]
#endif
extern "C" {
#include "kernels.h"
#include "kn_math.h"
#include "kn_cuda.h"
#include "tn_device.h"
}

/* ---- launches ---------------------------------------------------------------------------- */

#define KN_THREADS 256

/* Blocks for a grid-stride loop over n items (n > 0). */
static inline unsigned kn_grid(int64_t n, int threads = KN_THREADS)
{
    int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 65535 ? b : 65535);
}

/* Grid-stride loop over i in [0, n). */
#define KN_LOOP(i, n)                                                                              \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* Records the first failure of asynchronous work (device.cu); `what` names the call. */
void kn_cuda_record(cudaError_t e, const char *what);
void kn_cuda_record_blas(cublasStatus_t s, const char *what);
/* After a launch: records a launch failure under the kernel's name. */
#define KN_CHECK_LAUNCH(name) kn_cuda_record(cudaGetLastError(), name)

/* cuBLAS, loaded on first use (cublas_dl.cu): its entry points, typed from cublas_v2.h. */
struct kn_cublas {
    decltype(&cublasCreate_v2) create;
    decltype(&cublasDestroy_v2) destroy;
    decltype(&cublasSetStream_v2) set_stream;
    decltype(&cublasSetMathMode) set_math_mode;
    decltype(&cublasSetWorkspace_v2) set_workspace;
    decltype(&cublasSgemm_v2) sgemm;
    decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
    /* C++ overloads cublasGemmEx, so its C signature is spelled out */
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                              const void *, const void *, cudaDataType, int, const void *,
                              cudaDataType, int, const void *, void *, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
    decltype(&cublasGetStatusString) status_string;
};
/* The loaded API, or NULL with an lg_fail message (LG_EUNAVAIL) when libcublas is missing. */
const struct kn_cublas *kn_cublas_api(void);
/* The text of a status (works before the library is loaded). */
const char *kn_cublas_status(cublasStatus_t s);

/* The cuBLAS handle, created lazily when kn_cuda_init was not called; NULL (error recorded)
 * when it cannot be made. */
cublasHandle_t kn_cuda_blas(void);

/* ---- reductions shared by the kernel files ------------------------------------------------- */

/* Sum of v over the block, deterministic (fixed tree); every thread gets the total.
 * blockDim.x must be a power of two ≤ 1024; `sh` has blockDim.x / 32 slots. */
template <typename T> __device__ inline T kn_warp_sum(T v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T> __device__ inline T kn_block_sum(T v, T *sh)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = kn_warp_sum(v);
    __syncthreads(); /* sh may still be read by a previous call */
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    T t = lane < nw ? sh[lane] : T(0);
    return kn_warp_sum(t);
}

__device__ inline float kn_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* ---- rows, one warp each (softmax, layer norm, the fused blocks) ---------------------------- */

/* Warps per block and blocks for one warp per row. */
#define KN_ROW_WARPS (KN_THREADS / 32)
static inline unsigned kn_row_grid(int64_t rows)
{
    int64_t b = (rows + KN_ROW_WARPS - 1) / KN_ROW_WARPS;
    return (unsigned)(b < 65535 ? b : 65535);
}

/* The warp's row loop: r runs over this warp's rows. */
#define KN_WARP_ROWS(r, rows)                                                                      \
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; r < (rows);            \
         r += ((int64_t)gridDim.x * blockDim.x) / 32)

/* The layer norm of row x [n] by one warp (lane: this thread's lane), given each lane's part of
 * its sum: y = (x − m)·rs·w + b; lane 0 writes m and rs = 1/√(var + eps) to *mean, *rstd. */
__device__ inline void kn_warp_ln_row(float *y, float *mean, float *rstd, const float *x,
                                      const float *w, const float *b, float sum, int64_t n,
                                      float eps, int lane)
{
    float m = kn_warp_sum(sum) / (float)n, v = 0.0f;
    for (int64_t j = lane; j < n; j += 32) v += (x[j] - m) * (x[j] - m);
    float rs = 1.0f / sqrtf(kn_warp_sum(v) / (float)n + eps);
    for (int64_t j = lane; j < n; j += 32) y[j] = (x[j] - m) * rs * w[j] + b[j];
    if (lane == 0) {
        *mean = m;
        *rstd = rs;
    }
}

/* The layer norm's backward sums of a row by one warp: mean(w·dy) and mean(w·dy·x̂),
 * x̂ = (x − m)·rs, in every lane. */
__device__ inline void kn_warp_ln_dmeans(float *dn_mean, float *dn_norm_mean, const float *w,
                                         const float *dy, const float *x, float m, float rs,
                                         int64_t n, int lane)
{
    float a = 0.0f, b = 0.0f;
    for (int64_t j = lane; j < n; j += 32) {
        float dn = w[j] * dy[j];
        a += dn;
        b += dn * (x[j] - m) * rs;
    }
    *dn_mean = kn_warp_sum(a) / (float)n;
    *dn_norm_mean = kn_warp_sum(b) / (float)n;
}

/* ---- math: the CPU kernels' formulas (kn_math.h), compiled for the device ---------------- */

#define kn_dexp     kn_exp
#define kn_dsigmoid kn_sigmoid
#define kn_dtanh    kn_tanh

/* ---- the table's kernels ------------------------------------------------------------------ */

/* kn_cuda_<kernel> for every entry of KN_KERNELS (kernels.h, which has the contracts), each
 * declared with its member's signature: memory, elementwise, reductions and the embedding in
 * kernels.cu, the matrix products in blas.cu, rows, the LSTM cell, losses, quantisation and
 * AdamW in kernels_nn.cu, the fused blocks in kernels_fused.cu. */
#define KN_CUDA_DECLARE(k) std::remove_pointer_t<decltype(kn_backend::k)> kn_cuda_##k;
KN_KERNELS(KN_CUDA_DECLARE)
#undef KN_CUDA_DECLARE

#endif
