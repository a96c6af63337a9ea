/* tracker.c — the allocation ledger: tagged host and device allocations, invalid-free
 * detection, and the tracker's life cycle.
 *
 * Host memory comes from a dedicated jemalloc arena with the thread cache bypassed
 * (MALLOCX_TCACHE_NONE): jemalloc's automatic thread caches are shared by all arenas, so a
 * cached region could come from the default arena and the model's memory would no longer be
 * separable. The ledger is one open-addressing table keyed by pointer; one spinlock guards it
 * together with the per-tag counters (see trk_impl.h for why one lock, measured).
 *
 * With LG_TRACKING=OFF (LG_NO_TRACKING) trk_alloc/trk_free compile down to the same mallocx /
 * dallocx calls with no ledger, for measuring the tracker's overhead.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <sys/types.h>

#ifdef LG_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "trk_impl.h"

#define TRK_ALIGN 64

static _Atomic uint64_t next_serial = 1;

/* ---- the raw host allocator ----------------------------------------------------------- */

static void *raw_alloc(struct trk_tracker *trk, size_t size)
{
#ifdef LG_HAVE_JEMALLOC
    return mallocx(size ? size : 1, trk->mallocx_flags);
#else
    void *p = NULL;
    (void)trk;
    return posix_memalign(&p, TRK_ALIGN, size ? size : 1) == 0 ? p : NULL;
#endif
}

static void raw_free(struct trk_tracker *trk, void *p)
{
#ifdef LG_HAVE_JEMALLOC
    dallocx(p, trk->mallocx_flags);
#else
    (void)trk;
    free(p);
#endif
}

size_t trk_usable_size(size_t size)
{
#ifdef LG_HAVE_JEMALLOC
    return nallocx(size ? size : 1, MALLOCX_ALIGN(TRK_ALIGN));
#else
    return size;
#endif
}

/* ---- life cycle ------------------------------------------------------------------------- */

int trk_tracker_new(struct trk_tracker **out, const struct trk_options *opt)
{
    *out = NULL;
    struct trk_tracker *trk = calloc(1, sizeof *trk);
    if (!trk) return lg_fail(LG_ENOMEM, "tracker: out of memory");
    if (opt) trk->opt = *opt;
    trk->serial = atomic_fetch_add(&next_serial, 1);
    atomic_store(&trk->overhead, (int64_t)malloc_usable_size(trk));
    pthread_mutex_init(&trk->errs.mu, NULL);
    trk_stacks_init(trk);
    trk_refs_init(trk);
    int rc = trk_tags_init(trk);
    if (rc != LG_OK) goto fail;
#ifdef LG_HAVE_JEMALLOC
    trk->mallocx_flags = MALLOCX_ALIGN(TRK_ALIGN) | MALLOCX_TCACHE_NONE;
    if (!trk->opt.no_arena) {
        unsigned arena;
        size_t len = sizeof arena;
        if (mallctl("arenas.create", &arena, &len, NULL, 0) != 0) {
            rc = lg_fail(LG_ENOMEM, "tracker: jemalloc could not create an arena");
            goto fail;
        }
        trk->arena = arena;
        trk->have_arena = true;
        trk->mallocx_flags |= MALLOCX_ARENA(arena);
        /* No time-based purging in the model's arena: pages freed within a step are reused by
         * the next step instead of going back to the kernel and faulting in again (measured:
         * electricity training 7.7 s/step with the default 10 s decay, 0.86 s/step without).
         * trk_quiesce purges explicitly before every snapshot. */
        ssize_t never = -1;
        char name[64];
        snprintf(name, sizeof name, "arena.%u.dirty_decay_ms", arena);
        mallctl(name, NULL, NULL, &never, sizeof never);
        snprintf(name, sizeof name, "arena.%u.muzzy_decay_ms", arena);
        mallctl(name, NULL, NULL, &never, sizeof never);
    }
#endif
    *out = trk;
    return LG_OK;
fail:
    trk_tracker_free(trk);
    return rc;
}

