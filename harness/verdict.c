/* verdict.c — Theil–Sen trends and the per-channel rules of docs/DESIGN.md. */
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STACK_N 512 /* series this long or shorter are fitted without heap memory */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double hx_median(const double *v, int n)
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

/* Two-sided standard normal quantile for a confidence level (Acklam's rational approximation
 * of the inverse normal CDF, accurate to ~1e-9). */
static double z_for(double conf)
{
    double p = 1.0 - (1.0 - conf) / 2.0;
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                               1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01, -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                               -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
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

void hx_theil_sen(const double *y, int n, double conf, struct hx_trend *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->lo = -INFINITY;
    out->hi = INFINITY;
    if (n <= 0) return;
    int third = n >= 3 ? n / 3 : 1;
    out->early = hx_median(y, third);
    out->late = hx_median(y + n - third, third);
    out->shift = out->late - out->early;
    out->intercept = hx_median(y, n);
    if (n < 2) return;

    size_t np = (size_t)n * (size_t)(n - 1) / 2;
    double *s = malloc(np * sizeof *s), *resid = NULL;
    if (!s) return;
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) s[k++] = (y[j] - y[i]) / (double)(j - i);
    qsort(s, np, sizeof *s, cmp_double);
    out->slope = np % 2 ? s[np / 2] : 0.5 * (s[np / 2 - 1] + s[np / 2]);

    /* Sen's interval: C = z * sqrt(Var S), Var S = n(n-1)(2n+5)/18 (no tie correction). */
    double var = (double)n * (n - 1) * (2.0 * n + 5) / 18.0;
    double C = z_for(conf) * sqrt(var);
    double m1 = floor(((double)np - C) / 2.0), m2 = ceil(((double)np + C) / 2.0);
    if (m1 >= 0 && m1 < (double)np) out->lo = s[(size_t)m1];
    if (m2 >= 1 && m2 <= (double)np) out->hi = s[(size_t)m2 - 1];

    resid = malloc((size_t)n * sizeof *resid);
    if (resid) {
        for (int i = 0; i < n; i++) resid[i] = y[i] - out->slope * i;
        out->intercept = hx_median(resid, n);
    }
    free(resid);
    free(s);
}

static const char *fmt_b(char *buf, size_t size, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, size, v > 0 ? "inf" : v < 0 ? "-inf" : "n/a");
        return buf;
    }
    return lg_fmt_bytes(buf, size, v);
}

void hx_judge_statistical(enum rpt_channel ch, const double *y, int n, const struct rpt_budget *b,
                          struct rpt_channel_verdict *v)
{
    char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32], s7[32];
    memset(v, 0, sizeof *v);
    v->channel = ch;
    v->budget = b->slope;
    struct hx_trend t;
    hx_theil_sen(y, n, 0.95, &t);
    v->slope = t.slope;
    v->slope_lo = t.lo;
    v->slope_hi = t.hi;
    v->shift = t.shift;
    v->figure = t.slope;
    if (n < 3) {
        double worst = 0;
        for (int i = 0; i < n; i++) worst = fmax(worst, fabs(y[i]));
        v->figure = worst;
        v->budget = b->band;
        v->status = worst > b->band ? RPT_INCONCLUSIVE : RPT_PASS;
        snprintf(v->why, sizeof v->why, "%d session(s): too few for a trend; largest delta %s %s band %s",
                 n, fmt_b(s1, sizeof s1, worst), worst > b->band ? ">" : "<=", fmt_b(s2, sizeof s2, b->band));
        return;
    }
    bool significant = t.lo > b->slope, moved = t.shift > b->floor;
    if (significant && moved) {
        /* flat late half: the growth is saturating, not a leak */
        int h = n / 2;
        struct hx_trend late;
        hx_theil_sen(y + h, n - h, 0.95, &late);
        if (n - h >= 4 && late.hi < b->slope) {
            v->status = RPT_SATURATING;
            snprintf(v->why, sizeof v->why,
                     "grew %s/session early, flat late (late slope <= %s/session < budget %s); "
                     "shift %s",
                     fmt_b(s1, sizeof s1, t.slope), fmt_b(s2, sizeof s2, late.hi),
                     fmt_b(s3, sizeof s3, b->slope), fmt_b(s4, sizeof s4, t.shift));
            return;
        }
        v->status = RPT_LEAK;
        snprintf(v->why, sizeof v->why,
                 "slope %s/session, 95%% CI [%s, %s] > budget %s/session, and late-vs-early shift %s "
                 "> floor %s",
                 fmt_b(s1, sizeof s1, t.slope), fmt_b(s2, sizeof s2, t.lo), fmt_b(s3, sizeof s3, t.hi),
                 fmt_b(s4, sizeof s4, b->slope), fmt_b(s5, sizeof s5, t.shift),
                 fmt_b(s6, sizeof s6, b->floor));
        return;
    }
    if (t.slope > b->slope && moved) {
        v->status = RPT_INCONCLUSIVE;
        snprintf(v->why, sizeof v->why,
                 "slope %s/session above budget %s but its 95%% CI reaches %s: not significant "
                 "over %d sessions; run more",
                 fmt_b(s1, sizeof s1, t.slope), fmt_b(s2, sizeof s2, b->slope),
                 fmt_b(s3, sizeof s3, t.lo), n);
        return;
    }
    if (t.late > b->band) {
        /* above the band without a significant overall trend: saturated growth (significant
         * early, flat late), or a one-time jump that never came back */
        int h = n / 2;
        struct hx_trend early, late;
        hx_theil_sen(y, h, 0.95, &early);
        hx_theil_sen(y + h, n - h, 0.95, &late);
        v->figure = t.late;
        v->budget = b->band;
        if (h >= 4 && early.lo > b->slope && late.hi < b->slope) {
            v->status = RPT_SATURATING;
            snprintf(v->why, sizeof v->why,
                     "grew %s/session early (CI low %s), flat late (slope <= %s/session): settled "
                     "%s above baseline, band %s",
                     fmt_b(s1, sizeof s1, early.slope), fmt_b(s2, sizeof s2, early.lo),
                     fmt_b(s3, sizeof s3, late.hi), fmt_b(s4, sizeof s4, t.late),
                     fmt_b(s5, sizeof s5, b->band));
            return;
        }
        v->status = RPT_INCONCLUSIVE;
        snprintf(v->why, sizeof v->why,
                 "late median %s above the band %s with no trend (slope %s/session): a one-time "
                 "growth that did not return",
                 fmt_b(s1, sizeof s1, t.late), fmt_b(s2, sizeof s2, b->band), fmt_b(s3, sizeof s3, t.slope));
        return;
    }
    v->status = RPT_PASS;
    snprintf(v->why, sizeof v->why,
             "slope %s/session (CI [%s, %s]) within budget %s; shift %s; late median %s within band %s",
             fmt_b(s1, sizeof s1, t.slope), fmt_b(s2, sizeof s2, t.lo), fmt_b(s3, sizeof s3, t.hi),
             fmt_b(s4, sizeof s4, b->slope), fmt_b(s5, sizeof s5, t.shift),
             fmt_b(s6, sizeof s6, t.late), fmt_b(s7, sizeof s7, b->band));
}

