/* kernels.h — the raw compute kernels behind the ops of autograd.h, one table per device.
 *
 * The ops (ops_*.c) check shapes, make outputs and record the tape without touching data;
 * then they call a kernel from the table of the inputs' device:
 *
 *   const struct kn_backend *kb = kn_backend_for(TN_CPU);   // &kn_cpu
 *   kb->sigmoid(tn_f32(y), tn_f32(x), tn_numel(x));          // y = σ(x)
 *   kb->dsigmoid(dx, tn_f32(y), dy, n);                      // dx += dy·y·(1−y)
 *
 * Kernels see contiguous f32 arrays (row-major) and sizes, nothing else: no tensors, no
 * allocation, no errors (the op layer has checked everything). Conventions (llm.c): outputs
 * first, then inputs, then sizes; a shape comment on every buffer; backward kernels are named
 * d<forward> and accumulate into their gradient outputs with +=, unless a buffer says
 * "(written)" — scratch the op hands over to be overwritten. Pointers passed to one kernel
 * never overlap, except where a comment allows it (in-place).
 *
 * The CPU table (kernels_cpu.c) does its GEMMs with OpenBLAS, except the shapes where its own
 * AVX-512 GEMM (kernels_cpu_gemm.c) is faster. A CUDA table (model/cuda/)
 * implements the same members on device pointers.
 */
#ifndef LG_KERNELS_H
#define LG_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

/* Geometry of a strided elementwise loop over an output of (at most) 4 dims, built by the
 * op layer: out is contiguous with shape ne (ne[3] fastest); operand a (and b) is read at
 * Σ i_k·sa[k] (Σ i_k·sb[k]); a stride of 0 broadcasts that operand along axis k. */
struct kn_geom {
    int64_t ne[4];
    int64_t sa[4];
    int64_t sb[4];
};

enum kn_binop { KN_ADD = 0, KN_SUB = 1, KN_MUL = 2 };
/* What an op applies to its own output in place (kn_backend.epilogue). */
enum kn_epilogue { KN_EPI_ELU = 1, KN_EPI_DROPOUT = 2 };

struct kn_backend {
    const char *name; /* "cpu", "cuda" */

    /* ---- memory ---- */
    void (*zero)(float *x /* [n] */, int64_t n);
    void (*add_scalar)(float *x /* [n] in-place */, float v, int64_t n);
    /* dst += alpha·src */
    void (*axpy)(float *dst /* [n] */, const float *src /* [n] */, float alpha, int64_t n);
    /* y = s·x (in-place allowed: y == x) */
    void (*scale)(float *y /* [n] */, const float *x /* [n] */, float s, int64_t n);
    /* dst[r, :cols] = src[r, :cols] for r < rows (row strides ld_dst, ld_src) */
    void (*copy2d)(float *dst /* [rows, ld_dst] */, const float *src /* [rows, ld_src] */,
                   int64_t rows, int64_t cols, int64_t ld_dst, int64_t ld_src);
    /* dsrc[r, :cols] += ddst[r, :cols]: the backward of copy2d */
    void (*dcopy2d)(float *dsrc /* [rows, ld_src] */, const float *ddst /* [rows, ld_dst] */,
                    int64_t rows, int64_t cols, int64_t ld_src, int64_t ld_dst);
    /* out = x read through g (g.sa: strides of x): permute and expand */
    void (*gather)(float *out /* [ne] */, const float *x, const struct kn_geom *g);
    /* dx[Σ i_k·g.sa[k]] += alpha·dy[i] over the output index i: the backward of gather, of a
     * broadcast add, and of anything whose input was broadcast (sums where sa[k] == 0) */
    void (*dgather)(float *dx, const float *dy /* [ne] */, float alpha, const struct kn_geom *g);

    /* ---- matrix products (row-major, BLAS conventions) ---- */
    /* C = alpha·op(A)·op(B) + beta·C; op(A) [m, k], op(B) [k, n], C [m, n] */
    void (*gemm)(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n, int k,
                 float alpha, int lda, int ldb, float beta, int ldc);
    /* the same over `batch` matrices, each operand advanced by its stride per batch entry;
     * stride_c may be 0 (every entry adds into one C: beta = 1, applied in order) */
    void (*gemm_batched)(float *c, const float *a, const float *b, bool ta, bool tb, int m, int n,
                         int k, float alpha, int lda, int ldb, float beta, int ldc, int batch,
                         int64_t stride_a, int64_t stride_b, int64_t stride_c);
    /* y[r, j] = b1[j] + b2[j] (either may be NULL: zero) — a bias written before a GEMM */
    void (*bias_fill)(float *y /* [rows, n] */, const float *b1 /* [n] */,
                      const float *b2 /* [n] */, int64_t rows, int64_t n);
    /* db[j] += Σ_r dy[r, j] */
    void (*dbias)(float *db /* [n] */, const float *dy /* [rows, n] */, int64_t rows, int64_t n);

