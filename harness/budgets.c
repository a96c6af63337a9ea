/* budgets.c — default budgets of the statistical channels.
 *
 * These come from measured noise, not guesses: ci/detection runs the clean gate many times
 * with the other core busy and records, per channel, the largest |delta| (band), the largest
 * Theil–Sen slope (slope) and the largest late-vs-early shift (floor) of any clean run; the
 * defaults sit above those with margin. docs/detection.md has the figures, the command, and
 * the smallest leak per session each channel then detects.
 */
#include <string.h>

#include "harness.h"

#define KiB 1024.0
#define MiB (1024.0 * 1024.0)

void hx_default_budgets(struct rpt_budget *b, enum tn_device dev)
{
    memset(b, 0, sizeof *b * RPT_NCHANNELS);
    for (int c = 0; c < RPT_NCHANNELS; c++)
        lg_strlcpy(b[c].source, "default (measured, docs/detection.md)", sizeof b[c].source);
    /* exact channels: zero tolerance */
    /* 50 clean gate runs with the other core busy: every statistical channel's slope and shift
     * were exactly 0 (jemalloc is deterministic and the purge returns every page); the soak's
     * 300-session runs saw RSS drift 24 KiB and one-time 2 MiB + 4 KiB steps of je_resident.
     * (A one-time 256 KiB step of je_allocated in QAT runs was the tracker's tag table growing;
     * its own tables are now subtracted, session.c.)
     * Slopes and floors sit a few pages above zero; bands above the one-time steps. */
    b[RPT_CH_JE_ALLOCATED] = (struct rpt_budget){.band = 512 * KiB, .slope = 8 * KiB, .floor = 32 * KiB};
    b[RPT_CH_JE_ACTIVE] = (struct rpt_budget){.band = 1 * MiB, .slope = 32 * KiB, .floor = 128 * KiB};
    b[RPT_CH_JE_RESIDENT] = (struct rpt_budget){.band = 4 * MiB, .slope = 64 * KiB, .floor = 256 * KiB};
    b[RPT_CH_RSS] = (struct rpt_budget){.band = 4 * MiB, .slope = 64 * KiB, .floor = 256 * KiB};
    /* device: the driver rounds to 2 MiB pages and libraries grow pools lazily */
    b[RPT_CH_DEV_DRIVER] = (struct rpt_budget){.band = 64 * MiB, .slope = 2 * MiB, .floor = 8 * MiB};
    b[RPT_CH_DEV_PROCESS] = (struct rpt_budget){.band = 64 * MiB, .slope = 2 * MiB, .floor = 8 * MiB};
    for (int c = 0; c < RPT_NCHANNELS; c++)
        lg_strlcpy(b[c].source, "default (measured, docs/detection.md)", sizeof b[c].source);
    (void)dev;
}
