/* test_int8.c — INT8: the s8 × s8 → s32 GEMM against a naive int32 reference, per-channel
 * quantisation error bounds, calibration ranges against an independent recording hook, the
 * int8 linear against the f32 linear, the QAT fake-quantisation op's straight-through
 * gradient, QAT conversion reproducing the fake-quantised forward, saving (I8 weights and F32
 * scales through st_open), and the error paths. The fixture checks that every path leaves 0
 * live tagged bytes. */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "int8_impl.h"
#include "lg_test.h"
#include "optim.h"
#include "safetensors.h"

TestSuite(int8, .init = lg_test_setup, .fini = lg_test_teardown);

/* ---- helpers ------------------------------------------------------------------------------ */

static void naive_gemm(int32_t *C, const int8_t *A, const int8_t *B, int64_t M, int64_t N,
                       int64_t K)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            int64_t s = 0;
            for (int64_t k = 0; k < K; k++) s += (int64_t)A[m * K + k] * B[n * K + k];
            cr_assert(s >= INT32_MIN && s <= INT32_MAX, "reference overflows int32");
            C[m * N + n] = (int32_t)s;
        }
}

/* Runs the GEMM on A [M, K], B [N, K] and compares every element with the reference. */
static void check_gemm(const int8_t *A, const int8_t *B, int64_t M, int64_t N, int64_t K)
{
    size_t cb = (size_t)(M * N) * sizeof(int32_t);
    int32_t *C = trk_alloc(T, cb + sizeof(int32_t), "test/C"), *R = trk_alloc(T, cb + 1, "test/R");
    cr_assert(C && R);
    memset(C, 0x7b, cb + sizeof(int32_t)); /* garbage in, and a guard word after the end */
    q8_gemm_s8s8s32(C, A, B, M, N, K);
    naive_gemm(R, A, B, M, N, K);
    for (int64_t i = 0; i < M * N; i++)
        cr_assert_eq(C[i], R[i], "M %lld N %lld K %lld: C[%lld, %lld] = %d, reference %d",
                     (long long)M, (long long)N, (long long)K, (long long)(i / N),
                     (long long)(i % N), C[i], R[i]);
    cr_assert_eq(C[M * N], 0x7b7b7b7b, "the GEMM wrote past C");
    /* the fused f32 epilogue: the same sums, scaled per column, plus the bias */
    float *Y = trk_alloc(T, (size_t)(M * N + N + N) * sizeof(float), "test/Y");
    float *sw = Y + M * N, *bias = sw + N, sx = 0.37f;
    for (int64_t n = 0; n < N; n++) sw[n] = 0.001f * (float)(n + 1), bias[n] = (float)n - 2.5f;
    q8_gemm_s8s8_f32(Y, A, B, M, N, K, sx, sw, N % 2 ? bias : NULL);
    for (int64_t i = 0; i < M * N; i++) {
        int64_t n = i % N;
        float want = fmaf((float)R[i], sx * sw[n], N % 2 ? bias[n] : 0.0f);
        cr_assert_eq(Y[i], want, "f32 epilogue at [%lld, %lld]: %g, want %g", (long long)(i / N),
                     (long long)n, Y[i], want);
    }
    trk_free(T, Y);
    trk_free(T, C);
    trk_free(T, R);
}

static int8_t *random_s8(struct tn_rng *r, int64_t n, const char *tag)
{
    int8_t *p = trk_alloc(T, (size_t)n + 1, tag);
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++) p[i] = (int8_t)(tn_rng_next(r) & 0xff); /* [-128, 127] */
    return p;
}

/* A tiny TFT, its synthetic data and an evaluation context. */
struct fixture {
    struct tft_config cfg;
    struct tft_model *model;
    struct data_set *ds;
    struct ag_ctx *ctx;
};

