/* main.c — the leakgate command line: one binary, one subcommand per job. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exec.h"
#include "harness.h"
#include "history.h"
#include "reports.h"

#ifndef LG_VERSION
#define LG_VERSION "0.0.0"
#endif

/* jemalloc reads this at start-up: no thread caches. thread.tcache.flush empties only the
 * calling thread's cache, so regions cached by OpenBLAS's, CUDA's or cuBLAS's threads would move
 * jemalloc's figures between snapshots; the model never used them (the tracker allocates with
 * MALLOCX_TCACHE_NONE), so the cost falls on the harness's few untagged allocations
 * (docs/design.md, "Quiesce"). Heap profiling is available but idle (prof_active:false): a
 * leak proven on an untagged channel arms it, and the stacks that grew are named
 * (exec_prof.c). MALLOC_CONF can still override any of it. */
const char *malloc_conf = "tcache:false,prof:true,prof_active:false,lg_prof_sample:17";

static void usage(FILE *f)
{
    fprintf(f,
            "leakgate %s — memory-leak regression harness for ML training code\n\n"
            "usage: leakgate COMMAND [options]   (leakgate COMMAND --help for each)\n\n"
            "  run          repeated training sessions; pass / leak / inconclusive (the CI gate)\n"
            "  exec         your own program's sessions, judged the same way (-- CMD [ARGS...])\n"
            "  reproduce    re-create a known leak (varmap-dup-ref: the original 815 MB leak)\n"
            "  soak         hours of sessions with a sliding-window trend test; --shard i/n\n"
            "  merge        combine soak shards' results into one report and verdict\n"
            "  report       rebuild plots, JUnit, Markdown, CSV and HTML from results.jsonl\n"
            "  compare      judge HEAD against BASE: per-channel growth and per-tag leaks\n"
            "  history      a history file (--history) per commit: table, drift, plots, HTML\n"
            "  calibrate    measure this machine's noise; write a budgets file for --budgets\n"
            "  debug-state  one batch's parameters, inputs, outputs and gradients (safetensors)\n"
            "  version      print the version\n\n"
            "Exit status: 0 pass, 1 leak found, 2 usage or input error, 3 inconclusive,\n"
            "4 internal error.\n",
            LG_VERSION);
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    if (!strcmp(cmd, "run")) return hx_cmd_run(sub_argc, sub_argv);
    if (!strcmp(cmd, "exec")) return hx_cmd_exec(sub_argc, sub_argv);
    if (!strcmp(cmd, "reproduce")) return hx_cmd_reproduce(sub_argc, sub_argv);
    if (!strcmp(cmd, "soak")) return hx_cmd_soak(sub_argc, sub_argv);
    if (!strcmp(cmd, "merge")) return hx_cmd_merge(sub_argc, sub_argv);
    if (!strcmp(cmd, "report")) return rpt_cmd_report(sub_argc, sub_argv);
    if (!strcmp(cmd, "calibrate")) return hx_cmd_calibrate(sub_argc, sub_argv);
    if (!strcmp(cmd, "compare")) return rpt_cmd_compare(sub_argc, sub_argv);
    if (!strcmp(cmd, "history")) return rpt_cmd_history(sub_argc, sub_argv);
    if (!strcmp(cmd, "debug-state")) return hx_cmd_debug_state(sub_argc, sub_argv);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("leakgate %s (%s%s)\n", LG_VERSION, trk_allocator_name(),
               trk_build_has_rss() ? "" : "; RSS not measured under AddressSanitizer");
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "leakgate: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}

/* What a command printed must reach its reader: a full disk or a closed pipe on stdout is an
 * error (exit 2 unless the command already failed), never a silent success. */
int main(int argc, char **argv)
{
    int code = dispatch(argc, argv);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "leakgate: cannot write standard output: %s\n",
                strerror(errno ? errno : EIO));
        if (code == 0) code = 2;
    }
    return code;
}
