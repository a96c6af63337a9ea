/* trainer.c — a training session: optimizer, training steps, validation and checkpoints.
 * INT8 finalisation lives in trainer_quant.c; the fault switches are documented in trainer.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "safetensors.h"
#include "tn_device.h"
#include "trainer_impl.h"

static int resolve_options(struct tr_trainer *tr, const struct tr_options *opt)
{
    const struct tft_config *c = &tr->model->cfg;
    tr->opt = opt ? *opt : (struct tr_options){0};
    struct tr_options *o = &tr->opt;
    if (o->steps < 0 || o->batch < 0 || o->val_batches < 0 || o->calib_batches < 0 ||
        o->qat_steps < 0)
        return lg_fail(LG_EINVAL, "trainer: negative steps, batch or batch counts");
    if (!o->steps) o->steps = 20;
    if (!o->batch) o->batch = c->batch > 0 ? c->batch : 8;
    if (o->lr == 0) o->lr = c->lr > 0 ? c->lr : 1e-3;
    if (o->max_grad_norm == 0) o->max_grad_norm = c->max_grad_norm > 0 ? c->max_grad_norm : 1.0;
    if (!o->val_batches) o->val_batches = 4;
    if (!o->calib_batches) o->calib_batches = 4;
    if (!o->qat_steps) o->qat_steps = o->steps / 2 > 0 ? o->steps / 2 : 1;
    if (!(o->lr > 0) || !(o->max_grad_norm > 0))
        return lg_fail(LG_EINVAL, "trainer: lr and max_grad_norm must be positive");
    return LG_OK;
}

int tr_new(struct tr_trainer **out, struct tft_model *model, struct data_set *data,
           const struct tr_options *opt)
{
    *out = NULL;
    struct vm_varmap *vm = tft_varmap_borrow(model);
    struct trk_tracker *trk = vm_tracker(vm);
    struct tr_trainer *tr = trk_calloc(trk, sizeof *tr, "trainer/state");
    if (!tr) return lg_errcode();
    tr->trk = trk;
    tr->model = model;
    tr->data = data;
    int rc = resolve_options(tr, opt);
    if (rc) goto fail;
    if (memcmp(data_config(data)->vars, model->cfg.vars, sizeof model->cfg.vars) != 0 ||
        data_config(data)->n_vars != model->cfg.n_vars) {
        rc = lg_fail(LG_EINVAL, "trainer: the data set's variables do not match the model's (%s)",
                     model->cfg.preset);
        goto fail;
    }
    if (tr->opt.faults.varmap_dup_ref) /* the original bug: a handle of its own, never dropped */
        tr->own_varmap = model->vt->get_varmap(model, tr, TRK_HERE);
    if ((rc = vm_all_vars(vm, &tr->params, &tr->n_params))) goto fail;
    tr->ctx = ag_ctx_new(
        trk,
        &(struct ag_options){.training = true, .seed = tr->opt.seed, .device = tr->opt.device});
    if (!tr->ctx) {
        rc = lg_errcode() ? lg_errcode() : LG_ENOMEM;
        goto fail;
    }
    /* the model runs where the options say: its parameters move there (batches follow) */
    if (tr->opt.device != TN_CPU && (rc = tft_to_device(model, tr->opt.device))) goto fail;
    data_cursor_init(&tr->cursor, tr->opt.seed ^ 0x7472616Eull);
    *out = tr;
    return LG_OK;
fail:
    tr_free(tr);
    return rc;
}

int tr_initialize_optimizer(struct tr_trainer *tr)
{
    if (tr->opt_state) return lg_fail(LG_EINVAL, "trainer: optimizer already initialised");
    struct opt_adamw_config cfg = {
        .lr = tr->opt.lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0};
    int rc = opt_adamw_new(&tr->opt_state, tr->trk, &cfg);
    if (rc == LG_OK) rc = opt_adamw_add(tr->opt_state, tr->params, tr->n_params);
    if (rc != LG_OK) {
        opt_adamw_free(tr->opt_state);
        tr->opt_state = NULL;
    }
    return rc;
}

