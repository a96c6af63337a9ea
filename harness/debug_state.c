/* debug_state.c — `leakgate debug-state --preset P --seed S -o F`: one batch of a preset at a
 * seed, as spec/TFT.md's "Debug state" defines it: every parameter under its own name, the
 * inputs (input.<var>, input.y), the output (output.yhat, output.loss) and every parameter's
 * gradient (grad.<name>), dropout off. Any implementation of the spec can check itself
 * against this file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hx_impl.h"
#include "safetensors.h"

struct names {
    char (*v)[LG_MAX_NAME + 16];
    int n;
};

int hx_debug_state(struct trk_tracker *trk, const char *preset, uint64_t seed, int batch,
                   const char *path)
{
    return hx_debug_state_on(trk, preset, seed, batch, TN_CPU, path);
}

/* Computes the debug state of a preset on device dev into path with tracker trk. */
int hx_debug_state_on(struct trk_tracker *trk, const char *preset, uint64_t seed, int batch,
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
    struct tn_tensor *yhat = m->vt->forward(m, ctx, &b);
    struct tn_tensor *loss = yhat ? tft_loss(m, ctx, yhat, &b) : NULL;
    if (!loss || ag_backward(ctx, loss) != LG_OK) {
        rc = lg_fail(ag_error(ctx) ? ag_error(ctx) : LG_EINTERNAL, "debug-state: %s", ag_errmsg(ctx));
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
            g = zero_grads[i] = tn_zeros(trk, TN_F32, TN_CPU, params[i]->ndim, params[i]->ne, "grad/zero");
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
    if (m) m->vt->free(m);
    data_free(ds);
    return rc;
}

int hx_cmd_debug_state(int argc, char **argv)
{
    const char *preset = "tiny", *out = NULL;
    enum tn_device dev = TN_CPU;
    uint64_t seed = 1;
    int batch = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: leakgate debug-state [--preset P] [--seed S] [--batch B] [--device cpu|cuda] -o FILE\n"
                   "Writes one batch's parameters, inputs, output, loss and gradients (dropout off)\n"
                   "as safetensors, for numerical cross-checks (spec/TFT.md, \"Debug state\").\n");
            return 0;
        }
        if (!v || a[0] != '-') {
            fprintf(stderr, "leakgate debug-state: %s%s\n", a[0] == '-' ? "missing value for " : "unexpected argument ", a);
            return 2;
        }
        if (!strcmp(a, "--preset")) preset = v;
        else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            seed = strtoull(v, &end, 10);
            if (v[0] < '0' || v[0] > '9' || *end || errno) {
                fprintf(stderr, "leakgate debug-state: --seed: '%s' is not a non-negative integer\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--batch")) {
            if (hx_parse_int("--batch", v, 1, 1 << 20, &batch) != LG_OK) {
                fprintf(stderr, "leakgate debug-state: %s\n", lg_errmsg());
                return 2;
            }
        } else if (!strcmp(a, "--device")) {
            if (strcmp(v, "cpu") && strcmp(v, "cuda")) {
                fprintf(stderr, "leakgate debug-state: --device: '%s' is not cpu or cuda\n", v);
                return 2;
            }
            dev = strcmp(v, "cpu") ? TN_CUDA : TN_CPU;
        }
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
            if (!v[0]) {
                fprintf(stderr, "leakgate debug-state: %s: the path is empty\n", a);
                return 2;
            }
            out = v;
        }
        else {
            fprintf(stderr, "leakgate debug-state: unknown option '%s'\n", a);
            return 2;
        }
        i++;
    }
    if (!out) {
        fprintf(stderr, "leakgate debug-state: -o FILE is required\n");
        return 2;
    }
    struct trk_tracker *trk = NULL;
    if (trk_tracker_new(&trk, NULL) != LG_OK) {
        fprintf(stderr, "leakgate debug-state: %s\n", lg_errmsg());
        return 4;
    }
    int rc = hx_device_attach(trk, dev);
    if (rc == LG_OK) rc = hx_debug_state_on(trk, preset, seed, batch, dev, out);
    if (rc != LG_OK) fprintf(stderr, "leakgate debug-state: %s\n", lg_errmsg());
    else printf("debug state of %s (seed %llu) written to %s\n", preset, (unsigned long long)seed, out);
    hx_device_detach(trk);
    size_t left = trk_tracker_free(trk);
    if (left) fprintf(stderr, "leakgate debug-state: %zu allocation(s) left live (a leak)\n", left);
    return rc == LG_OK ? (left ? 4 : 0) : lg_exit_code(rc);
}
