/* soak_metrics.c — the soak's Prometheus metrics file (text exposition format 0.0.4), rewritten
 * after every session for node_exporter's textfile collector: written to PATH.tmp, synced, and
 * renamed over PATH, so a scrape reads the previous file or the new one, never half of one.
 * The ".tmp" name does not end in ".prom", so the collector never reads it. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "soak_impl.h"

static int mode_slot(int mode) { return mode == HX_MODE_FP32 ? 0 : mode == HX_MODE_INT8 ? 1 : 2; }
static const int slot_mode[3] = {HX_MODE_FP32, HX_MODE_INT8, HX_MODE_QAT};

static double unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void hx_soak_gauges_init(struct hx_soak_gauges *g, const struct hx_soak_plan *p, const char *shard)
{
    memset(g, 0, sizeof *g);
    lg_strlcpy(g->shard, shard ? shard : "", sizeof g->shard);
    g->n_presets = p->n_presets;
    memcpy(g->presets, p->presets, sizeof g->presets);
    for (int i = 0; i < HX_SOAK_MAX_PRESETS; i++)
        for (int m = 0; m < 3; m++)
            for (int c = 0; c < RPT_NCHANNELS; c++) g->delta[i][m][c] = RPT_NONE;
    g->started_unix = unix_now();
    g->running = true;
    g->verdict = -1;
}

void hx_soak_gauges_session(struct hx_soak_gauges *g, const struct rpt_session *s, int preset,
                            int mode)
{
    LG_ASSERT(preset >= 0 && preset < g->n_presets && "preset out of the plan");
    if (s->warmup)
        g->warmup_sessions++;
    else
        g->sessions++;
    if (s->error[0]) g->session_errors++;
    g->leaked_bytes += s->leaked_host_bytes + s->leaked_device_bytes;
    g->leaked_objects += s->n_refs;
    if (!s->warmup) memcpy(g->delta[preset][mode_slot(mode)], s->delta, sizeof s->delta);
    g->last_session_unix = unix_now();
    g->elapsed_s = g->last_session_unix - g->started_unix;
    g->last_duration_s = s->duration_s;
}

/* A label value with \, " and newline escaped as the exposition format asks. */
static void put_label(FILE *f, const char *name, const char *value, bool *first)
{
    fprintf(f, "%s%s=\"", *first ? "{" : ",", name);
    *first = false;
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '"') fputc('\\', f);
        if (*p == '\n') {
            fputs("\\n", f);
            continue;
        }
        fputc(*p, f);
    }
    fputc('"', f);
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: name{shard=..., channel=..., preset=..., mode=...} value; NULL labels left out. */
static void sample(FILE *f, const struct hx_soak_gauges *g, const char *name, const char *channel,
                   const char *preset, const char *mode, double value)
{
    bool first = true;
    fputs(name, f);
    if (channel) put_label(f, "channel", channel, &first);
    if (preset) put_label(f, "preset", preset, &first);
    if (mode) put_label(f, "mode", mode, &first);
    if (g->shard[0]) put_label(f, "shard", g->shard, &first);
    if (!first) fputc('}', f);
    if (isnan(value))
        fputs(" NaN\n", f);
    else if (isinf(value))
        fputs(value > 0 ? " +Inf\n" : " -Inf\n", f);
    else
        fprintf(f, " %.17g\n", value);
}

