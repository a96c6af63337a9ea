/* results_io.c — the results file: a writer that appends one JSON line per event and pushes it
 * to disk before returning (nothing is lost to a crash, an OOM kill or SIGTERM), and a loader
 * that reads a whole run back, tolerating the partial last line such a death leaves. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results_impl.h"
#include "rpt_stacks.h"
#include "rpt_text.h"

#define RPT_MAX_LINE (64u << 20) /* the longest results line read */

/* ---- writing ------------------------------------------------------------------------------ */

struct rpt_writer {
    FILE *f;
    char path[4096];
    int lines; /* lines written: the run line is line 1 */
};

/* Writes o as one line, flushes it and fsyncs the file; drops o. */
static int write_line(struct rpt_writer *w, json_t *o, const char *what)
{
    int rc = LG_OK;
    char *text = NULL;
    if (!o) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory encoding the %s line", w->path, what);
        goto cleanup;
    }
    text = json_dumps(o, JSON_COMPACT);
    if (!text) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory encoding the %s line", w->path, what);
        goto cleanup;
    }
    if (fputs(text, w->f) == EOF || fputc('\n', w->f) == EOF || fflush(w->f) != 0) {
        rc = lg_fail(LG_EIO, "%s: writing the %s line: %s", w->path, what, strerror(errno));
        goto cleanup;
    }
    /* a pipe or a terminal cannot be synced, and need not be */
    if (fsync(fileno(w->f)) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP) {
        rc = lg_fail(LG_EIO, "%s: syncing the %s line: %s", w->path, what, strerror(errno));
        goto cleanup;
    }
    w->lines++;
cleanup:
    free(text);
    json_decref(o);
    return rc;
}

int rpt_writer_open(struct rpt_writer **out, const char *path, const struct rpt_run *run)
{
    int rc = LG_OK;
    *out = NULL;
    struct rpt_writer *w = calloc(1, sizeof *w);
    if (!w) return lg_fail(LG_ENOMEM, "%s: out of memory opening the results file", path);
    if (lg_strlcpy(w->path, path, sizeof w->path)) {
        rc = lg_fail(LG_EINVAL, "results path too long: %.80s...", path);
        goto cleanup;
    }
    /* created anew, never truncated in place: a hard link of an earlier run's results (cp -al,
     * rsync --link-dest) keeps them, and a link or FIFO left at the name is replaced */
    if ((rc = lg_out_stream(&w->f, path)) != LG_OK) goto cleanup;
    rc = write_line(w, rpt_run_to_json(run), "run");
cleanup:
    if (rc != LG_OK) {
        rpt_writer_close(w);
        w = NULL;
    }
    *out = w;
    return rc;
}

int rpt_writer_session(struct rpt_writer *w, const struct rpt_session *s)
{
    LG_ASSERT(w && s && "rpt_writer_session needs a writer and a session");
    char what[48];
    snprintf(what, sizeof what, "session %d", s->index);
    return write_line(w, rpt_session_to_json(s), what);
}

int rpt_writer_verdict(struct rpt_writer *w, const struct rpt_verdict *v)
{
    return rpt_writer_verdict_gate(w, v, NULL);
}

int rpt_writer_verdict_gate(struct rpt_writer *w, const struct rpt_verdict *v,
                            const struct rpt_gate *g)
{
    LG_ASSERT(w && v && "rpt_writer_verdict needs a writer and a verdict");
    json_t *o = rpt_verdict_to_json(v);
    if (o && g && json_object_set_new(o, "gate", rpt_gate_to_json(g)) != 0) {
        json_decref(o);
        o = NULL;
    }
    return write_line(w, o, "verdict");
}

void rpt_writer_close(struct rpt_writer *w)
{
    if (!w) return;
    if (w->f) fclose(w->f);
    free(w);
}

/* ---- reading ------------------------------------------------------------------------------ */

void rpt_session_fini(struct rpt_session *s)
{
    if (!s) return;
    lg_leak_groups_free(s->groups, s->n_groups);
    lg_ref_leaks_free(s->refs, s->n_refs);
    free(s->classes);
    free(s->samples);
    rpt_alloc_stacks_free(s);
    rpt_notes_free(s);
    rpt_session_gate_free(s);
    rpt_census_free(s);
    rpt_procs_free(s);
    s->groups = NULL;
    s->refs = NULL;
    s->classes = NULL;
    s->samples = NULL;
    s->n_groups = s->n_refs = s->n_classes = s->n_samples = 0;
}

void rpt_results_free(struct rpt_results *r)
{
    if (!r) return;
    for (int i = 0; i < r->n_sessions; i++) rpt_session_fini(&r->sessions[i]);
    free(r->sessions);
    free(r->gate);
    free(r);
}

/* What the loader knows of the file so far: where it is (run line, sessions, verdict), the
 * session indices seen and, per channel, the baseline the first measured session implies. */
