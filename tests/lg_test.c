/* lg_test.c — the shared fixture (see lg_test.h). */
#define _GNU_SOURCE
#include "lg_test.h"

#include <criterion/hooks.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct trk_tracker *T;
static char tmpdir[256];

void lg_test_setup(void)
{
    lg_clear_error();
    cr_assert_eq(trk_tracker_new(&T, &(struct trk_options){.stacks = false}), LG_OK, "%s",
                 lg_errmsg());
}

static void rm_tmpdir(void)
{
    if (!tmpdir[0]) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    tmpdir[0] = '\0';
}

/* ---- failures found in a .fini ------------------------------------------------------------
 * Criterion (2.4) prints an assertion that fails in a test's .fini but still counts the test as
 * passed, so the fixture's leak check would never fail a test. So what finish() finds is also
 * appended, one line a test, to a file named after the runner process, and the runner's POST_ALL
 * hook counts each line as a failed test and prints it: a test that leaks fails its binary. */

static void failures_path(char *buf, size_t size, long runner)
{
    snprintf(buf, size, "/tmp/lgtest-fini-failures.%ld", runner);
}

/* The runner's pid: set by the PRE_ALL hook for the workers it forks. */
static long runner_pid(void)
{
    const char *e = getenv("LG_TEST_RUNNER");
    return e ? strtol(e, NULL, 10) : (long)getppid();
}

static void record_fini_failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void record_fini_failure(const char *fmt, ...)
{
    char line[600], path[64];
    int n = snprintf(line, sizeof line, "%s::%s: ", criterion_current_test->category,
                     criterion_current_test->name);
    if (n < 0 || (size_t)n > sizeof line - 2) n = (int)sizeof line - 2; /* a name that long: cut */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    strcat(line, "\n");
    failures_path(path, sizeof path, runner_pid());
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line))
        fprintf(stderr, "lg_test: could not record '%s' in %s\n", line, path);
    if (fd >= 0) close(fd);
}

/* What the run's tests did, for skip_is_not_a_pass (atexit: Criterion's main returns 0 over
 * skipped tests, so CTest would count a test that never ran as passed). */
static size_t n_tests = 0, n_skipped = 0, n_failed = 0;

static void skip_is_not_a_pass(void)
{
    if (n_failed) return; /* main returns non-zero itself */
    if (n_tests == 0) {
        fprintf(stderr, "lg_test: no test ran (a --filter that matches nothing?): not a pass\n");
        _exit(1);
    }
    if (n_skipped) {
        fprintf(stderr,
                "lg_test: %zu of %zu test(s) skipped (their SKIP lines say why): exit 77, a "
                "visible SKIP in CTest, not a pass\n",
                n_skipped, n_tests);
        _exit(77);
    }
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    atexit(skip_is_not_a_pass);
    char pid[24], path[64];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    setenv("LG_TEST_RUNNER", pid, 1);
    failures_path(path, sizeof path, (long)getpid());
    unlink(path);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    char path[64], line[600];
    failures_path(path, sizeof path, (long)getpid());
    FILE *f = fopen(path, "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            fprintf(stderr, "[FAIL] %s", line);
            stats->tests_failed++;
            if (stats->tests_passed) stats->tests_passed--;
        }
        fclose(f);
        unlink(path);
    }
    /* a test a --filter left out is "skipped" too, but never ran (no time, no message): it is
     * another entry's; one that called cr_skip_test ran and says why */
    for (struct criterion_suite_stats *ss = stats->suites; ss; ss = ss->next)
        for (struct criterion_test_stats *ts = ss->tests; ts; ts = ts->next) {
            bool filtered =
                ts->test_status == CR_STATUS_SKIPPED && !ts->message && ts->elapsed_time == 0;
            n_tests += !filtered;
            n_skipped += ts->test_status == CR_STATUS_SKIPPED && !filtered;
        }
    n_failed = stats->tests_failed + stats->tests_crashed + stats->errors;
}

