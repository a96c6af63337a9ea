/* test_gpu_device.c — device memory through the tracker: tagged allocations and frees, a
 * device buffer that outlives its session named by its tag, device tensors (new, zeros, copy,
 * move both ways), the driver's views (NVML's per-process figure and the whole GPU's) back at
 * baseline after a quiesce, a light snapshot that leaves the driver alone, a kernel's fault
 * returned by the quiesce that follows it, eager module loading, the cuBLAS workspace in the
 * ledger, and (when libcupti loads) the CUPTI capture naming an untagged allocation. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test.h"

TestSuite(gpu_device, .init = lg_test_setup, .fini = lg_gpu_teardown, .timeout = 120);

Test(gpu_device, tagged_alloc_and_free)
{
    lg_gpu_begin();
    struct trk_totals before, mid, after;
    trk_totals(T, TRK_DEVICE, &before);
    void *p = trk_dev_alloc(T, 3 << 20, "act/probe");
    cr_assert_not_null(p, "%s", lg_errmsg());
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, p, tag, sizeof tag));
    cr_assert_str_eq(tag, "act/probe");
    cr_assert_eq(trk_size_of(T, p), (size_t)3 << 20);
    trk_totals(T, TRK_DEVICE, &mid);
    cr_assert_eq(mid.live_bytes - before.live_bytes, 3 << 20);
    trk_dev_free(T, p);
    trk_totals(T, TRK_DEVICE, &after);
    cr_assert_eq(after.live_bytes, before.live_bytes);
    cr_assert_eq(trk_error_count(T), 0);
}

Test(gpu_device, cublas_workspace_is_tagged_outside_any_session)
{
    lg_gpu_begin();
    struct trk_tag_stat *st = NULL;
    size_t n = trk_tag_stats(T, &st);
    int64_t ws = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(st[i].tag, "cuda/cublas.workspace") && st[i].space == TRK_DEVICE)
            ws = st[i].live_bytes;
    free(st);
    cr_expect_gt(ws, 0, "kn_cuda_init gave cuBLAS a tagged workspace");
}

Test(gpu_device, a_device_buffer_outliving_its_session_is_named)
{
    lg_gpu_begin();
    trk_session_begin(T);
    void *kept = trk_dev_alloc(T, 4 << 20, "act/device.scratch");
    void *freed = trk_dev_alloc(T, 1 << 20, "act/tmp");
    cr_assert(kept && freed, "%s", lg_errmsg());
    trk_dev_free(T, freed);
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_EBUSY);
    cr_expect_eq(lk->device_bytes, 4 << 20);
    cr_expect_eq(lk->host_bytes, 0);
    cr_assert_geq(lk->n_groups, 1);
    cr_expect_str_eq(lk->groups[0].tag, "act/device.scratch");
    cr_expect_str_eq(lk->groups[0].space, "device");
    trk_leaks_free(lk);
    trk_dev_free(T, kept);
}

Test(gpu_device, device_tensors_copy_zero_and_move)
{
    lg_gpu_begin();
    int64_t shape[2] = {37, 53};
    struct tn_tensor *h = tn_new_f32(T, "data/h", 2, shape);
    cr_assert_not_null(h);
    lg_gpu_fill(tn_f32(h), tn_numel(h), 1, -2, 2);
    struct tn_tensor *d = tn_to_device(h, TN_CUDA);
    cr_assert_not_null(d, "%s", lg_errmsg());
    cr_expect_eq(d->device, TN_CUDA);
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, d->st->data, tag, sizeof tag));
    cr_expect_str_eq(tag, "data/h", "device storage is tagged with the tensor's name");
    struct tn_tensor *back = tn_to_device(d, TN_CPU);
    cr_assert_not_null(back, "%s", lg_errmsg());
    cr_expect_arr_eq(tn_f32(back), tn_f32(h), tn_nbytes(h));

    struct tn_tensor *z = tn_zeros(T, TN_F32, TN_CUDA, 2, shape, "act/z");
    cr_assert_not_null(z, "%s", lg_errmsg());
    cr_assert_eq(tn_copy(back, z), LG_OK, "%s", lg_errmsg());
    for (int64_t i = 0; i < tn_numel(back); i++) cr_assert_eq(tn_f32(back)[i], 0.0f);

    /* in place: the struct stays, its memory moves and is tagged again */
    struct tn_tensor *m = tn_clone(h, "varmap/w");
    cr_assert_not_null(m);
    cr_assert_eq(tn_move(m, TN_CUDA), LG_OK, "%s", lg_errmsg());
    cr_expect_eq(m->device, TN_CUDA);
    cr_assert(trk_tag_of(T, m->st->data, tag, sizeof tag));
    cr_expect_str_eq(tag, "varmap/w");
    cr_assert_eq(tn_move(m, TN_CPU), LG_OK, "%s", lg_errmsg());
    cr_expect_arr_eq(tn_f32(m), tn_f32(h), tn_nbytes(h));

    /* a view shares the storage: moving it is refused, nothing changes */
    struct tn_tensor *v = tn_reshape(m, 1, (int64_t[]){37 * 53}, NULL);
    cr_expect_eq(tn_move(m, TN_CUDA), LG_EINVAL);
    cr_expect_eq(m->device, TN_CPU);
    tn_release(v);
    tn_release(m);
    tn_release(z);
    tn_release(back);
    tn_release(d);
    tn_release(h);
}