    /* ---- elementwise ---- */
    void (*binary)(float *out /* [g.ne] */, const float *a, const float *b, enum kn_binop op,
                   const struct kn_geom *g);
    /* dx[Σ i_k·g.sa[k]] += dy[i]·other[Σ i_k·g.sb[k]]: the backward of a broadcast mul */
    void (*dmul)(float *dx, const float *dy /* [g.ne] */, const float *other,
                 const struct kn_geom *g);
    void (*sigmoid)(float *y /* [n] */, const float *x /* [n] */, int64_t n);
    void (*dsigmoid)(float *dx /* [n] */, const float *y /* [n] */, const float *dy /* [n] */,
                     int64_t n);
    void (*tanh)(float *y /* [n] */, const float *x /* [n] */, int64_t n);
    void (*dtanh)(float *dx /* [n] */, const float *y /* [n] */, const float *dy /* [n] */,
                  int64_t n);
    void (*elu)(float *y /* [n] */, const float *x /* [n] */, int64_t n);
    void (*delu)(float *dx /* [n] */, const float *y /* [n] */, const float *dy /* [n] */,
                 int64_t n);
    /* keep = hash(seed, i) ≥ p; y = keep ? x·scale : 0 */
    void (*dropout)(float *y /* [n] */, int8_t *mask /* [n] (written) */, const float *x /* [n] */,
                    float p, float scale, uint64_t seed, int64_t n);
    void (*ddropout)(float *dx /* [n] */, const float *dy /* [n] */, const int8_t *mask /* [n] */,
                     float scale, int64_t n);

    /* An op's epilogue in place (ag_linear_ex, ag_linear_concat): y = elu(y), or inverted dropout
     * with the draw of `dropout` for (p, seed) — the same elements dropped, no mask kept; p, scale
     * and seed are unused for ELU. */
    void (*epilogue)(float *y /* [n] in-place */, enum kn_epilogue kind, float p, float scale,
                     uint64_t seed, int64_t n);
    /* Its backward in place: d = d ⊙ elu'(y) (from the output y), or d = keep ? d·scale : 0 with
     * the forward's draw (y unused) */
    void (*depilogue)(float *d /* [n] in-place */, const float *y /* [n] */, enum kn_epilogue kind,
                      float p, float scale, uint64_t seed, int64_t n);

    /* ---- rows: softmax, layer norm ---- */
    void (*softmax)(float *y /* [rows, n] */, const float *x /* [rows, n] */, int64_t rows,
                    int64_t n);
    void (*dsoftmax)(float *dx /* [rows, n] */, const float *y /* [rows, n] */,
                     const float *dy /* [rows, n] */, int64_t rows, int64_t n);
    void (*layernorm)(float *y /* [rows, n] */, float *mean /* [rows] (written) */,
                      float *rstd /* [rows] (written) */, const float *x /* [rows, n] */,
                      const float *w /* [n] */, const float *b /* [n] */, int64_t rows, int64_t n,
                      float eps);
    /* any of dx, dw, db may be NULL */
    void (*dlayernorm)(float *dx /* [rows, n] */, float *dw /* [n] */, float *db /* [n] */,
                       const float *dy /* [rows, n] */, const float *x /* [rows, n] */,
                       const float *mean /* [rows] */, const float *rstd /* [rows] */,
                       const float *w /* [n] */, int64_t rows, int64_t n);

    /* ---- reductions ---- */
    /* y[o, i] = alpha·Σ_k x[o, k, i] */
    void (*sum_axis)(float *y /* [outer, inner] */, const float *x /* [outer, n, inner] */,
                     int64_t outer, int64_t n, int64_t inner, float alpha);
    /* dx[o, k, i] += alpha·dy[o, i] */
    void (*dsum_axis)(float *dx /* [outer, n, inner] */, const float *dy /* [outer, inner] */,
                      int64_t outer, int64_t n, int64_t inner, float alpha);
    /* Σ x² in double */
    double (*sumsq)(const float *x /* [n] */, int64_t n);
    /* Σ_i Σ x_i² in double over `count` arrays (x[i] holds n[i] floats; n[i] may be 0): the
     * global gradient norm with one device read-back for the list, not one per tensor */
    double (*sumsq_many)(const float *const *x /* [count][n[i]] */, const int64_t *n /* [count] */,
                         int count);

