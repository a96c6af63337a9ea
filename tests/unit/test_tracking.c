/* test_tracking.c — the instrumented allocator: accounting, sessions, stacks, the reference
 * ledger, snapshots, threads, invalid frees, and a device backend. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lg_test.h"

TestSuite(tracking, .init = lg_test_setup, .fini = lg_test_teardown);

static const struct trk_tag_stat *find_stat(const struct trk_tag_stat *v, size_t n, const char *tag)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].tag, tag) == 0) return &v[i];
    return NULL;
}

Test(tracking, exact_accounting_across_tags_and_sizes)
{
    enum { NT = 7, PER = 40 };
    static const size_t sizes[] = {1, 63, 64, 100, 4096, 65536, 1 << 20, 3 << 20};
    void *p[NT][PER];
    int64_t want[NT] = {0};
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < PER; i++) {
            size_t sz = sizes[(t + i) % LG_ARRAY_LEN(sizes)];
            p[t][i] = trk_allocf(T, sz, "varmap/layer%d.weight", t);
            cr_assert_not_null(p[t][i]);
            cr_assert_eq((uintptr_t)p[t][i] % 64, 0, "64-byte alignment");
            memset(p[t][i], 0xab, sz);
            want[t] += (int64_t)sz;
        }
    struct trk_tag_stat *st = NULL;
    size_t n = trk_tag_stats(T, &st);
    cr_assert_eq(n, NT);
    int64_t all = 0;
    for (int t = 0; t < NT; t++) {
        char tag[64];
        snprintf(tag, sizeof tag, "varmap/layer%d.weight", t);
        const struct trk_tag_stat *s = find_stat(st, n, tag);
        cr_assert_not_null(s, "%s listed", tag);
        cr_assert_eq(s->live_bytes, want[t]);
        cr_assert_eq(s->live_count, PER);
        cr_assert_eq(s->total_count, PER);
        cr_assert_eq(s->peak_bytes, want[t]);
        all += want[t];
    }
    free(st);
    struct trk_totals tot;
    trk_totals(T, TRK_HOST, &tot);
    cr_assert_eq(tot.live_bytes, all);
    cr_assert_eq(tot.live_count, NT * PER);
    cr_assert_eq(trk_size_of(T, p[2][3]), sizes[(2 + 3) % LG_ARRAY_LEN(sizes)]);
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, p[4][0], tag, sizeof tag));
    cr_assert_str_eq(tag, "varmap/layer4.weight");

    for (int t = 0; t < NT; t++)
        for (int i = 0; i < PER; i += 2) trk_free(T, p[t][i]); /* half */
    n = trk_tag_stats(T, &st);
    const struct trk_tag_stat *s0 = find_stat(st, n, "varmap/layer0.weight");
    int64_t half = 0;
    for (int i = 1; i < PER; i += 2) half += (int64_t)sizes[(0 + i) % LG_ARRAY_LEN(sizes)];
    cr_assert_eq(s0->live_bytes, half);
    cr_assert_eq(s0->peak_bytes, want[0], "peak survives frees");
    cr_assert_eq(s0->total_bytes, want[0]);
    free(st);
    for (int t = 0; t < NT; t++)
        for (int i = 1; i < PER; i += 2) trk_free(T, p[t][i]);
    trk_totals(T, TRK_HOST, &tot);
    cr_assert_eq(tot.live_bytes, 0);
    cr_assert_eq(tot.total_count, NT * PER);
}

