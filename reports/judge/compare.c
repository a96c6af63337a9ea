/* compare.c — two runs side by side, each judged by the run's own rules (verdict.h) with the
 * same budgets (HEAD's, or --budgets): per statistical channel the per-session growth (the
 * Theil–Sen slope with its bound, as `run` judges it), per exact channel the median a session
 * leaves behind, per tag the bytes leaked per measured session. HEAD regressed when a channel
 * leaks in HEAD that does not in BASE, or leaks significantly faster (HEAD's lower bound above
 * BASE's upper one by more than the slope budget); an exact channel went from zero to non-zero
 * or leaks more per session; or a tag leaks in HEAD that did not in BASE. Without measured
 * sessions on either side, with HEAD itself undecided, or with a channel HEAD requires not
 * measured in both runs, the comparison is inconclusive. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "rpt_text.h"
#include "summary.h"
#include "verdict.h"

#define MAX_TAG_LINES 30

/* The median of what each measured session itself left on an exact channel; NaN when none. */
static double exact_median(const struct rpt_results *r, enum rpt_channel c, int *nonzero)
{
    double *v = malloc(sizeof(double) * (size_t)(r->n_sessions ? r->n_sessions : 1));
    int n = 0;
    *nonzero = 0;
    if (!v) return NAN;
    for (int i = 0; i < r->n_sessions; i++) {
        int64_t x;
        bool over;
        if (!rpt_session_judge(r, i, c, &x, &over)) continue;
        v[n++] = (double)x;
        *nonzero += x != 0;
    }
    double m = rpt_median(v, n);
    free(v);
    return m;
}

/* Judges a run's sessions by the run's rules with the given budgets (its own verdict line is
 * not trusted: the budgets may differ). */
static int judge(const struct rpt_results *r, const struct rpt_budget *b, struct rpt_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->required = r->run.required;
    v->sessions_planned = r->run.sessions;
    if (r->has_verdict) {
        v->partial = r->verdict.partial;
        lg_strlcpy(v->stopped, r->verdict.stopped, sizeof v->stopped);
    } else {
        v->partial = true;
        lg_strlcpy(v->stopped, "results cut short: no verdict line", sizeof v->stopped);
    }
    return rpt_judge_sessions(r, b, v);
}

/* Compares channel c, printing its row; *compared: both runs measured it. Returns whether HEAD
 * is worse. */
static bool compare_channel(const struct rpt_results *base, const struct rpt_results *head,
                            const struct rpt_verdict *vb, const struct rpt_verdict *vh,
                            const struct rpt_budget *b, enum rpt_channel c, bool *compared,
                            FILE *out)
{
    char a[48], bb[48], d[48], bud[48];
    bool in_b = rpt_channel_measured(base, c), in_h = rpt_channel_measured(head, c), worse = false;
    *compared = in_b && in_h;
    if (!in_b && !in_h) return false;
    fprintf(out, "  %-14s", rpt_channel_name(c));
    if (!in_b || !in_h) {
        fprintf(out, " %s\n",
                in_b ? "measured in BASE only: not compared"
                     : "measured in HEAD only: not compared");
        return false;
    }
    if (rpt_channel_exact(c)) {
        int nzb, nzh;
        double mb = exact_median(base, c, &nzb), mh = exact_median(head, c, &nzh);
        worse = (nzb == 0 && nzh > 0) || (isfinite(mb) && isfinite(mh) && mh > mb);
        fprintf(out, " %14s %14s %14s %14s  %s", rpt_fmt_figure(a, sizeof a, c, mb, false),
                rpt_fmt_figure(bb, sizeof bb, c, mh, false),
                rpt_fmt_figure(d, sizeof d, c, mh - mb, true), "0 (exact)",
                worse     ? "REGRESSED"
                : mh < mb ? "improved"
                          : "ok");
        fprintf(out, "  (sessions leaving any: %d → %d)\n", nzb, nzh);
        return worse;
    }
    const struct rpt_channel_verdict *cb = &vb->channels[c], *ch = &vh->channels[c];
    bool leak_b = cb->status == RPT_LEAK, leak_h = ch->status == RPT_LEAK;
    double sb = cb->slope, sh = ch->slope;
    /* both leak: HEAD is worse only when it is significantly steeper, by more than the budget */
    bool steeper = leak_b && leak_h && isfinite(ch->slope_lo) && isfinite(cb->slope_hi) &&
                   ch->slope_lo > cb->slope_hi + b[c].slope;
    worse = (leak_h && !leak_b) || steeper;
    snprintf(bud, sizeof bud, "%s/s", rpt_fmt_figure(a, sizeof a, c, b[c].slope, false));
    const char *result = worse               ? "REGRESSED"
                         : leak_b && !leak_h ? "improved"
                         : leak_h            ? "still leaking"
                         : ch->status == RPT_PASS || ch->status == RPT_SATURATING
                             ? "ok"
                             : rpt_status_name(ch->status);
    fprintf(out, " %14s %14s %14s %14s  %s", rpt_fmt_figure(a, sizeof a, c, sb, true),
            rpt_fmt_figure(bb, sizeof bb, c, sh, true),
            rpt_fmt_figure(d, sizeof d, c, sh - sb, true), bud, result);
    if (worse || ch->status != RPT_PASS) fprintf(out, "\n      HEAD: %s", ch->why);
    fputc('\n', out);
    return worse;
}

