/* lga_promote.c — what the whole-session profile adds to the figures, taken back out
 * (docs/realworld.md, finding 1).
 *
 * Once the census calls a leak, exec profiles one session whole (lg_prof_sample 0, apply_reply
 * in lga_session.c). jemalloc keeps every sampled small block in a large extent of its own: the
 * smallest large class (arenas.lextent.0.size, 16 KiB) in stats.allocated and in the census
 * arena's large.allocated, and that plus a page of cache-oblivious padding in its active pages.
 * A Python program that kept 544 blocks of 122,368 B in that session was measured at 8.50 MiB.
 *
 * The retention table (lga_keep.c) records every block of that session, so at each measurement
 * the agent asks jemalloc what holds each block still recorded (experimental.utilization.query:
 * the size of its extent, a slab or the block's own) and counts a promoted one — an extent of
 * at least the smallest large class holding a block whose size class is small — as
 *
 *   prof_promoted      lextent0 - the block's size class: taken out of je_allocated, je_active
 *                      and je_resident (census_active and census_resident already take out the
 *                      padding, pages beyond the arena's blocks), and out of the census entry of
 *                      the profiled session, which then counts the blocks' size classes;
 *   prof_promoted_rss  the extent's resident pages (mincore) beyond the block's size class and
 *                      the padding census_resident takes out, at least 0 (a block whose extent
 *                      has only its own page resident adds nothing there),, the retention
 *                      table itself (4.6 MiB, made resident as recording starts), and the
 *                      file-backed pages the profiled session made resident (the unwind tables
 *                      jemalloc's backtraces read; a file mapping the program itself touched
 *                      first in that session is taken out with them): taken out of rss, as
 *                      the tracker's own tables are taken out of je_allocated.
 *
 * And je_internal: jemalloc's own allocations (stats.arenas.<all>.internal, read after the
 * snapshot's epoch), which stats.allocated counts too: above all a record of each stack a heap
 * profile sampled (~760 B a stack), growing as a profile meets new stacks. Taken out of
 * je_allocated and je_active, as the tracker's own tables are; constant while nothing is
 * profiled.
 *
 * Blocks the table could not record (it was full: lga_keep.c says so) stay counted at 16 KiB,
 * and with LEAKGATE_KEEP=0 nothing is recorded, so nothing is taken out. Allocates nothing; one
 * mallctl and, for a promoted block, one mincore per recorded block at each session end from the
 * profiled one on (a run the census has already called a leak).
 */
#define _GNU_SOURCE
#include <jemalloc/jemalloc.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lga_impl.h"

#define PROMOTE_PAGES 64 /* an extent of more pages is no promoted small block */

/* experimental.utilization.query's answer (jemalloc 5.3, inspect_extent_util_stats_verbose_t) */
struct util_query {
    void *slabcur_addr;
    size_t nfree, nregs, size, bin_nfree, bin_nregs;
};

struct promotion {
    size_t mib[4], miblen, lextent0, page;
    int64_t allocated, rss;
};

static int64_t census_promoted = 0; /* the latest prof_promoted, under lga.mu */
static int census_born = -1;        /* its session */
/* The file-backed pages the profiled session made resident (rss_file's growth across it):
 * jemalloc's backtrace of every allocation reads the unwind tables of every library it walks
 * through (5.9 MB of libtorch's and its neighbours' on the TFT example). Under lga.mu. */
static struct {
    int session; /* the profiled session, -1 none */
    int64_t file0;
    int64_t step; /* -1 until the profiled session's end measured it */
} unwind = {-1, 0, -1};

void lga_promote_start(int session)
{
    struct trk_snapshot s;
    trk_snapshot_light(lga.trk, &s);
    unwind.session = s.rss_file >= 0 ? session : -1;
    unwind.file0 = s.rss_file;
}

/* rss_file's growth across the profiled session, once it ended (0 before, and without one). */
static int64_t unwind_step(const struct trk_snapshot *snap)
{
    if (unwind.session >= 0 && unwind.step < 0 && lga.sessions == unwind.session)
        unwind.step = snap->rss_file > unwind.file0 ? snap->rss_file - unwind.file0 : 0;
    return unwind.step > 0 ? unwind.step : 0;
}

/* Counts one recorded block: its extent's promotion, when it has one. */
static void count_block(void *ctx, void *p, size_t n)
{
    struct promotion *pr = ctx;
    struct util_query q;
    size_t len = sizeof q;
    memset(&q, 0, sizeof q);
    if (mallctlbymib(pr->mib, pr->miblen, &q, &len, &p, sizeof p) != 0) return;
    size_t usize = nallocx(n ? n : 1, 0);
    if (q.size < pr->lextent0 || usize == 0 || usize >= pr->lextent0) return; /* not promoted */
    pr->allocated += (int64_t)(pr->lextent0 - usize);
    uintptr_t base = (uintptr_t)p & ~(uintptr_t)(pr->page - 1);
    size_t pages = (q.size + pr->page - 1) / pr->page;
    unsigned char vec[PROMOTE_PAGES];
    if (pages > PROMOTE_PAGES || mincore((void *)base, pages * pr->page, vec) != 0) return;
    size_t resident = 0;
    for (size_t i = 0; i < pages; i++) resident += (vec[i] & 1) * pr->page;
    size_t own = usize + (q.size - pr->lextent0); /* the block, and the padding taken out */
    if (resident > own) pr->rss += (int64_t)(resident - own);
}

void lga_promote_measure(struct trk_snapshot *snap)
{
    static struct promotion pr; /* the mib and classes, read once */
    static int ready;           /* 0 not tried, 1 ready, -1 not in this jemalloc */
    snap->prof_promoted = snap->prof_promoted_rss = snap->je_internal = 0;
    census_promoted = 0;
    if (ready == 0) {
        size_t len = sizeof pr.lextent0;
        pr.miblen = LG_ARRAY_LEN(pr.mib);
        pr.page = (size_t)sysconf(_SC_PAGESIZE);
        ready = mallctl("arenas.lextent.0.size", &pr.lextent0, &len, NULL, 0) == 0 &&
                        mallctlnametomib("experimental.utilization.query", pr.mib, &pr.miblen) == 0
                    ? 1
                    : -1;
    }
    size_t internal = 0, len = sizeof internal; /* all arenas' (MALLCTL_ARENAS_ALL) */
    if (mallctl("stats.arenas.4096.internal", &internal, &len, NULL, 0) == 0)
        snap->je_internal = (int64_t)internal;
    snap->prof_promoted_rss = unwind_step(snap);
    if (ready < 0) return;
    pr.allocated = pr.rss = 0;
    census_born = lga_keep_each(count_block, &pr);
    snap->prof_promoted = census_promoted = pr.allocated;
    snap->prof_promoted_rss += pr.rss + lga_keep_resident();
}

int64_t lga_promote_census(int born)
{
    return born >= 0 && born == census_born ? census_promoted : 0;
}
