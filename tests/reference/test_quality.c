/* test_quality.c — the numbers a training session must reach on the `tiny` preset, through the
 * trainer's public API on synthetic data:
 *   - the trained FP32 model's validation pinball loss beats the seasonal-naive forecast's
 *     over the same validation windows (data_seasonal_naive + data_pinball);
 *   - post-training quantisation (tr_finalize_int8_training: calibrate, int8 weights and
 *     activations, int8 × int8 → int32 linears) keeps the validation loss within 5 % of FP32;
 *   - quantisation-aware fine-tuning (tr_finalize_qat_training) keeps it within 3 % of the
 *     FP32 model it started from, and within 1 % of its own fine-tuned weights run in f32.
 * The figures are printed; the fixture checks that the whole session leaves 0 live bytes.
 * Sized to run in well under a minute on two shared cores.
 */
#include <math.h>
#include <stdio.h>

#include "lg_test.h"
#include "trainer.h"

TestSuite(quality, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 240);

/* The session. At the preset's lr of 1e-3 Adam leaves the tiny model's validation loss
 * wandering by ±4 % from one stretch of 60 steps to the next, which would swamp the 3 % QAT
 * bound with training noise (QAT fine-tunes with the session's optimizer and lr); at 3e-4 and
 * more steps the model is better trained and QAT's fine-tuning moves it by ~1 %. */
enum {
    STEPS = 5000, /* FP32 training steps (~10 s on one idle core) */
    BATCH = 32,
    CALIB_BATCHES = 8, /* PTQ calibration */
    QAT_STEPS = 60,    /* QAT fine-tuning steps */
};
static const double LR = 3e-4;

/* The seasonal-naive baseline's pinball loss over the validation windows tr_validate uses:
 * the fixed list from its start, `nb` batches of B, weighted by batch size. */
static double seasonal_naive_loss(struct data_set *ds, const struct tft_config *cfg, int B,
                                  int64_t nb)
{
    struct data_cursor cur;
    data_cursor_init(&cur, 0);
    double sum = 0;
    int64_t weight = 0;
    for (int64_t k = 0; k < nb; k++) {
        struct tft_batch b = {0};
        cr_assert_eq(data_batch(ds, DATA_VAL, B, &cur, &b), LG_OK, "%s", lg_errmsg());
        struct tn_tensor *naive = data_seasonal_naive(T, cfg, &b, data_season(ds));
        cr_assert_not_null(naive, "%s", lg_errmsg());
        sum += data_pinball(cfg, naive, b.y) * b.B;
        weight += b.B;
        tn_release(naive);
        tft_batch_fini(&b);
    }
    return sum / (double)weight;
}

