/* rpt_stacks.h — the stacks and notes the results hold, for whatever names them (the flame graph,
 * the reports' sections, the suppression rules that match a frame): the session that has the
 * run's attribution, and a frame's function. */
#ifndef LG_RPT_STACKS_H
#define LG_RPT_STACKS_H

#include "results.h"

/* The measured session with the latest heap profile diff (the run's attribution), or NULL. */
const struct rpt_session *rpt_alloc_latest(const struct rpt_results *r);
/* The function of a frame line "leak_256k (leaky.c:14)" into buf ("leak_256k"). */
void rpt_frame_function(const char *frame, size_t len, char *buf, size_t size);
/* The first frame of a stack ("keep_block (step.c:17)") into buf, "" when not named. */
void rpt_first_frame(const char *frames, char *buf, size_t size);
/* The latest session with notes (what the program attached: leakgate_session_note), or NULL. */
const struct rpt_session *rpt_notes_latest(const struct rpt_results *r);

#endif
