/* plot.c — drives gnuplot: writes each figure's script and data into a private scratch
 * directory, runs `gnuplot` (found on PATH) once for every figure and terminal (pngcairo and
 * svg), and removes the scratch directory. The figures themselves are in plot_figures.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plot_impl.h"

extern char **environ;

static const struct {
    const char *name, *title;
    int w, h;
    int (*script)(const struct rpt_results *, const char *, FILE *);
} figures[RPT_NFIGURES] = {
    [RPT_FIG_DELTAS] = {"deltas", "Per-session deltas against baseline", 1000, 840, rpt_fig_deltas},
    [RPT_FIG_LEAKS] = {"leaks", "Leaked bytes per tag class per session", 1000, 560, rpt_fig_leaks},
    [RPT_FIG_TIMELINE] = {"timeline", "Memory within sessions", 1000, 560, rpt_fig_timeline},
    [RPT_FIG_TREND] = {"trend", "Soak trend (Theil–Sen)", 1000, 840, rpt_fig_trend},
};

const char *rpt_figure_name(enum rpt_figure f)
{
    LG_ASSERT((unsigned)f < RPT_NFIGURES && "figure out of range");
    return figures[f].name;
}

const char *rpt_figure_title(enum rpt_figure f)
{
    LG_ASSERT((unsigned)f < RPT_NFIGURES && "figure out of range");
    return figures[f].title;
}

void rpt_figure_size(enum rpt_figure f, int *width, int *height)
{
    LG_ASSERT((unsigned)f < RPT_NFIGURES && "figure out of range");
    *width = figures[f].w;
    *height = figures[f].h;
}

bool rpt_figure_applies(const struct rpt_results *r, enum rpt_figure f)
{
    enum rpt_channel ch[RPT_NCHANNELS];
    switch (f) {
    case RPT_FIG_DELTAS: return r->n_sessions > 0 && rpt_delta_channels(r, ch) > 0;
    case RPT_FIG_LEAKS: return r->n_sessions > 0;
    case RPT_FIG_TIMELINE:
        for (int i = 0; i < r->n_sessions; i++)
            if (r->sessions[i].n_samples > 0) return true;
        return false;
    case RPT_FIG_TREND: return strcmp(r->run.command, "soak") == 0 && rpt_trend_channels(r, ch) > 0;
    default: LG_ASSERT(!"figure out of range");
    }
    return false;
}

struct rpt_unit rpt_unit_for(double max_abs)
{
    if (!(max_abs >= 1024.0)) return (struct rpt_unit){1.0, "B"};
    if (max_abs < 1024.0 * 1024.0) return (struct rpt_unit){1024.0, "KiB"};
    if (max_abs < 1024.0 * 1024.0 * 1024.0) return (struct rpt_unit){1024.0 * 1024.0, "MiB"};
    return (struct rpt_unit){1024.0 * 1024.0 * 1024.0, "GiB"};
}

/* ---- script helpers ------------------------------------------------------------------------ */

void rpt_gp_preamble(FILE *gp)
{
    fputs("reset\n"
          "set encoding utf8\n"
          "set border 3 lw 1 lc rgb '#666666'\n"
          "set tics nomirror out scale 0.6\n"
          "set grid xtics ytics lc rgb '#e4e4e4' lw 1 dt 1\n"
          "set key top left opaque box lc rgb '#cccccc' samplen 2 spacing 1.1 font ',9'\n"
          "set datafile missing 'NaN'\n"
          "set format y '%g'\n",
          gp);
}

void rpt_gp_warmup(FILE *gp, const struct rpt_results *r, int first, double label_y)
{
    int n = first;
    for (int i = 0; i < r->n_sessions;) {
        if (!r->sessions[i].warmup) {
            i++;
            continue;
        }
        int j = i;
        while (j + 1 < r->n_sessions && r->sessions[j + 1].warmup) j++;
        double a = r->sessions[i].index - 0.5, b = r->sessions[j].index + 0.5;
        fprintf(gp,
                "set object %d rect from %g, graph 0 to %g, graph 1 behind fc rgb '#efefef' "
                "fs solid 1.0 noborder\n",
                n, a, b);
        fprintf(gp,
                "set label %d 'warm-up' at %g, graph %g center tc rgb '#777777' font ',9' front\n",
                n, 0.5 * (a + b), label_y);
        n++;
        i = j + 1;
    }
}

void rpt_gp_run_title(FILE *gp, const struct rpt_results *r, const char *what)
{
    char t[512];
    const struct rpt_run *run = &r->run;
    const char *verdict =
        r->has_verdict ? rpt_status_word(r->verdict.status) : "NO VERDICT (run cut short)";
    snprintf(t, sizeof t, "leakgate %s · preset %s · %s · %s%s%s — %s", run->command, run->preset,
             run->modes, run->device, run->inject[0] ? " · inject " : "", run->inject, verdict);
    rpt_put_gp(gp, what);
    fputs(".\"\\n\".", gp); /* gnuplot: 'what'."\n".'run' is a two-line title */
    rpt_put_gp(gp, t);
}

