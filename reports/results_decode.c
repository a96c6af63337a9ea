/* results_decode.c — JSON objects of a results file back into the structs. Strict about
 * what the schema requires (docs/results-schema.md): a missing member, a wrong type or a
 * string too long for its field is LG_EFORMAT naming file, line and member. Members the
 * schema does not know are ignored, so a newer writer's additions do not break an old reader. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rpt_impl.h"
#include "rpt_stacks.h"

/* Records a malformed member: "path:line: where.key: what". */
static int bad(const struct rpt_dec *d, const char *where, const char *key, const char *what)
{
    return lg_fail(LG_EFORMAT, "%s:%d: %s%s%s: %s", d->path, d->line, where, key ? "." : "",
                   key ? key : "", what);
}

static int member(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                  json_t **out)
{
    *out = json_object_get(o, key);
    return *out ? LG_OK : bad(d, where, key, "missing");
}

static int get_str(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                   char *dst, size_t size)
{
    json_t *v;
    int rc = member(d, where, o, key, &v);
    if (rc != LG_OK) return rc;
    if (!json_is_string(v)) return bad(d, where, key, "expected a string");
    if (json_string_length(v) >= size) {
        char what[64];
        snprintf(what, sizeof what, "string longer than %zu bytes", size - 1);
        return bad(d, where, key, what);
    }
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return LG_OK;
}

