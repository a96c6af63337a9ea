/* trainer_impl.h — the trainer's state, shared by trainer.c and trainer_quant.c. */
#ifndef LG_TRAINER_IMPL_H
#define LG_TRAINER_IMPL_H

#include "trainer.h"

struct tr_trainer {
    struct trk_tracker *trk;
    struct tft_model *model;   /* borrowed; its VarMap is borrowed through it */
    struct data_set *data;     /* borrowed */
    struct tr_options opt;     /* defaults resolved */
    struct tn_tensor **params; /* the VarMap's parameters in name order ("meta/varmap.list") */
    int n_params;
    struct opt_adamw *opt_state;
    struct ag_ctx *ctx;
    struct data_cursor cursor; /* training batches */
    bool raw_done;
    /* what the faults leave behind (NULL without faults) */
    struct vm_varmap *own_varmap;
    struct ag_tape *kept_tape;
    struct tn_tensor **kept_grads;
    char *leaked_staging;
    void *kept_device; /* device-tensor: the step's device workspace */
};

#endif
