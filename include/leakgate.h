/* leakgate.h — gate your own program with leakgate: sessions, tag scopes and the owners of shared
 * objects, from C, C++ or anything that calls C. A small stable ABI (LEAKGATE_API_VERSION).
 *
 * Worked example (a trainer that runs several sessions in one process):
 *
 *   #include <leakgate.h>
 *
 *   for (int epoch = 0; epoch < 20; epoch++) {
 *       leakgate_session_begin();                 // a generation starts
 *       leakgate_tag_push("model");               // this thread's allocations are tagged "model"
 *       struct model *m = model_new();
 *       leakgate_tag_pop();
 *       LEAKGATE_TRACK(m->params, "params", "model.params", m);  // born holding m's reference
 *       struct trainer *t = trainer_new(m);
 *       LEAKGATE_RETAIN(m->params, t);            // the trainer takes its own reference...
 *       train(t);
 *       trainer_free(t);                          // ...and (the bug) never releases it
 *       model_free(m);
 *       leakgate_session_end();                   // quiesce, snapshot, report; 0 on success
 *   }
 *
 * Build: cc trainer.c $(pkg-config --cflags --libs leakgate), or in CMake
 * find_package(leakgate) and target_link_libraries(trainer PRIVATE leakgate::leakgate).
 * Run:   leakgate exec --warmup 1 -- ./trainer       (verdict, results.jsonl and reports)
 *
 * Outside `leakgate exec` the program runs unchanged: every call below is a no-op that costs
 * one predictable branch, and the library adds no allocator of its own. Under exec, the
 * functions reach leakgate's agent (preloaded by exec) and:
 *   - leakgate_session_end() quiesces the allocator, snapshots every memory view, sends the
 *     session to leakgate and waits for it: the calling thread does not run ahead;
 *   - allocations made between leakgate_tag_push(name) and leakgate_tag_pop() on the same
 *     thread (malloc, calloc, realloc, C++ new, posix_memalign...) are tagged `name`: a tagged
 *     allocation born in a session and alive at its end is an exact leak, reported by tag;
 *   - leakgate_track / retain / release name who holds a shared object, so an object alive at
 *     a session's end is reported with the retains nobody released and where they were taken.
 * The functions are thread-safe; tag scopes are per thread. Names are copied.
 *
 * Return values: LEAKGATE_OK (0) on success and for every call outside exec; otherwise one of
 * the LEAKGATE_E* codes below. The version of this header is LEAKGATE_API_VERSION; the
 * library's is leakgate_api_version() (the major numbers must match).
 */
#ifndef LEAKGATE_H
#define LEAKGATE_H