static void write_body(FILE *f, const struct hx_soak_gauges *g, const struct rpt_soak_trend *t)
{
    header(f, "leakgate_soak_running", "gauge",
           "1 while the soak runs sessions, 0 once its verdict is written.");
    sample(f, g, "leakgate_soak_running", NULL, NULL, NULL, g->running);
    header(f, "leakgate_sessions_total", "counter", "Measured soak sessions finished.");
    sample(f, g, "leakgate_sessions_total", NULL, NULL, NULL, (double)g->sessions);
    header(f, "leakgate_warmup_sessions_total", "counter", "Warm-up sessions finished.");
    sample(f, g, "leakgate_warmup_sessions_total", NULL, NULL, NULL, (double)g->warmup_sessions);
    header(f, "leakgate_session_errors_total", "counter", "Sessions that failed with an error.");
    sample(f, g, "leakgate_session_errors_total", NULL, NULL, NULL, (double)g->session_errors);
    header(f, "leakgate_leaked_bytes_total", "counter",
           "Tagged host and device bytes that sessions left alive, summed over sessions.");
    sample(f, g, "leakgate_leaked_bytes_total", NULL, NULL, NULL, (double)g->leaked_bytes);
    header(f, "leakgate_leaked_objects_total", "counter",
           "Shared objects that sessions left referenced, summed over sessions.");
    sample(f, g, "leakgate_leaked_objects_total", NULL, NULL, NULL, (double)g->leaked_objects);

    header(
        f, "leakgate_session_delta_bytes", "gauge",
        "Last measured session's reading minus its preset's baseline, per channel, preset and mode.");
    for (int p = 0; p < g->n_presets; p++)
        for (int m = 0; m < 3; m++)
            for (int c = 0; c < RPT_NCHANNELS; c++)
                if (g->delta[p][m][c] != RPT_NONE)
                    sample(f, g, "leakgate_session_delta_bytes",
                           rpt_channel_name((enum rpt_channel)c), g->presets[p],
                           hx_mode_name(slot_mode[m]), (double)g->delta[p][m][c]);

    header(
        f, "leakgate_channel_alarm", "gauge",
        "1 once the channel alarmed (window trend or recurring steps; exact channels: any session left something).");
    for (int c = 0; c < RPT_NCHANNELS; c++)
        sample(f, g, "leakgate_channel_alarm", rpt_channel_name((enum rpt_channel)c), NULL, NULL,
               rpt_soak_alarmed(t, (enum rpt_channel)c));
    header(f, "leakgate_channel_alarm_session", "gauge",
           "Session index at which the channel first alarmed; -1: none.");
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        int at = -1;
        if (rpt_channel_exact((enum rpt_channel)c)) {
            int e = c == RPT_CH_TAGGED_HOST ? 0 : c == RPT_CH_TAGGED_DEVICE ? 1 : 2;
            at = t->ex[e].first;
        } else {
            int a = t->ch[c].steps_at, b = t->ch[c].trend_at;
            at = a < 0 ? b : b < 0 ? a : LG_MIN(a, b);
        }
        sample(f, g, "leakgate_channel_alarm_session", rpt_channel_name((enum rpt_channel)c), NULL,
               NULL, at);
    }
    header(f, "leakgate_channel_window_slope_bytes", "gauge",
           "Theil-Sen slope of the channel's last window of deltas, bytes per session.");
    for (int c = 0; c < RPT_NCHANNELS; c++)
        if (!rpt_channel_exact((enum rpt_channel)c) && isfinite(t->ch[c].slope))
            sample(f, g, "leakgate_channel_window_slope_bytes",
                   rpt_channel_name((enum rpt_channel)c), NULL, NULL, t->ch[c].slope);
    header(f, "leakgate_channel_steps", "gauge",
           "Upward steps of the channel's long series that never came back (3 or more alarm).");
    for (int c = 0; c < RPT_NCHANNELS; c++)
        if (!rpt_channel_exact((enum rpt_channel)c) && t->ch[c].n_values)
            sample(f, g, "leakgate_channel_steps", rpt_channel_name((enum rpt_channel)c), NULL,
                   NULL, t->ch[c].steps.n);

    header(f, "leakgate_last_session_duration_seconds", "gauge", "Wall time of the last session.");
    sample(f, g, "leakgate_last_session_duration_seconds", NULL, NULL, NULL, g->last_duration_s);
    header(f, "leakgate_last_session_timestamp_seconds", "gauge",
           "Unix time at which the last session ended.");
    sample(f, g, "leakgate_last_session_timestamp_seconds", NULL, NULL, NULL, g->last_session_unix);
    header(f, "leakgate_soak_elapsed_seconds", "gauge", "Seconds since the soak started.");
    sample(f, g, "leakgate_soak_elapsed_seconds", NULL, NULL, NULL, g->elapsed_s);
    if (g->verdict >= 0) {
        header(f, "leakgate_verdict", "gauge",
               "1 for the soak's verdict status once it is written.");
        bool first = true;
        fputs("leakgate_verdict", f);
        put_label(f, "status", rpt_status_name((enum rpt_status)g->verdict), &first);
        if (g->shard[0]) put_label(f, "shard", g->shard, &first);
        fputs("} 1\n", f);
    }
}

int hx_soak_metrics_write(const char *path, const struct hx_soak_gauges *g,
                          const struct rpt_soak_trend *t)
{
    FILE *f = NULL; /* PATH.tmp, renamed over PATH once whole (lg_out.c) */
    int rc = lg_out_open(&f, path);
    if (rc != LG_OK) return lg_fail_ctx(rc, "the metrics file: ");
    write_body(f, g, t);
    rc = lg_out_commit(f, path);
    if (rc != LG_OK) lg_fail_ctx(rc, "the metrics: ");
    return rc;
}
