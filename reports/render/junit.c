/* junit.c — JUnit XML (docs/junit.xsd) for CI test pages. One testsuite for the run (the
 * overall verdict, and any session that failed), then one testsuite per channel with a
 * testcase per measured session and one for the channel's verdict. A failure carries the
 * verdict's own text. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render_impl.h"

enum tc_kind { TC_PASS, TC_FAIL, TC_ERROR, TC_SKIP };

struct tcase {
    char name[64];
    double time;
    enum tc_kind kind;
    char type[16];   /* failure/error type: "leak", "inconclusive", "budget", ... */
    char msg[400];   /* the one-line message */
    char text[1200]; /* the body: failure detail or system-out */
};

struct tsuite {
    char name[48];
    int n;
    struct tcase *cases;
    int failures, errors, skipped;
    double time;
};

static void set_case(struct tcase *tc, enum tc_kind kind, const char *type, const char *msg,
                     const char *text)
{
    tc->kind = kind;
    lg_strlcpy(tc->type, type, sizeof tc->type);
    lg_strlcpy(tc->msg, msg, sizeof tc->msg);
    lg_strlcpy(tc->text, text, sizeof tc->text);
}

/* The testcase for session i on channel c. */
static void session_case(const struct rpt_results *r, int i, enum rpt_channel c, struct tcase *tc)
{
    const struct rpt_session *s = &r->sessions[i];
    const struct rpt_channel_verdict *cv = rpt_verdict_for(r, c);
    char val[48], bud[48], msg[400], text[1200];
    int64_t v;
    bool over = false;
    snprintf(tc->name, sizeof tc->name, "session %d (%s)", s->index, s->mode);
    tc->time = isfinite(s->duration_s) ? s->duration_s : 0;
    if (!rpt_session_judge(r, i, c, &v, &over)) {
        set_case(tc, TC_SKIP, "", "not measured in this session", "");
        return;
    }
    rpt_fmt_value(val, sizeof val, c, v, !rpt_channel_exact(c));
    if (rpt_channel_exact(c)) {
        snprintf(bud, sizeof bud, "0 (exact)");
    } else { /* the band is symmetric around the baseline */
        char b2[40];
        snprintf(bud, sizeof bud, "±%s",
                 rpt_fmt_figure(b2, sizeof b2, c, r->run.budgets[c].band, false));
    }
    const char *what = rpt_channel_exact(c)
                           ? (c == RPT_CH_REFS ? "unreleased references left by the session"
                                               : "bytes born in the session and still live")
                           : "delta against the baseline";
    snprintf(text, sizeof text, "%s: %s %s; budget %s", rpt_channel_name(c), what, val, bud);
    if (!over) {
        set_case(tc, TC_PASS, "", "", text);
    } else if (!r->has_verdict) {
        snprintf(msg, sizeof msg, "%s %s beyond budget %s (no verdict: the run was cut short)",
                 rpt_channel_name(c), val, bud);
        set_case(tc, TC_FAIL, "budget", msg, text);
    } else if (cv && cv->status == RPT_LEAK) {
        snprintf(msg, sizeof msg, "%s %s beyond budget %s; verdict leak: %s", rpt_channel_name(c),
                 val, bud, cv->why);
        snprintf(text + strlen(text), sizeof text - strlen(text), "\nverdict: leak — %s", cv->why);
        set_case(tc, TC_FAIL, "leak", msg, text);
    } else {
        snprintf(text + strlen(text), sizeof text - strlen(text),
                 "\nbeyond the budget in this session, but the channel's verdict is %s: %s",
                 cv ? rpt_status_name(cv->status) : "absent", cv ? cv->why : "not judged");
        set_case(tc, TC_PASS, "", "", text);
    }
}