static void fixture_init(struct fixture *f)
{
    cr_assert_eq(tft_config_preset(&f->cfg, "tiny"), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(tft_new(&f->model, T, &f->cfg, 42), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(data_synth_new(&f->ds, T, &f->cfg, &(struct data_synth_options){.seed = 7}), LG_OK,
                 "%s", lg_errmsg());
    f->ctx = ag_ctx_new(T, &(struct ag_options){.training = false, .seed = 1});
    cr_assert_not_null(f->ctx);
    ag_set_grad_enabled(f->ctx, false);
}

static void fixture_fini(struct fixture *f)
{
    ag_ctx_free(f->ctx);
    data_free(f->ds);
    tft_free(f->model);
}

/* The k-th validation batch (B windows). */
static void batch_at(struct fixture *f, int k, int B, struct tft_batch *b)
{
    struct data_cursor cur;
    data_cursor_init(&cur, 0);
    cur.next = (int64_t)k * B;
    cr_assert_eq(data_batch(f->ds, DATA_VAL, B, &cur, b), LG_OK, "%s", lg_errmsg());
}

/* yhat of one batch as a tensor the caller releases ("test/yhat"). */
static struct tn_tensor *forward_copy(struct fixture *f, const struct tft_batch *b)
{
    struct tn_tensor *y = tft_forward(f->model, f->ctx, b);
    cr_assert_not_null(y, "%s", ag_errmsg(f->ctx));
    struct tn_tensor *c = tn_clone(y, "test/yhat");
    ag_ctx_reset(f->ctx);
    return c;
}

/* A calibrator and a QAT state of the fixture's model; freed with q8_calib_free, q8_qat_free. */
static struct q8_calib *calib_new(struct fixture *f)
{
    struct q8_calib *cal = NULL;
    cr_assert_eq(q8_calib_new(&cal, T, f->model), LG_OK, "%s", lg_errmsg());
    return cal;
}

static struct q8_qat *qat_new(struct fixture *f)
{
    struct q8_qat *qat = NULL;
    cr_assert_eq(q8_qat_new(&qat, T, f->model), LG_OK, "%s", lg_errmsg());
    return qat;
}

static void calibrate(struct fixture *f, struct q8_calib *cal, int batches)
{
    q8_calib_attach(cal, f->model);
    for (int k = 0; k < batches; k++) {
        struct tft_batch b = {0};
        batch_at(f, k, 16, &b);
        cr_assert_not_null(tft_forward(f->model, f->ctx, &b), "%s", ag_errmsg(f->ctx));
        ag_ctx_reset(f->ctx);
        tft_batch_fini(&b);
    }
    q8_calib_detach(cal, f->model);
}

static struct q8_model *quantized_tiny(struct fixture *f, int batches)
{
    struct q8_calib *cal = calib_new(f);
    calibrate(f, cal, batches);
    struct q8_model *q = NULL;
    cr_assert_eq(q8_quantize(&q, f->model, cal), LG_OK, "%s", lg_errmsg());
    q8_calib_free(cal);
    return q;
}

static double rel_rms_diff(const struct tn_tensor *a, const struct tn_tensor *b)
{
    double d = 0, s = 0;
    for (int64_t i = 0; i < tn_numel(a); i++) {
        double x = tn_f32(a)[i], y = tn_f32(b)[i];
        d += (x - y) * (x - y);
        s += x * x;
    }
    return sqrt(d / s);
}

/* ---- the GEMM ----------------------------------------------------------------------------- */

Test(int8, gemm_is_exact_on_random_and_odd_shapes)
{
    struct tn_rng r;
    tn_rng_seed(&r, 11);
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 130};
    int ns = (int)LG_ARRAY_LEN(sizes);
    for (int t = 0; t < 120; t++) {
        int64_t M = sizes[tn_rng_next(&r) % ns], N = sizes[tn_rng_next(&r) % ns];
        int64_t K =
            t < 16 ? sizes[t] : sizes[tn_rng_next(&r) % ns] + (int64_t)(tn_rng_next(&r) % 300);
        int8_t *A = random_s8(&r, M * K, "test/A"), *B = random_s8(&r, N * K, "test/B");
        check_gemm(A, B, M, N, K);
        trk_free(T, A);
        trk_free(T, B);
    }
    /* a block larger than one cache block of B, TFT-like */
    int8_t *A = random_s8(&r, 37 * 160, "test/A"), *B = random_s8(&r, 1700 * 160, "test/B");
    check_gemm(A, B, 37, 1700, 160);
    trk_free(T, A);
    trk_free(T, B);
}

Test(int8, gemm_is_exact_at_the_extremes)
{
    static const int64_t M = 9, N = 5, K = 4099; /* 4099 · 128² = 67,158,016: far from 2³¹ */
    static const int8_t pairs[][2] = {{-128, -128}, {127, 127}, {-128, 127}, {127, -128}};
    int8_t *A = trk_alloc(T, M * K, "test/A"), *B = trk_alloc(T, N * K, "test/B");
    cr_assert(A && B);
    for (size_t p = 0; p < LG_ARRAY_LEN(pairs); p++) {
        memset(A, (uint8_t)pairs[p][0], M * K);
        memset(B, (uint8_t)pairs[p][1], N * K);
        check_gemm(A, B, M, N, K);
    }
    for (int64_t i = 0; i < M * K; i++)
        A[i] = i % 3 ? -128 : 127; /* mixed signs in one madd pair */
    for (int64_t i = 0; i < N * K; i++) B[i] = i % 2 ? -128 : 127;
    check_gemm(A, B, M, N, K);
    trk_free(T, A);
    trk_free(T, B);
    /* the largest sum: K · 128² for all -128 */
    int8_t a[40], b[40];
    memset(a, 0x80, sizeof a);
    memset(b, 0x80, sizeof b);
    int32_t c = 0;
    q8_gemm_s8s8s32(&c, a, b, 1, 1, 40);
    cr_assert_eq(c, 40 * 16384);
}

Test(int8, gemm_with_empty_sizes)
{
    int8_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    int32_t c[4] = {9, 9, 9, 9};
    q8_gemm_s8s8s32(c, a, b, 2, 2, 0); /* K = 0: all sums are 0 */
    for (int i = 0; i < 4; i++) cr_assert_eq(c[i], 0);
    c[0] = 9;
    q8_gemm_s8s8s32(c, a, b, 0, 2, 2); /* no rows: nothing written */
    q8_gemm_s8s8s32(c, a, b, 2, 0, 2);
    cr_assert_eq(c[0], 9);
}

/* ---- quantisation arithmetic -------------------------------------------------------------- */

Test(int8, per_channel_quantisation_error_is_within_half_a_step)
{
    enum { ROWS = 6, COLS = 37 };
    float w[ROWS][COLS], scale[ROWS];
    int8_t q[ROWS][COLS];
    struct tn_rng r;
    tn_rng_seed(&r, 3);
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++)
            w[i][j] = i == 2 ? 0.0f : tn_rng_normal(&r) * powf(10.0f, (float)i - 3);
    w[4][5] = -750.0f; /* a negative maximum (row 4 is ~N(0, 10²) otherwise) */
    q8_quantize_rows(&q[0][0], scale, &w[0][0], ROWS, COLS);
    for (int i = 0; i < ROWS; i++) {
        float amax = 0;
        for (int j = 0; j < COLS; j++) amax = fmaxf(amax, fabsf(w[i][j]));
        cr_assert_eq(scale[i], amax / 127.0f, "row %d scale", i);
        bool at_max = false;
        for (int j = 0; j < COLS; j++) {
            cr_assert(q[i][j] >= -127 && q[i][j] <= 127);
            float back = q[i][j] * scale[i];
            cr_assert(fabsf(back - w[i][j]) <= 0.5f * scale[i] * (1 + 1e-5f),
                      "row %d col %d: %g dequantises to %g (step %g)", i, j, w[i][j], back,
                      scale[i]);
            at_max |= abs(q[i][j]) == 127;
        }
        if (amax > 0) cr_assert(at_max, "row %d: its largest weight maps to ±127", i);
    }
    cr_assert_eq(scale[2], 0.0f, "a zero row keeps scale 0");
    for (int j = 0; j < COLS; j++) cr_assert_eq(q[2][j], 0);
    cr_assert_eq(q[4][5], -127);
}

