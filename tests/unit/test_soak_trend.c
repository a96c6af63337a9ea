/* test_soak_trend.c — the soak's internals on synthetic series: a leak starting late caught by
 * the short window within ten sessions, the sliding window against a direct fit of the same
 * sessions, leaks that come in steps every K sessions (caught) against one-time steps and
 * noise on every statistical channel (no alarm), a ramp below the budget (not hidden), exact
 * channels with attribution, the plan's interleaving and sharding, the option parsers, and the
 * metrics file. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lg_test.h"
#include "soak_impl.h"
#include "verdict.h"

TestSuite(soak_trend, .init = lg_test_setup, .fini = lg_test_teardown);

#define KiB 1024.0
#define MiB (1024.0 * 1024.0)

/* A measured session whose statistical channels all read `delta` (tagged channels 0). */
static struct rpt_session session(int index, bool warmup, double delta)
{
    struct rpt_session s;
    memset(&s, 0, sizeof s);
    s.index = index;
    s.warmup = warmup;
    lg_strlcpy(s.mode, "fp32", sizeof s.mode);
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        s.absolute[c] = 1000000;
        s.delta[c] = warmup ? RPT_NONE : rpt_channel_exact(c) ? 0 : (int64_t)delta;
    }
    s.delta[RPT_CH_DEV_DRIVER] = s.delta[RPT_CH_DEV_PROCESS] = RPT_NONE;
    s.absolute[RPT_CH_DEV_DRIVER] = s.absolute[RPT_CH_DEV_PROCESS] = RPT_NONE;
    return s;
}

struct feed {
    struct rpt_soak_trend t;
    struct rpt_budget b[RPT_NCHANNELS];
    int first_fired[RPT_NCHANNELS];
};

static void feed_init(struct feed *f, int window)
{
    hx_default_budgets(f->b, TN_CPU);
    cr_assert_eq(rpt_soak_trend_init(&f->t, window, f->b), LG_OK);
    for (int c = 0; c < RPT_NCHANNELS; c++) f->first_fired[c] = -1;
    struct rpt_session w = session(0, true, 0);
    rpt_soak_trend_add(&f->t, &w);
}

/* Feeds measured sessions 1..n with deltas y(i) for session index i. */
static void feed(struct feed *f, int n, double (*y)(int))
{
    for (int i = 1; i <= n; i++) {
        struct rpt_session s = session(i, false, y(i));
        unsigned fired = rpt_soak_trend_add(&f->t, &s);
        for (int c = 0; c < RPT_NCHANNELS; c++)
            if ((fired & (1u << c)) && f->first_fired[c] < 0) f->first_fired[c] = i;
    }
}

/* The soak's verdict with the default required channels. */
static void verdict_of(struct feed *f, struct rpt_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->required = rpt_default_required(false);
    rpt_soak_trend_verdict(&f->t, v);
}

/* A soak with a 50-session window fed measured sessions 1..n of deltas y(i), and its verdict
 * (v: NULL for none); finished with rpt_soak_trend_fini(&f->t). */
static void soak(struct feed *f, int n, double (*y)(int), struct rpt_verdict *v)
{
    feed_init(f, 50);
    feed(f, n, y);
    if (v) verdict_of(f, v);
}

static double zero(int i) { return (void)i, 0; }
static double leak_from_40(int i) { return i >= 40 ? (i - 39) * 256 * KiB : 0; }
static double slow_from_200(int i) { return i >= 200 ? (i - 199) * 32 * KiB : 0; }
/* one-time steps above je_resident's default band (4 MiB) */
static double step_at_70(int i) { return i >= 70 ? 4 * MiB + 8192 : 0; }
static double step_at_88(int i) { return i >= 88 ? 6 * MiB : 0; }
static double ramp_5k(int i) { return i * 5 * KiB; }
static double noisy(int i) { return ((i * 7919) % 13 - 6) * 8 * KiB; } /* ±48 KiB, no drift */

