/* soak.c — the soak loop: `run`'s loop (harness/run.c) stretched over hours. Warm-up per
 * (preset, mode), a baseline per preset, then plan items until they or the duration are spent
 * or SIGTERM/SIGINT asks to stop (the current session finishes first). What it keeps in
 * memory does not grow with the sessions: the trend windows are allocated once, each session's
 * result is streamed to results.jsonl (compact: timeline samples only for each preset's first
 * measured session and for sessions that leaked or raised an alarm) and then dropped, and the
 * metrics file is rewritten in place. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reports.h"
#include "soak_impl.h"

/* ---- progress -------------------------------------------------------------------------------- */

struct progress {
    double t0, last_line;
    int measured, warmups;
};

static void fmt_elapsed(char *buf, size_t size, double s)
{
    long t = (long)s;
    snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

static void progress_begin(const struct hx_soak_options *so, const struct rpt_run *run)
{
    const struct hx_soak_plan *p = &so->plan;
    if (so->o.quiet) return;
    char until[64];
    if (p->sessions > 0 && p->duration_s > 0)
        snprintf(until, sizeof until, "%d measured session(s) or %.0f s", hx_soak_shard_items(p),
                 p->duration_s);
    else if (p->sessions > 0)
        snprintf(until, sizeof until, "%d measured session(s)", hx_soak_shard_items(p));
    else
        snprintf(until, sizeof until, "measured sessions for %.0f s", p->duration_s);
    fprintf(
        stderr,
        "leakgate soak%s%s: presets %s, modes %s, %d warm-up + %s, %d step(s), window %d, device %s%s%s\n"
        "  results %s/results.jsonl, metrics %s\n",
        run->shard[0] ? " shard " : "", run->shard, run->preset, run->modes, hx_soak_n_warmup(p),
        until, run->steps, so->o.window, run->device, run->inject[0] ? ", inject " : "",
        run->inject, so->o.out_dir, so->metrics);
    hx_progress_blas(run);
}

static void progress_session(const struct hx_soak_options *so, struct progress *pr,
                             const struct rpt_session *s, const struct rpt_soak_trend *t,
                             unsigned fired, const char *preset)
{
    if (s->warmup)
        pr->warmups++;
    else
        pr->measured++;
    if (so->o.quiet) return;
    char b1[32], b2[32], el[32];
    double now = lg_now();
    fmt_elapsed(el, sizeof el, now - pr->t0);
    int64_t tagged = s->leaked_host_bytes + s->leaked_device_bytes;
    bool tty = isatty(STDERR_FILENO);
    bool heartbeat = !s->warmup && (pr->measured % 25 == 0 || now - pr->last_line >= 60);
    if (tty || heartbeat || s->error[0] || fired || tagged || s->n_refs) {
        fprintf(stderr, "%s[%s] session %d %s %-4s%s: %d measured  Δallocated %s  Δrss %s%s",
                tty ? "\r" : "", el, s->index, preset, s->mode, s->warmup ? " (warm-up)" : "",
                pr->measured,
                s->delta[RPT_CH_JE_ALLOCATED] == RPT_NONE
                    ? "n/a"
                    : lg_fmt_bytes(b1, 32, (double)s->delta[RPT_CH_JE_ALLOCATED]),
                s->delta[RPT_CH_RSS] == RPT_NONE
                    ? "n/a"
                    : lg_fmt_bytes(b2, 32, (double)s->delta[RPT_CH_RSS]),
                tty ? "   " : "\n");
        pr->last_line = now;
    }
    bool newline = tty && (s->error[0] || fired || tagged || s->n_refs);
    if (newline) fputc('\n', stderr);
    if (s->error[0]) fprintf(stderr, "  error: %s\n", s->error);
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        if (!(fired & (1u << c))) continue;
        const struct rpt_soak_channel *ch = &t->ch[c];
        if (rpt_channel_exact((enum rpt_channel)c))
            fprintf(stderr, "  ALARM %s at session %d: zero-tolerance channel\n",
                    rpt_channel_name((enum rpt_channel)c), s->index);
        else if (ch->steps_at == s->index)
            fprintf(stderr, "  ALARM %s at session %d: %d steps that never came back, %s in all\n",
                    rpt_channel_name((enum rpt_channel)c), s->index, ch->steps.n,
                    lg_fmt_bytes(b1, 32, ch->steps.total));
        if (!rpt_channel_exact((enum rpt_channel)c) && ch->trend_at == s->index)
            fprintf(stderr, "  ALARM %s at session %d: over the last %d sessions, %s\n",
                    rpt_channel_name((enum rpt_channel)c), s->index, ch->trend_window_at,
                    ch->trend_why);
    }
    if (tagged || s->n_refs) hx_print_leaks(s, stderr, 5);
}

