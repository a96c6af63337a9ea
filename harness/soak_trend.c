/* soak_trend.c — the soak's trend test, in O(window) memory: per statistical channel a ring of
 * the last W deltas judged by the run verdict's rule (Theil–Sen slope with its confidence
 * bound, and the late-vs-early shift) after every session, plus a one-sided CUSUM on the
 * per-session increments that catches a slow leak starting late; exact channels streamed at
 * zero tolerance with attribution. docs/soak.md justifies the parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soak_impl.h"
#include "verdict.h"

#define MIN_TREND 10 /* sessions a window needs before its trend is judged (or the window) */

static bool statistical(int c) { return !rpt_channel_exact((enum rpt_channel)c); }

static int exact_slot(int c)
{
    return c == RPT_CH_TAGGED_HOST ? 0 : c == RPT_CH_TAGGED_DEVICE ? 1 : c == RPT_CH_REFS ? 2 : -1;
}

static const char *fb(char *buf, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, 32, v > 0 ? "inf" : v < 0 ? "-inf" : "n/a");
        return buf;
    }
    return lg_fmt_bytes(buf, 32, v);
}

void hx_soak_cusum_params(const struct rpt_budget *b, double *k, double *h, double *clip)
{
    *k = b->slope;       /* drift the budget tolerates adds nothing on average */
    *h = b->floor;       /* the absolute growth the run verdict also demands of a leak */
    *clip = b->floor / 2; /* one session's growth counts for at most half of h */
}

int hx_soak_trend_init(struct hx_soak_trend *t, int window, const struct rpt_budget *budgets)
{
    LG_ASSERT(window >= HX_SOAK_MIN_WINDOW && window <= HX_SOAK_MAX_WINDOW && "window out of range");
    memset(t, 0, sizeof *t);
    t->window = window;
    memcpy(t->budgets, budgets, sizeof t->budgets);
    for (int i = 0; i < 3; i++) t->ex[i].first = -1;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        struct hx_soak_channel *ch = &t->ch[c];
        ch->cusum_at = ch->trend_at = -1;
        ch->slope = ch->slope_lo = ch->trend_slope_at = ch->trend_lo_at = NAN;
        if (!statistical(c)) continue;
        hx_soak_cusum_params(&budgets[c], &ch->k, &ch->h, &ch->clip);
        ch->ring = calloc((size_t)window, sizeof *ch->ring);
        if (!ch->ring) goto nomem;
    }
    t->scratch = calloc((size_t)window, sizeof *t->scratch);
    if (!t->scratch) goto nomem;
    return LG_OK;
nomem:
    hx_soak_trend_fini(t);
    return lg_fail(LG_ENOMEM, "out of memory for the soak's trend windows");
}

void hx_soak_trend_fini(struct hx_soak_trend *t)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) free(t->ch[c].ring);
    free(t->scratch);
    memset(t, 0, sizeof *t);
}

/* The window, oldest first, into t->scratch; returns its length. */
static int linearize(const struct hx_soak_trend *t, const struct hx_soak_channel *ch)
{
    int start = (ch->head - ch->n + t->window) % t->window;
    for (int i = 0; i < ch->n; i++) t->scratch[i] = ch->ring[(start + i) % t->window];
    return ch->n;
}

static unsigned add_exact(struct hx_soak_trend *t, const struct rpt_session *s)
{
    unsigned fired = 0;
    int64_t v[3] = {s->leaked_host_bytes, s->leaked_device_bytes, s->n_refs};
    static const int chans[3] = {RPT_CH_TAGGED_HOST, RPT_CH_TAGGED_DEVICE, RPT_CH_REFS};
    for (int i = 0; i < 3; i++) {
        struct hx_soak_exact *e = &t->ex[i];
        if (v[i] <= 0) continue;
        if (!e->bad++) {
            e->first = s->index;
            fired |= 1u << chans[i];
        }
        e->total += v[i];
        if (v[i] > e->max) e->max = v[i];
    }
    hx_series_attribute(&t->attr, s);
    return fired;
}

