/* lga_impl.h — the agent's private parts (libleakgate-agent.so, preloaded by leakgate exec).
 *
 * The agent lives inside the user's program. It is active only in the process leakgate exec
 * started (LEAKGATE_AGENT_PID names it; children and grandchildren, forked or exec'd, find
 * another pid and stay inert), and only once the parent answered its HELLO. Until then, and in
 * every inert process, the allocator wrappers go straight to jemalloc.
 *
 * Threads: a thread-local depth `in_agent` marks the agent's own work (the tracker, session
 * ends, encoding): allocations made there are never tagged and never re-enter the tracker.
 */
#ifndef LGA_IMPL_H
#define LGA_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "leakgate.h"
#include "lga_wire.h"
#include "tracking.h"

#define LGA_TLS           __attribute__((tls_model("initial-exec")))
#define LGA_MAX_TAG_DEPTH 32

enum lga_state {
    LGA_OFF = 0,   /* not (yet) connected: plain jemalloc */
    LGA_ON = 1,    /* connected: tag scopes, sessions */
    LGA_INERT = 2, /* a child, or the parent went away: plain jemalloc, API no-ops */
};

struct lga_agent {
    _Atomic int state;
    int fd; /* the socket to leakgate exec */
    pid_t pid;
    struct trk_tracker *trk;
    uint32_t cfg_flags; /* LGA_CFG_* from the parent */
    char prof_dir[512]; /* where heap profiles are dumped */
    bool prof_available, prof_armed;
    bool prof_census;   /* the census's naming: one session profiled whole, dumps at every end */
    int prof_whole;     /* that session (its index in lga.sessions), -1 before */
    pthread_mutex_t mu; /* sessions and the socket */
    bool session_open;
    bool lost; /* this image lost its connection: session calls say LEAKGATE_ELOST from then on */
    int sessions; /* sessions ended in this process image */
    double session_t0;
    _Atomic uint32_t used;       /* LGA_USED_* seen so far */
    _Atomic int64_t tagged_live; /* live tagged host allocations: free() skips the ledger at 0 */
    bool marker;                 /* sessions end at output lines (--session-marker) */
    bool has_begin;              /* begin_snap holds the open session's begin (LGA_CFG_BASELINE) */
    struct trk_snapshot begin_snap;
    /* leakgate_session_note: lines for the next SESSION message, in static storage (a note
     * allocates nothing), under their own lock (a hook adds them while mu is held) */
    pthread_mutex_t note_mu;
    int n_notes;
    char notes[LEAKGATE_NOTES_MAX][LEAKGATE_NOTE_MAX];
    /* leakgate_set_session_hook */
    void (*_Atomic hook)(void *arg, int index);
    void *_Atomic hook_arg;
    /* leakgate_set_settle_hook: the same, called before the measurement */
    void (*_Atomic settle)(void *arg, int index);
    void *_Atomic settle_arg;
    /* leakgate_profiling_armed: a REPLY armed heap profiling once (sticky) */
    _Atomic bool prof_ever;
    /* leakgate_session_overhead: bytes the hook said are the measurement's own (a binding's
     * profiler tables), taken out of the snapshot of the session it ends */
    _Atomic int64_t hook_overhead;
};
extern struct lga_agent lga;

struct lga_thread {
    int in_agent; /* > 0 inside the agent's own work */
    int depth;    /* open tag scopes */
    int in_hook;  /* > 0 inside the session hook: no session may begin or end */
    char tags[LGA_MAX_TAG_DEPTH][LG_MAX_NAME];
};
extern __thread struct lga_thread lga_tl LGA_TLS;

static inline bool lga_on(void)
{
    return atomic_load_explicit(&lga.state, memory_order_relaxed) == LGA_ON;
}
/* The tag this thread's next allocation gets, or NULL (no scope, or the agent's own work). */
static inline const char *lga_current_tag(void)
{
    if (__builtin_expect(lga_tl.depth == 0, 1) || lga_tl.in_agent || !lga_on()) return NULL;
    int d = lga_tl.depth < LGA_MAX_TAG_DEPTH ? lga_tl.depth : LGA_MAX_TAG_DEPTH;
    return lga_tl.tags[d - 1];
}
static inline void lga_use(uint32_t what)
{
    if (!(atomic_load_explicit(&lga.used, memory_order_relaxed) & what))
        atomic_fetch_or(&lga.used, what);
}

/* lga_init.c */
/* Writes a line to the real stderr (no stdio, no allocation): "leakgate agent: ...". */
void lga_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Marks the agent inert (the parent went away, or this is a child). */
void lga_go_inert(void);

