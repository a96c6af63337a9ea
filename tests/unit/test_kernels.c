/* test_kernels.c — the CPU kernels on more than one thread, and the fused ops against the
 * chains of ops they replace.
 *
 * The reference checks use shapes small enough that every kernel runs on one thread; here the
 * shapes are large enough to be split. An elementwise kernel, a row kernel or a reduction over
 * fixed blocks must give the same bits on 1 and on 2 (or 3) threads; a split GEMM the same
 * products to float rounding. The pool itself: every chunk runs once, a call from inside a chunk
 * and calls from two threads at once complete. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "autograd.h"
#include "kernels.h"
#include "kn_pool.h"
#include "lg_test.h"
#include "lg_test_model.h"

static void setup(void)
{
    lg_test_setup();
    kn_set_threads(0);
}

static void teardown(void)
{
    kn_set_threads(0);
    lg_test_teardown();
}

TestSuite(kernels, .init = setup, .fini = teardown);

static struct tn_rng rng;

static float *rnd_buf(int64_t n)
{
    float *p = trk_alloc(T, (size_t)n * sizeof *p, "test/buf");
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++) p[i] = tn_rng_normal(&rng);
    return p;
}

static float *copy_buf(const float *src, int64_t n)
{
    float *p = trk_alloc(T, (size_t)n * sizeof *p, "test/buf");
    cr_assert_not_null(p);
    memcpy(p, src, (size_t)n * sizeof *p);
    return p;
}

static void assert_same(const float *a, const float *b, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(&a[i], &b[i], sizeof *a) == 0,
                  "%s: element %lld: %.9g on 1 thread, %.9g on more", what, (long long)i, a[i],
                  b[i]);
}

static void assert_close(const float *a, const float *b, int64_t n, double rtol, const char *what)
{
    double scale = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(a[i]));
    for (int64_t i = 0; i < n; i++)
        cr_assert_leq(fabs(a[i] - b[i]), rtol * scale + 1e-30, "%s: element %lld: %.9g vs %.9g",
                      what, (long long)i, a[i], b[i]);
}

/* ---- the pool -------------------------------------------------------------------------------- */

struct count {
    _Atomic int hits[1000];
};

static void count_chunk(void *p, int64_t c) { ((struct count *)p)->hits[c]++; }

Test(kernels, every_chunk_runs_once_at_every_thread_count)
{
    for (int t = 1; t <= 4; t++) {
        kn_set_threads(t);
        cr_assert_eq(kn_threads(), t);
        static struct count c;
        memset(&c, 0, sizeof c);
        kn_parallel_chunks(1000, count_chunk, &c);
        for (int i = 0; i < 1000; i++)
            cr_assert_eq(c.hits[i], 1, "%d threads: chunk %d ran %d times", t, i, c.hits[i]);
    }
}

struct cover {
    _Atomic int *hits;
    _Atomic int chunks;
};

static void cover_part(void *p, int64_t b, int64_t e)
{
    struct cover *c = p;
    c->chunks++;
    cr_assert(e - b >= 1024 || e == 100000, "a chunk of %lld items, below the grain",
              (long long)(e - b));
    for (int64_t i = b; i < e; i++) c->hits[i]++;
}

static void nested(void *p, int64_t c)
{
    /* a parallel call from inside a chunk runs on this thread */
    struct count *cnt = p;
    kn_parallel_chunks(10, count_chunk, cnt + c);
}

Test(kernels, a_call_from_inside_a_chunk_runs_inline)
{
    kn_set_threads(2);
    static struct count c[4];
    memset(c, 0, sizeof c);
    kn_parallel_chunks(4, nested, c);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 10; i++) cr_assert_eq(c[k].hits[i], 1);
}

static void *caller(void *p)
{
    struct count *c = p;
    for (int r = 0; r < 200; r++) kn_parallel_chunks(50, count_chunk, c);
    return NULL;
}

Test(kernels, two_callers_at_once_both_complete)
{
    kn_set_threads(2);
    static struct count c[2];
    memset(c, 0, sizeof c);
    pthread_t a, b;
    pthread_create(&a, NULL, caller, &c[0]);
    pthread_create(&b, NULL, caller, &c[1]);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 50; i++) cr_assert_eq(c[k].hits[i], 200);
}

