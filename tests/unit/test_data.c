/* test_data.c — training data: the synthetic generator (determinism, calendars, value ranges,
 * normalisation, informative inputs) for every preset, the split and the window lists,
 * batches (shapes, dtypes, tags, index ranges), the seasonal-naive baseline and the pinball
 * helper against hand-computed values, the CSV loader's happy path and every malformed
 * input's message, and the fuzzer's regression inputs. */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "lg_test.h"

TestSuite(data, .init = lg_test_setup, .fini = lg_test_teardown);

static struct data_set *synth(const char *preset, struct tft_config *cfg, uint64_t seed)
{
    cr_assert_eq(tft_config_preset(cfg, preset), LG_OK, "%s", lg_errmsg());
    struct data_set *ds = NULL;
    int rc = data_synth_new(&ds, T, cfg, &(struct data_synth_options){.seed = seed});
    cr_assert_eq(rc, LG_OK, "%s: %s", preset, lg_errmsg());
    return ds;
}

static const char *csv_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/csv/%s", lg_test_data_dir(), name);
    return buf;
}

/* data_load_csv of tests/data/csv/<csv> with the config tests/data/csv/<json>. */
static int load_csv(struct data_set **ds, struct tft_config *cfg, const char *csv, const char *json)
{
    return data_load_csv(ds, cfg, T, lg_test_datafile("csv", csv), lg_test_datafile("csv", json));
}

/* The data set of a CSV file and config that must load; freed with data_free. */
static struct data_set *csv_ok(struct tft_config *cfg, const char *csv, const char *json)
{
    struct data_set *ds = NULL;
    cr_assert_eq(load_csv(&ds, cfg, csv, json), LG_OK, "%s + %s: %s", csv, json, lg_errmsg());
    return ds;
}

/* ---- the synthetic generator ------------------------------------------------------------ */

Test(data, synth_is_deterministic_per_seed)
{
    struct tft_config cfg;
    struct data_set *a = synth("tiny", &cfg, 7), *b = synth("tiny", &cfg, 7),
                    *c = synth("tiny", &cfg, 8);
    cr_assert_eq(data_n_series(a), 64);
    int64_t differ = 0, n = 0;
    for (int v = 0; v < cfg.n_vars; v++)
        for (int s = 0; s < data_n_series(a); s++)
            for (int64_t t = 0; t < data_series_len(a, s); t++) {
                float x = data_value(a, v, s, t), y = data_value(b, v, s, t);
                cr_assert(memcmp(&x, &y, sizeof x) == 0, "var %d series %d step %lld differs", v, s,
                          (long long)t);
                differ += data_value(c, v, s, t) != x;
                n++;
                if (cfg.vars[v].role == TFT_STATIC) break;
            }
    /* another seed changes the draws, not the calendar */
    cr_assert_gt(differ, n / 3, "seed 8 should give other data (%lld of %lld differ)",
                 (long long)differ, (long long)n);
    for (int64_t i = 0; i < data_n_windows(a, DATA_VAL); i++) {
        struct data_window wa = data_window_at(a, DATA_VAL, i), wb = data_window_at(b, DATA_VAL, i);
        cr_assert(wa.series == wb.series && wa.start == wb.start);
    }
    data_free(a);
    data_free(b);
    data_free(c);
}

/* Mean and standard deviation of variable v over the training steps of all series (the
 * target's: per series, averaged over series). */
static void train_moments(const struct data_set *ds, int v, double *mean, double *sd)
{
    const struct tft_config *c = data_config(ds);
    bool target = v == tft_target_var(c);
    double m_acc = 0, s_acc = 0, sum = 0, sq = 0, n = 0;
    for (int s = 0; s < data_n_series(ds); s++) {
        if (target) sum = sq = n = 0;
        for (int64_t t = 0; t < data_train_len(ds, s); t++) {
            double x = data_value(ds, v, s, t);
            sum += x, sq += x * x, n += 1;
        }
        if (target) {
            m_acc += sum / n;
            s_acc += sqrt(sq / n - (sum / n) * (sum / n));
        }
    }
    if (target) {
        *mean = m_acc / data_n_series(ds);
        *sd = s_acc / data_n_series(ds);
    } else {
        *mean = sum / n;
        *sd = sqrt(sq / n - *mean * *mean);
    }
}

static void check_values(const struct data_set *ds)
{
    const struct tft_config *c = data_config(ds);
    for (int v = 0; v < c->n_vars; v++) {
        const struct tft_var *var = &c->vars[v];
        for (int s = 0; s < data_n_series(ds); s++)
            for (int64_t t = 0; t < data_series_len(ds, s); t++) {
                float x = data_value(ds, v, s, t);
                if (var->kind == TFT_CAT)
                    cr_assert(x >= 0 && x < var->cardinality && x == floorf(x),
                              "%s: index %g outside [0, %d)", var->name, x, var->cardinality);
                else
                    cr_assert(isfinite(x) && fabsf(x) < 25.0f,
                              "%s: value %g at series %d step %lld", var->name, x, s, (long long)t);
                if (var->role == TFT_STATIC) break;
            }
        if (var->kind == TFT_REAL && var->role != TFT_STATIC) {
            double m, sd;
            train_moments(ds, v, &m, &sd);
            cr_assert(fabs(m) < 1e-3 && fabs(sd - 1.0) < 1e-3,
                      "%s: training mean %g sd %g, want 0 and 1", var->name, m, sd);
        }
    }
}