static void progress(struct tr_trainer *tr, const char *phase, int step, double loss)
{
    if (tr->opt.progress) tr->opt.progress(tr->opt.progress_user, phase, step, loss);
}

/* What the raw-malloc fault forgot, still reachable from here: a leak that outlives every
 * session, as a forgotten cache does (so LeakSanitizer, which reports only what nothing points
 * to, stays quiet at exit in the sanitizer builds — and says nothing while the process runs,
 * which is the point of leakgate). */
struct forgotten {
    struct forgotten *next;
};
static struct forgotten *forgotten;

/* The untagged faults: memory the tracker never sees, so only jemalloc's statistics or the
 * kernel's RSS can catch it. A fault that cannot be made fails the session: a run that meant to
 * leak and could not must not pass. */
static int raw_faults(struct tr_trainer *tr)
{
    char b1[32];
    if (tr->raw_done) return LG_OK;
    tr->raw_done = true;
    size_t n = tr->opt.faults.raw_malloc;
    if (n) {
        char *p = malloc(n); /* a scratch buffer forgotten by the batch loop */
        if (!p)
            return lg_fail(LG_ENOMEM, "fault raw-malloc could not be injected: malloc of %s failed",
                           lg_fmt_bytes(b1, sizeof b1, (double)n));
        memset(p, 0x5a, n);
        if (n >= sizeof(struct forgotten)) {
            struct forgotten *f = (struct forgotten *)(void *)p;
            f->next = forgotten;
            forgotten = f;
        }
    }
    n = tr->opt.faults.raw_mmap;
    if (n) {
        char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return lg_fail(LG_ENOMEM, "fault raw-mmap could not be injected: mmap of %s failed: %s",
                           lg_fmt_bytes(b1, sizeof b1, (double)n), strerror(errno));
        memset(p, 0x5a, n);
    }
    return LG_OK;
}

/* A batch of the data set on the trainer's device; freed with tft_batch_fini. */
static int next_batch(struct tr_trainer *tr, enum data_split split, struct data_cursor *cur,
                      struct tft_batch *b)
{
    int rc = data_batch(tr->data, split, tr->opt.batch, cur, b);
    if (rc == LG_OK && tr->opt.device != TN_CPU) rc = tft_batch_to_device(b, tr->opt.device);
    return rc;
}

/* The value of a one-element f32 tensor on any device. */
static int read_scalar(const struct tn_tensor *t, double *out)
{
    float v;
    if (t->device == TN_CPU)
        v = tn_f32(t)[0];
    else if (tn_device_copy(&v, TN_CPU, tn_f32(t), t->device, sizeof v) != LG_OK)
        return lg_errcode();
    *out = v;
    return LG_OK;
}

/* One step: forward, loss, backward, clip, AdamW. Frees the step's tape and batch. */
static int train_step(struct tr_trainer *tr, double *loss_out, double *norm_out, bool keep_tape)
{
    struct tft_batch b = {0};
    int rc = next_batch(tr, DATA_TRAIN, &tr->cursor, &b);
    if (rc) {
        tft_batch_fini(&b);
        return rc;
    }
    ag_set_training(tr->ctx, true);
    ag_set_grad_enabled(tr->ctx, true);
    struct tn_tensor *yhat = tft_forward(tr->model, tr->ctx, &b);
    struct tn_tensor *loss = yhat ? tft_loss(tr->model, tr->ctx, yhat, &b) : NULL;
    if (!loss || (rc = ag_backward(tr->ctx, loss)) != LG_OK) {
        rc = lg_fail(ag_error(tr->ctx) ? ag_error(tr->ctx) : LG_EINTERNAL, "training step: %s",
                     ag_errmsg(tr->ctx));
        goto out;
    }
    if ((rc = read_scalar(loss, loss_out))) goto out;
    *norm_out = ag_clip_grad_norm(tr->params, tr->n_params, tr->opt.max_grad_norm);
    if (!isfinite(*loss_out) || !isfinite(*norm_out)) {
        rc = lg_fail(LG_EINTERNAL, "training step: loss %g, gradient norm %g are not finite",
                     *loss_out, *norm_out);
        goto out;
    }
    if ((rc = opt_adamw_step(tr->opt_state))) goto out;
    opt_zero_grad(tr->params, tr->n_params);
    if (keep_tape) { /* fault: the last step's graph is kept "for debugging" and never freed */
        tr->kept_tape = ag_ctx_take_tape(tr->ctx);
    }
out:
    ag_ctx_reset(tr->ctx);
    tft_batch_fini(&b);
    return rc;
}