/* The testcase for a channel's verdict. */
static void verdict_case(const struct rpt_results *r, enum rpt_channel c, struct tcase *tc)
{
    const struct rpt_channel_verdict *cv = rpt_verdict_for(r, c);
    char fig[48], bud[48], msg[400], text[1200];
    lg_strlcpy(tc->name, "verdict", sizeof tc->name);
    tc->time = 0;
    if (!cv) {
        set_case(tc, TC_SKIP, "", "not judged by the verdict", "");
        return;
    }
    rpt_fmt_figure(fig, sizeof fig, c, cv->figure, false);
    rpt_fmt_figure(bud, sizeof bud, c, cv->budget, false);
    snprintf(text, sizeof text, "%s: %s; figure %s, budget %s\n%s", rpt_channel_name(c),
             rpt_status_name(cv->status), fig, bud, cv->why);
    snprintf(msg, sizeof msg, "%s: %s", rpt_status_name(cv->status), cv->why);
    switch (cv->status) {
    case RPT_PASS:
    case RPT_SATURATING: set_case(tc, TC_PASS, "", "", text); break;
    case RPT_LEAK: set_case(tc, TC_FAIL, "leak", msg, text); break;
    case RPT_INCONCLUSIVE: set_case(tc, TC_FAIL, "inconclusive", msg, text); break;
    case RPT_UNAVAILABLE: set_case(tc, TC_SKIP, "", cv->why, ""); break;
    case RPT_ERROR: set_case(tc, TC_ERROR, "error", msg, text); break;
    }
}

/* The run's own suite: the overall verdict and every session that reported an error. */
static int run_suite(const struct rpt_results *r, struct tsuite *su)
{
    int n = 1;
    for (int i = 0; i < r->n_sessions; i++) n += r->sessions[i].error[0] != '\0';
    su->cases = calloc((size_t)n, sizeof *su->cases);
    if (!su->cases) return lg_fail(LG_ENOMEM, "out of memory writing JUnit");
    snprintf(su->name, sizeof su->name, "leakgate");
    struct tcase *tc = &su->cases[su->n++];
    lg_strlcpy(tc->name, "verdict", sizeof tc->name);
    if (!r->has_verdict) {
        char msg[400];
        snprintf(msg, sizeof msg, "no verdict: the run was cut short after %d session(s)%s",
                 r->n_sessions, r->truncated_lines ? " (its last line was cut mid-write)" : "");
        set_case(tc, TC_ERROR, "partial", msg, msg);
    } else {
        const struct rpt_verdict *v = &r->verdict;
        char text[1200];
        snprintf(text, sizeof text, "%s (exit status %d, %d measured sessions%s)\n%s",
                 rpt_status_word(v->status), v->exit_code, v->sessions_measured,
                 v->partial ? ", partial run" : "", v->summary);
        enum tc_kind k = v->status == RPT_LEAK || v->status == RPT_INCONCLUSIVE ? TC_FAIL
                         : v->status == RPT_ERROR                               ? TC_ERROR
                         : v->status == RPT_UNAVAILABLE                         ? TC_SKIP
                                                                                : TC_PASS;
        set_case(tc, k, rpt_status_name(v->status), v->summary, text);
    }
    for (int i = 0; i < r->n_sessions; i++) {
        const struct rpt_session *s = &r->sessions[i];
        if (!s->error[0]) continue;
        tc = &su->cases[su->n++];
        snprintf(tc->name, sizeof tc->name, "session %d (%s)", s->index, s->mode);
        tc->time = isfinite(s->duration_s) ? s->duration_s : 0;
        set_case(tc, TC_ERROR, "session", s->error, s->error);
    }
    return LG_OK;
}

static int channel_suite(const struct rpt_results *r, enum rpt_channel c, struct tsuite *su)
{
    su->cases = calloc((size_t)r->n_sessions + 1, sizeof *su->cases);
    if (!su->cases) return lg_fail(LG_ENOMEM, "out of memory writing JUnit");
    snprintf(su->name, sizeof su->name, "leakgate.%s", rpt_channel_name(c));
    /* a channel this machine never measured gets its verdict's word only, not a skip per session */
    for (int i = 0; i < r->n_sessions && rpt_channel_measured(r, c); i++)
        if (!r->sessions[i].warmup) session_case(r, i, c, &su->cases[su->n++]);
    if (r->has_verdict) verdict_case(r, c, &su->cases[su->n++]);
    return LG_OK;
}

static void count(struct tsuite *su)
{
    for (int k = 0; k < su->n; k++) {
        su->failures += su->cases[k].kind == TC_FAIL;
        su->errors += su->cases[k].kind == TC_ERROR;
        su->skipped += su->cases[k].kind == TC_SKIP;
        su->time += su->cases[k].time;
    }
}

