/* soak_trend.c — the soak's trend test in O(window) memory (soak_trend.h): a ring of the last
 * W deltas per statistical channel judged after every session by the run's rules, relative to
 * the delta just before the window, over the whole window and over its last RPT_SOAK_SHORT
 * sessions; a long series of the whole soak scanned for steps that never come back; exact
 * channels streamed at zero tolerance with attribution. docs/soak.md justifies the choices. */
#include "soak_trend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_TREND  10 /* sessions the window needs before its trend is judged */
#define STEP_CHECK 4  /* long-series points between two step scans */

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

int rpt_soak_trend_init(struct rpt_soak_trend *t, int window, const struct rpt_budget *budgets)
{
    LG_ASSERT(window >= RPT_SOAK_MIN_WINDOW && window <= RPT_SOAK_MAX_WINDOW &&
              "window out of range");
    memset(t, 0, sizeof *t);
    t->window = window;
    memcpy(t->budgets, budgets, sizeof t->budgets);
    for (int i = 0; i < 3; i++) t->ex[i].first = -1;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        struct rpt_soak_channel *ch = &t->ch[c];
        ch->trend_at = ch->steps_at = -1;
        ch->slope = ch->slope_lo = ch->trend_slope_at = ch->trend_lo_at = NAN;
        ch->per = 1;
        ch->steps.flat_between = true;
        if (!statistical(c)) continue;
        ch->ring = calloc((size_t)window, sizeof *ch->ring);
        ch->lng = calloc(RPT_SOAK_LONG, sizeof *ch->lng);
        if (!ch->ring || !ch->lng) goto nomem;
    }
    t->scratch = calloc((size_t)window, sizeof *t->scratch);
    if (!t->scratch) goto nomem;
    return LG_OK;
nomem:
    rpt_soak_trend_fini(t);
    return lg_fail(LG_ENOMEM, "out of memory for the soak's trend windows");
}

void rpt_soak_trend_fini(struct rpt_soak_trend *t)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        free(t->ch[c].ring);
        free(t->ch[c].lng);
    }
    free(t->scratch);
    memset(t, 0, sizeof *t);
}

/* The last k deltas of the window, oldest first, into t->scratch, less `base` (the delta just
 * before them); returns k. */
static int linearize(const struct rpt_soak_trend *t, const struct rpt_soak_channel *ch, int k,
                     double *base)
{
    int start = (ch->head - k + t->window) % t->window;
    *base = k < ch->n ? ch->ring[(start - 1 + t->window) % t->window] : ch->before;
    for (int i = 0; i < k; i++) t->scratch[i] = ch->ring[(start + i) % t->window];
    return k;
}

static int relative(struct rpt_soak_trend *t, const struct rpt_soak_channel *ch, int k)
{
    double base;
    linearize(t, ch, k, &base);
    for (int i = 0; i < k; i++) t->scratch[i] -= base;
    return k;
}

static unsigned add_exact(struct rpt_soak_trend *t, const struct rpt_session *s)
{
    unsigned fired = 0;
    static const int chans[3] = {RPT_CH_TAGGED_HOST, RPT_CH_TAGGED_DEVICE, RPT_CH_REFS};
    for (int i = 0; i < 3; i++) {
        struct rpt_soak_exact *e = &t->ex[i];
        int64_t v, sup = rpt_session_suppressed(s, chans[i]);
        if (sup > 0 && e->suppressed < INT64_MAX - sup) e->suppressed += sup;
        if (!rpt_session_value(s, chans[i], &v)) {
            e->missing += e->seen;
            continue;
        }
        e->seen = true;
        if (v <= 0) continue;
        if (!e->bad++) {
            e->first = s->index;
            fired |= 1u << chans[i];
        }
        e->total = v > INT64_MAX - e->total ? INT64_MAX : e->total + v;
        if (v > e->max) e->max = v;
    }
    rpt_series_attribute(&t->attr, s);
    return fired;
}

