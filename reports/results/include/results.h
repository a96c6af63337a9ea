/* results.h — the results of a leakgate run as data: what the harness writes (one JSON line
 * per event, flushed) and what every report is made from. Schema: docs/results-schema.md
 * ("leakgate.results/1").
 *
 * Worked example (the harness side):
 *
 *   struct rpt_writer *w = NULL;
 *   rpt_writer_open(&w, "out/results.jsonl", &run);    // writes the "run" line
 *   for each session: rpt_writer_session(w, &s);       // one "session" line, fflush + fsync
 *   rpt_writer_verdict(w, &v);                         // the "verdict" line
 *   rpt_writer_close(w);
 *
 * and the reports side:
 *
 *   struct rpt_results *r = NULL;
 *   if (rpt_results_load(&r, "out/results.jsonl") != LG_OK) die(lg_errmsg());
 *   rpt_write_all(r, "out", RPT_ALL);                  // plots, JUnit, Markdown, CSV, HTML
 *   rpt_results_free(r);
 *
 * Memory here is ordinary heap memory (reports are not the model's memory); a writer keeps
 * nothing per session, so a soak's memory stays flat.
 */
#ifndef LG_RESULTS_H
#define LG_RESULTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lg_base.h"
#include "lg_leaks.h"
#include "channels.h"

#define RPT_SCHEMA "leakgate.results/1"
/* The schema this build writes. 1.1: required, budget noise, stopped; 1.2: exec's cmd,
 * prof_sample, heap_profile; 1.3: notes; 1.4: invalid_frees; 1.5: peaks and suppressed
 * (session), gate (verdict); 1.6: census; 1.7: blas, blas_core, blas_path (run); 1.8: processes
 * (session and verdict). */
#define RPT_SCHEMA_WRITTEN "leakgate.results/1.9"

/* The channels (enum rpt_channel) and everything known about each: reports/channels.h. */
const char *rpt_channel_name(enum rpt_channel c); /* "tagged_host", ... */
int rpt_channel_from_name(const char *name);      /* -1 when unknown */
bool rpt_channel_exact(enum rpt_channel c);       /* zero-tolerance channels */
/* The bytes one reading of the channel moves by: 1 for a byte counter (jemalloc allocated,
 * tagged bytes), a page for active, resident and RSS, 2 MiB for the device's views. A rise
 * smaller than this is not a rise (the steady-rise rule, docs/design.md). */
double rpt_channel_granularity(enum rpt_channel c);
/* The channels whose row has every RPT_CHF_* flag of `flags`, as RPT_BIT()s. */
unsigned rpt_channel_mask(unsigned flags);
/* The names of the channels in mask, joined by sep ("je_allocated, je_active"), into buf. */
const char *rpt_channel_list(char *buf, size_t size, unsigned mask, const char *sep);
/* The statistical (not exact) channels' names, ", "-joined, into buf. */
const char *rpt_statistical_channels(char *buf, size_t size);

enum rpt_status {
    RPT_PASS = 0,
    RPT_LEAK,         /* a leak was found */
    RPT_SATURATING,   /* growth that shrinks each session: reported, not a leak */
    RPT_INCONCLUSIVE, /* the data cannot decide: more sessions needed */
    RPT_UNAVAILABLE,  /* channel not measured in this build or on this machine */
    RPT_ERROR,        /* the run itself failed (usage, input, internal) */
};
const char *rpt_status_name(enum rpt_status s); /* "pass", "leak", ... */
int rpt_status_from_name(const char *name);

#define RPT_NONE INT64_MIN /* a value not measured */

/* ---- the run line ------------------------------------------------------------------------ */

struct rpt_budget {   /* per statistical channel, as used by the verdict */
    double band;      /* bytes: |delta| tolerated, one-time steps included */
    double slope;     /* bytes per session tolerated */
    double floor;     /* bytes: late-vs-early median shift needed to call a leak */
    double noise;     /* bytes: per-session jitter seen on clean runs (a robust
                         sigma); 0 when none was seen; NaN when never measured */
    bool measured;    /* the figures come from a measurement (calibrate), not a guess */
    char source[160]; /* where they came from: "measured on HOST (...) by leakgate
                         calibrate ..., DATE", "--budget", "FILE: ..." */
};