Test(soak_trend, clean_sessions_raise_no_alarm_and_pass)
{
    struct feed f;
    struct rpt_verdict v;
    soak(&f, 300, zero, &v);
    cr_expect_eq(v.status, RPT_PASS, "%s", v.summary);
    cr_expect_eq(v.sessions_measured, 300);
    for (int c = 0; c < RPT_NCHANNELS; c++) cr_expect_eq(f.first_fired[c], -1);
    cr_expect_eq(v.channels[RPT_CH_DEV_DRIVER].status, RPT_UNAVAILABLE);
    rpt_soak_trend_fini(&f.t);
}

Test(soak_trend, noise_without_drift_raises_no_alarm)
{
    struct feed f;
    struct rpt_verdict v;
    soak(&f, 1000, noisy, &v);
    cr_expect_eq(f.first_fired[RPT_CH_JE_RESIDENT], -1, "%s", v.channels[RPT_CH_JE_RESIDENT].why);
    cr_expect_eq(f.first_fired[RPT_CH_RSS], -1, "%s", v.channels[RPT_CH_RSS].why);
    rpt_soak_trend_fini(&f.t);
}

Test(soak_trend, a_leak_from_session_40_fires_within_four_leaking_sessions)
{
    struct feed f;
    struct rpt_verdict v;
    soak(&f, 100, leak_from_40, &v);
    /* je_allocated: the last 10 sessions, relative to the one before them, are all leak by 49 */
    int at = f.t.ch[RPT_CH_JE_ALLOCATED].trend_at;
    /* rule 4: LEAK once the step it makes is held RPT_KEPT_LEAK sessions (40, 41, 42, 43) */
    cr_expect(at >= 41 && at <= 40 + RPT_KEPT_LEAK - 1, "256 KiB/session from 40: alarm at %d", at);
    cr_expect_eq(f.first_fired[RPT_CH_JE_ALLOCATED], at);
    const struct rpt_channel_verdict *cv = &v.channels[RPT_CH_JE_ALLOCATED];
    cr_expect_eq(cv->status, RPT_LEAK);
    cr_expect_float_eq(cv->slope, 256 * KiB, 1, "the final window's slope: %f", cv->slope);
    cr_expect(strstr(cv->why, "alarm at session") != NULL, "%s", cv->why);
    cr_expect_eq(v.exit_code, 1);
    rpt_soak_trend_fini(&f.t);
}

Test(soak_trend, a_slow_leak_starting_late_is_caught_within_a_dozen_sessions)
{
    struct feed f;
    soak(&f, 300, slow_from_200, NULL);
    int at = f.t.ch[RPT_CH_JE_ALLOCATED].trend_at;
    cr_expect(at >= 200 && at <= 212, "32 KiB/session from 200: alarm at %d", at);
    rpt_soak_trend_fini(&f.t);
}

/* 1 MiB every `every` sessions from session 5, never freed: a checkpoint kept every Nth session */
static int step_every;
static double step_size;
static double steps_of(int i)
{
    return i >= 5 ? (double)((i - 5) / step_every + 1) * step_size : 0;
}

Test(soak_trend, leaks_that_come_in_steps_are_caught_over_200_sessions)
{
    static const struct {
        int every;
        double size;
    } cases[] = {{40, 1 * MiB}, {25, 512 * KiB}, {60, 1 * MiB}, {100, 1 * MiB}};
    for (size_t k = 0; k < LG_ARRAY_LEN(cases); k++) {
        step_every = cases[k].every;
        step_size = cases[k].size;
        int n = cases[k].every >= 60 ? 3 * cases[k].every + 10 : 200; /* three steps at least */
        struct feed f;
        struct rpt_verdict v;
        soak(&f, n, steps_of, &v);
        const struct rpt_channel_verdict *cv = &v.channels[RPT_CH_JE_ALLOCATED];
        cr_expect_eq(cv->status, RPT_LEAK, "every %d: %s", cases[k].every, cv->why);
        cr_expect(f.t.ch[RPT_CH_JE_ALLOCATED].steps_at > 0 ||
                      f.t.ch[RPT_CH_JE_ALLOCATED].trend_at > 0,
                  "every %d: an alarm fired", cases[k].every);
        cr_expect_eq(v.exit_code, 1, "every %d: %s", cases[k].every, v.summary);
        rpt_soak_trend_fini(&f.t);
    }
}

