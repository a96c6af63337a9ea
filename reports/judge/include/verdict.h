/* verdict.h — the verdict rules: from per-session measurements to pass / leak / saturating /
 * inconclusive, one channel at a time, with the figure, the budget and the reason, and the
 * run's verdict from its channels. `run`, `soak`, `merge`, `report` and `compare` all judge
 * with these functions (docs/design.md, "Verdicts and their evidence").
 *
 * Worked example (what `leakgate run` does with its sessions):
 *
 *   struct rpt_series ser;
 *   rpt_series_init(&ser, 42);                 // arrays sized once, before the baseline
 *   for each session s: rpt_series_add(&ser, &s);
 *   struct rpt_verdict v = {.required = rpt_default_required(false), .sessions_planned = 40};
 *   rpt_judge_series(&ser, budgets, &v);        // every channel, then rpt_conclude
 *   // v.status: RPT_PASS only when every required channel was measured over enough sessions
 *   // and returned to baseline; v.exit_code 0 pass, 1 leak, 3 inconclusive
 *   rpt_series_fini(&ser);
 *
 * Exact channels (tagged bytes born in a session and still live; unbalanced references) fail
 * at zero tolerance. A statistical channel fails on any of five rules, checked in order:
 *   1. gross growth: every measured session (at least 2) grew the channel by at least
 *      RPT_GROSS_FACTOR times its band;
 *   2. a trend: the Theil–Sen slope's lower 95% bound exceeds the slope budget and the
 *      late-vs-early median shift exceeds the floor — unless the growth is a held step (rule 4)
 *      or gradual growth confined to the first half (saturating);
 *   3. steps that recur: RPT_STEP_RECUR or more upward steps above the floor that never come
 *      back (a checkpoint kept every Nth session);
 *   4. a held step: a step still held at the last reading and kept RPT_KEPT_LEAK sessions or
 *      more — a leak that began late, or a retained block; kept fewer, the channel did not
 *      return to baseline and is inconclusive, naming the session;
 *   5. a steady rise: at least RPT_STEADY_MIN final sessions that (nearly) all rose by at least
 *      the channel's granularity, by increments of one size, with a slope interval above zero
 *      — a leak even below the budget.
 * Short of a leak, a channel whose last readings are not back in its band is inconclusive (or
 * saturating: grew early, flat late), and says it did not return to baseline (v->stayed). With
 * fewer measured sessions than rpt_min_sessions(budget), a channel that is not grossly
 * growing is inconclusive, never a pass.
 */
#ifndef LG_VERDICT_H
#define LG_VERDICT_H

#include "results.h"

#define RPT_GROSS_FACTOR 64 /* rule 1: per-session growth, in bands (docs/design.md justifies) */
#define RPT_STEP_RECUR   3  /* rule 3: persistent steps that make a leak */
#define RPT_MAX_STEPS    16 /* steps listed in a why (all are counted) */
#define RPT_KEPT_LEAK    4  /* rule 4: sessions a held step must be kept to be a leak */
#define RPT_STEADY_MIN   8  /* rule 5: fewest sessions of a steady rise */

/* ---- statistics ---------------------------------------------------------------------------- */

struct rpt_trend {
    int n;
    double slope;       /* Theil–Sen: median of pairwise slopes, units per session */
    double lo, hi;      /* confidence interval of the slope (Sen 1968, Kendall's S variance) */
    double intercept;   /* median(y - slope * i) */
    double early, late; /* medians of the first and last thirds */
    double shift;       /* late - early */
    bool failed;        /* out of memory: no slope (the channel is then inconclusive) */
};

/* Fits y[0..n) against 0..n-1. conf: confidence level (0.95). n < 2 gives a zero slope with an
 * infinite interval. Temporary heap memory, freed before it returns: the n(n-1)/2 pairwise
 * slopes up to 256 sessions, 3n doubles beyond (order statistics selected, not sorted). */
void rpt_theil_sen(const double *y, int n, double conf, struct rpt_trend *out);

/* Upward steps of a series (deltas against the baseline, which is 0): runs of consecutive
 * increments above the threshold max(floor, 4 noise) that never come back — the level of
 * every later segment stays above the highest level before the step by half the threshold. */
