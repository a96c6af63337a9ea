/* lg_fuzz.c — the fuzz targets' shared checks (see lg_fuzz.h). */
#define _GNU_SOURCE
#include "lg_fuzz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct trk_tracker *lg_fuzz_trk;

void lg_fuzz_die(const char *what)
{
    fprintf(stderr, "%s: %s (%s)\n", program_invocation_short_name, what, lg_errmsg());
    abort();
}

void lg_fuzz_init(void)
{
    if (trk_tracker_new(&lg_fuzz_trk, &(struct trk_options){.stacks = false}) != LG_OK)
        lg_fuzz_die("tracker");
}

/* libFuzzer's start-up hook: the shared tracker. Weak, so a target with set-up of its own
 * (fuzz_cli) defines its own. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    lg_fuzz_init();
    return 0;
}

void lg_fuzz_check_tracker(void)
{
    struct trk_totals t;
    trk_totals(lg_fuzz_trk, TRK_HOST, &t);
    if (t.live_bytes != 0 || t.live_count != 0) lg_fuzz_die("tracked bytes left live");
    if (trk_error_count(lg_fuzz_trk) != 0) lg_fuzz_die("the tracker saw an invalid free");
}

const char *lg_fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz.input", MFD_CLOEXEC);
        if (fd < 0) lg_fuzz_die("memfd_create");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        lg_fuzz_die("memfd write");
    return path;
}
