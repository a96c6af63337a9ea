/* series.c — a run's verdict: the per-session values each channel is judged on, kept in arrays
 * sized once per run (or grown between sessions, rpt_series_reserve, never by rpt_series_add);
 * which channels a run requires; and the run's conclusion from its channels, where the evidence
 * rules live (a PASS is earned). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soak_trend.h"
#include "summary.h"
#include "verdict.h"

/* exact channels, in the order of rpt_series.leaked */
static const enum rpt_channel exact_ch[3] = {RPT_CH_TAGGED_HOST, RPT_CH_TAGGED_DEVICE, RPT_CH_REFS};

static int exact_slot(int c)
{
    return c == RPT_CH_TAGGED_HOST ? 0 : c == RPT_CH_TAGGED_DEVICE ? 1 : 2;
}

int rpt_series_init(struct rpt_series *s, int cap)
{
    memset(s, 0, sizeof *s);
    s->cap = cap;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        s->y[c] = calloc((size_t)cap + 1, sizeof *s->y[c]);
        s->avail[c] = true;
        if (!s->y[c]) goto nomem;
    }
    for (int k = 0; k < 3; k++)
        if (!(s->leaked[k] = calloc((size_t)cap + 1, sizeof *s->leaked[k]))) goto nomem;
    return LG_OK;
nomem:
    rpt_series_fini(s);
    return lg_fail(LG_ENOMEM, "out of memory for the run's series");
}

int rpt_series_reserve(struct rpt_series *s, int cap)
{
    if (cap <= s->cap) return LG_OK;
    size_t keep = (size_t)s->cap + 1, more = (size_t)(cap - s->cap);
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        double *y = realloc(s->y[c], (keep + more) * sizeof *y);
        if (!y) goto nomem;
        memset(y + keep, 0, more * sizeof *y);
        s->y[c] = y;
    }
    for (int k = 0; k < 3; k++) {
        int64_t *l = realloc(s->leaked[k], (keep + more) * sizeof *l);
        if (!l) goto nomem;
        memset(l + keep, 0, more * sizeof *l);
        s->leaked[k] = l;
    }
    s->cap = cap;
    return LG_OK;
nomem: /* arrays grown so far hold more than s->cap says: harmless, and freed by _fini */
    return lg_fail(LG_ENOMEM, "out of memory for the run's series (%d sessions)", cap);
}

void rpt_series_fini(struct rpt_series *s)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) free(s->y[c]);
    for (int k = 0; k < 3; k++) free(s->leaked[k]);
    memset(s, 0, sizeof *s);
}

void rpt_series_add(struct rpt_series *s, const struct rpt_session *r)
{
    if (s->n_all >= s->cap) return;
    int i = s->n_all++;
    for (int k = 0; k < 3; k++) { /* every session, warm-up included */
        int64_t v;
        bool known = rpt_session_value(r, exact_ch[k], &v);
        s->leaked[k][i] = known ? v : 0;
        /* sessions before the channel's first figure (exec: before CMD's first tag or tracked
         * object) left nothing of it; a figure missing after one is no zero */
        if (known) s->exact_seen[k] = true;
        int64_t sup = rpt_session_suppressed(r, exact_ch[k]);
        if (sup > 0 && s->exact_suppressed[k] < INT64_MAX - sup) s->exact_suppressed[k] += sup;
        if (!known && s->exact_seen[k]) s->avail[exact_ch[k]] = false;
    }
    rpt_series_attribute(s, r);
    if (r->warmup) return;
    int m = s->n_measured++;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        int64_t v;
        if (rpt_channel_exact((enum rpt_channel)c)) continue;
        if (!rpt_session_value(r, (enum rpt_channel)c, &v))
            s->avail[c] = false;
        else
            s->y[c][m] = (double)v;
    }
}

