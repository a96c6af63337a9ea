/* data_csv.c — a data set from a CSV file and its JSON column roles (format: data.h).
 * The text is split into fields (data_csv_read.c), rows are grouped by series and sorted by
 * time, every value is checked and converted, and the series go through the same split and
 * normalisation as synthetic ones (data_set.c). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data_impl.h"

/* ---- a string → integer map (open addressing; keys point into the table's text) ------- */

struct strmap {
    struct trk_tracker *trk;
    const char **key;
    int64_t *val;
    size_t cap, n;
};

static int strmap_init(struct strmap *m, struct trk_tracker *trk, size_t max_keys)
{
    memset(m, 0, sizeof *m);
    m->trk = trk;
    m->cap = 16;
    while (m->cap < 2 * max_keys + 1) m->cap *= 2;
    m->key = trk_calloc(trk, m->cap * sizeof *m->key, "data/csv.map");
    m->val = trk_alloc(trk, m->cap * sizeof *m->val, "data/csv.map");
    if (!m->key || !m->val) return lg_fail(LG_ENOMEM, "data: out of memory for %zu keys", max_keys);
    return LG_OK;
}

static void strmap_fini(struct strmap *m)
{
    trk_free(m->trk, m->key);
    trk_free(m->trk, m->val);
    memset(m, 0, sizeof *m);
}

/* The value slot of `key`: an existing one, or a new one set to `val` (*added = true).
 * The map never fills: it was sized for every key it can be given. */
static int64_t *strmap_put(struct strmap *m, const char *key, int64_t val, bool *added)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    size_t i = (size_t)h & (m->cap - 1);
    while (m->key[i] && strcmp(m->key[i], key) != 0) i = (i + 1) & (m->cap - 1);
    *added = !m->key[i];
    if (*added) {
        LG_ASSERT(m->n + 1 < m->cap && "strmap sized too small");
        m->key[i] = key, m->val[i] = val, m->n++;
    }
    return &m->val[i];
}

/* ---- the loader ------------------------------------------------------------------------ */

struct loader {
    struct trk_tracker *trk;
    const char *csv, *json; /* names for messages */
    struct data_csv_roles r;
    struct data_csv_table t;
    int64_t col_id, col_time, col[TFT_MAX_VARS];
    int64_t n; /* data rows; row i is record i + 1 */
    int n_series;
    int64_t *first; /* [n_series + 1] into order ("data/csv.series") */
    int64_t *order; /* [n] records by series, then time ("data/csv.order") */
    double *tkey;   /* [n_rec] numeric times, when every time is a number */
    struct data_set *ds;
};

static const char *field(const struct loader *L, int64_t rec, int64_t col)
{
    return data_csv_field(&L->t, rec, col);
}

/* "example.csv:17: column 'sales' (3): " into buf. */
static const char *where(const struct loader *L, int64_t rec, int64_t col, char *buf, size_t size)
{
    lg_snprintf(buf, size, "%s:%lld: column '%.60s' (%lld)", L->csv, (long long)L->t.line[rec],
                field(L, 0, col), (long long)col + 1);
    return buf;
}

/* Parses a finite float: 0, or 1 empty, 2 not a number, 3 not finite in float. */
static int parse_real(const char *s, double *out)
{
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) return 1;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s) return 2;
    while (*end == ' ' || *end == '\t') end++;
    if (*end) return 2;
    if (!isfinite(x) || fabs(x) > FLT_MAX) return 3;
    *out = x;
    return 0;
}

/* A non-negative decimal integer of at most 9 digits. */
static bool parse_index(const char *s, int64_t *out)
{
    int64_t x = 0;
    int n = 0;
    for (; *s >= '0' && *s <= '9' && n < 10; s++, n++) x = x * 10 + (*s - '0');
    if (*s || n == 0 || n > 9) return false;
    *out = x;
    return true;
}

static int real_at(const struct loader *L, int64_t rec, int64_t col, double *x)
{
    char wb[160];
    const char *s = field(L, rec, col);
    switch (parse_real(s, x)) {
    case 0: return LG_OK;
    case 1:
        return lg_fail(LG_EFORMAT, "%s: empty value, a number is needed",
                       where(L, rec, col, wb, sizeof wb));
    case 2:
        return lg_fail(LG_EFORMAT, "%s: '%.40s' is not a number", where(L, rec, col, wb, sizeof wb),
                       s);
    default:
        return lg_fail(LG_EFORMAT, "%s: '%.40s' is not a finite 32-bit number",
                       where(L, rec, col, wb, sizeof wb), s);
    }
}