static void check_batch(const struct data_set *ds, const struct tft_batch *b, int B)
{
    const struct tft_config *c = data_config(ds);
    int64_t Tn = c->T_enc + c->T_dec;
    cr_assert_eq(b->B, B);
    for (int v = 0; v < c->n_vars; v++) {
        const struct tft_var *var = &c->vars[v];
        const struct tn_tensor *x = b->x[v];
        cr_assert_not_null(x, "%s", var->name);
        char want[LG_MAX_NAME], tag[LG_MAX_NAME];
        snprintf(want, sizeof want, "data/%s", var->name);
        cr_assert_str_eq(x->name, want);
        cr_assert(trk_tag_of(T, x->st->data, tag, sizeof tag));
        cr_assert_str_eq(tag, want, "storage tagged by the variable");
        cr_assert_eq(x->dtype, var->kind == TFT_CAT ? TN_I32 : TN_F32, "%s dtype", var->name);
        cr_assert_eq(x->device, TN_CPU);
        if (var->role == TFT_STATIC) {
            cr_assert(x->ndim == 1 && x->ne[0] == B, "%s: static [B]", var->name);
        } else {
            int64_t steps = var->role == TFT_OBSERVED ? c->T_enc : Tn;
            cr_assert(x->ndim == 2 && x->ne[0] == B && x->ne[1] == steps, "%s: [%d, %lld]",
                      var->name, B, (long long)steps);
        }
        for (int64_t i = 0; i < tn_numel(x); i++)
            if (var->kind == TFT_CAT)
                cr_assert(tn_i32(x)[i] >= 0 && tn_i32(x)[i] < var->cardinality, "%s", var->name);
            else
                cr_assert(isfinite(tn_f32(x)[i]), "%s", var->name);
    }
    for (int v = c->n_vars; v < TFT_MAX_VARS; v++) cr_assert_null(b->x[v]);
    cr_assert_str_eq(b->y->name, "data/y");
    cr_assert(b->y->dtype == TN_F32 && b->y->ndim == 2 && b->y->ne[0] == B &&
              b->y->ne[1] == c->T_dec);
}

/* Every live tagged byte while a data set and a batch exist is under "data/" (storage) or
 * "meta/" (tensor structs). */
static void check_tags(void)
{
    struct trk_tag_stat *st = NULL;
    size_t n = trk_tag_stats(T, &st);
    for (size_t i = 0; i < n; i++)
        if (st[i].live_bytes > 0)
            cr_assert(!strncmp(st[i].tag, "data/", 5) || !strncmp(st[i].tag, "meta/", 5),
                      "live memory under tag %s", st[i].tag);
    free(st);
}

static void check_preset(const char *preset, int want_series, const char *unit, int season, int B)
{
    struct tft_config cfg;
    struct data_set *ds = synth(preset, &cfg, 1);
    cr_assert_eq(data_n_series(ds), want_series, "%s", preset);
    cr_assert_str_eq(data_time_unit(ds), unit);
    cr_assert_eq(data_season(ds), season);
    check_values(ds);
    struct data_cursor cur;
    data_cursor_init(&cur, 3);
    struct tft_batch b = {0};
    cr_assert_eq(data_batch(ds, DATA_TRAIN, B, &cur, &b), LG_OK, "%s", lg_errmsg());
    check_batch(ds, &b, B);
    check_tags();
    tft_batch_fini(&b);
    cr_assert_eq(data_batch(ds, DATA_VAL, B, &cur, &b), LG_OK, "%s", lg_errmsg());
    check_batch(ds, &b, B);
    tft_batch_fini(&b);
    cr_assert_null(b.y, "tft_batch_fini zeroes the batch");
    data_free(ds);
}

Test(data, tiny_values_batches_and_tags) { check_preset("tiny", 64, "day", 7, 8); }
Test(data, electricity_values_batches_and_tags)
{
    check_preset("electricity", 370, "hour", 24, 16);
}
Test(data, foxhunt_values_batches_and_tags) { check_preset("foxhunt-815", 128, "day", 7, 2); }

static int var_index(const struct tft_config *c, const char *name)
{
    for (int v = 0; v < c->n_vars; v++)
        if (!strcmp(c->vars[v].name, name)) return v;
    cr_assert_fail("no variable %s", name);
    return -1;
}

/* The raw value: stored · std + mean. */
static double raw(const struct data_set *ds, int v, int s, int64_t t)
{
    struct data_scale sc = data_scaling(ds, v, s);
    return data_value(ds, v, s, t) * sc.std + sc.mean;
}