void rpt_series_attribute(struct rpt_series *s, const struct rpt_session *r)
{
    /* attribution: the largest tag class (bookkeeping "meta/" aside), and its largest tag */
    for (int sp = 0; sp < 2; sp++) {
        const char *space = sp ? "device" : "host";
        int64_t *worst = sp ? &s->worst_dev_bytes : &s->worst_host_bytes;
        char *dst = sp ? s->worst_dev : s->worst_host;
        for (int c = 0; c < r->n_classes; c++) {
            const struct lg_class_bytes *cl = &r->classes[c];
            if (!strcmp(cl->cls, "meta") || cl->bytes <= *worst) continue;
            const struct lg_leak_group *top = NULL;
            int64_t bytes = 0, top_bytes = 0; /* what suppression rules left of the class */
            for (int g = 0; g < r->n_groups; g++) {
                const struct lg_leak_group *lg = &r->groups[g];
                size_t l = strlen(cl->cls);
                if (strcmp(lg->space, space) || strncmp(lg->tag, cl->cls, l) || lg->tag[l] != '/')
                    continue;
                int64_t left = lg->bytes - rpt_group_suppressed(r, lg);
                bytes += left;
                if (left > 0 && left > top_bytes) {
                    top = lg;
                    top_bytes = left;
                }
            }
            if (!top || bytes <= *worst) continue;
            *worst = bytes;
            char b1[32], b2[32];
            snprintf(dst, sizeof s->worst_host, "class %s (%s in session %d; largest %s, %s)",
                     cl->cls, lg_fmt_bytes(b1, sizeof b1, (double)bytes), r->index, top->tag,
                     lg_fmt_bytes(b2, sizeof b2, (double)top_bytes));
        }
    }
    for (int i = 0; i < r->n_refs && !s->worst_ref[0]; i++) {
        const struct lg_ref_leak *rl = &r->refs[i];
        if (rpt_object_suppressed(r, rl)) continue;
        snprintf(s->worst_ref, sizeof s->worst_ref, "%s %s retained at %s", rl->kind, rl->name,
                 rl->n_retains ? rl->retains[rl->n_retains - 1].site : "?");
    }
}

void rpt_judge_series(const struct rpt_series *s, const struct rpt_budget *b, struct rpt_verdict *v)
{
    v->sessions_measured = s->n_measured;
    v->n_channels = 0;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        struct rpt_channel_verdict *cv = &v->channels[v->n_channels++];
        bool device =
            c == RPT_CH_TAGGED_DEVICE || c == RPT_CH_DEV_DRIVER || c == RPT_CH_DEV_PROCESS;
        if (device && !s->device) {
            rpt_channel_unavailable(cv, c, "no device in this run (--device cpu)");
        } else if (rpt_channel_exact((enum rpt_channel)c) && s->n_all > 0 &&
                   (!s->avail[c] || !s->exact_seen[exact_slot(c)])) {
            rpt_channel_unavailable(cv, c,
                                    s->avail[c] ? "no session measured it"
                                                : "not measured in a session after its first");
        } else if (rpt_channel_exact((enum rpt_channel)c)) {
            int k = exact_slot(c);
            const char *worst = k == 0 ? s->worst_host : k == 1 ? s->worst_dev : s->worst_ref;
            rpt_judge_exact(c, s->leaked[k], s->n_all, worst, cv);
            rpt_exact_note_suppressed(cv, s->exact_suppressed[k]);
        } else if (s->n_measured > 0 && !s->avail[c]) {
            rpt_channel_unavailable(cv, c, "not measured in this build or on this machine");
        } else {
            rpt_judge_statistical_sup(
                c, s->y[c], s->n_measured, &b[c],
                (double)s->exact_suppressed[0] + (double)s->exact_suppressed[1], cv);
        }
    }
    rpt_conclude(v, b);
}

/* ---- the run's conclusion ------------------------------------------------------------------- */

void rpt_verdict_say(struct rpt_verdict *v, enum rpt_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    v->status = s;
    vsnprintf(v->summary, sizeof v->summary, fmt, ap);
    va_end(ap);
}

int rpt_exit_code(enum rpt_status s)
{
    switch (s) {
    case RPT_PASS:
    case RPT_SATURATING: return 0;
    case RPT_LEAK: return 1;
    case RPT_INCONCLUSIVE:
    case RPT_UNAVAILABLE: return 3;
    case RPT_ERROR: break;
    }
    return 4;
}

static void add(char *list, size_t size, const char *item)
{
    size_t l = strlen(list);
    snprintf(list + l, size - l, "%s%s", l ? ", " : "", item);
}

