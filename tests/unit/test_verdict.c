/* test_verdict.c — the verdict engine: Theil–Sen against hand-computed values and its interval's
 * coverage, the per-channel rules (pass, leak, saturating, inconclusive), exact channels, the
 * overall exit codes; and the flag parsers the verdict depends on. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "lg_test.h"
#include "budget_file.h"
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
static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double noise(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

/* Past 256 sessions the order statistics of the pairwise slopes are selected in O(n) memory,
 * not sorted: the same slope and interval as sorting every pair (to a part in 1e9). */
Test(verdict, a_long_series_selects_the_same_slope_and_interval_as_sorting)
{
    const int n = 2600;
    double *y = malloc(n * sizeof *y);
    uint64_t seed = 7;
    for (int i = 0; i < n; i++) y[i] = 37.0 * i + 5000 * noise(&seed) + (i % 97 == 0 ? 1e5 : 0);
    size_t np = (size_t)n * (n - 1) / 2, k = 0;
    double *s = malloc(np * sizeof *s);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) s[k++] = (y[j] - y[i]) / (j - i);
    qsort(s, np, sizeof *s, cmp_d);
    double var = (double)n * (n - 1) * (2.0 * n + 5) / 18.0, C = 1.959963985 * sqrt(var);
    size_t m1 = (size_t)floor((np - C) / 2), m2 = (size_t)ceil((np + C) / 2);
    struct rpt_trend t;
    rpt_theil_sen(y, n, 0.95, &t);
    double slope = np % 2 ? s[np / 2] : 0.5 * (s[np / 2 - 1] + s[np / 2]);
    cr_assert_float_eq(t.slope, slope, 1e-9 * fabs(slope), "%.12g vs %.12g", t.slope, slope);
    cr_assert_float_eq(t.lo, s[m1], 1e-9 * fabs(s[m1]), "%.12g vs %.12g", t.lo, s[m1]);
    cr_assert_float_eq(t.hi, s[m2 - 1], 1e-9 * fabs(s[m2 - 1]), "%.12g vs %.12g", t.hi, s[m2 - 1]);
    cr_assert_not(t.failed);
    free(s);
    free(y);
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
    cr_assert(covered >= trials * 90 / 100 && covered <= trials * 99 / 100, "covered %d of %d",
              covered, trials);
}

/* The budget most tests judge against, and one so wide in band and floor that only the slope
 * decides. */
static const struct rpt_budget usual = {.band = 1000, .slope = 100, .floor = 400},
                               slope_only = {.band = 1e9, .slope = 100, .floor = 0};

/* The statistical rules on series of session deltas: y(i, &noise state) is session i's. */
static double noisy(int i, uint64_t *s)
{
    (void)i;
    return 300 * noise(s);
}
static double steady_growth(int i, uint64_t *s) { return 500.0 * i + 200 * noise(s); }
static double growth_that_stops(int i, uint64_t *s) /* flat after ~20 sessions */
{
    (void)s;
    return 20000.0 * (1 - exp(-i / 4.0));
}
static double one_jump(int i, uint64_t *s) /* jumped once, then flat */
{
    (void)s;
    return i < 2 ? 0 : 5000;
}
static double weak_slope(int i, uint64_t *s) { return 150.0 * i + 3000 * noise(s); }

struct series_case {
    const char *name;
    double (*y)(int i, uint64_t *s);
    int n;
    uint64_t seed; /* of the noise */
    enum rpt_channel channel;
    const struct rpt_budget *budget;
    enum rpt_status status, or_status; /* the verdict it must get (or_status: also right) */
    /* more it must say (NULL: nothing) */
    void (*also)(const struct series_case *c, const struct rpt_channel_verdict *v);
};

static void with_the_figures_in_the_why(const struct series_case *c,
                                        const struct rpt_channel_verdict *v)
{
    cr_expect(fabs(v->slope - 500) < 50, "%s: slope %g", c->name, v->slope);
    cr_expect_gt(v->slope_lo, 100, "%s: slope_lo %g", c->name, v->slope_lo);
    cr_expect(strstr(v->why, "> budget") && strstr(v->why, "floor"), "%s: %s", c->name, v->why);
}

