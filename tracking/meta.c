/* meta.c — memory for the tracker's own tables (ledger, tags, stacks, references), counted
 * by usable size in trk->overhead. A snapshot reports it, and the harness subtracts it from
 * jemalloc's figures: a tag table that grows in session 40 is the tracker's growth, not a
 * leak of the workload's. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "trk_impl.h"

static size_t usable(void *p) { return p ? malloc_usable_size(p) : 0; }

void *trk_meta_calloc(struct trk_tracker *trk, size_t n, size_t size)
{
    if (size && n > (SIZE_MAX - TRK_LINE) / size) return NULL;
    size_t bytes = (n * size + TRK_LINE - 1) / TRK_LINE * TRK_LINE;
    void *p = aligned_alloc(TRK_LINE, bytes ? bytes : TRK_LINE);
    if (!p) return NULL;
    memset(p, 0, bytes);
    atomic_fetch_add(&trk->overhead, (int64_t)usable(p));
    return p;
}

void *trk_meta_realloc(struct trk_tracker *trk, void *p, size_t size)
{
    size_t before = usable(p);
    void *q = realloc(p, size);
    if (q) atomic_fetch_add(&trk->overhead, (int64_t)usable(q) - (int64_t)before);
    return q;
}

void trk_meta_free(struct trk_tracker *trk, void *p)
{
    if (!p) return;
    atomic_fetch_sub(&trk->overhead, (int64_t)usable(p));
    free(p);
}
