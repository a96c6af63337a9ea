/* test_gpu_kernels_nn.c — kn_cuda against kn_cpu, part 2: softmax and layer norm with their
 * backward (the weight gradients' column sums over one and many row slices, the same bits
 * every run), the LSTM cell forward and back (strided as ag_lstm calls it, with and without a
 * previous cell), the pinball loss (one block's worth and many), fake quantisation, AdamW. */
#include <math.h>
#include <string.h>

#include "kn_pair.h"

TestSuite(gpu_kernels_nn, .init = lg_test_setup, .fini = lg_gpu_teardown, .timeout = 120);

#define TOL 1e-5

/* Re-uploads the host copy, so a backward kernel starts from identical forward results. */
static void sync_to_device(struct kn_pair *p)
{
    cr_assert_eq(tn_device_copy(p->d, TN_CUDA, p->h, TN_CPU, (size_t)p->n * sizeof(float)), LG_OK);
}

Test(gpu_kernels_nn, softmax_rows_with_masked_entries)
{
    lg_gpu_begin();
    int64_t shapes[][2] = {{6144, 192}, {100, 3}, {7, 1500}, {1, 1}};
    for (size_t s = 0; s < LG_ARRAY_LEN(shapes); s++) {
        int64_t rows = shapes[s][0], n = shapes[s][1];
        struct kn_pair x = kn_pair_new(rows * n, 200 + s, -8, 8),
                       y = kn_pair_new(rows * n, 0, 0, 0);
        struct kn_pair dy = kn_pair_new(rows * n, 210 + s, -1, 1),
                       dx = kn_pair_new(rows * n, 220 + s, -1, 1);
        for (int64_t r = 0; r < rows; r++) /* a causal mask: -inf past the diagonal */
            for (int64_t j = r % n + 1; j < n; j++) x.h[r * n + j] = -INFINITY;
        sync_to_device(&x);
        char what[64];
        kn_cpu.softmax(y.h, x.h, rows, n);
        kn_cuda.softmax(y.d, x.d, rows, n);
        snprintf(what, sizeof what, "softmax [%lld, %lld]", (long long)rows, (long long)n);
        kn_pair_expect(&y, 2e-6, what);
        sync_to_device(&y);
        kn_cpu.dsoftmax(dx.h, y.h, dy.h, rows, n);
        kn_cuda.dsoftmax(dx.d, y.d, dy.d, rows, n);
        kn_pair_expect(&dx, TOL, "dsoftmax");
        kn_pair_free(&x);
        kn_pair_free(&y);
        kn_pair_free(&dy);
        kn_pair_free(&dx);
    }
}

Test(gpu_kernels_nn, layernorm_and_every_backward_combination)
{
    lg_gpu_begin();
    /* many slices of rows; few rows of long rows; one slice; columns past the scratch */
    int64_t shapes[][2] = {{12288, 160}, {5, 1024}, {300, 3}, {70, 70000}, {64 * 37, 1024}};
    for (size_t s = 0; s < LG_ARRAY_LEN(shapes); s++) {
        int64_t rows = shapes[s][0], n = shapes[s][1];
        struct kn_pair x = kn_pair_new(rows * n, 230 + s, -3, 5),
                       y = kn_pair_new(rows * n, 0, 0, 0);
        struct kn_pair w = kn_pair_new(n, 231, 0.5f, 1.5f), b = kn_pair_new(n, 232, -1, 1);
        struct kn_pair mean = kn_pair_new(rows, 0, 0, 0), rstd = kn_pair_new(rows, 0, 0, 0);
        struct kn_pair dy = kn_pair_new(rows * n, 233, -1, 1),
                       dx = kn_pair_new(rows * n, 234, -1, 1);
        struct kn_pair dw = kn_pair_new(n, 235, -1, 1), db = kn_pair_new(n, 236, -1, 1);
        kn_cpu.layernorm(y.h, mean.h, rstd.h, x.h, w.h, b.h, rows, n, 1e-3f);
        kn_cuda.layernorm(y.d, mean.d, rstd.d, x.d, w.d, b.d, rows, n, 1e-3f);
        kn_pair_expect(&y, TOL, "layernorm y");
        kn_pair_expect(&mean, TOL, "layernorm mean");
        kn_pair_expect(&rstd, TOL, "layernorm rstd");
        sync_to_device(&mean);
        sync_to_device(&rstd);
        for (int v = 0; v < 4; v++) { /* all three; dx only; dw, db only; db only */
            bool want_dx = v <= 1, want_dw = v == 0 || v == 2, want_db = v != 1;
            kn_cpu.dlayernorm(want_dx ? dx.h : NULL, want_dw ? dw.h : NULL, want_db ? db.h : NULL,
                              dy.h, x.h, mean.h, rstd.h, w.h, rows, n);
            kn_cuda.dlayernorm(want_dx ? dx.d : NULL, want_dw ? dw.d : NULL, want_db ? db.d : NULL,
                               dy.d, x.d, mean.d, rstd.d, w.d, rows, n);
            kn_pair_expect(&dx, TOL, "dlayernorm dx");
            kn_pair_expect(&dw, TOL, "dlayernorm dw");
            kn_pair_expect(&db, TOL, "dlayernorm db");
        }
        struct kn_pair *all[] = {&x, &y, &w, &b, &mean, &rstd, &dy, &dx, &dw, &db};
        for (size_t i = 0; i < LG_ARRAY_LEN(all); i++) kn_pair_free(all[i]);
    }
}

