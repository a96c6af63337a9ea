/* rpt_text.h — text for every artefact (text.c, names.c): escaping for XML, Markdown, CSV and
 * gnuplot, figures as people read them, status words, and output files written whole or not at
 * all. */
#ifndef LG_RPT_TEXT_H
#define LG_RPT_TEXT_H

#include <stdio.h>

#include "results.h"

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

#endif
