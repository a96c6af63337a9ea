/* test_safetensors.c — the safetensors reader and writer: round trips of every dtype and the
 * metadata, the file layout as the format publishes it (checked by an independent Python
 * reader), the committed corpus of malformed files, I/O errors and the atomic replace. */
#define _GNU_SOURCE
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lg_test.h"
#include "safetensors.h"

TestSuite(safetensors, .init = lg_test_setup, .fini = lg_test_teardown);

static int64_t live_host(void)
{
    struct trk_totals t;
    trk_totals(T, TRK_HOST, &t);
    return t.live_bytes;
}

/* Five tensors of every dtype, a scalar and an empty one, filled with known values. */
struct sample {
    struct tn_tensor *t[5];
    struct st_entry e[5];
};

static void sample_new(struct sample *s)
{
    s->t[0] = tn_new(T, TN_F32, TN_CPU, 2, (int64_t[]){3, 5}, "ckpt/test.w");
    s->t[1] = tn_new(T, TN_I8, TN_CPU, 1, (int64_t[]){7}, "ckpt/test.q");
    s->t[2] = tn_new(T, TN_I32, TN_CPU, 3, (int64_t[]){2, 2, 3}, "ckpt/test.idx");
    s->t[3] = tn_new(T, TN_F32, TN_CPU, 0, NULL, "ckpt/test.scalar");
    s->t[4] = tn_new(T, TN_F32, TN_CPU, 2, (int64_t[]){0, 4}, "ckpt/test.empty");
    for (int i = 0; i < 5; i++) cr_assert_not_null(s->t[i], "%s", lg_errmsg());
    for (int i = 0; i < 15; i++) tn_f32(s->t[0])[i] = (float)i * 0.37f - 2.0f;
    tn_f32(s->t[0])[3] = -0.0f;
    tn_f32(s->t[0])[4] = 1e-40f; /* a denormal survives bit for bit */
    for (int i = 0; i < 7; i++) tn_i8(s->t[1])[i] = (int8_t)(i * 41 - 128);
    for (int i = 0; i < 12; i++) tn_i32(s->t[2])[i] = (i - 6) * 123456789;
    tn_f32(s->t[3])[0] = 3.25f;
    static const char *names[5] = {"w", "q", "idx", "scalar", "empty"};
    for (int i = 0; i < 5; i++) s->e[i] = (struct st_entry){names[i], s->t[i]};
}

static void sample_free(struct sample *s)
{
    for (int i = 0; i < 5; i++) tn_release(s->t[i]);
}

/* A fresh sample saved with metadata `meta` into the scratch file `name`; the file's path. */
static const char *save_sample(struct sample *s, const char *name, const char *const *meta)
{
    sample_new(s);
    const char *path = lg_test_tmpfile(name);
    cr_assert_eq(st_save(T, path, s->e, 5, meta), LG_OK, "%s", lg_errmsg());
    return path;
}

/* The file at path, which must open; closed with st_close. */
static struct st_file *open_ok(const char *path)
{
    struct st_file *f = NULL;
    cr_assert_eq(st_open(&f, T, path), LG_OK, "%s: %s", path, lg_errmsg());
    return f;
}

/* The whole file at path, which must exist (its size in *n); freed with free. */
static char *slurp(const char *path, size_t *n)
{
    char *buf = lg_slurp(path, n);
    cr_assert_not_null(buf, "open %s", path);
    return buf;
}

static const char *const META[] = {"config", "{\"preset\":\"tiny\",\"hidden\":16}", "note",
                                   "gr\xc3\xbc\xc3\x9f \"quoted\"", NULL};

