/* data_csv_config.c — the JSON column-role config of a CSV file (keys: see data.h). */
#include <jansson.h>
#include <string.h>

#include "data_impl.h"

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* Key `key` of object o into *v, of JSON type `type` (JSON_REAL: any number), which `what`
 * names ("a string"): LG_OK with *v NULL when it is absent and `opt`, LG_EFORMAT when it is
 * missing or of another type. `in` starts the key in messages ("static[2]: "). */
static int get_key(json_t *o, const char *key, bool opt, json_type type, const char *what,
                   json_t **v, const char *name, const char *in)
{
    *v = json_object_get(o, key);
    if (!*v && opt) return LG_OK;
    if (!*v) return lg_fail(LG_EFORMAT, "%s: %skey \"%s\" is missing", name, in, key);
    if (type == JSON_REAL ? !json_is_number(*v) : json_typeof(*v) != type)
        return lg_fail(LG_EFORMAT, "%s: %skey \"%s\" must be %s, not %s", name, in, key, what,
                       type_name(*v));
    return LG_OK;
}

/* Copies string key `key` of object o (required unless `opt`) into dst. */
static int get_str(json_t *o, const char *key, bool opt, char *dst, size_t size, const char *name,
                   const char *in)
{
    json_t *v;
    int rc = get_key(o, key, opt, JSON_STRING, "a string", &v, name, in);
    if (rc || !v) return rc;
    const char *s = json_string_value(v);
    if (!s[0]) return lg_fail(LG_EFORMAT, "%s: %skey \"%s\" is an empty string", name, in, key);
    if (strlen(s) != json_string_length(v) || lg_strlcpy(dst, s, size))
        return lg_fail(LG_EFORMAT,
                       "%s: %skey \"%s\": \"%.40s...\" is too long or holds a NUL "
                       "(at most %zu bytes)",
                       name, in, key, s, size - 1);
    return LG_OK;
}

/* Reads integer key `key` into *out when present (required unless `opt`), within lo..hi. */
static int get_int(json_t *o, const char *key, bool opt, int64_t lo, int64_t hi, int64_t *out,
                   const char *name, const char *in)
{
    json_t *v;
    int rc = get_key(o, key, opt, JSON_INTEGER, "an integer", &v, name, in);
    if (rc || !v) return rc;
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return lg_fail(LG_EFORMAT, "%s: %skey \"%s\" = %lld is outside %lld..%lld", name, in, key,
                       (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return LG_OK;
}

static int get_num(json_t *o, const char *key, double lo, double hi, double *out, const char *name)
{
    json_t *v;
    int rc = get_key(o, key, true, JSON_REAL, "a number", &v, name, "");
    if (rc || !v) return rc;
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi))
        return lg_fail(LG_EFORMAT, "%s: key \"%s\" = %g is outside %g..%g", name, key, x, lo, hi);
    *out = x;
    return LG_OK;
}

/* Rejects keys of object o that are not in the NULL-terminated list. */
static int only_keys(json_t *o, const char *const *known, const char *name, const char *in)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        int ok = 0;
        for (const char *const *k = known; *k && !ok; k++) ok = strcmp(key, *k) == 0;
        if (!ok) return lg_fail(LG_EFORMAT, "%s: %sunknown key \"%.60s\"", name, in, key);
    }
    return LG_OK;
}

