/* bench_exec.c — what `leakgate exec` costs a program, and what it can see in one.
 *
 * Overhead (default): each workload runs bare, then under leakgate exec with counters only
 * (--no-prof), with thread caches kept (--tcache: the cost of exec's tcache:false), and with
 * heap profiling armed from the first session (--stacks); the four are interleaved, REPS times,
 * and the medians are printed as ratios against the bare run of the same round. Workloads:
 *   python   python3 with PYTHONMALLOC=malloc (every object a malloc and a free), JSON round
 *            trips, a session per epoch through --session-marker (tests/bench/exec_workload.py)
 *   trainer  leakgate's own TFT trainer (leakgate run --preset tiny), no exec sessions
 *
 * Detection (--detection): exec_marker keeps N bytes per session for 20 sessions; for each N the
 * verdict of every host channel is printed, so the smallest leak each channel catches in exec
 * mode can be read off (docs/exec.md); 20 clean runs count false alarms.
 *
 * The API outside exec (--api): nanoseconds per leakgate_tag_push + leakgate_tag_pop pair in a
 * program linked with libleakgate.so and not run under exec, against an empty loop.
 *
 *   bench_exec [--reps 5] [--detection] [--api]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "leakgate.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs a shell command with its output thrown away; its wall time, or -1 when it failed to run. */
static double timed(const char *cmd)
{
    char full[8192];
    snprintf(full, sizeof full, "%s >/dev/null 2>&1", cmd);
    double t0 = now();
    int st = system(full);
    double t = now() - t0;
    return WIFEXITED(st) && WEXITSTATUS(st) != 127 ? t : -1;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct mode {
    const char *name, *opts; /* opts NULL: bare */
};
static const struct mode modes[] = {
    {"bare", NULL},
    {"exec, counters only (--no-prof)", "--no-prof"},
    {"exec, thread caches kept (--no-prof --tcache)", "--no-prof --tcache"},
    {"exec, heap profiling armed (--stacks)", "--stacks"},
};
#define NMODES 4

static void overhead(const char *title, const char *marker, const char *cmd, int reps,
                     const char *out)
{
    double t[NMODES][64];
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < NMODES; m++) {
            char full[8192];
            if (!modes[m].opts)
                snprintf(full, sizeof full, "%s", cmd);
            else
                snprintf(full, sizeof full, "%s exec --quiet --no-reports --out %s %s %s%s%s -- %s",
                         LEAKGATE_BIN, out, modes[m].opts, marker ? "--session-marker '" : "",
                         marker ? marker : "", marker ? "'" : "", cmd);
            t[m][r] = timed(full);
            if (t[m][r] < 0) {
                fprintf(stderr, "bench_exec: could not run: %s\n", full);
                exit(1);
            }
        }
    printf("\n%s (median of %d, interleaved)\n  %-48s %10s %8s\n", title, reps, "mode", "seconds",
           "x bare");
    double bare = median(t[0], reps);
    for (int m = 0; m < NMODES; m++) {
        double med = median(t[m], reps);
        printf("  %-48s %10.3f %8.2f\n", modes[m].name, med, med / bare);
    }
}

/* The verdict word of a channel in leakgate's verdict table, or "?". */
static void verdict_of(const char *text, const char *channel, char *out, size_t size)
{
    snprintf(out, size, "?");
    size_t cl = strlen(channel);
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        if (!strncmp(p, channel, cl) && p[cl] == ' ') {
            char req[8], word[32];
            if (sscanf(p + cl, " %7s %31s", req, word) == 2) snprintf(out, size, "%s", word);
            return;
        }
        p = nl ? nl + 1 : NULL;
    }
}

/* Runs exec_marker under exec keeping `bytes` per session (0: none); its output into text. */
static void marker_run(const char *out, long bytes, char *text, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s exec --no-reports --no-prof --out %s --session-marker '^epoch [0-9]+ done' -- %s "
             "21 %s%ld 2>&1",
             LEAKGATE_BIN, out, EXEC_MARKER, bytes ? "leak:" : "x", bytes);
    FILE *p = popen(cmd, "r");
    if (!p) exit(1);
    size_t n = fread(text, 1, size - 1, p);
    text[n] = '\0';
    pclose(p);
}

static void detection(const char *out)
{
    static const long sizes[] = {1024, 4096, 8192, 16384, 32768, 65536, 131072, 262144};
    static const char *const ch[] = {"je_allocated", "je_active", "je_resident", "rss"};
    static char text[1 << 16];
    enum { CLEAN_RUNS = 20 };
    int alarms[4] = {0};
    printf("\ndetection: exec_marker keeping N bytes per session, 20 sessions (1 warm-up), marker "
           "mode\n");
    printf("  %10s", "N");
    for (int c = 0; c < 4; c++) printf(" %14s", ch[c]);
    printf("\n");
    for (int k = 0; k < CLEAN_RUNS; k++) {
        marker_run(out, 0, text, sizeof text);
        for (int c = 0; c < 4; c++) {
            char w[32];
            verdict_of(text, ch[c], w, sizeof w);
            alarms[c] += strcmp(w, "pass") != 0;
        }
    }
    printf("  %10s", "0 (clean)");
    for (int c = 0; c < 4; c++) {
        char cell[32];
        snprintf(cell, sizeof cell, "%d/%d alarms", alarms[c], CLEAN_RUNS);
        printf(" %14s", cell);
    }
    printf("\n");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        marker_run(out, sizes[i], text, sizeof text);
        printf("  %10ld", sizes[i]);
        for (int c = 0; c < 4; c++) {
            char w[32];
            verdict_of(text, ch[c], w, sizeof w);
            printf(" %14s", w);
        }
        printf("\n");
    }
}

static volatile int sink;

static void api_cost(void)
{
    enum { N = 100000000 };
    double t0 = now();
    for (int i = 0; i < N; i++) sink += i;
    double empty = now() - t0;
    t0 = now();
    for (int i = 0; i < N; i++) {
        sink += leakgate_tag_push("bench");
        sink += leakgate_tag_pop();
    }
    double api = now() - t0;
    printf("\nthe API outside exec (leakgate_active() = %d): %.2f ns per tag_push + tag_pop pair "
           "(an empty loop "
           "%.2f ns)\n",
           leakgate_active(), (api - empty) * 1e9 / N, empty * 1e9 / N);
}

int main(int argc, char **argv)
{
    int reps = 5, det = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--detection"))
            det = 1;
        else if (!strcmp(argv[i], "--api"))
            det = 2;
        else {
            fprintf(stderr, "usage: bench_exec [--reps N] [--detection] [--api]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 64) reps = 5;
    char out[] = "/tmp/bench_exec.XXXXXX";
    if (!mkdtemp(out)) return 1;
    if (det == 2) {
        api_cost();
    } else if (det) {
        detection(out);
    } else {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "env PYTHONMALLOC=malloc python3 %s 12", EXEC_WORKLOAD_PY);
        overhead("python3 (PYTHONMALLOC=malloc): JSON round trips, 12 sessions",
                 "^epoch [0-9]+ done", cmd, reps, out);
        snprintf(cmd, sizeof cmd,
                 "%s run --preset tiny --modes fp32 --sessions 12 --steps 20 --no-reports --quiet "
                 "--out %s/trainer",
                 LEAKGATE_BIN, out);
        overhead(
            "leakgate's TFT trainer (run --preset tiny --sessions 12 --steps 20), no exec sessions",
            NULL, cmd, reps, out);
    }
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf '%s'", out);
    return system(rm) == 0 ? 0 : 1;
}
