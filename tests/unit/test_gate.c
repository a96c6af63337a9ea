/* test_gate.c — suppressions and the gate's verdict below the CLI: the rules file read strictly
 * (every refusal names file:line), a rule matching by tag glob and by stack frame, its
 * allowance splitting a group, an expired rule suppressing nothing and saying so, an unused one
 * listed; what a rule takes out of the exact and the statistical channels; the gate folding peak
 * budgets and a baseline into the verdict; all of it through the results file and back. */
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "lg_test.h"
#include "verdict.h"

TestSuite(gate, .init = lg_test_setup, .fini = lg_test_teardown);

#define TODAY "2026-06-15"

static int parse(struct rpt_suppressions *s, const char *text)
{
    return rpt_suppressions_parse(s, "known.supp", text, strlen(text), TODAY);
}

/* The rules that `text` reads as (it must read); freed with free(). */
static struct rpt_suppressions *rules(const char *text)
{
    struct rpt_suppressions *s = calloc(1, sizeof *s);
    cr_assert_eq(parse(s, text), LG_OK, "%s", lg_errmsg());
    return s;
}

Test(gate, a_rules_file_reads_with_every_field)
{
    struct rpt_suppressions *s =
        rules("# known leaks\n"
              "\n"
              "tag varmap/* allow=1MiB expires=2026-12-31 reason=dup VarMap ref, #812  \n"
              "  frame \"leak_256k (leaky.c:*)\" expires=2026-06-15 reason=upstream\r\n"
              "tag old/* expires=2026-06-14 reason=fixed since\n");
    cr_assert_eq(s->n, 3);
    cr_assert_eq(s->rules[0].line, 3);
    cr_assert_eq(s->rules[0].kind, RPT_RULE_TAG);
    cr_assert_str_eq(s->rules[0].glob, "varmap/*");
    cr_assert_eq(s->rules[0].allow, 1 << 20);
    cr_assert_str_eq(s->rules[0].reason, "dup VarMap ref, #812");
    cr_assert_eq(s->rules[1].kind, RPT_RULE_FRAME);
    cr_assert_str_eq(s->rules[1].glob, "leak_256k (leaky.c:*)");
    cr_assert_eq(s->rules[1].allow, -1);
    cr_assert_not(s->rules[1].expired, "a rule suppresses through its expiry day");
    cr_assert(s->rules[2].expired, "and not the day after");
    free(s);
}

Test(gate, a_bad_rules_file_is_refused_naming_file_and_line)
{
    static const char *const bad[][3] = {
        {"bogus x expires=2027-01-01 reason=r", "known.supp:1", "unknown rule kind"},
        {"tag\n", "known.supp:1", "no glob"},
        {"tag a/* reason=r", "known.supp:1", "expires=YYYY-MM-DD missing"},
        {"tag a/* expires=2027-01-01", "known.supp:1", "reason= missing"},
        {"tag a/* expires=2027-01-01 reason=", "known.supp:1", "reason= is empty"},
        {"tag a/* expires=2027-02-30 reason=r", "known.supp:1", "not a date"},
        {"tag a/* expires=27-01-01 reason=r", "known.supp:1", "not a date"},
        {"tag a/* allow=lots expires=2027-01-01 reason=r", "known.supp:1", "not a size"},
        {"tag a/* allow=0 expires=2027-01-01 reason=r", "known.supp:1", "allow=0"},
        {"tag a/* allow=1 allow=2 expires=2027-01-01 reason=r", "known.supp:1", "twice"},
        {"tag a/* colour=red expires=2027-01-01 reason=r", "known.supp:1", "unknown key"},
        {"tag a/* loose expires=2027-01-01 reason=r", "known.supp:1", "expected KEY=VALUE"},
        {"frame \"open expires=2027-01-01 reason=r", "known.supp:1", "unterminated quote"},
        {"# ok\ntag a/* expires=2027-01-01 reason=r\ntag a/* expires=2028-01-01 reason=r",
         "known.supp:3", "the same tag glob as line 2"},
    };
    struct rpt_suppressions *s = calloc(1, sizeof *s);
    for (size_t i = 0; i < LG_ARRAY_LEN(bad); i++) {
        cr_assert_eq(parse(s, bad[i][0]), LG_EFORMAT, "accepted: %s", bad[i][0]);
        cr_assert(strstr(lg_errmsg(), bad[i][1]) && strstr(lg_errmsg(), bad[i][2]), "%s -> %s",
                  bad[i][0], lg_errmsg());
    }
    char big[RPT_MAX_RULE_LINE + 64];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert_eq(parse(s, big), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "longer than"), "%s", lg_errmsg());
    cr_assert_eq(rpt_suppressions_parse(s, "nul.supp", "tag a\0b", 7, TODAY), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "nul.supp:1: a NUL byte"), "%s", lg_errmsg());
    cr_assert_eq(rpt_suppressions_load(s, "/nonexistent/rules", NULL), LG_EIO);
    free(s);
}

