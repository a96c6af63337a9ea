/* trk_cuda.c — the tracker's CUDA backend: tagged device memory through the stream-ordered
 * allocator (or cudaMalloc), the quiesce (device sync, pool trim), and the driver's view of
 * device memory (cudaMemGetInfo, NVML per process through a dlopen'd libnvidia-ml). The
 * CUPTI capture is in trk_cupti.c; the contracts are in trk_cuda.h. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trk_cuda_impl.h"

/* ---- process-wide device state -------------------------------------------------------- */

/* NVML, declared here (no nvml.h needed). Every process record NVML has used starts
 * {unsigned pid; unsigned long long usedGpuMemory; ...}; only the record's size differs:
 * nvmlProcessInfo_v1_t 16 bytes, nvmlProcessInfo_v2_t 24, and 32 for nvmlProcessDetail_v1_t
 * (and for the nvmlProcessInfo_t that a few drivers' _v3 query took: see nvml_open). */
#define LG_NVML_SUCCESS           0
#define LG_NVML_INSUFFICIENT_SIZE 7
#define LG_NVML_NOT_AVAILABLE     0xFFFFFFFFFFFFFFFFull
#define LG_NVML_MAX_PROCS         128
#define LG_NVML_RECORD_MAX        32
struct lg_nvml_record {
    unsigned int pid;
    unsigned long long used;
};
/* nvmlProcessDetailList_v1_t, for nvmlDeviceGetRunningProcessDetailList (mode 0: compute) */
struct lg_nvml_detail_list {
    unsigned int version, mode, count;
    void *procs;
};
#define LG_NVML_DETAIL_LIST_V1 ((unsigned)sizeof(struct lg_nvml_detail_list) | (1u << 24))
typedef int (*lg_nvml_init_fn)(void);
typedef int (*lg_nvml_by_pci_fn)(const char *bus_id, void **device);
typedef int (*lg_nvml_procs_fn)(void *device, unsigned int *count, void *infos);
typedef int (*lg_nvml_detail_fn)(void *device, struct lg_nvml_detail_list *list);

static struct {
    bool ready; /* the device is selected and its context exists */
    int device;
    bool pools;         /* the device supports the stream-ordered allocator */
    cudaMemPool_t pool; /* its default pool */
    char why[160];      /* why no device, when the last probe failed */
    /* module loading (CUDA_MODULE_LOADING), decided before the first CUDA call */
    bool env_done, env_ours;
    /* faults: the first error of a stream-ordered free (reported by the next quiesce), and
     * the first sticky error (the context is lost: every later call fails) */
    cudaError_t deferred;
    const char *deferred_what;
    char lost[240];
    /* NVML: this process's own bytes */
    bool nvml_tried;
    void *nvml_device; /* NULL when NVML is absent or does not know the device */
    lg_nvml_detail_fn nvml_detail;
    lg_nvml_procs_fn nvml_procs;
    size_t nvml_stride; /* bytes per record of the query in use */
    bool nvml_only;     /* the last figure was the only compute process's (pid not matched) */
    const char *nvml_query;
    char nvml_why[200];                                             /* why -1, or "" */
    unsigned char nvml_buf[LG_NVML_MAX_PROCS * LG_NVML_RECORD_MAX]; /* no allocation per query */
} g;

/* One backend context per allocation mode: a tracker's allocations are freed the way they
 * were made. */
struct be_ctx {
    bool pool;
};
static struct be_ctx ctx_pool = {true}, ctx_sync = {false};

