/* refs.c — the reference ledger: who retained a shared object, where, and who never let go.
 *
 * Each tracked object keeps its outstanding retains (holder, site, generation, stack). A
 * release by a holder removes that holder's most recent retain. An object alive at the end of
 * a session is reported with the retains still outstanding — the line that says *who holds
 * it*: "varmap 'tiny' retained at tr_new (trainer.c:55), never released". The idea is Firefox's
 * refcount balancer, made exact by naming the holder at both ends.
 *
 * Objects are few (VarMaps, models, optimizers), so a linear table is enough.
 */
#include <stdlib.h>
#include <string.h>

#include "trk_impl.h"

int trk_refs_init(struct trk_tracker *trk)
{
    pthread_mutex_init(&trk->refs.mu, NULL);
    return LG_OK;
}

void trk_refs_fini(struct trk_tracker *trk)
{
    for (size_t i = 0; i < trk->refs.n; i++) trk_meta_free(trk, trk->refs.v[i].retains);
    trk_meta_free(trk, trk->refs.v);
    pthread_mutex_destroy(&trk->refs.mu);
}

static struct trk_refobj *find_locked(struct trk_tracker *trk, const void *obj)
{
    for (size_t i = 0; i < trk->refs.n; i++)
        if (trk->refs.v[i].obj == obj) return &trk->refs.v[i];
    return NULL;
}

static void site_str(struct trk_site s, char *buf, size_t size)
{
    const char *base = s.file ? strrchr(s.file, '/') : NULL;
    base = base ? base + 1 : (s.file ? s.file : "?");
    snprintf(buf, size, "%s (%s:%d)", s.func ? s.func : "?", base, s.line);
}

static int add_retain_locked(struct trk_tracker *trk, struct trk_refobj *o, const void *holder,
                             struct trk_site site, uint32_t stack)
{
    if (o->n == o->cap) {
        int ncap = o->cap ? o->cap * 2 : 4;
        struct trk_retain *nv = trk_meta_realloc(trk, o->retains, (size_t)ncap * sizeof *nv);
        if (!nv) return LG_ENOMEM;
        o->retains = nv;
        o->cap = ncap;
    }
    o->retains[o->n++] = (struct trk_retain){holder, site, atomic_load(&trk->gen), stack};
    return LG_OK;
}

TRK_ENTRY void trk_ref_track(struct trk_tracker *trk, const void *obj, const char *kind,
                             const char *name, const void *holder, struct trk_site site)
{
    uint32_t stack = trk->opt.stacks ? trk_stack_capture(trk) : 0;
    pthread_mutex_lock(&trk->refs.mu);
    struct trk_refobj *o = find_locked(trk, obj);
    if (o) {
        char where[160];
        site_str(site, where, sizeof where);
        pthread_mutex_unlock(&trk->refs.mu);
        trk_record_error(trk, stack, "object %p (%s %s) tracked twice, at %s", obj, kind, name,
                         where);
        return;
    }
    if (trk->refs.n == trk->refs.cap) {
        size_t ncap = trk->refs.cap ? trk->refs.cap * 2 : 16;
        struct trk_refobj *nv = trk_meta_realloc(trk, trk->refs.v, ncap * sizeof *nv);
        if (!nv) goto out;
        trk->refs.v = nv;
        trk->refs.cap = ncap;
    }
    o = &trk->refs.v[trk->refs.n++];
    memset(o, 0, sizeof *o);
    o->obj = obj;
    lg_strlcpy(o->kind, kind ? kind : "object", sizeof o->kind);
    lg_strlcpy(o->name, name ? name : "", sizeof o->name);
    o->gen = atomic_load(&trk->gen);
    add_retain_locked(trk, o, holder, site, stack);
out:
    pthread_mutex_unlock(&trk->refs.mu);
}

TRK_ENTRY void trk_ref_retain(struct trk_tracker *trk, const void *obj, const void *holder,
                              struct trk_site site)
{
    uint32_t stack = trk->opt.stacks ? trk_stack_capture(trk) : 0;
    pthread_mutex_lock(&trk->refs.mu);
    struct trk_refobj *o = find_locked(trk, obj);
    if (o) add_retain_locked(trk, o, holder, site, stack);
    pthread_mutex_unlock(&trk->refs.mu);
    if (!o) {
        char where[160];
        site_str(site, where, sizeof where);
        trk_record_error(trk, stack, "retain of untracked object %p at %s", obj, where);
    }
}

