/* results_decode.c — JSON objects of a results file back into the structs. Strict about
 * what the schema requires (docs/results-schema.md): a missing member, a wrong type or a
 * string too long for its field is LG_EFORMAT naming file, line and member. Members the
 * schema does not know are ignored, so a newer writer's additions do not break an old reader.
 * What each member may hold is results_fields.c's table; this file reads a table's kinds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results_fields.h"
#include "results_impl.h"

/* Records a malformed member: "path:line: where.key: what". */
static int bad(const struct rpt_dec *d, const char *where, const char *key, const char *what)
{
    return lg_fail(LG_EFORMAT, "%s:%d: %s%s%s: %s", d->path, d->line, where, key ? "." : "",
                   key ? key : "", what);
}

/* o[key], which must be there. */
static int member(const struct rpt_dec *d, const char *where, json_t *o, const char *key,
                  json_t **out)
{
    *out = json_object_get(o, key);
    return *out ? LG_OK : bad(d, where, key, "missing");
}

/* The readers below check v, the value of member key (looked up once by the caller: get_field,
 * or a custom member's decoder), and store it. */

static int get_str(const struct rpt_dec *d, const char *where, json_t *v, const char *key,
                   char *dst, size_t size)
{
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
static int get_int(const struct rpt_dec *d, const char *where, json_t *v, const char *key,
                   int64_t *out, int64_t lo, int64_t hi, bool nullable)
{
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

/* A number; null reads as NaN. */
static int get_num(const struct rpt_dec *d, const char *where, json_t *v, const char *key,
                   double *out)
{
    if (json_is_null(v))
        *out = NAN;
    else if (json_is_number(v))
        *out = json_number_value(v);
    else
        return bad(d, where, key, "expected a number or null");
    return LG_OK;
}

static int get_bool(const struct rpt_dec *d, const char *where, json_t *v, const char *key,
                    bool *out)
{
    if (!json_is_boolean(v)) return bad(d, where, key, "expected true or false");
    *out = json_is_true(v);
    return LG_OK;
}

/* An array of channel names as a mask. */
static int get_channel_list(const struct rpt_dec *d, const char *where, json_t *v, const char *key,
                            unsigned *out)
{
    json_t *e;
    size_t i;
    *out = 0;
    if (!json_is_array(v)) return bad(d, where, key, "expected an array of channel names");
    json_array_foreach(v, i, e)
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
static int get_frames(const struct rpt_dec *d, const char *where, json_t *v, const char *key,
                      char **out, bool nullable)
{
    json_t *fr;
    size_t i, len = 0;
    *out = NULL;
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

static int get_channels(const struct rpt_dec *d, const char *where, json_t *v, const char *key,
                        int64_t *out)
{
    if (!json_is_object(v)) return bad(d, where, key, "expected an object keyed by channel");
    char w[64];
    snprintf(w, sizeof w, "%s.%s", where, key);
    int rc = LG_OK;
    for (int c = 0; c < RPT_NCHANNELS && rc == LG_OK; c++) {
        json_t *x = json_object_get(v, rpt_channel_name(c));
        out[c] = RPT_NONE; /* absent: a writer from before the channel existed (not measured) */
        if (x) rc = get_int(d, w, x, rpt_channel_name(c), &out[c], INT64_MIN, INT64_MAX, true);
    }
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

/* A name from a list into an enum: status or channel. */
static int get_named(const struct rpt_dec *d, const char *where, json_t *v, const char *key,
                     int (*from_name)(const char *), int *out, const char *what)
{
    char name[32];
    int rc = get_str(d, where, v, key, name, sizeof name);
    int x = rc == LG_OK ? from_name(name) : 0;
    if (rc == LG_OK && x < 0) rc = bad(d, where, key, what);
    *out = x;
    return rc;
}

static int get_array_of(const struct rpt_dec *d, const char *where, json_t *a, const char *key,
                        const struct rpt_array *arr, void *base)
{
    json_t *e;
    size_t k;
    char *elems = (char *)base + arr->ptr_off;
    int *count = (int *)((char *)base + arr->count_off);
    int rc = json_is_array(a) ? LG_OK : bad(d, where, key, "expected an array");
    if (rc == LG_OK && arr->capacity) {
        if (json_array_size(a) > (size_t)arr->capacity)
            return bad(d, where, key, "too many entries");
        *count = (int)json_array_size(a);
    } else if (rc == LG_OK) {
        rc = alloc_arr(d, (void **)elems, count, json_array_size(a), arr->elem_size);
        elems = *(char **)elems;
    }
    json_array_foreach(a, k, e)
    {
        if (rc != LG_OK) break;
        char ew[96];
        snprintf(ew, sizeof ew, "%s.%s[%zu]", where, key, k);
        rc = json_is_object(e) ? rpt_fields_get(d, ew, e, arr->fields, elems + k * arr->elem_size)
                               : bad(d, ew, NULL, "expected an object");
    }
    return rc;
}

static int get_oneof(const struct rpt_dec *d, const char *where, const struct rpt_field *f,
                     const char *v)
{
    for (const char *const *x = f->oneof; *x; x++)
        if (strcmp(v, *x) == 0) return LG_OK;
    char what[96];
    snprintf(what, sizeof what, "expected \"%s\"%s%s%s", f->oneof[0], f->oneof[1] ? " or \"" : "",
             f->oneof[1] ? f->oneof[1] : "", f->oneof[1] ? "\"" : "");
    return bad(d, where, f->key, what);
}

/* Reads one table member of o into base: the member must be there, but for a custom one (its
 * decoder decides). */
static int get_field(const struct rpt_dec *d, const char *w, json_t *o, const struct rpt_field *f,
                     void *base)
{
    void *p = (char *)base + f->off;
    int64_t x = 0;
    json_t *v;
    if (f->kind == RPT_F_CUSTOM) return f->dec(d, w, o, f->key, base);
    int rc = member(d, w, o, f->key, &v);
    if (rc != LG_OK) return rc;
    switch (f->kind) {
    case RPT_F_STR:
        rc = get_str(d, w, v, f->key, p, f->size);
        return rc == LG_OK && f->oneof ? get_oneof(d, w, f, p) : rc;
    case RPT_F_I64: return get_int(d, w, v, f->key, p, f->lo, f->hi, f->flags & RPT_NULLABLE);
    case RPT_F_INT:
    case RPT_F_U32:
        rc = get_int(d, w, v, f->key, &x, f->lo, f->hi, false);
        if (rc == LG_OK && f->kind == RPT_F_INT) *(int *)p = (int)x;
        if (rc == LG_OK && f->kind == RPT_F_U32) *(uint32_t *)p = (uint32_t)x;
        return rc;
    case RPT_F_NUM: return get_num(d, w, v, f->key, p);
    case RPT_F_BOOL: return get_bool(d, w, v, f->key, p);
    case RPT_F_FRAMES: return get_frames(d, w, v, f->key, p, f->flags & RPT_NULLABLE);
    case RPT_F_STATUS: return get_named(d, w, v, f->key, rpt_status_from_name, p, "unknown status");
    case RPT_F_CHANNEL:
        return get_named(d, w, v, f->key, rpt_channel_from_name, p, "unknown channel");
    case RPT_F_MASK: return get_channel_list(d, w, v, f->key, p);
    case RPT_F_CHANNELS: return get_channels(d, w, v, f->key, p);
    case RPT_F_ARRAY: return get_array_of(d, w, v, f->key, f->arr, base);
    case RPT_F_OBJECT: {
        char ow[96];
        if (!json_is_object(v)) return bad(d, w, f->key, "expected an object");
        snprintf(ow, sizeof ow, "%s.%s", w, f->key);
        return rpt_fields_get(d, ow, v, f->sub, p);
    }
    case RPT_F_ENUM: {
        char name[32];
        rc = get_str(d, w, v, f->key, name, sizeof name);
        for (int k = 0; rc == LG_OK && f->oneof[k]; k++)
            if (f->oneof[k][0] && !strcmp(f->oneof[k], name)) {
                *(int *)p = (int)(k + f->lo);
                return LG_OK;
            }
        return rc == LG_OK ? bad(d, w, f->key, "not one of the names it may have") : rc;
    }
    case RPT_F_CUSTOM:
    case RPT_F_END: break;
    }
    return lg_fail(LG_EINTERNAL, "results field %s: unknown kind %d", f->key, (int)f->kind);
}

int rpt_fields_get(const struct rpt_dec *d, const char *where, json_t *o, const struct rpt_field *f,
                   void *base)
{
    int rc = LG_OK;
    for (; f->kind != RPT_F_END && rc == LG_OK; f++) {
        bool there = json_object_get(o, f->key) != NULL;
        if (f->flags & RPT_PRESENT) *(bool *)((char *)base + f->present_off) = there;
        if (there || !(f->flags & (RPT_OPTIONAL | RPT_OMIT_EMPTY | RPT_PRESENT)))
            rc = get_field(d, where, o, f, base);
    }
    return rc;
}

/* ---- the custom members ------------------------------------------------------------------ */

int rpt_dec_schema(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *base)
{
    struct rpt_run *run = base;
    json_t *v;
    int rc = member(d, w, o, key, &v);
    if (rc == LG_OK) rc = get_str(d, w, v, key, run->schema, sizeof run->schema);
    /* "leakgate.results/1" or a compatible revision "leakgate.results/1.<n>" */
    size_t sl = strlen(RPT_SCHEMA);
    if (rc == LG_OK &&
        (strncmp(run->schema, RPT_SCHEMA, sl) != 0 || (run->schema[sl] && run->schema[sl] != '.')))
        rc = bad(d, w, key, "not \"" RPT_SCHEMA "\": written by an incompatible leakgate");
    return rc;
}

int rpt_dec_seed(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *base)
{
    struct rpt_run *run = base;
    json_t *seed;
    int rc = member(d, w, o, key, &seed);
    if (rc != LG_OK) return rc;
    char *end = NULL;
    const char *digits = json_is_string(seed) ? json_string_value(seed) : "";
    if (json_is_integer(seed) && json_integer_value(seed) >= 0)
        run->seed = (uint64_t)json_integer_value(seed);
    else if (digits[0] >= '0' && digits[0] <= '9' &&
             (run->seed = strtoull(digits, &end, 10), *end == '\0'))
        ;
    else
        rc = bad(d, w, key, "expected a non-negative integer or a string of digits");
    return rc;
}

int rpt_dec_budgets(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *base)
{
    struct rpt_run *run = base;
    json_t *budgets;
    int rc = member(d, w, o, key, &budgets);
    if (rc == LG_OK && !json_is_object(budgets))
        rc = bad(d, w, key, "expected an object keyed by channel");
    for (int c = 0; c < RPT_NCHANNELS && rc == LG_OK; c++) {
        struct rpt_budget *b = &run->budgets[c];
        json_t *e;
        char bw[64];
        snprintf(bw, sizeof bw, "%s.%s", w, key);
        e = json_object_get(budgets, rpt_channel_name(c));
        if (!e) { /* a writer from before the channel existed: the table's default, unmeasured */
            rpt_budget_resolution((enum rpt_channel)c, b);
            lg_strlcpy(b->source, "not in the file (written before this channel)",
                       sizeof b->source);
            continue;
        }
        snprintf(bw, sizeof bw, "%s.%s.%s", w, key, rpt_channel_name(c));
        if (!json_is_object(e)) rc = bad(d, bw, NULL, "expected an object");
        /* written since leakgate.results/1.1; older files' budgets were noise-free measurements,
         * but for the device's, which were never measured */
        b->noise = 0;
        b->measured = c != RPT_CH_DEV_DRIVER && c != RPT_CH_DEV_PROCESS;
        if (rc == LG_OK) rc = rpt_fields_get(d, bw, e, rpt_budget_fields, b);
        json_t *noise = rc == LG_OK ? json_object_get(e, "noise") : NULL;
        if (noise) rc = get_num(d, bw, noise, "noise", &b->noise);
    }
    return rc;
}

static int decode_sample(const struct rpt_dec *d, const char *w, json_t *row, struct rpt_sample *p)
{
    const unsigned sampled = rpt_channel_mask(RPT_CHF_SAMPLED); /* channels.h */
    size_t n = 3;
    char names[200], shape[256];
    for (int c = 0; c < RPT_NCHANNELS; c++) n += (sampled & RPT_BIT(c)) != 0;
    snprintf(shape, sizeof shape, "expected [step, phase, t, %s]",
             rpt_channel_list(names, sizeof names, sampled, ", "));
    if (!json_is_array(row) || json_array_size(row) != n) return bad(d, w, NULL, shape);
    json_t *c0 = json_array_get(row, 0), *c1 = json_array_get(row, 1), *c2 = json_array_get(row, 2);
    if (!json_is_integer(c0) || json_integer_value(c0) < -1 || json_integer_value(c0) > INT32_MAX)
        return bad(d, w, "step", "expected an integer >= -1");
    if (!json_is_string(c1) || json_string_length(c1) >= sizeof p->phase)
        return bad(d, w, "phase", "expected a string of at most 15 bytes");
    if (!json_is_number(c2) && !json_is_null(c2))
        return bad(d, w, "t", "expected a number or null");
    p->step = (int)json_integer_value(c0);
    memcpy(p->phase, json_string_value(c1), json_string_length(c1) + 1);
    p->t = json_is_null(c2) ? NAN : json_number_value(c2);
    size_t k = 3;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        p->v[c] = RPT_NONE;
        if (!(sampled & RPT_BIT(c))) continue;
        json_t *v = json_array_get(row, k++);
        if (json_is_null(v))
            p->v[c] = RPT_NONE;
        else if (json_is_integer(v) && json_integer_value(v) != RPT_NONE)
            p->v[c] = json_integer_value(v);
        else
            return bad(d, w, rpt_channel_name(c), "expected an integer or null");
    }
    return LG_OK;
}

int rpt_dec_samples(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *base)
{
    struct rpt_session *s = base;
    json_t *a = NULL, *e;
    size_t k;
    int rc = get_arr(d, w, o, key, &a);
    if (rc == LG_OK)
        rc = alloc_arr(d, (void **)&s->samples, &s->n_samples, json_array_size(a),
                       sizeof *s->samples);
    json_array_foreach(a, k, e)
    {
        if (rc != LG_OK) break;
        char ew[64];
        snprintf(ew, sizeof ew, "%s.%s[%zu]", w, key, k);
        rc = decode_sample(d, ew, e, &s->samples[k]);
    }
    return rc;
}

int rpt_dec_heap_profile(const struct rpt_dec *d, const char *w, json_t *o, const char *key,
                         void *s)
{
    (void)w, (void)key;
    return rpt_alloc_stacks_from_json(d, o, s);
}

int rpt_dec_notes(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *s)
{
    (void)w, (void)key;
    return rpt_notes_from_json(d, o, s);
}

/* ---- the lines --------------------------------------------------------------------------- */

int rpt_run_from_json(const struct rpt_dec *d, json_t *o, struct rpt_run *run)
{
    memset(run, 0, sizeof *run);
    int rc = rpt_fields_get(d, "run", o, rpt_run_fields, run);
    if (rc == LG_OK && !json_object_get(o, "required")) /* before 1.1: the device's default */
        run->required = rpt_default_required(rpt_run_had_device(run));
    return rc;
}

int rpt_session_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *s)
{
    memset(s, 0, sizeof *s);
    return rpt_fields_get(d, "session", o, rpt_session_fields, s);
}

int rpt_verdict_from_json(const struct rpt_dec *d, json_t *o, struct rpt_verdict *v)
{
    memset(v, 0, sizeof *v);
    int rc = rpt_fields_get(d, "verdict", o, rpt_verdict_fields, v);
    unsigned seen = 0;
    for (int k = 0; rc == LG_OK && k < v->n_channels; k++) {
        char cw[48];
        snprintf(cw, sizeof cw, "verdict.channels[%d]", k);
        if (seen & RPT_BIT(v->channels[k].channel))
            rc = bad(d, cw, "channel", "channel listed twice");
        seen |= RPT_BIT(v->channels[k].channel);
    }
    return rc;
}
