/* test_hostile.c — the leakgate binary against what a hostile or unlucky user gives it: evidence
 * that is missing (no measured session, a stop, too few sessions), faults that cannot be made,
 * two runs in one directory, outputs that are FIFOs or symlinks, a full disk, a full stdout,
 * paths of 100 KB, malformed and endless input, contradicting options. Every case names the
 * command, the exit status it must give and the words its message must hold; none may crash,
 * hang, leak (the tracker's exit check; LeakSanitizer and UBSan in ci/sanitize's build) or
 * lose what finished. Each case runs in a directory of its own, with $L the binary. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"

TestSuite(hostile, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 600);

struct hcase {
    const char *name;
    const char *cmd;    /* shell: run in a fresh directory, $L is leakgate */
    int status;         /* the exit status it must give */
    const char *needle; /* what its output must say ("" for anything) */
    const char *after;  /* shell that must then exit 0 (NULL: none) */
    int needs;          /* NEEDS_STATS: judged on jemalloc's and RSS's channels, which the
                           sanitizer builds do not have; NEEDS_NO_ASAN: ulimit -v, which
                           AddressSanitizer's shadow memory cannot live with */
};
enum { NEEDS_STATS = 1, NEEDS_NO_ASAN = 2, NEEDS_AGENT = 4 /* leakgate exec's agent built */ };
#ifndef LG_HAVE_AGENT
#define LG_HAVE_AGENT 0
#endif

/* A 40-session clean run in ./clean and one with a 256 KiB/session untagged leak in ./leak. */
#define TWO_RUNS                                                                                   \
    "$L run --quiet --no-reports --out clean >/dev/null; "                                         \
    "$L run --quiet --no-reports --inject raw-malloc:256KiB --out leak >/dev/null; "
/* A 40-session clean run in ./r. */
#define CLEAN_RUN "$L run --quiet --no-reports --out r >/dev/null; "
/* ./only.jsonl: the run line of a clean run's results and nothing after it. */
#define ONLY_RUN_LINE CLEAN_RUN "head -n 1 r/results.jsonl > only.jsonl; "
/* The three shards of a 12-session soak in ./S. */
#define THREE_SHARDS                                                                               \
    "for i in 0 1 2; do $L soak --sessions 12 --shard $i/3 --quiet --no-reports --out S "          \
    ">/dev/null; done; "
/* Appended to a run: exit 0 when it reached a verdict (pass, leak or inconclusive: a short run
 * on a loaded machine may be any), 1 on a usage or I/O error (2) or worse; the case's after-check
 * judges what it wrote. */
#define ANY_VERDICT "; s=$?; test $s -ne 2 -a $s -lt 4"
/* A short fp32 run into ./DIR that must reach a verdict (ANY_VERDICT). */
#define RUN4_INTO(dir)                                                                             \
    "$L run --quiet --no-reports --sessions 4 --modes fp32 --out " dir " >/dev/null" ANY_VERDICT
/* ./h.jsonl: a history of one record, of a passing run. */
#define ONE_RECORD                                                                                 \
    "$L run --quiet --no-reports --sessions 4 --modes fp32 --history h.jsonl --out o >/dev/null; "

