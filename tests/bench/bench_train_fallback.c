/* bench_train_fallback.c — leakgate's step with OpenBLAS's generic core forced and not, for
 * bench_train --torch --fallback (bench_train_fallback.h says what runs). */
#define _GNU_SOURCE
#include "bench_train_fallback.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *name, *env;
} kinds[BTF_KINDS] = {
    {"as it starts", ""},
    {"Prescott forced", "OPENBLAS_CORETYPE=Prescott"},
    {"Prescott kept", "OPENBLAS_CORETYPE=Prescott LG_BLAS_CORE=openblas"},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of n values (a sorted copy; v is left as it is); 0 when n is 0. */
static double median_of(const double *v, int n)
{
    double s[BTF_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n ? (n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2])) : 0;
}

/* "  GEMM kernels: OpenBLAS 0.3.21 Cooperlake (path cpu-features; CPU ..." -> "OpenBLAS 0.3.21
 * Cooperlake, path cpu-features" into out. */
static void kernels_of(char *out, size_t size, const char *line)
{
    const char *at = strstr(line, "GEMM kernels: ");
    if (!at) return;
    at += strlen("GEMM kernels: ");
    size_t n = strcspn(at, ";)\n");
    snprintf(out, size, "%.*s", (int)n, at);
    char *paren = strstr(out, " (path ");
    if (paren) paren[0] = ',', paren[1] = ' '; /* " (path " -> ", path " */
}

/* One bench_train process in environment k (its kernels into f when not NULL): its ms/step, or 0
 * when it failed; *wait the ms a step its threads waited for a CPU, as it printed (-1 when it did
 * not). */
static double run_one(struct btf_runs *f, int k, const char *preset, int batch, int steps,
                      FILE *log, double *wait)
{
    *wait = -1;
    char self[512], cmd[1200], line[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return 0;
    self[len] = '\0';
    snprintf(cmd, sizeof cmd, "env %s '%s' --preset %s --batch %d --steps %d --no-floor 2>&1",
             kinds[k].env, self, preset, batch, steps);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    double ms = 0;
    while (fgets(line, sizeof line, p)) {
        if (log) fprintf(log, "    | %s", line);
        if (f && strstr(line, "GEMM kernels: "))
            kernels_of(f->kernels[k], sizeof f->kernels[k], line);
        const char *sps = strstr(line, " s/step, "); /* "  0.0004 s/step, 2456.26 steps/s" */
        if (sps) /* the more digits of the two: s/step has 4 decimals, steps/s 2 */
            ms = atof(line) >= 0.01 || atof(sps + 9) <= 0 ? 1e3 * atof(line) : 1e3 / atof(sps + 9);
        const char *w = sps ? strstr(sps, "its threads waited ") : NULL;
        if (w) *wait = atof(w + strlen("its threads waited "));
    }
    return pclose(p) == 0 ? ms : 0;
}

void btf_round(struct btf_runs *f, const char *preset, int batch, int steps, FILE *log)
{
    for (int k = 0; k < BTF_KINDS; k++) {
        if (log) fprintf(log, "leakgate, %s\n", kinds[k].name);
        double wait, ms = run_one(f, k, preset, batch, steps, log, &wait);
        if (ms > 0 && f->got[k] < BTF_ROUNDS)
            f->wait[k][f->got[k]] = wait, f->ms[k][f->got[k]++] = ms;
    }
}

double btf_alone(const char *preset, int batch, int steps, FILE *log, double *wait)
{
    return run_one(NULL, 0, preset, batch, steps, log, wait);
}

void btf_print(const struct btf_runs *f, double best_ms, const char *best_name)
{
    double med[BTF_KINDS];
    for (int k = 0; k < BTF_KINDS; k++) {
        char name[256];
        snprintf(name, sizeof name, "leakgate alone, %s: %s", kinds[k].name,
                 f->kernels[k][0] ? f->kernels[k] : "?");
        med[k] = median_of(f->ms[k], f->got[k]);
        if (!f->got[k]) {
            printf("%-70s %9s  (failed)\n", name, "-");
            continue;
        }
        double lo = f->ms[k][0], hi = f->ms[k][0];
        for (int r = 1; r < f->got[k]; r++)
            lo = f->ms[k][r] < lo ? f->ms[k][r] : lo, hi = f->ms[k][r] > hi ? f->ms[k][r] : hi;
        printf("%-70s %9.1f %8.1f-%-8.1f %7.2fx", name, med[k], lo, hi,
               best_ms > 0 ? med[k] / best_ms : 0);
        if (f->wait[k][0] >= 0)
            printf("  (waited %.1f ms a step for a CPU)", median_of(f->wait[k], f->got[k]));
        printf("\n");
    }
    if (med[0] > 0 && med[1] > 0 && med[2] > 0)
        printf("  leakgate's step, fallback forced / feature-matched: %.2f; Prescott kept / "
               "feature-matched: %.2f (medians of %d, %d and %d rounds, processes of their own)\n",
               med[1] / med[0], med[2] / med[0], f->got[1], f->got[0], f->got[2]);
    if (med[1] > 0 && best_ms > 0)
        printf("  leakgate with the fallback forced / best PyTorch (%s) samples/s: %.2fx "
               "(leakgate %.1f ms/step, PyTorch %.1f ms/step, medians)\n",
               best_name, best_ms / med[1], med[1], best_ms);
}
