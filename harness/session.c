/* session.c — one session of the design's sequence, measured: build → train → validate →
 * checkpoint → INT8 / QAT → free, then quiesce and snapshot, and the generation's leak report
 * turned into the session's result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hx_impl.h"
#include "session.h"
#include "tn_device.h"

void hx_channels_from_snapshot(const struct trk_snapshot *s, int64_t *abs)
{
#define V(x) ((x) < 0 ? RPT_NONE : (x))
    abs[RPT_CH_TAGGED_HOST] = s->tagged_host;
    abs[RPT_CH_TAGGED_DEVICE] = s->tagged_device;
    abs[RPT_CH_REFS] = 0;
    /* the tracker's own tables are the measurement's memory, not the workload's: a tag table
     * that grows when session 40 meets its 1025th tag name is not a leak (docs/design.md) */
    /* and exec's heap profiles (agent/lga_promote.c): jemalloc keeps each sampled small block
     * in a 16 KiB extent, and a record of each sampled stack (its internal allocations), which
     * the program alone would not hold */
    int64_t prof = s->prof_promoted + s->je_internal;
    abs[RPT_CH_JE_ALLOCATED] =
        s->je_allocated < 0 ? RPT_NONE : s->je_allocated - s->tracker_overhead - prof;
    /* likewise exec's census (agent/lga_census.c): an arena per session keeps a small block in a
     * slab and metadata of its own, ~130 KiB a kept session the program alone would not hold */
    abs[RPT_CH_JE_ACTIVE] =
        s->je_active < 0 ? RPT_NONE : s->je_active - s->tracker_overhead - s->census_active - prof;
    abs[RPT_CH_JE_RESIDENT] =
        s->je_resident < 0 ? RPT_NONE : s->je_resident - s->census_resident - s->prof_promoted;
    abs[RPT_CH_RSS] = !trk_build_has_rss() || s->rss < 0 /* not under AddressSanitizer */
                          ? RPT_NONE
                          : s->rss - s->census_resident - s->prof_promoted_rss;
    abs[RPT_CH_DEV_DRIVER] = V(s->dev_used);
    abs[RPT_CH_DEV_PROCESS] = V(s->dev_process);
#undef V
}

void hx_sample(struct hx_env *env, const char *phase, int step)
{
    if (env->n_samples >= env->max_samples) return;
    struct trk_snapshot s;
    trk_snapshot_light(env->trk, &s); /* every step: no device sync, no driver query */
    struct rpt_sample *p = &env->samples[env->n_samples++];
    memset(p, 0, sizeof *p);
    p->step = step;
    lg_strlcpy(p->phase, phase, sizeof p->phase);
    p->t = s.t - env->t0;
    for (int c = 0; c < RPT_NCHANNELS; c++) p->v[c] = RPT_NONE;
    p->v[RPT_CH_TAGGED_HOST] = s.tagged_host; /* the sampled channels (RPT_CHF_SAMPLED) */
    p->v[RPT_CH_TAGGED_DEVICE] = s.tagged_device;
    p->v[RPT_CH_JE_ALLOCATED] = s.je_allocated < 0 ? RPT_NONE : s.je_allocated;
    p->v[RPT_CH_RSS] = s.rss < 0 ? RPT_NONE : s.rss;
}

static void on_progress(void *user, const char *phase, int step, double loss)
{
    (void)loss;
    hx_sample(user, phase, step);
}

/* raw-noise: frees what the last session held and holds a random amount up to the fault's
 * size across this session's end (uniform, seeded by the session), touched so every channel
 * sees it. Not a leak: the next session frees it. */
static int hold_noise(struct hx_env *env, int index)
{
    free(env->noise);
    env->noise = NULL;
    size_t most = hx_inject_noise(env->o, index);
    if (!most) return LG_OK;
    uint64_t x =
        (env->o->seed + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)index * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    size_t n = (size_t)((double)(x >> 11) / 9007199254740992.0 * (double)most);
    if (!n) return LG_OK;
    if (!(env->noise = malloc(n)))
        return lg_fail(LG_ENOMEM, "fault raw-noise could not be injected: out of memory");
    memset(env->noise, 0x3c, n);
    return LG_OK;
}