/* Finds every column the config names (the header must not repeat a name). */
static int find_columns(struct loader *L)
{
    struct strmap m;
    int rc = strmap_init(&m, L->trk, (size_t)L->t.ncol);
    for (int64_t j = 0; rc == LG_OK && j < L->t.ncol; j++) {
        bool added;
        int64_t *v = strmap_put(&m, field(L, 0, j), j, &added);
        if (!added)
            rc = lg_fail(
                LG_EFORMAT, "%s:%lld: column '%.60s' appears twice (columns %lld and %lld)", L->csv,
                (long long)L->t.line[0], field(L, 0, j), (long long)*v + 1, (long long)j + 1);
    }
    const struct tft_config *c = &L->r.cfg;
    for (int k = -2; rc == LG_OK && k < c->n_vars; k++) {
        const char *want = k == -2 ? L->r.id : k == -1 ? L->r.time : L->r.column[k];
        bool added;
        int64_t *v = strmap_put(&m, want, -1, &added);
        if (added)
            rc = lg_fail(LG_EFORMAT,
                         "%s:%lld: no column '%.60s' in the header (%s names it as %s%s)", L->csv,
                         (long long)L->t.line[0], want, L->json,
                         k == -2   ? "the id"
                         : k == -1 ? "the time"
                                   : "variable ",
                         k >= 0 ? c->vars[k].name : "");
        else if (k == -2)
            L->col_id = *v;
        else if (k == -1)
            L->col_time = *v;
        else
            L->col[k] = *v;
    }
    strmap_fini(&m);
    return rc;
}

/* Records a before b: by time (numeric or byte order), then by position in the file. */
static int before(const void *ctx, int64_t a, int64_t b)
{
    const struct loader *L = ctx;
    int c;
    if (L->tkey)
        c = L->tkey[a] < L->tkey[b] ? -1 : L->tkey[a] > L->tkey[b];
    else
        c = strcmp(field(L, a, L->col_time), field(L, b, L->col_time));
    return c < 0 || (c == 0 && a < b);
}

/* Sorts a[0..n) by `less` (a strict total order); tmp holds n elements. */
static void merge_sort(int (*less)(const void *, int64_t, int64_t), const void *ctx, int64_t *a,
                       int64_t *tmp, int64_t n)
{
    if (n < 2) return;
    int64_t h = n / 2, i = 0, j = h, k = 0;
    merge_sort(less, ctx, a, tmp, h);
    merge_sort(less, ctx, a + h, tmp, n - h);
    while (i < h && j < n) tmp[k++] = less(ctx, a[j], a[i]) ? a[j++] : a[i++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, (size_t)n * sizeof *a);
}

