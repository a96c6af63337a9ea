/* test_history.c — the history store below the CLI: records appended by two writers at once
 * and by a writer killed mid-write (SIGKILL), read back whole with a cut line skipped and the
 * next record on a line of its own; strict refusals naming file:line; the baseline chosen (the
 * last passing record of the same workload) and compared by compare's rules; drift over a
 * synthetic ten-commit history that grows 3% a commit, which no comparison of neighbours flags,
 * and none over a flat, noisy one. */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "history.h"
#include "history_impl.h"
#include "reports.h"
#include "lg_test.h"
#include "verdict.h"

TestSuite(history, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 120);

static void budgets(struct rpt_budget *b)
{
    for (int c = 0; c < RPT_NCHANNELS; c++)
        b[c] = (struct rpt_budget){
            .band = 512 << 10, .slope = 8 << 10, .floor = 32 << 10, .measured = true};
}

/* One run of `n` measured sessions after a warm-up: every channel flat at `level` (a leak of
 * `leak` bytes a session on je_allocated), the class act peaking at `peak`; judged by the rules. */
static struct rpt_results *run_of(double level, double peak, int64_t leak, int n)
{
    struct rpt_results *r = calloc(1, sizeof *r);
    r->sessions = calloc((size_t)n + 1, sizeof *r->sessions);
    lg_strlcpy(r->run.command, "run", sizeof r->run.command);
    lg_strlcpy(r->run.preset, "tiny", sizeof r->run.preset);
    lg_strlcpy(r->run.modes, "fp32", sizeof r->run.modes);
    lg_strlcpy(r->run.device, "cpu", sizeof r->run.device);
    lg_strlcpy(r->run.started, "2026-12-01T10:00:00Z", sizeof r->run.started);
    r->run.steps = 10;
    r->run.sessions = n;
    r->run.required = rpt_default_required(false);
    budgets(r->run.budgets);
    struct rpt_series ser;
    cr_assert_eq(rpt_series_init(&ser, n + 1), LG_OK);
    for (int i = 0; i <= n; i++) {
        struct rpt_session *s = &r->sessions[r->n_sessions++];
        s->index = i;
        s->warmup = i == 0;
        for (int c = 0; c < RPT_NCHANNELS; c++) {
            bool dev =
                c == RPT_CH_TAGGED_DEVICE || c == RPT_CH_DEV_DRIVER || c == RPT_CH_DEV_PROCESS;
            s->absolute[c] =
                dev ? RPT_NONE
                    : (int64_t)llround(level) + (c == RPT_CH_JE_ALLOCATED ? leak * i : 0);
            s->delta[c] = s->warmup || dev ? RPT_NONE : c == RPT_CH_JE_ALLOCATED ? leak * i : 0;
        }
        s->absolute[RPT_CH_REFS] = 0;
        s->peak_tagged_host = (int64_t)llround(peak) + 4096;
        s->peak_tagged_device = RPT_NONE;
        s->peaks_measured = true;
        s->peaks = calloc(1, sizeof *s->peaks);
        s->n_peaks = 1;
        lg_strlcpy(s->peaks[0].cls, "act", sizeof s->peaks[0].cls);
        lg_strlcpy(s->peaks[0].space, "host", sizeof s->peaks[0].space);
        s->peaks[0].bytes = (int64_t)llround(peak);
        rpt_series_add(&ser, s);
    }
    r->verdict.required = r->run.required;
    r->verdict.sessions_planned = n;
    rpt_judge_series(&ser, r->run.budgets, &r->verdict);
    rpt_series_fini(&ser);
    r->has_verdict = true;
    return r;
}

static void append_run(const char *path, const char *commit, const char *workload,
                       struct rpt_results *r)
{
    struct rpt_history_record rec;
    cr_assert_eq(
        rpt_history_record_from(&rec, r, &(struct rpt_history_meta){commit, "main", workload}),
        LG_OK, "%s", lg_errmsg());
    cr_assert_eq(rpt_history_append(path, &rec), LG_OK, "%s", lg_errmsg());
    rpt_history_record_fini(&rec);
    rpt_results_free(r);
}

