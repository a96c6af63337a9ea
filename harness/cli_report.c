/* cli_report.c — `leakgate report RESULTS -o DIR`: every artefact rebuilt from saved results.
 * A partial run (cut short by a crash, an OOM kill or a signal) has no verdict line; the
 * verdict engine judges the sessions that finished, and the report says it is partial. */
#include <stdio.h>
#include <string.h>

#include "hx_impl.h"
#include "reports.h"
#include "soak_impl.h"

/* Judges loaded results that lack a verdict line, with the budgets their run line records. */
void hx_judge_results(struct rpt_results *r)
{
    struct hx_series ser;
    if (hx_series_init(&ser, r->n_sessions) != LG_OK) return;
    ser.device = hx_run_had_device(&r->run);
    for (int i = 0; i < r->n_sessions; i++) hx_series_add(&ser, &r->sessions[i]);
    hx_judge_series(&ser, r->run.budgets, &r->verdict);
    r->verdict.partial = true;
    size_t l = strlen(r->verdict.summary);
    snprintf(r->verdict.summary + l, sizeof r->verdict.summary - l,
             " (partial run: judged from the %d session(s) on disk)", r->n_sessions);
    r->has_verdict = true;
    hx_series_fini(&ser);
}

int hx_cmd_report(int argc, char **argv)
{
    const char *in = NULL, *dir = NULL;
    unsigned flags = RPT_ALL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: leakgate report RESULTS.jsonl -o DIR [--no-plots]\n"
                   "Rebuilds plots (PNG, SVG), junit.xml, summary.md, sessions.csv and report.html from\n"
                   "saved results, a partial run's included (its verdict is judged from what finished).\n");
            return 0;
        }
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "leakgate report: %s needs a directory\n", argv[i]);
                return 2;
            }
            dir = argv[++i];
        } else if (!strcmp(argv[i], "--no-plots")) {
            flags &= ~(unsigned)RPT_PLOTS;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "leakgate report: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (!in) {
            in = argv[i];
        } else {
            fprintf(stderr, "leakgate report: one results file, please ('%s' is extra)\n", argv[i]);
            return 2;
        }
    }
    if (!in || !dir) {
        fprintf(stderr, "usage: leakgate report RESULTS.jsonl -o DIR [--no-plots]\n");
        return 2;
    }
    struct rpt_results *r = NULL;
    if (rpt_results_load(&r, in) != LG_OK) {
        fprintf(stderr, "leakgate report: %s\n", lg_errmsg());
        return 2;
    }
    if (!r->has_verdict) {
        /* a soak is judged over its sliding window (memory O(window)); a run over every session */
        if (!strcmp(r->run.command, "soak")) {
            if (hx_soak_judge_results(r, HX_SOAK_DEFAULT_WINDOW) != LG_OK) {
                fprintf(stderr, "leakgate report: %s\n", lg_errmsg());
                rpt_results_free(r);
                return 4;
            }
        } else {
            hx_judge_results(r);
        }
    }
    int rc = rpt_write_all(r, dir, flags);
    int code = rc == LG_OK ? 0 : rc == LG_EUNAVAIL ? 2 : 4;
    if (rc != LG_OK) fprintf(stderr, "leakgate report: %s\n", lg_errmsg());
    else printf("%s\nreport written to %s/ (report.html, summary.md, junit.xml, sessions.csv, plots)\n",
                r->verdict.summary, dir);
    rpt_results_free(r);
    return code;
}
