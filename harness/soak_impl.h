/* soak_impl.h — the soak's private parts (harness/soak*.c): its plan, the sliding-window trend
 * test with its CUSUM, and the Prometheus metrics file. docs/soak.md explains the choices.
 *
 * Worked example (what `leakgate soak --sessions 100 --window 50` does with them):
 *
 *   struct hx_soak_trend t;
 *   hx_soak_trend_init(&t, 50, o.budgets);        // ring buffers allocated once: O(window)
 *   for each session s (warm-up first, deltas against its preset's baseline):
 *       unsigned fired = hx_soak_trend_add(&t, &s);   // bit c: channel c's alarm fired now
 *   hx_soak_trend_verdict(&t, &v);                // per-channel verdicts, final window's slope
 *   hx_soak_trend_fini(&t);
 */
#ifndef LG_HX_SOAK_IMPL_H
#define LG_HX_SOAK_IMPL_H

#include <stdio.h>

#include "hx_impl.h"

#define HX_SOAK_MAX_PRESETS 4
#define HX_SOAK_MIN_WINDOW 5
#define HX_SOAK_MAX_WINDOW 2000
#define HX_SOAK_DEFAULT_WINDOW 50 /* hx_options_defaults' window */

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
    int modes, n_modes;            /* HX_MODE_* bits; their count */
    int warmup;                    /* warm-up rounds: sessions per (preset, mode) */
    int sessions;                  /* plan items over all shards; 0: until the duration is spent */
    double duration_s;             /* 0: until the items are spent */
    int shard, n_shards;           /* 0 and 1 when not sharded */
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
    struct hx_options o;           /* common options; o.out_dir is this shard's directory */
    struct hx_soak_plan plan;
    char metrics[600];             /* the Prometheus metrics file */
};

/* Runs a soak (or one shard of it): warm-up per (preset, mode), a baseline per preset, then
 * plan items until they or the duration are spent or a signal asks to stop (the current
 * session finishes first); every session streamed to results.jsonl, the metrics file
 * rewritten after each; the verdict, its line and the reports at the end. LG_OK when the soak
 * ran (the verdict says pass/leak/inconclusive), else a status with lg_errmsg() set. */
int hx_soak(const struct hx_soak_options *so, struct rpt_verdict *v);

/* ---- the trend test (soak_trend.c) ------------------------------------------------------------ */

/* One statistical channel: the last `window` deltas, the CUSUM on per-session increments,
 * when its alarms first fired. */
struct hx_soak_channel {
    double *ring;                  /* window deltas, oldest at (head - n) mod window */
    int n, head;
    int n_values;                  /* measured sessions that had a value */
    double prev;                   /* the previous measured session's delta */
    double k, h, clip;             /* CUSUM reference drift, threshold, per-session cap */
    double S, S_peak;              /* CUSUM now, and its highest value */
    int cusum_at, trend_at;        /* session index of the first alarm; -1: none */
    double cusum_S_at;             /* S when the CUSUM alarm fired */
    double trend_slope_at, trend_lo_at; /* the window's slope and bound when the trend alarm fired */
    double slope, slope_lo;        /* the latest window's slope and lower bound (metrics) */
};

/* An exact channel, streamed: no per-session array. */
struct hx_soak_exact {
    int bad, first;                /* sessions that left something; the first one (-1: none) */
    int64_t total, max;
};

struct hx_soak_trend {
    int window, n_all, n_measured;
    struct rpt_budget budgets[RPT_NCHANNELS];
    struct hx_soak_channel ch[RPT_NCHANNELS];
    struct hx_soak_exact ex[3];    /* tagged_host, tagged_device, refs */
    struct hx_series attr;         /* attribution only (worst_* fields; no arrays) */
    double *scratch;               /* `window` doubles: a window in session order */
};

/* CUSUM parameters of a channel from its budget: k = slope, h = floor, clip = floor / 2. */
void hx_soak_cusum_params(const struct rpt_budget *b, double *k, double *h, double *clip);
/* Allocates every buffer once (window doubles per channel plus a scratch window); the caller
 * frees them with hx_soak_trend_fini. */
int hx_soak_trend_init(struct hx_soak_trend *t, int window, const struct rpt_budget *budgets);
void hx_soak_trend_fini(struct hx_soak_trend *t);
/* Feeds a session: warm-up sessions feed the exact channels only; measured ones also the
 * windows and CUSUMs of the statistical channels (their delta[] against the baseline).
 * Returns a bit (1u << channel) for every channel one of whose alarms (CUSUM, trend; exact:
 * the first leaking session) fired for the first time at this session, so a statistical
 * channel reports twice at most. Allocates nothing that outlives the call. */
unsigned hx_soak_trend_add(struct hx_soak_trend *t, const struct rpt_session *s);
/* Whether a channel has alarmed so far (statistical: trend or CUSUM; exact: any session). */
bool hx_soak_alarmed(const struct hx_soak_trend *t, enum rpt_channel c);
/* The soak's verdict: exact channels at zero tolerance with attribution; statistical channels
 * leak when an alarm fired (saturating when the full final window is flat again), else the
 * final window's judgement (a level above the band with no growth over the window and a flat
 * late half: saturating, not inconclusive); figures and slopes from the final window. */
void hx_soak_trend_verdict(const struct hx_soak_trend *t, struct rpt_verdict *v);
/* Judges a soak's results that have no verdict line (a shard killed without a chance to write
 * one) by replaying its sessions through the trend test, in place; the verdict is partial. */
int hx_soak_judge_results(struct rpt_results *r, int window);

/* ---- the metrics file (soak_metrics.c) ------------------------------------------------------- */

/* What the metrics file reports, updated after every session. */
struct hx_soak_gauges {
    char shard[16];                /* "" or "1/3": a label on every series when set */
    int n_presets;
    char presets[HX_SOAK_MAX_PRESETS][32];
    int64_t delta[HX_SOAK_MAX_PRESETS][3][RPT_NCHANNELS]; /* last delta per preset, mode, channel */
    int64_t sessions, warmup_sessions, session_errors;
    int64_t leaked_bytes, leaked_objects; /* tagged bytes / referenced objects left, summed */
    double started_unix, last_session_unix, elapsed_s, last_duration_s;
    bool running;
    int verdict;                   /* enum rpt_status, or -1 before the verdict */
};

void hx_soak_gauges_init(struct hx_soak_gauges *g, const struct hx_soak_plan *p, const char *shard);
/* Records a finished session (its preset's position in the plan, its mode bit). */
void hx_soak_gauges_session(struct hx_soak_gauges *g, const struct rpt_session *s, int preset, int mode);
/* Writes the Prometheus text exposition to path.tmp, syncs it, and renames it over path, so a
 * reader (node_exporter's textfile collector) sees the old file or the new, never a part. */
int hx_soak_metrics_write(const char *path, const struct hx_soak_gauges *g, const struct hx_soak_trend *t);

#endif
