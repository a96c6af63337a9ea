/* census.c — the judgment of exec's exact census (struct rpt_census, agent/lga_census.c): which
 * measured sessions still hold blocks at the end of the run, and whether that is a leak.
 *
 * The rule (docs/design.md, "The census rule"): at the last counted session L, session j "kept"
 * blocks when blocks born in j are alive and j < L (the last session's own blocks may be a
 * buffer the next session frees). The keeps recur when at least 3 measured sessions kept blocks
 * and they are at least half of the sessions from the first that kept any to L - 1; recurring
 * keeps are a LEAK when every one of those sessions kept blocks (a steady leak, however small:
 * 64 B a session in C) or when what they kept comes to je_allocated's slope budget per session
 * (docs/realworld.md, finding 4: Python's caches keep ~1 KiB every other session). Sporadic keeps
 * below the budget are named, and left to je_allocated, which sees their bytes. One session
 * that kept something (a cache, a free list filled after the warm-up) is named, never a leak.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpt_stacks.h"
#include "rpt_text.h"
#include "verdict.h"

#define CENSUS_MIN_KEPT 3 /* sessions that kept blocks before the census says LEAK */

void rpt_census_judge(const struct rpt_session *sessions, int n, int64_t budget,
                      struct rpt_census_verdict *cv)
{
    memset(cv, 0, sizeof *cv);
    const struct rpt_session *last = NULL;
    int first_measured = -1;
    for (int i = 0; i < n; i++) {
        if (sessions[i].warmup) continue;
        if (first_measured < 0) first_measured = sessions[i].index;
        if (sessions[i].census_counted) last = &sessions[i];
    }
    if (last) rpt_census_judge_session(last, first_measured, budget, cv);
}

/* Appends what the kept sessions did, and why it is or is not a leak, to cv->why at k. */
static void say_kept(struct rpt_census_verdict *cv, int k, bool recurring, int64_t budget)
{
    char b[32], per[32], bud[32];
    if (cv->kept <= 1 || k <= 0 || (size_t)k >= sizeof cv->why) return;
    rpt_fmt_value(b, sizeof b, RPT_CH_JE_ALLOCATED, cv->bytes, false);
    k += snprintf(cv->why + k, sizeof cv->why - (size_t)k,
                  "; %d of the %d session(s) since #%d kept blocks (%lld blocks, %s in all)",
                  cv->kept, cv->since, cv->first, (long long)cv->blocks, b);
    if (!recurring || k <= 0 || (size_t)k >= sizeof cv->why) return;
    rpt_fmt_value(per, sizeof per, RPT_CH_JE_ALLOCATED, cv->bytes / cv->since, false);
    rpt_fmt_value(bud, sizeof bud, RPT_CH_JE_ALLOCATED, budget, false);
    if (cv->kept == cv->since)
        snprintf(cv->why + k, sizeof cv->why - (size_t)k, ": every one kept blocks, a steady leak");
    else if (cv->status == RPT_LEAK)
        snprintf(cv->why + k, sizeof cv->why - (size_t)k,
                 ": %s/session, at or above je_allocated's budget of %s/session", per, bud);
    else
        snprintf(cv->why + k, sizeof cv->why - (size_t)k,
                 ": sporadic, %s/session below je_allocated's budget of %s/session, not a leak "
                 "of the census (je_allocated judges those bytes)",
                 per, bud);
}

void rpt_census_judge_session(const struct rpt_session *last, int first_measured, int64_t budget,
                              struct rpt_census_verdict *cv)
{
    memset(cv, 0, sizeof *cv);
    cv->counted = true;
    cv->status = RPT_PASS;
    cv->last = last->index;
    cv->first = -1;
    const struct rpt_census *worst = NULL, *own = NULL;
    for (int i = 0; i < last->n_census; i++) {
        const struct rpt_census *c = &last->census[i];
        if (c->born == last->index && c->blocks > 0 && c->frames && c->frames[0]) own = c;
        if (c->born < first_measured || c->born >= last->index || c->blocks <= 0) continue;
        cv->kept++;
        if (cv->first < 0 || c->born < cv->first) cv->first = c->born;
        cv->bytes += c->bytes;
        cv->blocks += c->blocks;
        if (!worst || c->bytes > worst->bytes) worst = c;
    }
    char b[32], at[300];
    if (!worst) {
        int k = snprintf(cv->why, sizeof cv->why,
                         "no block born in a measured session before #%d is still alive (exact)",
                         last->index);
        if (own && k > 0 && (size_t)k < sizeof cv->why) { /* a big block the last one kept */
            rpt_fmt_value(b, sizeof b, RPT_CH_JE_ALLOCATED, own->bytes, false);
            rpt_first_frame(own->frames, at, sizeof at);
            snprintf(cv->why + k, sizeof cv->why - (size_t)k,
                     "; #%d itself still held %lld block%s, %s, at its end, at %s", own->born,
                     (long long)own->blocks, own->blocks == 1 ? "" : "s", b, at);
        }
        return;
    }
    cv->since = last->index - cv->first;
    /* recurring keeps: a steady leak, or as many bytes a session as je_allocated's budget */
    bool recurring = cv->kept >= CENSUS_MIN_KEPT && 2 * cv->kept >= cv->since;
    if (recurring && (cv->kept == cv->since || (budget > 0 && cv->bytes >= budget * cv->since)))
        cv->status = RPT_LEAK;
    rpt_fmt_value(b, sizeof b, RPT_CH_JE_ALLOCATED, worst->bytes, false);
    rpt_first_frame(worst->frames, at, sizeof at);
    int k = snprintf(cv->why, sizeof cv->why, "born in session %d, still alive: %lld block%s, %s",
                     worst->born, (long long)worst->blocks, worst->blocks == 1 ? "" : "s", b);
    if (at[0] && k > 0 && (size_t)k < sizeof cv->why)
        k += snprintf(cv->why + k, sizeof cv->why - (size_t)k, ", at %s", at);
    say_kept(cv, k, recurring, budget);
}
