/* bench_gpu — training speed on the device, and the VarMap's build and free time there.
 *
 *   build/tests/bench/bench_gpu [--presets tiny,electricity,foxhunt-815] [--steps 10]
 *                               [--varmap foxhunt-815] [--repeat 3] [--tf32]
 *
 * For each preset: a device session (the model built on the host, moved by tr_new), 2 warm-up
 * steps, then --steps timed full training steps (batch to the device, forward, pinball loss,
 * backward, clipping, AdamW, the loss read back): ms/step and steps/s, beside PyTorch eager's
 * figure on an H200 that leakgate should beat. Then the VarMap of --varmap built (host init and
 * upload) and freed --repeat times: seconds for each, and after each free and quiesce this
 * process's device bytes (NVML) and the whole GPU's used bytes (cudaMemGetInfo) against the
 * baseline. Every figure is also printed as one "RESULT" line for ci/gpu-check's summary
 * (process_delta=-1 where NVML cannot see the process). Exit 0, or 4 when the device or a
 * session fails (message on stderr).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "kn_cuda.h"
#include "trainer.h"
#include "trk_cuda.h"

/* PyTorch eager ms/step on an H200: the speed target (the figures). */
static double torch_ms(const char *preset)
{
    if (!strcmp(preset, "electricity")) return 25;
    if (!strcmp(preset, "foxhunt-815")) return 56;
    if (!strcmp(preset, "tiny")) return 28;
    return 0;
}

static int train_bench(struct trk_tracker *trk, const char *preset, int steps)
{
    struct tft_config cfg;
    struct data_set *ds = NULL;
    struct tft_model *m = NULL;
    struct tr_trainer *tr = NULL;
    struct tr_train_stats st = {0};
    int rc = tft_config_preset(&cfg, preset);
    if (!rc) rc = data_synth_new(&ds, trk, &cfg, &(struct data_synth_options){.seed = 1});
    if (!rc) rc = tft_new(&m, trk, &cfg, 1);
    struct tr_options o = {.steps = 2, .seed = 1, .device = TN_CUDA};
    if (!rc) rc = tr_new(&tr, m, ds, &o);
    if (!rc) rc = tr_initialize_optimizer(tr);
    if (!rc) rc = tr_train(tr, &st); /* warm-up: lazy module loading, first allocations */
    if (!rc) {
        tr_free(tr); /* a fresh optimizer for the timed steps, as a session has */
        tr = NULL;
        o.steps = steps;
        rc = tr_new(&tr, m, ds, &o);
    }
    if (!rc) rc = tr_initialize_optimizer(tr);
    if (!rc) rc = tr_train(tr, &st);
    if (!rc) rc = kn_cuda_sync();
    if (rc == LG_OK) {
        double ms = 1e3 * st.seconds / st.steps, target = torch_ms(preset);
        printf("%s: batch %d, %d steps in %.3f s: %.2f ms/step, %.2f steps/s (loss %.4f -> %.4f)",
               preset, cfg.batch, st.steps, st.seconds, ms, 1e3 / ms, st.first_loss, st.last_loss);
        if (target > 0)
            printf("; PyTorch eager target %.0f ms/step: %s", target,
                   ms < target ? "beaten" : "NOT beaten");
        printf("\nRESULT train preset=%s ms_per_step=%.3f steps_per_s=%.3f target_ms=%.0f\n",
               preset, ms, 1e3 / ms, target);
    }
    tr_free(tr);
    if (m) tft_free(m);
    data_free(ds);
    return rc;
}