/* Groups rows by id (series in order of first appearance) and sorts each series by time. */
static int group_rows(struct loader *L)
{
    struct strmap m;
    int64_t *sid = NULL, *tmp = NULL;
    int rc = strmap_init(&m, L->trk, (size_t)L->n);
    if (rc != LG_OK) goto cleanup;
    sid = trk_alloc(L->trk, (size_t)L->n * sizeof *sid, "data/csv.order");
    tmp = trk_alloc(L->trk, (size_t)L->n * sizeof *tmp, "data/csv.order");
    L->order = trk_alloc(L->trk, (size_t)L->n * sizeof *L->order, "data/csv.order");
    L->tkey = trk_alloc(L->trk, (size_t)(L->n + 1) * sizeof *L->tkey, "data/csv.time");
    if (!sid || !tmp || !L->order || !L->tkey) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory for %lld rows", L->csv, (long long)L->n);
        goto cleanup;
    }
    for (int64_t i = 0; i < L->n; i++) {
        bool added;
        sid[i] = *strmap_put(&m, field(L, i + 1, L->col_id), (int64_t)m.n, &added);
    }
    L->n_series = (int)m.n;
    L->first = trk_calloc(L->trk, ((size_t)L->n_series + 1) * sizeof *L->first, "data/csv.series");
    if (!L->first) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory for %d series", L->csv, L->n_series);
        goto cleanup;
    }
    for (int64_t i = 0; i < L->n; i++) L->first[sid[i] + 1]++;
    for (int s = 0; s < L->n_series; s++) L->first[s + 1] += L->first[s];
    memset(tmp, 0, (size_t)L->n * sizeof *tmp); /* counting sort, file order kept */
    for (int64_t i = 0; i < L->n; i++) L->order[L->first[sid[i]] + tmp[sid[i]]++] = i + 1;
    for (int64_t i = 1; i <= L->n; i++) /* numeric times when every one is a number */
        if (parse_real(field(L, i, L->col_time), &L->tkey[i]) != 0) {
            trk_free(L->trk, L->tkey);
            L->tkey = NULL;
            break;
        }
    for (int s = 0; s < L->n_series; s++) {
        int64_t *a = L->order + L->first[s], len = L->first[s + 1] - L->first[s];
        merge_sort(before, L, a, tmp, len);
        for (int64_t k = 1; k < len; k++)
            if (L->tkey ? L->tkey[a[k - 1]] == L->tkey[a[k]]
                        : !strcmp(field(L, a[k - 1], L->col_time), field(L, a[k], L->col_time))) {
                char wb[160];
                int64_t r1 = LG_MIN(a[k - 1], a[k]), r2 = LG_MAX(a[k - 1], a[k]);
                rc = lg_fail(LG_EFORMAT, "%s: time '%.40s' of series '%.40s' repeats line %lld",
                             where(L, r2, L->col_time, wb, sizeof wb), field(L, r2, L->col_time),
                             field(L, r2, L->col_id), (long long)L->t.line[r1]);
                goto cleanup;
            }
    }
cleanup:
    trk_free(L->trk, sid);
    trk_free(L->trk, tmp);
    strmap_fini(&m);
    return rc;
}

/* Every series must hold one window of T_enc + T_dec steps. */
static int check_lengths(const struct loader *L)
{
    int64_t T = L->r.cfg.T_enc + L->r.cfg.T_dec;
    for (int s = 0; s < L->n_series; s++) {
        int64_t len = L->first[s + 1] - L->first[s], rec = L->order[L->first[s]];
        for (int64_t k = 1; k < len; k++) rec = LG_MIN(rec, L->order[L->first[s] + k]);
        if (len < T) {
            char wb[160];
            return lg_fail(LG_EFORMAT,
                           "%s: series '%.40s' has %lld rows, fewer than T_enc + T_dec"
                           " = %lld",
                           where(L, rec, L->col_id, wb, sizeof wb), field(L, rec, L->col_id),
                           (long long)len, (long long)T);
        }
    }
    return LG_OK;
}

/* A static's value must be the same on every row of a series: `k` is the row's place in
 * its series (0 is where the value was taken from). */
static int static_differs(const struct loader *L, int v, int s, int64_t k)
{
    char wb[160];
    int64_t rec = L->order[L->first[s] + k], rec0 = L->order[L->first[s]];
    return lg_fail(LG_EFORMAT,
                   "%s: static value '%.40s' differs from '%.40s' on line %lld in "
                   "series '%.40s'",
                   where(L, rec, L->col[v], wb, sizeof wb), field(L, rec, L->col[v]),
                   field(L, rec0, L->col[v]), (long long)L->t.line[rec0], field(L, rec, L->col_id));
}

static int fill_real(struct loader *L, int v)
{
    struct data_set *ds = L->ds;
    float *dst = data_col_f32(ds, v);
    bool is_static = ds->cfg.vars[v].role == TFT_STATIC;
    for (int s = 0; s < L->n_series; s++)
        for (int64_t k = 0; k < L->first[s + 1] - L->first[s]; k++) {
            double x;
            int rc = real_at(L, L->order[L->first[s] + k], L->col[v], &x);
            if (rc != LG_OK) return rc;
            if (!is_static)
                dst[ds->start[s] + k] = (float)x;
            else if (k == 0)
                dst[s] = (float)x;
            else if (dst[s] != (float)x)
                return static_differs(L, v, s, k);
        }
    return LG_OK;
}

/* Label order: numerically when both are numbers, else bytewise; then by text. */
struct label_sort {
    const char **label;
    const double *num; /* NULL unless every label is a number */
};
static int label_before(const void *ctx, int64_t a, int64_t b)
{
    const struct label_sort *c = ctx;
    if (c->num && c->num[a] != c->num[b]) return c->num[a] < c->num[b];
    return strcmp(c->label[a], c->label[b]) < 0;
}

