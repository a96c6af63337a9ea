/* gate_doc.c — the gate in report.html and summary.md (rpt_gate.h): every suppressed leak with
 * the rule that took it (never hidden), expired and unused rules, the peak budgets with their
 * class's top tags, and the baseline comparison. Nothing when the run had no gate. */
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "render_impl.h"

#define MAX_ROWS 200

/* What one rule took of one tag or object over the measured and warm-up sessions. */
struct row {
    const struct rpt_suppressed *x; /* the first entry, for its name, space and rule */
    int64_t bytes, over;
    int sessions;
};

/* The suppressed entries summed by (name, space, rule, expired); returns the count. */
static int rows_of(const struct rpt_results *r, struct row *rows, int cap)
{
    int n = 0;
    for (int i = 0; i < r->n_sessions; i++)
        for (int k = 0; k < r->sessions[i].n_suppressed; k++) {
            const struct rpt_suppressed *x = &r->sessions[i].suppressed[k];
            int j = 0;
            while (j < n &&
                   (strcmp(rows[j].x->name, x->name) || strcmp(rows[j].x->space, x->space) ||
                    rows[j].x->rule != x->rule || rows[j].x->expired != x->expired))
                j++;
            if (j == n && n == cap) continue;
            if (j == n) rows[n++] = (struct row){.x = x};
            rows[j].bytes += x->bytes;
            rows[j].over += x->over;
            rows[j].sessions++;
        }
    return n;
}

static const char *rule_state(const struct rpt_rule *rule, const struct rpt_rule_use *u)
{
    return rule->expired ? "EXPIRED" : u->sessions ? "used" : "UNUSED";
}

/* ---- HTML --------------------------------------------------------------------------------- */

