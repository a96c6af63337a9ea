/* exec_prof.c — untagged growth named by the stack that allocated it: jemalloc heap profiles,
 * dumped at session ends, diffed by stack against a base profile.
 *
 * A heap_v2 profile (jemalloc 5.3, prof_unbias on) lists, per allocation stack, "objects: bytes"
 * of the sampled allocations still live — written so that jeprof's correction
 * scale = 1 / (1 - exp(-(bytes/objects) / R)), R the mean sampling interval, gives unbiased
 * estimates of the live objects and bytes. That is what this file does per stack, for the base
 * and for the current profile; their difference is the growth since the base. The uncertainty
 * (rpt_alloc_interval, docs/exec.md) rests on the sampled objects gained: each live object of
 * size s is in a profile with probability p = 1 - exp(-s/R), so k sampled objects estimate k/p
 * objects, with a binomial (Wilson score) interval around them.
 *
 * `run` uses this in-process (leakgate itself links jemalloc and starts with heap profiling
 * available: the malloc_conf of harness/main.c); there every buffer here is freed before the next
 * session begins, so the attribution never moves the measurement. `exec` uses it in the parent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef LG_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "exec_impl.h"

#define TOP_STACKS  16           /* growth stacks kept per session */
#define MAX_PROFILE (256L << 20) /* a profile larger than this is refused */

/* ---- this process's jemalloc ------------------------------------------------------------------
 */

bool hx_prof_local_available(int64_t *sample)
{
#ifdef LG_HAVE_JEMALLOC
    bool on = false;
    size_t len = sizeof on, lg = 0, llen = sizeof lg;
    if (mallctl("opt.prof", &on, &len, NULL, 0) != 0 || !on) return false;
    if (mallctl("prof.lg_sample", &lg, &llen, NULL, 0) != 0) return false;
    if (sample) *sample = (int64_t)1 << lg;
    return true;
#else
    (void)sample;
    return false;
#endif
}

int hx_prof_local_activate(bool on)
{
#ifdef LG_HAVE_JEMALLOC
    if (mallctl("prof.active", NULL, NULL, &on, sizeof on) == 0) return LG_OK;
#endif
    return lg_fail(LG_EUNAVAIL, "jemalloc heap profiling is not available in this process");
}

int hx_prof_local_dump(const char *path)
{
#ifdef LG_HAVE_JEMALLOC
    /* jemalloc opens the name it is given with creat(): the file is made first, anew, so what
     * was left at the name (a link, a FIFO) is never written through or blocked on */
    int fd, rc = lg_out_create(&fd, path);
    if (rc != LG_OK) return rc;
    close(fd);
    if (mallctl("prof.dump", NULL, NULL, &path, sizeof path) == 0) return LG_OK;
#endif
    return lg_fail(LG_EIO, "%s: jemalloc could not dump a heap profile", path);
}

/* ---- profiles ----------------------------------------------------------------------------------
 */

struct heap_stack {
    uint64_t hash;
    int depth;
    size_t first;       /* into heap.pcs */
    double objs, bytes; /* as written (biased; see the top) */
};

struct heap {
    int64_t sample; /* R */
    struct heap_stack *v;
    size_t n, cap;
    uintptr_t *pcs;
    size_t npcs, pcap;
    char *text;       /* the file; maps points into it */
    const char *maps; /* MAPPED_LIBRARIES */
};

static void heap_free(struct heap *h)
{
    free(h->v);
    free(h->pcs);
    free(h->text);
    memset(h, 0, sizeof *h);
}

static char *slurp(const char *path, int *rc)
{
    FILE *f = NULL;
    char *s = NULL;
    struct stat st;
    if ((*rc = lg_open_read(&f, path, "heap profile")) != LG_OK) return NULL; /* not a FIFO */
    if (fstat(fileno(f), &st) != 0 || st.st_size > MAX_PROFILE) {
        *rc = lg_fail(LG_EFORMAT, "%s: not a heap profile leakgate can read", path);
    } else if (!(s = malloc((size_t)st.st_size + 1))) {
        *rc = lg_fail(LG_ENOMEM, "%s: out of memory", path);
    } else {
        size_t n = fread(s, 1, (size_t)st.st_size, f);
        s[n] = '\0';
        *rc = LG_OK;
    }
    fclose(f);
    return s;
}

static bool push_pc(struct heap *h, uintptr_t pc)
{
    if (h->npcs == h->pcap) {
        size_t cap = h->pcap ? h->pcap * 2 : 1024;
        uintptr_t *nv = realloc(h->pcs, cap * sizeof *nv);
        if (!nv) return false;
        h->pcs = nv;
        h->pcap = cap;
    }
    h->pcs[h->npcs++] = pc;
    return true;
}

