/* results_encode.c — results structs to JSON objects (schema "leakgate.results/1",
 * docs/results-schema.md). Bytes are JSON integers, RPT_NONE and non-finite numbers are null,
 * channels are objects keyed by channel name, stacks are arrays of frames. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rpt_impl.h"
#include "rpt_stacks.h"

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

static json_t *jint(int64_t v) { return v == RPT_NONE ? json_null() : json_integer(v); }

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* A new JSON array of the lines of s: "a\nb\n" -> ["a", "b"]; NULL -> null. */
static json_t *jframes(const char *s)
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

static json_t *channels_obj(const int64_t *v)
{
    json_t *o = json_object();
    int bad = 0;
    for (int c = 0; o && c < RPT_NCHANNELS; c++) put(o, rpt_channel_name(c), jint(v[c]), &bad);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *finish(json_t *o, int bad)
{
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
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

json_t *rpt_run_to_json(const struct rpt_run *run)
{
    json_t *o = json_object(), *b = json_object();
    int bad = !o || !b;
    if (bad) goto cleanup;
    put(o, "type", json_string("run"), &bad);
    put(o, "schema", jstr(run->schema[0] ? run->schema : RPT_SCHEMA), &bad);
    put(o, "version", jstr(run->version), &bad);
    put(o, "command", jstr(run->command), &bad);
    put(o, "started", jstr(run->started), &bad);
    put(o, "hostname", jstr(run->hostname), &bad);
    put(o, "cpus", json_integer(run->cpus), &bad);
    put(o, "mem_bytes", jint(run->mem_bytes), &bad);
    put(o, "device", jstr(run->device), &bad);
    put(o, "cmd", jstr(run->cmd), &bad);
    put(o, "prof_sample", json_integer(run->prof_sample), &bad);
    put(o, "preset", jstr(run->preset), &bad);
    put(o, "modes", jstr(run->modes), &bad);
    put(o, "sessions", json_integer(run->sessions), &bad);
    put(o, "warmup", json_integer(run->warmup), &bad);
    put(o, "steps", json_integer(run->steps), &bad);
    /* JSON integers here are signed 64-bit: a seed above INT64_MAX is written as a string */
    if (run->seed <= (uint64_t)INT64_MAX)
        put(o, "seed", json_integer((json_int_t)run->seed), &bad);
    else {
        char buf[24];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)run->seed);
        put(o, "seed", json_string(buf), &bad);
    }
    put(o, "stacks", json_boolean(run->stacks), &bad);
    put(o, "inject", jstr(run->inject), &bad);
    put(o, "shard", jstr(run->shard), &bad);
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        const struct rpt_budget *bg = &run->budgets[c];
        json_t *e = json_object();
        if (!e) {
            bad++;
            break;
        }
        put(e, "band", jnum(bg->band), &bad);
        put(e, "slope", jnum(bg->slope), &bad);
        put(e, "floor", jnum(bg->floor), &bad);
        if (!rpt_channel_exact((enum rpt_channel)c)) {
            put(e, "noise", jnum(bg->noise), &bad);
            put(e, "min_sessions", json_integer(rpt_min_sessions(bg)),
                &bad); /* derived, for readers */
        }
        put(e, "measured", json_boolean(bg->measured), &bad);
        put(e, "source", jstr(bg->source), &bad);
        put(b, rpt_channel_name(c), e, &bad);
    }
    put(o, "budgets", b, &bad);
    b = NULL;
    put(o, "required", channel_list(run->required), &bad);
cleanup:
    json_decref(b);
    return finish(o, bad);
}

static json_t *groups_arr(const struct rpt_session *s)
{
    json_t *a = json_array();
    int bad = !a;
    for (int i = 0; !bad && i < s->n_groups; i++) {
        const struct lg_leak_group *g = &s->groups[i];
        json_t *e = json_object(), *st = json_array();
        if (!e || !st) {
            json_decref(e);
            json_decref(st);
            bad++;
            break;
        }
        put(e, "tag", jstr(g->tag), &bad);
        put(e, "space", jstr(g->space), &bad);
        put(e, "bytes", json_integer(g->bytes), &bad);
        put(e, "count", json_integer(g->count), &bad);
        for (int k = 0; k < g->n_stacks; k++) {
            json_t *sk = json_object();
            if (!sk) {
                bad++;
                break;
            }
            put(sk, "count", json_integer(g->stacks[k].count), &bad);
            put(sk, "frames", jframes(g->stacks[k].frames), &bad);
            if (json_array_append_new(st, sk) != 0) bad++;
        }
        put(e, "stacks", st, &bad);
        if (json_array_append_new(a, e) != 0) bad++;
    }
    return finish(a, bad);
}

static json_t *refs_arr(const struct rpt_session *s)
{
    json_t *a = json_array();
    int bad = !a;
    for (int i = 0; !bad && i < s->n_refs; i++) {
        const struct lg_ref_leak *rl = &s->refs[i];
        json_t *e = json_object(), *ra = json_array();
        if (!e || !ra) {
            json_decref(e);
            json_decref(ra);
            bad++;
            break;
        }
        put(e, "kind", jstr(rl->kind), &bad);
        put(e, "name", jstr(rl->name), &bad);
        put(e, "refs", json_integer(rl->refs), &bad);
        for (int k = 0; k < rl->n_retains; k++) {
            json_t *re = json_object();
            if (!re) {
                bad++;
                break;
            }
            put(re, "site", jstr(rl->retains[k].site), &bad);
            put(re, "generation", json_integer(rl->retains[k].generation), &bad);
            put(re, "stack", jframes(rl->retains[k].stack), &bad);
            if (json_array_append_new(ra, re) != 0) bad++;
        }
        put(e, "retains", ra, &bad);
        if (json_array_append_new(a, e) != 0) bad++;
    }
    return finish(a, bad);
}

