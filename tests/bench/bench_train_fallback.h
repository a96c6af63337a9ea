/* bench_train_fallback.h — bench_train --torch --fallback: leakgate's own step in processes of
 * its own, each round, in three environments: as it starts ("feature-matched"), with OpenBLAS's
 * generic core forced (OPENBLAS_CORETYPE=Prescott: the start-up choice replaces it, kn_blas.h)
 * and with that core kept (LG_BLAS_CORE=openblas on top: what ran before issue 40). Each run is
 * `bench_train --preset P --batch B --steps K --no-floor` under `env`, its "s/step" read back
 * with the ms a step its threads waited for a CPU (bench_sched.h), which the rows print.
 *
 *   struct btf_runs f = {0};
 *   for (int r = 0; r < rounds; r++) btf_round(&f, "electricity", 64, 5, log);
 *   btf_print(&f, best_torch_ms, "torch 2.15.0, jemalloc, 1 thread");
 */
#ifndef LG_BENCH_TRAIN_FALLBACK_H
#define LG_BENCH_TRAIN_FALLBACK_H

#include <stdio.h>

#define BTF_KINDS  3
#define BTF_ROUNDS 16

struct btf_runs {
    double ms[BTF_KINDS][BTF_ROUNDS];   /* ms/step of each environment's rounds */
    double wait[BTF_KINDS][BTF_ROUNDS]; /* ms a step its threads waited for a CPU; < 0: unknown */
    int got[BTF_KINDS];                 /* rounds that ran */
    char kernels[BTF_KINDS][128];       /* "OpenBLAS 0.3.21 Cooperlake, path cpu-features" */
};

/* One round: a bench_train process in each environment; their output goes to log when not NULL. */
void btf_round(struct btf_runs *f, const char *preset, int batch, int steps, FILE *log);
/* One bench_train process as it starts (the first environment): its ms/step, or 0 when it
 * failed; *wait the ms a step its threads waited for a CPU (-1 when it did not say). */
double btf_alone(const char *preset, int batch, int steps, FILE *log, double *wait);
/* The three rows for bench_train's table (their ratio to best_ms, the best PyTorch's median), the
 * forced and kept runs against the feature-matched one, and the forced one against best_ms. */
void btf_print(const struct btf_runs *f, double best_ms, const char *best_name);

#endif