/* One job of the stress below: each chunk counts itself, and checks that its job is still the
 * caller's (a chunk that runs after its caller returned reads a job that has moved on). */
struct relay {
    _Atomic int hits[8];
    _Atomic long id; /* the job's number while its caller is in kn_parallel_chunks, -1 after */
};
static _Atomic long relay_stale;

static void relay_chunk(void *p, int64_t c)
{
    struct relay *r = p;
    long id = atomic_load(&r->id);
    for (volatile int k = 0; k < 20; k++) continue; /* long enough to overlap a late claim */
    atomic_fetch_add(&r->hits[c], 1);
    if (id < 0 || atomic_load(&r->id) != id) atomic_fetch_add(&relay_stale, 1);
}

/* Jobs of 2 chunks and of 8 in turn (a GEMM's two blocks, then an LSTM cell's eight chunks), with
 * the caller pausing between a job's count and its open ticket: a worker still in the last job's
 * claim loop then sees the new, larger count beside the spent ticket. Before kn_pool.c closed the
 * ticket first, that worker claimed a chunk past the old job's end and ran the new job's chunk
 * under it — twice with the real claim, and counted done, so the caller returned while a chunk
 * still ran (thousands of such jobs in 20,000 on two threads; ASan's view of it on a Zen 3 was a
 * worker reading the LSTM cell's arguments from a stack frame its caller had left). */
Test(kernels, a_late_worker_never_claims_a_chunk_of_the_next_job)
{
    kn_set_threads(2);
    kn_pool_set_publish_delay(200);
    static struct relay jobs[2];
    long twice = 0, missed = 0;
    atomic_store(&relay_stale, 0);
    for (long i = 0; i < 20000; i++) {
        struct relay *r = &jobs[i & 1];
        int n = i & 1 ? 8 : 2;
        for (int c = 0; c < 8; c++) atomic_store(&r->hits[c], 0);
        atomic_store(&r->id, i);
        kn_parallel_chunks(n, relay_chunk, r);
        atomic_store(&r->id, -1);
        for (int c = 0; c < n; c++) {
            int h = atomic_load(&r->hits[c]);
            twice += h > 1, missed += h == 0;
        }
    }
    kn_pool_set_publish_delay(0);
    cr_assert_eq(twice, 0, "%ld chunks ran twice", twice);
    cr_assert_eq(missed, 0, "%ld chunks had not run when their caller returned", missed);
    cr_assert_eq(atomic_load(&relay_stale), 0, "%ld chunks ran after their caller returned",
                 atomic_load(&relay_stale));
}

Test(kernels, parallel_for_covers_the_range_once)
{
    kn_set_threads(3);
    struct cover c = {trk_calloc(T, 100000 * sizeof(_Atomic int), "test/hits"), 0};
    kn_parallel_for(100000, 1024, cover_part, &c);
    for (int i = 0; i < 100000; i++)
        cr_assert_eq(c.hits[i], 1, "item %d covered %d times", i, c.hits[i]);
    cr_assert_gt(c.chunks, 1, "one chunk: nothing was split");
    trk_free(T, (void *)c.hits);
}

/* ---- kernels on 1 thread and on more -------------------------------------------------------- */

/* Runs `body` (which writes `out` of n floats from fresh copies of its inputs) on one thread and
 * on `threads`, and compares. */
#define ON_BOTH(threads, out, n, exact, what, body)                                                \
    do {                                                                                           \
        kn_set_threads(1);                                                                         \
        body;                                                                                      \
        float *one_ = copy_buf(out, n);                                                            \
        kn_set_threads(threads);                                                                   \
        body;                                                                                      \
        if (exact)                                                                                 \
            assert_same(one_, out, n, what);                                                       \
        else                                                                                       \
            assert_close(one_, out, n, 1e-5, what);                                                \
        trk_free(T, one_);                                                                         \
    } while (0)

