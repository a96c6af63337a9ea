/* history_record.c — a history record (history.h) from a run's results, and back into results
 * that compare can judge; the workload key that groups records; the baseline a run is compared
 * with. */
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "history.h"
#include "summary.h"
#include "verdict.h"

#define PEAK_TAGS 10

void rpt_workload_key(const struct rpt_run *run, const char *name, char *buf, size_t size)
{
    if (name && *name) {
        lg_strlcpy(buf, name, size);
        return;
    }
    if (!strcmp(run->command, "exec")) {
        snprintf(buf, size, "exec %s", run->cmd);
        return;
    }
    snprintf(buf, size, "%s %s %s steps=%d %s%s%s%s%s", run->command, run->preset, run->modes,
             run->steps, run->device, run->inject[0] ? " inject=" : "", run->inject,
             run->shard[0] ? " shard=" : "", run->shard);
}

void rpt_history_record_fini(struct rpt_history_record *h)
{
    if (!h) return;
    free(h->kinds);
    for (int c = 0; c < RPT_NCHANNELS; c++) free(h->series[c]);
    free(h->classes);
    free(h->peak_tags);
    free(h->tags);
    memset(h, 0, sizeof *h);
}

/* The median of the measured sessions' figures of channel c (exact: what each left; otherwise
 * the reading after the session), NaN when none measured it. */
static double median_of(const struct rpt_results *r, enum rpt_channel c, bool absolute)
{
    double *v = malloc(sizeof(double) * (size_t)(r->n_sessions + 1));
    int n = 0;
    if (!v) return NAN;
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        int64_t x;
        if (s->warmup) continue;
        if (absolute && s->absolute[c] != RPT_NONE) v[n++] = (double)s->absolute[c];
        if (!absolute && rpt_session_value(s, c, &x)) v[n++] = (double)x;
    }
    double m = rpt_median(v, n);
    free(v);
    return m;
}

static void figures(struct rpt_history_record *h, const struct rpt_results *r)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        const struct rpt_channel_verdict *cv = rpt_verdict_for(r, (enum rpt_channel)c);
        bool exact = rpt_channel_exact((enum rpt_channel)c);
        h->growth[c] = exact                                 ? median_of(r, c, false)
                       : cv && cv->status != RPT_UNAVAILABLE ? cv->slope
                                                             : NAN;
        double lv = c == RPT_CH_REFS ? NAN : median_of(r, c, true);
        h->level[c] = isfinite(lv) ? (int64_t)llround(lv) : RPT_NONE;
    }
}

static int series(struct rpt_history_record *h, const struct rpt_results *r)
{
    int from = LG_MAX(0, r->n_sessions - RPT_HISTORY_MAX_SESSIONS);
    h->n_sessions = r->n_sessions - from;
    h->kinds = calloc((size_t)h->n_sessions + 1, 1);
    if (!h->kinds) return LG_ENOMEM;
    for (int c = 0; c < RPT_NCHANNELS; c++)
        if (!(h->series[c] = calloc((size_t)h->n_sessions + 1, sizeof *h->series[c])))
            return LG_ENOMEM;
    for (int i = 0; i < h->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[from + i];
        h->kinds[i] = s->warmup ? 'w' : 'm';
        for (int c = 0; c < RPT_NCHANNELS; c++) {
            int64_t v;
            h->series[c][i] = rpt_session_value(s, c, &v) ? v : RPT_NONE;
        }
    }
    return LG_OK;
}

/* The highest peak of each class, and of each of the tags sessions named, over the sessions. */
static int peaks(struct rpt_history_record *h, const struct rpt_results *r)
{
    int cap_c = 0, cap_t = 0;
    h->peak_host = h->peak_device = RPT_NONE;
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        if (s->peak_tagged_host != RPT_NONE)
            h->peak_host = LG_MAX(h->peak_host, s->peak_tagged_host);
        if (s->peak_tagged_device != RPT_NONE)
            h->peak_device = LG_MAX(h->peak_device, s->peak_tagged_device);
        cap_c += s->n_peaks;
        for (int k = 0; k < s->n_peaks; k++) cap_t += s->peaks[k].n_tags;
    }
    h->classes = calloc((size_t)cap_c + 1, sizeof *h->classes);
    h->peak_tags = calloc((size_t)cap_t + 1, sizeof *h->peak_tags);
    if (!h->classes || !h->peak_tags) return LG_ENOMEM;
    for (int i = 0; i < r->n_sessions; i++)
        for (int k = 0; k < r->sessions[i].n_peaks; k++) {
            const struct rpt_class_peak *p = &r->sessions[i].peaks[k];
            int j = 0;
            while (j < h->n_classes &&
                   (strcmp(h->classes[j].cls, p->cls) || strcmp(h->classes[j].space, p->space)))
                j++;
            if (j == h->n_classes) {
                lg_strlcpy(h->classes[j].cls, p->cls, sizeof h->classes[j].cls);
                lg_strlcpy(h->classes[j].space, p->space, sizeof h->classes[j].space);
                h->n_classes++;
            }
            h->classes[j].bytes = LG_MAX(h->classes[j].bytes, p->bytes);
            for (int t = 0; t < p->n_tags; t++) {
                int q = 0;
                while (q < h->n_peak_tags && strcmp(h->peak_tags[q].tag, p->tags[t].tag)) q++;
                if (q == h->n_peak_tags) {
                    lg_strlcpy(h->peak_tags[q].tag, p->tags[t].tag, sizeof h->peak_tags[q].tag);
                    lg_strlcpy(h->peak_tags[q].space, p->space, sizeof h->peak_tags[q].space);
                    h->n_peak_tags++;
                }
                h->peak_tags[q].bytes = LG_MAX(h->peak_tags[q].bytes, p->tags[t].bytes);
            }
        }
    return LG_OK;
}

