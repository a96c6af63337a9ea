/* rpt_gate.h — the gate in the results (private to reports/): the session members "peaks" and
 * "suppressed" and the verdict member "gate" (results 1.5, gate_json.c), and the gate's sections
 * in report.html and summary.md (gate_doc.c). All are optional when read: older files load as
 * "no peaks recorded, nothing suppressed, no gate".
 *
 *   "peaks": [{"class": "act", "space": "host", "bytes": 943718400,
 *              "tags": [{"tag": "act/enc.attn.matmul", "bytes": 314572800}, ...]}, ...]
 *   "suppressed": [{"name": "varmap/out.weight", "space": "host", "object": false,
 *                   "bytes": 65536, "over": 0, "rule": 3, "expired": false}, ...]
 *   "gate": {"own_status": "pass", "own_exit_code": 0, "suppressions": {...}, "peaks": [...],
 *            "baseline": {...}}
 */
#ifndef LG_RPT_GATE_H
#define LG_RPT_GATE_H

#include "gate.h"
#include "rpt_impl.h"

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

/* The gate's section of report.html and of summary.md: suppressed leaks with their rules,
 * expired and unused rules, peak budgets, the baseline. Nothing without a gate. */
void rpt_html_gate(const struct rpt_results *r, FILE *f);
void rpt_md_gate(const struct rpt_results *r, FILE *f);

#endif
