/* history_drift.c — drift over commits (history.h): every figure a workload's records have
 * (per-session growth and the level after the sessions per channel, the peaks, the retained
 * tags), judged over the last N records by the robust trend the verdict uses (Theil–Sen with
 * Sen's 95% interval): drifting when the interval is above zero and the trend line rose, over
 * the window, more than the budget. A leak that grows 3% a commit passes every comparison of
 * two neighbours and rises 27% over ten. */
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "history_impl.h"
#include "rpt_text.h"
#include "verdict.h"

int rpt_history_window(const struct rpt_history *h, const char *workload, int last, int **out,
                       int *n)
{
    int total = 0, k = 0;
    *n = 0;
    for (int i = 0; i < h->n; i++) total += !strcmp(h->rec[i].workload, workload);
    int skip = last > 0 && total > last ? total - last : 0;
    *out = calloc((size_t)total + 1, sizeof **out);
    if (!*out) return lg_fail(LG_ENOMEM, "out of memory reading the history");
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->rec[i].workload, workload) && k++ >= skip) (*out)[(*n)++] = i;
    return LG_OK;
}

static int measured_sessions(const struct rpt_history_record *h)
{
    int m = 0;
    for (int i = 0; i < h->n_sessions; i++) m += h->kinds[i] == 'm';
    return m;
}

/* A retained tag's bytes per measured session; 0 when the record lists every tag it leaked and
 * not this one. */
static double tag_figure(const struct rpt_history_record *h, const char *tag)
{
    int64_t bytes = 0;
    bool found = false;
    for (int i = 0; i < h->n_tags; i++)
        if (!strcmp(h->tags[i].tag, tag)) {
            bytes += h->tags[i].bytes;
            found = true;
        }
    if (!found && h->n_tags >= RPT_HISTORY_TAGS) return NAN;
    return (double)bytes / LG_MAX(measured_sessions(h), 1);
}

static double peak_figure(const struct rpt_history_record *h, const char *what)
{
    const char *space = "host", *cls = what;
    if (!strncmp(what, "device.", 7)) {
        space = "device";
        cls = what + 7;
    }
    if (!strcmp(cls, "total")) {
        int64_t v = !strcmp(space, "host") ? h->peak_host : h->peak_device;
        return v == RPT_NONE ? NAN : (double)v;
    }
    if (!h->n_classes) return NAN; /* no per-class peaks recorded (exec) */
    for (int i = 0; i < h->n_classes; i++)
        if (!strcmp(h->classes[i].cls, cls) && !strcmp(h->classes[i].space, space))
            return (double)h->classes[i].bytes;
    return 0;
}

/* A tag's highest peak in the record; unknown (NaN) when the record does not name it: a record
 * keeps only the top tags (each session's top RPT_PEAK_TAGS a class, then the run's top ten), so
 * a tag missing from it may still have peaked just below them. Read as 0 it made a steady tag
 * "rise from 0 B" when earlier records had larger tags. */
static double peak_tag_figure(const struct rpt_history_record *h, const char *tag)
{
    for (int i = 0; i < h->n_peak_tags; i++)
        if (!strcmp(h->peak_tags[i].tag, tag)) return (double)h->peak_tags[i].bytes;
    return NAN;
}

double rpt_history_figure(const struct rpt_history_record *h, const char *metric)
{
    if (!strncmp(metric, "tag.", 4)) return tag_figure(h, metric + 4);
    if (!strncmp(metric, "peaktag.", 8)) return peak_tag_figure(h, metric + 8);
    if (!strncmp(metric, "peak.", 5)) return peak_figure(h, metric + 5);
    bool growth = !strncmp(metric, "growth.", 7), level = !strncmp(metric, "level.", 6);
    int c = growth  ? rpt_channel_from_name(metric + 7)
            : level ? rpt_channel_from_name(metric + 6)
                    : -1;
    if (c < 0) return NAN;
    if (growth) return h->growth[c];
    return h->level[c] == RPT_NONE ? NAN : (double)h->level[c];
}

/* ---- the figures of a workload ------------------------------------------------------------ */

struct names {
    char (*v)[RPT_METRIC_MAX];
    int n, cap;
};

