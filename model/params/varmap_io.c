/* varmap_io.c — a VarMap's checkpoints: vm_save and vm_load over safetensors.
 *
 * vm_load is all-or-nothing on the file's structure: it opens (st_open validates the header
 * against the file), then checks that the file holds exactly the map's names, each F32 with
 * the map's shape, and copies the config text, and only then reads values, in file order,
 * straight into the parameters. A read can still fail after that (the file truncated under us
 * between open and read); the parameters read so far then hold new values, and LG_EIO says so.
 */
#define _GNU_SOURCE
#include "varmap_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

#define VM_LIST_NAMES 5 /* names listed in a mismatch message */

int vm_save(struct vm_varmap *vm, const char *path, const char *config_json)
{
    struct st_entry *e = trk_alloc(vm->trk, (size_t)vm->n * sizeof *e, "ckpt/entries");
    if (!e) return lg_fail(LG_ENOMEM, "saving varmap %s to %s: out of memory", vm->name, path);
    for (int i = 0; i < vm->n; i++) e[i] = (struct st_entry){tn_basename(vm->vars[i]), vm->vars[i]};
    const char *meta[] = {"config", config_json, NULL};
    int rc = st_save(vm->trk, path, e, vm->n, config_json ? meta : NULL);
    trk_free(vm->trk, e);
    if (rc != LG_OK) lg_fail_ctx(rc, "saving varmap %s: ", vm->name);
    return rc;
}

/* Appends `name` to a list message, up to VM_LIST_NAMES names. */
static void list_add(char *buf, size_t size, int *count, const char *name)
{
    if (*count < VM_LIST_NAMES) {
        size_t k = strlen(buf);
        snprintf(buf + k, size - k, "%s%s", *count ? ", " : "", name);
    }
    (*count)++;
}

static void list_end(char *buf, size_t size, int count)
{
    size_t k = strlen(buf);
    if (count > VM_LIST_NAMES) snprintf(buf + k, size - k, ", ... %d more", count - VM_LIST_NAMES);
}

/* Exactly the map's names: none missing from the file, none unexpected in it. */
static int check_names(const struct vm_varmap *vm, const struct st_file *f)
{
    char missing[640] = "", unexpected[640] = "";
    int n_missing = 0, n_unexpected = 0;
    for (int i = 0; i < vm->n; i++)
        if (st_find(f, tn_basename(vm->vars[i])) < 0)
            list_add(missing, sizeof missing, &n_missing, tn_basename(vm->vars[i]));
    for (int i = 0; i < st_count(f); i++)
        if (!vm_find(vm, st_info(f, i)->name))
            list_add(unexpected, sizeof unexpected, &n_unexpected, st_info(f, i)->name);
    if (!n_missing && !n_unexpected) return LG_OK;
    list_end(missing, sizeof missing, n_missing);
    list_end(unexpected, sizeof unexpected, n_unexpected);
    return lg_fail(LG_EFORMAT,
                   "%s does not match varmap %s: %d parameter(s) missing from the file%s%s%s; "
                   "%d unexpected name(s) in it%s%s%s",
                   st_path(f), vm->name, n_missing, n_missing ? " (" : "", missing,
                   n_missing ? ")" : "", n_unexpected, n_unexpected ? " (" : "", unexpected,
                   n_unexpected ? ")" : "");
}

/* Every parameter is F32 with the map's shape in the file. */
static int check_types(const struct vm_varmap *vm, const struct st_file *f)
{
    for (int i = 0; i < vm->n; i++) {
        const struct tn_tensor *t = vm->vars[i];
        const struct st_info *e = st_info(f, st_find(f, tn_basename(t)));
        if (e->dtype != TN_F32)
            return lg_fail(LG_EFORMAT, "%s: parameter %s is %s in the file, varmap %s needs F32",
                           st_path(f), e->name, tn_dtype_name(e->dtype), vm->name);
        int same = e->ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = e->shape[d] == t->ne[d];
        if (!same) {
            struct tn_tensor shaped = {.ndim = e->ndim};
            memcpy(shaped.ne, e->shape, sizeof shaped.ne);
            char have[96], want[96];
            return lg_fail(LG_EFORMAT, "%s: parameter %s has shape %s in the file, %s in varmap %s",
                           st_path(f), e->name, tn_shape_str(&shaped, have, sizeof have),
                           tn_shape_str(t, want, sizeof want), vm->name);
        }
    }
    return LG_OK;
}

int vm_load(struct vm_varmap *vm, const char *path, char **config_json)
{
    struct st_file *f = NULL;
    char *config = NULL;
    if (config_json) *config_json = NULL;
    int rc = st_open(&f, vm->trk, path);
    if (rc != LG_OK) goto cleanup;
    if ((rc = check_names(vm, f)) != LG_OK || (rc = check_types(vm, f)) != LG_OK) goto cleanup;
    const char *c = st_meta(f, "config");
    if (config_json && c && !(config = strdup(c))) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory copying the config", path);
        goto cleanup;
    }
    /* validated: now, and only now, values change (in file order: sequential reads) */
    for (int i = 0; i < st_count(f); i++) {
        struct tn_tensor *t = vm_find(vm, st_info(f, i)->name);
        if ((rc = st_read(f, i, tn_data(t), tn_nbytes(t))) != LG_OK) goto cleanup;
    }
    if (config_json) *config_json = config;
    config = NULL;
cleanup:
    free(config);
    st_close(f);
    if (rc != LG_OK) lg_fail_ctx(rc, "loading varmap %s: ", vm->name);
    return rc;
}
