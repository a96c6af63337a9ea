/* test_varmap.c — the VarMap: get-or-init, deterministic order-independent initialisation,
 * name order, counts, safetensors save/load (bitwise, all-or-nothing) and the reference
 * ledger that names who still holds a map at a session's end. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"
#include "safetensors.h"
#include "varmap.h"

TestSuite(varmap, .init = lg_test_setup, .fini = lg_test_teardown);

static int model_token, trainer_token, other_token; /* holders */
#define MODEL   (&model_token)
#define TRAINER (&trainer_token)

static struct vm_varmap *new_map(uint64_t seed)
{
    struct vm_varmap *vm = NULL;
    cr_assert_eq(vm_new(&vm, T, "test", MODEL, TRK_HERE, seed), LG_OK, "%s", lg_errmsg());
    return vm;
}

static const struct vm_init KAIMING = {VM_KAIMING_UNIFORM, 0};

/* A small model's worth of parameters, created in the order given by `perm`. */
static const struct {
    const char *name;
    int ndim;
    int64_t shape[3];
    struct vm_init init;
} PARAMS[] = {
    {"enc.fc1.weight", 2, {16, 8}, {VM_KAIMING_UNIFORM, 0}},
    {"enc.fc1.bias", 1, {16}, {VM_UNIFORM, 0.25f}},
    {"emb.cat.dow.weight", 2, {7, 16}, {VM_NORMAL, 0.5f}},
    {"enc.norm.weight", 1, {16}, {VM_ONES, 0}},
    {"enc.norm.bias", 1, {16}, {VM_ZEROS, 0}},
    {"attn.q.weight", 3, {2, 4, 16}, {VM_KAIMING_UNIFORM, 0}},
};
enum { NP = sizeof PARAMS / sizeof PARAMS[0] };

static void build(struct vm_varmap *vm, const int *perm)
{
    for (int k = 0; k < NP; k++) {
        int i = perm ? perm[k] : k;
        cr_assert_not_null(
            vm_get(vm, PARAMS[i].name, PARAMS[i].ndim, PARAMS[i].shape, PARAMS[i].init), "%s",
            lg_errmsg());
    }
}

static int same_bits(const struct tn_tensor *a, const struct tn_tensor *b)
{
    return tn_same_shape(a, b) && memcmp(tn_data(a), tn_data(b), tn_nbytes(a)) == 0;
}

Test(varmap, get_or_init_returns_the_same_tracked_leaf)
{
    struct vm_varmap *vm = new_map(1);
    struct tn_tensor *w = vm_get(vm, "out.weight", 2, (int64_t[]){3, 16}, KAIMING);
    cr_assert_not_null(w, "%s", lg_errmsg());
    cr_assert_str_eq(w->name, "varmap/out.weight");
    cr_assert(w->requires_grad);
    cr_assert_eq(w->dtype, TN_F32);
    cr_assert_eq(w->device, TN_CPU);
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, tn_data(w), tag, sizeof tag));
    cr_assert_str_eq(tag, "varmap/out.weight");
    float first = tn_f32(w)[0];
    tn_f32(w)[0] = 42.0f; /* a later get returns the tensor, not a fresh init */
    struct tn_tensor *again = vm_get(vm, "out.weight", 2, (int64_t[]){3, 16}, KAIMING);
    cr_assert_eq(again, w);
    cr_assert_eq(tn_f32(again)[0], 42.0f);
    cr_assert_neq(first, 42.0f);
    cr_assert_eq(vm_count(vm), 1);
    cr_assert_eq(vm_find(vm, "out.weight"), w);
    cr_assert_null(vm_find(vm, "varmap/out.weight"), "names are without the prefix");
    cr_assert_str_eq(vm_name(vm), "test");
    cr_assert_eq(vm_tracker(vm), T);
    vm_release(vm, MODEL, TRK_HERE);
}

