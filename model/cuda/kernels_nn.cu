/* kernels_nn.cu — CUDA kernels of the row-wise and network-level members of kn_cuda: softmax
 * and layer norm (one warp per row; the weight and bias gradients as coalesced column sums),
 * one LSTM time step forward and back (one thread per element), the pinball loss (a multi-block
 * reduction), fake quantisation (one block per row) and AdamW. Formulas are
 * those of kernels_cpu.c and kernels_cpu_nn.c, term for term. */
#include <math.h>

#include "cuda_impl.h"

/* ---- softmax --------------------------------------------------------------------------------- */

__global__ void k_softmax(float *y /* [rows, n] */, const float *x /* [rows, n] */, int64_t rows,
                          int64_t n)
{
    int lane = threadIdx.x & 31;
    KN_WARP_ROWS(r, rows)
    {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float mx = -INFINITY;
        for (int64_t j = lane; j < n; j += 32) mx = xr[j] > mx ? xr[j] : mx;
        mx = kn_warp_max(mx);
        float sum = 0.0f;
        for (int64_t j = lane; j < n; j += 32) {
            float e = kn_dexp(xr[j] - mx);
            yr[j] = e;
            sum += e;
        }
        float inv = 1.0f / kn_warp_sum(sum);
        for (int64_t j = lane; j < n; j += 32) yr[j] *= inv;
    }
}

void kn_cuda_softmax(float *y, const float *x, int64_t rows, int64_t n)
{
    if (rows <= 0 || n <= 0) return;
    k_softmax<<<kn_row_grid(rows), KN_THREADS>>>(y, x, rows, n);
    KN_CHECK_LAUNCH("k_softmax");
}

__global__ void k_dsoftmax(float *dx /* [rows, n] */, const float *y /* [rows, n] */,
                           const float *dy /* [rows, n] */, int64_t rows, int64_t n)
{
    int lane = threadIdx.x & 31;
    KN_WARP_ROWS(r, rows)
    {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        float dot = 0.0f;
        for (int64_t j = lane; j < n; j += 32) dot += yr[j] * dyr[j];
        dot = kn_warp_sum(dot);
        for (int64_t j = lane; j < n; j += 32) dxr[j] += yr[j] * (dyr[j] - dot);
    }
}

void kn_cuda_dsoftmax(float *dx, const float *y, const float *dy, int64_t rows, int64_t n)
{
    if (rows <= 0 || n <= 0) return;
    k_dsoftmax<<<kn_row_grid(rows), KN_THREADS>>>(dx, y, dy, rows, n);
    KN_CHECK_LAUNCH("k_dsoftmax");
}

/* ---- layer norm ------------------------------------------------------------------------------ */

__global__ void k_layernorm(float *y /* [rows, n] */, float *mean /* [rows] */,
                            float *rstd /* [rows] */, const float *x /* [rows, n] */,
                            const float *w /* [n] */, const float *b /* [n] */, int64_t rows,
                            int64_t n, float eps)
{
    int lane = threadIdx.x & 31;
    KN_WARP_ROWS(r, rows)
    {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float s = 0.0f;
        for (int64_t j = lane; j < n; j += 32) s += xr[j];
        kn_warp_ln_row(yr, &mean[r], &rstd[r], xr, w, b, s, n, eps, lane);
    }
}

void kn_cuda_layernorm(float *y, float *mean, float *rstd, const float *x, const float *w,
                       const float *b, int64_t rows, int64_t n, float eps)
{
    if (rows <= 0 || n <= 0) return;
    k_layernorm<<<kn_row_grid(rows), KN_THREADS>>>(y, mean, rstd, x, w, b, rows, n, eps);
    KN_CHECK_LAUNCH("k_layernorm");
}

