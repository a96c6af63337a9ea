/* stacks.c — call stacks for allocations and retains: captured cheaply (glibc backtrace),
 * deduplicated into a table, symbolised only when a report asks.
 *
 * Symbolisation: dladdr gives the module and the nearest exported symbol; when binutils'
 * addr2line is on the PATH, it turns each frame into "function at file:line" (the module
 * must be built with debug info; leakgate builds RelWithDebInfo). With raw_stacks the text is
 * the return addresses, for a process that reads this one's maps (leakgate exec's parent).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trk_impl.h"

int trk_stacks_init(struct trk_tracker *trk)
{
    struct trk_stacks *s = &trk->stacks;
    pthread_mutex_init(&s->mu, NULL);
    s->n = 1; /* id 0 = no stack */
    return LG_OK;
}

void trk_stacks_fini(struct trk_tracker *trk)
{
    trk_meta_free(trk, trk->stacks.v);
    trk_meta_free(trk, trk->stacks.index);
    pthread_mutex_destroy(&trk->stacks.mu);
}

static uint64_t hash_frames(void **f, int n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uintptr_t)f[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h;
}

static int grow_locked(struct trk_tracker *trk)
{
    struct trk_stacks *s = &trk->stacks;
    if (s->n + 1 > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 256;
        struct trk_stack *nv = trk_meta_realloc(trk, s->v, ncap * sizeof *nv);
        if (!nv) return LG_ENOMEM;
        s->v = nv;
        s->cap = ncap;
    }
    if ((s->n + 1) * 2 > s->index_cap) {
        size_t ncap = s->index_cap ? s->index_cap * 2 : 512;
        uint32_t *ni = trk_meta_calloc(trk, ncap, sizeof *ni);
        if (!ni) return LG_ENOMEM;
        for (size_t id = 1; id < s->n; id++) {
            size_t i = s->v[id].hash & (ncap - 1);
            while (ni[i]) i = (i + 1) & (ncap - 1);
            ni[i] = (uint32_t)id;
        }
        trk_meta_free(trk, s->index);
        s->index = ni;
        s->index_cap = ncap;
    }
    return LG_OK;
}

extern char __start_lg_trk_text[], __stop_lg_trk_text[];

static bool in_tracker(const void *pc)
{
    return (const char *)pc >= __start_lg_trk_text && (const char *)pc < __stop_lg_trk_text;
}

TRK_ENTRY uint32_t trk_stack_capture(struct trk_tracker *trk)
{
    void *frames[TRK_MAX_FRAMES + 16];
    int want = trk->opt.stack_depth > 0 ? trk->opt.stack_depth : 16;
    if (want > TRK_MAX_FRAMES) want = TRK_MAX_FRAMES;
    int n = backtrace(frames, (int)LG_ARRAY_LEN(frames)), last = -1;
    /* drop everything up to the last of the leading run of tracker frames (a sanitizer's
     * backtrace interceptor may come before it) */
    for (int i = 0; i < n; i++) {
        if (in_tracker(frames[i]))
            last = i;
        else if (last >= 0)
            break;
    }
    int first = last + 1;
    if (first >= n) return 0;
    void **f = frames + first;
    n = LG_MIN(n - first, want);
    uint64_t h = hash_frames(f, n);

    struct trk_stacks *s = &trk->stacks;
    uint32_t id = 0;
    pthread_mutex_lock(&s->mu);
    if (s->index_cap) {
        size_t mask = s->index_cap - 1;
        for (size_t i = h & mask; s->index[i]; i = (i + 1) & mask) {
            struct trk_stack *e = &s->v[s->index[i]];
            if (e->hash == h && e->depth == n && memcmp(e->frames, f, n * sizeof *f) == 0) {
                id = s->index[i];
                goto out;
            }
        }
    }
    if (grow_locked(trk) != LG_OK) goto out;
    id = (uint32_t)s->n++;
    s->v[id].hash = h;
    s->v[id].depth = n;
    memcpy(s->v[id].frames, f, n * sizeof *f);
    size_t mask = s->index_cap - 1;
    size_t i = h & mask;
    while (s->index[i]) i = (i + 1) & mask;
    s->index[i] = id;
out:
    pthread_mutex_unlock(&s->mu);
    return id;
}

/* Appends to a growing string; returns 0 on allocation failure. */
struct sbuf {
    char *p;
    size_t n, cap;
};

static int sb_add(struct sbuf *b, const char *s)
{
    size_t k = strlen(s);
    if (b->n + k + 1 > b->cap) {
        size_t ncap = (b->cap ? b->cap * 2 : 256) + k;
        char *np = realloc(b->p, ncap);
        if (!np) return 0;
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->n, s, k + 1);
    b->n += k;
    return 1;
}

static int have_addr2line(void)
{
    static int cached = -1;
    if (cached < 0) cached = system("command -v addr2line >/dev/null 2>&1") == 0;
    return cached;
}

/* Fills sym[i] with "function at file:line" for the frames that belong to module `path`
 * (mod[i] == path), in one addr2line call; leaves the others alone. */
