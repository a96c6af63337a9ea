/* ops_fused.c — blocks of the TFT as single ops, each what a chain of simpler ops computes
 * (the same arithmetic, in the same order), without the chain's intermediate tensors and
 * passes over memory:
 *   ag_gate_add_norm   LN(skip + a ⊙ σ(g)) for z = [a, g]: split, sigmoid, mul, add, layernorm
 *   ag_weighted_sum    Σ_j v[..., j] · x_j: stack, reshape, mul, sum
 *   ag_linear_concat   concat_j(ξ_j)·Wᵀ + b: slice W per input, linear, add, and for factored
 *                      inputs the products W_j·w_j, W_j·b_j, their concatenation and a matmul
 * Their finite-difference checks are in tests/reference/test_gradcheck.c, and the unit tests
 * compare them with the chains they replace. */
#include "ag_impl.h"

/* ---- gate-add-norm --------------------------------------------------------------------------- */

/* in: z, skip, w, b; saved: 0 the sum s [rows, d] and, after it, the row statistics [2, rows]
 * (one allocation) */
static int gate_add_norm_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    struct tn_tensor *z = nd->in[0], *skip = nd->in[1], *w = nd->in[2], *b = nd->in[3];
    int64_t d = nd->ia[0], rows = nd->ia[1];
    int rc = LG_OK;
    bool fz = false;
    float *dz = ag_grad_w(ctx, z, &fz, &rc), *dskip = rc ? NULL : ag_grad(ctx, skip, &rc);
    float *dw = rc ? NULL : ag_grad(ctx, w, &rc), *db = rc ? NULL : ag_grad(ctx, b, &rc);
    if (rc) {
        if (fz && dz) nd->kb->zero(dz, tn_numel(z)); /* never leave a new gradient unwritten */
        return rc;
    }
    const float *sum = tn_f32(nd->saved[0]), *stats = sum + rows * d;
    nd->kb->dgate_add_norm(dz, dskip, dw, db, tn_f32(nd->out[0]->grad), tn_f32(z), sum, stats,
                           stats + rows, tn_f32(w), rows, d, !fz);
    return LG_OK;
}

struct tn_tensor *ag_gate_add_norm(struct ag_ctx *ctx, struct tn_tensor *z, struct tn_tensor *skip,
                                   struct tn_tensor *w, struct tn_tensor *b, float eps)
{
    static const char *const op = "ag_gate_add_norm";
    struct tn_tensor *in[4] = {z, skip, w, b};
    const struct kn_backend *kb =
        ag_begin_f32(ctx, op, 4, in, (const char *[]){"z", "skip", "w", "b"});
    if (!kb) return NULL;
    int64_t d = skip->ndim ? skip->ne[skip->ndim - 1] : 0;
    bool ok = d > 0 && z->ndim == skip->ndim && z->ne[z->ndim - 1] == 2 * d;
    for (int i = 0; ok && i < z->ndim - 1; i++) ok = z->ne[i] == skip->ne[i];
    if (!ok)
        return ag_fail(ctx, LG_EINVAL, "%s: z %s must be skip %s with a last axis twice as long",
                       op, AG_SHAPE(z), AG_SHAPE(skip));
    if (w->ndim != 1 || b->ndim != 1 || w->ne[0] != d || b->ne[0] != d)
        return ag_fail(ctx, LG_EINVAL, "%s: w %s and b %s must be [%lld]", op, AG_SHAPE(w),
                       AG_SHAPE(b), (long long)d);
    int64_t rows = tn_numel(skip) / d;
    struct tn_tensor *y = ag_out(ctx, "gate_add_norm", TN_F32, z->device, skip->ndim, skip->ne);
    struct tn_tensor *s =
        y ? ag_out(ctx, "gate_add_norm.sum", TN_F32, z->device, 1, (int64_t[]){rows * (d + 2)})
          : NULL;
    if (!s) return NULL;
    float *st = tn_f32(s) + rows * d;
    kb->gate_add_norm(tn_f32(y), tn_f32(s), st, st + rows, tn_f32(z), tn_f32(skip), tn_f32(w),
                      tn_f32(b), rows, d, eps);
    if (ag_wants_grad(ctx, 4, in)) {
        struct ag_node *nd = ag_record(ctx, op, gate_add_norm_backward, kb, 4, in, 1, &y, 0);
        if (!nd) return NULL;
        ag_set_ia(nd, 2, (const int64_t[]){d, rows});
        ag_save(nd, 0, s);
    }
    return y;
}

