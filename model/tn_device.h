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

#endif
