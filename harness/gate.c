/* gate.c — the gate across commits in `run`, `exec` and `soak` (reports/gate/include/gate.h,
 * history.h): the options, the suppression rules applied to every session before the series sees
 * it, each session's per-class peaks taken from the tracker, and at the end the peak budgets, the
 * baseline comparison and the history record, folded into the run's one verdict. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "history.h"
#include "hx_impl.h"

/* ---- options ------------------------------------------------------------------------------ */

int hx_parse_gate(struct hx_options *o, int argc, char **argv, int i)
{
    struct hx_gate_options *g = &o->gate;
    const struct {
        const char *flag;
        char *dst;
        size_t size;
    } paths[] = {
        {"--history", g->history, sizeof g->history},
        {"--baseline", g->baseline, sizeof g->baseline},
        {"--workload", g->workload, sizeof g->workload},
        {"--commit", g->commit, sizeof g->commit},
        {"--branch", g->branch, sizeof g->branch},
        {"--suppressions", g->rules.file, sizeof g->rules.file},
    };
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    bool peak = !strcmp(a, "--peak-budget");
    size_t k = 0;
    while (k < LG_ARRAY_LEN(paths) && strcmp(a, paths[k].flag)) k++;
    if (k == LG_ARRAY_LEN(paths) && !peak) return 0;
    int rc = !v ? lg_fail(LG_EINVAL, "%s needs a value", a) : LG_OK;
    if (rc == LG_OK && !peak) {
        rc = hx_copy_path(a, paths[k].dst, paths[k].size, v);
        if (rc == LG_OK && !strcmp(a, "--suppressions")) g->have_rules = true;
    } else if (rc == LG_OK && g->n_peak == RPT_MAX_PEAK_BUDGETS) {
        rc = lg_fail(LG_EINVAL, "--peak-budget: at most %d of them", RPT_MAX_PEAK_BUDGETS);
    } else if (rc == LG_OK) {
        rc = rpt_peak_budget_parse(v, &g->peak[g->n_peak]);
        g->n_peak += rc == LG_OK;
    }
    return rc == LG_OK ? 2 : -1;
}

void hx_gate_usage(FILE *f)
{
    fputs(
        "\nthe gate across commits (docs/ci.md):\n"
        "  --history FILE      append this run's record (leakgate.history/1) to FILE\n"
        "  --baseline B        compare with B by compare's rules, in the same verdict: a results\n"
        "                      file, or auto: the last passing record of this workload in\n"
        "                      --history (none yet: the first run of a history stands alone)\n"
        "  --workload NAME     the workload a record belongs to (default: from the run)\n"
        "  --commit C          the commit (default: $LEAKGATE_COMMIT, $GITHUB_SHA, git)\n"
        "  --branch B          the branch (default: $LEAKGATE_BRANCH, $GITHUB_HEAD_REF, git)\n"
        "  --suppressions FILE known leaks by rule (tag or frame glob, allow=, expires=,\n"
        "                      reason=): suppressed, listed, never hidden\n"
        "  --peak-budget [device:]CLASS=SIZE  fail a session whose peak tagged bytes of a tag\n"
        "                      class (act, varmap, ...; total: every tag) exceed SIZE\n",
        f);
}

/* Whether the run can append to the history when it ends, tried before its sessions: an
 * existing history must read and open for appending; a new one must be creatable (made and
 * removed again here: access() says yes to root where the file system says no, as in /proc). */
static int check_history(const char *path)
{
    if (access(path, F_OK) == 0) {
        struct rpt_history *h = NULL;
        int rc = rpt_history_load(&h, path);
        rpt_history_free(h);
        if (rc != LG_OK) return lg_fail_ctx(rc, "--history: ");
        int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0)
            return lg_fail(LG_EIO, "--history %s: cannot append to it: %s", path, strerror(errno));
        close(fd);
        return LG_OK;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return lg_fail(LG_EIO, "--history %s: cannot create it: %s", path, strerror(errno));
    close(fd);
    unlink(path);
    return LG_OK;
}

int hx_check_gate(struct hx_options *o)
{
    struct hx_gate_options *g = &o->gate;
    int rc = LG_OK;
    if (g->have_rules) {
        char file[sizeof g->rules.file];
        lg_strlcpy(file, g->rules.file, sizeof file);
        rc = rpt_suppressions_load(&g->rules, file, NULL);
    }
    if (rc == LG_OK && !strcmp(g->baseline, "auto") && !g->history[0])
        rc = lg_fail(LG_EINVAL, "--baseline auto needs --history FILE: the records it picks the "
                                "baseline from");
    if (rc == LG_OK && g->baseline[0] && strcmp(g->baseline, "auto") != 0) {
        struct rpt_results *b = NULL;
        rc = rpt_results_load(&b, g->baseline);
        if (rc != LG_OK) lg_fail_ctx(rc, "--baseline: ");
        rpt_results_free(b);
    }
    if (rc == LG_OK && g->history[0]) rc = check_history(g->history);
    /* exec learns whether its program has a device only as it runs; the others know now */
    for (int k = 0; rc == LG_OK && k < g->n_peak; k++)
        if (!strcmp(g->peak[k].space, "device") && o->device != TN_CUDA &&
            strcmp(o->command, "exec") != 0)
            rc = lg_fail(LG_EINVAL, "--peak-budget device:%s: a device peak needs --device cuda",
                         g->peak[k].cls);
    return rc;
}

