/* exec.c — `leakgate exec -- CMD`: the parent's side of a run whose sessions happen in another
 * program. The agent in CMD measures each session end exactly as `run` measures its own and
 * sends it here; this file turns each into a struct rpt_session and hands it to the same series,
 * verdict, results writer, progress lines and reports `run` uses, so the results file, the
 * reports and the exit statuses are the same. Then it answers, and only then does the program
 * go on: the answer may arm heap profiling, once the sessions so far show untagged growth.
 *
 * Exit statuses: those of `run`; 2 when CMD cannot carry the agent (not found, static,
 * setuid) — nothing ran; 4 when CMD failed (exited non-zero, or died by a signal: named) — the
 * sessions it finished are kept and judged as a partial run — or when the agent never started;
 * 1 when CMD died by a signal (the OOM killer's SIGKILL) after sessions that show a leak.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec_impl.h"
#include "leakgate.h"
#include "reports.h"

#define KILL_GRACE_S 10 /* after SIGTERM, the time CMD has before SIGKILL */

struct exec_run {
    struct hx_exec_options *eo;
    struct hx_options *o;
    struct hx_child ch;
    struct rpt_series ser;
    struct rpt_writer *w;
    struct hx_prof prof;
    int64_t baseline[RPT_NCHANNELS];
    int n; /* sessions received */
    int measured;
    int unjudged;       /* sessions the series had no room for (out of memory): recorded only */
    int first_unjudged; /* the first of them */
    uint32_t used;      /* LGA_USED_* over the run */
    int hellos;         /* process images that said HELLO (exec chains say it again) */
    bool open_at_exit;  /* the program exited with an API session begun, never ended */
    int ended_at_exit;  /* the session the agent ended at the program's exit (-1 none) */
    bool bye;           /* the latest image that said HELLO said BYE as it exited */
    bool lost;          /* the connection ended without that BYE: later sessions unmeasured */
    bool killed;        /* we sent SIGTERM (a stop was requested, or the run failed) */
    int cmd_stopped;    /* CMD was said to be stopped (SIGSTOP) and not yet to continue */
    double kill_at;
    int rc;                /* the first failure of the run itself */
    int64_t suppressed[2]; /* bytes suppression rules took so far (host, device) */
    int notes_index;       /* the latest session with notes, and its notes (one a line) */
    char *notes;
    bool census_exact;        /* the census found kept blocks: one session's allocations profiled */
    int census_exact_session; /* that session */
    int census_capped;        /* sessions counted while the agent's arena pool was full */
    struct rpt_census_verdict census; /* the census's judgment of the sessions so far */
    struct hx_census_names census_names;
    struct rpt_procs procs;  /* CMD's descendants over the run, with their RSS series */
    struct hx_births births; /* the children that said they began, until the tree is read */
    bool tree_failed;        /* reading the tree failed once (said once) */
};

/* ---- messages ----------------------------------------------------------------------------------
 */

static int send_msg(struct exec_run *r, struct lga_enc *e)
{
    int rc =
        lga_enc_finish(e) ? lga_send(r->ch.fd, e->p, e->n) : lg_fail(LG_ENOMEM, "out of memory");
    lga_enc_fini(e);
    return rc;
}

static uint32_t reply_flags(const struct exec_run *r)
{
    uint32_t f = 0;
    if (r->census_exact) { /* one session profiled whole, right after the census saw blocks kept */
        if (r->n == r->census_exact_session) f |= LGA_CFG_PROF_ARMED | LGA_CFG_PROF_EXACT;
    } else if (r->prof.armed) {
        f |= LGA_CFG_PROF_ARMED;
    }
    if (r->o->stacks) f |= LGA_CFG_STACKS;
    if (r->o->warmup == 0 && r->n == 0) f |= LGA_CFG_BASELINE;
    return f;
}

