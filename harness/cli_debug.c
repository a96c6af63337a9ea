/* cli_debug.c — `leakgate debug-state --preset P --seed S [--batch B] [--device D] -o F`: the
 * debug state of spec/TFT.md (model/train/include/debug_state.h), with strict options. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug_state.h"
#include "hx_impl.h"
#include "tn_device.h"

int hx_cmd_debug_state(int argc, char **argv)
{
    const char *preset = "tiny", *out = NULL;
    enum tn_device dev = TN_CPU;
    uint64_t seed = 1;
    int batch = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(
                "usage: leakgate debug-state [--preset P] [--seed S] [--batch B] [--device "
                "cpu|cuda] -o FILE\n"
                "Writes one batch's parameters, inputs, output, loss and gradients (dropout off)\n"
                "as safetensors, for numerical cross-checks (spec/TFT.md, \"Debug state\").\n");
            return 0;
        }
        if (!v || a[0] != '-') {
            fprintf(stderr, "leakgate debug-state: %s%s\n",
                    a[0] == '-' ? "missing value for " : "unexpected argument ", a);
            return 2;
        }
        if (!strcmp(a, "--preset"))
            preset = v;
        else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            seed = strtoull(v, &end, 10);
            if (v[0] < '0' || v[0] > '9' || *end || errno) {
                fprintf(stderr,
                        "leakgate debug-state: --seed: '%s' is not a non-negative integer\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--batch")) {
            if (hx_parse_int("--batch", v, 1, 1 << 20, &batch) != LG_OK) {
                fprintf(stderr, "leakgate debug-state: %s\n", lg_errmsg());
                return 2;
            }
        } else if (!strcmp(a, "--device")) {
            if (strcmp(v, "cpu") && strcmp(v, "cuda")) {
                fprintf(stderr, "leakgate debug-state: --device: '%s' is not cpu or cuda\n", v);
                return 2;
            }
            dev = strcmp(v, "cpu") ? TN_CUDA : TN_CPU;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
            if (!v[0]) {
                fprintf(stderr, "leakgate debug-state: %s: the path is empty\n", a);
                return 2;
            }
            out = v;
        } else {
            fprintf(stderr, "leakgate debug-state: unknown option '%s'\n", a);
            return 2;
        }
        i++;
    }
    if (!out) {
        fprintf(stderr, "leakgate debug-state: -o FILE is required\n");
        return 2;
    }
    struct trk_tracker *trk = NULL;
    if (trk_tracker_new(&trk, NULL) != LG_OK) {
        fprintf(stderr, "leakgate debug-state: %s\n", lg_errmsg());
        return 4;
    }
    int rc = tn_device_init(trk, dev);
    if (rc == LG_OK) rc = tr_debug_state(trk, preset, seed, batch, dev, out);
    if (rc != LG_OK)
        fprintf(stderr, "leakgate debug-state: %s\n", lg_errmsg());
    else
        printf("debug state of %s (seed %llu) written to %s\n", preset, (unsigned long long)seed,
               out);
    tn_device_fini(trk);
    size_t left = trk_tracker_free(trk);
    if (left) fprintf(stderr, "leakgate debug-state: %zu allocation(s) left live (a leak)\n", left);
    return rc == LG_OK ? (left ? 4 : 0) : lg_exit_code(rc);
}
