/* progress.c — what a person sees while a run goes: a progress bar on a terminal, one plain
 * line per session otherwise (CI logs), then the verdict table and the artefacts. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hx_impl.h"
#include "kn_blas.h"
#include "reports.h"

static bool tty(const struct hx_options *o) { return !o->quiet && isatty(STDERR_FILENO); }

static const char *b(char *buf, int64_t v)
{
    if (v == RPT_NONE) return "n/a";
    return lg_fmt_bytes(buf, 32, (double)v);
}

void hx_progress_blas(const struct rpt_run *run)
{
    if (!run->blas[0]) return;               /* exec: not the trainer's GEMMs */
    const char *note = kn_blas_info()->note; /* why, when a choice was replaced or kept */
    fprintf(stderr, "leakgate %s: GEMM kernels %s %s (%s)%s%s\n", run->command, run->blas,
            run->blas_core, run->blas_path, note[0] ? ": " : "", note);
    if (kn_blas_info()->warning[0]) /* a generic core on a CPU with AVX2 or AVX-512 */
        fprintf(stderr, "leakgate %s: warning: %s\n", run->command, kn_blas_info()->warning);
}

void hx_progress_begin(const struct hx_options *o, const struct rpt_run *run, int total)
{
    if (o->quiet) return;
    fprintf(
        stderr,
        "leakgate %s: preset %s, modes %s, %d warm-up + %d measured session(s), %d step(s), device %s%s%s\n",
        run->command, run->preset, run->modes, total - run->sessions, run->sessions, run->steps,
        run->device, run->inject[0] ? ", inject " : "", run->inject);
    hx_progress_blas(run);
}

void hx_progress_session(const struct hx_options *o, const struct rpt_session *s, int idx,
                         int total)
{
    if (o->quiet) return;
    char b1[32], b2[32], b3[32];
    int64_t tagged = s->leaked_host_bytes + s->leaked_device_bytes;
    if (tty(o)) {
        int width = 30, filled = (int)((double)(idx + 1) / total * width);
        char bar[64];
        for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
        bar[width] = '\0';
        fprintf(stderr, "\r[%s] %d/%d %-4s%s left %s  allocated %s  rss %s   ", bar, idx + 1, total,
                s->mode, s->warmup ? " (warm-up)" : "", b(b1, tagged),
                b(b2, s->warmup ? s->absolute[RPT_CH_JE_ALLOCATED]
                                : rpt_session_delta(s, RPT_CH_JE_ALLOCATED)),
                b(b3, s->warmup ? s->absolute[RPT_CH_RSS] : rpt_session_delta(s, RPT_CH_RSS)));
        if (tagged || s->error[0] || s->invalid_frees > 0) fputc('\n', stderr);
    } else {
        char loss[48] = ""; /* a program under exec reports no loss */
        if (isfinite(s->train_loss) || isfinite(s->val_loss))
            snprintf(loss, sizeof loss, "  loss %.4f/%.4f", s->train_loss, s->val_loss);
        fprintf(stderr, "session %3d/%d %-4s %-8s %6.2f s%s  left %s  Δallocated %s  Δrss %s\n",
                idx + 1, total, s->mode, s->warmup ? "warm-up" : "measured", s->duration_s, loss,
                b(b1, tagged), b(b2, rpt_session_delta(s, RPT_CH_JE_ALLOCATED)),
                b(b3, rpt_session_delta(s, RPT_CH_RSS)));
    }
    if (s->error[0]) fprintf(stderr, "  error: %s\n", s->error);
    if (s->invalid_frees > 0)
        fprintf(stderr, "  %lld invalid free(s): a double free or a pointer never allocated\n",
                (long long)s->invalid_frees);
    if (tagged || s->n_refs) hx_print_leaks(s, stderr, 5);
}

void hx_progress_end(const struct hx_options *o)
{
    if (tty(o)) fputc('\n', stderr);
}

void hx_print_leaks(const struct rpt_session *s, FILE *f, int max_groups)
{
    char b1[32];
    fprintf(f, "  session %d (%s) left %s alive:\n", s->index, s->mode,
            lg_fmt_bytes(b1, sizeof b1, (double)(s->leaked_host_bytes + s->leaked_device_bytes)));
    for (int i = 0; i < s->n_classes; i++)
        fprintf(f, "    class %-10s %12s  (%lld bytes)\n", s->classes[i].cls,
                lg_fmt_bytes(b1, sizeof b1, (double)s->classes[i].bytes),
                (long long)s->classes[i].bytes);
    for (int i = 0; i < s->n_groups && i < max_groups; i++) {
        const struct lg_leak_group *g = &s->groups[i];
        fprintf(f, "    %12s  %5lld alloc  %-6s %s\n",
                lg_fmt_bytes(b1, sizeof b1, (double)g->bytes), (long long)g->count, g->space,
                g->tag);
        for (int k = 0; k < g->n_stacks && k < 1; k++) {
            const char *p = g->stacks[k].frames;
            for (int line = 0; p && *p && line < 6; line++) {
                const char *nl = strchr(p, '\n');
                int n = nl ? (int)(nl - p) : (int)strlen(p);
                fprintf(f, "          %.*s\n", n, p);
                p = nl ? nl + 1 : p + n;
            }
        }
    }
    if (s->n_groups > max_groups) fprintf(f, "    ... %d more tag(s)\n", s->n_groups - max_groups);
    for (int i = 0; i < s->n_refs; i++) {
        const struct lg_ref_leak *r = &s->refs[i];
        fprintf(f, "    %s '%s' still held (%d reference(s)):\n", r->kind, r->name, r->refs);
        for (int k = 0; k < r->n_retains; k++)
            fprintf(f, "      retained at %s (session generation %u), never released\n",
                    r->retains[k].site, r->retains[k].generation);
    }
}

static const char *fig(char *buf, double v, enum rpt_channel c)
{
    if (!isfinite(v)) return "-";
    if (c == RPT_CH_REFS) {
        snprintf(buf, 32, "%.0f", v);
        return buf;
    }
    return lg_fmt_bytes(buf, 32, v);
}

void hx_print_verdict(const struct hx_options *o, const struct rpt_verdict *v, FILE *f)
{
    char b1[32], b2[32];
    fprintf(f, "\n%-15s %-3s %-13s %12s %12s  %s\n", "channel", "req", "verdict", "figure",
            "budget", "why");
    for (int i = 0; i < v->n_channels; i++) {
        const struct rpt_channel_verdict *c = &v->channels[i];
        fprintf(f, "%-15s %-3s %-13s %12s %12s  %s\n", rpt_channel_name(c->channel),
                c->required ? "yes" : "-", rpt_status_name(c->status),
                fig(b1, c->figure, c->channel), fig(b2, c->budget, c->channel), c->why);
    }
    fprintf(f, "\n%s\n", v->summary);
    (void)o;
}

int hx_write_reports(const struct hx_options *o, const char *results_path)
{
    struct rpt_results *r = NULL;
    int rc = rpt_results_load(&r, results_path);
    if (rc == LG_OK) rc = rpt_write_all(r, o->out_dir, RPT_ALL);
    /* what went to stdout first (the verdict, exec's notes) is out before this line: redirected
     * to one file (2>&1, a CI log), stdout is fully buffered and the line landed inside them */
    fflush(stdout);
    if (rc != LG_OK)
        fprintf(stderr, "leakgate: reports: %s\n", lg_errmsg());
    else if (!o->quiet)
        fprintf(
            stderr,
            "leakgate: results and reports in %s/ (report.html, summary.md, junit.xml, *.png)\n",
            o->out_dir);
    rpt_results_free(r);
    return rc;
}