/* "18 of 40" or "18" (an unbounded plan) into buf. */
static const char *of_planned(char *buf, size_t size, const struct rpt_verdict *v)
{
    if (v->sessions_planned > 0)
        snprintf(buf, size, "%d of %d", v->sessions_measured, v->sessions_planned);
    else
        snprintf(buf, size, "%d", v->sessions_measured);
    return buf;
}

void rpt_conclude(struct rpt_verdict *v, const struct rpt_budget *budgets)
{
    char leaking[200] = "", lacking[400] = "", optional[200] = "", unmeasured[200] = "",
         by_hand[200] = "", settled[200] = "", req[200], item[96], plan[32];
    bool judged[RPT_NCHANNELS] = {false}, no_device = false;
    for (int i = 0; i < v->n_channels; i++)
        no_device |= v->channels[i].channel == RPT_CH_TAGGED_DEVICE &&
                     v->channels[i].status == RPT_UNAVAILABLE;
    for (int i = 0; i < v->n_channels; i++) {
        struct rpt_channel_verdict *cv = &v->channels[i];
        enum rpt_channel c = cv->channel;
        judged[c] = true;
        cv->required = (v->required & RPT_BIT(c)) != 0;
        bool decided = cv->status == RPT_PASS || cv->status == RPT_SATURATING;
        if (cv->status == RPT_LEAK) {
            add(leaking, sizeof leaking, rpt_channel_name(c));
        } else if (cv->required && !decided) {
            snprintf(item, sizeof item, "%s (%s)", rpt_channel_name(c),
                     rpt_status_name(cv->status));
            add(lacking, sizeof lacking, item);
        } else if (!cv->required && cv->stayed) {
            /* a channel left out of --require still says what it saw: memory that stayed */
            snprintf(item, sizeof item, "%s (did not return to baseline)", rpt_channel_name(c));
            add(optional, sizeof optional, item);
        } else if (!cv->required && !decided) {
            bool device =
                c == RPT_CH_TAGGED_DEVICE || c == RPT_CH_DEV_DRIVER || c == RPT_CH_DEV_PROCESS;
            if (!(device && no_device))
                add(optional, sizeof optional, rpt_channel_name(c)); /* n/a on a CPU run */
        }
        if (cv->status == RPT_SATURATING) add(settled, sizeof settled, rpt_channel_name(c));
        if (budgets && cv->required && !rpt_channel_exact(c) && !budgets[c].measured)
            add(strncmp(budgets[c].source, "--budget", 8) ? unmeasured : by_hand,
                strncmp(budgets[c].source, "--budget", 8) ? sizeof unmeasured : sizeof by_hand,
                rpt_channel_name(c));
    }
    if (v->census.counted && v->census.status == RPT_LEAK) add(leaking, sizeof leaking, "census");
    if (v->procs.counted && v->procs.status == RPT_LEAK)
        add(leaking, sizeof leaking, v->procs.leaking);
    for (int c = 0; c < RPT_NCHANNELS; c++)
        if ((v->required & RPT_BIT(c)) && !judged[c]) {
            snprintf(item, sizeof item, "%s (not judged)", rpt_channel_name((enum rpt_channel)c));
            add(lacking, sizeof lacking, item);
        }
    rpt_required_string(v->required, req, sizeof req);
    const char *stopped = v->stopped[0] ? v->stopped : v->partial ? "cut short" : NULL;
    if (leaking[0]) {
        rpt_verdict_say(v, RPT_LEAK, "LEAK: %s over %d measured session(s)", leaking,
                        v->sessions_measured);
    } else if (v->sessions_measured == 0) {
        rpt_verdict_say(
            v, RPT_INCONCLUSIVE, "INCONCLUSIVE: %s%s%sno measured session, so no evidence",
            stopped ? "partial, stopped (" : "", stopped ? stopped : "", stopped ? ") with " : "");
    } else if (stopped) {
        rpt_verdict_say(v, RPT_INCONCLUSIVE,
                        "INCONCLUSIVE: partial, stopped (%s) after %s measured session(s): no leak "
                        "proven, too little to pass",
                        stopped, of_planned(plan, sizeof plan, v));
    } else if (!v->required) {
        rpt_verdict_say(v, RPT_INCONCLUSIVE,
                        "INCONCLUSIVE: no channel required (--require), so no evidence to pass");
    } else if (lacking[0]) {
        rpt_verdict_say(v, RPT_INCONCLUSIVE,
                        "INCONCLUSIVE: required channel(s) without the evidence to pass: %s",
                        lacking);
    } else if (settled[0]) {
        rpt_verdict_say(v, RPT_PASS,
                        "PASS: no leak over %d measured session(s), but not every channel "
                        "returned to baseline: %s grew early and settled above it (saturating)",
                        v->sessions_measured, settled);
    } else {
        rpt_verdict_say(
            v, RPT_PASS,
            "PASS: every required channel returned to baseline over %d measured session(s)",
            v->sessions_measured);
    }
    if (leaking[0] && stopped) {
        size_t l = strlen(v->summary);
        snprintf(v->summary + l, sizeof v->summary - l,
                 " (partial: stopped (%s) after %s measured sessions)", stopped,
                 of_planned(plan, sizeof plan, v));
    }
    v->exit_code = rpt_exit_code(v->status);
    size_t l = strlen(v->summary);
    snprintf(v->summary + l, sizeof v->summary - l, "; required: %s", req);
    if (optional[0]) {
        l = strlen(v->summary);
        snprintf(v->summary + l, sizeof v->summary - l, "; optional, not decided: %s", optional);
    }
    if (unmeasured[0]) {
        l = strlen(v->summary);
        snprintf(v->summary + l, sizeof v->summary - l,
                 "; budgets never measured (see leakgate calibrate): %s", unmeasured);
    }
    if (by_hand[0]) {
        l = strlen(v->summary);
        snprintf(v->summary + l, sizeof v->summary - l,
                 "; budgets set by hand (--budget), not measured: %s", by_hand);
    }
}

