/* lg_base.c — status messages, assertions, small string and clock helpers. */
#define _GNU_SOURCE
#include "lg_base.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char tl_msg[1024];
static _Thread_local int tl_code;

/* Keeps the start and the end of an over-long message (the reason comes last). */
static void store_elided(const char *msg, size_t len)
{
    static const char mark[] = " [...] ";
    size_t head = 300, tail = sizeof tl_msg - head - sizeof mark;
    memcpy(tl_msg, msg, head);
    memcpy(tl_msg + head, mark, sizeof mark - 1);
    memcpy(tl_msg + head + sizeof mark - 1, msg + len - tail, tail);
    tl_msg[head + sizeof mark - 1 + tail] = '\0';
}

int lg_fail(int code, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(tl_msg, sizeof tl_msg, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof tl_msg) {
        char *big = malloc((size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, ap2);
            store_elided(big, (size_t)n);
            free(big);
        }
    }
    va_end(ap2);
    tl_code = code;
    return code;
}

int lg_fail_ctx(int code, const char *fmt, ...)
{
    char prefix[512], old[sizeof tl_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, tl_msg, sizeof old);
    size_t lp = strlen(prefix), lo = strlen(old);
    if (lp + lo < sizeof tl_msg) {
        memcpy(tl_msg, prefix, lp);
        memcpy(tl_msg + lp, old, lo + 1);
    } else {
        char joined[sizeof prefix + sizeof old];
        memcpy(joined, prefix, lp);
        memcpy(joined + lp, old, lo + 1);
        store_elided(joined, lp + lo);
    }
    tl_code = code;
    return code;
}

const char *lg_errmsg(void) { return tl_msg; }
int lg_errcode(void) { return tl_code; }

void lg_clear_error(void)
{
    tl_msg[0] = '\0';
    tl_code = LG_OK;
}

const char *lg_status_name(int code)
{
    switch (code) {
#define LG_X_NAME(name, value, text, exit)                                                         \
    case LG_##name: return text;
        LG_STATUS_MAP(LG_X_NAME)
#undef LG_X_NAME
    }
    return "unknown status";
}

int lg_exit_code(int status)
{
    switch (status) {
#define LG_X_EXIT(name, value, text, exit)                                                         \
    case LG_##name: return exit;
        LG_STATUS_MAP(LG_X_EXIT)
#undef LG_X_EXIT
    }
    return 4;
}

int lg_dir_lock(struct lg_dir_lock *lk, const char *dir)
{
    char path[4200], holder[32] = "";
    lk->fd = -1;
    if (lg_snprintf(path, sizeof path, "%s/.leakgate.lock", dir))
        return lg_fail(LG_EINVAL, "path too long: %s", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0)
        return lg_fail(LG_EIO, "%s: cannot create the lock of the output directory: %s", path,
                       strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return lg_fail(LG_EIO, "%s: not a regular file: cannot lock the output directory", path);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        close(fd);
        if (err == EWOULDBLOCK)
            return lg_fail(
                LG_EBUSY,
                "%s is in use by another leakgate (pid %s); wait for it or choose another output "
                "directory",
                dir, holder[0] ? holder : "?");
        return lg_fail(LG_EIO, "%s: cannot lock the output directory: %s", path, strerror(err));
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0) { /* the pid is only a label for a second run's message */
        ssize_t w = pwrite(fd, pid, (size_t)len, 0);
        (void)w;
    }
    lk->fd = fd;
    return LG_OK;
}

void lg_dir_unlock(struct lg_dir_lock *lk)
{
    if (lk->fd >= 0) close(lk->fd);
    lk->fd = -1;
}

/* What a path that is not a regular file is, for a message. */
static const char *file_kind(const struct stat *st)
{
    return S_ISFIFO(st->st_mode) ? "FIFO" : S_ISDIR(st->st_mode) ? "directory" : "device or socket";
}