/* ---- weighted sum ---------------------------------------------------------------------------- */

/* in: x_0 … x_{n-1}, v; ia: 0 n, 1 rows, 2 h */
static int weighted_sum_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    int64_t n = nd->ia[0], rows = nd->ia[1], h = nd->ia[2];
    struct tn_tensor *v = nd->in[n];
    const float *dy = tn_f32(nd->out[0]->grad);
    int rc = LG_OK;
    float *dv = ag_grad(ctx, v, &rc);
    if (rc) return rc;
    for (int64_t j = 0; j < n; j++) {
        float *dx = ag_grad(ctx, nd->in[j], &rc);
        if (rc) return rc;
        if (dx || dv)
            nd->kb->dweighted_add(dx, dv, dy, tn_f32(nd->in[j]), tn_f32(v), j, n, rows, h);
    }
    return LG_OK;
}

struct tn_tensor *ag_weighted_sum(struct ag_ctx *ctx, struct tn_tensor **xs, int n,
                                  struct tn_tensor *v)
{
    static const char *const op = "ag_weighted_sum";
    if (n < 1) return ag_fail(ctx, LG_EINVAL, "%s: no inputs", op);
    if (!ag_inputs_ok(ctx, op, n, xs) || !ag_inputs_ok(ctx, op, 1, &v)) return NULL;
    const struct kn_backend *kb = ag_kernels(ctx, op, n, xs);
    if (!kb || !ag_kernels(ctx, op, 1, &v) || !ag_check_f32(ctx, op, "v", v)) return NULL;
    if (v->device != xs[0]->device)
        return ag_fail(ctx, LG_EINVAL, "%s: inputs on different devices (%s)", op, v->name);
    struct tn_tensor *x0 = xs[0];
    bool ok = x0->ndim >= 1 && v->ndim == x0->ndim && v->ne[v->ndim - 1] == n;
    for (int i = 0; ok && i < x0->ndim - 1; i++) ok = v->ne[i] == x0->ne[i];
    if (!ok)
        return ag_fail(ctx, LG_EINVAL, "%s: v %s must be x1 %s with a last axis of %d", op,
                       AG_SHAPE(v), AG_SHAPE(x0), n);
    for (int j = 0; j < n; j++)
        if (!tn_same_shape(xs[j], x0) || !ag_check_f32(ctx, op, "an input", xs[j]))
            return ag_fail(ctx, LG_EINVAL, "%s: x%d %s differs from x1 %s", op, j + 1,
                           AG_SHAPE(xs[j]), AG_SHAPE(x0));
    int64_t h = x0->ne[x0->ndim - 1], rows = h ? tn_numel(x0) / h : 0;
    struct tn_tensor *y = ag_out(ctx, "weighted_sum", TN_F32, x0->device, x0->ndim, x0->ne);
    if (!y) return NULL;
    for (int j = 0; j < n; j++)
        kb->weighted_add(tn_f32(y), tn_f32(xs[j]), tn_f32(v), j, n, rows, h, j > 0);
    struct tn_tensor *in_small[17], **in = in_small;
    if (n + 1 > 17 &&
        !(in = trk_alloc(ag_tracker(ctx), (size_t)(n + 1) * sizeof *in, "meta/ag_weighted_sum")))
        return ag_fail(ctx, LG_ENOMEM, "%s: out of memory for %d inputs", op, n);
    for (int j = 0; j < n; j++) in[j] = xs[j];
    in[n] = v;
    struct tn_tensor *ret = y;
    if (ag_wants_grad(ctx, n + 1, in)) {
        struct ag_node *nd = ag_record(ctx, op, weighted_sum_backward, kb, n + 1, in, 1, &y, 0);
        if (!nd)
            ret = NULL;
        else
            ag_set_ia(nd, 3, (const int64_t[]){n, rows, h});
    }
    if (in != in_small) trk_free(ag_tracker(ctx), in);
    return ret;
}

