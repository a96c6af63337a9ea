/* trk_cuda.h — the CUDA device backend of the tracker (built only when nvcc is found:
 * LG_HAVE_CUDA), and the device's own views of its memory.
 *
 * Worked example:
 *
 *   struct trk_tracker *trk;   trk_tracker_new(&trk, NULL);
 *   if (trk_cuda_attach(trk) != LG_OK)            // LG_EUNAVAIL: no driver or no device
 *       die(lg_errmsg());
 *   void *p = trk_dev_alloc(trk, 1 << 20, "act/scratch");   // tagged cudaMallocAsync
 *   trk_dev_free(trk, p);
 *   struct trk_snapshot s;
 *   trk_quiesce(trk);                             // device sync, pool trimmed to zero
 *   trk_snapshot(trk, &s);       // s.dev_used (cudaMemGetInfo), s.dev_process (NVML)
 *   trk_cuda_detach(trk);
 *
 * Three views of device memory:
 *   1. the tracker's tagged ledger (exact: every trk_dev_alloc by tag and session);
 *   2. the driver: used = total − free from cudaMemGetInfo after a device synchronise, and
 *      NVML's figure for this process (libnvidia-ml.so.1 is dlopen'd; -1 where it is absent,
 *      or where the process is not visible to NVML, as in some containers);
 *   3. optionally (LG_CUPTI=1 or .capture), CUPTI's memory activity records: every device
 *      allocation made in the process, so the ones the ledger does not know — made by cuBLAS,
 *      by other libraries — are listed with the library that made them. libcupti is dlopen'd:
 *      the binary runs without it. Capture is a diagnostic mode (its record buffers are
 *      untagged host memory); run it apart from the gate.
 *
 * Allocations use the stream-ordered allocator on the legacy default stream (cudaMallocAsync /
 * cudaFreeAsync: no device-wide synchronisation per free), with the pool's release threshold
 * raised so memory stays mapped between steps; the backend's sync (trk_quiesce) synchronises
 * and trims the pool to zero, so the driver view after a quiesce holds only live memory.
 * LG_CUDA_ALLOC=sync selects plain cudaMalloc/cudaFree (and is used where the device has no
 * memory pools).
 *
 * The backend state is process-wide (one CUDA device per process: LG_CUDA_DEVICE, default 0);
 * attach and detach are not thread-safe against device allocations.
 */
#ifndef LG_TRK_CUDA_H
#define LG_TRK_CUDA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tracking.h"

struct trk_cuda_options {
    int device;      /* CUDA device ordinal */
    bool capture;    /* CUPTI capture of untagged device allocations */
    bool sync_alloc; /* cudaMalloc/cudaFree instead of the stream-ordered pool */
};

/* Options from the environment: LG_CUDA_DEVICE (default 0), LG_CUPTI=1, LG_CUDA_ALLOC=sync. */
void trk_cuda_options_from_env(struct trk_cuda_options *opt);

/* Registers the CUDA backend on trk with options from the environment. LG_EUNAVAIL with a
 * message when there is no usable driver or device; LG_ECUDA when the device fails. */
int trk_cuda_attach(struct trk_tracker *trk);
int trk_cuda_attach_opts(struct trk_tracker *trk, const struct trk_cuda_options *opt);
/* Unregisters the backend (live device allocations stay in the ledger). */
void trk_cuda_detach(struct trk_tracker *trk);

/* True when the CUDA runtime finds at least one device (no side effects beyond that). */
bool trk_cuda_available(void);
/* Why trk_cuda_available is false ("no CUDA-capable device is detected"), or "". */
const char *trk_cuda_unavailable_reason(void);
/* "NVIDIA H200 (sm_90, 139.8 GiB)" into buf; LG_EUNAVAIL when there is no device. */
int trk_cuda_device_name(char *buf, size_t size);
/* The driver view now, without a tracker (after a device synchronise); -1 where unknown. */
void trk_cuda_usage(int64_t *used, int64_t *total, int64_t *process);

/* ---- CUPTI capture of untagged device allocations --------------------------------------- */

struct trk_cuda_untagged_alloc {
    uint64_t address;
    uint64_t bytes;
    char source[128]; /* the library that allocated it (CUPTI's allocation source), or "?" */
};

struct trk_cuda_untagged {
    bool active;                    /* capture is running */
    int64_t seen_count;             /* device allocations CUPTI reported since capture began */
    int64_t live_bytes, live_count; /* still allocated and unknown to trk's ledger */
    int64_t tagged_bytes;           /* trk's tagged device bytes at the same moment */
    int64_t driver_used;            /* cudaMemGetInfo's used bytes at the same moment (-1: n/a) */
    size_t n;                       /* the untagged allocations, largest first */
    struct trk_cuda_untagged_alloc *v;
};

/* Flushes CUPTI's buffers and lists the live device allocations trk's ledger does not know.
 * out->active is false (and LG_OK returned) when capture is off. out->v is freed with
 * trk_cuda_untagged_fini. LG_ENOMEM when the list cannot be made. */
int trk_cuda_untagged(struct trk_tracker *trk, struct trk_cuda_untagged *out);
void trk_cuda_untagged_fini(struct trk_cuda_untagged *u);
/* Prints the report: tagged, untagged by library, and the rest of the driver's used bytes
 * (the context, loaded modules, pools: memory no allocation call returned). */
void trk_cuda_untagged_print(const struct trk_cuda_untagged *u, FILE *f);

#endif
