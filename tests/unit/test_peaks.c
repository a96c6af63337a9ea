/* test_peaks.c — peak budgets below the CLI: the --peak-budget parser, and the budget judged
 * over a run's sessions (exceeded, within, a class no session saw, sessions that did not record
 * per-class peaks). The tracker's per-class peaks are tested in test_tracking.c. */
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "lg_test.h"

TestSuite(peaks, .init = lg_test_setup, .fini = lg_test_teardown);

Test(peaks, budgets_parse_strictly)
{
    struct rpt_peak_budget b;
    cr_assert_eq(rpt_peak_budget_parse("act=900MiB", &b), LG_OK, "%s", lg_errmsg());
    cr_assert_str_eq(b.cls, "act");
    cr_assert_str_eq(b.space, "host");
    cr_assert_eq(b.limit, 900ll << 20);
    cr_assert_eq(rpt_peak_budget_parse("device:total=2GiB", &b), LG_OK);
    cr_assert_str_eq(b.space, "device");
    cr_assert_str_eq(b.cls, "total");
    static const char *const bad[][2] = {
        {"act", "not [device:]CLASS=SIZE"},  {"=1MiB", "not [device:]CLASS=SIZE"},
        {"act/x=1MiB", "not a tag class"},   {"act=lots", "not a size"},
        {"gpu:act=1MiB", "not a tag class"}, {"act=1 parsec", "unknown size unit"},
    };
    for (size_t i = 0; i < LG_ARRAY_LEN(bad); i++) {
        cr_assert_eq(rpt_peak_budget_parse(bad[i][0], &b), LG_EINVAL, "%s", bad[i][0]);
        cr_assert(strstr(lg_errmsg(), bad[i][1]), "%s: %s", bad[i][0], lg_errmsg());
    }
}

/* A results struct of n sessions whose class "act" peaks at act[i] bytes (0: absent). */
static struct rpt_results *results_with(const int64_t *act, int n, bool measured)
{
    struct rpt_results *r = calloc(1, sizeof *r);
    r->sessions = calloc((size_t)n, sizeof *r->sessions);
    r->n_sessions = n;
    for (int i = 0; i < n; i++) {
        struct rpt_session *s = &r->sessions[i];
        s->index = i;
        s->peak_tagged_host = act[i] + 1000;
        s->peaks_measured = measured;
        if (!measured || !act[i]) continue;
        s->peaks = calloc(1, sizeof *s->peaks);
        s->n_peaks = 1;
        lg_strlcpy(s->peaks[0].cls, "act", sizeof s->peaks[0].cls);
        lg_strlcpy(s->peaks[0].space, "host", sizeof s->peaks[0].space);
        s->peaks[0].bytes = act[i];
        s->peaks[0].n_tags = 2;
        snprintf(s->peaks[0].tags[0].tag, sizeof s->peaks[0].tags[0].tag, "act/big%d", i);
        s->peaks[0].tags[0].bytes = act[i] / 2;
        lg_strlcpy(s->peaks[0].tags[1].tag, "act/small", sizeof s->peaks[0].tags[1].tag);
        s->peaks[0].tags[1].bytes = act[i] / 4;
    }
    return r;
}

static struct rpt_peak_check judge(const char *spec, const struct rpt_results *r)
{
    struct rpt_peak_budget b;
    struct rpt_gate *g = calloc(1, sizeof *g);
    cr_assert_eq(rpt_peak_budget_parse(spec, &b), LG_OK);
    rpt_gate_peaks(g, &b, 1, r);
    cr_assert_eq(g->n_peaks, 1);
    struct rpt_peak_check pc = g->peaks[0];
    free(g);
    return pc;
}

Test(peaks, a_session_over_its_budget_fails_named_by_class_and_tags)
{
    const int64_t act[] = {500, 800, 1200, 700};
    struct rpt_results *r = results_with(act, 4, true);
    struct rpt_peak_check pc = judge("act=1000", r);
    cr_assert_eq(pc.status, RPT_LEAK, "%s", pc.why);
    cr_assert_eq(pc.session, 2);
    cr_assert_eq(pc.over, 1);
    cr_assert_eq(pc.peak, 1200);
    cr_assert(strstr(pc.why, "act/big2") && strstr(pc.why, "session 2"), "%s", pc.why);
    pc = judge("act=1200", r);
    cr_assert_eq(pc.status, RPT_PASS, "%s", pc.why); /* at the budget is within it */
    pc = judge("total=2000", r);
    cr_assert_eq(pc.status, RPT_LEAK, "total 2200 > 2000: %s", pc.why);
    pc = judge("actt=1MiB", r);
    cr_assert_eq(pc.status, RPT_INCONCLUSIVE, "a class no session saw is not a pass");
    cr_assert(strstr(pc.why, "typo"), "%s", pc.why);
    rpt_results_free(r);
}

Test(peaks, sessions_without_class_peaks_are_not_measured)
{
    const int64_t act[] = {500, 800, 1200, 700};
    struct rpt_results *r = results_with(act, 4, false);
    struct rpt_peak_check pc = judge("act=1MiB", r);
    cr_assert_eq(pc.status, RPT_INCONCLUSIVE, "%s", pc.why);
    cr_assert(strstr(pc.why, "total only"), "%s", pc.why);
    pc = judge("total=1MiB", r);
    cr_assert_eq(pc.status, RPT_PASS, "the total is always recorded: %s", pc.why);
    rpt_results_free(r);
}

/* A device budget over a run without a device judges nothing: not a pass at 0 B. */
Test(peaks, a_device_budget_without_a_device_is_not_measured)
{
    const int64_t act[] = {500, 800};
    struct rpt_results *r = results_with(act, 2, true);
    lg_strlcpy(r->run.device, "cpu", sizeof r->run.device);
    struct rpt_peak_check pc = judge("device:total=1", r);
    cr_assert_eq(pc.status, RPT_INCONCLUSIVE, "%s", pc.why);
    cr_assert(strstr(pc.why, "no device in this run"), "%s", pc.why);
    lg_strlcpy(r->run.device, "cuda: NVIDIA H200", sizeof r->run.device);
    for (int i = 0; i < r->n_sessions; i++) r->sessions[i].peak_tagged_device = 4096;
    pc = judge("device:total=1", r);
    cr_assert_eq(pc.status, RPT_LEAK, "%s", pc.why);
    rpt_results_free(r);
}