static void names_the_retained_block(const struct series_case *c,
                                     const struct rpt_channel_verdict *v)
{
    /* one_jump steps at index 2: the third measured session, held 27 sessions after it */
    cr_expect(strstr(v->why, "session #3") && strstr(v->why, "retained block") &&
                  strstr(v->why, "27 session(s) later"),
              "%s: %s", c->name, v->why);
    cr_expect(v->stayed, "%s: it stayed", c->name);
}

static void never_a_leak(const struct series_case *c, const struct rpt_channel_verdict *v)
{
    cr_expect_neq(v->status, RPT_LEAK, "%s: %s", c->name, v->why);
}

static const struct series_case series_cases[] = {
    {"noise within budget passes", noisy, 40, 1, RPT_CH_RSS, &usual, RPT_PASS, RPT_PASS, NULL},
    {"steady growth is a leak with the figures in the why", steady_growth, 30, 2,
     RPT_CH_JE_ALLOCATED, &usual, RPT_LEAK, RPT_LEAK, with_the_figures_in_the_why},
    {"growth that stops is saturating", growth_that_stops, 40, 0, RPT_CH_RSS, &usual,
     RPT_SATURATING, RPT_SATURATING, NULL},
    {"a one-time jump held to the end is a retained block", one_jump, 30, 0, RPT_CH_RSS, &usual,
     RPT_LEAK, RPT_LEAK, names_the_retained_block},
    {"a slope that is not significant is inconclusive (or passes)", weak_slope, 8, 3, RPT_CH_RSS,
     &slope_only, RPT_INCONCLUSIVE, RPT_PASS, never_a_leak},
};

Test(verdict, each_series_gets_its_verdict)
{
    for (size_t k = 0; k < LG_ARRAY_LEN(series_cases); k++) {
        const struct series_case *c = &series_cases[k];
        uint64_t s = c->seed;
        double y[40];
        cr_assert_leq(c->n, 40, "%s: at most 40 sessions", c->name);
        for (int i = 0; i < c->n; i++) y[i] = c->y(i, &s);
        struct rpt_channel_verdict v;
        rpt_judge_statistical(c->channel, y, c->n, c->budget, &v);
        cr_expect(v.status == c->status || v.status == c->or_status, "%s: %s", c->name, v.why);
        if (c->also) c->also(c, &v);
    }
}

