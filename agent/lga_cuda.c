/* lga_cuda.c — device memory under exec: the CUDA runtime's and driver's allocation calls,
 * interposed and counted by pointer.
 *
 *   cudaMalloc / cudaFree, cudaMallocAsync / cudaFreeAsync   (libcudart)
 *   cuMemAlloc_v2 / cuMemFree_v2                              (libcuda)
 *
 * Every live allocation is in a table (pointer -> size): the bytes live after a session's
 * quiesce are the session's `dev_process` reading (a statistical channel: a caching allocator
 * that keeps what it took in the first session is growth that saturates, not a leak). An
 * allocation made inside a tag scope is also adopted by the tracker as tagged device memory
 * (exact, by generation: the `tagged_device` channel), as host allocations are.
 *
 * The real functions are found after the agent (RTLD_NEXT), or, for a runtime a program
 * dlopen'd privately (RTLD_LOCAL, as Python does), in the loaded object whose name has
 * "cudart" or "libcuda" in it. No CUDA headers: the ABI types are spelled out. A program with
 * no CUDA never calls these, and the agent then never touches the driver (reading
 * cudaMemGetInfo would create a context).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "lg_addrmap.h"
#include "lga_impl.h"
#include "lga_wire.h"

#define EXPORT __attribute__((visibility("default")))

typedef int cuda_err;              /* cudaError_t; 0 is cudaSuccess */
typedef int cu_result;             /* CUresult; 0 is CUDA_SUCCESS */
typedef void *cuda_stream;         /* cudaStream_t */
typedef unsigned long long cu_ptr; /* CUdeviceptr */
#define CUDA_ERR_INIT   3          /* cudaErrorInitializationError */
#define CU_ERR_NOT_INIT 3          /* CUDA_ERROR_NOT_INITIALIZED */

/* ---- finding the real functions ------------------------------------------------------------- */

struct find_ctx {
    const char *hint, *name;
    void *fn;
};

static int find_in(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct find_ctx *c = data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, c->hint)) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    void *fn = dlsym(h, c->name);
    dlclose(h); /* RTLD_NOLOAD took a reference; the object stays loaded by its owner */
    if (fn == NULL) return 0;
    c->fn = fn;
    return 1;
}

static void *resolve(const char *name, const char *hint)
{
    lga_tl.in_agent++;
    void *fn = dlsym(RTLD_NEXT, name);
    if (!fn) {
        struct find_ctx c = {hint, name, NULL};
        dl_iterate_phdr(find_in, &c);
        fn = c.fn;
    }
    lga_tl.in_agent--;
    return fn;
}

