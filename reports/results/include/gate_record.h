/* gate_record.h — the gate as the results record it (results 1.5): the suppression rules a run
 * was judged with, its peak budgets and what each found, and its baseline comparison. The gate
 * (reports/gate/gate.h) fills these; the results file writes and reads them (results_gate.c),
 * and the reports show them. */
#ifndef LG_GATE_RECORD_H
#define LG_GATE_RECORD_H

#include "results.h"

/* ---- suppressions ------------------------------------------------------------------------- */

#define RPT_MAX_RULES     64
#define RPT_MAX_RULE_LINE 1024 /* bytes in one line of a rules file */

enum rpt_rule_kind { RPT_RULE_TAG = 0, RPT_RULE_FRAME };

struct rpt_rule {
    int line; /* in its file, 1-based: how reports name it ("known.supp:3") */
    enum rpt_rule_kind kind;
    char glob[160];
    int64_t allow;    /* bytes per session; -1: any amount */
    char expires[11]; /* "YYYY-MM-DD": suppresses through that day (UTC) */
    bool expired;     /* expires is before the day the rules were read */
    char reason[200];
};

struct rpt_suppressions {
    char file[512];
    char today[11]; /* the day expiry was judged against */
    int n;
    struct rpt_rule rules[RPT_MAX_RULES];
};

/* ---- peak budgets ------------------------------------------------------------------------- */

#define RPT_MAX_PEAK_BUDGETS 16

/* --peak-budget [device:]CLASS=SIZE: a session whose peak tagged bytes of CLASS (a tag class,
 * "act", or "total" for every tag) exceed SIZE fails. */
struct rpt_peak_budget {
    char cls[LG_MAX_CLASS];   /* a tag class, or "total" */
    char space[LG_MAX_SPACE]; /* "host" (the default) or "device" */
    int64_t limit;            /* bytes */
};

/* A peak budget judged over a run's sessions. */
struct rpt_peak_check {
    struct rpt_peak_budget budget;
    enum rpt_status status; /* pass, leak (exceeded), inconclusive (not measured) */
    int64_t peak;           /* the highest peak seen (RPT_NONE: never measured) */
    int session;            /* the session that had it */
    int over;               /* sessions over the budget */
    int measured;           /* sessions that measured it */
    int n_tags;
    struct rpt_peak_tag tags[RPT_PEAK_TAGS]; /* the class's top tags in that session */
    char why[320];
};

/* ---- the gate ----------------------------------------------------------------------------- */

/* A baseline comparison: the result of rpt_compare, or none yet. */
struct rpt_baseline_check {
    char source[600]; /* "base/results.jsonl", "history.jsonl (auto: ...)" */
    char commit[64];  /* the baseline's commit, "" when unknown */
    int result;       /* enum rpt_compare_result, or -1: no baseline yet (first record) */
    char why[400];
};

struct rpt_gate {
    bool has_rules;
    struct rpt_suppressions rules;
    int n_peaks;
    struct rpt_peak_check peaks[RPT_MAX_PEAK_BUDGETS];
    bool has_baseline;
    struct rpt_baseline_check baseline;
    enum rpt_status own_status; /* the channels' verdict, before the gate folded in */
    int own_exit;
};

#endif
