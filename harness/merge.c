/* merge.c — `leakgate merge DIR... -o OUT`: the shards of one soak plan (`leakgate soak --shard
 * i/n`) combined into one results file and one report. Each shard is judged on its own (by its
 * own trend test, or, for a shard killed before its verdict line, by the same trend test
 * replayed over the sessions it left on disk); the overall verdict is leak when any shard leaks,
 * inconclusive when any shard is (or failed), else pass. The merged sessions are every shard's, in
 * plan order: the warm-ups first (shard by shard), then the measured sessions by plan index. */
#define _GNU_SOURCE
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reports.h"
#include "soak_impl.h"

#define MAX_INPUTS 1000

struct shard {
    char path[700];
    struct rpt_results *r;
    int i, n;
};

struct merge {
    int n_inputs;
    struct shard *in; /* MAX_INPUTS of them */
    char out[600];
    int expect; /* --shards N: the plan's shard count (0: the shards' own) */
    bool reports, quiet;
};

static void merge_usage(FILE *f)
{
    fprintf(
        f,
        "usage: leakgate merge DIR|RESULTS... -o OUT [--shards N] [--no-reports] [--quiet]\n"
        "Combines the shards of one soak plan (leakgate soak --shard i/n) into OUT/results.jsonl\n"
        "and every report artefact, prints each shard's verdict and the overall one: leak when\n"
        "any shard leaks, inconclusive when any is, else pass. Each argument is a results file,\n"
        "a directory holding results.jsonl, a soak --out directory holding shard-*-of-*/, or a\n"
        "quoted glob of these. --shards N: the plan has N shards (as the pods were told), so\n"
        "fewer present is an error, whatever the shards found say. OUT may not be, or be\n"
        "inside, the directory of an input. Exit: 0 pass, 1 leak, 2 usage/input error (not\n"
        "shards of one plan, a shard missing), 3 inconclusive, 4 internal error.\n");
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int add_input(struct merge *m, const char *path)
{
    if (m->n_inputs == MAX_INPUTS)
        return lg_fail(LG_EINVAL, "more than %d results files", MAX_INPUTS);
    if (lg_strlcpy(m->in[m->n_inputs].path, path, sizeof m->in[0].path))
        return lg_fail(LG_EINVAL, "path too long: %.80s...", path);
    m->n_inputs++;
    return LG_OK;
}

/* Adds the results file(s) an argument names (see the usage). */
static int add_argument(struct merge *m, const char *arg, bool from_glob)
{
    char pat[760];
    glob_t g;
    int rc = LG_OK;
    if (!from_glob && strpbrk(arg, "*?[")) {
        if (glob(arg, 0, NULL, &g) != 0) return lg_fail(LG_EINVAL, "'%s' matches nothing", arg);
        for (size_t k = 0; k < g.gl_pathc && rc == LG_OK; k++)
            rc = add_argument(m, g.gl_pathv[k], true);
        globfree(&g);
        return rc;
    }
    if (is_file(arg)) return add_input(m, arg);
    if (!is_dir(arg)) return lg_fail(LG_EIO, "%s: no such results file or directory", arg);
    snprintf(pat, sizeof pat, "%s/results.jsonl", arg);
    if (is_file(pat)) return add_input(m, pat);
    snprintf(pat, sizeof pat, "%s/shard-*-of-*/results.jsonl", arg);
    if (glob(pat, 0, NULL, &g) != 0)
        return lg_fail(LG_EINVAL, "%s: holds neither results.jsonl nor shard-*-of-*/results.jsonl",
                       arg);
    for (size_t k = 0; k < g.gl_pathc && rc == LG_OK; k++) rc = add_input(m, g.gl_pathv[k]);
    globfree(&g);
    return rc;
}

static int parse_shard_field(const struct shard *s, int *i, int *n)
{
    char tail;
    if (sscanf(s->r->run.shard, "%d/%d%c", i, n, &tail) != 2 || *n < 1 || *i < 0 || *i >= *n)
        return lg_fail(LG_EINVAL,
                       "%s: not a soak shard (its shard field is \"%s\"; run shards with "
                       "leakgate soak --shard i/n)",
                       s->path, s->r->run.shard);
    return LG_OK;
}

/* Loads every input and checks that they are the shards of one plan, each once, none missing. */
/* Whether two shards judged by the same budgets: a merged verdict names one set. */
static bool same_budgets(const struct rpt_run *a, const struct rpt_run *b)
{
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        const struct rpt_budget *x = &a->budgets[c], *y = &b->budgets[c];
        const double u[3] = {x->band, x->slope, x->floor}, v[3] = {y->band, y->slope, y->floor};
        for (int k = 0; k < 3; k++)
            if (!(u[k] == v[k] || (isnan(u[k]) && isnan(v[k])))) return false;
    }
    return true;
}

