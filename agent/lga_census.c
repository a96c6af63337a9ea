/* lga_census.c — the exact census under exec: an arena per session.
 *
 * Each session's untagged allocations go to a jemalloc arena of their own (lga_alloc.c adds
 * lga_census_flags: MALLOCX_ARENA(that arena) | MALLOCX_TCACHE_NONE); a free finds its arena by
 * itself, a realloc that moves a block puts it in the current session's arena (it is reborn
 * there), one that resizes in place leaves it where it was born. So after an `epoch`,
 * `stats.arenas.<i>.{small,large}.allocated` is exactly what the session that owns arena i
 * allocated and still holds, and nmalloc - ndalloc its live blocks. Exact with thread caches
 * off (exec's default); with --tcache the census is off (a cached free still counts).
 *
 * Arenas are pooled: a session's arena whose census reaches zero is reused by a later session.
 * At most LGA_CENSUS_SLOTS arenas: past that (a program that keeps memory in 64 sessions, long
 * since judged), new sessions allocate in jemalloc's automatic arenas and the census says it is
 * capped. Between API sessions, before the first and in the agent's own work (in_agent), the
 * automatic arenas too: only sessions are counted. LEAKGATE_CENSUS=0 in the program's
 * environment turns it off (tests/bench/census_cost.sh measures its cost that way).
 */
#define _GNU_SOURCE
#include <jemalloc/jemalloc.h>
#include <stdlib.h>
#include <string.h>

#include "lga_impl.h"
#include "lga_wire.h"

_Atomic int lga_census_flags;

enum {
    ST_SMALL_ALLOC,
    ST_LARGE_ALLOC,
    ST_SMALL_NM,
    ST_SMALL_ND,
    ST_LARGE_NM,
    ST_LARGE_ND,
    ST_PACTIVE, /* pages */
    ST_RESIDENT,
    ST_BASE,
    ST_N
};
static const char *const stat_names[ST_N] = {
    "stats.arenas.0.small.allocated",
    "stats.arenas.0.large.allocated",
    "stats.arenas.0.small.nmalloc",
    "stats.arenas.0.small.ndalloc",
    "stats.arenas.0.large.nmalloc",
    "stats.arenas.0.large.ndalloc",
    "stats.arenas.0.pactive",
    "stats.arenas.0.resident",
    "stats.arenas.0.base",
};

struct census_slot {
    unsigned arena;
    int born; /* the agent's session index that owns it; -1 free */
};

/* Under lga.mu (session begins and ends). */
static struct {
    uint32_t state; /* LGA_CENSUS_* */
    int n;
    int current; /* the open session's slot, -1 none */
    struct census_slot slot[LGA_CENSUS_SLOTS];
    size_t mib[ST_N][5];
    size_t miblen[ST_N]; /* 5 (stats.arenas.<i>.small.allocated) or 4 (....pactive) */
    int64_t extra;       /* metadata the pool's arenas cost outside their own (mallctl's stats) */
} cs = {.current = -1};

void lga_census_init(void)
{
    const char *env = getenv("LEAKGATE_CENSUS"); /* "0": off, for the A/B of its cost */
    if (env && !strcmp(env, "0")) return;
    bool tcache = true, stats = false;
    size_t len = sizeof tcache;
    mallctl("opt.tcache", &tcache, &len, NULL, 0);
    len = sizeof stats;
    mallctl("config.stats", &stats, &len, NULL, 0);
    if (tcache || !stats) return; /* LGA_CENSUS_OFF */
    for (int i = 0; i < ST_N; i++) {
        size_t n = 5;
        if (mallctlnametomib(stat_names[i], cs.mib[i], &n) != 0 || (n != 5 && n != 4)) return;
        cs.miblen[i] = n;
    }
    cs.state = LGA_CENSUS_ON;
    lga_big_init();
}

static uint64_t stat(int which, unsigned arena);

/* jemalloc's metadata bytes, after an epoch (which also makes mallctl's stats of a new arena). */
static size_t metadata(void)
{
    uint64_t epoch = 1;
    size_t len = sizeof epoch, v = 0;
    mallctl("epoch", &epoch, &len, &epoch, sizeof epoch);
    len = sizeof v;
    mallctl("stats.metadata", &v, &len, NULL, 0);
    return v;
}