struct load_state {
    int cap;        /* r->sessions' capacity */
    bool seen_run;  /* the "run" line was read */
    int max_index;  /* the largest session index so far (-1 before the first session) */
    int seg_max;    /* the latest index, since the latest warm-up restart */
    bool measured;  /* a measured session was read */
    bool restarted; /* a warm-up began again at index 0: shards merged, each its own process */
    bool have_base[RPT_NCHANNELS];
    int64_t base[RPT_NCHANNELS]; /* absolute − delta of the first measured session */
    int base_line[RPT_NCHANNELS];
};

/* Session indices as leakgate writes them: a measured session's index is above every earlier
 * one (a soak shard's skip, by the shard count); warm-ups come before every measured session,
 * rising, and may begin again at 0 (a merged file: each shard's warm-ups in turn). */
static int check_index(struct load_state *st, const struct rpt_dec *d, const struct rpt_session *s)
{
    if (s->warmup && st->measured)
        return lg_fail(LG_EFORMAT, "%s:%d: warm-up session %d after a measured session", d->path,
                       d->line, s->index);
    int above = s->warmup ? st->seg_max : st->max_index;
    if (s->warmup && s->index == 0 && st->seg_max >= 0) { /* the next shard's warm-ups */
        st->restarted = true;
        above = -1;
    }
    if (s->index <= above)
        return lg_fail(LG_EFORMAT,
                       "%s:%d: session index %d after index %d: indices rise (a duplicated or "
                       "restarting session)",
                       d->path, d->line, s->index, above);
    st->seg_max = s->index;
    st->max_index = LG_MAX(st->max_index, s->index);
    st->measured |= !s->warmup;
    return LG_OK;
}

/* Whether the file is one process's sessions judged against one baseline: not merged shards (a
 * warm-up restart, or a soak's plain file with no warm-up, which merge also writes) and one
 * preset (a soak keeps a baseline per preset). */
static bool one_baseline(const struct rpt_run *run, const struct load_state *st)
{
    if (st->restarted || strchr(run->preset, ',')) return false;
    return !(strcmp(run->command, "soak") == 0 && !run->shard[0] && run->warmup == 0);
}

/* A measured session's deltas against one baseline: absolute − delta is that baseline, the same
 * in every session of the file for each channel (where both figures are there). */
static int check_deltas(const struct rpt_results *r, struct load_state *st, const struct rpt_dec *d,
                        const struct rpt_session *s)
{
    if (s->warmup || !one_baseline(&r->run, st)) return LG_OK;
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        int64_t base;
        if (s->absolute[c] == RPT_NONE || s->delta[c] == RPT_NONE) continue;
        bool overflow = __builtin_sub_overflow(s->absolute[c], s->delta[c], &base);
        if (!overflow && !st->have_base[c]) {
            st->have_base[c] = true;
            st->base[c] = base;
            st->base_line[c] = d->line;
        }
        if (overflow || base != st->base[c])
            return lg_fail(LG_EFORMAT,
                           "%s:%d: session %d's %s delta %lld contradicts its absolute %lld: "
                           "they imply a baseline other than line %d's %lld (one run has one "
                           "baseline)",
                           d->path, d->line, s->index, rpt_channel_name((enum rpt_channel)c),
                           (long long)s->delta[c], (long long)s->absolute[c], st->base_line[c],
                           (long long)st->base[c]);
    }
    return LG_OK;
}

/* Handles one parsed record, keeping the order run, sessions, verdict (st->seen_run and
 * r->has_verdict say where the file is). */
static int take_record(struct rpt_results *r, const struct rpt_dec *d, json_t *o,
                       struct load_state *st)
{
    const char *type = json_string_value(json_object_get(o, "type"));
    if (!json_is_object(o) || !type)
        return lg_fail(LG_EFORMAT, "%s:%d: not a results record (an object with a \"type\")",
                       d->path, d->line);
    if (strcmp(type, "run") == 0) {
        if (st->seen_run)
            return lg_fail(LG_EFORMAT, "%s:%d: a second \"run\" line", d->path, d->line);
        st->seen_run = true;
        return rpt_run_from_json(d, o, &r->run);
    }
    if (strcmp(type, "session") != 0 && strcmp(type, "verdict") != 0)
        return lg_fail(LG_EFORMAT, "%s:%d: unknown record type \"%s\"", d->path, d->line, type);
    if (!st->seen_run)
        return lg_fail(LG_EFORMAT, "%s:%d: \"%s\" line before the \"run\" line", d->path, d->line,
                       type);
    if (r->has_verdict)
        return lg_fail(LG_EFORMAT, "%s:%d: \"%s\" line after the \"verdict\" line", d->path,
                       d->line, type);
    if (strcmp(type, "verdict") == 0) {
        int rc = rpt_verdict_from_json(d, o, &r->verdict);
        if (rc == LG_OK) rc = rpt_gate_from_json(d, o, &r->gate);
        if (rc == LG_OK) r->has_verdict = true;
        return rc;
    }
    if (r->n_sessions == st->cap) {
        int ncap = st->cap ? st->cap * 2 : 16;
        struct rpt_session *ns = realloc(r->sessions, (size_t)ncap * sizeof *ns);
        if (!ns) return lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
        r->sessions = ns;
        st->cap = ncap;
    }
    struct rpt_session *s = &r->sessions[r->n_sessions];
    int rc = rpt_session_from_json(d, o, s);
    if (rc == LG_OK) rc = check_index(st, d, s);
    if (rc == LG_OK) rc = check_deltas(r, st, d, s);
    if (rc != LG_OK) {
        rpt_session_fini(s);
        return rc;
    }
    r->n_sessions++;
    return LG_OK;
}

