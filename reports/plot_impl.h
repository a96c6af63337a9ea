/* plot_impl.h — shared by plot.c (running gnuplot) and plot_figures.c (the figures' scripts). */
#ifndef LG_PLOT_IMPL_H
#define LG_PLOT_IMPL_H

#include "rpt_impl.h"

/* A human byte unit for one plot, picked from the data's range. */
struct rpt_unit {
    double div;       /* bytes per unit */
    const char *name; /* "B", "KiB", "MiB", "GiB" */
};
struct rpt_unit rpt_unit_for(double max_abs);

/* Writes a figure's gnuplot commands to gp (run once per terminal) and its data files into
 * tmp (a private scratch directory). The figure must apply. */
int rpt_fig_deltas(const struct rpt_results *r, const char *tmp, FILE *gp);
int rpt_fig_leaks(const struct rpt_results *r, const char *tmp, FILE *gp);
int rpt_fig_timeline(const struct rpt_results *r, const char *tmp, FILE *gp);
int rpt_fig_trend(const struct rpt_results *r, const char *tmp, FILE *gp);

/* The channels the deltas figure draws, in order; returns the count. */
int rpt_delta_channels(const struct rpt_results *r, enum rpt_channel *out);
/* The channels the trend figure draws (finite verdict slope), at most 4; returns the count. */
int rpt_trend_channels(const struct rpt_results *r, enum rpt_channel *out);

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
