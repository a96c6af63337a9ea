/* test_gpu_optim.c — AdamW and the gradient helpers on the device against the host: moments
 * allocated on the parameter's device with their tags, the same parameters after several
 * clipped steps, zeroed and freed gradients. */
#include <math.h>
#include <string.h>

#include "autograd.h"
#include "gpu_test.h"
#include "optim.h"

TestSuite(gpu_optim, .init = lg_test_setup, .fini = lg_gpu_teardown, .timeout = 120);

#define NP 3

static void download_expect(const struct tn_tensor *gpu, const struct tn_tensor *cpu, double tol,
                            const char *what)
{
    float *h = trk_alloc(T, tn_nbytes(cpu), "data/fetch");
    lg_gpu_download(h, tn_f32(gpu), tn_nbytes(gpu));
    lg_gpu_expect_close(h, tn_f32(cpu), tn_numel(cpu), tol, what);
    trk_free(T, h);
}

Test(gpu_optim, adamw_with_clipping_matches_the_host)
{
    lg_gpu_begin();
    static const int64_t sizes[NP] = {640 * 160, 160, 7};
    struct tn_tensor *pc[NP], *pg[NP];
    for (int i = 0; i < NP; i++) {
        char name[32];
        snprintf(name, sizeof name, "varmap/p%d", i);
        pc[i] = tn_new_f32(T, name, 1, &sizes[i]);
        cr_assert_not_null(pc[i]);
        lg_gpu_fill(tn_f32(pc[i]), sizes[i], 300 + i, -1, 1);
        pg[i] = tn_to_device(pc[i], TN_CUDA);
        cr_assert_not_null(pg[i], "%s", lg_errmsg());
        pc[i]->requires_grad = pg[i]->requires_grad = true;
    }
    struct opt_adamw *oc = NULL, *og = NULL;
    struct opt_adamw_config cfg = {
        .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    cr_assert_eq(opt_adamw_new(&oc, T, &cfg), LG_OK);
    cr_assert_eq(opt_adamw_new(&og, T, &cfg), LG_OK);
    cr_assert_eq(opt_adamw_add(oc, pc, NP), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(opt_adamw_add(og, pg, NP), LG_OK, "%s", lg_errmsg());
    struct tn_tensor *m = opt_adamw_moment(og, "p0", 1);
    cr_assert_not_null(m);
    cr_expect_eq(m->device, TN_CUDA, "moments live with their parameter");
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, m->st->data, tag, sizeof tag));
    cr_expect_str_eq(tag, "adam.m/p0");

    for (int step = 0; step < 4; step++) {
        /* the same gradient on both sides: a loss of Σ p ⊙ r through the autograd */
        for (int d = 0; d < 2; d++) {
            struct ag_ctx *ctx =
                ag_ctx_new(T, &(struct ag_options){.device = d ? TN_CUDA : TN_CPU});
            struct tn_tensor *loss = NULL;
            for (int i = 0; i < NP; i++) {
                struct tn_tensor *r = tn_new_f32(T, "data/r", 1, &sizes[i]);
                lg_gpu_fill(tn_f32(r), sizes[i], 400 + 10 * step + i, -1, 1);
                struct tn_tensor *rd = d ? tn_to_device(r, TN_CUDA) : tn_retain(r);
                cr_assert_not_null(rd, "%s", lg_errmsg());
                struct tn_tensor *term = ag_sum_all(ctx, ag_mul(ctx, d ? pg[i] : pc[i], rd));
                loss = loss ? ag_add(ctx, loss, term) : term;
                tn_release(rd);
                tn_release(r);
            }
            cr_assert_eq(ag_backward(ctx, loss), LG_OK, "%s", ag_errmsg(ctx));
            ag_ctx_free(ctx);
        }
        double nc = ag_clip_grad_norm(pc, NP, 50.0), ng = ag_clip_grad_norm(pg, NP, 50.0);
        cr_expect(fabs(nc - ng) <= 1e-6 * nc, "gradient norms: host %.9g, device %.9g", nc, ng);
        cr_assert_eq(opt_adamw_step(oc), LG_OK);
        cr_assert_eq(opt_adamw_step(og), LG_OK, "%s", lg_errmsg());
        opt_zero_grad(pc, NP);
        opt_zero_grad(pg, NP);
        download_expect(pg[0]->grad, pc[0]->grad, 0, "zeroed gradient");
    }
    for (int i = 0; i < NP; i++) {
        char what[32];
        snprintf(what, sizeof what, "p%d after 4 steps", i);
        download_expect(pg[i], pc[i], 1e-5, what);
    }
    download_expect(opt_adamw_moment(og, "p0", 2), opt_adamw_moment(oc, "p0", 2), 1e-5,
                    "second moment");
    opt_free_grads(pg, NP);
    cr_expect_null(pg[0]->grad);
    opt_adamw_free(oc);
    opt_adamw_free(og);
    opt_free_grads(pc, NP);
    for (int i = 0; i < NP; i++) {
        tn_release(pc[i]);
        tn_release(pg[i]);
    }
}

Test(gpu_optim, moments_follow_their_parameters_to_the_host)
{
    lg_gpu_begin();
    int64_t n = 1000;
    struct tn_tensor *p = tn_new_f32(T, "varmap/w", 1, &n);
    cr_assert_not_null(p);
    lg_gpu_fill(tn_f32(p), n, 500, -1, 1);
    cr_assert_eq(tn_move(p, TN_CUDA), LG_OK, "%s", lg_errmsg());
    p->requires_grad = true;
    struct opt_adamw *opt = NULL;
    cr_assert_eq(opt_adamw_new(&opt, T,
                               &(struct opt_adamw_config){
                                   .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}),
                 LG_OK);
    cr_assert_eq(opt_adamw_add(opt, &p, 1), LG_OK, "%s", lg_errmsg());
    p->grad = tn_zeros(T, TN_F32, TN_CUDA, 1, &n, "grad/w");
    cr_assert_not_null(p->grad, "%s", lg_errmsg());
    cr_assert_eq(opt_adamw_step(opt), LG_OK, "%s", lg_errmsg());
    /* the parameter (and its gradient) go to the host, the moments stay: refused, not a crash */
    cr_assert_eq(tn_move(p, TN_CPU), LG_OK, "%s", lg_errmsg());
    cr_expect_eq(p->grad->device, TN_CPU, "the gradient moved with its parameter");
    cr_expect_eq(opt_adamw_step(opt), LG_EINVAL);
    cr_expect(strstr(lg_errmsg(), "different devices") != NULL, "%s", lg_errmsg());
    cr_assert_eq(opt_adamw_to_device(opt, TN_CPU), LG_OK, "%s", lg_errmsg());
    cr_expect_eq(opt_adamw_moment(opt, "w", 2)->device, TN_CPU);
    cr_expect_eq(opt_adamw_step(opt), LG_OK, "%s", lg_errmsg());
    opt_adamw_free(opt);
    tn_release(p);
}
