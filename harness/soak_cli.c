/* soak_cli.c — `leakgate soak`: its options, their checks, and the command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reports.h"
#include "soak_impl.h"

static void soak_usage(FILE *f)
{
    fprintf(
        f,
        "usage: leakgate soak [--duration D | --sessions N] [options]\n"
        "Runs training sessions for hours in one process, interleaving presets and modes, and\n"
        "watches every memory channel with a sliding-window trend test (Theil–Sen slope over the\n"
        "window and over its last 10 sessions, which catches a leak starting late) and a scan of\n"
        "the whole soak for steps that never come back (a leak every K sessions). Sessions are\n"
        "streamed to results.jsonl as they end; a Prometheus metrics file is rewritten after\n"
        "each. SIGTERM/SIGINT finish the current session, then the verdict and reports are\n"
        "written. Exit: 0 pass, 1 leak, 2 usage/input error, 3 inconclusive, 4 internal error.\n\n"
        "  --duration D        run measured sessions until D is spent: 90s, 30m, 8h, 1h30m\n"
        "  --sessions N        measured sessions of the whole plan (default 100 without\n"
        "                      --duration; with it, whichever ends first)\n"
        "  --presets P,Q       presets to interleave (default: --preset, tiny)\n"
        "  --modes M           fp32,int8,qat, interleaved (default fp32,int8)\n"
        "  --warmup W          warm-up rounds over every (preset, mode) (default 1; with\n"
        "                      several presets at least 2)\n"
        "  --window W          trend window in measured sessions (default 50, %d..%d)\n"
        "  --shard i/n         run shard i (from 0) of n: plan items with index %% n == i;\n"
        "                      results in OUT/shard-i-of-n/ (see leakgate merge)\n"
        "  --metrics FILE      Prometheus text file (default OUT[/shard-i-of-n]/metrics.prom)\n"
        "  --out DIR           results and reports (default leakgate-soak)\n"
        "  every `leakgate run` option applies (--steps, --device, --seed, --inject, --budget,\n"
        "  --stacks, --no-reports, --quiet, ...; see leakgate run --help)\n"
        "Details: docs/soak.md.\n",
        RPT_SOAK_MIN_WINDOW, RPT_SOAK_MAX_WINDOW);
    hx_gate_usage(f);
}

/* Parses one soak-only option at argv[i]; returns the arguments consumed, 0 when it is not
 * one, -1 on a usage error. presets_arg: --presets's value, checked later. */
static int parse_soak_option(struct hx_soak_options *so, int argc, char **argv, int i,
                             const char **presets_arg)
{
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    static const char *const known[] = {"--duration", "--presets", "--window",
                                        "--shard",    "--metrics", NULL};
    int is_known = hx_option_with_value(a, v, known);
    if (is_known <= 0) return is_known;
    int rc = LG_OK;
    if (!strcmp(a, "--duration")) {
        rc = hx_parse_duration(v, &so->plan.duration_s);
        so->o.duration_s = so->plan.duration_s;
    } else if (!strcmp(a, "--presets")) {
        *presets_arg = v;
    } else if (!strcmp(a, "--window")) {
        char *end;
        long w = strtol(v, &end, 10);
        if (end == v || *end || w < RPT_SOAK_MIN_WINDOW || w > RPT_SOAK_MAX_WINDOW)
            rc = lg_fail(LG_EINVAL, "--window: '%s' is not an integer in %d..%d", v,
                         RPT_SOAK_MIN_WINDOW, RPT_SOAK_MAX_WINDOW);
        else
            so->o.window = (int)w;
    } else if (!strcmp(a, "--shard")) {
        rc = hx_parse_shard(v, &so->plan.shard, &so->plan.n_shards);
        if (rc == LG_OK)
            snprintf(so->o.shard, sizeof so->o.shard, "%d/%d", so->plan.shard, so->plan.n_shards);
    } else if (!strcmp(a, "--metrics")) {
        if (lg_strlcpy(so->metrics, v, sizeof so->metrics))
            rc = lg_fail(LG_EINVAL, "--metrics: path too long");
    }
    return rc == LG_OK ? 2 : -1;
}

/* Derives the plan from the options once parsed and checks it. */

/* --metrics may not name a file the soak itself writes in OUT (results.jsonl, a report
 * artefact): the metrics would replace the results as they stream. */
static int check_metrics_path(const char *metrics, const char *out)
{
    char dir[600];
    const char *slash = strrchr(metrics, '/'), *name = slash ? slash + 1 : metrics;
    if (!rpt_is_artefact_name(name)) return LG_OK;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - metrics) : 1, slash ? metrics : ".");
    struct stat a, b;
    bool same = stat(dir, &a) == 0 && stat(out, &b) == 0
                    ? a.st_dev == b.st_dev && a.st_ino == b.st_ino
                    : strcmp(dir, out) == 0;
    if (!same) return LG_OK;
    return lg_fail(LG_EINVAL, "--metrics %s: that is the soak's own %s in %s; name another file",
                   metrics, name, out);
}

