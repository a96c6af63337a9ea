/* lga_session.c — the API behind leakgate.h under exec (the table libleakgate.so calls), and
 * the end of a session, which the API and the output marker share.
 *
 * A session end runs in the thread that asked for it, under the agent's lock: the same
 * measurement `leakgate run` makes (the tracker's quiesce — tcache flush, purge of every arena
 * — the device's, then one snapshot of every view), then the generation's leak report, a heap
 * profile when profiling is armed, the SESSION message, and the parent's REPLY. Only then does
 * the thread return to the program: the program does not run ahead of its measurement.
 * Everything the end allocates comes after the snapshot and is freed before it returns.
 */
#define _GNU_SOURCE
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leakgate.h"
#include "lga_impl.h"
#include "lga_ops.h"
#include "lga_wire.h"

#define LGA_MARKER_MAX 511 /* bytes of a marker line sent (the parent's field holds 512) */

/* ---- sessions ----------------------------------------------------------------------------- */

/* Quiesces (the tracker's: tcache flush, purge of every arena; the device's) and snapshots
 * every view, the device's from the interposed calls. Allocates nothing. */
static void measure(struct trk_snapshot *snap)
{
    trk_quiesce(lga.trk);
    lga_cuda_quiesce();
    trk_snapshot(lga.trk, snap);
    lga_census_overhead(&snap->census_active, &snap->census_resident);
    lga_promote_measure(snap); /* the whole-session profile's 16 KiB extents (lga_promote.c) */
    struct lga_device_view dv;
    lga_cuda_view(&dv);
    snap->dev_used = dv.used;
    snap->dev_total = dv.total;
    snap->dev_process = dv.live;
}

/* Starts a generation; the caller holds lga.mu. */
static void begin_locked(void)
{
    if (lga.cfg_flags & LGA_CFG_BASELINE) { /* the baseline of a run without warm-up */
        lga.cfg_flags &= ~LGA_CFG_BASELINE;
        measure(&lga.begin_snap);
        lga.has_begin = true;
    }
    trk_reset_peaks(lga.trk);
    trk_session_begin(lga.trk);
    lga_census_begin(lga.sessions);
    lga.session_open = true;
    lga.session_t0 = lg_now();
}

/* What a session call says while the agent is not on: LEAKGATE_ELOST in the image that lost its
 * connection (so a program can tell it goes on unmeasured), LEAKGATE_OK elsewhere (a child, a
 * process outside exec: the API is a no-op there). */
static int off_status(void)
{
    return lga.lost && getpid() == lga.pid ? LEAKGATE_ELOST : LEAKGATE_OK;
}

static void end_at_exit(int status, void *arg);

int lga_session_begin(void)
{
    static bool at_exit_set; /* this image's handler for a session the program never ends */
    if (!lga_on()) return off_status();
    if (lga_tl.in_hook) return LEAKGATE_ESESSION;
    lga_tl.in_agent++;
    pthread_mutex_lock(&lga.mu);
    int rc = LEAKGATE_ESESSION;
    if (!lga.session_open) {
        begin_locked();
        rc = LEAKGATE_OK;
        /* registered at the first API begin, so it runs before the handlers of the program
         * registered earlier (and its static destructors): what they free was kept until exit */
        if (!lga.marker && !at_exit_set) at_exit_set = on_exit(end_at_exit, NULL) == 0;
    }
    pthread_mutex_unlock(&lga.mu);
    lga_tl.in_agent--;
    return rc;
}

static void put_snapshot(struct lga_enc *e, const struct trk_snapshot *s)
{
    lga_put_f64(e, s->t);
    lga_put_u32(e, s->generation);
    lga_put_u32(e, TRK_SNAPSHOT_NFIGURES);
#define PUT(field, kind) lga_put_i64(e, s->field);
    TRK_SNAPSHOT_FIGURES(PUT)
#undef PUT
}