static int cmp_class(const void *a, const void *b)
{
    const struct rpt_hist_class *x = a, *y = b;
    return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1) : strcmp(x->cls, y->cls);
}

static int cmp_tag(const void *a, const void *b)
{
    const struct rpt_hist_tag *x = a, *y = b;
    return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1) : strcmp(x->tag, y->tag);
}

static int retained(struct rpt_history_record *h, const struct rpt_results *r)
{
    struct rpt_tag_total *t = NULL;
    int n = 0;
    int rc = rpt_tag_totals(r, &t, &n);
    if (rc != LG_OK) return rc;
    h->n_tags = LG_MIN(n, RPT_HISTORY_TAGS);
    h->tags = calloc((size_t)h->n_tags + 1, sizeof *h->tags);
    for (int i = 0; h->tags && i < h->n_tags; i++) {
        lg_strlcpy(h->tags[i].tag, t[i].tag, sizeof h->tags[i].tag);
        lg_strlcpy(h->tags[i].space, t[i].space, sizeof h->tags[i].space);
        h->tags[i].bytes = t[i].bytes;
        h->tags[i].sessions = t[i].sessions;
    }
    free(t);
    return h->tags ? LG_OK : LG_ENOMEM;
}

/* The run line's members a record keeps, copied both ways (to a record, back to results). */
#define RUN_STR(m)                                                                                 \
    {                                                                                              \
        offsetof(struct rpt_run, m), sizeof(((struct rpt_run *)0)->m),                             \
            offsetof(struct rpt_history_record, m), sizeof(((struct rpt_history_record *)0)->m)    \
    }
static const struct {
    size_t run_off, run_size, rec_off, rec_size;
} run_strings[] = {RUN_STR(command), RUN_STR(version), RUN_STR(hostname), RUN_STR(device),
                   RUN_STR(preset),  RUN_STR(modes),   RUN_STR(cmd)};

/* Copies run_strings from src (a run when to_record, else a record) into dst. */
static void copy_run_strings(void *dst, const void *src, bool to_record)
{
    for (size_t k = 0; k < LG_ARRAY_LEN(run_strings); k++) {
        size_t d = to_record ? run_strings[k].rec_off : run_strings[k].run_off;
        size_t s = to_record ? run_strings[k].run_off : run_strings[k].rec_off;
        size_t n = to_record ? run_strings[k].rec_size : run_strings[k].run_size;
        lg_strlcpy((char *)dst + d, (const char *)src + s, n);
    }
}

static void identity(struct rpt_history_record *h, const struct rpt_results *r,
                     const struct rpt_history_meta *m)
{
    const struct rpt_run *run = &r->run;
    lg_strlcpy(h->commit, m && m->commit ? m->commit : "", sizeof h->commit);
    lg_strlcpy(h->branch, m && m->branch ? m->branch : "", sizeof h->branch);
    lg_strlcpy(h->date, run->started, sizeof h->date);
    rpt_workload_key(run, m ? m->workload : NULL, h->workload, sizeof h->workload);
    copy_run_strings(h, run, true);
    h->cpus = run->cpus;
    h->mem_bytes = run->mem_bytes;
    h->steps = run->steps;
    h->required = r->has_verdict ? r->verdict.required : run->required;
    h->status = r->has_verdict ? r->verdict.status : RPT_INCONCLUSIVE;
    h->exit_code = r->has_verdict ? r->verdict.exit_code : rpt_exit_code(RPT_INCONCLUSIVE);
    lg_strlcpy(h->summary, r->has_verdict ? r->verdict.summary : "no verdict line",
               sizeof h->summary);
}

int rpt_history_record_from(struct rpt_history_record *h, const struct rpt_results *r,
                            const struct rpt_history_meta *meta)
{
    memset(h, 0, sizeof *h);
    identity(h, r, meta);
    figures(h, r);
    int rc = series(h, r);
    if (rc == LG_OK) rc = peaks(h, r);
    if (rc == LG_OK) rc = retained(h, r);
    if (rc != LG_OK) {
        rpt_history_record_fini(h);
        return lg_fail(LG_ENOMEM, "out of memory summarising the run for its history");
    }
    qsort(h->classes, (size_t)h->n_classes, sizeof *h->classes, cmp_class);
    qsort(h->peak_tags, (size_t)h->n_peak_tags, sizeof *h->peak_tags, cmp_tag);
    h->n_peak_tags = LG_MIN(h->n_peak_tags, PEAK_TAGS);
    return LG_OK;
}

