/* plot.h — the figures drawn from a run's results with gnuplot (PNG and SVG), and the gnuplot
 * helpers every figure of reports/ is drawn with (the history's too: history_plot.c). */
#ifndef LG_PLOT_H
#define LG_PLOT_H

#include <stdio.h>

#include "results.h"

enum rpt_figure {
    RPT_FIG_DELTAS = 0, /* per-session deltas against baseline, a panel per channel, budget bands */
    RPT_FIG_LEAKS,      /* leaked bytes per tag class per session, stacked */
    RPT_FIG_TIMELINE,   /* samples within sessions: the sawtooth (healthy) or staircase (leak) */
    RPT_FIG_TREND,      /* soak runs: each trend channel's series with its Theil–Sen line */
    RPT_NFIGURES
};
const char *rpt_figure_name(enum rpt_figure f);  /* "deltas": files deltas.png, deltas.svg */
const char *rpt_figure_title(enum rpt_figure f); /* "Per-session deltas against baseline" */
/* Pixel size of a figure's PNG (and of its SVG canvas). */
void rpt_figure_size(enum rpt_figure f, int *width, int *height);
/* Whether the results hold what the figure needs: deltas and leaks need a session; the
 * timeline needs samples; the trend needs a soak run with a verdict that has a slope. */
bool rpt_figure_applies(const struct rpt_results *r, enum rpt_figure f);

/* Runs gnuplot (found on PATH) to write every applicable figure as dir/<name>.png and
 * dir/<name>.svg. LG_EUNAVAIL with "gnuplot not found: apt-get install gnuplot-nox" when
 * it is missing; LG_EINTERNAL with gnuplot's own message when it fails. */
int rpt_plot_all(const struct rpt_results *r, const char *dir);
/* The same for one figure (it must apply). */
int rpt_plot(const struct rpt_results *r, enum rpt_figure f, const char *dir);

/* ---- gnuplot ------------------------------------------------------------------------------ */

/* A human byte unit for one plot, picked from the data's range. */
struct rpt_unit {
    double div;       /* bytes per unit */
    const char *name; /* "B", "KiB", "MiB", "GiB" */
};
struct rpt_unit rpt_unit_for(double max_abs);

/* Common style of every figure: reset, encoding, grid, tics. */
void rpt_gp_preamble(FILE *gp);
/* Shades the warm-up sessions (from object/label number `first`) with a "warm-up" label at
 * height label_y (graph coordinates). */
void rpt_gp_warmup(FILE *gp, const struct rpt_results *r, int first, double label_y);
/* The run in a few words for a figure's title: "run · tiny · fp32,int8 · cpu · LEAK". */
void rpt_gp_run_title(FILE *gp, const struct rpt_results *r, const char *what);
/* Opens tmp/name for a data file. */
int rpt_gp_data(FILE **out, const char *tmp, const char *name, char *path, size_t size);
/* Writes v/div or NaN (for RPT_NONE). */
void rpt_gp_val(FILE *df, int64_t v, double div);

/* A figure to draw: dir/<name>.png and dir/<name>.svg at w x h pixels. */
struct rpt_gp_job {
    const char *name;
    int w, h;
};
/* Writes job k's gnuplot commands to gp and its data files into tmp. */
typedef int (*rpt_gp_script)(const void *ctx, int k, const char *tmp, FILE *gp);
/* Draws n figures with one gnuplot run (found on PATH) in a scratch directory inside dir, and
 * moves each PNG and SVG into dir once it is whole. LG_EUNAVAIL when gnuplot is missing. */
int rpt_gp_render(const struct rpt_gp_job *jobs, int n, rpt_gp_script script, const void *ctx,
                  const char *dir);

#endif
