/* rpt_stacks.h — untagged growth by allocation stack in the results (private to reports/):
 * its JSON members (stacks.c) and its artefacts, folded stacks and a flame graph (flame.c).
 *
 * In a session line, "heap_profile" is null, or
 *   {"base": 3, "sessions": 5, "stacks": [{"bytes": 1310720, "objects": 5, "samples": 4,
 *                                          "frames": ["leak_256k (leaky.c:14)", "main (...)"]}]}
 * In the run line, "cmd" (exec's command line) and "prof_sample" (bytes between samples).
 * Both are optional when read: files written before them load as "no heap profile".
 */
#ifndef LG_RPT_STACKS_H
#define LG_RPT_STACKS_H

#include "rpt_impl.h"

/* A new JSON value for s's heap profile diff (null when it has none); NULL on ENOMEM. */
json_t *rpt_alloc_stacks_to_json(const struct rpt_session *s);
/* Reads the optional "heap_profile" member into s; LG_EFORMAT naming the member when bad. */
int rpt_alloc_stacks_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *s);
/* Frees s's alloc stacks (rpt_session_fini calls it). */
void rpt_alloc_stacks_free(struct rpt_session *s);

/* The measured session with the latest heap profile diff (the run's attribution), or NULL. */
const struct rpt_session *rpt_alloc_latest(const struct rpt_results *r);
/* The function of a frame line "leak_256k (leaky.c:14)" into buf ("leak_256k"). */
void rpt_frame_function(const char *frame, size_t len, char *buf, size_t size);

/* Folded stacks (flamegraph.pl, speedscope, inferno): "main;train;leak_256k 262144" — root
 * first, bytes gained per session — for rpt_alloc_latest's stacks. LG_EUNAVAIL when none. */
int rpt_write_folded(const struct rpt_results *r, FILE *f);
/* An SVG flame graph of the same (self-contained: no script, no external reference); ids are
 * prefixed "flame-". LG_EUNAVAIL when there is nothing to draw. */
int rpt_write_flame_svg(const struct rpt_results *r, FILE *f);
/* The same for inclusion in HTML (no XML namespace). */
int rpt_write_flame_inline(const struct rpt_results *r, FILE *f);

/* The HTML report's section: the top stacks with bytes per session and their 95% interval,
 * and the flame graph inline. Nothing when the results hold no heap profile diff. */
void rpt_html_alloc_stacks(const struct rpt_results *r, FILE *f);

/* The program's notes (notes.c): the optional "notes" member of a session line, and the HTML
 * section of the latest session that has any (nothing when none has). */
json_t *rpt_notes_to_json(const struct rpt_session *s);
int rpt_notes_from_json(const struct rpt_dec *d, json_t *o, struct rpt_session *s);
void rpt_notes_free(struct rpt_session *s);
const struct rpt_session *rpt_notes_latest(const struct rpt_results *r);
void rpt_html_notes(const struct rpt_results *r, FILE *f);
/* summary.md's "Who keeps it": exec's retention paths ("native: " notes), if any. */
void rpt_md_keep(const struct rpt_results *r, FILE *f);

#endif