/* i.i.d. noise: a random amount in [0, 48 KiB] held for one session, no drift */
static double uniform_48k(int i)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    return (double)(x >> 11) / 9007199254740992.0 * 48 * KiB;
}

Test(soak_trend, noise_raises_no_alarm_on_any_statistical_channel)
{
    struct feed f;
    struct rpt_verdict v;
    soak(&f, 200, uniform_48k, &v);
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        if (rpt_channel_exact(c) || c == RPT_CH_DEV_DRIVER || c == RPT_CH_DEV_PROCESS) continue;
        cr_expect_eq(f.first_fired[c], -1, "%s alarmed on noise: %s", rpt_channel_name(c),
                     v.channels[c].why);
        cr_expect_neq(v.channels[c].status, RPT_LEAK, "%s: %s", rpt_channel_name(c),
                      v.channels[c].why);
    }
    cr_expect_eq(v.status, RPT_PASS, "%s", v.summary);
    rpt_soak_trend_fini(&f.t);
}

/* A step from session `at` on alarms once held RPT_KEPT_LEAK sessions (at .. at + 3), and the
 * soak's verdict is LEAK, never "saturated" over the final window's own sessions. */
static void held_step_alarms(double (*y)(int), int at, const char *says)
{
    struct feed f;
    struct rpt_verdict v;
    soak(&f, 100, y, &v);
    cr_expect_eq(f.first_fired[RPT_CH_JE_RESIDENT], at + RPT_KEPT_LEAK - 1, "held four sessions");
    const struct rpt_channel_verdict *cv = &v.channels[RPT_CH_JE_RESIDENT];
    cr_expect_eq(cv->status, RPT_LEAK, "%s", cv->why);
    cr_expect(strstr(cv->why, says), "%s", cv->why);
    cr_expect_eq(v.exit_code, 1, "%s", v.summary);
    rpt_soak_trend_fini(&f.t);
}

Test(soak_trend, a_step_held_four_sessions_alarms_as_a_retained_block)
{
    held_step_alarms(step_at_70, 70, "retained block");
}

Test(soak_trend, a_step_late_in_the_window_is_never_called_settled)
{
    held_step_alarms(step_at_88, 88, "alarm at session 91");
}

Test(soak_trend, a_steady_ramp_below_the_budget_is_a_leak)
{
    struct feed f;
    struct rpt_verdict v;
    soak(&f, 200, ramp_5k, &v); /* 5 KiB/session < 8 KiB budget: rises every session */
    const struct rpt_channel_verdict *cv = &v.channels[RPT_CH_JE_ALLOCATED];
    cr_expect_geq(f.first_fired[RPT_CH_JE_ALLOCATED], 0, "a steady rise alarms");
    cr_expect_leq(f.first_fired[RPT_CH_JE_ALLOCATED], RPT_SOAK_SHORT, "within the short window");
    cr_expect_eq(cv->status, RPT_LEAK, "%s", cv->why);
    cr_expect(strstr(cv->why, "rule 5"), "%s", cv->why);
    rpt_soak_trend_fini(&f.t);
}

Test(soak_trend, the_window_is_the_last_w_sessions)
{
    struct feed f;
    feed_init(&f, 20);
    double y[137];
    for (int i = 1; i <= 137; i++) {
        y[i - 1] = (double)((i * 48271) % 97) * KiB;
        struct rpt_session s = session(i, false, y[i - 1]);
        rpt_soak_trend_add(&f.t, &s);
    }
    struct rpt_verdict v;
    verdict_of(&f, &v);
    struct rpt_trend direct;
    rpt_theil_sen(y + 137 - 20, 20, 0.95, &direct);
    cr_expect_float_eq(v.channels[RPT_CH_RSS].slope, direct.slope, 1e-6, "%f vs %f",
                       v.channels[RPT_CH_RSS].slope, direct.slope);
    cr_expect_float_eq(v.channels[RPT_CH_RSS].slope_lo, direct.lo, 1e-6);
    rpt_soak_trend_fini(&f.t);
}

