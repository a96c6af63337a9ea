/* markdown.c — a Markdown summary fit for a CI job summary page: the verdict first, then a
 * table of channels (status, figure, budget, why), the top leaked tags with the retain sites
 * that hold them, the figures and the run's configuration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "render_impl.h"
#include "rpt_stacks.h"

#define TOP_TAGS 10

static void verdict_heading(const struct rpt_results *r, FILE *f)
{
    const struct rpt_run *run = &r->run;
    if (r->has_verdict) {
        const struct rpt_verdict *v = &r->verdict;
        fprintf(f, "## leakgate: %s %s\n\n", rpt_status_mark(v->status),
                rpt_status_word(v->status));
        if (v->summary[0]) {
            fputs("> ", f);
            rpt_put_md(f, v->summary);
            fputs("\n\n", f);
        }
        fprintf(f, "**Exit status %d** · %d measured session%s", v->exit_code, v->sessions_measured,
                v->sessions_measured == 1 ? "" : "s");
        if (v->partial) fputs(" · **partial run**", f);
    } else {
        fputs("## leakgate: ⏸️ NO VERDICT (run cut short)\n\n", f);
        char why[200];
        fprintf(f,
                "> The %s. The table below compares each channel with its budget; the verdict "
                "engine decides.\n\n",
                rpt_cut_short(r, why, sizeof why));
        fprintf(f, "%d measured session%s", rpt_measured_count(r),
                rpt_measured_count(r) == 1 ? "" : "s");
    }
    fprintf(f, " (+%d warm-up) · ", rpt_warmup_count(r));
    rpt_run_meta(&rpt_markdown, f, run);
    fputs("\n\n", f);
}

static void channel_table(const struct rpt_results *r, FILE *f)
{
    fputs("### Channels\n\n", f);
    rpt_channel_table(r, &rpt_markdown, f);
}

static int leak_table(const struct rpt_results *r, FILE *f)
{
    struct rpt_tag_total *t = NULL;
    int nt = 0, measured = rpt_measured_count(r);
    int rc = rpt_tag_totals(r, &t, &nt);
    if (rc != LG_OK) return rc;
    if (nt == 0) {
        fprintf(f, "### Leaked tags\n\n%s\n\n", rpt_no_leaked_tags_text(r));
        return LG_OK;
    }
    int64_t all = 0;
    for (int k = 0; k < nt; k++) all += t[k].bytes;
    char a[48];
    fprintf(f, "### Top leaked tags (%d tag%s, %s over %d measured session%s)\n\n", nt,
            nt == 1 ? "" : "s", lg_fmt_bytes(a, sizeof a, (double)all), measured,
            measured == 1 ? "" : "s");
    rc = rpt_leak_table(r, &rpt_markdown, f, t, nt, TOP_TAGS);
    if (nt > TOP_TAGS)
        fprintf(f, "… and %d more tag%s (see report.html).\n\n", nt - TOP_TAGS,
                nt - TOP_TAGS == 1 ? "" : "s");
    free(t);
    return rc;
}

static void config_table(const struct rpt_results *r, FILE *f)
{
    fputs("<details><summary>Run configuration and budgets</summary>\n\n", f);
    rpt_config_tables(r, &rpt_markdown, f, "");
    fputs("</details>\n", f);
}

int rpt_write_markdown(const struct rpt_results *r, FILE *f)
{
    verdict_heading(r, f);
    channel_table(r, f);
    int rc = leak_table(r, f);
    if (rc == LG_OK) rc = rpt_refs_table(r, &rpt_markdown, f, "### Unreleased references\n\n");
    if (rc != LG_OK) return rc;
    rpt_census_table(r, &rpt_markdown, f, "### Census: blocks still alive, by session born\n\n");
    rpt_procs_table(r, &rpt_markdown, f, "### Processes: CMD and its children\n\n");
    rpt_md_keep(r, f);
    rpt_md_gate(r, f);
    bool any = false;
    for (int fig = 0; fig < RPT_NFIGURES; fig++) {
        if (!rpt_figure_applies(r, fig)) continue;
        if (!any) fputs("### Figures\n\n", f);
        any = true;
        fprintf(f, "![%s](%s.png)\n\n", rpt_figure_title(fig), rpt_figure_name(fig));
    }
    int errors = 0;
    for (int i = 0; i < r->n_sessions; i++)
        errors += r->sessions[i].error[0] != '\0' || r->sessions[i].invalid_frees > 0;
    if (errors) {
        fputs("### Session errors\n\n", f);
        for (int i = 0; i < r->n_sessions; i++) {
            const struct rpt_session *s = &r->sessions[i];
            if (!s->error[0] && s->invalid_frees <= 0) continue;
            fprintf(f, "- session %d (%s): ", s->index, s->mode);
            rpt_put_md(f, s->error);
            if (s->invalid_frees > 0)
                fprintf(f,
                        "%s%lld invalid free(s): a double free or a pointer the tracker never "
                        "saw allocated",
                        s->error[0] ? "; " : "", (long long)s->invalid_frees);
            fputc('\n', f);
        }
        fputc('\n', f);
    }
    config_table(r, f);
    return ferror(f) ? lg_fail(LG_EIO, "writing the Markdown summary failed") : LG_OK;
}
