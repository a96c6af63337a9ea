/* test_verdict.c — the verdict engine: Theil–Sen against hand-computed values and its interval's
 * coverage, the per-channel rules (pass, leak, saturating, inconclusive), exact channels, the
 * overall exit codes; and the flag parsers the verdict depends on. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "lg_test.h"
#include "verdict.h"

TestSuite(verdict, .init = lg_test_setup, .fini = lg_test_teardown);

Test(verdict, theil_sen_matches_hand_computed_values)
{
    /* pairwise slopes of (0,1) (1,3) (2,2) (3,6): 2, 0.5, 5/3, -1, 1.5, 4 → median (1.5+5/3)/2 */
    double y[] = {1, 3, 2, 6};
    struct rpt_trend t;
    rpt_theil_sen(y, 4, 0.95, &t);
    cr_assert_float_eq(t.slope, (1.5 + 5.0 / 3.0) / 2, 1e-12);
    /* robust: one wild outlier does not move the slope of a straight line */
    double z[11];
    for (int i = 0; i < 11; i++) z[i] = 100.0 + 7.0 * i;
    z[5] = 1e9;
    rpt_theil_sen(z, 11, 0.95, &t);
    cr_assert_float_eq(t.slope, 7.0, 1e-9);
    cr_assert_float_eq(t.intercept, 100.0, 1e-9);
    cr_assert(t.lo <= 7.0 && t.hi >= 7.0);
    cr_assert_float_eq(rpt_median((double[]){5, 1, 3}, 3), 3.0, 0);
    cr_assert_float_eq(rpt_median((double[]){4, 1, 3, 2}, 4), 2.5, 0);
}

/* xorshift noise in [-1, 1) */
static double noise(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

Test(verdict, interval_covers_the_true_slope_about_95_percent)
{
    uint64_t s = 88172645463325252ull;
    int covered = 0, trials = 400;
    double y[30];
    for (int k = 0; k < trials; k++) {
        for (int i = 0; i < 30; i++) y[i] = 3.0 * i + 20.0 * noise(&s);
        struct rpt_trend t;
        rpt_theil_sen(y, 30, 0.95, &t);
        covered += t.lo <= 3.0 && 3.0 <= t.hi;
    }
    cr_assert(covered >= trials * 90 / 100 && covered <= trials * 99 / 100, "covered %d of %d", covered, trials);
}

static struct rpt_budget budget(void)
{
    return (struct rpt_budget){.band = 1000, .slope = 100, .floor = 400};
}

Test(verdict, noise_within_budget_passes)
{
    uint64_t s = 1;
    double y[40];
    for (int i = 0; i < 40; i++) y[i] = 300 * noise(&s);
    struct rpt_budget b = budget();
    struct rpt_channel_verdict v;
    rpt_judge_statistical(RPT_CH_RSS, y, 40, &b, &v);
    cr_assert_eq(v.status, RPT_PASS, "%s", v.why);
}

Test(verdict, steady_growth_is_a_leak_with_the_figures_in_the_why)
{
    uint64_t s = 2;
    double y[30];
    for (int i = 0; i < 30; i++) y[i] = 500.0 * i + 200 * noise(&s);
    struct rpt_budget b = budget();
    struct rpt_channel_verdict v;
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, y, 30, &b, &v);
    cr_assert_eq(v.status, RPT_LEAK, "%s", v.why);
    cr_assert(fabs(v.slope - 500) < 50, "slope %g", v.slope);
    cr_assert_gt(v.slope_lo, 100);
    cr_assert(strstr(v.why, "> budget") && strstr(v.why, "floor"), "%s", v.why);
}

Test(verdict, growth_that_stops_is_saturating)
{
    double y[40];
    for (int i = 0; i < 40; i++) y[i] = 20000.0 * (1 - exp(-i / 4.0)); /* flat after ~20 sessions */
    struct rpt_budget b = budget();
    struct rpt_channel_verdict v;
    rpt_judge_statistical(RPT_CH_RSS, y, 40, &b, &v);
    cr_assert_eq(v.status, RPT_SATURATING, "%s", v.why);
}

Test(verdict, a_one_time_jump_that_stays_is_inconclusive)
{
    double y[30];
    for (int i = 0; i < 30; i++) y[i] = i < 2 ? 0 : 5000; /* jumped once, then flat */
    struct rpt_budget b = budget();
    struct rpt_channel_verdict v;
    rpt_judge_statistical(RPT_CH_RSS, y, 30, &b, &v);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "%s", v.why);
}

Test(verdict, a_slope_that_is_not_significant_is_inconclusive)
{
    uint64_t s = 3;
    double y[8];
    for (int i = 0; i < 8; i++) y[i] = 150.0 * i + 3000 * noise(&s);
    struct rpt_budget b = {.band = 1e9, .slope = 100, .floor = 0};
    struct rpt_channel_verdict v;
    rpt_judge_statistical(RPT_CH_RSS, y, 8, &b, &v);
    cr_assert(v.status == RPT_INCONCLUSIVE || v.status == RPT_PASS, "%s", v.why);
    cr_assert_neq(v.status, RPT_LEAK, "%s", v.why);
}

