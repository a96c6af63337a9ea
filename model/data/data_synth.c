/* data_synth.c — seeded synthetic series for any TFT config.
 *
 * Every series s has a level and a scale drawn from its static covariates, a trend, a
 * seasonal profile over the period (weekly for day-level data, daily plus a weekly profile
 * for hourly data), a yearly swing, AR(1) noise, and shifts from events in its known inputs
 * (promotions lift it, holidays lower it, other known categoricals and reals move it a
 * little). Known inputs are computed from the calendar or drawn ahead of time, so they are
 * truly known in advance. Extra observed reals follow the target with noise. Variables are
 * recognised by name (dow, day_of_week, hour, month, day_of_month, *holiday*, *promo*,
 * time, *from_start*, log*); any other variable gets a generic, still informative, role.
 * Everything is drawn from hashes of (seed, series, variable, step), so the same seed gives
 * the same data whatever the order of evaluation.
 */
#include <math.h>
#include <string.h>

#include "data_impl.h"

#define TWO_PI 6.283185307179586

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t hash4(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    return mix(mix(mix(mix(seed + 0x9E3779B97F4A7C15ull) ^ a) ^ (b * 0x9E3779B1u)) ^ c);
}

/* Uniform in [0, 1) and N(0, 1) from a hash. */
static double hunif(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }
static double hnorm(uint64_t h)
{
    double u1 = hunif(mix(h)) + 0x1.0p-54, u2 = hunif(mix(h ^ 0x5DEECE66Dull));
    return sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
}

/* What a variable means to the generator. */
enum role {
    R_ID,
    R_STATIC_CAT,
    R_STATIC_REAL,
    R_TARGET,
    R_OBS_LOG,
    R_OBS,
    R_DOW,
    R_HOUR,
    R_MONTH,
    R_DOM,
    R_HOLIDAY_NAT,
    R_HOLIDAY_LOCAL,
    R_PROMO,
    R_TIME,
    R_KNOWN_CAT,
    R_KNOWN_REAL,
};

static bool has(const char *name, const char *part) { return strstr(name, part) != NULL; }

static enum role role_of(const struct tft_config *c, int v, int first_static_cat)
{
    const struct tft_var *x = &c->vars[v];
    const char *n = x->name;
    if (x->role == TFT_STATIC)
        return v == first_static_cat ? R_ID : x->kind == TFT_CAT ? R_STATIC_CAT : R_STATIC_REAL;
    if (x->role == TFT_OBSERVED)
        return v == tft_target_var(c) ? R_TARGET : strncmp(n, "log", 3) == 0 ? R_OBS_LOG : R_OBS;
    if (!strcmp(n, "dow") || !strcmp(n, "day_of_week")) return R_DOW;
    if (!strcmp(n, "hour") || !strcmp(n, "hour_of_day")) return R_HOUR;
    if (!strcmp(n, "month")) return R_MONTH;
    if (!strcmp(n, "day_of_month")) return R_DOM;
    if (has(n, "holiday")) return has(n, "national") ? R_HOLIDAY_NAT : R_HOLIDAY_LOCAL;
    if (has(n, "promo")) return R_PROMO;
    if (!strcmp(n, "time") || !strcmp(n, "t") || has(n, "from_start") || has(n, "time_idx"))
        return R_TIME;
    return x->kind == TFT_CAT ? R_KNOWN_CAT : R_KNOWN_REAL;
}

struct plan {
    int hourly, season, n_series;
    int64_t n_train, val_steps;
    enum role role[TFT_MAX_VARS];
};

static int make_plan(struct plan *p, const struct tft_config *c, const struct data_synth_options *o)
{
    memset(p, 0, sizeof *p);
    int first_cat = -1;
    for (int v = 0; v < c->n_vars; v++)
        if (first_cat < 0 && c->vars[v].role == TFT_STATIC && c->vars[v].kind == TFT_CAT)
            first_cat = v;
    for (int v = 0; v < c->n_vars; v++) {
        p->role[v] = role_of(c, v, first_cat);
        if (p->role[v] == R_HOUR) p->hourly = 1;
    }
    int64_t T = c->T_enc + c->T_dec;
    int n_series = 64;
    int64_t n_train;
    if (!strcmp(c->preset, "tiny")) {
        n_train = 140;
    } else if (!strcmp(c->preset, "electricity")) {
        p->hourly = 1, n_series = 370, n_train = 672;
    } else if (!strcmp(c->preset, "foxhunt-815")) {
        p->hourly = 0, n_series = 128, n_train = 365;
    } else {
        n_train = LG_MAX(12 * (p->hourly ? 24 : 7), 4 * T);
    }
    p->season = p->hourly ? 24 : 7;
    p->n_series = o->n_series ? o->n_series : n_series;
    p->n_train = o->n_train ? o->n_train : n_train;
    p->val_steps = o->val_steps ? o->val_steps : T + 2 * c->T_dec;
    if (p->n_series < 1 || p->n_series > 10000000 || p->n_train < T || p->n_train > 100000000 ||
        p->val_steps < T || p->val_steps > 100000000)
        return lg_fail(LG_EINVAL,
                       "data: synthetic %s: need n_series >= 1 (%d), n_train >= T_enc + T_dec = "
                       "%lld (%lld) and val_steps >= T_enc + T_dec (%lld)",
                       c->preset, p->n_series, (long long)T, (long long)p->n_train,
                       (long long)p->val_steps);
    return LG_OK;
}

