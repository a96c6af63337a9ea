/* test_gpu_ops.c — the autograd on the device against the same graph on the CPU: the fused
 * LSTM sequence op forward and back (with and without an initial state), batched matmuls in
 * every layout, and a small network that runs every other op (embedding, layer norm, linear,
 * split, GLU, ELU, tanh, dropout, permute, masked softmax, mean, concat, slice, stack, sum,
 * expand, broadcast add/sub/mul, fake quantisation, sum_all, the pinball loss). Each leaf is
 * made once on the host and copied to the device; outputs must agree to 1e-5 and every
 * gradient to 1e-4 (normwise relative error), FP32 without TF32. */
#include <math.h>
#include <string.h>

#include "autograd.h"
#include "gpu_test.h"

TestSuite(gpu_ops, .init = lg_test_setup, .fini = lg_gpu_teardown, .timeout = 120);

#define OUT_TOL  1e-5
#define GRAD_TOL 1e-4

/* One leaf on both devices with the same values. */
struct twin {
    struct tn_tensor *c, *g;
};

static struct twin twin_new(const char *name, int ndim, const int64_t *shape, uint64_t seed,
                            float lo, float hi, bool grad)
{
    struct twin t;
    t.c = tn_new_f32(T, name, ndim, shape);
    cr_assert_not_null(t.c);
    lg_gpu_fill(tn_f32(t.c), tn_numel(t.c), seed, lo, hi);
    t.g = tn_to_device(t.c, TN_CUDA);
    cr_assert_not_null(t.g, "%s", lg_errmsg());
    t.c->requires_grad = t.g->requires_grad = grad;
    return t;
}

static void twin_free(struct twin *t)
{
    tn_release(t->c);
    tn_release(t->g);
}

/* Asserts a device tensor matches its host twin (downloads it). */
static void expect_match(const struct tn_tensor *gpu, const struct tn_tensor *cpu, double tol,
                         const char *what)
{
    cr_assert_not_null(gpu, "%s: no device tensor", what);
    cr_assert_not_null(cpu, "%s: no host tensor", what);
    cr_assert_eq(tn_numel(gpu), tn_numel(cpu), "%s: sizes differ", what);
    cr_assert_eq(gpu->device, TN_CUDA, "%s ran on the device", what);
    float *h = trk_alloc(T, tn_nbytes(cpu) + 4, "data/fetch");
    lg_gpu_download(h, tn_f32(gpu), tn_nbytes(gpu));
    lg_gpu_expect_close(h, tn_f32(cpu), tn_numel(cpu), tol, what);
    trk_free(T, h);
}

static void expect_grad(const struct twin *t, const char *what)
{
    cr_assert_not_null(t->c->grad, "%s: no host gradient", what);
    cr_assert_not_null(t->g->grad, "%s: no device gradient", what);
    expect_match(t->g->grad, t->c->grad, GRAD_TOL, what);
}

static struct ag_ctx *ctx_on(enum tn_device dev, bool training)
{
    struct ag_ctx *ctx =
        ag_ctx_new(T, &(struct ag_options){.training = training, .seed = 7, .device = dev});
    cr_assert_not_null(ctx);
    return ctx;
}

/* Σ y ⊙ w: a scalar that weighs every output element differently. */
static struct tn_tensor *weighted(struct ag_ctx *ctx, struct tn_tensor *y, struct tn_tensor *w)
{
    return ag_sum_all(ctx, ag_mul(ctx, y, w));
}

/* ---- the LSTM sequence op ------------------------------------------------------------------- */