Test(int8, input_quantisation_clamps_and_rounds_to_even)
{
    const float x[] = {0.0f,   0.5f,   1.5f,     2.5f, -2.5f, 126.6f,
                       300.0f, -1e30f, INFINITY, NAN,  -0.49f};
    const int8_t want[] = {0, 0, 2, 2, -2, 127, 127, -127, 127, 0, 0};
    int8_t xq[LG_ARRAY_LEN(x)];
    q8_quantize_values(xq, x, 1.0f, (int64_t)LG_ARRAY_LEN(x));
    for (size_t i = 0; i < LG_ARRAY_LEN(x); i++)
        cr_assert_eq(xq[i], want[i], "x = %g → %d, want %d", x[i], xq[i], want[i]);
}

Test(int8, vector_and_scalar_input_quantisation_agree)
{
    enum { N = 1003 };
    float *x = trk_alloc(T, N * sizeof(float), "test/x");
    int8_t *xq = trk_alloc(T, N, "test/xq");
    struct tn_rng r;
    tn_rng_seed(&r, 21);
    for (int i = 0; i < N; i++) x[i] = (tn_rng_uniform(&r) * 2 - 1) * 160.0f;
    for (int i = 0; i < 40; i++) x[i * 7] = rintf(x[i * 7]) + 0.5f; /* ties */
    x[3] = NAN, x[40] = INFINITY, x[41] = -INFINITY, x[42] = -0.0f, x[43] = 127.5f, x[44] = -127.5f;
    q8_quantize_values(xq, x, 1.0f, N);
    for (int i = 0; i < N; i++) {
        float v = isnan(x[i]) ? 0.0f : fminf(127.0f, fmaxf(-127.0f, rintf(x[i])));
        cr_assert_eq(xq[i], (int8_t)v, "x[%d] = %g → %d, want %d", i, x[i], xq[i], (int)v);
    }
    trk_free(T, x);
    trk_free(T, xq);
}

/* ---- calibration -------------------------------------------------------------------------- */

/* An independent recording hook: max |x| per layer name. */
struct recorder {
    int n;
    char name[128][LG_MAX_NAME];
    float amax[128];
    int calls[128];
};

