/* gate.c — the gate's verdict (gate.h): a run's own verdict with its peak budgets and its
 * baseline comparison folded in, and what its suppression rules did, in the summary, and for
 * people on stdout. A failure of the gate is a failure of the run (exit 1); what it could not
 * judge makes a pass inconclusive (exit 3), as for a channel. */
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "gate.h"
#include "rpt_text.h"
#include "verdict.h"

void rpt_gate_init(struct rpt_gate *g, const struct rpt_suppressions *rules,
                   const struct rpt_verdict *v)
{
    memset(g, 0, sizeof *g);
    if (rules && rules->file[0]) {
        g->has_rules = true;
        g->rules = *rules;
    }
    g->own_status = v->status;
    g->own_exit = v->exit_code;
    g->baseline.result = -1;
}

void rpt_gate_baseline(struct rpt_gate *g, const struct rpt_results *base, const char *source,
                       const char *commit, const struct rpt_results *head, FILE *out)
{
    struct rpt_baseline_check *b = &g->baseline;
    g->has_baseline = true;
    lg_strlcpy(b->source, source, sizeof b->source);
    lg_strlcpy(b->commit, commit ? commit : "", sizeof b->commit);
    if (!base) {
        b->result = -1;
        snprintf(b->why, sizeof b->why,
                 "no baseline yet: %s has no earlier record of this workload (the first run of a "
                 "history is judged on its own)",
                 source);
        return;
    }
    fprintf(out, "\nAgainst the baseline (%s%s%s):\n", source, b->commit[0] ? ", commit " : "",
            b->commit);
    b->result = rpt_compare(base, head, head->run.budgets, out);
    snprintf(b->why, sizeof b->why, "%s against the baseline %s%s%s",
             b->result == RPT_COMPARE_REGRESSED      ? "regressed"
             : b->result == RPT_COMPARE_INCONCLUSIVE ? "inconclusive"
                                                     : "no regression",
             b->commit[0] ? b->commit : source, b->commit[0] ? " from " : "",
             b->commit[0] ? source : "");
}

static void append(char *buf, size_t size, const char *sep, const char *what)
{
    size_t l = strlen(buf);
    snprintf(buf + l, size - l, "%s%s", l ? sep : "", what);
}

/* What the rules did, for the summary: "suppressed by 2 rule(s); expired: F:3; unused: F:5". */
static void rules_text(const struct rpt_gate *g, const struct rpt_results *r, char *buf,
                       size_t size)
{
    char used[160] = "", expired[200] = "", unused[200] = "", name[600];
    int n_used = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->rules.n; i++) {
        const struct rpt_rule *rule = &g->rules.rules[i];
        struct rpt_rule_use u;
        rpt_rule_use_of(r, rule->line, &u);
        rpt_rule_name(&g->rules, rule, name, sizeof name);
        if (rule->expired)
            append(expired, sizeof expired, ", ", name);
        else if (u.sessions == 0)
            append(unused, sizeof unused, ", ", name);
        else
            n_used++;
    }
    if (n_used) snprintf(used, sizeof used, "known leaks suppressed by %d rule(s)", n_used);
    if (used[0]) append(buf, size, "; ", used);
    if (expired[0]) {
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, "%sexpired rules (suppress nothing): %s", l ? "; " : "",
                 expired);
    }
    if (unused[0]) {
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, "%sunused rules: %s", l ? "; " : "", unused);
    }
}

void rpt_gate_conclude(const struct rpt_gate *g, const struct rpt_results *r, struct rpt_verdict *v)
{
    char failed[400] = "", undecided[400] = "", rules[500], item[360];
    for (int i = 0; i < g->n_peaks; i++) {
        const struct rpt_peak_check *pc = &g->peaks[i];
        snprintf(item, sizeof item, "peak budget %s", pc->why);
        if (pc->status == RPT_LEAK) append(failed, sizeof failed, "; ", item);
        if (pc->status == RPT_INCONCLUSIVE) append(undecided, sizeof undecided, "; ", item);
    }
    if (g->has_baseline && g->baseline.result == RPT_COMPARE_REGRESSED)
        append(failed, sizeof failed, "; ", g->baseline.why);
    if (g->has_baseline && g->baseline.result == RPT_COMPARE_INCONCLUSIVE)
        append(undecided, sizeof undecided, "; ", g->baseline.why);
    rules_text(g, r, rules, sizeof rules);
    enum rpt_status st = v->status;
    const char *word = NULL;
    if (st != RPT_ERROR && failed[0]) {
        st = RPT_LEAK;
        word = "FAIL";
    } else if ((st == RPT_PASS || st == RPT_SATURATING) && undecided[0]) {
        st = RPT_INCONCLUSIVE;
        word = "INCONCLUSIVE";
    }
    char own[sizeof v->summary];
    lg_strlcpy(own, v->summary, sizeof own);
    v->summary[0] = '\0';
    if (word)
        snprintf(v->summary, sizeof v->summary, "%s: %s. The channels alone: ", word,
                 failed[0] ? failed : undecided);
    size_t l = strlen(v->summary);
    snprintf(v->summary + l, sizeof v->summary - l, "%s%s%s", own, rules[0] ? "; " : "", rules);
    if (st != v->status && v->exit_code != 4) v->exit_code = rpt_exit_code(st);
    v->status = st;
}

/* ---- for people --------------------------------------------------------------------------- */

static void print_rules(const struct rpt_gate *g, const struct rpt_results *r, FILE *f)
{
    char name[600], b1[32], b2[32];
    fprintf(f, "\nsuppressions (%s, %d rule(s), expiry judged on %s):\n", g->rules.file, g->rules.n,
            g->rules.today);
    for (int i = 0; i < g->rules.n; i++) {
        const struct rpt_rule *rule = &g->rules.rules[i];
        struct rpt_rule_use u;
        rpt_rule_use_of(r, rule->line, &u);
        fprintf(f, "  %s  %s %s", rpt_rule_name(&g->rules, rule, name, sizeof name),
                rule->kind == RPT_RULE_TAG ? "tag" : "frame", rule->glob);
        if (rule->allow >= 0)
            fprintf(f, "  allow %s/session", lg_fmt_bytes(b1, sizeof b1, (double)rule->allow));
        fprintf(f, "  expires %s  (%s)\n", rule->expires, rule->reason);
        if (rule->expired)
            fprintf(f, "      EXPIRED on %s: suppresses nothing%s\n", rule->expires,
                    u.expired_hit ? "; what it matched is judged as a leak again" : "");
        else if (u.sessions == 0)
            fputs("      UNUSED: matched nothing in this run\n", f);
        else
            fprintf(f,
                    "      SUPPRESSED %s and %d object(s) in %d session(s); %s beyond the "
                    "allowance\n",
                    lg_fmt_bytes(b1, sizeof b1, (double)u.bytes), u.objects, u.sessions,
                    lg_fmt_bytes(b2, sizeof b2, (double)u.over));
    }
}

const char *rpt_peak_word(enum rpt_status s)
{
    return s == RPT_PASS ? "within" : s == RPT_LEAK ? "EXCEEDED" : "NOT MEASURED";
}

void rpt_gate_print(const struct rpt_gate *g, const struct rpt_results *r, FILE *f)
{
    if (g->has_rules) print_rules(g, r, f);
    if (g->n_peaks) fputs("\npeak budgets:\n", f);
    for (int i = 0; i < g->n_peaks; i++)
        fprintf(f, "  %-12s %s\n", rpt_peak_word(g->peaks[i].status), g->peaks[i].why);
    if (g->has_baseline) fprintf(f, "\nbaseline: %s\n", g->baseline.why);
}
