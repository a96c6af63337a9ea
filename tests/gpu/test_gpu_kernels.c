/* test_gpu_kernels.c — every member of kn_cuda against kn_cpu on random data (part 1: memory,
 * strided gathers and their reductions, elementwise ops, GEMMs, axis reductions, embeddings).
 * Same inputs on both devices; the device result must match the CPU's within a tolerance that
 * allows only rounding (FMA contraction, summation order). Part 2 is test_gpu_kernels_nn.c. */
#include <math.h>
#include <string.h>

#include "kn_pair.h"

TestSuite(gpu_kernels, .init = lg_test_setup, .fini = lg_gpu_teardown, .timeout = 120);

#define TOL 1e-5

/* ---- memory ---------------------------------------------------------------------------------- */

Test(gpu_kernels, zero_add_scalar_axpy_scale)
{
    lg_gpu_begin();
    int64_t n = 100003;
    struct kn_pair x = kn_pair_new(n, 1, -1, 1), y = kn_pair_new(n, 2, -1, 1);
    kn_cpu.add_scalar(y.h, 0.25f, n);
    kn_cuda.add_scalar(y.d, 0.25f, n);
    kn_pair_expect(&y, 0, "add_scalar");
    kn_cpu.axpy(y.h, x.h, 1.0f, n);
    kn_cuda.axpy(y.d, x.d, 1.0f, n);
    kn_pair_expect(&y, 0, "axpy alpha 1");
    kn_cpu.axpy(y.h, x.h, -0.3f, n);
    kn_cuda.axpy(y.d, x.d, -0.3f, n);
    kn_pair_expect(&y, TOL, "axpy alpha -0.3");
    kn_cpu.scale(y.h, x.h, 1.5f, n);
    kn_cuda.scale(y.d, x.d, 1.5f, n);
    kn_pair_expect(&y, 0, "scale");
    kn_cpu.scale(y.h, y.h, -2.0f, n); /* in place */
    kn_cuda.scale(y.d, y.d, -2.0f, n);
    kn_pair_expect(&y, 0, "scale in place");
    kn_cpu.zero(y.h, n - 3);
    kn_cuda.zero(y.d, n - 3);
    kn_pair_expect(&y, 0, "zero (a prefix)");
    kn_cuda.zero(y.d, 0); /* empty ranges launch nothing */
    kn_cuda.axpy(y.d, x.d, 1.0f, 0);
    kn_pair_expect(&y, 0, "empty calls change nothing");
    kn_pair_free(&x);
    kn_pair_free(&y);
}

Test(gpu_kernels, copy2d_and_dcopy2d)
{
    lg_gpu_begin();
    struct kn_pair src = kn_pair_new(40 * 33, 3, -1, 1), dst = kn_pair_new(40 * 50, 4, -1, 1);
    /* pitched rows, contiguous rows, a single row, and ld smaller than cols (overlapping rows
     * are never written by the ops but the contract allows reading them) */
    kn_cpu.copy2d(dst.h, src.h, 40, 30, 50, 33);
    kn_cuda.copy2d(dst.d, src.d, 40, 30, 50, 33);
    kn_pair_expect(&dst, 0, "copy2d pitched");
    kn_cpu.copy2d(dst.h, src.h, 30, 33, 33, 33);
    kn_cuda.copy2d(dst.d, src.d, 30, 33, 33, 33);
    kn_pair_expect(&dst, 0, "copy2d contiguous");
    kn_cpu.copy2d(dst.h + 7, src.h + 5, 1, 100, 0, 0);
    kn_cuda.copy2d(dst.d + 7, src.d + 5, 1, 100, 0, 0);
    kn_pair_expect(&dst, 0, "copy2d one row, ld 0");
    kn_cpu.copy2d(dst.h, src.h, 20, 30, 50, 20);
    kn_cuda.copy2d(dst.d, src.d, 20, 30, 50, 20);
    kn_pair_expect(&dst, 0, "copy2d ld_src < cols");
    kn_cpu.dcopy2d(src.h, dst.h, 40, 30, 33, 50);
    kn_cuda.dcopy2d(src.d, dst.d, 40, 30, 33, 50);
    kn_pair_expect(&src, TOL, "dcopy2d");
    kn_pair_free(&src);
    kn_pair_free(&dst);
}

