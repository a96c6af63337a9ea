/* ops_shape.c — ops that move data without arithmetic: reshape (a view), concat, slice,
 * split, stack, permute, expand. Block copies are copy2d/dcopy2d kernels; permute and expand
 * are strided gathers whose backward scatters (and sums where expand broadcast). */
#include <stdio.h>
#include <string.h>

#include "ag_impl.h"

static char *dims_str(int ndim, const int64_t *ne, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)ne[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
    return buf;
}
#define DIMS(nd, ne) dims_str((nd), (ne), (char[80]){0}, 80)

static int64_t prod(const int64_t *ne, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= ne[i];
    return p;
}

/* ---- views: reshape -------------------------------------------------------------------------- */

/* A view's gradient is usually a view of its input's (ag_grad): then everything is in place. */
int ag_view_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    struct tn_tensor *x = nd->in[0], *g = nd->out[0]->grad;
    if (x->grad && g->st == x->grad->st) return LG_OK;
    return ag_grad_axpy(ctx, nd->kb, x, tn_f32(g), 1.0f);
}

/* Context-owned view. */
struct tn_tensor *ag_view(struct ag_ctx *ctx, struct tn_tensor *x, int ndim, const int64_t *shape,
                          const char *name)
{
    const struct kn_backend *kb = ag_kernels(ctx, "ag_reshape", 1, &x);
    if (!kb) return NULL;
    char tag[LG_MAX_NAME];
    ag_act_name(ctx, name, tag, sizeof tag);
    struct tn_tensor *v = ag_own(ctx, tn_reshape_pooled(ctx->pool, x, ndim, shape, tag));
    if (!v) return ctx->err ? NULL : ag_fail(ctx, lg_errcode(), "ag_reshape: %s", lg_errmsg());
    if (ag_wants_grad(ctx, 1, &x) &&
        !ag_record(ctx, "ag_reshape", ag_view_backward, kb, 1, &x, 1, &v, 0))
        return NULL;
    return v;
}

struct tn_tensor *ag_reshape(struct ag_ctx *ctx, struct tn_tensor *x, int ndim,
                             const int64_t *shape)
{
    if (!ag_inputs_ok(ctx, "ag_reshape", 1, &x)) return NULL;
    if (ndim < 1 || ndim > TN_MAX_DIMS)
        return ag_fail(ctx, LG_EINVAL, "ag_reshape: %d dimensions (1 to %d)", ndim, TN_MAX_DIMS);
    int64_t n = prod(shape, 0, ndim);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) n = -1;
    if (n != tn_numel(x))
        return ag_fail(ctx, LG_EINVAL, "ag_reshape: x %s (%lld elements) cannot take the shape %s",
                       AG_SHAPE(x), (long long)tn_numel(x), DIMS(ndim, shape));
    return ag_view(ctx, x, ndim, shape, "reshape");
}

/* ---- block copies: concat, slice, split, stack ----------------------------------------------- */

/* ia[0] rows, ia[1] the output's row length; extra holds n + 1 column offsets: input k filled
 * columns [off[k], off[k+1]) of every row. */
static int blocks_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    const int64_t *off = nd->extra, outer = nd->ia[0], ld = nd->ia[1];
    const float *dy = tn_f32(nd->out[0]->grad);
    for (int k = 0; k < nd->nin; k++) {
        int rc = LG_OK;
        bool fresh;
        int64_t w = off[k + 1] - off[k];
        float *dx = ag_grad_w(ctx, nd->in[k], &fresh, &rc);
        if (rc) return rc;
        if (fresh) /* the block covers all of x */
            nd->kb->copy2d(dx, dy + off[k], outer, w, w, ld);
        else if (dx)
            nd->kb->dcopy2d(dx, dy + off[k], outer, w, w, ld);
    }
    return LG_OK;
}

/* out rows of length ld = Σ widths; input k fills columns [off[k], off[k+1]) of each row. */
static struct tn_tensor *blocks(struct ag_ctx *ctx, const char *op, const char *name,
                                const struct kn_backend *kb, struct tn_tensor **xs, int n,
                                int64_t outer, const int64_t *width, int ndim, const int64_t *shape)
{
    struct tn_tensor *y = ag_out(ctx, name, TN_F32, xs[0]->device, ndim, shape);
    if (!y) return NULL;
    int64_t ld = 0;
    for (int k = 0; k < n; k++) ld += width[k];
    for (int64_t k = 0, off = 0; k < n; off += width[k], k++)
        kb->copy2d(tn_f32(y) + off, tn_f32(xs[k]), outer, width[k], ld, width[k]);
    if (ag_wants_grad(ctx, n, xs)) {
        struct ag_node *nd = ag_record(ctx, op, blocks_backward, kb, n, xs, 1, &y,
                                       (size_t)(n + 1) * sizeof(int64_t));
        if (!nd) return NULL;
        ag_set_ia(nd, 2, (const int64_t[]){outer, ld});
        int64_t *off = nd->extra;
        for (int k = 0; k < n; k++) off[k + 1] = off[k] + width[k];
    }
    return y;
}

