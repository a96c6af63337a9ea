/* test_exec.c — `leakgate exec` end to end on programs leakgate did not build (tests/exec/):
 * an untagged leak named by the function that allocated it, its clean twin passing, exact
 * tag and reference leaks through the C API, sessions found in the output of C stdio, write,
 * Python and Rust, device memory through a test double of the CUDA runtime, many threads, a
 * program that forks, one that crashes or exits non-zero, and the programs exec refuses.
 * Every check is on the exit status and on what the results file holds. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "exec_impl.h"
#include "lg_test.h"
#include "lga_wire.h"
#include "results.h"
#include "results_json.h"
#include "rpt_text.h"
#include "summary.h"

TestSuite(exec, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 300);

/* Runs `leakgate exec OPTS -- PROG ARGS` with results in the scratch directory. */
static struct lg_out exec_run(const char *opts, const char *prog, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec --out '%s/out' %s -- '%s' %s", lg_test_tmpdir(), opts, prog,
             args);
    return lg_run(LEAKGATE_BIN, cmd);
}

static struct rpt_results *results(void)
{
    struct rpt_results *r = NULL;
    char path[600];
    snprintf(path, sizeof path, "%s/out/results.jsonl", lg_test_tmpdir());
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    return r;
}

static void expect_channel(const char *text, const char *channel, const char *status)
{
    char want[64];
    snprintf(want, sizeof want, " %s ", status);
    lg_expect_says(text, &(struct lg_says){channel, want, "its status"}, 1, false);
}

/* The first frame of the run's attribution: the latest measured session's top growth stack. */
static const char *top_frame(const struct rpt_results *r, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = r->n_sessions - 1; i >= 0; i--) {
        const struct rpt_session *s = &r->sessions[i];
        if (s->warmup || s->alloc_sessions <= 0 || !s->n_alloc_stacks) continue;
        snprintf(buf, size, "%.*s", (int)strcspn(s->alloc_stacks[0].frames, "\n"),
                 s->alloc_stacks[0].frames);
        break;
    }
    return buf;
}

Test(exec, an_untagged_leak_is_named_by_the_function_that_allocated_it)
{
    struct lg_out o = exec_run("--no-reports", EXEC_LEAKY, "16");
    cr_expect_eq(o.status, 1, "exit %d, expected 1 (leak):\n%s", o.status, o.text);
    expect_channel(o.text, "je_allocated", "leak");
    expect_channel(o.text, "tagged_host", "pass");
    expect_channel(o.text, "refs", "pass");
    const char *attr = strstr(o.text, "untagged growth by allocation stack");
    cr_expect(attr && strstr(attr, "leak_256k (leaky.c:"), "the verdict names leak_256k:\n%s",
              o.text);
    free(o.text);
    struct rpt_results *r = results();
    char top[600];
    cr_expect_eq(strncmp(top_frame(r, top, sizeof top), "leak_256k (leaky.c:", 19), 0,
                 "the top stack starts in leak_256k: '%s'", top);
    cr_expect_str_eq(r->run.command, "exec");
    cr_expect(strstr(r->run.cmd, "exec_leaky") != NULL, "the run line has the command: %s",
              r->run.cmd);
    cr_expect_eq(r->run.prof_sample, 128 << 10);
    /* about 256 KiB per session, inside the 95% interval (widened by a quarter: a test must not
     * fail on the 1 run in 20 that a 95% interval misses) */
    const struct rpt_session *s = NULL;
    for (int i = 0; i < r->n_sessions; i++)
        if (r->sessions[i].alloc_sessions > 0) s = &r->sessions[i];
    cr_assert_not_null(s);
    double per = (double)s->alloc_stacks[0].bytes / s->alloc_sessions, lo, hi;
    rpt_alloc_interval(&s->alloc_stacks[0], r->run.prof_sample, &lo, &hi);
    lo /= s->alloc_sessions;
    hi /= s->alloc_sessions;
    cr_expect(lo < per && per < hi, "the interval holds the estimate: %.0f in [%.0f, %.0f]", per,
              lo, hi);
    cr_expect(lo * 0.75 <= 262144.0 && 262144.0 <= hi * 1.25,
              "%.0f B/session, 95%% [%.0f, %.0f], against 262144", per, lo, hi);
    cr_expect(r->has_verdict && r->verdict.exit_code == 1);
    rpt_results_free(r);
}

