/* varmap_impl.h — the VarMap's insides, shared by varmap.c and varmap_io.c (not public). */
#ifndef LG_VARMAP_IMPL_H
#define LG_VARMAP_IMPL_H

#include "varmap.h"

struct vm_varmap {
    struct trk_tracker *trk;
    char name[LG_MAX_NAME];
    uint64_t seed;
    int refs; /* atomic */
    int n, cap;
    struct tn_tensor **vars; /* [cap], the first n sorted by name; "meta/varmap.index" */
    int64_t param_count;
    size_t bytes;
};

/* The seed of one parameter's generator: the map's seed mixed with a hash of the name
 * (without "varmap/"), so values do not depend on the order parameters are created in. */
uint64_t vm_param_seed(uint64_t map_seed, const char *name);

#endif