/* dx: one warp per row */
__global__ void k_dlayernorm_dx(float *dx /* [rows, n] */, const float *dy /* [rows, n] */,
                                const float *x /* [rows, n] */, const float *mean /* [rows] */,
                                const float *rstd /* [rows] */, const float *w /* [n] */,
                                int64_t rows, int64_t n)
{
    int lane = threadIdx.x & 31;
    KN_WARP_ROWS(r, rows)
    {
        const float *xr = x + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        float m = mean[r], rs = rstd[r], dn_mean, dn_norm_mean;
        kn_warp_ln_dmeans(&dn_mean, &dn_norm_mean, w, dyr, xr, m, rs, n, lane);
        for (int64_t j = lane; j < n; j += 32) {
            float norm = (xr[j] - m) * rs;
            dxr[j] += (w[j] * dyr[j] - dn_mean - norm * dn_norm_mean) * rs;
        }
    }
}

/* dw, db: column sums over the rows, read row by row so that a warp's 32 lanes load 32
 * consecutive columns (one coalesced 128-byte line per row). A block is 32 columns × 8 row
 * lanes; the grid's y dimension cuts the rows into slices. Each thread adds its rows in order,
 * the 8 lanes are added in lane order, and with more than one slice each slice's sums go to
 * module scratch that k_dlayernorm_wb_sum adds in slice order. The cut depends only on rows
 * and n: the same bits every run. */
#define LNWB_COLS       32
#define LNWB_LANES      8
#define LNWB_MAX_SLICES 64
#define LNWB_SCRATCH    (1 << 16)               /* floats per table: slices · n */
__device__ float kn_lnwb_part[2][LNWB_SCRATCH]; /* [0]: dw, [1]: db; [slices, n] each */

__global__ void k_dlayernorm_wb(float *dw /* [n] or NULL */, float *db /* [n] or NULL */,
                                const float *dy /* [rows, n] */, const float *x /* [rows, n] */,
                                const float *mean /* [rows] */, const float *rstd /* [rows] */,
                                int64_t rows, int64_t n, int64_t rows_per_slice)
{
    __shared__ float sw[LNWB_LANES][LNWB_COLS], sb[LNWB_LANES][LNWB_COLS];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t j = (int64_t)blockIdx.x * LNWB_COLS + tx;
    int64_t r0 = (int64_t)blockIdx.y * rows_per_slice, r1 = r0 + rows_per_slice;
    if (r1 > rows) r1 = rows;
    float aw = 0.0f, ab = 0.0f;
    if (j < n) {
        for (int64_t r = r0 + ty; r < r1; r += LNWB_LANES) {
            float d = dy[r * n + j];
            ab += d;
            if (dw) aw += (x[r * n + j] - mean[r]) * rstd[r] * d;
        }
    }
    sw[ty][tx] = aw;
    sb[ty][tx] = ab;
    __syncthreads();
    if (ty != 0 || j >= n) return;
    float tw = 0.0f, tb = 0.0f;
    for (int k = 0; k < LNWB_LANES; k++) {
        tw += sw[k][tx];
        tb += sb[k][tx];
    }
    if (gridDim.y > 1) {
        kn_lnwb_part[0][blockIdx.y * n + j] = tw;
        kn_lnwb_part[1][blockIdx.y * n + j] = tb;
        return;
    }
    if (dw) dw[j] += tw;
    if (db) db[j] += tb;
}

__global__ void k_dlayernorm_wb_sum(float *dw /* [n] or NULL */, float *db /* [n] or NULL */,
                                    int64_t n, int slices)
{
    KN_LOOP(j, n)
    {
        float tw = 0.0f, tb = 0.0f;
        for (int s = 0; s < slices; s++) {
            tw += kn_lnwb_part[0][s * n + j];
            tb += kn_lnwb_part[1][s * n + j];
        }
        if (dw) dw[j] += tw;
        if (db) db[j] += tb;
    }
}

/* Slices for rows × n: enough blocks to fill the device (about 512), at least 64 rows each,
 * and slices · n within the scratch. */
static int lnwb_slices(int64_t rows, int64_t n, int64_t *rows_per_slice)
{
    int64_t bx = (n + LNWB_COLS - 1) / LNWB_COLS, s = (512 + bx - 1) / bx;
    if (s > (rows + 63) / 64) s = (rows + 63) / 64;
    if (s > LNWB_MAX_SLICES) s = LNWB_MAX_SLICES;
    if (s > LNWB_SCRATCH / n) s = LNWB_SCRATCH / n;
    if (s < 1) s = 1;
    *rows_per_slice = (rows + s - 1) / s;
    return (int)((rows + *rows_per_slice - 1) / *rows_per_slice); /* no empty slice */
}