Test(kernels, elementwise_and_row_kernels_give_the_same_bits_on_more_threads)
{
    tn_rng_seed(&rng, 1);
    const struct kn_backend *kb = &kn_cpu;
    int64_t rows = 3000, d = 96, n = rows * d;
    float *x = rnd_buf(n), *x2 = rnd_buf(2 * n), *y = rnd_buf(n), *dy = rnd_buf(n);
    float *w = rnd_buf(d), *b = rnd_buf(d), *out = rnd_buf(2 * n), *st = rnd_buf(2 * rows);
    float *s = rnd_buf(n), *dw = rnd_buf(d), *db = rnd_buf(d);
    int8_t *mask = trk_alloc(T, (size_t)n, "test/mask");
    for (int t = 2; t <= 3; t++) {
        ON_BOTH(t, out, n, true, "sigmoid", kb->sigmoid(out, x, n));
        ON_BOTH(t, out, n, true, "tanh", kb->tanh(out, x, n));
        ON_BOTH(t, out, n, true, "elu", kb->elu(out, x, n));
        ON_BOTH(t, out, n, true, "dsigmoid", (memset(out, 0, n * 4), kb->dsigmoid(out, y, dy, n)));
        ON_BOTH(t, out, n, true, "dropout", kb->dropout(out, mask, x, 0.2f, 1.25f, 77, n));
        ON_BOTH(t, out, n, true, "scale", kb->scale(out, x, 0.3f, n));
        ON_BOTH(t, out, n, true, "axpy", (memcpy(out, y, n * 4), kb->axpy(out, x, 0.5f, n)));
        ON_BOTH(t, out, n, true, "softmax", kb->softmax(out, x, rows, d));
        ON_BOTH(t, out, n, true, "layernorm",
                kb->layernorm(out, st, st + rows, x, w, b, rows, d, 1e-3f));
        ON_BOTH(t, out, n, true, "dlayernorm dx",
                (memset(out, 0, n * 4),
                 kb->dlayernorm(out, NULL, NULL, dy, x, st, st + rows, w, rows, d)));
        ON_BOTH(t, dw, d, true, "dlayernorm dw",
                (memset(dw, 0, d * 4),
                 kb->dlayernorm(NULL, dw, NULL, dy, x, st, st + rows, w, rows, d)));
        ON_BOTH(t, db, d, true, "dbias", (memset(db, 0, d * 4), kb->dbias(db, dy, rows, d)));
        ON_BOTH(t, out, n, true, "gate_add_norm",
                kb->gate_add_norm(out, s, st, st + rows, x2, y, w, b, rows, d, 1e-3f));
        ON_BOTH(
            t, out, 2 * n, true, "dgate_add_norm dz",
            kb->dgate_add_norm(out, NULL, NULL, NULL, dy, x2, s, st, st + rows, w, rows, d, false));
        ON_BOTH(t, out, n, true, "weighted_add",
                (kb->weighted_add(out, x, x2, 0, 3, rows, d, false),
                 kb->weighted_add(out, y, x2, 1, 3, rows, d, true)));
        struct kn_geom g = {
            {1, rows, 1, d}, {0, d, 0, 1}, {0, 1, 0, 0}}; /* a [rows, d] * b [rows, 1] */
        ON_BOTH(t, out, n, true, "binary", kb->binary(out, x, x2, KN_MUL, &g));
        ON_BOTH(
            t, out, rows, true, "dmul into the broadcast operand",
            (memset(out, 0, rows * 4),
             kb->dmul(out, dy, x, &(struct kn_geom){{1, rows, 1, d}, {0, 1, 0, 0}, {0, d, 0, 1}})));
        ON_BOTH(
            t, out, d, true, "dgather summing over rows",
            (memset(out, 0, d * 4),
             kb->dgather(out, dy, 1.0f, &(struct kn_geom){{1, rows, 1, d}, {0, 0, 0, 1}, {0}})));
        ON_BOTH(t, out, n, true, "lstm_cell",
                (memcpy(out, x2, 4 * 4 * rows * 24),
                 kb->lstm_cell(out, s, y, x, rows, 24, 96, 24, 24, 24)));
    }
    trk_free(T, mask);
    float *all[] = {x, x2, y, dy, w, b, out, st, s, dw, db};
    for (size_t i = 0; i < LG_ARRAY_LEN(all); i++) trk_free(T, all[i]);
}