Test(data, calendars_follow_the_time_unit)
{
    struct tft_config cfg;
    struct data_set *ds = synth("tiny", &cfg, 2);
    int dow = var_index(&cfg, "dow"), time = var_index(&cfg, "time");
    for (int s = 0; s < 3; s++)
        for (int64_t t = 0; t < data_series_len(ds, s); t++) {
            cr_assert_eq((int64_t)data_value(ds, dow, s, t), t % 7);
            cr_assert_float_eq(raw(ds, time, s, t), (double)t, 1e-3);
        }
    data_free(ds);
    ds = synth("electricity", &cfg, 2);
    int hour = var_index(&cfg, "hour"), dw = var_index(&cfg, "day_of_week"),
        hfs = var_index(&cfg, "hours_from_start");
    for (int64_t t = 0; t < data_series_len(ds, 5); t++) {
        cr_assert_float_eq(raw(ds, hour, 5, t), (double)(t % 24), 1e-3);
        cr_assert_float_eq(raw(ds, dw, 5, t), (double)(t / 24 % 7), 1e-3);
        cr_assert_float_eq(raw(ds, hfs, 5, t), (double)t, 1e-2);
    }
    for (int s = 0; s < data_n_series(ds); s++)
        cr_assert_eq(data_value(ds, 0, s, 0), (float)s, "id");
    data_free(ds);
    ds = synth("foxhunt-815", &cfg, 2);
    int fd = var_index(&cfg, "day_of_week"), mo = var_index(&cfg, "month"),
        dom = var_index(&cfg, "day_of_month");
    for (int64_t t = 0; t < data_series_len(ds, 0); t++) {
        cr_assert_eq((int64_t)data_value(ds, fd, 0, t), t % 7);
        if (t == 31) cr_assert(data_value(ds, mo, 0, t) == 1 && data_value(ds, dom, 0, t) == 0);
    }
    data_free(ds);
}

/* Correlation of two equal-length arrays. */
static double corr(const double *a, const double *b, int64_t n)
{
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (int64_t i = 0; i < n; i++) ma += a[i] / n, mb += b[i] / n;
    for (int64_t i = 0; i < n; i++) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return sab / sqrt(saa * sbb);
}

Test(data, known_and_observed_inputs_are_informative)
{
    struct tft_config cfg;
    struct data_set *ds = synth("foxhunt-815", &cfg, 4);
    int y = tft_target_var(&cfg), promo = var_index(&cfg, "onpromotion"),
        hol = var_index(&cfg, "national_holiday"), tr = var_index(&cfg, "transactions");
    double on = 0, off = 0, n_on = 0, n_off = 0, h_on = 0, n_h = 0;
    int64_t len = data_series_len(ds, 0), n = 0;
    double *a = malloc(sizeof(double) * (size_t)len * 8),
           *b = malloc(sizeof(double) * (size_t)len * 8);
    for (int s = 0; s < 8; s++)
        for (int64_t t = 0; t < len; t++) {
            double x = data_value(ds, y, s, t);
            if (data_value(ds, promo, s, t))
                on += x, n_on++;
            else
                off += x, n_off++;
            if (data_value(ds, hol, s, t)) h_on += x, n_h++;
            a[n] = x, b[n++] = data_value(ds, tr, s, t);
        }
    cr_assert(n_on > 20 && n_h > 10, "promotions %g and holidays %g happen", n_on, n_h);
    cr_assert_gt(on / n_on - off / n_off, 0.5, "promotions lift the target");
    cr_assert_lt(h_on / n_h - off / n_off, -0.5, "holidays lower the target");
    double r = corr(a, b, n);
    cr_assert_gt(r, 0.4, "transactions follow the target (r = %g)", r);
    free(a);
    free(b);
    /* holidays are national: the same days in every series */
    for (int64_t t = 0; t < len; t++)
        cr_assert_eq(data_value(ds, hol, 0, t), data_value(ds, hol, 5, t));
    data_free(ds);
}

Test(data, seasonal_naive_beats_the_mean_on_synthetic_validation)
{
    static const char *presets[] = {"tiny", "electricity"};
    for (size_t p = 0; p < LG_ARRAY_LEN(presets); p++) {
        struct tft_config cfg;
        struct data_set *ds = synth(presets[p], &cfg, 5);
        struct data_cursor cur;
        data_cursor_init(&cur, 0);
        double naive = 0, flat = 0;
        int64_t nb = LG_MIN(data_n_batches(ds, DATA_VAL, 64), 8);
        for (int64_t k = 0; k < nb; k++) {
            struct tft_batch b = {0};
            cr_assert_eq(data_batch(ds, DATA_VAL, 64, &cur, &b), LG_OK);
            struct tn_tensor *f = data_seasonal_naive(T, &cfg, &b, data_season(ds));
            cr_assert_not_null(f, "%s", lg_errmsg());
            naive += data_pinball(&cfg, f, b.y);
            tn_fill(f, 0.0f); /* the training mean of the normalised target */
            flat += data_pinball(&cfg, f, b.y);
            tn_release(f);
            tft_batch_fini(&b);
        }
        cr_assert_lt(naive, 0.85 * flat, "%s: seasonal naive %g vs flat %g", presets[p], naive / nb,
                     flat / nb);
        data_free(ds);
    }
}