static struct tn_tensor *record_linear(void *user, struct ag_ctx *ctx, const char *name,
                                       struct tn_tensor *x, struct tn_tensor *w,
                                       struct tn_tensor *b)
{
    struct recorder *r = user;
    int i = 0;
    while (i < r->n && strcmp(r->name[i], name)) i++;
    if (i == r->n) {
        cr_assert(r->n < 128);
        lg_strlcpy(r->name[r->n++], name, LG_MAX_NAME);
    }
    for (int64_t k = 0; k < tn_numel(x); k++) r->amax[i] = fmaxf(r->amax[i], fabsf(tn_f32(x)[k]));
    r->calls[i]++;
    return NULL;
}

Test(int8, calibration_records_every_layers_input_range)
{
    struct fixture f;
    fixture_init(&f);
    struct recorder *rec = calloc(1, sizeof *rec);
    f.model->hook = (struct tft_linear_hook){record_linear, rec};
    struct tn_tensor *plain[3];
    for (int k = 0; k < 3; k++) {
        struct tft_batch b = {0};
        batch_at(&f, k, 16, &b);
        plain[k] = forward_copy(&f, &b);
        tft_batch_fini(&b);
    }
    f.model->hook = (struct tft_linear_hook){0};

    struct q8_calib *cal = calib_new(&f);
    cr_assert_eq(q8_calib_batches(cal), 0);
    cr_assert(isnan(q8_calib_range(cal, "out")), "nothing observed yet");
    q8_calib_attach(cal, f.model);
    for (int k = 0; k < 3; k++) { /* the forward stays f32: bit for bit the same output */
        struct tft_batch b = {0};
        batch_at(&f, k, 16, &b);
        struct tn_tensor *y = forward_copy(&f, &b);
        cr_assert(memcmp(tn_data(y), tn_data(plain[k]), tn_nbytes(y)) == 0, "batch %d changed", k);
        tn_release(y);
        tn_release(plain[k]);
        tft_batch_fini(&b);
    }
    q8_calib_detach(cal, f.model);
    cr_assert_null(f.model->hook.linear, "detach removes the hook");
    cr_assert_eq(q8_calib_batches(cal), 3);

    struct q8_layer_ref *layers = NULL;
    int n = 0;
    cr_assert_eq(q8_list_layers(T, f.model, "test/layers", &layers, &n), LG_OK);
    cr_assert_eq(n, rec->n, "every linear of the forward is a listed layer (%d listed, %d hooked)",
                 n, rec->n);
    for (int i = 0; i < rec->n; i++) {
        cr_assert_eq(rec->calls[i], 3, "%s runs once per forward", rec->name[i]);
        cr_assert(q8_find_layer(layers, n, rec->name[i]) >= 0, "%s listed", rec->name[i]);
        float got = q8_calib_range(cal, rec->name[i]);
        cr_assert_eq(got, rec->amax[i], "%s: calibrated %g, recorded %g", rec->name[i], got,
                     rec->amax[i]);
        cr_assert(got > 0, "%s", rec->name[i]);
    }
    char tag[LG_MAX_NAME];
    cr_assert(lg_live_bytes_with_prefix("int8/calib.out", NULL) > 0,
              "observers tagged int8/calib.<layer>");
    snprintf(tag, sizeof tag, "int8/calib.%s", layers[0].name);
    cr_assert(lg_live_bytes_with_prefix(tag, NULL) > 0, "%s", tag);
    trk_free(T, layers);
    free(rec);
    q8_calib_free(cal);
    cr_assert_eq(lg_live_bytes_with_prefix("int8/", NULL), 0, "q8_calib_free frees every observer");
    fixture_fini(&f);
}

Test(int8, quantising_without_calibration_data_is_an_error)
{
    struct fixture f;
    fixture_init(&f);
    struct q8_calib *cal = calib_new(&f);
    struct q8_model *q = (struct q8_model *)&f; /* must be reset to NULL */
    cr_assert_eq(q8_quantize(&q, f.model, cal), LG_EINVAL);
    cr_assert_null(q);
    cr_assert(strstr(lg_errmsg(), "q8_quantize") && strstr(lg_errmsg(), "no observed input range"),
              "message: %s", lg_errmsg());
    q8_calib_free(cal);

    struct q8_qat *qat = qat_new(&f);
    cr_assert_eq(q8_qat_convert(&q, f.model, qat), LG_EINVAL);
    cr_assert(strstr(lg_errmsg(), "q8_qat_convert"), "message: %s", lg_errmsg());
    q8_qat_free(qat);
    q8_calib_free(NULL);
    q8_qat_free(NULL);
    q8_free(NULL);
    fixture_fini(&f);
}

/* ---- the int8 linear ---------------------------------------------------------------------- */

