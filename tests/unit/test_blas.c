/* test_blas.c — the GEMM path is chosen by the CPU's features (kn_blas.h), not by OpenBLAS's
 * table of CPU models (issue 40).
 *
 * CTest runs this program with OPENBLAS_CORETYPE=Prescott in its environment: OpenBLAS then loads
 * its generic SSE3 kernels, exactly what it does on a CPU its table does not know. On a CPU with
 * AVX2 or AVX-512 the chosen path must still be the feature-matched core (checked by name, never
 * by a time), the products must stay right on every core this CPU runs, and a generic core must
 * come with a warning. Run by hand without the variable, the checks that need it skip visibly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels.h"
#include "kn_blas.h"
#include "lg_test.h"

TestSuite(blas, .init = lg_test_setup, .fini = lg_test_teardown);

/* Skips (visibly) where the check has no meaning: a CPU without AVX2, or no forced fallback. */
static void need_forced_fallback(void)
{
    const char *e = getenv("OPENBLAS_CORETYPE");
    if (!e || strcasecmp(e, "Prescott"))
        cr_skip_test("SKIP: run with OPENBLAS_CORETYPE=Prescott (ctest sets it)");
    if (kn_blas_info()->isa < KN_ISA_AVX2) cr_skip_test("SKIP: this CPU has no AVX2: no fast core");
}

Test(blas, forced_generic_core_is_replaced_by_the_feature_matched_one)
{
    need_forced_fallback();
    const struct kn_blas_info *b = kn_blas_info();
    cr_assert_str_eq(b->loaded, "Prescott", "OpenBLAS did not load the forced fallback: %s",
                     b->loaded);
    cr_assert_str_eq(b->core, b->wanted, "the slow path ran: %s instead of %s (CPU %s)", b->core,
                     b->wanted, b->cpu);
    cr_assert_str_eq(b->path, "cpu-features");
    cr_assert_geq(kn_blas_core_isa(b->core), KN_ISA_AVX2);
    cr_assert_not(b->generic);
    cr_assert_eq(b->warning[0], '\0', "%s", b->warning);
    cr_assert(strstr(b->note, "OPENBLAS_CORETYPE=Prescott"), "the override is said: %s", b->note);
    /* the user's variable is left as it was, for child processes */
    cr_assert_str_eq(getenv("OPENBLAS_CORETYPE"), "Prescott");
}

Test(blas, cores_are_named_by_their_simd_level)
{
    cr_assert_eq(kn_blas_core_isa("Prescott"), KN_ISA_SSE3);
    cr_assert_eq(kn_blas_core_isa("sandybridge"), KN_ISA_AVX);
    cr_assert_eq(kn_blas_core_isa("Haswell"), KN_ISA_AVX2);
    cr_assert_eq(kn_blas_core_isa("Zen"), KN_ISA_AVX2);
    cr_assert_eq(kn_blas_core_isa("SkylakeX"), KN_ISA_AVX512);
    cr_assert_eq(kn_blas_core_isa("Cooperlake"), KN_ISA_AVX512);
    cr_assert_eq(kn_blas_core_isa("NoSuchCore"), -1);
    cr_assert_eq(kn_blas_core_isa("Opteron(SSE3)"), KN_ISA_SSE3);
    cr_assert_eq(kn_blas_core_isa("Sky"), -1, "a part of a name is not a name");
    cr_assert_eq(kn_blas_core_isa("Haswell Zen"), -1, "nor are two names");
    cr_assert_eq(kn_blas_core_isa(""), -1);
    cr_assert_eq(kn_blas_core_isa(NULL), -1);
    cr_assert_not(kn_blas_use_core("NoSuchCore"), "an unknown name would be OpenBLAS's Prescott");
}

/* C = A·Bᵀ through the kernels against a double reference, on the core now in use. */
static double gemm_err(void)
{
    enum { M = 67, N = 45, K = 131 };
    static float a[M * K], b[N * K], c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    for (int i = 0; i < N * K; i++) b[i] = (float)((i * 53) % 97) / 97.0f - 0.5f;
    kn_cpu.gemm(c, a, b, false, true, M, N, K, 1.0f, K, K, 0.0f, N);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)a[i * K + k] * b[j * K + k];
            worst = fmax(worst, fabs(s - c[i * N + j]));
        }
    return worst;
}

Test(blas, every_core_this_cpu_runs_gives_the_same_products_and_a_generic_one_warns)
{
    static const char *const names[] = {"Prescott", "Sandybridge", "Haswell",
                                        "Zen",      "SkylakeX",    "Cooperlake"};
    const struct kn_blas_info *b = kn_blas_info();
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (kn_blas_core_isa(names[i]) > (int)b->isa) continue; /* it would not run here */
        cr_assert(kn_blas_use_core(names[i]), "could not switch to %s", names[i]);
        cr_assert_str_eq(b->core, names[i]);
        cr_assert_lt(gemm_err(), 1e-5, "%s", names[i]);
        bool generic = kn_blas_core_isa(names[i]) < KN_ISA_AVX2 && b->isa >= KN_ISA_AVX2;
        cr_assert_eq(b->generic, generic, "%s", names[i]);
        cr_assert_eq(b->warning[0] != '\0', generic, "%s: %s", names[i], b->warning);
    }
    cr_assert(kn_blas_use_core(NULL)); /* back to the start-up choice */
    cr_assert_not(b->generic);
}
