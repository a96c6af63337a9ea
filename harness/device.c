/* device.c — attaching the tracker's device backend for --device cuda, and naming the device
 * in the results. */
#include <stdio.h>

#include "hx_impl.h"
#ifdef LG_HAVE_CUDA
#include "kn_cuda.h"
#include "trk_cuda.h"
#endif

int hx_device_attach(struct trk_tracker *trk, enum tn_device dev)
{
    if (dev == TN_CPU) return LG_OK;
#ifdef LG_HAVE_CUDA
    /* the backend, then the cuBLAS handle and its tagged workspace: both before any session,
     * so that they belong to none */
    int rc = trk_cuda_attach(trk);
    if (rc == LG_OK && (rc = kn_cuda_init(trk, NULL)) != LG_OK) trk_cuda_detach(trk);
    return rc;
#else
    (void)trk;
    return lg_fail(LG_EUNAVAIL, "--device cuda: this build of leakgate has no CUDA support "
                                "(configure with -DLG_CUDA=ON on a machine with nvcc)");
#endif
}

void hx_device_detach(struct trk_tracker *trk)
{
#ifdef LG_HAVE_CUDA
    if (!trk_has_device(trk)) return;
    struct trk_cuda_untagged u;
    if (trk_cuda_untagged(trk, &u) == LG_OK && u.active) /* LG_CUPTI=1: what the ledger missed */
        trk_cuda_untagged_print(&u, stderr);
    trk_cuda_untagged_fini(&u);
    kn_cuda_fini();
    trk_cuda_detach(trk);
#else
    (void)trk;
#endif
}

void hx_device_description(enum tn_device dev, char *buf, size_t size)
{
    if (dev == TN_CPU) {
        snprintf(buf, size, "cpu");
        return;
    }
#ifdef LG_HAVE_CUDA
    char name[80] = "unknown GPU";
    trk_cuda_device_name(name, sizeof name);
    snprintf(buf, size, "cuda: %s", name);
#else
    snprintf(buf, size, "cuda (not built)");
#endif
}
