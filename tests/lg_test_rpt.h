/* lg_test_rpt.h — helpers for the tests of reports/ (they may see its internals). */
#ifndef LG_TEST_RPT_H
#define LG_TEST_RPT_H

#include "results.h"

/* A timeline point with the four sampled channels' readings (RPT_CHF_SAMPLED), the rest none. */
static inline struct rpt_sample lg_test_sample(int step, const char *phase, double t,
                                               int64_t tagged_host, int64_t tagged_device,
                                               int64_t je_allocated, int64_t rss)
{
    struct rpt_sample p = {.step = step, .t = t};
    snprintf(p.phase, sizeof p.phase, "%s", phase);
    for (int c = 0; c < RPT_NCHANNELS; c++) p.v[c] = RPT_NONE;
    p.v[RPT_CH_TAGGED_HOST] = tagged_host;
    p.v[RPT_CH_TAGGED_DEVICE] = tagged_device;
    p.v[RPT_CH_JE_ALLOCATED] = je_allocated;
    p.v[RPT_CH_RSS] = rss;
    return p;
}

#endif