Test(varmap, a_shape_mismatch_is_an_error_that_names_both_shapes)
{
    struct vm_varmap *vm = new_map(1);
    cr_assert_not_null(vm_get(vm, "w", 2, (int64_t[]){3, 16}, KAIMING));
    lg_clear_error();
    cr_assert_null(vm_get(vm, "w", 2, (int64_t[]){16, 3}, KAIMING));
    cr_assert_eq(lg_errcode(), LG_EINVAL);
    cr_assert(strstr(lg_errmsg(), "w has shape [3, 16], asked for [16, 3]"), "%s", lg_errmsg());
    cr_assert_null(vm_get(vm, "w", 3, (int64_t[]){3, 16, 1}, KAIMING));
    cr_assert_null(vm_get(vm, "w", 1, (int64_t[]){48}, KAIMING));
    cr_assert_eq(vm_count(vm), 1);
    vm_release(vm, MODEL, TRK_HERE);
}

Test(varmap, bad_names_and_inits_are_errors_and_leave_nothing)
{
    struct vm_varmap *vm = new_map(1);
    char longname[LG_MAX_NAME];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    cr_assert_null(vm_get(vm, longname, 1, (int64_t[]){2}, KAIMING));
    cr_assert_eq(lg_errcode(), LG_EINVAL);
    cr_assert_null(vm_get(vm, "", 1, (int64_t[]){2}, KAIMING));
    cr_assert_null(vm_get(vm, "neg", 1, (int64_t[]){-2}, KAIMING));
    cr_assert_null(vm_get(vm, "scalar", 0, NULL, KAIMING));
    cr_assert(strstr(lg_errmsg(), "Kaiming"), "%s", lg_errmsg());
    cr_assert_null(vm_get(vm, "u", 1, (int64_t[]){2}, (struct vm_init){VM_UNIFORM, -1.0f}));
    cr_assert_null(vm_get(vm, "n", 1, (int64_t[]){2}, (struct vm_init){VM_NORMAL, NAN}));
    cr_assert_null(vm_get(vm, "k", 1, (int64_t[]){2}, (struct vm_init){(enum vm_init_kind)99, 0}));
    cr_assert_eq(vm_count(vm), 0);
    /* what a rejected get allocated is gone; only the map itself is live */
    struct trk_totals t;
    trk_totals(T, TRK_HOST, &t);
    cr_assert_eq(t.live_count, 1, "only meta/varmap is live, found %lld allocations",
                 (long long)t.live_count);
    /* a longest allowed name works */
    longname[LG_MAX_NAME - 1 - strlen("varmap/")] = '\0';
    cr_assert_not_null(vm_get(vm, longname, 1, (int64_t[]){2}, KAIMING), "%s", lg_errmsg());
    vm_release(vm, MODEL, TRK_HERE);
}

Test(varmap, init_depends_on_seed_and_name_not_on_creation_order)
{
    static const int forward[NP] = {0, 1, 2, 3, 4, 5}, backward[NP] = {5, 4, 3, 2, 1, 0},
                     shuffled[NP] = {3, 0, 5, 1, 4, 2};
    struct vm_varmap *a = new_map(7), *b = new_map(7), *c = new_map(7), *d = new_map(8);
    build(a, forward);
    build(b, backward);
    build(c, shuffled);
    build(d, forward);
    for (int i = 0; i < NP; i++) {
        const char *n = PARAMS[i].name;
        cr_assert(same_bits(vm_find(a, n), vm_find(b, n)), "%s differs with creation order", n);
        cr_assert(same_bits(vm_find(a, n), vm_find(c, n)), "%s differs with creation order", n);
        enum vm_init_kind k = PARAMS[i].init.kind;
        if (k == VM_ZEROS || k == VM_ONES)
            cr_assert(same_bits(vm_find(a, n), vm_find(d, n)), "%s is constant", n);
        else
            cr_assert_not(same_bits(vm_find(a, n), vm_find(d, n)), "%s ignores the seed", n);
    }
    /* same seed, same shape, different names: different values */
    struct tn_tensor *x = vm_get(a, "x", 1, (int64_t[]){64}, KAIMING);
    struct tn_tensor *y = vm_get(a, "y", 1, (int64_t[]){64}, KAIMING);
    cr_assert_not(same_bits(x, y));
    for (int64_t i = 0; i < 16; i++) cr_assert_eq(tn_f32(vm_find(a, "enc.norm.weight"))[i], 1.0f);
    for (int64_t i = 0; i < 16; i++) cr_assert_eq(tn_f32(vm_find(a, "enc.norm.bias"))[i], 0.0f);
    vm_release(a, MODEL, TRK_HERE);
    vm_release(b, MODEL, TRK_HERE);
    vm_release(c, MODEL, TRK_HERE);
    vm_release(d, MODEL, TRK_HERE);
}