static struct rpt_history *load(const char *path)
{
    struct rpt_history *h = NULL;
    cr_assert_eq(rpt_history_load(&h, path), LG_OK, "%s", lg_errmsg());
    return h;
}

Test(history, a_record_reads_back_as_it_was_written)
{
    const char *path = lg_test_tmpfile("h.jsonl");
    append_run(path, "c1", NULL, run_of(100 << 20, 50 << 20, 0, 6));
    struct rpt_history *h = load(path);
    cr_assert_eq(h->n, 1);
    const struct rpt_history_record *x = &h->rec[0];
    cr_assert_str_eq(x->commit, "c1");
    cr_assert_str_eq(x->workload, "run tiny fp32 steps=10 cpu");
    cr_assert_eq(x->status, RPT_PASS);
    cr_assert_eq(x->n_sessions, 7);
    cr_assert_str_eq(x->kinds, "wmmmmmm");
    cr_assert_eq(x->level[RPT_CH_JE_ALLOCATED], 100 << 20);
    cr_assert_eq(x->classes[0].bytes, 50 << 20);
    cr_assert_eq(x->series[RPT_CH_JE_ALLOCATED][0], RPT_NONE, "warm-up: no delta");
    cr_assert_eq(x->required, rpt_default_required(false));
    rpt_history_free(h);
}

/* A child appending `n` records named "TAG-i" (each `sessions` sessions long), then exiting. */
static pid_t writer(const char *path, const char *tag, int n, int sessions)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid) return pid;
    struct rpt_results *r = run_of(1 << 20, 1 << 20, 0, sessions);
    struct rpt_history_record rec;
    if (rpt_history_record_from(&rec, r, &(struct rpt_history_meta){"", "", NULL}) != LG_OK)
        _exit(2);
    for (int i = 0; n < 0 || i < n; i++) {
        snprintf(rec.commit, sizeof rec.commit, "%s-%d", tag, i);
        if (rpt_history_append(path, &rec) != LG_OK) _exit(3);
    }
    _exit(0);
}

