/* test_gradcheck.c — every op's backward against central finite differences.
 *
 * For an op f and inputs X, a random projection R of the output gives a scalar
 * L(X) = Σ R·f(X), computed in double from f's float output. The analytic gradient comes from
 * ag_backward on sum_all(mul(f(X), R)); the numeric one from (L(x + h) − L(x − h)) / (2h) per
 * input element, with the step the float input actually took. Shapes are drawn at random
 * (seeded); each op has its own step and tolerances (ops linear in each input get a large
 * step and tight tolerances; curved ones a small step). fake_quant's straight-through
 * gradient is not a derivative of the forward: it is checked exactly, with its forward. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "lg_test.h"
#include "lg_test_model.h"

TestSuite(gradcheck, .init = lg_test_setup, .fini = lg_test_teardown);

typedef struct tn_tensor *(*gc_fn)(struct ag_ctx *ctx, struct tn_tensor **in, const int *arg);

struct gc {
    const char *what;
    gc_fn f;
    const int *arg;
    int nin;
    struct tn_tensor *in[8];
    double h, atol, rtol;
};

static struct tn_rng rng; /* shapes and values; seeded per test */

static int rnd(int lo, int hi) { return lo + (int)(tn_rng_next(&rng) % (uint64_t)(hi - lo + 1)); }

static struct tn_tensor *leaf(const char *name, int nd, const int64_t *shape)
{
    return lg_leaf(name, nd, shape, &rng, 1.0f);
}

static double project(const struct tn_tensor *y, const struct tn_tensor *r)
{
    double s = 0;
    for (int64_t i = 0; i < tn_numel(y); i++) s += (double)tn_f32(y)[i] * tn_f32(r)[i];
    return s;
}

static double eval(struct ag_ctx *ctx, struct gc *c, const struct tn_tensor *r)
{
    ag_reseed(ctx, 99); /* dropout draws the same mask every time */
    struct tn_tensor *y = c->f(ctx, c->in, c->arg);
    cr_assert_not_null(y, "%s: %s", c->what, ag_errmsg(ctx));
    double l = project(y, r);
    ag_ctx_reset(ctx);
    return l;
}

/* Checks every element of every input that requires a gradient; releases the inputs. */
static void gradcheck(struct gc *c)
{
    struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){.training = true, .seed = 99});
    ag_reseed(ctx, 99);
    struct tn_tensor *y = c->f(ctx, c->in, c->arg);
    cr_assert_not_null(y, "%s: %s", c->what, ag_errmsg(ctx));
    struct tn_tensor *r = tn_new_f32(T, "test/projection", y->ndim, y->ne);
    tn_fill_normal(r, &rng, 0.0f, 1.0f);
    cr_assert_eq(ag_backward(ctx, ag_sum_all(ctx, ag_mul(ctx, y, r))), LG_OK, "%s: %s", c->what,
                 ag_errmsg(ctx));
    ag_ctx_reset(ctx);
    ag_set_grad_enabled(ctx, false);
    double worst = 0;
    for (int k = 0; k < c->nin; k++) {
        struct tn_tensor *x = c->in[k];
        if (!x || !x->requires_grad) continue;
        cr_assert_not_null(x->grad, "%s: input %d got no gradient", c->what, k + 1);
        float *px = tn_f32(x);
        for (int64_t i = 0; i < tn_numel(x); i++) {
            float v = px[i], xp = v + (float)c->h, xm = v - (float)c->h;
            px[i] = xp;
            double lp = eval(ctx, c, r);
            px[i] = xm;
            double lm = eval(ctx, c, r);
            px[i] = v;
            double fd = (lp - lm) / ((double)xp - (double)xm), an = tn_f32(x->grad)[i];
            double err = fabs(an - fd), tol = c->atol + c->rtol * fabs(fd);
            worst = fmax(worst, err / tol);
            cr_assert_leq(err, tol,
                          "%s: input %d (%s %s) element %lld: analytic %.7g, numeric %.7g", c->what,
                          k + 1, x->name, tn_shape_str(x, (char[64]){0}, 64), (long long)i, an, fd);
        }
    }
    cr_assert_leq(worst, 1.0);
    tn_release(r);
    ag_ctx_free(ctx);
    for (int k = 0; k < c->nin; k++) tn_release(c->in[k]);
}

