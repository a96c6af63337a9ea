/* lga_keep.c — who keeps it: the retention path from a kept block to its root, in C, C++ and
 * Rust programs under exec (issue 41).
 *
 * The census (lga_census.c) says which session's blocks stay alive, exactly; the heap profile
 * says where they were allocated. Neither says what holds them. Once the census calls a leak,
 * exec profiles one session whole (LGA_CFG_PROF_EXACT); in that same session this file records
 * every untagged block the program allocates — its address, size and allocation stack — and
 * forgets each at its free. At the next session end the blocks still recorded are that session's
 * kept blocks, known by address, and a conservative scan looks for what points at them:
 *
 *   roots    the writable data and bss of every loaded object (not the agent's, not jemalloc's:
 *            their tables point at blocks by design), and the stack of the thread ending the
 *            session, from its stack pointer up;
 *   edges    an aligned word inside a root or inside a recorded block whose value points into a
 *            recorded block (interior pointers included).
 *
 * A breadth-first walk from the roots gives each reachable block its shortest chain. For the
 * KEEP_PATHS allocation stacks that kept the most bytes, one block's chain goes to the parent
 * (raw addresses: exec names the global through the module's symbol table and the blocks by
 * their stacks). Big blocks born in other sessions (lga_big.c knows them by address) are links
 * too, so a registry's buffer allocated before the recorded session still leads to what it
 * holds. The scan is conservative: a stale word that happens to hold a block's address
 * makes a path that is not the real one (docs/exec.md says when to doubt it); a block reached
 * from nothing is said to be held from where the scan does not look (another thread's stack, a
 * register, a block born in another session).
 *
 * Memory: the table and the scan's scratch are mmap'd outside jemalloc, so neither the census
 * nor je_allocated sees them; the table is made resident whole as recording starts and taken
 * out of rss (lga_promote.c), the scan's scratch is unmapped after the scan. Frees look into the
 * table lock-free while it holds blocks; insertions (one session) take a mutex.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lga_impl.h"
#include "lga_wire.h"

#define KEEP_BITS     18 /* 256 Ki slots, at most half filled: 4 MiB at most */
#define KEEP_CAP      ((size_t)1 << KEEP_BITS)
#define KEEP_STACKS   4096 /* distinct allocation stacks */
#define KEEP_FRAMES   16
#define KEEP_PATHS    3                 /* stacks whose blocks get a path */
#define KEEP_LINKS    8                 /* blocks in a chain at most */
#define KEEP_WORDS    ((size_t)1 << 28) /* words scanned at most (2 GiB) */
#define KEEP_MAPS     ((size_t)4 << 20) /* /proc/self/maps read at most */
#define TOMB          ((uintptr_t)1)
#define LGA_BIG_LINKS 512 /* big blocks of other sessions taken as links (lga_big.c's most) */

struct keep_stack {
    uint64_t hash;
    int depth;
    void *frames[KEEP_FRAMES];
};

/* A recorded block at scan time. */
struct target {
    uintptr_t start;
    size_t size;
    uint32_t sid;
    int parent;   /* the block whose word points here, -1: none (or a root) */
    int root;     /* index into roots when a root points here, -1 */
    bool reached; /* from a root, directly or through parents */
    bool bridge;  /* a big block born in another session: a link in chains, never reported */
};

struct root {
    uintptr_t addr;   /* the word that points */
    uintptr_t base;   /* the module's load address (its offset-0 mapping), 0: a stack */
    char module[256]; /* the module's path, or "" for the stack */
};

_Atomic int lga_keep_live; /* recorded blocks not yet freed: free() looks only when > 0 */
static struct {
    pthread_mutex_t mu;
    _Atomic(uintptr_t) *keys; /* KEEP_CAP; 0 empty, TOMB freed */
    uint32_t *sizes;          /* saturated at 4 GiB: a larger block is still found by its start */
    uint32_t *sid;
    struct keep_stack *stacks;
    size_t used; /* slots ever filled (tombstones included) */
    int n_stacks;
    _Atomic bool recording;
    int born;        /* the agent's index of the recorded session */
    bool scanned;    /* the path was sent once */
    int64_t dropped; /* blocks not recorded: the table was full */
} kp = {.mu = PTHREAD_MUTEX_INITIALIZER, .born = -1};

extern char __start_lg_trk_text[], __stop_lg_trk_text[];

static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static size_t slot_of(uintptr_t p)
{
    return (size_t)((p * 0x9e3779b97f4a7c15ull) >> (64 - KEEP_BITS));
}