static void put_leaks(struct lga_enc *e, const struct trk_leaks *lk)
{
    lga_put_i64(e, lk ? lk->host_bytes : 0);
    lga_put_i64(e, lk ? lk->device_bytes : 0);
    lga_put_u32(e, lk ? (uint32_t)lk->n_groups : 0);
    for (size_t i = 0; lk && i < lk->n_groups; i++) {
        const struct lg_leak_group *g = &lk->groups[i];
        lga_put_str(e, g->tag);
        lga_put_u32(e, strcmp(g->space, "device") == 0 ? TRK_DEVICE : TRK_HOST);
        lga_put_i64(e, g->bytes);
        lga_put_i64(e, g->count);
        lga_put_u32(e, (uint32_t)g->n_stacks);
        for (int k = 0; k < g->n_stacks; k++) {
            lga_put_i64(e, g->stacks[k].count);
            lga_put_str(e, g->stacks[k].frames);
        }
    }
    lga_put_u32(e, lk ? (uint32_t)lk->n_refs : 0);
    for (size_t i = 0; lk && i < lk->n_refs; i++) {
        const struct lg_ref_leak *r = &lk->refs[i];
        lga_put_str(e, r->kind);
        lga_put_str(e, r->name);
        lga_put_u32(e, (uint32_t)r->refs);
        lga_put_u32(e, (uint32_t)r->n_retains);
        for (int k = 0; k < r->n_retains; k++) {
            lga_put_str(e, r->retains[k].site);
            lga_put_u32(e, r->retains[k].generation);
            lga_put_str(e, r->retains[k].stack);
        }
    }
}

/* Dumps a heap profile into the parent's directory; path receives it ("" when not armed or
 * when the dump failed). */
static bool dump_to(const char *path);

static void dump_profile(char *path, size_t size)
{
    path[0] = '\0';
    if (!lga.prof_armed && !lga.prof_census) return;
    if (lg_snprintf(path, size, "%s/%d.%d.heap", lga.prof_dir, (int)lga.pid, lga.sessions) ||
        !dump_to(path))
        path[0] = '\0';
}

/* Writes a heap profile to path; false (said) when it could not. */
static bool dump_to(const char *path)
{
    /* made anew first (lg_out.c): jemalloc's creat() then opens this file, never a link or
     * FIFO left at the name */
    int fd;
    if (lg_out_create(&fd, path) != LG_OK) {
        lga_say("heap profile: %s", lg_errmsg());
        return false;
    }
    close(fd);
    const char *p = path;
    if (mallctl("prof.dump", NULL, NULL, &p, sizeof p) != 0) {
        lga_say("heap profile %s could not be written", path);
        return false;
    }
    return true;
}

/* Applies the parent's REPLY: heap profiling armed or not from the next session on. */
static void apply_reply(uint32_t flags)
{
    if ((flags & LGA_CFG_PROF_EXACT) && lga.prof_available && !lga.prof_census)
        lga_promote_start(lga.sessions + 1); /* before the profile reads any unwind table */
    if (flags & LGA_CFG_PROF_EXACT) lga_keep_start(lga.sessions + 1); /* the next session's */
    if ((flags & LGA_CFG_PROF_EXACT) && lga.prof_available && !lga.prof_census) {
        /* every allocation of the next session sampled: the samples so far are dropped, and
         * an empty profile dumped now is the base the parent diffs the later ones against */
        size_t lg = 0;
        bool on = true;
        lga.prof_census = mallctl("prof.reset", NULL, NULL, &lg, sizeof lg) == 0 &&
                          mallctl("prof.active", NULL, NULL, &on, sizeof on) == 0;
        lga.prof_armed = lga.prof_census;
        lga.prof_whole = lga.sessions + 1;
        /* this thread's next sample still waits for the bytes drawn at the old rate (128 KiB on
         * average): 8 MiB allocated and freed pass that, so its next allocation is sampled */
        void *skip = lga.prof_census ? mallocx((size_t)8 << 20, MALLOCX_TCACHE_NONE) : NULL;
        if (skip) dallocx(skip, MALLOCX_TCACHE_NONE);
        char base[600];
        if (lga.prof_census && !lg_snprintf(base, sizeof base, "%s/%d.%d.base.heap", lga.prof_dir,
                                            (int)lga.pid, lga.sessions))
            dump_to(base);
    }
    if (flags & (LGA_CFG_PROF_ARMED | LGA_CFG_PROF_EXACT)) atomic_store(&lga.prof_ever, true);
    bool want = (flags & LGA_CFG_PROF_ARMED) && lga.prof_available;
    if (want == lga.prof_armed) return;
    if (mallctl("prof.active", NULL, NULL, &want, sizeof want) == 0) lga.prof_armed = want;
}

