/* calibrate.c — `leakgate calibrate`: budgets measured where the gate runs. Runs R clean runs
 * of the gate's workload, each a `leakgate run` process of its own (as the gate is), reads back
 * each run's per-session series, measures every statistical channel's noise (largest delta,
 * step, slope bound, shift, jitter around the trend) and writes a versioned budgets file
 * naming the machine, device, build, command and date (reports/judge/include/budget_file.h). A
 * clean run that leaks on an exact channel stops it: budgets are not measured on a leaking
 * workload.
 *
 *   leakgate calibrate --runs 20 --out budgets.json      # then: leakgate run --budgets
 * budgets.json
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "budget_file.h"
#include "hx_impl.h"

#ifndef LG_GIT_COMMIT
#define LG_GIT_COMMIT "unknown"
#endif
#ifndef LG_BUILD_TYPE
#define LG_BUILD_TYPE "unknown"
#endif

extern char **environ;

struct calib {
    int runs;
    char out[512];  /* the budgets file */
    char work[512]; /* where the runs write (OUT.runs/) */
    bool load;      /* keep the other cores busy, as a loaded CI machine is */
    int n_pass;     /* workload arguments passed to every run */
    char **pass;
};

static void calib_usage(FILE *f)
{
    fprintf(
        f,
        "usage: leakgate calibrate [--runs R] [--out FILE] [--load] [workload options]\n"
        "Measures this machine's noise on every statistical channel over R clean runs of the\n"
        "gate's workload (each a `leakgate run` of its own; default 20) and writes a budgets\n"
        "file (default budgets.json) naming the machine, device, build, command and date.\n"
        "Use it with `leakgate run|soak|compare --budgets FILE`. --load keeps every other core\n"
        "busy meanwhile, as on a shared CI machine. Workload options are run's: --preset,\n"
        "--modes, --sessions, --warmup, --steps, --batch, --device, --seed, --csv, --csv-config\n"
        "(default: the gate's). Exit: 0 written, 1 the clean workload leaked, 2 usage or\n"
        "input error, 4 a run failed.\n");
}

/* Runs `leakgate run` once; returns its exit status (or 4 when it could not be run). */
static int one_run(const struct calib *c, int r, char *dir, size_t size)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 4;
    self[n] = '\0';
    snprintf(dir, size, "%s/run-%d", c->work, r);
    char **argv = calloc((size_t)c->n_pass + 12, sizeof *argv);
    if (!argv) return 4;
    int k = 0;
    argv[k++] = self;
    argv[k++] = (char *)"run";
    for (int i = 0; i < c->n_pass; i++) argv[k++] = c->pass[i];
    argv[k++] = (char *)"--require";
    argv[k++] = (char *)"none"; /* the runs measure; they do not judge */
    argv[k++] = (char *)"--quiet";
    argv[k++] = (char *)"--no-reports";
    argv[k++] = (char *)"--out";
    argv[k++] = dir;
    /* what the run prints goes to DIR/run.log, beside its results */
    char log[700];
    posix_spawn_file_actions_t fa;
    snprintf(log, sizeof log, "%s/run.log", dir);
    if (lg_mkdirs(dir) != LG_OK) {
        free(argv);
        return 2;
    }
    int fd; /* created anew (lg_out.c): a link or FIFO left at run.log is not written through */
    if (lg_out_create(&fd, log) != LG_OK) {
        fprintf(stderr, "leakgate calibrate: %s\n", lg_errmsg());
        free(argv);
        return 2;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    pid_t pid;
    int st = 0, err = posix_spawn(&pid, self, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
    free(argv);
    if (err) return 4;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return 4;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
}

/* Busy loops on every core but one, killed when calibrate ends. */
static int start_load(pid_t *pids, int max)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = 0;
    for (long i = 1; i < cpus && n < max; i++) {
        pid_t p = fork();
        if (p == 0) {
            for (volatile unsigned long x = 0;; x++) {
            }
        }
        if (p > 0) pids[n++] = p;
    }
    return n;
}

static void stop_load(pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], NULL, 0);
    }
}

/* Adds a finished run's series to the noise of every channel; 1 when it leaked (exact). */
static int add_run(const char *dir, struct rpt_noise *nz, unsigned *measured,
                   struct rpt_run *run_line)
{
    char path[700];
    struct rpt_results *r = NULL;
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    if (rpt_results_load(&r, path) != LG_OK) return -1;
    *run_line = r->run;
    double *y = calloc((size_t)r->n_sessions + 1, sizeof *y);
    int leaked = 0;
    if (!y) {
        rpt_results_free(r);
        lg_fail(LG_ENOMEM, "out of memory reading %s", path);
        return -1;
    }
    for (int i = 0; i < r->n_sessions; i++) {
        int64_t v;
        for (int c = 0; c < RPT_NCHANNELS; c++)
            if (rpt_channel_exact((enum rpt_channel)c) &&
                rpt_session_value(&r->sessions[i], c, &v) && v > 0)
                leaked = 1;
    }
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        if (rpt_channel_exact((enum rpt_channel)c)) continue;
        int n = 0;
        bool all = true;
        for (int i = 0; i < r->n_sessions; i++) {
            int64_t v;
            if (r->sessions[i].warmup) continue;
            if (rpt_session_value(&r->sessions[i], c, &v))
                y[n++] = (double)v;
            else
                all = false;
        }
        if (!all || !n) continue;
        rpt_noise_add_run(&nz[c], y, n);
        *measured |= RPT_BIT(c);
    }
    free(y);
    rpt_results_free(r);
    return leaked;
}

