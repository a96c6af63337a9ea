/* procs_table.c — exec's process tree in summary.md and report.html: the verdict's process line
 * (how many processes were judged, which child leaks and where, which exited or had no agent),
 * then every descendant of CMD at the last session's end with its parent, command, RSS and
 * whether the agent was in it. */
#include <stdio.h>

#include "render_impl.h"

void rpt_procs_table(const struct rpt_results *r, const struct rpt_dialect *d, FILE *f,
                     const char *heading)
{
    static const char *const cols[] = {"pid", "parent", "command", "rss", "agent"};
    const struct rpt_session *last = NULL;
    for (int i = 0; i < r->n_sessions; i++)
        if (r->sessions[i].procs_walked) last = &r->sessions[i];
    if (!last) return;
    const struct rpt_procs_verdict *pv = &r->verdict.procs;
    fputs(heading, f);
    char otherwise[80];
    snprintf(otherwise, sizeof otherwise, "CMD's children at the end of session %d", last->index);
    rpt_verdict_para(d, f, r->has_verdict && pv->counted, pv->status, pv->why, otherwise);
    if (!last->n_procs) {
        fputs(d->table_open ? "<p>No child process was alive at the last session's end.</p>\n"
                            : "No child process was alive at the last session's end.\n\n",
              f);
        return;
    }
    rpt_table_head(d, f, cols, 5);
    for (int i = 0; i < last->n_procs; i++) {
        const struct rpt_proc *q = &last->procs[i];
        char pid[16], ppid[16], rss[32];
        snprintf(pid, sizeof pid, "%d", q->pid);
        snprintf(ppid, sizeof ppid, "%d", q->ppid);
        if (q->rss == RPT_NONE)
            snprintf(rss, sizeof rss, "unreadable");
        else
            rpt_fmt_value(rss, sizeof rss, RPT_CH_RSS, q->rss, false);
        fputs(d->row_open, f);
        rpt_cell(d, f, true, pid);
        rpt_cell(d, f, true, ppid);
        fputs(d->cell_open, f);
        d->code(f, q->cmd);
        fputs(d->cell_close, f);
        rpt_cell(d, f, true, rss);
        rpt_cell(d, f, false, q->agent ? "yes" : "no: RSS only (static, or LD_PRELOAD removed)");
        fputs(d->row_close, f);
    }
    rpt_table_end(d, f);
}
