/* test_gpu_cli.c — the leakgate binary with --device cuda: a clean FP32 run passes with the
 * device channels measured, the device-tensor injection is caught by the tagged device channel
 * with its tag, every mode (FP32, INT8, QAT) runs clean on the device, and the debug state
 * computed on the device agrees with the host's (tests/tools/compare_debug_state). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "gpu_test.h"

TestSuite(gpu_cli, .init = lg_test_setup, .fini = lg_gpu_teardown, .timeout = 600);

/* Runs `bin args`, captures everything it prints, and echoes it into the test's log (the GPU
 * check brings the logs back from the device machine). */
static struct lg_out run(const char *bin, const char *args)
{
    struct lg_out o = lg_run(bin, args);
    fprintf(stderr, "$ %s %s\n%s\n", bin, args, o.text);
    return o;
}

/* The binaries: their build paths, or LEAKGATE_BIN / COMPARE_BIN from the environment when the
 * build moved (ci/gpu-check runs a bundle copied to a GPU machine). */
static const char *leakgate_bin(void)
{
    const char *e = getenv("LEAKGATE_BIN");
    return e && *e ? e : LEAKGATE_BIN;
}

static const char *compare_bin(void)
{
    const char *e = getenv("COMPARE_BIN");
    return e && *e ? e : COMPARE_BIN;
}

#define RUN_ARGS "run --device cuda --modes fp32 --sessions 6 --steps 3 --quiet --no-reports"

Test(gpu_cli, clean_fp32_run_on_the_device_passes)
{
    lg_gpu_begin();
    char args[512];
    snprintf(args, sizeof args, RUN_ARGS " --out '%s/out'", lg_test_tmpdir());
    struct lg_out o = run(leakgate_bin(), args);
    cr_expect_eq(o.status, 0, "exit %d", o.status);
    LG_EXPECT_SAYS(o.text, {"tagged_device", " pass ", "clean"});
    LG_EXPECT_NOT_SAYS(o.text, {"dev_driver", "unavailable", "the driver's view is measured"});
    free(o.text);
}

Test(gpu_cli, device_tensor_injection_is_caught_with_its_tag)
{
    lg_gpu_begin();
    char args[512];
    snprintf(args, sizeof args, RUN_ARGS " --out '%s/out' --inject device-tensor",
             lg_test_tmpdir());
    struct lg_out o = run(leakgate_bin(), args);
    cr_expect_eq(o.status, 1, "exit %d, expected 1 (leak)", o.status);
    LG_EXPECT_SAYS(o.text, {"tagged_device", " leak ", "the injected leak"},
                   {"tagged_device", "act/device.scratch", "names the tag"},
                   {"tagged_host", " pass ", "the host ledger is clean"});
    free(o.text);
}

Test(gpu_cli, every_mode_runs_clean_on_the_device)
{
    lg_gpu_begin();
    char args[512];
    /* FP32 training on the device; INT8 and QAT finalisation on the host, as int8.h runs */
    snprintf(args, sizeof args,
             "run --device cuda --modes fp32,int8,qat --sessions 8 --steps 2 --quiet "
             "--no-reports --out '%s/out'",
             lg_test_tmpdir());
    struct lg_out o = run(leakgate_bin(), args);
    cr_expect_eq(o.status, 0, "exit %d", o.status);
    LG_EXPECT_SAYS(o.text, {"tagged_device", " pass ", "clean"},
                   {"tagged_host", " pass ", "clean"});
    free(o.text);
}

Test(gpu_cli, debug_state_on_the_device_agrees_with_the_host)
{
    lg_gpu_begin();
    char args[512];
    const char *d = lg_test_tmpdir();
    snprintf(args, sizeof args, "debug-state --preset tiny --seed 1 -o '%s/cpu.safetensors'", d);
    struct lg_out o = run(leakgate_bin(), args);
    cr_assert_eq(o.status, 0);
    free(o.text);
    snprintf(args, sizeof args,
             "debug-state --preset tiny --seed 1 --device cuda -o '%s/gpu.safetensors'", d);
    o = run(leakgate_bin(), args);
    cr_assert_eq(o.status, 0);
    free(o.text);
    snprintf(args, sizeof args,
             "--out-tol 1e-5 --grad-tol 1e-4 '%s/cpu.safetensors' '%s/gpu.safetensors'", d, d);
    o = run(compare_bin(), args);
    cr_expect_eq(o.status, 0, "the device's debug state agrees");
    cr_expect(strstr(o.text, "PASS") != NULL);
    free(o.text);
}
