/* tft_blocks.c — Linear, LayerNorm, GLU, GateAddNorm, GRN and the variable selection network,
 * as spec/TFT.md defines them (names, shapes, init, numerics). */
#include <stdio.h>
#include <string.h>

#include "tft_blocks.h"

#define LN_EPS 1e-3f

/* ---- parameter creation ---------------------------------------------------------------- */

int tft_linear_init(struct tft_linear *l, struct vm_varmap *vm, const char *name, int in, int out,
                    bool bias)
{
    char pn[LG_MAX_NAME];
    memset(l, 0, sizeof *l);
    lg_strlcpy(l->name, name, sizeof l->name);
    snprintf(pn, sizeof pn, "%s.weight", name);
    l->w = vm_get(vm, pn, 2, (int64_t[]){out, in}, (struct vm_init){VM_KAIMING_UNIFORM, 0});
    if (!l->w) return lg_errcode();
    if (bias) {
        snprintf(pn, sizeof pn, "%s.bias", name);
        l->b = vm_get(vm, pn, 1, (int64_t[]){out}, (struct vm_init){VM_ZEROS, 0});
        if (!l->b) return lg_errcode();
    }
    return LG_OK;
}

int tft_layernorm_init(struct tft_layernorm *n, struct vm_varmap *vm, const char *prefix, int d)
{
    char pn[LG_MAX_NAME];
    snprintf(pn, sizeof pn, "%s.norm.weight", prefix);
    n->w = vm_get(vm, pn, 1, (int64_t[]){d}, (struct vm_init){VM_ONES, 0});
    snprintf(pn, sizeof pn, "%s.norm.bias", prefix);
    n->b = n->w ? vm_get(vm, pn, 1, (int64_t[]){d}, (struct vm_init){VM_ZEROS, 0}) : NULL;
    return n->b ? LG_OK : lg_errcode();
}

static int glu_init(struct tft_glu *g, struct vm_varmap *vm, const char *prefix, int d_in,
                    int d_out)
{
    char pn[TFT_PNAME];
    snprintf(pn, sizeof pn, "%s.glu.fc", prefix);
    return tft_linear_init(&g->fc, vm, pn, d_in, 2 * d_out, true);
}

int tft_gan_init(struct tft_gan *g, struct vm_varmap *vm, const char *prefix, int d)
{
    int rc = glu_init(&g->glu, vm, prefix, d, d);
    return rc ? rc : tft_layernorm_init(&g->norm, vm, prefix, d);
}

int tft_grn_init(struct tft_grn *g, struct vm_varmap *vm, const char *prefix, int d_in, int d_h,
                 int d_out, int d_c)
{
    char pn[TFT_PNAME];
    int rc;
    memset(g, 0, sizeof *g);
    g->d_in = d_in;
    g->d_h = d_h;
    g->d_out = d_out;
    g->d_c = d_c;
    snprintf(pn, sizeof pn, "%s.fc1", prefix);
    if ((rc = tft_linear_init(&g->fc1, vm, pn, d_in, d_h, true))) return rc;
    if (d_c > 0) {
        snprintf(pn, sizeof pn, "%s.ctx", prefix);
        if ((rc = tft_linear_init(&g->ctx, vm, pn, d_c, d_h, false))) return rc;
    }
    snprintf(pn, sizeof pn, "%s.fc2", prefix);
    if ((rc = tft_linear_init(&g->fc2, vm, pn, d_h, d_h, true))) return rc;
    if ((rc = glu_init(&g->glu, vm, prefix, d_h, d_out))) return rc;
    if (d_in != d_out) {
        snprintf(pn, sizeof pn, "%s.skip", prefix);
        if ((rc = tft_linear_init(&g->skip, vm, pn, d_in, d_out, true))) return rc;
    }
    return tft_layernorm_init(&g->norm, vm, prefix, d_out);
}

