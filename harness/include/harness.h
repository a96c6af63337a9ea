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

#include "gate.h"
#include "results.h"
#include "trainer.h"

enum hx_mode { HX_MODE_FP32 = 1, HX_MODE_INT8 = 2, HX_MODE_QAT = 4 };
const char *hx_mode_name(int mode); /* "fp32", "int8", "qat" */

/* A fault to inject (harness/inject.c): what, how much per session, from which session. */
#define HX_MAX_INJECT 8
struct hx_inject {
    char name[32]; /* "varmap-dup-ref", "raw-malloc", ... */
    size_t bytes;  /* per session, for raw-malloc / raw-mmap / raw-noise (default 1 MiB) */
    int first;     /* first session index (over the whole run) it applies to; -1: first measured */
    int every;     /* then every EVERY-th session (1: every session) */
    char spec[96]; /* as given: "raw-malloc:256KiB@40/25" */
};

/* The gate across commits (harness/gate.c; reports/gate/include/gate.h, history.h): a history to
 * append to, a baseline to compare with, suppression rules, peak budgets. */
struct hx_gate_options {
    char history[512];            /* --history FILE: this run's record is appended */
    char baseline[512];           /* --baseline FILE, "auto" (the history's), or "" */
    char workload[128];           /* --workload NAME (default: from the run) */
    char commit[64], branch[128]; /* --commit, --branch (default: CI's variables, then git) */
    bool have_rules;              /* --suppressions FILE, read by hx_check_options */
    struct rpt_suppressions rules;
    int n_peak;
    struct rpt_peak_budget peak[RPT_MAX_PEAK_BUDGETS];
};

struct hx_options {
    char preset[32];
    bool preset_set;                /* --preset was given */
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
    bool reports; /* write plots/JUnit/Markdown/HTML at the end */
    bool quiet;   /* no progress output */
    struct rpt_budget budgets[RPT_NCHANNELS];
    char budgets_file[512]; /* --budgets FILE ("" for the defaults) */
    int n_budget_set;       /* --budget CH.FIELD=SIZE, applied over defaults and file */
    struct {
        int channel, field; /* field: 0 band, 1 slope, 2 floor */
        double bytes;
    } budget_set[16];
    unsigned required;     /* channels the verdict requires (RPT_BIT(c)) */
    bool required_set;     /* --require was given (else the device's default) */
    char require_arg[256]; /* --require's value, resolved once the device is known */
    char command[16];      /* "run", "reproduce", "soak" (for the results file) */
    char shard[16];
    /* soak */
    double duration_s; /* 0: use sessions */
    int window;        /* trend window (sessions) */
    struct hx_gate_options gate;
};

void hx_options_defaults(struct hx_options *o);
/* Default budgets per channel, with where they came from (harness/budgets.c; docs/detection.md).
 * Device budgets that were never measured on a device say so (measured = false). */
void hx_default_budgets(struct rpt_budget *b, enum tn_device dev);
/* Loads a budgets file (leakgate calibrate) over the defaults in b: every channel it names;
 * LG_EFORMAT/LG_EIO with file and member (device budgets from a file not measured on a device
 * are refused). */
int hx_load_budgets(struct rpt_budget *b, const char *path, enum tn_device dev);

/* Parses "raw-malloc:256KiB@40/25" (NAME[:SIZE][@FIRST[/EVERY]]) into inj; LG_EINVAL with a
 * message for unknown names, bad sizes, or a size no machine could give (larger than this
 * one's memory and swap). */
int hx_inject_parse(const char *spec, struct hx_inject *inj);
/* Whether a parsed fault can apply to a run on that device with those modes (device-tensor
 * needs CUDA, int8-calibration int8, qat-observer qat); LG_EINVAL saying what it needs. */
int hx_inject_check(const struct hx_inject *in, bool cuda, int modes);
/* Whether a fault applies in session `index` (over the whole run, warm-up included): from its
 * FIRST session (default: the first measured one), every EVERY-th session. */
bool hx_inject_applies(const struct hx_options *o, const struct hx_inject *in, int index);
/* The faults the trainer re-creates in session `index`. */
void hx_inject_faults(const struct hx_options *o, int index, struct tr_faults *f);
/* The most raw-noise may hold across session `index`'s end (0: none). */
size_t hx_inject_noise(const struct hx_options *o, int index);

/* Runs warm-up and measured sessions, streams results, judges. LG_OK when the run completed
 * (the verdict says pass/leak/inconclusive), else a status (bad input, internal error). */
int hx_run(const struct hx_options *o, struct rpt_verdict *v);

/* Maps a status from hx_run to the design's exit codes: 2 usage/input, 4 internal. */
int hx_exit_code_for(int status);

/* Set to the signal's number by SIGINT/SIGTERM: the run finishes the current session and
 * reports what finished (a stopped run is inconclusive unless a leak was already proven). */
extern volatile sig_atomic_t hx_stop_requested;
void hx_install_signal_handlers(void);
/* "SIGTERM", "SIGINT", or "" when no stop was requested. */
const char *hx_stop_name(void);

/* Parses a byte size: "4096", "256KiB", "1.5MiB", "2GiB", "64k", "10MB". */
int hx_parse_size(const char *s, size_t *out);

/* Parses `leakgate run`'s arguments (argv[0] is "run") into o, defaults first, and checks them
 * (hx_check_options); *help when --help was given (the usage is then printed). The fuzzer's
 * entry point (tests/fuzz/fuzz_cli.c). */
int hx_parse_run(struct hx_options *o, int argc, char **argv, bool *help);

/* CLI entry points (harness/cli*.c); each returns the process exit code. */
int hx_cmd_run(int argc, char **argv);
int hx_cmd_reproduce(int argc, char **argv);
int hx_cmd_soak(int argc, char **argv);
int hx_cmd_debug_state(int argc, char **argv);
int hx_cmd_merge(int argc, char **argv);
int hx_cmd_calibrate(int argc, char **argv);

/* Parses an integer option strictly ("12"; not "12x", "", "-", out of range); LG_EINVAL naming
 * the flag. */
int hx_parse_int(const char *flag, const char *s, int lo, int hi, int *out);

#endif