void hx_judge_exact_counts(enum rpt_channel ch, int bad, int n, int first, int64_t total,
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
    if (!bad) {
        v->status = RPT_PASS;
        snprintf(v->why, sizeof v->why, "every session freed what it allocated (0 %s left, zero tolerance)",
                 objects ? "objects" : "bytes");
        return;
    }
    v->status = RPT_LEAK;
    if (objects)
        snprintf(v->why, sizeof v->why,
                 "%d of %d session(s) left %lld shared object(s) referenced, first in session %d%s%s",
                 bad, n, (long long)total, first, *worst ? ": " : "", worst);
    else
        snprintf(v->why, sizeof v->why,
                 "%d of %d session(s) left tagged memory alive, up to %s per session, first in "
                 "session %d%s%s",
                 bad, n, lg_fmt_bytes(s1, sizeof s1, (double)max), first, *worst ? "; largest: " : "",
                 worst);
}

void hx_judge_exact(enum rpt_channel ch, const int64_t *leaked, int n, const char *worst,
                    struct rpt_channel_verdict *out)
{
    int bad = 0, first = -1;
    int64_t total = 0, max = 0;
    for (int i = 0; i < n; i++) {
        if (leaked[i] > 0 && bad++ == 0) first = i;
        total += leaked[i];
        if (leaked[i] > max) max = leaked[i];
    }
    hx_judge_exact_counts(ch, bad, n, first, total, max, worst, out);
}

void hx_overall(struct rpt_verdict *v)
{
    int leaks = 0, inconclusive = 0, saturating = 0;
    char names[256] = "";
    for (int i = 0; i < v->n_channels; i++) {
        enum rpt_status s = v->channels[i].status;
        if (s == RPT_LEAK) {
            leaks++;
            size_t l = strlen(names);
            snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "",
                     rpt_channel_name(v->channels[i].channel));
        }
        inconclusive += s == RPT_INCONCLUSIVE;
        saturating += s == RPT_SATURATING;
    }
    if (leaks) {
        v->status = RPT_LEAK;
        v->exit_code = 1;
        snprintf(v->summary, sizeof v->summary, "LEAK: %d channel(s) failed (%s) over %d measured session(s)",
                 leaks, names, v->sessions_measured);
    } else if (inconclusive) {
        v->status = RPT_INCONCLUSIVE;
        v->exit_code = 3;
        snprintf(v->summary, sizeof v->summary,
                 "INCONCLUSIVE: %d channel(s) could not decide over %d session(s); run more sessions",
                 inconclusive, v->sessions_measured);
    } else {
        v->status = RPT_PASS;
        v->exit_code = 0;
        snprintf(v->summary, sizeof v->summary, "PASS: memory returned to baseline over %d session(s)%s",
                 v->sessions_measured, saturating ? " (some growth saturated; see channels)" : "");
    }
}