struct rpt_run {
    char schema[32];  /* RPT_SCHEMA */
    char version[32]; /* leakgate version */
    char command[16]; /* "run", "reproduce", "soak" */
    char started[32]; /* ISO 8601 UTC */
    char hostname[64];
    int cpus;
    int64_t mem_bytes;
    char device[96];    /* "cpu" or "cuda: NVIDIA H200" */
    char blas[48];      /* the trainer's CPU GEMM library, "OpenBLAS 0.3.21" ("" for exec) */
    char blas_core[32]; /* its kernels: "Cooperlake" */
    char blas_path[24]; /* how they were chosen (kn_blas.h): "cpu-features", "openblas-table", … */
    char cmd[512];      /* exec: the program's command line ("" for the trainer) */
    int64_t prof_sample; /* heap profiles: mean bytes between samples (0: none) */
    char preset[32];
    char modes[64]; /* "fp32,int8" */
    int sessions, warmup, steps;
    uint64_t seed;
    bool stacks;
    char inject[96];   /* "" or "raw-malloc:256KiB@40" */
    char shard[16];    /* "" or "2/4" */
    unsigned required; /* channels the verdict requires (bit 1u << channel) */
    struct rpt_budget budgets[RPT_NCHANNELS];
};

/* ---- a session line ---------------------------------------------------------------------- */

/* What a session left behind — leak groups, unbalanced references, classes — is described by
 * lg_leaks.h's structs, the tracker's own: one data model from the ledger to every report. */

struct rpt_sample {           /* a timeline point inside a session */
    int step;                 /* training step, or -1 for phase marks */
    char phase[16];           /* "build", "train", "validate", "save", "int8", "qat", "free" */
    double t;                 /* seconds since the session began */
    int64_t v[RPT_NCHANNELS]; /* the sampled channels' readings (RPT_CHF_SAMPLED); RPT_NONE: the
                                 others, or not measured */
};

/* Untagged growth by the stack that allocated it: a diff of two jemalloc heap profiles. The
 * profiles sample allocations (one per prof_sample bytes on average); estimates are unbiased
 * and `samples` says how many sampled objects they rest on (docs/exec.md, the uncertainty). */
struct rpt_alloc_stack {
    int64_t bytes;   /* estimated live bytes gained since the base profile */
    int64_t objects; /* estimated live objects gained */
    int64_t samples; /* sampled objects gained: the estimate's evidence */
    char *frames;    /* symbolised, innermost first, one a line */
};
/* The 95% interval [*lo, *hi] of a->bytes, from its samples and the run's prof_sample (a
 * Wilson score interval of the binomial sampling: asymmetric, and right with few samples). */
void rpt_alloc_interval(const struct rpt_alloc_stack *a, int64_t prof_sample, double *lo,
                        double *hi);

/* A tag class's peak during a session, with the tags of the class whose own peaks were
 * highest (results 1.5; gate.h's peak budgets judge it). */
#define RPT_PEAK_TAGS 3
struct rpt_peak_tag {
    char tag[LG_MAX_NAME];
    int64_t bytes;
};
struct rpt_class_peak {
    char cls[LG_MAX_CLASS];
    char space[LG_MAX_SPACE]; /* "host" or "device" */
    int64_t bytes;            /* the class's high-water mark during the session */
    int n_tags;
    struct rpt_peak_tag tags[RPT_PEAK_TAGS]; /* highest peak first */
};

/* What a suppression rule (gate.h) took out of a session's verdict, or would have taken had it
 * not expired: never hidden, always listed (results 1.5). */
struct rpt_suppressed {
    char name[LG_MAX_KIND + LG_MAX_NAME]; /* a leak group's tag, or an object's "kind/name" */
    char space[LG_MAX_SPACE];             /* "host", "device"; "" for an object */
    bool object;                          /* a shared object with unreleased retains */
    int64_t bytes;                        /* bytes suppressed (0 for an object) */
    int64_t over;                         /* bytes beyond the rule's allowance: still a leak */
    int rule;                             /* the rule's line in the suppressions file */
    bool expired;                         /* the rule had expired: nothing was suppressed */
};

