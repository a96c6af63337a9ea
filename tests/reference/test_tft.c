/* test_tft.c — the whole TFT: exact parameter counts and bytes of every preset (the counts are
 * pinned: the VarMap as built, tft_config_param_count's count from the sizes alone, and
 * tests/bench/tft_torch.py's PyTorch construction all give them; bytes are 4 a parameter), the
 * parameter names and shapes of model/tft/tft.c, gradients of the whole model against finite
 * differences on `tiny`, save → load → bitwise-identical outputs, the debug-state export, and
 * the model interface's ownership (get_varmap hands out references the ledger tracks). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "debug_state.h"
#include "lg_test.h"
#include "safetensors.h"
#include "tft.h"

TestSuite(tft, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 300);

static struct tft_model *build(const char *preset, uint64_t seed, struct tft_config *cfg)
{
    cr_assert_eq(tft_config_preset(cfg, preset), LG_OK, "%s", lg_errmsg());
    struct tft_model *m = NULL;
    cr_assert_eq(tft_new(&m, T, cfg, seed), LG_OK, "%s", lg_errmsg());
    return m;
}

/* A synthetic data set for cfg (seed `seed`) and a batch of B windows of `split`, drawn with
 * cursor seed `cursor`; freed with data_free and tft_batch_fini. */
static struct data_set *synth_batch(const struct tft_config *cfg, uint64_t seed,
                                    enum data_split split, int B, uint64_t cursor,
                                    struct tft_batch *b)
{
    struct data_set *ds = NULL;
    cr_assert_eq(data_synth_new(&ds, T, cfg, &(struct data_synth_options){.seed = seed}), LG_OK,
                 "%s", lg_errmsg());
    struct data_cursor cur;
    data_cursor_init(&cur, cursor);
    *b = (struct tft_batch){0};
    cr_assert_eq(data_batch(ds, split, B, &cur, b), LG_OK, "%s", lg_errmsg());
    return ds;
}

static void check_counts(const char *preset, int64_t params, int64_t bytes)
{
    struct tft_config cfg;
    struct tft_model *m = build(preset, 1, &cfg);
    struct vm_varmap *vm = tft_varmap_borrow(m);
    cr_expect_eq(vm_param_count(vm), params, "%s: %lld parameters", preset,
                 (long long)vm_param_count(vm));
    cr_expect_eq((int64_t)vm_bytes(vm), bytes, "%s: %zu bytes", preset, vm_bytes(vm));
    cr_expect_eq(tft_config_param_count(&cfg), params, "the count from sizes alone agrees");
    /* every parameter is tagged varmap/<name>, and the tagged bytes are exactly the map */
    struct trk_tag_stat *st = NULL;
    size_t n = trk_tag_stats(T, &st);
    int64_t tagged = 0;
    for (size_t i = 0; i < n; i++)
        if (!strncmp(st[i].tag, "varmap/", 7)) tagged += st[i].live_bytes;
    free(st);
    cr_expect_eq(tagged, bytes, "%s: varmap/ tags hold %lld bytes", preset, (long long)tagged);
    tft_free(m);
}

Test(tft, exact_parameter_counts_tiny_and_electricity)
{
    check_counts("tiny", 27211, 108844);
    check_counts("electricity", 2453798, 9815192);
}

Test(tft, exact_parameter_count_foxhunt_815, .timeout = 600)
{
    check_counts("foxhunt-815", 213659796, 854639184); /* 815.05 MiB */
}