/* Maps categorical values to indices (data.h: given cardinality and integer codes keep their
 * value, else sorted distinct labels), fills the column and sets the cardinality. */
static int fill_cat(struct loader *L, int v)
{
    struct data_set *ds = L->ds;
    struct tft_var *var = &ds->cfg.vars[v];
    int64_t given = var->cardinality, col = L->col[v], n = L->n;
    struct strmap m = {0};
    int64_t *idx = trk_alloc(L->trk, (size_t)(n + 1) * sizeof *idx, "data/csv.cat");
    int64_t *perm = trk_alloc(L->trk, (size_t)n * sizeof *perm, "data/csv.cat");
    int64_t *tmp = trk_alloc(L->trk, (size_t)n * sizeof *tmp, "data/csv.cat");
    const char **label = trk_alloc(L->trk, (size_t)n * sizeof *label, "data/csv.cat");
    double *num = trk_alloc(L->trk, (size_t)n * sizeof *num, "data/csv.cat");
    int rc = LG_OK;
    if (!idx || !perm || !tmp || !label || !num) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory for column '%s'", L->csv, var->name);
        goto cleanup;
    }
    bool identity = given > 0;
    for (int64_t rec = 1; rec <= n && identity; rec++)
        identity = parse_index(field(L, rec, col), &idx[rec]) && idx[rec] < given;
    int64_t card = given;
    if (!identity) {
        if ((rc = strmap_init(&m, L->trk, (size_t)n)) != LG_OK) goto cleanup;
        bool numeric = true;
        for (int64_t rec = 1; rec <= n; rec++) {
            bool added;
            const char *f = field(L, rec, col);
            idx[rec] = *strmap_put(&m, f, (int64_t)m.n, &added); /* the label's slot for now */
            if (!added) continue;
            if (given && (int64_t)m.n > given) {
                char wb[160];
                rc = lg_fail(LG_EFORMAT,
                             "%s: '%.40s' is distinct value number %zu of a categorical"
                             " with cardinality %lld",
                             where(L, rec, col, wb, sizeof wb), f, m.n, (long long)given);
                goto cleanup;
            }
            label[idx[rec]] = f;
            numeric = numeric && parse_real(f, &num[idx[rec]]) == 0;
        }
        struct label_sort ls = {label, numeric ? num : NULL};
        for (int64_t i = 0; i < (int64_t)m.n; i++) perm[i] = i;
        merge_sort(label_before, &ls, perm, tmp, (int64_t)m.n);
        for (int64_t i = 0; i < (int64_t)m.n; i++) tmp[perm[i]] = i; /* slot -> index */
        for (int64_t rec = 1; rec <= n; rec++) idx[rec] = tmp[idx[rec]];
        if (!given) card = (int64_t)m.n;
    }
    int32_t *dst = data_col_i32(ds, v);
    for (int s = 0; s < L->n_series; s++)
        for (int64_t k = 0; k < L->first[s + 1] - L->first[s]; k++) {
            int32_t x = (int32_t)idx[L->order[L->first[s] + k]];
            if (var->role != TFT_STATIC)
                dst[ds->start[s] + k] = x;
            else if (k == 0)
                dst[s] = x;
            else if (dst[s] != x) {
                rc = static_differs(L, v, s, k);
                goto cleanup;
            }
        }
    var->cardinality = (int)card;
cleanup:
    strmap_fini(&m);
    trk_free(L->trk, idx);
    trk_free(L->trk, perm);
    trk_free(L->trk, tmp);
    trk_free(L->trk, label);
    trk_free(L->trk, num);
    return rc;
}

