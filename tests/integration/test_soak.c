/* test_soak.c — `leakgate soak` and `leakgate merge` end to end: 100 clean tiny sessions pass, a
 * slow untagged leak starting at session 40 is caught by the trend test on je_allocated at or
 * after session 40, SIGTERM leaves a verdict and a partial run, the Prometheus file parses and
 * is replaced atomically, the soak's own memory stays flat over 300 sessions, three concurrent
 * shards merge into one report (and one leaking shard makes the whole leak, by name), and merge
 * refuses what is not one plan. */
#define _GNU_SOURCE
#include <ctype.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lg_test.h"
#include "results.h"
#include "verdict.h"

TestSuite(soak, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 240);

/* ---- a small parser of the Prometheus text exposition format (0.0.4) ------------------------- */

static bool metric_name(const char **p)
{
    const char *s = *p;
    if (!(isalpha((unsigned char)*s) || *s == '_' || *s == ':')) return false;
    while (isalnum((unsigned char)*s) || *s == '_' || *s == ':') s++;
    *p = s;
    return true;
}

/* Checks a whole exposition: HELP/TYPE before a family's samples and once each, names, label
 * syntax with escapes, float values, every line ended. Returns NULL or what is wrong. */
static const char *prom_check(const char *text, char *why, size_t size)
{
    char typed[64][96];
    int n_typed = 0, line = 0;
    if (!*text || text[strlen(text) - 1] != '\n') return "the file does not end with a newline";
    for (const char *p = text; *p; line++) {
        const char *nl = strchr(p, '\n'), *s = p;
        char name[96];
        if (!strncmp(s, "# HELP ", 7) || !strncmp(s, "# TYPE ", 7)) {
            bool type = s[2] == 'T';
            const char *n0 = s + 7, *q = n0;
            if (!metric_name(&q) || *q != ' ') goto bad;
            snprintf(name, sizeof name, "%.*s", (int)(q - n0), n0);
            if (type) {
                const char *t = q + 1;
                int tl = (int)(nl - t);
                if (!((tl == 5 && !strncmp(t, "gauge", 5)) ||
                      (tl == 7 && !strncmp(t, "counter", 7)) ||
                      (tl == 7 && !strncmp(t, "untyped", 7))))
                    goto bad;
                for (int i = 0; i < n_typed; i++)
                    if (!strcmp(typed[i], name)) goto bad; /* a second TYPE */
                cr_assert_lt(n_typed, 64);
                lg_strlcpy(typed[n_typed++], name, sizeof typed[0]);
            }
        } else if (*s == '#') {
            /* a comment */
        } else {
            const char *n0 = s;
            if (!metric_name(&s)) goto bad;
            snprintf(name, sizeof name, "%.*s", (int)(s - n0), n0);
            bool known = false;
            for (int i = 0; i < n_typed; i++) known |= !strcmp(typed[i], name);
            if (!known) goto bad; /* a sample before its family's TYPE */
            if (*s == '{') {
                s++;
                while (*s != '}') {
                    if (!metric_name(&s) || *s++ != '=' || *s++ != '"') goto bad;
                    while (*s != '"') {
                        if (*s == '\n' || !*s) goto bad;
                        if (*s == '\\' && !(s[1] == '\\' || s[1] == '"' || s[1] == 'n')) goto bad;
                        s += *s == '\\' ? 2 : 1;
                    }
                    s++;
                    if (*s == ',')
                        s++;
                    else if (*s != '}')
                        goto bad;
                }
                s++;
            }
            if (*s++ != ' ') goto bad;
            char *end;
            if (!strncmp(s, "NaN", 3) || !strncmp(s, "+Inf", 4) || !strncmp(s, "-Inf", 4))
                end = (char *)s + (s[0] == 'N' ? 3 : 4);
            else
                strtod(s, &end);
            if (end == s || (end != nl && *end != ' ')) goto bad;
        }
        p = nl + 1;
        continue;
    bad:
        snprintf(why, size, "line %d is not valid exposition format: %.*s", line + 1, (int)(nl - p),
                 p);
        return why;
    }
    return NULL;
}