Test(verdict, too_few_sessions_never_pass)
{
    struct rpt_budget b = usual;
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
    struct rpt_budget b = usual; /* band 1000 */
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
    rpt_judge_exact(RPT_CH_REFS, (int64_t[]){0, 0, 1, 1}, 4, "varmap x retained at tr_new",
                    &v.channels[1]);
    cr_assert_eq(v.channels[1].status, RPT_LEAK);
    cr_assert(strstr(v.channels[1].why, "first in session 2") &&
                  strstr(v.channels[1].why, "tr_new"),
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

/* ---- the evidence rules ------------------------------------------------------------------- */

/* A verdict of n channels, all pass, required as given. */
static struct rpt_verdict all_pass(unsigned required, int measured)
{
    struct rpt_verdict v = {0};
    v.required = required;
    v.sessions_measured = measured;
    v.n_channels = RPT_NCHANNELS;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        v.channels[c].channel = (enum rpt_channel)c;
        v.channels[c].status = RPT_PASS;
    }
    return v;
}

Test(verdict, a_pass_needs_every_required_channel_decided)
{
    unsigned req = rpt_default_required(false);
    struct rpt_verdict v = all_pass(req, 40);
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.status, RPT_PASS, "%s", v.summary);
    cr_assert(
        strstr(v.summary, "required: tagged_host, refs, je_allocated, je_active, je_resident, rss"),
        "%s", v.summary);
    /* a required channel unavailable: inconclusive, naming it */
    v = all_pass(req, 40);
    v.channels[RPT_CH_RSS].status = RPT_UNAVAILABLE;
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "%s", v.summary);
    cr_assert_eq(v.exit_code, 3);
    cr_assert(strstr(v.summary, "rss (unavailable)"), "%s", v.summary);
    /* an optional one unavailable: listed, and the run still passes */
    v = all_pass(req, 40);
    v.channels[RPT_CH_DEV_DRIVER].status = RPT_UNAVAILABLE;
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.status, RPT_PASS, "%s", v.summary);
    cr_assert(strstr(v.summary, "optional, not decided: dev_driver"), "%s", v.summary);
    /* an optional channel that leaks is still a leak */
    v = all_pass(RPT_BIT(RPT_CH_TAGGED_HOST), 40);
    v.channels[RPT_CH_RSS].status = RPT_LEAK;
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.status, RPT_LEAK, "%s", v.summary);
    /* no measured session: never a pass, even with every channel passing */
    v = all_pass(req, 0);
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "%s", v.summary);
    cr_assert(strstr(v.summary, "no measured session"), "%s", v.summary);
    /* a stopped run: inconclusive unless a leak was proven */
    v = all_pass(req, 18);
    v.sessions_planned = 40;
    v.partial = true;
    strcpy(v.stopped, "SIGTERM");
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.status, RPT_INCONCLUSIVE, "%s", v.summary);
    cr_assert(strstr(v.summary, "stopped (SIGTERM) after 18 of 40 measured session(s)"), "%s",
              v.summary);
    v.channels[RPT_CH_TAGGED_HOST].status = RPT_LEAK;
    rpt_conclude(&v, NULL);
    cr_assert_eq(v.status, RPT_LEAK, "%s", v.summary);
    cr_assert_eq(v.exit_code, 1);
    /* a budget never measured is named in the verdict that uses it */
    struct rpt_budget b[RPT_NCHANNELS];
    hx_default_budgets(b, TN_CUDA);
    v = all_pass(rpt_default_required(true), 40);
    rpt_conclude(&v, b);
    cr_assert_eq(v.status, RPT_PASS, "%s", v.summary);
    cr_assert(strstr(v.summary, "budgets never measured (see leakgate calibrate): dev_process"),
              "%s", v.summary);
    cr_assert(!b[RPT_CH_DEV_PROCESS].measured &&
              strstr(b[RPT_CH_DEV_PROCESS].source, "unmeasured"));
}

Test(verdict, required_channels_parse_and_print)
{
    unsigned m;
    cr_assert_eq(rpt_parse_required("tagged_host,rss", false, &m), LG_OK);
    cr_assert_eq(m, RPT_BIT(RPT_CH_TAGGED_HOST) | RPT_BIT(RPT_CH_RSS));
    cr_assert_eq(rpt_parse_required("exact", true, &m), LG_OK);
    cr_assert_eq(m, RPT_BIT(RPT_CH_TAGGED_HOST) | RPT_BIT(RPT_CH_TAGGED_DEVICE) |
                        RPT_BIT(RPT_CH_REFS));
    cr_assert_eq(rpt_parse_required("none", false, &m), LG_OK);
    cr_assert_eq(m, 0u);
    cr_assert_eq(rpt_parse_required("rss,bogus", false, &m), LG_EINVAL);
    cr_assert(strstr(lg_errmsg(), "unknown channel 'bogus'"), "%s", lg_errmsg());
    cr_assert_eq(rpt_parse_required("", false, &m), LG_EINVAL);
    char buf[200];
    rpt_required_string(rpt_default_required(true), buf, sizeof buf);
    cr_assert_str_eq(
        buf,
        "tagged_host, tagged_device, refs, je_allocated, je_active, je_resident, rss, dev_process");
    rpt_required_string(0, buf, sizeof buf);
    cr_assert_str_eq(buf, "none");
}

/* A Gaussian from the xorshift noise (Box–Muller). */
static double gauss(uint64_t *s)
{
    double u = 0.5 * (noise(s) + 1.0) + 1e-12, w = 0.5 * (noise(s) + 1.0);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * w);
}

