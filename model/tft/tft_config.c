/* tft_config.c — presets, validation, parameter counting and JSON for the TFT config. */
#include "tft_config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *const preset_names[] = {"tiny", "electricity", "foxhunt-815", NULL};

const char *const *tft_config_preset_names(void) { return preset_names; }

/* A preset variable in spec order (cardinality 0: a real variable). */
struct preset_var {
    const char *name;
    enum tft_role role;
    int card;
};

static const struct preset_var tiny_vars[] = {
    {"series", TFT_STATIC, 10}, {"scale", TFT_STATIC, 0}, {"target", TFT_OBSERVED, 0},
    {"obs_x", TFT_OBSERVED, 0}, {"dow", TFT_KNOWN, 7},    {"time", TFT_KNOWN, 0}};
static const struct preset_var electricity_vars[] = {{"id", TFT_STATIC, 370},
                                                     {"power_usage", TFT_OBSERVED, 0},
                                                     {"hour", TFT_KNOWN, 0},
                                                     {"day_of_week", TFT_KNOWN, 0},
                                                     {"hours_from_start", TFT_KNOWN, 0}};
static const struct preset_var foxhunt_vars[] = {
    {"item", TFT_STATIC, 3600},        {"store", TFT_STATIC, 54},
    {"city", TFT_STATIC, 22},          {"state", TFT_STATIC, 16},
    {"type", TFT_STATIC, 5},           {"cluster", TFT_STATIC, 17},
    {"family", TFT_STATIC, 33},        {"class", TFT_STATIC, 337},
    {"perishable", TFT_STATIC, 0},     {"unit_sales", TFT_OBSERVED, 0},
    {"transactions", TFT_OBSERVED, 0}, {"oil", TFT_OBSERVED, 0},
    {"log_sales", TFT_OBSERVED, 0},    {"onpromotion", TFT_KNOWN, 2},
    {"day_of_week", TFT_KNOWN, 7},     {"day_of_month", TFT_KNOWN, 31},
    {"month", TFT_KNOWN, 12},          {"national_holiday", TFT_KNOWN, 2},
    {"local_holiday", TFT_KNOWN, 2},   {"days_from_start", TFT_KNOWN, 0},
    {"oil_known", TFT_KNOWN, 0}};

/* The presets, in the order of preset_names: sizes, training hyper-parameters, variables. Every
 * preset has three quantiles (0.1, 0.5, 0.9) and dropout 0.1. electricity has the reference
 * code's hyper-parameters for that data set. */
static const struct preset {
    int hidden, n_head, lstm_layers, T_enc, T_dec, batch;
    double lr, max_grad_norm;
    const struct preset_var *vars;
    size_t n_vars;
} presets[] = {
    /* H, heads, L, T_enc, T_dec, batch, lr, max_grad_norm */
    {16, 4, 1, 8, 4, 8, 3e-3, 1.0, tiny_vars, LG_ARRAY_LEN(tiny_vars)},
    {160, 4, 1, 168, 24, 64, 1e-3, 0.01, electricity_vars, LG_ARRAY_LEN(electricity_vars)},
    {1024, 16, 1, 30, 7, 4, 1e-3, 1.0, foxhunt_vars, LG_ARRAY_LEN(foxhunt_vars)},
};
_Static_assert(LG_ARRAY_LEN(presets) + 1 == LG_ARRAY_LEN(preset_names),
               "one preset a name of preset_names");

static void fill(struct tft_config *c, const char *name, const struct preset *p)
{
    memset(c, 0, sizeof *c);
    lg_strlcpy(c->preset, name, sizeof c->preset);
    c->hidden = p->hidden;
    c->n_head = p->n_head;
    c->lstm_layers = p->lstm_layers;
    c->T_enc = p->T_enc;
    c->T_dec = p->T_dec;
    c->n_quantiles = 3;
    c->quantiles[0] = 0.1f;
    c->quantiles[1] = 0.5f;
    c->quantiles[2] = 0.9f;
    c->dropout = 0.1f;
    c->batch = p->batch;
    c->lr = p->lr;
    c->max_grad_norm = p->max_grad_norm;
    LG_ASSERT(p->n_vars <= TFT_MAX_VARS && "too many preset variables");
    for (size_t i = 0; i < p->n_vars; i++) {
        struct tft_var *v = &c->vars[c->n_vars++];
        lg_strlcpy(v->name, p->vars[i].name, sizeof v->name);
        v->role = p->vars[i].role;
        v->kind = p->vars[i].card > 0 ? TFT_CAT : TFT_REAL;
        v->cardinality = p->vars[i].card;
    }
}

