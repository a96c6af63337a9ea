/* lg_base.h — what every leakgate module shares: status codes, the two error tiers,
 * small helpers. It sits in tracking/ because tracking/ is the bottom of the stack.
 *
 * Two tiers of errors (STYLE.md):
 *   - a broken contract is a programming error: LG_ASSERT(n > 0 && "need at least one row")
 *     prints file, line and message and aborts;
 *   - a runtime failure (bad file, bad config, out of memory, CUDA error) returns a status and
 *     leaves a message the user can act on in a thread-local buffer:
 *
 *       if (len > size) return lg_fail(LG_EFORMAT, "%s: header length %zu exceeds file size %zu",
 *                                      path, len, size);
 *       ...
 *       int rc = vm_load(vm, path);
 *       if (rc != LG_OK) fprintf(stderr, "leakgate: %s\n", lg_errmsg());
 *
 * Library code never calls exit(); the CLI turns statuses into exit codes.
 */
#ifndef LG_BASE_H
#define LG_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LG_MAX_NAME 96 /* tensor names and allocation tags, NUL included */

/* The statuses of every fallible function, one row each (libuv's UV_ERRNO_MAP): X(NAME, value,
 * what it means, the CLI's exit status for it). lg_status_name and lg_exit_code come from it. */
#define LG_STATUS_MAP(X)                                                                           \
    X(OK, 0, "ok", 0)                                                                              \
    X(EINVAL, 1, "invalid argument", 2) /* an argument, shape or configuration */                  \
    X(ENOMEM, 2, "out of memory", 4)    /* host or device */                                       \
    X(EIO, 3, "I/O error", 2)           /* a file could not be opened, read or written */          \
    X(EFORMAT, 4, "malformed input", 2) /* checkpoint, CSV, JSON, flags */                         \
    X(EBUSY, 5, "busy", 2)              /* a close over live children (session end) */             \
    X(ECUDA, 6, "CUDA error", 4)        /* a CUDA runtime, cuBLAS or driver error */               \
    X(EUNAVAIL, 7, "unavailable", 2)    /* not built in or not present (no GPU, gnuplot) */        \
    X(EINTERNAL, 8, "internal error", 4)                                                           \
    X(EINTR, 9, "interrupted", 4) /* by a signal */

enum lg_status {
#define LG_X_ENUM(name, value, text, exit) LG_##name = value,
    LG_STATUS_MAP(LG_X_ENUM)
#undef LG_X_ENUM
};

/* Records a runtime failure: formats the message into this thread's error buffer and returns
 * `code`, so a failing path reads `return lg_fail(...)`. A message too long for the buffer (a
 * 100 KB path, say) keeps its start and its end, where the reason is, and elides the middle. */
