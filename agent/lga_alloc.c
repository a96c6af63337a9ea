/* lga_alloc.c — the program's allocator under leakgate exec: the C allocation functions,
 * forwarded to jemalloc's own API (mallocx, dallocx, rallocx, sallocx; linked directly, so
 * there is no dlsym bootstrap), with the allocations made inside a tag scope
 * (leakgate_tag_push) going to the tracker instead (trk_alloc: its own arena, the ledger).
 *
 * free() must find a tagged pointer cheaply: while no tagged allocation is live (the agent
 * counts them) it does not look at all; otherwise one ledger probe tells the tracker's pointers
 * from jemalloc's. The agent's own work (in_agent) never enters the tracker from here: the
 * tracker may be holding its ledger lock when it frees its own tables.
 *
 * Inside a session, untagged allocations go to that session's arena (lga_census.c): the
 * census counts what each session allocated and still holds.
 *
 * glibc's other allocating functions (strdup, reallocarray, getline, ...) call these through
 * the PLT, as glibc's manual promises for a replacement malloc; C++ operators are in
 * lga_cxx.c. Semantics follow glibc: malloc(0) returns a unique pointer, realloc(p, 0) frees p
 * and returns NULL, failures set errno.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lga_impl.h"
#include "lga_wire.h"

#define EXPORT __attribute__((visibility("default")))

static inline size_t nonzero(size_t n) { return n ? n : 1; }

/* A tagged allocation (the caller checked there is a tag); NULL with errno on failure. It and
 * every wrapper above it are in the tracker's text section (TRK_WRAPPER): a captured stack
 * starts at the program's call. */
TRK_WRAPPER static void *tagged_alloc(size_t n, size_t align, const char *tag, bool zero)
{
    lga_tl.in_agent++;
    void *p = align > 64 ? trk_alloc_aligned(lga.trk, n, align, tag) : trk_alloc(lga.trk, n, tag);
    if (p) {
        atomic_fetch_add_explicit(&lga.tagged_live, 1, memory_order_relaxed);
        lga_use(LGA_USED_TAGS);
        if (zero) memset(p, 0, n);
    }
    lga_tl.in_agent--;
    if (!p) errno = ENOMEM;
    return p;
}

/* Whether p may be a live tagged pointer worth a ledger probe. */
static inline bool maybe_tagged(void)
{
    return __builtin_expect(atomic_load_explicit(&lga.tagged_live, memory_order_relaxed) > 0, 0) &&
           !lga_tl.in_agent && lga_on();
}

/* Frees p when it is the tracker's; false when it is jemalloc's. */
static bool owned_free(void *p)
{
    lga_tl.in_agent++;
    bool mine = trk_free_if_owned(lga.trk, p);
    lga_tl.in_agent--;
    if (mine) atomic_fetch_sub_explicit(&lga.tagged_live, 1, memory_order_relaxed);
    return mine;
}

/* Whether a free must look in the retention table (it holds blocks; not the agent's own). */
static inline bool keep_maybe(void)
{
    return __builtin_expect(atomic_load_explicit(&lga_keep_live, memory_order_relaxed) > 0, 0) &&
           !lga_tl.in_agent;
}

/* Whether a free of p must look in the big blocks' table (one is live, and p is big). */
static inline bool big_maybe(void *p)
{
    return __builtin_expect(atomic_load_explicit(&lga_big_live, memory_order_relaxed) > 0, 0) &&
           !lga_tl.in_agent && sallocx(p, 0) >= LGA_BIG_MIN;
}

static inline void *plain(size_t n, int flags)
{
    int census = lga_census_now();
    void *p = mallocx(nonzero(n), flags | census);
    if (!p)
        errno = ENOMEM;
    else if (__builtin_expect(census != 0, 1)) {
        if (__builtin_expect(n >= LGA_BIG_MIN, 0))
            lga_big_note(p, n); /* a counted session's big block: its stack, for the census */
        if (lga_keep_recording()) lga_keep_note(p, n); /* the session traced to its roots */
    }
    return p;
}