Test(history, two_writers_at_once_never_interleave)
{
    const char *path = lg_test_tmpfile("h.jsonl");
    enum { N = 150 };
    pid_t a = writer(path, "a", N, 40), b = writer(path, "b", N, 40);
    int sa, sb;
    waitpid(a, &sa, 0);
    waitpid(b, &sb, 0);
    cr_assert(WIFEXITED(sa) && WEXITSTATUS(sa) == 0 && WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
    struct rpt_history *h = load(path);
    cr_assert_eq(h->n, 2 * N, "%d records", h->n);
    cr_assert_eq(h->torn, 0);
    int next[2] = {0, 0};
    for (int i = 0; i < h->n; i++) { /* each writer's records whole and in its order */
        int w = h->rec[i].commit[0] == 'b', k = atoi(h->rec[i].commit + 2);
        cr_assert_eq(k, next[w]++, "%s out of order", h->rec[i].commit);
    }
    rpt_history_free(h);
}

Test(history, a_writer_killed_mid_write_costs_only_its_own_line)
{
    const char *path = lg_test_tmpfile("h.jsonl");
    int torn = 0, records = 0;
    srand((unsigned)time(NULL));
    for (int round = 0; round < 6; round++) {
        /* records of 1000 sessions are ~170 KB a line: a kill lands inside a write() often */
        pid_t p = writer(path, "k", -1, RPT_HISTORY_MAX_SESSIONS);
        struct stat st;
        for (int wait = 0; wait < 2000 && (stat(path, &st) != 0 || st.st_size == 0); wait++)
            usleep(1000); /* the writer's first record is down */
        usleep((useconds_t)(rand() % 20000));
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
        struct rpt_history *h = load(path);
        cr_assert_leq(h->torn, round + 1, "at most one cut line per kill");
        records = h->n;
        torn = h->torn;
        rpt_history_free(h);
        append_run(path, "after", NULL, run_of(1 << 20, 1 << 20, 0, 4));
        h = load(path);
        cr_assert_eq(h->n, records + 1, "the record after a kill reads back");
        cr_assert_str_eq(h->rec[h->n - 1].commit, "after");
        cr_assert_eq(h->torn, torn, "and starts a line of its own");
        rpt_history_free(h);
    }
    cr_log_info("6 kills: %d records, %d line(s) cut mid-write\n", records + 1, torn);
}

Test(history, a_line_cut_short_is_skipped_and_the_next_starts_fresh)
{
    const char *path = lg_test_tmpfile("h.jsonl");
    append_run(path, "c1", NULL, run_of(1 << 20, 1 << 20, 0, 4));
    FILE *f = fopen(path, "a");
    fputs("{\"schema\":\"leakgate.history/1\",\"commit\":\"c2\",\"bra", f); /* a death here */
    fclose(f);
    struct rpt_history *h = load(path);
    cr_assert_eq(h->n, 1);
    cr_assert_eq(h->torn, 1);
    cr_assert_eq(h->first_torn, 2);
    rpt_history_free(h);
    append_run(path, "c3", NULL, run_of(1 << 20, 1 << 20, 0, 4));
    h = load(path);
    cr_assert_eq(h->n, 2);
    cr_assert_str_eq(h->rec[1].commit, "c3");
    cr_assert_eq(h->rec[1].line, 3, "c3 on a line of its own after the cut one");
    rpt_history_free(h);
}

Test(history, anything_else_is_refused_naming_file_and_line)
{
    static const char *const bad[][2] = {
        {"hello\n", "h.jsonl:1: not JSON"},
        {"[1,2]\n", "h.jsonl:1: not a history record"},
        {"{\"schema\":\"leakgate.results/1\"}\n", "h.jsonl:1: schema"},
        {"{\"schema\":\"leakgate.history/2\"}\n", "newer major version"},
        {"{\"schema\":\"leakgate.history/1\",\"commit\":5}\n", "h.jsonl:1: record"},
    };
    for (size_t i = 0; i < LG_ARRAY_LEN(bad); i++) {
        struct rpt_history *h = NULL;
        cr_assert_eq(rpt_history_parse(&h, "h.jsonl", bad[i][0], strlen(bad[i][0])), LG_EFORMAT,
                     "accepted %s", bad[i][0]);
        cr_assert(strstr(lg_errmsg(), bad[i][1]), "%s -> %s", bad[i][0], lg_errmsg());
        cr_assert_null(h);
    }
    struct rpt_history *h = NULL;
    cr_assert_eq(rpt_history_load(&h, "/nonexistent/h.jsonl"), LG_EIO);
}

/* Issue 42.8: only a line cut before its record ends is a crash's; a whole record that is not
 * JSON (here: a duplicate `commit` key) anywhere in the file is an input error naming file:line,
 * exit 2 from `leakgate history`, not a line skipped that changes drift and --baseline auto. */
Test(history, a_whole_record_that_is_not_json_is_refused_not_skipped)
{
    const char *path = lg_test_tmpfile("h.jsonl"), *dup = lg_test_tmpfile("dup.jsonl");
    for (int k = 0; k < 5; k++) {
        char commit[8];
        snprintf(commit, sizeof commit, "c%d", k);
        append_run(path, commit, "tiny", run_of(1 << 20, 1 << 20, 0, 4));
    }
    cr_assert_eq(lg_shell("sed 's/^{/{\"commit\":\"x\",/' '%s' > '%s'", path, dup), 0);
    struct rpt_history *h = NULL;
    cr_assert_eq(rpt_history_load(&h, dup), LG_EFORMAT, "every record's duplicate key skipped");
    cr_assert(strstr(lg_errmsg(), "dup.jsonl:1: not JSON: duplicate object key"), "%s",
              lg_errmsg());
    cr_assert_null(h);
    char *argv[] = {"history", (char *)dup, "--no-plots", NULL};
    cr_assert_eq(rpt_cmd_history(3, argv), 2, "an input error, not 'inconclusive'");

    /* one bad record in the middle, the rest whole: still refused, naming its line */
    static const char *const mid[] = {"s/^{/{\"commit\":\"x\",/", "s/}$/}}/", "s/}$/} x/",
                                      "s/\"tiny\"/\"ti\x01ny\"/"};
    for (size_t i = 0; i < LG_ARRAY_LEN(mid); i++) {
        cr_assert_eq(lg_shell("sed '3%s' '%s' > '%s'", mid[i], path, dup), 0);
        cr_assert_eq(rpt_history_load(&h, dup), LG_EFORMAT, "line 3 (%s) skipped", mid[i]);
        cr_assert(strstr(lg_errmsg(), "dup.jsonl:3: not JSON"), "%s: %s", mid[i], lg_errmsg());
        cr_assert_null(h);
    }
}

/* Wherever a crash cuts a record (between tokens, inside a literal, a number, an escape or a
 * UTF-8 sequence), the line it leaves is skipped, at the end of the file and, once a later
 * append has ended it, in the middle. */
Test(history, a_record_cut_anywhere_is_skipped)
{
    const char *path = lg_test_tmpfile("h.jsonl");
    append_run(path, "h\xc3\xa9llo \xf0\x9f\x98\x80 \x01\"q\\", "t\xe2\x82\xacny",
               run_of(1 << 20, 1 << 20, 0, 4));
    size_t len = 0;
    char *rec = lg_slurp(path, &len);
    cr_assert(rec && len > 2 && rec[len - 1] == '\n');
    char *text = malloc(3 * len);
    cr_assert_not_null(text);
    for (size_t cut = 1; cut < len - 1; cut++) {
        for (int middle = 0; middle < 2; middle++) {
            size_t n = 0;
            memcpy(text, rec, len); /* a whole record, then the cut one */
            n += len;
            memcpy(text + n, rec, cut);
            n += cut;
            if (middle) { /* ended by the next append, which follows it */
                text[n++] = '\n';
                memcpy(text + n, rec, len);
                n += len;
            }
            struct rpt_history *h = NULL;
            cr_assert_eq(rpt_history_parse(&h, "h.jsonl", text, n), LG_OK, "cut at %zu: %s", cut,
                         lg_errmsg());
            cr_assert(h->n == 1 + middle && h->torn == 1 && h->first_torn == 2, "cut at %zu", cut);
            rpt_history_free(h);
        }
    }
    free(text);
    free(rec);
}

Test(history, the_baseline_is_the_last_passing_record_of_the_same_workload)
{
    const char *path = lg_test_tmpfile("h.jsonl");
    append_run(path, "a1", "A", run_of(1 << 20, 1 << 20, 0, 6));
    append_run(path, "a2", "A", run_of(1 << 20, 1 << 20, 256 << 10, 6)); /* leaks */
    append_run(path, "b1", "B", run_of(1 << 20, 1 << 20, 0, 6));
    append_run(path, "a3", "A", run_of(1 << 20, 1 << 20, 0, 2)); /* too few: inconclusive */
    struct rpt_history *h = load(path);
    cr_assert_eq(h->rec[1].status, RPT_LEAK);
    cr_assert_eq(h->rec[3].status, RPT_INCONCLUSIVE);
    cr_assert_str_eq(rpt_history_baseline(h, "A")->commit, "a1");
    cr_assert_str_eq(rpt_history_baseline(h, "B")->commit, "b1");
    cr_assert_null(rpt_history_baseline(h, "C"));
    cr_assert(rpt_history_has(h, "A") && !rpt_history_has(h, "C"));
    /* compare's rules on records: a1 -> a2 regressed, a2 -> a1 did not */
    struct rpt_results *a1 = NULL, *a2 = NULL;
    cr_assert_eq(rpt_history_to_results(&h->rec[0], &a1), LG_OK);
    cr_assert_eq(rpt_history_to_results(&h->rec[1], &a2), LG_OK);
    struct rpt_budget b[RPT_NCHANNELS];
    budgets(b);
    FILE *null = fopen("/dev/null", "w");
    cr_assert_eq(rpt_compare(a1, a2, b, null), RPT_COMPARE_REGRESSED);
    cr_assert_eq(rpt_compare(a2, a1, b, null), RPT_COMPARE_SAME);
    cr_assert_eq(rpt_compare(a1, a1, b, null), RPT_COMPARE_SAME);
    fclose(null);
    rpt_results_free(a1);
    rpt_results_free(a2);
    rpt_history_free(h);
}

static const struct rpt_drift *find(const struct rpt_drift *d, int n, const char *metric)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(d[i].metric, metric)) return &d[i];
    cr_assert_fail("no figure %s", metric);
    return NULL;
}