Test(verdict, the_minimum_sessions_see_twice_the_budget_and_raise_no_false_alarm)
{
    /* at the minimum the formula gives, a steady leak of twice the slope budget in Gaussian
     * noise of the budget's sigma is a leak in at least 90% of trials, and noise alone in at
     * most 5% */
    static const double sigmas[] = {0, 2000, 8192, 16384, 32768};
    for (size_t k = 0; k < LG_ARRAY_LEN(sigmas); k++) {
        struct rpt_budget b = {.band = 1e6, .slope = 8192, .floor = 32768, .noise = sigmas[k]};
        int n = rpt_min_sessions(&b), caught = 0, false_alarms = 0, trials = 300;
        cr_assert(n >= RPT_MIN_TREND && n <= 400, "sigma %g: n %d", sigmas[k], n);
        double *y = malloc((size_t)n * sizeof *y);
        uint64_t s = 12345 + k;
        for (int t = 0; t < trials; t++) {
            struct rpt_channel_verdict v;
            for (int i = 0; i < n; i++) y[i] = 2 * b.slope * (i + 1) + b.noise * gauss(&s);
            rpt_judge_statistical(RPT_CH_JE_ALLOCATED, y, n, &b, &v);
            caught += v.status == RPT_LEAK;
            for (int i = 0; i < n; i++) y[i] = b.noise * gauss(&s);
            rpt_judge_statistical(RPT_CH_JE_ALLOCATED, y, n, &b, &v);
            false_alarms += v.status == RPT_LEAK;
        }
        free(y);
        cr_expect_geq(caught, trials * 90 / 100, "sigma %g, n %d: caught %d of %d", sigmas[k], n,
                      caught, trials);
        cr_expect_leq(false_alarms, trials * 5 / 100, "sigma %g, n %d: %d false alarms of %d",
                      sigmas[k], n, false_alarms, trials);
        /* and one session fewer is refused as too few */
        if (n > RPT_MIN_TREND) {
            struct rpt_channel_verdict v;
            double z[400] = {0};
            rpt_judge_statistical(RPT_CH_JE_ALLOCATED, z, n - 1, &b, &v);
            cr_expect_eq(v.status, RPT_INCONCLUSIVE, "%s", v.why);
        }
    }
}

Test(verdict, recurring_steps_leak_and_one_off_steps_do_not)
{
    struct rpt_budget b = {.band = 4 << 20, .slope = 65536, .floor = 262144};
    struct rpt_channel_verdict v;
    double y[60];
    /* 1 MiB every 12 sessions, never freed */
    for (int i = 0; i < 60; i++) y[i] = (double)(i / 12 + 1) * (1 << 20);
    rpt_judge_statistical(RPT_CH_RSS, y, 60, &b, &v);
    cr_expect_eq(v.status, RPT_LEAK, "%s", v.why);
    /* two 3 MiB steps held to the end, flat otherwise: they do not recur, but the memory did
     * not return to baseline by more than RSS's 4 MiB band — a retained block since the first
     * (measured session #9) */
    for (int i = 0; i < 40; i++) y[i] = (i >= 8 ? 3 << 20 : 0) + (i >= 23 ? 3 << 20 : 0);
    rpt_judge_statistical(RPT_CH_RSS, y, 40, &b, &v);
    cr_expect_eq(v.status, RPT_LEAK, "%s", v.why);
    cr_expect(strstr(v.why, "6.00 MiB came in measured session #9"), "%s", v.why);
    /* one 2 MiB step on RSS, within its band: jemalloc's metadata blocks and the kernel's huge
     * pages make such steps with no allocation; held, but not a retained block there */
    for (int i = 0; i < 40; i++) y[i] = i >= 8 ? 2 << 20 : 0;
    rpt_judge_statistical(RPT_CH_RSS, y, 40, &b, &v);
    cr_expect_neq(v.status, RPT_LEAK, "%s", v.why);
    /* the same step on jemalloc's allocated bytes is what the program holds: a retained block */
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, y, 40, &b, &v);
    cr_expect_eq(v.status, RPT_LEAK, "%s", v.why);
    /* the same two steps given back before the end: no leak, and said to be given back */
    for (int i = 0; i < 40; i++) y[i] = i >= 8 && i < 30 ? 2 << 20 : 0;
    rpt_judge_statistical(RPT_CH_RSS, y, 40, &b, &v);
    cr_expect_neq(v.status, RPT_LEAK, "%s", v.why);
    /* a spike that comes back is no step at all */
    for (int i = 0; i < 40; i++) y[i] = i == 20 ? 8 << 20 : 0;
    struct rpt_steps st;
    rpt_find_steps(y, 40, &b, &st);
    cr_expect_eq(st.n, 0, "a spike that returns is not a step");
}

