/* autograd.c — the context (options, scopes, the sticky error, temporaries), the tape, the
 * backward walk, and gradient clipping. The ops themselves are in ops_*.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ag_impl.h"

/* ---- life cycle ------------------------------------------------------------------------------ */

/* Freed with ag_ctx_free. */
struct ag_ctx *ag_ctx_new(struct trk_tracker *trk, const struct ag_options *opt)
{
    LG_ASSERT(trk && "ag_ctx_new needs a tracker");
    struct ag_ctx *ctx = trk_alloc(trk, sizeof *ctx, "meta/ag_ctx");
    if (!ctx) return NULL;
    memset(ctx, 0, sizeof *ctx);
    ctx->trk = trk;
    if (opt) ctx->opt = *opt;
    ctx->grad_enabled = true;
    tn_rng_seed(&ctx->rng, ctx->opt.seed);
    /* a step's activations and intermediate gradients take their structs from here (one
     * tracked allocation each, for the data), tagged as the tensor structs of act/ always were */
    ctx->pool = tn_pool_new(trk, "meta/act.tensor");
    if (!ctx->pool) {
        trk_free(trk, ctx);
        return NULL;
    }
    return ctx;
}

/* Frees a list of node chunks. */
void ag_chunks_free(struct trk_tracker *trk, struct ag_chunk *c)
{
    while (c) {
        struct ag_chunk *next = c->next;
        trk_free(trk, c);
        c = next;
    }
}