Test(tracking, many_tags_in_two_trackers_stay_apart)
{
    /* 3000 tags round robin, twice over and from two trackers in turn: the tag index grows
     * several times while both are probed, and no tag is ever taken for another */
    enum { NT = 3000, ROUNDS = 2 };
    struct trk_tracker *u = NULL;
    cr_assert_eq(trk_tracker_new(&u, NULL), LG_OK);
    void **p = calloc(2 * NT * ROUNDS, sizeof *p);
    for (int r = 0; r < ROUNDS; r++)
        for (int t = 0; t < NT; t++) {
            p[(r * NT + t) * 2] = trk_allocf(T, (size_t)(t % 13 + 1), "act/op%d.linear", t);
            p[(r * NT + t) * 2 + 1] = trk_allocf(u, 64, "act/op%d.linear", NT - 1 - t);
        }
    struct trk_tag_stat *st = NULL;
    size_t n = trk_tag_stats(T, &st);
    cr_assert_eq(n, NT);
    for (int t = 0; t < NT; t++) {
        char tag[64];
        snprintf(tag, sizeof tag, "act/op%d.linear", t);
        const struct trk_tag_stat *s = find_stat(st, n, tag);
        cr_assert_not_null(s, "%s listed", tag);
        cr_assert_eq(s->live_count, ROUNDS, "%s: %lld allocations", tag, (long long)s->live_count);
        cr_assert_eq(s->live_bytes, ROUNDS * (t % 13 + 1));
    }
    free(st);
    for (int i = 0; i < 2 * NT * ROUNDS; i++) trk_free(i % 2 ? u : T, p[i]);
    free(p);
    cr_assert_eq(trk_tracker_free(u), 0);
}

static const struct trk_class_stat *find_class(const struct trk_class_stat *v, size_t n,
                                               const char *cls)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].cls, cls) && v[i].space == TRK_HOST) return &v[i];
    return NULL;
}

Test(tracking, a_class_peak_is_its_own_high_water_mark)
{
    struct trk_class_stat st[TRK_MAX_CLASS_STATS];
    void *a = trk_alloc(T, 100 << 10, "act/enc.matmul");
    void *b = trk_alloc(T, 200 << 10, "act/enc.softmax");
    void *w = trk_alloc(T, 64 << 10, "varmap/enc.w");
    trk_free(T, a);
    void *c = trk_alloc(T, 50 << 10, "act/dec.matmul"); /* the tags peak 100+200+50 KiB */
    size_t n = trk_class_stats(T, st, LG_ARRAY_LEN(st));
    const struct trk_class_stat *act = find_class(st, n, "act"), *vm = find_class(st, n, "varmap");
    cr_assert(act && vm, "both classes listed (%zu)", n);
    cr_assert_eq(act->peak_bytes, 300 << 10, "act peaked at 300 KiB, not %lld",
                 (long long)act->peak_bytes);
    cr_assert_eq(act->live_bytes, 250 << 10);
    cr_assert_eq(vm->peak_bytes, 64 << 10);
    trk_reset_peaks(T);
    n = trk_class_stats(T, st, LG_ARRAY_LEN(st));
    cr_assert_eq(find_class(st, n, "act")->peak_bytes, 250 << 10, "a reset peak is the live bytes");
    trk_free(T, b);
    trk_free(T, c);
    trk_free(T, w);
    n = trk_class_stats(T, st, LG_ARRAY_LEN(st));
    cr_assert_eq(find_class(st, n, "act")->live_bytes, 0);
}

Test(tracking, classes_past_the_table_count_as_other)
{
    enum { N = TRK_MAX_CLASSES + 6 };
    void *p[N];
    for (int i = 0; i < N; i++) p[i] = trk_allocf(T, 4096, "class%d/x", i);
    struct trk_class_stat st[TRK_MAX_CLASS_STATS];
    size_t n = trk_class_stats(T, st, LG_ARRAY_LEN(st));
    const struct trk_class_stat *other = find_class(st, n, "(other)");
    cr_assert_not_null(other);
    cr_assert_eq(other->live_bytes, 4096 * (N - TRK_MAX_CLASSES + 1), "%lld",
                 (long long)other->live_bytes);
    cr_assert_not_null(find_class(st, n, "class0"));
    for (int i = 0; i < N; i++) trk_free(T, p[i]);
}

Test(tracking, zero_size_and_long_tags)
{
    void *a = trk_alloc(T, 0, "act/empty");
    void *b = trk_alloc(T, 0, "act/empty");
    cr_assert(a && b && a != b, "size 0 gives unique pointers");
    char longtag[300];
    memset(longtag, 'x', sizeof longtag - 1);
    longtag[sizeof longtag - 1] = '\0';
    void *c = trk_alloc(T, 10, longtag);
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, c, tag, sizeof tag));
    cr_assert_eq(strlen(tag), LG_MAX_NAME - 1, "long tags are truncated, not rejected");
    trk_free(T, a);
    trk_free(T, b);
    trk_free(T, c);
    trk_free(T, NULL); /* does nothing */
}

