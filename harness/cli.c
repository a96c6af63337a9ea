/* cli.c — `leakgate run` and `leakgate reproduce`. */
#include <stdio.h>
#include <string.h>

#include "hx_impl.h"

static void run_usage(FILE *f)
{
    char stat[256];
    fprintf(
        f,
        "usage: leakgate run [options]\n"
        "Runs warm-up and measured training sessions in one process and judges whether host and\n"
        "device memory return to baseline. Exit: 0 pass, 1 leak, 2 usage/input error,\n"
        "3 inconclusive, 4 internal error.\n\n"
        "  --preset P          tiny (default), electricity, foxhunt-815\n"
        "  --csv F --csv-config J   train on your CSV file with JSON column roles instead\n"
        "  --modes M           fp32,int8,qat, interleaved (default fp32,int8)\n"
        "  --sessions N        measured sessions (default 40)\n"
        "  --warmup W          warm-up sessions per mode (default 1)\n"
        "  --steps K           training steps per session (default 10)\n"
        "  --batch B           batch size (default: the preset's)\n"
        "  --device D          cpu (default) or cuda\n"
        "  --seed S            seed of data, init, dropout and batches (default 1)\n"
        "  --stacks            record allocation and retain call stacks (slower)\n"
        "  --inject F[:SIZE][@FIRST[/EVERY]]  re-create a known leak (repeatable): varmap-dup-ref,\n"
        "                      adam-state, grad-retained, tape-retained, ckpt-buffer,\n"
        "                      int8-calibration, qat-observer, device-tensor, raw-malloc, raw-mmap;\n"
        "                      raw-noise:SIZE holds a random amount for one session (not a leak)\n"
        "                      e.g. raw-malloc:256KiB@10 (per session, from session 10),\n"
        "                      raw-malloc:1MiB@2/40 (in sessions 2, 42, 82, ...)\n"
        "  --require CH,...    channels the verdict needs evidence from (default: every host\n"
        "                      channel; with --device cuda also tagged_device, dev_process);\n"
        "                      names, or host, exact, all, none. A required channel that is\n"
        "                      unavailable or undecided makes the run inconclusive (exit 3)\n"
        "  --budgets FILE      budgets measured by leakgate calibrate on this machine\n"
        "  --budget CH.FIELD=SIZE  override a statistical budget, e.g. rss.slope=256KiB\n"
        "                      (CH: %s;\n"
        "                      FIELD: band, slope, floor)\n"
        "  --out DIR           results and reports (default leakgate-out)\n"
        "  --no-reports        results.jsonl only\n"
        "  --quiet             no progress output\n",
        rpt_statistical_channels(stat, sizeof stat));
    hx_gate_usage(f);
}

/* Parses the command line of run/reproduce/soak into o; returns LG_OK, or a usage error. */
static int parse(struct hx_options *o, int argc, char **argv, int first, void (*usage)(FILE *),
                 bool *help, int (*extra)(struct hx_options *, int, char **, int, void *), void *ud)
{
    *help = false;
    for (int i = first; i < argc;) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            *help = true;
            return LG_OK;
        }
        int n = hx_parse_common(o, argc, argv, i);
        if (n == 0 && extra) n = extra(o, argc, argv, i, ud);
        if (n < 0) return lg_errcode() ? lg_errcode() : LG_EINVAL;
        if (n == 0)
            return lg_fail(LG_EINVAL, "unknown option '%s' (see %s --help)", argv[i], argv[0]);
        i += n;
    }
    return hx_check_options(o);
}

/* The end of run and reproduce: the sessions o describes, stoppable by a signal between
 * sessions; the verdict's exit code, or the failure's (said on stderr). */
static int run_sessions(const struct hx_options *o)
{
    hx_install_signal_handlers();
    struct rpt_verdict v;
    int rc = hx_run(o, &v);
    if (rc != LG_OK) {
        fprintf(stderr, "leakgate: %s\n", lg_errmsg());
        return lg_exit_code(rc);
    }
    return v.exit_code;
}

int hx_parse_run(struct hx_options *o, int argc, char **argv, bool *help)
{
    hx_options_defaults(o);
    return parse(o, argc, argv, 1, run_usage, help, NULL, NULL);
}

int hx_cmd_run(int argc, char **argv)
{
    struct hx_options o;
    bool help;
    int rc = hx_parse_run(&o, argc, argv, &help);
    if (rc != LG_OK) return hx_usage_failed("run");
    if (help) return 0;
    return run_sessions(&o);
}

/* ---- reproduce ------------------------------------------------------------------------------ */

