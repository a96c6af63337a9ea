/* results_check.c — a results file's verdict line held against the sessions the file holds.
 * `report` and `merge` print and pass on verdicts they did not reach themselves, so before they
 * believe one they judge the sessions on disk again by the run's own rules and budgets: a
 * verdict that claims more than its sessions show is not believed, and never passes.
 *
 * rpt_results_believe is what the commands call: a file whose line is refused, or that has
 * none, is judged from its sessions instead, and the report says so.
 *
 * What is checked, in order:
 *   1. the count: the verdict's measured sessions are the file's measured sessions;
 *   2. the evidence: a channel the verdict judged pass (or saturating) was measured on disk;
 *   3. the judgement: a channel the verdict judged pass is not worse when judged again, and a
 *      passing run's own verdict (before the gate folded in) judges pass again. A soak judges
 *      its statistical channels over a sliding window whose width the file does not keep, so
 *      there only the exact channels are judged again.
 * A verdict worse than its sessions (a leak the sessions do not show) is left alone: the gate
 * (peak budgets, a baseline) and `exec` (channels its program never used) may fail a run that
 * the channels alone would pass, and failing is never the unsafe direction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate_record.h"
#include "rpt_text.h"
#include "summary.h"
#include "verdict.h"

static bool passing(enum rpt_status s) { return s == RPT_PASS || s == RPT_SATURATING; }

static int contradicts(const char *path, const char *what)
{
    return lg_fail(LG_EFORMAT,
                   "%s: its verdict line claims more than its sessions show (an edited file, or "
                   "one judged by other rules than this version's): %s",
                   path, what);
}

/* The verdict the file's sessions give when judged again, on the line's own terms. */
static int judge_again(const struct rpt_results *r, struct rpt_verdict *v)
{
    memset(v, 0, sizeof *v);
    /* a verdict line from before 1.1 names no mask: the run line's (its device's default) */
    v->required = r->verdict.required ? r->verdict.required : r->run.required;
    v->sessions_planned = r->verdict.sessions_planned;
    v->partial = r->verdict.partial;
    lg_strlcpy(v->stopped, r->verdict.stopped, sizeof v->stopped);
    return rpt_judge_sessions(r, r->run.budgets, v);
}

int rpt_results_check(const struct rpt_results *r, const char *path)
{
    if (!r->has_verdict) return LG_OK;
    const struct rpt_verdict *v = &r->verdict;
    char what[600];
    int measured = rpt_measured_count(r);
    if (v->sessions_measured != measured) {
        snprintf(what, sizeof what, "it counts %d measured session(s), the file holds %d",
                 v->sessions_measured, measured);
        return contradicts(path, what);
    }
    for (int k = 0; k < v->n_channels; k++) {
        const struct rpt_channel_verdict *cv = &v->channels[k];
        if (passing(cv->status) && !rpt_channel_measured(r, cv->channel)) {
            snprintf(what, sizeof what, "it judges %s %s, but no session measured it",
                     rpt_channel_name(cv->channel), rpt_status_name(cv->status));
            return contradicts(path, what);
        }
    }
    struct rpt_verdict again;
    int rc = judge_again(r, &again);
    if (rc != LG_OK) return rc;
    bool soak = strcmp(r->run.command, "soak") == 0;
    for (int k = 0; k < v->n_channels; k++) {
        const struct rpt_channel_verdict *cv = &v->channels[k], *ca = NULL;
        if (!passing(cv->status) || (soak && !rpt_channel_exact(cv->channel))) continue;
        for (int j = 0; j < again.n_channels; j++)
            if (again.channels[j].channel == cv->channel) ca = &again.channels[j];
        if (ca && !passing(ca->status)) {
            snprintf(what, sizeof what, "it judges %s %s, its sessions judge it %s: %s",
                     rpt_channel_name(cv->channel), rpt_status_name(cv->status),
                     rpt_status_name(ca->status), ca->why);
            return contradicts(path, what);
        }
    }
    enum rpt_status own = r->gate ? r->gate->own_status : v->status;
    if (passing(v->status) && !passing(own)) own = v->status; /* the line claims a pass */
    if (!soak && passing(own) && !passing(again.status)) {
        snprintf(what, sizeof what, "it says %s, its sessions judge %s: %s", rpt_status_word(own),
                 rpt_status_word(again.status), again.summary);
        return contradicts(path, what);
    }
    return LG_OK;
}

int rpt_results_believe(struct rpt_results *r, const char *path, const char *cmd)
{
    if (r->has_verdict && rpt_results_check(r, path) == LG_OK) return LG_OK;
    if (lg_errcode() == LG_ENOMEM) return LG_ENOMEM;
    bool again = r->has_verdict;
    if (again)
        fprintf(stderr, "leakgate %s: note: %s; judging the sessions instead\n", cmd, lg_errmsg());
    else
        fprintf(stderr,
                "leakgate %s: note: %s has no verdict line (the run was cut short): judging the "
                "sessions on disk\n",
                cmd, path);
    free(r->gate); /* what the gate folded into a refused line is not believed either */
    r->gate = NULL;
    return rpt_judge_results(r, again);
}