/* The weight and bias gradients are fixed-order sums: the same bits on every run. */
Test(gpu_kernels_nn, dlayernorm_weight_gradients_repeat_bitwise)
{
    lg_gpu_begin();
    int64_t rows = 64 * 192, n = 160;
    struct kn_pair x = kn_pair_new(rows * n, 280, -3, 5), dy = kn_pair_new(rows * n, 281, -1, 1);
    struct kn_pair mean = kn_pair_new(rows, 282, -0.5f, 0.5f),
                   rstd = kn_pair_new(rows, 283, 0.5f, 2);
    float *dw[2], *db[2];
    for (int k = 0; k < 2; k++) {
        dw[k] = lg_gpu_zeros((size_t)n * sizeof(float), "act/dw");
        db[k] = lg_gpu_zeros((size_t)n * sizeof(float), "act/db");
        kn_cuda.dlayernorm(NULL, dw[k], db[k], dy.d, x.d, mean.d, rstd.d, NULL, rows, n);
    }
    float *h[4];
    for (int k = 0; k < 4; k++) h[k] = trk_alloc(T, (size_t)n * sizeof(float), "data/fetch");
    lg_gpu_download(h[0], dw[0], (size_t)n * sizeof(float));
    lg_gpu_download(h[1], dw[1], (size_t)n * sizeof(float));
    lg_gpu_download(h[2], db[0], (size_t)n * sizeof(float));
    lg_gpu_download(h[3], db[1], (size_t)n * sizeof(float));
    cr_expect(memcmp(h[0], h[1], (size_t)n * sizeof(float)) == 0, "dw differs between runs");
    cr_expect(memcmp(h[2], h[3], (size_t)n * sizeof(float)) == 0, "db differs between runs");
    for (int k = 0; k < 4; k++) trk_free(T, h[k]);
    for (int k = 0; k < 2; k++) {
        lg_gpu_free(dw[k]);
        lg_gpu_free(db[k]);
    }
    kn_pair_free(&x);
    kn_pair_free(&dy);
    kn_pair_free(&mean);
    kn_pair_free(&rstd);
}

/* One LSTM step as ag_lstm runs it: gates [B, T, 4H] strided by T·4H, cells and outputs
 * [B, T, H] strided by T·H, c_prev the previous step's cells (or an initial state [B, H]). */