void lga_keep_start(int session)
{
    if (kp.keys || atomic_load(&kp.recording)) return; /* once a run */
    const char *env = getenv("LEAKGATE_KEEP");         /* "0": off, for the A/B of its cost */
    if (env && !strcmp(env, "0")) return;
    kp.keys = map(KEEP_CAP * sizeof *kp.keys);
    kp.sizes = map(KEEP_CAP * sizeof *kp.sizes);
    kp.sid = map(KEEP_CAP * sizeof *kp.sid);
    kp.stacks = map(KEEP_STACKS * sizeof *kp.stacks);
    if (!kp.keys || !kp.sizes || !kp.sid || !kp.stacks) {
        lga_say("out of memory for the retention table: kept blocks are not traced to a root");
        return;
    }
    /* resident whole from here on (lga_keep_resident says how much, and it is taken out of
     * rss): pages first touched by a free's probe would be the zero page, in no RSS */
    memset((void *)kp.keys, 0, KEEP_CAP * sizeof *kp.keys);
    memset(kp.sizes, 0, KEEP_CAP * sizeof *kp.sizes);
    memset(kp.sid, 0, KEEP_CAP * sizeof *kp.sid);
    memset(kp.stacks, 0, KEEP_STACKS * sizeof *kp.stacks);
    kp.born = session;
    atomic_store(&kp.recording, true);
}

void lga_keep_stop(void) { atomic_store(&kp.recording, false); }

bool lga_keep_recording(void)
{
    return __builtin_expect(atomic_load_explicit(&kp.recording, memory_order_relaxed), 0);
}

/* The stack's id in kp.stacks (deduplicated), or 0 when the table is full; kp.mu held. Slot 0
 * is never used, so 0 means "no stack". */
static uint32_t stack_id(void **f, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)(uintptr_t)f[i]) * 1099511628211ull;
    for (int i = 1; i <= kp.n_stacks; i++)
        if (kp.stacks[i].hash == h && kp.stacks[i].depth == n &&
            !memcmp(kp.stacks[i].frames, f, (size_t)n * sizeof *f))
            return (uint32_t)i;
    if (kp.n_stacks + 1 >= KEEP_STACKS) return 0;
    int i = ++kp.n_stacks;
    kp.stacks[i].hash = h;
    kp.stacks[i].depth = n;
    memcpy(kp.stacks[i].frames, f, (size_t)n * sizeof *f);
    return (uint32_t)i;
}

TRK_WRAPPER void lga_keep_note(void *p, size_t n)
{
    void *frames[KEEP_FRAMES + 8];
    lga_tl.in_agent++;
    int got = backtrace(frames, (int)LG_ARRAY_LEN(frames)), first = 0;
    lga_tl.in_agent--;
    while (first < got && (char *)frames[first] >= __start_lg_trk_text &&
           (char *)frames[first] < __stop_lg_trk_text)
        first++;
    pthread_mutex_lock(&kp.mu);
    if (kp.used < KEEP_CAP / 2) {
        uint32_t id = stack_id(frames + first, LG_MIN(got - first, KEEP_FRAMES));
        size_t i = slot_of((uintptr_t)p);
        for (;;) {
            uintptr_t k = atomic_load(&kp.keys[i]);
            if (k == 0 || k == TOMB) break;
            i = (i + 1) & (KEEP_CAP - 1);
        }
        kp.used += atomic_load(&kp.keys[i]) == 0;
        kp.sizes[i] = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
        kp.sid[i] = id;
        atomic_store(&kp.keys[i], (uintptr_t)p);
        atomic_fetch_add(&lga_keep_live, 1);
    } else {
        kp.dropped++;
    }
    pthread_mutex_unlock(&kp.mu);
}

/* The slot holding p, or KEEP_CAP; lock-free (slots only turn from empty to a key, and from a
 * key to a tombstone). */
static size_t keep_find(const void *p)
{
    for (size_t i = slot_of((uintptr_t)p);; i = (i + 1) & (KEEP_CAP - 1)) {
        uintptr_t k = atomic_load_explicit(&kp.keys[i], memory_order_acquire);
        if (k == 0) return KEEP_CAP;
        if (k == (uintptr_t)p) return i;
    }
}

