/* kernels_cpu_nn.c — CPU kernels of the network-level ops: one LSTM time step forward and
 * back, the pinball loss, symmetric int8 fake quantisation (kernels.h has the contracts).
 * Rows are spread over the pool (kn_pool.h). */
#include <math.h>

#include "kernels_cpu.h"
#include "kn_math.h"

/* ---- LSTM cell (gate order i, f, g, o) ------------------------------------------------------- */

/* One row of the cell; cp NULL means c_prev = 0 (two loops, each vectorised). */
static inline __attribute__((always_inline)) void cell_row(float *restrict gi, float *restrict gf,
                                                           float *restrict gg, float *restrict go,
                                                           float *restrict c, float *restrict h,
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

/* The sizes of a cell call, forward and back: H and the row strides of gates (and dg), c, h
 * (and dout) and c_prev. */
struct cell_dims {
    int64_t H, ldg, ldc, ldh, ldcp;
};

/* The arguments of one cell call, for its chunks of rows, in the kernel's order. */
struct cell {
    float *gates, *c, *h;
    const float *c_prev;
    struct cell_dims n;
};

/* Rows per chunk of a cell: a row is 4H transcendental-heavy elements. */
static int64_t cell_grain(int64_t H) { return H < 1024 ? 1024 / H + 1 : 1; }

KN_SIMD static void cell_chunk(void *p, int64_t b0, int64_t b1)
{
    const struct cell *a = p;
    struct cell_dims n = a->n;
    int64_t H = n.H;
    for (int64_t b = b0; b < b1; b++) {
        float *g = a->gates + b * n.ldg;
        cell_row(g, g + H, g + 2 * H, g + 3 * H, a->c + b * n.ldc, a->h + b * n.ldh,
                 a->c_prev ? a->c_prev + b * n.ldcp : NULL, H);
    }
}

void kn_cpu_lstm_cell(float *gates, float *c, float *h, const float *c_prev, int64_t B, int64_t H,
                      int64_t ldg, int64_t ldc, int64_t ldh, int64_t ldcp)
{
    struct cell a = {gates, c, h, c_prev, {H, ldg, ldc, ldh, ldcp}};
    kn_parallel_for(B, cell_grain(H), cell_chunk, &a);
}

/* One row back through the cell. */
static inline __attribute__((always_inline)) void
dcell_row(float *restrict di, float *restrict df, float *restrict dgg, float *restrict dgo,
          float *restrict dc, const float *restrict dout, const float *restrict dh_rec,
          const float *restrict gi, const float *restrict gf, const float *restrict gg,
          const float *restrict go, const float *restrict c, const float *restrict cp, int64_t H)
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

struct dcell {
    float *dg, *dc;
    const float *dout, *dh_rec, *gates, *c, *c_prev;
    struct cell_dims n;
};

/* h = o·tanh(c), c = f·c_prev + i·g:
 *   dh = dout + dh_rec;  dc += dh·o·(1 − tanh²c)
 *   d(pre-i) = dc·g·i(1−i), d(pre-f) = dc·c_prev·f(1−f), d(pre-g) = dc·i·(1−g²),
 *   d(pre-o) = dh·tanh(c)·o(1−o);  dc_prev = dc·f */
KN_SIMD static void dcell_chunk(void *p, int64_t b0, int64_t b1)
{
    const struct dcell *a = p;
    struct cell_dims n = a->n;
    int64_t H = n.H;
    for (int64_t b = b0; b < b1; b++) {
        const float *g = a->gates + b * n.ldg;
        float *d = a->dg + b * n.ldg;
        dcell_row(d, d + H, d + 2 * H, d + 3 * H, a->dc + b * H, a->dout + b * n.ldh,
                  a->dh_rec + b * H, g, g + H, g + 2 * H, g + 3 * H, a->c + b * n.ldc,
                  a->c_prev + b * n.ldcp, H);
    }
}

void kn_cpu_dlstm_cell(float *dg, float *dc, const float *dout, const float *dh_rec,
                       const float *gates, const float *c, const float *c_prev, int64_t B,
                       int64_t H, int64_t ldg, int64_t ldc, int64_t ldh, int64_t ldcp)
{
    struct dcell a = {dg, dc, dout, dh_rec, gates, c, c_prev, {H, ldg, ldc, ldh, ldcp}};
    kn_parallel_for(B, cell_grain(H), dcell_chunk, &a);
}

/* ---- GateAddNorm: LN(skip + a ⊙ σ(g)) -------------------------------------------------------- */

/* The arguments of one call, for its chunks of rows, in the kernel's order. */
struct gan {
    float *y, *s, *mean, *rstd;
    const float *z, *skip, *w, *b;
    int64_t d;
    float eps;
};

/* The sum, then the layer norm of each row: the operations of ag_mul, ag_add and ag_layernorm
 * in the same order, so the fused block rounds as the three ops do. */
KN_SIMD static void gan_chunk(void *p, int64_t r0, int64_t r1)
{
    const struct gan *a = p;
    int64_t d = a->d;
    const float *restrict w = a->w, *restrict bs = a->b;
    for (int64_t r = r0; r < r1; r++) {
        const float *restrict za = a->z + r * 2 * d, *restrict zg = za + d,
                              *restrict sk = a->skip + r * d;
        float *restrict sr = a->s + r * d, *restrict yr = a->y + r * d;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < d; j++) {
            float v = sk[j] + za[j] * kn_sigmoid(zg[j]);
            sr[j] = v;
            sum += v;
        }
        kn_ln_row(yr, &a->mean[r], &a->rstd[r], sr, w, bs, sum, d, a->eps);
    }
}