unsigned hx_soak_trend_add(struct hx_soak_trend *t, const struct rpt_session *s)
{
    t->n_all++;
    unsigned fired = add_exact(t, s);
    if (s->warmup) return fired;
    t->n_measured++;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        struct hx_soak_channel *ch = &t->ch[c];
        if (!statistical(c) || s->delta[c] == RPT_NONE) continue;
        double y = (double)s->delta[c];
        double d = ch->n_values ? y - ch->prev : y; /* the session's increment */
        ch->prev = y;
        ch->n_values++;
        ch->ring[ch->head] = y;
        ch->head = (ch->head + 1) % t->window;
        if (ch->n < t->window) ch->n++;

        ch->S = fmax(0.0, ch->S + fmin(d, ch->clip) - ch->k);
        ch->S_peak = fmax(ch->S_peak, ch->S);
        if (ch->S > ch->h && ch->cusum_at < 0) {
            ch->cusum_at = s->index;
            ch->cusum_S_at = ch->S;
            fired |= 1u << c;
        }
        if (ch->n < LG_MIN(t->window, MIN_TREND)) continue;
        struct rpt_channel_verdict cv;
        int n = linearize(t, ch);
        hx_judge_statistical((enum rpt_channel)c, t->scratch, n, &t->budgets[c], &cv);
        ch->slope = cv.slope;
        ch->slope_lo = cv.slope_lo;
        if (cv.status == RPT_LEAK && ch->trend_at < 0) {
            ch->trend_at = s->index;
            ch->trend_slope_at = cv.slope;
            ch->trend_lo_at = cv.slope_lo;
            fired |= 1u << c;
        }
    }
    return fired;
}

bool hx_soak_alarmed(const struct hx_soak_trend *t, enum rpt_channel c)
{
    int e = exact_slot(c);
    if (e >= 0) return t->ex[e].bad > 0;
    return t->ch[c].cusum_at >= 0 || t->ch[c].trend_at >= 0;
}

static void verdict_exact(const struct hx_soak_trend *t, int c, struct rpt_channel_verdict *v)
{
    int slot = exact_slot(c);
    LG_ASSERT(slot >= 0 && slot < 3 && "not an exact channel");
    const struct hx_soak_exact *e = &t->ex[slot];
    const char *worst = c == RPT_CH_TAGGED_HOST ? t->attr.worst_host
                        : c == RPT_CH_TAGGED_DEVICE ? t->attr.worst_dev : t->attr.worst_ref;
    hx_judge_exact_counts(c, e->bad, t->n_all, e->first, e->total, e->max, worst, v);
}

/* "CUSUM alarm at session 44 (S 80.00 KiB > h 64.00 KiB)" and/or the trend alarm, into buf. */
static void alarms_text(const struct hx_soak_channel *ch, char *buf, size_t size)
{
    char a[32], b[32], c[32];
    buf[0] = '\0';
    if (ch->cusum_at >= 0)
        snprintf(buf, size, "CUSUM alarm at session %d (S %s > h %s, k %s/session)", ch->cusum_at,
                 fb(a, ch->cusum_S_at), fb(b, ch->h), fb(c, ch->k));
    if (ch->trend_at >= 0) {
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, "%strend alarm at session %d (slope %s/session, CI low %s)", l ? "; " : "",
                 ch->trend_at, fb(a, ch->trend_slope_at), fb(b, ch->trend_lo_at));
    }
}

/* The Theil–Sen upper bound of the late half of the window in t->scratch (n sessions). */
static double late_hi(const struct hx_soak_trend *t, int n)
{
    struct hx_trend late;
    hx_theil_sen(t->scratch + n / 2, n - n / 2, 0.95, &late);
    return late.hi;
}

/* Whether a final window (in t->scratch) settled after a one-time growth: long enough, no
 * significant growth over the window (a ramp below the budget still shows one), and a late
 * half flat within the budget. */
static bool settled(const struct hx_soak_trend *t, const struct rpt_budget *b, const struct rpt_channel_verdict *w,
                    int n)
{
    if (n < MIN_TREND || n < LG_MIN(t->window, 2 * MIN_TREND)) return false;
    return !(w->slope_lo > 0) && late_hi(t, n) < b->slope;
}