static void finish(int allow_errors)
{
    if (!T) return; /* a test's own .fini ran before the suite's */
    struct trk_totals host, dev;
    trk_totals(T, TRK_HOST, &host);
    trk_totals(T, TRK_DEVICE, &dev);
    if (host.live_bytes || host.live_count || dev.live_bytes) {
        struct trk_leaks *lk = NULL;
        /* list everything still live, whatever generation it was born in */
        for (uint32_t g = 0; g <= trk_generation(T) + 64; g++) {
            if (trk_leaks_of(T, g, &lk) == LG_OK && lk && lk->n_groups)
                trk_leaks_print(lk, stderr, 20);
            trk_leaks_free(lk);
            lk = NULL;
        }
    }
    size_t nerr = trk_error_count(T);
    if (nerr && !allow_errors) {
        struct trk_error *e = NULL;
        size_t n = trk_errors(T, &e);
        for (size_t i = 0; i < n; i++) fprintf(stderr, "tracker error: %s\n", e[i].what);
        trk_errors_free(e, n);
    }
    trk_tracker_free(T);
    T = NULL;
    rm_tmpdir();
    if (host.live_bytes || dev.live_bytes || (nerr && !allow_errors))
        record_fini_failure("left %lld tagged host bytes in %lld allocations, %lld device bytes, "
                            "%zu tracker error(s)",
                            (long long)host.live_bytes, (long long)host.live_count,
                            (long long)dev.live_bytes, allow_errors ? (size_t)0 : nerr);
    cr_assert_eq(host.live_bytes, 0, "test leaked %lld tagged host bytes in %lld allocations",
                 (long long)host.live_bytes, (long long)host.live_count);
    cr_assert_eq(dev.live_bytes, 0, "test leaked %lld tagged device bytes",
                 (long long)dev.live_bytes);
    if (!allow_errors) cr_assert_eq(nerr, 0, "tracker recorded %zu invalid free(s)", nerr);
}

void lg_test_teardown(void) { finish(0); }
void lg_test_teardown_allow_errors(void) { finish(1); }

const char *lg_test_data_dir(void)
{
    const char *d = getenv("LG_TEST_DATA");
    return d ? d : LG_TEST_DATA_DIR;
}

const char *lg_test_tmpdir(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/lgtest.XXXXXX");
        if (!mkdtemp(tmpdir)) cr_assert_fail("mkdtemp failed");
    }
    return tmpdir;
}

struct lg_out lg_run(const char *bin, const char *args)
{
    struct lg_out o = {0};
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    size_t cap = 1 << 16, n = 0, k;
    o.text = malloc(cap);
    cr_assert_not_null(o.text);
    while ((k = fread(o.text + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 >= cap) {
            o.text = realloc(o.text, cap *= 2);
            cr_assert_not_null(o.text);
        }
    }
    o.text[n] = '\0';
    int st = pclose(p);
    o.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return o;
}

struct lg_out lg_runf(const char *bin, const char *fmt, ...)
{
    char args[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return lg_run(bin, args);
}

pid_t lg_spawn(const char *bin, const char *log, char *const argv[])
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(bin, argv);
        _exit(127);
    }
    return pid;
}

int lg_wait_exit(pid_t pid)
{
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st), "it ended by itself, not by signal %d",
              WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return WEXITSTATUS(st);
}

int lg_shell(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

void lg_expect_usage_errors(const char *bin, const struct lg_usage_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct lg_out o = lg_run(bin, cases[i].args);
        cr_expect_eq(o.status, 2, "'%s': exit %d, expected 2\n%s", cases[i].args, o.status, o.text);
        cr_expect(strstr(o.text, cases[i].needle) != NULL, "'%s' should say '%s':\n%s",
                  cases[i].args, cases[i].needle, o.text);
        free(o.text);
    }
}

