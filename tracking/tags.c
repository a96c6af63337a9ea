/* tags.c — interned allocation tags and their per-space counters.
 *
 * Tags live in fixed chunks that never move, so a reader holding a tag id needs no lock.
 * Interning looks first in a per-thread one-entry cache (the same tag string is usually
 * passed many times in a row), then under a read lock in an open-addressing index, and only
 * takes the write lock to add a new tag.
 */
#include <stdlib.h>
#include <string.h>

#include "trk_impl.h"

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int trk_tags_init(struct trk_tracker *trk)
{
    struct trk_tags *t = &trk->tags;
    pthread_rwlock_init(&t->lock, NULL);
    t->index_cap = 1024;
    t->index = calloc(t->index_cap, sizeof *t->index);
    if (!t->index) return lg_fail(LG_ENOMEM, "tracker: no memory for the tag index");
    atomic_fetch_add(&trk->overhead, (int64_t)(t->index_cap * sizeof *t->index));
    return LG_OK;
}

void trk_tags_fini(struct trk_tracker *trk)
{
    struct trk_tags *t = &trk->tags;
    for (size_t i = 0; i < TRK_TAG_MAX_CHUNKS && t->chunks[i]; i++) free(t->chunks[i]);
    free(t->index);
    pthread_rwlock_destroy(&t->lock);
}

/* Looks a name up in the index; caller holds the lock (read or write). */
static uint32_t find_locked(struct trk_tracker *trk, const char *name, uint64_t h)
{
    struct trk_tags *t = &trk->tags;
    size_t mask = t->index_cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t e = t->index[i];
        if (e == 0) return UINT32_MAX;
        if (strcmp(trk_tag_get(trk, e - 1)->name, name) == 0) return e - 1;
    }
}

static int grow_index_locked(struct trk_tracker *trk)
{
    struct trk_tags *t = &trk->tags;
    size_t ncap = t->index_cap * 2;
    uint32_t *ni = calloc(ncap, sizeof *ni);
    if (!ni) return LG_ENOMEM;
    uint32_t n = atomic_load(&t->count);
    for (uint32_t id = 0; id < n; id++) {
        size_t i = hash_str(trk_tag_get(trk, id)->name) & (ncap - 1);
        while (ni[i]) i = (i + 1) & (ncap - 1);
        ni[i] = id + 1;
    }
    atomic_fetch_add(&trk->overhead, (int64_t)((ncap - t->index_cap) * sizeof *ni));
    free(t->index);
    t->index = ni;
    t->index_cap = ncap;
    return LG_OK;
}

/* Keyed by the tracker's serial, not its address: a new tracker may reuse an old address. */
static _Thread_local struct {
    uint64_t serial;
    uint32_t id;
    char name[LG_MAX_NAME];
} tl_last;

uint32_t trk_tag_intern(struct trk_tracker *trk, const char *name)
{
    char buf[LG_MAX_NAME];
    if (!name || !*name) name = "untagged";
    /* the common case: the same tag as this thread's last call (equal means short enough) */
    if (tl_last.serial == trk->serial && strcmp(tl_last.name, name) == 0) return tl_last.id;
    if (strlen(name) >= LG_MAX_NAME) { /* truncate long tags */
        lg_strlcpy(buf, name, sizeof buf);
        name = buf;
        if (tl_last.serial == trk->serial && strcmp(tl_last.name, name) == 0) return tl_last.id;
    }

    struct trk_tags *t = &trk->tags;
    uint64_t h = hash_str(name);
    pthread_rwlock_rdlock(&t->lock);
    uint32_t id = find_locked(trk, name, h);
    pthread_rwlock_unlock(&t->lock);
    if (id == UINT32_MAX) {
        pthread_rwlock_wrlock(&t->lock);
        id = find_locked(trk, name, h); /* another thread may have added it */
        if (id == UINT32_MAX) {
            uint32_t n = atomic_load(&t->count);
            size_t chunk = n / TRK_TAG_CHUNK;
            if (chunk >= TRK_TAG_MAX_CHUNKS) goto full;
            if (!t->chunks[chunk]) {
                t->chunks[chunk] = calloc(TRK_TAG_CHUNK, sizeof(struct trk_tag));
                if (!t->chunks[chunk]) goto full;
                atomic_fetch_add(&trk->overhead,
                                 (int64_t)(TRK_TAG_CHUNK * sizeof(struct trk_tag)));
            }
            if ((size_t)(n + 1) * 2 > t->index_cap && grow_index_locked(trk) != LG_OK) goto full;
            lg_strlcpy(trk_tag_get(trk, n)->name, name, LG_MAX_NAME);
            size_t mask = t->index_cap - 1;
            size_t i = h & mask;
            while (t->index[i]) i = (i + 1) & mask;
            t->index[i] = n + 1;
            atomic_store(&t->count, n + 1);
            id = n;
        }
        pthread_rwlock_unlock(&t->lock);
    }
    tl_last.serial = trk->serial;
    tl_last.id = id;
    lg_strlcpy(tl_last.name, name, sizeof tl_last.name);
    return id;
full:
    pthread_rwlock_unlock(&t->lock);
    return UINT32_MAX;
}

