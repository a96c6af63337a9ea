/* summary.c — what every artefact says about a run: the per-session figure judged per
 * channel, per-channel observations, leaked tags summed over sessions and the retain sites
 * of unbalanced references. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"

int rpt_measured_count(const struct rpt_results *r)
{
    int n = 0;
    for (int i = 0; i < r->n_sessions; i++) n += !r->sessions[i].warmup;
    return n;
}

int rpt_warmup_count(const struct rpt_results *r) { return r->n_sessions - rpt_measured_count(r); }

bool rpt_any_suppressed(const struct rpt_results *r)
{
    for (int i = 0; i < r->n_sessions; i++)
        for (int k = 0; k < r->sessions[i].n_suppressed; k++) {
            const struct rpt_suppressed *x = &r->sessions[i].suppressed[k];
            if (!x->expired && (x->object || x->bytes > 0)) return true;
        }
    return false;
}

const char *rpt_no_leaked_tags_text(const struct rpt_results *r)
{
    return rpt_any_suppressed(r)
               ? "No tagged memory outlived its session in the measured sessions beyond what "
                 "suppression rules took (listed with the gate's rules)."
               : "No tagged memory outlived its session in the measured sessions.";
}

const struct rpt_channel_verdict *rpt_verdict_for(const struct rpt_results *r, enum rpt_channel c)
{
    if (!r->has_verdict) return NULL;
    for (int i = 0; i < r->verdict.n_channels; i++)
        if (r->verdict.channels[i].channel == c) return &r->verdict.channels[i];
    return NULL;
}

bool rpt_channel_measured(const struct rpt_results *r, enum rpt_channel c)
{
    for (int i = 0; i < r->n_sessions; i++)
        if (r->sessions[i].absolute[c] != RPT_NONE || r->sessions[i].delta[c] != RPT_NONE)
            return true;
    return false;
}

int64_t rpt_session_suppressed(const struct rpt_session *s, enum rpt_channel c)
{
    if (!rpt_channel_exact(c)) /* the device's channels see device bytes, the others host's */
        return s->suppressed_since[c == RPT_CH_DEV_DRIVER || c == RPT_CH_DEV_PROCESS];
    int64_t n = 0;
    for (int i = 0; i < s->n_suppressed; i++) {
        const struct rpt_suppressed *x = &s->suppressed[i];
        if (x->expired) continue;
        if (c == RPT_CH_REFS)
            n += x->object;
        else if (!x->object && !strcmp(x->space, c == RPT_CH_TAGGED_HOST ? "host" : "device"))
            n += x->bytes;
    }
    return n;
}

int64_t rpt_group_suppressed(const struct rpt_session *s, const struct lg_leak_group *g)
{
    int64_t n = 0;
    for (int i = 0; i < s->n_suppressed; i++) {
        const struct rpt_suppressed *x = &s->suppressed[i];
        if (!x->expired && !x->object && !strcmp(x->name, g->tag) && !strcmp(x->space, g->space))
            n += x->bytes;
    }
    return n;
}

bool rpt_object_suppressed(const struct rpt_session *s, const struct lg_ref_leak *rl)
{
    char name[sizeof s->suppressed->name];
    snprintf(name, sizeof name, "%s/%s", rl->kind, rl->name);
    for (int i = 0; i < s->n_suppressed; i++)
        if (!s->suppressed[i].expired && s->suppressed[i].object &&
            !strcmp(s->suppressed[i].name, name))
            return true;
    return false;
}

bool rpt_session_value(const struct rpt_session *s, enum rpt_channel c, int64_t *out)
{
    switch (c) {
    case RPT_CH_TAGGED_HOST: /* what this session itself left behind, less what a rule allows */
        if (s->absolute[c] == RPT_NONE) return false;
        *out = s->leaked_host_bytes - rpt_session_suppressed(s, c);
        return true;
    case RPT_CH_TAGGED_DEVICE:
        if (s->absolute[c] == RPT_NONE) return false;
        *out = s->leaked_device_bytes - rpt_session_suppressed(s, c);
        return true;
    case RPT_CH_REFS: /* objects, not retains: one object held twice is one leak */
        if (s->absolute[c] == RPT_NONE && !s->n_refs) return false;
        *out = s->n_refs - rpt_session_suppressed(s, c);
        return true;
    default:
        if (s->delta[c] == RPT_NONE) return false;
        *out = s->delta[c] - rpt_session_suppressed(s, c);
        return true;
    }
}

int64_t rpt_session_delta(const struct rpt_session *s, enum rpt_channel c)
{
    int64_t v;
    if (rpt_channel_exact(c)) return s->delta[c];
    return rpt_session_value(s, c, &v) ? v : RPT_NONE;
}