/* Zeroed room for a node of `size` bytes in the context's chunks; NULL when out of memory. */
static void *node_room(struct ag_ctx *ctx, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    struct ag_chunk *c = ctx->chunk;
    while (c && c->used + size > c->cap) c = c->next; /* a later chunk kept from earlier steps */
    if (!c) {
        size_t cap = size > 65536 ? size : 65536;
        c = trk_alloc(ctx->trk, sizeof *c + cap, "meta/ag_node");
        if (!c) return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = NULL;
        struct ag_chunk **at = &ctx->chunks;
        while (*at) at = &(*at)->next;
        *at = c;
    }
    ctx->chunk = c;
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

static void tape_clear(struct ag_ctx *ctx)
{
    for (size_t i = 0; i < ctx->ntape; i++) {
        struct ag_node *nd = ctx->tape[i];
        for (int k = 0; k < nd->nout; k++) {
            struct tn_tensor *o = nd->out[k];
            o->node = NULL; /* detached: a holder past the reset sees a plain tensor */
            o->requires_grad = false;
            tn_release(o->grad);
            o->grad = NULL;
        }
        for (int k = 0; k < nd->nin; k++) tn_release(nd->in[k]);
        for (int k = 0; k < AG_MAX_SAVED; k++) tn_release(nd->saved[k]);
    }
    ctx->ntape = 0;
    for (struct ag_chunk *c = ctx->chunks; c; c = c->next) c->used = 0; /* rewound, kept */
    ctx->chunk = ctx->chunks;
}

void ag_ctx_reset(struct ag_ctx *ctx)
{
    tape_clear(ctx);
    for (size_t i = 0; i < ctx->ntemps; i++) tn_release(ctx->temps[i]);
    ctx->ntemps = 0;
    ctx->err = LG_OK;
    ctx->errmsg[0] = '\0';
    tn_pool_rewind(ctx->pool); /* the next step makes its tensors in the same order */
}

void ag_ctx_free(struct ag_ctx *ctx)
{
    if (!ctx) return;
    ag_ctx_reset(ctx);
    trk_free(ctx->trk, ctx->temps);
    trk_free(ctx->trk, ctx->tape);
    ag_chunks_free(ctx->trk, ctx->chunks);
    tn_pool_free(ctx->pool);
    trk_free(ctx->trk, ctx);
}

struct trk_tracker *ag_tracker(const struct ag_ctx *ctx) { return ctx->trk; }
void ag_set_training(struct ag_ctx *ctx, bool training) { ctx->opt.training = training; }
bool ag_training(const struct ag_ctx *ctx) { return ctx->opt.training; }
void ag_reseed(struct ag_ctx *ctx, uint64_t seed) { tn_rng_seed(&ctx->rng, seed); }
size_t ag_tape_len(const struct ag_ctx *ctx) { return ctx->ntape; }

bool ag_set_grad_enabled(struct ag_ctx *ctx, bool on)
{
    bool old = ctx->grad_enabled;
    ctx->grad_enabled = on;
    return old;
}

/* ---- scopes ---------------------------------------------------------------------------------- */

void ag_scope_push(struct ag_ctx *ctx, const char *name)
{
    LG_ASSERT(ctx->scope_depth < AG_MAX_SCOPE_DEPTH && "ag_scope_push: scopes nested too deep");
    size_t len = strlen(ctx->scope);
    ctx->scope_len[ctx->scope_depth++] = (int)len;
    if (len) lg_strlcpy(ctx->scope + len, ".", sizeof ctx->scope - len);
    len = strlen(ctx->scope);
    lg_strlcpy(ctx->scope + len, name, sizeof ctx->scope - len);
}

void ag_scope_pushf(struct ag_ctx *ctx, const char *fmt, ...)
{
    char name[LG_MAX_NAME];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    ag_scope_push(ctx, name);
}

void ag_scope_pop(struct ag_ctx *ctx)
{
    LG_ASSERT(ctx->scope_depth > 0 && "ag_scope_pop without a push");
    ctx->scope[ctx->scope_len[--ctx->scope_depth]] = '\0';
}

/* ---- errors ---------------------------------------------------------------------------------- */

int ag_error(const struct ag_ctx *ctx) { return ctx->err; }
const char *ag_errmsg(const struct ag_ctx *ctx) { return ctx->errmsg; }

struct tn_tensor *ag_fail(struct ag_ctx *ctx, int code, const char *fmt, ...)
{
    if (ctx->err != LG_OK) return NULL; /* the first error stays */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
    va_end(ap);
    ctx->err = code ? code : LG_EINTERNAL;
    lg_fail(ctx->err, "%s", ctx->errmsg);
    return NULL;
}

/* The status to return after a failed allocation: the allocator's, recorded on the context. */
static int fail_alloc(struct ag_ctx *ctx, const char *what)
{
    int code = lg_errcode() ? lg_errcode() : LG_ENOMEM;
    char msg[sizeof ctx->errmsg];
    lg_strlcpy(msg, lg_errmsg(), sizeof msg);
    ag_fail(ctx, code, "%s: %s", what, msg);
    return ctx->err;
}

/* ---- temporaries ----------------------------------------------------------------------------- */

/* Grows a pointer array owned by the context; false (nothing changed) when out of memory. */
static bool grow(struct ag_ctx *ctx, void ***arr, size_t *cap, size_t need, const char *tag)
{
    if (need <= *cap) return true;
    size_t ncap = *cap ? *cap * 2 : 256;
    while (ncap < need) ncap *= 2;
    void **n = trk_alloc(ctx->trk, ncap * sizeof *n, tag);
    if (!n) return false;
    if (*arr) memcpy(n, *arr, *cap * sizeof *n);
    trk_free(ctx->trk, *arr);
    *arr = n;
    *cap = ncap;
    return true;
}

struct tn_tensor *ag_own(struct ag_ctx *ctx, struct tn_tensor *t)
{
    if (!t) return NULL;
    if (!grow(ctx, (void ***)&ctx->temps, &ctx->temps_cap, ctx->ntemps + 1, "meta/ag_temps")) {
        tn_release(t);
        fail_alloc(ctx, "autograd temporaries");
        return NULL;
    }
    ctx->temps[ctx->ntemps++] = t;
    return t;
}

struct tn_tensor *ag_adopt(struct ag_ctx *ctx, struct tn_tensor *t) { return ag_own(ctx, t); }

void ag_act_name(const struct ag_ctx *ctx, const char *name, char *buf, size_t size)
{
    if (ctx->scope[0])
        lg_join(buf, size, 4, "act/", ctx->scope, ".", name);
    else
        lg_join(buf, size, 2, "act/", name);
}

struct tn_tensor *ag_out(struct ag_ctx *ctx, const char *name, enum tn_dtype dt, enum tn_device dev,
                         int ndim, const int64_t *shape)
{
    char tag[LG_MAX_NAME];
    ag_act_name(ctx, name, tag, sizeof tag);
    struct tn_tensor *t = tn_new_pooled(ctx->pool, dt, dev, ndim, shape, tag);
    if (!t) {
        fail_alloc(ctx, tag);
        return NULL;
    }
    return ag_own(ctx, t);
}

/* Context-owned; released at the next reset. */
struct tn_tensor *ag_temp(struct ag_ctx *ctx, enum tn_dtype dt, int ndim, const int64_t *shape,
                          const char *what)
{
    if (ctx->err != LG_OK) return NULL;
    return ag_out(ctx, what, dt, ctx->opt.device, ndim, shape);
}

/* ---- helpers for ops ------------------------------------------------------------------------- */

bool ag_inputs_ok(struct ag_ctx *ctx, const char *op, int n, struct tn_tensor *const *xs)
{
    if (ctx->err != LG_OK) return false;
    for (int i = 0; i < n; i++)
        if (!xs[i]) {
            ag_fail(ctx, LG_EINVAL, "%s: input %d is NULL", op, i + 1);
            return false;
        }
    return true;
}

const struct kn_backend *ag_kernels(struct ag_ctx *ctx, const char *op, int n,
                                    struct tn_tensor *const *xs)
{
    enum tn_device dev = TN_CPU;
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (!xs[i]) continue;
        if (any && xs[i]->device != dev) {
            ag_fail(ctx, LG_EINVAL, "%s: inputs on different devices (%s)", op, xs[i]->name);
            return NULL;
        }
        dev = xs[i]->device;
        any = true;
    }
    const struct kn_backend *kb = kn_backend_for(dev);
    if (!kb)
        ag_fail(ctx, LG_EUNAVAIL, "%s: no %s kernels in this build", op,
                dev == TN_CUDA ? "CUDA" : "device");
    return kb;
}