int lg_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends context ("loading ckpt.safetensors: ") to the current message; returns `code`. */
int lg_fail_ctx(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last message recorded on this thread ("" when none). Valid until the next lg_fail. */
const char *lg_errmsg(void);
int lg_errcode(void);
void lg_clear_error(void);
const char *lg_status_name(int code);
/* The exit status of a runtime failure (DESIGN.md): 0 for LG_OK; 2 for what the user can act on
 * (usage, input, a file or directory that cannot be read or written, a missing feature);
 * 4 for the rest (internal errors, out of memory, device errors). */
int lg_exit_code(int status);

/* ---- files the tools write --------------------------------------------------------------- */

/* lg_out.c is the one place that creates an output file or folder: every artefact goes
 * through these, so none can write through a link left at its name.
 *
 *   lg_mkdirs("out");                          // the output folder
 *   lg_out_subdir("out/heap", is_profile);     // a folder of leakgate's own in it, cleared
 *   lg_out_open(&f, "out/summary.md"); ...; lg_out_commit(f, "out/summary.md");  // whole
 *   lg_out_stream(&f, "out/results.jsonl"); ...; fclose(f);                      // streamed
 *   lg_out_create(&fd, "out/heap/session-3.heap"); close(fd); prof.dump ...      // for another
 *   lg_out_manifest_add("out", "summary.md");   // listed: a later run may remove it
 *   lg_out_manifest_clear("out", is_report);    // removes only what the manifest lists
 */

/* Creates dir and its parents (mkdir -p), 0755 at most whatever the umask. LG_EINVAL for an
 * empty path and for / or the home folder ($HOME), which a run must not clear; LG_EIO naming
 * the component that failed, or when dir exists and is not a directory or is a symbolic link. */
int lg_mkdirs(const char *dir);
/* Makes dir, a folder of leakgate's own inside an output folder: a symbolic link there is
 * replaced by the folder, a folder of another user refused, an existing one made 0755 at most,
 * and every entry whose name ours() accepts removed (whatever it is: a link goes, not its
 * target). LG_EIO naming what failed. */
int lg_out_subdir(const char *dir, bool (*ours)(const char *name));
/* Creates path anew, empty, for a writer that fills it by name (jemalloc's prof.dump): what was
 * there is unlinked (a link, a FIFO, a hard link of another file), then the file is made with
 * O_CREAT|O_EXCL|O_NOFOLLOW. *fd, opened for writing, is the caller's to close. */
int lg_out_create(int *fd, const char *path);
/* A streamed file (appended and flushed as a run goes, results.jsonl): created anew as by
 * lg_out_create. *out is closed with fclose. */
int lg_out_stream(FILE **out, const char *path);
/* A file written whole: *out writes path.tmp (created anew as by lg_out_create);
 * lg_out_commit(f, path) flushes, syncs and closes it and renames it over path, or removes it
 * and says what failed (LG_EIO; "is the disk full" where that is the likely reason). */
int lg_out_open(FILE **out, const char *path);
int lg_out_commit(FILE *f, const char *path);
/* Closes a file of lg_out_open that is not to be kept (its writer failed) and removes it; what
 * was at path stays. */
void lg_out_abandon(FILE *f, const char *path);
/* An output folder's manifest, DIR/.leakgate-manifest: the names of the files leakgate wrote
 * there, one a line, so that a later run removes what an earlier one wrote and never a file of
 * the user's that merely has an artefact's name. lg_out_manifest_add lists name (a file
 * directly in dir) after writing it; lg_out_manifest_clear removes every listed file whose name
 * ours() accepts and drops it from the list (the manifest goes when it lists nothing more). A
 * manifest that is a link or not a plain file is read as empty, and replaced. LG_EIO naming
 * what could not be removed or written. */
int lg_out_manifest_add(const char *dir, const char *name);
int lg_out_manifest_clear(const char *dir, bool (*ours)(const char *name));

/* An exclusive lock on an output directory, held while a run writes there (flock on
 * DIR/.leakgate.lock, which names the holder's pid): a second leakgate that wants the same
 * directory is refused with LG_EBUSY and a message naming the holder, and the first is left
 * alone. Released by lg_dir_unlock or by the process's exit. */
struct lg_dir_lock {
    int fd;
};
int lg_dir_lock(struct lg_dir_lock *lk, const char *dir);
void lg_dir_unlock(struct lg_dir_lock *lk);
/* Opens path for writing (truncated, or appended to with append) as a regular file only: a
 * symlink there is not followed, a FIFO or device is refused rather than blocked on. *out is
 * closed with fclose. LG_EIO with the path and the reason. */
int lg_open_regular(FILE **out, const char *path, bool append);

/* Opens path for reading as a regular file only: a FIFO, a directory or a device is refused
 * (LG_EIO naming `what` and the path) rather than blocked on or read forever. *out is closed
 * with fclose. */
int lg_open_read(FILE **out, const char *path, const char *what);

/* Broken contract: print and abort. Kept in release builds (GGML_ASSERT). */
#define LG_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) lg_assert_fail(__FILE__, __LINE__, #cond);                                    \
    } while (0)
_Noreturn void lg_assert_fail(const char *file, int line, const char *what);

/* Copies a string into a fixed buffer, always NUL-terminated; returns 1 when truncated. */
int lg_strlcpy(char *dst, const char *src, size_t size);

/* Room for element n of a growing array *arr of *cap elements (capacity doubled from `first`);
 * element n is zeroed. False when out of memory: *arr and *cap are as they were.
 *   if (!LG_RESERVE(v, cap, nv, 16)) ...;  v[nv++] = x; */
bool lg_reserve(void **arr, int *cap, int n, size_t elem, int first);
#define LG_RESERVE(arr, cap, n, first)                                                             \
    lg_reserve((void **)&(arr), &(cap), (n), sizeof *(arr), (first))
/* Joins n strings into a fixed buffer (truncating, always NUL-terminated); returns 1 when
 * truncated. For names built on hot paths, where snprintf's format parsing shows up. */
int lg_join(char *dst, size_t size, int n, ...);
/* snprintf into a fixed buffer; returns 1 when truncated. */
int lg_snprintf(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Monotonic clock in seconds. */
double lg_now(void);

/* Parses a byte size: "4096", "256KiB", "1.5MiB", "2GiB", "64k", "10MB" (at most 1e15); LG_EINVAL
 * with a message naming it. */
int lg_parse_size(const char *s, size_t *out);

/* Human-readable byte count ("815.05 MiB", "-12.0 KiB") into buf; returns buf. */
char *lg_fmt_bytes(char *buf, size_t size, double bytes);

#define LG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define LG_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define LG_MAX(a, b)    ((a) > (b) ? (a) : (b))

#endif