bool rpt_session_judge(const struct rpt_results *r, int i, enum rpt_channel c, int64_t *value,
                       bool *over)
{
    const struct rpt_session *s = &r->sessions[i];
    int64_t v;
    if (s->warmup || !rpt_session_value(s, c, &v)) return false;
    double band = r->run.budgets[c].band;
    *value = v;
    if (rpt_channel_exact(c))
        *over = v != 0;
    else
        *over = isfinite(band) && fabs((double)v) > band;
    return true;
}

void rpt_channel_observe(const struct rpt_results *r, enum rpt_channel c,
                         struct rpt_channel_obs *out)
{
    memset(out, 0, sizeof *out);
    out->median_growth = NAN;
    double *growth = malloc(sizeof(double) * (size_t)(r->n_sessions ? r->n_sessions : 1));
    int ng = 0;
    int64_t prev = 0;
    for (int i = 0; i < r->n_sessions; i++) {
        int64_t v;
        bool over;
        if (!rpt_session_judge(r, i, c, &v, &over)) continue;
        out->measured++;
        int64_t a = v < 0 ? -v : v;
        if (a > out->max_abs) out->max_abs = a;
        out->last = v;
        out->over_budget += over;
        int64_t d = r->sessions[i].delta[c];
        if (d != RPT_NONE && growth) {
            growth[ng++] = (double)(d - prev);
            prev = d;
        }
    }
    if (growth) out->median_growth = rpt_median(growth, ng);
    free(growth);
}

static int cmp_tag_total(const void *a, const void *b)
{
    const struct rpt_tag_total *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->tag, y->tag);
}

int rpt_tag_totals(const struct rpt_results *r, struct rpt_tag_total **out, int *n)
{
    struct rpt_tag_total *v = NULL;
    int nv = 0, cap = 0;
    *out = NULL;
    *n = 0;
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        if (s->warmup) continue;
        for (int g = 0; g < s->n_groups; g++) {
            const struct lg_leak_group *lg = &s->groups[g];
            int64_t left = lg->bytes - rpt_group_suppressed(s, lg); /* listed as suppressed */
            if (left <= 0) continue;
            int k = 0;
            while (k < nv && (strcmp(v[k].tag, lg->tag) != 0 || strcmp(v[k].space, lg->space) != 0))
                k++;
            if (k == nv) {
                if (!LG_RESERVE(v, cap, nv, 16)) {
                    free(v);
                    return lg_fail(LG_ENOMEM, "out of memory summing leaked tags");
                }
                lg_strlcpy(v[nv].tag, lg->tag, sizeof v[nv].tag);
                lg_strlcpy(v[nv].space, lg->space, sizeof v[nv].space);
                v[nv].first_session = s->index;
                v[nv].example = lg;
                nv++;
            }
            v[k].bytes += left;
            v[k].count += lg->count;
            v[k].sessions++;
        }
    }
    if (nv) qsort(v, (size_t)nv, sizeof *v, cmp_tag_total);
    *out = v;
    *n = nv;
    return LG_OK;
}

static int cmp_site(const void *a, const void *b)
{
    const struct rpt_site_count *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return strcmp(x->site, y->site);
}

int rpt_retain_sites(const struct rpt_results *r, const char *kind, struct rpt_site_count **out,
                     int *n)
{
    struct rpt_site_count *v = NULL;
    int nv = 0, cap = 0;
    *out = NULL;
    *n = 0;
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        if (s->warmup) continue;
        for (int o = 0; o < s->n_refs; o++) {
            const struct lg_ref_leak *rl = &s->refs[o];
            if ((kind && strcmp(rl->kind, kind) != 0) || rpt_object_suppressed(s, rl)) continue;
            for (int t = 0; t < rl->n_retains; t++) {
                const struct lg_retain *re = &rl->retains[t];
                int k = 0;
                while (k < nv &&
                       (strcmp(v[k].site, re->site) != 0 || strcmp(v[k].kind, rl->kind) != 0))
                    k++;
                if (k == nv) {
                    if (!LG_RESERVE(v, cap, nv, 8)) {
                        free(v);
                        return lg_fail(LG_ENOMEM, "out of memory listing retain sites");
                    }
                    lg_strlcpy(v[nv].site, re->site, sizeof v[nv].site);
                    lg_strlcpy(v[nv].kind, rl->kind, sizeof v[nv].kind);
                    nv++;
                }
                v[k].count++;
                if (!v[k].stack && re->stack) v[k].stack = re->stack;
            }
        }
    }
    if (nv) qsort(v, (size_t)nv, sizeof *v, cmp_site);
    *out = v;
    *n = nv;
    return LG_OK;
}

int rpt_line_intercept(const double *x, const double *y, int n, double slope, double *out)
{
    *out = 0;
    if (n <= 0 || !isfinite(slope)) return LG_OK;
    double *res = malloc(sizeof(double) * (size_t)n);
    if (!res) return lg_fail(LG_ENOMEM, "out of memory fitting a trend line");
    for (int i = 0; i < n; i++) res[i] = y[i] - slope * x[i];
    *out = rpt_median(res, n);
    free(res);
    return LG_OK;
}