Test(verdict, too_few_sessions_never_pass)
{
    struct rpt_budget b = budget();
    struct rpt_channel_verdict v;
    cr_assert_eq(rpt_min_sessions(&b), RPT_MIN_TREND, "no noise: the smallest trend");
    rpt_judge_statistical(RPT_CH_RSS, (double[]){0, 5000}, 2, &b, &v);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "%s", v.why);
    rpt_judge_statistical(RPT_CH_RSS, (double[]){0, 10}, 2, &b, &v);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "flat, but two sessions are no evidence: %s", v.why);
    cr_assert(strstr(v.why, "fewer than the 4 needed"), "%s", v.why);
    rpt_judge_statistical(RPT_CH_RSS, (double[]){0}, 0, &b, &v);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "%s", v.why);
    cr_assert(strstr(v.why, "no measured session"), "%s", v.why);
    rpt_judge_statistical(RPT_CH_RSS, (double[]){0, 0, 0, 0}, 4, &b, &v);
    cr_assert_eq(v.status, RPT_PASS, "%s", v.why);
}

Test(verdict, gross_growth_is_a_leak_over_two_sessions)
{
    struct rpt_budget b = budget(); /* band 1000 */
    struct rpt_channel_verdict v;
    /* the 815 MiB leak over 2 sessions: every session grows far beyond 64 bands */
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, (double[]){821e6, 1642e6}, 2, &b, &v);
    cr_assert_eq(v.status, RPT_LEAK, "%s", v.why);
    cr_assert(strstr(v.why, "gross growth") && strstr(v.why, "64x the band"), "%s", v.why);
    /* exactly 64 bands each: still gross */
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, (double[]){64000, 128000}, 2, &b, &v);
    cr_assert_eq(v.status, RPT_LEAK, "%s", v.why);
    /* one session is never enough, however large: a one-time cost looks the same */
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, (double[]){821e6}, 1, &b, &v);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "%s", v.why);
    /* one large step then nothing: not every session grew */
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, (double[]){821e6, 821e6}, 2, &b, &v);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "%s", v.why);
    /* just below the factor */
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, (double[]){63999, 127998}, 2, &b, &v);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "%s", v.why);
}

Test(verdict, exact_channels_have_zero_tolerance_and_the_overall_exit_codes)
{
    struct rpt_verdict v = {0};
    rpt_judge_exact(RPT_CH_TAGGED_HOST, (int64_t[]){0, 0, 0, 0}, 4, "", &v.channels[0]);
    cr_assert_eq(v.channels[0].status, RPT_PASS);
    rpt_judge_exact(RPT_CH_REFS, (int64_t[]){0, 0, 1, 1}, 4, "varmap x retained at tr_new", &v.channels[1]);
    cr_assert_eq(v.channels[1].status, RPT_LEAK);
    cr_assert(strstr(v.channels[1].why, "first in session 2") && strstr(v.channels[1].why, "tr_new"),
              "%s", v.channels[1].why);
    v.n_channels = 2;
    v.sessions_measured = 4;
    v.required = RPT_BIT(RPT_CH_TAGGED_HOST) | RPT_BIT(RPT_CH_REFS);
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.exit_code, 1);
    cr_assert_eq(v.status, RPT_LEAK);
    v.channels[1].status = RPT_INCONCLUSIVE;
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.exit_code, 3);
    v.channels[1].status = RPT_SATURATING;
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.exit_code, 0);
}

Test(verdict, size_and_inject_parsers)
{
    size_t n;
    cr_assert_eq(hx_parse_size("256KiB", &n), LG_OK);
    cr_assert_eq(n, 262144);
    cr_assert_eq(hx_parse_size("1.5MiB", &n), LG_OK);
    cr_assert_eq(n, 1572864);
    cr_assert_eq(hx_parse_size("4096", &n), LG_OK);
    cr_assert_eq(n, 4096);
    cr_assert_eq(hx_parse_size("10MB", &n), LG_OK);
    cr_assert_eq(n, 10000000);
    cr_assert_eq(hx_parse_size("-1", &n), LG_EINVAL);
    cr_assert_eq(hx_parse_size("12 furlongs", &n), LG_EINVAL);
    struct hx_inject in;
    cr_assert_eq(hx_inject_parse("raw-malloc:256KiB@40", &in), LG_OK);
    cr_assert_str_eq(in.name, "raw-malloc");
    cr_assert_eq(in.bytes, 262144);
    cr_assert_eq(in.first, 40);
    cr_assert_eq(hx_inject_parse("varmap-dup-ref", &in), LG_OK);
    cr_assert_eq(in.first, -1);
    cr_assert_eq(hx_inject_parse("varmap-dup-ref@x", &in), LG_EINVAL);
    cr_assert_eq(hx_inject_parse("leak-everything", &in), LG_EINVAL);
    cr_assert(strstr(lg_errmsg(), "known: varmap-dup-ref"), "%s", lg_errmsg());
}

Test(verdict, faults_start_at_the_first_measured_session_by_default)
{
    struct hx_options o;
    hx_options_defaults(&o); /* fp32,int8 with 1 warm-up each: session 2 is the first measured */
    cr_assert_eq(hx_inject_parse("adam-state", &o.inject[0]), LG_OK);
    cr_assert_eq(hx_inject_parse("raw-mmap:1MiB@5", &o.inject[1]), LG_OK);
    o.n_inject = 2;
    struct tr_faults f;
    hx_inject_faults(&o, 1, &f);
    cr_assert(!f.adam_state && !f.raw_mmap);
    hx_inject_faults(&o, 2, &f);
    cr_assert(f.adam_state && !f.raw_mmap);
    hx_inject_faults(&o, 5, &f);
    cr_assert(f.adam_state && f.raw_mmap == 1 << 20);
}
