/* lg_test.c — the shared fixture (see lg_test.h). */
#define _GNU_SOURCE
#include "lg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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
    char cmd[4096];
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
