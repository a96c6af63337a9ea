/* cublas_dl.cu — cuBLAS loaded on first use (dlopen) instead of linked: every binary that links
 * the model would otherwise load libcublas and libcublasLt (over 500 MB, ~0.5 s of relocation)
 * at start, though only a device run calls them. The function types come from cublas_v2.h, so
 * the pointers cannot drift from the header the code was compiled against. LG_CUBLAS_LIB names
 * the library explicitly. */
#include <dlfcn.h>
#include <stdlib.h>

#include "cuda_impl.h"

#define KN_STR2(x) #x
#define KN_STR(x)  KN_STR2(x)

static struct kn_cublas api;
static bool tried, loaded;
static char why[300];

static void *open_cublas(void)
{
    const char *env = getenv("LG_CUBLAS_LIB");
    if (env && *env) return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    static const char *const names[] = {
        "libcublas.so." KN_STR(CUBLAS_VER_MAJOR),
#ifdef LG_CUDA_LIBDIR
        LG_CUDA_LIBDIR "/libcublas.so." KN_STR(CUBLAS_VER_MAJOR),
#endif
        "/usr/local/cuda/lib64/libcublas.so." KN_STR(CUBLAS_VER_MAJOR),
    };
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    return h;
}

/* Binds one symbol into its typed slot; false when it is missing. */
template <typename F> static bool bind(void *h, F *slot, const char *name)
{
    *slot = (F)dlsym(h, name);
    if (!*slot) snprintf(why, sizeof why, "libcublas lacks %s", name);
    return *slot != NULL;
}

const struct kn_cublas *kn_cublas_api(void)
{
    if (!tried) {
        tried = true;
        void *h = open_cublas();
        if (!h) {
            const char *e = dlerror();
            snprintf(why, sizeof why,
                     "libcublas.so.%d could not be loaded (%s); set LG_CUBLAS_LIB or "
                     "LD_LIBRARY_PATH",
                     CUBLAS_VER_MAJOR, e ? e : "not found");
        } else {
            loaded = bind(h, &api.create, "cublasCreate_v2") &&
                     bind(h, &api.destroy, "cublasDestroy_v2") &&
                     bind(h, &api.set_stream, "cublasSetStream_v2") &&
                     bind(h, &api.set_math_mode, "cublasSetMathMode") &&
                     bind(h, &api.set_workspace, "cublasSetWorkspace_v2") &&
                     bind(h, &api.sgemm, "cublasSgemm_v2") &&
                     bind(h, &api.sgemm_strided_batched, "cublasSgemmStridedBatched") &&
                     bind(h, &api.gemm_ex, "cublasGemmEx") &&
                     bind(h, &api.status_string, "cublasGetStatusString");
            /* the library stays loaded for the life of the process */
        }
    }
    if (!loaded) {
        lg_fail(LG_EUNAVAIL, "cuBLAS: %s", why);
        return NULL;
    }
    return &api;
}

const char *kn_cublas_status(cublasStatus_t s)
{
    static char buf[32];
    if (loaded) return api.status_string(s);
    snprintf(buf, sizeof buf, "cuBLAS status %d", (int)s);
    return buf;
}
