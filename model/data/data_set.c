/* data_set.c — the data set object: storage, the split by time, normalisation, window lists
 * and accessors. The generator (data_synth.c) and the CSV loader (data_csv.c) fill the raw
 * columns; data_set_finish turns them into what batches are made from. */
#include <math.h>
#include <string.h>

#include "data_impl.h"

/* Allocates and zeroes `n` elements of `size` tagged `tag`; NULL + LG_ENOMEM on failure. */
static void *zalloc(struct trk_tracker *trk, size_t n, size_t size, const char *tag)
{
    return trk_calloc(trk, n * size, tag);
}

int data_set_alloc(struct data_set **out, struct trk_tracker *trk, const struct tft_config *cfg,
                   int n_series, const int64_t *len)
{
    LG_ASSERT(n_series >= 1 && "a data set needs at least one series");
    struct data_set *ds = trk_calloc(trk, sizeof *ds, "data/set");
    if (!ds) return lg_fail(LG_ENOMEM, "data: out of memory for the data set");
    ds->trk = trk;
    ds->cfg = *cfg;
    ds->n_series = n_series;
    ds->season = 1;
    lg_strlcpy(ds->time_unit, "step", sizeof ds->time_unit);
    ds->start = zalloc(trk, (size_t)n_series + 1, sizeof *ds->start, "data/set.index");
    ds->train_len = zalloc(trk, (size_t)n_series, sizeof *ds->train_len, "data/set.index");
    ds->train_cum = zalloc(trk, (size_t)n_series + 1, sizeof *ds->train_cum, "data/set.index");
    ds->target_scale = zalloc(trk, (size_t)n_series, sizeof *ds->target_scale, "data/set.scale");
    if (!ds->start || !ds->train_len || !ds->train_cum || !ds->target_scale) goto cleanup;
    for (int s = 0; s < n_series; s++) {
        LG_ASSERT(len[s] >= cfg->T_enc + cfg->T_dec && "every series must hold one window");
        ds->start[s + 1] = ds->start[s] + len[s];
    }
    ds->n_rows = ds->start[n_series];
    for (int v = 0; v < cfg->n_vars; v++) {
        size_t n = cfg->vars[v].role == TFT_STATIC ? (size_t)n_series : (size_t)ds->n_rows;
        ds->col[v] = trk_allocf(trk, n * 4, "data/set.%s", cfg->vars[v].name); /* f32 or i32 */
        if (!ds->col[v]) goto cleanup;
        ds->scale[v] = (struct data_scale){0.0, 1.0};
    }
    *out = ds;
    return LG_OK;
cleanup:
    data_free(ds);
    return lg_fail(LG_ENOMEM, "data: out of memory for %d series of %s", n_series, cfg->preset);
}

void data_free(struct data_set *ds)
{
    if (!ds) return;
    struct trk_tracker *trk = ds->trk;
    void *owned[] = {ds->start, ds->train_len, ds->train_cum, ds->target_scale, ds->val};
    for (int v = 0; v < TFT_MAX_VARS; v++) trk_free(trk, ds->col[v]);
    for (size_t i = 0; i < LG_ARRAY_LEN(owned); i++) trk_free(trk, owned[i]);
    trk_free(trk, ds);
}

/* Mean and standard deviation of x[i] over the rows selected by each series' training range
 * (statics: over the series); a constant variable gets std 1 so that it stays finite. */
static struct data_scale fit_scale(const struct data_set *ds, int v)
{
    const float *x = data_col_f32(ds, v);
    double sum = 0.0, sq = 0.0, n = 0.0;
    if (ds->cfg.vars[v].role == TFT_STATIC) {
        for (int s = 0; s < ds->n_series; s++) sum += x[s], n += 1.0;
        double m = sum / n;
        for (int s = 0; s < ds->n_series; s++) sq += (x[s] - m) * (x[s] - m);
        double sd = sqrt(sq / n);
        return (struct data_scale){m, sd > 1e-12 * (1.0 + fabs(m)) ? sd : 1.0};
    }
    for (int s = 0; s < ds->n_series; s++)
        for (int64_t t = 0; t < ds->train_len[s]; t++) sum += x[ds->start[s] + t], n += 1.0;
    double m = sum / n;
    for (int s = 0; s < ds->n_series; s++)
        for (int64_t t = 0; t < ds->train_len[s]; t++) {
            double d = x[ds->start[s] + t] - m;
            sq += d * d;
        }
    double sd = sqrt(sq / n);
    return (struct data_scale){m, sd > 1e-12 * (1.0 + fabs(m)) ? sd : 1.0};
}

static void apply_scale(float *x, int64_t n, struct data_scale sc)
{
    for (int64_t i = 0; i < n; i++) x[i] = (float)((x[i] - sc.mean) / sc.std);
}

