/* html.c — one self-contained HTML report: the verdict banner first, the channel table, the
 * plots as inline SVG (the files gnuplot made, ids prefixed per figure so they cannot clash),
 * the leak table with retain sites and stacks, unreleased references, the sessions and the
 * run's configuration. Every text is escaped; nothing refers to the network. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gate_record.h"
#include "plot.h"
#include "render_impl.h"
#include "rpt_stacks.h"

#define MAX_TAG_ROWS  500
#define MAX_SVG_BYTES (64L << 20)

static const char *status_class(enum rpt_status s) { return rpt_status_class(s); }

static const char style[] =
    "body{font:15px/1.45 'DejaVu Sans',system-ui,sans-serif;margin:0 "
    "auto;max-width:1100px;padding:0 16px 48px;"
    "color:#222}\n"
    "h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:4px}\n"
    ".verdict{margin:16px 0;padding:18px 22px;border-radius:8px;color:#fff}\n"
    ".verdict .word{font-size:34px;font-weight:bold;letter-spacing:1px}\n"
    ".verdict p{margin:6px 0 0}\n"
    ".verdict.pass{background:#1e8449}.verdict.leak{background:#c0392b}.verdict.warn{background:#"
    "b9770e}"
    ".verdict.na{background:#566573}\n"
    "table{border-collapse:collapse;margin:8px 0;font-size:13px}\n"
    "th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}\n"
    "th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:"
    "nowrap}\n"
    ".badge{display:inline-block;padding:1px "
    "8px;border-radius:10px;color:#fff;font-size:12px;font-weight:bold}\n"
    ".badge.pass{background:#1e8449}.badge.leak{background:#c0392b}.badge.warn{background:#b9770e}"
    ".badge.na{background:#8a8a8a}\n"
    "code,pre{font-family:'DejaVu Sans Mono',monospace;font-size:12px}pre{margin:4px "
    "0;white-space:pre-wrap}\n"
    "figure{margin:16px 0}figcaption{font-weight:bold;margin-bottom:4px}\n"
    "svg.plot{max-width:100%;height:auto;border:1px solid #eee}\n"
    ".missing{color:#c0392b}\n";

static void put_text(FILE *f, const char *s) { rpt_put_xml(f, s); }

static void banner(const struct rpt_results *r, FILE *f)
{
    const struct rpt_run *run = &r->run;
    if (r->has_verdict) {
        const struct rpt_verdict *v = &r->verdict;
        fprintf(f, "<header id=\"verdict\" class=\"verdict %s\">\n<div class=\"word\">%s</div>\n",
                status_class(v->status), rpt_status_word(v->status));
        fputs("<p class=\"summary\">", f);
        put_text(f, v->summary);
        fprintf(f,
                "</p>\n<p class=\"meta\">exit status %d · %d measured session%s (+%d warm-up)%s · ",
                v->exit_code, v->sessions_measured, v->sessions_measured == 1 ? "" : "s",
                rpt_warmup_count(r), v->partial ? " · partial run" : "");
    } else {
        fputs(
            "<header id=\"verdict\" class=\"verdict na\">\n<div class=\"word\">NO VERDICT</div>\n",
            f);
        char why[200];
        fprintf(f, "<p class=\"summary\">The run was cut short: %s.</p>\n<p class=\"meta\">",
                rpt_cut_short(r, why, sizeof why));
    }
    rpt_run_meta(&rpt_html, f, run);
    fputs("</p>\n</header>\n", f);
}

static void channels(const struct rpt_results *r, FILE *f)
{
    fputs("<section id=\"channels\">\n<h2>Channels</h2>\n", f);
    rpt_channel_table(r, &rpt_html, f);
    fputs("</section>\n", f);
}

/* Whether s at i starts with pat. */
static bool at(const char *s, size_t i, size_t n, const char *pat)
{
    size_t m = strlen(pat);
    return i + m <= n && memcmp(s + i, pat, m) == 0;
}

/* Copies gnuplot's SVG inline: drops the XML prologue and the namespace declarations (HTML
 * knows SVG), prefixes every id and reference with the figure's name. */