size_t trk_tracker_free(struct trk_tracker *trk)
{
    if (!trk) return 0;
    size_t left = 0;
    struct trk_ledger *led = &trk->led;
    for (size_t j = 0; j < led->cap; j++) {
        struct trk_rec *r = &led->recs[j];
        if (r->ptr == TRK_EMPTY) continue;
        left++;
        if (r->space == TRK_HOST)
            raw_free(trk, (void *)r->ptr);
        else if (trk->have_dev)
            trk->dev.free(trk->dev.ctx, (void *)r->ptr);
    }
    trk_meta_free(trk, led->recs);
#ifdef LG_HAVE_JEMALLOC
    /* Arenas cannot be destroyed while jemalloc 5.3 may reuse their index; purge instead so
     * the pages go back to the system. */
    if (trk->have_arena) {
        char name[64];
        snprintf(name, sizeof name, "arena.%u.destroy", trk->arena);
        if (mallctl(name, NULL, NULL, NULL, 0) != 0) {
            snprintf(name, sizeof name, "arena.%u.purge", trk->arena);
            mallctl(name, NULL, NULL, NULL, 0);
        }
    }
#endif
    trk_tags_fini(trk);
    trk_stacks_fini(trk);
    trk_refs_fini(trk);
    pthread_mutex_destroy(&trk->errs.mu);
    free(trk);
    return left;
}

uint32_t trk_generation(const struct trk_tracker *trk) { return atomic_load(&trk->gen); }

/* ---- the ledger ------------------------------------------------------------------------- */

static inline size_t ptr_hash(uintptr_t p)
{
    uint64_t h = (uint64_t)p >> 6; /* 64-byte aligned: low bits carry nothing */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)h;
}

/* Rebuilds the table at `ncap` slots; caller holds the lock. */
static int rehash_locked(struct trk_tracker *trk, struct trk_ledger *led, size_t ncap)
{
    struct trk_rec *nv = trk_meta_calloc(trk, ncap, sizeof *nv);
    if (!nv) return LG_ENOMEM;
    for (size_t i = 0; i < led->cap; i++) {
        struct trk_rec *r = &led->recs[i];
        if (r->ptr == TRK_EMPTY) continue;
        size_t j = ptr_hash(r->ptr) & (ncap - 1);
        while (nv[j].ptr != TRK_EMPTY) j = (j + 1) & (ncap - 1);
        nv[j] = *r;
    }
    trk_meta_free(trk, led->recs);
    led->recs = nv;
    led->cap = ncap;
    return LG_OK;
}

/* Caller holds the lock. The table is at most half full. */
static int ledger_insert_locked(struct trk_tracker *trk, const struct trk_rec *rec)
{
    struct trk_ledger *led = &trk->led;
    if ((led->used + 1) * 2 > led->cap &&
        rehash_locked(trk, led, led->cap ? led->cap * 2 : 1024) != LG_OK)
        return LG_ENOMEM;
    size_t mask = led->cap - 1;
    size_t i = ptr_hash(rec->ptr) & mask;
    while (led->recs[i].ptr != TRK_EMPTY) i = (i + 1) & mask;
    led->recs[i] = *rec;
    led->used++;
    return LG_OK;
}

/* The slot of live pointer p, or NULL; caller holds the lock. */
TRK_INLINE struct trk_rec *ledger_find_locked(struct trk_ledger *led, uintptr_t p)
{
    if (!led->cap) return NULL;
    size_t mask = led->cap - 1;
    for (size_t i = ptr_hash(p) & mask; led->recs[i].ptr != TRK_EMPTY; i = (i + 1) & mask)
        if (led->recs[i].ptr == p) return &led->recs[i];
    return NULL;
}

/* Empties slot r and moves later records of its run back into the hole where their probe
 * allows (backward-shift deletion): no tombstones, so probes stay short and the table is never
 * rebuilt only to clear them. Caller holds the lock. */
