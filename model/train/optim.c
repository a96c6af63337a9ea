/* optim.c — AdamW (decoupled weight decay, bias-corrected moments) with its state keyed by
 * parameter name, and the grad helpers. The update itself is the `adamw` kernel. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "optim.h"
#include "tn_device.h"

struct opt_entry {
    char name[LG_MAX_NAME];  /* the key: the parameter's name without its class */
    struct tn_tensor *param; /* borrowed */
    struct tn_tensor *m, *v; /* owned: "adam.m/<name>", "adam.v/<name>" */
    int64_t t;               /* updates applied to this parameter (its bias correction) */
};

struct opt_adamw {
    struct trk_tracker *trk;
    struct opt_adamw_config cfg;
    int64_t steps;
    struct opt_entry *e; /* owned, "meta/adamw" */
    int n, cap;
};

int opt_adamw_new(struct opt_adamw **out, struct trk_tracker *trk,
                  const struct opt_adamw_config *cfg)
{
    *out = NULL;
    if (!(cfg->lr >= 0) || !(cfg->beta1 >= 0 && cfg->beta1 < 1) ||
        !(cfg->beta2 >= 0 && cfg->beta2 < 1) || !(cfg->eps >= 0) || !(cfg->weight_decay >= 0))
        return lg_fail(LG_EINVAL,
                       "AdamW: invalid configuration lr %g, betas (%g, %g), eps %g, weight decay "
                       "%g (want lr, eps, decay ≥ 0 and betas in [0, 1))",
                       cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay);
    struct opt_adamw *opt = trk_calloc(trk, sizeof *opt, "meta/adamw");
    if (!opt) return lg_fail_ctx(LG_ENOMEM, "AdamW: ");
    opt->trk = trk;
    opt->cfg = *cfg;
    *out = opt;
    return LG_OK;
}

void opt_adamw_free(struct opt_adamw *opt)
{
    if (!opt) return;
    for (int i = 0; i < opt->n; i++) {
        tn_release(opt->e[i].m);
        tn_release(opt->e[i].v);
    }
    trk_free(opt->trk, opt->e);
    trk_free(opt->trk, opt);
}

static struct opt_entry *find(struct opt_adamw *opt, const char *name)
{
    for (int i = 0; i < opt->n; i++)
        if (strcmp(opt->e[i].name, name) == 0) return &opt->e[i];
    return NULL;
}

/* A new entry with zeroed moments; the caller has made room. */
static int add_entry(struct opt_adamw *opt, struct tn_tensor *p)
{
    struct opt_entry *e = &opt->e[opt->n];
    memset(e, 0, sizeof *e);
    lg_strlcpy(e->name, tn_basename(p), sizeof e->name);
    char tag[LG_MAX_NAME];
    lg_snprintf(tag, sizeof tag, "adam.m/%s", e->name);
    e->m = tn_zeros(opt->trk, TN_F32, p->device, p->ndim, p->ne, tag);
    lg_snprintf(tag, sizeof tag, "adam.v/%s", e->name);
    e->v = e->m ? tn_zeros(opt->trk, TN_F32, p->device, p->ndim, p->ne, tag) : NULL;
    if (!e->v) {
        tn_release(e->m);
        return lg_fail_ctx(lg_errcode() ? lg_errcode() : LG_ENOMEM,
                           "AdamW state for %s: ", e->name);
    }
    e->param = p;
    opt->n++;
    return LG_OK;
}

