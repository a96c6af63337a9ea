/* data_csv_read.c — RFC 4180 text into a table of fields: a header row, comma-separated
 * fields, optional double quotes (embedded commas, line breaks, doubled quotes), LF, CRLF or
 * CR line endings, an optional UTF-8 byte-order mark; blank lines are skipped. */
#include <string.h>

#include "data_impl.h"

void data_csv_table_fini(struct data_csv_table *t)
{
    trk_free(t->trk, t->text);
    trk_free(t->trk, t->field);
    trk_free(t->trk, t->line);
    memset(t, 0, sizeof *t);
}

/* Makes room for `need` elements of `elem` bytes in *p (capacity *cap, doubling). */
static int grow(struct trk_tracker *trk, void **p, size_t *cap, size_t need, size_t elem,
                const char *tag)
{
    if (need <= *cap) return LG_OK;
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need) ncap *= 2;
    void *np = trk_alloc(trk, ncap * elem, tag);
    if (!np) return lg_fail(LG_ENOMEM, "data: out of memory reading CSV (%zu fields)", need);
    if (*p) memcpy(np, *p, *cap * elem);
    trk_free(trk, *p);
    *p = np;
    *cap = ncap;
    return LG_OK;
}

/* "column 'sales' (3)" once the header is known, else "column 3". */
static const char *col_name(const struct data_csv_table *t, int64_t j, char *buf, size_t size)
{
    if (t->n_rec > 0 && j < t->ncol)
        lg_snprintf(buf, size, "column '%.60s' (%lld)", data_csv_field(t, 0, j), (long long)j + 1);
    else
        lg_snprintf(buf, size, "column %lld", (long long)j + 1);
    return buf;
}

/* Length of the line break at src[i] (1 or 2), or 0 when there is none. */
static size_t line_break(const char *src, size_t len, size_t i)
{
    if (src[i] == '\n') return 1;
    if (src[i] == '\r') return i + 1 < len && src[i + 1] == '\n' ? 2 : 1;
    return 0;
}

int data_csv_read(struct data_csv_table *t, struct trk_tracker *trk, const char *src, size_t len,
                  const char *name)
{
    memset(t, 0, sizeof *t);
    t->trk = trk;
    char cb[96];
    size_t pos = 0, out = 0;
    int64_t line = 1;
    if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) pos = 3;
    t->text = trk_alloc(trk, len + 1, "data/csv.text"); /* fields never outgrow their source */
    if (!t->text) return lg_fail(LG_ENOMEM, "%s: out of memory for %zu bytes", name, len);
    while (pos < len) {
        size_t br = line_break(src, len, pos);
        if (br) { /* a blank line */
            pos += br, line++;
            continue;
        }
        int64_t rec_line = line, nf = 0;
        for (;;) { /* one field */
            if (t->n_rec > 0 && nf >= t->ncol)
                return lg_fail(LG_EFORMAT,
                               "%s:%lld: row has more fields than the header's %lld "
                               "columns",
                               name, (long long)rec_line, (long long)t->ncol);
            int rc = grow(trk, (void **)&t->field, &t->fcap, (size_t)(t->n_rec * t->ncol + nf + 1),
                          sizeof *t->field, "data/csv.fields");
            if (rc != LG_OK) return rc;
            t->field[t->n_rec * t->ncol + nf] = (int64_t)out;
            if (pos < len && src[pos] == '"') {
                int64_t qline = line;
                for (pos++;; pos++) {
                    if (pos >= len)
                        return lg_fail(LG_EFORMAT, "%s:%lld: %s: unterminated quoted field", name,
                                       (long long)qline, col_name(t, nf, cb, sizeof cb));
                    if (src[pos] == '"') {
                        if (pos + 1 < len && src[pos + 1] == '"') {
                            t->text[out++] = '"', pos++;
                            continue;
                        }
                        pos++;
                        break;
                    }
                    if (src[pos] == '\0')
                        return lg_fail(LG_EFORMAT, "%s:%lld: %s: NUL byte in the field", name,
                                       (long long)line, col_name(t, nf, cb, sizeof cb));
                    if (src[pos] == '\n' || (src[pos] == '\r' && line_break(src, len, pos) == 1))
                        line++;
                    t->text[out++] = src[pos];
                }
                if (pos < len && src[pos] != ',' && !line_break(src, len, pos))
                    return lg_fail(LG_EFORMAT, "%s:%lld: %s: text after the closing quote", name,
                                   (long long)line, col_name(t, nf, cb, sizeof cb));
            } else {
                for (; pos < len && src[pos] != ',' && !line_break(src, len, pos); pos++) {
                    if (src[pos] == '"' || src[pos] == '\0')
                        return lg_fail(LG_EFORMAT,
                                       "%s:%lld: %s: %s inside an unquoted field (quote "
                                       "the whole field and double inner quotes)",
                                       name, (long long)line, col_name(t, nf, cb, sizeof cb),
                                       src[pos] ? "a quote" : "a NUL byte");
                    t->text[out++] = src[pos];
                }
            }
            t->text[out++] = '\0';
            nf++;
            if (pos < len && src[pos] == ',') {
                pos++;
                continue;
            }
            if (pos < len) pos += line_break(src, len, pos), line++;
            break;
        }
        if (t->n_rec == 0) {
            t->ncol = nf;
        } else if (nf < t->ncol) {
            return lg_fail(LG_EFORMAT,
                           "%s:%lld: %s is missing: the row has %lld fields, the "
                           "header %lld",
                           name, (long long)rec_line, col_name(t, nf, cb, sizeof cb), (long long)nf,
                           (long long)t->ncol);
        }
        int rc = grow(trk, (void **)&t->line, &t->lcap, (size_t)t->n_rec + 1, sizeof *t->line,
                      "data/csv.lines");
        if (rc != LG_OK) return rc;
        t->line[t->n_rec++] = rec_line;
    }
    LG_ASSERT(out <= len + 1);
    if (t->n_rec == 0) return lg_fail(LG_EFORMAT, "%s:1: empty file: no header row", name);
    return LG_OK;
}
