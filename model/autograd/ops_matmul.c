/* ops_matmul.c — matmul (batched, either operand transposed) and linear, on the gemm kernels;
 * a linear may end in an ELU or a dropout applied to its own output in place (ag_linear_ex).
 * No transpose is ever materialised: every product passes its operands' layout to the GEMM.
 *
 * With C = op(A)·op(B): d op(A) = dC·op(B)ᵀ and d op(B) = op(A)ᵀ·dC, so
 *   A stored [M, K]: dA += dC·op(B)ᵀ        A stored [K, M] (ta): dA += op(B)·dCᵀ
 *   B stored [K, N]: dB += op(A)ᵀ·dC        B stored [N, K] (tb): dB += dCᵀ·op(A)
 * When B is shared by the batch and A is not transposed, the batch folds into M: one GEMM
 * forward, one for dA, one for dB (which sums over the batch by itself). */
#include <limits.h>

#include "ag_impl.h"

/* ia: 0 ta, 1 tb, 2 M, 3 N, 4 K, 5 batch, 6 b shared */
static int matmul_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    const struct kn_backend *kb = nd->kb;
    struct tn_tensor *a = nd->in[0], *b = nd->in[1];
    bool ta = nd->ia[0], tb = nd->ia[1], shared = nd->ia[6];
    int M = (int)nd->ia[2], N = (int)nd->ia[3], K = (int)nd->ia[4], batch = (int)nd->ia[5];
    const float *dc = tn_f32(nd->out[0]->grad), *pa = tn_f32(a), *pb = tn_f32(b);
    int lda = ta ? M : K, ldb = tb ? K : N;
    int64_t sa = (int64_t)M * K, sb = shared ? 0 : (int64_t)K * N, sc = (int64_t)M * N;
    bool fold = shared && !ta; /* rows of every batch entry stack into one [batch·M, K] */
    int rc = LG_OK;
    bool fa, fb = false;
    float *da = ag_grad_w(ctx, a, &fa, &rc);
    if (rc) return rc;
    /* with a shared b and ta, dB has stride 0: each batch entry adds into the same matrix, so a
     * new dB must start from zero */
    bool accumulate_db = shared && !fold;
    float *db = accumulate_db ? ag_grad(ctx, b, &rc) : ag_grad_w(ctx, b, &fb, &rc);
    if (rc) {
        if (fa && da) kb->zero(da, tn_numel(a)); /* never leave a new gradient unwritten */
        return rc;
    }
    float beta_a = fa ? 0.0f : 1.0f, beta_b = fb ? 0.0f : 1.0f; /* a new gradient is written */
    if (da) {
        if (fold)
            kb->gemm(da, dc, pb, false, !tb, batch * M, K, N, 1.0f, N, ldb, beta_a, K);
        else if (!ta)
            kb->gemm_batched(da, dc, pb, false, !tb, M, K, N, 1.0f, N, ldb, beta_a, K, batch, sc,
                             sb, sa);
        else
            kb->gemm_batched(da, pb, dc, tb, true, K, M, N, 1.0f, ldb, N, beta_a, M, batch, sb, sc,
                             sa);
    }
    if (db) {
        int64_t sdb = shared ? 0 : (int64_t)K * N;
        if (fold && !tb)
            kb->gemm(db, pa, dc, true, false, K, N, batch * M, 1.0f, K, N, beta_b, N);
        else if (fold && tb)
            kb->gemm(db, dc, pa, true, false, N, K, batch * M, 1.0f, N, K, beta_b, K);
        else if (!tb)
            kb->gemm_batched(db, pa, dc, !ta, false, K, N, M, 1.0f, lda, N, beta_b, N, batch, sa,
                             sc, sdb);
        else
            kb->gemm_batched(db, dc, pa, true, ta, N, K, M, 1.0f, N, lda, beta_b, K, batch, sc, sa,
                             sdb);
    }
    return LG_OK;
}

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

