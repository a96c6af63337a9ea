/* bench_torch.h — the PyTorch configurations bench_train --torch measures (bench_torch.c).
 *
 *   struct bt_config cfg[16];
 *   int n = bt_configs(cfg, 16, "build/torch-venv", false);
 *   for (int i = 0; i < n; i++)
 *       if (!cfg[i].skip[0]) ms[i] = bt_run(&cfg[i], "tests/bench/tft_torch.py", "electricity", 64,
 * 8, NULL);
 */
#ifndef LG_BENCH_TORCH_H
#define LG_BENCH_TORCH_H

#include <stdbool.h>
#include <stdio.h>

struct bt_config {
    char name[128];   /* "torch 1.13.0a0, PASSIVE + jemalloc, 2 threads" */
    char python[512]; /* the interpreter */
    char env[768];    /* VAR=value ... put before it */
    int threads;      /* torch.set_num_threads */
    bool compile;     /* torch.compile */
    char skip[128];   /* why it cannot run here, or "" */
};

/* Fills out[] with every configuration (at most max); `venv` holds the PyTorch 2.x; `fallback`
 * adds, after each of Debian's torch 1.13 (OpenBLAS's GEMMs), its twin with
 * OPENBLAS_CORETYPE=Prescott. */
int bt_configs(struct bt_config *out, int max, const char *venv, bool fallback);
/* One run of tft_torch.py in configuration c: the median ms/step of `steps` steps after its
 * warm-up, or 0 when it failed. Its output goes to log when not NULL. */
double bt_run(const struct bt_config *c, const char *script, const char *preset, int batch,
              int steps, FILE *log);

#endif
