/* compare.h — one run against another, each judged by the run's rules (compare.c): what
 * `leakgate compare` and the gate's baseline do. */
#ifndef LG_COMPARE_H
#define LG_COMPARE_H

#include <stdio.h>

#include "results.h"

/* What a comparison found; the values are the exit statuses of `leakgate compare`. */
enum rpt_compare_result {
    RPT_COMPARE_SAME = 0,         /* no regression beyond the budgets */
    RPT_COMPARE_REGRESSED = 1,    /* HEAD regressed */
    RPT_COMPARE_INCONCLUSIVE = 3, /* no regression found, but no evidence either (no measured
                                     session, HEAD's own verdict undecided) */
};
/* Judges BASE and HEAD by the run's rules with `budgets` (NULL: HEAD's run line's) and prints,
 * per channel, each one's per-session growth (statistical: Theil–Sen slope; exact: the median a
 * session leaves), per tag the leaked bytes per measured session, and their difference. HEAD
 * regressed when a channel leaks in HEAD that does not in BASE (or significantly faster), an
 * exact channel went from zero to non-zero or grew, or a tag leaks in HEAD and not in BASE. */
int rpt_compare(const struct rpt_results *base, const struct rpt_results *head,
                const struct rpt_budget *budgets, FILE *out);

#endif
