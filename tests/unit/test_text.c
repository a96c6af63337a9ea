/* test_text.c — the report languages' escapes, byte by byte: what each output language turns
 * a hostile string into (XML/HTML, a Markdown cell and code span, CSV, gnuplot). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "rpt_impl.h"

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

static void expect(void (*put)(FILE *, const char *), const char *in, const char *out)
{
    char *got = written(put, in);
    cr_expect_str_eq(got, out, "escaping \"%s\"", in);
    free(got);
}

Test(text, xml_escapes_markup_and_drops_forbidden_controls)
{
    expect(rpt_put_xml, "a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&#39;");
    expect(rpt_put_xml, "tab\tnl\ncr\r", "tab\tnl\ncr\r");
    expect(rpt_put_xml, "\x01\x08\x0b\x0c\x0e\x1f|", "??????|");
    expect(rpt_put_xml, "µs ×3", "µs ×3");
}

Test(text, markdown_cell_escapes_what_would_break_the_table_or_render)
{
    expect(rpt_put_md, "a|b", "a\\|b");
    expect(rpt_put_md, "1\n2\r", "1<br>2");
    expect(rpt_put_md, "*_`[]\\", "\\*\\_\\`\\[\\]\\\\");
    expect(rpt_put_md, "<x>&", "&lt;x&gt;&amp;");
    expect(rpt_put_md_code, "a`b|c\nd", "`a'b/c d`");
}

Test(text, csv_quotes_only_when_needed)
{
    expect(rpt_put_csv, "plain", "plain");
    expect(rpt_put_csv, "a,b", "\"a,b\"");
    expect(rpt_put_csv, "say \"hi\"", "\"say \"\"hi\"\"\"");
    expect(rpt_put_csv, "two\nlines", "\"two\nlines\"");
}

Test(text, gnuplot_strings_double_their_quotes_and_stay_on_one_line)
{
    expect(rpt_put_gp, "it's", "'it''s'");
    expect(rpt_put_gp, "a\nb\rc", "'a b c'");
}