static void repro_usage(FILE *f)
{
    fprintf(f,
            "usage: leakgate reproduce BUG [--fixed] [run options]\n"
            "Re-creates a known leak inside the real code path and shows what each session leaves\n"
            "behind: bytes per tag class, the leaked tensors by name, and who still holds them.\n"
            "BUG is one of the --inject names; varmap-dup-ref is the original 815 MB leak (the\n"
            "trainer's own reference to the model's VarMap, never dropped).\n\n"
            "  --fixed             the same sessions on today's code (no injection): 0 bytes\n"
            "  defaults: --preset foxhunt-815 --modes fp32 --sessions 3 --warmup 0 --steps 2\n"
            "            --require exact (the tagged bytes and references name the leak; the\n"
            "            statistical channels are shown and judged, 3 sessions being too few for\n"
            "            a trend, only by the gross-growth rule)\n"
            "  every `leakgate run` option applies (see leakgate run --help); --inject does not\n"
            "  (BUG is the injection; --fixed runs without any)\n"
            "  raw-malloc and raw-noise leave nothing tagged, nor raw-mmap: the channel that sees\n"
            "  them (je_allocated; rss) joins the required ones, and with too few sessions for it\n"
            "  the verdict is a leak only by gross growth, else inconclusive\n");
}

static int repro_extra(struct hx_options *o, int argc, char **argv, int i, void *ud)
{
    (void)o;
    (void)argc;
    if (!strcmp(argv[i], "--fixed")) {
        *(bool *)ud = true;
        return 1;
    }
    return 0;
}

/* The untagged faults leave no tagged byte and no reference: only a statistical channel sees
 * them, so that channel joins the required ones (a reproduction that required only the exact
 * channels would pass with nothing seen). Its minimum sessions are not asked for up front:
 * with fewer, gross growth can still prove the leak, and otherwise the verdict is
 * inconclusive. */
static void require_untagged(struct hx_options *o, const struct hx_inject *bug)
{
    static const struct {
        const char *fault;
        enum rpt_channel sees;
    } untagged[] = {{"raw-malloc", RPT_CH_JE_ALLOCATED},
                    {"raw-noise", RPT_CH_JE_ALLOCATED},
                    {"raw-mmap", RPT_CH_RSS}};
    for (size_t i = 0; i < LG_ARRAY_LEN(untagged); i++) {
        if (strcmp(bug->name, untagged[i].fault) != 0 || (o->required & RPT_BIT(untagged[i].sees)))
            continue;
        o->required |= RPT_BIT(untagged[i].sees);
        fprintf(stderr,
                "leakgate reproduce: %s is untagged: only %s sees it, so %s joins the required "
                "channels\n",
                bug->name, rpt_channel_name(untagged[i].sees), rpt_channel_name(untagged[i].sees));
    }
}

int hx_cmd_reproduce(int argc, char **argv)
{
    struct hx_options o;
    bool help, fixed = false;
    hx_options_defaults(&o);
    lg_strlcpy(o.preset, "foxhunt-815", sizeof o.preset);
    lg_strlcpy(o.command, "reproduce", sizeof o.command);
    lg_strlcpy(o.out_dir, "leakgate-reproduce", sizeof o.out_dir);
    o.modes = HX_MODE_FP32;
    o.sessions = 3;
    o.warmup = 0;
    o.steps = 2;
    o.reports = false;
    o.required_set = true; /* unless --require says otherwise */
    lg_strlcpy(o.require_arg, "exact", sizeof o.require_arg);
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            repro_usage(stdout);
            return 0;
        }
        fprintf(stderr, "leakgate reproduce: name the bug to reproduce (e.g. varmap-dup-ref)\n");
        repro_usage(stderr);
        return 2;
    }
    struct hx_inject bug;
    if (hx_inject_parse(argv[1], &bug) != LG_OK) {
        fprintf(stderr, "leakgate reproduce: %s\n", lg_errmsg());
        return 2;
    }
    if (bug.first < 0) bug.first = 0; /* from the first session: reproduce has no warm-up */
    int rc = parse(&o, argc, argv, 2, repro_usage, &help, repro_extra, &fixed);
    if (rc == LG_OK && !help && o.n_inject)
        rc = lg_fail(LG_EINVAL, "--inject does not apply: %s",
                     fixed ? "--fixed runs without any injection"
                           : "the BUG argument is the injection");
    if (rc == LG_OK && !help && !fixed) {
        o.inject[o.n_inject++] = bug;
        rc = hx_check_options(&o);
    }
    if (rc == LG_OK && !help) require_untagged(&o, &bug);
    if (rc != LG_OK) {
        fprintf(stderr, "leakgate reproduce: %s\n", lg_errmsg());
        return 2;
    }
    if (help) return 0;
    fprintf(stderr,
            "leakgate reproduce %s%s: %d %s session(s) of %s, each left to show what it leaves\n",
            bug.name, fixed ? " --fixed (today's code, no injection)" : "", o.sessions,
            hx_mode_name(o.modes & HX_MODE_FP32 ? HX_MODE_FP32 : o.modes), o.preset);
    return run_sessions(&o);
}
