/* test_optim.c — AdamW against updates computed by hand in double precision (with and
 * without weight decay), its state keyed by name, the grad helpers, and global-norm
 * gradient clipping. */
#include <math.h>
#include <string.h>

#include "autograd.h"
#include "lg_test.h"
#include "optim.h"

TestSuite(optim, .init = lg_test_setup, .fini = lg_test_teardown);

static struct tn_tensor *vec(const char *name, int n, const float *v)
{
    struct tn_tensor *t = tn_new_f32(T, name, 1, (int64_t[]){n});
    cr_assert_not_null(t);
    memcpy(tn_f32(t), v, (size_t)n * sizeof *v);
    t->requires_grad = true;
    return t;
}

static void set_grad(struct tn_tensor *p, const float *g)
{
    if (!p->grad) {
        char name[LG_MAX_NAME];
        snprintf(name, sizeof name, "grad/%s", tn_basename(p));
        p->grad = tn_new_f32(T, name, p->ndim, p->ne);
        cr_assert_not_null(p->grad);
    }
    memcpy(tn_f32(p->grad), g, tn_nbytes(p));
}

/* PyTorch's AdamW, one parameter element, in double */
struct ref {
    double p, m, v;
};
static void ref_step(struct ref *r, double g, int t, const struct opt_adamw_config *c)
{
    r->p *= 1.0 - c->lr * c->weight_decay;
    r->m = c->beta1 * r->m + (1 - c->beta1) * g;
    r->v = c->beta2 * r->v + (1 - c->beta2) * g * g;
    double mhat = r->m / (1 - pow(c->beta1, t)), vhat = r->v / (1 - pow(c->beta2, t));
    r->p -= c->lr * mhat / (sqrt(vhat) + c->eps);
}

static void check_against_hand_computed(double wd)
{
    const struct opt_adamw_config cfg = {
        .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = wd};
    const float p0[4] = {0.5f, -1.0f, 2.0f, 0.0f};
    const float grads[3][4] = {
        {0.1f, -0.2f, 0.3f, 0.0f}, {-0.05f, 0.4f, 0.3f, 1e-3f}, {0.2f, 0.0f, -0.6f, 2.0f}};
    struct tn_tensor *p = vec("varmap/layer.weight", 4, p0);
    struct opt_adamw *opt = NULL;
    cr_assert_eq(opt_adamw_new(&opt, T, &cfg), LG_OK);
    cr_assert_eq(opt_adamw_add(opt, &p, 1), LG_OK);
    struct ref r[4];
    for (int i = 0; i < 4; i++) r[i] = (struct ref){p0[i], 0, 0};
    for (int t = 1; t <= 3; t++) {
        set_grad(p, grads[t - 1]);
        cr_assert_eq(opt_adamw_step(opt), LG_OK);
        for (int i = 0; i < 4; i++) {
            ref_step(&r[i], grads[t - 1][i], t, &cfg);
            cr_assert(fabs(tn_f32(p)[i] - r[i].p) < 2e-6, "step %d elem %d: %.9g vs %.9g", t, i,
                      tn_f32(p)[i], r[i].p);
            cr_assert(fabs(tn_f32(opt_adamw_moment(opt, "layer.weight", 1))[i] - r[i].m) < 1e-7);
            cr_assert(fabs(tn_f32(opt_adamw_moment(opt, "layer.weight", 2))[i] - r[i].v) < 1e-7);
        }
    }
    cr_assert_eq(opt_adamw_steps(opt), 3);
    opt_adamw_free(opt);
    tn_release(p);
}

Test(optim, adamw_matches_hand_computed_updates) { check_against_hand_computed(0.0); }
Test(optim, adamw_with_decoupled_weight_decay) { check_against_hand_computed(0.1); }

Test(optim, weight_decay_is_decoupled_from_the_gradient)
{
    /* zero gradient: Adam's step is 0, only the decay moves the parameter */
    const struct opt_adamw_config cfg = {
        .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.5};
    struct tn_tensor *p = vec("varmap/w", 2, (float[]){2.0f, -4.0f});
    set_grad(p, (float[]){0.0f, 0.0f});
    struct opt_adamw *opt = NULL;
    cr_assert_eq(opt_adamw_new(&opt, T, &cfg), LG_OK);
    cr_assert_eq(opt_adamw_add(opt, &p, 1), LG_OK);
    cr_assert_eq(opt_adamw_step(opt), LG_OK);
    cr_assert_float_eq(tn_f32(p)[0], 2.0f * 0.95f, 1e-6);
    cr_assert_float_eq(tn_f32(p)[1], -4.0f * 0.95f, 1e-6);
    opt_adamw_free(opt);
    tn_release(p);
}

