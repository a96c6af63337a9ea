/* exec_sym.c — naming addresses of another process (or of this one's heap profile): its
 * memory map, the ELF program headers of each module, and binutils' addr2line.
 *
 * An address in a mapping [start, end) of file F at file offset `offset` is at file offset
 * off = addr - start + offset; the PT_LOAD segment that holds off gives the virtual address
 * addr2line wants (off - p_offset + p_vaddr): this is right for PIE and non-PIE programs and
 * for shared libraries alike. Return addresses are looked up at addr - 1, inside the call.
 * One addr2line call per module (-a -f -i -C: address markers, functions, inlined frames,
 * C++ and Rust names demangled). What cannot be named is shown as module+offset.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec_impl.h"

int hx_maps_parse(struct hx_maps *m, const char *text)
{
    memset(m, 0, sizeof *m);
    m->text = strdup(text ? text : "");
    if (!m->text) return lg_fail(LG_ENOMEM, "out of memory reading a memory map");
    size_t cap = 0;
    for (char *line = m->text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        unsigned long start, end, offset;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &start, &end, perms, &offset, &path_at) <
                4 ||
            !path_at || perms[2] != 'x' || line[path_at] != '/')
            continue;
        char *path = line + path_at;
        char *deleted = strstr(path, " (deleted)");
        if (deleted) *deleted = '\0';
        if (m->n == cap) {
            cap = cap ? cap * 2 : 64;
            struct hx_module *nv = realloc(m->v, cap * sizeof *nv);
            if (!nv) {
                hx_maps_fini(m);
                return lg_fail(LG_ENOMEM, "out of memory reading a memory map");
            }
            m->v = nv;
        }
        m->v[m->n++] = (struct hx_module){start, end, offset, path};
    }
    return LG_OK;
}

void hx_maps_fini(struct hx_maps *m)
{
    free(m->text);
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* Everything fd holds until its end, as a NUL-terminated heap string; NULL when out of memory. */
static char *read_all(int fd)
{
    size_t cap = 1 << 14, len = 0;
    char *out = malloc(cap);
    for (ssize_t k; out;) {
        if (len + 1 >= cap) {
            char *no = realloc(out, cap *= 2);
            if (!no) {
                free(out);
                return NULL;
            }
            out = no;
        }
        k = read(fd, out + len, cap - len - 1);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        len += (size_t)k;
    }
    if (out) out[len] = '\0';
    return out;
}

char *hx_read_maps(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    char *s = read_all(fd);
    close(fd);
    return s;
}

static const struct hx_module *module_of(const struct hx_maps *m, uintptr_t a)
{
    for (size_t i = 0; i < m->n; i++)
        if (a >= m->v[i].start && a < m->v[i].end) return &m->v[i];
    return NULL;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The virtual address of file offset `off` in the ELF file at path (off itself when the file
 * cannot be read: right for most shared libraries). */
static uintptr_t file_vaddr(const char *path, uintptr_t off)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return off;
    Elf64_Ehdr eh;
    uintptr_t v = off;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
        for (int i = 0; i < eh.e_phnum && i < 4096; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) !=
                (ssize_t)sizeof ph)
                break;
            if (ph.p_type == PT_LOAD && off >= ph.p_offset && off < ph.p_offset + ph.p_filesz) {
                v = off - ph.p_offset + ph.p_vaddr;
                break;
            }
        }
    }
    close(fd);
    return v;
}

/* Runs addr2line on `file` for addrs[0..n) and returns its output (a new string), or NULL. */
static char *run_addr2line(const char *file, const uintptr_t *addrs, int n)
{
    char **argv = calloc((size_t)n + 8, sizeof *argv);
    char *hex = malloc((size_t)n * 20 + 1);
    char *out = NULL;
    int pfd[2] = {-1, -1};
    if (!argv || !hex || pipe2(pfd, O_CLOEXEC) != 0) goto cleanup;
    int a = 0;
    argv[a++] = "addr2line";
    argv[a++] = "-a";
    argv[a++] = "-f";
    argv[a++] = "-i";
    argv[a++] = "-C";
    argv[a++] = "-e";
    argv[a++] = (char *)file;
    for (int i = 0; i < n; i++) {
        argv[a++] = hex + (size_t)i * 20;
        snprintf(argv[a - 1], 20, "0x%lx", (unsigned long)addrs[i]);
    }
    argv[a] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) goto cleanup;
    if (pid == 0) {
        dup2(pfd[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2);
        unsetenv("LD_PRELOAD"); /* a leakgate running under exec must not preload addr2line */
        execvp("addr2line", argv);
        _exit(127);
    }
    close(pfd[1]);
    pfd[1] = -1;
    out = read_all(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        free(out);
        out = NULL;
    }
cleanup:
    if (pfd[0] >= 0) close(pfd[0]);
    if (pfd[1] >= 0) close(pfd[1]);
    free(argv);
    free(hex);
    return out;
}

