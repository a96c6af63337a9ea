/* gate_json.c — the gate's members of the results file (rpt_gate.h): per session its class peaks
 * and what suppression rules took; in the verdict line the gate itself. Each member is a row of
 * a table below, written and read by results_fields.h's walkers like every other member, so
 * reading is as strict as the rest of the file (LG_EFORMAT naming file, line and member). */
#include <stdlib.h>
#include <string.h>

#include "results_fields.h"
#include "results_impl.h"

/* ---- the session's members ---------------------------------------------------------------- */

/* Sets o[key] to v, counting a failure (v NULL included) in *bad. */
static void put(json_t *o, const char *key, json_t *v, int *bad)
{
    if (!v || json_object_set_new(o, key, v) != 0) ++*bad;
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

int rpt_dec_suppressed_since(const struct rpt_dec *d, const char *w, json_t *o, const char *key,
                             void *base)
{
    struct rpt_session *s = base;
    json_t *since = json_object_get(o, key);
    json_int_t host = 0, dev = 0;
    json_error_t err;
    (void)w;
    if (since && json_unpack_ex(since, &err, 0, "{s:I,s:I}", "host", &host, "device", &dev))
        return lg_fail(LG_EFORMAT, "%s:%d: session.suppressed_since: %s", d->path, d->line,
                       err.text);
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

/* ---- the verdict's gate ------------------------------------------------------------------- */

/* A rule's allowance: bytes per session, or null for any amount (-1 in struct rpt_rule). */
static void enc_allow(json_t *o, const char *key, const void *base, int *bad)
{
    const struct rpt_rule *r = base;
    json_t *v = r->allow < 0 ? json_null() : json_integer(r->allow);
    if (!v || json_object_set_new(o, key, v) != 0) ++*bad;
}

static int dec_allow(const struct rpt_dec *d, const char *w, json_t *o, const char *key, void *base)
{
    struct rpt_rule *r = base;
    json_t *v = json_object_get(o, key);
    r->allow = -1;
    if (v && json_is_null(v)) return LG_OK;
    if (!v || !json_is_integer(v) || json_integer_value(v) <= 0)
        return lg_fail(LG_EFORMAT, "%s:%d: %s.%s: expected a positive integer or null", d->path,
                       d->line, w, key);
    r->allow = json_integer_value(v);
    return LG_OK;
}

static const char *const rule_kinds[] = {"tag", "frame", NULL}; /* enum rpt_rule_kind */
static const struct rpt_field rule_fields[] = {
    RPT_INT(struct rpt_rule, "line", line, 0, INT32_MAX),
    RPT_ENUM(struct rpt_rule, "kind", kind, rule_kinds, 0),
    RPT_STR(struct rpt_rule, "glob", glob),
    RPT_CUSTOM("allow", enc_allow, dec_allow),
    RPT_STR(struct rpt_rule, "expires", expires),
    RPT_BOOL(struct rpt_rule, "expired", expired),
    RPT_STR(struct rpt_rule, "reason", reason),
    RPT_END,
};
static const struct rpt_array rules_array =
    RPT_INLINE_ARRAY_OF(struct rpt_suppressions, rules, n, rule_fields);
static const struct rpt_field suppressions_fields[] = {
    RPT_STR(struct rpt_suppressions, "file", file),
    RPT_STR(struct rpt_suppressions, "today", today),
    RPT_ARRAY("rules", &rules_array),
    RPT_END,
};

static const struct rpt_array check_tags =
    RPT_INLINE_ARRAY_OF(struct rpt_peak_check, tags, n_tags, rpt_peak_tag_fields);
static const struct rpt_field check_fields[] = {
    RPT_STR(struct rpt_peak_check, "class", budget.cls),
    RPT_STR_ONEOF(struct rpt_peak_check, "space", budget.space, rpt_spaces),
    RPT_I64(struct rpt_peak_check, "limit", budget.limit, 0, INT64_MAX),
    RPT_FIELD(struct rpt_peak_check, "status", status, RPT_F_STATUS, 0),
    RPT_RANGED(struct rpt_peak_check, "peak", peak, RPT_F_I64, 0, INT64_MAX, RPT_NULLABLE),
    RPT_INT(struct rpt_peak_check, "session", session, -1, INT32_MAX),
    RPT_INT(struct rpt_peak_check, "over", over, 0, INT32_MAX),
    RPT_INT(struct rpt_peak_check, "measured", measured, 0, INT32_MAX),
    RPT_ARRAY("tags", &check_tags),
    RPT_STR(struct rpt_peak_check, "why", why),
    RPT_END,
};
static const struct rpt_array checks_array =
    RPT_INLINE_ARRAY_OF(struct rpt_gate, peaks, n_peaks, check_fields);

/* enum rpt_compare_result from -1 (no baseline yet); 2 is not a result */
static const char *const results[] = {"none", "same", "regressed", "", "inconclusive", NULL};
static const struct rpt_field baseline_fields[] = {
    RPT_STR(struct rpt_baseline_check, "source", source),
    RPT_STR(struct rpt_baseline_check, "commit", commit),
    RPT_ENUM(struct rpt_baseline_check, "result", result, results, -1),
    RPT_STR(struct rpt_baseline_check, "why", why),
    RPT_END,
};

static const struct rpt_field gate_fields[] = {
    RPT_FIELD(struct rpt_gate, "own_status", own_status, RPT_F_STATUS, 0),
    RPT_INT(struct rpt_gate, "own_exit_code", own_exit, 0, 255),
    RPT_OBJECT_IF(struct rpt_gate, "suppressions", rules, suppressions_fields, has_rules),
    {.key = "peaks", .kind = RPT_F_ARRAY, .flags = RPT_OMIT_EMPTY, .arr = &checks_array},
    RPT_OBJECT_IF(struct rpt_gate, "baseline", baseline, baseline_fields, has_baseline),
    RPT_END,
};

json_t *rpt_gate_to_json(const struct rpt_gate *g)
{
    json_t *o = json_object();
    int bad = !o;
    if (o) rpt_fields_put(o, gate_fields, g, &bad);
    if (bad) json_decref(o);
    return bad ? NULL : o;
}

int rpt_gate_from_json(const struct rpt_dec *d, json_t *o, struct rpt_gate **out)
{
    json_t *g = json_object_get(o, "gate");
    *out = NULL;
    if (!g || json_is_null(g)) return LG_OK;
    if (!json_is_object(g))
        return lg_fail(LG_EFORMAT, "%s:%d: verdict.gate: expected an object", d->path, d->line);
    struct rpt_gate *v = calloc(1, sizeof *v);
    if (!v) return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
    v->baseline.result = -1;
    int rc = rpt_fields_get(d, "verdict.gate", g, gate_fields, v);
    if (rc != LG_OK) {
        free(v);
        return rc;
    }
    *out = v;
    return LG_OK;
}