Test(tft, spec_names_and_shapes)
{
    struct tft_config cfg;
    struct tft_model *m = build("tiny", 1, &cfg);
    struct vm_varmap *vm = tft_varmap_borrow(m);
    static const struct {
        const char *name;
        int ndim;
        int64_t s0, s1;
    } want[] = {
        {"emb.cat.series.weight", 2, 10, 16},
        {"emb.real.scale.weight", 2, 16, 1},
        {"emb.real.scale.bias", 1, 16, 1},
        {"emb.cat.dow.weight", 2, 7, 16},
        {"static_vsn.flat_grn.fc1.weight", 2, 16, 32},
        {"static_vsn.flat_grn.skip.weight", 2, 2, 32},
        {"static_vsn.flat_grn.glu.fc.weight", 2, 4, 16},
        {"enc_vsn.flat_grn.ctx.weight", 2, 16, 16},
        {"enc_vsn.flat_grn.fc1.weight", 2, 16, 64},
        {"dec_vsn.var_grn.time.fc2.weight", 2, 16, 16},
        {"static_enc.ch.norm.weight", 1, 16, 1},
        {"lstm_enc.weight_ih_l0", 2, 64, 16},
        {"lstm_dec.bias_hh_l0", 1, 64, 1},
        {"post_lstm.glu.fc.weight", 2, 32, 16},
        {"enrich.ctx.weight", 2, 16, 16},
        {"attn.q.weight", 2, 16, 16},
        {"attn.v.weight", 2, 4, 16},
        {"attn.out.weight", 2, 16, 4},
        {"post_attn.norm.bias", 1, 16, 1},
        {"pos_ff.fc1.weight", 2, 16, 16},
        {"pre_out.glu.fc.bias", 1, 32, 1},
        {"out.weight", 2, 3, 16},
        {"out.bias", 1, 3, 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct tn_tensor *p = vm_find(vm, want[i].name);
        cr_expect_not_null(p, "%s exists", want[i].name);
        if (!p) continue;
        cr_expect_eq(p->ndim, want[i].ndim, "%s ndim", want[i].name);
        cr_expect_eq(p->ne[0], want[i].s0, "%s dim 0", want[i].name);
        if (want[i].ndim == 2) cr_expect_eq(p->ne[1], want[i].s1, "%s dim 1", want[i].name);
    }
    cr_expect_null(vm_find(vm, "enc_vsn.var_grn.dow.skip.weight"), "no skip when d_in == d_out");
    cr_expect_null(vm_find(vm, "static_vsn.flat_grn.ctx.weight"), "the static VSN has no context");
    cr_expect_null(vm_find(vm, "attn.q.bias"), "attention has no biases");
    /* init per spec: LayerNorm weight 1, bias 0; Linear bias 0 */
    float *w = tn_f32(vm_find(vm, "pos_ff.norm.weight")), *b = tn_f32(vm_find(vm, "out.bias"));
    for (int i = 0; i < 16; i++) cr_expect_eq(w[i], 1.0f);
    for (int i = 0; i < 3; i++) cr_expect_eq(b[i], 0.0f);
    tft_free(m);
}

/* L = Σ yhat ⊙ r in double: a smooth function of every parameter (the pinball loss has kinks
 * that central differences would straddle). Dropout off. */
static double projected(struct tft_model *m, struct ag_ctx *ctx, const struct tft_batch *b,
                        const float *r)
{
    bool g = ag_set_grad_enabled(ctx, false);
    struct tn_tensor *y = tft_forward(m, ctx, b);
    cr_assert_not_null(y, "%s", ag_errmsg(ctx));
    double s = 0;
    for (int64_t i = 0; i < tn_numel(y); i++) s += (double)tn_f32(y)[i] * r[i];
    ag_ctx_reset(ctx);
    ag_set_grad_enabled(ctx, g);
    return s;
}

Test(tft, whole_model_gradients_match_finite_differences)
{
    struct tft_config cfg;
    struct tft_model *m = build("tiny", 3, &cfg);
    struct tft_batch b;
    struct data_set *ds = synth_batch(&cfg, 3, DATA_TRAIN, 4, 5, &b);
    struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){.training = false});
    struct tn_rng rng;
    tn_rng_seed(&rng, 11);
    int64_t ny = (int64_t)b.B * cfg.T_dec * cfg.n_quantiles;
    struct tn_tensor *r = tn_new_f32(T, "test/r", 3, (int64_t[]){b.B, cfg.T_dec, cfg.n_quantiles});
    tn_fill_uniform(r, &rng, -1, 1);
    cr_assert_eq(tn_numel(r), ny);

    /* analytic gradients */
    struct tn_tensor *y = tft_forward(m, ctx, &b);
    struct tn_tensor *l = ag_sum_all(ctx, ag_mul(ctx, y, r));
    cr_assert_not_null(l, "%s", ag_errmsg(ctx));
    cr_assert_eq(ag_backward(ctx, l), LG_OK, "%s", ag_errmsg(ctx));
    ag_ctx_reset(ctx);

    struct tn_tensor **ps = NULL;
    int np = 0;
    cr_assert_eq(vm_all_vars(tft_varmap_borrow(m), &ps, &np), LG_OK);
    int checked = 0, bad = 0;
    double worst = 0;
    for (int i = 0; i < np; i++) {
        struct tn_tensor *p = ps[i];
        cr_assert_not_null(p->grad, "%s got a gradient", p->name);
        /* three entries of every parameter tensor (all of a small one) */
        int64_t n = tn_numel(p);
        for (int k = 0; k < 3 && k < n; k++) {
            int64_t j = (int64_t)(tn_rng_next(&rng) % (uint64_t)n);
            /* several steps: the larger rides over float rounding, the smaller over curvature
             * (a layer norm over the decoder VSN's 2 weights is nearly a step function of their
             * difference); a wrong gradient disagrees with all of them */
            float *v = &tn_f32(p)[j], save = *v;
            double g = tn_f32(p->grad)[j], err = INFINITY, fd = 0;
            static const float steps[] = {1e-2f, 2e-3f, 5e-4f};
            for (int si = 0; si < 3 && err > 2e-2; si++) {
                const float h = steps[si];
                *v = save + h;
                double lp = projected(m, ctx, &b, tn_f32(r));
                *v = save - h;
                double lm = projected(m, ctx, &b, tn_f32(r));
                *v = save;
                double d = (lp - lm) / (2.0 * h);
                double e = fabs(d - g) / fmax(fmax(fabs(d), fabs(g)), 5e-2);
                if (e < err) err = e, fd = d;
            }
            if (err > worst) worst = err;
            if (err > 2e-2) {
                bad++;
                cr_log_error("%s[%lld]: analytic %.6g, finite difference %.6g (rel %.3g)", p->name,
                             (long long)j, g, fd, err);
            }
            checked++;
        }
    }
    cr_log_info("checked %d entries of %d parameter tensors, worst relative error %.3g", checked,
                np, worst);
    cr_expect_eq(bad, 0, "%d of %d finite-difference checks failed", bad, checked);
    opt_free_grads(ps, np);
    vm_list_free(tft_varmap_borrow(m), ps);
    tn_release(r);
    ag_ctx_free(ctx);
    tft_batch_fini(&b);
    data_free(ds);
    tft_free(m);
}