/* ---- per session -------------------------------------------------------------------------- */

/* What jemalloc counts for count tracked blocks of bytes in all: each block's size class (the
 * blocks of a leak group are taken as alike, which a group of one always is). */
static int64_t usable(int64_t bytes, int64_t count)
{
    int64_t each = bytes / count, rest = bytes - each * count;
    return (int64_t)trk_usable_size((size_t)each) * (count - rest) +
           (int64_t)trk_usable_size((size_t)each + 1) * rest;
}

void hx_gate_session(const struct hx_options *o, int64_t since[2], struct rpt_session *s)
{
    if (!o->gate.have_rules) return;
    if (rpt_suppress_session(&o->gate.rules, s, since, usable) != LG_OK)
        fprintf(stderr, "leakgate: session %d: %s: nothing suppressed\n", s->index, lg_errmsg());
}

/* The class's top tags by their own peak, highest first, into p. */
static void class_tags(struct rpt_class_peak *p, const struct trk_tag_stat *st, size_t n,
                       enum trk_space space)
{
    char cls[LG_MAX_CLASS];
    for (size_t i = 0; i < n; i++) {
        if (st[i].space != space || st[i].peak_bytes <= 0) continue;
        lg_tag_class(st[i].tag, cls, sizeof cls);
        if (strcmp(cls, p->cls) != 0) continue;
        int at = p->n_tags;
        while (at > 0 && p->tags[at - 1].bytes < st[i].peak_bytes) at--;
        if (at >= RPT_PEAK_TAGS) continue;
        int last = LG_MIN(p->n_tags, RPT_PEAK_TAGS - 1);
        memmove(&p->tags[at + 1], &p->tags[at], sizeof p->tags[0] * (size_t)(last - at));
        lg_strlcpy(p->tags[at].tag, st[i].tag, sizeof p->tags[at].tag);
        p->tags[at].bytes = st[i].peak_bytes;
        p->n_tags = LG_MIN(p->n_tags + 1, RPT_PEAK_TAGS);
    }
}

int hx_gate_peaks(struct trk_tracker *trk, struct rpt_session *s)
{
    struct trk_class_stat cs[TRK_MAX_CLASS_STATS];
    struct trk_tag_stat *st = NULL;
    size_t nc = trk_class_stats(trk, cs, LG_ARRAY_LEN(cs));
    size_t nt = trk_tag_stats(trk, &st);
    s->peaks = calloc(nc + 1, sizeof *s->peaks);
    if (!s->peaks || !st) {
        free(st);
        return lg_fail(LG_ENOMEM, "out of memory recording the session's peaks");
    }
    for (size_t i = 0; i < nc; i++) {
        if (cs[i].peak_bytes <= 0) continue;
        struct rpt_class_peak *p = &s->peaks[s->n_peaks++];
        lg_strlcpy(p->cls, cs[i].cls, sizeof p->cls);
        lg_strlcpy(p->space, cs[i].space == TRK_HOST ? "host" : "device", sizeof p->space);
        p->bytes = cs[i].peak_bytes;
        class_tags(p, st, nt, cs[i].space);
    }
    s->peaks_measured = true;
    free(st);
    return LG_OK;
}

void hx_gate_compact(const struct hx_options *o, struct rpt_session *s)
{
    for (int i = 0; i < s->n_peaks; i++) {
        struct rpt_class_peak *p = &s->peaks[i];
        bool over = false;
        for (int k = 0; k < o->gate.n_peak; k++) {
            const struct rpt_peak_budget *b = &o->gate.peak[k];
            bool total = !strcmp(b->cls, "total");
            int64_t v =
                total ? (!strcmp(b->space, "host") ? s->peak_tagged_host : s->peak_tagged_device)
                      : p->bytes;
            over |=
                !strcmp(b->space, p->space) && (total || !strcmp(b->cls, p->cls)) && v > b->limit;
        }
        if (!over) p->n_tags = 0;
    }
}

/* ---- at the end --------------------------------------------------------------------------- */

/* The first line of `git ARGS` in the current directory, or "" (not a checkout, no git). */
static void from_git(const char *args, char *buf, size_t size)
{
    char cmd[128];
    buf[0] = '\0';
    snprintf(cmd, sizeof cmd, "git %s 2>/dev/null", args);
    FILE *p = popen(cmd, "re");
    if (!p) return;
    if (fgets(buf, (int)size, p)) buf[strcspn(buf, "\r\n")] = '\0';
    if (pclose(p) != 0) buf[0] = '\0';
}