/* The value of the first sample "name{labels}" whose text starts with `prefix` (NaN: none). */
static double prom_value(const char *text, const char *prefix)
{
    size_t l = strlen(prefix);
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, prefix, l) && (p[l] == ' ' || p[l] == '{' || p[l - 1] == '}')) {
            const char *sp = strchr(p, ' ');
            if (sp) return strtod(sp + 1, NULL);
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return NAN;
}

Test(soak, the_exposition_checker_rejects_malformed_text)
{
    static const char *const bad[] = {
        "leakgate_x 1\n",                                                   /* no TYPE first */
        "# TYPE leakgate_x gauge\nleakgate_x{a=\"1} 1\n",                   /* open quote */
        "# TYPE leakgate_x gauge\nleakgate_x{a=1} 1\n",                     /* unquoted value */
        "# TYPE leakgate_x gauge\nleakgate_x one\n",                        /* not a number */
        "# TYPE leakgate_x gauge\nleakgate_x 1",                            /* no final newline */
        "# TYPE leakgate_x gauge\n# TYPE leakgate_x gauge\nleakgate_x 1\n", /* two TYPEs */
        "# TYPE leakgate_x histo\nleakgate_x 1\n",                          /* unknown type */
        "# TYPE leakgate_x gauge\n9x 1\n",                                  /* bad name */
    };
    char why[300];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect(prom_check(bad[i], why, sizeof why) != NULL, "accepted: %s", bad[i]);
    cr_expect(
        prom_check(
            "# HELP leakgate_x A gauge.\n# TYPE leakgate_x gauge\nleakgate_x{a=\"q\\\"\",b=\"\"} -Inf\n",
            why, sizeof why) == NULL,
        "%s", why);
}

/* ---- the soak -------------------------------------------------------------------------------- */

Test(soak, clean_100_sessions_pass_with_compact_results_metrics_and_reports)
{
    char path[600];
    struct lg_out o =
        lg_runf(LEAKGATE_BIN, "soak --sessions 100 --quiet --out '%s/clean'", lg_test_tmpdir());
    cr_expect_eq(o.status, 0, "exit %d:\n%s", o.status, o.text);
    LG_EXPECT_SAYS(o.text, {NULL, "PASS", "the verdict"}, {"je_allocated", " pass ", "clean"},
                   {"rss", "within budget", "clean"});
    free(o.text);

    snprintf(path, sizeof path, "%s/clean/results.jsonl", lg_test_tmpdir());
    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    cr_expect_str_eq(r->run.command, "soak");
    cr_expect_str_eq(r->run.preset, "tiny");
    cr_expect_eq(r->n_sessions, 102, "2 warm-up + 100 measured sessions, got %d", r->n_sessions);
    int with_samples = 0;
    for (int i = 0; i < r->n_sessions; i++) {
        cr_expect_eq(r->sessions[i].index, i, "plan-wide indices");
        with_samples += r->sessions[i].n_samples > 0;
    }
    cr_expect_eq(with_samples, 1, "only the first measured session keeps its timeline (got %d)",
                 with_samples);
    cr_expect(r->has_verdict && r->verdict.status == RPT_PASS && !r->verdict.partial);
    rpt_results_free(r);

    snprintf(path, sizeof path, "%s/clean/metrics.prom", lg_test_tmpdir());
    char *m = lg_slurp(path, NULL), why[300];
    cr_assert_not_null(m, "metrics.prom written");
    const char *bad = prom_check(m, why, sizeof why);
    cr_expect(bad == NULL, "%s\n%s", bad, m);
    cr_expect_eq(prom_value(m, "leakgate_sessions_total"), 100);
    cr_expect_eq(prom_value(m, "leakgate_soak_running"), 0);
    cr_expect_eq(prom_value(m, "leakgate_leaked_bytes_total"), 0);
    cr_expect(
        isfinite(prom_value(
            m, "leakgate_session_delta_bytes{channel=\"rss\",preset=\"tiny\",mode=\"fp32\"}")),
        "%s", m);
    cr_expect_eq(prom_value(m, "leakgate_channel_alarm{channel=\"je_allocated\"}"), 0);
    cr_expect(strstr(m, "leakgate_verdict{status=\"pass\"} 1\n") != NULL, "%s", m);
    free(m);
    static const char *const artefacts[] = {"report.html", "junit.xml", "summary.md", "trend.svg",
                                            NULL};
    for (const char *const *a = artefacts; *a; a++) {
        snprintf(path, sizeof path, "%s/clean/%s", lg_test_tmpdir(), *a);
        cr_expect_eq(access(path, R_OK), 0, "%s written", *a);
    }
}