struct tag_diff {
    const char *tag, *space;
    double base, head; /* bytes per measured session; NaN when the run never leaked it */
};

static int cmp_diff(const void *x, const void *y)
{
    const struct tag_diff *a = x, *b = y;
    double da = (isnan(a->head) ? 0 : a->head) - (isnan(a->base) ? 0 : a->base);
    double db = (isnan(b->head) ? 0 : b->head) - (isnan(b->base) ? 0 : b->base);
    if (da != db) return da < db ? 1 : -1;
    return strcmp(a->tag, b->tag);
}

/* Prints per-tag differences; returns the count of tags new in HEAD, or -1 on ENOMEM. */
static int compare_tags(const struct rpt_results *base, const struct rpt_results *head, FILE *out)
{
    struct rpt_tag_total *tb = NULL, *th = NULL;
    struct tag_diff *v = NULL;
    int nb = 0, nh = 0, nv = 0, fresh = -1;
    if (rpt_tag_totals(base, &tb, &nb) != LG_OK || rpt_tag_totals(head, &th, &nh) != LG_OK)
        goto cleanup;
    v = calloc((size_t)(nb + nh + 1), sizeof *v);
    if (!v) goto cleanup;
    int mb = LG_MAX(rpt_measured_count(base), 1), mh = LG_MAX(rpt_measured_count(head), 1);
    for (int k = 0; k < nb; k++)
        v[nv++] = (struct tag_diff){tb[k].tag, tb[k].space, (double)tb[k].bytes / mb, NAN};
    fresh = 0;
    for (int k = 0; k < nh; k++) {
        int j = 0;
        while (j < nv && (strcmp(v[j].tag, th[k].tag) != 0 || strcmp(v[j].space, th[k].space) != 0))
            j++;
        if (j == nv) v[nv++] = (struct tag_diff){th[k].tag, th[k].space, NAN, 0};
        v[j].head = (double)th[k].bytes / mh;
        if (isnan(v[j].base) && th[k].bytes > 0) fresh++;
    }
    if (nv == 0) {
        fputs("\nLeaked tags: none in either run.\n", out);
        goto cleanup;
    }
    qsort(v, (size_t)nv, sizeof *v, cmp_diff);
    fprintf(out, "\nLeaked tags, bytes per measured session:\n  %-44s %-6s %12s %12s %12s\n", "tag",
            "space", "BASE", "HEAD", "change");
    for (int k = 0; k < nv && k < MAX_TAG_LINES; k++) {
        char a[48], b[48], d[48];
        double bb = isnan(v[k].base) ? 0 : v[k].base, hh = isnan(v[k].head) ? 0 : v[k].head;
        fprintf(out, "  %-44s %-6s %12s %12s %12s%s\n", v[k].tag, v[k].space,
                isnan(v[k].base) ? "—" : lg_fmt_bytes(a, sizeof a, bb),
                isnan(v[k].head) ? "—" : lg_fmt_bytes(b, sizeof b, hh),
                rpt_fmt_sbytes(d, sizeof d, hh - bb),
                isnan(v[k].base)   ? "  NEW"
                : isnan(v[k].head) ? "  gone"
                                   : "");
    }
    if (nv > MAX_TAG_LINES) fprintf(out, "  … and %d more tags\n", nv - MAX_TAG_LINES);
cleanup:
    free(tb);
    free(th);
    free(v);
    return fresh;
}

/* One of exec's own judgments in a run: the census (results 1.6), the process tree (1.8). */
struct judged {
    bool counted;
    enum rpt_status status;
    const char *why;
};