static void put_suite(FILE *f, const struct rpt_results *r, const struct tsuite *su, bool props)
{
    fputs("  <testsuite name=\"", f);
    rpt_put_xml(f, su->name);
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\"", su->n,
            su->failures, su->errors, su->skipped, su->time);
    if (r->run.started[0]) { /* ISO 8601, as the run line has it */
        fputs(" timestamp=\"", f);
        rpt_put_xml(f, r->run.started);
        fputc('"', f);
    }
    fputs(" hostname=\"", f);
    rpt_put_xml(f, r->run.hostname[0] ? r->run.hostname : "unknown");
    fputs("\">\n", f);
    if (props) {
        const struct rpt_run *run = &r->run;
        char num[32];
        const char *kv[][2] = {
            {"schema", run->schema}, {"version", run->version}, {"command", run->command},
            {"device", run->device}, {"preset", run->preset},   {"modes", run->modes},
            {"inject", run->inject}, {"shard", run->shard},     {"seed", num}};
        snprintf(num, sizeof num, "%llu", (unsigned long long)run->seed);
        fputs("    <properties>\n", f);
        for (size_t k = 0; k < LG_ARRAY_LEN(kv); k++) {
            fputs("      <property name=\"", f);
            rpt_put_xml(f, kv[k][0]);
            fputs("\" value=\"", f);
            rpt_put_xml(f, kv[k][1]);
            fputs("\"/>\n", f);
        }
        fputs("    </properties>\n", f);
    }
    for (int k = 0; k < su->n; k++) {
        const struct tcase *tc = &su->cases[k];
        fputs("    <testcase name=\"", f);
        rpt_put_xml(f, tc->name);
        fputs("\" classname=\"", f);
        rpt_put_xml(f, su->name);
        fprintf(f, "\" time=\"%.3f\">", tc->time);
        static const char *const elem[] = {"", "failure", "error", "skipped"};
        if (tc->kind != TC_PASS) {
            fprintf(f, "\n      <%s message=\"", elem[tc->kind]);
            rpt_put_xml(f, tc->msg);
            if (tc->kind != TC_SKIP) {
                fputs("\" type=\"", f);
                rpt_put_xml(f, tc->type);
            }
            if (tc->text[0] && tc->kind != TC_SKIP) {
                fputs("\">", f);
                rpt_put_xml(f, tc->text);
                fprintf(f, "</%s>", elem[tc->kind]);
            } else {
                fputs("\"/>", f);
            }
        } else if (tc->text[0]) {
            fputs("\n      <system-out>", f);
            rpt_put_xml(f, tc->text);
            fputs("</system-out>", f);
        }
        fputs(tc->kind != TC_PASS || tc->text[0] ? "\n    </testcase>\n" : "</testcase>\n", f);
    }
    fputs("  </testsuite>\n", f);
}

int rpt_write_junit(const struct rpt_results *r, FILE *f)
{
    struct tsuite su[1 + RPT_NCHANNELS];
    int ns = 0, rc = LG_OK;
    memset(su, 0, sizeof su);
    rc = run_suite(r, &su[ns++]);
    for (int c = 0; c < RPT_NCHANNELS && rc == LG_OK; c++)
        if (rpt_channel_measured(r, c) || rpt_verdict_for(r, c))
            rc = channel_suite(r, c, &su[ns++]);
    if (rc != LG_OK) goto cleanup;
    int tests = 0, failures = 0, errors = 0, skipped = 0;
    double time =
        0; /* the sessions' time, counted once (each channel suite sees the same sessions) */
    for (int k = 0; k < ns; k++) {
        count(&su[k]);
        tests += su[k].n;
        failures += su[k].failures;
        errors += su[k].errors;
        skipped += su[k].skipped;
    }
    for (int i = 0; i < r->n_sessions; i++)
        time += isfinite(r->sessions[i].duration_s) ? r->sessions[i].duration_s : 0;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f,
            "<testsuites name=\"leakgate\" tests=\"%d\" failures=\"%d\" errors=\"%d\" "
            "skipped=\"%d\" time=\"%.3f\">\n",
            tests, failures, errors, skipped, time);
    for (int k = 0; k < ns; k++) put_suite(f, r, &su[k], k == 0);
    fputs("</testsuites>\n", f);
    if (ferror(f)) rc = lg_fail(LG_EIO, "writing JUnit XML failed");
cleanup:
    for (int k = 0; k < ns; k++) free(su[k].cases);
    return rc;
}