static void describe(const struct calib *c, const struct rpt_run *run, int argc, char **argv,
                     struct rpt_budgets_info *info)
{
    struct utsname u;
    char mem[32];
    uname(&u);
    snprintf(info->machine, sizeof info->machine, "%s: %d CPUs, %s, %s %s %s", run->hostname,
             run->cpus, lg_fmt_bytes(mem, sizeof mem, (double)run->mem_bytes), u.sysname, u.release,
             u.machine);
    lg_strlcpy(info->device, run->device, sizeof info->device);
    snprintf(info->build, sizeof info->build, "leakgate %s (commit %s, %s, %s)", LG_VERSION,
             LG_GIT_COMMIT, LG_BUILD_TYPE, trk_allocator_name());
    info->command[0] = '\0';
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(info->command);
        snprintf(info->command + l, sizeof info->command - l, "%s%s", i ? " " : "leakgate ",
                 argv[i]);
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(info->date, sizeof info->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(info->workload, sizeof info->workload,
             "%s %s, %d steps, %d warm-up + %d sessions, %d runs%s", run->preset, run->modes,
             run->steps, run->warmup, run->sessions, c->runs, c->load ? ", other cores busy" : "");
}

static void print_table(const struct rpt_budget *b, const struct rpt_noise *nz, unsigned mask,
                        FILE *f)
{
    char s[6][32];
    fprintf(f, "%-13s %11s %11s %11s %11s %11s %11s %5s\n", "channel", "max |delta|", "jitter",
            "slope bound", "band", "slope", "floor", "min n");
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        if (!(mask & RPT_BIT(c))) continue;
        fprintf(f, "%-13s %11s %11s %11s %11s %11s %11s %5d\n",
                rpt_channel_name((enum rpt_channel)c), lg_fmt_bytes(s[0], 32, nz[c].max_abs),
                lg_fmt_bytes(s[1], 32, nz[c].jitter), lg_fmt_bytes(s[2], 32, nz[c].max_slope_hi),
                lg_fmt_bytes(s[3], 32, b[c].band), lg_fmt_bytes(s[4], 32, b[c].slope),
                lg_fmt_bytes(s[5], 32, b[c].floor), rpt_min_sessions(&b[c]));
    }
}

/* Whether the budgets file can be written where it is asked for, tried before the runs (which
 * take minutes): OUT must not be a directory or other non-file, and OUT.tmp, which the budgets
 * are written to and renamed from, must be creatable (made and removed again here). */
static int check_out(const char *out)
{
    struct stat st;
    char tmp[600];
    if (stat(out, &st) == 0 && !S_ISREG(st.st_mode))
        return lg_fail(LG_EINVAL, "--out %s: not a regular file (a directory?)", out);
    if (lg_snprintf(tmp, sizeof tmp, "%s.tmp", out))
        return lg_fail(LG_EINVAL, "--out: path too long");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return lg_fail(LG_EIO, "--out %s: cannot write beside it: %s", out, strerror(errno));
    close(fd);
    unlink(tmp);
    return LG_OK;
}

#define CALIB_MIN_SESSIONS 8

