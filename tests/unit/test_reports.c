/* test_reports.c — the artefacts made from recorded results (clean, leaking, partial, soak,
 * device): files exist and parse (SVG with xmllint, JUnit against docs/junit.xsd), PNGs have
 * the expected pixel size and content, documents say the right verdict and name the leaked
 * tags; hostile text is escaped; gnuplot missing is a clear error; compare's exit codes. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lg_test.h"
#include "lg_test_rpt.h"
#include "plot_impl.h"
#include "reports.h"
#include "verdict.h"

TestSuite(reports, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 120);

/* ---- helpers ------------------------------------------------------------------------------- */

static const char *fixture(const char *name) { return lg_test_datafile("results", name); }

static struct rpt_results *load(const char *name) /* freed with rpt_results_free */
{
    struct rpt_results *r = NULL;
    cr_assert_eq(rpt_results_load(&r, name[0] == '/' ? name : fixture(name)), LG_OK, "%s",
                 lg_errmsg());
    return r;
}

/* clean.jsonl cut after its second measured session (no verdict line): too few sessions to
 * pass; the path of the copy */
static const char *short_clean(void)
{
    const char *path = lg_test_tmpfile("short.jsonl");
    cr_assert_eq(lg_shell("head -n 5 '%s' > '%s'", fixture("clean.jsonl"), path), 0);
    return path;
}

static const char *out_dir(const char *name) { return lg_test_tmpfile(name); }

static char *slurp(const char *dir, const char *name) /* caller frees; NULL when missing */
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lg_slurp(path, NULL);
}

static bool exists(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lg_exists(path);
}

static int count(const char *s, const char *pat)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, pat)); p += strlen(pat)) n++;
    return n;
}

/* Asserts that text (the artefact `what`) holds every needle. */
static void expect_holds(const char *text, const char *what, const char *const *needles)
{
    cr_assert_not_null(text, "%s is missing", what);
    for (; *needles; needles++) cr_assert(strstr(text, *needles), "%s lacks %s", what, *needles);
}
#define EXPECT_HOLDS(text, what, ...)                                                              \
    expect_holds(text, what, (const char *const[]){__VA_ARGS__, NULL})

/* Asserts that the artefact dir/name exists and holds every needle. */
static void expect_file(const char *dir, const char *name, const char *const *needles)
{
    char *text = slurp(dir, name);
    expect_holds(text, name, needles);
    free(text);
}
#define EXPECT_FILE(dir, name, ...) expect_file(dir, name, (const char *const[]){__VA_ARGS__, NULL})

/* Width and height from a PNG's IHDR chunk; false when it is not a PNG. */
static bool png_size(const char *dir, const char *name, int *w, int *h, long *bytes)
{
    char path[1024];
    unsigned char b[24];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool ok = fread(b, 1, 24, f) == 24 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0 &&
              memcmp(b + 12, "IHDR", 4) == 0;
    fseek(f, 0, SEEK_END);
    *bytes = ftell(f);
    fclose(f);
    *w = (b[16] << 24) | (b[17] << 16) | (b[18] << 8) | b[19];
    *h = (b[20] << 24) | (b[21] << 16) | (b[22] << 8) | b[23];
    return ok;
}

/* Every applicable figure: PNG of the declared size with content, SVG well-formed. Returns
 * how many figures apply. */
static int check_figures(const struct rpt_results *r, const char *dir)
{
    int n = 0;
    for (int fig = 0; fig < RPT_NFIGURES; fig++) {
        char png[64], svg[64];
        snprintf(png, sizeof png, "%s.png", rpt_figure_name(fig));
        snprintf(svg, sizeof svg, "%s.svg", rpt_figure_name(fig));
        if (!rpt_figure_applies(r, fig)) {
            cr_assert_not(exists(dir, png), "%s made though it does not apply", png);
            continue;
        }
        n++;
        int w, h, ew, eh;
        long bytes;
        rpt_figure_size(fig, &ew, &eh);
        cr_assert(png_size(dir, png, &w, &h, &bytes), "%s/%s is not a PNG", dir, png);
        cr_assert(w == ew && h == eh, "%s is %dx%d, expected %dx%d", png, w, h, ew, eh);
        /* a blank 1000x560 canvas compresses to ~3 KB; axes, text and data take far more */
        cr_assert_gt(bytes, 12000, "%s is nearly empty (%ld bytes)", png, bytes);
        cr_assert_eq(lg_shell("xmllint --noout '%s/%s'", dir, svg), 0, "%s is not well-formed XML",
                     svg);
        char *s = slurp(dir, svg);
        char size[64];
        snprintf(size, sizeof size, "width=\"%d\" height=\"%d\"", ew, eh);
        cr_assert(s && strstr(s, size), "%s lacks %s", svg, size);
        cr_assert_gt(count(s, "<path"), 20, "%s draws almost nothing", svg);
        free(s);
    }
    return n;
}