struct tn_tensor *ag_matmul(struct ag_ctx *ctx, struct tn_tensor *a, struct tn_tensor *b, bool ta,
                            bool tb)
{
    struct tn_tensor *in[2] = {a, b};
    const struct kn_backend *kb = ag_begin_f32(ctx, "ag_matmul", 2, in, (const char *[]){"a", "b"});
    if (!kb) return NULL;
    if (a->ndim < 2 || b->ndim < 2)
        return ag_fail(ctx, LG_EINVAL, "ag_matmul: operands need 2 or more dims: a %s b %s",
                       AG_SHAPE(a), AG_SHAPE(b));
    int na = a->ndim, nb = b->ndim;
    int64_t M = ta ? a->ne[na - 1] : a->ne[na - 2], Ka = ta ? a->ne[na - 2] : a->ne[na - 1];
    int64_t Kb = tb ? b->ne[nb - 1] : b->ne[nb - 2], N = tb ? b->ne[nb - 2] : b->ne[nb - 1];
    if (Ka != Kb)
        return ag_fail(ctx, LG_EINVAL, "ag_matmul: inner dimensions differ: a %s%s b %s%s",
                       AG_SHAPE(a), ta ? "^T" : "", AG_SHAPE(b), tb ? "^T" : "");
    bool shared = nb == 2;
    if (!shared) {
        bool same = nb == na;
        for (int i = 0; same && i < na - 2; i++) same = a->ne[i] == b->ne[i];
        if (!same)
            return ag_fail(ctx, LG_EINVAL,
                           "ag_matmul: batch dimensions differ: a %s b %s (b is [K, N] or has "
                           "a's leading dims)",
                           AG_SHAPE(a), AG_SHAPE(b));
    }
    int64_t batch = 1;
    for (int i = 0; i < na - 2; i++) batch *= a->ne[i];
    if (!fits_int(M * batch) || !fits_int(N) || !fits_int(Ka) || !fits_int(batch))
        return ag_fail(ctx, LG_EINVAL, "ag_matmul: a %s b %s exceed the GEMM's int sizes",
                       AG_SHAPE(a), AG_SHAPE(b));
    int64_t shape[TN_MAX_DIMS];
    for (int i = 0; i < na - 2; i++) shape[i] = a->ne[i];
    shape[na - 2] = M;
    shape[na - 1] = N;
    struct tn_tensor *y = ag_out(ctx, "matmul", TN_F32, a->device, na, shape);
    if (!y) return NULL;
    int m = (int)M, n = (int)N, k = (int)Ka, nbat = (int)batch;
    int lda = ta ? m : k, ldb = tb ? k : n;
    if (shared && !ta)
        kb->gemm(tn_f32(y), tn_f32(a), tn_f32(b), false, tb, nbat * m, n, k, 1.0f, lda, ldb, 0.0f,
                 n);
    else
        kb->gemm_batched(tn_f32(y), tn_f32(a), tn_f32(b), ta, tb, m, n, k, 1.0f, lda, ldb, 0.0f, n,
                         nbat, (int64_t)m * k, shared ? 0 : (int64_t)k * n, (int64_t)m * n);
    if (ag_wants_grad(ctx, 2, in)) {
        struct ag_node *nd = ag_record(ctx, "ag_matmul", matmul_backward, kb, 2, in, 1, &y, 0);
        if (!nd) return NULL;
        ag_set_ia(nd, 7, (const int64_t[]){ta, tb, M, N, Ka, batch, shared});
    }
    return y;
}

/* ---- linear ---------------------------------------------------------------------------------- */

/* ia: 0 rows, 1 in, 2 out, 3 the epilogue (0: none; enum kn_epilogue), 4 its dropout seed;
 * fa: 0 its dropout probability, 1 its scale; saved: 0 the output, for an ELU's backward */
static int linear_backward(struct ag_ctx *ctx, struct ag_node *nd)
{
    const struct kn_backend *kb = nd->kb;
    struct tn_tensor *x = nd->in[0], *w = nd->in[1], *b = nd->in[2];
    int R = (int)nd->ia[0], in = (int)nd->ia[1], out = (int)nd->ia[2];
    float *dy = tn_f32(nd->out[0]->grad);
    int rc = LG_OK;
    bool fx = false, fw = false; /* a new gradient is written by the GEMM (beta 0) */
    float *dx = ag_grad_w(ctx, x, &fx, &rc), *dw = rc ? NULL : ag_grad_w(ctx, w, &fw, &rc),
          *db = rc ? NULL : ag_grad(ctx, b, &rc);
    if (rc) { /* never leave a new gradient unwritten */
        if (fx && dx) kb->zero(dx, tn_numel(x));
        if (fw && dw) kb->zero(dw, tn_numel(w));
        return rc;
    }
    ag_epi_backward(nd, 3, 0, dy, (int64_t)R * out); /* dy becomes the product's gradient */
    if (dx)
        kb->gemm(dx, dy, tn_f32(w), false, false, R, in, out, 1.0f, out, in, fx ? 0.0f : 1.0f, in);
    if (dw)
        kb->gemm(dw, dy, tn_f32(x), true, false, out, in, R, 1.0f, out, in, fw ? 0.0f : 1.0f, in);
    if (db) kb->dbias(db, dy, R, out);
    return LG_OK;
}