/* ---- the baseline ------------------------------------------------------------------------- */

const struct rpt_history_record *rpt_history_baseline(const struct rpt_history *h,
                                                      const char *workload)
{
    for (int i = h ? h->n - 1 : -1; i >= 0; i--) {
        const struct rpt_history_record *x = &h->rec[i];
        if (!strcmp(x->workload, workload) &&
            (x->status == RPT_PASS || x->status == RPT_SATURATING))
            return x;
    }
    return NULL;
}

bool rpt_history_has(const struct rpt_history *h, const char *workload)
{
    for (int i = 0; h && i < h->n; i++)
        if (!strcmp(h->rec[i].workload, workload)) return true;
    return false;
}

/* Session i of the record as a results session: what rpt_session_value gives back is the
 * record's figure. */
static int to_session(const struct rpt_history_record *h, int i, bool *seen, struct rpt_session *s)
{
    memset(s, 0, sizeof *s);
    s->index = i;
    s->warmup = h->kinds[i] == 'w';
    lg_strlcpy(s->mode, s->warmup ? "warmup" : "history", sizeof s->mode);
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        int64_t v = h->series[c][i];
        s->absolute[c] = seen[c] ? 0 : RPT_NONE;
        s->delta[c] = rpt_channel_exact((enum rpt_channel)c) ? RPT_NONE : v;
    }
    s->leaked_host_bytes = LG_MAX(h->series[RPT_CH_TAGGED_HOST][i], 0);
    s->leaked_device_bytes = LG_MAX(h->series[RPT_CH_TAGGED_DEVICE][i], 0);
    int64_t refs = h->series[RPT_CH_REFS][i];
    if (refs > 0) {
        s->refs = calloc((size_t)refs, sizeof *s->refs);
        if (!s->refs) return LG_ENOMEM;
        s->n_refs = (int)refs;
        for (int k = 0; k < s->n_refs; k++) {
            lg_strlcpy(s->refs[k].kind, "?", sizeof s->refs[k].kind);
            lg_strlcpy(s->refs[k].name, "(from the history)", sizeof s->refs[k].name);
        }
    }
    return LG_OK;
}

/* The record's retained tags, as leak groups of its first measured session. */
static int to_groups(const struct rpt_history_record *h, struct rpt_results *r)
{
    for (int i = 0; i < r->n_sessions && h->n_tags; i++) {
        struct rpt_session *s = &r->sessions[i];
        if (s->warmup) continue;
        if (!(s->groups = calloc((size_t)h->n_tags, sizeof *s->groups))) return LG_ENOMEM;
        for (int k = 0; k < h->n_tags; k++) {
            lg_strlcpy(s->groups[k].tag, h->tags[k].tag, sizeof s->groups[k].tag);
            lg_strlcpy(s->groups[k].space, h->tags[k].space, sizeof s->groups[k].space);
            s->groups[k].bytes = h->tags[k].bytes;
            s->groups[k].count = 1;
        }
        s->n_groups = h->n_tags;
        break;
    }
    return LG_OK;
}

int rpt_history_to_results(const struct rpt_history_record *h, struct rpt_results **out)
{
    struct rpt_results *r = calloc(1, sizeof *r);
    bool seen[RPT_NCHANNELS] = {false};
    *out = NULL;
    if (r) r->sessions = calloc((size_t)h->n_sessions + 1, sizeof *r->sessions);
    if (!r || !r->sessions) goto nomem;
    struct rpt_run *run = &r->run;
    lg_strlcpy(run->schema, RPT_SCHEMA, sizeof run->schema);
    copy_run_strings(run, h, false);
    run->cpus = h->cpus;
    run->mem_bytes = h->mem_bytes;
    run->steps = h->steps;
    run->required = h->required;
    for (int c = 0; c < RPT_NCHANNELS; c++)
        for (int i = 0; i < h->n_sessions && !seen[c]; i++) seen[c] = h->series[c][i] != RPT_NONE;
    for (int i = 0; i < h->n_sessions; i++, r->n_sessions++) {
        if (to_session(h, i, seen, &r->sessions[i]) != LG_OK) goto nomem;
        run->sessions += h->kinds[i] == 'm';
    }
    if (to_groups(h, r) != LG_OK) goto nomem;
    r->has_verdict = true;
    r->verdict.status = h->status;
    r->verdict.exit_code = h->exit_code;
    r->verdict.required = h->required;
    lg_strlcpy(r->verdict.summary, h->summary, sizeof r->verdict.summary);
    *out = r;
    return LG_OK;
nomem:
    rpt_results_free(r);
    return lg_fail(LG_ENOMEM, "out of memory reading a history record as results");
}
