/* ag_ops.h — what an op needs to be written outside autograd/ (int8/'s quantised ops do):
 * the tape node and the helpers every op uses. The context's insides stay private
 * (ag_impl.h). Semi-public: for ops, not for callers of ops (they use autograd.h).
 *
 * An op reads in four steps (ops_elementwise.c has the simplest): its inputs checked and its
 * kernels found, its output made, the kernel called, the node recorded when a gradient is wanted:
 *
 *   const struct kn_backend *kb = ag_begin_f32(ctx, "ag_tanh", 1, &x, (const char *[]){"x"});
 *   if (!kb) return NULL;                                  // NULL input, sticky error, not F32
 *   struct tn_tensor *y = ag_out(ctx, "tanh", TN_F32, x->device, x->ndim, x->ne);
 *   if (!y) return NULL;                                   // "act/<scope>.tanh"
 *   kb->tanh(tn_f32(y), tn_f32(x), tn_numel(x));           // kernels.h
 *   if (ag_wants_grad(ctx, 1, &x)) {
 *       struct ag_node *nd = ag_record(ctx, "ag_tanh", tanh_backward, kb, 1, &x, 1, &y, 0);
 *       if (!nd) return NULL;
 *       ag_save(nd, 0, y);                                 // what backward reads
 *   }
 *   return y;
 *
 * and its backward fetches gradient buffers with ag_grad (allocated zeroed on first use) and
 * calls the d-kernels, which accumulate; or, where a writing kernel fits (a copy, a GEMM with
 * beta 0), with ag_grad_w, which skips the zeroing of a gradient's first contribution.
 */
#ifndef LG_AG_OPS_H
#define LG_AG_OPS_H

#include "autograd.h"
#include "kernels.h"

#define AG_MAX_OUT   8 /* ag_split makes up to this many outputs in one node */
#define AG_MAX_SAVED 6

struct ag_node;
/* Runs one node's backward: reads its outputs' grads, accumulates into its inputs' grads.
 * Returns LG_OK or a status (the error is recorded on the context). */
typedef int (*ag_backward_fn)(struct ag_ctx *ctx, struct ag_node *n);

struct ag_node {
    const char *op; /* "ag_matmul", for messages */
    ag_backward_fn backward;
    const struct kn_backend *kb; /* kernels of the inputs' device */
    int nout;
    struct tn_tensor *out[AG_MAX_OUT];     /* borrowed: the context owns its outputs */
    struct tn_tensor *saved[AG_MAX_SAVED]; /* retained: what backward reads besides inputs */
    int64_t ia[8];                         /* integer arguments (axes, sizes, flags) */
    float fa[4];                           /* float arguments (scale, p) */
    void *extra;                           /* op-specific bytes after in[] (NULL when none) */
    int nin;
    struct tn_tensor *in[]; /* retained inputs (entries may be NULL) */
};

/* False when the context holds an error (a NULL input usually comes from it) or an input is
 * NULL (recorded as "<op>: input 2 is NULL"); then the op returns NULL at once. */
bool ag_inputs_ok(struct ag_ctx *ctx, const char *op, int n, struct tn_tensor *const *xs);
/* The kernel table of the inputs' device (NULL entries skipped); records an error and returns
 * NULL when inputs disagree or the device has no kernels in this build (LG_EUNAVAIL). */
const struct kn_backend *ag_kernels(struct ag_ctx *ctx, const char *op, int n,
                                    struct tn_tensor *const *xs);
/* Records "<op>: <what> is I32, expected F32" unless t is F32. */
bool ag_check_f32(struct ag_ctx *ctx, const char *op, const char *what, const struct tn_tensor *t);
/* The first step of an op whose n inputs must all be F32: ag_inputs_ok, ag_kernels, then
 * ag_check_f32 of each xs[i] as names[i], in that order; the kernels, or NULL with the first
 * failure recorded. */
const struct kn_backend *ag_begin_f32(struct ag_ctx *ctx, const char *op, int n,
                                      struct tn_tensor *const *xs, const char *const *names);
