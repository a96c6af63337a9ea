/* tft.h — the Temporal Fusion Transformer behind a model interface.
 *
 * Worked example (one forward pass in evaluation mode):
 *
 *   struct tft_config cfg;
 *   tft_config_preset(&cfg, "tiny");
 *   struct tft_model *m = NULL;
 *   if (tft_new(&m, trk, &cfg, 42) != LG_OK) die(lg_errmsg());   // builds the VarMap
 *   struct ag_ctx *ctx = ag_ctx_new(trk, &(struct ag_options){ .training = false });
 *   struct tn_tensor *yhat = tft_forward(m, ctx, &batch);       // [B, T_dec, Q]
 *   ...
 *   ag_ctx_free(ctx);
 *   tft_free(m);                                                // releases the VarMap
 *
 * The interface mirrors the original trainer's `Box<dyn Model>`: a table of functions
 * (forward, get_varmap, free) over an opaque implementation; TemporalFusionTransformer
 * (tft.c) is the one implementation. The model owns one reference to its VarMap; anyone else
 * who wants the map borrows it through get_varmap, which returns a new reference the caller
 * must release with its own holder — the ledger names whoever forgets.
 */
#ifndef LG_TFT_H
#define LG_TFT_H

#include "autograd.h"
#include "tft_config.h"
#include "varmap.h"

/* Optional quantised execution: a hook the INT8 path installs so that every linear layer
 * of the forward pass goes through it (returns NULL to fall back to f32). */
struct tft_linear_hook {
    struct tn_tensor *(*linear)(void *user, struct ag_ctx *ctx, const char *name,
                                struct tn_tensor *x, struct tn_tensor *w, struct tn_tensor *b);
    void *user;
};

struct tft_model;

struct tft_model_vt {
    const char *kind; /* "TemporalFusionTransformer" */
    /* Quantile forecasts [B, T_dec, Q], owned by ctx. NULL on error (ag_errmsg(ctx)). */
    struct tn_tensor *(*forward)(struct tft_model *m, struct ag_ctx *ctx,
                                 const struct tft_batch *batch);
    /* A new reference to the model's VarMap for `holder`; release with vm_release. */
    struct vm_varmap *(*get_varmap)(struct tft_model *m, const void *holder, struct trk_site site);
    /* Releases the model's VarMap reference and frees the model. NULL does nothing. */
    void (*free)(struct tft_model *m);
};

struct tft_model {
    const struct tft_model_vt *vt;
    struct tft_config cfg;
    struct tft_linear_hook hook; /* zeroed: plain f32 linears */
};

/* Builds a TemporalFusionTransformer: creates its VarMap ("varmap/<names>", seeded init). */
int tft_new(struct tft_model **out, struct trk_tracker *trk, const struct tft_config *cfg,
            uint64_t seed);
/* Builds the model over an existing VarMap (takes a reference of its own). */
int tft_new_from_varmap(struct tft_model **out, struct vm_varmap *vm, const struct tft_config *cfg);
/* The model's VarMap without a new reference (for code that holds the model). */
struct vm_varmap *tft_varmap_borrow(struct tft_model *m);
/* Moves every parameter of the VarMap (with its gradient) and the model's constants to dev in
 * place: the tensors keep their identity and names, their memory is re-allocated on dev (tagged
 * as before) and the old memory freed. A forward pass then runs on dev given a batch there
 * (tft_batch_to_device). On failure some tensors may have moved: free the model. */
int tft_to_device(struct tft_model *m, enum tn_device dev);

/* Quantile forecasts [B, T_dec, Q], owned by ctx; NULL on error (ag_errmsg(ctx)). */
struct tn_tensor *tft_forward(struct tft_model *m, struct ag_ctx *ctx,
                              const struct tft_batch *batch);
/* Frees the model (it releases its VarMap reference); NULL does nothing. */
void tft_free(struct tft_model *m);

/* The mean pinball loss of yhat against batch->y (context-owned scalar). */
struct tn_tensor *tft_loss(struct tft_model *m, struct ag_ctx *ctx, struct tn_tensor *yhat,
                           const struct tft_batch *batch);

#endif
