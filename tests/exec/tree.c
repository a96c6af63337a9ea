/* tree.c — a program with child processes, for exec's process tree (docs/design.md, "The
 * process tree"). It forks a worker before its first session; each session asks the worker
 * for one step over a pipe and waits for its answer, then ends (leakgate_session_end). A step
 * touches STEP bytes:
 *
 *   exec_tree grow N     the worker keeps each step's 1 MiB: its RSS rises every session
 *   exec_tree clean N    the worker frees it again: its RSS stays flat
 *   exec_tree exits N    two clean workers; the second exits after session N/2
 *   exec_tree within N   a clean worker, and in each session a child that does one step and
 *                        exits before the session ends (a DataLoader without persistent
 *                        workers)
 *   exec_tree unseen N STATIC
 *                        a clean worker, STATIC (a statically linked program, fork+exec) and
 *                        this program again with LD_PRELOAD removed, both idle until the end
 *   exec_tree idle       (internal) waits for its stdin to close
 *
 * Prints "tree: worker pid P" for each child (the tests find it in the verdict) and
 * "tree: N sessions". Exits 30 when a child could not be started or stopped. With
 * EXEC_TREE_PY_LINES in its environment (and LEAKGATE_AGENT_CHILD_PROF: --stacks), each
 * worker writes that text as its Python lines (PREFIX.PID.py, harness/exec/exec_child_py.c), as
 * a Python child's binding would: a well-formed file, or a broken one.
 */
#define _GNU_SOURCE
#include <leakgate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEP (1 << 20) /* bytes a worker touches per session: the rate the tests expect */

struct worker {
    pid_t pid;
    int to, from; /* pipe ends: requests to it, answers from it */
};

/* The worker's loop: one step per request byte, an answer byte after each; ends at EOF. */
static void work(int in, int out, int keep)
{
    char c;
    while (read(in, &c, 1) == 1) {
        char *p = malloc(STEP);
        if (!p) _exit(2);
        memset(p, c, STEP); /* touched: resident */
        if (!keep) free(p); /* kept: a leak of STEP bytes each session */
        if (write(out, &c, 1) != 1) _exit(3);
    }
    _exit(0);
}

/* EXEC_TREE_PY_LINES into LEAKGATE_AGENT_CHILD_PROF.PID.py, in a worker. */
static void python_lines(void)
{
    const char *text = getenv("EXEC_TREE_PY_LINES"), *prefix = getenv("LEAKGATE_AGENT_CHILD_PROF");
    char path[1024];
    if (!text || !prefix ||
        snprintf(path, sizeof path, "%s.%d.py", prefix, (int)getpid()) >= (int)sizeof path)
        return;
    FILE *f = fopen(path, "w");
    if (!f) _exit(4);
    fputs(text, f);
    if (fclose(f) != 0) _exit(4);
}

static int start_worker(struct worker *w, int keep)
{
    int req[2], ans[2];
    if (pipe2(req, O_CLOEXEC) || pipe2(ans, O_CLOEXEC)) return -1; /* see start_idle */
    fflush(stdout);
    w->pid = fork();
    if (w->pid < 0) return -1;
    if (w->pid == 0) {
        close(req[1]);
        close(ans[0]);
        python_lines();
        work(req[0], ans[1], keep);
    }
    close(req[0]);
    close(ans[1]);
    w->to = req[1];
    w->from = ans[0];
    printf("tree: worker pid %d\n", (int)w->pid);
    return 0;
}

static int step(const struct worker *w)
{
    char c = 'x';
    return write(w->to, &c, 1) == 1 && read(w->from, &c, 1) == 1 ? 0 : -1;
}

/* Ends a worker: EOF on its requests, then waits; 0 when it exited 0. */
static int stop_worker(struct worker *w)
{
    int st = 0;
    close(w->to);
    close(w->from);
    if (waitpid(w->pid, &st, 0) != w->pid) return -1;
    w->pid = 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Starts argv as a child idle until its stdin closes (w->from unused); LD_PRELOAD removed from
 * its environment when strip. */
static int start_idle(struct worker *w, char *const argv[], int strip)
{
    int req[2];
    if (pipe2(req, O_CLOEXEC)) return -1; /* its other children must not hold it open */
    fflush(stdout);
    w->pid = fork();
    if (w->pid < 0) return -1;
    if (w->pid == 0) {
        close(req[1]);
        dup2(req[0], 0);
        if (strip) unsetenv("LD_PRELOAD");
        execv(argv[0], argv);
        _exit(127);
    }
    close(req[0]);
    w->to = req[1];
    w->from = dup(0); /* closed by stop_worker */
    printf("tree: worker pid %d\n", (int)w->pid);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    if (!strcmp(mode, "idle")) {
        char c;
        while (read(0, &c, 1) == 1) {
        }
        return 0;
    }
    int sessions = argc > 2 ? atoi(argv[2]) : 12;
    struct worker w[3] = {{0}};
    int n = 1;
    if (start_worker(&w[0], !strcmp(mode, "grow"))) return 30;
    if (!strcmp(mode, "exits") && start_worker(&w[n++], 0)) return 30;
    if (!strcmp(mode, "unseen")) {
        char *stat[] = {argc > 3 ? argv[3] : "/nonexistent", NULL};
        char *self[] = {"/proc/self/exe", "idle", NULL};
        char exe[4096];
        ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (k <= 0) return 30;
        exe[k] = '\0';
        self[0] = exe;
        if (start_idle(&w[n++], stat, 0) || start_idle(&w[n++], self, 1)) return 30;
    }
    for (int s = 0; s < sessions; s++) {
        leakgate_session_begin();
        if (step(&w[0])) return 30;
        if (!strcmp(mode, "within")) { /* begins and ends inside the session */
            struct worker t;
            if (start_worker(&t, 0) || step(&t) || stop_worker(&t)) return 30;
        }
        if (!strcmp(mode, "exits") && w[1].pid) {
            if (step(&w[1])) return 30;
            if (s == sessions / 2 && stop_worker(&w[1])) return 30;
        }
        if (leakgate_session_end() != LEAKGATE_OK) return 31;
    }
    for (int i = 0; i < n; i++)
        if (w[i].pid && stop_worker(&w[i])) return 30;
    printf("tree: %d sessions\n", sessions);
    return 0;
}
