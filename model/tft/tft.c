/* tft.c — TemporalFusionTransformer: builds every parameter of spec/TFT.md in its VarMap and
 * runs the forward pass. The model is used through struct tft_model_vt (see tft.h).
 *
 * Two liberties with the order of operations, both exact in real arithmetic:
 *  - the interpretable attention's mean over heads, mean_h(A_h V), is computed as
 *    (mean_h A_h) V, since V is shared by all heads: one [T_dec, T]·[T, d_a] product per
 *    sample instead of n_head of them;
 *  - a real variable's embedding ξ = x·wᵀ + b is rank one plus a constant, so the variable
 *    selection networks' first layers (var_grn fc1, flat_grn fc1 and skip) compute W ξ as
 *    x ⊗ (W w) + W b instead of a matrix product over every row, and the flat GRN's input
 *    concatenation is never built (tft_blocks.c, linear_concat). An installed linear hook
 *    (INT8) sees every layer the plain way.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tft_blocks.h"

static const struct tft_model_vt tft_vt;

static struct tft_net *as_tft(struct tft_model *m)
{
    LG_ASSERT(m->vt == &tft_vt && "not a TemporalFusionTransformer");
    return (struct tft_net *)m;
}

/* The four static covariate encoders, by what their context is for (spec/TFT.md): the VSNs' (cs),
 * the enrichment's (ce), the LSTMs' cell (cc) and hidden (ch) states. Parameters and activations
 * are named alike ("varmap/static_enc.cs.fc1.weight", "act/static_enc.cs.fc1"). */
static const char *const static_enc_names[4] = {"static_enc.cs", "static_enc.ce", "static_enc.cc",
                                                "static_enc.ch"};

/* ---- building ----------------------------------------------------------------------------- */

static int embeddings_init(struct tft_net *t, const struct tft_config *cfg)
{
    char pn[LG_MAX_NAME];
    int H = cfg->hidden;
    for (int i = 0; i < cfg->n_vars; i++) {
        const struct tft_var *v = &cfg->vars[i];
        struct tft_embedding *e = &t->emb[i];
        e->kind = v->kind;
        if (v->kind == TFT_CAT) {
            snprintf(pn, sizeof pn, "emb.cat.%s.weight", v->name);
            e->w = vm_get(t->vm, pn, 2, (int64_t[]){v->cardinality, H},
                          (struct vm_init){VM_NORMAL, 1.0f});
        } else {
            snprintf(pn, sizeof pn, "emb.real.%s.weight", v->name);
            e->w = vm_get(t->vm, pn, 2, (int64_t[]){H, 1}, (struct vm_init){VM_KAIMING_UNIFORM, 0});
            snprintf(pn, sizeof pn, "emb.real.%s.bias", v->name);
            e->b =
                e->w ? vm_get(t->vm, pn, 1, (int64_t[]){H}, (struct vm_init){VM_ZEROS, 0}) : NULL;
            if (!e->b) return lg_errcode();
        }
        if (!e->w) return lg_errcode();
    }
    return LG_OK;
}

static int lstm_init(struct tft_lstm *l, struct vm_varmap *vm, const char *prefix, int H, int L)
{
    char pn[LG_MAX_NAME];
    float bound = 1.0f / sqrtf((float)H);
    l->layers = L;
    for (int k = 0; k < L; k++) {
        struct vm_init w = {VM_UNIFORM, bound}, z = {VM_ZEROS, 0};
        snprintf(pn, sizeof pn, "%s.weight_ih_l%d", prefix, k);
        l->w_ih[k] = vm_get(vm, pn, 2, (int64_t[]){4 * H, H}, w);
        snprintf(pn, sizeof pn, "%s.weight_hh_l%d", prefix, k);
        l->w_hh[k] = vm_get(vm, pn, 2, (int64_t[]){4 * H, H}, w);
        snprintf(pn, sizeof pn, "%s.bias_ih_l%d", prefix, k);
        l->b_ih[k] = vm_get(vm, pn, 1, (int64_t[]){4 * H}, z);
        snprintf(pn, sizeof pn, "%s.bias_hh_l%d", prefix, k);
        l->b_hh[k] = vm_get(vm, pn, 1, (int64_t[]){4 * H}, z);
        if (!l->w_ih[k] || !l->w_hh[k] || !l->b_ih[k] || !l->b_hh[k]) return lg_errcode();
    }
    return LG_OK;
}