Test(verdict, refs_count_objects_not_retains)
{
    struct lg_retain r2[2] = {{.site = "tr_new (trainer.c:53)"}, {.site = "ckpt (trainer.c:90)"}};
    struct lg_ref_leak obj = {
        .kind = "varmap", .name = "tiny", .refs = 2, .n_retains = 2, .retains = r2};
    struct rpt_session s = {.n_refs = 1, .refs = &obj};
    for (int c = 0; c < RPT_NCHANNELS; c++) s.absolute[c] = s.delta[c] = 0;
    int64_t v;
    cr_assert(rpt_session_value(&s, RPT_CH_REFS, &v));
    cr_assert_eq(v, 1, "one object held twice is one leak");
}

/* An exact channel's figure may begin late (exec: CMD's first tag scope in session 3): the
 * sessions before it left nothing of it. A figure missing after it, or in every session, is not
 * a zero: the channel is unavailable. */
static enum rpt_status tagged_host_of(const bool *known, int n, int64_t leaked_at)
{
    struct rpt_series ser;
    cr_assert_eq(rpt_series_init(&ser, n), LG_OK);
    for (int i = 0; i < n; i++) {
        struct rpt_session s = {.index = i};
        for (int c = 0; c < RPT_NCHANNELS; c++) s.absolute[c] = s.delta[c] = 0;
        s.absolute[RPT_CH_TAGGED_HOST] = known[i] ? 0 : RPT_NONE;
        s.leaked_host_bytes = i == leaked_at ? 100 : 0;
        rpt_series_add(&ser, &s);
    }
    struct rpt_verdict v = {.required = RPT_BIT(RPT_CH_TAGGED_HOST)};
    struct rpt_budget b[RPT_NCHANNELS];
    hx_default_budgets(b, TN_CPU);
    rpt_judge_series(&ser, b, &v);
    rpt_series_fini(&ser);
    return v.channels[RPT_CH_TAGGED_HOST].status;
}

Test(verdict, an_exact_channel_may_begin_late_but_never_stop)
{
    const bool late[6] = {false, false, false, true, true, true},
               gap[6] = {true, true, false, true, true, true}, none[6] = {false};
    cr_assert_eq(tagged_host_of(late, 6, -1), RPT_PASS);
    cr_assert_eq(tagged_host_of(late, 6, 4), RPT_LEAK, "a leak after a late start is caught");
    cr_assert_eq(tagged_host_of(gap, 6, -1), RPT_UNAVAILABLE, "a figure missing after the first");
    cr_assert_eq(tagged_host_of(none, 6, -1), RPT_UNAVAILABLE, "no figure at all");
}