Test(tracking, an_id_resolved_once_tags_like_its_name)
{
    uint32_t id = trk_tag_id(T, "act/enc.fc1");
    cr_assert_neq(id, TRK_NO_TAG);
    cr_assert_eq(trk_tag_id(T, "act/enc.fc1"), id, "a name has one id");
    cr_assert(trk_tag_is(T, id, "act/enc.fc1"));
    cr_assert_not(trk_tag_is(T, id, "act/enc.fc"), "a prefix is another name");
    cr_assert_not(trk_tag_is(T, id, "act/enc.fc12"));
    cr_assert_not(trk_tag_is(T, id + 1000, "act/enc.fc1"), "an id never handed out names nothing");
    cr_assert_not(trk_tag_is(T, TRK_NO_TAG, "act/enc.fc1"));
    void *a = trk_alloc_id(T, 100, id);
    void *b = trk_alloc(T, 300, "act/enc.fc1");
    cr_assert(a && b);
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, a, tag, sizeof tag));
    cr_assert_str_eq(tag, "act/enc.fc1");
    struct trk_tag_stat *st = NULL;
    size_t n = trk_tag_stats(T, &st);
    const struct trk_tag_stat *s = find_stat(st, n, "act/enc.fc1");
    cr_assert_not_null(s);
    cr_assert_eq(s->live_count, 2, "both calls count under one tag");
    cr_assert_eq(s->live_bytes, 400);
    free(st);
    trk_free(T, a);
    trk_free(T, b);
    /* an id-tagged allocation that outlives its session is reported under its name */
    trk_session_begin(T);
    void *kept = trk_alloc_id(T, 64, id);
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_EBUSY);
    cr_assert_eq(lk->n_groups, 1);
    cr_assert_str_eq(lk->groups[0].tag, "act/enc.fc1");
    trk_leaks_free(lk);
    trk_free(T, kept);
}

Test(tracking, session_end_lists_what_a_generation_left)
{
    void *outside = trk_alloc(T, 1000, "data/train");
    uint32_t g = trk_session_begin(T);
    cr_assert_gt(g, 0);
    void *w = trk_alloc(T, 4096, "varmap/out.weight");
    void *m1 = trk_alloc(T, 8192, "adam.m/out.weight");
    void *m2 = trk_alloc(T, 8192, "adam.m/out.weight");
    void *v = trk_alloc(T, 100, "adam.v/out.bias");
    trk_free(T, w);
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_EBUSY, "session end refuses over live children");
    cr_assert_not_null(lk);
    cr_assert_eq(lk->generation, g);
    cr_assert_eq(lk->n_groups, 2);
    cr_assert_str_eq(lk->groups[0].tag, "adam.m/out.weight", "largest first");
    cr_assert_eq(lk->groups[0].bytes, 16384);
    cr_assert_eq(lk->groups[0].count, 2);
    cr_assert_eq(lk->groups[0].generation, g);
    cr_assert_str_eq(lk->groups[1].tag, "adam.v/out.bias");
    cr_assert_eq(lk->host_bytes, 16484);
    cr_assert_eq(lk->host_count, 3);
    cr_assert_eq(trk_generation(T), 0, "back outside any session");
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    trk_leaks_print(lk, f, 10);
    fclose(f);
    cr_assert(strstr(text, "adam.m/out.weight") && strstr(text, "16.00 KiB"), "%s", text);
    cr_assert_null(strstr(text, "data/train"), "born outside the session: not listed");
    free(text);
    trk_leaks_free(lk);

    uint32_t g2 = trk_session_begin(T);
    cr_assert_gt(g2, g);
    void *x = trk_alloc(T, 64, "act/tmp");
    trk_free(T, x);
    cr_assert_eq(trk_session_end(T, &lk), LG_OK, "a clean session closes");
    cr_assert_eq(lk->n_groups, 0);
    trk_leaks_free(lk);
    cr_assert_eq(trk_session_end(T, NULL), LG_EINVAL, "no session is open");
    trk_free(T, m1);
    trk_free(T, m2);
    trk_free(T, v);
    trk_free(T, outside);
}

