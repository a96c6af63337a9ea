/* history_io.c — the history file on disk (history.h): appended one whole line at a time under
 * an exclusive flock, so two writers never interleave, with one write() of the line so a crash
 * leaves at most its own line cut short, and a newline first when the last line was cut short,
 * so the next record always starts a line of its own; read under a shared flock, a cut line
 * (one the parser runs out of before its record ends) skipped and counted, anything else that is
 * not a record, a whole line that is not JSON included, refused with file:line. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "history_impl.h"

#define MAX_HISTORY (256u << 20) /* the largest history file read */
#define MAGIC       "{\"schema\":\"leakgate.history/"

static int lock(int fd, int how)
{
    while (flock(fd, how) != 0)
        if (errno != EINTR) return -1;
    return 0;
}

/* Writes all of buf (one write() unless the kernel takes less). */
static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, buf, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        buf += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Whether the file's last byte is not a newline (a line a crash cut short). The appending
 * descriptor is write-only: the byte is read through one of its own. */
static bool ends_mid_line(const char *path)
{
    struct stat st;
    char c = '\n';
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return false;
    bool cut = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
               pread(fd, &c, 1, st.st_size - 1) == 1 && c != '\n';
    close(fd);
    return cut;
}

int rpt_history_append(const char *path, const struct rpt_history_record *h)
{
    json_t *o = rpt_history_to_json(h);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text) return lg_fail(LG_ENOMEM, "%s: out of memory encoding the history record", path);
    size_t n = strlen(text);
    char *line = malloc(n + 3);
    FILE *f = NULL;
    int rc = line ? lg_open_regular(&f, path, true)
                  : lg_fail(LG_ENOMEM, "%s: out of memory encoding the history record", path);
    if (rc == LG_OK && lock(fileno(f), LOCK_EX) != 0)
        rc = lg_fail(LG_EIO, "%s: cannot lock the history: %s", path, strerror(errno));
    if (rc == LG_OK) {
        size_t at = 0;
        if (ends_mid_line(path)) line[at++] = '\n'; /* the cut line ends; ours starts fresh */
        memcpy(line + at, text, n);
        line[at + n] = '\n';
        if (write_all(fileno(f), line, at + n + 1) != 0 || fsync(fileno(f)) != 0)
            rc = lg_fail(LG_EIO, "%s: appending the history record: %s", path, strerror(errno));
    }
    if (f) fclose(f); /* and the lock with it */
    free(line);
    free(text);
    return rc;
}

void rpt_history_free(struct rpt_history *h)
{
    if (!h) return;
    for (int i = 0; i < h->n; i++) rpt_history_record_fini(&h->rec[i]);
    free(h->rec);
    free(h);
}

/* Whether the k bytes at p (k < 4) are the start of a UTF-8 sequence that needs more. */
static bool utf8_cut(const unsigned char *p, size_t k)
{
    if (k == 0 || k > 3) return false;
    size_t need = p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
    if (need <= k) return false;
    for (size_t i = 1; i < k; i++)
        if ((p[i] & 0xC0) != 0x80) return false;
    return true;
}

/* Whether a line that is not JSON is a record a crash cut short: it starts as a record does, and
 * the parser ran out of line before the record ended (cut between tokens, inside a literal, an
 * escape or a UTF-8 sequence). A line that ends as a record does but is not JSON (a duplicate
 * key, a stray byte, text after the record) was written whole: that is an input error, never
 * skipped. Such a cut line ends the file, or a later append ended it with a newline first. */
static bool torn(const char *line, size_t n, const json_error_t *err)
{
    size_t m = strlen(MAGIC), at = (size_t)err->position;
    if (n < m ? memcmp(line, MAGIC, n) != 0 : memcmp(line, MAGIC, m) != 0) return false;
    switch (json_error_code(err)) {
    case json_error_premature_end_of_input: return true;
    case json_error_invalid_syntax: return at == n; /* "tru", "1e", "\u00" at the end */
    case json_error_invalid_utf8:
        return at < n && utf8_cut((const unsigned char *)line + at, n - at);
    default: return false;
    }
}

static int take_line(struct rpt_history *h, const struct rpt_dec *d, const char *line, size_t n,
                     int *cap)
{
    json_error_t err;
    json_t *o = json_loadb(line, n, JSON_REJECT_DUPLICATES, &err);
    if (!o && torn(line, n, &err)) {
        if (!h->torn++) h->first_torn = d->line;
        return LG_OK;
    }
    if (!o)
        return lg_fail(LG_EFORMAT, "%s:%d: not JSON: %s (column %d)", d->path, d->line, err.text,
                       err.column);
    int rc = LG_OK;
    if (!json_is_object(o))
        rc = lg_fail(LG_EFORMAT, "%s:%d: not a history record", d->path, d->line);
    if (rc == LG_OK && h->n == *cap) {
        int ncap = *cap ? *cap * 2 : 32;
        struct rpt_history_record *v = realloc(h->rec, sizeof *v * (size_t)ncap);
        if (!v) {
            rc = lg_fail(LG_ENOMEM, "%s:%d: out of memory", d->path, d->line);
        } else {
            h->rec = v;
            *cap = ncap;
        }
    }
    if (rc == LG_OK) {
        rc = rpt_history_from_json(d, o, &h->rec[h->n]);
        if (rc == LG_OK)
            h->n++;
        else
            rpt_history_record_fini(&h->rec[h->n]);
    }
    json_decref(o);
    return rc;
}

int rpt_history_parse(struct rpt_history **out, const char *path, const char *text, size_t len)
{
    struct rpt_history *h = calloc(1, sizeof *h);
    struct rpt_dec d = {.path = path};
    int rc = h ? LG_OK : lg_fail(LG_ENOMEM, "%s: out of memory", path), cap = 0;
    *out = NULL;
    if (h) lg_strlcpy(h->path, path, sizeof h->path);
    for (size_t at = 0; rc == LG_OK && at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        const char *line = text + at;
        at += n + 1;
        d.line++;
        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
        if (n > 0) rc = take_line(h, &d, line, n, &cap);
    }
    if (rc != LG_OK) {
        rpt_history_free(h);
        return rc;
    }
    *out = h;
    return LG_OK;
}

int rpt_history_load(struct rpt_history **out, const char *path)
{
    FILE *f = NULL;
    char *text = NULL;
    size_t n = 0;
    *out = NULL;
    int rc = lg_open_read(&f, path, "history");
    if (rc == LG_OK && lock(fileno(f), LOCK_SH) != 0)
        rc = lg_fail(LG_EIO, "%s: cannot lock the history: %s", path, strerror(errno));
    struct stat st;
    if (rc == LG_OK && (fstat(fileno(f), &st) != 0 || (size_t)st.st_size > MAX_HISTORY))
        rc = lg_fail(LG_EFORMAT, "%s: larger than %u MiB: not a history file", path,
                     MAX_HISTORY >> 20);
    if (rc == LG_OK && !(text = malloc((size_t)st.st_size + 1)))
        rc = lg_fail(LG_ENOMEM, "%s: out of memory", path);
    if (rc == LG_OK) {
        n = fread(text, 1, (size_t)st.st_size, f);
        if (ferror(f)) rc = lg_fail(LG_EIO, "%s: read error: %s", path, strerror(errno));
    }
    if (f) fclose(f);
    if (rc == LG_OK) rc = rpt_history_parse(out, path, text, n);
    free(text);
    return rc;
}