/* ---- budgets measured where the gate runs --------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(verdict, budgets_from_noise_and_the_budgets_file)
{
    /* clean runs with a little noise: budgets rise above the resolution, never below it */
    struct rpt_noise nz = {0};
    double y[40];
    uint64_t s = 7;
    for (int r = 0; r < 5; r++) {
        for (int i = 0; i < 40; i++) y[i] = 20000 * gauss(&s);
        rpt_noise_add_run(&nz, y, 40);
    }
    cr_assert_eq(nz.runs, 5);
    cr_assert(nz.jitter > 10000 && nz.jitter < 30000, "jitter %g", nz.jitter);
    struct rpt_budget res, b[RPT_NCHANNELS];
    rpt_budget_resolution(RPT_CH_JE_ALLOCATED, &res);
    rpt_budget_from_noise(RPT_CH_JE_ALLOCATED, &nz, &b[RPT_CH_JE_ALLOCATED]);
    struct rpt_budget *a = &b[RPT_CH_JE_ALLOCATED];
    cr_assert(a->measured && a->noise == nz.jitter);
    cr_assert(a->band >= 2 * nz.max_abs && a->band >= res.band);
    cr_assert(a->floor >= 4 * nz.jitter && a->slope >= res.slope);
    cr_assert_gt(rpt_min_sessions(a), RPT_MIN_TREND, "noise asks for more sessions");
    /* written and read back */
    struct rpt_noise all[RPT_NCHANNELS] = {0};
    all[RPT_CH_JE_ALLOCATED] = nz;
    struct rpt_budgets_info info = {.machine = "testhost: 2 CPUs",
                                    .device = "cpu",
                                    .build = "leakgate test",
                                    .command = "leakgate calibrate --runs 5",
                                    .date = "2026-12-01T00:00:00Z",
                                    .workload = "tiny"};
    const char *path = lg_test_tmpfile("budgets.json");
    cr_assert_eq(rpt_budgets_write(path, b, all, RPT_BIT(RPT_CH_JE_ALLOCATED), &info), LG_OK, "%s",
                 lg_errmsg());
    struct rpt_budget back[RPT_NCHANNELS];
    hx_default_budgets(back, TN_CPU);
    cr_assert_eq(hx_load_budgets(back, path, TN_CPU), LG_OK, "%s", lg_errmsg());
    cr_assert_float_eq(back[RPT_CH_JE_ALLOCATED].band, a->band, 1e-6);
    cr_assert_float_eq(back[RPT_CH_JE_ALLOCATED].noise, a->noise, 1e-6);
    cr_assert(strstr(back[RPT_CH_JE_ALLOCATED].source, "measured on testhost: 2 CPUs, 2026-12-01"),
              "%s", back[RPT_CH_JE_ALLOCATED].source);
    cr_assert(strstr(back[RPT_CH_RSS].source, "calibrate") != NULL,
              "channels the file does not name keep the defaults");
    /* malformed files: a message naming the file and the member */
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"{", "not JSON"},
        {"[]", "not a budgets file"},
        {"{\"schema\":\"leakgate.budgets/9\"}", "is not \"leakgate.budgets/1\""},
        {"{\"schema\":\"leakgate.budgets/1\",\"machine\":\"m\",\"device\":\"cpu\",\"build\":\"b\",\"command\":\"c\","
         "\"date\":\"d\",\"workload\":\"w\",\"channels\":{\"refs\":{}}}",
         "channels.refs: not a statistical channel"},
        {"{\"schema\":\"leakgate.budgets/1\",\"machine\":\"m\",\"device\":\"cpu\",\"build\":\"b\",\"command\":\"c\","
         "\"date\":\"d\",\"workload\":\"w\",\"channels\":{\"rss\":{\"band\":-1,\"slope\":1,\"floor\":1,\"noise\":0}}}",
         "channels.rss.band: expected a non-negative number"},
        {"{\"schema\":\"leakgate.budgets/1\",\"machine\":\"m\",\"device\":\"cpu\",\"build\":\"b\",\"command\":\"c\","
         "\"date\":\"d\",\"workload\":\"w\",\"channels\":{\"dev_driver\":{\"band\":1,\"slope\":1,\"floor\":1,\"noise\":0}}}",
         "device budgets in a file measured on \"cpu\""},
        {"{\"schema\":\"leakgate.budgets/1\",\"machine\":\"m\",\"device\":\"cpu\",\"build\":\"b\",\"command\":\"c\","
         "\"date\":\"d\",\"workload\":\"w\",\"channels\":{}}",
         "names no channel"},
    };
    for (size_t k = 0; k < LG_ARRAY_LEN(bad); k++) {
        write_text(path, bad[k].text);
        hx_default_budgets(back, TN_CPU);
        cr_expect_neq(hx_load_budgets(back, path, TN_CPU), LG_OK, "accepted: %s", bad[k].text);
        cr_expect(strstr(lg_errmsg(), bad[k].needle) && strstr(lg_errmsg(), "budgets.json"),
                  "%s: %s", bad[k].text, lg_errmsg());
    }
    cr_expect_neq(hx_load_budgets(back, lg_test_tmpdir(), TN_CPU), LG_OK,
                  "a directory is not a budgets file");
    cr_expect_neq(hx_load_budgets(back, "/nonexistent.json", TN_CPU), LG_OK);
}

/* A leak of 1 MiB a session may start at any session: a Monte Carlo over every onset of a
 * 40-session run, with jemalloc-allocated's budgets and allocation jitter of +-2 KiB a session
 * (20 noise draws per onset). It is a LEAK once 4 sessions leaked (rule 4, RPT_KEPT_LEAK),
 * INCONCLUSIVE before that (the memory did not return to baseline), and never a PASS; the same
 * noise without the leak passes. */