struct tn_tensor *ag_linear_ex(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *w,
                               struct tn_tensor *b, enum ag_epilogue epi, float p)
{
    static const char *const op = "ag_linear";
    struct tn_tensor *in[3] = {x, w, b};
    if (!ag_inputs_ok(ctx, op, 2, in)) return NULL;
    const struct kn_backend *kb = ag_kernels(ctx, op, 3, in);
    if (!kb || !ag_check_f32(ctx, op, "x", x) || !ag_check_f32(ctx, op, "w", w) ||
        (b && !ag_check_f32(ctx, op, "b", b)))
        return NULL;
    if (w->ndim != 2 || x->ndim < 1 || x->ne[x->ndim - 1] != w->ne[1])
        return ag_fail(ctx, LG_EINVAL, "ag_linear: x %s does not match weight %s [out, in]",
                       AG_SHAPE(x), AG_SHAPE(w));
    int64_t nin = w->ne[1], nout = w->ne[0], R = nin ? tn_numel(x) / nin : 0;
    if (b && (b->ndim != 1 || b->ne[0] != nout))
        return ag_fail(ctx, LG_EINVAL, "ag_linear: bias %s does not match weight %s", AG_SHAPE(b),
                       AG_SHAPE(w));
    if (!fits_int(R) || !fits_int(nin) || !fits_int(nout))
        return ag_fail(ctx, LG_EINVAL, "ag_linear: x %s exceeds the GEMM's int sizes", AG_SHAPE(x));
    struct ag_epi e;
    struct tn_tensor *y = ag_epi_out(ctx, op, epi, p, x, nout, &e);
    if (!y) return NULL;
    if (b) kb->bias_fill(tn_f32(y), tn_f32(b), NULL, R, nout);
    kb->gemm(tn_f32(y), tn_f32(x), tn_f32(w), false, true, (int)R, (int)nout, (int)nin, 1.0f,
             (int)nin, (int)nin, b ? 1.0f : 0.0f, (int)nout);
    ag_epi_apply(kb, &e, tn_f32(y), R * nout);
    if (ag_wants_grad(ctx, 3, in)) {
        struct ag_node *nd = ag_record(ctx, op, linear_backward, kb, 3, in, 1, &y, 0);
        if (!nd) return NULL;
        ag_set_ia(nd, 3, (const int64_t[]){R, nin, nout});
        ag_epi_record(nd, &e, 3, 0, y);
    }
    return y;
}

struct tn_tensor *ag_linear(struct ag_ctx *ctx, struct tn_tensor *x, struct tn_tensor *w,
                            struct tn_tensor *b)
{
    return ag_linear_ex(ctx, x, w, b, AG_EPI_NONE, 0.0f);
}

/* ---- epilogues (ag_impl.h) ------------------------------------------------------------------- */

struct tn_tensor *ag_epi_out(struct ag_ctx *ctx, const char *op, enum ag_epilogue epi, float p,
                             const struct tn_tensor *x, int64_t out, struct ag_epi *e)
{
    *e = (struct ag_epi){epi == AG_EPI_ELU ? KN_EPI_ELU : 0, p, 1.0f, 0};
    if (epi == AG_EPI_DROPOUT && !(p >= 0.0f && p < 1.0f))
        return ag_fail(ctx, LG_EINVAL, "%s: dropout probability %g outside [0, 1)", op, (double)p);
    if (epi == AG_EPI_DROPOUT && ctx->opt.training && p > 0.0f) /* else ag_dropout's identity */
        *e = (struct ag_epi){KN_EPI_DROPOUT, p, 1.0f / (1.0f - p), tn_rng_next(&ctx->rng)};
    static const char *const name[] = {"linear", "linear.elu", "linear.dropout"};
    int64_t shape[TN_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) shape[i] = x->ne[i];
    shape[x->ndim - 1] = out;
    return ag_out(ctx, name[e->kind], TN_F32, x->device, x->ndim, shape);
}

void ag_epi_apply(const struct kn_backend *kb, const struct ag_epi *e, float *y, int64_t n)
{
    if (e->kind) kb->epilogue(y, e->kind, e->p, e->scale, e->seed, n);
}

void ag_epi_record(struct ag_node *nd, const struct ag_epi *e, int at, int slot,
                   struct tn_tensor *y)
{
    nd->ia[at] = e->kind;
    nd->ia[at + 1] = (int64_t)e->seed;
    nd->fa[0] = e->p;
    nd->fa[1] = e->scale;
    if (e->kind == KN_EPI_ELU) ag_save(nd, slot, y);
}

void ag_epi_backward(const struct ag_node *nd, int at, int slot, float *dy, int64_t n)
{
    if (!nd->ia[at]) return;
    const float *y = nd->saved[slot] ? tn_f32(nd->saved[slot]) : NULL;
    nd->kb->depilogue(dy, y, (enum kn_epilogue)nd->ia[at], nd->fa[0], nd->fa[1],
                      (uint64_t)nd->ia[at + 1], n);
}