/* ---- linear over a concatenation ------------------------------------------------------------- */

/* in: 0 W, 1 bias, then x, w, b of every term; ia: 0 n, 1 rows, 2 H, 3 out, 4 factored terms,
 * 5-6 the epilogue (ag_epi_record). saved: 0 (when some term is factored) X [rows, nf],
 * U [nf, out], C [out], then room for the backward's dU [nf, out] and dC [out]: one
 * allocation; 1 the output, for an ELU epilogue. */
static int linear_concat_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    const struct kn_backend *kb = nd->kb;
    int n = (int)nd->ia[0], R = (int)nd->ia[1], H = (int)nd->ia[2], out = (int)nd->ia[3];
    int nf = (int)nd->ia[4], ldw = n * H;
    struct tn_tensor *W = nd->in[0], *bias = nd->in[1];
    float *dy = tn_f32(nd->out[0]->grad);
    const float *pw = tn_f32(W);
    /* every gradient first, so that a failure leaves none half made: a new one that is
     * written by a GEMM (beta 0) is zeroed before returning */
    float *dx[AG_MAX_TERMS], *dwf[AG_MAX_TERMS], *dbf[AG_MAX_TERMS];
    bool fx[AG_MAX_TERMS] = {false}, fw = false;
    int rc = LG_OK;
    float *db = ag_grad(ctx, bias, &rc), *dW = rc ? NULL : ag_grad_w(ctx, W, &fw, &rc);
    for (int j = 0; j < n && !rc; j++) {
        struct tn_tensor *x = nd->in[2 + 3 * j], *fwt = nd->in[3 + 3 * j], *fbt = nd->in[4 + 3 * j];
        dx[j] = fwt ? ag_grad(ctx, x, &rc) : ag_grad_w(ctx, x, &fx[j], &rc);
        dwf[j] = rc ? NULL : ag_grad(ctx, fwt, &rc);
        dbf[j] = rc ? NULL : ag_grad(ctx, fbt, &rc);
    }
    if (rc) {
        if (fw && dW) kb->zero(dW, tn_numel(W));
        for (int j = 0; j < n; j++)
            if (fx[j] && dx[j]) kb->zero(dx[j], tn_numel(nd->in[2 + 3 * j]));
        return rc;
    }
    ag_epi_backward(nd, 5, 1, dy, (int64_t)R * out); /* dy becomes the products' gradient */
    float *X = nf ? tn_f32(nd->saved[0]) : NULL, *U = X ? X + (int64_t)R * nf : NULL;
    float *dU = U ? U + (int64_t)(nf + 1) * out : NULL, *dC = dU ? dU + (int64_t)nf * out : NULL;
    if (nf) {
        kb->zero(dC, out); /* dC = Σ_r dy[r, :], dU = Xᵀ·dy: what the factors' products get */
        kb->dbias(dC, dy, R, out);
        kb->gemm(dU, X, dy, true, false, nf, out, R, 1.0f, nf, out, 0.0f, out);
        if (db) kb->axpy(db, dC, 1.0f, out); /* the bias's gradient is the same Σ_r dy[r, :] */
    } else if (db) {
        kb->dbias(db, dy, R, out);
    }
    for (int j = 0, f = 0; j < n; j++) {
        struct tn_tensor *x = nd->in[2 + 3 * j], *fwt = nd->in[3 + 3 * j], *fbt = nd->in[4 + 3 * j];
        const float *wj = pw + (int64_t)j * H;
        float *dwj = dW ? dW + (int64_t)j * H : NULL;
        float beta_w = fw ? 0.0f : 1.0f;
        if (!fwt) { /* y += x·W_jᵀ: dx = dy·W_j, dW_j += dyᵀ·x */
            if (dx[j])
                kb->gemm(dx[j], dy, wj, false, false, R, H, out, 1.0f, out, ldw,
                         fx[j] ? 0.0f : 1.0f, H);
            if (dwj)
                kb->gemm(dwj, dy, tn_f32(x), true, false, out, H, R, 1.0f, out, H, beta_w, ldw);
            continue;
        }
        /* y += x ⊗ u + c with u = W_j·w, c = W_j·b */
        const float *uf = U + (int64_t)f * out, *duf = dU + (int64_t)f * out;
        if (dx[j]) kb->gemm(dx[j], dy, uf, false, true, R, 1, out, 1.0f, out, out, 1.0f, 1);
        if (dwf[j]) kb->gemm(dwf[j], duf, wj, false, false, 1, H, out, 1.0f, out, ldw, 1.0f, H);
        if (dbf[j]) kb->gemm(dbf[j], dC, wj, false, false, 1, H, out, 1.0f, out, ldw, 1.0f, H);
        if (dwj) {
            kb->gemm(dwj, duf, tn_f32(fwt), true, false, out, H, 1, 1.0f, out, H, beta_w, ldw);
            if (fbt)
                kb->gemm(dwj, dC, tn_f32(fbt), true, false, out, H, 1, 1.0f, out, H, 1.0f, ldw);
        }
        f++;
    }
    return LG_OK;
}

