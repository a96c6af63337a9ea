/* soak_trend.h — the soak's trend test, streamed in O(window) memory: per statistical channel
 * a ring of the last W deltas judged by the run verdict's rules (verdict.h) after every
 * session — the whole window (a slow leak) and its last RPT_SOAK_SHORT sessions (a leak that
 * starts late, caught within about ten sessions) — plus a long series over the whole soak,
 * halved by averaging pairs whenever it fills, whose steps that never come back catch a leak
 * that comes every K sessions (a checkpoint kept every Nth session) however long K is. Exact
 * channels are streamed at zero tolerance with attribution. `leakgate soak` runs it live;
 * `report` and `merge` replay it over a shard that died before its verdict line.
 * docs/soak.md justifies the choices.
 *
 * Worked example (what `leakgate soak --sessions 100 --window 50` does with it):
 *
 *   struct rpt_soak_trend t;
 *   rpt_soak_trend_init(&t, 50, budgets);         // buffers allocated once
 *   for each session s (warm-up first, deltas against its preset's baseline):
 *       unsigned fired = rpt_soak_trend_add(&t, &s);  // bit c: channel c alarmed now
 *   struct rpt_verdict v = {.required = required};
 *   rpt_soak_trend_verdict(&t, &v);               // per-channel verdicts, then rpt_conclude
 *   rpt_soak_trend_fini(&t);
 */
#ifndef LG_SOAK_TREND_H
#define LG_SOAK_TREND_H

#include "verdict.h"

#define RPT_SOAK_MIN_WINDOW     5
#define RPT_SOAK_MAX_WINDOW     2000
#define RPT_SOAK_DEFAULT_WINDOW 50
#define RPT_SOAK_SHORT          10  /* the recent sub-window judged after every session */
#define RPT_SOAK_LONG           512 /* points of the long series (each the mean of 2^k sessions) */

/* One statistical channel. */
struct rpt_soak_channel {
    double *ring; /* window deltas, oldest at (head - n) mod window */
    int n, head;
    int n_values;   /* measured sessions that had a value */
    double before;  /* the delta just before the window's oldest (0: baseline) */
    double *lng;    /* the long series: RPT_SOAK_LONG points */
    int n_lng, per; /* points, sessions per point (a power of two) */
    double acc;     /* sum of the sessions of the point being built */
    int n_acc;
    int trend_at, steps_at; /* session index of the first alarm of each kind; -1: none */
    double trend_slope_at, trend_lo_at; /* the window's slope and bound when the trend fired */
    int trend_window_at;    /* sessions of the window that fired (W or RPT_SOAK_SHORT) */
    char trend_why[400];    /* the rule that fired, in the verdict's words */
    struct rpt_steps steps; /* the long series' steps, as of the last check */
    double slope, slope_lo; /* the latest window's slope and lower bound (metrics) */
};

/* An exact channel, streamed: no per-session array. */
struct rpt_soak_exact {
    int bad, first;     /* sessions that left something; the first one (-1: none) */
    int missing;        /* sessions without the figure after its first: then not measured */
    bool seen;          /* a session had the figure (those before the first left nothing of it) */
    int64_t suppressed; /* what suppression rules took from it, every session */
    int64_t total, max;
};

struct rpt_soak_trend {
    int window, n_all, n_measured;
    int last_index; /* the index of the last session fed */
    struct rpt_budget budgets[RPT_NCHANNELS];
    struct rpt_soak_channel ch[RPT_NCHANNELS];
    struct rpt_soak_exact ex[3]; /* tagged_host, tagged_device, refs */
    struct rpt_series attr;      /* attribution only (worst_* and device; no arrays) */
    double *scratch;             /* `window` doubles: a window in session order */
};

/* Allocates every buffer once; the caller frees them with rpt_soak_trend_fini. */
int rpt_soak_trend_init(struct rpt_soak_trend *t, int window, const struct rpt_budget *budgets);
void rpt_soak_trend_fini(struct rpt_soak_trend *t);
/* Feeds a session: warm-up sessions feed the exact channels only; measured ones also every
 * statistical channel (their rpt_session_value). Returns a bit (1u << channel) for every
 * channel one of whose alarms fired for the first time at this session. Allocates nothing
 * that outlives the call. */
unsigned rpt_soak_trend_add(struct rpt_soak_trend *t, const struct rpt_session *s);
/* Whether a channel has alarmed so far (statistical: window trend or steps; exact: any). */
bool rpt_soak_alarmed(const struct rpt_soak_trend *t, enum rpt_channel c);
/* The soak's verdict: exact channels at zero tolerance with attribution; statistical channels
 * leak when an alarm fired (saturating when a trend alarm's growth has since stopped: the
 * final window, which began after the alarm, is flat — never over an alarm of the final
 * window's own sessions), else the final window's judgement (a level above the band with no
 * growth over the window and a flat late half: saturating, not inconclusive). Then
 * rpt_conclude with v->required, sessions_planned, stopped (the caller's). */
void rpt_soak_trend_verdict(const struct rpt_soak_trend *t, struct rpt_verdict *v);
/* Judges a soak's results by replaying its sessions through the trend test, in place: those
 * with no verdict line (a shard killed without a chance to write one; the verdict is partial),
 * or, again true, those whose verdict line rpt_results_check refused. */
int rpt_soak_judge_results(struct rpt_results *r, int window, bool again);

#endif