/* tolerances for ops linear in each input (exact differences), and for curved ones */
#define LINEAR 0.1, 1e-4, 1e-3
#define CURVED 1e-2, 2e-3, 1e-2

/* ---- matmul, linear -------------------------------------------------------------------------- */

static struct tn_tensor *f_matmul(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_matmul(ctx, in[0], in[1], a[0], a[1]);
}

Test(gradcheck, matmul_every_transpose_and_batch_layout)
{
    tn_rng_seed(&rng, 1);
    static const int tr[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
    for (int layout = 0; layout < 4; layout++) /* 2-D; 3-D and 4-D a with shared b; batched b */
        for (int t = 0; t < 4; t++) {
            int64_t M = rnd(1, 4), K = rnd(1, 4), N = rnd(1, 4), B0 = rnd(1, 3), B1 = rnd(2, 3);
            bool ta = tr[t][0], tb = tr[t][1];
            int64_t as[4], bs[4];
            int nb = layout == 0 ? 0 : layout == 2 ? 2 : 1, na = nb + 2;
            int64_t lead[2] = {B0, B1};
            for (int i = 0; i < nb; i++) as[i] = bs[i] = lead[i];
            as[nb] = ta ? K : M, as[nb + 1] = ta ? M : K;
            int bn = layout == 3 ? nb : 0;
            bs[bn] = tb ? N : K, bs[bn + 1] = tb ? K : N;
            struct gc c = {"matmul", f_matmul, tr[t], 2, {leaf("a", na, as), leaf("b", bn + 2, bs)},
                           LINEAR};
            gradcheck(&c);
        }
}

static struct tn_tensor *f_linear(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_linear(ctx, in[0], in[1], in[2]);
}

Test(gradcheck, linear_with_and_without_bias)
{
    tn_rng_seed(&rng, 2);
    int64_t in = rnd(1, 5), out = rnd(1, 5);
    struct gc c = {"linear",
                   f_linear,
                   NULL,
                   3,
                   {leaf("x", 3, (int64_t[]){2, 3, in}), leaf("w", 2, (int64_t[]){out, in}),
                    leaf("b", 1, (int64_t[]){out})},
                   LINEAR};
    gradcheck(&c);
    struct gc d = {"linear (no bias)",
                   f_linear,
                   NULL,
                   3,
                   {leaf("x", 2, (int64_t[]){4, in}), leaf("w", 2, (int64_t[]){out, in}), NULL},
                   LINEAR};
    gradcheck(&d);
}

/* ---- elementwise ----------------------------------------------------------------------------- */

static struct tn_tensor *f_binary(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    switch (a[0]) {
    case 0: return ag_add(ctx, in[0], in[1]);
    case 1: return ag_sub(ctx, in[0], in[1]);
    default: return ag_mul(ctx, in[0], in[1]);
    }
}

Test(gradcheck, add_sub_mul_with_broadcasting)
{
    tn_rng_seed(&rng, 3);
    static const struct {
        int na, nb;
        int64_t a[4], b[4];
    } pairs[] = {
        {2, 2, {3, 4}, {3, 4}},          {3, 1, {2, 3, 4}, {4}}, {3, 2, {2, 1, 4}, {3, 1}},
        {3, 3, {2, 3, 4}, {2, 1, 4}},    {1, 2, {1}, {3, 2}},    {2, 2, {4, 1}, {1, 5}},
        {4, 3, {2, 3, 1, 5}, {3, 4, 1}},
    };
    static const int ops[3] = {0, 1, 2};
    static const char *const names[3] = {"add", "sub", "mul"};
    for (size_t p = 0; p < LG_ARRAY_LEN(pairs); p++)
        for (int o = 0; o < 3; o++) {
            struct gc c = {names[o],
                           f_binary,
                           &ops[o],
                           2,
                           {leaf("a", pairs[p].na, pairs[p].a), leaf("b", pairs[p].nb, pairs[p].b)},
                           LINEAR};
            gradcheck(&c);
        }
}

static struct tn_tensor *f_unary(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    switch (a[0]) {
    case 0: return ag_scale(ctx, in[0], -1.7f);
    case 1: return ag_sigmoid(ctx, in[0]);
    case 2: return ag_tanh(ctx, in[0]);
    case 3: return ag_elu(ctx, in[0]);
    case 4: return ag_softmax(ctx, in[0]);
    default: return ag_dropout(ctx, in[0], 0.3f);
    }
}

Test(gradcheck, scale_sigmoid_tanh_elu_softmax_dropout)
{
    tn_rng_seed(&rng, 4);
    static const int ops[6] = {0, 1, 2, 3, 4, 5};
    static const char *const names[6] = {"scale", "sigmoid", "tanh", "elu", "softmax", "dropout"};
    for (int o = 0; o < 6; o++) {
        int64_t shape[3] = {rnd(1, 3), rnd(2, 4), rnd(2, 6)};
        struct gc c = {names[o], f_unary, &ops[o], 1, {leaf("x", 3, shape)}, CURVED};
        if (o == 0 || o == 5) c.h = 0.1, c.atol = 1e-4, c.rtol = 1e-3;
        float *p = tn_f32(c.in[0]);
        if (o == 3) /* elu: keep away from its kink at 0 */
            for (int64_t i = 0; i < tn_numel(c.in[0]); i++)
                if (fabsf(p[i]) < 0.05f) p[i] = p[i] < 0 ? -0.3f : 0.3f;
        gradcheck(&c);
    }
    struct gc att = {"softmax (attention shape)",
                     f_unary,
                     &ops[4],
                     1,
                     {leaf("x", 4, (int64_t[]){2, 2, 3, 6})},
                     CURVED};
    gradcheck(&att);
}

static struct tn_tensor *f_masked_softmax(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    struct tn_tensor *m = ag_add_mask(ctx, in[0], in[1]);
    return a[0] ? ag_softmax(ctx, m) : m;
}

Test(gradcheck, add_mask_and_masked_softmax)
{
    tn_rng_seed(&rng, 5);
    static const int with_softmax[2] = {0, 1};
    struct tn_tensor *mask = tn_new_f32(T, "data/mask", 2, (int64_t[]){5, 5});
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) tn_f32(mask)[i * 5 + j] = j > i ? -INFINITY : 0.0f;
    struct gc c = {"softmax(x + causal mask)",
                   f_masked_softmax,
                   &with_softmax[1],
                   2,
                   {leaf("x", 4, (int64_t[]){2, 3, 5, 5}), tn_retain(mask)},
                   CURVED};
    gradcheck(&c);
    struct tn_tensor *m2 = leaf("data/m2", 2, (int64_t[]){1, 5});
    m2->requires_grad = false;
    struct gc d = {"add_mask (broadcast)",
                   f_masked_softmax,
                   &with_softmax[0],
                   2,
                   {leaf("x", 3, (int64_t[]){3, 4, 5}), m2},
                   LINEAR};
    gradcheck(&d);
    tn_release(mask);
}

