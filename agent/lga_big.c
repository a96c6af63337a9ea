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
 * big block is live, one sallocx per free. At most LGA_BIG_SLOTS blocks are remembered; past
 * that, new ones go unrecorded (their census entry is named by a profile, or not at all).
 * The table is open addressing on the pointer with backward-shift deletion, under its own
 * mutex; it is static storage, so recording allocates nothing.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <string.h>

#include "lga_impl.h"
#include "lga_wire.h"

#define LGA_BIG_SLOTS  1024 /* a power of two; at most half of it filled */
#define LGA_BIG_FRAMES 24

struct big_block {
    void *p; /* NULL: an empty slot */
    size_t n;
    int born;
    int depth;
    void *frames[LGA_BIG_FRAMES];
};

_Atomic int lga_big_live;            /* blocks in the table: free() looks only when > 0 */
static _Atomic int big_session = -1; /* the counted session open now, -1 none */
static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
static struct big_block big[LGA_BIG_SLOTS];
static int big_n;

extern char __start_lg_trk_text[], __stop_lg_trk_text[];

static bool in_wrapper(const void *pc)
{
    return (const char *)pc >= __start_lg_trk_text && (const char *)pc < __stop_lg_trk_text;
}

static size_t slot_of(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 40) & (LGA_BIG_SLOTS - 1);
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
    if (big_n < LGA_BIG_SLOTS / 2) {
        size_t i = slot_of(p);
        while (big[i].p && big[i].p != p) i = (i + 1) & (LGA_BIG_SLOTS - 1);
        if (!big[i].p) big_n++;
        big[i] = (struct big_block){.p = p, .n = n, .born = born};
        big[i].depth = LG_MIN(got - first, LGA_BIG_FRAMES);
        memcpy(big[i].frames, frames + first, (size_t)big[i].depth * sizeof(void *));
        atomic_store(&lga_big_live, big_n);
    }
    pthread_mutex_unlock(&big_mu);
}

/* The slot holding p, or -1; big_mu held. */
static long find(const void *p)
{
    for (size_t i = slot_of(p); big[i].p; i = (i + 1) & (LGA_BIG_SLOTS - 1))
        if (big[i].p == p) return (long)i;
    return -1;
}

void lga_big_forget(void *p)
{
    pthread_mutex_lock(&big_mu);
    long at = find(p);
    if (at >= 0) { /* backward shift: move up every later entry whose home is not between */
        size_t i = (size_t)at, j = i;
        for (;;) {
            j = (j + 1) & (LGA_BIG_SLOTS - 1);
            if (!big[j].p) break;
            size_t home = slot_of(big[j].p);
            bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (stays) continue;
            big[i] = big[j];
            i = j;
        }
        big[i].p = NULL;
        atomic_store(&lga_big_live, --big_n);
    }
    pthread_mutex_unlock(&big_mu);
}

void lga_big_resized(void *p, size_t n)
{
    pthread_mutex_lock(&big_mu);
    long at = find(p);
    if (at >= 0) big[at].n = n;
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
    long best = -1;
    for (size_t i = 0; i < LGA_BIG_SLOTS; i++)
        if (big[i].p && big[i].born == born && (best < 0 || big[i].n > big[best].n)) best = (long)i;
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
