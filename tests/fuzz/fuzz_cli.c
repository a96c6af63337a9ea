/* fuzz_cli.c — libFuzzer target for the command line of `leakgate run` (hx_parse_run: the
 * options shared by run, reproduce, soak and calibrate, their checks, --require, --budget and
 * --inject). The input is argv, NUL-separated after "run"; parsing must end in LG_OK, or in a
 * usage error with a message — never a crash, a hang, a leak or an unterminated message.
 *
 *   ci/fuzz 60 fuzz_cli
 * Seeds: tests/fuzz/cli (command lines from the docs and the hostile suite).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define MAX_ARGS 32

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (!freopen("/dev/null", "w", stdout)) abort(); /* --help prints the usage */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf) abort();
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = (char *)"run";
    for (size_t i = 0; i <= size && argc <= MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    struct hx_options o;
    bool help = false;
    lg_clear_error();
    int rc = hx_parse_run(&o, argc, argv, &help);
    if (rc != LG_OK && rc != LG_EINVAL && rc != LG_EFORMAT && rc != LG_EIO) {
        fprintf(stderr, "fuzz_cli: status %d (%s)\n", rc, lg_errmsg());
        abort();
    }
    if (rc != LG_OK && !lg_errmsg()[0]) {
        fprintf(stderr, "fuzz_cli: status %d with no message\n", rc);
        abort();
    }
    if (strnlen(lg_errmsg(), 4096) >= 4096) abort();
    free(buf);
    return 0;
}
