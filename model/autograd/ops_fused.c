/* ops_fused.c — blocks of the TFT as single ops, each what a chain of simpler ops computes
 * (the same arithmetic, in the same order), without the chain's intermediate tensors and
 * passes over memory:
 *   ag_gate_add_norm   LN(skip + a ⊙ σ(g)) for z = [a, g]: split, sigmoid, mul, add, layernorm
 *   ag_weighted_sum    Σ_j v[..., j] · x_j: stack, reshape, mul, sum
 * Their finite-difference checks are in tests/reference/test_gradcheck.c, and the unit tests
 * compare them with the chains they replace. */
#include "ag_impl.h"

/* ---- gate-add-norm --------------------------------------------------------------------------- */

/* in: z, skip, w, b; saved: 0 the sum s [rows, d] and, after it, the row statistics [2, rows]
 * (one allocation) */
static int gate_add_norm_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    struct tn_tensor *z = nd->in[0], *skip = nd->in[1], *w = nd->in[2], *b = nd->in[3];
    int64_t d = nd->ia[0], rows = nd->ia[1];
    int rc = LG_OK;
    bool fz = false;
    float *dz = ag_grad_w(ctx, z, &fz, &rc), *dskip = rc ? NULL : ag_grad(ctx, skip, &rc);
    float *dw = rc ? NULL : ag_grad(ctx, w, &rc), *db = rc ? NULL : ag_grad(ctx, b, &rc);
    if (rc) {
        if (fz && dz) nd->kb->zero(dz, tn_numel(z)); /* never leave a new gradient unwritten */
        return rc;
    }
    const float *sum = tn_f32(nd->saved[0]), *stats = sum + rows * d;
    nd->kb->dgate_add_norm(dz, dskip, dw, db, tn_f32(nd->out[0]->grad), tn_f32(z), sum, stats,
                           stats + rows, tn_f32(w), rows, d, !fz);
    return LG_OK;
}

struct tn_tensor *ag_gate_add_norm(struct ag_ctx *ctx, struct tn_tensor *z, struct tn_tensor *skip,
                                   struct tn_tensor *w, struct tn_tensor *b, float eps)
{
    static const char *const op = "ag_gate_add_norm";
    struct tn_tensor *in[4] = {z, skip, w, b};
    const struct kn_backend *kb =
        ag_begin_f32(ctx, op, 4, in, (const char *[]){"z", "skip", "w", "b"});
    if (!kb) return NULL;
    int64_t d = skip->ndim ? skip->ne[skip->ndim - 1] : 0;
    bool ok = d > 0 && z->ndim == skip->ndim && z->ne[z->ndim - 1] == 2 * d;
    for (int i = 0; ok && i < z->ndim - 1; i++) ok = z->ne[i] == skip->ne[i];
    if (!ok)
        return ag_fail(ctx, LG_EINVAL, "%s: z %s must be skip %s with a last axis twice as long",
                       op, AG_SHAPE(z), AG_SHAPE(skip));
    if (w->ndim != 1 || b->ndim != 1 || w->ne[0] != d || b->ne[0] != d)
        return ag_fail(ctx, LG_EINVAL, "%s: w %s and b %s must be [%lld]", op, AG_SHAPE(w),
                       AG_SHAPE(b), (long long)d);
    int64_t rows = tn_numel(skip) / d;
    struct tn_tensor *y = ag_out(ctx, "gate_add_norm", TN_F32, z->device, skip->ndim, skip->ne);
    struct tn_tensor *s =
        y ? ag_out(ctx, "gate_add_norm.sum", TN_F32, z->device, 1, (int64_t[]){rows * (d + 2)})
          : NULL;
    if (!s) return NULL;
    float *st = tn_f32(s) + rows * d;
    kb->gate_add_norm(tn_f32(y), tn_f32(s), st, st + rows, tn_f32(z), tn_f32(skip), tn_f32(w),
                      tn_f32(b), rows, d, eps);
    if (ag_wants_grad(ctx, 4, in)) {
        struct ag_node *nd = ag_record(ctx, op, gate_add_norm_backward, kb, 4, in, 1, &y, 0);
        if (!nd) return NULL;
        ag_set_ia(nd, 2, (const int64_t[]){d, rows});
        ag_save(nd, 0, s);
    }
    return y;
}