int tft_config_preset(struct tft_config *c, const char *name)
{
    for (size_t i = 0; i < LG_ARRAY_LEN(presets); i++)
        if (strcmp(name, preset_names[i]) == 0) {
            fill(c, name, &presets[i]);
            return tft_config_validate(c);
        }
    return lg_fail(LG_EINVAL, "unknown preset '%s' (presets: tiny, electricity, foxhunt-815)",
                   name);
}

/* Rank of a variable in spec order: statics (cat, real), observed, known (cat, real). */
static int rank(const struct tft_var *v)
{
    switch (v->role) {
    case TFT_STATIC: return v->kind == TFT_CAT ? 0 : 1;
    case TFT_OBSERVED: return 2;
    case TFT_KNOWN: return v->kind == TFT_CAT ? 3 : 4;
    }
    return 5;
}

int tft_config_validate(const struct tft_config *c)
{
    if (c->hidden <= 0 || c->n_head <= 0 || c->hidden % c->n_head != 0)
        return lg_fail(LG_EINVAL, "config: hidden %d must be a positive multiple of n_head %d",
                       c->hidden, c->n_head);
    if (c->lstm_layers < 1 || c->lstm_layers > 8)
        return lg_fail(LG_EINVAL, "config: lstm_layers %d outside 1..8", c->lstm_layers);
    if (c->T_enc < 1 || c->T_dec < 1 || c->T_enc + c->T_dec > 100000)
        return lg_fail(LG_EINVAL, "config: T_enc %d / T_dec %d must be positive", c->T_enc,
                       c->T_dec);
    if (c->n_quantiles < 1 || c->n_quantiles > TFT_MAX_QUANTILES)
        return lg_fail(LG_EINVAL, "config: %d quantiles (1..%d)", c->n_quantiles,
                       TFT_MAX_QUANTILES);
    for (int i = 0; i < c->n_quantiles; i++)
        if (!(c->quantiles[i] > 0.0f && c->quantiles[i] < 1.0f))
            return lg_fail(LG_EINVAL, "config: quantile %g outside (0, 1)", c->quantiles[i]);
    if (c->n_vars < 1 || c->n_vars > TFT_MAX_VARS)
        return lg_fail(LG_EINVAL, "config: %d variables (1..%d)", c->n_vars, TFT_MAX_VARS);
    for (int i = 0; i < c->n_vars; i++) {
        const struct tft_var *v = &c->vars[i];
        if (!v->name[0] || strchr(v->name, '.') || strchr(v->name, '/'))
            return lg_fail(LG_EINVAL,
                           "config: variable %d has an empty name or one with '.' or '/'", i);
        if (v->kind == TFT_CAT && v->cardinality < 1)
            return lg_fail(LG_EINVAL, "config: categorical %s needs a cardinality >= 1", v->name);
        if (v->kind == TFT_REAL && v->cardinality != 0)
            return lg_fail(LG_EINVAL, "config: real variable %s has a cardinality", v->name);
        if (v->role == TFT_OBSERVED && v->kind != TFT_REAL)
            return lg_fail(LG_EINVAL, "config: observed variable %s must be real", v->name);
        if (i && rank(v) < rank(&c->vars[i - 1]))
            return lg_fail(LG_EINVAL,
                           "config: variable %s out of the spec's order (statics cat/real,"
                           " observed, known cat/real)",
                           v->name);
        for (int j = 0; j < i; j++)
            if (strcmp(c->vars[j].name, v->name) == 0)
                return lg_fail(LG_EINVAL, "config: variable %s given twice", v->name);
    }
    if (tft_static_vars(c, NULL) < 1)
        return lg_fail(LG_EINVAL, "config: at least one static variable is needed");
    if (tft_observed_vars(c, NULL) < 1)
        return lg_fail(LG_EINVAL, "config: at least one observed variable (the target) is needed");
    if (tft_decoder_vars(c, NULL) < 1)
        return lg_fail(LG_EINVAL, "config: at least one known variable is needed");
    return LG_OK;
}

