/* test_autograd.c — the tape autograd: names and ownership of activations and gradients,
 * the tape's life cycle (nothing of a step outlives ag_ctx_reset), errors that name the op and
 * the shapes, the sticky first error, devices, grad mode, dropout, and the accuracy of the
 * vectorised exp/sigmoid/tanh the kernels use. Gradients themselves are checked against finite
 * differences in tests/reference/test_gradcheck.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "lg_test.h"
#include "lg_test_model.h"
#include "optim.h"

/* out_of_memory_is_an_error_not_a_crash asks for 16 PiB: under AddressSanitizer that must
 * come back as NULL, as it does from jemalloc, rather than abort */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LG_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(LG_TEST_ASAN)
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

/* Each test's context and the tensors it keeps (those param() and input() make): the suite's
 * .fini frees the context, releases the tensors (a leaf takes its gradient with it), then
 * asserts that nothing else is live (lg_test_teardown). */
static struct ag_ctx *ctx;
static struct tn_tensor *owned[8];
static int n_owned;

static void free_owned(void)
{
    ag_ctx_free(ctx);
    ctx = NULL;
    while (n_owned) tn_release(owned[--n_owned]);
    lg_test_teardown();
}

TestSuite(autograd, .init = lg_test_setup, .fini = free_owned);

/* The test's context (freed by the fixture). */
static struct ag_ctx *new_ctx(struct ag_options o)
{
    cr_assert_null(ctx, "one context per test");
    ctx = ag_ctx_new(T, &o);
    cr_assert_not_null(ctx);
    return ctx;
}

/* t, released by the fixture after the context. */
static struct tn_tensor *keep(struct tn_tensor *t)
{
    cr_assert_not_null(t);
    cr_assert_lt(n_owned, (int)LG_ARRAY_LEN(owned), "more tensors than owned[] holds");
    return owned[n_owned++] = t;
}

static struct tn_tensor *param(const char *name, int nd, const int64_t *shape, uint64_t seed)
{
    struct tn_rng r;
    tn_rng_seed(&r, seed);
    return keep(lg_leaf(name, nd, shape, &r, 0.5f));
}

static struct tn_tensor *input(const char *name, int nd, const int64_t *shape, uint64_t seed)
{
    struct tn_tensor *t = param(name, nd, shape, seed);
    t->requires_grad = false;
    return t;
}

static void assert_tag(const struct tn_tensor *t, const char *want)
{
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, t->st->data, tag, sizeof tag), "storage of %s is tracked", t->name);
    cr_assert_str_eq(tag, want);
}

Test(autograd, activations_are_named_by_scope_and_op)
{
    new_ctx((struct ag_options){.training = true, .seed = 1});
    struct tn_tensor *x = input("data/x", 2, (int64_t[]){3, 4}, 1);
    struct tn_tensor *w = param("varmap/enc.fc1.weight", 2, (int64_t[]){5, 4}, 2);
    ag_scope_push(ctx, "enc_vsn");
    ag_scope_pushf(ctx, "var_grn.%s", "dow");
    ag_scope_push(ctx, "fc1");
    struct tn_tensor *y = ag_linear(ctx, x, w, NULL);
    ag_scope_pop(ctx);
    struct tn_tensor *z = ag_tanh(ctx, y);
    ag_scope_pop(ctx);
    ag_scope_pop(ctx);
    struct tn_tensor *s = ag_sum_all(ctx, z);
    cr_assert_not_null(s, "%s", ag_errmsg(ctx));
    cr_assert_str_eq(y->name, "act/enc_vsn.var_grn.dow.fc1.linear");
    assert_tag(y, "act/enc_vsn.var_grn.dow.fc1.linear");
    assert_tag(z, "act/enc_vsn.var_grn.dow.tanh");
    assert_tag(s, "act/sum_all");
    struct tn_tensor *tmp = ag_temp(ctx, TN_F32, 1, (int64_t[]){7}, "scratch");
    cr_assert_not_null(tmp);
    assert_tag(tmp, "act/scratch");
}