TRK_INLINE void ledger_erase_locked(struct trk_ledger *led, struct trk_rec *r)
{
    size_t mask = led->cap - 1, hole = (size_t)(r - led->recs);
    for (size_t j = (hole + 1) & mask; led->recs[j].ptr != TRK_EMPTY; j = (j + 1) & mask) {
        size_t home = ptr_hash(led->recs[j].ptr) & mask;
        /* the record at j may fill the hole when its home is not cyclically in (hole, j] */
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            led->recs[hole] = led->recs[j];
            hole = j;
        }
    }
    led->recs[hole].ptr = TRK_EMPTY;
    led->used--;
}

/* Starts fetching the ledger slot p is likely to go to; read without the lock, for a prefetch
 * only (a table that grows meanwhile costs a wasted fetch, never a fault). */
TRK_INLINE void prefetch_ledger_slot(struct trk_tracker *trk, const void *p)
{
    struct trk_ledger *led = &trk->led;
    if (led->cap) __builtin_prefetch(&led->recs[ptr_hash((uintptr_t)p) & (led->cap - 1)], 1);
}

static bool ledger_find(struct trk_tracker *trk, uintptr_t p, struct trk_rec *out)
{
    trk_spin_lock(&trk->led.lock);
    struct trk_rec *r = ledger_find_locked(&trk->led, p);
    if (r) *out = *r;
    trk_spin_unlock(&trk->led.lock);
    return r != NULL;
}

/* Caller holds the lock. */
static void count_alloc_locked(struct trk_tracker *trk, uint32_t tag, uint32_t space, int64_t size)
{
    struct trk_tag *t = trk_tag_get(trk, tag);
    struct trk_count *n = trk_tag_count(t, space);
    n->live_bytes += size;
    if (n->live_bytes > n->peak_bytes) n->peak_bytes = n->live_bytes;
    n->live_count++;
    n->total_bytes += size;
    n->total_count++;
    struct trk_ledger *led = &trk->led;
    led->live[space] += size;
    if (led->live[space] > led->peak[space]) led->peak[space] = led->live[space];
    struct trk_class *c = &trk->tags.classes[t->cls];
    c->live[space] += size;
    if (c->live[space] > c->peak[space]) c->peak[space] = c->live[space];
}

/* Removes live pointer p of `space` from the ledger and its counters into *out; false when p
 * is not a live allocation of that space. */
TRK_INLINE bool ledger_remove(struct trk_tracker *trk, uintptr_t p, uint32_t space,
                              struct trk_rec *out)
{
    struct trk_ledger *led = &trk->led;
    prefetch_ledger_slot(trk, (const void *)p); /* in flight while the lock is taken */
    trk_spin_lock(&led->lock);
    struct trk_rec *r = ledger_find_locked(led, p);
    bool ok = r && r->space == space;
    if (ok) {
        *out = *r;
        ledger_erase_locked(led, r);
        struct trk_tag *t = trk_tag_get(trk, out->tag);
        struct trk_count *n = trk_tag_count(t, space);
        n->live_bytes -= (int64_t)out->size;
        n->live_count--;
        led->live[space] -= (int64_t)out->size;
        trk->tags.classes[t->cls].live[space] -= (int64_t)out->size;
    }
    trk_spin_unlock(&led->lock);
    return ok;
}

static void remember_freed(struct trk_tracker *trk, const struct trk_rec *r)
{
    /* a load and a store, not a locked add: two threads may write one slot, which only
     * costs a diagnosis its detail */
    size_t pos = atomic_load_explicit(&trk->errs.freed_pos, memory_order_relaxed);
    atomic_store_explicit(&trk->errs.freed_pos, pos + 1, memory_order_relaxed);
    trk->errs.freed[pos % TRK_FREED_RING] = (struct trk_freed){r->ptr, r->tag, r->space};
}