Test(kernels, split_gemms_match_one_call)
{
    tn_rng_seed(&rng, 2);
    const struct kn_backend *kb = &kn_cpu;
    static const int shapes[][3] = {
        {3000, 160, 160}, {64, 640, 160}, {160, 320, 3000}, {37, 2048, 64}};
    for (size_t k = 0; k < LG_ARRAY_LEN(shapes); k++)
        for (int tr = 0; tr < 4; tr++) {
            int m = shapes[k][0], n = shapes[k][1], kk = shapes[k][2];
            bool ta = tr & 1, tb = tr & 2;
            float *a = rnd_buf((int64_t)m * kk), *b = rnd_buf((int64_t)kk * n),
                  *c = rnd_buf((int64_t)m * n);
            float *c0 = copy_buf(c, (int64_t)m * n);
            ON_BOTH(2, c, (int64_t)m * n, false, "gemm",
                    (memcpy(c, c0, (size_t)m * n * 4),
                     kb->gemm(c, a, b, ta, tb, m, n, kk, 0.7f, ta ? m : kk, tb ? kk : n, 0.5f, n)));
            trk_free(T, a);
            trk_free(T, b);
            trk_free(T, c);
            trk_free(T, c0);
        }
}

/* The AVX-512 GEMM (kernels_cpu_gemm.c) against a double-precision sum, on
 * the shapes it takes — A transposed at any size, plain A of at most 256 rows — with every edge:
 * rows past a 12-row tile (12 + 1, 8 + 2 + 1, 4 + 2 + 1, 4 + 1), columns past a 32-column tile
 * (masks of 17, 8 and 22 columns), K past a 160-long block, the shapes it leaves to OpenBLAS,
 * leading dimensions wider than the matrix, alpha and beta, and beta 0 on a C of NaNs (BLAS: C
 * is not read). Each element within 1e-5 of its Σ|a·b|. */
Test(kernels, own_gemm_matches_a_double_reference_on_every_edge)
{
    if (!kn_cpu_gemm_use_own(true)) { /* a skip, visibly: a warning would fail the binary */
        fprintf(stderr, "SKIP: this CPU has no AVX-512F, so OpenBLAS does every product\n");
        cr_skip_test("SKIP: this CPU has no AVX-512F, so OpenBLAS does every product");
    }
    tn_rng_seed(&rng, 7);
    kn_set_threads(1);
    static const int shapes[][3] = {{4, 32, 16},    {13, 145, 161},  {25, 136, 320}, {64, 160, 640},
                                    {256, 160, 31}, {160, 160, 500}, {7, 64, 20},    {11, 128, 16},
                                    {5, 150, 17},   {5, 48, 20},     {7, 48, 1}};
    for (size_t q = 0; q < LG_ARRAY_LEN(shapes); q++)
        for (int form = 0; form < 4; form++) {
            int m = shapes[q][0], n = shapes[q][1], k = shapes[q][2];
            bool ta = form & 1, beta0 = form & 2;
            int lda = (ta ? m : k) + 3, ldb = n + 5, ldc = n + 2;
            int64_t na = (int64_t)(ta ? k : m) * lda, nb = (int64_t)k * ldb, nc = (int64_t)m * ldc;
            float *a = rnd_buf(na), *b = rnd_buf(nb), *c = rnd_buf(nc), *c0 = copy_buf(c, nc);
            for (int64_t i = 0; i < nc; i++) /* past the matrix's columns: a sentinel */
                if (i % ldc >= n)
                    c[i] = c0[i] = 12345.0f;
                else if (beta0)
                    c[i] = NAN;
            float alpha = 0.7f, beta = beta0 ? 0.0f : 0.5f;
            kn_cpu.gemm(c, a, b, ta, false, m, n, k, alpha, lda, ldb, beta, ldc);
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    double sum = 0, mag = 0;
                    for (int p = 0; p < k; p++) {
                        double x = ta ? a[(int64_t)p * lda + i] : a[(int64_t)i * lda + p];
                        double y = b[(int64_t)p * ldb + j];
                        sum += x * y, mag += fabs(x * y);
                    }
                    double want = alpha * sum + (beta0 ? 0.0 : beta * c0[(int64_t)i * ldc + j]);
                    double got = c[(int64_t)i * ldc + j];
                    cr_assert_leq(fabs(got - want), 1e-5 * (mag + fabs(want)) + 1e-30,
                                  "[%d, %d, %d] %s, beta %g: C[%d, %d] = %.9g, want %.9g", m, n, k,
                                  ta ? "Aᵀ·B" : "A·B", beta, i, j, got, want);
                }
                for (int j = n; j < ldc; j++)
                    cr_assert_eq(c[(int64_t)i * ldc + j], 12345.0f,
                                 "[%d, %d, %d]: C[%d, %d], past n = %d, was written", m, n, k, i, j,
                                 n);
            }
            trk_free(T, a);
            trk_free(T, b);
            trk_free(T, c);
            trk_free(T, c0);
        }
    kn_cpu_gemm_use_own(false); /* the switch is honoured */
    cr_expect(!kn_cpu_gemm_own());
    kn_cpu_gemm_use_own(true);
    cr_expect(kn_cpu_gemm_own());
}

