/* trk_cupti.c — optional capture of every device allocation in the process through CUPTI's
 * memory activity records (CUPTI_ACTIVITY_KIND_MEMORY2), so that device memory the tracker's
 * ledger does not know (cuBLAS workspaces, other libraries' buffers) is listed with the library
 * that allocated it instead of being guessed at. libcupti is dlopen'd (LG_CUPTI_LIB names it
 * explicitly); without it, capture reports LG_EUNAVAIL and nothing else changes.
 *
 * CUPTI hands records over in buffers, from its own thread or from a flush; each allocation
 * enters a table of live allocations keyed by address, each release removes it. The table is
 * guarded by one mutex. Its memory and the record buffers are plain malloc: capture is a
 * diagnostic mode, not part of a measured gate run. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lg_addrmap.h"
#include "trk_cuda_impl.h"

#ifdef LG_HAVE_CUPTI_H
#include <cupti.h>
/* CUpti_ActivityMemory4, the MEMORY2 record read below, is CUDA 13's (CUPTI_API_VERSION 130000
 * on); older headers build without the capture. */
#if CUPTI_API_VERSION >= 130000
#define LG_CUPTI_CAPTURE 1
#endif
#endif

#ifdef LG_CUPTI_CAPTURE

typedef CUptiResult (*reg_fn)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*kind_fn)(CUpti_ActivityKind);
typedef CUptiResult (*flush_fn)(uint32_t);
typedef CUptiResult (*next_fn)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*source_fn)(uint8_t);
typedef CUptiResult (*errstr_fn)(CUptiResult, const char **);

#define BUF_BYTES   (1u << 20)
#define MAX_SOURCES 64

static struct {
    pthread_mutex_t mu;
    bool loaded, active;
    reg_fn reg;
    kind_fn enable, disable;
    flush_fn flush;
    next_fn next;
    errstr_fn errstr;
    struct lg_addrmap live; /* every live allocation: bytes, aux the source's index or -1 */
    int64_t seen;
    char sources[MAX_SOURCES][128];
    int n_sources;
} cp = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- the table of live allocations (caller holds cp.mu) ------------------------------------ */

static int intern_source(const char *s)
{
    if (!s || !*s) return -1;
    for (int i = 0; i < cp.n_sources; i++)
        if (strcmp(cp.sources[i], s) == 0) return i;
    if (cp.n_sources == MAX_SOURCES) return -1;
    lg_strlcpy(cp.sources[cp.n_sources], s, sizeof cp.sources[0]);
    return cp.n_sources++;
}

static void table_put(uint64_t a, uint64_t bytes, const char *source)
{
    lg_addrmap_put(&cp.live, a, bytes, intern_source(source), NULL); /* out of memory: drop */
}

static void table_del(uint64_t a) { lg_addrmap_del(&cp.live, a, NULL); }

/* ---- CUPTI's buffer callbacks ---------------------------------------------------------------- */

static void CUPTIAPI buf_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUF_BYTES);
    *size = *buffer ? BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                  size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&cp.mu);
    while (buffer && cp.next(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_MEMORY2) continue;
        const CUpti_ActivityMemory4 *m = (const CUpti_ActivityMemory4 *)rec;
        if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) continue;
        if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
            cp.seen++;
            table_put(m->address, m->bytes, m->source);
        } else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
            table_del(m->address);
        }
    }
    pthread_mutex_unlock(&cp.mu);
    free(buffer);
}

/* ---- life cycle ------------------------------------------------------------------------------ */

static void *open_cupti(void)
{
    const char *env = getenv("LG_CUPTI_LIB");
    if (env && *env) return dlopen(env, RTLD_NOW | RTLD_GLOBAL);
    static const char *const names[] = {
        "libcupti.so",
        "libcupti.so.13",
        "libcupti.so.12",
#ifdef LG_CUDA_LIBDIR
        LG_CUDA_LIBDIR "/libcupti.so",
        LG_CUDA_LIBDIR "/../extras/CUPTI/lib64/libcupti.so",
#endif
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
        "/usr/local/cuda/lib64/libcupti.so",
    };
    for (size_t i = 0; i < LG_ARRAY_LEN(names); i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
        if (h) return h;
    }
    return NULL;
}