bool ag_check_f32(struct ag_ctx *ctx, const char *op, const char *what, const struct tn_tensor *t)
{
    if (t->dtype == TN_F32) return true;
    ag_fail(ctx, LG_EINVAL, "%s: %s is %s, expected F32", op, what, tn_dtype_name(t->dtype));
    return false;
}

const struct kn_backend *ag_begin_f32(struct ag_ctx *ctx, const char *op, int n,
                                      struct tn_tensor *const *xs, const char *const *names)
{
    if (!ag_inputs_ok(ctx, op, n, xs)) return NULL;
    const struct kn_backend *kb = ag_kernels(ctx, op, n, xs);
    for (int i = 0; kb && i < n; i++)
        if (!ag_check_f32(ctx, op, names[i], xs[i])) kb = NULL;
    return kb;
}

bool ag_wants_grad(const struct ag_ctx *ctx, int n, struct tn_tensor *const *xs)
{
    if (!ctx->grad_enabled) return false;
    for (int i = 0; i < n; i++)
        if (xs[i] && xs[i]->requires_grad) return true;
    return false;
}

int ag_axis(int axis, int ndim)
{
    if (axis < 0) axis += ndim;
    return axis >= 0 && axis < ndim ? axis : -1;
}

/* ---- the tape -------------------------------------------------------------------------------- */

/* Owned by the tape; freed at reset. */
struct ag_node *ag_record(struct ag_ctx *ctx, const char *op, ag_backward_fn backward,
                          const struct kn_backend *kb, int nin, struct tn_tensor *const *in,
                          int nout, struct tn_tensor *const *out, size_t extra)
{
    LG_ASSERT(nout >= 1 && nout <= AG_MAX_OUT);
    size_t head = sizeof(struct ag_node) + (size_t)nin * sizeof(struct tn_tensor *);
    head = (head + 15) & ~(size_t)15;
    if (!grow(ctx, (void ***)&ctx->tape, &ctx->tape_cap, ctx->ntape + 1, "meta/ag_tape")) {
        fail_alloc(ctx, op);
        return NULL;
    }
    struct ag_node *nd = node_room(ctx, head + extra);
    if (!nd) {
        fail_alloc(ctx, op);
        return NULL;
    }
    nd->op = op;
    nd->backward = backward;
    nd->kb = kb;
    nd->nin = nin;
    for (int i = 0; i < nin; i++) nd->in[i] = in[i] ? tn_retain(in[i]) : NULL;
    nd->nout = nout;
    for (int k = 0; k < nout; k++) {
        nd->out[k] = out[k];
        out[k]->node = nd;
        out[k]->requires_grad = true;
    }
    nd->extra = extra ? (char *)nd + head : NULL;
    ctx->tape[ctx->ntape++] = nd;
    return nd;
}

