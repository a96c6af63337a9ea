/* write_all.c — every artefact of a run into one directory. Plots come first so the HTML can
 * embed their SVGs; when gnuplot is missing the documents are still written. */
#include "rpt_impl.h"

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
    if (rc != LG_OK) lg_fail_ctx(rc, "%s: ", path);
    return rc;
}

int rpt_write_all(const struct rpt_results *r, const char *dir, unsigned flags)
{
    int rc = rpt_mkdir_p(dir), plots_rc = LG_OK;
    if (rc != LG_OK) return rc;
    if (flags & RPT_PLOTS) {
        plots_rc = rpt_plot_all(r, dir);
        if (plots_rc != LG_OK && plots_rc != LG_EUNAVAIL) return plots_rc;
    }
    char saved[1024];
    lg_strlcpy(saved, lg_errmsg(), sizeof saved); /* the gnuplot message, if any, is what to say */
    if (flags & RPT_JUNIT) rc = write_doc(r, dir, "junit.xml", rpt_write_junit);
    if (rc == LG_OK && (flags & RPT_MARKDOWN))
        rc = write_doc(r, dir, "summary.md", rpt_write_markdown);
    if (rc == LG_OK && (flags & RPT_CSV)) rc = write_doc(r, dir, "sessions.csv", rpt_write_csv);
    if (rc == LG_OK && (flags & RPT_HTML)) {
        char path[4200];
        FILE *f = NULL;
        rc = rpt_open_out(&f, dir, "report.html", path, sizeof path);
        if (rc == LG_OK) {
            rc = rpt_write_html(r, (flags & RPT_PLOTS) ? dir : NULL, f);
            int crc = rpt_close_out(f, path);
            if (rc == LG_OK) rc = crc;
        }
    }
    if (rc != LG_OK) return rc;
    if (plots_rc != LG_OK) return lg_fail(plots_rc, "%s", saved);
    return LG_OK;
}
