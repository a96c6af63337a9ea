/* exec_births.c — the children of CMD that begin and end within one session. A reading of
 * /proc at a session's end (exec_tree.c) sees the processes alive then; a worker that a session
 * starts and joins (a DataLoader without persistent workers, a subprocess) is gone by then. So
 * each process of CMD's tree says where it began: the agent, inert in it, appends "PID PPID" to
 * the file LEAKGATE_AGENT_TREE names, at each fork and at each image's start (agent/lga_init.c).
 * As a session ends, exec reads what began since the last one; a pid is pending until a reading
 * of the tree finds it, or /proc no longer has it: then it began and ended within the session
 * and is counted (s->procs_within), never judged. A static child's fork is noted by the parent
 * that forked it; a process that left the tree (re-parented, a daemon) stays pending. A line
 * "-PID" says PID is leakgate's own, not CMD's: the Python binding's forked copy, which does a
 * session end's attribution (bindings/python/src/leakgate/_attrib.py) or a child's look at its
 * Python lines (_child.py), writes it first thing (a child's copy is also named by the child,
 * which forked it: the two lines and the copy's "PID PPID" come in any order). The pid is
 * forgotten, and left out of the tree's readings from then on: a copy alive at a session's end
 * is no child of CMD.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_impl.h"

int hx_births_init(struct hx_births *b, const char *dir)
{
    memset(b, 0, sizeof *b);
    char path[sizeof b->path];
    if (lg_snprintf(path, sizeof path, "%s/tree.log", dir))
        return lg_fail(LG_EINVAL, "%s: path too long", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return lg_fail(LG_EIO, "%s: %s", path, strerror(errno));
    close(fd);
    if (setenv("LEAKGATE_AGENT_TREE", path, 1) != 0)
        return lg_fail(LG_EIO, "LEAKGATE_AGENT_TREE: %s", strerror(errno));
    memcpy(b->path, path, sizeof b->path);
    return LG_OK;
}

void hx_births_fini(struct hx_births *b)
{
    if (b->path[0]) unlink(b->path);
    free(b->pending);
    free(b->own);
    memset(b, 0, sizeof *b);
}

static bool in(const int *v, int n, int pid)
{
    for (int i = 0; i < n; i++)
        if (v[i] == pid) return true;
    return false;
}

/* Adds pid to *v (once); false when memory refuses it. */
static bool add(int **v, int *n, int *cap, int pid)
{
    if (in(*v, *n, pid)) return true;
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 64;
        int *w = realloc(*v, (size_t)c * sizeof *w);
        if (!w) return false;
        *v = w;
        *cap = c;
    }
    (*v)[(*n)++] = pid;
    return true;
}

/* Adds pid to the pending, unless it is leakgate's own; a pid memory refuses is not counted. */
static void add_pending(struct hx_births *b, int pid)
{
    if (pid > 0 && !in(b->own, b->n_own, pid)) add(&b->pending, &b->n, &b->cap, pid);
}

/* pid is a process of leakgate's own (its "PID PPID" may come before or after this line): out
 * of the pending, and out of the tree's readings from now on. */
static void forget(struct hx_births *b, int pid)
{
    for (int i = 0; i < b->n; i++)
        if (b->pending[i] == pid) b->pending[i--] = b->pending[--b->n];
    add(&b->own, &b->n_own, &b->cap_own, pid);
}

/* The lines appended since the last read, whole lines only, into the pending. */
static void read_new(struct hx_births *b)
{
    int fd = open(b->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[4096];
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof buf - 1, (off_t)b->at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        buf[n] = '\0';
        char *end = strrchr(buf, '\n'); /* a line being written is read next time */
        if (!end) break;
        end[1] = '\0';
        for (char *p = buf; *p;) {
            int pid = atoi(p);
            if (pid < 0)
                forget(b, -pid);
            else
                add_pending(b, pid);
            p = strchr(p, '\n') + 1;
        }
        b->at += (long)(end + 1 - buf);
    }
    close(fd);
}

/* Whether pid still runs: in /proc and no zombie. */
static bool alive(int pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

void hx_births_session(struct hx_births *b, struct rpt_session *s)
{
    if (!b->path[0] || !s->procs_walked) return;
    read_new(b);
    int k = 0;
    for (int j = 0; j < s->n_procs; j++) /* a copy the binding forked, seen as it ran */
        if (!in(b->own, b->n_own, s->procs[j].pid)) s->procs[k++] = s->procs[j];
    s->n_procs = k;
    k = 0;
    for (int i = 0; i < b->n; i++) {
        int pid = b->pending[i];
        bool seen = false;
        for (int j = 0; j < s->n_procs && !seen; j++) seen = s->procs[j].pid == pid;
        if (!seen && !alive(pid))
            s->procs_within++;
        else if (!seen)
            b->pending[k++] = pid; /* alive outside the tree, or begun after the reading */
    }
    b->n = k;
}
