/* results_impl.h — private to reports/results/: the members of a session or verdict line that
 * have their own encoders (results_fields.h's custom rows), and what rpt_session_fini frees.
 *
 * Heap profiles (stacks.c). In a session line, "heap_profile" is null, or
 *   {"base": 3, "sessions": 5, "stacks": [{"bytes": 1310720, "objects": 5, "samples": 4,
 *                                          "frames": ["leak_256k (leaky.c:14)", "main (...)"]}]}
 * In the run line, "cmd" (exec's command line) and "prof_sample" (bytes between samples).
 * Both are optional when read: files written before them load as "no heap profile".
 *
 * Notes (notes.c): the optional "notes" member of a session line (schema 1.3).
 *
 * The gate (results_gate.c, results 1.5): the session members "peaks" and "suppressed" and the
 * verdict member "gate". All are optional when read: older files load as "no peaks recorded,
 * nothing suppressed, no gate".
 *
 *   "peaks": [{"class": "act", "space": "host", "bytes": 943718400,
 *              "tags": [{"tag": "act/enc.attn.matmul", "bytes": 314572800}, ...]}, ...]
 *   "suppressed": [{"name": "varmap/out.weight", "space": "host", "object": false,
 *                   "bytes": 65536, "over": 0, "rule": 3, "expired": false}, ...]
 *   "gate": {"own_status": "pass", "own_exit_code": 0, "suppressions": {...}, "peaks": [...],
 *            "baseline": {...}}
 */
#ifndef LG_RESULTS_IMPL_H
#define LG_RESULTS_IMPL_H

#include "gate_record.h"
#include "results_json.h"

/* A new JSON value for s's heap profile diff (null when it has none); NULL on ENOMEM. */
json_t *rpt_alloc_stacks_to_json(const struct rpt_session *s);
/* Reads the optional "heap_profile" member into s; LG_EFORMAT naming the member when bad. */
int rpt_alloc_stacks_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *s);
/* Frees s's alloc stacks (rpt_session_fini calls it). */
void rpt_alloc_stacks_free(struct rpt_session *s);

json_t *rpt_notes_to_json(const struct rpt_session *s);
int rpt_notes_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *s);
void rpt_notes_free(struct rpt_session *s);

/* "suppressed_since", a row of rpt_session_fields (results_fields.h; "peaks" and "suppressed"
 * are rows of their own there): written when a rule took anything, absent meaning none. */
void rpt_enc_suppressed_since(json_t *o, const char *key, const void *s, int *bad);
int rpt_dec_suppressed_since(const struct rpt_dec *d, const char *w, json_t *o, const char *key,
                             void *s);
/* Frees what they hold (rpt_session_fini calls it). */
void rpt_session_gate_free(struct rpt_session *s);

/* The verdict's "gate" member; NULL on ENOMEM. */
json_t *rpt_gate_to_json(const struct rpt_gate *g);
/* Reads the optional "gate" member of a verdict object into *out (NULL when absent; freed with
 * free()). LG_EFORMAT naming file, line and member. */
int rpt_gate_from_json(const struct rpt_dec *d, json_t *o, struct rpt_gate **out);

#endif