/* Day-of-year to month (0..11) and day of month (0..30) in a 365-day year. */
static void calendar(int64_t doy, int *month, int *dom)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int m = 0;
    while (m < 11 && doy >= mdays[m]) doy -= mdays[m++];
    *month = m;
    *dom = (int)doy;
}

/* A zero-mean, unit-RMS profile over n slots: a few harmonics with coefficients from h. */
static void profile(double *out, int n, uint64_t h)
{
    double mean = 0.0, sq = 0.0;
    for (int k = 0; k < n; k++) {
        out[k] = 0.0;
        for (int j = 1; j <= 3; j++)
            out[k] +=
                hnorm(h + 2 * j) / j * cos(TWO_PI * j * k / n + TWO_PI * hunif(h + 2 * j + 1));
        mean += out[k] / n;
    }
    for (int k = 0; k < n; k++) sq += (out[k] - mean) * (out[k] - mean) / n;
    for (int k = 0; k < n; k++) out[k] = sq > 0 ? (out[k] - mean) / sqrt(sq) : 0.0;
}

/* Statics of series s, and the level, scale and shape they imply. */
struct series_look {
    double level, amp, noise, trend, phase_year;
    double prof[24], week[7];
};

static void draw_statics(struct data_set *ds, const struct plan *p, uint64_t seed, int s,
                         struct series_look *lk)
{
    const struct tft_config *c = &ds->cfg;
    double loglev = 3.0, logamp = 0.0;
    for (int v = 0; v < c->n_vars; v++) {
        if (c->vars[v].role != TFT_STATIC) continue;
        if (c->vars[v].kind == TFT_CAT) {
            int card = c->vars[v].cardinality;
            int32_t k = p->role[v] == R_ID
                            ? s % card
                            : (int32_t)(hash4(seed, 1, (uint64_t)v, (uint64_t)s) % (uint64_t)card);
            data_col_i32(ds, v)[s] = k;
            loglev += 0.5 * hnorm(hash4(seed, 2, (uint64_t)v, (uint64_t)k));
            logamp += 0.25 * hnorm(hash4(seed, 3, (uint64_t)v, (uint64_t)k));
        } else {
            double r = hnorm(hash4(seed, 4, (uint64_t)v, (uint64_t)s));
            data_col_f32(ds, v)[s] = (float)r;
            loglev += 0.3 * r;
            logamp += 0.15 * r;
        }
    }
    lk->level = exp(loglev);
    lk->amp = 0.35 * exp(logamp);
    lk->noise = 0.08 + 0.04 * hunif(hash4(seed, 5, 0, (uint64_t)s));
    lk->trend = 0.3 * hnorm(hash4(seed, 6, 0, (uint64_t)s));
    lk->phase_year = TWO_PI * hunif(hash4(seed, 7, 0, (uint64_t)s));
    double base[24], own[24];
    profile(base, p->season, hash4(seed, 8, 0, 0));
    profile(own, p->season, hash4(seed, 8, 1, (uint64_t)s));
    for (int k = 0; k < p->season; k++) lk->prof[k] = base[k] + 0.4 * own[k];
    profile(lk->week, 7, hash4(seed, 9, 0, (uint64_t)s % 5)); /* hourly data: weekly shape */
}

