/* test_gate_cli.c — the gate across commits through the leakgate binary: a history appended to
 * run after run, its baseline picked (the last passing record of the same workload, never a
 * leaking one) and compared in the same verdict; `leakgate history` on it; a peak budget that
 * fails a session naming the class and its tags; a known leak suppressed by rule (run and exec),
 * shown as suppressed in every artefact, and back as a leak once the rule expires. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"

TestSuite(gate_cli, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 600);

#define RUN "run --quiet --modes fp32 --sessions 6 --workload tiny-fp32 --history h.jsonl "

static struct lg_out in_tmp(const char *fmt, const char *arg)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, arg ? arg : "");
    return lg_runf("/bin/sh", "-c 'cd %s && %s'", lg_test_tmpdir(), cmd);
}

static void expect(struct lg_out o, int status, const char *const *needles)
{
    cr_expect_eq(o.status, status, "exit %d, not %d:\n%s", o.status, status, o.text);
    for (const char *const *n = needles; *n; n++)
        cr_expect(strstr(o.text, *n), "'%s' not said:\n%s", *n, o.text);
    free(o.text);
}

Test(gate_cli, the_history_picks_its_baseline_and_the_verdict_folds_it_in)
{
    const char *L = LEAKGATE_BIN;
    char fmt[1024];
    snprintf(fmt, sizeof fmt, "%s " RUN "--no-reports --baseline auto --commit %%s --out o", L);
    expect(in_tmp(fmt, "c1"), 0, (const char *const[]){"no baseline yet", "PASS", NULL});
    expect(in_tmp(fmt, "c2 --inject raw-malloc:256KiB"), 1,
           (const char *const[]){"Against the baseline", "commit c1", "HEAD REGRESSED",
                                 "regressed against the baseline c1", NULL});
    expect(in_tmp(fmt, "c3"), 0,
           (const char *const[]){"commit c1", "No regression beyond the budgets", NULL});
    /* the baseline of c4 is c3, the last passing one: c2 leaked */
    expect(in_tmp(fmt, "c4"), 0, (const char *const[]){"commit c3", NULL});
    snprintf(fmt, sizeof fmt, "%s history h.jsonl -o hist%%s", L);
    expect(in_tmp(fmt, NULL), 0,
           (const char *const[]){"4 record(s)", "workload \"tiny-fp32\"", "c1", "c2", "LEAK",
                                 "history.html", NULL});
    char *html = lg_slurp(lg_test_tmpfile("hist/history.html"), NULL);
    cr_assert_not_null(html);
    cr_expect(strstr(html, "<svg") && strstr(html, "Per-session growth over commits"));
    free(html);
    cr_expect_eq(
        lg_shell("python3 %s/tests/data/results/validate_jsonl.py %s/docs/history.schema.json "
                 "%s >/dev/null",
                 LG_SOURCE_DIR, LG_SOURCE_DIR, lg_test_tmpfile("h.jsonl")),
        0, "every record validates against docs/history.schema.json");
    cr_expect(lg_exists(lg_test_tmpfile("hist/history-1-growth.png")));
    cr_expect(lg_exists(lg_test_tmpfile("hist/history-1-peaks.svg")));
    /* a named results file as the baseline: the leaking c2 against the clean run */
    snprintf(fmt, sizeof fmt,
             "%s run --quiet --no-reports --modes fp32 --sessions 6 --out o2 --baseline "
             "o/results.jsonl%%s",
             L);
    expect(in_tmp(fmt, NULL), 0, (const char *const[]){"No regression", NULL});
}

Test(gate_cli, a_peak_over_budget_fails_the_run_naming_class_and_tags)
{
    char fmt[512];
    snprintf(fmt, sizeof fmt, "%s run --quiet --modes fp32 --sessions 4 --out o --peak-budget %%s",
             LEAKGATE_BIN);
    expect(in_tmp(fmt, "act=100KiB"), 1,
           (const char *const[]){"EXCEEDED", "host act peaked at", "> 100.00 KiB", "(act/",
                                 "FAIL: peak budget", NULL});
    char *md = lg_slurp(lg_test_tmpfile("o/summary.md"), NULL);
    cr_assert_not_null(md);
    cr_expect(strstr(md, "peak budget **EXCEEDED**"), "%s", md);
    free(md);
    cr_expect_eq(
        lg_shell("python3 %s/tests/data/results/validate_jsonl.py %s/docs/results.schema.json "
                 "%s >/dev/null",
                 LG_SOURCE_DIR, LG_SOURCE_DIR, lg_test_tmpfile("o/results.jsonl")),
        0, "peaks and the gate validate against docs/results.schema.json");
    expect(in_tmp(fmt, "act=100MiB --peak-budget total=1GiB"), 0,
           (const char *const[]){"within", NULL});
    expect(in_tmp(fmt, "actt=1MiB"), 3, (const char *const[]){"a typo?", "INCONCLUSIVE", NULL});
}

