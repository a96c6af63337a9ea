/* bench_ops — throughput of the CPU ops on the shapes of the TFT `electricity` preset
 * (B 64, T_enc 168, T_dec 24, H 160).
 *
 *   build/tests/bench/bench_ops [--quick]
 *
 * Part 1: GFLOP/s of ag_linear / ag_matmul (forward, gradients off; the kernels' pool splits
 * each product into one-thread OpenBLAS calls) against cblas_sgemm called directly on the same
 * buffers: on one thread, interleaved with the ag op, then with OpenBLAS's own threads (as many
 * as the pool's) in a pass of its own (its threads spin for a while after each call, and would
 * slow the pool's), best of N rounds after one warm-up. The ratio is the ag op against OpenBLAS's
 * own threading (above 1: the pool's split is faster). The kernels OpenBLAS picks matter more
 * than anything here, so the header names them (SkylakeX: the AVX-512 ones; OPENBLAS_CORETYPE
 * overrides).
 * Part 2: forward and forward+backward time of each op, best of N rounds. The loss of the
 * backward is sum_all(y) (one extra pass forward, one backward), the time includes
 * ag_ctx_reset. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "autograd.h"
#include "bench_peak.h"
#include "kernels.h"
#include "kn_pool.h"

static struct trk_tracker *trk;
static struct tn_rng rng;
static int rounds = 5;

static struct tn_tensor *rand_t(const char *name, int nd, const int64_t *shape, bool grad)
{
    struct tn_tensor *t = tn_new_f32(trk, name, nd, shape);
    if (!t) {
        fprintf(stderr, "bench_ops: %s\n", lg_errmsg());
        return NULL;
    }
    tn_fill_uniform(t, &rng, -0.5f, 0.5f);
    t->requires_grad = grad;
    return t;
}

/* ---- part 1: GEMM overhead ------------------------------------------------------------------- */

struct gemm_case {
    const char *what;
    int64_t batch, m, k, n; /* a [batch, m, k]; b [n, k] (linear) or [batch, n, k] (matmul, tb) */
    bool linear;
};

/* The largest error of 512 sampled entries of y = a·bᵀ (each batch entry its own product)
 * against a sum in double precision, relative to sum_k |a_ik·b_jk|, the scale a float product's
 * rounding grows with (~1e-7 for a correct kernel; a wrong one is off by ~1). The figures below
 * are kept only for kernels that compute the product: OpenBLAS's choice of kernels is made per
 * CPU, and some of its releases have had wrong ones for some CPUs. */
static double sampled_err(const struct gemm_case *c, const float *y, const float *a, const float *b)
{
    uint64_t s = 88172645463325252ull; /* xorshift64: the same samples every run */
    double worst = 0;
    for (int t = 0; t < 512; t++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        int64_t e = (int64_t)(s % (uint64_t)(c->batch * c->m * c->n));
        int64_t bi = e / (c->m * c->n), i = e / c->n % c->m, j = e % c->n;
        const float *ar = a + (bi * c->m + i) * c->k;
        const float *br = b + (c->linear ? j : bi * c->n + j) * c->k;
        double sum = 0, mag = 0;
        for (int64_t q = 0; q < c->k; q++) {
            sum += (double)ar[q] * br[q];
            mag += fabs((double)ar[q] * br[q]);
        }
        double err = fabs(y[e] - sum) / (mag > 0 ? mag : 1);
        worst = err > worst ? err : worst;
    }
    return worst;
}

/* Best seconds of the ag op (when ag) and of the direct BLAS call(s), interleaved; *err the
 * largest sampled error of either's last product. */
