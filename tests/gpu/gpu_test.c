/* gpu_test.c — helpers of the GPU suites (gpu_test.h). */
#include "gpu_test.h"

#include <math.h>
#include <stdio.h>

void lg_gpu_begin(void)
{
    if (!trk_cuda_available()) {
        fprintf(stderr, "SKIP: no CUDA device (%s)\n", trk_cuda_unavailable_reason());
        cr_skip_test("SKIP: no CUDA device (%s)", trk_cuda_unavailable_reason());
    }
    struct trk_cuda_options o;
    trk_cuda_options_from_env(&o);
    o.capture = false;
    cr_assert_eq(trk_cuda_attach_opts(T, &o), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(kn_cuda_init(T, &(struct kn_cuda_options){.tf32 = false}), LG_OK, "%s",
                 lg_errmsg());
}

void lg_gpu_teardown(void)
{
    kn_cuda_fini();
    lg_test_teardown();
}

void lg_gpu_fill(float *x, int64_t n, uint64_t seed, float lo, float hi)
{
    struct tn_rng r;
    tn_rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * tn_rng_uniform(&r);
}

void *lg_gpu_upload(const void *host, size_t nbytes, const char *tag)
{
    void *d = tn_device_alloc(T, nbytes, tag);
    cr_assert_not_null(d, "device allocation of %zu bytes for %s: %s", nbytes, tag, lg_errmsg());
    cr_assert_eq(tn_device_copy(d, TN_CUDA, host, TN_CPU, nbytes), LG_OK, "%s", lg_errmsg());
    return d;
}

void *lg_gpu_zeros(size_t nbytes, const char *tag)
{
    void *d = tn_device_alloc(T, nbytes, tag);
    cr_assert_not_null(d, "device allocation of %zu bytes for %s: %s", nbytes, tag, lg_errmsg());
    cr_assert_eq(tn_device_memset(d, 0, nbytes), LG_OK, "%s", lg_errmsg());
    return d;
}

void lg_gpu_free(void *dev) { tn_device_free(T, dev); }

void lg_gpu_download(void *host, const void *dev, size_t nbytes)
{
    cr_assert_eq(tn_device_copy(host, TN_CPU, dev, TN_CUDA, nbytes), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(kn_cuda_error(), LG_OK, "device error: %s", kn_cuda_errmsg());
}

double lg_gpu_relerr(const float *a, const float *b, int64_t n)
{
    double diff = 0.0, ref = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= diff)) diff = d; /* NaN wins */
        ref = fmax(ref, fabs((double)b[i]));
    }
    return diff / fmax(ref, 1e-30);
}

void lg_gpu_expect_close(const float *gpu, const float *cpu, int64_t n, double tol,
                         const char *what)
{
    double e = lg_gpu_relerr(gpu, cpu, n);
    int64_t worst = 0;
    for (int64_t i = 1; i < n; i++)
        if (!(fabs((double)gpu[i] - cpu[i]) <= fabs((double)gpu[worst] - cpu[worst]))) worst = i;
    cr_expect(e <= tol, "%s: relative error %.3g > %.1g (worst at %lld: gpu %.9g, cpu %.9g)", what,
              e, tol, (long long)worst, n ? (double)gpu[worst] : 0.0, n ? (double)cpu[worst] : 0.0);
}