void trk_tag_class(const char *tag, char *buf, size_t size)
{
    const char *slash = strchr(tag, '/');
    size_t n = slash ? (size_t)(slash - tag) : strlen(tag);
    if (n >= size) n = size - 1;
    memcpy(buf, tag, n);
    buf[n] = '\0';
}

size_t trk_tag_stats(struct trk_tracker *trk, struct trk_tag_stat **out)
{
    uint32_t n = atomic_load(&trk->tags.count);
    struct trk_tag_stat *v = calloc((size_t)n * TRK_NSPACES + 1, sizeof *v);
    *out = v;
    if (!v) return 0;
    size_t k = 0;
    trk_spin_lock(&trk->led.lock);
    for (uint32_t id = 0; id < n; id++) {
        struct trk_tag *t = trk_tag_get(trk, id);
        for (int s = 0; s < TRK_NSPACES; s++) {
            if (t->total_count[s] == 0) continue;
            struct trk_tag_stat *o = &v[k++];
            lg_strlcpy(o->tag, t->name, sizeof o->tag);
            o->space = (enum trk_space)s;
            o->live_bytes = t->live_bytes[s];
            o->live_count = t->live_count[s];
            o->peak_bytes = t->peak_bytes[s];
            o->total_bytes = t->total_bytes[s];
            o->total_count = t->total_count[s];
        }
    }
    trk_spin_unlock(&trk->led.lock);
    return k;
}

void trk_reset_peaks(struct trk_tracker *trk)
{
    uint32_t n = atomic_load(&trk->tags.count);
    trk_spin_lock(&trk->led.lock);
    for (uint32_t id = 0; id < n; id++) {
        struct trk_tag *t = trk_tag_get(trk, id);
        for (int s = 0; s < TRK_NSPACES; s++) t->peak_bytes[s] = t->live_bytes[s];
    }
    for (int s = 0; s < TRK_NSPACES; s++) trk->led.peak[s] = trk->led.live[s];
    trk_spin_unlock(&trk->led.lock);
}

void trk_totals(struct trk_tracker *trk, enum trk_space space, struct trk_totals *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = atomic_load(&trk->tags.count);
    trk_spin_lock(&trk->led.lock);
    for (uint32_t id = 0; id < n; id++) {
        struct trk_tag *t = trk_tag_get(trk, id);
        out->live_count += t->live_count[space];
        out->total_bytes += t->total_bytes[space];
        out->total_count += t->total_count[space];
    }
    out->live_bytes = trk->led.live[space];
    out->peak_bytes = trk->led.peak[space];
    trk_spin_unlock(&trk->led.lock);
}

static int cmp_stat_key(const struct trk_tag_stat *a, const struct trk_tag_stat *b)
{
    int c = strcmp(a->tag, b->tag);
    return c ? c : (int)a->space - (int)b->space;
}

void trk_tag_diff_print(const struct trk_tag_stat *a, size_t na, const struct trk_tag_stat *b,
                        size_t nb, FILE *f)
{
    /* Both arrays come from trk_tag_stats of one tracker: tag ids only grow, so b lists
     * every tag of a in the same order, plus new ones. Match by key to be safe. */
    for (size_t j = 0; j < nb; j++) {
        int64_t before = 0;
        for (size_t i = 0; i < na; i++)
            if (cmp_stat_key(&a[i], &b[j]) == 0) {
                before = a[i].live_bytes;
                break;
            }
        int64_t d = b[j].live_bytes - before;
        if (d == 0) continue;
        char buf[32];
        fprintf(f, "  %+14lld B  %-10s %s %s\n", (long long)d, lg_fmt_bytes(buf, sizeof buf, (double)d),
                b[j].space == TRK_DEVICE ? "[device]" : "[host]  ", b[j].tag);
    }
}