struct rpt_steps {
    int n;                      /* persistent steps */
    int at[RPT_MAX_STEPS];      /* position (0-based measured session) of the first n */
    double size[RPT_MAX_STEPS]; /* the level change each made */
    double total;               /* the sum of all of them */
    bool flat_between;          /* every segment between steps stays within the slope budget */
    double threshold;           /* what an increment had to exceed to start a step */
    double before;              /* the highest level before the first persistent step */
    double after;               /* the lowest level from it on */
    double within;              /* noise inside the segments (robust sigma of residuals) */
    int run;                    /* sessions in the first persistent step's run of increments */
};
/* Finds the steps of y[0..n); allocates n ints of temporary heap memory, freed before it
 * returns (none when n <= 1). */
void rpt_find_steps(const double *y, int n, const struct rpt_budget *b, struct rpt_steps *out);

/* ---- channels ------------------------------------------------------------------------------ */

/* Judges a statistical channel series (deltas against baseline, one per measured session). */
void rpt_judge_statistical(enum rpt_channel ch, const double *y, int n, const struct rpt_budget *b,
                           struct rpt_channel_verdict *out);
/* The same for a run whose suppression rules took `suppressed` tagged bytes that stayed (> 0):
 * their footprint shows in the allocator and page channels and cannot be netted out to the
 * byte, so a held step is bounded by the band instead of rules 4 and 5. */
void rpt_judge_statistical_sup(enum rpt_channel ch, const double *y, int n,
                               const struct rpt_budget *b, double suppressed,
                               struct rpt_channel_verdict *out);

/* Judges an exact channel: leaked[i] is what session i left alive (bytes, or objects for the
 * refs channel); `worst` names the largest offender for the why ("varmap/out.weight"). No
 * session at all is inconclusive. */
void rpt_judge_exact(enum rpt_channel ch, const int64_t *leaked, int n, const char *worst,
                     struct rpt_channel_verdict *out);
/* The same from running counts (a soak keeps no per-session arrays): `bad` sessions of `n`
 * left something, the first being `first`; `total` (saturating) and `max` over them. */
void rpt_judge_exact_counts(enum rpt_channel ch, int bad, int n, int first, int64_t total,
                            int64_t max, const char *worst, struct rpt_channel_verdict *out);
/* A passing exact channel whose sessions had `suppressed` bytes (objects, for refs) taken out by
 * suppression rules says so, instead of "every session freed what it allocated". */
void rpt_exact_note_suppressed(struct rpt_channel_verdict *v, int64_t suppressed);
/* Marks a channel not measured, with the reason. */
void rpt_channel_unavailable(struct rpt_channel_verdict *cv, enum rpt_channel c, const char *why);

/* ---- the run --------------------------------------------------------------------------------- */

/* The exit status of a verdict: 0 pass (or saturating), 1 leak, 3 inconclusive or unavailable,
 * 4 error. The one place a status becomes an exit code. */