int tft_vsn_init(struct tft_vsn *v, struct vm_varmap *vm, const struct tft_config *cfg,
                 const char *prefix, int n, const int *vars, bool context)
{
    char pn[TFT_PNAME];
    int H = cfg->hidden, rc;
    memset(v, 0, sizeof *v);
    v->n = n;
    for (int j = 0; j < n; j++) {
        v->var[j] = vars[j];
        snprintf(pn, sizeof pn, "%s.var_grn.%s", prefix, cfg->vars[vars[j]].name);
        if ((rc = tft_grn_init(&v->var_grn[j], vm, pn, H, H, H, 0))) return rc;
    }
    if (n > 1) {
        snprintf(pn, sizeof pn, "%s.flat_grn", prefix);
        if ((rc = tft_grn_init(&v->flat, vm, pn, n * H, H, n, context ? H : 0))) return rc;
    }
    return LG_OK;
}

/* ---- forward ------------------------------------------------------------------------------ */

struct tn_tensor *tft_apply_linear(struct tft_model *m, struct ag_ctx *ctx,
                                   const struct tft_linear *l, struct tn_tensor *x)
{
    if (!x) return NULL;
    if (m->hook.linear) {
        struct tn_tensor *y = m->hook.linear(m->hook.user, ctx, l->name, x, l->w, l->b);
        if (y || ag_error(ctx)) return y;
    }
    ag_scope_push(ctx, l->name);
    struct tn_tensor *y = ag_linear(ctx, x, l->w, l->b);
    ag_scope_pop(ctx);
    return y;
}

/* LN(skip + GLU(x)): GLU(x) = z[:d] ⊙ σ(z[d:]) with z = fc(x), first half value, second half
 * gate; the gate, the sum and the norm are one fused op (ag_gate_add_norm). */
struct tn_tensor *tft_gan_forward(struct tft_model *m, struct ag_ctx *ctx, const struct tft_gan *g,
                                  struct tn_tensor *x, struct tn_tensor *skip)
{
    struct tn_tensor *z = tft_apply_linear(m, ctx, &g->glu.fc, x);
    return ag_gate_add_norm(ctx, z, skip, g->norm.w, g->norm.b, LN_EPS);
}

/* A linear layer and what follows it, fused into the linear's output (ag_linear_ex) unless a
 * linear hook is installed: then the hook's layer, and the epilogue as its own op. */
static struct tn_tensor *linear_then(struct tft_model *m, struct ag_ctx *ctx,
                                     const struct tft_linear *l, struct tn_tensor *x,
                                     enum ag_epilogue epi)
{
    if (!x) return NULL;
    if (m->hook.linear) {
        struct tn_tensor *y = tft_apply_linear(m, ctx, l, x);
        return epi == AG_EPI_ELU       ? ag_elu(ctx, y)
               : epi == AG_EPI_DROPOUT ? ag_dropout(ctx, y, m->cfg.dropout)
                                       : y;
    }
    ag_scope_push(ctx, l->name);
    struct tn_tensor *y = ag_linear_ex(ctx, x, l->w, l->b, epi, m->cfg.dropout);
    ag_scope_pop(ctx);
    return y;
}

/* The GRN after its first layer, h = fc1(a) (ELU'd already when `elu_done`) and skip = skip(a)
 * (a itself when d_in = d_out): η2 = ELU(h + ctx(c)), η1 = fc2(η2),
 * out = LN(skip + GLU(dropout(η1))). */
static struct tn_tensor *grn_tail(struct tft_model *m, struct ag_ctx *ctx, const struct tft_grn *g,
                                  struct tn_tensor *h, bool elu_done, struct tn_tensor *skip,
                                  struct tn_tensor *c)
{
    if (!h) return NULL;
    if (c && g->ctx.w) {
        struct tn_tensor *hc = tft_apply_linear(m, ctx, &g->ctx, c); /* [B, d_h] */
        if (hc && h->ndim == 3) /* broadcast the static context over time */
            hc = ag_reshape(ctx, hc, 3, (int64_t[]){hc->ne[0], 1, hc->ne[1]});
        h = ag_add(ctx, h, hc);
    }
    if (!elu_done) h = ag_elu(ctx, h);
    h = linear_then(m, ctx, &g->fc2, h, AG_EPI_DROPOUT);
    struct tn_tensor *z = tft_apply_linear(m, ctx, &g->glu.fc, h);
    return ag_gate_add_norm(ctx, z, skip, g->norm.w, g->norm.b, LN_EPS);
}