void kn_cuda_dlayernorm(float *dx, float *dw, float *db, const float *dy, const float *x,
                        const float *mean, const float *rstd, const float *w, int64_t rows,
                        int64_t n)
{
    if (rows <= 0 || n <= 0) return;
    if (dw || db) {
        int64_t per = 0;
        int slices = lnwb_slices(rows, n, &per);
        int64_t bx = (n + LNWB_COLS - 1) / LNWB_COLS;
        LG_ASSERT(bx <= INT32_MAX && "kn_cuda_dlayernorm: n too large for the grid");
        dim3 grid((unsigned)bx, (unsigned)slices), block(LNWB_COLS, LNWB_LANES);
        k_dlayernorm_wb<<<grid, block>>>(dw, db, dy, x, mean, rstd, rows, n, per);
        KN_CHECK_LAUNCH("k_dlayernorm_wb");
        if (slices > 1) {
            k_dlayernorm_wb_sum<<<kn_grid(n), KN_THREADS>>>(dw, db, n, slices);
            KN_CHECK_LAUNCH("k_dlayernorm_wb_sum");
        }
    }
    if (dx) {
        k_dlayernorm_dx<<<kn_row_grid(rows), KN_THREADS>>>(dx, dy, x, mean, rstd, w, rows, n);
        KN_CHECK_LAUNCH("k_dlayernorm_dx");
    }
}

/* ---- LSTM cell (gate order i, f, g, o) ------------------------------------------------------- */

__global__ void k_lstm_cell(float *gates /* [B, ldg] in-place, 4H used */, float *c /* [B, ldc] */,
                            float *h /* [B, ldh] */, const float *c_prev /* [B, ldcp] or NULL */,
                            int64_t B, int64_t H, int64_t ldg, int64_t ldc, int64_t ldh,
                            int64_t ldcp)
{
    KN_LOOP(t, B * H)
    {
        int64_t b = t / H, j = t % H;
        float *g = gates + b * ldg;
        float i = kn_dsigmoid(g[j]), f = kn_dsigmoid(g[H + j]), gg = kn_dtanh(g[2 * H + j]),
              o = kn_dsigmoid(g[3 * H + j]);
        float cn = c_prev ? i * gg + f * c_prev[b * ldcp + j] : i * gg;
        g[j] = i, g[H + j] = f, g[2 * H + j] = gg, g[3 * H + j] = o;
        c[b * ldc + j] = cn;
        h[b * ldh + j] = o * kn_dtanh(cn);
    }
}

void kn_cuda_lstm_cell(float *gates, float *c, float *h, const float *c_prev, int64_t B, int64_t H,
                       int64_t ldg, int64_t ldc, int64_t ldh, int64_t ldcp)
{
    if (B <= 0 || H <= 0) return;
    k_lstm_cell<<<kn_grid(B * H), KN_THREADS>>>(gates, c, h, c_prev, B, H, ldg, ldc, ldh, ldcp);
    KN_CHECK_LAUNCH("k_lstm_cell");
}

/* h = o·tanh(c), c = f·c_prev + i·g (kernels_cpu_nn.c has the derivation) */
__global__ void k_dlstm_cell(float *dg /* [B, ldg] (written) */, float *dc /* [B, H] in-place */,
                             const float *dout /* [B, ldh] */, const float *dh_rec /* [B, H] */,
                             const float *gates /* [B, ldg] */, const float *c /* [B, ldc] */,
                             const float *c_prev /* [B, ldcp] */, int64_t B, int64_t H, int64_t ldg,
                             int64_t ldc, int64_t ldh, int64_t ldcp)
{
    KN_LOOP(t, B * H)
    {
        int64_t b = t / H, j = t % H;
        const float *g = gates + b * ldg;
        float *d = dg + b * ldg;
        float i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
        float dh = dout[b * ldh + j] + dh_rec[b * H + j];
        float tc = kn_dtanh(c[b * ldc + j]);
        float dcv = dc[b * H + j] + dh * o * (1.0f - tc * tc);
        d[j] = dcv * gg * i * (1.0f - i);
        d[H + j] = dcv * c_prev[b * ldcp + j] * f * (1.0f - f);
        d[2 * H + j] = dcv * i * (1.0f - gg * gg);
        d[3 * H + j] = dh * tc * o * (1.0f - o);
        dc[b * H + j] = dcv * f;
    }
}

