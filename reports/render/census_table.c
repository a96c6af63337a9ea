/* census_table.c — exec's census in summary.md and report.html: every block of the run's last
 * counted session still alive, by the measured session it was born in, with the stack that
 * names it (the judgment: reports/judge/census.c). */
#include <stdio.h>

#include "render_impl.h"
#include "rpt_stacks.h"

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
        rpt_first_frame(c->frames, at, sizeof at);
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
