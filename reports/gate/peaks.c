/* peaks.c — peak budgets (gate.h): `--peak-budget [device:]CLASS=SIZE` parsed, and judged over
 * every session of a run on the per-class peaks the session recorded (results 1.5 "peaks"),
 * or on its total peak tagged bytes for "total". */
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "rpt_text.h"

int rpt_peak_budget_parse(const char *spec, struct rpt_peak_budget *out)
{
    char buf[128];
    memset(out, 0, sizeof *out);
    if (lg_strlcpy(buf, spec, sizeof buf))
        return lg_fail(LG_EINVAL, "--peak-budget: '%.40s...' is too long", spec);
    char *cls = buf, *eq = strchr(buf, '=');
    if (!eq || eq == buf)
        return lg_fail(LG_EINVAL,
                       "--peak-budget: '%s' is not [device:]CLASS=SIZE (e.g. act=900MiB, "
                       "total=2GiB)",
                       spec);
    *eq = '\0';
    lg_strlcpy(out->space, "host", sizeof out->space);
    if (!strncmp(cls, "device:", 7)) {
        lg_strlcpy(out->space, "device", sizeof out->space);
        cls += 7;
    } else if (!strncmp(cls, "host:", 5)) {
        cls += 5;
    }
    if (!*cls || strchr(cls, '/') || strchr(cls, ':'))
        return lg_fail(LG_EINVAL,
                       "--peak-budget: '%s' is not a tag class (the part of a tag before its '/', "
                       "e.g. act) or total",
                       cls);
    if (lg_strlcpy(out->cls, cls, sizeof out->cls))
        return lg_fail(LG_EINVAL, "--peak-budget: class '%.40s' is too long", cls);
    size_t bytes;
    if (lg_parse_size(eq + 1, &bytes) != LG_OK)
        return lg_fail_ctx(LG_EINVAL, "--peak-budget %s: ", spec);
    out->limit = (int64_t)bytes;
    return LG_OK;
}

/* The session's peak for the budget; false when it did not measure it. *seen: the class had
 * tagged bytes in the session. */
static bool session_peak(const struct rpt_session *s, const struct rpt_peak_budget *b,
                         int64_t *peak, bool *seen)
{
    bool host = !strcmp(b->space, "host");
    *peak = 0;
    *seen = false;
    if (!strcmp(b->cls, "total")) {
        *peak = host ? s->peak_tagged_host : s->peak_tagged_device;
        *seen = *peak != RPT_NONE;
        return *seen;
    }
    if (!s->peaks_measured) return false;
    for (int i = 0; i < s->n_peaks; i++)
        if (!strcmp(s->peaks[i].cls, b->cls) && !strcmp(s->peaks[i].space, b->space)) {
            *peak = s->peaks[i].bytes;
            *seen = true;
        }
    return true;
}

/* The top tags of the session behind the budget's peak: its class's, or every class's. */
static void top_tags(const struct rpt_session *s, struct rpt_peak_check *pc)
{
    const struct rpt_peak_budget *b = &pc->budget;
    bool total = !strcmp(b->cls, "total");
    pc->n_tags = 0;
    for (int i = 0; i < s->n_peaks; i++) {
        const struct rpt_class_peak *p = &s->peaks[i];
        if (strcmp(p->space, b->space) || (!total && strcmp(p->cls, b->cls))) continue;
        for (int k = 0; k < p->n_tags; k++) { /* insert, highest first, keep RPT_PEAK_TAGS */
            int at = pc->n_tags;
            while (at > 0 && pc->tags[at - 1].bytes < p->tags[k].bytes) at--;
            if (at >= RPT_PEAK_TAGS) continue;
            int last = LG_MIN(pc->n_tags, RPT_PEAK_TAGS - 1);
            memmove(&pc->tags[at + 1], &pc->tags[at], sizeof pc->tags[0] * (size_t)(last - at));
            pc->tags[at] = p->tags[k];
            pc->n_tags = LG_MIN(pc->n_tags + 1, RPT_PEAK_TAGS);
        }
    }
}

/* "act/enc.attn 300.00 MiB, act/dec 200.00 MiB" into buf. */
static void tags_text(const struct rpt_peak_check *pc, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int k = 0; k < pc->n_tags; k++) {
        char b1[32];
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, "%s%s %s", k ? ", " : "", pc->tags[k].tag,
                 lg_fmt_bytes(b1, sizeof b1, (double)pc->tags[k].bytes));
    }
}

static void judge_one(struct rpt_peak_check *pc, const struct rpt_results *r)
{
    const struct rpt_peak_budget *b = &pc->budget;
    bool seen_any = false;
    pc->peak = RPT_NONE;
    pc->session = -1;
    if (!strcmp(b->space, "device") && !rpt_run_had_device(&r->run)) {
        pc->status = RPT_INCONCLUSIVE;
        snprintf(pc->why, sizeof pc->why, "device %s peak not measured: no device in this run",
                 b->cls);
        return;
    }
    for (int i = 0; i < r->n_sessions; i++) {
        int64_t v;
        bool seen;
        if (!session_peak(&r->sessions[i], b, &v, &seen)) continue;
        pc->measured++;
        seen_any |= seen;
        pc->over += v > b->limit;
        if (pc->peak == RPT_NONE || v > pc->peak) {
            pc->peak = v;
            pc->session = r->sessions[i].index;
            top_tags(&r->sessions[i], pc);
        }
    }
    char lim[32], pk[32], tags[300];
    lg_fmt_bytes(lim, sizeof lim, (double)b->limit);
    tags_text(pc, tags, sizeof tags);
    if (pc->measured == 0 || !seen_any) {
        pc->status = RPT_INCONCLUSIVE;
        snprintf(pc->why, sizeof pc->why, "%s %s peak not measured: %s", b->space, b->cls,
                 pc->measured == 0 ? "no session recorded per-class peaks (exec records the total "
                                     "only: use total=)"
                                   : "no tag of this class in any session (a typo?)");
        return;
    }
    lg_fmt_bytes(pk, sizeof pk, (double)pc->peak);
    pc->status = pc->over ? RPT_LEAK : RPT_PASS;
    snprintf(pc->why, sizeof pc->why, "%s %s peaked at %s %s %s in session %d%s%s%s; %d of %d %s",
             b->space, b->cls, pk, pc->over ? ">" : "<=", lim, pc->session, tags[0] ? " (" : "",
             tags, tags[0] ? ")" : "", pc->over, pc->measured,
             pc->over ? "sessions over the budget" : "sessions over");
}

void rpt_gate_peaks(struct rpt_gate *g, const struct rpt_peak_budget *b, int n,
                    const struct rpt_results *r)
{
    g->n_peaks = 0;
    for (int i = 0; i < n && i < RPT_MAX_PEAK_BUDGETS; i++) {
        struct rpt_peak_check *pc = &g->peaks[g->n_peaks++];
        memset(pc, 0, sizeof *pc);
        pc->budget = b[i];
        judge_one(pc, r);
    }
}
