/* verdict.c — Theil–Sen trends, steps, the minimum sessions, and the per-channel rules of
 * docs/design.md ("Verdicts and their evidence"). */
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STACK_N 512 /* series this long or shorter are handled without heap memory */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Two-sided standard normal quantile for a confidence level (Acklam's rational approximation
 * of the inverse normal CDF, accurate to ~1e-9). */
static double z_for(double conf)
{
    double p = 1.0 - (1.0 - conf) / 2.0;
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    if (p > 0.97575) {
        double q = sqrt(-2 * log(1 - p));
        return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/* Series longer than this select their pairwise slopes' order statistics in O(n) memory and
 * O(n log n) time a bisection step (select_slope) instead of sorting all n(n-1)/2 of them:
 * 1,600 sessions sorted 1.3 M slopes (~0.15 s) each time a channel was judged, and 65,536
 * would need 17 GB. Up to here sorting is the cheaper of the two. */
#define SEN_SORT_MAX 256

/* Pairs i < j with z[j] <= z[i], counted while merge-sorting z (ascending) through tmp. */
static int64_t count_descents(double *z, double *tmp, int n)
{
    if (n < 2) return 0;
    int h = n / 2, i = 0, j = h, k = 0;
    int64_t c = count_descents(z, tmp, h) + count_descents(z + h, tmp, n - h);
    while (i < h && j < n) {
        if (z[j] <= z[i]) { /* and so below every left element from i on */
            c += h - i;
            tmp[k++] = z[j++];
        } else {
            tmp[k++] = z[i++];
        }
    }
    while (i < h) tmp[k++] = z[i++];
    while (j < n) tmp[k++] = z[j++];
    memcpy(z, tmp, (size_t)n * sizeof *z);
    return c;
}

/* The pairwise slope of rank k (0-based, ascending) of y[0..n), to a part in 1e12: bisection on
 * the slope t, counting the pairs at or below it as the descents of z_i = y_i - t·i (slope(i, j)
 * <= t exactly when z_j <= z_i). Every pairwise slope lies between the least and the greatest
 * adjacent difference. z and tmp hold n doubles each. */
static double select_slope(const double *y, int n, int64_t k, double *z, double *tmp)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 1; i < n; i++) {
        lo = fmin(lo, y[i] - y[i - 1]);
        hi = fmax(hi, y[i] - y[i - 1]);
    }
    for (int it = 0; it < 200; it++) {
        if (hi - lo <= 1e-12 * fmax(1.0, fmax(fabs(lo), fabs(hi)))) break;
        double t = lo + (hi - lo) / 2;
        for (int i = 0; i < n; i++) z[i] = y[i] - t * i;
        if (count_descents(z, tmp, n) >= k + 1)
            hi = t;
        else
            lo = t;
    }
    return hi;
}