static void addr2line_module(const char *path, void **frames, Dl_info *info, int n,
                             char (*sym)[600])
{
    if (!have_addr2line()) return;
    /* The main program may be named by argv[0] (or re-executed under another name, as
     * Criterion's workers are): read it through /proc/self/exe instead. */
    char exe[1024];
    const char *file = path;
    if (access(path, R_OK) != 0 || !strchr(path, '/')) {
        ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1); /* ours, not the shell's */
        if (k <= 0) return;
        exe[k] = '\0';
        file = exe;
    }
    if (strchr(file, '\'')) return;
    struct sbuf cmd = {0};
    char tmp[64];
    int k = 0;
    if (!sb_add(&cmd, "addr2line -f -C -e '") || !sb_add(&cmd, file) || !sb_add(&cmd, "'"))
        goto out;
    for (int i = 0; i < n; i++) {
        if (!info[i].dli_fname || strcmp(info[i].dli_fname, path) != 0) continue;
        uintptr_t q = (uintptr_t)frames[i] - 1 - (uintptr_t)info[i].dli_fbase;
        snprintf(tmp, sizeof tmp, " 0x%lx", (unsigned long)q);
        if (!sb_add(&cmd, tmp)) goto out;
        k++;
    }
    if (!k || !sb_add(&cmd, " 2>/dev/null")) goto out;
    FILE *p = popen(cmd.p, "r");
    if (!p) goto out;
    for (int i = 0; i < n; i++) {
        if (!info[i].dli_fname || strcmp(info[i].dli_fname, path) != 0) continue;
        char fn[256], loc[512];
        if (!fgets(fn, sizeof fn, p) || !fgets(loc, sizeof loc, p)) break;
        fn[strcspn(fn, "\n")] = '\0';
        loc[strcspn(loc, "\n")] = '\0';
        const char *base = strrchr(loc, '/');
        base = base ? base + 1 : loc;
        if (strcmp(fn, "??") != 0) {
            if (strncmp(base, "??", 2) == 0)
                snprintf(sym[i], sizeof sym[i], "%s", fn);
            else
                snprintf(sym[i], sizeof sym[i], "%s at %s", fn, base);
        }
    }
    pclose(p);
out:
    free(cmd.p);
}

static char *frames_text(void **frames, int n)
{
    Dl_info info[TRK_MAX_FRAMES + 8];
    char sym[TRK_MAX_FRAMES + 8][600];
    for (int i = 0; i < n; i++) {
        memset(&info[i], 0, sizeof info[i]);
        sym[i][0] = '\0';
        /* return addresses point after the call: look up the call instruction itself */
        if (!dladdr((char *)frames[i] - 1, &info[i])) info[i].dli_fname = NULL;
    }
    for (int i = 0; i < n; i++) { /* one addr2line per module, first frame of each */
        int first = 1;
        for (int j = 0; j < i; j++)
            if (info[j].dli_fname && info[i].dli_fname &&
                strcmp(info[j].dli_fname, info[i].dli_fname) == 0)
                first = 0;
        if (first && info[i].dli_fname) addr2line_module(info[i].dli_fname, frames, info, n, sym);
    }
    struct sbuf b = {0};
    for (int i = 0; i < n; i++) {
        char line[700];
        uintptr_t q = (uintptr_t)frames[i] - 1;
        if (!sym[i][0]) {
            if (info[i].dli_fname) {
                const char *mod = strrchr(info[i].dli_fname, '/');
                mod = mod ? mod + 1 : info[i].dli_fname;
                if (info[i].dli_sname)
                    snprintf(sym[i], sizeof sym[i], "%s+0x%lx (%s)", info[i].dli_sname,
                             (unsigned long)(q - (uintptr_t)info[i].dli_saddr), mod);
                else
                    snprintf(sym[i], sizeof sym[i], "%s+0x%lx", mod,
                             (unsigned long)(q - (uintptr_t)info[i].dli_fbase));
            } else {
                snprintf(sym[i], sizeof sym[i], "%p", frames[i]);
            }
        }
        snprintf(line, sizeof line, "#%d %s\n", i, sym[i]);
        if (!sb_add(&b, line)) {
            free(b.p);
            return NULL;
        }
        if (strncmp(sym[i], "main", 4) == 0 && (sym[i][4] == ' ' || sym[i][4] == '+')) break;
    }
    return b.p;
}

/* The return addresses, one "0x..." a line, for another process to symbolise. */
static char *frames_raw(void **frames, int n)
{
    char *s = malloc((size_t)n * 20 + 1), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < n; i++) p += sprintf(p, "0x%lx\n", (unsigned long)(uintptr_t)frames[i]);
    *p = '\0';
    return s;
}

char *trk_stack_text(struct trk_tracker *trk, uint32_t id)
{
    if (id == 0) return NULL;
    struct trk_stack copy;
    pthread_mutex_lock(&trk->stacks.mu);
    int ok = id < trk->stacks.n;
    if (ok) copy = trk->stacks.v[id];
    pthread_mutex_unlock(&trk->stacks.mu);
    if (!ok) return NULL;
    return trk->opt.raw_stacks ? frames_raw(copy.frames, copy.depth)
                               : frames_text(copy.frames, copy.depth);
}

__attribute__((noinline)) char *trk_stack_here(int skip, int depth)
{
    void *frames[TRK_MAX_FRAMES + 8];
    if (depth <= 0 || depth > TRK_MAX_FRAMES) depth = 16;
    skip += 1;
    int n = backtrace(frames, LG_MIN(depth + skip, (int)LG_ARRAY_LEN(frames)));
    if (n <= skip) return NULL;
    return frames_text(frames + skip, n - skip);
}