int data_parse_csv(struct data_set **out, struct tft_config *cfg, struct trk_tracker *trk,
                   const char *csv, size_t csv_len, const char *csv_name, const char *json,
                   size_t json_len, const char *json_name)
{
    struct loader L = {.trk = trk, .csv = csv_name, .json = json_name};
    int64_t *len = NULL;
    int rc = data_csv_roles_parse(&L.r, json, json_len, json_name);
    if (rc != LG_OK) return rc;
    if ((rc = data_csv_read(&L.t, trk, csv, csv_len, csv_name)) != LG_OK) goto cleanup;
    L.n = L.t.n_rec - 1;
    if (L.n == 0) {
        rc = lg_fail(LG_EFORMAT, "%s:%lld: no data rows after the header", csv_name,
                     (long long)L.t.line[0] + 1);
        goto cleanup;
    }
    if ((rc = find_columns(&L)) || (rc = group_rows(&L)) || (rc = check_lengths(&L))) goto cleanup;
    len = trk_alloc(trk, (size_t)L.n_series * sizeof *len, "data/csv.series");
    if (!len) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory", csv_name);
        goto cleanup;
    }
    for (int s = 0; s < L.n_series; s++) len[s] = L.first[s + 1] - L.first[s];
    if ((rc = data_set_alloc(&L.ds, trk, &L.r.cfg, L.n_series, len)) != LG_OK) goto cleanup;
    L.ds->season = L.r.season;
    for (int v = 0; v < L.r.cfg.n_vars && rc == LG_OK; v++)
        rc = L.r.cfg.vars[v].kind == TFT_CAT ? fill_cat(&L, v) : fill_real(&L, v);
    if (rc != LG_OK) goto cleanup;
    if ((rc = tft_config_validate(&L.ds->cfg)) != LG_OK) {
        rc = lg_fail_ctx(LG_EFORMAT, "%s: ", json_name);
        goto cleanup;
    }
    if ((rc = data_set_finish(L.ds, L.r.val_steps)) != LG_OK) goto cleanup;
    if (L.ds->n_val == 0) { /* every session validates: say so here, not in its first one */
        int64_t longest = 0, need = L.r.cfg.T_enc + L.r.cfg.T_dec + (int64_t)L.r.val_steps;
        for (int s = 0; s < L.n_series; s++) longest = LG_MAX(longest, len[s]);
        rc = lg_fail(LG_EFORMAT,
                     "%s: val_steps %lld leaves no validation window: a series needs T_enc + "
                     "T_dec + val_steps = %lld rows for one, and the longest in %s has %lld",
                     json_name, (long long)L.r.val_steps, (long long)need, csv_name,
                     (long long)longest);
        goto cleanup;
    }
    *out = L.ds;
    *cfg = L.ds->cfg;
    L.ds = NULL;
cleanup:
    data_free(L.ds);
    trk_free(trk, len);
    trk_free(trk, L.first);
    trk_free(trk, L.order);
    trk_free(trk, L.tkey);
    data_csv_table_fini(&L.t);
    return rc;
}

/* Reads a whole file into a tracked buffer the caller frees with trk_free. */
static int read_file(struct trk_tracker *trk, const char *path, char **buf, size_t *len)
{
    *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return lg_fail(LG_EIO, "%s: cannot open: %s", path, strerror(errno));
    int rc = LG_OK;
    long size = -1;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = lg_fail(LG_EIO, "%s: not a regular file (a %s): give the CSV file itself", path,
                     S_ISDIR(st.st_mode) ? "directory" : "device, FIFO or socket");
        goto cleanup;
    }
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        rc = lg_fail(LG_EIO, "%s: cannot read: %s", path, strerror(errno));
        goto cleanup;
    }
    *buf = trk_alloc(trk, (size_t)size + 1, "data/csv.file");
    if (!*buf) {
        rc = lg_fail(LG_ENOMEM, "%s: out of memory for %ld bytes", path, size);
        goto cleanup;
    }
    if (fread(*buf, 1, (size_t)size, f) != (size_t)size) {
        rc = lg_fail(LG_EIO, "%s: short read", path);
        trk_free(trk, *buf);
        *buf = NULL;
        goto cleanup;
    }
    *len = (size_t)size;
cleanup:
    fclose(f);
    return rc;
}

int data_load_csv(struct data_set **out, struct tft_config *cfg, struct trk_tracker *trk,
                  const char *csv_path, const char *json_path)
{
    char *csv = NULL, *json = NULL;
    size_t csv_len = 0, json_len = 0;
    int rc = read_file(trk, json_path, &json, &json_len);
    if (rc == LG_OK) rc = read_file(trk, csv_path, &csv, &csv_len);
    if (rc == LG_OK)
        rc = data_parse_csv(out, cfg, trk, csv, csv_len, csv_path, json, json_len, json_path);
    trk_free(trk, csv);
    trk_free(trk, json);
    return rc;
}
