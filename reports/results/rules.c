/* rules.c — what a run's settings imply, for whoever reads or judges its results: the channels
 * it requires, whether it had a device, the fewest sessions a budget needs (docs/design.md,
 * "Minimum sessions"), and the median every judge and figure uses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

#define MAX_STACK_N 512 /* series this long or shorter are handled without heap memory */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rpt_median(const double *v, int n)
{
    if (n <= 0) return NAN;
    double stack[MAX_STACK_N], *w = n <= MAX_STACK_N ? stack : malloc((size_t)n * sizeof *w);
    if (!w) return NAN;
    memcpy(w, v, (size_t)n * sizeof *w);
    qsort(w, (size_t)n, sizeof *w, cmp_double);
    double m = n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
    if (w != stack) free(w);
    return m;
}

bool rpt_run_had_device(const struct rpt_run *run) { return strncmp(run->device, "cuda", 4) == 0; }

double rpt_budget_noise(const struct rpt_budget *b)
{
    return isfinite(b->noise) && b->noise > 0 ? b->noise : 0;
}

int rpt_min_sessions(const struct rpt_budget *b)
{
    double s = b->slope, sigma = rpt_budget_noise(b);
    if (!(s > 0)) return RPT_MIN_TREND;
    for (int n = RPT_MIN_TREND; n < 1000000; n++) {
        /* a steady leak of 2s moves the late third's median 2s(n - third) above the early
         * third's; each median may be off by about the noise */
        bool shifts = 2 * s * (n - n / 3) - 2 * sigma > b->floor;
        /* the lower end of Sen's interval must clear s when the slope is 2s. Theil–Sen's
         * standard error for i.i.d. noise is about 1.1x least squares'; the interval is an order
         * statistic of the pairwise slopes, wider than a normal one when n is small, hence
         * (4 + 12/n) standard errors rather than 2: a Monte Carlo of the rules gives 95% power
         * at this n for noise up to 4x the budget (tests/unit/test_verdict.c) */
        double se = 1.1 * sigma * sqrt(12.0 / ((double)n * ((double)n * n - 1)));
        bool bounds = (4 + 12.0 / n) * se <= s;
        if (shifts && bounds) return n;
    }
    return 1000000;
}

/* ---- what a run requires --------------------------------------------------------------------- */

unsigned rpt_default_required(bool device)
{
    return rpt_channel_mask(RPT_CHF_HOST) | (device ? rpt_channel_mask(RPT_CHF_CUDA) : 0);
}

int rpt_parse_required(const char *list, bool device, unsigned *out)
{
    char buf[256];
    unsigned m = 0;
    if (lg_strlcpy(buf, list, sizeof buf))
        return lg_fail(LG_EINVAL, "--require: '%.40s...' is too long", list);
    if (!buf[0])
        return lg_fail(LG_EINVAL,
                       "--require: name channels (e.g. tagged_host,rss), host, exact, all or none");
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int c = rpt_channel_from_name(tok);
        if (c >= 0)
            m |= RPT_BIT(c);
        else if (!strcmp(tok, "host"))
            m |= rpt_default_required(false);
        else if (!strcmp(tok, "exact"))
            m |= rpt_channel_mask(RPT_CHF_EXACT) &
                 (device ? ~0u : ~rpt_channel_mask(RPT_CHF_DEVICE));
        else if (!strcmp(tok, "all"))
            m |= device ? (RPT_BIT(RPT_NCHANNELS) - 1) : rpt_default_required(false);
        else if (!strcmp(tok, "none"))
            ;
        else {
            char names[256];
            return lg_fail(LG_EINVAL,
                           "--require: unknown channel '%s' (%s; or host, exact, all, none)", tok,
                           rpt_channel_list(names, sizeof names, RPT_BIT(RPT_NCHANNELS) - 1, ", "));
        }
    }
    *out = m;
    return LG_OK;
}

void rpt_required_string(unsigned mask, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        if (!(mask & RPT_BIT(c))) continue;
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, "%s%s", l ? ", " : "", rpt_channel_name((enum rpt_channel)c));
    }
    if (!buf[0]) lg_strlcpy(buf, "none", size);
}
