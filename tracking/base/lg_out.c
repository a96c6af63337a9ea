/* lg_out.c — the one place that creates what leakgate writes: output folders, files written
 * whole, streamed files and the files another writer fills (jemalloc's heap profiles).
 *
 * What was at a name before is never written through: a file written whole goes to NAME.tmp,
 * opened O_CREAT|O_EXCL|O_NOFOLLOW, and is renamed over NAME once synced; a streamed file's old
 * entry is unlinked and the file created anew the same way. A symlink, FIFO or hard link left at
 * the name (a planted one, a `cp -al` snapshot) is therefore replaced, never followed, blocked on
 * or truncated. Folders are made 0755 at most whatever the umask, and checked not to be links. */
#define _GNU_SOURCE
#include "lg_base.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_MODE 0755 /* never group- or world-writable, whatever the umask */

/* Whether st is the same folder as path (false when path cannot be read). */
static bool same_folder(const struct stat *st, const char *path)
{
    struct stat o;
    return path && path[0] && stat(path, &o) == 0 && o.st_dev == st->st_dev &&
           o.st_ino == st->st_ino;
}

int lg_mkdirs(const char *dir)
{
    char path[4096];
    if (!dir[0]) return lg_fail(LG_EINVAL, "the output directory is an empty path");
    if (lg_strlcpy(path, dir, sizeof path))
        return lg_fail(LG_EINVAL, "output directory path too long: %s", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, DIR_MODE) != 0 && errno != EEXIST)
            return lg_fail(LG_EIO, "cannot create %s: %s", path, strerror(errno));
        *p = c;
        if (c == '\0') break;
    }
    size_t n = strlen(path); /* the folder itself, not what a trailing '/' would follow */
    while (n > 1 && path[n - 1] == '/') path[--n] = '\0';
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return lg_fail(LG_EIO,
                       "%s is a symbolic link: an output folder is not reached through a link; "
                       "give the folder itself",
                       dir);
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return lg_fail(LG_EIO, "%s is not a directory", dir);
    /* a run clears its artefacts by name in its output folder: never in / or a home folder */
    if (same_folder(&st, "/") || same_folder(&st, getenv("HOME")))
        return lg_fail(LG_EINVAL,
                       "%s is the %s folder: refused as an output folder (a run replaces and "
                       "removes files there); choose a folder of its own",
                       dir, same_folder(&st, "/") ? "root" : "home");
    return LG_OK;
}

int lg_out_subdir(const char *dir, bool (*ours)(const char *name))
{
    struct stat st;
    int fd = -1, rc = LG_OK;
    if (lstat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        if (!S_ISLNK(st.st_mode))
            return lg_fail(LG_EIO, "%s: not a folder; remove it or choose another output", dir);
        if (unlink(dir) != 0) /* a link is replaced by the folder, never followed */
            return lg_fail(LG_EIO, "%s: cannot replace the symbolic link there: %s", dir,
                           strerror(errno));
    }
    if (mkdir(dir, DIR_MODE) != 0 && errno != EEXIST)
        return lg_fail(LG_EIO, "cannot create %s: %s", dir, strerror(errno));
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return lg_fail(LG_EIO, "%s: cannot open the folder: %s", dir,
                       errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
        close(fd);
        return lg_fail(LG_EIO, "%s: a folder of another user; remove it or choose another output",
                       dir);
    }
    if ((st.st_mode & 07777 & ~DIR_MODE) && fchmod(fd, st.st_mode & DIR_MODE) != 0) {
        rc = lg_fail(LG_EIO, "%s: cannot make it writable by its owner only: %s", dir,
                     strerror(errno));
        close(fd);
        return rc;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return lg_fail(LG_EIO, "%s: cannot list the folder: %s", dir, strerror(errno));
    }
    /* what an earlier run left under leakgate's names goes, whatever it is (unlinking a link
     * removes the link, not its target); other names are never written, so they stay */
    for (struct dirent *e; rc == LG_OK && (e = readdir(d));)
        if (ours(e->d_name) && unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT)
            rc = lg_fail(LG_EIO, "%s/%s: cannot remove what an earlier run left there: %s", dir,
                         e->d_name, strerror(errno));
    closedir(d);
    return rc;
}

int lg_out_create(int *fd, const char *path)
{
    *fd = -1;
    if (unlink(path) != 0 && errno != ENOENT)
        return lg_fail(LG_EIO, "%s: cannot replace what is there: %s", path,
                       errno == EISDIR ? "a folder" : strerror(errno));
    *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (*fd < 0) return lg_fail(LG_EIO, "cannot create %s: %s", path, strerror(errno));
    return LG_OK;
}

int lg_out_stream(FILE **out, const char *path)
{
    int fd;
    *out = NULL;
    int rc = lg_out_create(&fd, path);
    if (rc != LG_OK) return rc;
    if (!(*out = fdopen(fd, "we"))) {
        close(fd);
        return lg_fail(LG_ENOMEM, "%s: out of memory opening it", path);
    }
    return LG_OK;
}

/* path's temporary name, beside it. */
static int tmp_name(char *tmp, size_t size, const char *path)
{
    if (lg_snprintf(tmp, size, "%s.tmp", path))
        return lg_fail(LG_EINVAL, "output path too long: %s", path);
    return LG_OK;
}

int lg_out_open(FILE **out, const char *path)
{
    char tmp[4300];
    *out = NULL;
    int rc = tmp_name(tmp, sizeof tmp, path);
    if (rc == LG_OK) rc = lg_out_stream(out, tmp);
    return rc;
}