void rpt_theil_sen(const double *y, int n, double conf, struct rpt_trend *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->lo = -INFINITY;
    out->hi = INFINITY;
    if (n <= 0) return;
    int third = n >= 3 ? n / 3 : 1;
    out->early = rpt_median(y, third);
    out->late = rpt_median(y + n - third, third);
    out->shift = out->late - out->early;
    out->intercept = rpt_median(y, n);
    if (n < 2) return;

    size_t np = (size_t)n * (size_t)(n - 1) / 2;
    /* Sen's interval: C = z * sqrt(Var S), Var S = n(n-1)(2n+5)/18 (no tie correction). */
    double var = (double)n * (n - 1) * (2.0 * n + 5) / 18.0;
    double C = z_for(conf) * sqrt(var);
    double m1 = floor(((double)np - C) / 2.0), m2 = ceil(((double)np + C) / 2.0);
    bool sorted = n <= SEN_SORT_MAX;
    /* sorted: every pairwise slope; else two scratch arrays of n for select_slope */
    double *s = malloc((sorted ? np : 2 * (size_t)n) * sizeof *s), *resid = NULL;
    if (!s) {
        out->failed = true; /* judged inconclusive, never a pass */
        return;
    }
    if (sorted) {
        size_t k = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) s[k++] = (y[j] - y[i]) / (double)(j - i);
        qsort(s, np, sizeof *s, cmp_double);
        out->slope = np % 2 ? s[np / 2] : 0.5 * (s[np / 2 - 1] + s[np / 2]);
        if (m1 >= 0 && m1 < (double)np) out->lo = s[(size_t)m1];
        if (m2 >= 1 && m2 <= (double)np) out->hi = s[(size_t)m2 - 1];
    } else {
        double *z = s, *tmp = s + n;
        int64_t mid = (int64_t)(np / 2);
        out->slope =
            np % 2 ? select_slope(y, n, mid, z, tmp)
                   : 0.5 * (select_slope(y, n, mid - 1, z, tmp) + select_slope(y, n, mid, z, tmp));
        if (m1 >= 0 && m1 < (double)np) out->lo = select_slope(y, n, (int64_t)m1, z, tmp);
        if (m2 >= 1 && m2 <= (double)np) out->hi = select_slope(y, n, (int64_t)m2 - 1, z, tmp);
    }

    resid = malloc((size_t)n * sizeof *resid);
    if (resid) {
        for (int i = 0; i < n; i++) resid[i] = y[i] - out->slope * i;
        out->intercept = rpt_median(resid, n);
    }
    free(resid);
    free(s);
}

/* ---- steps ----------------------------------------------------------------------------------- */

/* What an increment must exceed to be a step: the floor (the growth a leak must show), the
 * slope budget, four times the budget's noise, and four times the noise the series itself
 * shows (1.4826 MAD of its increments, over sqrt 2 since an increment holds two readings'
 * noise): steps stand out of noise the budget did not foresee too, while a staircase, whose
 * increments are mostly zero, keeps the floor. */
static double step_threshold(const double *y, int n, const struct rpt_budget *b)
{
    double thr = fmax(fmax(b->floor, b->slope), 4 * rpt_budget_noise(b));
    if (n < 3) return thr;
    double d[MAX_STACK_N], *w = n <= MAX_STACK_N ? d : malloc((size_t)n * sizeof *w);
    if (!w) return thr;
    for (int i = 1; i < n; i++) w[i - 1] = y[i] - y[i - 1];
    double med = rpt_median(w, n - 1);
    for (int i = 0; i < n - 1; i++) w[i] = fabs(w[i] - med);
    double sigma = 1.4826 * rpt_median(w, n - 1) / sqrt(2.0);
    if (w != d) free(w);
    return fmax(thr, 4 * sigma);
}

/* The noise inside the segments between steps: 1.4826 x the median absolute residual of every
 * reading around its segment's Theil–Sen line (a segment of fewer than 3 readings: around its
 * median). A step must stand out of this to be called held (a late ramp's own rise is its line,
 * not its noise). NAN when out of memory. */
static double within_noise(const double *y, int n, const int *start, int ns)
{
    double stack[MAX_STACK_N], *r = n <= MAX_STACK_N ? stack : malloc((size_t)n * sizeof *r);
    if (!r) return NAN;
    for (int j = 0; j <= ns; j++) {
        int a = start[j], e = j < ns ? start[j + 1] : n;
        struct rpt_trend t = {0};
        if (e - a >= 3)
            rpt_theil_sen(y + a, e - a, 0.95, &t);
        else
            t.intercept = rpt_median(y + a, e - a);
        for (int i = a; i < e; i++) r[i] = fabs(y[i] - (t.intercept + t.slope * (i - a)));
    }
    double sigma = 1.4826 * rpt_median(r, n);
    if (r != stack) free(r);
    return sigma;
}

