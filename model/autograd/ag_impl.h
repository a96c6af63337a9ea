/* ag_impl.h — autograd's private parts, shared by the files of autograd/: the context's
 * insides. Everything an op needs besides is in ag_ops.h. */
#ifndef LG_AG_IMPL_H
#define LG_AG_IMPL_H

#include "ag_ops.h"

#define AG_MAX_SCOPE_DEPTH 32

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
};

#endif