static void lstm_case(bool with_state)
{
    int64_t B = 8, Tn = 12, In = 16, H = 24, G = 4 * H;
    float bound = 1.0f / sqrtf((float)H);
    struct twin x = twin_new("act/x", 3, (int64_t[]){B, Tn, In}, 1, -1, 1, true);
    struct twin h0 = twin_new("act/h0", 2, (int64_t[]){B, H}, 2, -1, 1, true);
    struct twin c0 = twin_new("act/c0", 2, (int64_t[]){B, H}, 3, -1, 1, true);
    struct twin wih = twin_new("varmap/w_ih", 2, (int64_t[]){G, In}, 4, -bound, bound, true);
    struct twin whh = twin_new("varmap/w_hh", 2, (int64_t[]){G, H}, 5, -bound, bound, true);
    struct twin bih = twin_new("varmap/b_ih", 1, (int64_t[]){G}, 6, -0.1f, 0.1f, true);
    struct twin bhh = twin_new("varmap/b_hh", 1, (int64_t[]){G}, 7, -0.1f, 0.1f, true);
    struct twin w1 = twin_new("data/w1", 3, (int64_t[]){B, Tn, H}, 8, -1, 1, false);
    struct twin w2 = twin_new("data/w2", 2, (int64_t[]){B, H}, 9, -1, 1, false);
    struct tn_tensor *out[2], *clast[2], *loss[2];
    for (int d = 0; d < 2; d++) {
        struct ag_ctx *ctx = ctx_on(d ? TN_CUDA : TN_CPU, true);
#define SIDE(tw) (d ? (tw).g : (tw).c)
        struct ag_lstm_out o =
            ag_lstm(ctx, SIDE(x), with_state ? SIDE(h0) : NULL, with_state ? SIDE(c0) : NULL,
                    SIDE(wih), SIDE(whh), SIDE(bih), SIDE(bhh));
        loss[d] = ag_add(ctx, weighted(ctx, o.out, SIDE(w1)), weighted(ctx, o.c_last, SIDE(w2)));
#undef SIDE
        cr_assert_not_null(loss[d], "%s", ag_errmsg(ctx));
        cr_assert_eq(ag_backward(ctx, loss[d]), LG_OK, "%s", ag_errmsg(ctx));
        out[d] = tn_retain(o.out);
        clast[d] = tn_retain(o.c_last);
        loss[d] = tn_retain(loss[d]);
        ag_ctx_free(ctx);
    }
    expect_match(out[1], out[0], OUT_TOL, "lstm out");
    expect_match(clast[1], clast[0], OUT_TOL, "lstm c_last");
    expect_match(loss[1], loss[0], OUT_TOL, "lstm loss");
    expect_grad(&x, "dx");
    expect_grad(&wih, "dw_ih");
    expect_grad(&whh, "dw_hh");
    expect_grad(&bih, "db_ih");
    expect_grad(&bhh, "db_hh");
    if (with_state) {
        expect_grad(&h0, "dh0");
        expect_grad(&c0, "dc0");
    }
    for (int d = 0; d < 2; d++) {
        tn_release(out[d]);
        tn_release(clast[d]);
        tn_release(loss[d]);
    }
    struct twin *all[] = {&x, &h0, &c0, &wih, &whh, &bih, &bhh, &w1, &w2};
    for (size_t i = 0; i < LG_ARRAY_LEN(all); i++) twin_free(all[i]);
}

Test(gpu_ops, lstm_sequence_with_initial_state)
{
    lg_gpu_begin();
    lstm_case(true);
}

Test(gpu_ops, lstm_sequence_from_zeros)
{
    lg_gpu_begin();
    lstm_case(false);
}

/* ---- matmul ---------------------------------------------------------------------------------- */

Test(gpu_ops, matmul_every_layout_batched_and_shared)
{
    lg_gpu_begin();
    int64_t Bt = 3, M = 5, K = 7, N = 6;
    for (int t = 0; t < 8; t++) {
        bool ta = t & 1, tb = t & 2, shared = t & 4;
        int64_t ashape[3] = {Bt, ta ? K : M, ta ? M : K};
        int64_t bshape[3] = {Bt, tb ? N : K, tb ? K : N};
        struct twin a = twin_new("act/a", 3, ashape, 10 + t, -1, 1, true);
        struct twin b = shared ? twin_new("varmap/b", 2, bshape + 1, 20 + t, -1, 1, true)
                               : twin_new("act/b", 3, bshape, 20 + t, -1, 1, true);
        struct twin w = twin_new("data/w", 3, (int64_t[]){Bt, M, N}, 30 + t, -1, 1, false);
        struct tn_tensor *y[2];
        for (int d = 0; d < 2; d++) {
            struct ag_ctx *ctx = ctx_on(d ? TN_CUDA : TN_CPU, false);
            struct tn_tensor *p = ag_matmul(ctx, d ? a.g : a.c, d ? b.g : b.c, ta, tb);
            struct tn_tensor *l = weighted(ctx, p, d ? w.g : w.c);
            cr_assert_not_null(l, "%s", ag_errmsg(ctx));
            cr_assert_eq(ag_backward(ctx, l), LG_OK, "%s", ag_errmsg(ctx));
            y[d] = tn_retain(p);
            ag_ctx_free(ctx);
        }
        char what[64];
        snprintf(what, sizeof what, "matmul ta %d tb %d shared %d", ta, tb, shared);
        expect_match(y[1], y[0], OUT_TOL, what);
        expect_grad(&a, "da");
        expect_grad(&b, "db");
        tn_release(y[0]);
        tn_release(y[1]);
        twin_free(&a);
        twin_free(&b);
        twin_free(&w);
    }
}

