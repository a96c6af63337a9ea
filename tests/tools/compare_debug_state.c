/* compare_debug_state — compares two debug-state files (spec/TFT.md, "Debug state";
 * `leakgate debug-state`) tensor by tensor, e.g. the CPU's against the GPU's:
 *
 *   compare_debug_state [--out-tol 1e-5] [--grad-tol 1e-4]
 *                       [--out-rtol 1e-4] [--out-atol 1e-5]
 *                       [--grad-rtol 1e-4] [--grad-atol 1e-6] [--worst 8]
 *                       reference.st candidate.st
 *
 * Every tensor of the reference must be in the candidate with the same dtype and shape.
 * Parameters (no prefix) and inputs (input.*) must be identical (both came from the same seed).
 * Outputs (output.*) and gradients (grad.*) must pass two bounds:
 *   - normwise: max|c − r| / max|r| of each tensor within --out-tol / --grad-tol;
 *   - elementwise: |c − r| ≤ atol + rtol·|r| for every entry (numpy's allclose, r the
 *     reference), so a large error in a small entry — which the normwise bound hides behind
 *     the tensor's largest entry — fails too.
 * Prints each failing tensor with its worst entry, the --worst entries of the whole file by
 * elementwise ratio |c − r| / (atol + rtol·|r|) (named tensor[i, j, ...], over 1 fails), the
 * worst tensor of each group, and one verdict line; exit 0 when everything agrees, 1 when
 * something does not, 2 on bad usage or unreadable files.
 *
 * The elementwise defaults (the values above) sit 16× (outputs) and 30× (gradients) above the
 * worst entry two CPU BLAS kernels give each other on tiny and electricity (OpenBLAS's SkylakeX
 * and Prescott GEMMs: other summation orders, other FMA use); docs/cuda.md has the figures.
 * Absolute tolerances: an entry near zero after cancellation carries the rounding of the large
 * terms it came from, which no relative bound can allow. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

enum group { G_PARAM, G_INPUT, G_OUTPUT, G_GRAD, G_N };
static const char *const group_name[G_N] = {"parameters", "inputs", "outputs", "gradients"};

struct tol {
    double norm, rtol, atol; /* all 0: identical */
};

/* One entry of a tensor, as the elementwise bound saw it. */
struct entry {
    double ratio; /* |c − r| / (atol + rtol·|r|); INFINITY for a NaN or an exact bound missed */
    double ref, cand;
    char where[LG_MAX_NAME + 64]; /* "grad.attn.q.weight[12, 3]" */
};

struct group_stats {
    int count, failed;
    double norm_err, ratio; /* the group's worst normwise error and elementwise ratio */
    char norm_name[LG_MAX_NAME], ratio_where[LG_MAX_NAME + 64];
};

#define MAX_WORST 64
struct worst_list {
    int n, cap;
    struct entry e[MAX_WORST]; /* largest ratio first */
};

static enum group group_of(const char *name)
{
    if (!strncmp(name, "grad.", 5)) return G_GRAD;
    if (!strncmp(name, "output.", 7)) return G_OUTPUT;
    if (!strncmp(name, "input.", 6)) return G_INPUT;
    return G_PARAM;
}

/* "name[i0, i1, ...]" for flat index k of a tensor of shape info->shape. */
static void entry_name(char *buf, size_t size, const struct st_info *info, size_t k)
{
    size_t idx[ST_MAX_DIMS];
    for (int d = info->ndim - 1; d >= 0; d--) {
        size_t ext = (size_t)info->shape[d];
        idx[d] = ext ? k % ext : 0;
        k = ext ? k / ext : 0;
    }
    int len = snprintf(buf, size, "%s[", info->name);
    for (int d = 0; d < info->ndim && len > 0 && (size_t)len < size; d++)
        len += snprintf(buf + len, size - (size_t)len, "%s%zu", d ? ", " : "", idx[d]);
    if (len > 0 && (size_t)len < size) snprintf(buf + len, size - (size_t)len, "]");
}

static void worst_add(struct worst_list *w, const struct entry *e)
{
    if (w->cap == 0 || (w->n == w->cap && !(e->ratio > w->e[w->n - 1].ratio))) return;
    int i = w->n < w->cap ? w->n++ : w->n - 1;
    for (; i > 0 && e->ratio > w->e[i - 1].ratio; i--) w->e[i] = w->e[i - 1];
    w->e[i] = *e;
}