Test(gpu_kernels_nn, lstm_cell_forward_and_back)
{
    lg_gpu_begin();
    int64_t B = 64, T_ = 5, H = 160, G = 4 * H;
    for (int with_prev = 0; with_prev < 2; with_prev++) {
        int64_t t = 3;
        struct kn_pair gates = kn_pair_new(B * T_ * G, 240 + with_prev, -4, 4);
        struct kn_pair cells = kn_pair_new(B * T_ * H, 242, -2, 2),
                       out = kn_pair_new(B * T_ * H, 243, 0, 0);
        struct kn_pair c0 = kn_pair_new(B * H, 244, -2, 2);
        const float *cp_h = with_prev ? cells.h + (t - 1) * H : NULL;
        const float *cp_d = with_prev ? cells.d + (t - 1) * H : NULL;
        int64_t ldcp = with_prev ? T_ * H : 0;
        kn_cpu.lstm_cell(gates.h + t * G, cells.h + t * H, out.h + t * H, cp_h, B, H, T_ * G,
                         T_ * H, T_ * H, ldcp);
        kn_cuda.lstm_cell(gates.d + t * G, cells.d + t * H, out.d + t * H, cp_d, B, H, T_ * G,
                          T_ * H, T_ * H, ldcp);
        kn_pair_expect(&gates, 2e-6, "lstm_cell gates");
        kn_pair_expect(&cells, 2e-6, "lstm_cell c");
        kn_pair_expect(&out, 2e-6, "lstm_cell h");
        sync_to_device(&gates);
        sync_to_device(&cells);

        /* back: dout strided like out (or an absent dout: a zero row with ldh 0) */
        struct kn_pair dg = kn_pair_new(B * T_ * G, 0, 0, 0), dc = kn_pair_new(B * H, 245, -1, 1);
        struct kn_pair dout = kn_pair_new(B * T_ * H, 246, -1, 1),
                       dh_rec = kn_pair_new(B * H, 247, -1, 1);
        struct kn_pair zero = kn_pair_new(H, 0, 0, 0);
        for (int absent = 0; absent < 2; absent++) {
            const float *do_h = absent ? zero.h : dout.h + t * H,
                        *do_d = absent ? zero.d : dout.d + t * H;
            const float *c_h = with_prev ? cells.h + (t - 1) * H : c0.h;
            const float *c_d = with_prev ? cells.d + (t - 1) * H : c0.d;
            int64_t ldp = with_prev ? T_ * H : H;
            kn_cpu.dlstm_cell(dg.h + t * G, dc.h, do_h, dh_rec.h, gates.h + t * G, cells.h + t * H,
                              c_h, B, H, T_ * G, T_ * H, absent ? 0 : T_ * H, ldp);
            kn_cuda.dlstm_cell(dg.d + t * G, dc.d, do_d, dh_rec.d, gates.d + t * G, cells.d + t * H,
                               c_d, B, H, T_ * G, T_ * H, absent ? 0 : T_ * H, ldp);
            kn_pair_expect(&dg, TOL, "dlstm_cell dgates");
            kn_pair_expect(&dc, TOL, "dlstm_cell dc");
            sync_to_device(&dc);
        }
        struct kn_pair *all[] = {&gates, &cells, &out, &c0, &dg, &dc, &dout, &dh_rec, &zero};
        for (size_t i = 0; i < LG_ARRAY_LEN(all); i++) kn_pair_free(all[i]);
    }
}

Test(gpu_kernels_nn, pinball_loss_and_its_gradients)
{
    lg_gpu_begin();
    int64_t rows = 64 * 24, nq = 3;
    struct kn_pair yhat = kn_pair_new(rows * nq, 250, -2, 2), y = kn_pair_new(rows, 251, -2, 2);
    struct kn_pair q = kn_pair_new(nq, 0, 0, 0), loss = kn_pair_new(1, 0, 0, 0),
                   dloss = kn_pair_new(1, 0, 1.5f, 1.5f);
    float qs[3] = {0.1f, 0.5f, 0.9f};
    memcpy(q.h, qs, sizeof qs);
    sync_to_device(&q);
    yhat.h[5] = y.h[1]; /* a kink: zero gradient there */
    sync_to_device(&yhat);
    kn_cpu.pinball(loss.h, yhat.h, y.h, q.h, rows, nq);
    kn_cuda.pinball(loss.d, yhat.d, y.d, q.d, rows, nq);
    kn_pair_expect(&loss, 1e-6, "pinball loss");
    struct kn_pair dyhat = kn_pair_new(rows * nq, 252, -1, 1), dy = kn_pair_new(rows, 253, -1, 1);
    kn_cpu.dpinball(dyhat.h, dy.h, dloss.h, yhat.h, y.h, q.h, rows, nq);
    kn_cuda.dpinball(dyhat.d, dy.d, dloss.d, yhat.d, y.d, q.d, rows, nq);
    kn_pair_expect(&dyhat, 1e-6, "dpinball dyhat");
    kn_pair_expect(&dy, 1e-6, "dpinball dy");
    kn_cpu.dpinball(NULL, dy.h, dloss.h, yhat.h, y.h, q.h, rows, nq);
    kn_cuda.dpinball(NULL, dy.d, dloss.d, yhat.d, y.d, q.d, rows, nq);
    kn_pair_expect(&dy, 1e-6, "dpinball dy only");
    kn_cpu.pinball(loss.h, yhat.h, y.h, q.h, 0, nq); /* no rows: 0 */
    kn_cuda.pinball(loss.d, yhat.d, y.d, q.d, 0, nq);
    kn_pair_expect(&loss, 0, "pinball of no rows");
    struct kn_pair *all[] = {&yhat, &y, &q, &loss, &dloss, &dyhat, &dy};
    for (size_t i = 0; i < LG_ARRAY_LEN(all); i++) kn_pair_free(all[i]);
}