static const struct hcase cases[] = {
    /* ---- no pass without evidence ---- */
    {"sigterm during warm-up is inconclusive",
     "$L run --preset electricity --sessions 4 --quiet --no-reports --out w & p=$!; sleep 1; kill "
     "-TERM $p; wait $p",
     3, "stopped (SIGTERM) with no measured session", "grep -q '\"partial\":true' w/results.jsonl",
     0},
    {"sighup (a lost terminal) stops a run as sigterm does",
     "$L run --sessions 100000 --quiet --no-reports --out w & p=$!; sleep 2; kill -HUP $p; "
     "wait $p",
     3, "stopped (SIGHUP)", "grep -q '\"stopped\":\"SIGHUP\"' w/results.jsonl", 0},
    {"a results file of only its run line is inconclusive in report",
     ONLY_RUN_LINE "$L report only.jsonl -o rep --no-plots", 3,
     "no measured session, so no evidence",
     "grep -q INCONCLUSIVE rep/summary.md && ! grep -q 'PASS' rep/summary.md && grep -q '<failure' "
     "rep/junit.xml",
     0},
    {"a run line and a PASS verdict line with no session between them are not a PASS",
     CLEAN_RUN "(head -n 1 r/results.jsonl; tail -n 1 r/results.jsonl) > bare.jsonl; "
               "$L report bare.jsonl -o rep --no-plots",
     3, "claims more than its sessions show",
     "grep -q INCONCLUSIVE rep/summary.md && ! grep -q 'PASS' rep/summary.md", 0},
    {"soak --metrics naming its own results file is refused before it runs",
     "$L soak --sessions 6 --metrics S/results.jsonl --out S", 2,
     "that is the soak's own results.jsonl", "test ! -e S/results.jsonl", 0},
    {"a budgets file with a budget past 1e15 bytes is refused, as --budget is",
     "printf '{\"schema\":\"leakgate.budgets/1\",\"machine\":\"m\",\"device\":\"cpu\","
     "\"build\":\"b\",\"command\":\"c\",\"date\":\"2026-12-03\",\"workload\":\"w\","
     "\"channels\":{\"rss\":{\"band\":1e300,\"slope\":1,\"floor\":1,\"noise\":0}}}'"
     " > b.json; $L run --budgets b.json --out o",
     2, "channels.rss.band: 1e+300 is too large", NULL, 0},
    {"merge refuses shards judged by different budgets",
     "$L soak --sessions 8 --shard 0/2 --quiet --no-reports --out S >/dev/null; "
     "$L soak --sessions 8 --shard 1/2 --quiet --no-reports --budget rss.slope=1GiB --out T "
     ">/dev/null; $L merge S/shard-0-of-2 T/shard-1-of-2 -o M --no-reports",
     2, "their budgets differ", NULL, 0},
    {"a mode listed twice is refused", "$L run --modes fp32,int8,fp32 --out o", 2,
     "--modes fp32,int8,fp32: 'fp32' is listed twice", NULL, 0},
    {"compare with no measured session in HEAD is inconclusive",
     ONLY_RUN_LINE "$L compare r/results.jsonl only.jsonl", 3, "HEAD has no measured session", NULL,
     0},
    {"merge with a shard holding only its run line is inconclusive",
     "for i in 0 1; do $L soak --sessions 8 --shard $i/2 --quiet --no-reports --out S >/dev/null; "
     "done; "
     "head -n 1 S/shard-1-of-2/results.jsonl > t && mv t S/shard-1-of-2/results.jsonl; $L merge S "
     "-o M --no-reports",
     3, "INCONCLUSIVE", NULL, 0},
    {"one session is refused up front: too few to see the budget",
     "$L run --sessions 1 --warmup 0 --modes fp32 --inject raw-mmap:100MiB --out o", 2,
     "needs at least 4 measured sessions", NULL, NEEDS_STATS},
    {"without warm-up the baseline is the process before the first session",
     "$L run --sessions 4 --warmup 0 --modes fp32 --inject raw-mmap:100MiB --quiet --no-reports "
     "--out o",
     1, "LEAK: rss", NULL, NEEDS_STATS},
    {"a fault larger than the machine is refused up front",
     "$L run --inject raw-mmap:900GiB --out o", 2, "more than this machine's memory and swap", NULL,
     0},
    {"a fault that cannot be made fails the run",
     "ulimit -v 3000000; $L run --sessions 4 --quiet --no-reports --inject raw-malloc:8GiB --out o",
     4, "fault raw-malloc could not be injected", NULL, NEEDS_NO_ASAN},
    {"a required device channel without a device is a usage error",
     "$L run --require dev_process --out o", 2, "need --device cuda", NULL, 0},
    {"gross growth over two sessions is a leak",
     "$L reproduce raw-malloc:64MiB --preset tiny --sessions 2 --quiet", 1, "gross growth", NULL,
     NEEDS_STATS},
    {"compare judges per-session growth against the slope budget as run does",
     TWO_RUNS "$L compare clean/results.jsonl leak/results.jsonl", 1, "HEAD REGRESSED", NULL,
     NEEDS_STATS},
    {"two clean runs compare clean", TWO_RUNS "$L compare clean/results.jsonl clean/results.jsonl",
     0, "No regression beyond the budgets", NULL, 0},
    /* ---- defects found when it was tried as an attacker would ---- */
    {"a second run in the same --out is refused and the first is unaffected",
     "$L run --quiet --no-reports --sessions 200 --out same & p=$!; sleep 0.5; $L run --quiet "
     "--out same; s=$?; "
     "wait $p; echo first=$?; exit $s",
     2, "in use by another leakgate", "grep -q '\"type\":\"verdict\"' same/results.jsonl", 0},
    {"merge into a directory of its input is refused", THREE_SHARDS "$L merge S -o S/shard-0-of-3",
     2, "the directory of the input", NULL, 0},
    {"merge with fewer shards than --shards is refused",
     THREE_SHARDS "$L merge S/shard-0-of-3 S/shard-1-of-3 --shards 3 -o M", 2,
     "1 shard(s) of 3 missing: 2/3", NULL, 0},
    {"an empty --out is refused", "$L run --out ''", 2, "--out: the path is empty", NULL, 0},
    {"an empty soak --out is refused", "$L soak --out ''", 2, "--out: the path is empty", NULL, 0},
    {"a directory as --csv is refused",
     "printf '{}' > c.json; $L run --csv /tmp --csv-config c.json --out o", 2,
     "not a regular file (a directory)", NULL, 0},
    {"debug-state: a seed that is not a number", "$L debug-state --seed abc -o x", 2,
     "--seed: 'abc'", NULL, 0},
    {"debug-state: a negative batch", "$L debug-state --batch -5 -o x", 2, "--batch: '-5'", NULL,
     0},
    {"debug-state: a batch that is not a number", "$L debug-state --batch abc -o x", 2,
     "--batch: 'abc'", NULL, 0},
    {"debug-state: a batch that would wrap", "$L debug-state --batch 99999999999 -o x", 2,
     "--batch: '99999999999'", NULL, 0},
    {"report: an output directory that cannot be made is exit 2",
     CLEAN_RUN "$L report r/results.jsonl -o /proc/no/such", 2, "cannot create /proc/no", NULL, 0},
    {"a bad TMPDIR costs no document",
     CLEAN_RUN "TMPDIR=/nonexistent $L report r/results.jsonl -o rep", 0, "report.html",
     "test -s rep/junit.xml && test -s rep/summary.md && test -s rep/report.html && test -s "
     "rep/deltas.svg",
     0},
    {"a bad TMPDIR costs run no document",
     "TMPDIR=/nonexistent $L run --quiet --sessions 4 --out r", 0, "",
     "test -s r/junit.xml && test -s r/summary.md && test -s r/report.html", 0},
    {"leaked bytes at INT64_MAX do not overflow",
     "$L run --quiet --no-reports --sessions 4 --out r >/dev/null; head -n -1 r/results.jsonl | "
     "sed 's/\"leaked_host_bytes\":0/\"leaked_host_bytes\":9223372036854775807/' > big.jsonl; "
     "$L report big.jsonl -o rep --no-plots",
     1, "LEAK: tagged_host", NULL, 0},
    {"an endless line is refused, not read into memory", "$L report /dev/zero -o rep", 2,
     "a line longer than 64 MiB", NULL, 0},
    {"--csv-config without --csv", "$L run --csv-config x.json", 2, "--csv-config needs --csv",
     NULL, 0},
    {"--preset with --csv", "$L run --preset tiny --csv a.csv --csv-config b.json", 2,
     "--preset and --csv exclude each other", NULL, 0},
    {"reproduce --fixed with --inject", "$L reproduce varmap-dup-ref --fixed --inject adam-state",
     2, "--fixed runs without any injection", NULL, 0},
    {"reproduce honours @FIRST",
     "$L reproduce raw-malloc:64MiB@3 --preset tiny --sessions 5 --quiet --out r >/dev/null; "
     "grep -c '\"type\":\"session\"' r/results.jsonl",
     0, "5", "grep -q 'raw-malloc:64MiB@3' r/results.jsonl", 0},
    {"a negative seed", "$L run --seed -1", 2, "--seed: '-1' is not a non-negative integer", NULL,
     0},
    {"a full stdout is an error",
     TWO_RUNS "$L compare clean/results.jsonl clean/results.jsonl > /dev/full", 2,
     "cannot write standard output", NULL, 0},
    {"a 100 KB path keeps the reason",
     "p=$(printf 'a%.0s' $(seq 1 100000)); $L report \"$p\" -o rep", 2, "File name too long", NULL,
     0},
    {"a full disk on the results file names the session line",
     "trap '' XFSZ; ulimit -f 1000; $L run --quiet --no-reports --sessions 400 --out r", 2,
     "results.jsonl: writing the session", NULL, 0},
    {"a full disk on the plots says so and keeps the documents",
     "$L run --quiet --no-reports --sessions 40 --out r >/dev/null; (trap '' XFSZ; ulimit -f 40; "
     "$L report r/results.jsonl -o rep)",
     2, "is the disk full", "test -s rep/summary.md", 0},
    {"a FIFO at results.jsonl is replaced, not blocked on",
     "mkdir fo && mkfifo fo/results.jsonl && timeout 20 " RUN4_INTO("fo"), 0, "",
     "test -f fo/results.jsonl && grep -q '\"type\":\"verdict\"' fo/results.jsonl", 0},
    {"a symlink at results.jsonl is replaced, not followed",
     "mkdir sl && echo keep > target && ln -s ../target sl/results.jsonl && " RUN4_INTO("sl"), 0,
     "", "grep -qx keep target && test ! -L sl/results.jsonl", 0},
    {"a hard link at results.jsonl keeps what it held (a cp -al snapshot of an earlier run)",
     "mkdir o && echo precious > v && ln v o/results.jsonl && " RUN4_INTO("o"), 0, "",
     "grep -qx precious v && grep -q '\"type\":\"verdict\"' o/results.jsonl", 0},
    {"symlinks planted at the heap profiles' names are replaced, not written through",
     "echo keep > victim && mkdir -p o/heap && for s in $(seq 0 12); do ln -s ../../victim "
     "o/heap/session-$s.heap; done; $L run --modes fp32 --sessions 8 --steps 2 --inject "
     "raw-malloc:256KiB --quiet --no-reports --out o >/dev/null" ANY_VERDICT,
     0, "",
     "grep -qx keep victim && test -f o/heap/session-8.heap && ! test -L o/heap/session-0.heap",
     NEEDS_STATS},
    {"OUT/heap as a symlink is replaced by a folder, and nothing lands in its target",
     "mkdir elsewhere o && ln -s ../elsewhere o/heap && $L run --modes fp32 --sessions 4 "
     "--steps 2 --stacks --quiet --no-reports --out o >/dev/null" ANY_VERDICT,
     0, "",
     "test -z \"$(ls elsewhere)\" && test -d o/heap && ! test -L o/heap && test -f "
     "o/heap/session-4.heap",
     NEEDS_STATS},
    /* a writer blocked on a FIFO (jemalloc's creat() without the fix) is released by reading it */
    {"FIFOs planted at the heap profiles' names are replaced, not blocked on",
     "mkdir -p o/heap && for s in $(seq 0 12); do mkfifo o/heap/session-$s.heap; done; "
     "timeout 30 $L run --modes fp32 --sessions 4 --steps 2 --stacks --quiet --no-reports --out o "
     ">/dev/null; s=$?; for f in o/heap/*; do test -p $f && timeout 1 cat $f >/dev/null; done; "
     "test $s -ne 2 -a $s -lt 4",
     0, "", "test -f o/heap/session-4.heap && ! test -p o/heap/session-4.heap", NEEDS_STATS},
    {"exec: a FIFO and a symlink planted in OUT/heap by the program are not used by its agent",
     "echo keep > victim && timeout 30 $L exec --quiet --no-reports --stacks --sessions 4 "
     "--session-marker '^epoch' --out e -- sh -c 'mkfifo e/heap/$$.2.heap; ln -s ../../victim "
     "e/heap/$$.3.heap; for i in 1 2 3 4 5 6; do echo epoch $i; done' >/dev/null 2>&1; s=$?; "
     "for f in e/heap/*; do test -p $f && timeout 1 cat $f >/dev/null; done; "
     "test $s -ne 2 -a $s -lt 4",
     0, "", "grep -qx keep victim && test -z \"$(find e/heap -type p -o -type l)\"",
     NEEDS_STATS | NEEDS_AGENT},
    {"under umask 000 the output folders are not world-writable",
     "umask 000; $L run --modes fp32 --sessions 4 --steps 2 --stacks --quiet --no-reports --out "
     "o/sub >/dev/null" ANY_VERDICT,
     0, "",
     "test $(stat -c %a o) = 755 && test $(stat -c %a o/sub) = 755 && { ! test -e o/sub/heap "
     "|| test $(stat -c %a o/sub/heap) = 755; }",
     0},
    {"a world-writable OUT/heap left behind is made the owner's alone",
     "mkdir -p o/heap && chmod 777 o/heap && $L run --modes fp32 --sessions 4 --steps 2 --stacks "
     "--quiet --no-reports --out o >/dev/null" ANY_VERDICT,
     0, "", "test $(stat -c %a o/heap) = 755", NEEDS_STATS},
    {"the root folder as --out is refused before anything is written there",
     "$L run --sessions 4 --modes fp32 --no-reports --out /", 2, "refused as an output folder",
     NULL, 0},
    {"the home folder as --out is refused, and its files are left alone",
     "mkdir h && echo mine > h/summary.md && HOME=$PWD/h $L run --sessions 4 --modes fp32 "
     "--no-reports --out h/.",
     2, "refused as an output folder", "grep -qx mine h/summary.md && test ! -e h/results.jsonl",
     0},
    {"a file of the user's named like an artefact survives --no-reports: only what leakgate "
     "wrote (its manifest) is removed",
     "mkdir o && echo mine > o/summary.md && echo mine > o/deltas.png && $L run --sessions 4 "
     "--modes fp32 --steps 2 --quiet --no-reports --out o >/dev/null" ANY_VERDICT,
     0, "", "grep -qx mine o/summary.md && grep -qx mine o/deltas.png", 0},
    {"a manifest naming a file outside OUT, or reached through a link, removes nothing",
     "mkdir o p && echo keep > x && printf '../x\\n/x\\nsummary.md\\n' > o/.leakgate-manifest && "
     "echo mine > p/junit.xml && echo junit.xml > list && ln -s ../list p/.leakgate-manifest && "
     "for d in o p; do $L run --sessions 4 --modes fp32 --steps 2 --quiet --no-reports --out $d "
     ">/dev/null; s=$?; test $s -ne 2 -a $s -lt 4 || exit 1; done",
     0, "", "grep -qx keep x && grep -qx mine p/junit.xml && grep -qx junit.xml list", 0},
    {"a symbolic link as --out is refused, not followed",
     "mkdir t && ln -s t o && $L run --sessions 4 --modes fp32 --no-reports --out o", 2,
     "symbolic link", "test -z \"$(ls t)\"", 0},
    {"a symlink at a report's name is replaced, not written through",
     "$L run --quiet --no-reports --sessions 4 --out r >/dev/null; mkdir rep && echo keep > target "
     "&& "
     "ln -s ../target rep/summary.md && $L report r/results.jsonl -o rep --no-plots",
     0, "", "grep -qx keep target && grep -q leakgate rep/summary.md", 0},
    /* ---- the gate across commits: its flags and files ---- */
    {"a suppression rule without an expiry names file and line",
     "printf '# known\\ntag varmap/* reason=later\\n' > k.supp; $L run --suppressions k.supp "
     "--out o",
     2, "k.supp:2: expires=YYYY-MM-DD missing", NULL, 0},
    {"a suppression rule of an unknown kind names file and line",
     "printf 'stack foo expires=2030-01-01 reason=r\\n' > k.supp; $L run --suppressions k.supp "
     "--out o",
     2, "k.supp:1: unknown rule kind", NULL, 0},
    {"a suppressions file that is binary is refused",
     "head -c 3000 /dev/urandom | tr -d '\\n' > k.supp; $L run --suppressions k.supp --out o", 2,
     "k.supp:1:", NULL, 0},
    {"a FIFO as the suppressions file is refused, not blocked on",
     "mkfifo k.supp && timeout 20 $L run --suppressions k.supp --out o", 2, "FIFO", NULL, 0},
    {"a missing suppressions file", "$L run --suppressions none.supp --out o", 2,
     "none.supp: cannot read the suppressions", NULL, 0},
    {"a peak budget that is not CLASS=SIZE", "$L run --peak-budget act --out o", 2,
     "not [device:]CLASS=SIZE", NULL, 0},
    {"a peak budget of an impossible size", "$L run --peak-budget act=9EiB --out o", 2,
     "unknown size unit", NULL, 0},
    {"--baseline auto without a history", "$L run --baseline auto --out o", 2,
     "--baseline auto needs --history", NULL, 0},
    {"a baseline that is not a results file names file and line",
     "printf 'garbage\\n' > b.jsonl; $L run --baseline b.jsonl --out o", 2,
     "--baseline: b.jsonl:1: not JSON", NULL, 0},
    {"a history line that is not a record names file and line",
     "printf '{\"schema\":\"leakgate.history/1\"}\\n' > h.jsonl; $L run --history h.jsonl "
     "--out o",
     2, "h.jsonl:1: record", NULL, 0},
    {"a history in a directory that does not exist",
     "$L run --history /nonexistent/dir/h.jsonl --out o", 2, "cannot create it", NULL, 0},
    {"a symlink at the history is not followed, and the passing run exits 2",
     ": > target && ln -s target h.jsonl && $L run --quiet --no-reports --sessions 4 "
     "--modes fp32 --history h.jsonl --out o",
     2, "symbolic link", "test ! -s target", 0},
    {"history: a garbage file names file and line",
     "printf 'not json\\n' > h.jsonl; $L history h.jsonl", 2, "h.jsonl:1: not JSON", NULL, 0},
    {"history: a directory is refused", "mkdir h && $L history h", 2, "not a regular file", NULL,
     0},
    {"history: a bad drift budget", ONE_RECORD "$L history h.jsonl --drift-budget peak.*=lots", 2,
     "--drift-budget peak.*=lots", NULL, 0},
    {"history: too few records to judge drift is inconclusive", ONE_RECORD "$L history h.jsonl", 3,
     "with fewer than 4 records", NULL, 0},
    {"history: a torn last line is skipped, not fatal",
     ONE_RECORD "head -c 300 h.jsonl > t && cat t >> h.jsonl && $L history h.jsonl", 3,
     "1 line(s) a crash cut short skipped (the first: line 2)", NULL, 0},
};