static int cupti_fail(const char *what, CUptiResult r)
{
    const char *s = NULL;
    if (cp.errstr) cp.errstr(r, &s);
    return lg_fail(LG_EUNAVAIL, "CUPTI capture: %s failed: %s (%d)", what, s ? s : "?", (int)r);
}

int trk_cupti_start(void)
{
    if (cp.active) return LG_OK;
    if (!cp.loaded) {
        void *h = open_cupti();
        if (!h)
            return lg_fail(LG_EUNAVAIL,
                           "CUPTI capture: libcupti could not be loaded (%s); set "
                           "LG_CUPTI_LIB to its path",
                           dlerror());
        cp.reg = (reg_fn)dlsym(h, "cuptiActivityRegisterCallbacks");
        cp.enable = (kind_fn)dlsym(h, "cuptiActivityEnable");
        cp.disable = (kind_fn)dlsym(h, "cuptiActivityDisable");
        cp.flush = (flush_fn)dlsym(h, "cuptiActivityFlushAll");
        cp.next = (next_fn)dlsym(h, "cuptiActivityGetNextRecord");
        cp.errstr = (errstr_fn)dlsym(h, "cuptiGetResultString");
        if (!cp.reg || !cp.enable || !cp.disable || !cp.flush || !cp.next)
            return lg_fail(LG_EUNAVAIL, "CUPTI capture: libcupti lacks the activity API");
        CUptiResult r = cp.reg(buf_request, buf_complete);
        if (r != CUPTI_SUCCESS) return cupti_fail("cuptiActivityRegisterCallbacks", r);
        source_fn src = (source_fn)dlsym(h, "cuptiActivityEnableAllocationSource");
        cp.loaded = true;
        if (src) src(1); /* name the library behind each allocation (optional) */
    }
    CUptiResult r = cp.enable(CUPTI_ACTIVITY_KIND_MEMORY2);
    if (r != CUPTI_SUCCESS) return cupti_fail("cuptiActivityEnable(MEMORY2)", r);
    cp.active = true;
    return LG_OK;
}