static struct hx_frame *frame_add(struct hx_frames *l)
{
    if (!LG_RESERVE(l->v, l->cap, l->n, 32)) return NULL;
    struct hx_frame *f = &l->v[l->n++];
    return f;
}

/* Fills f from an addr2line (function, location) pair; false when it names nothing. */
static bool frame_from(struct hx_frame *f, const char *fn, const char *loc, const char *mod,
                       uintptr_t off)
{
    char where[300];
    const char *base = base_name(loc);
    size_t bl = strcspn(base, " "); /* drop " (discriminator 2)" */
    if (strncmp(base, "??", 2) == 0 || bl == 0)
        snprintf(where, sizeof where, "%s+0x%lx", mod, (unsigned long)off);
    else
        snprintf(where, sizeof where, "%.*s", (int)bl, base);
    if (strcmp(fn, "??") == 0) return false;
    snprintf(f->text, sizeof f->text, "%s (%s)", fn, where);
    lg_strlcpy(f->module, mod, sizeof f->module);
    f->is_main = strcmp(fn, "main") == 0;
    return true;
}

/* Symbolises the addresses of one module; fills per[i] (the frames of address i) for i with
 * mods[i] == mod. */
static int symbolise_module(const struct hx_module *mod, const uintptr_t *pcs,
                            const struct hx_module **mods, int n, struct hx_frames *per)
{
    uintptr_t *addrs = malloc((size_t)n * sizeof *addrs);
    int *which = malloc((size_t)n * sizeof *which), k = 0;
    if (!addrs || !which) {
        free(addrs);
        free(which);
        return lg_fail(LG_ENOMEM, "out of memory symbolising a stack");
    }
    for (int i = 0; i < n; i++) {
        if (!mods[i] || strcmp(mods[i]->path, mod->path) != 0) continue;
        uintptr_t off = pcs[i] - 1 - mods[i]->start + mods[i]->offset;
        addrs[k] = file_vaddr(mod->path, off);
        which[k++] = i;
    }
    char *out = k ? run_addr2line(mod->path, addrs, k) : NULL;
    const char *modname = base_name(mod->path);
    int at = -1;
    for (char *line = out, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (line[0] == '0' && line[1] == 'x' &&
            strspn(line + 2, "0123456789abcdef") == strlen(line + 2)) {
            at++;
            continue;
        }
        char *loc = next;
        if (!loc) break;
        next = strchr(loc, '\n');
        if (next) *next++ = '\0';
        if (at < 0 || at >= k) break;
        struct hx_frame tmp;
        if (!frame_from(&tmp, line, loc, modname, addrs[at])) continue;
        struct hx_frame *f = frame_add(&per[which[at]]);
        if (!f) break;
        *f = tmp;
    }
    free(out);
    free(addrs);
    free(which);
    return LG_OK;
}

int hx_symbolize_each(const struct hx_maps *m, const uintptr_t *pcs, int n, struct hx_frames **out)
{
    *out = NULL;
    const struct hx_module **mods = calloc((size_t)n + 1, sizeof *mods);
    struct hx_frames *per = calloc((size_t)n + 1, sizeof *per);
    int rc = mods && per ? LG_OK : lg_fail(LG_ENOMEM, "out of memory symbolising a stack");
    for (int i = 0; rc == LG_OK && i < n; i++) mods[i] = module_of(m, pcs[i]);
    for (int i = 0; rc == LG_OK && i < n; i++) {
        bool first = mods[i] != NULL;
        for (int j = 0; j < i && first; j++)
            first = !mods[j] || strcmp(mods[j]->path, mods[i]->path) != 0;
        if (first) rc = symbolise_module(mods[i], pcs, mods, n, per);
    }
    for (int i = 0; rc == LG_OK && i < n; i++) {
        if (per[i].n) continue;
        struct hx_frame *f = frame_add(&per[i]); /* unnamed: module and offset, or the address */
        if (!f) {
            rc = lg_fail(LG_ENOMEM, "out of memory symbolising a stack");
            break;
        }
        if (mods[i]) {
            lg_strlcpy(f->module, base_name(mods[i]->path), sizeof f->module);
            snprintf(f->text, sizeof f->text, "0x%lx (%s+0x%lx)", (unsigned long)pcs[i], f->module,
                     (unsigned long)(pcs[i] - 1 - mods[i]->start + mods[i]->offset));
        } else {
            snprintf(f->text, sizeof f->text, "0x%lx (?)", (unsigned long)pcs[i]);
        }
    }
    free(mods);
    if (rc != LG_OK) {
        hx_frames_free(per, n);
        return rc;
    }
    *out = per;
    return LG_OK;
}

