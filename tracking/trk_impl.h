/* trk_impl.h — the tracker's private parts, shared by the files of tracking/. */
#ifndef LG_TRK_IMPL_H
#define LG_TRK_IMPL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "tracking.h"

/* ---- a small spinlock: one atomic exchange to take, a plain release store to give back.
 * Critical sections here are a few dozen instructions; a waiter that spins long yields. */
struct trk_spin {
    _Atomic int v;
};
static inline void trk_spin_lock(struct trk_spin *l)
{
    while (atomic_exchange_explicit(&l->v, 1, memory_order_acquire)) {
        for (int n = 0; atomic_load_explicit(&l->v, memory_order_relaxed); n++) {
            if (n > 200)
                sched_yield();
            else
                __builtin_ia32_pause();
        }
    }
}
static inline void trk_spin_unlock(struct trk_spin *l)
{
    atomic_store_explicit(&l->v, 0, memory_order_release);
}

/* ---- the allocation ledger: one open-addressing table keyed by pointer --------------- */

#define TRK_EMPTY ((uintptr_t)0)

struct trk_rec {
    uintptr_t ptr; /* TRK_EMPTY or a live pointer */
    uint64_t size;
    uint32_t tag;   /* index into the tag table */
    uint32_t gen;   /* generation it was born in */
    uint32_t stack; /* index into the stack table; 0 = none */
    uint32_t space; /* enum trk_space */
};

/* One lock guards the table, every tag's counters and the totals: an allocation costs one
 * atomic exchange. (A table sharded by pointer with per-tag locks took three atomic
 * operations per call and measured 1.4x the raw jemalloc cost at 4 KiB against 1.2x for this;
 * the model allocates from one thread at a time, so the lock is rarely contended.) */
struct trk_ledger {
    struct trk_spin lock;
    struct trk_rec *recs;
    size_t cap, used;                             /* used counts live records */
    int64_t live[TRK_NSPACES], peak[TRK_NSPACES]; /* totals over all tags */
};

/* ---- tags: interned names with per-space counters ---------------------------------- */

/* One space's counters of a tag, guarded by the ledger lock. */
struct trk_count {
    int64_t live_bytes, live_count;
    int64_t peak_bytes;
    int64_t total_bytes, total_count;
};

/* Laid out for the allocation path, which reads the length and the name and updates the host
 * counters: with chunks 64-byte aligned, that is the tag's first two cache lines for a name of
 * up to 79 characters. The device counters and the hash (read when the index grows) come last. */
struct trk_tag {
    struct trk_count host;
    uint32_t cls; /* index into trk_tags.classes */
    uint32_t len; /* strlen(name) */
    char name[LG_MAX_NAME];
    struct trk_count device;
    uint64_t hash;
};
_Static_assert(sizeof(struct trk_tag) % 64 == 0, "tags fill whole cache lines");

static inline struct trk_count *trk_tag_count(struct trk_tag *t, uint32_t space)
{
    return space == TRK_DEVICE ? &t->device : &t->host;
}

/* A tag class (the part of a tag before its first '/', lg_tag_class) with live and peak bytes
 * over all its tags: the peak of a class is not the sum of its tags' peaks (activations of
 * different ops are alive at different times). A class past TRK_MAX_CLASSES counts in the last
 * slot, "(other)" (TRK_MAX_CLASSES, tracking.h). Counters are guarded by the ledger lock. */
struct trk_class {
    char name[LG_MAX_CLASS];
    int64_t live[TRK_NSPACES], peak[TRK_NSPACES];
};

#define TRK_TAG_CHUNK      1024
#define TRK_TAG_MAX_CHUNKS 1024 /* a million tags */

/* An open-addressing index over tags, read without a lock. A slot is 0 (empty) or a tag's
 * id + 1 in its low TRK_TAG_ID_BITS bits under the top bits of the tag's hash, so a probe
 * compares a name only when those bits match. A writer (holding trk_tags.lock) publishes slots
 * with release stores, and replaces a full index by a larger copy, keeping the old one until
 * the tracker is freed (a reader may still be probing it; doubling bounds what is kept to the
 * size of the current one). */
#define TRK_TAG_ID_BITS 21
_Static_assert((uint64_t)TRK_TAG_CHUNK *TRK_TAG_MAX_CHUNKS < (1u << TRK_TAG_ID_BITS),
               "every tag id + 1 fits in a slot's id bits");
struct trk_tag_index {
    size_t cap;                    /* a power of two */
    struct trk_tag_index *retired; /* the index this one replaced */
    _Atomic uint32_t slot[];
};

struct trk_tags {
    pthread_mutex_t lock;                       /* writers only */
    struct trk_tag *chunks[TRK_TAG_MAX_CHUNKS]; /* chunks never move: readers need no lock */
    _Atomic uint32_t count;
    _Atomic(struct trk_tag_index *) index;
    struct trk_class classes[TRK_MAX_CLASSES]; /* names written by writers, then published */
    _Atomic uint32_t n_classes;
};

/* ---- stacks: deduplicated frame arrays ----------------------------------------------- */

#define TRK_MAX_FRAMES 32

struct trk_stack {
    uint64_t hash;
    int depth;
    void *frames[TRK_MAX_FRAMES];
};