/* Additive causal mask [T_dec, T]: query i (absolute position T_enc + i) sees keys j <= T_enc + i.
 */
static int mask_init(struct tft_net *t, struct trk_tracker *trk, const struct tft_config *cfg)
{
    int T = cfg->T_enc + cfg->T_dec;
    t->mask_cache = tn_new_f32(trk, "model/attn.mask", 2, (int64_t[]){cfg->T_dec, T});
    if (!t->mask_cache) return lg_errcode();
    float *m = tn_f32(t->mask_cache);
    for (int i = 0; i < cfg->T_dec; i++)
        for (int j = 0; j < T; j++) m[i * T + j] = j <= cfg->T_enc + i ? 0.0f : -INFINITY;
    return LG_OK;
}

static int build(struct tft_net *t, struct trk_tracker *trk, const struct tft_config *cfg)
{
    int H = cfg->hidden, idx[TFT_MAX_VARS], n, rc;
    const char *const *enc_names = static_enc_names;
    if ((rc = embeddings_init(t, cfg))) return rc;
    n = tft_static_vars(cfg, idx);
    if ((rc = tft_vsn_init(&t->static_vsn, t->vm, cfg, "static_vsn", n, idx, false))) return rc;
    n = tft_encoder_vars(cfg, idx);
    if ((rc = tft_vsn_init(&t->enc_vsn, t->vm, cfg, "enc_vsn", n, idx, true))) return rc;
    n = tft_decoder_vars(cfg, idx);
    if ((rc = tft_vsn_init(&t->dec_vsn, t->vm, cfg, "dec_vsn", n, idx, true))) return rc;
    for (int i = 0; i < 4; i++)
        if ((rc = tft_grn_init(&t->static_enc[i], t->vm, enc_names[i], H, H, H, 0))) return rc;
    if ((rc = lstm_init(&t->lstm_enc, t->vm, "lstm_enc", H, cfg->lstm_layers))) return rc;
    if ((rc = lstm_init(&t->lstm_dec, t->vm, "lstm_dec", H, cfg->lstm_layers))) return rc;
    if ((rc = tft_gan_init(&t->post_lstm, t->vm, "post_lstm", H))) return rc;
    if ((rc = tft_grn_init(&t->enrich, t->vm, "enrich", H, H, H, H))) return rc;
    int da = H / cfg->n_head;
    t->attn.n_head = cfg->n_head;
    if ((rc = tft_linear_init(&t->attn.q, t->vm, "attn.q", H, H, false)) ||
        (rc = tft_linear_init(&t->attn.k, t->vm, "attn.k", H, H, false)) ||
        (rc = tft_linear_init(&t->attn.v, t->vm, "attn.v", H, da, false)) ||
        (rc = tft_linear_init(&t->attn.out, t->vm, "attn.out", da, H, false)))
        return rc;
    if ((rc = tft_gan_init(&t->post_attn, t->vm, "post_attn", H))) return rc;
    if ((rc = tft_grn_init(&t->pos_ff, t->vm, "pos_ff", H, H, H, 0))) return rc;
    if ((rc = tft_gan_init(&t->pre_out, t->vm, "pre_out", H))) return rc;
    if ((rc = tft_linear_init(&t->out, t->vm, "out", H, cfg->n_quantiles, true))) return rc;
    return mask_init(t, trk, cfg);
}

/* Allocates the model struct and builds it over `vm` (already holding one reference for t,
 * or NULL to create a fresh map). On failure everything taken is given back. */
static int create(struct tft_model **out, struct trk_tracker *trk, const struct tft_config *cfg,
                  struct vm_varmap *existing, uint64_t seed)
{
    *out = NULL;
    int rc = tft_config_validate(cfg);
    if (rc) return rc;
    struct tft_net *t = trk_alloc(trk, sizeof *t, "model/tft");
    if (!t) return lg_errcode();
    memset(t, 0, sizeof *t);
    t->base.vt = &tft_vt;
    t->base.cfg = *cfg;
    t->trk = trk;
    if (existing)
        t->vm = vm_retain(existing, t, TRK_HERE);
    else if ((rc = vm_new(&t->vm, trk, cfg->preset, t, TRK_HERE, seed)))
        goto fail;
    if ((rc = build(t, trk, cfg))) goto fail;
    *out = &t->base;
    return LG_OK;
fail:
    lg_fail_ctx(rc, "building the TFT (%s): ", cfg->preset);
    tft_vt.free(&t->base);
    return rc;
}

