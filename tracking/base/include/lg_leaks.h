/* lg_leaks.h — the one description of what a session left behind: the tracker finds it
 * (trk_leaks, tracking.h), a session's result records it (rpt_session,
 * reports/results/include/results.h), exec's agent sends it over its wire, and every report prints
 * it. One set of structs and size constants, so a report is handed on, never copied field by field.
 *
 * Worked example (the harness hands a tracker's report to a session's result):
 *
 *   struct trk_leaks *lk = NULL;
 *   trk_session_end(trk, &lk);
 *   s->groups = lk->groups;  s->n_groups = (int)lk->n_groups;     // the session takes them
 *   lk->groups = NULL;  lk->n_groups = 0;
 *   lg_leak_classes(s->groups, s->n_groups, &s->classes, &s->n_classes);  // "varmap": 3.16 MiB
 *   trk_leaks_free(lk);                      // what it still owns
 *   ...
 *   lg_leak_groups_free(s->groups, s->n_groups);
 *
 * Memory: every array and string here is ordinary heap memory (calloc, malloc), freed with the
 * functions below.
 */
#ifndef LG_LEAKS_H
#define LG_LEAKS_H

#include <stddef.h>
#include <stdint.h>

#include "lg_base.h"

#define LG_MAX_SITE         160 /* a retain site: "tr_new (trainer.c:55)" */
#define LG_MAX_KIND         32  /* a tracked object's kind: "varmap" */
#define LG_MAX_CLASS        32  /* a tag's class: "adam.m" */
#define LG_MAX_SPACE        8   /* "host" or "device" */
#define LG_MAX_GROUP_STACKS 3

/* A call stack and how many allocations it made. */
struct lg_stack {
    int64_t count;
    char *frames; /* symbolised, one frame a line, innermost first */
};

/* Allocations of one tag in one space that outlived their session. */
struct lg_leak_group {
    char tag[LG_MAX_NAME];    /* "varmap/enc_lstm.w_ih" */
    char space[LG_MAX_SPACE]; /* "host" or "device" */
    uint32_t generation;      /* the session they were born in */
    int64_t bytes, count;
    int64_t usable; /* what the allocator counts for them (host: jemalloc's size classes); 0 when
                       not known (a group read from a results file or sent by exec's agent) */
    int n_stacks;   /* distinct allocation stacks (at most LG_MAX_GROUP_STACKS) */
    struct lg_stack *stacks; /* NULL when stacks were off */
};

/* A retain on a shared object that was never released. */
struct lg_retain {
    const void *holder;     /* in the process that took it; NULL once recorded */
    char site[LG_MAX_SITE]; /* "func (file:line)" */
    uint32_t generation;
    char *stack; /* symbolised, or NULL when stacks are off */
};

/* A shared object still alive at a session's end, with its outstanding retains. */
struct lg_ref_leak {
    char kind[LG_MAX_KIND]; /* "varmap" */
    char name[LG_MAX_NAME]; /* "tiny" */
    const void *object;     /* in the process that tracked it; NULL once recorded */
    uint32_t generation;    /* when the object was created */
    int refs;               /* outstanding retains */
    int n_retains;
    struct lg_retain *retains;
};

/* Leaked bytes of one tag class. */
struct lg_class_bytes {
    char cls[LG_MAX_CLASS];
    int64_t bytes;
};

/* The class of a tag, the part before its first '/' ("varmap" for "varmap/out.weight"), into
 * buf. The one place a class is computed. */
void lg_tag_class(const char *tag, char *buf, size_t size);
/* Leaked bytes per class of n groups, largest first, into *out (freed with free(); NULL when
 * n is 0). LG_ENOMEM with a message on failure. */
int lg_leak_classes(const struct lg_leak_group *g, int n, struct lg_class_bytes **out, int *n_out);
/* Free n groups (their stacks) and the array; NULL does nothing. */
void lg_leak_groups_free(struct lg_leak_group *g, int n);
/* Free n objects (their retains' stacks) and the array; NULL does nothing. */
void lg_ref_leaks_free(struct lg_ref_leak *r, int n);

#endif
