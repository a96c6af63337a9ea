/* kernels_cpu.c — the CPU kernel table (kernels.h): memory, GEMM through OpenBLAS, strided
 * elementwise loops, rows (softmax, layer norm), reductions, embedding, the optimizer.
 * The LSTM cell, the losses and fake quantisation are in kernels_cpu_nn.c.
 *
 * Loops are written for the auto-vectoriser (this file is compiled with -O3 -fopenmp-simd):
 * restrict-qualified rows, unit-stride inner loops, `omp simd` on reductions. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels_cpu.h"
#include "kn_math.h"

/* ---- memory ------------------------------------------------------------------------------- */

static void cpu_zero(float *x, int64_t n) { memset(x, 0, (size_t)n * sizeof *x); }

static void cpu_add_scalar(float *restrict x, float v, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] += v;
}

static void cpu_axpy(float *restrict dst, const float *restrict src, float alpha, int64_t n)
{
    if (alpha == 1.0f)
        for (int64_t i = 0; i < n; i++) dst[i] += src[i];
    else
        for (int64_t i = 0; i < n; i++) dst[i] += alpha * src[i];
}

static void cpu_scale(float *y, const float *x, float s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = s * x[i];
}

static void cpu_copy2d(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld_dst,
                       int64_t ld_src)
{
    for (int64_t r = 0; r < rows; r++)
        memcpy(dst + r * ld_dst, src + r * ld_src, (size_t)cols * sizeof *dst);
}

static void cpu_dcopy2d(float *dsrc, const float *ddst, int64_t rows, int64_t cols, int64_t ld_src,
                        int64_t ld_dst)
{
    for (int64_t r = 0; r < rows; r++) cpu_axpy(dsrc + r * ld_src, ddst + r * ld_dst, 1.0f, cols);
}

/* The outer three dims of a geometry: runs body once per innermost row, with row_ the row's
 * number, oa_/ob_ the operands' offsets and po the output row (when out is not NULL). */
#define KN_FOR_ROWS(g, out, ...)                                                                   \
    do {                                                                                           \
        int64_t row_ = 0;                                                                          \
        for (int64_t i0 = 0; i0 < (g)->ne[0]; i0++)                                                \
            for (int64_t i1 = 0; i1 < (g)->ne[1]; i1++)                                            \
                for (int64_t i2 = 0; i2 < (g)->ne[2]; i2++, row_++) {                              \
                    int64_t oa_ = i0 * (g)->sa[0] + i1 * (g)->sa[1] + i2 * (g)->sa[2];             \
                    int64_t ob_ = i0 * (g)->sb[0] + i1 * (g)->sb[1] + i2 * (g)->sb[2];             \
                    float *po = (out) ? (out) + row_ * (g)->ne[3] : NULL;                          \
                    (void)ob_;                                                                     \
                    __VA_ARGS__;                                                                   \
                }                                                                                  \
    } while (0)

static inline void gather_row(float *restrict o, const float *restrict x, int64_t n, int64_t s)
{
    if (s == 1)
        memcpy(o, x, (size_t)n * sizeof *o);
    else if (s == 0)
        for (int64_t j = 0; j < n; j++) o[j] = x[0];
    else
        for (int64_t j = 0; j < n; j++) o[j] = x[j * s];
}

static void cpu_gather(float *out, const float *x, const struct kn_geom *g)
{
    KN_FOR_ROWS(g, out, gather_row(po, x + oa_, g->ne[3], g->sa[3]));
}

static inline void dgather_row(float *restrict dx, const float *restrict dy, int64_t n, int64_t s,
                               float alpha)
{
    if (s == 1) {
        for (int64_t j = 0; j < n; j++) dx[j] += alpha * dy[j];
    } else if (s == 0) {
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = 0; j < n; j++) acc += dy[j];
        dx[0] += alpha * acc;
    } else {
        for (int64_t j = 0; j < n; j++) dx[j * s] += alpha * dy[j];
    }
}

static void cpu_dgather(float *dx, const float *dy, float alpha, const struct kn_geom *g)
{
    KN_FOR_ROWS(g, (float *)NULL,
                dgather_row(dx + oa_, dy + row_ * g->ne[3], g->ne[3], g->sa[3], alpha);
                (void)po);
}

/* ---- GEMM ----------------------------------------------------------------------------------- */