struct trk_stacks {
    pthread_mutex_t mu;
    struct trk_stack *v; /* v[0] unused: id 0 means "no stack" */
    size_t n, cap;
    uint32_t *index; /* open addressing over ids */
    size_t index_cap;
};

/* ---- the reference ledger -------------------------------------------------------------- */

struct trk_retain {
    const void *holder;
    struct trk_site site;
    uint32_t gen;
    uint32_t stack;
};

struct trk_refobj {
    const void *obj;
    char kind[32];
    char name[LG_MAX_NAME];
    uint32_t gen;
    struct trk_retain *retains; /* outstanding only */
    int n, cap;
};

struct trk_refs {
    pthread_mutex_t mu;
    struct trk_refobj *v;
    size_t n, cap;
};

/* ---- errors ------------------------------------------------------------------------------ */

#define TRK_MAX_ERRORS 64
#define TRK_FREED_RING 4096

struct trk_freed {
    uintptr_t ptr;
    uint32_t tag;
    uint32_t space;
};

struct trk_errlog {
    pthread_mutex_t mu;
    size_t count;            /* ever */
    uint32_t gen_count_base; /* count at the current generation's start */
    struct {
        char what[200];
        uint32_t stack;
    } ring[TRK_MAX_ERRORS];
    struct trk_freed freed[TRK_FREED_RING]; /* recently freed, to tell double from unknown;
                                               written without a lock (diagnosis only) */
    _Atomic size_t freed_pos;
};

struct trk_tracker {
    struct trk_options opt;
    uint64_t serial; /* unique per tracker in this process (never 0) */
    unsigned arena;  /* jemalloc arena index */
    int mallocx_flags;
    bool have_arena;
    _Atomic uint32_t gen;         /* current generation; 0 outside sessions */
    _Atomic uint32_t gen_counter; /* last generation handed out */
    struct trk_ledger led;
    struct trk_tags tags;
    struct trk_stacks stacks;
    struct trk_refs refs;
    struct trk_errlog errs;
    _Atomic int64_t overhead; /* bytes of the tracker's own tables */
    struct trk_device_backend dev;
    bool have_dev;
};

/* meta.c: the tracker's own tables, counted in trk->overhead by their usable size, so the
 * harness can take them out of jemalloc's allocated figure (they are the measurement's
 * memory, not the workload's). trk_meta_calloc's blocks start on a cache line (TRK_LINE), so
 * entries laid out in whole lines (tags, ledger records) never straddle two; the caller frees
 * them with trk_meta_free. */
#define TRK_LINE 64
void *trk_meta_calloc(struct trk_tracker *trk, size_t n, size_t size);
void *trk_meta_realloc(struct trk_tracker *trk, void *p, size_t size);
void trk_meta_free(struct trk_tracker *trk, void *p);

/* tags.c */
int trk_tags_init(struct trk_tracker *trk);
void trk_tags_fini(struct trk_tracker *trk);
uint32_t trk_tag_intern(struct trk_tracker *trk, const char *name); /* UINT32_MAX on OOM */
/* trk_tag_intern in two halves, so that the allocation runs between them: trk_tag_key hashes
 * the name (NULL or "" is "untagged") and starts fetching the index slot its probe begins at,
 * which is usually out of the cache (a training step's data evicts it between calls); then
 * trk_tag_intern_key finishes the lookup (interning a new name). */
struct trk_tag_key {
    const char *name;
    size_t len;
    uint64_t hash;
};
struct trk_tag_key trk_tag_key(struct trk_tracker *trk, const char *name);
uint32_t trk_tag_intern_key(struct trk_tracker *trk, const struct trk_tag_key *k);
static inline struct trk_tag *trk_tag_get(struct trk_tracker *trk, uint32_t id)
{
    return &trk->tags.chunks[id / TRK_TAG_CHUNK][id % TRK_TAG_CHUNK];
}

/* The tracker's entry points and the functions between them and a stack capture live in one
 * text section; a captured stack drops its leading frames inside that section, so what a
 * report shows starts at the caller whatever the compiler inlined or turned into tail calls
 * (sanitizer builds do both differently). */
#define TRK_ENTRY __attribute__((noinline, section("lg_trk_text")))
/* A helper of the entry points, always inlined into them (so inside their section too): one call
 * level fewer on the allocation path for each. */
#define TRK_INLINE static inline __attribute__((always_inline))

/* stacks.c */
int trk_stacks_init(struct trk_tracker *trk);
void trk_stacks_fini(struct trk_tracker *trk);
/* The caller's stack, from the first frame outside the tracker; 0 on failure. */
uint32_t trk_stack_capture(struct trk_tracker *trk);
/* Symbolised text of a stack id; the caller frees it with free(). NULL for id 0. */
char *trk_stack_text(struct trk_tracker *trk, uint32_t id);

/* refs.c */
int trk_refs_init(struct trk_tracker *trk);
void trk_refs_fini(struct trk_tracker *trk);
int trk_refs_report(struct trk_tracker *trk, uint32_t gen, struct trk_leaks *lk);

/* tracker.c */
void trk_record_error(struct trk_tracker *trk, uint32_t stack, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
