/* soak_impl.h — the soak's private parts (harness/soak*.c): its plan, the sliding-window trend
 * test with its CUSUM, and the Prometheus metrics file. docs/soak.md explains the choices.
 *
 * Worked example (what `leakgate soak --sessions 100 --window 50` does with them):
 *
 *   struct rpt_soak_trend t;
 *   rpt_soak_trend_init(&t, 50, o.budgets);        // ring buffers allocated once: O(window)
 *   for each session s (warm-up first, deltas against its preset's baseline):
 *       unsigned fired = rpt_soak_trend_add(&t, &s);   // bit c: channel c's alarm fired now
 *   rpt_soak_trend_verdict(&t, &v);                // per-channel verdicts, final window's slope
 *   rpt_soak_trend_fini(&t);
 */
#ifndef LG_HX_SOAK_IMPL_H
#define LG_HX_SOAK_IMPL_H

#include <stdio.h>

#include "hx_impl.h"
#include "soak_trend.h"

#define HX_SOAK_MAX_PRESETS 4

/* ---- the plan (soak_plan.c) ------------------------------------------------------------------
 * Plan items are the measured sessions of the whole soak, numbered p = 0, 1, 2, ... and
 * interleaved over the (preset, mode) combinations, mode fastest: item p runs combination
 * p % (n_presets * n_modes). Shard i of n runs the items with p % n == i. Every shard first
 * runs its own warm-up: `warmup` rounds over every combination, in the same order (at least
 * two with several presets: each preset's baseline is its last warm-up session, read after
 * every preset has run once). Session
 * indices are plan-wide: warm-up session j has index j, item p has index n_warmup + p, so the
 * shards of one plan never share a measured index and their union is the unsharded plan
 * (same indices, same seeds, same injections). */
struct hx_soak_plan {
    int n_presets;
    char presets[HX_SOAK_MAX_PRESETS][32];
    int modes, n_modes;  /* HX_MODE_* bits; their count */
    int warmup;          /* warm-up rounds: sessions per (preset, mode) */
    int sessions;        /* plan items over all shards; 0: until the duration is spent */
    double duration_s;   /* 0: until the items are spent */
    int shard, n_shards; /* 0 and 1 when not sharded */
};

/* Warm-up sessions a shard runs (n_presets * n_modes * warmup). */
int hx_soak_n_warmup(const struct hx_soak_plan *p);
/* Items shard `p->shard` runs (-1: unbounded, a duration plan). */
int hx_soak_shard_items(const struct hx_soak_plan *p);
/* The session a shard runs j-th (warm-up first): its plan-wide index, preset and mode.
 * Returns false when the shard has no j-th session (the items are spent). */
bool hx_soak_session_at(const struct hx_soak_plan *p, int j, int *index, int *preset, int *mode,
                        bool *warmup);
/* The (preset, mode) of a plan-wide session index (warm-up or item). */
void hx_soak_combo_of(const struct hx_soak_plan *p, int index, int *preset, int *mode);

/* Parses "i/n" (0 <= i < n <= 1000); LG_EINVAL with a message. */
int hx_parse_shard(const char *s, int *i, int *n);
/* Parses a duration: "90", "90s", "30m", "8h", "1h30m", "2d", "1.5h"; LG_EINVAL. */
int hx_parse_duration(const char *s, double *seconds);
/* Parses "tiny,electricity" into the plan's presets (known presets, no repeats); LG_EINVAL. */
int hx_parse_presets(const char *s, struct hx_soak_plan *p);
/* "tiny,electricity": the plan's presets as the run line's preset field records them. */
void hx_soak_presets_string(const struct hx_soak_plan *p, char *buf, size_t size);

/* ---- the soak loop (soak.c) ------------------------------------------------------------------ */

struct hx_soak_options {
    struct hx_options o; /* common options; o.out_dir is this shard's directory */
    struct hx_soak_plan plan;
    char metrics[600]; /* the Prometheus metrics file */
};

/* Runs a soak (or one shard of it): warm-up per (preset, mode), a baseline per preset, then
 * plan items until they or the duration are spent or a signal asks to stop (the current
 * session finishes first); every session streamed to results.jsonl, the metrics file
 * rewritten after each; the verdict, its line and the reports at the end. LG_OK when the soak
 * ran (the verdict says pass/leak/inconclusive), else a status with lg_errmsg() set. */
int hx_soak(const struct hx_soak_options *so, struct rpt_verdict *v);

/* ---- the metrics file (soak_metrics.c) ------------------------------------------------------- */

/* What the metrics file reports, updated after every session. */
struct hx_soak_gauges {
    char shard[16]; /* "" or "1/3": a label on every series when set */
    int n_presets;
    char presets[HX_SOAK_MAX_PRESETS][32];
    int64_t delta[HX_SOAK_MAX_PRESETS][3][RPT_NCHANNELS]; /* last delta per preset, mode, channel */
    int64_t sessions, warmup_sessions, session_errors;
    int64_t leaked_bytes, leaked_objects; /* tagged bytes / referenced objects left, summed */
    double started_unix, last_session_unix, elapsed_s, last_duration_s;
    bool running;
    int verdict; /* enum rpt_status, or -1 before the verdict */
};

void hx_soak_gauges_init(struct hx_soak_gauges *g, const struct hx_soak_plan *p, const char *shard);
/* Records a finished session (its preset's position in the plan, its mode bit). */
void hx_soak_gauges_session(struct hx_soak_gauges *g, const struct rpt_session *s, int preset,
                            int mode);
/* Writes the Prometheus text exposition to path.tmp, syncs it, and renames it over path, so a
 * reader (node_exporter's textfile collector) sees the old file or the new, never a part. */
int hx_soak_metrics_write(const char *path, const struct hx_soak_gauges *g,
                          const struct rpt_soak_trend *t);

#endif
