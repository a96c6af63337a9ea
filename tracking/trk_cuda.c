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

/* NVML, declared here (no nvml.h needed): the v3 process query takes nvmlProcessInfo_v2_t. */
#define LG_NVML_SUCCESS           0
#define LG_NVML_INSUFFICIENT_SIZE 7
#define LG_NVML_NOT_AVAILABLE     0xFFFFFFFFFFFFFFFFull
struct lg_nvml_proc {
    unsigned int pid;
    unsigned long long used;
    unsigned int gpu_instance, compute_instance;
};
typedef int (*lg_nvml_init_fn)(void);
typedef int (*lg_nvml_by_pci_fn)(const char *bus_id, void **device);
typedef int (*lg_nvml_procs_fn)(void *device, unsigned int *count, struct lg_nvml_proc *infos);

static struct {
    bool ready; /* the device is selected and its context exists */
    int device;
    bool pools;         /* the device supports the stream-ordered allocator */
    cudaMemPool_t pool; /* its default pool */
    char why[160];      /* why no device, when the last probe failed */
    bool nvml_tried;
    void *nvml_device; /* NULL when NVML is absent or does not know the device */
    lg_nvml_procs_fn nvml_procs;
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

static void nvml_open(void)
{
    if (g.nvml_tried) return;
    g.nvml_tried = true;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    lg_nvml_init_fn init = (lg_nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    lg_nvml_by_pci_fn by_pci = (lg_nvml_by_pci_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    lg_nvml_procs_fn procs =
        (lg_nvml_procs_fn)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    char bus[32];
    void *dev = NULL;
    if (!init || !by_pci || !procs || init() != LG_NVML_SUCCESS ||
        cudaDeviceGetPCIBusId(bus, sizeof bus, g.device) != cudaSuccess ||
        by_pci(bus, &dev) != LG_NVML_SUCCESS) {
        cudaGetLastError();
        return; /* the library stays loaded: NVML may hold state we cannot tear down safely */
    }
    g.nvml_device = dev;
    g.nvml_procs = procs;
}

/* This process's device bytes per NVML, or -1 (no NVML, process not visible, value hidden). */
static int64_t nvml_process_bytes(void)
{
    if (!g.nvml_device) return -1;
    struct lg_nvml_proc buf[64], *v = buf;
    unsigned int n = 64;
    int64_t bytes = -1;
    int rc = g.nvml_procs(g.nvml_device, &n, v);
    if (rc == LG_NVML_INSUFFICIENT_SIZE) {
        n += 16;
        v = calloc(n, sizeof *v);
        if (!v) return -1;
        rc = g.nvml_procs(g.nvml_device, &n, v);
    }
    if (rc == LG_NVML_SUCCESS) {
        unsigned int me = (unsigned int)getpid();
        for (unsigned int i = 0; i < n; i++)
            if (v[i].pid == me && v[i].used != LG_NVML_NOT_AVAILABLE) bytes = (int64_t)v[i].used;
    }
    if (v != buf) free(v);
    return bytes;
}

/* Selects the device, creates its context (so the context exists before any baseline) and
 * configures the pool. */
static int device_init(const struct trk_cuda_options *opt)
{
    if (g.ready && g.device == opt->device) return LG_OK;
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
    cudaGetLastError();
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
    cudaGetLastError(); /* an allocation failure is not sticky: clear it */
    return cuda_fail(e, c->pool ? "cudaMallocAsync" : "cudaMalloc");
}

static void be_free(void *ctx, void *p)
{
    const struct be_ctx *c = ctx;
    cudaError_t e = c->pool ? cudaFreeAsync(p, 0) : cudaFree(p);
    if (e != cudaSuccess) cudaGetLastError(); /* nothing to return to; the next sync reports */
}

static void be_sync(void *ctx)
{
    (void)ctx;
    cudaDeviceSynchronize();
    if (g.pools) cudaMemPoolTrimTo(g.pool, 0);
    cudaGetLastError();
}

void trk_cuda_usage(int64_t *used, int64_t *total, int64_t *process)
{
    *used = *total = *process = -1;
    if (!g.ready) return;
    size_t fr = 0, tot = 0;
    cudaDeviceSynchronize();
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess) {
        *used = (int64_t)(tot - fr);
        *total = (int64_t)tot;
    }
    cudaGetLastError();
    *process = nvml_process_bytes();
}

static void be_usage(void *ctx, int64_t *used, int64_t *total, int64_t *process)
{
    (void)ctx;
    trk_cuda_usage(used, total, process);
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
    be_sync(NULL); /* frees queued on the stream complete before the backend goes */
    trk_set_device_backend(trk, NULL);
}

/* ---- device queries ------------------------------------------------------------------------ */

bool trk_cuda_available(void)
{
    if (g.ready) return true;
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

const char *trk_cuda_unavailable_reason(void)
{
    return g.why;
}

int trk_cuda_device_name(char *buf, size_t size)
{
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
