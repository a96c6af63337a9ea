/* lga_marker.c — `--session-marker REGEX`: a line the program writes to stdout or stderr that
 * matches ends a session, measured in the writing thread before its write returns.
 *
 * Where output can be seen: raw write(2) calls reach the interposed write() and writev() below
 * (Python with PYTHONUNBUFFERED=1, which exec sets; Rust's std::io; C that calls write
 * itself). glibc's stdio does not: its FILE streams write through an internal __write that no
 * interposer sees. So in marker mode the agent replaces stdout and stderr with fopencookie
 * streams (stdout line-buffered, stderr unbuffered, and kept so when the program asks for full
 * buffering) whose write callback forwards to the same file descriptors and feeds the same line
 * matcher; fileno() of those streams says 1 and 2.
 * Streams a library captured before the agent started (a C++ runtime's std::cout, say) are
 * the exception: docs/exec.md says which work.
 *
 * Lines are assembled per descriptor (up to 4 KiB are matched; a longer line is matched on its
 * first 4 KiB), under a lock per descriptor, and matched with POSIX extended regexes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lga_impl.h"

#define EXPORT           __attribute__((visibility("default")))
#define LINE_MAX_MATCHED 4096

struct line_buf {
    pthread_mutex_t mu;
    size_t n;
    char buf[LINE_MAX_MATCHED];
};

static struct {
    bool on;
    regex_t re;
    struct line_buf lines[3]; /* by descriptor: 1 stdout, 2 stderr */
    FILE *out, *err;          /* the cookie streams */
} mk = {.lines = {{.mu = PTHREAD_MUTEX_INITIALIZER},
                  {.mu = PTHREAD_MUTEX_INITIALIZER},
                  {.mu = PTHREAD_MUTEX_INITIALIZER}}};

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef int (*fileno_fn)(FILE *);

static write_fn real_write_fn;
static writev_fn real_writev_fn;

static ssize_t real_write(int fd, const void *buf, size_t n)
{
    if (!real_write_fn) real_write_fn = (write_fn)dlsym(RTLD_NEXT, "write");
    return real_write_fn ? real_write_fn(fd, buf, n) : syscall(SYS_write, fd, buf, n);
}

/* Feeds bytes written to fd 1 or 2 to the matcher; a matching line ends the session. */
static void feed(int fd, const char *p, size_t n)
{
    struct line_buf *L = &mk.lines[fd];
    char line[LINE_MAX_MATCHED];
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t k = nl ? (size_t)(nl - p) : n;
        bool hit = false;
        pthread_mutex_lock(&L->mu);
        size_t room = sizeof L->buf - 1 - L->n;
        memcpy(L->buf + L->n, p, k < room ? k : room);
        L->n += k < room ? k : room;
        if (nl) {
            while (L->n && L->buf[L->n - 1] == '\r') L->n--;
            L->buf[L->n] = '\0';
            hit = regexec(&mk.re, L->buf, 0, NULL, 0) == 0;
            if (hit) memcpy(line, L->buf, L->n + 1);
            L->n = 0;
        }
        pthread_mutex_unlock(&L->mu);
        if (hit) lga_session_end(line);
        if (!nl) break;
        p += k + 1;
        n -= k + 1;
    }
}

static inline bool watching(int fd)
{
    return __builtin_expect(mk.on, 0) && (fd == 1 || fd == 2) && !lga_tl.in_agent && lga_on();
}

static void feed_guarded(int fd, const void *p, size_t n)
{
    int saved = errno;
    lga_tl.in_agent++; /* regexec may allocate: never in the program's tag scope */
    feed(fd, p, n);
    lga_tl.in_agent--;
    errno = saved;
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    ssize_t k = real_write(fd, buf, n);
    if (k > 0 && watching(fd)) feed_guarded(fd, buf, (size_t)k);
    return k;
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    if (!real_writev_fn) real_writev_fn = (writev_fn)dlsym(RTLD_NEXT, "writev");
    ssize_t k = real_writev_fn ? real_writev_fn(fd, iov, cnt) : syscall(SYS_writev, fd, iov, cnt);
    if (k > 0 && watching(fd)) {
        size_t left = (size_t)k;
        for (int i = 0; i < cnt && left; i++) {
            size_t part = iov[i].iov_len < left ? iov[i].iov_len : left;
            feed_guarded(fd, iov[i].iov_base, part);
            left -= part;
        }
    }
    return k;
}

/* The cookie streams' write: every byte to the descriptor, then to the matcher. */
static ssize_t cookie_write(void *cookie, const char *buf, size_t n)
{
    int fd = (int)(intptr_t)cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t k = real_write(fd, buf + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return done ? (ssize_t)done : -1;
        done += (size_t)k;
    }
    if (watching(fd)) feed_guarded(fd, buf, n);
    return (ssize_t)n;
}

static int fileno_of(FILE *f, fileno_fn *real, const char *which)
{
    if (mk.on && f && f == mk.out) return 1;
    if (mk.on && f && f == mk.err) return 2;
    if (!*real) *real = (fileno_fn)dlsym(RTLD_NEXT, which);
    if (!*real) {
        errno = EBADF;
        return -1;
    }
    return (*real)(f);
}

static fileno_fn real_fileno, real_fileno_unlocked;
EXPORT int fileno(FILE *f) { return fileno_of(f, &real_fileno, "fileno"); }
EXPORT int fileno_unlocked(FILE *f)
{
    return fileno_of(f, &real_fileno_unlocked, "fileno_unlocked");
}

/* A program that asks for full buffering on stdout (as if it were a pipe) would hold a marker
 * line back until the buffer fills: the agent keeps its streams line-buffered (stderr as asked). */
typedef int (*setvbuf_fn)(FILE *, char *, int, size_t);
static setvbuf_fn real_setvbuf_fn;

EXPORT int setvbuf(FILE *f, char *buf, int mode, size_t size)
{
    if (!real_setvbuf_fn) real_setvbuf_fn = (setvbuf_fn)dlsym(RTLD_NEXT, "setvbuf");
    if (!real_setvbuf_fn) return EOF;
    if (mk.on && f && (f == mk.out || f == mk.err) && mode == _IOFBF) mode = _IOLBF;
    return real_setvbuf_fn(f, buf, mode, size);
}

EXPORT void setbuffer(FILE *f, char *buf, size_t size)
{
    setvbuf(f, buf, buf ? _IOFBF : _IONBF, size);
}
EXPORT void setbuf(FILE *f, char *buf) { setvbuf(f, buf, buf ? _IOFBF : _IONBF, BUFSIZ); }

static FILE *cookie_stream(int fd, int mode)
{
    cookie_io_functions_t io = {.write = cookie_write};
    FILE *f = fopencookie((void *)(intptr_t)fd, "w", io);
    if (f) setvbuf(f, NULL, mode, BUFSIZ); /* before mk.on: as asked */
    return f;
}

int lga_marker_init(const char *regex)
{
    int rc = regcomp(&mk.re, regex, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[256];
        regerror(rc, &mk.re, why, sizeof why);
        return lg_fail(LG_EINVAL, "--session-marker '%s': %s", regex, why);
    }
    fflush(stdout);
    fflush(stderr);
    mk.out = cookie_stream(1, _IOLBF);
    mk.err = cookie_stream(2, _IONBF);
    if (!mk.out || !mk.err) return lg_fail(LG_ENOMEM, "no memory for the marker's streams");
    stdout = mk.out;
    stderr = mk.err;
    mk.on = true;
    return LG_OK;
}