#ifdef __cplusplus
extern "C" {
#endif

#define LEAKGATE_API_VERSION 1 /* bumped when a function changes meaning or signature */

/* What a call returns, one row each: X(NAME, value, what it means). The enum and
 * leakgate_strerror come from it; the bindings ask leakgate_strerror for the words. */
#define LEAKGATE_STATUS_MAP(X)                                                                     \
    X(OK, 0, "ok")                                                                                 \
    X(ESESSION, 1, "session_begin while one is open, or session_end with none")                    \
    X(ELOST, 2, "the connection to leakgate is gone: every later session call says so")            \
    X(EINVAL, 3, "a NULL or empty name, or tag_pop with no scope open")

enum leakgate_status {
#define LEAKGATE_X_ENUM(name, value, text) LEAKGATE_##name = value,
    LEAKGATE_STATUS_MAP(LEAKGATE_X_ENUM)
#undef LEAKGATE_X_ENUM
};

/* The words for a status ("the connection to leakgate is gone: ..."); "unknown status" for a
 * value not in the list. Static storage. */
const char *leakgate_strerror(int status);

/* The library's LEAKGATE_API_VERSION. */
int leakgate_api_version(void);
/* 1 when this process runs under `leakgate exec` (the agent is loaded and connected), else 0. */
int leakgate_active(void);

/* Starts a session: allocations and retains from now on are born in it. */
int leakgate_session_begin(void);
/* Ends the session: measures, reports to leakgate and returns when leakgate has taken it. */
int leakgate_session_end(void);

/* Tags this thread's allocations with `name` until the matching pop (scopes nest; the
 * innermost name wins). Names longer than 95 bytes are truncated; NULL or "" is
 * LEAKGATE_EINVAL under exec (no scope is pushed). */
int leakgate_tag_push(const char *name);
int leakgate_tag_pop(void);

/* The ledger of shared objects. `holder` is any pointer that identifies an owner (the struct
 * that keeps the reference); `file`, `line` and `func` say where (the macros fill them in).
 * track: obj is born holding one reference, owned by holder; kind ("varmap") and name
 * ("model.params") label it in reports. untrack: obj was destroyed. The upper-case macros
 * fill in the site; file and func are kept, not copied, so they must stay valid while the
 * object is tracked (string literals, as the macros pass, always are). */
int leakgate_track(const void *obj, const char *kind, const char *name, const void *holder,
                   const char *file, int line, const char *func);
int leakgate_retain(const void *obj, const void *holder, const char *file, int line,
                    const char *func);
int leakgate_release(const void *obj, const void *holder, const char *file, int line,
                     const char *func);
int leakgate_untrack(const void *obj, const char *file, int line, const char *func);

/* Notes: a program's own attribution, carried beside leakgate's. A note is a line of text
 * (copied; at most LEAKGATE_NOTE_MAX bytes kept, LEAKGATE_NOTES_MAX notes a session) attached
 * to the session the next session end reports, written in its results line ("notes") and
 * printed with the verdict. The Python binding attaches its tracemalloc lines this way. */
#define LEAKGATE_NOTE_MAX  1024
#define LEAKGATE_NOTES_MAX 32
int leakgate_session_note(const char *text);

/* A function called at every session end (API or output marker), in the thread ending it,
 * after the session was measured and before it is reported: what it allocates is not in the
 * session's figures, and the notes it attaches belong to the session. `index` counts the
 * process's sessions from 0. It must not begin or end a session (LEAKGATE_ESESSION) and should
 * not write output (a marker written from it ends nothing). One hook per process; NULL
 * removes it. Outside exec it is never called. */
typedef void (*leakgate_session_hook)(void *arg, int index);
int leakgate_set_session_hook(leakgate_session_hook fn, void *arg);

/* A function called at every session end (API or output marker), in the thread ending it,
 * *before* the session is measured: a runtime settles what it holds only until its next
 * collection, so that garbage is not judged as kept (the Python binding runs its cyclic
 * collector and drops PyTorch's cache entries of dead shared storages). What it frees or
 * allocates is the session's. The rules of the session hook hold (no session calls, no
 * output). One per process; NULL removes it; outside exec it is never called. */
int leakgate_set_settle_hook(leakgate_session_hook fn, void *arg);

/* 1 once leakgate exec has armed heap profiling in this process — --stacks, a channel proven to
 * leak, or the census's kept blocks — and from then on; 0 before, and outside exec. A binding
 * arms its own attribution with it (the Python binding starts tracemalloc). */
int leakgate_profiling_armed(void);

/* From the session hook: `bytes` of the process's memory at the measurement are the
 * measurement's own (a binding's profiler tables, as tracemalloc's), not the program's. They
 * are taken out of the session being ended: out of je_allocated and je_active, as the agent's
 * own tables are, and out of je_resident and rss. Say it in a note too. LEAKGATE_EINVAL when
 * negative. */
int leakgate_session_overhead(long long bytes);

#define LEAKGATE_TRACK(obj, kind, name, holder)                                                    \
    leakgate_track((obj), (kind), (name), (holder), __FILE__, __LINE__, __func__)
#define LEAKGATE_RETAIN(obj, holder) leakgate_retain((obj), (holder), __FILE__, __LINE__, __func__)
#define LEAKGATE_RELEASE(obj, holder)                                                              \
    leakgate_release((obj), (holder), __FILE__, __LINE__, __func__)
#define LEAKGATE_UNTRACK(obj) leakgate_untrack((obj), __FILE__, __LINE__, __func__)

#ifdef __cplusplus
}
#endif

#endif
