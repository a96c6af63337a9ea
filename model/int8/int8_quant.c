/* int8_quant.c — the int8 model: conversion from observed ranges (q8_build, shared by PTQ and
 * QAT), the execution hook that runs every linear on int8 data with int32 accumulation, and
 * saving it as safetensors.
 *
 * A quantised linear, for input x [..., in] viewed as [rows, in]:
 *   xq = clamp(round(x / s_x), ±127)                      "act/int8.<layer>.xq"  I8 [rows, in]
 *   y[r, o] = s_x · s_w[o] · Σ_k xq[r, k]·Wq[o, k] + b[o]  context-owned F32 [..., out]
 * The sum is q8_gemm_s8s8s32's exact int32 accumulation, scaled to f32 as each tile of it is
 * finished (q8_gemm_s8s8_f32), so no int32 buffer is needed; xq is freed before the hook
 * returns.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "ag_ops.h"
#include "int8_impl.h"
#include "safetensors.h"

struct q8_qlayer {
    char name[LG_MAX_NAME]; /* "enc_vsn.var_grn.dow.fc1" */
    int64_t out, in;
    float input_scale;        /* s_x = max|x| / 127 */
    struct tn_tensor *wq;     /* "int8/<layer>.weight"       I8  [out, in] */
    struct tn_tensor *wscale; /* "int8/<layer>.weight.scale" F32 [out] */
    struct tn_tensor *iscale; /* "int8/<layer>.input_scale"  F32 [1] */
};

struct q8_model {
    struct trk_tracker *trk;
    int n;
    struct q8_qlayer *layers;   /* "int8/model.layers", in name order */
    struct tft_model *attached; /* the model whose hook is ours, or NULL */
};

/* ---- arithmetic --------------------------------------------------------------------------- */

void q8_quantize_rows(int8_t *q, float *scale, const float *w, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *wr = w + r * cols;
        float amax = 0.0f;
        for (int64_t j = 0; j < cols; j++) amax = fmaxf(amax, fabsf(wr[j]));
        float s = amax / (float)Q8_QMAX;
        scale[r] = s;
        q8_quantize_values(q + r * cols, wr, s > 0.0f ? 1.0f / s : 0.0f, cols);
    }
}

void q8_quantize_values(int8_t *xq, const float *x, float inv_scale, int64_t n)
{
    const __m256 vinv = _mm256_set1_ps(inv_scale), hi = _mm256_set1_ps((float)Q8_QMAX),
                 lo = _mm256_set1_ps(-(float)Q8_QMAX);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i v[4];
        for (int j = 0; j < 4; j++) {
            __m256 f = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * j), vinv);
            f = _mm256_and_ps(f, _mm256_cmp_ps(f, f, _CMP_ORD_Q)); /* NaN → 0 */
            f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
            v[j] = _mm256_cvtps_epi32(f); /* nearest, ties to even (the default MXCSR mode) */
        }
        /* packs work per 128-bit lane: the dwords come out as v0[0:4] v1[0:4] v2[0:4]
         * v3[0:4] | v0[4:8] v1[4:8] v2[4:8] v3[4:8]; the permutation restores the order */
        __m256i b =
            _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
        _mm256_storeu_si256((__m256i *)(xq + i), _mm256_permutevar8x32_epi32(b, order));
    }
    for (; i < n; i++) {
        float v = rintf(x[i] * inv_scale); /* nearest, ties to even: as the fake-quant kernel */
        v = v > (float)Q8_QMAX ? (float)Q8_QMAX : v;
        v = v < -(float)Q8_QMAX ? -(float)Q8_QMAX : v;
        xq[i] = v == v ? (int8_t)v : 0; /* NaN → 0 */
    }
}

/* ---- building the int8 model -------------------------------------------------------------- */

