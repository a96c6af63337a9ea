/* data.h — training data for the TFT: a seeded synthetic generator for any config, a CSV
 * loader driven by a JSON column-role config, batches laid out as tft.h's struct tft_batch,
 * and the seasonal-naive baseline with a plain-C pinball loss to judge forecasts against.
 *
 * Worked example (a synthetic data set, one training and one validation batch, the baseline):
 *
 *   struct tft_config cfg;
 *   tft_config_preset(&cfg, "tiny");
 *   struct data_set *ds = NULL;
 *   if (data_synth_new(&ds, trk, &cfg, &(struct data_synth_options){ .seed = 7 }) != LG_OK)
 *       die(lg_errmsg());                       // 64 day-level series, weekly season 7
 *   struct data_cursor cur;
 *   data_cursor_init(&cur, 42);                 // same seed, same training windows
 *   struct tft_batch b = {0};
 *   data_batch(ds, DATA_TRAIN, cfg.batch, &cur, &b);  // b.x[v] "data/<var>", b.y "data/y"
 *   tft_batch_fini(&b);
 *   data_cursor_init(&cur, 0);                  // validation: the fixed window list in order
 *   for (int64_t k = 0; k < data_n_batches(ds, DATA_VAL, 64); k++) {
 *       data_batch(ds, DATA_VAL, 64, &cur, &b);
 *       struct tn_tensor *naive = data_seasonal_naive(trk, &cfg, &b, data_season(ds));
 *       printf("%g\n", data_pinball(&cfg, naive, b.y));   // [B, T_dec, Q] against y
 *       tn_release(naive);
 *       tft_batch_fini(&b);
 *   }
 *   data_free(ds);
 *
 * Or from a CSV file and its column roles:
 *
 *   struct tft_config cfg;                      // filled from example.json
 *   int rc = data_load_csv(&ds, &cfg, trk, "example.csv", "example.json");
 *   if (rc != LG_OK) fprintf(stderr, "%s\n", lg_errmsg());
 *        // "example.csv:17: column 'sales' (3): 'abc' is not a number"
 *
 * A data set holds many series of one config's variables: per series its static values, per
 * time step its observed and known values. Reals are stored normalised (z-score per variable
 * over the training range of all series; the target per series over its own training range);
 * data_scaling gives the numbers back. Categoricals are indices in [0, cardinality).
 * All memory is tracked: the set under "data/set.*", batches under "data/<var>" and "data/y".
 *
 * Split by time: in every series, steps [0, train_len) are training and the rest validation.
 * Training windows lie wholly inside the training range and are drawn uniformly (with
 * replacement) from a cursor's seeded generator. Validation windows lie wholly after it: in
 * each series they start at train_len and every T_dec steps after while they fit, so their
 * targets tile the validation range; the list is fixed (shuffled once with the data set's
 * seed, so that any prefix is a fair sample) and validation loss is comparable across runs.
 *
 * Synthetic series (data_synth.c): per preset a time unit and a season — tiny: days, weekly
 * season 7 (dow = t mod 7); electricity: hours, daily season 24 (hour, day_of_week reals);
 * foxhunt-815: days, weekly season 7; any other config: hours with season 24 when a known
 * variable is named "hour", else days with season 7. Each series has a level and scale drawn
 * from its static covariates, a trend, daily/weekly seasonality, noise, promotions and
 * holidays that shift it; known inputs are calendar values, a time index and events that are
 * truly known in advance; extra observed reals are correlated with the target.
 *
 * CSV files (data_csv.c, data_csv_config.c): RFC 4180 — a header row naming the columns,
 * comma-separated fields, optional double quotes around a field (embedded commas, line
 * breaks and doubled quotes inside), LF or CRLF line endings, an optional UTF-8 BOM, blank
 * lines skipped, columns the config does not name ignored. Rows may come in any order: they
 * are grouped by the id column (series in order of first appearance) and sorted by the time
 * column within a series (numerically when every time value is a number, else as byte
 * strings, so ISO dates sort); two rows of a series with the same time are an error.
 * The JSON config (every key but those marked optional is required; unknown keys are errors):
 *
 *   { "id": "store",            column naming the series
 *     "time": "date",           column ordering the rows of a series
 *     "target": "sales",        real column: the target, first observed variable
 *     "static":   [ VAR, ... ], at least one; constant within a series
 *     "observed": [ VAR, ... ], optional: extra observed reals
 *     "known":    [ VAR, ... ], at least one: inputs known in advance
 *     "hidden": 16, "n_head": 4, "lstm_layers": 1, "T_enc": 8, "T_dec": 4,
 *     "quantiles": [0.1, 0.5, 0.9],           optional (this default)
 *     "name": "example",                      optional: the config's preset name ("csv")
 *     "season": 7,                            optional: seasonal-naive period, 1..T_enc (1)
 *     "val_steps": 12,                        optional: validation steps per series (T)
 *     "dropout": 0.1, "batch": 8, "lr": 1e-3, "max_grad_norm": 1.0 }   optional
 *   VAR = { "name": "store_type",             variable name (no '.' or '/')
 *           "kind": "categorical" | "real",
 *           "cardinality": 4,                 optional, categoricals only: else inferred
 *           "column": "Store Type" }          optional: the CSV column when not `name`
 * Variables take the spec order (static categoricals then reals; target then the other
 * observed; known categoricals then reals), each group in the config's order.
 * Categorical values may be any strings. With a given cardinality k and every value of the
 * column a decimal integer in [0, k), each value is its own index. Otherwise the distinct
 * values, sorted (as numbers when all are numbers, else as byte strings), get the indices
 * 0, 1, ...; the cardinality is their count, and more distinct values than a given k is an
 * error at the line of the first one too many. A series shorter than T_enc + T_dec is an
 * error; one shorter than T + val_steps is used for training only.
 * Every malformed input gives LG_EFORMAT and a message naming the file, the line and the
 * column ("sales.csv:17: column 'sales' (3): 'abc' is not a number"; JSON errors as
 * "example.json:4:12: ..." with Jansson's line and column). Files that cannot be read give
 * LG_EIO.
 */
