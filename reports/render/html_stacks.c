/* html_stacks.c — the HTML report's "Untagged growth by allocation stack": what the heap
 * profiles attribute the untagged growth to, with the flame graph drawn inline. */
#include <math.h>
#include <string.h>

#include "render_impl.h"
#include "rpt_stacks.h"

#define MAX_ROWS 16

void rpt_html_alloc_stacks(const struct rpt_results *r, FILE *f)
{
    const struct rpt_session *s = rpt_alloc_latest(r);
    if (!s) return;
    char b1[32], b2[32], b3[32];
    int64_t R = s->alloc_sample > 0 ? s->alloc_sample : r->run.prof_sample;
    fputs("<section id=\"alloc-stacks\">\n<h2>Untagged growth by allocation stack</h2>\n<p>", f);
    if (R == 1)
        fprintf(f,
                "Live bytes each allocation stack kept of session %d, profiled whole (every "
                "allocation recorded: exact), still alive at the end of session %d. Folded "
                "stacks: <code>stacks.folded</code>.</p>\n",
                s->alloc_base + 1, s->index);
    else
        fprintf(f,
                "Live bytes gained per session by each allocation stack between the heap profiles "
                "of session %d and session %d (jemalloc samples one allocation per %s on average; "
                "the interval is 95%%, from the sampled objects). Folded stacks: "
                "<code>stacks.folded</code>.</p>\n",
                s->alloc_base, s->index, R > 0 ? lg_fmt_bytes(b1, sizeof b1, (double)R) : "?");
    if (!s->n_alloc_stacks) {
        fputs("<p>No stack grew.</p>\n</section>\n", f);
        return;
    }
    fputs("<table>\n<tr><th>bytes/session</th><th>95% "
          "interval</th><th>objects/session</th><th>samples</th>"
          "<th>allocated at</th></tr>\n",
          f);
    for (int i = 0; i < s->n_alloc_stacks && i < MAX_ROWS; i++) {
        const struct rpt_alloc_stack *a = &s->alloc_stacks[i];
        double per = (double)a->bytes / s->alloc_sessions;
        double lo, hi;
        rpt_alloc_interval(a, R, &lo, &hi);
        char b4[32];
        const char *nl = strchr(a->frames, '\n');
        char top[600];
        size_t len = nl ? (size_t)(nl - a->frames) : strlen(a->frames);
        if (len >= sizeof top) len = sizeof top - 1;
        memcpy(top, a->frames, len);
        top[len] = '\0';
        fprintf(
            f,
            "<tr><td class=\"num\">%s</td><td class=\"num\">%s – %s</td><td class=\"num\">%.1f</td>"
            "<td class=\"num\">%lld</td><td><details><summary><code>",
            lg_fmt_bytes(b2, sizeof b2, per), lg_fmt_bytes(b3, sizeof b3, lo / s->alloc_sessions),
            lg_fmt_bytes(b4, sizeof b4, hi / s->alloc_sessions),
            (double)a->objects / s->alloc_sessions, (long long)a->samples);
        rpt_put_xml(f, top);
        fputs("</code></summary><pre>", f);
        rpt_put_xml(f, a->frames);
        fputs("</pre></details></td></tr>\n", f);
    }
    fputs("</table>\n<figure id=\"fig-flame\">\n<figcaption>Flame graph of the untagged growth "
          "(width: bytes per session; hover for figures)</figcaption>\n"
          "<div style=\"overflow-x:auto\">\n",
          f);
    rpt_write_flame_inline(r, f);
    fputs("</div>\n</figure>\n</section>\n", f);
}
