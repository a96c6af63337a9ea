/* exec_cli.c — `leakgate exec [options] -- CMD [ARGS...]`: its options (those of `run` that
 * apply, parsed by the shared parser, and exec's own), and its exit status. */
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"

static void exec_usage(FILE *f)
{
    char process[128];
    fprintf(
        f,
        "usage: leakgate exec [options] -- CMD [ARGS...]\n"
        "Runs your program with leakgate's agent and judges its sessions as `run` judges the\n"
        "built-in trainer's: same channels, verdicts, results.jsonl, reports and exit statuses.\n"
        "Sessions end at leakgate_session_end() (include/leakgate.h), or with --session-marker\n"
        "at output lines. Untagged growth is named by allocation stack (jemalloc heap profiles,\n"
        "armed once a channel leaks). Exit: 0 pass, 1 leak, 2 usage error or a CMD that\n"
        "cannot carry the agent (not found, statically linked, setuid), 3 inconclusive, 4 CMD\n"
        "failed (non-zero exit or a signal, named; its sessions are kept) or internal error.\n\n"
        "  --session-marker RE a line CMD writes to stdout or stderr that matches the POSIX\n"
        "                      extended regex RE ends a session (no code change needed)\n"
        "  --warmup W          warm-up sessions, shown but not judged (default 1)\n"
        "  --sessions N        measured sessions CMD is expected to run; fewer is a partial run\n"
        "  --require CH,...    channels the verdict needs (default: %s,\n"
        "                      and the channels of what CMD uses: tagged_host,\n"
        "                      refs, tagged_device, dev_process)\n"
        "  --budgets FILE      budgets from `leakgate calibrate`; --budget CH.FIELD=SIZE one\n"
        "  --stacks            allocation stacks for tagged memory, and heap profiling from the\n"
        "                      first session on\n"
        "  --prof-sample LG    heap profiles sample every 2^LG bytes on average (default %d)\n"
        "  --no-prof           never arm heap profiling\n"
        "  --tcache            keep jemalloc's thread caches (faster; the quiesce then flushes\n"
        "                      only the thread that ends the session: docs/exec.md)\n"
        "  --no-python         a Python CMD (python, python3, python3.11, a venv's python)\n"
        "                      runs as it is: by default the Python binding is loaded into it\n"
        "                      (python: lines, who keeps it) as `python -m leakgate` would;\n"
        "                      LEAKGATE_PY=0 does the same (docs/exec.md)\n"
        "  --agent PATH        the agent library (default: beside leakgate)\n"
        "  --out DIR           results and reports (default leakgate-out)\n"
        "  --no-reports        results.jsonl only\n"
        "  --quiet             no progress output\n\n"
        "examples:\n"
        "  leakgate exec -- ./trainer                       # sessions from leakgate.h\n"
        "  leakgate exec --session-marker '^epoch [0-9]+ done' -- python3 train.py\n",
        rpt_channel_list(process, sizeof process, rpt_channel_mask(RPT_CHF_PROCESS), ", "),
        HX_EXEC_DEFAULT_LG_SAMPLE);
    hx_gate_usage(f); /* a class's peak under exec: not measured (the total is) */
}

/* Options of `run` that say what the built-in trainer does: meaningless for CMD. */
static bool run_only(const char *a)
{
    static const char *const flags[] = {"--preset",     "--modes", "--steps",  "--batch",
                                        "--device",     "--seed",  "--inject", "--csv",
                                        "--csv-config", NULL};
    for (const char *const *f = flags; *f; f++)
        if (!strcmp(a, *f)) return true;
    return false;
}

/* What a marker regex may cost to compile. glibc's regcomp copies a counted repetition's atom
 * once per count, nested counts multiplying, and an optional chain costs it quadratic memory:
 * x{1,1000} takes 9 MB, x{1,4000} 128 MB, ((a{1,100}){1,100}){1,100} gigabytes. Within both
 * limits the worst measured was 35 MB. */
#define MARKER_MAX_COUNT 1000 /* the largest count of one {m,n} */
#define MARKER_MAX_ATOMS 4096 /* the pattern's atoms once counted repetitions are expanded */
#define MARKER_MAX_DEPTH 64   /* nested groups */

