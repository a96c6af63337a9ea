/* lg_test_model.c — tensors for the model's tests (see lg_test_model.h). */
#include "lg_test_model.h"

static struct tn_tensor *new_leaf(const char *name, int nd, const int64_t *shape)
{
    struct tn_tensor *t = tn_new_f32(T, name, nd, shape);
    cr_assert_not_null(t, "%s: %s", name, lg_errmsg());
    t->requires_grad = true;
    return t;
}

struct tn_tensor *lg_leaf(const char *name, int nd, const int64_t *shape, struct tn_rng *r,
                          float std)
{
    struct tn_tensor *t = new_leaf(name, nd, shape);
    tn_fill_normal(t, r, 0.0f, std);
    return t;
}

struct tn_tensor *lg_leaf_uniform(const char *name, int nd, const int64_t *shape, struct tn_rng *r,
                                  float scale)
{
    struct tn_tensor *t = new_leaf(name, nd, shape);
    tn_fill_uniform(t, r, -scale, scale);
    return t;
}
