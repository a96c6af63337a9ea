/* tensor.h — named, tracked, reference-counted tensors.
 *
 * Worked example:
 *
 *   int64_t shape[2] = {160, 64};
 *   struct tn_tensor *w = tn_new(trk, TN_F32, TN_CPU, 2, shape, "varmap/enc.fc1.weight");
 *   if (!w) return lg_errcode();          // LG_ENOMEM, message in lg_errmsg()
 *   tn_fill(w, 0.0f);
 *   float *p = tn_f32(w);                 // row-major, p[i * 64 + j]
 *   struct tn_tensor *flat = tn_reshape(w, 1, (int64_t[]){160 * 64}, NULL); // shares storage
 *   tn_release(flat);
 *   tn_release(w);                        // storage freed with the last holder
 *
 * A tensor is a plain struct (ggml): shape, dtype, device, and a pointer into a storage that
 * views share through a reference count. Tensors are always contiguous and row-major; a view
 * is a reshape or a contiguous range of rows. The tensor's name is the tracking tag of the
 * storage it allocates, so a leak report prints `varmap/enc_vsn.var_grn.dow.fc1.weight`.
 * The tensor and storage structs are tracked too, tagged with the tensor's class:
 * "meta/varmap.tensor", "meta/varmap.storage" for a "varmap/..." tensor.
 *
 * Many short-lived tensors (a training step's activations) take their two structs from a pool
 * instead: one tracked slab holds 64 of them, so a new tensor costs one tracked allocation (its
 * data, tagged with its name) instead of three:
 *
 *   struct tn_pool *pool = tn_pool_new(trk, "meta/act.tensor");   // the slabs' tag
 *   struct tn_tensor *a = tn_new_pooled(pool, TN_F32, TN_CPU, 2, shape, "act/enc.fc1");
 *   tn_release(a);                        // its structs go back to the pool, its data is freed
 *   tn_pool_free(pool);                   // slabs go now, or with their last live tensor
 *
 * A view of a pooled tensor takes its struct from the same pool while the pool lives.
 */
#ifndef LG_TENSOR_H
#define LG_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "tracking.h"

#define TN_MAX_DIMS 4

enum tn_dtype { TN_F32 = 0, TN_I8 = 1, TN_I32 = 2 };
enum tn_device { TN_CPU = 0, TN_CUDA = 1 };

struct tn_cell; /* a pool's slot: one tensor and one storage struct (tensor.c) */

/* Memory shared by a tensor and its views. */
struct tn_storage {
    void *data; /* host pointer (TN_CPU) or device pointer (TN_CUDA) */
    size_t nbytes;
    enum tn_device device;
    struct trk_tracker *trk; /* where data came from and goes back to */
    int refs;                /* holders; atomically updated */
    struct tn_cell *cell;    /* the pool slot this struct lives in, or NULL (tracked alone) */
};

struct ag_node; /* autograd.h */

struct tn_tensor {
    char name[LG_MAX_NAME]; /* also the tracking tag of storage it allocated */
    enum tn_dtype dtype;
    enum tn_device device;
    int ndim;
    int64_t ne[TN_MAX_DIMS]; /* shape; ne[ndim-1] varies fastest; unused dims are 1 */
    size_t offset;           /* bytes from st->data to the first element */
    struct tn_storage *st;
    int refs; /* holders of this struct; atomically updated */

    /* autograd (autograd.h) */
    bool requires_grad;     /* a leaf parameter, or computed from one on the tape */
    struct tn_tensor *grad; /* accumulated gradient, same shape; owned by this tensor */
    struct ag_node *node;   /* the tape node that produced it; NULL for leaves */
    void *user;             /* free for the owner (e.g. the VarMap entry); not managed */
    struct tn_cell *cell;   /* the pool slot this struct lives in, or NULL (tracked alone) */
};

/* New uninitialised tensor; the caller releases it with tn_release. NULL + LG_ENOMEM or
 * LG_EINVAL (bad shape) on failure. `name` may be NULL ("tensor"). */
struct tn_tensor *tn_new(struct trk_tracker *trk, enum tn_dtype dt, enum tn_device dev, int ndim,
                         const int64_t *shape, const char *name);
/* As tn_new, zero-filled. */
struct tn_tensor *tn_zeros(struct trk_tracker *trk, enum tn_dtype dt, enum tn_device dev, int ndim,
                           const int64_t *shape, const char *name);
/* Shorthand for f32 CPU tensors: tn_new_f32(trk, "x", 2, (int64_t[]){3, 4}). */
struct tn_tensor *tn_new_f32(struct trk_tracker *trk, const char *name, int ndim,
                             const int64_t *shape);
