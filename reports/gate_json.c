/* gate_json.c — the gate's members of the results file (rpt_gate.h): per session its class peaks
 * and what suppression rules took; in the verdict line the gate itself. Strict when read, like
 * the rest of the file: a wrong type, a string too long for its field or an unknown status is
 * LG_EFORMAT naming file, line and member. */
#include <stdlib.h>
#include <string.h>

#include "rpt_gate.h"

/* ---- writing ------------------------------------------------------------------------------ */

static json_t *jint_or_null(int64_t v) { return v == RPT_NONE ? json_null() : json_integer(v); }

static json_t *peak_tags(const struct rpt_peak_tag *t, int n)
{
    json_t *a = json_array();
    for (int k = 0; a && k < n; k++)
        if (json_array_append_new(a, json_pack("{s:o,s:I}", "tag", rpt_json_str(t[k].tag), "bytes",
                                               (json_int_t)t[k].bytes)) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *peaks_json(const struct rpt_session *s)
{
    json_t *a = json_array();
    for (int i = 0; a && i < s->n_peaks; i++) {
        const struct rpt_class_peak *p = &s->peaks[i];
        if (json_array_append_new(a, json_pack("{s:o,s:s,s:I,s:o}", "class", rpt_json_str(p->cls),
                                               "space", p->space, "bytes", (json_int_t)p->bytes,
                                               "tags", peak_tags(p->tags, p->n_tags))) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *suppressed_json(const struct rpt_session *s)
{
    json_t *a = json_array();
    for (int i = 0; a && i < s->n_suppressed; i++) {
        const struct rpt_suppressed *x = &s->suppressed[i];
        json_t *e = json_pack("{s:o,s:s,s:b,s:I,s:I,s:i,s:b}", "name", rpt_json_str(x->name),
                              "space", x->space, "object", x->object, "bytes", (json_int_t)x->bytes,
                              "over", (json_int_t)x->over, "rule", x->rule, "expired", x->expired);
        if (json_array_append_new(a, e) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Sets o[key] to v, counting a failure (v NULL included) in *bad. */
static void put(json_t *o, const char *key, json_t *v, int *bad)
{
    if (!v || json_object_set_new(o, key, v) != 0) ++*bad;
}

void rpt_enc_peaks(json_t *o, const char *key, const void *base, int *bad)
{
    const struct rpt_session *s = base;
    if (s->peaks_measured) put(o, key, peaks_json(s), bad);
}

void rpt_enc_suppressed(json_t *o, const char *key, const void *base, int *bad)
{
    const struct rpt_session *s = base;
    if (s->n_suppressed) put(o, key, suppressed_json(s), bad);
}

void rpt_enc_suppressed_since(json_t *o, const char *key, const void *base, int *bad)
{
    const struct rpt_session *s = base;
    if (s->suppressed_since[0] || s->suppressed_since[1])
        put(o, key,
            json_pack("{s:I,s:I}", "host", (json_int_t)s->suppressed_since[0], "device",
                      (json_int_t)s->suppressed_since[1]),
            bad);
}

static json_t *rules_json(const struct rpt_suppressions *sup)
{
    json_t *a = json_array();
    for (int i = 0; a && i < sup->n; i++) {
        const struct rpt_rule *r = &sup->rules[i];
        json_t *e =
            json_pack("{s:i,s:s,s:o,s:o,s:s,s:b,s:o}", "line", r->line, "kind",
                      r->kind == RPT_RULE_TAG ? "tag" : "frame", "glob", rpt_json_str(r->glob),
                      "allow", jint_or_null(r->allow < 0 ? RPT_NONE : r->allow), "expires",
                      r->expires, "expired", r->expired, "reason", rpt_json_str(r->reason));
        if (json_array_append_new(a, e) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return json_pack("{s:o,s:s,s:o}", "file", rpt_json_str(sup->file), "today", sup->today, "rules",
                     a);
}

static json_t *checks_json(const struct rpt_gate *g)
{
    json_t *a = json_array();
    for (int i = 0; a && i < g->n_peaks; i++) {
        const struct rpt_peak_check *pc = &g->peaks[i];
        json_t *e = json_pack("{s:o,s:s,s:I,s:s,s:o,s:i,s:i,s:i,s:o,s:o}", "class",
                              rpt_json_str(pc->budget.cls), "space", pc->budget.space, "limit",
                              (json_int_t)pc->budget.limit, "status", rpt_status_name(pc->status),
                              "peak", jint_or_null(pc->peak), "session", pc->session, "over",
                              pc->over, "measured", pc->measured, "tags",
                              peak_tags(pc->tags, pc->n_tags), "why", rpt_json_str(pc->why));
        if (json_array_append_new(a, e) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static const char *const results[] = {"same", "regressed", "", "inconclusive"};

json_t *rpt_gate_to_json(const struct rpt_gate *g)
{
    json_t *o = json_pack("{s:s,s:i}", "own_status", rpt_status_name(g->own_status),
                          "own_exit_code", g->own_exit);
    int bad = !o;
    if (!bad && g->has_rules) bad |= json_object_set_new(o, "suppressions", rules_json(&g->rules));
    if (!bad && g->n_peaks) bad |= json_object_set_new(o, "peaks", checks_json(g));
    if (!bad && g->has_baseline) {
        const struct rpt_baseline_check *b = &g->baseline;
        bad |= json_object_set_new(o, "baseline",
                                   json_pack("{s:o,s:o,s:s,s:o}", "source", rpt_json_str(b->source),
                                             "commit", rpt_json_str(b->commit), "result",
                                             b->result < 0 ? "none" : results[b->result], "why",
                                             rpt_json_str(b->why)));
    }
    if (bad) json_decref(o);
    return bad ? NULL : o;
}

/* ---- reading ------------------------------------------------------------------------------ */

static int unpack_fail(const struct rpt_dec *d, const char *where, const json_error_t *e)
{
    return lg_fail(LG_EFORMAT, "%s:%d: %s: %s", d->path, d->line, where, e->text);
}

static int copy(const struct rpt_dec *d, const char *where, const char *key, const char *v,
                char *dst, size_t size)
{
    if (lg_strlcpy(dst, v, size))
        return lg_fail(LG_EFORMAT, "%s:%d: %s.%s: string longer than %zu bytes", d->path, d->line,
                       where, key, size - 1);
    return LG_OK;
}

static int space_of(const struct rpt_dec *d, const char *where, const char *v, char *dst,
                    bool empty_ok)
{
    if (strcmp(v, "host") && strcmp(v, "device") && !(empty_ok && !*v))
        return lg_fail(LG_EFORMAT, "%s:%d: %s.space: '%s' is not host or device", d->path, d->line,
                       where, v);
    lg_strlcpy(dst, v, LG_MAX_SPACE);
    return LG_OK;
}

static int tags_from(const struct rpt_dec *d, const char *where, json_t *a, struct rpt_peak_tag *t,
                     int *n)
{
    json_t *e;
    size_t k;
    json_error_t err;
    *n = 0;
    if (!json_is_array(a) || json_array_size(a) > RPT_PEAK_TAGS)
        return lg_fail(LG_EFORMAT, "%s:%d: %s.tags: expected an array of at most %d", d->path,
                       d->line, where, RPT_PEAK_TAGS);
    json_array_foreach(a, k, e)
    {
        const char *tag;
        json_int_t bytes;
        if (json_unpack_ex(e, &err, JSON_STRICT, "{s:s,s:I}", "tag", &tag, "bytes", &bytes))
            return unpack_fail(d, where, &err);
        int rc = copy(d, where, "tag", tag, t[k].tag, sizeof t[k].tag);
        if (rc != LG_OK) return rc;
        t[k].bytes = bytes;
        *n = (int)k + 1;
    }
    return LG_OK;
}

static int peak_from(const struct rpt_dec *d, const char *where, json_t *e,
                     struct rpt_class_peak *p)
{
    const char *cls, *space;
    json_int_t bytes;
    json_t *tags;
    json_error_t err;
    if (json_unpack_ex(e, &err, 0, "{s:s,s:s,s:I,s:o}", "class", &cls, "space", &space, "bytes",
                       &bytes, "tags", &tags))
        return unpack_fail(d, where, &err);
    int rc = copy(d, where, "class", cls, p->cls, sizeof p->cls);
    if (rc == LG_OK) rc = space_of(d, where, space, p->space, false);
    p->bytes = bytes;
    return rc == LG_OK ? tags_from(d, where, tags, p->tags, &p->n_tags) : rc;
}

static int suppressed_from(const struct rpt_dec *d, const char *where, json_t *e,
                           struct rpt_suppressed *x)
{
    const char *name, *space;
    json_int_t bytes, over;
    int object, expired;
    json_error_t err;
    if (json_unpack_ex(e, &err, 0, "{s:s,s:s,s:b,s:I,s:I,s:i,s:b}", "name", &name, "space", &space,
                       "object", &object, "bytes", &bytes, "over", &over, "rule", &x->rule,
                       "expired", &expired))
        return unpack_fail(d, where, &err);
    x->object = object;
    x->expired = expired;
    x->bytes = bytes;
    x->over = over;
    if (bytes < 0 || over < 0)
        return lg_fail(LG_EFORMAT, "%s:%d: %s: negative bytes", d->path, d->line, where);
    int rc = copy(d, where, "name", name, x->name, sizeof x->name);
    return rc == LG_OK ? space_of(d, where, space, x->space, true) : rc;
}

/* An optional array member of o decoded element by element into a new array of elem bytes. */
static int array_of(const struct rpt_dec *d, json_t *o, const char *key, size_t elem, void **out,
                    int *n, int (*one)(const struct rpt_dec *, const char *, json_t *, void *))
{
    json_t *a = json_object_get(o, key), *e;
    size_t k;
    if (!a) return LG_OK;
    if (!json_is_array(a))
        return lg_fail(LG_EFORMAT, "%s:%d: session.%s: expected an array", d->path, d->line, key);
    char *v = calloc(json_array_size(a) + 1, elem);
    if (!v) return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    *out = v;
    json_array_foreach(a, k, e)
    {
        char where[64];
        snprintf(where, sizeof where, "session.%s[%zu]", key, k);
        int rc = one(d, where, e, v + k * elem);
        if (rc != LG_OK) return rc;
        *n = (int)k + 1;
    }
    return LG_OK;
}

static int one_peak(const struct rpt_dec *d, const char *w, json_t *e, void *p)
{
    return peak_from(d, w, e, p);
}

static int one_suppressed(const struct rpt_dec *d, const char *w, json_t *e, void *x)
{
    return suppressed_from(d, w, e, x);
}

int rpt_dec_peaks(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *base)
{
    struct rpt_session *s = base;
    (void)w;
    s->peaks_measured = json_object_get(o, key) != NULL;
    return array_of(d, o, key, sizeof *s->peaks, (void **)&s->peaks, &s->n_peaks, one_peak);
}

int rpt_dec_suppressed(const struct rpt_dec *d, const char *w, json_t *o, const char *key,
                       void *base)
{
    struct rpt_session *s = base;
    (void)w;
    return array_of(d, o, key, sizeof *s->suppressed, (void **)&s->suppressed, &s->n_suppressed,
                    one_suppressed);
}

int rpt_dec_suppressed_since(const struct rpt_dec *d, const char *w, json_t *o, const char *key,
                             void *base)
{
    struct rpt_session *s = base;
    json_t *since = json_object_get(o, key);
    json_int_t host = 0, dev = 0;
    json_error_t err;
    (void)w;
    if (since && json_unpack_ex(since, &err, 0, "{s:I,s:I}", "host", &host, "device", &dev))
        return unpack_fail(d, "session.suppressed_since", &err);
    if (host < 0 || dev < 0)
        return lg_fail(LG_EFORMAT, "%s:%d: session.suppressed_since: negative bytes", d->path,
                       d->line);
    s->suppressed_since[0] = host;
    s->suppressed_since[1] = dev;
    return LG_OK;
}

void rpt_session_gate_free(struct rpt_session *s)
{
    free(s->peaks);
    free(s->suppressed);
    s->peaks = NULL;
    s->suppressed = NULL;
    s->n_peaks = s->n_suppressed = 0;
}

static int rule_from(const struct rpt_dec *d, const char *where, json_t *e, struct rpt_rule *r)
{
    const char *kind, *glob, *expires, *reason;
    json_t *allow;
    int expired;
    json_error_t err;
    if (json_unpack_ex(e, &err, 0, "{s:i,s:s,s:s,s:o,s:s,s:b,s:s}", "line", &r->line, "kind", &kind,
                       "glob", &glob, "allow", &allow, "expires", &expires, "expired", &expired,
                       "reason", &reason))
        return unpack_fail(d, where, &err);
    r->kind = !strcmp(kind, "frame") ? RPT_RULE_FRAME : RPT_RULE_TAG;
    r->expired = expired;
    r->allow = json_is_integer(allow) ? json_integer_value(allow) : -1;
    if (strcmp(kind, "tag") && strcmp(kind, "frame"))
        return lg_fail(LG_EFORMAT, "%s:%d: %s.kind: not tag or frame", d->path, d->line, where);
    if (!json_is_null(allow) && (!json_is_integer(allow) || r->allow <= 0))
        return lg_fail(LG_EFORMAT, "%s:%d: %s.allow: expected a positive integer or null", d->path,
                       d->line, where);
    int rc = copy(d, where, "glob", glob, r->glob, sizeof r->glob);
    if (rc == LG_OK) rc = copy(d, where, "expires", expires, r->expires, sizeof r->expires);
    return rc == LG_OK ? copy(d, where, "reason", reason, r->reason, sizeof r->reason) : rc;
}

static int rules_from(const struct rpt_dec *d, json_t *o, struct rpt_gate *g)
{
    const char *file, *today;
    json_t *rules, *e;
    json_error_t err;
    size_t k;
    if (json_unpack_ex(o, &err, 0, "{s:s,s:s,s:o}", "file", &file, "today", &today, "rules",
                       &rules))
        return unpack_fail(d, "verdict.gate.suppressions", &err);
    if (!json_is_array(rules) || json_array_size(rules) > RPT_MAX_RULES)
        return lg_fail(LG_EFORMAT, "%s:%d: verdict.gate.suppressions.rules: expected at most %d",
                       d->path, d->line, RPT_MAX_RULES);
    g->has_rules = true;
    int rc =
        copy(d, "verdict.gate.suppressions", "file", file, g->rules.file, sizeof g->rules.file);
    if (rc == LG_OK)
        rc = copy(d, "verdict.gate.suppressions", "today", today, g->rules.today,
                  sizeof g->rules.today);
    json_array_foreach(rules, k, e)
    {
        char where[64];
        snprintf(where, sizeof where, "verdict.gate.suppressions.rules[%zu]", k);
        if (rc == LG_OK) rc = rule_from(d, where, e, &g->rules.rules[k]);
        if (rc == LG_OK) g->rules.n = (int)k + 1;
    }
    return rc;
}

static int status_of(const struct rpt_dec *d, const char *where, const char *name,
                     enum rpt_status *out)
{
    int st = rpt_status_from_name(name);
    if (st < 0)
        return lg_fail(LG_EFORMAT, "%s:%d: %s: unknown status '%s'", d->path, d->line, where, name);
    *out = (enum rpt_status)st;
    return LG_OK;
}

static int check_from(const struct rpt_dec *d, const char *where, json_t *e,
                      struct rpt_peak_check *pc)
{
    const char *cls, *space, *status, *why;
    json_int_t limit;
    json_t *peak, *tags;
    json_error_t err;
    if (json_unpack_ex(e, &err, 0, "{s:s,s:s,s:I,s:s,s:o,s:i,s:i,s:i,s:o,s:s}", "class", &cls,
                       "space", &space, "limit", &limit, "status", &status, "peak", &peak,
                       "session", &pc->session, "over", &pc->over, "measured", &pc->measured,
                       "tags", &tags, "why", &why))
        return unpack_fail(d, where, &err);
    pc->budget.limit = limit;
    pc->peak = json_is_integer(peak) ? json_integer_value(peak) : RPT_NONE;
    int rc = copy(d, where, "class", cls, pc->budget.cls, sizeof pc->budget.cls);
    if (rc == LG_OK) rc = space_of(d, where, space, pc->budget.space, false);
    if (rc == LG_OK) rc = status_of(d, where, status, &pc->status);
    if (rc == LG_OK) rc = copy(d, where, "why", why, pc->why, sizeof pc->why);
    return rc == LG_OK ? tags_from(d, where, tags, pc->tags, &pc->n_tags) : rc;
}

static int baseline_from(const struct rpt_dec *d, json_t *o, struct rpt_gate *g)
{
    const char *where = "verdict.gate.baseline", *source, *commit, *result, *why;
    json_error_t err;
    struct rpt_baseline_check *b = &g->baseline;
    if (json_unpack_ex(o, &err, 0, "{s:s,s:s,s:s,s:s}", "source", &source, "commit", &commit,
                       "result", &result, "why", &why))
        return unpack_fail(d, where, &err);
    g->has_baseline = true;
    b->result = -2;
    for (int k = 0; k < (int)LG_ARRAY_LEN(results); k++)
        if (results[k][0] && !strcmp(result, results[k])) b->result = k;
    if (!strcmp(result, "none")) b->result = -1;
    if (b->result == -2)
        return lg_fail(LG_EFORMAT,
                       "%s:%d: %s.result: '%s' is not same, regressed, inconclusive "
                       "or none",
                       d->path, d->line, where, result);
    int rc = copy(d, where, "source", source, b->source, sizeof b->source);
    if (rc == LG_OK) rc = copy(d, where, "commit", commit, b->commit, sizeof b->commit);
    return rc == LG_OK ? copy(d, where, "why", why, b->why, sizeof b->why) : rc;
}

static int gate_from(const struct rpt_dec *d, json_t *o, struct rpt_gate *g)
{
    const char *own;
    json_t *sup = NULL, *peaks = NULL, *base = NULL, *e;
    json_error_t err;
    size_t k;
    if (json_unpack_ex(o, &err, 0, "{s:s,s:i,s?o,s?o,s?o}", "own_status", &own, "own_exit_code",
                       &g->own_exit, "suppressions", &sup, "peaks", &peaks, "baseline", &base))
        return unpack_fail(d, "verdict.gate", &err);
    int rc = status_of(d, "verdict.gate.own_status", own, &g->own_status);
    if (rc == LG_OK && sup) rc = rules_from(d, sup, g);
    if (rc == LG_OK && base) rc = baseline_from(d, base, g);
    if (rc == LG_OK && peaks &&
        (!json_is_array(peaks) || json_array_size(peaks) > RPT_MAX_PEAK_BUDGETS))
        rc = lg_fail(LG_EFORMAT, "%s:%d: verdict.gate.peaks: expected an array of at most %d",
                     d->path, d->line, RPT_MAX_PEAK_BUDGETS);
    json_array_foreach(peaks, k, e)
    {
        char where[48];
        snprintf(where, sizeof where, "verdict.gate.peaks[%zu]", k);
        if (rc == LG_OK) rc = check_from(d, where, e, &g->peaks[k]);
        if (rc == LG_OK) g->n_peaks = (int)k + 1;
    }
    return rc;
}

int rpt_gate_from_json(const struct rpt_dec *d, json_t *o, struct rpt_gate **out)
{
    json_t *g = json_object_get(o, "gate");
    *out = NULL;
    if (!g || json_is_null(g)) return LG_OK;
    struct rpt_gate *v = calloc(1, sizeof *v);
    if (!v) return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    v->baseline.result = -1;
    int rc = gate_from(d, g, v);
    if (rc != LG_OK) {
        free(v);
        return rc;
    }
    *out = v;
    return LG_OK;
}