Test(safetensors, round_trip_of_every_dtype_and_the_metadata)
{
    struct sample s;
    const char *path = save_sample(&s, "rt.safetensors", META);

    struct st_file *f = open_ok(path);
    cr_assert_str_eq(st_path(f), path);
    cr_assert_eq(st_count(f), 5);
    uint64_t pos = 0;
    for (int i = 0; i < 5; i++) { /* file order is the order written */
        const struct st_info *in = st_info(f, i);
        cr_assert_str_eq(in->name, s.e[i].name);
        cr_assert_eq(in->dtype, s.t[i]->dtype);
        cr_assert_eq(in->ndim, s.t[i]->ndim);
        for (int d = 0; d < in->ndim; d++) cr_assert_eq(in->shape[d], s.t[i]->ne[d]);
        cr_assert_eq(in->begin, pos, "contiguous offsets");
        pos = in->end;
        cr_assert_eq(st_nbytes(f, i), tn_nbytes(s.t[i]));
        cr_assert_eq(st_find(f, in->name), i);

        struct tn_tensor *back = tn_new(T, in->dtype, TN_CPU, in->ndim, in->shape, "ckpt/back");
        cr_assert_eq(st_read(f, i, tn_data(back), tn_nbytes(back)), LG_OK, "%s", lg_errmsg());
        cr_assert_eq(memcmp(tn_data(back), tn_data(s.t[i]), tn_nbytes(back)), 0, "%s bitwise",
                     in->name);
        tn_release(back);
    }
    cr_assert_eq(st_find(f, "nope"), -1);
    cr_assert_eq(st_meta_count(f), 2);
    cr_assert_str_eq(st_meta(f, "config"), META[1]);
    cr_assert_str_eq(st_meta(f, "note"), META[3]);
    cr_assert_null(st_meta(f, "missing"));
    const char *k, *v;
    st_meta_at(f, 1, &k, &v);
    cr_assert_str_eq(k, "note");
    st_close(f);
    sample_free(&s);
}

Test(safetensors, header_is_padded_to_8_and_offsets_tile_the_buffer)
{
    struct sample s;
    sample_new(&s);
    size_t sizes[5], total = 0;
    for (int i = 0; i < 5; i++) total += sizes[i] = tn_nbytes(s.t[i]);
    /* metadata of each length mod 8 exercises every amount of padding */
    for (int extra = 0; extra < 8; extra++) {
        char val[16] = "";
        memset(val, 'x', (size_t)extra);
        const char *meta[] = {"k", val, NULL};
        const char *path = lg_test_tmpfile("pad.safetensors");
        cr_assert_eq(st_save(T, path, s.e, 5, meta), LG_OK, "%s", lg_errmsg());
        size_t n;
        char *raw = slurp(path, &n);
        uint64_t hlen = 0;
        for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | (uint8_t)raw[i];
        cr_assert_eq(hlen % 8, 0, "header length %llu padded to 8", (unsigned long long)hlen);
        cr_assert_eq(n, 8 + hlen + total, "file = length + header + data");
        size_t end = 8 + hlen;
        while (end > 8 && raw[end - 1] == ' ') end--;
        cr_assert_eq(raw[end - 1], '}', "JSON then spaces only");
        cr_assert_lt(8 + hlen - end, 8, "at most 7 bytes of padding");
        json_error_t jerr;
        json_t *h = json_loadb(raw + 8, end - 8, 0, &jerr);
        cr_assert_not_null(h, "%s", jerr.text);
        uint64_t pos = 0;
        for (int i = 0; i < 5; i++) {
            json_t *o = json_object_get(json_object_get(h, s.e[i].name), "data_offsets");
            cr_assert_eq(json_integer_value(json_array_get(o, 0)), (json_int_t)pos);
            pos += sizes[i];
            cr_assert_eq(json_integer_value(json_array_get(o, 1)), (json_int_t)pos);
        }
        cr_assert_str_eq(
            json_string_value(json_object_get(json_object_get(h, "__metadata__"), "k")), val);
        json_decref(h);
        free(raw);
    }
    sample_free(&s);
}