static int on_hello(struct exec_run *r, const unsigned char *p, size_t n)
{
    struct lga_dec d = {.p = p, .n = n};
    uint32_t api = lga_get_u32(&d);
    int64_t pid = lga_get_i64(&d);
    uint32_t flags = lga_get_u32(&d);
    char version[128];
    lga_get_str(&d, version, sizeof version);
    if (d.bad) return lg_fail(LG_EFORMAT, "a malformed HELLO from the agent");
    if (api != LEAKGATE_API_VERSION)
        return lg_fail(LG_EINVAL,
                       "the agent speaks API version %u, this leakgate %d: install them together",
                       api, LEAKGATE_API_VERSION);
    if (pid != r->ch.pid)
        return lg_fail(LG_EFORMAT, "a HELLO from pid %lld, not CMD's %d", (long long)pid,
                       (int)r->ch.pid);
    r->bye = false;
    if (r->hellos++ && !r->o->quiet)
        fprintf(
            stderr,
            "leakgate exec: CMD replaced itself (exec); its new image goes on with the sessions\n");
    r->prof.available = r->eo->prof && (flags & LGA_HELLO_PROF);
    if (r->eo->prof && !(flags & LGA_HELLO_PROF) && r->hellos == 1 && !r->o->quiet)
        fprintf(stderr, "leakgate exec: jemalloc in CMD has no heap profiling (MALLOC_CONF "
                        "prof:false?): growth "
                        "will not be named by stack\n");
    if (r->o->stacks && r->prof.available) r->prof.armed = true;
    struct lga_enc e;
    lga_enc_init(&e, LGA_CONFIG);
    lga_put_u32(&e, reply_flags(r));
    lga_put_str(&e, r->eo->marker);
    lga_put_str(&e, r->prof.dir);
    return send_msg(r, &e);
}

/* The session's deltas against the baseline (the last warm-up, or the first begin). */
static void deltas(struct exec_run *r, struct rpt_session *s, const struct hx_exec_msg *m)
{
    int warm = r->o->warmup;
    if (warm == 0 && r->n == 0)
        memcpy(r->baseline, m->has_begin ? m->begin : s->absolute, sizeof r->baseline);
    if (warm > 0 && r->n == warm - 1) memcpy(r->baseline, s->absolute, sizeof r->baseline);
    hx_session_deltas(s, r->baseline);
}

/* What the results say of a session the agent ended at the program's exit (a note of
 * leakgate's own, beside the program's). */
#define AT_EXIT_NOTE                                                                               \
    "leakgate: ended by the program's exit (begun with leakgate_session_begin(), never ended): "   \
    "measured as the program exited, what it kept there is what it kept"

/* Marks s as ended by the program's exit: a note in the results, a line on the console. */
static void mark_at_exit(struct exec_run *r, struct rpt_session *s)
{
    r->ended_at_exit = s->index;
    char **v = realloc(s->notes, ((size_t)s->n_notes + 1) * sizeof *v);
    if (v) {
        s->notes = v;
        if ((v[s->n_notes] = strdup(AT_EXIT_NOTE))) s->n_notes++;
    }
    if (!r->o->quiet)
        fprintf(stderr,
                "leakgate exec: session %d was begun and never ended: ended by the program's exit "
                "and measured there\n",
                s->index);
}

/* Keeps s's notes for the print after the verdict (the latest session that has any of the
 * program's own). */
static void keep_notes(struct exec_run *r, const struct rpt_session *s)
{
    size_t len = 0;
    int own = 0;
    for (int i = 0; i < s->n_notes; i++)
        if (strcmp(s->notes[i], AT_EXIT_NOTE)) len += strlen(s->notes[i]) + 1, own++;
    char *t = own ? malloc(len + 1) : NULL;
    if (!t) return;
    t[0] = '\0';
    for (int i = 0; i < s->n_notes; i++)
        if (strcmp(s->notes[i], AT_EXIT_NOTE)) strcat(strcat(t, s->notes[i]), "\n");
    free(r->notes);
    r->notes = t;
    r->notes_index = s->index;
}

static void print_notes(const struct exec_run *r, FILE *f)
{
    if (!r->notes) return;
    fprintf(f, "the program's own attribution (its notes on session %d):\n", r->notes_index);
    for (const char *p = r->notes; *p;) {
        const char *nl = strchr(p, '\n');
        fprintf(f, "  %.*s\n", (int)(nl - p), p);
        p = nl + 1;
    }
}

/* Adds s to the series, doubling it when full: a program may run any number of sessions, and
 * each is judged. Should memory run out, the session is recorded but not judged, and the verdict
 * says which were not (never a silent pass). */
static void series_add(struct exec_run *r, const struct rpt_session *s)
{
    if (r->ser.n_all >= r->ser.cap && r->ser.cap < INT_MAX) /* a failure leaves it full */
        (void)rpt_series_reserve(&r->ser, r->ser.cap <= INT_MAX / 2 ? r->ser.cap * 2 : INT_MAX);
    if (r->ser.n_all < r->ser.cap) {
        rpt_series_add(&r->ser, s);
        return;
    }
    if (!r->unjudged++) {
        r->first_unjudged = s->index;
        fprintf(stderr,
                "leakgate exec: %s: session %d and later are written to the results but not "
                "judged\n",
                lg_errmsg(), s->index);
    }
}

