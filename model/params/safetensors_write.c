/* safetensors_write.c — the safetensors writer.
 *
 * The header is built with Jansson ("__metadata__" first, then the tensors in the caller's
 * order with contiguous offsets from 0), dumped compact into one tracked buffer behind its
 * 8-byte length and padded with spaces to a multiple of 8. Tensor data is then written
 * straight from tensor memory: no staging copy of the data buffer, which for foxhunt-815 would
 * be 815 MiB. Device tensors pass through one tracked host buffer ("ckpt/staging.device", at
 * most STAGE_MAX bytes, reused chunk by chunk). Everything goes to "<path>.tmp", which is synced
 * and renamed over `path`; on any failure the .tmp file is removed, so `path` holds either the old
 * file or the whole new one.
 */
#define _GNU_SOURCE
#include "safetensors.h"
#include "tn_device.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int write_all(int fd, const char *path, const void *src, size_t n)
{
    const char *p = src;
    while (n > 0) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : n;
        ssize_t w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return lg_fail(LG_EIO, "%s: write failed: %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return LG_OK;
}

#define STAGE_MAX ((size_t)64 << 20)

/* Writes one tensor's bytes; a device tensor's go through `stage` [stage_size] in chunks. */
static int write_tensor(int fd, const char *path, const struct st_entry *e, char *stage,
                        size_t stage_size)
{
    const struct tn_tensor *t = e->t;
    if (t->device == TN_CPU) return write_all(fd, path, tn_data(t), tn_nbytes(t));
    const char *src = tn_data(t);
    for (size_t off = 0, n = tn_nbytes(t); off < n; off += stage_size) {
        size_t chunk = LG_MIN(stage_size, n - off);
        int rc = tn_device_copy(stage, TN_CPU, src + off, t->device, chunk);
        if (rc != LG_OK)
            return lg_fail_ctx(rc, "%s: reading tensor \"%s\" from the device: ", path,
                               e->name ? e->name : tn_basename(t));
        if ((rc = write_all(fd, path, stage, chunk)) != LG_OK) return rc;
    }
    return LG_OK;
}

/* Adds one tensor's entry at byte *off of the data buffer; advances *off. */
static int add_entry(json_t *root, const struct st_entry *e, uint64_t *off, const char *path)
{
    const struct tn_tensor *t = e->t;
    const char *name = e->name ? e->name : tn_basename(t);
    if (strcmp(name, "__metadata__") == 0)
        return lg_fail(LG_EINVAL, "%s: \"__metadata__\" is reserved, not a tensor name", path);
    if (json_object_get(root, name))
        return lg_fail(LG_EINVAL, "%s: tensor name \"%s\" appears twice", path, name);
    json_t *shape = json_array();
    for (int d = 0; d < t->ndim && shape; d++)
        if (json_array_append_new(shape, json_integer(t->ne[d])) != 0) {
            json_decref(shape);
            shape = NULL;
        }
    uint64_t end = *off + tn_nbytes(t);
    json_t *v = json_pack("{s:s, s:o, s:[I, I]}", "dtype", tn_dtype_name(t->dtype), "shape", shape,
                          "data_offsets", (json_int_t)*off, (json_int_t)end);
    if (!v || json_object_set_new(root, name, v) != 0)
        return lg_fail(LG_EINVAL,
                       "%s: cannot add tensor \"%s\" to the header (out of memory or "
                       "not UTF-8)",
                       path, name);
    *off = end;
    return LG_OK;
}

/* The header JSON; the caller json_decrefs it. */
static int build_header(json_t **out, const struct st_entry *e, int n, const char *const *meta_kv,
                        const char *path)
{
    int rc = LG_OK;
    json_t *root = json_object(), *meta = NULL;
    if (!root) return lg_fail(LG_ENOMEM, "%s: out of memory building the header", path);
    if (meta_kv && meta_kv[0]) {
        meta = json_object();
        if (!meta || json_object_set_new(root, "__metadata__", meta) != 0) {
            rc = lg_fail(LG_ENOMEM, "%s: out of memory building the header", path);
            goto cleanup;
        }
        for (const char *const *kv = meta_kv; *kv; kv += 2) {
            LG_ASSERT(kv[1] && "st_save: meta_kv holds key, value pairs");
            if (json_object_set_new(meta, kv[0], json_string(kv[1])) != 0) {
                rc = lg_fail(LG_EINVAL, "%s: metadata \"%s\" is not valid UTF-8", path, kv[0]);
                goto cleanup;
            }
        }
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        LG_ASSERT(e[i].t && "st_save: an entry without a tensor");
        if ((rc = add_entry(root, &e[i], &off, path)) != LG_OK) goto cleanup;
    }
cleanup:
    if (rc != LG_OK) {
        json_decref(root);
        root = NULL;
    }
    *out = root;
    return rc;
}

int st_save(struct trk_tracker *trk, const char *path, const struct st_entry *e, int n,
            const char *const *meta_kv)
{
    LG_ASSERT(trk && path && n >= 0 && (n == 0 || e) && "st_save: bad arguments");
    int rc = LG_OK, fd = -1, created = 0;
    char *hdr = NULL, *stage = NULL;
    size_t stage_size = 0;
    json_t *root = NULL;
    char tmp[PATH_MAX];
    if (lg_snprintf(tmp, sizeof tmp, "%s.tmp", path))
        return lg_fail(LG_EINVAL, "%s: path too long", path);
    if ((rc = build_header(&root, e, n, meta_kv, path)) != LG_OK) goto cleanup;

    size_t len = json_dumpb(root, NULL, 0, JSON_COMPACT);
    size_t padded = (len + 7) & ~(size_t)7;
    hdr = trk_alloc(trk, 8 + padded, "ckpt/header");
    if (!hdr || len == 0) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory for a %zu-byte header", path, padded);
        goto cleanup;
    }
    for (int i = 0; i < 8; i++) hdr[i] = (char)(uint8_t)((uint64_t)padded >> (8 * i));
    json_dumpb(root, hdr + 8, len, JSON_COMPACT);
    memset(hdr + 8 + len, ' ', padded - len);

    /* created anew (lg_out.c): a link or FIFO left at the temporary name is not written through */
    if ((rc = lg_out_create(&fd, tmp)) != LG_OK) goto cleanup;
    created = 1;
    if ((rc = write_all(fd, tmp, hdr, 8 + padded)) != LG_OK) goto cleanup;
    for (int i = 0; i < n; i++)
        if (e[i].t->device != TN_CPU)
            stage_size = LG_MAX(stage_size, LG_MIN(tn_nbytes(e[i].t), STAGE_MAX));
    if (stage_size && !(stage = trk_alloc(trk, stage_size, "ckpt/staging.device"))) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory for a %zu-byte device staging buffer", path,
                     stage_size);
        goto cleanup;
    }
    for (int i = 0; i < n; i++)
        if ((rc = write_tensor(fd, tmp, &e[i], stage, stage_size)) != LG_OK) goto cleanup;
    if (fsync(fd) != 0) {
        rc = lg_fail(LG_EIO, "%s: sync failed: %s", tmp, strerror(errno));
        goto cleanup;
    }
    int cr = close(fd);
    fd = -1;
    if (cr != 0) {
        rc = lg_fail(LG_EIO, "%s: close failed: %s", tmp, strerror(errno));
        goto cleanup;
    }
    if (rename(tmp, path) != 0)
        rc = lg_fail(LG_EIO, "%s: cannot rename %s over it: %s", path, tmp, strerror(errno));
cleanup:
    if (fd >= 0) close(fd);
    if (rc != LG_OK && created) unlink(tmp);
    json_decref(root);
    trk_free(trk, hdr);
    trk_free(trk, stage);
    return rc;
}
