/* history_plot.c — the history's figures (gnuplot, PNG and SVG, through rpt_gp_render): for one
 * workload, over its records in file order (one x tick per record, named by its commit), the
 * per-session growth of each channel, the level each channel ended at with the peak, the peaks
 * per tag class, and the top tags (retained bytes per session, and peaks). Each panel draws the
 * window's Theil–Sen line; a drifting figure's panel says DRIFT in red. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "history_plot.h"
#include "plot.h"
#include "rpt_text.h"

#define MAX_PANELS 8
#define MAX_LINES  6

static const char *const fig_suffix[RPT_HIST_NFIGS] = {"growth", "levels", "peaks", "tags"};
static const char *const fig_title[RPT_HIST_NFIGS] = {
    "Per-session growth over commits", "Levels after the sessions, and the peak, over commits",
    "Peak tagged bytes per tag class over commits", "Top tags over commits"};

void rpt_history_fig_name(int k, int fig, char *buf, size_t size)
{
    snprintf(buf, size, "history-%d-%s", k + 1, fig_suffix[fig]);
}

const char *rpt_history_fig_title(int fig) { return fig_title[fig]; }

static const struct rpt_drift *drift_of(const struct rpt_history_view *v, const char *metric)
{
    for (int i = 0; i < v->n_drift; i++)
        if (!strcmp(v->drift[i].metric, metric)) return &v->drift[i];
    return NULL;
}

/* The largest |figure| of a metric over the workload's records. */
static double largest(const struct rpt_history_view *v, const char *metric)
{
    double m = 0;
    for (int i = 0; i < v->n; i++) {
        double x = rpt_history_figure(&v->h->rec[v->idx[i]], metric);
        if (isfinite(x)) m = fmax(m, fabs(x));
    }
    return m;
}

/* One data file per metric: "index value status" per record, then the window's trend line. */
static int write_data(const struct rpt_history_view *v, const char *tmp, const char *metric, int id,
                      double div, char *path, size_t size)
{
    FILE *df = NULL;
    char name[32];
    snprintf(name, sizeof name, "h%d.dat", id);
    int rc = rpt_gp_data(&df, tmp, name, path, size);
    if (rc != LG_OK) return rc;
    for (int i = 0; i < v->n; i++) {
        const struct rpt_history_record *r = &v->h->rec[v->idx[i]];
        double x = rpt_history_figure(r, metric);
        fprintf(df, "%d %.9g %d\n", i, isfinite(x) ? x / div : NAN, r->status == RPT_LEAK);
    }
    const struct rpt_drift *d = drift_of(v, metric);
    fputs("\n\n", df); /* index 1: the trend line over the window */
    if (d && d->n >= RPT_DRIFT_MIN)
        fprintf(df, "%d %.9g\n%d %.9g\n", v->n - v->window, d->first / div, v->n - 1,
                d->last / div);
    else
        fputs("0 NaN\n", df);
    return rpt_close_out(df, path);
}

static void x_axis(FILE *gp, const struct rpt_history_view *v)
{
    fprintf(gp, "set xrange [-0.5:%g]\nset xtics rotate by 45 right font ',8' (", v->n - 0.5);
    int step = v->n > 30 ? (v->n + 29) / 30 : 1;
    for (int i = 0; i < v->n; i += step) {
        const struct rpt_history_record *r = &v->h->rec[v->idx[i]];
        char label[16];
        snprintf(label, sizeof label, "%.7s", r->commit[0] ? r->commit : "?");
        fputs(i ? ", " : "", gp);
        rpt_put_gp(gp, label);
        fprintf(gp, " %d", i);
    }
    fputs(")\n", gp);
}

/* A panel with nothing to draw, saying so (gnuplot refuses a plot of no defined point). */
static void empty_panel(FILE *gp, const char *title)
{
    fputs("set title ", gp);
    rpt_put_gp(gp, title);
    fputs(".': none in any record'\nset yrange [0:1]\nset key off\nplot 0 with lines lc rgb "
          "'#ffffff' notitle\nset autoscale y\nset key on\n",
          gp);
}

/* One panel of one or more metrics: points per record (red where the run failed), lines, and
 * each metric's trend line. */
