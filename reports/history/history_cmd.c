/* history_cmd.c — `leakgate history FILE`: per workload, the records as a per-commit table,
 * drift over the last N records, and with -o DIR the figures and history.html (self-contained:
 * the SVGs inline). Exit: 1 drift, 3 a workload with too few records to judge, 0 otherwise;
 * 2 usage or input error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "history_plot.h"
#include "render.h"
#include "rpt_text.h"

#define DEFAULT_LAST 10
#define MAX_BUDGETS  16

static const char usage[] =
    "usage: leakgate history FILE [-o DIR] [--workload W] [--last N] [--drift-budget M=V]...\n"
    "                        [--no-plots]\n"
    "  Reads a history file (run, exec and soak append to it with --history FILE) and prints,\n"
    "  per workload, a table of its records (one per commit) and the figures that drift over the\n"
    "  last N records (default 10): a Theil-Sen trend of each figure — per-session growth and\n"
    "  level per channel (growth.rss, level.je_allocated), peaks (peak.total, peak.act),\n"
    "  retained and peak bytes per tag (tag.T, peaktag.T) — whose 95% interval is above zero\n"
    "  and whose rise over the window exceeds its budget (default: 10% of where it starts, and\n"
    "  at least 64 KiB for peaks, 1 MiB for levels, 4 KiB/session for growth and tags).\n"
    "  -o DIR             the figures (PNG, SVG) and history.html into DIR\n"
    "  --workload W       only that workload (as the table names it)\n"
    "  --last N           judge the last N records of each workload (0: all)\n"
    "  --drift-budget M=V a figure's budget, SIZE or PCT% (M is a glob: peak.*=5%)\n"
    "  --no-plots         no gnuplot figures (history.html then has none)\n"
    "  Exit: 0 no drift, 1 drift, 2 usage or input error, 3 a workload with fewer than 4\n"
    "  records (no trend yet), or none of whose figures has 4 records with a value.\n";

struct opts {
    const char *file, *dir, *workload;
    int last;
    bool plots;
    int nb;
    struct rpt_drift_budget b[MAX_BUDGETS];
};

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "leakgate history: %s%s%s%s\n%s", what, arg ? " '" : "", arg ? arg : "",
            arg ? "'" : "", usage);
    return 2;
}

/* Parses argv into o; returns -1 to go on, else the exit status. */
static int parse(struct opts *o, int argc, char **argv)
{
    *o = (struct opts){.last = DEFAULT_LAST, .plots = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = !strcmp(a, "-o") || !strcmp(a, "--workload") || !strcmp(a, "--last") ||
                     !strcmp(a, "--drift-budget");
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (takes && !v) return usage_error("option needs a value:", a);
        if (!strcmp(a, "-o")) {
            o->dir = argv[++i];
        } else if (!strcmp(a, "--workload")) {
            o->workload = argv[++i];
        } else if (!strcmp(a, "--last")) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || end == v || n < 0 || n > 1000000)
                return usage_error("--last: not a count of records:", v);
            o->last = (int)n;
        } else if (!strcmp(a, "--drift-budget")) {
            if (o->nb == MAX_BUDGETS) return usage_error("at most 16 --drift-budget", NULL);
            if (rpt_drift_budget_parse(argv[++i], &o->b[o->nb++]) != LG_OK)
                return usage_error(lg_errmsg(), NULL);
        } else if (!strcmp(a, "--no-plots")) {
            o->plots = false;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option", a);
        } else if (!o->file) {
            o->file = a;
        } else {
            return usage_error("unexpected argument", a);
        }
    }
    if (!o->file) return usage_error("missing the history FILE", NULL);
    if (o->dir && !*o->dir) return usage_error("-o: the directory is empty", NULL);
    return -1;
}

/* ---- the table ----------------------------------------------------------------------------- */

static const char *cell(char *buf, size_t size, double v, bool per_session)
{
    if (!isfinite(v)) return "—";
    if (!per_session) return lg_fmt_bytes(buf, size, v);
    rpt_fmt_sbytes(buf, size, v);
    if (strlen(buf) + 2 < size) strcat(buf, "/s");
    return buf;
}