Test(quality, tiny_beats_seasonal_naive_and_int8_keeps_its_loss)
{
    struct tft_config cfg;
    cr_assert_eq(tft_config_preset(&cfg, "tiny"), LG_OK, "%s", lg_errmsg());
    struct tft_model *model = NULL;
    struct data_set *ds = NULL;
    struct tr_trainer *tr = NULL;
    cr_assert_eq(tft_new(&model, T, &cfg, 42), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(data_synth_new(&ds, T, &cfg, &(struct data_synth_options){.seed = 7}), LG_OK, "%s",
                 lg_errmsg());
    int64_t val_batches = data_n_batches(ds, DATA_VAL, BATCH); /* every validation window */
    cr_assert(val_batches > 0);
    struct tr_options opt = {.steps = STEPS,
                             .batch = BATCH,
                             .lr = LR,
                             .seed = 3,
                             .val_batches = (int)val_batches,
                             .calib_batches = CALIB_BATCHES,
                             .qat_steps = QAT_STEPS};
    cr_assert_eq(tr_new(&tr, model, ds, &opt), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(tr_initialize_optimizer(tr), LG_OK, "%s", lg_errmsg());

    double t0 = lg_now(), fp32 = NAN;
    struct tr_train_stats ts;
    cr_assert_eq(tr_train(tr, &ts), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(tr_validate(tr, &fp32), LG_OK, "%s", lg_errmsg());
    double naive = seasonal_naive_loss(ds, &cfg, BATCH, val_batches);
    printf("tiny, %d steps of %d (%.1f s): training loss %.4f -> %.4f; validation pinball loss "
           "%.4f, seasonal naive %.4f (%lld windows)\n",
           ts.steps, BATCH, ts.seconds, ts.first_loss, ts.last_loss, fp32, naive,
           (long long)data_n_windows(ds, DATA_VAL));
    cr_assert(isfinite(fp32) && fp32 < naive,
              "the trained model (%.4f) must beat the seasonal-naive forecast (%.4f)", fp32, naive);

    struct tr_quant_stats ptq;
    cr_assert_eq(tr_finalize_int8_training(tr, &ptq), LG_OK, "%s", lg_errmsg());
    double ptq_rel = (ptq.quant_val_loss - ptq.fp32_val_loss) / ptq.fp32_val_loss;
    printf("PTQ (%d calibration batches): %d int8 layers, %lld bytes; validation loss %.4f vs "
           "FP32 %.4f (%+.2f %%)\n",
           CALIB_BATCHES, ptq.layers, (long long)ptq.int8_bytes, ptq.quant_val_loss,
           ptq.fp32_val_loss, 100 * ptq_rel);
    cr_assert_eq(ptq.fp32_val_loss, fp32, "finalisation starts from the trained model");
    cr_assert(ptq.layers > 0 && ptq.int8_bytes > 0);
    cr_assert_neq(ptq.quant_val_loss, ptq.fp32_val_loss, "the int8 model really ran (not f32)");
    cr_assert(fabs(ptq_rel) <= 0.05, "PTQ validation loss %.4f is not within 5 %% of FP32 %.4f",
              ptq.quant_val_loss, ptq.fp32_val_loss);

    struct tr_quant_stats qat;
    cr_assert_eq(tr_finalize_qat_training(tr, &qat), LG_OK, "%s", lg_errmsg());
    double qat_rel = (qat.quant_val_loss - qat.fp32_val_loss) / qat.fp32_val_loss;
    printf("QAT (%d fine-tuning steps): %d int8 layers; validation loss %.4f vs FP32 %.4f "
           "(%+.2f %%); total %.1f s\n",
           QAT_STEPS, qat.layers, qat.quant_val_loss, qat.fp32_val_loss, 100 * qat_rel,
           lg_now() - t0);
    /* the QAT weights evaluated in f32 (the hook is detached again): what fine-tuning alone
     * did, against what the int8 conversion of those weights costs */
    double tuned = NAN;
    cr_assert_eq(tr_validate(tr, &tuned), LG_OK, "%s", lg_errmsg());
    printf("    the QAT-tuned weights in f32: %.4f; their int8 model %+.2f %% from that\n", tuned,
           100 * (qat.quant_val_loss - tuned) / tuned);
    cr_assert_eq(qat.layers, ptq.layers);
    cr_assert(fabs(qat.quant_val_loss - tuned) <= 0.01 * tuned,
              "QAT int8 %.4f is not within 1 %% "
              "of the same weights in f32 (%.4f)",
              qat.quant_val_loss, tuned);
    cr_assert_neq(qat.quant_val_loss, qat.fp32_val_loss, "the int8 model really ran (not f32)");
    cr_assert(fabs(qat_rel) <= 0.03, "QAT validation loss %.4f is not within 3 %% of FP32 %.4f",
              qat.quant_val_loss, qat.fp32_val_loss);
    cr_assert(qat.quant_val_loss < naive,
              "the QAT int8 model (%.4f) still beats seasonal naive "
              "(%.4f)",
              qat.quant_val_loss, naive);

    tr_free(tr);
    tft_free(model);
    data_free(ds);
}