__attribute__((noinline)) static void *allocate_the_leaky_buffer(struct trk_tracker *trk)
{
    void *p = trk_alloc(trk, 777, "ckpt/staging");
    __asm__ volatile("" ::: "memory"); /* keep the call a real call */
    return p;
}

Test(tracking, stacks_point_at_the_allocating_function)
{
    struct trk_tracker *s = NULL;
    cr_assert_eq(trk_tracker_new(&s, &(struct trk_options){.stacks = true}), LG_OK);
    trk_session_begin(s);
    void *p = allocate_the_leaky_buffer(s);
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(s, &lk), LG_EBUSY);
    cr_assert_eq(lk->n_groups, 1);
    cr_assert_eq(lk->groups[0].n_stacks, 1);
    cr_assert_eq(lk->groups[0].stacks[0].count, 1);
    const char *st = lk->groups[0].stacks[0].frames;
    cr_assert_not_null(st);
    char *first = strstr(st, "#0 ");
    cr_assert_not_null(first, "%s", st);
    cr_assert(strncmp(first + 3, "allocate_the_leaky_buffer", 25) == 0,
              "innermost frame names the allocating function:\n%s", st);
    cr_assert_not_null(strstr(st, "test_tracking.c"), "with file and line:\n%s", st);
    trk_leaks_free(lk);
    trk_free(s, p);
    cr_assert_eq(trk_tracker_free(s), 0);
}

struct varmap_like {
    int dummy;
};

__attribute__((noinline)) static void
trainer_new_takes_a_reference(struct trk_tracker *trk, struct varmap_like *vm, void *trainer)
{
    trk_ref_retain(trk, vm, trainer, TRK_HERE);
}

Test(tracking, ref_ledger_names_the_unreleased_retain)
{
    struct varmap_like vm;
    int model, trainer, other;
    trk_session_begin(T);
    trk_ref_track(T, &vm, "varmap", "tiny", &model, TRK_HERE);
    trainer_new_takes_a_reference(T, &vm, &trainer);
    trk_ref_retain(T, &vm, &other, TRK_HERE);
    trk_ref_release(T, &vm, &other, TRK_HERE);
    trk_ref_release(T, &vm, &model, TRK_HERE); /* the model lets go; the trainer never does */
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_EBUSY, "an object still held keeps the session busy");
    cr_assert_eq(lk->n_refs, 1);
    cr_assert_str_eq(lk->refs[0].kind, "varmap");
    cr_assert_str_eq(lk->refs[0].name, "tiny");
    cr_assert_eq(lk->refs[0].refs, 1);
    cr_assert_eq(lk->refs[0].n_retains, 1);
    cr_assert_eq(lk->refs[0].retains[0].holder, &trainer);
    cr_assert_not_null(strstr(lk->refs[0].retains[0].site, "trainer_new_takes_a_reference"),
                       "site: %s", lk->refs[0].retains[0].site);
    cr_assert_not_null(strstr(lk->refs[0].retains[0].site, "test_tracking.c:"));
    trk_leaks_free(lk);
    trk_ref_release(T, &vm, &trainer, TRK_HERE);
    trk_ref_untrack(T, &vm, TRK_HERE);
    cr_assert_eq(trk_error_count(T), 0);

    trk_session_begin(T);
    trk_ref_track(T, &vm, "varmap", "tiny", &model, TRK_HERE);
    trk_ref_release(T, &vm, &model, TRK_HERE);
    trk_ref_untrack(T, &vm, TRK_HERE);
    cr_assert_eq(trk_session_end(T, NULL), LG_OK, "balanced references close cleanly");
}

Test(tracking, unbalanced_release_is_an_error, .fini = lg_test_teardown_allow_errors)
{
    struct varmap_like vm = {0};
    int a = 0, b = 0;
    trk_ref_track(T, &vm, "varmap", "x", &a, TRK_HERE);
    trk_ref_release(T, &vm, &b, TRK_HERE); /* b never retained */
    trk_ref_untrack(T, &vm, TRK_HERE);     /* a still holds it */
    struct trk_error *e = NULL;
    size_t n = trk_errors(T, &e);
    cr_assert_eq(n, 2);
    cr_assert_not_null(strstr(e[0].what, "holds no reference"), "%s", e[0].what);
    cr_assert_not_null(strstr(e[1].what, "while 1 reference(s) were outstanding"), "%s", e[1].what);
    trk_errors_free(e, n);
}