static void check_junit(const char *dir)
{
    cr_assert_eq(lg_shell("xmllint --version >/dev/null 2>&1"), 0,
                 "xmllint is needed: apt-get install libxml2-utils");
    cr_assert_eq(lg_shell("xmllint --noout --schema '%s/docs/junit.xsd' '%s/junit.xml' 2>&1",
                          LG_SOURCE_DIR, dir),
                 0, "junit.xml does not validate against docs/junit.xsd");
}

/* Checks the HTML report: verdict banner first, n inline plots, no network reference. */
static void check_html(const char *dir, const char *word, int plots)
{
    char *html = slurp(dir, "report.html");
    cr_assert_not_null(html);
    const char *body = strstr(html, "<body>");
    cr_assert_not_null(body);
    char banner[96];
    snprintf(banner, sizeof banner, "<div class=\"word\">%s</div>", word);
    const char *first = strchr(body + 6, '<');
    cr_assert(strncmp(first, "<header id=\"verdict\"", 20) == 0,
              "the verdict is not the first thing on the page");
    cr_assert(strstr(html, banner), "report.html lacks %s", banner);
    cr_assert_eq(count(html, "<svg class=\"plot\""), plots);
    cr_assert_eq(count(html, "http://"), 0, "report.html refers to the network");
    cr_assert_eq(count(html, "https://"), 0, "report.html refers to the network");
    cr_assert_eq(count(html, "<script"), 0);
    cr_assert_eq(count(html, "<?xml"), 0, "an SVG prologue was left inline");
    free(html);
}

/* ---- artefacts from recorded results -------------------------------------------------------- */

/* Writes every artefact of the recorded run `name`.jsonl into a fresh directory (its path in
 * dir[512]) and checks what every run's artefacts must show: `figures` figures apply and were
 * drawn, junit.xml validates, and report.html opens with the verdict `word` and inlines each
 * figure. */
static void write_artefacts(const char *name, int figures, const char *word, char *dir)
{
    char file[64];
    snprintf(file, sizeof file, "%s.jsonl", name);
    struct rpt_results *r = load(file);
    snprintf(dir, 512, "%s", out_dir(name));
    cr_assert_eq(rpt_write_all(r, dir, RPT_ALL), LG_OK, "%s", lg_errmsg());
    cr_assert_eq(check_figures(r, dir), figures, "%s: figures that apply", name);
    rpt_results_free(r);
    check_junit(dir);
    check_html(dir, word, figures);
}

/* Asserts that summary.md in dir begins with its verdict's heading. */
static void expect_heading(const char *dir, const char *heading)
{
    char *md = slurp(dir, "summary.md");
    cr_assert_not_null(md, "summary.md is missing");
    cr_assert(strncmp(md, heading, strlen(heading)) == 0, "summary.md begins %.60s, not %s", md,
              heading);
    free(md);
}

Test(reports, clean_run_makes_every_artefact_and_says_pass)
{
    char dir[512];
    /* deltas, leaks and timeline; no trend for a 6-session run */
    write_artefacts("clean", 3, "PASS", dir);
    char *junit = slurp(dir, "junit.xml");
    EXPECT_HOLDS(junit, "junit.xml", "<testsuites name=\"leakgate\"",
                 "failures=\"0\" errors=\"0\""); /* a clean run has no failure */
    cr_assert_eq(count(junit, "<failure"), 0);
    cr_assert_eq(count(junit, "<testcase name=\"session 2 (fp32)\""), 6,
                 "a testcase per measured session on each of the 6 measured channels");
    free(junit);
    expect_heading(dir, "## leakgate: ✅ PASS");
    EXPECT_FILE(dir, "summary.md", "No tagged memory outlived its session");
    char *csv = slurp(dir, "sessions.csv");
    cr_assert_eq(count(csv, "\r\n"), 1 + 8, "a header and a row per session");
    cr_assert(strstr(csv, ",rss_delta,") && strstr(csv, ",rss_abs,"));
    /* every row has as many fields as the header (no field here holds a comma) */
    int fields = count(strtok(csv, "\r"), ",");
    for (char *row; (row = strtok(NULL, "\r\n"));)
        cr_assert_eq(count(row, ","), fields, "row %.20s", row);
    free(csv);
}

