/* mkl_intel_cpu.c — preloaded into PyTorch by bench_train --torch for its "MKL AVX-512"
 * configurations, so that PyTorch is measured in its best configuration on an AMD CPU too.
 *
 * oneMKL (PyTorch 2.x's wheels carry it for every CPU matrix product) chooses its code paths by
 * the CPU's vendor as well as its features: on AMD's CPUs it runs its AVX2 code, even on a Zen 4
 * or Zen 5 that has AVX-512. Its vendor test is one internal function; this library, preloaded,
 * answers it "Intel" (the workaround in common use for MKL on AMD), and MKL then runs the code
 * the CPU's features allow. Measured on this project's CI machine (Zen 5, 2 threads): torch
 * 2.15's 2048³ float matmul at 162 GFLOP/s as installed, 323 with this library preloaded
 * (docs/benchmarks.md). On an Intel CPU it changes nothing. */
int mkl_serv_intel_cpu_true(void);

int mkl_serv_intel_cpu_true(void) { return 1; }