static char *bin_dir_cmd(const struct hcase *c, int k, const char *suffix)
{
    char *cmd = NULL;
    if (asprintf(&cmd, "mkdir -p '%s/c%d' && cd '%s/c%d' && L='%s'; %s", lg_test_tmpdir(), k,
                 lg_test_tmpdir(), k, LEAKGATE_BIN, suffix ? suffix : c->cmd) < 0)
        return NULL;
    return cmd;
}

Test(hostile, every_case_gives_its_status_and_message)
{
    int failed = 0, skipped = 0;
    struct lg_out v = lg_run(LEAKGATE_BIN, "version");
    bool stats = strstr(v.text, "jemalloc") != NULL,
         asan = strstr(v.text, "AddressSanitizer") != NULL;
    free(v.text);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct hcase *c = &cases[k];
        if (((c->needs & NEEDS_STATS) && !(stats && !asan)) ||
            ((c->needs & NEEDS_NO_ASAN) && asan) || ((c->needs & NEEDS_AGENT) && !LG_HAVE_AGENT)) {
            printf("SKIP in this build (%s): %s\n",
                   asan    ? "AddressSanitizer"
                   : stats ? "no exec agent"
                           : "no jemalloc",
                   c->name);
            skipped++;
            continue;
        }
        char *cmd = bin_dir_cmd(c, (int)k, NULL);
        cr_assert_not_null(cmd);
        char *quoted = NULL;
        /* one shell per case: sh -c '...' with the single quotes of cmd escaped */
        size_t n = strlen(cmd), q = 0;
        quoted = malloc(4 * n + 3);
        cr_assert_not_null(quoted);
        quoted[q++] = '\'';
        for (size_t i = 0; i < n; i++) {
            if (cmd[i] == '\'') {
                memcpy(quoted + q, "'\\''", 4);
                q += 4;
            } else {
                quoted[q++] = cmd[i];
            }
        }
        quoted[q++] = '\'';
        quoted[q] = '\0';
        char *args = NULL;
        cr_assert_geq(asprintf(&args, "-c %s", quoted), 0);
        struct lg_out o = lg_run("/bin/sh", args);
        bool ok = o.status == c->status && strstr(o.text, c->needle) != NULL &&
                  !strstr(o.text, "still live at exit") && !strstr(o.text, "runtime error") &&
                  !strstr(o.text, "LeakSanitizer") && !strstr(o.text, "AddressSanitizer");
        cr_expect(ok, "case '%s': exit %d (expected %d), should say '%s':\n%s", c->name, o.status,
                  c->status, c->needle, o.text);
        if (ok && c->after) {
            char *check = bin_dir_cmd(c, (int)k, c->after);
            cr_assert_not_null(check);
            int st = system(check);
            cr_expect_eq(st, 0, "case '%s': after-check failed: %s", c->name, c->after);
            ok = st == 0;
            free(check);
        }
        failed += !ok;
        free(o.text);
        free(args);
        free(quoted);
        free(cmd);
    }
    cr_expect_eq(failed, 0, "%d of %zu hostile cases failed (%d skipped in this build)", failed,
                 sizeof cases / sizeof cases[0], skipped);
}
