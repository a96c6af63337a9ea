/* test_shapes.c — "returned to baseline" only when it did (issue 33, docs/design.md "Verdicts
 * and their evidence"): every shape of memory that stays gets a verdict that is not PASS, with
 * the session it came in, in `run`, `exec`, `soak` and `compare`; their clean twins pass.
 *
 * exec's shapes come from tests/exec/shapes.c (16 sessions: 1 warm-up + 15 measured); run's and
 * soak's from --inject raw-malloc:SIZE[@FIRST[/EVERY]] (2 warm-up sessions, then measured). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"
#include "results.h"
#include "results_json.h"
#include "rpt_text.h"
#include "summary.h"

TestSuite(shapes, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 600);

static struct lg_out exec_shape(const char *shape, const char *opts)
{
    return lg_runf(LEAKGATE_BIN, "exec --out '%s/%s' %s -- '%s' %s 16", lg_test_tmpdir(), shape,
                   opts, EXEC_SHAPES, shape);
}

static void expect_status(const struct lg_out *o, int status, const char *what)
{
    cr_expect_eq(o->status, status, "%s: exit %d, not %d\n%s", what, o->status, status, o->text);
}

/* The exit status, and (says not NULL) that CHANNEL's line (NULL: anywhere) says it; frees o. */
static void expect(struct lg_out o, int status, const char *what, const char *channel,
                   const char *says)
{
    expect_status(&o, status, what);
    if (says) lg_expect_says(o.text, &(struct lg_says){channel, says, what}, 1, false);
    free(o.text);
}

/* ---- exec: a program using only leakgate_session_begin/end ------------------------------- */

Test(shapes, exec_a_block_kept_in_the_last_session_is_not_a_pass)
{
    /* 96 MiB in session 15, the 15th measured: one session cannot tell a one-off from the start
     * of a recurring leak, so INCONCLUSIVE, naming the session */
    struct lg_out o = exec_shape("last-step", "");
    expect_status(&o, 3, "last-step");
    /* the block's stack was taken at its birth (agent/lga_big.c), before any profile was armed */
    LG_EXPECT_SAYS(
        o.text,
        {"je_allocated", "did not return to baseline: +96.00 MiB since measured session #15",
         "session"},
        {NULL, "#15 itself still held 1 block, 96.00 MiB, at its end, at keep_block (shapes.c:",
         "the census names the block by the stack that allocated it"});
    free(o.text);
}

Test(shapes, exec_a_block_kept_from_session_6_is_a_leak)
{
    /* 48 MiB in session 6 (measured #6), held 9 sessions after: a retained block */
    struct lg_out o = exec_shape("kept-step", "");
    expect_status(&o, 1, "kept-step");
    LG_EXPECT_SAYS(o.text, {"je_allocated", "+48.00 MiB came in measured session #6", "session"},
                   {"je_allocated", "retained block", "what it is"},
                   {"rss", " leak ", "the pages are resident too"},
                   {NULL,
                    "census: born in session 6, still alive: 1 block, 48.00 MiB, at "
                    "keep_block (shapes.c:",
                    "named by the stack taken at birth, though no channel had risen yet"});
    free(o.text);
    /* summary.md's census table has its row, born in session 6 */
    char *md = lg_slurp(lg_test_tmpfile("kept-step/summary.md"), NULL);
    cr_assert_not_null(md);
    cr_expect(strstr(md, "| 6 | 1 | 48.00 MiB | `keep_block (shapes.c:") != NULL,
              "summary.md lacks the census row of session 6:\n%s", md);
    free(md);
}

/* The session the census profiles whole (docs/exec.md, "Who keeps it") holds each small block
 * jemalloc sampled in a 16 KiB extent; the figures must stay the program's (docs/realworld.md,
 * finding 1). exec_shapes spread keeps 64 blocks of 192 B a session from 64 stacks (more than a
 * heap profile's top 16); 192 B is one of jemalloc's size classes (four per doubling: 160, 192,
 * 224, 256), so each session keeps 64 x 192 B, the profiled one too. */