int tft_new(struct tft_model **out, struct trk_tracker *trk, const struct tft_config *cfg,
            uint64_t seed)
{
    return create(out, trk, cfg, NULL, seed);
}

int tft_new_from_varmap(struct tft_model **out, struct vm_varmap *vm, const struct tft_config *cfg)
{
    return create(out, vm_tracker(vm), cfg, vm, 0);
}

struct vm_varmap *tft_varmap_borrow(struct tft_model *m) { return as_tft(m)->vm; }

int tft_to_device(struct tft_model *m, enum tn_device dev)
{
    struct tft_net *t = as_tft(m);
    const char *where = dev == TN_CPU ? "host" : "device";
    for (int i = 0; i < vm_count(t->vm); i++) {
        int rc = tn_move(vm_at(t->vm, i), dev);
        if (rc) return lg_fail_ctx(rc, "moving model %s to the %s: ", m->cfg.preset, where);
    }
    int rc = tn_move(t->mask_cache, dev);
    return rc ? lg_fail_ctx(rc, "moving model %s to the %s: ", m->cfg.preset, where) : LG_OK;
}

/* ---- forward ------------------------------------------------------------------------------- */

/* ξ for variable i: [B, H] for statics, [B, steps, H] for time-varying inputs. A real
 * variable's ξ is also kept factored in *f (x [..., 1], w, b) for the VSNs' first layers. */
static struct tn_tensor *embed(struct tft_net *t, struct ag_ctx *ctx, int i, struct tn_tensor *x,
                               struct tft_factor *f)
{
    const struct tft_embedding *e = &t->emb[i];
    memset(f, 0, sizeof *f);
    if (!x)
        return ag_fail(ctx, LG_EINVAL, "tft forward: input %s missing", t->base.cfg.vars[i].name);
    ag_scope_pushf(ctx, "emb.%s", t->base.cfg.vars[i].name);
    struct tn_tensor *y;
    if (e->kind == TFT_CAT) {
        y = ag_embedding(ctx, e->w, x);
    } else {
        int64_t shape[TN_MAX_DIMS];
        memcpy(shape, x->ne, sizeof shape);
        shape[x->ndim] = 1;
        struct tn_tensor *xr = ag_reshape(ctx, x, x->ndim + 1, shape);
        *f = (struct tft_factor){xr, e->w, e->b};
        y = ag_linear(ctx, xr, e->w, e->b);
    }
    ag_scope_pop(ctx);
    return y;
}

/* The factors of a time-varying input over steps [start, start + len). */
static struct tft_factor factor_steps(struct ag_ctx *ctx, struct tft_factor f, int64_t start,
                                      int64_t len)
{
    if (f.x) f.x = ag_slice(ctx, f.x, 1, start, len);
    return f;
}

static int check_batch(struct tft_net *t, struct ag_ctx *ctx, const struct tft_batch *b)
{
    const struct tft_config *c = &t->base.cfg;
    int T = c->T_enc + c->T_dec;
    for (int i = 0; i < c->n_vars; i++) {
        const struct tft_var *v = &c->vars[i];
        const struct tn_tensor *x = b->x[i];
        int64_t want = v->role == TFT_STATIC ? 0 : v->role == TFT_OBSERVED ? c->T_enc : T;
        enum tn_dtype dt = v->kind == TFT_CAT ? TN_I32 : TN_F32;
        bool ok = x && x->dtype == dt && x->ne[0] == b->B &&
                  (want ? x->ndim == 2 && x->ne[1] == want : x->ndim == 1);
        if (!ok) {
            char s[64] = "missing";
            if (x) tn_shape_str(x, s, sizeof s);
            ag_fail(ctx, LG_EINVAL, "tft forward: input %s is %s %s; expected %s [%d%s%lld]",
                    v->name, x ? tn_dtype_name(x->dtype) : "", s, tn_dtype_name(dt), b->B,
                    want ? ", " : "", (long long)want);
            return LG_EINVAL;
        }
    }
    return LG_OK;
}