/* The notes attached since the last SESSION message (and forgets them). */
static void put_notes(struct lga_enc *e)
{
    pthread_mutex_lock(&lga.note_mu);
    lga_put_u32(e, (uint32_t)lga.n_notes);
    for (int i = 0; i < lga.n_notes; i++) lga_put_str(e, lga.notes[i]);
    lga.n_notes = 0;
    pthread_mutex_unlock(&lga.note_mu);
}

/* Calls the program's session hook, if any, as the program: outside the agent's own work and
 * outside the thread's tag scopes (so what it frees goes back through the ledger and what it
 * allocates is untagged), with session begins and ends refused. The caller holds lga.mu. */
static void run_hook(void (*fn)(void *, int), void *arg)
{
    if (!fn) return;
    int in_agent = lga_tl.in_agent, depth = lga_tl.depth;
    lga_tl.in_agent = 0;
    lga_tl.depth = 0;
    lga_tl.in_hook++;
    fn(arg, lga.sessions);
    lga_tl.in_hook--;
    lga_tl.depth = depth;
    lga_tl.in_agent = in_agent;
}

/* Takes what the hook said is the measurement's own memory (leakgate_session_overhead: a
 * binding's profiler tables, in the heap since before the snapshot) out of the snapshot: out of
 * je_allocated and je_active through tracker_overhead, as the tracker's own tables, and out of
 * je_resident and rss, where those tables are resident too. */
static void take_out_overhead(struct trk_snapshot *snap)
{
    int64_t ov = atomic_exchange(&lga.hook_overhead, 0);
    if (ov <= 0) return;
    snap->tracker_overhead += ov;
    if (snap->je_resident >= ov) snap->je_resident -= ov;
    if (snap->rss >= ov) snap->rss -= ov;
}

/* The output line that ended the session, cut to LGA_MARKER_MAX bytes at a UTF-8 character's
 * start (the line is matched whole, up to 4 KiB; the parent keeps it as a label). */
static void put_marker(struct lga_enc *e, const char *marker)
{
    char cut[LGA_MARKER_MAX + 1];
    size_t n = marker ? strlen(marker) : 0;
    if (n > LGA_MARKER_MAX) {
        n = LGA_MARKER_MAX;
        while (n > 0 && ((unsigned char)marker[n] & 0xc0) == 0x80) n--;
    }
    if (n) memcpy(cut, marker, n);
    cut[n] = '\0';
    lga_put_str(e, cut);
}

/* Sends the SESSION message and waits for the REPLY; the caller holds lga.mu. at_exit: the
 * session was ended by the program's exit, not by the program. */
static int report_locked(const struct trk_snapshot *snap, const struct trk_totals *peak_host,
                         const struct trk_totals *peak_dev, const struct trk_leaks *lk,
                         const char *dump, const char *marker, double duration, bool at_exit)
{
    struct lga_enc e;
    lga_enc_init(&e, LGA_SESSION);
    lga_put_u32(&e, (uint32_t)lga.sessions);
    lga_put_f64(&e, duration);
    lga_put_u32(&e, atomic_load(&lga.used));
    put_snapshot(&e, snap);
    lga_put_i64(&e, peak_host->peak_bytes);
    lga_put_i64(&e, peak_dev->peak_bytes);
    put_leaks(&e, lk);
    lga_put_str(&e, dump);
    put_marker(&e, marker);
    lga_put_u32(&e, lga.has_begin ? 1u : 0u);
    if (lga.has_begin) put_snapshot(&e, &lga.begin_snap);
    lga.has_begin = false;
    put_notes(&e);
    lga_put_u32(&e, at_exit ? LGA_SESSION_AT_EXIT : 0u);
    lga_census_put(&e);
    lga_keep_put(&e, lga.sessions);
    struct lga_dec d;
    int rc = lga_call(lga.fd, &e, LGA_REPLY, &d);
    if (rc != LG_OK) return rc;
    uint32_t flags = lga_get_u32(&d);
    bool bad = d.bad;
    free((void *)d.p);
    if (bad) return LG_EFORMAT;
    apply_reply(flags);
    return LG_OK;
}