/* Ten commits whose level and peak move by `rate` a commit, with +-`noise` (a fraction). */
static struct rpt_history *ten_commits(const char *path, double rate, double noise)
{
    unsigned x = 12345;
    for (int k = 0; k < 10; k++) {
        x = x * 1103515245u + 12345u;
        double jitter = 1 + noise * ((double)(x >> 16 & 0x7fff) / 16383.5 - 1);
        char commit[16];
        snprintf(commit, sizeof commit, "c%d", k);
        append_run(
            path, commit, NULL,
            run_of(100e6 * pow(1 + rate, k) * jitter, 50e6 * pow(1 + rate, k) * jitter, 0, 6));
    }
    return load(path);
}

Test(history, a_leak_growing_3_percent_a_commit_drifts_though_no_comparison_flags_it)
{
    struct rpt_history *h = ten_commits(lg_test_tmpfile("h.jsonl"), 0.03, 0.002);
    struct rpt_budget b[RPT_NCHANNELS];
    budgets(b);
    FILE *null = fopen("/dev/null", "w");
    for (int k = 1; k < h->n; k++) {
        struct rpt_results *base = NULL, *head = NULL;
        cr_assert_eq(rpt_history_to_results(&h->rec[k - 1], &base), LG_OK);
        cr_assert_eq(rpt_history_to_results(&h->rec[k], &head), LG_OK);
        cr_assert_eq(rpt_compare(base, head, b, null), RPT_COMPARE_SAME, "c%d -> c%d", k - 1, k);
        cr_assert_eq(h->rec[k].status, RPT_PASS, "every run passes on its own");
        rpt_results_free(base);
        rpt_results_free(head);
    }
    fclose(null);
    struct rpt_drift *d = NULL;
    int n = 0;
    cr_assert_eq(rpt_history_drift(h, h->rec[0].workload, 10, NULL, 0, &d, &n), LG_OK);
    const char *drifting[] = {"level.je_allocated", "level.rss", "peak.act", "peak.total"};
    for (size_t i = 0; i < LG_ARRAY_LEN(drifting); i++) {
        const struct rpt_drift *x = find(d, n, drifting[i]);
        cr_assert_eq(x->status, RPT_LEAK, "%s: %s", x->metric, x->why);
        cr_assert_gt(x->rise, 0.25 * x->first, "%s rose %.0f of %.0f", x->metric, x->rise,
                     x->first);
    }
    cr_assert_eq(find(d, n, "growth.je_allocated")->status, RPT_PASS);
    cr_assert_eq(d[0].status, RPT_LEAK, "drifting figures come first");
    free(d);
    /* a budget of 50% over the window lets it through; the last 3 records are too few */
    struct rpt_drift_budget wide;
    cr_assert_eq(rpt_drift_budget_parse("peak.*=50%", &wide), LG_OK);
    cr_assert_eq(rpt_history_drift(h, h->rec[0].workload, 10, &wide, 1, &d, &n), LG_OK);
    cr_assert_eq(find(d, n, "peak.act")->status, RPT_PASS, "%s", find(d, n, "peak.act")->why);
    cr_assert_eq(find(d, n, "level.rss")->status, RPT_LEAK);
    free(d);
    cr_assert_eq(rpt_history_drift(h, h->rec[0].workload, 3, NULL, 0, &d, &n), LG_OK);
    cr_assert_eq(find(d, n, "peak.act")->status, RPT_INCONCLUSIVE);
    free(d);
    rpt_history_free(h);
}