static void moments(const struct tn_tensor *t, double *mean, double *sd, double *maxabs)
{
    double s = 0, s2 = 0, m = 0;
    int64_t n = tn_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v = tn_f32(t)[i];
        s += v;
        s2 += v * v;
        m = fmax(m, fabs(v));
    }
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
    *maxabs = m;
}

Test(varmap, kaiming_uniform_normal_follow_their_laws)
{
    struct vm_varmap *vm = new_map(3);
    double mean, sd, mx;
    /* Kaiming: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = last dim = 25 -> bound 0.2 */
    struct tn_tensor *k = vm_get(vm, "k", 2, (int64_t[]){400, 25}, KAIMING);
    moments(k, &mean, &sd, &mx);
    cr_assert_leq(mx, 0.2, "inside the bound: %g", mx);
    cr_assert_gt(mx, 0.199, "fills the range: %g", mx);
    cr_assert_lt(fabs(mean), 0.01, "%g", mean);
    cr_assert_lt(fabs(sd - 0.2 / sqrt(3.0)), 0.005, "uniform sd = bound/sqrt(3): %g", sd);
    /* fan_in is the last dim, not the first */
    struct tn_tensor *k3 = vm_get(vm, "k3", 3, (int64_t[]){4, 100, 4}, KAIMING);
    moments(k3, &mean, &sd, &mx);
    cr_assert_leq(mx, 0.5);
    cr_assert_gt(mx, 0.45);

    struct tn_tensor *u = vm_get(vm, "u", 1, (int64_t[]){10000}, (struct vm_init){VM_UNIFORM, 3});
    moments(u, &mean, &sd, &mx);
    cr_assert(mx <= 3.0 && mx > 2.99, "%g", mx);
    cr_assert_lt(fabs(sd - sqrt(3.0)), 0.05, "%g", sd);

    struct tn_tensor *nrm =
        vm_get(vm, "n", 1, (int64_t[]){20000}, (struct vm_init){VM_NORMAL, 0.5f});
    moments(nrm, &mean, &sd, &mx);
    cr_assert_lt(fabs(mean), 0.02, "%g", mean);
    cr_assert_lt(fabs(sd - 0.5), 0.015, "N(0, a^2) has sd a: %g", sd);
    vm_release(vm, MODEL, TRK_HERE);
}

Test(varmap, parameters_are_listed_in_name_order_with_counts)
{
    struct vm_varmap *vm = new_map(1);
    build(vm, (int[]){4, 2, 0, 5, 1, 3});
    cr_assert_eq(vm_count(vm), NP);
    int64_t numel = 0;
    for (int i = 0; i < NP; i++) {
        int64_t n = 1;
        for (int d = 0; d < PARAMS[i].ndim; d++) n *= PARAMS[i].shape[d];
        numel += n;
    }
    cr_assert_eq(vm_param_count(vm), numel);
    cr_assert_eq(vm_bytes(vm), (size_t)numel * 4);
    for (int i = 1; i < NP; i++)
        cr_assert_lt(strcmp(tn_basename(vm_at(vm, i - 1)), tn_basename(vm_at(vm, i))), 0,
                     "%s before %s", vm_at(vm, i - 1)->name, vm_at(vm, i)->name);
    cr_assert_str_eq(vm_at(vm, 0)->name, "varmap/attn.q.weight");
    struct tn_tensor **list = NULL;
    int n = 0;
    cr_assert_eq(vm_all_vars(vm, &list, &n), LG_OK);
    cr_assert_eq(n, NP);
    for (int i = 0; i < n; i++) cr_assert_eq(list[i], vm_at(vm, i));
    char tag[LG_MAX_NAME];
    cr_assert(trk_tag_of(T, list, tag, sizeof tag));
    cr_assert_str_eq(tag, "meta/varmap.list");
    vm_list_free(vm, list);
    cr_assert_null(vm_find(vm, "enc.fc1"));
    cr_assert_null(vm_find(vm, "zzz"));
    vm_release(vm, MODEL, TRK_HERE);
}