int rpt_exit_code(enum rpt_status s);
/* Sets the run's status and its summary ("LEAK: ...", printf-style). */
void rpt_verdict_say(struct rpt_verdict *v, enum rpt_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Combines the channel verdicts (whose `required` flags it sets from v->required) into the
 * run's: any channel that leaks → leak (exit 1); else no measured session, a stopped run, or a
 * required channel that is not pass or saturating → inconclusive (exit 3), naming what lacked
 * what; else pass. Fills v->status, exit_code and summary (which names the required channels,
 * the optional ones unavailable, and budgets that were never measured). */
void rpt_conclude(struct rpt_verdict *v, const struct rpt_budget *budgets);

/* ---- exec's census and process tree (census.c, procs.c) ------------------------------------ */

/* Judges the census of sessions[0..n) (warm-up sessions' births are never judged) into cv;
 * cv->counted is false when no measured session was counted. budget: je_allocated's slope
 * budget (bytes a session), which recurring but sporadic keeps must reach to be a leak. */
void rpt_census_judge(const struct rpt_session *sessions, int n, int64_t budget,
                      struct rpt_census_verdict *cv);
/* The same from the last counted session alone, the run's first measured session given. */
void rpt_census_judge_session(const struct rpt_session *last, int first_measured, int64_t budget,
                              struct rpt_census_verdict *cv);

/* Every descendant of CMD over a run, with its RSS series (reports/procs.c): exec adds each
 * session as it ends, a report adds a loaded file's; both judge with rpt_procs_judge.
 *
 *   struct rpt_procs p = {0};
 *   for each session s: rpt_procs_add(&p, &s);   // LG_ENOMEM: the verdict says it
 *   rpt_procs_judge(&p, &budgets[RPT_CH_RSS], &v.procs);
 *   rpt_procs_fini(&p);
 */
struct rpt_proc_series;
struct rpt_procs {
    int n, cap;
    struct rpt_proc_series *v; /* owned */
    bool walked;               /* a session carried the tree */
    int last;                  /* the last session that did */
    int dropped;               /* readings not kept: out of memory (the verdict says so) */
    int within;                /* children that began and ended within a session */
};
/* Adds s's process list (nothing without one); LG_ENOMEM when a reading could not be kept,
 * which p->dropped counts and the verdict names. */
int rpt_procs_add(struct rpt_procs *p, const struct rpt_session *s);
/* Judges every child's series with the rss channel's budget into pv (pv->counted false when no
 * session carried the tree). Allocates nothing beyond what rpt_judge_statistical takes. */
void rpt_procs_judge(const struct rpt_procs *p, const struct rpt_budget *rss,
                     struct rpt_procs_verdict *pv);
void rpt_procs_fini(struct rpt_procs *p); /* frees the series; rpt_procs_fini(NULL) is a no-op */

/* ---- a run's series ------------------------------------------------------------------------ */

struct rpt_series {
    int cap; /* sessions the arrays hold */
    int n_all, n_measured;
    double *y[RPT_NCHANNELS];    /* rpt_session_value of measured sessions */
    bool avail[RPT_NCHANNELS];   /* measured in every measured session (exact: every session
                                    from the channel's first figure on) */
    bool exact_seen[3];          /* an exact channel had a figure in some session */
    int64_t exact_suppressed[3]; /* what suppression rules took from it, every session */
    int64_t *leaked[3];          /* exact channels, every session (warm-up included):
                                    tagged_host, tagged_device, refs */
    char worst_host[200], worst_dev[200], worst_ref[240];
    int64_t worst_host_bytes, worst_dev_bytes;
    bool device; /* the run had a device: tagged_device is judged */
};
/* Sizes the arrays for cap sessions (freed with rpt_series_fini). */
int rpt_series_init(struct rpt_series *s, int cap);
/* Grows a series to hold cap sessions; LG_ENOMEM leaves s as it was. */
int rpt_series_reserve(struct rpt_series *s, int cap);
void rpt_series_fini(struct rpt_series *s);
/* Records a session. Allocates nothing. */
void rpt_series_add(struct rpt_series *s, const struct rpt_session *r);
/* Updates only the attribution (worst_*) from a session's leaks; allocates nothing. A zeroed
 * struct rpt_series (no arrays) may be used for attribution alone (the soak's exact channels). */
void rpt_series_attribute(struct rpt_series *s, const struct rpt_session *r);
/* Judges every channel with the budgets and concludes (v->required, sessions_planned and
 * stopped are the caller's). */
void rpt_judge_series(const struct rpt_series *s, const struct rpt_budget *b,
                      struct rpt_verdict *v);

/* Judges loaded results' sessions by the run's rules with budgets b into v, whose required,
 * sessions_planned, partial and stopped are the caller's (r is left as it is). LG_ENOMEM. */
int rpt_judge_sessions(const struct rpt_results *r, const struct rpt_budget *b,
                       struct rpt_verdict *v);
/* Judges loaded results from their sessions, in place: a soak over its sliding window
 * (rpt_soak_judge_results), a run over every session. again false: the file has no verdict line
 * (a run cut short), and the verdict is partial. again true: its verdict line was refused by
 * rpt_results_check, and the verdict keeps the line's partial and stopped. */
int rpt_judge_results(struct rpt_results *r, bool again);
/* Resets r's verdict for rpt_judge_results' judging: required and planned sessions from the
 * run line, partial and stopped as said there. */
void rpt_verdict_start_again(struct rpt_results *r, bool again);
/* Holds loaded results' verdict line against their sessions (results_check.c): LG_EFORMAT
 * naming path and the mismatch when the line claims more than the sessions show — measured
 * sessions that are not there, a channel judged pass that no session measured, a pass the
 * sessions judged again do not give. LG_OK without a verdict line. */
int rpt_results_check(const struct rpt_results *r, const char *path);
/* What `report` and `merge` do with a loaded file: judges it from its sessions when it has no
 * verdict line, or when rpt_results_check refuses the line (saying why on stderr, after
 * "leakgate CMD: note: "); otherwise keeps the line. LG_OK, or LG_ENOMEM. */
int rpt_results_believe(struct rpt_results *r, const char *path, const char *cmd);

#endif