Test(exec, the_clean_twin_passes)
{
    struct lg_out o = exec_run("--no-reports", EXEC_CLEAN, "10");
    cr_expect_eq(o.status, 0, "exit %d, expected 0:\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "PASS") != NULL, "%s", o.text);
    for (const char *const *c = (const char *const[]){"tagged_host", "refs", "je_allocated",
                                                      "je_active", "je_resident", "rss", NULL};
         *c; c++)
        expect_channel(o.text, *c, "pass");
    expect_channel(o.text, "dev_process", "unavailable"); /* no device use: never a zero */
    cr_expect(strstr(o.text, "untagged growth by allocation stack") == NULL,
              "nothing to attribute:\n%s", o.text);
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->n_sessions, 10);
    cr_expect(r->sessions[0].warmup && !r->sessions[1].warmup);
    cr_expect_eq(r->sessions[3].absolute[RPT_CH_DEV_PROCESS], RPT_NONE);
    cr_expect_neq(r->sessions[3].absolute[RPT_CH_TAGGED_HOST], RPT_NONE,
                  "the program tags: measured");
    rpt_results_free(r);
}

Test(exec, tag_scopes_and_the_reference_ledger_are_exact)
{
    struct lg_out o = exec_run("--no-reports --stacks", EXEC_CLEAN, "6 tag-leak ref-leak");
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    LG_EXPECT_SAYS(o.text, {"tagged_host", " leak ", "the tag's leak"},
                   {"tagged_host", "model/weights", "the tag"}, {"refs", " leak ", "the extra ref"},
                   {"refs", "retained at main (leaky.c:", "the retain site"});
    free(o.text);
    struct rpt_results *r = results();
    const struct rpt_session *s = &r->sessions[2];
    cr_assert(s->n_groups >= 1, "session 2 lists what it left");
    cr_expect_str_eq(s->groups[0].tag, "model/weights");
    cr_expect_eq(s->groups[0].bytes, (1 << 16) * 4);
    cr_assert(s->groups[0].n_stacks >= 1, "--stacks: the allocation's stack");
    cr_expect(strncmp(s->groups[0].stacks[0].frames, "main (leaky.c:", 14) == 0, "stack: %s",
              s->groups[0].stacks[0].frames);
    rpt_results_free(r);
}

static void marker_case(const char *how, const char *stream)
{
    char args[128];
    snprintf(args, sizeof args, "12 leak %s %s", how, stream);
    struct lg_out o =
        exec_run("--no-reports --session-marker '^epoch [0-9]+ done'", EXEC_MARKER, args);
    cr_expect_eq(o.status, 1, "%s to %s: exit %d, expected 1:\n%s", how, stream, o.status, o.text);
    cr_expect(strstr(o.text, "keep_history (marker.c:") != NULL, "%s: names keep_history:\n%s", how,
              o.text);
    expect_channel(o.text, "tagged_host", "unavailable"); /* no API: not measured */
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->n_sessions, 12, "%s to %s: one session per marker line", how, stream);
    rpt_results_free(r);
}

Test(exec, marker_lines_from_c_stdio_and_write_end_sessions)
{
    marker_case("printf", "stdout");
    marker_case("fprintf", "stderr");
    marker_case("puts", "stdout");
    marker_case("write", "stdout");
    marker_case("write", "stderr");
    struct lg_out o =
        exec_run("--no-reports --session-marker '^epoch [0-9]+ done'", EXEC_MARKER, "8");
    cr_expect_eq(o.status, 0, "the clean run passes: exit %d\n%s", o.status, o.text);
    free(o.text);
}

Test(exec, marker_lines_from_python)
{
    char args[600];
    snprintf(args, sizeof args, "'%s' 12 leak", EXEC_MARKER_PY);
    struct lg_out o =
        exec_run("--no-reports --session-marker '^epoch [0-9]+ done'", "python3", args);
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    expect_channel(o.text, "je_allocated", "leak");
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->n_sessions, 12);
    rpt_results_free(r);
}

Test(exec, marker_lines_from_rust)
{
    if (!EXEC_RUST[0]) {
        printf("SKIP: no rustc at configure time\n");
        cr_skip_test("no rustc");
    }
    struct lg_out o =
        exec_run("--no-reports --session-marker '^epoch [0-9]+ done'", EXEC_RUST, "12");
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "marker::keep_history (marker.rs:") != NULL,
              "Rust names demangled:\n%s", o.text);
    free(o.text);
}

