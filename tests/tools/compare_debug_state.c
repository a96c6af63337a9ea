/* compare_debug_state — compares two debug-state files (spec/TFT.md, "Debug state";
 * `leakgate debug-state`) tensor by tensor, e.g. the CPU's against the GPU's:
 *
 *   compare_debug_state [--out-tol 1e-5] [--grad-tol 1e-4] reference.st candidate.st
 *
 * Every tensor of the reference must be in the candidate with the same dtype and shape.
 * Parameters (no prefix) and inputs (input.*) must be identical (both came from the same seed);
 * outputs (output.*) must agree within --out-tol and gradients (grad.*) within --grad-tol, as
 * the normwise relative error max|c − r| / max|r| of each tensor. Prints the worst tensors of
 * each group and one verdict line; exit 0 when everything agrees, 1 when something does not,
 * 2 on bad usage or unreadable files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

enum group { G_PARAM, G_INPUT, G_OUTPUT, G_GRAD, G_N };
static const char *const group_name[G_N] = {"parameters", "inputs", "outputs", "gradients"};

struct worst {
    double err;
    char name[LG_MAX_NAME + 16];
    int count, failed;
};

static enum group group_of(const char *name)
{
    if (!strncmp(name, "grad.", 5)) return G_GRAD;
    if (!strncmp(name, "output.", 7)) return G_OUTPUT;
    if (!strncmp(name, "input.", 6)) return G_INPUT;
    return G_PARAM;
}

/* The normwise relative error of candidate c against reference r (n values of dtype dt);
 * integers compare exactly (0 or 1). */
static double rel_error(const void *r, const void *c, size_t nbytes, enum tn_dtype dt)
{
    if (dt != TN_F32) return memcmp(r, c, nbytes) ? 1.0 : 0.0;
    const float *a = r, *b = c;
    double diff = 0, ref = 0;
    for (size_t i = 0; i < nbytes / 4; i++) {
        double d = fabs((double)b[i] - (double)a[i]);
        if (!(d <= diff)) diff = d; /* a NaN is the worst */
        ref = fmax(ref, fabs((double)a[i]));
    }
    return diff == 0 ? 0 : diff / fmax(ref, 1e-30);
}

static int compare(struct st_file *ref, struct st_file *cand, const double tol[G_N],
                   struct worst w[G_N])
{
    int bad = 0;
    for (int i = 0; i < st_count(ref); i++) {
        const struct st_info *a = st_info(ref, i);
        int j = st_find(cand, a->name);
        enum group g = group_of(a->name);
        w[g].count++;
        if (j < 0) {
            printf("  %-48s missing from the candidate\n", a->name);
            w[g].failed++;
            bad++;
            continue;
        }
        const struct st_info *b = st_info(cand, j);
        size_t n = st_nbytes(ref, i);
        if (b->dtype != a->dtype || st_nbytes(cand, j) != n || b->ndim != a->ndim ||
            memcmp(a->shape, b->shape, sizeof a->shape)) {
            printf("  %-48s dtype or shape differs\n", a->name);
            w[g].failed++;
            bad++;
            continue;
        }
        void *x = malloc(n ? n : 1), *y = malloc(n ? n : 1);
        if (!x || !y || st_read(ref, i, x, n) || st_read(cand, j, y, n)) {
            fprintf(stderr, "compare_debug_state: %s: %s\n", a->name,
                    x && y ? lg_errmsg() : "out of memory");
            free(x);
            free(y);
            return -1;
        }
        double e = rel_error(x, y, n, a->dtype);
        free(x);
        free(y);
        if (!(e <= tol[g])) {
            printf("  %-48s relative error %.3g > %.1g\n", a->name, e, tol[g]);
            w[g].failed++;
            bad++;
        }
        if (!(e <= w[g].err) || !w[g].name[0]) {
            w[g].err = e;
            snprintf(w[g].name, sizeof w[g].name, "%s", a->name);
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    double tol[G_N] = {0, 0, 1e-5, 1e-4};
    const char *files[2] = {NULL, NULL};
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out-tol") && i + 1 < argc)
            tol[G_OUTPUT] = atof(argv[++i]);
        else if (!strcmp(argv[i], "--grad-tol") && i + 1 < argc)
            tol[G_GRAD] = atof(argv[++i]);
        else if (argv[i][0] != '-' && nf < 2)
            files[nf++] = argv[i];
        else
            nf = 3;
    }
    if (nf != 2) {
        fprintf(stderr,
                "usage: compare_debug_state [--out-tol X] [--grad-tol X] reference.safetensors "
                "candidate.safetensors\n");
        return 2;
    }
    struct trk_tracker *trk = NULL;
    struct st_file *ref = NULL, *cand = NULL;
    int rc = 2;
    if (trk_tracker_new(&trk, NULL) || st_open(&ref, trk, files[0]) ||
        st_open(&cand, trk, files[1])) {
        fprintf(stderr, "compare_debug_state: %s\n", lg_errmsg());
        goto out;
    }
    struct worst w[G_N];
    memset(w, 0, sizeof w);
    printf("%s (reference) vs %s: %d tensors\n", files[0], files[1], st_count(ref));
    int bad = compare(ref, cand, tol, w);
    if (bad < 0) goto out;
    for (int g = 0; g < G_N; g++)
        printf("  %-10s %4d tensors, %d over %.1g; worst %.3g (%s)\n", group_name[g], w[g].count,
               w[g].failed, tol[g], w[g].err, w[g].name[0] ? w[g].name : "-");
    printf("%s: %d of %d tensors outside tolerance\n", bad ? "FAIL" : "PASS", bad, st_count(ref));
    rc = bad ? 1 : 0;
out:
    st_close(ref);
    st_close(cand);
    trk_tracker_free(trk);
    return rc;
}