/* ---- splits, windows, sampling ------------------------------------------------------------ */

Test(data, validation_windows_lie_after_the_training_range)
{
    struct tft_config cfg;
    struct data_set *ds = synth("tiny", &cfg, 3);
    int64_t Tn = cfg.T_enc + cfg.T_dec, nv = data_n_windows(ds, DATA_VAL);
    /* 140 training days, 20 validation days: windows at 140, 144, 148 in each series */
    cr_assert_eq(data_series_len(ds, 0), 160);
    cr_assert_eq(data_train_len(ds, 0), 140);
    cr_assert_eq(nv, 64 * 3);
    cr_assert_eq(data_n_windows(ds, DATA_TRAIN), 64 * (140 - Tn + 1));
    int *seen = calloc((size_t)64 * 3, sizeof *seen);
    for (int64_t i = 0; i < nv; i++) {
        struct data_window w = data_window_at(ds, DATA_VAL, i);
        cr_assert_geq(w.start, data_train_len(ds, w.series));
        cr_assert_leq(w.start + Tn, data_series_len(ds, w.series));
        cr_assert_eq((w.start - 140) % cfg.T_dec, 0);
        seen[w.series * 3 + (w.start - 140) / cfg.T_dec]++;
    }
    for (int i = 0; i < 64 * 3; i++) cr_assert_eq(seen[i], 1, "each window once");
    free(seen);
    for (int64_t i = 0; i < data_n_windows(ds, DATA_TRAIN); i += 37) {
        struct data_window w = data_window_at(ds, DATA_TRAIN, i);
        cr_assert_leq(w.start + Tn, data_train_len(ds, w.series));
    }
    struct data_window last = data_window_at(ds, DATA_TRAIN, data_n_windows(ds, DATA_TRAIN) - 1);
    cr_assert(last.series == 63 && last.start == 140 - Tn);
    /* a cursor walks the list once in ceil(n / B) batches, the last one short */
    struct data_cursor cur;
    data_cursor_init(&cur, 0);
    cr_assert_eq(data_n_batches(ds, DATA_VAL, 50), 4);
    int sizes[5];
    for (int k = 0; k < 5; k++) {
        struct tft_batch b = {0};
        cr_assert_eq(data_batch(ds, DATA_VAL, 50, &cur, &b), LG_OK);
        sizes[k] = b.B;
        if (k == 1) { /* the batch holds exactly the listed windows */
            int tv = tft_target_var(&cfg);
            for (int i = 0; i < b.B; i++) {
                struct data_window w = data_window_at(ds, DATA_VAL, 50 + i);
                for (int t = 0; t < cfg.T_dec; t++)
                    cr_assert_eq(tn_f32(b.y)[i * cfg.T_dec + t],
                                 data_value(ds, tv, w.series, w.start + cfg.T_enc + t));
                for (int t = 0; t < cfg.T_enc; t++)
                    cr_assert_eq(tn_f32(b.x[tv])[i * cfg.T_enc + t],
                                 data_value(ds, tv, w.series, w.start + t));
            }
        }
        tft_batch_fini(&b);
    }
    cr_assert(sizes[0] == 50 && sizes[1] == 50 && sizes[2] == 50 && sizes[3] == 42 &&
                  sizes[4] == 50,
              "batch sizes %d %d %d %d %d", sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]);
    data_free(ds);
}

Test(data, training_batches_are_seeded)
{
    struct tft_config cfg;
    struct data_set *ds = synth("tiny", &cfg, 3);
    struct data_cursor c1, c2, c3;
    data_cursor_init(&c1, 11);
    data_cursor_init(&c2, 11);
    data_cursor_init(&c3, 12);
    struct tft_batch a = {0}, b = {0}, c = {0};
    for (int step = 0; step < 3; step++) {
        cr_assert_eq(data_batch(ds, DATA_TRAIN, 32, &c1, &a), LG_OK);
        cr_assert_eq(data_batch(ds, DATA_TRAIN, 32, &c2, &b), LG_OK);
        cr_assert_eq(data_batch(ds, DATA_TRAIN, 32, &c3, &c), LG_OK);
        for (int v = 0; v < cfg.n_vars; v++)
            cr_assert(!memcmp(tn_data(a.x[v]), tn_data(b.x[v]), tn_nbytes(a.x[v])));
        cr_assert(!memcmp(tn_data(a.y), tn_data(b.y), tn_nbytes(a.y)));
        cr_assert(memcmp(tn_data(a.y), tn_data(c.y), tn_nbytes(a.y)),
                  "another seed, other windows");
        tft_batch_fini(&a);
        tft_batch_fini(&b);
        tft_batch_fini(&c);
    }
    cr_assert_eq(data_batch(ds, DATA_TRAIN, 0, &c1, &a), LG_EINVAL);
    data_free(ds);
}

