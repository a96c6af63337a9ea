/* test_exec_tree.c — `leakgate exec` measures CMD's child processes (docs/design.md, "The
 * process tree"), on tests/exec/tree.c: a forked worker that keeps 1 MiB a session is a leak
 * named by its pid and command while CMD's own channels pass; its clean twin passes with two
 * processes judged; a worker that exits mid-run is accounted for with its last reading; a static
 * child and one whose LD_PRELOAD was removed are named as seen by their RSS only; a child each
 * session starts and joins is counted (the agent says where it began). Each check is
 * on the exit status and on what the results file holds, which judged again from its sessions
 * alone gives the same process verdict. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"
#include "reports.h"
#include "results.h"
#include "verdict.h"

TestSuite(exec_tree, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 300);

#define SESSIONS 12
#define WARMUP   2
#define STEP     (1 << 20) /* tests/exec/tree.c's bytes a session */

/* Runs `leakgate exec --warmup WARMUP -- exec_tree MODE SESSIONS EXTRA`, expecting `workers`
 * children ("tree: worker pid P" into pid[]) and the exit status; its output (free it). */
static char *run_tree_opts(const char *opts, const char *mode, const char *extra, int workers,
                           int status, int *pid)
{
    struct lg_out o = lg_runf(
        LEAKGATE_BIN, "exec --quiet --no-reports --out '%s/out' --warmup %d %s -- '%s' %s %d %s",
        lg_test_tmpdir(), WARMUP, opts, EXEC_TREE, mode, SESSIONS, extra);
    int n = 0;
    for (const char *p = o.text; n < workers + 1 && (p = strstr(p, "tree: worker pid ")); p++)
        pid[n++] = atoi(p + strlen("tree: worker pid "));
    cr_assert_eq(n, workers, "%d child(ren) expected:\n%s", workers, o.text);
    cr_expect_eq(o.status, status, "exit %d, expected %d:\n%s", o.status, status, o.text);
    return o.text;
}

static char *run_tree(const char *mode, const char *extra, int workers, int status, int *pid)
{
    return run_tree_opts("", mode, extra, workers, status, pid);
}

static struct rpt_results *results(void)
{
    struct rpt_results *r = NULL;
    char path[600];
    snprintf(path, sizeof path, "%s/out/results.jsonl", lg_test_tmpdir());
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    cr_assert(r->has_verdict, "the results have a verdict line");
    return r;
}

/* The reading of pid in session s (RPT_NONE when not listed). */
static int64_t rss_in(const struct rpt_session *s, int pid)
{
    cr_assert(s->procs_walked, "session %d carries CMD's process tree", s->index);
    for (int i = 0; i < s->n_procs; i++)
        if (s->procs[i].pid == pid) return s->procs[i].rss;
    return RPT_NONE;
}

static const struct rpt_channel_verdict *channel(const struct rpt_verdict *v, enum rpt_channel c)
{
    for (int i = 0; i < v->n_channels; i++)
        if (v->channels[i].channel == c) return &v->channels[i];
    cr_assert_fail("no verdict for %s", rpt_channel_name(c));
    return NULL;
}

/* The file's sessions judged again without its verdict line give the same process verdict;
 * r is freed. */
static void expect_judged_again(struct rpt_results *r)
{
    struct rpt_procs_verdict was = r->verdict.procs;
    cr_assert_eq(rpt_judge_results(r, true), LG_OK, "%s", lg_errmsg());
    cr_expect_eq(r->verdict.procs.status, was.status, "judged again: %s", r->verdict.procs.why);
    cr_expect_eq(r->verdict.procs.judged, was.judged);
    cr_expect_eq(r->verdict.procs.exited, was.exited);
    cr_expect_eq(r->verdict.procs.unseen, was.unseen);
    cr_expect_eq(r->verdict.procs.within, was.within);
    cr_expect_str_eq(r->verdict.procs.leaking, was.leaking);
    rpt_results_free(r);
}

