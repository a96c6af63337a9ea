/* int8_impl.h — INT8 internals shared by int8_calib.c, int8_quant.c, int8_qat.c and the unit
 * tests: the list of a model's linear layers, the range observers calibration and QAT keep per
 * layer, the conversion both end with, the quantisation arithmetic, and the per-tensor
 * fake-quantisation op QAT puts on activations.
 *
 *   struct q8_observed o;
 *   q8_observed_init(&o, trk, model, "int8/calib");  // o.layers[i], o.obs[i]: "int8/calib.<layer>"
 *   q8_observe(o.obs[i], q8_absmax(x), tn_numel(x));  // in the linear hook: max |x| so far
 *   q8_build(&q, model, &o, "q8_quantize");           // the int8 model from those ranges
 *   q8_observed_fini(&o);
 */
#ifndef LG_INT8_IMPL_H
#define LG_INT8_IMPL_H

#include "int8.h"

#define Q8_QMAX 127 /* symmetric int8: [-127, 127] */
/* A tensor's shape as "[4, 3]" in a buffer that lives to the end of the enclosing block. */
#define Q8_SHAPE(t) tn_shape_str((t), (char[80]){0}, 80)

/* ---- the linear layers of a model --------------------------------------------------------- */

/* One linear layer as the forward pass hooks it: "<name>.weight" [out, in] in the VarMap. */
struct q8_layer_ref {
    char name[LG_MAX_NAME]; /* "enc_vsn.var_grn.dow.fc1" */
    struct tn_tensor *w;    /* borrowed from the VarMap */
    int64_t out, in;
};

/* Lists the model's linear layers in name order: every 2-D VarMap parameter "<p>.weight"
 * outside the embeddings ("emb.*"); spec/TFT.md's names make that exactly the layers the
 * forward pass sends through tft_apply_linear. *out is a tracked array (tag `tag`) the caller
 * frees with trk_free. LG_EINVAL when a name is too long for the int8 tags. */
int q8_list_layers(struct trk_tracker *trk, struct tft_model *model, const char *tag,
                   struct q8_layer_ref **out, int *n);
/* Index of layer `name` in a list made by q8_list_layers, or -1. */
int q8_find_layer(const struct q8_layer_ref *layers, int n, const char *name);

/* ---- range observers (calibration and QAT) ------------------------------------------------ */

struct q8_observer { /* one allocation per layer: "<prefix>.<layer>" */
    float amax;      /* max |x| over the observed batches */
    int64_t batches; /* forward passes observed */
    int64_t values;  /* elements observed */
    bool nonfinite;  /* a NaN or infinity was seen */
};

struct q8_observed {
    struct trk_tracker *trk;
    int n;
    struct q8_layer_ref *layers; /* "<prefix>.layers" */
    struct q8_observer **obs;    /* "<prefix>.table"; obs[i] "<prefix>.<layer i>" */
    struct tft_model *attached;  /* the model whose hook is ours, or NULL */
};

/* One observer per linear layer of `model`, tagged "<prefix>.<layer>"; released with
 * q8_observed_fini. On failure nothing stays allocated. */
int q8_observed_init(struct q8_observed *o, struct trk_tracker *trk, struct tft_model *model,
                     const char *prefix);
void q8_observed_fini(struct q8_observed *o);
/* A public handle (struct q8_calib, struct q8_qat: `size` bytes whose first member is a struct
 * q8_observed), tagged `tag`, with its observers made by q8_observed_init under `prefix`; the
 * caller frees it with q8_observed_free. NULL with *rc set on failure (nothing allocated). */
void *q8_observed_new(size_t size, struct trk_tracker *trk, struct tft_model *model,
                      const char *tag, const char *prefix, int *rc);
/* Finalises and frees such a handle, given its first member; NULL does nothing. */
void q8_observed_free(struct q8_observed *o);
/* Installs `linear` with `user` as the model's hook / removes it (contract: no other hook is
 * installed; detach only what was attached). */
