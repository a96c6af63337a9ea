/* kernels.cu — the CUDA kernel table kn_cuda (kernels.h): memory, strided gathers and their
 * reductions, elementwise maps, dropout, reductions over an axis, the gradient norm's sum of
 * squares (over many tensors, one read-back), and embeddings. GEMMs are in blas.cu; rows
 * (softmax, layer norm), the LSTM cell, losses, fake quantisation and AdamW are in
 * kernels_nn.cu.
 *
 * Every buffer is a device pointer; every launch is checked (KN_CHECK_LAUNCH) into the sticky
 * error (kn_cuda.h); nothing is launched for an empty range. */
#include <math.h>

#include "cuda_impl.h"

/* ---- memory ---------------------------------------------------------------------------------- */

void kn_cuda_zero(float *x, int64_t n)
{
    if (n <= 0) return;
    kn_cuda_record(cudaMemsetAsync(x, 0, (size_t)n * sizeof *x, 0), "cudaMemsetAsync (zero)");
}

__global__ void k_add_scalar(float *x /* [n] in-place */, float v, int64_t n)
{
    KN_LOOP(i, n) x[i] += v;
}

void kn_cuda_add_scalar(float *x, float v, int64_t n)
{
    if (n <= 0) return;
    k_add_scalar<<<kn_grid(n), KN_THREADS>>>(x, v, n);
    KN_CHECK_LAUNCH("k_add_scalar");
}

__global__ void k_axpy(float *dst /* [n] */, const float *src /* [n] */, float alpha, int64_t n)
{
    if (alpha == 1.0f) {
        KN_LOOP(i, n) dst[i] += src[i];
    } else {
        KN_LOOP(i, n) dst[i] += alpha * src[i];
    }
}

void kn_cuda_axpy(float *dst, const float *src, float alpha, int64_t n)
{
    if (n <= 0) return;
    k_axpy<<<kn_grid(n), KN_THREADS>>>(dst, src, alpha, n);
    KN_CHECK_LAUNCH("k_axpy");
}

__global__ void k_scale(float *y /* [n] */, const float *x /* [n] (may be y) */, float s, int64_t n)
{
    KN_LOOP(i, n) y[i] = s * x[i];
}

void kn_cuda_scale(float *y, const float *x, float s, int64_t n)
{
    if (n <= 0) return;
    k_scale<<<kn_grid(n), KN_THREADS>>>(y, x, s, n);
    KN_CHECK_LAUNCH("k_scale");
}

__global__ void k_copy2d(float *dst /* [rows, ld_dst] */, const float *src /* [rows, ld_src] */,
                         int64_t rows, int64_t cols, int64_t ld_dst, int64_t ld_src)
{
    KN_LOOP(t, rows * cols)
    {
        int64_t r = t / cols, c = t % cols;
        dst[r * ld_dst + c] = src[r * ld_src + c];
    }
}

void kn_cuda_copy2d(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld_dst,
                    int64_t ld_src)
{
    if (rows <= 0 || cols <= 0) return;
    if (rows == 1 || (ld_dst == cols && ld_src == cols)) {
        kn_cuda_record(cudaMemcpyAsync(dst, src, (size_t)(rows * cols) * sizeof *dst,
                                       cudaMemcpyDeviceToDevice, 0),
                       "cudaMemcpyAsync (copy2d)");
        return;
    }
    if (ld_dst >= cols && ld_src >= cols) {
        kn_cuda_record(cudaMemcpy2DAsync(dst, (size_t)ld_dst * sizeof *dst, src,
                                         (size_t)ld_src * sizeof *src, (size_t)cols * sizeof *dst,
                                         (size_t)rows, cudaMemcpyDeviceToDevice, 0),
                       "cudaMemcpy2DAsync (copy2d)");
        return;
    }
    k_copy2d<<<kn_grid(rows * cols), KN_THREADS>>>(dst, src, rows, cols, ld_dst, ld_src);
    KN_CHECK_LAUNCH("k_copy2d");
}