/* The elementwise ratio of one entry (0 when equal; INFINITY for a NaN, or for any difference
 * under a zero bound). */
static double ratio_of(double r, double c, const struct tol *t)
{
    double d = fabs(c - r), bound = t->atol + t->rtol * fabs(r);
    if (d == 0) return 0;
    if (!(d == d)) return INFINITY; /* NaN in either */
    return bound > 0 ? d / bound : INFINITY;
}

/* Compares one F32 tensor (n values) against both bounds; fills *norm_err, the number of
 * entries over the elementwise bound and the worst entry, and feeds the file's worst list. */
static size_t compare_f32(const struct st_info *info, const float *r, const float *c, size_t n,
                          const struct tol *t, double *norm_err, struct entry *worst,
                          struct worst_list *wl)
{
    double diff = 0, ref = 0;
    size_t over = 0;
    worst->ratio = -1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)c[i] - (double)r[i]);
        if (!(d <= diff)) diff = d; /* a NaN is the worst */
        ref = fmax(ref, fabs((double)r[i]));
        double q = ratio_of(r[i], c[i], t);
        if (q > 1) over++;
        if (q > worst->ratio) {
            worst->ratio = q;
            worst->ref = r[i];
            worst->cand = c[i];
            entry_name(worst->where, sizeof worst->where, info, i);
        }
        if (q > 0 && wl->cap && (wl->n < wl->cap || q > wl->e[wl->n - 1].ratio)) {
            struct entry e = {q, r[i], c[i], ""};
            entry_name(e.where, sizeof e.where, info, i);
            worst_add(wl, &e);
        }
    }
    *norm_err = diff == 0 ? 0 : diff / fmax(ref, 1e-30);
    return over;
}

static void note_group(struct group_stats *g, const char *name, double norm_err,
                       const struct entry *worst)
{
    if (!(norm_err <= g->norm_err) || !g->norm_name[0]) {
        g->norm_err = norm_err;
        lg_strlcpy(g->norm_name, name, sizeof g->norm_name);
    }
    if (worst && (!(worst->ratio <= g->ratio) || !g->ratio_where[0])) {
        g->ratio = worst->ratio;
        lg_strlcpy(g->ratio_where, worst->where, sizeof g->ratio_where);
    }
}

/* One tensor; returns 1 when it fails, 0 when it agrees, -1 on a read error. */
static int compare_one(struct st_file *ref, int i, struct st_file *cand, const struct tol tol[G_N],
                       struct group_stats gs[G_N], struct worst_list *wl)
{
    const struct st_info *a = st_info(ref, i);
    enum group g = group_of(a->name);
    gs[g].count++;
    int j = st_find(cand, a->name);
    if (j < 0) {
        printf("  %-48s missing from the candidate\n", a->name);
        gs[g].failed++;
        return 1;
    }
    const struct st_info *b = st_info(cand, j);
    size_t n = st_nbytes(ref, i);
    if (b->dtype != a->dtype || st_nbytes(cand, j) != n || b->ndim != a->ndim ||
        memcmp(a->shape, b->shape, sizeof a->shape)) {
        printf("  %-48s dtype or shape differs\n", a->name);
        gs[g].failed++;
        return 1;
    }
    void *x = malloc(n ? n : 1), *y = malloc(n ? n : 1);
    if (!x || !y || st_read(ref, i, x, n) || st_read(cand, j, y, n)) {
        fprintf(stderr, "compare_debug_state: %s: %s\n", a->name,
                x && y ? lg_errmsg() : "out of memory");
        free(x);
        free(y);
        return -1;
    }
    int bad = 0;
    if (a->dtype != TN_F32) { /* integers (inputs) compare exactly */
        bad = memcmp(x, y, n) != 0;
        if (bad) printf("  %-48s differs (integers must be identical)\n", a->name);
        note_group(&gs[g], a->name, bad ? 1.0 : 0.0, NULL);
    } else {
        double norm_err;
        struct entry worst;
        size_t over = compare_f32(a, x, y, n / 4, &tol[g], &norm_err, &worst, wl);
        if (!(norm_err <= tol[g].norm)) {
            printf("  %-48s normwise relative error %.3g > %.1g\n", a->name, norm_err, tol[g].norm);
            bad = 1;
        }
        if (over) {
            printf("  %-48s %zu of %zu entries over |c - r| <= %.1g + %.1g·|r|; worst %s: "
                   "reference %.9g, candidate %.9g (%.3gx the bound)\n",
                   a->name, over, n / 4, tol[g].atol, tol[g].rtol, worst.where, worst.ref,
                   worst.cand, worst.ratio);
            bad = 1;
        }
        note_group(&gs[g], a->name, norm_err, n ? &worst : NULL);
    }
    free(x);
    free(y);
    gs[g].failed += bad;
    return bad;
}

