/* bench_peak.h — the machine's FMA peak, the ceiling any GEMM's rate is read against
 * (bench_ops prints it; bench_train divides a step's GEMM flops by it for the floor no FP32
 * trainer of those GEMMs can pass).
 *
 *   double g = bench_fma_peak();   // GFLOP/s of one core, 0 where not measurable
 *   const char *w = bench_fma_width();   // "512-bit", "256-bit" or NULL
 */
#ifndef LG_BENCH_PEAK_H
#define LG_BENCH_PEAK_H

#include <stdbool.h>

#include "lg_base.h"

#if defined(__x86_64__) && defined(__GNUC__)
/* Twelve independent chains of multiply-adds on registers, n rounds of 12 (more chains than FMA
 * latency × throughput on any x86-64 core), from zeros (no denormal assists). REG is "zmm" or
 * "ymm". */
// clang-format off
#define BENCH_ZERO(i) "vxorps %%xmm" #i ", %%xmm" #i ", %%xmm" #i "\n\t"
#define BENCH_FMA(REG, i) "vfmadd231ps %%" REG "1, %%" REG "2, %%" REG #i "\n\t"
#define BENCH_FMA_LOOP(REG)                                                                        \
    __asm__ volatile(BENCH_ZERO(1) BENCH_ZERO(2) BENCH_ZERO(3) BENCH_ZERO(4) BENCH_ZERO(5)         \
                     BENCH_ZERO(6) BENCH_ZERO(7) BENCH_ZERO(8) BENCH_ZERO(9) BENCH_ZERO(10)        \
                     BENCH_ZERO(11) BENCH_ZERO(12) BENCH_ZERO(13) BENCH_ZERO(14)                   \
                     "1:\n\t"                                                                     \
                     BENCH_FMA(REG, 3) BENCH_FMA(REG, 4) BENCH_FMA(REG, 5) BENCH_FMA(REG, 6)       \
                     BENCH_FMA(REG, 7) BENCH_FMA(REG, 8) BENCH_FMA(REG, 9) BENCH_FMA(REG, 10)      \
                     BENCH_FMA(REG, 11) BENCH_FMA(REG, 12) BENCH_FMA(REG, 13) BENCH_FMA(REG, 14)   \
                     "dec %0\n\t"                                                                 \
                     "jnz 1b\n\t"                                                                 \
                     "vzeroupper"                                                                 \
                     : "+r"(left)                                                                 \
                     :                                                                            \
                     : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",    \
                       "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "cc")
// clang-format on

/* GFLOP/s of n rounds of 12 multiply-adds of 16 floats (wide: zmm) or 8 (ymm). */
static inline double bench_fma_rate(bool wide, long n)
{
    long left = n;
    double t0 = lg_now();
    if (wide)
        BENCH_FMA_LOOP("zmm");
    else
        BENCH_FMA_LOOP("ymm");
    return (double)n * 12 * 2 * (wide ? 16 : 8) / (lg_now() - t0) / 1e9;
}
#undef BENCH_FMA_LOOP
#undef BENCH_FMA
#undef BENCH_ZERO
#endif

/* The widest FMA the CPU has: "512-bit", "256-bit", or NULL (none, or not x86-64). */
static inline const char *bench_fma_width(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "512-bit";
    if (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx")) return "256-bit";
#endif
    return NULL;
}

/* GFLOP/s of one core doing nothing but independent multiply-adds of the widest vectors it
 * has (512-bit with AVX-512, else 256-bit with FMA) on registers: the ceiling no GEMM passes
 * (on the Zen 4 of 2026-12-02 OpenBLAS's best 2048³ rate is ~80 % of it, on the Zen 3 of
 * 2026-12-03 ~86 %). The best of three runs of ~0.1-0.2 s. 0 without FMA or off x86-64. */
static inline double bench_fma_peak(void)
{
    const char *w = bench_fma_width();
    if (!w) return 0;
#if defined(__x86_64__) && defined(__GNUC__)
    double best = 0;
    for (int r = 0; r < 3; r++) {
        double g = bench_fma_rate(w[0] == '5', 20000000);
        if (g > best) best = g;
    }
    return best;
#else
    return 0;
#endif
}

#endif