Test(exec, a_crash_is_exit_4_naming_the_signal_and_keeps_the_sessions)
{
    struct lg_out o = exec_run("--no-reports", EXEC_CRASHER, "4 segv");
    cr_expect_eq(o.status, 4, "exit %d:\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "signal 11 (Segmentation fault)") != NULL, "%s", o.text);
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->n_sessions, 4, "the 4 sessions before the crash are on disk");
    cr_expect(r->has_verdict && r->verdict.partial, "judged as a partial run");
    cr_expect_eq(r->verdict.exit_code, 4);
    rpt_results_free(r);

    o = exec_run("--no-reports", EXEC_CRASHER, "3 exit3");
    cr_expect_eq(o.status, 4, "exit %d:\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "exited with status 3") != NULL, "%s", o.text);
    cr_expect(strstr(o.text, "session begun and never ended") != NULL, "%s", o.text);
    free(o.text);
}

Test(exec, a_program_killed_after_sessions_that_leak_is_a_leak_naming_its_death)
{
    /* 64 MiB kept in each of 6 sessions, then SIGKILL raised on itself, as the OOM killer
     * would: what finished shows the leak, so the verdict is LEAK, not a failed run */
    struct lg_out o = exec_run("--no-reports", EXEC_CRASHER, "6 sigkill 64");
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    LG_EXPECT_SAYS(o.text, {"je_allocated", " leak ", "the growth"}, {NULL, "LEAK:", "the verdict"},
                   {NULL, "then CMD was killed by signal 9 (Killed)", "the death"});
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->n_sessions, 6);
    cr_expect(r->has_verdict && r->verdict.partial && r->verdict.status == RPT_LEAK,
              "a partial run that leaks");
    cr_expect_eq(r->verdict.exit_code, 1);
    rpt_results_free(r);
    /* killed the same way after clean sessions: a failed run, as before */
    o = exec_run("--no-reports", EXEC_CRASHER, "6 sigkill");
    cr_expect_eq(o.status, 4, "exit %d:\n%s", o.status, o.text);
    LG_EXPECT_NOT_SAYS(o.text, {NULL, "LEAK", "no leak"});
    free(o.text);
}

Test(exec, forked_children_and_grandchildren_stay_inert)
{
    struct lg_out o = exec_run("--no-reports", EXEC_FORKER, "6");
    cr_expect_eq(o.status, 0, "exit %d (30: a child saw itself measured):\n%s", o.status, o.text);
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->n_sessions, 6, "only the parent's sessions");
    rpt_results_free(r);
}

Test(exec, many_threads_allocating_at_once)
{
    struct lg_out o = exec_run("--no-reports", EXEC_THREADS, "6 12");
    cr_expect_eq(o.status, 0, "exit %d:\n%s", o.status, o.text);
    expect_channel(o.text, "tagged_host", "pass");
    free(o.text);
    o = exec_run("--no-reports", EXEC_THREADS, "6 12 leak");
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    LG_EXPECT_SAYS(o.text, {"tagged_host", "worker/3, 64.00 KiB", "the thread's tag"});
    free(o.text);
    struct rpt_results *r = results();
    for (int i = 0; i < r->n_sessions; i++)
        cr_expect_eq(r->sessions[i].leaked_host_bytes, 64 << 10,
                     "session %d: exactly worker 3's 64 KiB", i);
    rpt_results_free(r);
}

Test(exec, device_memory_through_the_cuda_calls)
{
    struct lg_out o = exec_run("--no-reports", EXEC_DEVICE, "8 clean");
    cr_expect_eq(o.status, 0, "exit %d:\n%s", o.status, o.text);
    expect_channel(o.text, "dev_process", "pass");
    expect_channel(o.text, "dev_driver", "pass");
    free(o.text);
    o = exec_run("--no-reports", EXEC_DEVICE, "8 leak");
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    expect_channel(o.text, "dev_process", "leak");
    expect_channel(o.text, "tagged_device", "unavailable");
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->sessions[5].delta[RPT_CH_DEV_PROCESS], 5 * (4 << 20),
                 "4 MiB a session, by pointer");
    rpt_results_free(r);
    o = exec_run("--no-reports", EXEC_DEVICE, "8 tag-leak");
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    LG_EXPECT_SAYS(o.text, {"tagged_device", " leak ", "the device leak"},
                   {"tagged_device", "act/device.scratch", "the tag"});
    free(o.text);
}

Test(exec, reports_draw_the_stacks_as_a_flame_graph)
{
    struct lg_out o = exec_run("", EXEC_LEAKY, "14");
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    free(o.text);
    char path[700], cmd[1500];
    snprintf(path, sizeof path, "%s/out/stacks.folded", lg_test_tmpdir());
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "stacks.folded written");
    char line[4096] = "";
    cr_expect_not_null(fgets(line, sizeof line, f));
    fclose(f);
    cr_expect(strstr(line, "main;leak_256k ") != NULL, "folded: root first, leaf last: %s", line);
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s/out/flame.svg'", lg_test_tmpdir());
    cr_expect_eq(system(cmd), 0, "flame.svg is well-formed XML");
    snprintf(cmd, sizeof cmd,
             "grep -q 'id=\"alloc-stacks\"' '%s/out/report.html' && grep -q '<svg class=\"flame\"' "
             "'%s/out/report.html' && grep -q 'leak_256k' '%s/out/report.html'",
             lg_test_tmpdir(), lg_test_tmpdir(), lg_test_tmpdir());
    cr_expect_eq(system(cmd), 0, "report.html has the stack table and the flame graph inline");
    lg_expect_jsonl("results.schema.json", lg_test_tmpfile("out/results.jsonl"), 0,
                    "exec's results validate against docs/results.schema.json");
}