static int parse_args(int argc, char **argv, struct tol tol[G_N], int *n_worst,
                      const char *files[2])
{
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        double *slot = NULL;
        const char *o = argv[i];
        if (!strcmp(o, "--out-tol"))
            slot = &tol[G_OUTPUT].norm;
        else if (!strcmp(o, "--grad-tol"))
            slot = &tol[G_GRAD].norm;
        else if (!strcmp(o, "--out-rtol"))
            slot = &tol[G_OUTPUT].rtol;
        else if (!strcmp(o, "--out-atol"))
            slot = &tol[G_OUTPUT].atol;
        else if (!strcmp(o, "--grad-rtol"))
            slot = &tol[G_GRAD].rtol;
        else if (!strcmp(o, "--grad-atol"))
            slot = &tol[G_GRAD].atol;
        if (slot || !strcmp(o, "--worst")) {
            char *end = NULL;
            double v = i + 1 < argc ? strtod(argv[i + 1], &end) : -1;
            if (!end || *end || !(v >= 0)) return -1;
            i++;
            if (slot)
                *slot = v;
            else
                *n_worst = v > MAX_WORST ? MAX_WORST : (int)v;
        } else if (o[0] != '-' && nf < 2) {
            files[nf++] = o;
        } else {
            return -1;
        }
    }
    return nf == 2 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct tol tol[G_N] = {{0, 0, 0}, {0, 0, 0}, {1e-5, 1e-4, 1e-5}, {1e-4, 1e-4, 1e-6}};
    int n_worst = 8;
    const char *files[2] = {NULL, NULL};
    if (parse_args(argc, argv, tol, &n_worst, files)) {
        fprintf(stderr, "usage: compare_debug_state [--out-tol X] [--grad-tol X] [--out-rtol X] "
                        "[--out-atol X] [--grad-rtol X] [--grad-atol X] [--worst N] "
                        "reference.safetensors candidate.safetensors\n");
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
    struct group_stats gs[G_N];
    memset(gs, 0, sizeof gs);
    static struct worst_list wl;
    wl.n = 0;
    wl.cap = n_worst;
    printf("%s (reference) vs %s: %d tensors\n", files[0], files[1], st_count(ref));
    int bad = 0;
    for (int i = 0; i < st_count(ref); i++) {
        int b = compare_one(ref, i, cand, tol, gs, &wl);
        if (b < 0) goto out;
        bad += b;
    }
    if (wl.n) {
        printf("  worst entries, |c - r| / (atol + rtol·|r|) (over 1 fails):\n");
        for (int k = 0; k < wl.n; k++)
            printf("    %-56s reference %-14.7g candidate %-14.7g %.3gx\n", wl.e[k].where,
                   wl.e[k].ref, wl.e[k].cand, wl.e[k].ratio);
    }
    for (int g = 0; g < G_N; g++) {
        printf("  %-10s %4d tensors, %d failing; normwise worst %.3g (%s, bound %.1g)",
               group_name[g], gs[g].count, gs[g].failed, gs[g].norm_err,
               gs[g].norm_name[0] ? gs[g].norm_name : "-", tol[g].norm);
        if (g == G_OUTPUT || g == G_GRAD)
            printf("; elementwise worst %.3gx (%s, atol %.1g, rtol %.1g)", gs[g].ratio,
                   gs[g].ratio_where[0] ? gs[g].ratio_where : "-", tol[g].atol, tol[g].rtol);
        printf("\n");
    }
    printf("%s: %d of %d tensors outside tolerance\n", bad ? "FAIL" : "PASS", bad, st_count(ref));
    rc = bad ? 1 : 0;
out:
    st_close(ref);
    st_close(cand);
    trk_tracker_free(trk);
    return rc;
}
