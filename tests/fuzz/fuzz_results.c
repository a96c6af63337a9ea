/* fuzz_results.c — libFuzzer target for the results loader (what `leakgate report`, `compare`
 * and `merge` read). The input is a results file; it must either load — and then every
 * artefact writer that needs no external program must accept it — or fail with LG_EFORMAT
 * and a message naming the file. ASan and LSan watch every path.
 *
 *   ci/fuzz 60 fuzz_results
 * Seeds: tests/data/results (recorded runs: clean, leaking, partial, soak, device).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_fuzz.h"
#include "reports.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = lg_fuzz_file(data, size);
    struct rpt_results *r = NULL;
    int rc = rpt_results_load(&r, path);
    if (rc == LG_OK) {
        /* documents that need no gnuplot: they must take whatever loaded */
        FILE *null = fopen("/dev/null", "w");
        if (!null) abort();
        if (rpt_write_junit(r, null) != LG_OK || rpt_write_markdown(r, null) != LG_OK ||
            rpt_write_csv(r, null) != LG_OK)
            lg_fuzz_die("a loaded file was refused by a writer");
        fclose(null);
        rpt_results_free(r);
    } else if (rc != LG_EFORMAT && rc != LG_EIO) {
        fprintf(stderr, "fuzz_results: status %d (%s)\n", rc, lg_errmsg());
        abort();
    } else if (!strstr(lg_errmsg(), "/proc/self/fd/")) {
        fprintf(stderr, "fuzz_results: the message does not name the file: %s\n", lg_errmsg());
        abort();
    }
    return 0;
}