static int qlayer_init(struct q8_qlayer *L, struct trk_tracker *trk, const char *name,
                       const struct tn_tensor *w, float amax)
{
    char tag[LG_MAX_NAME];
    lg_strlcpy(L->name, name, sizeof L->name);
    L->out = w->ne[0];
    L->in = w->ne[1];
    L->input_scale = amax / (float)Q8_QMAX;
    lg_snprintf(tag, sizeof tag, "int8/%s.weight", name);
    L->wq = tn_new(trk, TN_I8, TN_CPU, 2, (int64_t[]){L->out, L->in}, tag);
    lg_snprintf(tag, sizeof tag, "int8/%s.weight.scale", name);
    L->wscale = L->wq ? tn_new(trk, TN_F32, TN_CPU, 1, (int64_t[]){L->out}, tag) : NULL;
    lg_snprintf(tag, sizeof tag, "int8/%s.input_scale", name);
    L->iscale = L->wscale ? tn_new(trk, TN_F32, TN_CPU, 1, (int64_t[]){1}, tag) : NULL;
    if (!L->iscale) return lg_errcode();
    q8_quantize_rows(tn_i8(L->wq), tn_f32(L->wscale), tn_f32(w), L->out, L->in);
    tn_f32(L->iscale)[0] = L->input_scale;
    return LG_OK;
}

int q8_build(struct q8_model **out, struct tft_model *model, const struct q8_observed *o,
             const char *who)
{
    *out = NULL;
    struct vm_varmap *vm = tft_varmap_borrow(model);
    struct trk_tracker *trk = o->trk;
    char pn[LG_MAX_NAME];
    int rc = LG_OK, observed = 0;
    for (int i = 0; i < o->n; i++) observed += o->obs[i]->batches > 0;
    for (int i = 0; i < o->n && rc == LG_OK; i++) { /* check everything before allocating */
        const struct q8_observer *ob = o->obs[i];
        const char *name = o->layers[i].name;
        lg_snprintf(pn, sizeof pn, "%s.weight", name);
        const struct tn_tensor *w = vm_find(vm, pn);
        if (!ob->batches)
            rc = lg_fail(LG_EINVAL,
                         "%s: layer %s has no observed input range (%d of %d layers "
                         "observed): run forward passes with the observers attached first",
                         who, name, observed, o->n);
        else if (ob->nonfinite)
            rc = lg_fail(LG_EINVAL,
                         "%s: layer %s saw non-finite inputs (NaN or infinity) while "
                         "its range was observed",
                         who, name);
        else if (!w || w->ndim != 2 || w->ne[0] != o->layers[i].out || w->ne[1] != o->layers[i].in)
            rc = lg_fail(LG_EINVAL,
                         "%s: layer %s [%lld, %lld] of the observers is not in this "
                         "model (%s)",
                         who, name, (long long)o->layers[i].out, (long long)o->layers[i].in,
                         model->cfg.preset);
        else if (w->device != TN_CPU || w->dtype != TN_F32)
            rc = lg_fail(LG_EUNAVAIL, "%s: layer %s: int8 conversion needs F32 weights on the CPU",
                         who, name);
    }
    if (rc) return rc;
    struct q8_model *q = trk_calloc(trk, sizeof *q, "int8/model");
    if (!q) return lg_errcode();
    q->trk = trk;
    q->layers = trk_calloc(trk, (size_t)o->n * sizeof *q->layers, "int8/model.layers");
    if (!q->layers) {
        rc = lg_errcode();
        goto fail;
    }
    q->n = o->n;
    for (int i = 0; i < o->n; i++) {
        lg_snprintf(pn, sizeof pn, "%s.weight", o->layers[i].name);
        rc = qlayer_init(&q->layers[i], trk, o->layers[i].name, vm_find(vm, pn), o->obs[i]->amax);
        if (rc) goto fail;
    }
    *out = q;
    return LG_OK;
fail:
    q8_free(q);
    return lg_fail_ctx(rc, "%s: ", who);
}

void q8_free(struct q8_model *q)
{
    if (!q) return;
    LG_ASSERT(!q->attached && "q8_free: the int8 model is still attached to a model; detach first");
    for (int i = 0; q->layers && i < q->n; i++) {
        tn_release(q->layers[i].wq);
        tn_release(q->layers[i].wscale);
        tn_release(q->layers[i].iscale);
    }
    trk_free(q->trk, q->layers);
    trk_free(q->trk, q);
}