/* Runs a soak of `sessions` sessions with one fault into <scratch>/name; returns its exit
 * status, *text what it printed (the caller frees it). */
static int soak_one_fault(int sessions, const char *inject, const char *name, char **text)
{
    struct lg_out o =
        lg_runf(LEAKGATE_BIN, "soak --sessions %d --quiet --no-reports --out '%s/%s' --inject %s",
                sessions, lg_test_tmpdir(), name, inject);
    *text = o.text;
    return o.status;
}

Test(soak, a_slow_leak_starting_at_session_40_is_caught_by_the_trend_test)
{
    char line[1024], *text;
    int st = soak_one_fault(100, "raw-malloc:256KiB@40", "leak", &text);
    cr_expect_eq(st, 1, "exit %d:\n%s", st, text);
    LG_EXPECT_SAYS(text, {"je_allocated", " leak ", "the trend test"},
                   {"je_allocated", "256.00 KiB/session", "the final window's slope is the leak"},
                   {"tagged_host", " pass ", "untagged"}, {NULL, "je_allocated", "the channel"},
                   {NULL, "LEAK", "the verdict"});
    lg_line_of(text, "je_allocated", line, sizeof line);
    const char *at = strstr(line, "alarm at session ");
    cr_assert_not_null(at, "the alarm's session is named: %s", line);
    int session = atoi(at + strlen("alarm at session "));
    cr_expect(session >= 40 && session <= 60,
              "the alarm fires at or after session 40 (soon): %d\n%s", session, line);
    free(text);
}

Test(soak, leaks_that_come_in_steps_are_caught_over_200_sessions)
{
    /* a checkpoint of 1 MiB kept every 40th session, and of 512 KiB every 25th: the measured
     * sessions start at index 2 (one warm-up per mode) */
    static const char *const faults[] = {"raw-malloc:1MiB@2/40", "raw-malloc:512KiB@2/25"};
    for (size_t k = 0; k < 2; k++) {
        char *text, name[16];
        snprintf(name, sizeof name, "steps%zu", k);
        int st = soak_one_fault(200, faults[k], name, &text);
        cr_expect_eq(st, 1, "%s: exit %d, expected 1 (leak):\n%s", faults[k], st, text);
        LG_EXPECT_SAYS(text, {"je_allocated", " leak ", faults[k]},
                       {"je_allocated", "steps alarm", faults[k]});
        free(text);
    }
}

Test(soak, noise_raises_no_alarm_over_200_sessions)
{
    char *text;
    int st = soak_one_fault(200, "raw-noise:48KiB", "noise", &text);
    cr_expect_eq(st, 0, "noise is not a leak: exit %d\n%s", st, text);
    static const char *const ch[] = {"je_allocated", "je_active", "je_resident", "rss"};
    for (int c = 0; c < 4; c++)
        LG_EXPECT_NOT_SAYS(text, {ch[c], " leak ", "noise"}, {ch[c], "alarm", "noise"});
    LG_EXPECT_NOT_SAYS(text, {NULL, "ALARM", "noise"});
    free(text);
}

/* Two 2 MiB blocks kept from sessions 10 and 25 on (of 2 warm-up + 40): they do not recur, but
 * the memory never returned to baseline — a leak on rss, naming the measured session the first
 * came in (session 10 is the 9th measured one). Which rule says it depends on RSS's own noise
 * between the steps: a retained block (rule 4, "came in measured session #9") when the segments
 * are flat, the trend (rule 2, "it came in steps: +2.00 MiB at #9, ...") when the kernel's pages
 * crept between them. Steps given back pass (test_verdict.c). */