struct tn_tensor *ag_concat(struct ag_ctx *ctx, struct tn_tensor **xs, int n, int axis)
{
    if (n < 1) return ag_fail(ctx, LG_EINVAL, "ag_concat: no inputs");
    if (!ag_inputs_ok(ctx, "ag_concat", n, xs)) return NULL;
    const struct kn_backend *kb = ag_kernels(ctx, "ag_concat", n, xs);
    if (!kb) return NULL;
    int ax = ag_axis(axis, xs[0]->ndim);
    if (ax < 0)
        return ag_fail(ctx, LG_EINVAL, "ag_concat: axis %d outside x1 %s", axis, AG_SHAPE(xs[0]));
    int64_t shape[TN_MAX_DIMS], width_small[16], *width = width_small;
    memcpy(shape, xs[0]->ne, sizeof shape);
    shape[ax] = 0;
    if (n > 16 && !(width = trk_alloc(ctx->trk, (size_t)n * sizeof *width, "meta/ag_concat")))
        return ag_fail(ctx, LG_ENOMEM, "ag_concat: out of memory for %d inputs", n);
    struct tn_tensor *y = NULL;
    int64_t inner = prod(xs[0]->ne, ax + 1, xs[0]->ndim);
    for (int k = 0; k < n; k++) {
        bool ok = xs[k]->ndim == xs[0]->ndim && ag_check_f32(ctx, "ag_concat", "an input", xs[k]);
        for (int i = 0; ok && i < xs[0]->ndim; i++) ok = i == ax || xs[k]->ne[i] == xs[0]->ne[i];
        if (!ok) {
            ag_fail(ctx, LG_EINVAL, "ag_concat: x%d %s does not match x1 %s outside axis %d", k + 1,
                    AG_SHAPE(xs[k]), AG_SHAPE(xs[0]), ax);
            goto cleanup;
        }
        shape[ax] += xs[k]->ne[ax];
        width[k] = xs[k]->ne[ax] * inner;
    }
    y = blocks(ctx, "ag_concat", "concat", kb, xs, n, prod(shape, 0, ax), width, xs[0]->ndim,
               shape);
cleanup:
    if (width != width_small) trk_free(ctx->trk, width);
    return y;
}

static int slice_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    int rc = LG_OK;
    float *dx = ag_grad(ctx, nd->in[0], &rc);
    if (dx)
        nd->kb->dcopy2d(dx + nd->ia[1], tn_f32(nd->out[0]->grad), nd->ia[0], nd->ia[2], nd->ia[3],
                        nd->ia[2]);
    return rc;
}

struct tn_tensor *ag_slice(struct ag_ctx *ctx, struct tn_tensor *x, int axis, int64_t start,
                           int64_t len)
{
    const struct kn_backend *kb = ag_begin_f32(ctx, "ag_slice", 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    int ax = ag_axis(axis, x->ndim);
    if (ax < 0 || start < 0 || len < 0 || start + len > x->ne[ax])
        return ag_fail(ctx, LG_EINVAL, "ag_slice: [%lld, %lld) along axis %d outside x %s",
                       (long long)start, (long long)(start + len), axis, AG_SHAPE(x));
    int64_t shape[TN_MAX_DIMS];
    memcpy(shape, x->ne, sizeof shape);
    shape[ax] = len;
    struct tn_tensor *y = ag_out(ctx, "slice", TN_F32, x->device, x->ndim, shape);
    if (!y) return NULL;
    int64_t inner = prod(x->ne, ax + 1, x->ndim), outer = prod(x->ne, 0, ax);
    int64_t off = start * inner, w = len * inner, ld = x->ne[ax] * inner;
    kb->copy2d(tn_f32(y), tn_f32(x) + off, outer, w, w, ld);
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *nd = ag_record(ctx, "ag_slice", slice_backward, kb, 1, &x, 1, &y, 0);
        if (!nd) return NULL;
        ag_set_ia(nd, 4, (const int64_t[]){outer, off, w, ld});
    }
    return y;
}

/* ia: 0 rows, 1 part width, 2 row length of x. All parts reached: a new dx is written block by
 * block; a part without a gradient contributes zeros. */