static void put_svg(FILE *f, const char *svg, size_t n, const char *prefix, const char *label)
{
    const char *start = strstr(svg, "<svg");
    if (!start) return;
    size_t i = (size_t)(start - svg) + 4;
    fputs("<svg class=\"plot\" role=\"img\" aria-label=\"", f);
    put_text(f, label);
    fputc('"', f);
    /* the start tag's attributes, less xmlns* */
    while (i < n && svg[i] != '>') {
        while (i < n && (svg[i] == ' ' || svg[i] == '\n' || svg[i] == '\t' || svg[i] == '\r')) i++;
        if (i >= n || svg[i] == '>') break;
        size_t a = i;
        char q = 0;
        while (i < n && (q || (svg[i] != ' ' && svg[i] != '\n' && svg[i] != '>'))) {
            if (!q && (svg[i] == '"' || svg[i] == '\''))
                q = svg[i];
            else if (q && svg[i] == q)
                q = 0;
            i++;
        }
        if (!at(svg, a, n, "xmlns")) {
            fputc(' ', f);
            fwrite(svg + a, 1, i - a, f);
        }
    }
    static const char *const refs[] = {" id='", " id=\"", "href='#", "href=\"#", "url(#"};
    for (; i < n; i++) {
        bool hit = false;
        for (size_t k = 0; k < LG_ARRAY_LEN(refs) && !hit; k++)
            if (at(svg, i, n, refs[k])) {
                fputs(refs[k], f);
                fprintf(f, "%s-", prefix);
                i += strlen(refs[k]) - 1;
                hit = true;
            }
        if (!hit) fputc(svg[i], f);
    }
    fputc('\n', f);
}

void rpt_html_figure(FILE *f, const char *svg_dir, const char *name, const char *title)
{
    fprintf(f, "<figure id=\"fig-%s\">\n<figcaption>%s</figcaption>\n", name, title);
    char path[4200];
    char *svg = NULL;
    size_t n = 0;
    FILE *in = NULL;
    if (svg_dir && !lg_snprintf(path, sizeof path, "%s/%s.svg", svg_dir, name))
        in = fopen(path, "re");
    if (in && fseek(in, 0, SEEK_END) == 0) {
        long len = ftell(in);
        if (len > 0 && len < MAX_SVG_BYTES && fseek(in, 0, SEEK_SET) == 0 &&
            (svg = malloc((size_t)len + 1))) {
            n = fread(svg, 1, (size_t)len, in);
            svg[n] = '\0';
        }
    }
    if (in) fclose(in);
    if (svg && strstr(svg, "<svg")) {
        put_svg(f, svg, n, name, title);
    } else if (!svg_dir) {
        fputs("<p class=\"missing\">plot missing: plots were not made for this report</p>\n", f);
    } else {
        fputs("<p class=\"missing\">plot missing: ", f);
        put_text(f, path);
        fputs(" could not be read (was gnuplot available?)</p>\n", f);
    }
    free(svg);
    fputs("</figure>\n", f);
}

const char *rpt_html_style(void) { return style; }

static void plots(const struct rpt_results *r, const char *svg_dir, FILE *f)
{
    fputs("<section id=\"plots\">\n<h2>Plots</h2>\n", f);
    for (int fig = 0; fig < RPT_NFIGURES; fig++)
        if (rpt_figure_applies(r, fig))
            rpt_html_figure(f, svg_dir, rpt_figure_name(fig), rpt_figure_title(fig));
    fputs("</section>\n", f);
}

static void put_stack(FILE *f, const char *summary, const char *frames)
{
    fputs("<details><summary>", f);
    put_text(f, summary);
    fputs("</summary><pre>", f);
    put_text(f, frames);
    fputs("</pre></details>", f);
}

static void group_stacks(FILE *f, const struct lg_leak_group *g)
{
    for (int s = 0; s < g->n_stacks; s++) {
        char sum[64];
        snprintf(sum, sizeof sum, "stack %d (%lld allocation%s)", s + 1,
                 (long long)g->stacks[s].count, g->stacks[s].count == 1 ? "" : "s");
        put_stack(f, sum, g->stacks[s].frames ? g->stacks[s].frames : "");
    }
    if (!g->n_stacks) fputs("— (run without --stacks)", f);
}