Test(data, synth_rejects_bad_options)
{
    struct tft_config cfg;
    tft_config_preset(&cfg, "tiny");
    struct data_set *ds = NULL;
    cr_assert_eq(data_synth_new(&ds, T, &cfg, &(struct data_synth_options){.val_steps = 5}),
                 LG_EINVAL);
    cr_assert(strstr(lg_errmsg(), "val_steps"), "%s", lg_errmsg());
    cr_assert_eq(data_synth_new(&ds, T, &cfg, &(struct data_synth_options){.n_train = 3}),
                 LG_EINVAL);
    cfg.hidden = 15;
    cr_assert_eq(data_synth_new(&ds, T, &cfg, NULL), LG_EINVAL);
    cr_assert_null(ds);
    /* small custom sizes work for any config */
    tft_config_preset(&cfg, "foxhunt-815");
    cr_assert_eq(
        data_synth_new(&ds, T, &cfg,
                       &(struct data_synth_options){.n_series = 3, .n_train = 40, .val_steps = 37}),
        LG_OK, "%s", lg_errmsg());
    cr_assert_eq(data_n_windows(ds, DATA_VAL), 3);
    check_values(ds);
    data_free(ds);
}

/* ---- the baseline and the loss ------------------------------------------------------------- */

Test(data, seasonal_naive_on_a_hand_made_series)
{
    struct tft_config cfg;
    tft_config_preset(&cfg, "tiny"); /* T_enc 8, T_dec 4, quantiles 0.1 0.5 0.9 */
    int tv = tft_target_var(&cfg);
    struct tft_batch b = {.B = 2};
    b.x[tv] = tn_new_f32(T, "data/target", 2, (int64_t[]){2, 8});
    b.y = tn_new_f32(T, "data/y", 2, (int64_t[]){2, 4});
    for (int i = 0; i < 16; i++) tn_f32(b.x[tv])[i] = (float)(i * i % 11) + 0.5f * (i >= 8);
    const float *e = tn_f32(b.x[tv]);
    static const struct {
        int season;
        int src[4]; /* encoder position each decoder step copies */
    } cases[] = {{7, {1, 2, 3, 4}},
                 {3, {5, 6, 7, 5}},
                 {1, {7, 7, 7, 7}},
                 {8, {0, 1, 2, 3}},
                 {2, {6, 7, 6, 7}}};
    for (size_t k = 0; k < LG_ARRAY_LEN(cases); k++) {
        struct tn_tensor *f = data_seasonal_naive(T, &cfg, &b, cases[k].season);
        cr_assert_not_null(f);
        cr_assert(f->ndim == 3 && f->ne[0] == 2 && f->ne[1] == 4 && f->ne[2] == 3);
        for (int i = 0; i < 2; i++)
            for (int t = 0; t < 4; t++)
                for (int q = 0; q < 3; q++)
                    cr_assert_eq(tn_f32(f)[(i * 4 + t) * 3 + q], e[i * 8 + cases[k].src[t]],
                                 "season %d row %d step %d", cases[k].season, i, t);
        tn_release(f);
    }
    cr_assert_null(data_seasonal_naive(T, &cfg, &b, 9));
    cr_assert_eq(lg_errcode(), LG_EINVAL);
    cr_assert_null(data_seasonal_naive(T, &cfg, &b, 0));
    tft_batch_fini(&b);
}

Test(data, pinball_matches_hand_computed_values)
{
    struct tft_config cfg;
    tft_config_preset(&cfg, "tiny"); /* quantiles 0.1, 0.5, 0.9 */
    struct tn_tensor *y = tn_new_f32(T, "data/y", 2, (int64_t[]){1, 2});
    struct tn_tensor *f = tn_new_f32(T, "data/f", 3, (int64_t[]){1, 2, 3});
    memcpy(tn_f32(y), (float[]){1, 2}, 2 * sizeof(float));
    memcpy(tn_f32(f), (float[]){0, 1, 2, 3, 2, 1}, 6 * sizeof(float));
    /* step 0 (y 1): 0.1·1 + 0 + 0.1·1 = 0.2; step 1 (y 2): 0.9·1 + 0 + 0.9·1 = 1.8; mean 1.0 */
    cr_assert_float_eq(data_pinball(&cfg, f, y), 1.0, 1e-6); /* float quantiles */
    memcpy(tn_f32(f), (float[]){1, 1, 1, 2, 2, 2}, 6 * sizeof(float));
    cr_assert_float_eq(data_pinball(&cfg, f, y), 0.0, 1e-6, "perfect forecast");
    memcpy(tn_f32(f), (float[]){3, 3, 3, -2, -2, -2}, 6 * sizeof(float));
    /* step 0: over by 2: 2·(0.9 + 0.5 + 0.1) = 3; step 1: under by 4: 4·(0.1 + 0.5 + 0.9) = 6 */
    cr_assert_float_eq(data_pinball(&cfg, f, y), 4.5, 1e-6);
    tn_release(y);
    tn_release(f);
}