/* Keeps a reference to every gradient "for a norm report" (the grad-retained fault). */
static int retain_grads(struct tr_trainer *tr)
{
    tr->kept_grads =
        trk_calloc(tr->trk, (size_t)tr->n_params * sizeof *tr->kept_grads, "trainer/grad_report");
    if (!tr->kept_grads) return lg_errcode();
    for (int i = 0; i < tr->n_params; i++)
        if (tr->params[i]->grad) tr->kept_grads[i] = tn_retain(tr->params[i]->grad);
    return LG_OK;
}

int tr_train(struct tr_trainer *tr, struct tr_train_stats *st)
{
    struct tr_train_stats s = {0};
    if (!tr->opt_state)
        return lg_fail(LG_EINVAL, "trainer: tr_train before tr_initialize_optimizer");
    double t0 = lg_now(), sum = 0;
    int rc = raw_faults(tr);
    if (rc == LG_OK && tr->opt.faults.device_tensor && tr->opt.device != TN_CPU &&
        !tr->kept_device) {
        /* fault: a device workspace for the step's reductions, made once and never freed */
        tr->kept_device = tn_device_alloc(tr->trk, 4 << 20, "act/device.scratch");
        if (!tr->kept_device) rc = lg_errcode();
    }
    for (int k = 0; k < tr->opt.steps && rc == LG_OK; k++) {
        double loss = 0, norm = 0;
        bool last = k == tr->opt.steps - 1;
        rc = train_step(tr, &loss, &norm, last && tr->opt.faults.tape_retained && !tr->kept_tape);
        if (rc) break;
        if (k == 0) s.first_loss = loss;
        s.last_loss = loss;
        s.grad_norm = norm;
        sum += loss;
        s.steps++;
        progress(tr, "train", k, loss);
    }
    if (rc == LG_OK && tr->opt.faults.grad_retained && !tr->kept_grads) rc = retain_grads(tr);
    s.mean_loss = s.steps ? sum / s.steps : NAN;
    s.seconds = lg_now() - t0;
    if (st) *st = s;
    return rc;
}

int tr_validate(struct tr_trainer *tr, double *loss_out)
{
    struct data_cursor cur;
    data_cursor_init(&cur, 0);
    bool was_training = ag_training(tr->ctx);
    ag_set_training(tr->ctx, false);
    bool was_grad = ag_set_grad_enabled(tr->ctx, false);
    int64_t nb = data_n_batches(tr->data, DATA_VAL, tr->opt.batch);
    if (nb > tr->opt.val_batches) nb = tr->opt.val_batches;
    double sum = 0;
    int64_t weight = 0;
    int rc = LG_OK;
    for (int64_t k = 0; k < nb && rc == LG_OK; k++) {
        struct tft_batch b = {0};
        struct tn_tensor *yhat = NULL, *host_yhat = NULL, *host_y = NULL;
        if ((rc = next_batch(tr, DATA_VAL, &cur, &b)) == LG_OK &&
            !(yhat = tft_forward(tr->model, tr->ctx, &b)))
            rc = lg_fail(ag_error(tr->ctx), "validation: %s", ag_errmsg(tr->ctx));
        /* the loss is plain C on the host: device outputs are copied back first */
        if (rc == LG_OK && yhat->device != TN_CPU &&
            (!(host_yhat = tn_to_device(yhat, TN_CPU)) || !(host_y = tn_to_device(b.y, TN_CPU))))
            rc = lg_fail_ctx(lg_errcode(), "validation: ");
        if (rc == LG_OK) {
            sum +=
                data_pinball(&tr->model->cfg, host_yhat ? host_yhat : yhat, host_y ? host_y : b.y) *
                b.B;
            weight += b.B;
        }
        tn_release(host_yhat);
        tn_release(host_y);
        ag_ctx_reset(tr->ctx);
        tft_batch_fini(&b);
    }
    ag_set_training(tr->ctx, was_training);
    ag_set_grad_enabled(tr->ctx, was_grad);
    if (rc == LG_OK && weight == 0)
        rc = lg_fail(LG_EINVAL, "validation: the data set has no validation windows");
    if (rc == LG_OK) *loss_out = sum / (double)weight;
    progress(tr, "validate", -1, rc == LG_OK ? *loss_out : NAN);
    return rc;
}

