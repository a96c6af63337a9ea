/* device.cu — tn_device.h for CUDA builds (tagged device memory through the tracker, copies
 * and memsets on the legacy default stream), the cuBLAS handle and its tagged workspace, and
 * the sticky error of asynchronous device work (kn_cuda.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

extern "C" {
#include "trk_cuda.h"
}

static struct {
    cublasHandle_t blas;
    bool lazy; /* the handle was made by the first GEMM, without kn_cuda_init */
    bool tf32;
    struct trk_tracker *trk; /* owner of the workspace */
    void *workspace;
    int err; /* sticky: the first failure since init */
    char msg[400];
} S;

/* ---- the sticky error ------------------------------------------------------------------------ */

void kn_cuda_record(cudaError_t e, const char *what)
{
    if (e == cudaSuccess || S.err) return;
    S.err = LG_ECUDA;
    snprintf(S.msg, sizeof S.msg, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

void kn_cuda_record_blas(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS || S.err) return;
    S.err = LG_ECUDA;
    snprintf(S.msg, sizeof S.msg, "%s: %s", what, kn_cublas_status(s));
}

extern "C" int kn_cuda_error(void) { return S.err; }
extern "C" const char *kn_cuda_errmsg(void) { return S.msg; }

extern "C" void kn_cuda_clear_error(void)
{
    S.err = LG_OK;
    S.msg[0] = '\0';
}

/* LG_OK, or the sticky error as an lg_fail status naming `what` was refused. */
static int sticky(const char *what)
{
    if (!S.err) return LG_OK;
    return lg_fail(LG_ECUDA, "%s: earlier device work failed: %s", what, S.msg);
}

extern "C" int kn_cuda_sync(void)
{
    kn_cuda_record(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return sticky("device synchronise");
}

/* ---- cuBLAS ---------------------------------------------------------------------------------- */

extern "C" void kn_cuda_options_from_env(struct kn_cuda_options *opt)
{
    memset(opt, 0, sizeof *opt);
    const char *s = getenv("LG_CUDA_TF32");
    opt->tf32 = s && *s && strcmp(s, "0") != 0;
    s = getenv("LG_CUDA_WORKSPACE");
    if (s && *s) opt->workspace = (size_t)strtoull(s, NULL, 10);
}

/* A handle on the legacy default stream with the math mode asked for. */
static int make_handle(cublasHandle_t *out, bool tf32)
{
    *out = NULL;
    const struct kn_cublas *cb = kn_cublas_api();
    if (!cb) return lg_errcode();
    cublasStatus_t st = cb->create(out);
    if (st != CUBLAS_STATUS_SUCCESS) {
        *out = NULL;
        return lg_fail(LG_ECUDA, "cublasCreate: %s", kn_cublas_status(st));
    }
    st = cb->set_stream(*out, 0);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cb->set_math_mode(*out, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) {
        cb->destroy(*out);
        *out = NULL;
        return lg_fail(LG_ECUDA, "configuring the cuBLAS handle: %s", kn_cublas_status(st));
    }
    return LG_OK;
}

cublasHandle_t kn_cuda_blas(void)
{
    if (S.blas) return S.blas;
    struct kn_cuda_options opt;
    kn_cuda_options_from_env(&opt);
    if (make_handle(&S.blas, opt.tf32) != LG_OK) {
        if (!S.err) {
            S.err = LG_ECUDA;
            snprintf(S.msg, sizeof S.msg, "%s", lg_errmsg());
        }
        return NULL;
    }
    S.lazy = true;
    S.tf32 = opt.tf32;
    return S.blas;
}

extern "C" int kn_cuda_init(struct trk_tracker *trk, const struct kn_cuda_options *opt)
{
    if (S.blas && !S.lazy)
        return lg_fail(LG_EINVAL, "kn_cuda_init: already initialised (kn_cuda_fini first)");
    if (!trk_has_device(trk))
        return lg_fail(LG_EUNAVAIL,
                       "kn_cuda_init: the tracker has no CUDA backend (trk_cuda_attach)");
    kn_cuda_fini(); /* a lazily made handle goes */
    struct kn_cuda_options o;
    if (opt)
        o = *opt;
    else
        kn_cuda_options_from_env(&o);
    size_t ws = o.workspace ? o.workspace : (size_t)32 << 20;
    int rc = make_handle(&S.blas, o.tf32);
    if (rc != LG_OK) return rc;
    S.workspace = trk_dev_alloc(trk, ws, "cuda/cublas.workspace");
    if (!S.workspace) {
        rc = lg_errcode() ? lg_errcode() : LG_ENOMEM;
        goto fail;
    }
    S.trk = trk;
    {
        cublasStatus_t st = kn_cublas_api()->set_workspace(S.blas, S.workspace, ws);
        if (st != CUBLAS_STATUS_SUCCESS) {
            rc = lg_fail(LG_ECUDA, "cublasSetWorkspace (%zu bytes): %s", ws, kn_cublas_status(st));
            goto fail;
        }
    }
    S.tf32 = o.tf32;
    kn_cuda_clear_error();
    return LG_OK;
fail:
    kn_cuda_fini();
    return rc;
}

extern "C" void kn_cuda_fini(void)
{
    if (S.blas || S.workspace) {
        cudaDeviceSynchronize();
        if (S.blas) kn_cublas_api()->destroy(S.blas);
        if (S.workspace) trk_dev_free(S.trk, S.workspace);
        cudaGetLastError();
    }
    S.blas = NULL;
    S.workspace = NULL;
    S.trk = NULL;
    S.lazy = false;
    S.tf32 = false;
}

extern "C" bool kn_cuda_tf32(void) { return S.blas && S.tf32; }

/* ---- tn_device.h ----------------------------------------------------------------------------- */

extern "C" void *tn_device_alloc(struct trk_tracker *trk, size_t nbytes, const char *tag)
{
    if (!trk_has_device(trk)) {
        lg_fail(LG_EUNAVAIL, "device tensor %s: the tracker has no CUDA backend (trk_cuda_attach)",
                tag ? tag : "untagged");
        return NULL;
    }
    return trk_dev_alloc(trk, nbytes, tag);
}

extern "C" void tn_device_free(struct trk_tracker *trk, void *p) { trk_dev_free(trk, p); }

extern "C" int tn_device_memset(void *p, int value, size_t nbytes)
{
    int rc = sticky("device memset");
    if (rc != LG_OK || nbytes == 0) return rc;
    cudaError_t e = cudaMemsetAsync(p, value, nbytes, 0);
    if (e == cudaSuccess) return LG_OK;
    kn_cuda_record(e, "cudaMemsetAsync");
    return lg_fail(LG_ECUDA, "device memset of %zu bytes: %s", nbytes, cudaGetErrorString(e));
}

extern "C" int tn_device_copy(void *dst, enum tn_device ddev, const void *src, enum tn_device sdev,
                              size_t nbytes)
{
    int rc = sticky("device copy");
    if (rc != LG_OK || nbytes == 0) return rc;
    if (ddev == TN_CPU && sdev == TN_CPU) {
        memmove(dst, src, nbytes);
        return LG_OK;
    }
    /* unified addressing tells host from device; a copy to or from pageable host memory
     * returns once the data has landed, after the work queued before it */
    cudaError_t e = cudaMemcpy(dst, src, nbytes, cudaMemcpyDefault);
    if (e == cudaSuccess) return LG_OK;
    kn_cuda_record(e, "cudaMemcpy");
    return lg_fail(LG_ECUDA, "copying %zu bytes %s→%s: %s", nbytes,
                   sdev == TN_CPU ? "host" : "device", ddev == TN_CPU ? "host" : "device",
                   cudaGetErrorString(e));
}

extern "C" bool tn_device_available(void) { return trk_cuda_available(); }

/* ---- set-up for a tracker (tn_device.h) ------------------------------------------------------ */

extern "C" int tn_device_init(struct trk_tracker *trk, enum tn_device dev)
{
    if (dev == TN_CPU) return LG_OK;
    /* the backend, then the cuBLAS handle and its tagged workspace: both before any session,
     * so that they belong to none */
    int rc = trk_cuda_attach(trk);
    if (rc == LG_OK && (rc = kn_cuda_init(trk, NULL)) != LG_OK) trk_cuda_detach(trk);
    return rc;
}

extern "C" void tn_device_fini(struct trk_tracker *trk)
{
    if (!trk_has_device(trk)) return;
    struct trk_cuda_untagged u;
    if (trk_cuda_untagged(trk, &u) == LG_OK && u.active) /* LG_CUPTI=1: what the ledger missed */
        trk_cuda_untagged_print(&u, stderr);
    trk_cuda_untagged_fini(&u);
    kn_cuda_fini();
    trk_cuda_detach(trk);
}

extern "C" void tn_device_describe(enum tn_device dev, char *buf, size_t size)
{
    if (dev == TN_CPU) {
        snprintf(buf, size, "cpu");
        return;
    }
    char name[80] = "unknown GPU";
    trk_cuda_device_name(name, sizeof name);
    snprintf(buf, size, "cuda: %s", name);
}

extern "C" void tn_device_clear_error(void) { kn_cuda_clear_error(); }
