/* exec_tree.c — CMD's process tree at a session's end: every descendant of CMD (forked workers,
 * programs it started, their children), read from /proc while CMD waits for leakgate's reply.
 *
 * The agent in a child of CMD stays inert (agent/lga_init.c): it measures nothing and sends
 * nothing, so the parent reads each descendant itself — its parent pid (/proc/PID/stat: this
 * kernel may lack /proc/PID/task/TID/children), its command line, its resident bytes
 * (smaps_rollup's Rss, else status's VmRSS) and whether the agent is mapped in it (its maps name
 * the agent's file; a static program or one whose LD_PRELOAD was removed has none, and is seen
 * by its RSS alone). reports/judge/procs.c judges the series these readings make. Zombies (exited,
 * not yet reaped) are gone: they hold no memory.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_impl.h"

struct tree_entry {
    int pid, ppid;
    bool mine; /* a descendant of the root */
};

/* Reads up to size - 1 bytes of path into buf; the count, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = 0;
    while (n + 1 < size) {
        ssize_t k = read(fd, buf + n, size - 1 - n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

/* A process's parent from /proc/PID/stat ("pid (comm) S ppid ..."; comm may hold ") "); false
 * for one that is gone or a zombie. */
static bool parent_of(int pid, int *ppid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (read_small(path, buf, sizeof buf) <= 0) return false;
    const char *p = strrchr(buf, ')');
    char state = 0;
    if (!p || sscanf(p + 1, " %c %d", &state, ppid) != 2) return false;
    return state != 'Z' && state != 'X';
}

/* Every process in /proc with its parent into *out (the caller frees it); LG_EIO or LG_ENOMEM. */
static int list_processes(struct tree_entry **out, int *n_out)
{
    DIR *d = opendir("/proc");
    if (!d) return lg_fail(LG_EIO, "/proc: %s", strerror(errno));
    struct tree_entry *v = NULL;
    int n = 0, cap = 0, rc = LG_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        int pid = atoi(e->d_name), ppid = 0;
        if (pid <= 0 || !parent_of(pid, &ppid)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            struct tree_entry *w = realloc(v, (size_t)cap * sizeof *w);
            if (!w) {
                rc = lg_fail(LG_ENOMEM, "out of memory listing /proc");
                break;
            }
            v = w;
        }
        v[n++] = (struct tree_entry){.pid = pid, .ppid = ppid};
    }
    closedir(d);
    if (rc != LG_OK) {
        free(v);
        v = NULL;
        n = 0;
    }
    *out = v;
    *n_out = n;
    return rc;
}

/* Its command line, arguments joined by spaces, printable ASCII only (a results string), cut to
 * the field — each path by its base name first when it does not fit, so that the arguments after
 * a long venv or temporary path stay; "[comm]" when it has none. */
static void command_of(int pid, char *cmd, size_t size)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    ssize_t n = read_small(path, buf, sizeof buf);
    while (n > 0 && buf[n - 1] == '\0') n--;
    if (n <= 0) {
        snprintf(path, sizeof path, "/proc/%d/comm", pid);
        n = read_small(path, buf + 1, sizeof buf - 2);
        while (n > 0 && buf[n] == '\n') n--;
        buf[0] = '[';
        buf[n + 1] = ']';
        n += 2;
    }
    size_t k = 0;
    bool whole = (size_t)n < size;
    for (ssize_t i = 0; i < n && k + 1 < size; i++) {
        if (!whole && (i == 0 || buf[i - 1] == '\0')) { /* an argument begins: its base name */
            size_t len = strnlen(buf + i, (size_t)(n - i));
            const char *slash = memrchr(buf + i, '/', len);
            if (slash && slash + 1 < buf + i + len) i = slash + 1 - buf;
        }
        unsigned char c = (unsigned char)buf[i];
        cmd[k++] = c == '\0' ? ' ' : c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    cmd[k] = '\0';
}

