/* table.c — the leak table and the unreleased-references table, built once and written in
 * any report language by a dialect (struct rpt_dialect, render_impl.h): summary.md and
 * report.html print the same rows, cells and retain sites, each in its own syntax. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render_impl.h"

static void html_code(FILE *f, const char *s)
{
    fputs("<code>", f);
    rpt_put_xml(f, s);
    fputs("</code>", f);
}

static void md_badge(FILE *f, enum rpt_status s, const char *text)
{
    fprintf(f, "%s ", rpt_status_mark(s));
    rpt_put_md(f, text);
}

static void html_badge(FILE *f, enum rpt_status s, const char *text)
{
    fprintf(f, "<span class=\"badge %s\">", rpt_status_class(s));
    rpt_put_xml(f, text);
    fputs("</span>", f);
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
    .badge = md_badge,
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
    .badge = html_badge,
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

void rpt_verdict_para(const struct rpt_dialect *d, FILE *f, bool judged, enum rpt_status status,
                      const char *why, const char *otherwise)
{
    fputs(d->table_open ? "<p>" : "", f);
    if (judged) {
        d->badge(f, status, rpt_status_word(status));
        fputs(": ", f);
        d->text(f, why);
    } else {
        d->text(f, otherwise);
    }
    fputs(d->table_open ? "</p>\n" : "\n\n", f);
}

void rpt_cell(const struct rpt_dialect *d, FILE *f, bool num, const char *text)
{
    fputs(num ? d->num_open : d->cell_open, f);
    d->text(f, text);
    fputs(d->cell_close, f);
}

/* One leaked tag: the tag, its space, bytes per session it leaked in (compare divides by every
 * measured session instead, and says so) and in all, allocations, the sessions
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
    rpt_cell(d, f, false, t->space);
    rpt_cell(d, f, true, lg_fmt_bytes(a, sizeof a, (double)t->bytes / LG_MAX(t->sessions, 1)));
    rpt_cell(d, f, true, lg_fmt_bytes(a, sizeof a, (double)t->bytes));
    snprintf(a, sizeof a, "%lld", (long long)t->count);
    rpt_cell(d, f, true, a);
    snprintf(a, sizeof a, "%d/%d", t->sessions, measured);
    rpt_cell(d, f, true, a);
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
    static const char *const cols[] = {"tag",         "space",    "per leaking session", "total",
                                       "allocations", "sessions", "retain sites",        "stacks"};
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
        rpt_cell(d, f, true, times);
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

static void channel_cell(const struct rpt_dialect *d, FILE *f, enum rpt_channel c)
{
    fputs(d->cell_open, f);
    d->text(f, rpt_channel_label(c));
    fputs(" (", f);
    d->code(f, rpt_channel_name(c));
    fputs(")", f);
    fputs(d->cell_close, f);
}

static void badge_cell(const struct rpt_dialect *d, FILE *f, enum rpt_status s, const char *text)
{
    fputs(d->cell_open, f);
    d->badge(f, s, text);
    fputs(d->cell_close, f);
}

/* A figure per session (or in all, for the exact channels). */
static void figure_cell(const struct rpt_dialect *d, FILE *f, enum rpt_channel c, double v)
{
    char a[48], b[64];
    rpt_fmt_figure(a, sizeof a, c, v, false);
    snprintf(b, sizeof b, "%s%s", a, !isnan(v) && !rpt_channel_exact(c) ? "/session" : "");
    rpt_cell(d, f, true, b);
}

static void judged_row(const struct rpt_dialect *d, FILE *f, const struct rpt_channel_verdict *cv)
{
    char a[160], lo[48], mid[48], hi[48];
    enum rpt_channel c = cv->channel;
    if (isfinite(cv->slope))
        snprintf(a, sizeof a, "%s [%s, %s]", rpt_fmt_figure(mid, sizeof mid, c, cv->slope, true),
                 rpt_fmt_figure(lo, sizeof lo, c, cv->slope_lo, true),
                 rpt_fmt_figure(hi, sizeof hi, c, cv->slope_hi, true));
    else
        lg_strlcpy(a, "—", sizeof a);
    fputs(d->row_open, f);
    channel_cell(d, f, cv->channel);
    badge_cell(d, f, cv->status, rpt_status_name(cv->status));
    figure_cell(d, f, cv->channel, cv->figure);
    figure_cell(d, f, cv->channel, cv->budget);
    rpt_cell(d, f, true, a);
    rpt_cell(d, f, false, cv->why);
    fputs(d->row_close, f);
}