/* Appends a session to the long series, halving it (pairs averaged) when it is full; returns
 * true when a point was completed. */
static bool add_long(struct rpt_soak_channel *ch, double y)
{
    ch->acc += y;
    if (++ch->n_acc < ch->per) return false;
    if (ch->n_lng == RPT_SOAK_LONG) {
        for (int i = 0; i < RPT_SOAK_LONG / 2; i++)
            ch->lng[i] = 0.5 * (ch->lng[2 * i] + ch->lng[2 * i + 1]);
        ch->n_lng = RPT_SOAK_LONG / 2;
        ch->per *= 2;
        /* the point being built now needs twice the sessions: keep what it holds */
        return false;
    }
    ch->lng[ch->n_lng++] = ch->acc / ch->per;
    ch->acc = 0;
    ch->n_acc = 0;
    return true;
}

/* Tagged host and device bytes suppression rules took so far (rpt_judge_statistical_sup). */
static double suppressed(const struct rpt_soak_trend *t)
{
    return (double)t->ex[0].suppressed + (double)t->ex[1].suppressed;
}

/* Judges the window's last k sessions relative to the delta before them; true on a leak. */
static bool window_leaks(struct rpt_soak_trend *t, int c, int k, struct rpt_channel_verdict *cv)
{
    struct rpt_soak_channel *ch = &t->ch[c];
    int n = relative(t, ch, k);
    rpt_judge_statistical_sup((enum rpt_channel)c, t->scratch, n, &t->budgets[c], suppressed(t),
                              cv);
    return cv->status == RPT_LEAK;
}

static unsigned add_statistical(struct rpt_soak_trend *t, int c, double y, int index)
{
    struct rpt_soak_channel *ch = &t->ch[c];
    const struct rpt_budget *b = &t->budgets[c];
    unsigned fired = 0;
    ch->n_values++;
    if (ch->n == t->window) ch->before = ch->ring[ch->head];
    ch->ring[ch->head] = y;
    ch->head = (ch->head + 1) % t->window;
    if (ch->n < t->window) ch->n++;

    if (add_long(ch, y) && (ch->n_lng % STEP_CHECK == 0 || ch->per > 1) && ch->steps_at < 0) {
        rpt_find_steps(ch->lng, ch->n_lng, b, &ch->steps);
        if (ch->steps.n >= RPT_STEP_RECUR && ch->steps.total > b->floor) {
            ch->steps_at = index;
            fired |= 1u << c;
        }
    }
    if (ch->n < LG_MIN(t->window, MIN_TREND)) return fired;
    struct rpt_channel_verdict cv;
    bool leak = window_leaks(t, c, ch->n, &cv);
    int k = ch->n;
    ch->slope = cv.slope;
    ch->slope_lo = cv.slope_lo;
    if (!leak && ch->n > RPT_SOAK_SHORT) {
        k = RPT_SOAK_SHORT;
        leak = window_leaks(t, c, k, &cv);
    }
    if (leak && ch->trend_at < 0) {
        ch->trend_at = index;
        ch->trend_slope_at = cv.slope;
        ch->trend_lo_at = cv.slope_lo;
        ch->trend_window_at = k;
        lg_strlcpy(ch->trend_why, cv.why, sizeof ch->trend_why);
        fired |= 1u << c;
    }
    return fired;
}

unsigned rpt_soak_trend_add(struct rpt_soak_trend *t, const struct rpt_session *s)
{
    t->n_all++;
    t->last_index = s->index;
    unsigned fired = add_exact(t, s);
    if (s->warmup) return fired;
    t->n_measured++;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        int64_t v;
        if (statistical(c) && rpt_session_value(s, (enum rpt_channel)c, &v))
            fired |= add_statistical(t, c, (double)v, s->index);
    }
    return fired;
}