/* One entry of "static", "observed" or "known": appends it to r (in config order). */
static int add_var(struct data_csv_roles *r, json_t *e, const char *list, size_t i,
                   enum tft_role role, const char *name)
{
    static const char *const keys[] = {"name", "kind", "cardinality", "column", NULL};
    char in[64], kind[16] = "";
    int rc;
    snprintf(in, sizeof in, "%s[%zu]: ", list, i);
    if (!json_is_object(e))
        return lg_fail(LG_EFORMAT, "%s: %smust be an object {\"name\", \"kind\"}, not %s", name, in,
                       type_name(e));
    if (r->cfg.n_vars >= TFT_MAX_VARS)
        return lg_fail(LG_EFORMAT, "%s: %smore than %d variables", name, in, TFT_MAX_VARS - 1);
    struct tft_var *v = &r->cfg.vars[r->cfg.n_vars];
    char *col = r->column[r->cfg.n_vars];
    int64_t card = 0;
    if ((rc = only_keys(e, keys, name, in)) ||
        (rc = get_str(e, "name", false, v->name, sizeof v->name, name, in)) ||
        (rc = get_str(e, "kind", false, kind, sizeof kind, name, in)) ||
        (rc = get_int(e, "cardinality", true, 1, 100000000, &card, name, in)) ||
        (rc = get_str(e, "column", true, col, DATA_COL_NAME, name, in)))
        return rc;
    if (strcmp(kind, "real") && strcmp(kind, "categorical"))
        return lg_fail(LG_EFORMAT, "%s: %s\"kind\" must be \"real\" or \"categorical\", not \"%s\"",
                       name, in, kind);
    v->kind = strcmp(kind, "real") ? TFT_CAT : TFT_REAL;
    v->role = role;
    if (v->kind == TFT_REAL && card)
        return lg_fail(LG_EFORMAT, "%s: %sa real variable has no \"cardinality\"", name, in);
    if (role == TFT_OBSERVED && v->kind != TFT_REAL)
        return lg_fail(LG_EFORMAT, "%s: %sobserved variables must be real", name, in);
    v->cardinality = (int)card;
    if (!col[0]) lg_strlcpy(col, v->name, DATA_COL_NAME);
    r->cfg.n_vars++;
    return LG_OK;
}

/* Appends the entries of list `key` of kind `kind` (-1: any) in their order. */
static int add_list(struct data_csv_roles *r, json_t *o, const char *key, enum tft_role role,
                    int kind, bool required, const char *name)
{
    json_t *a, *e;
    size_t i;
    int rc = get_key(o, key, !required, JSON_ARRAY, "an array", &a, name, "");
    if (rc || !a) return rc;
    if (required && json_array_size(a) == 0)
        return lg_fail(LG_EFORMAT, "%s: key \"%s\" needs at least one variable", name, key);
    json_array_foreach(a, i, e)
    {
        /* the kind decides the pass; a malformed entry is reported by the first pass */
        const char *k = json_string_value(json_object_get(e, "kind"));
        int is_cat = k && strcmp(k, "categorical") == 0;
        if (kind >= 0 && json_is_object(e) && k && is_cat != (kind == TFT_CAT)) continue;
        rc = add_var(r, e, key, i, role, name);
        if (rc != LG_OK) return rc;
    }
    return LG_OK;
}