void lga_keep_resized(void *p, size_t n)
{
    size_t i = keep_find(p);
    if (i < KEEP_CAP) kp.sizes[i] = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

int64_t lga_keep_resident(void)
{
    return kp.keys ? (int64_t)(KEEP_CAP * (sizeof *kp.keys + sizeof *kp.sizes + sizeof *kp.sid) +
                               KEEP_STACKS * sizeof *kp.stacks)
                   : 0;
}

int lga_keep_each(void (*fn)(void *ctx, void *p, size_t n), void *ctx)
{
    if (!kp.keys) return -1;
    /* only the table's pages a key was written to: reading the others would fault them in */
    static unsigned char vec[KEEP_CAP * sizeof *kp.keys / 4096 + 1];
    size_t page = (size_t)sysconf(_SC_PAGESIZE), per = page / sizeof *kp.keys;
    size_t pages = (KEEP_CAP + per - 1) / per;
    if (pages > sizeof vec || mincore((void *)kp.keys, KEEP_CAP * sizeof *kp.keys, vec) != 0)
        return kp.born;
    for (size_t i = 0; i < KEEP_CAP; i++) {
        if (!(vec[i / per] & 1)) {
            i += per - 1 - i % per;
            continue;
        }
        uintptr_t k = atomic_load_explicit(&kp.keys[i], memory_order_acquire);
        if (k > TOMB) fn(ctx, (void *)k, kp.sizes[i]);
    }
    return kp.born;
}

void lga_keep_forget(void *p)
{
    size_t i = keep_find(p);
    uintptr_t k = (uintptr_t)p;
    if (i < KEEP_CAP && atomic_compare_exchange_strong(&kp.keys[i], &k, TOMB))
        atomic_fetch_sub(&lga_keep_live, 1);
}

/* ---- the scan ------------------------------------------------------------------------------ */

struct scan {
    struct target *t;
    int n, cap;
    int pagemap; /* /proc/self/pagemap, -1 when it cannot be read */
    struct root *roots;
    int n_roots, cap_roots;
    int *queue;
    int head, tail;
    size_t words;
};

static int cmp_target(const void *a, const void *b)
{
    const struct target *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The target whose block holds address v, or -1 (binary search over the sorted starts). */
static int find_target(const struct scan *sc, uintptr_t v)
{
    int lo = 0, hi = sc->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const struct target *t = &sc->t[mid];
        if (v < t->start)
            hi = mid - 1;
        else if (v >= t->start + t->size)
            lo = mid + 1;
        else
            return mid;
    }
    return -1;
}

/* Scans the aligned words of [lo, hi): each that points into a block not reached yet reaches it,
 * from `from` (a target) or from a new root at that word (from < 0, module/base given). */
static void scan_range(struct scan *sc, uintptr_t lo, uintptr_t hi, int from, const char *module,
                       uintptr_t base)
{
    lo = (lo + 7) & ~(uintptr_t)7;
    for (uintptr_t a = lo; a + 8 <= hi && sc->words < KEEP_WORDS; a += 8, sc->words++) {
        uintptr_t v = *(const uintptr_t *)a;
        if (v < sc->t[0].start || v >= sc->t[sc->n - 1].start + sc->t[sc->n - 1].size) continue;
        int j = find_target(sc, v);
        if (j < 0 || sc->t[j].reached || j == from) continue;
        if (from < 0) {
            if (sc->n_roots == sc->cap_roots) continue; /* the first roots are enough to name */
            struct root *r = &sc->roots[sc->n_roots];
            r->addr = a;
            r->base = base;
            snprintf(r->module, sizeof r->module, "%s", module);
            sc->t[j].root = sc->n_roots++;
        } else {
            sc->t[j].parent = from;
        }
        sc->t[j].reached = true;
        sc->queue[sc->tail++] = j;
    }
}

/* scan_range over the pages of [lo, hi) that are in this process's page tables. A page the
 * program never touched holds no pointer it wrote (a module's untouched data is the file's, its
 * bss zeros), and reading it would map it: a scan of libtorch's data once made 365 MiB resident,
 * a step every later session's RSS showed. /proc/self/pagemap's "present" bit says which pages
 * are mapped here (mincore would not do: it reports a file's pages in the page cache, mapped or
 * not). Without pagemap nothing is scanned. */
static void scan_resident(struct scan *sc, uintptr_t lo, uintptr_t hi, int from, const char *module,
                          uintptr_t base)
{
    static uint64_t ent[1024];
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo_word = lo;
    if (sc->pagemap < 0) return;
    lo &= ~(page - 1);
    for (uintptr_t at = lo; at < hi;) {
        size_t pages = (size_t)((hi - at + page - 1) / page);
        if (pages > LG_ARRAY_LEN(ent)) pages = LG_ARRAY_LEN(ent);
        ssize_t got =
            pread(sc->pagemap, ent, pages * sizeof *ent, (off_t)(at / page * sizeof *ent));
        if (got <= 0) return;
        pages = (size_t)got / sizeof *ent;
        for (size_t i = 0; i < pages;) {
            size_t j = i;
            while (j < pages && (ent[j] >> 63)) j++; /* bit 63: present */
            if (j > i) {
                uintptr_t a = at + i * page, b = at + j * page;
                scan_range(sc, a > lo_word ? a : lo_word, b < hi ? b : hi, from, module, base);
            }
            i = j + 1;
        }
        at += pages * page;
    }
}

/* Whether a module's data must not count as a root: the agent's and jemalloc's own tables. */
static bool skip_module(const char *path)
{
    return strstr(path, "libleakgate-agent") || strstr(path, "libjemalloc");
}

/* The roots: the data and bss of every loaded object, and this thread's stack from here up.
 * A loaded object is a file with an executable mapping (so never a device a driver maps, such
 * as /dev/nvidia*, whose pages must not be read); its data is its private writable mapping, its
 * bss the anonymous one right after it. */
static void scan_roots(struct scan *sc, char *maps)
{
    char prev_path[256] = "", base_path[256] = "";
    bool base_exec = false, prev_data = false;
    uintptr_t prev_end = 0, base = 0, sp = (uintptr_t)__builtin_frame_address(0);
    for (char *line = maps, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        unsigned long lo, hi, off;
        char perms[8], path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255[^\n]", &lo, &hi, perms, &off, path) < 4 ||
            strlen(perms) < 4)
            continue;
        const char *p = path;
        while (*p == ' ') p++;
        if (*p == '/' && off == 0 && strcmp(p, base_path)) { /* a module's first mapping */
            snprintf(base_path, sizeof base_path, "%s", p);
            base = lo;
            base_exec = false;
        }
        bool ours = *p == '/' && !strcmp(p, base_path);
        if (ours && perms[2] == 'x') base_exec = true;
        bool rw = perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p';
        bool data = false;
        if (lo <= sp && sp < hi) {
            scan_resident(sc, sp, hi, -1, "", 0); /* the stack of the thread ending the session */
        } else if (rw && ours && base_exec && !skip_module(p)) {
            scan_resident(sc, lo, hi, -1, p, base); /* a module's data */
            data = true;
        } else if (rw && !*p && lo == prev_end && prev_data) {
            scan_resident(sc, lo, hi, -1, prev_path, base); /* its bss, right after it */
        }
        snprintf(prev_path, sizeof prev_path, "%s", *p == '/' ? p : "");
        prev_data = data;
        prev_end = hi;
    }
}