void ag_save(struct ag_node *nd, int slot, struct tn_tensor *t)
{
    LG_ASSERT(slot >= 0 && slot < AG_MAX_SAVED && !nd->saved[slot]);
    nd->saved[slot] = t ? tn_retain(t) : NULL;
}

void ag_set_ia(struct ag_node *nd, int n, const int64_t *args)
{
    LG_ASSERT(n >= 0 && n <= (int)LG_ARRAY_LEN(nd->ia) && "more integer arguments than ia holds");
    memcpy(nd->ia, args, (size_t)n * sizeof *args);
}

/* t's gradient buffer, made on first use (zeroed when `zero`); *fresh tells whether it is new. */
static float *grad_of(struct ag_ctx *ctx, struct tn_tensor *t, bool zero, bool *fresh, int *rc)
{
    *fresh = false;
    if (!t || !t->requires_grad) return NULL;
    if (!t->grad && t->node && t->node->backward == ag_view_backward) {
        /* a view's gradient: a view of its input's, made (zeroed) now if need be, so that
         * whatever flows into the view lands in the input's gradient with no copy */
        struct tn_tensor *x = t->node->in[0];
        float *gx = grad_of(ctx, x, true, fresh, rc);
        *fresh = false;
        if (!gx) return NULL;
        char name[LG_MAX_NAME];
        lg_join(name, sizeof name, 2, "act.grad/", tn_basename(t));
        t->grad = tn_reshape_pooled(ctx->pool, x->grad, t->ndim, t->ne, name);
        if (!t->grad) {
            *rc = fail_alloc(ctx, name);
            return NULL;
        }
        return tn_f32(t->grad);
    }
    if (!t->grad) {
        char name[LG_MAX_NAME];
        lg_join(name, sizeof name, 2, t->node ? "act.grad/" : "grad/", tn_basename(t));
        /* an intermediate's gradient lives no longer than the step: its structs from the
         * pool; a leaf's is tracked alone, beside the leaf */
        t->grad = t->node ? tn_new_pooled(ctx->pool, TN_F32, t->device, t->ndim, t->ne, name)
                          : tn_new(t->st->trk, TN_F32, t->device, t->ndim, t->ne, name);
        const struct kn_backend *kb = t->grad ? kn_backend_for(t->device) : NULL;
        if (t->grad && zero && kb) kb->zero(tn_f32(t->grad), tn_numel(t->grad));
        if (!t->grad) {
            *rc = fail_alloc(ctx, name);
            return NULL;
        }
        *fresh = true;
    }
    return tn_f32(t->grad);
}

float *ag_grad(struct ag_ctx *ctx, struct tn_tensor *t, int *rc)
{
    bool fresh;
    return grad_of(ctx, t, true, &fresh, rc);
}

float *ag_grad_w(struct ag_ctx *ctx, struct tn_tensor *t, bool *fresh, int *rc)
{
    return grad_of(ctx, t, false, fresh, rc);
}

int ag_grad_axpy(struct ag_ctx *ctx, const struct kn_backend *kb, struct tn_tensor *x,
                 const float *dy, float alpha)
{
    int rc = LG_OK;
    bool fresh;
    float *dx = ag_grad_w(ctx, x, &fresh, &rc);
    if (fresh)
        kb->scale(dx, dy, alpha, tn_numel(x));
    else if (dx)
        kb->axpy(dx, dy, alpha, tn_numel(x));
    return rc;
}