static struct tn_tensor *f_layernorm(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_layernorm(ctx, in[0], in[1], in[2], 1e-3f);
}

Test(gradcheck, layernorm)
{
    tn_rng_seed(&rng, 6);
    int64_t d = rnd(3, 9);
    struct gc c = {"layernorm",
                   f_layernorm,
                   NULL,
                   3,
                   {leaf("x", 3, (int64_t[]){3, 2, d}), leaf("w", 1, (int64_t[]){d}),
                    leaf("b", 1, (int64_t[]){d})},
                   CURVED};
    gradcheck(&c);
}

/* ---- fused blocks: gate-add-norm, weighted sum ---------------------------------------------- */

static struct tn_tensor *f_gate_add_norm(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    (void)a;
    return ag_gate_add_norm(ctx, in[0], in[1], in[2], in[3], 1e-3f);
}

Test(gradcheck, gate_add_norm_every_input)
{
    tn_rng_seed(&rng, 21);
    for (int rep = 0; rep < 3; rep++) {
        int64_t d = rnd(2, 7), r0 = rnd(1, 3), r1 = rnd(1, 4);
        struct gc c = {"gate_add_norm",
                       f_gate_add_norm,
                       NULL,
                       4,
                       {leaf("z", 3, (int64_t[]){r0, r1, 2 * d}),
                        leaf("skip", 3, (int64_t[]){r0, r1, d}), leaf("w", 1, (int64_t[]){d}),
                        leaf("b", 1, (int64_t[]){d})},
                       CURVED};
        if (rep == 2) c.in[1]->requires_grad = false; /* a constant skip: no gradient for it */
        gradcheck(&c);
    }
}