static void print_table(const struct rpt_history_view *v, FILE *f)
{
    static const char *const cols[][2] = {
        {"growth.je_allocated", "je_alloc/s"},
        {"growth.rss", "rss/s"},
        {"growth.tagged_host", "tagged/s"},
        {"peak.total", "peak"},
        {"level.rss", "rss level"},
    };
    fprintf(f, "  %3s  %-12s %-12s %-20s %-12s %5s", "#", "commit", "branch", "date", "verdict",
            "meas");
    for (size_t c = 0; c < LG_ARRAY_LEN(cols); c++) fprintf(f, " %14s", cols[c][1]);
    fputc('\n', f);
    for (int i = 0; i < v->n; i++) {
        const struct rpt_history_record *r = &v->h->rec[v->idx[i]];
        int meas = 0;
        for (int k = 0; k < r->n_sessions; k++) meas += r->kinds[k] == 'm';
        fprintf(f, "  %3d%s %-12.12s %-12.12s %-20.20s %-12s %5d", i + 1,
                i >= v->n - v->window ? "*" : " ", r->commit[0] ? r->commit : "?", r->branch,
                r->date, rpt_status_word(r->status), meas);
        for (size_t c = 0; c < LG_ARRAY_LEN(cols); c++) {
            char b[48];
            fprintf(f, " %14s", cell(b, sizeof b, rpt_history_figure(r, cols[c][0]), c < 3));
        }
        fputc('\n', f);
    }
}

/* Prints the drifting figures in full and counts the others; returns the drifting count and
 * sets *judged to the figures judged (drifting or within budget). */
static int print_drift(const struct rpt_history_view *v, int *judged, FILE *f)
{
    int drifting = 0, within = 0, few = 0;
    for (int i = 0; i < v->n_drift; i++) {
        const struct rpt_drift *d = &v->drift[i];
        if (d->status == RPT_LEAK) {
            fprintf(f, "  DRIFT  %-32s %s\n", d->metric, d->why);
            drifting++;
        }
        within += d->status == RPT_PASS;
        few += d->status == RPT_INCONCLUSIVE;
    }
    fprintf(f, "  %d figure(s) drifting, %d within budget%s", drifting, within, few ? ", " : "");
    if (few) fprintf(f, "%d with fewer than %d records", few, RPT_DRIFT_MIN);
    fputc('\n', f);
    *judged = drifting + within;
    if (!*judged)
        fprintf(f, "  no figure has %d records with a value: nothing judged\n", RPT_DRIFT_MIN);
    return drifting;
}

/* ---- history.html ---------------------------------------------------------------------------- */

static void html_view(const struct rpt_history_view *v, int k, const char *dir, bool plots, FILE *f)
{
    fputs("<section>\n<h2>Workload <code>", f);
    rpt_put_xml(f, v->workload);
    fprintf(f,
            "</code></h2>\n<p>%d record(s); drift judged over the last %d.</p>\n<table>\n"
            "<tr><th>#</th><th>commit</th><th>branch</th><th>date</th><th>verdict</th>"
            "<th>summary</th></tr>\n",
            v->n, v->window);
    for (int i = 0; i < v->n; i++) {
        const struct rpt_history_record *r = &v->h->rec[v->idx[i]];
        fprintf(f, "<tr><td class=\"num\">%d</td><td><code>", i + 1);
        rpt_put_xml(f, r->commit);
        fputs("</code></td><td>", f);
        rpt_put_xml(f, r->branch);
        fprintf(f, "</td><td>%s</td><td><span class=\"badge %s\">%s</span></td><td>", r->date,
                r->status == RPT_PASS || r->status == RPT_SATURATING ? "pass"
                : r->status == RPT_LEAK                              ? "leak"
                                                                     : "warn",
                rpt_status_word(r->status));
        rpt_put_xml(f, r->summary);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n<h3>Drift</h3>\n<table>\n<tr><th>figure</th><th>status</th><th>records</th>"
          "<th>why</th></tr>\n",
          f);
    for (int i = 0; i < v->n_drift; i++) {
        const struct rpt_drift *d = &v->drift[i];
        fprintf(f, "<tr><td><code>");
        rpt_put_xml(f, d->metric);
        fprintf(f,
                "</code></td><td><span class=\"badge %s\">%s</span></td><td class=\"num\">%d"
                "</td><td>",
                d->status == RPT_LEAK   ? "leak"
                : d->status == RPT_PASS ? "pass"
                                        : "na",
                d->status == RPT_LEAK   ? "DRIFT"
                : d->status == RPT_PASS ? "within"
                                        : "too few",
                d->n);
        rpt_put_xml(f, d->why);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    for (int fig = 0; fig < RPT_HIST_NFIGS; fig++) {
        char name[64];
        rpt_history_fig_name(k, fig, name, sizeof name);
        rpt_html_figure(f, plots ? dir : NULL, name, rpt_history_fig_title(fig));
    }
    fputs("</section>\n", f);
}

static int write_html(const struct rpt_history_view *v, int nv, const struct opts *o, int drift)
{
    FILE *f = NULL;
    char path[4200];
    int rc = rpt_open_out(&f, o->dir, "history.html", path, sizeof path);
    if (rc != LG_OK) return rc;
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>leakgate history</title>\n<style>\n%s</style>\n</head>\n<body>\n"
            "<header class=\"verdict %s\"><div class=\"word\">%s</div><p>",
            rpt_html_style(), drift ? "leak" : "pass", drift ? "DRIFT" : "NO DRIFT");
    rpt_put_xml(f, o->file);
    fprintf(f, ": %d workload(s)</p></header>\n", nv);
    for (int k = 0; k < nv; k++) html_view(&v[k], k, o->dir, o->plots, f);
    fputs("</body>\n</html>\n", f);
    return rpt_close_out(f, path);
}