static int split_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    int64_t outer = nd->ia[0], w = nd->ia[1], ld = nd->ia[2];
    bool all = true, fresh = false;
    for (int k = 0; k < nd->nout; k++) all &= nd->out[k]->grad != NULL;
    int rc = LG_OK;
    float *dx = all ? ag_grad_w(ctx, nd->in[0], &fresh, &rc) : ag_grad(ctx, nd->in[0], &rc);
    if (!dx) return rc;
    for (int k = 0; k < nd->nout; k++) {
        struct tn_tensor *g = nd->out[k]->grad;
        if (fresh)
            nd->kb->copy2d(dx + k * w, tn_f32(g), outer, w, ld, w);
        else if (g)
            nd->kb->dcopy2d(dx + k * w, tn_f32(g), outer, w, ld, w);
    }
    return LG_OK;
}

int ag_split(struct ag_ctx *ctx, struct tn_tensor *x, int axis, int n, struct tn_tensor **out)
{
    for (int k = 0; k < n; k++) out[k] = NULL;
    if (!ag_inputs_ok(ctx, "ag_split", 1, &x)) return ctx->err;
    int ax = ag_axis(axis, x->ndim);
    if (n < 1 || ax < 0 || x->ne[ax] % n != 0) {
        ag_fail(ctx, LG_EINVAL, "ag_split: x %s cannot be split in %d equal parts along axis %d",
                AG_SHAPE(x), n, axis);
        return ctx->err;
    }
    int64_t len = x->ne[ax] / n;
    if (n > AG_MAX_OUT) { /* more parts than a node has outputs: one slice each */
        for (int k = 0; k < n; k++)
            if (!(out[k] = ag_slice(ctx, x, ax, k * len, len))) goto fail;
        return LG_OK;
    }
    const struct kn_backend *kb = ag_kernels(ctx, "ag_split", 1, &x);
    if (!kb || !ag_check_f32(ctx, "ag_split", "x", x)) goto fail;
    int64_t shape[TN_MAX_DIMS];
    memcpy(shape, x->ne, sizeof shape);
    shape[ax] = len;
    int64_t inner = prod(x->ne, ax + 1, x->ndim), outer = prod(x->ne, 0, ax);
    int64_t w = len * inner, ld = x->ne[ax] * inner;
    for (int k = 0; k < n; k++) {
        if (!(out[k] = ag_out(ctx, "split", TN_F32, x->device, x->ndim, shape))) goto fail;
        kb->copy2d(tn_f32(out[k]), tn_f32(x) + k * w, outer, w, w, ld);
    }
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *nd = ag_record(ctx, "ag_split", split_backward, kb, 1, &x, n, out, 0);
        if (!nd) goto fail;
        ag_set_ia(nd, 3, (const int64_t[]){outer, w, ld});
    }
    return LG_OK;
fail:
    for (int k = 0; k < n; k++) out[k] = NULL; /* made parts are temporaries: freed at reset */
    return ctx->err;
}

struct tn_tensor *ag_stack(struct ag_ctx *ctx, struct tn_tensor **xs, int n, int axis)
{
    if (n < 1) return ag_fail(ctx, LG_EINVAL, "ag_stack: no inputs");
    if (!ag_inputs_ok(ctx, "ag_stack", n, xs)) return NULL;
    const struct kn_backend *kb = ag_kernels(ctx, "ag_stack", n, xs);
    if (!kb) return NULL;
    int nd = xs[0]->ndim + 1, ax = ag_axis(axis, nd);
    if (nd > TN_MAX_DIMS || ax < 0)
        return ag_fail(ctx, LG_EINVAL, "ag_stack: cannot stack x1 %s along a new axis %d",
                       AG_SHAPE(xs[0]), axis);
    for (int k = 0; k < n; k++)
        if (!tn_same_shape(xs[k], xs[0]) || !ag_check_f32(ctx, "ag_stack", "an input", xs[k]))
            return ag_fail(ctx, LG_EINVAL, "ag_stack: x%d %s differs from x1 %s", k + 1,
                           AG_SHAPE(xs[k]), AG_SHAPE(xs[0]));
    int64_t shape[TN_MAX_DIMS];
    for (int i = 0, j = 0; i < nd; i++) shape[i] = i == ax ? n : xs[0]->ne[j++];
    int64_t inner = prod(xs[0]->ne, ax, xs[0]->ndim), width_small[16], *width = width_small;
    if (n > 16 && !(width = trk_alloc(ctx->trk, (size_t)n * sizeof *width, "meta/ag_stack")))
        return ag_fail(ctx, LG_ENOMEM, "ag_stack: out of memory for %d inputs", n);
    for (int k = 0; k < n; k++) width[k] = inner;
    struct tn_tensor *y =
        blocks(ctx, "ag_stack", "stack", kb, xs, n, prod(xs[0]->ne, 0, ax), width, nd, shape);
    if (width != width_small) trk_free(ctx->trk, width);
    return y;
}

