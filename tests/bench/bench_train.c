/* bench_train — training speed and memory of one session on a preset.
 *
 *   build/tests/bench/bench_train [--preset electricity] [--steps 10] [--batch 64] [--stacks]
 * [--torch]
 *
 * Prints steps/s and samples/s of full training steps (forward, pinball loss, backward,
 * global-norm clipping, AdamW) after 2 warm-up steps, and the session's peak tagged memory
 * against its floor: parameters + gradients + Adam's two moments + the largest step's
 * activations (the "act/" tags: everything a step's tape holds at the end of its forward
 * pass, when all of them are alive at once), as a ratio. The excess over the floor is what
 * backward adds on top (intermediate gradients, "act.grad/") and bookkeeping. With --torch it then
 * runs tests/bench/tft_torch.py (PyTorch eager, nn.LSTM) on the same preset and batch in the same
 * run and prints the speed ratio.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    const char *preset = "electricity";
    int steps = 10, batch = 0, torch = 0, stacks = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--preset") && i + 1 < argc)
            preset = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--torch"))
            torch = 1;
        else if (!strcmp(argv[i], "--stacks"))
            stacks = 1;
        else {
            fprintf(
                stderr,
                "usage: bench_train [--preset P] [--steps K] [--batch B] [--stacks] [--torch]\n");
            return 2;
        }
    }
    struct trk_tracker *trk = NULL;
    struct tft_config cfg;
    struct data_set *ds = NULL;
    struct tft_model *m = NULL;
    struct tr_trainer *tr = NULL;
    if (trk_tracker_new(&trk, &(struct trk_options){.stacks = stacks}) ||
        tft_config_preset(&cfg, preset) ||
        data_synth_new(&ds, trk, &cfg, &(struct data_synth_options){.seed = 1}) ||
        tft_new(&m, trk, &cfg, 1)) {
        fprintf(stderr, "bench_train: %s\n", lg_errmsg());
        return 4;
    }
    if (batch) cfg.batch = batch;
    struct tr_options o = {.steps = 2, .batch = cfg.batch, .seed = 1};
    struct tr_train_stats st;
    if (tr_new(&tr, m, ds, &o) || tr_initialize_optimizer(tr) || tr_train(tr, &st)) { /* warm-up */
        fprintf(stderr, "bench_train: %s\n", lg_errmsg());
        return 4;
    }
    tr_free(tr);
    trk_reset_peaks(trk);
    struct trk_totals before;
    trk_totals(trk, TRK_HOST, &before);
    o.steps = steps;
    if (tr_new(&tr, m, ds, &o) || tr_initialize_optimizer(tr) || tr_train(tr, &st)) {
        fprintf(stderr, "bench_train: %s\n", lg_errmsg());
        return 4;
    }
    struct trk_totals peak;
    trk_totals(trk, TRK_HOST, &peak);
    int64_t params = (int64_t)vm_bytes(tft_varmap_borrow(m));
    int64_t acts = class_peak(trk, "act/"), agrads = class_peak(trk, "act.grad/");
    int64_t floor = 4 * params + acts;
    int64_t session_peak = peak.peak_bytes - (before.live_bytes - params); /* model + session */
    double sps = st.steps / st.seconds;
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    printf("preset %s, batch %d, T_enc %d, T_dec %d, H %d: %d steps in %.2f s\n", preset, o.batch,
           cfg.T_enc, cfg.T_dec, cfg.hidden, st.steps, st.seconds);
    printf("  %.3f s/step, %.2f steps/s, %.1f samples/s (loss %.4f -> %.4f)\n",
           st.seconds / st.steps, sps, sps * o.batch, st.first_loss, st.last_loss);
    if (floor == 4 * params) /* a build with tracking compiled out sees no tags */
        printf("  peak tagged memory: n/a (tracking compiled out)\n");
    else
        printf("  peak tagged %s vs floor %s (4 x params %s + activations %s): ratio %.3f "
               "(backward's largest intermediate-gradient tags %s)\n",
               lg_fmt_bytes(b1, sizeof b1, (double)session_peak),
               lg_fmt_bytes(b2, sizeof b2, (double)floor),
               lg_fmt_bytes(b3, sizeof b3, 4.0 * params), lg_fmt_bytes(b4, sizeof b4, (double)acts),
               (double)session_peak / (double)floor, lg_fmt_bytes(b5, sizeof b5, (double)agrads));
    tr_free(tr);
    tft_free(m);
    data_free(ds);
    trk_tracker_free(trk);
    if (torch) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "/usr/bin/python3 '%s/tft_torch.py' --preset %s --steps %d --threads 2 2>&1",
                 LG_BENCH_DIR, preset, steps);
        FILE *p = popen(cmd, "r");
        char line[512];
        double ms = 0;
        while (p && fgets(line, sizeof line, p)) {
            fputs(line, stdout);
            char *at = strstr(line, "median ");
            if (at) ms = atof(at + 7);
        }
        if (p) pclose(p);
        if (ms > 0)
            printf(
                "  leakgate / PyTorch samples/s: %.2fx (leakgate %.1f ms/step, PyTorch %.1f ms/step)\n",
                ms / (1e3 * st.seconds / st.steps), 1e3 * st.seconds / st.steps, ms);
        else
            printf("  PyTorch run failed (needs python3-torch: apt-get install python3-torch)\n");
    }
    return 0;
}