/* ---- results without a verdict line ------------------------------------------------------------
 */

int rpt_judge_sessions(const struct rpt_results *r, const struct rpt_budget *b,
                       struct rpt_verdict *v)
{
    struct rpt_series ser;
    int rc = rpt_series_init(&ser, r->n_sessions);
    if (rc != LG_OK) return rc;
    ser.device = rpt_run_had_device(&r->run);
    for (int i = 0; i < r->n_sessions; i++) rpt_series_add(&ser, &r->sessions[i]);
    rpt_census_judge(r->sessions, r->n_sessions, (int64_t)b[RPT_CH_JE_ALLOCATED].slope,
                     &v->census); /* exec's exact census */
    struct rpt_procs procs = {0}; /* exec's process tree: what memory denies is counted there */
    for (int i = 0; i < r->n_sessions; i++) (void)rpt_procs_add(&procs, &r->sessions[i]);
    rpt_procs_judge(&procs, &b[RPT_CH_RSS], &v->procs);
    rpt_procs_fini(&procs);
    rpt_judge_series(&ser, b, v);
    rpt_series_fini(&ser);
    return LG_OK;
}

int rpt_judge_results(struct rpt_results *r, bool again)
{
    struct rpt_verdict *v = &r->verdict;
    if (!strcmp(r->run.command, "soak"))
        return rpt_soak_judge_results(r, RPT_SOAK_DEFAULT_WINDOW, again);
    rpt_verdict_start_again(r, again);
    int rc = rpt_judge_sessions(r, r->run.budgets, v);
    if (rc != LG_OK) return rc;
    size_t l = strlen(v->summary);
    snprintf(v->summary + l, sizeof v->summary - l, " (%s from the %d session(s) on disk%s)",
             again ? "judged again" : "partial run: judged", r->n_sessions,
             again ? ", not by its verdict line" : "");
    r->has_verdict = true;
    return LG_OK;
}

void rpt_verdict_start_again(struct rpt_results *r, bool again)
{
    struct rpt_verdict *v = &r->verdict;
    bool partial = again ? v->partial : true;
    char stopped[sizeof v->stopped];
    lg_strlcpy(stopped, again ? v->stopped : "results cut short: no verdict line", sizeof stopped);
    memset(v, 0, sizeof *v);
    v->required = r->run.required;
    v->sessions_planned = r->run.sessions;
    v->partial = partial;
    lg_strlcpy(v->stopped, stopped, sizeof v->stopped);
}
