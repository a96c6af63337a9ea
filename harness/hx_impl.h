/* hx_impl.h — the harness's private parts, shared by the files of harness/. */
#ifndef LG_HX_IMPL_H
#define LG_HX_IMPL_H

#include <stdio.h>

#include "session.h"
#include "verdict.h"

#ifndef LG_VERSION
#define LG_VERSION "0.0.0"
#endif

/* ---- output (progress.c) ---------------------------------------------------------------- */

void hx_progress_begin(const struct hx_options *o, const struct rpt_run *run, int total);
/* The trainer's GEMM kernels (run->blas…) and, for a generic core, a warning (stderr). */
void hx_progress_blas(const struct rpt_run *run);
void hx_progress_session(const struct hx_options *o, const struct rpt_session *s, int idx,
                         int total);
void hx_progress_end(const struct hx_options *o);
void hx_print_verdict(const struct hx_options *o, const struct rpt_verdict *v, FILE *f);
void hx_print_leaks(const struct rpt_session *s, FILE *f, int max_groups);
/* Writes every report artefact next to the results file; prints what went wrong, if anything,
 * and returns it (LG_EUNAVAIL: gnuplot is missing, every other artefact was written). */
int hx_write_reports(const struct hx_options *o, const char *results_path);

/* ---- run plumbing (run.c) ---------------------------------------------------------------- */

void hx_fill_run_line(const struct hx_options *o, const struct tft_config *cfg,
                      struct rpt_run *run);
/* The built-in trainer's GEMM kernels into the run line (run, soak; exec leaves them ""). */
void hx_fill_blas(struct rpt_run *run);
int hx_make_data(const struct hx_options *o, struct trk_tracker *trk, struct tft_config *cfg,
                 struct data_set **data);
int hx_env_init(struct hx_env *env, const struct hx_options *o);
void hx_env_fini(struct hx_env *env);
int hx_mode_at(int modes, int index);
/* The baseline of a run without warm-up: every channel of the process as it is now, quiesced
 * (before its first session). The quiesce's status: a device fault fails the run. */
int hx_baseline_now(struct hx_env *env, int64_t *baseline);
/* A measured session's deltas: each channel's reading minus the baseline's (RPT_NONE where
 * either was not measured). A warm-up session keeps its deltas unset. */
void hx_session_deltas(struct rpt_session *s, const int64_t *baseline);
/* Makes v the error verdict of a failed run (status error, exit code from rc, the message). */
void hx_verdict_error(struct rpt_verdict *v, int rc);
/* Ends a run: closes the results file (w may be NULL: never opened), turns a failure that came
 * before any verdict into an error verdict, writes every report when the file was opened, and
 * keeps the failure's message. A report that could not be written turns a passing verdict's
 * exit code into 2 (gnuplot missing is only said). Returns rc. */
int hx_close_results(const struct hx_options *o, struct rpt_writer *w, const char *path, int rc,
                     struct rpt_verdict *v);

/* ---- option parsing shared by the commands (cli_opts.c) ------------------------------------ */

/* Parses the options common to run, reproduce and soak from argv[i]; returns the number of
 * arguments consumed (1 or 2), 0 when argv[i] is not a common option, -1 on a usage error
 * (message in lg_errmsg()). */
int hx_parse_common(struct hx_options *o, int argc, char **argv, int i);
/* Whether option a (with v, the next argument or NULL) is one of `known`, the options of a
 * command that take a value: 1 when it is and v is there, 0 when it is not one of them, -1 (a
 * usage error naming a) when its value is missing. */
int hx_option_with_value(const char *a, const char *v, const char *const *known);
/* A command's usage error: "leakgate CMD: <lg_errmsg()>" on stderr; returns exit status 2. */
int hx_usage_failed(const char *cmd);
/* Copies an option's value (a path, a name) into dst; LG_EINVAL naming the flag when it is
 * empty or does not fit. */
int hx_copy_path(const char *flag, char *dst, size_t size, const char *v);
/* Checks the options once parsed and resolves them: budgets (defaults, --budgets FILE, each
 * --budget), the required channels, conflicts, the minimum sessions (usage errors with a message).
 */
int hx_check_options(struct hx_options *o);
/* Checks that n measured sessions (0: unbounded) let every required statistical channel see its
 * budget (rpt_min_sessions); `what` names the option in the message ("--sessions"). A soak
 * checks its shard's sessions and its window this way (hx_check_options does not). */
int hx_check_sessions(const struct hx_options *o, int n, const char *what);

/* ---- the gate across commits (gate.c) -------------------------------------------------------- */

/* The gate's options for a command's --help. */
void hx_gate_usage(FILE *f);
/* Parses --history, --baseline, --workload, --commit, --branch, --suppressions and
 * --peak-budget at argv[i], as hx_parse_common does (its last resort). */
int hx_parse_gate(struct hx_options *o, int argc, char **argv, int i);
/* Checks them once parsed: reads the suppression rules (file:line errors), the baseline file, a
 * history that exists; --baseline auto needs --history. Usage and input errors. */
int hx_check_gate(struct hx_options *o);
/* Applies the suppression rules to a session before the series sees it; since (host, device)
 * carries the bytes suppressed so far from one session to the next (zeroed before the first).
 * A failure leaves the session unsuppressed, so stricter, and is said. */
void hx_gate_session(const struct hx_options *o, int64_t since[2], struct rpt_session *s);
/* Records the session's per-class peaks and their top tags from the tracker (after the
 * snapshot: it allocates). */
int hx_gate_peaks(struct trk_tracker *trk, struct rpt_session *s);
/* Keeps a soak's session line short: drops the top tags of every class peak that no
 * --peak-budget finds over its limit (the class peaks themselves stay, so every session is
 * judged). */
void hx_gate_compact(const struct hx_options *o, struct rpt_session *s);
/* Writes the verdict line in place of rpt_writer_verdict: with a gate, it reads the results so
 * far, judges the peak budgets, compares with the baseline, folds both into v, prints what the
 * gate found, writes the verdict with its "gate" member and appends the run to the history. A
 * history that cannot be appended turns a passing exit code into 2, as a report does. */
int hx_gate_verdict(const struct hx_options *o, struct rpt_writer *w, const char *path,
                    struct rpt_verdict *v);

#endif
