/* cli.c — the `report` and `compare` commands, for the leakgate CLI (one line each to wire)
 * and for the standalone lg-report tool. argv[0] is the command's own name. Exit statuses
 * follow DESIGN.md: the verdict's (0 pass, 1 leak or regression, 3 inconclusive), 2 usage,
 * input or output error, 4 internal error. */
#include <string.h>

#include "budget_file.h"
#include "reports.h"
#include "rpt_text.h"
#include "verdict.h"

static const char report_usage[] =
    "usage: leakgate report RESULTS -o DIR [--no-plots]\n"
    "  Rebuilds every artefact from a results file into DIR: deltas/leaks/timeline[/trend].png\n"
    "  and .svg, junit.xml, summary.md, sessions.csv, report.html. A run cut short (no verdict\n"
    "  line) is judged from the sessions on disk, by the rules the run would have used; it is\n"
    "  partial, so inconclusive unless a leak was proven. A verdict line that claims more than\n"
    "  the file's sessions show (sessions missing, a channel nobody measured, a pass over\n"
    "  sessions that leak) is not believed: the sessions are judged instead, with a note.\n"
    "  --no-plots  skip the gnuplot figures (the HTML then has none)\n"
    "  Exit: the verdict's (0 pass, 1 leak, 3 inconclusive); 2 usage, input or output error\n"
    "  (gnuplot missing included: every other artefact is written); 4 internal error.\n";

static const char compare_usage[] =
    "usage: leakgate compare BASE HEAD [--budgets FILE]\n"
    "  Judges both results files by the rules `run` uses (per-session growth against the slope\n"
    "  budget, zero tolerance on tagged bytes and references) with HEAD's budgets, or FILE's, and\n"
    "  prints per-channel and per-tag differences. Exit: 0 no regression, 1 HEAD regressed,\n"
    "  2 usage or input error, 3 inconclusive (no measured session, HEAD's own verdict\n"
    "  undecided, or a channel HEAD requires not measured in both runs).\n";

static int usage_error(const char *cmd, const char *usage, const char *what, const char *arg)
{
    fprintf(stderr, "leakgate %s: %s%s%s%s\n%s", cmd, what, arg ? " '" : "", arg ? arg : "",
            arg ? "'" : "", usage);
    return 2;
}

static bool is_help(const char *a) { return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0; }

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
    struct lg_dir_lock lock = {-1};
    int status = 2;
    if (rpt_results_load(&r, results) != LG_OK) {
        fprintf(stderr, "leakgate report: %s\n", lg_errmsg());
        return lg_exit_code(lg_errcode());
    }
    if (r->truncated_lines)
        fprintf(stderr, "leakgate report: note: %s: the last line was cut mid-write and skipped\n",
                results);
    if (rpt_results_believe(r, results, "report") != LG_OK) {
        fprintf(stderr, "leakgate report: %s\n", lg_errmsg());
        status = lg_exit_code(lg_errcode());
        goto cleanup;
    }
    int rc = lg_mkdirs(dir);
    if (rc == LG_OK) rc = lg_dir_lock(&lock, dir);
    if (rc == LG_OK) rc = rpt_write_all(r, dir, flags);
    if (rc == LG_EUNAVAIL) {
        fprintf(
            stderr,
            "leakgate report: %s\n  (every other artefact was written; --no-plots skips the plots)\n",
            lg_errmsg());
        status = 2;
    } else if (rc != LG_OK) {
        fprintf(stderr, "leakgate report: %s\n", lg_errmsg());
        status = lg_exit_code(rc);
    } else {
        printf("leakgate report: %s → %s/report.html (%s, %d session%s)\n%s\n", results, dir,
               rpt_status_word(r->verdict.status), r->n_sessions, r->n_sessions == 1 ? "" : "s",
               r->verdict.summary);
        status = r->verdict.exit_code;
    }
cleanup:
    lg_dir_unlock(&lock);
    rpt_results_free(r);
    return status;
}

int rpt_cmd_compare(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *budgets_file = NULL;
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            fputs(compare_usage, stdout);
            return 0;
        }
        if (strcmp(a, "--budgets") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return usage_error("compare", compare_usage, "--budgets needs a file", NULL);
            budgets_file = argv[++i];
            continue;
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
    struct rpt_budget b[RPT_NCHANNELS];
    memcpy(b, head->run.budgets, sizeof b);
    if (budgets_file) {
        struct rpt_budgets_info info;
        unsigned present;
        if (rpt_budgets_load(budgets_file, b, &present, &info) != LG_OK) {
            fprintf(stderr, "leakgate compare: %s\n", lg_errmsg());
            goto cleanup;
        }
    }
    status = rpt_compare(base, head, b, stdout);
cleanup:
    rpt_results_free(base);
    rpt_results_free(head);
    return status;
}