void kn_cpu_gate_add_norm(float *y, float *s, float *mean, float *rstd, const float *z,
                          const float *skip, const float *w, const float *b, int64_t rows,
                          int64_t d, float eps)
{
    struct gan a = {y, s, mean, rstd, z, skip, w, b, d, eps};
    kn_parallel_for(rows, kn_row_grain(3 * d), gan_chunk, &a);
}

struct dgan {
    float *dz, *dskip;
    const float *dy, *z, *s, *mean, *rstd, *w;
    int64_t d;
    bool dz_acc;
};

/* Columns per tile of dgan_rows' row buffer. */
#define KN_DGAN_TILE 256

/* Rows [r0, r1) back through the block: ds_j = (w_j·dy_j − mean(w·dy) − ŝ_j·mean(w·dy·ŝ))·rstd
 * into a tile buffer, then dskip += ds and the gate's gradients from it; dw, db (when not NULL)
 * collect Σ ŝ·dy and Σ dy. Simple loops over restrict-qualified tiles, so that each
 * vectorises (one loop doing all of it did not: GCC versioned it for aliasing and ran it
 * scalar, 5 ns an element). */
static inline __attribute__((always_inline)) void dgan_rows(const struct dgan *a,
                                                            float *restrict dw, float *restrict db,
                                                            int64_t r0, int64_t r1, bool has_dskip,
                                                            bool has_dz, bool acc)
{
    int64_t d = a->d;
    const float *restrict w = a->w;
    float ds[KN_DGAN_TILE], nrm[KN_DGAN_TILE];
    for (int64_t r = r0; r < r1; r++) {
        const float *restrict dyr = a->dy + r * d, *restrict sr = a->s + r * d;
        const float *restrict za = a->z + r * 2 * d, *restrict zg = za + d;
        float m = a->mean[r], rs = a->rstd[r], dn_mean, dn_norm_mean;
        kn_ln_dmeans(&dn_mean, &dn_norm_mean, w, dyr, sr, m, rs, d);
        for (int64_t t0 = 0; t0 < d; t0 += KN_DGAN_TILE) {
            int64_t n = d - t0 < KN_DGAN_TILE ? d - t0 : KN_DGAN_TILE;
            const float *restrict dyt = dyr + t0, *restrict st = sr + t0, *restrict wt = w + t0;
            for (int64_t j = 0; j < n; j++) {
                nrm[j] = (st[j] - m) * rs;
                ds[j] = (wt[j] * dyt[j] - dn_mean - nrm[j] * dn_norm_mean) * rs;
            }
            if (dw)
                for (int64_t j = 0; j < n; j++) dw[t0 + j] += nrm[j] * dyt[j];
            if (db)
                for (int64_t j = 0; j < n; j++) db[t0 + j] += dyt[j];
            if (has_dskip) {
                float *restrict dsk = a->dskip + r * d + t0;
                for (int64_t j = 0; j < n; j++) dsk[j] += ds[j];
            }
            if (!has_dz) continue;
            float *restrict dza = a->dz + r * 2 * d + t0, *restrict dzg = dza + d;
            const float *restrict zat = za + t0, *restrict zgt = zg + t0;
            if (acc)
                for (int64_t j = 0; j < n; j++) {
                    float sg = kn_sigmoid(zgt[j]);
                    dza[j] += ds[j] * sg;
                    dzg[j] += ds[j] * zat[j] * sg * (1.0f - sg);
                }
            else
                for (int64_t j = 0; j < n; j++) {
                    float sg = kn_sigmoid(zgt[j]);
                    dza[j] = ds[j] * sg;
                    dzg[j] = ds[j] * zat[j] * sg * (1.0f - sg);
                }
        }
    }
}

/* Rows [r0, r1) through dgan_rows with the flags of the call (a kn_wb_rows_fn). */
KN_SIMD static void dgan_any(const void *p, float *dw, float *db, int64_t r0, int64_t r1)
{
    const struct dgan *a = p;
    bool sk = a->dskip != NULL, dz = a->dz != NULL, acc = a->dz_acc;
    if (sk && dz && !acc)
        dgan_rows(a, dw, db, r0, r1, true, true, false);
    else if (!sk && dz && !acc)
        dgan_rows(a, dw, db, r0, r1, false, true, false);
    else if (sk && dz)
        dgan_rows(a, dw, db, r0, r1, true, true, true);
    else if (dz)
        dgan_rows(a, dw, db, r0, r1, false, true, true);
    else
        dgan_rows(a, dw, db, r0, r1, sk, false, false);
}

static void dgan_range(void *p, int64_t r0, int64_t r1) { dgan_any(p, NULL, NULL, r0, r1); }