void rpt_find_steps(const double *y, int n, const struct rpt_budget *b, struct rpt_steps *out)
{
    memset(out, 0, sizeof *out);
    out->flat_between = true;
    if (n < 1) return;
    int stack[MAX_STACK_N + 1],
        *start = n < MAX_STACK_N ? stack : malloc(((size_t)n + 1) * sizeof *start);
    if (!start) return;
    double thr = step_threshold(y, n, b);
    out->threshold = thr;
    /* segment 0 holds the baseline (0) and what comes before the first step; step j starts
     * segment j at the first of a run of increments above the threshold */
    int ns = 0;
    bool prev = false;
    for (int i = 0; i < n; i++) {
        bool up = y[i] - (i ? y[i - 1] : 0.0) > thr;
        if (up && !prev) start[++ns] = i;
        prev = up;
    }
    start[0] = 0;
    double lv_stack[MAX_STACK_N + 1],
        *level = ns < MAX_STACK_N ? lv_stack : malloc(((size_t)ns + 1) * sizeof *level);
    if (!level) goto cleanup;
    for (int j = 0; j <= ns; j++) {
        int a = start[j], e = j < ns ? start[j + 1] : n;
        if (j == 0) {
            /* the baseline is a reading of its own */
            double first[MAX_STACK_N + 1],
                *w = e < MAX_STACK_N ? first : malloc(((size_t)e + 1) * sizeof *w);
            if (!w) goto cleanup;
            w[0] = 0;
            memcpy(w + 1, y, (size_t)e * sizeof *w);
            level[0] = rpt_median(w, e + 1);
            if (w != first) free(w);
        } else {
            level[j] = rpt_median(y + a, e - a);
        }
        if (e - a >= RPT_MIN_TREND) {
            struct rpt_trend t;
            rpt_theil_sen(y + a, e - a, 0.95, &t);
            if (t.lo > b->slope) out->flat_between = false;
        }
    }
    out->within = within_noise(y, n, start, ns);
    /* step j persists when every later level stays above every earlier one by thr / 2 */
    for (int j = 1; j <= ns; j++) {
        double before = -INFINITY, after = INFINITY;
        for (int l = 0; l < j; l++) before = fmax(before, level[l]);
        for (int l = j; l <= ns; l++) after = fmin(after, level[l]);
        if (after - before <= thr / 2) continue;
        if (out->n == 0) {
            out->before = before;
            out->after = after;
            int r = start[j];
            while (r < n && y[r] - (r ? y[r - 1] : 0.0) > thr) r++;
            out->run = r - start[j];
        }
        if (out->n < RPT_MAX_STEPS) {
            out->at[out->n] = start[j];
            out->size[out->n] = level[j] - level[j - 1];
        }
        out->n++;
        out->total += level[j] - level[j - 1];
    }
cleanup:
    if (level != lv_stack) free(level);
    if (start != stack) free(start);
}

/* ---- channels ------------------------------------------------------------------------------- */

static const char *fb(char *buf, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, 32, v > 0 ? "inf" : v < 0 ? "-inf" : "n/a");
        return buf;
    }
    return lg_fmt_bytes(buf, 32, v);
}

/* "+1.00 MiB at #41, +1.00 MiB at #81" (1-based measured sessions) into buf. */
static void steps_text(const struct rpt_steps *st, char *buf, size_t size)
{
    char s1[32];
    buf[0] = '\0';
    for (int i = 0; i < st->n && i < RPT_MAX_STEPS; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, "%s+%s at #%d", i ? ", " : "", fb(s1, st->size[i]),
                 st->at[i] + 1);
    }
    if (st->n > RPT_MAX_STEPS) {
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, ", ... (%d in all)", st->n);
    }
}

/* Rule 1: every session grew by RPT_GROSS_FACTOR bands or more. */
static bool gross(const double *y, int n, const struct rpt_budget *b, double *smallest)
{
    if (n < 2) return false;
    double lim = RPT_GROSS_FACTOR * b->band, least = INFINITY;
    for (int i = 0; i < n; i++) least = fmin(least, y[i] - (i ? y[i - 1] : 0.0));
    *smallest = least;
    return least > 0 && least >= lim;
}

static void set(struct rpt_channel_verdict *v, enum rpt_status s, double figure, double budget)
{
    v->status = s;
    v->figure = figure;
    v->budget = budget;
}

