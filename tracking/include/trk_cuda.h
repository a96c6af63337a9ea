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
 *   if (trk_quiesce(trk) != LG_OK)                // device sync, pool trimmed to zero; a
 *       record(lg_errmsg());                      // device fault is returned here, to the
 *                                                 // session whose work raised it
 *   trk_snapshot(trk, &s);  // s.dev_process (NVML: this process), s.dev_used (the whole GPU)
 *   trk_cuda_detach(trk);
 *
 * Three views of device memory:
 *   1. the tracker's tagged ledger (exact: every trk_dev_alloc by tag and session);
 *   2. the driver: NVML's figure for this process alone (dev_process: its context, modules,
 *      pools and allocations; libnvidia-ml.so.1 is dlopen'd, the query picked by what the
 *      driver has; found by pid, or — where a PID namespace hides the pid — as the device's
 *      only compute process; -1 where NVML is absent, or lists several processes none with
 *      this pid: trk_cuda_process_source says which) — the figure a verdict should rest on;
 *      and used = total − free from cudaMemGetInfo (dev_used), which covers the WHOLE GPU:
 *      other processes on it move it too, so it is a separate, optional view;
 *   3. optionally (LG_CUPTI=1 or .capture), CUPTI's memory activity records: every device
 *      allocation made in the process, so the ones the ledger does not know — made by cuBLAS,
 *      by other libraries — are listed with the library that made them. libcupti is dlopen'd:
 *      the binary runs without it. Capture is a diagnostic mode (its record buffers are
 *      untagged host memory); run it apart from the gate.
 *
 * Faults: a kernel's asynchronous fault surfaces at the next synchronise. trk_quiesce (the
 * backend's sync) returns it (LG_ECUDA, the message naming the error and whether the context
 * is lost), so the harness charges it to the session that just ended; a failed stream-ordered
 * free is held and returned by the next quiesce the same way. After a sticky fault every later
 * quiesce says the device has been unusable since that first fault.
 *
 * Module loading: before its first CUDA call the backend sets CUDA_MODULE_LOADING=EAGER unless
 * the environment already sets it, so every module (ours and cuBLAS's) is loaded when it is
 * registered, outside any session, instead of when a kernel first runs — which, under the
 * default LAZY mode, can add a one-off step to a measured session's device memory.
 * trk_cuda_module_loading says what the driver does.
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
/* The driver view now, without a tracker (after a device synchronise; an error it finds is
 * returned by the next quiesce); -1 where unknown. */
void trk_cuda_usage(int64_t *used, int64_t *total, int64_t *process);
/* What dev_process rests on, into buf: true with "NVML <query> (this process's own device
 * memory)" when NVML reports this process now (", matched as the device's only compute
 * process" where its pid is hidden); false with "unavailable: <why>" (no NVML, several
 * processes and none with this pid, no device attached). Queries NVML once. */
bool trk_cuda_process_source(char *buf, size_t size);
/* How the driver loads modules in this process: "eager (set by leakgate)", "eager
 * (CUDA_MODULE_LOADING)", "lazy (CUDA_MODULE_LOADING)", "lazy (CUDA was initialised before
 * leakgate set CUDA_MODULE_LOADING)" or "unknown (...)". A static string. */
const char *trk_cuda_module_loading(void);

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
