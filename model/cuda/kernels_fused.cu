/* kernels_fused.cu — CUDA kernels of the fused blocks of kn_cuda: GateAddNorm forward and back
 * (one warp per row, like the layer norm; its weight and bias gradients are the layer norm's
 * column sums over the saved sum) and one term of a weighted sum of rows with its backward.
 * Formulas are those of kernels_cpu_nn.c, term for term. */
#include <math.h>

#include "cuda_impl.h"

/* ---- GateAddNorm: LN(skip + a ⊙ σ(g)) -------------------------------------------------------- */

__global__ void k_gate_add_norm(float *y /* [rows, d] */, float *s /* [rows, d] */,
                                float *mean /* [rows] */, float *rstd /* [rows] */,
                                const float *z /* [rows, 2d] */, const float *skip /* [rows, d] */,
                                const float *w /* [d] */, const float *b /* [d] */, int64_t rows,
                                int64_t d, float eps)
{
    int lane = threadIdx.x & 31;
    KN_WARP_ROWS(r, rows)
    {
        const float *za = z + r * 2 * d, *zg = za + d, *sk = skip + r * d;
        float *sr = s + r * d, *yr = y + r * d;
        float sum = 0.0f;
        for (int64_t j = lane; j < d; j += 32) {
            float v = sk[j] + za[j] * kn_dsigmoid(zg[j]);
            sr[j] = v;
            sum += v;
        }
        kn_warp_ln_row(yr, &mean[r], &rstd[r], sr, w, b, sum, d, eps, lane);
    }
}

void kn_cuda_gate_add_norm(float *y, float *s, float *mean, float *rstd, const float *z,
                           const float *skip, const float *w, const float *b, int64_t rows,
                           int64_t d, float eps)
{
    if (rows <= 0 || d <= 0) return;
    k_gate_add_norm<<<kn_row_grid(rows), KN_THREADS>>>(y, s, mean, rstd, z, skip, w, b, rows, d,
                                                       eps);
    KN_CHECK_LAUNCH("k_gate_add_norm");
}

__global__ void k_dgate_add_norm(float *dz /* [rows, 2d] or NULL */,
                                 float *dskip /* [rows, d] or NULL */,
                                 const float *dy /* [rows, d] */, const float *z /* [rows, 2d] */,
                                 const float *s /* [rows, d] */, const float *mean /* [rows] */,
                                 const float *rstd /* [rows] */, const float *w /* [d] */,
                                 int64_t rows, int64_t d, bool dz_acc)
{
    int lane = threadIdx.x & 31;
    KN_WARP_ROWS(r, rows)
    {
        const float *dyr = dy + r * d, *sr = s + r * d, *za = z + r * 2 * d, *zg = za + d;
        float m = mean[r], rs = rstd[r], dn_mean, dn_norm_mean;
        kn_warp_ln_dmeans(&dn_mean, &dn_norm_mean, w, dyr, sr, m, rs, d, lane);
        for (int64_t j = lane; j < d; j += 32) {
            float ds = (w[j] * dyr[j] - dn_mean - (sr[j] - m) * rs * dn_norm_mean) * rs;
            if (dskip) dskip[r * d + j] += ds;
            if (!dz) continue;
            float sg = kn_dsigmoid(zg[j]);
            float va = ds * sg, vg = ds * za[j] * sg * (1.0f - sg);
            float *dza = dz + r * 2 * d, *dzg = dza + d;
            dza[j] = dz_acc ? dza[j] + va : va;
            dzg[j] = dz_acc ? dzg[j] + vg : vg;
        }
    }
}

void kn_cuda_dgate_add_norm(float *dz, float *dskip, float *dw, float *db, const float *dy,
                            const float *z, const float *s, const float *mean, const float *rstd,
                            const float *w, int64_t rows, int64_t d, bool dz_acc)
{
    if (rows <= 0 || d <= 0) return;
    if (dw || db) kn_cuda_dlayernorm(NULL, dw, db, dy, s, mean, rstd, w, rows, d);
    if (!dz && !dskip) return;
    k_dgate_add_norm<<<kn_row_grid(rows), KN_THREADS>>>(dz, dskip, dy, z, s, mean, rstd, w, rows, d,
                                                        dz_acc);
    KN_CHECK_LAUNCH("k_dgate_add_norm");
}

/* ---- one term of a weighted sum of rows ------------------------------------------------------ */

__global__ void k_weighted_add(float *y /* [rows, h] */, const float *x /* [rows, h] */,
                               const float *v /* [rows, ldv] */, int64_t j, int64_t ldv,
                               int64_t rows, int64_t h, bool acc)
{
    KN_LOOP(i, rows * h)
    {
        float c = v[(i / h) * ldv + j] * x[i];
        y[i] = acc ? y[i] + c : c;
    }
}

void kn_cuda_weighted_add(float *y, const float *x, const float *v, int64_t j, int64_t ldv,
                          int64_t rows, int64_t h, bool acc)
{
    if (rows <= 0 || h <= 0) return;
    k_weighted_add<<<kn_grid(rows * h), KN_THREADS>>>(y, x, v, j, ldv, rows, h, acc);
    KN_CHECK_LAUNCH("k_weighted_add");
}

/* one warp per row: dv[r, j] += x[r]·dy[r] (a warp sum), dx[r] += v[r, j]·dy[r] */
__global__ void k_dweighted_add(float *dx /* [rows, h] or NULL */, float *dv /* [rows, ldv] */,
                                const float *dy /* [rows, h] */, const float *x /* [rows, h] */,
                                const float *v /* [rows, ldv] */, int64_t j, int64_t ldv,
                                int64_t rows, int64_t h)
{
    int lane = threadIdx.x & 31;
    KN_WARP_ROWS(r, rows)
    {
        const float *dyr = dy + r * h, *xr = x + r * h;
        float c = v[r * ldv + j], dot = 0.0f;
        for (int64_t k = lane; k < h; k += 32) {
            dot += xr[k] * dyr[k];
            if (dx) dx[r * h + k] += c * dyr[k];
        }
        dot = kn_warp_sum(dot);
        if (dv && lane == 0) dv[r * ldv + j] += dot;
    }
}

void kn_cuda_dweighted_add(float *dx, float *dv, const float *dy, const float *x, const float *v,
                           int64_t j, int64_t ldv, int64_t rows, int64_t h)
{
    if (rows <= 0 || h <= 0 || (!dx && !dv)) return;
    k_dweighted_add<<<kn_row_grid(rows), KN_THREADS>>>(dx, dv, dy, x, v, j, ldv, rows, h);
    KN_CHECK_LAUNCH("k_dweighted_add");
}