static void bench_gemm(struct ag_ctx *ctx, const struct gemm_case *c, bool ag, double *t_ag,
                       double *t_blas, double *err)
{
    *err = 0;
    int64_t as[3] = {c->batch, c->m, c->k}, bs[3] = {c->batch, c->n, c->k};
    struct tn_tensor *a = rand_t("bench/a", 3, as, false);
    struct tn_tensor *b = c->linear ? rand_t("bench/w", 2, (int64_t[]){c->n, c->k}, false)
                                    : rand_t("bench/b", 3, bs, false);
    struct tn_tensor *y = tn_new_f32(trk, "bench/y", 3, (int64_t[]){c->batch, c->m, c->n});
    double best_ag = 1e30, best_blas = 1e30;
    for (int r = -1; r < rounds; r++) { /* round -1 warms up (first-touch page faults) */
        double t0 = lg_now(), t1 = t0;
        if (ag) {
            struct tn_tensor *o =
                c->linear ? ag_linear(ctx, a, b, NULL) : ag_matmul(ctx, a, b, false, true);
            t1 = lg_now();
            if (!o) fprintf(stderr, "bench_ops: %s\n", ag_errmsg(ctx));
            if (o && r == rounds - 1) *err = sampled_err(c, tn_f32(o), tn_f32(a), tn_f32(b));
            ag_ctx_reset(ctx);
        }
        double t2 = lg_now();
        if (c->linear)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(c->batch * c->m), (int)c->n,
                        (int)c->k, 1.0f, tn_f32(a), (int)c->k, tn_f32(b), (int)c->k, 0.0f,
                        tn_f32(y), (int)c->n);
        else
            for (int64_t i = 0; i < c->batch; i++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)c->m, (int)c->n,
                            (int)c->k, 1.0f, tn_f32(a) + i * c->m * c->k, (int)c->k,
                            tn_f32(b) + i * c->n * c->k, (int)c->k, 0.0f,
                            tn_f32(y) + i * c->m * c->n, (int)c->n);
        double t3 = lg_now();
        if (r < 0) continue;
        best_ag = t1 - t0 < best_ag ? t1 - t0 : best_ag;
        best_blas = t3 - t2 < best_blas ? t3 - t2 : best_blas;
    }
    double e = sampled_err(c, tn_f32(y), tn_f32(a), tn_f32(b));
    *err = e > *err ? e : *err;
    *t_ag = best_ag;
    *t_blas = best_blas;
    tn_release(a);
    tn_release(b);
    tn_release(y);
}

/* ---- part 1b: the kernels' own GEMM against OpenBLAS ---------------------------------------- */

/* kn_cpu.gemm on the same buffers with the AVX-512 GEMM (kernels_cpu_gemm.c) on and off,
 * interleaved, on `threads` of the pool: the shapes it takes in a training step. Returns the
 * largest difference between the two, relative to the largest |C|. */
struct own_case {
    const char *what;
    int m, n, k;
    bool ta;
};

static double bench_own(const struct own_case *c, int threads, double *t_own, double *t_blas)
{
    int64_t na = (int64_t)c->m * c->k, nb = (int64_t)c->k * c->n, nc = (int64_t)c->m * c->n;
    struct tn_tensor *t = rand_t("bench/own", 1, (int64_t[]){na + nb + 2 * nc}, false);
    if (!t) return INFINITY;
    float *a = tn_f32(t), *b = a + na, *c1 = b + nb, *c2 = c1 + nc;
    int lda = c->ta ? c->m : c->k;
    kn_set_threads(threads);
    double best[2] = {1e30, 1e30};
    for (int r = 0; r <= rounds; r++) /* round 0 warms up */
        for (int own = 1; own >= 0; own--) {
            kn_cpu_gemm_use_own(own);
            double t0 = lg_now();
            kn_cpu.gemm(own ? c1 : c2, a, b, c->ta, false, c->m, c->n, c->k, 1.0f, lda, c->n, 0.0f,
                        c->n);
            double dt = lg_now() - t0;
            if (r && dt < best[own]) best[own] = dt;
        }
    kn_cpu_gemm_use_own(true);
    kn_set_threads(0);
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < nc; i++)
        diff = fmax(diff, fabs(c1[i] - c2[i])), scale = fmax(scale, fabs(c2[i]));
    tn_release(t);
    *t_own = best[1], *t_blas = best[0];
    return diff / (scale + 1e-30);
}

static void bench_own_all(int threads)
{
    static const struct own_case oc[] = {
        {"weight grad [10752,160]ᵀx[10752,160]", 160, 160, 10752, true},
        {"weight grad [10752,320]ᵀx[10752,160] (GLU)", 320, 160, 10752, true},
        {"weight grad [10752,640]ᵀx[10752,160] (LSTM)", 640, 160, 10752, true},
        {"weight grad [12288,160]ᵀx[12288,160]", 160, 160, 12288, true},
        {"LSTM step [64,160]x[160,640] (W_hhᵀ)", 64, 640, 160, false},
        {"LSTM step back [64,640]x[640,160]", 64, 160, 640, false},
    };
    if (!kn_cpu_gemm_use_own(true)) {
        printf("\nthe kernels' own GEMM: SKIP (no AVX-512F on this CPU: OpenBLAS does every "
               "product)\n");
        return;
    }
    printf("\nthe kernels' own AVX-512 GEMM vs OpenBLAS through kn_cpu.gemm, GFLOP/s (best of %d, "
           "interleaved)\n",
           rounds);
    printf("%-44s %9s %9s %7s %9s %9s %7s %9s\n", "shape", "own 1t", "blas 1t", "ratio", "own pool",
           "blas pool", "ratio", "max diff");
    for (size_t i = 0; i < LG_ARRAY_LEN(oc); i++) {
        double f = 2.0 * oc[i].m * oc[i].n * oc[i].k * 1e-9, o1, b1, op, bp;
        double d1 = bench_own(&oc[i], 1, &o1, &b1), dp = bench_own(&oc[i], threads, &op, &bp);
        printf("%-44s %9.1f %9.1f %7.2f %9.1f %9.1f %7.2f %9.1e\n", oc[i].what, f / o1, f / b1,
               b1 / o1, f / op, f / bp, bp / op, fmax(d1, dp));
    }
}

