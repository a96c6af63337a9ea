/* kernels_cpu_ew.c — the CPU table's elementwise kernels (kernels.h): strided gathers and their
 * scatters, broadcast binaries, the bias fill, activations and dropout.
 *
 * Each kernel is a serial loop over a range (written for the auto-vectoriser: this file is
 * compiled with -O3 -fopenmp-simd; restrict-qualified rows, unit-stride inner loops, `omp
 * simd` on reductions) and a wrapper that spreads the range over the pool (kn_pool.h). A loop
 * that scatters through a broadcast (the backward of a broadcast operand) is split only where
 * its rows write apart (kn_scatter_unit). */
#include <string.h>

#include "kernels_cpu.h"
#include "kn_math.h"

/* The pointers and scalars of one elementwise call, for its chunks. */
struct ew {
    float *o;
    const float *a, *b, *c;
    const int8_t *m;
    int8_t *mo;
    float f0, f1;
    uint64_t u;
    int op;
    const struct kn_geom *g;
    kn_range_fn rows_fn; /* run_scatter: the row loop of a unit-split call */
    int64_t unit;
};

#define EW_RUN(n, fn, ...) kn_parallel_for((n), KN_GRAIN, (fn), &(struct ew){__VA_ARGS__})
/* A chunk function over [b_, e_) with the call's struct as `w`. */
#define EW_CHUNK(name) KN_SIMD static void name(void *w_, int64_t b_, int64_t e_)

/* ---- axpy ----------------------------------------------------------------------------------- */

static inline void axpy_row(float *restrict dst, const float *restrict src, float alpha, int64_t n)
{
    if (alpha == 1.0f)
        for (int64_t i = 0; i < n; i++) dst[i] += src[i];
    else
        for (int64_t i = 0; i < n; i++) dst[i] += alpha * src[i];
}

EW_CHUNK(axpy_chunk)
{
    const struct ew *w = w_;
    axpy_row(w->o + b_, w->a + b_, w->f0, e_ - b_);
}

void kn_cpu_axpy(float *dst, const float *src, float alpha, int64_t n)
{
    EW_RUN(n, axpy_chunk, .o = dst, .a = src, .f0 = alpha);
}

/* ---- gather and its scatter ------------------------------------------------------------------ */

static inline void gather_row(float *restrict o, const float *restrict x, int64_t n, int64_t s)
{
    if (s == 1)
        memcpy(o, x, (size_t)n * sizeof *o);
    else if (s == 0)
        for (int64_t j = 0; j < n; j++) o[j] = x[0];
    else
        for (int64_t j = 0; j < n; j++) o[j] = x[j * s];
}

EW_CHUNK(gather_chunk)
{
    const struct ew *w = w_;
    const struct kn_geom *g = w->g;
    KN_FOR_ROWS(g, w->o, b_, e_, gather_row(po, w->a + oa_, g->ne[3], g->sa[3]));
}

void kn_cpu_gather(float *out, const float *x, const struct kn_geom *g)
{
    int64_t rows = kn_geom_rows(g);
    if (rows <= 0) return;
    kn_parallel_for(rows, kn_row_grain(g->ne[3]), gather_chunk,
                    &(struct ew){.o = out, .a = x, .g = g});
}

static inline void dgather_row(float *restrict dx, const float *restrict dy, int64_t n, int64_t s,
                               float alpha)
{
    if (s == 1) {
        axpy_row(dx, dy, alpha, n);
    } else if (s == 0) {
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = 0; j < n; j++) acc += dy[j];
        dx[0] += alpha * acc;
    } else {
        for (int64_t j = 0; j < n; j++) dx[j * s] += alpha * dy[j];
    }
}

EW_CHUNK(dgather_chunk)
{
    const struct ew *w = w_;
    const struct kn_geom *g = w->g;
    float *dx = w->o;
    KN_FOR_ROWS(g, (float *)NULL, b_, e_,
                dgather_row(dx + oa_, w->a + row_ * g->ne[3], g->ne[3], g->sa[3], w->f0));
}

/* Units [b, e) of rows as rows: a scatter split by kn_scatter_unit. */
EW_CHUNK(unit_chunk)
{
    const struct ew *w = w_;
    w->rows_fn(w_, b_ * w->unit, e_ * w->unit);
}

/* Runs a scattering row loop over the rows of w->g: split in whole units when its writes
 * through the strides s stay apart, else on this thread. */
