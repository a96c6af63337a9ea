/* int8_calib.c — the linear layers of a model, the range observers calibration and QAT keep
 * for each of them, and post-training calibration: a linear hook that records max |x| of every
 * layer's input while the forward pass stays f32. */
#include <math.h>
#include <string.h>

#include "int8_impl.h"

/* The longest class prefix + suffix an int8 tag puts around a layer name: "qat/observer." (13),
 * "int8/" + ".weight.scale" (18), "act/int8." + ".xq" (12). */
#define Q8_TAG_OVERHEAD 18

/* ---- the linear layers of a model --------------------------------------------------------- */

static bool is_linear_weight(const struct tn_tensor *p, const char *name)
{
    size_t len = strlen(name), suf = strlen(".weight");
    return p->ndim == 2 && len > suf && strcmp(name + len - suf, ".weight") == 0 &&
           strncmp(name, "emb.", 4) != 0;
}

int q8_list_layers(struct trk_tracker *trk, struct tft_model *model, const char *tag,
                   struct q8_layer_ref **out, int *n)
{
    *out = NULL;
    *n = 0;
    struct vm_varmap *vm = tft_varmap_borrow(model);
    int count = vm_count(vm), k = 0;
    struct q8_layer_ref *l = trk_calloc(trk, (size_t)LG_MAX(count, 1) * sizeof *l, tag);
    if (!l) return lg_errcode();
    for (int i = 0; i < count; i++) { /* vm_at is in name order, so the list is sorted */
        struct tn_tensor *p = vm_at(vm, i);
        const char *name = tn_basename(p);
        if (!is_linear_weight(p, name)) continue;
        size_t len = strlen(name) - strlen(".weight");
        if (len + Q8_TAG_OVERHEAD >= LG_MAX_NAME) {
            trk_free(trk, l);
            return lg_fail(LG_EINVAL,
                           "int8: layer name %.*s is too long for its int8 tags "
                           "(at most %d characters)",
                           (int)len, name, LG_MAX_NAME - 1 - Q8_TAG_OVERHEAD);
        }
        memcpy(l[k].name, name, len);
        l[k].name[len] = '\0';
        l[k].w = p;
        l[k].out = p->ne[0];
        l[k].in = p->ne[1];
        k++;
    }
    *out = l;
    *n = k;
    return LG_OK;
}

int q8_find_layer(const struct q8_layer_ref *layers, int n, const char *name)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(layers[mid].name, name);
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* ---- observers ---------------------------------------------------------------------------- */

int q8_observed_init(struct q8_observed *o, struct trk_tracker *trk, struct tft_model *model,
                     const char *prefix)
{
    char tag[LG_MAX_NAME];
    memset(o, 0, sizeof *o);
    o->trk = trk;
    lg_snprintf(tag, sizeof tag, "%s.layers", prefix);
    int rc = q8_list_layers(trk, model, tag, &o->layers, &o->n);
    if (rc) goto fail;
    if (o->n == 0) {
        rc = lg_fail(LG_EINVAL, "int8: the model (%s) has no linear layers to quantise",
                     model->cfg.preset);
        goto fail;
    }
    lg_snprintf(tag, sizeof tag, "%s.table", prefix);
    o->obs = trk_calloc(trk, (size_t)o->n * sizeof *o->obs, tag);
    if (!o->obs) {
        rc = lg_errcode();
        goto fail;
    }
    for (int i = 0; i < o->n; i++) {
        o->obs[i] = trk_allocf(trk, sizeof *o->obs[i], "%s.%s", prefix, o->layers[i].name);
        if (!o->obs[i]) {
            rc = lg_errcode();
            goto fail;
        }
        memset(o->obs[i], 0, sizeof *o->obs[i]);
    }
    return LG_OK;
fail:
    q8_observed_fini(o);
    return rc;
}

void q8_observed_fini(struct q8_observed *o)
{
    LG_ASSERT(!o->attached && "int8: freeing observers still attached to a model; detach first");
    for (int i = 0; o->obs && i < o->n; i++) trk_free(o->trk, o->obs[i]);
    trk_free(o->trk, o->obs);
    trk_free(o->trk, o->layers);
    memset(o, 0, sizeof *o);
}

void *q8_observed_new(size_t size, struct trk_tracker *trk, struct tft_model *model,
                      const char *tag, const char *prefix, int *rc)
{
    struct q8_observed *o = trk_calloc(trk, size, tag);
    if (!o) {
        *rc = lg_errcode();
        return NULL;
    }
    *rc = q8_observed_init(o, trk, model, prefix);
    if (*rc) {
        trk_free(trk, o);
        return NULL;
    }
    return o;
}

void q8_observed_free(struct q8_observed *o)
{
    if (!o) return;
    struct trk_tracker *trk = o->trk;
    q8_observed_fini(o);
    trk_free(trk, o);
}

