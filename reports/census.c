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
            first_frame(own->frames, at, sizeof at);
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
    first_frame(worst->frames, at, sizeof at);
    int k = snprintf(cv->why, sizeof cv->why, "born in session %d, still alive: %lld block%s, %s",
                     worst->born, (long long)worst->blocks, worst->blocks == 1 ? "" : "s", b);
    if (at[0] && k > 0 && (size_t)k < sizeof cv->why)
        k += snprintf(cv->why + k, sizeof cv->why - (size_t)k, ", at %s", at);
    say_kept(cv, k, recurring, budget);
}

/* The census table: every block of the run's last counted session still alive, by the measured
 * session it was born in, with the stack that names it. Nothing when no session was counted. */
void rpt_census_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                      const char *heading)
{
    static const char *const cols[] = {"born in session", "blocks", "bytes", "at", "stack"};
    const struct rpt_census_verdict *cv = &r->verdict.census;
    const struct rpt_session *last = NULL;
    int first_measured = -1;
    for (int i = 0; i < r->n_sessions; i++) {
        if (r->sessions[i].warmup) continue;
        if (first_measured < 0) first_measured = r->sessions[i].index;
        if (r->sessions[i].census_counted) last = &r->sessions[i];
    }
    if (!last) return;
    fputs(heading, f);
    char otherwise[64];
    snprintf(otherwise, sizeof otherwise, "at the end of session %d", last->index);
    rpt_verdict_para(d, f, r->has_verdict && cv->counted, cv->status, cv->why, otherwise);
    int rows = 0;
    for (int i = 0; i < last->n_census; i++) {
        const struct rpt_census *c = &last->census[i];
        if (c->born < first_measured || c->blocks <= 0) continue;
        if (!rows++) rpt_table_head(d, f, cols, d->stack ? 5 : 4);
        char born[48], blocks[24], bytes[32], at[300];
        snprintf(born, sizeof born, "%d%s", c->born, c->born == last->index ? " (the last)" : "");
        snprintf(blocks, sizeof blocks, "%lld", (long long)c->blocks);
        rpt_fmt_value(bytes, sizeof bytes, RPT_CH_JE_ALLOCATED, c->bytes, false);
        first_frame(c->frames, at, sizeof at);
        fputs(d->row_open, f);
        rpt_cell(d, f, true, born);
        rpt_cell(d, f, true, blocks);
        rpt_cell(d, f, true, bytes);
        fputs(d->cell_open, f);
        if (at[0])
            d->code(f, at);
        else
            fputs("—", f);
        fputs(d->cell_close, f);
        if (d->stack) {
            fputs(d->cell_open, f);
            if (c->frames && c->frames[0])
                d->stack(f, "stack", c->frames);
            else
                fputs("—", f);
            fputs(d->cell_close, f);
        }
        fputs(d->row_close, f);
    }
    if (rows)
        rpt_table_end(d, f);
    else
        fputs(d->table_open ? "<p>No block born in a measured session is still alive.</p>\n"
                            : "No block born in a measured session is still alive.\n\n",
              f);
}
