/* cli_opts.c — options shared by `run`, `reproduce`, `soak` and `calibrate`, their defaults,
 * and the checks that turn them into a run: budgets resolved (defaults, then --budgets FILE,
 * then each --budget), the required channels, and options that contradict each other refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hx_impl.h"
#include "soak_trend.h"

const char *hx_mode_name(int mode)
{
    switch (mode) {
    case HX_MODE_FP32: return "fp32";
    case HX_MODE_INT8: return "int8";
    case HX_MODE_QAT: return "qat";
    }
    return "?";
}

void hx_options_defaults(struct hx_options *o)
{
    memset(o, 0, sizeof *o);
    lg_strlcpy(o->preset, "tiny", sizeof o->preset);
    o->modes = HX_MODE_FP32 | HX_MODE_INT8;
    o->sessions = 40;
    o->warmup = 1;
    o->steps = 10;
    o->device = TN_CPU;
    o->seed = 1;
    o->reports = true;
    lg_strlcpy(o->out_dir, "leakgate-out", sizeof o->out_dir);
    lg_strlcpy(o->command, "run", sizeof o->command);
    o->window = RPT_SOAK_DEFAULT_WINDOW;
    hx_default_budgets(o->budgets, o->device);
    o->required = rpt_default_required(false);
}

int hx_parse_int(const char *flag, const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return lg_fail(LG_EINVAL, "%s: '%s' is not an integer in %d..%d", flag, s, lo, hi);
    *out = (int)v;
    return LG_OK;
}

/* A seed: digits only (strtoull would take "-1" and wrap it). */
static int parse_seed(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (s[0] < '0' || s[0] > '9')
        return lg_fail(LG_EINVAL, "--seed: '%s' is not a non-negative integer", s);
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno)
        return lg_fail(LG_EINVAL, "--seed: '%s' is not an integer in 0..%llu", s,
                       (unsigned long long)UINT64_MAX);
    *out = v;
    return LG_OK;
}

static int parse_modes(const char *s, int *out)
{
    char buf[64];
    if (lg_strlcpy(buf, s, sizeof buf)) return lg_fail(LG_EINVAL, "--modes: '%s' is too long", s);
    int m = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int bit = !strcmp(tok, "fp32")   ? HX_MODE_FP32
                  : !strcmp(tok, "int8") ? HX_MODE_INT8
                  : !strcmp(tok, "qat")  ? HX_MODE_QAT
                                         : 0;
        if (!bit) return lg_fail(LG_EINVAL, "--modes: unknown mode '%s' (fp32, int8, qat)", tok);
        if (m & bit) return lg_fail(LG_EINVAL, "--modes %s: '%s' is listed twice", s, tok);
        m |= bit;
    }
    if (!m) return lg_fail(LG_EINVAL, "--modes: give at least one of fp32, int8, qat");
    *out = m;
    return LG_OK;
}

/* --budget CHANNEL.FIELD=SIZE, FIELD one of band, slope, floor: recorded, applied by
 * hx_check_options over the defaults and any --budgets file. */
static int parse_budget(struct hx_options *o, const char *s)
{
    static const char *const fields[] = {"band", "slope", "floor"};
    char buf[96];
    if (lg_strlcpy(buf, s, sizeof buf))
        return lg_fail(LG_EINVAL, "--budget: '%.40s...' is too long", s);
    char *dot = strchr(buf, '.'), *eq = strchr(buf, '=');
    if (!dot || !eq || eq < dot)
        return lg_fail(LG_EINVAL,
                       "--budget: '%s' is not CHANNEL.FIELD=SIZE (e.g. rss.slope=256KiB)", s);
    *dot = *eq = '\0';
    int ch = rpt_channel_from_name(buf);
    if (ch < 0 || rpt_channel_exact(ch)) {
        char names[256];
        return lg_fail(LG_EINVAL, "--budget: '%s' is not a statistical channel (%s)", buf,
                       rpt_statistical_channels(names, sizeof names));
    }
    int field = -1;
    for (int f = 0; f < 3; f++)
        if (!strcmp(dot + 1, fields[f])) field = f;
    if (field < 0)
        return lg_fail(LG_EINVAL, "--budget: field '%s' is not band, slope or floor", dot + 1);
    size_t v;
    if (hx_parse_size(eq + 1, &v)) return lg_fail_ctx(LG_EINVAL, "--budget %s: ", s);
    if (o->n_budget_set == (int)LG_ARRAY_LEN(o->budget_set))
        return lg_fail(LG_EINVAL, "--budget: at most %zu of them", LG_ARRAY_LEN(o->budget_set));
    o->budget_set[o->n_budget_set].channel = ch;
    o->budget_set[o->n_budget_set].field = field;
    o->budget_set[o->n_budget_set++].bytes = (double)v;
    return LG_OK;
}