Test(varmap, thousands_of_parameters_stay_sorted_and_findable)
{
    enum { N = 3000 };
    struct vm_varmap *vm = new_map(1);
    char name[64];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "p%05d.w", (i * 1733) % N);
        cr_assert_not_null(vm_get(vm, name, 1, (int64_t[]){2}, KAIMING));
    }
    cr_assert_eq(vm_count(vm), N);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "p%05d.w", i);
        cr_assert_eq(vm_at(vm, i), vm_find(vm, name), "%s", name);
    }
    vm_release(vm, MODEL, TRK_HERE);
}

/* ---- checkpoints ---------------------------------------------------------------------- */

static const char *ckpt(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", lg_test_tmpdir(), name);
    return buf;
}

Test(varmap, save_then_load_into_a_fresh_map_is_bitwise_identical)
{
    struct vm_varmap *a = new_map(11), *b = new_map(12);
    build(a, NULL);
    build(b, (int[]){5, 4, 3, 2, 1, 0});
    const char *cfg = "{\"preset\":\"tiny\",\"hidden\":16}";
    char path[512];
    lg_strlcpy(path, ckpt("a.safetensors"), sizeof path);
    cr_assert_eq(vm_save(a, path, cfg), LG_OK, "%s", lg_errmsg());

    struct st_file *f = NULL; /* names in the file are without the prefix */
    cr_assert_eq(st_open(&f, T, path), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(st_count(f), NP);
    cr_assert_geq(st_find(f, "enc.fc1.weight"), 0);
    cr_assert_str_eq(st_meta(f, "config"), cfg);
    st_close(f);

    char *back = NULL;
    cr_assert_eq(vm_load(b, path, &back), LG_OK, "%s", lg_errmsg());
    cr_assert_str_eq(back, cfg);
    free(back);
    for (int i = 0; i < NP; i++)
        cr_assert(same_bits(vm_at(a, i), vm_at(b, i)), "%s", vm_at(a, i)->name);

    /* without a config, none comes back; a NULL out pointer is fine too */
    cr_assert_eq(vm_save(a, path, NULL), LG_OK, "%s", lg_errmsg());
    back = (char *)"sentinel";
    cr_assert_eq(vm_load(b, path, &back), LG_OK, "%s", lg_errmsg());
    cr_assert_null(back);
    cr_assert_eq(vm_load(b, path, NULL), LG_OK, "%s", lg_errmsg());
    vm_release(a, MODEL, TRK_HERE);
    vm_release(b, MODEL, TRK_HERE);
}

/* Writes a checkpoint of the given (name, tensor) pairs. */
static void write_file(const char *path, const struct st_entry *e, int n)
{
    cr_assert_eq(st_save(T, path, e, n, NULL), LG_OK, "%s", lg_errmsg());
}

/* Copies of every parameter's values, to prove a failed load changed nothing. */
static void snapshot(struct vm_varmap *vm, struct tn_tensor **copy)
{
    for (int i = 0; i < vm_count(vm); i++) copy[i] = tn_clone(vm_at(vm, i), "ckpt/test.copy");
}

static void assert_unchanged(struct vm_varmap *vm, struct tn_tensor **copy, const char *what)
{
    for (int i = 0; i < vm_count(vm); i++)
        cr_assert(same_bits(vm_at(vm, i), copy[i]), "%s changed %s", what, vm_at(vm, i)->name);
}

Test(varmap, a_load_that_does_not_match_changes_nothing)
{
    struct vm_varmap *vm = new_map(5), *other = new_map(6);
    build(vm, NULL);
    build(other, NULL);
    struct tn_tensor *copy[NP];
    snapshot(vm, copy);
    struct st_entry e[NP + 1];
    for (int i = 0; i < NP; i++)
        e[i] = (struct st_entry){tn_basename(vm_at(other, i)), vm_at(other, i)};
    const char *path = ckpt("bad.safetensors");
    char *cfg = (char *)"untouched";

    /* missing: the file lacks the last two names; the message lists them */
    write_file(path, e, NP - 2);
    cr_assert_eq(vm_load(vm, path, &cfg), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "2 parameter(s) missing") &&
                  strstr(lg_errmsg(), vm_at(other, NP - 1)->name + 7) &&
                  strstr(lg_errmsg(), vm_at(other, NP - 2)->name + 7),
              "%s", lg_errmsg());
    cr_assert(strstr(lg_errmsg(), path), "%s", lg_errmsg());
    cr_assert_null(cfg);
    assert_unchanged(vm, copy, "missing");

    /* unexpected: one name too many */
    struct tn_tensor *extra = tn_new_f32(T, "ckpt/test.extra", 1, (int64_t[]){2});
    tn_fill(extra, 1.0f);
    e[NP] = (struct st_entry){"surprise.weight", extra};
    write_file(path, e, NP + 1);
    cr_assert_eq(vm_load(vm, path, NULL), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "1 unexpected name(s) in it (surprise.weight)"), "%s",
              lg_errmsg());
    assert_unchanged(vm, copy, "unexpected");

    /* wrong shape: same numel, transposed */
    struct tn_tensor *wt = tn_new_f32(T, "ckpt/test.t", 2, (int64_t[]){8, 16});
    tn_fill(wt, 2.0f);
    int iw = 0;
    while (strcmp(e[iw].name, "enc.fc1.weight") != 0) iw++;
    struct st_entry keep = e[iw];
    e[iw].t = wt;
    write_file(path, e, NP);
    cr_assert_eq(vm_load(vm, path, NULL), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "enc.fc1.weight has shape [8, 16] in the file, [16, 8]"), "%s",
              lg_errmsg());
    assert_unchanged(vm, copy, "wrong shape");

    /* wrong dtype: I32 of the right shape */
    struct tn_tensor *wi = tn_new(T, TN_I32, TN_CPU, 2, (int64_t[]){16, 8}, "ckpt/test.i");
    tn_fill(wi, 3.0f);
    e[iw].t = wi;
    write_file(path, e, NP);
    cr_assert_eq(vm_load(vm, path, NULL), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "enc.fc1.weight is I32 in the file"), "%s", lg_errmsg());
    assert_unchanged(vm, copy, "wrong dtype");

    /* many missing: a few are listed, the rest counted */
    write_file(path, e, 0);
    cr_assert_eq(vm_load(vm, path, NULL), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "6 parameter(s) missing") && strstr(lg_errmsg(), "1 more"), "%s",
              lg_errmsg());

    /* a malformed file and a missing one */
    cr_assert_eq(vm_load(vm, ckpt("absent.safetensors"), NULL), LG_EIO);
    cr_assert(strstr(lg_errmsg(), "loading varmap test"), "%s", lg_errmsg());
    char bad[600];
    snprintf(bad, sizeof bad, "%s/safetensors/bad/offsets_gap.safetensors", lg_test_data_dir());
    cr_assert_eq(vm_load(vm, bad, NULL), LG_EFORMAT);
    assert_unchanged(vm, copy, "a malformed file");

    /* and the good file still loads afterwards */
    e[iw] = keep;
    write_file(path, e, NP);
    cr_assert_eq(vm_load(vm, path, NULL), LG_OK, "%s", lg_errmsg());
    for (int i = 0; i < NP; i++) cr_assert(same_bits(vm_at(vm, i), vm_at(other, i)));

    tn_release(extra);
    tn_release(wt);
    tn_release(wi);
    for (int i = 0; i < NP; i++) tn_release(copy[i]);
    vm_release(vm, MODEL, TRK_HERE);
    vm_release(other, MODEL, TRK_HERE);
}

