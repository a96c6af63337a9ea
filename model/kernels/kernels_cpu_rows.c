/* kernels_cpu_rows.c — the CPU table's row-wise kernels and reductions (kernels.h): softmax,
 * layer norm, column sums (bias gradients), sums over an axis, squared norms, the embedding
 * and AdamW. Rows are spread over the pool (kn_pool.h); a sum over rows is taken in
 * KN_RED_CHUNKS fixed blocks merged in order, so it does not depend on the thread count.
 * Compiled with -O3 -fopenmp-simd like every CPU kernel file. */
#include <math.h>
#include <string.h>

#include "kernels_cpu.h"
#include "kn_math.h"

struct rows {
    float *o, *o2, *o3;
    const float *a, *b, *c, *d, *e;
    const int32_t *idx;
    int64_t n, inner, ld;
    float f0;
};

#define ROWS_CHUNK(name) KN_SIMD static void name(void *w_, int64_t b_, int64_t e_)

/* ---- column sums ----------------------------------------------------------------------------- */

/* Column sums above this many columns are taken on one thread (the partial sums of the blocks
 * live on the stack). */
#define KN_COLSUM_MAX 2048

KN_SIMD static void colsum_rows(float *restrict acc, const float *dy, int64_t r0, int64_t r1,
                                int64_t n, int64_t ld)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *restrict d = dy + r * ld;
        for (int64_t j = 0; j < n; j++) acc[j] += d[j];
    }
}

struct colsum {
    float *part; /* [KN_RED_CHUNKS, n] */
    const float *dy;
    int64_t rows, n, ld;
};

static void colsum_chunk(void *p, int64_t c)
{
    const struct colsum *s = p;
    int64_t r0, r1;
    kn_red_block(c, s->rows, &r0, &r1);
    float *acc = s->part + c * s->n;
    memset(acc, 0, (size_t)s->n * sizeof *acc);
    if (r0 < r1) colsum_rows(acc, s->dy, r0, r1, s->n, s->ld);
}

void kn_cpu_colsum(float *acc, const float *dy, int64_t rows, int64_t n, int64_t ld)
{
    if (rows <= 0 || n <= 0) return;
    if (n > KN_COLSUM_MAX || rows * n < 2 * KN_GRAIN) {
        colsum_rows(acc, dy, 0, rows, n, ld);
        return;
    }
    float part[KN_RED_CHUNKS * KN_COLSUM_MAX];
    struct colsum s = {part, dy, rows, n, ld};
    kn_parallel_chunks(KN_RED_CHUNKS, colsum_chunk, &s);
    for (int c = 0; c < KN_RED_CHUNKS; c++) {
        const float *restrict p = part + c * n;
        for (int64_t j = 0; j < n; j++) acc[j] += p[j];
    }
}

void kn_cpu_dbias(float *db, const float *dy, int64_t rows, int64_t n)
{
    kn_cpu_colsum(db, dy, rows, n, n);
}

/* ---- weight and bias sums over fixed row blocks ---------------------------------------------- */

struct wb_job {
    kn_wb_rows_fn fn;
    const void *arg;
    float *part; /* [KN_RED_CHUNKS, 2, n] */
    int64_t rows, n;
    bool w, b;
};

static void wb_chunk(void *p, int64_t c)
{
    const struct wb_job *j = p;
    int64_t r0, r1;
    kn_red_block(c, j->rows, &r0, &r1);
    float *dw = j->part + c * 2 * j->n, *db = dw + j->n;
    memset(dw, 0, 2 * (size_t)j->n * sizeof *dw);
    if (r0 < r1) j->fn(j->arg, j->w ? dw : NULL, j->b ? db : NULL, r0, r1);
}

void kn_cpu_wb_sums(float *dw, float *db, int64_t rows, int64_t n, kn_wb_rows_fn fn,
                    const void *arg)
{
    if (n > KN_WB_MAX || rows * n < 2 * KN_GRAIN) {
        fn(arg, dw, db, 0, rows);
        return;
    }
    float part[KN_RED_CHUNKS * 2 * KN_WB_MAX];
    struct wb_job j = {fn, arg, part, rows, n, dw != NULL, db != NULL};
    kn_parallel_chunks(KN_RED_CHUNKS, wb_chunk, &j);
    for (int c = 0; c < KN_RED_CHUNKS; c++)
        for (int64_t x = 0; x < n; x++) {
            if (dw) dw[x] += part[(2 * c) * n + x];
            if (db) db[x] += part[(2 * c + 1) * n + x];
        }
}

/* ---- softmax --------------------------------------------------------------------------------- */