Test(soak, two_steps_held_to_the_end_are_a_leak_naming_the_session)
{
    struct lg_out o = lg_runf(
        LEAKGATE_BIN,
        "run --quiet --no-reports --inject raw-mmap:2MiB@10/1000 --inject raw-mmap:2MiB@25/1000 --out '%s/oneoff'",
        lg_test_tmpdir());
    cr_expect_eq(o.status, 1, "held to the end: exit %d\n%s", o.status, o.text);
    char line[1024];
    const char *rss = lg_line_of(o.text, "rss", line, sizeof line);
    cr_expect(rss && strstr(rss, " leak ") &&
                  (strstr(rss, "came in measured session #9") || strstr(rss, "MiB at #9")),
              "rss names the leak and session #9:\n%s", o.text);
    free(o.text);
}

Test(soak, sigterm_finishes_the_session_writes_the_verdict_and_metrics_are_replaced_atomically)
{
    char out[512], results[600], metrics[600], log[600], tmp[620];
    snprintf(out, sizeof out, "%s/sig", lg_test_tmpdir());
    snprintf(results, sizeof results, "%s/results.jsonl", out);
    snprintf(metrics, sizeof metrics, "%s/metrics.prom", out);
    snprintf(tmp, sizeof tmp, "%s.tmp", metrics);
    snprintf(log, sizeof log, "%s/log", lg_test_tmpdir());
    pid_t pid =
        lg_spawn(LEAKGATE_BIN, log,
                 (char *const[]){"leakgate", "soak", "--sessions", "100000", "--out", out, NULL});
    /* read the metrics while it is being rewritten: every read is a whole file */
    double sessions = 0;
    int reads = 0, inodes = 0;
    ino_t last = 0;
    char why[300];
    for (int tries = 0; tries < 1200 && sessions < 8; tries++) {
        usleep(10000);
        struct stat st;
        char *m = lg_slurp(metrics, NULL);
        if (!m) continue;
        const char *bad = prom_check(m, why, sizeof why);
        cr_assert(bad == NULL, "read %d: %s\n%s", reads, bad, m);
        sessions = prom_value(m, "leakgate_sessions_total");
        cr_assert(isfinite(sessions), "%s", m);
        free(m);
        reads++;
        if (stat(metrics, &st) == 0 && st.st_ino != last) {
            inodes++;
            last = st.st_ino;
        }
    }
    cr_assert_geq(sessions, 8, "sessions are counted as they end");
    cr_expect_geq(inodes, 3,
                  "the file is replaced (rename), not rewritten in place: %d inodes in %d reads",
                  inodes, reads);
    kill(pid, SIGTERM);
    int code = lg_wait_exit(pid);
    char *text = lg_slurp(log, NULL);
    cr_expect_eq(code, 3, "a stopped soak proves no leak and earns no pass:\n%s", text);
    cr_expect(strstr(text, "partial") != NULL, "%s", text);
    free(text);

    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, results), LG_OK, "%s", lg_errmsg());
    cr_expect(r->has_verdict && r->verdict.partial,
              "the verdict line closes the file, marked partial");
    cr_expect_eq(r->truncated_lines, 0, "the current session finished before the verdict");
    cr_expect_geq(r->verdict.sessions_measured, 8);
    rpt_results_free(r);
    char *m = lg_slurp(metrics, NULL);
    cr_assert_not_null(m);
    cr_expect(prom_check(m, why, sizeof why) == NULL, "%s", why);
    cr_expect_eq(prom_value(m, "leakgate_soak_running"), 0, "%s", m);
    cr_expect(strstr(m, "leakgate_verdict{status=\"inconclusive\"} 1") != NULL, "%s", m);
    free(m);
    cr_expect_neq(access(tmp, F_OK), 0, "no temporary metrics file left behind");
    snprintf(tmp, sizeof tmp, "%s/report.html", out);
    cr_expect_eq(access(tmp, R_OK), 0, "the reports are written after SIGTERM");
}