Test(safetensors, an_independent_python_reader_agrees)
{
    if (system("python3 -c 'import json, struct' >/dev/null 2>&1") != 0)
        cr_skip_test("python3 is not installed");
    struct sample s;
    const char *path = save_sample(&s, "py.safetensors", META);
    char out[600], cmd[2048];
    snprintf(out, sizeof out, "%s/py.json", lg_test_tmpdir());
    snprintf(cmd, sizeof cmd, "python3 '%s/../tools/st_read.py' '%s' > '%s'", lg_test_data_dir(),
             path, out);
    cr_assert_eq(system(cmd), 0, "st_read.py rejected our file: %s", cmd);

    json_error_t jerr;
    json_t *r = json_load_file(out, 0, &jerr);
    cr_assert_not_null(r, "%s", jerr.text);
    cr_assert_eq(json_integer_value(json_object_get(r, "header_len")) % 8, 0);
    json_t *meta = json_object_get(r, "metadata");
    cr_assert_str_eq(json_string_value(json_object_get(meta, "config")), META[1]);
    cr_assert_str_eq(json_string_value(json_object_get(meta, "note")), META[3]);
    json_t *tens = json_object_get(r, "tensors");
    cr_assert_eq(json_object_size(tens), 5);
    for (int i = 0; i < 5; i++) {
        const struct tn_tensor *t = s.t[i];
        json_t *o = json_object_get(tens, s.e[i].name);
        cr_assert_not_null(o, "%s listed", s.e[i].name);
        cr_assert_str_eq(json_string_value(json_object_get(o, "dtype")), tn_dtype_name(t->dtype));
        json_t *shape = json_object_get(o, "shape");
        cr_assert_eq((int)json_array_size(shape), t->ndim);
        for (int d = 0; d < t->ndim; d++)
            cr_assert_eq(json_integer_value(json_array_get(shape, (size_t)d)), t->ne[d]);
        json_t *vals = json_object_get(o, "values");
        cr_assert_eq((int64_t)json_array_size(vals), tn_numel(t));
        for (int64_t j = 0; j < tn_numel(t); j++) {
            json_t *x = json_array_get(vals, (size_t)j);
            if (t->dtype == TN_F32) {
                float got = (float)json_number_value(x), want = tn_f32(t)[j];
                cr_assert_eq(memcmp(&got, &want, 4), 0, "%s[%lld]: %g vs %g", s.e[i].name,
                             (long long)j, (double)got, (double)want);
            } else {
                int64_t want = t->dtype == TN_I8 ? tn_i8(t)[j] : tn_i32(t)[j];
                cr_assert_eq(json_integer_value(x), want, "%s[%lld]", s.e[i].name, (long long)j);
            }
        }
    }
    json_decref(r);
    sample_free(&s);
}

/* ---- the malformed corpus ------------------------------------------------------------ */

struct expected {
    char file[128];
    char phrase[128];
};

static int load_expected(const char *dir, struct expected *ex, int max)
{
    char path[600], line[400];
    snprintf(path, sizeof path, "%s/expected.tsv", dir);
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "%s (run tests/tools/make_bad_safetensors.py)", path);
    int n = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#') continue;
        char *tab = strchr(line, '\t');
        cr_assert_not_null(tab, "expected.tsv: %s", line);
        *tab = '\0';
        line[strcspn(line, "\n")] = '\0';
        tab[1 + strcspn(tab + 1, "\n")] = '\0';
        cr_assert_lt(n, max);
        lg_strlcpy(ex[n].file, line, sizeof ex[n].file);
        lg_strlcpy(ex[n].phrase, tab + 1, sizeof ex[n].phrase);
        n++;
    }
    fclose(fp);
    return n;
}

