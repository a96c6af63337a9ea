/* safetensors.c — the safetensors reader: open, validate the whole header, read tensors.
 *
 * st_open trusts nothing in the file. It reads the 8-byte length, checks it against the limit
 * and the file size, parses the header with Jansson (duplicate keys rejected), checks every
 * entry (dtype, shape, offsets, byte size), then sorts the entries by offset and checks that
 * they tile the data buffer exactly: from 0, no gap, no overlap, nothing after the last one.
 * Only then does it return a handle; st_read can then trust the byte ranges.
 *
 * Names and metadata strings are copied into one tracked text block ("ckpt/header"), so the
 * Jansson tree is freed before st_open returns and the handle holds only tracked memory and
 * the file descriptor.
 */
#define _GNU_SOURCE
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "safetensors data is little-endian and is read without conversion");

struct st_file {
    struct trk_tracker *trk;
    int fd;
    uint64_t data_start; /* 8 + N */
    uint64_t data_size;  /* bytes after the header */
    int n;
    struct st_info *ents; /* [n], file order (ascending offsets) */
    int *by_name;         /* [n], indices into ents sorted by name */
    int n_meta;
    const char **meta; /* [2 * n_meta]: key, value, ... */
    char *text;        /* names, metadata keys and values */
    char path[];
};

/* ---- small helpers ----------------------------------------------------------------- */

