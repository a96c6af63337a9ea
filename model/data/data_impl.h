/* data_impl.h — the data set's insides, shared by data_set.c, data_synth.c, data_csv*.c and
 * data_batch.c. Not part of the public API (data.h). */
#ifndef LG_DATA_IMPL_H
#define LG_DATA_IMPL_H

#include "data.h"

struct data_set {
    struct trk_tracker *trk;
    struct tft_config cfg;
    uint64_t seed; /* shuffles the validation list */
    int season;
    char time_unit[8];
    int n_series;
    int64_t n_rows;     /* steps of all series together */
    int64_t *start;     /* [n_series + 1] first row of each series ("data/set.index") */
    int64_t *train_len; /* [n_series] ("data/set.index") */
    /* per variable (cfg.vars order): statics [n_series], observed and known [n_rows];
     * float for reals, int32_t for categoricals ("data/set.<var>") */
    void *col[TFT_MAX_VARS];
    struct data_scale scale[TFT_MAX_VARS]; /* reals; the target's is per series below */
    struct data_scale *target_scale;       /* [n_series] ("data/set.scale") */
    int64_t *train_cum;                    /* [n_series + 1] training windows before series s */
    int64_t n_val;
    struct data_window *val; /* [n_val] the fixed validation list ("data/set.windows") */
};

static inline float *data_col_f32(const struct data_set *ds, int v) { return (float *)ds->col[v]; }
static inline int32_t *data_col_i32(const struct data_set *ds, int v)
{
    return (int32_t *)ds->col[v];
}
static inline int64_t data_T(const struct data_set *ds) { return ds->cfg.T_enc + ds->cfg.T_dec; }

/* Allocates a data set for `cfg` with n_series series of the given lengths (each >= T);
 * columns are allocated uninitialised. *out is freed with data_free. LG_ENOMEM. */
int data_set_alloc(struct data_set **out, struct trk_tracker *trk, const struct tft_config *cfg,
                   int n_series, const int64_t *len);
/* Once the columns hold raw values: splits every series (the last val_steps steps are
 * validation when the series has T + val_steps steps, else it is all training),
 * normalises the reals over the training ranges, and builds the window lists.
 * LG_EINVAL when val_steps < T, LG_ENOMEM. */
int data_set_finish(struct data_set *ds, int64_t val_steps);

/* ---- CSV: the JSON column roles (data_csv_config.c) ------------------------------------ */

#define DATA_COL_NAME 256 /* CSV column names, NUL included */

struct data_csv_roles {
    char id[DATA_COL_NAME], time[DATA_COL_NAME]; /* columns naming the series and the step */
    struct tft_config cfg; /* spec order; categoricals without a given cardinality have 0 */
    char column[TFT_MAX_VARS][DATA_COL_NAME]; /* the CSV column of each variable */
    int season;
    int64_t val_steps;
};

/* Parses the JSON column-role config (data.h documents its keys); `name` is used in
 * messages. LG_EFORMAT with file, line and column for bad JSON, with the key for wrong types
 * and values. */
int data_csv_roles_parse(struct data_csv_roles *r, const char *json, size_t len, const char *name);

/* ---- CSV: the table of fields (data_csv_read.c) ------------------------------------------ */

struct data_csv_table {
    struct trk_tracker *trk;
    char *text;     /* the fields unquoted, each NUL-terminated ("data/csv.text") */
    int64_t *field; /* [n_rec * ncol] offset of each field in text ("data/csv.fields") */
    int64_t *line;  /* [n_rec] line where each record starts, the header first ("data/csv.lines") */
    int64_t n_rec, ncol;
    size_t fcap, lcap; /* capacities of field and line */
};

/* Splits RFC 4180 text into records of fields; every record must have the header's number of
 * fields. LG_EFORMAT naming file, line and column; LG_ENOMEM. The table is freed with
 * data_csv_table_fini, also after a failure. */
int data_csv_read(struct data_csv_table *t, struct trk_tracker *trk, const char *src, size_t len,
                  const char *name);
void data_csv_table_fini(struct data_csv_table *t);
static inline const char *data_csv_field(const struct data_csv_table *t, int64_t rec, int64_t col)
{
    return t->text + t->field[rec * t->ncol + col];
}

#endif