/* A deep copy (new storage) on the same device; the caller releases it. */
struct tn_tensor *tn_clone(const struct tn_tensor *t, const char *name);
/* A view with another shape over the same storage (numel must match); caller releases. */
struct tn_tensor *tn_reshape(struct tn_tensor *t, int ndim, const int64_t *shape, const char *name);
/* A view of rows [start, start+len) along axis 0; caller releases. */
struct tn_tensor *tn_rows(struct tn_tensor *t, int64_t start, int64_t len, const char *name);

/* A pool of tensor and storage structs whose slabs are tracked under `tag`; freed with
 * tn_pool_free. NULL + LG_ENOMEM on failure. */
struct tn_pool *tn_pool_new(struct trk_tracker *trk, const char *tag);
/* Gives the pool up: slabs with no live tensor are freed now, the others with their last
 * tensor. NULL does nothing. */
void tn_pool_free(struct tn_pool *pool);
/* A new step begins: the pool's memo of tag ids (tn_pool_impl.h) starts again from its first
 * entry. Only a hint; a pool never rewound still tracks every tensor under its own name. */
void tn_pool_rewind(struct tn_pool *pool);
/* As tn_new, the tensor's structs from `pool` (the data is still tracked under `name`). */
struct tn_tensor *tn_new_pooled(struct tn_pool *pool, enum tn_dtype dt, enum tn_device dev,
                                int ndim, const int64_t *shape, const char *name);

/* As tn_reshape, the view's struct from `pool` (whatever t's came from). */
struct tn_tensor *tn_reshape_pooled(struct tn_pool *pool, struct tn_tensor *t, int ndim,
                                    const int64_t *shape, const char *name);

/* Takes a reference; returns t. */
struct tn_tensor *tn_retain(struct tn_tensor *t);
/* Drops a reference; the last one frees the struct, its grad, and its storage reference.
 * NULL does nothing. */
void tn_release(struct tn_tensor *t);

int64_t tn_numel(const struct tn_tensor *t);
size_t tn_nbytes(const struct tn_tensor *t);
size_t tn_dtype_size(enum tn_dtype dt);
const char *tn_dtype_name(enum tn_dtype dt); /* "F32", "I8", "I32" (safetensors spelling) */
bool tn_same_shape(const struct tn_tensor *a, const struct tn_tensor *b);
/* "[64, 168, 160]" into buf; returns buf. */
char *tn_shape_str(const struct tn_tensor *t, char *buf, size_t size);
/* The name without its class prefix: "enc.fc1.weight" for "varmap/enc.fc1.weight". */
const char *tn_basename(const struct tn_tensor *t);
void tn_set_name(struct tn_tensor *t, const char *name);

static inline void *tn_data(const struct tn_tensor *t) { return (char *)t->st->data + t->offset; }
static inline float *tn_f32(const struct tn_tensor *t) { return (float *)tn_data(t); }
static inline int8_t *tn_i8(const struct tn_tensor *t) { return (int8_t *)tn_data(t); }
static inline int32_t *tn_i32(const struct tn_tensor *t) { return (int32_t *)tn_data(t); }

/* Host-side helpers (CPU tensors). */
void tn_fill(struct tn_tensor *t, float v);
/* Copies src into dst (same numel and dtype; any devices). Returns LG_OK or a status. */
int tn_copy(struct tn_tensor *dst, const struct tn_tensor *src);
/* Moves a tensor to a device: a new tensor (same name) the caller releases. */
struct tn_tensor *tn_to_device(const struct tn_tensor *t, enum tn_device dev);
/* Moves t's storage (and its grad's) to dev in place: same struct, new memory tagged with t's
 * name, the old memory freed. For tensors that others point at (parameters, batches). Its
 * storage must not be shared with views (LG_EINVAL). On failure t is unchanged. */
int tn_move(struct tn_tensor *t, enum tn_device dev);

/* Deterministic random numbers (splitmix64 seeding xoshiro256**). */
struct tn_rng {
    uint64_t s[4];
};
void tn_rng_seed(struct tn_rng *r, uint64_t seed);
uint64_t tn_rng_next(struct tn_rng *r);
float tn_rng_uniform(struct tn_rng *r); /* [0, 1) */
float tn_rng_normal(struct tn_rng *r);  /* N(0, 1) */
void tn_fill_uniform(struct tn_tensor *t, struct tn_rng *r, float lo, float hi);
void tn_fill_normal(struct tn_tensor *t, struct tn_rng *r, float mean, float std);

#endif
