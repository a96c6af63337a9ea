/* plot_figures.c — the four figures as gnuplot scripts and data files: per-session deltas with
 * budget bands, leaked bytes per tag class (stacked), the timeline within sessions, and the
 * soak trend with its Theil–Sen line. Every axis is in a human byte unit picked from the
 * plotted range; warm-up sessions are shaded and labelled. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_impl.h"

static const char *channel_color(enum rpt_channel c)
{
    static const char *const colors[RPT_NCHANNELS] = {
#define ROW(id, name, label, exact, gran, colour, ...) [RPT_CH_##id] = colour,
        RPT_CHANNELS(ROW)
#undef ROW
    };
    return colors[c];
}

/* The channels drawn in a figure, by their rank in the table's column (delta or trend). */
static int ranked(const int *rank, enum rpt_channel *out)
{
    int n = 0;
    for (int r = 1; r <= RPT_NCHANNELS; r++)
        for (int c = 0; c < RPT_NCHANNELS; c++)
            if (rank[c] == r) out[n++] = (enum rpt_channel)c;
    return n;
}

static const char *status_color(enum rpt_status s)
{
    switch (s) {
    case RPT_PASS: return "#1e8449";
    case RPT_LEAK:
    case RPT_ERROR: return "#c0392b";
    case RPT_SATURATING:
    case RPT_INCONCLUSIVE: return "#b9770e";
    default: return "#555555";
    }
}

#define BAND_COLOR "#4daf4a"

int rpt_delta_channels(const struct rpt_results *r, enum rpt_channel *out)
{
    static const int rank[RPT_NCHANNELS] = {
#define ROW(id, name, label, exact, gran, colour, delta, ...) [RPT_CH_##id] = delta,
        RPT_CHANNELS(ROW)
#undef ROW
    };
    enum rpt_channel order[RPT_NCHANNELS];
    int n_order = ranked(rank, order);
    int n = 0;
    for (int i = 0; i < n_order; i++)
        if (rpt_channel_measured(r, order[i])) out[n++] = order[i];
    return n;
}

int rpt_trend_channels(const struct rpt_results *r, enum rpt_channel *out)
{
    static const int rank[RPT_NCHANNELS] = {
#define ROW(id, name, label, exact, gran, colour, delta, trend, ...) [RPT_CH_##id] = trend,
        RPT_CHANNELS(ROW)
#undef ROW
    };
    enum rpt_channel order[RPT_NCHANNELS];
    int n_order = ranked(rank, order);
    int n = 0;
    /* leaking channels first, then the rest in order, at most four panels */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n_order && n < 4; i++) {
            const struct rpt_channel_verdict *cv = rpt_verdict_for(r, order[i]);
            if (!cv || !isfinite(cv->slope) || !rpt_channel_measured(r, order[i])) continue;
            if ((pass == 0) == (cv->status == RPT_LEAK)) out[n++] = order[i];
        }
    return n;
}

static void x_range(FILE *gp, const struct rpt_results *r)
{
    int lo = r->sessions[0].index, hi = lo;
    for (int i = 0; i < r->n_sessions; i++) {
        lo = LG_MIN(lo, r->sessions[i].index);
        hi = LG_MAX(hi, r->sessions[i].index);
    }
    fprintf(gp, "set xrange [%g:%g]\n", lo - 0.5, hi + 0.5);
    if (hi - lo < 24) fputs("set xtics 1\n", gp);
}

static void panel_title(FILE *gp, const struct rpt_results *r, enum rpt_channel c)
{
    const struct rpt_channel_verdict *cv = rpt_verdict_for(r, c);
    char t[160];
    snprintf(t, sizeof t, "%s%s%s", rpt_channel_label(c), cv ? " — " : "",
             cv ? rpt_status_word(cv->status) : "");
    fputs("set title ", gp);
    rpt_put_gp(gp, t);
    fprintf(gp, " tc rgb '%s' font ',11'\n", cv ? status_color(cv->status) : "#333333");
}