void kn_cpu_dgate_add_norm(float *dz, float *dskip, float *dw, float *db, const float *dy,
                           const float *z, const float *s, const float *mean, const float *rstd,
                           const float *w, int64_t rows, int64_t d, bool dz_acc)
{
    if (rows <= 0 || d <= 0) return;
    struct dgan a = {dz, dskip, dy, z, s, mean, rstd, w, d, dz_acc};
    if (!dw && !db) {
        if (dz || dskip) kn_parallel_for(rows, kn_row_grain(4 * d), dgan_range, &a);
        return;
    }
    if (d > KN_WB_MAX) { /* two passes: the norm's column sums, then the rows */
        kn_cpu_dlayernorm(NULL, dw, db, dy, s, mean, rstd, w, rows, d);
        if (dz || dskip) kn_parallel_for(rows, kn_row_grain(4 * d), dgan_range, &a);
        return;
    }
    kn_cpu_wb_sums(dw, db, rows, d, dgan_any, &a); /* the rows' gradients with the sums */
}

/* ---- a weighted sum of rows, one term at a time ---------------------------------------------- */

struct wadd {
    float *y, *dx, *dv;
    const float *x, *v, *dy;
    int64_t j, ldv, h;
    bool acc;
};

KN_SIMD static void wadd_chunk(void *p, int64_t r0, int64_t r1)
{
    const struct wadd *a = p;
    int64_t h = a->h;
    for (int64_t r = r0; r < r1; r++) {
        float *restrict yr = a->y + r * h;
        const float *restrict xr = a->x + r * h;
        float c = a->v[r * a->ldv + a->j];
        if (a->acc)
            for (int64_t k = 0; k < h; k++) yr[k] += c * xr[k];
        else
            for (int64_t k = 0; k < h; k++) yr[k] = c * xr[k];
    }
}

void kn_cpu_weighted_add(float *y, const float *x, const float *v, int64_t j, int64_t ldv,
                         int64_t rows, int64_t h, bool acc)
{
    struct wadd a = {.y = y, .x = x, .v = v, .j = j, .ldv = ldv, .h = h, .acc = acc};
    kn_parallel_for(rows, kn_row_grain(h), wadd_chunk, &a);
}

KN_SIMD static void dwadd_chunk(void *p, int64_t r0, int64_t r1)
{
    const struct wadd *a = p;
    int64_t h = a->h;
    for (int64_t r = r0; r < r1; r++) {
        const float *restrict dyr = a->dy + r * h, *restrict xr = a->x + r * h;
        if (a->dv) {
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int64_t k = 0; k < h; k++) dot += xr[k] * dyr[k];
            a->dv[r * a->ldv + a->j] += dot;
        }
        if (a->dx) {
            float *restrict dxr = a->dx + r * h;
            float c = a->v[r * a->ldv + a->j];
            for (int64_t k = 0; k < h; k++) dxr[k] += c * dyr[k];
        }
    }
}

void kn_cpu_dweighted_add(float *dx, float *dv, const float *dy, const float *x, const float *v,
                          int64_t j, int64_t ldv, int64_t rows, int64_t h)
{
    struct wadd a = {.dx = dx, .dv = dv, .x = x, .v = v, .dy = dy, .j = j, .ldv = ldv, .h = h};
    kn_parallel_for(rows, kn_row_grain(2 * h), dwadd_chunk, &a);
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

struct fq {
    float *y, *scale, *dx;
    const float *x, *dy, *scale_in;
    int64_t n;
};

KN_SIMD static void fake_quant_chunk(void *p, int64_t r0, int64_t r1)
{
    const struct fq *q = p;
    float *y = q->y, *scale = q->scale;
    const float *x = q->x;
    int64_t n = q->n;
    for (int64_t r = r0; r < r1; r++) {
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

void kn_cpu_fake_quant(float *y, float *scale, const float *x, int64_t rows, int64_t n)
{
    kn_parallel_for(rows, kn_row_grain(n), fake_quant_chunk,
                    &(struct fq){.y = y, .scale = scale, .x = x, .n = n});
}

KN_SIMD static void dfake_quant_chunk(void *p, int64_t r0, int64_t r1)
{
    const struct fq *a = p;
    float *dx = a->dx;
    const float *dy = a->dy, *x = a->x, *scale = a->scale_in;
    int64_t n = a->n;
    for (int64_t r = r0; r < r1; r++) {
        float inv = scale[r] > 0.0f ? 1.0f / scale[r] : 0.0f;
        const float *restrict xr = x + r * n, *restrict dyr = dy + r * n;
        float *restrict dxr = dx + r * n;
        for (int64_t j = 0; j < n; j++) dxr[j] += fabsf(xr[j]) * inv < 127.5f ? dyr[j] : 0.0f;
    }
}

void kn_cpu_dfake_quant(float *dx, const float *dy, const float *x, const float *scale,
                        int64_t rows, int64_t n)
{
    kn_parallel_for(rows, kn_row_grain(n), dfake_quant_chunk,
                    &(struct fq){.dx = dx, .dy = dy, .x = x, .scale_in = scale, .n = n});
}