/* ---- strided geometry ------------------------------------------------------------------------ */

static int64_t numel(const struct kn_geom *g) { return g->ne[0] * g->ne[1] * g->ne[2] * g->ne[3]; }
static int64_t span(const int64_t *ne, const int64_t *s) /* elements a stride set reaches */
{
    int64_t m = 0;
    for (int k = 0; k < 4; k++) m += (ne[k] - 1) * s[k];
    return m + 1;
}

/* Geometries the ops make (permutes, broadcasts along any axis) and one with overlapping
 * strides that only the contract allows. */
static const struct kn_geom GEOMS[] = {
    {{1, 1, 1, 5000}, {0, 0, 0, 1}, {0, 0, 0, 1}},     /* contiguous */
    {{2, 7, 11, 13}, {1001, 1, 91, 7}, {0, 13, 0, 1}}, /* a permute; b broadcast */
    {{1, 64, 40, 24}, {0, 24, 0, 1}, {0, 960, 24, 1}}, /* a broadcast along 2 */
    {{1, 1, 300, 160}, {0, 0, 0, 1}, {0, 0, 160, 1}},  /* a is a row (bias-like) */
    {{1, 1, 512, 37}, {0, 0, 1, 0}, {0, 0, 37, 1}},    /* a is a column */
    {{3, 5, 400, 2}, {0, 2, 0, 1}, {4000, 800, 2, 1}}, /* long sums, few targets */
    {{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}},        /* scalars */
    {{1, 1, 9, 31}, {0, 0, 1, 1}, {0, 0, 31, 1}},      /* overlapping windows */
};

Test(gpu_kernels, gather_and_binary)
{
    lg_gpu_begin();
    for (size_t gi = 0; gi < LG_ARRAY_LEN(GEOMS); gi++) {
        const struct kn_geom *g = &GEOMS[gi];
        int64_t n = numel(g);
        struct kn_pair a = kn_pair_new(span(g->ne, g->sa), 10 + gi, -2, 2);
        struct kn_pair b = kn_pair_new(span(g->ne, g->sb), 20 + gi, -2, 2);
        struct kn_pair out = kn_pair_new(n, 0, 0, 0);
        char what[64];
        kn_cpu.gather(out.h, a.h, g);
        kn_cuda.gather(out.d, a.d, g);
        snprintf(what, sizeof what, "gather, geometry %zu", gi);
        kn_pair_expect(&out, 0, what);
        for (int op = KN_ADD; op <= KN_MUL; op++) {
            kn_cpu.binary(out.h, a.h, b.h, (enum kn_binop)op, g);
            kn_cuda.binary(out.d, a.d, b.d, (enum kn_binop)op, g);
            snprintf(what, sizeof what, "binary op %d, geometry %zu", op, gi);
            kn_pair_expect(&out, 0, what);
        }
        kn_pair_free(&a);
        kn_pair_free(&b);
        kn_pair_free(&out);
    }
}

Test(gpu_kernels, dgather_and_dmul_reduce_into_broadcast_operands)
{
    lg_gpu_begin();
    for (size_t gi = 0; gi < LG_ARRAY_LEN(GEOMS); gi++) {
        const struct kn_geom *g = &GEOMS[gi];
        int64_t n = numel(g);
        struct kn_pair dy = kn_pair_new(n, 30 + gi, -1, 1);
        struct kn_pair dx = kn_pair_new(span(g->ne, g->sa), 40 + gi, -1, 1);
        struct kn_pair other = kn_pair_new(span(g->ne, g->sb), 50 + gi, -1, 1);
        char what[64];
        kn_cpu.dgather(dx.h, dy.h, -0.5f, g);
        kn_cuda.dgather(dx.d, dy.d, -0.5f, g);
        snprintf(what, sizeof what, "dgather, geometry %zu", gi);
        kn_pair_expect(&dx, TOL, what);
        kn_cpu.dmul(dx.h, dy.h, other.h, g);
        kn_cuda.dmul(dx.d, dy.d, other.d, g);
        snprintf(what, sizeof what, "dmul, geometry %zu", gi);
        kn_pair_expect(&dx, TOL, what);
        kn_pair_free(&dy);
        kn_pair_free(&dx);
        kn_pair_free(&other);
    }
}