static int collect(const struct tft_config *c, int *idx, int roles)
{
    int n = 0;
    for (int i = 0; i < c->n_vars; i++)
        if (roles & (1 << c->vars[i].role)) {
            if (idx) idx[n] = i;
            n++;
        }
    return n;
}

int tft_static_vars(const struct tft_config *c, int *idx)
{
    return collect(c, idx, 1 << TFT_STATIC);
}
int tft_observed_vars(const struct tft_config *c, int *idx)
{
    return collect(c, idx, 1 << TFT_OBSERVED);
}
int tft_decoder_vars(const struct tft_config *c, int *idx)
{
    return collect(c, idx, 1 << TFT_KNOWN);
}
int tft_encoder_vars(const struct tft_config *c, int *idx)
{
    return collect(c, idx, (1 << TFT_OBSERVED) | (1 << TFT_KNOWN));
}
int tft_target_var(const struct tft_config *c)
{
    int idx[TFT_MAX_VARS];
    return tft_observed_vars(c, idx) ? idx[0] : -1;
}

/* ---- parameter count from sizes alone ---------------------------------------------------- */

static int64_t grn_params(int64_t di, int64_t dh, int64_t dout, int64_t dc)
{
    int64_t n = dh * di + dh + dh * dc + dh * dh + dh + 2 * dout * dh + 2 * dout + 2 * dout;
    if (di != dout) n += dout * di + dout;
    return n;
}

static int64_t gan_params(int64_t d) { return 2 * d * d + 2 * d + 2 * d; }

static int64_t vsn_params(int64_t H, int n, bool context)
{
    int64_t p = (int64_t)n * grn_params(H, H, H, 0);
    if (n > 1) p += grn_params((int64_t)n * H, H, n, context ? H : 0);
    return p;
}

int64_t tft_config_param_count(const struct tft_config *c)
{
    int64_t H = c->hidden, p = 0;
    for (int i = 0; i < c->n_vars; i++)
        p += c->vars[i].kind == TFT_CAT ? (int64_t)c->vars[i].cardinality * H : 2 * H;
    p += vsn_params(H, tft_static_vars(c, NULL), false);
    p += vsn_params(H, tft_encoder_vars(c, NULL), true);
    p += vsn_params(H, tft_decoder_vars(c, NULL), true);
    p += 4 * grn_params(H, H, H, 0);                        /* static covariate encoders */
    p += 2 * (int64_t)c->lstm_layers * (8 * H * H + 8 * H); /* lstm_enc, lstm_dec */
    p += gan_params(H) + grn_params(H, H, H, H);            /* post_lstm, enrich */
    int64_t da = H / c->n_head;
    p += 2 * H * H + da * H + H * da;                            /* attn q, k, v, out */
    p += gan_params(H) + grn_params(H, H, H, 0) + gan_params(H); /* post_attn, pos_ff, pre_out */
    p += (int64_t)c->n_quantiles * H + c->n_quantiles;           /* out */
    return p;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static json_t *names_of(const struct tft_config *c, int n, const int *idx)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_string(c->vars[idx[i]].name));
    return a;
}