/* The profile counts every call of a shape once, a batched call as its entries, and nothing while
 * it is off; the slowest shape comes first. */
Test(kernels, gemm_profile_counts_each_shape_while_on)
{
    tn_rng_seed(&rng, 3);
    const struct kn_backend *kb = &kn_cpu;
    kn_set_threads(2);
    float *a = rnd_buf(512 * 256), *b = rnd_buf(256 * 384), *c = rnd_buf(4 * 512 * 384);
    kb->gemm(c, a, b, false, false, 8, 8, 8, 1.0f, 8, 8, 0.0f, 8); /* before: not counted */
    kn_cpu_gemm_profile(true);
    for (int i = 0; i < 3; i++)
        kb->gemm(c, a, b, false, false, 512, 384, 256, 1.0f, 256, 384, 0.0f, 384);
    kb->gemm(c, a, b, true, false, 16, 24, 32, 1.0f, 16, 24, 0.0f, 24);
    kb->gemm_batched(c, a, b, false, true, 16, 16, 16, 1.0f, 16, 16, 0.0f, 16, 4, 256, 0, 256);
    kn_cpu_gemm_profile(false);
    kb->gemm(c, a, b, true, false, 16, 24, 32, 1.0f, 16, 24, 0.0f, 24); /* after: not counted */
    struct kn_gemm_shape rows[8];
    int n = kn_cpu_gemm_profile_rows(rows, 8);
    cr_assert_eq(n, 3, "three shapes while the profile was on, got %d", n);
    cr_expect(rows[0].m == 512 && rows[0].n == 384 && rows[0].k == 256 && !rows[0].ta,
              "the large product is the slowest: got [%d, %d, %d]", rows[0].m, rows[0].n,
              rows[0].k);
    cr_expect_eq(rows[0].calls, 3);
    cr_expect_float_eq(rows[0].flops, 3 * 2.0 * 512 * 384 * 256, 1e-9);
    for (int i = 0; i < n; i++) {
        cr_expect(rows[i].seconds > 0, "row %d timed", i);
        if (i) cr_expect(rows[i].seconds <= rows[i - 1].seconds, "sorted by seconds");
        if (rows[i].m == 16 && rows[i].k == 32)
            cr_expect(rows[i].ta && rows[i].calls == 1, "the transposed product once");
        if (rows[i].m == 16 && rows[i].k == 16)
            cr_expect(rows[i].tb && rows[i].calls == 4 && rows[i].flops == 4 * 2.0 * 16 * 16 * 16,
                      "the batched call as its 4 entries");
    }
    cr_expect_eq(kn_cpu_gemm_profile_rows(rows, 1), 1, "max caps the rows copied");
    kn_cpu_gemm_profile(true); /* on again: an empty table */
    kn_cpu_gemm_profile(false);
    cr_expect_eq(kn_cpu_gemm_profile_rows(rows, 8), 0);
    trk_free(T, a);
    trk_free(T, b);
    trk_free(T, c);
}

/* ---- the fused ops against the chains they replace ------------------------------------------ */

static struct tn_tensor *leaf(const char *name, int nd, const int64_t *shape)
{
    return lg_leaf(name, nd, shape, &rng, 1.0f);
}

/* Forward output and every input's gradient of one op against another, on 2 threads and shapes
 * large enough to split; inputs' gradients are cleared between the two. */
typedef struct tn_tensor *(*op_fn)(struct ag_ctx *ctx, struct tn_tensor **in, int n);

