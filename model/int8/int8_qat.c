/* int8_qat.c — quantisation-aware training: a linear hook that fake-quantises every layer's
 * weight (per output channel, ag_fake_quant) and input (per tensor, with the range its observer
 * has seen, q8_ag_fake_quant_range), straight-through in backward, so that training sees the
 * int8 model's rounding; then the conversion to the same int8 model PTQ makes.
 *
 * Observers ("qat/observer.<layer>") keep the running max |x| of each layer's input over the
 * training forward passes (the context in training mode), updated before the batch is
 * quantised, so training inputs are never clipped. Out of training the range is frozen; a layer
 * that has seen no training batch yet quantises with its batch's own range.
 */
#include <math.h>

#include "ag_ops.h"
#include "int8_impl.h"

/* ---- the activation fake-quantisation op -------------------------------------------------- */

/* saved[0]: the scale [1] */
static int fake_quant_range_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    struct tn_tensor *x = nd->in[0];
    int rc = LG_OK;
    float *dx = ag_grad(ctx, x, &rc);
    if (!dx) return rc;
    const float *xp = tn_f32(x), *dy = tn_f32(nd->out[0]->grad);
    float s = tn_f32(nd->saved[0])[0], inv = s > 0.0f ? 1.0f / s : 0.0f;
    int64_t n = tn_numel(x);
    if (s > 0.0f) {
        for (int64_t i = 0; i < n; i++) dx[i] += fabsf(xp[i]) * inv < Q8_QMAX + 0.5f ? dy[i] : 0.0f;
    } else { /* range 0: only zeros lie inside it */
        for (int64_t i = 0; i < n; i++) dx[i] += xp[i] == 0.0f ? dy[i] : 0.0f;
    }
    return rc;
}

struct tn_tensor *q8_ag_fake_quant_range(struct ag_ctx *ctx, struct tn_tensor *x, float range)
{
    const char *op = "q8_ag_fake_quant_range";
    const struct kn_backend *kb = ag_begin_f32(ctx, op, 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    if (x->device != TN_CPU)
        return ag_fail(ctx, LG_EUNAVAIL,
                       "%s: %s: activation fake quantisation runs on the CPU only", op, x->name);
    if (!(range >= 0.0f) || !isfinite(range))
        return ag_fail(ctx, LG_EINVAL, "%s: %s: range %g must be finite and >= 0", op, x->name,
                       (double)range);
    struct tn_tensor *y = ag_out(ctx, "fake_quant_act", TN_F32, TN_CPU, x->ndim, x->ne);
    struct tn_tensor *scale =
        y ? ag_out(ctx, "fake_quant_act.scale", TN_F32, TN_CPU, 1, (int64_t[]){1}) : NULL;
    if (!scale) return NULL;
    float s = range / (float)Q8_QMAX, inv = s > 0.0f ? 1.0f / s : 0.0f;
    tn_f32(scale)[0] = s;
    const float *xp = tn_f32(x);
    float *yp = tn_f32(y);
    int64_t n = tn_numel(x);
    for (int64_t i = 0; i < n; i++) { /* the same rounding as q8_quantize_values */
        float v = rintf(xp[i] * inv);
        v = v > (float)Q8_QMAX ? (float)Q8_QMAX : v;
        v = v < -(float)Q8_QMAX ? -(float)Q8_QMAX : v;
        yp[i] = v * s;
    }
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *nd = ag_record(ctx, op, fake_quant_range_backward, kb, 1, &x, 1, &y, 0);
        if (!nd) return NULL;
        ag_save(nd, 0, scale);
    }
    return y;
}

/* ---- the QAT hook ------------------------------------------------------------------------- */

/* The handle: made by q8_observed_new, whose struct q8_observed comes first. */
struct q8_qat {
    struct q8_observed o; /* "qat/observer.<layer>" */
};

static struct tn_tensor *qat_linear(void *user, struct ag_ctx *ctx, const char *name,
                                    struct tn_tensor *x, struct tn_tensor *w, struct tn_tensor *b)
{
    struct q8_qat *qat = user;
    struct q8_observer *ob = q8_observer_for(&qat->o, ctx, "QAT", name, x, w);
    if (!ob) return NULL;
    float amax = q8_absmax(x);
    if (!isfinite(amax))
        return ag_fail(ctx, LG_EINVAL, "QAT linear %s: the input %s holds NaN or infinity", name,
                       x->name);
    if (ag_training(ctx)) q8_observe(ob, amax, tn_numel(x));
    float range = ob->batches ? ob->amax : amax;
    ag_scope_push(ctx, name);
    struct tn_tensor *xf = q8_ag_fake_quant_range(ctx, x, range);
    struct tn_tensor *wf = ag_fake_quant(ctx, w, true);
    struct tn_tensor *y = ag_linear(ctx, xf, wf, b);
    ag_scope_pop(ctx);
    return y;
}

int q8_qat_new(struct q8_qat **out, struct trk_tracker *trk, struct tft_model *model)
{
    int rc;
    *out = q8_observed_new(sizeof **out, trk, model, "qat/state", "qat/observer", &rc);
    return rc;
}

void q8_qat_attach(struct q8_qat *qat, struct tft_model *model)
{
    q8_observed_attach(&qat->o, model, qat_linear, qat);
}

void q8_qat_detach(struct q8_qat *qat, struct tft_model *model)
{
    q8_observed_detach(&qat->o, model, qat);
}

int q8_qat_convert(struct q8_model **out, struct tft_model *model, const struct q8_qat *qat)
{
    return q8_build(out, model, &qat->o, "q8_qat_convert");
}

float q8_qat_range(const struct q8_qat *qat, const char *layer)
{
    return q8_observed_range(&qat->o, layer);
}

void q8_qat_free(struct q8_qat *qat) { q8_observed_free(qat ? &qat->o : NULL); }