static int load_and_check(struct merge *m)
{
    for (int k = 0; k < m->n_inputs; k++) {
        struct shard *s = &m->in[k];
        if (rpt_results_load(&s->r, s->path) != LG_OK) return lg_errcode();
        if (strcmp(s->r->run.command, "soak") != 0)
            return lg_fail(LG_EINVAL, "%s: written by `leakgate %s`, not by a soak shard", s->path,
                           s->r->run.command);
        if (parse_shard_field(s, &s->i, &s->n) != LG_OK) return lg_errcode();
    }
    const struct shard *f = &m->in[0];
    const struct rpt_run *a = &f->r->run;
    for (int k = 1; k < m->n_inputs; k++) {
        const struct shard *s = &m->in[k];
        const struct rpt_run *b = &s->r->run;
        const char *what = strcmp(a->preset, b->preset)     ? "presets"
                           : strcmp(a->modes, b->modes)     ? "modes"
                           : a->sessions != b->sessions     ? "plan sessions"
                           : a->steps != b->steps           ? "steps"
                           : a->warmup != b->warmup         ? "warm-up"
                           : a->seed != b->seed             ? "seed"
                           : s->n != f->n                   ? "shard count"
                           : a->required != b->required     ? "required channels"
                           : !same_budgets(a, b)            ? "budgets"
                           : strcmp(a->version, b->version) ? "leakgate versions"
                                                            : NULL;
        if (what)
            return lg_fail(
                LG_EINVAL,
                "%s and %s are not shards of one plan: their %s differ (presets %s / %s, modes %s / %s, "
                "sessions %d / %d, shard %s / %s)",
                f->path, s->path, what, a->preset, b->preset, a->modes, b->modes, a->sessions,
                b->sessions, a->shard, b->shard);
    }
    return LG_OK;
}

/* Every shard 0..n-1 present exactly once, n being --shards when given. */
static int check_complete(const struct merge *m)
{
    int n = m->in[0].n;
    if (m->expect && m->expect != n)
        return lg_fail(LG_EINVAL,
                       "--shards %d: the shards given are of a %d-shard plan (%s is shard %s)",
                       m->expect, n, m->in[0].path, m->in[0].r->run.shard);
    char missing[400] = "";
    for (int k = 0; k < m->n_inputs; k++)
        for (int q = k + 1; q < m->n_inputs; q++)
            if (m->in[k].i == m->in[q].i)
                return lg_fail(LG_EINVAL, "shard %d/%d is given twice: %s and %s", m->in[k].i, n,
                               m->in[k].path, m->in[q].path);
    int n_missing = 0;
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (int k = 0; k < m->n_inputs && !found; k++) found = m->in[k].i == i;
        if (found) continue;
        size_t l = strlen(missing);
        if (n_missing++ < 20)
            snprintf(missing + l, sizeof missing - l, "%s%d/%d", l ? ", " : "", i, n);
    }
    if (n_missing)
        return lg_fail(
            LG_EINVAL,
            "%d shard(s) of %d missing: %s%s (a shard's results are OUT/shard-i-of-n/results.jsonl)",
            n_missing, n, missing, n_missing > 20 ? ", ..." : "");
    return LG_OK;
}

