/* run.c — the run loop: warm-up, baseline, measured sessions streamed to results.jsonl,
 * the verdict, the artefacts. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"
#include "hx_impl.h"
#include "kn_blas.h"
#include "tn_device.h"
#include "reports.h"
#include "verdict.h"

volatile sig_atomic_t hx_stop_requested;

static void on_signal(int sig) { hx_stop_requested = sig; }

const char *hx_stop_name(void)
{
    switch (hx_stop_requested) {
    case 0: return "";
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    }
    return "a signal";
}

void hx_install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* a lost terminal or SSH session: the same orderly stop */
}

/* The trainer's GEMM kernels (kn_blas.h), for the run line and the header; exec leaves them "". */
void hx_fill_blas(struct rpt_run *run)
{
    const struct kn_blas_info *b = kn_blas_info();
    lg_strlcpy(run->blas, b->blas, sizeof run->blas);
    lg_strlcpy(run->blas_core, b->core, sizeof run->blas_core);
    lg_strlcpy(run->blas_path, b->path, sizeof run->blas_path);
}

void hx_fill_run_line(const struct hx_options *o, const struct tft_config *cfg, struct rpt_run *run)
{
    memset(run, 0, sizeof *run);
    lg_strlcpy(run->schema, RPT_SCHEMA_WRITTEN, sizeof run->schema);
    lg_strlcpy(run->version, LG_VERSION, sizeof run->version);
    lg_strlcpy(run->command, o->command, sizeof run->command);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(run->started, sizeof run->started, "%Y-%m-%dT%H:%M:%SZ", &tm);
    gethostname(run->hostname, sizeof run->hostname - 1);
    run->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    run->mem_bytes = (int64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
    tn_device_describe(o->device, run->device, sizeof run->device);
    lg_strlcpy(run->preset, cfg->preset, sizeof run->preset);
    run->modes[0] = '\0';
    for (int m = 1; m <= HX_MODE_QAT; m <<= 1)
        if (o->modes & m) {
            size_t l = strlen(run->modes);
            snprintf(run->modes + l, sizeof run->modes - l, "%s%s", l ? "," : "", hx_mode_name(m));
        }
    run->sessions = o->sessions;
    run->warmup = o->warmup;
    run->steps = o->steps;
    run->seed = o->seed;
    run->stacks = o->stacks;
    for (int i = 0; i < o->n_inject; i++) {
        size_t l = strlen(run->inject);
        snprintf(run->inject + l, sizeof run->inject - l, "%s%s", l ? "," : "", o->inject[i].spec);
    }
    lg_strlcpy(run->shard, o->shard, sizeof run->shard);
    run->required = o->required;
    memcpy(run->budgets, o->budgets, sizeof run->budgets);
}

/* Builds the data set (synthetic, or the user's CSV) and the config it implies. */
int hx_make_data(const struct hx_options *o, struct trk_tracker *trk, struct tft_config *cfg,
                 struct data_set **data)
{
    if (o->csv[0]) {
        if (!o->csv_config[0])
            return lg_fail(LG_EINVAL, "--csv needs --csv-config (the JSON column roles)");
        return data_load_csv(data, cfg, trk, o->csv, o->csv_config);
    }
    int rc = tft_config_preset(cfg, o->preset);
    if (rc) return rc;
    return data_synth_new(data, trk, cfg, &(struct data_synth_options){.seed = o->seed});
}

/* A model whose parameters alone — weights, gradients and Adam's two moments, 16 bytes each —
 * are more than this machine's memory and swap is refused before a session (exit 2), naming
 * the sizes: a --csv-config's hidden 65536 or cardinality 1e8 is in range, and ran into the
 * OOM killer at 24 GB instead. */
static int check_model_fits(const struct tft_config *cfg, const struct hx_options *o)
{
    struct sysinfo si;
    if (sysinfo(&si) != 0) return LG_OK;
    double have = ((double)si.totalram + (double)si.totalswap) * si.mem_unit;
    double need = 16.0 * (double)tft_config_param_count(cfg);
    if (need <= have) return LG_OK;
    char b1[32], b2[32];
    return lg_fail(LG_EINVAL,
                   "%s%s: the model has %lld parameters (hidden %d): %s for its weights, "
                   "gradients and optimizer state alone, more than this machine's memory and "
                   "swap (%s)",
                   o->csv_config[0] ? "--csv-config " : "--preset ",
                   o->csv_config[0] ? o->csv_config : o->preset,
                   (long long)tft_config_param_count(cfg), cfg->hidden,
                   lg_fmt_bytes(b1, sizeof b1, need), lg_fmt_bytes(b2, sizeof b2, have));
}

int hx_env_init(struct hx_env *env, const struct hx_options *o)
{
    memset(env, 0, sizeof *env);
    env->o = o;
    int rc = trk_tracker_new(&env->trk, &(struct trk_options){.stacks = o->stacks});
    if (rc) return rc;
    if ((rc = tn_device_init(env->trk, o->device))) return rc;
    if ((rc = hx_make_data(o, env->trk, &env->cfg, &env->data))) return rc;
    if ((rc = check_model_fits(&env->cfg, o))) return rc;
    env->max_samples = 3 * (o->steps > 0 ? o->steps : 20) + 64;
    env->samples = calloc((size_t)env->max_samples, sizeof *env->samples);
    if (!env->samples) return lg_fail(LG_ENOMEM, "out of memory for the timeline buffer");
    return LG_OK;
}

void hx_env_fini(struct hx_env *env)
{
    free(env->noise);
    data_free(env->data);
    free(env->samples);
    if (env->trk) {
        tn_device_fini(env->trk);
        size_t left = trk_tracker_free(env->trk);
        if (left && !env->o->n_inject)
            fprintf(stderr, "leakgate: %zu tracked allocation(s) were still live at exit\n", left);
    }
    memset(env, 0, sizeof *env);
}

/* The order of sessions: modes interleaved (fp32, int8, qat), warm-up first. */
int hx_mode_at(int modes, int index)
{
    int list[3], n = 0;
    for (int m = 1; m <= HX_MODE_QAT; m <<= 1)
        if (modes & m) list[n++] = m;
    return list[index % n];
}

void hx_verdict_error(struct rpt_verdict *v, int rc)
{
    v->status = RPT_ERROR;
    v->exit_code = lg_exit_code(rc);
    snprintf(v->summary, sizeof v->summary, "ERROR: %s", lg_errmsg());
}

int hx_close_results(const struct hx_options *o, struct rpt_writer *w, const char *path, int rc,
                     struct rpt_verdict *v)
{
    bool opened = w != NULL;
    rpt_writer_close(w);
    if (rc != LG_OK && !opened) hx_verdict_error(v, rc);
    char msg[1024];
    lg_strlcpy(msg, lg_errmsg(), sizeof msg); /* writing reports must not lose the failure */
    if (opened && o->reports) {
        int wrc = hx_write_reports(o, path);
        if (wrc != LG_OK && wrc != LG_EUNAVAIL && rc == LG_OK && v->exit_code == 0) {
            v->exit_code = 2;
            fprintf(stderr,
                    "leakgate: the verdict passed but its reports could not be written: exit 2\n");
        }
    }
    if (rc != LG_OK) lg_fail(rc, "%s", msg);
    return rc;
}

int hx_baseline_now(struct hx_env *env, int64_t *baseline)
{
    struct trk_snapshot snap;
    int rc = trk_quiesce(env->trk);
    trk_snapshot(env->trk, &snap);
    hx_channels_from_snapshot(&snap, baseline);
    return rc;
}

void hx_session_deltas(struct rpt_session *s, const int64_t *baseline)
{
    for (int c = 0; c < RPT_NCHANNELS && !s->warmup; c++)
        s->delta[c] = s->absolute[c] == RPT_NONE || baseline[c] == RPT_NONE
                          ? RPT_NONE
                          : s->absolute[c] - baseline[c];
}

int hx_run(const struct hx_options *o, struct rpt_verdict *v)
{
    struct hx_env env = {0};
    struct rpt_series ser;
    struct rpt_writer *w = NULL;
    struct rpt_run run;
    struct lg_dir_lock lock = {-1};
    struct hx_prof prof = {0}; /* untagged growth named by allocation stack (exec_prof.c) */
    char path[700];
    memset(v, 0, sizeof *v);
    memset(&ser, 0, sizeof ser);
    int n_modes = __builtin_popcount((unsigned)o->modes);
    int warm_total = o->warmup * n_modes, total = warm_total + o->sessions;
    int rc = lg_mkdirs(o->out_dir);
    if (rc == LG_OK) rc = lg_dir_lock(&lock, o->out_dir);
    if (rc == LG_OK) rc = rpt_clear_artefacts(o->out_dir);
    if (rc == LG_OK) rc = hx_prof_start(&prof, o);
    if (rc == LG_OK) rc = hx_env_init(&env, o);
    if (rc == LG_OK) rc = rpt_series_init(&ser, total);
    if (rc != LG_OK) goto out;
    ser.device = trk_has_device(env.trk);
    hx_fill_run_line(o, &env.cfg, &run);
    run.prof_sample = prof.available ? prof.sample : 0;
    hx_fill_blas(&run);
    snprintf(path, sizeof path, "%s/results.jsonl", o->out_dir);
    if ((rc = rpt_writer_open(&w, path, &run))) goto out;
    hx_progress_begin(o, &run, total);

    int64_t baseline[RPT_NCHANNELS];
    for (int c = 0; c < RPT_NCHANNELS; c++) baseline[c] = RPT_NONE;
    if (warm_total == 0 && (rc = hx_baseline_now(&env, baseline)) != LG_OK) goto out;
    int done = 0, measured = 0;
    int64_t suppressed[2] = {0, 0}; /* bytes suppression rules took so far (host, device) */
    for (int idx = 0; idx < total && !hx_stop_requested; idx++) {
        int mode = hx_mode_at(o->modes, idx);
        bool warm = idx < warm_total;
        struct rpt_session s;
        int src = hx_session_run(&env, idx, mode, warm, &s);
        if (warm && idx == warm_total - 1) memcpy(baseline, s.absolute, sizeof baseline);
        hx_session_deltas(&s, baseline);
        hx_gate_session(o, suppressed, &s);
        rpt_series_add(&ser, &s);
        if (hx_prof_after_session(&prof, &ser, o->budgets, &s) != LG_OK && !o->quiet)
            fprintf(stderr, "leakgate: heap profile: %s\n", lg_errmsg());
        int wrc = rpt_writer_session(w, &s);
        hx_progress_session(o, &s, idx, total);
        rpt_session_fini(&s);
        done++;
        measured += !warm;
        if (src != LG_OK) {
            rc = src;
            fprintf(stderr, "leakgate: session %d (%s) failed: %s\n", idx, hx_mode_name(mode),
                    lg_errmsg());
            break;
        }
        if (wrc != LG_OK) {
            rc = wrc;
            break;
        }
    }
    hx_progress_end(o);
    v->required = o->required;
    v->sessions_planned = o->sessions;
    v->partial = done < total;
    if (v->partial && rc == LG_OK) lg_strlcpy(v->stopped, hx_stop_name(), sizeof v->stopped);
    rpt_judge_series(&ser, o->budgets, v);
    if (rc != LG_OK) hx_verdict_error(v, rc);
    if (v->partial && rc == LG_OK) {
        size_t l = strlen(v->summary);
        snprintf(v->summary + l, sizeof v->summary - l,
                 " (partial: %d of %d warm-up and %d of %d measured sessions)",
                 LG_MIN(done, warm_total), warm_total, measured, o->sessions);
    }
    int vrc = hx_gate_verdict(o, w, path, v);
    if (rc == LG_OK && vrc != LG_OK) rc = vrc;
    hx_print_verdict(o, v, stdout);
    hx_prof_print(&prof, stdout);
out:
    hx_prof_stop(&prof);
    rc = hx_close_results(o, w, path, rc, v);
    rpt_series_fini(&ser);
    if (env.o) hx_env_fini(&env);
    lg_dir_unlock(&lock);
    return rc;
}