int rpt_gp_data(FILE **out, const char *tmp, const char *name, char *path, size_t size)
{
    return rpt_open_out(out, tmp, name, path, size);
}

void rpt_gp_val(FILE *df, int64_t v, double div)
{
    if (v == RPT_NONE)
        fputs(" NaN", df);
    else
        fprintf(df, " %.9g", (double)v / div);
}

/* ---- running gnuplot ------------------------------------------------------------------------- */

static int find_gnuplot(char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len > 0 && !lg_snprintf(out, size, "%.*s/gnuplot", (int)len, p) &&
            access(out, X_OK) == 0)
            return LG_OK;
        p += len + (colon ? 1 : 0);
    }
    return lg_fail(LG_EUNAVAIL, "gnuplot not found: apt-get install gnuplot-nox");
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[4096];
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            if (!lg_snprintf(p, sizeof p, "%s/%s", dir, e->d_name)) unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* The last lines gnuplot wrote, for an error message. */
static void log_tail(const char *log, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(log, "re");
    if (!f) return;
    char all[8192];
    size_t n = fread(all, 1, sizeof all - 1, f);
    fclose(f);
    all[n] = '\0';
    while (n > 0 && (all[n - 1] == '\n' || all[n - 1] == ' ')) all[--n] = '\0';
    const char *start = n > size - 1 ? all + n - (size - 1) : all;
    lg_strlcpy(buf, start, size);
}

static int run_gnuplot(const char *exe, const char *script, const char *log)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0, rc = LG_OK;
    char *argv[] = {(char *)"gnuplot", (char *)script, NULL};
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int err = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err != 0) return lg_fail(LG_EUNAVAIL, "cannot run %s: %s", exe, strerror(err));
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return lg_fail(LG_EINTERNAL, "waiting for gnuplot: %s", strerror(errno));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char tail[600];
        log_tail(log, tail, sizeof tail);
        rc = lg_fail(LG_EINTERNAL, "gnuplot failed (%s %d) on %s: %s",
                     WIFEXITED(status) ? "exit status" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), script, tail);
    }
    return rc;
}

/* Whether a figure gnuplot wrote is whole: a PNG ends with its IEND chunk, an SVG with </svg>
 * (a full disk leaves a file cut short, or empty, and gnuplot may still exit 0). */
static bool whole(const char *path, bool png, long *size)
{
    FILE *f = fopen(path, "rbe");
    char tail[16] = "";
    *size = -1;
    if (!f) return false;
    if (fseek(f, 0, SEEK_END) == 0) *size = ftell(f);
    bool ok = *size > 16 && fseek(f, -16, SEEK_END) == 0 && fread(tail, 1, 16, f) == 16;
    fclose(f);
    if (!ok) return false;
    if (png) return memcmp(tail + 8, "IEND", 4) == 0; /* length, "IEND", CRC: the last 12 bytes */
    return memmem(tail, 16, "</svg>", 6) != NULL;
}

/* Moves a finished figure from the scratch directory into dir, once it is known to be whole;
 * when it is not, says what gnuplot wrote and said (it may exit 0 having written nothing). */
static int take_figure(const char *tmp, const char *dir, const char *name, int png_or_svg,
                       const char *log)
{
    const char *ext = png_or_svg ? "svg" : "png";
    char from[4200], to[4200], said[600];
    long size;
    if (lg_snprintf(from, sizeof from, "%s/%s.%s", tmp, name, ext) ||
        lg_snprintf(to, sizeof to, "%s/%s.%s", dir, name, ext))
        return lg_fail(LG_EINVAL, "output path too long: %s", dir);
    if (!whole(from, !png_or_svg, &size)) {
        log_tail(log, said, sizeof said);
        for (char *c = said; (c = strchr(c, '\n'));) *c = ' '; /* one line */
        if (size < 0)
            return lg_fail(LG_EIO,
                           "%s: gnuplot exited 0 but wrote no %s; gnuplot said: %s; the figure "
                           "was not written",
                           to, png_or_svg ? "SVG" : "PNG", said[0] ? said : "nothing");
        return lg_fail(LG_EIO,
                       "%s: gnuplot wrote %ld bytes, not a whole %s (cut short: is the disk "
                       "full, or a file-size limit reached?); gnuplot said: %s; the figure was "
                       "not written",
                       to, size, png_or_svg ? "SVG" : "PNG", said[0] ? said : "nothing");
    }
    if (rename(from, to) != 0) return lg_fail(LG_EIO, "cannot write %s: %s", to, strerror(errno));
    return lg_out_manifest_add(dir, strrchr(to, '/') + 1); /* a later run may remove it */
}