Test(exec, the_api_outside_exec_is_a_no_op)
{
    struct lg_out o = lg_run(EXEC_LEAKY, "3 tag-leak ref-leak");
    cr_expect_eq(o.status, 0, "runs unchanged: exit %d\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "session 2 done (0)") != NULL, "leakgate_active() is 0: %s", o.text);
    free(o.text);
}

Test(exec, programs_that_cannot_carry_the_agent_are_refused)
{
    struct lg_out o = exec_run("", "no-such-program-here", "");
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "command not found") != NULL, "%s", o.text);
    free(o.text);
    o = exec_run("", EXEC_STATIC, "");
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "statically linked") != NULL, "%s", o.text);
    free(o.text);
    const char *copy = lg_test_tmpfile("not-executable");
    FILE *f = fopen(copy, "w");
    fputs("#!/bin/sh\n", f);
    fclose(f);
    o = exec_run("", copy, "");
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "not executable") != NULL, "%s", o.text);
    free(o.text);
    o = lg_run(LEAKGATE_BIN, "exec --preset tiny -- true");
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "does not apply to exec") != NULL, "%s", o.text);
    free(o.text);
    o = lg_run(LEAKGATE_BIN, "exec --session-marker '(' -- true");
    cr_expect_eq(o.status, 2, "a bad regex is a usage error: %s", o.text);
    cr_expect(strstr(o.text, "--session-marker") != NULL, "%s", o.text);
    free(o.text);
}

Test(exec, a_setuid_program_is_refused)
{
    if (geteuid() != 0) {
        printf("SKIP: making a set-user-ID file of another owner needs root\n");
        cr_skip_test("not root");
    }
    char cmd[1200];
    const char *copy = lg_test_tmpfile("setuid-copy");
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chown 65534 '%s' && chmod 4755 '%s'", EXEC_CLEAN,
             copy, copy, copy);
    cr_assert_eq(system(cmd), 0);
    struct lg_out o = exec_run("", copy, "2");
    cr_expect_eq(o.status, 2, "%s", o.text);
    cr_expect(strstr(o.text, "set-user-ID") != NULL && strstr(o.text, "LD_PRELOAD") != NULL, "%s",
              o.text);
    free(o.text);
}

Test(exec, sigterm_stops_cmd_and_the_run_is_inconclusive)
{
    char out[600];
    snprintf(out, sizeof out, "%s/out", lg_test_tmpdir());
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(LEAKGATE_BIN, LEAKGATE_BIN, "exec", "--no-reports", "--out", out, "--session-marker",
              "^epoch", "--", "python3", "-c",
              "import time\nfor e in range(10000):\n    print(f'epoch {e} done')\n    "
              "time.sleep(0.05)\n",
              (char *)NULL);
        _exit(127);
    }
    sleep(3);
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 3, "a stopped clean run exits 3 (status 0x%x)",
              st);
    struct rpt_results *r = results();
    cr_expect(r->has_verdict && r->verdict.partial, "the verdict says partial");
    cr_expect_str_eq(r->verdict.stopped, "SIGTERM");
    cr_expect_gt(r->n_sessions, 3, "the sessions before the stop are kept (%d)", r->n_sessions);
    rpt_results_free(r);
}

Test(exec, options_shared_with_run_and_the_users_malloc_conf)
{
    /* --require: a channel the program cannot give makes the run inconclusive, said so */
    struct lg_out o = exec_run("--no-reports --require tagged_host,rss --session-marker '^epoch'",
                               EXEC_MARKER, "8");
    cr_expect_eq(o.status, 3, "exit %d:\n%s", o.status, o.text);
    LG_EXPECT_SAYS(o.text, {"tagged_host", "yes unavailable", "no API: not measured"});
    free(o.text);
    /* the user's MALLOC_CONF comes last and wins: prof:false turns attribution off, not counters */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "MALLOC_CONF=prof:false '%s' exec --no-reports --out '%s/out' -- '%s' 12 2>&1",
             LEAKGATE_BIN, lg_test_tmpdir(), EXEC_LEAKY);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, p);
    text[n] = '\0';
    int st = pclose(p);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "the leak is still caught: status 0x%x\n%s",
              st, text);
    cr_expect(strstr(text, "has no heap profiling") != NULL, "exec says why nothing is named:\n%s",
              text);
    struct rpt_results *r = results();
    for (int i = 0; i < r->n_sessions; i++)
        cr_expect_eq(r->sessions[i].alloc_sessions, 0, "no heap profile with prof:false");
    rpt_results_free(r);
}

/* A SESSION payload as agent/lga_session.c writes it, with the figures a test sets. */
struct forged {
    int64_t je, peak, left, group_bytes, group_count;
    int64_t begin_je; /* 0: no begin snapshot */
};

