/* cli_opts.c — options shared by `run`, `reproduce` and `soak`, their defaults and checks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hx_impl.h"

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
    o->window = 50;
    hx_default_budgets(o->budgets, o->device);
}

static int parse_int(const char *flag, const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return lg_fail(LG_EINVAL, "%s: '%s' is not an integer in %d..%d", flag, s, lo, hi);
    *out = (int)v;
    return LG_OK;
}

static int parse_modes(const char *s, int *out)
{
    char buf[64];
    if (lg_strlcpy(buf, s, sizeof buf)) return lg_fail(LG_EINVAL, "--modes: '%s' is too long", s);
    int m = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (!strcmp(tok, "fp32")) m |= HX_MODE_FP32;
        else if (!strcmp(tok, "int8")) m |= HX_MODE_INT8;
        else if (!strcmp(tok, "qat")) m |= HX_MODE_QAT;
        else return lg_fail(LG_EINVAL, "--modes: unknown mode '%s' (fp32, int8, qat)", tok);
    }
    if (!m) return lg_fail(LG_EINVAL, "--modes: give at least one of fp32, int8, qat");
    *out = m;
    return LG_OK;
}

/* --budget CHANNEL.FIELD=SIZE, FIELD one of band, slope, floor. */
static int parse_budget(struct hx_options *o, const char *s)
{
    char buf[96];
    if (lg_strlcpy(buf, s, sizeof buf)) return lg_fail(LG_EINVAL, "--budget: '%s' is too long", s);
    char *dot = strchr(buf, '.'), *eq = strchr(buf, '=');
    if (!dot || !eq || eq < dot)
        return lg_fail(LG_EINVAL, "--budget: '%s' is not CHANNEL.FIELD=SIZE (e.g. rss.slope=256KiB)", s);
    *dot = *eq = '\0';
    int ch = rpt_channel_from_name(buf);
    if (ch < 0 || rpt_channel_exact(ch))
        return lg_fail(LG_EINVAL, "--budget: '%s' is not a statistical channel (je_allocated, je_active, "
                                  "je_resident, rss, dev_driver, dev_process)", buf);
    size_t v;
    if (hx_parse_size(eq + 1, &v)) return lg_fail_ctx(LG_EINVAL, "--budget %s: ", s);
    struct rpt_budget *b = &o->budgets[ch];
    if (!strcmp(dot + 1, "band")) b->band = (double)v;
    else if (!strcmp(dot + 1, "slope")) b->slope = (double)v;
    else if (!strcmp(dot + 1, "floor")) b->floor = (double)v;
    else return lg_fail(LG_EINVAL, "--budget: field '%s' is not band, slope or floor", dot + 1);
    lg_strlcpy(b->source, "--budget", sizeof b->source);
    return LG_OK;
}

int hx_parse_common(struct hx_options *o, int argc, char **argv, int i)
{
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    static const char *const with_value[] = {"--preset", "--modes", "--sessions", "--warmup", "--steps",
                                             "--batch", "--device", "--seed", "--inject", "--out",
                                             "--budget", "--csv", "--csv-config", NULL};
    for (const char *const *f = with_value; *f; f++)
        if (!strcmp(a, *f) && !v) {
            lg_fail(LG_EINVAL, "%s needs a value", a);
            return -1;
        }
    int rc = LG_OK;
    if (!strcmp(a, "--preset")) {
        if (lg_strlcpy(o->preset, v, sizeof o->preset)) rc = lg_fail(LG_EINVAL, "--preset: too long");
    } else if (!strcmp(a, "--modes")) rc = parse_modes(v, &o->modes);
    else if (!strcmp(a, "--sessions")) rc = parse_int(a, v, 1, 1000000, &o->sessions);
    else if (!strcmp(a, "--warmup")) rc = parse_int(a, v, 0, 1000, &o->warmup);
    else if (!strcmp(a, "--steps")) rc = parse_int(a, v, 1, 1000000, &o->steps);
    else if (!strcmp(a, "--batch")) rc = parse_int(a, v, 1, 1 << 20, &o->batch);
    else if (!strcmp(a, "--device")) {
        if (!strcmp(v, "cpu")) o->device = TN_CPU;
        else if (!strcmp(v, "cuda")) o->device = TN_CUDA;
        else rc = lg_fail(LG_EINVAL, "--device: '%s' is not cpu or cuda", v);
        /* defaults measured per device, unless set by --budget already */
        struct rpt_budget def[RPT_NCHANNELS];
        hx_default_budgets(def, o->device);
        for (int c = 0; c < RPT_NCHANNELS && rc == LG_OK; c++)
            if (strcmp(o->budgets[c].source, "--budget") != 0) o->budgets[c] = def[c];
    } else if (!strcmp(a, "--seed")) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (end == v || *end || errno) rc = lg_fail(LG_EINVAL, "--seed: '%s' is not a number", v);
        o->seed = s;
    } else if (!strcmp(a, "--inject")) {
        if (o->n_inject >= HX_MAX_INJECT) rc = lg_fail(LG_EINVAL, "--inject: at most %d faults", HX_MAX_INJECT);
        else if ((rc = hx_inject_parse(v, &o->inject[o->n_inject])) == LG_OK) o->n_inject++;
    } else if (!strcmp(a, "--out")) {
        if (lg_strlcpy(o->out_dir, v, sizeof o->out_dir)) rc = lg_fail(LG_EINVAL, "--out: path too long");
    } else if (!strcmp(a, "--budget")) rc = parse_budget(o, v);
    else if (!strcmp(a, "--csv")) {
        if (lg_strlcpy(o->csv, v, sizeof o->csv)) rc = lg_fail(LG_EINVAL, "--csv: path too long");
    } else if (!strcmp(a, "--csv-config")) {
        if (lg_strlcpy(o->csv_config, v, sizeof o->csv_config)) rc = lg_fail(LG_EINVAL, "--csv-config: path too long");
    } else if (!strcmp(a, "--stacks")) {
        o->stacks = true;
        return 1;
    } else if (!strcmp(a, "--no-reports")) {
        o->reports = false;
        return 1;
    } else if (!strcmp(a, "--quiet")) {
        o->quiet = true;
        return 1;
    } else
        return 0;
    return rc == LG_OK ? 2 : -1;
}

int hx_check_options(const struct hx_options *o)
{
    bool cuda = o->device == TN_CUDA;
    for (int i = 0; i < o->n_inject; i++) {
        const char *n = o->inject[i].name;
        if (!strcmp(n, "device-tensor") && !cuda)
            return lg_fail(LG_EINVAL, "--inject device-tensor needs --device cuda");
        if (!strcmp(n, "int8-calibration") && !(o->modes & HX_MODE_INT8))
            return lg_fail(LG_EINVAL, "--inject int8-calibration needs int8 in --modes");
        if (!strcmp(n, "qat-observer") && !(o->modes & HX_MODE_QAT))
            return lg_fail(LG_EINVAL, "--inject qat-observer needs qat in --modes");
    }
    if (o->csv[0] && !o->csv_config[0]) return lg_fail(LG_EINVAL, "--csv needs --csv-config");
    if (!o->csv[0]) {
        struct tft_config cfg;
        if (tft_config_preset(&cfg, o->preset)) return lg_errcode();
    }
    return LG_OK;
}
