/* cli.c — the `report` and `compare` commands, for the leakgate CLI (one line each to wire)
 * and for the standalone lg-report tool. argv[0] is the command's own name. Exit statuses
 * follow DESIGN.md: 0 done, 1 regression found, 2 usage or input error, 4 internal error. */
#include <string.h>

#include "rpt_impl.h"

static const char report_usage[] =
    "usage: leakgate report RESULTS -o DIR [--no-plots]\n"
    "  Rebuilds every artefact from a results file (a partial run's too) into DIR:\n"
    "  deltas/leaks/timeline[/trend].png and .svg, junit.xml, summary.md, sessions.csv, "
    "report.html.\n"
    "  --no-plots  skip the gnuplot figures (the HTML then has none)\n";

static const char compare_usage[] =
    "usage: leakgate compare BASE HEAD\n"
    "  Prints per-channel and per-tag differences between two results files; exits 1 when HEAD\n"
    "  regressed beyond the budgets recorded in HEAD's run line, 0 when it did not.\n";

static int usage_error(const char *cmd, const char *usage, const char *what, const char *arg)
{
    fprintf(stderr, "leakgate %s: %s%s%s%s\n%s", cmd, what, arg ? " '" : "", arg ? arg : "",
            arg ? "'" : "", usage);
    return 2;
}

static bool is_help(const char *a)
{
    return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0;
}

int rpt_cmd_report(int argc, char **argv)
{
    const char *results = NULL, *dir = NULL;
    unsigned flags = RPT_ALL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            fputs(report_usage, stdout);
            return 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc)
                return usage_error("report", report_usage, "option needs a directory:", a);
            dir = argv[++i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            dir = a + 9;
        } else if (strcmp(a, "--no-plots") == 0) {
            flags &= ~(unsigned)RPT_PLOTS;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("report", report_usage, "unknown option", a);
        } else if (!results) {
            results = a;
        } else {
            return usage_error("report", report_usage, "unexpected argument", a);
        }
    }
    if (!results) return usage_error("report", report_usage, "missing the RESULTS file", NULL);
    if (!dir || !*dir)
        return usage_error("report", report_usage, "missing the output directory (-o DIR)", NULL);

    struct rpt_results *r = NULL;
    if (rpt_results_load(&r, results) != LG_OK) {
        fprintf(stderr, "leakgate report: %s\n", lg_errmsg());
        return 2;
    }
    if (r->truncated_lines)
        fprintf(stderr, "leakgate report: note: %s: the last line was cut mid-write and skipped\n",
                results);
    if (!r->has_verdict)
        fprintf(stderr, "leakgate report: note: %s has no verdict line (the run was cut short)\n",
                results);
    int rc = rpt_write_all(r, dir, flags), status = 0;
    if (rc == LG_EUNAVAIL) {
        fprintf(stderr,
                "leakgate report: %s\n  (every other artefact was written; --no-plots skips the "
                "plots)\n",
                lg_errmsg());
        status = 2;
    } else if (rc != LG_OK) {
        fprintf(stderr, "leakgate report: %s\n", lg_errmsg());
        status = rc == LG_EINVAL || rc == LG_EIO ? 2 : 4;
    } else {
        printf("leakgate report: %s → %s/report.html (%s, %d session%s)\n", results, dir,
               r->has_verdict ? rpt_status_word(r->verdict.status) : "NO VERDICT", r->n_sessions,
               r->n_sessions == 1 ? "" : "s");
    }
    rpt_results_free(r);
    return status;
}

int rpt_cmd_compare(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL};
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            fputs(compare_usage, stdout);
            return 0;
        }
        if (a[0] == '-' && a[1] != '\0')
            return usage_error("compare", compare_usage, "unknown option", a);
        if (nf == 2) return usage_error("compare", compare_usage, "unexpected argument", a);
        files[nf++] = a;
    }
    if (nf < 2)
        return usage_error("compare", compare_usage, "needs two results files, BASE and HEAD",
                           NULL);
    struct rpt_results *base = NULL, *head = NULL;
    int status = 2;
    if (rpt_results_load(&base, files[0]) != LG_OK || rpt_results_load(&head, files[1]) != LG_OK) {
        fprintf(stderr, "leakgate compare: %s\n", lg_errmsg());
        goto cleanup;
    }
    status = rpt_compare(base, head, stdout) ? 1 : 0;
    fflush(stdout);
cleanup:
    rpt_results_free(base);
    rpt_results_free(head);
    return status;
}
