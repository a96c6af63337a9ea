/* fuzz_safetensors.c — libFuzzer target for the safetensors reader.
 *
 * Each input is written to an in-memory file (memfd) and opened by its /proc path, as any
 * checkpoint would be. A file that opens must satisfy the reader's promises: every entry is
 * found by its own name, the byte ranges tile the data buffer, every tensor reads back. A
 * file that does not must fail with a status and a message naming the file. Either way the
 * tracker must hold zero live bytes and no invalid free afterwards; ASan and LSan watch the
 * rest (Jansson's memory included).
 *
 *   ci/fuzz 120                      # build in build-fuzz and run for two minutes
 *   build-fuzz/tests/fuzz/fuzz_safetensors crash-file   # replay one input
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "safetensors.h"

static struct trk_tracker *trk;
static int fd = -1;
static char path[64];

static void die(const char *what)
{
    fprintf(stderr, "fuzz_safetensors: %s (%s)\n", what, lg_errmsg());
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (trk_tracker_new(&trk, &(struct trk_options){.stacks = false}) != LG_OK) die("tracker");
    fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
    if (fd < 0) die("memfd_create");
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return 0;
}

/* The promises of a file that opened. */
static void check_open_file(struct st_file *f, size_t size)
{
    uint64_t pos = 0;
    for (int i = 0; i < st_count(f); i++) {
        const struct st_info *e = st_info(f, i);
        if (st_find(f, e->name) != i) die("an entry is not found by its name");
        if (e->begin != pos) die("entries do not tile the data buffer");
        pos = e->end;
        if (e->ndim < 0 || e->ndim > ST_MAX_DIMS) die("ndim out of range");
        size_t nb = st_nbytes(f, i);
        if (nb > size) die("a tensor larger than the file");
        void *buf = trk_alloc(trk, nb, "fuzz/tensor");
        if (!buf) die("out of memory");
        if (st_read(f, i, buf, nb) != LG_OK) die("a validated tensor does not read");
        trk_free(trk, buf);
    }
    if (pos > size) die("data past the end of the file");
    for (int i = 0; i < st_meta_count(f); i++) {
        const char *k, *v;
        st_meta_at(f, i, &k, &v);
        if (st_meta(f, k) == NULL) die("a metadata key is not found");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) die("memfd write");
    struct st_file *f = NULL;
    lg_clear_error();
    int rc = st_open(&f, trk, path);
    if (rc == LG_OK) {
        check_open_file(f, size);
        st_close(f);
    } else {
        if (f) die("a failed open left a handle");
        if (rc != LG_EFORMAT) die("a malformed file is not LG_EFORMAT");
        if (!strstr(lg_errmsg(), path)) die("the message does not name the file");
    }
    struct trk_totals t;
    trk_totals(trk, TRK_HOST, &t);
    if (t.live_bytes != 0 || t.live_count != 0) die("tracked bytes left live");
    if (trk_error_count(trk) != 0) die("the tracker saw an invalid free");
    return 0;
}