static int parse(struct calib *c, int argc, char **argv, bool *help)
{
    struct hx_options o;
    hx_options_defaults(&o);
    *help = false;
    c->runs = 20;
    lg_strlcpy(c->out, "budgets.json", sizeof c->out);
    c->pass = calloc((size_t)argc + 1, sizeof *c->pass);
    if (!c->pass) return lg_fail(LG_ENOMEM, "out of memory");
    static const char *const workload[] = {"--preset", "--modes",      "--sessions", "--warmup",
                                           "--steps",  "--batch",      "--device",   "--seed",
                                           "--csv",    "--csv-config", NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = true;
            return LG_OK;
        }
        if (!strcmp(a, "--load")) {
            c->load = true;
            continue;
        }
        if (!strcmp(a, "--runs") || !strcmp(a, "--out")) {
            if (!v) return lg_fail(LG_EINVAL, "%s needs a value", a);
            if (!strcmp(a, "--runs") && hx_parse_int(a, v, 2, 10000, &c->runs) != LG_OK)
                return lg_errcode();
            if (!strcmp(a, "--out") && (!v[0] || lg_strlcpy(c->out, v, sizeof c->out)))
                return lg_fail(LG_EINVAL, "--out: give a file path (at most %zu bytes)",
                               sizeof c->out - 1);
            i++;
            continue;
        }
        bool known = false;
        for (const char *const *w = workload; *w; w++) known |= !strcmp(a, *w);
        if (!known)
            return lg_fail(LG_EINVAL, "unknown option '%s' (see leakgate calibrate --help)", a);
        int n = hx_parse_common(&o, argc, argv, i); /* checked here, passed on to every run */
        if (n < 0) return lg_errcode();
        for (int k = 0; k < n; k++) c->pass[c->n_pass++] = argv[i + k];
        i += n - 1;
    }
    o.required = 0;
    o.required_set = true;
    lg_strlcpy(o.require_arg, "none", sizeof o.require_arg);
    if (hx_check_options(&o) != LG_OK) return lg_errcode();
    /* a run's noise is its slope bound, its late-vs-early shift and its jitter: with fewer
     * sessions than this there are none to measure, and the budgets would say "measured" */
    if (o.sessions < CALIB_MIN_SESSIONS)
        return lg_fail(LG_EINVAL,
                       "--sessions %d: a calibration run needs at least %d measured sessions to "
                       "measure its noise (the gate runs %d)",
                       o.sessions, CALIB_MIN_SESSIONS, 40);
    if (lg_snprintf(c->work, sizeof c->work, "%s.runs", c->out))
        return lg_fail(LG_EINVAL, "--out: path too long");
    return check_out(c->out);
}

int hx_cmd_calibrate(int argc, char **argv)
{
    struct calib c = {0};
    struct rpt_noise nz[RPT_NCHANNELS];
    struct rpt_budget b[RPT_NCHANNELS];
    struct rpt_run run = {0};
    struct lg_dir_lock lock = {-1};
    unsigned measured = 0;
    pid_t load[64];
    int n_load = 0, code = 2;
    bool help;
    memset(nz, 0, sizeof nz);
    if (parse(&c, argc, argv, &help) != LG_OK) {
        fprintf(stderr, "leakgate calibrate: %s\n", lg_errmsg());
        goto done;
    }
    if (help) {
        calib_usage(stdout);
        code = 0;
        goto done;
    }
    if (lg_mkdirs(c.work) != LG_OK || lg_dir_lock(&lock, c.work) != LG_OK) {
        fprintf(stderr, "leakgate calibrate: %s\n", lg_errmsg());
        goto done;
    }
    hx_install_signal_handlers();
    if (c.load) n_load = start_load(load, (int)LG_ARRAY_LEN(load));
    fprintf(stderr, "leakgate calibrate: %d clean runs%s, in %s/\n", c.runs,
            c.load ? " (other cores busy)" : "", c.work);
    for (int r = 0; r < c.runs; r++) {
        char dir[600];
        if (hx_stop_requested) {
            fprintf(stderr, "leakgate calibrate: stopped (%s) after %d runs: no budgets written\n",
                    hx_stop_name(), r);
            code = 3;
            goto done;
        }
        int st = one_run(&c, r, dir, sizeof dir);
        /* with nothing required a run is inconclusive (3) by the evidence rule; it measured */
        if (st != 0 && st != 3) {
            fprintf(stderr, "leakgate calibrate: run %d failed (exit %d); see %s/run.log\n", r, st,
                    dir);
            code = st == 2 ? 2 : 4;
            goto done;
        }
        int leaked = add_run(dir, nz, &measured, &run);
        if (leaked < 0) {
            fprintf(stderr, "leakgate calibrate: %s\n", lg_errmsg());
            code = 4;
            goto done;
        }
        if (leaked) {
            fprintf(stderr,
                    "leakgate calibrate: run %d leaked tagged memory or references: the workload "
                    "is not clean, "
                    "so no budgets were measured (see %s/results.jsonl)\n",
                    r, dir);
            code = 1;
            goto done;
        }
        fprintf(stderr, "  run %d/%d done\n", r + 1, c.runs);
    }
    for (int ch = 0; ch < RPT_NCHANNELS; ch++)
        if (measured & RPT_BIT(ch)) rpt_budget_from_noise((enum rpt_channel)ch, &nz[ch], &b[ch]);
    struct rpt_budgets_info info;
    describe(&c, &run, argc, argv, &info);
    if (rpt_budgets_write(c.out, b, nz, measured, &info) != LG_OK) {
        fprintf(stderr, "leakgate calibrate: %s\n", lg_errmsg());
        code = lg_exit_code(lg_errcode());
        goto done;
    }
    print_table(b, nz, measured, stdout);
    printf("\nbudgets of %s measured on %s written to %s (use: --budgets %s)\n", info.device,
           info.machine, c.out, c.out);
    code = 0;
done:
    stop_load(load, n_load);
    lg_dir_unlock(&lock);
    free(c.pass);
    return code;
}