#define REAL(var, name, hint, type)                                                                \
    static _Atomic(type) var;                                                                      \
    type f_##var = atomic_load_explicit(&var, memory_order_acquire);                               \
    if (!f_##var) {                                                                                \
        f_##var = (type)resolve(name, hint);                                                       \
        atomic_store_explicit(&var, f_##var, memory_order_release);                                \
    }

/* ---- the table of live device allocations --------------------------------------------------- */

/* By address: the size and whether it was tagged (aux 1) */
static struct {
    pthread_mutex_t mu;
    struct lg_addrmap map;
    int64_t live;
    bool runtime, driver, async; /* which APIs the program used */
} dt = {.mu = PTHREAD_MUTEX_INITIALIZER};

TRK_WRAPPER static void record(void *p, size_t size)
{
    if (!p || !lga_on()) return;
    const char *tag = lga_current_tag();
    lga_tl.in_agent++;
    bool tagged = tag && trk_dev_adopt(lga.trk, p, size, tag) == LG_OK;
    if (tagged) lga_use(LGA_USED_DEVICE_TAGS);
    lga_use(LGA_USED_DEVICE);
    pthread_mutex_lock(&dt.mu);
    struct lg_addr_entry old;
    if (lg_addrmap_put(&dt.map, (uintptr_t)p, size, tagged, &old))
        dt.live += (int64_t)size - (int64_t)old.bytes; /* an address reused without our free */
    pthread_mutex_unlock(&dt.mu);
    lga_tl.in_agent--;
}

/* Called before the real free, so a concurrent allocation of the same address is counted. */
static void forget(void *p)
{
    if (!p || !lga_on()) return;
    lga_tl.in_agent++;
    bool tagged = false;
    pthread_mutex_lock(&dt.mu);
    struct lg_addr_entry e;
    if (lg_addrmap_del(&dt.map, (uintptr_t)p, &e)) {
        dt.live -= (int64_t)e.bytes;
        tagged = e.aux;
    }
    pthread_mutex_unlock(&dt.mu);
    if (tagged) trk_dev_forget(lga.trk, p);
    lga_tl.in_agent--;
}

/* ---- the runtime -------------------------------------------------------------------------------
 */

typedef cuda_err (*malloc_fn)(void **, size_t);
typedef cuda_err (*free_fn)(void *);
typedef cuda_err (*malloc_async_fn)(void **, size_t, cuda_stream);
typedef cuda_err (*free_async_fn)(void *, cuda_stream);

EXPORT TRK_WRAPPER cuda_err cudaMalloc(void **p, size_t size)
{
    REAL(real, "cudaMalloc", "cudart", malloc_fn);
    if (!f_real) return CUDA_ERR_INIT;
    dt.runtime = true;
    cuda_err e = f_real(p, size);
    if (e == 0) record(*p, size);
    return e;
}

EXPORT cuda_err cudaFree(void *p)
{
    REAL(real, "cudaFree", "cudart", free_fn);
    if (!f_real) return CUDA_ERR_INIT;
    forget(p);
    return f_real(p);
}

EXPORT TRK_WRAPPER cuda_err cudaMallocAsync(void **p, size_t size, cuda_stream s)
{
    REAL(real, "cudaMallocAsync", "cudart", malloc_async_fn);
    if (!f_real) return CUDA_ERR_INIT;
    dt.runtime = dt.async = true;
    cuda_err e = f_real(p, size, s);
    if (e == 0) record(*p, size);
    return e;
}

EXPORT cuda_err cudaFreeAsync(void *p, cuda_stream s)
{
    REAL(real, "cudaFreeAsync", "cudart", free_async_fn);
    if (!f_real) return CUDA_ERR_INIT;
    forget(p);
    return f_real(p, s);
}

/* ---- the driver --------------------------------------------------------------------------------
 */

typedef cu_result (*cu_alloc_fn)(cu_ptr *, size_t);
typedef cu_result (*cu_free_fn)(cu_ptr);

EXPORT TRK_WRAPPER cu_result cuMemAlloc_v2(cu_ptr *p, size_t size)
{
    REAL(real, "cuMemAlloc_v2", "libcuda", cu_alloc_fn);
    if (!f_real) return CU_ERR_NOT_INIT;
    dt.driver = true;
    cu_result r = f_real(p, size);
    if (r == 0) record((void *)(uintptr_t)*p, size);
    return r;
}

EXPORT cu_result cuMemFree_v2(cu_ptr p)
{
    REAL(real, "cuMemFree_v2", "libcuda", cu_free_fn);
    if (!f_real) return CU_ERR_NOT_INIT;
    forget((void *)(uintptr_t)p);
    return f_real(p);
}

/* ---- quiesce and the driver's view ----------------------------------------------------------- */

typedef cuda_err (*void_fn)(void);
typedef cuda_err (*get_device_fn)(int *);
typedef cuda_err (*default_pool_fn)(void **, int);
typedef cuda_err (*trim_fn)(void *, size_t);
typedef cuda_err (*mem_info_fn)(size_t *, size_t *);

void lga_cuda_quiesce(void)
{
    if (dt.runtime) {
        REAL(sync, "cudaDeviceSynchronize", "cudart", void_fn);
        if (f_sync) f_sync();
    } else if (dt.driver) {
        REAL(sync, "cuCtxSynchronize", "libcuda", void_fn);
        if (f_sync) f_sync();
    }
    if (dt.async) { /* the stream-ordered pool keeps freed memory mapped until trimmed */
        REAL(get_dev, "cudaGetDevice", "cudart", get_device_fn);
        REAL(get_pool, "cudaDeviceGetDefaultMemPool", "cudart", default_pool_fn);
        REAL(trim, "cudaMemPoolTrimTo", "cudart", trim_fn);
        int dev = 0;
        void *pool = NULL;
        if (f_get_dev && f_get_pool && f_trim && f_get_dev(&dev) == 0 &&
            f_get_pool(&pool, dev) == 0)
            f_trim(pool, 0);
    }
}

void lga_cuda_view(struct lga_device_view *v)
{
    v->used = v->total = -1;
    pthread_mutex_lock(&dt.mu);
    bool any = dt.runtime || dt.driver;
    v->live = any ? dt.live : -1;
    pthread_mutex_unlock(&dt.mu);
    if (!any) return;
    mem_info_fn info = NULL;
    if (dt.runtime) {
        REAL(rt_info, "cudaMemGetInfo", "cudart", mem_info_fn);
        info = f_rt_info;
    } else {
        REAL(drv_info, "cuMemGetInfo_v2", "libcuda", mem_info_fn);
        info = f_drv_info;
    }
    size_t free_b = 0, total_b = 0;
    if (info && info(&free_b, &total_b) == 0 && total_b >= free_b) {
        v->used = (int64_t)(total_b - free_b);
        v->total = (int64_t)total_b;
        lga_use(LGA_DEVICE_DRIVER);
    }
}