static int end_session(const char *marker, bool at_exit)
{
    if (!lga_on()) return off_status();
    if (lga_tl.in_hook) return LEAKGATE_ESESSION; /* a marker the hook wrote ends nothing */
    lga_tl.in_agent++;
    pthread_mutex_lock(&lga.mu);
    int rc = LEAKGATE_ESESSION;
    if (!lga.session_open) goto out;
    struct trk_totals host, dev;
    trk_totals(lga.trk, TRK_HOST, &host);
    trk_totals(lga.trk, TRK_DEVICE, &dev);
    /* the program's runtime settles first (the Python binding: its cyclic garbage): what it
     * frees is no keep of the session's */
    run_hook(atomic_load(&lga.settle), atomic_load(&lga.settle_arg));
    double duration = lg_now() - lga.session_t0;

    /* measure before the agent allocates anything for the report */
    struct trk_snapshot snap;
    lga_census_end(); /* what the agent allocates from here on is no session's */
    lga_keep_stop();
    measure(&snap);

    struct trk_leaks *lk = NULL;
    trk_session_end(lga.trk, &lk); /* LG_EBUSY (something left) is a finding, not a failure */
    char dump[600];
    dump_profile(dump, sizeof dump);
    /* the session profiled whole ends here, not at the parent's reply: sampled, what the hook
     * allocates next would be kept in 16 KiB extents that no correction knows (docs/realworld.md,
     * finding 10), counted in the next session */
    if (lga.prof_census && lga.sessions == lga.prof_whole && lga.prof_armed) {
        bool off = false;
        if (mallctl("prof.active", NULL, NULL, &off, sizeof off) == 0) lga.prof_armed = false;
    }
    run_hook(atomic_load(&lga.hook), atomic_load(&lga.hook_arg)); /* after the measurement and the
                                                                    dump: its memory is in
                                                                    neither */
    take_out_overhead(&snap);
    int wrc = report_locked(&snap, &host, &dev, lk, dump, marker, duration, at_exit);
    trk_leaks_free(lk);
    lga.session_open = false;
    lga.sessions++;
    if (wrc != LG_OK) {
        lga_say("leakgate is gone (%s); the program goes on unmeasured", lg_status_name(wrc));
        lga.lost = true;
        lga_go_inert();
        rc = LEAKGATE_ELOST;
        goto out;
    }
    rc = LEAKGATE_OK;
    if (lga.marker) begin_locked(); /* output lines mark sessions back to back */
out:
    pthread_mutex_unlock(&lga.mu);
    lga_tl.in_agent--;
    return rc;
}

int lga_session_end(const char *marker) { return end_session(marker, false); }

/* At the program's successful exit (exit(0) or a return 0 from main; not _exit, not a signal),
 * an API session still open is ended and measured there: what the program kept in it is what it
 * kept, and leaving without leakgate_session_end() must not leave it unjudged. A failing exit is
 * a failed run (exit 4), told with its session begun and never ended. Not in marker mode, where
 * the lines after the last marker are no session. */
static void end_at_exit(int status, void *arg)
{
    (void)arg;
    if (status != 0 || !lga_on() || getpid() != lga.pid || lga.marker) return;
    end_session(NULL, true); /* LEAKGATE_ESESSION when none is open: nothing to do */
}

/* ---- the API table ----------------------------------------------------------------------------
 */

static int api_active(void) { return lga_on(); }

/* In marker mode the output lines mark sessions; the API's session calls do nothing. */
static int api_session_begin(void) { return lga.marker ? LEAKGATE_OK : lga_session_begin(); }
static int api_session_end(void) { return lga.marker ? LEAKGATE_OK : lga_session_end(NULL); }

static int api_tag_push(const char *name)
{
    if (!lga_on()) return LEAKGATE_OK; /* a no-op where the agent is not on, as outside exec */
    if (!name || !name[0]) return LEAKGATE_EINVAL; /* "" would read as untagged memory */
    int d = lga_tl.depth++;
    if (d < LGA_MAX_TAG_DEPTH) lg_strlcpy(lga_tl.tags[d], name, LG_MAX_NAME);
    return LEAKGATE_OK;
}

static int api_tag_pop(void)
{
    if (!lga_on()) return LEAKGATE_OK;
    if (lga_tl.depth == 0) return LEAKGATE_EINVAL;
    lga_tl.depth--;
    return LEAKGATE_OK;
}

/* Sites name static strings of the program (the macros pass __FILE__ and __func__); a binding
 * that passes strings it frees again keeps them alive itself. */