/* ---- CSV ------------------------------------------------------------------------------------ */

Test(data, csv_values_land_where_expected)
{
    struct tft_config cfg;
    struct data_set *ds = csv_ok(&cfg, "small.csv", "small.json");
    cr_assert_eq(tft_config_validate(&cfg), LG_OK);
    /* spec order: static cat, target, observed, known cat, known real */
    static const char *names[] = {"kind", "y", "x", "dow", "k"};
    cr_assert_eq(cfg.n_vars, 5);
    for (int v = 0; v < 5; v++) cr_assert_str_eq(cfg.vars[v].name, names[v]);
    cr_assert_eq(cfg.vars[0].cardinality, 2, "inferred: blue, red");
    cr_assert_eq(cfg.vars[3].cardinality, 7, "given");
    cr_assert(cfg.T_enc == 2 && cfg.T_dec == 1 && cfg.hidden == 8 && cfg.n_quantiles == 3);
    cr_assert_str_eq(cfg.preset, "csv");
    cr_assert_eq(data_n_series(ds), 2);
    cr_assert_eq(data_season(ds), 1);
    /* series 0 is "a, inc" (t = 1..8), series 1 is 'b "q"' (t = 5..12, sorted as numbers) */
    for (int s = 0; s < 2; s++) {
        cr_assert_eq(data_series_len(ds, s), 8);
        cr_assert_eq(data_train_len(ds, s), 5);
        cr_assert_eq(data_value(ds, 0, s, 0), s == 0 ? 1.0f : 0.0f, "red 1, blue 0");
        for (int64_t j = 0; j < 8; j++) {
            double t = s == 0 ? j + 1 : j + 5;
            cr_assert_float_eq(raw(ds, 1, s, j), s == 0 ? t : 100 + t, 1e-4, "y s%d j%lld", s,
                               (long long)j);
            cr_assert_float_eq(raw(ds, 2, s, j), s == 0 ? 0.5 * t : -t, 1e-4);
            cr_assert_eq(data_value(ds, 3, s, j), (float)((int)t % 7));
            cr_assert_float_eq(raw(ds, 4, s, j), 10 * t, 1e-3);
        }
    }
    /* the target is scaled per series over its training steps: mean 3, sd √2 for t = 1..5 */
    struct data_scale sc = data_scaling(ds, 1, 0);
    cr_assert_float_eq(sc.mean, 3.0, 1e-9);
    cr_assert_float_eq(sc.std, sqrt(2.0), 1e-9);
    cr_assert_float_eq(data_scaling(ds, 1, 1).mean, 107.0, 1e-9);
    cr_assert_eq(data_n_windows(ds, DATA_VAL), 2);
    for (int i = 0; i < 2; i++) cr_assert_eq(data_window_at(ds, DATA_VAL, i).start, 5);
    data_free(ds);
}

Test(data, csv_example_is_train_ready)
{
    struct tft_config cfg;
    struct data_set *ds = csv_ok(&cfg, "example.csv", "example.json");
    cr_assert_str_eq(cfg.preset, "example");
    static const char *names[] = {"store_type", "size",  "sales",    "temperature",
                                  "dow",        "promo", "day_index"};
    cr_assert_eq(cfg.n_vars, 7);
    for (int v = 0; v < 7; v++) cr_assert_str_eq(cfg.vars[v].name, names[v]);
    cr_assert_eq(cfg.vars[0].cardinality, 3);
    cr_assert_eq(cfg.vars[5].cardinality, 2);
    cr_assert_eq(data_n_series(ds), 4);
    cr_assert_eq(data_season(ds), 7);
    cr_assert_eq(data_value(ds, 0, 2, 0), 1.0f,
                 "'S3, north' is medium: large 0, medium 1, small 2");
    cr_assert_float_eq(raw(ds, 1, 3, 0), 650.0, 1e-3, "the quoted 'S4 \"east\"' keeps its size");
    cr_assert_float_eq(raw(ds, 2, 0, 0), 12.75, 1e-4, "first sales of S1 (CRLF file)");
    for (int s = 0; s < 4; s++) cr_assert_eq(data_series_len(ds, s), 84);
    cr_assert_eq(data_n_windows(ds, DATA_VAL), 4 * 3);
    check_values(ds);
    struct data_cursor cur;
    data_cursor_init(&cur, 1);
    struct tft_batch b = {0};
    cr_assert_eq(data_batch(ds, DATA_TRAIN, cfg.batch, &cur, &b), LG_OK);
    check_batch(ds, &b, cfg.batch);
    struct tn_tensor *f = data_seasonal_naive(T, &cfg, &b, data_season(ds));
    cr_assert_not_null(f);
    cr_assert(isfinite(data_pinball(&cfg, f, b.y)));
    tn_release(f);
    tft_batch_fini(&b);
    data_free(ds);
}

