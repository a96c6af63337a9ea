/* int8.h — INT8 for real: post-training quantisation (calibrate, quantise, run on int8 data
 * with int32 accumulation) and quantisation-aware training (fake quantisation with a
 * straight-through estimator, observers, then the same conversion).
 *
 * Worked example (PTQ, as tr_finalize_int8_training does it):
 *
 *   struct q8_calib *cal = NULL;
 *   q8_calib_new(&cal, trk, model);        // one observer per linear layer: "int8/calib.<layer>"
 *   q8_calib_attach(cal, model);           // the model's linear hook now records input ranges
 *   ... run calibration batches through tft_forward (no grad) ...
 *   q8_calib_detach(cal, model);
 *   struct q8_model *q = NULL;
 *   q8_quantize(&q, model, cal);           // "int8/<layer>.weight" I8 [out, in], ".weight.scale"
 *   q8_calib_free(cal);
 *   q8_attach(q, model);                   // linears now run int8 × int8 → int32 → f32
 *   ... evaluate ...
 *   q8_detach(q, model);
 *   q8_save(q, "model.int8.safetensors", config_json);   // I8 weights + F32 scales
 *   q8_free(q);
 *
 * Quantisation scheme: weights per output channel, symmetric, scale_w[o] = max|W[o,:]| / 127;
 * activations per layer, symmetric, scale_x = max|x| / 127 over the calibration batches (or
 * the QAT observer's running range). A quantised linear computes
 *   y[n, o] = scale_x · scale_w[o] · Σ_k q(x)[n, k] · Wq[o, k] + b[o]
 * with the sum over int8 products accumulated in int32. Biases, embeddings, layer norms and
 * LSTMs stay f32 (the LSTM's recurrence is not a linear hook).
 *
 * The linear layers are the VarMap's 2-D "<layer>.weight" parameters outside "emb.*" (the
 * names spec/TFT.md fixes), in name order. The int8 path runs on the CPU, for inference only
 * (gradients disabled); anything else is an error recorded on the context. Broken contracts
 * abort (LG_ASSERT): attaching while the model already has a linear hook (attach twice),
 * detaching what is not attached, freeing observers or an int8 model that is still attached.
 */
#ifndef LG_INT8_H
#define LG_INT8_H

#include "tft.h"

/* ---- post-training quantisation ----------------------------------------------------------- */

struct q8_calib;
/* Observers for every linear layer of `model`; freed with q8_calib_free. */
int q8_calib_new(struct q8_calib **out, struct trk_tracker *trk, struct tft_model *model);
/* Installs / removes the observing hook (the forward stays f32). */
void q8_calib_attach(struct q8_calib *cal, struct tft_model *model);
void q8_calib_detach(struct q8_calib *cal, struct tft_model *model);
/* Batches observed so far. */
int q8_calib_batches(const struct q8_calib *cal);
void q8_calib_free(struct q8_calib *cal);

struct q8_model;
/* Quantises every linear layer of `model` with the ranges `cal` observed; freed with q8_free. */
int q8_quantize(struct q8_model **out, struct tft_model *model, const struct q8_calib *cal);
/* Installs / removes the int8 execution hook. */
void q8_attach(struct q8_model *q, struct tft_model *model);
void q8_detach(struct q8_model *q, struct tft_model *model);
int q8_layers(const struct q8_model *q);
int64_t q8_bytes(const struct q8_model *q); /* int8 weights + scales */
/* Saves the int8 model: "<layer>.weight" I8 and "<layer>.weight.scale" F32 [out] for every
 * quantised layer, "<layer>.input_scale" F32 [1], every other parameter F32 under its name. */
int q8_save(struct q8_model *q, struct tft_model *model, const char *path, const char *config_json);
void q8_free(struct q8_model *q);

/* int8 GEMM with int32 accumulation: C[m, n] = Σ_k A[m, k] · B[n, k]  (B row-major [n, k], as a
 * Linear weight), exact for K < 131072 (asserted). The kernel the quantised linears use;
 * exposed for tests and benchmarks. */
void q8_gemm_s8s8s32(int32_t *C, const int8_t *A, const int8_t *B, int64_t M, int64_t N, int64_t K);

/* ---- quantisation-aware training ------------------------------------------------------------- */

struct q8_qat;
/* Observers ("qat/observer.<layer>") and the fake-quantising hook; freed with q8_qat_free. */
int q8_qat_new(struct q8_qat **out, struct trk_tracker *trk, struct tft_model *model);
/* While attached, every linear fake-quantises its weight (per output channel) and its input
 * (per tensor, with the observer's running max, updated in training), straight-through in
 * backward. */
void q8_qat_attach(struct q8_qat *qat, struct tft_model *model);
void q8_qat_detach(struct q8_qat *qat, struct tft_model *model);
/* Converts: the same int8 model q8_quantize makes, with the observers' ranges. */
int q8_qat_convert(struct q8_model **out, struct tft_model *model, const struct q8_qat *qat);
void q8_qat_free(struct q8_qat *qat);

#endif
