/* bench_train — training speed and memory of one session on a preset.
 *
 *   build/tests/bench/bench_train [--preset electricity] [--steps 10] [--batch 64] [--stacks]
 *                                 [--no-floor] [--gemm-profile [--profile-rows 16]] [--allocs]
 *                                 [--pairs N]
 *                                 [--torch [--rounds 3] [--torch-venv DIR]
 *                                 [--fallback] [--log FILE]]
 *
 * Prints the model's build time (its VarMap allocated and seeded), steps/s and samples/s of
 * full training steps (forward, pinball loss, backward, global-norm clipping, AdamW) after 2
 * warm-up steps (and the ms a step its threads waited for a CPU while they could have run,
 * bench_sched.h: other processes' load, ~0 on a quiet machine), and the session's peak tagged
 * memory
 * against its floor: parameters + gradients + Adam's two moments + the largest step's
 * activations (the "act/" tags: everything a step's tape holds at the end of its forward
 * pass, when all of them are alive at once), as a ratio. The excess over the floor is what
 * backward adds on top (intermediate gradients, "act.grad/") and bookkeeping. It also prints the
 * step's GEMM-bound floor: the step's GEMM flops (counted by the kernels) at the best GEMM rate
 * this machine reaches in the same run over every candidate kernel (each OpenBLAS core with AVX2
 * or better that the CPU runs, a 2048³ product on the same threads), and the step time as a
 * multiple of it, beside the floor at the FMA peak (the hard bound). Its header names the GEMM
 * kernels that ran (kn_blas.h: the BLAS, its core and how that core was chosen) and warns when a
 * generic core runs on a CPU with AVX2 or AVX-512; --no-floor skips those two rate measurements
 * (ci/overhead's instruction counts run the binary under callgrind, where a 2048³ product takes
 * minutes). With --gemm-profile it also times every GEMM call of the measured session (kernels.h's
 * profile: a clock read and a locked add a call, ~3 % of the CPU samples of a `tiny` step under
 * perf, nothing worth seeing on `electricity`) and prints the GEMMs' share of the step and the
 * shapes that take the most of it
 * (--profile-rows of them, the rest summed in one row). With --allocs it counts the tracked
 * allocations of the measured session, tag by tag (trk_tag_stats' total_count after it less
 * before it), and prints them a step: the total, by class (the tag up to its '/': act, act.grad,
 * data, meta, …) and the --profile-rows tags that make the most (the session's own setup, such
 * as Adam's moments, is spread over its steps: run enough steps that it rounds away). With
 * --pairs N it then runs N more sessions in this process, each beside the same session in a
 * process of its own (`bench_train --no-floor`), in turn, every line with the ms a step each
 * waited for a CPU, the least-squares line of ms/step against that wait for each side and the
 * run of each side that waited least: a session inside this process (after the floor's probes)
 * against one alone, the load told apart from the place.
 *
 * With --torch it then runs tests/bench/tft_torch.py (the same model, the same factored
 * real-variable embeddings) in every PyTorch configuration of bench_torch.c, ROUNDS rounds, each
 * round one leakgate session and one run of every configuration, interleaved, and prints each
 * configuration's median ms/step, its ratio to the best, and leakgate's samples/s against the
 * best's, and the most a trainer doing the same GEMMs could reach here: the best PyTorch's step
 * over this run's GEMM-bound floor, at the best candidate's rate and at the FMA peak (bench_peak.h,
 * the ceiling of any GEMM). The PyTorch 2.x lives in DIR (default: torch-venv in the
 * build directory; ci/bench --torch creates it). With --fallback each round also runs leakgate in
 * processes of its own with OpenBLAS's generic core forced and not (bench_train_fallback.h) and
 * each of Debian's torch configurations (OpenBLAS's GEMMs) with it forced: the fallback's cost to
 * each, as ratios of one run.
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "bench_peak.h"
#include "bench_sched.h"
#include "bench_torch.h"
#include "bench_train_fallback.h"
#include "kernels.h"
#include "kn_blas.h"
#include "kn_pool.h"
#include "trainer.h"

static int64_t class_peak(struct trk_tracker *trk, const char *prefix)
{
    struct trk_tag_stat *st = NULL;
    size_t n = trk_tag_stats(trk, &st);
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        if (!strncmp(st[i].tag, prefix, strlen(prefix))) sum += st[i].peak_bytes;
    free(st);
    return sum;
}

/* Tracked allocations per tag made since `before` (n_before entries, from trk_tag_stats), a
 * step: the total, by class (the tag up to its '/') and the `top` tags that make the most. */