void kn_cuda_dlstm_cell(float *dg, float *dc, const float *dout, const float *dh_rec,
                        const float *gates, const float *c, const float *c_prev, int64_t B,
                        int64_t H, int64_t ldg, int64_t ldc, int64_t ldh, int64_t ldcp)
{
    if (B <= 0 || H <= 0) return;
    k_dlstm_cell<<<kn_grid(B * H), KN_THREADS>>>(dg, dc, dout, dh_rec, gates, c, c_prev, B, H, ldg,
                                                 ldc, ldh, ldcp);
    KN_CHECK_LAUNCH("k_dlstm_cell");
}

/* ---- pinball loss ---------------------------------------------------------------------------- */

/* Σ over rows·nq in double (as the CPU sums), in parts of `per_part` elements: one block per
 * part (a fixed tree) into kn_pinball_part, then one block adds the parts in order and
 * divides. The parts depend only on rows·nq: the same bits every run. */
#define PINBALL_MAX_PARTS 1024
#define PINBALL_MIN_PART  (KN_THREADS * 8)
__device__ double kn_pinball_part[PINBALL_MAX_PARTS];

__global__ void k_pinball_parts(const float *yhat /* [rows, nq] */, const float *y /* [rows] */,
                                const float *q /* [nq] */, int64_t rows, int64_t nq,
                                int64_t per_part)
{
    __shared__ double sh[32];
    int64_t begin = (int64_t)blockIdx.x * per_part, end = begin + per_part;
    if (end > rows * nq) end = rows * nq;
    double acc = 0.0;
    for (int64_t t = begin + threadIdx.x; t < end; t += blockDim.x) {
        int64_t r = t / nq, k = t % nq;
        float e = y[r] - yhat[t];
        acc += (double)(e > 0.0f ? q[k] * e : (q[k] - 1.0f) * e);
    }
    acc = kn_block_sum(acc, sh);
    if (threadIdx.x == 0) kn_pinball_part[blockIdx.x] = acc;
}

__global__ void k_pinball_sum(float *loss /* [1] */, int64_t parts, int64_t rows)
{
    __shared__ double sh[32];
    double acc = 0.0;
    for (int64_t p = threadIdx.x; p < parts; p += blockDim.x) acc += kn_pinball_part[p];
    acc = kn_block_sum(acc, sh);
    if (threadIdx.x == 0) loss[0] = rows ? (float)(acc / (double)rows) : 0.0f;
}

void kn_cuda_pinball(float *loss, const float *yhat, const float *y, const float *q, int64_t rows,
                     int64_t nq)
{
    int64_t total = rows > 0 && nq > 0 ? rows * nq : 0, parts = 0;
    if (total) {
        int64_t per = (total + PINBALL_MAX_PARTS - 1) / PINBALL_MAX_PARTS;
        per = per < PINBALL_MIN_PART ? PINBALL_MIN_PART
                                     : (per + KN_THREADS - 1) / KN_THREADS * KN_THREADS;
        parts = (total + per - 1) / per;
        k_pinball_parts<<<(unsigned)parts, KN_THREADS>>>(yhat, y, q, rows, nq, per);
        KN_CHECK_LAUNCH("k_pinball_parts");
    }
    k_pinball_sum<<<1, 1024>>>(loss, parts, rows); /* no rows: 0 */
    KN_CHECK_LAUNCH("k_pinball_sum");
}

/* one thread per row: dy[r] collects its quantiles in order */
__global__ void k_dpinball(float *dyhat /* [rows, nq] or NULL */, float *dy /* [rows] or NULL */,
                           const float *dloss /* [1] */, const float *yhat /* [rows, nq] */,
                           const float *y /* [rows] */, const float *q /* [nq] */, int64_t rows,
                           int64_t nq)
{
    float s = rows ? dloss[0] / (float)rows : 0.0f;
    KN_LOOP(r, rows)
    {
        for (int64_t k = 0; k < nq; k++) {
            float e = y[r] - yhat[r * nq + k];
            float d = e > 0.0f ? -q[k] : (e < 0.0f ? 1.0f - q[k] : 0.0f);
            if (dyhat) dyhat[r * nq + k] += s * d;
            if (dy) dy[r] -= s * d;
        }
    }
}

