/* tn_device.h — the few device primitives the tensor layer needs, implemented by
 * cuda/device.cu in a CUDA build and by device_none.c otherwise (where every call answers
 * LG_EUNAVAIL: "this binary was built without CUDA"). */
#ifndef LG_TN_DEVICE_H
#define LG_TN_DEVICE_H

#include <stddef.h>

#include "tensor.h"

/* Tagged device memory through the tracker; freed with tn_device_free. */
void *tn_device_alloc(struct trk_tracker *trk, size_t nbytes, const char *tag);
void tn_device_free(struct trk_tracker *trk, void *p);
int tn_device_memset(void *p, int value, size_t nbytes);
/* Copies between any two devices (host↔device, device↔device). */
int tn_device_copy(void *dst, enum tn_device ddev, const void *src, enum tn_device sdev,
                   size_t nbytes);
/* True when this binary has CUDA and a device is present. */
bool tn_device_available(void);

/* Sets up device `dev` for tracker trk before any session: the tracker's device backend, then
 * the cuBLAS handle and its tagged workspace, so that they belong to no session. TN_CPU does
 * nothing; TN_CUDA in a build without CUDA is LG_EUNAVAIL with a message saying so. Undone by
 * tn_device_fini (which does nothing for a tracker without a device). */
int tn_device_init(struct trk_tracker *trk, enum tn_device dev);
void tn_device_fini(struct trk_tracker *trk);
/* "cpu", or "cuda: NVIDIA H200" (what the results' run line records), into buf. */
void tn_device_describe(enum tn_device dev, char *buf, size_t size);
/* After a session's device error that left the device usable: clears the kernel table's
 * sticky error so that the next session is not failed by this one's fault. */
void tn_device_clear_error(void);

#endif
