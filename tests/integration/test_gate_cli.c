/* test_gate_cli.c — the gate across commits through the leakgate binary: a history appended to
 * run after run, its baseline picked (the last passing record of the same workload, never a
 * leaking one) and compared in the same verdict; `leakgate history` on it; a peak budget that
 * fails a session naming the class and its tags; a known leak suppressed by rule (run and exec),
 * shown as suppressed in every artefact, and back as a leak once the rule expires. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"

TestSuite(gate_cli, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 600);

#define RUN "run --quiet --modes fp32 --sessions 6 --workload tiny-fp32 --history h.jsonl "

/* Runs `leakgate ARGS` (formatted) in the test's scratch directory. */
static struct lg_out leakgate(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct lg_out leakgate(const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return lg_runf("/bin/sh", "-c 'cd %s && %s %s'", lg_test_tmpdir(), LEAKGATE_BIN, args);
}

/* Expects o's exit status and each needle in what it printed; frees o.text. */
static void expect(struct lg_out o, int status, const char *const *needles)
{
    cr_expect_eq(o.status, status, "exit %d, not %d:\n%s", o.status, status, o.text);
    for (const char *const *n = needles; *n; n++)
        cr_expect(strstr(o.text, *n), "'%s' not said:\n%s", *n, o.text);
    free(o.text);
}
#define EXPECT(o, status, ...) expect(o, status, (const char *const[]){__VA_ARGS__, NULL})

/* Writes text into the scratch file `name`. */
static void write_file(const char *name, const char *text)
{
    lg_spit(lg_test_tmpfile(name), text, strlen(text));
}

/* Expects every line of the scratch file `name` to validate against docs/<schema>. */
static void expect_valid(const char *schema, const char *name, const char *why)
{
    lg_expect_jsonl(schema, lg_test_tmpfile(name), 0, why);
}

Test(gate_cli, the_history_picks_its_baseline_and_the_verdict_folds_it_in)
{
#define AUTO RUN "--no-reports --baseline auto --commit %s --out o"
    EXPECT(leakgate(AUTO, "c1"), 0, "no baseline yet", "PASS");
    EXPECT(leakgate(AUTO, "c2 --inject raw-malloc:256KiB"), 1, "Against the baseline", "commit c1",
           "HEAD REGRESSED", "regressed against the baseline c1");
    EXPECT(leakgate(AUTO, "c3"), 0, "commit c1", "No regression beyond the budgets");
    /* the baseline of c4 is c3, the last passing one: c2 leaked */
    EXPECT(leakgate(AUTO, "c4"), 0, "commit c3");
#undef AUTO
    EXPECT(leakgate("history h.jsonl -o hist"), 0, "4 record(s)", "workload \"tiny-fp32\"", "c1",
           "c2", "LEAK", "history.html");
    char *html = lg_slurp(lg_test_tmpfile("hist/history.html"), NULL);
    cr_assert_not_null(html);
    cr_expect(strstr(html, "<svg") && strstr(html, "Per-session growth over commits"));
    free(html);
    expect_valid("history.schema.json", "h.jsonl",
                 "every record validates against docs/history.schema.json");
    cr_expect(lg_exists(lg_test_tmpfile("hist/history-1-growth.png")));
    cr_expect(lg_exists(lg_test_tmpfile("hist/history-1-peaks.svg")));
    /* a named results file as the baseline: the leaking c2 against the clean run */
    EXPECT(leakgate("run --quiet --no-reports --modes fp32 --sessions 6 --out o2 --baseline "
                    "o/results.jsonl"),
           0, "No regression");
}

Test(gate_cli, a_peak_over_budget_fails_the_run_naming_class_and_tags)
{
#define PEAK "run --quiet --modes fp32 --sessions 4 --out o --peak-budget %s"
    EXPECT(leakgate(PEAK, "act=100KiB"), 1, "EXCEEDED", "host act peaked at", "> 100.00 KiB",
           "(act/", "FAIL: peak budget");
    char *md = lg_slurp(lg_test_tmpfile("o/summary.md"), NULL);
    cr_assert_not_null(md);
    cr_expect(strstr(md, "peak budget **EXCEEDED**"), "%s", md);
    free(md);
    expect_valid("results.schema.json", "o/results.jsonl",
                 "peaks and the gate validate against docs/results.schema.json");
    EXPECT(leakgate(PEAK, "act=100MiB --peak-budget total=1GiB"), 0, "within");
    EXPECT(leakgate(PEAK, "actt=1MiB"), 3, "a typo?", "INCONCLUSIVE");
    EXPECT(leakgate(PEAK, "device:total=1"), 2, "a device peak needs --device cuda");
#undef PEAK
}

/* A history the run could not append to is refused before the first session, not after the
 * last: root passes access() where the file system says no (/proc). */
Test(gate_cli, an_unwritable_history_is_refused_before_any_session)
{
    EXPECT(leakgate("run --quiet --modes fp32 --sessions 4 --out o --history /proc/lg-h.jsonl"), 2,
           "--history /proc/lg-h.jsonl: cannot create it");
    cr_expect_not(lg_exists(lg_test_tmpfile("o/results.jsonl")), "no session ran");
    EXPECT(leakgate("run --quiet --modes fp32 --sessions 4 --out o --history ."), 2, "--history");
}

Test(gate_cli, a_known_leak_is_suppressed_listed_and_back_once_its_rule_expires)
{
    write_file("known.supp", "tag ckpt/* expires=2999-12-31 reason=staging buffer kept, #41\n"
                             "tag nothing/* expires=2999-12-31 reason=never matches\n");
#define CKPT "run --quiet --modes fp32 --sessions 8 --inject ckpt-buffer --out o %s"
    EXPECT(leakgate(CKPT, ""), 1, "LEAK: tagged_host");
    EXPECT(leakgate(CKPT, "--suppressions known.supp"), 0, "SUPPRESSED", "known.supp:1", "UNUSED",
           "known.supp:2", "PASS", "unused rules: known.supp:2");
    char *html = lg_slurp(lg_test_tmpfile("o/report.html"), NULL),
         *md = lg_slurp(lg_test_tmpfile("o/summary.md"), NULL);
    cr_assert(html && md);
    cr_expect(strstr(html, "SUPPRESSED") && strstr(html, "ckpt/staging") &&
              strstr(html, "staging buffer kept, #41"));
    cr_expect(strstr(md, "**used** rule `known.supp:1`") && strstr(md, "**UNUSED**"), "%s", md);
    free(html);
    free(md);
    expect_valid("results.schema.json", "o/results.jsonl",
                 "suppressed entries and the gate validate against docs/results.schema.json");
    write_file("old.supp", "tag ckpt/* expires=2001-01-01 reason=staging buffer kept, #41\n");
    EXPECT(leakgate(CKPT, "--suppressions old.supp"), 1, "EXPIRED on 2001-01-01",
           "LEAK: tagged_host", "expired rules (suppress nothing): old.supp:1");
#undef CKPT
}

Test(gate_cli, a_suppressed_leak_leaves_the_allocator_channel_too)
{
    /* adam-state leaks ~370 KiB of tagged blocks a session; suppressed, jemalloc's allocated
     * bytes are corrected by each block's size class, to the byte */
    write_file("known.supp", "tag adam.?/* expires=2999-12-31 reason=optimizer state kept, #42\n"
                             "tag meta/adam* expires=2999-12-31 reason=its tensor structs, #42\n");
#define ADAM "run --quiet --no-reports --modes fp32 --sessions 8 --inject adam-state --out o %s"
    struct lg_out o = leakgate(ADAM, "");
    LG_EXPECT_SAYS(o.text, {"je_allocated", " leak ", "unsuppressed, jemalloc sees the leak"});
    free(o.text);
    o = leakgate(ADAM, "--suppressions known.supp");
    LG_EXPECT_SAYS(o.text, {"tagged_host", " pass ", "the rules take every leaked tag"},
                   {"je_allocated", "slope 0 B/session", "and every block's bytes"});
    free(o.text);
#undef ADAM
}

Test(gate_cli, exec_suppresses_a_tagged_leak_of_the_program)
{
    write_file("known.supp",
               "tag model/weights expires=2999-12-31 reason=weights kept on purpose\n");
#define EXEC "exec --quiet --no-reports --out o %s -- " EXEC_CLEAN " 9 tag-leak"
    EXPECT(leakgate(EXEC, ""), 1, "LEAK", "tagged_host");
    EXPECT(leakgate(EXEC, "--suppressions known.supp"), 0, "SUPPRESSED", "known.supp:1", "PASS");
#undef EXEC
}