/* ---- part 2: forward and backward per op ----------------------------------------------------- */

enum op {
    OP_LINEAR,
    OP_GLU,
    OP_GAN,
    OP_LAYERNORM,
    OP_ADD,
    OP_MUL_BCAST,
    OP_SIGMOID,
    OP_ELU,
    OP_DROPOUT,
    OP_SOFTMAX,
    OP_ATTN_MATMUL,
    OP_PERMUTE,
    OP_CONCAT,
    OP_EMBEDDING,
    OP_LSTM,
    OP_PINBALL,
    OP_COUNT
};

static const char *const op_name[OP_COUNT] = {
    "linear [10752,160]x[160,160]",
    "GateAddNorm chain (lin→320,split,σ,⊙,+,LN)",
    "GateAddNorm fused (lin→320, one op)",
    "layernorm [10752,160]",
    "add [10752,160]",
    "mul [64,168,4,160]x[64,168,4,1]",
    "sigmoid [10752,320]",
    "elu [10752,160]",
    "dropout 0.1 [10752,160]",
    "softmax [64,4,24,192]",
    "matmul [256,24,40]x[256,192,40]ᵀ",
    "permute [64,192,4,40]→0213",
    "concat 4x[64,192,160] axis -1",
    "embedding card 370 [64,192]→160",
    "lstm B64 T168 In160 H160",
    "pinball [64,24,3]",
};

struct inputs {
    struct tn_tensor *t[8];
};

static struct tn_tensor *forward(struct ag_ctx *ctx, enum op op, struct inputs *in)
{
    struct tn_tensor **t = in->t;
    switch (op) {
    case OP_LINEAR: return ag_linear(ctx, t[0], t[1], t[2]);
    case OP_GLU: { /* what ag_gate_add_norm replaced: z = fc(x); LN(x2 + z[:H] ⊙ σ(z[H:])) */
        struct tn_tensor *half[2];
        if (ag_split(ctx, ag_linear(ctx, t[0], t[3], t[4]), -1, 2, half) != LG_OK) return NULL;
        struct tn_tensor *g = ag_mul(ctx, half[0], ag_sigmoid(ctx, half[1]));
        return ag_layernorm(ctx, ag_add(ctx, t[7], g), t[5], t[6], 1e-3f);
    }
    case OP_GAN:
        return ag_gate_add_norm(ctx, ag_linear(ctx, t[0], t[3], t[4]), t[7], t[5], t[6], 1e-3f);
    case OP_LAYERNORM: return ag_layernorm(ctx, t[0], t[5], t[6], 1e-3f);
    case OP_ADD: return ag_add(ctx, t[0], t[7]);
    case OP_MUL_BCAST: return ag_mul(ctx, t[0], t[1]);
    case OP_SIGMOID:
    case OP_ELU: return op == OP_SIGMOID ? ag_sigmoid(ctx, t[0]) : ag_elu(ctx, t[0]);
    case OP_DROPOUT: return ag_dropout(ctx, t[0], 0.1f);
    case OP_SOFTMAX: return ag_softmax(ctx, t[0]);
    case OP_ATTN_MATMUL: return ag_matmul(ctx, t[0], t[1], false, true);
    case OP_PERMUTE: return ag_permute(ctx, t[0], (int[]){0, 2, 1, 3});
    case OP_CONCAT: return ag_concat(ctx, t, 4, -1);
    case OP_EMBEDDING: return ag_embedding(ctx, t[0], t[1]);
    case OP_LSTM: {
        struct ag_lstm_out o = ag_lstm(ctx, t[0], t[1], t[2], t[3], t[4], t[5], t[6]);
        return o.out ? ag_add(ctx, ag_sum_all(ctx, o.out), ag_sum_all(ctx, o.c_last)) : NULL;
    }
    case OP_PINBALL: return ag_pinball_loss(ctx, t[0], t[1], (const float[]){0.1f, 0.5f, 0.9f}, 3);
    case OP_COUNT: break;
    }
    return NULL;
}

