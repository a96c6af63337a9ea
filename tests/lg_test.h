/* lg_test.h — shared test fixture: every test gets a fresh tracker, and the fixture's .fini
 * asserts that nothing tagged is still live and that the tracker saw no invalid free, so every
 * test is also a leak test. */
#ifndef LG_TEST_H
#define LG_TEST_H

#include <criterion/criterion.h>

#include "tracking.h"

extern struct trk_tracker *T; /* the test's tracker */

void lg_test_setup(void);
void lg_test_teardown(void);              /* asserts zero live bytes and no errors */
void lg_test_teardown_allow_errors(void); /* for tests that provoke invalid frees */

/* What a program printed (stdout and stderr together) and how it ended. */
struct lg_out {
    int status; /* exit status, or 128 + signal */
    char *text; /* freed with free() */
};
/* Runs `'bin' args 2>&1` through the shell (args is a shell fragment) and captures it all. */
struct lg_out lg_run(const char *bin, const char *args);

/* Directory of committed test data (tests/data). */
const char *lg_test_data_dir(void);
/* A fresh empty scratch directory for this test; removed at teardown. */
const char *lg_test_tmpdir(void);
/* "<scratch dir>/name" and "<test data>/sub/name". The strings live in a ring of 8 buffers:
 * valid until eight more calls. */
const char *lg_test_tmpfile(const char *name);
const char *lg_test_datafile(const char *sub, const char *name);

#endif
