/* ops_elementwise.c — add, sub, mul with numpy broadcasting; scale; sigmoid, tanh, elu;
 * dropout. Shapes are checked and the tape recorded here; the loops are kernels (kernels.h). */
#include <string.h>

#include "ag_impl.h"

/* ---- broadcasting ---------------------------------------------------------------------------- */

/* Contiguous element strides of t aligned from the right to `nd` output dims, 0 where t has
 * no such dim or a size of 1 (it broadcasts). */
static void bcast_strides(const struct tn_tensor *t, int nd, int64_t *st)
{
    int64_t s = 1;
    for (int k = nd - 1; k >= 0; k--) {
        int kt = k - (nd - t->ndim);
        if (kt < 0 || t->ne[kt] == 1) {
            st[k] = 0;
            continue;
        }
        st[k] = s;
        s *= t->ne[kt];
    }
}

void ag_geom_init(struct kn_geom *g, int nd, const int64_t *ne, const int64_t *sa,
                  const int64_t *sb)
{
    /* merge neighbouring dims that both operands walk as one (a dim continues the next
     * inner one: stride = inner stride × inner size, which includes broadcasting 0 = 0), drop
     * dims of size 1, then right-align into 4 */
    int64_t mne[4], msa[4], msb[4];
    int m = 0;
    for (int k = nd - 1; k >= 0; k--) {
        if (ne[k] == 1) continue;
        int64_t xa = sb ? sb[k] : 0;
        if (m > 0 && sa[k] == msa[m - 1] * mne[m - 1] && xa == msb[m - 1] * mne[m - 1]) {
            mne[m - 1] *= ne[k];
            continue;
        }
        mne[m] = ne[k];
        msa[m] = sa[k];
        msb[m] = xa;
        m++;
    }
    for (int k = 0; k < 4; k++) {
        int src = 3 - k; /* g dims from the innermost */
        g->ne[src] = k < m ? mne[k] : 1;
        g->sa[src] = k < m ? msa[k] : 0;
        g->sb[src] = k < m ? msb[k] : 0;
    }
}

bool ag_broadcast_shape(const struct tn_tensor *a, const struct tn_tensor *b, int *nd, int64_t *ne)
{
    *nd = LG_MAX(a->ndim, b->ndim);
    for (int k = 0; k < *nd; k++) {
        int ka = k - (*nd - a->ndim), kb = k - (*nd - b->ndim);
        int64_t da = ka >= 0 ? a->ne[ka] : 1, db = kb >= 0 ? b->ne[kb] : 1;
        if (da != db && da != 1 && db != 1) return false;
        ne[k] = da == 1 ? db : da;
    }
    return true;
}

void ag_geom_of(struct kn_geom *g, int nd, const int64_t *ne, const struct tn_tensor *a,
                const struct tn_tensor *b)
{
    int64_t sa[TN_MAX_DIMS], sb[TN_MAX_DIMS];
    bcast_strides(a, nd, sa);
    if (b) bcast_strides(b, nd, sb);
    ag_geom_init(g, nd, ne, sa, b ? sb : NULL);
}

static void geom_swap(struct kn_geom *g)
{
    for (int k = 0; k < 4; k++) {
        int64_t t = g->sa[k];
        g->sa[k] = g->sb[k];
        g->sb[k] = t;
    }
}

/* ---- add, sub, mul --------------------------------------------------------------------------- */

static const char *const binop_name[] = {"ag_add", "ag_sub", "ag_mul"};
static const char *const binop_short[] = {"add", "sub", "mul"};

/* The gradient of one operand: dx [+]= dy (times `other` for mul), summed over the dims x was
 * broadcast along. g reads x at g.sa and `other` at g.sb. An operand of the output's own shape
 * whose gradient is new is written directly (no zeroing pass). */
