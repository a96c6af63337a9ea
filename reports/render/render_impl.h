/* render_impl.h — private to reports/render/: the tables summary.md and report.html share
 * (table.c, census_table.c, procs_table.c), written through a dialect, and each document's
 * sections that another document also has (stacks, notes, the gate). */
#ifndef LG_RENDER_IMPL_H
#define LG_RENDER_IMPL_H

#include <stdio.h>

#include "render.h"
#include "rpt_text.h"
#include "summary.h"

/* A report language's table syntax (table.c): summary.md and report.html write the same
 * tables through one of these. Markdown's `rule` is the |---| line under the heading; `stacks`
 * and `stack` (NULL in Markdown) add a column of allocation or retain stacks. */
struct rpt_dialect {
    const char *table_open, *table_close; /* NULL: none */
    const char *row_open, *row_close;
    const char *cell_open, *num_open, *cell_close; /* num_open: a right-aligned number */
    const char *head_open, *head_close;
    bool rule;
    void (*text)(FILE *f, const char *s);                        /* escaped text */
    void (*code)(FILE *f, const char *s);                        /* an inline code span */
    void (*badge)(FILE *f, enum rpt_status s, const char *text); /* text marked by a status */
    void (*stacks)(FILE *f, const struct lg_leak_group *g);
    void (*stack)(FILE *f, const char *summary, const char *frames);
};
extern const struct rpt_dialect rpt_markdown, rpt_html;

void rpt_table_head(const struct rpt_dialect *d, FILE *f, const char *const *cols, int n);
void rpt_table_end(const struct rpt_dialect *d, FILE *f);
/* The paragraph under a section's heading: the judgment (a badge, then why) when `judged`,
 * else `otherwise`. */
void rpt_verdict_para(const struct rpt_dialect *d, FILE *f, bool judged, enum rpt_status status,
                      const char *why, const char *otherwise);
/* One cell of escaped text (num: right-aligned). */
void rpt_cell(const struct rpt_dialect *d, FILE *f, bool num, const char *text);
/* The top max_rows of rpt_tag_totals' nt tags, one row each: tag, space, bytes per session
 * and in all, allocations, sessions, the retain sites of the tag's class, and stacks. */
int rpt_leak_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                   const struct rpt_tag_total *t, int nt, int max_rows);
/* The channel table: with a verdict, each judged channel's status, figure, budget, slope and
 * why; without one (a run cut short), each measured channel against its budget. */
void rpt_channel_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f);
/* "results end after 5 sessions without a verdict line[; the last line was cut mid-write and
 * skipped]" into buf: what a results file without a verdict line holds. */
char *rpt_cut_short(const struct rpt_results *r, char *buf, size_t size);
/* The run's settings, then its budgets after budgets_heading. */
void rpt_config_tables(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                       const char *budgets_heading);
/* "run · preset tiny · modes fp32,int8 · cpu · inject varmap-dup-ref": what was run. */
void rpt_run_meta(const struct rpt_dialect *d, FILE *f, const struct rpt_run *run);
/* Unbalanced references by retain site, after `heading`; nothing at all when there are none. */
int rpt_refs_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                   const char *heading);

/* exec's process tree (procs_table.c): the verdict's process line and CMD's descendants at the
 * last session that read them, after `heading`; nothing when no session did. */
void rpt_procs_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                     const char *heading);
/* exec's census (census.c): the blocks still alive at the last counted session, by the measured
 * session they were born in, with their stacks, after `heading`; nothing when none was counted. */
void rpt_census_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                      const char *heading);

/* ---- stacks (flame.c, html_stacks.c) -------------------------------------------------------- */

/* Folded stacks (flamegraph.pl, speedscope, inferno): "main;train;leak_256k 262144" — root
 * first, bytes gained per session — for rpt_alloc_latest's stacks. LG_EUNAVAIL when none. */
int rpt_write_folded(const struct rpt_results *r, FILE *f);
/* An SVG flame graph of the same (self-contained: no script, no external reference); ids are
 * prefixed "flame-". LG_EUNAVAIL when there is nothing to draw. */
int rpt_write_flame_svg(const struct rpt_results *r, FILE *f);
/* The same for inclusion in HTML (no XML namespace). */
int rpt_write_flame_inline(const struct rpt_results *r, FILE *f);
/* The HTML report's section: the top stacks with bytes per session and their 95% interval,
 * and the flame graph inline. Nothing when the results hold no heap profile diff. */
void rpt_html_alloc_stacks(const struct rpt_results *r, FILE *f);

/* ---- notes (notes_doc.c) ----------------------------------------------------------------------
 */

/* The HTML section of the latest session with notes (nothing when none has). */
void rpt_html_notes(const struct rpt_results *r, FILE *f);
/* summary.md's "Who keeps it": exec's retention paths ("native: " notes), if any. */
void rpt_md_keep(const struct rpt_results *r, FILE *f);

/* ---- the gate (gate_doc.c) --------------------------------------------------------------------
 */

/* The gate's section of report.html and of summary.md: suppressed leaks with their rules,
 * expired and unused rules, peak budgets, the baseline. Nothing without a gate. */
void rpt_html_gate(const struct rpt_results *r, FILE *f);
void rpt_md_gate(const struct rpt_results *r, FILE *f);

#endif