static void save_load_identical(const char *preset)
{
    struct tft_config cfg;
    struct tft_model *a = build(preset, 7, &cfg), *b = NULL;
    struct tft_batch batch;
    struct data_set *ds = synth_batch(&cfg, 7, DATA_VAL, 4, 1, &batch);
    char path[512], *json = tft_config_to_json(&cfg), *back = NULL;
    snprintf(path, sizeof path, "%s/%s.safetensors", lg_test_tmpdir(), preset);
    cr_assert_eq(vm_save(tft_varmap_borrow(a), path, json), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(tft_new(&b, T, &cfg, 99), LG_OK); /* other seed: other values until loaded */
    cr_assert_eq(vm_load(tft_varmap_borrow(b), path, &back), LG_OK, "%s", lg_errmsg());
    struct tft_config cfg2;
    cr_assert_eq(tft_config_from_json(&cfg2, back, path), LG_OK, "%s", lg_errmsg());
    cr_expect_eq(tft_config_param_count(&cfg2), tft_config_param_count(&cfg), "config round trip");
    struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){.training = false});
    ag_set_grad_enabled(ctx, false);
    struct tn_tensor *ya = tft_forward(a, ctx, &batch), *yb = tft_forward(b, ctx, &batch);
    cr_assert(ya && yb, "%s", ag_errmsg(ctx));
    cr_expect_eq(memcmp(tn_data(ya), tn_data(yb), tn_nbytes(ya)), 0,
                 "%s: outputs bitwise identical", preset);
    ag_ctx_free(ctx);
    free(json);
    free(back);
    tft_batch_fini(&batch);
    data_free(ds);
    tft_free(a);
    tft_free(b);
}

Test(tft, save_load_gives_bitwise_identical_outputs)
{
    save_load_identical("tiny");
    save_load_identical("electricity");
}