static void cpu_gemm(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n,
                     int k, float alpha, int lda, int ldb, float beta, int ldc)
{
    if (m == 0 || n == 0) return;
    if (k == 0) { /* an empty sum: C = beta·C (BLAS would reject lda = 0) */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                c[(int64_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[(int64_t)i * ldc + j];
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void cpu_gemm_batched(float *c, const float *a, const float *b, bool ta, bool tb, int m,
                             int n, int k, float alpha, int lda, int ldb, float beta, int ldc,
                             int batch, int64_t stride_a, int64_t stride_b, int64_t stride_c)
{
    for (int i = 0; i < batch; i++)
        cpu_gemm(c + i * stride_c, a + i * stride_a, b + i * stride_b, ta, tb, m, n, k, alpha, lda,
                 ldb, beta, ldc);
}

static void cpu_bias_fill(float *y, const float *b1, const float *b2, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        float *restrict yr = y + r * n;
        if (b1 && b2)
            for (int64_t j = 0; j < n; j++) yr[j] = b1[j] + b2[j];
        else if (b1)
            memcpy(yr, b1, (size_t)n * sizeof *yr);
        else if (b2)
            memcpy(yr, b2, (size_t)n * sizeof *yr);
        else
            memset(yr, 0, (size_t)n * sizeof *yr);
    }
}

static void cpu_dbias(float *restrict db, const float *restrict dy, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict d = dy + r * n;
        for (int64_t j = 0; j < n; j++) db[j] += d[j];
    }
}

/* ---- elementwise ---------------------------------------------------------------------------- */

static inline void binary_row(float *restrict o, const float *restrict a, const float *restrict b,
                              int64_t n, int64_t sa, int64_t sb, enum kn_binop op)
{
    /* one loop per (op, stride pattern) so that each vectorises */
#define KN_BIN_LOOPS(EXPR)                                                                         \
    if (sa == 1 && sb == 1)                                                                        \
        for (int64_t j = 0; j < n; j++) {                                                          \
            float x = a[j], z = b[j];                                                              \
            o[j] = EXPR;                                                                           \
        }                                                                                          \
    else if (sa == 1 && sb == 0) {                                                                 \
        float z = b[0];                                                                            \
        for (int64_t j = 0; j < n; j++) {                                                          \
            float x = a[j];                                                                        \
            o[j] = EXPR;                                                                           \
        }                                                                                          \
    } else if (sa == 0 && sb == 1) {                                                               \
        float x = a[0];                                                                            \
        for (int64_t j = 0; j < n; j++) {                                                          \
            float z = b[j];                                                                        \
            o[j] = EXPR;                                                                           \
        }                                                                                          \
    } else                                                                                         \
        for (int64_t j = 0; j < n; j++) {                                                          \
            float x = a[j * sa], z = b[j * sb];                                                    \
            o[j] = EXPR;                                                                           \
        }
    switch (op) {
    case KN_ADD: KN_BIN_LOOPS(x + z); break;
    case KN_SUB: KN_BIN_LOOPS(x - z); break;
    case KN_MUL: KN_BIN_LOOPS(x * z); break;
    }
#undef KN_BIN_LOOPS
}

static void cpu_binary(float *out, const float *a, const float *b, enum kn_binop op,
                       const struct kn_geom *g)
{
    KN_FOR_ROWS(g, out, binary_row(po, a + oa_, b + ob_, g->ne[3], g->sa[3], g->sb[3], op));
}

static inline void dmul_row(float *restrict dx, const float *restrict dy, const float *restrict o,
                            int64_t n, int64_t sx, int64_t so)
{
    if (sx == 1 && so == 1) {
        for (int64_t j = 0; j < n; j++) dx[j] += dy[j] * o[j];
    } else if (sx == 1 && so == 0) {
        float z = o[0];
        for (int64_t j = 0; j < n; j++) dx[j] += dy[j] * z;
    } else if (sx == 0 && so == 1) {
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = 0; j < n; j++) acc += dy[j] * o[j];
        dx[0] += acc;
    } else if (sx == 0 && so == 0) {
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = 0; j < n; j++) acc += dy[j];
        dx[0] += acc * o[0];
    } else {
        for (int64_t j = 0; j < n; j++) dx[j * sx] += dy[j] * o[j * so];
    }
}

static void cpu_dmul(float *dx, const float *dy, const float *other, const struct kn_geom *g)
{
    KN_FOR_ROWS(g, (float *)NULL,
                dmul_row(dx + oa_, dy + row_ * g->ne[3], other + ob_, g->ne[3], g->sa[3], g->sb[3]);
                (void)po);
}

static void cpu_sigmoid(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = kn_sigmoid(x[i]);
}

static void cpu_dsigmoid(float *restrict dx, const float *restrict y, const float *restrict dy,
                         int64_t n)
{
    for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * y[i] * (1.0f - y[i]);
}

static void cpu_tanh(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = kn_tanh(x[i]);
}