/* Whether the first persistent step is still held at the end: the last reading above the level
 * before it by half the step threshold, and the level after it above that by the threshold and
 * by four times the noise inside the segments (noise that crosses the threshold is no step).
 * On a channel that moves in pages (jemalloc active and resident, RSS, the device) a single
 * jump must also exceed the band: jemalloc's metadata grows by 2 MiB blocks and the kernel
 * collapses huge pages with no allocation at all (1 clean exec run in 50 showed such a
 * je_resident step, docs/detection.md), which is what the calibrated band is for; a run of
 * rising sessions (a leak that began late) needs no band, and jemalloc's allocated bytes —
 * a byte counter of what the program holds — none either. */
static bool steps_held(enum rpt_channel ch, const double *y, int n, const struct rpt_budget *b,
                       const struct rpt_steps *st)
{
    if (st->n == 0 || y[n - 1] - st->before <= st->threshold / 2) return false;
    if (st->after - st->before <= fmax(st->threshold, 4 * st->within)) return false;
    return rpt_channel_granularity(ch) <= 1 || st->run >= RPT_KEPT_LEAK ||
           y[n - 1] - st->before > b->band;
}

/* Growth that shrinks each session and stops: the first held step's run of increments (at
 * least 3) shrinks session after session, and the sessions after it (RPT_KEPT_LEAK or more)
 * are flat within the slope budget — a cache filling up, not a leak (docs/design.md). */
static bool shrank(const double *y, int n, const struct rpt_budget *b, const struct rpt_steps *st)
{
    int a = st->at[0], e = a + st->run;
    if (st->n != 1 || st->run < 3 || n - e < RPT_KEPT_LEAK) return false;
    for (int i = a + 1; i < e; i++)
        if (y[i] - y[i - 1] >= y[i - 1] - (i > 1 ? y[i - 2] : 0.0)) return false;
    struct rpt_trend tail;
    rpt_theil_sen(y + e, n - e, 0.95, &tail);
    return !tail.failed && tail.hi < b->slope;
}

/* Rule 4: a step still held at the last reading. Kept RPT_KEPT_LEAK sessions or more it is a
 * leak (a run of rising sessions: a leak that began late; one jump then flat: a retained
 * block); kept fewer, the channel did not return to baseline and cannot yet tell a one-off
 * from the start of a recurring leak. False when no step is held. */
static bool held_step(enum rpt_channel ch, const double *y, int n, const struct rpt_budget *b,
                      const struct rpt_steps *st, struct rpt_channel_verdict *v)
{
    char s1[32], s2[32], s3[32], steps[200];
    double held = y[n - 1] - st->before;
    if (!steps_held(ch, y, n, b, st)) return false;
    int at = st->at[0], kept = n - at;
    steps_text(st, steps, sizeof steps);
    v->stayed = true;
    if (kept < RPT_KEPT_LEAK) {
        set(v, RPT_INCONCLUSIVE, held, st->threshold);
        snprintf(v->why, sizeof v->why,
                 "did not return to baseline: +%s since measured session #%d, still held at the "
                 "end (the last %d session(s)); a step this late cannot be told from the start of "
                 "a recurring leak: run more sessions (steps: %s)",
                 fb(s1, held), at + 1, kept, steps);
        return true;
    }
    if (shrank(y, n, b, st)) {
        set(v, RPT_SATURATING, held, st->threshold);
        snprintf(v->why, sizeof v->why,
                 "grew in shrinking steps over measured sessions #%d-#%d, then flat for %d "
                 "sessions (slope <= budget %s/session): settled %s above baseline, not returned "
                 "to it (step threshold %s)",
                 at + 1, at + st->run, n - at - st->run, fb(s1, b->slope), fb(s2, held),
                 fb(s3, st->threshold));
        return true;
    }
    set(v, RPT_LEAK, held, st->threshold);
    if (st->run >= RPT_KEPT_LEAK)
        snprintf(v->why, sizeof v->why,
                 "rose in each of measured sessions #%d-#%d, +%s in all, and never came back: a "
                 "leak that began at session #%d (rule 4; steps above %s)",
                 at + 1, at + st->run, fb(s1, held), at + 1, fb(s2, st->threshold));
    else
        snprintf(v->why, sizeof v->why,
                 "did not return to baseline: +%s came in measured session #%d and was still held "
                 "%d session(s) later, at the end: a retained block (rule 4; step threshold %s; "
                 "give one-time growth to the warm-up with --warmup, or a suppression rule)",
                 fb(s1, held), at + 1, kept - 1, fb(s2, st->threshold));
    return true;
}

