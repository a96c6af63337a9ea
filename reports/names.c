/* names.c — the name tables of results: channels, statuses. The names are the schema's words
 * (docs/results-schema.md); changing one is a schema change. */
#include <string.h>

#include "rpt_impl.h"

struct channel_names {
    const char *name, *label;
    bool exact;
    double granularity; /* bytes a reading moves by: 1 (a byte counter), a page, a driver page */
};
static const struct channel_names channels[RPT_NCHANNELS] = {
    [RPT_CH_TAGGED_HOST] = {"tagged_host", "tagged host bytes", true, 1},
    [RPT_CH_TAGGED_DEVICE] = {"tagged_device", "tagged device bytes", true, 1},
    [RPT_CH_REFS] = {"refs", "unbalanced references", true, 1},
    [RPT_CH_JE_ALLOCATED] = {"je_allocated", "jemalloc allocated", false, 1},
    [RPT_CH_JE_ACTIVE] = {"je_active", "jemalloc active", false, 4096},
    [RPT_CH_JE_RESIDENT] = {"je_resident", "jemalloc resident", false, 4096},
    [RPT_CH_RSS] = {"rss", "process RSS", false, 4096},
    [RPT_CH_DEV_DRIVER] = {"dev_driver", "whole GPU used, every process (driver view)", false,
                           2 << 20},
    [RPT_CH_DEV_PROCESS] = {"dev_process", "device used by this process", false, 2 << 20},
};

static const struct channel_names *channel(enum rpt_channel c)
{
    LG_ASSERT((unsigned)c < RPT_NCHANNELS && "channel out of range");
    return &channels[c];
}

const char *rpt_channel_name(enum rpt_channel c) { return channel(c)->name; }
const char *rpt_channel_label(enum rpt_channel c) { return channel(c)->label; }
bool rpt_channel_exact(enum rpt_channel c) { return channel(c)->exact; }
double rpt_channel_granularity(enum rpt_channel c) { return channel(c)->granularity; }

int rpt_channel_from_name(const char *name)
{
    for (int c = 0; c < RPT_NCHANNELS; c++)
        if (strcmp(channels[c].name, name) == 0) return c;
    return -1;
}

struct status_names {
    const char *name, *word, *mark, *html_class; /* schema, banner, Markdown, HTML badge */
};
static const struct status_names statuses[] = {
    [RPT_PASS] = {"pass", "PASS", "✅", "pass"},
    [RPT_LEAK] = {"leak", "LEAK", "❌", "leak"},
    [RPT_SATURATING] = {"saturating", "SATURATING", "〰️", "warn"},
    [RPT_INCONCLUSIVE] = {"inconclusive", "INCONCLUSIVE", "⚠️", "warn"},
    [RPT_UNAVAILABLE] = {"unavailable", "UNAVAILABLE", "➖", "na"},
    [RPT_ERROR] = {"error", "ERROR", "💥", "leak"},
};

static const struct status_names *status(enum rpt_status s)
{
    LG_ASSERT((unsigned)s < LG_ARRAY_LEN(statuses) && "status out of range");
    return &statuses[s];
}

const char *rpt_status_name(enum rpt_status s) { return status(s)->name; }
const char *rpt_status_word(enum rpt_status s) { return status(s)->word; }
const char *rpt_status_mark(enum rpt_status s) { return status(s)->mark; }
const char *rpt_status_class(enum rpt_status s) { return status(s)->html_class; }

int rpt_status_from_name(const char *name)
{
    for (size_t s = 0; s < LG_ARRAY_LEN(statuses); s++)
        if (strcmp(statuses[s].name, name) == 0) return (int)s;
    return -1;
}
