/* test_cli.c — the leakgate binary end to end: every injection is caught by the channel that
 * should catch it with the right attribution, the clean run passes, the reproduction shows the
 * VarMap's exact bytes and the retain site, bad input exits 2 with a message, and a signal
 * leaves a partial run on disk with a verdict. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "lg_test.h"

TestSuite(cli, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 240);

/* Runs leakgate with args (a shell fragment) and captures everything it prints. */
static struct lg_out run(const char *args) { return lg_run(LEAKGATE_BIN, args); }

/* The verdict table's line for a channel ("" when absent). */
static const char *line_of(const char *text, const char *channel, char *buf, size_t size)
{
    buf[0] = '\0';
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        size_t cl = strlen(channel);
        if (len > cl && strncmp(p, channel, cl) == 0 && p[cl] == ' ') {
            snprintf(buf, size, "%.*s", (int)len, p);
            return buf;
        }
        p = nl ? nl + 1 : NULL;
    }
    return buf;
}

static void expect_leak(const char *inject, const char *modes, const char *channel,
                        const char *needle)
{
    char args[512], line[1024];
    snprintf(args, sizeof args,
             "run --sessions 6 --quiet --no-reports --out '%s/out' --modes %s --inject %s",
             lg_test_tmpdir(), modes, inject);
    struct lg_out o = run(args);
    line_of(o.text, channel, line, sizeof line);
    cr_expect_eq(o.status, 1, "--inject %s: exit %d, expected 1 (leak)\n%s", inject, o.status,
                 o.text);
    cr_expect(strstr(line, " leak ") != NULL, "--inject %s: channel %s should say leak:\n%s",
              inject, channel, o.text);
    cr_expect(strstr(line, needle) != NULL, "--inject %s: %s should name '%s':\n%s", inject,
              channel, needle, line);
    free(o.text);
}

