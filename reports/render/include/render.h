/* render.h — the documents made from a run's results: JUnit XML, a Markdown summary, a CSV of
 * the per-session series, one self-contained HTML report, folded stacks and a flame graph, and
 * rpt_write_all, which writes them (and the figures, plot.h) into an output directory. */
#ifndef LG_RENDER_H
#define LG_RENDER_H

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

/* A <figure> with svg_dir/<name>.svg inline (ids prefixed with name), or a line saying why it
 * is missing. */
void rpt_html_figure(FILE *f, const char *svg_dir, const char *name, const char *title);
/* The report's style sheet, for other pages leakgate writes. */
const char *rpt_html_style(void);

#endif
