/* notes_doc.c — the program's notes in the documents: exec's retention paths ("native: ") as
 * "Who keeps it" in summary.md and report.html, and the latest session's notes in report.html
 * (the notes themselves: reports/results/notes.c). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "render_impl.h"
#include "rpt_stacks.h"

#define KEEP_PREFIX "native: " /* exec's retention paths (harness/exec/exec_keep.c) */

/* Every retention path of the run (exec attaches them to one session's notes), one a line,
 * after a heading; nothing when there is none. */
static void keep_paths(const struct rpt_results *r, FILE *f, bool html)
{
    bool any = false;
    for (int i = 0; i < r->n_sessions; i++)
        for (int k = 0; k < r->sessions[i].n_notes; k++) {
            const char *n = r->sessions[i].notes[k];
            if (!n || strncmp(n, KEEP_PREFIX, strlen(KEEP_PREFIX))) continue;
            if (!any)
                fputs(html ? "<section id=\"keep\">\n<h2>Who keeps it</h2>\n<p>Kept blocks traced "
                             "to their root (a conservative scan: docs/exec.md, \"Who keeps "
                             "it\").</p>\n<ul>\n"
                           : "### Who keeps it\n\n",
                      f);
            any = true;
            fputs(html ? "<li>" : "- ", f);
            if (html)
                rpt_put_xml(f, n + strlen(KEEP_PREFIX));
            else
                rpt_put_md(f, n + strlen(KEEP_PREFIX));
            fputs(html ? "</li>\n" : "\n", f);
        }
    if (any) fputs(html ? "</ul>\n</section>\n" : "\n", f);
}

void rpt_md_keep(const struct rpt_results *r, FILE *f) { keep_paths(r, f, false); }

void rpt_html_notes(const struct rpt_results *r, FILE *f)
{
    keep_paths(r, f, true);
    const struct rpt_session *s = rpt_notes_latest(r);
    if (!s) return;
    fprintf(f,
            "<section id=\"notes\">\n<h2>The program's own attribution</h2>\n<p>What the program "
            "attached to session %d (<code>leakgate_session_note</code>; the Python binding's "
            "tracemalloc lines and holders).</p>\n<pre>",
            s->index);
    for (int i = 0; i < s->n_notes; i++) {
        rpt_put_xml(f, s->notes[i]);
        fputc('\n', f);
    }
    fputs("</pre>\n</section>\n", f);
}
