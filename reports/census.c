/* census.c — the judgment of exec's exact census (struct rpt_census, agent/lga_census.c): which
 * measured sessions still hold blocks at the end of the run, and whether that is a leak.
 *
 * The rule (docs/design.md, "The census rule"): at the last counted session L, session j "kept"
 * blocks when blocks born in j are alive and j < L (the last session's own blocks may be a
 * buffer the next session frees). LEAK when at least 3 measured sessions kept blocks and they
 * are at least half of the sessions from the first that kept any to L - 1. One session that kept
 * something (a cache, a free list filled after the warm-up) is named, never a leak alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpt_impl.h"

#define CENSUS_MIN_KEPT 3 /* sessions that kept blocks before the census says LEAK */

void rpt_census_free(struct rpt_session *s)
{
    for (int i = 0; i < s->n_census; i++) free(s->census[i].frames);
    free(s->census);
    s->census = NULL;
    s->n_census = 0;
}

/* The first frame of a stack ("keep_block (step.c:17)"), or "" when not named. */
static void first_frame(const char *frames, char *buf, size_t size)
{
    buf[0] = '\0';
    if (!frames || !frames[0]) return;
    size_t n = strcspn(frames, "\n");
    if (n >= size) n = size - 1;
    memcpy(buf, frames, n);
    buf[n] = '\0';
}

void rpt_census_judge(const struct rpt_session *sessions, int n, struct rpt_census_verdict *cv)
{
    memset(cv, 0, sizeof *cv);
    const struct rpt_session *last = NULL;
    int first_measured = -1;
    for (int i = 0; i < n; i++) {
        if (sessions[i].warmup) continue;
        if (first_measured < 0) first_measured = sessions[i].index;
        if (sessions[i].census_counted) last = &sessions[i];
    }
    if (last) rpt_census_judge_session(last, first_measured, cv);
}

void rpt_census_judge_session(const struct rpt_session *last, int first_measured,
                              struct rpt_census_verdict *cv)
{
    memset(cv, 0, sizeof *cv);
    cv->counted = true;
    cv->status = RPT_PASS;
    cv->last = last->index;
    cv->first = -1;
    const struct rpt_census *worst = NULL;
    for (int i = 0; i < last->n_census; i++) {
        const struct rpt_census *c = &last->census[i];
        if (c->born < first_measured || c->born >= last->index || c->blocks <= 0) continue;
        cv->kept++;
        if (cv->first < 0 || c->born < cv->first) cv->first = c->born;
        cv->bytes += c->bytes;
        cv->blocks += c->blocks;
        if (!worst || c->bytes > worst->bytes) worst = c;
    }
    if (!worst) {
        snprintf(cv->why, sizeof cv->why,
                 "no block born in a measured session before #%d is still alive (exact)",
                 last->index);
        return;
    }
    cv->since = last->index - cv->first;
    if (cv->kept >= CENSUS_MIN_KEPT && 2 * cv->kept >= cv->since) cv->status = RPT_LEAK;
    char b[32], at[300];
    rpt_fmt_value(b, sizeof b, RPT_CH_JE_ALLOCATED, worst->bytes, false);
    first_frame(worst->frames, at, sizeof at);
    int k = snprintf(cv->why, sizeof cv->why, "born in session %d, still alive: %lld block%s, %s",
                     worst->born, (long long)worst->blocks, worst->blocks == 1 ? "" : "s", b);
    if (at[0] && k > 0 && (size_t)k < sizeof cv->why)
        k += snprintf(cv->why + k, sizeof cv->why - (size_t)k, ", at %s", at);
    if (cv->kept > 1 && k > 0 && (size_t)k < sizeof cv->why) {
        rpt_fmt_value(b, sizeof b, RPT_CH_JE_ALLOCATED, cv->bytes, false);
        snprintf(cv->why + k, sizeof cv->why - (size_t)k,
                 "; %d of the %d session(s) since #%d kept blocks (%lld blocks, %s in all)",
                 cv->kept, cv->since, cv->first, (long long)cv->blocks, b);
    }
}