static void compare_ops(op_fn fused, op_fn chain, struct tn_tensor **in, int n, double rtol)
{
    cr_assert_leq(n, 12);
    kn_set_threads(2);
    struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){.training = true, .seed = 5});
    struct tn_tensor *grads[2][12] = {{0}}, *outs[2];
    op_fn fns[2] = {fused, chain};
    for (int k = 0; k < 2; k++) {
        struct tn_tensor *y = fns[k](ctx, in, n);
        cr_assert_not_null(y, "%s", ag_errmsg(ctx));
        outs[k] = tn_clone(y, "test/out");
        struct tn_tensor *r = tn_new_f32(T, "test/projection", y->ndim, y->ne);
        struct tn_rng rr;
        tn_rng_seed(&rr, 9);
        tn_fill_normal(r, &rr, 0.0f, 1.0f);
        cr_assert_eq(ag_backward(ctx, ag_sum_all(ctx, ag_mul(ctx, y, r))), LG_OK, "%s",
                     ag_errmsg(ctx));
        tn_release(r);
        ag_ctx_reset(ctx);
        for (int i = 0; i < n; i++) {
            grads[k][i] = in[i]->grad;
            in[i]->grad = NULL;
        }
    }
    assert_close(tn_f32(outs[1]), tn_f32(outs[0]), tn_numel(outs[0]), rtol, "forward");
    for (int i = 0; i < n; i++) {
        cr_assert_not_null(grads[0][i], "input %d got no gradient from the fused op", i + 1);
        assert_close(tn_f32(grads[1][i]), tn_f32(grads[0][i]), tn_numel(in[i]), rtol, in[i]->name);
        tn_release(grads[0][i]);
        tn_release(grads[1][i]);
    }
    tn_release(outs[0]);
    tn_release(outs[1]);
    ag_ctx_free(ctx);
}

static struct tn_tensor *gan_fused(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    return ag_gate_add_norm(ctx, in[0], in[1], in[2], in[3], 1e-3f);
}

static struct tn_tensor *gan_chain(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    struct tn_tensor *half[2];
    cr_assert_eq(ag_split(ctx, in[0], -1, 2, half), LG_OK);
    struct tn_tensor *s = ag_add(ctx, in[1], ag_mul(ctx, half[0], ag_sigmoid(ctx, half[1])));
    return ag_layernorm(ctx, s, in[2], in[3], 1e-3f);
}

Test(kernels, gate_add_norm_is_split_sigmoid_mul_add_layernorm)
{
    tn_rng_seed(&rng, 3);
    int64_t d = 160;
    struct tn_tensor *in[4] = {leaf("z", 3, (int64_t[]){16, 40, 2 * d}),
                               leaf("skip", 3, (int64_t[]){16, 40, d}),
                               leaf("w", 1, (int64_t[]){d}), leaf("b", 1, (int64_t[]){d})};
    compare_ops(gan_fused, gan_chain, in, 4, 1e-5);
    for (int i = 0; i < 4; i++) tn_release(in[i]);
}

static struct tn_tensor *wsum_fused(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    return ag_weighted_sum(ctx, in, n - 1, in[n - 1]);
}

static struct tn_tensor *wsum_chain(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    struct tn_tensor *v = in[n - 1];
    struct tn_tensor *st = ag_stack(ctx, in, n - 1, 2); /* [B, T, n, H] */
    struct tn_tensor *v1 = ag_reshape(ctx, v, 4, (int64_t[]){v->ne[0], v->ne[1], v->ne[2], 1});
    return ag_sum(ctx, ag_mul(ctx, st, v1), 2, false);
}

Test(kernels, weighted_sum_is_stack_mul_sum)
{
    tn_rng_seed(&rng, 4);
    struct tn_tensor *in[5];
    for (int j = 0; j < 4; j++) in[j] = leaf("x", 3, (int64_t[]){16, 40, 160});
    in[4] = leaf("v", 3, (int64_t[]){16, 40, 4});
    compare_ops(wsum_fused, wsum_chain, in, 5, 1e-6);
    for (int i = 0; i < 5; i++) tn_release(in[i]);
}

/* in: W [out, 4H], bias, x0 [B, T, H], x1 [B, T, 1] with w1 [H, 1] and b1 [H], x2 [B, T, H],
 * x3 [B, T, 1] with w3, b3: plain and factored terms interleaved */