/* ---- the loop -------------------------------------------------------------------------------- */

/* What a soak holds across its sessions, allocated before the first one. */
struct soak_state {
    struct hx_env env;
    struct hx_soak_plan plan;
    struct tft_config cfg[HX_SOAK_MAX_PRESETS];
    struct data_set *data[HX_SOAK_MAX_PRESETS];
    struct rpt_soak_trend trend;
    struct hx_soak_gauges gauges;
    int64_t baseline[HX_SOAK_MAX_PRESETS][RPT_NCHANNELS];
    bool have_baseline[HX_SOAK_MAX_PRESETS], kept_samples[HX_SOAK_MAX_PRESETS];
    bool metrics_failed;
    int64_t suppressed[2]; /* bytes suppression rules took so far (host, device) */
};

static int state_init(struct soak_state *st, const struct hx_soak_options *so)
{
    const struct hx_options *o = &so->o;
    st->plan = so->plan;
    int rc = hx_env_init(&st->env, o);
    if (rc != LG_OK) return rc;
    st->cfg[0] = st->env.cfg;
    st->data[0] = st->env.data;
    if (o->csv[0]) lg_strlcpy(st->plan.presets[0], st->env.cfg.preset, sizeof st->plan.presets[0]);
    for (int i = 1; i < st->plan.n_presets; i++) {
        struct hx_options oi = *o;
        lg_strlcpy(oi.preset, st->plan.presets[i], sizeof oi.preset);
        if ((rc = hx_make_data(&oi, st->env.trk, &st->cfg[i], &st->data[i])) != LG_OK)
            return lg_fail_ctx(rc, "preset %s: ", st->plan.presets[i]);
    }
    if ((rc = rpt_soak_trend_init(&st->trend, o->window, o->budgets)) != LG_OK) return rc;
    st->trend.attr.device = trk_has_device(st->env.trk);
    hx_soak_gauges_init(&st->gauges, &st->plan, o->shard);
    for (int i = 0; i < HX_SOAK_MAX_PRESETS; i++)
        for (int c = 0; c < RPT_NCHANNELS; c++) st->baseline[i][c] = RPT_NONE;
    return LG_OK;
}

static void state_fini(struct soak_state *st)
{
    for (int i = 1; i < HX_SOAK_MAX_PRESETS; i++) data_free(st->data[i]);
    rpt_soak_trend_fini(&st->trend);
    if (st->data[0]) { /* the env owns preset 0's data set again */
        st->env.cfg = st->cfg[0];
        st->env.data = st->data[0];
    }
    if (st->env.o) hx_env_fini(&st->env);
}

/* Rewrites the metrics file; a failure is said once and leaves the error of the soak itself
 * (lg_errmsg) as it was, so that a session's or the results' failure is the one reported. */
static void write_metrics(struct soak_state *st, const char *path)
{
    int code = lg_errcode();
    char msg[1024];
    lg_strlcpy(msg, lg_errmsg(), sizeof msg);
    if (hx_soak_metrics_write(path, &st->gauges, &st->trend) == LG_OK) return;
    if (!st->metrics_failed)
        fprintf(stderr, "leakgate soak: metrics: %s (the soak goes on without them)\n",
                lg_errmsg());
    st->metrics_failed = true;
    if (code != LG_OK) lg_fail(code, "%s", msg);
}

/* Runs one session of the plan, judges and streams it. *fatal: the session failed. */
static int one_session(struct soak_state *st, const struct hx_soak_options *so,
                       struct rpt_writer *w, struct progress *pr, int index, int pi, int mode,
                       bool warm)
{
    struct rpt_session s;
    st->env.cfg = st->cfg[pi];
    st->env.data = st->data[pi];
    int64_t *base = st->baseline[pi];
    if (!warm && !st->have_baseline[pi]) { /* no warm-up: the process before its first session */
        int brc = hx_baseline_now(&st->env, base);
        if (brc != LG_OK) return brc;
        st->have_baseline[pi] = true;
    }
    int src = hx_session_run(&st->env, index, mode, warm, &s);
    char err[sizeof s.error];
    lg_strlcpy(err, src != LG_OK ? lg_errmsg() : "", sizeof err);
    if (warm) { /* the last warm-up session of the preset is its baseline */
        memcpy(base, s.absolute, sizeof s.absolute);
        st->have_baseline[pi] = true;
    }
    hx_session_deltas(&s, base);
    hx_gate_session(&so->o, st->suppressed, &s);
    unsigned fired = rpt_soak_trend_add(&st->trend, &s);
    bool leaked = s.leaked_host_bytes || s.leaked_device_bytes || s.n_refs;
    if (!warm && (!st->kept_samples[pi] || leaked || fired)) {
        st->kept_samples[pi] = true; /* this session's timeline stays in the results */
    } else {
        free(s.samples);
        s.samples = NULL;
        s.n_samples = 0;
        hx_gate_compact(&so->o, &s); /* class peaks stay; their tags where a budget needs them */
    }
    int wrc = rpt_writer_session(w, &s);
    if (src == LG_OK && wrc != LG_OK) lg_strlcpy(err, lg_errmsg(), sizeof err);
    hx_soak_gauges_session(&st->gauges, &s, pi, mode);
    write_metrics(st, so->metrics);
    progress_session(so, pr, &s, &st->trend, fired, st->plan.presets[pi]);
    rpt_session_fini(&s);
    if (src != LG_OK) { /* the session's own error, not whatever the metrics said after it */
        fprintf(stderr, "leakgate soak: session %d (%s %s) failed: %s\n", index,
                st->plan.presets[pi], hx_mode_name(mode), err);
        return lg_fail(src, "%s", err);
    }
    return wrc == LG_OK ? LG_OK : lg_fail(wrc, "%s", err); /* the results, not the metrics */
}

