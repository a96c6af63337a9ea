/* bench_peak.h — the machine's FMA peak, the ceiling any GEMM's rate is read against
 * (bench_ops prints it; bench_train divides a step's GEMM flops by it for the floor no FP32
 * trainer of those GEMMs can pass).
 *
 *   double g = bench_fma_peak();   // GFLOP/s of one core, 0 where not measurable
 */
#ifndef LG_BENCH_PEAK_H
#define LG_BENCH_PEAK_H

#include "lg_base.h"

/* GFLOP/s of one core doing nothing but independent 512-bit multiply-adds on registers (12
 * chains, more than latency × throughput on any x86-64 with AVX-512): the ceiling no GEMM passes
 * (on the Zen 4 of 2026-12-02 OpenBLAS's best 2048³ rate is ~80 % of it). 0 without AVX-512 or
 * off x86-64. */
static inline double bench_fma_peak(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) return 0;
    double best = 0;
    for (int r = 0; r < 3; r++) {
        long n = 20000000, left = n;
        double t0 = lg_now();
        __asm__ volatile("vxorps %%xmm1, %%xmm1, %%xmm1\n\t" /* zeros: no denormal assists */
                         "vxorps %%xmm2, %%xmm2, %%xmm2\n\t"
                         "vxorps %%xmm3, %%xmm3, %%xmm3\n\t"
                         "vxorps %%xmm4, %%xmm4, %%xmm4\n\t"
                         "vxorps %%xmm5, %%xmm5, %%xmm5\n\t"
                         "vxorps %%xmm6, %%xmm6, %%xmm6\n\t"
                         "vxorps %%xmm7, %%xmm7, %%xmm7\n\t"
                         "vxorps %%xmm8, %%xmm8, %%xmm8\n\t"
                         "vxorps %%xmm9, %%xmm9, %%xmm9\n\t"
                         "vxorps %%xmm10, %%xmm10, %%xmm10\n\t"
                         "vxorps %%xmm11, %%xmm11, %%xmm11\n\t"
                         "vxorps %%xmm12, %%xmm12, %%xmm12\n\t"
                         "vxorps %%xmm13, %%xmm13, %%xmm13\n\t"
                         "vxorps %%xmm14, %%xmm14, %%xmm14\n\t"
                         "1:\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm3\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm4\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm5\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm6\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm7\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm8\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm9\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm10\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm11\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm12\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm13\n\t"
                         "vfmadd231ps %%zmm1, %%zmm2, %%zmm14\n\t"
                         "dec %0\n\t"
                         "jnz 1b\n\t"
                         "vzeroupper"
                         : "+r"(left)
                         :
                         : "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                           "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "cc");
        double dt = lg_now() - t0, g = (double)n * 12 * 32 / dt / 1e9;
        if (g > best) best = g;
    }
    return best;
#else
    return 0;
#endif
}

#endif