/* The value in kB of the line starting with key in a /proc file, in bytes; RPT_NONE if none. */
static int64_t kb_line(const char *path, const char *key)
{
    char buf[8192];
    if (read_small(path, buf, sizeof buf) <= 0) return RPT_NONE;
    size_t kl = strlen(key);
    for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        long long kb;
        if (!strncmp(p, key, kl) && sscanf(p + kl, " %lld", &kb) == 1 && kb >= 0)
            return (int64_t)kb * 1024;
    }
    return RPT_NONE;
}

/* Its resident bytes: smaps_rollup's Rss (what CMD's rss channel reads), else VmRSS. */
static int64_t rss_of(int pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", pid);
    int64_t v = kb_line(path, "Rss:");
    if (v != RPT_NONE) return v;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    return kb_line(path, "VmRSS:");
}

/* Whether a file named agent_name is mapped in it. */
static bool has_agent(int pid, const char *agent_name)
{
    char *maps = hx_read_maps(pid);
    bool yes = maps && agent_name[0] && strstr(maps, agent_name) != NULL;
    free(maps);
    return yes;
}

/* Marks the descendants of root in v, parents before their children, into order[]; their count. */
static int descendants(struct tree_entry *v, int n, int root, int *order)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (v[i].ppid == root && v[i].pid != root) v[i].mine = true, order[k++] = i;
    for (int at = 0; at < k; at++) /* breadth first: each one's children after it */
        for (int i = 0; i < n; i++)
            if (!v[i].mine && v[i].ppid == v[order[at]].pid) v[i].mine = true, order[k++] = i;
    return k;
}

int hx_tree_read(pid_t root, const char *agent, struct rpt_session *s)
{
    struct tree_entry *v = NULL;
    int n = 0, *order = NULL;
    const char *slash = strrchr(agent, '/');
    const char *agent_name = slash ? slash + 1 : agent;
    int rc = list_processes(&v, &n);
    if (rc == LG_OK && n > 0 && !(order = malloc((size_t)n * sizeof *order)))
        rc = lg_fail(LG_ENOMEM, "out of memory reading CMD's process tree");
    int k = rc == LG_OK && n > 0 ? descendants(v, n, (int)root, order) : 0;
    if (k > HX_TREE_MAX) k = HX_TREE_MAX;
    if (rc == LG_OK && k > 0 && !(s->procs = calloc((size_t)k, sizeof *s->procs)))
        rc = lg_fail(LG_ENOMEM, "out of memory reading CMD's process tree");
    for (int i = 0; rc == LG_OK && i < k; i++) {
        struct rpt_proc *q = &s->procs[s->n_procs];
        const struct tree_entry *t = &v[order[i]];
        q->pid = t->pid;
        q->ppid = t->ppid;
        command_of(t->pid, q->cmd, sizeof q->cmd);
        q->rss = rss_of(t->pid);
        q->agent = has_agent(t->pid, agent_name);
        int ppid;
        if (parent_of(t->pid, &ppid)) s->n_procs++; /* gone while read: not a reading */
    }
    s->procs_walked = rc == LG_OK;
    free(order);
    free(v);
    return rc;
}

/* ---- naming a leaking child (--stacks) ------------------------------------------------------ */

struct dump {
    int pid, seq;
};

/* Whether name is HX_CHILD_PROF.PID.SEQ.uN.heap; *d its pid and SEQ. */
static bool child_dump(const char *name, struct dump *d)
{
    size_t len = strlen(name), k = strlen(HX_CHILD_PROF);
    char dot;
    return len > 5 && !strcmp(name + len - 5, ".heap") &&
           !strncmp(name, HX_CHILD_PROF ".", k + 1) &&
           sscanf(name + k + 1, "%d.%d%c", &d->pid, &d->seq, &dot) == 3 && dot == '.';
}