int hx_option_with_value(const char *a, const char *v, const char *const *known)
{
    bool is_known = false;
    for (const char *const *k = known; *k; k++) is_known |= !strcmp(a, *k);
    if (!is_known) return 0;
    if (!v) {
        lg_fail(LG_EINVAL, "%s needs a value", a);
        return -1;
    }
    return 1;
}

int hx_usage_failed(const char *cmd)
{
    fprintf(stderr, "leakgate %s: %s\n", cmd, lg_errmsg());
    return 2;
}

int hx_copy_path(const char *flag, char *dst, size_t size, const char *v)
{
    if (!v[0]) return lg_fail(LG_EINVAL, "%s: the path is empty", flag);
    if (lg_strlcpy(dst, v, size))
        return lg_fail(LG_EINVAL, "%s: path longer than %zu bytes", flag, size - 1);
    return LG_OK;
}

int hx_parse_common(struct hx_options *o, int argc, char **argv, int i)
{
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    static const char *const with_value[] = {"--preset",     "--modes",   "--sessions", "--warmup",
                                             "--steps",      "--batch",   "--device",   "--seed",
                                             "--inject",     "--out",     "--budget",   "--csv",
                                             "--csv-config", "--require", "--budgets",  NULL};
    for (const char *const *f = with_value; *f; f++)
        if (!strcmp(a, *f) && !v) {
            lg_fail(LG_EINVAL, "%s needs a value", a);
            return -1;
        }
    int rc = LG_OK;
    if (!strcmp(a, "--preset")) {
        if (lg_strlcpy(o->preset, v, sizeof o->preset))
            rc = lg_fail(LG_EINVAL, "--preset: '%.40s' is too long", v);
        o->preset_set = true;
    } else if (!strcmp(a, "--modes"))
        rc = parse_modes(v, &o->modes);
    else if (!strcmp(a, "--sessions"))
        rc = hx_parse_int(a, v, 1, 1000000, &o->sessions);
    else if (!strcmp(a, "--warmup"))
        rc = hx_parse_int(a, v, 0, 1000, &o->warmup);
    else if (!strcmp(a, "--steps"))
        rc = hx_parse_int(a, v, 1, 1000000, &o->steps);
    else if (!strcmp(a, "--batch"))
        rc = hx_parse_int(a, v, 1, 1 << 20, &o->batch);
    else if (!strcmp(a, "--device")) {
        if (!strcmp(v, "cpu"))
            o->device = TN_CPU;
        else if (!strcmp(v, "cuda"))
            o->device = TN_CUDA;
        else
            rc = lg_fail(LG_EINVAL, "--device: '%s' is not cpu or cuda", v);
    } else if (!strcmp(a, "--seed"))
        rc = parse_seed(v, &o->seed);
    else if (!strcmp(a, "--inject")) {
        if (o->n_inject >= HX_MAX_INJECT)
            rc = lg_fail(LG_EINVAL, "--inject: at most %d faults", HX_MAX_INJECT);
        else if ((rc = hx_inject_parse(v, &o->inject[o->n_inject])) == LG_OK)
            o->n_inject++;
    } else if (!strcmp(a, "--out"))
        rc = hx_copy_path(a, o->out_dir, sizeof o->out_dir, v);
    else if (!strcmp(a, "--budget"))
        rc = parse_budget(o, v);
    else if (!strcmp(a, "--budgets"))
        rc = hx_copy_path(a, o->budgets_file, sizeof o->budgets_file, v);
    else if (!strcmp(a, "--require")) {
        /* checked again once the device is known (hx_check_options) */
        rc = rpt_parse_required(v, true, &o->required);
        o->required_set = true;
        if (rc == LG_OK && lg_strlcpy(o->require_arg, v, sizeof o->require_arg))
            rc = lg_fail(LG_EINVAL, "--require: '%.40s...' is too long", v);
    } else if (!strcmp(a, "--csv"))
        rc = hx_copy_path(a, o->csv, sizeof o->csv, v);
    else if (!strcmp(a, "--csv-config"))
        rc = hx_copy_path(a, o->csv_config, sizeof o->csv_config, v);
    else if (!strcmp(a, "--stacks")) {
        o->stacks = true;
        return 1;
    } else if (!strcmp(a, "--no-reports")) {
        o->reports = false;
        return 1;
    } else if (!strcmp(a, "--quiet")) {
        o->quiet = true;
        return 1;
    } else
        return hx_parse_gate(o, argc, argv, i);
    return rc == LG_OK ? 2 : -1;
}