/* A {m}, {m,} or {m,n} at *p: its largest count (m + 1 for {m,}), advancing *p past it; -1 when
 * *p is no interval (then '{' is an ordinary character). */
static long interval_at(const char **p)
{
    const char *q = *p + 1;
    char *end;
    if (*q < '0' || *q > '9') return -1;
    long m = strtol(q, &end, 10), n = m;
    if (*end == ',') {
        q = end + 1;
        n = *q >= '0' && *q <= '9' ? strtol(q, &end, 10) : m + 1;
        if (*q >= '0' && *q <= '9') q = end;
        end = (char *)q;
    }
    if (*end != '}') return -1;
    *p = end + 1;
    return n > m ? n : m;
}

/* The end of the bracket expression at p ('['): past its ']', classes ("[:alpha:]"),
 * collating elements and equivalence classes inside it, and a leading ']' included. */
static const char *bracket_end(const char *p)
{
    p += p[1] == '^' ? 2 : 1;
    if (*p == ']') p++;
    while (*p && *p != ']') {
        if (p[0] == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
            char close[3] = {p[1], ']', '\0'};
            const char *c = strstr(p + 2, close);
            if (c) p = c + 1;
        }
        p++;
    }
    return *p ? p + 1 : p;
}

/* LG_OK, or LG_EINVAL naming what would make regcomp take too much memory or time. Each atom
 * counts once, a group as its content, and {m,n} multiplies the atom or group before it by n. */
static int check_marker_cost(const char *re)
{
    uint64_t sum[MARKER_MAX_DEPTH + 1] = {0}, last[MARKER_MAX_DEPTH + 1] = {0};
    const uint64_t cap = (uint64_t)MARKER_MAX_ATOMS + 1; /* figures saturate here */
    int depth = 0;
    for (const char *p = re; *p;) {
        long count;
        uint64_t atom = 1;
        if (*p == '{' && (count = interval_at(&p)) >= 0) {
            if (count > MARKER_MAX_COUNT)
                return lg_fail(LG_EINVAL,
                               "--session-marker: a counted repetition of %ld (at most %d): "
                               "compiling it would take too much memory",
                               count, MARKER_MAX_COUNT);
            uint64_t grown = last[depth] * (uint64_t)(count > 1 ? count : 1);
            grown = grown < cap ? grown : cap;
            sum[depth] = sum[depth] - last[depth] + grown;
            last[depth] = grown;
        } else if (*p == '(') {
            if (++depth > MARKER_MAX_DEPTH)
                return lg_fail(LG_EINVAL, "--session-marker: groups nested deeper than %d",
                               MARKER_MAX_DEPTH);
            sum[depth] = last[depth] = 0;
            p++;
            continue;
        } else {
            if (*p == ')' && depth > 0)
                atom = sum[depth--], p++;
            else if (*p == '[')
                p = bracket_end(p);
            else
                p += *p == '\\' && p[1] ? 2 : 1;
            last[depth] = atom < cap ? atom : cap;
            sum[depth] += last[depth];
        }
        if (sum[depth] > MARKER_MAX_ATOMS)
            return lg_fail(LG_EINVAL,
                           "--session-marker: its counted repetitions expand to more than %d "
                           "atoms (nested {m,n} multiply): compiling it would take too much "
                           "memory",
                           MARKER_MAX_ATOMS);
    }
    return LG_OK;
}