/* An absolute path for p, which may not exist yet: its longest existing prefix resolved. */
static int canonical(const char *p, char *out, size_t size)
{
    char buf[PATH_MAX], tail[PATH_MAX] = "";
    if (lg_strlcpy(buf, p, sizeof buf)) return lg_fail(LG_EINVAL, "path too long: %.80s...", p);
    for (;;) {
        char res[PATH_MAX];
        if (realpath(buf[0] ? buf : ".", res)) {
            if (lg_snprintf(out, size, "%s%s%s", res, tail[0] ? "/" : "", tail))
                return lg_fail(LG_EINVAL, "path too long: %.80s...", p);
            return LG_OK;
        }
        char *slash = strrchr(buf, '/');
        const char *last = slash ? slash + 1 : buf;
        char nt[PATH_MAX];
        if (lg_snprintf(nt, sizeof nt, "%s%s%s", last, tail[0] ? "/" : "", tail))
            return lg_fail(LG_EINVAL, "path too long: %.80s...", p);
        memcpy(tail, nt, sizeof tail);
        if (!slash)
            buf[0] = '\0';
        else if (slash == buf)
            buf[1] = '\0';
        else
            *slash = '\0';
    }
}

/* OUT may not be the directory of an input, nor inside one: merging into a shard's directory
 * would overwrite the results being merged. */
static int check_output(const struct merge *m)
{
    char out[PATH_MAX], in[PATH_MAX];
    if (canonical(m->out, out, sizeof out) != LG_OK) return lg_errcode();
    for (int k = 0; k < m->n_inputs; k++) {
        if (canonical(m->in[k].path, in, sizeof in) != LG_OK) return lg_errcode();
        char *slash = strrchr(in, '/');
        if (slash && slash != in) *slash = '\0';
        size_t l = strlen(in);
        if (!strcmp(out, in) || (!strncmp(out, in, l) && out[l] == '/'))
            return lg_fail(
                LG_EINVAL,
                "-o %s is %sthe directory of the input %s: merging there would overwrite what "
                "is merged; choose another output directory",
                m->out, strcmp(out, in) ? "inside " : "", m->in[k].path);
    }
    return LG_OK;
}

/* ---- the merged verdict ---------------------------------------------------------------------- */

static int rank(enum rpt_status s)
{
    switch (s) {
    case RPT_LEAK: return 5;
    case RPT_ERROR:
    case RPT_INCONCLUSIVE: return 4;
    case RPT_SATURATING: return 3;
    case RPT_PASS: return 2;
    default: return 1;
    }
}

static const struct rpt_channel_verdict *channel_of(const struct rpt_verdict *v, int c)
{
    for (int k = 0; k < v->n_channels; k++)
        if ((int)v->channels[k].channel == c) return &v->channels[k];
    return NULL;
}

/* A channel of the merged verdict: the worst shard's, its statistical figures per plan session
 * (a shard's sessions are n plan sessions apart), its why naming the shard. */