/* A run cut short: what each measured channel did, against its budget. */
static void observed_row(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                         enum rpt_channel ch)
{
    struct rpt_channel_obs o;
    char a[48];
    rpt_channel_observe(r, ch, &o);
    fputs(d->row_open, f);
    channel_cell(d, f, ch);
    snprintf(a, sizeof a, "%d", o.measured);
    rpt_cell(d, f, true, a);
    rpt_cell(d, f, true, rpt_fmt_value(a, sizeof a, ch, o.max_abs, false));
    snprintf(a, sizeof a, "%d", o.over_budget);
    badge_cell(d, f, o.over_budget ? RPT_LEAK : RPT_PASS, a);
    rpt_cell(d, f, true, rpt_fmt_figure(a, sizeof a, ch, o.median_growth, true));
    char band[48], budget[64];
    rpt_fmt_figure(band, sizeof band, ch, r->run.budgets[ch].band, false);
    snprintf(budget, sizeof budget, rpt_channel_exact(ch) ? "0 (exact)" : "±%s", band);
    rpt_cell(d, f, true, budget);
    fputs(d->row_close, f);
}

void rpt_channel_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f)
{
    static const char *const judged[] = {"channel", "status",         "figure",
                                         "budget",  "slope [bounds]", "why"};
    static const char *const observed[] = {
        "channel", "sessions", "largest", "beyond budget", "median growth/session", "budget"};
    if (r->has_verdict) {
        rpt_table_head(d, f, judged, LG_ARRAY_LEN(judged));
        for (int k = 0; k < r->verdict.n_channels; k++) judged_row(d, f, &r->verdict.channels[k]);
    } else {
        rpt_table_head(d, f, observed, LG_ARRAY_LEN(observed));
        for (int ch = 0; ch < RPT_NCHANNELS; ch++)
            if (rpt_channel_measured(r, ch)) observed_row(r, d, f, ch);
    }
    rpt_table_end(d, f);
}

void rpt_run_meta(const struct rpt_dialect *d, FILE *f, const struct rpt_run *run)
{
    d->code(f, run->command);
    fputs(" · preset ", f);
    d->code(f, run->preset);
    fputs(" · modes ", f);
    d->code(f, run->modes);
    fputs(" · ", f);
    d->code(f, run->device);
    if (run->inject[0]) {
        fputs(" · inject ", f);
        d->code(f, run->inject);
    }
}

static void setting_row(const struct rpt_dialect *d, FILE *f, const char *name, const char *value)
{
    fputs(d->row_open, f);
    rpt_cell(d, f, false, name);
    rpt_cell(d, f, false, value[0] ? value : "—");
    fputs(d->row_close, f);
}

void rpt_config_tables(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                       const char *budgets_heading)
{
    static const char *const settings[] = {"setting", "value"};
    static const char *const budgets[] = {"channel", "band", "slope", "floor", "source"};
    const struct rpt_run *run = &r->run;
    const char *kv[][2] = {{"schema", run->schema},   {"version", run->version},
                           {"command", run->command}, {"started", run->started},
                           {"host", run->hostname},   {"device", run->device},
                           {"preset", run->preset},   {"modes", run->modes},
                           {"inject", run->inject},   {"shard", run->shard}};
    char a[96];
    rpt_table_head(d, f, settings, LG_ARRAY_LEN(settings));
    for (size_t k = 0; k < LG_ARRAY_LEN(kv); k++) setting_row(d, f, kv[k][0], kv[k][1]);
    snprintf(a, sizeof a, "%d measured + %d warm-up, %d steps each", run->sessions, run->warmup,
             run->steps);
    setting_row(d, f, "sessions", a);
    snprintf(a, sizeof a, "%llu", (unsigned long long)run->seed);
    setting_row(d, f, "seed", a);
    setting_row(d, f, "stacks", run->stacks ? "on" : "off");
    snprintf(a, sizeof a, "%d", run->cpus);
    setting_row(d, f, "cpus", a);
    setting_row(d, f, "memory",
                run->mem_bytes == RPT_NONE ? "n/a"
                                           : lg_fmt_bytes(a, sizeof a, (double)run->mem_bytes));
    rpt_table_end(d, f);
    fputs(budgets_heading, f);
    rpt_table_head(d, f, budgets, LG_ARRAY_LEN(budgets));
    for (int ch = 0; ch < RPT_NCHANNELS; ch++) {
        const struct rpt_budget *bg = &run->budgets[ch];
        fputs(d->row_open, f);
        fputs(d->cell_open, f);
        d->code(f, rpt_channel_name(ch));
        fputs(d->cell_close, f);
        rpt_cell(d, f, true, rpt_fmt_figure(a, sizeof a, ch, bg->band, false));
        rpt_cell(d, f, true, rpt_fmt_figure(a, sizeof a, ch, bg->slope, false));
        rpt_cell(d, f, true, rpt_fmt_figure(a, sizeof a, ch, bg->floor, false));
        rpt_cell(d, f, false, bg->source);
        fputs(d->row_close, f);
    }
    rpt_table_end(d, f);
}

char *rpt_cut_short(const struct rpt_results *r, char *buf, size_t size)
{
    snprintf(buf, size, "results end after %d session%s without a verdict line%s", r->n_sessions,
             r->n_sessions == 1 ? "" : "s",
             r->truncated_lines ? "; the last line was cut mid-write and skipped" : "");
    return buf;
}
