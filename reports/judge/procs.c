/* procs.c — the judgment of CMD's process tree under exec (results 1.8): every descendant seen
 * at a session's end, its RSS series, and which of them leak.
 *
 * A descendant is a pid with its command (a pid reused by another program is another process).
 * Its baseline is its reading at the last warm-up session's end when it was alive then, else its
 * first reading; each later measured session's reading less the baseline is one point of its
 * series, judged by rpt_judge_statistical with the rss channel's rules and budget — the rules
 * CMD's own rss channel is judged by. A child whose series leaks is a leak of the run. One seen
 * at a single session's end, or never (it began and ended within a session: the agent said it
 * began, harness/exec/exec_births.c), is counted, not judged; one gone before the last session's
 * end is named with its last reading; one without the agent mapped (a static program, LD_PRELOAD
 * removed) is named as seen by its RSS only. A child's
 * inconclusive series does not make the run inconclusive: its why says so (docs/design.md,
 * "The process tree").
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpt_text.h"
#include "verdict.h"

#define PROCS_MAX 4096 /* descendants followed over a run; more are counted as dropped */
#define NAME_CMD  48   /* a command shown in a why is cut to this many bytes */

struct rpt_proc_series {
    int pid;
    char cmd[RPT_PROC_CMD];
    bool agent;      /* the agent was mapped at every reading */
    bool unreadable; /* some reading had no RSS */
    int first;       /* the session of its baseline reading */
    int last;        /* the session of its last reading */
    int64_t base, last_rss;
    int n, cap;
    double *y; /* owned: measured readings after the baseline, less it */
};

void rpt_procs_fini(struct rpt_procs *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(p->v[i].y);
    free(p->v);
    memset(p, 0, sizeof *p);
}

static struct rpt_proc_series *find(struct rpt_procs *p, const struct rpt_proc *q)
{
    for (int i = p->n - 1; i >= 0; i--)
        if (p->v[i].pid == q->pid && !strcmp(p->v[i].cmd, q->cmd)) return &p->v[i];
    return NULL;
}

/* A new series for q, its baseline this reading; NULL (counted as dropped) when full. */
static struct rpt_proc_series *start(struct rpt_procs *p, const struct rpt_proc *q, int index)
{
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        struct rpt_proc_series *v =
            p->n < PROCS_MAX ? realloc(p->v, (size_t)cap * sizeof *v) : NULL;
        if (!v) return NULL;
        p->v = v;
        p->cap = cap;
    }
    struct rpt_proc_series *ps = &p->v[p->n++];
    memset(ps, 0, sizeof *ps);
    ps->pid = q->pid;
    lg_strlcpy(ps->cmd, q->cmd, sizeof ps->cmd);
    ps->agent = true;
    ps->first = index;
    ps->base = q->rss;
    return ps;
}

/* Appends a measured reading to ps; LG_ENOMEM leaves it as it was. */
static int push(struct rpt_proc_series *ps, double y)
{
    if (ps->n == ps->cap) {
        int cap = ps->cap ? ps->cap * 2 : 16;
        double *v = realloc(ps->y, (size_t)cap * sizeof *v);
        if (!v) return lg_fail(LG_ENOMEM, "out of memory: a child's RSS series");
        ps->y = v;
        ps->cap = cap;
    }
    ps->y[ps->n++] = y;
    return LG_OK;
}

/* LG_ENOMEM when a reading could not be kept: counted in p->dropped, which the verdict names. */
int rpt_procs_add(struct rpt_procs *p, const struct rpt_session *s)
{
    if (!s->procs_walked) return LG_OK;
    int rc = LG_OK;
    p->walked = true;
    p->last = s->index;
    p->within += s->procs_within;
    for (int i = 0; i < s->n_procs; i++) {
        const struct rpt_proc *q = &s->procs[i];
        struct rpt_proc_series *ps = find(p, q);
        if (!ps || (s->warmup && ps->n == 0)) { /* a warm-up reading is a new baseline */
            if (!ps && !(ps = start(p, q, s->index))) {
                p->dropped++;
                rc = lg_fail(LG_ENOMEM, "out of memory: %d children followed", p->n);
                continue;
            }
            ps->first = s->index;
            ps->base = q->rss;
        } else if (q->rss == RPT_NONE || ps->base == RPT_NONE) {
            ps->unreadable = true;
            if (ps->base == RPT_NONE) ps->base = q->rss; /* the first reading that can be read */
        } else if (push(ps, (double)(q->rss - ps->base)) != LG_OK) {
            p->dropped++;
            rc = LG_ENOMEM;
        }
        ps->agent &= q->agent;
        ps->unreadable |= q->rss == RPT_NONE;
        ps->last = s->index;
        if (q->rss != RPT_NONE) ps->last_rss = q->rss;
    }
    return rc;
}

/* "pid 12 (python3 worker.py --rank 1)" into buf: each word that is a path by its base name
 * (the results keep the whole command), cut at NAME_CMD bytes. */