Test(reports, leaking_run_names_the_tags_and_the_retain_site)
{
    char dir[512];
    write_artefacts("leaking", 3, "LEAK", dir);
    char *junit = slurp(dir, "junit.xml");
    cr_assert_gt(count(junit, "<failure"), 6 * 6,
                 "each measured session fails on every leaking channel");
    free(junit);
    EXPECT_FILE(dir, "junit.xml", "type=\"leak\"",
                /* a failure carries the verdict's text */
                "verdict leak: 6 of 6 measured sessions left 18.98 MiB live",
                /* a channel never measured gets its verdict only */
                "<testsuite name=\"leakgate.tagged_device\" tests=\"1\"",
                "<skipped message=\"not measured on this machine (cpu)\"/>");
    expect_heading(dir, "## leakgate: ❌ LEAK");
    EXPECT_FILE(dir, "summary.md", "**Exit status 1**",
                /* the top tag with its retain site */
                "| `varmap/input_embed.cont.weight` | host | 384.00 KiB | 2.25 MiB | 6 | 6/6 | "
                "`trainer_new (model/trainer.c:142)` ×6 |",
                "| process RSS (`rss`) | ❌ leak |");
    char *html = slurp(dir, "report.html");
    EXPECT_HOLDS(html, "report.html", "<code>varmap/enc_lstm.w_ih</code>",
                 "<details><summary>stack 1 (1 allocation)</summary><pre>vm_tensor_new "
                 "(model/varmap.c:77)",
                 "<code>trainer_new (model/trainer.c:142)</code>", "id=\"config\"",
                 "varmap-dup-ref",
                 /* ids of the inline SVGs are prefixed per figure, so they cannot clash */
                 "id='deltas-gpPt0'", "id='timeline-gpPt0'");
    cr_assert_eq(count(html, "id='gpPt0'"), 0);
    free(html);
}

Test(reports, partial_run_reports_no_verdict)
{
    char dir[512];
    write_artefacts("partial", 3, "NO VERDICT", dir);
    EXPECT_FILE(dir, "junit.xml",
                "<error message=\"no verdict: the run was cut short after 5 session(s) (its last "
                "line was cut mid-write)\" type=\"partial\"",
                /* sessions beyond budget fail even without a verdict */
                "beyond budget 0 (exact) (no verdict: the run was cut short)");
    EXPECT_FILE(dir, "summary.md", "NO VERDICT (run cut short)",
                /* observed, not judged */
                "| tagged host bytes (`tagged_host`) | 3 | 1.75 MiB | ❌ 3 |",
                "`adam.m/enc_lstm.w_hh`");
}

Test(reports, soak_run_gets_the_trend_figure)
{
    char dir[512];
    write_artefacts("soak", 4, "LEAK", dir);
    struct rpt_results *r = load("soak.jsonl");
    /* the figure names the verdict's slope and budget for rss, as the fixture's verdict line
     * gives them (98,638.5 B and 32,768 B there), each in KiB to two places */
    const struct rpt_channel_verdict *rss = NULL;
    for (int i = 0; i < r->verdict.n_channels; i++)
        if (r->verdict.channels[i].channel == RPT_CH_RSS) rss = &r->verdict.channels[i];
    cr_assert(rss && rss->slope > 0 && rss->budget > 0, "the fixture's rss verdict");
    char slope[96];
    snprintf(slope, sizeof slope, "Theil–Sen +%.2f KiB/session (budget %.2f KiB/session)",
             rss->slope / 1024, rss->budget / 1024);
    EXPECT_FILE(dir, "trend.svg", "process RSS — LEAK", slope,
                /* the axis in a human unit picked from the data */
                "Δ vs baseline (MiB)");
    cr_assert(rpt_figure_applies(r, RPT_FIG_TREND));
    rpt_results_free(r);
    r = load("clean.jsonl");
    cr_assert_not(rpt_figure_applies(r, RPT_FIG_TREND), "not a soak");
    rpt_results_free(r);
}

Test(reports, device_run_plots_the_device_channels)
{
    char dir[512];
    write_artefacts("device", 3, "LEAK", dir);
    EXPECT_FILE(dir, "deltas.svg", "tagged device bytes — LEAK",
                "whole GPU used, every process (driver view) — LEAK", "tagged host bytes — PASS",
                "budget ±2.00 MiB");
    EXPECT_FILE(dir, "summary.md",
                "| `act/dec.attn.scores` | device | 4.00 MiB | 20.00 MiB | 5 | 5/5 | — |");
}