/* ---- strided gathers: permute, expand -------------------------------------------------------- */

/* extra: the forward geometry, then (permute only, ia[0] = 1) the inverse permutation's */
static int gather_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    int rc = LG_OK;
    bool fresh;
    const struct kn_geom *g = nd->extra;
    const float *dy = tn_f32(nd->out[0]->grad);
    float *dx = nd->ia[0] ? ag_grad_w(ctx, nd->in[0], &fresh, &rc) : ag_grad(ctx, nd->in[0], &rc);
    if (dx && nd->ia[0] && fresh)
        nd->kb->gather(dx, dy, g + 1); /* a permutation's gradient is the inverse permutation */
    else if (dx)
        nd->kb->dgather(dx, dy, 1.0f, g);
    return rc;
}

static struct tn_tensor *gather(struct ag_ctx *ctx, const char *op, const char *name,
                                const struct kn_backend *kb, struct tn_tensor *x, int nd,
                                const int64_t *shape, const struct kn_geom *g,
                                const struct kn_geom *inverse)
{
    struct tn_tensor *y = ag_out(ctx, name, TN_F32, x->device, nd, shape);
    if (!y) return NULL;
    kb->gather(tn_f32(y), tn_f32(x), g);
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *n = ag_record(ctx, op, gather_backward, kb, 1, &x, 1, &y, 2 * sizeof *g);
        if (!n) return NULL;
        struct kn_geom *ng = n->extra;
        ng[0] = *g;
        if (inverse) ng[1] = *inverse;
        n->ia[0] = inverse != NULL;
    }
    return y;
}

struct tn_tensor *ag_permute(struct ag_ctx *ctx, struct tn_tensor *x, const int *perm)
{
    const struct kn_backend *kb = ag_begin_f32(ctx, "ag_permute", 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    int nd = x->ndim, seen = 0;
    int64_t xs[TN_MAX_DIMS], shape[TN_MAX_DIMS], sa[TN_MAX_DIMS], ys[TN_MAX_DIMS],
        sinv[TN_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        if (perm[i] < 0 || perm[i] >= nd || (seen & (1 << perm[i])))
            return ag_fail(ctx, LG_EINVAL, "ag_permute: not a permutation of the %d axes of x %s",
                           nd, AG_SHAPE(x));
        seen |= 1 << perm[i];
        shape[i] = x->ne[perm[i]];
    }
    for (int64_t i = nd - 1, s = 1; i >= 0; s *= x->ne[i], i--) xs[i] = s;
    for (int64_t i = nd - 1, s = 1; i >= 0; s *= shape[i], i--) ys[i] = s;
    for (int i = 0; i < nd; i++) {
        sa[i] = shape[i] == 1 ? 0 : xs[perm[i]];   /* y[i…] reads x */
        sinv[perm[i]] = shape[i] == 1 ? 0 : ys[i]; /* x[j…] reads y (the inverse) */
    }
    struct kn_geom g, inv;
    ag_geom_init(&g, nd, shape, sa, NULL);
    ag_geom_init(&inv, nd, x->ne, sinv, NULL);
    return gather(ctx, "ag_permute", "permute", kb, x, nd, shape, &g, &inv);
}

struct tn_tensor *ag_expand(struct ag_ctx *ctx, struct tn_tensor *x, int ndim, const int64_t *shape)
{
    const struct kn_backend *kb = ag_begin_f32(ctx, "ag_expand", 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    bool ok = ndim >= x->ndim && ndim <= TN_MAX_DIMS;
    for (int k = 0; ok && k < ndim; k++) {
        int kx = k - (ndim - x->ndim);
        ok = shape[k] >= 0 && (kx < 0 || x->ne[kx] == shape[k] || x->ne[kx] == 1);
    }
    if (!ok)
        return ag_fail(ctx, LG_EINVAL, "ag_expand: x %s cannot be broadcast to %s", AG_SHAPE(x),
                       DIMS(ndim, shape));
    struct kn_geom g;
    ag_geom_of(&g, ndim, shape, x, NULL);
    return gather(ctx, "ag_expand", "expand", kb, x, ndim, shape, &g, NULL);
}