static int parse_own(struct hx_exec_options *eo, int argc, char **argv, int i)
{
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-prof")) {
        eo->prof = false;
        return 1;
    }
    if (!strcmp(a, "--tcache")) {
        eo->tcache = true;
        return 1;
    }
    if (!strcmp(a, "--no-python")) {
        eo->python = false;
        return 1;
    }
    static const char *const takes[] = {"--session-marker", "--prof-sample", "--agent", NULL};
    int known = hx_option_with_value(a, v, takes);
    if (known <= 0) return known;
    int rc = LG_OK;
    if (!strcmp(a, "--session-marker")) {
        /* checked here: a bad one is a usage error, not an agent that cannot start; its size
         * and its counts first, so that compiling it stays cheap */
        if (strlen(v) >= sizeof eo->marker) {
            lg_fail(LG_EINVAL, "--session-marker: longer than %zu bytes", sizeof eo->marker - 1);
            return -1;
        }
        if (check_marker_cost(v) != LG_OK) return -1;
        regex_t re;
        int bad = v[0] ? regcomp(&re, v, REG_EXTENDED | REG_NOSUB) : REG_BADPAT;
        char why[200] = "empty";
        if (bad && v[0]) regerror(bad, &re, why, sizeof why);
        if (!bad) regfree(&re);
        if (bad)
            rc = lg_fail(LG_EINVAL, "--session-marker '%s': not a POSIX extended regex (%s)", v,
                         why);
        else
            lg_strlcpy(eo->marker, v, sizeof eo->marker);
    } else if (!strcmp(a, "--prof-sample")) {
        rc = hx_parse_int(a, v, 8, 30, &eo->lg_sample);
    } else if (lg_strlcpy(eo->agent, v, sizeof eo->agent)) {
        rc = lg_fail(LG_EINVAL, "--agent: path too long");
    }
    return rc == LG_OK ? 2 : -1;
}

/* Parses argv (argv[0] is "exec"); *help when --help was given. */
static int parse(struct hx_exec_options *eo, int argc, char **argv, bool *help)
{
    struct hx_options *o = &eo->o;
    memset(eo, 0, sizeof *eo);
    hx_options_defaults(o);
    lg_strlcpy(o->command, "exec", sizeof o->command);
    o->sessions = 0; /* as many as CMD runs, unless --sessions says how many to expect */
    eo->lg_sample = HX_EXEC_DEFAULT_LG_SAMPLE;
    eo->prof = true;
    eo->python = true;
    *help = false;
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-') break; /* CMD starts here */
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            exec_usage(stdout);
            *help = true;
            return LG_OK;
        }
        if (run_only(a))
            return lg_fail(LG_EINVAL,
                           "%s does not apply to exec: it describes the built-in trainer (see "
                           "leakgate exec --help)",
                           a);
        int n = parse_own(eo, argc, argv, i);
        if (n == 0) n = hx_parse_common(o, argc, argv, i);
        if (n < 0) return lg_errcode() ? lg_errcode() : LG_EINVAL;
        if (n == 0) return lg_fail(LG_EINVAL, "unknown option '%s' (see leakgate exec --help)", a);
        i += n;
    }
    if (i >= argc)
        return lg_fail(LG_EINVAL, "no command to run: leakgate exec [options] -- CMD [ARGS...]");
    eo->argv = argv + i;
    /* The device is CMD's, not an option: --require may name device channels. The shared check
     * resolves the budgets; --require is resolved here, and the minimum sessions are checked
     * against what it requires (a channel left out of it needs no sessions). */
    bool req_set = o->required_set;
    char req[sizeof o->require_arg];
    lg_strlcpy(req, o->require_arg, sizeof req);
    o->required_set = false;
    int sessions = o->sessions;
    o->sessions = 0; /* the shared check of the minimum waits for the required set */
    int rc = hx_check_options(o);
    o->sessions = sessions;
    if (rc == LG_OK && req_set) {
        rc = rpt_parse_required(req, true, &o->required);
        o->required_set = true;
    }
    if (rc == LG_OK) rc = hx_check_sessions(o, o->sessions, "--sessions");
    return rc;
}

int hx_cmd_exec(int argc, char **argv)
{
    struct hx_exec_options eo;
    bool help;
    int rc = parse(&eo, argc, argv, &help);
    if (rc != LG_OK) return hx_usage_failed("exec");
    if (help) return 0;
    hx_install_signal_handlers();
    struct rpt_verdict v;
    bool cmd_failed = false;
    rc = hx_exec_run(&eo, &v, &cmd_failed);
    if (rc != LG_OK) {
        fprintf(stderr, "leakgate exec: %s\n", lg_errmsg());
        return lg_exit_code(rc);
    }
    /* a failed CMD is exit 4 (set by the verdict), or 1 when it died after showing a leak */
    return cmd_failed && v.exit_code == 0 ? 4 : v.exit_code;
}