static int add_name(struct names *s, const char *a, const char *b)
{
    char name[RPT_METRIC_MAX];
    snprintf(name, sizeof name, "%s%s", a, b);
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], name)) return LG_OK;
    if (s->n == s->cap) {
        int ncap = s->cap ? s->cap * 2 : 64;
        char(*v)[RPT_METRIC_MAX] = realloc(s->v, sizeof *v * (size_t)ncap);
        if (!v) return lg_fail(LG_ENOMEM, "out of memory listing the history's figures");
        s->v = v;
        s->cap = ncap;
    }
    lg_strlcpy(s->v[s->n++], name, RPT_METRIC_MAX);
    return LG_OK;
}

static int names_of(const struct rpt_history_record *h, struct names *s)
{
    int rc = LG_OK;
    for (int c = 0; c < RPT_NCHANNELS && rc == LG_OK; c++)
        if (isfinite(h->growth[c])) rc = add_name(s, "growth.", rpt_channel_name(c));
    for (int c = 0; c < RPT_NCHANNELS && rc == LG_OK; c++)
        if (h->level[c] != RPT_NONE) rc = add_name(s, "level.", rpt_channel_name(c));
    if (rc == LG_OK && h->peak_host != RPT_NONE) rc = add_name(s, "peak.", "total");
    if (rc == LG_OK && h->peak_device != RPT_NONE && h->peak_device > 0)
        rc = add_name(s, "peak.device.", "total");
    for (int i = 0; i < h->n_classes && rc == LG_OK; i++)
        rc = add_name(s, !strcmp(h->classes[i].space, "host") ? "peak." : "peak.device.",
                      h->classes[i].cls);
    for (int i = 0; i < h->n_tags && rc == LG_OK; i++) rc = add_name(s, "tag.", h->tags[i].tag);
    for (int i = 0; i < h->n_peak_tags && rc == LG_OK; i++)
        rc = add_name(s, "peaktag.", h->peak_tags[i].tag);
    return rc;
}

int rpt_history_metrics(const struct rpt_history *h, const char *workload,
                        char (**out)[RPT_METRIC_MAX], int *n)
{
    struct names s = {0};
    int rc = LG_OK;
    for (int i = 0; i < h->n && rc == LG_OK; i++)
        if (!strcmp(h->rec[i].workload, workload)) rc = names_of(&h->rec[i], &s);
    if (rc != LG_OK) {
        free(s.v);
        return rc;
    }
    *out = s.v;
    *n = s.n;
    return LG_OK;
}

/* ---- budgets ------------------------------------------------------------------------------ */

int rpt_drift_budget_parse(const char *spec, struct rpt_drift_budget *out)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof out->metric)
        return lg_fail(LG_EINVAL,
                       "--drift-budget: '%s' is not METRIC=SIZE or METRIC=PCT%% (e.g. peak.*=5%%, "
                       "level.rss=8MiB)",
                       spec);
    memcpy(out->metric, spec, (size_t)(eq - spec));
    const char *v = eq + 1;
    size_t len = strlen(v);
    if (len > 1 && v[len - 1] == '%') {
        char *end;
        out->pct = strtod(v, &end);
        if (end != v + len - 1 || !(out->pct >= 0) || !isfinite(out->pct))
            return lg_fail(LG_EINVAL, "--drift-budget %s: '%s' is not a percentage", spec, v);
        return LG_OK;
    }
    size_t bytes;
    if (lg_parse_size(v, &bytes) != LG_OK)
        return lg_fail_ctx(LG_EINVAL, "--drift-budget %s: ", spec);
    out->bytes = (double)bytes;
    return LG_OK;
}

/* The defaults: 10% of where the line starts, and at least a figure's resolution: tagged
 * peaks are the ledger's, exact; levels are readings of jemalloc and the RSS, which move by
 * about 2% between clean runs (docs/ci.md, measured). */
static const struct rpt_drift_budget defaults[] = {
    {"growth.refs", 1, 10},   {"growth.*", 4096, 10},      {"tag.*", 4096, 10},
    {"peak.*", 64 << 10, 10}, {"peaktag.*", 64 << 10, 10}, {"level.*", 1 << 20, 10},
};

static void budget_for(const char *metric, const struct rpt_drift_budget *b, int nb, double *bytes,
                       double *pct)
{
    for (int i = 0; i < nb; i++)
        if (fnmatch(b[i].metric, metric, 0) == 0) {
            *bytes = b[i].bytes;
            *pct = b[i].pct;
            return;
        }
    for (size_t i = 0; i < LG_ARRAY_LEN(defaults); i++)
        if (fnmatch(defaults[i].metric, metric, 0) == 0) {
            *bytes = defaults[i].bytes;
            *pct = defaults[i].pct;
            return;
        }
    *bytes = 0;
    *pct = 10;
}

