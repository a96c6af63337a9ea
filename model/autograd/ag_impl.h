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

/* An op's epilogue (ag_linear_ex, ag_linear_concat; ops_matmul.c): what it applies to its own
 * output in place, with a dropout's draw taken at the forward. kind 0: none. */
struct ag_epi {
    enum kn_epilogue kind;
    float p, scale;
    uint64_t seed;
};
/* The output of a linear op with an epilogue: x's shape with the last axis `out`, named
 * "linear", "linear.elu" or "linear.dropout". *e is epi resolved for this context (a dropout is
 * none when not training or p = 0), with a dropout's draw taken as ag_dropout takes it. NULL
 * (error recorded, naming op) for a probability outside [0, 1) or out of memory. */
struct tn_tensor *ag_epi_out(struct ag_ctx *ctx, const char *op, enum ag_epilogue epi, float p,
                             const struct tn_tensor *x, int64_t out, struct ag_epi *e);
/* Applies it to y [n] in place. */
void ag_epi_apply(const struct kn_backend *kb, const struct ag_epi *e, float *y, int64_t n);
/* Keeps it on the node (ia[at], ia[at + 1], fa[0], fa[1]); an ELU's output y in saved[slot]. */
void ag_epi_record(struct ag_node *nd, const struct ag_epi *e, int at, int slot,
                   struct tn_tensor *y);
/* The backward's first step: the output's gradient dy [n] becomes the pre-epilogue's, in
 * place. Nothing when the node has no epilogue. */
void ag_epi_backward(const struct ag_node *nd, int at, int slot, float *dy, int64_t n);

/* Frees a context's list of node chunks (autograd.c). */
void ag_chunks_free(struct trk_tracker *trk, struct ag_chunk *c);

#endif
