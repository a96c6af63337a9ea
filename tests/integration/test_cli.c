/* test_cli.c — the leakgate binary end to end: every injection is caught by the channel that
 * should catch it with the right attribution, the clean run passes, the reproduction shows the
 * VarMap's exact bytes and the retain site, bad input exits 2 with a message, and a signal
 * leaves a partial run on disk with a verdict. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "lg_test.h"

TestSuite(cli, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 240);

/* Runs leakgate with args (a shell fragment) and captures everything it prints. */
static struct lg_out run(const char *args) { return lg_run(LEAKGATE_BIN, args); }

/* Runs `leakgate OPTS --out <scratch>/out` and captures everything it prints. */
static struct lg_out run_out(const char *opts)
{
    return lg_runf(LEAKGATE_BIN, "%s --out '%s/out'", opts, lg_test_tmpdir());
}

/* Runs `leakgate OPTS --out <scratch>/out` and expects its exit status and what its output
 * says. */
static void expect_verdict(const char *opts, int status, const struct lg_says *says, size_t n)
{
    struct lg_out o = run_out(opts);
    cr_expect_eq(o.status, status, "%s: exit %d, expected %d\n%s", opts, o.status, status, o.text);
    lg_expect_says(o.text, says, n, false);
    free(o.text);
}
#define EXPECT_VERDICT(opts, status, ...)                                                          \
    expect_verdict(opts, status, (const struct lg_says[]){__VA_ARGS__},                            \
                   sizeof((const struct lg_says[]){__VA_ARGS__}) / sizeof(struct lg_says))

/* An injected fault: the run leaks (exit 1) and `channel` says leak and names `needle`. */
static void expect_leak(const char *inject, const char *modes, const char *channel,
                        const char *needle)
{
    char opts[512];
    snprintf(opts, sizeof opts, "run --sessions 6 --quiet --no-reports --modes %s --inject %s",
             modes, inject);
    EXPECT_VERDICT(opts, 1, {channel, " leak ", "the channel that should catch it"},
                   {channel, needle, "the attribution"});
}

Test(cli, clean_run_passes)
{
    EXPECT_VERDICT("run --sessions 8 --quiet --modes fp32,int8,qat", 0, {NULL, "PASS", "verdict"},
                   {"tagged_host", " pass ", "clean"}, {"je_allocated", " pass ", "clean"});
    cr_expect_eq(access(lg_test_tmpfile("out/results.jsonl"), R_OK), 0, "results.jsonl written");
}

/* An output folder whose name starts with '-' (issue 42.6): gnuplot read the scratch script's
 * path as an option and wrote nothing, so a clean run lost every plot and exited 2 after its
 * PASS ("is the disk full?"); report -o -dashdir the same. Both get their plots and exit 0. */
Test(cli, a_dash_named_output_folder_gets_its_plots)
{
    if (lg_shell("command -v gnuplot >/dev/null 2>&1") != 0)
        cr_skip_test("SKIP: gnuplot is not installed, so no plot to check");
    struct lg_out o = lg_runf("/bin/sh",
                              "-c 'cd \"%s\" && \"%s\" run --sessions 8 --quiet "
                              "--modes fp32 --out -o-dash'",
                              lg_test_tmpdir(), LEAKGATE_BIN);
    cr_expect_eq(o.status, 0, "run --out -o-dash: exit %d\n%s", o.status, o.text);
    free(o.text);
    o = lg_runf("/bin/sh", "-c 'cd \"%s\" && \"%s\" report ./-o-dash/results.jsonl -o -dashdir'",
                lg_test_tmpdir(), LEAKGATE_BIN);
    cr_expect_eq(o.status, 0, "report -o -dashdir: exit %d\n%s", o.status, o.text);
    free(o.text);
    const char *plots[] = {"-o-dash/deltas.png", "-o-dash/timeline.svg", "-dashdir/deltas.png",
                           "-dashdir/leaks.svg"};
    for (size_t k = 0; k < LG_ARRAY_LEN(plots); k++)
        cr_expect_eq(access(lg_test_tmpfile(plots[k]), R_OK), 0, "%s written", plots[k]);
}