Test(autograd, leaf_gradients_are_named_owned_and_accumulate)
{
    new_ctx((struct ag_options){.training = true});
    struct tn_tensor *x = input("data/x", 2, (int64_t[]){3, 4}, 3);
    struct tn_tensor *w = param("varmap/head.weight", 2, (int64_t[]){2, 4}, 4);
    struct tn_tensor *b = param("varmap/head.bias", 1, (int64_t[]){2}, 5);
    float first[2];
    for (int step = 0; step < 2; step++) {
        struct tn_tensor *loss = ag_sum_all(ctx, ag_linear(ctx, x, w, b));
        cr_assert_eq(ag_backward(ctx, loss), LG_OK, "%s", ag_errmsg(ctx));
        cr_assert_null(x->grad, "an input that needs no gradient gets none");
        cr_assert_not_null(w->grad);
        cr_assert_str_eq(w->grad->name, "grad/head.weight");
        assert_tag(w->grad, "grad/head.weight");
        assert_tag(b->grad, "grad/head.bias");
        /* d Σ(xWᵀ + b) / db = number of rows, accumulated over both steps */
        if (step == 0) memcpy(first, tn_f32(b->grad), sizeof first);
        cr_assert_float_eq(tn_f32(b->grad)[0], 3.0f * (float)(step + 1), 1e-6);
        ag_ctx_reset(ctx);
        cr_assert_not_null(w->grad, "a leaf's gradient outlives the reset: the leaf owns it");
    }
    cr_assert_float_eq(tn_f32(b->grad)[1], 2.0f * first[1], 1e-6);
}

Test(autograd, reset_and_backward_release_every_temporary)
{
    new_ctx((struct ag_options){.training = true, .seed = 3});
    struct tn_tensor *x = input("data/x", 3, (int64_t[]){2, 5, 6}, 6);
    struct tn_tensor *w = param("varmap/l.weight", 2, (int64_t[]){6, 6}, 7);
    struct tn_tensor *g = param("varmap/ln.weight", 1, (int64_t[]){6}, 8);
    struct tn_tensor *bb = param("varmap/ln.bias", 1, (int64_t[]){6}, 9);
    ag_scope_push(ctx, "blk");
    struct tn_tensor *h = ag_dropout(ctx, ag_elu(ctx, ag_linear(ctx, x, w, NULL)), 0.2f);
    struct tn_tensor *y = ag_layernorm(ctx, ag_add(ctx, h, x), g, bb, 1e-3f);
    ag_scope_pop(ctx);
    struct tn_tensor *loss = ag_mean(ctx, ag_sum(ctx, ag_softmax(ctx, y), 2, false), 1, false);
    loss = ag_sum_all(ctx, loss);
    cr_assert_not_null(loss, "%s", ag_errmsg(ctx));
    cr_assert_gt(ag_tape_len(ctx), 8);
    cr_assert_gt(lg_live_bytes_with_prefix("act/", NULL), 0);
    cr_assert_eq(ag_backward(ctx, loss), LG_OK, "%s", ag_errmsg(ctx));
    cr_assert_eq(lg_live_bytes_with_prefix("act.grad/", NULL), 0,
                 "intermediate gradients are released as soon as their node has run");
    cr_assert_not_null(w->grad);
    ag_ctx_reset(ctx);
    cr_assert_eq(ag_tape_len(ctx), 0);
    cr_assert_eq(lg_live_bytes_with_prefix("act/", NULL), 0, "no activation outlives the reset");
    cr_assert_eq(lg_live_bytes_with_prefix("act.grad/", NULL), 0);
}

