/* tracking.h — the instrumented allocator: tagged host and device memory, session
 * generations, a reference ledger for shared objects, and snapshots of every memory view.
 *
 * Worked example (a session that forgets one tensor):
 *
 *   struct trk_tracker *trk;
 *   if (trk_tracker_new(&trk, &(struct trk_options){ .stacks = true }) != LG_OK)
 *       die(lg_errmsg());
 *   trk_session_begin(trk);                                  // generation 1
 *   float *w = trk_alloc(trk, 1024 * sizeof(float), "varmap/out.weight");
 *   float *m = trk_alloc(trk, 1024 * sizeof(float), "adam.m/out.weight");
 *   trk_free(trk, w);                                        // m is forgotten
 *   struct trk_leaks *lk = NULL;
 *   if (trk_session_end(trk, &lk) == LG_EBUSY)               // like uv_loop_close: refuses
 *       trk_leaks_print(lk, stderr);  // "adam.m/out.weight  4.0 KiB  1 alloc  gen 1" + stack
 *   trk_leaks_free(lk);
 *   trk_free(trk, m);
 *   trk_tracker_free(trk);                                   // frees what is left, and says so
 *
 * Tags are the tensor's own name with a class prefix (varmap/, grad/, adam.m/, adam.v/, act/,
 * int8/, ckpt/, data/, ...), so a leak report speaks the model's words. The class is the part
 * before the first '/'.
 *
 * Host memory comes from a dedicated jemalloc arena (mallocx with MALLOCX_ARENA, 64-byte
 * aligned), so the model's memory is separable from everything else the process allocates.
 * Device memory goes through a backend the CUDA part registers (trk_cuda_attach).
 * All functions are thread-safe unless they say otherwise.
 */
#ifndef LG_TRACKING_H
#define LG_TRACKING_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lg_base.h"
#include "lg_leaks.h"

struct trk_tracker;

enum trk_space { TRK_HOST = 0, TRK_DEVICE = 1, TRK_NSPACES = 2 };

struct trk_options {
    bool stacks;     /* capture a call stack per allocation and per retain (costly) */
    int stack_depth; /* frames to keep; 0 means 16 */
    bool no_arena;   /* use jemalloc's default arenas instead of a dedicated one */
    bool raw_stacks; /* stack texts are return addresses ("0x7f3a2b1c4d5e", one a line), to be
                        symbolised by another process (leakgate exec's parent) */
};

/* Creates a tracker; *out is freed with trk_tracker_free. */
int trk_tracker_new(struct trk_tracker **out, const struct trk_options *opt);
/* Frees the tracker. Allocations still live are freed and counted in the return value
 * (the number of allocations that were still live); NULL does nothing and returns 0. */
size_t trk_tracker_free(struct trk_tracker *trk);

/* ---- host allocations ------------------------------------------------------------ */

/* Allocates `size` bytes (64-byte aligned) tagged `tag`; the caller frees with trk_free.
 * Returns NULL and records LG_ENOMEM on failure. size 0 is allowed and returns a unique
 * pointer. Tags longer than LG_MAX_NAME-1 are truncated. */