const char *lg_python3(void)
{
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

void lg_expect_jsonl(const char *schema, const char *files, int status, const char *why)
{
    struct lg_out o = lg_runf(lg_python3(), "%s/tests/data/results/validate_jsonl.py %s/docs/%s %s",
                              LG_SOURCE_DIR, LG_SOURCE_DIR, schema, files);
    cr_expect_eq(o.status, status, "%s: validate_jsonl.py exit %d, expected %d:\n%s", why, o.status,
                 status, o.text);
    free(o.text);
}

const char *lg_line_of(const char *text, const char *channel, char *buf, size_t size)
{
    size_t cl = strlen(channel);
    buf[0] = '\0';
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > cl && strncmp(p, channel, cl) == 0 && p[cl] == ' ') {
            snprintf(buf, size, "%.*s", (int)len, p);
            break;
        }
        p = nl ? nl + 1 : NULL;
    }
    return buf;
}

void lg_expect_says(const char *text, const struct lg_says *says, size_t n, bool absent)
{
    char line[1024];
    for (size_t i = 0; i < n; i++) {
        const struct lg_says *w = &says[i];
        const char *in = w->channel ? lg_line_of(text, w->channel, line, sizeof line) : text;
        cr_expect((strstr(in, w->needle) == NULL) == absent, "%s should %ssay '%s' (%s): %s\n%s",
                  w->channel ? w->channel : "the output", absent ? "not " : "", w->needle, w->why,
                  w->channel ? in : "", text);
    }
}

char *lg_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    while ((k = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 >= cap) {
            s = realloc(s, cap *= 2);
            cr_assert_not_null(s);
        }
    }
    s[n] = '\0';
    fclose(f);
    if (len) *len = n;
    return s;
}

void lg_spit(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

bool lg_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

void lg_test_leak_group(struct lg_leak_group *g, const char *tag, const char *space, int64_t bytes,
                        int64_t count, int n_stacks, const int64_t *counts,
                        const char *const *frames)
{
    lg_strlcpy(g->tag, tag, sizeof g->tag);
    lg_strlcpy(g->space, space, sizeof g->space);
    g->bytes = bytes;
    g->count = count;
    g->n_stacks = n_stacks;
    g->stacks = n_stacks ? calloc((size_t)n_stacks, sizeof *g->stacks) : NULL;
    for (int k = 0; k < n_stacks; k++) {
        g->stacks[k].count = counts[k];
        g->stacks[k].frames = strdup(frames[k]);
        cr_assert_not_null(g->stacks[k].frames);
    }
}

const struct lg_ref_leak *lg_expect_one_ref(const struct trk_leaks *lk, const char *kind,
                                            const char *name, const void *holder,
                                            const char *const *site)
{
    cr_assert_eq(lk->n_refs, 1, "%zu objects still referenced, expected 1", lk->n_refs);
    const struct lg_ref_leak *r = &lk->refs[0];
    cr_assert_str_eq(r->kind, kind);
    cr_assert_str_eq(r->name, name);
    cr_assert_eq(r->n_retains, 1, "%s %s: %d retains outstanding, expected 1", kind, name,
                 r->n_retains);
    cr_assert_eq(r->retains[0].holder, holder, "%s %s is held by another holder", kind, name);
    for (; *site; site++)
        cr_assert(strstr(r->retains[0].site, *site), "retain site \"%s\" lacks \"%s\"",
                  r->retains[0].site, *site);
    return r;
}

int64_t lg_live_bytes_with_prefix(const char *prefix, int64_t *total_count)
{
    struct trk_tag_stat *st = NULL;
    size_t n = trk_tag_stats(T, &st);
    int64_t live = 0, count = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(st[i].tag, prefix, strlen(prefix)) == 0) {
            live += st[i].live_bytes;
            count += st[i].total_count;
        }
    free(st);
    if (total_count) *total_count = count;
    return live;
}

/* One of 8 rotating path buffers, so a few paths can be used in one call. */
static char *path_buf(void)
{
    static char buf[8][512];
    static int k;
    return buf[k++ % 8];
}

const char *lg_test_tmpfile(const char *name)
{
    char *p = path_buf();
    snprintf(p, 512, "%s/%s", lg_test_tmpdir(), name);
    return p;
}

const char *lg_test_datafile(const char *sub, const char *name)
{
    char *p = path_buf();
    snprintf(p, 512, "%s/%s/%s", lg_test_data_dir(), sub, name);
    return p;
}