static void run_scatter(kn_range_fn rows_fn, struct ew *w, const int64_t *s)
{
    int64_t rows = kn_geom_rows(w->g), unit = kn_scatter_unit(w->g, s);
    if (rows <= 0) return;
    if (!unit) {
        rows_fn(w, 0, rows);
        return;
    }
    w->rows_fn = rows_fn;
    w->unit = unit;
    int64_t grain = kn_row_grain(w->g->ne[3]) / unit;
    kn_parallel_for(rows / unit, grain > 0 ? grain : 1, unit_chunk, w);
}

void kn_cpu_dgather(float *dx, const float *dy, float alpha, const struct kn_geom *g)
{
    run_scatter(dgather_chunk, &(struct ew){.o = dx, .a = dy, .f0 = alpha, .g = g}, g->sa);
}

/* ---- bias fill ------------------------------------------------------------------------------- */

EW_CHUNK(bias_fill_chunk)
{
    const struct ew *w = w_;
    int64_t n = (int64_t)w->u;
    const float *b1 = w->a, *b2 = w->b;
    for (int64_t r = b_; r < e_; r++) {
        float *restrict yr = w->o + r * n;
        if (b1 && b2)
            for (int64_t j = 0; j < n; j++) yr[j] = b1[j] + b2[j];
        else if (b1 || b2)
            memcpy(yr, b1 ? b1 : b2, (size_t)n * sizeof *yr);
        else
            memset(yr, 0, (size_t)n * sizeof *yr);
    }
}

void kn_cpu_bias_fill(float *y, const float *b1, const float *b2, int64_t rows, int64_t n)
{
    kn_parallel_for(rows, kn_row_grain(n), bias_fill_chunk,
                    &(struct ew){.o = y, .a = b1, .b = b2, .u = (uint64_t)n});
}

/* ---- broadcast binaries ---------------------------------------------------------------------- */

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

EW_CHUNK(binary_chunk)
{
    const struct ew *w = w_;
    const struct kn_geom *g = w->g;
    KN_FOR_ROWS(
        g, w->o, b_, e_,
        binary_row(po, w->a + oa_, w->b + ob_, g->ne[3], g->sa[3], g->sb[3], (enum kn_binop)w->op));
}

