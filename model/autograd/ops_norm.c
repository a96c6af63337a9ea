/* ops_norm.c — row-wise ops over the last axis: softmax, the additive attention mask, layer
 * norm. */
#include "ag_impl.h"

static int64_t last_dim(const struct tn_tensor *x) { return x->ndim ? x->ne[x->ndim - 1] : 1; }

/* ---- softmax --------------------------------------------------------------------------------- */

static int softmax_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    int rc = LG_OK;
    float *dx = ag_grad(ctx, nd->in[0], &rc);
    const struct tn_tensor *y = nd->saved[0];
    int64_t n = last_dim(y);
    if (dx) nd->kb->dsoftmax(dx, tn_f32(y), tn_f32(nd->out[0]->grad), n ? tn_numel(y) / n : 0, n);
    return rc;
}

struct tn_tensor *ag_softmax(struct ag_ctx *ctx, struct tn_tensor *x)
{
    const struct kn_backend *kb = ag_begin_f32(ctx, "ag_softmax", 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    struct tn_tensor *y = ag_out(ctx, "softmax", TN_F32, x->device, x->ndim, x->ne);
    if (!y) return NULL;
    int64_t n = last_dim(x);
    kb->softmax(tn_f32(y), tn_f32(x), n ? tn_numel(x) / n : 0, n);
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *nd = ag_record(ctx, "ag_softmax", softmax_backward, kb, 1, &x, 1, &y, 0);
        if (!nd) return NULL;
        ag_save(nd, 0, y);
    }
    return y;
}

/* ---- additive mask --------------------------------------------------------------------------- */

static int mask_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    return ag_grad_axpy(ctx, nd->kb, nd->in[0], tn_f32(nd->out[0]->grad), 1.0f);
}

struct tn_tensor *ag_add_mask(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *mask)
{
    struct tn_tensor *in[2] = {x, mask};
    const struct kn_backend *kb =
        ag_begin_f32(ctx, "ag_add_mask", 2, in, (const char *[]){"x", "mask"});
    if (!kb) return NULL;
    int nd;
    int64_t ne[TN_MAX_DIMS];
    bool ok = ag_broadcast_shape(x, mask, &nd, ne) && nd == x->ndim;
    for (int k = 0; ok && k < nd; k++) ok = ne[k] == x->ne[k];
    if (!ok)
        return ag_fail(ctx, LG_EINVAL, "ag_add_mask: mask %s does not broadcast over x %s",
                       AG_SHAPE(mask), AG_SHAPE(x));
    struct kn_geom g;
    ag_geom_of(&g, nd, ne, x, mask);
    struct tn_tensor *y = ag_out(ctx, "mask", TN_F32, x->device, x->ndim, x->ne);
    if (!y) return NULL;
    kb->binary(tn_f32(y), tn_f32(x), tn_f32(mask), KN_ADD, &g);
    /* the mask is a constant: only x is an input of the node */
    if (ag_wants_grad(ctx, 1, &x) &&
        !ag_record(ctx, "ag_add_mask", mask_backward, kb, 1, &x, 1, &y, 0))
        return NULL;
    return y;
}

/* ---- layer norm ------------------------------------------------------------------------------ */

static int layernorm_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    struct tn_tensor *x = nd->in[0], *w = nd->in[1], *b = nd->in[2];
    int rc = LG_OK;
    float *dx = ag_grad(ctx, x, &rc), *dw = rc ? NULL : ag_grad(ctx, w, &rc),
          *db = rc ? NULL : ag_grad(ctx, b, &rc);
    if (rc) return rc;
    int64_t n = last_dim(x), rows = n ? tn_numel(x) / n : 0;
    const float *stats = tn_f32(nd->saved[0]);
    nd->kb->dlayernorm(dx, dw, db, tn_f32(nd->out[0]->grad), tn_f32(x), stats, stats + rows,
                       tn_f32(w), rows, n);
    return LG_OK;
}

struct tn_tensor *ag_layernorm(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *w,
                               struct tn_tensor *b, float eps)
{
    struct tn_tensor *in[3] = {x, w, b};
    const struct kn_backend *kb =
        ag_begin_f32(ctx, "ag_layernorm", 3, in, (const char *[]){"x", "w", "b"});
    if (!kb) return NULL;
    int64_t n = last_dim(x);
    if (w->ndim != 1 || b->ndim != 1 || w->ne[0] != n || b->ne[0] != n || n == 0)
        return ag_fail(ctx, LG_EINVAL, "ag_layernorm: w %s and b %s must be [%lld] for x %s",
                       AG_SHAPE(w), AG_SHAPE(b), (long long)n, AG_SHAPE(x));
    int64_t rows = tn_numel(x) / n;
    struct tn_tensor *y = ag_out(ctx, "layernorm", TN_F32, x->device, x->ndim, x->ne);
    struct tn_tensor *stats =
        y ? ag_out(ctx, "layernorm.stats", TN_F32, x->device, 2, (int64_t[]){2, rows}) : NULL;
    if (!stats) return NULL;
    float *st = tn_f32(stats);
    kb->layernorm(tn_f32(y), st, st + rows, tn_f32(x), tn_f32(w), tn_f32(b), rows, n, eps);
    if (ag_wants_grad(ctx, 3, in)) {
        struct ag_node *nd =
            ag_record(ctx, "ag_layernorm", layernorm_backward, kb, 3, in, 1, &y, 0);
        if (!nd) return NULL;
        ag_save(nd, 0, stats); /* mean and 1/σ per row; x is retained as an input */
    }
    return y;
}