static uint64_t hash_pcs(const uintptr_t *p, int n)
{
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        x ^= p[i];
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
    }
    return x;
}

/* Loads a heap_v2 profile: every stack with its "t*" counts, and the memory map. */
static int heap_load(const char *path, struct heap *h)
{
    memset(h, 0, sizeof *h);
    int rc;
    h->text = slurp(path, &rc);
    if (!h->text) return rc;
    long sample = 0;
    if (sscanf(h->text, "heap_v2/%ld", &sample) != 1 || sample <= 0) {
        rc = lg_fail(LG_EFORMAT, "%s: not a jemalloc heap_v2 profile", path);
        goto fail;
    }
    h->sample = sample;
    struct heap_stack *cur = NULL;
    for (char *line = h->text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (!strncmp(line, "MAPPED_LIBRARIES:", 17)) {
            h->maps = next ? next : "";
            break;
        }
        if (line[0] == '@') {
            if (h->n == h->cap) {
                size_t cap = h->cap ? h->cap * 2 : 256;
                struct heap_stack *nv = realloc(h->v, cap * sizeof *nv);
                if (!nv) goto nomem;
                h->v = nv;
                h->cap = cap;
            }
            cur = &h->v[h->n++];
            memset(cur, 0, sizeof *cur);
            cur->first = h->npcs;
            for (char *p = line + 1, *end;; p = end) {
                unsigned long pc = strtoul(p, &end, 16);
                if (end == p) break;
                if (!push_pc(h, pc)) goto nomem;
                cur->depth++;
            }
            cur->hash = hash_pcs(h->pcs + cur->first, cur->depth);
            continue;
        }
        double objs, bytes;
        if (cur && sscanf(line, " t*: %lf: %lf", &objs, &bytes) == 2) {
            cur->objs = objs;
            cur->bytes = bytes;
            cur = NULL;
        }
    }
    if (!h->maps) {
        rc = lg_fail(LG_EFORMAT, "%s: a heap profile without MAPPED_LIBRARIES (cut short?)", path);
        goto fail;
    }
    return LG_OK;
nomem:
    rc = lg_fail(LG_ENOMEM, "%s: out of memory reading the heap profile", path);
fail:
    heap_free(h);
    return rc;
}

/* Unbiased live objects and bytes of one stack (jeprof's correction). */
static void unbias(double objs, double bytes, double R, double *eo, double *eb)
{
    *eo = *eb = 0;
    if (objs <= 0 || bytes <= 0) return;
    double p = 1.0 - exp(-(bytes / objs) / R);
    if (p <= 0) return;
    *eo = objs / p;
    *eb = bytes / p;
}

static const struct heap_stack *find(const struct heap *h, const struct heap *in,
                                     const struct heap_stack *s)
{
    for (size_t i = 0; i < in->n; i++) {
        const struct heap_stack *t = &in->v[i];
        if (t->hash == s->hash && t->depth == s->depth &&
            !memcmp(in->pcs + t->first, h->pcs + s->first, (size_t)s->depth * sizeof *h->pcs))
            return t;
    }
    return NULL;
}

struct growth {
    const struct heap_stack *s;
    double bytes, objs, samples;
};