Test(gpu_device, driver_view_returns_to_baseline_after_quiesce)
{
    lg_gpu_begin();
    struct trk_snapshot s0, s1, s2;
    cr_assert_eq(trk_quiesce(T), LG_OK, "%s", lg_errmsg());
    trk_snapshot(T, &s0);
    cr_assert_gt(s0.dev_total, 0, "cudaMemGetInfo answers");
    cr_assert_geq(s0.dev_used, 0);
    void *p = trk_dev_alloc(T, 64 << 20, "act/big");
    cr_assert_not_null(p, "%s", lg_errmsg());
    cr_assert_eq(tn_device_memset(p, 1, 64 << 20), LG_OK); /* touch it */
    cr_assert_eq(trk_quiesce(T), LG_OK, "%s", lg_errmsg());
    trk_snapshot(T, &s1);
    cr_expect_geq(s1.dev_used - s0.dev_used, 60 << 20, "the driver sees 64 MiB more (%lld)",
                  (long long)(s1.dev_used - s0.dev_used));
    cr_expect_eq(s1.tagged_device - s0.tagged_device, 64 << 20);
    trk_dev_free(T, p);
    cr_assert_eq(trk_quiesce(T), LG_OK, "%s", lg_errmsg()); /* synchronise and trim the pool */
    trk_snapshot(T, &s2);
    cr_expect_leq(s2.dev_used - s0.dev_used, 2 << 20, "back to baseline within 2 MiB (%lld)",
                  (long long)(s2.dev_used - s0.dev_used));
    /* NVML's per-process figure: this process alone, or -1 where NVML cannot see it */
    char src[256];
    bool nvml = trk_cuda_process_source(src, sizeof src);
    fprintf(stderr, "driver used %lld → %lld → %lld; NVML process %lld → %lld → %lld (%s)\n",
            (long long)s0.dev_used, (long long)s1.dev_used, (long long)s2.dev_used,
            (long long)s0.dev_process, (long long)s1.dev_process, (long long)s2.dev_process, src);
    if (nvml) {
        cr_expect_gt(s0.dev_process, 0, "%s", src);
        cr_expect_geq(s1.dev_process - s0.dev_process, 60 << 20,
                      "NVML sees this process's 64 MiB (%lld)",
                      (long long)(s1.dev_process - s0.dev_process));
        cr_expect_leq(s2.dev_process - s0.dev_process, 2 << 20,
                      "NVML's figure back to baseline within 2 MiB (%lld)",
                      (long long)(s2.dev_process - s0.dev_process));
    } else {
        cr_expect_eq(s2.dev_process, -1, "no figure without a source: %s", src);
        cr_expect(strstr(src, "unavailable: ") == src, "%s", src);
    }
}

Test(gpu_device, light_snapshot_reads_the_ledger_and_leaves_the_driver_alone)
{
    lg_gpu_begin();
    void *p = trk_dev_alloc(T, 8 << 20, "act/light");
    cr_assert_not_null(p, "%s", lg_errmsg());
    struct trk_snapshot s;
    trk_snapshot_light(T, &s);
    cr_expect_geq(s.tagged_device, 8 << 20);
    cr_expect(s.dev_used == -1 && s.dev_total == -1 && s.dev_process == -1,
              "no driver query: %lld %lld %lld", (long long)s.dev_used, (long long)s.dev_total,
              (long long)s.dev_process);
    trk_snapshot(T, &s);
    cr_expect_gt(s.dev_total, 0, "the full snapshot does query the driver");
    trk_dev_free(T, p);
}

Test(gpu_device, modules_load_eagerly_unless_the_environment_says)
{
    lg_gpu_begin();
    const char *mode = trk_cuda_module_loading(), *env = getenv("CUDA_MODULE_LOADING");
    fprintf(stderr, "module loading: %s (CUDA_MODULE_LOADING=%s)\n", mode, env ? env : "unset");
    cr_expect(env != NULL, "the backend set CUDA_MODULE_LOADING before the first CUDA call");
    if (env && !strcmp(env, "EAGER")) cr_expect(strstr(mode, "eager") == mode, "%s", mode);
    if (env && !strcmp(env, "LAZY")) cr_expect(strstr(mode, "lazy") == mode, "%s", mode);
}

/* A kernel reading far outside its buffer (an embedding index past any mapping) faults
 * asynchronously: the quiesce after it returns the fault, and says the context is lost; the
 * next quiesce says the device has been unusable since that fault. Each test runs in its own
 * process, so the lost context ends with this one. */
