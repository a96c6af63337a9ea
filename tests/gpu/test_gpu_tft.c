/* test_gpu_tft.c — the whole TFT on the device against the host: one batch of `tiny` forward
 * and back after moving the host-built model to the device, outputs to 1e-5 and every parameter
 * gradient to 1e-4 (FP32, no TF32), and a batch of 8 of electricity to 1e-4 and 1e-3; a full
 * training session on the device (train, validate, checkpoint, free) that leaves nothing
 * behind and follows the host session's losses, INT8 and QAT finalisation included (they
 * bring the model and the optimizer state back to the host, where int8 runs). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_test.h"
#include "trainer.h"

TestSuite(gpu_tft, .init = lg_test_setup, .fini = lg_gpu_teardown, .timeout = 300);

/* Host copies of what one forward and backward pass produced. */
struct pass {
    struct tn_tensor *yhat, *loss;
    struct tn_tensor **grads; /* per parameter in name order; NULL where none */
    int n;
};

static struct tn_tensor *host_copy(const struct tn_tensor *t)
{
    struct tn_tensor *h = t->device == TN_CPU ? tn_clone(t, "data/copy") : tn_to_device(t, TN_CPU);
    cr_assert_not_null(h, "%s", lg_errmsg());
    return h;
}

static struct pass run_pass(struct tft_model *m, struct tft_batch *b, enum tn_device dev)
{
    struct pass p = {0};
    struct ag_ctx *ctx =
        ag_ctx_new(T, &(struct ag_options){.training = false, .seed = 3, .device = dev});
    cr_assert_not_null(ctx);
    struct tn_tensor *yhat = tft_forward(m, ctx, b);
    struct tn_tensor *loss = yhat ? tft_loss(m, ctx, yhat, b) : NULL;
    cr_assert_not_null(loss, "%s", ag_errmsg(ctx));
    cr_assert_eq(yhat->device, dev);
    cr_assert_eq(ag_backward(ctx, loss), LG_OK, "%s", ag_errmsg(ctx));
    p.yhat = host_copy(yhat);
    p.loss = host_copy(loss);
    struct tn_tensor **params = NULL;
    cr_assert_eq(vm_all_vars(tft_varmap_borrow(m), &params, &p.n), LG_OK);
    p.grads = trk_calloc(T, (size_t)p.n * sizeof *p.grads, "data/grads");
    for (int i = 0; i < p.n; i++) p.grads[i] = params[i]->grad ? host_copy(params[i]->grad) : NULL;
    opt_free_grads(params, p.n);
    vm_list_free(tft_varmap_borrow(m), params);
    ag_ctx_free(ctx);
    return p;
}

static void pass_free(struct pass *p)
{
    tn_release(p->yhat);
    tn_release(p->loss);
    for (int i = 0; i < p->n; i++) tn_release(p->grads[i]);
    trk_free(T, p->grads);
}

