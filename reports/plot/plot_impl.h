/* plot_impl.h — shared by plot.c (running gnuplot) and plot_figures.c (the figures' scripts). */
#ifndef LG_PLOT_IMPL_H
#define LG_PLOT_IMPL_H

#include "plot.h"
#include "rpt_text.h"
#include "summary.h"

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

#endif
