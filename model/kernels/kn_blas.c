/* kn_blas.c — OpenBLAS's core chosen by the CPU's features (kn_blas.h has the contract).
 *
 * Measured on an AMD EPYC Zen 4 (docs/benchmarks.md, "The GEMM path chosen by CPU features"):
 * OpenBLAS's Prescott core, the one it falls back to on a CPU its table does not know, runs the
 * electricity step's GEMMs at a fraction of the feature-matched core's rate; after this
 * selection the same binary with OPENBLAS_CORETYPE=Prescott runs the feature-matched core. */
#define _GNU_SOURCE
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels.h"
#include "kn_blas.h"

/* OpenBLAS's DYNAMIC_ARCH entry points (driver/others/dynamic.c, exported by Debian's build):
 * weak, so that a BLAS without them links and only keeps its own choice. */
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));

/* Every x86-64 core name of OpenBLAS 0.3.x, by the SIMD level its kernels need. */
static const char *const cores[] = {
    [KN_ISA_SSE3] = " Prescott Core2 Penryn Dunnington Nehalem Atom Nano Opteron Opteron(SSE3)"
                    " Barcelona Bobcat Katmai Coppermine Northwood Banias Athlon ",
    [KN_ISA_AVX] = " Sandybridge Bulldozer Piledriver Steamroller Excavator ",
    [KN_ISA_AVX2] = " Haswell Zen ",
    [KN_ISA_AVX512] = " SkylakeX Cooperlake SapphireRapids ",
};

int kn_blas_core_isa(const char *core)
{
    char word[40]; /* " name ": a whole name of a list, never a part of one */
    if (!core || !core[0] || strchr(core, ' ') ||
        snprintf(word, sizeof word, " %s ", core) >= (int)sizeof word)
        return -1;
    for (size_t isa = 0; isa < sizeof cores / sizeof *cores; isa++)
        if (strcasestr(cores[isa], word)) return (int)isa;
    return -1;
}

static const char *const isa_names[] = {"SSE3", "AVX", "AVX2+FMA", "AVX-512F"};

static struct kn_blas_info info;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) && defined(__GNUC__)
static enum kn_isa cpu_isa(void)
{
    __builtin_cpu_init(); /* libgcc checks the OS saves the registers (XCR0) too */
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return KN_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return KN_ISA_AVX2;
    if (__builtin_cpu_supports("avx")) return KN_ISA_AVX;
    return KN_ISA_SSE3;
}

/* The core the features choose: OpenBLAS's own pick for each level on the CPUs it knows. */
static const char *wanted_core(enum kn_isa isa)
{
    switch (isa) {
    case KN_ISA_AVX512: return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    case KN_ISA_AVX2: return __builtin_cpu_is("amd") ? "Zen" : "Haswell";
    case KN_ISA_AVX: return "Sandybridge";
    default: return "Prescott";
    }
}
#else /* elsewhere OpenBLAS's own choice stands */
static enum kn_isa cpu_isa(void) { return KN_ISA_SSE3; }
static const char *wanted_core(enum kn_isa isa)
{
    (void)isa;
    return "";
}
#endif

/* OpenBLAS re-reads OPENBLAS_CORETYPE in gotoblas_dynamic_init: set it for that call, then put
 * back the user's value (or none). An unknown name would make OpenBLAS fall back to Prescott,
 * so only names of the table above, at most the CPU's level, get here. */
static bool switch_core(const char *core)
{
    if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit) return false;
    const char *old = getenv("OPENBLAS_CORETYPE");
    char saved[64] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("OPENBLAS_CORETYPE", core, 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    if (old)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    return !strcasecmp(openblas_get_corename(), core);
}

static void refresh(void)
{
    snprintf(info.core, sizeof info.core, "%s", openblas_get_corename());
    int level = kn_blas_core_isa(info.core);
    info.generic = level >= 0 && level < KN_ISA_AVX2 && info.isa >= KN_ISA_AVX2;
    info.own_gemm = kn_cpu_gemm_own();
    if (info.generic)
        snprintf(info.warning, sizeof info.warning,
                 "OpenBLAS runs its generic %s kernels on a CPU with %s: GEMMs at a fraction of "
                 "the rate; the CPU's features choose %s (LG_BLAS_CORE unset or auto)",
                 info.core, info.cpu, info.wanted);
    else
        info.warning[0] = '\0';
}

