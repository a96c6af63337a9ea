/* harness.h — repeated training sessions, the measurement protocol and the leakgate CLI.
 *
 * Worked example (what `leakgate run --preset tiny --modes fp32,int8` does):
 *
 *   struct hx_options o;
 *   hx_options_defaults(&o);
 *   o.modes = HX_MODE_FP32 | HX_MODE_INT8;
 *   struct rpt_verdict v;
 *   int rc = hx_run(&o, &v);      // warm-up, baseline, measured sessions, verdict
 *   return rc != LG_OK ? hx_exit_code_for(rc) : v.exit_code;   // 0 pass, 1 leak, 3 inconclusive
 *
 * A session: build the model (its VarMap) → trainer (optimizer state) → train K steps →
 * validate → save a checkpoint and verify it → INT8 (calibrate, quantise, evaluate) or QAT
 * (fine-tune, convert, evaluate) → free the trainer, free the model. Then the harness
 * quiesces (device sync, tcache flush, purge of all arenas) and snapshots every memory view.
 * Warm-up sessions (one per mode by default) absorb one-time costs; their end is the baseline.
 * Each session's result is appended to results.jsonl and flushed before the next begins.
 */
#ifndef LG_HARNESS_H
#define LG_HARNESS_H

#include <signal.h>

#include "results.h"
#include "trainer.h"

enum hx_mode { HX_MODE_FP32 = 1, HX_MODE_INT8 = 2, HX_MODE_QAT = 4 };
const char *hx_mode_name(int mode); /* "fp32", "int8", "qat" */

/* A fault to inject (harness/inject.c): what, how much per session, from which session. */
#define HX_MAX_INJECT 8
struct hx_inject {
    char name[32];        /* "varmap-dup-ref", "raw-malloc", ... */
    size_t bytes;         /* per session, for raw-malloc / raw-mmap (default 1 MiB) */
    int first;            /* first session index (over the whole run) it applies to; -1: first measured */
    char spec[96];        /* as given: "raw-malloc:256KiB@40" */
};

struct hx_options {
    char preset[32];
    char csv[512], csv_config[512]; /* train on a CSV file instead of synthetic data */
    int modes;                      /* HX_MODE_* bits, interleaved in fp32, int8, qat order */
    int sessions;                   /* measured sessions */
    int warmup;                     /* warm-up sessions per mode */
    int steps;                      /* training steps per session */
    int batch;                      /* 0: the preset's */
    enum tn_device device;
    uint64_t seed;
    bool stacks;
    int n_inject;
    struct hx_inject inject[HX_MAX_INJECT];
    char out_dir[512];
    bool reports;                   /* write plots/JUnit/Markdown/HTML at the end */
    bool quiet;                     /* no progress output */
    struct rpt_budget budgets[RPT_NCHANNELS];
    char command[16];               /* "run", "reproduce", "soak" (for the results file) */
    char shard[16];
    /* soak */
    double duration_s;              /* 0: use sessions */
    int window;                     /* trend window (sessions) */
};

void hx_options_defaults(struct hx_options *o);
/* Default budgets per channel (measured on clean runs; see docs/detection.md). */
void hx_default_budgets(struct rpt_budget *b, enum tn_device dev);

/* Parses "raw-malloc:256KiB@40" into inj; LG_EINVAL with a message for unknown names or bad
 * sizes. */
int hx_inject_parse(const char *spec, struct hx_inject *inj);
const char *const *hx_inject_names(void);
/* The faults the trainer re-creates in session `index` (over the whole run). */
void hx_inject_faults(const struct hx_options *o, int index, struct tr_faults *f);

/* Runs warm-up and measured sessions, streams results, judges. LG_OK when the run completed
 * (the verdict says pass/leak/inconclusive), else a status (bad input, internal error). */
int hx_run(const struct hx_options *o, struct rpt_verdict *v);

/* Maps a status from hx_run to the design's exit codes: 2 usage/input, 4 internal. */
int hx_exit_code_for(int status);

/* Set by SIGINT/SIGTERM: the run finishes the current session and reports what finished. */
extern volatile sig_atomic_t hx_stop_requested;
void hx_install_signal_handlers(void);

/* Parses a byte size: "4096", "256KiB", "1.5MiB", "2GiB", "64k", "10MB". */
int hx_parse_size(const char *s, size_t *out);

/* CLI entry points (harness/cli*.c); each returns the process exit code. */
int hx_cmd_run(int argc, char **argv);
int hx_cmd_reproduce(int argc, char **argv);
int hx_cmd_soak(int argc, char **argv);
int hx_cmd_debug_state(int argc, char **argv);
int hx_cmd_report(int argc, char **argv);
int hx_cmd_merge(int argc, char **argv);

/* Writes the debug state of `preset` at `seed` (batch 0: the preset's) to path. */
int hx_debug_state(struct trk_tracker *trk, const char *preset, uint64_t seed, int batch,
                   const char *path);
/* The same, computed on device `dev` (the tracker needs its backend: hx_device_attach). */
int hx_debug_state_on(struct trk_tracker *trk, const char *preset, uint64_t seed, int batch,
                      enum tn_device dev, const char *path);

/* Judges loaded results that have no verdict line (a partial run), in place. */
void hx_judge_results(struct rpt_results *r);

#endif