void q8_observed_attach(struct q8_observed *o, struct tft_model *model,
                        struct tn_tensor *(*linear)(void *, struct ag_ctx *, const char *,
                                                    struct tn_tensor *, struct tn_tensor *,
                                                    struct tn_tensor *),
                        void *user)
{
    LG_ASSERT(!o->attached && "int8: observers are already attached (attach twice?)");
    LG_ASSERT(!model->hook.linear && "int8: the model already has a linear hook installed");
    model->hook = (struct tft_linear_hook){.linear = linear, .user = user};
    o->attached = model;
}

void q8_observed_detach(struct q8_observed *o, struct tft_model *model, const void *user)
{
    LG_ASSERT(o->attached == model &&
              "int8: detaching observers from a model they are not attached to");
    LG_ASSERT(model->hook.user == user &&
              "int8: the model's linear hook was replaced while attached");
    model->hook = (struct tft_linear_hook){0};
    o->attached = NULL;
}

struct q8_observer *q8_observer_for(struct q8_observed *o, struct ag_ctx *ctx, const char *who,
                                    const char *name, const struct tn_tensor *x,
                                    const struct tn_tensor *w)
{
    int i = q8_find_layer(o->layers, o->n, name);
    if (i < 0) {
        ag_fail(ctx, LG_EINVAL, "%s: linear layer %s is not one of the model's %d layers", who,
                name, o->n);
        return NULL;
    }
    const struct q8_layer_ref *l = &o->layers[i];
    if (w->ndim != 2 || w->ne[0] != l->out || w->ne[1] != l->in) {
        ag_fail(ctx, LG_EINVAL, "%s: layer %s: weight is %s, expected [%lld, %lld]", who, name,
                Q8_SHAPE(w), (long long)l->out, (long long)l->in);
        return NULL;
    }
    if (x->device != TN_CPU || x->dtype != TN_F32 || x->ne[x->ndim - 1] != l->in) {
        ag_fail(ctx, x->device != TN_CPU ? LG_EUNAVAIL : LG_EINVAL,
                "%s: layer %s: input %s is %s %s on %s; expected F32 [..., %lld] on the CPU", who,
                name, x->name, tn_dtype_name(x->dtype), Q8_SHAPE(x),
                x->device == TN_CPU ? "the CPU" : "a device", (long long)l->in);
        return NULL;
    }
    return o->obs[i];
}

float q8_absmax(const struct tn_tensor *x)
{
    const float *p = tn_f32(x);
    int64_t n = tn_numel(x);
    float m = 0.0f;
    bool finite = true;
    for (int64_t i = 0; i < n; i++) {
        float a = fabsf(p[i]);
        finite &= a <= 3.4028235e38f; /* false for NaN and infinity */
        m = a > m ? a : m;
    }
    return finite ? m : NAN;
}

void q8_observe(struct q8_observer *ob, float amax, int64_t values)
{
    if (!isfinite(amax))
        ob->nonfinite = true;
    else if (amax > ob->amax)
        ob->amax = amax;
    ob->batches++;
    ob->values += values;
}

int q8_observed_batches(const struct q8_observed *o)
{
    int64_t most = 0;
    for (int i = 0; i < o->n; i++) most = LG_MAX(most, o->obs[i]->batches);
    return (int)most;
}

float q8_observed_range(const struct q8_observed *o, const char *layer)
{
    int i = q8_find_layer(o->layers, o->n, layer);
    return i < 0 || !o->obs[i]->batches ? NAN : o->obs[i]->amax;
}

/* ---- post-training calibration ------------------------------------------------------------ */

/* The handle: made by q8_observed_new, whose struct q8_observed comes first. */
struct q8_calib {
    struct q8_observed o; /* "int8/calib.<layer>" */
};

/* The calibration hook: records the input range and lets the layer run in f32 (NULL). */
static struct tn_tensor *calib_linear(void *user, struct ag_ctx *ctx, const char *name,
                                      struct tn_tensor *x, struct tn_tensor *w, struct tn_tensor *b)
{
    (void)b;
    struct q8_calib *cal = user;
    struct q8_observer *ob = q8_observer_for(&cal->o, ctx, "int8 calibration", name, x, w);
    if (ob) q8_observe(ob, q8_absmax(x), tn_numel(x));
    return NULL;
}

int q8_calib_new(struct q8_calib **out, struct trk_tracker *trk, struct tft_model *model)
{
    int rc;
    *out = q8_observed_new(sizeof **out, trk, model, "int8/calib", "int8/calib", &rc);
    return rc;
}

void q8_calib_attach(struct q8_calib *cal, struct tft_model *model)
{
    q8_observed_attach(&cal->o, model, calib_linear, cal);
}

void q8_calib_detach(struct q8_calib *cal, struct tft_model *model)
{
    q8_observed_detach(&cal->o, model, cal);
}

int q8_calib_batches(const struct q8_calib *cal) { return q8_observed_batches(&cal->o); }

float q8_calib_range(const struct q8_calib *cal, const char *layer)
{
    return q8_observed_range(&cal->o, layer);
}

int q8_quantize(struct q8_model **out, struct tft_model *model, const struct q8_calib *cal)
{
    return q8_build(out, model, &cal->o, "q8_quantize");
}

void q8_calib_free(struct q8_calib *cal) { q8_observed_free(cal ? &cal->o : NULL); }
