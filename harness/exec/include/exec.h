/* exec.h — what the rest of harness/ uses of harness/exec/: the `leakgate exec` command, and
 * the heap-profile attribution `leakgate run` shares with it (exec_prof.c). Everything else of
 * exec is private to its folder (exec_impl.h).
 *
 *   struct hx_prof prof;
 *   hx_prof_start(&prof, o);                            // before the first session
 *   ... after each session: hx_prof_after_session(&prof, &ser, o->budgets, &s);
 *   hx_prof_print(&prof, stdout); hx_prof_stop(&prof);  // after the verdict, on every exit
 */
#ifndef LG_HX_EXEC_H
#define LG_HX_EXEC_H

#include <stdio.h>

#include "harness.h"
#include "verdict.h"

/* Attribution state of a run: which dump is the base of the diffs. Holds no heap memory
 * between sessions (in `run` the process measuring is the process measured). */
struct hx_prof {
    bool available;     /* jemalloc has heap profiling (opt.prof) */
    bool armed;         /* prof.active: samples are taken */
    bool always;        /* --stacks: armed from the start */
    int64_t sample;     /* mean bytes between samples */
    char dir[600];      /* where dumps go */
    char base[700];     /* the base dump ("" none yet) */
    int base_index;     /* its session */
    bool one_session;   /* the base began the one session profiled whole (exec's census): later
                           dumps hold that session's survivors and nothing sampled since */
    int64_t top_sample; /* the mean sampling interval of the profiles behind top (1: every
                           allocation) */
    char top[5][400];   /* the last attribution's first lines, for the verdict's print */
    int n_top;
};
/* Whether jemalloc in this process has heap profiling, and its sample interval. */
bool hx_prof_local_available(int64_t *sample);
/* Turns sampling on or off in this process; LG_OK or LG_EUNAVAIL. */
int hx_prof_local_activate(bool on);
/* Dumps this process's heap profile to path. */
int hx_prof_local_dump(const char *path);

/* Sets p up for a run whose dumps go to dir (created). */
int hx_prof_init(struct hx_prof *p, bool available, int64_t sample, bool always, const char *dir);
/* `leakgate run` wires these around its sessions (in-process, jemalloc linked, started with
 * "prof:true,prof_active:false,lg_prof_sample:17" in harness/main.c's malloc_conf):
 *   hx_prof_start(&prof, o);                          // before the first session; --stacks arms
 *   run.prof_sample = prof.available ? prof.sample : 0; // after hx_fill_run_line
 *   ... after rpt_series_add(&ser, &s), before rpt_writer_session(w, &s):
 *   hx_prof_after_session(&prof, &ser, o->budgets, &s); // dump, attribute into s, arm on a leak
 *   ... after the verdict: hx_prof_print(&prof, stdout); and on every exit: hx_prof_stop(&prof);
 * Dumps go to OUT/heap/session-N.heap. */
int hx_prof_start(struct hx_prof *p, const struct hx_options *o);
int hx_prof_after_session(struct hx_prof *p, const struct rpt_series *ser,
                          const struct rpt_budget *b, struct rpt_session *s);
void hx_prof_stop(struct hx_prof *p);

/* Prints the attribution of the latest profiled session (nothing when none). */
void hx_prof_print(const struct hx_prof *p, FILE *f);

/* `leakgate exec [options] -- CMD [ARGS...]`: the process exit code. */
int hx_cmd_exec(int argc, char **argv);

#endif