static int varmap_bench(struct trk_tracker *trk, const char *preset, int repeat)
{
    struct tft_config cfg;
    int rc = tft_config_preset(&cfg, preset);
    if (rc) return rc;
    struct trk_snapshot s0;
    if (trk_quiesce(trk) != LG_OK) return lg_errcode();
    trk_snapshot(trk, &s0);
    for (int r = 0; r < repeat && rc == LG_OK; r++) {
        struct tft_model *m = NULL;
        double t0 = lg_now();
        rc = tft_new(&m, trk, &cfg, 1 + (uint64_t)r);
        double t1 = lg_now();
        if (!rc) rc = tft_to_device(m, TN_CUDA);
        if (!rc) rc = kn_cuda_sync();
        double t2 = lg_now();
        size_t bytes = m ? vm_bytes(tft_varmap_borrow(m)) : 0;
        if (m) tft_free(m);
        /* the frees complete and the pool goes back to the driver */
        int q = trk_quiesce(trk);
        double t3 = lg_now();
        if (!rc) rc = q;
        if (rc) break;
        struct trk_snapshot s;
        trk_snapshot(trk, &s);
        int64_t proc =
            s.dev_process >= 0 && s0.dev_process >= 0 ? s.dev_process - s0.dev_process : -1;
        char b1[32], b2[32], b3[32];
        printf("VarMap %s (%s): build %.3f s (host init %.3f s + upload %.3f s), free %.3f s; "
               "device tagged %+lld B, this process %s, whole GPU %s vs baseline\n",
               preset, lg_fmt_bytes(b1, sizeof b1, (double)bytes), t2 - t0, t1 - t0, t2 - t1,
               t3 - t2, (long long)(s.tagged_device - s0.tagged_device),
               proc >= 0 ? lg_fmt_bytes(b3, sizeof b3, (double)proc) : "unknown (no NVML)",
               lg_fmt_bytes(b2, sizeof b2, (double)(s.dev_used - s0.dev_used)));
        printf("RESULT varmap preset=%s bytes=%zu build_s=%.4f upload_s=%.4f free_s=%.4f "
               "process_delta=%lld driver_delta=%lld\n",
               preset, bytes, t2 - t0, t2 - t1, t3 - t2, (long long)proc,
               (long long)(s.dev_used - s0.dev_used));
    }
    return rc;
}

int main(int argc, char **argv)
{
    const char *presets = "tiny,electricity,foxhunt-815", *vm_preset = "foxhunt-815";
    int steps = 10, repeat = 3;
    bool tf32 = false;
    const struct ba_option opts[] = {
        {"--presets", BA_STR, &presets},  {"--steps", BA_INT, &steps},
        {"--varmap", BA_STR, &vm_preset}, {"--repeat", BA_INT, &repeat},
        {"--tf32", BA_FLAG, &tf32},
    };
    if (!ba_parse(argc, argv, opts, LG_ARRAY_LEN(opts))) {
        fprintf(stderr, "usage: bench_gpu [--presets P,Q] [--steps K] [--varmap P|none] "
                        "[--repeat N] [--tf32]\n");
        return 2;
    }
    struct trk_tracker *trk = NULL;
    int rc = trk_tracker_new(&trk, NULL);
    if (!rc) rc = trk_cuda_attach(trk);
    if (!rc) rc = kn_cuda_init(trk, &(struct kn_cuda_options){.tf32 = tf32});
    if (rc) {
        fprintf(stderr, "bench_gpu: %s\n", lg_errmsg());
        trk_tracker_free(trk);
        return 4;
    }
    char name[128], src[256];
    trk_cuda_device_name(name, sizeof name);
    trk_cuda_process_source(src, sizeof src);
    printf("device %s, GEMMs %s; modules: %s; this process's bytes: %s\n", name,
           tf32 ? "TF32" : "FP32", trk_cuda_module_loading(), src);
    char list[256];
    lg_strlcpy(list, presets, sizeof list);
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p && !rc;
         p = strtok_r(NULL, ",", &save))
        rc = train_bench(trk, p, steps > 0 ? steps : 10);
    if (!rc && strcmp(vm_preset, "none"))
        rc = varmap_bench(trk, vm_preset, repeat > 0 ? repeat : 3);
    if (rc) fprintf(stderr, "bench_gpu: %s\n", lg_errmsg());
    kn_cuda_fini();
    trk_cuda_detach(trk);
    size_t left = trk_tracker_free(trk);
    if (left) fprintf(stderr, "bench_gpu: %zu allocation(s) left live\n", left);
    return rc || left ? 4 : 0;
}