static void merge_channel(const struct merge *m, int c, struct rpt_channel_verdict *out)
{
    const struct shard *best = NULL;
    const struct rpt_channel_verdict *bv = NULL;
    for (int k = 0; k < m->n_inputs; k++) {
        const struct rpt_channel_verdict *cv = channel_of(&m->in[k].r->verdict, c);
        if (!cv) continue;
        bool worse = !bv || rank(cv->status) > rank(bv->status) ||
                     (rank(cv->status) == rank(bv->status) && isfinite(cv->figure) &&
                      (!isfinite(bv->figure) || cv->figure > bv->figure));
        if (worse) {
            best = &m->in[k];
            bv = cv;
        }
    }
    memset(out, 0, sizeof *out);
    out->channel = (enum rpt_channel)c;
    if (!bv) {
        out->status = RPT_UNAVAILABLE;
        out->figure = out->slope = out->slope_lo = out->slope_hi = out->shift = NAN;
        snprintf(out->why, sizeof out->why, "no shard judged this channel");
        return;
    }
    *out = *bv;
    out->channel = (enum rpt_channel)c;
    int n = best->n;
    if (!rpt_channel_exact((enum rpt_channel)c) && n > 1 && bv->status != RPT_UNAVAILABLE &&
        isfinite(bv->slope)) {
        out->figure /= n;
        out->budget /= n;
        out->slope /= n;
        out->slope_lo /= n;
        out->slope_hi /= n;
        snprintf(out->why, sizeof out->why,
                 "shard %d/%d (figures per plan session, its own / %d): %s", best->i, n, n,
                 bv->why);
    } else {
        snprintf(out->why, sizeof out->why, "shard %d/%d: %s", best->i, n, bv->why);
    }
}

static void merge_verdict(const struct merge *m, struct rpt_verdict *v)
{
    memset(v, 0, sizeof *v);
    char leaking[160] = "", undecided[160] = "", chans[200] = "";
    int n_leak = 0, n_undecided = 0;
    for (int k = 0; k < m->n_inputs; k++) {
        const struct shard *s = &m->in[k];
        const struct rpt_verdict *sv = &s->r->verdict;
        v->sessions_measured += sv->sessions_measured;
        v->partial |= sv->partial;
        char *list = sv->status == RPT_LEAK ? leaking : undecided;
        int *count = sv->status == RPT_LEAK ? &n_leak : &n_undecided;
        if (sv->status != RPT_LEAK && rank(sv->status) != 4) continue;
        size_t l = strlen(list);
        if ((*count)++ < 12) snprintf(list + l, 160 - l, "%s%s", l ? ", " : "", s->r->run.shard);
    }
    v->n_channels = RPT_NCHANNELS;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        merge_channel(m, c, &v->channels[c]);
        if (v->channels[c].status != RPT_LEAK) continue;
        size_t l = strlen(chans);
        snprintf(chans + l, sizeof chans - l, "%s%s", l ? ", " : "",
                 rpt_channel_name((enum rpt_channel)c));
    }
    int n = m->in[0].n;
    v->required =
        m->in[0].r->verdict.required ? m->in[0].r->verdict.required : m->in[0].r->run.required;
    v->sessions_planned = m->in[0].r->run.sessions;
    for (int c = 0; c < RPT_NCHANNELS; c++)
        v->channels[c].required = (v->required & RPT_BIT(c)) != 0;
    if (n_leak) {
        rpt_verdict_say(v, RPT_LEAK,
                        "LEAK: shard%s %s leaked (%s); %d shard(s), %d measured session(s)",
                        n_leak > 1 ? "s" : "", leaking, chans, n, v->sessions_measured);
    } else if (n_undecided) {
        rpt_verdict_say(
            v, RPT_INCONCLUSIVE,
            "INCONCLUSIVE: shard%s %s could not decide (or failed); %d shard(s), %d measured session(s)",
            n_undecided > 1 ? "s" : "", undecided, n, v->sessions_measured);
    } else if (v->sessions_measured == 0) {
        rpt_verdict_say(v, RPT_INCONCLUSIVE,
                        "INCONCLUSIVE: no shard measured a session; %d shard(s)", n);
    } else {
        rpt_verdict_say(v, RPT_PASS,
                        "PASS: every shard returned to baseline; %d shard(s), %d measured "
                        "session(s)",
                        n, v->sessions_measured);
    }
    if (v->partial && v->status == RPT_PASS)
        v->status = RPT_INCONCLUSIVE; /* a cut-short shard is not a pass */
    v->exit_code = rpt_exit_code(v->status);
    if (v->partial) {
        size_t l = strlen(v->summary);
        snprintf(v->summary + l, sizeof v->summary - l, " (partial: a shard was cut short)");
    }
}