void *trk_alloc(struct trk_tracker *trk, size_t size, const char *tag);
/* As trk_alloc, zero-filled. */
void *trk_calloc(struct trk_tracker *trk, size_t size, const char *tag);
/* As trk_alloc with a printf-formatted tag. */
void *trk_allocf(struct trk_tracker *trk, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Frees memory from trk_alloc. NULL does nothing. A pointer the tracker does not know
 * (never allocated, or already freed) is recorded as an invalid free, with its stack when
 * stacks are on, and left alone: never a crash. */
void trk_free(struct trk_tracker *trk, void *p);
/* Usable size and tag of a live allocation; 0 / NULL when unknown. */
size_t trk_size_of(struct trk_tracker *trk, const void *p);
/* Copies the tag of a live allocation into buf; returns false when p is unknown. */
bool trk_tag_of(struct trk_tracker *trk, const void *p, char *buf, size_t size);

/* For a malloc interposer that sees every free of the process (leakgate's exec agent): frees p
 * and returns true when p is a live host allocation of trk; returns false, recording nothing,
 * when it is not (the caller then hands p to its own allocator). */
bool trk_free_if_owned(struct trk_tracker *trk, void *p);
/* Tags resolved once. A caller that allocates under the same names over and over (a training
 * step's activations) may turn a name into its tag id once and allocate under the id, skipping
 * the hash and lookup of the name that trk_alloc does on every call:
 *
 *   uint32_t id = trk_tag_id(trk, "act/enc.fc1");           // once; TRK_NO_TAG if out of memory
 *   float *y = trk_alloc_id(trk, n * sizeof(float), id);     // as trk_alloc(.., "act/enc.fc1")
 *
 * An id stays valid for the tracker's life; trk_tag_is checks that a remembered id still names
 * what the caller is about to allocate. */
#define TRK_NO_TAG UINT32_MAX
uint32_t trk_tag_id(struct trk_tracker *trk, const char *name); /* NULL or "": "untagged" */
bool trk_tag_is(struct trk_tracker *trk, uint32_t id, const char *name);
void *trk_alloc_id(struct trk_tracker *trk, size_t size, uint32_t id);
/* As trk_alloc with a larger alignment (a power of two; at least 64 is used). */
void *trk_alloc_aligned(struct trk_tracker *trk, size_t size, size_t align, const char *tag);

/* Functions of a wrapper that calls the tracker's allocation functions for its caller (a malloc
 * interposer) may be put in the tracker's text section, so that captured stacks start at the
 * wrapper's caller: `TRK_WRAPPER void *malloc(size_t n) { ... }`. */
#define TRK_WRAPPER __attribute__((noinline, section("lg_trk_text")))

/* ---- device allocations (through a backend; see trk_cuda.h) --------------------- */

struct trk_device_backend {
    const char *name;                                 /* "cuda" */
    int (*alloc)(void *ctx, void **out, size_t size); /* LG_OK or an lg status */
    void (*free)(void *ctx, void *p);
    /* quiesce: wait for the device; LG_OK, or an lg status (lg_fail's message set) naming
     * the device fault the wait found, so it is charged to the work before it */
    int (*sync)(void *ctx);
    /* driver view: used and total device bytes, and this process's bytes (-1 if n/a) */
    void (*usage)(void *ctx, int64_t *used, int64_t *total, int64_t *process);
    void *ctx;
};
/* Registers the device backend (one per tracker; NULL detaches). Not thread-safe against
 * concurrent device allocations. */
void trk_set_device_backend(struct trk_tracker *trk, const struct trk_device_backend *be);
bool trk_has_device(const struct trk_tracker *trk);
/* Device memory tagged like host memory; NULL + LG_EUNAVAIL when no backend. */
void *trk_dev_alloc(struct trk_tracker *trk, size_t size, const char *tag);
void trk_dev_free(struct trk_tracker *trk, void *p);
/* Records a device allocation made by someone else (an interposed cudaMalloc) as tagged device
 * memory born in the current generation; the tracker never frees it (no backend needed).
 * LG_ENOMEM when the ledger cannot grow. */
int trk_dev_adopt(struct trk_tracker *trk, void *p, size_t size, const char *tag);
/* Removes an adopted (or backend) device allocation from the ledger without freeing it; false,
 * recording nothing, when p is not a live device allocation of trk. */
bool trk_dev_forget(struct trk_tracker *trk, void *p);

/* ---- per-tag accounting --------------------------------------------------------- */

struct trk_tag_stat {
    char tag[LG_MAX_NAME];
    enum trk_space space;
    int64_t live_bytes, live_count;   /* now */
    int64_t peak_bytes;               /* highest live_bytes seen */
    int64_t total_bytes, total_count; /* ever allocated */
};

/* Totals over all tags of one space, now. */
struct trk_totals {
    int64_t live_bytes, live_count, peak_bytes, total_bytes, total_count;
};
void trk_totals(struct trk_tracker *trk, enum trk_space space, struct trk_totals *out);
/* Resets the peak of every tag and of the totals to the current live bytes. */
void trk_reset_peaks(struct trk_tracker *trk);
/* Copies every tag's stats (tags with nothing ever allocated are not listed) into a new
 * array; *out is freed by the caller with free(). Returns the count. */
size_t trk_tag_stats(struct trk_tracker *trk, struct trk_tag_stat **out);

/* Live and peak bytes of a tag class (lg_tag_class: "act" for "act/enc.matmul") over all its
 * tags, in one space. The peak is the class's own high-water mark since trk_reset_peaks, not
 * the sum of its tags' peaks. */
struct trk_class_stat {
    char cls[LG_MAX_CLASS];
    enum trk_space space;
    int64_t live_bytes, peak_bytes;
};
#define TRK_MAX_CLASSES     64 /* classes counted apart; the rest count as "(other)" */
#define TRK_MAX_CLASS_STATS (TRK_MAX_CLASSES * TRK_NSPACES) /* every class in every space */
/* Copies at most cap entries (classes with no live or peak bytes left out) into out; allocates
 * nothing, so it may be read before a snapshot. Returns the count. */
size_t trk_class_stats(struct trk_tracker *trk, struct trk_class_stat *out, size_t cap);

/* The bytes jemalloc counts (stats.allocated) for a tracked host allocation of size bytes: its
 * size class at the tracker's alignment; size itself in a build without jemalloc. */
size_t trk_usable_size(size_t size);

/* ---- session generations ---------------------------------------------------------- */

/* Starts a new generation; allocations and retains made from now on are born in it.
 * Returns the generation number (1, 2, ...). Generation 0 is "outside any session". */
uint32_t trk_session_begin(struct trk_tracker *trk);
uint32_t trk_generation(const struct trk_tracker *trk);

/* What a generation left alive is described by lg_leaks.h's structs (one data model for the
 * tracker, the results and every report): groups by tag and space, largest first, with up to
 * LG_MAX_GROUP_STACKS distinct stacks each; shared objects with their unreleased retains. */
struct trk_leaks {
    uint32_t generation;
    int64_t host_bytes, host_count, device_bytes, device_count;
    size_t n_groups;              /* sorted by bytes, largest first */
    struct lg_leak_group *groups; /* the caller may take the arrays (and zero them) */
    size_t n_refs;
    struct lg_ref_leak *refs;
    size_t n_invalid_frees; /* invalid frees recorded during the generation */
};

/* Ends the current generation and sets the tracker back to generation 0.
 * Returns LG_OK when nothing born in it is still live, LG_EBUSY when something is; in both
 * cases *out (if out is non-NULL) receives the report, freed with trk_leaks_free.
 * LG_EINVAL when no session is open. */
int trk_session_end(struct trk_tracker *trk, struct trk_leaks **out);
/* The same report for any generation without ending it (gen 0: allocations made outside
 * sessions). *out is freed with trk_leaks_free. */
int trk_leaks_of(struct trk_tracker *trk, uint32_t generation, struct trk_leaks **out);
void trk_leaks_free(struct trk_leaks *lk);
/* Prints a report: groups largest first with stacks, then objects and their retain sites. */
void trk_leaks_print(const struct trk_leaks *lk, FILE *f, int max_groups);

/* ---- the reference ledger --------------------------------------------------------- */

/* Where a retain or release happened: TRK_HERE fills it in. */
struct trk_site {
    const char *file;
    int line;
    const char *func;
};
#define TRK_HERE ((struct trk_site){__FILE__, __LINE__, __func__})

/* Starts tracking a shared object that is born holding one reference, owned by `holder`
 * (any pointer that identifies the owner, e.g. the model struct). */
void trk_ref_track(struct trk_tracker *trk, const void *obj, const char *kind, const char *name,
                   const void *holder, struct trk_site site);
/* Records that `holder` took a reference at `site`. */
void trk_ref_retain(struct trk_tracker *trk, const void *obj, const void *holder,
                    struct trk_site site);
/* Records that `holder` dropped its reference; it matches the holder's most recent retain.
 * A release by a holder with no outstanding retain is recorded as an invalid release. */
void trk_ref_release(struct trk_tracker *trk, const void *obj, const void *holder,
                     struct trk_site site);
/* Stops tracking the object (it was destroyed). Retains still outstanding are recorded as
 * errors (destroyed while held). */
void trk_ref_untrack(struct trk_tracker *trk, const void *obj, struct trk_site site);

/* ---- errors the tracker saw (invalid frees and releases) ----------------------------- */

struct trk_error {
    char what[200]; /* "free of unknown pointer 0x...", "double free of ... (tag x)" */
    char *stack;    /* symbolised, or NULL */
};
size_t trk_error_count(struct trk_tracker *trk);
/* Copies the recorded errors (at most the 64 most recent) into *out; the caller frees them
 * with trk_errors_free. Returns the count copied. */
size_t trk_errors(struct trk_tracker *trk, struct trk_error **out);
void trk_errors_free(struct trk_error *e, size_t n);

/* ---- snapshots of every memory view ------------------------------------------------ */

/* The snapshot's figures, in the order the agent's SESSION message carries them (agent/
 * lga_session.c encodes and harness/exec/exec_msg.c decodes and range-checks them from this list):
 * X(field, kind), kind TRK_LEDGER (a count the tracker keeps, never negative) or TRK_READING (a
 * reading of the allocator, the kernel or the driver; -1: not available in this build or on
 * this machine). A new figure is one row here plus the code that measures it (snapshot.c). */
#define TRK_SNAPSHOT_FIGURES(X)                                                                    \
    X(tagged_host, TRK_LEDGER) /* the tracker's ledger: live tagged bytes and blocks */            \
    X(tagged_host_count, TRK_LEDGER)                                                               \
    X(tagged_device, TRK_LEDGER)                                                                   \
    X(tagged_device_count, TRK_LEDGER)                                                             \
    X(je_allocated, TRK_READING) /* jemalloc's stats.* */                                          \
    X(je_active, TRK_READING)                                                                      \
    X(je_resident, TRK_READING)                                                                    \
    X(je_mapped, TRK_READING)                                                                      \
    X(je_retained, TRK_READING)                                                                    \
    X(je_metadata, TRK_READING)                                                                    \
    X(arena_allocated, TRK_READING) /* the tracker's dedicated arena's own */                      \
    X(arena_active, TRK_READING)                                                                   \
    X(arena_dirty, TRK_READING)                                                                    \
    X(rss, TRK_READING) /* /proc/self/smaps_rollup */                                              \
    X(rss_anon, TRK_READING)                                                                       \
    X(rss_file, TRK_READING)                                                                       \
    X(lazyfree, TRK_READING)                                                                       \
    X(dev_used, TRK_READING) /* the device driver's view (backend usage) */                        \
    X(dev_total, TRK_READING)                                                                      \
    X(dev_process, TRK_READING)                                                                    \
    X(tracker_overhead, TRK_LEDGER)  /* bytes the tracker's own tables use (usable sizes) */       \
    X(census_active, TRK_LEDGER)     /* exec's census arenas: active pages beyond their blocks */  \
    X(census_resident, TRK_LEDGER)   /* and resident ones (their metadata above all) */            \
    X(prof_promoted, TRK_LEDGER)     /* exec's whole-session profile: 16 KiB extents of blocks */  \
    X(prof_promoted_rss, TRK_LEDGER) /* their rss, the table's, unwind tables' */                  \
    X(je_internal, TRK_LEDGER)       /* jemalloc's own allocations (heap profiles' records) */
enum trk_figure_kind { TRK_LEDGER, TRK_READING };
#define TRK_X_COUNT(field, kind) +1
enum { TRK_SNAPSHOT_NFIGURES = 0 TRK_SNAPSHOT_FIGURES(TRK_X_COUNT) };
#undef TRK_X_COUNT

struct trk_snapshot {
    double t; /* lg_now() when taken */
    uint32_t generation;
#define TRK_X_FIELD(field, kind) int64_t field;
    TRK_SNAPSHOT_FIGURES(TRK_X_FIELD)
#undef TRK_X_FIELD
};
/* Fills a snapshot. Reads jemalloc stats after an epoch write, and the device backend's
 * driver view as it is now (a query of the driver, no synchronise: trk_quiesce first for a
 * settled figure). Allocates nothing. */
void trk_snapshot(struct trk_tracker *trk, struct trk_snapshot *out);
/* "jemalloc 5.3.0-0-g54eaed1d8b56..." or "system malloc (no jemalloc in this build)". */
const char *trk_allocator_name(void);
/* What this build can measure at all: jemalloc's statistics (not in the sanitizer builds,
 * where the sanitizer owns malloc; snapshots report them as -1), and a process RSS that means
 * something about leaks (not under AddressSanitizer, whose quarantine holds freed memory: the
 * snapshot still reads it, a verdict should not rest on it). */
bool trk_build_has_allocator_stats(void);
bool trk_build_has_rss(void);
/* The cheap snapshot for timeline samples inside a session (every training step): the ledger,
 * jemalloc and smaps_rollup as trk_snapshot reads them, and nothing of the device's driver
 * view — no device synchronise, no cudaMemGetInfo, no NVML query (dev_used, dev_total and
 * dev_process are -1; tagged_device is the ledger's, exact as always). Allocates nothing. */
void trk_snapshot_light(struct trk_tracker *trk, struct trk_snapshot *out);
/* Quiesce before a snapshot: device sync (and pool trim), tcache flush, purge all arenas.
 * Returns LG_OK, or the device backend's status when the sync found a device fault (LG_ECUDA,
 * lg_errmsg() naming it): the fault belongs to the work queued before this call, so a harness
 * records it in the session that just ended. The host half runs either way. */
int trk_quiesce(struct trk_tracker *trk);

/* Prints one line per tag whose live bytes differ between two tag-stat arrays (b − a). */
void trk_tag_diff_print(const struct trk_tag_stat *a, size_t na, const struct trk_tag_stat *b,
                        size_t nb, FILE *f);

/* ---- stacks --------------------------------------------------------------------------- */
/* Captures the caller's stack and returns it symbolised, skipping `skip` frames; the caller
 * frees the string with free(). Used for sites that are not allocations. */
char *trk_stack_here(int skip, int depth);

#endif