Test(autograd, outputs_kept_past_reset_are_detached)
{
    new_ctx((struct ag_options){0});
    struct tn_tensor *w = param("varmap/w", 2, (int64_t[]){2, 2}, 10);
    struct tn_tensor *y = tn_retain(ag_tanh(ctx, w));
    cr_assert(y->requires_grad);
    cr_assert_not_null(y->node);
    ag_ctx_reset(ctx);
    cr_assert_null(y->node, "the tape node is gone with the reset");
    cr_assert_not(y->requires_grad);
    cr_assert_float_eq(tn_f32(y)[0], tanhf(tn_f32(w)[0]), 1e-6);
    tn_release(y);
}

/* A 2-layer MLP trained for three steps with AdamW: after every reset no activation or
 * intermediate gradient is live; ag_ctx_free and the owners' frees leave nothing (fixture). */
Test(autograd, training_steps_leave_no_tape_memory)
{
    new_ctx((struct ag_options){.training = true, .seed = 11});
    struct tn_tensor *p[4] = {
        param("varmap/mlp.fc1.weight", 2, (int64_t[]){16, 8}, 20),
        param("varmap/mlp.fc1.bias", 1, (int64_t[]){16}, 21),
        param("varmap/mlp.fc2.weight", 2, (int64_t[]){3, 16}, 22),
        param("varmap/mlp.fc2.bias", 1, (int64_t[]){3}, 23),
    };
    struct tn_tensor *x = input("data/x", 3, (int64_t[]){4, 6, 8}, 24);
    struct tn_tensor *y = input("data/y", 2, (int64_t[]){4, 6}, 25);
    struct opt_adamw *opt = NULL;
    cr_assert_eq(opt_adamw_new(&opt, T,
                               &(struct opt_adamw_config){
                                   .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}),
                 LG_OK);
    cr_assert_eq(opt_adamw_add(opt, p, 4), LG_OK, "%s", lg_errmsg());
    const float q[3] = {0.1f, 0.5f, 0.9f};
    float losses[3];
    for (int step = 0; step < 3; step++) {
        ag_scope_push(ctx, "mlp");
        struct tn_tensor *h = ag_dropout(ctx, ag_elu(ctx, ag_linear(ctx, x, p[0], p[1])), 0.1f);
        struct tn_tensor *yhat = ag_linear(ctx, h, p[2], p[3]);
        ag_scope_pop(ctx);
        struct tn_tensor *loss = ag_pinball_loss(ctx, yhat, y, q, 3);
        cr_assert_not_null(loss, "%s", ag_errmsg(ctx));
        losses[step] = tn_f32(loss)[0];
        cr_assert_eq(ag_backward(ctx, loss), LG_OK, "%s", ag_errmsg(ctx));
        double norm = ag_clip_grad_norm(p, 4, 1.0);
        cr_assert(isfinite(norm) && norm > 0);
        cr_assert_eq(opt_adamw_step(opt), LG_OK);
        opt_zero_grad(p, 4);
        ag_ctx_reset(ctx);
        cr_assert_eq(lg_live_bytes_with_prefix("act/", NULL), 0,
                     "step %d: activations live after reset", step);
        cr_assert_eq(lg_live_bytes_with_prefix("act.grad/", NULL), 0);
        cr_assert_gt(lg_live_bytes_with_prefix("grad/", NULL), 0,
                     "parameter gradients stay allocated");
    }
    cr_assert_lt(losses[2], losses[0], "the loss goes down (%g → %g)", losses[0], losses[2]);
    opt_adamw_free(opt);
    opt_free_grads(p, 4);
    cr_assert_eq(lg_live_bytes_with_prefix("grad/", NULL), 0);
}