Test(safetensors, every_file_of_the_bad_corpus_is_rejected_cleanly)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/safetensors/bad", lg_test_data_dir());
    static struct expected ex[256];
    int n_ex = load_expected(dir, ex, 256), seen_listed = 0, seen = 0;
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "expected.tsv") == 0) continue;
        char path[800];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct st_file *f = (struct st_file *)&f; /* must be reset to NULL */
        lg_clear_error();
        int rc = st_open(&f, T, path);
        cr_expect_eq(rc, LG_EFORMAT, "%s: %s (%s)", de->d_name, lg_status_name(rc), lg_errmsg());
        cr_expect_null(f, "%s: handle left set", de->d_name);
        cr_expect(strstr(lg_errmsg(), path) != NULL, "%s: message does not name the file: %s",
                  de->d_name, lg_errmsg());
        for (int i = 0; i < n_ex; i++)
            if (strcmp(ex[i].file, de->d_name) == 0) {
                seen_listed++;
                cr_expect(strstr(lg_errmsg(), ex[i].phrase) != NULL,
                          "%s: message \"%s\" lacks \"%s\"", de->d_name, lg_errmsg(), ex[i].phrase);
            }
        cr_expect_eq(live_host(), 0, "%s: %lld tagged bytes left after the rejection", de->d_name,
                     (long long)live_host());
        if (rc == LG_OK) st_close(f);
        seen++;
    }
    closedir(d);
    cr_assert_eq(seen_listed, n_ex, "every file of expected.tsv is present");
    cr_assert_geq(n_ex, 40, "the generated corpus");
    cr_log_info("%d malformed files rejected (%d from expected.tsv)", seen, n_ex);
}

Test(safetensors, every_file_of_the_good_corpus_opens_and_reads)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/safetensors/good", lg_test_data_dir());
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    struct dirent *de;
    int seen = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[800];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct st_file *f = open_ok(path);
        for (int i = 0; i < st_count(f); i++) {
            size_t nb = st_nbytes(f, i);
            void *buf = trk_alloc(T, nb, "ckpt/test");
            cr_assert_eq(st_read(f, i, buf, nb), LG_OK, "%s", lg_errmsg());
            trk_free(T, buf);
        }
        if (strcmp(de->d_name, "mixed_dtypes.safetensors") == 0) {
            int q = st_find(f, "q");
            cr_assert_geq(q, 0);
            int8_t v[3];
            cr_assert_eq(st_read(f, q, v, 3), LG_OK);
            cr_assert(v[0] == 1 && v[1] == -1 && v[2] == 127);
            cr_assert_eq(st_info(f, st_find(f, "empty"))->shape[0], 0);
        }
        st_close(f);
        seen++;
    }
    closedir(d);
    cr_assert_geq(seen, 4);
}

/* ---- I/O errors and the atomic replace --------------------------------------------------- */

Test(safetensors, missing_files_and_directories_are_io_errors_naming_the_path)
{
    struct st_file *f = NULL;
    const char *path = lg_test_tmpfile("does-not-exist.safetensors");
    cr_assert_eq(st_open(&f, T, path), LG_EIO);
    cr_assert_null(f);
    cr_assert(strstr(lg_errmsg(), path), "%s", lg_errmsg());
    cr_assert_eq(st_open(&f, T, lg_test_tmpdir()), LG_EIO);
    cr_assert(strstr(lg_errmsg(), "not a regular file"), "%s", lg_errmsg());
}

