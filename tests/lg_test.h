/* lg_test.h — shared test fixture: every test gets a fresh tracker, and the fixture's .fini
 * asserts that nothing tagged is still live and that the tracker saw no invalid free, so every
 * test is also a leak test. */
#ifndef LG_TEST_H
#define LG_TEST_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <sys/types.h>

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
/* lg_run with the arguments formatted (printf). */
struct lg_out lg_runf(const char *bin, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Starts bin in the background with argv (argv[0] first, NULL-terminated), its stdout and
 * stderr into the file `log`; lg_wait_exit waits for it, asserts that it ended by itself (not
 * by a signal) and returns its exit status. */
pid_t lg_spawn(const char *bin, const char *log, char *const argv[]);
int lg_wait_exit(pid_t pid);
/* Runs a shell command (formatted); its exit status, 128 when it did not exit. */
int lg_shell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A command line that must be refused: exit status 2 and a message holding `needle`. */
struct lg_usage_case {
    const char *args, *needle;
};
/* Runs `bin` with each case's args and expects exit status 2 and its needle in the output. */
void lg_expect_usage_errors(const char *bin, const struct lg_usage_case *cases, size_t n);

/* A python3 with python3-jsonschema: Debian's /usr/bin/python3 where there is one (a python3
 * first on PATH may lack the module), else python3. */
const char *lg_python3(void);
/* Checks `files` (a shell fragment: paths, globs) line by line against docs/<schema> with
 * tests/data/results/validate_jsonl.py and expects its exit status (0: every line valid, 1: one
 * is not); a failure says `why` and what the script said. */
void lg_expect_jsonl(const char *schema, const char *files, int status, const char *why);

/* The verdict table's line for a channel in a program's output ("" when absent), in buf. */
const char *lg_line_of(const char *text, const char *channel, char *buf, size_t size);

/* What a program's output must say: in the verdict table's line of `channel`, or anywhere when
 * channel is NULL; `why` goes into the failure message. */
struct lg_says {
    const char *channel, *needle, *why;
};
/* Expects each needle in its place (absent: expects none of them there). */
void lg_expect_says(const char *text, const struct lg_says *says, size_t n, bool absent);
/* LG_EXPECT_SAYS(text, {"rss", " leak ", "the process grows"}, {NULL, "LEAK", "the verdict"}) */
#define LG_EXPECT_SAYS(text, ...)     LG_EXPECT_SAYS_(text, false, __VA_ARGS__)
#define LG_EXPECT_NOT_SAYS(text, ...) LG_EXPECT_SAYS_(text, true, __VA_ARGS__)
#define LG_EXPECT_SAYS_(text, absent, ...)                                                         \
    lg_expect_says(text, (const struct lg_says[]){__VA_ARGS__},                                    \
                   sizeof((const struct lg_says[]){__VA_ARGS__}) / sizeof(struct lg_says), absent)

/* A whole file, NUL-terminated (len: its size, may be NULL); NULL when it cannot be opened.
 * The caller frees it. */
char *lg_slurp(const char *path, size_t *len);
/* Writes n bytes to path, replacing it (asserts success). */
void lg_spit(const char *path, const void *data, size_t n);
/* Whether path exists. */
bool lg_exists(const char *path);

/* Fills g (zeroed) as `count` leaked allocations, `bytes` in all, tagged `tag` in `space`,
 * with n_stacks stacks of counts[k] allocations at frames[k]; the stacks and their frames are
 * malloc'd, freed with the groups (lg_leak_groups_free, rpt_results_free). */
void lg_test_leak_group(struct lg_leak_group *g, const char *tag, const char *space, int64_t bytes,
                        int64_t count, int n_stacks, const int64_t *counts,
                        const char *const *frames);

/* Expects a session end's leaks to name exactly one object still referenced, `kind` `name`,
 * held by one retain of `holder` whose site holds every needle of `site` (NULL-terminated);
 * returns it for further checks. */
const struct lg_ref_leak *lg_expect_one_ref(const struct trk_leaks *lk, const char *kind,
                                            const char *name, const void *holder,
                                            const char *const *site);
/* LG_EXPECT_ONE_REF(lk, "varmap", "tiny", &trainer, "trainer_new", "test_x.c:") */
#define LG_EXPECT_ONE_REF(lk, kind, name, holder, ...)                                             \
    lg_expect_one_ref(lk, kind, name, holder, (const char *const[]){__VA_ARGS__, NULL})

/* Live bytes in T over every tag that starts with `prefix`; *total_count (when not NULL): how
 * many allocations those tags ever made. */
int64_t lg_live_bytes_with_prefix(const char *prefix, int64_t *total_count);

/* Directory of committed test data (tests/data). */
const char *lg_test_data_dir(void);
/* A fresh empty scratch directory for this test; removed at teardown. */
const char *lg_test_tmpdir(void);
/* "<scratch dir>/name" and "<test data>/sub/name". The strings live in a ring of 8 buffers:
 * valid until eight more calls. */
const char *lg_test_tmpfile(const char *name);
const char *lg_test_datafile(const char *sub, const char *name);

#endif