static void normalise(struct data_set *ds)
{
    int target = tft_target_var(&ds->cfg);
    for (int v = 0; v < ds->cfg.n_vars; v++) {
        if (ds->cfg.vars[v].kind != TFT_REAL) continue;
        float *x = data_col_f32(ds, v);
        if (v == target) {
            for (int s = 0; s < ds->n_series; s++) {
                const float *xs = x + ds->start[s];
                double sum = 0.0, sq = 0.0, n = (double)ds->train_len[s];
                for (int64_t t = 0; t < ds->train_len[s]; t++) sum += xs[t];
                double m = sum / n;
                for (int64_t t = 0; t < ds->train_len[s]; t++) sq += (xs[t] - m) * (xs[t] - m);
                double sd = sqrt(sq / n);
                struct data_scale sc = {m, sd > 1e-12 * (1.0 + fabs(m)) ? sd : 1.0};
                ds->target_scale[s] = sc;
                apply_scale(x + ds->start[s], ds->start[s + 1] - ds->start[s], sc);
            }
            continue;
        }
        ds->scale[v] = fit_scale(ds, v);
        int64_t n = ds->cfg.vars[v].role == TFT_STATIC ? ds->n_series : ds->n_rows;
        apply_scale(x, n, ds->scale[v]);
    }
}

int data_set_finish(struct data_set *ds, int64_t val_steps)
{
    int64_t T = data_T(ds);
    if (val_steps < T)
        return lg_fail(LG_EINVAL,
                       "data: %lld validation steps cannot hold one window of "
                       "T_enc + T_dec = %lld steps",
                       (long long)val_steps, (long long)T);
    ds->n_val = 0;
    for (int s = 0; s < ds->n_series; s++) {
        int64_t len = ds->start[s + 1] - ds->start[s];
        int64_t nv = len >= T + val_steps ? val_steps : 0;
        ds->train_len[s] = len - nv;
        ds->train_cum[s + 1] = ds->train_cum[s] + ds->train_len[s] - T + 1;
        if (nv) ds->n_val += (nv - T) / ds->cfg.T_dec + 1;
    }
    normalise(ds);
    trk_free(ds->trk, ds->val);
    ds->val =
        trk_alloc(ds->trk, (size_t)LG_MAX(ds->n_val, 1) * sizeof *ds->val, "data/set.windows");
    if (!ds->val) return lg_fail(LG_ENOMEM, "data: out of memory for the validation windows");
    int64_t k = 0;
    for (int s = 0; s < ds->n_series; s++) {
        int64_t len = ds->start[s + 1] - ds->start[s];
        if (ds->train_len[s] == len) continue;
        for (int64_t st = ds->train_len[s]; st + T <= len; st += ds->cfg.T_dec)
            ds->val[k++] = (struct data_window){s, st};
    }
    LG_ASSERT(k == ds->n_val);
    /* one fixed shuffle, so that any prefix of the list samples every series alike */
    struct tn_rng r;
    tn_rng_seed(&r, ds->seed ^ 0x76616c6964ull);
    for (int64_t i = ds->n_val - 1; i > 0; i--) {
        int64_t j = (int64_t)(tn_rng_next(&r) % (uint64_t)(i + 1));
        struct data_window w = ds->val[i];
        ds->val[i] = ds->val[j];
        ds->val[j] = w;
    }
    return LG_OK;
}

/* ---- accessors ----------------------------------------------------------------------------- */

const struct tft_config *data_config(const struct data_set *ds) { return &ds->cfg; }
int data_n_series(const struct data_set *ds) { return ds->n_series; }
int data_season(const struct data_set *ds) { return ds->season; }
const char *data_time_unit(const struct data_set *ds) { return ds->time_unit; }

int64_t data_series_len(const struct data_set *ds, int s)
{
    LG_ASSERT(s >= 0 && s < ds->n_series && "series index out of range");
    return ds->start[s + 1] - ds->start[s];
}

int64_t data_train_len(const struct data_set *ds, int s)
{
    LG_ASSERT(s >= 0 && s < ds->n_series && "series index out of range");
    return ds->train_len[s];
}

float data_value(const struct data_set *ds, int var, int s, int64_t t)
{
    LG_ASSERT(var >= 0 && var < ds->cfg.n_vars && "variable index out of range");
    LG_ASSERT(s >= 0 && s < ds->n_series && "series index out of range");
    const struct tft_var *v = &ds->cfg.vars[var];
    int64_t i = s;
    if (v->role != TFT_STATIC) {
        LG_ASSERT(t >= 0 && t < data_series_len(ds, s) && "step out of range");
        i = ds->start[s] + t;
    }
    return v->kind == TFT_CAT ? (float)data_col_i32(ds, var)[i] : data_col_f32(ds, var)[i];
}

struct data_scale data_scaling(const struct data_set *ds, int var, int s)
{
    LG_ASSERT(var >= 0 && var < ds->cfg.n_vars && "variable index out of range");
    if (var == tft_target_var(&ds->cfg)) {
        LG_ASSERT(s >= 0 && s < ds->n_series && "series index out of range");
        return ds->target_scale[s];
    }
    return ds->scale[var];
}

int64_t data_n_windows(const struct data_set *ds, enum data_split split)
{
    return split == DATA_TRAIN ? ds->train_cum[ds->n_series] : ds->n_val;
}

struct data_window data_window_at(const struct data_set *ds, enum data_split split, int64_t i)
{
    LG_ASSERT(i >= 0 && i < data_n_windows(ds, split) && "window index out of range");
    if (split == DATA_VAL) return ds->val[i];
    int lo = 0, hi = ds->n_series - 1; /* the series s with train_cum[s] <= i < train_cum[s+1] */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (ds->train_cum[mid] <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    return (struct data_window){lo, i - ds->train_cum[lo]};
}
