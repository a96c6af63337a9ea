/* budget_file.c — noise statistics of clean runs, the budgets derived from them, and the
 * budgets file (budget_file.h). */
#define _GNU_SOURCE
#include "budget_file.h"
#include "results_json.h"
#include "verdict.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KiB 1024.0
#define MiB (1024.0 * 1024.0)

void rpt_noise_add_run(struct rpt_noise *nz, const double *y, int n)
{
    nz->runs++;
    nz->sessions += n;
    for (int i = 0; i < n; i++) {
        nz->max_abs = fmax(nz->max_abs, fabs(y[i]));
        if (i) nz->max_step = fmax(nz->max_step, fabs(y[i] - y[i - 1]));
    }
    if (n < 2) return;
    struct rpt_trend t;
    rpt_theil_sen(y, n, 0.95, &t);
    nz->max_slope = fmax(nz->max_slope, fabs(t.slope));
    if (isfinite(t.hi)) nz->max_slope_hi = fmax(nz->max_slope_hi, fmax(fabs(t.hi), fabs(t.lo)));
    nz->max_shift = fmax(nz->max_shift, fabs(t.shift));
    double *r = malloc((size_t)n * sizeof *r);
    if (!r) return;
    for (int i = 0; i < n; i++) r[i] = y[i] - (t.intercept + t.slope * i);
    double med = rpt_median(r, n);
    for (int i = 0; i < n; i++) r[i] = fabs(r[i] - med);
    nz->jitter = fmax(nz->jitter, 1.4826 * rpt_median(r, n));
    free(r);
}

void rpt_budget_from_noise(enum rpt_channel c, const struct rpt_noise *nz, struct rpt_budget *out)
{
    rpt_budget_resolution(c, out);
    out->band = fmax(out->band, 2 * nz->max_abs);
    out->slope = fmax(out->slope, 2 * nz->max_slope_hi);
    out->floor = fmax(out->floor, fmax(2 * nz->max_shift, 4 * nz->jitter));
    out->noise = nz->jitter;
    out->measured = true;
}

/* ---- the file -------------------------------------------------------------------------------- */

static int set(json_t *o, const char *key, json_t *v)
{
    return v && json_object_set_new(o, key, v) == 0 ? 0 : 1;
}

int rpt_budgets_write(const char *path, const struct rpt_budget *b, const struct rpt_noise *nz,
                      unsigned mask, const struct rpt_budgets_info *info)
{
    int rc = LG_OK, bad = 0;
    json_t *o = json_object(), *ch = json_object();
    if (!o || !ch) {
        json_decref(o);
        json_decref(ch);
        return lg_fail(LG_ENOMEM, "out of memory writing the budgets");
    }
    bad |= set(o, "schema", json_string(RPT_BUDGETS_SCHEMA));
    bad |= set(o, "machine", rpt_json_str(info->machine));
    bad |= set(o, "device", rpt_json_str(info->device));
    bad |= set(o, "build", rpt_json_str(info->build));
    bad |= set(o, "command", rpt_json_str(info->command));
    bad |= set(o, "date", rpt_json_str(info->date));
    bad |= set(o, "workload", rpt_json_str(info->workload));
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        if (!(mask & RPT_BIT(c))) continue;
        const struct rpt_noise *n = &nz[c];
        json_t *e = json_pack("{s:f,s:f,s:f,s:f,s:i,s:{s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f}}", "band",
                              b[c].band, "slope", b[c].slope, "floor", b[c].floor, "noise",
                              isfinite(b[c].noise) ? b[c].noise : 0.0, "min_sessions",
                              rpt_min_sessions(&b[c]), "observed", "runs", n->runs, "sessions",
                              n->sessions, "max_abs_delta", n->max_abs, "max_step", n->max_step,
                              "jitter", n->jitter, "max_slope", n->max_slope, "max_slope_bound",
                              n->max_slope_hi, "max_shift", n->max_shift);
        bad |= set(ch, rpt_channel_name((enum rpt_channel)c), e);
    }
    bad |= set(o, "channels", ch);
    ch = NULL;
    if (bad) {
        rc = lg_fail(LG_ENOMEM, "out of memory writing the budgets");
        goto cleanup;
    }
    FILE *f = NULL; /* PATH.tmp, renamed over PATH once whole (lg_out.c) */
    if ((rc = lg_out_open(&f, path)) != LG_OK) {
        lg_fail_ctx(rc, "the budgets file: ");
        goto cleanup;
    }
    if (json_dumpf(o, f, JSON_INDENT(2) | JSON_SORT_KEYS) != 0 || fputc('\n', f) == EOF) {
        int err = errno ? errno : EIO;
        lg_out_abandon(f, path);
        rc = lg_fail(LG_EIO, "%s: writing the budgets: %s", path, strerror(err));
        goto cleanup;
    }
    rc = lg_out_commit(f, path);