/* A measured session that left 3 groups (host) and one shared object. */
static void leaky_session(struct rpt_session *s, int index)
{
    memset(s, 0, sizeof *s);
    s->index = index;
    for (int c = 0; c < RPT_NCHANNELS; c++) s->absolute[c] = s->delta[c] = 0;
    s->delta[RPT_CH_JE_ALLOCATED] = 10000 * (index + 1);
    s->absolute[RPT_CH_JE_ALLOCATED] = s->delta[RPT_CH_JE_ALLOCATED]; /* a baseline of 0 */
    s->n_groups = 3;
    s->groups = calloc(3, sizeof *s->groups);
    const char *tags[] = {"varmap/enc.w", "adam.m/enc.w", "act/x"};
    const int64_t bytes[] = {4000, 3000, 1000};
    for (int i = 0; i < 3; i++) {
        lg_strlcpy(s->groups[i].tag, tags[i], sizeof s->groups[i].tag);
        lg_strlcpy(s->groups[i].space, "host", sizeof s->groups[i].space);
        s->groups[i].bytes = bytes[i];
        s->groups[i].count = 1;
    }
    s->groups[2].n_stacks = 1;
    s->groups[2].stacks = calloc(1, sizeof *s->groups[2].stacks);
    s->groups[2].stacks[0].frames = strdup("keep_scratch (trainer.c:40)\ntr_train (trainer.c:90)");
    s->leaked_host_bytes = 8000;
    s->n_refs = 1;
    s->refs = calloc(1, sizeof *s->refs);
    lg_strlcpy(s->refs[0].kind, "varmap", sizeof s->refs[0].kind);
    lg_strlcpy(s->refs[0].name, "tft.varmap", sizeof s->refs[0].name);
    s->absolute[RPT_CH_REFS] = 1;
}

static int64_t value(const struct rpt_session *s, enum rpt_channel c)
{
    int64_t v = -1;
    cr_assert(rpt_session_value(s, c, &v));
    return v;
}

Test(gate, rules_take_what_they_match_and_no_more)
{
    struct rpt_suppressions *sup =
        rules("tag varmap/* allow=3000 expires=2027-01-01 reason=being fixed\n"
              "frame tr_train expires=2027-01-01 reason=scratch, #9\n"
              "tag adam.m/* expires=2026-01-01 reason=was fixed\n"
              "tag nothing/* expires=2027-01-01 reason=never leaks\n");
    struct rpt_session s;
    int64_t since[2] = {0, 0};
    leaky_session(&s, 1);
    cr_assert_eq(value(&s, RPT_CH_TAGGED_HOST), 8000);
    cr_assert_eq(rpt_suppress_session(sup, &s, since, NULL), LG_OK);
    cr_assert_eq(s.n_suppressed, 4, "three groups and the object (by its kind/name)");
    cr_assert_str_eq(s.suppressed[0].name, "varmap/enc.w");
    cr_assert_eq(s.suppressed[0].bytes, 3000, "up to the allowance");
    cr_assert_eq(s.suppressed[0].over, 1000, "the rest is still a leak");
    cr_assert(s.suppressed[1].expired, "adam.m: its only rule expired");
    cr_assert_eq(s.suppressed[1].bytes, 0);
    cr_assert_eq(s.suppressed[2].rule, 2, "act/x by a frame of its stack");
    cr_assert(s.suppressed[3].object);
    cr_assert_eq(value(&s, RPT_CH_TAGGED_HOST), 8000 - 3000 - 1000, "varmap's excess and adam.m");
    cr_assert_eq(value(&s, RPT_CH_REFS), 0);
    cr_assert_eq(value(&s, RPT_CH_JE_ALLOCATED), 20000 - 4000, "the statistical channels too");
    rpt_session_fini(&s);
    leaky_session(&s, 2);
    cr_assert_eq(rpt_suppress_session(sup, &s, since, NULL), LG_OK);
    cr_assert_eq(s.suppressed_since[0], 8000, "a suppressed leak stays in every later reading");
    cr_assert_eq(value(&s, RPT_CH_JE_ALLOCATED), 30000 - 8000);
    rpt_session_fini(&s);
    free(sup);
}

