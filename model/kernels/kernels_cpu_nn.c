/* kernels_cpu_nn.c — CPU kernels of the network-level ops: one LSTM time step forward and
 * back, the pinball loss, symmetric int8 fake quantisation (kernels.h has the contracts). */
#include <math.h>

#include "kernels_cpu.h"
#include "kn_math.h"

/* ---- LSTM cell (gate order i, f, g, o) ------------------------------------------------------- */

/* One row of the cell; cp NULL means c_prev = 0 (two loops, each vectorised). */
static inline void cell_row(float *restrict gi, float *restrict gf, float *restrict gg,
                            float *restrict go, float *restrict c, float *restrict h,
                            const float *restrict cp, int64_t H)
{
    if (cp) {
        for (int64_t j = 0; j < H; j++) {
            float i = kn_sigmoid(gi[j]), f = kn_sigmoid(gf[j]), g = kn_tanh(gg[j]),
                  o = kn_sigmoid(go[j]);
            float cn = i * g + f * cp[j];
            gi[j] = i, gf[j] = f, gg[j] = g, go[j] = o;
            c[j] = cn;
            h[j] = o * kn_tanh(cn);
        }
    } else {
        for (int64_t j = 0; j < H; j++) {
            float i = kn_sigmoid(gi[j]), f = kn_sigmoid(gf[j]), g = kn_tanh(gg[j]),
                  o = kn_sigmoid(go[j]);
            float cn = i * g;
            gi[j] = i, gf[j] = f, gg[j] = g, go[j] = o;
            c[j] = cn;
            h[j] = o * kn_tanh(cn);
        }
    }
}

void kn_cpu_lstm_cell(float *gates, float *c, float *h, const float *c_prev, int64_t B, int64_t H,
                      int64_t ldg, int64_t ldc, int64_t ldh, int64_t ldcp)
{
    for (int64_t b = 0; b < B; b++) {
        float *g = gates + b * ldg;
        cell_row(g, g + H, g + 2 * H, g + 3 * H, c + b * ldc, h + b * ldh,
                 c_prev ? c_prev + b * ldcp : NULL, H);
    }
}

/* One row back through the cell. */
static inline void dcell_row(float *restrict di, float *restrict df, float *restrict dgg,
                             float *restrict dgo, float *restrict dc, const float *restrict dout,
                             const float *restrict dh_rec, const float *restrict gi,
                             const float *restrict gf, const float *restrict gg,
                             const float *restrict go, const float *restrict c,
                             const float *restrict cp, int64_t H)
{
    for (int64_t j = 0; j < H; j++) {
        float i = gi[j], f = gf[j], g = gg[j], o = go[j];
        float dh = dout[j] + dh_rec[j];
        float tc = kn_tanh(c[j]);
        float dcv = dc[j] + dh * o * (1.0f - tc * tc);
        di[j] = dcv * g * i * (1.0f - i);
        df[j] = dcv * cp[j] * f * (1.0f - f);
        dgg[j] = dcv * i * (1.0f - g * g);
        dgo[j] = dh * tc * o * (1.0f - o);
        dc[j] = dcv * f;
    }
}

/* h = o·tanh(c), c = f·c_prev + i·g:
 *   dh = dout + dh_rec;  dc += dh·o·(1 − tanh²c)
 *   d(pre-i) = dc·g·i(1−i), d(pre-f) = dc·c_prev·f(1−f), d(pre-g) = dc·i·(1−g²),
 *   d(pre-o) = dh·tanh(c)·o(1−o);  dc_prev = dc·f */
void kn_cpu_dlstm_cell(float *dg, float *dc, const float *dout, const float *dh_rec,
                       const float *gates, const float *c, const float *c_prev, int64_t B,
                       int64_t H, int64_t ldg, int64_t ldc, int64_t ldh, int64_t ldcp)
{
    for (int64_t b = 0; b < B; b++) {
        const float *g = gates + b * ldg;
        float *d = dg + b * ldg;
        dcell_row(d, d + H, d + 2 * H, d + 3 * H, dc + b * H, dout + b * ldh, dh_rec + b * H, g,
                  g + H, g + 2 * H, g + 3 * H, c + b * ldc, c_prev + b * ldcp, H);
    }
}

/* ---- pinball loss ---------------------------------------------------------------------------- */

void kn_cpu_pinball(float *loss, const float *yhat, const float *y, const float *q, int64_t rows,
                    int64_t nq)
{
    double acc = 0.0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < nq; k++) {
            float e = y[r] - yhat[r * nq + k];
            acc += e > 0.0f ? q[k] * e : (q[k] - 1.0f) * e;
        }
    loss[0] = rows ? (float)(acc / (double)rows) : 0.0f;
}

/* d/dŷ = −q where y > ŷ, 1 − q where y < ŷ, 0 at the kink; d/dy is the opposite */
void kn_cpu_dpinball(float *dyhat, float *dy, const float *dloss, const float *yhat, const float *y,
                     const float *q, int64_t rows, int64_t nq)
{
    float s = rows ? dloss[0] / (float)rows : 0.0f;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < nq; k++) {
            float e = y[r] - yhat[r * nq + k];
            float d = e > 0.0f ? -q[k] : (e < 0.0f ? 1.0f - q[k] : 0.0f);
            if (dyhat) dyhat[r * nq + k] += s * d;
            if (dy) dy[r] -= s * d;
        }
}

/* ---- fake quantisation ----------------------------------------------------------------------- */

void kn_cpu_fake_quant(float *y, float *scale, const float *x, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * n;
        float *restrict yr = y + r * n;
        float amax = 0.0f;
        for (int64_t j = 0; j < n; j++) {
            float a = fabsf(xr[j]);
            amax = a > amax ? a : amax;
        }
        float s = amax / 127.0f, inv = s > 0.0f ? 1.0f / s : 0.0f;
        for (int64_t j = 0; j < n; j++) {
            float v = rintf(xr[j] * inv);
            v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
            yr[j] = v * s;
        }
        scale[r] = s;
    }
}

void kn_cpu_dfake_quant(float *dx, const float *dy, const float *x, const float *scale,
                        int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        float inv = scale[r] > 0.0f ? 1.0f / scale[r] : 0.0f;
        const float *restrict xr = x + r * n, *restrict dyr = dy + r * n;
        float *restrict dxr = dx + r * n;
        for (int64_t j = 0; j < n; j++) dxr[j] += fabsf(xr[j]) * inv < 127.5f ? dyr[j] : 0.0f;
    }
}