Test(autograd, shape_errors_name_the_op_and_the_shapes)
{
    new_ctx((struct ag_options){0});
    struct tn_tensor *a = input("data/a", 2, (int64_t[]){4, 3}, 1);
    struct tn_tensor *b = input("data/b", 2, (int64_t[]){5, 2}, 2);
    struct tn_tensor *ids = keep(tn_new(T, TN_I32, TN_CPU, 1, (int64_t[]){3}, "data/ids"));
    tn_i32(ids)[0] = 1, tn_i32(ids)[1] = 9, tn_i32(ids)[2] = 0;
    struct {
        struct tn_tensor *got;
        const char *want;
    } cases[8];
    int n = 0;
#define EXPECT(expr, msg)                                                                          \
    do {                                                                                           \
        cases[n].got = (expr);                                                                     \
        cases[n].want = (msg);                                                                     \
        cr_assert_null(cases[n].got, "%s returns NULL", #expr);                                    \
        cr_assert_eq(ag_error(ctx), LG_EINVAL);                                                    \
        cr_assert_str_eq(ag_errmsg(ctx), cases[n].want);                                           \
        n++;                                                                                       \
        ag_ctx_reset(ctx);                                                                         \
    } while (0)
    EXPECT(ag_matmul(ctx, a, b, false, false),
           "ag_matmul: inner dimensions differ: a [4, 3] b [5, 2]");
    EXPECT(ag_add(ctx, a, b), "ag_add: shapes do not broadcast: a [4, 3] b [5, 2]");
    EXPECT(ag_linear(ctx, a, b, NULL),
           "ag_linear: x [4, 3] does not match weight [5, 2] [out, in]");
    EXPECT(ag_slice(ctx, a, 1, 2, 2), "ag_slice: [2, 4) along axis 1 outside x [4, 3]");
    EXPECT(ag_embedding(ctx, a, ids),
           "ag_embedding: index 9 at position 1 outside [0, 4) of data/a");
    EXPECT(ag_mul(ctx, ids, a), "ag_mul: a is I32, expected F32");
    EXPECT(ag_reshape(ctx, a, 2, (int64_t[]){5, 2}),
           "ag_reshape: x [4, 3] (12 elements) cannot take the shape [5, 2]");
    EXPECT(ag_pinball_loss(ctx, a, b, (float[]){0.5f}, 1),
           "ag_pinball_loss: yhat [4, 3] must be [B, T, Q] with Q = 1 quantiles for y [5, 2]");
#undef EXPECT
    struct tn_tensor *parts[3];
    cr_assert_eq(ag_split(ctx, a, 0, 3, parts), LG_EINVAL);
    cr_assert_null(parts[0]);
    cr_assert_str_eq(ag_errmsg(ctx),
                     "ag_split: x [4, 3] cannot be split in 3 equal parts along axis 0");
    ag_ctx_reset(ctx);
    struct ag_lstm_out lo = ag_lstm(ctx, a, NULL, NULL, b, b, NULL, NULL);
    cr_assert_null(lo.out);
    cr_assert(strstr(ag_errmsg(ctx), "ag_lstm: x [4, 3] must be [B, T, In]"), "%s", ag_errmsg(ctx));
}

Test(autograd, the_first_error_is_sticky_until_reset)
{
    new_ctx((struct ag_options){0});
    struct tn_tensor *a = param("varmap/a", 2, (int64_t[]){4, 3}, 1);
    struct tn_tensor *b = input("data/b", 2, (int64_t[]){5, 2}, 2);
    /* a forward written straight through: the first failure propagates as NULL */
    struct tn_tensor *y = ag_matmul(ctx, a, b, false, false);
    struct tn_tensor *z = ag_tanh(ctx, y);
    struct tn_tensor *w = ag_add(ctx, a, b); /* a second, different failure */
    struct tn_tensor *ok = ag_tanh(ctx, a);  /* valid inputs, but the context has failed */
    cr_assert_null(y);
    cr_assert_null(z);
    cr_assert_null(w);
    cr_assert_null(ok);
    cr_assert_eq(ag_error(ctx), LG_EINVAL);
    cr_assert_str_eq(ag_errmsg(ctx), "ag_matmul: inner dimensions differ: a [4, 3] b [5, 2]");
    cr_assert_eq(ag_backward(ctx, z), LG_EINVAL);
    cr_assert_null(ag_fail(ctx, LG_EIO, "later"), "ag_fail returns NULL");
    cr_assert_str_eq(ag_errmsg(ctx), "ag_matmul: inner dimensions differ: a [4, 3] b [5, 2]");
    ag_ctx_reset(ctx);
    cr_assert_eq(ag_error(ctx), LG_OK);
    cr_assert_str_eq(ag_errmsg(ctx), "");
    cr_assert_not_null(ag_tanh(ctx, a), "the context works again after reset");
    /* a NULL input with no earlier error is an error of its own */
    cr_assert_null(ag_sigmoid(ctx, NULL));
    cr_assert_str_eq(ag_errmsg(ctx), "ag_sigmoid: input 1 is NULL");
    ag_ctx_reset(ctx);
    /* the backward's own errors */
    struct tn_tensor *notscalar = ag_tanh(ctx, a);
    cr_assert_eq(ag_backward(ctx, notscalar), LG_EINVAL);
    cr_assert(strstr(ag_errmsg(ctx), "must be one F32 element"), "%s", ag_errmsg(ctx));
    ag_ctx_reset(ctx);
    cr_assert_eq(ag_backward(ctx, ag_sum_all(ctx, b)), LG_EINVAL);
    cr_assert(strstr(ag_errmsg(ctx), "does not depend on anything that requires a gradient"), "%s",
              ag_errmsg(ctx));
}

Test(autograd, device_tensors_without_cuda_kernels_are_refused)
{
    new_ctx((struct ag_options){0});
    struct tn_tensor *a = input("data/a", 2, (int64_t[]){2, 2}, 1);
    struct tn_tensor *b = input("data/b", 2, (int64_t[]){2, 2}, 2);
    b->device = TN_CUDA; /* a stand-in: only the op's dispatch looks at it */
    cr_assert_null(ag_add(ctx, a, b));
    cr_assert_eq(ag_error(ctx), LG_EINVAL);
    cr_assert(strstr(ag_errmsg(ctx), "ag_add: inputs on different devices"), "%s", ag_errmsg(ctx));
    ag_ctx_reset(ctx);
    cr_assert_null(ag_tanh(ctx, b));
    cr_assert_eq(ag_error(ctx), LG_EUNAVAIL);
#ifdef LG_HAVE_CUDA /* kernels exist; the output's device memory is refused (no backend on T) */
    cr_assert(strstr(ag_errmsg(ctx), "the tracker has no CUDA backend"), "%s", ag_errmsg(ctx));
#else
    cr_assert_str_eq(ag_errmsg(ctx), "ag_tanh: no CUDA kernels in this build");
#endif
    b->device = TN_CPU;
}

Test(autograd, grad_mode_off_records_nothing)
{
    new_ctx((struct ag_options){0});
    struct tn_tensor *w = param("varmap/w", 2, (int64_t[]){3, 3}, 1);
    cr_assert(ag_set_grad_enabled(ctx, false));
    struct tn_tensor *y = ag_matmul(ctx, w, w, false, true);
    cr_assert_not_null(y);
    cr_assert_not(y->requires_grad);
    cr_assert_eq(ag_tape_len(ctx), 0);
    cr_assert_not(ag_set_grad_enabled(ctx, true));
    y = ag_matmul(ctx, w, w, false, true);
    cr_assert(y->requires_grad);
    cr_assert_eq(ag_tape_len(ctx), 1);
}

Test(autograd, backward_runs_only_the_nodes_the_loss_reaches)
{
    new_ctx((struct ag_options){0});
    struct tn_tensor *w1 = param("varmap/w1", 2, (int64_t[]){3, 3}, 1);
    struct tn_tensor *w2 = param("varmap/w2", 2, (int64_t[]){3, 3}, 2);
    struct tn_tensor *used = ag_tanh(ctx, w1);
    struct tn_tensor *dead = ag_sigmoid(ctx, ag_mul(ctx, w2, used)); /* not in the loss */
    struct tn_tensor *loss = ag_sum_all(ctx, used);
    cr_assert_not_null(dead);
    cr_assert_eq(ag_tape_len(ctx), 4);
    cr_assert_eq(ag_backward(ctx, loss), LG_OK);
    cr_assert_not_null(w1->grad);
    cr_assert_null(w2->grad, "the dead branch's node did not run");
    for (int i = 0; i < 9; i++) {
        float t = tanhf(tn_f32(w1)[i]);
        cr_assert_float_eq(tn_f32(w1->grad)[i], 1.0f - t * t, 1e-6);
    }
}

Test(autograd, dropout_is_seeded_scaled_and_off_in_evaluation)
{
    int64_t n = 20000;
    new_ctx((struct ag_options){.training = true, .seed = 42});
    struct tn_tensor *x = input("data/x", 1, &n, 1);
    tn_fill(x, 2.0f);
    struct tn_tensor *y1 = ag_dropout(ctx, x, 0.25f);
    ag_reseed(ctx, 42);
    struct tn_tensor *y2 = ag_dropout(ctx, x, 0.25f);
    struct tn_tensor *y3 = ag_dropout(ctx, x, 0.25f);
    int64_t kept = 0, differ = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = tn_f32(y1)[i];
        cr_assert(v == 0.0f || fabsf(v - 2.0f / 0.75f) < 1e-6f,
                  "kept values are scaled by 1/(1-p)");
        kept += v != 0.0f;
        cr_assert_eq(v, tn_f32(y2)[i], "the same seed gives the same mask");
        differ += v != tn_f32(y3)[i];
    }
    cr_assert(fabs((double)kept / (double)n - 0.75) < 0.015, "kept %lld of %lld", (long long)kept,
              (long long)n);
    cr_assert_gt(differ, n / 10, "the next draw is another mask");
    ag_set_training(ctx, false);
    cr_assert_not(ag_training(ctx));
    struct tn_tensor *ye = ag_dropout(ctx, x, 0.25f);
    for (int64_t i = 0; i < n; i++) cr_assert_eq(tn_f32(ye)[i], 2.0f);
    cr_assert_null(ag_dropout(ctx, x, 1.0f));
    cr_assert_str_eq(ag_errmsg(ctx), "ag_dropout: probability 1 outside [0, 1)");
}