Test(shapes, exec_the_profiled_session_counts_its_blocks_at_their_size_class)
{
    const int64_t blocks = 64, size_class = 192, kept = blocks * size_class;
    /* one block either way: jemalloc's 16 KiB extents (64 x 16 KiB - 12 KiB more in the profiled
     * session) and its records of the 64 stacks (~760 B each) are taken out by the agent */
    const int64_t tolerance = size_class;
    struct lg_out o =
        lg_runf(LEAKGATE_BIN, "exec --no-reports --out '%s/spread' -- '%s' spread 12 %lld",
                lg_test_tmpdir(), EXEC_SHAPES, (long long)size_class);
    expect_status(&o, 1, "spread");
    cr_expect(strstr(o.text, "is profiled to name them") != NULL, "a session profiled whole:\n%s",
              o.text);
    free(o.text);
    struct rpt_results *r = NULL;
    char path[600];
    snprintf(path, sizeof path, "%s/spread/results.jsonl", lg_test_tmpdir());
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    for (int i = 2; i < r->n_sessions; i++) { /* session 0 is the warm-up */
        const int64_t *a = r->sessions[i].absolute, *b = r->sessions[i - 1].absolute;
        int64_t step = a[RPT_CH_JE_ALLOCATED] - b[RPT_CH_JE_ALLOCATED];
        cr_expect(llabs(step - kept) <= tolerance, "session %d: je_allocated +%lld B, not %lld", i,
                  (long long)step, (long long)kept);
    }
    const struct rpt_session *last = &r->sessions[r->n_sessions - 1];
    int counted = 0;
    for (int i = 0; i < last->n_census; i++) {
        const struct rpt_census *c = &last->census[i];
        if (c->born < 1 || c->born >= last->index) continue;
        counted++;
        cr_expect_eq(c->blocks, blocks, "session %d: %lld blocks", c->born, (long long)c->blocks);
        cr_expect_eq(c->bytes, kept, "session %d: %lld B", c->born, (long long)c->bytes);
    }
    cr_expect_eq(counted, last->index - 1, "every measured session but the last kept its blocks");
    const struct rpt_channel_verdict *cv = rpt_verdict_for(r, RPT_CH_JE_ALLOCATED);
    cr_assert_not_null(cv);
    /* the promotion's step moved it to ~118 KiB/session */
    cr_expect(fabs(cv->slope - (double)kept) <= (double)tolerance,
              "je_allocated's slope %g B/session, not %lld", cv->slope, (long long)kept);
    rpt_results_free(r);
}

/* The census's byte floor (docs/realworld.md, finding 4): blocks kept in every other session
 * (a Python cache's ~1 KiB) recur, but not in every session, and come to less than
 * je_allocated's slope budget a session: named in the verdict's census line, not a leak. Kept in
 * every session, 64 B is a leak (the census's exactness for C), as before. */
Test(shapes, exec_sporadic_keeps_below_the_budget_pass_and_are_named)
{
    /* sessions 1, 3, 5, ... keep a block of `bytes`; the last (15) is judged, the warm-up is 0 */
    const int sessions = 16, bytes = 1024, last = sessions - 1, since = last - 1;
    int kept = 0;
    for (int s = 1; s < last; s++) kept += s % 2;
    struct lg_out o = lg_runf(LEAKGATE_BIN, "exec --out '%s/sporadic' -- '%s' sporadic %d %d",
                              lg_test_tmpdir(), EXEC_SHAPES, sessions, bytes);
    expect_status(&o, 0, "1 KiB every other session");
    char want[200];
    snprintf(
        want, sizeof want,
        "%d of the %d session(s) since #1 kept blocks (%d blocks, %d.00 KiB in all): sporadic, "
        "%d B/session below je_allocated's budget of 8.00 KiB/session",
        kept, since, kept, kept * bytes / 1024, kept * bytes / since);
    LG_EXPECT_SAYS(o.text, {NULL, "PASS: every required channel returned to baseline", "PASS"},
                   {NULL, "census: born in session 1, still alive: 1 block, 1.00 KiB", "named"},
                   {NULL, want, "what the memory did, and why it passes"});
    free(o.text);
    expect(lg_runf(LEAKGATE_BIN, "exec --out '%s/steady64' -- '%s' steady 5 64", lg_test_tmpdir(),
                   EXEC_SHAPES),
           1, "64 B every session", NULL, "every one kept blocks, a steady leak");
}

Test(shapes, exec_a_trickle_below_the_budget_is_a_leak)
{
    /* 3 x 1 KiB a session: 3 KiB/session, below the 8 KiB slope budget, rising every session */
    expect(exec_shape("trickle", ""), 1, "trickle", "je_allocated",
           "rose 3.00 KiB/session in every session since measured session #1");
}

Test(shapes, exec_a_steady_4k_is_a_leak_over_20_and_40_sessions)
{
    for (int n = 20; n <= 40; n += 20) {
        expect(lg_runf(LEAKGATE_BIN, "exec --out '%s/s4k%d' -- '%s' steady4k %d", lg_test_tmpdir(),
                       n, EXEC_SHAPES, n),
               1, "steady4k", "je_allocated", "rose 4.00 KiB/session");
    }
}

Test(shapes, exec_a_leak_in_the_last_quarter_is_a_leak)
{
    /* 1 MiB a session in sessions 12-15 (measured #12-#15): four leaking sessions */
    expect(exec_shape("late", ""), 1, "late", "je_allocated", "a leak that began at session #12");
}

Test(shapes, exec_clean_twins_pass)
{
    /* a cache filled in the warm-up, a buffer living one session, plain work */
    static const char *twins[] = {"warm-cache", "scratch", "clean"};
    for (size_t k = 0; k < sizeof twins / sizeof *twins; k++) {
        expect(exec_shape(twins[k], ""), 0, twins[k], NULL,
               "PASS: every required channel returned to baseline");
    }
}