void trk_cupti_flush(void)
{
    if (cp.loaded) cp.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void trk_cupti_stop(void)
{
    if (!cp.active) return;
    trk_cupti_flush();
    cp.disable(CUPTI_ACTIVITY_KIND_MEMORY2);
    cp.active = false;
}

bool trk_cupti_active(void) { return cp.active; }

int64_t trk_cupti_each_live(void (*fn)(void *, uint64_t, uint64_t, const char *), void *user)
{
    pthread_mutex_lock(&cp.mu);
    LG_ADDRMAP_FOREACH(&cp.live, e)
    {
        fn(user, e->addr, e->bytes, e->aux >= 0 ? cp.sources[e->aux] : "?");
    }
    int64_t seen = cp.seen;
    pthread_mutex_unlock(&cp.mu);
    return seen;
}

#else /* built without cupti.h, or with one older than CUDA 13's */

int trk_cupti_start(void)
{
    return lg_fail(LG_EUNAVAIL, "CUPTI capture: this build has no CUDA 13 CUPTI headers");
}
void trk_cupti_stop(void) {}
void trk_cupti_flush(void) {}
bool trk_cupti_active(void) { return false; }
int64_t trk_cupti_each_live(void (*fn)(void *, uint64_t, uint64_t, const char *), void *user)
{
    (void)fn;
    (void)user;
    return 0;
}

#endif

/* ---- the report ------------------------------------------------------------------------------ */

struct collect {
    struct trk_tracker *trk;
    struct trk_cuda_untagged *u;
    size_t cap;
    bool oom;
};

static void collect_one(void *user, uint64_t address, uint64_t bytes, const char *source)
{
    struct collect *c = user;
    char tag[8];
    if (trk_tag_of(c->trk, (const void *)(uintptr_t)address, tag, sizeof tag)) return;
    struct trk_cuda_untagged *u = c->u;
    u->live_bytes += (int64_t)bytes;
    u->live_count++;
    if (u->n == c->cap) {
        size_t ncap = c->cap ? 2 * c->cap : 64;
        void *nv = realloc(u->v, ncap * sizeof *u->v);
        if (!nv) {
            c->oom = true;
            return;
        }
        u->v = nv;
        c->cap = ncap;
    }
    struct trk_cuda_untagged_alloc *a = &u->v[u->n++];
    a->address = address;
    a->bytes = bytes;
    lg_strlcpy(a->source, source, sizeof a->source);
}

static int by_bytes_desc(const void *a, const void *b)
{
    const struct trk_cuda_untagged_alloc *x = a, *y = b;
    return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

int trk_cuda_untagged(struct trk_tracker *trk, struct trk_cuda_untagged *out)
{
    memset(out, 0, sizeof *out);
    out->driver_used = -1;
    out->active = trk_cupti_active();
    if (!out->active) return LG_OK;
    trk_cupti_flush();
    struct collect c = {.trk = trk, .u = out};
    out->seen_count = trk_cupti_each_live(collect_one, &c);
    if (c.oom) {
        trk_cuda_untagged_fini(out);
        return lg_fail(LG_ENOMEM, "CUPTI capture: out of memory listing untagged allocations");
    }
    qsort(out->v, out->n, sizeof *out->v, by_bytes_desc);
    struct trk_totals dev;
    trk_totals(trk, TRK_DEVICE, &dev);
    out->tagged_bytes = dev.live_bytes;
    int64_t total, process;
    trk_cuda_usage(&out->driver_used, &total, &process);
    return LG_OK;
}

void trk_cuda_untagged_fini(struct trk_cuda_untagged *u)
{
    if (!u) return;
    free(u->v);
    u->v = NULL;
    u->n = 0;
}

void trk_cuda_untagged_print(const struct trk_cuda_untagged *u, FILE *f)
{
    char a[32], b[32];
    if (!u->active) {
        fprintf(f, "device memory: CUPTI capture is off (LG_CUPTI=1 turns it on)\n");
        return;
    }
    fprintf(f, "device memory (CUPTI capture, %lld device allocations seen):\n",
            (long long)u->seen_count);
    fprintf(f, "  tagged (the ledger)        %s\n",
            lg_fmt_bytes(a, sizeof a, (double)u->tagged_bytes));
    fprintf(f, "  untagged allocations       %s in %lld\n",
            lg_fmt_bytes(a, sizeof a, (double)u->live_bytes), (long long)u->live_count);
    /* one line per library, in order of first appearance among the largest */
    for (size_t i = 0; i < u->n; i++) {
        bool first = true;
        for (size_t j = 0; j < i && first; j++) first = strcmp(u->v[j].source, u->v[i].source) != 0;
        if (!first) continue;
        int64_t bytes = 0, count = 0;
        for (size_t j = i; j < u->n; j++)
            if (strcmp(u->v[j].source, u->v[i].source) == 0) {
                bytes += (int64_t)u->v[j].bytes;
                count++;
            }
        fprintf(f, "    %-40s %s in %lld (largest %s at 0x%llx)\n", u->v[i].source,
                lg_fmt_bytes(a, sizeof a, (double)bytes), (long long)count,
                lg_fmt_bytes(b, sizeof b, (double)u->v[i].bytes),
                (unsigned long long)u->v[i].address);
    }
    if (u->driver_used >= 0)
        fprintf(
            f,
            "  rest of the driver's used  %s (context, loaded modules, pools: no allocation "
            "call)\n",
            lg_fmt_bytes(a, sizeof a, (double)(u->driver_used - u->tagged_bytes - u->live_bytes)));
}
