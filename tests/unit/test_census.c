/* test_census.c — the census rule (reports/judge/census.c; docs/design.md "The census rule"):
 * recurring keeps are a leak when every session since the first kept blocks, or when they come to
 * je_allocated's slope budget a session; sporadic keeps below it are named and not a leak
 * (docs/realworld.md, finding 4). */
#include <stdio.h>
#include <string.h>

#include "lg_test.h"
#include "results.h"
#include "verdict.h"

TestSuite(census, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 60);

#define BUDGET ((int64_t)8192) /* je_allocated's default slope budget, bytes a session */

/* Judges a last session `last` whose census holds, for each session born[i], bytes[i] in one
 * block; session 0 is the warm-up (first measured: 1). */
static void judge(int last, const int *born, const int64_t *bytes, int n,
                  struct rpt_census_verdict *cv)
{
    struct rpt_census c[64];
    cr_assert(n <= 64);
    for (int i = 0; i < n; i++) c[i] = (struct rpt_census){born[i], bytes[i], 1, NULL};
    struct rpt_session s = {.index = last, .census_counted = true, .n_census = n, .census = c};
    rpt_census_judge_session(&s, 1, BUDGET, cv);
}

Test(census, a_steady_64_byte_leak_is_a_leak_after_three_kept_sessions)
{
    /* sessions 1, 2, 3 each kept 64 B; the run is judged at the end of session 4 */
    const int born[] = {1, 2, 3, 4};
    const int64_t bytes[] = {64, 64, 64, 64};
    struct rpt_census_verdict cv;
    judge(4, born, bytes, 4, &cv);
    cr_expect_eq(cv.status, RPT_LEAK, "%s", cv.why);
    cr_expect_eq(cv.kept, 3);
    cr_expect_eq(cv.bytes, 3 * 64);
    cr_expect(strstr(cv.why, "3 of the 3 session(s) since #1 kept blocks") &&
                  strstr(cv.why, "every one kept blocks, a steady leak"),
              "%s", cv.why);
}

Test(census, sporadic_keeps_below_the_budget_are_named_and_not_a_leak)
{
    /* Python's caches (finding 4): about 1 KiB every other session, 3 of the 5 since #6 */
    const int born[] = {6, 8, 10, 11};
    const int64_t bytes[] = {1024, 1056, 2144, 512};
    struct rpt_census_verdict cv;
    judge(11, born, bytes, 4, &cv);
    const int64_t kept = 1024 + 1056 + 2144; /* born before the last session, 11 */
    cr_expect_eq(cv.status, RPT_PASS, "%s", cv.why);
    cr_expect_eq(cv.kept, 3);
    cr_expect_eq(cv.since, 5);
    cr_expect_eq(cv.bytes, kept);
    char want[200];
    snprintf(want, sizeof want,
             "sporadic, %lld B/session below je_allocated's budget of "
             "8.00 KiB/session",
             (long long)(kept / 5));
    cr_expect(strstr(cv.why, "born in session 10, still alive: 1 block") &&
                  strstr(cv.why, "3 of the 5 session(s) since #6 kept blocks") &&
                  strstr(cv.why, want) && strstr(cv.why, "not a leak of the census"),
              "%s\nwants: %s", cv.why, want);
}

Test(census, sporadic_keeps_at_the_budget_are_a_leak)
{
    /* the same shape, each keep 5 times the budget: 3 x 40 KiB over 5 sessions, 24 KiB each */
    const int born[] = {6, 8, 10};
    const int64_t bytes[] = {5 * BUDGET, 5 * BUDGET, 5 * BUDGET};
    struct rpt_census_verdict cv;
    judge(11, born, bytes, 3, &cv);
    cr_expect_eq(cv.status, RPT_LEAK, "%s", cv.why);
    cr_expect(strstr(cv.why, "24.00 KiB/session, at or above je_allocated's budget of "
                             "8.00 KiB/session") != NULL,
              "%s", cv.why);
}

Test(census, keeps_that_stopped_are_not_recurring)
{
    /* a cache filled over sessions 1-3 and then no more: 3 of the 9 since #1, under half */
    const int born[] = {1, 2, 3};
    const int64_t bytes[] = {1 << 20, 1 << 20, 1 << 20};
    struct rpt_census_verdict cv;
    judge(10, born, bytes, 3, &cv);
    cr_expect_eq(cv.status, RPT_PASS, "%s", cv.why);
    cr_expect(strstr(cv.why, "3 of the 9 session(s) since #1 kept blocks") &&
                  !strstr(cv.why, "sporadic") && !strstr(cv.why, "steady"),
              "%s", cv.why);
}