bool rpt_soak_alarmed(const struct rpt_soak_trend *t, enum rpt_channel c)
{
    int e = exact_slot(c);
    if (e >= 0) return t->ex[e].bad > 0;
    return t->ch[c].trend_at >= 0 || t->ch[c].steps_at >= 0;
}

static void verdict_exact(const struct rpt_soak_trend *t, int c, struct rpt_channel_verdict *v)
{
    int slot = exact_slot(c);
    LG_ASSERT(slot >= 0 && slot < 3 && "not an exact channel");
    const struct rpt_soak_exact *e = &t->ex[slot];
    if (e->missing > 0 || (t->n_all > 0 && !e->seen)) {
        rpt_channel_unavailable(
            v, c, e->seen ? "not measured in a session after its first" : "no session measured it");
        return;
    }
    const char *worst = c == RPT_CH_TAGGED_HOST     ? t->attr.worst_host
                        : c == RPT_CH_TAGGED_DEVICE ? t->attr.worst_dev
                                                    : t->attr.worst_ref;
    rpt_judge_exact_counts(c, e->bad, t->n_all, e->first, e->total, e->max, worst, v);
    rpt_exact_note_suppressed(v, e->suppressed);
}

/* "alarm at session 44 (last 10 sessions: WHY)" and/or the steps' */
static void alarms_text(const struct rpt_soak_channel *ch, char *buf, size_t size)
{
    char a[32];
    buf[0] = '\0';
    if (ch->trend_at >= 0)
        snprintf(buf, size, "alarm at session %d (last %d sessions: %s)", ch->trend_at,
                 ch->trend_window_at, ch->trend_why);
    if (ch->steps_at >= 0) {
        size_t l = strlen(buf);
        snprintf(buf + l, size - l,
                 "%ssteps alarm at session %d (%d steps that never came back, %s in all)",
                 l ? "; " : "", ch->steps_at, ch->steps.n, fb(a, ch->steps.total));
    }
}

/* The Theil–Sen upper bound of the late half of the n sessions in t->scratch. */
static double late_hi(const struct rpt_soak_trend *t, int n)
{
    struct rpt_trend late;
    rpt_theil_sen(t->scratch + n / 2, n - n / 2, 0.95, &late);
    return late.hi;
}

/* Whether the final window (in t->scratch) settled: long enough, no significant growth over
 * it (a ramp below the budget still shows one), and a late half flat within the budget. */
static bool settled(const struct rpt_soak_trend *t, const struct rpt_budget *b,
                    const struct rpt_channel_verdict *w, int n)
{
    if (n < MIN_TREND || n < LG_MIN(t->window, 2 * MIN_TREND)) return false;
    return !(w->slope_lo > 0) && late_hi(t, n) < b->slope;
}