int data_csv_roles_parse(struct data_csv_roles *r, const char *json, size_t len, const char *name)
{
    static const char *const keys[] = {
        "id",        "time",        "target", "static", "observed",      "known", "hidden",
        "n_head",    "lstm_layers", "T_enc",  "T_dec",  "quantiles",     "name",  "season",
        "val_steps", "dropout",     "batch",  "lr",     "max_grad_norm", NULL};
    json_error_t err;
    int rc = LG_OK;
    memset(r, 0, sizeof *r);
    if (len >= 3 && !memcmp(json, "\xEF\xBB\xBF", 3)) { /* a UTF-8 BOM, as the CSV loader allows */
        json += 3;
        len -= 3;
    }
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
    if (!o)
        return lg_fail(LG_EFORMAT, "%s:%d:%d: bad JSON: %s", name, err.line, err.column, err.text);
    struct tft_config *c = &r->cfg;
    int64_t hidden = 0, heads = 0, layers = 0, te = 0, td = 0, season = 1, batch = 8, val = -1;
    double dropout = 0.1, lr = 1e-3, clip = 1.0;
    if (!json_is_object(o)) {
        rc =
            lg_fail(LG_EFORMAT, "%s: the config must be a JSON object, not %s", name, type_name(o));
        goto cleanup;
    }
    lg_strlcpy(c->preset, "csv", sizeof c->preset);
    if ((rc = only_keys(o, keys, name, "")) ||
        (rc = get_str(o, "id", false, r->id, sizeof r->id, name, "")) ||
        (rc = get_str(o, "time", false, r->time, sizeof r->time, name, "")) ||
        (rc = get_str(o, "name", true, c->preset, sizeof c->preset, name, "")) ||
        (rc = get_int(o, "hidden", false, 1, 65536, &hidden, name, "")) ||
        (rc = get_int(o, "n_head", false, 1, 1024, &heads, name, "")) ||
        (rc = get_int(o, "lstm_layers", false, 1, 8, &layers, name, "")) ||
        (rc = get_int(o, "T_enc", false, 1, 50000, &te, name, "")) ||
        (rc = get_int(o, "T_dec", false, 1, 50000, &td, name, "")) ||
        (rc = get_int(o, "season", true, 1, te, &season, name, "")) ||
        (rc = get_int(o, "val_steps", true, te + td, 100000000, &val, name, "")) ||
        (rc = get_int(o, "batch", true, 1, 1000000, &batch, name, "")) ||
        (rc = get_num(o, "dropout", 0.0, 0.99, &dropout, name)) ||
        (rc = get_num(o, "lr", 0.0, 10.0, &lr, name)) ||
        (rc = get_num(o, "max_grad_norm", 0.0, 1e9, &clip, name)))
        goto cleanup;
    c->hidden = (int)hidden, c->n_head = (int)heads, c->lstm_layers = (int)layers;
    c->T_enc = (int)te, c->T_dec = (int)td, c->batch = (int)batch;
    c->dropout = (float)dropout, c->lr = lr, c->max_grad_norm = clip;
    r->season = (int)season;
    r->val_steps = val < 0 ? te + td : val;

    json_t *q = json_object_get(o, "quantiles"), *qv;
    size_t i;
    if (!q) {
        c->n_quantiles = 3;
        c->quantiles[0] = 0.1f, c->quantiles[1] = 0.5f, c->quantiles[2] = 0.9f;
    } else if (!json_is_array(q) || json_array_size(q) < 1 ||
               json_array_size(q) > TFT_MAX_QUANTILES) {
        rc = lg_fail(LG_EFORMAT, "%s: key \"quantiles\" must be an array of 1..%d numbers", name,
                     TFT_MAX_QUANTILES);
        goto cleanup;
    } else {
        json_array_foreach(q, i, qv)
        {
            double x = json_number_value(qv);
            if (!json_is_number(qv) || !(x > 0.0 && x < 1.0)) {
                rc = lg_fail(LG_EFORMAT, "%s: quantiles[%zu] must be a number in (0, 1)", name, i);
                goto cleanup;
            }
            c->quantiles[c->n_quantiles++] = (float)x;
        }
    }

    /* the spec's order: static categoricals, static reals, target, observed, known cat, real */
    char target[DATA_COL_NAME] = "";
    if ((rc = get_str(o, "target", false, target, sizeof target, name, "")) ||
        (rc = add_list(r, o, "static", TFT_STATIC, TFT_CAT, true, name)) ||
        (rc = add_list(r, o, "static", TFT_STATIC, TFT_REAL, true, name)))
        goto cleanup;
    if (c->n_vars >= TFT_MAX_VARS || lg_strlcpy(c->vars[c->n_vars].name, target, TFT_VAR_NAME)) {
        rc =
            lg_fail(LG_EFORMAT, "%s: key \"target\": name \"%.60s\" is too long (at most %d bytes)",
                    name, target, TFT_VAR_NAME - 1);
        goto cleanup;
    }
    c->vars[c->n_vars].kind = TFT_REAL;
    c->vars[c->n_vars].role = TFT_OBSERVED;
    lg_strlcpy(r->column[c->n_vars++], target, DATA_COL_NAME);
    if ((rc = add_list(r, o, "observed", TFT_OBSERVED, -1, false, name)) ||
        (rc = add_list(r, o, "known", TFT_KNOWN, TFT_CAT, true, name)) ||
        (rc = add_list(r, o, "known", TFT_KNOWN, TFT_REAL, true, name)))
        goto cleanup;

    /* check what the config validator checks now, with a stand-in for inferred cardinalities */
    struct tft_config probe = *c;
    for (int v = 0; v < probe.n_vars; v++)
        if (probe.vars[v].kind == TFT_CAT && !probe.vars[v].cardinality)
            probe.vars[v].cardinality = 1;
    if ((rc = tft_config_validate(&probe)) != LG_OK) {
        rc = lg_fail_ctx(LG_EFORMAT, "%s: ", name);
        goto cleanup;
    }
cleanup:
    json_decref(o);
    return rc;
}