static void cpu_dtanh(float *restrict dx, const float *restrict y, const float *restrict dy,
                      int64_t n)
{
    for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

static void cpu_elu(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float e = kn_exp(x[i]) - 1.0f;
        y[i] = x[i] > 0.0f ? x[i] : e;
    }
}

/* y > 0 exactly where x > 0; below, dy/dx = e^x = y + 1 */
static void cpu_delu(float *restrict dx, const float *restrict y, const float *restrict dy,
                     int64_t n)
{
    for (int64_t i = 0; i < n; i++) dx[i] += y[i] > 0.0f ? dy[i] : dy[i] * (y[i] + 1.0f);
}

static void cpu_dropout(float *restrict y, int8_t *restrict mask, const float *restrict x, float p,
                        float scale, uint64_t seed, int64_t n)
{
    uint32_t s0 = (uint32_t)seed, s1 = (uint32_t)(seed >> 32);
    for (int64_t i = 0; i < n; i++) { /* the hash (kn_math.h): a draw depends on i, not the order */
        int8_t keep = kn_dropout_keep(i, s0, s1, p);
        mask[i] = keep;
        y[i] = keep ? x[i] * scale : 0.0f;
    }
}

static void cpu_ddropout(float *restrict dx, const float *restrict dy, const int8_t *restrict mask,
                         float scale, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dx[i] += mask[i] ? dy[i] * scale : 0.0f;
}

/* ---- rows: softmax and layer norm ----------------------------------------------------------- */

static void cpu_softmax(float *y, const float *x, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * n;
        float *restrict yr = y + r * n;
        float mx = -INFINITY;
        for (int64_t j = 0; j < n; j++) mx = xr[j] > mx ? xr[j] : mx;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < n; j++) {
            yr[j] = kn_exp(xr[j] - mx);
            sum += yr[j];
        }
        float inv = 1.0f / sum;
        for (int64_t j = 0; j < n; j++) yr[j] *= inv;
    }
}

static void cpu_dsoftmax(float *dx, const float *y, const float *dy, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict yr = y + r * n, *restrict dyr = dy + r * n;
        float *restrict dxr = dx + r * n;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t j = 0; j < n; j++) dot += yr[j] * dyr[j];
        for (int64_t j = 0; j < n; j++) dxr[j] += yr[j] * (dyr[j] - dot);
    }
}

static void cpu_layernorm(float *y, float *mean, float *rstd, const float *x, const float *w,
                          const float *b, int64_t rows, int64_t n, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * n;
        float *restrict yr = y + r * n;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < n; j++) s += xr[j];
        float m = s / (float)n, v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int64_t j = 0; j < n; j++) v += (xr[j] - m) * (xr[j] - m);
        float rs = 1.0f / sqrtf(v / (float)n + eps);
        for (int64_t j = 0; j < n; j++) yr[j] = (xr[j] - m) * rs * w[j] + b[j];
        mean[r] = m;
        rstd[r] = rs;
    }
}

static void cpu_dlayernorm(float *dx, float *dw, float *db, const float *dy, const float *x,
                           const float *mean, const float *rstd, const float *w, int64_t rows,
                           int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * n, *restrict dyr = dy + r * n;
        float m = mean[r], rs = rstd[r];
        if (db)
            for (int64_t j = 0; j < n; j++) db[j] += dyr[j];
        if (dw)
            for (int64_t j = 0; j < n; j++) dw[j] += (xr[j] - m) * rs * dyr[j];
        if (!dx) continue;
        float *restrict dxr = dx + r * n;
        float dn_mean = 0.0f, dn_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dn_mean, dn_norm_mean)
        for (int64_t j = 0; j < n; j++) {
            float dn = w[j] * dyr[j];
            dn_mean += dn;
            dn_norm_mean += dn * (xr[j] - m) * rs;
        }
        dn_mean /= (float)n;
        dn_norm_mean /= (float)n;
        for (int64_t j = 0; j < n; j++) {
            float norm = (xr[j] - m) * rs;
            dxr[j] += (w[j] * dyr[j] - dn_mean - norm * dn_norm_mean) * rs;
        }
    }
}

/* ---- reductions ----------------------------------------------------------------------------- */

static void cpu_sum_axis(float *y, const float *x, int64_t outer, int64_t n, int64_t inner,
                         float alpha)
{
    for (int64_t o = 0; o < outer; o++) {
        const float *restrict xo = x + o * n * inner;
        float *restrict yo = y + o * inner;
        if (inner == 1) {
            double acc = 0.0;
#pragma omp simd reduction(+ : acc)
            for (int64_t k = 0; k < n; k++) acc += xo[k];
            yo[0] = (float)(alpha * acc);
            continue;
        }
        memcpy(yo, xo, (size_t)inner * sizeof *yo);
        for (int64_t k = 1; k < n; k++)
            for (int64_t i = 0; i < inner; i++) yo[i] += xo[k * inner + i];
        for (int64_t i = 0; i < inner; i++) yo[i] *= alpha;
    }
}

