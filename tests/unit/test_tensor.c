/* test_tensor.c — pools of tensor structs: what a tensor costs the tracker, views, every order
 * of release, a pool given up while its tensors live on, and what a leak report says about a
 * pooled tensor that outlives its session. */
#include <string.h>

#include "lg_test.h"
#include "tensor.h"

TestSuite(tensor, .init = lg_test_setup, .fini = lg_test_teardown);

static int64_t live_count(void)
{
    struct trk_totals t;
    trk_totals(T, TRK_HOST, &t);
    return t.live_count;
}

Test(tensor, a_pooled_tensor_costs_one_tracked_allocation)
{
    struct tn_pool *pool = tn_pool_new(T, "meta/act.tensor");
    cr_assert_not_null(pool);
    int64_t base = live_count();
    struct tn_tensor *a = tn_new_pooled(pool, TN_F32, TN_CPU, 2, (int64_t[]){3, 4}, "act/a");
    cr_assert_not_null(a);
    int64_t slab = live_count() - base - 1; /* the data, and the first slab */
    cr_assert_eq(slab, 1);
    struct tn_tensor *more[40];
    for (int i = 0; i < 40; i++) {
        more[i] = tn_new_pooled(pool, TN_F32, TN_CPU, 1, (int64_t[]){i + 1}, "act/b");
        cr_assert_not_null(more[i]);
    }
    cr_assert_eq(live_count() - base, 1 + 1 + 40, "one allocation a tensor: its data");
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, tn_data(a), tag, sizeof tag));
    cr_assert_str_eq(tag, "act/a");
    tn_fill(a, 2.0f);
    cr_assert_eq(tn_f32(a)[11], 2.0f);
    for (int i = 0; i < 40; i++) tn_release(more[i]);
    tn_release(a);
    cr_assert_eq(live_count() - base, 1, "the slab stays with the pool");
    tn_pool_free(pool);
    cr_assert_eq(live_count(), base - 1, "the pool and its slab are gone");
}

/* A pool remembers the tag id of each data allocation in order and checks each name against
 * the id remembered at its place: a step that makes other tensors than the last one (or the
 * same ones in another order) must still tag each under its own name. */
Test(tensor, a_pools_memo_of_tag_ids_never_mislabels)
{
    struct tn_pool *pool = tn_pool_new(T, "meta/act.tensor");
    static const char *const steps[][3] = {
        {"act/a", "act/b", "act/c"}, /* the memo is filled */
        {"act/a", "act/b", "act/c"}, /* every name hits */
        {"act/c", "act/a", "act/d"}, /* another order, and a new name */
        {"act/a", "act/b", "act/c"},
    };
    for (size_t s = 0; s < LG_ARRAY_LEN(steps); s++) {
        struct tn_tensor *t[3];
        for (int i = 0; i < 3; i++) {
            t[i] = tn_new_pooled(pool, TN_F32, TN_CPU, 1, (int64_t[]){4}, steps[s][i]);
            cr_assert_not_null(t[i]);
        }
        for (int i = 0; i < 3; i++) {
            char tag[LG_MAX_NAME];
            cr_assert(trk_tag_of(T, tn_data(t[i]), tag, sizeof tag));
            cr_assert_str_eq(tag, steps[s][i], "step %zu, tensor %d", s, i);
            tn_release(t[i]);
        }
        tn_pool_rewind(pool);
    }
    /* never rewound: the memo runs out and every name is still looked up */
    for (int i = 0; i < 5000; i++) {
        struct tn_tensor *x =
            tn_new_pooled(pool, TN_F32, TN_CPU, 1, (int64_t[]){1}, i % 2 ? "act/odd" : "act/even");
        char tag[LG_MAX_NAME];
        cr_assert(trk_tag_of(T, tn_data(x), tag, sizeof tag));
        cr_assert_str_eq(tag, i % 2 ? "act/odd" : "act/even");
        tn_release(x);
    }
    tn_pool_free(pool);
}

Test(tensor, views_outlive_their_tensor_and_slots_are_reused)
{
    struct tn_pool *pool = tn_pool_new(T, "meta/act.tensor");
    for (int round = 0; round < 3; round++) {
        struct tn_tensor *t[200], *v[200];
        for (int i = 0; i < 200; i++) {
            t[i] = tn_new_pooled(pool, TN_F32, TN_CPU, 2, (int64_t[]){2, 3}, "act/x");
            tn_fill(t[i], (float)i);
            v[i] = tn_reshape(t[i], 1, (int64_t[]){6}, "act/x.view"); /* from the pool too */
            cr_assert_not_null(v[i]);
            cr_assert_not_null(v[i]->cell, "a view of a pooled tensor is pooled");
        }
        for (int i = 0; i < 200; i++) tn_release(t[i]); /* the tensors first */
        for (int i = 0; i < 200; i++) {
            cr_assert_eq(tn_f32(v[i])[5], (float)i, "the view still reads its storage");
            tn_release(v[i]);
        }
    }
    int64_t before = live_count();
    struct tn_tensor *x = tn_new_pooled(pool, TN_F32, TN_CPU, 1, (int64_t[]){8}, "act/y");
    cr_assert_eq(live_count(), before + 1, "a free slot is reused: no new slab");
    tn_release(x);
    tn_pool_free(pool);
}

Test(tensor, a_pool_given_up_keeps_the_slabs_its_tensors_live_in)
{
    struct tn_pool *pool = tn_pool_new(T, "meta/act.tensor");
    struct tn_tensor *keep = tn_new_pooled(pool, TN_F32, TN_CPU, 1, (int64_t[]){4}, "act/kept");
    struct tn_tensor *gone = tn_new_pooled(pool, TN_F32, TN_CPU, 1, (int64_t[]){4}, "act/gone");
    tn_release(gone);
    tn_pool_free(pool);
    tn_fill(keep, 1.0f);
    struct tn_tensor *v = tn_reshape(keep, 2, (int64_t[]){2, 2}, "act/kept.view");
    cr_assert_not_null(v);
    cr_assert_null(v->cell, "a given-up pool hands out nothing: the view is tracked alone");
    tn_release(keep);
    cr_assert_eq(tn_f32(v)[3], 1.0f);
    tn_release(v); /* the last slot: slab and pool go now; teardown checks that nothing is left */
}

Test(tensor, a_pooled_tensor_that_outlives_its_session_is_named)
{
    struct tn_pool *pool = tn_pool_new(T, "meta/act.tensor");
    trk_session_begin(T);
    struct tn_tensor *a =
        tn_new_pooled(pool, TN_F32, TN_CPU, 2, (int64_t[]){64, 64}, "act/enc.fc1.linear");
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_EBUSY);
    bool named = false, slab = false;
    for (size_t i = 0; i < lk->n_groups; i++) {
        named |=
            !strcmp(lk->groups[i].tag, "act/enc.fc1.linear") && lk->groups[i].bytes == 64 * 64 * 4;
        slab |= !strcmp(lk->groups[i].tag, "meta/act.tensor");
    }
    cr_assert(named, "the leak names the tensor with its bytes");
    cr_assert(slab, "and the slab its structs live in");
    trk_leaks_free(lk);
    tn_release(a);
    tn_pool_free(pool);
}