static int panel(FILE *gp, const struct rpt_history_view *v, const char *tmp, const char *title,
                 char (*metrics)[RPT_METRIC_MAX], int n, int *id)
{
    static const char *const colors[] = {"#2e86c1", "#8e44ad", "#16a085",
                                         "#d35400", "#7f8c8d", "#b7950b"};
    double m = 0;
    bool drifting = false;
    for (int k = 0; k < n; k++) {
        m = fmax(m, largest(v, metrics[k]));
        const struct rpt_drift *d = drift_of(v, metrics[k]);
        drifting |= d && d->status == RPT_LEAK;
    }
    bool count = n == 1 && strstr(metrics[0], "refs");
    struct rpt_unit u = count ? (struct rpt_unit){1.0, "objects"} : rpt_unit_for(m);
    fputs("set title ", gp);
    rpt_put_gp(gp, title);
    fprintf(gp, "%s tc rgb '%s'\nset ylabel '%s'\n", drifting ? ".' — DRIFT'" : "",
            drifting ? "#c0392b" : "#222222", u.name);
    fputs("plot ", gp);
    for (int k = 0; k < n; k++) {
        char path[4200];
        int rc = write_data(v, tmp, metrics[k], (*id)++, u.div, path, sizeof path);
        if (rc != LG_OK) return rc;
        const char *c = colors[k % LG_ARRAY_LEN(colors)];
        fputs(k ? ", " : "", gp);
        rpt_put_gp(gp, path);
        fprintf(gp, " index 0 using 1:2 with linespoints lw 1.5 pt 7 ps 0.8 lc rgb '%s' title ", c);
        rpt_put_gp(gp, metrics[k]);
        fputs(", ", gp);
        rpt_put_gp(gp, path);
        fputs(" index 0 using 1:($3 == 1 ? $2 : NaN) with points pt 7 ps 1.2 lc rgb '#c0392b' "
              "notitle, ",
              gp);
        rpt_put_gp(gp, path);
        fprintf(gp, " index 1 using 1:2 with lines dt 2 lw 1.5 lc rgb '%s' notitle", c);
    }
    fputc('\n', gp);
    return LG_OK;
}

/* The metrics of one figure, up to cap, the largest first for lines of one panel. */
static int pick(const struct rpt_history_view *v, int fig, char (*out)[RPT_METRIC_MAX], int cap)
{
    int n = 0;
    const char *prefix = fig == 0 ? "growth." : fig == 1 ? "level." : fig == 2 ? "peak." : "tag.";
    for (int i = 0; i < v->n_metrics && n < cap; i++) {
        const char *m = v->metrics[i];
        bool take = !strncmp(m, prefix, strlen(prefix)) || (fig == 1 && !strcmp(m, "peak.total")) ||
                    (fig == 3 && !strncmp(m, "peaktag.", 8));
        if (fig == 2 && !strcmp(m, "peak.total")) take = true;
        if (take && (fig == 0 || largest(v, m) > 0)) lg_strlcpy(out[n++], m, RPT_METRIC_MAX);
    }
    return n;
}

int rpt_history_fig_script(const struct rpt_history_view *v, int fig, const char *tmp, FILE *gp)
{
    char metrics[MAX_PANELS * MAX_LINES][RPT_METRIC_MAX];
    int n = pick(v, fig, metrics, fig < 2 ? MAX_PANELS : MAX_LINES * 2), id = fig * 1000;
    rpt_gp_preamble(gp);
    fputs("set ytics font ',8'\nset format y '%.4g'\n", gp);
    x_axis(gp, v);
    int rows = fig < 2 ? LG_MAX(n, 1) : fig == 2 ? 1 : 2;
    fputs("set multiplot layout ", gp);
    fprintf(gp, "%d,1 title ", rows);
    char title[600];
    snprintf(title, sizeof title, "%s — %s", fig_title[fig], v->workload);
    rpt_put_gp(gp, title);
    fputc('\n', gp);
    int rc = LG_OK;
    if (n == 0) {
        empty_panel(gp, fig_title[fig]);
    } else if (fig < 2) {
        for (int k = 0; k < n && rc == LG_OK; k++)
            rc = panel(gp, v, tmp, metrics[k], &metrics[k], 1, &id);
    } else if (fig == 2) {
        rc = panel(gp, v, tmp, "peak per class", metrics, LG_MIN(n, MAX_LINES), &id);
    } else {
        char kept[2][MAX_LINES][RPT_METRIC_MAX];
        int nk[2] = {0, 0};
        for (int k = 0; k < n; k++) {
            int w = !strncmp(metrics[k], "peaktag.", 8);
            if (nk[w] < MAX_LINES) lg_strlcpy(kept[w][nk[w]++], metrics[k], RPT_METRIC_MAX);
        }
        static const char *const titles[] = {"retained bytes per session, by tag",
                                             "peak bytes, by tag"};
        for (int w = 0; w < 2 && rc == LG_OK; w++) {
            if (nk[w])
                rc = panel(gp, v, tmp, titles[w], kept[w], nk[w], &id);
            else
                empty_panel(gp, titles[w]);
        }
    }
    fputs("unset multiplot\n", gp);
    return rc;
}

static int view_script(const void *ctx, int k, const char *tmp, FILE *gp)
{
    return rpt_history_fig_script(ctx, k, tmp, gp);
}

int rpt_history_plot(const struct rpt_history_view *v, int k, const char *dir)
{
    char names[RPT_HIST_NFIGS][64];
    struct rpt_gp_job jobs[RPT_HIST_NFIGS];
    char metrics[MAX_PANELS][RPT_METRIC_MAX];
    for (int f = 0; f < RPT_HIST_NFIGS; f++) {
        rpt_history_fig_name(k, f, names[f], sizeof names[f]);
        int rows = f < 2 ? LG_MAX(pick(v, f, metrics, MAX_PANELS), 1) : f == 2 ? 3 : 4;
        jobs[f] = (struct rpt_gp_job){names[f], 1000, 90 + 160 * rows};
    }
    return rpt_gp_render(jobs, RPT_HIST_NFIGS, view_script, v, dir);
}