Test(exec_tree, a_growing_worker_is_a_leak_named_by_its_pid_and_command)
{
    int pid[2];
    char *text = run_tree("grow", "", 1, 1, pid);
    char want[128];
    snprintf(want, sizeof want, "LEAK: child pid %d (exec_tree grow %d)", pid[0], SESSIONS);
    cr_expect(strstr(text, want), "the verdict names the worker ('%s'):\n%s", want, text);
    cr_expect(strstr(text, "judged 2 process(es)"), "two processes judged:\n%s", text);
    free(text);
    lg_expect_jsonl("results.schema.json", lg_test_tmpfile("out/results.jsonl"), 0,
                    "1.8's processes validate");

    struct rpt_results *r = results();
    const struct rpt_procs_verdict *pv = &r->verdict.procs;
    cr_expect(pv->counted && pv->status == RPT_LEAK, "processes: %s", pv->why);
    cr_expect_eq(pv->judged, 2);
    cr_expect_eq(pv->children, 1);
    snprintf(want, sizeof want, "child pid %d (", pid[0]);
    cr_expect(strstr(pv->leaking, want), "leaking names pid %d: %s", pid[0], pv->leaking);
    /* CMD itself holds nothing: the leak is the worker's alone */
    cr_expect_eq(channel(&r->verdict, RPT_CH_RSS)->status, RPT_PASS);
    cr_expect_eq(channel(&r->verdict, RPT_CH_JE_ALLOCATED)->status, RPT_PASS);
    /* the worker's readings rose by its STEP every measured session */
    int64_t base = rss_in(&r->sessions[WARMUP - 1], pid[0]);
    int64_t last = rss_in(&r->sessions[r->n_sessions - 1], pid[0]);
    cr_assert(base != RPT_NONE && last != RPT_NONE, "the worker was read");
    int64_t want_rise = (int64_t)(SESSIONS - WARMUP) * STEP;
    cr_expect(last - base >= want_rise - want_rise / 10 && last - base <= want_rise + 4 * STEP,
              "rose %lld bytes over %d measured sessions, expected about %lld",
              (long long)(last - base), SESSIONS - WARMUP, (long long)want_rise);
    expect_judged_again(r);
}

Test(exec_tree, a_clean_worker_passes_with_two_processes_judged)
{
    int pid[2];
    char *text = run_tree("clean", "", 1, 0, pid);
    cr_expect(strstr(text, "PASS"), "PASS:\n%s", text);
    cr_expect(strstr(text, "judged 2 process(es)"), "two processes judged:\n%s", text);
    free(text);
    struct rpt_results *r = results();
    const struct rpt_procs_verdict *pv = &r->verdict.procs;
    cr_expect(pv->counted && pv->status == RPT_PASS, "processes: %s", pv->why);
    cr_expect_eq(pv->judged, 2);
    cr_expect_eq(pv->exited, 0);
    for (int i = 0; i < r->n_sessions; i++)
        cr_expect(rss_in(&r->sessions[i], pid[0]) > 0, "session %d read the worker", i);
    expect_judged_again(r);
}

Test(exec_tree, a_worker_that_exits_mid_run_is_accounted_for)
{
    int pid[3];
    char *text = run_tree("exits", "", 2, 0, pid);
    /* tree.c stops the second worker inside session SESSIONS / 2: the one before saw it last */
    char want[160];
    snprintf(want, sizeof want,
             "exited during the run: pid %d (exec_tree exits %d), last seen at session #%d with ",
             pid[1], SESSIONS, SESSIONS / 2 - 1);
    cr_expect(strstr(text, want), "'%s' in:\n%s", want, text);
    free(text);
    struct rpt_results *r = results();
    const struct rpt_procs_verdict *pv = &r->verdict.procs;
    cr_expect(pv->status == RPT_PASS, "processes: %s", pv->why);
    cr_expect_eq(pv->judged, 3);
    cr_expect_eq(pv->exited, 1);
    cr_expect_eq(rss_in(&r->sessions[SESSIONS / 2 - 1], pid[1]) > 0, true);
    cr_expect_eq(rss_in(&r->sessions[SESSIONS / 2], pid[1]), RPT_NONE, "gone at session %d",
                 SESSIONS / 2);
    expect_judged_again(r);
}

