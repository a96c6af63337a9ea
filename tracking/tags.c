/* tags.c — interned allocation tags and their per-space counters.
 *
 * Tags live in fixed chunks that never move, so a reader holding a tag id needs no lock.
 * Interning is on every allocation's path, so it is made cheap: one hash of the name and a
 * lock-free probe of the shared index, whose slots carry bits of each tag's hash, so a name is
 * compared (by length, then bytes) only with the tag it almost surely is; only a new tag takes
 * the writers' lock.
 */
#include <stdlib.h>
#include <string.h>

#include "trk_impl.h"

/* A hash of the string, 8 bytes at a time, the last word overlapping the one before it (no
 * partial copy); *len receives its length. */
static inline __attribute__((always_inline)) uint64_t hash_str(const char *s, size_t *len)
{
    size_t n = strlen(s);
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n, w = 0;
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&w, s + i, 8);
            h = (h ^ w) * 0xff51afd7ed558ccdull;
            h ^= h >> 32;
        }
        memcpy(&w, s + n - 8, 8);
    } else {
        for (size_t i = 0; i < n; i++) w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    }
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    *len = n;
    return h;
}

static struct trk_tag_index *index_new(struct trk_tracker *trk, size_t cap)
{
    struct trk_tag_index *x = trk_meta_calloc(trk, 1, sizeof *x + cap * sizeof x->slot[0]);
    if (x) x->cap = cap;
    return x;
}

int trk_tags_init(struct trk_tracker *trk)
{
    struct trk_tags *t = &trk->tags;
    pthread_mutex_init(&t->lock, NULL);
    struct trk_tag_index *x = index_new(trk, 1024);
    if (!x) return lg_fail(LG_ENOMEM, "tracker: no memory for the tag index");
    atomic_store(&t->index, x);
    return LG_OK;
}

void trk_tags_fini(struct trk_tracker *trk)
{
    struct trk_tags *t = &trk->tags;
    for (size_t i = 0; i < TRK_TAG_MAX_CHUNKS && t->chunks[i]; i++)
        trk_meta_free(trk, t->chunks[i]);
    for (struct trk_tag_index *x = atomic_load(&t->index), *next; x; x = next) {
        next = x->retired;
        trk_meta_free(trk, x);
    }
    pthread_mutex_destroy(&t->lock);
}

static uint32_t slot_value(uint64_t h, uint32_t id)
{
    return (uint32_t)(h >> (64 - (32 - TRK_TAG_ID_BITS))) << TRK_TAG_ID_BITS | (id + 1);
}

/* Probes an index for name (len bytes, hash h); UINT32_MAX when absent. Safe without a lock: a
 * slot is either 0 or names a tag whose name, length and hash were written before the slot was
 * published. */
static inline __attribute__((always_inline)) uint32_t probe(struct trk_tracker *trk,
                                                            const struct trk_tag_index *x,
                                                            const char *name, size_t len,
                                                            uint64_t h)
{
    const uint32_t id_mask = (1u << TRK_TAG_ID_BITS) - 1, check = slot_value(h, 0) & ~id_mask;
    size_t mask = x->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t e = atomic_load_explicit(&x->slot[i], memory_order_acquire);
        if (e == 0) return UINT32_MAX;
        if ((e & ~id_mask) != check) continue;
        const struct trk_tag *tg = trk_tag_get(trk, (e & id_mask) - 1);
        if (tg->len == len && memcmp(tg->name, name, len) == 0) return (e & id_mask) - 1;
    }
}

static void place(struct trk_tag_index *x, uint64_t h, uint32_t id)
{
    size_t mask = x->cap - 1, i = h & mask;
    while (atomic_load_explicit(&x->slot[i], memory_order_relaxed)) i = (i + 1) & mask;
    atomic_store_explicit(&x->slot[i], slot_value(h, id), memory_order_release);
}