void q8_observed_attach(struct q8_observed *o, struct tft_model *model,
                        struct tn_tensor *(*linear)(void *, struct ag_ctx *, const char *,
                                                    struct tn_tensor *, struct tn_tensor *,
                                                    struct tn_tensor *),
                        void *user);
void q8_observed_detach(struct q8_observed *o, struct tft_model *model, const void *user);
/* The observer of the layer the hook was called for, after checking that the layer is listed,
 * the weight has its shape and x is F32 [..., in] on the CPU; NULL with an error recorded on
 * ctx otherwise (`who` starts the message). */
struct q8_observer *q8_observer_for(struct q8_observed *o, struct ag_ctx *ctx, const char *who,
                                    const char *name, const struct tn_tensor *x,
                                    const struct tn_tensor *w);
/* max |x| over a CPU f32 tensor (NaN when any element is not finite). */
float q8_absmax(const struct tn_tensor *x);
/* Folds one batch's max |x| into the observer. */
void q8_observe(struct q8_observer *ob, float amax, int64_t values);
/* The forward passes observed: the most any layer has seen (each runs once per forward). */
int q8_observed_batches(const struct q8_observed *o);
/* The observed range of one layer (NAN when the layer is unknown or was never observed). */
float q8_observed_range(const struct q8_observed *o, const char *layer);
/* The same through the public handles (int8_calib.c, int8_qat.c), for tests and reports. */
float q8_calib_range(const struct q8_calib *cal, const char *layer);
float q8_qat_range(const struct q8_qat *qat, const char *layer);

/* ---- conversion and arithmetic (int8_quant.c) --------------------------------------------- */

/* The int8 model from the observed input ranges and the model's current weights; `who`
 * names the caller in messages. LG_EINVAL when a layer was never observed or saw a
 * non-finite input. */
int q8_build(struct q8_model **out, struct tft_model *model, const struct q8_observed *o,
             const char *who);

/* scale = max|row| / 127 per row (0 for a zero row), q = clamp(round(w / scale), ±127). */
void q8_quantize_rows(int8_t *q /* [rows, cols] */, float *scale /* [rows] */,
                      const float *w /* [rows, cols] */, int64_t rows, int64_t cols);
/* The int8 GEMM with the dequantising epilogue fused (int8_gemm.c): the same exact int32 sums
 * as q8_gemm_s8s8s32, written as y[m, n] = fmaf(Σ_k A[m, k]·B[n, k], sx · sw[n], bias[n]). */
void q8_gemm_s8s8_f32(float *y /* [M, N] */, const int8_t *A /* [M, K] */,
                      const int8_t *B /* [N, K] */, int64_t M, int64_t N, int64_t K, float sx,
                      const float *sw /* [N] */, const float *bias /* [N] or NULL */);
/* xq = clamp(round(x · inv_scale), ±127); NaN becomes 0. */
void q8_quantize_values(int8_t *xq /* [n] */, const float *x /* [n] */, float inv_scale, int64_t n);
/* The input scale of one quantised layer (NAN when unknown), for tests and reports. */
float q8_input_scale(const struct q8_model *q, const char *layer);
/* The int8 weight [out, in] and scales [out] of one layer (NULL when unknown); borrowed. */
const struct tn_tensor *q8_layer_weight(const struct q8_model *q, const char *layer);
const struct tn_tensor *q8_layer_scale(const struct q8_model *q, const char *layer);

/* ---- QAT: per-tensor fake quantisation of activations (int8_qat.c) ------------------------ */

/* y = clamp(round(x / s), ±127) · s with s = range / 127 (y = 0 when range is 0); straight-
 * through in backward: dx += dy where x lies inside the range (|x| / s rounds to at most 127),
 * 0 where it was clipped. Context-owned, like every op's output ("act/<scope>.fake_quant_act").
 * CPU only (LG_EUNAVAIL elsewhere); range must be finite and >= 0. */
struct tn_tensor *q8_ag_fake_quant_range(struct ag_ctx *ctx, struct tn_tensor *x, float range);

#endif