struct tn_tensor *tft_grn_forward(struct tft_model *m, struct ag_ctx *ctx, const struct tft_grn *g,
                                  struct tn_tensor *a, struct tn_tensor *c)
{
    if (!a) return NULL;
    bool fuse_elu = !(c && g->ctx.w); /* with a context, the ELU follows its add */
    struct tn_tensor *h = linear_then(m, ctx, &g->fc1, a, fuse_elu ? AG_EPI_ELU : AG_EPI_NONE);
    struct tn_tensor *skip = g->skip.w ? tft_apply_linear(m, ctx, &g->skip, a) : a;
    return grn_tail(m, ctx, g, h, fuse_elu, skip, c);
}

/* W·concat_j(ξ_j) + bias without building the concatenation, as one op (ag_linear_concat): a
 * real variable's ξ_j = x_j·w_jᵀ + b_j (its embedding) enters factored, W_j ξ_j = x_j ⊗ (W_j w_j)
 * + W_j b_j, so no product runs over its rows. Exact in real arithmetic; only the rounding
 * differs from the concatenation's product. */
_Static_assert(TFT_MAX_VARS <= AG_MAX_TERMS, "a VSN's inputs are one ag_linear_concat");
static struct tn_tensor *linear_concat(struct ag_ctx *ctx, const struct tft_linear *l,
                                       struct tn_tensor **xs, const struct tft_factor *f, int n,
                                       enum ag_epilogue epi)
{
    struct ag_term terms[TFT_MAX_VARS];
    for (int j = 0; j < n; j++)
        terms[j] =
            f[j].x ? (struct ag_term){f[j].x, f[j].w, f[j].b} : (struct ag_term){xs[j], NULL, NULL};
    ag_scope_push(ctx, l->name);
    struct tn_tensor *y = ag_linear_concat(ctx, terms, n, l->w, l->b, epi, 0.0f);
    ag_scope_pop(ctx);
    return y;
}

/* v = softmax(flat_grn(concat_j ξ_j, c)); out = Σ_j v_j · var_grn_j(ξ_j)   (v ≡ 1 when n = 1)
 * With factors (f non-NULL) and no linear hook installed, the first layers (var_grn fc1,
 * flat_grn fc1 and skip) take the factored path of linear_concat. */
struct tn_tensor *tft_vsn_forward(struct tft_model *m, struct ag_ctx *ctx, const struct tft_vsn *v,
                                  struct tn_tensor **xs, struct tn_tensor *c,
                                  const struct tft_factor *f)
{
    struct tn_tensor *proc[TFT_MAX_VARS];
    bool factored = f && !m->hook.linear;
    for (int j = 0; j < v->n; j++) {
        if (!xs[j]) return NULL;
        const struct tft_grn *g = &v->var_grn[j];
        if (factored && f[j].x) /* d_in = d_out: the skip is ξ itself */
            proc[j] = grn_tail(m, ctx, g, linear_concat(ctx, &g->fc1, &xs[j], &f[j], 1, AG_EPI_ELU),
                               true, xs[j], NULL);
        else
            proc[j] = tft_grn_forward(m, ctx, g, xs[j], NULL);
    }
    if (v->n == 1) return proc[0];
    struct tn_tensor *gate;
    if (factored) {
        bool fuse_elu = !(c && v->flat.ctx.w); /* with a context, the ELU follows its add */
        struct tn_tensor *h =
            linear_concat(ctx, &v->flat.fc1, xs, f, v->n, fuse_elu ? AG_EPI_ELU : AG_EPI_NONE);
        struct tn_tensor *skip = linear_concat(ctx, &v->flat.skip, xs, f, v->n, AG_EPI_NONE);
        gate = grn_tail(m, ctx, &v->flat, h, fuse_elu, skip, c);
    } else {
        struct tn_tensor *flat = ag_concat(ctx, xs, v->n, -1); /* [..., n·H] */
        gate = tft_grn_forward(m, ctx, &v->flat, flat, c);
    }
    struct tn_tensor *w = ag_softmax(ctx, gate); /* [..., n] */
    return ag_weighted_sum(ctx, proc, v->n, w);  /* Σ_j w_j proc_j [..., H] */
}