static void select_core(void)
{
    const char *cfg = openblas_get_config(), *user = getenv("OPENBLAS_CORETYPE");
    const char *lg = getenv("LG_BLAS_CORE");
    if (!cfg) cfg = "OpenBLAS";
    const char *end = strchr(cfg, ' '); /* "OpenBLAS 0.3.21 DYNAMIC_ARCH …": its first two words */
    end = end ? strchr(end + 1, ' ') : NULL;
    snprintf(info.blas, sizeof info.blas, "%.*s", end ? (int)(end - cfg) : (int)strlen(cfg), cfg);
    info.isa = cpu_isa();
    snprintf(info.cpu, sizeof info.cpu, "%s", isa_names[info.isa]);
    snprintf(info.loaded, sizeof info.loaded, "%s", openblas_get_corename());
    snprintf(info.wanted, sizeof info.wanted, "%s", wanted_core(info.isa));
    int have = kn_blas_core_isa(info.loaded), want = kn_blas_core_isa(info.wanted);
    snprintf(info.path, sizeof info.path, "openblas-table");
    const char *to = NULL;
    if (lg && *lg && strcasecmp(lg, "auto")) { /* leakgate's own switch: the user decides */
        snprintf(info.path, sizeof info.path, "LG_BLAS_CORE");
        int l = kn_blas_core_isa(lg);
        if (!strcasecmp(lg, "openblas"))
            snprintf(info.note, sizeof info.note, "LG_BLAS_CORE=openblas: OpenBLAS's own choice");
        else if (l < 0 || l > (int)info.isa)
            snprintf(info.note, sizeof info.note,
                     "LG_BLAS_CORE=%.40s is not an OpenBLAS core this CPU (%s) runs: ignored", lg,
                     info.cpu);
        else
            to = lg;
    } else if (user && have >= KN_ISA_AVX2) { /* a deliberate choice among fast kernels */
        snprintf(info.path, sizeof info.path, "OPENBLAS_CORETYPE");
        snprintf(info.note, sizeof info.note,
                 "OPENBLAS_CORETYPE=%.40s kept (the user's choice; the CPU's features choose %s)",
                 user, info.wanted);
    } else if (want >= 0 && have < want) { /* below the features: the fallback, or unknown */
        snprintf(info.path, sizeof info.path, "cpu-features");
        to = info.wanted;
        if (user)
            snprintf(info.note, sizeof info.note,
                     "OPENBLAS_CORETYPE=%.40s is a generic core on a CPU with %s: replaced by %s "
                     "(LG_BLAS_CORE=openblas keeps it)",
                     user, info.cpu, info.wanted);
        else
            snprintf(info.note, sizeof info.note,
                     "OpenBLAS chose %s (a CPU its table does not know); the CPU's %s chooses %s",
                     info.loaded, info.cpu, info.wanted);
    } else if (user) {
        snprintf(info.path, sizeof info.path, "OPENBLAS_CORETYPE");
    }
    if (to && !switch_core(to)) {
        snprintf(info.note, sizeof info.note, "could not switch OpenBLAS to %.40s: %s kept", to,
                 info.loaded);
        switch_core(info.loaded);
    }
    refresh();
}

const struct kn_blas_info *kn_blas_info(void)
{
    pthread_once(&once, select_core);
    return &info;
}

bool kn_blas_use_core(const char *core)
{
    static char start[32]; /* the start-up choice, for core == NULL */
    if (!start[0]) snprintf(start, sizeof start, "%s", kn_blas_info()->core);
    const char *to = core ? core : start;
    int l = kn_blas_core_isa(to);
    if (l < 0 || l > (int)info.isa) return false;
    bool ok = switch_core(to);
    refresh();
    return ok;
}

/* Before main: OpenBLAS's constructor (a library this one needs) has run, no GEMM has. */
__attribute__((constructor)) static void kn_blas_at_start(void) { kn_blas_info(); }
