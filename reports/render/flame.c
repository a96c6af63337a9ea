/* flame.c — untagged growth by allocation stack as folded stacks and as a flame graph.
 *
 * The data is the run's attribution (rpt_alloc_latest): per allocation stack, the live bytes
 * gained per session. Folded stacks are the text format of flamegraph.pl, speedscope and
 * inferno: one line per stack, frames root first separated by ';', then a space and the value.
 * The SVG is drawn here, root at the bottom, a box's width its share of the growth, every box
 * titled with its function, bytes per session and share; it needs no script and no network.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render_impl.h"
#include "rpt_stacks.h"

#define FLAME_W   1200.0 /* px */
#define ROW_H     17.0
#define MAX_DEPTH 64
#define CHAR_W    6.6 /* px per character at 11px */

/* The functions of a stack, root first, in labels[0..n) (pointers into buf). */
static int stack_labels(const char *frames, char (*labels)[160], int max)
{
    const char *lines[MAX_DEPTH];
    size_t lens[MAX_DEPTH];
    int n = 0;
    for (const char *p = frames; p && *p && n < MAX_DEPTH;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lines[n] = p;
        lens[n++] = len;
        p = nl ? nl + 1 : p + len;
    }
    int k = 0;
    for (int i = n - 1; i >= 0 && k < max; i--) {
        rpt_frame_function(lines[i], lens[i], labels[k], sizeof labels[0]);
        for (char *c = labels[k]; *c; c++)
            if (*c == ';') *c = ':';
        if (labels[k][0]) k++;
    }
    return k;
}

int rpt_write_folded(const struct rpt_results *r, FILE *f)
{
    const struct rpt_session *s = rpt_alloc_latest(r);
    if (!s || !s->n_alloc_stacks)
        return lg_fail(LG_EUNAVAIL, "no heap profile diff in these results");
    static char labels[MAX_DEPTH][160];
    for (int i = 0; i < s->n_alloc_stacks; i++) {
        const struct rpt_alloc_stack *a = &s->alloc_stacks[i];
        int n = stack_labels(a->frames, labels, MAX_DEPTH);
        for (int k = 0; k < n; k++) fprintf(f, "%s%s", k ? ";" : "", labels[k]);
        fprintf(f, "%s%lld\n", n ? " " : "? ",
                (long long)llround((double)a->bytes / s->alloc_sessions));
    }
    return ferror(f) ? lg_fail(LG_EIO, "writing folded stacks failed") : LG_OK;
}

/* ---- the flame graph ----------------------------------------------------------------------- */

struct node {
    char name[160];
    double value;
    int first_child, next; /* indices into the node pool; -1 none */
};

struct tree {
    struct node *v;
    int n, cap;
};

static int child_of(struct tree *t, int parent, const char *name)
{
    for (int c = t->v[parent].first_child; c >= 0; c = t->v[c].next)
        if (!strcmp(t->v[c].name, name)) return c;
    if (!LG_RESERVE(t->v, t->cap, t->n, 64)) return -1;
    int c = t->n++;
    struct node *nd = &t->v[c];
    lg_strlcpy(nd->name, name, sizeof nd->name);
    nd->value = 0;
    nd->first_child = -1;
    nd->next = t->v[parent].first_child; /* prepended; drawn in name order below */
    t->v[parent].first_child = c;
    return c;
}

/* flamegraph.pl's "hot" palette, from a hash of the name (the same function, the same colour). */
static void colour(const char *name, int *r, int *g, int *b)
{
    uint32_t h = 2166136261u;
    for (const char *c = name; *c; c++) h = (h ^ (unsigned char)*c) * 16777619u;
    *r = 205 + (int)(h % 50);
    *g = (int)((h >> 8) % 230);
    *b = (int)((h >> 16) % 55);
}