/* /proc/self/maps into buf (NUL-terminated); false when it cannot be read. */
static bool read_maps(char *buf, size_t size)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    size_t n = 0;
    ssize_t k;
    while (n + 1 < size && (k = read(fd, buf + n, size - 1 - n)) > 0) n += (size_t)k;
    close(fd);
    buf[n] = '\0';
    return n > 0;
}

static void put_stack(struct lga_enc *e, uint32_t sid)
{
    char text[KEEP_FRAMES * 20 + 1] = "";
    size_t k = 0;
    const struct keep_stack *s = sid ? &kp.stacks[sid] : NULL;
    for (int f = 0; s && f < s->depth; f++)
        k += (size_t)snprintf(text + k, sizeof text - k, "0x%lx\n",
                              (unsigned long)(uintptr_t)s->frames[f]);
    lga_put_str(e, text);
}

/* One stack's path: {blocks, bytes, raw stack, root kind, module, root address, module base,
 * n links, n × {size, raw stack}} from the root's block to the kept one. */
static void put_path(struct lga_enc *e, const struct scan *sc, uint32_t sid, int64_t blocks,
                     int64_t bytes)
{
    lga_put_i64(e, blocks);
    lga_put_i64(e, bytes);
    put_stack(e, sid);
    int best = -1; /* the first block of this stack the walk reached: a shortest chain */
    for (int q = 0; q < sc->tail && best < 0; q++)
        if (sc->t[sc->queue[q]].sid == sid && !sc->t[sc->queue[q]].bridge) best = sc->queue[q];
    int chain[KEEP_LINKS], n = 0;
    for (int j = best; j >= 0 && n < KEEP_LINKS; j = sc->t[j].parent) chain[n++] = j;
    bool whole = n && sc->t[chain[n - 1]].root >= 0; /* the chain reaches its root */
    const struct root *r = whole ? &sc->roots[sc->t[chain[n - 1]].root] : NULL;
    lga_put_u32(e, !whole ? 0u : r->module[0] ? 1u : 2u); /* none, data, stack */
    lga_put_str(e, whole ? r->module : "");
    lga_put_i64(e, whole ? (int64_t)r->addr : 0);
    lga_put_i64(e, whole ? (int64_t)r->base : 0);
    lga_put_u32(e, whole ? (uint32_t)n : 0u);
    for (int i = n - 1; whole && i >= 0; i--) {
        lga_put_i64(e, (int64_t)sc->t[chain[i]].size);
        put_stack(e, sc->t[chain[i]].sid);
    }
}

