/* test_compare_debug_state.c — the debug-state comparison tool that ci/gpu-check runs on the
 * host's and the device's files: identical files pass, files of another seed fail (parameters
 * differ), one small gradient entry moved far off its value fails the elementwise bound while
 * the normwise bound alone passes it, a missing file and a bad command line are usage errors.
 * Runs on the host. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"

TestSuite(compare_debug_state, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 120);

static void debug_state(const char *path, int seed)
{
    cr_assert_eq(lg_shell("'%s' debug-state --preset tiny --seed %d -o '%s' >/dev/null",
                          LEAKGATE_BIN, seed, path),
                 0, "debug-state --seed %d -o %s", seed, path);
}

Test(compare_debug_state, same_passes_other_seed_fails_missing_is_usage)
{
    const char *d = lg_test_tmpdir();
    char one[1024], two[1024];
    snprintf(one, sizeof one, "%s/one.st", d);
    snprintf(two, sizeof two, "%s/two.st", d);
    debug_state(one, 1);
    debug_state(two, 2);
    cr_expect_eq(lg_shell("'%s' '%s' '%s' >/dev/null", COMPARE_BIN, one, one), 0,
                 "a file agrees with itself");
    cr_expect_eq(lg_shell("'%s' '%s' '%s' >/dev/null", COMPARE_BIN, one, two), 1,
                 "another seed: different parameters");
    cr_expect_eq(lg_shell("'%s' '%s' /nonexistent.st 2>/dev/null", COMPARE_BIN, one), 2,
                 "an unreadable file");
    cr_expect_eq(lg_shell("'%s' '%s' 2>/dev/null", COMPARE_BIN, one), 2,
                 "one file is a usage error");
    cr_expect_eq(lg_shell("'%s' --grad-atol -1 '%s' '%s' 2>/dev/null", COMPARE_BIN, one, one), 2,
                 "a negative tolerance is a usage error");
}

/* ---- a minimal reader of leakgate's own safetensors headers (tests link no model code) ---- */

struct st_raw {
    unsigned char *bytes;
    size_t size, data; /* data: where the data buffer starts */
};

static void raw_read(struct st_raw *f, const char *path)
{
    f->bytes = (unsigned char *)lg_slurp(path, &f->size);
    cr_assert_not_null(f->bytes, "%s", path);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->bytes[i];
    cr_assert_leq(8 + n, f->size);
    f->data = 8 + (size_t)n;
}

/* The next F32 tensor whose name starts with `prefix`, from header position *pos: its name, and
 * its values' place in the file. leakgate writes "name":{"dtype":"F32","shape":[...],
 * "data_offsets":[begin,end]}. */
static bool raw_next_f32(const struct st_raw *f, size_t *pos, const char *prefix, char *name,
                         size_t name_size, float **values, size_t *count)
{
    static const char key[] = "\":{\"dtype\":\"F32\"";
    const char *hdr = (const char *)f->bytes;
    for (;;) {
        const char *hit = NULL;
        for (size_t i = *pos; i + sizeof key - 1 <= f->data && !hit; i++)
            if (!memcmp(hdr + i, key, sizeof key - 1)) hit = hdr + i;
        if (!hit) return false;
        *pos = (size_t)(hit - hdr) + 1;
        const char *start = hit;
        while (start > hdr + 8 && start[-1] != '"') start--;
        size_t len = (size_t)(hit - start);
        const char *off = strstr(hit, "\"data_offsets\":[");
        unsigned long long b = 0, e = 0;
        cr_assert(off && sscanf(off, "\"data_offsets\":[%llu,%llu]", &b, &e) == 2);
        if (len >= name_size || strncmp(start, prefix, strlen(prefix))) continue;
        memcpy(name, start, len);
        name[len] = '\0';
        *values = (float *)(f->bytes + f->data + b);
        *count = (size_t)(e - b) / 4;
        return true;
    }
}

/* One entry of a gradient: small (under a tenth of its tensor's largest) but moved by half the
 * normwise tolerance of that largest — which the normwise bound (1e-4) lets through and the
 * elementwise one (1e-6 + 1e-4·|r|) does not. */
Test(compare_debug_state, a_small_entry_far_off_passes_normwise_and_fails_elementwise)
{
    const char *d = lg_test_tmpdir();
    char one[1024], moved[1024], name[LG_MAX_NAME];
    snprintf(one, sizeof one, "%s/one.st", d);
    snprintf(moved, sizeof moved, "%s/moved.st", d);
    debug_state(one, 1);
    struct st_raw f;
    raw_read(&f, one);
    size_t pos = 8, n = 0, k = 0;
    float *v = NULL, amax = 0;
    bool found = false;
    while (!found && raw_next_f32(&f, &pos, "grad.", name, sizeof name, &v, &n)) {
        amax = 0;
        for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(v[i]));
        if (n < 16 || amax < 0.05f) continue;
        k = 0;
        for (size_t i = 1; i < n; i++)
            if (fabsf(v[i]) < fabsf(v[k])) k = i;
        found = fabsf(v[k]) < 0.1f * amax;
    }
    cr_assert(found, "tiny has a gradient with a large and a small entry");
    float was = v[k], delta = 0.5e-4f * amax;
    cr_assert_gt(delta, 10 * (1e-6 + 1e-4 * fabsf(was)), "the move is far outside the bound");
    v[k] = was + delta;
    lg_spit(moved, f.bytes, f.size);
    free(f.bytes);
    fprintf(stderr, "moved %s[flat %zu] from %.9g by %.3g (the tensor's largest is %.3g)\n", name,
            k, was, delta, amax);

    struct lg_out o = lg_runf(COMPARE_BIN, "'%s' '%s'", one, moved);
    cr_expect_eq(o.status, 1, "the elementwise bound fails it:\n%s", o.text);
    char at[LG_MAX_NAME + 2];
    snprintf(at, sizeof at, "%s[", name);
    cr_expect(strstr(o.text, at) != NULL, "the entry is named (%s):\n%s", at, o.text);
    cr_expect(strstr(o.text, "1 of ") != NULL, "one entry over the bound:\n%s", o.text);
    cr_expect(strstr(o.text, "normwise relative error") == NULL, "normwise passes:\n%s", o.text);
    free(o.text);

    o = lg_runf(COMPARE_BIN, "--grad-atol 1 '%s' '%s'", one, moved);
    cr_expect_eq(o.status, 0, "with the elementwise bound wide open, the normwise one passes:\n%s",
                 o.text);
    free(o.text);

    o = lg_runf(COMPARE_BIN, "--grad-atol 1 --grad-tol 1e-5 '%s' '%s'", one, moved);
    cr_expect_eq(o.status, 1, "a normwise bound under the move (5e-5) fails it:\n%s", o.text);
    free(o.text);
}