/* "+1.50 MiB" (sign) or "1.50 MiB", or a count for the refs figures. */
static char *fmt(char *buf, size_t size, const char *metric, double v, bool sign)
{
    return rpt_fmt_figure(buf, size, strstr(metric, "refs") ? RPT_CH_REFS : RPT_CH_TAGGED_HOST, v,
                          sign);
}

static void judge(struct rpt_drift *d, const double *y, int n, const struct rpt_drift_budget *b,
                  int nb)
{
    double bytes, pct;
    char b1[48], b2[48], b3[48], b4[48], b5[48], b6[48], b7[48];
    d->n = n;
    if (n < RPT_DRIFT_MIN) {
        d->status = RPT_INCONCLUSIVE;
        snprintf(d->why, sizeof d->why, "%d record(s): a trend needs %d", n, RPT_DRIFT_MIN);
        return;
    }
    struct rpt_trend t;
    rpt_theil_sen(y, n, 0.95, &t);
    budget_for(d->metric, b, nb, &bytes, &pct);
    d->slope = t.slope;
    d->lo = t.lo;
    d->hi = t.hi;
    d->first = t.intercept;
    d->rise = t.slope * (n - 1);
    d->last = d->first + d->rise;
    d->budget = fmax(bytes, pct / 100 * fabs(d->first));
    bool drift = t.lo > 0 && d->rise > d->budget;
    d->status = drift ? RPT_LEAK : RPT_PASS;
    snprintf(d->why, sizeof d->why,
             "%s over %d records (%s/record, 95%% [%s, %s]) from %s: %s the budget %s (%g%% of "
             "the start, at least %s)",
             fmt(b1, sizeof b1, d->metric, d->rise, true), n,
             fmt(b2, sizeof b2, d->metric, t.slope, true),
             fmt(b5, sizeof b5, d->metric, t.lo, true), fmt(b6, sizeof b6, d->metric, t.hi, true),
             fmt(b3, sizeof b3, d->metric, d->first, false), drift ? "DRIFT beyond" : "within",
             fmt(b4, sizeof b4, d->metric, d->budget, false), pct,
             fmt(b7, sizeof b7, d->metric, bytes, false));
}

/* Drifting figures first, each group in the order of the figures. */
static void drifting_first(struct rpt_drift *d, int n)
{
    for (int i = 0, front = 0; i < n; i++) {
        if (d[i].status != RPT_LEAK) continue;
        struct rpt_drift x = d[i];
        memmove(&d[front + 1], &d[front], sizeof *d * (size_t)(i - front));
        d[front++] = x;
    }
}

int rpt_history_drift(const struct rpt_history *h, const char *workload, int last,
                      const struct rpt_drift_budget *b, int nb, struct rpt_drift **out, int *n)
{
    int *idx = NULL, ni = 0, nm = 0;
    char(*names)[RPT_METRIC_MAX] = NULL;
    double *y = NULL;
    *out = NULL;
    *n = 0;
    int rc = rpt_history_window(h, workload, last, &idx, &ni);
    if (rc == LG_OK) rc = rpt_history_metrics(h, workload, &names, &nm);
    if (rc == LG_OK && (!(y = calloc((size_t)ni + 1, sizeof *y)) ||
                        !(*out = calloc((size_t)nm + 1, sizeof **out))))
        rc = lg_fail(LG_ENOMEM, "out of memory judging drift");
    for (int m = 0; rc == LG_OK && m < nm; m++) {
        struct rpt_drift *d = &(*out)[m];
        int k = 0;
        lg_strlcpy(d->metric, names[m], sizeof d->metric);
        for (int i = 0; i < ni; i++) {
            double v = rpt_history_figure(&h->rec[idx[i]], names[m]);
            if (isfinite(v)) y[k++] = v;
        }
        judge(d, y, k, b, nb);
    }
    if (rc == LG_OK) {
        *n = nm;
        drifting_first(*out, nm);
    } else {
        free(*out);
        *out = NULL;
    }
    free(idx);
    free(names);
    free(y);
    return rc;
}
