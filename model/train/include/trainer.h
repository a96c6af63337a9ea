/* trainer.h — the training session every leakgate run repeats, with the original trainer's API.
 *
 * Worked example (one FP32 session):
 *
 *   struct tft_model *model;   tft_new(&model, trk, &cfg, seed);
 *   struct tr_trainer *tr;
 *   tr_new(&tr, model, ds, &(struct tr_options){ .steps = 20, .seed = 7 });
 *   tr_initialize_optimizer(tr);          // AdamW over the VarMap's variables
 *   tr_train(tr, &stats);                 // K steps: forward, loss, backward, clip, AdamW
 *   tr_validate(tr, &val_loss);
 *   tr_save_checkpoint(tr, "out/ckpt.safetensors");
 *   tr_free(tr);                          // frees optimizer state and gradients
 *   tft_free(model);               // frees the VarMap: nothing is left
 *
 * The trainer borrows the model's VarMap through the model and keeps no reference of its own
 * (the fix of the original 815 MB leak). tr_get_varmap hands out a new reference that the
 * caller releases. Faults (struct tr_faults) re-create known leak classes inside these real
 * code paths, so a harness can prove it catches each of them.
 */
#ifndef LG_TRAINER_H
#define LG_TRAINER_H

#include "data.h"
#include "optim.h"
#include "tft.h"

/* Known leak classes, re-created in place (each off by default): one table drives the struct,
 * the names `--inject` takes, what each needs and its documentation (harness/inject.c).
 *   X(name, field, kind, needs, what stays alive)
 * kind: FLAG (a bool) or SIZE (bytes per session); needs: what the run must have for the fault
 * to apply (NONE, CUDA, INT8 or QAT in --modes). */
#define TR_FAULTS(X)                                                                               \
    X("varmap-dup-ref", varmap_dup_ref, FLAG, NONE,                                                \
      "the original bug: tr_new takes its own VarMap reference, tr_free never drops it")           \
    X("adam-state", adam_state, FLAG, NONE,                                                        \
      "tr_free forgets the optimizer (adam.m/, adam.v/ stay)")                                     \
    X("grad-retained", grad_retained, FLAG, NONE,                                                  \
      "the last step's gradients kept for a norm report")                                          \
    X("tape-retained", tape_retained, FLAG, NONE,                                                  \
      "the last training step's tape kept for debugging")                                          \
    X("ckpt-buffer", ckpt_buffer, FLAG, NONE, "the checkpoint verification's staging buffer")      \
    X("int8-calibration", int8_calibration, FLAG, INT8,                                            \
      "PTQ calibration statistics (int8/calib...)")                                                \
    X("qat-observer", qat_observer, FLAG, QAT, "QAT observers (qat/observer...)")                  \
    X("device-tensor", device_tensor, FLAG, CUDA,                                                  \
      "the step's device workspace (act/device.scratch)")                                          \
    X("raw-malloc", raw_malloc, SIZE, NONE, "untagged malloc: only jemalloc's allocated sees it")  \
    X("raw-mmap", raw_mmap, SIZE, NONE, "anonymous mmap outside the allocator: only RSS sees it")

#define TR_FAULT_FIELD_FLAG(field) bool field
#define TR_FAULT_FIELD_SIZE(field) size_t field
struct tr_faults {
#define X(n_, f_, k_, r_, w_) TR_FAULT_FIELD_##k_(f_);
    TR_FAULTS(X)
#undef X
};

/* Called after every training step and at phase changes (for timelines). */
typedef void (*tr_progress_fn)(void *user, const char *phase, int step, double loss);

struct tr_options {
    int steps;             /* training steps per tr_train call (default 20) */
    int batch;             /* 0: the preset's batch */
    double lr;             /* 0: the preset's */
    double max_grad_norm;  /* 0: the preset's */
    uint64_t seed;         /* batches and dropout */
    int val_batches;       /* validation batches (default 4) */
    int calib_batches;     /* PTQ calibration batches (default 4) */
    int qat_steps;         /* QAT fine-tuning steps (default steps / 2, at least 1) */
    enum tn_device device; /* where the model runs (tr_new moves it there; INT8 and QAT
                              finalisation bring it back to the host, where int8 runs) */
    struct tr_faults faults;
    tr_progress_fn progress;
    void *progress_user;
};

struct tr_train_stats {
    int steps;
    double first_loss, last_loss, mean_loss; /* training pinball loss */
    double grad_norm;                        /* global norm before clipping, last step */
    double seconds;
};

struct tr_quant_stats {
    double fp32_val_loss, quant_val_loss;
    int64_t int8_bytes; /* int8 weights + scales */
    int layers;         /* linear layers quantised */
};

struct tr_trainer;

/* Creates a trainer over `model` (borrowed: it must outlive the trainer) and `data`
 * (borrowed). Frees with tr_free. */
int tr_new(struct tr_trainer **out, struct tft_model *model, struct data_set *data,
           const struct tr_options *opt);
/* AdamW over the VarMap's variables, state keyed by name ("adam.m/<name>", "adam.v/<name>"). */
int tr_initialize_optimizer(struct tr_trainer *tr);
/* opt->steps training steps (global-norm clipping, seeded dropout and batches). */
int tr_train(struct tr_trainer *tr, struct tr_train_stats *stats);
/* Mean pinball loss over the fixed validation windows, dropout off. */
int tr_validate(struct tr_trainer *tr, double *loss);
/* Saves the VarMap as safetensors (with the config), then re-opens the file and verifies
 * every tensor against memory through a tagged staging buffer ("ckpt/staging"). */
int tr_save_checkpoint(struct tr_trainer *tr, const char *path);
/* Post-training quantisation: calibrate activation ranges over calib_batches, quantise every
 * linear layer to int8 (per-output-channel weights), evaluate, free the int8 model. */
int tr_finalize_int8_training(struct tr_trainer *tr, struct tr_quant_stats *st);
/* Quantisation-aware fine-tuning (fake quantisation, straight-through), then the same
 * conversion and evaluation. */
int tr_finalize_qat_training(struct tr_trainer *tr, struct tr_quant_stats *st);
/* A new VarMap reference for `holder` (release it with vm_release). */
struct vm_varmap *tr_get_varmap(struct tr_trainer *tr, const void *holder, struct trk_site site);
/* Frees the optimizer state, the gradients and the trainer. NULL does nothing. */
void tr_free(struct tr_trainer *tr);

#endif
