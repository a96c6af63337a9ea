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

#include "lg_fuzz.h"
#include "safetensors.h"

/* The promises of a file that opened. */
static void check_open_file(struct st_file *f, size_t size)
{
    uint64_t pos = 0;
    for (int i = 0; i < st_count(f); i++) {
        const struct st_info *e = st_info(f, i);
        if (st_find(f, e->name) != i) lg_fuzz_die("an entry is not found by its name");
        if (e->begin != pos) lg_fuzz_die("entries do not tile the data buffer");
        pos = e->end;
        if (e->ndim < 0 || e->ndim > ST_MAX_DIMS) lg_fuzz_die("ndim out of range");
        size_t nb = st_nbytes(f, i);
        if (nb > size) lg_fuzz_die("a tensor larger than the file");
        void *buf = trk_alloc(lg_fuzz_trk, nb, "fuzz/tensor");
        if (!buf) lg_fuzz_die("out of memory");
        if (st_read(f, i, buf, nb) != LG_OK) lg_fuzz_die("a validated tensor does not read");
        trk_free(lg_fuzz_trk, buf);
    }
    if (pos > size) lg_fuzz_die("data past the end of the file");
    for (int i = 0; i < st_meta_count(f); i++) {
        const char *k, *v;
        st_meta_at(f, i, &k, &v);
        if (st_meta(f, k) == NULL) lg_fuzz_die("a metadata key is not found");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = lg_fuzz_file(data, size);
    struct st_file *f = NULL;
    lg_clear_error();
    int rc = st_open(&f, lg_fuzz_trk, path);
    if (rc == LG_OK) {
        check_open_file(f, size);
        st_close(f);
    } else {
        if (f) lg_fuzz_die("a failed open left a handle");
        if (rc != LG_EFORMAT) lg_fuzz_die("a malformed file is not LG_EFORMAT");
        if (!strstr(lg_errmsg(), path)) lg_fuzz_die("the message does not name the file");
    }
    lg_fuzz_check_tracker();
    return 0;
}