Test(optim, state_is_keyed_by_name_and_tagged)
{
    const struct opt_adamw_config cfg = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    struct tn_tensor *a = vec("varmap/enc.fc1.weight", 3, (float[]){1, 2, 3});
    struct tn_tensor *b = vec("varmap/enc.fc1.bias", 2, (float[]){0, 0});
    struct tn_tensor *ps[2] = {a, b};
    struct opt_adamw *opt = NULL;
    cr_assert_eq(opt_adamw_new(&opt, T, &cfg), LG_OK);
    cr_assert_eq(opt_adamw_add(opt, ps, 2), LG_OK);
    cr_assert_eq(opt_adamw_state_bytes(opt), 2 * (3 + 2) * sizeof(float));
    struct tn_tensor *m = opt_adamw_moment(opt, "enc.fc1.weight", 1);
    cr_assert_not_null(m);
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, m->st->data, tag, sizeof tag));
    cr_assert_str_eq(tag, "adam.m/enc.fc1.weight");
    cr_assert(trk_tag_of(T, opt_adamw_moment(opt, "enc.fc1.weight", 2)->st->data, tag, sizeof tag));
    cr_assert_str_eq(tag, "adam.v/enc.fc1.weight");
    cr_assert_null(opt_adamw_moment(opt, "nope", 1));
    for (int i = 0; i < 3; i++) cr_assert_eq(tn_f32(m)[i], 0.0f, "moments start at zero");

    /* b has no gradient: it is skipped and its bias correction does not advance */
    set_grad(a, (float[]){1, 1, 1});
    cr_assert_eq(opt_adamw_step(opt), LG_OK);
    cr_assert_eq(tn_f32(b)[0], 0.0f);
    cr_assert_float_eq(tn_f32(m)[0], 0.1f, 1e-7);

    /* a reload: a new tensor under the same name keeps the moments */
    struct tn_tensor *a2 = vec("varmap/enc.fc1.weight", 3, (float[]){1, 2, 3});
    cr_assert_eq(opt_adamw_add(opt, &a2, 1), LG_OK);
    cr_assert_eq(opt_adamw_moment(opt, "enc.fc1.weight", 1), m, "same state");
    cr_assert_eq(opt_adamw_state_bytes(opt), 2 * (3 + 2) * sizeof(float), "nothing new allocated");
    set_grad(a2, (float[]){1, 1, 1});
    cr_assert_eq(opt_adamw_step(opt), LG_OK);
    cr_assert_float_eq(tn_f32(m)[0], 0.19f, 1e-7, "second update of the same moments");
    cr_assert_lt(tn_f32(a2)[0], 1.0f, "the new tensor is the one updated");
    cr_assert_float_eq(tn_f32(a)[0], 1.0f - 0.01f, 1e-6,
                       "the old one was left after the first step");

    /* a same-named tensor of another size is refused */
    struct tn_tensor *bad = vec("varmap/enc.fc1.weight", 5, (float[]){0, 0, 0, 0, 0});
    cr_assert_eq(opt_adamw_add(opt, &bad, 1), LG_EINVAL);
    cr_assert(strstr(lg_errmsg(), "enc.fc1.weight has 5 elements, its moments 3"), "%s",
              lg_errmsg());
    cr_assert_eq(opt_adamw_add(opt, (struct tn_tensor *[]){NULL}, 1), LG_EINVAL);
    opt_adamw_set_lr(opt, 0.0);
    float before = tn_f32(a2)[1];
    cr_assert_eq(opt_adamw_step(opt), LG_OK);
    cr_assert_eq(tn_f32(a2)[1], before, "lr 0 moves nothing");
    opt_adamw_free(opt);
    opt_adamw_free(NULL);
    tn_release(a);
    tn_release(a2);
    tn_release(b);
    tn_release(bad);
}

Test(optim, invalid_configuration_is_refused)
{
    struct opt_adamw *opt = (struct opt_adamw *)1;
    cr_assert_eq(opt_adamw_new(
                     &opt, T, &(struct opt_adamw_config){.lr = 1e-3, .beta1 = 1.0, .beta2 = 0.999}),
                 LG_EINVAL);
    cr_assert_null(opt);
    cr_assert(strstr(lg_errmsg(), "AdamW: invalid configuration"), "%s", lg_errmsg());
}

Test(optim, zero_and_free_grads)
{
    struct tn_tensor *p = vec("varmap/w", 3, (float[]){1, 2, 3});
    set_grad(p, (float[]){4, 5, 6});
    opt_zero_grad(&p, 1);
    cr_assert_not_null(p->grad);
    for (int i = 0; i < 3; i++) cr_assert_eq(tn_f32(p->grad)[i], 0.0f);
    opt_free_grads(&p, 1);
    cr_assert_null(p->grad);
    opt_zero_grad(&p, 1); /* nothing to do */
    tn_release(p);
}

Test(optim, clip_grad_norm_scales_above_the_limit)
{
    struct tn_tensor *a = vec("varmap/a", 2, (float[]){0, 0});
    struct tn_tensor *b = vec("varmap/b", 1, (float[]){0});
    struct tn_tensor *c = vec("varmap/c", 1, (float[]){0}); /* no grad: ignored */
    struct tn_tensor *ps[3] = {a, b, c};
    set_grad(a, (float[]){3, 4});
    set_grad(b, (float[]){12});
    double norm = ag_clip_grad_norm(ps, 3, 100.0);
    cr_assert_float_eq(norm, 13.0, 1e-9);
    cr_assert_eq(tn_f32(a->grad)[0], 3.0f, "below the limit: untouched");
    norm = ag_clip_grad_norm(ps, 3, 6.5);
    cr_assert_float_eq(norm, 13.0, 1e-9, "the norm before clipping");
    cr_assert_float_eq(tn_f32(a->grad)[0], 1.5f, 1e-6);
    cr_assert_float_eq(tn_f32(a->grad)[1], 2.0f, 1e-6);
    cr_assert_float_eq(tn_f32(b->grad)[0], 6.0f, 1e-6);
    cr_assert_float_eq(ag_clip_grad_norm(ps, 3, 1.0), 6.5, 1e-5, "the clipped norm");
    float a0 = tn_f32(a->grad)[0];
    cr_assert_float_eq(a0, 1.5f / 6.5f, 1e-6);
    tn_f32(b->grad)[0] = INFINITY;
    cr_assert(isnan(ag_clip_grad_norm(ps, 3, 1.0)), "non-finite gradients give NaN");
    cr_assert_float_eq(tn_f32(a->grad)[0], a0, 0.0, "and are left alone");
    cr_assert_eq(ag_clip_grad_norm(ps, 0, 1.0), 0.0);
    tn_release(a);
    tn_release(b);
    tn_release(c);
}
