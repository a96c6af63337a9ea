/* notes.c — what the program itself attached to a session (leakgate_session_note): its own
 * attribution, beside leakgate's. The Python binding attaches the lines where Python's heap grew
 * (tracemalloc) and who keeps a tracked object alive. In a session line:
 *   "notes": ["python: +1.2 MiB/session in 4096 blocks at train.py:88 in Trainer.fit", ...]
 * absent when there are none (schema 1.3); files without it load as "no notes". */
#include <stdlib.h>
#include <string.h>

#include "rpt_stacks.h"

json_t *rpt_notes_to_json(const struct rpt_session *s)
{
    json_t *a = json_array();
    for (int i = 0; a && i < s->n_notes; i++)
        if (json_array_append_new(a, rpt_json_str(s->notes[i] ? s->notes[i] : "")) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

int rpt_notes_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *s)
{
    json_t *a = json_object_get(o, "notes"), *e;
    if (!a || json_is_null(a)) return LG_OK;
    if (!json_is_array(a))
        return lg_fail(LG_EFORMAT, "%s:%d: session.notes: expected an array", d->path, d->line);
    size_t n = json_array_size(a), i;
    if (n && !(s->notes = calloc(n, sizeof *s->notes)))
        return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    json_array_foreach(a, i, e)
    {
        if (!json_is_string(e))
            return lg_fail(LG_EFORMAT, "%s:%d: session.notes[%zu]: expected a string", d->path,
                           d->line, i);
        if (!(s->notes[i] = strdup(json_string_value(e))))
            return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
        s->n_notes++;
    }
    return LG_OK;
}

void rpt_notes_free(struct rpt_session *s)
{
    for (int i = 0; i < s->n_notes; i++) free(s->notes[i]);
    free(s->notes);
    s->notes = NULL;
    s->n_notes = 0;
}

const struct rpt_session *rpt_notes_latest(const struct rpt_results *r)
{
    for (int i = r->n_sessions - 1; i >= 0; i--)
        if (r->sessions[i].n_notes) return &r->sessions[i];
    return NULL;
}

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
