/* optim.h — AdamW with state keyed by parameter name.
 *
 * Worked example:
 *
 *   struct opt_adamw *opt = NULL;
 *   int rc = opt_adamw_new(&opt, trk, &(struct opt_adamw_config){
 *       .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0 });
 *   rc = opt_adamw_add(opt, params, n);   // moments "adam.m/<name>", "adam.v/<name>", zeroed
 *   ... backward ...
 *   ag_clip_grad_norm(params, n, 1.0);
 *   opt_adamw_step(opt);                  // one update of every parameter that has a grad
 *   opt_zero_grad(params, n);             // grads to zero (kept allocated)
 *   opt_adamw_free(opt);                  // frees all state
 *
 * State is keyed by the parameter's name (without its class prefix), so a parameter that is
 * replaced by one of the same name (a reload) keeps its moments. The optimizer borrows the
 * parameter tensors: they must outlive it or be removed first.
 */
#ifndef LG_OPTIM_H
#define LG_OPTIM_H

#include "tensor.h"

struct opt_adamw_config {
    double lr, beta1, beta2, eps, weight_decay; /* decoupled decay: p -= lr * wd * p */
};

struct opt_adamw;

int opt_adamw_new(struct opt_adamw **out, struct trk_tracker *trk,
                  const struct opt_adamw_config *cfg);
/* Frees the optimizer and all its state. NULL does nothing. */
void opt_adamw_free(struct opt_adamw *opt);
/* Registers parameters (borrowed) and allocates their zeroed moments. */
int opt_adamw_add(struct opt_adamw *opt, struct tn_tensor **params, int n);
/* One AdamW update of every registered parameter whose grad exists. */
int opt_adamw_step(struct opt_adamw *opt);
int64_t opt_adamw_steps(const struct opt_adamw *opt);
void opt_adamw_set_lr(struct opt_adamw *opt, double lr);
/* The first moment of a parameter by name ("enc.fc1.weight"), or NULL. Borrowed. */
struct tn_tensor *opt_adamw_moment(struct opt_adamw *opt, const char *name, int which /*1 or 2*/);
/* Bytes of optimizer state. */
size_t opt_adamw_state_bytes(const struct opt_adamw *opt);
/* Moves every moment to dev in place (tn_move), to follow parameters that moved there. */
int opt_adamw_to_device(struct opt_adamw *opt, enum tn_device dev);

/* Sets each parameter's grad to zero (grads stay allocated). */
void opt_zero_grad(struct tn_tensor **params, int n);
/* Frees each parameter's grad. */
void opt_free_grads(struct tn_tensor **params, int n);

#endif