static void layout(FILE *gp, const struct rpt_results *r, int n, const char *what)
{
    int cols = n == 1 ? 1 : 2, rows = (n + cols - 1) / cols;
    fprintf(gp, "set multiplot layout %d,%d title ", rows, cols);
    rpt_gp_run_title(gp, r, what);
    fputs(" font ',12'\n", gp);
}

/* The script's start for a one-panel figure: its title (with the run's), its axes' labels. */
static void titled(FILE *gp, const struct rpt_results *r, const char *title, const char *xlabel,
                   const char *ylabel, const char *unit)
{
    rpt_gp_preamble(gp);
    fputs("set title ", gp);
    rpt_gp_run_title(gp, r, title);
    fprintf(gp, " font ',12'\nset xlabel '%s'\nset ylabel '%s (%s)'\n", xlabel, ylabel, unit);
}

/* The script's start for a figure of n channel panels: curve samples, the band's fill. */
static void panels_begin(FILE *gp, const struct rpt_results *r, int n, int samples, double fill,
                         const char *what)
{
    rpt_gp_preamble(gp);
    fprintf(gp,
            "set samples %d\nset style fill transparent solid %.2f noborder\n"
            "set offsets 0, 0, graph 0.06, graph 0.06\n",
            samples, fill);
    layout(gp, r, n, what);
}

/* ---- (1) per-session deltas --------------------------------------------------------------------
 */

int rpt_fig_deltas(const struct rpt_results *r, const char *tmp, FILE *gp)
{
    enum rpt_channel ch[RPT_NCHANNELS];
    struct rpt_unit u[RPT_NCHANNELS];
    int over[RPT_NCHANNELS] = {0};
    char path[4200];
    FILE *df = NULL;
    int n = rpt_delta_channels(r, ch);
    for (int k = 0; k < n; k++) {
        double m = fabs(r->run.budgets[ch[k]].band);
        if (!isfinite(m)) m = 0;
        for (int i = 0; i < r->n_sessions; i++) {
            int64_t d = rpt_session_delta(&r->sessions[i], ch[k]);
            if (d != RPT_NONE) m = fmax(m, fabs((double)d));
        }
        u[k] = rpt_unit_for(m);
    }
    int rc = rpt_gp_data(&df, tmp, "deltas.dat", path, sizeof path);
    if (rc != LG_OK) return rc;
    fputs("# session, then per channel: delta, delta when beyond budget\n", df);
    for (int i = 0; i < r->n_sessions; i++) {
        fprintf(df, "%d", r->sessions[i].index);
        for (int k = 0; k < n; k++) {
            int64_t d = rpt_session_delta(&r->sessions[i], ch[k]), v;
            bool beyond = false;
            rpt_gp_val(df, d, u[k].div);
            if (rpt_session_judge(r, i, ch[k], &v, &beyond) && beyond && d != RPT_NONE) over[k]++;
            rpt_gp_val(df, beyond ? d : RPT_NONE, u[k].div);
        }
        fputc('\n', df);
    }
    rc = rpt_close_out(df, path);
    if (rc != LG_OK) return rc;
    panels_begin(gp, r, n, 2, 0.22, "Per-session deltas against baseline");
    for (int k = 0; k < n; k++) {
        enum rpt_channel c = ch[k];
        double band = r->run.budgets[c].band;
        char btxt[64], key[96];
        panel_title(gp, r, c);
        fprintf(gp, "set xlabel 'session'\nset ylabel 'Δ vs baseline (%s)'\n", u[k].name);
        x_range(gp, r);
        rpt_gp_warmup(gp, r, 1, 0.04);
        fputs("plot ", gp);
        if (rpt_channel_exact(c) || !isfinite(band) || band <= 0) {
            fprintf(gp, "0 with lines lc rgb '%s' lw 2 dt 2 title 'budget 0 (exact)', \\\n     ",
                    BAND_COLOR);
        } else {
            snprintf(key, sizeof key, "budget ±%s", lg_fmt_bytes(btxt, sizeof btxt, band));
            fprintf(gp, "'+' using 1:(%.9g):(%.9g) with filledcurves fc rgb '%s' title ",
                    -band / u[k].div, band / u[k].div, BAND_COLOR);
            rpt_put_gp(gp, key);
            fputs(", \\\n     ", gp);
        }
        rpt_put_gp(gp, path);
        fprintf(
            gp,
            " using 1:%d with linespoints lc rgb '%s' lw 2 pt 7 ps 0.6 title 'after each session'",
            2 + 2 * k, channel_color(c));
        if (over[k]) {
            fputs(", \\\n     ", gp);
            rpt_put_gp(gp, path);
            fprintf(gp,
                    " using 1:%d with points lc rgb '#c0392b' pt 7 ps 1.1 title 'beyond budget'",
                    3 + 2 * k);
        }
        fputs("\nunset object\nunset label\n", gp);
    }
    fputs("unset multiplot\n", gp);
    return LG_OK;
}