static int binary_grad(struct ag_ctx *ctx, const struct kn_backend *kb, struct tn_tensor *x,
                       const struct tn_tensor *y, const struct tn_tensor *other, enum kn_binop op,
                       float sign, const struct kn_geom *g)
{
    int rc = LG_OK;
    bool fresh = false;
    const float *dy = tn_f32(y->grad);
    float *dx = tn_numel(x) == tn_numel(y) ? ag_grad_w(ctx, x, &fresh, &rc) : ag_grad(ctx, x, &rc);
    if (!dx) return rc;
    if (fresh && op == KN_MUL)
        kb->binary(dx, dy, tn_f32(other), KN_MUL, g); /* x is output-shaped: g.sa walks dy */
    else if (fresh)
        kb->scale(dx, dy, sign, tn_numel(x));
    else if (op == KN_MUL)
        kb->dmul(dx, dy, tn_f32(other), g);
    else
        kb->dgather(dx, dy, sign, g);
    return LG_OK;
}

static int binary_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    struct tn_tensor *a = nd->in[0], *b = nd->in[1];
    enum kn_binop op = (enum kn_binop)nd->ia[0];
    struct kn_geom g = *(const struct kn_geom *)nd->extra, gb = g;
    geom_swap(&gb);
    int rc = binary_grad(ctx, nd->kb, a, nd->out[0], b, op, 1.0f, &g);
    if (rc == LG_OK)
        rc = binary_grad(ctx, nd->kb, b, nd->out[0], a, op, op == KN_SUB ? -1.0f : 1.0f, &gb);
    return rc;
}

static struct tn_tensor *binary(struct ag_ctx *ctx, struct tn_tensor *a, struct tn_tensor *b,
                                enum kn_binop op)
{
    const char *name = binop_name[op];
    struct tn_tensor *in[2] = {a, b};
    const struct kn_backend *kb = ag_begin_f32(ctx, name, 2, in, (const char *[]){"a", "b"});
    if (!kb) return NULL;
    int nd;
    int64_t ne[TN_MAX_DIMS];
    if (!ag_broadcast_shape(a, b, &nd, ne))
        return ag_fail(ctx, LG_EINVAL, "%s: shapes do not broadcast: a %s b %s", name, AG_SHAPE(a),
                       AG_SHAPE(b));
    struct kn_geom g;
    ag_geom_of(&g, nd, ne, a, b);
    struct tn_tensor *y = ag_out(ctx, binop_short[op], TN_F32, a->device, nd, ne);
    if (!y) return NULL;
    kb->binary(tn_f32(y), tn_f32(a), tn_f32(b), op, &g);
    if (ag_wants_grad(ctx, 2, in)) {
        struct ag_node *n = ag_record(ctx, name, binary_backward, kb, 2, in, 1, &y, sizeof g);
        if (!n) return NULL;
        n->ia[0] = op;
        memcpy(n->extra, &g, sizeof g); /* mul's backward reads a and b, retained in in[] */
    }
    return y;
}

struct tn_tensor *ag_add(struct ag_ctx *ctx, struct tn_tensor *a, struct tn_tensor *b)
{
    return binary(ctx, a, b, KN_ADD);
}

struct tn_tensor *ag_sub(struct ag_ctx *ctx, struct tn_tensor *a, struct tn_tensor *b)
{
    return binary(ctx, a, b, KN_SUB);
}

struct tn_tensor *ag_mul(struct ag_ctx *ctx, struct tn_tensor *a, struct tn_tensor *b)
{
    return binary(ctx, a, b, KN_MUL);
}

/* ---- scale ---------------------------------------------------------------------------------- */

static int scale_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    return ag_grad_axpy(ctx, nd->kb, nd->in[0], tn_f32(nd->out[0]->grad), nd->fa[0]);
}

struct tn_tensor *ag_scale(struct ag_ctx *ctx, struct tn_tensor *x, float s)
{
    const struct kn_backend *kb = ag_begin_f32(ctx, "ag_scale", 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    struct tn_tensor *y = ag_out(ctx, "scale", TN_F32, x->device, x->ndim, x->ne);
    if (!y) return NULL;
    kb->scale(tn_f32(y), tn_f32(x), s, tn_numel(x));
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *n = ag_record(ctx, "ag_scale", scale_backward, kb, 1, &x, 1, &y, 0);
        if (!n) return NULL;
        n->fa[0] = s;
    }
    return y;
}

/* ---- sigmoid, tanh, elu: the backward reads only the saved output ---------------------------- */

enum act_kind { ACT_SIGMOID, ACT_TANH, ACT_ELU };