static bool make_inputs(enum op op, struct inputs *in)
{
    memset(in, 0, sizeof *in);
    struct tn_tensor **t = in->t;
    const int64_t R = 64 * 168, H = 160;
    switch (op) {
    case OP_LINEAR:
    case OP_GLU:
    case OP_GAN:
    case OP_LAYERNORM:
    case OP_ADD:
    case OP_ELU:
    case OP_DROPOUT:
        t[0] = rand_t("bench/x", 2, (int64_t[]){R, H}, true);
        t[1] = rand_t("bench/w", 2, (int64_t[]){H, H}, true);
        t[2] = rand_t("bench/b", 1, (int64_t[]){H}, true);
        t[3] = rand_t("bench/w2", 2, (int64_t[]){2 * H, H}, true);
        t[4] = rand_t("bench/b2", 1, (int64_t[]){2 * H}, true);
        t[5] = rand_t("bench/g", 1, (int64_t[]){H}, true);
        t[6] = rand_t("bench/beta", 1, (int64_t[]){H}, true);
        t[7] = rand_t("bench/x2", 2, (int64_t[]){R, H}, true);
        return t[7] != NULL;
    case OP_MUL_BCAST:
        t[0] = rand_t("bench/x", 4, (int64_t[]){64, 168, 4, H}, true);
        t[1] = rand_t("bench/v", 4, (int64_t[]){64, 168, 4, 1}, true);
        return t[1] != NULL;
    case OP_SIGMOID: t[0] = rand_t("bench/x", 2, (int64_t[]){R, 2 * H}, true); return t[0] != NULL;
    case OP_SOFTMAX:
        t[0] = rand_t("bench/x", 4, (int64_t[]){64, 4, 24, 192}, true);
        return t[0] != NULL;
    case OP_ATTN_MATMUL:
        t[0] = rand_t("bench/q", 3, (int64_t[]){256, 24, 40}, true);
        t[1] = rand_t("bench/k", 3, (int64_t[]){256, 192, 40}, true);
        return t[1] != NULL;
    case OP_PERMUTE:
        t[0] = rand_t("bench/x", 4, (int64_t[]){64, 192, 4, 40}, true);
        return t[0] != NULL;
    case OP_CONCAT:
        for (int i = 0; i < 4; i++) t[i] = rand_t("bench/x", 3, (int64_t[]){64, 192, H}, true);
        return t[3] != NULL;
    case OP_EMBEDDING: {
        t[0] = rand_t("bench/emb", 2, (int64_t[]){370, H}, true);
        t[1] = tn_new(trk, TN_I32, TN_CPU, 2, (int64_t[]){64, 192}, "bench/idx");
        if (!t[1]) return false;
        for (int64_t i = 0; i < 64 * 192; i++) tn_i32(t[1])[i] = (int32_t)(tn_rng_next(&rng) % 370);
        return true;
    }
    case OP_LSTM:
        t[0] = rand_t("bench/x", 3, (int64_t[]){64, 168, H}, true);
        t[1] = rand_t("bench/h0", 2, (int64_t[]){64, H}, true);
        t[2] = rand_t("bench/c0", 2, (int64_t[]){64, H}, true);
        t[3] = rand_t("bench/w_ih", 2, (int64_t[]){4 * H, H}, true);
        t[4] = rand_t("bench/w_hh", 2, (int64_t[]){4 * H, H}, true);
        t[5] = rand_t("bench/b_ih", 1, (int64_t[]){4 * H}, true);
        t[6] = rand_t("bench/b_hh", 1, (int64_t[]){4 * H}, true);
        return t[6] != NULL;
    case OP_PINBALL:
        t[0] = rand_t("bench/yhat", 3, (int64_t[]){64, 24, 3}, true);
        t[1] = rand_t("bench/y", 2, (int64_t[]){64, 24}, false);
        return t[1] != NULL;
    case OP_COUNT: break;
    }
    return false;
}