/* Adds a big block born outside the recorded session as a link (lga_big_each's callback). */
static void add_bridge(void *ctx, void *p, size_t n, void *const *frames, int depth)
{
    struct scan *sc = ctx;
    if (sc->n >= sc->cap || keep_find(p) < KEEP_CAP) return; /* recorded: a target already */
    pthread_mutex_lock(&kp.mu);
    uint32_t id = stack_id((void **)frames, depth);
    pthread_mutex_unlock(&kp.mu);
    sc->t[sc->n++] = (struct target){(uintptr_t)p, n, id, -1, -1, false, true};
}

void lga_keep_put(struct lga_enc *e, int ending)
{
    /* once, at the first session end after the recorded one, while its blocks are kept */
    if (!kp.keys || ending <= kp.born || kp.scanned || atomic_load(&lga_keep_live) <= 0) {
        lga_put_u32(e, 0);
        return;
    }
    kp.scanned = true;
    struct scan sc = {.cap_roots = 4096,
                      .pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)};
    int n = atomic_load(&lga_keep_live) + LGA_BIG_LINKS;
    size_t tbytes = (size_t)n * sizeof *sc.t, qbytes = (size_t)n * sizeof *sc.queue;
    sc.t = map(tbytes);
    sc.queue = map(qbytes);
    sc.roots = map((size_t)sc.cap_roots * sizeof *sc.roots);
    char *maps = map(KEEP_MAPS);
    if (!sc.t || !sc.queue || !sc.roots || !maps || !read_maps(maps, KEEP_MAPS)) {
        lga_put_u32(e, 0);
        goto out;
    }
    for (size_t i = 0; i < KEEP_CAP && sc.n < n; i++) {
        uintptr_t k = atomic_load(&kp.keys[i]);
        if (k > TOMB)
            sc.t[sc.n++] =
                (struct target){k, kp.sizes[i] ? kp.sizes[i] : 1, kp.sid[i], -1, -1, false, false};
    }
    int recorded = sc.n;
    sc.cap = n;
    lga_big_each(add_bridge, &sc);
    if (recorded == 0) {
        lga_put_u32(e, 0);
        goto out;
    }
    qsort(sc.t, (size_t)sc.n, sizeof *sc.t, cmp_target);
    scan_roots(&sc, maps);
    for (sc.head = 0; sc.head < sc.tail; sc.head++) { /* breadth first: shortest chains */
        int j = sc.queue[sc.head];
        /* a big block's pages the program never wrote hold nothing: not faulted in either */
        scan_resident(&sc, sc.t[j].start, sc.t[j].start + sc.t[j].size, j, "", 0);
    }
    /* the stacks that kept the most bytes */
    uint32_t top[KEEP_PATHS] = {0};
    int64_t top_bytes[KEEP_PATHS] = {0}, top_blocks[KEEP_PATHS] = {0};
    for (int s = 1; s <= kp.n_stacks; s++) {
        int64_t bytes = 0, blocks = 0;
        for (int j = 0; j < sc.n; j++)
            if (sc.t[j].sid == (uint32_t)s && !sc.t[j].bridge)
                bytes += (int64_t)sc.t[j].size, blocks++;
        for (int k = 0; k < KEEP_PATHS && bytes; k++)
            if (bytes > top_bytes[k]) {
                for (int m = KEEP_PATHS - 1; m > k; m--) {
                    top[m] = top[m - 1];
                    top_bytes[m] = top_bytes[m - 1];
                    top_blocks[m] = top_blocks[m - 1];
                }
                top[k] = (uint32_t)s;
                top_bytes[k] = bytes;
                top_blocks[k] = blocks;
                break;
            }
    }
    int paths = 0;
    while (paths < KEEP_PATHS && top[paths]) paths++;
    lga_put_u32(e, (uint32_t)paths);
    lga_put_u32(e, (uint32_t)kp.born);
    lga_put_i64(e, (int64_t)sc.words);
    for (int k = 0; k < paths; k++) put_path(e, &sc, top[k], top_blocks[k], top_bytes[k]);
out:
    if (sc.pagemap >= 0) close(sc.pagemap);
    if (sc.t) munmap(sc.t, tbytes);
    if (sc.queue) munmap(sc.queue, qbytes);
    if (sc.roots) munmap(sc.roots, (size_t)sc.cap_roots * sizeof *sc.roots);
    if (maps) munmap(maps, KEEP_MAPS);
}