Test(reports, a_long_timeline_is_thinned_not_dropped)
{
    struct rpt_results *r = load("clean.jsonl");
    enum { N = 60000 }; /* a long session: far more steps than a plot can show */
    struct rpt_session *s = &r->sessions[3];
    free(s->samples);
    s->samples = calloc(N, sizeof *s->samples);
    s->n_samples = N;
    for (int j = 0; j < N; j++)
        s->samples[j] =
            lg_test_sample(j, "train", j * 1e-3, 20 << 20, RPT_NONE, 30 << 20, 90 << 20);
    s->duration_s = N * 1e-3;
    const char *dir = out_dir("long");
    cr_assert_eq(rpt_plot(r, RPT_FIG_TIMELINE, dir), LG_OK, "%s", lg_errmsg());
    char path[1024];
    snprintf(path, sizeof path, "%s/timeline.svg", dir);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    /* 60000 points x 3 series would be megabytes of SVG; the figure keeps about 4000 */
    cr_assert_lt(st.st_size, 400 * 1024, "timeline.svg is %lld bytes", (long long)st.st_size);
    int w, h;
    long bytes;
    cr_assert(png_size(dir, "timeline.png", &w, &h, &bytes) && w == 1000 && h == 560);
    rpt_results_free(r);
}

Test(reports, trend_intercept_is_the_median_residual)
{
    double x[9], y[9], b = -1;
    for (int i = 0; i < 9; i++) {
        x[i] = 10 + i;
        y[i] = 3 * x[i] + 7;
    }
    y[2] += 5000; /* two outliers move a mean, not a median */
    y[7] -= 900;
    cr_assert_eq(rpt_line_intercept(x, y, 9, 3.0, &b), LG_OK);
    cr_assert_float_eq(b, 7.0, 1e-12);
    cr_assert_eq(rpt_line_intercept(x, y, 0, 3.0, &b), LG_OK);
    cr_assert_eq(b, 0);
    cr_assert_eq(rpt_line_intercept(x, y, 9, NAN, &b), LG_OK);
    cr_assert_eq(b, 0);
}

Test(reports, units_follow_the_data)
{
    cr_assert_str_eq(rpt_unit_for(100.0).name, "B");
    cr_assert_str_eq(rpt_unit_for(64.0 * 1024).name, "KiB");
    cr_assert_str_eq(rpt_unit_for(815.0 * 1024 * 1024).name, "MiB");
    cr_assert_str_eq(rpt_unit_for(3.0 * 1024 * 1024 * 1024).name, "GiB");
    char buf[48];
    cr_assert_str_eq(rpt_fmt_sbytes(buf, sizeof buf, 3.0 * 1024 * 1024 + 1024 * 100), "+3.10 MiB");
    cr_assert_str_eq(rpt_fmt_sbytes(buf, sizeof buf, -512), "-512 B");
    cr_assert_str_eq(rpt_fmt_sbytes(buf, sizeof buf, NAN), "n/a");
    cr_assert_str_eq(rpt_fmt_value(buf, sizeof buf, RPT_CH_REFS, 6, false), "6");
    cr_assert_str_eq(rpt_fmt_value(buf, sizeof buf, RPT_CH_RSS, RPT_NONE, false), "n/a");
}

/* ---- failures and hostile input -------------------------------------------------------------- */

static char saved_path[4096];

static void restore_path(void)
{
    if (saved_path[0]) setenv("PATH", saved_path, 1); /* the fixture's cleanup runs rm */
    lg_test_teardown();
}