/* lga_session.c: the API behind lga_agent_ops, and the session end shared with the marker. */
int lga_session_begin(void);
/* Ends the open session (quiesce, snapshot, report, wait for the parent). `marker` is the
 * output line that ended it, or NULL for an API call. */
int lga_session_end(const char *marker);

/* lga_marker.c */
int lga_marker_init(const char *regex); /* LG_OK, or LG_EINVAL with a message */

/* lga_census.c: an arena per session (the exact census under exec). */
#define LGA_CENSUS_SLOTS LGA_CENSUS_MAX_SLOTS
/* The flags every untagged allocation of the program adds: MALLOCX_ARENA(the open session's
 * arena) | MALLOCX_TCACHE_NONE, or 0 (no session open, census off, or capped). */
extern _Atomic int lga_census_flags;
static inline int lga_census_now(void)
{
    return __builtin_expect(lga_tl.in_agent != 0, 0)
               ? 0
               : atomic_load_explicit(&lga_census_flags, memory_order_relaxed);
}
/* Once, before the first session: on when jemalloc has stats and no thread caches. */
void lga_census_init(void);
/* A session begins (its arena: a free one of the pool, or a new one) or ends; lga.mu held. */
void lga_census_begin(int session);
void lga_census_end(void);
struct lga_enc;
/* The pages the census's arenas hold beyond their blocks (active, resident), read after the
 * snapshot's epoch: taken out of the page channels as the tracker's own tables are. */
void lga_census_overhead(int64_t *active, int64_t *resident);
/* The census into a SESSION message (lga_wire.h); lga.mu held, after the snapshot. */
void lga_census_put(struct lga_enc *e);

/* lga_big.c: the stacks of big blocks, from birth (named in the census). */
#define LGA_BIG_MIN ((size_t)256 << 10) /* the smallest block whose stack is taken at birth */
extern _Atomic int lga_big_live;
void lga_big_init(void);           /* before the first session, with the census */
void lga_big_session(int session); /* the counted session open now, -1 none */
void lga_big_note(void *p, size_t n);
void lga_big_forget(void *p);
void lga_big_resized(void *p, size_t n);
void lga_big_put(struct lga_enc *e, int born);
/* Calls fn on every live big block, with its stack; the table's lock is held (fn must not
 * allocate a big block). */
void lga_big_each(void (*fn)(void *ctx, void *p, size_t n, void *const *frames, int depth),
                  void *ctx);

/* lga_keep.c: who keeps the census's kept blocks (retention paths, issue 41). */
extern _Atomic int lga_keep_live;
void lga_keep_start(int session); /* record every block of this session (PROF_EXACT's) */
void lga_keep_stop(void);         /* at its end */
bool lga_keep_recording(void);
void lga_keep_note(void *p, size_t n);
void lga_keep_forget(void *p);
void lga_keep_resized(void *p, size_t n); /* grown or shrunk in place */
/* The retention paths into the SESSION message of session `ending` (once, after the recorded). */
void lga_keep_put(struct lga_enc *e, int ending);
/* Calls fn on every block still recorded (lock-free, as a free looks); returns the recorded
 * session's index, or -1 when nothing was ever recorded. */
int lga_keep_each(void (*fn)(void *ctx, void *p, size_t n), void *ctx);
/* The table's own bytes, resident whole once recording starts (in RSS, not the program's). */
int64_t lga_keep_resident(void);

/* lga_promote.c: the whole-session profile's promotion of small blocks, taken back out. */
/* The profile of session `session` is armed now: its file-backed pages are counted from here. */
void lga_promote_start(int session);
/* Fills snap's prof_promoted and prof_promoted_rss from the recorded blocks still live; after
 * the snapshot, lga.mu held. */
void lga_promote_measure(struct trk_snapshot *snap);
/* What the latest measurement counted beyond the blocks of the census session `born` (its
 * prof_promoted when born is the recorded session, else 0). */
int64_t lga_promote_census(int born);

/* lga_cuda.c: device allocations made through the interposed runtime and driver calls. */
struct lga_device_view {
    int64_t live;        /* bytes live through the interposed calls; -1 before any */
    int64_t used, total; /* the driver's used and total bytes; -1 when it cannot be read */
};
/* Waits for the device and trims the stream-ordered pool, when the program used the device. */
void lga_cuda_quiesce(void);
void lga_cuda_view(struct lga_device_view *v);

#endif