static void verdict_statistical(const struct hx_soak_trend *t, int c, struct rpt_channel_verdict *v)
{
    const struct hx_soak_channel *ch = &t->ch[c];
    const struct rpt_budget *b = &t->budgets[c];
    char s1[32], s2[32], s3[32], s4[32], s5[32], al[200];
    if (ch->n_values == 0) {
        v->status = RPT_UNAVAILABLE;
        v->figure = v->slope = v->slope_lo = v->slope_hi = v->shift = NAN;
        snprintf(v->why, sizeof v->why, "%s",
                 t->n_measured ? "not measured in this build or on this machine" : "no measured session");
        return;
    }
    int n = linearize(t, ch);
    struct rpt_channel_verdict w; /* the final window, by the run verdict's rule */
    hx_judge_statistical((enum rpt_channel)c, t->scratch, n, b, &w);
    *v = w;
    v->channel = (enum rpt_channel)c;
    if (hx_soak_alarmed(t, (enum rpt_channel)c)) {
        alarms_text(ch, al, sizeof al);
        v->figure = w.slope;
        v->budget = b->slope;
        if (n == t->window && w.status != RPT_LEAK && isfinite(w.slope_hi) && w.slope_hi < b->slope) {
            v->status = RPT_SATURATING;
            snprintf(v->why, sizeof v->why, "%s; the last %d sessions are flat (slope <= %s/session): growth saturated",
                     al, n, fb(s1, w.slope_hi));
        } else {
            v->status = RPT_LEAK;
            snprintf(v->why, sizeof v->why, "%s; last %d sessions: slope %s/session, CI [%s, %s], budget %s/session",
                     al, n, fb(s1, w.slope), fb(s2, w.slope_lo), fb(s3, w.slope_hi), fb(s4, b->slope));
        }
        return;
    }
    if (w.status == RPT_PASS && n >= 3) {
        snprintf(v->why, sizeof v->why,
                 "last %d sessions: slope %s/session (CI [%s, %s]) within budget %s; CUSUM peak %s <= h %s", n,
                 fb(s1, w.slope), fb(s2, w.slope_lo), fb(s3, w.slope_hi), fb(s4, b->slope), fb(s5, ch->S_peak),
                 fb(al, ch->h));
        return;
    }
    if (w.status == RPT_INCONCLUSIVE && settled(t, b, &w, n)) {
        /* above the band after a one-time growth and flat since: what a soak can tell and a
         * short run cannot (docs/soak.md) */
        int third = n / 3;
        v->status = RPT_SATURATING;
        v->figure = hx_median(t->scratch + n - third, third);
        v->budget = b->band;
        snprintf(v->why, sizeof v->why,
                 "settled %s above baseline (band %s) after a one-time growth: last %d sessions show no growth "
                 "(slope CI low %s), their late half is flat (slope <= %s/session); no alarm",
                 fb(s1, v->figure), fb(s2, b->band), n, fb(s3, w.slope_lo), fb(s4, late_hi(t, n)));
        return;
    }
    /* inconclusive, or saturating, in the final window without an alarm */
    snprintf(v->why, sizeof v->why, "last %d sessions: %s", n, w.why);
}

void hx_soak_trend_verdict(const struct hx_soak_trend *t, struct rpt_verdict *v)
{
    v->sessions_measured = t->n_measured;
    v->n_channels = RPT_NCHANNELS;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        struct rpt_channel_verdict *cv = &v->channels[c];
        memset(cv, 0, sizeof *cv);
        cv->channel = (enum rpt_channel)c;
        if (statistical(c))
            verdict_statistical(t, c, cv);
        else if (c == RPT_CH_TAGGED_DEVICE && !t->attr.device)
            hx_verdict_unavailable(cv, c, "no device in this run (--device cpu)");
        else
            verdict_exact(t, c, cv);
    }
    hx_overall(v);
}

int hx_soak_judge_results(struct rpt_results *r, int window)
{
    struct hx_soak_trend t;
    int rc = hx_soak_trend_init(&t, window, r->run.budgets);
    if (rc != LG_OK) return rc;
    t.attr.device = hx_run_had_device(&r->run);
    for (int i = 0; i < r->n_sessions; i++) hx_soak_trend_add(&t, &r->sessions[i]);
    hx_soak_trend_verdict(&t, &r->verdict);
    hx_soak_trend_fini(&t);
    r->verdict.partial = true;
    size_t l = strlen(r->verdict.summary);
    snprintf(r->verdict.summary + l, sizeof r->verdict.summary - l,
             " (partial soak: judged from the %d session(s) on disk, window %d)", r->n_sessions, window);
    r->has_verdict = true;
    return LG_OK;
}