/* Rule 5: a steady rise, below the budget or not. The longest final stretch of at least
 * RPT_STEADY_MIN sessions that rose by at least the channel's granularity in all but one in
 * eight of them, by increments of one size (three in four within half the median increment of
 * it), with a Theil–Sen interval above zero: a budget absorbs noise, it does not license a
 * series that rises session after session (docs/design.md gives the false-alarm argument).
 * Fills *from (0-based) and *rate; false when there is none. */
static bool steady_rise(enum rpt_channel ch, const double *y, int n, int *from, double *rate,
                        struct rpt_trend *tr)
{
    if (n < RPT_STEADY_MIN) return false;
    double g = rpt_channel_granularity(ch), stack[MAX_STACK_N];
    double *inc = n <= MAX_STACK_N ? stack : malloc((size_t)n * sizeof *inc);
    if (!inc) return false;
    bool found = false;
    int rises = 0, start = -1;
    for (int i = 0; i < n; i++) inc[i] = y[i] - (i ? y[i - 1] : 0.0);
    /* the longest suffix whose share of rises qualifies */
    for (int i = n - 1; i >= 0; i--) {
        rises += inc[i] >= g;
        int len = n - i;
        if (len >= RPT_STEADY_MIN && rises >= len - len / 8) start = i;
    }
    if (start >= 0) {
        int len = n - start, near = 0;
        double m = rpt_median(inc + start, len);
        for (int i = start; i < n; i++) near += fabs(inc[i] - m) <= m / 2;
        rpt_theil_sen(y + start, len, 0.95, tr);
        found = m >= g && near >= len - len / 4 && !tr->failed && tr->lo > 0;
        *from = start;
        *rate = m;
    }
    if (inc != stack) free(inc);
    return found;
}

/* Fewer sessions than rule 5 needs, every one of them rising by increments of one size, on a
 * byte counter (jemalloc's allocated bytes: what the program holds): not a leak yet, but not
 * back at baseline either. Page channels are left to rule 5's eight sessions: an interpreter's
 * own pages (CPython's line tables, pymalloc's arenas) rise a page or two a session for a few
 * sessions in clean programs (test_torch.py's fixed twin, under a profiler). */
static bool rising_throughout(enum rpt_channel ch, const double *y, int n, double *rate)
{
    if (n < 2 || n >= RPT_STEADY_MIN || rpt_channel_granularity(ch) > 1) return false;
    double g = rpt_channel_granularity(ch), inc[RPT_STEADY_MIN];
    for (int i = 0; i < n; i++) {
        inc[i] = y[i] - (i ? y[i - 1] : 0.0);
        if (inc[i] < g) return false;
    }
    double m = rpt_median(inc, n);
    for (int i = 0; i < n; i++)
        if (fabs(inc[i] - m) > m / 2) return false;
    *rate = m;
    return true;
}

/* Rules 2 to 5 and the statuses short of a leak, over n >= 1 sessions (rpt_judge_statistical
 * has set the trend's figures in v). */