Test(verdict, a_leak_starting_at_any_session_is_never_a_pass)
{
    const struct rpt_budget b = {
        .band = 512 * 1024, .slope = 8192, .floor = 32768, .noise = 0, .measured = true};
    const int n = 40;
    int clean_pass = 0, trials = 0;
    for (int onset = 0; onset < n; onset++) {
        for (uint64_t seed = 1; seed <= 20; seed++) {
            uint64_t s = seed * 7919 + (uint64_t)onset;
            double y[40], clean[40];
            for (int i = 0; i < n; i++) {
                double jitter = 2048 * noise(&s);
                clean[i] = jitter;
                y[i] = jitter + (i >= onset ? (double)(i - onset + 1) * (1 << 20) : 0);
            }
            struct rpt_channel_verdict v;
            rpt_judge_statistical(RPT_CH_JE_ALLOCATED, y, n, &b, &v);
            int leaking = n - onset;
            if (leaking >= RPT_KEPT_LEAK)
                cr_expect_eq(v.status, RPT_LEAK, "onset %d (%d leaking), seed %llu: %s", onset,
                             leaking, (unsigned long long)seed, v.why);
            else
                cr_expect_eq(v.status, RPT_INCONCLUSIVE, "onset %d (%d leaking), seed %llu: %s",
                             onset, leaking, (unsigned long long)seed, v.why);
            cr_expect(v.stayed || v.status == RPT_LEAK, "onset %d: said to stay: %s", onset, v.why);
            rpt_judge_statistical(RPT_CH_JE_ALLOCATED, clean, n, &b, &v);
            clean_pass += v.status == RPT_PASS;
            trials++;
        }
    }
    cr_expect_eq(clean_pass, trials, "the clean twins: %d of %d passed", clean_pass, trials);
}

/* Rule 5 on its own: a channel rising by a constant 3 KiB a session (below the 8 KiB budget) is a
 * leak from RPT_STEADY_MIN sessions on; a page-granular channel needs a page a session; a
 * series that rises only now and then, or by wildly different amounts, is not steady. */
Test(verdict, a_steady_rise_below_the_budget_is_a_leak_and_noise_is_not)
{
    const struct rpt_budget b = {
        .band = 512 * 1024, .slope = 8192, .floor = 32768, .noise = 0, .measured = true};
    double y[64];
    struct rpt_channel_verdict v;
    for (int i = 0; i < 64; i++) y[i] = 3072.0 * (i + 1);
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, y, RPT_STEADY_MIN, &b, &v);
    cr_expect_eq(v.status, RPT_LEAK, "%s", v.why);
    cr_expect(strstr(v.why, "rose 3.00 KiB/session") && strstr(v.why, "rule 5"), "%s", v.why);
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, y, RPT_STEADY_MIN - 1, &b, &v);
    cr_expect_eq(v.status, RPT_INCONCLUSIVE, "fewer than RPT_STEADY_MIN sessions: %s", v.why);
    cr_expect(v.stayed && strstr(v.why, "rose 3.00 KiB/session in every one of the 7"), "%s",
              v.why);
    /* 3 KiB a session on RSS is less than its page: not a rise there */
    rpt_judge_statistical(RPT_CH_RSS, y, 16, &b, &v);
    cr_expect(!strstr(v.why, "rule 5"), "below RSS's granularity: %s", v.why);
    /* a page now and then (one session in five) over 40 sessions: the clean gate's RSS */
    for (int i = 0; i < 40; i++) y[i] = 4096.0 * ((i + 1) / 5);
    rpt_judge_statistical(RPT_CH_RSS, y, 40, &b, &v);
    cr_expect_eq(v.status, RPT_PASS, "a page now and then: %s", v.why);
    /* rises in every session but by amounts from 1 KiB to 15 KiB: not one size, not rule 5 */
    for (int i = 0; i < 40; i++) y[i] = (i ? y[i - 1] : 0) + 1024.0 * (1 + (i * 7) % 15);
    rpt_judge_statistical(RPT_CH_JE_ALLOCATED, y, 40, &b, &v);
    cr_expect(!strstr(v.why, "rule 5"), "increments of many sizes: %s", v.why);
}
