/* tensor.c — tensor and storage life cycles, views, host helpers, the RNG. */
#include "tensor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tn_device.h"
#include "tn_pool_impl.h"

size_t tn_dtype_size(enum tn_dtype dt)
{
    switch (dt) {
    case TN_F32: return 4;
    case TN_I8: return 1;
    case TN_I32: return 4;
    }
    return 0;
}

const char *tn_dtype_name(enum tn_dtype dt)
{
    switch (dt) {
    case TN_F32: return "F32";
    case TN_I8: return "I8";
    case TN_I32: return "I32";
    }
    return "?";
}

int64_t tn_numel(const struct tn_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->ne[i];
    return n;
}

size_t tn_nbytes(const struct tn_tensor *t)
{
    return (size_t)tn_numel(t) * tn_dtype_size(t->dtype);
}

bool tn_same_shape(const struct tn_tensor *a, const struct tn_tensor *b)
{
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->ne[i] != b->ne[i]) return false;
    return true;
}

char *tn_shape_str(const struct tn_tensor *t, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->ndim && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)t->ne[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
    return buf;
}

const char *tn_basename(const struct tn_tensor *t)
{
    const char *s = strchr(t->name, '/');
    return s ? s + 1 : t->name;
}

void tn_set_name(struct tn_tensor *t, const char *name)
{
    lg_strlcpy(t->name, name, sizeof t->name);
}