/* The exact census under exec (results 1.6): the untagged blocks born in one earlier session
 * of the run and still alive at this session's end, counted exactly (an arena per session,
 * agent/lga_census.c); frames name them when a heap profile could (sampled; NULL otherwise). */
struct rpt_census {
    int born;       /* the session (its index in the run) the blocks were born in */
    int64_t bytes;  /* exact */
    int64_t blocks; /* exact */
    char *frames;   /* symbolised, innermost first, one a line; NULL: not named */
};

/* A process of CMD's tree at a session's end under exec (results 1.8): a descendant of CMD,
 * read from /proc while CMD waits for leakgate's reply (harness/exec/exec_tree.c). */
#define RPT_PROC_CMD 256
struct rpt_proc {
    int pid;
    int ppid;
    char cmd[RPT_PROC_CMD]; /* its command line, arguments joined by spaces, printable ASCII */
    int64_t rss;            /* resident bytes (smaps_rollup Rss); RPT_NONE when unreadable */
    bool agent;             /* the agent is mapped in it; false: a static program, or one whose
                               LD_PRELOAD was removed: seen by its RSS only */
};

struct rpt_session {
    int index;    /* 0-based over the run, warm-up included */
    char mode[8]; /* "fp32", "int8", "qat" */
    bool warmup;
    double duration_s;
    int steps;
    double train_loss, val_loss, quant_val_loss; /* NaN when not measured */
    int64_t absolute[RPT_NCHANNELS];             /* after quiesce; RPT_NONE when unavailable */
    int64_t delta[RPT_NCHANNELS];                /* against the baseline; RPT_NONE in warm-up */
    int64_t peak_tagged_host, peak_tagged_device;
    int64_t leaked_host_bytes, leaked_device_bytes; /* born in the session, still live */
    int64_t invalid_frees; /* frees of unknown pointers and double frees the tracker saw
                              during the session (0 when none; results 1.4) */
    int n_groups;
    struct lg_leak_group *groups; /* largest first */
    int n_refs;
    struct lg_ref_leak *refs;
    int n_classes;
    struct lg_class_bytes *classes;
    int n_samples;
    struct rpt_sample *samples;
    int alloc_base;       /* heap profile: the session whose profile the diff starts at */
    int alloc_sessions;   /* sessions since then (0: no heap profile diff); 1 after a profile of
                             one session whole, whose allocations alone were sampled */
    int64_t alloc_sample; /* the profiles' mean sampling interval, bytes (1: every allocation);
                             0 when not said (before 1.9: the run's prof_sample) */
    int n_alloc_stacks;
    struct rpt_alloc_stack *alloc_stacks; /* largest growth first */
    int n_notes;
    char **notes;        /* lines the program attached (leakgate_session_note) */
    bool peaks_measured; /* the session recorded its per-class peaks (peaks may be empty) */
    int n_peaks;
    struct rpt_class_peak *peaks;
    int n_suppressed;
    struct rpt_suppressed *suppressed;
    int64_t suppressed_since[2]; /* bytes suppressed in the measured sessions so far, this one
                                    included (host, device): what the statistical channels of
                                    that space see of them, taken out of their deltas */
    char error[256];             /* "" or what failed inside the session */
    bool census_counted;         /* the census counted this session (exec, thread caches off) */
    int n_census;
    struct rpt_census *census; /* oldest birth first, this session's own included */
    bool procs_walked;         /* CMD's process tree was read at the session's end (exec) */
    int n_procs;
    struct rpt_proc *procs; /* CMD's descendants then, parents before children */
    int procs_within;       /* children that began and ended within the session (counted) */
};

/* The one per-session value of a channel, which the verdict, compare, JUnit, the CSV and the
 * plots all use: for the exact channels what the session itself left behind (tagged bytes born
 * in it and still live; shared objects with unbalanced references, counted as objects), for the
 * statistical channels the reading after quiesce minus the baseline (RPT_NONE in warm-up).
 * Returns false when the session did not measure the channel. */