/* A run into a directory an earlier run reported into: none of the earlier PASS's artefacts
 * stays beside the new run's results, with --no-reports too. */
Test(cli, a_later_run_leaves_no_earlier_report_behind)
{
    EXPECT_VERDICT("run --sessions 8 --quiet --modes fp32", 0, {NULL, "PASS", "verdict"});
    const char *names[] = {"summary.md", "junit.xml", "report.html", "sessions.csv"};
    for (size_t k = 0; k < LG_ARRAY_LEN(names); k++) {
        char p[64];
        snprintf(p, sizeof p, "out/%s", names[k]);
        cr_assert_eq(access(lg_test_tmpfile(p), R_OK), 0, "the first run wrote %s", names[k]);
    }
    EXPECT_VERDICT("run --sessions 8 --quiet --no-reports --modes fp32 --inject raw-malloc:256KiB",
                   1, {"je_allocated", " leak ", "the second run leaks"});
    for (size_t k = 0; k < LG_ARRAY_LEN(names); k++) {
        char p[64];
        snprintf(p, sizeof p, "out/%s", names[k]);
        cr_expect_neq(access(lg_test_tmpfile(p), F_OK), 0, "%s of the earlier PASS is gone",
                      names[k]);
    }
    cr_expect_eq(access(lg_test_tmpfile("out/results.jsonl"), R_OK), 0);
}

Test(cli, varmap_dup_ref_names_the_map_and_the_retain_site)
{
    expect_leak("varmap-dup-ref", "fp32", "refs", "retained at tr_new (trainer.c:");
    expect_leak("varmap-dup-ref", "fp32", "tagged_host", "class varmap");
}

Test(cli, adam_state) { expect_leak("adam-state", "fp32", "tagged_host", "class adam."); }
Test(cli, grad_retained) { expect_leak("grad-retained", "fp32", "tagged_host", "class grad"); }
Test(cli, tape_retained) { expect_leak("tape-retained", "fp32", "tagged_host", "class act"); }
Test(cli, ckpt_buffer) { expect_leak("ckpt-buffer", "fp32", "tagged_host", "ckpt/staging"); }
Test(cli, int8_calibration)
{
    expect_leak("int8-calibration", "fp32,int8", "tagged_host", "class int8");
}
Test(cli, qat_observer) { expect_leak("qat-observer", "fp32,qat", "tagged_host", "class qat"); }

Test(cli, raw_malloc_is_caught_by_jemalloc_allocated_only)
{
    EXPECT_VERDICT("run --sessions 8 --quiet --no-reports --inject raw-malloc:256KiB", 1,
                   {"je_allocated", " leak ", "jemalloc sees it"},
                   {"je_allocated", "256.00 KiB", "the slope is the injected size"},
                   {"tagged_host", " pass ", "untagged: the tracker's ledger cannot see it"});
}

Test(cli, raw_mmap_is_caught_by_rss_only)
{
    EXPECT_VERDICT("run --sessions 8 --quiet --no-reports --inject raw-mmap:2MiB", 1,
                   {"rss", " leak ", "the process grows"},
                   {"je_allocated", " pass ", "outside the allocator: jemalloc cannot see it"});
}

Test(cli, injection_from_a_later_session)
{
    /* 2 warm-up (fp32, int8) + 10 measured: the leak starts at session 6 */
    EXPECT_VERDICT("run --sessions 10 --quiet --no-reports --inject adam-state@6", 1,
                   {"tagged_host", "first in session 6", "the session it started in"});
}

Test(cli, reproduce_shows_the_varmap_bytes_and_site_and_fixed_shows_zero)
{
    EXPECT_VERDICT("reproduce varmap-dup-ref --preset tiny", 1,
                   {NULL, "class varmap", "tiny's VarMap is 108,844 bytes (spec table)"},
                   {NULL, "(108844 bytes)", "tiny's VarMap is 108,844 bytes (spec table)"},
                   {NULL, "retained at tr_new (trainer.c:", "the retain site"});
    struct lg_out o = run_out("reproduce varmap-dup-ref --preset tiny --fixed");
    cr_expect_eq(o.status, 0, "%s", o.text);
    LG_EXPECT_NOT_SAYS(o.text, {NULL, "class varmap", "--fixed releases the map"});
    free(o.text);
}

