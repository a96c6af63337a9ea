/* budgets.c — the default budgets of the statistical channels, and `--budgets FILE`.
 *
 * Budgets are measured where the gate runs: `leakgate calibrate` runs clean sessions of the
 * gate's workload, measures each channel's noise and writes a budgets file naming the machine,
 * device, build, command and date (reports/judge/include/budget_file.h); `--budgets FILE` uses it.
 * The defaults below are such a measurement, made on the machine kind the project's CI runs on, and
 * say so in every results file; the device defaults were never measured on a device and are marked
 * unmeasured, which every verdict that uses them repeats.
 */
#include <math.h>
#include <string.h>

#include "budget_file.h"
#include "harness.h"
#include "verdict.h"

/* The host defaults: `leakgate calibrate --runs 20 --load` on the CI machine kind (2 CPUs,
 * 23.5 GiB, Linux 6.18, Debian 12's jemalloc 5.3.0; the file is ci/budgets/cpu-2core.json),
 * which showed no noise at all on any host channel over 800 measured sessions with the other
 * core busy (every delta 0), so the budgets sit at each channel's resolution
 * (rpt_budget_resolution). A machine that is noisier measures its own with calibrate. */
static const char host_source[] =
    "measured: leakgate calibrate --runs 20 --load, CI machine kind (2 CPUs, "
    "Debian 12), 2026-12-01: no noise, budgets at resolution "
    "(ci/budgets/cpu-2core.json)";
static const char device_source[] =
    "unmeasured: never calibrated on a device (run leakgate calibrate --device cuda)";

void hx_default_budgets(struct rpt_budget *b, enum tn_device dev)
{
    (void)dev;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        rpt_budget_resolution((enum rpt_channel)c, &b[c]);
        bool device = c == RPT_CH_DEV_DRIVER || c == RPT_CH_DEV_PROCESS;
        if (rpt_channel_exact((enum rpt_channel)c)) {
            lg_strlcpy(b[c].source, "zero tolerance", sizeof b[c].source);
            b[c].measured = true;
            b[c].noise = 0;
        } else if (device) {
            lg_strlcpy(b[c].source, device_source, sizeof b[c].source);
            b[c].measured = false;
            b[c].noise = NAN;
        } else {
            lg_strlcpy(b[c].source, host_source, sizeof b[c].source);
            b[c].measured = true;
            b[c].noise = 0;
        }
    }
}

int hx_load_budgets(struct rpt_budget *b, const char *path, enum tn_device dev)
{
    (void)dev;
    struct rpt_budget fb[RPT_NCHANNELS];
    struct rpt_budgets_info info;
    unsigned present;
    memcpy(fb, b, sizeof fb);
    int rc = rpt_budgets_load(path, fb, &present, &info);
    if (rc != LG_OK) return rc;
    bool file_cuda = strncmp(info.device, "cuda", 4) == 0;
    unsigned devmask = RPT_BIT(RPT_CH_DEV_DRIVER) | RPT_BIT(RPT_CH_DEV_PROCESS);
    if ((present & devmask) && !file_cuda)
        return lg_fail(LG_EFORMAT, "%s: device budgets in a file measured on \"%s\"", path,
                       info.device);
    /* a file of host budgets on a device run: the device keeps its defaults, and says so */
    memcpy(b, fb, sizeof fb);
    return LG_OK;
}
