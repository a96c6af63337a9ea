/* results_encode.c — results structs to JSON objects (schema "leakgate.results/1",
 * docs/results-schema.md), member by member as results_fields.c lists them. Bytes are JSON
 * integers, RPT_NONE and non-finite numbers are null, channels are objects keyed by channel
 * name, stacks are arrays of frames. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results_fields.h"
#include "results_impl.h"

/* Length of the valid UTF-8 sequence at s, 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
    size_t n;
    unsigned cp;
    if (s[0] < 0x80) return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, cp = s[0] & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
    if (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
    return n;
}

/* A new JSON string of s (the caller owns the reference); bytes that are not UTF-8 (a symbol name
 * from a foreign library, say) become '?', so a line is never lost to one bad byte. */
static json_t *jstr_n(const char *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) return NULL;
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_seq((const unsigned char *)s + i);
        if (n == 0 || i + n > len || memchr(s + i, '\0', n)) {
            copy[i++] = '?';
            continue;
        }
        memcpy(copy + i, s + i, n);
        i += n;
    }
    copy[len] = '\0';
    json_t *j = json_stringn(copy, len);
    free(copy);
    return j;
}

static json_t *jstr(const char *s) { return jstr_n(s, strlen(s)); }

json_t *rpt_json_str(const char *s) { return jstr(s); }

static json_t *jint(int64_t v) { return v == RPT_NONE ? json_null() : json_integer(v); }

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *rpt_json_frames(const char *s)
{
    if (!s) return json_null();
    json_t *a = json_array();
    while (a && *s) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        if (json_array_append_new(a, jstr_n(s, len)) != 0) {
            json_decref(a);
            return NULL;
        }
        s += len + (nl ? 1 : 0);
    }
    return a;
}

/* Sets o[key] = v (stolen); counts a failure in *bad. */
static void put(json_t *o, const char *key, json_t *v, int *bad)
{
    if (!v || json_object_set_new(o, key, v) != 0) (*bad)++;
}