ROWS_CHUNK(softmax_chunk)
{
    const struct rows *w = w_;
    int64_t n = w->n;
    for (int64_t r = b_; r < e_; r++) {
        const float *restrict xr = w->a + r * n;
        float *restrict yr = w->o + r * n;
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

void kn_cpu_softmax(float *y, const float *x, int64_t rows, int64_t n)
{
    kn_parallel_for(rows, kn_row_grain(n), softmax_chunk, &(struct rows){.o = y, .a = x, .n = n});
}

ROWS_CHUNK(dsoftmax_chunk)
{
    const struct rows *w = w_;
    int64_t n = w->n;
    for (int64_t r = b_; r < e_; r++) {
        const float *restrict yr = w->a + r * n, *restrict dyr = w->b + r * n;
        float *restrict dxr = w->o + r * n;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t j = 0; j < n; j++) dot += yr[j] * dyr[j];
        for (int64_t j = 0; j < n; j++) dxr[j] += yr[j] * (dyr[j] - dot);
    }
}

void kn_cpu_dsoftmax(float *dx, const float *y, const float *dy, int64_t rows, int64_t n)
{
    kn_parallel_for(rows, kn_row_grain(n), dsoftmax_chunk,
                    &(struct rows){.o = dx, .a = y, .b = dy, .n = n});
}

/* ---- layer norm ------------------------------------------------------------------------------ */

ROWS_CHUNK(layernorm_chunk)
{
    const struct rows *w = w_;
    int64_t n = w->n;
    const float *restrict wt = w->b, *restrict bs = w->c;
    for (int64_t r = b_; r < e_; r++) {
        const float *restrict xr = w->a + r * n;
        float *restrict yr = w->o + r * n;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < n; j++) s += xr[j];
        kn_ln_row(yr, &w->o2[r], &w->o3[r], xr, wt, bs, s, n, w->f0);
    }
}

void kn_cpu_layernorm(float *y, float *mean, float *rstd, const float *x, const float *w,
                      const float *b, int64_t rows, int64_t n, float eps)
{
    kn_parallel_for(
        rows, kn_row_grain(n), layernorm_chunk,
        &(struct rows){.o = y, .o2 = mean, .o3 = rstd, .a = x, .b = w, .c = b, .n = n, .f0 = eps});
}

/* dx of rows [b, e): (w·dy − mean(w·dy) − x̂·mean(w·dy·x̂))·rstd */
ROWS_CHUNK(dlayernorm_dx_chunk)
{
    const struct rows *s = w_;
    int64_t n = s->n;
    const float *restrict w = s->e;
    for (int64_t r = b_; r < e_; r++) {
        const float *restrict xr = s->b + r * n, *restrict dyr = s->a + r * n;
        float *restrict dxr = s->o + r * n;
        float m = s->c[r], rs = s->d[r], dn_mean, dn_norm_mean;
        kn_ln_dmeans(&dn_mean, &dn_norm_mean, w, dyr, xr, m, rs, n);
        for (int64_t j = 0; j < n; j++) {
            float norm = (xr[j] - m) * rs;
            dxr[j] += (w[j] * dyr[j] - dn_mean - norm * dn_norm_mean) * rs;
        }
    }
}

/* dw += Σ x̂·dy, db += Σ dy over rows [r0, r1), into dw, db (either may be NULL) */
KN_SIMD static void dlayernorm_wb_rows(float *restrict dw, float *restrict db, const struct rows *s,
                                       int64_t r0, int64_t r1)
{
    int64_t n = s->n;
    for (int64_t r = r0; r < r1; r++) {
        const float *restrict xr = s->b + r * n, *restrict dyr = s->a + r * n;
        float m = s->c[r], rs = s->d[r];
        if (db)
            for (int64_t j = 0; j < n; j++) db[j] += dyr[j];
        if (dw)
            for (int64_t j = 0; j < n; j++) dw[j] += (xr[j] - m) * rs * dyr[j];
    }
}

static void dlayernorm_wb(const void *s, float *dw, float *db, int64_t r0, int64_t r1)
{
    dlayernorm_wb_rows(dw, db, s, r0, r1);
}

void kn_cpu_dlayernorm(float *dx, float *dw, float *db, const float *dy, const float *x,
                       const float *mean, const float *rstd, const float *w, int64_t rows,
                       int64_t n)
{
    if (rows <= 0 || n <= 0) return;
    struct rows s = {.o = dx, .a = dy, .b = x, .c = mean, .d = rstd, .e = w, .n = n};
    if (dw || db) kn_cpu_wb_sums(dw, db, rows, n, dlayernorm_wb, &s);
    if (dx) kn_parallel_for(rows, kn_row_grain(n), dlayernorm_dx_chunk, &s);
}