static void put_snapshot(struct lga_enc *e, int64_t je)
{
    lga_put_f64(e, 1.0);
    lga_put_u32(e, 1);
    struct trk_snapshot s = {
        .je_allocated = je, .je_active = je, .je_resident = je, .rss = 8 << 20};
    lga_put_u32(e, TRK_SNAPSHOT_NFIGURES);
#define PUT(field, kind) lga_put_i64(e, s.field);
    TRK_SNAPSHOT_FIGURES(PUT)
#undef PUT
}

static int decode_forged(const struct forged *f)
{
    struct lga_enc e;
    lga_enc_init(&e, LGA_SESSION);
    lga_put_u32(&e, 0);   /* the agent's index */
    lga_put_f64(&e, 0.1); /* seconds */
    lga_put_u32(&e, LGA_USED_TAGS);
    put_snapshot(&e, f->je);
    lga_put_i64(&e, f->peak);
    lga_put_i64(&e, 0);
    lga_put_i64(&e, f->left);
    lga_put_i64(&e, 0);
    lga_put_u32(&e, 1); /* one leak group, one stack */
    lga_put_str(&e, "act/x");
    lga_put_u32(&e, 0);
    lga_put_i64(&e, f->group_bytes);
    lga_put_i64(&e, f->group_count);
    lga_put_u32(&e, 1);
    lga_put_i64(&e, 1);
    lga_put_str(&e, "0x1");
    lga_put_u32(&e, 0); /* no references */
    lga_put_str(&e, "");
    lga_put_str(&e, "");
    lga_put_u32(&e, f->begin_je != 0);
    if (f->begin_je) put_snapshot(&e, f->begin_je);
    lga_put_u32(&e, 0); /* no notes */
    cr_assert(lga_enc_finish(&e));
    struct rpt_session s;
    struct hx_exec_msg m;
    memset(&s, 0, sizeof s);
    const size_t header = 16; /* magic, type, payload length */
    int rc = hx_exec_decode_session(e.p + header, e.n - header, NULL, &s, &m);
    rpt_session_fini(&s);
    lga_enc_fini(&e);
    return rc;
}

/* The program writes to the agent's socket too: figures no agent could send are refused by
 * name, never written into a results file its reader refuses or summed until they wrap. */
Test(exec, a_forged_session_message_is_refused_naming_the_figure)
{
    const struct forged ok = {1 << 20, 4096, 4096, 4096, 2, 0};
    cr_assert_eq(decode_forged(&ok), LG_OK, "%s", lg_errmsg());
    static const struct {
        struct forged f;
        const char *says;
    } bad[] = {
        {{1 << 20, 4096, 4096, 4096, -1, 0}, "a leak group's block count is -1"},
        {{1 << 20, 4096, 4096, INT64_MAX, 2, 0}, "a leak group's bytes is 9223372036854775807"},
        {{1 << 20, 4096, INT64_MAX, 4096, 2, 0}, "the host bytes left"},
        {{1 << 20, -7, 4096, 4096, 2, 0}, "the host peak is -7"},
        {{INT64_MAX, 4096, 4096, 4096, 2, 0},
         "a memory figure (je_allocated) is 9223372036854775807"},
        {{1 << 20, 4096, 4096, 4096, 2, INT64_MAX}, "a memory figure (je_allocated)"},
    };
    for (size_t i = 0; i < LG_ARRAY_LEN(bad); i++) {
        cr_expect_eq(decode_forged(&bad[i].f), LG_EFORMAT, "case %zu accepted", i);
        cr_expect(strstr(lg_errmsg(), "a malformed session message from the agent") &&
                      strstr(lg_errmsg(), bad[i].says),
                  "case %zu: %s", i, lg_errmsg());
    }
}

/* A program that closes the agent's socket goes on unmeasured: its later sessions (which leak
 * here) were never seen, so the run is not a PASS, and every later session call says
 * LEAKGATE_ELOST. */
Test(exec, a_program_that_drops_the_agent_is_never_a_pass)
{
    struct lg_out o = exec_run("--no-reports", EXEC_DROPPER, "12 4");
    cr_expect_eq(o.status, 3, "exit %d, expected 3 (inconclusive):\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "the agent's connection ended before CMD did (after 5 session(s))"),
              "%s", o.text);
    cr_expect(strstr(o.text, "stopped (the agent's connection ended before CMD)"), "%s", o.text);
    cr_expect(strstr(o.text, "end 5 = 2") && strstr(o.text, "end 11 = 2"),
              "every session call after the loss says LEAKGATE_ELOST:\n%s", o.text);
    free(o.text);
    struct rpt_results *r = results();
    cr_expect(r->has_verdict && r->verdict.partial && r->verdict.status != RPT_PASS);
    rpt_results_free(r);
}

/* ---- issue 42 (2, 3, 5, the weaker cases) and 33 (an open session, the static runtime) ---- */