cleanup:
    json_decref(ch);
    json_decref(o);
    return rc;
}

/* A number member >= 0 of e; LG_EFORMAT naming it. */
static int num(const char *path, const char *where, json_t *e, const char *key, double *out)
{
    json_t *v = json_object_get(e, key);
    if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v)))
        return lg_fail(LG_EFORMAT, "%s: channels.%s.%s: %s", path, where, key,
                       v ? "expected a non-negative number" : "missing");
    /* the bound --budget's sizes have: a budget past it lets any leak pass */
    if (json_number_value(v) > 1e15)
        return lg_fail(LG_EFORMAT, "%s: channels.%s.%s: %g is too large (at most 1e15 bytes)", path,
                       where, key, json_number_value(v));
    *out = json_number_value(v);
    return LG_OK;
}

static int str(const char *path, json_t *o, const char *key, char *dst, size_t size)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return lg_fail(LG_EFORMAT, "%s: %s: %s", path, key, v ? "expected a string" : "missing");
    if (lg_strlcpy(dst, json_string_value(v), size))
        return lg_fail(LG_EFORMAT, "%s: %s: longer than %zu bytes", path, key, size - 1);
    return LG_OK;
}

int rpt_budgets_load(const char *path, struct rpt_budget *b, unsigned *present,
                     struct rpt_budgets_info *info)
{
    json_error_t err;
    *present = 0;
    memset(info, 0, sizeof *info);
    FILE *f = fopen(path, "re");
    struct stat st;
    if (!f) return lg_fail(LG_EIO, "%s: cannot open the budgets file: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
        fclose(f);
        return lg_fail(LG_EFORMAT, "%s: not a budgets file (%s)", path,
                       S_ISREG(st.st_mode) ? "larger than 1 MiB" : "not a regular file");
    }
    json_t *o = json_loadf(f, JSON_REJECT_DUPLICATES, &err);
    fclose(f);
    if (!o)
        return lg_fail(LG_EFORMAT, "%s:%d:%d: not JSON: %s", path, err.line, err.column, err.text);
    int rc = LG_OK;
    char schema[64];
    json_t *ch = json_object_get(o, "channels"), *e;
    const char *key;
    if (!json_is_object(o)) {
        rc = lg_fail(LG_EFORMAT, "%s: not a budgets file (expected an object)", path);
        goto cleanup;
    }
    if ((rc = str(path, o, "schema", schema, sizeof schema)) != LG_OK) goto cleanup;
    if (strcmp(schema, RPT_BUDGETS_SCHEMA) != 0) {
        rc = lg_fail(LG_EFORMAT, "%s: schema \"%s\" is not \"%s\"", path, schema,
                     RPT_BUDGETS_SCHEMA);
        goto cleanup;
    }
    if ((rc = str(path, o, "machine", info->machine, sizeof info->machine)) != LG_OK ||
        (rc = str(path, o, "device", info->device, sizeof info->device)) != LG_OK ||
        (rc = str(path, o, "build", info->build, sizeof info->build)) != LG_OK ||
        (rc = str(path, o, "command", info->command, sizeof info->command)) != LG_OK ||
        (rc = str(path, o, "date", info->date, sizeof info->date)) != LG_OK ||
        (rc = str(path, o, "workload", info->workload, sizeof info->workload)) != LG_OK)
        goto cleanup;
    if (!json_is_object(ch)) {
        rc = lg_fail(LG_EFORMAT, "%s: channels: %s", path,
                     ch ? "expected an object keyed by channel" : "missing");
        goto cleanup;
    }
    json_object_foreach(ch, key, e)
    {
        int c = rpt_channel_from_name(key);
        if (c < 0 || rpt_channel_exact((enum rpt_channel)c)) {
            rc = lg_fail(LG_EFORMAT, "%s: channels.%s: not a statistical channel", path, key);
            goto cleanup;
        }
        struct rpt_budget nb = {0};
        if (!json_is_object(e)) {
            rc = lg_fail(LG_EFORMAT, "%s: channels.%s: expected an object", path, key);
            goto cleanup;
        }
        if ((rc = num(path, key, e, "band", &nb.band)) != LG_OK ||
            (rc = num(path, key, e, "slope", &nb.slope)) != LG_OK ||
            (rc = num(path, key, e, "floor", &nb.floor)) != LG_OK ||
            (rc = num(path, key, e, "noise", &nb.noise)) != LG_OK)
            goto cleanup;
        nb.measured = true;
        snprintf(nb.source, sizeof nb.source, "%s: measured on %s, %s", path, info->machine,
                 info->date);
        b[c] = nb;
        *present |= RPT_BIT(c);
    }
    if (!*present) rc = lg_fail(LG_EFORMAT, "%s: channels: names no channel", path);
cleanup:
    json_decref(o);
    return rc;
}