/* ---- every other op in one network ----------------------------------------------------------- */

struct net_io {
    struct twin emb, x, lnw, lnb, w1, b1, bias3, bc, wq, bq;
    struct tn_tensor *idx[2], *mask[2], *y[2];
};

/* The network on one side (d: 0 host, 1 device); returns the loss, context-owned. */
static struct tn_tensor *net(struct ag_ctx *ctx, struct net_io *io, int d, struct tn_tensor **v_out)
{
#define S(tw) (d ? io->tw.g : io->tw.c)
    int64_t B = 4, Tn = 6, H = 8;
    static const float q[3] = {0.1f, 0.5f, 0.9f};
    struct tn_tensor *h = ag_add(ctx, S(x), ag_embedding(ctx, S(emb), io->idx[d]));
    h = ag_layernorm(ctx, h, S(lnw), S(lnb), 1e-3f);
    struct tn_tensor *z = ag_linear(ctx, h, S(w1), S(b1)), *half[2] = {NULL, NULL};
    if (z) cr_assert_eq(ag_split(ctx, z, -1, 2, half), LG_OK, "%s", ag_errmsg(ctx));
    struct tn_tensor *glu = ag_mul(ctx, half[0], ag_sigmoid(ctx, half[1]));
    struct tn_tensor *dr = ag_dropout(ctx, ag_tanh(ctx, ag_elu(ctx, glu)), 0.25f); /* [B, T, H] */
    struct tn_tensor *qk = ag_permute(ctx, ag_reshape(ctx, dr, 4, (int64_t[]){B, Tn, 2, H / 2}),
                                      (int[]){0, 2, 1, 3}); /* [B, 2, T, H/2] */
    struct tn_tensor *s =
        ag_add_mask(ctx, ag_scale(ctx, ag_matmul(ctx, qk, qk, false, true), 0.5f), io->mask[d]);
    struct tn_tensor *am = ag_mean(ctx, ag_softmax(ctx, s), 1, false); /* [B, T, T] */
    struct tn_tensor *v = ag_matmul(ctx, am, dr, false, false);        /* [B, T, H] */
    struct tn_tensor *c = ag_concat(ctx, (struct tn_tensor *[]){v, S(x)}, 2, -1);
    struct tn_tensor *sl = ag_slice(ctx, c, 1, 2, 3); /* [B, 3, 2H] */
    struct tn_tensor *su =
        ag_sum(ctx, ag_stack(ctx, (struct tn_tensor *[]){sl, sl}, 2, 0), 0, false);
    struct tn_tensor *o = ag_add(ctx, su, ag_expand(ctx, S(bias3), 3, (int64_t[]){B, 3, 2 * H}));
    o = ag_sub(ctx, o, ag_mul(ctx, o, S(bc)));
    struct tn_tensor *yhat = ag_linear(ctx, o, ag_fake_quant(ctx, S(wq), true), S(bq));
    struct tn_tensor *loss = ag_pinball_loss(ctx, yhat, io->y[d], q, 3);
    loss = ag_add(ctx, loss, ag_scale(ctx, ag_sum_all(ctx, ag_mul(ctx, v, v)), 1e-3f));
    *v_out = v;
    return loss;
#undef S
}

