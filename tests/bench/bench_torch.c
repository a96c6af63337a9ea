/* bench_torch.c — PyTorch in every configuration worth trying on this machine, for bench_train
 * --torch: each configuration runs tests/bench/tft_torch.py (the same model: leakgate's names,
 * shapes and parameter count, and the same factored real-variable embeddings) in a process of
 * its own, one round at a time, interleaved with leakgate's own rounds by the caller.
 *
 * What varies (issue "Speed, honestly measured"): the OpenMP wait policy (Debian's torch links
 * libgomp next to OpenBLAS's pthreads, and spinning OpenMP threads fight OpenBLAS's for two
 * cores), the thread count, the allocator (jemalloc preloaded, decay off as leakgate's arena
 * has it), the PyTorch (Debian's python3-torch 1.13 and a PyTorch 2.x from PyPI in a virtual
 * environment), torch.compile (2.x) and, for the 2.x, MKL's AVX-512 code on an AMD CPU (MKL
 * runs its AVX2 code there unless told the CPU is Intel's: mkl_intel_cpu.c, preloaded). A
 * configuration whose interpreter or library is missing is listed as skipped, with why. With
 * `fallback` each Debian torch configuration has a twin with OpenBLAS's generic core forced. */
#define _GNU_SOURCE
#include "bench_torch.h"

#include <dlfcn.h>
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEBIAN_PY "/usr/bin/python3"

/* The jemalloc this program runs on (the one to preload), or NULL when it is linked in
 * statically. */
static const char *jemalloc_path(void)
{
    static char path[512];
    Dl_info info;
    if (!path[0] && dladdr((void *)mallocx, &info) && info.dli_fname &&
        strstr(info.dli_fname, "libjemalloc"))
        snprintf(path, sizeof path, "%s", info.dli_fname);
    return path[0] ? path : NULL;
}

/* "torch 2.15.0" when `py` imports torch, else NULL (the reason in why). */
static bool torch_version(const char *py, char *ver, size_t size)
{
    if (access(py, X_OK) != 0) return false;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' -c 'import torch; print(torch.__version__)' 2>/dev/null", py);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    bool ok = fgets(ver, (int)size, p) != NULL;
    int st = pclose(p);
    if (!ok || st != 0) return false;
    ver[strcspn(ver, "\n")] = '\0';
    return true;
}

/* The twin of Debian's torch configuration c with OpenBLAS's generic core forced: that torch
 * runs its GEMMs on the system's OpenBLAS, which reads OPENBLAS_CORETYPE when it loads (the
 * PyTorch 2.x from PyPI runs MKL and oneDNN, which do not read it). */
static struct bt_config forced_twin(const struct bt_config *c)
{
    struct bt_config twin = *c;
    snprintf(twin.name, sizeof twin.name, "%s, OpenBLAS Prescott forced", c->name);
    snprintf(twin.env, sizeof twin.env, "OPENBLAS_CORETYPE=Prescott %s", c->env);
    return twin;
}