static int check_shape(int ndim, const int64_t *shape, const char *name)
{
    if (ndim < 0 || ndim > TN_MAX_DIMS)
        return lg_fail(LG_EINVAL, "tensor %s: %d dimensions (at most %d)", name, ndim, TN_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return lg_fail(LG_EINVAL, "tensor %s: negative size %lld in dimension %d", name,
                           (long long)shape[i], i);
    return LG_OK;
}

/* "meta/<class of name>.<what>" ("meta/varmap.tensor"): bookkeeping is tagged with the class
 * of the tensor it serves, so a leak report puts it beside that tensor's bytes. */
static void meta_tag(char *buf, size_t size, const char *name, const char *what)
{
    char cls[LG_MAX_CLASS] = ""; /* a name without a class: "meta/<what>" */
    if (strchr(name, '/')) lg_tag_class(name, cls, sizeof cls);
    lg_join(buf, size, 4, "meta/", cls, cls[0] ? "." : "", what);
}

/* A tensor struct with no storage yet; the caller sets st. From `pool` when one is given and
 * still taking (the slot's storage struct reserved too when `with_storage`), else tracked
 * alone. */
static struct tn_tensor *new_header(struct trk_tracker *trk, struct tn_pool *pool,
                                    bool with_storage, enum tn_dtype dt, enum tn_device dev,
                                    int ndim, const int64_t *shape, const char *name)
{
    struct tn_cell *cell =
        pool ? tn_cell_get(pool, TN_CELL_TENSOR | (with_storage ? TN_CELL_STORAGE : 0)) : NULL;
    struct tn_tensor *t;
    if (cell) {
        t = &cell->t;
    } else {
        char tag[64];
        meta_tag(tag, sizeof tag, name ? name : "tensor", "tensor");
        t = trk_alloc(trk, sizeof *t, tag);
        if (!t) return NULL;
    }
    memset(t, 0, sizeof *t);
    t->cell = cell;
    lg_strlcpy(t->name, name ? name : "tensor", sizeof t->name);
    t->dtype = dt;
    t->device = dev;
    t->ndim = ndim;
    for (int i = 0; i < TN_MAX_DIMS; i++) t->ne[i] = i < ndim ? shape[i] : 1;
    t->refs = 1;
    return t;
}

/* Gives back a header whose tensor never lived: its slot (storage use included), or its
 * tracked struct. */
static void drop_header(struct trk_tracker *trk, struct tn_tensor *t)
{
    if (t->cell)
        tn_cell_put(t->cell, TN_CELL_TENSOR | TN_CELL_STORAGE);
    else
        trk_free(trk, t);
}

static struct tn_tensor *new_tensor(struct trk_tracker *trk, struct tn_pool *pool, enum tn_dtype dt,
                                    enum tn_device dev, int ndim, const int64_t *shape,
                                    const char *name)
{
    if (!name) name = "tensor";
    if (check_shape(ndim, shape, name) != LG_OK) return NULL;
    struct tn_tensor *t = new_header(trk, pool, true, dt, dev, ndim, shape, name);
    if (!t) return NULL;
    struct tn_storage *st;
    if (t->cell) {
        st = &t->cell->st;
    } else {
        char tag[64];
        meta_tag(tag, sizeof tag, name, "storage");
        st = trk_alloc(trk, sizeof *st, tag);
        if (!st) goto fail;
    }
    memset(st, 0, sizeof *st);
    st->cell = t->cell;
    st->nbytes = tn_nbytes(t);
    st->device = dev;
    st->trk = trk;
    st->refs = 1;
    t->st = st;
    if (dev == TN_CPU && pool) {
        uint32_t id = tn_pool_tag_id(pool, t->name);
        st->data = id != TRK_NO_TAG ? trk_alloc_id(trk, st->nbytes, id) : NULL;
    } else if (dev == TN_CPU)
        st->data = trk_alloc(trk, st->nbytes, t->name);
    else
        st->data = tn_device_alloc(trk, st->nbytes, t->name);
    if (!st->data) goto fail;
    return t;
fail:
    if (t->st && !t->cell) trk_free(trk, t->st);
    drop_header(trk, t);
    return NULL;
}

struct tn_tensor *tn_new(struct trk_tracker *trk, enum tn_dtype dt, enum tn_device dev, int ndim,
                         const int64_t *shape, const char *name)
{
    return new_tensor(trk, NULL, dt, dev, ndim, shape, name);
}

/* The caller releases it with tn_release. */
struct tn_tensor *tn_new_pooled(struct tn_pool *pool, enum tn_dtype dt, enum tn_device dev,
                                int ndim, const int64_t *shape, const char *name)
{
    return new_tensor(tn_pool_tracker(pool), pool, dt, dev, ndim, shape, name);
}

struct tn_tensor *tn_zeros(struct trk_tracker *trk, enum tn_dtype dt, enum tn_device dev, int ndim,
                           const int64_t *shape, const char *name)
{
    struct tn_tensor *t = tn_new(trk, dt, dev, ndim, shape, name);
    if (!t) return NULL;
    if (dev == TN_CPU)
        memset(tn_data(t), 0, tn_nbytes(t));
    else if (tn_device_memset(tn_data(t), 0, tn_nbytes(t)) != LG_OK) {
        tn_release(t);
        return NULL;
    }
    return t;
}

struct tn_tensor *tn_new_f32(struct trk_tracker *trk, const char *name, int ndim,
                             const int64_t *shape)
{
    return tn_new(trk, TN_F32, TN_CPU, ndim, shape, name);
}

struct tn_tensor *tn_clone(const struct tn_tensor *t, const char *name)
{
    struct tn_tensor *c =
        tn_new(t->st->trk, t->dtype, t->device, t->ndim, t->ne, name ? name : t->name);
    if (!c) return NULL;
    if (tn_copy(c, t) != LG_OK) {
        tn_release(c);
        return NULL;
    }
    return c;
}

/* A view header sharing t's storage from byte `offset`. */
static struct tn_tensor *new_view(struct tn_pool *pool, struct tn_tensor *t, int ndim,
                                  const int64_t *shape, size_t offset, const char *name)
{
    if (!pool && t->cell) pool = tn_cell_pool(t->cell);
    struct tn_tensor *v = new_header(t->st->trk, pool, false, t->dtype, t->device, ndim, shape,
                                     name ? name : t->name);
    if (!v) return NULL;
    v->st = t->st;
    __atomic_add_fetch(&t->st->refs, 1, __ATOMIC_RELAXED);
    v->offset = offset;
    return v;
}

static struct tn_tensor *reshape(struct tn_pool *pool, struct tn_tensor *t, int ndim,
                                 const int64_t *shape, const char *name)
{
    if (check_shape(ndim, shape, t->name) != LG_OK) return NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    if (n != tn_numel(t)) {
        char b[64];
        lg_fail(LG_EINVAL, "tn_reshape %s: %lld elements %s cannot take a shape of %lld", t->name,
                (long long)tn_numel(t), tn_shape_str(t, b, sizeof b), (long long)n);
        return NULL;
    }
    return new_view(pool, t, ndim, shape, t->offset, name);
}

struct tn_tensor *tn_reshape(struct tn_tensor *t, int ndim, const int64_t *shape, const char *name)
{
    return reshape(NULL, t, ndim, shape, name);
}

/* The caller releases it. */
struct tn_tensor *tn_reshape_pooled(struct tn_pool *pool, struct tn_tensor *t, int ndim,
                                    const int64_t *shape, const char *name)
{
    return reshape(pool, t, ndim, shape, name);
}

struct tn_tensor *tn_rows(struct tn_tensor *t, int64_t start, int64_t len, const char *name)
{
    if (t->ndim < 1 || start < 0 || len < 0 || start + len > t->ne[0]) {
        lg_fail(LG_EINVAL, "tn_rows %s: rows [%lld, %lld) outside [0, %lld)", t->name,
                (long long)start, (long long)(start + len), (long long)(t->ndim ? t->ne[0] : 0));
        return NULL;
    }
    int64_t shape[TN_MAX_DIMS];
    memcpy(shape, t->ne, sizeof shape);
    shape[0] = len;
    size_t row = (size_t)(tn_numel(t) / (t->ne[0] ? t->ne[0] : 1)) * tn_dtype_size(t->dtype);
    return new_view(NULL, t, t->ndim, shape, t->offset + (size_t)start * row, name);
}

struct tn_tensor *tn_retain(struct tn_tensor *t)
{
    __atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
    return t;
}

static void storage_release(struct tn_storage *st)
{
    if (__atomic_sub_fetch(&st->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    struct trk_tracker *trk = st->trk;
    if (st->device == TN_CPU)
        trk_free(trk, st->data);
    else
        tn_device_free(trk, st->data);
    if (st->cell)
        tn_cell_put(st->cell, TN_CELL_STORAGE);
    else
        trk_free(trk, st);
}

void tn_release(struct tn_tensor *t)
{
    if (!t) return;
    if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    struct trk_tracker *trk = t->st->trk;
    tn_release(t->grad);
    storage_release(t->st);
    if (t->cell)
        tn_cell_put(t->cell, TN_CELL_TENSOR);
    else
        trk_free(trk, t);
}

void tn_fill(struct tn_tensor *t, float v)
{
    LG_ASSERT(t->device == TN_CPU && "tn_fill is a host helper");
    int64_t n = tn_numel(t);
    if (t->dtype == TN_F32) {
        float *p = tn_f32(t);
        for (int64_t i = 0; i < n; i++) p[i] = v;
    } else if (t->dtype == TN_I32) {
        int32_t *p = tn_i32(t);
        for (int64_t i = 0; i < n; i++) p[i] = (int32_t)v;
    } else {
        memset(tn_data(t), (int8_t)v, (size_t)n);
    }
}

int tn_copy(struct tn_tensor *dst, const struct tn_tensor *src)
{
    if (tn_numel(dst) != tn_numel(src) || dst->dtype != src->dtype) {
        char a[64], b[64];
        return lg_fail(LG_EINVAL, "tn_copy: %s %s %s from %s %s %s", dst->name,
                       tn_dtype_name(dst->dtype), tn_shape_str(dst, a, sizeof a), src->name,
                       tn_dtype_name(src->dtype), tn_shape_str(src, b, sizeof b));
    }
    if (dst->device == TN_CPU && src->device == TN_CPU) {
        memmove(tn_data(dst), tn_data(src), tn_nbytes(src));
        return LG_OK;
    }
    return tn_device_copy(tn_data(dst), dst->device, tn_data(src), src->device, tn_nbytes(src));
}

struct tn_tensor *tn_to_device(const struct tn_tensor *t, enum tn_device dev)
{
    struct tn_tensor *c = tn_new(t->st->trk, t->dtype, dev, t->ndim, t->ne, t->name);
    if (!c) return NULL;
    if (tn_copy(c, t) != LG_OK) {
        tn_release(c);
        return NULL;
    }
    return c;
}

int tn_move(struct tn_tensor *t, enum tn_device dev)
{
    struct tn_storage *st = t->st;
    if (t->device == dev && st->device == dev) return t->grad ? tn_move(t->grad, dev) : LG_OK;
    int refs = __atomic_load_n(&st->refs, __ATOMIC_ACQUIRE);
    if (refs != 1)
        return lg_fail(LG_EINVAL, "tn_move %s: its storage is shared with %d view(s)", t->name,
                       refs - 1);
    void *data = dev == TN_CPU ? trk_alloc(st->trk, st->nbytes, t->name)
                               : tn_device_alloc(st->trk, st->nbytes, t->name);
    if (!data) return lg_errcode() ? lg_errcode() : LG_ENOMEM;
    int rc = tn_device_copy(data, dev, st->data, st->device, st->nbytes);
    if (rc == LG_OK && t->grad) rc = tn_move(t->grad, dev);
    void *old =
        rc == LG_OK ? st->data : data; /* what goes: the old memory, or the new on failure */
    enum tn_device old_dev = rc == LG_OK ? st->device : dev;
    if (old_dev == TN_CPU)
        trk_free(st->trk, old);
    else
        tn_device_free(st->trk, old);
    if (rc != LG_OK) return rc;
    st->data = data;
    st->device = dev;
    t->device = dev;
    return LG_OK;
}

/* ---- random numbers: splitmix64 seeding xoshiro256** ---------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void tn_rng_seed(struct tn_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t next_u64(struct tn_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static inline float uniform01(struct tn_rng *r) { return (float)(next_u64(r) >> 40) * 0x1.0p-24f; }

uint64_t tn_rng_next(struct tn_rng *r) { return next_u64(r); }

float tn_rng_uniform(struct tn_rng *r) { return uniform01(r); }

/* Box–Muller: two normals from two uniforms (u1 in (0, 1] so the log is finite). */
static inline void normal_pair(struct tn_rng *r, double *a, double *b)
{
    double u1 = ((double)(next_u64(r) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = (double)(next_u64(r) >> 11) * 0x1.0p-53;
    double m = sqrt(-2.0 * log(u1)), ang = 6.283185307179586 * u2;
    *a = m * cos(ang);
    *b = m * sin(ang);
}

float tn_rng_normal(struct tn_rng *r)
{
    double a, b;
    normal_pair(r, &a, &b);
    return (float)a;
}

/* The fill loops inline the generator: initialising foxhunt-815's 213 M parameters is
 * dominated by them. */
void tn_fill_uniform(struct tn_tensor *t, struct tn_rng *r, float lo, float hi)
{
    LG_ASSERT(t->device == TN_CPU && t->dtype == TN_F32);
    float *p = tn_f32(t), w = hi - lo;
    for (int64_t i = 0, n = tn_numel(t); i < n; i++) p[i] = lo + w * uniform01(r);
}

void tn_fill_normal(struct tn_tensor *t, struct tn_rng *r, float mean, float std)
{
    LG_ASSERT(t->device == TN_CPU && t->dtype == TN_F32);
    float *p = tn_f32(t);
    int64_t n = tn_numel(t), i = 0;
    for (; i + 1 < n; i += 2) {
        double a, b;
        normal_pair(r, &a, &b);
        p[i] = mean + std * (float)a;
        p[i + 1] = mean + std * (float)b;
    }
    if (i < n) p[i] = mean + std * tn_rng_normal(r);
}