/* Rows enough for many blocks' parts (and more parts than the limit: longer parts); the loss
 * is the same bits on a second run. */
Test(gpu_kernels_nn, pinball_over_many_blocks)
{
    lg_gpu_begin();
    int64_t nq = 3, sizes[] = {64 * 24 * 50, 4000037};
    for (size_t s = 0; s < LG_ARRAY_LEN(sizes); s++) {
        int64_t rows = sizes[s];
        struct kn_pair yhat = kn_pair_new(rows * nq, 290 + s, -2, 2),
                       y = kn_pair_new(rows, 292 + s, -2, 2);
        struct kn_pair q = kn_pair_new(nq, 0, 0, 0), loss = kn_pair_new(1, 0, 0, 0);
        float qs[3] = {0.1f, 0.5f, 0.9f};
        memcpy(q.h, qs, sizeof qs);
        sync_to_device(&q);
        kn_cpu.pinball(loss.h, yhat.h, y.h, q.h, rows, nq);
        kn_cuda.pinball(loss.d, yhat.d, y.d, q.d, rows, nq);
        kn_pair_expect(&loss, 1e-6, "pinball loss, many blocks");
        float a, b;
        lg_gpu_download(&a, loss.d, sizeof a);
        kn_cuda.pinball(loss.d, yhat.d, y.d, q.d, rows, nq);
        lg_gpu_download(&b, loss.d, sizeof b);
        cr_expect(memcmp(&a, &b, sizeof a) == 0, "the same bits twice: %.9g, %.9g", a, b);
        kn_pair_free(&yhat);
        kn_pair_free(&y);
        kn_pair_free(&q);
        kn_pair_free(&loss);
    }
}

Test(gpu_kernels_nn, fake_quant_per_row_and_per_tensor)
{
    lg_gpu_begin();
    int64_t shapes[][2] = {{640, 160}, {1, 300000}, {3, 5}};
    for (size_t s = 0; s < LG_ARRAY_LEN(shapes); s++) {
        int64_t rows = shapes[s][0], n = shapes[s][1];
        struct kn_pair x = kn_pair_new(rows * n, 260 + s, -1, 1),
                       y = kn_pair_new(rows * n, 0, 0, 0);
        struct kn_pair scale = kn_pair_new(rows, 0, 0, 0), dy = kn_pair_new(rows * n, 261, -1, 1);
        struct kn_pair dx = kn_pair_new(rows * n, 262, -1, 1);
        if (rows > 1) { /* an all-zero row: scale 0 */
            memset(x.h + n, 0, (size_t)n * sizeof(float));
            sync_to_device(&x);
        }
        kn_cpu.fake_quant(y.h, scale.h, x.h, rows, n);
        kn_cuda.fake_quant(y.d, scale.d, x.d, rows, n);
        kn_pair_expect(&scale, 0, "fake_quant scale");
        kn_pair_expect(&y, 0, "fake_quant y");
        kn_cpu.dfake_quant(dx.h, dy.h, x.h, scale.h, rows, n);
        kn_cuda.dfake_quant(dx.d, dy.d, x.d, scale.d, rows, n);
        kn_pair_expect(&dx, 0, "dfake_quant");
        struct kn_pair *all[] = {&x, &y, &scale, &dy, &dx};
        for (size_t i = 0; i < LG_ARRAY_LEN(all); i++) kn_pair_free(all[i]);
    }
}

Test(gpu_kernels_nn, adamw_steps)
{
    lg_gpu_begin();
    int64_t n = 250007;
    struct kn_pair p = kn_pair_new(n, 270, -1, 1), m = kn_pair_new(n, 0, 0, 0),
                   v = kn_pair_new(n, 0, 0, 0);
    struct kn_pair g = kn_pair_new(n, 271, -0.1f, 0.1f);
    for (int t = 1; t <= 5; t++) {
        float bc1 = (float)(1.0 - pow(0.9, t)), bc2 = (float)(1.0 - pow(0.999, t));
        kn_cpu.adamw(p.h, m.h, v.h, g.h, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, bc1, bc2);
        kn_cuda.adamw(p.d, m.d, v.d, g.d, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, bc1, bc2);
    }
    kn_pair_expect(&p, 1e-6, "adamw p");
    kn_pair_expect(&m, 1e-6, "adamw m");
    kn_pair_expect(&v, 1e-6, "adamw v");
    struct kn_pair *all[] = {&p, &m, &v, &g};
    for (size_t i = 0; i < LG_ARRAY_LEN(all); i++) kn_pair_free(all[i]);
}