static void print_allocs(struct trk_tracker *trk, const struct trk_tag_stat *before,
                         size_t n_before, int steps, int top)
{
    struct trk_tag_stat *now = NULL;
    size_t n = trk_tag_stats(trk, &now);
    struct {
        char name[LG_MAX_NAME];
        int64_t count;
    } cls[16];
    int ncls = 0;
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) { /* now[i].total_count becomes the session's own count */
        for (size_t j = 0; j < n_before; j++)
            if (before[j].space == now[i].space && !strcmp(before[j].tag, now[i].tag)) {
                now[i].total_count -= before[j].total_count;
                break;
            }
        if (now[i].total_count <= 0) continue;
        total += now[i].total_count;
        size_t len = strcspn(now[i].tag, "/");
        int c = 0;
        while (c < ncls && (strlen(cls[c].name) != len || strncmp(cls[c].name, now[i].tag, len)))
            c++;
        if (c == ncls && ncls < (int)LG_ARRAY_LEN(cls)) {
            snprintf(cls[c].name, sizeof cls[c].name, "%.*s", (int)len, now[i].tag);
            cls[c].count = 0;
            ncls++;
        }
        if (c < ncls) cls[c].count += now[i].total_count;
    }
    printf("  tracked allocations a step (%d steps): %.1f (", steps, (double)total / steps);
    for (int c = 0; c < ncls; c++)
        printf("%s%.1f %s/", c ? ", " : "", (double)cls[c].count / steps, cls[c].name);
    printf(")\n  the tags that make the most, a step:\n");
    for (int r = 0; r < top; r++) { /* selection of the largest left, n is a few hundred */
        size_t k = n;
        for (size_t i = 0; i < n; i++)
            if (now[i].total_count > 0 && (k == n || now[i].total_count > now[k].total_count))
                k = i;
        if (k == n) break;
        printf("  %10.1f  %s\n", (double)now[k].total_count / steps, now[k].tag);
        now[k].total_count = 0;
    }
    free(now);
}

/* One measured session of o->steps steps; *wait_ms (when not NULL) gets the ms a step its
 * threads waited for a CPU (bench_sched.h; < 0: not measured). */
static int session(struct tft_model *m, struct data_set *ds, const struct tr_options *o,
                   struct tr_train_stats *st, struct tr_trainer **keep, double *wait_ms)
{
    struct tr_trainer *tr = NULL;
    struct bench_sched before = bench_sched_now();
    int rc = tr_new(&tr, m, ds, o);
    if (!rc) rc = tr_initialize_optimizer(tr);
    if (!rc) rc = tr_train(tr, st);
    double wait = bench_sched_since(before);
    if (wait_ms) *wait_ms = wait >= 0 && !rc ? 1e3 * wait / st->steps : -1;
    if (keep && !rc)
        *keep = tr;
    else
        tr_free(tr);
    return rc;
}

/* The GEMM rate this machine reaches now on the kernels' threads: the best of a 2048³ product
 * and the GLU's [10752, 160]·[160, 320] (electricity's commonest shape), 6 runs each after 2 that
 * warm the threads and fault the pages in. */