static int cmp_name(const void *a, const void *b)
{
    const struct node *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static void draw(FILE *f, struct tree *t, int id, double x, int depth, int max_depth, double scale,
                 double total)
{
    const struct node *nd = &t->v[id];
    double w = nd->value * scale, y = (max_depth - depth) * ROW_H + 4;
    if (w < 0.3) return;
    int r, g, b;
    colour(nd->name, &r, &g, &b);
    char b1[32];
    fputs("<g><title>", f);
    rpt_put_xml(f, nd->name);
    fprintf(f, " — %s/session (%.1f%%)</title>", lg_fmt_bytes(b1, sizeof b1, nd->value),
            100.0 * nd->value / total);
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"2\" "
            "fill=\"rgb(%d,%d,%d)\"/>",
            x, y, w, ROW_H - 1, r, g, b);
    int fit = (int)((w - 6) / CHAR_W);
    if (fit >= 3) {
        char label[160];
        size_t len = strlen(nd->name);
        if ((int)len > fit)
            snprintf(label, sizeof label, "%.*s..", fit - 2, nd->name);
        else
            lg_strlcpy(label, nd->name, sizeof label);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + ROW_H - 5);
        rpt_put_xml(f, label);
        fputs("</text>", f);
    }
    fputs("</g>\n", f);
    /* children in name order, left to right */
    const struct node *kids[256];
    int nk = 0;
    for (int c = nd->first_child; c >= 0 && nk < 256; c = t->v[c].next) kids[nk++] = &t->v[c];
    qsort(kids, (size_t)nk, sizeof *kids, cmp_name);
    for (int k = 0; k < nk; k++) {
        draw(f, t, (int)(kids[k] - t->v), x, depth + 1, max_depth, scale, total);
        x += kids[k]->value * scale;
    }
}

/* The SVG; `standalone` adds the namespace a file needs (HTML knows SVG without it, and there
 * the graph shrinks to the page's width). */
static int flame(const struct rpt_results *r, FILE *f, bool standalone)
{
    const struct rpt_session *s = rpt_alloc_latest(r);
    if (!s || !s->n_alloc_stacks)
        return lg_fail(LG_EUNAVAIL, "no heap profile diff in these results");
    struct tree t = {calloc(64, sizeof(struct node)), 1, 64};
    if (!t.v) return lg_fail(LG_ENOMEM, "out of memory drawing the flame graph");
    lg_strlcpy(t.v[0].name, "all", sizeof t.v[0].name);
    t.v[0].first_child = t.v[0].next = -1;
    static char labels[MAX_DEPTH][160];
    int max_depth = 0, rc = LG_OK;
    for (int i = 0; i < s->n_alloc_stacks && rc == LG_OK; i++) {
        double per = (double)s->alloc_stacks[i].bytes / s->alloc_sessions;
        int n = stack_labels(s->alloc_stacks[i].frames, labels, MAX_DEPTH), at = 0;
        t.v[0].value += per;
        for (int k = 0; k < n; k++) {
            at = child_of(&t, at, labels[k]);
            if (at < 0) {
                rc = lg_fail(LG_ENOMEM, "out of memory drawing the flame graph");
                break;
            }
            t.v[at].value += per;
        }
        if (n > max_depth) max_depth = n;
    }
    if (rc == LG_OK && t.v[0].value > 0) {
        double height = (max_depth + 1) * ROW_H + 8;
        char b1[32];
        fprintf(f,
                "<svg class=\"flame\"%s width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "role=\"img\" aria-label=\"flame graph of untagged growth: %s per session\" "
                "font-family=\"DejaVu Sans Mono,monospace\" font-size=\"11\">\n",
                standalone ? " xmlns=\"http://www.w3.org/2000/svg\""
                           : " style=\"max-width:100%;height:auto\"",
                FLAME_W, height, FLAME_W, height, lg_fmt_bytes(b1, sizeof b1, t.v[0].value));
        draw(f, &t, 0, 0, 0, max_depth, FLAME_W / t.v[0].value, t.v[0].value);
        fputs("</svg>\n", f);
        if (ferror(f)) rc = lg_fail(LG_EIO, "writing the flame graph failed");
    } else if (rc == LG_OK) {
        rc = lg_fail(LG_EUNAVAIL, "no growth to draw");
    }
    free(t.v);
    return rc;
}

int rpt_write_flame_svg(const struct rpt_results *r, FILE *f) { return flame(r, f, true); }
int rpt_write_flame_inline(const struct rpt_results *r, FILE *f) { return flame(r, f, false); }
