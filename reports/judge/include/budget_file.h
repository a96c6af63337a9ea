/* budget_file.h — budgets measured where the gate runs: what clean runs show of each
 * statistical channel's noise, the budgets derived from it, and the versioned budgets file
 * (JSON, "leakgate.budgets/1") that `leakgate calibrate` writes and `--budgets FILE` reads.
 *
 * Worked example (what `leakgate calibrate` does with its clean runs):
 *
 *   struct rpt_noise nz[RPT_NCHANNELS] = {0};
 *   for each clean run r, for each statistical channel c:
 *       rpt_noise_add_run(&nz[c], y_of_run_r_channel_c, n_measured);
 *   struct rpt_budget b[RPT_NCHANNELS];
 *   for each c: rpt_budget_from_noise(c, &nz[c], &b[c]);     // never below the resolution
 *   struct rpt_budgets_info info = {.machine = "...", .command = "leakgate calibrate ..."};
 *   rpt_budgets_write("budgets.json", b, nz, measured_mask, &info);
 *
 * and the run side:
 *
 *   unsigned present;
 *   if (rpt_budgets_load("budgets.json", b, &present, &info) != LG_OK) die(lg_errmsg());
 */
#ifndef LG_BUDGET_FILE_H
#define LG_BUDGET_FILE_H

#include "results.h"

#define RPT_BUDGETS_SCHEMA "leakgate.budgets/1"

/* What clean runs showed on one statistical channel. */
struct rpt_noise {
    int runs, sessions;  /* clean runs and measured sessions seen */
    double max_abs;      /* largest |delta| of any session */
    double max_step;     /* largest |increment| between consecutive sessions */
    double jitter;       /* largest robust sigma (1.4826 MAD) of a run's residuals around
                            its Theil–Sen line */
    double max_slope;    /* largest |Theil–Sen slope| of a run */
    double max_slope_hi; /* largest upper bound of a run's 95% slope interval */
    double max_shift;    /* largest |late − early| median shift of a run */
};
/* Adds one clean run's series (rpt_session_value of its measured sessions). */
void rpt_noise_add_run(struct rpt_noise *nz, const double *y, int n);

/* Budgets from measured noise (docs/design.md, "Budgets"): band 2x the largest |delta|, slope
 * 2x the largest slope bound, floor 2x the largest shift (and 4 noise), never below the
 * resolution; noise = the jitter; measured = true. The source is left to the caller. */
void rpt_budget_from_noise(enum rpt_channel c, const struct rpt_noise *nz, struct rpt_budget *out);

/* Where a budgets file came from. */
struct rpt_budgets_info {
    char machine[200];  /* "hostname: 2 CPUs, 23.4 GiB, Linux 6.1.0 x86_64" */
    char device[96];    /* "cpu" or "cuda: NVIDIA H200" */
    char build[160];    /* "leakgate 0.1.0 (commit abc1234, RelWithDebInfo, jemalloc 5.3.0)" */
    char command[512];  /* the calibrate command line */
    char date[32];      /* ISO 8601 UTC */
    char workload[160]; /* "tiny fp32,int8, 10 steps, 1 warm-up + 40 sessions, 20 runs" */
};

/* Writes the budgets of the channels in `mask` (with their noise) and the info to path,
 * atomically (a temporary file renamed over it). */
int rpt_budgets_write(const char *path, const struct rpt_budget *b, const struct rpt_noise *nz,
                      unsigned mask, const struct rpt_budgets_info *info);
/* Reads a budgets file into b (only the channels it names, set in *present; their source says
 * "FILE: measured on ... by ..., DATE"); LG_EIO / LG_EFORMAT naming file and member. */
int rpt_budgets_load(const char *path, struct rpt_budget *b, unsigned *present,
                     struct rpt_budgets_info *info);

#endif