/* Reads exactly n bytes at off; LG_EIO with the path on failure or a short file. */
static int pread_all(int fd, const char *path, void *dst, size_t n, uint64_t off)
{
    char *p = dst;
    while (n > 0) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : n;
        ssize_t r = pread(fd, p, chunk, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return lg_fail(LG_EIO, "%s: read failed at byte %llu: %s", path,
                           (unsigned long long)off, strerror(errno));
        if (r == 0)
            return lg_fail(LG_EIO, "%s: file ended at byte %llu, %zu bytes short", path,
                           (unsigned long long)off, n);
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return LG_OK;
}

static int parse_dtype(const char *s, enum tn_dtype *out)
{
    static const struct {
        const char *name;
        enum tn_dtype dt;
    } known[] = {{"F32", TN_F32}, {"I8", TN_I8}, {"I32", TN_I32}};
    for (size_t i = 0; i < LG_ARRAY_LEN(known); i++)
        if (strcmp(s, known[i].name) == 0) {
            *out = known[i].dt;
            return 1;
        }
    return 0;
}

/* A non-negative JSON integer into *out; 0 when it is not one. */
static int get_uint(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return 0;
    *out = (uint64_t)json_integer_value(v);
    return 1;
}

/* ---- one header entry ----------------------------------------------------------------- */

static int parse_entry(const struct st_file *f, const char *name, const json_t *v,
                       struct st_info *e)
{
    const char *path = f->path;
    if (!json_is_object(v))
        return lg_fail(LG_EFORMAT, "%s: tensor \"%.100s\": entry is %s, not an object", path, name,
                       json_is_array(v) ? "an array" : "a scalar");

    const json_t *dt = json_object_get(v, "dtype");
    if (!json_is_string(dt))
        return lg_fail(LG_EFORMAT, "%s: tensor \"%.100s\": %s", path, name,
                       dt ? "\"dtype\" is not a string" : "no \"dtype\"");
    if (!parse_dtype(json_string_value(dt), &e->dtype))
        return lg_fail(LG_EFORMAT, "%s: tensor \"%.100s\": unknown dtype \"%.20s\" (F32, I8, I32)",
                       path, name, json_string_value(dt));

    const json_t *sh = json_object_get(v, "shape");
    if (!json_is_array(sh))
        return lg_fail(LG_EFORMAT, "%s: tensor \"%.100s\": %s", path, name,
                       sh ? "\"shape\" is not an array" : "no \"shape\"");
    if (json_array_size(sh) > ST_MAX_DIMS)
        return lg_fail(LG_EFORMAT, "%s: tensor \"%.100s\": shape has %zu dimensions (at most %d)",
                       path, name, json_array_size(sh), ST_MAX_DIMS);
    e->ndim = (int)json_array_size(sh);
    uint64_t numel = 1;
    int overflow = 0;
    for (int d = 0; d < ST_MAX_DIMS; d++) e->shape[d] = 1;
    for (int d = 0; d < e->ndim; d++) {
        uint64_t k;
        if (!get_uint(json_array_get(sh, (size_t)d), &k))
            return lg_fail(LG_EFORMAT,
                           "%s: tensor \"%.100s\": shape[%d] is not a non-negative integer", path,
                           name, d);
        e->shape[d] = (int64_t)k;
        overflow |= __builtin_mul_overflow(numel, k, &numel);
    }
    uint64_t nbytes = 0;
    overflow |= __builtin_mul_overflow(numel, (uint64_t)tn_dtype_size(e->dtype), &nbytes);
    if (overflow || nbytes > INT64_MAX)
        return lg_fail(LG_EFORMAT, "%s: tensor \"%.100s\": shape is too large", path, name);

    const json_t *off = json_object_get(v, "data_offsets");
    if (!json_is_array(off) || json_array_size(off) != 2 ||
        !get_uint(json_array_get(off, 0), &e->begin) || !get_uint(json_array_get(off, 1), &e->end))
        return lg_fail(LG_EFORMAT,
                       "%s: tensor \"%.100s\": \"data_offsets\" must be [begin, end], two "
                       "non-negative integers",
                       path, name);
    if (e->end < e->begin)
        return lg_fail(LG_EFORMAT,
                       "%s: tensor \"%.100s\": data_offsets [%llu, %llu] end before "
                       "they begin",
                       path, name, (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->end > f->data_size)
        return lg_fail(LG_EFORMAT,
                       "%s: tensor \"%.100s\": data_offsets [%llu, %llu] run past the data "
                       "buffer (%llu bytes)",
                       path, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                       (unsigned long long)f->data_size);
    if (e->end - e->begin != nbytes)
        return lg_fail(LG_EFORMAT,
                       "%s: tensor \"%.100s\": %s shape of %llu elements needs %llu bytes, "
                       "data_offsets [%llu, %llu] hold %llu",
                       path, name, tn_dtype_name(e->dtype), (unsigned long long)numel,
                       (unsigned long long)nbytes, (unsigned long long)e->begin,
                       (unsigned long long)e->end, (unsigned long long)(e->end - e->begin));
    return LG_OK;
}

/* ---- the whole header ------------------------------------------------------------------ */

static int cmp_offset(const void *a, const void *b)
{
    const struct st_info *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_name_idx(const void *a, const void *b, void *ents)
{
    const struct st_info *e = ents;
    return strcmp(e[*(const int *)a].name, e[*(const int *)b].name);
}

/* The entries must tile [0, data_size): sorted by offset, each starts where the last ended. */
static int check_tiling(const struct st_file *f)
{
    uint64_t pos = 0;
    for (int i = 0; i < f->n; i++) {
        const struct st_info *e = &f->ents[i];
        if (e->begin < pos)
            return lg_fail(
                LG_EFORMAT, "%s: tensor \"%.100s\" [%llu, %llu] overlaps \"%.100s\" [%llu, %llu]",
                f->path, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                f->ents[i - 1].name, (unsigned long long)f->ents[i - 1].begin,
                (unsigned long long)f->ents[i - 1].end);
        if (e->begin > pos)
            return lg_fail(LG_EFORMAT,
                           "%s: gap in the data buffer: bytes [%llu, %llu) before tensor "
                           "\"%.100s\" belong to no tensor",
                           f->path, (unsigned long long)pos, (unsigned long long)e->begin, e->name);
        pos = e->end;
    }
    if (pos != f->data_size)
        return lg_fail(LG_EFORMAT,
                       "%s: the tensors cover %llu bytes but the data buffer holds %llu "
                       "(%llu bytes belong to no tensor)",
                       f->path, (unsigned long long)pos, (unsigned long long)f->data_size,
                       (unsigned long long)(f->data_size - pos));
    return LG_OK;
}

/* Sizes the tables from the parsed header: entry and metadata counts, text bytes. */
static int measure(const struct st_file *f, json_t *root, int *n, int *n_meta, size_t *text)
{
    const char *key;
    json_t *v;
    *n = *n_meta = 0;
    *text = 0;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "__metadata__") != 0) {
            (*n)++;
            *text += strlen(key) + 1;
            continue;
        }
        if (!json_is_object(v))
            return lg_fail(LG_EFORMAT, "%s: \"__metadata__\" is not an object", f->path);
        const char *mk;
        json_t *mv;
        json_object_foreach(v, mk, mv)
        {
            if (!json_is_string(mv))
                return lg_fail(LG_EFORMAT, "%s: metadata \"%.100s\" is not a string", f->path, mk);
            (*n_meta)++;
            *text += strlen(mk) + 1 + strlen(json_string_value(mv)) + 1;
        }
    }
    return LG_OK;
}

