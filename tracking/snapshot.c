/* snapshot.c — every memory view at one moment, and the quiesce that comes before it.
 *
 * Views, most exact first: the tracker's own ledger (tagged bytes); jemalloc's statistics
 * (refreshed by writing "epoch" first); the dedicated arena's own figures; the kernel's view of
 * the process from /proc/self/smaps_rollup (Rss, Anonymous, LazyFree — pages freed with
 * MADV_FREE still count in Rss until reclaimed, so LazyFree is reported beside it); and the
 * device driver's view through the device backend (left out of the light snapshot that
 * in-session timeline samples take: it queries the driver).
 *
 * A snapshot allocates nothing on the heap: reading statistics must not move them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef LG_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "trk_impl.h"

#ifdef LG_HAVE_JEMALLOC
static int64_t je_size(const char *name)
{
    size_t v = 0, len = sizeof v;
    return mallctl(name, &v, &len, NULL, 0) == 0 ? (int64_t)v : -1;
}
#endif

/* Parses "Key:   1234 kB" lines of smaps_rollup into bytes. */
static void read_smaps_rollup(struct trk_snapshot *s)
{
    s->rss = s->rss_anon = s->rss_file = s->lazyfree = -1;
    int fd = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = '\0';
    struct {
        const char *key;
        int64_t *dst;
    } keys[] = {{"Rss:", &s->rss}, {"Anonymous:", &s->rss_anon}, {"LazyFree:", &s->lazyfree}};
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        for (size_t k = 0; k < LG_ARRAY_LEN(keys); k++) {
            size_t kl = strlen(keys[k].key);
            if (strncmp(line, keys[k].key, kl) == 0)
                *keys[k].dst = strtoll(line + kl, NULL, 10) * 1024;
        }
        line = nl ? nl + 1 : NULL;
    }
    if (s->rss >= 0 && s->rss_anon >= 0) s->rss_file = s->rss - s->rss_anon;
}

/* Every view; the device's driver view only when `device` (a driver query: not for every
 * training step). */
static void snapshot(struct trk_tracker *trk, struct trk_snapshot *s, bool device)
{
    memset(s, 0, sizeof *s);
    s->t = lg_now();
    s->generation = atomic_load(&trk->gen);
    struct trk_totals host, dev;
    trk_totals(trk, TRK_HOST, &host);
    trk_totals(trk, TRK_DEVICE, &dev);
    s->tagged_host = host.live_bytes;
    s->tagged_host_count = host.live_count;
    s->tagged_device = dev.live_bytes;
    s->tagged_device_count = dev.live_count;
    s->tracker_overhead = atomic_load(&trk->overhead);
    s->je_allocated = s->je_active = s->je_resident = s->je_mapped = s->je_retained = -1;
    s->je_metadata = s->arena_allocated = s->arena_active = s->arena_dirty = -1;
#ifdef LG_HAVE_JEMALLOC
    uint64_t epoch = 1;
    size_t elen = sizeof epoch;
    mallctl("epoch", &epoch, &elen, &epoch, elen);
    s->je_allocated = je_size("stats.allocated");
    s->je_active = je_size("stats.active");
    s->je_resident = je_size("stats.resident");
    s->je_mapped = je_size("stats.mapped");
    s->je_retained = je_size("stats.retained");
    s->je_metadata = je_size("stats.metadata");
    if (trk->have_arena) {
        char name[96];
        int64_t page = je_size("arenas.page");
        snprintf(name, sizeof name, "stats.arenas.%u.small.allocated", trk->arena);
        int64_t small = je_size(name);
        snprintf(name, sizeof name, "stats.arenas.%u.large.allocated", trk->arena);
        int64_t large = je_size(name);
        if (small >= 0 && large >= 0) s->arena_allocated = small + large;
        snprintf(name, sizeof name, "stats.arenas.%u.pactive", trk->arena);
        int64_t pactive = je_size(name);
        snprintf(name, sizeof name, "stats.arenas.%u.pdirty", trk->arena);
        int64_t pdirty = je_size(name);
        if (page > 0 && pactive >= 0) s->arena_active = pactive * page;
        if (page > 0 && pdirty >= 0) s->arena_dirty = pdirty * page;
    }
#endif
    read_smaps_rollup(s);
    s->dev_used = s->dev_total = s->dev_process = -1;
    if (device && trk->have_dev && trk->dev.usage)
        trk->dev.usage(trk->dev.ctx, &s->dev_used, &s->dev_total, &s->dev_process);
}

void trk_snapshot(struct trk_tracker *trk, struct trk_snapshot *s) { snapshot(trk, s, true); }

void trk_snapshot_light(struct trk_tracker *trk, struct trk_snapshot *s)
{
    snapshot(trk, s, false);
}

int trk_quiesce(struct trk_tracker *trk)
{
    int rc = LG_OK;
    if (trk->have_dev && trk->dev.sync) rc = trk->dev.sync(trk->dev.ctx);
#ifdef LG_HAVE_JEMALLOC
    mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    char name[64];
    snprintf(name, sizeof name, "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
    mallctl(name, NULL, NULL, NULL, 0);
#endif
    return rc;
}

#if defined(__SANITIZE_ADDRESS__)
#define LG_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LG_UNDER_ASAN 1
#endif
#endif

bool trk_build_has_allocator_stats(void)
{
#ifdef LG_HAVE_JEMALLOC
    return true;
#else
    return false;
#endif
}

bool trk_build_has_rss(void)
{
#ifdef LG_UNDER_ASAN
    return false; /* AddressSanitizer's quarantine holds freed memory: RSS says nothing of leaks */
#else
    return true;
#endif
}

const char *trk_allocator_name(void)
{
#ifdef LG_HAVE_JEMALLOC
    static char name[96];
    const char *v = NULL;
    size_t len = sizeof v;
    if (!name[0])
        snprintf(name, sizeof name, "jemalloc %s",
                 mallctl("version", &v, &len, NULL, 0) == 0 && v ? v : "?");
    return name;
#else
    return "system malloc (no jemalloc in this build)";
#endif
}