Test(int8, int8_linear_matches_f32_within_quantisation_error)
{
    struct fixture f;
    fixture_init(&f);
    struct q8_model *q = quantized_tiny(&f, 2);
    struct vm_varmap *vm = tft_varmap_borrow(f.model);
    struct q8_layer_ref *layers = NULL;
    int n = 0;
    cr_assert_eq(q8_list_layers(T, f.model, "test/layers", &layers, &n), LG_OK);
    cr_assert_eq(q8_layers(q), n);
    q8_attach(q, f.model);
    struct tn_rng r;
    tn_rng_seed(&r, 5);
    double worst_rel = 0;
    for (int li = 0; li < n; li++) {
        const char *name = layers[li].name;
        char pn[LG_MAX_NAME];
        snprintf(pn, sizeof pn, "%s.bias", name);
        struct tn_tensor *w = layers[li].w, *b = vm_find(vm, pn);
        int64_t O = w->ne[0], I = w->ne[1], rows = 13;
        float sx = q8_input_scale(q, name), range = 127.0f * sx;
        const float *sw = tn_f32(q8_layer_scale(q, name));
        const int8_t *wq = tn_i8(q8_layer_weight(q, name));
        struct tn_tensor *x = tn_new_f32(T, "test/x", 3, (int64_t[]){1, rows, I});
        tn_fill_uniform(x, &r, -range, range); /* inside the calibrated range */
        struct tn_tensor *y8 = f.model->hook.linear(f.model->hook.user, f.ctx, name, x, w, b);
        cr_assert_not_null(y8, "%s: %s", name, ag_errmsg(f.ctx));
        cr_assert(y8->ndim == 3 && y8->ne[0] == 1 && y8->ne[1] == rows && y8->ne[2] == O);
        struct tn_tensor *yf = ag_linear(f.ctx, x, w, b);
        cr_assert_not_null(yf);
        int8_t *xq = malloc((size_t)(rows * I));
        q8_quantize_values(xq, tn_f32(x), 1.0f / sx, rows * I);
        double d2 = 0, s2 = 0;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t o = 0; o < O; o++) {
                const float *xr = tn_f32(x) + i * I, *wr = tn_f32(w) + o * I;
                double bound = 0, exact = 0;
                int64_t acc = 0;
                for (int64_t k = 0; k < I; k++) {
                    bound += fabs(xr[k]) * sw[o] / 2 + fabs(wr[k]) * sx / 2 + sx * sw[o] / 4;
                    acc += (int64_t)xq[i * I + k] * wq[o * I + k];
                }
                exact = (double)sx * sw[o] * (double)acc + (b ? tn_f32(b)[o] : 0.0);
                float got = tn_f32(y8)[i * O + o], ref = tn_f32(yf)[i * O + o];
                /* the int8 arithmetic itself: exact sums, one f32 scaling */
                cr_assert(fabs(got - exact) <= 1e-5 * (fabs(exact) + 1e-3),
                          "%s [%lld, %lld]: %g vs %g", name, (long long)i, (long long)o, got,
                          exact);
                /* against f32: within the worst-case quantisation error */
                cr_assert(fabs(got - ref) <= bound * (1 + 1e-4) + 1e-6, "%s: |%g - %g| > bound %g",
                          name, got, ref, bound);
                d2 += (got - ref) * (got - ref);
                s2 += (double)ref * ref;
            }
        double rel = sqrt(d2 / s2);
        worst_rel = fmax(worst_rel, rel);
        cr_assert(rel < 0.03, "%s: relative rms error %.4f of the int8 linear", name, rel);
        free(xq);
        tn_release(x);
        ag_ctx_reset(f.ctx);
    }
    cr_log_info("int8 linear vs f32 over %d layers: worst relative rms error %.4f", n, worst_rel);
    q8_detach(q, f.model);
    trk_free(T, layers);
    q8_free(q);
    fixture_fini(&f);
}