/* --commit and --branch, else CI's variables, else git. */
static void identify(const struct hx_gate_options *g, char *commit, size_t cs, char *branch,
                     size_t bs)
{
    static const char *const commits[] = {"LEAKGATE_COMMIT", "GITHUB_SHA", "CI_COMMIT_SHA", NULL};
    static const char *const branches[] = {"LEAKGATE_BRANCH", "GITHUB_HEAD_REF", "GITHUB_REF_NAME",
                                           "CI_COMMIT_REF_NAME", NULL};
    lg_strlcpy(commit, g->commit, cs);
    lg_strlcpy(branch, g->branch, bs);
    for (const char *const *e = commits; !commit[0] && *e; e++)
        lg_strlcpy(commit, getenv(*e) ? getenv(*e) : "", cs);
    for (const char *const *e = branches; !branch[0] && *e; e++)
        lg_strlcpy(branch, getenv(*e) ? getenv(*e) : "", bs);
    if (!commit[0]) from_git("rev-parse HEAD", commit, cs);
    if (!branch[0]) from_git("rev-parse --abbrev-ref HEAD", branch, bs);
}

/* The baseline: a results file, or the history's last passing record of this workload. */
static void baseline(const struct hx_options *o, struct rpt_gate *g, const struct rpt_results *head)
{
    const struct hx_gate_options *go = &o->gate;
    struct rpt_results *base = NULL;
    struct rpt_history *h = NULL;
    char source[600], wl[RPT_WORKLOAD_MAX];
    const char *commit = "";
    bool none_passed = false;
    int rc = LG_OK;
    rpt_workload_key(&head->run, go->workload, wl, sizeof wl);
    if (strcmp(go->baseline, "auto") != 0) {
        lg_strlcpy(source, go->baseline, sizeof source);
        rc = rpt_results_load(&base, go->baseline);
    } else {
        snprintf(source, sizeof source, "%s (auto: the last passing record of \"%s\")", go->history,
                 wl);
        if (access(go->history, F_OK) == 0) rc = rpt_history_load(&h, go->history);
        const struct rpt_history_record *rec = rc == LG_OK ? rpt_history_baseline(h, wl) : NULL;
        none_passed = !rec && rpt_history_has(h, wl);
        if (rec) {
            commit = rec->commit;
            rc = rpt_history_to_results(rec, &base);
        }
    }
    rpt_gate_baseline(g, base, source, commit, head, stdout);
    if (rc != LG_OK || none_passed) { /* no evidence to compare with: not a first run either */
        g->baseline.result = RPT_COMPARE_INCONCLUSIVE;
        snprintf(g->baseline.why, sizeof g->baseline.why, "no baseline: %s",
                 rc != LG_OK ? lg_errmsg()
                             : "the history has records of this workload, none passed");
    }
    rpt_results_free(base);
    rpt_history_free(h);
}

static int append_history(const struct hx_options *o, const struct rpt_results *head)
{
    char commit[64], branch[128];
    struct rpt_history_record rec;
    identify(&o->gate, commit, sizeof commit, branch, sizeof branch);
    struct rpt_history_meta meta = {commit, branch, o->gate.workload[0] ? o->gate.workload : NULL};
    int rc = rpt_history_record_from(&rec, head, &meta);
    if (rc == LG_OK) rc = rpt_history_append(o->gate.history, &rec);
    if (rc == LG_OK && !o->quiet)
        fprintf(stderr, "leakgate: appended to %s (commit %.12s, workload \"%s\")\n",
                o->gate.history, commit[0] ? commit : "unknown", rec.workload);
    rpt_history_record_fini(&rec);
    return rc;
}

static bool any_gate(const struct hx_gate_options *g)
{
    return g->history[0] || g->baseline[0] || g->have_rules || g->n_peak;
}

int hx_gate_verdict(const struct hx_options *o, struct rpt_writer *w, const char *path,
                    struct rpt_verdict *v)
{
    if (!any_gate(&o->gate)) return rpt_writer_verdict(w, v);
    struct rpt_results *head = NULL;
    struct rpt_gate *g = calloc(1, sizeof *g);
    int rc = g ? rpt_results_load(&head, path) : lg_fail(LG_ENOMEM, "out of memory for the gate");
    bool judged = rc == LG_OK;
    if (judged) {
        head->has_verdict = true;
        head->verdict = *v; /* the run's own, so far */
        rpt_gate_init(g, o->gate.have_rules ? &o->gate.rules : NULL, v);
        rpt_gate_peaks(g, o->gate.peak, o->gate.n_peak, head);
        if (o->gate.baseline[0] && v->status != RPT_ERROR) baseline(o, g, head);
        rpt_gate_conclude(g, head, v);
        rpt_gate_print(g, head, stdout);
    } else {
        fprintf(stderr, "leakgate: the gate could not read the results: %s\n", lg_errmsg());
    }
    int wrc = rpt_writer_verdict_gate(w, v, judged ? g : NULL);
    if (judged && o->gate.history[0] && v->status != RPT_ERROR) {
        head->verdict = *v; /* the record keeps the final verdict */
        if (append_history(o, head) != LG_OK) {
            fprintf(stderr, "leakgate: history: %s\n", lg_errmsg());
            if (v->exit_code == 0) v->exit_code = 2;
        }
    }
    rpt_results_free(head);
    free(g);
    return rc != LG_OK ? rc : wrc;
}