TRK_ENTRY void trk_ref_release(struct trk_tracker *trk, const void *obj, const void *holder,
                               struct trk_site site)
{
    pthread_mutex_lock(&trk->refs.mu);
    struct trk_refobj *o = find_locked(trk, obj);
    int found = 0;
    if (o) {
        for (int i = o->n - 1; i >= 0; i--) {
            if (o->retains[i].holder != holder) continue;
            memmove(&o->retains[i], &o->retains[i + 1],
                    (size_t)(o->n - i - 1) * sizeof *o->retains);
            o->n--;
            found = 1;
            break;
        }
    }
    char name[LG_MAX_NAME + 40] = "";
    if (o) snprintf(name, sizeof name, "%s %s", o->kind, o->name);
    pthread_mutex_unlock(&trk->refs.mu);
    if (!found) {
        char where[160];
        site_str(site, where, sizeof where);
        trk_record_error(trk, trk_stack_capture(trk),
                         o ? "release of %p (%s) by holder %p that holds no reference, at %s"
                           : "release of untracked object %p%s by holder %p, at %s",
                         obj, name, holder, where);
    }
}

TRK_ENTRY void trk_ref_untrack(struct trk_tracker *trk, const void *obj, struct trk_site site)
{
    pthread_mutex_lock(&trk->refs.mu);
    struct trk_refobj *o = find_locked(trk, obj);
    int outstanding = 0;
    char name[LG_MAX_NAME + 40] = "";
    if (o) {
        outstanding = o->n;
        snprintf(name, sizeof name, "%s %s", o->kind, o->name);
        trk_meta_free(trk, o->retains);
        *o = trk->refs.v[--trk->refs.n];
    }
    pthread_mutex_unlock(&trk->refs.mu);
    if (o && outstanding > 0) {
        char where[160];
        site_str(site, where, sizeof where);
        trk_record_error(trk, trk_stack_capture(trk),
                         "%s destroyed at %s while %d reference(s) were outstanding", name, where,
                         outstanding);
    }
}

/* Adds to lk the objects that a generation left holding: born in it and still tracked, or
 * holding a retain taken in it (gen 0 is not a session: every live object is listed). */
int trk_refs_report(struct trk_tracker *trk, uint32_t gen, struct trk_leaks *lk)
{
    int rc = LG_OK;
    pthread_mutex_lock(&trk->refs.mu);
    size_t n = 0;
    for (size_t i = 0; i < trk->refs.n; i++) {
        struct trk_refobj *o = &trk->refs.v[i];
        int hit = o->gen == gen;
        for (int j = 0; j < o->n && !hit; j++) hit = o->retains[j].gen == gen;
        if (hit) n++;
    }
    if (n) {
        lk->refs = calloc(n, sizeof *lk->refs);
        if (!lk->refs) {
            rc = LG_ENOMEM;
            goto out;
        }
    }
    for (size_t i = 0; i < trk->refs.n && lk->n_refs < n; i++) {
        struct trk_refobj *o = &trk->refs.v[i];
        int hit = o->gen == gen;
        for (int j = 0; j < o->n && !hit; j++) hit = o->retains[j].gen == gen;
        if (!hit) continue;
        struct lg_ref_leak *r = &lk->refs[lk->n_refs++];
        lg_strlcpy(r->kind, o->kind, sizeof r->kind);
        lg_strlcpy(r->name, o->name, sizeof r->name);
        r->object = o->obj;
        r->generation = o->gen;
        r->refs = o->n;
        r->retains = calloc(o->n ? (size_t)o->n : 1, sizeof *r->retains);
        if (!r->retains) {
            rc = LG_ENOMEM;
            goto out;
        }
        r->n_retains = o->n;
        for (int j = 0; j < o->n; j++) {
            r->retains[j].holder = o->retains[j].holder;
            site_str(o->retains[j].site, r->retains[j].site, sizeof r->retains[j].site);
            r->retains[j].generation = o->retains[j].gen;
            /* stack text is made after the lock is dropped (it may run addr2line) */
            r->retains[j].stack = (char *)(uintptr_t)o->retains[j].stack;
        }
    }
out:
    pthread_mutex_unlock(&trk->refs.mu);
    for (size_t i = 0; i < lk->n_refs; i++)
        for (int j = 0; j < lk->refs[i].n_retains; j++) {
            uint32_t id = (uint32_t)(uintptr_t)lk->refs[i].retains[j].stack;
            lk->refs[i].retains[j].stack = id ? trk_stack_text(trk, id) : NULL;
        }
    return rc;
}