/* The body of a session; everything it builds is freed before it returns, error or not. */
static int session_body(struct hx_env *env, int index, int mode, struct rpt_session *out)
{
    const struct hx_options *o = env->o;
    struct tft_model *m = NULL;
    struct tr_trainer *tr = NULL;
    struct tr_options topt = {.steps = o->steps,
                              .batch = o->batch,
                              .seed = o->seed + (uint64_t)index,
                              .device = o->device,
                              .progress = on_progress,
                              .progress_user = env};
    hx_inject_faults(o, index, &topt.faults);
    hx_sample(env, "build", -1);
    int rc = tft_new(&m, env->trk, &env->cfg, o->seed + 1000003ull * (uint64_t)index);
    if (rc == LG_OK) rc = tr_new(&tr, m, env->data, &topt);
    if (rc == LG_OK) rc = tr_initialize_optimizer(tr);
    struct tr_train_stats ts = {0};
    if (rc == LG_OK) rc = tr_train(tr, &ts);
    if (rc == LG_OK) {
        out->train_loss = ts.last_loss;
        rc = tr_validate(tr, &out->val_loss);
    }
    if (rc == LG_OK) {
        char path[600];
        snprintf(path, sizeof path, "%s/checkpoint.safetensors", o->out_dir);
        rc = tr_save_checkpoint(tr, path);
    }
    struct tr_quant_stats qs = {.quant_val_loss = NAN};
    if (rc == LG_OK && mode == HX_MODE_INT8) rc = tr_finalize_int8_training(tr, &qs);
    if (rc == LG_OK && mode == HX_MODE_QAT) rc = tr_finalize_qat_training(tr, &qs);
    out->quant_val_loss = qs.quant_val_loss;
    hx_sample(env, "free", -1);
    tr_free(tr);
    if (m) tft_free(m);
    if (rc == LG_OK) rc = hold_noise(env, index);
    return rc;
}

/* Hands the tracker's report to the session result (lg_leaks.h: one data model): the groups and
 * references move, the classes are summed; what lk still owns is freed by the caller. */
static int leaks_to_session(struct trk_leaks *lk, struct rpt_session *s)
{
    s->leaked_host_bytes = lk->host_bytes;
    s->leaked_device_bytes = lk->device_bytes;
    s->invalid_frees = (int64_t)lk->n_invalid_frees;
    s->groups = lk->groups;
    s->n_groups = (int)lk->n_groups;
    s->refs = lk->refs;
    s->n_refs = (int)lk->n_refs;
    lk->groups = NULL;
    lk->refs = NULL;
    lk->n_groups = lk->n_refs = 0;
    for (int i = 0; i < s->n_refs; i++) { /* addresses of this process mean nothing on disk */
        s->refs[i].object = NULL;
        for (int k = 0; k < s->refs[i].n_retains; k++) s->refs[i].retains[k].holder = NULL;
    }
    return lg_leak_classes(s->groups, s->n_groups, &s->classes, &s->n_classes);
}

int hx_session_run(struct hx_env *env, int index, int mode, bool warmup, struct rpt_session *out)
{
    memset(out, 0, sizeof *out);
    out->index = index;
    lg_strlcpy(out->mode, hx_mode_name(mode), sizeof out->mode);
    out->warmup = warmup;
    out->steps = env->o->steps;
    out->train_loss = out->val_loss = out->quant_val_loss = NAN;
    for (int c = 0; c < RPT_NCHANNELS; c++) out->delta[c] = out->absolute[c] = RPT_NONE;

    env->n_samples = 0;
    env->t0 = lg_now();
    trk_reset_peaks(env->trk);
    trk_session_begin(env->trk);
    int rc = session_body(env, index, mode, out);
    if (rc != LG_OK) lg_strlcpy(out->error, lg_errmsg(), sizeof out->error);
    struct trk_totals host, dev;
    trk_totals(env->trk, TRK_HOST, &host);
    trk_totals(env->trk, TRK_DEVICE, &dev);
    out->peak_tagged_host = host.peak_bytes;
    out->peak_tagged_device = dev.peak_bytes;
    struct trk_leaks *lk = NULL;
    int end = trk_session_end(env->trk, &lk);

    /* measure before the harness allocates anything for the report; a device fault the wait
     * finds belongs to this session's work */
    int q = trk_quiesce(env->trk);
    if (q != LG_OK && rc == LG_OK) {
        rc = q;
        lg_strlcpy(out->error, lg_errmsg(), sizeof out->error);
    }
    struct trk_snapshot snap;
    trk_snapshot(env->trk, &snap);
    hx_channels_from_snapshot(&snap, out->absolute);
    if (!trk_has_device(env->trk)) { /* a CPU run measures no device: null, never a 0 */
        out->absolute[RPT_CH_TAGGED_DEVICE] = RPT_NONE;
        out->peak_tagged_device = RPT_NONE;
    }
    out->duration_s = lg_now() - env->t0;
    /* after the snapshot: it allocates; without memory the peaks are not measured, and a peak
     * budget says so (inconclusive) */
    hx_gate_peaks(env->trk, out);

    if (lk) {
        out->absolute[RPT_CH_REFS] = (int64_t)lk->n_refs;
        int lrc = leaks_to_session(lk, out);
        if (rc == LG_OK && lrc != LG_OK) rc = lrc;
    } else if (rc == LG_OK && end != LG_OK && end != LG_EBUSY) {
        rc = end;
    }
    trk_leaks_free(lk);
    if (rc == LG_ECUDA) tn_device_clear_error(); /* this session's fault is not the next one's */
    if (env->n_samples) {
        out->samples = malloc((size_t)env->n_samples * sizeof *out->samples);
        if (out->samples) {
            memcpy(out->samples, env->samples, (size_t)env->n_samples * sizeof *out->samples);
            out->n_samples = env->n_samples;
        }
    }
    return rc;
}