static void cpu_dsum_axis(float *dx, const float *dy, int64_t outer, int64_t n, int64_t inner,
                          float alpha)
{
    for (int64_t o = 0; o < outer; o++) {
        float *restrict dxo = dx + o * n * inner;
        const float *restrict dyo = dy + o * inner;
        if (inner == 1) {
            float v = alpha * dyo[0];
            for (int64_t k = 0; k < n; k++) dxo[k] += v;
            continue;
        }
        for (int64_t k = 0; k < n; k++)
            for (int64_t i = 0; i < inner; i++) dxo[k * inner + i] += alpha * dyo[i];
    }
}

static double cpu_sumsq(const float *x, int64_t n)
{
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; i++) acc += (double)x[i] * x[i];
    return acc;
}

static double cpu_sumsq_many(const float *const *x, const int64_t *n, int count)
{
    double acc = 0.0;
    for (int i = 0; i < count; i++) acc += n[i] > 0 ? cpu_sumsq(x[i], n[i]) : 0.0;
    return acc;
}

/* ---- embedding ------------------------------------------------------------------------------ */

static void cpu_embedding(float *y, const float *w, const int32_t *idx, int64_t n_idx, int64_t h)
{
    for (int64_t r = 0; r < n_idx; r++)
        memcpy(y + r * h, w + (int64_t)idx[r] * h, (size_t)h * sizeof *y);
}

static void cpu_dembedding(float *dw, const float *dy, const int32_t *idx, int64_t n_idx, int64_t h)
{
    for (int64_t r = 0; r < n_idx; r++) cpu_axpy(dw + (int64_t)idx[r] * h, dy + r * h, 1.0f, h);
}

/* ---- the optimizer -------------------------------------------------------------------------- */

/* PyTorch's AdamW: p ← p·(1 − lr·wd); m, v updated; p ← p − (lr/bc1)·m / (√v/√bc2 + eps) */
static void cpu_adamw(float *restrict p, float *restrict m, float *restrict v,
                      const float *restrict g, int64_t n, float lr, float beta1, float beta2,
                      float eps, float wd, float bc1, float bc2)
{
    float decay = 1.0f - lr * wd, step = lr / bc1, inv_sqrt_bc2 = 1.0f / sqrtf(bc2);
    for (int64_t i = 0; i < n; i++)
        kn_adamw_elem(&p[i], &m[i], &v[i], g[i], beta1, beta2, eps, decay, step, inv_sqrt_bc2);
}

/* ---- the table ------------------------------------------------------------------------------- */

const struct kn_backend kn_cpu = {
    .name = "cpu",
    .zero = cpu_zero,
    .add_scalar = cpu_add_scalar,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .copy2d = cpu_copy2d,
    .dcopy2d = cpu_dcopy2d,
    .gather = cpu_gather,
    .dgather = cpu_dgather,
    .gemm = cpu_gemm,
    .gemm_batched = cpu_gemm_batched,
    .bias_fill = cpu_bias_fill,
    .dbias = cpu_dbias,
    .binary = cpu_binary,
    .dmul = cpu_dmul,
    .sigmoid = cpu_sigmoid,
    .dsigmoid = cpu_dsigmoid,
    .tanh = cpu_tanh,
    .dtanh = cpu_dtanh,
    .elu = cpu_elu,
    .delu = cpu_delu,
    .dropout = cpu_dropout,
    .ddropout = cpu_ddropout,
    .softmax = cpu_softmax,
    .dsoftmax = cpu_dsoftmax,
    .layernorm = cpu_layernorm,
    .dlayernorm = cpu_dlayernorm,
    .sum_axis = cpu_sum_axis,
    .dsum_axis = cpu_dsum_axis,
    .sumsq = cpu_sumsq,
    .sumsq_many = cpu_sumsq_many,
    .embedding = cpu_embedding,
    .dembedding = cpu_dembedding,
    .lstm_cell = kn_cpu_lstm_cell,
    .dlstm_cell = kn_cpu_dlstm_cell,
    .pinball = kn_cpu_pinball,
    .dpinball = kn_cpu_dpinball,
    .fake_quant = kn_cpu_fake_quant,
    .dfake_quant = kn_cpu_dfake_quant,
    .adamw = cpu_adamw,
};

const struct kn_backend *kn_backend_for(enum tn_device dev)
{
#ifdef LG_HAVE_CUDA
    if (dev == TN_CUDA) return &kn_cuda;
#endif
    return dev == TN_CPU ? &kn_cpu : NULL;
}