int opt_adamw_add(struct opt_adamw *opt, struct tn_tensor **params, int n)
{
    for (int i = 0; i < n; i++) {
        struct tn_tensor *p = params[i];
        if (!p) return lg_fail(LG_EINVAL, "opt_adamw_add: parameter %d of %d is NULL", i + 1, n);
        if (p->dtype != TN_F32)
            return lg_fail(LG_EINVAL, "opt_adamw_add: %s is %s, expected F32", p->name,
                           tn_dtype_name(p->dtype));
        struct opt_entry *e = find(opt, tn_basename(p));
        if (e) { /* the same name again (a reload): keep the moments */
            if (tn_numel(e->m) != tn_numel(p))
                return lg_fail(LG_EINVAL, "opt_adamw_add: %s has %lld elements, its moments %lld",
                               p->name, (long long)tn_numel(p), (long long)tn_numel(e->m));
            e->param = p;
            continue;
        }
        if (opt->n == opt->cap) {
            int ncap = opt->cap ? opt->cap * 2 : 64;
            struct opt_entry *ne = trk_alloc(opt->trk, (size_t)ncap * sizeof *ne, "meta/adamw");
            if (!ne) return lg_fail_ctx(LG_ENOMEM, "opt_adamw_add: ");
            if (opt->n) memcpy(ne, opt->e, (size_t)opt->n * sizeof *ne);
            trk_free(opt->trk, opt->e);
            opt->e = ne;
            opt->cap = ncap;
        }
        int rc = add_entry(opt, p);
        if (rc != LG_OK) return rc;
    }
    return LG_OK;
}

int opt_adamw_step(struct opt_adamw *opt)
{
    const struct opt_adamw_config *c = &opt->cfg;
    opt->steps++;
    for (int i = 0; i < opt->n; i++) {
        struct opt_entry *e = &opt->e[i];
        struct tn_tensor *p = e->param, *g = p->grad;
        if (!g) continue;
        if (tn_numel(g) != tn_numel(p))
            return lg_fail(LG_EINVAL, "opt_adamw_step: gradient %s has %lld elements, %s %lld",
                           g->name, (long long)tn_numel(g), p->name, (long long)tn_numel(p));
        const struct kn_backend *kb = kn_backend_for(p->device);
        if (!kb)
            return lg_fail(LG_EUNAVAIL, "opt_adamw_step: no kernels for the device of %s", p->name);
        if (e->m->device != p->device || g->device != p->device)
            return lg_fail(LG_EINVAL,
                           "opt_adamw_step: %s, its gradient and its moments are on "
                           "different devices (opt_adamw_to_device)",
                           p->name);
        e->t++;
        float bc1 = (float)(1.0 - pow(c->beta1, (double)e->t));
        float bc2 = (float)(1.0 - pow(c->beta2, (double)e->t));
        kb->adamw(tn_f32(p), tn_f32(e->m), tn_f32(e->v), tn_f32(g), tn_numel(p), (float)c->lr,
                  (float)c->beta1, (float)c->beta2, (float)c->eps, (float)c->weight_decay, bc1,
                  bc2);
    }
    return LG_OK;
}

int64_t opt_adamw_steps(const struct opt_adamw *opt) { return opt->steps; }
void opt_adamw_set_lr(struct opt_adamw *opt, double lr) { opt->cfg.lr = lr; }

struct tn_tensor *opt_adamw_moment(struct opt_adamw *opt, const char *name, int which)
{
    LG_ASSERT((which == 1 || which == 2) && "opt_adamw_moment: which is 1 or 2");
    struct opt_entry *e = find(opt, name);
    return e ? (which == 1 ? e->m : e->v) : NULL;
}

size_t opt_adamw_state_bytes(const struct opt_adamw *opt)
{
    size_t b = 0;
    for (int i = 0; i < opt->n; i++) b += tn_nbytes(opt->e[i].m) + tn_nbytes(opt->e[i].v);
    return b;
}

int opt_adamw_to_device(struct opt_adamw *opt, enum tn_device dev)
{
    for (int i = 0; i < opt->n; i++) {
        int rc = tn_move(opt->e[i].m, dev);
        if (rc == LG_OK) rc = tn_move(opt->e[i].v, dev);
        if (rc != LG_OK) return lg_fail_ctx(rc, "AdamW state for %s: ", opt->e[i].name);
    }
    return LG_OK;
}

void opt_zero_grad(struct tn_tensor **params, int n)
{
    for (int i = 0; i < n; i++) {
        struct tn_tensor *g = params[i] ? params[i]->grad : NULL;
        if (!g) continue;
        if (g->device == TN_CPU)
            memset(tn_data(g), 0, tn_nbytes(g));
        else
            tn_device_memset(tn_data(g), 0, tn_nbytes(g));
    }
}

void opt_free_grads(struct tn_tensor **params, int n)
{
    for (int i = 0; i < n; i++) {
        if (!params[i]) continue;
        tn_release(params[i]->grad);
        params[i]->grad = NULL;
    }
}