static double gemm_rate(struct trk_tracker *trk)
{
    static const int shapes[2][3] = {{2048, 2048, 2048}, {10752, 320, 160}};
    double best = 0;
    for (int s = 0; s < 2; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = trk_alloc(trk, (size_t)m * k * sizeof *a, "bench/gemm.a");
        float *b = trk_alloc(trk, (size_t)n * k * sizeof *b, "bench/gemm.b");
        float *c = trk_alloc(trk, (size_t)m * n * sizeof *c, "bench/gemm.c");
        if (a && b && c) {
            for (int64_t i = 0; i < (int64_t)m * k; i++) a[i] = (float)(i % 7) * 0.01f;
            for (int64_t i = 0; i < (int64_t)n * k; i++) b[i] = (float)(i % 5) * 0.01f;
            for (int r = 0; r < 8; r++) {
                double t0 = lg_now();
                kn_cpu.gemm(c, a, b, false, true, m, n, k, 1.0f, k, k, 0.0f, n);
                double rate = 2.0 * m * n * k / (lg_now() - t0);
                if (r >= 2 && rate > best) best = rate;
            }
        }
        trk_free(trk, a);
        trk_free(trk, b);
        trk_free(trk, c);
    }
    return best;
}

/* The best GEMM rate over every candidate of issue 40 this CPU runs, each through the kernels'
 * threads as the step's GEMMs are: the core the step ran first, then every other OpenBLAS core
 * with AVX2 or better (kn_blas_use_core; the step's core is restored after). `rates` gets
 * "Zen 151, SkylakeX 140, …"; *step_rate the step's core's own. */