static void html_rules(const struct rpt_gate *g, const struct rpt_results *r, FILE *f)
{
    struct row *rows = calloc(MAX_ROWS, sizeof *rows);
    int n = rows ? rows_of(r, rows, MAX_ROWS) : 0;
    char b1[32], b2[32];
    fputs("<h3>Suppressed leaks</h3>\n<p>Rules from <code>", f);
    rpt_put_xml(f, g->rules.file);
    fprintf(f,
            "</code>, expiry judged on %s. A suppressed leak is left out of the verdict, "
            "never out of the report.</p>\n<table>\n<tr><th></th><th>tag or object</th>"
            "<th>space</th><th>suppressed</th><th>beyond the allowance</th><th>sessions</th>"
            "<th>rule</th><th>reason</th></tr>\n",
            g->rules.today);
    for (int i = 0; i < n; i++) {
        const struct rpt_rule *rule = rpt_rule_at(&g->rules, rows[i].x->rule);
        fprintf(f, "<tr><td><span class=\"badge %s\">%s</span></td><td><code>",
                rows[i].x->expired ? "leak" : "na", rows[i].x->expired ? "EXPIRED" : "SUPPRESSED");
        rpt_put_xml(f, rows[i].x->name);
        fprintf(f,
                "</code></td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                "<td class=\"num\">%d</td><td><code>",
                rows[i].x->object ? "object" : rows[i].x->space,
                lg_fmt_bytes(b1, sizeof b1, (double)rows[i].bytes),
                lg_fmt_bytes(b2, sizeof b2, (double)rows[i].over), rows[i].sessions);
        rpt_put_xml(f, g->rules.file);
        fprintf(f, ":%d</code></td><td>", rows[i].x->rule);
        rpt_put_xml(f, rule ? rule->reason : "");
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n<table>\n<tr><th>rule</th><th>state</th><th>kind</th><th>glob</th>"
          "<th>allow/session</th><th>expires</th><th>reason</th></tr>\n",
          f);
    for (int i = 0; i < g->rules.n; i++) {
        const struct rpt_rule *rule = &g->rules.rules[i];
        struct rpt_rule_use u;
        rpt_rule_use_of(r, rule->line, &u);
        fprintf(f,
                "<tr><td class=\"num\">%d</td><td><span class=\"badge %s\">%s</span></td>"
                "<td>%s</td><td><code>",
                rule->line,
                rule->expired ? "leak"
                : u.sessions  ? "pass"
                              : "warn",
                rule_state(rule, &u), rule->kind == RPT_RULE_TAG ? "tag" : "frame");
        rpt_put_xml(f, rule->glob);
        fprintf(f, "</code></td><td class=\"num\">%s</td><td>%s</td><td>",
                rule->allow < 0 ? "any" : lg_fmt_bytes(b1, sizeof b1, (double)rule->allow),
                rule->expires);
        rpt_put_xml(f, rule->reason);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    free(rows);
}

static void html_peaks(const struct rpt_gate *g, FILE *f)
{
    char b1[32], b2[32];
    fputs("<h3>Peak budgets</h3>\n<table>\n<tr><th>class</th><th>space</th><th>budget</th>"
          "<th>peak</th><th>session</th><th>over</th><th>status</th><th>top tags</th></tr>\n",
          f);
    for (int i = 0; i < g->n_peaks; i++) {
        const struct rpt_peak_check *pc = &g->peaks[i];
        fputs("<tr><td><code>", f);
        rpt_put_xml(f, pc->budget.cls);
        fprintf(f,
                "</code></td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                "<td class=\"num\">%d</td><td class=\"num\">%d of %d</td><td><span "
                "class=\"badge %s\">%s</span></td><td>",
                pc->budget.space, lg_fmt_bytes(b1, sizeof b1, (double)pc->budget.limit),
                pc->peak == RPT_NONE ? "n/a" : lg_fmt_bytes(b2, sizeof b2, (double)pc->peak),
                pc->session, pc->over, pc->measured,
                pc->status == RPT_PASS   ? "pass"
                : pc->status == RPT_LEAK ? "leak"
                                         : "warn",
                rpt_peak_word(pc->status));
        for (int k = 0; k < pc->n_tags; k++) {
            fputs(k ? "<br><code>" : "<code>", f);
            rpt_put_xml(f, pc->tags[k].tag);
            fprintf(f, "</code> %s", lg_fmt_bytes(b1, sizeof b1, (double)pc->tags[k].bytes));
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

void rpt_html_gate(const struct rpt_results *r, FILE *f)
{
    const struct rpt_gate *g = r->gate;
    if (!g || (!g->has_rules && !g->n_peaks && !g->has_baseline)) return;
    fprintf(f,
            "<section id=\"gate\">\n<h2>The gate</h2>\n<p>The channels alone said <b>%s</b> "
            "(exit %d); the verdict above folds in what follows.</p>\n",
            rpt_status_word(g->own_status), g->own_exit);
    if (g->has_rules) html_rules(g, r, f);
    if (g->n_peaks) html_peaks(g, f);
    if (g->has_baseline) {
        fputs("<h3>Baseline</h3>\n<p>", f);
        rpt_put_xml(f, g->baseline.why);
        fputs("</p>\n", f);
    }
    fputs("</section>\n", f);
}

/* ---- Markdown ----------------------------------------------------------------------------- */

void rpt_md_gate(const struct rpt_results *r, FILE *f)
{
    const struct rpt_gate *g = r->gate;
    if (!g || (!g->has_rules && !g->n_peaks && !g->has_baseline)) return;
    char b1[32];
    fputs("### The gate\n\n", f);
    for (int i = 0; g->has_rules && i < g->rules.n; i++) {
        const struct rpt_rule *rule = &g->rules.rules[i];
        struct rpt_rule_use u;
        rpt_rule_use_of(r, rule->line, &u);
        fprintf(f, "- **%s** rule `%s:%d` (%s ", rule_state(rule, &u), g->rules.file, rule->line,
                rule->kind == RPT_RULE_TAG ? "tag" : "frame");
        rpt_put_md(f, rule->glob);
        if (rule->expired)
            fprintf(f,
                    ", expired %s): suppresses nothing; it would have matched %s in %d "
                    "session(s), which leak — ",
                    rule->expires, lg_fmt_bytes(b1, sizeof b1, (double)u.expired_bytes),
                    u.expired_sessions);
        else
            fprintf(f, ", expires %s): %s suppressed in %d session(s) — ", rule->expires,
                    lg_fmt_bytes(b1, sizeof b1, (double)u.bytes), u.sessions);
        rpt_put_md(f, rule->reason);
        fputc('\n', f);
    }
    for (int i = 0; i < g->n_peaks; i++) {
        fprintf(f, "- peak budget **%s**: ", rpt_peak_word(g->peaks[i].status));
        rpt_put_md(f, g->peaks[i].why);
        fputc('\n', f);
    }
    if (g->has_baseline) {
        fputs("- baseline: ", f);
        rpt_put_md(f, g->baseline.why);
        fputc('\n', f);
    }
    fputc('\n', f);
}