static json_t *classes_arr(const struct rpt_session *s)
{
    json_t *a = json_array();
    int bad = !a;
    for (int i = 0; !bad && i < s->n_classes; i++) {
        json_t *e = json_object();
        if (!e) {
            bad++;
            break;
        }
        put(e, "class", jstr(s->classes[i].cls), &bad);
        put(e, "bytes", json_integer(s->classes[i].bytes), &bad);
        if (json_array_append_new(a, e) != 0) bad++;
    }
    return finish(a, bad);
}

/* Samples are compact rows: [step, phase, t, tagged_host, tagged_device, je_allocated, rss]. */
static json_t *samples_arr(const struct rpt_session *s)
{
    json_t *a = json_array();
    int bad = !a;
    for (int i = 0; !bad && i < s->n_samples; i++) {
        const struct rpt_sample *p = &s->samples[i];
        json_t *row = json_array();
        if (!row) {
            bad++;
            break;
        }
        json_t *cells[] = {json_integer(p->step), jstr(p->phase),         jnum(p->t),
                           jint(p->tagged_host),  jint(p->tagged_device), jint(p->je_allocated),
                           jint(p->rss)};
        for (size_t k = 0; k < LG_ARRAY_LEN(cells); k++)
            if (!cells[k] || json_array_append_new(row, cells[k]) != 0) bad++;
        if (json_array_append_new(a, row) != 0) bad++;
    }
    return finish(a, bad);
}

json_t *rpt_session_to_json(const struct rpt_session *s)
{
    json_t *o = json_object();
    int bad = !o;
    if (bad) return NULL;
    put(o, "type", json_string("session"), &bad);
    put(o, "index", json_integer(s->index), &bad);
    put(o, "mode", jstr(s->mode), &bad);
    put(o, "warmup", json_boolean(s->warmup), &bad);
    put(o, "duration_s", jnum(s->duration_s), &bad);
    put(o, "steps", json_integer(s->steps), &bad);
    put(o, "train_loss", jnum(s->train_loss), &bad);
    put(o, "val_loss", jnum(s->val_loss), &bad);
    put(o, "quant_val_loss", jnum(s->quant_val_loss), &bad);
    put(o, "absolute", channels_obj(s->absolute), &bad);
    put(o, "delta", channels_obj(s->delta), &bad);
    put(o, "peak_tagged_host", jint(s->peak_tagged_host), &bad);
    put(o, "peak_tagged_device", jint(s->peak_tagged_device), &bad);
    put(o, "leaked_host_bytes", jint(s->leaked_host_bytes), &bad);
    put(o, "leaked_device_bytes", jint(s->leaked_device_bytes), &bad);
    put(o, "invalid_frees", json_integer(s->invalid_frees), &bad);
    put(o, "leaks", groups_arr(s), &bad);
    put(o, "refs", refs_arr(s), &bad);
    put(o, "classes", classes_arr(s), &bad);
    put(o, "samples", samples_arr(s), &bad);
    put(o, "heap_profile", rpt_alloc_stacks_to_json(s), &bad);
    if (s->n_notes) put(o, "notes", rpt_notes_to_json(s), &bad);
    put(o, "error", jstr(s->error), &bad);
    return finish(o, bad);
}

json_t *rpt_verdict_to_json(const struct rpt_verdict *v)
{
    json_t *o = json_object(), *a = json_array();
    int bad = !o || !a;
    if (bad) goto cleanup;
    put(o, "type", json_string("verdict"), &bad);
    put(o, "status", json_string(rpt_status_name(v->status)), &bad);
    put(o, "exit_code", json_integer(v->exit_code), &bad);
    put(o, "sessions_measured", json_integer(v->sessions_measured), &bad);
    put(o, "sessions_planned", json_integer(v->sessions_planned), &bad);
    put(o, "partial", json_boolean(v->partial), &bad);
    put(o, "stopped", jstr(v->stopped), &bad);
    put(o, "required", channel_list(v->required), &bad);
    put(o, "summary", jstr(v->summary), &bad);
    LG_ASSERT(v->n_channels >= 0 && v->n_channels <= RPT_NCHANNELS && "verdict channel count");
    for (int i = 0; i < v->n_channels; i++) {
        const struct rpt_channel_verdict *cv = &v->channels[i];
        json_t *e = json_object();
        if (!e) {
            bad++;
            break;
        }
        put(e, "channel", json_string(rpt_channel_name(cv->channel)), &bad);
        put(e, "status", json_string(rpt_status_name(cv->status)), &bad);
        put(e, "figure", jnum(cv->figure), &bad);
        put(e, "budget", jnum(cv->budget), &bad);
        put(e, "slope", jnum(cv->slope), &bad);
        put(e, "slope_lo", jnum(cv->slope_lo), &bad);
        put(e, "slope_hi", jnum(cv->slope_hi), &bad);
        put(e, "shift", jnum(cv->shift), &bad);
        put(e, "required", json_boolean(cv->required), &bad);
        put(e, "why", jstr(cv->why), &bad);
        if (json_array_append_new(a, e) != 0) bad++;
    }
    put(o, "channels", a, &bad);
    a = NULL;
cleanup:
    json_decref(a);
    return finish(o, bad);
}