bool rpt_session_value(const struct rpt_session *s, enum rpt_channel c, int64_t *out);
/* What suppression rules took out of a session's figure: bytes (tagged_host, tagged_device:
 * this session's; the statistical channels: every measured session's so far, which their
 * deltas still hold) or objects (refs); rpt_session_value is the figure less this. */
int64_t rpt_session_suppressed(const struct rpt_session *s, enum rpt_channel c);
/* The delta against baseline that reports draw and tabulate: a statistical channel's judged
 * figure (rpt_session_value: the delta less what suppression rules took), an exact channel's
 * ledger delta as recorded; RPT_NONE when not measured. */
int64_t rpt_session_delta(const struct rpt_session *s, enum rpt_channel c);

/* ---- the verdict line -------------------------------------------------------------------- */

struct rpt_channel_verdict {
    enum rpt_channel channel;
    enum rpt_status status;
    double figure;                    /* the number judged: bytes per session, or total bytes */
    double budget;                    /* what it was judged against */
    double slope, slope_lo, slope_hi; /* Theil–Sen bytes/session with its confidence bound */
    double shift;                     /* late-vs-early median shift, bytes */
    bool required;                    /* the run's verdict needs this channel's evidence */
    bool stayed;   /* above baseline at the end (a held step, a steady rise): never "returned" */
    char why[400]; /* one sentence: "slope 262 KiB/session [250, 270] > 64 KiB" */
};

/* The census's judgment of a run (reports/census.c): its last counted session's census. A
 * session "kept" blocks when, at the end, blocks born in it are alive and it is at least one
 * session before the end; LEAK when 3 or more measured sessions kept blocks, they are at least
 * half of the sessions since the first that kept any, and either all of them or at least
 * je_allocated's slope budget a session (docs/design.md). */
struct rpt_census_verdict {
    bool counted;           /* a measured session was counted (else nothing below holds) */
    enum rpt_status status; /* PASS or LEAK */
    int kept;               /* measured sessions that kept blocks */
    int since;              /* sessions from the first that kept to the one before the end */
    int first, last;        /* the first that kept, the session judged */
    int64_t bytes, blocks;  /* what the kept sessions hold at the end */
    char why[400];          /* "born in session 7, still alive: 3 blocks, 3.00 KiB, at f (a.c:1)" */
};

/* The judgment of CMD's process tree (reports/procs.c, results 1.8): each descendant seen at
 * two or more session ends has its RSS series judged by the rss channel's rules and budget
 * (rpt_judge_statistical); a child whose series leaks is a leak of the run. */
struct rpt_procs_verdict {
    bool counted;           /* the sessions carried CMD's process tree (else nothing below holds) */
    enum rpt_status status; /* PASS, or LEAK when a child's RSS leaks */
    int judged;        /* processes judged: CMD (by its channels) and each child with a series */
    int children;      /* distinct descendants seen (pid and command) */
    int brief;         /* seen at one session's end only: counted, not judged */
    int within;        /* began and ended within a session, never seen: counted, not judged */
    int exited;        /* gone before the last session's end */
    int unseen;        /* without the agent (static, LD_PRELOAD removed): RSS only */
    char leaking[160]; /* the leaking children for the summary: "child pid 12 (worker)" */
    int n_leak_pids;   /* this run's leaking children (not in the results: for naming them) */
    int leak_pids[8];
    char why[1024]; /* "judged 2 process(es): CMD by its channels and 1 child(ren) by RSS; ..." */
};

struct rpt_verdict {
    enum rpt_status status; /* the run's overall verdict */
    int exit_code;          /* 0 pass, 1 leak, 2 usage/input, 3 inconclusive, 4 internal */
    int sessions_measured;
    int sessions_planned; /* measured sessions the plan asked for; 0: unbounded (soak) */
    unsigned required;    /* channels required (bit 1u << channel) */
    int n_channels;
    struct rpt_channel_verdict channels[RPT_NCHANNELS];
    char summary[768];
    bool partial;                     /* the run ended early (signal, crash, time) */
    char stopped[64];                 /* why it ended early: "SIGTERM", "time limit", "results cut
                                         short (no verdict line)"; "" when it ran its plan */
    struct rpt_census_verdict census; /* exec's exact census (.counted false: none) */
    struct rpt_procs_verdict procs;   /* exec's process tree (.counted false: none) */
};