/* Results of n leaky sessions, suppressed by sup. */
static struct rpt_results *leaky_results(const struct rpt_suppressions *sup, int n)
{
    struct rpt_results *r = calloc(1, sizeof *r);
    r->sessions = calloc((size_t)n, sizeof *r->sessions);
    int64_t since[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        leaky_session(&r->sessions[i], i);
        cr_assert_eq(rpt_suppress_session(sup, &r->sessions[i], since, NULL), LG_OK);
        r->n_sessions++;
    }
    lg_strlcpy(r->run.command, "run", sizeof r->run.command);
    r->run.required = rpt_default_required(false);
    return r;
}

Test(gate, the_verdict_lists_expired_and_unused_rules)
{
    struct rpt_suppressions *sup = rules("tag varmap/* expires=2027-01-01 reason=r\n"
                                         "tag adam.m/* expires=2026-01-01 reason=r\n"
                                         "tag act/* expires=2027-01-01 reason=r\n"
                                         "tag nothing/* expires=2027-01-01 reason=r\n");
    struct rpt_results *r = leaky_results(sup, 4);
    struct rpt_rule_use u;
    rpt_rule_use_of(r, 1, &u);
    cr_assert_eq(u.sessions, 4);
    cr_assert_eq(u.bytes, 4 * 4000);
    cr_assert_eq(u.objects, 4);
    rpt_rule_use_of(r, 2, &u);
    cr_assert_eq(u.sessions, 0);
    cr_assert_eq(u.expired_hit, 4);
    rpt_rule_use_of(r, 4, &u);
    cr_assert_eq(u.sessions + u.expired_hit, 0);
    struct rpt_verdict v = {.status = RPT_LEAK, .exit_code = 1};
    lg_strlcpy(v.summary, "LEAK: tagged_host", sizeof v.summary);
    struct rpt_gate *g = calloc(1, sizeof *g);
    rpt_gate_init(g, sup, &v);
    rpt_gate_conclude(g, r, &v);
    cr_assert(strstr(v.summary, "expired rules (suppress nothing): known.supp:2"), "%s", v.summary);
    cr_assert(strstr(v.summary, "unused rules: known.supp:4"), "%s", v.summary);
    cr_assert_eq(v.exit_code, 1, "adam.m's leak, no longer suppressed, still fails the run");
    free(g);
    free(sup);
    rpt_results_free(r);
}

Test(gate, peaks_and_baseline_fold_into_the_verdict)
{
    struct rpt_results *r = calloc(1, sizeof *r);
    struct rpt_gate *g = calloc(1, sizeof *g);
    struct rpt_verdict v = {.status = RPT_PASS, .exit_code = 0};
    lg_strlcpy(v.summary, "PASS: every required channel", sizeof v.summary);
    rpt_gate_init(g, NULL, &v);
    g->n_peaks = 1;
    g->peaks[0].status = RPT_INCONCLUSIVE;
    lg_strlcpy(g->peaks[0].why, "host act peak not measured", sizeof g->peaks[0].why);
    struct rpt_verdict w = v;
    rpt_gate_conclude(g, r, &w);
    cr_assert_eq(w.status, RPT_INCONCLUSIVE);
    cr_assert_eq(w.exit_code, 3, "a budget that could not be judged is no pass");
    cr_assert(strstr(w.summary, "The channels alone: PASS"), "%s", w.summary);
    g->peaks[0].status = RPT_LEAK;
    w = v;
    rpt_gate_conclude(g, r, &w);
    cr_assert_eq(w.status, RPT_LEAK);
    cr_assert_eq(w.exit_code, 1);
    cr_assert(!strncmp(w.summary, "FAIL: peak budget", 17), "%s", w.summary);
    g->n_peaks = 0;
    g->has_baseline = true;
    g->baseline.result = RPT_COMPARE_REGRESSED;
    lg_strlcpy(g->baseline.why, "regressed against the baseline abc", sizeof g->baseline.why);
    w = v;
    rpt_gate_conclude(g, r, &w);
    cr_assert_eq(w.exit_code, 1, "%s", w.summary);
    g->baseline.result = -1; /* the first record of a history */
    w = v;
    rpt_gate_conclude(g, r, &w);
    cr_assert_eq(w.exit_code, 0, "%s", w.summary);
    w = v;
    w.exit_code = 4; /* exec: CMD crashed */
    g->baseline.result = RPT_COMPARE_REGRESSED;
    rpt_gate_conclude(g, r, &w);
    cr_assert_eq(w.exit_code, 4, "a crash's exit status stays");
    free(g);
    rpt_results_free(r);
}