__global__ void k_dcopy2d(float *dsrc /* [rows, ld_src] */, const float *ddst /* [rows, ld_dst] */,
                          int64_t rows, int64_t cols, int64_t ld_src, int64_t ld_dst)
{
    KN_LOOP(t, rows * cols)
    {
        int64_t r = t / cols, c = t % cols;
        dsrc[r * ld_src + c] += ddst[r * ld_dst + c];
    }
}

void kn_cuda_dcopy2d(float *dsrc, const float *ddst, int64_t rows, int64_t cols, int64_t ld_src,
                     int64_t ld_dst)
{
    if (rows <= 0 || cols <= 0) return;
    k_dcopy2d<<<kn_grid(rows * cols), KN_THREADS>>>(dsrc, ddst, rows, cols, ld_src, ld_dst);
    KN_CHECK_LAUNCH("k_dcopy2d");
}

/* ---- strided geometry: gather, binary ops ---------------------------------------------------- */

static int64_t geom_numel(const struct kn_geom *g)
{
    return g->ne[0] * g->ne[1] * g->ne[2] * g->ne[3];
}

/* The offset, under strides s, of output element t of shape ne (ne[3] fastest). */
__device__ inline int64_t kn_offset(int64_t t, const int64_t *ne, const int64_t *s)
{
    int64_t i3 = t % ne[3];
    t /= ne[3];
    int64_t i2 = t % ne[2];
    t /= ne[2];
    int64_t i1 = t % ne[1];
    int64_t i0 = t / ne[1];
    return i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3];
}

__global__ void k_gather(float *out /* [g.ne] (n) */, const float *x /* read through g.sa */,
                         struct kn_geom g, int64_t n)
{
    KN_LOOP(t, n) out[t] = x[kn_offset(t, g.ne, g.sa)];
}

void kn_cuda_gather(float *out, const float *x, const struct kn_geom *g)
{
    int64_t n = geom_numel(g);
    if (n <= 0) return;
    k_gather<<<kn_grid(n), KN_THREADS>>>(out, x, *g, n);
    KN_CHECK_LAUNCH("k_gather");
}

template <int OP>
__global__ void k_binary(float *out /* [g.ne] (n) */, const float *a /* through g.sa */,
                         const float *b /* through g.sb */, struct kn_geom g, int64_t n)
{
    KN_LOOP(t, n)
    {
        float x = a[kn_offset(t, g.ne, g.sa)], z = b[kn_offset(t, g.ne, g.sb)];
        out[t] = OP == KN_ADD ? x + z : OP == KN_SUB ? x - z : x * z;
    }
}

void kn_cuda_binary(float *out, const float *a, const float *b, enum kn_binop op,
                    const struct kn_geom *g)
{
    int64_t n = geom_numel(g);
    if (n <= 0) return;
    switch (op) {
    case KN_ADD: k_binary<KN_ADD><<<kn_grid(n), KN_THREADS>>>(out, a, b, *g, n); break;
    case KN_SUB: k_binary<KN_SUB><<<kn_grid(n), KN_THREADS>>>(out, a, b, *g, n); break;
    case KN_MUL: k_binary<KN_MUL><<<kn_grid(n), KN_THREADS>>>(out, a, b, *g, n); break;
    }
    KN_CHECK_LAUNCH("k_binary");
}

/* ---- reductions into a strided target: dgather, dmul, dbias ----------------------------------
 *
 * target[Σ_k i_k·st[k]] += v(i) over every index i of an output of shape ne, with
 * v(i) = alpha·dy[i] (dgather) or dy[i]·other[Σ_k i_k·so[k]] (dmul). Output dims whose target
 * stride is 0 are summed over ("reduced"); the other ("kept") dims pick the target element.
 * When the kept strides cannot overlap, every target element has one owner — a thread, or a
 * block for long sums — that adds its whole sum once, in a fixed order: no atomics, the same
 * result every run. Overlapping kept strides (never made by the ops, allowed by the contract)
 * fall back to one atomic add per element. */
