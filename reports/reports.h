/* reports.h — everything made from a run's results: gnuplot figures (PNG and SVG), JUnit XML,
 * a Markdown summary, a CSV of the per-session series, one self-contained HTML report, and a
 * run-to-run comparison. reports/ reads results (results.h), never the model.
 *
 * Worked example (what `leakgate report out/results.jsonl -o out/report` does):
 *
 *   struct rpt_results *r = NULL;
 *   if (rpt_results_load(&r, "out/results.jsonl") != LG_OK) {   // a partial run loads too:
 *       fprintf(stderr, "leakgate: %s\n", lg_errmsg());         // has_verdict == false
 *       return 2;
 *   }
 *   int rc = rpt_write_all(r, "out/report", RPT_ALL);
 *   // out/report/deltas.png deltas.svg leaks.png leaks.svg timeline.png timeline.svg
 *   //            [trend.png trend.svg: soak runs] junit.xml summary.md sessions.csv report.html
 *   if (rc != LG_OK) fprintf(stderr, "leakgate: %s\n", lg_errmsg());  // "gnuplot not found: ..."
 *   rpt_results_free(r);
 *
 * and a comparison of two runs, each judged by the run's rules with HEAD's budgets:
 *
 *   int rc = rpt_compare(base, head, NULL, stdout);   // RPT_COMPARE_REGRESSED: exit status 1
 *
 * The CLI wires its commands in one line each: `return rpt_cmd_report(argc - 1, argv + 1);`
 * (argv[0] is then the command's own name, "report" or "compare").
 *
 * Conventions used by every artefact (docs/results-schema.md):
 *   - "measured" sessions are those with warmup == false; warm-up sessions are shown, marked,
 *     and never judged;
 *   - delta[ch] is the reading after quiesce minus the baseline (cumulative over the run);
 *     a session's growth is its delta minus the previous measured session's delta;
 *   - tag classes are the part of a tag before its first '/', and a shared object's
 *     unbalanced retains (refs[].retains) are listed with the tags of the class equal to the
 *     object's kind ("varmap" objects with "varmap/..." tags).
 * Memory here is ordinary heap memory; every function that returns memory says who frees it.
 */
#ifndef LG_REPORTS_H
#define LG_REPORTS_H

#include <stdbool.h>
#include <stdio.h>

#include "results.h"

/* What rpt_write_all makes. */
enum rpt_artefact {
    RPT_PLOTS = 1 << 0,    /* <figure>.png and <figure>.svg for every figure that applies */
    RPT_JUNIT = 1 << 1,    /* junit.xml */
    RPT_MARKDOWN = 1 << 2, /* summary.md */
    RPT_CSV = 1 << 3,      /* sessions.csv */
    RPT_HTML = 1 << 4,     /* report.html (embeds the SVGs found in the same directory) */
    RPT_ALL = 0x1f,
};

/* Writes the artefacts chosen by `flags` into `dir` (created when missing). When gnuplot is
 * missing it still writes every other artefact (the HTML then says the plots are missing)
 * and returns LG_EUNAVAIL; the first other failure is returned as it happens. */
int rpt_write_all(const struct rpt_results *r, const char *dir, unsigned flags);
/* Removes from dir every report artefact an earlier run wrote there, as dir's manifest lists
 * them (lg_out_manifest_clear; a file leakgate did not write is never removed, whatever its
 * name), so that no report of an earlier run stands beside a new run's results: run, exec, soak
 * and merge call it when they take their output directory, and rpt_write_all before it writes
 * (and lists each artefact it writes). LG_EIO naming the file it could not remove. */
int rpt_clear_artefacts(const char *dir);
/* Whether a file name is one a run writes into its output directory (results.jsonl or an
 * artefact of rpt_write_all): what no other output may be pointed at there. */
bool rpt_is_artefact_name(const char *name);

/* ---- figures --------------------------------------------------------------------------- */