    /* ---- embedding ---- */
    void (*embedding)(float *y /* [n_idx, h] */, const float *w /* [card, h] */,
                      const int32_t *idx /* [n_idx] */, int64_t n_idx, int64_t h);
    void (*dembedding)(float *dw /* [card, h] */, const float *dy /* [n_idx, h] */,
                       const int32_t *idx /* [n_idx] */, int64_t n_idx, int64_t h);

    /* ---- fused blocks ---- */
    /* GateAddNorm over rows, z = [a, g] (value, gate): s = skip + a ⊙ σ(g); y = LN(s)·w + b */
    void (*gate_add_norm)(float *y /* [rows, d] */, float *s /* [rows, d] (written) */,
                          float *mean /* [rows] (written) */, float *rstd /* [rows] (written) */,
                          const float *z /* [rows, 2d] */, const float *skip /* [rows, d] */,
                          const float *w /* [d] */, const float *b /* [d] */, int64_t rows,
                          int64_t d, float eps);
    /* its backward: ds = the layer norm's input gradient; dskip += ds; dz = [ds·σ(g),
     * ds·a·σ(g)(1 − σ(g))], added when dz_acc, else written; dw += Σ ŝ·dy, db += Σ dy. Any of
     * dz, dskip, dw, db may be NULL. */
    void (*dgate_add_norm)(float *dz /* [rows, 2d] */, float *dskip /* [rows, d] */,
                           float *dw /* [d] */, float *db /* [d] */,
                           const float *dy /* [rows, d] */, const float *z /* [rows, 2d] */,
                           const float *s /* [rows, d] */, const float *mean /* [rows] */,
                           const float *rstd /* [rows] */, const float *w /* [d] */, int64_t rows,
                           int64_t d, bool dz_acc);
    /* y[r, :] = (acc ? y[r, :] : 0) + v[r, j]·x[r, :]: one term of a weighted sum of rows */
    void (*weighted_add)(float *y /* [rows, h] */, const float *x /* [rows, h] */,
                         const float *v /* [rows, ldv] */, int64_t j, int64_t ldv, int64_t rows,
                         int64_t h, bool acc);
    /* its backward: dx[r, :] += v[r, j]·dy[r, :]; dv[r, j] += Σ_k x[r, k]·dy[r, k] (either may be
     * NULL) */
    void (*dweighted_add)(float *dx /* [rows, h] */, float *dv /* [rows, ldv] */,
                          const float *dy /* [rows, h] */, const float *x /* [rows, h] */,
                          const float *v /* [rows, ldv] */, int64_t j, int64_t ldv, int64_t rows,
                          int64_t h);

    /* ---- LSTM cell, one time step over B rows (gate order i, f, g, o) ---- */
    /* in: gates holds the pre-activations; out: gates holds σ(i), σ(f), tanh(g), σ(o);
     * c = f·c_prev + i·g; h = o·tanh(c). c_prev NULL means zeros. */
    void (*lstm_cell)(float *gates /* [B, ldg] in-place, 4H used */, float *c /* [B, ldc] */,
                      float *h /* [B, ldh] */, const float *c_prev /* [B, ldcp] */, int64_t B,
                      int64_t H, int64_t ldg, int64_t ldc, int64_t ldh, int64_t ldcp);
    /* One step back: dh = dout_t + dh_rec; dc (in: the gradient from step t+1, out: the
     * gradient for c_prev); dg gets the pre-activation gradients. No pointer is NULL: a zero
     * row with ldh = 0 (ldcp = 0) stands for an absent dout (c_prev). */
    void (*dlstm_cell)(float *dg /* [B, ldg] (written) */, float *dc /* [B, H] in-place */,
                       const float *dout /* [B, ldh] */, const float *dh_rec /* [B, H] */,
                       const float *gates /* [B, ldg] */, const float *c /* [B, ldc] */,
                       const float *c_prev /* [B, ldcp] */, int64_t B, int64_t H, int64_t ldg,
                       int64_t ldc, int64_t ldh, int64_t ldcp);