Test(soak_trend, exact_channels_fail_at_zero_tolerance_with_attribution)
{
    struct feed f;
    soak(&f, 10, zero, NULL);
    struct rpt_session s = session(11, false, 0);
    struct lg_leak_group g = {
        .tag = "adam.m/enc.fc1.weight", .space = "host", .bytes = 4096, .count = 1};
    struct lg_class_bytes cl = {.cls = "adam.m", .bytes = 4096};
    s.leaked_host_bytes = 4096;
    s.n_groups = 1;
    s.groups = &g;
    s.n_classes = 1;
    s.classes = &cl;
    unsigned fired = rpt_soak_trend_add(&f.t, &s);
    cr_expect(fired & (1u << RPT_CH_TAGGED_HOST));
    struct rpt_verdict v;
    verdict_of(&f, &v);
    const struct rpt_channel_verdict *cv = &v.channels[RPT_CH_TAGGED_HOST];
    cr_expect_eq(cv->status, RPT_LEAK);
    cr_expect(strstr(cv->why, "first in session 11") && strstr(cv->why, "adam.m/enc.fc1.weight"),
              "%s", cv->why);
    cr_expect(rpt_soak_alarmed(&f.t, RPT_CH_TAGGED_HOST));
    rpt_soak_trend_fini(&f.t);
}

/* ---- the plan -------------------------------------------------------------------------------- */

static struct hx_soak_plan plan_of(int sessions, int shard, int n_shards)
{
    struct hx_soak_plan p = {.n_presets = 2,
                             .modes = HX_MODE_FP32 | HX_MODE_INT8,
                             .n_modes = 2,
                             .warmup = 1,
                             .sessions = sessions,
                             .shard = shard,
                             .n_shards = n_shards};
    lg_strlcpy(p.presets[0], "tiny", sizeof p.presets[0]);
    lg_strlcpy(p.presets[1], "electricity", sizeof p.presets[1]);
    return p;
}

Test(soak_trend, the_plan_interleaves_presets_and_modes_after_warm_up)
{
    struct hx_soak_plan p = plan_of(8, 0, 1);
    cr_expect_eq(hx_soak_n_warmup(&p), 4);
    static const int want_preset[] = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1};
    static const int want_mode[] = {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2};
    for (int j = 0; j < 12; j++) {
        int index, preset, mode;
        bool warm;
        cr_assert(hx_soak_session_at(&p, j, &index, &preset, &mode, &warm));
        cr_expect_eq(index, j);
        cr_expect_eq(warm, j < 4);
        cr_expect_eq(preset, want_preset[j], "session %d", j);
        cr_expect_eq(mode, want_mode[j], "session %d", j);
        int p2, m2;
        hx_soak_combo_of(&p, index, &p2, &m2);
        cr_expect(p2 == preset && m2 == mode);
    }
    int index, preset, mode;
    bool warm;
    cr_expect_not(hx_soak_session_at(&p, 12, &index, &preset, &mode, &warm),
                  "8 items after 4 warm-ups");
}