void kn_cuda_dpinball(float *dyhat, float *dy, const float *dloss, const float *yhat,
                      const float *y, const float *q, int64_t rows, int64_t nq)
{
    if (rows <= 0 || (!dyhat && !dy)) return;
    k_dpinball<<<kn_grid(rows), KN_THREADS>>>(dyhat, dy, dloss, yhat, y, q, rows, nq);
    KN_CHECK_LAUNCH("k_dpinball");
}

/* ---- fake quantisation (symmetric int8 per row) ---------------------------------------------- */

__device__ inline float kn_block_max(float v, float *sh)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = kn_warp_max(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    return kn_warp_max(lane < nw ? sh[lane] : 0.0f);
}

__global__ void k_fake_quant(float *y /* [rows, n] */, float *scale /* [rows] (written) */,
                             const float *x /* [rows, n] */, int64_t rows, int64_t n)
{
    __shared__ float sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float amax = 0.0f;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            float a = fabsf(xr[j]);
            amax = a > amax ? a : amax;
        }
        amax = kn_block_max(amax, sh);
        float s = amax / 127.0f, inv = s > 0.0f ? 1.0f / s : 0.0f;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            float v = rintf(xr[j] * inv);
            v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
            yr[j] = v * s;
        }
        if (threadIdx.x == 0) scale[r] = s;
    }
}

void kn_cuda_fake_quant(float *y, float *scale, const float *x, int64_t rows, int64_t n)
{
    if (rows <= 0 || n <= 0) return;
    k_fake_quant<<<(unsigned)(rows < 65535 ? rows : 65535), KN_THREADS>>>(y, scale, x, rows, n);
    KN_CHECK_LAUNCH("k_fake_quant");
}

__global__ void k_dfake_quant(float *dx /* [rows, n] */, const float *dy /* [rows, n] */,
                              const float *x /* [rows, n] */, const float *scale /* [rows] */,
                              int64_t rows, int64_t n)
{
    KN_LOOP(t, rows * n)
    {
        float sc = scale[t / n], inv = sc > 0.0f ? 1.0f / sc : 0.0f;
        dx[t] += fabsf(x[t]) * inv < 127.5f ? dy[t] : 0.0f;
    }
}

void kn_cuda_dfake_quant(float *dx, const float *dy, const float *x, const float *scale,
                         int64_t rows, int64_t n)
{
    if (rows <= 0 || n <= 0) return;
    k_dfake_quant<<<kn_grid(rows * n), KN_THREADS>>>(dx, dy, x, scale, rows, n);
    KN_CHECK_LAUNCH("k_dfake_quant");
}

/* ---- AdamW: PyTorch's update, as cpu_adamw --------------------------------------------------- */

__global__ void k_adamw(float *p /* [n] */, float *m /* [n] */, float *v /* [n] */,
                        const float *g /* [n] */, int64_t n, float beta1, float beta2, float eps,
                        float decay, float step, float inv_sqrt_bc2)
{
    KN_LOOP(i, n)
    kn_adamw_elem(&p[i], &m[i], &v[i], g[i], beta1, beta2, eps, decay, step, inv_sqrt_bc2);
}

void kn_cuda_adamw(float *p, float *m, float *v, const float *g, int64_t n, float lr, float beta1,
                   float beta2, float eps, float wd, float bc1, float bc2)
{
    if (n <= 0) return;
    float decay = 1.0f - lr * wd, step = lr / bc1, inv_sqrt_bc2 = 1.0f / sqrtf(bc2);
    k_adamw<<<kn_grid(n), KN_THREADS>>>(p, m, v, g, n, beta1, beta2, eps, decay, step,
                                        inv_sqrt_bc2);
    KN_CHECK_LAUNCH("k_adamw");
}