/* Copies s into the text block at *pos; returns the copy. */
static const char *put_text(char *text, size_t *pos, const char *s)
{
    size_t len = strlen(s) + 1;
    char *dst = text + *pos;
    memcpy(dst, s, len);
    *pos += len;
    return dst;
}

static int load_tables(struct st_file *f, json_t *root)
{
    size_t text_size;
    int rc = measure(f, root, &f->n, &f->n_meta, &text_size);
    if (rc != LG_OK) return rc;
    f->ents = trk_alloc(f->trk, (size_t)f->n * sizeof *f->ents, "ckpt/entries");
    f->by_name = trk_alloc(f->trk, (size_t)f->n * sizeof *f->by_name, "ckpt/index");
    f->meta = trk_alloc(f->trk, (size_t)f->n_meta * 2 * sizeof *f->meta, "ckpt/entries");
    f->text = trk_alloc(f->trk, text_size, "ckpt/header");
    if (!f->ents || !f->by_name || !f->meta || !f->text)
        return lg_fail(LG_ENOMEM, "%s: out of memory for a header of %d tensors", f->path, f->n);

    size_t pos = 0;
    int i = 0, m = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "__metadata__") == 0) {
            const char *mk;
            json_t *mv;
            json_object_foreach(v, mk, mv)
            {
                f->meta[2 * m] = put_text(f->text, &pos, mk);
                f->meta[2 * m + 1] = put_text(f->text, &pos, json_string_value(mv));
                m++;
            }
            continue;
        }
        struct st_info *e = &f->ents[i];
        e->name = put_text(f->text, &pos, key);
        if ((rc = parse_entry(f, e->name, v, e)) != LG_OK) return rc;
        i++;
    }
    qsort(f->ents, (size_t)f->n, sizeof *f->ents, cmp_offset);
    if ((rc = check_tiling(f)) != LG_OK) return rc;
    for (i = 0; i < f->n; i++) f->by_name[i] = i;
    qsort_r(f->by_name, (size_t)f->n, sizeof *f->by_name, cmp_name_idx, f->ents);
    return LG_OK;
}

/* Reads, bounds and parses the header text; *root is the caller's to json_decref. */
static int read_header(struct st_file *f, uint64_t size, json_t **root)
{
    uint8_t len8[8];
    char *hdr = NULL;
    int rc = LG_OK;
    if (size < 8)
        return lg_fail(LG_EFORMAT,
                       "%s: file is %llu bytes, too short for the 8-byte "
                       "header length",
                       f->path, (unsigned long long)size);
    if ((rc = pread_all(f->fd, f->path, len8, 8, 0)) != LG_OK) return rc;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | len8[i];
    if (n > ST_MAX_HEADER)
        return lg_fail(LG_EFORMAT, "%s: header length %llu is over the %llu-byte limit", f->path,
                       (unsigned long long)n, (unsigned long long)ST_MAX_HEADER);
    if (n > size - 8)
        return lg_fail(LG_EFORMAT,
                       "%s: header length %llu is larger than the file allows "
                       "(%llu bytes after the length)",
                       f->path, (unsigned long long)n, (unsigned long long)(size - 8));
    f->data_start = 8 + n;
    f->data_size = size - 8 - n;

    hdr = trk_alloc(f->trk, (size_t)n, "ckpt/header");
    if (!hdr)
        return lg_fail(LG_ENOMEM, "%s: out of memory for a %llu-byte header", f->path,
                       (unsigned long long)n);
    if ((rc = pread_all(f->fd, f->path, hdr, (size_t)n, 8)) != LG_OK) goto cleanup;
    json_error_t jerr;
    *root = json_loadb(hdr, (size_t)n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!*root) {
        const char *what = strstr(jerr.text, "duplicate object key") ? "a name appears twice"
                                                                     : "header is not valid JSON";
        rc = lg_fail(LG_EFORMAT, "%s: %s: %s (header byte %d, line %d, column %d)", f->path, what,
                     jerr.text, jerr.position, jerr.line, jerr.column);
        goto cleanup;
    }
    if (!json_is_object(*root)) {
        rc = lg_fail(LG_EFORMAT, "%s: the header is a JSON %s, not an object", f->path,
                     json_is_array(*root) ? "array" : "scalar");
        goto cleanup;
    }
cleanup:
    trk_free(f->trk, hdr);
    return rc;
}