Test(int8, int8_model_forward_is_close_to_f32_and_frees_its_scratch)
{
    struct fixture f;
    fixture_init(&f);
    struct tft_batch b = {0};
    batch_at(&f, 5, 32, &b);
    struct tn_tensor *yf = forward_copy(&f, &b);
    struct q8_model *q = quantized_tiny(&f, 4);
    cr_assert(q8_bytes(q) > 0);
    int64_t weights = 0;
    for (int i = 0; i < vm_count(tft_varmap_borrow(f.model)); i++) {
        struct tn_tensor *p = vm_at(tft_varmap_borrow(f.model), i);
        const char *nm = tn_basename(p);
        if (p->ndim == 2 && strncmp(nm, "emb.", 4) && strstr(nm, ".weight") == nm + strlen(nm) - 7)
            weights += tn_numel(p) + p->ne[0] * 4 + 4; /* int8 + f32 scale per row + input scale */
    }
    cr_assert_eq(q8_bytes(q), weights);
    cr_assert(lg_live_bytes_with_prefix("int8/out.weight", NULL) > 0, "tagged int8/<layer>.weight");
    q8_attach(q, f.model);
    struct tn_tensor *y8 = tft_forward(f.model, f.ctx, &b);
    cr_assert_not_null(y8, "%s", ag_errmsg(f.ctx));
    int64_t count = 0;
    cr_assert_eq(lg_live_bytes_with_prefix("act/int8.", &count), 0,
                 "int8 scratch freed in the hook");
    cr_assert(count >= q8_layers(q), "every layer ran on int8 data (%lld scratch buffers)",
              (long long)count);
    double rel = rel_rms_diff(yf, y8);
    cr_log_info("tiny forward: int8 vs f32 relative rms difference %.4f", rel);
    cr_assert(rel > 0 && rel < 0.05, "int8 forward differs from f32 by %.4f (rms, relative)", rel);
    ag_ctx_reset(f.ctx);

    /* with gradients on, the int8 model refuses clearly */
    ag_set_grad_enabled(f.ctx, true);
    cr_assert_null(tft_forward(f.model, f.ctx, &b));
    cr_assert(strstr(ag_errmsg(f.ctx), "inference only"), "%s", ag_errmsg(f.ctx));
    ag_ctx_reset(f.ctx);
    ag_set_grad_enabled(f.ctx, false);

    q8_detach(q, f.model);
    q8_free(q);
    cr_assert_eq(lg_live_bytes_with_prefix("int8/", NULL), 0);
    tn_release(yf);
    tft_batch_fini(&b);
    fixture_fini(&f);
}

/* ---- QAT ---------------------------------------------------------------------------------- */

Test(int8, activation_fake_quant_is_straight_through_inside_the_range)
{
    struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){.training = true});
    struct tn_tensor *x = tn_new_f32(T, "test/x", 2, (int64_t[]){7, 19});
    struct tn_tensor *c = tn_new_f32(T, "test/c", 2, (int64_t[]){7, 19});
    struct tn_rng r;
    tn_rng_seed(&r, 9);
    tn_fill_uniform(x, &r, -3.0f, 3.0f);
    tn_fill_uniform(c, &r, -1.0f, 1.0f);
    tn_f32(x)[0] = 2.0f; /* exactly at the range: inside */
    x->requires_grad = true;
    const float range = 2.0f, s = range / 127.0f;
    struct tn_tensor *y = q8_ag_fake_quant_range(ctx, x, range);
    cr_assert_not_null(y, "%s", ag_errmsg(ctx));
    struct tn_tensor *loss = ag_sum_all(ctx, ag_mul(ctx, y, c));
    cr_assert_eq(ag_backward(ctx, loss), LG_OK, "%s", ag_errmsg(ctx));
    int inside = 0, clipped = 0;
    for (int64_t i = 0; i < tn_numel(x); i++) {
        float xi = tn_f32(x)[i], yi = tn_f32(y)[i], g = tn_f32(x->grad)[i];
        float k = yi / s;
        cr_assert(fabsf(k - rintf(k)) < 1e-3f && fabsf(k) <= 127.0f + 1e-3f, "y on the int8 grid");
        if (fabsf(xi) <= range) {
            inside++;
            cr_assert(fabsf(yi - xi) <= 0.5f * s * (1 + 1e-4f), "x %g → %g", xi, yi);
            cr_assert_eq(g, tn_f32(c)[i], "straight through at x = %g", xi);
        } else {
            clipped++;
            cr_assert_float_eq(yi, copysignf(range, xi), 1e-6, "clipped to the range");
            cr_assert_eq(g, 0.0f, "no gradient where clipped (x = %g)", xi);
        }
    }
    cr_assert(inside > 20 && clipped > 20);
    ag_ctx_reset(ctx);

    /* weights: per output row, nothing clipped, so every gradient passes */
    struct tn_tensor *w = tn_new_f32(T, "test/w", 2, (int64_t[]){7, 19});
    tn_fill_uniform(w, &r, -1.0f, 1.0f);
    w->requires_grad = true;
    loss = ag_sum_all(ctx, ag_mul(ctx, ag_fake_quant(ctx, w, true), c));
    cr_assert_eq(ag_backward(ctx, loss), LG_OK, "%s", ag_errmsg(ctx));
    for (int64_t i = 0; i < tn_numel(w); i++) cr_assert_eq(tn_f32(w->grad)[i], tn_f32(c)[i]);
    ag_ctx_reset(ctx);

    cr_assert_null(q8_ag_fake_quant_range(ctx, x, NAN));
    cr_assert(strstr(ag_errmsg(ctx), "range"), "%s", ag_errmsg(ctx));
    ag_ctx_free(ctx);
    tn_release(w);
    tn_release(c);
    tn_release(x);
}

