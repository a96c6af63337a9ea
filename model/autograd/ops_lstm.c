/* ops_lstm.c — one fused LSTM layer over a sequence (gate order i, f, g, o).
 *
 * Forward: the input projection of every time step is one GEMM, [B·T, In]·W_ihᵀ, written
 * over both biases into `gates` [B, T, 4H]; then step by step, gates_t += h_{t−1}·W_hhᵀ (one
 * [B, H]×[H, 4H] GEMM, strided into gates_t) and the cell kernel turns gates_t into the
 * activations i, f, g, o in place and writes c_t and h_t. `gates` and every c_t (`cells`
 * [B, T, H]) are saved for backpropagation through time; h_t is the output itself.
 *
 * Backward, t = T−1 … 0: the cell kernel turns (dout_t + dh_rec, dc) into the pre-activation
 * gradients dG_t and dc_{t−1}; dh_rec = dG_t·W_hh (one GEMM per step). Then, over all steps
 * at once: dx += dG·W_ih, dW_ih += dGᵀ·x, dW_hh += dGᵀ·H_prev (H_prev [B, T, H] holds
 * h_{t−1}: h0 then the outputs shifted by one step), db += Σ dG. */
#include <limits.h>

#include "ag_impl.h"

enum { L_X, L_H0, L_C0, L_WIH, L_WHH, L_BIH, L_BHH, L_NIN };

/* ia: 0 B, 1 T, 2 In, 3 H; saved: 0 gates [B, T, 4H] (activations), 1 cells [B, T, H] */
static int lstm_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    const struct kn_backend *kb = nd->kb;
    struct tn_tensor *const *in = nd->in, *out = nd->out[0], *c_last = nd->out[1];
    int B = (int)nd->ia[0], T = (int)nd->ia[1], In = (int)nd->ia[2], H = (int)nd->ia[3], G = 4 * H;
    int64_t BH = (int64_t)B * H;
    const float *gates = tn_f32(nd->saved[0]), *cells = tn_f32(nd->saved[1]);
    const float *dout = out->grad ? tn_f32(out->grad) : NULL;
    const float *w_hh = tn_f32(in[L_WHH]);
    struct tn_tensor *dgt = NULL, *state = NULL, *hprev = NULL;
    float *d[L_NIN] = {NULL};
    bool fresh[L_NIN] = {false}; /* new gradients: written (GEMM beta 0, copies), not zeroed */
    int rc = LG_OK;
    bool need_hprev = in[L_WHH]->requires_grad;
    dgt = ag_scratch(ctx, out, "dgates", 3, (int64_t[]){B, T, G});
    /* dc, dh_rec, db, and a zero row for absent inputs */
    state = dgt ? ag_scratch(ctx, out, "dstate", 1, (int64_t[]){2 * BH + G + H}) : NULL;
    if (need_hprev && state) hprev = ag_scratch(ctx, out, "h_prev", 3, (int64_t[]){B, T, H});
    if (!state || (need_hprev && !hprev)) {
        rc = ctx->err;
        goto cleanup;
    }
    for (int k = 0; k < L_NIN && rc == LG_OK; k++) d[k] = ag_grad_w(ctx, in[k], &fresh[k], &rc);
    if (rc) goto cleanup;
