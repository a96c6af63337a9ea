/* ops_embed.c — embedding lookup: rows of W picked by integer indices; the backward
 * scatter-adds, so an index that repeats collects every row's gradient. */
#include "ag_impl.h"

static int embedding_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    struct tn_tensor *w = nd->in[0], *idx = nd->in[1];
    int rc = LG_OK;
    float *dw = ag_grad(ctx, w, &rc);
    if (dw) nd->kb->dembedding(dw, tn_f32(nd->out[0]->grad), tn_i32(idx), tn_numel(idx), w->ne[1]);
    return rc;
}

struct tn_tensor *ag_embedding(struct ag_ctx *ctx, struct tn_tensor *w, struct tn_tensor *idx)
{
    struct tn_tensor *in[2] = {w, idx};
    if (!ag_inputs_ok(ctx, "ag_embedding", 2, in)) return NULL;
    const struct kn_backend *kb = ag_kernels(ctx, "ag_embedding", 2, in);
    if (!kb || !ag_check_f32(ctx, "ag_embedding", "weight", w)) return NULL;
    if (idx->dtype != TN_I32)
        return ag_fail(ctx, LG_EINVAL, "ag_embedding: indices %s are %s, expected I32", idx->name,
                       tn_dtype_name(idx->dtype));
    if (w->ndim != 2 || idx->ndim + 1 > TN_MAX_DIMS)
        return ag_fail(ctx, LG_EINVAL,
                       "ag_embedding: weight %s must be [card, H], indices %s at "
                       "most %d-D",
                       AG_SHAPE(w), AG_SHAPE(idx), TN_MAX_DIMS - 1);
    int64_t n = tn_numel(idx), card = w->ne[0], h = w->ne[1];
    if (idx->device == TN_CPU) {
        const int32_t *p = tn_i32(idx);
        for (int64_t i = 0; i < n; i++)
            if (p[i] < 0 || p[i] >= card)
                return ag_fail(ctx, LG_EINVAL,
                               "ag_embedding: index %d at position %lld outside [0, %lld) of %s",
                               p[i], (long long)i, (long long)card, w->name);
    }
    int64_t shape[TN_MAX_DIMS];
    for (int i = 0; i < idx->ndim; i++) shape[i] = idx->ne[i];
    shape[idx->ndim] = h;
    struct tn_tensor *y = ag_out(ctx, "embedding", TN_F32, w->device, idx->ndim + 1, shape);
    if (!y) return NULL;
    kb->embedding(tn_f32(y), tn_f32(w), tn_i32(idx), n, h);
    if (ag_wants_grad(ctx, 1, &w) &&
        !ag_record(ctx, "ag_embedding", embedding_backward, kb, 2, in, 1, &y, 0))
        return NULL;
    return y;
}