/* The class slot of a new tag's name; caller holds the writers' lock. A name is written before
 * the count that publishes it. */
static uint32_t class_of(struct trk_tags *t, const char *name)
{
    char cls[LG_MAX_CLASS];
    lg_tag_class(name, cls, sizeof cls);
    uint32_t n = atomic_load(&t->n_classes);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(t->classes[i].name, cls) == 0) return i;
    if (n == TRK_MAX_CLASSES - 1) lg_strlcpy(cls, "(other)", sizeof cls);
    if (n == TRK_MAX_CLASSES) return n - 1;
    lg_strlcpy(t->classes[n].name, cls, sizeof t->classes[n].name);
    atomic_store_explicit(&t->n_classes, n + 1, memory_order_release);
    return n;
}

/* Adds name (absent from the index) as a new tag; caller holds the writers' lock. */
static uint32_t add_locked(struct trk_tracker *trk, const char *name, size_t len, uint64_t h)
{
    struct trk_tags *t = &trk->tags;
    uint32_t n = atomic_load(&t->count);
    size_t chunk = n / TRK_TAG_CHUNK;
    if (chunk >= TRK_TAG_MAX_CHUNKS) return UINT32_MAX;
    if (!t->chunks[chunk]) {
        t->chunks[chunk] = trk_meta_calloc(trk, TRK_TAG_CHUNK, sizeof(struct trk_tag));
        if (!t->chunks[chunk]) return UINT32_MAX;
    }
    struct trk_tag_index *x = atomic_load(&t->index);
    if ((size_t)(n + 1) * 2 > x->cap) { /* grow: copy into a new index, then publish it */
        struct trk_tag_index *bigger = index_new(trk, x->cap * 2);
        if (!bigger) return UINT32_MAX;
        for (uint32_t id = 0; id < n; id++) place(bigger, trk_tag_get(trk, id)->hash, id);
        bigger->retired = x;
        atomic_store_explicit(&t->index, bigger, memory_order_release);
        x = bigger;
    }
    struct trk_tag *tg = trk_tag_get(trk, n);
    memcpy(tg->name, name, len + 1);
    tg->len = (uint32_t)len;
    tg->hash = h;
    tg->cls = class_of(t, name);
    atomic_store_explicit(&t->count, n + 1, memory_order_release);
    place(x, h, n);
    return n;
}

/* A name the index did not hold: added under the writers' lock, unless another thread added it
 * first. Out of the way of the common path (its frame holds a name buffer). */
static __attribute__((noinline)) uint32_t intern_slow(struct trk_tracker *trk, const char *name)
{
    char buf[LG_MAX_NAME];
    size_t len;
    uint64_t h = hash_str(name, &len);
    if (len >= LG_MAX_NAME) { /* truncate long tags */
        lg_strlcpy(buf, name, sizeof buf);
        name = buf;
        h = hash_str(name, &len);
    }
    struct trk_tags *t = &trk->tags;
    uint32_t id = probe(trk, atomic_load_explicit(&t->index, memory_order_acquire), name, len, h);
    if (id != UINT32_MAX) return id; /* a long name, truncated to a known tag */
    pthread_mutex_lock(&t->lock);
    id = probe(trk, atomic_load(&t->index), name, len, h); /* another thread may have added it */
    if (id == UINT32_MAX) id = add_locked(trk, name, len, h);
    pthread_mutex_unlock(&t->lock);
    return id;
}

struct trk_tag_key trk_tag_key(struct trk_tracker *trk, const char *name)
{
    struct trk_tag_key k = {.name = name && *name ? name : "untagged"};
    k.hash = hash_str(k.name, &k.len);
    const struct trk_tag_index *x = atomic_load_explicit(&trk->tags.index, memory_order_acquire);
    __builtin_prefetch(&x->slot[k.hash & (x->cap - 1)]);
    return k;
}

