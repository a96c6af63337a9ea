/* bench_blas — the GEMM candidates of issue 40 on the electricity step's shapes, one thread each
 * (the trainer's pool makes every product one-thread calls), interleaved in one run:
 *
 *   build/tests/bench/bench_blas [--rounds 5] [--quick]
 *
 * Every OpenBLAS core this CPU runs (switched in the process, kn_blas_use_core), BLIS when
 * Debian's libblis4 is installed (dlopen'd: it exports cblas_sgemm too, so it is never linked),
 * and the path the kernels chose at start-up. Prints GFLOP/s by shape, the best of --rounds, each
 * product checked against a double-precision sum (exit 1 on a wrong one), then the ratio of the
 * forced fallback (OpenBLAS's generic Prescott core, what it loads on a CPU its table does not
 * know) to the feature-matched core, per shape and over the step's mix. Run it with
 * OPENBLAS_CORETYPE=Prescott as well: the header then shows the start-up choice replacing it. */
#define _GNU_SOURCE
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "kn_blas.h"
#include "lg_base.h"

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int,
                         int, float, const float *, int, const float *, int, float, float *, int);

struct shape {
    const char *what;
    int m, n, k;
    bool ta, tb;
    int reps; /* calls a timing, so that a small product is timed over ~1 ms */
};

/* The electricity step's commonest GEMMs (its GEMM profile in docs/benchmarks.md) and a square. */
static const struct shape shapes[] = {
    {"X·Wᵀ [10752,160]x[160,160]ᵀ", 10752, 160, 160, false, true, 1},
    {"X·Wᵀ [10752,160]x[320,160]ᵀ (GLU)", 10752, 320, 160, false, true, 1},
    {"X·Wᵀ [12288,640]x[160,640]ᵀ", 12288, 160, 640, false, true, 1},
    {"dY·W [10752,160]x[160,160]", 10752, 160, 160, false, false, 1},
    {"Xᵀ·dY [10752,160]ᵀx[10752,160]", 160, 160, 10752, true, false, 1},
    {"LSTM [64,160]x[160,640]", 64, 640, 160, false, false, 40},
    {"square 1024³", 1024, 1024, 1024, false, false, 1},
};
#define NS       ((int)LG_ARRAY_LEN(shapes))
#define MAX_CAND 10

struct cand {
    char name[48];
    const char *core; /* an OpenBLAS core to switch to, or NULL */
    sgemm_fn gemm;
    double best[NS]; /* seconds a call */
    double err;
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *buf(int64_t n, int salt)
{
    float *p = malloc((size_t)n * sizeof *p); /* freed by main */
    for (int64_t i = 0; p && i < n; i++) p[i] = (float)((i * 37 + salt) % 101) / 101.0f - 0.5f;
    return p;
}

/* max |C - a double sum| over a few entries of C */
static double check(const struct shape *s, const float *a, const float *b, const float *c)
{
    double worst = 0;
    for (int t = 0; t < 16; t++) {
        int i = (t * 7919) % s->m, j = (t * 104729) % s->n;
        double sum = 0;
        for (int k = 0; k < s->k; k++)
            sum += (double)(s->ta ? a[(int64_t)k * s->m + i] : a[(int64_t)i * s->k + k]) *
                   (s->tb ? b[(int64_t)j * s->k + k] : b[(int64_t)k * s->n + j]);
        worst = fmax(worst, fabs(sum - c[(int64_t)i * s->n + j]));
    }
    return worst;
}

static void run_one(struct cand *cd, int si, const float *a, const float *b, float *c)
{
    const struct shape *s = &shapes[si];
    int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    double t0 = now();
    for (int r = 0; r < s->reps; r++)
        cd->gemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
                 s->tb ? CblasTrans : CblasNoTrans, s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f, c,
                 s->n);
    double t = (now() - t0) / s->reps;
    if (cd->best[si] == 0 || t < cd->best[si]) cd->best[si] = t;
    cd->err = fmax(cd->err, check(s, a, b, c));
}

/* BLIS's cblas_sgemm from Debian's libblis4, on one thread; NULL when it is not installed. */
static sgemm_fn blis_sgemm(char *name, size_t n)
{
#ifdef __SANITIZE_ADDRESS__ /* ASan refuses RTLD_DEEPBIND (google/sanitizers#611) */
    (void)name, (void)n;
    return NULL;
#endif
    /* DEEPBIND: BLIS's cblas_sgemm calls its own sgemm_, not OpenBLAS's of the same name */
    void *h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) return NULL;
    void (*threads)(int) = (void (*)(int))dlsym(h, "bli_thread_set_num_threads");
    if (threads) threads(1);
    const char *(*arch)(int) = (const char *(*)(int))dlsym(h, "bli_arch_string");
    int (*query)(void) = (int (*)(void))dlsym(h, "bli_arch_query_id");
    snprintf(name, n, "BLIS %s", arch && query ? arch(query()) : "");
    return (sgemm_fn)dlsym(h, "cblas_sgemm");
}