int lg_open_regular(FILE **out, const char *path, bool append)
{
    *out = NULL;
    int fd = open(
        path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : 0),
        0644);
    if (fd < 0)
        return lg_fail(LG_EIO, "%s: cannot write: %s", path,
                       errno == ELOOP   ? "it is a symbolic link (not followed)"
                       : errno == ENXIO ? "it is a FIFO with no reader (refused)"
                                        : strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return lg_fail(
            LG_EIO,
            "%s: cannot write: not a regular file (a %s); remove it or choose another output", path,
            file_kind(&st));
    }
    if ((!append && ftruncate(fd, 0) != 0) ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(fd);
        return lg_fail(LG_EIO, "%s: cannot write: %s", path, strerror(err));
    }
    *out = fdopen(fd, append ? "ae" : "we");
    if (!*out) {
        close(fd);
        return lg_fail(LG_ENOMEM, "%s: out of memory opening it", path);
    }
    return LG_OK;
}

_Noreturn void lg_assert_fail(const char *file, int line, const char *what)
{
    fflush(stdout);
    fprintf(stderr, "%s:%d: LG_ASSERT(%s) failed\n", file, line, what);
    abort();
}

int lg_strlcpy(char *dst, const char *src, size_t size)
{
    if (size == 0) return 1;
    size_t n = strlen(src);
    int trunc = n >= size;
    if (trunc) n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return trunc;
}

int lg_join(char *dst, size_t size, int n, ...)
{
    if (size == 0) return 1;
    size_t k = 0;
    int trunc = 0;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *s = va_arg(ap, const char *);
        size_t l = strlen(s);
        if (k + l >= size) {
            l = size - 1 - k;
            trunc = 1;
        }
        memcpy(dst + k, s, l);
        k += l;
    }
    va_end(ap);
    dst[k] = '\0';
    return trunc;
}

int lg_snprintf(char *dst, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, size, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= size;
}

double lg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

char *lg_fmt_bytes(char *buf, size_t size, double bytes)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = bytes < 0 ? -bytes : bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    const char *sign = bytes < 0 ? "-" : "";
    if (u == 0)
        snprintf(buf, size, "%s%.0f B", sign, v);
    else
        snprintf(buf, size, "%s%.2f %s", sign, v, units[u]);
    return buf;
}

int lg_parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || !isfinite(v))
        return lg_fail(LG_EINVAL, "'%s' is not a size (e.g. 4096, 256KiB, 1.5MiB)", s);
    while (*end == ' ') end++;
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {
        {"", 1},        {"b", 1},         {"k", 1024}, {"kib", 1024},     {"kb", 1000},
        {"m", 1048576}, {"mib", 1048576}, {"mb", 1e6}, {"g", 1073741824}, {"gib", 1073741824},
        {"gb", 1e9}};
    for (size_t i = 0; i < LG_ARRAY_LEN(units); i++)
        if (strcasecmp(end, units[i].suffix) == 0) {
            double b = v * units[i].mult;
            if (b > 1e15) return lg_fail(LG_EINVAL, "size '%s' is too large", s);
            *out = (size_t)llround(b);
            return LG_OK;
        }
    return lg_fail(LG_EINVAL, "'%s': unknown size unit '%s' (use B, KiB, MiB, GiB)", s, end);
}

int lg_open_read(FILE **out, const char *path, const char *what)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return lg_fail(LG_EIO, "%s: cannot read the %s: %s", path, what, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return lg_fail(LG_EIO, "%s: cannot read the %s: not a regular file (a %s)", path, what,
                       file_kind(&st));
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 || !(*out = fdopen(fd, "re"))) {
        int err = errno;
        close(fd);
        return lg_fail(LG_EIO, "%s: cannot read the %s: %s", path, what, strerror(err));
    }
    return LG_OK;
}

bool lg_reserve(void **arr, int *cap, int n, size_t elem, int first)
{
    if (n >= *cap) {
        int ncap = *cap ? *cap * 2 : first;
        while (ncap <= n) ncap *= 2;
        void *nv = realloc(*arr, elem * (size_t)ncap);
        if (!nv) return false;
        *arr = nv;
        *cap = ncap;
    }
    memset((char *)*arr + elem * (size_t)n, 0, elem);
    return true;
}