static int act_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    int rc = LG_OK;
    float *dx = ag_grad(ctx, nd->in[0], &rc);
    if (!dx) return rc;
    const float *y = tn_f32(nd->saved[0]), *dy = tn_f32(nd->out[0]->grad);
    int64_t n = tn_numel(nd->saved[0]);
    switch ((enum act_kind)nd->ia[0]) {
    case ACT_SIGMOID: nd->kb->dsigmoid(dx, y, dy, n); break;
    case ACT_TANH: nd->kb->dtanh(dx, y, dy, n); break;
    case ACT_ELU: nd->kb->delu(dx, y, dy, n); break;
    }
    return LG_OK;
}

static struct tn_tensor *activation(struct ag_ctx *ctx, struct tn_tensor *x, enum act_kind kind)
{
    static const char *const op[] = {"ag_sigmoid", "ag_tanh", "ag_elu"};
    static const char *const name[] = {"sigmoid", "tanh", "elu"};
    const struct kn_backend *kb = ag_begin_f32(ctx, op[kind], 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    struct tn_tensor *y = ag_out(ctx, name[kind], TN_F32, x->device, x->ndim, x->ne);
    if (!y) return NULL;
    int64_t n = tn_numel(x);
    switch (kind) {
    case ACT_SIGMOID: kb->sigmoid(tn_f32(y), tn_f32(x), n); break;
    case ACT_TANH: kb->tanh(tn_f32(y), tn_f32(x), n); break;
    case ACT_ELU: kb->elu(tn_f32(y), tn_f32(x), n); break;
    }
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *nd = ag_record(ctx, op[kind], act_backward, kb, 1, &x, 1, &y, 0);
        if (!nd) return NULL;
        nd->ia[0] = kind;
        ag_save(nd, 0, y);
    }
    return y;
}

struct tn_tensor *ag_sigmoid(struct ag_ctx *ctx, struct tn_tensor *x)
{
    return activation(ctx, x, ACT_SIGMOID);
}

struct tn_tensor *ag_tanh(struct ag_ctx *ctx, struct tn_tensor *x)
{
    return activation(ctx, x, ACT_TANH);
}

struct tn_tensor *ag_elu(struct ag_ctx *ctx, struct tn_tensor *x)
{
    return activation(ctx, x, ACT_ELU);
}

/* ---- dropout --------------------------------------------------------------------------------- */

static int dropout_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    int rc = LG_OK;
    float *dx = ag_grad(ctx, nd->in[0], &rc);
    if (dx)
        nd->kb->ddropout(dx, tn_f32(nd->out[0]->grad), tn_i8(nd->saved[0]), nd->fa[0],
                         tn_numel(nd->in[0]));
    return rc;
}

struct tn_tensor *ag_dropout(struct ag_ctx *ctx, struct tn_tensor *x, float p)
{
    const struct kn_backend *kb = ag_begin_f32(ctx, "ag_dropout", 1, &x, (const char *[]){"x"});
    if (!kb) return NULL;
    if (!(p >= 0.0f && p < 1.0f))
        return ag_fail(ctx, LG_EINVAL, "ag_dropout: probability %g outside [0, 1)", (double)p);
    if (!ctx->opt.training || p == 0.0f) return ag_view(ctx, x, x->ndim, x->ne, "dropout");
    struct tn_tensor *y = ag_out(ctx, "dropout", TN_F32, x->device, x->ndim, x->ne);
    struct tn_tensor *mask =
        y ? ag_out(ctx, "dropout.mask", TN_I8, x->device, x->ndim, x->ne) : NULL;
    if (!mask) return NULL;
    float scale = 1.0f / (1.0f - p);
    kb->dropout(tn_f32(y), tn_i8(mask), tn_f32(x), p, scale, tn_rng_next(&ctx->rng), tn_numel(x));
    if (ag_wants_grad(ctx, 1, &x)) {
        struct ag_node *nd = ag_record(ctx, "ag_dropout", dropout_backward, kb, 1, &x, 1, &y, 0);
        if (!nd) return NULL;
        nd->fa[0] = scale;
        ag_save(nd, 0, mask);
    }
    return y;
}