Test(soak, its_own_memory_stays_flat_over_300_sessions)
{
    char path[600];
    struct lg_out o =
        lg_runf(LEAKGATE_BIN,
                "soak --sessions 300 --steps 2 --modes fp32 --quiet --no-reports --out '%s/flat'",
                lg_test_tmpdir());
    cr_expect_eq(o.status, 0, "the soak's own verdict on its clean run passes (exit %d):\n%s",
                 o.status, o.text);
    free(o.text);
    snprintf(path, sizeof path, "%s/flat/results.jsonl", lg_test_tmpdir());
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(r->n_sessions, 301);
    cr_expect_lt((double)st.st_size / r->n_sessions, 1500, "compact session lines: %.0f bytes each",
                 (double)st.st_size / r->n_sessions);
    double *y = calloc(300, sizeof *y);
    int n = 0;
    const struct rpt_session *first = NULL, *lastm = NULL;
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        if (s->warmup) continue;
        if (!first) first = s;
        lastm = s;
        y[n++] = (double)s->delta[RPT_CH_JE_ALLOCATED];
    }
    struct rpt_trend t;
    rpt_theil_sen(y, n, 0.95, &t);
    cr_expect(t.lo <= 0 && t.hi >= 0 && fabs(t.slope) < 1024,
              "je_allocated has no trend: slope %.0f B/session, CI [%.0f, %.0f]", t.slope, t.lo,
              t.hi);
    int64_t rss0 = first->absolute[RPT_CH_RSS], rss1 = lastm->absolute[RPT_CH_RSS];
    cr_expect(llabs(rss1 - rss0) <= 1 << 20,
              "RSS at the end within 1 MiB of the start: %lld -> %lld", (long long)rss0,
              (long long)rss1);
    free(y);
    rpt_results_free(r);
}

Test(soak, a_duration_plan_ends_on_time_and_is_not_partial)
{
    double t0 = lg_now();
    struct lg_out o = lg_runf(
        LEAKGATE_BIN, "soak --duration 3s --quiet --no-reports --out '%s/dur'", lg_test_tmpdir());
    double took = lg_now() - t0;
    cr_expect_eq(o.status, 0, "%s", o.text);
    cr_expect(took >= 3 && took < 60, "took %.1f s", took);
    cr_expect(strstr(o.text, "partial") == NULL, "a spent duration is the plan's end: %s", o.text);
    free(o.text);
}

Test(soak, bad_options_exit_2_with_a_message)
{
    static const struct lg_usage_case cases[] = {
        {"soak --shard 3/3", "need 0 <= i < n"},
        {"soak --shard two", "is not i/n"},
        {"soak --duration soon", "is not a duration"},
        {"soak --duration 0s", "between 1 s and 30 days"},
        {"soak --window 2", "--window: '2' is not an integer in 5..2000"},
        {"soak --presets tiny,tiny", "'tiny' is listed twice"},
        {"soak --presets tiny,huge", "unknown preset 'huge'"},
        {"soak --sessions 2 --shard 4/5", "the shard has no session"},
        {"soak --frobnicate", "unknown option '--frobnicate'"},
        {"soak --metrics", "--metrics needs a value"},
    };
    lg_expect_usage_errors(LEAKGATE_BIN, cases, LG_ARRAY_LEN(cases));
}

/* ---- shards and merge ------------------------------------------------------------------------ */

/* Runs shards `first`..`last` of a 3-shard 60-session plan concurrently under dir; inject (or
 * NULL) goes to every one of them. */