Test(history, a_flat_noisy_history_does_not_drift)
{
    struct rpt_history *h = ten_commits(lg_test_tmpfile("h.jsonl"), 0, 0.02);
    struct rpt_drift *d = NULL;
    int n = 0;
    cr_assert_eq(rpt_history_drift(h, h->rec[0].workload, 10, NULL, 0, &d, &n), LG_OK);
    cr_assert_gt(n, 10);
    for (int i = 0; i < n; i++)
        cr_assert_neq(d[i].status, RPT_LEAK, "%s: %s", d[i].metric, d[i].why);
    free(d);
    rpt_history_free(h);
}

/* Records without figures judge nothing: never "no drift" (exit 0). A peak below zero is
 * refused naming the line. */
Test(history, a_history_without_figures_judges_nothing)
{
    const char *path = lg_test_tmpfile("blank.jsonl");
    for (int k = 0; k < 5; k++) {
        struct rpt_results *r = run_of(1 << 20, 4 << 20, 0, 6);
        for (int i = 0; i < r->n_sessions; i++) {
            struct rpt_session *s = &r->sessions[i];
            for (int c = 0; c < RPT_NCHANNELS; c++) s->absolute[c] = s->delta[c] = RPT_NONE;
            s->peaks_measured = false;
            s->peak_tagged_host = RPT_NONE;
            s->n_peaks = 0;
        }
        cr_assert_eq(rpt_judge_results(r, true), LG_OK); /* the verdict of what is left */
        cr_assert_eq(r->verdict.status, RPT_INCONCLUSIVE);
        char commit[8];
        snprintf(commit, sizeof commit, "c%d", k);
        append_run(path, commit, "tiny", r);
    }
    char *argv[] = {"history", (char *)path, "--no-plots", NULL};
    cr_assert_eq(rpt_cmd_history(3, argv), 3, "nothing judged is inconclusive");

    const char *neg = lg_test_tmpfile("neg.jsonl");
    struct rpt_results *r = run_of(1 << 20, 4 << 20, 0, 6);
    for (int i = 0; i < r->n_sessions; i++) r->sessions[i].peak_tagged_host = -5;
    append_run(neg, "c0", "tiny", r);
    struct rpt_history *h = NULL;
    cr_assert_eq(rpt_history_load(&h, neg), LG_EFORMAT, "a negative peak was accepted");
    cr_assert(strstr(lg_errmsg(), "neg.jsonl:1: peaks.total: a byte count below zero"), "%s",
              lg_errmsg());
    cr_assert_null(h);
}