static struct tn_tensor *f_weighted_sum(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_weighted_sum(ctx, in, a[0], in[a[0]]);
}

Test(gradcheck, weighted_sum_of_every_term_and_the_weights)
{
    tn_rng_seed(&rng, 22);
    static const int counts[3] = {1, 3, 5};
    for (int k = 0; k < 3; k++) {
        int n = counts[k];
        int64_t h = rnd(1, 6), r0 = rnd(1, 3), r1 = rnd(1, 3);
        struct gc c = {"weighted_sum", f_weighted_sum, &counts[k], n + 1, {0}, LINEAR};
        for (int j = 0; j < n; j++) c.in[j] = leaf("x", 3, (int64_t[]){r0, r1, h});
        c.in[n] = leaf("v", 3, (int64_t[]){r0, r1, n});
        if (k == 1) c.in[0]->requires_grad = false;
        gradcheck(&c);
    }
}

static struct tn_tensor *f_linear_ex(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_linear_ex(ctx, in[0], in[1], in[2], (enum ag_epilogue)a[0], 0.3f);
}

Test(gradcheck, linear_with_an_elu_or_dropout_epilogue)
{
    tn_rng_seed(&rng, 24);
    static const int epi[2] = {AG_EPI_ELU, AG_EPI_DROPOUT};
    for (int k = 0; k < 2; k++) {
        int64_t in = rnd(1, 5), out = rnd(2, 5), r0 = rnd(2, 4);
        struct gc c = {"linear_ex",
                       f_linear_ex,
                       &epi[k],
                       3,
                       {leaf("x", 2, (int64_t[]){r0, in}), leaf("w", 2, (int64_t[]){out, in}),
                        leaf("b", 1, (int64_t[]){out})},
                       CURVED};
        gradcheck(&c);
    }
}

/* in: W, bias (or NULL), then per term x, or x, w and (kind 1) b; a: n, then each term's kind
 * (0 plain, 1 factored, 2 factored without b), and a[4] the epilogue */
static struct tn_tensor *f_linear_concat(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    struct ag_term t[4];
    int k = 2;
    for (int j = 0; j < a[0]; j++) {
        t[j] = (struct ag_term){in[k++], NULL, NULL};
        if (a[1 + j] > 0) t[j].w = in[k++];
        if (a[1 + j] == 1) t[j].b = in[k++];
    }
    return ag_linear_concat(ctx, t, a[0], in[0], in[1], (enum ag_epilogue)a[4], 0.3f);
}

