/* stacks.c — untagged growth by allocation stack in the results: its JSON members, the
 * uncertainty of its estimates, and which session holds the run's attribution. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results_impl.h"
#include "rpt_stacks.h"

void rpt_alloc_interval(const struct rpt_alloc_stack *a, int64_t prof_sample, double *lo,
                        double *hi)
{
    /* An object of size s is in a profile with p = 1 - exp(-s/R): of n objects, k ~ Binomial(n, p)
     * are sampled, and n is estimated as k/p (the mean object size stands in for s). The n for
     * which k is within z standard deviations, (k - n p)^2 = z^2 n p (1 - p), are the roots of
     * p^2 n^2 - (2 k p + z^2 p (1 - p)) n + k^2 = 0; the bytes scale with n. */
    const double z = 1.96;
    *lo = *hi = (double)a->bytes;
    if (a->bytes <= 0 || prof_sample <= 0) return;
    if (prof_sample == 1) return; /* every allocation recorded (a session profiled whole): exact */
    double mean = a->objects > 0 ? (double)a->bytes / (double)a->objects : (double)a->bytes;
    double p = 1.0 - exp(-mean / (double)prof_sample);
    if (p <= 0 || p >= 1) return; /* objects far larger than R are all sampled: exact */
    if (a->samples <= 0) {
        *lo = 0;
        *hi = 2.0 * (double)a->bytes;
        return;
    }
    double k = (double)a->samples, b = 2 * k * p + z * z * p * (1 - p);
    double disc = sqrt(fmax(b * b - 4 * p * p * k * k, 0));
    double n_est = k / p, n_lo = (b - disc) / (2 * p * p), n_hi = (b + disc) / (2 * p * p);
    *lo = (double)a->bytes * n_lo / n_est;
    *hi = (double)a->bytes * n_hi / n_est;
}

const struct rpt_session *rpt_alloc_latest(const struct rpt_results *r)
{
    for (int i = r->n_sessions - 1; i >= 0; i--)
        if (!r->sessions[i].warmup && r->sessions[i].alloc_sessions > 0) return &r->sessions[i];
    return NULL;
}

void rpt_frame_function(const char *frame, size_t len, char *buf, size_t size)
{
    /* "fn (file:line)": the function is what comes before the last " (" */
    size_t n = len;
    for (size_t i = len; i > 1; i--)
        if (frame[i - 1] == '(' && frame[i - 2] == ' ') {
            n = i - 2;
            break;
        }
    if (n >= size) n = size - 1;
    memcpy(buf, frame, n);
    buf[n] = '\0';
}

/* ---- JSON ---------------------------------------------------------------------------------- */