Test(safetensors, a_failed_save_leaves_the_old_file_and_no_tmp)
{
    struct sample s;
    sample_new(&s);
    const char *p = lg_test_tmpfile("keep.safetensors");
    char path[512], tmp[520];
    lg_strlcpy(path, p, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_assert_eq(st_save(T, path, s.e, 2, NULL), LG_OK, "%s", lg_errmsg());
    cr_assert_not(lg_exists(tmp), "no .tmp after success");
    size_t n0;
    char *before = slurp(path, &n0);

    struct st_entry dup[2] = {{"x", s.t[0]}, {"x", s.t[1]}};
    cr_assert_eq(st_save(T, path, dup, 2, NULL), LG_EINVAL);
    cr_assert(strstr(lg_errmsg(), "appears twice"), "%s", lg_errmsg());
    struct st_entry reserved[1] = {{"__metadata__", s.t[0]}};
    cr_assert_eq(st_save(T, path, reserved, 1, NULL), LG_EINVAL);
    const char *bad_utf8[] = {"k", "\xff", NULL};
    cr_assert_eq(st_save(T, path, s.e, 1, bad_utf8), LG_EINVAL);

    size_t n1;
    char *after = slurp(path, &n1);
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0, "old checkpoint intact");
    cr_assert_not(lg_exists(tmp));
    free(before);
    free(after);

    const char *nodir = lg_test_tmpfile("no/such/dir/x.safetensors");
    cr_assert_eq(st_save(T, nodir, s.e, 5, NULL), LG_EIO);
    cr_assert(strstr(lg_errmsg(), "x.safetensors.tmp") && strstr(lg_errmsg(), "No such file"), "%s",
              lg_errmsg());
    /* a rename onto a directory fails after the data is written: the .tmp must go */
    char dirpath[512], dirtmp[520];
    snprintf(dirpath, sizeof dirpath, "%s/adir", lg_test_tmpdir());
    snprintf(dirtmp, sizeof dirtmp, "%s.tmp", dirpath);
    cr_assert_eq(mkdir(dirpath, 0755), 0);
    cr_assert_eq(st_save(T, dirpath, s.e, 5, NULL), LG_EIO);
    cr_assert(strstr(lg_errmsg(), "rename"), "%s", lg_errmsg());
    cr_assert_not(lg_exists(dirtmp), "the .tmp was removed");
    sample_free(&s);
}

Test(safetensors, read_checks_the_size_and_a_truncated_file_is_an_io_error)
{
    struct sample s;
    const char *path = save_sample(&s, "trunc.safetensors", NULL);
    struct st_file *f = open_ok(path);
    float buf[15];
    cr_assert_eq(st_read(f, 0, buf, 14 * sizeof(float)), LG_EINVAL);
    cr_assert(strstr(lg_errmsg(), "asked to read"), "%s", lg_errmsg());
    cr_assert_eq(truncate(path, 16), 0); /* under the open handle */
    cr_assert_eq(st_read(f, 0, buf, sizeof buf), LG_EIO);
    cr_assert(strstr(lg_errmsg(), path), "%s", lg_errmsg());
    st_close(f);
    sample_free(&s);
}

Test(safetensors, many_tensors_are_found_by_name_and_nothing_is_staged)
{
    enum { N = 600 };
    struct tn_tensor *t[N];
    struct st_entry e[N];
    static char names[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "layer%03d.w", (i * 337) % N); /* shuffled */
        t[i] = tn_new_f32(T, "ckpt/test.t", 1, (int64_t[]){i % 5 == 0 ? 4096 : 3});
        tn_fill(t[i], (float)i);
        e[i] = (struct st_entry){names[i], t[i]};
    }
    const char *path = lg_test_tmpfile("many.safetensors");
    trk_reset_peaks(T);
    struct trk_totals before;
    trk_totals(T, TRK_HOST, &before);
    cr_assert_eq(st_save(T, path, e, N, NULL), LG_OK, "%s", lg_errmsg());
    struct trk_totals after;
    trk_totals(T, TRK_HOST, &after);
    /* the writer's only tracked buffer is the header (~70 B a tensor), not the data */
    cr_assert_lt(after.peak_bytes - before.live_bytes, 64 * 1024, "writer staged %lld bytes",
                 (long long)(after.peak_bytes - before.live_bytes));

    struct st_file *f = open_ok(path);
    cr_assert_eq(st_count(f), N);
    for (int i = 0; i < N; i++) {
        int k = st_find(f, names[i]);
        cr_assert_eq(k, i, "%s", names[i]);
        float v;
        if (tn_numel(t[i]) == 3) {
            float b[3];
            cr_assert_eq(st_read(f, k, b, sizeof b), LG_OK);
            v = b[2];
        } else {
            v = (float)i;
        }
        cr_assert_eq(v, (float)i);
    }
    st_close(f);
    for (int i = 0; i < N; i++) tn_release(t[i]);
}