/* ---- the public face ------------------------------------------------------------------- */

int st_open(struct st_file **out, struct trk_tracker *trk, const char *path)
{
    LG_ASSERT(out && trk && path && "st_open: out, trk and path are required");
    *out = NULL;
    json_t *root = NULL;
    int rc = LG_OK;
    size_t plen = strlen(path);
    struct st_file *f = trk_alloc(trk, sizeof *f + plen + 1, "ckpt/file");
    if (!f) return lg_fail(LG_ENOMEM, "%s: out of memory opening the checkpoint", path);
    memset(f, 0, sizeof *f);
    memcpy(f->path, path, plen + 1);
    f->trk = trk;
    f->fd = -1;
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        rc = lg_fail(LG_EIO, "%s: cannot open: %s", path, strerror(errno));
        goto cleanup;
    }
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) {
        rc = lg_fail(LG_EIO, "%s: cannot stat: %s", path, strerror(errno));
        goto cleanup;
    }
    if (!S_ISREG(sb.st_mode)) {
        rc = lg_fail(LG_EIO, "%s: not a regular file", path);
        goto cleanup;
    }
    if ((rc = read_header(f, (uint64_t)sb.st_size, &root)) != LG_OK) goto cleanup;
    if ((rc = load_tables(f, root)) != LG_OK) goto cleanup;
    *out = f;
    f = NULL;
cleanup:
    json_decref(root);
    st_close(f);
    return rc;
}

void st_close(struct st_file *f)
{
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    trk_free(f->trk, f->ents);
    trk_free(f->trk, f->by_name);
    trk_free(f->trk, f->meta);
    trk_free(f->trk, f->text);
    trk_free(f->trk, f);
}

const char *st_path(const struct st_file *f) { return f->path; }
int st_count(const struct st_file *f) { return f->n; }

const struct st_info *st_info(const struct st_file *f, int i)
{
    LG_ASSERT(i >= 0 && i < f->n && "st_info: index out of range");
    return &f->ents[i];
}

size_t st_nbytes(const struct st_file *f, int i)
{
    const struct st_info *e = st_info(f, i);
    return (size_t)(e->end - e->begin);
}

int st_find(const struct st_file *f, const char *name)
{
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(f->ents[f->by_name[mid]].name, name);
        if (c == 0) return f->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

int st_read(struct st_file *f, int i, void *dst, size_t nbytes)
{
    const struct st_info *e = st_info(f, i);
    if (nbytes != e->end - e->begin)
        return lg_fail(LG_EINVAL, "%s: tensor \"%.100s\" holds %llu bytes, asked to read %zu",
                       f->path, e->name, (unsigned long long)(e->end - e->begin), nbytes);
    return pread_all(f->fd, f->path, dst, nbytes, f->data_start + e->begin);
}

const char *st_meta(const struct st_file *f, const char *key)
{
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[2 * i], key) == 0) return f->meta[2 * i + 1];
    return NULL;
}

int st_meta_count(const struct st_file *f) { return f->n_meta; }

void st_meta_at(const struct st_file *f, int i, const char **key, const char **value)
{
    LG_ASSERT(i >= 0 && i < f->n_meta && "st_meta_at: index out of range");
    *key = f->meta[2 * i];
    *value = f->meta[2 * i + 1];
}
