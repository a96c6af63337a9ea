/* autograd.h — a tape autograd over tn_tensor, and the operations the TFT needs.
 *
 * Worked example (one training step of a linear layer):
 *
 *   struct ag_ctx *ctx = ag_ctx_new(trk, &(struct ag_options){ .training = true, .seed = 1 });
 *   // w, b: leaves with requires_grad = true (the VarMap's parameters)
 *   ag_scope_push(ctx, "head");
 *   struct tn_tensor *y = ag_linear(ctx, x, w, b);         // act/head.linear  [B, out]
 *   ag_scope_pop(ctx);
 *   struct tn_tensor *loss = ag_pinball_loss(ctx, y3, target, q, 3);
 *   if (!loss) { fprintf(stderr, "%s\n", ag_errmsg(ctx)); ... }   // first error, sticky
 *   ag_backward(ctx, loss);       // w->grad, b->grad allocated on first use ("grad/<name>")
 *   ag_ctx_reset(ctx);            // drops the tape and every intermediate of the step
 *   ag_ctx_free(ctx);
 *
 * Ownership: every tensor an op returns is owned by the context, which releases it at the
 * next ag_ctx_reset (or ag_ctx_free). Keep one longer with tn_retain. Inputs are borrowed.
 * While gradients are enabled and any input requires a gradient, the op records a node on the
 * tape; the node holds references to what its backward needs (saved inputs, saved outputs).
 * Gradients of leaves accumulate (+=) into leaf->grad, allocated on first use with the tag
 * "grad/<name without class>", and owned by the leaf; intermediate gradients are temporaries
 * of the context ("act.grad/..."), released as soon as the node that made the tensor has run.
 *
 * Errors: an op given bad shapes or dtypes returns NULL and records a message naming the op
 * and the shapes ("ag_matmul: inner dimensions differ: a [4, 3] b [5, 2]"). The first error
 * is sticky: any op given a NULL input returns NULL at once, so a forward pass can be written
 * straight through and checked once at the end (ag_error).
 *
 * Devices: ops run where their inputs are (all inputs on one device). CPU kernels use
 * OpenBLAS; CUDA kernels come with the CUDA build.
 */
#ifndef LG_AUTOGRAD_H
#define LG_AUTOGRAD_H

#include "tensor.h"

struct ag_ctx;

struct ag_options {
    bool training;         /* dropout active */
    uint64_t seed;         /* dropout RNG */
    enum tn_device device; /* where new tensors are made (inputs must agree) */
};

/* New context; freed with ag_ctx_free. NULL + LG_ENOMEM on failure. */
struct ag_ctx *ag_ctx_new(struct trk_tracker *trk, const struct ag_options *opt);
/* Releases the tape and all temporaries, then the context. NULL does nothing. */
void ag_ctx_free(struct ag_ctx *ctx);
/* Releases the tape and all temporaries made since the last reset; clears the error. */
void ag_ctx_reset(struct ag_ctx *ctx);

struct trk_tracker *ag_tracker(const struct ag_ctx *ctx);
void ag_set_training(struct ag_ctx *ctx, bool training);
bool ag_training(const struct ag_ctx *ctx);
/* Enables or disables recording (evaluation runs with it off); returns the old value. */
bool ag_set_grad_enabled(struct ag_ctx *ctx, bool on);
void ag_reseed(struct ag_ctx *ctx, uint64_t seed);

/* Names: activations are tagged "act/<scope>.<op>", e.g. "act/enc_vsn.var_grn.dow.fc1".
 * Scopes nest with '.'. */
