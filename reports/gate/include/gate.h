/* gate.h — what the gate adds to a run's own verdict when it runs on every commit: suppressions
 * (a known leak silenced by a rule while it is fixed, listed, never hidden), peak budgets (a
 * session's peak tagged bytes per tag class), and a baseline (this run against an earlier one,
 * by compare's rules). All three fold into the one verdict and exit status (docs/design.md,
 * "The gate across commits").
 *
 * Worked example (what `leakgate run --suppressions known.supp --peak-budget act=900MiB
 * --baseline base/results.jsonl` does with them):
 *
 *   struct rpt_suppressions *sup = calloc(1, sizeof *sup);
 *   if (rpt_suppressions_load(sup, "known.supp", NULL) != LG_OK) die(lg_errmsg()); // file:line
 *   int64_t since[2] = {0, 0};                           // suppressed so far (host, device)
 *   for each session s: rpt_suppress_session(sup, &s, since, NULL);  // before the series
 *   ...the run's own verdict v, from its series...
 *   struct rpt_gate *g = calloc(1, sizeof *g);
 *   rpt_gate_init(g, sup, &v);
 *   struct rpt_peak_budget pb;
 *   rpt_peak_budget_parse("act=900MiB", &pb);
 *   rpt_gate_peaks(g, &pb, 1, results);                  // every session, warm-up included
 *   rpt_gate_baseline(g, base, "base/results.jsonl", "", results, stdout);  // compare's rules
 *   rpt_gate_conclude(g, results, &v);                   // v: LEAK (exit 1) when a peak is
 *                                                        // over or HEAD regressed; expired rules
 *                                                        // and unused ones said in the summary
 *   rpt_writer_verdict_gate(w, &v, g);                   // the verdict line's "gate" member
 *
 * Rules file (one rule a line; '#' starts a comment line):
 *
 *   # KIND GLOB [allow=SIZE] expires=YYYY-MM-DD reason=TEXT TO THE END OF THE LINE
 *   tag   varmap/?*              allow=1MiB expires=2027-01-31 reason=dup VarMap ref, #812
 *   frame "leak_256k (leaky.c:*)"           expires=2027-03-01 reason=libfoo cache, upstream
 *
 * KIND is `tag` (fnmatch against a leak group's tag, or a shared object's "kind/name") or
 * `frame` (against each frame of a group's allocation stacks and an object's retain sites and
 * stacks: the whole "func (file:line)" or the function alone). A rule suppresses at most `allow`
 * bytes of matching groups per session (any amount without it); beyond it the rest is a leak
 * named with the rule. A rule suppresses through its expiry day (UTC); after it, it suppresses
 * nothing and says so. Memory: what is returned here is ordinary heap memory, freed as said.
 */
#ifndef LG_GATE_H
#define LG_GATE_H

#include <stdio.h>

#include "compare.h"
#include "gate_record.h"
#include "results.h"

/* ---- suppressions ------------------------------------------------------------------------- */

/* Reads a rules file into *s (strict: an unknown kind or key, a key twice, a bad size or date,
 * a missing reason or expiry, an unterminated quote, a line too long: LG_EFORMAT naming
 * "file:line"; LG_EIO when it cannot be read). today "YYYY-MM-DD", NULL for today in UTC. */
int rpt_suppressions_load(struct rpt_suppressions *s, const char *path, const char *today);
/* The same from text in memory (the fuzzer's entry point); path names it in messages. */
int rpt_suppressions_parse(struct rpt_suppressions *s, const char *path, const char *text,
                           size_t len, const char *today);
/* "known.supp:3" for rule r into buf. */
const char *rpt_rule_name(const struct rpt_suppressions *s, const struct rpt_rule *r, char *buf,
                          size_t size);
/* The rule of a file line; NULL when there is none. */
const struct rpt_rule *rpt_rule_at(const struct rpt_suppressions *s, int line);

/* Matches the session's leak groups and shared objects against the rules (first match wins) and
 * records what they take out in s->suppressed (an expired rule's match is recorded, expired,
 * taking nothing); rpt_session_value then judges what is left. `since` (host, device) carries
 * the bytes suppressed in the run's measured sessions from one call to the next: a suppressed
 * leak stays in jemalloc's and the RSS's readings of every later session, so it is taken out of
 * their deltas too (s->suppressed_since). Replaces what was recorded before. LG_ENOMEM on
 * failure (the session is left as it was). */
/* What the allocator counts of a suppressed group is its `usable` bytes when the tracker said
 * (jemalloc rounds every block up to its size class), else usable(bytes, count) (NULL: bytes). */
typedef int64_t (*rpt_usable_fn)(int64_t bytes, int64_t count);
int rpt_suppress_session(const struct rpt_suppressions *sup, struct rpt_session *s,
                         int64_t since[2], rpt_usable_fn usable);

/* What one rule did over a run's sessions (from their suppressed entries). */
struct rpt_rule_use {
    int sessions;          /* sessions it took something from */
    int64_t bytes;         /* bytes it suppressed, all sessions */
    int64_t over;          /* bytes beyond its allowance (still leaks), all sessions */
    int objects;           /* shared objects it suppressed */
    int expired_hit;       /* matches it would have made had it not expired */
    int64_t expired_bytes; /* the bytes of those matches (which still leak), all sessions */
    int expired_sessions;  /* sessions with such a match */
};
void rpt_rule_use_of(const struct rpt_results *r, int line, struct rpt_rule_use *u);

/* ---- peak budgets ------------------------------------------------------------------------- */

/* Parses "act=900MiB", "total=2GiB", "device:act=1GiB"; LG_EINVAL with a message. */
int rpt_peak_budget_parse(const char *spec, struct rpt_peak_budget *out);

/* ---- the gate ----------------------------------------------------------------------------- */

/* Starts a gate for a run whose own verdict is v, with its rules (NULL: none). */
void rpt_gate_init(struct rpt_gate *g, const struct rpt_suppressions *rules,
                   const struct rpt_verdict *v);
/* Judges n peak budgets over every session of r (warm-up included). A class no session saw is
 * not measured (inconclusive: a typo is not a pass); so is every class under exec, which
 * measures only the total. */
void rpt_gate_peaks(struct rpt_gate *g, const struct rpt_peak_budget *b, int n,
                    const struct rpt_results *r);
/* Compares head against base with compare's rules and HEAD's budgets, printing compare's table
 * to out, and records the result (base NULL: there is no baseline yet, said by why). */
void rpt_gate_baseline(struct rpt_gate *g, const struct rpt_results *base, const char *source,
                       const char *commit, const struct rpt_results *head, FILE *out);
/* Folds the gate into v: a peak over budget or a regression against the baseline is a failure
 * (status leak, exit 1, the summary saying which); a peak not measured or an inconclusive
 * comparison makes a passing verdict inconclusive (exit 3); expired and unused rules are named.
 * r gives the sessions' suppressed entries. */
void rpt_gate_conclude(const struct rpt_gate *g, const struct rpt_results *r,
                       struct rpt_verdict *v);
/* "within", "EXCEEDED", "NOT MEASURED": a peak check's status for people. */
const char *rpt_peak_word(enum rpt_status s);
/* Prints what the gate found (rules with what each did, peaks, the baseline) for people. */
void rpt_gate_print(const struct rpt_gate *g, const struct rpt_results *r, FILE *f);

#endif