void trk_record_error(struct trk_tracker *trk, uint32_t stack, const char *fmt, ...)
{
    pthread_mutex_lock(&trk->errs.mu);
    size_t slot = trk->errs.count % TRK_MAX_ERRORS;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(trk->errs.ring[slot].what, sizeof trk->errs.ring[slot].what, fmt, ap);
    va_end(ap);
    trk->errs.ring[slot].stack = stack;
    trk->errs.count++;
    pthread_mutex_unlock(&trk->errs.mu);
}

/* Records an invalid free of p, telling a double free from a pointer never seen. */
TRK_ENTRY static void invalid_free(struct trk_tracker *trk, uintptr_t p, uint32_t space)
{
    uint32_t stack = trk_stack_capture(trk); /* always: errors are rare and need a site */
    int tag = -1;
    pthread_mutex_lock(&trk->errs.mu);
    for (size_t i = 0; i < TRK_FREED_RING; i++)
        if (trk->errs.freed[i].ptr == p && trk->errs.freed[i].space == space)
            tag = (int)trk->errs.freed[i].tag;
    pthread_mutex_unlock(&trk->errs.mu);
    const char *sp = space == TRK_DEVICE ? "device " : "";
    if (tag >= 0)
        trk_record_error(trk, stack, "double %sfree of %p (tag %s)", sp, (void *)p,
                         trk_tag_get(trk, (uint32_t)tag)->name);
    else
        trk_record_error(trk, stack, "%sfree of unknown pointer %p", sp, (void *)p);
}

/* ---- host allocations ---------------------------------------------------------------------- */

/* Records a new allocation under tag id (UINT32_MAX: the tag could not be interned) in the
 * ledger; the stack (when on) starts at the first frame outside the tracker's section
 * (TRK_ENTRY). LG_ENOMEM (message set, naming `name`) when it cannot be recorded; p is left
 * alone. */
TRK_ENTRY static int record_new(struct trk_tracker *trk, void *p, size_t size, uint32_t id,
                                uint32_t space, const char *name)
{
    struct trk_rec rec = {.ptr = (uintptr_t)p,
                          .size = size,
                          .tag = id,
                          .gen = atomic_load_explicit(&trk->gen, memory_order_relaxed),
                          .space = space};
    int rc = LG_ENOMEM;
    if (id != UINT32_MAX) {
        if (trk->opt.stacks) rec.stack = trk_stack_capture(trk);
        trk_spin_lock(&trk->led.lock);
        rc = ledger_insert_locked(trk, &rec);
        if (rc == LG_OK) count_alloc_locked(trk, id, space, (int64_t)size);
        trk_spin_unlock(&trk->led.lock);
    }
    if (rc != LG_OK) lg_fail(LG_ENOMEM, "tracker: no memory for the ledger entry of %s", name);
    return rc;
}

/* Records a new allocation the tracker made; frees it again when it cannot be recorded. */
TRK_INLINE void *track_new(struct trk_tracker *trk, void *p, size_t size, uint32_t id,
                           uint32_t space, const char *name)
{
    if (record_new(trk, p, size, id, space, name) == LG_OK) return p;
    if (space == TRK_HOST)
        raw_free(trk, p);
    else
        trk->dev.free(trk->dev.ctx, p);
    return NULL;
}

/* As track_new, the tag looked up now (its fetch begun by trk_tag_key) while p's ledger slot is
 * fetched. */
TRK_INLINE void *track_new_key(struct trk_tracker *trk, void *p, size_t size,
                               const struct trk_tag_key *k, uint32_t space)
{
    prefetch_ledger_slot(trk, p);
    return track_new(trk, p, size, trk_tag_intern_key(trk, k), space, k->name);
}

/* p (just allocated, or NULL when the allocator failed) entered in the ledger under tag. */
TRK_INLINE void *host_tracked(struct trk_tracker *trk, void *p, size_t size, const char *tag)
{
    if (!p) {
        char b[32];
        lg_fail(LG_ENOMEM, "out of host memory allocating %s for %s",
                lg_fmt_bytes(b, sizeof b, (double)size), tag ? tag : "untagged");
        return NULL;
    }
#ifdef LG_NO_TRACKING
    (void)trk, (void)tag;
    return p;
#else
    struct trk_tag_key k = trk_tag_key(trk, tag);
    return track_new_key(trk, p, size, &k, TRK_HOST);
#endif
}