/* The kernels' own exp/sigmoid/tanh/elu (vectorised, no libm) against libm over a sweep. */
Test(autograd, activation_math_matches_libm)
{
    int64_t n = 200001;
    new_ctx((struct ag_options){0});
    struct tn_tensor *x = input("data/x", 1, &n, 1);
    float *px = tn_f32(x);
    for (int64_t i = 0; i < n; i++) px[i] = -30.0f + 60.0f * (float)i / (float)(n - 1);
    px[n / 2 + 1] = 1e-5f, px[n / 2 + 2] = -3e-4f, px[n / 2 + 3] = 0.19999f, px[n / 2 + 4] = 0.2f;
    const float *s = tn_f32(ag_sigmoid(ctx, x)), *t = tn_f32(ag_tanh(ctx, x)),
                *e = tn_f32(ag_elu(ctx, x));
    double es = 0, et = 0, ee = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = px[i], rs = 1.0 / (1.0 + exp(-v)), rt = tanh(v), re = v > 0 ? v : expm1(v);
        es = fmax(es, fabs(s[i] - rs));
        et = fmax(et, fabs(t[i] - rt) / fmax(fabs(rt), 1e-30));
        ee = fmax(ee, fabs(e[i] - re) / fmax(fabs(re), 1.0));
    }
    cr_assert_lt(es, 2e-7, "sigmoid max abs error %g", es);
    cr_assert_lt(et, 1e-6, "tanh max rel error %g", et);
    cr_assert_lt(ee, 2e-7, "elu max error %g", ee);
    /* saturation and the softmax mask: exp(-inf) is exactly 0, NaN stays NaN */
    px[0] = -INFINITY, px[1] = INFINITY, px[2] = NAN, px[3] = -100.0f, px[4] = 100.0f;
    s = tn_f32(ag_sigmoid(ctx, x));
    t = tn_f32(ag_tanh(ctx, x));
    cr_assert_eq(s[0], 0.0f);
    cr_assert_eq(s[1], 1.0f);
    cr_assert(isnan(s[2]) && isnan(t[2]));
    cr_assert_eq(t[0], -1.0f);
    cr_assert_eq(t[1], 1.0f);
    cr_assert_lt(s[3], 1e-30f);
    cr_assert_eq(s[4], 1.0f);
}