/* ---- (2) leaked bytes per tag class, stacked ----------------------------------------------------
 */

#define MAX_CLASSES 8 /* seven largest classes and "other" */

static int cmp_cls(const void *a, const void *b)
{
    const struct lg_class_bytes *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->cls, y->cls);
}

/* The class slot (0..MAX_CLASSES-1) of cls among the kept ones; the last slot is "other". */
static int cls_slot(const struct lg_class_bytes *kept, int nk, const char *cls)
{
    for (int k = 0; k < nk; k++)
        if (strcmp(kept[k].cls, cls) == 0) return k;
    return MAX_CLASSES - 1;
}

int rpt_fig_leaks(const struct rpt_results *r, const char *tmp, FILE *gp)
{
    static const char *const colors[MAX_CLASSES] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                    "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    struct lg_class_bytes *all = NULL;
    int na = 0, cap = 0, rc = LG_OK;
    char path[4200];
    FILE *df = NULL;
    for (int i = 0; i < r->n_sessions; i++)
        for (int j = 0; j < r->sessions[i].n_classes; j++) {
            const struct lg_class_bytes *cb = &r->sessions[i].classes[j];
            int k = 0;
            while (k < na && strcmp(all[k].cls, cb->cls) != 0) k++;
            if (k == na) {
                if (!LG_RESERVE(all, cap, na, 16)) {
                    free(all);
                    return lg_fail(LG_ENOMEM, "out of memory plotting leaked classes");
                }
                lg_strlcpy(all[na++].cls, cb->cls, sizeof all[0].cls);
            }
            all[k].bytes += cb->bytes;
        }
    if (na) qsort(all, (size_t)na, sizeof *all, cmp_cls);
    while (na > 0 && all[na - 1].bytes == 0) na--;
    int nk = na > MAX_CLASSES ? MAX_CLASSES - 1 : na; /* kept by name */
    int ns = na > MAX_CLASSES ? MAX_CLASSES : na;     /* slots drawn */
    double top = 0;
    for (int i = 0; i < r->n_sessions; i++) {
        double s = 0;
        for (int j = 0; j < r->sessions[i].n_classes; j++)
            s += (double)r->sessions[i].classes[j].bytes;
        top = fmax(top, s);
    }
    struct rpt_unit u = rpt_unit_for(top);
    rc = rpt_gp_data(&df, tmp, "leaks.dat", path, sizeof path);
    if (rc != LG_OK) goto cleanup;
    fputs("# session, then the stacked (cumulative) leaked bytes of each class slot\n", df);
    for (int i = 0; i < r->n_sessions; i++) {
        double slot[MAX_CLASSES] = {0};
        for (int j = 0; j < r->sessions[i].n_classes; j++)
            slot[cls_slot(all, nk, r->sessions[i].classes[j].cls)] +=
                (double)r->sessions[i].classes[j].bytes;
        fprintf(df, "%d", r->sessions[i].index);
        double cum = 0;
        for (int k = 0; k < ns; k++) {
            cum += slot[k];
            fprintf(df, " %.9g", cum / u.div);
        }
        fputc('\n', df);
    }
    rc = rpt_close_out(df, path);
    if (rc != LG_OK) goto cleanup;

    titled(gp, r, "Leaked bytes per tag class per session", "session",
           "leaked, born in the session and still live", u.name);
    x_range(gp, r);
    rpt_gp_warmup(gp, r, 1, 0.96);
    fputs("set key bmargin center horizontal\nset bmargin 5.5\nset style fill solid 0.9 "
          "noborder\nset boxwidth 0.72 absolute\n",
          gp);
    if (ns == 0) {
        fputs("set yrange [0:1]\nset label 100 'no tagged bytes leaked in any session' at graph "
              "0.5, graph 0.55 "
              "center font ',16' tc rgb '#1e8449'\n"
              "plot 0 with lines lc rgb '#1e8449' lw 2 title 'leaked bytes'\n",
              gp);
        goto cleanup;
    }
    fprintf(gp, "set yrange [0:%.9g]\nplot ",
            1.12 * top / u.div);        /* headroom for the warm-up label */
    for (int k = ns - 1; k >= 0; k--) { /* tallest stack first, so lower classes draw over it */
        rpt_put_gp(gp, path);
        fprintf(gp, " using 1:%d with boxes fc rgb '%s' title ", 2 + k, colors[k]);
        char t[48];
        snprintf(t, sizeof t, "%s%s", k < nk ? all[k].cls : "other", k < nk ? "/" : " classes");
        rpt_put_gp(gp, t);
        fputs(k ? ", \\\n     " : "\n", gp);
    }
cleanup:
    free(all);
    return rc;
}

