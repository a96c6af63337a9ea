/* device_none.c — tn_device.h for builds without CUDA: every device request is refused
 * with LG_EUNAVAIL and a message that says why. */
#include <stdio.h>

#include "tn_device.h"

void *tn_device_alloc(struct trk_tracker *trk, size_t nbytes, const char *tag)
{
    (void)trk;
    (void)nbytes;
    lg_fail(LG_EUNAVAIL, "device tensor %s: this build of leakgate has no CUDA support", tag);
    return NULL;
}

void tn_device_free(struct trk_tracker *trk, void *p) { trk_dev_free(trk, p); }

int tn_device_memset(void *p, int value, size_t nbytes)
{
    (void)p;
    (void)value;
    (void)nbytes;
    return lg_fail(LG_EUNAVAIL, "device memset: this build of leakgate has no CUDA support");
}

int tn_device_copy(void *dst, enum tn_device ddev, const void *src, enum tn_device sdev,
                   size_t nbytes)
{
    (void)dst;
    (void)ddev;
    (void)src;
    (void)sdev;
    (void)nbytes;
    return lg_fail(LG_EUNAVAIL, "device copy: this build of leakgate has no CUDA support");
}

bool tn_device_available(void) { return false; }

int tn_device_init(struct trk_tracker *trk, enum tn_device dev)
{
    (void)trk;
    if (dev == TN_CPU) return LG_OK;
    return lg_fail(LG_EUNAVAIL,
                   "--device cuda: this build of leakgate has no CUDA support (configure with "
                   "-DLG_CUDA=ON on a machine with nvcc)");
}

void tn_device_fini(struct trk_tracker *trk) { (void)trk; }

void tn_device_describe(enum tn_device dev, char *buf, size_t size)
{
    snprintf(buf, size, "%s", dev == TN_CPU ? "cpu" : "cuda (not built)");
}

void tn_device_clear_error(void) {}