/* One line into *buf (grown as needed, never past RPT_MAX_LINE): its length, -1 at the end of
 * the file, -2 when the line is longer than RPT_MAX_LINE (a results line is a few KiB; /dev/zero
 * or a binary file must not grow memory without bound). */
static ssize_t read_line(FILE *f, char **buf, size_t *cap)
{
    size_t len = 0;
    int ch;
    while ((ch = getc(f)) != EOF) {
        if (len + 2 > *cap) {
            if (*cap >= RPT_MAX_LINE) return -2;
            size_t ncap = *cap ? *cap * 2 : 4096;
            if (ncap > RPT_MAX_LINE) ncap = RPT_MAX_LINE;
            char *nb = realloc(*buf, ncap);
            if (!nb) return -3;
            *buf = nb;
            *cap = ncap;
        }
        (*buf)[len++] = (char)ch;
        if (ch == '\n') break;
    }
    if (len == 0) return -1;
    (*buf)[len] = '\0';
    return (ssize_t)len;
}

int rpt_results_load(struct rpt_results **out, const char *path)
{
    int rc = LG_OK;
    struct load_state ls = {.max_index = -1, .seg_max = -1};
    char *line = NULL;
    size_t line_cap = 0;
    struct rpt_dec d = {.path = path, .line = 0};
    *out = NULL;
    struct rpt_results *r = calloc(1, sizeof *r);
    if (!r) return lg_fail(LG_ENOMEM, "%s: out of memory", path);
    FILE *f = fopen(path, "re");
    struct stat st;
    if (!f) {
        rc = lg_fail(LG_EIO, "%s: cannot open the results file: %s", path, strerror(errno));
        goto cleanup;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        rc = lg_fail(LG_EIO, "%s: is a directory, not a results file", path);
        goto cleanup;
    }
    for (;;) {
        errno = 0;
        ssize_t len = read_line(f, &line, &line_cap);
        if (len == -2) {
            rc = lg_fail(LG_EFORMAT, "%s:%d: a line longer than %d MiB: not a results file", path,
                         d.line + 1, RPT_MAX_LINE >> 20);
            break;
        }
        if (len == -3) {
            rc = lg_fail(LG_ENOMEM, "%s:%d: out of memory reading a line", path, d.line + 1);
            break;
        }
        if (len < 0) {
            if (ferror(f))
                rc = lg_fail(LG_EIO, "%s: read error after line %d: %s", path, d.line,
                             strerror(errno));
            break;
        }
        d.line++;
        bool complete = len > 0 && line[len - 1] == '\n';
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 0) continue; /* a blank line holds no record */
        json_error_t err;
        json_t *o = json_loadb(line, (size_t)len, JSON_REJECT_DUPLICATES, &err);
        if (!o && !complete) {
            /* the last line, cut short by a crash mid-write: skipped and counted */
            r->truncated_lines++;
            break;
        }
        if (!o) {
            rc = lg_fail(LG_EFORMAT, "%s:%d: not JSON: %s (column %d)", path, d.line, err.text,
                         err.column);
            break;
        }
        rc = take_record(r, &d, o, &ls);
        json_decref(o);
        if (rc != LG_OK) break;
    }
    if (rc == LG_OK && !ls.seen_run)
        rc = lg_fail(LG_EFORMAT, "%s: no \"run\" line: %s", path,
                     d.line == 0 ? "the file is empty" : "not a leakgate results file");
cleanup:
    free(line);
    if (f) fclose(f);
    if (rc != LG_OK) {
        rpt_results_free(r);
        r = NULL;
    }
    *out = r;
    return rc;
}

void rpt_census_free(struct rpt_session *s)
{
    for (int i = 0; i < s->n_census; i++) free(s->census[i].frames);
    free(s->census);
    s->census = NULL;
    s->n_census = 0;
}

void rpt_procs_free(struct rpt_session *s)
{
    free(s->procs);
    s->procs = NULL;
    s->n_procs = 0;
    s->procs_walked = false;
}