int q8_layers(const struct q8_model *q) { return q->n; }

int64_t q8_bytes(const struct q8_model *q)
{
    int64_t b = 0;
    for (int i = 0; i < q->n; i++)
        b += (int64_t)(tn_nbytes(q->layers[i].wq) + tn_nbytes(q->layers[i].wscale) +
                       tn_nbytes(q->layers[i].iscale));
    return b;
}

/* The layer called `name` (binary search: layers are in name order), or NULL. */
static const struct q8_qlayer *find_qlayer(const struct q8_model *q, const char *name)
{
    int lo = 0, hi = q->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(q->layers[mid].name, name);
        if (c == 0) return &q->layers[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

float q8_input_scale(const struct q8_model *q, const char *layer)
{
    const struct q8_qlayer *L = find_qlayer(q, layer);
    return L ? L->input_scale : NAN;
}

const struct tn_tensor *q8_layer_weight(const struct q8_model *q, const char *layer)
{
    const struct q8_qlayer *L = find_qlayer(q, layer);
    return L ? L->wq : NULL;
}

const struct tn_tensor *q8_layer_scale(const struct q8_model *q, const char *layer)
{
    const struct q8_qlayer *L = find_qlayer(q, layer);
    return L ? L->wscale : NULL;
}

/* ---- the execution hook ------------------------------------------------------------------- */

static bool check_call(struct ag_ctx *ctx, const struct q8_qlayer *L, const char *name,
                       struct tn_tensor *x, struct tn_tensor *w, struct tn_tensor *b)
{
    struct tn_tensor *in[3] = {x, w, b};
    if (!L)
        ag_fail(ctx, LG_EINVAL, "int8 linear %s: the layer is not in the quantised model", name);
    else if (x->device != TN_CPU || x->dtype != TN_F32 || x->ne[x->ndim - 1] != L->in)
        ag_fail(ctx, x->device != TN_CPU ? LG_EUNAVAIL : LG_EINVAL,
                "int8 linear %s: input %s is %s %s; expected F32 [..., %lld] on the CPU", name,
                x->name, tn_dtype_name(x->dtype), Q8_SHAPE(x), (long long)L->in);
    else if (w->ndim != 2 || w->ne[0] != L->out || w->ne[1] != L->in)
        ag_fail(ctx, LG_EINVAL, "int8 linear %s: weight is %s, the int8 layer [%lld, %lld]", name,
                Q8_SHAPE(w), (long long)L->out, (long long)L->in);
    else if (b && (b->device != TN_CPU || b->dtype != TN_F32 || tn_numel(b) != L->out))
        ag_fail(ctx, LG_EINVAL, "int8 linear %s: bias %s is %s, expected F32 [%lld] on the CPU",
                name, b->name, Q8_SHAPE(b), (long long)L->out);
    else if (ag_wants_grad(ctx, 3, in))
        ag_fail(ctx, LG_EINVAL,
                "int8 linear %s: the int8 model runs inference only; disable "
                "gradients (ag_set_grad_enabled) to evaluate it",
                name);
    else
        return true;
    return false;
}

static struct tn_tensor *int8_linear(void *user, struct ag_ctx *ctx, const char *name,
                                     struct tn_tensor *x, struct tn_tensor *w, struct tn_tensor *b)
{
    const struct q8_model *q = user;
    const struct q8_qlayer *L = find_qlayer(q, name);
    if (!check_call(ctx, L, name, x, w, b)) return NULL;
    int64_t rows = tn_numel(x) / L->in, shape[TN_MAX_DIMS];
    memcpy(shape, x->ne, sizeof shape);
    shape[x->ndim - 1] = L->out;
    ag_scope_push(ctx, name);
    struct tn_tensor *y = ag_out(ctx, "int8_linear", TN_F32, TN_CPU, x->ndim, shape);
    ag_scope_pop(ctx);
    if (!y) return NULL;
    char tag[LG_MAX_NAME];
    lg_snprintf(tag, sizeof tag, "act/int8.%s.xq", name);
    struct tn_tensor *xq = tn_new(q->trk, TN_I8, TN_CPU, 2, (int64_t[]){rows, L->in}, tag);
    if (!xq) return ag_fail(ctx, LG_ENOMEM, "int8 linear %s: %s", name, lg_errmsg());
    float sx = L->input_scale;
    q8_quantize_values(tn_i8(xq), tn_f32(x), sx > 0.0f ? 1.0f / sx : 0.0f, rows * L->in);
    q8_gemm_s8s8_f32(tn_f32(y), tn_i8(xq), tn_i8(L->wq), rows, L->out, L->in, sx, tn_f32(L->wscale),
                     b ? tn_f32(b) : NULL);
    tn_release(xq);
    return y;
}

void q8_attach(struct q8_model *q, struct tft_model *model)
{
    LG_ASSERT(!q->attached && "q8_attach: the int8 model is already attached (attach twice?)");
    LG_ASSERT(!model->hook.linear && "q8_attach: the model already has a linear hook installed");
    model->hook = (struct tft_linear_hook){.linear = int8_linear, .user = q};
    q->attached = model;
}

void q8_detach(struct q8_model *q, struct tft_model *model)
{
    LG_ASSERT(q->attached == model && "q8_detach: the int8 model is not attached to this model");
    LG_ASSERT(model->hook.user == q && "q8_detach: the model's linear hook was replaced");
    model->hook = (struct tft_linear_hook){0};
    q->attached = NULL;
}

/* ---- saving ------------------------------------------------------------------------------- */

int q8_save(struct q8_model *q, struct tft_model *model, const char *path, const char *config_json)
{
    struct vm_varmap *vm = tft_varmap_borrow(model);
    int np = vm_count(vm), n = 0, found = 0, rc = LG_OK;
    struct st_entry *e =
        trk_calloc(q->trk, (size_t)(np + 2 * q->n + 1) * sizeof *e, "int8/save.entries");
    if (!e) return lg_errcode();
    for (int i = 0; i < np; i++) { /* the VarMap's name order, int8 tensors in place of weights */
        struct tn_tensor *p = vm_at(vm, i);
        const char *pn = tn_basename(p);
        size_t len = strlen(pn);
        const struct q8_qlayer *L = NULL;
        if (len > 7 && strcmp(pn + len - 7, ".weight") == 0 && len - 7 < LG_MAX_NAME) {
            char layer[LG_MAX_NAME];
            memcpy(layer, pn, len - 7);
            layer[len - 7] = '\0';
            L = find_qlayer(q, layer);
        }
        if (!L) {
            e[n++] = (struct st_entry){NULL, p}; /* "varmap/<name>" is saved as <name> */
            continue;
        }
        if (p->ndim != 2 || p->ne[0] != L->out || p->ne[1] != L->in) {
            rc = lg_fail(LG_EINVAL, "q8_save %s: the model's %s is %s, the int8 layer [%lld, %lld]",
                         path, pn, Q8_SHAPE(p), (long long)L->out, (long long)L->in);
            goto cleanup;
        }
        e[n++] = (struct st_entry){NULL, L->wq};     /* <layer>.weight       I8 */
        e[n++] = (struct st_entry){NULL, L->wscale}; /* <layer>.weight.scale F32 */
        e[n++] = (struct st_entry){NULL, L->iscale}; /* <layer>.input_scale  F32 */
        found++;
    }
    if (found != q->n) {
        rc = lg_fail(LG_EINVAL, "q8_save %s: only %d of the %d int8 layers are in the model (%s)",
                     path, found, q->n, model->cfg.preset);
        goto cleanup;
    }
    const char *meta[] = {
        "quantization",
        "int8 symmetric: <layer>.weight I8 [out, in] per output channel with <layer>.weight.scale "
        "F32 [out]; inputs per tensor with <layer>.input_scale F32 [1]; "
        "y = input_scale * weight.scale[o] * sum_k q(x)[k] * weight[o, k] + bias[o]",
        config_json ? "config" : NULL, config_json, NULL};
    rc = st_save(q->trk, path, e, n, meta);
cleanup:
    trk_free(q->trk, e);
    return rc;
}