int bt_configs(struct bt_config *out, int max, const char *venv, bool fallback)
{
    char v13[64], v2[64], py2[512];
    snprintf(py2, sizeof py2, "%s/bin/python", venv);
    bool have13 = torch_version(DEBIAN_PY, v13, sizeof v13);
    bool have2 = torch_version(py2, v2, sizeof v2);
    const char *je = jemalloc_path();
    static const struct {
        int torch2; /* 0: Debian's, 1: the venv's */
        const char *what, *env;
        bool je;
        int threads;
        bool compile, mkl_avx512;
    } plan[] = {
        {0, "as shipped", "", false, 2, false, false},
        {0, "OMP_WAIT_POLICY=PASSIVE", "OMP_WAIT_POLICY=PASSIVE", false, 2, false, false},
        {0, "PASSIVE + jemalloc", "OMP_WAIT_POLICY=PASSIVE", true, 2, false, false},
        {0, "jemalloc", "", true, 1, false, false},
        {1, "as installed", "", false, 2, false, false},
        {1, "OMP_WAIT_POLICY=PASSIVE", "OMP_WAIT_POLICY=PASSIVE", false, 2, false, false},
        {1, "jemalloc", "", true, 2, false, false},
        {1, "jemalloc", "", true, 1, false, false},
        {1, "torch.compile + jemalloc", "", true, 2, true, false},
        {1, "torch.compile + jemalloc", "", true, 1, true, false}, /* no team to spin under load */
        {1, "jemalloc + MKL AVX-512", "", true, 2, false, true},
        {1, "torch.compile + jemalloc + MKL AVX-512", "", true, 2, true, true},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof plan / sizeof plan[0] && n < max; i++) {
        struct bt_config *c = &out[n++];
        memset(c, 0, sizeof *c);
        const char *ver = plan[i].torch2 ? v2 : v13;
        bool have = plan[i].torch2 ? have2 : have13;
        snprintf(c->name, sizeof c->name, "torch %s, %s, %d thread%s",
                 have ? ver : (plan[i].torch2 ? "2.x" : "1.13"), plan[i].what, plan[i].threads,
                 plan[i].threads > 1 ? "s" : "");
        snprintf(c->python, sizeof c->python, "%s", plan[i].torch2 ? py2 : DEBIAN_PY);
        c->threads = plan[i].threads;
        c->compile = plan[i].compile;
        if (!have)
            snprintf(c->skip, sizeof c->skip, "%s",
                     plan[i].torch2 ? "no PyTorch 2.x in the venv (ci/bench --torch makes it)"
                                    : "no python3-torch (apt-get install python3-torch)");
        else if (plan[i].je && !je)
            snprintf(c->skip, sizeof c->skip, "no shared libjemalloc to preload");
        else if (plan[i].mkl_avx512 && !__builtin_cpu_is("amd"))
            snprintf(c->skip, sizeof c->skip, "not an AMD CPU: MKL chooses its own code");
        else if (plan[i].mkl_avx512 && !__builtin_cpu_supports("avx512f"))
            snprintf(c->skip, sizeof c->skip,
                     "no AVX-512F on this CPU: MKL's AVX2 code, the row without it, is its best");
        else if (plan[i].mkl_avx512 && access(LG_MKL_INTEL_CPU, R_OK) != 0)
            snprintf(c->skip, sizeof c->skip, "no %s (build the lg_mkl_intel_cpu target)",
                     LG_MKL_INTEL_CPU);
        int k = snprintf(c->env, sizeof c->env, "%s", plan[i].env);
        if (plan[i].je && je)
            snprintf(c->env + k, sizeof c->env - (size_t)k,
                     "%sLD_PRELOAD=%s%s%s MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1",
                     k ? " " : "", je, plan[i].mkl_avx512 ? ":" : "",
                     plan[i].mkl_avx512 ? LG_MKL_INTEL_CPU : "");
        if (fallback && !plan[i].torch2 && n < max) out[n++] = forced_twin(c);
    }
    return n;
}

double bt_run(const struct bt_config *c, const char *script, const char *preset, int batch,
              int steps, FILE *log)
{
    char cmd[2048];
    /* torch.compile compiles during its first steps: warm up until the compiled graph runs */
    snprintf(cmd, sizeof cmd,
             "env %s '%s' '%s' --preset %s --batch %d --steps %d --warmup %d --threads %d%s 2>&1",
             c->env, c->python, script, preset, batch, steps, c->compile ? 3 : 2, c->threads,
             c->compile ? " --compile" : "");
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    char line[1024];
    double ms = 0;
    while (fgets(line, sizeof line, p)) {
        if (log) fprintf(log, "    | %s", line);
        char *at = strstr(line, "median ");
        if (at && strstr(line, "ms/step")) ms = atof(at + 7);
    }
    return pclose(p) == 0 ? ms : 0;
}