Test(data, csv_from_memory_matches_the_file)
{
    struct tft_config c1, c2;
    struct data_set *a = csv_ok(&c1, "small.csv", "small.json"), *b = NULL;
    /* the same rows with CRLF endings, a byte-order mark, blank lines, no final newline */
    const char *csv =
        "\xEF\xBB\xBFid,t,y,kind,x,dow,k\r\n\r\n"
        "\"a, inc\",1,1,red,0.5,1,10\r\n\"a, inc\",2,2,red,1,2,20\r\n"
        "\"a, inc\",3,3,red,1.5,3,30\r\n\"a, inc\",4,4,red,2,4,40\r\n"
        "\"a, inc\",5,5,red,2.5,5,50\r\n\"a, inc\",6,6,red,3,6,60\r\n"
        "\"a, inc\",7,7,red,3.5,0,70\r\n\"a, inc\",8,8,red,4,1,80\r\n\r\n"
        "\"b \"\"q\"\"\",12,112,blue,-12,5,120\r\n\"b \"\"q\"\"\",11,111,blue,-11,4,110\r\n"
        "\"b \"\"q\"\"\",10,110,blue,-10,3,100\r\n\"b \"\"q\"\"\",9,109,blue,-9,2,90\r\n"
        "\"b \"\"q\"\"\",8,108,blue,-8,1,80\r\n\"b \"\"q\"\"\",7,107,blue,-7,0,70\r\n"
        "\"b \"\"q\"\"\",6,106,blue,-6,6,60\r\n\"b \"\"q\"\"\",5,105,blue,-5,5,50";
    size_t jn;
    char *json = lg_slurp(lg_test_datafile("csv", "small.json"), &jn);
    cr_assert_not_null(json);
    int rc = data_parse_csv(&b, &c2, T, csv, strlen(csv), "mem.csv", json, jn, "mem.json");
    cr_assert_eq(rc, LG_OK, "%s", lg_errmsg());
    cr_assert(!memcmp(&c1, &c2, sizeof c1));
    for (int v = 0; v < c1.n_vars; v++)
        for (int s = 0; s < 2; s++)
            for (int64_t t = 0; t < 8; t++)
                cr_assert_eq(data_value(a, v, s, t), data_value(b, v, s, t), "var %d s %d t %lld",
                             v, s, (long long)t);
    free(json);
    data_free(a);
    data_free(b);
}

/* Malformed inputs: the status, and the message names file, line and column. */
static const struct {
    const char *csv, *json, *want[3];
} bad[] = {
    {"bad/number.csv", "small.json", {"number.csv:4: column 'y' (3): 'abc' is not a number"}},
    {"bad/nan.csv", "small.json", {"nan.csv:3: column 'x' (5): 'nan' is not a finite"}},
    {"bad/inf.csv", "small.json", {"inf.csv:4: column 'k' (7): '-inf' is not a finite"}},
    {"bad/overflow.csv", "small.json", {"overflow.csv:4: column 'y' (3): '1e39' is not a finite"}},
    {"bad/empty_value.csv", "small.json", {"empty_value.csv:3: column 'x' (5): empty value"}},
    {"bad/missing_field.csv", "small.json", {"missing_field.csv:3: column 'k' (7) is missing"}},
    {"bad/extra_field.csv", "small.json", {"extra_field.csv:3: row has more fields", "7 columns"}},
    {"bad/empty.csv", "small.json", {"empty.csv:1: empty file"}},
    {"bad/header_only.csv", "small.json", {"header_only.csv:2: no data rows"}},
    {"bad/missing_column.csv", "small.json", {"missing_column.csv:1: no column 'x'", "small.json"}},
    {"bad/short_series.csv",
     "small.json",
     {"short_series.csv:5: column 'id' (1): series 'b' has 2 rows", "T_enc + T_dec = 3"}},
    {"bad/static_changes.csv",
     "small.json",
     {"static_changes.csv:4: column 'kind' (4): static value 'blue' differs from 'red' on line 2"}},
    {"bad/unterminated_quote.csv",
     "small.json",
     {"unterminated_quote.csv:3: column 'kind' (4): unterminated quoted field"}},
    {"bad/after_quote.csv", "small.json", {"after_quote.csv:3: column 'kind' (4): text after"}},
    {"bad/stray_quote.csv", "small.json", {"stray_quote.csv:3: column 'kind' (4): a quote inside"}},
    {"bad/duplicate_time.csv",
     "small.json",
     {"duplicate_time.csv:4: column 't' (2): time '1' of series 'a' repeats line 2"}},
    {"bad/cardinality.csv",
     "small.json",
     {"cardinality.csv:9: column 'dow' (6): '7' is distinct value number 8", "cardinality 7"}},
    {"bad/duplicate_header.csv",
     "small.json",
     {"duplicate_header.csv:1: column 'y' appears twice (columns 3 and 6)"}},
    {"small.csv", "bad/syntax.json", {"syntax.json:3:", "bad JSON"}},
    {"small.csv", "bad/type.json", {"type.json: key \"T_enc\" must be an integer, not a string"}},
    {"small.csv", "bad/unknown_key.json", {"unknown_key.json: unknown key \"statics\""}},
    {"small.csv",
     "bad/unknown_column.json",
     {"small.csv:1: no column 'region'", "unknown_column.json"}},
    {"small.csv", "bad/kind.json", {"kind.json: static[0]: \"kind\" must be", "\"integer\""}},
    {"small.csv",
     "bad/static_not_array.json",
     {"static_not_array.json: key \"static\" must be an array"}},
    {"small.csv",
     "bad/observed_categorical.json",
     {"observed_categorical.json: observed[0]: observed"}},
    {"small.csv", "bad/heads.json", {"heads.json: config: hidden 10", "n_head 4"}},
    {"small.csv", "bad/season.json", {"season.json: key \"season\" = 3 is outside 1..2"}},
    {"small.csv",
     "bad/cardinality_zero.json",
     {"cardinality_zero.json: static[0]: key \"cardinality\""}},
    {"small.csv", "bad/no_target.json", {"no_target.json: key \"target\" is missing"}},
    {"small.csv", "bad/not_object.json", {"not_object.json: the config must be a JSON object"}},
    {"small.csv", "bad/empty.json", {"empty.json:1:0: bad JSON"}},
};