/* ---- sums over an axis ----------------------------------------------------------------------- */

ROWS_CHUNK(sum_axis_chunk)
{
    const struct rows *w = w_;
    int64_t n = w->n, inner = w->inner;
    float alpha = w->f0;
    for (int64_t o = b_; o < e_; o++) {
        const float *restrict xo = w->a + o * n * inner;
        float *restrict yo = w->o + o * inner;
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

void kn_cpu_sum_axis(float *y, const float *x, int64_t outer, int64_t n, int64_t inner, float alpha)
{
    kn_parallel_for(outer, kn_row_grain(n * inner), sum_axis_chunk,
                    &(struct rows){.o = y, .a = x, .n = n, .inner = inner, .f0 = alpha});
}

ROWS_CHUNK(dsum_axis_chunk)
{
    const struct rows *w = w_;
    int64_t n = w->n, inner = w->inner;
    float alpha = w->f0;
    for (int64_t o = b_; o < e_; o++) {
        float *restrict dxo = w->o + o * n * inner;
        const float *restrict dyo = w->a + o * inner;
        if (inner == 1) {
            float v = alpha * dyo[0];
            for (int64_t k = 0; k < n; k++) dxo[k] += v;
            continue;
        }
        for (int64_t k = 0; k < n; k++)
            for (int64_t i = 0; i < inner; i++) dxo[k * inner + i] += alpha * dyo[i];
    }
}

void kn_cpu_dsum_axis(float *dx, const float *dy, int64_t outer, int64_t n, int64_t inner,
                      float alpha)
{
    kn_parallel_for(outer, kn_row_grain(n * inner), dsum_axis_chunk,
                    &(struct rows){.o = dx, .a = dy, .n = n, .inner = inner, .f0 = alpha});
}

KN_SIMD double kn_cpu_sumsq(const float *x, int64_t n)
{
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; i++) acc += (double)x[i] * x[i];
    return acc;
}

double kn_cpu_sumsq_many(const float *const *x, const int64_t *n, int count)
{
    double acc = 0.0;
    for (int i = 0; i < count; i++) acc += n[i] > 0 ? kn_cpu_sumsq(x[i], n[i]) : 0.0;
    return acc;
}

/* ---- embedding ------------------------------------------------------------------------------- */

ROWS_CHUNK(embedding_chunk)
{
    const struct rows *w = w_;
    int64_t h = w->n;
    for (int64_t r = b_; r < e_; r++)
        memcpy(w->o + r * h, w->a + (int64_t)w->idx[r] * h, (size_t)h * sizeof *w->o);
}

void kn_cpu_embedding(float *y, const float *w, const int32_t *idx, int64_t n_idx, int64_t h)
{
    kn_parallel_for(n_idx, kn_row_grain(h), embedding_chunk,
                    &(struct rows){.o = y, .a = w, .idx = idx, .n = h});
}

/* a scatter-add: indices repeat, so one thread */
KN_SIMD void kn_cpu_dembedding(float *dw, const float *dy, const int32_t *idx, int64_t n_idx,
                               int64_t h)
{
    for (int64_t r = 0; r < n_idx; r++) {
        float *restrict d = dw + (int64_t)idx[r] * h;
        const float *restrict s = dy + r * h;
        for (int64_t j = 0; j < h; j++) d[j] += s[j];
    }
}

/* ---- the optimizer --------------------------------------------------------------------------- */

struct adamw {
    float *p, *m, *v;
    const float *g;
    float beta1, beta2, eps, decay, step, inv_sqrt_bc2;
};

KN_SIMD static void adamw_chunk(void *a_, int64_t b, int64_t e)
{
    const struct adamw *a = a_;
    float *restrict p = a->p, *restrict m = a->m, *restrict v = a->v;
    const float *restrict g = a->g;
    for (int64_t i = b; i < e; i++)
        kn_adamw_elem(&p[i], &m[i], &v[i], g[i], a->beta1, a->beta2, a->eps, a->decay, a->step,
                      a->inv_sqrt_bc2);
}

/* PyTorch's AdamW: p ← p·(1 − lr·wd); m, v updated; p ← p − (lr/bc1)·m / (√v/√bc2 + eps) */
void kn_cpu_adamw(float *p, float *m, float *v, const float *g, int64_t n, float lr, float beta1,
                  float beta2, float eps, float wd, float bc1, float bc2)
{
    struct adamw a = {p, m, v, g, beta1, beta2, eps, 1.0f - lr * wd, lr / bc1, 1.0f / sqrtf(bc2)};
    kn_parallel_for(n, KN_GRAIN, adamw_chunk, &a);
}