uint32_t trk_tag_intern_key(struct trk_tracker *trk, const struct trk_tag_key *k)
{
    uint32_t id = k->len < LG_MAX_NAME
                      ? probe(trk, atomic_load_explicit(&trk->tags.index, memory_order_acquire),
                              k->name, k->len, k->hash)
                      : UINT32_MAX;
    return id != UINT32_MAX ? id : intern_slow(trk, k->name);
}

uint32_t trk_tag_intern(struct trk_tracker *trk, const char *name)
{
    struct trk_tag_key k = trk_tag_key(trk, name);
    return trk_tag_intern_key(trk, &k);
}

uint32_t trk_tag_id(struct trk_tracker *trk, const char *name)
{
    uint32_t id = trk_tag_intern(trk, name);
    if (id == UINT32_MAX)
        lg_fail(LG_ENOMEM, "tracker: no memory for the tag %s", name && *name ? name : "untagged");
    return id;
}

bool trk_tag_is(struct trk_tracker *trk, uint32_t id, const char *name)
{
    if (id >= atomic_load_explicit(&trk->tags.count, memory_order_acquire)) return false;
    return strcmp(trk_tag_get(trk, id)->name, name) == 0;
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
            const struct trk_count *c = trk_tag_count(t, (uint32_t)s);
            if (c->total_count == 0) continue;
            struct trk_tag_stat *o = &v[k++];
            lg_strlcpy(o->tag, t->name, sizeof o->tag);
            o->space = (enum trk_space)s;
            o->live_bytes = c->live_bytes;
            o->live_count = c->live_count;
            o->peak_bytes = c->peak_bytes;
            o->total_bytes = c->total_bytes;
            o->total_count = c->total_count;
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
        for (int s = 0; s < TRK_NSPACES; s++) {
            struct trk_count *c = trk_tag_count(t, (uint32_t)s);
            c->peak_bytes = c->live_bytes;
        }
    }
    for (int s = 0; s < TRK_NSPACES; s++) trk->led.peak[s] = trk->led.live[s];
    uint32_t nc = atomic_load_explicit(&trk->tags.n_classes, memory_order_acquire);
    for (uint32_t c = 0; c < nc; c++)
        for (int s = 0; s < TRK_NSPACES; s++)
            trk->tags.classes[c].peak[s] = trk->tags.classes[c].live[s];
    trk_spin_unlock(&trk->led.lock);
}

size_t trk_class_stats(struct trk_tracker *trk, struct trk_class_stat *out, size_t cap)
{
    size_t k = 0;
    uint32_t nc = atomic_load_explicit(&trk->tags.n_classes, memory_order_acquire);
    trk_spin_lock(&trk->led.lock);
    for (uint32_t c = 0; c < nc; c++)
        for (int s = 0; s < TRK_NSPACES && k < cap; s++) {
            const struct trk_class *cl = &trk->tags.classes[c];
            if (cl->peak[s] == 0 && cl->live[s] == 0) continue;
            lg_strlcpy(out[k].cls, cl->name, sizeof out[k].cls);
            out[k].space = (enum trk_space)s;
            out[k].live_bytes = cl->live[s];
            out[k++].peak_bytes = cl->peak[s];
        }
    trk_spin_unlock(&trk->led.lock);
    return k;
}

void trk_totals(struct trk_tracker *trk, enum trk_space space, struct trk_totals *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = atomic_load(&trk->tags.count);
    trk_spin_lock(&trk->led.lock);
    for (uint32_t id = 0; id < n; id++) {
        const struct trk_count *c = trk_tag_count(trk_tag_get(trk, id), space);
        out->live_count += c->live_count;
        out->total_bytes += c->total_bytes;
        out->total_count += c->total_count;
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
        fprintf(f, "  %+14lld B  %-10s %s %s\n", (long long)d,
                lg_fmt_bytes(buf, sizeof buf, (double)d),
                b[j].space == TRK_DEVICE ? "[device]" : "[host]  ", b[j].tag);
    }
}
