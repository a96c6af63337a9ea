/* exec_child_py.c — a growing Python child named by the line of its own code (--stacks).
 *
 * A child's native allocation stack (exec_tree.c) is, in a Python worker, the interpreter's
 * (`PyObject_Malloc <- _PySlice_GetLongIndices`). So under --stacks every Python child of CMD
 * can trace its own allocations (bindings/python/src/leakgate/_child.py). At each session's end
 * exec writes PREFIX.sessions whole: the sessions ended, and the children whose RSS series leak
 * so far, judged as the verdict judges them. Such a child, if it is Python, starts tracemalloc
 * (its base), and for a few sessions, as it grows, a forked copy of it writes PREFIX.PID.py whole
 * (a temporary file renamed): the blocks traced since, by the innermost frame of its own code. A
 * child that does not leak is never traced. For a leaking child exec reads its file:
 *
 *     leakgate-python-lines 1
 *     span 2 11 8                  sessions ended at the base and at the look; frames traced
 *     10485760 80 loader.py:14 in Items.__getitem__
 *
 * A file that is not that (a child's bug, a truncated or foreign file) is said in the why, not
 * read further.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec_impl.h"

#define PY_HEADER "leakgate-python-lines 1\n"
#define PY_MAX    4096 /* bytes of a child's file; _child.py writes at most 4 lines of ~330 */

void hx_child_py_mark(const char *dir, int ended, const int *leaking, int n)
{
    char path[1024], tmp[1040], text[160];
    if (lg_snprintf(path, sizeof path, "%s/" HX_CHILD_PROF ".sessions", dir) ||
        lg_snprintf(tmp, sizeof tmp, "%s.tmp", path))
        return;
    size_t k = (size_t)snprintf(text, sizeof text, "%d\narm", ended);
    for (int i = 0; i < n && k < sizeof text - 16; i++)
        k += (size_t)snprintf(text + k, sizeof text - k, " %d", leaking[i]);
    text[k++] = '\n';
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return;
    bool whole = write(fd, text, k) == (ssize_t)k;
    if (close(fd) != 0 || !whole || rename(tmp, path) != 0) unlink(tmp);
}

/* dir's PREFIX.PID.py into buf (size bytes, NUL-terminated): its length; 0 when there is none
 * (not a Python child, or nothing grew yet); -1 with why set when it cannot be read whole. */
static ssize_t slurp(const char *path, char *buf, size_t size, char *why, size_t wsize)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        snprintf(why, wsize, "%s", strerror(errno));
        return -1;
    }
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        snprintf(why, wsize, "not a regular file");
    else if (st.st_size >= (off_t)size)
        snprintf(why, wsize, "%lld bytes, more than the %zu a child writes", (long long)st.st_size,
                 size - 1);
    else if ((n = pread(fd, buf, (size_t)st.st_size, 0)) != (ssize_t)st.st_size)
        snprintf(why, wsize, "%s", n < 0 ? strerror(errno) : "it changed while read"), n = -1;
    close(fd);
    if (n >= 0) buf[n] = '\0';
    return n;
}

/* Parses text (NUL-terminated) into its span and top line; false with why set when it is not
 * _child.py's format. *where points into text, its line's end made a NUL. */
static bool parse(char *text, struct hx_child_py *py, char *why, size_t wsize)
{
    size_t n = strlen(text);
    if (strncmp(text, PY_HEADER, sizeof PY_HEADER - 1)) {
        snprintf(why, wsize, "its first line is not '%.*s'", (int)sizeof PY_HEADER - 2, PY_HEADER);
        return false;
    }
    if (n == 0 || text[n - 1] != '\n') {
        snprintf(why, wsize, "its last line is cut (no newline)");
        return false;
    }
    char *line = text + sizeof PY_HEADER - 1, *end = strchr(line, '\n');
    int k = 0;
    *end = '\0';
    if (sscanf(line, "span %d %d %d%n", &py->from, &py->to, &py->frames, &k) != 3 ||
        line[k] != '\0' || py->from < 0 || py->to < py->from || py->frames <= 0) {
        snprintf(why, wsize, "its second line is not 'span FROM TO FRAMES'");
        return false;
    }
    line = end + 1;
    if (!*line) return true; /* nothing grew since its base */
    end = strchr(line, '\n');
    *end = '\0';
    k = 0;
    if (sscanf(line, "%lld %lld %n", &py->bytes, &py->blocks, &k) != 2 || k == 0 ||
        py->bytes <= 0 || py->blocks < 0 || !line[k]) {
        snprintf(why, wsize, "its third line is not 'BYTES BLOCKS WHERE'");
        return false;
    }
    for (char *c = line + k; *c; c++)
        if (*c < 0x20 || *c > 0x7e) *c = '?'; /* a results string: printable ASCII */
    lg_strlcpy(py->where, line + k, sizeof py->where);
    return true;
}

int hx_child_py_read(const char *dir, int pid, struct hx_child_py *py, char *why, size_t wsize)
{
    char path[1024], text[PY_MAX];
    memset(py, 0, sizeof *py);
    if (lg_snprintf(path, sizeof path, "%s/" HX_CHILD_PROF ".%d.py", dir, pid)) {
        snprintf(why, wsize, "its path under %.200s is too long", dir);
        return -1;
    }
    ssize_t n = slurp(path, text, sizeof text, why, wsize);
    if (n <= 0) return (int)n;
    return parse(text, py, why, wsize) ? (py->where[0] ? 1 : 0) : -1;
}

/* "+1.00 MiB/session (8 blocks) at loader.py:14 in Items.__getitem__ (...)" into buf. */
static void say_line(const struct hx_child_py *py, char *buf, size_t size)
{
    char b[32];
    int sessions = py->to - py->from;
    if (sessions > 0)
        snprintf(buf, size,
                 "+%s/session (%lld blocks) at %s (tracemalloc in the child, %d frame%s, sessions "
                 "#%d-#%d)",
                 lg_fmt_bytes(b, sizeof b, (double)py->bytes / sessions),
                 (long long)(py->blocks / sessions), py->where, py->frames,
                 py->frames == 1 ? "" : "s", py->from, py->to - 1);
    else
        snprintf(buf, size,
                 "+%s (%lld blocks) since session #%d ended at %s (tracemalloc in the child, %d "
                 "frame%s)",
                 lg_fmt_bytes(b, sizeof b, (double)py->bytes), py->blocks, py->from - 1, py->where,
                 py->frames, py->frames == 1 ? "" : "s");
}

void hx_child_py_name(const char *dir, struct rpt_procs_verdict *pv)
{
    char why[200], line[600];
    struct hx_child_py py;
    for (int i = 0; i < pv->n_leak_pids; i++) {
        int pid = pv->leak_pids[i], rc = hx_child_py_read(dir, pid, &py, why, sizeof why);
        size_t l = strlen(pv->why);
        if (rc > 0) {
            say_line(&py, line, sizeof line);
            snprintf(pv->why + l, sizeof pv->why - l, "; pid %d grew at its Python line: %s", pid,
                     line);
        } else if (rc < 0) {
            snprintf(pv->why + l, sizeof pv->why - l,
                     "; pid %d's Python lines (%s.%d.py) could not be read: %s", pid, HX_CHILD_PROF,
                     pid, why);
        }
    }
}