struct kn_rplan {
    int nk, nr;
    int64_t kne[4], kst[4], kdy[4], kot[4]; /* kept dims: extent, target, dy, other strides */
    int64_t rne[4], rdy[4], rot[4];         /* reduced dims: extent, dy, other strides */
    int64_t nkept, nred;
};

/* The plan for output shape ne (dy contiguous), target strides st, other strides so (may be
 * NULL). Returns false when kept target strides may overlap. */
static bool rplan_make(struct kn_rplan *p, const int64_t *ne, const int64_t *st, const int64_t *so)
{
    int64_t cs[4]; /* dy's contiguous strides */
    cs[3] = 1;
    for (int k = 2; k >= 0; k--) cs[k] = cs[k + 1] * ne[k + 1];
    memset(p, 0, sizeof *p);
    p->nkept = p->nred = 1;
    for (int k = 0; k < 4; k++) {
        if (ne[k] == 1) continue;
        int64_t o = so ? so[k] : 0;
        if (st[k] == 0) {
            p->rne[p->nr] = ne[k], p->rdy[p->nr] = cs[k], p->rot[p->nr] = o;
            p->nr++;
            p->nred *= ne[k];
        } else {
            p->kne[p->nk] = ne[k], p->kst[p->nk] = st[k], p->kdy[p->nk] = cs[k], p->kot[p->nk] = o;
            p->nk++;
            p->nkept *= ne[k];
        }
    }
    /* no overlap: sorted by stride, each stride exceeds every offset the smaller ones reach */
    int order[4] = {0, 1, 2, 3};
    for (int a = 0; a < p->nk; a++)
        for (int b = a + 1; b < p->nk; b++)
            if (p->kst[order[b]] < p->kst[order[a]]) {
                int t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
    int64_t reach = 0;
    for (int a = 0; a < p->nk; a++) {
        int k = order[a];
        if (p->kst[k] < 0 || p->kst[k] <= reach) return false;
        reach += p->kst[k] * (p->kne[k] - 1);
    }
    return true;
}

/* Offsets (target, dy, other) of kept element t. */
__device__ inline void rplan_kept(const struct kn_rplan &p, int64_t t, int64_t *od, int64_t *oy,
                                  int64_t *oo)
{
    *od = *oy = *oo = 0;
    for (int j = p.nk - 1; j >= 0; j--) {
        int64_t i = t % p.kne[j];
        t /= p.kne[j];
        *od += i * p.kst[j];
        *oy += i * p.kdy[j];
        *oo += i * p.kot[j];
    }
}

/* v of reduced element r, from the kept element's dy and other offsets. */
template <bool OTHER>
__device__ inline float rplan_value(const struct kn_rplan &p, int64_t r, int64_t oy, int64_t oo,
                                    const float *dy, const float *other)
{
    for (int j = p.nr - 1; j >= 0; j--) {
        int64_t i = r % p.rne[j];
        r /= p.rne[j];
        oy += i * p.rdy[j];
        oo += i * p.rot[j];
    }
    return OTHER ? dy[oy] * other[oo] : dy[oy];
}

/* One thread per target element. */
template <bool OTHER>
__global__ void k_reduce_thread(float *dst /* through p's target strides */,
                                const float *dy /* [ne] */, const float *other /* or NULL */,
                                float alpha, struct kn_rplan p)
{
    KN_LOOP(t, p.nkept)
    {
        int64_t od, oy, oo;
        rplan_kept(p, t, &od, &oy, &oo);
        float acc = 0.0f;
        for (int64_t r = 0; r < p.nred; r++) acc += rplan_value<OTHER>(p, r, oy, oo, dy, other);
        dst[od] += OTHER ? acc : alpha * acc;
    }
}

/* One block per target element (long sums), a fixed-order tree over the block. */
template <bool OTHER>
__global__ void k_reduce_block(float *dst /* through p's target strides */,
                               const float *dy /* [ne] */, const float *other /* or NULL */,
                               float alpha, struct kn_rplan p)
{
    __shared__ float sh[32];
    for (int64_t t = blockIdx.x; t < p.nkept; t += gridDim.x) {
        int64_t od, oy, oo;
        rplan_kept(p, t, &od, &oy, &oo);
        float acc = 0.0f;
        for (int64_t r = threadIdx.x; r < p.nred; r += blockDim.x)
            acc += rplan_value<OTHER>(p, r, oy, oo, dy, other);
        acc = kn_block_sum(acc, sh);
        if (threadIdx.x == 0) dst[od] += OTHER ? acc : alpha * acc;
    }
}

/* One atomic add per element (target strides that may overlap). */
template <bool OTHER>
__global__ void k_reduce_atomic(float *dst /* through g.sa */, const float *dy /* [g.ne] (n) */,
                                const float *other /* through g.sb, or NULL */, float alpha,
                                struct kn_geom g, int64_t n)
{
    KN_LOOP(t, n)
    {
        float v = OTHER ? dy[t] * other[kn_offset(t, g.ne, g.sb)] : alpha * dy[t];
        atomicAdd(dst + kn_offset(t, g.ne, g.sa), v);
    }
}

/* dst[Σ i·g.sa] += v(i); other (dmul) is read through g.sb. */
static void reduce_into(float *dst, const float *dy, const float *other, float alpha,
                        const struct kn_geom *g, const char *name)
{
    int64_t n = geom_numel(g);
    if (n <= 0) return;
    struct kn_rplan p;
    if (!rplan_make(&p, g->ne, g->sa, other ? g->sb : NULL)) {
        if (other)
            k_reduce_atomic<true><<<kn_grid(n), KN_THREADS>>>(dst, dy, other, alpha, *g, n);
        else
            k_reduce_atomic<false><<<kn_grid(n), KN_THREADS>>>(dst, dy, other, alpha, *g, n);
    } else if (p.nred >= 256 && p.nkept < 16384) {
        unsigned blocks = (unsigned)(p.nkept < 65535 ? p.nkept : 65535);
        if (other)
            k_reduce_block<true><<<blocks, KN_THREADS>>>(dst, dy, other, alpha, p);
        else
            k_reduce_block<false><<<blocks, KN_THREADS>>>(dst, dy, other, alpha, p);
    } else {
        if (other)
            k_reduce_thread<true><<<kn_grid(p.nkept), KN_THREADS>>>(dst, dy, other, alpha, p);
        else
            k_reduce_thread<false><<<kn_grid(p.nkept), KN_THREADS>>>(dst, dy, other, alpha, p);
    }
    KN_CHECK_LAUNCH(name);
}

void kn_cuda_dgather(float *dx, const float *dy, float alpha, const struct kn_geom *g)
{
    reduce_into(dx, dy, NULL, alpha, g, "dgather");
}

void kn_cuda_dmul(float *dx, const float *dy, const float *other, const struct kn_geom *g)
{
    reduce_into(dx, dy, other, 1.0f, g, "dmul");
}

void kn_cuda_dbias(float *db, const float *dy, int64_t rows, int64_t n)
{
    /* dy [rows, n] summed over rows into db [n]: the output shape, db's strides (0 on rows) */
    struct kn_geom g = {{1, 1, rows, n}, {0, 0, 0, 1}, {0, 0, 0, 0}};
    reduce_into(db, dy, NULL, 1.0f, &g, "dbias");
}

__global__ void k_bias_fill(float *y /* [rows, n] */, const float *b1 /* [n] or NULL */,
                            const float *b2 /* [n] or NULL */, int64_t rows, int64_t n)
{
    KN_LOOP(t, rows * n)
    {
        int64_t j = t % n;
        y[t] = b1 && b2 ? b1[j] + b2[j] : b1 ? b1[j] : b2 ? b2[j] : 0.0f;
    }
}

void kn_cuda_bias_fill(float *y, const float *b1, const float *b2, int64_t rows, int64_t n)
{
    if (rows <= 0 || n <= 0) return;
    k_bias_fill<<<kn_grid(rows * n), KN_THREADS>>>(y, b1, b2, rows, n);
    KN_CHECK_LAUNCH("k_bias_fill");
}

/* ---- elementwise maps ------------------------------------------------------------------------ */

__global__ void k_sigmoid(float *y /* [n] */, const float *x /* [n] */, int64_t n)
{
    KN_LOOP(i, n) y[i] = kn_dsigmoid(x[i]);
}

__global__ void k_tanh(float *y /* [n] */, const float *x /* [n] */, int64_t n)
{
    KN_LOOP(i, n) y[i] = kn_dtanh(x[i]);
}

__global__ void k_elu(float *y /* [n] */, const float *x /* [n] */, int64_t n)
{
    KN_LOOP(i, n) y[i] = kn_elu(x[i]);
}

__global__ void k_dsigmoid(float *dx /* [n] */, const float *y /* [n] */, const float *dy /* [n] */,
                           int64_t n)
{
    KN_LOOP(i, n) dx[i] += dy[i] * y[i] * (1.0f - y[i]);
}

__global__ void k_dtanh(float *dx /* [n] */, const float *y /* [n] */, const float *dy /* [n] */,
                        int64_t n)
{
    KN_LOOP(i, n) dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

__global__ void k_delu(float *dx /* [n] */, const float *y /* [n] */, const float *dy /* [n] */,
                       int64_t n)
{
    KN_LOOP(i, n) dx[i] += kn_delu(y[i], dy[i]);
}

#define KN_MAP(fn, kernel)                                                                         \
    void fn(float *y, const float *x, int64_t n)                                                   \
    {                                                                                              \
        if (n <= 0) return;                                                                        \
        kernel<<<kn_grid(n), KN_THREADS>>>(y, x, n);                                               \
        KN_CHECK_LAUNCH(#kernel);                                                                  \
    }
#define KN_DMAP(fn, kernel)                                                                        \
    void fn(float *dx, const float *y, const float *dy, int64_t n)                                 \
    {                                                                                              \
        if (n <= 0) return;                                                                        \
        kernel<<<kn_grid(n), KN_THREADS>>>(dx, y, dy, n);                                          \
        KN_CHECK_LAUNCH(#kernel);                                                                  \
    }
KN_MAP(kn_cuda_sigmoid, k_sigmoid)
KN_MAP(kn_cuda_tanh, k_tanh)
KN_MAP(kn_cuda_elu, k_elu)
KN_DMAP(kn_cuda_dsigmoid, k_dsigmoid)
KN_DMAP(kn_cuda_dtanh, k_dtanh)
KN_DMAP(kn_cuda_delu, k_delu)

/* ---- dropout: the CPU's counter-based hash, so a seed drops the same elements on both ------- */

__global__ void k_dropout(float *y /* [n] */, int8_t *mask /* [n] */, const float *x /* [n] */,
                          float p, float scale, uint32_t s0, uint32_t s1, int64_t n)
{
    KN_LOOP(i, n)
    {
        int8_t keep = kn_dropout_keep(i, s0, s1, p); /* kn_math.h: the CPU's draw */
        mask[i] = keep;
        y[i] = keep ? x[i] * scale : 0.0f;
    }
}

void kn_cuda_dropout(float *y, int8_t *mask, const float *x, float p, float scale, uint64_t seed,
                     int64_t n)
{
    if (n <= 0) return;
    k_dropout<<<kn_grid(n), KN_THREADS>>>(y, mask, x, p, scale, (uint32_t)seed,
                                          (uint32_t)(seed >> 32), n);
    KN_CHECK_LAUNCH("k_dropout");
}

__global__ void k_ddropout(float *dx /* [n] */, const float *dy /* [n] */,
                           const int8_t *mask /* [n] */, float scale, int64_t n)
{
    KN_LOOP(i, n) dx[i] += mask[i] ? dy[i] * scale : 0.0f;
}

void kn_cuda_ddropout(float *dx, const float *dy, const int8_t *mask, float scale, int64_t n)
{
    if (n <= 0) return;
    k_ddropout<<<kn_grid(n), KN_THREADS>>>(dx, dy, mask, scale, n);
    KN_CHECK_LAUNCH("k_ddropout");
}

/* ---- epilogues in place: the CPU's ELU and dropout draw ------------------------------------- */

__global__ void k_epilogue(float *y /* [n] */, int kind, float p, float scale, uint32_t s0,
                           uint32_t s1, int64_t n)
{
    KN_LOOP(i, n)
    {
        if (kind == KN_EPI_ELU)
            y[i] = kn_elu(y[i]);
        else
            y[i] = kn_dropout_keep(i, s0, s1, p) ? y[i] * scale : 0.0f;
    }
}

void kn_cuda_epilogue(float *y, enum kn_epilogue kind, float p, float scale, uint64_t seed,
                      int64_t n)
{
    if (n <= 0) return;
    k_epilogue<<<kn_grid(n), KN_THREADS>>>(y, (int)kind, p, scale, (uint32_t)seed,
                                           (uint32_t)(seed >> 32), n);
    KN_CHECK_LAUNCH("k_epilogue");
}

__global__ void k_depilogue(float *d /* [n] */, const float *y /* [n] */, int kind, float p,
                            float scale, uint32_t s0, uint32_t s1, int64_t n)
{
    KN_LOOP(i, n)
    {
        if (kind == KN_EPI_ELU)
            d[i] = kn_delu(y[i], d[i]);
        else
            d[i] = kn_dropout_keep(i, s0, s1, p) ? d[i] * scale : 0.0f;
    }
}

void kn_cuda_depilogue(float *d, const float *y, enum kn_epilogue kind, float p, float scale,
                       uint64_t seed, int64_t n)
{
    if (n <= 0) return;
    k_depilogue<<<kn_grid(n), KN_THREADS>>>(d, y, (int)kind, p, scale, (uint32_t)seed,
                                            (uint32_t)(seed >> 32), n);
    KN_CHECK_LAUNCH("k_depilogue");
}

/* ---- reductions over an axis ----------------------------------------------------------------- */

/* inner > 1: y[o, i] = alpha·(x[o, 0, i] + x[o, 1, i] + ...), summed in order as on the CPU */
__global__ void k_sum_axis(float *y /* [outer, inner] */, const float *x /* [outer, n, inner] */,
                           int64_t outer, int64_t n, int64_t inner, float alpha)
{
    KN_LOOP(t, outer * inner)
    {
        int64_t o = t / inner, i = t % inner;
        const float *xo = x + o * n * inner + i;
        float acc = xo[0];
        for (int64_t k = 1; k < n; k++) acc += xo[k * inner];
        y[t] = acc * alpha;
    }
}

/* inner == 1: one block per row, in double as on the CPU */
__global__ void k_sum_rows(float *y /* [outer] */, const float *x /* [outer, n] */, int64_t outer,
                           int64_t n, float alpha)
{
    __shared__ double sh[32];
    for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
        double acc = 0.0;
        for (int64_t k = threadIdx.x; k < n; k += blockDim.x) acc += x[o * n + k];
        acc = kn_block_sum(acc, sh);
        if (threadIdx.x == 0) y[o] = (float)(alpha * acc);
    }
}

void kn_cuda_sum_axis(float *y, const float *x, int64_t outer, int64_t n, int64_t inner,
                      float alpha)
{
    if (outer <= 0 || inner <= 0) return;
    if (n <= 0) { /* an empty sum */
        kn_cuda_zero(y, outer * inner);
        return;
    }
    if (inner == 1) {
        unsigned blocks = (unsigned)(outer < 65535 ? outer : 65535);
        k_sum_rows<<<blocks, KN_THREADS>>>(y, x, outer, n, alpha);
        KN_CHECK_LAUNCH("k_sum_rows");
    } else {
        k_sum_axis<<<kn_grid(outer * inner), KN_THREADS>>>(y, x, outer, n, inner, alpha);
        KN_CHECK_LAUNCH("k_sum_axis");
    }
}

__global__ void k_dsum_axis(float *dx /* [outer, n, inner] */, const float *dy /* [outer, inner] */,
                            int64_t outer, int64_t n, int64_t inner, float alpha)
{
    KN_LOOP(t, outer * n * inner)
    {
        int64_t o = t / (n * inner), i = t % inner;
        dx[t] += alpha * dy[o * inner + i];
    }
}

void kn_cuda_dsum_axis(float *dx, const float *dy, int64_t outer, int64_t n, int64_t inner,
                       float alpha)
{
    if (outer <= 0 || n <= 0 || inner <= 0) return;
    k_dsum_axis<<<kn_grid(outer * n * inner), KN_THREADS>>>(dx, dy, outer, n, inner, alpha);
    KN_CHECK_LAUNCH("k_dsum_axis");
}

/* ---- Σ x² over many tensors (the global gradient norm) ----------------------------------------
 *
 * The tensors are cut into parts of `tile` consecutive elements of one tensor; one block sums a
 * part in double (a fixed tree) into kn_sumsq_part, then one block adds the parts in index order
 * into kn_sumsq_total, which is read back once: one host synchronise for the whole list, not
 * one per tensor. The tile and the parts depend only on the tensors' sizes, so the sum is the
 * same bits every run (it differs from the CPU's sequential double sum by rounding only). Parts
 * and total live in the module's memory: nothing is allocated per call. */
#define SUMSQ_MAX_PARTS 16384
#define SUMSQ_ROUND     (SUMSQ_MAX_PARTS / 2) /* tensors per round, at most */
#define SUMSQ_MIN_TILE  8192
#define SUMSQ_BATCH     64 /* tensors per launch: the parameters stay under 4 KiB */
__device__ double kn_sumsq_part[SUMSQ_MAX_PARTS];
__device__ double kn_sumsq_total;

struct kn_sumsq_batch {
    const float *x[SUMSQ_BATCH];
    int64_t n[SUMSQ_BATCH];
    int64_t first[SUMSQ_BATCH + 1]; /* tensor i's first part (from base); first[count]: parts */
    int64_t base;                   /* this batch's first part in kn_sumsq_part */
    int64_t tile;
    int count;
};

__global__ void k_sumsq_parts(struct kn_sumsq_batch b /* x[i] [n[i]] → kn_sumsq_part [parts] */)
{
    __shared__ double sh[32];
    int64_t parts = b.first[b.count];
    for (int64_t p = blockIdx.x; p < parts; p += gridDim.x) {
        int lo = 0, hi = b.count - 1; /* the last tensor whose first part is ≤ p */
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (b.first[mid] <= p)
                lo = mid;
            else
                hi = mid - 1;
        }
        const float *x = b.x[lo];
        int64_t begin = (p - b.first[lo]) * b.tile, end = begin + b.tile;
        if (end > b.n[lo]) end = b.n[lo];
        double acc = 0.0;
        for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) acc += (double)x[i] * x[i];
        acc = kn_block_sum(acc, sh);
        if (threadIdx.x == 0) kn_sumsq_part[b.base + p] = acc;
    }
}

__global__ void k_sumsq_total(int64_t parts /* kn_sumsq_part [parts] → kn_sumsq_total */)
{
    __shared__ double sh[32];
    double acc = 0.0;
    for (int64_t p = threadIdx.x; p < parts; p += blockDim.x) acc += kn_sumsq_part[p];
    acc = kn_block_sum(acc, sh);
    if (threadIdx.x == 0) kn_sumsq_total = acc;
}

/* One round: tensors [i0, i1) with at most SUMSQ_ROUND non-empty ones; their Σ x² read back. */
static double sumsq_round(const float *const *x, const int64_t *n, int i0, int i1)
{
    int64_t elems = 0, live = 0;
    for (int i = i0; i < i1; i++)
        if (n[i] > 0) elems += n[i], live++;
    /* parts ≤ elems / tile + live ≤ 2 · SUMSQ_ROUND */
    int64_t tile = (elems + SUMSQ_ROUND - 1) / SUMSQ_ROUND;
    tile = tile < SUMSQ_MIN_TILE ? SUMSQ_MIN_TILE : (tile + 1023) / 1024 * 1024;
    struct kn_sumsq_batch b;
    b.base = 0;
    b.tile = tile;
    for (int i = i0; i < i1;) {
        b.count = 0;
        b.first[0] = 0;
        for (; i < i1 && b.count < SUMSQ_BATCH; i++) {
            if (n[i] <= 0) continue;
            b.x[b.count] = x[i];
            b.n[b.count] = n[i];
            b.first[b.count + 1] = b.first[b.count] + (n[i] + tile - 1) / tile;
            b.count++;
        }
        if (!b.count) break;
        int64_t parts = b.first[b.count];
        k_sumsq_parts<<<(unsigned)(parts < 4096 ? parts : 4096), KN_THREADS>>>(b);
        KN_CHECK_LAUNCH("k_sumsq_parts");
        b.base += parts;
    }
    k_sumsq_total<<<1, 1024>>>(b.base);
    KN_CHECK_LAUNCH("k_sumsq_total");
    double s = NAN;
    kn_cuda_record(cudaMemcpyFromSymbol(&s, kn_sumsq_total, sizeof s),
                   "cudaMemcpyFromSymbol (sumsq)");
    return kn_cuda_error() ? NAN : s; /* a non-finite norm fails the step */
}

extern "C" double kn_cuda_sumsq_many(const float *const *x, const int64_t *n, int count)
{
    if (kn_cuda_error()) return NAN;
    double total = 0.0;
    for (int i0 = 0; i0 < count;) { /* rounds of at most SUMSQ_ROUND non-empty tensors */
        int i1 = i0, live = 0;
        for (; i1 < count && live < SUMSQ_ROUND; i1++) live += n[i1] > 0;
        if (live) total += sumsq_round(x, n, i0, i1);
        i0 = i1;
    }
    return total;
}

double kn_cuda_sumsq(const float *x, int64_t n)
{
    return n > 0 ? kn_cuda_sumsq_many(&x, &n, 1) : 0.0;
}

/* ---- embedding ------------------------------------------------------------------------------- */

/* Indices are trusted: ag_embedding checks their range only when they are on the host, so
 * device indices must be valid (docs/cuda.md); a bad one reads out of bounds. */
__global__ void k_embedding(float *y /* [n_idx, h] */, const float *w /* [card, h] */,
                            const int32_t *idx /* [n_idx] */, int64_t n_idx, int64_t h)
{
    KN_LOOP(t, n_idx * h) y[t] = w[(int64_t)idx[t / h] * h + t % h];
}

void kn_cuda_embedding(float *y, const float *w, const int32_t *idx, int64_t n_idx, int64_t h)
{
    if (n_idx <= 0 || h <= 0) return;
    k_embedding<<<kn_grid(n_idx * h), KN_THREADS>>>(y, w, idx, n_idx, h);
    KN_CHECK_LAUNCH("k_embedding");
}

/* A repeated index collects every row's gradient: atomic adds (the one nondeterministic sum). */
__global__ void k_dembedding(float *dw /* [card, h] */, const float *dy /* [n_idx, h] */,
                             const int32_t *idx /* [n_idx] */, int64_t n_idx, int64_t h)
{
    KN_LOOP(t, n_idx * h) atomicAdd(dw + (int64_t)idx[t / h] * h + t % h, dy[t]);
}

void kn_cuda_dembedding(float *dw, const float *dy, const int32_t *idx, int64_t n_idx, int64_t h)
{
    if (n_idx <= 0 || h <= 0) return;
    k_dembedding<<<kn_grid(n_idx * h), KN_THREADS>>>(dw, dy, idx, n_idx, h);
    KN_CHECK_LAUNCH("k_dembedding");
}

/* ---- the table ------------------------------------------------------------------------------- */

#define KN_CUDA_ENTRY(k) .k = kn_cuda_##k,
extern "C" const struct kn_backend kn_cuda = {.name = "cuda", KN_KERNELS(KN_CUDA_ENTRY)};
#undef KN_CUDA_ENTRY
