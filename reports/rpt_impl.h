/* rpt_impl.h — the private parts shared by the files of reports/: JSON conversion of the
 * results structs, text escaping and formatting, and the summaries every artefact shares. */
#ifndef LG_RPT_IMPL_H
#define LG_RPT_IMPL_H

#include <jansson.h>

#include "reports.h"
#include "verdict.h"

/* ---- JSON (results_encode.c, results_decode.c) ------------------------------------------- */

/* Each returns a new JSON object (the caller drops it with json_decref), NULL on ENOMEM. */
json_t *rpt_run_to_json(const struct rpt_run *run);
json_t *rpt_session_to_json(const struct rpt_session *s);
json_t *rpt_verdict_to_json(const struct rpt_verdict *v);
/* A stack's lines as a JSON array of strings ("a\nb\n" -> ["a", "b"]; bytes that are not UTF-8
 * written as '?'); NULL -> null; NULL on ENOMEM. */
json_t *rpt_json_frames(const char *s);
/* A JSON string, bytes that are not UTF-8 written as '?' (the file's rule); NULL on ENOMEM. */
json_t *rpt_json_str(const char *s);
/* A mask of channels as an array of their names (RPT_BIT(c)); NULL on ENOMEM. */
json_t *rpt_json_channels(unsigned mask);

/* Where a decode is: messages read "path:line: session.leaks[2].tag: ...". */
struct rpt_dec {
    const char *path;
    int line;
};
/* Each fills *out from a parsed line; LG_EFORMAT with file, line and member on bad input.
 * A session that fails to decode is left for rpt_session_fini to clean. */
int rpt_run_from_json(const struct rpt_dec *d, json_t *o, struct rpt_run *out);
int rpt_session_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *out);
int rpt_verdict_from_json(const struct rpt_dec *d, json_t *o, struct rpt_verdict *out);

/* ---- text (text.c) ------------------------------------------------------------------------ */

void rpt_put_xml(FILE *f, const char *s);     /* XML/HTML text and attributes */
void rpt_put_md(FILE *f, const char *s);      /* a Markdown table cell */
void rpt_put_md_code(FILE *f, const char *s); /* a Markdown code span, backquotes included */
void rpt_put_csv(FILE *f, const char *s);     /* a CSV field, quoted when needed */
void rpt_put_gp(FILE *f, const char *s);      /* a single-quoted gnuplot string, quotes included */
/* "+3.10 MiB", "-512 B", "0 B"; "n/a" for NaN. Returns buf. */
char *rpt_fmt_sbytes(char *buf, size_t size, double v);
/* A channel value: bytes for byte channels, a plain count for refs; "n/a" for RPT_NONE. */
char *rpt_fmt_value(char *buf, size_t size, enum rpt_channel ch, int64_t v, bool sign);
/* The same for a double (a figure, a budget, a slope); "n/a" for NaN. */
char *rpt_fmt_figure(char *buf, size_t size, enum rpt_channel ch, double v, bool sign);
/* Opens dir/name for writing (as dir/name.tmp); *out is closed with rpt_close_out, which syncs
 * it, renames it over dir/name and reports write errors (removing the temporary on failure). */
int rpt_open_out(FILE **out, const char *dir, const char *name, char *path, size_t path_size);
int rpt_close_out(FILE *f, const char *path);
const char *rpt_status_word(enum rpt_status s);  /* "PASS", "LEAK", ... */
const char *rpt_status_mark(enum rpt_status s);  /* a one-glyph badge for Markdown */
const char *rpt_status_class(enum rpt_status s); /* the HTML badge's class: "pass", "leak", ... */

/* ---- HTML (html.c) ------------------------------------------------------------------------ */

/* A <figure> with svg_dir/<name>.svg inline (ids prefixed with name), or a line saying why it
 * is missing. */
void rpt_html_figure(FILE *f, const char *svg_dir, const char *name, const char *title);
/* The report's style sheet, for other pages leakgate writes. */
const char *rpt_html_style(void);

/* ---- summaries (summary.c) ---------------------------------------------------------------- */

int rpt_measured_count(const struct rpt_results *r);
/* Whether suppression rules took anything (bytes or a shared object) in some session. */
bool rpt_any_suppressed(const struct rpt_results *r);
/* The sentence of the leaked-tags section when no tag leaked: it names the suppressed, if any. */
const char *rpt_no_leaked_tags_text(const struct rpt_results *r);
int rpt_warmup_count(const struct rpt_results *r);
/* The verdict for a channel, NULL without a verdict or when the verdict omits it. */
const struct rpt_channel_verdict *rpt_verdict_for(const struct rpt_results *r, enum rpt_channel c);
/* Whether any session measured the channel. */
bool rpt_channel_measured(const struct rpt_results *r, enum rpt_channel c);

/* What the data says about a channel without a verdict engine. */
struct rpt_channel_obs {
    int measured;         /* measured sessions with a value */
    int64_t max_abs;      /* largest |delta| */
    int64_t last;         /* the last measured delta */
    double median_growth; /* median per-session growth, NaN when none */
    int over_budget;      /* sessions judged beyond the budget (rpt_session_judge) */
};
void rpt_channel_observe(const struct rpt_results *r, enum rpt_channel c,
                         struct rpt_channel_obs *out);

/* The per-session figure JUnit and the tables judge for session i: exact channels use what the
 * session itself left behind (leaked bytes, unbalanced retains), statistical ones the delta.
 * Returns false when the channel was not measured in that session; *over says whether the
 * value is beyond the channel's budget in the run line. */
bool rpt_session_judge(const struct rpt_results *r, int i, enum rpt_channel c, int64_t *value,
                       bool *over);

/* What non-expired suppression rules took of one leak group (bytes), and whether they took a
 * shared object (matched by "kind/name"). */
int64_t rpt_group_suppressed(const struct rpt_session *s, const struct lg_leak_group *g);
bool rpt_object_suppressed(const struct rpt_session *s, const struct lg_ref_leak *rl);

/* Leaked tags summed over the measured sessions, largest first (what suppression rules took
 * left out: gate.h lists it). */
struct rpt_tag_total {
    char tag[LG_MAX_NAME];
    char space[LG_MAX_SPACE];
    int64_t bytes, count;                /* summed over the measured sessions */
    int sessions;                        /* measured sessions in which it leaked */
    int first_session;                   /* the index of the first of them */
    const struct lg_leak_group *example; /* that session's group (its stacks) */
};
/* *out is freed with free(); *n may be 0 (then *out is NULL). */
int rpt_tag_totals(const struct rpt_results *r, struct rpt_tag_total **out, int *n);

/* Distinct retain sites of unbalanced references on objects of one kind, over measured
 * sessions; kind NULL takes every kind. */
struct rpt_site_count {
    char site[LG_MAX_SITE];
    char kind[LG_MAX_KIND];
    int count;
    const char *stack; /* one of its stacks (borrowed from the results), or NULL */
};
/* *out is freed with free(). */
int rpt_retain_sites(const struct rpt_results *r, const char *kind, struct rpt_site_count **out,
                     int *n);

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

/* The intercept of a Theil–Sen line through (x, y) with the given slope: median(y − slope·x)
 * into *out (0 when n == 0 or the slope is not finite). */
int rpt_line_intercept(const double *x, const double *y, int n, double slope, double *out);

#endif