/* A HEAD whose judgment leaks where BASE's did not (or was not made) regressed, however small
 * the leak; printed when either run made it ("none" when one did not). */
static bool compare_judged(const char *title, const char *none, struct judged b, struct judged h,
                           FILE *out)
{
    if (!b.counted && !h.counted) return false;
    bool base_leaks = b.counted && b.status == RPT_LEAK;
    bool head_leaks = h.counted && h.status == RPT_LEAK;
    fprintf(out, "\n%s: BASE %s, HEAD %s%s%s\n", title,
            b.counted ? rpt_status_word(b.status) : none,
            h.counted ? rpt_status_word(h.status) : none, head_leaks ? ": " : "",
            head_leaks ? h.why : "");
    return head_leaks && !base_leaks;
}

int rpt_compare(const struct rpt_results *base, const struct rpt_results *head,
                const struct rpt_budget *budgets, FILE *out)
{
    struct rpt_verdict vb, vh;
    const struct rpt_budget *b = budgets ? budgets : head->run.budgets;
    if (judge(base, b, &vb) != LG_OK || judge(head, b, &vh) != LG_OK) {
        fprintf(out, "compare: %s\n", lg_errmsg());
        return RPT_COMPARE_INCONCLUSIVE;
    }
    int regressed = 0;
    fprintf(out, "BASE: %s %s · %s · %d measured sessions · %s\n", base->run.command,
            base->run.preset, base->run.device, rpt_measured_count(base),
            rpt_status_word(vb.status));
    fprintf(out, "HEAD: %s %s · %s · %d measured sessions · %s\n", head->run.command,
            head->run.preset, head->run.device, rpt_measured_count(head),
            rpt_status_word(vh.status));
    fprintf(out, "Budgets: %s\n\n", b[RPT_CH_JE_ALLOCATED].source);
    fprintf(out,
            "Channels (exact: median bytes a session leaves; others: growth per session, judged as "
            "`run` does):\n"
            "  %-14s %14s %14s %14s %14s  %s\n",
            "channel", "BASE", "HEAD", "change", "budget", "result");
    char uncompared[200] = ""; /* channels HEAD requires that the two runs do not both have */
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        bool compared;
        regressed += compare_channel(base, head, &vb, &vh, b, c, &compared, out);
        if (!compared && (vh.required & RPT_BIT(c))) {
            size_t l = strlen(uncompared);
            snprintf(uncompared + l, sizeof uncompared - l, "%s%s", l ? ", " : "",
                     rpt_channel_name(c));
        }
    }
    int fresh = compare_tags(base, head, out);
    if (fresh < 0) {
        fputs("\n(out of memory comparing leaked tags: tags not compared)\n", out);
        fresh = 0;
    }
    bool census =
        compare_judged("Census (exact, exec)", "not counted",
                       (struct judged){vb.census.counted, vb.census.status, vb.census.why},
                       (struct judged){vh.census.counted, vh.census.status, vh.census.why}, out);
    bool procs =
        compare_judged("Processes (exec)", "not read",
                       (struct judged){vb.procs.counted, vb.procs.status, vb.procs.leaking},
                       (struct judged){vh.procs.counted, vh.procs.status, vh.procs.leaking}, out);
    if (regressed || fresh || census || procs) {
        fprintf(out, "\nHEAD REGRESSED: %d channel%s beyond budget, %d new leaking tag%s%s%s.\n",
                regressed, regressed == 1 ? "" : "s", fresh, fresh == 1 ? "" : "s",
                census ? ", and the exact census leaks" : "",
                procs ? ", and a child process leaks" : "");
        return RPT_COMPARE_REGRESSED;
    }
    const char *undecided = rpt_measured_count(base) == 0   ? "BASE has no measured session"
                            : rpt_measured_count(head) == 0 ? "HEAD has no measured session"
                            : vh.status == RPT_INCONCLUSIVE ? "HEAD's own verdict is inconclusive"
                                                            : NULL;
    if (undecided) {
        fprintf(out, "\nINCONCLUSIVE: no regression found, but %s: %s\n", undecided, vh.summary);
        return RPT_COMPARE_INCONCLUSIVE;
    }
    if (uncompared[0]) {
        fprintf(out,
                "\nINCONCLUSIVE: no regression found, but channels HEAD requires were not "
                "compared (not measured in both runs): %s\n",
                uncompared);
        return RPT_COMPARE_INCONCLUSIVE;
    }
    fputs("\nNo regression beyond the budgets.\n", out);
    return RPT_COMPARE_SAME;
}
