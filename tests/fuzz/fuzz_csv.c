/* fuzz_csv.c — libFuzzer target for the CSV loader and its JSON column-role config.
 *
 * An input holding a NUL byte is "JSON config, NUL, CSV text"; any other input is CSV text
 * read with the config of tests/data/csv/small.json (two steps back, one ahead, a categorical
 * static, an observed real, known categorical and real columns). A data set that loads must keep
 * the loader's promises: the config validates, categoricals lie in [0, cardinality), reals are
 * finite, windows fit their series and split, batches and the seasonal-naive baseline build. An
 * input that does not load must fail with LG_EFORMAT and a message naming one of the two files.
 * Either way the tracker must hold zero live bytes and no invalid free afterwards; ASan and
 * LSan watch the rest (Jansson's memory included).
 *
 *   ci/fuzz 60 fuzz_csv                                 # build in build-fuzz and run a minute
 *   build-fuzz/tests/fuzz/fuzz_csv crash-file            # replay one input
 * Seeds and regressions: tests/data/csv/fuzz (same layout; test_data replays them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "lg_fuzz.h"

static const char fixed_json[] =
    "{\"id\": \"id\", \"time\": \"t\", \"target\": \"y\","
    " \"static\": [{\"name\": \"kind\", \"kind\": \"categorical\"}],"
    " \"observed\": [{\"name\": \"x\", \"kind\": \"real\"}],"
    " \"known\": [{\"name\": \"dow\", \"kind\": \"categorical\", \"cardinality\": 7},"
    "             {\"name\": \"k\", \"kind\": \"real\"}],"
    " \"hidden\": 8, \"n_head\": 2, \"lstm_layers\": 1, \"T_enc\": 2, \"T_dec\": 1,"
    " \"val_steps\": 3}"; /* as tests/data/csv/small.json */

/* The promises of a data set that loaded. */
static void check_loaded(struct data_set *ds, const struct tft_config *cfg)
{
    if (tft_config_validate(cfg) != LG_OK) lg_fuzz_die("the loaded config does not validate");
    if (memcmp(cfg, data_config(ds), sizeof *cfg) != 0) lg_fuzz_die("two configs");
    int64_t T = cfg->T_enc + cfg->T_dec;
    for (int s = 0; s < data_n_series(ds); s++) {
        int64_t len = data_series_len(ds, s), tl = data_train_len(ds, s);
        if (len < T || tl < T || tl > len) lg_fuzz_die("a series shorter than one window");
        for (int v = 0; v < cfg->n_vars; v++)
            for (int64_t t = 0; t < (cfg->vars[v].role == TFT_STATIC ? 1 : len); t++) {
                float x = data_value(ds, v, s, t);
                if (cfg->vars[v].kind == TFT_CAT ? !(x >= 0 && x < cfg->vars[v].cardinality)
                                                 : !isfinite(x))
                    lg_fuzz_die("a value out of range");
            }
    }
    for (int64_t i = 0; i < data_n_windows(ds, DATA_VAL); i++) {
        struct data_window w = data_window_at(ds, DATA_VAL, i);
        if (w.start < data_train_len(ds, w.series) || w.start + T > data_series_len(ds, w.series))
            lg_fuzz_die("a validation window outside the validation range");
    }
    struct data_cursor cur;
    data_cursor_init(&cur, 1);
    struct tft_batch b = {0};
    if (data_batch(ds, DATA_TRAIN, 3, &cur, &b) != LG_OK) lg_fuzz_die("no training batch");
    struct tn_tensor *f = data_seasonal_naive(lg_fuzz_trk, cfg, &b, data_season(ds));
    if (!f) lg_fuzz_die("no seasonal-naive forecast");
    if (!isfinite(data_pinball(cfg, f, b.y))) lg_fuzz_die("a non-finite pinball loss");
    tn_release(f);
    tft_batch_fini(&b);
    if (data_n_windows(ds, DATA_VAL) > 0) {
        if (data_batch(ds, DATA_VAL, 3, &cur, &b) != LG_OK) lg_fuzz_die("no validation batch");
        tft_batch_fini(&b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *json = fixed_json, *csv = in;
    size_t json_len = sizeof fixed_json - 1, csv_len = size;
    const char *nul = memchr(in, '\0', size);
    if (nul) {
        json = in, json_len = (size_t)(nul - in);
        csv = nul + 1, csv_len = size - json_len - 1;
    }
    struct data_set *ds = NULL;
    struct tft_config cfg;
    lg_clear_error();
    int rc = data_parse_csv(&ds, &cfg, lg_fuzz_trk, csv, csv_len, "fuzz.csv", json, json_len,
                            "fuzz.json");
    if (rc == LG_OK) {
        check_loaded(ds, &cfg);
        data_free(ds);
    } else {
        if (ds) lg_fuzz_die("a failed load left a data set");
        if (rc != LG_EFORMAT) lg_fuzz_die("a malformed input is not LG_EFORMAT");
        if (!strstr(lg_errmsg(), "fuzz.csv") && !strstr(lg_errmsg(), "fuzz.json"))
            lg_fuzz_die("the message names no file");
    }
    lg_fuzz_check_tracker();
    return 0;
}