enum rpt_figure {
    RPT_FIG_DELTAS = 0, /* per-session deltas against baseline, a panel per channel, budget bands */
    RPT_FIG_LEAKS,      /* leaked bytes per tag class per session, stacked */
    RPT_FIG_TIMELINE,   /* samples within sessions: the sawtooth (healthy) or staircase (leak) */
    RPT_FIG_TREND,      /* soak runs: each trend channel's series with its Theil–Sen line */
    RPT_NFIGURES
};
const char *rpt_figure_name(enum rpt_figure f);  /* "deltas": files deltas.png, deltas.svg */
const char *rpt_figure_title(enum rpt_figure f); /* "Per-session deltas against baseline" */
/* Pixel size of a figure's PNG (and of its SVG canvas). */
void rpt_figure_size(enum rpt_figure f, int *width, int *height);
/* Whether the results hold what the figure needs: deltas and leaks need a session; the
 * timeline needs samples; the trend needs a soak run with a verdict that has a slope. */
bool rpt_figure_applies(const struct rpt_results *r, enum rpt_figure f);

/* Runs gnuplot (found on PATH) to write every applicable figure as dir/<name>.png and
 * dir/<name>.svg. LG_EUNAVAIL with "gnuplot not found: apt-get install gnuplot-nox" when
 * it is missing; LG_EINTERNAL with gnuplot's own message when it fails. */
int rpt_plot_all(const struct rpt_results *r, const char *dir);
/* The same for one figure (it must apply). */
int rpt_plot(const struct rpt_results *r, enum rpt_figure f, const char *dir);

/* ---- documents --------------------------------------------------------------------------- */

/* JUnit XML (docs/junit.xsd): a testsuite per channel with a testcase per measured session and
 * one for the channel's verdict; failures carry the verdict's text. */
int rpt_write_junit(const struct rpt_results *r, FILE *f);
/* Markdown fit for a CI job summary: verdict first, a channel table (status, figure, budget,
 * why), the top leaked tags with their retain sites, the figures, the run's configuration. */
int rpt_write_markdown(const struct rpt_results *r, FILE *f);
/* CSV (RFC 4180), one row per session, a delta and an absolute column per channel; empty
 * cells where a value was not measured. */
int rpt_write_csv(const struct rpt_results *r, FILE *f);
/* One self-contained HTML page: verdict banner first, the plots as inline SVG (read from
 * svg_dir/<figure>.svg; NULL or missing files say so on the page), the leak table, the
 * unbalanced references, the sessions and the run's configuration. No external URL. */
int rpt_write_html(const struct rpt_results *r, const char *svg_dir, FILE *f);

/* ---- comparison --------------------------------------------------------------------------- */

/* What a comparison found; the values are the exit statuses of `leakgate compare`. */
enum rpt_compare_result {
    RPT_COMPARE_SAME = 0,         /* no regression beyond the budgets */
    RPT_COMPARE_REGRESSED = 1,    /* HEAD regressed */
    RPT_COMPARE_INCONCLUSIVE = 3, /* no regression found, but no evidence either (no measured
                                     session, HEAD's own verdict undecided) */
};
/* Judges BASE and HEAD by the run's rules with `budgets` (NULL: HEAD's run line's) and prints,
 * per channel, each one's per-session growth (statistical: Theil–Sen slope; exact: the median a
 * session leaves), per tag the leaked bytes per measured session, and their difference. HEAD
 * regressed when a channel leaks in HEAD that does not in BASE (or significantly faster), an
 * exact channel went from zero to non-zero or grew, or a tag leaks in HEAD and not in BASE. */
int rpt_compare(const struct rpt_results *base, const struct rpt_results *head,
                const struct rpt_budget *budgets, FILE *out);

/* ---- commands (argv[0] is the command's name) ----------------------------------------------- */

/* report RESULTS -o DIR [--no-plots]: 0 done, 2 usage or input error (or gnuplot missing),
 * 4 when writing failed. */
int rpt_cmd_report(int argc, char **argv);
/* compare BASE HEAD: 0 no regression, 1 HEAD regressed, 2 usage or input error. */
int rpt_cmd_compare(int argc, char **argv);

/* ---- names --------------------------------------------------------------------------------- */

const char *rpt_channel_label(enum rpt_channel c); /* "tagged host bytes", "process RSS", ... */

#endif