Test(gpu_ops, a_network_of_every_other_op)
{
    lg_gpu_begin();
    int64_t B = 4, Tn = 6, H = 8;
    struct net_io io;
    io.emb = twin_new("varmap/emb", 2, (int64_t[]){10, H}, 40, -1, 1, true);
    io.x = twin_new("act/x", 3, (int64_t[]){B, Tn, H}, 41, -1, 1, true);
    io.lnw = twin_new("varmap/ln.w", 1, (int64_t[]){H}, 42, 0.5f, 1.5f, true);
    io.lnb = twin_new("varmap/ln.b", 1, (int64_t[]){H}, 43, -0.5f, 0.5f, true);
    io.w1 = twin_new("varmap/w1", 2, (int64_t[]){2 * H, H}, 44, -0.5f, 0.5f, true);
    io.b1 = twin_new("varmap/b1", 1, (int64_t[]){2 * H}, 45, -0.1f, 0.1f, true);
    io.bias3 = twin_new("varmap/bias3", 3, (int64_t[]){1, 1, 2 * H}, 46, -1, 1, true);
    io.bc = twin_new("varmap/bc", 1, (int64_t[]){2 * H}, 47, -0.5f, 0.5f, true);
    io.wq = twin_new("varmap/wq", 2, (int64_t[]){3, 2 * H}, 48, -0.5f, 0.5f, true);
    io.bq = twin_new("varmap/bq", 1, (int64_t[]){3}, 49, -0.1f, 0.1f, true);
    struct tn_tensor *idx = tn_new(T, TN_I32, TN_CPU, 2, (int64_t[]){B, Tn}, "data/idx");
    struct tn_tensor *mask = tn_new_f32(T, "model/mask", 2, (int64_t[]){Tn, Tn});
    struct tn_tensor *y = tn_new_f32(T, "data/y", 2, (int64_t[]){B, 3});
    cr_assert(idx && mask && y);
    for (int64_t i = 0; i < B * Tn; i++) tn_i32(idx)[i] = (int32_t)((i * 7) % 10);
    for (int64_t i = 0; i < Tn; i++)
        for (int64_t j = 0; j < Tn; j++) tn_f32(mask)[i * Tn + j] = j <= i ? 0.0f : -INFINITY;
    lg_gpu_fill(tn_f32(y), B * 3, 50, -1, 1);
    io.idx[0] = idx, io.mask[0] = mask, io.y[0] = y;
    io.idx[1] = tn_to_device(idx, TN_CUDA);
    io.mask[1] = tn_to_device(mask, TN_CUDA);
    io.y[1] = tn_to_device(y, TN_CUDA);
    cr_assert(io.idx[1] && io.mask[1] && io.y[1], "%s", lg_errmsg());

    struct tn_tensor *loss[2], *v[2];
    for (int d = 0; d < 2; d++) {
        struct ag_ctx *ctx = ctx_on(d ? TN_CUDA : TN_CPU, true); /* dropout on, same seed */
        struct tn_tensor *l = net(ctx, &io, d, &v[d]);
        cr_assert_not_null(l, "side %d: %s", d, ag_errmsg(ctx));
        cr_assert_eq(ag_backward(ctx, l), LG_OK, "%s", ag_errmsg(ctx));
        loss[d] = tn_retain(l);
        v[d] = tn_retain(v[d]);
        ag_ctx_free(ctx);
    }
    expect_match(v[1], v[0], OUT_TOL, "attention output v");
    expect_match(loss[1], loss[0], OUT_TOL, "loss");
    expect_grad(&io.emb, "d emb (scatter-add)");
    expect_grad(&io.x, "d x");
    expect_grad(&io.lnw, "d layernorm w");
    expect_grad(&io.lnb, "d layernorm b");
    expect_grad(&io.w1, "d w1");
    expect_grad(&io.b1, "d b1");
    expect_grad(&io.bias3, "d bias3 (expand)");
    expect_grad(&io.bc, "d bc (broadcast mul)");
    expect_grad(&io.wq, "d wq (fake quant)");
    expect_grad(&io.bq, "d bq");
    for (int d = 0; d < 2; d++) {
        tn_release(loss[d]);
        tn_release(v[d]);
        tn_release(io.idx[d]);
        tn_release(io.mask[d]);
        tn_release(io.y[d]);
    }
    struct twin *all[] = {&io.emb, &io.x,     &io.lnw, &io.lnb, &io.w1,
                          &io.b1,  &io.bias3, &io.bc,  &io.wq,  &io.bq};
    for (size_t i = 0; i < LG_ARRAY_LEN(all); i++) twin_free(all[i]);
}

Test(gpu_ops, mixing_devices_is_an_error)
{
    lg_gpu_begin();
    struct twin a = twin_new("act/a", 1, (int64_t[]){4}, 1, -1, 1, false);
    struct ag_ctx *ctx = ctx_on(TN_CUDA, false);
    cr_expect_null(ag_add(ctx, a.c, a.g));
    cr_expect(strstr(ag_errmsg(ctx), "different devices") != NULL, "%s", ag_errmsg(ctx));
    ag_ctx_free(ctx);
    twin_free(&a);
}
