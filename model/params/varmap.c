/* varmap.c — the VarMap: named parameters, shared by an atomic reference count whose every
 * retain and release is written in the tracker's reference ledger.
 *
 * The parameters are kept in one array sorted by name (without the "varmap/" prefix): vm_at
 * and vm_all_vars read it in order, vm_find and vm_get search it by bisection, and a new
 * parameter is inserted in place (a memmove of pointers; maps hold hundreds to a few thousand
 * parameters, and they are built once).
 *
 * Initialisation is deterministic and independent of creation order: each parameter draws
 * from its own generator, seeded from the map's seed and a hash of the parameter's name.
 *
 * Threads: retain and release may race freely (atomic count, locked ledger); building the map
 * (vm_get of a new name) and vm_load must not run concurrently with other calls on the map.
 * Checkpoint I/O (vm_save, vm_load) lives in varmap_io.c.
 */
#include "varmap_impl.h"

#include <math.h>
#include <string.h>

#define VM_PREFIX "varmap/"

int vm_new(struct vm_varmap **out, struct trk_tracker *trk, const char *name, const void *holder,
           struct trk_site site, uint64_t seed)
{
    LG_ASSERT(out && trk && "vm_new: out and trk are required");
    *out = NULL;
    struct vm_varmap *vm = trk_alloc(trk, sizeof *vm, "meta/varmap");
    if (!vm) return lg_fail(LG_ENOMEM, "varmap %s: out of memory", name ? name : "");
    memset(vm, 0, sizeof *vm);
    vm->trk = trk;
    lg_strlcpy(vm->name, name ? name : "varmap", sizeof vm->name);
    vm->seed = seed;
    vm->refs = 1;
    trk_ref_track(trk, vm, "varmap", vm->name, holder, site);
    *out = vm;
    return LG_OK;
}

struct vm_varmap *vm_retain(struct vm_varmap *vm, const void *holder, struct trk_site site)
{
    LG_ASSERT(vm && "vm_retain of NULL");
    int before = __atomic_fetch_add(&vm->refs, 1, __ATOMIC_RELAXED);
    LG_ASSERT(before > 0 && "vm_retain of a released VarMap");
    trk_ref_retain(vm->trk, vm, holder, site);
    return vm;
}

void vm_release(struct vm_varmap *vm, const void *holder, struct trk_site site)
{
    if (!vm) return;
    struct trk_tracker *trk = vm->trk;
    trk_ref_release(trk, vm, holder, site);
    int left = __atomic_sub_fetch(&vm->refs, 1, __ATOMIC_ACQ_REL);
    LG_ASSERT(left >= 0 && "vm_release: more releases than references");
    if (left > 0) return;
    trk_ref_untrack(trk, vm, site);
    for (int i = 0; i < vm->n; i++) tn_release(vm->vars[i]); /* and their grads */
    trk_free(trk, vm->vars);
    trk_free(trk, vm);
}

int vm_refs(const struct vm_varmap *vm) { return __atomic_load_n(&vm->refs, __ATOMIC_RELAXED); }

/* ---- the name-ordered table -------------------------------------------------------- */

static const char *var_name(const struct tn_tensor *t) { return t->name + strlen(VM_PREFIX); }