static struct tn_tensor *lcat_with(struct ag_ctx *ctx, struct tn_tensor **in, enum ag_epilogue epi,
                                   float p)
{
    struct ag_term t[4] = {
        {in[2], NULL, NULL}, {in[3], in[4], in[5]}, {in[6], NULL, NULL}, {in[7], in[8], in[9]}};
    return ag_linear_concat(ctx, t, 4, in[0], in[1], epi, p);
}

static struct tn_tensor *lcat_fused(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    return lcat_with(ctx, in, AG_EPI_NONE, 0.0f);
}

/* The chain it replaced in the TFT's variable selection: each block of W sliced out, a linear
 * per plain input, the factors' products W_j·w_j and W_j·b_j, and X·U. */
static struct tn_tensor *lcat_chain(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    struct tn_tensor *W = in[0], *acc = NULL, *xf[2], *uf[2];
    int64_t H = W->ne[1] / 4;
    struct tn_tensor *cst = ag_reshape(ctx, in[1], 2, (int64_t[]){1, W->ne[0]});
    int nf = 0;
    for (int j = 0, k = 2; j < 4; j++) {
        struct tn_tensor *wj = ag_slice(ctx, W, 1, j * H, H);
        if (j % 2) {
            xf[nf] = in[k];
            uf[nf++] = ag_linear(ctx, ag_reshape(ctx, in[k + 1], 2, (int64_t[]){1, H}), wj, NULL);
            cst =
                ag_add(ctx, cst,
                       ag_linear(ctx, ag_reshape(ctx, in[k + 2], 2, (int64_t[]){1, H}), wj, NULL));
            k += 3;
        } else {
            struct tn_tensor *term = ag_linear(ctx, in[k++], wj, NULL);
            acc = acc ? ag_add(ctx, acc, term) : term;
        }
    }
    struct tn_tensor *X = ag_concat(ctx, xf, 2, -1), *U = ag_concat(ctx, uf, 2, 0);
    return ag_add(ctx, ag_add(ctx, acc, ag_matmul(ctx, X, U, false, false)), cst);
}

static struct tn_tensor *lcat_bad(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    struct ag_term t[3] = {{in[1], NULL, NULL}, {in[2], in[3], NULL}, {in[1], NULL, NULL}};
    return ag_linear_concat(ctx, t, n, in[0], NULL, AG_EPI_NONE, 0.0f);
}

Test(kernels, linear_concat_names_the_term_that_does_not_fit)
{
    tn_rng_seed(&rng, 6);
    struct tn_tensor *in[4] = {leaf("w", 2, (int64_t[]){3, 8}), leaf("x0", 2, (int64_t[]){5, 4}),
                               leaf("x1", 2, (int64_t[]){5, 2}), leaf("w1", 2, (int64_t[]){4, 1})};
    struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){.training = true});
    cr_assert_null(lcat_bad(ctx, in, 2), "a factored x [5, 2] is not [..., 1]");
    cr_assert_eq(ag_error(ctx), LG_EINVAL);
    cr_assert(strstr(ag_errmsg(ctx), "term 2") && strstr(ag_errmsg(ctx), "[5, 2]"), "%s",
              ag_errmsg(ctx));
    ag_ctx_reset(ctx);
    cr_assert_null(lcat_bad(ctx, in, 3), "3 terms of a weight [3, 8]");
    cr_assert(strstr(ag_errmsg(ctx), "[out, 3·H]"), "%s", ag_errmsg(ctx));
    ag_ctx_free(ctx);
    for (int i = 0; i < 4; i++) tn_release(in[i]);
}

/* in: x, w, b; each side reseeds, so both draw the same dropout */
static struct tn_tensor *elu_fused(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    return ag_linear_ex(ctx, in[0], in[1], in[2], AG_EPI_ELU, 0.0f);
}

static struct tn_tensor *elu_chain(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    return ag_elu(ctx, ag_linear(ctx, in[0], in[1], in[2]));
}

static struct tn_tensor *dropout_fused(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    ag_reseed(ctx, 7);
    return ag_linear_ex(ctx, in[0], in[1], in[2], AG_EPI_DROPOUT, 0.25f);
}

static struct tn_tensor *dropout_chain(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    ag_reseed(ctx, 7);
    return ag_dropout(ctx, ag_linear(ctx, in[0], in[1], in[2]), 0.25f);
}

