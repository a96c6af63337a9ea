/* text.c — escaping for every output language (XML/HTML, Markdown, CSV, gnuplot), number
 * formatting in human units, and output files. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rpt_text.h"

/* Each output language's escapes as a table: what a byte becomes (NULL: itself, "": dropped).
 * XML 1.0 forbids the C0 controls other than tab, newline and return, even as references. */
typedef const char *const escape_map[256];

static escape_map xml = {
    [0 ... 8] = "?", [11 ... 12] = "?", [14 ... 31] = "?", ['&'] = "&amp;",
    ['<'] = "&lt;",  ['>'] = "&gt;",    ['"'] = "&quot;",  ['\''] = "&#39;",
};
static escape_map md = {
    /* a Markdown table cell */
    ['|'] = "\\|", ['\n'] = "<br>", ['\r'] = "",   ['<'] = "&lt;", ['>'] = "&gt;", ['&'] = "&amp;",
    ['*'] = "\\*", ['_'] = "\\_",   ['`'] = "\\`", ['['] = "\\[",  [']'] = "\\]",  ['\\'] = "\\\\",
};
/* a code span cannot hold a backquote; tags and sites never should, but stay safe */
static escape_map md_code = {['`'] = "'", ['|'] = "/", ['\n'] = " "};
static escape_map csv = {['"'] = "\"\""};                           /* inside a quoted field */
static escape_map gp = {['\''] = "''", ['\n'] = " ", ['\r'] = " "}; /* inside '...' */

static void put_escaped(FILE *f, const char *s, escape_map map)
{
    for (; *s; s++) {
        const char *with = map[(unsigned char)*s];
        if (with)
            fputs(with, f);
        else
            fputc(*s, f);
    }
}

void rpt_put_xml(FILE *f, const char *s) { put_escaped(f, s, xml); }

void rpt_put_md(FILE *f, const char *s) { put_escaped(f, s, md); }

void rpt_put_md_code(FILE *f, const char *s)
{
    fputc('`', f);
    put_escaped(f, s, md_code);
    fputc('`', f);
}

void rpt_put_csv(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    put_escaped(f, s, csv);
    fputc('"', f);
}

void rpt_put_gp(FILE *f, const char *s)
{
    fputc('\'', f);
    put_escaped(f, s, gp);
    fputc('\'', f);
}

char *rpt_fmt_sbytes(char *buf, size_t size, double v)
{
    if (isnan(v)) {
        lg_strlcpy(buf, "n/a", size);
        return buf;
    }
    char tmp[48];
    lg_fmt_bytes(tmp, sizeof tmp, v);
    snprintf(buf, size, "%s%s", v > 0 ? "+" : "", tmp);
    return buf;
}

char *rpt_fmt_figure(char *buf, size_t size, enum rpt_channel ch, double v, bool sign)
{
    if (isnan(v))
        lg_strlcpy(buf, "n/a", size);
    else if (isinf(v))
        lg_strlcpy(buf, v > 0 ? "unbounded" : "-unbounded", size);
    else if (ch == RPT_CH_REFS)
        snprintf(buf, size, sign ? "%+.4g" : "%.4g", v);
    else if (sign)
        rpt_fmt_sbytes(buf, size, v);
    else
        lg_fmt_bytes(buf, size, v);
    return buf;
}

char *rpt_fmt_value(char *buf, size_t size, enum rpt_channel ch, int64_t v, bool sign)
{
    if (v == RPT_NONE) {
        lg_strlcpy(buf, "n/a", size);
        return buf;
    }
    if (ch == RPT_CH_REFS) {
        snprintf(buf, size, sign ? "%+lld" : "%lld", (long long)v);
        return buf;
    }
    return rpt_fmt_figure(buf, size, ch, (double)v, sign);
}

int rpt_open_out(FILE **out, const char *dir, const char *name, char *path, size_t path_size)
{
    *out = NULL;
    if (lg_snprintf(path, path_size, "%s/%s", dir, name))
        return lg_fail(LG_EINVAL, "output path too long: %s/%s", dir, name);
    /* written beside its name, then renamed over it (lg_out.c): a symlink or FIFO left at the
     * name is replaced, never followed or blocked on, and a reader never sees half a file */
    return lg_out_open(out, path);
}

int rpt_close_out(FILE *f, const char *path) { return lg_out_commit(f, path); }