/* Index of `name` if present (*found = 1), else where it would be inserted. */
static int search(const struct vm_varmap *vm, const char *name, int *found)
{
    int lo = 0, hi = vm->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(var_name(vm->vars[mid]), name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

static int insert_at(struct vm_varmap *vm, int pos, struct tn_tensor *t)
{
    if (vm->n == vm->cap) {
        int ncap = vm->cap ? vm->cap * 2 : 64;
        struct tn_tensor **nv = trk_alloc(vm->trk, (size_t)ncap * sizeof *nv, "meta/varmap.index");
        if (!nv)
            return lg_fail(LG_ENOMEM, "varmap %s: out of memory for %d parameters", vm->name, ncap);
        if (vm->n) memcpy(nv, vm->vars, (size_t)vm->n * sizeof *nv);
        trk_free(vm->trk, vm->vars);
        vm->vars = nv;
        vm->cap = ncap;
    }
    memmove(&vm->vars[pos + 1], &vm->vars[pos], (size_t)(vm->n - pos) * sizeof *vm->vars);
    vm->vars[pos] = t;
    vm->n++;
    vm->param_count += tn_numel(t);
    vm->bytes += tn_nbytes(t);
    return LG_OK;
}

/* ---- initialisation ------------------------------------------------------------------ */

/* FNV-1a, 64 bits: the name's part of a parameter's seed. */
static uint64_t name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

uint64_t vm_param_seed(uint64_t map_seed, const char *name)
{
    /* tn_rng_seed runs splitmix64 over this, so a plain mix of the two is enough */
    return name_hash(name) ^ (map_seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull);
}

static int init_values(struct vm_varmap *vm, struct tn_tensor *t, const char *name,
                       struct vm_init init)
{
    struct tn_rng rng;
    tn_rng_seed(&rng, vm_param_seed(vm->seed, name));
    switch (init.kind) {
    case VM_ZEROS: tn_fill(t, 0.0f); return LG_OK;
    case VM_ONES: tn_fill(t, 1.0f); return LG_OK;
    case VM_KAIMING_UNIFORM: {
        if (t->ndim < 1)
            return lg_fail(LG_EINVAL, "varmap %s: %s: Kaiming init needs at least one dimension",
                           vm->name, name);
        int64_t fan_in = t->ne[t->ndim - 1];
        if (fan_in > 0) {
            float bound = (float)(1.0 / sqrt((double)fan_in));
            tn_fill_uniform(t, &rng, -bound, bound);
        }
        return LG_OK;
    }
    case VM_UNIFORM:
        if (!(init.a >= 0.0f) || !isfinite(init.a))
            return lg_fail(LG_EINVAL, "varmap %s: %s: uniform init needs a finite a >= 0, got %g",
                           vm->name, name, (double)init.a);
        tn_fill_uniform(t, &rng, -init.a, init.a);
        return LG_OK;
    case VM_NORMAL:
        if (!(init.a >= 0.0f) || !isfinite(init.a))
            return lg_fail(LG_EINVAL, "varmap %s: %s: normal init needs a finite a >= 0, got %g",
                           vm->name, name, (double)init.a);
        tn_fill_normal(t, &rng, 0.0f, init.a);
        return LG_OK;
    }
    return lg_fail(LG_EINVAL, "varmap %s: %s: unknown init kind %d", vm->name, name,
                   (int)init.kind);
}

/* ---- get-or-init and lookups ------------------------------------------------------------ */

static void shape_str(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
}

struct tn_tensor *vm_get(struct vm_varmap *vm, const char *name, int ndim, const int64_t *shape,
                         struct vm_init init)
{
    LG_ASSERT(vm && name && (ndim == 0 || shape) && "vm_get: bad arguments");
    int found;
    int pos = search(vm, name, &found);
    if (found) {
        struct tn_tensor *t = vm->vars[pos];
        int same = t->ndim == ndim;
        for (int i = 0; same && i < ndim; i++) same = t->ne[i] == shape[i];
        if (same) return t;
        char have[96], want[96];
        tn_shape_str(t, have, sizeof have);
        shape_str(want, sizeof want, ndim, shape);
        lg_fail(LG_EINVAL, "varmap %s: parameter %s has shape %s, asked for %s", vm->name, name,
                have, want);
        return NULL;
    }
    char tag[LG_MAX_NAME];
    if (!name[0] || lg_snprintf(tag, sizeof tag, VM_PREFIX "%s", name)) {
        lg_fail(LG_EINVAL, "varmap %s: parameter name \"%.100s\" is empty or longer than %d bytes",
                vm->name, name, (int)(LG_MAX_NAME - 1 - strlen(VM_PREFIX)));
        return NULL;
    }
    struct tn_tensor *t = tn_new(vm->trk, TN_F32, TN_CPU, ndim, shape, tag);
    if (!t) {
        lg_fail_ctx(lg_errcode(), "varmap %s: ", vm->name);
        return NULL;
    }
    t->requires_grad = true;
    if (init_values(vm, t, name, init) != LG_OK || insert_at(vm, pos, t) != LG_OK) {
        tn_release(t);
        return NULL;
    }
    return t;
}

struct tn_tensor *vm_find(const struct vm_varmap *vm, const char *name)
{
    int found;
    int pos = search(vm, name, &found);
    return found ? vm->vars[pos] : NULL;
}

int vm_count(const struct vm_varmap *vm) { return vm->n; }

struct tn_tensor *vm_at(const struct vm_varmap *vm, int i)
{
    LG_ASSERT(i >= 0 && i < vm->n && "vm_at: index out of range");
    return vm->vars[i];
}

int vm_all_vars(struct vm_varmap *vm, struct tn_tensor ***out, int *n)
{
    *out = trk_alloc(vm->trk, (size_t)vm->n * sizeof **out, "meta/varmap.list");
    *n = 0;
    if (!*out)
        return lg_fail(LG_ENOMEM, "varmap %s: out of memory listing %d parameters", vm->name,
                       vm->n);
    if (vm->n) memcpy(*out, vm->vars, (size_t)vm->n * sizeof **out);
    *n = vm->n;
    return LG_OK;
}

void vm_list_free(struct vm_varmap *vm, struct tn_tensor **list) { trk_free(vm->trk, list); }

int64_t vm_param_count(const struct vm_varmap *vm) { return vm->param_count; }
size_t vm_bytes(const struct vm_varmap *vm) { return vm->bytes; }
const char *vm_name(const struct vm_varmap *vm) { return vm->name; }
struct trk_tracker *vm_tracker(const struct vm_varmap *vm) { return vm->trk; }
