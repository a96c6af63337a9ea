/* history.h — the gate across commits: one summary record per run appended to a history file
 * (JSON Lines, "leakgate.history/1", docs/results-schema.md "The history file"), the baseline a
 * run is compared with (the last passing record of its workload), and drift over commits that no
 * single comparison flags (a robust trend of each figure over the last N records).
 *
 * Worked example (what `leakgate run --history hist.jsonl --baseline auto` does at its end, and
 * what `leakgate history hist.jsonl -o out` makes of the file):
 *
 *   struct rpt_history *h = NULL;
 *   rpt_history_load(&h, "hist.jsonl");                // a torn last line is skipped, counted
 *   char wl[RPT_WORKLOAD_MAX];
 *   rpt_workload_key(&results->run, NULL, wl, sizeof wl);  // "run tiny fp32,int8 steps=10 cpu"
 *   const struct rpt_history_record *base = rpt_history_baseline(h, wl);   // NULL: none yet
 *   struct rpt_results *b = NULL;
 *   if (base) rpt_history_to_results(base, &b);        // compare's rules work on it
 *   ...
 *   struct rpt_history_record rec;
 *   rpt_history_record_from(&rec, results, &(struct rpt_history_meta){.commit = "abc123"});
 *   rpt_history_append("hist.jsonl", &rec);            // flock + one write(): safe against a
 *   rpt_history_record_fini(&rec);                     // second writer and a crash mid-write
 *   rpt_results_free(b);
 *   rpt_history_free(h);
 *
 *   struct rpt_drift *d = NULL; int nd = 0;
 *   rpt_history_drift(h, wl, 10, NULL, 0, &d, &nd);    // d[i].drifting: rising beyond budget
 *   free(d);
 *
 * Memory: ordinary heap memory, freed by the function each returner names.
 */
#ifndef LG_HISTORY_H
#define LG_HISTORY_H

#include <stdio.h>

#include "results.h"

#define RPT_HISTORY_SCHEMA       "leakgate.history/1"
#define RPT_HISTORY_MAX_SESSIONS 1000 /* a record keeps the series of its last 1000 sessions */
#define RPT_HISTORY_TAGS         20   /* retained tags kept per record, largest first */
#define RPT_WORKLOAD_MAX         256

/* A tag and its bytes in a record: retained (leaked) bytes over the measured sessions, or the
 * highest peak of any session. */
struct rpt_hist_tag {
    char tag[LG_MAX_NAME];
    char space[LG_MAX_SPACE];
    int64_t bytes;
    int sessions; /* measured sessions it leaked in (retained tags) */
};

struct rpt_hist_class {
    char cls[LG_MAX_CLASS];
    char space[LG_MAX_SPACE];
    int64_t bytes; /* the class's highest peak over the sessions */
};

struct rpt_history_record {
    int line; /* in the file it was read from (0: not read) */
    char commit[64], branch[128], date[32];
    char workload[RPT_WORKLOAD_MAX];
    char command[16], version[32];
    char hostname[64], device[96];
    int cpus;
    int64_t mem_bytes;
    char preset[32], modes[64], cmd[512];
    int steps;
    unsigned required;
    enum rpt_status status; /* the run's final verdict, the gate folded in */
    int exit_code;
    char summary[768];
    int n_sessions;                 /* sessions in the series: the last RPT_HISTORY_MAX_SESSIONS */
    char *kinds;                    /* 'w' warm-up or 'm' measured, one per session, NUL-ended */
    int64_t *series[RPT_NCHANNELS]; /* rpt_session_value per session; RPT_NONE: not measured */
    double growth[RPT_NCHANNELS];   /* per session: the verdict's slope (statistical), the median
                                       a session left (exact); NaN when not measured */
    int64_t level[RPT_NCHANNELS];   /* median reading after the measured sessions; RPT_NONE */
    int64_t peak_host, peak_device; /* the highest peak tagged bytes of any session; RPT_NONE */
    int n_classes;
    struct rpt_hist_class *classes; /* per-class peaks, largest first */
    int n_peak_tags;
    struct rpt_hist_tag *peak_tags; /* tags with the highest peaks, largest first */
    int n_tags;
    struct rpt_hist_tag *tags; /* retained bytes per tag, largest first */
};

/* What a run does not know about itself. */
struct rpt_history_meta {
    const char *commit, *branch; /* "" or NULL when unknown */
    const char *workload;        /* NULL: rpt_workload_key of the run */
};

