/* tn_pool_impl.h — private to model/tensor: the slots of a tensor pool (tensor_pool.c) and what
 * tensor.c calls to take and give them back. */
#ifndef LG_TN_POOL_IMPL_H
#define LG_TN_POOL_IMPL_H

#include "tensor.h"

/* One slot: a tensor struct and a storage struct, in use by a tensor (TN_CELL_TENSOR), by a
 * storage (TN_CELL_STORAGE, shared with views through its refs), or both. A slot goes back to
 * its pool when neither uses it. */
enum { TN_CELL_TENSOR = 1, TN_CELL_STORAGE = 2 };

struct tn_slab;

struct tn_cell {
    struct tn_tensor t;
    struct tn_storage st;
    struct tn_slab *slab;
    struct tn_cell *next; /* the pool's free list */
    int uses;             /* TN_CELL_* bits; atomically updated */
};

/* A free slot with `uses` set, or NULL when the pool is given up or out of memory (the caller
 * then tracks its structs alone). */
struct tn_cell *tn_cell_get(struct tn_pool *pool, int uses);
/* Drops one use; the last gives the slot back. */
void tn_cell_put(struct tn_cell *c, int use);
/* The pool of a slot while it is not given up (a view's struct comes from there), else NULL. */
struct tn_pool *tn_cell_pool(const struct tn_cell *c);
/* The tag id of `name` for the pool's next data allocation. A training step makes the same
 * tensors in the same order every time, so the pool remembers the id of each allocation since
 * the last tn_pool_rewind (tensor.h) and checks the k-th name against the k-th id: one string
 * compare instead of the tracker's hash and lookup of the name. TRK_NO_TAG (message set) when
 * the name cannot be interned. */
uint32_t tn_pool_tag_id(struct tn_pool *pool, const char *name);
/* The tracker a pool allocates from. */
struct trk_tracker *tn_pool_tracker(const struct tn_pool *pool);

#endif
