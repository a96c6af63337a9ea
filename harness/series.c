/* series.c — what the verdict needs from each session, kept in arrays sized once per run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hx_impl.h"
#include "verdict.h"

int hx_series_init(struct hx_series *s, int cap)
{
    memset(s, 0, sizeof *s);
    s->cap = cap;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        s->y[c] = calloc((size_t)cap + 1, sizeof *s->y[c]);
        s->avail[c] = true;
        if (!s->y[c]) goto nomem;
    }
    s->leaked_host = calloc((size_t)cap + 1, sizeof *s->leaked_host);
    s->leaked_dev = calloc((size_t)cap + 1, sizeof *s->leaked_dev);
    s->leaked_refs = calloc((size_t)cap + 1, sizeof *s->leaked_refs);
    if (!s->leaked_host || !s->leaked_dev || !s->leaked_refs) goto nomem;
    return LG_OK;
nomem:
    hx_series_fini(s);
    return lg_fail(LG_ENOMEM, "out of memory for the run's series");
}

void hx_series_fini(struct hx_series *s)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) free(s->y[c]);
    free(s->leaked_host);
    free(s->leaked_dev);
    free(s->leaked_refs);
    memset(s, 0, sizeof *s);
}

void hx_series_add(struct hx_series *s, const struct rpt_session *r)
{
    if (s->n_all >= s->cap) return;
    int i = s->n_all++;
    s->leaked_host[i] = r->leaked_host_bytes;
    s->leaked_dev[i] = r->leaked_device_bytes;
    s->leaked_refs[i] = r->n_refs;
    hx_series_attribute(s, r);
    if (r->warmup) return;
    int k = s->n_measured++;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        if (r->delta[c] == RPT_NONE)
            s->avail[c] = false;
        else
            s->y[c][k] = (double)r->delta[c];
    }
}

void hx_series_attribute(struct hx_series *s, const struct rpt_session *r)
{
    /* attribution: the largest tag class (bookkeeping "meta/" aside), and its largest tag */
    for (int sp = 0; sp < 2; sp++) {
        const char *space = sp ? "device" : "host";
        int64_t *worst = sp ? &s->worst_dev_bytes : &s->worst_host_bytes;
        char *dst = sp ? s->worst_dev : s->worst_host;
        for (int c = 0; c < r->n_classes; c++) {
            const struct rpt_class_bytes *cl = &r->classes[c];
            if (!strcmp(cl->cls, "meta") || cl->bytes <= *worst) continue;
            const struct rpt_leak_group *top = NULL;
            for (int g = 0; g < r->n_groups; g++) {
                const struct rpt_leak_group *lg = &r->groups[g];
                size_t l = strlen(cl->cls);
                if (strcmp(lg->space, space) || strncmp(lg->tag, cl->cls, l) || lg->tag[l] != '/') continue;
                if (!top || lg->bytes > top->bytes) top = lg;
            }
            if (!top) continue;
            *worst = cl->bytes;
            char b1[32], b2[32];
            snprintf(dst, sizeof s->worst_host, "class %s (%s in session %d; largest %s, %s)", cl->cls,
                     lg_fmt_bytes(b1, sizeof b1, (double)cl->bytes), r->index, top->tag,
                     lg_fmt_bytes(b2, sizeof b2, (double)top->bytes));
        }
    }
    if (r->n_refs && !s->worst_ref[0]) {
        const struct rpt_ref_leak *rl = &r->refs[0];
        snprintf(s->worst_ref, sizeof s->worst_ref, "%s %s retained at %s", rl->kind, rl->name,
                 rl->n_retains ? rl->retains[rl->n_retains - 1].site : "?");
    }
}

void hx_verdict_unavailable(struct rpt_channel_verdict *cv, enum rpt_channel c, const char *why)
{
    memset(cv, 0, sizeof *cv);
    cv->channel = c;
    cv->status = RPT_UNAVAILABLE;
    cv->figure = cv->slope = cv->slope_lo = cv->slope_hi = cv->shift = NAN;
    lg_strlcpy(cv->why, why, sizeof cv->why);
}

bool hx_run_had_device(const struct rpt_run *run) { return strncmp(run->device, "cuda", 4) == 0; }

void hx_judge_series(const struct hx_series *s, const struct rpt_budget *b, struct rpt_verdict *v)
{
    v->sessions_measured = s->n_measured;
    v->n_channels = 0;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        struct rpt_channel_verdict *cv = &v->channels[v->n_channels++];
        if (c == RPT_CH_TAGGED_HOST) {
            hx_judge_exact(c, s->leaked_host, s->n_all, s->worst_host, cv);
        } else if (c == RPT_CH_TAGGED_DEVICE) {
            if (s->device)
                hx_judge_exact(c, s->leaked_dev, s->n_all, s->worst_dev, cv);
            else
                hx_verdict_unavailable(cv, c, "no device in this run (--device cpu)");
        } else if (c == RPT_CH_REFS) {
            hx_judge_exact(c, s->leaked_refs, s->n_all, s->worst_ref, cv);
        } else if (!s->avail[c] || s->n_measured == 0) {
            hx_verdict_unavailable(cv, c, s->n_measured == 0 ? "no measured session"
                                                             : "not measured in this build or on this machine");
        } else {
            hx_judge_statistical(c, s->y[c], s->n_measured, &b[c], cv);
        }
    }
    hx_overall(v);
}
