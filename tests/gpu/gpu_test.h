/* gpu_test.h — helpers of the GPU suites (label gpu): the device check that turns into a
 * visible SKIP without a device, data on both sides, and comparisons.
 *
 *   TestSuite(gpu_x, .init = lg_test_setup, .fini = lg_gpu_teardown);
 *   Test(gpu_x, thing)
 *   {
 *       lg_gpu_begin();                        // SKIP (printed to stderr too) without a device;
 *                                              // else T gets the CUDA backend and cuBLAS (FP32)
 *       float *d = lg_gpu_upload(host, n, "act/x");  ...
 *   }
 *
 * CTest marks a test whose output says "SKIP: no CUDA device" as skipped (SKIP_REGULAR_EXPRESSION
 * in tests/CMakeLists.txt), so a machine without a GPU shows every GPU test as Skipped, not
 * Passed. Each Criterion test runs in its own process, so each makes its own CUDA context. */
#ifndef LG_GPU_TEST_H
#define LG_GPU_TEST_H

#include <stdint.h>

#include "kernels.h"
#include "kn_cuda.h"
#include "lg_test.h"
#include "tn_device.h"
#include "trk_cuda.h"

/* Skips the test (visibly) when no CUDA device is present; otherwise attaches the CUDA backend
 * to T and initialises the cuBLAS handle with FP32 GEMMs (no TF32). */
void lg_gpu_begin(void);
/* The suite's .fini: releases the cuBLAS handle, then the shared teardown (leak checks). */
void lg_gpu_teardown(void);

/* Deterministic data: n values uniform in [lo, hi). */
void lg_gpu_fill(float *x, int64_t n, uint64_t seed, float lo, float hi);
/* A device copy of host data, tagged `tag` in T; freed with lg_gpu_free. */
void *lg_gpu_upload(const void *host, size_t nbytes, const char *tag);
/* A zeroed device buffer tagged `tag`. */
void *lg_gpu_zeros(size_t nbytes, const char *tag);
void lg_gpu_free(void *dev);
/* Copies device bytes into host memory (asserts success and no sticky device error). */
void lg_gpu_download(void *host, const void *dev, size_t nbytes);

/* max|a − b| / max(max|b|, tiny): the normwise relative error of a against the reference b. */
double lg_gpu_relerr(const float *a, const float *b, int64_t n);
/* Asserts lg_gpu_relerr(device result, cpu result) ≤ tol, naming `what` and the worst index. */
void lg_gpu_expect_close(const float *gpu, const float *cpu, int64_t n, double tol,
                         const char *what);

#endif