char *tft_config_to_json(const struct tft_config *c)
{
    int idx[TFT_MAX_VARS];
    json_t *o = json_object();
    json_object_set_new(o, "preset", json_string(c->preset));
    json_object_set_new(o, "hidden", json_integer(c->hidden));
    json_object_set_new(o, "n_head", json_integer(c->n_head));
    json_object_set_new(o, "lstm_layers", json_integer(c->lstm_layers));
    json_object_set_new(o, "T_enc", json_integer(c->T_enc));
    json_object_set_new(o, "T_dec", json_integer(c->T_dec));
    json_t *q = json_array();
    for (int i = 0; i < c->n_quantiles; i++) json_array_append_new(q, json_real(c->quantiles[i]));
    json_object_set_new(o, "quantiles", q);
    int n = tft_static_vars(c, idx);
    json_object_set_new(o, "static_vars", names_of(c, n, idx));
    n = tft_encoder_vars(c, idx);
    json_object_set_new(o, "encoder_vars", names_of(c, n, idx));
    n = tft_decoder_vars(c, idx);
    json_object_set_new(o, "decoder_vars", names_of(c, n, idx));
    json_t *vars = json_object();
    for (int i = 0; i < c->n_vars; i++) {
        const struct tft_var *v = &c->vars[i];
        static const char *roles[] = {"static", "observed", "known"};
        json_t *d =
            json_pack("{s:s, s:s, s:i}", "kind", v->kind == TFT_CAT ? "categorical" : "real",
                      "role", roles[v->role], "cardinality", v->cardinality);
        json_object_set_new(vars, v->name, d);
    }
    json_object_set_new(o, "variables", vars);
    json_object_set_new(o, "dropout", json_real(c->dropout));
    json_object_set_new(o, "batch", json_integer(c->batch));
    json_object_set_new(o, "lr", json_real(c->lr));
    json_object_set_new(o, "max_grad_norm", json_real(c->max_grad_norm));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

static int get_int(json_t *o, const char *key, int *out, const char *where)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return lg_fail(LG_EFORMAT, "%s: config key \"%s\" missing or not an integer", where, key);
    json_int_t x = json_integer_value(v);
    if (x < 0 || x > 1000000)
        return lg_fail(LG_EFORMAT, "%s: config key \"%s\" = %lld out of range", where, key,
                       (long long)x);
    *out = (int)x;
    return LG_OK;
}

/* Adds variables named in array `key` with role `role`, looking kinds up in "variables". */
static int add_named(struct tft_config *c, json_t *o, const char *key, enum tft_role role,
                     const char *where)
{
    json_t *arr = json_object_get(o, key), *vars = json_object_get(o, "variables"), *name;
    size_t i;
    if (!json_is_array(arr))
        return lg_fail(LG_EFORMAT, "%s: config key \"%s\" missing or not an array", where, key);
    if (!json_is_object(vars))
        return lg_fail(LG_EFORMAT, "%s: config key \"variables\" missing or not an object", where);
    json_array_foreach(arr, i, name)
    {
        if (!json_is_string(name))
            return lg_fail(LG_EFORMAT, "%s: %s[%zu] is not a string", where, key, i);
        const char *nm = json_string_value(name);
        if (strcmp(key, "encoder_vars") == 0) { /* observed + known: take the observed here */
            json_t *d = json_object_get(vars, nm);
            const char *r = json_string_value(json_object_get(d, "role"));
            if (!r || strcmp(r, "observed") != 0) continue; /* known ones come from decoder_vars */
        }
        json_t *d = json_object_get(vars, nm);
        if (!json_is_object(d))
            return lg_fail(LG_EFORMAT, "%s: variable %s has no entry in \"variables\"", where, nm);
        const char *kind = json_string_value(json_object_get(d, "kind"));
        json_t *card = json_object_get(d, "cardinality");
        if (!kind || (strcmp(kind, "real") != 0 && strcmp(kind, "categorical") != 0))
            return lg_fail(LG_EFORMAT, "%s: variable %s: kind must be \"real\" or \"categorical\"",
                           where, nm);
        int cat = strcmp(kind, "categorical") == 0;
        json_int_t k = json_is_integer(card) ? json_integer_value(card) : -1;
        if (cat && (k < 1 || k > 100000000))
            return lg_fail(LG_EFORMAT, "%s: categorical %s needs a cardinality in 1..1e8", where,
                           nm);
        if (c->n_vars >= TFT_MAX_VARS)
            return lg_fail(LG_EFORMAT, "%s: more than %d variables", where, TFT_MAX_VARS);
        if (strlen(nm) >= TFT_VAR_NAME)
            return lg_fail(LG_EFORMAT, "%s: variable name %.60s... too long", where, nm);
        struct tft_var *v = &c->vars[c->n_vars++];
        lg_strlcpy(v->name, nm, sizeof v->name);
        v->role = role;
        v->kind = cat ? TFT_CAT : TFT_REAL;
        v->cardinality = cat ? (int)k : 0;
    }
    return LG_OK;
}

