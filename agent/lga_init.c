/* lga_init.c — the agent's start in the program: is this the process leakgate exec started,
 * the HELLO / CONFIG exchange, the tracker, and what a fork or the end of the program does.
 *
 * The parent puts LEAKGATE_AGENT_FD (its socket) and LEAKGATE_AGENT_PID (the pid it forked)
 * into CMD's environment. Every process that inherits them — a forked child, a grandchild that
 * a shell starts — loads the agent again through LD_PRELOAD, finds another pid and stays
 * inert: plain jemalloc, the API a no-op, nothing on the parent's channel. A process image
 * that replaces itself with exec keeps its pid and its socket: the new image says HELLO again
 * and carries on (a wrapper script that ends in `exec python train.py` works).
 *
 * Every process of the tree also says where it began: with LEAKGATE_AGENT_TREE set (a file exec
 * made), a forked child (pthread_atfork) and an image that starts (this constructor) append
 * "PID PPID\n" to it, so that exec counts the children that begin and end within one session,
 * which no reading of /proc at a session's end sees (harness/exec/exec_tree.c). Under
 * `leakgate exec --stacks`, LEAKGATE_AGENT_CHILD_PROF names a prefix: a child then samples its
 * allocations and jemalloc dumps its heap profile whenever its mapped memory reaches a new high
 * (prof.gdump) to PREFIX.PID.SEQ.uN.heap, from which exec names where a leaking child grew.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <jemalloc/jemalloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "leakgate.h"
#include "lga_impl.h"
#include "lga_wire.h"

struct lga_agent lga = {.fd = -1,
                        .prof_whole = -1,
                        .mu = PTHREAD_MUTEX_INITIALIZER,
                        .note_mu = PTHREAD_MUTEX_INITIALIZER};
__thread struct lga_thread lga_tl LGA_TLS;

void lga_say(const char *fmt, ...)
{
    char buf[512];
    int k = snprintf(buf, sizeof buf, "leakgate agent (pid %d): ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    if (k > 0 && (size_t)k < sizeof buf) k += vsnprintf(buf + k, sizeof buf - (size_t)k, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if ((size_t)k >= sizeof buf - 1) k = (int)sizeof buf - 2;
    buf[k++] = '\n';
    syscall(SYS_write, 2, buf, (size_t)k); /* not write(): the marker must not see this */
}

void lga_go_inert(void)
{
    atomic_store(&lga.state, LGA_INERT);
    atomic_store(&lga_census_flags, 0);
    if (lga.fd >= 0) shutdown(lga.fd, SHUT_RDWR);
}

static char tree_path[512];  /* LEAKGATE_AGENT_TREE ("" none) */
static char child_prof[512]; /* LEAKGATE_AGENT_CHILD_PROF ("" none) */

/* The decimal digits of v (>= 0) at p; their count. Async-signal-safe (a fork's child). */
static size_t put_uint(char *p, unsigned v)
{
    char d[12];
    size_t n = 0, k = 0;
    do d[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < sizeof d);
    while (n) p[k++] = d[--n];
    return k;
}