void kn_cpu_binary(float *out, const float *a, const float *b, enum kn_binop op,
                   const struct kn_geom *g)
{
    int64_t rows = kn_geom_rows(g);
    if (rows <= 0) return;
    kn_parallel_for(rows, kn_row_grain(g->ne[3]), binary_chunk,
                    &(struct ew){.o = out, .a = a, .b = b, .op = op, .g = g});
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

EW_CHUNK(dmul_chunk)
{
    const struct ew *w = w_;
    const struct kn_geom *g = w->g;
    float *dx = w->o;
    KN_FOR_ROWS(
        g, (float *)NULL, b_, e_,
        dmul_row(dx + oa_, w->a + row_ * g->ne[3], w->b + ob_, g->ne[3], g->sa[3], g->sb[3]));
}

void kn_cpu_dmul(float *dx, const float *dy, const float *other, const struct kn_geom *g)
{
    run_scatter(dmul_chunk, &(struct ew){.o = dx, .a = dy, .b = other, .g = g}, g->sa);
}

/* ---- activations ----------------------------------------------------------------------------- */

/* A unary kernel y = EXPR(x) and a backward dx += EXPR(y, dy), each a chunk function and its
 * parallel wrapper. */
#define KN_UNARY(name, EXPR)                                                                       \
    EW_CHUNK(name##_chunk)                                                                         \
    {                                                                                              \
        const struct ew *w = w_;                                                                   \
        float *restrict y = w->o;                                                                  \
        const float *restrict xv = w->a;                                                           \
        for (int64_t i = b_; i < e_; i++) {                                                        \
            float x = xv[i];                                                                       \
            y[i] = EXPR;                                                                           \
        }                                                                                          \
    }                                                                                              \
    void kn_cpu_##name(float *y, const float *x, int64_t n)                                        \
    {                                                                                              \
        EW_RUN(n, name##_chunk, .o = y, .a = x);                                                   \
    }
#define KN_DUNARY(name, EXPR)                                                                      \
    EW_CHUNK(name##_chunk)                                                                         \
    {                                                                                              \
        const struct ew *w = w_;                                                                   \
        float *restrict dx = w->o;                                                                 \
        const float *restrict yv = w->a, *restrict dyv = w->b;                                     \
        for (int64_t i = b_; i < e_; i++) {                                                        \
            float y = yv[i], dy = dyv[i];                                                          \
            dx[i] += EXPR;                                                                         \
        }                                                                                          \
    }                                                                                              \
    void kn_cpu_##name(float *dx, const float *y, const float *dy, int64_t n)                      \
    {                                                                                              \
        EW_RUN(n, name##_chunk, .o = dx, .a = y, .b = dy);                                         \
    }

KN_UNARY(sigmoid, kn_sigmoid(x))
KN_DUNARY(dsigmoid, dy *y *(1.0f - y))
KN_UNARY(tanh, kn_tanh(x))
KN_DUNARY(dtanh, dy *(1.0f - y * y))
KN_UNARY(elu, kn_elu(x))
KN_DUNARY(delu, kn_delu(y, dy))

/* ---- dropout --------------------------------------------------------------------------------- */

EW_CHUNK(dropout_chunk)
{
    const struct ew *w = w_;
    float *restrict y = w->o;
    int8_t *restrict mask = w->mo;
    const float *restrict x = w->a;
    float p = w->f0, scale = w->f1;
    uint32_t s0 = (uint32_t)w->u, s1 = (uint32_t)(w->u >> 32);
    for (int64_t i = b_; i < e_; i++) { /* the hash (kn_math.h): a draw depends on i, not order */
        int8_t keep = kn_dropout_keep(i, s0, s1, p);
        mask[i] = keep;
        y[i] = keep ? x[i] * scale : 0.0f;
    }
}

void kn_cpu_dropout(float *y, int8_t *mask, const float *x, float p, float scale, uint64_t seed,
                    int64_t n)
{
    EW_RUN(n, dropout_chunk, .o = y, .mo = mask, .a = x, .f0 = p, .f1 = scale, .u = seed);
}

EW_CHUNK(ddropout_chunk)
{
    const struct ew *w = w_;
    float *restrict dx = w->o;
    const float *restrict dy = w->a;
    const int8_t *restrict mask = w->m;
    float scale = w->f0;
    for (int64_t i = b_; i < e_; i++) dx[i] += mask[i] ? dy[i] * scale : 0.0f;
}

void kn_cpu_ddropout(float *dx, const float *dy, const int8_t *mask, float scale, int64_t n)
{
    EW_RUN(n, ddropout_chunk, .o = dx, .a = dy, .m = mask, .f0 = scale);
}

/* ---- epilogues: an op's own output (and, backward, its gradient) transformed in place -------- */

EW_CHUNK(epilogue_chunk)
{
    const struct ew *w = w_;
    float *restrict y = w->o;
    if (w->op == KN_EPI_ELU) {
        for (int64_t i = b_; i < e_; i++) y[i] = kn_elu(y[i]);
        return;
    }
    float p = w->f0, scale = w->f1;
    uint32_t s0 = (uint32_t)w->u, s1 = (uint32_t)(w->u >> 32);
    for (int64_t i = b_; i < e_; i++) y[i] = kn_dropout_keep(i, s0, s1, p) ? y[i] * scale : 0.0f;
}

void kn_cpu_epilogue(float *y, enum kn_epilogue kind, float p, float scale, uint64_t seed,
                     int64_t n)
{
    EW_RUN(n, epilogue_chunk, .o = y, .op = (int)kind, .f0 = p, .f1 = scale, .u = seed);
}

EW_CHUNK(depilogue_chunk)
{
    const struct ew *w = w_;
    float *restrict d = w->o;
    if (w->op == KN_EPI_ELU) {
        const float *restrict y = w->a;
        for (int64_t i = b_; i < e_; i++) d[i] = kn_delu(y[i], d[i]);
        return;
    }
    float p = w->f0, scale = w->f1;
    uint32_t s0 = (uint32_t)w->u, s1 = (uint32_t)(w->u >> 32);
    for (int64_t i = b_; i < e_; i++) d[i] = kn_dropout_keep(i, s0, s1, p) ? d[i] * scale : 0.0f;
}

void kn_cpu_depilogue(float *d, const float *y, enum kn_epilogue kind, float p, float scale,
                      uint64_t seed, int64_t n)
{
    EW_RUN(n, depilogue_chunk, .o = d, .a = y, .op = (int)kind, .f0 = p, .f1 = scale, .u = seed);
}