Test(gradcheck, linear_concat_of_plain_and_factored_terms)
{
    tn_rng_seed(&rng, 23);
    static const int layouts[3][5] = {
        {3, 0, 1, 2, AG_EPI_NONE}, {1, 1, 0, 0, AG_EPI_ELU}, {2, 2, 0, 0, AG_EPI_DROPOUT}};
    for (int k = 0; k < 3; k++) {
        const int *a = layouts[k];
        int64_t H = rnd(1, 4), out = rnd(1, 4), r0 = rnd(1, 3), r1 = rnd(1, 3);
        struct gc c = {"linear_concat", f_linear_concat, a, 2, {0}, LINEAR};
        if (a[4] == AG_EPI_ELU)
            c = (struct gc){"linear_concat", f_linear_concat, a, 2, {0}, CURVED};
        c.in[0] = leaf("w", 2, (int64_t[]){out, a[0] * H});
        c.in[1] = k == 1 ? NULL : leaf("bias", 1, (int64_t[]){out}); /* none in layout 2 */
        for (int j = 0; j < a[0]; j++) {
            c.in[c.nin++] = leaf("x", 3, (int64_t[]){r0, r1, a[1 + j] ? 1 : H});
            if (a[1 + j] > 0) c.in[c.nin++] = leaf("fw", 2, (int64_t[]){H, 1});
            if (a[1 + j] == 1) c.in[c.nin++] = leaf("fb", 1, (int64_t[]){H});
        }
        if (k == 2) c.in[c.nin - 1]->requires_grad = false; /* a constant input */
        gradcheck(&c);
    }
}

/* ---- embedding ------------------------------------------------------------------------------- */

static struct tn_tensor *f_embedding(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_embedding(ctx, in[0], in[1]);
}

Test(gradcheck, embedding_scatter_adds_repeated_indices)
{
    tn_rng_seed(&rng, 7);
    struct tn_tensor *idx = tn_new(T, TN_I32, TN_CPU, 2, (int64_t[]){2, 5}, "data/idx");
    static const int32_t v[10] = {0, 3, 3, 6, 1, 3, 0, 2, 6, 6};
    memcpy(tn_i32(idx), v, sizeof v);
    struct gc c = {"embedding", f_embedding, NULL, 2, {leaf("w", 2, (int64_t[]){7, 4}), idx},
                   LINEAR};
    gradcheck(&c);
}

/* ---- shapes ---------------------------------------------------------------------------------- */

static struct tn_tensor *f_concat(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_concat(ctx, in, a[0], a[1]);
}

static struct tn_tensor *f_stack(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_stack(ctx, in, a[0], a[1]);
}

static struct tn_tensor *f_slice(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_slice(ctx, in[0], a[0], a[1], a[2]);
}

/* a: axis, parts, and which part to return (-1: all, stacked in reverse order) */
static struct tn_tensor *f_split(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    struct tn_tensor *parts[16];
    if (ag_split(ctx, in[0], a[0], a[1], parts) != LG_OK) return NULL;
    if (a[2] >= 0) return parts[a[2]];
    struct tn_tensor *rev[16];
    for (int i = 0; i < a[1]; i++) rev[i] = parts[a[1] - 1 - i];
    return ag_stack(ctx, rev, a[1], 0);
}

/* A case of an op linear in each input, whose inputs are drawn from rng (in order) just before
 * it is checked. */
struct gc_linear {
    const char *what;
    gc_fn f;
    const int *arg;
    int nin;
    struct {
        const char *name;
        int nd;
        int64_t ne[4];
    } in[4];
};

static void gradcheck_linear(const struct gc_linear *k)
{
    struct gc c = {k->what, k->f, k->arg, k->nin, {NULL}, LINEAR};
    for (int i = 0; i < k->nin; i++) c.in[i] = leaf(k->in[i].name, k->in[i].nd, k->in[i].ne);
    gradcheck(&c);
}