/* ---- the merged results ---------------------------------------------------------------------- */

struct ordered {
    const struct rpt_session *s;
    int shard;
};

static int cmp_ordered(const void *pa, const void *pb)
{
    const struct ordered *a = pa, *b = pb;
    if (a->s->warmup != b->s->warmup) return a->s->warmup ? -1 : 1; /* warm-ups first */
    if (a->s->warmup && a->shard != b->shard) return a->shard - b->shard;
    if (a->s->index != b->s->index) return a->s->index < b->s->index ? -1 : 1;
    return a->shard - b->shard;
}

static void merged_run_line(const struct merge *m, struct rpt_run *run)
{
    *run = m->in[0].r->run;
    run->shard[0] = '\0';
    run->inject[0] = '\0';
    for (int k = 0; k < m->n_inputs; k++) {
        const struct rpt_run *r = &m->in[k].r->run;
        if (strcmp(r->started, run->started) < 0)
            lg_strlcpy(run->started, r->started, sizeof run->started);
        if (!r->inject[0] || strstr(run->inject, r->inject)) continue;
        size_t l = strlen(run->inject);
        snprintf(run->inject + l, sizeof run->inject - l, "%s%s", l ? "," : "", r->inject);
    }
}

/* Writes OUT/results.jsonl: the merged run line, every session in plan order, the verdict. */
static int write_merged(const struct merge *m, const struct rpt_verdict *v, const char *path)
{
    int total = 0, rc = LG_OK;
    for (int k = 0; k < m->n_inputs; k++) total += m->in[k].r->n_sessions;
    struct ordered *all = calloc(total ? (size_t)total : 1, sizeof *all);
    struct rpt_writer *w = NULL;
    if (!all) return lg_fail(LG_ENOMEM, "out of memory merging %d sessions", total);
    int q = 0;
    for (int k = 0; k < m->n_inputs; k++)
        for (int i = 0; i < m->in[k].r->n_sessions; i++)
            all[q++] = (struct ordered){&m->in[k].r->sessions[i], m->in[k].i};
    qsort(all, (size_t)total, sizeof *all, cmp_ordered);
    for (int i = 1; i < total; i++)
        if (!all[i].s->warmup && all[i].s->index == all[i - 1].s->index && !all[i - 1].s->warmup) {
            rc = lg_fail(
                LG_EINVAL,
                "measured session %d is in shard %d and in shard %d: not shards of one plan",
                all[i].s->index, all[i - 1].shard, all[i].shard);
            goto cleanup;
        }
    struct rpt_run run;
    merged_run_line(m, &run);
    if ((rc = lg_mkdirs(m->out)) != LG_OK) goto cleanup;
    if ((rc = rpt_writer_open(&w, path, &run)) != LG_OK) goto cleanup;
    for (int i = 0; i < total && rc == LG_OK; i++) rc = rpt_writer_session(w, all[i].s);
    if (rc == LG_OK) rc = rpt_writer_verdict(w, v);
cleanup:
    rpt_writer_close(w);
    free(all);
    return rc;
}

static void print_shards(const struct merge *m, FILE *f)
{
    fprintf(f, "%-9s %-13s %9s  %s\n", "shard", "verdict", "sessions", "summary");
    for (int i = 0; i < m->in[0].n; i++)
        for (int k = 0; k < m->n_inputs; k++) {
            const struct shard *s = &m->in[k];
            if (s->i != i) continue;
            fprintf(f, "%-9s %-13s %9d  %s\n", s->r->run.shard,
                    rpt_status_name(s->r->verdict.status), s->r->verdict.sessions_measured,
                    s->r->verdict.summary);
        }
}

/* ---- the command ----------------------------------------------------------------------------- */