static void run_shards(const char *dir, int first, int last, const char *inject)
{
    pid_t pids[3];
    char shard[3][8], log[3][600];
    for (int i = first; i <= last; i++) {
        snprintf(shard[i], sizeof shard[i], "%d/3", i);
        snprintf(log[i], sizeof log[i], "%s-%d.log", dir, i);
        char *argv[20] = {"leakgate", "soak",         "--sessions", "60",    "--window",
                          "20",       "--shard",      shard[i],     "--out", (char *)dir,
                          "--quiet",  "--no-reports", NULL};
        if (inject) {
            argv[12] = "--inject";
            argv[13] = (char *)inject;
            argv[14] = NULL;
        }
        pids[i] = lg_spawn(LEAKGATE_BIN, log[i], argv);
    }
    for (int i = first; i <= last; i++) {
        int code = lg_wait_exit(pids[i]);
        char *text = lg_slurp(log[i], NULL);
        cr_expect_eq(code, inject ? 1 : 0, "shard %d/3: exit %d\n%s", i, code, text);
        free(text);
    }
}

Test(soak, three_concurrent_shards_merge_into_one_plan_and_a_leaking_shard_is_named)
{
    char clean[600], leak[600], path[700];
    snprintf(clean, sizeof clean, "%s/clean", lg_test_tmpdir());
    snprintf(leak, sizeof leak, "%s/leak", lg_test_tmpdir());
    run_shards(clean, 0, 2, NULL);
    run_shards(leak, 1, 1, "raw-malloc:256KiB@20");

    struct lg_out o = lg_runf(LEAKGATE_BIN, "merge '%s/shard-*-of-3' -o '%s/merged'", clean,
                              lg_test_tmpdir()); /* a glob */
    cr_expect_eq(o.status, 0, "exit %d:\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "PASS: every shard") != NULL, "%s", o.text);
    for (int i = 0; i < 3; i++) {
        char row[16];
        snprintf(row, sizeof row, "\n%d/3 ", i);
        cr_expect(strstr(o.text, row) != NULL, "shard %d/3's own verdict is printed:\n%s", i,
                  o.text);
    }
    free(o.text);
    snprintf(path, sizeof path, "%s/merged/results.jsonl", lg_test_tmpdir());
    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, path), LG_OK, "%s", lg_errmsg());
    int warm = 0, measured = 0;
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        if (s->warmup) {
            warm++;
            cr_expect_eq(measured, 0, "warm-ups first");
            continue;
        }
        cr_expect_eq(s->index, 2 + measured, "measured sessions in plan order: session %d at %d",
                     s->index, 2 + measured);
        measured++;
    }
    cr_expect_eq(warm, 6, "each shard's own warm-up (fp32, int8)");
    cr_expect_eq(measured, 60, "every shard's sessions");
    cr_expect(r->has_verdict && r->verdict.status == RPT_PASS &&
              r->verdict.sessions_measured == 60);
    cr_expect_str_eq(r->run.shard, "");
    rpt_results_free(r);
    snprintf(path, sizeof path, "%s/merged/report.html", lg_test_tmpdir());
    cr_expect_eq(access(path, R_OK), 0, "the merged report is written");

    /* a shard killed before its verdict line: judged from its sessions, the merge is partial */
    cr_assert_eq(
        lg_shell("mkdir -p '%s/cut/shard-2-of-3' && head -n -1 '%s/shard-2-of-3/results.jsonl' > "
                 "'%s/cut/shard-2-of-3/results.jsonl'",
                 lg_test_tmpdir(), clean, lg_test_tmpdir()),
        0);
    o = lg_runf(LEAKGATE_BIN,
                "merge '%s/shard-0-of-3' '%s/shard-1-of-3' '%s/cut' -o '%s/m1' --no-reports", clean,
                clean, lg_test_tmpdir(), lg_test_tmpdir());
    cr_expect_eq(o.status, 3, "a shard cut short makes the merge inconclusive: exit %d:\n%s",
                 o.status, o.text);
    cr_expect(strstr(o.text, "partial soak: judged from the 22 session(s) on disk") != NULL, "%s",
              o.text);
    cr_expect(strstr(o.text, "(partial: a shard was cut short)") != NULL, "%s", o.text);
    free(o.text);

    /* a shard's run and PASS lines with no session between them: its line is not believed */
    cr_assert_eq(
        lg_shell(
            "mkdir -p '%s/bare/shard-2-of-3' && (head -n 1 '%s/shard-2-of-3/results.jsonl'; "
            "tail -n 1 '%s/shard-2-of-3/results.jsonl') > '%s/bare/shard-2-of-3/results.jsonl'",
            lg_test_tmpdir(), clean, clean, lg_test_tmpdir()),
        0);
    o = lg_runf(LEAKGATE_BIN,
                "merge '%s/shard-0-of-3' '%s/shard-1-of-3' '%s/bare' -o '%s/m3' --no-reports",
                clean, clean, lg_test_tmpdir(), lg_test_tmpdir());
    cr_expect_eq(o.status, 3, "a shard without its sessions passes nothing: exit %d:\n%s", o.status,
                 o.text);
    cr_expect(strstr(o.text, "its verdict line claims more than its sessions show") != NULL, "%s",
              o.text);
    free(o.text);

    o = lg_runf(
        LEAKGATE_BIN,
        "merge '%s/shard-0-of-3' '%s/shard-1-of-3/results.jsonl' '%s/shard-2-of-3' -o '%s/m2' --no-reports",
        clean, leak, clean, lg_test_tmpdir());
    cr_expect_eq(o.status, 1, "exit %d:\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "LEAK: shard 1/3 leaked") != NULL,
              "the overall verdict names the shard:\n%s", o.text);
    LG_EXPECT_SAYS(o.text, {"je_allocated", " leak ", "the leaking shard"},
                   {"je_allocated", "shard 1/3", "names the shard"});
    free(o.text);
}