/* The workload a run measured, for picking its baseline and grouping drift: the command, the
 * model and what it trains, the device, exec's command line, faults and the shard ("run tiny
 * fp32,int8 steps=10 cpu"). `name` (--workload) replaces it when given. */
void rpt_workload_key(const struct rpt_run *run, const char *name, char *buf, size_t size);

/* Summarises loaded results (their verdict line: the final verdict) into *h (freed with
 * rpt_history_record_fini). LG_ENOMEM on failure. */
int rpt_history_record_from(struct rpt_history_record *h, const struct rpt_results *r,
                            const struct rpt_history_meta *meta);
void rpt_history_record_fini(struct rpt_history_record *h);

/* Appends one record as one line: under an exclusive flock on the file, with a single write()
 * of the whole line to a file opened O_APPEND (lg_open_regular: no symlink, no FIFO), and a
 * newline first when a crash left the last line without one. LG_EIO naming the file. */
int rpt_history_append(const char *path, const struct rpt_history_record *h);

struct rpt_history {
    char path[4096];
    int n;
    struct rpt_history_record *rec; /* in file order */
    int torn;                       /* lines a crash cut short, skipped */
    int first_torn;                 /* the first of them (its line number) */
};
/* Reads a history file (under a shared flock). Strict: a line that is JSON but not a record of
 * this schema is LG_EFORMAT naming file, line and member; a line that is not JSON is skipped and
 * counted only when it is the start of a record a crash cut short (the line ends before its
 * record does); a whole line that is not JSON (a duplicate key) is LG_EFORMAT. *out is freed with
 * rpt_history_free. LG_EIO when it cannot be read. */
int rpt_history_load(struct rpt_history **out, const char *path);
/* The same from text in memory (the fuzzer's entry point); path names it in messages. */
int rpt_history_parse(struct rpt_history **out, const char *path, const char *text, size_t len);
void rpt_history_free(struct rpt_history *h);

/* The last record of the workload whose verdict passed (or saturated); NULL when none. */
const struct rpt_history_record *rpt_history_baseline(const struct rpt_history *h,
                                                      const char *workload);
/* Whether any record is of the workload. */
bool rpt_history_has(const struct rpt_history *h, const char *workload);
/* A record as results compare can judge: its sessions' per-channel figures, its retained tags
 * (on its first measured session), its verdict. *out is freed with rpt_results_free. */
int rpt_history_to_results(const struct rpt_history_record *h, struct rpt_results **out);

/* ---- drift over commits ------------------------------------------------------------------- */

/* A figure's budget over the window: the rise of its trend line may not exceed
 * max(bytes, pct% of where the line starts). `metric` is an fnmatch glob ("peak.*"). */
struct rpt_drift_budget {
    char metric[96];
    double bytes, pct;
};
/* Parses "peak.*=5%", "level.rss=8MiB", "growth.je_allocated=2KiB"; LG_EINVAL with a message. */
int rpt_drift_budget_parse(const char *spec, struct rpt_drift_budget *out);

#define RPT_DRIFT_MIN 4 /* the fewest records a trend is judged on (a finite Sen bound) */

struct rpt_drift {
    char metric[128];       /* "peak.act", "level.je_allocated", "growth.rss", "tag.varmap/x" */
    int n;                  /* records in the window that have the figure */
    double first, last;     /* the trend line at the window's first and last record */
    double slope, lo, hi;   /* Theil–Sen per record, with its 95% interval */
    double rise, budget;    /* slope × (n − 1), and what it may be */
    enum rpt_status status; /* leak: drifting; pass; inconclusive: fewer than RPT_DRIFT_MIN */
    char why[320];
};
/* Judges every figure of the workload's last `last` records (0: all); budgets apply in order,
 * the first matching glob wins, over the defaults (10%, and at least 64 KiB for peaks, 1 MiB
 * for levels, 4 KiB per session for growth and tags, 1 object for refs). *out (freed with
 * free()) lists each figure, drifting ones first. */
int rpt_history_drift(const struct rpt_history *h, const char *workload, int last,
                      const struct rpt_drift_budget *b, int nb, struct rpt_drift **out, int *n);

/* ---- the command ---------------------------------------------------------------------------- */

/* history FILE [-o DIR] [--workload W] [--last N] [--drift-budget METRIC=SIZE|PCT%]
 * [--no-plots]: the per-commit table, drift, and with -o the plots and history.html. Exit: 0 no
 * drift, 1 drift, 2 usage or input error, 3 too few records to judge a workload. */
int rpt_cmd_history(int argc, char **argv);

#endif