/* ---- GEMM ------------------------------------------------------------------------------------ */

/* C = alpha·op(A)·op(B) + beta·C with padded leading dimensions, every transposition. */
static void one_gemm(bool ta, bool tb, int m, int n, int k, float alpha, float beta, int pad)
{
    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    int64_t ra = ta ? k : m, rb = tb ? n : k;
    struct kn_pair a = kn_pair_new(ra * lda, 60, -1, 1), b = kn_pair_new(rb * ldb, 61, -1, 1);
    struct kn_pair c = kn_pair_new((int64_t)m * ldc, 62, -1, 1);
    kn_cpu.gemm(c.h, a.h, b.h, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc);
    kn_cuda.gemm(c.d, a.d, b.d, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc);
    char what[96];
    snprintf(what, sizeof what, "gemm ta %d tb %d m %d n %d k %d beta %g", ta, tb, m, n, k, beta);
    kn_pair_expect(&c, TOL, what);
    kn_pair_free(&a);
    kn_pair_free(&b);
    kn_pair_free(&c);
}

Test(gpu_kernels, gemm_every_layout)
{
    lg_gpu_begin();
    for (int t = 0; t < 4; t++) {
        one_gemm(t & 1, t & 2, 67, 45, 129, 1.0f, 0.0f, 0);
        one_gemm(t & 1, t & 2, 33, 160, 640, 0.5f, 1.0f, 3);
        one_gemm(t & 1, t & 2, 1, 7, 5, 1.0f, 1.0f, 1);
    }
    one_gemm(false, true, 12, 9, 0, 1.0f, 0.0f, 0); /* k = 0: C = 0 */
    one_gemm(false, true, 12, 9, 0, 1.0f, 0.5f, 2); /* k = 0: C = beta·C */
}

Test(gpu_kernels, gemm_batched_strides)
{
    lg_gpu_begin();
    int batch = 6, m = 24, n = 17, k = 40;
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        int lda = ta ? m : k, ldb = tb ? k : n;
        struct kn_pair a = kn_pair_new((int64_t)batch * m * k, 70, -1, 1);
        struct kn_pair b = kn_pair_new((int64_t)batch * k * n, 71, -1, 1);
        struct kn_pair c = kn_pair_new((int64_t)batch * m * n, 72, -1, 1);
        /* every entry its own matrices */
        kn_cpu.gemm_batched(c.h, a.h, b.h, ta, tb, m, n, k, 1.0f, lda, ldb, 0.0f, n, batch,
                            (int64_t)m * k, (int64_t)k * n, (int64_t)m * n);
        kn_cuda.gemm_batched(c.d, a.d, b.d, ta, tb, m, n, k, 1.0f, lda, ldb, 0.0f, n, batch,
                             (int64_t)m * k, (int64_t)k * n, (int64_t)m * n);
        kn_pair_expect(&c, TOL, "gemm_batched");
        /* b shared by the batch (stride 0) */
        kn_cpu.gemm_batched(c.h, a.h, b.h, ta, tb, m, n, k, 0.5f, lda, ldb, 1.0f, n, batch,
                            (int64_t)m * k, 0, (int64_t)m * n);
        kn_cuda.gemm_batched(c.d, a.d, b.d, ta, tb, m, n, k, 0.5f, lda, ldb, 1.0f, n, batch,
                             (int64_t)m * k, 0, (int64_t)m * n);
        kn_pair_expect(&c, TOL, "gemm_batched, b shared");
        /* one C for every entry (stride 0): the products add up in order */
        kn_cpu.gemm_batched(c.h, a.h, b.h, ta, tb, m, n, k, 1.0f, lda, ldb, 1.0f, n, batch,
                            (int64_t)m * k, (int64_t)k * n, 0);
        kn_cuda.gemm_batched(c.d, a.d, b.d, ta, tb, m, n, k, 1.0f, lda, ldb, 1.0f, n, batch,
                             (int64_t)m * k, (int64_t)k * n, 0);
        kn_pair_expect(&c, TOL, "gemm_batched, C shared");
        kn_pair_free(&a);
        kn_pair_free(&b);
        kn_pair_free(&c);
    }
}