Test(exec_tree, children_without_the_agent_are_named_as_seen_by_rss_only)
{
    char extra[600];
    snprintf(extra, sizeof extra, "'%s'", EXEC_TREE_STATIC);
    int pid[4];
    char *text = run_tree("unseen", extra, 3, 0, pid);
    char want[160];
    snprintf(want, sizeof want, "pid %d (exec_tree_static) has no leakgate agent", pid[1]);
    cr_expect(strstr(text, want), "the static child is named ('%s'):\n%s", want, text);
    snprintf(want, sizeof want, "pid %d (exec_tree idle) has no leakgate agent", pid[2]);
    cr_expect(strstr(text, want), "the stripped child is named ('%s'):\n%s", want, text);
    cr_expect(strstr(text, "2 without the agent"), "the summary counts them:\n%s", text);
    free(text);
    struct rpt_results *r = results();
    cr_expect_eq(r->verdict.procs.unseen, 2, "%s", r->verdict.procs.why);
    cr_expect_eq(r->verdict.procs.judged, 4);
    const struct rpt_session *s = &r->sessions[r->n_sessions - 1];
    for (int i = 0; i < s->n_procs; i++)
        cr_expect_eq(s->procs[i].agent, s->procs[i].pid == pid[0], "pid %d agent %d",
                     s->procs[i].pid, s->procs[i].agent);
    /* summary.md lists them, the static one as seen by its RSS only */
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    cr_assert(f);
    cr_expect_eq(rpt_write_markdown(r, f), LG_OK);
    fclose(f);
    int cmd_pid = 0; /* the children's parent: CMD */
    for (int i = 0; i < s->n_procs; i++)
        if (s->procs[i].pid == pid[0]) cmd_pid = s->procs[i].ppid;
    snprintf(want, sizeof want, "| %d | %d | `%s` |", pid[1], cmd_pid, EXEC_TREE_STATIC);
    const char *table = strstr(md, "### Processes: CMD and its children");
    const char *row = table ? strstr(table, want) : NULL;
    cr_expect(row && strstr(row, "no: RSS only"), "'%s' ... no: RSS only in:\n%s", want, md);
    free(md);
    expect_judged_again(r);
}

Test(exec_tree, children_that_begin_and_end_within_a_session_are_counted)
{
    int pid[SESSIONS + 2];
    char *text = run_tree("within", "", 1 + SESSIONS, 0, pid); /* the worker, one a session */
    char want[160];
    snprintf(want, sizeof want, "%d child(ren) began and ended within a session", SESSIONS);
    cr_expect(strstr(text, want), "'%s' in:\n%s", want, text);
    cr_expect(strstr(text, "judged 2 process(es)"), "the worker judged:\n%s", text);
    free(text);
    struct rpt_results *r = results();
    cr_expect_eq(r->verdict.procs.within, SESSIONS, "%s", r->verdict.procs.why);
    cr_expect_eq(r->verdict.procs.brief, 0, "none was alive at a session's end");
    for (int i = 0; i < r->n_sessions; i++)
        cr_expect_eq(r->sessions[i].procs_within, 1, "session %d", i);
    expect_judged_again(r);
}

Test(exec_tree, compare_says_head_regressed_when_only_its_child_leaks)
{
    int pid[2];
    free(run_tree("clean", "", 1, 0, pid));
    struct rpt_results *base = results();
    free(run_tree("grow", "", 1, 1, pid));
    struct rpt_results *head = results();
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    int rc = rpt_compare(base, head, NULL, f);
    fclose(f);
    cr_expect_eq(rc, RPT_COMPARE_REGRESSED, "compare: %d\n%s", rc, text);
    char want[96];
    snprintf(want, sizeof want, "Processes (exec): BASE PASS, HEAD LEAK: child pid %d (", pid[0]);
    cr_expect(strstr(text, want) && strstr(text, "and a child process leaks"), "'%s' in:\n%s", want,
              text);
    free(text);
    rpt_results_free(base);
    rpt_results_free(head);
}

