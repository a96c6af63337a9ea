/* table.c — the leak table and the unreleased-references table, built once and written in
 * any report language by a dialect (struct rpt_dialect, rpt_impl.h): summary.md and
 * report.html print the same rows, cells and retain sites, each in its own syntax. */
#include <stdlib.h>
#include <string.h>

#include "rpt_impl.h"

static void html_code(FILE *f, const char *s)
{
    fputs("<code>", f);
    rpt_put_xml(f, s);
    fputs("</code>", f);
}

const struct rpt_dialect rpt_markdown = {
    .table_close = "\n",
    .row_open = "|",
    .cell_open = " ",
    .num_open = " ",
    .cell_close = " |",
    .head_open = " ",
    .head_close = " |",
    .row_close = "\n",
    .rule = true,
    .text = rpt_put_md,
    .code = rpt_put_md_code,
};

const struct rpt_dialect rpt_html = {
    .table_open = "<table>\n",
    .table_close = "</table>\n",
    .row_open = "<tr>",
    .cell_open = "<td>",
    .num_open = "<td class=\"num\">",
    .cell_close = "</td>",
    .head_open = "<th>",
    .head_close = "</th>",
    .row_close = "</tr>\n",
    .text = rpt_put_xml,
    .code = html_code,
};

void rpt_table_head(const struct rpt_dialect *d, FILE *f, const char *const *cols, int n)
{
    if (d->table_open) fputs(d->table_open, f);
    fputs(d->row_open, f);
    for (int k = 0; k < n; k++) fprintf(f, "%s%s%s", d->head_open, cols[k], d->head_close);
    fputs(d->row_close, f);
    if (!d->rule) return;
    fputs(d->row_open, f);
    for (int k = 0; k < n; k++) fputs("---|", f);
    fputs(d->row_close, f);
}

void rpt_table_end(const struct rpt_dialect *d, FILE *f)
{
    if (d->table_close) fputs(d->table_close, f);
}

/* "`site` ×3<br>`site` ×1", or "—" when there are none. */
static void site_list(const struct rpt_dialect *d, FILE *f, const struct rpt_site_count *s, int n)
{
    for (int k = 0; k < n; k++) {
        if (k) fputs("<br>", f);
        d->code(f, s[k].site);
        fprintf(f, " ×%d", s[k].count);
    }
    if (n == 0) fputs("—", f);
}

static void cell(const struct rpt_dialect *d, FILE *f, bool num, const char *text)
{
    fputs(num ? d->num_open : d->cell_open, f);
    d->text(f, text);
    fputs(d->cell_close, f);
}

/* One leaked tag: the tag, its space, bytes per session and in all, allocations, the sessions
 * it leaked in, the retain sites holding its class, and (where the dialect shows them) stacks. */
static int leak_row(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                    const struct rpt_tag_total *t, int measured)
{
    char cls[LG_MAX_CLASS], a[48];
    struct rpt_site_count *sites = NULL;
    int ns = 0;
    lg_tag_class(t->tag, cls, sizeof cls);
    int rc = rpt_retain_sites(r, cls, &sites, &ns);
    if (rc != LG_OK) return rc;
    fputs(d->row_open, f);
    fputs(d->cell_open, f);
    d->code(f, t->tag);
    fputs(d->cell_close, f);
    cell(d, f, false, t->space);
    cell(d, f, true, lg_fmt_bytes(a, sizeof a, (double)t->bytes / LG_MAX(t->sessions, 1)));
    cell(d, f, true, lg_fmt_bytes(a, sizeof a, (double)t->bytes));
    snprintf(a, sizeof a, "%lld", (long long)t->count);
    cell(d, f, true, a);
    snprintf(a, sizeof a, "%d/%d", t->sessions, measured);
    cell(d, f, true, a);
    fputs(d->cell_open, f);
    site_list(d, f, sites, ns);
    fputs(d->cell_close, f);
    if (d->stacks) {
        fputs(d->cell_open, f);
        d->stacks(f, t->example);
        fputs(d->cell_close, f);
    }
    fputs(d->row_close, f);
    free(sites);
    return LG_OK;
}

int rpt_leak_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                   const struct rpt_tag_total *t, int nt, int max_rows)
{
    static const char *const cols[] = {"tag",         "space",    "per session",  "total",
                                       "allocations", "sessions", "retain sites", "stacks"};
    int measured = rpt_measured_count(r), rc = LG_OK;
    rpt_table_head(d, f, cols, d->stacks ? 8 : 7);
    for (int k = 0; k < nt && k < max_rows && rc == LG_OK; k++)
        rc = leak_row(r, d, f, &t[k], measured);
    rpt_table_end(d, f);
    return rc;
}

int rpt_refs_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                   const char *heading)
{
    static const char *const cols[] = {"kind", "retain site (never released)", "times", "stack"};
    struct rpt_site_count *sites = NULL;
    int n = 0, rc = rpt_retain_sites(r, NULL, &sites, &n);
    if (rc != LG_OK || n == 0) return rc;
    fputs(heading, f);
    rpt_table_head(d, f, cols, d->stack ? 4 : 3);
    for (int k = 0; k < n; k++) {
        char times[16];
        fputs(d->row_open, f);
        fputs(d->cell_open, f);
        d->code(f, sites[k].kind);
        fputs(d->cell_close, f);
        fputs(d->cell_open, f);
        d->code(f, sites[k].site);
        fputs(d->cell_close, f);
        snprintf(times, sizeof times, "%d", sites[k].count);
        cell(d, f, true, times);
        if (d->stack) {
            fputs(d->cell_open, f);
            if (sites[k].stack)
                d->stack(f, "stack", sites[k].stack);
            else
                fputs("—", f);
            fputs(d->cell_close, f);
        }
        fputs(d->row_close, f);
    }
    rpt_table_end(d, f);
    free(sites);
    return LG_OK;
}
