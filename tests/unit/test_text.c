/* test_text.c — the report languages' escapes, byte by byte: what each output language turns
 * a hostile string into (XML/HTML, a Markdown cell and code span, CSV, gnuplot). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "results_json.h"
#include "rpt_text.h"
#include "summary.h"

/* What put writes for s, as a NUL-terminated heap string. */
static char *written(void (*put)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    put(f, s);
    fclose(f);
    return buf;
}

/* One escape: what `put` must write for `in`. */
struct escape_case {
    const char *name;
    void (*put)(FILE *, const char *);
    const char *in, *out;
};

static const struct escape_case cases[] = {
    /* XML escapes markup and drops the controls XML 1.0 forbids */
    {"xml: markup", rpt_put_xml, "a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&#39;"},
    {"xml: tab, newline and return stay", rpt_put_xml, "tab\tnl\ncr\r", "tab\tnl\ncr\r"},
    {"xml: forbidden controls", rpt_put_xml, "\x01\x08\x0b\x0c\x0e\x1f|", "??????|"},
    {"xml: UTF-8 passes", rpt_put_xml, "µs ×3", "µs ×3"},
    /* a Markdown cell escapes what would break the table or render */
    {"md: a pipe", rpt_put_md, "a|b", "a\\|b"},
    {"md: line breaks", rpt_put_md, "1\n2\r", "1<br>2"},
    {"md: emphasis, code and links", rpt_put_md, "*_`[]\\", "\\*\\_\\`\\[\\]\\\\"},
    {"md: HTML", rpt_put_md, "<x>&", "&lt;x&gt;&amp;"},
    {"md code span", rpt_put_md_code, "a`b|c\nd", "`a'b/c d`"},
    /* CSV quotes only when needed */
    {"csv: plain", rpt_put_csv, "plain", "plain"},
    {"csv: a comma", rpt_put_csv, "a,b", "\"a,b\""},
    {"csv: quotes", rpt_put_csv, "say \"hi\"", "\"say \"\"hi\"\"\""},
    {"csv: a newline", rpt_put_csv, "two\nlines", "\"two\nlines\""},
    /* gnuplot strings double their quotes and stay on one line */
    {"gnuplot: a quote", rpt_put_gp, "it's", "'it''s'"},
    {"gnuplot: line breaks", rpt_put_gp, "a\nb\rc", "'a b c'"},
};

Test(text, every_language_escapes_what_would_break_it)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct escape_case *c = &cases[k];
        char *got = written(c->put, c->in);
        cr_expect_str_eq(got, c->out, "%s: escaping \"%s\"", c->name, c->in);
        free(got);
    }
}
