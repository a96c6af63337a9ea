/* summary.h — what the results say without a verdict engine (summary.c): counts, per-session
 * figures, leaked tags summed over a run, retain sites. Every artefact and judge reads the
 * results through these. */
#ifndef LG_SUMMARY_H
#define LG_SUMMARY_H

#include "results.h"

int rpt_measured_count(const struct rpt_results *r);
/* Whether suppression rules took anything (bytes or a shared object) in some session. */
bool rpt_any_suppressed(const struct rpt_results *r);
/* The sentence of the leaked-tags section when no tag leaked: it names the suppressed, if any. */
const char *rpt_no_leaked_tags_text(const struct rpt_results *r);
int rpt_warmup_count(const struct rpt_results *r);
/* The verdict for a channel, NULL without a verdict or when the verdict omits it. */
const struct rpt_channel_verdict *rpt_verdict_for(const struct rpt_results *r, enum rpt_channel c);
/* Whether any session measured the channel. */
bool rpt_channel_measured(const struct rpt_results *r, enum rpt_channel c);

/* What the data says about a channel without a verdict engine. */
struct rpt_channel_obs {
    int measured;         /* measured sessions with a value */
    int64_t max_abs;      /* largest |delta| */
    int64_t last;         /* the last measured delta */
    double median_growth; /* median per-session growth, NaN when none */
    int over_budget;      /* sessions judged beyond the budget (rpt_session_judge) */
};
void rpt_channel_observe(const struct rpt_results *r, enum rpt_channel c,
                         struct rpt_channel_obs *out);

/* The per-session figure JUnit and the tables judge for session i: exact channels use what the
 * session itself left behind (leaked bytes, unbalanced retains), statistical ones the delta.
 * Returns false when the channel was not measured in that session; *over says whether the
 * value is beyond the channel's budget in the run line. */
bool rpt_session_judge(const struct rpt_results *r, int i, enum rpt_channel c, int64_t *value,
                       bool *over);

/* What non-expired suppression rules took of one leak group (bytes), and whether they took a
 * shared object (matched by "kind/name"). */
int64_t rpt_group_suppressed(const struct rpt_session *s, const struct lg_leak_group *g);
bool rpt_object_suppressed(const struct rpt_session *s, const struct lg_ref_leak *rl);

/* Leaked tags summed over the measured sessions, largest first (what suppression rules took
 * left out: gate.h lists it). */
struct rpt_tag_total {
    char tag[LG_MAX_NAME];
    char space[LG_MAX_SPACE];
    int64_t bytes, count;                /* summed over the measured sessions */
    int sessions;                        /* measured sessions in which it leaked */
    int first_session;                   /* the index of the first of them */
    const struct lg_leak_group *example; /* that session's group (its stacks) */
};
/* *out is freed with free(); *n may be 0 (then *out is NULL). */
int rpt_tag_totals(const struct rpt_results *r, struct rpt_tag_total **out, int *n);

/* Distinct retain sites of unbalanced references on objects of one kind, over measured
 * sessions; kind NULL takes every kind. */
struct rpt_site_count {
    char site[LG_MAX_SITE];
    char kind[LG_MAX_KIND];
    int count;
    const char *stack; /* one of its stacks (borrowed from the results), or NULL */
};
/* *out is freed with free(). */
int rpt_retain_sites(const struct rpt_results *r, const char *kind, struct rpt_site_count **out,
                     int *n);

/* The intercept of a Theil–Sen line through (x, y) with the given slope: median(y − slope·x)
 * into *out (0 when n == 0 or the slope is not finite). */
int rpt_line_intercept(const double *x, const double *y, int n, double slope, double *out);

#endif
