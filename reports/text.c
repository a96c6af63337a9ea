/* text.c — escaping for every output language (XML/HTML, Markdown, CSV, gnuplot), number
 * formatting in human units, and output files. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rpt_impl.h"

void rpt_put_xml(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            /* XML 1.0 forbids the other C0 controls, even as references */
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
                fputc('?', f);
            else
                fputc(c, f);
        }
    }
}

void rpt_put_md(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '|':
            fputs("\\|", f);
            break;
        case '\n':
            fputs("<br>", f);
            break;
        case '\r':
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '*':
        case '_':
        case '`':
        case '[':
        case ']':
        case '\\':
            fputc('\\', f);
            fputc(*s, f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

void rpt_put_csv(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void rpt_put_gp(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', f); /* gnuplot: '' inside '...' is one quote */
        if (*s == '\n' || *s == '\r')
            fputc(' ', f);
        else
            fputc(*s, f);
    }
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

int rpt_mkdir_p(const char *dir)
{
    char path[4096];
    if (lg_strlcpy(path, dir, sizeof path))
        return lg_fail(LG_EINVAL, "output directory path too long");
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return lg_fail(LG_EIO, "cannot create directory %s: %s", path, strerror(errno));
        *p = c;
        if (c == '\0') break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return lg_fail(LG_EIO, "%s is not a directory", dir);
    return LG_OK;
}

int rpt_open_out(FILE **out, const char *dir, const char *name, char *path, size_t path_size)
{
    if (lg_snprintf(path, path_size, "%s/%s", dir, name))
        return lg_fail(LG_EINVAL, "output path too long: %s/%s", dir, name);
    *out = fopen(path, "we");
    if (!*out) return lg_fail(LG_EIO, "cannot create %s: %s", path, strerror(errno));
    return LG_OK;
}

int rpt_close_out(FILE *f, const char *path)
{
    int err = ferror(f);
    if (fclose(f) != 0 || err)
        return lg_fail(LG_EIO, "writing %s failed: %s", path, strerror(errno ? errno : EIO));
    return LG_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rpt_median(double *v, int n)
{
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