/* ---- (3) the timeline within sessions
 * ------------------------------------------------------------ */

#define TIMELINE_POINTS 4000 /* samples drawn per series, about */

/* Whether sample j of s is drawn when a session may show `budget` points: all of them when
 * they fit; else the first, the last, the phase marks (when they take at most half the
 * budget: they make the sawtooth's edges) and evenly spaced training steps. */
static bool timeline_keeps(const struct rpt_session *s, int j, int budget, int marks)
{
    if (s->n_samples <= budget || j == 0 || j == s->n_samples - 1) return true;
    bool keep_marks = marks <= budget / 2;
    if (keep_marks && s->samples[j].step < 0) return true;
    int room = budget - (keep_marks ? marks : 0) - 2;
    int stride = (s->n_samples + LG_MAX(room, 1) - 1) / LG_MAX(room, 1);
    return j % stride == 0;
}

int rpt_fig_timeline(const struct rpt_results *r, const char *tmp, FILE *gp)
{
    /* the sampled channels (channels.h), in the delta figure's order */
    static const int rank[RPT_NCHANNELS] = {
#define ROW(id, name, label, exact, gran, colour, delta, ...) [RPT_CH_##id] = delta,
        RPT_CHANNELS(ROW)
#undef ROW
    };
    enum rpt_channel chans[RPT_NCHANNELS];
    int nc = 0, n_order = ranked(rank, chans);
    for (int i = 0; i < n_order; i++)
        if (rpt_channel_mask(RPT_CHF_SAMPLED) & RPT_BIT(chans[i])) chans[nc++] = chans[i];
    bool has[RPT_NCHANNELS] = {false};
    double top = 0;
    char path[4200];
    FILE *df = NULL;
    for (int i = 0; i < r->n_sessions; i++)
        for (int j = 0; j < r->sessions[i].n_samples; j++) {
            const struct rpt_sample *p = &r->sessions[i].samples[j];
            for (int k = 0; k < nc; k++)
                if (p->v[chans[k]] != RPT_NONE) {
                    has[k] = true;
                    top = fmax(top, fabs((double)p->v[chans[k]]));
                }
        }
    int budget = LG_MAX(8, TIMELINE_POINTS / LG_MAX(r->n_sessions, 1));
    struct rpt_unit u = rpt_unit_for(top);
    int rc = rpt_gp_data(&df, tmp, "timeline.dat", path, sizeof path);
    if (rc != LG_OK) return rc;
    fputs("# x = session + time within it / its duration; then each sampled channel:", df);
    for (int k = 0; k < nc; k++) fprintf(df, " %s", rpt_channel_name(chans[k]));
    fputc('\n', df);
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        double dur = s->duration_s;
        int marks = 0;
        for (int j = 0; j < s->n_samples; j++) {
            if (isfinite(s->samples[j].t)) dur = fmax(isfinite(dur) ? dur : 0, s->samples[j].t);
            marks += s->samples[j].step < 0;
        }
        for (int j = 0; j < s->n_samples; j++) {
            const struct rpt_sample *p = &s->samples[j];
            if (!timeline_keeps(s, j, budget, marks)) continue;
            double frac = isfinite(p->t) && dur > 0 ? p->t / dur : (double)j / s->n_samples;
            fprintf(df, "%.6f", s->index - 0.45 + 0.9 * fmin(fmax(frac, 0), 1));
            for (int k = 0; k < nc; k++) rpt_gp_val(df, p->v[chans[k]], u.div);
            fputc('\n', df);
        }
    }
    rc = rpt_close_out(df, path);
    if (rc != LG_OK) return rc;

    titled(gp, r, "Memory within sessions, sampled at every training step",
           "session (time within each session)", "bytes", u.name);
    x_range(gp, r);
    fprintf(gp, "set yrange [0:%.9g]\nset key bmargin center horizontal\nset bmargin 5.5\n",
            top > 0 ? 1.1 * top / u.div : 1.0);
    rpt_gp_warmup(gp, r, 1, 0.96);
    if (r->n_sessions <= 40)
        for (int i = 0; i < r->n_sessions; i++)
            fprintf(
                gp,
                "set arrow %d from %g, graph 0 to %g, graph 1 nohead lc rgb '#cfcfcf' dt 3 back\n",
                i + 1, r->sessions[i].index - 0.5, r->sessions[i].index - 0.5);
    fputs("plot ", gp);
    bool first = true;
    for (int k = 0; k < nc; k++) {
        if (!has[k]) continue;
        if (!first) fputs(", \\\n     ", gp);
        first = false;
        rpt_put_gp(gp, path);
        fprintf(gp, " using 1:%d with lines lc rgb '%s' lw 1.6 title ", 2 + k,
                channel_color(chans[k]));
        rpt_put_gp(gp, rpt_channel_label(chans[k]));
    }
    fputc('\n', gp);
    return LG_OK;
}