Test(tracking, invalid_and_double_frees_are_reported_not_crashes,
     .fini = lg_test_teardown_allow_errors)
{
    void *p = trk_alloc(T, 256, "grad/x");
    trk_free(T, p);
    trk_free(T, p); /* double */
    int on_stack;
    trk_free(T, &on_stack);                    /* never allocated */
    void *d = trk_dev_alloc(T, 16, "act/dev"); /* no backend: an error, not a crash */
    cr_assert_null(d);
    cr_assert_eq(lg_errcode(), LG_EUNAVAIL);
    struct trk_error *e = NULL;
    size_t n = trk_errors(T, &e);
    cr_assert_eq(n, 2);
    cr_assert_not_null(strstr(e[0].what, "double free"), "%s", e[0].what);
    cr_assert_not_null(strstr(e[0].what, "grad/x"), "names the tag it had: %s", e[0].what);
    cr_assert_not_null(strstr(e[1].what, "unknown pointer"), "%s", e[1].what);
    cr_assert_not_null(e[1].stack, "errors carry a stack");
    cr_assert_not_null(strstr(e[1].stack, "invalid_and_double_frees"), "%s", e[1].stack);
    trk_errors_free(e, n);
    /* a session counts the invalid frees made inside it, and only those */
    trk_session_begin(T);
    void *q = trk_alloc(T, 64, "grad/y");
    trk_free(T, q);
    trk_free(T, q);
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_OK);
    cr_assert_eq(lk->n_invalid_frees, 1, "%zu", lk->n_invalid_frees);
    trk_leaks_free(lk);
}

/* What a malloc interposer (leakgate exec's agent) needs: free-if-owned, larger alignments, and
 * device allocations made by someone else, recorded and forgotten without a backend. */
Test(tracking, interposer_helpers_own_only_their_own)
{
    void *p = trk_alloc(T, 1000, "act/x");
    void *q = trk_alloc_aligned(T, 3000, 4096, "act/aligned");
    cr_assert_not_null(q);
    cr_expect_eq((uintptr_t)q % 4096, 0, "4 KiB aligned");
    cr_expect_eq(trk_size_of(T, q), 3000);
    void *plain = malloc(64);
    cr_expect_not(trk_free_if_owned(T, plain), "a pointer the tracker never made is not its own");
    cr_expect_not(trk_free_if_owned(T, NULL));
    free(plain);
    cr_expect(trk_free_if_owned(T, p));
    cr_expect_not(trk_free_if_owned(T, p), "once freed, no longer owned");
    cr_expect(trk_free_if_owned(T, q));
    cr_expect_eq(trk_error_count(T), 0, "free-if-owned records no invalid free");

    int dev_buf;
    trk_session_begin(T);
    cr_assert_eq(trk_dev_adopt(T, &dev_buf, 1 << 20, "cuda/cudaMalloc"), LG_OK);
    struct trk_totals dev;
    trk_totals(T, TRK_DEVICE, &dev);
    cr_expect_eq(dev.live_bytes, 1 << 20);
    struct trk_leaks *lk = NULL;
    cr_expect_eq(trk_leaks_of(T, trk_generation(T), &lk), LG_OK);
    cr_assert_eq(lk->n_groups, 1);
    cr_expect_str_eq(lk->groups[0].tag, "cuda/cudaMalloc");
    cr_expect_str_eq(lk->groups[0].space, "device");
    trk_leaks_free(lk);
    cr_expect_not(trk_free_if_owned(T, &dev_buf), "device records are not host memory");
    cr_expect(trk_dev_forget(T, &dev_buf));
    cr_expect_not(trk_dev_forget(T, &dev_buf));
    trk_totals(T, TRK_DEVICE, &dev);
    cr_expect_eq(dev.live_bytes, 0, "forgotten: no longer counted");
    cr_expect_eq(trk_session_end(T, NULL), LG_OK);
}