static void judge_rules(enum rpt_channel ch, const double *y, int n, const struct rpt_budget *b,
                        double suppressed, const struct rpt_trend *tp,
                        struct rpt_channel_verdict *v)
{
    char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32], s7[32], steps[200];
    struct rpt_trend t = *tp, early, late;
    struct rpt_steps st;
    rpt_find_steps(y, n, b, &st);
    steps_text(&st, steps, sizeof steps);
    bool significant = t.lo > b->slope, moved = t.shift > b->floor, recur = st.n >= RPT_STEP_RECUR;
    bool held = steps_held(ch, y, n, b, &st);
    int h = n / 2;
    rpt_theil_sen(y, h, 0.95, &early);
    rpt_theil_sen(y + h, n - h, 0.95, &late);
    /* growth that shrinks: rising early by increments too small to be steps, flat late */
    bool saturates = !recur && !held && late.n >= 4 && late.hi < b->slope && early.lo > b->slope;
    bool settles = held && shrank(y, n, b, &st); /* grew in shrinking steps, then flat */
    if (significant && moved && !saturates && !settles && !(held && !recur && st.flat_between)) {
        v->status = RPT_LEAK;
        v->stayed = true;
        snprintf(v->why, sizeof v->why,
                 "slope %s/session, 95%% CI [%s, %s] > budget %s/session, and late-vs-early shift "
                 "%s > floor %s (rule 2)%s%s",
                 fb(s1, t.slope), fb(s2, t.lo), fb(s3, t.hi), fb(s4, b->slope), fb(s5, t.shift),
                 fb(s6, b->floor), st.n ? "; it came in steps: " : "", st.n ? steps : "");
        return;
    }
    if (recur && st.total > b->floor) {
        set(v, RPT_LEAK, st.total, b->floor);
        v->stayed = true;
        snprintf(v->why, sizeof v->why,
                 "%d steps that never came back (%s), %s in all > floor %s: a leak that comes in "
                 "steps (rule 3)",
                 st.n, steps, fb(s1, st.total), fb(s2, b->floor));
        return;
    }
    if (held && suppressed > 0) {
        /* suppression rules took tagged bytes that stayed: their pages and the ledger's own
         * entries show here too, and cannot be netted out to the byte, so rules 4 and 5 are
         * not applied; the band still bounds what stays */
        bool above = y[n - 1] > b->band;
        set(v, above ? RPT_INCONCLUSIVE : RPT_PASS, y[n - 1], b->band);
        v->stayed = above;
        snprintf(v->why, sizeof v->why,
                 "slope %s/session (CI [%s, %s]); held +%s since measured session #%d, %s the "
                 "band %s; not judged as a retained block: suppression rules took %s that "
                 "stayed, whose footprint this channel shows",
                 fb(s1, t.slope), fb(s2, t.lo), fb(s3, t.hi), fb(s4, y[n - 1] - st.before),
                 st.at[0] + 1, above ? "above" : "within", fb(s5, b->band), fb(s6, suppressed));
        return;
    }
    if (held && n - st.at[0] >= RPT_KEPT_LEAK) {
        held_step(ch, y, n, b, &st, v);
        return;
    }
    int from;
    double rate;
    struct rpt_trend sr;
    if (suppressed <= 0 && steady_rise(ch, y, n, &from, &rate, &sr)) {
        set(v, RPT_LEAK, rate, b->slope);
        v->stayed = true;
        snprintf(v->why, sizeof v->why,
                 "rose %s/session in %s session since measured session #%d (slope %s, 95%% CI "
                 "[%s, %s] above zero): a steady rise is a leak even within budget %s/session "
                 "(rule 5)",
                 fb(s1, rate), n - from >= n ? "every" : "nearly every", from + 1, fb(s2, sr.slope),
                 fb(s3, sr.lo), fb(s4, sr.hi), fb(s5, b->slope));
        return;
    }
    if (held_step(ch, y, n, b, &st, v)) return;
    if (suppressed <= 0 && rising_throughout(ch, y, n, &rate)) {
        set(v, RPT_INCONCLUSIVE, rate, b->slope);
        v->stayed = true;
        snprintf(v->why, sizeof v->why,
                 "did not return to baseline: rose %s/session in every one of the %d session(s); "
                 "a steady rise needs %d sessions to be told from noise: run more",
                 fb(s1, rate), n, RPT_STEADY_MIN);
        return;
    }
    if (significant && moved && saturates) {
        v->status = RPT_SATURATING;
        v->stayed = true;
        snprintf(
            v->why, sizeof v->why,
            "grew %s/session early, flat late (late slope <= %s/session < budget %s); shift %s: "
            "settled above baseline, not returned to it",
            fb(s1, t.slope), fb(s2, late.hi), fb(s3, b->slope), fb(s4, t.shift));
        return;
    }
    if (t.slope > b->slope && moved) {
        snprintf(v->why, sizeof v->why,
                 "slope %s/session above budget %s but its 95%% CI reaches %s: not significant "
                 "over %d sessions; run more",
                 fb(s1, t.slope), fb(s2, b->slope), fb(s3, t.lo), n);
        return;
    }
    double last = y[n - 1];
    if (t.late > b->band || last > b->band) {
        /* above the band without a significant trend or a held step: growth that settled
         * (significant early, flat late), or a one-time growth that did not return */
        double level = fmax(t.late, last);
        set(v, RPT_INCONCLUSIVE, level, b->band);
        v->stayed = true;
        if (h >= 4 && saturates) {
            v->status = RPT_SATURATING;
            snprintf(v->why, sizeof v->why,
                     "grew %s/session early (CI low %s), flat late (slope <= %s/session): settled "
                     "%s above baseline, band %s; not returned to it",
                     fb(s1, early.slope), fb(s2, early.lo), fb(s3, late.hi), fb(s4, level),
                     fb(s5, b->band));
            return;
        }
        snprintf(v->why, sizeof v->why,
                 "did not return to baseline: %s %s above the band %s with no trend (slope "
                 "%s/session): a one-time growth that did not come back",
                 t.late > b->band ? "late median" : "last reading", fb(s1, level), fb(s2, b->band),
                 fb(s3, t.slope));
        return;
    }
    v->status = RPT_PASS;
    snprintf(v->why, sizeof v->why,
             "slope %s/session (CI [%s, %s]) within budget %s; shift %s; late median %s within "
             "band %s%s%s",
             fb(s1, t.slope), fb(s2, t.lo), fb(s3, t.hi), fb(s4, b->slope), fb(s5, t.shift),
             fb(s6, t.late), fb(s7, b->band), st.n ? "; steps given back: " : "",
             st.n ? steps : "");
}

