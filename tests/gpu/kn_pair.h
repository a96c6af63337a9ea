/* kn_pair.h — one array on both devices, for checking a CUDA kernel against its CPU twin:
 * the same random data goes to the host copy and the device copy, each table runs on its own
 * copy, and kn_pair_expect compares the device result with the host one.
 *
 *   struct kn_pair x = kn_pair_new(1000, 1, -3, 3), y = kn_pair_new(1000, 0, 0, 0);
 *   kn_cpu.tanh(y.h, x.h, 1000);
 *   kn_cuda.tanh(y.d, x.d, 1000);
 *   kn_pair_expect(&y, 1e-6, "tanh");
 *   kn_pair_free(&x); kn_pair_free(&y);
 */
#ifndef LG_KN_PAIR_H
#define LG_KN_PAIR_H

#include "gpu_test.h"

struct kn_pair {
    float *h, *d;
    int64_t n;
};

/* n floats uniform in [lo, hi) (seed 0 with lo == hi: all lo) on both devices. */
static inline struct kn_pair kn_pair_new(int64_t n, uint64_t seed, float lo, float hi)
{
    struct kn_pair p = {.n = n};
    size_t bytes = (size_t)(n ? n : 1) * sizeof(float);
    p.h = trk_alloc(T, bytes, "data/pair.host");
    cr_assert_not_null(p.h);
    if (lo == hi)
        for (int64_t i = 0; i < n; i++) p.h[i] = lo;
    else
        lg_gpu_fill(p.h, n, seed, lo, hi);
    p.d = lg_gpu_upload(p.h, bytes, "data/pair.device");
    return p;
}

/* Asserts the device copy matches the host copy within tol (normwise relative error). */
static inline void kn_pair_expect(const struct kn_pair *p, double tol, const char *what)
{
    float *got = trk_alloc(T, (size_t)(p->n ? p->n : 1) * sizeof(float), "data/pair.fetch");
    cr_assert_not_null(got);
    lg_gpu_download(got, p->d, (size_t)p->n * sizeof(float));
    lg_gpu_expect_close(got, p->h, p->n, tol, what);
    trk_free(T, got);
}

static inline void kn_pair_free(struct kn_pair *p)
{
    trk_free(T, p->h);
    lg_gpu_free(p->d);
    p->h = p->d = NULL;
}

#endif