/* Names the census's kept blocks by the session's heap profile diff. Once one session was
 * profiled whole (census_exact), the diff against the empty profile taken as it began is its
 * survivors by stack: exact, since every allocation was sampled. jemalloc keeps a sampled small
 * block as a 16 KiB extent; the agent takes that out of the census and the channels itself
 * (agent/lga_promote.c, from its retention table). Without the table (LEAKGATE_KEEP=0), where
 * the profile's top stacks hold every block born there, the census entry takes its bytes from
 * the profile and je_allocated loses the difference. Blocks born elsewhere are named by the
 * stack that kept the most: a likely name, not a proof (as when a channel's sampled profile
 * names them). */
static void census_name(const struct exec_run *r, struct rpt_session *s)
{
    if (!s->n_alloc_stacks || !s->alloc_stacks[0].frames) return;
    bool whole = r->census_exact && s->index >= r->census_exact_session;
    int64_t bytes = 0, objects = 0;
    for (int i = 0; i < s->n_alloc_stacks; i++)
        bytes += s->alloc_stacks[i].bytes, objects += s->alloc_stacks[i].objects;
    for (int i = 0; i < s->n_census; i++) {
        struct rpt_census *c = &s->census[i];
        if (whole && c->born == r->census_exact_session && objects == c->blocks && bytes > 0 &&
            c->bytes > bytes) {
            if (s->absolute[RPT_CH_JE_ALLOCATED] != RPT_NONE)
                s->absolute[RPT_CH_JE_ALLOCATED] -= c->bytes - bytes;
            c->bytes = bytes;
        }
        if (c->born < s->index && !c->frames) c->frames = strdup(s->alloc_stacks[0].frames);
    }
}

/* After a session: judges the census so far, and once it says LEAK arms the profile of every
 * allocation of the next session (a leak of 64 bytes is never sampled at one sample per
 * 128 KiB), so the kept blocks are named from then on. Only on a leak: profiling every
 * allocation of a malloc-heavy session costs several times its time (docs/benchmarks.md).
 * Not when a channel's profile is armed already: that names them (sampled). */
static void census_after(struct exec_run *r, const struct rpt_session *s, bool capped,
                         int agent_index)
{
    if (capped && !r->census_capped++ && !r->o->quiet)
        fprintf(stderr,
                "leakgate exec: the census's %d arenas all hold blocks: sessions from %d on are "
                "not counted\n",
                LGA_CENSUS_MAX_SLOTS, s->index + 1);
    if (!s->warmup && s->census_counted)
        rpt_census_judge_session(s, r->o->warmup, (int64_t)r->o->budgets[RPT_CH_JE_ALLOCATED].slope,
                                 &r->census);
    /* a channel's sampled profile already names the growth (and its base is not reset) */
    if (r->census_exact || r->prof.armed || !r->prof.available || s->warmup) return;
    if (!r->census.counted || r->census.status != RPT_LEAK) return; /* naming costs: only a leak */
    for (int i = 0; i < s->n_census; i++)
        if (s->census[i].born >= r->o->warmup && s->census[i].born < s->index) {
            r->census_exact = true;
            r->census_exact_session = s->index + 1;
            r->prof.armed = false; /* the sampling of a channel's growth ends: it would inflate
                                      the census's bytes (sampled blocks are 16 KiB pages) */
            snprintf(r->prof.base, sizeof r->prof.base, "%s/%d.%d.base.heap", r->prof.dir,
                     (int)r->ch.pid, agent_index);
            r->prof.base_index = s->index;
            r->prof.one_session = true;
            if (!r->o->quiet)
                fprintf(stderr,
                        "leakgate exec: blocks born in session %d are still alive; every "
                        "allocation of session %d is profiled to name them\n",
                        s->census[i].born, s->index + 1);
            return;
        }
}

/* CMD's descendants at the session's end into s->processes (results 1.8); a failure is said
 * once and leaves the session without them. */
static void read_tree(struct exec_run *r, struct rpt_session *s)
{
    if (r->o->stacks && r->eo->prof) hx_tree_prune(r->prof.dir); /* first and last kept */
    if (hx_tree_read(r->ch.pid, r->eo->agent, s) == LG_OK) {
        hx_births_session(&r->births, s);
        return;
    }
    if (r->tree_failed) return;
    r->tree_failed = true;
    fprintf(stderr, "leakgate exec: CMD's child processes not measured: %s\n", lg_errmsg());
}