int lg_out_commit(FILE *f, const char *path)
{
    char tmp[4300];
    if (tmp_name(tmp, sizeof tmp, path) != LG_OK) {
        fclose(f);
        return lg_errcode();
    }
    errno = 0;
    int err = ferror(f) || fflush(f) != 0 ? (errno ? errno : EIO) : 0;
    /* a file system that cannot sync (EINVAL, EROFS: some special ones) still gets the file */
    if (!err && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS) err = errno;
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        bool space = err == EIO || err == ENOSPC || err == EFBIG || err == EDQUOT;
        return lg_fail(LG_EIO, "writing %s failed: %s%s", path, strerror(err),
                       space ? " (is the disk full, or the file over a size limit?)" : "");
    }
    return LG_OK;
}

void lg_out_abandon(FILE *f, const char *path)
{
    char tmp[4300];
    if (f) fclose(f);
    if (tmp_name(tmp, sizeof tmp, path) == LG_OK) unlink(tmp);
}

/* ---- the manifest: what leakgate wrote into an output folder ------------------------------ */

#define MANIFEST      "/.leakgate-manifest"
#define MANIFEST_MAX  (64 << 10) /* bytes read: leakgate lists a few dozen names */
#define MANIFEST_HEAD "# files leakgate wrote here; a later run removes only these\n"

/* Reads dir's manifest into *text (one name a line, '\0'-terminated; "" when there is none or
 * it is not a plain file of its own: a link is never followed). The caller frees *text. */
static int manifest_read(const char *dir, char **text)
{
    char path[4200];
    *text = NULL;
    if (lg_snprintf(path, sizeof path, "%s" MANIFEST, dir))
        return lg_fail(LG_EINVAL, "output path too long: %s", dir);
    char *t = calloc(1, MANIFEST_MAX + 1);
    if (!t) return lg_fail(LG_ENOMEM, "out of memory reading %s", path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        size_t n = 0;
        for (ssize_t k; n < MANIFEST_MAX && (k = read(fd, t + n, MANIFEST_MAX - n)) > 0;)
            n += (size_t)k;
        t[n] = '\0';
    }
    if (fd >= 0) close(fd);
    *text = t;
    return LG_OK;
}

/* Whether line (len bytes) is a name a manifest may hold: a file directly in its folder. */
static bool manifest_name(const char *line, size_t len)
{
    return len > 0 && line[0] != '#' && memchr(line, '/', len) == NULL &&
           memchr(line, 0, len) == NULL && !(len == 1 && line[0] == '.') &&
           !(len == 2 && !memcmp(line, "..", 2));
}

/* What a manifest's rewrite drops: the names a clearing removed from its folder. */
struct clearing {
    const char *dir;
    bool (*ours)(const char *name);
    int rc; /* the first failure to remove one (the rest are then kept) */
};

/* Removes name from c->dir when it is c->ours'; true when it is gone. */
static bool clear_one(struct clearing *c, const char *name)
{
    char path[4400];
    if (c->rc != LG_OK || !c->ours(name)) return false;
    if (lg_snprintf(path, sizeof path, "%s/%s", c->dir, name)) {
        c->rc = lg_fail(LG_EINVAL, "output path too long: %s", c->dir);
        return false;
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        c->rc = lg_fail(LG_EIO, "cannot remove the earlier run's %s: %s", path, strerror(errno));
        return false;
    }
    return true;
}

/* Writes dir's manifest: the names of text that the clearing c (NULL: none) did not remove,
 * then extra (NULL: none); no manifest at all when it would list nothing. */
static int manifest_write(const char *dir, const char *text, struct clearing *c, const char *extra)
{
    char path[4200], name[256];
    FILE *f = NULL;
    int kept = 0;
    if (lg_snprintf(path, sizeof path, "%s" MANIFEST, dir))
        return lg_fail(LG_EINVAL, "output path too long: %s", dir);
    int rc = lg_out_open(&f, path);
    if (rc != LG_OK) return rc;
    fputs(MANIFEST_HEAD, f);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (manifest_name(p, len) && len < sizeof name) {
            memcpy(name, p, len);
            name[len] = '\0';
            if (!c || !clear_one(c, name)) fprintf(f, "%s\n", name), kept++;
        }
        p += len + (nl != NULL);
    }
    if (extra) fprintf(f, "%s\n", extra), kept++;
    if (kept == 0) {
        lg_out_abandon(f, path);
        if (unlink(path) != 0 && errno != ENOENT)
            return lg_fail(LG_EIO, "cannot remove %s: %s", path, strerror(errno));
        return LG_OK;
    }
    return lg_out_commit(f, path);
}

int lg_out_manifest_add(const char *dir, const char *name)
{
    char *text = NULL;
    LG_ASSERT(manifest_name(name, strlen(name)) && "a manifest lists names in its own folder");
    int rc = manifest_read(dir, &text);
    if (rc != LG_OK) return rc;
    size_t len = strlen(name);
    bool listed = false;
    for (const char *p = text; *p && !listed;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        listed = l == len && !memcmp(p, name, len);
        p += l + (nl != NULL);
    }
    if (!listed) rc = manifest_write(dir, text, NULL, name);
    free(text);
    return rc;
}

int lg_out_manifest_clear(const char *dir, bool (*ours)(const char *name))
{
    char *text = NULL;
    struct clearing c = {dir, ours, LG_OK};
    int rc = manifest_read(dir, &text);
    if (rc == LG_OK && text[0]) {
        rc = manifest_write(dir, text, &c, NULL);
        if (c.rc != LG_OK) rc = c.rc; /* its message is the latest failure's */
    }
    free(text);
    return rc;
}