int tft_config_from_json(struct tft_config *c, const char *text, const char *where)
{
    json_error_t err;
    memset(c, 0, sizeof *c);
    json_t *o = json_loads(text, 0, &err);
    int rc = LG_OK;
    if (!json_is_object(o)) {
        rc = lg_fail(LG_EFORMAT, "%s: config is not a JSON object (line %d column %d: %s)", where,
                     err.line, err.column, o ? "not an object" : err.text);
        goto out;
    }
    const char *preset = json_string_value(json_object_get(o, "preset"));
    lg_strlcpy(c->preset, preset ? preset : "custom", sizeof c->preset);
    if ((rc = get_int(o, "hidden", &c->hidden, where)) ||
        (rc = get_int(o, "n_head", &c->n_head, where)) ||
        (rc = get_int(o, "lstm_layers", &c->lstm_layers, where)) ||
        (rc = get_int(o, "T_enc", &c->T_enc, where)) ||
        (rc = get_int(o, "T_dec", &c->T_dec, where)))
        goto out;
    json_t *q = json_object_get(o, "quantiles"), *qv;
    size_t i;
    if (!json_is_array(q) || json_array_size(q) < 1 || json_array_size(q) > TFT_MAX_QUANTILES) {
        rc = lg_fail(LG_EFORMAT, "%s: config key \"quantiles\" must be an array of 1..%d numbers",
                     where, TFT_MAX_QUANTILES);
        goto out;
    }
    json_array_foreach(q, i, qv)
    {
        if (!json_is_number(qv)) {
            rc = lg_fail(LG_EFORMAT, "%s: quantiles[%zu] is not a number", where, i);
            goto out;
        }
        c->quantiles[c->n_quantiles++] = (float)json_number_value(qv);
    }
    if ((rc = add_named(c, o, "static_vars", TFT_STATIC, where)) ||
        (rc = add_named(c, o, "encoder_vars", TFT_OBSERVED, where)) ||
        (rc = add_named(c, o, "decoder_vars", TFT_KNOWN, where)))
        goto out;
    json_t *v;
    if (json_is_number(v = json_object_get(o, "dropout"))) c->dropout = (float)json_number_value(v);
    if (json_is_integer(v = json_object_get(o, "batch"))) c->batch = (int)json_integer_value(v);
    if (json_is_number(v = json_object_get(o, "lr"))) c->lr = json_number_value(v);
    if (json_is_number(v = json_object_get(o, "max_grad_norm")))
        c->max_grad_norm = json_number_value(v);
    rc = tft_config_validate(c);
    if (rc != LG_OK) lg_fail_ctx(LG_EFORMAT, "%s: ", where), rc = LG_EFORMAT;
out:
    json_decref(o);
    return rc;
}

/* ---- a batch ----------------------------------------------------------------------------- */

void tft_batch_fini(struct tft_batch *b)
{
    if (!b) return;
    for (int v = 0; v < TFT_MAX_VARS; v++) tn_release(b->x[v]);
    tn_release(b->y);
    memset(b, 0, sizeof *b);
}

int tft_batch_to_device(struct tft_batch *b, enum tn_device dev)
{
    for (int v = 0; v < TFT_MAX_VARS; v++)
        if (b->x[v] && tn_move(b->x[v], dev) != LG_OK)
            return lg_fail_ctx(lg_errcode(),
                               "moving a batch to the %s: ", dev == TN_CPU ? "host" : "device");
    if (b->y && tn_move(b->y, dev) != LG_OK)
        return lg_fail_ctx(lg_errcode(),
                           "moving a batch to the %s: ", dev == TN_CPU ? "host" : "device");
    return LG_OK;
}
