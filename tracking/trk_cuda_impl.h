/* trk_cuda_impl.h — private to trk_cuda.c and trk_cupti.c: the CUPTI capture's life cycle
 * and its table of live device allocations. */
#ifndef LG_TRK_CUDA_IMPL_H
#define LG_TRK_CUDA_IMPL_H

#include "trk_cuda.h"

/* Loads libcupti (dlopen) and enables memory activity records; LG_EUNAVAIL with a message
 * when CUPTI cannot be loaded or refuses. Idempotent. */
int trk_cupti_start(void);
/* Flushes and disables the records (the table is kept for a later start). */
void trk_cupti_stop(void);
bool trk_cupti_active(void);
/* Forces CUPTI to deliver every pending record. */
void trk_cupti_flush(void);

/* Calls fn for every device allocation CUPTI reported and has not seen released, under the
 * capture's lock (fn must not call back into the capture). Returns the count of device
 * allocations seen since the capture began. */
int64_t trk_cupti_each_live(void (*fn)(void *user, uint64_t address, uint64_t bytes,
                                       const char *source),
                            void *user);

#endif
