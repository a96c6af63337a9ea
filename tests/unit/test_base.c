/* test_base.c — lg_base's containers: the address table behind the agent's and CUPTI's device
 * bookkeeping (puts, replacements, deletes, tombstones reused, growth past many rebuilds,
 * against a plain array) and the growing array of lg_reserve. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "lg_addrmap.h"
#include "lg_base.h"
#include "leakgate.h"

Test(base, reserve_grows_by_doubling_and_zeroes_the_new_element)
{
    struct item {
        int64_t a;
        char name[24];
    } *v = NULL;
    int cap = 0, n = 0;
    for (; n < 1000; n++) {
        cr_assert(LG_RESERVE(v, cap, n, 4));
        cr_assert_eq(v[n].a, 0);
        cr_assert_eq(v[n].name[0], '\0');
        v[n].a = n;
        memset(v[n].name, 'x', sizeof v[n].name);
    }
    cr_assert_eq(cap, 1024, "4 doubled eight times");
    for (int k = 0; k < n; k++) cr_assert_eq(v[k].a, k, "earlier elements are kept");
    free(v);
}

Test(addrmap, put_replace_delete)
{
    struct lg_addrmap m = {0};
    struct lg_addr_entry old, out;
    cr_assert(lg_addrmap_put(&m, 0x1000, 64, 1, &old));
    cr_assert_eq(old.addr, 0, "a new address replaces nothing");
    cr_assert(lg_addrmap_put(&m, 0x1000, 128, 0, &old));
    cr_assert_eq(old.addr, 0x1000);
    cr_assert_eq(old.bytes, 64);
    cr_assert_eq(old.aux, 1);
    cr_assert_eq(m.used, 1);
    cr_assert(lg_addrmap_del(&m, 0x1000, &out));
    cr_assert_eq(out.bytes, 128);
    cr_assert_not(lg_addrmap_del(&m, 0x1000, &out), "deleted once");
    cr_assert_not(lg_addrmap_put(&m, 1, 8, 0, NULL), "0 and 1 mark empty and deleted slots");
    cr_assert_eq(m.used, 0);
    lg_addrmap_fini(&m);
    cr_assert_null(m.v);
}

/* Many addresses in and out, in an order that leaves tombstones everywhere: the table agrees
 * with a plain array of what is live at every step. */
Test(addrmap, agrees_with_a_plain_array)
{
    enum { N = 5000 };
    static uint64_t live[N]; /* bytes per address index; 0: not live */
    struct lg_addrmap m = {0};
    uint64_t seed = 12345;
    for (int step = 0; step < 200000; step++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((seed >> 33) % N);
        uint64_t addr = 0x7f0000000000ull + (uint64_t)k * 256;
        if (live[k] && (seed & 1)) {
            struct lg_addr_entry out;
            cr_assert(lg_addrmap_del(&m, addr, &out));
            cr_assert_eq(out.bytes, live[k]);
            live[k] = 0;
        } else {
            struct lg_addr_entry old;
            uint64_t bytes = 1 + (seed >> 40) % 4096;
            cr_assert(lg_addrmap_put(&m, addr, bytes, k, &old));
            cr_assert_eq(old.bytes, live[k]);
            live[k] = bytes;
        }
    }
    size_t n_live = 0;
    uint64_t total = 0, want = 0;
    for (int k = 0; k < N; k++) want += live[k], n_live += live[k] != 0;
    LG_ADDRMAP_FOREACH(&m, e)
    {
        total += e->bytes;
        cr_assert_eq(live[e->aux], e->bytes);
    }
    cr_assert_eq(m.used, n_live);
    cr_assert_eq(total, want);
    cr_assert_lt(m.cap, (size_t)8 * N, "tombstones are dropped when the table is rebuilt");
    lg_addrmap_fini(&m);
}

/* Both status lists (LG_STATUS_MAP, and the public LEAKGATE_STATUS_MAP) give every status its
 * own words, and the CLI's exit statuses are the documented ones: 2 for what the user can fix
 * (usage, input, a missing feature), 4 for the rest. */
Test(base, every_status_has_its_own_words_and_exit)
{
    static const int fixable[] = {LG_EINVAL, LG_EIO, LG_EFORMAT, LG_EBUSY, LG_EUNAVAIL};
    const char *seen[16];
    int n = 0;
#define ROW(name, value, text, exit)                                                               \
    cr_expect_str_eq(lg_status_name(LG_##name), text);                                             \
    for (int i = 0; i < n; i++) cr_expect_str_neq(seen[i], text);                                  \
    seen[n++] = text;
    LG_STATUS_MAP(ROW)
#undef ROW
    cr_expect_str_eq(lg_status_name(99), "unknown status");
    cr_expect_eq(lg_exit_code(LG_OK), 0);
    for (int s = 1; s < n; s++) {
        bool user = false;
        for (size_t i = 0; i < LG_ARRAY_LEN(fixable); i++) user |= fixable[i] == s;
        cr_expect_eq(lg_exit_code(s), user ? 2 : 4, "%s", lg_status_name(s));
    }
#define API_ROW(name, value, text) cr_expect_str_eq(leakgate_strerror(LEAKGATE_##name), text);
    LEAKGATE_STATUS_MAP(API_ROW)
#undef API_ROW
    cr_expect_str_eq(leakgate_strerror(-1), "unknown status");
}