static double best_gemm_rate(struct trk_tracker *trk, char *best_name, size_t nb, char *rates,
                             size_t nr, double *step_rate)
{
    static const char *const cores[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake"};
    const struct kn_blas_info *bi = kn_blas_info();
    char step_core[32];
    snprintf(step_core, sizeof step_core, "%s", bi->core);
    double best = *step_rate = gemm_rate(trk);
    snprintf(best_name, nb, "OpenBLAS %s", step_core);
    int len = snprintf(rates, nr, "%s %.0f", step_core, best / 1e9);
    for (size_t i = 0; i < LG_ARRAY_LEN(cores); i++) {
        if (!strcmp(cores[i], step_core) || kn_blas_core_isa(cores[i]) > (int)bi->isa ||
            !kn_blas_use_core(cores[i]))
            continue;
        double r = gemm_rate(trk);
        if (len >= 0 && (size_t)len < nr)
            len += snprintf(rates + len, nr - (size_t)len, ", %s %.0f", cores[i], r / 1e9);
        if (r > best) best = r, snprintf(best_name, nb, "OpenBLAS %s", cores[i]);
    }
    kn_blas_use_core(step_core);
    return best;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
}

#define MAX_ROUNDS 16
#define MAX_CFG    20

/* The GEMM shapes that took the most of the measured session, `top` of them and the rest in one
 * line, per step. */
static void print_gemm_profile(int steps, double step_s, int top)
{
    static struct kn_gemm_shape rows[KN_GEMM_PROFILE_MAX + 1];
    int n = kn_cpu_gemm_profile_rows(rows, LG_ARRAY_LEN(rows));
    static const char *const op[4] = {"A·B", "Aᵀ·B", "A·Bᵀ", "Aᵀ·Bᵀ"};
    printf(
        "\n  GEMMs by shape (C[m, n] = op(A)[m, k]·op(B)[k, n]), per step, the slowest first:\n");
    printf("  %8s %8s %8s %-8s %10s %9s %9s %8s\n", "m", "n", "k", "op", "calls", "ms", "GFLOP/s",
           "of step");
    double rest_s = 0, rest_f = 0;
    int64_t rest_c = 0;
    for (int i = 0; i < n; i++) {
        const struct kn_gemm_shape *r = &rows[i];
        if (i >= top || r->m == 0) {
            rest_s += r->seconds, rest_f += r->flops, rest_c += r->calls;
            continue;
        }
        /* "%-8s" counts bytes, and ᵀ is three of them */
        printf("  %8d %8d %8d %-*s %10.1f %9.3f %9.1f %7.1f%%\n", r->m, r->n, r->k,
               8 + 2 * (r->ta + r->tb), op[r->ta + 2 * r->tb], (double)r->calls / steps,
               1e3 * r->seconds / steps, r->seconds > 0 ? r->flops / r->seconds / 1e9 : 0.0,
               100.0 * r->seconds / steps / step_s);
    }
    if (rest_c)
        printf("  %-35s %10.1f %9.3f %9.1f %7.1f%%\n", "every other shape", (double)rest_c / steps,
               1e3 * rest_s / steps, rest_s > 0 ? rest_f / rest_s / 1e9 : 0.0,
               100.0 * rest_s / steps / step_s);
}

/* The least-squares line ms = a + b·wait through n points; false when the waits do not vary. */
static bool fit_line(const double *wait, const double *ms, int n, double *a, double *b)
{
    double mw = 0, mm = 0, sww = 0, swm = 0;
    for (int i = 0; i < n; i++) mw += wait[i] / n, mm += ms[i] / n;
    for (int i = 0; i < n; i++)
        sww += (wait[i] - mw) * (wait[i] - mw), swm += (wait[i] - mw) * (ms[i] - mm);
    if (n < 3 || sww < 1) return false; /* under 1 ms² of spread: no slope to read */
    *b = swm / sww, *a = mm - *b * mw;
    return true;
}

/* --pairs: n more sessions in this process, each beside one in a process of its own (bench_train
 * --no-floor, as --fallback's "as it starts" row), in turn (in, alone; alone, in; …), each with
 * the ms a step its threads waited for a CPU: whether a session inside this process, after the
 * floor's probes, is slower than one alone at the same load (issue 40's open question). */
static void pairs_run(struct tft_model *m, struct data_set *ds, const struct tr_options *o,
                      const char *preset, int n)
{
    double in[MAX_ROUNDS], in_w[MAX_ROUNDS], out[MAX_ROUNDS], out_w[MAX_ROUNDS];
    int got = 0;
    printf("\nThis process's session against one alone (bench_train --no-floor), %d pair(s) in "
           "turn, ms/step (ms a step its threads waited for a CPU):\n",
           n);
    for (int r = 0; r < n; r++) {
        struct tr_train_stats st;
        double w_in = -1, w_out = -1, ms_out = 0;
        if (r % 2) ms_out = btf_alone(preset, o->batch, o->steps, NULL, &w_out);
        int rc = session(m, ds, o, &st, NULL, &w_in);
        if (r % 2 == 0) ms_out = btf_alone(preset, o->batch, o->steps, NULL, &w_out);
        if (rc || ms_out <= 0 || w_in < 0 || w_out < 0) {
            printf("  pair %d: %s\n", r + 1,
                   rc ? lg_errmsg() : "the run alone failed or said no wait");
            continue;
        }
        in[got] = 1e3 * st.seconds / st.steps, in_w[got] = w_in;
        out[got] = ms_out, out_w[got] = w_out;
        printf("  pair %d: in this process %.4g (%.1f), alone %.4g (%.1f)\n", r + 1, in[got], w_in,
               ms_out, w_out);
        fflush(stdout);
        got++;
    }
    double a_in, b_in, a_out, b_out;
    if (fit_line(in_w, in, got, &a_in, &b_in) && fit_line(out_w, out, got, &a_out, &b_out))
        printf("  least squares over the pairs, ms/step at no wait + ms per ms waited: in this "
               "process %.1f + %.2f x, alone %.1f + %.2f x; in / alone at no wait: %.3f\n",
               a_in, b_in, a_out, b_out, a_in / a_out);
    if (got) { /* the run of each side that waited least: the nearest to a quiet machine */
        int qi = 0, qo = 0;
        for (int i = 1; i < got; i++) {
            if (in_w[i] < in_w[qi]) qi = i;
            if (out_w[i] < out_w[qo]) qo = i;
        }
        printf("  the runs that waited least: in this process %.4g (%.1f), alone %.4g (%.1f)\n",
               in[qi], in_w[qi], out[qo], out_w[qo]);
    }
}

static void torch_rounds(struct tft_model *m, struct data_set *ds, const struct tr_options *o,
                         const char *preset, int rounds, const char *venv, bool fallback,
                         double floor_ms, double peak_ms, FILE *log)
{
    struct bt_config cfg[MAX_CFG];
    int n = bt_configs(cfg, MAX_CFG, venv, fallback);
    struct btf_runs fb = {0};
    double ms[MAX_CFG][MAX_ROUNDS], lg[MAX_ROUNDS], lg_wait[MAX_ROUNDS];
    int got[MAX_CFG] = {0}, nlg = 0;
    char script[600];
    snprintf(script, sizeof script, "%s/tft_torch.py", LG_BENCH_DIR);
    printf("\nPyTorch on the same model and batch (tests/bench/tft_torch.py), %d round(s), each "
           "one leakgate session and one run of every configuration, %d steps a run:\n",
           rounds, o->steps);
    fflush(stdout);
    for (int r = 0; r < rounds; r++) {
        struct tr_train_stats st;
        if (session(m, ds, o, &st, NULL, &lg_wait[nlg]) == LG_OK)
            lg[nlg++] = 1e3 * st.seconds / st.steps;
        for (int i = 0; i < n; i++) {
            if (cfg[i].skip[0]) continue;
            if (log) fprintf(log, "round %d: %s\n", r + 1, cfg[i].name);
            double v = bt_run(&cfg[i], script, preset, o->batch, o->steps, log);
            if (v > 0) ms[i][got[i]++] = v;
        }
        if (fallback) btf_round(&fb, preset, o->batch, o->steps, log);
        printf("  round %d of %d done\n", r + 1, rounds);
        fflush(stdout);
    }
    double med[MAX_CFG], best = 0;
    int ib = -1;
    for (int i = 0; i < n; i++) {
        double sorted[MAX_ROUNDS];
        memcpy(sorted, ms[i], sizeof sorted);
        med[i] = got[i] ? median(sorted, got[i]) : 0;
        if (med[i] > 0 && (ib < 0 || med[i] < best)) best = med[i], ib = i;
    }
    double lgm = median(lg, nlg);
    printf("%-70s %9s %17s %8s %12s\n", "configuration", "ms/step", "range", "vs best",
           "leakgate is");
    for (int i = 0; i < n; i++) {
        if (cfg[i].skip[0] || !got[i]) {
            printf("%-70s %9s  (%s)\n", cfg[i].name, "-", cfg[i].skip[0] ? cfg[i].skip : "failed");
            continue;
        }
        double lo = ms[i][0], hi = ms[i][0];
        for (int k = 1; k < got[i]; k++) lo = LG_MIN(lo, ms[i][k]), hi = LG_MAX(hi, ms[i][k]);
        printf("%-70s %9.1f %8.1f-%-8.1f %7.2fx %8.2fx as fast\n", cfg[i].name, med[i], lo, hi,
               med[i] / best, lgm > 0 ? med[i] / lgm : 0);
    }
    double lo = lg[0], hi = lg[0];
    for (int k = 1; k < nlg; k++) lo = LG_MIN(lo, lg[k]), hi = LG_MAX(hi, lg[k]);
    char lgname[96];
    snprintf(lgname, sizeof lgname, "leakgate (OpenBLAS %s kernels, %s%s)", kn_blas_info()->core,
             kn_blas_info()->path, kn_cpu_gemm_own() ? " + the own AVX-512 GEMM" : "");
    printf("%-70s %9.1f %8.1f-%-8.1f", lgname, lgm, lo, hi);
    double wmed = nlg && lg_wait[0] >= 0 ? median(lg_wait, nlg) : -1;
    if (wmed >= 0) printf("  (waited %.1f ms a step for a CPU)", wmed);
    printf("\n");
    if (fallback) btf_print(&fb, ib >= 0 ? best : 0, ib >= 0 ? cfg[ib].name : "");
    if (wmed >= 0) /* the same code in or out of this process: a time apart is the load's */
        printf("  leakgate's rows give the median ms a step their threads waited for a CPU "
               "(bench_sched.h): a row that waited is slowed by other processes' load, not by "
               "where it ran\n");
    /* the fastest round of each: what noise from other work (which only slows a run down) left
     * least disturbed */
    double fast = 0;
    int jf = -1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < got[i]; k++)
            if (jf < 0 || ms[i][k] < fast) fast = ms[i][k], jf = i;
    if (ib >= 0 && lgm > 0) {
        printf("  leakgate / best PyTorch (%s) samples/s: %.2fx (leakgate %.1f ms/step, PyTorch "
               "%.1f ms/step, medians of %d rounds)\n",
               cfg[ib].name, best / lgm, lgm, best, rounds);
        printf("  fastest rounds: leakgate %.1f ms/step, PyTorch %.1f ms/step (%s): %.2fx\n", lo,
               fast, cfg[jf].name, fast / lo);
        if (floor_ms > 0) /* a trainer whose every flop ran at the best GEMM rate, nothing else */
            printf(
                "  the most possible here with these GEMMs: best PyTorch %.1f ms / the GEMM-bound "
                "floor %.1f ms = %.2fx\n",
                best, floor_ms, best / floor_ms);
        if (peak_ms > 0) /* the same at the FMA peak: the ceiling of any GEMM, OpenBLAS's or ours */
            printf("  and at the FMA peak: best PyTorch %.1f ms / that floor %.1f ms = %.2fx\n",
                   best, peak_ms, best / peak_ms);
    } else
        printf("  no PyTorch configuration ran (see the reasons above)\n");
}