/* ---- the command ----------------------------------------------------------------------------- */

static void view_fini(struct rpt_history_view *v)
{
    free(v->idx);
    free(v->metrics);
    free(v->drift);
}

static int view_init(struct rpt_history_view *v, const struct rpt_history *h, const char *wl,
                     const struct opts *o)
{
    int *win = NULL, nw = 0;
    memset(v, 0, sizeof *v);
    v->h = h;
    v->workload = wl;
    int rc = rpt_history_window(h, wl, 0, &v->idx, &v->n);
    if (rc == LG_OK) rc = rpt_history_window(h, wl, o->last, &win, &nw);
    v->window = nw;
    free(win);
    if (rc == LG_OK) rc = rpt_history_metrics(h, wl, &v->metrics, &v->n_metrics);
    if (rc == LG_OK) rc = rpt_history_drift(h, wl, o->last, o->b, o->nb, &v->drift, &v->n_drift);
    return rc;
}

/* The distinct workloads, in the order they first appear (or only o->workload). */
static int workloads(const struct rpt_history *h, const char *only, const char ***out, int *n)
{
    *n = 0;
    *out = calloc((size_t)h->n + 1, sizeof **out);
    if (!*out) return lg_fail(LG_ENOMEM, "out of memory");
    for (int i = 0; i < h->n; i++) {
        const char *w = h->rec[i].workload;
        bool seen = false;
        for (int k = 0; k < *n; k++) seen |= !strcmp((*out)[k], w);
        if (!seen && (!only || !strcmp(only, w))) (*out)[(*n)++] = w;
    }
    return LG_OK;
}

static int report(const struct rpt_history *h, const struct opts *o)
{
    const char **wl = NULL;
    int nw = 0, drift = 0, few = 0, status = 2;
    struct rpt_history_view *v = NULL;
    struct lg_dir_lock lock = {-1};
    int rc = workloads(h, o->workload, &wl, &nw);
    if (rc == LG_OK && !(v = calloc((size_t)nw + 1, sizeof *v))) rc = LG_ENOMEM;
    for (int k = 0; k < nw && rc == LG_OK; k++) {
        rc = view_init(&v[k], h, wl[k], o);
        if (rc != LG_OK) break;
        printf("\nworkload \"%s\": %d record(s); * marks the %d judged for drift\n", wl[k], v[k].n,
               v[k].window);
        print_table(&v[k], stdout);
        int judged;
        drift += print_drift(&v[k], &judged, stdout);
        few += v[k].window < RPT_DRIFT_MIN || judged == 0;
    }
    if (rc == LG_OK && nw == 0)
        printf("no record%s%s%s\n", o->workload ? " of workload \"" : "",
               o->workload ? o->workload : "", o->workload ? "\"" : "");
    if (rc == LG_OK && o->dir) {
        rc = lg_mkdirs(o->dir);
        if (rc == LG_OK) rc = lg_dir_lock(&lock, o->dir);
        for (int k = 0; k < nw && rc == LG_OK && o->plots; k++)
            rc = rpt_history_plot(&v[k], k, o->dir);
        if (rc == LG_OK) rc = write_html(v, nw, o, drift);
        if (rc == LG_OK) printf("\nleakgate history: %s/history.html\n", o->dir);
    }
    if (rc != LG_OK)
        fprintf(stderr, "leakgate history: %s\n", lg_errmsg());
    else
        status = drift ? 1 : (few || nw == 0) ? 3 : 0;
    if (rc != LG_OK) status = rc == LG_EUNAVAIL ? 2 : lg_exit_code(rc);
    for (int k = 0; v && k < nw; k++) view_fini(&v[k]);
    free(v);
    free(wl);
    lg_dir_unlock(&lock);
    return status;
}

int rpt_cmd_history(int argc, char **argv)
{
    struct opts o;
    int status = parse(&o, argc, argv);
    if (status >= 0) return status;
    struct rpt_history *h = NULL;
    if (rpt_history_load(&h, o.file) != LG_OK) {
        fprintf(stderr, "leakgate history: %s\n", lg_errmsg());
        return lg_exit_code(lg_errcode());
    }
    printf("leakgate history %s: %d record(s)", o.file, h->n);
    if (h->torn)
        printf("; %d line(s) a crash cut short skipped (the first: line %d)", h->torn,
               h->first_torn);
    putchar('\n');
    status = report(h, &o);
    rpt_history_free(h);
    return status;
}
