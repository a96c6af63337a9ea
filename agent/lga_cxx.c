/* lga_cxx.c — C++ operator new and delete, routed through the agent's malloc and free.
 *
 * libstdc++'s operators call malloc and free, so they would reach lga_alloc.c anyway; but
 * Debian's libjemalloc.so.2 exports operators of its own that call jemalloc directly, and a
 * program (or library) that loads it ahead of libstdc++ would then bypass tag scopes, and
 * free tagged memory behind the tracker's back. The agent is preloaded, so these definitions
 * come first. They are written in C under their mangled names (Itanium C++ ABI):
 * _Znwm = operator new(size_t), _ZdlPv = operator delete(void *), ...
 *
 * A failed allocation is handed to the next definition (libstdc++'s or jemalloc's), which runs
 * the new_handler loop and throws std::bad_alloc as the standard requires; C cannot throw.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "lga_impl.h"

#define EXPORT __attribute__((visibility("default")))

typedef void *(*new_fn)(size_t);
typedef void *(*new_aligned_fn)(size_t, size_t);

/* The next definition of `name` after the agent's; aborts when there is none (an operator new
 * can only fail by throwing, and nothing here can throw). */
static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        lga_say("out of memory in operator new, and no %s to throw std::bad_alloc", name);
        abort();
    }
    return f;
}

TRK_WRAPPER static void *new_aligned(size_t n, size_t align)
{
    void *p = NULL;
    return posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, n) == 0 ? p : NULL;
}

/* operator new(size_t), new[](size_t) */
EXPORT TRK_WRAPPER void *_Znwm(size_t n)
{
    void *p = malloc(n);
    return p ? p : ((new_fn)next("_Znwm"))(n);
}
EXPORT TRK_WRAPPER void *_Znam(size_t n)
{
    void *p = malloc(n);
    return p ? p : ((new_fn)next("_Znam"))(n);
}
/* operator new(size_t, const std::nothrow_t &) and new[] */
EXPORT TRK_WRAPPER void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag)
{
    (void)tag;
    return malloc(n);
}
EXPORT TRK_WRAPPER void *_ZnamRKSt9nothrow_t(size_t n, const void *tag)
{
    (void)tag;
    return malloc(n);
}
/* operator new(size_t, std::align_val_t) and new[] */
EXPORT TRK_WRAPPER void *_ZnwmSt11align_val_t(size_t n, size_t align)
{
    void *p = new_aligned(n, align);
    return p ? p : ((new_aligned_fn)next("_ZnwmSt11align_val_t"))(n, align);
}
EXPORT TRK_WRAPPER void *_ZnamSt11align_val_t(size_t n, size_t align)
{
    void *p = new_aligned(n, align);
    return p ? p : ((new_aligned_fn)next("_ZnamSt11align_val_t"))(n, align);
}
/* operator new(size_t, std::align_val_t, const std::nothrow_t &) and new[] */
EXPORT TRK_WRAPPER void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag)
{
    (void)tag;
    return new_aligned(n, align);
}
EXPORT TRK_WRAPPER void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t align, const void *tag)
{
    (void)tag;
    return new_aligned(n, align);
}

/* Every operator delete, plain, sized, aligned, nothrow, array: free(p), which needs none of
 * the size, alignment or nothrow tag a C++ caller passes besides. One line each. */
#define DELETE(name)                                                                               \
    EXPORT void name(void *p) { free(p); }
#define DELETE2(name, A)                                                                           \
    EXPORT void name(void *p, A a) { free(p); }
#define DELETE3(name, A, B)                                                                        \
    EXPORT void name(void *p, A a, B b) { free(p); }

/* operator delete(void *) and delete[] */
DELETE(_ZdlPv)
DELETE(_ZdaPv)
/* operator delete(void *, size_t) and delete[] */
DELETE2(_ZdlPvm, size_t)
DELETE2(_ZdaPvm, size_t)
/* operator delete(void *, const std::nothrow_t &) and delete[] */
DELETE2(_ZdlPvRKSt9nothrow_t, const void *)
DELETE2(_ZdaPvRKSt9nothrow_t, const void *)
/* operator delete(void *, std::align_val_t) and delete[] */
DELETE2(_ZdlPvSt11align_val_t, size_t)
DELETE2(_ZdaPvSt11align_val_t, size_t)
/* operator delete(void *, size_t, std::align_val_t) and delete[] */
DELETE3(_ZdlPvmSt11align_val_t, size_t, size_t)
DELETE3(_ZdaPvmSt11align_val_t, size_t, size_t)
/* operator delete(void *, std::align_val_t, const std::nothrow_t &) and delete[] */
DELETE3(_ZdlPvSt11align_val_tRKSt9nothrow_t, size_t, const void *)
DELETE3(_ZdaPvSt11align_val_tRKSt9nothrow_t, size_t, const void *)
