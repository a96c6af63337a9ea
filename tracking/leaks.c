/* leaks.c — session generations and the report of what a generation left alive.
 *
 * trk_session_end is the tracker's close: like libuv's uv_loop_close it refuses (LG_EBUSY)
 * while children born in the generation are alive, and lists them — grouped by tag, largest
 * first, with counts, bytes and, when stacks are on, where they were allocated.
 */
#include <stdlib.h>
#include <string.h>

#include "trk_impl.h"

uint32_t trk_session_begin(struct trk_tracker *trk)
{
    /* Generations are numbered by a counter that never reuses a number. */
    uint32_t g = atomic_fetch_add(&trk->gen_counter, 1) + 1;
    atomic_store(&trk->gen, g);
    pthread_mutex_lock(&trk->errs.mu);
    trk->errs.gen_count_base = (uint32_t)trk->errs.count;
    pthread_mutex_unlock(&trk->errs.mu);
    return g;
}

struct group_acc {
    int64_t bytes, count, usable;
    uint32_t stacks[LG_MAX_GROUP_STACKS];
    int64_t stack_counts[LG_MAX_GROUP_STACKS];
    int n_stacks;
};

static int cmp_group(const void *a, const void *b)
{
    const struct lg_leak_group *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->tag, y->tag);
}

int trk_leaks_of(struct trk_tracker *trk, uint32_t gen, struct trk_leaks **out)
{
    *out = NULL;
    struct trk_leaks *lk = calloc(1, sizeof *lk);
    uint32_t ntags = atomic_load(&trk->tags.count);
    struct group_acc *acc = calloc((size_t)ntags * TRK_NSPACES + 1, sizeof *acc);
    int rc = LG_OK;
    if (!lk || !acc) {
        rc = lg_fail(LG_ENOMEM, "tracker: out of memory building a leak report");
        goto fail;
    }
    lk->generation = gen;

    {
        struct trk_ledger *sh = &trk->led;
        trk_spin_lock(&sh->lock);
        for (size_t i = 0; i < sh->cap; i++) {
            struct trk_rec *r = &sh->recs[i];
            if (r->ptr == TRK_EMPTY || r->gen != gen) continue;
            if (r->tag >= ntags) continue; /* a tag interned after we counted; next report */
            struct group_acc *g = &acc[(size_t)r->tag * TRK_NSPACES + r->space];
            g->bytes += (int64_t)r->size;
            g->count++;
            g->usable +=
                r->space == TRK_HOST ? (int64_t)trk_usable_size(r->size) : (int64_t)r->size;
            if (r->space == TRK_HOST) {
                lk->host_bytes += (int64_t)r->size;
                lk->host_count++;
            } else {
                lk->device_bytes += (int64_t)r->size;
                lk->device_count++;
            }
            if (!r->stack) continue;
            int k;
            for (k = 0; k < g->n_stacks && g->stacks[k] != r->stack; k++) {
            }
            if (k < g->n_stacks)
                g->stack_counts[k]++;
            else if (g->n_stacks < LG_MAX_GROUP_STACKS) {
                g->stacks[g->n_stacks] = r->stack;
                g->stack_counts[g->n_stacks++] = 1;
            }
        }
        trk_spin_unlock(&sh->lock);
    }

    size_t ng = 0;
    for (size_t i = 0; i < (size_t)ntags * TRK_NSPACES; i++) ng += acc[i].count > 0;
    lk->groups = calloc(ng ? ng : 1, sizeof *lk->groups);
    if (!lk->groups) {
        rc = lg_fail(LG_ENOMEM, "tracker: out of memory building a leak report");
        goto fail;
    }
    for (size_t i = 0; i < (size_t)ntags * TRK_NSPACES; i++) {
        struct group_acc *a = &acc[i];
        if (!a->count) continue;
        struct lg_leak_group *g = &lk->groups[lk->n_groups++];
        lg_strlcpy(g->tag, trk_tag_get(trk, (uint32_t)(i / TRK_NSPACES))->name, sizeof g->tag);
        lg_strlcpy(g->space, i % TRK_NSPACES == TRK_DEVICE ? "device" : "host", sizeof g->space);
        g->generation = gen;
        g->bytes = a->bytes;
        g->count = a->count;
        g->usable = a->usable;
        if (a->n_stacks) {
            g->stacks = calloc((size_t)a->n_stacks, sizeof *g->stacks);
            if (!g->stacks) {
                rc = lg_fail(LG_ENOMEM, "tracker: out of memory building a leak report");
                goto fail;
            }
            g->n_stacks = a->n_stacks;
            for (int k = 0; k < a->n_stacks; k++) {
                g->stacks[k].frames = trk_stack_text(trk, a->stacks[k]);
                g->stacks[k].count = a->stack_counts[k];
            }
        }
    }
    qsort(lk->groups, lk->n_groups, sizeof *lk->groups, cmp_group);
    rc = trk_refs_report(trk, gen, lk);
    if (rc != LG_OK) {
        lg_fail(rc, "tracker: out of memory building a reference report");
        goto fail;
    }
    pthread_mutex_lock(&trk->errs.mu);
    if (gen == atomic_load(&trk->gen))
        lk->n_invalid_frees = trk->errs.count - trk->errs.gen_count_base;
    pthread_mutex_unlock(&trk->errs.mu);
    free(acc);
    *out = lk;
    return LG_OK;
fail:
    free(acc);
    trk_leaks_free(lk);
    return rc;
}