/* ---- weighted sum ---------------------------------------------------------------------------- */

/* in: x_0 … x_{n-1}, v; ia: 0 n, 1 rows, 2 h */
static int weighted_sum_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    int64_t n = nd->ia[0], rows = nd->ia[1], h = nd->ia[2];
    struct tn_tensor *v = nd->in[n];
    const float *dy = tn_f32(nd->out[0]->grad);
    int rc = LG_OK;
    float *dv = ag_grad(ctx, v, &rc);
    if (rc) return rc;
    for (int64_t j = 0; j < n; j++) {
        float *dx = ag_grad(ctx, nd->in[j], &rc);
        if (rc) return rc;
        if (dx || dv)
            nd->kb->dweighted_add(dx, dv, dy, tn_f32(nd->in[j]), tn_f32(v), j, n, rows, h);
    }
    return LG_OK;
}

struct tn_tensor *ag_weighted_sum(struct ag_ctx *ctx, struct tn_tensor **xs, int n,
                                  struct tn_tensor *v)
{
    static const char *const op = "ag_weighted_sum";
    if (n < 1) return ag_fail(ctx, LG_EINVAL, "%s: no inputs", op);
    if (!ag_inputs_ok(ctx, op, n, xs) || !ag_inputs_ok(ctx, op, 1, &v)) return NULL;
    const struct kn_backend *kb = ag_kernels(ctx, op, n, xs);
    if (!kb || !ag_kernels(ctx, op, 1, &v) || !ag_check_f32(ctx, op, "v", v)) return NULL;
    if (v->device != xs[0]->device)
        return ag_fail(ctx, LG_EINVAL, "%s: inputs on different devices (%s)", op, v->name);
    struct tn_tensor *x0 = xs[0];
    bool ok = x0->ndim >= 1 && v->ndim == x0->ndim && v->ne[v->ndim - 1] == n;
    for (int i = 0; ok && i < x0->ndim - 1; i++) ok = v->ne[i] == x0->ne[i];
    if (!ok)
        return ag_fail(ctx, LG_EINVAL, "%s: v %s must be x1 %s with a last axis of %d", op,
                       AG_SHAPE(v), AG_SHAPE(x0), n);
    for (int j = 0; j < n; j++)
        if (!tn_same_shape(xs[j], x0) || !ag_check_f32(ctx, op, "an input", xs[j]))
            return ag_fail(ctx, LG_EINVAL, "%s: x%d %s differs from x1 %s", op, j + 1,
                           AG_SHAPE(xs[j]), AG_SHAPE(x0));
    int64_t h = x0->ne[x0->ndim - 1], rows = h ? tn_numel(x0) / h : 0;
    struct tn_tensor *y = ag_out(ctx, "weighted_sum", TN_F32, x0->device, x0->ndim, x0->ne);
    if (!y) return NULL;
    for (int j = 0; j < n; j++)
        kb->weighted_add(tn_f32(y), tn_f32(xs[j]), tn_f32(v), j, n, rows, h, j > 0);
    struct tn_tensor *in_small[17], **in = in_small;
    if (n + 1 > 17 &&
        !(in = trk_alloc(ag_tracker(ctx), (size_t)(n + 1) * sizeof *in, "meta/ag_weighted_sum")))
        return ag_fail(ctx, LG_ENOMEM, "%s: out of memory for %d inputs", op, n);
    for (int j = 0; j < n; j++) in[j] = xs[j];
    in[n] = v;
    struct tn_tensor *ret = y;
    if (ag_wants_grad(ctx, n + 1, in)) {
        struct ag_node *nd = ag_record(ctx, op, weighted_sum_backward, kb, n + 1, in, 1, &y, 0);
        if (!nd)
            ret = NULL;
        else
            ag_set_ia(nd, 3, (const int64_t[]){n, rows, h});
    }
    if (in != in_small) trk_free(ag_tracker(ctx), in);
    return ret;
}
