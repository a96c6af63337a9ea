/* write_all.c — every artefact of a run into one directory. Plots come first so the HTML can
 * embed their SVGs; when a plot cannot be made (gnuplot missing, a full disk) the documents
 * are still written, and the failure is returned. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "plot.h"
#include "render_impl.h"
#include "rpt_stacks.h"

/* Every name rpt_write_all may write besides the figures' <name>.png and <name>.svg. */
static const char *const documents[] = {"junit.xml",     "summary.md", "sessions.csv",
                                        "stacks.folded", "flame.svg",  "report.html"};

bool rpt_is_artefact_name(const char *name)
{
    if (!strcmp(name, "results.jsonl")) return true;
    for (size_t k = 0; k < LG_ARRAY_LEN(documents); k++)
        if (!strcmp(name, documents[k])) return true;
    for (int f = 0; f < RPT_NFIGURES; f++) {
        size_t l = strlen(rpt_figure_name(f));
        if (!strncmp(name, rpt_figure_name(f), l) &&
            (!strcmp(name + l, ".png") || !strcmp(name + l, ".svg")))
            return true;
    }
    return false;
}

/* Whether name is a report artefact (results.jsonl is replaced, never removed). */
static bool is_report(const char *name)
{
    return strcmp(name, "results.jsonl") != 0 && rpt_is_artefact_name(name);
}

int rpt_clear_artefacts(const char *dir) { return lg_out_manifest_clear(dir, is_report); }

static int write_doc(const struct rpt_results *r, const char *dir, const char *name,
                     int (*write)(const struct rpt_results *, FILE *))
{
    char path[4200];
    FILE *f = NULL;
    int rc = rpt_open_out(&f, dir, name, path, sizeof path);
    if (rc != LG_OK) return rc;
    rc = write(r, f);
    int crc = rpt_close_out(f, path);
    if (rc == LG_OK) rc = crc;
    if (rc == LG_OK) rc = lg_out_manifest_add(dir, name); /* a later run may remove it */
    if (rc != LG_OK) lg_fail_ctx(rc, "%s: ", path);
    return rc;
}

int rpt_write_all(const struct rpt_results *r, const char *dir, unsigned flags)
{
    int rc = lg_mkdirs(dir), first = LG_OK;
    char first_msg[1024] = "";
    if (rc == LG_OK) rc = rpt_clear_artefacts(dir); /* nothing of another run stays beside these */
    if (rc != LG_OK) return rc;
        /* every artefact is attempted: one that fails (gnuplot missing, a full disk) does not cost
         * the others; the first failure is returned with its message */
#define KEEP(x)                                                                                    \
    do {                                                                                           \
        int krc_ = (x);                                                                            \
        if (krc_ != LG_OK && first == LG_OK) {                                                     \
            first = krc_;                                                                          \
            lg_strlcpy(first_msg, lg_errmsg(), sizeof first_msg);                                  \
        }                                                                                          \
    } while (0)
    if (flags & RPT_PLOTS) KEEP(rpt_plot_all(r, dir));
    if (flags & RPT_JUNIT) KEEP(write_doc(r, dir, "junit.xml", rpt_write_junit));
    if (flags & RPT_MARKDOWN) KEEP(write_doc(r, dir, "summary.md", rpt_write_markdown));
    if (flags & RPT_CSV) KEEP(write_doc(r, dir, "sessions.csv", rpt_write_csv));
    if ((flags & (RPT_PLOTS | RPT_HTML)) && rpt_alloc_latest(r)) { /* heap profile diffs */
        KEEP(write_doc(r, dir, "stacks.folded", rpt_write_folded));
        KEEP(write_doc(r, dir, "flame.svg", rpt_write_flame_svg));
    }
    if (flags & RPT_HTML) {
        char path[4200];
        FILE *f = NULL;
        rc = rpt_open_out(&f, dir, "report.html", path, sizeof path);
        if (rc == LG_OK) {
            rc = rpt_write_html(r, (flags & RPT_PLOTS) ? dir : NULL, f);
            int crc = rpt_close_out(f, path);
            if (rc == LG_OK) rc = crc;
        }
        if (rc == LG_OK) rc = lg_out_manifest_add(dir, "report.html");
        KEEP(rc);
    }
#undef KEEP
    if (first != LG_OK) return lg_fail(first, "%s", first_msg);
    return LG_OK;
}