Test(cli, clean_run_passes)
{
    char args[512], line[1024];
    snprintf(args, sizeof args, "run --sessions 8 --quiet --out '%s/out' --modes fp32,int8,qat",
             lg_test_tmpdir());
    struct lg_out o = run(args);
    cr_expect_eq(o.status, 0, "exit %d:\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "PASS") != NULL, "%s", o.text);
    cr_expect(strstr(line_of(o.text, "tagged_host", line, sizeof line), " pass ") != NULL, "%s",
              line);
    cr_expect(strstr(line_of(o.text, "je_allocated", line, sizeof line), " pass ") != NULL, "%s",
              line);
    char path[512];
    snprintf(path, sizeof path, "%s/out/results.jsonl", lg_test_tmpdir());
    cr_expect_eq(access(path, R_OK), 0, "results.jsonl written");
    free(o.text);
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
    char args[512], line[1024];
    snprintf(args, sizeof args,
             "run --sessions 8 --quiet --no-reports --out '%s/out' --inject raw-malloc:256KiB",
             lg_test_tmpdir());
    struct lg_out o = run(args);
    cr_expect_eq(o.status, 1, "%s", o.text);
    cr_expect(strstr(line_of(o.text, "je_allocated", line, sizeof line), " leak ") != NULL, "%s",
              o.text);
    cr_expect(strstr(line, "256.00 KiB") != NULL, "the slope is the injected size: %s", line);
    cr_expect(strstr(line_of(o.text, "tagged_host", line, sizeof line), " pass ") != NULL,
              "untagged: the tracker's ledger cannot see it: %s", line);
    free(o.text);
}

Test(cli, raw_mmap_is_caught_by_rss_only)
{
    char args[512], line[1024];
    snprintf(args, sizeof args,
             "run --sessions 8 --quiet --no-reports --out '%s/out' --inject raw-mmap:2MiB",
             lg_test_tmpdir());
    struct lg_out o = run(args);
    cr_expect_eq(o.status, 1, "%s", o.text);
    cr_expect(strstr(line_of(o.text, "rss", line, sizeof line), " leak ") != NULL, "%s", o.text);
    cr_expect(strstr(line_of(o.text, "je_allocated", line, sizeof line), " pass ") != NULL,
              "outside the allocator: jemalloc cannot see it: %s", line);
    free(o.text);
}

Test(cli, injection_from_a_later_session)
{
    char args[512], line[1024];
    /* 2 warm-up (fp32, int8) + 10 measured: the leak starts at session 6 */
    snprintf(args, sizeof args,
             "run --sessions 10 --quiet --no-reports --out '%s/out' --inject adam-state@6",
             lg_test_tmpdir());
    struct lg_out o = run(args);
    cr_expect_eq(o.status, 1, "%s", o.text);
    cr_expect(strstr(line_of(o.text, "tagged_host", line, sizeof line), "first in session 6") !=
                  NULL,
              "%s", line);
    free(o.text);
}

Test(cli, reproduce_shows_the_varmap_bytes_and_site_and_fixed_shows_zero)
{
    char args[512];
    snprintf(args, sizeof args, "reproduce varmap-dup-ref --preset tiny --out '%s/r'",
             lg_test_tmpdir());
    struct lg_out o = run(args);
    cr_expect_eq(o.status, 1, "%s", o.text);
    cr_expect(strstr(o.text, "class varmap") && strstr(o.text, "(108844 bytes)"),
              "tiny's VarMap is 108,844 bytes (spec table):\n%s", o.text);
    cr_expect(strstr(o.text, "retained at tr_new (trainer.c:") != NULL, "%s", o.text);
    free(o.text);
    snprintf(args, sizeof args, "reproduce varmap-dup-ref --preset tiny --fixed --out '%s/f'",
             lg_test_tmpdir());
    o = run(args);
    cr_expect_eq(o.status, 0, "%s", o.text);
    cr_expect(strstr(o.text, "class varmap") == NULL, "%s", o.text);
    free(o.text);
}

Test(cli, bad_input_exits_2_with_a_message)
{
    static const struct {
        const char *args, *needle;
    } cases[] = {
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
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lg_out o = run(cases[i].args);
        cr_expect_eq(o.status, 2, "'%s': exit %d, expected 2\n%s", cases[i].args, o.status, o.text);
        cr_expect(strstr(o.text, cases[i].needle) != NULL, "'%s' should say '%s':\n%s",
                  cases[i].args, cases[i].needle, o.text);
        free(o.text);
    }
}

Test(cli, malformed_csv_exits_2_naming_file_and_line)
{
    char args[1024];
    snprintf(
        args, sizeof args,
        "run --sessions 4 --quiet --out '%s/o' --csv '%s/csv/bad/number.csv' --csv-config '%s/csv/small.json'",
        lg_test_tmpdir(), lg_test_data_dir(), lg_test_data_dir());
    struct lg_out o = run(args);
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "number.csv:4: column 'y' (3): 'abc' is not a number") != NULL,
              "names the file, line and column: %s", o.text);
    cr_expect(strstr(o.text, "still live at exit") == NULL, "the error path freed everything: %s",
              o.text);
    free(o.text);
}

Test(cli, a_session_that_fails_frees_what_it_took)
{
    /* the checkpoint cannot be written: its temporary name is taken by a directory */
    char dir[512], args[1024];
    snprintf(dir, sizeof dir, "%s/ro", lg_test_tmpdir());
    snprintf(args, sizeof args, "mkdir -p '%s/checkpoint.safetensors.tmp'", dir);
    cr_assert_eq(system(args), 0);
    snprintf(args, sizeof args, "run --sessions 4 --no-reports --out '%s'", dir);
    struct lg_out o = run(args);
    cr_expect_eq(o.status, 2, "an I/O error is an input error: %s", o.text);
    cr_expect(strstr(o.text, "checkpoint.safetensors.tmp") != NULL, "names the file: %s", o.text);
    cr_expect(strstr(o.text, "session 0 (fp32) failed") != NULL, "%s", o.text);
    cr_expect(strstr(o.text, "still live at exit") == NULL,
              "model, trainer and optimizer freed: %s", o.text);
    free(o.text);
    snprintf(args, sizeof args, "run --sessions 4 --out /proc/no-such-dir/x");
    o = run(args);
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "cannot create /proc/no-such-dir") != NULL, "%s", o.text);
    free(o.text);
}