/* The common path: the tag's lookup begins before the allocation, which hides the fetch of its
 * index slot. */
TRK_INLINE void *alloc_impl(struct trk_tracker *trk, size_t size, const char *tag)
{
#ifdef LG_NO_TRACKING
    return host_tracked(trk, raw_alloc(trk, size), size, tag);
#else
    struct trk_tag_key k = trk_tag_key(trk, tag);
    void *p = raw_alloc(trk, size);
    if (!p) return host_tracked(trk, p, size, tag); /* the message */
    return track_new_key(trk, p, size, &k, TRK_HOST);
#endif
}

TRK_ENTRY void *trk_alloc(struct trk_tracker *trk, size_t size, const char *tag)
{
    return alloc_impl(trk, size, tag);
}

TRK_ENTRY void *trk_alloc_id(struct trk_tracker *trk, size_t size, uint32_t tag)
{
    LG_ASSERT(tag < atomic_load_explicit(&trk->tags.count, memory_order_acquire) &&
              "trk_alloc_id needs an id from trk_tag_id");
    const char *name = trk_tag_get(trk, tag)->name;
    void *p = raw_alloc(trk, size);
#ifdef LG_NO_TRACKING
    return host_tracked(trk, p, size, name);
#else
    if (!p) return host_tracked(trk, p, size, name); /* the message */
    prefetch_ledger_slot(trk, p);
    return track_new(trk, p, size, tag, TRK_HOST, name);
#endif
}

TRK_ENTRY void *trk_alloc_aligned(struct trk_tracker *trk, size_t size, size_t align,
                                  const char *tag)
{
    LG_ASSERT(align && (align & (align - 1)) == 0 && "alignment must be a power of two");
    if (align <= TRK_ALIGN) return alloc_impl(trk, size, tag);
#ifdef LG_HAVE_JEMALLOC
    void *p = mallocx(size ? size : 1, (trk->mallocx_flags & ~0x3f) | MALLOCX_ALIGN(align));
#else
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1) != 0) p = NULL;
#endif
    return host_tracked(trk, p, size, tag);
}

TRK_ENTRY void *trk_calloc(struct trk_tracker *trk, size_t size, const char *tag)
{
    void *p = alloc_impl(trk, size, tag);
    if (p) memset(p, 0, size);
    return p;
}

TRK_ENTRY void *trk_allocf(struct trk_tracker *trk, size_t size, const char *fmt, ...)
{
    char tag[LG_MAX_NAME];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tag, sizeof tag, fmt, ap);
    va_end(ap);
    return alloc_impl(trk, size, tag);
}

TRK_ENTRY void trk_free(struct trk_tracker *trk, void *p)
{
    if (!p) return;
#ifdef LG_NO_TRACKING
    raw_free(trk, p);
#else
    struct trk_rec rec;
    if (!ledger_remove(trk, (uintptr_t)p, TRK_HOST, &rec)) {
        invalid_free(trk, (uintptr_t)p, TRK_HOST);
        return;
    }
    remember_freed(trk, &rec);
    raw_free(trk, p);
#endif
}

TRK_ENTRY bool trk_free_if_owned(struct trk_tracker *trk, void *p)
{
    struct trk_rec rec;
    if (!p || !ledger_remove(trk, (uintptr_t)p, TRK_HOST, &rec)) return false;
    remember_freed(trk, &rec);
    raw_free(trk, p);
    return true;
}

size_t trk_size_of(struct trk_tracker *trk, const void *p)
{
    struct trk_rec rec;
    return p && ledger_find(trk, (uintptr_t)p, &rec) ? (size_t)rec.size : 0;
}