static struct tn_tensor *attention(struct tft_net *t, struct ag_ctx *ctx, struct tn_tensor *theta,
                                   struct tn_tensor *theta_dec)
{
    const struct tft_config *c = &t->base.cfg;
    struct tft_model *m = &t->base;
    int64_t B = theta->ne[0], T = c->T_enc + c->T_dec, Td = c->T_dec, nh = c->n_head;
    int64_t da = c->hidden / nh;
    ag_scope_push(ctx, "attn");
    struct tn_tensor *q = tft_apply_linear(m, ctx, &t->attn.q, theta_dec); /* [B, Td, H] */
    struct tn_tensor *k = tft_apply_linear(m, ctx, &t->attn.k, theta);     /* [B, T, H] */
    q = ag_permute(ctx, ag_reshape(ctx, q, 4, (int64_t[]){B, Td, nh, da}), (int[]){0, 2, 1, 3});
    k = ag_permute(ctx, ag_reshape(ctx, k, 4, (int64_t[]){B, T, nh, da}), (int[]){0, 2, 1, 3});
    struct tn_tensor *s = ag_scale(ctx, ag_matmul(ctx, q, k, false, true), 1.0f / sqrtf((float)da));
    struct tn_tensor *a = ag_softmax(ctx, ag_add_mask(ctx, s, t->mask_cache)); /* [B, nh, Td, T] */
    struct tn_tensor *a_mean = ag_mean(ctx, a, 1, false);                      /* [B, Td, T] */
    struct tn_tensor *v = tft_apply_linear(m, ctx, &t->attn.v, theta);         /* [B, T, da] */
    struct tn_tensor *h = ag_matmul(ctx, a_mean, v, false, false);             /* [B, Td, da] */
    struct tn_tensor *beta = tft_apply_linear(m, ctx, &t->attn.out, h);        /* [B, Td, H] */
    ag_scope_pop(ctx);
    return beta;
}