Test(autograd, softmax_with_a_causal_mask_gives_exact_zeros)
{
    new_ctx((struct ag_options){0});
    struct tn_tensor *x = param("varmap/x", 3, (int64_t[]){2, 4, 4}, 3);
    struct tn_tensor *m = input("data/mask", 2, (int64_t[]){4, 4}, 4);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) tn_f32(m)[i * 4 + j] = j > i ? -INFINITY : 0.0f;
    struct tn_tensor *p = ag_softmax(ctx, ag_add_mask(ctx, x, m));
    cr_assert_not_null(p, "%s", ag_errmsg(ctx));
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 4; i++) {
            double sum = 0;
            for (int j = 0; j < 4; j++) {
                float v = tn_f32(p)[(b * 4 + i) * 4 + j];
                if (j > i) cr_assert_eq(v, 0.0f);
                sum += v;
            }
            cr_assert_float_eq(sum, 1.0, 1e-6);
        }
    cr_assert_eq(ag_backward(ctx, ag_sum_all(ctx, ag_mul(ctx, p, p))), LG_OK, "%s", ag_errmsg(ctx));
    cr_assert_null(m->grad, "the mask is a constant");
    cr_assert_eq(tn_f32(x->grad)[1], 0.0f, "no gradient through a masked position");
}