Test(exec, every_session_is_judged_however_many_the_program_runs)
{
    /* the series starts with room for 16 sessions beyond --warmup (a test hook: 1,024 in real
     * runs) and must grow; a leak of 64 KiB per epoch from epoch 150 of 240 is found */
    setenv("LEAKGATE_TEST_SERIES_START", "16", 1);
    struct lg_out o = exec_run("--no-reports --quiet --session-marker '^epoch [0-9]+ done'",
                               EXEC_MARKER, "240 leak:65536@150");
    unsetenv("LEAKGATE_TEST_SERIES_START");
    cr_expect_eq(o.status, 1, "exit %d, expected 1 (leak):\n%s", o.status, o.text);
    expect_channel(o.text, "je_allocated", "leak");
    cr_expect(strstr(o.text, "not judged") == NULL, "no session left unjudged:\n%s", o.text);
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->n_sessions, 240);
    cr_expect(r->has_verdict && r->verdict.sessions_measured == 239,
              "every measured session judged: %d", r->verdict.sessions_measured);
    rpt_results_free(r);
}

Test(exec, a_long_marker_line_is_judged_not_refused)
{
    /* "epoch N done" and 500 characters more, 256 KiB kept per epoch: LEAK, never exit 2 */
    struct lg_out o = exec_run("--no-reports --session-marker '^epoch [0-9]+ done'", EXEC_MARKER,
                               "12 leak:262144 long:500");
    cr_expect_eq(o.status, 1, "exit %d, expected 1 (leak):\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "malformed") == NULL, "%s", o.text);
    free(o.text);
    o = exec_run("--no-reports --session-marker '^epoch [0-9]+ done'", EXEC_MARKER,
                 "8 clean long:4000"); /* past the 4 KiB the agent matches */
    cr_expect_eq(o.status, 0, "exit %d, expected 0:\n%s", o.status, o.text);
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->n_sessions, 8);
    rpt_results_free(r);
}

Test(exec, the_minimum_sessions_follow_require)
{
    /* only what --require names is held to its minimum: je_allocated, left out, is not named
     * (as `run` does with the same options) */
    struct lg_out o = exec_run("--no-reports --sessions 3 --require rss --budget rss.slope=4MiB",
                               EXEC_CLEAN, "4");
    cr_expect(strstr(o.text, "je_allocated") == NULL, "a channel left out is named:\n%s", o.text);
    cr_expect(o.status != 2 || strstr(o.text, "the required channel rss needs") != NULL, "%s",
              o.text);
    free(o.text);
    o = exec_run("--no-reports --sessions 4 --require rss --budget rss.slope=4MiB", EXEC_CLEAN,
                 "5");
    cr_expect_eq(o.status, 0, "enough sessions for rss:\n%s", o.text);
    free(o.text);
    /* and a channel that is required still needs its sessions */
    o = exec_run("--no-reports --sessions 3 --require je_allocated", EXEC_CLEAN, "4");
    cr_expect_eq(o.status, 2, "refused:\n%s", o.text);
    cr_expect(strstr(o.text, "je_allocated needs at least") != NULL, "%s", o.text);
    free(o.text);
}

Test(exec, a_session_open_at_exit_is_judged)
{
    /* 100 MiB kept in a session begun and never ended, the program exiting 0: never a pass */
    struct lg_out o = exec_run("--no-reports", EXEC_CRASHER, "6 keep:100");
    cr_expect(o.status == 1 || o.status == 3, "exit %d, expected leak or inconclusive:\n%s",
              o.status, o.text);
    cr_expect(strstr(o.text, "PASS") == NULL, "%s", o.text);
    LG_EXPECT_SAYS(o.text, {NULL, "ended by the program's exit and measured there", "the console"},
                   {NULL, "session 6, begun and never ended, was ended by CMD's exit and judged",
                    "the verdict"});
    free(o.text);
    struct rpt_results *r = results();
    cr_assert_eq(r->n_sessions, 7, "the open session is a session");
    const struct rpt_session *s = &r->sessions[6];
    cr_expect_geq(s->delta[RPT_CH_JE_ALLOCATED], (int64_t)100 << 20, "it holds what was kept");
    cr_expect(s->n_notes == 1 && strstr(s->notes[0], "ended by the program's exit"),
              "the results mark it");
    rpt_results_free(r);
}

Test(exec, a_stopped_program_is_said_to_be_stopped)
{
    struct lg_out o = exec_run("--no-reports", EXEC_CRASHER, "3 stop");
    cr_expect_neq(o.status, 2, "%s", o.text);
    LG_EXPECT_SAYS(o.text, {NULL, "is stopped by signal 19", "the stop"},
                   {NULL, "kill -CONT", "how to go on"}, {NULL, ") continues", "the continue"});
    free(o.text);
    struct rpt_results *r = results();
    cr_expect_eq(r->n_sessions, 4);
    rpt_results_free(r);
}