Test(shapes, a_pass_needs_a_required_channel_and_hand_budgets_are_named)
{
    expect(exec_shape("clean", "--require none"), 3, "--require none", NULL,
           "INCONCLUSIVE: no channel required");
    expect(exec_shape("clean", "--budget je_allocated.slope=1GiB"), 0, "clean, a budget by hand",
           NULL, "budgets set by hand (--budget), not measured: je_allocated");
    /* a 1 GiB slope budget does not license a steady rise */
    expect(exec_shape("steady4k", "--budget je_allocated.slope=1GiB"), 1,
           "steady4k under a 1 GiB budget", NULL, NULL);
}

/* ---- run, soak, compare: the built-in trainer with an injected untagged leak ------------- */

/* `leakgate run --quiet --no-reports OPTS --out TMP/DIR`. */
static struct lg_out run_with(const char *opts, const char *dir)
{
    return lg_runf(LEAKGATE_BIN, "run --quiet --no-reports %s --out '%s/%s'", opts,
                   lg_test_tmpdir(), dir);
}

Test(shapes, run_a_trickle_below_the_budget_is_a_leak)
{
    expect(run_with("--inject raw-malloc:3KiB", "r3k"), 1, "raw-malloc:3KiB", "je_allocated",
           "rule 5");
}

Test(shapes, run_a_late_leak_is_inconclusive_then_a_leak_within_four_sessions)
{
    /* 2 warm-up + 40 measured = sessions 0-41; 1 MiB a session from session K on leaks in
     * 42 - K measured sessions: 4 or more is LEAK, fewer INCONCLUSIVE, never PASS */
    char opts[64], dir[32];
    for (int k = 41; k >= 37; k--) {
        snprintf(opts, sizeof opts, "--inject raw-malloc:1MiB@%d", k);
        snprintf(dir, sizeof dir, "late%d", k);
        expect(run_with(opts, dir), 42 - k >= 4 ? 1 : 3, "1 MiB/session late", NULL, NULL);
    }
    /* 100 MiB in the last of 12 measured sessions only */
    expect(run_with("--sessions 12 --inject raw-malloc:100MiB@13/1000", "last"), 3,
           "100 MiB in the last session", "je_allocated", "since measured session #12");
}

Test(shapes, compare_finds_a_late_leak_in_head)
{
    expect(run_with("", "cbase"), 0, "clean base", NULL, NULL);
    expect(run_with("--inject raw-malloc:1MiB@36", "chead"), 1, "head leaking from session 36",
           NULL, NULL);
    expect(lg_runf(LEAKGATE_BIN, "compare '%s/cbase/results.jsonl' '%s/chead/results.jsonl'",
                   lg_test_tmpdir(), lg_test_tmpdir()),
           1, "compare", NULL, "HEAD REGRESSED");
}

Test(shapes, soak_never_calls_a_late_alarm_saturated)
{
    char out[600];
    snprintf(out, sizeof out, "%s/soak", lg_test_tmpdir());
    struct lg_out o =
        lg_runf(LEAKGATE_BIN, "soak --sessions 100 --inject raw-malloc:10MiB@90 --out '%s'", out);
    expect_status(&o, 1, "10 MiB/session from session 90 of 100");
    LG_EXPECT_NOT_SAYS(o.text, {NULL, "saturated", "no saturation over a late alarm"});
    free(o.text);
    char path[700];
    snprintf(path, sizeof path, "%s/metrics.prom", out);
    char *m = lg_slurp(path, NULL);
    cr_assert(m, "%s", path);
    cr_expect(strstr(m, "leakgate_channel_alarm{channel=\"je_allocated\"} 1"), "%s", m);
    cr_expect(!strstr(m, "leakgate_verdict{status=\"pass\"} 1"), "%s", m);
    free(m);
}

Test(shapes, compare_names_a_census_leak_in_head)
{
    /* 64 B kept per session: below every statistical budget, exact in the census */
    expect(lg_runf(LEAKGATE_BIN, "exec --quiet --no-reports --out '%s/ebase' -- '%s' clean 7",
                   lg_test_tmpdir(), EXEC_SHAPES),
           0, "clean base", NULL, NULL);
    expect(lg_runf(LEAKGATE_BIN, "exec --quiet --no-reports --out '%s/ehead' -- '%s' steady 7 64",
                   lg_test_tmpdir(), EXEC_SHAPES),
           1, "64 B a session", NULL, NULL);
    expect(lg_runf(LEAKGATE_BIN, "compare '%s/ebase/results.jsonl' '%s/ehead/results.jsonl'",
                   lg_test_tmpdir(), lg_test_tmpdir()),
           1, "compare", NULL, "and the exact census leaks");
}