static int cuda_fail(cudaError_t e, const char *what)
{
    int code = e == cudaErrorMemoryAllocation ? LG_ENOMEM : LG_ECUDA;
    return lg_fail(code, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Eager module loading, unless the user chose: with CUDA_MODULE_LOADING=LAZY (the default
 * since CUDA 12.2) a kernel's module is loaded when it first runs, so a kernel that first runs
 * in a measured session (a shape seen first there, a cuBLAS kernel picked for it) adds a
 * one-off step to the device's used memory there. The driver reads the variable once, when it
 * initialises: this runs before every first CUDA call of this file, so before any of the
 * process when the tracker is what touches CUDA first (the harness and the tests). */
static void cuda_env(void)
{
    if (g.env_done) return;
    g.env_done = true;
    const char *s = getenv("CUDA_MODULE_LOADING");
    if (s && *s) return;
    g.env_ours = setenv("CUDA_MODULE_LOADING", "EAGER", 0) == 0;
}

/* Remembers the first error of work that has nothing to return it to (a stream-ordered free,
 * a read of the driver's view); the next quiesce reports it. Clears the runtime's last error,
 * which a kernel's launch check would otherwise take for its own. */
static void defer_error(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return;
    if (g.deferred == cudaSuccess) {
        g.deferred = e;
        g.deferred_what = what;
    }
    cudaGetLastError();
}

/* Picks NVML's per-process query: nvmlDeviceGetRunningProcessDetailList (versioned records)
 * where the driver has it, else nvmlDeviceGetComputeRunningProcesses_v3, _v2 or the first.
 * The _v3 records are 24 bytes, except on drivers that have the confidential-computing query
 * but not the detail list (the few that briefly shipped a 32-byte nvmlProcessInfo_t; nvitop
 * tells them apart the same way). */
static void nvml_open(void)
{
    if (g.nvml_tried) return;
    g.nvml_tried = true;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(g.nvml_why, sizeof g.nvml_why, "libnvidia-ml.so.1 could not be loaded (%s)",
                 dlerror());
        return;
    }
    lg_nvml_init_fn init = (lg_nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    lg_nvml_by_pci_fn by_pci = (lg_nvml_by_pci_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    g.nvml_detail = (lg_nvml_detail_fn)dlsym(lib, "nvmlDeviceGetRunningProcessDetailList");
    if (g.nvml_detail) {
        g.nvml_query = "nvmlDeviceGetRunningProcessDetailList";
        g.nvml_stride = 32;
    } else if ((g.nvml_procs =
                    (lg_nvml_procs_fn)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"))) {
        g.nvml_query = "nvmlDeviceGetComputeRunningProcesses_v3";
        g.nvml_stride = dlsym(lib, "nvmlDeviceGetConfComputeMemSizeInfo") ? 32 : 24;
    } else if ((g.nvml_procs =
                    (lg_nvml_procs_fn)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2"))) {
        g.nvml_query = "nvmlDeviceGetComputeRunningProcesses_v2";
        g.nvml_stride = 24;
    } else if ((g.nvml_procs =
                    (lg_nvml_procs_fn)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses"))) {
        g.nvml_query = "nvmlDeviceGetComputeRunningProcesses";
        g.nvml_stride = 16;
    }
    char bus[32];
    void *dev = NULL;
    int rc = -1;
    if (!init || !by_pci || !g.nvml_query) {
        snprintf(g.nvml_why, sizeof g.nvml_why, "libnvidia-ml.so.1 lacks %s",
                 !init     ? "nvmlInit_v2"
                 : !by_pci ? "nvmlDeviceGetHandleByPciBusId_v2"
                           : "a per-process query");
    } else if ((rc = init()) != LG_NVML_SUCCESS) {
        snprintf(g.nvml_why, sizeof g.nvml_why, "nvmlInit_v2 failed (NVML status %d)", rc);
    } else if (cudaDeviceGetPCIBusId(bus, sizeof bus, g.device) != cudaSuccess) {
        cudaGetLastError();
        snprintf(g.nvml_why, sizeof g.nvml_why, "cudaDeviceGetPCIBusId failed");
    } else if ((rc = by_pci(bus, &dev)) != LG_NVML_SUCCESS) {
        snprintf(g.nvml_why, sizeof g.nvml_why, "NVML does not know the device at %s (status %d)",
                 bus, rc);
    } else {
        g.nvml_device = dev;
        g.nvml_why[0] = '\0';
    }
    /* the library stays loaded: NVML may hold state we cannot tear down safely */
}

/* This process's device bytes per NVML (its context, loaded modules, pools and allocations:
 * what the driver holds for this process alone, other tenants excluded), or -1 with the
 * reason in g.nvml_why. Allocates nothing. */
static int64_t nvml_process_bytes(void)
{
    if (!g.nvml_device) return -1;
    unsigned int n = LG_NVML_MAX_PROCS;
    int rc;
    if (g.nvml_detail) {
        struct lg_nvml_detail_list l = {LG_NVML_DETAIL_LIST_V1, 0, n, g.nvml_buf};
        rc = g.nvml_detail(g.nvml_device, &l);
        n = l.count;
    } else {
        rc = g.nvml_procs(g.nvml_device, &n, g.nvml_buf);
    }
    if (rc != LG_NVML_SUCCESS) {
        snprintf(g.nvml_why, sizeof g.nvml_why, "%s failed (NVML status %d%s)", g.nvml_query, rc,
                 rc == LG_NVML_INSUFFICIENT_SIZE ? ": over 128 processes on the device" : "");
        return -1;
    }
    unsigned int me = (unsigned int)getpid();
    for (unsigned int i = 0; i < n && i < LG_NVML_MAX_PROCS; i++) {
        struct lg_nvml_record r;
        memcpy(&r.pid, g.nvml_buf + i * g.nvml_stride, sizeof r.pid);
        memcpy(&r.used, g.nvml_buf + i * g.nvml_stride + 8, sizeof r.used);
        if (r.pid != me) continue;
        if (r.used == LG_NVML_NOT_AVAILABLE) {
            snprintf(g.nvml_why, sizeof g.nvml_why, "%s hides this process's bytes", g.nvml_query);
            return -1;
        }
        g.nvml_why[0] = '\0';
        g.nvml_only = false;
        return (int64_t)r.used;
    }
    /* Not found by pid: NVML reports the PIDs of the kernel's outermost namespace, a container
     * sees its own. This process holds a context on the device, so NVML lists it: when NVML
     * lists exactly one compute process, that one is this. */
    unsigned long long only = LG_NVML_NOT_AVAILABLE;
    if (n == 1) memcpy(&only, g.nvml_buf + 8, sizeof only);
    if (only != LG_NVML_NOT_AVAILABLE) {
        g.nvml_only = true;
        g.nvml_why[0] = '\0';
        return (int64_t)only;
    }
    snprintf(g.nvml_why, sizeof g.nvml_why,
             "%s lists %u compute process(es), none with this pid (%u): a PID namespace hides "
             "which one is this",
             g.nvml_query, n, me);
    return -1;
}

/* Selects the device, creates its context (so the context exists before any baseline) and
 * configures the pool. */
static int device_init(const struct trk_cuda_options *opt)
{
    if (g.ready && g.device == opt->device) return LG_OK;
    cuda_env();
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        return lg_fail(LG_EUNAVAIL, "CUDA: no usable device (%s)",
                       e != cudaSuccess ? cudaGetErrorString(e)
                                        : "no CUDA-capable device is detected");
    }
    if (opt->device < 0 || opt->device >= n)
        return lg_fail(LG_EINVAL, "CUDA: device %d requested, %d present (LG_CUDA_DEVICE)",
                       opt->device, n);
    if ((e = cudaSetDevice(opt->device)) != cudaSuccess) return cuda_fail(e, "cudaSetDevice");
    if ((e = cudaFree(NULL)) != cudaSuccess) return cuda_fail(e, "creating the CUDA context");
    int pools = 0;
    cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, opt->device);
    g.pools = false;
    if (pools && cudaDeviceGetDefaultMemPool(&g.pool, opt->device) == cudaSuccess) {
        uint64_t keep = UINT64_MAX; /* keep pages mapped between steps; quiesce trims */
        g.pools =
            cudaMemPoolSetAttribute(g.pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess;
    }
    cudaGetLastError(); /* the probes above may fail without harm (no pools: cudaMalloc) */
    g.device = opt->device;
    g.ready = true;
    nvml_open();
    return LG_OK;
}

/* ---- the backend ---------------------------------------------------------------------- */

static int be_alloc(void *ctx, void **out, size_t size)
{
    const struct be_ctx *c = ctx;
    cudaError_t e = c->pool ? cudaMallocAsync(out, size, 0) : cudaMalloc(out, size);
    if (e == cudaSuccess) return LG_OK;
    *out = NULL;
    cudaGetLastError(); /* returned here: not for the next launch's check */
    return cuda_fail(e, c->pool ? "cudaMallocAsync" : "cudaMalloc");
}

static void be_free(void *ctx, void *p)
{
    const struct be_ctx *c = ctx;
    cudaError_t e = c->pool ? cudaFreeAsync(p, 0) : cudaFree(p);
    defer_error(e, c->pool ? "cudaFreeAsync" : "cudaFree"); /* the next quiesce reports it */
}

/* The quiesce's device half: waits for every queued launch, copy and free, trims the pool, and
 * returns the first fault found since the last quiesce (a kernel's asynchronous fault, a failed
 * free), so that it is charged to the session whose work raised it. */
static int be_sync(void *ctx)
{
    (void)ctx;
    if (!g.ready) return LG_OK;
    if (g.lost[0]) /* every later call fails the same way: say whose fault it was */
        return lg_fail(LG_ECUDA, "device unusable since an earlier fault: %s", g.lost);
    const char *what = "cudaDeviceSynchronize";
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess && g.pools) {
        what = "cudaMemPoolTrimTo";
        e = cudaMemPoolTrimTo(g.pool, 0);
    }
    if (e == cudaSuccess && g.deferred != cudaSuccess) {
        what = g.deferred_what;
        e = g.deferred;
    }
    g.deferred = cudaSuccess;
    if (e == cudaSuccess) return LG_OK;
    cudaGetLastError(); /* clears a non-sticky error; a sticky one stays with the context */
    bool sticky = cudaDeviceSynchronize() != cudaSuccess;
    cudaGetLastError();
    int rc = lg_fail(LG_ECUDA, "device fault found by the quiesce (%s): %s (%s)%s", what,
                     cudaGetErrorString(e), cudaGetErrorName(e),
                     sticky ? "; the CUDA context is lost: every later device call fails" : "");
    if (sticky) lg_strlcpy(g.lost, lg_errmsg(), sizeof g.lost);
    return rc;
}

void trk_cuda_usage(int64_t *used, int64_t *total, int64_t *process)
{
    *used = *total = *process = -1;
    if (!g.ready) return;
    defer_error(cudaDeviceSynchronize(), "cudaDeviceSynchronize (trk_cuda_usage)");
    size_t fr = 0, tot = 0;
    cudaError_t e = cudaMemGetInfo(&fr, &tot);
    if (e == cudaSuccess) {
        *used = (int64_t)(tot - fr);
        *total = (int64_t)tot;
    } else {
        cudaGetLastError(); /* unavailable: -1 says so */
    }
    *process = nvml_process_bytes();
}

/* The driver's view as it is now: no synchronise (trk_quiesce does that before a snapshot). */
static void be_usage(void *ctx, int64_t *used, int64_t *total, int64_t *process)
{
    (void)ctx;
    *used = *total = *process = -1;
    if (!g.ready) return;
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess) {
        *used = (int64_t)(tot - fr);
        *total = (int64_t)tot;
    } else {
        cudaGetLastError();
    }
    *process = nvml_process_bytes();
}

/* ---- attach / detach -------------------------------------------------------------------- */

void trk_cuda_options_from_env(struct trk_cuda_options *opt)
{
    memset(opt, 0, sizeof *opt);
    const char *s = getenv("LG_CUDA_DEVICE");
    if (s && *s) opt->device = atoi(s);
    s = getenv("LG_CUPTI");
    opt->capture = s && *s && strcmp(s, "0") != 0;
    s = getenv("LG_CUDA_ALLOC");
    opt->sync_alloc = s && strcmp(s, "sync") == 0;
}

int trk_cuda_attach(struct trk_tracker *trk)
{
    struct trk_cuda_options opt;
    trk_cuda_options_from_env(&opt);
    return trk_cuda_attach_opts(trk, &opt);
}

int trk_cuda_attach_opts(struct trk_tracker *trk, const struct trk_cuda_options *opt)
{
    int rc = device_init(opt);
    if (rc != LG_OK) return rc;
    /* capture first, so the allocations libraries make while they start up are seen */
    if (opt->capture && (rc = trk_cupti_start()) != LG_OK) return rc;
    bool pool = g.pools && !opt->sync_alloc;
    struct trk_device_backend be = {.name = "cuda",
                                    .alloc = be_alloc,
                                    .free = be_free,
                                    .sync = be_sync,
                                    .usage = be_usage,
                                    .ctx = pool ? &ctx_pool : &ctx_sync};
    trk_set_device_backend(trk, &be);
    return LG_OK;
}

void trk_cuda_detach(struct trk_tracker *trk)
{
    if (!trk || !trk_has_device(trk)) return;
    /* frees queued on the stream complete before the backend goes; a fault found here has no
     * session left to be charged to (the last quiesce saw everything before it) */
    (void)be_sync(NULL);
    trk_set_device_backend(trk, NULL);
}

/* ---- device queries ------------------------------------------------------------------------ */

bool trk_cuda_available(void)
{
    if (g.ready) return true;
    cuda_env();
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    cudaGetLastError();
    if (e != cudaSuccess || n == 0) {
        snprintf(g.why, sizeof g.why, "%s",
                 e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA-capable device is detected");
        return false;
    }
    g.why[0] = '\0';
    return true;
}

const char *trk_cuda_unavailable_reason(void) { return g.why; }

int trk_cuda_device_name(char *buf, size_t size)
{
    cuda_env();
    int dev = g.ready ? g.device : 0;
    struct cudaDeviceProp p;
    if (!trk_cuda_available() || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        cudaGetLastError();
        snprintf(buf, size, "no CUDA device");
        return lg_fail(LG_EUNAVAIL, "CUDA: no device to name (%s)", trk_cuda_unavailable_reason());
    }
    char mem[32];
    snprintf(buf, size, "%s (sm_%d%d, %s)", p.name, p.major, p.minor,
             lg_fmt_bytes(mem, sizeof mem, (double)p.totalGlobalMem));
    return LG_OK;
}

/* cuModuleGetLoadingMode's values (cuda.h's CUmoduleLoadingMode) */
#define LG_CU_MODULE_EAGER_LOADING 1
#define LG_CU_MODULE_LAZY_LOADING  2
typedef int (*lg_loading_mode_fn)(int *mode);

const char *trk_cuda_module_loading(void)
{
    if (!g.ready) return "unknown (no device attached)";
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    int mode = 0;
    if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 11070, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn || ((lg_loading_mode_fn)fn)(&mode) != 0) {
        cudaGetLastError();
        return "unknown (the driver does not say)";
    }
    if (mode == LG_CU_MODULE_EAGER_LOADING)
        return g.env_ours ? "eager (set by leakgate)" : "eager (CUDA_MODULE_LOADING)";
    if (mode == LG_CU_MODULE_LAZY_LOADING)
        return g.env_ours ? "lazy (CUDA was initialised before leakgate set CUDA_MODULE_LOADING)"
                          : "lazy (CUDA_MODULE_LOADING)";
    return "unknown";
}

bool trk_cuda_process_source(char *buf, size_t size)
{
    if (!g.ready) {
        snprintf(buf, size, "unavailable: no device attached");
        return false;
    }
    if (nvml_process_bytes() >= 0) {
        snprintf(buf, size, "NVML %s (this process's own device memory%s)", g.nvml_query,
                 g.nvml_only ? "; matched as the device's only compute process: a PID namespace "
                               "hides its pid"
                             : "");
        return true;
    }
    snprintf(buf, size, "unavailable: %s", g.nvml_why[0] ? g.nvml_why : "NVML not opened");
    return false;
}