int trk_session_end(struct trk_tracker *trk, struct trk_leaks **out)
{
    struct trk_leaks *lk = NULL;
    uint32_t gen = atomic_load(&trk->gen);
    if (out) *out = NULL;
    if (gen == 0) return lg_fail(LG_EINVAL, "tracker: session end without a session begun");
    int rc = trk_leaks_of(trk, gen, &lk);
    atomic_store(&trk->gen, 0);
    if (rc != LG_OK) return rc;
    int busy = lk->n_groups > 0 || lk->n_refs > 0;
    if (out)
        *out = lk;
    else
        trk_leaks_free(lk);
    return busy ? LG_EBUSY : LG_OK;
}

void trk_leaks_free(struct trk_leaks *lk)
{
    if (!lk) return;
    lg_leak_groups_free(lk->groups, (int)lk->n_groups);
    lg_ref_leaks_free(lk->refs, (int)lk->n_refs);
    free(lk);
}

static void print_indented(FILE *f, const char *text, const char *indent)
{
    while (text && *text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        fprintf(f, "%s%.*s\n", indent, (int)n, text);
        text = nl ? nl + 1 : text + n;
    }
}

void trk_leaks_print(const struct trk_leaks *lk, FILE *f, int max_groups)
{
    char b1[32], b2[32];
    if (!lk) return;
    fprintf(f, "generation %u: %s host in %lld allocation(s), %s device in %lld\n", lk->generation,
            lg_fmt_bytes(b1, sizeof b1, (double)lk->host_bytes), (long long)lk->host_count,
            lg_fmt_bytes(b2, sizeof b2, (double)lk->device_bytes), (long long)lk->device_count);
    size_t shown = max_groups > 0 ? LG_MIN(lk->n_groups, (size_t)max_groups) : lk->n_groups;
    for (size_t i = 0; i < shown; i++) {
        const struct lg_leak_group *g = &lk->groups[i];
        fprintf(f, "  %12s  %6lld alloc  %-6s %s\n", lg_fmt_bytes(b1, sizeof b1, (double)g->bytes),
                (long long)g->count, g->space, g->tag);
        for (int k = 0; k < g->n_stacks; k++) {
            fprintf(f, "      allocated %lld time(s) at:\n", (long long)g->stacks[k].count);
            print_indented(f, g->stacks[k].frames, "        ");
        }
    }
    if (shown < lk->n_groups) {
        int64_t rest = 0;
        for (size_t i = shown; i < lk->n_groups; i++) rest += lk->groups[i].bytes;
        fprintf(f, "  ... and %zu more tag(s), %s\n", lk->n_groups - shown,
                lg_fmt_bytes(b1, sizeof b1, (double)rest));
    }
    for (size_t i = 0; i < lk->n_refs; i++) {
        const struct lg_ref_leak *r = &lk->refs[i];
        fprintf(f, "  %s %s (%p) still alive with %d reference(s):\n", r->kind, r->name, r->object,
                r->refs);
        for (int j = 0; j < r->n_retains; j++) {
            fprintf(f, "    retained by holder %p at %s (generation %u), never released\n",
                    r->retains[j].holder, r->retains[j].site, r->retains[j].generation);
            print_indented(f, r->retains[j].stack, "        ");
        }
    }
}
