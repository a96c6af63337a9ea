/* notes.c — what the program itself attached to a session (leakgate_session_note): its own
 * attribution, beside leakgate's. The Python binding attaches the lines where Python's heap grew
 * (tracemalloc) and who keeps a tracked object alive. In a session line:
 *   "notes": ["python: +1.2 MiB/session in 4096 blocks at train.py:88 in Trainer.fit", ...]
 * absent when there are none (schema 1.3); files without it load as "no notes". */
#include <stdlib.h>
#include <string.h>

#include "results_impl.h"
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
