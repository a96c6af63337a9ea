/* data_batch.c — batches in tft.h's layout, the seasonal-naive baseline and a plain-C
 * pinball loss. */
#include <string.h>

#include "data_impl.h"

void data_cursor_init(struct data_cursor *cur, uint64_t seed)
{
    tn_rng_seed(&cur->rng, seed);
    cur->next = 0;
}

int64_t data_n_batches(const struct data_set *ds, enum data_split split, int B)
{
    LG_ASSERT(B >= 1 && "batch size must be positive");
    return split == DATA_VAL ? (ds->n_val + B - 1) / B : 0;
}

/* Copies window w of variable v into row b of tensor x ([B], [B, T_enc] or [B, T]). */
static void gather(const struct data_set *ds, int v, struct data_window w, int b,
                   struct tn_tensor *x)
{
    const struct tft_var *var = &ds->cfg.vars[v];
    int64_t n = var->role == TFT_STATIC     ? 1
                : var->role == TFT_OBSERVED ? ds->cfg.T_enc
                                            : data_T(ds);
    int64_t from = var->role == TFT_STATIC ? w.series : ds->start[w.series] + w.start;
    if (var->kind == TFT_CAT)
        memcpy(tn_i32(x) + b * n, data_col_i32(ds, v) + from, (size_t)n * sizeof(int32_t));
    else
        memcpy(tn_f32(x) + b * n, data_col_f32(ds, v) + from, (size_t)n * sizeof(float));
}

int data_batch_windows(const struct data_set *ds, int B, const struct data_window *w,
                       struct tft_batch *out)
{
    LG_ASSERT(B >= 1 && "batch size must be positive");
    const struct tft_config *c = &ds->cfg;
    int64_t T = data_T(ds);
    for (int b = 0; b < B; b++)
        LG_ASSERT(w[b].series >= 0 && w[b].series < ds->n_series && w[b].start >= 0 &&
                  w[b].start + T <= data_series_len(ds, w[b].series) &&
                  "window outside its series");
    struct tft_batch nb = {.B = B};
    for (int v = 0; v < c->n_vars; v++) {
        const struct tft_var *var = &c->vars[v];
        int64_t shape[2] = {B, var->role == TFT_OBSERVED ? c->T_enc : T};
        char tag[LG_MAX_NAME];
        lg_snprintf(tag, sizeof tag, "data/%s", var->name);
        nb.x[v] = tn_new(ds->trk, var->kind == TFT_CAT ? TN_I32 : TN_F32, TN_CPU,
                         var->role == TFT_STATIC ? 1 : 2, shape, tag);
        if (!nb.x[v]) goto fail;
        for (int b = 0; b < B; b++) gather(ds, v, w[b], b, nb.x[v]);
    }
    nb.y = tn_new(ds->trk, TN_F32, TN_CPU, 2, (int64_t[]){B, c->T_dec}, "data/y");
    if (!nb.y) goto fail;
    const float *target = data_col_f32(ds, tft_target_var(c));
    for (int b = 0; b < B; b++)
        memcpy(tn_f32(nb.y) + (int64_t)b * c->T_dec,
               target + ds->start[w[b].series] + w[b].start + c->T_enc,
               (size_t)c->T_dec * sizeof(float));
    *out = nb;
    return LG_OK;
fail:
    tft_batch_fini(&nb);
    return lg_fail(LG_ENOMEM, "data: out of memory for a batch of %d windows", B);
}

int data_batch(const struct data_set *ds, enum data_split split, int B, struct data_cursor *cur,
               struct tft_batch *out)
{
    int64_t n = data_n_windows(ds, split);
    if (B < 1) return lg_fail(LG_EINVAL, "data: batch size %d must be positive", B);
    if (n == 0)
        return lg_fail(LG_EINVAL,
                       "data: the %s split has no windows (series too short for "
                       "T_enc + T_dec plus the validation steps)",
                       split == DATA_TRAIN ? "training" : "validation");
    struct data_window *w = trk_alloc(ds->trk, (size_t)B * sizeof *w, "data/windows");
    if (!w) return lg_fail(LG_ENOMEM, "data: out of memory for %d windows", B);
    int nb = B;
    if (split == DATA_TRAIN) {
        for (int b = 0; b < B; b++)
            w[b] = data_window_at(ds, DATA_TRAIN, (int64_t)(tn_rng_next(&cur->rng) % (uint64_t)n));
    } else {
        if (cur->next < 0 || cur->next >= n) cur->next = 0;
        nb = (int)LG_MIN((int64_t)B, n - cur->next);
        for (int b = 0; b < nb; b++) w[b] = ds->val[cur->next + b];
        cur->next += nb;
    }
    int rc = data_batch_windows(ds, nb, w, out);
    trk_free(ds->trk, w);
    return rc;
}

/* ---- the seasonal-naive baseline and the pinball loss ---------------------------------- */

struct tn_tensor *data_seasonal_naive(struct trk_tracker *trk, const struct tft_config *cfg,
                                      const struct tft_batch *b, int season)
{
    int tv = tft_target_var(cfg);
    LG_ASSERT(tv >= 0 && b->x[tv] && b->x[tv]->ne[0] == b->B && b->x[tv]->ne[1] == cfg->T_enc &&
              "batch does not match the config");
    if (season < 1 || season > cfg->T_enc) {
        lg_fail(LG_EINVAL, "data: seasonal-naive period %d outside 1..T_enc (%d)", season,
                cfg->T_enc);
        return NULL;
    }
    int Q = cfg->n_quantiles, Te = cfg->T_enc, Td = cfg->T_dec;
    struct tn_tensor *out =
        tn_new(trk, TN_F32, TN_CPU, 3, (int64_t[]){b->B, Td, Q}, "data/seasonal_naive");
    if (!out) return NULL;
    const float *enc = tn_f32(b->x[tv]); /* [B, T_enc] */
    float *o = tn_f32(out);              /* [B, T_dec, Q] */
    for (int i = 0; i < b->B; i++)
        for (int t = 0; t < Td; t++) {
            int src = Te + t - season; /* position over all T steps */
            while (src >= Te) src -= season;
            for (int q = 0; q < Q; q++)
                o[((int64_t)i * Td + t) * Q + q] = enc[(int64_t)i * Te + src];
        }
    return out;
}

double data_pinball(const struct tft_config *cfg, const struct tn_tensor *yhat,
                    const struct tn_tensor *y)
{
    int Q = cfg->n_quantiles;
    LG_ASSERT(yhat->dtype == TN_F32 && y->dtype == TN_F32 && yhat->device == TN_CPU &&
              y->device == TN_CPU && "pinball: f32 CPU tensors");
    LG_ASSERT(yhat->ndim == 3 && y->ndim == 2 && yhat->ne[0] == y->ne[0] &&
              yhat->ne[1] == y->ne[1] && yhat->ne[2] == Q &&
              "pinball: yhat [B, T_dec, Q], y [B, T_dec]");
    const float *p = tn_f32(yhat), *t = tn_f32(y);
    int64_t n = y->ne[0] * y->ne[1];
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < Q; k++) {
            double q = cfg->quantiles[k], d = (double)t[i] - (double)p[i * Q + k];
            sum += d > 0 ? q * d : (q - 1.0) * d;
        }
    return sum / (double)n;
}