    /* ---- losses, quantisation, the optimizer ---- */
    /* loss[0] = (1/rows)·Σ_{r,q} pinball(y[r] − yhat[r, q], q[q]) */
    void (*pinball)(float *loss /* [1] */, const float *yhat /* [rows, nq] */,
                    const float *y /* [rows] */, const float *q /* [nq] */, int64_t rows,
                    int64_t nq);
    /* dyhat, dy may be NULL; dloss is the upstream gradient [1] */
    void (*dpinball)(float *dyhat /* [rows, nq] */, float *dy /* [rows] */,
                     const float *dloss /* [1] */, const float *yhat /* [rows, nq] */,
                     const float *y /* [rows] */, const float *q /* [nq] */, int64_t rows,
                     int64_t nq);
    /* symmetric int8 per row: scale[r] = max|x[r, :]| / 127, y = clamp(round(x/s), ±127)·s */
    void (*fake_quant)(float *y /* [rows, n] */, float *scale /* [rows] (written) */,
                       const float *x /* [rows, n] */, int64_t rows, int64_t n);
    /* straight-through: dx += dy where x was not clipped (|x|/scale rounds to at most 127) */
    void (*dfake_quant)(float *dx /* [rows, n] */, const float *dy /* [rows, n] */,
                        const float *x /* [rows, n] */, const float *scale /* [rows] */,
                        int64_t rows, int64_t n);
    /* one AdamW update; bc1 = 1 − β1^t, bc2 = 1 − β2^t */
    void (*adamw)(float *p /* [n] */, float *m /* [n] */, float *v /* [n] */,
                  const float *g /* [n] */, int64_t n, float lr, float beta1, float beta2,
                  float eps, float wd, float bc1, float bc2);
};

/* The kernels of struct kn_backend, in its order: each device's table is written from this list
 * and its kernels are declared from it with their members' signatures (kernels_cpu.h,
 * cuda/cuda_impl.h), so a kernel's signature is written once, above, and a table cannot miss
 * one. X(kernel) names a member; a device defines <prefix>_<kernel> for each. */
// clang-format off
#define KN_KERNELS(X)                                                                              \
    /* memory */                                                                                   \
    X(zero) X(add_scalar) X(axpy) X(scale) X(copy2d) X(dcopy2d) X(gather) X(dgather)               \
    /* matrix products */                                                                          \
    X(gemm) X(gemm_batched) X(bias_fill) X(dbias)                                                  \
    /* elementwise */                                                                              \
    X(binary) X(dmul) X(sigmoid) X(dsigmoid) X(tanh) X(dtanh) X(elu) X(delu) X(dropout)            \
    X(ddropout) X(epilogue) X(depilogue)                                                           \
    /* rows, reductions, embedding */                                                              \
    X(softmax) X(dsoftmax) X(layernorm) X(dlayernorm) X(sum_axis) X(dsum_axis) X(sumsq)            \
    X(sumsq_many) X(embedding) X(dembedding)                                                       \
    /* fused blocks, the LSTM cell, losses, quantisation, the optimizer */                         \
    X(gate_add_norm) X(dgate_add_norm) X(weighted_add) X(dweighted_add) X(lstm_cell)               \
    X(dlstm_cell) X(pinball) X(dpinball) X(fake_quant) X(dfake_quant) X(adamw)
// clang-format on

extern const struct kn_backend kn_cpu;
#ifdef LG_HAVE_CUDA
extern const struct kn_backend kn_cuda; /* model/cuda/kernels.cu; kn_cuda.h for its handle */
#endif

/* Floating-point operations (2·m·n·k) of every CPU GEMM since the process started: what a
 * benchmark divides by the machine's GEMM rate for the step's GEMM-bound floor. */
double kn_cpu_gemm_flops(void);

/* Where a benchmark's GEMM time goes, by shape. While the profile is on, every kn_cpu_gemm call
 * and every kn_cpu_gemm_batched call (as a whole: `calls` counts its entries) adds its wall time
 * and flops to the row of its shape; off (the default), a call pays one relaxed atomic load.
 * kn_cpu_gemm_profile(true) also empties the table. Rows past KN_GEMM_PROFILE_MAX shapes are
 * summed into one row of m = n = k = 0. */
#define KN_GEMM_PROFILE_MAX 256
struct kn_gemm_shape {
    int m, n, k;
    bool ta, tb;
    int64_t calls;
    double seconds, flops;
};
void kn_cpu_gemm_profile(bool on);
/* Copies at most `max` rows into out[], the slowest (most seconds) first; returns how many. */
int kn_cpu_gemm_profile_rows(struct kn_gemm_shape *out, int max);

/* The one-thread AVX-512 GEMM (kernels_cpu_gemm.c) for the products it wins over OpenBLAS (B
 * as stored: weight gradients, the LSTM's recurrent steps): in use by default where the CPU has
 * AVX-512F, off with LG_GEMM=openblas (any other value leaves it on: a speed switch, never one
 * of results beyond rounding). kn_cpu_gemm_use_own sets it for the process (a
 * benchmark's A/B in one run) and returns whether it is now in use. */
bool kn_cpu_gemm_own(void);
bool kn_cpu_gemm_use_own(bool on);

/* The kernels for a device: &kn_cpu, &kn_cuda in a CUDA build, or NULL when this build has
 * none for it. */
const struct kn_backend *kn_backend_for(enum tn_device dev);

#endif