Test(tracking, raw_stacks_are_return_addresses)
{
    struct trk_tracker *raw = NULL;
    cr_assert_eq(trk_tracker_new(&raw, &(struct trk_options){.stacks = true, .raw_stacks = true}),
                 LG_OK);
    trk_session_begin(raw);
    void *p = trk_alloc(raw, 64, "grad/raw");
    struct trk_leaks *lk = NULL;
    cr_expect_eq(trk_session_end(raw, &lk), LG_EBUSY);
    cr_assert(lk && lk->n_groups == 1 && lk->groups[0].n_stacks == 1);
    const char *text = lk->groups[0].stacks[0].frames;
    cr_expect_eq(strncmp(text, "0x", 2), 0, "%s", text);
    unsigned long pc = strtoul(text, NULL, 16);
    Dl_info info;
    cr_expect(dladdr((void *)(pc - 1), &info) && info.dli_sname &&
                  strstr(info.dli_sname, "raw_stacks_are_return_addresses"),
              "the first address is in the allocating function (%s)",
              info.dli_sname ? info.dli_sname : "?");
    trk_leaks_free(lk);
    trk_free(raw, p);
    cr_expect_eq(trk_tracker_free(raw), 0);
}

Test(tracking, snapshot_views_move_with_the_right_allocations)
{
    struct trk_snapshot a, b, c;
    trk_quiesce(T);
    trk_snapshot(T, &a);
    void *p = trk_alloc(T, 8 << 20, "varmap/big");
    memset(p, 1, 8 << 20);
    trk_snapshot(T, &b);
    cr_assert_eq(b.tagged_host - a.tagged_host, 8 << 20);
    cr_assert_geq(b.rss - a.rss, 7 << 20, "touched pages are resident");
#ifdef LG_HAVE_JEMALLOC
    cr_assert_geq(b.je_allocated - a.je_allocated, 8 << 20);
    cr_assert_geq(b.arena_allocated - a.arena_allocated, 8 << 20, "the dedicated arena holds it");
    void *raw = malloc(4 << 20); /* untagged: jemalloc's allocated moves, the arena does not */
    memset(raw, 2, 4 << 20);
    trk_snapshot(T, &c);
    cr_assert_geq(c.je_allocated - b.je_allocated, 4 << 20);
    cr_assert_eq(c.arena_allocated, b.arena_allocated, "untagged malloc stays outside the arena");
    cr_assert_eq(c.tagged_host, b.tagged_host);
    free(raw);
#else
    (void)c;
    cr_assert_eq(b.je_allocated, -1, "unavailable views say -1");
#endif
    struct trk_tag_stat *s1 = NULL, *s2 = NULL;
    size_t n1 = trk_tag_stats(T, &s1);
    trk_free(T, p);
    trk_quiesce(T);
    size_t n2 = trk_tag_stats(T, &s2);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    trk_tag_diff_print(s1, n1, s2, n2, f);
    fclose(f);
    cr_assert_not_null(strstr(text, "-8388608 B"), "%s", text);
    cr_assert_not_null(strstr(text, "varmap/big"), "%s", text);
    free(text);
    free(s1);
    free(s2);
    struct trk_snapshot d;
    trk_snapshot(T, &d);
    cr_assert_eq(d.tagged_host, a.tagged_host);
    cr_assert_gt(d.tracker_overhead, 0);
}

Test(tracking, rss_sees_memory_outside_the_allocator)
{
    struct trk_snapshot a, b;
    trk_snapshot(T, &a);
    size_t len = 16 << 20;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(m, MAP_FAILED);
    memset(m, 3, len);
    trk_snapshot(T, &b);
    cr_assert_geq(b.rss_anon - a.rss_anon, (int64_t)len * 9 / 10);
    cr_assert_eq(b.tagged_host, a.tagged_host);
    munmap(m, len);
}

