/* test_channels.c — the channel table (reports/results/include/channels.h) is the one place a
 * channel is written down: every row is complete and consistent, and what is generated from it
 * (names, budgets, requirements, help lists) and what must document it (the results schema, its
 * JSON Schema) agree with it. A new row that misses one of these fails here, naming what is
 * missing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "budget_file.h"
#include "reports.h"
#include "lg_test.h"
#include "verdict.h"

TestSuite(channels, .init = lg_test_setup, .fini = lg_test_teardown);

Test(channels, every_row_is_complete_and_names_are_unique)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        const char *name = rpt_channel_name(c);
        cr_assert(name && name[0], "channel %d has no name", c);
        cr_expect(rpt_channel_label(c)[0], "%s has no label", name);
        cr_expect_eq(rpt_channel_from_name(name), c, "%s does not round-trip", name);
        cr_expect(rpt_channel_granularity(c) >= 1, "%s: granularity below a byte", name);
        for (int d = 0; d < c; d++)
            cr_expect(strcmp(rpt_channel_name(d), name), "%s is named twice", name);
    }
    cr_expect_eq(rpt_channel_from_name("no_such_channel"), -1);
}

Test(channels, budgets_follow_exactness)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        struct rpt_budget b;
        rpt_budget_resolution(c, &b);
        const char *name = rpt_channel_name(c);
        if (rpt_channel_exact(c)) {
            cr_expect(b.band == 0 && b.slope == 0 && b.floor == 0,
                      "%s is exact: zero tolerance, no budget", name);
        } else {
            cr_expect(b.slope > 0 && b.floor > 0 && b.band >= b.floor,
                      "%s is statistical: slope %g, floor %g, band %g must be set, band >= floor",
                      name, b.slope, b.floor, b.band);
            /* a step smaller than one reading's move could never be told from noise */
            cr_expect(b.floor >= rpt_channel_granularity(c), "%s: floor below its granularity",
                      name);
        }
    }
}

Test(channels, requirement_sets_come_from_the_flags)
{
    unsigned host = rpt_channel_mask(RPT_CHF_HOST), device = rpt_channel_mask(RPT_CHF_DEVICE);
    unsigned process = rpt_channel_mask(RPT_CHF_PROCESS);
    cr_expect_eq(host & device, 0u, "a device channel is never required on the host");
    cr_expect_eq(process & ~host, 0u, "exec's per-process channels are host channels");
    cr_expect_eq(rpt_default_required(false), host);
    cr_expect_eq(rpt_default_required(true), host | rpt_channel_mask(RPT_CHF_CUDA));
    unsigned m = 0;
    cr_assert_eq(rpt_parse_required("exact", false, &m), LG_OK, "%s", lg_errmsg());
    cr_expect_eq(m, rpt_channel_mask(RPT_CHF_EXACT) & ~device);
    cr_assert_eq(rpt_parse_required("all", true, &m), LG_OK, "%s", lg_errmsg());
    cr_expect_eq(m, RPT_BIT(RPT_NCHANNELS) - 1);
    /* every channel's name is accepted, and listed when one is not */
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        cr_assert_eq(rpt_parse_required(rpt_channel_name(c), true, &m), LG_OK);
        cr_expect_eq(m, RPT_BIT(c));
    }
    cr_assert_eq(rpt_parse_required("bogus", true, &m), LG_EINVAL);
    for (int c = 0; c < RPT_NCHANNELS; c++)
        cr_expect(strstr(lg_errmsg(), rpt_channel_name(c)), "the refusal lists %s: %s",
                  rpt_channel_name(c), lg_errmsg());
    lg_clear_error();
}

Test(channels, the_lists_hold_each_name_once)
{
    char buf[512];
    rpt_channel_list(buf, sizeof buf, RPT_BIT(RPT_NCHANNELS) - 1, ",");
    int commas = 0;
    for (const char *p = buf; *p; p++) commas += *p == ',';
    cr_expect_eq(commas, RPT_NCHANNELS - 1, "%s", buf);
    rpt_statistical_channels(buf, sizeof buf);
    for (int c = 0; c < RPT_NCHANNELS; c++)
        cr_expect_eq(strstr(buf, rpt_channel_name(c)) != NULL, !rpt_channel_exact(c), "%s in %s",
                     rpt_channel_name(c), buf);
}

/* The schema documents every channel: its JSON Schema's channel enum and per-channel object,
 * and the channel table of docs/results-schema.md ("| `name` |"). */
Test(channels, the_results_schema_documents_every_channel)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/docs/results.schema.json", LG_SOURCE_DIR);
    char *json = lg_slurp(path, NULL);
    snprintf(path, sizeof path, "%s/docs/results-schema.md", LG_SOURCE_DIR);
    char *md = lg_slurp(path, NULL);
    cr_assert(json && md, "the schema documents are readable");
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        char q[128], row[128];
        snprintf(q, sizeof q, "\"%s\": {\"$ref\"", rpt_channel_name(c));
        snprintf(row, sizeof row, "| `%s` |", rpt_channel_name(c));
        cr_expect(strstr(json, q), "results.schema.json lacks %s", q);
        cr_expect(strstr(md, row), "results-schema.md lacks the row %s", row);
    }
    /* the verdict's channel list: one entry per channel at most */
    const char *list = strstr(json, "\"channels\": {");
    const char *max = list ? strstr(list, "\"maxItems\": ") : NULL;
    cr_assert(max, "results.schema.json: the verdict's channels have no maxItems");
    cr_expect_eq(atoi(max + strlen("\"maxItems\": ")), RPT_NCHANNELS,
                 "results.schema.json: the verdict's channels' maxItems is not %d", RPT_NCHANNELS);
    free(json);
    free(md);
}
