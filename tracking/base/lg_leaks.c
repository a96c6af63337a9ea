/* lg_leaks.c — classes of leaked tags and the freeing of a leak report (lg_leaks.h). */
#include "lg_leaks.h"

#include <stdlib.h>
#include <string.h>

void lg_tag_class(const char *tag, char *buf, size_t size)
{
    const char *slash = strchr(tag, '/');
    size_t n = slash ? (size_t)(slash - tag) : strlen(tag);
    if (size == 0) return;
    if (n >= size) n = size - 1;
    memcpy(buf, tag, n);
    buf[n] = '\0';
}

static int cmp_class(const void *a, const void *b)
{
    const struct lg_class_bytes *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->cls, y->cls);
}

int lg_leak_classes(const struct lg_leak_group *g, int n, struct lg_class_bytes **out, int *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (n <= 0) return LG_OK;
    struct lg_class_bytes *c = calloc((size_t)n, sizeof *c);
    if (!c) return lg_fail(LG_ENOMEM, "out of memory summing a leak report's classes");
    int nc = 0;
    for (int i = 0; i < n; i++) {
        char cls[LG_MAX_CLASS];
        lg_tag_class(g[i].tag, cls, sizeof cls);
        int k = 0;
        while (k < nc && strcmp(c[k].cls, cls) != 0) k++;
        if (k == nc) lg_strlcpy(c[nc++].cls, cls, sizeof c[0].cls);
        c[k].bytes += g[i].bytes;
    }
    qsort(c, (size_t)nc, sizeof *c, cmp_class);
    *out = c;
    *n_out = nc;
    return LG_OK;
}

void lg_leak_groups_free(struct lg_leak_group *g, int n)
{
    if (!g) return;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < g[i].n_stacks; k++) free(g[i].stacks[k].frames);
        free(g[i].stacks);
    }
    free(g);
}

void lg_ref_leaks_free(struct lg_ref_leak *r, int n)
{
    if (!r) return;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < r[i].n_retains; k++) free(r[i].retains[k].stack);
        free(r[i].retains);
    }
    free(r);
}