/* The line of tree.c that allocates what a growing worker keeps. */
static int malloc_line(void)
{
    char *src = lg_slurp(EXEC_TREE_SRC, NULL);
    cr_assert(src, "%s", EXEC_TREE_SRC);
    const char *at = strstr(src, "char *p = malloc(STEP);");
    cr_assert(at, "tree.c allocates its step with malloc(STEP)");
    int line = 1;
    for (const char *c = src; c < at; c++) line += *c == '\n';
    free(src);
    return line;
}

Test(exec_tree, with_stacks_a_leaking_child_is_named_by_where_it_allocated)
{
    int pid[2];
    char *text = run_tree_opts("--stacks", "grow", "", 1, 1, pid);
    char want[160];
    snprintf(want, sizeof want, "pid %d grew by allocation stack", pid[0]);
    const char *named = strstr(text, want);
    snprintf(want, sizeof want, " at work (tree.c:%d) <- start_worker (tree.c:", malloc_line());
    cr_expect(named && strstr(named, want), "'%s' after the worker's pid in:\n%s", want, text);
    free(text);
    struct rpt_results *r = results();
    cr_expect(strstr(r->verdict.procs.why, want), "the results keep it: %s", r->verdict.procs.why);
    rpt_results_free(r);
}

/* The Python lines a growing Python child writes (bindings/python/src/leakgate/_child.py) come
 * first in the why: here tree.c's worker writes them itself, so the line they name is this
 * test's, and a per-session figure is its bytes over its span. */
Test(exec_tree, with_stacks_a_childs_python_lines_come_first)
{
    int pid[2];
    const long long bytes = 9LL << 20, blocks = 72, from = 2, to = 11;
    char text[200];
    snprintf(text, sizeof text,
             "leakgate-python-lines 1\nspan %lld %lld 8\n%lld %lld "
             "loader.py:14 in Items.__getitem__\n512 1 other.py:1 in f\n",
             from, to, bytes, blocks);
    setenv("EXEC_TREE_PY_LINES", text, 1);
    char *out = run_tree_opts("--stacks", "grow", "", 1, 1, pid);
    char want[200], b[32];
    snprintf(want, sizeof want,
             "; pid %d grew at its Python line: +%s/session (%lld blocks) at loader.py:14 in "
             "Items.__getitem__ (tracemalloc in the child, 8 frames, sessions #%lld-#%lld)",
             pid[0], lg_fmt_bytes(b, sizeof b, (double)bytes / (double)(to - from)),
             blocks / (to - from), from, to - 1);
    const char *py = strstr(out, want);
    cr_expect(py, "'%s' in:\n%s", want, out);
    snprintf(want, sizeof want, "pid %d grew by allocation stack", pid[0]);
    const char *native = strstr(out, want);
    cr_expect(py && native && py < native, "the Python line before the native stack:\n%s", out);
    free(out);
}

/* A child's file that is not what _child.py writes is said, not read: the leak is still named by
 * its pid and its native stack. */
static void expect_said(const char *text, const char *why)
{
    int pid[2];
    setenv("EXEC_TREE_PY_LINES", text, 1);
    char *out = run_tree_opts("--stacks", "grow", "", 1, 1, pid);
    char want[200];
    snprintf(want, sizeof want, "pid %d's Python lines (child.%d.py) could not be read: %s", pid[0],
             pid[0], why);
    cr_expect(strstr(out, want), "'%s' in:\n%s", want, out);
    snprintf(want, sizeof want, "pid %d grew by allocation stack", pid[0]);
    cr_expect(strstr(out, want), "still its native stack:\n%s", out);
    free(out);
}

Test(exec_tree, with_stacks_a_broken_python_lines_file_is_said_not_read)
{
    expect_said("leakgate-python-lines 1\nspan 2 11 8\n1048576 8 loader.py:1", /* cut */
                "its last line is cut");
    expect_said("leakgate-python-lines 2\nspan 2 11 8\n", "its first line is not");
    expect_said("leakgate-python-lines 1\nspan 11 2 8\n1 1 a.py:1 in f\n", /* backwards */
                "its second line is not");
    expect_said("leakgate-python-lines 1\nspan 2 11 8\n-5 1 a.py:1 in f\n", /* negative */
                "its third line is not");
    expect_said("leakgate-python-lines 1\nspan 2 11 8\n10 1 \n", "its third line is not");
}
