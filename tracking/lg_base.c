/* lg_base.c — status messages, assertions, small string and clock helpers. */
#include "lg_base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Thread_local char tl_msg[1024];
static _Thread_local int tl_code;

int lg_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_msg, sizeof tl_msg, fmt, ap);
    va_end(ap);
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
    snprintf(tl_msg, sizeof tl_msg, "%s%s", prefix, old);
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
    case LG_OK: return "ok";
    case LG_EINVAL: return "invalid argument";
    case LG_ENOMEM: return "out of memory";
    case LG_EIO: return "I/O error";
    case LG_EFORMAT: return "malformed input";
    case LG_EBUSY: return "busy";
    case LG_ECUDA: return "CUDA error";
    case LG_EUNAVAIL: return "unavailable";
    case LG_EINTERNAL: return "internal error";
    case LG_EINTR: return "interrupted";
    }
    return "unknown status";
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