/* Under --stacks: the sessions ended, and which children leak so far (their series judged as
 * the verdict will judge them): a Python child among them traces itself (exec_child_py.c). */
static void tell_children(struct exec_run *r, const struct rpt_session *s)
{
    struct rpt_procs_verdict pv;
    rpt_procs_judge(&r->procs, &r->o->budgets[RPT_CH_RSS], &pv);
    hx_child_py_mark(r->prof.dir, s->index + 1, pv.leak_pids, pv.n_leak_pids);
}

static int on_session(struct exec_run *r, const unsigned char *p, size_t n)
{
    struct rpt_session s;
    struct hx_exec_msg m;
    memset(&s, 0, sizeof s);
    /* stacks are addresses in CMD, which waits for our answer: its map holds still */
    char *maps = r->o->stacks ? hx_read_maps(r->ch.pid) : NULL;
    s.index = r->n;
    s.warmup = r->n < r->o->warmup;
    int rc = hx_exec_decode_session(p, n, maps, &s, &m);
    free(maps);
    if (rc == LG_OK) read_tree(r, &s); /* CMD waits: its children are measured as it stands */
    if (rc == LG_OK) {
        r->used |= m.used;
        int prc = hx_prof_session(&r->prof, m.dump, &s);
        if (prc != LG_OK && !r->o->quiet)
            fprintf(stderr, "leakgate exec: heap profile: %s\n", lg_errmsg());
        hx_census_names_apply(&r->census_names, r->ch.pid, r->o->warmup, &s);
        census_name(r, &s); /* before the deltas: it may take the profile's 16 KiB back out */
        if (m.keep.n &&
            hx_keep_notes(&m.keep, r->ch.pid, s.index - (m.agent_index - m.keep.born), &s) !=
                LG_OK &&
            !r->o->quiet)
            fprintf(stderr, "leakgate exec: %s\n", lg_errmsg());
        deltas(r, &s, &m);
        census_after(r, &s, m.census_capped, m.agent_index);
        r->ser.device = (r->used & (LGA_USED_DEVICE | LGA_USED_DEVICE_TAGS)) != 0;
        if (m.at_exit) mark_at_exit(r, &s);
        hx_gate_session(r->o, r->suppressed, &s);
        series_add(r, &s);
        (void)rpt_procs_add(&r->procs, &s); /* a reading it cannot keep is named in the verdict */
        if (r->o->stacks && r->eo->prof) tell_children(r, &s);
        rc = rpt_writer_session(r->w, &s);
        keep_notes(r, &s);
        hx_progress_session(r->o, &s, r->n, LG_MAX(r->n + 1, r->o->sessions + r->o->warmup));
        r->measured += !s.warmup;
        r->n++;
        if (!r->prof.armed && !r->census_exact && r->prof.available &&
            hx_prof_flagged(&r->ser, r->o->budgets)) {
            r->prof.armed = true;
            if (!r->o->quiet)
                fprintf(stderr,
                        "leakgate exec: a channel leaks; heap profiling armed from session %d on\n",
                        r->n);
        }
    }
    hx_keep_fini(&m.keep);
    rpt_session_fini(&s);
    if (rc != LG_OK) return rc;
    struct lga_enc e;
    lga_enc_init(&e, LGA_REPLY);
    lga_put_u32(&e, reply_flags(r));
    return send_msg(r, &e);
}

static void on_bye(struct exec_run *r, const unsigned char *p, size_t n)
{
    struct lga_dec d = {.p = p, .n = n};
    r->bye = true;
    if (lga_get_u32(&d) && !d.bad) r->open_at_exit = true;
}

/* ---- the child
 * ----------------------------------------------------------------------------------- */

static void stop_child(struct exec_run *r)
{
    if (r->killed || r->ch.pid <= 0) return;
    kill(r->ch.pid, SIGTERM);
    kill(r->ch.pid, SIGCONT); /* a stopped CMD would hold SIGTERM until SIGKILL */
    r->killed = true;
    r->kill_at = lg_now();
}

static void said_continued(struct exec_run *r)
{
    if (!r->cmd_stopped) return;
    r->cmd_stopped = 0;
    fprintf(stderr, "leakgate exec: CMD (pid %d) continues\n", (int)r->ch.pid);
}

/* Says when CMD was stopped (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) or continued: a stopped
 * program sends nothing, and a run that only waits would look hung. Reaps nothing (only stop
 * and continue events are taken). */