Test(gpu_kernels, bias_fill_and_dbias)
{
    lg_gpu_begin();
    int64_t sizes[][2] = {{3, 160}, {12288, 160}, {5000, 7}, {2, 70000}};
    for (size_t s = 0; s < LG_ARRAY_LEN(sizes); s++) {
        int64_t rows = sizes[s][0], n = sizes[s][1];
        struct kn_pair b1 = kn_pair_new(n, 80, -1, 1), b2 = kn_pair_new(n, 81, -1, 1);
        struct kn_pair y = kn_pair_new(rows * n, 82, -1, 1), db = kn_pair_new(n, 83, -1, 1);
        const float *h1[] = {b1.h, b1.h, NULL, NULL}, *h2[] = {b2.h, NULL, b2.h, NULL};
        const float *d1[] = {b1.d, b1.d, NULL, NULL}, *d2[] = {b2.d, NULL, b2.d, NULL};
        for (int v = 0; v < 4; v++) {
            kn_cpu.bias_fill(y.h, h1[v], h2[v], rows, n);
            kn_cuda.bias_fill(y.d, d1[v], d2[v], rows, n);
            kn_pair_expect(&y, 0, "bias_fill");
        }
        lg_gpu_fill(y.h, rows * n, 84, -1, 1);
        lg_gpu_free(y.d);
        y.d = lg_gpu_upload(y.h, (size_t)(rows * n) * sizeof(float), "data/pair.device");
        kn_cpu.dbias(db.h, y.h, rows, n);
        kn_cuda.dbias(db.d, y.d, rows, n);
        char what[64];
        snprintf(what, sizeof what, "dbias [%lld, %lld]", (long long)rows, (long long)n);
        kn_pair_expect(&db, TOL, what);
        kn_pair_free(&b1);
        kn_pair_free(&b2);
        kn_pair_free(&y);
        kn_pair_free(&db);
    }
}

/* ---- elementwise ----------------------------------------------------------------------------- */

Test(gpu_kernels, activations_and_their_backward)
{
    lg_gpu_begin();
    int64_t n = 70001;
    /* wide inputs: saturation, the tanh polynomial below 0.2, exp's clamps */
    struct kn_pair x = kn_pair_new(n, 90, -30, 30), small = kn_pair_new(n, 91, -0.3f, 0.3f);
    struct kn_pair y = kn_pair_new(n, 0, 0, 0), dy = kn_pair_new(n, 92, -1, 1);
    struct kn_pair dx = kn_pair_new(n, 93, -1, 1);
    void (*fwd_cpu[])(float *, const float *, int64_t) = {kn_cpu.sigmoid, kn_cpu.tanh, kn_cpu.elu};
    void (*fwd_gpu[])(float *, const float *, int64_t) = {kn_cuda.sigmoid, kn_cuda.tanh,
                                                          kn_cuda.elu};
    void (*bwd_cpu[])(float *, const float *, const float *, int64_t) = {kn_cpu.dsigmoid,
                                                                         kn_cpu.dtanh, kn_cpu.delu};
    void (*bwd_gpu[])(float *, const float *, const float *,
                      int64_t) = {kn_cuda.dsigmoid, kn_cuda.dtanh, kn_cuda.delu};
    static const char *const names[] = {"sigmoid", "tanh", "elu"};
    for (int f = 0; f < 3; f++)
        for (int in = 0; in < 2; in++) {
            const struct kn_pair *src = in ? &small : &x;
            char what[64];
            fwd_cpu[f](y.h, src->h, n);
            fwd_gpu[f](y.d, src->d, n);
            snprintf(what, sizeof what, "%s (%s inputs)", names[f], in ? "small" : "wide");
            kn_pair_expect(&y, 2e-6, what);
            /* backward from the host's y on both sides, so only the kernel differs */
            lg_gpu_free(y.d);
            y.d = lg_gpu_upload(y.h, (size_t)n * sizeof(float), "data/pair.device");
            bwd_cpu[f](dx.h, y.h, dy.h, n);
            bwd_gpu[f](dx.d, y.d, dy.d, n);
            snprintf(what, sizeof what, "d%s", names[f]);
            kn_pair_expect(&dx, TOL, what);
        }
    kn_pair_free(&x);
    kn_pair_free(&small);
    kn_pair_free(&y);
    kn_pair_free(&dy);
    kn_pair_free(&dx);
}

