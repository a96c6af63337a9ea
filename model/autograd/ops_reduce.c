/* ops_reduce.c — sums and means over one axis, and the sum of everything. */
#include "ag_impl.h"

/* ia: 0 outer, 1 n, 2 inner; fa[0] the scale (1 for sum, 1/n for mean) */
static int reduce_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    int rc = LG_OK;
    bool fresh;
    int64_t outer = nd->ia[0], n = nd->ia[1], inner = nd->ia[2];
    float alpha = nd->fa[0], *dx = ag_grad_w(ctx, nd->in[0], &fresh, &rc);
    const float *dy = tn_f32(nd->out[0]->grad);
    if (fresh) { /* dx = alpha·dy broadcast back over the reduced axis */
        struct kn_geom g;
        ag_geom_init(&g, 3, (int64_t[]){outer, n, inner}, (int64_t[]){inner, 0, 1}, NULL);
        nd->kb->gather(dx, dy, &g);
        if (alpha != 1.0f) nd->kb->scale(dx, dx, alpha, outer * n * inner);
    } else if (dx) {
        nd->kb->dsum_axis(dx, dy, outer, n, inner, alpha);
    }
    return rc;
}

/* y [shape] = alpha·Σ_k x[o, k, i] over x viewed as [outer, n, inner]. */
static struct tn_tensor *reduce_core(struct ag_ctx *ctx, const char *op, const char *name,
                                     const struct kn_backend *kb, struct tn_tensor *x,
                                     int64_t outer, int64_t n, int64_t inner, float alpha, int nd,
                                     const int64_t *shape)
{
    struct tn_tensor *y = ag_out(ctx, name, TN_F32, x->device, nd, shape);
    if (!y) return NULL;
    kb->sum_axis(tn_f32(y), tn_f32(x), outer, n, inner, alpha);
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *node = ag_record(ctx, op, reduce_backward, kb, 1, &x, 1, &y, 0);
        if (!node) return NULL;
        ag_set_ia(node, 3, (const int64_t[]){outer, n, inner});
        node->fa[0] = alpha;
    }
    return y;
}

static struct tn_tensor *reduce(struct ag_ctx *ctx, const char *op, const char *name,
                                struct tn_tensor *x, int axis, bool keepdim, bool mean)
{
    const struct kn_backend *kb = ag_begin_f32(ctx, op, 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    int ax = ag_axis(axis, x->ndim);
    if (ax < 0) return ag_fail(ctx, LG_EINVAL, "%s: axis %d outside x %s", op, axis, AG_SHAPE(x));
    int64_t outer = 1, inner = 1, n = x->ne[ax], shape[TN_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i < ax) outer *= x->ne[i];
        if (i > ax) inner *= x->ne[i];
        if (i != ax || keepdim) shape[nd++] = i == ax ? 1 : x->ne[i];
    }
    if (nd == 0) shape[nd++] = 1; /* a 1-D x reduced whole: [1] */
    float alpha = mean ? (n ? 1.0f / (float)n : 0.0f) : 1.0f;
    return reduce_core(ctx, op, name, kb, x, outer, n, inner, alpha, nd, shape);
}

struct tn_tensor *ag_sum(struct ag_ctx *ctx, struct tn_tensor *x, int axis, bool keepdim)
{
    return reduce(ctx, "ag_sum", "sum", x, axis, keepdim, false);
}

struct tn_tensor *ag_mean(struct ag_ctx *ctx, struct tn_tensor *x, int axis, bool keepdim)
{
    return reduce(ctx, "ag_mean", "mean", x, axis, keepdim, true);
}

struct tn_tensor *ag_sum_all(struct ag_ctx *ctx, struct tn_tensor *x)
{
    const struct kn_backend *kb = ag_begin_f32(ctx, "ag_sum_all", 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    return reduce_core(ctx, "ag_sum_all", "sum_all", kb, x, 1, tn_numel(x), 1, 1.0f, 1,
                       (int64_t[]){1});
}