Test(soak, merge_refuses_what_is_not_one_plan)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/p", lg_test_tmpdir());
    /* a 3-shard plan of 12 sessions with shard 1 missing, one of another plan, and a run; their
     * verdicts do not matter here (a loaded machine can make a short shard inconclusive), only
     * that each wrote its results */
    struct lg_out o =
        lg_runf(LEAKGATE_BIN,
                "soak --sessions 12 --shard 0/3 --quiet --no-reports --out '%s'; "
                "'%s' soak --sessions 12 --shard 2/3 --quiet --no-reports --out '%s'; "
                "'%s' soak --sessions 15 --shard 1/3 --quiet --no-reports --out '%s/other'; "
                "'%s' run --sessions 4 --quiet --no-reports --out '%s/run'",
                dir, LEAKGATE_BIN, dir, LEAKGATE_BIN, dir, LEAKGATE_BIN, dir);
    const char *made[] = {"shard-0-of-3", "shard-2-of-3", "other/shard-1-of-3", "run"};
    for (size_t i = 0; i < LG_ARRAY_LEN(made); i++) {
        char path[800];
        snprintf(path, sizeof path, "%s/%s/results.jsonl", dir, made[i]);
        cr_assert(lg_exists(path), "%s was not written:\n%s", path, o.text);
    }
    free(o.text);
    /* args: a format, each %s the plan's directory */
    static const struct lg_usage_case cases[] = {
        {"merge '%s' -o '%s/m'", "1 shard(s) of 3 missing: 1/3"},
        {"merge '%s' '%s/other' -o '%s/m'",
         "are not shards of one plan: their plan sessions differ"},
        {"merge '%s' '%s/run' -o '%s/m'", "written by `leakgate run`, not by a soak shard"},
        {"merge '%s/shard-0-of-3' '%s/shard-0-of-3/results.jsonl' -o '%s/m'",
         "shard 0/3 is given twice"},
        {"merge '%s/nowhere' -o '%s/m'", "no such results file or directory"},
        {"merge '%s'", "name the output directory with -o OUT"},
    };
    struct lg_usage_case in_dir[LG_ARRAY_LEN(cases)];
    char args[LG_ARRAY_LEN(cases)][2400];
    for (size_t i = 0; i < LG_ARRAY_LEN(cases); i++) {
        snprintf(args[i], sizeof args[i], cases[i].args, dir, dir, dir);
        in_dir[i] = (struct lg_usage_case){args[i], cases[i].needle};
    }
    lg_expect_usage_errors(LEAKGATE_BIN, in_dir, LG_ARRAY_LEN(cases));
}