int rpt_gp_render(const struct rpt_gp_job *jobs, int n, rpt_gp_script script, const void *ctx,
                  const char *dir)
{
    char exe[4096], tmp[4096], main_gp[4200], fig_gp[4200], log[4200], out[4200];
    FILE *gp = NULL, *fg = NULL;
    int rc = find_gnuplot(exe, sizeof exe);
    if (rc != LG_OK) return rc;
    rc = lg_mkdirs(dir);
    if (rc != LG_OK) return rc;
    /* the scratch directory sits in the output directory: TMPDIR plays no part, and the
     * figures are renamed into place only once each is known to be whole. A relative dir that
     * starts with '-' gets "./" before it, or gnuplot reads the script's path as an option. */
    if (lg_snprintf(tmp, sizeof tmp, "%s%s/.lg-plot.XXXXXX", dir[0] == '-' ? "./" : "", dir))
        return lg_fail(LG_EINVAL, "output path too long: %s", dir);
    if (!mkdtemp(tmp))
        return lg_fail(LG_EIO, "%s: cannot create a scratch directory for gnuplot: %s", dir,
                       strerror(errno));
    rc = rpt_open_out(&gp, tmp, "main.gp", main_gp, sizeof main_gp);
    for (int f = 0; f < n && rc == LG_OK; f++) {
        char name[64];
        snprintf(name, sizeof name, "%s.gp", jobs[f].name);
        rc = rpt_open_out(&fg, tmp, name, fig_gp, sizeof fig_gp);
        if (rc == LG_OK) rc = script(ctx, f, tmp, fg);
        if (fg) {
            int crc = rpt_close_out(fg, fig_gp);
            if (rc == LG_OK) rc = crc;
            fg = NULL;
        }
        static const char *const terms[][2] = {
            {"png", "pngcairo size %d,%d font 'DejaVu Sans,10' noenhanced background rgb 'white'"},
            {"svg", "svg size %d,%d font 'DejaVu Sans,10' noenhanced background rgb 'white'"},
        };
        for (int t = 0; t < 2 && rc == LG_OK; t++) {
            fputs("set term ", gp);
            fprintf(gp, terms[t][1], jobs[f].w, jobs[f].h);
            snprintf(out, sizeof out, "%s/%s.%s", tmp, jobs[f].name, terms[t][0]);
            fputs("\nset output ", gp);
            rpt_put_gp(gp, out);
            fputs("\nload ", gp);
            rpt_put_gp(gp, fig_gp);
            fputs("\nunset output\n", gp);
        }
    }
    if (gp) {
        int crc = rpt_close_out(gp, main_gp);
        if (rc == LG_OK) rc = crc;
    }
    if (rc == LG_OK && lg_snprintf(log, sizeof log, "%s/gnuplot.log", tmp))
        rc = lg_fail(LG_EINVAL, "scratch path too long");
    if (rc == LG_OK) rc = run_gnuplot(exe, main_gp, log);
    for (int f = 0; f < n && rc == LG_OK; f++)
        for (int t = 0; t < 2 && rc == LG_OK; t++) rc = take_figure(tmp, dir, jobs[f].name, t, log);
    rm_tree(tmp);
    return rc;
}

/* The figures of one run's results, as jobs for rpt_gp_render. */
struct run_figures {
    const struct rpt_results *r;
    enum rpt_figure fig[RPT_NFIGURES];
};

static int run_script(const void *ctx, int job, const char *tmp, FILE *gp)
{
    const struct run_figures *rf = ctx;
    return figures[rf->fig[job]].script(rf->r, tmp, gp);
}

/* Writes the figures in `which` (a bit per figure) with one gnuplot run. */
static int plot_figures(const struct rpt_results *r, unsigned which, const char *dir)
{
    struct run_figures rf = {.r = r};
    struct rpt_gp_job jobs[RPT_NFIGURES];
    int n = 0;
    for (int f = 0; f < RPT_NFIGURES; f++) {
        if (!(which & (1u << f))) continue;
        rf.fig[n] = (enum rpt_figure)f;
        jobs[n++] = (struct rpt_gp_job){figures[f].name, figures[f].w, figures[f].h};
    }
    return rpt_gp_render(jobs, n, run_script, &rf, dir);
}

int rpt_plot(const struct rpt_results *r, enum rpt_figure f, const char *dir)
{
    LG_ASSERT((unsigned)f < RPT_NFIGURES && rpt_figure_applies(r, f) && "figure does not apply");
    return plot_figures(r, 1u << f, dir);
}

int rpt_plot_all(const struct rpt_results *r, const char *dir)
{
    unsigned which = 0;
    for (int f = 0; f < RPT_NFIGURES; f++)
        if (rpt_figure_applies(r, f)) which |= 1u << f;
    if (!which) return LG_OK;
    return plot_figures(r, which, dir);
}
