/* exec_py.c — a Python CMD gets the Python binding without a command change.
 *
 * When CMD is a CPython interpreter, exec puts the binding's site directory
 * (bindings/python/src/leakgate/_site, shipped in the package) first on the child's PYTHONPATH.
 * Its sitecustomize.py chains to the user's own sitecustomize (the next one on sys.path), then,
 * in the process the agent was loaded into (LEAKGATE_AGENT_PID) and unless LEAKGATE_PY=0, sets
 * up what `python -m leakgate PROG` sets up before PROG's first line: the session hook of
 * _attrib.py (python: lines, who keeps it). Once only: a program that imports leakgate, or runs
 * as `python -m leakgate`, finds the same module already set up.
 *
 * CMD is Python when the name it was given, its file on PATH, that file's real path (a venv's
 * bin/python links to /usr/bin/python3.11), or the ELF program a #! script runs through
 * (hx_child.elf) is "python" followed by nothing but digits and dots: python, python3,
 * python3.11. Off with --no-python or LEAKGATE_PY=0 in leakgate's environment.
 *
 * The directory: LEAKGATE_PY_SITE, else the package's beside the binary of a pip install
 * (leakgate/_native/bin/leakgate -> leakgate/_site), else the source tree's (LG_PY_SITE_PATH,
 * baked in at build time, as the agent's build path is).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_impl.h"

#define SITE_FILE     "sitecustomize.py"
#define SITE_FROM_BIN "../../_site" /* leakgate/_native/bin -> leakgate/_site */

/* Whether the last component of path is python, python3, python3.11, ... */
static bool python_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "python", 6)) return false;
    return base[6 + strspn(base + 6, "0123456789.")] == '\0';
}

bool hx_exec_is_python(const char *argv0, const struct hx_child *ch)
{
    if (python_name(argv0) || python_name(ch->path) || (ch->elf[0] && python_name(ch->elf)))
        return true;
    char real[PATH_MAX];
    return (realpath(ch->path, real) && python_name(real)) ||
           (ch->elf[0] && realpath(ch->elf, real) && python_name(real));
}

/* dir into out when it holds the binding's sitecustomize.py. */
static bool site_at(const char *dir, char *out, size_t size)
{
    char file[PATH_MAX + 32];
    if (!dir || !*dir || lg_snprintf(file, sizeof file, "%s/%s", dir, SITE_FILE) ||
        access(file, R_OK) != 0)
        return false;
    return realpath(dir, out) && strlen(out) < size;
}

/* The site directory into out (PATH_MAX bytes); false when none was found. */
static bool find_site(char *out)
{
    const char *env = getenv("LEAKGATE_PY_SITE");
    if (env && *env) return site_at(env, out, PATH_MAX);
    char self[PATH_MAX], dir[PATH_MAX + 16];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) {
        self[k] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) *slash = '\0';
        if (!lg_snprintf(dir, sizeof dir, "%s/%s", self, SITE_FROM_BIN) &&
            site_at(dir, out, PATH_MAX))
            return true;
    }
    return site_at(LG_PY_SITE_PATH, out, PATH_MAX);
}

void hx_exec_python_site(struct hx_exec_options *eo, const struct hx_child *ch)
{
    eo->py_site[0] = '\0';
    const char *off = getenv("LEAKGATE_PY");
    if (!eo->python || (off && !strcmp(off, "0")) || !hx_exec_is_python(eo->argv[0], ch)) return;
    char dir[PATH_MAX];
    if (find_site(dir) && !lg_strlcpy(eo->py_site, dir, sizeof eo->py_site)) return;
    eo->py_site[0] = '\0';
    if (!eo->o.quiet)
        fprintf(
            stderr,
            "leakgate exec: %s is Python, but the binding's %s was not found (LEAKGATE_PY_SITE, "
            "beside this leakgate at %s, or %s): no python: lines unless the program imports "
            "leakgate or runs as python -m leakgate\n",
            eo->argv[0], SITE_FILE, SITE_FROM_BIN, LG_PY_SITE_PATH);
}

int hx_exec_python_env(const struct hx_exec_options *eo)
{
    if (!eo->py_site[0]) return 0;
    const char *old = getenv("PYTHONPATH");
    char v[16384];
    if (lg_snprintf(v, sizeof v, "%s%s%s", eo->py_site, old && *old ? ":" : "",
                    old && *old ? old : "")) {
        errno = E2BIG; /* the parent says "cannot run CMD: Argument list too long" */
        return -1;
    }
    return setenv("PYTHONPATH", v, 1);
}