static json_t *finish(json_t *o, int bad)
{
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *channels_obj(const int64_t *v)
{
    json_t *o = json_object();
    int bad = !o;
    for (int c = 0; o && c < RPT_NCHANNELS; c++) put(o, rpt_channel_name(c), jint(v[c]), &bad);
    return finish(o, bad);
}

/* A mask of channels as an array of their names. */
static json_t *channel_list(unsigned mask)
{
    json_t *a = json_array();
    for (int c = 0; a && c < RPT_NCHANNELS; c++)
        if ((mask & RPT_BIT(c)) &&
            json_array_append_new(a, json_string(rpt_channel_name((enum rpt_channel)c))) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *rpt_json_channels(unsigned mask) { return channel_list(mask); }

json_t *rpt_array_to_json(const struct rpt_array *arr, const void *base)
{
    const char *elems = *(const char *const *)((const char *)base + arr->ptr_off);
    if (arr->capacity) elems = (const char *)base + arr->ptr_off;
    int n = *(const int *)((const char *)base + arr->count_off);
    json_t *a = json_array();
    int bad = !a;
    for (int i = 0; !bad && i < n; i++) {
        json_t *e = json_object();
        if (!e) {
            bad++;
            break;
        }
        rpt_fields_put(e, arr->fields, elems + (size_t)i * arr->elem_size, &bad);
        if (json_array_append_new(a, e) != 0) bad++;
    }
    return finish(a, bad);
}

/* The JSON value of one table member of base. */
static json_t *value_of(const struct rpt_field *f, const void *base)
{
    const void *p = (const char *)base + f->off;
    switch (f->kind) {
    case RPT_F_STR: return jstr(p);
    case RPT_F_I64: {
        int64_t v = *(const int64_t *)p;
        return f->flags & RPT_NULLABLE ? jint(v) : json_integer(v);
    }
    case RPT_F_INT: return json_integer(*(const int *)p);
    case RPT_F_U32: return json_integer(*(const uint32_t *)p);
    case RPT_F_NUM: return jnum(*(const double *)p);
    case RPT_F_BOOL: return json_boolean(*(const bool *)p);
    case RPT_F_FRAMES: return rpt_json_frames(*(const char *const *)p);
    case RPT_F_STATUS: return json_string(rpt_status_name(*(const enum rpt_status *)p));
    case RPT_F_CHANNEL: return json_string(rpt_channel_name(*(const enum rpt_channel *)p));
    case RPT_F_MASK: return channel_list(*(const unsigned *)p);
    case RPT_F_CHANNELS: return channels_obj(p);
    case RPT_F_ARRAY: return rpt_array_to_json(f->arr, base);
    case RPT_F_OBJECT: {
        json_t *o = json_object();
        int bad = !o;
        if (o) rpt_fields_put(o, f->sub, p, &bad);
        return finish(o, bad);
    }
    case RPT_F_ENUM: return json_string(f->oneof[*(const int *)p - f->lo]);
    case RPT_F_CUSTOM:
    case RPT_F_END: break;
    }
    return NULL;
}

void rpt_fields_put(json_t *o, const struct rpt_field *f, const void *base, int *bad)
{
    for (; f->kind != RPT_F_END; f++) {
        if ((f->flags & RPT_PRESENT) && !*(const bool *)((const char *)base + f->present_off))
            continue;
        if ((f->flags & RPT_OMIT_EMPTY) &&
            *(const int *)((const char *)base + f->arr->count_off) == 0)
            continue;
        if (f->kind == RPT_F_CUSTOM)
            f->enc(o, f->key, base, bad);
        else
            put(o, f->key, value_of(f, base), bad);
    }
}

/* ---- the custom members ------------------------------------------------------------------ */

void rpt_enc_schema(json_t *o, const char *key, const void *base, int *bad)
{
    const struct rpt_run *run = base;
    put(o, key, jstr(run->schema[0] ? run->schema : RPT_SCHEMA), bad);
}

void rpt_enc_seed(json_t *o, const char *key, const void *base, int *bad)
{
    const struct rpt_run *run = base;
    /* JSON integers here are signed 64-bit: a seed above INT64_MAX is written as a string */
    if (run->seed <= (uint64_t)INT64_MAX) {
        put(o, key, json_integer((json_int_t)run->seed), bad);
        return;
    }
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)run->seed);
    put(o, key, json_string(buf), bad);
}

void rpt_enc_budgets(json_t *o, const char *key, const void *base, int *bad)
{
    const struct rpt_run *run = base;
    json_t *b = json_object();
    int nb = !b;
    for (int c = 0; !nb && c < RPT_NCHANNELS; c++) {
        const struct rpt_budget *bg = &run->budgets[c];
        json_t *e = json_object();
        if (!e) {
            nb++;
            break;
        }
        rpt_fields_put(e, rpt_budget_fields, bg, &nb);
        if (!rpt_channel_exact((enum rpt_channel)c)) {
            put(e, "noise", jnum(bg->noise), &nb);
            put(e, "min_sessions", json_integer(rpt_min_sessions(bg)), &nb); /* for readers */
        }
        put(b, rpt_channel_name(c), e, &nb);
    }
    put(o, key, finish(b, nb), bad);
}

/* Samples are compact rows: [step, phase, t, tagged_host, tagged_device, je_allocated, rss]. */
void rpt_enc_samples(json_t *o, const char *key, const void *base, int *bad)
{
    const struct rpt_session *s = base;
    json_t *a = json_array();
    int nb = !a;
    for (int i = 0; !nb && i < s->n_samples; i++) {
        const struct rpt_sample *p = &s->samples[i];
        json_t *row = json_array();
        if (!row) {
            nb++;
            break;
        }
        /* [step, phase, t, then each sampled channel in the table's order] */
        json_t *cells[3 + RPT_NCHANNELS] = {json_integer(p->step), jstr(p->phase), jnum(p->t)};
        size_t n = 3;
        for (int c = 0; c < RPT_NCHANNELS; c++)
            if (rpt_channel_mask(RPT_CHF_SAMPLED) & RPT_BIT(c)) cells[n++] = jint(p->v[c]);
        for (size_t k = 0; k < n; k++)
            if (!cells[k] || json_array_append_new(row, cells[k]) != 0) nb++;
        if (json_array_append_new(a, row) != 0) nb++;
    }
    put(o, key, finish(a, nb), bad);
}

void rpt_enc_heap_profile(json_t *o, const char *key, const void *s, int *bad)
{
    put(o, key, rpt_alloc_stacks_to_json(s), bad);
}

void rpt_enc_notes(json_t *o, const char *key, const void *base, int *bad)
{
    const struct rpt_session *s = base;
    if (s->n_notes) put(o, key, rpt_notes_to_json(s), bad);
}

/* ---- the lines --------------------------------------------------------------------------- */

static json_t *line(const char *type, const struct rpt_field *fields, const void *base)
{
    json_t *o = json_object();
    int bad = !o;
    if (bad) return NULL;
    put(o, "type", json_string(type), &bad);
    rpt_fields_put(o, fields, base, &bad);
    return finish(o, bad);
}

json_t *rpt_run_to_json(const struct rpt_run *run) { return line("run", rpt_run_fields, run); }

json_t *rpt_session_to_json(const struct rpt_session *s)
{
    return line("session", rpt_session_fields, s);
}

json_t *rpt_verdict_to_json(const struct rpt_verdict *v)
{
    LG_ASSERT(v->n_channels >= 0 && v->n_channels <= RPT_NCHANNELS && "verdict channel count");
    return line("verdict", rpt_verdict_fields, v);
}
