/* safetensors.h — reading and writing safetensors checkpoints (spec/TFT.md, "Checkpoints").
 *
 * Worked example:
 *
 *   // write: tensor data goes from tensor memory straight to disk, to "<path>.tmp", then a
 *   // rename puts it under its real name
 *   struct st_entry e[2] = {{"out.weight", w}, {"out.bias", b}};
 *   const char *meta[] = {"config", config_json, NULL};
 *   if (st_save(trk, "ckpt.safetensors", e, 2, meta) != LG_OK) die(lg_errmsg());
 *
 *   // read: st_open checks the whole header against the file before anything is read
 *   struct st_file *f = NULL;
 *   if (st_open(&f, trk, "ckpt.safetensors") != LG_OK) die(lg_errmsg()); // LG_EFORMAT, LG_EIO
 *   int i = st_find(f, "out.weight");
 *   const struct st_info *in = st_info(f, i);        // dtype, ndim, shape, byte range
 *   if (st_read(f, i, tn_data(w), tn_nbytes(w)) != LG_OK) ...
 *   const char *cfg = st_meta(f, "config");          // NULL when absent; owned by f
 *   st_close(f);
 *
 * The format: an 8-byte little-endian header length N; N bytes of JSON
 * {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, padded
 * with spaces to a multiple of 8; then the data buffer, row-major little-endian, the tensors'
 * byte ranges contiguous from 0 to its end. dtypes: F32, I8, I32. At most ST_MAX_DIMS
 * dimensions (the tensors' own limit).
 *
 * st_open rejects, with LG_EFORMAT and a message that starts with the path: short files, a
 * header length larger than the file or over ST_MAX_HEADER, bad JSON (including duplicate
 * keys), a header that is not an object, unknown dtypes, bad shapes (negative, non-integer,
 * too many dims), offsets that overlap, leave gaps, run past the buffer or leave bytes after
 * the last tensor, shapes whose byte size disagrees with the offsets, and metadata that is not
 * string → string. Entries are listed in file order (ascending offsets).
 *
 * Memory: the reader's tables are tracked ("ckpt/file", "ckpt/header" for names and metadata
 * text, "ckpt/entries", "ckpt/index"); the writer's header text is "ckpt/header". Jansson's
 * own parse tree is transient (freed before st_open returns).
 */
#ifndef LG_SAFETENSORS_H
#define LG_SAFETENSORS_H

#include <stdint.h>

#include "tensor.h"

#define ST_MAX_HEADER 100000000ull /* 100 MB, the reference implementation's limit */
#define ST_MAX_DIMS   TN_MAX_DIMS

/* ---- writing ----------------------------------------------------------------------- */

/* One tensor to write: stored under `name` (NULL: tn_basename(t)). t must be on the CPU. */
struct st_entry {
    const char *name;
    const struct tn_tensor *t;
};

/* Writes n tensors, in the given order, and the metadata meta_kv (a NULL-terminated list of
 * key, value strings; NULL for none) to `path`; the header text is staged in trk. The file is
 * written as "<path>.tmp", synced and renamed, so `path` never holds half a checkpoint. LG_EINVAL
 * for bad entries (a device tensor, a duplicate or reserved name), LG_EIO with the path and the
 * system's reason for I/O errors (the .tmp file is removed). */
int st_save(struct trk_tracker *trk, const char *path, const struct st_entry *e, int n,
            const char *const *meta_kv);

/* ---- reading ----------------------------------------------------------------------- */

struct st_file;

/* One tensor of an open file. */
struct st_info {
    const char *name; /* owned by the st_file */
    enum tn_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS]; /* unused dims are 1 */
    uint64_t begin, end;        /* byte range inside the data buffer */
};

/* Opens and validates `path`; *out is closed with st_close. On error *out is NULL, nothing
 * stays allocated, and lg_errmsg() names the file and the problem. */
int st_open(struct st_file **out, struct trk_tracker *trk, const char *path);
/* Closes the file and frees its tables. NULL does nothing. */
void st_close(struct st_file *f);

const char *st_path(const struct st_file *f);
/* Number of tensors, and the i-th in file order (borrowed, valid until st_close). */
int st_count(const struct st_file *f);
const struct st_info *st_info(const struct st_file *f, int i);
/* Index of the tensor called `name`, or -1. O(log n). */
int st_find(const struct st_file *f, const char *name);
/* Byte size of tensor i. */
size_t st_nbytes(const struct st_file *f, int i);
/* Reads tensor i's bytes into dst; nbytes must equal st_nbytes (else LG_EINVAL). LG_EIO when
 * the file cannot be read (e.g. it was truncated after st_open). */
int st_read(struct st_file *f, int i, void *dst, size_t nbytes);

/* The metadata value for `key`, or NULL (borrowed, valid until st_close). */
const char *st_meta(const struct st_file *f, const char *key);
/* Number of metadata pairs, and the i-th (borrowed), in the header's order. */
int st_meta_count(const struct st_file *f);
void st_meta_at(const struct st_file *f, int i, const char **key, const char **value);

#endif