#ifndef LG_DATA_H
#define LG_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "tft_config.h"

struct data_set;

enum data_split { DATA_TRAIN = 0, DATA_VAL = 1 };

/* One window: T_enc + T_dec consecutive steps of a series, from its first encoder step. */
struct data_window {
    int series;
    int64_t start;
};

/* Scaling of a real variable: raw = stored · std + mean. */
struct data_scale {
    double mean, std;
};

/* ---- making and freeing data sets ------------------------------------------------------ */

struct data_synth_options {
    uint64_t seed; /* same seed and config, same data (bit for bit) */
    int n_series;  /* 0: per preset (tiny 64, electricity 370, foxhunt-815 128, else 64) */
    int n_train;   /* training steps per series; 0: per preset (tiny 140, electricity 672,
                      foxhunt-815 365, else 12 seasons or 4·T, whichever is longer) */
    int val_steps; /* steps after the training range; 0: T + 2·T_dec (must be >= T) */
};

/* Generates synthetic series for any valid config; *out is freed with data_free.
 * LG_EINVAL for a bad config or options, LG_ENOMEM. */
int data_synth_new(struct data_set **out, struct trk_tracker *trk, const struct tft_config *cfg,
                   const struct data_synth_options *opt);

/* Loads a CSV file with the column roles of a JSON config (see the top of this file).
 * On success *out (freed with data_free) holds the series and *cfg the config built from the
 * JSON, with inferred cardinalities; on failure neither is touched. */
int data_load_csv(struct data_set **out, struct tft_config *cfg, struct trk_tracker *trk,
                  const char *csv_path, const char *json_path);
/* The same from memory; the names are used in messages. Neither buffer needs a NUL. */
int data_parse_csv(struct data_set **out, struct tft_config *cfg, struct trk_tracker *trk,
                   const char *csv, size_t csv_len, const char *csv_name, const char *json,
                   size_t json_len, const char *json_name);

/* Frees the data set and everything it holds; NULL does nothing. */
void data_free(struct data_set *ds);

/* ---- what a data set holds ----------------------------------------------------------------- */

const struct tft_config *data_config(const struct data_set *ds);
int data_n_series(const struct data_set *ds);
int64_t data_series_len(const struct data_set *ds, int s);
/* Steps [0, train_len) of series s are training, the rest validation. */
int64_t data_train_len(const struct data_set *ds, int s);
/* The seasonal-naive period in steps, and the time unit ("day", "hour", "step"). */
int data_season(const struct data_set *ds);
const char *data_time_unit(const struct data_set *ds);
/* The stored value of variable `var` (index into cfg->vars) for series s at step t (t is
 * ignored for statics): normalised for reals, the index for categoricals. */
float data_value(const struct data_set *ds, int var, int s, int64_t t);
/* How a real variable was normalised (the target: per series; other reals: s is ignored);
 * {0, 1} for categoricals. */
struct data_scale data_scaling(const struct data_set *ds, int var, int s);

/* Number of windows in a split. */
int64_t data_n_windows(const struct data_set *ds, enum data_split split);
/* The i-th window (0 <= i < data_n_windows): training windows series by series in time
 * order, validation windows in the fixed list's order. */
struct data_window data_window_at(const struct data_set *ds, enum data_split split, int64_t i);

/* ---- batches --------------------------------------------------------------------------- */

/* Where batches come from: a seeded generator for training, a position for validation. */
struct data_cursor {
    struct tn_rng rng;
    int64_t next;
};
void data_cursor_init(struct data_cursor *cur, uint64_t seed);

/* Fills *out (which must be zeroed or finished) with one batch; the caller frees it with
 * tft_batch_fini. DATA_TRAIN: B windows drawn uniformly from the training windows with
 * cur->rng. DATA_VAL: the next B windows of the fixed list from cur->next (fewer at the end
 * of the list; a cursor at the end starts over at 0); out->B says how many.
 * LG_EINVAL when B < 1 or the split has no windows; LG_ENOMEM. */
int data_batch(const struct data_set *ds, enum data_split split, int B, struct data_cursor *cur,
               struct tft_batch *out);
/* Batches needed to cover the validation list once with batches of B (training: 0). */
int64_t data_n_batches(const struct data_set *ds, enum data_split split, int B);
/* A batch of the given windows (each must fit in its series); freed with tft_batch_fini. */
int data_batch_windows(const struct data_set *ds, int B, const struct data_window *w,
                       struct tft_batch *out);

/* ---- the baseline ---------------------------------------------------------------------- */

/* The seasonal-naive forecast of a batch, [B, T_dec, Q] tagged "data/seasonal_naive", the
 * same value for every quantile: ŷ[t] = y[t − season], reaching back by whole seasons into
 * the encoder's target (the first observed variable) when t − season is a decoder step.
 * The caller releases it. NULL + LG_EINVAL when season is outside 1..T_enc. */
struct tn_tensor *data_seasonal_naive(struct trk_tracker *trk, const struct tft_config *cfg,
                                      const struct tft_batch *b, int season);
/* The pinball loss of a forecast yhat [B, T_dec, Q] against y [B, T_dec] with cfg's
 * quantiles as spec/TFT.md defines it (summed over quantiles, averaged over B × T_dec), in
 * plain double-precision C. */
double data_pinball(const struct tft_config *cfg, const struct tn_tensor *yhat,
                    const struct tn_tensor *y);

#endif
