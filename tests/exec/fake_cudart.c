/* fake_cudart.c — a test double of the CUDA runtime and driver allocation calls, for leakgate
 * exec's device channels on a machine with no GPU. "Device memory" is anonymous mmap (not the
 * heap, so host channels do not see it); cudaMemGetInfo reports a 1 GiB device of which the
 * live bytes are used. Only what the agent interposes or reads is here. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#define TOTAL (1ull << 30)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static size_t live;
static int syncs;

/* Each block remembers its size in a header page. */
static void *dev_alloc(size_t n)
{
    size_t page = 4096, total = page + (n + page - 1) / page * page;
    char *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    *(size_t *)p = total;
    pthread_mutex_lock(&mu);
    live += n;
    pthread_mutex_unlock(&mu);
    ((size_t *)p)[1] = n;
    return p + page;
}

static int dev_free(void *q)
{
    if (!q) return 0;
    char *p = (char *)q - 4096;
    pthread_mutex_lock(&mu);
    live -= ((size_t *)p)[1];
    pthread_mutex_unlock(&mu);
    munmap(p, *(size_t *)p);
    return 0;
}

int cudaMalloc(void **p, size_t n) { return (*p = dev_alloc(n)) ? 0 : 2; /* MemoryAllocation */ }
int cudaFree(void *p) { return dev_free(p); }
int cudaMallocAsync(void **p, size_t n, void *stream)
{
    (void)stream;
    return cudaMalloc(p, n);
}
int cudaFreeAsync(void *p, void *stream)
{
    (void)stream;
    return dev_free(p);
}
int cudaDeviceSynchronize(void)
{
    syncs++;
    return 0;
}
int cudaGetDevice(int *d)
{
    *d = 0;
    return 0;
}
int cudaDeviceGetDefaultMemPool(void **pool, int d)
{
    (void)d;
    *pool = &mu;
    return 0;
}
int cudaMemPoolTrimTo(void *pool, size_t keep)
{
    (void)pool;
    (void)keep;
    return 0;
}
int cudaMemGetInfo(size_t *free_b, size_t *total)
{
    pthread_mutex_lock(&mu);
    *total = TOTAL;
    *free_b = TOTAL - live;
    pthread_mutex_unlock(&mu);
    return 0;
}
int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
    void *q = dev_alloc(n);
    *p = (unsigned long long)(uintptr_t)q;
    return q ? 0 : 2; /* CUDA_ERROR_OUT_OF_MEMORY */
}
int cuMemFree_v2(unsigned long long p) { return dev_free((void *)(uintptr_t)p); }
/* what the test program reads back: the double's own count */
size_t fake_cuda_live(void) { return live; }
int fake_cuda_syncs(void) { return syncs; }
