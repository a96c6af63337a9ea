/* kn_cuda.h — the CUDA side of the model layer (built only with LG_HAVE_CUDA): the kernel
 * table kn_cuda (kernels.h's struct kn_backend on device pointers), its cuBLAS handle, the
 * INT8 GEMM, and the sticky error of asynchronous device work.
 *
 * Worked example:
 *
 *   trk_cuda_attach(trk);                      // tracking/include/trk_cuda.h: tagged device memory
 *   kn_cuda_init(trk, NULL);                   // cuBLAS handle + tagged workspace, FP32 GEMMs
 *   struct tn_tensor *x = tn_new(trk, TN_F32, TN_CUDA, 2, shape, "act/x");
 *   const struct kn_backend *kb = kn_backend_for(TN_CUDA);   // &kn_cuda
 *   kb->sigmoid(tn_f32(y), tn_f32(x), n);      // queued on the legacy default stream
 *   if (kn_cuda_error()) fprintf(stderr, "%s\n", kn_cuda_errmsg());
 *   kn_cuda_fini();                            // frees the workspace, destroys the handle
 *   trk_cuda_detach(trk);
 *
 * All device work is queued on the legacy default stream, in program order; host copies
 * (tn_device_copy) wait for it. Kernels follow kernels.h exactly (same formulas, same
 * accumulation order where it is sequential on the CPU; reductions that run in parallel on the
 * device sum in a fixed tree order, so results are deterministic run to run, except the
 * scatter-adds of dembedding, which use atomics).
 *
 * Errors: a kernel-table call returns nothing, so a failed launch or cuBLAS call is recorded
 * as a sticky error (the first one wins, LG_ECUDA) and every later tn_device_copy/memset
 * returns it: a training step fails cleanly at its next host read. The table is used from one
 * host thread at a time.
 *
 * GEMMs are cuBLAS FP32 (CUBLAS_DEFAULT_MATH: no TF32) unless TF32 is asked for
 * (.tf32, or LG_CUDA_TF32=1), which lets cuBLAS round inputs to TF32 on tensor cores.
 */
#ifndef LG_KN_CUDA_H
#define LG_KN_CUDA_H

#include <stdbool.h>
#include <stdint.h>

#include "tracking.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kn_cuda_options {
    bool tf32;        /* TF32 tensor-core GEMMs (faster, ~1e-3 relative error) */
    size_t workspace; /* cuBLAS workspace bytes (0: 32 MiB) */
};

/* Options from the environment: LG_CUDA_TF32=1, LG_CUDA_WORKSPACE=<bytes>. */
void kn_cuda_options_from_env(struct kn_cuda_options *opt);

/* Creates the cuBLAS handle and gives it a workspace from trk tagged "cuda/cublas.workspace"
 * (trk needs the CUDA backend: trk_cuda_attach), and clears the sticky error. opt NULL: from
 * the environment. Call it before the sessions a harness measures: the handle and workspace
 * then belong to no session. A second call with the handle alive is LG_EINVAL.
 * Without kn_cuda_init, the first GEMM creates a handle lazily with cuBLAS's own (untagged)
 * workspace. LG_EUNAVAIL without a device, LG_ECUDA when cuBLAS fails. */
int kn_cuda_init(struct trk_tracker *trk, const struct kn_cuda_options *opt);
/* Waits for the device, destroys the handle and frees the workspace. Safe without init. */
void kn_cuda_fini(void);
bool kn_cuda_tf32(void);

/* LG_OK, or LG_ECUDA after the first failure of asynchronous device work since init; the
 * message names the kernel or cuBLAS call. */
int kn_cuda_error(void);
const char *kn_cuda_errmsg(void);
void kn_cuda_clear_error(void);
/* Waits for all queued device work; returns kn_cuda_error() (with lg_fail's message set). */
int kn_cuda_sync(void);

/* Σ x² in double over `count` device arrays (x[i] holds n[i] floats; empty ones are skipped)
 * with one host synchronise for the whole list: the global gradient norm without a read-back
 * per parameter (the table's sumsq is this with count 1). The same bits every run (fixed
 * parts, a fixed tree); it differs from the CPU's sequential double sum by rounding only.
 * NaN after a device error (the sticky error says which). */
double kn_cuda_sumsq_many(const float *const *x /* [count][n[i]] */, const int64_t *n /* [count] */,
                          int count);

/* INT8 GEMM with int32 accumulation on device pointers: C[m, n] = Σ_k A[m, k]·B[n, k]
 * (B row-major [N, K], a Linear weight), exact for K < 131072 — the device twin of
 * q8_gemm_s8s8s32. cuBLAS (cublasGemmEx, CUDA_R_8I × CUDA_R_8I → CUDA_R_32I, COMPUTE_32I)
 * where the shape meets what cuBLAS documents for that path (K and N multiples of 4, A and B
 * 4-byte aligned, C 16-byte aligned), else — and when cuBLAS declines the shape anyway with
 * CUBLAS_STATUS_NOT_SUPPORTED or CUBLAS_STATUS_INVALID_VALUE — a tiled kernel of our own, with
 * the same exact result. Returns LG_OK or LG_ECUDA (any other cuBLAS status). */
int kn_cuda_gemm_s8s8s32(int32_t *C /* [M, N] */, const int8_t *A /* [M, K] */,
                         const int8_t *B /* [N, K] */, int64_t M, int64_t N, int64_t K);
/* Forces the tiled kernel (true) or lets cuBLAS run (false, the default); for tests. */
void kn_cuda_int8_force_kernel(bool on);
/* How many int8 GEMMs cuBLAS declined (checked shape, then NOT_SUPPORTED or INVALID_VALUE) and
 * the tiled kernel ran instead, since the process started; for tests and reports. */
int kn_cuda_int8_fallbacks(void);

#ifdef __cplusplus
}
#endif

#endif