Test(soak_trend, shards_split_the_plan_into_disjoint_parts_whose_union_is_the_plan)
{
    int seen[100] = {0};
    for (int i = 0; i < 3; i++) {
        struct hx_soak_plan p = plan_of(31, i, 3);
        int count = 0, index, preset, mode;
        bool warm;
        for (int j = 0; hx_soak_session_at(&p, j, &index, &preset, &mode, &warm); j++) {
            if (warm) continue;
            cr_expect_eq((index - 4) % 3, i, "shard %d runs items with p %% 3 == %d", i, i);
            seen[index]++;
            count++;
        }
        cr_expect_eq(count, hx_soak_shard_items(&p));
    }
    for (int index = 4; index < 4 + 31; index++)
        cr_expect_eq(seen[index], 1, "item %d run once", index - 4);
    struct hx_soak_plan unbounded = plan_of(0, 1, 3);
    cr_expect_eq(hx_soak_shard_items(&unbounded), -1);
}

Test(soak_trend, option_parsers)
{
    double s;
    cr_expect(hx_parse_duration("90", &s) == LG_OK && s == 90);
    cr_expect(hx_parse_duration("30m", &s) == LG_OK && s == 1800);
    cr_expect(hx_parse_duration("8h", &s) == LG_OK && s == 8 * 3600);
    cr_expect(hx_parse_duration("1h30m", &s) == LG_OK && s == 5400);
    cr_expect(hx_parse_duration("1.5h", &s) == LG_OK && s == 5400);
    cr_expect_eq(hx_parse_duration("1h30", &s), LG_EINVAL, "a bare number only alone");
    cr_expect_eq(hx_parse_duration("8 hours", &s), LG_EINVAL);
    cr_expect_eq(hx_parse_duration("31d", &s), LG_EINVAL);
    int i, n;
    cr_expect(hx_parse_shard("2/4", &i, &n) == LG_OK && i == 2 && n == 4);
    cr_expect_eq(hx_parse_shard("4/4", &i, &n), LG_EINVAL);
    cr_expect_eq(hx_parse_shard("-1/4", &i, &n), LG_EINVAL);
    cr_expect_eq(hx_parse_shard("1/", &i, &n), LG_EINVAL);
    struct hx_soak_plan p = {0};
    cr_expect_eq(hx_parse_presets("tiny,electricity", &p), LG_OK);
    cr_expect_eq(p.n_presets, 2);
    char buf[64];
    hx_soak_presets_string(&p, buf, sizeof buf);
    cr_expect_str_eq(buf, "tiny,electricity");
    cr_expect_eq(hx_parse_presets("tiny,,", &p), LG_OK, "empty names are skipped");
    cr_expect_eq(hx_parse_presets(",", &p), LG_EINVAL);
}

Test(soak_trend, metrics_file_is_renamed_into_place)
{
    struct feed f;
    soak(&f, 5, zero, NULL);
    struct hx_soak_plan p = plan_of(10, 1, 3);
    struct hx_soak_gauges g;
    hx_soak_gauges_init(&g, &p, "1/3");
    struct rpt_session s = session(9, false, 4096);
    hx_soak_gauges_session(&g, &s, 1, HX_MODE_INT8);
    char path[600], tmp[620];
    snprintf(path, sizeof path, "%s/m.prom", lg_test_tmpdir());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_assert_eq(hx_soak_metrics_write(path, &g, &f.t), LG_OK, "%s", lg_errmsg());
    cr_expect_neq(access(tmp, F_OK), 0, "the temporary file was renamed");
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp);
    char line[512];
    bool delta = false, sessions = false;
    while (fgets(line, sizeof line, fp)) {
        delta |= !strcmp(
            line,
            "leakgate_session_delta_bytes{channel=\"rss\",preset=\"electricity\",mode=\"int8\","
            "shard=\"1/3\"} 4096\n");
        sessions |= !strcmp(line, "leakgate_sessions_total{shard=\"1/3\"} 1\n");
    }
    fclose(fp);
    cr_expect(delta && sessions, "labelled samples are written");
    snprintf(path, sizeof path, "%s/no/such/dir/m.prom", lg_test_tmpdir());
    cr_expect_eq(hx_soak_metrics_write(path, &g, &f.t), LG_EIO);
    cr_expect(strstr(lg_errmsg(), "no/such/dir") != NULL, "%s", lg_errmsg());
    rpt_soak_trend_fini(&f.t);
}