static void watch_stops(struct exec_run *r)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)r->ch.pid, &si, WSTOPPED | WCONTINUED | WNOHANG) != 0 ||
        si.si_pid != r->ch.pid)
        return;
    if (si.si_code == CLD_STOPPED && !r->cmd_stopped++)
        fprintf(stderr,
                "leakgate exec: CMD (pid %d) is stopped by signal %d (%s); leakgate waits for it: "
                "`kill -CONT %d` continues it\n",
                (int)r->ch.pid, si.si_status, strsignal(si.si_status), (int)r->ch.pid);
    else if (si.si_code == CLD_CONTINUED)
        said_continued(r);
}

/* One message, or LG_EIO at the end; a stop request, a stopped CMD, or a long wait after
 * SIGTERM is handled. */
static int next_msg(struct exec_run *r, uint32_t *type, unsigned char **p, size_t *n)
{
    for (;;) {
        if (hx_stop_requested) stop_child(r);
        struct pollfd pfd = {r->ch.fd, POLLIN, 0};
        int k = poll(&pfd, 1, 500);
        if (k < 0 && errno == EINTR) continue;
        if (k > 0) said_continued(r); /* it sent something: it runs */
        if (k == 0) {
            watch_stops(r);
            if (r->killed && lg_now() - r->kill_at > KILL_GRACE_S) kill(r->ch.pid, SIGKILL);
            continue;
        }
        int rc = lga_recv(r->ch.fd, type, p, n);
        if (rc != LG_EINTR) return rc;
    }
}

static int message_loop(struct exec_run *r)
{
    for (;;) {
        uint32_t type = 0;
        unsigned char *p = NULL;
        size_t n = 0;
        int rc = next_msg(r, &type, &p, &n);
        if (rc == LG_EIO) return LG_OK; /* the socket closed: CMD ended (or dropped it) */
        if (rc != LG_OK) return lg_fail(rc, "reading the agent's messages: %s", lg_status_name(rc));
        if (type == LGA_HELLO)
            rc = on_hello(r, p, n);
        else if (type == LGA_SESSION)
            rc = r->hellos ? on_session(r, p, n)
                           : lg_fail(LG_EFORMAT, "a session before the agent's HELLO");
        else if (type == LGA_BYE)
            on_bye(r, p, n);
        else
            rc = lg_fail(LG_EFORMAT, "an unknown message (type %u) from the agent", type);
        free(p);
        if (rc == LG_EIO) return LG_OK; /* a reply found CMD gone: its end says how */
        if (rc != LG_OK) return rc;
    }
}

/* ---- the verdict
 * ---------------------------------------------------------------------------------- */

/* exec's default requirement: the host channels every program has, and the channels of what
 * the program used (tags, the ledger, device memory). */
static unsigned default_required(uint32_t used)
{
    unsigned m = rpt_channel_mask(RPT_CHF_PROCESS);
    if (used & LGA_USED_TAGS) m |= RPT_BIT(RPT_CH_TAGGED_HOST);
    if (used & LGA_USED_REFS) m |= RPT_BIT(RPT_CH_REFS);
    if (used & LGA_USED_DEVICE_TAGS) m |= RPT_BIT(RPT_CH_TAGGED_DEVICE);
    if (used & LGA_USED_DEVICE) m |= RPT_BIT(RPT_CH_DEV_PROCESS);
    return m;
}

#define CUDA_STATIC_WHY                                                                            \
    "CMD is linked with CUDA's static runtime (libcudart_static, nvcc's default), whose device "   \
    "calls no interposer sees: build it with -cudart shared"

/* Channels the program never used are not measured: said so, never judged as zero. A program
 * with CUDA's static runtime may well use the device: its device channels say why they are
 * not measured. */
static void mark_unused(struct rpt_verdict *v, uint32_t used, bool cuda_static)
{
    static const struct {
        enum rpt_channel c;
        uint32_t need;
        const char *why;
    } rules[] = {
        {RPT_CH_TAGGED_HOST, LGA_USED_TAGS, "CMD made no tagged allocation (leakgate_tag_push)"},
        {RPT_CH_REFS, LGA_USED_REFS, "CMD tracked no shared object (leakgate_track)"},
        {RPT_CH_TAGGED_DEVICE, LGA_USED_DEVICE_TAGS,
         "CMD made no device allocation inside a tag scope"},
        {RPT_CH_DEV_PROCESS, LGA_USED_DEVICE,
         "CMD made no device allocation (cudaMalloc*, cuMemAlloc)"},
        {RPT_CH_DEV_DRIVER, LGA_DEVICE_DRIVER,
         "no driver view: CMD's CUDA has no cudaMemGetInfo, or no device use"},
    };
    for (size_t i = 0; i < LG_ARRAY_LEN(rules); i++) {
        if (used & rules[i].need) continue;
        bool device = rules[i].c != RPT_CH_TAGGED_HOST && rules[i].c != RPT_CH_REFS;
        for (int k = 0; k < v->n_channels; k++)
            if (v->channels[k].channel == rules[i].c)
                rpt_channel_unavailable(&v->channels[k], rules[i].c,
                                        device && cuda_static ? CUDA_STATIC_WHY : rules[i].why);
    }
}