/* An untagged fault leaves nothing the exact channels see: its channel joins the required
 * ones, so reproduce never passes it unseen. */
Test(cli, reproduce_an_untagged_fault_requires_the_channel_that_sees_it)
{
    EXPECT_VERDICT("reproduce raw-malloc --preset tiny --no-reports", 3,
                   {NULL, "only je_allocated sees it, so je_allocated joins the required", "said"},
                   {"je_allocated", " inconclusive ", "3 sessions: too few to see 1 MiB"},
                   {NULL, "INCONCLUSIVE", "never a PASS"});
    EXPECT_VERDICT("reproduce raw-malloc --preset tiny --no-reports --sessions 6", 1,
                   {"je_allocated", " leak ", "the channel that sees it"});
}

Test(cli, bad_input_exits_2_with_a_message)
{
    static const struct lg_usage_case cases[] = {
        {"run --sessions 0", "--sessions: '0' is not an integer in 1..1000000"},
        {"run --sessions", "--sessions needs a value"},
        {"run --preset huge", "unknown preset 'huge'"},
        {"run --modes fp16", "unknown mode 'fp16'"},
        {"run --inject nonsense", "unknown fault 'nonsense'"},
        {"run --inject raw-malloc:12parsecs", "unknown size unit"},
        {"run --inject adam-state:1MiB", "only raw-malloc, raw-mmap and raw-noise take a size"},
        {"run --inject int8-calibration --modes fp32", "needs int8 in --modes"},
        {"run --budget rss.width=1MiB", "field 'width' is not band, slope or floor"},
        {"run --budget tagged_host.slope=1", "not a statistical channel"},
        {"run --frobnicate", "unknown option '--frobnicate'"},
        {"run --csv /nonexistent.csv", "--csv needs --csv-config"},
        {"frobnicate", "unknown command 'frobnicate'"},
        {"reproduce", "name the bug to reproduce"},
        {"report /nonexistent.jsonl -o /tmp/x", "/nonexistent.jsonl"},
    };
    lg_expect_usage_errors(LEAKGATE_BIN, cases, LG_ARRAY_LEN(cases));
}

Test(cli, malformed_csv_exits_2_naming_file_and_line)
{
    struct lg_out o =
        lg_runf(LEAKGATE_BIN, "run --sessions 4 --quiet --out '%s/o' --csv '%s' --csv-config '%s'",
                lg_test_tmpdir(), lg_test_datafile("csv", "bad/number.csv"),
                lg_test_datafile("csv", "small.json"));
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "number.csv:4: column 'y' (3): 'abc' is not a number") != NULL,
              "names the file, line and column: %s", o.text);
    cr_expect(strstr(o.text, "still live at exit") == NULL, "the error path freed everything: %s",
              o.text);
    free(o.text);
}

/* Runs 4 sessions on tests/data/csv/small.csv with the config at cfg. */
static struct lg_out run_small_csv(const char *cfg)
{
    return lg_runf(
        LEAKGATE_BIN,
        "run --sessions 4 --quiet --no-reports --out '%s/o' --csv '%s' --csv-config '%s'",
        lg_test_tmpdir(), lg_test_datafile("csv", "small.csv"), cfg);
}

/* small.json with the number at `key` set to `value`, as scratch file `name`; its path. */
static const char *small_json_with(const char *name, const char *key, const char *value)
{
    const char *path = lg_test_tmpfile(name);
    cr_assert_eq(lg_shell("sed 's/\"%s\": *[0-9]*/\"%s\": %s/' '%s' > '%s' && "
                          "grep -q '\"%s\": %s' '%s'",
                          key, key, value, lg_test_datafile("csv", "small.json"), path, key, value,
                          path),
                 0);
    return path;
}

/* A config whose sizes are in range but whose parameters alone outgrow memory and swap is
 * refused before a session, naming the config: it met the OOM killer at 24 GB before. */