Test(tracking, the_ledger_finds_every_live_pointer_through_random_frees)
{
    /* a ledger kept near its fullest (half its slots) with frees in random order: deleting from
     * an open-addressing table must leave every other record findable, or a later free would be
     * taken for an invalid one and its bytes would stay counted */
    enum { N = 40000, ROUNDS = 3 };
    void **p = calloc(N, sizeof *p);
    unsigned seed = 12345;
    uint32_t g = trk_session_begin(T);
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < N; i++)
            if (!p[i]) p[i] = trk_alloc(T, 16 + (size_t)(i % 7), "act/ledger");
        for (int i = N - 1; i > 0; i--) { /* shuffle, then free three quarters */
            int j = (int)(rand_r(&seed) % (unsigned)(i + 1));
            void *t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        for (int i = 0; i < N * 3 / 4; i++) {
            trk_free(T, p[i]);
            p[i] = NULL;
        }
        struct trk_totals tot;
        trk_totals(T, TRK_HOST, &tot);
        cr_assert_eq(tot.live_count, N - N * 3 / 4, "round %d: %lld live", r,
                     (long long)tot.live_count);
    }
    for (int i = 0; i < N; i++) trk_free(T, p[i]);
    free(p);
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_OK);
    cr_assert_eq(lk->n_invalid_frees, 0);
    cr_assert_eq(lk->n_groups, 0);
    cr_assert_eq(lk->generation, g);
    trk_leaks_free(lk);
}

struct stress_arg {
    struct trk_tracker *trk;
    int id;
};

static void *stress(void *vp)
{
    struct stress_arg *a = vp;
    void *keep[64] = {0};
    unsigned seed = (unsigned)a->id * 7919u + 1;
    for (int i = 0; i < 20000; i++) {
        int k = (int)(rand_r(&seed) % 64);
        if (keep[k]) {
            trk_free(a->trk, keep[k]);
            keep[k] = NULL;
        } else {
            char tag[32];
            snprintf(tag, sizeof tag, "act/thread%d.slot%d", a->id % 3, k % 5);
            keep[k] = trk_alloc(a->trk, 64 + (size_t)(rand_r(&seed) % 5000), tag);
        }
    }
    /* leave exactly 10 allocations of 100 bytes live under a per-thread tag */
    for (int k = 0; k < 64; k++) trk_free(a->trk, keep[k]);
    char tag[32];
    snprintf(tag, sizeof tag, "act/left%d", a->id);
    for (int k = 0; k < 10; k++) keep[k] = trk_alloc(a->trk, 100, tag);
    return NULL;
}

Test(tracking, threads_lose_no_counts)
{
    enum { NTH = 8 };
    pthread_t th[NTH];
    struct stress_arg args[NTH];
    uint32_t g = trk_session_begin(T);
    for (int i = 0; i < NTH; i++) {
        args[i] = (struct stress_arg){T, i};
        pthread_create(&th[i], NULL, stress, &args[i]);
    }
    for (int i = 0; i < NTH; i++) pthread_join(th[i], NULL);
    struct trk_totals tot;
    trk_totals(T, TRK_HOST, &tot);
    cr_assert_eq(tot.live_bytes, NTH * 10 * 100);
    cr_assert_eq(tot.live_count, NTH * 10);
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_EBUSY);
    cr_assert_eq(lk->n_groups, NTH);
    for (size_t i = 0; i < lk->n_groups; i++) {
        cr_assert_eq(lk->groups[i].bytes, 1000);
        cr_assert_eq(lk->groups[i].generation, g);
    }
    trk_leaks_free(lk);
    /* the tracker frees what is left, and says how many */
    struct trk_tracker *old = T;
    cr_assert_eq(trk_tracker_free(old), NTH * 10);
    cr_assert_eq(trk_tracker_new(&T, NULL), LG_OK);
}

/* A device backend over host memory: the same ledger and reports for "device" bytes. */
static int fake_alloc(void *ctx, void **out, size_t size)
{
    *(int64_t *)ctx += (int64_t)size;
    *out = malloc(size);
    return *out ? LG_OK : LG_ENOMEM;
}
static void fake_free(void *ctx, void *p) { free(p); }
static int fake_sync(void *ctx)
{
    (void)ctx;
    return LG_OK;
}
static void fake_usage(void *ctx, int64_t *used, int64_t *total, int64_t *proc)
{
    *used = *(int64_t *)ctx;
    *total = 1 << 30;
    *proc = -1;
}