Test(gate_cli, a_known_leak_is_suppressed_listed_and_back_once_its_rule_expires)
{
    const char *rules = "tag ckpt/* expires=2999-12-31 reason=staging buffer kept, #41\n"
                        "tag nothing/* expires=2999-12-31 reason=never matches\n";
    lg_spit(lg_test_tmpfile("known.supp"), rules, strlen(rules));
    char fmt[512];
    snprintf(fmt, sizeof fmt,
             "%s run --quiet --modes fp32 --sessions 8 --inject ckpt-buffer --out o %%s",
             LEAKGATE_BIN);
    expect(in_tmp(fmt, ""), 1, (const char *const[]){"LEAK: tagged_host", NULL});
    expect(in_tmp(fmt, "--suppressions known.supp"), 0,
           (const char *const[]){"SUPPRESSED", "known.supp:1", "UNUSED", "known.supp:2", "PASS",
                                 "unused rules: known.supp:2", NULL});
    char *html = lg_slurp(lg_test_tmpfile("o/report.html"), NULL),
         *md = lg_slurp(lg_test_tmpfile("o/summary.md"), NULL);
    cr_assert(html && md);
    cr_expect(strstr(html, "SUPPRESSED") && strstr(html, "ckpt/staging") &&
              strstr(html, "staging buffer kept, #41"));
    cr_expect(strstr(md, "**used** rule `known.supp:1`") && strstr(md, "**UNUSED**"), "%s", md);
    free(html);
    free(md);
    cr_expect_eq(
        lg_shell("python3 %s/tests/data/results/validate_jsonl.py %s/docs/results.schema.json "
                 "%s >/dev/null",
                 LG_SOURCE_DIR, LG_SOURCE_DIR, lg_test_tmpfile("o/results.jsonl")),
        0, "suppressed entries and the gate validate against docs/results.schema.json");
    const char *old = "tag ckpt/* expires=2001-01-01 reason=staging buffer kept, #41\n";
    lg_spit(lg_test_tmpfile("old.supp"), old, strlen(old));
    expect(in_tmp(fmt, "--suppressions old.supp"), 1,
           (const char *const[]){"EXPIRED on 2001-01-01", "LEAK: tagged_host",
                                 "expired rules (suppress nothing): old.supp:1", NULL});
}

Test(gate_cli, a_suppressed_leak_leaves_the_allocator_channel_too)
{
    /* adam-state leaks ~370 KiB of tagged blocks a session; suppressed, jemalloc's allocated
     * bytes are corrected by each block's size class, to the byte */
    const char *rules = "tag adam.?/* expires=2999-12-31 reason=optimizer state kept, #42\n"
                        "tag meta/adam* expires=2999-12-31 reason=its tensor structs, #42\n";
    lg_spit(lg_test_tmpfile("known.supp"), rules, strlen(rules));
    char fmt[512];
    snprintf(fmt, sizeof fmt,
             "%s run --quiet --no-reports --modes fp32 --sessions 8 --inject adam-state --out o "
             "%%s",
             LEAKGATE_BIN);
    struct lg_out o = in_tmp(fmt, "");
    LG_EXPECT_SAYS(o.text, {"je_allocated", " leak ", "unsuppressed, jemalloc sees the leak"});
    free(o.text);
    o = in_tmp(fmt, "--suppressions known.supp");
    LG_EXPECT_SAYS(o.text, {"tagged_host", " pass ", "the rules take every leaked tag"},
                   {"je_allocated", "slope 0 B/session", "and every block's bytes"});
    free(o.text);
}

Test(gate_cli, exec_suppresses_a_tagged_leak_of_the_program)
{
    lg_spit(lg_test_tmpfile("known.supp"),
            "tag model/weights expires=2999-12-31 reason=weights kept on purpose\n", 68);
    char fmt[512];
    snprintf(fmt, sizeof fmt, "%s exec --quiet --no-reports --out o %%s -- %s 9 tag-leak",
             LEAKGATE_BIN, EXEC_CLEAN);
    expect(in_tmp(fmt, ""), 1, (const char *const[]){"LEAK", "tagged_host", NULL});
    expect(in_tmp(fmt, "--suppressions known.supp"), 0,
           (const char *const[]){"SUPPRESSED", "known.supp:1", "PASS", NULL});
}
