/* history_json.c — a history record as one JSON object (docs/results-schema.md, "The history
 * file"; docs/history.schema.json) and back, strictly: a missing member, a wrong type, a string
 * too long for its field is LG_EFORMAT naming file, line and member. Members this version does
 * not know are ignored (a "leakgate.history/1.<n>" writer may add some). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "history_impl.h"

/* ---- writing ------------------------------------------------------------------------------ */

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }
static json_t *jint(int64_t v) { return v == RPT_NONE ? json_null() : json_integer(v); }

static json_t *channels_of(const struct rpt_history_record *h, int what)
{
    json_t *o = json_object();
    for (int c = 0; o && c < RPT_NCHANNELS; c++) {
        const char *name = rpt_channel_name((enum rpt_channel)c);
        json_t *v = NULL;
        if (what == 0) {
            v = json_array();
            for (int i = 0; v && i < h->n_sessions; i++)
                if (json_array_append_new(v, jint(h->series[c][i])) != 0) {
                    json_decref(v);
                    v = NULL;
                }
        } else {
            v = what == 1 ? jnum(h->growth[c]) : jint(h->level[c]);
        }
        if (json_object_set_new(o, name, v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static json_t *tags_of(const struct rpt_hist_tag *t, int n, bool sessions)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++) {
        json_t *e = json_pack("{s:o,s:s,s:I}", "tag", rpt_json_str(t[i].tag), "space", t[i].space,
                              "bytes", (json_int_t)t[i].bytes);
        if (e && sessions) json_object_set_new(e, "sessions", json_integer(t[i].sessions));
        if (json_array_append_new(a, e) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *peaks_of(const struct rpt_history_record *h)
{
    json_t *a = json_array();
    for (int i = 0; a && i < h->n_classes; i++)
        if (json_array_append_new(
                a, json_pack("{s:o,s:s,s:I}", "class", rpt_json_str(h->classes[i].cls), "space",
                             h->classes[i].space, "bytes", (json_int_t)h->classes[i].bytes)) != 0) {
            json_decref(a);
            return NULL;
        }
    return json_pack("{s:o,s:o,s:o,s:o}", "total", jint(h->peak_host), "device_total",
                     jint(h->peak_device), "classes", a, "tags",
                     tags_of(h->peak_tags, h->n_peak_tags, false));
}

json_t *rpt_history_to_json(const struct rpt_history_record *h)
{
    return json_pack(
        "{s:s,s:o,s:o,s:s,s:o,s:s,s:s,"
        "s:{s:o,s:i,s:o,s:o},"
        "s:{s:o,s:o,s:i,s:o,s:o},"
        "s:{s:s,s:i,s:o},"
        "s:s,s:o,s:o,s:o,s:o,s:o}",
        "schema", RPT_HISTORY_SCHEMA, "commit", rpt_json_str(h->commit), "branch",
        rpt_json_str(h->branch), "date", h->date, "workload", rpt_json_str(h->workload), "command",
        h->command, "version", h->version,
        /* machine */
        "machine", "hostname", rpt_json_str(h->hostname), "cpus", h->cpus, "mem_bytes",
        jint(h->mem_bytes), "device", rpt_json_str(h->device),
        /* run */
        "run", "preset", rpt_json_str(h->preset), "modes", rpt_json_str(h->modes), "steps",
        h->steps, "cmd", rpt_json_str(h->cmd), "required", rpt_json_channels(h->required),
        /* verdict */
        "verdict", "status", rpt_status_name(h->status), "exit_code", h->exit_code, "summary",
        rpt_json_str(h->summary),
        /* figures */
        "sessions", h->kinds, "series", channels_of(h, 0), "growth", channels_of(h, 1), "level",
        channels_of(h, 2), "peaks", peaks_of(h), "tags", tags_of(h->tags, h->n_tags, true));
}

/* ---- reading ------------------------------------------------------------------------------ */

static int fail(const struct rpt_dec *d, const char *where, const char *what)
{
    return lg_fail(LG_EFORMAT, "%s:%d: %s: %s", d->path, d->line, where, what);
}

static int copy(const struct rpt_dec *d, const char *where, const char *v, char *dst, size_t size)
{
    if (!lg_strlcpy(dst, v, size)) return LG_OK;
    char what[64];
    snprintf(what, sizeof what, "string longer than %zu bytes", size - 1);
    return fail(d, where, what);
}

/* An integer or null (RPT_NONE). */
static int int_or_null(const struct rpt_dec *d, const char *where, json_t *v, int64_t *out)
{
    if (json_is_null(v)) {
        *out = RPT_NONE;
        return LG_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) == RPT_NONE)
        return fail(d, where, "expected an integer or null");
    *out = json_integer_value(v);
    return LG_OK;
}

/* A byte count or null: int_or_null, never below zero (a peak, a tag's bytes). */
static int size_or_null(const struct rpt_dec *d, const char *where, json_t *v, int64_t *out)
{
    int rc = int_or_null(d, where, v, out);
    if (rc == LG_OK && *out != RPT_NONE && *out < 0)
        return fail(d, where, "a byte count below zero");
    return rc;
}

/* The per-channel object at key: every channel named, each through one(). */
static int each_channel(const struct rpt_dec *d, json_t *o, const char *key,
                        struct rpt_history_record *h,
                        int (*one)(const struct rpt_dec *, const char *, json_t *,
                                   struct rpt_history_record *, int))
{
    json_t *obj = json_object_get(o, key);
    if (!json_is_object(obj)) return fail(d, key, "expected an object of channels");
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        char where[64];
        const char *name = rpt_channel_name((enum rpt_channel)c);
        snprintf(where, sizeof where, "%s.%s", key, name);
        json_t *v = json_object_get(obj, name);
        if (!v) return fail(d, where, "missing");
        int rc = one(d, where, v, h, c);
        if (rc != LG_OK) return rc;
    }
    return LG_OK;
}

static int one_series(const struct rpt_dec *d, const char *where, json_t *v,
                      struct rpt_history_record *h, int c)
{
    if (!json_is_array(v) || (int)json_array_size(v) != h->n_sessions)
        return fail(d, where, "expected an array of one figure per session");
    if (!(h->series[c] = calloc((size_t)h->n_sessions + 1, sizeof *h->series[c])))
        return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    for (int i = 0; i < h->n_sessions; i++) {
        int rc = int_or_null(d, where, json_array_get(v, (size_t)i), &h->series[c][i]);
        if (rc != LG_OK) return rc;
    }
    return LG_OK;
}

static int one_growth(const struct rpt_dec *d, const char *where, json_t *v,
                      struct rpt_history_record *h, int c)
{
    if (!json_is_null(v) && !json_is_number(v)) return fail(d, where, "expected a number or null");
    h->growth[c] = json_is_null(v) ? NAN : json_number_value(v);
    return LG_OK;
}

static int one_level(const struct rpt_dec *d, const char *where, json_t *v,
                     struct rpt_history_record *h, int c)
{
    return int_or_null(d, where, v, &h->level[c]);
}

static int tags_from(const struct rpt_dec *d, const char *where, json_t *a,
                     struct rpt_hist_tag **out, int *n)
{
    json_t *e;
    size_t k;
    if (!json_is_array(a)) return fail(d, where, "expected an array");
    if (!(*out = calloc(json_array_size(a) + 1, sizeof **out)))
        return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    json_array_foreach(a, k, e)
    {
        const char *tag, *space;
        json_int_t bytes, sessions = 0;
        json_error_t err;
        char w[64];
        snprintf(w, sizeof w, "%s[%zu]", where, k);
        if (json_unpack_ex(e, &err, 0, "{s:s,s:s,s:I,s?I}", "tag", &tag, "space", &space, "bytes",
                           &bytes, "sessions", &sessions))
            return fail(d, w, err.text);
        int rc = copy(d, w, tag, (*out)[k].tag, sizeof(*out)[k].tag);
        if (rc == LG_OK) rc = copy(d, w, space, (*out)[k].space, sizeof(*out)[k].space);
        if (rc != LG_OK) return rc;
        if (bytes < 0) return fail(d, w, "a byte count below zero");
        (*out)[k].bytes = bytes;
        (*out)[k].sessions = (int)LG_MAX(0, LG_MIN(sessions, INT32_MAX));
        *n = (int)k + 1;
    }
    return LG_OK;
}

static int peaks_from(const struct rpt_dec *d, json_t *o, struct rpt_history_record *h)
{
    json_t *total, *dev, *classes, *tags, *e;
    json_error_t err;
    size_t k;
    if (json_unpack_ex(o, &err, 0, "{s:{s:o,s:o,s:o,s:o}}", "peaks", "total", &total,
                       "device_total", &dev, "classes", &classes, "tags", &tags))
        return fail(d, "peaks", err.text);
    int rc = size_or_null(d, "peaks.total", total, &h->peak_host);
    if (rc == LG_OK) rc = size_or_null(d, "peaks.device_total", dev, &h->peak_device);
    if (rc == LG_OK) rc = tags_from(d, "peaks.tags", tags, &h->peak_tags, &h->n_peak_tags);
    if (rc != LG_OK) return rc;
    if (!json_is_array(classes)) return fail(d, "peaks.classes", "expected an array");
    if (!(h->classes = calloc(json_array_size(classes) + 1, sizeof *h->classes)))
        return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    json_array_foreach(classes, k, e)
    {
        const char *cls, *space;
        json_int_t bytes;
        if (json_unpack_ex(e, &err, 0, "{s:s,s:s,s:I}", "class", &cls, "space", &space, "bytes",
                           &bytes))
            return fail(d, "peaks.classes", err.text);
        rc = copy(d, "peaks.classes", cls, h->classes[k].cls, sizeof h->classes[k].cls);
        if (rc == LG_OK)
            rc = copy(d, "peaks.classes", space, h->classes[k].space, sizeof h->classes[k].space);
        if (rc != LG_OK) return rc;
        if (bytes < 0) return fail(d, "peaks.classes", "a byte count below zero");
        h->classes[k].bytes = bytes;
        h->n_classes = (int)k + 1;
    }
    return LG_OK;
}

static int required_from(const struct rpt_dec *d, json_t *a, unsigned *mask)
{
    json_t *e;
    size_t k;
    *mask = 0;
    if (!json_is_array(a)) return fail(d, "run.required", "expected an array of channel names");
    json_array_foreach(a, k, e)
    {
        int c = json_is_string(e) ? rpt_channel_from_name(json_string_value(e)) : -1;
        if (c < 0) return fail(d, "run.required", "not a channel name");
        *mask |= RPT_BIT(c);
    }
    return LG_OK;
}

/* The identity members: who, where, what ran, the verdict. */
static int identity_from(const struct rpt_dec *d, json_t *o, struct rpt_history_record *h)
{
    const char *commit, *branch, *date, *workload, *command, *version, *host, *device, *preset,
        *modes, *cmd, *status, *summary, *kinds;
    json_t *mem, *req;
    json_error_t err;
    if (json_unpack_ex(o, &err, 0,
                       "{s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s,s:i,s:o,s:s},s:{s:s,s:s,s:i,s:s,s:o},"
                       "s:{s:s,s:i,s:s},s:s}",
                       "commit", &commit, "branch", &branch, "date", &date, "workload", &workload,
                       "command", &command, "version", &version, "machine", "hostname", &host,
                       "cpus", &h->cpus, "mem_bytes", &mem, "device", &device, "run", "preset",
                       &preset, "modes", &modes, "steps", &h->steps, "cmd", &cmd, "required", &req,
                       "verdict", "status", &status, "exit_code", &h->exit_code, "summary",
                       &summary, "sessions", &kinds))
        return fail(d, "record", err.text);
    int st = rpt_status_from_name(status);
    int rc = st < 0 ? fail(d, "verdict.status", "unknown status") : LG_OK;
    h->status = (enum rpt_status)(st < 0 ? 0 : st);
    const struct {
        const char *where, *v;
        char *dst;
        size_t size;
    } s[] = {{"commit", commit, h->commit, sizeof h->commit},
             {"branch", branch, h->branch, sizeof h->branch},
             {"date", date, h->date, sizeof h->date},
             {"workload", workload, h->workload, sizeof h->workload},
             {"command", command, h->command, sizeof h->command},
             {"version", version, h->version, sizeof h->version},
             {"machine.hostname", host, h->hostname, sizeof h->hostname},
             {"machine.device", device, h->device, sizeof h->device},
             {"run.preset", preset, h->preset, sizeof h->preset},
             {"run.modes", modes, h->modes, sizeof h->modes},
             {"run.cmd", cmd, h->cmd, sizeof h->cmd},
             {"verdict.summary", summary, h->summary, sizeof h->summary}};
    for (size_t i = 0; i < LG_ARRAY_LEN(s) && rc == LG_OK; i++)
        rc = copy(d, s[i].where, s[i].v, s[i].dst, s[i].size);
    if (rc == LG_OK) rc = int_or_null(d, "machine.mem_bytes", mem, &h->mem_bytes);
    if (rc == LG_OK) rc = required_from(d, req, &h->required);
    if (rc == LG_OK && strspn(kinds, "wm") != strlen(kinds))
        rc = fail(d, "sessions", "expected one 'w' (warm-up) or 'm' (measured) per session");
    if (rc == LG_OK && strlen(kinds) > RPT_HISTORY_MAX_SESSIONS)
        rc = fail(d, "sessions", "more sessions than a record keeps");
    if (rc == LG_OK && !(h->kinds = strdup(kinds)))
        rc = lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    h->n_sessions = h->kinds ? (int)strlen(h->kinds) : 0;
    return rc;
}

int rpt_history_from_json(const struct rpt_dec *d, json_t *o, struct rpt_history_record *h)
{
    memset(h, 0, sizeof *h);
    h->line = d->line;
    const char *schema = json_string_value(json_object_get(o, "schema"));
    if (!schema) return fail(d, "schema", "missing: not a leakgate history record");
    size_t n = strlen(RPT_HISTORY_SCHEMA);
    if (strncmp(schema, RPT_HISTORY_SCHEMA, n) != 0 || (schema[n] && schema[n] != '.'))
        return fail(d, "schema", "not leakgate.history/1 (a newer major version?)");
    int rc = identity_from(d, o, h);
    if (rc == LG_OK) rc = each_channel(d, o, "series", h, one_series);
    if (rc == LG_OK) rc = each_channel(d, o, "growth", h, one_growth);
    if (rc == LG_OK) rc = each_channel(d, o, "level", h, one_level);
    if (rc == LG_OK) rc = peaks_from(d, o, h);
    if (rc == LG_OK) rc = tags_from(d, "tags", json_object_get(o, "tags"), &h->tags, &h->n_tags);
    return rc;
}