#define BETA(k) (fresh[k] ? 0.0f : 1.0f)
    float *dg = tn_f32(dgt), *dc = tn_f32(state), *dh_rec = dc + BH, *dbias = dh_rec + BH;
    float *zero = dbias + G;
    kb->zero(dh_rec, BH);
    kb->zero(zero, H);
    if (c_last->grad)
        kb->copy2d(dc, tn_f32(c_last->grad), 1, BH, BH, BH);
    else
        kb->zero(dc, BH);
    for (int t = T - 1; t >= 0; t--) {
        const float *c_prev = in[L_C0] ? tn_f32(in[L_C0]) : zero;
        int64_t ldcp = in[L_C0] ? H : 0;
        if (t > 0) {
            c_prev = cells + (int64_t)(t - 1) * H;
            ldcp = (int64_t)T * H;
        }
        float *dg_t = dg + (int64_t)t * G;
        kb->dlstm_cell(dg_t, dc, dout ? dout + (int64_t)t * H : zero, dh_rec,
                       gates + (int64_t)t * G, cells + (int64_t)t * H, c_prev, B, H, (int64_t)T * G,
                       (int64_t)T * H, dout ? (int64_t)T * H : 0, ldcp);
        if (t > 0)
            kb->gemm(dh_rec, dg_t, w_hh, false, false, B, H, G, 1.0f, T * G, H, 0.0f, H);
        else if (d[L_H0])
            kb->gemm(d[L_H0], dg_t, w_hh, false, false, B, H, G, 1.0f, T * G, H, BETA(L_H0), H);
    }
    if (d[L_C0]) {
        if (fresh[L_C0])
            kb->copy2d(d[L_C0], dc, 1, BH, BH, BH);
        else
            kb->axpy(d[L_C0], dc, 1.0f, BH);
    }

    int BT = B * T;
    if (d[L_X])
        kb->gemm(d[L_X], dg, tn_f32(in[L_WIH]), false, false, BT, In, G, 1.0f, G, In, BETA(L_X),
                 In);
    if (d[L_WIH])
        kb->gemm(d[L_WIH], dg, tn_f32(in[L_X]), true, false, G, In, BT, 1.0f, G, In, BETA(L_WIH),
                 In);
    if (d[L_WHH]) {
        float *hp = tn_f32(hprev);
        if (in[L_H0])
            kb->copy2d(hp, tn_f32(in[L_H0]), B, H, (int64_t)T * H, H);
        else
            kb->zero(hp, (int64_t)BT * H);
        if (T > 1)
            kb->copy2d(hp + H, tn_f32(out), B, (int64_t)(T - 1) * H, (int64_t)T * H,
                       (int64_t)T * H);
        kb->gemm(d[L_WHH], dg, hp, true, false, G, H, BT, 1.0f, G, H, BETA(L_WHH), H);
    }
    if (d[L_BIH] || d[L_BHH]) {
        kb->zero(dbias, G);
        kb->dbias(dbias, dg, BT, G);
        for (int k = L_BIH; k <= L_BHH; k++) {
            if (fresh[k])
                kb->copy2d(d[k], dbias, 1, G, G, G);
            else if (d[k])
                kb->axpy(d[k], dbias, 1.0f, G);
        }
    }
#undef BETA
cleanup:
    for (int k = 0; rc != LG_OK && k < L_NIN; k++) /* never leave a new gradient unwritten */
        if (fresh[k] && d[k]) kb->zero(d[k], tn_numel(in[k]));
    tn_release(hprev);
    tn_release(state);
    tn_release(dgt);
    return rc;
}

static bool is_vec(const struct tn_tensor *t, int64_t n)
{
    return !t || (t->ndim == 1 && t->ne[0] == n);
}
static bool is_mat(const struct tn_tensor *t, int64_t r, int64_t c)
{
    return !t || (t->ndim == 2 && t->ne[0] == r && t->ne[1] == c);
}