/* The state letter of /proc/PID/stat ('\0' when the process is gone). */
static char proc_state(pid_t pid)
{
    char path[64], buf[512] = {0};
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return '\0';
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] ? paren[2] : '\0';
}

Test(exec, sigkill_to_leakgate_leaves_no_orphan)
{
    char out[600], log[700];
    snprintf(out, sizeof out, "%s/out", lg_test_tmpdir());
    snprintf(log, sizeof log, "%s/stdout", lg_test_tmpdir());
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600), null = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(null, 2);
        execl(LEAKGATE_BIN, LEAKGATE_BIN, "exec", "--no-reports", "--out", out, "--", EXEC_CRASHER,
              "2", "hang", (char *)NULL);
        _exit(127);
    }
    int child = 0;
    for (int i = 0; i < 100 && !child; i++) { /* the program prints its pid inside a session */
        usleep(100 * 1000);
        FILE *f = fopen(log, "r");
        char line[128];
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "pid %d", &child) == 1) break;
        if (f) fclose(f);
    }
    cr_assert_gt(child, 0, "the program printed its pid");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    char st = 'R';
    for (int i = 0; i < 50 && (st = proc_state(child)) != '\0' && st != 'Z'; i++)
        usleep(100 * 1000);
    cr_expect(st == '\0' || st == 'Z', "the program died with leakgate (state %c)", st);
    if (st != '\0' && st != 'Z') kill(child, SIGKILL);
}

Test(exec, a_marker_regex_too_costly_to_compile_is_refused)
{
    const char *costly[] = {"((a{1,100}){1,100}){1,100}", "x{1,2000}", "(x{1,1000}){1,5}"};
    for (size_t i = 0; i < LG_ARRAY_LEN(costly); i++) {
        char opts[200];
        snprintf(opts, sizeof opts, "--no-reports --session-marker '%s'", costly[i]);
        struct lg_out o = exec_run(opts, EXEC_MARKER, "2");
        cr_expect_eq(o.status, 2, "%s: exit %d:\n%s", costly[i], o.status, o.text);
        cr_expect(strstr(o.text, "too much memory") != NULL, "%s: %s", costly[i], o.text);
        free(o.text);
    }
    /* within the limits: compiled and used */
    struct lg_out o = exec_run("--no-reports --session-marker '^epoch [0-9]{1,1000} done.{0,100}'",
                               EXEC_MARKER, "6");
    cr_expect_eq(o.status, 0, "exit %d:\n%s", o.status, o.text);
    free(o.text);
}

/* ---- the exact census (issue 33, item 2) ------------------------------------------------------
 */

/* Runs exec_census SHAPE over `sessions` sessions (one warm-up) and loads its results. */
static struct rpt_results *census_run(const char *shape, int sessions, int want_exit, char **text)
{
    char args[64];
    snprintf(args, sizeof args, "%s %d", shape, sessions);
    struct lg_out o = exec_run("--no-reports", EXEC_CENSUS, args);
    cr_expect_eq(o.status, want_exit, "%s: exit %d, expected %d:\n%s", shape, o.status, want_exit,
                 o.text);
    *text = o.text;
    return results();
}

Test(exec, the_census_catches_one_64_byte_block_kept_per_session_and_names_it)
{
    char *text;
    /* one warm-up and 7 measured sessions: LEAK at the end of measured session 4 (sessions 1,
     * 2, 3 kept a block), session 5 profiled whole, its block named at the end of 6 and 7 */
    struct rpt_results *r = census_run("block64", 8, 1, &text);
    cr_expect(strstr(text, "LEAK: ") && strstr(text, "census over 7 measured session(s)"),
              "the census says LEAK:\n%s", text);
    cr_expect(strstr(text, "still alive: 1 block, 64 B, at keep_block (census.c:") != NULL,
              "the census names the block and its stack:\n%s", text);
    /* the stacks' figure is the one profiled session's keep, exact, not spread over the sessions
     * since its base (nothing after it is sampled): 64 B/session, as the program keeps */
    const char *attr = strstr(text, "untagged growth by allocation stack (jemalloc heap profile of "
                                    "one session, every allocation):");
    cr_expect(attr && strstr(attr, "64 B/session (exact)") &&
                  strstr(strstr(attr, "64 B/session (exact)"), "keep_block (census.c:"),
              "exact, per session:\n%s", text);
    free(text);
    const struct rpt_census_verdict *cv = &r->verdict.census;
    cr_expect(cv->counted);
    cr_expect_eq(cv->status, RPT_LEAK);
    cr_expect_eq(cv->kept, 6);
    cr_expect_eq(cv->blocks, 6);
    cr_expect_eq(cv->bytes, 6 * 64, "exact bytes: %lld", (long long)cv->bytes);
    const struct rpt_session *last = &r->sessions[r->n_sessions - 1];
    cr_expect(last->census_counted);
    int kept = 0;
    for (int i = 0; i < last->n_census; i++) {
        const struct rpt_census *c = &last->census[i];
        cr_expect_eq(c->blocks, 1, "session %d: %lld blocks", c->born, (long long)c->blocks);
        cr_expect_eq(c->bytes, 64, "session %d: %lld bytes", c->born, (long long)c->bytes);
        kept += c->born >= 1 && c->born < last->index;
    }
    cr_expect_eq(kept, 6);
    /* sessions 6 and 7 diff against the empty profile taken as session 5 began (base 4) */
    for (int i = r->n_sessions - 2; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        cr_expect_eq(s->alloc_base, 4, "session %d: base %d", s->index, s->alloc_base);
        cr_expect_eq(s->alloc_sessions, 1, "session %d: %d sessions", s->index, s->alloc_sessions);
        cr_expect_eq(s->alloc_sample, 1, "session %d: sample %lld", s->index,
                     (long long)s->alloc_sample);
        cr_expect(s->n_alloc_stacks >= 1 && s->alloc_stacks[0].bytes == 64 &&
                      s->alloc_stacks[0].objects == 1,
                  "session %d: one 64-byte block", s->index);
    }
    rpt_results_free(r);
}