/* A record keeps only its top peak tags: a tag it does not name is unknown there, not a peak of
 * 0 (read as 0, a steady tag "rose from 0 B" where larger tags had pushed it out). */
Test(history, a_peak_tag_a_record_does_not_name_is_unknown_there)
{
    struct rpt_results *r = run_of(1 << 20, 4 << 20, 0, 4);
    for (int i = 0; i < r->n_sessions; i++) {
        struct rpt_class_peak *p = &r->sessions[i].peaks[0];
        p->n_tags = 1;
        lg_strlcpy(p->tags[0].tag, "act/big", sizeof p->tags[0].tag);
        p->tags[0].bytes = 3 << 20;
    }
    struct rpt_history_record rec;
    cr_assert_eq(rpt_history_record_from(&rec, r, &(struct rpt_history_meta){"c0", "main", "tiny"}),
                 LG_OK);
    cr_assert_float_eq(rpt_history_figure(&rec, "peaktag.act/big"), 3 << 20, 0.5);
    cr_assert(isnan(rpt_history_figure(&rec, "peaktag.act/small")), "%g",
              rpt_history_figure(&rec, "peaktag.act/small"));
    rpt_history_record_fini(&rec);
    rpt_results_free(r);
}

Test(history, drift_budgets_parse_strictly)
{
    struct rpt_drift_budget b;
    cr_assert_eq(rpt_drift_budget_parse("level.rss=8MiB", &b), LG_OK);
    cr_assert_eq(b.bytes, 8 << 20);
    cr_assert_eq(rpt_drift_budget_parse("peak.*=5%", &b), LG_OK);
    cr_assert_eq(b.pct, 5);
    cr_assert_eq(rpt_drift_budget_parse("peak.*", &b), LG_EINVAL);
    cr_assert_eq(rpt_drift_budget_parse("peak.*=x%", &b), LG_EINVAL);
    cr_assert_eq(rpt_drift_budget_parse("=1MiB", &b), LG_EINVAL);
    cr_assert_eq(rpt_drift_budget_parse("level.rss=lots", &b), LG_EINVAL);
}