static int bench_op(struct ag_ctx *ctx, enum op op)
{
    struct inputs in;
    if (!make_inputs(op, &in)) return 1;
    double best_f = 1e30, best_fb = 1e30;
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        ag_set_grad_enabled(ctx, false);
        double t0 = lg_now();
        struct tn_tensor *y = forward(ctx, op, &in);
        ag_ctx_reset(ctx);
        double t1 = lg_now();
        ag_set_grad_enabled(ctx, true);
        double t2 = lg_now();
        y = forward(ctx, op, &in);
        struct tn_tensor *loss = tn_numel(y ? y : in.t[0]) == 1 ? y : ag_sum_all(ctx, y);
        int rc = ag_backward(ctx, loss);
        ag_ctx_reset(ctx);
        double t3 = lg_now();
        if (!y || rc != LG_OK) {
            fprintf(stderr, "bench_ops: %s: %s\n", op_name[op], lg_errmsg());
            return 1;
        }
        if (r < 0) continue;
        best_f = t1 - t0 < best_f ? t1 - t0 : best_f;
        best_fb = t3 - t2 < best_fb ? t3 - t2 : best_fb;
    }
    printf("%-44s %10.2f %12.2f\n", op_name[op], best_f * 1e3, best_fb * 1e3);
    for (int i = 0; i < 8; i++) tn_release(in.t[i]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--quick") == 0) rounds = 2;
    if (trk_tracker_new(&trk, &(struct trk_options){0}) != LG_OK) {
        fprintf(stderr, "bench_ops: %s\n", lg_errmsg());
        return 1;
    }
    tn_rng_seed(&rng, 1);
    struct ag_ctx *ctx = ag_ctx_new(trk, &(struct ag_options){.training = true, .seed = 1});
    if (!ctx) return 1;
    int threads = kn_threads();
    printf("OpenBLAS kernels: %s; the kernels' pool: %d thread(s)\n", openblas_get_corename(),
           threads);
    double peak = bench_fma_peak();
    if (peak > 0)
        printf("FMA peak (%s multiply-adds on registers): %.1f GFLOP/s one core (x %d: %.1f)\n",
               bench_fma_width(), peak, threads, peak * threads);
    printf("GEMM: ag op (the pool) vs cblas_sgemm on the same shapes, GFLOP/s (best of %d)\n",
           rounds);
    printf("%-44s %9s %9s %9s %7s %9s\n", "shape", "ag", "blas 1t", "blas own", "ratio", "max err");
    static const struct gemm_case gc[] = {
        {"linear [10752,160]x[160,160]ᵀ", 1, 64 * 168, 160, 160, true},
        {"linear [10752,160]x[320,160]ᵀ (GLU)", 1, 64 * 168, 160, 320, true},
        {"linear [12288,640]x[160,640]ᵀ (flat GRN)", 1, 64 * 192, 640, 160, true},
        {"matmul [256,24,40]x[256,192,40]ᵀ (scores)", 256, 24, 40, 192, false},
        {"matmul [64,24,192]x[64,40,192]ᵀ", 64, 24, 192, 40, false},
    };
    enum { NG = sizeof gc / sizeof gc[0] };
    double t_ag[NG], t_one[NG], t_own[NG], err[NG], err_own[NG], unused;
    for (size_t i = 0; i < NG; i++) bench_gemm(ctx, &gc[i], true, &t_ag[i], &t_one[i], &err[i]);
    openblas_set_num_threads(threads); /* OpenBLAS's own threads, in a pass of their own */
    for (size_t i = 0; i < NG; i++) bench_gemm(ctx, &gc[i], false, &unused, &t_own[i], &err_own[i]);
    openblas_set_num_threads(1);
    int wrong = 0;
    for (size_t i = 0; i < NG; i++) {
        double f = 2.0 * (double)gc[i].batch * gc[i].m * gc[i].n * gc[i].k * 1e-9;
        double e = err[i] > err_own[i] ? err[i] : err_own[i];
        wrong += e > 1e-4;
        printf("%-44s %9.1f %9.1f %9.1f %7.2f %9.1e%s\n", gc[i].what, f / t_ag[i], f / t_one[i],
               f / t_own[i], t_own[i] / t_ag[i], e, e > 1e-4 ? "  WRONG" : "");
    }
    if (wrong) {
        fprintf(stderr,
                "bench_ops: %d product(s) wrong against a double-precision sum: OpenBLAS's "
                "%s kernels compute wrong results on this CPU (OPENBLAS_CORETYPE chooses "
                "others)\n",
                wrong, openblas_get_corename());
        ag_ctx_free(ctx);
        trk_tracker_free(trk);
        return 1;
    }
    bench_own_all(threads);
    printf("\nops: forward and forward+backward, ms (best of %d)\n", rounds);
    printf("%-44s %10s %12s\n", "op", "fwd ms", "fwd+bwd ms");
    int rc = 0;
    for (int op = 0; op < OP_COUNT && rc == 0; op++) rc = bench_op(ctx, (enum op)op);
    ag_ctx_free(ctx);
    size_t left = trk_tracker_free(trk);
    if (left) fprintf(stderr, "bench_ops: %zu allocations left live\n", left);
    return rc || left ? 1 : 0;
}