void hx_frames_free(struct hx_frames *per, int n)
{
    for (int i = 0; per && i < n; i++) free(per[i].v);
    free(per);
}

int hx_symbolize(const struct hx_maps *m, const uintptr_t *pcs, int n, struct hx_frame **out,
                 int *n_out)
{
    *out = NULL;
    *n_out = 0;
    struct hx_frames *per = NULL, all = {0};
    int rc = hx_symbolize_each(m, pcs, n, &per);
    for (int i = 0; rc == LG_OK && i < n; i++)
        for (int k = 0; k < per[i].n; k++) {
            struct hx_frame *f = frame_add(&all);
            if (!f) {
                rc = lg_fail(LG_ENOMEM, "out of memory symbolising a stack");
                break;
            }
            *f = per[i].v[k];
        }
    hx_frames_free(per, n);
    if (rc != LG_OK) {
        free(all.v);
        return rc;
    }
    *out = all.v;
    *n_out = all.n;
    return LG_OK;
}

/* Frames of the allocator, dropped from the top of a stack so that it starts where the
 * program asked for memory: jemalloc (shared or linked in) and the agent; the C functions;
 * C++'s operator new and std::allocator; Rust's alloc crate (alloc::alloc, RawVec, Vec's
 * allocation, their trait impls "<u8 as alloc::vec::...>"). */
static bool allocator_frame(const struct hx_frame *f)
{
    static const char *const mods[] = {"libjemalloc", "libleakgate-agent", NULL};
    for (const char *const *m = mods; *m; m++)
        if (strncmp(f->module, *m, strlen(*m)) == 0) return true;
    static const char *const fns[] = {"operator new",
                                      "malloc ",
                                      "calloc ",
                                      "realloc ",
                                      "posix_memalign ",
                                      "aligned_alloc ",
                                      "memalign ",
                                      "valloc ",
                                      "mallocx ",
                                      "std::__new_allocator",
                                      "__gnu_cxx::new_allocator",
                                      "std::allocator<",
                                      "std::allocator_traits<",
                                      "alloc::",
                                      "<alloc::",
                                      "__rust_",
                                      "__rdl_",
                                      NULL};
    for (const char *const *fn = fns; *fn; fn++)
        if (strncmp(f->text, *fn, strlen(*fn)) == 0) return true;
    /* jemalloc linked statically (LG_STATIC_JEMALLOC) lives in the program's own module: its
     * functions carry the je_ namespace, its static ones the pic archive's objects */
    if (strncmp(f->text, "je_", 3) == 0 || strstr(f->text, ".pic.o:")) return true;
    if (f->text[0] == '<') { /* "<T as alloc::...>::f": an impl of the alloc crate's traits */
        const char *as = strstr(f->text, " as ");
        if (as && !strncmp(as + 4, "alloc::", 7)) return true;
    }
    return false;
}

char *hx_frames_text(const struct hx_frame *f, int n)
{
    int first = 0;
    while (first < n && allocator_frame(&f[first])) first++;
    size_t size = 1;
    for (int i = first; i < n; i++) size += strlen(f[i].text) + 1;
    char *s = malloc(size), *p = s;
    if (!s) return NULL;
    for (int i = first; i < n; i++) {
        p += sprintf(p, "%s\n", f[i].text);
        if (f[i].is_main) break;
    }
    *p = '\0';
    return s;
}

char *hx_symbolize_text(const struct hx_maps *m, const char *raw)
{
    uintptr_t pcs[64];
    int n = 0;
    for (const char *p = raw; p && *p && n < 64;) {
        char *end;
        unsigned long v = strtoul(p, &end, 16);
        if (end == p) break;
        pcs[n++] = v;
        p = end + strspn(end, "\n ");
    }
    struct hx_frame *f = NULL;
    int nf = 0;
    if (hx_symbolize(m, pcs, n, &f, &nf) != LG_OK) return NULL;
    /* the tracker's stacks already start at the allocating call: keep them whole */
    size_t size = 1;
    for (int i = 0; i < nf; i++) size += strlen(f[i].text) + 1;
    char *s = malloc(size), *q = s;
    for (int i = 0; s && i < nf; i++) {
        q += sprintf(q, "%s\n", f[i].text);
        if (f[i].is_main) break;
    }
    if (s) *q = '\0';
    free(f);
    return s;
}
