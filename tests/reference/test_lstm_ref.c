/* test_lstm_ref.c — the fused LSTM op against the same recurrence composed step by step from
 * primitive ops (slice, reshape, linear, add, sigmoid, tanh, mul, stack): outputs, the final
 * cell state, and the gradients of every input agree. */
#include <math.h>
#include <string.h>

#include "autograd.h"
#include "lg_test.h"
#include "lg_test_model.h"

TestSuite(lstm_ref, .init = lg_test_setup, .fini = lg_test_teardown);

enum { X, H0, C0, WIH, WHH, BIH, BHH, NIN };

/* The recurrence of ag_lstm (gate order i, f, g, o) in primitive ops. */
static struct ag_lstm_out composed(struct ag_ctx *ctx, struct tn_tensor **in, int64_t B, int64_t Tn,
                                   int64_t In, int64_t H)
{
    struct tn_tensor *h = in[H0], *c = in[C0], *hs[64];
    for (int64_t t = 0; t < Tn; t++) {
        struct tn_tensor *xt =
            ag_reshape(ctx, ag_slice(ctx, in[X], 1, t, 1), 2, (int64_t[]){B, In});
        struct tn_tensor *g = ag_linear(ctx, xt, in[WIH], in[BIH]);
        if (h)
            g = ag_add(ctx, g, ag_linear(ctx, h, in[WHH], in[BHH]));
        else if (in[BHH])
            g = ag_add(ctx, g, in[BHH]);
        struct tn_tensor *i = ag_sigmoid(ctx, ag_slice(ctx, g, 1, 0, H));
        struct tn_tensor *f = ag_sigmoid(ctx, ag_slice(ctx, g, 1, H, H));
        struct tn_tensor *gg = ag_tanh(ctx, ag_slice(ctx, g, 1, 2 * H, H));
        struct tn_tensor *o = ag_sigmoid(ctx, ag_slice(ctx, g, 1, 3 * H, H));
        struct tn_tensor *ig = ag_mul(ctx, i, gg);
        c = c ? ag_add(ctx, ag_mul(ctx, f, c), ig) : ig;
        h = ag_mul(ctx, o, ag_tanh(ctx, c));
        hs[t] = h;
    }
    return (struct ag_lstm_out){ag_stack(ctx, hs, (int)Tn, 1), c};
}

static double rel_err(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - b[i]));
        den = fmax(den, fabs((double)b[i]));
    }
    return num / fmax(den, 1e-30);
}

/* Runs both versions on the same inputs with the loss Σ R1·out + Σ R2·c_last. */
static void compare(int64_t B, int64_t Tn, int64_t In, int64_t H, bool with_state, bool with_bias,
                    uint64_t seed)
{
    static const char *const names[NIN] = {"x", "h0", "c0", "w_ih", "w_hh", "b_ih", "b_hh"};
    struct tn_rng r;
    tn_rng_seed(&r, seed);
    float s = 1.0f / sqrtf((float)H);
    struct tn_tensor *in[NIN] = {
        lg_leaf_uniform("x", 3, (int64_t[]){B, Tn, In}, &r, 1.0f),
        with_state ? lg_leaf_uniform("h0", 2, (int64_t[]){B, H}, &r, 1.0f) : NULL,
        with_state ? lg_leaf_uniform("c0", 2, (int64_t[]){B, H}, &r, 1.0f) : NULL,
        lg_leaf_uniform("w_ih", 2, (int64_t[]){4 * H, In}, &r, s),
        lg_leaf_uniform("w_hh", 2, (int64_t[]){4 * H, H}, &r, s),
        with_bias ? lg_leaf_uniform("b_ih", 1, (int64_t[]){4 * H}, &r, s) : NULL,
        with_bias ? lg_leaf_uniform("b_hh", 1, (int64_t[]){4 * H}, &r, s) : NULL,
    };
    struct tn_tensor *r1 = lg_leaf_uniform("r1", 3, (int64_t[]){B, Tn, H}, &r, 1.0f);
    struct tn_tensor *r2 = lg_leaf_uniform("r2", 2, (int64_t[]){B, H}, &r, 1.0f);
    r1->requires_grad = r2->requires_grad = false;
    struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){0});
    struct tn_tensor *outs[2][2], *grads[2][NIN]; /* [fused, composed] */
    for (int v = 0; v < 2; v++) {
        struct ag_lstm_out o =
            v == 0 ? ag_lstm(ctx, in[X], in[H0], in[C0], in[WIH], in[WHH], in[BIH], in[BHH])
                   : composed(ctx, in, B, Tn, In, H);
        struct tn_tensor *loss = ag_add(ctx, ag_sum_all(ctx, ag_mul(ctx, o.out, r1)),
                                        ag_sum_all(ctx, ag_mul(ctx, o.c_last, r2)));
        cr_assert_not_null(loss, "%s", ag_errmsg(ctx));
        cr_assert_eq(ag_backward(ctx, loss), LG_OK, "%s", ag_errmsg(ctx));
        outs[v][0] = tn_retain(o.out);
        outs[v][1] = tn_retain(o.c_last);
        for (int k = 0; k < NIN; k++) { /* set this version's gradients aside */
            grads[v][k] = in[k] ? in[k]->grad : NULL;
            if (in[k]) in[k]->grad = NULL;
        }
        ag_ctx_reset(ctx);
    }
    cr_assert(tn_same_shape(outs[0][0], outs[1][0]));
    double e_out = rel_err(tn_f32(outs[0][0]), tn_f32(outs[1][0]), tn_numel(outs[0][0]));
    double e_c = rel_err(tn_f32(outs[0][1]), tn_f32(outs[1][1]), tn_numel(outs[0][1]));
    cr_assert_lt(e_out, 1e-5, "out differs: %g", e_out);
    cr_assert_lt(e_c, 1e-5, "c_last differs: %g", e_c);
    for (int k = 0; k < NIN; k++) {
        if (!in[k]) continue;
        cr_assert_not_null(grads[0][k], "fused: no gradient for %s", names[k]);
        cr_assert_not_null(grads[1][k], "composed: no gradient for %s", names[k]);
        double e = rel_err(tn_f32(grads[0][k]), tn_f32(grads[1][k]), tn_numel(in[k]));
        cr_assert_lt(e, 1e-4, "d%s differs: %g (B %lld T %lld In %lld H %lld)", names[k], e,
                     (long long)B, (long long)Tn, (long long)In, (long long)H);
    }
    for (int v = 0; v < 2; v++) {
        tn_release(outs[v][0]);
        tn_release(outs[v][1]);
        for (int k = 0; k < NIN; k++) tn_release(grads[v][k]);
    }
    for (int k = 0; k < NIN; k++) tn_release(in[k]);
    tn_release(r1);
    tn_release(r2);
    ag_ctx_free(ctx);
}

Test(lstm_ref, fused_matches_composition_with_initial_state) { compare(3, 5, 4, 6, true, true, 1); }

Test(lstm_ref, fused_matches_composition_from_zero_state_without_biases)
{
    compare(2, 4, 3, 5, false, false, 2);
}

Test(lstm_ref, fused_matches_composition_on_a_longer_sequence)
{
    compare(8, 24, 16, 16, true, true, 3);
}