/* Re-opens a written checkpoint and compares every tensor with the parameter it came from,
 * through one staging buffer sized for the largest tensor. */
static int verify_checkpoint(struct tr_trainer *tr, const char *path)
{
    struct st_file *f = NULL;
    char *staging = NULL, *from_device = NULL; /* the second: a device parameter's bytes */
    int rc = st_open(&f, tr->trk, path);
    if (rc) return rc;
    size_t largest = 0;
    for (int i = 0; i < st_count(f); i++) largest = LG_MAX(largest, st_nbytes(f, i));
    staging = trk_alloc(tr->trk, largest, "ckpt/staging");
    if (!staging) {
        rc = lg_errcode();
        goto out;
    }
    for (int i = 0; i < st_count(f) && rc == LG_OK; i++) {
        const struct st_info *e = st_info(f, i);
        size_t nbytes = st_nbytes(f, i);
        struct tn_tensor *p = vm_find(tft_varmap_borrow(tr->model), e->name);
        if (!p || tn_nbytes(p) != nbytes) {
            rc = lg_fail(LG_EFORMAT, "%s: tensor %s does not match the model", path, e->name);
            break;
        }
        if ((rc = st_read(f, i, staging, nbytes))) break;
        const void *mem = tn_data(p);
        if (p->device != TN_CPU) {
            if (!from_device &&
                !(from_device = trk_alloc(tr->trk, largest, "ckpt/staging.device"))) {
                rc = lg_errcode();
                break;
            }
            if ((rc = tn_device_copy(from_device, TN_CPU, tn_data(p), p->device, nbytes))) break;
            mem = from_device;
        }
        if (memcmp(staging, mem, nbytes) != 0)
            rc = lg_fail(LG_EIO, "%s: tensor %s reads back different from what was written", path,
                         e->name);
    }
out:
    if (tr->opt.faults.ckpt_buffer)
        tr->leaked_staging = staging; /* fault: forgotten, never freed */
    else
        trk_free(tr->trk, staging);
    trk_free(tr->trk, from_device);
    st_close(f);
    return rc;
}

int tr_save_checkpoint(struct tr_trainer *tr, const char *path)
{
    char *json = tft_config_to_json(&tr->model->cfg);
    if (!json) return lg_fail(LG_ENOMEM, "checkpoint: no memory for the config text");
    int rc = vm_save(tft_varmap_borrow(tr->model), path, json);
    free(json);
    if (rc == LG_OK) rc = verify_checkpoint(tr, path);
    progress(tr, "save", -1, NAN);
    return rc;
}

struct vm_varmap *tr_get_varmap(struct tr_trainer *tr, const void *holder, struct trk_site site)
{
    return tr->model->vt->get_varmap(tr->model, holder, site);
}

void tr_free(struct tr_trainer *tr)
{
    if (!tr) return;
    if (!tr->opt.faults.adam_state) opt_adamw_free(tr->opt_state);
    if (tr->params) {
        opt_free_grads(tr->params, tr->n_params);
        vm_list_free(tft_varmap_borrow(tr->model), tr->params);
    }
    ag_ctx_free(tr->ctx);
    /* Faults leave these behind on purpose: own_varmap (never released), kept_tape,
     * kept_grads, leaked_staging, kept_device. Without faults they are NULL. */
    trk_free(tr->trk, tr);
}
