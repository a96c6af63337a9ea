/* test_exec_install.c — leakgate as a user installs it: `cmake --install` into a fresh prefix,
 * then a program built against it with pkg-config and another with find_package(leakgate), each
 * run under that prefix's own `leakgate exec` (its agent found beside it, not in the build). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"

TestSuite(exec_install, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 600);

static const char *prefix(void) { return lg_test_tmpfile("prefix"); }

/* Installs the build into the scratch prefix; the path stays valid for the test. */
static void install(char *buf, size_t size)
{
    snprintf(buf, size, "%s", prefix());
    cr_assert_eq(lg_shell("cmake --install '%s' --prefix '%s' >/dev/null", LG_BUILD_DIR, buf), 0,
                 "cmake --install");
}

Test(exec_install, pkg_config_builds_a_program_that_the_installed_exec_gates)
{
    char pre[600];
    install(pre, sizeof pre);
    const char *bin = lg_test_tmpfile("leaky");
    cr_assert_eq(lg_shell("PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --exists leakgate", pre),
                 0, "pkg-config finds leakgate.pc under the prefix");
    cr_assert_eq(
        lg_shell(
            "cc -g -O1 -o '%s' '%s/tests/exec/leaky.c' $(PKG_CONFIG_PATH='%s/lib/pkgconfig' "
            "pkg-config "
            "--cflags --libs leakgate) -Wl,-rpath,$(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config "
            "--variable=libdir leakgate)",
            bin, LG_SOURCE_DIR, pre, pre),
        0, "cc $(pkg-config --cflags --libs leakgate)");
    /* 16 sessions, as test_exec: profiling arms once the leak is proven (session 5) and samples
     * one allocation per 128 KiB, so with 8 sessions the few 256 KiB blocks after it went
     * unsampled in 3 of 200 runs (it failed one .ci/run); with 16, in 0 of 200 */
    char args[1200];
    snprintf(args, sizeof args, "exec --no-reports --out '%s/out' -- '%s' 16", lg_test_tmpdir(),
             bin);
    char leakgate[700];
    snprintf(leakgate, sizeof leakgate, "%s/bin/leakgate", pre);
    struct lg_out o = lg_run(leakgate, args);
    cr_expect_eq(o.status, 1, "the installed exec finds the leak: exit %d\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "leak_256k (leaky.c:") != NULL, "%s", o.text);
    free(o.text);
}

Test(exec_install, find_package_gives_the_target_and_the_executable)
{
    char pre[600];
    install(pre, sizeof pre);
    const char *proj = lg_test_tmpfile("proj");
    cr_assert_eq(
        lg_shell("mkdir -p '%s' && cp '%s/tests/exec/leaky.c' '%s/'", proj, LG_SOURCE_DIR, proj),
        0);
    char path[700];
    snprintf(path, sizeof path, "%s/CMakeLists.txt", proj);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("cmake_minimum_required(VERSION 3.20)\n"
          "project(user_trainer LANGUAGES C)\n"
          "find_package(leakgate 0.1 REQUIRED)\n"
          "add_executable(trainer leaky.c)\n"
          "target_compile_definitions(trainer PRIVATE LEAK=0)\n"
          "target_link_libraries(trainer PRIVATE leakgate::leakgate)\n"
          "file(WRITE ${CMAKE_BINARY_DIR}/leakgate_exe.txt ${LEAKGATE_EXECUTABLE})\n",
          f);
    fclose(f);
    cr_assert_eq(
        lg_shell("cmake -S '%s' -B '%s/build' -DCMAKE_PREFIX_PATH='%s' >/dev/null && cmake "
                 "--build '%s/build' "
                 ">/dev/null",
                 proj, proj, pre, proj),
        0, "find_package(leakgate) and leakgate::leakgate");
    cr_expect_eq(lg_shell("grep -qx '%s/bin/leakgate' '%s/build/leakgate_exe.txt'", pre, proj), 0,
                 "LEAKGATE_EXECUTABLE names the installed leakgate");
    char args[1200], leakgate[700];
    snprintf(args, sizeof args, "exec --no-reports --out '%s/out' -- '%s/build/trainer' 8",
             lg_test_tmpdir(), proj);
    snprintf(leakgate, sizeof leakgate, "%s/bin/leakgate", pre);
    struct lg_out o = lg_run(leakgate, args);
    cr_expect_eq(o.status, 0, "the clean twin passes: exit %d\n%s", o.status, o.text);
    cr_expect(strstr(o.text, "PASS") != NULL, "%s", o.text);
    free(o.text);
    /* outside exec the same program runs unchanged */
    snprintf(path, sizeof path, "%s/build/trainer", proj);
    o = lg_run(path, "2");
    cr_expect_eq(o.status, 0, "%s", o.text);
    cr_expect(strstr(o.text, "session 1 done (0)") != NULL, "%s", o.text);
    free(o.text);
}