/* Caller releases. */
struct tn_tensor *ag_scratch(struct ag_ctx *ctx, const struct tn_tensor *owner, const char *what,
                             int ndim, const int64_t *shape)
{
    char name[LG_MAX_NAME];
    lg_join(name, sizeof name, 4, "act.grad/", tn_basename(owner), ".", what);
    struct tn_tensor *t = tn_new_pooled(ctx->pool, TN_F32, owner->device, ndim, shape, name);
    if (!t) fail_alloc(ctx, name);
    return t;
}

int ag_backward(struct ag_ctx *ctx, struct tn_tensor *loss)
{
    if (ctx->err != LG_OK) return ctx->err;
    if (!loss) {
        ag_fail(ctx, LG_EINVAL, "ag_backward: the loss is NULL");
        return ctx->err;
    }
    if (loss->dtype != TN_F32 || tn_numel(loss) != 1) {
        ag_fail(ctx, LG_EINVAL, "ag_backward: the loss %s must be one F32 element, not %s %s",
                loss->name, tn_dtype_name(loss->dtype), AG_SHAPE(loss));
        return ctx->err;
    }
    if (!loss->requires_grad) {
        ag_fail(ctx, LG_EINVAL,
                "ag_backward: %s does not depend on anything that requires a gradient", loss->name);
        return ctx->err;
    }
    const struct kn_backend *kb = ag_kernels(ctx, "ag_backward", 1, &loss);
    if (!kb) return ctx->err;
    int rc = LG_OK;
    float *g = ag_grad(ctx, loss, &rc);
    if (!g) return rc;
    kb->add_scalar(g, 1.0f, 1);
    for (size_t i = ctx->ntape; i-- > 0;) {
        struct ag_node *nd = ctx->tape[i];
        bool reached = false;
        for (int k = 0; k < nd->nout; k++) reached |= nd->out[k]->grad != NULL;
        if (!reached) continue;
        rc = nd->backward(ctx, nd);
        if (rc != LG_OK) return rc;
        /* every consumer of these outputs ran before: their gradients are spent */
        for (int k = 0; k < nd->nout; k++) {
            tn_release(nd->out[k]->grad);
            nd->out[k]->grad = NULL;
        }
    }
    return LG_OK;
}

/* ---- gradient clipping ----------------------------------------------------------------------- */

/* The global norm's Σ g² over every gradient: runs of gradients on one device go to that
 * device's sumsq_many in chunks (one device read-back per chunk, not per gradient). */
#define AG_NORM_CHUNK 512
static double grad_sumsq(struct tn_tensor **params, int n)
{
    const float *x[AG_NORM_CHUNK];
    int64_t len[AG_NORM_CHUNK];
    const struct kn_backend *run = NULL;
    int k = 0;
    double total = 0.0;
    for (int i = 0; i <= n; i++) {
        struct tn_tensor *g = i < n && params[i] ? params[i]->grad : NULL;
        if (i < n && !g) continue;
        const struct kn_backend *kb = g ? kn_backend_for(g->device) : NULL;
        if (g && !kb) {
            lg_fail(LG_EUNAVAIL, "ag_clip_grad_norm: no kernels for the device of %s", g->name);
            return NAN;
        }
        if (k && (!g || kb != run || k == AG_NORM_CHUNK)) { /* the run ends: sum it */
            total += run->sumsq_many(x, len, k);
            k = 0;
        }
        if (!g) break;
        run = kb;
        x[k] = tn_f32(g);
        len[k++] = tn_numel(g);
    }
    return total;
}

double ag_clip_grad_norm(struct tn_tensor **params, int n, double max_norm)
{
    double total = grad_sumsq(params, n);
    if (!isfinite(total)) return NAN;
    double norm = sqrt(total);
    if (norm > max_norm) {
        float coef = (float)(max_norm / (norm + 1e-6)); /* PyTorch's clip_grad_norm_ */
        for (int i = 0; i < n; i++) {
            struct tn_tensor *g = params[i] ? params[i]->grad : NULL;
            if (g) kn_backend_for(g->device)->scale(tn_f32(g), tn_f32(g), coef, tn_numel(g));
        }
    }
    return norm;
}