Test(gpu_kernels, dropout_drops_the_same_elements)
{
    lg_gpu_begin();
    int64_t n = 100000;
    struct kn_pair x = kn_pair_new(n, 100, -1, 1), y = kn_pair_new(n, 0, 0, 0);
    struct kn_pair dx = kn_pair_new(n, 101, -1, 1), dy = kn_pair_new(n, 102, -1, 1);
    int8_t *mh = trk_alloc(T, (size_t)n, "data/mask.host"),
           *mg = trk_alloc(T, (size_t)n, "data/mask.fetch");
    int8_t *md = lg_gpu_zeros((size_t)n, "data/mask.device");
    uint64_t seed = 0x123456789abcdefull;
    kn_cpu.dropout(y.h, mh, x.h, 0.1f, 1.0f / 0.9f, seed, n);
    kn_cuda.dropout(y.d, md, x.d, 0.1f, 1.0f / 0.9f, seed, n);
    kn_pair_expect(&y, 0, "dropout output");
    lg_gpu_download(mg, md, (size_t)n);
    cr_expect_arr_eq(mg, mh, (size_t)n, "the same mask on both devices");
    kn_cpu.ddropout(dx.h, dy.h, mh, 1.0f / 0.9f, n);
    kn_cuda.ddropout(dx.d, dy.d, md, 1.0f / 0.9f, n);
    kn_pair_expect(&dx, 0, "ddropout");
    trk_free(T, mh);
    trk_free(T, mg);
    lg_gpu_free(md);
    kn_pair_free(&x);
    kn_pair_free(&y);
    kn_pair_free(&dx);
    kn_pair_free(&dy);
}

Test(gpu_kernels, epilogues_in_place_match_the_host)
{
    lg_gpu_begin();
    int64_t n = 100003;
    uint64_t seed = 0xfeedfacecafebeefull;
    for (int k = 0; k < 2; k++) {
        enum kn_epilogue kind = k ? KN_EPI_DROPOUT : KN_EPI_ELU;
        const char *what = k ? "dropout" : "elu";
        struct kn_pair y = kn_pair_new(n, 110 + k, -8, 8), d = kn_pair_new(n, 112 + k, -1, 1);
        kn_cpu.epilogue(y.h, kind, 0.2f, 1.25f, seed, n);
        kn_cuda.epilogue(y.d, kind, 0.2f, 1.25f, seed, n);
        kn_pair_expect(&y, k ? 0 : 2e-6, what);
        /* backward from the host's y on both sides, so only the kernel differs */
        lg_gpu_free(y.d);
        y.d = lg_gpu_upload(y.h, (size_t)n * sizeof(float), "data/pair.device");
        kn_cpu.depilogue(d.h, y.h, kind, 0.2f, 1.25f, seed, n);
        kn_cuda.depilogue(d.d, y.d, kind, 0.2f, 1.25f, seed, n);
        kn_pair_expect(&d, 0, k ? "ddropout in place" : "delu in place");
        kn_pair_free(&y);
        kn_pair_free(&d);
    }
}

/* ---- reductions ------------------------------------------------------------------------------ */

Test(gpu_kernels, sum_axis_dsum_axis_sumsq)
{
    lg_gpu_begin();
    int64_t shapes[][3] = {{4, 300, 1}, {1, 100000, 1}, {64, 4, 24 * 192}, {3, 1, 5}, {7, 9, 11}};
    for (size_t s = 0; s < LG_ARRAY_LEN(shapes); s++) {
        int64_t o = shapes[s][0], n = shapes[s][1], in = shapes[s][2];
        struct kn_pair x = kn_pair_new(o * n * in, 110 + s, -1, 1);
        struct kn_pair y = kn_pair_new(o * in, 0, 0, 0);
        char what[64];
        kn_cpu.sum_axis(y.h, x.h, o, n, in, 0.25f);
        kn_cuda.sum_axis(y.d, x.d, o, n, in, 0.25f);
        snprintf(what, sizeof what, "sum_axis [%lld, %lld, %lld]", (long long)o, (long long)n,
                 (long long)in);
        kn_pair_expect(&y, TOL, what);
        kn_cpu.dsum_axis(x.h, y.h, o, n, in, -1.5f);
        kn_cuda.dsum_axis(x.d, y.d, o, n, in, -1.5f);
        kn_pair_expect(&x, TOL, "dsum_axis");
        /* the same bytes on both sides (dsum_axis's results differ by rounding) */
        lg_gpu_free(x.d);
        x.d = lg_gpu_upload(x.h, (size_t)(o * n * in) * sizeof(float), "data/pair.device");
        double a = kn_cpu.sumsq(x.h, o * n * in), b = kn_cuda.sumsq(x.d, o * n * in);
        cr_expect(fabs(a - b) <= 1e-10 * a, "sumsq: cpu %.17g, gpu %.17g", a, b);
        kn_pair_free(&x);
        kn_pair_free(&y);
    }
    cr_expect_eq(kn_cuda.sumsq(NULL, 0), 0.0);
}