static int parse_args(struct merge *m, int argc, char **argv, bool *help)
{
    *help = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = true;
            return LG_OK;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
            if (i + 1 >= argc) return lg_fail(LG_EINVAL, "%s needs a directory", a);
            if (!argv[i + 1][0]) return lg_fail(LG_EINVAL, "%s: the path is empty", a);
            if (lg_strlcpy(m->out, argv[++i], sizeof m->out))
                return lg_fail(LG_EINVAL, "%s: path too long", a);
        } else if (!strcmp(a, "--shards")) {
            if (i + 1 >= argc) return lg_fail(LG_EINVAL, "--shards needs a count");
            if (hx_parse_int("--shards", argv[++i], 1, MAX_INPUTS, &m->expect) != LG_OK)
                return lg_errcode();
        } else if (!strcmp(a, "--no-reports")) {
            m->reports = false;
        } else if (!strcmp(a, "--quiet")) {
            m->quiet = true;
        } else if (a[0] == '-') {
            return lg_fail(LG_EINVAL, "unknown option '%s' (see leakgate merge --help)", a);
        } else if (add_argument(m, a, false) != LG_OK) {
            return lg_errcode();
        }
    }
    if (!m->out[0]) return lg_fail(LG_EINVAL, "name the output directory with -o OUT");
    if (!m->n_inputs) return lg_fail(LG_EINVAL, "name the shards' results (directories or files)");
    return LG_OK;
}

int hx_cmd_merge(int argc, char **argv)
{
    struct merge m = {.reports = true};
    struct lg_dir_lock lock = {-1};
    int code = 2;
    bool help;
    char path[700];
    m.in = calloc(MAX_INPUTS, sizeof *m.in);
    if (!m.in) {
        fprintf(stderr, "leakgate merge: out of memory\n");
        return 4;
    }
    if (parse_args(&m, argc, argv, &help) != LG_OK) {
        fprintf(stderr, "leakgate merge: %s\n", lg_errmsg());
        if (!m.n_inputs || !m.out[0]) merge_usage(stderr);
        goto cleanup;
    }
    if (help) {
        merge_usage(stdout);
        code = 0;
        goto cleanup;
    }
    if (load_and_check(&m) != LG_OK || check_complete(&m) != LG_OK || check_output(&m) != LG_OK ||
        lg_mkdirs(m.out) != LG_OK || lg_dir_lock(&lock, m.out) != LG_OK ||
        rpt_clear_artefacts(m.out) != LG_OK) {
        fprintf(stderr, "leakgate merge: %s\n", lg_errmsg());
        goto cleanup;
    }
    for (int k = 0; k < m.n_inputs; k++) /* a shard killed before its verdict line, or whose
                                            line claims more than its sessions show */
        if (rpt_results_believe(m.in[k].r, m.in[k].path, "merge") != LG_OK) {
            fprintf(stderr, "leakgate merge: %s\n", lg_errmsg());
            code = 4;
            goto cleanup;
        }
    struct rpt_verdict v;
    merge_verdict(&m, &v);
    snprintf(path, sizeof path, "%s/results.jsonl", m.out);
    int rc = write_merged(&m, &v, path);
    if (rc != LG_OK) {
        fprintf(stderr, "leakgate merge: %s\n", lg_errmsg());
        code = lg_exit_code(rc);
        goto cleanup;
    }
    print_shards(&m, stdout);
    struct hx_options o;
    hx_options_defaults(&o);
    o.quiet = m.quiet;
    lg_strlcpy(o.out_dir, m.out, sizeof o.out_dir);
    hx_print_verdict(&o, &v, stdout);
    code = v.exit_code;
    if (m.reports) {
        int wrc = hx_write_reports(&o, path);
        if (wrc != LG_OK && wrc != LG_EUNAVAIL && code == 0) code = 2;
    }
cleanup:
    for (int k = 0; k < m.n_inputs; k++) rpt_results_free(m.in[k].r);
    free(m.in);
    lg_dir_unlock(&lock);
    return code;
}
