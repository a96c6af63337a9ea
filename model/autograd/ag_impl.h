/* ag_impl.h — autograd's private parts, shared by the files of autograd/: the context's
 * insides. Everything an op needs besides is in ag_ops.h. */
#ifndef LG_AG_IMPL_H
#define LG_AG_IMPL_H

#include "ag_ops.h"

#define AG_MAX_SCOPE_DEPTH 32

/* The tape's nodes live in chunks that a reset rewinds (kept for the next step) and that
 * ag_ctx_take_tape moves with the tape: a node costs no allocation of its own. */
struct ag_chunk {
    struct ag_chunk *next;
    size_t cap, used; /* bytes of data */
    _Alignas(16) char data[];
};

struct ag_ctx {
    struct trk_tracker *trk;
    struct ag_options opt;
    bool grad_enabled;
    struct tn_rng rng;
    char scope[LG_MAX_NAME];           /* "enc_vsn.var_grn.dow" */
    int scope_len[AG_MAX_SCOPE_DEPTH]; /* strlen(scope) before each push */
    int scope_depth;
    int err; /* sticky: the first failure since reset */
    char errmsg[512];
    struct tn_tensor **temps; /* owned: released at reset */
    size_t ntemps, temps_cap;
    struct ag_node **tape; /* owned, in execution order */
    size_t ntape, tape_cap;
    struct ag_chunk *chunks, *chunk; /* owned: every chunk, and the one being filled */
    struct tn_pool *pool;            /* owned: the temporaries' tensor and storage structs */
};

/* The backward of a view (ops_shape.c): nothing when the view's gradient is a view of its
 * input's, as grad_of makes it. */
int ag_view_backward(struct ag_ctx *ctx, struct ag_node *nd);

/* Frees a context's list of node chunks (autograd.c). */
void ag_chunks_free(struct trk_tracker *trk, struct ag_chunk *c);

#endif