void lga_census_begin(int session)
{
    if (cs.state == LGA_CENSUS_OFF) return;
    int k = -1;
    for (int i = 0; i < cs.n && k < 0; i++)
        if (cs.slot[i].born < 0) k = i;
    if (k < 0 && cs.n < LGA_CENSUS_SLOTS) {
        /* what a new arena costs in metadata outside its own (the stats mallctl keeps for it):
         * the global metadata's growth across its creation, less the arena's own base */
        size_t before = metadata(), a_len = sizeof(unsigned);
        unsigned a;
        if (mallctl("arenas.create", &a, &a_len, NULL, 0) == 0) {
            k = cs.n++;
            cs.slot[k].arena = a;
            size_t after = metadata(), own = (size_t)stat(ST_BASE, a);
            if (after > before + own) cs.extra += (int64_t)(after - before - own);
        }
    }
    if (k < 0) {
        cs.state = LGA_CENSUS_CAPPED;
        return;
    }
    cs.slot[k].born = session;
    cs.current = k;
    lga_big_session(session);
    atomic_store(&lga_census_flags, (int)(MALLOCX_ARENA(cs.slot[k].arena) | MALLOCX_TCACHE_NONE));
}

void lga_census_end(void)
{
    lga_big_session(-1);
    atomic_store(&lga_census_flags, 0);
    cs.current = -1;
}

static uint64_t stat(int which, unsigned arena)
{
    size_t mib[5];
    memcpy(mib, cs.mib[which], sizeof mib);
    mib[2] = arena;
    uint64_t v = 0;
    size_t len = sizeof v;
    if (which == ST_SMALL_ALLOC || which == ST_LARGE_ALLOC || which == ST_PACTIVE ||
        which == ST_RESIDENT || which == ST_BASE) {
        size_t z = 0;
        len = sizeof z;
        if (mallctlbymib(mib, cs.miblen[which], &z, &len, NULL, 0) == 0) v = z;
        return v;
    }
    mallctlbymib(mib, cs.miblen[which], &v, &len, NULL, 0);
    return v;
}

void lga_census_overhead(int64_t *active, int64_t *resident)
{
    *active = *resident = 0;
    if (cs.state == LGA_CENSUS_OFF) return;
    size_t page = 4096, len = sizeof page;
    mallctl("arenas.page", &page, &len, NULL, 0);
    for (int i = 0; i < cs.n; i++) { /* every arena of the pool: the clean program's are constant */
        unsigned a = cs.slot[i].arena;
        int64_t blocks = (int64_t)(stat(ST_SMALL_ALLOC, a) + stat(ST_LARGE_ALLOC, a));
        int64_t act = (int64_t)stat(ST_PACTIVE, a) * (int64_t)page,
                res = (int64_t)stat(ST_RESIDENT, a);
        *active += act > blocks ? act - blocks : 0;
        *resident += res > blocks ? res - blocks : 0;
    }
    *resident += cs.extra;
}

/* Writes {state, n, n × {born, bytes, blocks}} for every arena holding live blocks, the open
 * session's included, and frees the slots of the others for reuse. Allocates nothing but the
 * encoder's buffer. */
void lga_census_put(struct lga_enc *e)
{
    lga_put_u32(e, cs.state);
    if (cs.state == LGA_CENSUS_OFF) {
        lga_put_u32(e, 0);
        return;
    }
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, sizeof epoch);
    uint32_t n = 0;
    int64_t bytes[LGA_CENSUS_SLOTS], blocks[LGA_CENSUS_SLOTS];
    for (int i = 0; i < cs.n; i++) {
        bytes[i] = blocks[i] = 0;
        if (cs.slot[i].born < 0) continue;
        unsigned a = cs.slot[i].arena;
        bytes[i] = (int64_t)(stat(ST_SMALL_ALLOC, a) + stat(ST_LARGE_ALLOC, a));
        /* the profiled session's blocks at their size classes, not jemalloc's 16 KiB extents */
        bytes[i] = LG_MAX(bytes[i] - lga_promote_census(cs.slot[i].born), 0);
        blocks[i] = (int64_t)(stat(ST_SMALL_NM, a) - stat(ST_SMALL_ND, a) + stat(ST_LARGE_NM, a) -
                              stat(ST_LARGE_ND, a));
        if (blocks[i] > 0)
            n++;
        else if (i != cs.current)
            cs.slot[i].born = -1; /* empty: nothing born there can come back */
    }
    /* oldest birth first (a reused slot may hold a later session than the slots after it) */
    int order[LGA_CENSUS_SLOTS], k = 0;
    for (int i = 0; i < cs.n; i++) {
        if (cs.slot[i].born < 0 || blocks[i] <= 0) continue;
        int j = k++;
        for (; j > 0 && cs.slot[order[j - 1]].born > cs.slot[i].born; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    lga_put_u32(e, n);
    for (int j = 0; j < k; j++) {
        int i = order[j];
        lga_put_u32(e, (uint32_t)cs.slot[i].born);
        lga_put_i64(e, bytes[i]);
        lga_put_i64(e, blocks[i]);
        lga_big_put(e, cs.slot[i].born); /* the stack of its largest big block, if any */
    }
}