static bool pow2(size_t a) { return a && (a & (a - 1)) == 0; }

EXPORT TRK_WRAPPER void *malloc(size_t n)
{
    const char *tag = lga_current_tag();
    if (__builtin_expect(tag != NULL, 0)) return tagged_alloc(n, 0, tag, false);
    return plain(n, 0);
}

EXPORT TRK_WRAPPER void free(void *p)
{
    if (!p) return;
    if (maybe_tagged() && owned_free(p)) return;
    if (big_maybe(p)) lga_big_forget(p);
    if (keep_maybe()) lga_keep_forget(p);
    dallocx(p, 0);
}

EXPORT TRK_WRAPPER void *calloc(size_t n, size_t m)
{
    size_t total;
    if (__builtin_mul_overflow(n, m, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    const char *tag = lga_current_tag();
    if (__builtin_expect(tag != NULL, 0)) return tagged_alloc(total, 0, tag, true);
    return plain(total, MALLOCX_ZERO);
}

EXPORT TRK_WRAPPER void *realloc(void *p, size_t n)
{
    if (!p) return malloc(n);
    if (n == 0) {
        free(p);
        return NULL;
    }
    if (maybe_tagged()) {
        char tag[LG_MAX_NAME];
        lga_tl.in_agent++;
        bool tagged = trk_tag_of(lga.trk, p, tag, sizeof tag);
        size_t old = tagged ? trk_size_of(lga.trk, p) : 0;
        lga_tl.in_agent--;
        if (tagged) { /* stays tagged with the tag it had */
            void *q = tagged_alloc(n, 0, tag, false);
            if (!q) return NULL;
            memcpy(q, p, old < n ? old : n);
            owned_free(p);
            return q;
        }
    }
    int census = lga_census_now();
    bool was_big = big_maybe(p);
    void *q = rallocx(p, n, census); /* a moved block is reborn in this session */
    if (!q) {
        errno = ENOMEM;
        return NULL;
    }
    if (was_big && q == p) /* resized in place: still born where it was */
        lga_big_resized(p, n);
    else {
        if (was_big) lga_big_forget(p);
        if (n >= LGA_BIG_MIN && census) lga_big_note(q, n);
    }
    if (keep_maybe()) {
        if (q != p)
            lga_keep_forget(p);
        else
            lga_keep_resized(p, n);
    }
    if (q != p && census && lga_keep_recording()) lga_keep_note(q, n);
    return q;
}

TRK_WRAPPER static void *aligned(size_t align, size_t n)
{
    const char *tag = lga_current_tag();
    if (__builtin_expect(tag != NULL, 0)) return tagged_alloc(n, align, tag, false);
    return plain(n, MALLOCX_ALIGN(align));
}

EXPORT TRK_WRAPPER int posix_memalign(void **out, size_t align, size_t n)
{
    if (!pow2(align) || align % sizeof(void *)) return EINVAL;
    int saved = errno;
    void *p = aligned(align, n);
    errno = saved;
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

EXPORT TRK_WRAPPER void *aligned_alloc(size_t align, size_t n)
{
    if (!pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return aligned(align, n);
}

EXPORT TRK_WRAPPER void *memalign(size_t align, size_t n)
{
    size_t a = sizeof(void *);
    while (a < align) a <<= 1; /* glibc rounds up to a power of two */
    return aligned(a, n);
}

EXPORT TRK_WRAPPER void *valloc(size_t n) { return aligned((size_t)sysconf(_SC_PAGESIZE), n); }

EXPORT TRK_WRAPPER void *pvalloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (n > SIZE_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return aligned(page, (n + page - 1) / page * page);
}

EXPORT size_t malloc_usable_size(void *p) { return p ? sallocx(p, 0) : 0; }
