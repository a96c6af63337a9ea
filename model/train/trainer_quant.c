/* trainer_quant.c — INT8 finalisation of a training session: post-training quantisation and
 * quantisation-aware fine-tuning, each ending with an evaluation of the int8 model. */
#include <math.h>

#include "int8.h"
#include "trainer_impl.h"

/* Post-training quantisation into *q: the calibration batches (training windows, dropout
 * off, no tape) run through the model while the calibration hook records input ranges, then
 * every linear layer is quantised with them. */
static int calibrate_and_quantize(struct tr_trainer *tr, struct q8_model **q)
{
    struct q8_calib *cal = NULL;
    int rc = q8_calib_new(&cal, tr->trk, tr->model);
    if (rc != LG_OK) return rc;
    struct data_cursor cur;
    data_cursor_init(&cur, tr->opt.seed ^ 0x63616C69ull);
    bool was_training = ag_training(tr->ctx), was_grad = ag_set_grad_enabled(tr->ctx, false);
    ag_set_training(tr->ctx, false);
    q8_calib_attach(cal, tr->model);
    for (int k = 0; k < tr->opt.calib_batches && rc == LG_OK; k++) {
        struct tft_batch b = {0};
        if ((rc = data_batch(tr->data, DATA_TRAIN, tr->opt.batch, &cur, &b))) break;
        if (!tft_forward(tr->model, tr->ctx, &b))
            rc = lg_fail(ag_error(tr->ctx), "int8 calibration: %s", ag_errmsg(tr->ctx));
        ag_ctx_reset(tr->ctx);
        tft_batch_fini(&b);
    }
    q8_calib_detach(cal, tr->model);
    ag_set_training(tr->ctx, was_training);
    ag_set_grad_enabled(tr->ctx, was_grad);
    if (rc == LG_OK) rc = q8_quantize(q, tr->model, cal);
    if (!tr->opt.faults.int8_calibration) q8_calib_free(cal); /* fault: statistics forgotten */
    return rc;
}

/* Quantisation-aware training into *q: the model fine-tuned through the QAT hook, at a tenth
 * of the training rate (at the full rate a few dozen QAT steps move the validation loss by
 * several percent either way, measured on tiny, which is the model changing, not
 * quantisation), then converted with the observers' ranges. */
static int fine_tune_and_convert(struct tr_trainer *tr, struct q8_model **q)
{
    struct q8_qat *qat = NULL;
    int rc = q8_qat_new(&qat, tr->trk, tr->model);
    if (rc != LG_OK) return rc;
    q8_qat_attach(qat, tr->model);
    int steps = tr->opt.steps;
    tr->opt.steps = tr->opt.qat_steps;
    opt_adamw_set_lr(tr->opt_state, tr->opt.lr / 10);
    struct tr_train_stats ts;
    rc = tr_train(tr, &ts);
    opt_adamw_set_lr(tr->opt_state, tr->opt.lr);
    tr->opt.steps = steps;
    q8_qat_detach(qat, tr->model);
    if (rc == LG_OK) rc = q8_qat_convert(q, tr->model, qat);
    if (!tr->opt.faults.qat_observer) q8_qat_free(qat); /* fault: observers forgotten */
    return rc;
}

/* The INT8 path runs on the host (int8.h): a session on a device brings its model (with its
 * gradients) and its optimizer state there first, and carries on on the host; batches follow
 * tr->opt.device. */
static int to_host(struct tr_trainer *tr, const char *what)
{
    if (tr->opt.device == TN_CPU) return LG_OK;
    int rc = tft_to_device(tr->model, TN_CPU);
    if (rc == LG_OK && tr->opt_state) rc = opt_adamw_to_device(tr->opt_state, TN_CPU);
    if (rc != LG_OK) return lg_fail_ctx(rc, "%s on the host: ", what);
    tr->opt.device = TN_CPU;
    return LG_OK;
}

/* The frame both finalisations share: the model on the host (with an optimizer when
 * `optimizer`: QAT trains), its f32 validation loss, the int8 model made by make (one of the
 * two above), evaluated on the validation windows and freed; the figures handed back (st may
 * be NULL) and reported as `mode`. */
static int finalize(struct tr_trainer *tr, struct tr_quant_stats *st, const char *what,
                    const char *mode, bool optimizer,
                    int (*make)(struct tr_trainer *tr, struct q8_model **q))
{
    struct tr_quant_stats s = {.fp32_val_loss = NAN, .quant_val_loss = NAN};
    struct q8_model *q = NULL;
    int rc = to_host(tr, what);
    if (rc == LG_OK && optimizer && !tr->opt_state) rc = tr_initialize_optimizer(tr);
    if (rc == LG_OK) rc = tr_validate(tr, &s.fp32_val_loss);
    if (rc == LG_OK) rc = make(tr, &q);
    if (rc == LG_OK) {
        s.layers = q8_layers(q);
        s.int8_bytes = q8_bytes(q);
        q8_attach(q, tr->model);
        rc = tr_validate(tr, &s.quant_val_loss);
        q8_detach(q, tr->model);
        q8_free(q);
    }
    if (st) *st = s;
    if (tr->opt.progress) tr->opt.progress(tr->opt.progress_user, mode, -1, s.quant_val_loss);
    return rc;
}

int tr_finalize_int8_training(struct tr_trainer *tr, struct tr_quant_stats *st)
{
    return finalize(tr, st, "INT8 finalisation", "int8", false, calibrate_and_quantize);
}

int tr_finalize_qat_training(struct tr_trainer *tr, struct tr_quant_stats *st)
{
    return finalize(tr, st, "QAT", "qat", true, fine_tune_and_convert);
}