Test(reports, gnuplot_missing_is_a_clear_error_and_the_rest_is_written, .fini = restore_path)
{
    snprintf(saved_path, sizeof saved_path, "%s",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    struct rpt_results *r = load("leaking.jsonl");
    const char *dir = out_dir("nognuplot");
    cr_assert_eq(setenv("PATH", "/nonexistent-bin", 1), 0); /* this test runs in its own process */
    cr_assert_eq(rpt_plot_all(r, dir), LG_EUNAVAIL);
    cr_assert_str_eq(lg_errmsg(), "gnuplot not found: apt-get install gnuplot-nox");
    cr_assert_eq(rpt_write_all(r, dir, RPT_ALL), LG_EUNAVAIL);
    cr_assert_str_eq(lg_errmsg(), "gnuplot not found: apt-get install gnuplot-nox");
    cr_assert(exists(dir, "junit.xml") && exists(dir, "summary.md") && exists(dir, "sessions.csv"));
    cr_assert_not(exists(dir, "deltas.png"));
    char *html = slurp(dir, "report.html");
    cr_assert_eq(count(html, "plot missing: "), 3);
    cr_assert(strstr(html, "<div class=\"word\">LEAK</div>"));
    free(html);
    char *argv[] = {"report", (char *)fixture("leaking.jsonl"), "-o", (char *)dir, NULL};
    cr_assert_eq(rpt_cmd_report(4, argv), 2, "gnuplot missing is an exit status 2");
    rpt_results_free(r);
}

/* A gnuplot of its own (a shell script of BODY) first on PATH; restore_path puts PATH back. */
static void fake_gnuplot(const char *body)
{
    snprintf(saved_path, sizeof saved_path, "%s",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char bin[600], exe[700], path[5000];
    snprintf(bin, sizeof bin, "%s/bin", lg_test_tmpdir());
    snprintf(exe, sizeof exe, "%s/gnuplot", bin);
    cr_assert_eq(mkdir(bin, 0755), 0);
    FILE *f = fopen(exe, "w");
    cr_assert(f, "%s", exe);
    fprintf(f, "#!/bin/sh\n%s", body);
    fclose(f);
    cr_assert_eq(chmod(exe, 0755), 0);
    snprintf(path, sizeof path, "%s:%s", bin, saved_path);
    setenv("PATH", path, 1);
}

Test(reports, a_failing_gnuplot_is_reported_with_its_own_words, .fini = restore_path)
{
    fake_gnuplot("echo \"line 7: undefined variable: frobnicate\" >&2\nexit 1\n");
    struct rpt_results *r = load("clean.jsonl");
    cr_assert_eq(rpt_write_all(r, out_dir("failing"), RPT_ALL), LG_EINTERNAL);
    cr_assert(strstr(lg_errmsg(), "gnuplot failed (exit status 1)"), "%s", lg_errmsg());
    cr_assert(strstr(lg_errmsg(), "line 7: undefined variable: frobnicate"), "%s", lg_errmsg());
    char *argv[] = {"report", (char *)fixture("clean.jsonl"), "-o", (char *)out_dir("failing2"),
                    NULL};
    cr_assert_eq(rpt_cmd_report(4, argv), 4, "a failing gnuplot is an internal error");
    rpt_results_free(r);
}

/* A gnuplot that exits 0 having written nothing (it took the script's path for an option: issue
 * 42.6) is named as such, with what it said, not blamed on a full disk. */
Test(reports, a_gnuplot_that_writes_nothing_is_named_with_its_words, .fini = restore_path)
{
    fake_gnuplot("echo \"gnuplot: unrecognized option $1\" >&2\nexit 0\n");
    struct rpt_results *r = load("clean.jsonl");
    cr_assert_eq(rpt_write_all(r, out_dir("silent"), RPT_ALL), LG_EIO);
    cr_assert(strstr(lg_errmsg(), "deltas.png: gnuplot exited 0 but wrote no PNG"), "%s",
              lg_errmsg());
    cr_assert(strstr(lg_errmsg(), "gnuplot said: gnuplot: unrecognized option"), "%s", lg_errmsg());
    cr_assert_not(strstr(lg_errmsg(), "disk full"), "%s", lg_errmsg());
    rpt_results_free(r);
}

static struct rpt_results *hostile_results(void) /* freed by the test */
{
    struct rpt_results *r = calloc(1, sizeof *r);
    strcpy(r->run.schema, RPT_SCHEMA);
    strcpy(r->run.command, "run");
    strcpy(r->run.preset, "<b>tiny</b>");
    strcpy(r->run.device, "cpu");
    strcpy(r->run.modes, "fp32");
    strcpy(r->run.inject, "x\"y'z&<script>alert(1)</script>");
    r->run.mem_bytes = RPT_NONE;
    r->n_sessions = 2;
    r->sessions = calloc(2, sizeof *r->sessions);
    for (int i = 0; i < 2; i++) {
        struct rpt_session *s = &r->sessions[i];
        s->index = i;
        s->warmup = i == 0;
        strcpy(s->mode, "fp32");
        s->duration_s = 0.5;
        s->train_loss = s->val_loss = s->quant_val_loss = NAN;
        for (int c = 0; c < RPT_NCHANNELS; c++) {
            s->absolute[c] = c == RPT_CH_TAGGED_HOST ? 4096 : RPT_NONE;
            s->delta[c] = c == RPT_CH_TAGGED_HOST && i ? 4096 : RPT_NONE;
        }
        s->leaked_host_bytes = i ? 4096 : 0;
        s->leaked_device_bytes = s->peak_tagged_host = s->peak_tagged_device = RPT_NONE;
    }
    struct rpt_session *s = &r->sessions[1];
    strcpy(s->error, "bad, \"quoted\" | pipe\nand \x01 control <tag>");
    s->n_groups = 1;
    s->groups = calloc(1, sizeof *s->groups);
    lg_test_leak_group(&s->groups[0], "act/<script>|*x*`", "host", 4096, 1, 1, (int64_t[]){1},
                       (const char *[]){"f<1>\ng&2"});
    r->has_verdict = true;
    r->verdict.status = RPT_LEAK;
    r->verdict.exit_code = 1;
    r->verdict.sessions_measured = 1;
    strcpy(r->verdict.summary, "leak in </header><script>x</script>");
    r->verdict.n_channels = 1;
    r->verdict.channels[0] = (struct rpt_channel_verdict){.channel = RPT_CH_TAGGED_HOST,
                                                          .status = RPT_LEAK,
                                                          .figure = 4096,
                                                          .slope = NAN,
                                                          .slope_lo = NAN,
                                                          .slope_hi = NAN,
                                                          .shift = NAN,
                                                          .why = "a <why> & \"more\""};
    return r;
}

Test(reports, every_text_is_escaped)
{
    struct rpt_results *r = hostile_results();
    const char *dir = out_dir("hostile");
    cr_assert_eq(rpt_write_all(r, dir, RPT_ALL & ~RPT_PLOTS), LG_OK, "%s", lg_errmsg());
    char *html = slurp(dir, "report.html");
    cr_assert_eq(count(html, "<script"), 0, "raw text reached the HTML");
    cr_assert_eq(count(html, "<b>tiny"), 0);
    cr_assert(strstr(html, "act/&lt;script&gt;|*x*`"));
    cr_assert(strstr(html, "leak in &lt;/header&gt;&lt;script&gt;x&lt;/script&gt;"));
    cr_assert(strstr(html, "<pre>f&lt;1&gt;\ng&amp;2</pre>"));
    free(html);
    check_junit(dir); /* the control byte and quotes must not break the XML */
    char *md = slurp(dir, "summary.md");
    cr_assert(strstr(md, "`act/<script>/*x*'`"), "a code span cannot be broken out of");
    cr_assert(strstr(md, "a &lt;why&gt; &amp; \"more\""));
    free(md);
    char *csv = slurp(dir, "sessions.csv");
    cr_assert(strstr(csv, ",\"bad, \"\"quoted\"\" | pipe\nand \x01 control <tag>\"\r\n"),
              "RFC 4180 quoting");
    free(csv);
    for (int i = 0; i < r->n_sessions; i++) rpt_session_fini(&r->sessions[i]);
    free(r->sessions);
    free(r);
}

/* ---- compare and the commands ------------------------------------------------------------------
 */

static bool compare_into(const char *base, const char *head, char **text)
{
    struct rpt_results *b = load(base), *h = load(head);
    size_t n = 0;
    FILE *f = open_memstream(text, &n);
    bool worse = rpt_compare(b, h, NULL, f) == RPT_COMPARE_REGRESSED;
    fclose(f);
    rpt_results_free(b);
    rpt_results_free(h);
    return worse;
}

Test(reports, compare_finds_the_regression_and_only_it)
{
    char *text = NULL;
    cr_assert(compare_into("clean.jsonl", "leaking.jsonl", &text));
    cr_assert(strstr(text, "HEAD REGRESSED: 6 channels beyond budget, 24 new leaking tags."), "%s",
              text);
    cr_assert(strstr(text, "varmap/input_embed.cont.weight"));
    cr_assert(strstr(text, "NEW"));
    /* RSS grew about 3 MiB a session: within its 4 MiB band, but judged as `run` judges it, by
     * the slope against the 32 KiB/session budget, it leaks */
    cr_assert(
        strstr(
            text,
            "  rss               -216.00 KiB      +2.95 MiB      +3.16 MiB    32.00 KiB/s  REGRESSED\n"),
        "%s", text);
    cr_assert(strstr(text, "REGRESSED  (sessions leaving any: 0 → 6)"));
    free(text);
    /* two clean runs of 6 sessions (enough for these budgets): no regression */
    cr_assert_not(compare_into("clean.jsonl", "clean2.jsonl", &text), "%s", text);
    cr_assert(strstr(text, "No regression beyond the budgets."), "%s", text);
    free(text);
    /* a HEAD of 2 measured sessions: no regression, and no evidence either */
    cr_assert_not(compare_into("clean.jsonl", short_clean(), &text), "%s", text);
    cr_assert(
        strstr(text, "INCONCLUSIVE: no regression found, but HEAD's own verdict is inconclusive"),
        "%s", text);
    cr_assert(strstr(text, "fewer than the 4 needed"), "%s", text);
    free(text);
    cr_assert_not(compare_into("clean.jsonl", "clean.jsonl", &text));
    free(text);
    cr_assert_not(compare_into("leaking.jsonl", "clean.jsonl", &text), "a fix is not a regression");
    cr_assert(strstr(text, "improved") && strstr(text, "gone"));
    free(text);
    cr_assert(compare_into("clean.jsonl", "device.jsonl", &text), "a new device leak");
    cr_assert(strstr(text, "measured in HEAD only: not compared"));
    free(text);
}

/* A BASE without figures for the channels HEAD requires compares nothing: never "no
 * regression". */
Test(reports, compare_with_nothing_compared_is_inconclusive)
{
    struct rpt_results *b = load("clean.jsonl"), *h = load("clean2.jsonl");
    for (int i = 0; i < b->n_sessions; i++)
        for (int c = RPT_CH_JE_ALLOCATED; c < RPT_NCHANNELS; c++)
            b->sessions[i].absolute[c] = b->sessions[i].delta[c] = RPT_NONE;
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    cr_assert_eq(rpt_compare(b, h, NULL, f), RPT_COMPARE_INCONCLUSIVE);
    fclose(f);
    cr_assert(strstr(text, "INCONCLUSIVE: no regression found, but channels HEAD requires were "
                           "not compared (not measured in both runs): je_allocated, je_active, "
                           "je_resident, rss"),
              "%s", text);
    cr_assert_null(strstr(text, "No regression beyond the budgets."), "%s", text);
    free(text);
    rpt_results_free(b);
    rpt_results_free(h);
}

Test(reports, compare_command_exit_codes)
{
    char *a[] = {"compare", (char *)fixture("clean.jsonl"), (char *)fixture("leaking.jsonl"), NULL};
    cr_assert_eq(rpt_cmd_compare(3, a), 1);
    char *b[] = {"compare", (char *)fixture("clean.jsonl"), (char *)short_clean(), NULL};
    cr_assert_eq(rpt_cmd_compare(3, b), 3, "too few sessions to pass: inconclusive");
    char *b2[] = {"compare", (char *)fixture("clean.jsonl"), (char *)fixture("clean2.jsonl"), NULL};
    cr_assert_eq(rpt_cmd_compare(3, b2), 0, "two clean runs");
    char *c[] = {"compare", (char *)fixture("clean.jsonl"), NULL};
    cr_assert_eq(rpt_cmd_compare(2, c), 2);
    char *d[] = {"compare", (char *)fixture("clean.jsonl"), "/nonexistent.jsonl", NULL};
    cr_assert_eq(rpt_cmd_compare(3, d), 2);
    char *e[] = {"compare", "--bogus", (char *)fixture("clean.jsonl"),
                 (char *)fixture("clean.jsonl"), NULL};
    cr_assert_eq(rpt_cmd_compare(4, e), 2);
    char *f[] = {"compare", "-h", NULL};
    cr_assert_eq(rpt_cmd_compare(2, f), 0);
    /* and through the standalone tool */
    cr_assert_eq(lg_shell("'%s' compare '%s' '%s' >/dev/null", LG_REPORT_TOOL,
                          fixture("clean.jsonl"), fixture("leaking.jsonl")),
                 1);
    cr_assert_eq(lg_shell("'%s' compare '%s' '%s' >/dev/null", LG_REPORT_TOOL,
                          fixture("clean.jsonl"), short_clean()),
                 3);
    cr_assert_eq(lg_shell("'%s' frobnicate 2>/dev/null", LG_REPORT_TOOL), 2);
}

/* A verdict line is believed only as far as the file's sessions go: `report` judges them again
 * when the line claims more (sessions that are not there, a channel nobody measured, a pass
 * over sessions that leak), and says so. */
Test(reports, a_verdict_line_is_believed_only_as_far_as_its_sessions_go)
{
    struct rpt_results *r = load("clean.jsonl");
    cr_assert_eq(rpt_results_check(r, "clean.jsonl"), LG_OK, "%s", lg_errmsg());
    for (int i = 0; i < r->n_sessions; i++) /* every figure gone, the PASS line kept */
        for (int c = 0; c < RPT_NCHANNELS; c++)
            r->sessions[i].absolute[c] = r->sessions[i].delta[c] = RPT_NONE;
    cr_assert_eq(rpt_results_check(r, "x.jsonl"), LG_EFORMAT);
    cr_assert(strstr(lg_errmsg(), "x.jsonl: its verdict line claims more than its sessions show") &&
                  strstr(lg_errmsg(), "it judges tagged_host pass, but no session measured it"),
              "%s", lg_errmsg());
    cr_assert_eq(rpt_results_believe(r, "x.jsonl", "report"), LG_OK);
    cr_assert_eq(r->verdict.status, RPT_INCONCLUSIVE, "%s", r->verdict.summary);
    cr_assert(strstr(r->verdict.summary, "judged again from the 8 session(s) on disk"), "%s",
              r->verdict.summary);
    rpt_results_free(r);

    /* the run line and the PASS verdict line, no session between them */
    const char *bare = lg_test_tmpfile("bare.jsonl"), *swapped = lg_test_tmpfile("swapped.jsonl");
    cr_assert_eq(lg_shell("(head -n 1 '%s'; tail -n 1 '%s') > '%s'", fixture("clean.jsonl"),
                          fixture("clean.jsonl"), bare),
                 0);
    char *a[] = {"report", (char *)bare, "-o", (char *)out_dir("bare"), "--no-plots", NULL};
    cr_assert_eq(rpt_cmd_report(5, a), 3, "no measured session: inconclusive, never a pass");
    char *summary = slurp(out_dir("bare"), "summary.md");
    cr_assert(summary && strstr(summary, "INCONCLUSIVE") && !strstr(summary, "PASS"), "%s",
              summary);
    free(summary);
    /* a leaking run's sessions under a clean run's PASS line (the same session count) */
    cr_assert_eq(lg_shell("(head -n -1 '%s'; tail -n 1 '%s') > '%s'", fixture("leaking.jsonl"),
                          fixture("clean.jsonl"), swapped),
                 0);
    char *b[] = {"report", (char *)swapped, "-o", (char *)out_dir("swapped"), "--no-plots", NULL};
    cr_assert_eq(rpt_cmd_report(5, b), 1, "the sessions leak: the report says so");
    summary = slurp(out_dir("swapped"), "summary.md");
    cr_assert(summary && strstr(summary, "LEAK"), "%s", summary);
    free(summary);
}

Test(reports, report_command_usage_and_success)
{
    const char *dir = out_dir("cmd");
    char *ok[] = {"report", (char *)fixture("partial.jsonl"), "-o", (char *)dir, NULL};
    /* a partial run's results make a report; its verdict is the run's (a leak, here) */
    cr_assert_eq(rpt_cmd_report(4, ok), 1, "a partial run's results make a report");
    cr_assert(exists(dir, "report.html") && exists(dir, "timeline.svg"));
    char *none[] = {"report", NULL};
    cr_assert_eq(rpt_cmd_report(1, none), 2);
    char *no_o[] = {"report", (char *)fixture("clean.jsonl"), NULL};
    cr_assert_eq(rpt_cmd_report(2, no_o), 2);
    char *dangling[] = {"report", (char *)fixture("clean.jsonl"), "-o", NULL};
    cr_assert_eq(rpt_cmd_report(3, dangling), 2);
    char *bogus[] = {"report", "--frob", (char *)fixture("clean.jsonl"), "-o", (char *)dir, NULL};
    cr_assert_eq(rpt_cmd_report(5, bogus), 2);
    char *missing[] = {"report", "/nonexistent.jsonl", "-o", (char *)dir, NULL};
    cr_assert_eq(rpt_cmd_report(4, missing), 2);
    const char *d2 = out_dir("cmd2/nested");
    char *noplots[] = {
        "report", (char *)fixture("clean.jsonl"), "--output", (char *)d2, "--no-plots", NULL};
    cr_assert_eq(rpt_cmd_report(5, noplots), 0);
    cr_assert(exists(d2, "junit.xml"));
    cr_assert_not(exists(d2, "deltas.png"));
    cr_assert_eq(lg_shell("'%s' report '%s' -o '%s/tool' >/dev/null", LG_REPORT_TOOL,
                          fixture("leaking.jsonl"), lg_test_tmpdir()),
                 1, "the report's exit status is its verdict's");
}