/* The gradient norm's sum over many tensors in one read-back: more tensors than one launch
 * takes, empty ones among them, one longer than a part; against the CPU's per-tensor sums, and
 * the same bits on a second run. */
Test(gpu_kernels, sumsq_many_matches_the_cpu_and_repeats_bitwise)
{
    lg_gpu_begin();
    enum { NT = 150 };
    const float *xd[NT];
    int64_t n[NT];
    struct kn_pair x[NT];
    double want = 0.0;
    for (int i = 0; i < NT; i++) {
        n[i] = i % 17 == 0 ? 0 : i == 7 ? 3000001 : 1 + (i * 7919) % 5000;
        x[i] = kn_pair_new(n[i], 500 + (uint64_t)i, -2, 2);
        xd[i] = n[i] ? x[i].d : NULL;
        want += kn_cpu.sumsq(x[i].h, n[i]);
    }
    double a = kn_cuda_sumsq_many(xd, n, NT), b = kn_cuda_sumsq_many(xd, n, NT);
    cr_expect(fabs(a - want) <= 1e-10 * want, "sumsq_many: gpu %.17g, cpu %.17g", a, want);
    cr_expect(memcmp(&a, &b, sizeof a) == 0, "the same bits twice: %.17g, %.17g", a, b);
    double one = kn_cuda.sumsq(x[7].d, n[7]), one_cpu = kn_cpu.sumsq(x[7].h, n[7]);
    cr_expect(fabs(one - one_cpu) <= 1e-10 * one_cpu, "one tensor: %.17g vs %.17g", one, one_cpu);
    cr_expect_eq(kn_cuda_sumsq_many(xd, n, 0), 0.0, "no tensors: 0");
    cr_expect_eq(kn_cuda_error(), LG_OK, "%s", kn_cuda_errmsg());
    for (int i = 0; i < NT; i++) kn_pair_free(&x[i]);
}

/* ---- embedding ------------------------------------------------------------------------------- */

Test(gpu_kernels, embedding_and_its_scatter_add)
{
    lg_gpu_begin();
    int64_t card = 37, h = 160, n_idx = 64 * 192;
    struct kn_pair w = kn_pair_new(card * h, 120, -1, 1), y = kn_pair_new(n_idx * h, 0, 0, 0);
    struct kn_pair dy = kn_pair_new(n_idx * h, 121, -1, 1), dw = kn_pair_new(card * h, 122, -1, 1);
    int32_t *idx = trk_alloc(T, (size_t)n_idx * sizeof *idx, "data/idx.host");
    struct tn_rng r;
    tn_rng_seed(&r, 123);
    for (int64_t i = 0; i < n_idx; i++)
        idx[i] = (int32_t)(tn_rng_next(&r) % (uint64_t)card); /* repeats */
    int32_t *idx_d = lg_gpu_upload(idx, (size_t)n_idx * sizeof *idx, "data/idx.device");
    kn_cpu.embedding(y.h, w.h, idx, n_idx, h);
    kn_cuda.embedding(y.d, w.d, idx_d, n_idx, h);
    kn_pair_expect(&y, 0, "embedding");
    kn_cpu.dembedding(dw.h, dy.h, idx, n_idx, h);
    kn_cuda.dembedding(dw.d, dy.d, idx_d, n_idx, h);
    kn_pair_expect(&dw, TOL, "dembedding (repeated indices)");
    trk_free(T, idx);
    lg_gpu_free(idx_d);
    kn_pair_free(&w);
    kn_pair_free(&y);
    kn_pair_free(&dy);
    kn_pair_free(&dw);
}