/* Leading dims of a term's input (all but the last axis) equal to the first term's. */
static bool same_lead(const struct tn_tensor *a, const struct tn_tensor *b)
{
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim - 1; i++)
        if (a->ne[i] != b->ne[i]) return false;
    return true;
}

struct tn_tensor *ag_linear_concat(struct ag_ctx *ctx, const struct ag_term *terms, int n,
                                   struct tn_tensor *w, struct tn_tensor *bias,
                                   enum ag_epilogue epi, float p)
{
    static const char *const op = "ag_linear_concat";
    if (n < 1 || n > AG_MAX_TERMS)
        return ag_fail(ctx, LG_EINVAL, "%s: %d terms (1 to %d)", op, n, AG_MAX_TERMS);
    struct tn_tensor *in[2 + 3 * AG_MAX_TERMS];
    in[0] = w;
    in[1] = bias;
    for (int j = 0; j < n; j++) {
        in[2 + 3 * j] = terms[j].x;
        in[3 + 3 * j] = terms[j].w;
        in[4 + 3 * j] = terms[j].b;
    }
    int nin = 2 + 3 * n;
    if (!ag_inputs_ok(ctx, op, 1, &in[0])) return NULL;
    for (int j = 0; j < n; j++)
        if (!ag_inputs_ok(ctx, op, 1, &terms[j].x)) return NULL;
    const struct kn_backend *kb = ag_kernels(ctx, op, nin, in);
    if (!kb) return NULL;
    for (int i = 0; i < nin; i++)
        if (in[i] && !ag_check_f32(ctx, op, in[i]->name, in[i])) return NULL;
    const struct tn_tensor *x0 = terms[0].x;
    int64_t out = w->ndim == 2 ? w->ne[0] : 0, H = w->ndim == 2 ? w->ne[1] / n : 0;
    if (w->ndim != 2 || H < 1 || w->ne[1] != H * n || x0->ndim < 1)
        return ag_fail(ctx, LG_EINVAL, "%s: weight %s must be [out, %d·H]", op, AG_SHAPE(w), n);
    if (bias && (bias->ndim != 1 || bias->ne[0] != out))
        return ag_fail(ctx, LG_EINVAL, "%s: bias %s does not match weight %s", op, AG_SHAPE(bias),
                       AG_SHAPE(w));
    int64_t R = tn_numel(x0) / (x0->ne[x0->ndim - 1] ? x0->ne[x0->ndim - 1] : 1);
    int nf = 0;
    for (int j = 0; j < n; j++) {
        const struct ag_term *t = &terms[j];
        bool ok = same_lead(t->x, x0) && t->x->ne[t->x->ndim - 1] == (t->w ? 1 : H) &&
                  (!t->w || tn_numel(t->w) == H) && (!t->b || (t->w && tn_numel(t->b) == H));
        if (!ok)
            return ag_fail(ctx, LG_EINVAL,
                           "%s: term %d: x %s (w %s, b %s) must be [..., %lld] like term 1's "
                           "leading dims, or [..., 1] with a factor w and b of %lld elements",
                           op, j + 1, AG_SHAPE(t->x), t->w ? AG_SHAPE(t->w) : "none",
                           t->b ? AG_SHAPE(t->b) : "none", (long long)H, (long long)H);
        nf += t->w != NULL;
    }
    if (R > INT32_MAX || out > INT32_MAX || H * n > INT32_MAX)
        return ag_fail(ctx, LG_EINVAL, "%s: x %s exceeds the GEMM's int sizes", op, AG_SHAPE(x0));
    struct ag_epi e;
    struct tn_tensor *y = ag_epi_out(ctx, op, epi, p, x0, out, &e);
    struct tn_tensor *fac = NULL;
    if (y && nf)
        fac = ag_out(ctx, "linear.factors", TN_F32, x0->device, 1,
                     (int64_t[]){R * nf + (int64_t)(2 * nf + 2) * out});
    if (!y || (nf && !fac)) return NULL;
    int r = (int)R, o = (int)out, h = (int)H, ldw = n * h;
    const float *pw = tn_f32(w);
    float *py = tn_f32(y);
    if (nf) { /* C = bias + Σ W_j·b_j, U_f = W_j·w_j, X = [x_f ...]: y = C + X·U */
        float *X = tn_f32(fac), *U = X + R * nf, *C = U + (int64_t)nf * out;
        if (bias)
            kb->copy2d(C, tn_f32(bias), 1, out, out, out);
        else
            kb->zero(C, out);
        for (int j = 0, f = 0; j < n; j++) {
            const struct ag_term *t = &terms[j];
            if (!t->w) continue;
            const float *wj = pw + (int64_t)j * H;
            kb->gemm(U + (int64_t)f * out, tn_f32(t->w), wj, false, true, 1, o, h, 1.0f, h, ldw,
                     0.0f, o);
            if (t->b) kb->gemm(C, tn_f32(t->b), wj, false, true, 1, o, h, 1.0f, h, ldw, 1.0f, o);
            kb->copy2d(X + f, tn_f32(t->x), R, 1, nf, 1);
            f++;
        }
        kb->bias_fill(py, C, NULL, R, out);
        kb->gemm(py, X, U, false, false, r, o, nf, 1.0f, nf, o, 1.0f, o);
    } else if (bias) {
        kb->bias_fill(py, tn_f32(bias), NULL, R, out);
    }
    bool first = !nf && !bias; /* the first product writes y (beta 0) */
    for (int j = 0; j < n; j++) {
        if (terms[j].w) continue;
        kb->gemm(py, tn_f32(terms[j].x), pw + (int64_t)j * H, false, true, r, o, h, 1.0f, h, ldw,
                 first ? 0.0f : 1.0f, o);
        first = false;
    }
    ag_epi_apply(kb, &e, py, R * out);
    if (ag_wants_grad(ctx, nin, in)) {
        struct ag_node *nd = ag_record(ctx, op, linear_concat_backward, kb, nin, in, 1, &y, 0);
        if (!nd) return NULL;
        ag_set_ia(nd, 5, (const int64_t[]){n, R, H, out, nf});
        ag_epi_record(nd, &e, 5, 1, y);
        if (fac) ag_save(nd, 0, fac);
    }
    return y;
}