struct ag_lstm_out ag_lstm(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *h0,
                           struct tn_tensor *c0, struct tn_tensor *w_ih, struct tn_tensor *w_hh,
                           struct tn_tensor *b_ih, struct tn_tensor *b_hh)
{
    struct ag_lstm_out r = {NULL, NULL};
    struct tn_tensor *in[L_NIN] = {x, h0, c0, w_ih, w_hh, b_ih, b_hh};
    static const char *const what[L_NIN] = {"x", "h0", "c0", "w_ih", "w_hh", "b_ih", "b_hh"};
    if (!ag_inputs_ok(ctx, "ag_lstm", 1, &x) || !ag_inputs_ok(ctx, "ag_lstm", 2, &in[L_WIH]))
        return r;
    const struct kn_backend *kb = ag_kernels(ctx, "ag_lstm", L_NIN, in);
    if (!kb) return r;
    for (int k = 0; k < L_NIN; k++)
        if (in[k] && !ag_check_f32(ctx, "ag_lstm", what[k], in[k])) return r;
    if (x->ndim != 3 || w_ih->ndim != 2 || w_ih->ne[0] % 4 != 0 || w_ih->ne[0] == 0) {
        ag_fail(ctx, LG_EINVAL, "ag_lstm: x %s must be [B, T, In] and w_ih %s [4H, In]",
                AG_SHAPE(x), AG_SHAPE(w_ih));
        return r;
    }
    int64_t B = x->ne[0], T = x->ne[1], In = x->ne[2], H = w_ih->ne[0] / 4, G = 4 * H;
    if (w_ih->ne[1] != In || !is_mat(w_hh, G, H) || !is_vec(b_ih, G) || !is_vec(b_hh, G) ||
        !is_mat(h0, B, H) || !is_mat(c0, B, H)) {
        char hb[80] = "-", cb[80] = "-";
        if (h0) tn_shape_str(h0, hb, sizeof hb);
        if (c0) tn_shape_str(c0, cb, sizeof cb);
        ag_fail(ctx, LG_EINVAL,
                "ag_lstm: shapes disagree for B %lld, T %lld, In %lld, H %lld: x %s w_ih %s "
                "w_hh %s (want [%lld, %lld]) h0 %s c0 %s",
                (long long)B, (long long)T, (long long)In, (long long)H, AG_SHAPE(x),
                AG_SHAPE(w_ih), AG_SHAPE(w_hh), (long long)G, (long long)H, hb, cb);
        return r;
    }
    if (T < 1 || B * T * G > INT_MAX) {
        ag_fail(ctx, LG_EINVAL, "ag_lstm: x %s: %s", AG_SHAPE(x),
                T < 1 ? "an empty sequence" : "too large for the GEMM's int sizes");
        return r;
    }
    int64_t ldg = T * G, ldh = T * H;
    struct tn_tensor *out = ag_out(ctx, "lstm", TN_F32, x->device, 3, (int64_t[]){B, T, H});
    struct tn_tensor *c_last =
        out ? ag_out(ctx, "lstm.c_last", TN_F32, x->device, 2, (int64_t[]){B, H}) : NULL;
    struct tn_tensor *gt =
        c_last ? ag_out(ctx, "lstm.gates", TN_F32, x->device, 3, (int64_t[]){B, T, G}) : NULL;
    struct tn_tensor *ct =
        gt ? ag_out(ctx, "lstm.cells", TN_F32, x->device, 3, (int64_t[]){B, T, H}) : NULL;
    if (!ct) return r;
    float *gates = tn_f32(gt), *cells = tn_f32(ct), *h = tn_f32(out);
    /* W_hhᵀ [H, G], once: the T recurrent products then read their B as stored, and a CPU
     * GEMM need not pack W_hh again for every step (kernels_cpu_gemm.c) */
    struct tn_tensor *wt = NULL;
    if (T > 1 || h0) {
        wt = ag_out(ctx, "lstm.w_hh_t", TN_F32, x->device, 2, (int64_t[]){H, G});
        if (!wt) return r;
        struct kn_geom g;
        ag_geom_init(&g, 2, (int64_t[]){H, G}, (int64_t[]){1, H}, NULL);
        kb->gather(tn_f32(wt), tn_f32(w_hh), &g);
    }

    kb->bias_fill(gates, b_ih ? tn_f32(b_ih) : NULL, b_hh ? tn_f32(b_hh) : NULL, B * T, G);
    kb->gemm(gates, tn_f32(x), tn_f32(w_ih), false, true, (int)(B * T), (int)G, (int)In, 1.0f,
             (int)In, (int)In, 1.0f, (int)G);
    for (int64_t t = 0; t < T; t++) {
        const float *h_prev = t ? h + (t - 1) * H : (h0 ? tn_f32(h0) : NULL);
        const float *c_prev = t ? cells + (t - 1) * H : (c0 ? tn_f32(c0) : NULL);
        int64_t ldhp = t ? ldh : H;
        if (h_prev)
            kb->gemm(gates + t * G, h_prev, tn_f32(wt), false, false, (int)B, (int)G, (int)H, 1.0f,
                     (int)ldhp, (int)G, 1.0f, (int)ldg);
        kb->lstm_cell(gates + t * G, cells + t * H, h + t * H, c_prev, B, H, ldg, ldh, ldh, ldhp);
    }
    kb->copy2d(tn_f32(c_last), cells + (T - 1) * H, B, H, H, ldh);

    if (ag_wants_grad(ctx, L_NIN, in)) {
        struct tn_tensor *outs[2] = {out, c_last};
        struct ag_node *nd = ag_record(ctx, "ag_lstm", lstm_backward, kb, L_NIN, in, 2, outs, 0);
        if (!nd) return r;
        ag_set_ia(nd, 4, (const int64_t[]){B, T, In, H});
        ag_save(nd, 0, gt);
        ag_save(nd, 1, ct);
    }
    r.out = out;
    r.c_last = c_last;
    return r;
}