/* Outputs within out_tol and gradients within grad_tol (normwise relative error). */
static void agreement(const char *preset, int batch, double out_tol, double grad_tol)
{
    struct tft_config cfg;
    struct data_set *ds = NULL;
    struct tft_model *m = NULL;
    cr_assert_eq(tft_config_preset(&cfg, preset), LG_OK);
    cr_assert_eq(data_synth_new(&ds, T, &cfg, &(struct data_synth_options){.seed = 1}), LG_OK, "%s",
                 lg_errmsg());
    cr_assert_eq(tft_new(&m, T, &cfg, 1), LG_OK, "%s", lg_errmsg());
    struct data_cursor cur;
    data_cursor_init(&cur, 1);
    struct tft_batch b = {0};
    cr_assert_eq(data_batch(ds, DATA_TRAIN, batch ? batch : cfg.batch, &cur, &b), LG_OK);

    struct pass cpu = run_pass(m, &b, TN_CPU);
    cr_assert_eq(tft_to_device(m, TN_CUDA), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(tft_batch_to_device(&b, TN_CUDA), LG_OK, "%s", lg_errmsg());
    struct vm_varmap *vm = tft_varmap_borrow(m);
    for (int i = 0; i < vm_count(vm); i++) cr_assert_eq(vm_at(vm, i)->device, TN_CUDA);
    struct pass gpu = run_pass(m, &b, TN_CUDA);

    char what[LG_MAX_NAME + 32];
    snprintf(what, sizeof what, "%s yhat", preset);
    lg_gpu_expect_close(tn_f32(gpu.yhat), tn_f32(cpu.yhat), tn_numel(cpu.yhat), out_tol, what);
    snprintf(what, sizeof what, "%s loss", preset);
    lg_gpu_expect_close(tn_f32(gpu.loss), tn_f32(cpu.loss), 1, out_tol, what);
    cr_assert_eq(gpu.n, cpu.n);
    int compared = 0;
    for (int i = 0; i < cpu.n; i++) {
        cr_expect_eq(!cpu.grads[i], !gpu.grads[i], "%s: a gradient on one device only",
                     vm_at(vm, i)->name);
        if (!cpu.grads[i] || !gpu.grads[i]) continue;
        snprintf(what, sizeof what, "grad %s", tn_basename(vm_at(vm, i)));
        lg_gpu_expect_close(tn_f32(gpu.grads[i]), tn_f32(cpu.grads[i]), tn_numel(cpu.grads[i]),
                            grad_tol, what);
        compared++;
    }
    cr_expect_gt(compared, cpu.n / 2, "most parameters get a gradient (%d of %d)", compared, cpu.n);
    pass_free(&cpu);
    pass_free(&gpu);
    tft_batch_fini(&b);
    tft_free(m);
    data_free(ds);
}

Test(gpu_tft, tiny_forward_and_backward_agree_with_the_host)
{
    lg_gpu_begin();
    agreement("tiny", 0, 1e-5, 1e-4); /* the bound: FP32 without TF32 */
}

Test(gpu_tft, electricity_batch_of_8_agrees_with_the_host)
{
    lg_gpu_begin();
    /* 168 recurrent steps and 160-wide sums: looser, still far below any real error */
    agreement("electricity", 8, 1e-4, 1e-3);
}

/* A short session with INT8 and QAT finalisation; returns its stats and validation loss. */
static void session(struct data_set *ds, const struct tft_config *cfg, enum tn_device dev,
                    struct tr_train_stats *ts, double *val, struct tr_quant_stats *q8,
                    struct tr_quant_stats *qat)
{
    struct tft_model *m = NULL;
    struct tr_trainer *tr = NULL;
    cr_assert_eq(tft_new(&m, T, cfg, 11), LG_OK, "%s", lg_errmsg());
    struct tr_options o = {.steps = 3, .seed = 5, .val_batches = 2, .device = dev};
    cr_assert_eq(tr_new(&tr, m, ds, &o), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(tr_initialize_optimizer(tr), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(tr_train(tr, ts), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(tr_validate(tr, val), LG_OK, "%s", lg_errmsg());
    char path[600];
    snprintf(path, sizeof path, "%s/ckpt-%d.safetensors", lg_test_tmpdir(), (int)dev);
    cr_assert_eq(tr_save_checkpoint(tr, path), LG_OK, "%s", lg_errmsg()); /* verified on reread */
    struct vm_varmap *vm = tft_varmap_borrow(m);
    if (dev == TN_CUDA) {
        struct trk_totals d;
        trk_totals(T, TRK_DEVICE, &d);
        cr_expect_gt(d.live_bytes, 4 * (int64_t)vm_bytes(vm) - 1,
                     "parameters, gradients and both moments live on the device");
        cr_expect_eq(vm_at(vm, 0)->device, TN_CUDA);
    }
    /* INT8 runs on the host: a device session moves its model and optimizer state there */
    cr_assert_eq(tr_finalize_int8_training(tr, q8), LG_OK, "%s", lg_errmsg());
    cr_expect_eq(vm_at(vm, 0)->device, TN_CPU, "the model came back to the host");
    if (dev == TN_CUDA) {
        struct trk_totals d;
        trk_totals(T, TRK_DEVICE, &d);
        cr_expect_lt(d.live_bytes, (int64_t)vm_bytes(vm), "its device memory went with it");
    }
    cr_assert_eq(tr_finalize_qat_training(tr, qat), LG_OK, "%s", lg_errmsg());
    tr_free(tr);
    tft_free(m);
}

Test(gpu_tft, a_training_session_on_the_device_follows_the_host_and_leaves_nothing)
{
    lg_gpu_begin();
    struct tft_config cfg;
    struct data_set *ds = NULL;
    cr_assert_eq(tft_config_preset(&cfg, "tiny"), LG_OK);
    cr_assert_eq(data_synth_new(&ds, T, &cfg, &(struct data_synth_options){.seed = 2}), LG_OK);
    struct trk_totals before, after;
    trk_totals(T, TRK_DEVICE, &before);
    struct tr_train_stats tc, tg;
    struct tr_quant_stats q8c, q8g, qatc, qatg;
    double vc, vg;
    trk_session_begin(T);
    session(ds, &cfg, TN_CPU, &tc, &vc, &q8c, &qatc);
    session(ds, &cfg, TN_CUDA, &tg, &vg, &q8g, &qatg);
    struct trk_leaks *lk = NULL;
    int rc = trk_session_end(T, &lk);
    if (rc != LG_OK) trk_leaks_print(lk, stderr, 10);
    cr_expect_eq(rc, LG_OK, "the sessions leave nothing tagged behind, on either device");
    trk_leaks_free(lk);
    trk_totals(T, TRK_DEVICE, &after);
    cr_expect_eq(after.live_bytes, before.live_bytes, "device bytes back to the workspace alone");
    cr_expect(fabs(tg.first_loss - tc.first_loss) <= 1e-5 * fabs(tc.first_loss),
              "first loss %.9g vs %.9g", tg.first_loss, tc.first_loss);
    cr_expect(fabs(tg.last_loss - tc.last_loss) <= 1e-3 * fabs(tc.last_loss),
              "last loss %.9g vs %.9g", tg.last_loss, tc.last_loss);
    cr_expect(fabs(vg - vc) <= 1e-3 * fabs(vc), "validation %.9g vs %.9g", vg, vc);
    /* int8 rounding can flip on 1e-6 differences in the weights: a loose bound */
    cr_expect(fabs(q8g.quant_val_loss - q8c.quant_val_loss) <= 1e-2 * fabs(q8c.quant_val_loss),
              "int8 validation %.9g vs %.9g", q8g.quant_val_loss, q8c.quant_val_loss);
    cr_expect(isfinite(qatg.quant_val_loss), "QAT after a device session: %g", qatg.quant_val_loss);
    data_free(ds);
}