Test(data, csv_malformed_inputs_name_file_line_and_column)
{
    for (size_t i = 0; i < LG_ARRAY_LEN(bad); i++) {
        struct tft_config cfg;
        memset(&cfg, 0x5a, sizeof cfg);
        struct data_set *ds = (struct data_set *)&cfg; /* untouched on failure */
        int rc = load_csv(&ds, &cfg, bad[i].csv, bad[i].json);
        cr_assert_eq(rc, LG_EFORMAT, "%s + %s: status %s (%s)", bad[i].csv, bad[i].json,
                     lg_status_name(rc), lg_errmsg());
        cr_assert_eq(ds, (struct data_set *)&cfg);
        cr_assert_eq(((unsigned char *)&cfg)[0], 0x5a);
        for (int k = 0; k < 3 && bad[i].want[k]; k++)
            cr_assert(strstr(lg_errmsg(), bad[i].want[k]), "%s + %s: message\n  %s\nlacks\n  %s",
                      bad[i].csv, bad[i].json, lg_errmsg(), bad[i].want[k]);
        struct trk_totals tot;
        trk_totals(T, TRK_HOST, &tot);
        cr_assert_eq(tot.live_bytes, 0, "%s + %s leaks", bad[i].csv, bad[i].json);
    }
}

Test(data, csv_missing_file_is_an_io_error)
{
    struct tft_config cfg;
    struct data_set *ds = NULL;
    int rc = load_csv(&ds, &cfg, "no_such.csv", "small.json");
    cr_assert_eq(rc, LG_EIO);
    cr_assert(strstr(lg_errmsg(), "no_such.csv: cannot open"), "%s", lg_errmsg());
}

/* The fuzzer's seeds and the inputs it once crashed on (tests/data/csv/fuzz/): each is parsed
 * as the fuzz target does ("JSON, NUL, CSV", or CSV alone with small.json's config) and must
 * load or fail cleanly. */
Test(data, fuzz_regressions_fail_cleanly)
{
    char dir[512];
    csv_path(dir, sizeof dir, "fuzz");
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    struct dirent *e;
    int n = 0;
    char jp[512], fixed[2048];
    FILE *jf = fopen(csv_path(jp, sizeof jp, "small.json"), "rb");
    cr_assert_not_null(jf);
    size_t fixed_len = fread(fixed, 1, sizeof fixed, jf);
    fclose(jf);
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        FILE *f = fopen(p, "rb");
        cr_assert_not_null(f);
        static char buf[1 << 16];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        const char *nul = memchr(buf, '\0', len), *json = fixed, *csv = buf;
        size_t jl = fixed_len, cl = len;
        if (nul) {
            json = buf, jl = (size_t)(nul - buf);
            csv = nul + 1, cl = len - jl - 1;
        }
        struct data_set *ds = NULL;
        struct tft_config cfg;
        int rc = data_parse_csv(&ds, &cfg, T, csv, cl, "fuzz.csv", json, jl, "fuzz.json");
        cr_assert(rc == LG_OK || rc == LG_EFORMAT, "%s: %s", e->d_name, lg_errmsg());
        if (rc == LG_OK) {
            struct data_cursor cur;
            data_cursor_init(&cur, 1);
            struct tft_batch b = {0};
            cr_assert_eq(data_batch(ds, DATA_TRAIN, 2, &cur, &b), LG_OK);
            tft_batch_fini(&b);
        }
        data_free(ds);
        n++;
    }
    closedir(d);
    cr_assert_gt(n, 0, "no regression inputs in %s", dir);
}