/* ---- references and the ledger ------------------------------------------------------------ */

Test(varmap, an_unreleased_retain_is_reported_with_its_holder_and_site)
{
    trk_session_begin(T);
    struct vm_varmap *vm = new_map(1);
    build(vm, NULL);
    int line = __LINE__ + 1;
    struct vm_varmap *mine = vm_retain(vm, TRAINER, TRK_HERE);
    cr_assert_eq(mine, vm);
    cr_assert_eq(vm_refs(vm), 2);
    vm_release(vm, MODEL, TRK_HERE); /* the model lets go; the trainer forgets to */
    cr_assert_eq(vm_refs(vm), 1);

    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_EBUSY);
    char site[64];
    snprintf(site, sizeof site, "(test_varmap.c:%d)", line);
    const struct lg_ref_leak *r =
        LG_EXPECT_ONE_REF(lk, "varmap", "test", TRAINER, site, "an_unreleased_retain");
    cr_assert_eq(r->object, vm);
    /* and the parameters it keeps alive are listed by name */
    int found = 0;
    for (size_t i = 0; i < lk->n_groups; i++)
        found |= !strcmp(lk->groups[i].tag, "varmap/enc.fc1.weight");
    cr_assert(found, "varmap/enc.fc1.weight among the live groups");
    trk_leaks_free(lk);

    vm_release(vm, TRAINER, TRK_HERE); /* the last reference frees everything */
    cr_assert_eq(trk_error_count(T), 0);
}