/* Frees a session's census entries. */
void rpt_census_free(struct rpt_session *s);

/* Frees a session's process list. */
void rpt_procs_free(struct rpt_session *s);

/* ---- what a run's settings imply (rules.c) -------------------------------------------------- */

#define RPT_MIN_TREND 4 /* fewest sessions whose Sen interval has a finite lower bound */

#define RPT_BIT(c) (1u << (c))
/* Every host channel; with a device also tagged_device and dev_process (the process's own
 * device figure: dev_driver counts every tenant of the GPU and is optional). */
unsigned rpt_default_required(bool device);
/* Parses "tagged_host,rss", "host" (the host channels), "exact" (the exact channels that
 * apply), "all", or "none" into a mask; LG_EINVAL naming the unknown channel. */
int rpt_parse_required(const char *list, bool device, unsigned *out);
/* "tagged_host, refs, rss" into buf ("none" for 0). */
void rpt_required_string(unsigned mask, char *buf, size_t size);

/* Whether a results file's run line names a device ("cuda: ..."). */
bool rpt_run_had_device(const struct rpt_run *run);
/* A budget's noise figure (0 when it has none). */
double rpt_budget_noise(const struct rpt_budget *b);
/* The fewest measured sessions over which a steady leak of twice the slope budget is flagged
 * against the budget's noise (docs/design.md, "Minimum sessions"): at least RPT_MIN_TREND. */
int rpt_min_sessions(const struct rpt_budget *b);

/* Median of v[0..n) (copies; v is not reordered); NaN when n == 0. */
double rpt_median(const double *v, int n);

const char *rpt_channel_label(enum rpt_channel c); /* "tagged host bytes", "process RSS", ... */
/* The smallest budgets ever set for a channel (its resolution: what ci/detection found safe on
 * a machine that showed no noise at all; bands above the one-off steps soaks see). */
void rpt_budget_resolution(enum rpt_channel c, struct rpt_budget *out);

/* ---- writing (harness side) ----------------------------------------------------------------- */

struct rpt_writer;
/* Creates/truncates path and writes the run line; *out is closed with rpt_writer_close. */
int rpt_writer_open(struct rpt_writer **out, const char *path, const struct rpt_run *run);
/* Appends a session line and flushes it to disk. */
int rpt_writer_session(struct rpt_writer *w, const struct rpt_session *s);
int rpt_writer_verdict(struct rpt_writer *w, const struct rpt_verdict *v);
/* The same with what the gate added (gate.h: suppressions, peak budgets, a baseline) as the
 * verdict line's "gate" member; g NULL is rpt_writer_verdict. */
struct rpt_gate;
int rpt_writer_verdict_gate(struct rpt_writer *w, const struct rpt_verdict *v,
                            const struct rpt_gate *g);
void rpt_writer_close(struct rpt_writer *w);

/* ---- reading (reports side) ------------------------------------------------------------------ */

struct rpt_results {
    struct rpt_run run;
    int n_sessions;
    struct rpt_session *sessions;
    bool has_verdict;
    struct rpt_verdict verdict;
    int truncated_lines;   /* a partial last line (crash mid-write) is skipped, counted */
    struct rpt_gate *gate; /* the verdict line's "gate" (gate.h), owned; NULL when absent */
};

/* Loads a results JSONL file; *out is freed with rpt_results_free. LG_EFORMAT with file and
 * line on malformed input. */
int rpt_results_load(struct rpt_results **out, const char *path);
void rpt_results_free(struct rpt_results *r);
/* Frees what a session owns (groups, refs, classes, samples), not the struct. */
void rpt_session_fini(struct rpt_session *s);

#endif