void rpt_judge_statistical(enum rpt_channel ch, const double *y, int n, const struct rpt_budget *b,
                           struct rpt_channel_verdict *v)
{
    rpt_judge_statistical_sup(ch, y, n, b, 0, v);
}

void rpt_judge_statistical_sup(enum rpt_channel ch, const double *y, int n,
                               const struct rpt_budget *b, double suppressed,
                               struct rpt_channel_verdict *v)
{
    char s1[32], s2[32], s3[32];
    memset(v, 0, sizeof *v);
    v->channel = ch;
    struct rpt_trend t;
    rpt_theil_sen(y, n, 0.95, &t);
    v->slope = n >= 2 ? t.slope : NAN;
    v->slope_lo = t.lo;
    v->slope_hi = t.hi;
    v->shift = n ? t.shift : NAN;
    set(v, RPT_INCONCLUSIVE, t.slope, b->slope);
    if (n == 0) {
        v->figure = NAN;
        snprintf(v->why, sizeof v->why, "no measured session");
        return;
    }
    double least;
    if (gross(y, n, b, &least)) {
        set(v, RPT_LEAK, least, RPT_GROSS_FACTOR * b->band);
        snprintf(
            v->why, sizeof v->why,
            "gross growth: each of the %d sessions grew at least %s, >= %dx the band %s (rule 1)",
            n, fb(s1, least), RPT_GROSS_FACTOR, fb(s2, b->band));
        return;
    }
    if (t.failed) {
        snprintf(v->why, sizeof v->why, "out of memory fitting the trend of %d sessions", n);
        return;
    }
    judge_rules(ch, y, n, b, suppressed, &t, v);
    int need = rpt_min_sessions(b);
    if (v->status != RPT_LEAK && !v->stayed && n < need) {
        /* no leak shown, but too few sessions to show one of twice the budget: never a pass */
        double worst = 0;
        for (int i = 0; i < n; i++) worst = fmax(worst, fabs(y[i]));
        set(v, RPT_INCONCLUSIVE, worst, b->band);
        snprintf(v->why, sizeof v->why,
                 "%d measured session(s), fewer than the %d needed to see a leak of 2x the budget "
                 "%s/session "
                 "(noise %s); largest delta %s: run more sessions",
                 n, need, fb(s1, b->slope), fb(s2, rpt_budget_noise(b)), fb(s3, worst));
    }
}