/* ---- (4) the soak trend -------------------------------------------------------------------------
 */

int rpt_fig_trend(const struct rpt_results *r, const char *tmp, FILE *gp)
{
    enum rpt_channel ch[4];
    struct rpt_unit u[4];
    double icpt[4], xmid[4];
    char path[4200];
    FILE *df = NULL;
    int n = rpt_trend_channels(r, ch), rc = LG_OK;
    double *xs = malloc(sizeof(double) * 2 * (size_t)(r->n_sessions + 1)),
           *ys = xs + r->n_sessions + 1;
    if (!xs) return lg_fail(LG_ENOMEM, "out of memory plotting the trend");
    for (int k = 0; k < n && rc == LG_OK; k++) {
        const struct rpt_channel_verdict *cv = rpt_verdict_for(r, ch[k]);
        double m = fabs(r->run.budgets[ch[k]].band);
        int np = 0;
        if (!isfinite(m)) m = 0;
        for (int i = 0; i < r->n_sessions; i++) {
            int64_t d = rpt_session_delta(&r->sessions[i], ch[k]);
            if (r->sessions[i].warmup || d == RPT_NONE) continue;
            m = fmax(m, fabs((double)d));
            xs[np] = r->sessions[i].index;
            ys[np++] = (double)d;
        }
        rc = rpt_line_intercept(xs, ys, np, cv->slope, &icpt[k]); /* median(y − slope·x) */
        xmid[k] = np ? rpt_median(xs, np) : 0;
        u[k] = rpt_unit_for(m);
    }
    free(xs);
    if (rc != LG_OK) return rc;
    rc = rpt_gp_data(&df, tmp, "trend.dat", path, sizeof path);
    if (rc != LG_OK) return rc;
    fputs("# session, then each trend channel's delta (measured sessions)\n", df);
    for (int i = 0; i < r->n_sessions; i++) {
        fprintf(df, "%d", r->sessions[i].index);
        for (int k = 0; k < n; k++)
            rpt_gp_val(df,
                       r->sessions[i].warmup ? RPT_NONE : rpt_session_delta(&r->sessions[i], ch[k]),
                       u[k].div);
        fputc('\n', df);
    }
    rc = rpt_close_out(df, path);
    if (rc != LG_OK) return rc;
    panels_begin(gp, r, n, 200, 0.18, "Soak trend: per-session delta with its Theil–Sen line");
    for (int k = 0; k < n; k++) {
        const struct rpt_channel_verdict *cv = rpt_verdict_for(r, ch[k]);
        double band = r->run.budgets[ch[k]].band, d = u[k].div;
        char a[48], b[48], c[48], key[200];
        panel_title(gp, r, ch[k]);
        fprintf(gp, "set xlabel 'session'\nset ylabel 'Δ vs baseline (%s)'\nset key bottom right\n",
                u[k].name);
        x_range(gp, r);
        rpt_gp_warmup(gp, r, 1, 0.96);
        fprintf(gp, "fit%d(x) = (%.12g * x + %.12g) / %.12g\n", k, cv->slope, icpt[k], d);
        fputs("plot ", gp);
        if (isfinite(band) && band > 0) {
            snprintf(key, sizeof key, "band ±%s", lg_fmt_bytes(a, sizeof a, band));
            fprintf(gp, "'+' using 1:(%.9g):(%.9g) with filledcurves fc rgb '%s' title ", -band / d,
                    band / d, BAND_COLOR);
            rpt_put_gp(gp, key);
            fputs(", \\\n     ", gp);
        }
        rpt_put_gp(gp, path);
        fprintf(gp,
                " using 1:%d with points lc rgb '%s' pt 7 ps 0.55 title 'Δ per session', \\\n     ",
                2 + k, channel_color(ch[k]));
        snprintf(key, sizeof key, "Theil–Sen %s/session (budget %s/session)",
                 rpt_fmt_sbytes(a, sizeof a, cv->slope), lg_fmt_bytes(b, sizeof b, cv->budget));
        fprintf(gp, "fit%d(x) with lines lc rgb '#222222' lw 2.2 title ", k);
        rpt_put_gp(gp, key);
        if (isfinite(cv->slope_lo) && isfinite(cv->slope_hi)) {
            double y0 = cv->slope * xmid[k] + icpt[k];
            snprintf(key, sizeof key, "bounds [%s, %s]", rpt_fmt_sbytes(a, sizeof a, cv->slope_lo),
                     rpt_fmt_sbytes(c, sizeof c, cv->slope_hi));
            fprintf(gp,
                    ", \\\n     (%.12g * (x - %.12g) + %.12g) / %.12g with lines lc rgb '#555555' "
                    "dt 2 lw 1 title ",
                    cv->slope_lo, xmid[k], y0, d);
            rpt_put_gp(gp, key);
            fprintf(gp,
                    ", \\\n     (%.12g * (x - %.12g) + %.12g) / %.12g with lines lc rgb '#555555' "
                    "dt 2 lw 1 notitle",
                    cv->slope_hi, xmid[k], y0, d);
        }
        fputs("\nunset object\nunset label\n", gp);
    }
    fputs("unset multiplot\n", gp);
    return LG_OK;
}