static struct tn_tensor *net_forward(struct tft_model *m, struct ag_ctx *ctx,
                                     const struct tft_batch *batch)
{
    struct tft_net *t = as_tft(m);
    const struct tft_config *c = &m->cfg;
    int Te = c->T_enc, Td = c->T_dec, L = c->lstm_layers;
    struct tn_tensor *xs[TFT_MAX_VARS], *full[TFT_MAX_VARS] = {0};
    struct tft_factor fs[TFT_MAX_VARS], ffull[TFT_MAX_VARS];
    if (ag_error(ctx) || check_batch(t, ctx, batch)) return NULL;

    /* static covariates → ζ → c_s, c_e, c_c, c_h */
    ag_scope_push(ctx, "static_vsn");
    for (int j = 0; j < t->static_vsn.n; j++)
        xs[j] = embed(t, ctx, t->static_vsn.var[j], batch->x[t->static_vsn.var[j]], &fs[j]);
    struct tn_tensor *zeta = tft_vsn_forward(m, ctx, &t->static_vsn, xs, NULL, fs);
    ag_scope_pop(ctx);
    struct tn_tensor *cs[4];
    for (int i = 0; i < 4; i++) {
        ag_scope_pushf(ctx, "%s", static_enc_names[i]);
        cs[i] = tft_grn_forward(m, ctx, &t->static_enc[i], zeta, NULL);
        ag_scope_pop(ctx);
    }
    struct tn_tensor *c_s = cs[0], *c_e = cs[1], *c_c = cs[2], *c_h = cs[3];

    /* time-varying embeddings: known inputs are embedded once over all T steps */
    for (int i = 0; i < c->n_vars; i++)
        if (c->vars[i].role != TFT_STATIC) full[i] = embed(t, ctx, i, batch->x[i], &ffull[i]);
    ag_scope_push(ctx, "enc_vsn");
    for (int j = 0; j < t->enc_vsn.n; j++) {
        int v = t->enc_vsn.var[j];
        bool observed = c->vars[v].role == TFT_OBSERVED; /* observed inputs cover T_enc only */
        xs[j] = observed ? full[v] : ag_slice(ctx, full[v], 1, 0, Te);
        fs[j] = observed ? ffull[v] : factor_steps(ctx, ffull[v], 0, Te);
    }
    struct tn_tensor *xi_enc = tft_vsn_forward(m, ctx, &t->enc_vsn, xs, c_s, fs); /* [B, Te, H] */
    ag_scope_pop(ctx);
    ag_scope_push(ctx, "dec_vsn");
    for (int j = 0; j < t->dec_vsn.n; j++) {
        int v = t->dec_vsn.var[j];
        xs[j] = ag_slice(ctx, full[v], 1, Te, Td);
        fs[j] = factor_steps(ctx, ffull[v], Te, Td);
    }
    struct tn_tensor *xi_dec = tft_vsn_forward(m, ctx, &t->dec_vsn, xs, c_s, fs); /* [B, Td, H] */
    ag_scope_pop(ctx);

    /* LSTM encoder from (c_h, c_c) in every layer; decoder from the encoder's final state */
    struct tn_tensor *h = xi_enc, *h_last[8], *c_last[8];
    ag_scope_push(ctx, "lstm_enc");
    for (int k = 0; k < L; k++) {
        struct ag_lstm_out o = ag_lstm(ctx, h, c_h, c_c, t->lstm_enc.w_ih[k], t->lstm_enc.w_hh[k],
                                       t->lstm_enc.b_ih[k], t->lstm_enc.b_hh[k]);
        h = o.out;
        c_last[k] = o.c_last;
        h_last[k] =
            h ? ag_reshape(ctx, ag_slice(ctx, h, 1, Te - 1, 1), 2, (int64_t[]){h->ne[0], h->ne[2]})
              : NULL;
    }
    ag_scope_pop(ctx);
    struct tn_tensor *phi_enc = h;
    h = xi_dec;
    ag_scope_push(ctx, "lstm_dec");
    for (int k = 0; k < L; k++)
        h = ag_lstm(ctx, h, h_last[k], c_last[k], t->lstm_dec.w_ih[k], t->lstm_dec.w_hh[k],
                    t->lstm_dec.b_ih[k], t->lstm_dec.b_hh[k])
                .out;
    ag_scope_pop(ctx);
    struct tn_tensor *phi =
        ag_concat(ctx, (struct tn_tensor *[]){phi_enc, h}, 2, 1); /* [B, T, H] */
    struct tn_tensor *xi = ag_concat(ctx, (struct tn_tensor *[]){xi_enc, xi_dec}, 2, 1);

    ag_scope_push(ctx, "post_lstm");
    struct tn_tensor *phi_t = tft_gan_forward(m, ctx, &t->post_lstm, phi, xi); /* φ̃ [B, T, H] */
    ag_scope_pop(ctx);
    ag_scope_push(ctx, "enrich");
    struct tn_tensor *theta = tft_grn_forward(m, ctx, &t->enrich, phi_t, c_e); /* θ [B, T, H] */
    ag_scope_pop(ctx);
    struct tn_tensor *theta_dec = ag_slice(ctx, theta, 1, Te, Td);
    struct tn_tensor *beta = theta_dec ? attention(t, ctx, theta, theta_dec) : NULL;
    ag_scope_push(ctx, "post_attn");
    struct tn_tensor *delta = tft_gan_forward(m, ctx, &t->post_attn, beta, theta_dec);
    ag_scope_pop(ctx);
    ag_scope_push(ctx, "pos_ff");
    struct tn_tensor *psi = tft_grn_forward(m, ctx, &t->pos_ff, delta, NULL);
    ag_scope_pop(ctx);
    ag_scope_push(ctx, "pre_out");
    struct tn_tensor *psi_t =
        tft_gan_forward(m, ctx, &t->pre_out, psi, ag_slice(ctx, phi_t, 1, Te, Td));
    ag_scope_pop(ctx);
    return tft_apply_linear(m, ctx, &t->out, psi_t); /* [B, Td, Q] */
}

struct tn_tensor *tft_loss(struct tft_model *m, struct ag_ctx *ctx, struct tn_tensor *yhat,
                           const struct tft_batch *batch)
{
    return ag_pinball_loss(ctx, yhat, batch->y, m->cfg.quantiles, m->cfg.n_quantiles);
}

static struct vm_varmap *tft_get_varmap(struct tft_model *m, const void *holder,
                                        struct trk_site site)
{
    return vm_retain(as_tft(m)->vm, holder, site);
}

static void net_free(struct tft_model *m)
{
    if (!m) return;
    struct tft_net *t = as_tft(m);
    tn_release(t->mask_cache);
    if (t->vm) vm_release(t->vm, t, TRK_HERE);
    trk_free(t->trk, t);
}

static const struct tft_model_vt tft_vt = {
    .kind = "TemporalFusionTransformer",
    .forward = net_forward,
    .get_varmap = tft_get_varmap,
    .free = net_free,
};

struct tn_tensor *tft_forward(struct tft_model *m, struct ag_ctx *ctx,
                              const struct tft_batch *batch)
{
    return m->vt->forward(m, ctx, batch);
}

void tft_free(struct tft_model *m)
{
    if (m) m->vt->free(m);
}