static struct trk_site site(const char *file, int line, const char *func)
{
    return (struct trk_site){file ? file : "?", line, func ? func : "?"};
}

static int api_track(const void *obj, const char *kind, const char *name, const void *holder,
                     const char *file, int line, const char *func)
{
    if (!lga_on()) return LEAKGATE_OK;
    if (!obj) return LEAKGATE_EINVAL;
    lga_tl.in_agent++;
    trk_ref_track(lga.trk, obj, kind, name, holder, site(file, line, func));
    lga_use(LGA_USED_REFS);
    lga_tl.in_agent--;
    return LEAKGATE_OK;
}

/* A retain or a release (op) by holder at the caller's site. */
static int ref_op(void (*op)(struct trk_tracker *, const void *, const void *, struct trk_site),
                  const void *obj, const void *holder, const char *file, int line, const char *func)
{
    if (!lga_on()) return LEAKGATE_OK;
    lga_tl.in_agent++;
    op(lga.trk, obj, holder, site(file, line, func));
    lga_use(LGA_USED_REFS);
    lga_tl.in_agent--;
    return LEAKGATE_OK;
}

static int api_retain(const void *obj, const void *holder, const char *file, int line,
                      const char *func)
{
    return ref_op(trk_ref_retain, obj, holder, file, line, func);
}

static int api_release(const void *obj, const void *holder, const char *file, int line,
                       const char *func)
{
    return ref_op(trk_ref_release, obj, holder, file, line, func);
}

static int api_untrack(const void *obj, const char *file, int line, const char *func)
{
    if (!lga_on()) return LEAKGATE_OK;
    lga_tl.in_agent++;
    trk_ref_untrack(lga.trk, obj, site(file, line, func));
    lga_tl.in_agent--;
    return LEAKGATE_OK;
}

static int api_session_note(const char *text)
{
    if (!lga_on()) return LEAKGATE_OK;
    if (!text) return LEAKGATE_EINVAL;
    pthread_mutex_lock(&lga.note_mu);
    if (lga.n_notes < LEAKGATE_NOTES_MAX)
        lg_strlcpy(lga.notes[lga.n_notes++], text, LEAKGATE_NOTE_MAX);
    pthread_mutex_unlock(&lga.note_mu);
    return LEAKGATE_OK;
}

static int api_set_session_hook(void (*fn)(void *arg, int index), void *arg)
{
    if (!lga_on()) return LEAKGATE_OK;
    atomic_store(&lga.hook, NULL); /* never a new function with the old argument */
    atomic_store(&lga.hook_arg, arg);
    atomic_store(&lga.hook, fn);
    return LEAKGATE_OK;
}

static int api_set_settle_hook(void (*fn)(void *arg, int index), void *arg)
{
    if (!lga_on()) return LEAKGATE_OK;
    atomic_store(&lga.settle, NULL);
    atomic_store(&lga.settle_arg, arg);
    atomic_store(&lga.settle, fn);
    return LEAKGATE_OK;
}

/* 1 once the parent armed heap profiling in this process (--stacks, a channel's leak, the
 * census's kept blocks), from the session it armed it for on: a binding arms its own too. */
static int api_profiling_armed(void)
{
    return lga_on() && (atomic_load(&lga.prof_ever) || (lga.cfg_flags & LGA_CFG_PROF_ARMED));
}

static int api_session_overhead(long long bytes)
{
    if (!lga_on()) return LEAKGATE_OK;
    if (bytes < 0) return LEAKGATE_EINVAL;
    atomic_store(&lga.hook_overhead, (int64_t)bytes);
    return LEAKGATE_OK;
}

__attribute__((visibility("default"))) const struct lga_ops lga_agent_ops = {
    .version = LEAKGATE_API_VERSION,
    .size = sizeof(struct lga_ops),
    .active = api_active,
    .session_begin = api_session_begin,
    .session_end = api_session_end,
    .tag_push = api_tag_push,
    .tag_pop = api_tag_pop,
    .track = api_track,
    .retain = api_retain,
    .release = api_release,
    .untrack = api_untrack,
    .session_note = api_session_note,
    .set_session_hook = api_set_session_hook,
    .set_settle_hook = api_set_settle_hook,
    /* a binding's own attribution: armed with exec's profiling, its tables taken out */
    .profiling_armed = api_profiling_armed,
    .session_overhead = api_session_overhead,
};