static int finish_options(struct hx_soak_options *so, const char *presets_arg)
{
    struct hx_options *o = &so->o;
    struct hx_soak_plan *p = &so->plan;
    int rc = LG_OK;
    if (presets_arg && o->csv[0])
        return lg_fail(LG_EINVAL, "--presets and --csv exclude each other");
    if (presets_arg) {
        if ((rc = hx_parse_presets(presets_arg, p)) != LG_OK) return rc;
        lg_strlcpy(o->preset, p->presets[0], sizeof o->preset);
    } else {
        p->n_presets = 1;
        lg_strlcpy(p->presets[0], o->csv[0] ? "csv" : o->preset, sizeof p->presets[0]);
    }
    p->modes = o->modes;
    p->n_modes = __builtin_popcount((unsigned)o->modes);
    /* several presets: a preset's baseline is read in the second warm-up round, after every
     * preset has run once (a larger preset's first session moves every later reading) */
    if (p->n_presets > 1 && o->warmup < 2) o->warmup = 2;
    p->warmup = o->warmup;
    if (o->sessions == 0 && p->duration_s == 0) o->sessions = 100;
    p->sessions = o->sessions;
    if (p->n_shards > 1 && p->sessions > 0 && hx_soak_shard_items(p) == 0)
        return lg_fail(LG_EINVAL,
                       "--shard %s with --sessions %d: the shard has no session (n > sessions)",
                       o->shard, p->sessions);
    if ((rc = hx_check_options(o)) != LG_OK) return rc;
    if ((rc = hx_check_sessions(o, hx_soak_shard_items(p),
                                p->n_shards > 1 ? "this shard's sessions" : "--sessions")) !=
            LG_OK ||
        (rc = hx_check_sessions(o, o->window, "--window")) != LG_OK)
        return rc;
    /* a fault "from the first measured session" starts after every preset's warm-up */
    for (int i = 0; i < o->n_inject; i++)
        if (o->inject[i].first < 0) o->inject[i].first = hx_soak_n_warmup(p);
    if (p->n_shards > 1) {
        char dir[600];
        if (lg_snprintf(dir, sizeof dir, "%s/shard-%d-of-%d", o->out_dir, p->shard, p->n_shards) ||
            lg_strlcpy(o->out_dir, dir, sizeof o->out_dir))
            return lg_fail(LG_EINVAL, "--out: path too long");
    }
    if (!so->metrics[0] &&
        lg_snprintf(so->metrics, sizeof so->metrics, "%s/metrics.prom", o->out_dir))
        return lg_fail(LG_EINVAL, "--out: path too long");
    return check_metrics_path(so->metrics, o->out_dir);
}

int hx_cmd_soak(int argc, char **argv)
{
    struct hx_soak_options *so = calloc(1, sizeof *so);
    const char *presets_arg = NULL;
    int code = 2, rc = LG_OK;
    if (!so) {
        fprintf(stderr, "leakgate soak: out of memory\n");
        return 4;
    }
    struct hx_options *o = &so->o;
    hx_options_defaults(o);
    lg_strlcpy(o->command, "soak", sizeof o->command);
    lg_strlcpy(o->out_dir, "leakgate-soak", sizeof o->out_dir);
    o->sessions = 0; /* unset: 100, unless --duration */
    so->plan.n_shards = 1;
    for (int i = 1; i < argc && rc == LG_OK;) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            soak_usage(stdout);
            code = 0;
            goto done;
        }
        int n = hx_parse_common(o, argc, argv, i);
        if (n == 0) n = parse_soak_option(so, argc, argv, i, &presets_arg);
        if (n < 0)
            rc = lg_errcode() ? lg_errcode() : LG_EINVAL;
        else if (n == 0)
            rc = lg_fail(LG_EINVAL, "unknown option '%s' (see leakgate soak --help)", argv[i]);
        i += n > 0 ? n : 0;
    }
    if (rc == LG_OK) rc = finish_options(so, presets_arg);
    if (rc != LG_OK) {
        fprintf(stderr, "leakgate soak: %s\n", lg_errmsg());
        goto done;
    }
    hx_install_signal_handlers();
    struct rpt_verdict v;
    rc = hx_soak(so, &v);
    if (rc != LG_OK) {
        fprintf(stderr, "leakgate soak: %s\n", lg_errmsg());
        code = lg_exit_code(rc);
    } else {
        code = v.exit_code;
    }
done:
    free(so);
    return code;
}