Test(gradcheck, concat_slice_split_stack)
{
    tn_rng_seed(&rng, 8);
    static const int cat1[2] = {3, 1}, cat2[2] = {2, -1}, cat0[2] = {2, 0};
    static const int sl1[3] = {1, 2, 3}, sl2[3] = {-1, 0, 1};
    static const int sp[3] = {1, 3, -1}, sp_one[3] = {-1, 2, 1}, sp_many[3] = {0, 10, -1};
    static const int st[3][2] = {{3, 0}, {3, 1}, {3, -1}};
    static const struct gc_linear cases[] = {
        {"concat axis 1",
         f_concat,
         cat1,
         3,
         {{"a", 3, {2, 3, 4}}, {"b", 3, {2, 1, 4}}, {"c", 3, {2, 2, 4}}}},
        {"concat axis -1", f_concat, cat2, 2, {{"a", 2, {3, 2}}, {"b", 2, {3, 5}}}},
        {"concat axis 0", f_concat, cat0, 2, {{"a", 2, {1, 3}}, {"b", 2, {2, 3}}}},
        {"slice axis 1", f_slice, sl1, 1, {{"x", 3, {3, 6, 2}}}},
        {"slice last axis", f_slice, sl2, 1, {{"x", 2, {4, 3}}}},
        {"split + stack", f_split, sp, 1, {{"x", 3, {2, 6, 3}}}},
        {"split, one part used", f_split, sp_one, 1, {{"x", 2, {3, 8}}}},
        {"split in 10 (slices)", f_split, sp_many, 1, {{"x", 2, {10, 2}}}},
        {"stack", f_stack, st[0], 3, {{"a", 2, {2, 3}}, {"b", 2, {2, 3}}, {"c", 2, {2, 3}}}},
        {"stack", f_stack, st[1], 3, {{"a", 2, {2, 3}}, {"b", 2, {2, 3}}, {"c", 2, {2, 3}}}},
        {"stack", f_stack, st[2], 3, {{"a", 2, {2, 3}}, {"b", 2, {2, 3}}, {"c", 2, {2, 3}}}},
    };
    for (size_t i = 0; i < LG_ARRAY_LEN(cases); i++) gradcheck_linear(&cases[i]);
}

static struct tn_tensor *f_permute(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_permute(ctx, in[0], a);
}

static struct tn_tensor *f_expand(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    int64_t shape[4];
    for (int i = 0; i < a[0]; i++) shape[i] = a[1 + i];
    return ag_expand(ctx, in[0], a[0], shape);
}

static struct tn_tensor *f_reshape(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    return ag_tanh(ctx, ag_reshape(ctx, in[0], 2, (int64_t[]){a[0], a[1]}));
}

Test(gradcheck, permute_expand_reshape)
{
    tn_rng_seed(&rng, 9);
    static const int p1[4] = {0, 2, 1, 3}, p2[4] = {3, 1, 0, 2}, p3[2] = {1, 0};
    struct gc a = {"permute 0213", f_permute, p1, 1, {leaf("x", 4, (int64_t[]){2, 3, 4, 5})},
                   LINEAR};
    gradcheck(&a);
    struct gc b = {"permute 3102", f_permute, p2, 1, {leaf("x", 4, (int64_t[]){2, 3, 2, 3})},
                   LINEAR};
    gradcheck(&b);
    struct gc c = {"transpose", f_permute, p3, 1, {leaf("x", 2, (int64_t[]){3, 4})}, LINEAR};
    gradcheck(&c);
    static const int e1[4] = {3, 2, 3, 4}, e2[3] = {2, 3, 4}, e3[3] = {2, 2, 3};
    struct gc d = {
        "expand [3,1]→[2,3,4]", f_expand, e1, 1, {leaf("x", 2, (int64_t[]){3, 1})}, LINEAR};
    gradcheck(&d);
    struct gc e = {"expand [4]→[3,4]", f_expand, e2, 1, {leaf("x", 1, (int64_t[]){4})}, LINEAR};
    gradcheck(&e);
    struct gc f = {
        "expand [1,1]→[2,3]", f_expand, e3, 1, {leaf("x", 2, (int64_t[]){1, 1})}, LINEAR};
    gradcheck(&f);
    static const int r[2] = {3, 4};
    struct gc g = {"reshape", f_reshape, r, 1, {leaf("x", 2, (int64_t[]){2, 6})}, CURVED};
    gradcheck(&g);
}

/* ---- reductions ------------------------------------------------------------------------------ */

static struct tn_tensor *f_reduce(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    if (a[0] == 2) return ag_sum_all(ctx, in[0]);
    return a[0] ? ag_mean(ctx, in[0], a[1], a[2]) : ag_sum(ctx, in[0], a[1], a[2]);
}