Test(gate, suppressions_peaks_and_the_gate_survive_the_results_file)
{
    struct rpt_suppressions *sup = rules("tag varmap/* allow=3000 expires=2027-01-01 reason=r\n");
    struct rpt_results *r = leaky_results(sup, 2);
    struct rpt_session *s = &r->sessions[1];
    s->peaks_measured = true;
    s->n_peaks = 1;
    s->peaks = calloc(1, sizeof *s->peaks);
    lg_strlcpy(s->peaks[0].cls, "act", sizeof s->peaks[0].cls);
    lg_strlcpy(s->peaks[0].space, "host", sizeof s->peaks[0].space);
    s->peaks[0].bytes = 5000;
    s->peaks[0].n_tags = 1;
    lg_strlcpy(s->peaks[0].tags[0].tag, "act/x", sizeof s->peaks[0].tags[0].tag);
    s->peaks[0].tags[0].bytes = 5000;
    struct rpt_gate *g = calloc(1, sizeof *g);
    struct rpt_verdict v = {.status = RPT_LEAK, .exit_code = 1, .n_channels = 0};
    rpt_gate_init(g, sup, &v);
    struct rpt_peak_budget b;
    cr_assert_eq(rpt_peak_budget_parse("act=4000", &b), LG_OK);
    rpt_gate_peaks(g, &b, 1, r);
    rpt_gate_baseline(g, NULL, "hist.jsonl", "", r, stdout);
    const char *path = lg_test_tmpfile("results.jsonl");
    struct rpt_writer *w = NULL;
    cr_assert_eq(rpt_writer_open(&w, path, &r->run), LG_OK, "%s", lg_errmsg());
    for (int i = 0; i < r->n_sessions; i++)
        cr_assert_eq(rpt_writer_session(w, &r->sessions[i]), LG_OK);
    cr_assert_eq(rpt_writer_verdict_gate(w, &v, g), LG_OK, "%s", lg_errmsg());
    rpt_writer_close(w);
    struct rpt_results *back = NULL;
    cr_assert_eq(rpt_results_load(&back, path), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(back->sessions[1].n_suppressed, s->n_suppressed);
    cr_assert_eq(back->sessions[1].suppressed[0].over, 1000);
    cr_assert_eq(back->sessions[1].suppressed_since[0], s->suppressed_since[0]);
    cr_assert(back->sessions[1].peaks_measured && !back->sessions[0].peaks_measured);
    cr_assert_str_eq(back->sessions[1].peaks[0].tags[0].tag, "act/x");
    cr_assert_not_null(back->gate);
    cr_assert_eq(back->gate->rules.n, 1);
    cr_assert_eq(back->gate->rules.rules[0].allow, 3000);
    cr_assert_eq(back->gate->peaks[0].status, RPT_LEAK);
    cr_assert_eq(back->gate->baseline.result, -1);
    cr_assert_eq(back->gate->own_status, RPT_LEAK);
    int64_t a, b2;
    cr_assert(rpt_session_value(&back->sessions[1], RPT_CH_TAGGED_HOST, &a) &&
              rpt_session_value(s, RPT_CH_TAGGED_HOST, &b2) && a == b2);
    rpt_results_free(back);
    rpt_results_free(r);
    free(g);
    free(sup);
}
