/* hx_impl.h — the harness's private parts, shared by the files of harness/. */
#ifndef LG_HX_IMPL_H
#define LG_HX_IMPL_H

#include <stdio.h>

#include "session.h"

#ifndef LG_VERSION
#define LG_VERSION "0.0.0"
#endif

/* ---- per-run series, for the verdict (series.c) ----------------------------------------- */

struct hx_series {
    int cap;                        /* sessions the arrays hold */
    int n_all, n_measured;
    double *y[RPT_NCHANNELS];       /* deltas of measured sessions */
    bool avail[RPT_NCHANNELS];      /* the channel was measured in every measured session */
    int64_t *leaked_host, *leaked_dev, *leaked_refs; /* every session, warm-up included */
    char worst_host[160], worst_dev[160], worst_ref[200];
    int64_t worst_host_bytes, worst_dev_bytes;
    bool device;                    /* the run had a device: tagged_device is judged */
};
int hx_series_init(struct hx_series *s, int cap);
void hx_series_fini(struct hx_series *s);
/* Records a session (absolute, delta, leaks). Allocates nothing. */
void hx_series_add(struct hx_series *s, const struct rpt_session *r);
/* Updates only the attribution (worst_host, worst_dev, worst_ref) from a session's leaks;
 * allocates nothing. A zeroed struct hx_series (no arrays) may be used for attribution alone
 * (the soak streams its exact channels this way). */
void hx_series_attribute(struct hx_series *s, const struct rpt_session *r);
/* Marks a channel not measured, with the reason. */
void hx_verdict_unavailable(struct rpt_channel_verdict *cv, enum rpt_channel c, const char *why);
/* Whether a results file's run line names a device ("cuda: ..."). */
bool hx_run_had_device(const struct rpt_run *run);
/* Judges every channel and the run. */
void hx_judge_series(const struct hx_series *s, const struct rpt_budget *b, struct rpt_verdict *v);

/* ---- devices (device.c) ----------------------------------------------------------------- */

int hx_device_attach(struct trk_tracker *trk, enum tn_device dev);
void hx_device_detach(struct trk_tracker *trk);
void hx_device_description(enum tn_device dev, char *buf, size_t size);

/* ---- output (progress.c) ---------------------------------------------------------------- */

void hx_progress_begin(const struct hx_options *o, const struct rpt_run *run, int total);
void hx_progress_session(const struct hx_options *o, const struct rpt_session *s, int idx, int total);
void hx_progress_end(const struct hx_options *o);
void hx_print_verdict(const struct hx_options *o, const struct rpt_verdict *v, FILE *f);
void hx_print_leaks(const struct rpt_session *s, FILE *f, int max_groups);
/* Writes every report artefact next to the results file; prints what went wrong, if anything. */
void hx_write_reports(const struct hx_options *o, const char *results_path);

/* ---- run plumbing (run.c) ---------------------------------------------------------------- */

int hx_mkdirs(const char *path);
void hx_fill_run_line(const struct hx_options *o, const struct tft_config *cfg, struct rpt_run *run);
int hx_make_data(const struct hx_options *o, struct trk_tracker *trk, struct tft_config *cfg,
                 struct data_set **data);
int hx_env_init(struct hx_env *env, const struct hx_options *o);
void hx_env_fini(struct hx_env *env);
int hx_mode_at(int modes, int index);
/* Makes v the error verdict of a failed run (status error, exit code from rc, the message). */
void hx_verdict_error(struct rpt_verdict *v, int rc);
/* Ends a run: closes the results file (w may be NULL: never opened), turns a failure that came
 * before any verdict into an error verdict, writes every report when the file was opened, and
 * keeps the failure's message. Returns rc. */
int hx_close_results(const struct hx_options *o, struct rpt_writer *w, const char *path, int rc,
                     struct rpt_verdict *v);

/* ---- option parsing shared by the commands (cli_opts.c) ------------------------------------ */

/* Parses the options common to run, reproduce and soak from argv[i]; returns the number of
 * arguments consumed (1 or 2), 0 when argv[i] is not a common option, -1 on a usage error
 * (message in lg_errmsg()). */
int hx_parse_common(struct hx_options *o, int argc, char **argv, int i);
/* Checks the options once parsed (usage errors with a message). */
int hx_check_options(const struct hx_options *o);

#endif