/* The summary says how many processes were judged and names those only partly seen; the whole
 * account is the verdict's "processes" (printed after the verdict). */
static void say_processes(struct rpt_verdict *v)
{
    const struct rpt_procs_verdict *pv = &v->procs;
    if (!pv->counted) return;
    size_t l = strlen(v->summary);
    snprintf(v->summary + l, sizeof v->summary - l, "; judged %d process(es)", pv->judged);
    l = strlen(v->summary);
    if (pv->within)
        snprintf(v->summary + l, sizeof v->summary - l,
                 ", %d more began and ended within a session", pv->within);
    l = strlen(v->summary);
    if (pv->exited)
        snprintf(v->summary + l, sizeof v->summary - l, ", %d exited during the run", pv->exited);
    l = strlen(v->summary);
    if (pv->unseen)
        snprintf(v->summary + l, sizeof v->summary - l,
                 ", %d without the agent (RSS only: static, or LD_PRELOAD removed)", pv->unseen);
}

static void judge(struct exec_run *r, struct rpt_verdict *v, int status, bool cmd_failed)
{
    struct hx_options *o = r->o;
    char what[160];
    v->required = o->required_set ? o->required : default_required(r->used);
    v->sessions_planned = o->sessions;
    v->partial = cmd_failed || hx_stop_requested || r->lost || r->unjudged > 0 ||
                 (o->sessions > 0 && r->measured < o->sessions);
    hx_exec_describe_status(status, what, sizeof what);
    if (hx_stop_requested)
        lg_strlcpy(v->stopped, hx_stop_name(), sizeof v->stopped);
    else if (cmd_failed)
        snprintf(v->stopped, sizeof v->stopped, "CMD %.58s", what);
    else if (r->lost)
        lg_strlcpy(v->stopped, "the agent's connection ended before CMD", sizeof v->stopped);
    else if (r->unjudged)
        snprintf(v->stopped, sizeof v->stopped, "no memory to judge session %d on",
                 r->first_unjudged);
    v->census = r->census;
    rpt_procs_judge(&r->procs, &o->budgets[RPT_CH_RSS], &v->procs);
    rpt_judge_series(&r->ser, o->budgets, v);
    if (o->stacks && r->eo->prof) { /* a Python child's line first: its stack is CPython's */
        hx_child_py_name(r->prof.dir, &v->procs);
        hx_tree_name(r->prof.dir, r->prof.sample, &v->procs);
    }
    mark_unused(v, r->used, r->ch.cuda_static);
    rpt_conclude(v, o->budgets);
    if (v->census.counted) {
        size_t k = strlen(v->summary);
        snprintf(v->summary + k, sizeof v->summary - k, "; census: %s", v->census.why);
    }
    say_processes(v);
    size_t l = strlen(v->summary);
    if (!v->stopped[0]) /* a stop is named by the summary already */
        snprintf(v->summary + l, sizeof v->summary - l, " (CMD %s after %d session(s))", what,
                 r->n);
    l = strlen(v->summary);
    if (r->ended_at_exit >= 0)
        snprintf(v->summary + l, sizeof v->summary - l,
                 "; session %d, begun and never ended, was ended by CMD's exit and judged",
                 r->ended_at_exit);
    else if (r->open_at_exit)
        snprintf(v->summary + l, sizeof v->summary - l,
                 "; CMD exited with a session begun and never ended");
    l = strlen(v->summary);
    if (r->ch.cuda_static)
        snprintf(v->summary + l, sizeof v->summary - l,
                 "; device memory not measured: CMD is linked with CUDA's static runtime");
    l = strlen(v->summary);
    if (r->unjudged)
        snprintf(v->summary + l, sizeof v->summary - l,
                 "; %d session(s) from #%d on recorded but not judged (out of memory)", r->unjudged,
                 r->first_unjudged);
    /* a program killed (by the OOM killer, often) after sessions that show a leak: the leak
     * stands, and its death is named; any other failure of CMD is exit 4 */
    l = strlen(v->summary);
    if (cmd_failed && WIFSIGNALED(status) && v->status == RPT_LEAK)
        snprintf(v->summary + l, sizeof v->summary - l,
                 "; the sessions that finished showed the leak, then CMD %s", what);
    else if (cmd_failed)
        v->exit_code = 4;
}