json_t *rpt_alloc_stacks_to_json(const struct rpt_session *s)
{
    if (s->alloc_sessions <= 0) return json_null();
    json_t *o = json_object(), *a = json_array();
    int bad = !o || !a;
    for (int i = 0; !bad && i < s->n_alloc_stacks; i++) {
        const struct rpt_alloc_stack *st = &s->alloc_stacks[i];
        json_t *e = json_object();
        bad = !e || json_object_set_new(e, "bytes", json_integer(st->bytes)) ||
              json_object_set_new(e, "objects", json_integer(st->objects)) ||
              json_object_set_new(e, "samples", json_integer(st->samples)) ||
              json_object_set_new(e, "frames", rpt_json_frames(st->frames)) ||
              json_array_append_new(a, e);
    }
    if (!bad)
        bad = json_object_set_new(o, "base", json_integer(s->alloc_base)) ||
              json_object_set_new(o, "sessions", json_integer(s->alloc_sessions)) ||
              (s->alloc_sample > 0 &&
               json_object_set_new(o, "sample", json_integer(s->alloc_sample))) ||
              json_object_set_new(o, "stacks", a);
    else
        json_decref(a);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int bad_member(const struct rpt_dec *d, const char *where, const char *what)
{
    return lg_fail(LG_EFORMAT, "%s:%d: %s: %s", d->path, d->line, where, what);
}

static int get_count(const struct rpt_dec *d, json_t *o, const char *key, const char *where,
                     int64_t lo, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    char w[96];
    snprintf(w, sizeof w, "%s.%s", where, key);
    if (!json_is_integer(v)) return bad_member(d, w, v ? "expected an integer" : "missing");
    if (json_integer_value(v) < lo || json_integer_value(v) == RPT_NONE)
        return bad_member(d, w, "integer out of range");
    *out = json_integer_value(v);
    return LG_OK;
}

/* A frames array into one string, a frame a line (a new string the caller frees). */
static int get_frames(const struct rpt_dec *d, json_t *a, const char *where, char **out)
{
    size_t i, len = 1;
    json_t *f;
    if (!json_is_array(a)) return bad_member(d, where, "expected an array of frames");
    json_array_foreach(a, i, f)
    {
        if (!json_is_string(f)) return bad_member(d, where, "expected strings");
        len += json_string_length(f) + 1;
    }
    char *s = malloc(len), *p = s;
    if (!s) return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    json_array_foreach(a, i, f)
    {
        memcpy(p, json_string_value(f), json_string_length(f));
        p += json_string_length(f);
        *p++ = '\n';
    }
    *p = '\0';
    *out = s;
    return LG_OK;
}

int rpt_alloc_stacks_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *s)
{
    json_t *hp = json_object_get(o, "heap_profile"), *a;
    int64_t base = 0, sessions = 0, sample = 0;
    if (!hp || json_is_null(hp)) return LG_OK;
    if (!json_is_object(hp))
        return bad_member(d, "session.heap_profile", "expected an object or null");
    int rc = get_count(d, hp, "base", "session.heap_profile", 0, &base);
    if (rc == LG_OK) rc = get_count(d, hp, "sessions", "session.heap_profile", 1, &sessions);
    if (rc == LG_OK && json_object_get(hp, "sample")) /* 1.9 */
        rc = get_count(d, hp, "sample", "session.heap_profile", 1, &sample);
    if (rc != LG_OK) return rc;
    if (base > INT32_MAX || sessions > INT32_MAX)
        return bad_member(d, "session.heap_profile", "out of range");
    a = json_object_get(hp, "stacks");
    if (!json_is_array(a)) return bad_member(d, "session.heap_profile.stacks", "expected an array");
    size_t n = json_array_size(a), i;
    s->alloc_base = (int)base;
    s->alloc_sessions = (int)sessions;
    s->alloc_sample = sample;
    if (n && !(s->alloc_stacks = calloc(n, sizeof *s->alloc_stacks)))
        return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    json_t *e;
    json_array_foreach(a, i, e)
    {
        char w[64];
        snprintf(w, sizeof w, "session.heap_profile.stacks[%zu]", i);
        struct rpt_alloc_stack *st = &s->alloc_stacks[i];
        if (!json_is_object(e)) return bad_member(d, w, "expected an object");
        if ((rc = get_count(d, e, "bytes", w, 0, &st->bytes)) != LG_OK) return rc;
        if ((rc = get_count(d, e, "objects", w, INT64_MIN + 1, &st->objects)) != LG_OK) return rc;
        if ((rc = get_count(d, e, "samples", w, INT64_MIN + 1, &st->samples)) != LG_OK) return rc;
        if ((rc = get_frames(d, json_object_get(e, "frames"), w, &st->frames)) != LG_OK) return rc;
        s->n_alloc_stacks++;
    }
    return LG_OK;
}

void rpt_alloc_stacks_free(struct rpt_session *s)
{
    for (int i = 0; i < s->n_alloc_stacks; i++) free(s->alloc_stacks[i].frames);
    free(s->alloc_stacks);
    s->alloc_stacks = NULL;
    s->n_alloc_stacks = s->alloc_sessions = s->alloc_base = 0;
    s->alloc_sample = 0;
}

/* The first frame of a stack ("keep_block (step.c:17)"), or "" when not named. */
void rpt_first_frame(const char *frames, char *buf, size_t size)
{
    buf[0] = '\0';
    if (!frames || !frames[0]) return;
    size_t n = strcspn(frames, "\n");
    if (n >= size) n = size - 1;
    memcpy(buf, frames, n);
    buf[n] = '\0';
}
