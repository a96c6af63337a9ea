/* names.c — the name tables of results: channels, statuses. The names are the schema's words
 * (docs/results-schema.md); changing one is a schema change. */
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "rpt_text.h"

struct channel_names {
    const char *name, *label;
    bool exact;
    double granularity;
    unsigned flags;
};
static const struct channel_names channels[RPT_NCHANNELS] = {
#define ROW(id, name, label, exact, gran, colour, delta, trend, band, slope, floor, flags)         \
    [RPT_CH_##id] = {name, label, exact, gran, flags},
    RPT_CHANNELS(ROW)
#undef ROW
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

unsigned rpt_channel_mask(unsigned flags)
{
    unsigned m = 0;
    for (int c = 0; c < RPT_NCHANNELS; c++)
        if ((channels[c].flags & flags) == flags) m |= RPT_BIT(c);
    return m;
}

const char *rpt_channel_list(char *buf, size_t size, unsigned mask, const char *sep)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int c = 0; c < RPT_NCHANNELS && k < size; c++)
        if (mask & RPT_BIT(c))
            k += (size_t)snprintf(buf + k, size - k, "%s%s", k ? sep : "", channels[c].name);
    return buf;
}

const char *rpt_statistical_channels(char *buf, size_t size)
{
    unsigned m = 0;
    for (int c = 0; c < RPT_NCHANNELS; c++)
        if (!channels[c].exact) m |= RPT_BIT(c);
    return rpt_channel_list(buf, size, m, ", ");
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

void rpt_budget_resolution(enum rpt_channel c, struct rpt_budget *out)
{
    memset(out, 0, sizeof *out);
    out->noise = NAN;
    /* the table's defaults (channels.h): zeros for the exact channels, zero tolerance */
    static const struct rpt_budget defaults[RPT_NCHANNELS] = {
#define ROW(id, name, label, exact, gran, colour, delta, trend, band_, slope_, floor_, flags)      \
    [RPT_CH_##id] = {.band = band_, .slope = slope_, .floor = floor_},
        RPT_CHANNELS(ROW)
#undef ROW
    };
    if ((unsigned)c < RPT_NCHANNELS) *out = defaults[c];
    out->noise = NAN;
}
