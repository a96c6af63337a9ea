/* fuzz_history.c — libFuzzer target for the history reader (`leakgate history`, `--baseline
 * auto`). The input is a history file; it must either read — and then every record can be
 * turned into results that compare judges, and drift can be judged over its workloads — or fail
 * with LG_EFORMAT naming the file. ASan and LSan watch every path; the run's tracker must stay
 * empty.
 *
 *   ci/fuzz 60 fuzz_history
 * Seeds: tests/data/gate/history (records of clean and leaking runs, cut lines).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "lg_fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    lg_fuzz_init();
    return 0;
}

static void judge(const struct rpt_history *h)
{
    FILE *null = fopen("/dev/null", "w");
    struct rpt_results *first = NULL;
    if (!null) abort();
    for (int i = 0; i < h->n; i++) {
        struct rpt_results *r = NULL;
        if (rpt_history_to_results(&h->rec[i], &r) != LG_OK) lg_fuzz_die("a record read back");
        if (!first)
            first = r;
        else {
            rpt_compare(first, r, r->run.budgets, null);
            rpt_results_free(r);
        }
        struct rpt_drift *d = NULL;
        int nd = 0;
        if (rpt_history_drift(h, h->rec[i].workload, 10, NULL, 0, &d, &nd) != LG_OK)
            lg_fuzz_die("drift over a history that read");
        free(d);
    }
    rpt_results_free(first);
    fclose(null);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = lg_fuzz_file(data, size);
    struct rpt_history *h = NULL;
    int rc = rpt_history_load(&h, path);
    if (rc == LG_OK) {
        judge(h);
        rpt_history_free(h);
    } else if (rc != LG_EFORMAT) {
        lg_fuzz_die("refused, but not as malformed input");
    } else if (!strstr(lg_errmsg(), path)) {
        lg_fuzz_die("the message does not name the file");
    }
    lg_fuzz_check_tracker();
    return 0;
}