/* An integer in [lo, hi]; null gives RPT_NONE when nullable. */
static int get_int(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                   int64_t *out, int64_t lo, int64_t hi, bool nullable)
{
    json_t *v;
    int rc = member(d, where, o, key, &v);
    if (rc != LG_OK) return rc;
    if (json_is_null(v) && nullable) {
        *out = RPT_NONE;
        return LG_OK;
    }
    if (!json_is_integer(v))
        return bad(d, where, key, nullable ? "expected an integer or null" : "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi || x == RPT_NONE) return bad(d, where, key, "integer out of range");
    *out = x;
    return LG_OK;
}

static int get_i32(const struct rpt_dec *d, const char *where, json_t *o, const char *key, int *out,
                   int64_t lo, int64_t hi)
{
    int64_t x;
    int rc = get_int(d, where, o, key, &x, lo, hi, false);
    if (rc == LG_OK) *out = (int)x;
    return rc;
}

/* A number; null reads as NaN. */
static int get_num(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                   double *out)
{
    json_t *v;
    int rc = member(d, where, o, key, &v);
    if (rc != LG_OK) return rc;
    if (json_is_null(v))
        *out = NAN;
    else if (json_is_number(v))
        *out = json_number_value(v);
    else
        return bad(d, where, key, "expected a number or null");
    return LG_OK;
}

static int get_bool(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                    bool *out)
{
    json_t *v;
    int rc = member(d, where, o, key, &v);
    if (rc != LG_OK) return rc;
    if (!json_is_boolean(v)) return bad(d, where, key, "expected true or false");
    *out = json_is_true(v);
    return LG_OK;
}

/* A member that older writers left out: *out is NULL when absent. */
static json_t *optional(json_t *o, const char *key) { return json_object_get(o, key); }

/* An array of channel names as a mask. */
static int get_channel_list(const struct rpt_dec *d, const char *where, json_t *a, const char *key,
                            unsigned *out)
{
    json_t *e;
    size_t i;
    *out = 0;
    if (!json_is_array(a)) return bad(d, where, key, "expected an array of channel names");
    json_array_foreach(a, i, e)
    {
        int c = json_is_string(e) ? rpt_channel_from_name(json_string_value(e)) : -1;
        if (c < 0) return bad(d, where, key, "expected an array of channel names");
        *out |= RPT_BIT(c);
    }
    return LG_OK;
}

static int get_arr(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                   json_t **out)
{
    int rc = member(d, where, o, key, out);
    if (rc == LG_OK && !json_is_array(*out)) rc = bad(d, where, key, "expected an array");
    return rc;
}

/* An array of frames joined with '\n' into *out (freed by the caller); null gives NULL when
 * nullable. */
static int get_frames(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                      char **out, bool nullable)
{
    json_t *v, *fr;
    size_t i, len = 0;
    *out = NULL;
    int rc = member(d, where, o, key, &v);
    if (rc != LG_OK) return rc;
    if (json_is_null(v) && nullable) return LG_OK;
    if (!json_is_array(v))
        return bad(d, where, key,
                   nullable ? "expected an array of strings or null"
                            : "expected an array of strings");
    json_array_foreach(v, i, fr)
    {
        if (!json_is_string(fr)) return bad(d, where, key, "expected an array of strings");
        len += json_string_length(fr) + 1;
    }
    char *s = malloc(len + 1), *p = s;
    if (!s) return lg_fail(LG_ENOMEM, "%s:%d: out of memory reading stacks", d->path, d->line);
    json_array_foreach(v, i, fr)
    {
        if (i) *p++ = '\n';
        memcpy(p, json_string_value(fr), json_string_length(fr));
        p += json_string_length(fr);
    }
    *p = '\0';
    *out = s;
    return LG_OK;
}

static int get_channels(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                        int64_t *v)
{
    json_t *obj;
    int rc = member(d, where, o, key, &obj);
    if (rc != LG_OK) return rc;
    if (!json_is_object(obj)) return bad(d, where, key, "expected an object keyed by channel");
    char w[64];
    snprintf(w, sizeof w, "%s.%s", where, key);
    for (int c = 0; c < RPT_NCHANNELS && rc == LG_OK; c++)
        rc = get_int(d, w, obj, rpt_channel_name(c), &v[c], INT64_MIN, INT64_MAX, true);
    return rc;
}

/* Sizes an array of n elements of `elem` bytes; *count is set so a cleanup frees them. */
static int alloc_arr(const struct rpt_dec *d, void **out, int *count, size_t n, size_t elem)
{
    *out = NULL;
    *count = 0;
    if (n == 0) return LG_OK;
    if (n > INT32_MAX) return lg_fail(LG_EFORMAT, "%s:%d: array too long", d->path, d->line);
    *out = calloc(n, elem);
    if (!*out) return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    *count = (int)n;
    return LG_OK;
}

int rpt_run_from_json(const struct rpt_dec *d, json_t *o, struct rpt_run *run)
{
    const char *w = "run";
    json_t *seed, *budgets;
    int64_t mem;
    memset(run, 0, sizeof *run);
    int rc = get_str(d, w, o, "schema", run->schema, sizeof run->schema);
    /* "leakgate.results/1" or a compatible revision "leakgate.results/1.<n>" */
    size_t sl = strlen(RPT_SCHEMA);
    if (rc == LG_OK &&
        (strncmp(run->schema, RPT_SCHEMA, sl) != 0 || (run->schema[sl] && run->schema[sl] != '.')))
        rc = bad(d, w, "schema", "not \"" RPT_SCHEMA "\": written by an incompatible leakgate");
    if (rc == LG_OK) rc = get_str(d, w, o, "version", run->version, sizeof run->version);
    if (rc == LG_OK) rc = get_str(d, w, o, "command", run->command, sizeof run->command);
    if (rc == LG_OK) rc = get_str(d, w, o, "started", run->started, sizeof run->started);
    if (rc == LG_OK) rc = get_str(d, w, o, "hostname", run->hostname, sizeof run->hostname);
    if (rc == LG_OK) rc = get_i32(d, w, o, "cpus", &run->cpus, 0, INT32_MAX);
    if (rc == LG_OK) rc = get_int(d, w, o, "mem_bytes", &mem, 0, INT64_MAX, true);
    if (rc == LG_OK) run->mem_bytes = mem;
    if (rc == LG_OK) rc = get_str(d, w, o, "device", run->device, sizeof run->device);
    if (rc == LG_OK) rc = rpt_run_exec_from_json(d, o, run);
    if (rc == LG_OK) rc = get_str(d, w, o, "preset", run->preset, sizeof run->preset);
    if (rc == LG_OK) rc = get_str(d, w, o, "modes", run->modes, sizeof run->modes);
    if (rc == LG_OK) rc = get_i32(d, w, o, "sessions", &run->sessions, 0, INT32_MAX);
    if (rc == LG_OK) rc = get_i32(d, w, o, "warmup", &run->warmup, 0, INT32_MAX);
    if (rc == LG_OK) rc = get_i32(d, w, o, "steps", &run->steps, 0, INT32_MAX);
    if (rc == LG_OK) rc = member(d, w, o, "seed", &seed);
    if (rc == LG_OK) {
        char *end = NULL;
        if (json_is_integer(seed) && json_integer_value(seed) >= 0)
            run->seed = (uint64_t)json_integer_value(seed);
        else if (json_is_string(seed) && json_string_value(seed)[0] >= '0' &&
                 json_string_value(seed)[0] <= '9' &&
                 (run->seed = strtoull(json_string_value(seed), &end, 10), *end == '\0'))
            ;
        else
            rc = bad(d, w, "seed", "expected a non-negative integer or a string of digits");
    }
    if (rc == LG_OK) rc = get_bool(d, w, o, "stacks", &run->stacks);
    if (rc == LG_OK) rc = get_str(d, w, o, "inject", run->inject, sizeof run->inject);
    if (rc == LG_OK) rc = get_str(d, w, o, "shard", run->shard, sizeof run->shard);
    if (rc == LG_OK) rc = member(d, w, o, "budgets", &budgets);
    if (rc == LG_OK && !json_is_object(budgets))
        rc = bad(d, w, "budgets", "expected an object keyed by channel");
    for (int c = 0; c < RPT_NCHANNELS && rc == LG_OK; c++) {
        struct rpt_budget *b = &run->budgets[c];
        json_t *e;
        rc = member(d, "run.budgets", budgets, rpt_channel_name(c), &e);
        if (rc != LG_OK) break;
        char bw[64];
        snprintf(bw, sizeof bw, "run.budgets.%s", rpt_channel_name(c));
        if (!json_is_object(e)) rc = bad(d, bw, NULL, "expected an object");
        if (rc == LG_OK) rc = get_num(d, bw, e, "band", &b->band);
        if (rc == LG_OK) rc = get_num(d, bw, e, "slope", &b->slope);
        if (rc == LG_OK) rc = get_num(d, bw, e, "floor", &b->floor);
        if (rc == LG_OK) rc = get_str(d, bw, e, "source", b->source, sizeof b->source);
        /* written since leakgate.results/1.1; older files' budgets were noise-free measurements,
         * but for the device's, which were never measured */
        b->noise = 0;
        b->measured = c != RPT_CH_DEV_DRIVER && c != RPT_CH_DEV_PROCESS;
        if (rc == LG_OK && optional(e, "noise")) rc = get_num(d, bw, e, "noise", &b->noise);
        if (rc == LG_OK && optional(e, "measured"))
            rc = get_bool(d, bw, e, "measured", &b->measured);
    }
    run->required = rpt_default_required(rpt_run_had_device(run));
    if (rc == LG_OK && optional(o, "required"))
        rc = get_channel_list(d, w, optional(o, "required"), "required", &run->required);
    return rc;
}

static int decode_group(const struct rpt_dec *d, const char *w, json_t *e, struct lg_leak_group *g)
{
    json_t *st = NULL, *sk;
    size_t k;
    int rc = json_is_object(e) ? LG_OK : bad(d, w, NULL, "expected an object");
    if (rc == LG_OK) rc = get_str(d, w, e, "tag", g->tag, sizeof g->tag);
    if (rc == LG_OK) rc = get_str(d, w, e, "space", g->space, sizeof g->space);
    if (rc == LG_OK && strcmp(g->space, "host") != 0 && strcmp(g->space, "device") != 0)
        rc = bad(d, w, "space", "expected \"host\" or \"device\"");
    if (rc == LG_OK) rc = get_int(d, w, e, "bytes", &g->bytes, 0, INT64_MAX, false);
    if (rc == LG_OK) rc = get_int(d, w, e, "count", &g->count, 0, INT64_MAX, false);
    if (rc == LG_OK) rc = get_arr(d, w, e, "stacks", &st);
    if (rc == LG_OK)
        rc =
            alloc_arr(d, (void **)&g->stacks, &g->n_stacks, json_array_size(st), sizeof *g->stacks);
    json_array_foreach(st, k, sk)
    {
        if (rc != LG_OK) break;
        char sw[96];
        snprintf(sw, sizeof sw, "%s.stacks[%zu]", w, k);
        if (!json_is_object(sk)) rc = bad(d, sw, NULL, "expected an object");
        if (rc == LG_OK) rc = get_int(d, sw, sk, "count", &g->stacks[k].count, 0, INT64_MAX, false);
        if (rc == LG_OK) rc = get_frames(d, sw, sk, "frames", &g->stacks[k].frames, false);
    }
    return rc;
}

static int decode_ref(const struct rpt_dec *d, const char *w, json_t *e, struct lg_ref_leak *rl)
{
    json_t *ra = NULL, *re;
    size_t k;
    int64_t x;
    int rc = json_is_object(e) ? LG_OK : bad(d, w, NULL, "expected an object");
    if (rc == LG_OK) rc = get_str(d, w, e, "kind", rl->kind, sizeof rl->kind);
    if (rc == LG_OK) rc = get_str(d, w, e, "name", rl->name, sizeof rl->name);
    if (rc == LG_OK) rc = get_i32(d, w, e, "refs", &rl->refs, 0, INT32_MAX);
    if (rc == LG_OK) rc = get_arr(d, w, e, "retains", &ra);
    if (rc == LG_OK)
        rc = alloc_arr(d, (void **)&rl->retains, &rl->n_retains, json_array_size(ra),
                       sizeof *rl->retains);
    json_array_foreach(ra, k, re)
    {
        if (rc != LG_OK) break;
        char rw[96];
        snprintf(rw, sizeof rw, "%s.retains[%zu]", w, k);
        if (!json_is_object(re)) rc = bad(d, rw, NULL, "expected an object");
        if (rc == LG_OK)
            rc = get_str(d, rw, re, "site", rl->retains[k].site, sizeof rl->retains[k].site);
        if (rc == LG_OK) rc = get_int(d, rw, re, "generation", &x, 0, UINT32_MAX, false);
        if (rc == LG_OK) rl->retains[k].generation = (uint32_t)x;
        if (rc == LG_OK) rc = get_frames(d, rw, re, "stack", &rl->retains[k].stack, true);
    }
    return rc;
}

static int decode_sample(const struct rpt_dec *d, const char *w, json_t *row, struct rpt_sample *p)
{
    if (!json_is_array(row) || json_array_size(row) != 7)
        return bad(d, w, NULL,
                   "expected [step, phase, t, tagged_host, tagged_device, je_allocated, rss]");
    json_t *c[7];
    for (int k = 0; k < 7; k++) c[k] = json_array_get(row, k);
    if (!json_is_integer(c[0]) || json_integer_value(c[0]) < -1 ||
        json_integer_value(c[0]) > INT32_MAX)
        return bad(d, w, "step", "expected an integer >= -1");
    if (!json_is_string(c[1]) || json_string_length(c[1]) >= sizeof p->phase)
        return bad(d, w, "phase", "expected a string of at most 15 bytes");
    if (!json_is_number(c[2]) && !json_is_null(c[2]))
        return bad(d, w, "t", "expected a number or null");
    p->step = (int)json_integer_value(c[0]);
    memcpy(p->phase, json_string_value(c[1]), json_string_length(c[1]) + 1);
    p->t = json_is_null(c[2]) ? NAN : json_number_value(c[2]);
    int64_t *dst[] = {&p->tagged_host, &p->tagged_device, &p->je_allocated, &p->rss};
    static const char *const names[] = {"tagged_host", "tagged_device", "je_allocated", "rss"};
    for (int k = 0; k < 4; k++) {
        json_t *v = c[3 + k];
        if (json_is_null(v))
            *dst[k] = RPT_NONE;
        else if (json_is_integer(v) && json_integer_value(v) != RPT_NONE)
            *dst[k] = json_integer_value(v);
        else
            return bad(d, w, names[k], "expected an integer or null");
    }
    return LG_OK;
}

int rpt_session_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *s)
{
    const char *w = "session";
    json_t *a = NULL, *e;
    size_t k;
    int64_t x;
    char ew[64];
    memset(s, 0, sizeof *s);
    int rc = get_int(d, w, o, "index", &x, 0, INT32_MAX, false);
    if (rc == LG_OK) s->index = (int)x;
    if (rc == LG_OK) rc = get_str(d, w, o, "mode", s->mode, sizeof s->mode);
    if (rc == LG_OK) rc = get_bool(d, w, o, "warmup", &s->warmup);
    if (rc == LG_OK) rc = get_num(d, w, o, "duration_s", &s->duration_s);
    if (rc == LG_OK) rc = get_i32(d, w, o, "steps", &s->steps, 0, INT32_MAX);
    if (rc == LG_OK) rc = get_num(d, w, o, "train_loss", &s->train_loss);
    if (rc == LG_OK) rc = get_num(d, w, o, "val_loss", &s->val_loss);
    if (rc == LG_OK) rc = get_num(d, w, o, "quant_val_loss", &s->quant_val_loss);
    if (rc == LG_OK) rc = get_channels(d, w, o, "absolute", s->absolute);
    if (rc == LG_OK) rc = get_channels(d, w, o, "delta", s->delta);
    if (rc == LG_OK)
        rc = get_int(d, w, o, "peak_tagged_host", &s->peak_tagged_host, INT64_MIN, INT64_MAX, true);
    if (rc == LG_OK)
        rc = get_int(d, w, o, "peak_tagged_device", &s->peak_tagged_device, INT64_MIN, INT64_MAX,
                     true);
    if (rc == LG_OK)
        rc = get_int(d, w, o, "leaked_host_bytes", &s->leaked_host_bytes, INT64_MIN, INT64_MAX,
                     true);
    if (rc == LG_OK)
        rc = get_int(d, w, o, "leaked_device_bytes", &s->leaked_device_bytes, INT64_MIN, INT64_MAX,
                     true);
    if (rc == LG_OK && optional(o, "invalid_frees")) /* since 1.4 */
        rc = get_int(d, w, o, "invalid_frees", &s->invalid_frees, 0, INT64_MAX, false);
    if (rc == LG_OK) rc = get_arr(d, w, o, "leaks", &a);
    if (rc == LG_OK)
        rc = alloc_arr(d, (void **)&s->groups, &s->n_groups, json_array_size(a), sizeof *s->groups);
    json_array_foreach(a, k, e)
    {
        if (rc != LG_OK) break;
        snprintf(ew, sizeof ew, "session.leaks[%zu]", k);
        rc = decode_group(d, ew, e, &s->groups[k]);
    }
    if (rc == LG_OK) rc = get_arr(d, w, o, "refs", &a);
    if (rc == LG_OK)
        rc = alloc_arr(d, (void **)&s->refs, &s->n_refs, json_array_size(a), sizeof *s->refs);
    json_array_foreach(a, k, e)
    {
        if (rc != LG_OK) break;
        snprintf(ew, sizeof ew, "session.refs[%zu]", k);
        rc = decode_ref(d, ew, e, &s->refs[k]);
    }
    if (rc == LG_OK) rc = get_arr(d, w, o, "classes", &a);
    if (rc == LG_OK)
        rc = alloc_arr(d, (void **)&s->classes, &s->n_classes, json_array_size(a),
                       sizeof *s->classes);
    json_array_foreach(a, k, e)
    {
        if (rc != LG_OK) break;
        snprintf(ew, sizeof ew, "session.classes[%zu]", k);
        if (!json_is_object(e)) rc = bad(d, ew, NULL, "expected an object");
        if (rc == LG_OK)
            rc = get_str(d, ew, e, "class", s->classes[k].cls, sizeof s->classes[k].cls);
        if (rc == LG_OK) rc = get_int(d, ew, e, "bytes", &s->classes[k].bytes, 0, INT64_MAX, false);
    }
    if (rc == LG_OK) rc = get_arr(d, w, o, "samples", &a);
    if (rc == LG_OK)
        rc = alloc_arr(d, (void **)&s->samples, &s->n_samples, json_array_size(a),
                       sizeof *s->samples);
    json_array_foreach(a, k, e)
    {
        if (rc != LG_OK) break;
        snprintf(ew, sizeof ew, "session.samples[%zu]", k);
        rc = decode_sample(d, ew, e, &s->samples[k]);
    }
    if (rc == LG_OK) rc = rpt_alloc_stacks_from_json(d, o, s);
    if (rc == LG_OK) rc = rpt_notes_from_json(d, o, s);
    if (rc == LG_OK) rc = get_str(d, w, o, "error", s->error, sizeof s->error);
    return rc;
}