Test(tft, foxhunt_815_saves_and_loads, .timeout = 900)
{
    struct tft_config cfg;
    struct tft_model *a = build("foxhunt-815", 2, &cfg), *b = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/fox.safetensors", lg_test_tmpdir());
    cr_assert_eq(vm_save(tft_varmap_borrow(a), path, NULL), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(tft_new(&b, T, &cfg, 3), LG_OK);
    cr_assert_eq(vm_load(tft_varmap_borrow(b), path, NULL), LG_OK, "%s", lg_errmsg());
    struct tn_tensor *pa = vm_find(tft_varmap_borrow(a), "enc_vsn.flat_grn.fc1.weight");
    struct tn_tensor *pb = vm_find(tft_varmap_borrow(b), "enc_vsn.flat_grn.fc1.weight");
    cr_expect_eq(memcmp(tn_data(pa), tn_data(pb), tn_nbytes(pa)), 0,
                 "the largest tensor round-trips");
    tft_free(a);
    tft_free(b);
}

Test(tft, bad_inputs_are_errors_not_crashes)
{
    struct tft_config cfg;
    struct tft_model *m = build("tiny", 1, &cfg);
    struct tft_batch b;
    struct data_set *ds = synth_batch(&cfg, 1, DATA_TRAIN, 2, 1, &b);
    struct ag_ctx *ctx = ag_ctx_new(T, &(struct ag_options){0});
    struct tn_tensor *saved = b.x[0];
    b.x[0] = b.x[2]; /* a real [B, T_enc] where the categorical static [B] belongs */
    cr_expect_null(tft_forward(m, ctx, &b));
    cr_expect(strstr(ag_errmsg(ctx), "input series") != NULL, "%s", ag_errmsg(ctx));
    b.x[0] = saved;
    ag_ctx_reset(ctx);
    int32_t *idx = tn_i32(b.x[0]);
    int32_t old = idx[0];
    idx[0] = 10; /* cardinality 10: out of range */
    cr_expect_null(tft_forward(m, ctx, &b));
    cr_expect_neq(ag_error(ctx), LG_OK);
    idx[0] = old;
    ag_ctx_free(ctx);
    tft_batch_fini(&b);
    data_free(ds);
    tft_free(m);
}

Test(tft, get_varmap_references_are_tracked)
{
    struct tft_config cfg;
    trk_session_begin(T);
    struct tft_model *m = build("tiny", 1, &cfg);
    int holder;
    struct vm_varmap *vm = m->vt->get_varmap(m, &holder, TRK_HERE);
    cr_expect_eq(vm_refs(vm), 2);
    tft_free(m); /* the model lets go; our reference keeps the map alive */
    cr_expect_eq(vm_refs(vm), 1);
    struct trk_leaks *lk = NULL;
    cr_expect_eq(trk_session_end(T, &lk), LG_EBUSY);
    cr_expect_eq(lk->n_refs, 1);
    cr_expect(strstr(lk->refs[0].retains[0].site, "test_tft.c") != NULL, "%s",
              lk->refs[0].retains[0].site);
    trk_leaks_free(lk);
    vm_release(vm, &holder, TRK_HERE);
}

Test(tft, debug_state_export)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tiny.debug.safetensors", lg_test_tmpdir());
    cr_assert_eq(tr_debug_state(T, "tiny", 1, 0, TN_CPU, path), LG_OK, "%s", lg_errmsg());
    struct st_file *f = NULL;
    cr_assert_eq(st_open(&f, T, path), LG_OK, "%s", lg_errmsg());
    static const char *names[] = {"out.weight",   "grad.out.weight", "grad.emb.cat.series.weight",
                                  "input.series", "input.target",    "input.dow",
                                  "input.y",      "output.yhat",     "output.loss"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        cr_expect_geq(st_find(f, names[i]), 0, "%s in the debug state", names[i]);
    const struct st_info *in = st_info(f, st_find(f, "input.series"));
    cr_expect_eq(in->dtype, TN_I32, "categorical inputs are I32");
    const struct st_info *yh = st_info(f, st_find(f, "output.yhat"));
    cr_expect(yh->ndim == 3 && yh->shape[1] == 4 && yh->shape[2] == 3, "yhat [B, T_dec, Q]");
    cr_expect_not_null(st_meta(f, "config"));
    /* 181 parameters and 181 gradients, 6 inputs, y, yhat, loss */
    cr_expect_eq(st_count(f), 2 * 181 + 6 + 3);
    st_close(f);
}