int main(int argc, char **argv)
{
    const char *preset = "electricity", *venv = NULL, *logpath = NULL;
    int steps = 10, batch = 0, rounds = 3, profile_rows = 16, pairs = 0;
    bool torch = false, stacks = false, gemm_profile = false, no_floor = false, allocs = false,
         fallback = false;
    const struct ba_option opts[] = {
        {"--preset", BA_STR, &preset},
        {"--steps", BA_INT, &steps},
        {"--batch", BA_INT, &batch},
        {"--rounds", BA_INT, &rounds},
        {"--torch-venv", BA_STR, &venv},
        {"--log", BA_STR, &logpath},
        {"--torch", BA_FLAG, &torch},
        {"--fallback", BA_FLAG, &fallback},
        {"--stacks", BA_FLAG, &stacks},
        {"--no-floor", BA_FLAG, &no_floor},
        {"--gemm-profile", BA_FLAG, &gemm_profile},
        {"--profile-rows", BA_INT, &profile_rows},
        {"--allocs", BA_FLAG, &allocs},
        {"--pairs", BA_INT, &pairs},
    };
    if (!ba_parse(argc, argv, opts, LG_ARRAY_LEN(opts))) {
        fprintf(stderr,
                "usage: bench_train [--preset P] [--steps K] [--batch B] [--stacks] [--no-floor] "
                "[--gemm-profile [--profile-rows N]] [--allocs] [--pairs N] [--torch [--rounds R] "
                "[--torch-venv DIR] [--fallback] [--log FILE]]\n");
        return 2;
    }
    if (fallback && !torch) {
        fprintf(stderr, "bench_train: --fallback is a part of --torch's rounds\n");
        return 2;
    }
    if (no_floor && torch) {
        fprintf(stderr, "bench_train: --torch compares against the floor; drop --no-floor\n");
        return 2;
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || steps < 1 || profile_rows < 1 || pairs < 0 ||
        pairs > MAX_ROUNDS) {
        fprintf(stderr,
                "bench_train: --steps and --profile-rows at least 1, --rounds 1 to %d, --pairs 0 "
                "to %d\n",
                MAX_ROUNDS, MAX_ROUNDS);
        return 2;
    }
    if (!venv)
        venv = getenv("LG_TORCH_VENV") ? getenv("LG_TORCH_VENV") : LG_BUILD_DIR "/torch-venv";
    struct trk_tracker *trk = NULL;
    struct tft_config cfg;
    struct data_set *ds = NULL;
    struct tft_model *m = NULL;
    struct tr_trainer *tr = NULL;
    double build_s = 0; /* the model's build: its VarMap allocated and seeded */
    if (trk_tracker_new(&trk, &(struct trk_options){.stacks = stacks}) ||
        tft_config_preset(&cfg, preset) ||
        data_synth_new(&ds, trk, &cfg, &(struct data_synth_options){.seed = 1}) ||
        (build_s = lg_now(), tft_new(&m, trk, &cfg, 1))) {
        fprintf(stderr, "bench_train: %s\n", lg_errmsg());
        return 4;
    }
    build_s = lg_now() - build_s;
    if (batch) cfg.batch = batch;
    struct tr_options o = {.steps = 2, .batch = cfg.batch, .seed = 1};
    struct tr_train_stats st;
    if (session(m, ds, &o, &st, NULL, NULL)) { /* warm-up */
        fprintf(stderr, "bench_train: %s\n", lg_errmsg());
        return 4;
    }
    trk_reset_peaks(trk);
    struct trk_totals before;
    trk_totals(trk, TRK_HOST, &before);
    o.steps = steps;
    struct trk_tag_stat *tags_before = NULL; /* --allocs: each tag's count before the session */
    size_t n_tags_before = allocs ? trk_tag_stats(trk, &tags_before) : 0;
    double f0 = kn_cpu_gemm_flops();
    if (gemm_profile) kn_cpu_gemm_profile(true);
    double wait_ms = -1; /* the ms a step the session's threads waited for a CPU */
    if (session(m, ds, &o, &st, &tr, &wait_ms)) {
        fprintf(stderr, "bench_train: %s\n", lg_errmsg());
        return 4;
    }
    kn_cpu_gemm_profile(false);
    double step_flops = (kn_cpu_gemm_flops() - f0) / st.steps;
    struct trk_totals peak;
    trk_totals(trk, TRK_HOST, &peak);
    int64_t params = (int64_t)vm_bytes(tft_varmap_borrow(m));
    int64_t acts = class_peak(trk, "act/"), agrads = class_peak(trk, "act.grad/");
    int64_t floor = 4 * params + acts;
    int64_t session_peak = peak.peak_bytes - (before.live_bytes - params); /* model + session */
    double sps = st.steps / st.seconds;
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    printf("preset %s, batch %d, T_enc %d, T_dec %d, H %d: %d steps in %.3f s\n", preset, o.batch,
           cfg.T_enc, cfg.T_dec, cfg.hidden, st.steps, st.seconds);
    const struct kn_blas_info *bi = kn_blas_info();
    printf("  GEMM kernels: %s %s (path %s; CPU %s; OpenBLAS loaded %s)%s%s%s\n", bi->blas,
           bi->core, bi->path, bi->cpu, bi->loaded,
           kn_cpu_gemm_own() ? " + the own AVX-512 GEMM" : "", bi->note[0] ? "; " : "", bi->note);
    if (bi->warning[0]) printf("  warning: %s\n", bi->warning);
    printf("  model built in %.3f s (VarMap %s, seeded init)\n", build_s,
           lg_fmt_bytes(b1, sizeof b1, (double)vm_bytes(tft_varmap_borrow(m))));
    printf("  %.4f s/step, %.2f steps/s, %.1f samples/s (loss %.4f -> %.4f)", st.seconds / st.steps,
           sps, sps * o.batch, st.first_loss, st.last_loss);
    if (wait_ms >= 0) /* other processes' load: a quiet machine gives ~0 */
        printf("; its threads waited %.1f ms a step for a CPU", wait_ms);
    printf("\n");
    if (floor == 4 * params) /* a build with tracking compiled out sees no tags */
        printf("  peak tagged memory: n/a (tracking compiled out)\n");
    else
        printf("  peak tagged %s vs floor %s (4 x params %s + activations %s): ratio %.3f "
               "(backward's largest intermediate-gradient tags %s)\n",
               lg_fmt_bytes(b1, sizeof b1, (double)session_peak),
               lg_fmt_bytes(b2, sizeof b2, (double)floor),
               lg_fmt_bytes(b3, sizeof b3, 4.0 * params), lg_fmt_bytes(b4, sizeof b4, (double)acts),
               (double)session_peak / (double)floor, lg_fmt_bytes(b5, sizeof b5, (double)agrads));
    if (allocs) print_allocs(trk, tags_before, n_tags_before, st.steps, profile_rows);
    free(tags_before);
    tr_free(tr);
    char best_name[48] = "", rates[256] = "";
    double step_rate = 0, step_s = st.seconds / st.steps;
    double rate = no_floor ? 0
                           : best_gemm_rate(trk, best_name, sizeof best_name, rates, sizeof rates,
                                            &step_rate);
    double gemm_s = 0, gemm_f = 0;
    struct kn_gemm_shape rows[KN_GEMM_PROFILE_MAX + 1];
    int nrows = kn_cpu_gemm_profile_rows(rows, LG_ARRAY_LEN(rows));
    for (int i = 0; i < nrows; i++) gemm_s += rows[i].seconds, gemm_f += rows[i].flops;
    gemm_s /= st.steps;
    if (rate > 0) {
        printf("  GEMM rates of the candidates on %d thread(s), GFLOP/s (best of a 2048³ product "
               "and the GLU's shape): %s\n",
               kn_threads(), rates);
        printf(
            "  GEMM-bound floor: %.2f GFLOP of GEMMs a step at %.0f GFLOP/s (the best GEMM "
            "rate of this run over every candidate: %s; the step's %s kernels %.0f) = %.1f ms; the "
            "step is %.2fx its floor (%.0f%% of the time at the best rate)\n",
            step_flops / 1e9, rate / 1e9, best_name, kn_blas_info()->core, step_rate / 1e9,
            1e3 * step_flops / rate, step_s / (step_flops / rate),
            100.0 * (step_flops / rate) / step_s);
    }
    double fma = no_floor ? 0 : bench_fma_peak() * 1e9 * kn_threads(); /* 0: not measured */
    if (fma > 0)
        printf(
            "  at the FMA peak instead (%.0f GFLOP/s: one core's register-only %s multiply-adds, "
            "bench_peak.h, x %d): a floor of %.1f ms; the step is %.2fx it\n",
            fma / 1e9, bench_fma_width(), kn_threads(), 1e3 * step_flops / fma,
            step_s / (step_flops / fma));
    if (gemm_s > 0) {
        double avg = gemm_f / st.steps / gemm_s;
        printf(
            "  GEMMs timed call by call: %.4g ms of the %.4g ms step (%.0f%%) at %.0f GFLOP/s on "
            "average",
            1e3 * gemm_s, 1e3 * step_s, 100.0 * gemm_s / step_s, avg / 1e9);
        if (rate > 0) printf(" (%.0f%% of the best rate)", 100.0 * avg / rate);
        printf("; everything else %.4g ms\n", 1e3 * (step_s - gemm_s));
    }
    if (gemm_profile) print_gemm_profile(st.steps, step_s, profile_rows);
    if (pairs) pairs_run(m, ds, &o, preset, pairs);
    if (torch) {
        FILE *log = logpath ? fopen(logpath, "w") : NULL;
        torch_rounds(m, ds, &o, preset, rounds, venv, fallback,
                     rate > 0 ? 1e3 * step_flops / rate : 0, fma > 0 ? 1e3 * step_flops / fma : 0,
                     log);
        if (log) fclose(log);
    }
    tft_free(m);
    data_free(ds);
    trk_tracker_free(trk);
    return 0;
}
