/* varmap.h — the VarMap: a model's named parameters, shared by reference count.
 *
 * Worked example:
 *
 *   struct vm_varmap *vm = NULL;
 *   if (vm_new(&vm, trk, "tiny", model, TRK_HERE, 42) != LG_OK) ...   // model holds 1 ref
 *   struct tn_tensor *w = vm_get(vm, "out.weight", 2, (int64_t[]){3, 16},
 *                                (struct vm_init){VM_KAIMING_UNIFORM});   // "varmap/out.weight"
 *   struct vm_varmap *mine = vm_retain(vm, trainer, TRK_HERE);   // the ledger records who
 *   vm_release(mine, trainer, TRK_HERE);
 *   vm_save(vm, "ckpt.safetensors", config_json);
 *   vm_release(vm, model, TRK_HERE);   // the last release frees every parameter
 *
 * Every retain and release names its holder and site, and goes through the tracker's
 * reference ledger: a VarMap still alive at a session's end is reported with the retains
 * nobody released ("retained at tr_new (trainer.c:55), never released") — the
 * exact shape of the original 815 MB leak.
 *
 * Parameters are f32 leaves with requires_grad set, tagged "varmap/<name>". vm_get is
 * get-or-init: the first call creates and initialises (seeded, deterministic), later calls
 * return the same tensor and check the shape. vm_all_vars lists them sorted by name.
 */
#ifndef LG_VARMAP_H
#define LG_VARMAP_H

#include "tensor.h"

struct vm_varmap;

enum vm_init_kind {
    VM_ZEROS = 0,
    VM_ONES,
    VM_KAIMING_UNIFORM, /* U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = shape[ndim-1] */
    VM_UNIFORM,         /* U(-a, a) */
    VM_NORMAL,          /* N(0, a^2) */
};
struct vm_init {
    enum vm_init_kind kind;
    float a;
};

/* New empty VarMap whose one reference is owned by `holder`; released with vm_release. */
int vm_new(struct vm_varmap **out, struct trk_tracker *trk, const char *name, const void *holder,
           struct trk_site site, uint64_t seed);
/* Takes a reference for `holder`; returns vm. */
struct vm_varmap *vm_retain(struct vm_varmap *vm, const void *holder, struct trk_site site);
/* Drops `holder`'s reference; the last one frees every parameter and the map. NULL ok. */
void vm_release(struct vm_varmap *vm, const void *holder, struct trk_site site);
int vm_refs(const struct vm_varmap *vm);

/* Get-or-init a parameter (borrowed; the map owns it). NULL with an error on a shape
 * mismatch or out of memory. */
struct tn_tensor *vm_get(struct vm_varmap *vm, const char *name, int ndim, const int64_t *shape,
                         struct vm_init init);
/* The parameter of that name (without the "varmap/" prefix), or NULL. Borrowed. */
struct tn_tensor *vm_find(const struct vm_varmap *vm, const char *name);
/* Number of parameters and the i-th in name order (borrowed). */
int vm_count(const struct vm_varmap *vm);
struct tn_tensor *vm_at(const struct vm_varmap *vm, int i);
/* All parameters in name order: *out is a tracked array ("meta/varmap.list") the caller
 * frees with vm_list_free. */
int vm_all_vars(struct vm_varmap *vm, struct tn_tensor ***out, int *n);
void vm_list_free(struct vm_varmap *vm, struct tn_tensor **list);
int64_t vm_param_count(const struct vm_varmap *vm);
size_t vm_bytes(const struct vm_varmap *vm);
const char *vm_name(const struct vm_varmap *vm);
struct trk_tracker *vm_tracker(const struct vm_varmap *vm);

/* Saves every parameter as a safetensors file with __metadata__ {"config": config_json}
 * (config_json may be NULL). */
int vm_save(struct vm_varmap *vm, const char *path, const char *config_json);
/* Loads values into the existing parameters; the file must hold exactly the map's names
 * with the same shapes and dtype F32. *config_json (if non-NULL) receives the metadata's
 * config text, freed with free(), or NULL when absent. Nothing is changed on error. */
int vm_load(struct vm_varmap *vm, const char *path, char **config_json);

#endif
