/* tensor_pool.c — pools of tensor and storage structs (tensor.h): slabs of 64 slots, tracked
 * under the pool's tag, handed out from a free list. A training step makes and drops a few
 * thousand tensors; with their structs from a pool each costs one tracked allocation (its data)
 * instead of three.
 *
 * Life cycle: the pool holds its slabs; tn_pool_free gives the pool up, freeing the slabs with no
 * slot in use, and every other slab goes with its last slot (a tensor that outlives its context,
 * such as a kept tape, keeps its slab, which a leak report then names beside the tensor's own
 * data). The pool struct goes with its last slab. One spinlock guards the free list and the
 * counts: tensors are made and dropped by one thread at a time, so it is rarely contended. */
#include <sched.h>
#include <string.h>

#include "tn_pool_impl.h"

#define TN_SLAB_CELLS 64
#define TN_POOL_MEMO  4096 /* tag ids remembered: more than a training step's tensors */

struct tn_slab {
    struct tn_pool *pool;
    struct tn_slab *next; /* the pool's slabs */
    int live;             /* slots in use */
    struct tn_cell cells[TN_SLAB_CELLS];
};

struct tn_pool {
    struct trk_tracker *trk;
    char tag[LG_MAX_NAME];
    int lock;
    bool dead; /* given up: no slot is handed out, slabs go with their last slot */
    int slabs; /* alive */
    struct tn_slab *all;
    struct tn_cell *free;
    /* the tag ids of the data allocations since the last rewind, in order (tn_pool_tag_id);
     * read and written with relaxed atomics: a stale id only costs a lookup */
    unsigned memo_pos;
    uint32_t memo[TN_POOL_MEMO];
};

static void pool_lock(struct tn_pool *p)
{
    while (__atomic_exchange_n(&p->lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&p->lock, __ATOMIC_RELAXED)) sched_yield();
}

static void pool_unlock(struct tn_pool *p) { __atomic_store_n(&p->lock, 0, __ATOMIC_RELEASE); }

/* Freed with tn_pool_free. */
struct tn_pool *tn_pool_new(struct trk_tracker *trk, const char *tag)
{
    struct tn_pool *p = trk_calloc(trk, sizeof *p, tag);
    if (!p) return NULL;
    p->trk = trk;
    lg_strlcpy(p->tag, tag, sizeof p->tag);
    return p;
}

/* Unlinks and frees slab s (no slot in use); caller holds the lock. */
static void slab_free_locked(struct tn_pool *p, struct tn_slab *s)
{
    for (struct tn_slab **at = &p->all; *at; at = &(*at)->next)
        if (*at == s) {
            *at = s->next;
            break;
        }
    p->slabs--;
    trk_free(p->trk, s);
}

void tn_pool_free(struct tn_pool *p)
{
    if (!p) return;
    pool_lock(p);
    p->dead = true;
    p->free = NULL; /* no slot is handed out again: the list may point into freed slabs */
    for (struct tn_slab *s = p->all, *next; s; s = next) {
        next = s->next;
        if (s->live == 0) slab_free_locked(p, s);
    }
    bool last = p->slabs == 0;
    pool_unlock(p);
    if (last) trk_free(p->trk, p);
}

struct tn_cell *tn_cell_get(struct tn_pool *p, int uses)
{
    pool_lock(p);
    if (p->dead) {
        pool_unlock(p);
        return NULL;
    }
    if (!p->free) {
        struct tn_slab *s = trk_alloc(p->trk, sizeof *s, p->tag);
        if (!s) {
            pool_unlock(p);
            return NULL;
        }
        s->pool = p;
        s->live = 0;
        s->next = p->all;
        p->all = s;
        p->slabs++;
        for (int i = TN_SLAB_CELLS - 1; i >= 0; i--) {
            s->cells[i].slab = s;
            s->cells[i].next = p->free;
            p->free = &s->cells[i];
        }
    }
    struct tn_cell *c = p->free;
    p->free = c->next;
    c->slab->live++;
    c->uses = uses;
    pool_unlock(p);
    return c;
}

void tn_cell_put(struct tn_cell *c, int use)
{
    if (__atomic_and_fetch(&c->uses, ~use, __ATOMIC_ACQ_REL) != 0) return;
    struct tn_slab *s = c->slab;
    struct tn_pool *p = s->pool;
    pool_lock(p);
    s->live--;
    bool gone = false;
    if (!p->dead) {
        c->next = p->free;
        p->free = c;
    } else if (s->live == 0) {
        slab_free_locked(p, s);
        gone = p->slabs == 0;
    }
    pool_unlock(p);
    if (gone) trk_free(p->trk, p);
}

struct tn_pool *tn_cell_pool(const struct tn_cell *c)
{
    struct tn_pool *p = c->slab->pool;
    return __atomic_load_n(&p->dead, __ATOMIC_ACQUIRE) ? NULL : p;
}

uint32_t tn_pool_tag_id(struct tn_pool *p, const char *name)
{
    /* a load and a store, not a locked add: two threads that take one k both check the name */
    unsigned k = __atomic_load_n(&p->memo_pos, __ATOMIC_RELAXED);
    __atomic_store_n(&p->memo_pos, k + 1, __ATOMIC_RELAXED);
    if (k >= TN_POOL_MEMO) return trk_tag_id(p->trk, name);
    uint32_t id = __atomic_load_n(&p->memo[k], __ATOMIC_RELAXED);
    if (trk_tag_is(p->trk, id, name)) return id;
    id = trk_tag_id(p->trk, name);
    __atomic_store_n(&p->memo[k], id, __ATOMIC_RELAXED);
    return id;
}

void tn_pool_rewind(struct tn_pool *p)
{
    if (p) __atomic_store_n(&p->memo_pos, 0, __ATOMIC_RELAXED);
}

struct trk_tracker *tn_pool_tracker(const struct tn_pool *pool) { return pool->trk; }
