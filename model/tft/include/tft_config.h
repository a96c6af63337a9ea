/* tft_config.h — the TFT's configuration: sizes, variables and their roles, presets.
 *
 * Worked example:
 *
 *   struct tft_config cfg;
 *   if (tft_config_preset(&cfg, "tiny") != LG_OK) die(lg_errmsg());
 *   printf("%lld parameters\n", (long long)tft_config_param_count(&cfg));   // 27211
 *   char *json = tft_config_to_json(&cfg);    // the checkpoint's __metadata__["config"]
 *   struct tft_config back;
 *   int rc = tft_config_from_json(&back, json, "ckpt.safetensors");
 *   free(json);
 *
 * Variables are kept in the spec's order (spec/TFT.md): statics (categoricals, then reals),
 * observed reals (target first), known categoricals, known reals. The encoder sees observed +
 * known variables, the decoder known ones.
 */
#ifndef LG_TFT_CONFIG_H
#define LG_TFT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "lg_base.h"
#include "tensor.h"

#define TFT_MAX_VARS      32
#define TFT_MAX_QUANTILES 9
#define TFT_VAR_NAME      48

enum tft_kind { TFT_REAL = 0, TFT_CAT = 1 };
enum tft_role { TFT_STATIC = 0, TFT_OBSERVED = 1, TFT_KNOWN = 2 };

struct tft_var {
    char name[TFT_VAR_NAME];
    enum tft_kind kind;
    enum tft_role role;
    int cardinality; /* categoricals only; 0 for reals */
};

struct tft_config {
    char preset[32];
    int hidden; /* H */
    int n_head;
    int lstm_layers; /* L */
    int T_enc, T_dec;
    int n_quantiles;
    float quantiles[TFT_MAX_QUANTILES];
    int n_vars;
    struct tft_var vars[TFT_MAX_VARS]; /* spec order, see above */
    /* training hyper-parameters of the preset */
    float dropout;
    int batch;
    double lr;
    double max_grad_norm;
};

/* Fills cfg from a preset name: "tiny", "electricity", "foxhunt-815". LG_EINVAL + message
 * listing the presets when unknown. */
int tft_config_preset(struct tft_config *cfg, const char *name);
/* The preset names, NULL-terminated. */
const char *const *tft_config_preset_names(void);
/* Checks sizes and variable order; LG_EINVAL with a message naming the problem. */
int tft_config_validate(const struct tft_config *cfg);

/* Counts by role; `idx` (may be NULL) receives the indices into cfg->vars in spec order:
 * static: statics; encoder: observed then known; decoder: known. */
int tft_static_vars(const struct tft_config *cfg, int *idx);
int tft_encoder_vars(const struct tft_config *cfg, int *idx);
int tft_decoder_vars(const struct tft_config *cfg, int *idx);
int tft_observed_vars(const struct tft_config *cfg, int *idx);
/* Index of the target (the first observed variable), or -1. */
int tft_target_var(const struct tft_config *cfg);

/* Parameter count from the sizes alone (independent of the model code). */
int64_t tft_config_param_count(const struct tft_config *cfg);

/* JSON text of the config (keys as spec/TFT.md lists); the caller frees it with free(). */
char *tft_config_to_json(const struct tft_config *cfg);
/* Parses JSON text; `where` names the source in messages. LG_EFORMAT on bad input. */
int tft_config_from_json(struct tft_config *cfg, const char *json, const char *where);

/* ---- a batch ----------------------------------------------------------------------------- */

/* One batch of inputs, tensors tagged "data/<var>"; layout as spec/TFT.md's debug state:
 *   static variable      x[v] [B]          (I32 categorical, F32 real)
 *   observed variable    x[v] [B, T_enc]   (F32)
 *   known variable       x[v] [B, T]       (I32 categorical, F32 real), T = T_enc + T_dec
 *   y                    [B, T_dec]        target over the decoder steps (F32)
 * x is indexed like cfg->vars. */
struct tft_batch {
    int B;
    struct tn_tensor *x[TFT_MAX_VARS];
    struct tn_tensor *y;
};
/* Releases every tensor of the batch and zeroes it. */
void tft_batch_fini(struct tft_batch *b);
/* Moves every tensor of the batch to dev in place (tn_move); the batch stays whole on error. */
int tft_batch_to_device(struct tft_batch *b, enum tn_device dev);

#endif
