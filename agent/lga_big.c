/* lga_big.c — the stacks of big blocks, taken at birth.
 *
 * The census (lga_census.c) counts every block a session keeps, exactly, but names none; heap
 * profiling names growth only from the session it is armed in. A block kept before that — a
 * one-off 48 MiB step, a late leak of a few big buffers — would be counted and never named. So
 * every untagged allocation of at least LGA_BIG_MIN made inside a counted session has its
 * return addresses recorded as it is born, and forgotten when it is freed. At a session end
 * each census entry carries the stack of the largest big block born in its session that is
 * still alive (the parent symbolises it through CMD's memory map).
 *
 * The cost is one backtrace per big allocation (cheaper than touching its pages) and, while a
 * big block is live, one sallocx per free. At most LGA_BIG_MAX blocks are remembered; past
 * that, new ones go unrecorded (their census entry is named by a profile, or not at all).
 * The table is dense (a freed block's slot takes the last one), scanned under its own mutex
 * only when a big block is freed; it is static storage, touched whole before the first
 * session (lga_big_init), so recording allocates nothing and never moves the process's RSS.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <string.h>

#include "lga_impl.h"
#include "lga_wire.h"

#define LGA_BIG_MAX    512
#define LGA_BIG_FRAMES 24

struct big_block {
    size_t n;
    int born;
    int depth;
    void *frames[LGA_BIG_FRAMES];
};

_Atomic int lga_big_live;            /* blocks in the table: free() looks only when > 0 */
static _Atomic int big_session = -1; /* the counted session open now, -1 none */
static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
static void *big_ptr[LGA_BIG_MAX]; /* [0, big_n): the live big blocks, dense */
static struct big_block big[LGA_BIG_MAX];
static int big_n;

extern char __start_lg_trk_text[], __stop_lg_trk_text[];

static bool in_wrapper(const void *pc)
{
    return (const char *)pc >= __start_lg_trk_text && (const char *)pc < __stop_lg_trk_text;
}

void lga_big_init(void)
{
    /* resident from the start: a table whose pages were first touched in session 9 would be a
     * step in the program's RSS */
    memset((void *)big_ptr, 0, sizeof big_ptr);
    memset(big, 0, sizeof big);
}

void lga_big_session(int session) { atomic_store(&big_session, session); }

/* Records p (n bytes, just allocated in the open session) with the stack that asked for it.
 * In the wrappers' section, so the stack starts at the program's call. */
TRK_WRAPPER void lga_big_note(void *p, size_t n)
{
    int born = atomic_load_explicit(&big_session, memory_order_relaxed);
    if (born < 0 || lga_tl.in_agent) return;
    void *frames[LGA_BIG_FRAMES + 8];
    lga_tl.in_agent++; /* backtrace's first call loads libgcc_s, which allocates */
    int got = backtrace(frames, (int)LG_ARRAY_LEN(frames));
    lga_tl.in_agent--;
    int first = 0;
    while (first < got && in_wrapper(frames[first])) first++;
    pthread_mutex_lock(&big_mu);
    if (big_n < LGA_BIG_MAX) {
        int i = big_n++;
        big_ptr[i] = p;
        big[i] =
            (struct big_block){.n = n, .born = born, .depth = LG_MIN(got - first, LGA_BIG_FRAMES)};
        memcpy(big[i].frames, frames + first, (size_t)big[i].depth * sizeof(void *));
        atomic_store(&lga_big_live, big_n);
    }
    pthread_mutex_unlock(&big_mu);
}

/* The index of p in the table, or -1; big_mu held. */
static int find(const void *p)
{
    for (int i = 0; i < big_n; i++)
        if (big_ptr[i] == p) return i;
    return -1;
}

void lga_big_forget(void *p)
{
    pthread_mutex_lock(&big_mu);
    int i = find(p);
    if (i >= 0) {
        big_n--;
        big_ptr[i] = big_ptr[big_n];
        big[i] = big[big_n];
        atomic_store(&lga_big_live, big_n);
    }
    pthread_mutex_unlock(&big_mu);
}

void lga_big_resized(void *p, size_t n)
{
    pthread_mutex_lock(&big_mu);
    int i = find(p);
    if (i >= 0) big[i].n = n;
    pthread_mutex_unlock(&big_mu);
}

void lga_big_each(void (*fn)(void *ctx, void *p, size_t n, void *const *frames, int depth),
                  void *ctx)
{
    pthread_mutex_lock(&big_mu);
    for (int i = 0; i < big_n; i++) fn(ctx, big_ptr[i], big[i].n, big[i].frames, big[i].depth);
    pthread_mutex_unlock(&big_mu);
}

/* Writes the largest live big block born in `born` as {bytes, raw stack} ({0, ""} when none);
 * the stack is one return address a line, as the tracker's raw stacks are. */
void lga_big_put(struct lga_enc *e, int born)
{
    char text[LGA_BIG_FRAMES * 20 + 1];
    size_t bytes = 0;
    text[0] = '\0';
    pthread_mutex_lock(&big_mu);
    int best = -1;
    for (int i = 0; i < big_n; i++)
        if (big[i].born == born && (best < 0 || big[i].n > big[best].n)) best = i;
    if (best >= 0) {
        bytes = big[best].n;
        size_t k = 0;
        for (int f = 0; f < big[best].depth; f++)
            k += (size_t)snprintf(text + k, sizeof text - k, "0x%lx\n",
                                  (unsigned long)(uintptr_t)big[best].frames[f]);
    }
    pthread_mutex_unlock(&big_mu);
    lga_put_i64(e, (int64_t)bytes);
    lga_put_str(e, text);
}