/* Fills the known inputs of series s at step t and returns their effect on the target. */
static double known_step(struct data_set *ds, const struct plan *p, uint64_t seed, int s, int64_t t,
                         int64_t row)
{
    const struct tft_config *c = &ds->cfg;
    int64_t day = p->hourly ? t / 24 : t;
    int hour = p->hourly ? (int)(t % 24) : 0, dow = (int)(day % 7), month, dom;
    calendar(day % 365, &month, &dom);
    double eff = 0.0;
    for (int v = 0; v < c->n_vars; v++) {
        if (c->vars[v].role != TFT_KNOWN) continue;
        int card = c->vars[v].cardinality;
        double x = 0.0; /* the value (index for categoricals) */
        switch (p->role[v]) {
        case R_DOW: x = dow; break;
        case R_HOUR: x = hour; break;
        case R_MONTH: x = month; break;
        case R_DOM:
            x = dom;
            eff += (dom == 0 || dom == 14) ? 0.1 : 0.0; /* paydays */
            break;
        case R_HOLIDAY_NAT:
        case R_HOLIDAY_LOCAL: {
            uint64_t who = p->role[v] == R_HOLIDAY_NAT ? 0 : (uint64_t)s + 1;
            x = hunif(hash4(seed, 10 + (uint64_t)v, who, (uint64_t)day)) < 0.04;
            eff -= 0.5 * x;
            break;
        }
        case R_PROMO: {
            double u = hunif(hash4(seed, 40 + (uint64_t)v, (uint64_t)s, (uint64_t)day));
            int levels = card > 1 ? card - 1 : 1;
            x = u < 0.12 ? 1 + (int)(u / 0.12 * levels) % levels : 0;
            eff += 0.6 * x / levels;
            break;
        }
        case R_TIME: x = (double)t; break;
        case R_KNOWN_CAT: {
            int64_t k = (int64_t)(hash4(seed, 70 + (uint64_t)v, (uint64_t)s, (uint64_t)day) %
                                  (uint64_t)(card > 0 ? card : 1));
            x = (double)k;
            eff += 0.2 * hnorm(hash4(seed, 100 + (uint64_t)v, (uint64_t)k, 0));
            break;
        }
        default: { /* a smooth signal known ahead, common to every series (oil prices) */
            double per = 20.0 + 180.0 * hunif(hash4(seed, 130 + (uint64_t)v, 0, 0));
            x = sin(TWO_PI * (double)t / per) + 0.5 * sin(TWO_PI * (double)t / (2.7 * per) + 1.0);
            eff += 0.15 * x;
            break;
        }
        }
        if (c->vars[v].kind == TFT_CAT)
            data_col_i32(ds, v)[row] = (int32_t)((int64_t)x % card);
        else
            data_col_f32(ds, v)[row] = (float)x;
    }
    return eff;
}

static void fill_series(struct data_set *ds, const struct plan *p, uint64_t seed, int s)
{
    const struct tft_config *c = &ds->cfg;
    struct series_look lk;
    draw_statics(ds, p, seed, s, &lk);
    int tv = tft_target_var(c);
    float *y = data_col_f32(ds, tv) + ds->start[s];
    int64_t len = ds->start[s + 1] - ds->start[s];
    struct tn_rng r;
    tn_rng_seed(&r, hash4(seed, 200, 0, (uint64_t)s));
    double e = 0.0;
    for (int64_t t = 0; t < len; t++) {
        int64_t day = p->hourly ? t / 24 : t;
        double shape = lk.amp * lk.prof[t % p->season];
        if (p->hourly) shape += 0.5 * lk.amp * lk.week[day % 7];
        shape += 0.1 * sin(TWO_PI * (double)(day % 365) / 365.0 + lk.phase_year);
        double eff = known_step(ds, p, seed, s, t, ds->start[s] + t);
        e = 0.5 * e + 0.866 * tn_rng_normal(&r); /* AR(1), unit variance */
        double rel = 1.0 + lk.trend * (double)t / (double)p->n_train + shape + eff;
        y[t] = (float)(lk.level * (rel + lk.noise * e));
    }
    for (int v = 0; v < c->n_vars; v++) {
        if (c->vars[v].role != TFT_OBSERVED || v == tv) continue;
        float *x = data_col_f32(ds, v) + ds->start[s];
        double rho = 0.6 + 0.3 * hunif(hash4(seed, 210, (uint64_t)v, 0));
        for (int64_t t = 0; t < len; t++) {
            double dev = (y[t] - lk.level) / lk.level; /* the target's relative swing */
            if (p->role[v] == R_OBS_LOG)
                x[t] = (float)log1p(y[t] > 0 ? y[t] : 0.0);
            else
                x[t] =
                    (float)(rho * dev / (lk.amp + 0.1) + sqrt(1.0 - rho * rho) * tn_rng_normal(&r));
        }
    }
}

int data_synth_new(struct data_set **out, struct trk_tracker *trk, const struct tft_config *cfg,
                   const struct data_synth_options *opt)
{
    static const struct data_synth_options defaults = {0};
    if (!opt) opt = &defaults;
    int rc = tft_config_validate(cfg);
    if (rc != LG_OK) return lg_fail_ctx(rc, "data: synthetic series: ");
    struct plan p;
    if ((rc = make_plan(&p, cfg, opt)) != LG_OK) return rc;
    int64_t *len = trk_alloc(trk, (size_t)p.n_series * sizeof *len, "data/synth.len");
    if (!len) return lg_fail(LG_ENOMEM, "data: out of memory");
    for (int s = 0; s < p.n_series; s++) len[s] = p.n_train + p.val_steps;
    struct data_set *ds = NULL;
    rc = data_set_alloc(&ds, trk, cfg, p.n_series, len);
    trk_free(trk, len);
    if (rc != LG_OK) return rc;
    ds->seed = opt->seed;
    ds->season = p.season <= cfg->T_enc ? p.season : 1;
    lg_strlcpy(ds->time_unit, p.hourly ? "hour" : "day", sizeof ds->time_unit);
    for (int s = 0; s < p.n_series; s++) fill_series(ds, &p, opt->seed, s);
    if ((rc = data_set_finish(ds, p.val_steps)) != LG_OK) {
        data_free(ds);
        return rc;
    }
    *out = ds;
    return LG_OK;
}