/* Appends "PID PPID\n" to LEAKGATE_AGENT_TREE (nothing without it): open, one write, close. */
static void tree_note(void)
{
    if (!tree_path[0]) return;
    int fd = open(tree_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return;
    char line[32];
    size_t k = put_uint(line, (unsigned)getpid());
    line[k++] = ' ';
    k += put_uint(line + k, (unsigned)getppid());
    line[k++] = '\n';
    syscall(SYS_write, fd, line, k); /* not write(): the marker must not see this */
    close(fd);
}

/* In a child under --stacks: sampling on, a dump at each new high of its mapped memory. */
static void child_profile(void)
{
    if (!child_prof[0]) return;
    const char *prefix = child_prof;
    bool on = true;
    if (mallctl("prof.prefix", NULL, NULL, &prefix, sizeof prefix) == 0 &&
        mallctl("prof.active", NULL, NULL, &on, sizeof on) == 0)
        mallctl("prof.gdump", NULL, NULL, &on, sizeof on);
}

/* A child of a process of the tree: where it began, and its profile (jemalloc's own fork
 * handlers ran first: they were registered when it started). */
static void child_began(void)
{
    tree_note();
    child_profile();
}

static void on_fork_child(void)
{
    child_began();
    /* the child owns a copy of the socket but is not the process leakgate measures */
    if (atomic_load(&lga.state) == LGA_OFF) return;
    atomic_store(&lga.state, LGA_INERT);
    atomic_store(&lga_census_flags, 0); /* the child's allocations are no session's */
    if (lga.fd >= 0) close(lga.fd);
    lga.fd = -1;
    pthread_mutex_init(&lga.mu, NULL); /* another thread may have held it at the fork */
}

static bool je_bool(const char *name)
{
    bool v = false;
    size_t len = sizeof v;
    return mallctl(name, &v, &len, NULL, 0) == 0 && v;
}

/* HELLO, then the parent's CONFIG; LG_OK or a status with a message said on stderr. */
static int handshake(void)
{
    struct lga_enc e;
    lga_enc_init(&e, LGA_HELLO);
    lga_put_u32(&e, LEAKGATE_API_VERSION);
    lga_put_i64(&e, (int64_t)getpid());
    uint32_t flags = (lga.prof_available ? LGA_HELLO_PROF : 0) |
                     (je_bool("opt.tcache") ? 0 : LGA_HELLO_TCACHE_OFF);
    lga_put_u32(&e, flags);
    const char *version = "?";
    size_t len = sizeof version;
    mallctl("version", &version, &len, NULL, 0);
    lga_put_str(&e, version);
    struct lga_dec d;
    int rc = lga_call(lga.fd, &e, LGA_CONFIG, &d);
    if (rc != LG_OK) return rc;
    char marker[1024];
    lga.cfg_flags = lga_get_u32(&d);
    lga_get_str(&d, marker, sizeof marker);
    lga_get_str(&d, lga.prof_dir, sizeof lga.prof_dir);
    bool bad = d.bad;
    free((void *)d.p);
    if (bad) return LG_EFORMAT;

    rc = trk_tracker_new(
        &lga.trk,
        &(struct trk_options){.stacks = (lga.cfg_flags & LGA_CFG_STACKS) != 0, .raw_stacks = true});
    if (rc != LG_OK) return rc;
    lga_census_init();
    /* backtrace's first call loads libgcc_s, which allocates and stays: done here, before the
     * baseline, so a stack taken in a session (a big block's, a recorded block's) adds nothing
     * to what the session is measured by or to a profile of it */
    void *warm[4];
    (void)backtrace(warm, 4);
    if ((lga.cfg_flags & LGA_CFG_PROF_ARMED) && lga.prof_available) {
        bool on = true;
        if (mallctl("prof.active", NULL, NULL, &on, sizeof on) == 0) lga.prof_armed = true;
    }
    if (marker[0]) {
        rc = lga_marker_init(marker);
        if (rc != LG_OK) return rc;
        lga.marker = true;
    }
    return LG_OK;
}

__attribute__((constructor)) static void lga_init(void)
{
    const char *fd_s = getenv("LEAKGATE_AGENT_FD"), *pid_s = getenv("LEAKGATE_AGENT_PID");
    if (!fd_s || !pid_s) return; /* not under leakgate exec: plain jemalloc */
    const char *tree = getenv("LEAKGATE_AGENT_TREE");
    if (tree && strlen(tree) < sizeof tree_path) strcpy(tree_path, tree);
    const char *prof = getenv("LEAKGATE_AGENT_CHILD_PROF");
    if (prof && strlen(prof) < sizeof child_prof) strcpy(child_prof, prof);
    pid_t pid = getpid();
    if (strtol(pid_s, NULL, 10) != (long)pid) {
        atomic_store(&lga.state, LGA_INERT); /* a child or grandchild of CMD */
        child_began(); /* an image a child exec'd (posix_spawn and vfork run no fork handler) */
        pthread_atfork(NULL, NULL, child_began); /* and its own children */
        return;
    }
    lga.fd = (int)strtol(fd_s, NULL, 10);
    lga.pid = pid;
    if (fcntl(lga.fd, F_GETFD) < 0) {
        lga_say("LEAKGATE_AGENT_FD=%s is not open; running without leakgate", fd_s);
        atomic_store(&lga.state, LGA_INERT);
        return;
    }
    lga_tl.in_agent++;
    lga.prof_available = je_bool("opt.prof");
    int rc = handshake();
    if (rc == LG_OK) {
        pthread_atfork(NULL, NULL, on_fork_child);
        atomic_store(&lga.state, LGA_ON);
        if (lga.marker) rc = lga_session_begin();
    }
    if (rc != LG_OK) {
        lga_say("could not start (%s: %s); running without leakgate", lg_status_name(rc),
                lg_errmsg());
        lga_go_inert();
    }
    lga_tl.in_agent--;
}

__attribute__((destructor)) static void lga_fini(void)
{
    if (!lga_on() || getpid() != lga.pid) return;
    lga_tl.in_agent++;
    pthread_mutex_lock(&lga.mu);
    struct lga_enc e;
    lga_enc_init(&e, LGA_BYE);
    lga_put_u32(&e, lga.session_open && !lga.marker ? 1u : 0u); /* an API session never ended */
    lga_put_u32(&e, (uint32_t)lga.sessions);
    if (lga_enc_finish(&e)) lga_send(lga.fd, e.p, e.n);
    lga_enc_fini(&e);
    pthread_mutex_unlock(&lga.mu);
    lga_go_inert(); /* late frees of tagged memory go to jemalloc; the tracker is left as is */
    lga_tl.in_agent--;
}