Test(exec, the_census_catches_three_kilobyte_blocks_kept_per_session)
{
    char *text;
    struct rpt_results *r = census_run("trickle", 9, 1, &text);
    cr_expect(strstr(text, "still alive: 3 blocks, 3.00 KiB, at keep_block (census.c:") != NULL,
              "named, exact:\n%s", text);
    free(text);
    cr_expect_eq(r->verdict.census.status, RPT_LEAK);
    cr_expect_eq(r->verdict.census.kept, 7);
    cr_expect_eq(r->verdict.census.bytes, 7 * 3 * 1024);
    rpt_results_free(r);
}

/* The census's own arenas (~130 KiB of metadata and slab a kept session) are taken out of the
 * page channels, as the tracker's tables are: a 64-byte block a session moves them by less than
 * a page a session, so over 16 sessions they rise by far less than the ~130 KiB a session they
 * showed before; je_allocated, exact, still sees it. */
Test(exec, the_census_arenas_are_not_counted_in_the_page_channels)
{
    char *text;
    struct rpt_results *r = census_run("block64", 16, 1, &text);
    free(text);
    const double page = 4096, sessions = r->verdict.sessions_measured;
    const enum rpt_channel pages[] = {RPT_CH_JE_ACTIVE, RPT_CH_JE_RESIDENT, RPT_CH_RSS};
    for (size_t i = 0; i < LG_ARRAY_LEN(pages); i++) {
        const struct rpt_channel_verdict *cv = rpt_verdict_for(r, pages[i]);
        cr_assert_not_null(cv);
        /* 64 B a session is a page every 64 sessions; the slope's lower bound stays under one
         * page a session, where the arenas' 130 KiB would be 33 pages */
        cr_expect(isfinite(cv->slope_lo) && cv->slope_lo < page, "%s: slope from %g B/session",
                  rpt_channel_name(pages[i]), cv->slope_lo);
    }
    cr_expect_eq(rpt_verdict_for(r, RPT_CH_JE_ALLOCATED)->status, RPT_LEAK);
    cr_expect(sessions >= 15);
    rpt_results_free(r);
}

Test(exec, the_census_keeps_quiet_on_its_clean_twins)
{
    const char *shapes[] = {"warm-cache", "free-list", "one-session", "realloc", "clean"};
    for (size_t i = 0; i < LG_ARRAY_LEN(shapes); i++) {
        char *text;
        struct rpt_results *r = census_run(shapes[i], 10, 0, &text);
        cr_expect(strstr(text, "census: no block born in a measured session") != NULL,
                  "%s: nothing kept:\n%s", shapes[i], text);
        free(text);
        cr_expect(r->verdict.census.counted, "%s", shapes[i]);
        cr_expect_eq(r->verdict.census.status, RPT_PASS, "%s", shapes[i]);
        cr_expect_eq(r->verdict.census.kept, 0, "%s", shapes[i]);
        rpt_results_free(r);
    }
}

Test(exec, the_census_is_off_with_thread_caches)
{
    char *text;
    struct lg_out o = exec_run("--no-reports --tcache", EXEC_CENSUS, "block64 5");
    text = o.text;
    cr_expect(strstr(text, "census:") == NULL, "no census with --tcache:\n%s", text);
    free(text);
    struct rpt_results *r = results();
    cr_expect(!r->verdict.census.counted);
    cr_expect(!r->sessions[r->n_sessions - 1].census_counted);
    rpt_results_free(r);
}