Test(varmap, balanced_retains_close_the_session_and_free_params_and_grads)
{
    trk_session_begin(T);
    struct vm_varmap *vm = new_map(1);
    build(vm, NULL);
    struct tn_tensor *w = vm_find(vm, "enc.fc1.weight");
    w->grad = tn_zeros(T, TN_F32, TN_CPU, w->ndim, w->ne, "grad/enc.fc1.weight");
    cr_assert_not_null(w->grad);
    vm_retain(vm, TRAINER, TRK_HERE);
    vm_retain(vm, &other_token, TRK_HERE);
    vm_retain(vm, TRAINER, TRK_HERE); /* one holder may hold twice */
    cr_assert_eq(vm_refs(vm), 4);
    vm_release(vm, TRAINER, TRK_HERE);
    vm_release(vm, &other_token, TRK_HERE);
    vm_release(vm, MODEL, TRK_HERE);
    vm_release(vm, TRAINER, TRK_HERE);
    vm_release(NULL, TRAINER, TRK_HERE);
    struct trk_leaks *lk = NULL;
    cr_assert_eq(trk_session_end(T, &lk), LG_OK);
    cr_assert_eq(lk->n_refs, 0);
    cr_assert_eq(lk->n_groups, 0);
    trk_leaks_free(lk);
    cr_assert_eq(trk_error_count(T), 0, "no invalid release");
}

Test(varmap, a_release_by_a_holder_without_a_reference_is_recorded,
     .fini = lg_test_teardown_allow_errors)
{
    struct vm_varmap *vm = new_map(1);
    vm_retain(vm, TRAINER, TRK_HERE);
    vm_release(vm, &other_token, TRK_HERE); /* wrong holder: counted, and the ledger says so */
    cr_assert_eq(trk_error_count(T), 1);
    struct trk_error *e = NULL;
    size_t n = trk_errors(T, &e);
    cr_assert(n == 1 && strstr(e[0].what, "holds no reference"), "%s", n ? e[0].what : "");
    trk_errors_free(e, n);
    vm_release(vm, MODEL, TRK_HERE);
}

struct churn {
    struct vm_varmap *vm;
    int id;
};

static void *churn_thread(void *arg)
{
    struct churn *c = arg;
    for (int i = 0; i < 2000; i++) {
        vm_retain(c->vm, &c->id, TRK_HERE);
        vm_release(c->vm, &c->id, TRK_HERE);
    }
    return NULL;
}

Test(varmap, concurrent_retains_and_releases_balance)
{
    struct vm_varmap *vm = new_map(1);
    pthread_t th[4];
    struct churn c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (struct churn){vm, i};
        cr_assert_eq(pthread_create(&th[i], NULL, churn_thread, &c[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    cr_assert_eq(vm_refs(vm), 1);
    cr_assert_eq(trk_error_count(T), 0);
    vm_release(vm, MODEL, TRK_HERE);
}