Test(autograd, out_of_memory_is_an_error_not_a_crash)
{
    new_ctx((struct ag_options){0});
    struct tn_tensor *x = param("varmap/x", 1, (int64_t[]){1}, 1);
    ag_scope_push(ctx, "huge");
    struct tn_tensor *y = ag_expand(ctx, x, 3, (int64_t[]){1 << 20, 1 << 20, 1 << 12}); /* 16 PiB */
    ag_scope_pop(ctx);
    cr_assert_null(y);
    cr_assert_eq(ag_error(ctx), LG_ENOMEM, "%s", ag_errmsg(ctx));
    cr_assert(strstr(ag_errmsg(ctx), "act/huge.expand"), "names the tensor: %s", ag_errmsg(ctx));
    cr_assert_null(ag_temp(ctx, TN_F32, 1, (int64_t[]){4}, "after"), "the error is sticky");
    ag_ctx_reset(ctx);
    cr_assert_not_null(ag_temp(ctx, TN_F32, 1, (int64_t[]){4}, "after"));
}

Test(autograd, adopt_hands_a_tensor_to_the_context)
{
    new_ctx((struct ag_options){0});
    struct tn_tensor *t = tn_new_f32(T, "act/mine", 1, (int64_t[]){16});
    cr_assert_eq(ag_adopt(ctx, t), t);
    cr_assert_gt(lg_live_bytes_with_prefix("act/mine", NULL), 0);
    ag_ctx_reset(ctx);
    cr_assert_eq(lg_live_bytes_with_prefix("act/mine", NULL), 0);
    cr_assert_eq(ag_tracker(ctx), T);
    ag_ctx_free(NULL);
}
