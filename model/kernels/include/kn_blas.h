/* kn_blas.h — which GEMM kernels run: OpenBLAS's core chosen by what the CPU can do (CPUID:
 * AVX-512F/BW/DQ/VL, AVX2+FMA, AVX), never by OpenBLAS's table of model numbers alone.
 *
 * Worked example (what `leakgate run` and the benchmarks print in their headers):
 *
 *   const struct kn_blas_info *b = kn_blas_info();   // selects once; later calls only read
 *   printf("GEMM: %s %s kernels (%s, CPU %s)\n", b->blas, b->core, b->path, b->cpu);
 *   if (b->warning[0]) fprintf(stderr, "warning: %s\n", b->warning);
 *
 * Debian 12's OpenBLAS 0.3.21 picks its kernels from a table of CPU models when it loads and
 * falls back to the generic Prescott (SSE3) ones, silently, on a model it does not know (recent
 * Xeons): 2-3x slower GEMMs. The selection runs before main (a constructor of this file, after
 * OpenBLAS's own, which the dynamic linker runs first) and, as a safety net, on the first GEMM:
 * it asks OpenBLAS which core it chose and, when that core is below the CPU's features, swaps in
 * the feature-matched one (OpenBLAS re-initialises its kernel table through its exported
 * gotoblas_dynamic_init with OPENBLAS_CORETYPE set for the call and then restored; no GEMM is in
 * flight then). The path taken:
 *
 *   "cpu-features"       OpenBLAS's choice was below the features: replaced (issue 40)
 *   "openblas-table"     OpenBLAS's own choice matched the features: kept
 *   "OPENBLAS_CORETYPE"  the user's OPENBLAS_CORETYPE kept: a core with AVX2 or better is a
 *                        deliberate choice and is respected (said in `note`); a generic one
 *                        (below AVX2) on a CPU with AVX2 is what the fallback looks like and is
 *                        replaced ("cpu-features", said in `note`)
 *   "LG_BLAS_CORE"       leakgate's own switch: LG_BLAS_CORE=openblas keeps whatever OpenBLAS
 *                        chose (OPENBLAS_CORETYPE included), LG_BLAS_CORE=<core> forces a core
 *
 * Numerics: every core computes the same products in another summation order; results differ
 * by rounding only (the reference tests pass on each). */
#ifndef LG_KN_BLAS_H
#define LG_KN_BLAS_H

#include <stdbool.h>

/* The CPU's SIMD level, as GEMM kernels use it. */
enum kn_isa { KN_ISA_SSE3, KN_ISA_AVX, KN_ISA_AVX2, KN_ISA_AVX512 };

struct kn_blas_info {
    char blas[48];     /* "OpenBLAS 0.3.21" */
    char core[32];     /* the core in use (openblas_get_corename) */
    char loaded[32];   /* the core OpenBLAS chose when it loaded (its table or OPENBLAS_CORETYPE) */
    char wanted[32];   /* the core the CPU's features choose */
    char path[24];     /* how `core` was chosen: see the top */
    char cpu[24];      /* the CPU's features: "AVX-512F", "AVX2+FMA", "AVX", "SSE3" */
    enum kn_isa isa;   /* the same, as a level */
    bool generic;      /* `core` is below AVX2 on a CPU with AVX2 or AVX-512 */
    bool own_gemm;     /* the own AVX-512 GEMM (kernels_cpu_gemm.c) takes the shapes it wins */
    char note[200];    /* why `core` differs from `loaded`, or why a user's choice was kept */
    char warning[200]; /* non-empty when `generic`: what it costs and how to change it */
};

/* What runs now (selects on the first call; thread-safe). Borrowed: never freed. */
const struct kn_blas_info *kn_blas_info(void);

/* The SIMD level of a core by OpenBLAS's name ("Prescott" → SSE3, "Haswell" → AVX2, …); -1
 * when the name is not one OpenBLAS 0.3.x uses on x86-64. */
int kn_blas_core_isa(const char *core);

/* Benchmarks and tests: switches OpenBLAS to `core` (an OpenBLAS core name) now, or back to
 * the start-up choice when NULL; true when OpenBLAS now runs that core. No GEMM may be in flight
 * and no other thread may read the environment meanwhile. kn_blas_info() follows. */
bool kn_blas_use_core(const char *core);

#endif
