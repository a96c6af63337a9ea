/* verdict.h — the verdict engine: from per-session measurements to pass / leak / saturating /
 * inconclusive, one channel at a time, with the figure, the budget and the reason.
 *
 * Worked example:
 *
 *   double y[40];                         // rss delta against baseline, per measured session
 *   struct hx_trend tr;
 *   hx_theil_sen(y, 40, 0.95, &tr);       // slope 262144 B/session, 95% CI [250000, 270000]
 *   struct rpt_channel_verdict v;
 *   hx_judge_statistical(RPT_CH_RSS, y, 40, &budget, &v);   // v.status == RPT_LEAK, v.why: ...
 *
 * Exact channels (tagged bytes born in a session and still live; unbalanced references) fail
 * at zero tolerance. Statistical channels fail when the Theil–Sen slope's lower confidence
 * bound exceeds the per-session budget AND the late-vs-early median shift exceeds the floor.
 * Growth whose late half is flat is "saturating"; a slope above budget that is not significant,
 * or a late median above the band with no trend, is "inconclusive" (run more sessions).
 */
#ifndef LG_VERDICT_H
#define LG_VERDICT_H

#include "results.h"

struct hx_trend {
    int n;
    double slope;          /* Theil–Sen: median of pairwise slopes, units per session */
    double lo, hi;         /* confidence interval of the slope (Sen 1968, Kendall's S variance) */
    double intercept;      /* median(y - slope * i) */
    double early, late;    /* medians of the first and last thirds */
    double shift;          /* late - early */
};

/* Fits y[0..n) against 0..n-1. conf: confidence level (0.95). Needs n >= 2; n < 2 gives a
 * zero slope with an infinite interval. Uses n(n-1)/2 doubles of temporary heap memory, freed
 * before it returns. */
void hx_theil_sen(const double *y, int n, double conf, struct hx_trend *out);

/* Median of v[0..n) (copies; v is not reordered). */
double hx_median(const double *v, int n);

/* Judges a statistical channel series (deltas against baseline, one per measured session). */
void hx_judge_statistical(enum rpt_channel ch, const double *y, int n, const struct rpt_budget *b,
                          struct rpt_channel_verdict *out);

/* Judges an exact channel: leaked[i] is what session i left alive (bytes, or objects for the
 * refs channel); `worst` names the largest offender for the why text ("varmap/out.weight"). */
void hx_judge_exact(enum rpt_channel ch, const int64_t *leaked, int n, const char *worst,
                    struct rpt_channel_verdict *out);

/* The same from running counts (soak keeps no per-session arrays): `bad` sessions of `n` left
 * something, the first being `first`; `total` and `max` over them. */
void hx_judge_exact_counts(enum rpt_channel ch, int bad, int n, int first, int64_t total,
                           int64_t max, const char *worst, struct rpt_channel_verdict *out);

/* Combines channel verdicts into the run's: any leak → leak (exit 1); else any inconclusive →
 * inconclusive (exit 3); else pass (exit 0). Fills v->status, exit_code and summary. */
void hx_overall(struct rpt_verdict *v);

#endif