Test(gpu_device, a_kernel_fault_is_returned_by_the_next_quiesce)
{
    lg_gpu_begin();
    cr_assert_eq(trk_quiesce(T), LG_OK, "%s", lg_errmsg());
    int64_t h = 64, n_idx = 256;
    float *w = lg_gpu_zeros((size_t)(4 * h) * sizeof(float), "act/w");
    float *y = lg_gpu_zeros((size_t)(n_idx * h) * sizeof(float), "act/y");
    int32_t bad[256];
    for (int i = 0; i < 256; i++) bad[i] = 1 << 30; /* 1 Gi rows of 64 floats: 256 GiB past w */
    int32_t *idx = lg_gpu_upload(bad, sizeof bad, "act/idx");
    kn_cuda.embedding(y, w, idx, n_idx, h);
    int rc = trk_quiesce(T);
    fprintf(stderr, "quiesce after the faulting kernel: %s: %s\n", lg_status_name(rc), lg_errmsg());
    cr_expect_eq(rc, LG_ECUDA, "the fault is returned to the work that raised it");
    cr_expect(strstr(lg_errmsg(), "device fault found by the quiesce") != NULL, "%s", lg_errmsg());
    cr_expect(strstr(lg_errmsg(), "context is lost") != NULL, "%s", lg_errmsg());
    cr_expect_eq(trk_quiesce(T), LG_ECUDA);
    cr_expect(strstr(lg_errmsg(), "unusable since an earlier fault") != NULL, "%s", lg_errmsg());
    lg_gpu_free(idx);
    lg_gpu_free(y);
    lg_gpu_free(w);
    lg_clear_error();
}

Test(gpu_device, device_name)
{
    lg_gpu_begin();
    char name[128];
    cr_assert_eq(trk_cuda_device_name(name, sizeof name), LG_OK, "%s", lg_errmsg());
    cr_expect(strstr(name, "sm_") != NULL, "%s", name);
    fprintf(stderr, "device: %s\n", name);
}

Test(gpu_device, cupti_names_an_untagged_allocation)
{
    lg_gpu_begin();
    kn_cuda_fini(); /* restart with capture on, so the handle's own allocations are seen too */
    trk_cuda_detach(T);
    struct trk_cuda_options o;
    trk_cuda_options_from_env(&o);
    o.capture = true;
    if (trk_cuda_attach_opts(T, &o) != LG_OK) {
        fprintf(stderr, "CUPTI unavailable, capture not tested: %s\n", lg_errmsg());
        cr_skip_test("CUPTI unavailable: %s", lg_errmsg());
    }
    cr_assert_eq(kn_cuda_init(T, NULL), LG_OK, "%s", lg_errmsg());
    void *tagged = trk_dev_alloc(T, 2 << 20, "act/tagged");
    void *raw = NULL;
    cr_assert_eq(cudaMalloc(&raw, 3 << 20), cudaSuccess); /* what a library would do */
    struct trk_cuda_untagged u;
    cr_assert_eq(trk_cuda_untagged(T, &u), LG_OK, "%s", lg_errmsg());
    cr_assert(u.active);
    if (u.seen_count == 0) { /* loaded, but no records at all: the environment, not our code */
        fprintf(stderr, "CUPTI delivered no memory records here; capture not tested\n");
        trk_cuda_untagged_fini(&u);
        cudaFree(raw);
        trk_dev_free(T, tagged);
        cr_skip_test("CUPTI delivered no memory records");
    }
    bool found = false;
    for (size_t i = 0; i < u.n; i++) {
        cr_expect_neq(u.v[i].address, (uint64_t)(uintptr_t)tagged,
                      "a tagged allocation is not listed");
        if (u.v[i].address == (uint64_t)(uintptr_t)raw) found = u.v[i].bytes == (3u << 20);
    }
    cr_expect(found, "the raw cudaMalloc is listed with its size");
    cr_expect_geq(u.live_bytes, 3 << 20);
    cr_expect_geq(u.tagged_bytes, 2 << 20);
    trk_cuda_untagged_print(&u, stderr);
    trk_cuda_untagged_fini(&u);
    cudaFree(raw);
    u = (struct trk_cuda_untagged){0};
    cr_assert_eq(trk_cuda_untagged(T, &u), LG_OK);
    for (size_t i = 0; i < u.n; i++)
        cr_expect_neq(u.v[i].address, (uint64_t)(uintptr_t)raw,
                      "a released allocation leaves the list");
    trk_cuda_untagged_fini(&u);
    trk_dev_free(T, tagged);
}

Test(gpu_device, without_a_backend_device_tensors_are_refused)
{
    lg_gpu_begin();
    struct trk_tracker *bare = NULL;
    cr_assert_eq(trk_tracker_new(&bare, NULL), LG_OK);
    struct tn_tensor *t = tn_new(bare, TN_F32, TN_CUDA, 1, (int64_t[]){4}, "act/x");
    cr_expect_null(t);
    cr_expect_eq(lg_errcode(), LG_EUNAVAIL);
    cr_expect(strstr(lg_errmsg(), "no CUDA backend") != NULL, "%s", lg_errmsg());
    cr_expect_eq(trk_tracker_free(bare), 0);
}