Test(gradcheck, sum_and_mean_over_axes)
{
    tn_rng_seed(&rng, 10);
    static int args[2][4][2][3];
    static const int axes[4] = {0, 1, 2, -1};
    for (int m = 0; m < 2; m++)
        for (int ax = 0; ax < 4; ax++)
            for (int keep = 0; keep < 2; keep++) {
                int *a = args[m][ax][keep];
                a[0] = m, a[1] = axes[ax], a[2] = keep;
                struct gc c = {m ? "mean" : "sum",
                               f_reduce,
                               a,
                               1,
                               {leaf("x", 3, (int64_t[]){rnd(1, 3), rnd(2, 4), rnd(2, 5)})},
                               LINEAR};
                gradcheck(&c);
            }
    static const int all[1] = {2};
    struct gc c = {"sum_all", f_reduce, all, 1, {leaf("x", 3, (int64_t[]){2, 3, 4})}, LINEAR};
    gradcheck(&c);
}

/* ---- LSTM, pinball loss ---------------------------------------------------------------------- */

/* a[0]: 0 both outputs (out flattened next to c_last), 1 out only, 2 c_last only */
static struct tn_tensor *f_lstm(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    struct ag_lstm_out o = ag_lstm(ctx, in[0], in[1], in[2], in[3], in[4], in[5], in[6]);
    if (!o.out || a[0] == 1) return o.out;
    if (a[0] == 2) return o.c_last;
    struct tn_tensor *flat =
        ag_reshape(ctx, o.out, 2, (int64_t[]){o.out->ne[0], o.out->ne[1] * o.out->ne[2]});
    return ag_concat(ctx, (struct tn_tensor *[]){flat, o.c_last}, 2, 1);
}

Test(gradcheck, lstm_all_inputs_and_both_outputs)
{
    tn_rng_seed(&rng, 11);
    static const int modes[3] = {0, 1, 2};
    for (int m = 0; m < 3; m++) {
        int64_t B = rnd(1, 3), Tn = rnd(2, 4), In = rnd(1, 3), H = rnd(2, 4);
        bool full = m != 1;
        struct gc c = {
            "lstm",
            f_lstm,
            &modes[m],
            7,
            {leaf("x", 3, (int64_t[]){B, Tn, In}), full ? leaf("h0", 2, (int64_t[]){B, H}) : NULL,
             full ? leaf("c0", 2, (int64_t[]){B, H}) : NULL,
             leaf("w_ih", 2, (int64_t[]){4 * H, In}), leaf("w_hh", 2, (int64_t[]){4 * H, H}),
             full ? leaf("b_ih", 1, (int64_t[]){4 * H}) : NULL,
             full ? leaf("b_hh", 1, (int64_t[]){4 * H}) : NULL},
            CURVED};
        gradcheck(&c);
    }
}

static struct tn_tensor *f_pinball(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    static const float q[3] = {0.1f, 0.5f, 0.9f};
    return ag_pinball_loss(ctx, in[0], in[1], q, 3);
}

Test(gradcheck, pinball_loss_away_from_its_kinks)
{
    tn_rng_seed(&rng, 12);
    struct tn_tensor *y = leaf("y", 2, (int64_t[]){2, 3}),
                     *yhat = leaf("yhat", 3, (int64_t[]){2, 3, 3});
    for (int r = 0; r < 6; r++)
        for (int k = 0; k < 3; k++) { /* |ŷ − y| ≥ 0.1 ≫ h */
            float off = 0.1f + tn_rng_uniform(&rng);
            tn_f32(yhat)[r * 3 + k] = tn_f32(y)[r] + (tn_rng_uniform(&rng) < 0.5f ? -off : off);
        }
    struct gc c = {"pinball", f_pinball, NULL, 2, {yhat, y}, 1e-2, 1e-4, 1e-3};
    gradcheck(&c);
}

/* ---- one tensor passed twice: the first contribution is written, the second accumulates ------ */