/* Budgets: the device's defaults, then the --budgets file, then each --budget. */
static int resolve_budgets(struct hx_options *o)
{
    hx_default_budgets(o->budgets, o->device);
    if (o->budgets_file[0]) {
        int rc = hx_load_budgets(o->budgets, o->budgets_file, o->device);
        if (rc != LG_OK) return rc;
    }
    for (int i = 0; i < o->n_budget_set; i++) {
        struct rpt_budget *b = &o->budgets[o->budget_set[i].channel];
        double v = o->budget_set[i].bytes;
        int f = o->budget_set[i].field;
        if (f == 0)
            b->band = v;
        else if (f == 1)
            b->slope = v;
        else
            b->floor = v;
        lg_strlcpy(b->source, "--budget (set by hand)", sizeof b->source);
        b->measured = false; /* a hand-given figure is not evidence of this machine's noise */
    }
    return LG_OK;
}

/* The required channels: the device's default, or --require checked against the device. */
static int resolve_required(struct hx_options *o)
{
    bool cuda = o->device == TN_CUDA;
    if (!o->required_set) {
        o->required = rpt_default_required(cuda);
        /* a sanitizer build has no allocator channels, and under AddressSanitizer no RSS worth
         * the name: the default asks for what this build can measure (a property of the binary,
         * not of a run; --require can still demand them, and is then inconclusive) */
        if (!trk_build_has_allocator_stats()) o->required &= ~rpt_channel_mask(RPT_CHF_ALLOC);
        if (!trk_build_has_rss()) o->required &= ~RPT_BIT(RPT_CH_RSS);
        return LG_OK;
    }
    int rc = rpt_parse_required(o->require_arg, cuda, &o->required);
    if (rc != LG_OK) return rc;
    unsigned dev = rpt_channel_mask(RPT_CHF_DEVICE);
    char names[128];
    if (!cuda && (o->required & dev))
        return lg_fail(LG_EINVAL, "--require: the device channels (%s) need --device cuda",
                       rpt_channel_list(names, sizeof names, dev, ", "));
    return LG_OK;
}

int hx_check_sessions(const struct hx_options *o, int n, const char *what)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        if (rpt_channel_exact((enum rpt_channel)c) || !(o->required & RPT_BIT(c))) continue;
        int need = rpt_min_sessions(&o->budgets[c]);
        if (n > 0 && n < need) {
            char b1[32];
            return lg_fail(
                LG_EINVAL,
                "%s %d: the required channel %s needs at least %d measured sessions to see a leak "
                "of "
                "twice its budget (%s/session); give %d or more, or leave it out of --require "
                "(docs/design.md, \"Minimum sessions\")",
                what, n, rpt_channel_name((enum rpt_channel)c), need,
                lg_fmt_bytes(b1, sizeof b1, o->budgets[c].slope), need);
        }
    }
    return LG_OK;
}

int hx_check_options(struct hx_options *o)
{
    for (int i = 0; i < o->n_inject; i++)
        if (hx_inject_check(&o->inject[i], o->device == TN_CUDA, o->modes) != LG_OK)
            return lg_errcode();
    if (o->csv[0] && !o->csv_config[0])
        return lg_fail(LG_EINVAL, "--csv needs --csv-config (the JSON column roles)");
    if (o->csv_config[0] && !o->csv[0])
        return lg_fail(LG_EINVAL, "--csv-config needs --csv (the data it describes)");
    if (o->csv[0] && o->preset_set)
        return lg_fail(LG_EINVAL,
                       "--preset and --csv exclude each other (the CSV's config sets the model)");
    if (!o->csv[0]) {
        struct tft_config cfg;
        if (tft_config_preset(&cfg, o->preset)) return lg_errcode();
    }
    int rc = resolve_budgets(o);
    if (rc == LG_OK) rc = resolve_required(o);
    if (rc == LG_OK) rc = hx_check_gate(o);
    if (rc == LG_OK && strcmp(o->command, "soak") != 0)
        rc = hx_check_sessions(o, o->sessions, "--sessions");
    return rc;
}
