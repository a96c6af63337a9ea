/* debug_state.c — one batch of a preset at a seed, as spec/TFT.md's "Debug state" defines it
 * (debug_state.h): model code, so the model's reference tests need no harness. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_state.h"
#include "safetensors.h"

struct names {
    char (*v)[LG_MAX_NAME + 16];
    int n;
};

int tr_debug_state(struct trk_tracker *trk, const char *preset, uint64_t seed, int batch,
                   enum tn_device dev, const char *path)
{
    struct tft_config cfg;
    struct data_set *ds = NULL;
    struct tft_model *m = NULL;
    struct ag_ctx *ctx = NULL;
    struct tft_batch b = {0};
    struct tn_tensor **params = NULL, **zero_grads = NULL;
    struct st_entry *e = NULL;
    struct names nm = {0};
    char *json = NULL;
    int np = 0, rc = tft_config_preset(&cfg, preset);
    if (rc) return rc;
    if ((rc = data_synth_new(&ds, trk, &cfg, &(struct data_synth_options){.seed = seed}))) goto out;
    if ((rc = tft_new(&m, trk, &cfg, seed))) goto out;
    struct data_cursor cur;
    data_cursor_init(&cur, seed);
    if ((rc = data_batch(ds, DATA_TRAIN, batch > 0 ? batch : cfg.batch, &cur, &b))) goto out;
    if (dev != TN_CPU && ((rc = tft_to_device(m, dev)) || (rc = tft_batch_to_device(&b, dev))))
        goto out; /* the file is written from the device through host staging (st_save) */
    ctx = ag_ctx_new(trk, &(struct ag_options){.training = false, .seed = seed, .device = dev});
    if (!ctx) {
        rc = lg_errcode();
        goto out;
    }
    struct tn_tensor *yhat = tft_forward(m, ctx, &b);
    struct tn_tensor *loss = yhat ? tft_loss(m, ctx, yhat, &b) : NULL;
    if (!loss || ag_backward(ctx, loss) != LG_OK) {
        rc = lg_fail(ag_error(ctx) ? ag_error(ctx) : LG_EINTERNAL, "debug-state: %s",
                     ag_errmsg(ctx));
        goto out;
    }
    if ((rc = vm_all_vars(tft_varmap_borrow(m), &params, &np))) goto out;
    int n = 2 * np + cfg.n_vars + 3, k = 0;
    e = calloc((size_t)n, sizeof *e);
    nm.v = calloc((size_t)n, sizeof *nm.v);
    zero_grads = calloc((size_t)np + 1, sizeof *zero_grads);
    if (!e || !nm.v || !zero_grads) {
        rc = lg_fail(LG_ENOMEM, "debug-state: out of memory");
        goto out;
    }
    for (int i = 0; i < np; i++) e[k++] = (struct st_entry){tn_basename(params[i]), params[i]};
    for (int i = 0; i < np; i++) {
        struct tn_tensor *g = params[i]->grad;
        if (!g) { /* a parameter the batch did not reach: its gradient is zero */
            g = zero_grads[i] =
                tn_zeros(trk, TN_F32, TN_CPU, params[i]->ndim, params[i]->ne, "grad/zero");
            if (!g) {
                rc = lg_errcode();
                goto out;
            }
        }
        snprintf(nm.v[nm.n], sizeof nm.v[0], "grad.%s", tn_basename(params[i]));
        e[k++] = (struct st_entry){nm.v[nm.n++], g};
    }
    for (int i = 0; i < cfg.n_vars; i++) {
        snprintf(nm.v[nm.n], sizeof nm.v[0], "input.%s", cfg.vars[i].name);
        e[k++] = (struct st_entry){nm.v[nm.n++], b.x[i]};
    }
    e[k++] = (struct st_entry){"input.y", b.y};
    e[k++] = (struct st_entry){"output.yhat", yhat};
    e[k++] = (struct st_entry){"output.loss", loss};
    json = tft_config_to_json(&cfg);
    const char *meta[] = {"config", json ? json : "{}", "seed", NULL, NULL};
    char seedbuf[32];
    snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)seed);
    meta[3] = seedbuf;
    rc = st_save(trk, path, e, k, meta);
out:
    free(json);
    free(e);
    free(nm.v);
    if (zero_grads)
        for (int i = 0; i < np; i++) tn_release(zero_grads[i]);
    free(zero_grads);
    if (params) {
        opt_free_grads(params, np);
        vm_list_free(tft_varmap_borrow(m), params);
    }
    ag_ctx_free(ctx);
    tft_batch_fini(&b);
    if (m) tft_free(m);
    data_free(ds);
    return rc;
}