int main(int argc, char **argv)
{
    int rounds = 5;
    bool quick = false;
    const struct ba_option opts[] = {{"--rounds", BA_INT, &rounds}, {"--quick", BA_FLAG, &quick}};
    if (!ba_parse(argc, argv, opts, LG_ARRAY_LEN(opts)) || rounds < 1) {
        fprintf(stderr, "usage: bench_blas [--rounds N] [--quick]\n");
        return 2;
    }
    if (quick) rounds = 1;
    openblas_set_num_threads(1);
    const struct kn_blas_info *bi = kn_blas_info();
    char start[32];
    snprintf(start, sizeof start, "%s", bi->core);
    printf("GEMM at start-up: %s %s kernels (path %s; CPU %s; OpenBLAS loaded %s%s%s)\n", bi->blas,
           bi->core, bi->path, bi->cpu, bi->loaded, bi->note[0] ? "; " : "", bi->note);
    if (bi->warning[0]) printf("warning: %s\n", bi->warning);

    static struct cand cand[MAX_CAND];
    int nc = 0, fallback = -1, matched = -1;
    static const char *const cores[] = {"Prescott", "Sandybridge", "Haswell",
                                        "Zen",      "SkylakeX",    "Cooperlake"};
    for (size_t i = 0; i < LG_ARRAY_LEN(cores); i++) {
        if (kn_blas_core_isa(cores[i]) > (int)bi->isa || !kn_blas_use_core(cores[i])) continue;
        struct cand *cd = &cand[nc];
        cd->core = cores[i], cd->gemm = cblas_sgemm;
        snprintf(cd->name, sizeof cd->name, "OpenBLAS %s", cores[i]);
        if (!strcmp(cores[i], "Prescott")) fallback = nc;
        if (!strcmp(cores[i], bi->wanted)) matched = nc;
        nc++;
    }
    kn_blas_use_core(NULL);
    sgemm_fn blis = blis_sgemm(cand[nc].name, sizeof cand[nc].name);
    if (blis)
        cand[nc].gemm = blis, nc++;
    else
        printf("BLIS: SKIP (Debian's libblis4-pthread is not installed, or an ASan build)\n");

    int64_t most = 0;
    for (int s = 0; s < NS; s++) {
        int64_t m = shapes[s].m, n = shapes[s].n, k = shapes[s].k;
        most = m * k > most ? m * k : most, most = k * n > most ? k * n : most;
        most = m * n > most ? m * n : most;
    }
    float *a = buf(most, 1), *b = buf(most, 2), *c = buf(most, 3);
    if (!a || !b || !c) return 4;
    for (int r = 0; r < rounds + 1; r++) /* the first round warms caches and pages: not kept */
        for (int i = 0; i < nc; i++) {
            if (cand[i].core) kn_blas_use_core(cand[i].core);
            for (int s = 0; s < NS; s++) run_one(&cand[i], s, a, b, c);
            if (r == 0) memset(cand[i].best, 0, sizeof cand[i].best);
        }
    kn_blas_use_core(NULL);

    printf("\nGFLOP/s on one thread, best of %d interleaved round(s); shapes of the electricity "
           "step\n%-36s",
           rounds, "shape");
    for (int i = 0; i < nc; i++) printf(" %*s", 11, cand[i].name + (cand[i].core ? 9 : 0));
    printf("\n");
    double fl_all = 0, t_all[MAX_CAND] = {0};
    for (int s = 0; s < NS; s++) {
        double f = 2.0 * shapes[s].m * shapes[s].n * shapes[s].k;
        /* "%-36s" counts bytes: ᵀ and ³ are more than one */
        int extra = 0;
        for (const char *p = shapes[s].what; *p; p++) extra += (*p & 0xc0) == 0x80;
        printf("%-*s", 36 + extra, shapes[s].what);
        for (int i = 0; i < nc; i++) printf(" %11.1f", f / cand[i].best[s] / 1e9);
        printf("\n");
        if (s < NS - 1) /* the step's mix: every shape but the square, once each */
            for (int i = 0; i < nc; i++) t_all[i] += cand[i].best[s];
        if (s < NS - 1) fl_all += f;
    }
    printf("%-36s", "the step's mix (flops / time)");
    int best = 0;
    for (int i = 0; i < nc; i++) {
        printf(" %11.1f", fl_all / t_all[i] / 1e9);
        if (t_all[i] < t_all[best]) best = i;
    }
    printf("\n%-36s", "max |error| vs a double sum");
    int wrong = 0;
    for (int i = 0; i < nc; i++) {
        printf(" %11.1e", cand[i].err);
        wrong += cand[i].err > 1e-3;
    }
    printf("\n\nbest on the step's mix: %s (%.1f GFLOP/s)\n", cand[best].name,
           fl_all / t_all[best] / 1e9);
    if (fallback >= 0 && matched >= 0) {
        printf("forced fallback (OpenBLAS Prescott) vs feature-matched (OpenBLAS %s), GEMM rate:",
               cand[matched].core);
        for (int s = 0; s < NS; s++)
            printf(" %.2f", cand[matched].best[s] / cand[fallback].best[s]);
        printf(" by shape; %.2fx over the step's mix\n", t_all[matched] / t_all[fallback]);
        printf("the kernels run at start-up: OpenBLAS %s (%s)%s\n", start, bi->path,
               strcmp(start, cand[matched].core) ? "  NOT THE FEATURE-MATCHED CORE" : "");
    }
    free(a), free(b), free(c);
    if (wrong) fprintf(stderr, "bench_blas: %d candidate(s) computed wrong products\n", wrong);
    return wrong ? 1 : 0;
}
