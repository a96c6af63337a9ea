/* history_impl.h — the history's private parts (reports/history_*.c): a record as JSON, and the
 * figures every record has, which drift judges and the plots draw. */
#ifndef LG_HISTORY_IMPL_H
#define LG_HISTORY_IMPL_H

#include "history.h"
#include "results_json.h"

/* A new JSON object for the record (json_decref); NULL on ENOMEM or a string that cannot be. */
json_t *rpt_history_to_json(const struct rpt_history_record *h);
/* Reads a record; LG_EFORMAT naming file, line and member. Frees nothing on failure: the caller
 * finishes *h with rpt_history_record_fini. */
int rpt_history_from_json(const struct rpt_dec *d, json_t *o, struct rpt_history_record *h);

/* A record's figure by name ("growth.rss", "level.je_allocated", "peak.total", "peak.act",
 * "peak.device.total", "tag.varmap/x"): NaN when the record has none. */
double rpt_history_figure(const struct rpt_history_record *h, const char *metric);
/* The names of every figure the records of a workload have, in a stable order (channels,
 * levels, peaks, tags), into *out (freed with free(): one block of n names of
 * RPT_METRIC_MAX bytes). */
#define RPT_METRIC_MAX 128
int rpt_history_metrics(const struct rpt_history *h, const char *workload,
                        char (**out)[RPT_METRIC_MAX], int *n);
/* The indices of the workload's records, the last `last` (0: all), oldest first; *out freed with
 * free(). */
int rpt_history_window(const struct rpt_history *h, const char *workload, int last, int **out,
                       int *n);

#endif