int rpt_verdict_from_json(const struct rpt_dec *d, json_t *o, struct rpt_verdict *v)
{
    const char *w = "verdict";
    char name[32];
    json_t *a = NULL, *e;
    size_t k;
    memset(v, 0, sizeof *v);
    int rc = get_str(d, w, o, "status", name, sizeof name);
    int st = rc == LG_OK ? rpt_status_from_name(name) : 0;
    if (rc == LG_OK && st < 0) rc = bad(d, w, "status", "unknown status");
    v->status = (enum rpt_status)st;
    if (rc == LG_OK) rc = get_i32(d, w, o, "exit_code", &v->exit_code, 0, 255);
    if (rc == LG_OK)
        rc = get_i32(d, w, o, "sessions_measured", &v->sessions_measured, 0, INT32_MAX);
    if (rc == LG_OK) rc = get_bool(d, w, o, "partial", &v->partial);
    if (rc == LG_OK) rc = get_str(d, w, o, "summary", v->summary, sizeof v->summary);
    if (rc == LG_OK && optional(o, "sessions_planned"))
        rc = get_i32(d, w, o, "sessions_planned", &v->sessions_planned, 0, INT32_MAX);
    if (rc == LG_OK && optional(o, "stopped"))
        rc = get_str(d, w, o, "stopped", v->stopped, sizeof v->stopped);
    if (rc == LG_OK && optional(o, "required"))
        rc = get_channel_list(d, w, optional(o, "required"), "required", &v->required);
    if (rc == LG_OK) rc = get_arr(d, w, o, "channels", &a);
    if (rc == LG_OK && json_array_size(a) > RPT_NCHANNELS)
        rc = bad(d, w, "channels", "more entries than channels");
    bool seen[RPT_NCHANNELS] = {false};
    json_array_foreach(a, k, e)
    {
        if (rc != LG_OK) break;
        struct rpt_channel_verdict *cv = &v->channels[k];
        char cw[48];
        snprintf(cw, sizeof cw, "verdict.channels[%zu]", k);
        if (!json_is_object(e)) rc = bad(d, cw, NULL, "expected an object");
        if (rc == LG_OK) rc = get_str(d, cw, e, "channel", name, sizeof name);
        int c = rc == LG_OK ? rpt_channel_from_name(name) : 0;
        if (rc == LG_OK && c < 0) rc = bad(d, cw, "channel", "unknown channel");
        if (rc == LG_OK && seen[c]) rc = bad(d, cw, "channel", "channel listed twice");
        if (rc != LG_OK) break;
        seen[c] = true;
        cv->channel = (enum rpt_channel)c;
        rc = get_str(d, cw, e, "status", name, sizeof name);
        st = rc == LG_OK ? rpt_status_from_name(name) : 0;
        if (rc == LG_OK && st < 0) rc = bad(d, cw, "status", "unknown status");
        cv->status = (enum rpt_status)st;
        if (rc == LG_OK) rc = get_num(d, cw, e, "figure", &cv->figure);
        if (rc == LG_OK) rc = get_num(d, cw, e, "budget", &cv->budget);
        if (rc == LG_OK) rc = get_num(d, cw, e, "slope", &cv->slope);
        if (rc == LG_OK) rc = get_num(d, cw, e, "slope_lo", &cv->slope_lo);
        if (rc == LG_OK) rc = get_num(d, cw, e, "slope_hi", &cv->slope_hi);
        if (rc == LG_OK) rc = get_num(d, cw, e, "shift", &cv->shift);
        if (rc == LG_OK && optional(e, "required"))
            rc = get_bool(d, cw, e, "required", &cv->required);
        if (rc == LG_OK) rc = get_str(d, cw, e, "why", cv->why, sizeof cv->why);
        if (rc == LG_OK) v->n_channels = (int)k + 1;
    }
    return rc;
}