static int leaks(const struct rpt_results *r, FILE *f)
{
    struct rpt_dialect d = rpt_html;
    d.stacks = group_stacks;
    d.stack = put_stack;
    struct rpt_tag_total *t = NULL;
    int nt = 0, rc = rpt_tag_totals(r, &t, &nt);
    if (rc != LG_OK) return rc;
    fputs("<section id=\"leaks\">\n<h2>Leaked tags</h2>\n", f);
    if (nt == 0)
        fprintf(f, "<p>%s</p>\n", rpt_no_leaked_tags_text(r));
    else
        rc = rpt_leak_table(r, &d, f, t, nt, MAX_TAG_ROWS);
    if (nt > MAX_TAG_ROWS)
        fprintf(f, "<p>… and %d more tags (sessions.csv and the results file have them all).</p>\n",
                nt - MAX_TAG_ROWS);
    free(t);
    if (rc == LG_OK) rc = rpt_refs_table(r, &d, f, "<h2 id=\"refs\">Unreleased references</h2>\n");
    if (rc == LG_OK)
        rpt_census_table(r, &d, f,
                         "<h2 id=\"census\">Census: blocks still alive, by session born</h2>\n");
    if (rc == LG_OK)
        rpt_procs_table(r, &d, f, "<h2 id=\"processes\">Processes: CMD and its children</h2>\n");
    fputs("</section>\n", f);
    return rc;
}

static void sessions(const struct rpt_results *r, FILE *f)
{
    char a[48];
    fputs(
        "<section "
        "id=\"sessions\">\n<h2>Sessions</h2>\n<table>\n<tr><th>#</th><th>mode</th><th>duration</th>"
        "<th>train loss</th><th>val loss</th><th>leaked host</th><th>leaked device</th>",
        f);
    for (int c = 0; c < RPT_NCHANNELS; c++)
        if (!rpt_channel_exact(c) && rpt_channel_measured(r, c))
            fprintf(f, "<th>Δ %s</th>", rpt_channel_name(c));
    fputs("<th>error</th></tr>\n", f);
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        fprintf(f, "<tr><td class=\"num\">%d</td><td>", s->index);
        put_text(f, s->mode);
        fprintf(f, "%s</td><td class=\"num\">%.3f s</td>", s->warmup ? " (warm-up)" : "",
                s->duration_s);
        fprintf(
            f, isfinite(s->train_loss) ? "<td class=\"num\">%.4f</td>" : "<td class=\"num\">—</td>",
            s->train_loss);
        fprintf(f,
                isfinite(s->val_loss) ? "<td class=\"num\">%.4f</td>" : "<td class=\"num\">—</td>",
                s->val_loss);
        fprintf(f, "<td class=\"num\">%s</td>",
                rpt_fmt_value(a, sizeof a, RPT_CH_TAGGED_HOST, s->leaked_host_bytes, false));
        fprintf(f, "<td class=\"num\">%s</td>",
                rpt_fmt_value(a, sizeof a, RPT_CH_TAGGED_DEVICE, s->leaked_device_bytes, false));
        for (int c = 0; c < RPT_NCHANNELS; c++)
            if (!rpt_channel_exact(c) && rpt_channel_measured(r, c))
                fprintf(f, "<td class=\"num\">%s</td>",
                        s->warmup ? "—"
                                  : rpt_fmt_value(a, sizeof a, c, rpt_session_delta(s, c), true));
        fputs("<td>", f);
        put_text(f, s->error);
        if (s->invalid_frees > 0)
            fprintf(f, "%s%lld invalid free(s)", s->error[0] ? "; " : "",
                    (long long)s->invalid_frees);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n</section>\n", f);
}

static void config(const struct rpt_results *r, FILE *f)
{
    fputs("<section id=\"config\">\n<h2>Run configuration</h2>\n", f);
    rpt_config_tables(r, &rpt_html, f, "<h3>Budgets</h3>\n");
    fputs("</section>\n", f);
}

int rpt_write_html(const struct rpt_results *r, const char *svg_dir, FILE *f)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, "
          "initial-scale=1\">\n<title>leakgate: ",
          f);
    put_text(f, r->has_verdict ? rpt_status_word(r->verdict.status) : "NO VERDICT");
    fputs(" — ", f);
    put_text(f, r->run.command);
    fputs(" ", f);
    put_text(f, r->run.preset);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", style);
    banner(r, f);
    channels(r, f);
    plots(r, svg_dir, f);
    int rc = leaks(r, f);
    if (rc != LG_OK) return rc;
    rpt_html_gate(r, f);
    rpt_html_alloc_stacks(r, f);
    rpt_html_notes(r, f);
    sessions(r, f);
    config(r, f);
    fputs("<footer><p>leakgate ", f);
    put_text(f, r->run.version);
    fputs(" · results schema ", f);
    put_text(f, r->run.schema);
    fputs("</p></footer>\n</body>\n</html>\n", f);
    return ferror(f) ? lg_fail(LG_EIO, "writing the HTML report failed") : LG_OK;
}