void rpt_judge_exact_counts(enum rpt_channel ch, int bad, int n, int first, int64_t total,
                            int64_t max, const char *worst, struct rpt_channel_verdict *v)
{
    char s1[32];
    memset(v, 0, sizeof *v);
    v->channel = ch;
    v->budget = 0;
    v->figure = (double)max;
    v->slope = v->slope_lo = v->slope_hi = NAN;
    v->shift = (double)total;
    bool objects = ch == RPT_CH_REFS;
    if (!worst) worst = "";
    if (n == 0) {
        v->status = RPT_INCONCLUSIVE;
        v->figure = NAN;
        snprintf(v->why, sizeof v->why, "no session ran");
        return;
    }
    if (!bad) {
        v->status = RPT_PASS;
        snprintf(v->why, sizeof v->why,
                 "every session freed what it allocated (0 %s left, zero tolerance)",
                 objects ? "objects" : "bytes");
        return;
    }
    v->status = RPT_LEAK;
    if (objects)
        snprintf(
            v->why, sizeof v->why,
            "%d of %d session(s) left %lld shared object(s) referenced, first in session %d%s%s",
            bad, n, (long long)total, first, *worst ? ": " : "", worst);
    else
        snprintf(v->why, sizeof v->why,
                 "%d of %d session(s) left tagged memory alive, up to %s per session, first in "
                 "session %d%s%s",
                 bad, n, lg_fmt_bytes(s1, sizeof s1, (double)max), first,
                 *worst ? "; largest: " : "", worst);
}

void rpt_judge_exact(enum rpt_channel ch, const int64_t *leaked, int n, const char *worst,
                     struct rpt_channel_verdict *out)
{
    int bad = 0, first = -1;
    int64_t total = 0, max = 0;
    for (int i = 0; i < n; i++) {
        if (leaked[i] > 0 && bad++ == 0) first = i;
        if (leaked[i] > 0) total = leaked[i] > INT64_MAX - total ? INT64_MAX : total + leaked[i];
        if (leaked[i] > max) max = leaked[i];
    }
    rpt_judge_exact_counts(ch, bad, n, first, total, max, worst, out);
}

void rpt_exact_note_suppressed(struct rpt_channel_verdict *v, int64_t suppressed)
{
    if (v->status != RPT_PASS || suppressed <= 0) return;
    char b[32];
    if (v->channel == RPT_CH_REFS)
        snprintf(b, sizeof b, "%lld shared object(s)", (long long)suppressed);
    else
        lg_fmt_bytes(b, sizeof b, (double)suppressed);
    snprintf(v->why, sizeof v->why,
             "nothing left beyond what suppression rules took: %s suppressed over the run, "
             "listed with the rules that took them",
             b);
}

void rpt_channel_unavailable(struct rpt_channel_verdict *cv, enum rpt_channel c, const char *why)
{
    memset(cv, 0, sizeof *cv);
    cv->channel = c;
    cv->status = RPT_UNAVAILABLE;
    cv->figure = cv->budget = cv->slope = cv->slope_lo = cv->slope_hi = cv->shift = NAN;
    lg_strlcpy(cv->why, why, sizeof cv->why);
}
