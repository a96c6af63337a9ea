/* bench_int8 — the int8 GEMM (q8_gemm_s8s8s32, int32 accumulation) against OpenBLAS's
 * cblas_sgemm on the shapes of the TFT's linear layers, one thread each, in one run.
 *
 *   build/tests/bench/bench_int8 [--quick]
 *
 * Each row is one linear y = x·Wᵀ with x [M, K] (M = batch · time steps) and W [N, K]:
 *   int8 GEMM   GOP/s of q8_gemm_s8s8s32 alone (2·M·N·K operations)
 *   int8 linear the whole quantised linear: quantise x, then the GEMM with its fused f32
 *               epilogue (q8_gemm_s8s8_f32: scale per output channel, + bias)
 *   sgemm       GFLOP/s of cblas_sgemm (row-major, B transposed) on the same shape
 * and the ratios against sgemm. The best of several repetitions is reported. Every int8
 * result is checked against a scalar int64 reference on a few sampled elements.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "int8_impl.h"

struct shape {
    const char *what;
    int64_t M, N, K;
};

static const struct shape SHAPES[] = {
    {"tiny     grn.fc1    64·12 x 16  <- 16", 768, 16, 16},
    {"electr.  grn.fc1    64·192 x 160 <- 160", 12288, 160, 160},
    {"electr.  glu.fc     64·192 x 320 <- 160", 12288, 320, 160},
    {"electr.  flat_grn   64·168 x 160 <- 640", 10752, 160, 640},
    {"foxhunt  grn.fc1    64·37 x 1024 <- 1024", 2368, 1024, 1024},
    {"foxhunt  glu.fc     64·37 x 2048 <- 1024", 2368, 2048, 1024},
    {"foxhunt  flat_grn   64·30 x 1024 <- 12288", 1920, 1024, 12288},
};

static void fill_s8(int8_t *p, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (int8_t)(*s >> 56);
    }
}

static void fill_f32(float *p, int64_t n, uint64_t *s)
{
    for (int64_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

/* Best wall time of `reps` runs of the given kind: 0 int8 GEMM, 1 int8 linear, 2 sgemm. */
static double best_time(int kind, int reps, const struct shape *sh, const int8_t *xq,
                        int8_t *xq_out, const int8_t *wq, int32_t *acc, const float *x,
                        const float *w, const float *sw, const float *bias, float *y)
{
    int64_t M = sh->M, N = sh->N, K = sh->K;
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        double t0 = lg_now();
        if (kind == 0) {
            q8_gemm_s8s8s32(acc, xq, wq, M, N, K);
        } else if (kind == 1) {
            const float sx = 1.0f / 127.0f;
            q8_quantize_values(xq_out, x, 127.0f, M * K);
            q8_gemm_s8s8_f32(y, xq_out, wq, M, N, K, sx, sw, bias);
        } else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0f, x,
                        (int)K, w, (int)K, 0.0f, y, (int)N);
        }
        double t = lg_now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    openblas_set_num_threads(1);
    printf("int8 GEMM (s8 x s8 -> s32, AVX2 vpmaddwd) vs cblas_sgemm (OpenBLAS), 1 thread, best of "
           "%d\n\n",
           quick ? 2 : 5);
    printf("%-42s %10s %10s %10s %8s %8s\n", "shape (rows x out <- in)", "int8 GOP/s", "lin GOP/s",
           "sgemm GF/s", "gemm x", "linear x");
    int status = 0;
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        const struct shape *sh = &SHAPES[i];
        int64_t M = sh->M, N = sh->N, K = sh->K;
        int8_t *xq = malloc((size_t)(M * K)), *xq2 = malloc((size_t)(M * K)),
               *wq = malloc((size_t)(N * K));
        int32_t *acc = malloc((size_t)(M * N) * sizeof *acc);
        float *x = malloc((size_t)(M * K) * sizeof *x), *w = malloc((size_t)(N * K) * sizeof *w);
        float *y = malloc((size_t)(M * N) * sizeof *y), *sw = malloc((size_t)N * sizeof *sw);
        float *bias = calloc((size_t)N, sizeof *bias);
        if (!xq || !xq2 || !wq || !acc || !x || !w || !y || !sw || !bias) {
            fprintf(stderr, "bench_int8: out of memory\n");
            return 1;
        }
        uint64_t s = 12345 + i;
        fill_s8(xq, M * K, &s);
        fill_s8(wq, N * K, &s);
        fill_f32(x, M * K, &s);
        fill_f32(w, N * K, &s);
        for (int64_t n = 0; n < N; n++) sw[n] = 1.0f / 127.0f;
        memset(acc, 0, (size_t)(M * N) * sizeof *acc); /* first touch outside the timings */
        memset(y, 0, (size_t)(M * N) * sizeof *y);
        memset(xq2, 0, (size_t)(M * K));
        double ops = 2.0 * (double)M * (double)N * (double)K;
        int reps = quick ? 2 : 5;
        if (ops > 2e10) reps = quick ? 1 : 3;
        double t8 = best_time(0, reps, sh, xq, xq2, wq, acc, x, w, sw, bias, y);
        for (int k = 0; k < 16; k++) { /* spot checks against an int64 reference */
            int64_t m = (k * 7919) % M, n = (k * 104729) % N, ref = 0;
            for (int64_t j = 0; j < K; j++) ref += (int64_t)xq[m * K + j] * wq[n * K + j];
            if (ref != acc[m * N + n]) {
                fprintf(stderr, "bench_int8: %s: C[%lld, %lld] = %d, reference %lld\n", sh->what,
                        (long long)m, (long long)n, acc[m * N + n], (long long)ref);
                status = 1;
            }
        }
        double tl = best_time(1, reps, sh, xq, xq2, wq, acc, x, w, sw, bias, y);
        double tf = best_time(2, reps, sh, xq, xq2, wq, acc, x, w, sw, bias, y);
        printf("%-42s %10.1f %10.1f %10.1f %7.2fx %7.2fx\n", sh->what, ops / t8 * 1e-9,
               ops / tl * 1e-9, ops / tf * 1e-9, tf / t8, tf / tl);
        fflush(stdout);
        free(xq), free(xq2), free(wq), free(acc), free(x), free(w), free(y), free(sw), free(bias);
    }
    printf("\n(gemm x, linear x: sgemm time / int8 time; above 1 the int8 path is faster)\n");
    return status;
}
