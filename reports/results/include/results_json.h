/* results_json.h — the results' structs as JSON, for the readers and writers of reports/ (the
 * results file, the history, the budgets file): each struct to a JSON object and back, strings
 * and stacks under the file's rules, and where a decode is for its messages. */
#ifndef LG_RESULTS_JSON_H
#define LG_RESULTS_JSON_H

#include <jansson.h>

#include "results.h"

/* ---- JSON (results_encode.c, results_decode.c) ------------------------------------------- */

/* Each returns a new JSON object (the caller drops it with json_decref), NULL on ENOMEM. */
json_t *rpt_run_to_json(const struct rpt_run *run);
json_t *rpt_session_to_json(const struct rpt_session *s);
json_t *rpt_verdict_to_json(const struct rpt_verdict *v);
/* A stack's lines as a JSON array of strings ("a\nb\n" -> ["a", "b"]; bytes that are not UTF-8
 * written as '?'); NULL -> null; NULL on ENOMEM. */
json_t *rpt_json_frames(const char *s);
/* A JSON string, bytes that are not UTF-8 written as '?' (the file's rule); NULL on ENOMEM. */
json_t *rpt_json_str(const char *s);
/* A mask of channels as an array of their names (RPT_BIT(c)); NULL on ENOMEM. */
json_t *rpt_json_channels(unsigned mask);

/* Where a decode is: messages read "path:line: session.leaks[2].tag: ...". */
struct rpt_dec {
    const char *path;
    int line;
};
/* Each fills *out from a parsed line; LG_EFORMAT with file, line and member on bad input.
 * A session that fails to decode is left for rpt_session_fini to clean. */
int rpt_run_from_json(const struct rpt_dec *d, json_t *o, struct rpt_run *out);
int rpt_session_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *out);
int rpt_verdict_from_json(const struct rpt_dec *d, json_t *o, struct rpt_verdict *out);

#endif