Test(cli, csv_training_runs_clean)
{
    char args[1024];
    snprintf(
        args, sizeof args,
        "run --sessions 4 --quiet --no-reports --out '%s/o' --csv '%s/csv/example.csv' --csv-config '%s/csv/example.json'",
        lg_test_tmpdir(), lg_test_data_dir(), lg_test_data_dir());
    struct lg_out o = run(args);
    cr_expect_eq(o.status, 0, "%s", o.text);
    free(o.text);
}

Test(cli, sigterm_leaves_a_partial_run_with_a_verdict)
{
    char out[512], results[600];
    snprintf(out, sizeof out, "%s/sig", lg_test_tmpdir());
    snprintf(results, sizeof results, "%s/results.jsonl", out);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(LEAKGATE_BIN, "leakgate", "run", "--sessions", "100000", "--no-reports", "--out", out,
              (char *)NULL);
        _exit(127);
    }
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
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st), "ended by itself after SIGTERM, not killed");
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
    cr_expect_eq(WEXITSTATUS(st), 3, "a stopped run proves no leak and earns no pass: exit %d",
                 WEXITSTATUS(st));
}

Test(cli, calibrate_writes_budgets_that_run_uses_and_records)
{
    char args[1024], path[600];
    snprintf(path, sizeof path, "%s/budgets.json", lg_test_tmpdir());
    snprintf(args, sizeof args, "calibrate --runs 3 --sessions 8 --out '%s'", path);
    struct lg_out o = run(args);
    cr_assert_eq(o.status, 0, "%s", o.text);
    cr_expect(strstr(o.text, "je_allocated") && strstr(o.text, "min n"),
              "the noise table is printed: %s", o.text);
    free(o.text);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "the budgets file is written");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    static const char *const members[] = {"\"schema\": \"leakgate.budgets/1\"",
                                          "\"machine\"",
                                          "\"device\": \"cpu\"",
                                          "\"build\": \"leakgate ",
                                          "\"command\": \"leakgate calibrate",
                                          "\"date\"",
                                          "\"observed\"",
                                          "\"rss\""};
    for (size_t k = 0; k < sizeof members / sizeof members[0]; k++)
        cr_expect(strstr(buf, members[k]), "the file names %s:\n%s", members[k], buf);
    snprintf(args, sizeof args, "run --sessions 8 --quiet --no-reports --budgets '%s' --out '%s/r'",
             path, lg_test_tmpdir());
    o = run(args);
    cr_expect_eq(o.status, 0, "%s", o.text);
    free(o.text);
    snprintf(args, sizeof args, "grep -q 'budgets.json: measured on' '%s/r/results.jsonl'",
             lg_test_tmpdir());
    cr_expect_eq(system(args), 0, "the results record the budgets' real source");
    /* bad input */
    o = run("calibrate --runs 1");
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "--runs: '1' is not an integer in 2..10000"), "%s", o.text);
    free(o.text);
    o = run("run --budgets /nonexistent.json");
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "/nonexistent.json: cannot open the budgets file"), "%s", o.text);
    free(o.text);
    o = run("calibrate --inject adam-state");
    cr_expect_eq(o.status, 2, "calibration runs clean workloads only: %s", o.text);
    free(o.text);
}

Test(cli, raw_malloc_is_named_by_its_allocating_function)
{
    char args[512];
    snprintf(args, sizeof args,
             "run --sessions 8 --modes fp32 --no-reports --out '%s/out' --inject raw-malloc:256KiB",
             lg_test_tmpdir());
    struct lg_out o = run(args);
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    const char *attr = strstr(o.text, "untagged growth by allocation stack");
    cr_expect(attr && strstr(attr, "raw_faults (trainer.c:"), "names raw_faults:\n%s", o.text);
    free(o.text);
}