/* "act/<scope>.<name>" into buf. */
void ag_act_name(const struct ag_ctx *ctx, const char *name, char *buf, size_t size);
/* A new output tensor "act/<scope>.<name>", owned by the context (a temporary). */
struct tn_tensor *ag_out(struct ag_ctx *ctx, const char *name, enum tn_dtype dt, enum tn_device dev,
                         int ndim, const int64_t *shape);
/* Registers an existing tensor (a view) as a temporary; returns it, or NULL (released) on
 * failure. */
struct tn_tensor *ag_own(struct ag_ctx *ctx, struct tn_tensor *t);
/* True when gradients are enabled and some input requires one. */
bool ag_wants_grad(const struct ag_ctx *ctx, int n, struct tn_tensor *const *xs);
/* Appends a node: retains the inputs, marks the outputs (requires_grad, node). `extra`
 * zeroed bytes follow the node (nd->extra). NULL + recorded error on failure. */
struct ag_node *ag_record(struct ag_ctx *ctx, const char *op, ag_backward_fn backward,
                          const struct kn_backend *kb, int nin, struct tn_tensor *const *in,
                          int nout, struct tn_tensor *const *out, size_t extra);
/* Keeps t alive for backward in saved[slot] (retained; released with the tape). */
void ag_save(struct ag_node *nd, int slot, struct tn_tensor *t);
/* Sets the node's first n integer arguments, what its backward reads (sizes, axes, flags):
 *   ag_set_ia(nd, 3, (const int64_t[]){outer, n, inner});   // nd->ia[0..2] */
void ag_set_ia(struct ag_node *nd, int n, const int64_t *args);
/* t's gradient accumulator: NULL when t is NULL or needs no gradient. Allocated zeroed on
 * first use: "grad/<name without class>" owned by a leaf, "act.grad/<name>" for an
 * intermediate. On failure *rc gets the status (recorded) and NULL is returned. */
float *ag_grad(struct ag_ctx *ctx, struct tn_tensor *t, int *rc);
/* As ag_grad, for a backward that can write the whole gradient itself: a gradient made now is
 * left uninitialised and *fresh is set — the caller then writes every element (a copy, a
 * GEMM with beta 0) instead of zeroing and accumulating; otherwise it accumulates. */
float *ag_grad_w(struct ag_ctx *ctx, struct tn_tensor *t, bool *fresh, int *rc);
/* x's gradient += alpha·dy (same number of elements), written directly when new. */
int ag_grad_axpy(struct ag_ctx *ctx, const struct kn_backend *kb, struct tn_tensor *x,
                 const float *dy, float alpha);
/* Backward scratch named "act.grad/<owner without class>.<what>"; the caller releases it. */
struct tn_tensor *ag_scratch(struct ag_ctx *ctx, const struct tn_tensor *owner, const char *what,
                             int ndim, const int64_t *shape);

/* Broadcasting (ops_elementwise.c): the numpy result shape of a and b (false when they do
 * not broadcast); the kernel geometry of an output of shape ne[nd] reading a (and b, may be
 * NULL) broadcast to it; the same from explicit strides (0 = broadcast). */
bool ag_broadcast_shape(const struct tn_tensor *a, const struct tn_tensor *b, int *nd, int64_t *ne);
void ag_geom_of(struct kn_geom *g, int nd, const int64_t *ne, const struct tn_tensor *a,
                const struct tn_tensor *b);
void ag_geom_init(struct kn_geom *g, int nd, const int64_t *ne, const int64_t *sa,
                  const int64_t *sb);
/* A view of x with another shape (no copy), recorded as op `name` with an identity backward
 * (ops_shape.c); context-owned. */
struct tn_tensor *ag_view(struct ag_ctx *ctx, struct tn_tensor *x, int ndim, const int64_t *shape,
                          const char *name);

/* Shape of t as "[4, 3]" in a buffer that lives to the end of the enclosing block. */
#define AG_SHAPE(t) tn_shape_str((t), (char[80]){0}, 80)
/* Normalises a possibly negative axis for ndim dims; -1 when out of range. */
int ag_axis(int axis, int ndim);

#endif