static int cmp_growth(const void *a, const void *b)
{
    const struct growth *x = a, *y = b;
    return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

/* The stacks of cur that grew since base, largest first, symbolised into s->alloc_stacks. */
static int diff_into(const struct heap *base, const struct heap *cur, struct rpt_session *s)
{
    struct growth *g = calloc(cur->n + 1, sizeof *g);
    struct hx_maps maps = {0};
    struct hx_frames *per = NULL;
    uintptr_t *pcs = NULL;
    int n = 0, npcs = 0, rc = g ? LG_OK : lg_fail(LG_ENOMEM, "out of memory diffing heap profiles");
    for (size_t i = 0; rc == LG_OK && i < cur->n; i++) {
        const struct heap_stack *c = &cur->v[i], *b = find(cur, base, c);
        double co, cb, bo = 0, bb = 0;
        unbias(c->objs, c->bytes, (double)cur->sample, &co, &cb);
        if (b) unbias(b->objs, b->bytes, (double)base->sample, &bo, &bb);
        if (cb - bb <= 0) continue;
        g[n++] = (struct growth){c, cb - bb, co - bo, c->objs - (b ? b->objs : 0)};
    }
    if (rc == LG_OK) qsort(g, (size_t)n, sizeof *g, cmp_growth);
    if (n > TOP_STACKS) n = TOP_STACKS;
    for (int i = 0; i < n; i++) npcs += g[i].s->depth;
    if (rc == LG_OK && n) {
        pcs = malloc((size_t)npcs * sizeof *pcs);
        s->alloc_stacks = calloc((size_t)n, sizeof *s->alloc_stacks);
        if (!pcs || !s->alloc_stacks) rc = lg_fail(LG_ENOMEM, "out of memory naming heap growth");
    }
    if (rc == LG_OK && n) rc = hx_maps_parse(&maps, cur->maps);
    for (int i = 0, at = 0; rc == LG_OK && i < n; i++) {
        memcpy(pcs + at, cur->pcs + g[i].s->first, (size_t)g[i].s->depth * sizeof *pcs);
        at += g[i].s->depth;
    }
    if (rc == LG_OK && n) rc = hx_symbolize_each(&maps, pcs, npcs, &per);
    for (int i = 0, at = 0; rc == LG_OK && i < n; i++) {
        int total = 0;
        for (int k = 0; k < g[i].s->depth; k++) total += per[at + k].n;
        struct hx_frame *flat = malloc((size_t)(total ? total : 1) * sizeof *flat);
        if (!flat) {
            rc = lg_fail(LG_ENOMEM, "out of memory naming heap growth");
            break;
        }
        int m = 0;
        for (int k = 0; k < g[i].s->depth; k++)
            for (int j = 0; j < per[at + k].n; j++) flat[m++] = per[at + k].v[j];
        at += g[i].s->depth;
        struct rpt_alloc_stack *a = &s->alloc_stacks[s->n_alloc_stacks];
        a->frames = hx_frames_text(flat, m);
        free(flat);
        if (!a->frames) {
            rc = lg_fail(LG_ENOMEM, "out of memory naming heap growth");
            break;
        }
        if (strstr(a->frames, "trk_meta_")) { /* the tracker's own tables: the measurement's memory,
                                                 taken out of the channels too (tracker_overhead) */
            free(a->frames);
            a->frames = NULL;
            continue;
        }
        a->bytes = llround(g[i].bytes);
        a->objects = llround(g[i].objs);
        a->samples = llround(g[i].samples);
        s->n_alloc_stacks++;
    }
    hx_frames_free(per, npcs);
    hx_maps_fini(&maps);
    free(pcs);
    free(g);
    return rc;
}

/* ---- the attribution of a run ------------------------------------------------------------------
 */

/* Whether a name in OUT/heap is a profile of leakgate's: session-N.heap (run) and PID.N.heap
 * (exec's agent). An earlier run's are removed before the first dump. */
static bool is_profile(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && !strcmp(name + n - 5, ".heap");
}

int hx_prof_init(struct hx_prof *p, bool available, int64_t sample, bool always, const char *dir)
{
    memset(p, 0, sizeof *p);
    p->available = available;
    p->sample = sample;
    p->always = always;
    p->base_index = -1;
    if (lg_strlcpy(p->dir, dir, sizeof p->dir)) return lg_fail(LG_EINVAL, "%s: path too long", dir);
    return available ? lg_out_subdir(dir, is_profile) : LG_OK;
}

bool hx_prof_flagged(const struct rpt_series *ser, const struct rpt_budget *b)
{
    const unsigned process = rpt_channel_mask(RPT_CHF_PROCESS); /* channels.h */
    /* judged after every session up to 64, then 16 times per doubling of the series: the
     * judge is O(n log n) a channel, and a check after each of n sessions made long runs
     * quadratic (800 sessions of a clean program took 38 s) */
    int n = ser->n_measured;
    if (n == 0 || (n > 64 && n % (n / 16) != 0)) return false;
    struct rpt_verdict v;
    memset(&v, 0, sizeof v);
    rpt_judge_series(ser, b, &v);
    for (int c = 0; c < RPT_NCHANNELS; c++) {
        if (!(process & RPT_BIT(c))) continue;
        const struct rpt_channel_verdict *cv = NULL;
        for (int k = 0; k < v.n_channels; k++)
            if ((int)v.channels[k].channel == c) cv = &v.channels[k];
        if (!cv || !ser->avail[c]) continue;
        /* only a proven leak: profiling adds jemalloc metadata to the measured process
         * (resident, and never given back), so arming it on a clean run's early noise could
         * turn that run's rss or je_resident inconclusive; --stacks arms from the start */
        if (cv->status == RPT_LEAK && ser->y[c][ser->n_measured - 1] > b[c].floor) return true;
    }
    return false;
}

/* Keeps the first lines of the session's attribution for hx_prof_print (no heap memory). */
static void remember_top(struct hx_prof *p, const struct rpt_session *s)
{
    p->n_top = 0;
    p->top_sample = s->alloc_sample;
    for (int i = 0; i < s->n_alloc_stacks && p->n_top < (int)LG_ARRAY_LEN(p->top); i++) {
        const struct rpt_alloc_stack *a = &s->alloc_stacks[i];
        double per = (double)a->bytes / s->alloc_sessions, lo, hi;
        rpt_alloc_interval(a, s->alloc_sample, &lo, &hi);
        char b1[32], b2[32], b3[32], range[80];
        if (s->alloc_sample == 1) /* every allocation recorded */
            snprintf(range, sizeof range, "(exact)");
        else
            snprintf(range, sizeof range, "(95%%: %s-%s)",
                     lg_fmt_bytes(b2, sizeof b2, lo / s->alloc_sessions),
                     lg_fmt_bytes(b3, sizeof b3, hi / s->alloc_sessions));
        const char *nl = strchr(a->frames, '\n');
        int len = nl ? (int)(nl - a->frames) : (int)strlen(a->frames);
        const char *second = nl ? nl + 1 : "";
        const char *nl2 = strchr(second, '\n');
        int len2 = nl2 ? (int)(nl2 - second) : (int)strlen(second);
        snprintf(p->top[p->n_top++], sizeof p->top[0], "%10s/session %-28s %.*s%s%.*s",
                 lg_fmt_bytes(b1, sizeof b1, per), range, len, a->frames, len2 ? "  <-  " : "",
                 len2, second);
    }
}

int hx_prof_session(struct hx_prof *p, const char *dump, struct rpt_session *s)
{
    if (!dump || !dump[0]) return LG_OK;
    if (s->warmup || !p->base[0]) {
        lg_strlcpy(p->base, dump, sizeof p->base);
        p->base_index = s->index;
        return LG_OK;
    }
    struct heap base, cur;
    int rc = heap_load(p->base, &base);
    if (rc != LG_OK) return rc;
    rc = heap_load(dump, &cur);
    if (rc == LG_OK) {
        s->alloc_base = p->base_index;
        /* after a whole-session profile nothing is sampled: the diff is that session's */
        s->alloc_sessions = p->one_session ? 1 : s->index - p->base_index;
        s->alloc_sample = cur.sample;
        rc = diff_into(&base, &cur, s);
        heap_free(&cur);
    }
    heap_free(&base);
    if (rc == LG_OK) remember_top(p, s);
    return rc;
}

void hx_prof_print(const struct hx_prof *p, FILE *f)
{
    if (!p->n_top) return;
    char b1[32];
    if (p->top_sample <= 1)
        fprintf(f, "\nuntagged growth by allocation stack (jemalloc heap profile of one session, "
                   "every allocation):\n");
    else
        fprintf(f,
                "\nuntagged growth by allocation stack (jemalloc heap profile, one sample per "
                "%s):\n",
                lg_fmt_bytes(b1, sizeof b1, (double)p->top_sample));
    for (int i = 0; i < p->n_top; i++) fprintf(f, "  %s\n", p->top[i]);
}

/* ---- `run`: the same attribution in this process ------------------------------------------------
 */

int hx_prof_start(struct hx_prof *p, const struct hx_options *o)
{
    int64_t sample = 0;
    bool available = hx_prof_local_available(&sample);
    char dir[700];
    snprintf(dir, sizeof dir, "%s/heap", o->out_dir);
    int rc = hx_prof_init(p, available, sample, o->stacks, dir);
    if (rc == LG_OK && available && o->stacks && hx_prof_local_activate(true) == LG_OK)
        p->armed = true;
    return rc;
}

int hx_prof_after_session(struct hx_prof *p, const struct rpt_series *ser,
                          const struct rpt_budget *b, struct rpt_session *s)
{
    int rc = LG_OK;
    if (p->armed) {
        char path[800];
        snprintf(path, sizeof path, "%s/session-%d.heap", p->dir, s->index);
        rc = hx_prof_local_dump(path);
        if (rc == LG_OK) rc = hx_prof_session(p, path, s);
    }
    if (p->available && !p->armed && hx_prof_flagged(ser, b) &&
        hx_prof_local_activate(true) == LG_OK)
        p->armed = true;
    return rc;
}

void hx_prof_stop(struct hx_prof *p)
{
    if (p->armed) hx_prof_local_activate(false);
    p->armed = false;
}