/* ---- the run ------------------------------------------------------------------------------------
 */

static void fill_run_line(struct exec_run *r, struct rpt_run *run)
{
    struct tft_config cfg;
    memset(&cfg, 0, sizeof cfg);
    hx_fill_run_line(r->o, &cfg, run);
    lg_strlcpy(run->preset, "", sizeof run->preset);
    lg_strlcpy(run->modes, "exec", sizeof run->modes);
    lg_strlcpy(run->device, "cpu", sizeof run->device);
    run->steps = 0;
    run->seed = 0;
    run->required = r->o->required_set ? r->o->required : default_required(0);
    run->prof_sample = r->eo->prof ? (int64_t)1 << r->eo->lg_sample : 0;
    size_t at = 0;
    for (char **a = r->eo->argv; *a && at + 4 < sizeof run->cmd; a++) {
        bool quote = strpbrk(*a, " \t'\"") != NULL || !**a;
        at += (size_t)snprintf(run->cmd + at, sizeof run->cmd - at, "%s%s%s%s", at ? " " : "",
                               quote ? "'" : "", *a, quote ? "'" : "");
    }
}

static void say_begin(const struct exec_run *r)
{
    if (r->o->quiet) return;
    char b1[32];
    fprintf(
        stderr,
        "leakgate exec: %s\n  sessions %s%s%s, %d warm-up; heap profiling %s (one sample per %s)\n",
        r->ch.path, r->eo->marker[0] ? "end at output lines matching '" : "from the leakgate.h API",
        r->eo->marker, r->eo->marker[0] ? "'" : "", r->o->warmup,
        !r->eo->prof   ? "off (--no-prof)"
        : r->o->stacks ? "armed from the start (--stacks)"
                       : "armed once a channel leaks",
        lg_fmt_bytes(b1, sizeof b1, (double)((int64_t)1 << r->eo->lg_sample)));
    if (r->ch.cuda_static)
        fprintf(stderr,
                "leakgate exec: %s carries CUDA's static runtime (libcudart_static, nvcc's "
                "default): its device memory will not be measured (build it with -cudart "
                "shared)\n",
                r->ch.path);
}

/* The series' first capacity beyond --sessions + --warmup; LEAKGATE_TEST_SERIES_START lowers it
 * so that a test reaches the growth with a few hundred sessions. */
static int series_start(void)
{
    const char *t = getenv("LEAKGATE_TEST_SERIES_START");
    int v = t ? atoi(t) : 0;
    return v > 0 && v < HX_EXEC_SERIES_START ? v : HX_EXEC_SERIES_START;
}

/* The output directory as an absolute path (the agent writes heap profiles into it). */
static int heap_dir(const char *out, char *dir, size_t size)
{
    char abs[PATH_MAX];
    if (!realpath(out, abs)) return lg_fail(LG_EIO, "%s: %s", out, strerror(errno));
    if (lg_snprintf(dir, size, "%s/heap", abs)) return lg_fail(LG_EINVAL, "%s: path too long", out);
    return LG_OK;
}

/* The file where CMD's children say they began: in the output directory (heap's parent); and
 * under --stacks the prefix of their heap profiles (hx_tree_name). */
static int start_births(struct exec_run *r, const char *heap)
{
    char prefix[720];
    if (r->o->stacks && r->eo->prof &&
        (lg_snprintf(prefix, sizeof prefix, "%s/" HX_CHILD_PROF, heap) ||
         setenv("LEAKGATE_AGENT_CHILD_PROF", prefix, 1) != 0))
        return lg_fail(LG_EINVAL, "LEAKGATE_AGENT_CHILD_PROF: %s/%s cannot be set", heap,
                       HX_CHILD_PROF);
    char out[700];
    lg_strlcpy(out, heap, sizeof out);
    char *slash = strrchr(out, '/');
    if (slash) *slash = '\0';
    return hx_births_init(&r->births, out);
}