Test(cli, a_model_larger_than_memory_is_refused_before_a_session)
{
    struct lg_out o = run_small_csv(small_json_with("big.json", "hidden", "65536"));
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "big.json: the model has") &&
                  strstr(o.text, "more than this machine's memory and swap"),
              "%s", o.text);
    free(o.text);
}

/* val_steps past every series' length leaves nothing to validate: said when the config is read,
 * naming the key, not in the first session's validation. */
Test(cli, a_val_steps_no_series_can_hold_is_refused_at_load)
{
    struct lg_out o = run_small_csv(small_json_with("val.json", "val_steps", "1000000"));
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "val.json: val_steps 1000000 leaves no validation window") &&
                  !strstr(o.text, "session 0"),
              "%s", o.text);
    free(o.text);
}

/* A config saved with a UTF-8 BOM (as some editors do) reads as the CSV itself does. */
Test(cli, a_csv_config_with_a_bom_is_read)
{
    const char *bom = lg_test_tmpfile("bom.json");
    cr_assert_eq(lg_shell("printf '\\357\\273\\277' > '%s' && cat '%s' >> '%s'", bom,
                          lg_test_datafile("csv", "small.json"), bom),
                 0);
    struct lg_out o = run_small_csv(bom);
    cr_expect(o.status != 2 && !strstr(o.text, "bad JSON"), "exit %d: %s", o.status, o.text);
    free(o.text);
}

Test(cli, a_session_that_fails_frees_what_it_took)
{
    /* the checkpoint cannot be written: its temporary name is taken by a directory */
    const char *dir = lg_test_tmpfile("ro");
    cr_assert_eq(lg_shell("mkdir -p '%s/checkpoint.safetensors.tmp'", dir), 0);
    struct lg_out o = lg_runf(LEAKGATE_BIN, "run --sessions 4 --no-reports --out '%s'", dir);
    cr_expect_eq(o.status, 2, "an I/O error is an input error: %s", o.text);
    cr_expect(strstr(o.text, "checkpoint.safetensors.tmp") != NULL, "names the file: %s", o.text);
    cr_expect(strstr(o.text, "session 0 (fp32) failed") != NULL, "%s", o.text);
    cr_expect(strstr(o.text, "still live at exit") == NULL,
              "model, trainer and optimizer freed: %s", o.text);
    free(o.text);
    o = run("run --sessions 4 --out /proc/no-such-dir/x");
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "cannot create /proc/no-such-dir") != NULL, "%s", o.text);
    free(o.text);
}

Test(cli, csv_training_runs_clean)
{
    struct lg_out o =
        lg_runf(LEAKGATE_BIN,
                "run --sessions 4 --quiet --no-reports --out '%s/o' --csv '%s' --csv-config '%s'",
                lg_test_tmpdir(), lg_test_datafile("csv", "example.csv"),
                lg_test_datafile("csv", "example.json"));
    cr_expect_eq(o.status, 0, "%s", o.text);
    free(o.text);
}

Test(cli, sigterm_leaves_a_partial_run_with_a_verdict)
{
    char out[512], results[600];
    snprintf(out, sizeof out, "%s/sig", lg_test_tmpdir());
    snprintf(results, sizeof results, "%s/results.jsonl", out);
    pid_t pid = lg_spawn(LEAKGATE_BIN, "/dev/null",
                         (char *const[]){"leakgate", "run", "--sessions", "100000", "--no-reports",
                                         "--out", out, NULL});
    /* wait until a few sessions are on disk, then ask it to stop */
    int lines = 0;
    for (int tries = 0; tries < 600 && lines < 4; tries++) {
        usleep(50000);
        FILE *f = fopen(results, "r");
        lines = 0;
        if (f) {
            char buf[1 << 16];
            while (fgets(buf, sizeof buf, f)) lines += strstr(buf, "\"type\":\"session\"") != NULL;
            fclose(f);
        }
    }
    cr_assert_geq(lines, 4, "sessions are streamed as they end");
    kill(pid, SIGTERM);
    int code = lg_wait_exit(pid); /* ended by itself after SIGTERM, not killed */
    FILE *f = fopen(results, "r");
    cr_assert_not_null(f);
    char buf[1 << 16];
    bool verdict = false, partial = false;
    while (fgets(buf, sizeof buf, f)) {
        if (strstr(buf, "\"type\":\"verdict\"")) {
            verdict = true;
            partial = strstr(buf, "\"partial\":true") != NULL;
        }
    }
    fclose(f);
    cr_expect(verdict && partial, "a verdict line marked partial closes the file");
    cr_expect_eq(code, 3, "a stopped run proves no leak and earns no pass: exit %d", code);
}

