/* bench_sched.h — how long this process's threads waited for a CPU while they could have run
 * (Linux's per-thread schedstat: the run-queue delay), the part of a timed stretch that other
 * processes' load took from it.
 *
 *   struct bench_sched a = bench_sched_now();
 *   ... the timed work ...
 *   double wait_s = bench_sched_since(a);   // seconds all threads waited; < 0: not measured
 *
 * On the 2-core Zen 4 of 2026-12-06 an electricity step of 417 ms took 0.54 ms more for every
 * ms its threads waited (docs/benchmarks.md, "--fallback"): a step timed while the machine was
 * busy says so here, and one timed quiet is ~0. Threads that exit in between drop out of the
 * sum; the kernels' pool and OpenBLAS keep theirs for the process's life. */
#ifndef LG_BENCH_SCHED_H
#define LG_BENCH_SCHED_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>

struct bench_sched {
    bool ok;     /* /proc/self/task/N/schedstat was read */
    double wait; /* seconds this process's threads have waited for a CPU, summed */
};

static inline struct bench_sched bench_sched_now(void)
{
    struct bench_sched s = {false, 0};
    DIR *d = opendir("/proc/self/task");
    if (!d) return s;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        unsigned long long run = 0, wait = 0; /* ns on a CPU, ns runnable on a run queue */
        if (fscanf(f, "%llu %llu", &run, &wait) == 2) s.ok = true, s.wait += 1e-9 * (double)wait;
        fclose(f);
    }
    closedir(d);
    return s;
}

/* Seconds this process's threads waited for a CPU since `before`; -1 when not measurable. */
static inline double bench_sched_since(struct bench_sched before)
{
    struct bench_sched now = bench_sched_now();
    return before.ok && now.ok ? now.wait - before.wait : -1;
}

#endif