int hx_exec_run(struct hx_exec_options *eo, struct rpt_verdict *v, bool *cmd_failed)
{
    struct exec_run r = {.eo = eo, .o = &eo->o, .ended_at_exit = -1};
    struct lg_dir_lock lock = {-1};
    struct rpt_run run;
    char path[700], dir[700];
    int status = 0;
    memset(v, 0, sizeof *v);
    *cmd_failed = false;
    for (int c = 0; c < RPT_NCHANNELS; c++) r.baseline[c] = RPT_NONE;
    int rc = hx_exec_check(eo, &r.ch);
    if (rc != LG_OK) return rc; /* nothing ran: a usage error */
    rc = lg_mkdirs(r.o->out_dir);
    if (rc == LG_OK) rc = lg_dir_lock(&lock, r.o->out_dir);
    if (rc == LG_OK) rc = rpt_clear_artefacts(r.o->out_dir);
    if (rc == LG_OK) rc = heap_dir(r.o->out_dir, dir, sizeof dir);
    if (rc == LG_OK)
        rc = hx_prof_init(&r.prof, eo->prof, (int64_t)1 << eo->lg_sample, r.o->stacks, dir);
    if (rc == LG_OK && start_births(&r, dir) != LG_OK) /* counts nothing then */
        fprintf(stderr, "leakgate exec: children that live within a session not counted: %s\n",
                lg_errmsg());
    if (rc == LG_OK) rc = rpt_series_init(&r.ser, r.o->sessions + r.o->warmup + series_start());
    if (rc != LG_OK) goto out;
    fill_run_line(&r, &run);
    snprintf(path, sizeof path, "%s/results.jsonl", r.o->out_dir);
    if ((rc = rpt_writer_open(&r.w, path, &run)) != LG_OK) goto out;
    say_begin(&r);
    if ((rc = hx_exec_spawn(eo, &r.ch)) != LG_OK) goto out;
    rc = message_loop(&r);
    if (rc != LG_OK) {
        fprintf(stderr, "leakgate exec: %s; stopping CMD\n", lg_errmsg());
        stop_child(&r);
        uint32_t t;
        unsigned char *p;
        size_t n;
        while (next_msg(&r, &t, &p, &n) == LG_OK) free(p); /* until it is gone */
    }
    while (waitpid(r.ch.pid, &status, 0) < 0 && errno == EINTR) {
    }
    close(r.ch.fd);
    hx_progress_end(r.o);
    /* a stop asked of leakgate (SIGINT, SIGTERM) ends CMD too: that is a stopped run, not a
     * failed program */
    *cmd_failed = (!WIFEXITED(status) || WEXITSTATUS(status) != 0) && !hx_stop_requested;
    char what[160];
    hx_exec_describe_status(status, what, sizeof what);
    if (rc == LG_OK && r.hellos == 0) {
        rc = lg_fail(LG_EINTERNAL,
                     "leakgate's agent never started in CMD (it %s): was LD_PRELOAD ignored or "
                     "removed? (see the dynamic linker's message above, if any)",
                     what);
    } else if (*cmd_failed && !r.killed) {
        fprintf(stderr,
                "leakgate exec: CMD %s after %d session(s); the sessions so far are judged as a "
                "partial run\n",
                what, r.n);
    } else if (rc == LG_OK && !r.bye && !hx_stop_requested) {
        /* the image that said HELLO last never said BYE, yet CMD exited 0: it closed the agent's
         * socket, left with _exit, or replaced itself with a program without the agent */
        r.lost = true;
        fprintf(stderr,
                "leakgate exec: the agent's connection ended before CMD did (after %d session(s)):"
                " CMD closed LEAKGATE_AGENT_FD, left with _exit, or replaced itself (exec) without"
                " the agent in LD_PRELOAD; any session after that was not measured\n",
                r.n);
    } else if (rc == LG_OK && r.n == 0 && !hx_stop_requested) {
        fprintf(stderr, "leakgate exec: CMD ran no session: %s\n",
                eo->marker[0] ? "no line it wrote matched --session-marker (a child it started is "
                                "inert: a wrapper script should exec the program)"
                              : "it never called leakgate_session_end() (or use --session-marker)");
    }
    judge(&r, v, status, *cmd_failed);
    if (rc != LG_OK) hx_verdict_error(v, rc);
    int vrc = hx_gate_verdict(r.o, r.w, path, v);
    if (rc == LG_OK && vrc != LG_OK) rc = vrc;
    hx_print_verdict(r.o, v, stdout);
    if (v->procs.counted) printf("processes: %s\n", v->procs.why);
    hx_prof_print(&r.prof, stdout);
    print_notes(&r, stdout);
out:
    rpt_procs_fini(&r.procs);
    hx_births_fini(&r.births);
    free(r.notes);
    hx_census_names_fini(&r.census_names);
    rc = hx_close_results(r.o, r.w, path, rc, v);
    rpt_series_fini(&r.ser);
    lg_dir_unlock(&lock);
    return rc;
}
