/* bench_tracking — per-call cost of a tracked alloc+free against the raw jemalloc calls it
 * wraps, for sizes from 64 B to 64 MiB, in one run (ratios are what matter on a noisy
 * machine). Target: <= 1.3x the raw cost at >= 4 KiB with stacks off.
 *
 *   build/tests/bench/bench_tracking [--quick]
 *
 * Each row times, interleaved and repeated, (a) mallocx+dallocx on the tracker's own arena with
 * its own flags (trk_impl.h), (b) trk_alloc+trk_free, (b') trk_alloc_id+trk_free (the tag
 * resolved once, as a tensor pool does), (c) trk_alloc+trk_free with stacks on, and (d) plain
 * malloc+free (jemalloc's default arena with its thread cache and its
 * default 10 s decay, so blocks of several MiB go back to the kernel between calls). The
 * working set keeps 16 blocks live, so each call is a real allocation, not a cache hit of
 * the block just freed. The best of 5 rounds is reported.
 */
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracking.h"
#include "trk_impl.h" /* the tracker's arena and mallocx flags */

#define LIVE 16

static double run_raw(int flags, size_t size, int iters)
{
    void *slot[LIVE] = {0};
    double t0 = lg_now();
    for (int i = 0; i < iters; i++) {
        int k = i % LIVE;
        if (slot[k]) dallocx(slot[k], flags);
        slot[k] = mallocx(size, flags);
        *(volatile char *)slot[k] = 1;
    }
    for (int k = 0; k < LIVE; k++)
        if (slot[k]) dallocx(slot[k], flags);
    return (lg_now() - t0) / iters;
}

static double run_malloc(size_t size, int iters)
{
    void *slot[LIVE] = {0};
    double t0 = lg_now();
    for (int i = 0; i < iters; i++) {
        int k = i % LIVE;
        free(slot[k]);
        slot[k] = malloc(size);
        *(volatile char *)slot[k] = 1;
    }
    for (int k = 0; k < LIVE; k++) free(slot[k]);
    return (lg_now() - t0) / iters;
}

#define TAG "varmap/enc_vsn.var_grn.dow.fc1.weight"

/* by_id: the tag resolved once (trk_alloc_id), else looked up by name on every call */
static double run_trk(struct trk_tracker *trk, size_t size, int iters, bool by_id)
{
    void *slot[LIVE] = {0};
    uint32_t id = trk_tag_id(trk, TAG);
    double t0 = lg_now();
    for (int i = 0; i < iters; i++) {
        int k = i % LIVE;
        trk_free(trk, slot[k]);
        slot[k] = by_id ? trk_alloc_id(trk, size, id) : trk_alloc(trk, size, TAG);
        *(volatile char *)slot[k] = 1;
    }
    for (int k = 0; k < LIVE; k++) trk_free(trk, slot[k]);
    return (lg_now() - t0) / iters;
}

static double min2(double a, double b) { return a < b ? a : b; }

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    struct trk_tracker *trk = NULL, *trk_st = NULL;
    if (trk_tracker_new(&trk, NULL) != LG_OK ||
        trk_tracker_new(&trk_st, &(struct trk_options){.stacks = true}) != LG_OK) {
        fprintf(stderr, "bench_tracking: %s\n", lg_errmsg());
        return 4;
    }
    /* raw calls on the tracker's own arena (no time-based purging), with its own flags */
    if (!trk->have_arena) {
        fprintf(stderr, "bench_tracking: the tracker has no arena of its own\n");
        return 4;
    }
    int flags = trk->mallocx_flags;

    printf(
        "tracked alloc+free vs raw mallocx+dallocx (dedicated arena, tcache off, 64-byte aligned)\n");
    printf("%10s %12s %12s %8s %12s %8s %14s %8s %12s\n", "size", "raw ns", "tracked ns", "ratio",
           "by id ns", "ratio", "stacks on ns", "ratio", "malloc ns");
    for (size_t size = 64; size <= ((size_t)64 << 20); size *= 4) {
        int iters = size <= 65536 ? 200000 : size <= (4 << 20) ? 20000 : 2000;
        if (quick) iters /= 10;
        double raw = 1e9, tr = 1e9, id = 1e9, st = 1e9, ml = 1e9;
        for (int round = 0; round < 5; round++) { /* interleaved, best of 5 */
            raw = min2(raw, run_raw(flags, size, iters));
            tr = min2(tr, run_trk(trk, size, iters, false));
            id = min2(id, run_trk(trk, size, iters, true));
            st = min2(st, run_trk(trk_st, size, iters / 4 + 1, false));
            ml = min2(ml, run_malloc(size, iters));
        }
        char b[32];
        printf("%10s %12.1f %12.1f %7.2fx %12.1f %7.2fx %14.1f %7.2fx %12.1f\n",
               lg_fmt_bytes(b, sizeof b, (double)size), raw * 1e9, tr * 1e9, tr / raw, id * 1e9,
               id / raw, st * 1e9, st / raw, ml * 1e9);
    }
    trk_tracker_free(trk);
    trk_tracker_free(trk_st);
    return 0;
}