/* Whether d is neither the first nor the last dump of its pid among v[0..n). */
static bool between(const struct dump *v, int n, const struct dump *d)
{
    bool earlier = false, later = false;
    for (int i = 0; i < n; i++)
        if (v[i].pid == d->pid) earlier |= v[i].seq<d->seq, later |= v[i].seq> d->seq;
    return earlier && later;
}

void hx_tree_prune(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dump *v = NULL, one;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!child_dump(e->d_name, &one)) continue;
        if (n == cap) {
            struct dump *w = realloc(v, (size_t)(cap = cap ? cap * 2 : 64) * sizeof *w);
            if (!w) break; /* kept: the next session prunes them */
            v = w;
        }
        v[n++] = one;
    }
    rewinddir(d);
    char path[1024];
    while ((e = readdir(d)))
        if (child_dump(e->d_name, &one) && between(v, n, &one) &&
            !lg_snprintf(path, sizeof path, "%s/%s", dir, e->d_name))
            unlink(path);
    closedir(d);
    free(v);
}

/* The first and last (by SEQ) of dir's HX_CHILD_PROF.PID.SEQ.uN.heap into first and last;
 * false when it has fewer than two. */
static bool child_dumps(const char *dir, int pid, char *first, char *last, size_t size)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    int lo = -1, hi = -1;
    struct dump one;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!child_dump(e->d_name, &one) || one.pid != pid) continue;
        if (lo < 0 || one.seq < lo) lo = one.seq, snprintf(first, size, "%s/%s", dir, e->d_name);
        if (hi < 0 || one.seq > hi) hi = one.seq, snprintf(last, size, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return lo >= 0 && hi > lo;
}

/* "+9.00 MiB at f (a.c:3) <- g (a.c:9)": the top growth of last over first into buf; false when
 * none (the profiles could not be read, or nothing grew). */
static bool top_growth(const char *first, const char *last, int64_t sample, char *buf, size_t size)
{
    struct hx_prof p;
    memset(&p, 0, sizeof p);
    p.available = true;
    p.sample = sample;
    p.base_index = -1;
    struct rpt_session s0, s1;
    memset(&s0, 0, sizeof s0);
    memset(&s1, 0, sizeof s1);
    s1.index = 1;
    bool named = hx_prof_session(&p, first, &s0) == LG_OK &&
                 hx_prof_session(&p, last, &s1) == LG_OK && s1.n_alloc_stacks > 0 &&
                 s1.alloc_stacks[0].bytes > 0 && s1.alloc_stacks[0].frames;
    if (named) {
        const struct rpt_alloc_stack *a = &s1.alloc_stacks[0];
        char b[32], frames[400];
        const char *f = a->frames;
        size_t k = 0;
        frames[0] = '\0';
        for (int j = 0; j < 2 && *f && k < sizeof frames; j++) { /* the two innermost frames */
            size_t n = strcspn(f, "\n");
            k += (size_t)snprintf(frames + k, sizeof frames - k, "%s%.*s", j ? " <- " : "", (int)n,
                                  f);
            f += n + (f[n] == '\n');
        }
        snprintf(buf, size, "+%s at %s", lg_fmt_bytes(b, sizeof b, (double)a->bytes), frames);
    }
    rpt_session_fini(&s0);
    rpt_session_fini(&s1);
    return named;
}

void hx_tree_name(const char *dir, int64_t prof_sample, struct rpt_procs_verdict *pv)
{
    char first[1024], last[1024], top[600];
    for (int i = 0; i < pv->n_leak_pids; i++) {
        if (!child_dumps(dir, pv->leak_pids[i], first, last, sizeof first) ||
            !top_growth(first, last, prof_sample, top, sizeof top))
            continue;
        size_t l = strlen(pv->why);
        snprintf(pv->why + l, sizeof pv->why - l,
                 "; pid %d grew by allocation stack (its heap profiles, one sample per %lld B): %s",
                 pv->leak_pids[i], (long long)prof_sample, top);
    }
}