static const char *named(char *buf, size_t size, const struct rpt_proc_series *ps)
{
    char cmd[RPT_PROC_CMD];
    size_t k = 0;
    for (const char *w = ps->cmd; *w && k + 1 < sizeof cmd;) {
        size_t len = strcspn(w, " ");
        const char *base = w;
        for (size_t i = 0; i + 1 < len; i++) /* a trailing '/' keeps its word */
            if (w[i] == '/') base = w + i + 1;
        size_t n = (size_t)(w + len - base);
        if (n > sizeof cmd - 1 - k) n = sizeof cmd - 1 - k;
        memcpy(cmd + k, base, n);
        k += n;
        w += len;
        if (*w == ' ' && k + 1 < sizeof cmd) cmd[k++] = *w++;
    }
    cmd[k] = '\0';
    snprintf(buf, size, "pid %d (%.*s%s)", ps->pid, NAME_CMD, cmd, k > NAME_CMD ? "..." : "");
    return buf;
}

/* Appends to buf, cut at its size. */
__attribute__((format(printf, 3, 4))) static void say(char *buf, size_t size, const char *fmt, ...)
{
    size_t l = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    if (l + 1 < size) vsnprintf(buf + l, size - l, fmt, ap);
    va_end(ap);
}

/* Judges one child's series into cv; false when it has none (seen once). */
static bool judge_one(const struct rpt_proc_series *ps, const struct rpt_budget *rss,
                      struct rpt_channel_verdict *cv)
{
    if (ps->n == 0) return false;
    rpt_judge_statistical(RPT_CH_RSS, ps->y, ps->n, rss, cv);
    return true;
}

/* The leaks' sentences, then the counts of the others, into pv. */
static void judge_children(const struct rpt_procs *p, const struct rpt_budget *rss,
                           struct rpt_procs_verdict *pv, char *leaks, size_t lsize, char *others,
                           size_t osize)
{
    char name[96], b1[32];
    for (int i = 0; i < p->n; i++) {
        const struct rpt_proc_series *ps = &p->v[i];
        struct rpt_channel_verdict cv;
        pv->children++;
        named(name, sizeof name, ps);
        if (!judge_one(ps, rss, &cv)) {
            pv->brief++;
        } else {
            pv->judged++;
            if (cv.status == RPT_LEAK) {
                pv->status = RPT_LEAK;
                say(pv->leaking, sizeof pv->leaking, "%schild %s", pv->leaking[0] ? ", " : "",
                    name);
                if (pv->n_leak_pids < (int)LG_ARRAY_LEN(pv->leak_pids))
                    pv->leak_pids[pv->n_leak_pids++] = ps->pid;
                char *more = strstr(cv.why, "; it came in steps"); /* the rule is the reason */
                if (more) *more = '\0';
                say(leaks, lsize,
                    "; LEAK: child %s: its rss over the %d session(s) after session #%d: %s", name,
                    ps->n, ps->first, cv.why);
            } else if (cv.stayed || cv.status != RPT_PASS) {
                say(leaks, lsize, "; child %s rss %s (not a failure of the run): %s", name,
                    rpt_status_name(cv.status), cv.why);
            }
        }
        if (ps->last < p->last) {
            pv->exited++;
            rpt_fmt_value(b1, sizeof b1, RPT_CH_RSS, ps->last_rss, false);
            say(others, osize, "; exited during the run: %s, last seen at session #%d with %s",
                name, ps->last, b1);
        }
        if (!ps->agent)
            say(others, osize,
                "; %s has no leakgate agent (statically linked, or LD_PRELOAD removed): seen by "
                "its RSS only",
                name);
        if (ps->unreadable) say(others, osize, "; %s: its RSS could not always be read", name);
    }
}

void rpt_procs_judge(const struct rpt_procs *p, const struct rpt_budget *rss,
                     struct rpt_procs_verdict *pv)
{
    memset(pv, 0, sizeof *pv);
    if (!p->walked) return;
    pv->counted = true;
    pv->status = RPT_PASS;
    pv->judged = 1; /* CMD, by its channels */
    char leaks[2048] = "", others[2048] = "";
    judge_children(p, rss, pv, leaks, sizeof leaks, others, sizeof others);
    for (int i = 0; i < p->n; i++) pv->unseen += !p->v[i].agent;
    say(pv->why, sizeof pv->why, "judged %d process(es): CMD", pv->judged);
    if (pv->judged > 1)
        say(pv->why, sizeof pv->why, " by its channels and %d child(ren) by RSS", pv->judged - 1);
    if (pv->brief)
        say(pv->why, sizeof pv->why,
            "; %d child(ren) seen at one session's end only: counted, not judged", pv->brief);
    pv->within = p->within;
    if (pv->within)
        say(pv->why, sizeof pv->why,
            "; %d child(ren) began and ended within a session: counted, not judged", pv->within);
    if (!pv->children && !pv->within)
        say(pv->why, sizeof pv->why, "; no child process was alive at a session's end");
    if (p->dropped)
        say(pv->why, sizeof pv->why, "; %d reading(s) of children not followed: out of memory",
            p->dropped);
    say(pv->why, sizeof pv->why, "%s%s", leaks, others);
    if (strlen(pv->why) == sizeof pv->why - 1) memcpy(pv->why + sizeof pv->why - 4, "...", 4);
}