static struct tn_tensor *f_twice(struct ag_ctx *ctx, struct tn_tensor **in, const int *a)
{
    struct tn_tensor *x = in[0];
    switch (a[0]) {
    case 0: return ag_mul(ctx, x, x);
    case 1: return ag_sub(ctx, x, x);
    case 2: return ag_matmul(ctx, x, x, false, true);
    case 3: return ag_linear(ctx, x, x, NULL);
    case 4: return ag_concat(ctx, (struct tn_tensor *[]){x, x}, 2, 0);
    default: {
        struct ag_lstm_out o = ag_lstm(ctx, in[1], x, x, in[2], in[3], in[4], in[4]);
        return o.out ? ag_add(ctx, ag_sum_all(ctx, o.out), ag_sum_all(ctx, o.c_last)) : NULL;
    }
    }
}

Test(gradcheck, an_input_used_twice_by_one_op)
{
    tn_rng_seed(&rng, 14);
    static const int ops[6] = {0, 1, 2, 3, 4, 5};
    static const char *const names[6] = {"mul(x, x)",     "sub(x, x)",
                                         "matmul(x, xᵀ)", "linear(x, x)",
                                         "concat(x, x)",  "lstm(h0 = c0, b_ih = b_hh)"};
    for (int o = 0; o < 5; o++) {
        struct gc c = {names[o], f_twice, &ops[o], 1, {leaf("x", 2, (int64_t[]){3, 3})}, LINEAR};
        if (o == 0 || o == 2 || o == 3) c.h = 1e-2, c.atol = 1e-3, c.rtol = 1e-3; /* quadratic */
        gradcheck(&c);
    }
    struct gc c = {names[5],
                   f_twice,
                   &ops[5],
                   5,
                   {leaf("h0", 2, (int64_t[]){2, 3}), leaf("x", 3, (int64_t[]){2, 3, 2}),
                    leaf("w_ih", 2, (int64_t[]){12, 2}), leaf("w_hh", 2, (int64_t[]){12, 3}),
                    leaf("b", 1, (int64_t[]){12})},
                   CURVED};
    gradcheck(&c);
}

/* ---- fake quantisation: forward against a reference, straight-through gradient exactly ------- */

Test(gradcheck, fake_quant_forward_and_straight_through_gradient)
{
    tn_rng_seed(&rng, 13);
    for (int per_row = 0; per_row < 2; per_row++) {
        struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){0});
        struct tn_tensor *w = leaf("w", 2, (int64_t[]){4, 9});
        tn_f32(w)[9] = 0; /* a row with its own, smaller range */
        for (int j = 0; j < 9; j++) tn_f32(w)[9 + j] *= 0.01f;
        struct tn_tensor *r = leaf("r", 2, (int64_t[]){4, 9});
        r->requires_grad = false;
        struct tn_tensor *y = ag_fake_quant(ctx, w, per_row);
        cr_assert_not_null(y, "%s", ag_errmsg(ctx));
        for (int i = 0; i < 4; i++) {
            double amax = 0;
            for (int j = 0; j < 36; j++)
                if (!per_row || j / 9 == i) amax = fmax(amax, fabs(tn_f32(w)[j]));
            double s = amax / 127.0;
            for (int j = 0; j < 9; j++) {
                double x = tn_f32(w)[i * 9 + j], q = s > 0 ? nearbyint(x / s) : 0;
                cr_assert_leq(fabs(q), 127.0);
                cr_assert(fabs(tn_f32(y)[i * 9 + j] - q * s) <= 1e-6 * amax + 1e-12,
                          "row %d col %d: %g vs %g", i, j, tn_f32(y)[i * 9 + j], q * s);
                cr_assert(fabs(tn_f32(y)[i * 9 + j] - x) <= 0.5 * s * (1 + 1e-5) + 1e-12,
                          "within half a step");
            }
        }
        cr_assert_eq(ag_backward(ctx, ag_sum_all(ctx, ag_mul(ctx, y, r))), LG_OK);
        for (int j = 0; j < 36; j++)
            cr_assert_eq(tn_f32(w->grad)[j], tn_f32(r)[j], "nothing is clipped: gradient passes");
        ag_ctx_free(ctx);
        tn_release(w);
        tn_release(r);
    }
}