/* Appends the soak's extent to the verdict's summary. */
static void extent(struct rpt_verdict *v, const char *shard, double elapsed)
{
    char el[32];
    fmt_elapsed(el, sizeof el, elapsed);
    size_t l = strlen(v->summary);
    snprintf(v->summary + l, sizeof v->summary - l, "; soak%s%s, %s", shard[0] ? " shard " : "",
             shard, el);
}

int hx_soak(const struct hx_soak_options *so, struct rpt_verdict *v)
{
    const struct hx_options *o = &so->o;
    struct soak_state *st = calloc(1, sizeof *st);
    struct rpt_writer *w = NULL;
    struct rpt_run run;
    char path[700];
    memset(v, 0, sizeof *v);
    if (!st) return lg_fail(LG_ENOMEM, "out of memory for the soak's state");
    struct lg_dir_lock lock = {-1};
    int rc = lg_mkdirs(o->out_dir);
    if (rc == LG_OK) rc = lg_dir_lock(&lock, o->out_dir);
    if (rc == LG_OK) rc = rpt_clear_artefacts(o->out_dir);
    if (rc == LG_OK) rc = state_init(st, so);
    if (rc != LG_OK) goto out;
    hx_fill_run_line(o, &st->env.cfg, &run);
    hx_fill_blas(&run);
    hx_soak_presets_string(&st->plan, run.preset, sizeof run.preset);
    run.sessions = st->plan.sessions;
    snprintf(path, sizeof path, "%s/results.jsonl", o->out_dir);
    if ((rc = rpt_writer_open(&w, path, &run))) goto out;
    progress_begin(so, &run);
    write_metrics(st, so->metrics);

    struct progress pr = {.t0 = lg_now(), .last_line = lg_now()};
    const char *stopped = NULL;
    int items = hx_soak_shard_items(&st->plan);
    for (int j = 0;; j++) {
        int index, pi, mode;
        bool warm;
        if (hx_stop_requested) {
            stopped = hx_stop_name();
            break;
        }
        if (!hx_soak_session_at(&st->plan, j, &index, &pi, &mode, &warm)) break; /* items spent */
        if (!warm && st->plan.duration_s > 0 && lg_now() - pr.t0 >= st->plan.duration_s) {
            /* the duration is the plan; with --sessions too, ending before them is a cut */
            if (items > 0) stopped = "time limit (--duration) before --sessions";
            break;
        }
        if ((rc = one_session(st, so, w, &pr, index, pi, mode, warm)) != LG_OK) break;
    }
    if (!o->quiet && isatty(STDERR_FILENO)) fputc('\n', stderr);
    v->required = o->required;
    v->sessions_planned = items > 0 ? items : 0;
    v->partial = stopped != NULL || rc != LG_OK;
    if (stopped) lg_strlcpy(v->stopped, stopped, sizeof v->stopped);
    rpt_soak_trend_verdict(&st->trend, v);
    extent(v, o->shard, lg_now() - pr.t0);
    if (rc != LG_OK) hx_verdict_error(v, rc);
    int vrc = hx_gate_verdict(o, w, path, v);
    if (rc == LG_OK && vrc != LG_OK) rc = vrc;
    hx_print_verdict(o, v, stdout);
    st->gauges.running = false;
    st->gauges.verdict = v->status;
    write_metrics(st, so->metrics);
out:
    rc = hx_close_results(o, w, path, rc, v);
    state_fini(st);
    free(st);
    lg_dir_unlock(&lock);
    return rc;
}