/* calibrate's --out is tried before its runs (minutes of them), and nothing is left behind. */
Test(cli, calibrate_refuses_an_unwritable_out_before_its_runs)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/adir", lg_test_tmpdir());
    cr_assert_eq(mkdir(dir, 0755), 0);
    struct lg_out o = lg_runf(LEAKGATE_BIN, "calibrate --runs 2 --sessions 8 --out '%s'", dir);
    cr_expect_eq(o.status, 2, "exit %d\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "not a regular file") && !strstr(o.text, "run 1/2"), "%s", o.text);
    free(o.text);
    cr_expect_not(lg_exists(lg_test_tmpfile("adir.runs")), "no work directory made");
    o = run("calibrate --runs 2 --sessions 8 --out /proc/lg-budgets.json");
    cr_expect_eq(o.status, 2, "exit %d\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "cannot write beside it"), "%s", o.text);
    free(o.text);
    /* a run too short to show noise would write budgets called measured */
    o = run("calibrate --runs 2 --sessions 3 --out /tmp/lg-never-written.json");
    cr_expect_eq(o.status, 2, "exit %d\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "needs at least 8 measured sessions"), "%s", o.text);
    free(o.text);
}

Test(cli, calibrate_writes_budgets_that_run_uses_and_records)
{
    char path[600];
    snprintf(path, sizeof path, "%s/budgets.json", lg_test_tmpdir());
    struct lg_out o = lg_runf(LEAKGATE_BIN, "calibrate --runs 3 --sessions 8 --out '%s'", path);
    cr_assert_eq(o.status, 0, "%s", o.text);
    cr_expect(strstr(o.text, "je_allocated") && strstr(o.text, "min n"),
              "the noise table is printed: %s", o.text);
    free(o.text);
    char *buf = lg_slurp(path, NULL);
    cr_assert_not_null(buf, "the budgets file is written");
    static const char *const members[] = {"\"schema\": \"leakgate.budgets/1\"",
                                          "\"machine\"",
                                          "\"device\": \"cpu\"",
                                          "\"build\": \"leakgate ",
                                          "\"command\": \"leakgate calibrate",
                                          "\"date\"",
                                          "\"observed\"",
                                          "\"rss\""};
    for (size_t k = 0; k < LG_ARRAY_LEN(members); k++)
        cr_expect(strstr(buf, members[k]), "the file names %s:\n%s", members[k], buf);
    free(buf);
    o = lg_runf(LEAKGATE_BIN, "run --sessions 8 --quiet --no-reports --budgets '%s' --out '%s/r'",
                path, lg_test_tmpdir());
    cr_expect_eq(o.status, 0, "%s", o.text);
    free(o.text);
    cr_expect_eq(
        lg_shell("grep -q 'budgets.json: measured on' '%s/r/results.jsonl'", lg_test_tmpdir()), 0,
        "the results record the budgets' real source");
    static const struct lg_usage_case bad[] = {
        {"calibrate --runs 1", "--runs: '1' is not an integer in 2..10000"},
        {"run --budgets /nonexistent.json", "/nonexistent.json: cannot open the budgets file"},
        {"calibrate --inject adam-state", ""}, /* calibration runs clean workloads only */
    };
    lg_expect_usage_errors(LEAKGATE_BIN, bad, LG_ARRAY_LEN(bad));
}

Test(cli, raw_malloc_is_named_by_its_allocating_function)
{
    struct lg_out o =
        run_out("run --sessions 8 --modes fp32 --no-reports --inject raw-malloc:256KiB");
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    const char *attr = strstr(o.text, "untagged growth by allocation stack");
    cr_expect(attr && strstr(attr, "raw_faults (trainer.c:"), "names raw_faults:\n%s", o.text);
    free(o.text);
}
