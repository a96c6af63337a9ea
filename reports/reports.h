/* reports.h — everything made from a run's results: gnuplot figures (PNG and SVG), JUnit XML,
 * a Markdown summary, a CSV of the per-session series, one self-contained HTML report, and a
 * run-to-run comparison. reports/ reads results (results.h), never the model. This header
 * gathers the public parts of its sub-libraries (results/, judge/, gate/, plot/, history/,
 * render/: docs/design.md draws them) and declares the commands built on them.
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

#include "compare.h"
#include "plot.h"
#include "render.h"
#include "results.h"

/* ---- commands (argv[0] is the command's name) ----------------------------------------------- */

/* report RESULTS -o DIR [--no-plots]: 0 done, 2 usage or input error (or gnuplot missing),
 * 4 when writing failed. */
int rpt_cmd_report(int argc, char **argv);
/* compare BASE HEAD: 0 no regression, 1 HEAD regressed, 2 usage or input error. */
int rpt_cmd_compare(int argc, char **argv);

#endif