void ag_scope_push(struct ag_ctx *ctx, const char *name);
void ag_scope_pushf(struct ag_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ag_scope_pop(struct ag_ctx *ctx);

/* Sticky error: LG_OK or the status of the first failure since the last reset. */
int ag_error(const struct ag_ctx *ctx);
const char *ag_errmsg(const struct ag_ctx *ctx);
/* Records an error on the context (for code built on ops); returns NULL for convenience. */
struct tn_tensor *ag_fail(struct ag_ctx *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A new f32 temporary owned by the context (tagged "act/<scope>.<what>"). */
struct tn_tensor *ag_temp(struct ag_ctx *ctx, enum tn_dtype dt, int ndim, const int64_t *shape,
                          const char *what);
/* Hands a tensor the caller made to the context, which releases it at reset (no retain). */
struct tn_tensor *ag_adopt(struct ag_ctx *ctx, struct tn_tensor *t);

/* Backpropagates from a scalar (numel 1) loss with d loss = 1. Returns LG_OK or a status. */
int ag_backward(struct ag_ctx *ctx, struct tn_tensor *loss);
/* Number of nodes on the tape and bytes its saved tensors hold (for tests and reports). */
size_t ag_tape_len(const struct ag_ctx *ctx);

/* Takes the current tape and every temporary out of the context (which starts over empty):
 * a kept graph, freed with ag_tape_free. NULL + LG_ENOMEM on failure (nothing moved). */
struct ag_tape;
struct ag_tape *ag_ctx_take_tape(struct ag_ctx *ctx);
size_t ag_tape_nodes(const struct ag_tape *t);
void ag_tape_free(struct ag_tape *t);

/* ---- operations (forward and backward); all return context-owned tensors ---------- */

/* Matrix product over the last two axes. a [..., M, K] (or [..., K, M] when ta),
 * b [K, N] (or [N, K] when tb) shared by every batch, or b [..., K, N] with the same leading
 * dims as a. */
struct tn_tensor *ag_matmul(struct ag_ctx *ctx, struct tn_tensor *a, struct tn_tensor *b, bool ta,
                            bool tb);
/* y = x·Wᵀ + b over the last axis: x [..., in], W [out, in], b [out] or NULL. */
struct tn_tensor *ag_linear(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *w,
                            struct tn_tensor *b);
/* ag_linear with an epilogue applied to its own output in place: AG_EPI_ELU is ag_elu of it,
 * AG_EPI_DROPOUT ag_dropout of it with probability p (the same draw; identity when not training
 * or p = 0). One output instead of two and, in backward, one gradient: the output's gradient is
 * turned into the product's in place, so after ag_backward it holds dL/d(x·Wᵀ + b), not dL/dy.
 * Tagged "act/<scope>.linear.elu" / ".linear.dropout". */
enum ag_epilogue { AG_EPI_NONE, AG_EPI_ELU, AG_EPI_DROPOUT };
struct tn_tensor *ag_linear_ex(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *w,
                               struct tn_tensor *b, enum ag_epilogue epi, float p);
/* Elementwise with numpy broadcasting (shapes aligned from the right). */
struct tn_tensor *ag_add(struct ag_ctx *ctx, struct tn_tensor *a, struct tn_tensor *b);
struct tn_tensor *ag_sub(struct ag_ctx *ctx, struct tn_tensor *a, struct tn_tensor *b);
struct tn_tensor *ag_mul(struct ag_ctx *ctx, struct tn_tensor *a, struct tn_tensor *b);
struct tn_tensor *ag_scale(struct ag_ctx *ctx, struct tn_tensor *x, float s);
struct tn_tensor *ag_sigmoid(struct ag_ctx *ctx, struct tn_tensor *x);
struct tn_tensor *ag_tanh(struct ag_ctx *ctx, struct tn_tensor *x);
struct tn_tensor *ag_elu(struct ag_ctx *ctx, struct tn_tensor *x); /* alpha = 1 */
/* Softmax over the last axis. */
struct tn_tensor *ag_softmax(struct ag_ctx *ctx, struct tn_tensor *x);
/* x + mask, mask broadcast over x and never differentiated (e.g. -inf above the diagonal). */
struct tn_tensor *ag_add_mask(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *mask);
/* Layer norm over the last axis with affine w, b [d]. */
struct tn_tensor *ag_layernorm(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *w,
                               struct tn_tensor *b, float eps);
/* Rows of W [card, H] picked by idx (I32, any shape) → [idx shape..., H]. Backward
 * scatter-adds into W's gradient. Indices out of range are an error. */
struct tn_tensor *ag_embedding(struct ag_ctx *ctx, struct tn_tensor *w, struct tn_tensor *idx);
/* Concatenation along `axis` (negative counts from the end). */
struct tn_tensor *ag_concat(struct ag_ctx *ctx, struct tn_tensor **xs, int n, int axis);
/* x[..., start:start+len, ...] along axis (a copy). */
struct tn_tensor *ag_slice(struct ag_ctx *ctx, struct tn_tensor *x, int axis, int64_t start,
                           int64_t len);
/* Splits x into n equal parts along axis; writes n tensors to out. Returns LG_OK or status. */
int ag_split(struct ag_ctx *ctx, struct tn_tensor *x, int axis, int n, struct tn_tensor **out);
struct tn_tensor *ag_reshape(struct ag_ctx *ctx, struct tn_tensor *x, int ndim,
                             const int64_t *shape);
/* out.shape[i] = x.shape[perm[i]] (a copy). */
struct tn_tensor *ag_permute(struct ag_ctx *ctx, struct tn_tensor *x, const int *perm);
/* Broadcasts x to shape (a copy; sizes of 1 expand). */
struct tn_tensor *ag_expand(struct ag_ctx *ctx, struct tn_tensor *x, int ndim,
                            const int64_t *shape);
/* Stacks n same-shaped tensors along a new axis. */
struct tn_tensor *ag_stack(struct ag_ctx *ctx, struct tn_tensor **xs, int n, int axis);
struct tn_tensor *ag_sum(struct ag_ctx *ctx, struct tn_tensor *x, int axis, bool keepdim);
struct tn_tensor *ag_mean(struct ag_ctx *ctx, struct tn_tensor *x, int axis, bool keepdim);
/* Sum of every element → [1]. */
struct tn_tensor *ag_sum_all(struct ag_ctx *ctx, struct tn_tensor *x);
/* Inverted dropout with probability p (seeded by the context); identity when not training. */
struct tn_tensor *ag_dropout(struct ag_ctx *ctx, struct tn_tensor *x, float p);

/* Fused blocks (ops_fused.c): the same arithmetic as the chain of ops each replaces, without its
 * intermediate tensors. GateAddNorm: y = LN(skip + a ⊙ σ(g)) over the last axis, where
 * z [..., 2d] = [a, g] (first half value, second half gate), skip [..., d], w, b [d]. */
struct tn_tensor *ag_gate_add_norm(struct ag_ctx *ctx, struct tn_tensor *z, struct tn_tensor *skip,
                                   struct tn_tensor *w, struct tn_tensor *b, float eps);
/* Σ_j v[..., j] · xs[j]: n tensors [..., h] weighted by v [..., n] → [..., h]. */
struct tn_tensor *ag_weighted_sum(struct ag_ctx *ctx, struct tn_tensor **xs, int n,
                                  struct tn_tensor *v);

/* One input of ag_linear_concat: x [..., H] (w and b NULL), or a factored input
 * ξ = x ⊗ w + b given by x [..., 1] and a factor w, b (NULL: none) of H elements each — a real
 * variable's embedding, x·wᵀ + b with w [H, 1], never materialised. */
struct ag_term {
    struct tn_tensor *x, *w, *b;
};
#define AG_MAX_TERMS 32
/* concat_j(ξ_j)·Wᵀ + bias over the last axis without building the concatenation: W [out, n·H]
 * is read in column blocks W_j [out, H] in place, and a factored term costs no product over its
 * rows (W_j·ξ_j = x ⊗ (W_j·w) + W_j·b). Every x has the first's leading dims; bias [out] or
 * NULL; n ≤ AG_MAX_TERMS. An epilogue as ag_linear_ex's (AG_EPI_NONE: none). */
struct tn_tensor *ag_linear_concat(struct ag_ctx *ctx, const struct ag_term *terms, int n,
                                   struct tn_tensor *w, struct tn_tensor *bias,
                                   enum ag_epilogue epi, float p);

/* One LSTM layer over a sequence, fused (gate order i, f, g, o):
 *   x [B, T, In], h0 [B, H], c0 [B, H], w_ih [4H, In], w_hh [4H, H], b_ih [4H], b_hh [4H]
 *   → out [B, T, H] (h at every step) and c_last [B, H].
 * Gates are saved for backpropagation through time. h0 and c0 may be NULL (zeros). */
struct ag_lstm_out {
    struct tn_tensor *out;
    struct tn_tensor *c_last;
};
struct ag_lstm_out ag_lstm(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *h0,
                           struct tn_tensor *c0, struct tn_tensor *w_ih, struct tn_tensor *w_hh,
                           struct tn_tensor *b_ih, struct tn_tensor *b_hh);

/* Quantile (pinball) loss: yhat [B, T, Q], y [B, T], quantiles q[Q] →
 * [1] = Σ_q mean_{b,t} (q·max(y−ŷ, 0) + (1−q)·max(ŷ−y, 0)). */
struct tn_tensor *ag_pinball_loss(struct ag_ctx *ctx, struct tn_tensor *yhat, struct tn_tensor *y,
                                  const float *q, int nq);

/* Fake quantisation for QAT: symmetric int8 per output row (axis 0 of a 2-D weight) with
 * scale = max|row| / 127, or per tensor when per_row is false; straight-through gradient
 * (passed where |x| <= max, zero where clipped). */
struct tn_tensor *ag_fake_quant(struct ag_ctx *ctx, struct tn_tensor *x, bool per_row);

/* ---- outside the tape ------------------------------------------------------------------ */

/* Scales the gradients of `params` so that their global L2 norm is at most max_norm;
 * returns the norm before clipping (NaN when a gradient is non-finite). */
double ag_clip_grad_norm(struct tn_tensor **params, int n, double max_norm);

#endif
