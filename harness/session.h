/* session.h — one training session and its measurement (private to harness/). */
#ifndef LG_HX_SESSION_H
#define LG_HX_SESSION_H

#include "harness.h"

/* What a run shares across its sessions, allocated once before the baseline so that the
 * harness's own bookkeeping never moves the statistics between sessions. */
struct hx_env {
    const struct hx_options *o;
    struct trk_tracker *trk;
    struct tft_config cfg;
    struct data_set *data;
    struct rpt_sample *samples; /* timeline buffer, reused by every session */
    int max_samples, n_samples;
    double t0; /* session start, for sample times */
    const char *phase;
    int64_t peak_host;
    void *noise; /* raw-noise: what the last session held (plain malloc) */
};

/* Values of every channel that a snapshot gives (RPT_NONE where unavailable). */
void hx_channels_from_snapshot(const struct trk_snapshot *s, int64_t *abs);

/* Runs session `index` in `mode`; fills *out (leaks, timeline, losses, absolute values after
 * quiesce). Errors inside the session are returned with lg_errmsg() set; the session's memory
 * is still measured. The caller finishes *out with rpt_session_fini. */
int hx_session_run(struct hx_env *env, int index, int mode, bool warmup, struct rpt_session *out);

/* Records a timeline sample (also the trainer's progress callback). */
void hx_sample(struct hx_env *env, const char *phase, int step);

#endif