Test(tracking, device_allocations_share_the_ledger)
{
    int64_t driver = 0;
    struct trk_device_backend be = {"fake", fake_alloc, fake_free, fake_sync, fake_usage, &driver};
    trk_set_device_backend(T, &be);
    cr_assert(trk_has_device(T));
    trk_session_begin(T);
    void *d = trk_dev_alloc(T, 1 << 20, "varmap/w");
    void *h = trk_alloc(T, 1 << 10, "varmap/w");
    trk_free(T, h);
    struct trk_snapshot s;
    trk_snapshot(T, &s);
    cr_assert_eq(s.tagged_device, 1 << 20);
    cr_assert_eq(s.dev_used, 1 << 20);
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_EBUSY);
    cr_assert_eq(lk->n_groups, 1);
    cr_assert_str_eq(lk->groups[0].space, "device");
    cr_assert_eq(lk->device_bytes, 1 << 20);
    cr_assert_eq(lk->host_bytes, 0);
    trk_leaks_free(lk);
    trk_free(T, d); /* a device pointer freed as host memory is an error, and it stays live */
    cr_assert_eq(trk_error_count(T), 1);
    trk_dev_free(T, d);
    trk_set_device_backend(T, NULL);
    /* the provoked error is expected: clear it by starting over with a fresh tracker */
    trk_tracker_free(T);
    cr_assert_eq(trk_tracker_new(&T, NULL), LG_OK);
}

/* A backend that counts its driver queries and whose sync reports a configured fault. */
struct probe_dev {
    int usage_calls, sync_calls, fault;
};
static int probe_alloc(void *ctx, void **out, size_t size)
{
    (void)ctx;
    *out = malloc(size);
    return *out ? LG_OK : LG_ENOMEM;
}
static void probe_free(void *ctx, void *p) { free(p); }
static int probe_sync(void *ctx)
{
    struct probe_dev *d = ctx;
    d->sync_calls++;
    return d->fault ? lg_fail(LG_ECUDA, "probe: illegal address in the last kernel") : LG_OK;
}
static void probe_usage(void *ctx, int64_t *used, int64_t *total, int64_t *proc)
{
    struct probe_dev *d = ctx;
    d->usage_calls++;
    *used = 7 << 20;
    *total = 1 << 30;
    *proc = 5 << 20;
}

Test(tracking, quiesce_returns_the_device_fault_and_light_snapshots_skip_the_driver)
{
    struct probe_dev d = {0};
    struct trk_device_backend be = {.name = "probe",
                                    .alloc = probe_alloc,
                                    .free = probe_free,
                                    .sync = probe_sync,
                                    .usage = probe_usage,
                                    .ctx = &d};
    trk_set_device_backend(T, &be);
    void *p = trk_dev_alloc(T, 1 << 20, "act/probe");
    cr_assert_not_null(p);
    struct trk_snapshot s;
    trk_snapshot_light(T, &s);
    cr_expect_eq(d.usage_calls, 0, "a light snapshot does not query the driver");
    cr_expect_eq(d.sync_calls, 0, "nor synchronise");
    cr_expect_eq(s.tagged_device, 1 << 20, "the ledger is read all the same");
    cr_expect(s.dev_used == -1 && s.dev_total == -1 && s.dev_process == -1);
    if (trk_build_has_allocator_stats())
        cr_expect_gt(s.je_allocated, 0, "jemalloc is read all the same");
    trk_snapshot(T, &s);
    cr_expect_eq(d.usage_calls, 1);
    cr_expect_eq(d.sync_calls, 0, "a snapshot reads the driver without synchronising");
    cr_expect_eq(s.dev_used, 7 << 20);
    cr_expect_eq(s.dev_process, 5 << 20);

    cr_expect_eq(trk_quiesce(T), LG_OK);
    d.fault = 1;
    cr_expect_eq(trk_quiesce(T), LG_ECUDA, "the fault the sync found is returned");
    cr_expect(strstr(lg_errmsg(), "illegal address") != NULL, "%s", lg_errmsg());
    cr_expect_eq(d.sync_calls, 2);
    d.fault = 0;
    cr_expect_eq(trk_quiesce(T), LG_OK);
    lg_clear_error();
    trk_dev_free(T, p);
    trk_set_device_backend(T, NULL);
}
