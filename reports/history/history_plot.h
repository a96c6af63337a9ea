/* history_plot.h — what the history command shows of one workload (private to reports/): its
 * records, its drift, its figures (history_plot.c) and its part of history.html. */
#ifndef LG_HISTORY_PLOT_H
#define LG_HISTORY_PLOT_H

#include "history_impl.h"

#define RPT_HIST_NFIGS 4 /* growth, levels, peaks, tags */

struct rpt_history_view {
    const struct rpt_history *h;
    const char *workload;
    int *idx; /* the workload's records, in file order */
    int n;
    int window; /* the last `window` of them are judged for drift */
    char (*metrics)[RPT_METRIC_MAX];
    int n_metrics;
    struct rpt_drift *drift;
    int n_drift;
};

/* "history-<k+1>-growth" and the like: figure fig of the k-th workload. */
void rpt_history_fig_name(int k, int fig, char *buf, size_t size);
const char *rpt_history_fig_title(int fig);
/* Writes figure fig's gnuplot commands and data (rpt_gp_script). */
int rpt_history_fig_script(const struct rpt_history_view *v, int fig, const char *tmp, FILE *gp);
/* Draws the workload's figures into dir (PNG and SVG). LG_EUNAVAIL without gnuplot. */
int rpt_history_plot(const struct rpt_history_view *v, int k, const char *dir);

#endif
