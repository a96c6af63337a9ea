/* test_compare_debug_state.c — the debug-state comparison tool that ci/gpu-check runs on the
 * host's and the device's files: identical files pass, files of another seed fail (parameters
 * differ), a missing file and a bad command line are usage errors. Runs on the host. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "lg_test.h"

TestSuite(compare_debug_state, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 120);

/* Exit status of the shell command `cmd`. */
static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

Test(compare_debug_state, same_passes_other_seed_fails_missing_is_usage)
{
    const char *d = lg_test_tmpdir();
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' debug-state --preset tiny --seed 1 -o '%s/one.st' >/dev/null",
             LEAKGATE_BIN, d);
    cr_assert_eq(sh(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s' debug-state --preset tiny --seed 2 -o '%s/two.st' >/dev/null",
             LEAKGATE_BIN, d);
    cr_assert_eq(sh(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s' '%s/one.st' '%s/one.st' >/dev/null", COMPARE_BIN, d, d);
    cr_expect_eq(sh(cmd), 0, "a file agrees with itself");
    snprintf(cmd, sizeof cmd, "'%s' '%s/one.st' '%s/two.st' >/dev/null", COMPARE_BIN, d, d);
    cr_expect_eq(sh(cmd), 1, "another seed: different parameters");
    snprintf(cmd, sizeof cmd, "'%s' '%s/one.st' /nonexistent.st 2>/dev/null", COMPARE_BIN, d);
    cr_expect_eq(sh(cmd), 2, "an unreadable file");
    snprintf(cmd, sizeof cmd, "'%s' '%s/one.st' 2>/dev/null", COMPARE_BIN, d);
    cr_expect_eq(sh(cmd), 2, "one file is a usage error");
}
