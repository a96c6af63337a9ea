/* test_gpu_int8.c — the device's INT8 GEMM (int8 × int8 → int32) is exact: bit for bit the
 * CPU's q8_gemm_s8s8s32 on TFT-sized and awkward shapes, through cuBLAS where it takes the
 * shape and through the tiled kernel (forced, and where cuBLAS cannot or will not take it:
 * the count of shapes it declined is printed, and cuBLAS must have run for some). */
#include <stdio.h>
#include <string.h>

#include "gpu_test.h"
#include "int8.h"

TestSuite(gpu_int8, .init = lg_test_setup, .fini = lg_gpu_teardown, .timeout = 120);

static void check_shape(int64_t M, int64_t N, int64_t K, bool force_kernel, bool extremes)
{
    int8_t *a = trk_alloc(T, (size_t)(M * K) + 1, "data/a"),
           *b = trk_alloc(T, (size_t)(N * K) + 1, "data/b");
    int32_t *want = trk_alloc(T, (size_t)(M * N + 1) * 4, "data/want"),
            *got = trk_alloc(T, (size_t)(M * N + 1) * 4, "data/got");
    cr_assert(a && b && want && got);
    struct tn_rng r;
    tn_rng_seed(&r, (uint64_t)(M * 31 + N * 7 + K));
    for (int64_t i = 0; i < M * K; i++)
        a[i] = extremes ? -127 : (int8_t)((int)(tn_rng_next(&r) % 255) - 127);
    for (int64_t i = 0; i < N * K; i++)
        b[i] = extremes ? -127 : (int8_t)((int)(tn_rng_next(&r) % 255) - 127);
    q8_gemm_s8s8s32(want, a, b, M, N, K);
    int8_t *da = lg_gpu_upload(a, (size_t)(M * K) + 1, "int8/a"),
           *db = lg_gpu_upload(b, (size_t)(N * K) + 1, "int8/b");
    int32_t *dc = lg_gpu_zeros((size_t)(M * N + 1) * 4, "int8/c");
    kn_cuda_int8_force_kernel(force_kernel);
    cr_assert_eq(kn_cuda_gemm_s8s8s32(dc, da, db, M, N, K), LG_OK, "%s", lg_errmsg());
    kn_cuda_int8_force_kernel(false);
    lg_gpu_download(got, dc, (size_t)(M * N) * 4);
    int64_t bad = -1;
    for (int64_t i = 0; i < M * N && bad < 0; i++)
        if (got[i] != want[i]) bad = i;
    cr_expect_eq(bad, -1, "[%lld, %lld, %lld]%s: C[%lld] is %d on the device, %d on the CPU",
                 (long long)M, (long long)N, (long long)K, force_kernel ? " (kernel)" : "",
                 (long long)bad, bad >= 0 ? got[bad] : 0, bad >= 0 ? want[bad] : 0);
    lg_gpu_free(da);
    lg_gpu_free(db);
    lg_gpu_free(dc);
    trk_free(T, a);
    trk_free(T, b);
    trk_free(T, want);
    trk_free(T, got);
}

Test(gpu_int8, exact_on_tft_shapes_through_cublas_and_the_kernel)
{
    lg_gpu_begin();
    static const int64_t shapes[][3] = {
        {64 * 192, 320, 160}, /* electricity GLU over every step */
        {64, 640, 160},       /* an LSTM-sized product */
        {1536, 3, 160},       /* the output layer: N = 3 */
        {7, 5, 3},            /* nothing aligned */
        {1, 1, 1},
        {33, 12, 4100}, /* long K */
    };
    int before = kn_cuda_int8_fallbacks(), eligible = 0;
    for (size_t s = 0; s < LG_ARRAY_LEN(shapes); s++) {
        eligible += shapes[s][1] % 4 == 0 && shapes[s][2] % 4 == 0;
        for (int force = 0; force < 2; force++)
            check_shape(shapes[s][0], shapes[s][1], shapes[s][2], force, false);
    }
    int declined = kn_cuda_int8_fallbacks() - before;
    fprintf(stderr, "cuBLAS declined %d of the %d shapes that meet its documented int8 rules\n",
            declined, eligible);
    cr_expect_lt(declined, eligible, "cuBLAS's int8 path ran for at least one TFT shape");
}

Test(gpu_int8, extreme_values_accumulate_exactly)
{
    lg_gpu_begin();
    /* 127² · 8192 = 132 128 768: far past float's 2²⁴, exact in int32 */
    check_shape(16, 16, 8192, false, true);
    check_shape(16, 16, 8192, true, true);
}

Test(gpu_int8, empty_products)
{
    lg_gpu_begin();
    int32_t *dc = lg_gpu_zeros(64, "int8/c");
    cr_assert_eq(tn_device_memset(dc, 0x7f, 64), LG_OK);
    cr_expect_eq(kn_cuda_gemm_s8s8s32(dc, NULL, NULL, 0, 4, 8), LG_OK);
    cr_expect_eq(kn_cuda_gemm_s8s8s32(dc, NULL, NULL, 4, 4, 0), LG_OK, "K = 0: C = 0");
    int32_t got[16];
    lg_gpu_download(got, dc, sizeof got);
    for (int i = 0; i < 16; i++) cr_expect_eq(got[i], 0);
    lg_gpu_free(dc);
}