static void verdict_statistical(struct rpt_soak_trend *t, int c, struct rpt_channel_verdict *v)
{
    const struct rpt_soak_channel *ch = &t->ch[c];
    const struct rpt_budget *b = &t->budgets[c];
    char s1[32], s2[32], s3[32], s4[32], al[480];
    if (ch->n_values == 0) {
        rpt_channel_unavailable(v, c,
                                t->n_measured ? "not measured in this build or on this machine"
                                              : "no measured session");
        if (!t->n_measured) v->status = RPT_INCONCLUSIVE;
        return;
    }
    double base;
    int n = linearize(t, ch, ch->n, &base);
    struct rpt_channel_verdict w; /* the final window, by the run verdict's rules */
    rpt_judge_statistical_sup((enum rpt_channel)c, t->scratch, n, b, suppressed(t), &w);
    *v = w;
    v->channel = (enum rpt_channel)c;
    if (rpt_soak_alarmed(t, (enum rpt_channel)c)) {
        alarms_text(ch, al, sizeof al);
        v->figure = ch->steps_at >= 0 ? ch->steps.total : w.slope;
        v->budget = ch->steps_at >= 0 ? b->floor : b->slope;
        int nr = relative(t, ch, ch->n);
        struct rpt_channel_verdict r;
        rpt_judge_statistical_sup((enum rpt_channel)c, t->scratch, nr, b, suppressed(t), &r);
        /* growth that stopped: the final window began after every alarm, and is flat */
        bool flat = nr >= LG_MIN(t->window, 2 * MIN_TREND) && r.status != RPT_LEAK && !r.stayed &&
                    isfinite(r.slope_hi) && r.slope_hi < b->slope &&
                    ch->trend_at < t->last_index - nr + 1;
        if (ch->steps_at < 0 && flat) {
            v->status = RPT_SATURATING;
            snprintf(v->why, sizeof v->why,
                     "%s; the last %d sessions are flat (slope <= %s/session): growth saturated",
                     al, nr, fb(s1, r.slope_hi));
        } else {
            v->status = RPT_LEAK;
            snprintf(v->why, sizeof v->why,
                     "%s; last %d sessions: slope %s/session, CI [%s, %s], budget %s/session", al,
                     nr, fb(s1, r.slope), fb(s2, r.slope_lo), fb(s3, r.slope_hi), fb(s4, b->slope));
        }
        return;
    }
    if (w.status == RPT_INCONCLUSIVE && n >= rpt_min_sessions(b) && settled(t, b, &w, n)) {
        /* above the band after a one-time growth and flat since: what a soak can tell and a
         * short run cannot (docs/soak.md) */
        int third = n / 3;
        v->status = RPT_SATURATING;
        v->figure = rpt_median(t->scratch + n - third, third);
        v->budget = b->band;
        snprintf(v->why, sizeof v->why,
                 "settled %s above baseline (band %s) after a one-time growth: last %d sessions "
                 "show no growth "
                 "(slope CI low %s), their late half is flat (slope <= %s/session); no alarm",
                 fb(s1, v->figure), fb(s2, b->band), n, fb(s3, w.slope_lo), fb(s4, late_hi(t, n)));
        return;
    }
    snprintf(v->why, sizeof v->why, "last %d sessions: %s", n, w.why);
}

void rpt_soak_trend_verdict(const struct rpt_soak_trend *tc, struct rpt_verdict *v)
{
    struct rpt_soak_trend *t = (struct rpt_soak_trend *)tc; /* scratch only */
    v->sessions_measured = t->n_measured;
    v->n_channels = RPT_NCHANNELS;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        struct rpt_channel_verdict *cv = &v->channels[c];
        memset(cv, 0, sizeof *cv);
        cv->channel = (enum rpt_channel)c;
        if (statistical(c))
            verdict_statistical(t, c, cv);
        else if (c == RPT_CH_TAGGED_DEVICE && !t->attr.device)
            rpt_channel_unavailable(cv, c, "no device in this run (--device cpu)");
        else
            verdict_exact(t, c, cv);
    }
    rpt_conclude(v, t->budgets);
}

int rpt_soak_judge_results(struct rpt_results *r, int window, bool again)
{
    struct rpt_soak_trend t;
    int rc = rpt_soak_trend_init(&t, window, r->run.budgets);
    if (rc != LG_OK) return rc;
    t.attr.device = rpt_run_had_device(&r->run);
    for (int i = 0; i < r->n_sessions; i++) rpt_soak_trend_add(&t, &r->sessions[i]);
    rpt_verdict_start_again(r, again);
    rpt_soak_trend_verdict(&t, &r->verdict);
    rpt_soak_trend_fini(&t);
    size_t l = strlen(r->verdict.summary);
    snprintf(r->verdict.summary + l, sizeof r->verdict.summary - l,
             " (%s from the %d session(s) on disk, window %d%s)",
             again ? "soak judged again" : "partial soak: judged", r->n_sessions, window,
             again ? ", not by its verdict line" : "");
    r->has_verdict = true;
    return LG_OK;
}