Test(kernels, linear_epilogues_are_linear_then_elu_or_dropout)
{
    tn_rng_seed(&rng, 7);
    int64_t B = 16, Tn = 40, in = 96, out = 160;
    struct tn_tensor *x[3] = {leaf("x", 3, (int64_t[]){B, Tn, in}),
                              leaf("w", 2, (int64_t[]){out, in}), leaf("b", 1, (int64_t[]){out})};
    compare_ops(elu_fused, elu_chain, x, 3, 1e-6);
    compare_ops(dropout_fused, dropout_chain, x, 3, 1e-6);
    for (int i = 0; i < 3; i++) tn_release(x[i]);
}

Test(kernels, a_linear_epilogue_makes_one_output_and_one_gradient)
{
    tn_rng_seed(&rng, 8);
    struct tn_tensor *x = leaf("x", 2, (int64_t[]){4, 3}), *w = leaf("w", 2, (int64_t[]){5, 3});
    struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){.training = true, .seed = 1});
    int64_t before = 0, after = 0;
    lg_live_bytes_with_prefix("act", &before);
    struct tn_tensor *y = ag_linear_ex(ctx, x, w, NULL, AG_EPI_DROPOUT, 0.5f);
    cr_assert_not_null(y, "%s", ag_errmsg(ctx));
    cr_assert_str_eq(y->name, "act/linear.dropout");
    cr_assert_eq(ag_backward(ctx, ag_sum_all(ctx, y)), LG_OK, "%s", ag_errmsg(ctx));
    lg_live_bytes_with_prefix("act", &after);
    /* y, its gradient, the sum and its gradient: no mask, no pre-dropout tensor */
    cr_assert_eq(after - before, 4, "%lld tensors", (long long)(after - before));
    cr_assert_null(ag_linear_ex(ctx, x, w, NULL, AG_EPI_DROPOUT, 1.0f));
    cr_assert(strstr(ag_errmsg(ctx), "probability 1"), "%s", ag_errmsg(ctx));
    ag_ctx_free(ctx);
    tn_release(x);
    tn_release(w);
}

/* ag_linear_concat with an ELU or dropout epilogue against the op without one and the
 * standalone op (in: as lcat_fused's) */
static struct tn_tensor *lcat_elu_fused(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    return lcat_with(ctx, in, AG_EPI_ELU, 0.0f);
}

static struct tn_tensor *lcat_elu_chain(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    return ag_elu(ctx, lcat_fused(ctx, in, n));
}

static struct tn_tensor *lcat_dropout_fused(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    (void)n;
    ag_reseed(ctx, 11);
    return lcat_with(ctx, in, AG_EPI_DROPOUT, 0.4f);
}

static struct tn_tensor *lcat_dropout_chain(struct ag_ctx *ctx, struct tn_tensor **in, int n)
{
    ag_reseed(ctx, 11);
    return ag_dropout(ctx, lcat_fused(ctx, in, n), 0.4f);
}

/* The op against the chain it replaced, then each epilogue against the op and the standalone op. */
Test(kernels, linear_concat_is_slice_linear_add_concat_matmul_and_its_epilogues)
{
    tn_rng_seed(&rng, 5);
    int64_t B = 16, Tn = 40, H = 32, out = 48;
    struct tn_tensor *in[10] = {
        leaf("w", 2, (int64_t[]){out, 4 * H}), leaf("bias", 1, (int64_t[]){out}),
        leaf("x0", 3, (int64_t[]){B, Tn, H}),  leaf("x1", 3, (int64_t[]){B, Tn, 1}),
        leaf("w1", 2, (int64_t[]){H, 1}),      leaf("b1", 1, (int64_t[]){H}),
        leaf("x2", 3, (int64_t[]){B, Tn, H}),  leaf("x3", 3, (int64_t[]){B, Tn, 1}),
        leaf("w3", 2, (int64_t[]){H, 1}),      leaf("b3", 1, (int64_t[]){H})};
    compare_ops(lcat_fused, lcat_chain, in, 10, 1e-5);
    compare_ops(lcat_elu_fused, lcat_elu_chain, in, 10, 1e-6);
    compare_ops(lcat_dropout_fused, lcat_dropout_chain, in, 10, 1e-6);
    for (int i = 0; i < 10; i++) tn_release(in[i]);
}