bool trk_tag_of(struct trk_tracker *trk, const void *p, char *buf, size_t size)
{
    struct trk_rec rec;
    if (!p || !ledger_find(trk, (uintptr_t)p, &rec)) return false;
    lg_strlcpy(buf, trk_tag_get(trk, rec.tag)->name, size);
    return true;
}

/* ---- device allocations -------------------------------------------------------------------- */

void trk_set_device_backend(struct trk_tracker *trk, const struct trk_device_backend *be)
{
    if (be) {
        trk->dev = *be;
        trk->have_dev = true;
    } else {
        memset(&trk->dev, 0, sizeof trk->dev);
        trk->have_dev = false;
    }
}

bool trk_has_device(const struct trk_tracker *trk) { return trk->have_dev; }

TRK_ENTRY void *trk_dev_alloc(struct trk_tracker *trk, size_t size, const char *tag)
{
    if (!trk->have_dev) {
        lg_fail(LG_EUNAVAIL, "no device backend: %s needs CUDA", tag ? tag : "untagged");
        return NULL;
    }
    void *p = NULL;
    int rc = trk->dev.alloc(trk->dev.ctx, &p, size ? size : 1);
    if (rc != LG_OK || !p) {
        char b[32];
        lg_fail(rc ? rc : LG_ENOMEM, "out of device memory allocating %s for %s",
                lg_fmt_bytes(b, sizeof b, (double)size), tag ? tag : "untagged");
        return NULL;
    }
    struct trk_tag_key k = trk_tag_key(trk, tag);
    return track_new_key(trk, p, size, &k, TRK_DEVICE);
}

TRK_ENTRY void trk_dev_free(struct trk_tracker *trk, void *p)
{
    if (!p) return;
    struct trk_rec rec;
    if (!ledger_remove(trk, (uintptr_t)p, TRK_DEVICE, &rec)) {
        invalid_free(trk, (uintptr_t)p, TRK_DEVICE);
        return;
    }
    remember_freed(trk, &rec);
    trk->dev.free(trk->dev.ctx, p);
}

TRK_ENTRY int trk_dev_adopt(struct trk_tracker *trk, void *p, size_t size, const char *tag)
{
    LG_ASSERT(p && "trk_dev_adopt needs a device pointer");
    struct trk_tag_key k = trk_tag_key(trk, tag);
    return record_new(trk, p, size, trk_tag_intern_key(trk, &k), TRK_DEVICE, k.name);
}

bool trk_dev_forget(struct trk_tracker *trk, void *p)
{
    struct trk_rec rec;
    if (!p || !ledger_remove(trk, (uintptr_t)p, TRK_DEVICE, &rec)) return false;
    remember_freed(trk, &rec);
    return true;
}

/* ---- errors ------------------------------------------------------------------------------- */

size_t trk_error_count(struct trk_tracker *trk)
{
    pthread_mutex_lock(&trk->errs.mu);
    size_t n = trk->errs.count;
    pthread_mutex_unlock(&trk->errs.mu);
    return n;
}

size_t trk_errors(struct trk_tracker *trk, struct trk_error **out)
{
    pthread_mutex_lock(&trk->errs.mu);
    size_t total = trk->errs.count;
    size_t n = LG_MIN(total, (size_t)TRK_MAX_ERRORS);
    uint32_t ids[TRK_MAX_ERRORS];
    struct trk_error *v = calloc(n ? n : 1, sizeof *v);
    if (v)
        for (size_t i = 0; i < n; i++) {
            size_t slot = (total - n + i) % TRK_MAX_ERRORS;
            lg_strlcpy(v[i].what, trk->errs.ring[slot].what, sizeof v[i].what);
            ids[i] = trk->errs.ring[slot].stack;
        }
    pthread_mutex_unlock(&trk->errs.mu);
    *out = v;
    if (!v) return 0;
    for (size_t i = 0; i < n; i++) v[i].stack = trk_stack_text(trk, ids[i]);
    return n;
}

void trk_errors_free(struct trk_error *e, size_t n)
{
    if (!e) return;
    for (size_t i = 0; i < n; i++) free(e[i].stack);
    free(e);
}
