/* ops_loss.c — the quantile (pinball) loss and fake quantisation for QAT. */
#include <string.h>

#include "ag_impl.h"
#include "tn_device.h"

/* ---- pinball loss ---------------------------------------------------------------------------- */

/* ia: 0 rows (B·T), 1 nq; saved[0] the quantiles */
static int pinball_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    struct tn_tensor *yhat = nd->in[0], *y = nd->in[1];
    int rc = LG_OK;
    float *dyhat = ag_grad(ctx, yhat, &rc), *dy = rc ? NULL : ag_grad(ctx, y, &rc);
    if (rc) return rc;
    nd->kb->dpinball(dyhat, dy, tn_f32(nd->out[0]->grad), tn_f32(yhat), tn_f32(y),
                     tn_f32(nd->saved[0]), nd->ia[0], nd->ia[1]);
    return LG_OK;
}

struct tn_tensor *ag_pinball_loss(struct ag_ctx *ctx, struct tn_tensor *yhat, struct tn_tensor *y,
                                  const float *q, int nq)
{
    struct tn_tensor *in[2] = {yhat, y};
    const struct kn_backend *kb =
        ag_begin_f32(ctx, "ag_pinball_loss", 2, in, (const char *[]){"yhat", "y"});
    if (!kb) return NULL;
    if (yhat->ndim != 3 || y->ndim != 2 || yhat->ne[0] != y->ne[0] || yhat->ne[1] != y->ne[1] ||
        yhat->ne[2] != nq || nq < 1)
        return ag_fail(ctx, LG_EINVAL,
                       "ag_pinball_loss: yhat %s must be [B, T, Q] with Q = %d quantiles for y %s",
                       AG_SHAPE(yhat), nq, AG_SHAPE(y));
    for (int k = 0; k < nq; k++)
        if (!(q[k] >= 0.0f && q[k] <= 1.0f))
            return ag_fail(ctx, LG_EINVAL, "ag_pinball_loss: quantile %d is %g, outside [0, 1]",
                           k + 1, (double)q[k]);
    struct tn_tensor *loss = ag_out(ctx, "pinball", TN_F32, yhat->device, 1, (int64_t[]){1});
    struct tn_tensor *qt =
        loss ? ag_out(ctx, "pinball.q", TN_F32, yhat->device, 1, (int64_t[]){nq}) : NULL;
    if (!qt) return NULL;
    if (qt->device == TN_CPU)
        memcpy(tn_f32(qt), q, (size_t)nq * sizeof *q);
    else if (tn_device_copy(tn_f32(qt), qt->device, q, TN_CPU, (size_t)nq * sizeof *q) != LG_OK)
        return ag_fail(ctx, lg_errcode(), "ag_pinball_loss: %s", lg_errmsg());
    int64_t rows = y->ne[0] * y->ne[1];
    kb->pinball(tn_f32(loss), tn_f32(yhat), tn_f32(y), tn_f32(qt), rows, nq);
    if (ag_wants_grad(ctx, 2, in)) {
        struct ag_node *nd =
            ag_record(ctx, "ag_pinball_loss", pinball_backward, kb, 2, in, 1, &loss, 0);
        if (!nd) return NULL;
        ag_set_ia(nd, 2, (const int64_t[]){rows, nq});
        ag_save(nd, 0, qt);
    }
    return loss;
}

/* ---- fake quantisation ----------------------------------------------------------------------- */

/* ia: 0 rows; saved[0] the scales */
static int fake_quant_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    struct tn_tensor *x = nd->in[0];
    int rc = LG_OK;
    float *dx = ag_grad(ctx, x, &rc);
    int64_t rows = nd->ia[0];
    if (dx)
        nd->kb->dfake_quant(dx, tn_f32(nd->out[0]->grad), tn_f32(x), tn_f32(nd->saved[0]), rows,
                            tn_numel(x) / rows);
    return rc;
}

struct tn_tensor *ag_fake_quant(struct ag_ctx *ctx, struct tn_tensor *x, bool per_row)
{
    const struct kn_backend *kb = ag_begin_f32(ctx, "ag_fake_quant", 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    if (per_row && x->ndim != 2)
        return ag_fail(ctx, LG_EINVAL,
                       "ag_fake_quant: per-row quantisation needs a 2-D weight, "
                       "not %s %s",
                       x->name, AG_SHAPE(x));
    int64_t rows = per_row ? x->ne[0] : 1;
    if (rows == 0 || tn_numel(x) == 0)
        return ag_fail(ctx, LG_EINVAL, "ag_fake_quant: %s %s is empty", x->name, AG_SHAPE(x));
    struct tn_tensor *y = ag_out(ctx, "fake_quant", TN_F32, x->device, x->ndim, x->ne);
    struct tn_tensor *scale =
        y ? ag_out(ctx, "fake_quant.scale", TN_F32, x->device, 1, (int64_t[]){rows}) : NULL;
    if (!scale) return NULL;
    kb->fake_quant(tn_f32(y), tn_f32(scale), tn_f32(x), rows, tn_numel(x) / rows);
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *nd =
            ag_record(ctx, "ag_fake_quant", fake_quant_backward, kb, 1, &x, 1, &y, 0);
        if (!nd) return NULL;
        nd->ia[0] = rows;
        ag_save(nd, 0, scale);
    }
    return y;
}