Test(int8, qat_trains_through_fake_quant_and_converts_to_the_same_model)
{
    struct fixture f;
    fixture_init(&f);
    struct q8_qat *qat = qat_new(&f);
    q8_qat_attach(qat, f.model);
    /* one training forward and backward: observers move, weights get gradients */
    ag_set_training(f.ctx, true);
    ag_set_grad_enabled(f.ctx, true);
    struct tft_batch b = {0};
    batch_at(&f, 0, 16, &b);
    struct tn_tensor *yhat = tft_forward(f.model, f.ctx, &b);
    struct tn_tensor *loss = yhat ? tft_loss(f.model, f.ctx, yhat, &b) : NULL;
    cr_assert_not_null(loss, "%s", ag_errmsg(f.ctx));
    cr_assert_eq(ag_backward(f.ctx, loss), LG_OK, "%s", ag_errmsg(f.ctx));
    struct tn_tensor *w = vm_find(tft_varmap_borrow(f.model), "pos_ff.fc1.weight");
    cr_assert_not_null(w->grad);
    double g2 = 0;
    for (int64_t i = 0; i < tn_numel(w); i++) g2 += tn_f32(w->grad)[i] * tn_f32(w->grad)[i];
    cr_assert(g2 > 0, "gradients flow through the fake quantisation");
    cr_assert(q8_qat_range(qat, "pos_ff.fc1") > 0 && q8_qat_range(qat, "out") > 0);
    cr_assert(lg_live_bytes_with_prefix("qat/observer.out", NULL) > 0,
              "observers tagged qat/observer.<layer>");
    ag_ctx_reset(f.ctx);
    tft_batch_fini(&b);
    struct tn_tensor **params = NULL;
    int np = 0;
    cr_assert_eq(vm_all_vars(tft_varmap_borrow(f.model), &params, &np), LG_OK);
    opt_free_grads(params, np);
    vm_list_free(tft_varmap_borrow(f.model), params);

    /* in evaluation the ranges are frozen, and the converted int8 model computes the same */
    ag_set_training(f.ctx, false);
    ag_set_grad_enabled(f.ctx, false);
    float before = q8_qat_range(qat, "out");
    batch_at(&f, 3, 32, &b);
    struct tn_tensor *yfq = forward_copy(&f, &b);
    cr_assert_eq(q8_qat_range(qat, "out"), before, "evaluation does not move the observers");
    q8_qat_detach(qat, f.model);
    struct q8_model *q = NULL;
    cr_assert_eq(q8_qat_convert(&q, f.model, qat), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(q8_input_scale(q, "out"), before / 127.0f);
    q8_qat_free(qat);
    cr_assert_eq(lg_live_bytes_with_prefix("qat/", NULL), 0, "q8_qat_free frees every observer");
    q8_attach(q, f.model);
    struct tn_tensor *y8 = forward_copy(&f, &b);
    q8_detach(q, f.model);
    double rel = rel_rms_diff(yfq, y8);
    cr_log_info("QAT fake-quantised forward vs converted int8 model: relative rms %.2e", rel);
    cr_assert(rel < 2e-3, "the int8 model differs from the fake-quantised one by %.2e", rel);
    q8_free(q);
    tn_release(yfq);
    tn_release(y8);
    tft_batch_fini(&b);
    fixture_fini(&f);
}

/* ---- saving ------------------------------------------------------------------------------- */

Test(int8, save_writes_i8_weights_and_f32_scales)
{
    struct fixture f;
    fixture_init(&f);
    struct q8_model *q = quantized_tiny(&f, 2);
    char path[512], *json = tft_config_to_json(&f.cfg);
    snprintf(path, sizeof path, "%s/tiny.int8.safetensors", lg_test_tmpdir());
    cr_assert_eq(q8_save(q, f.model, path, json), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(lg_live_bytes_with_prefix("int8/save", NULL), 0, "staging freed");

    struct st_file *sf = NULL;
    cr_assert_eq(st_open(&sf, T, path), LG_OK, "%s", lg_errmsg());
    struct vm_varmap *vm = tft_varmap_borrow(f.model);
    cr_assert_eq(st_count(sf), vm_count(vm) + 2 * q8_layers(q));
    cr_assert_str_eq(st_meta(sf, "config"), json);
    cr_assert_not_null(st_meta(sf, "quantization"));
    struct q8_layer_ref *layers = NULL;
    int n = 0;
    cr_assert_eq(q8_list_layers(T, f.model, "test/layers", &layers, &n), LG_OK);
    char pn[LG_MAX_NAME];
    for (int i = 0; i < n; i++) {
        const struct tn_tensor *wq = q8_layer_weight(q, layers[i].name);
        snprintf(pn, sizeof pn, "%s.weight", layers[i].name);
        int k = st_find(sf, pn);
        cr_assert(k >= 0, "%s in the file", pn);
        const struct st_info *e = st_info(sf, k);
        cr_assert(e->dtype == TN_I8 && e->ndim == 2 && e->shape[0] == layers[i].out &&
                      e->shape[1] == layers[i].in,
                  "%s: I8 [out, in]", pn);
        int8_t *buf = trk_alloc(T, st_nbytes(sf, k), "test/read");
        cr_assert_eq(st_read(sf, k, buf, st_nbytes(sf, k)), LG_OK, "%s", lg_errmsg());
        cr_assert(memcmp(buf, tn_data(wq), tn_nbytes(wq)) == 0, "%s bytes", pn);
        trk_free(T, buf);
        snprintf(pn, sizeof pn, "%s.weight.scale", layers[i].name);
        k = st_find(sf, pn);
        cr_assert(k >= 0 && st_info(sf, k)->dtype == TN_F32 && st_info(sf, k)->ndim == 1 &&
                      st_info(sf, k)->shape[0] == layers[i].out,
                  "%s: F32 [out]", pn);
        float *sc = trk_alloc(T, st_nbytes(sf, k), "test/read");
        cr_assert_eq(st_read(sf, k, sc, st_nbytes(sf, k)), LG_OK);
        cr_assert(memcmp(sc, tn_data(q8_layer_scale(q, layers[i].name)), st_nbytes(sf, k)) == 0);
        trk_free(T, sc);
        snprintf(pn, sizeof pn, "%s.input_scale", layers[i].name);
        k = st_find(sf, pn);
        cr_assert(k >= 0 && st_info(sf, k)->dtype == TN_F32 && st_nbytes(sf, k) == 4, "%s", pn);
        float is = 0;
        cr_assert_eq(st_read(sf, k, &is, 4), LG_OK);
        cr_assert_eq(is, q8_input_scale(q, layers[i].name));
    }
    for (int i = 0; i < vm_count(vm); i++) { /* everything else: F32 under its own name */
        const char *nm = tn_basename(vm_at(vm, i));
        int k = st_find(sf, nm);
        cr_assert(k >= 0, "%s in the file", nm);
        if (st_info(sf, k)->dtype == TN_F32)
            cr_assert_eq(st_nbytes(sf, k), tn_nbytes(vm_at(vm, i)), "%s", nm);
        else
            cr_assert_eq(st_info(sf, k)->dtype, TN_I8, "%s", nm);
    }
    cr_assert_eq(st_info(sf, st_find(sf, "emb.cat.series.weight"))->dtype, TN_F32,
                 "embeddings stay f32");
    st_close(sf);
    trk_free(T, layers);

    /* an unwritable path: a clear error, nothing left behind */
    snprintf(path, sizeof path, "%s/no/such/dir/x.safetensors", lg_test_tmpdir());
    cr_assert_neq(q8_save(q, f.model, path, json), LG_OK);
    cr_assert(strstr(lg_errmsg(), "no/such/dir"), "%s", lg_errmsg());
    free(json);
    q8_free(q);
    fixture_fini(&f);
}

/* ---- broken contracts --------------------------------------------------------------------- */

static void attach_twice(struct fixture *f)
{
    struct q8_model *q = quantized_tiny(f, 1);
    q8_attach(q, f->model);
    q8_attach(q, f->model);
}

static void attach_over_another_hook(struct fixture *f)
{
    struct q8_calib *cal = calib_new(f);
    struct q8_qat *qat = qat_new(f);
    q8_calib_attach(cal, f->model);
    q8_qat_attach(qat, f->model);
}

static void free_while_attached(struct fixture *f)
{
    struct q8_calib *cal = calib_new(f);
    q8_calib_attach(cal, f->model);
    q8_calib_free(cal);
}

/* Each breaks a contract on a fresh fixture and must abort (LG_ASSERT). */
static const struct {
    const char *name;
    void (*breaks)(struct fixture *f);
} contracts[] = {
    {"attaching twice", attach_twice},
    {"attaching over another hook", attach_over_another_hook},
    {"freeing while attached", free_while_attached},
};

/* Criterion runs each parameter in a process of its own, so that each case can abort; the
 * parameter is the case's index (a pointer into this process would not survive the move). */
ParameterizedTestParameters(int8, a_broken_contract_aborts)
{
    static size_t k[LG_ARRAY_LEN(contracts)];
    for (size_t i = 0; i < LG_ARRAY_LEN(k); i++) k[i] = i;
    return cr_make_param_array(size_t, k, LG_ARRAY_LEN(k));
}

ParameterizedTest(size_t *k, int8, a_broken_contract_aborts, .signal = SIGABRT)
{
    fprintf(stderr, "int8 broken contract, must abort: %s\n", contracts[*k].name);
    struct fixture f;
    fixture_init(&f);
    contracts[*k].breaks(&f);
    cr_assert_fail("%s did not abort", contracts[*k].name);
}
