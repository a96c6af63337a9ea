/* exec_keep.c — who keeps it, named: the agent's retention paths (agent/lga_keep.c) read from a
 * SESSION message and turned into lines of the session's notes, in the program's words:
 *
 *   native: 12 blocks (768 B) born in session 5 at keep_block (census.c:26) are kept alive by:
 *   global census_kept+40 (exec_census) → 64 B block at keep_block (census.c:26)
 *
 * The blocks are named by their allocation stacks (symbolised through CMD's map, as every
 * stack is); the root, an address in a module's data or bss, by the module's symbol table
 * (.symtab, else .dynsym): the object that contains it, and the offset into it. Notes land in the
 * results (schema'd), report.html, summary.md and exec's printout beside the stacks.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec_impl.h"

void hx_keep_fini(struct hx_keep *k)
{
    for (int i = 0; i < k->n; i++) {
        free(k->p[i].stack);
        for (int j = 0; j < k->p[i].n_links; j++) free(k->p[i].links[j].stack);
    }
    memset(k, 0, sizeof *k);
}

int hx_keep_get(struct lga_dec *d, struct hx_keep *k)
{
    memset(k, 0, sizeof *k);
    uint32_t n = lga_get_u32(d);
    if (d->bad || n > HX_KEEP_PATHS) return LG_EFORMAT;
    if (n == 0) return LG_OK;
    k->born = (int)lga_get_u32(d);
    k->words = lga_get_i64(d);
    for (uint32_t i = 0; i < n && !d->bad; i++) {
        struct hx_keep_path *p = &k->p[k->n++];
        p->blocks = lga_get_i64(d);
        p->bytes = lga_get_i64(d);
        p->stack = lga_get_strdup(d);
        p->kind = lga_get_u32(d);
        lga_get_str(d, p->module, sizeof p->module);
        p->addr = (uint64_t)lga_get_i64(d);
        p->base = (uint64_t)lga_get_i64(d);
        uint32_t links = lga_get_u32(d);
        if (d->bad || p->kind > HX_KEEP_STACK || links > HX_KEEP_LINKS || p->blocks < 0 ||
            p->bytes < 0)
            return LG_EFORMAT;
        for (uint32_t j = 0; j < links && !d->bad; j++) {
            p->links[p->n_links].size = lga_get_i64(d);
            p->links[p->n_links++].stack = lga_get_strdup(d);
        }
    }
    return d->bad || k->born < 0 ? LG_EFORMAT : LG_OK;
}

/* ---- the root's name: the module's symbol table ------------------------------------------- */

int hx_elf_symbol(const unsigned char *img, size_t len, uint64_t addr, uint64_t base, char *name,
                  size_t size, uint64_t *off)
{
    const Elf64_Ehdr *eh = (const void *)img;
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_shoff > len || eh->e_phoff > len ||
        eh->e_shoff % 8 || eh->e_phoff % 8 || /* the tables are read in place: aligned */
        (len - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum ||
        (len - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
        return 0;
    /* the link-time address: the first PT_LOAD's page is what `base` maps */
    uint64_t first = UINT64_MAX;
    const Elf64_Phdr *ph = (const void *)(img + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < first) first = ph[i].p_vaddr;
    if (first == UINT64_MAX) return 0;
    uint64_t vaddr = addr - base + (first & ~(uint64_t)0xfff);
    const Elf64_Shdr *sh = (const void *)(img + eh->e_shoff);
    for (int want = SHT_SYMTAB; want; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0)
        for (int i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != (Elf64_Word)want || sh[i].sh_link >= eh->e_shnum) continue;
            const Elf64_Shdr *str = &sh[sh[i].sh_link];
            if (sh[i].sh_offset % 8 || sh[i].sh_offset > len ||
                len - sh[i].sh_offset < sh[i].sh_size || str->sh_offset > len ||
                len - str->sh_offset < str->sh_size)
                continue;
            const Elf64_Sym *sym = (const void *)(img + sh[i].sh_offset);
            size_t nsym = sh[i].sh_size / sizeof *sym;
            for (size_t k = 0; k < nsym; k++) {
                if (sym[k].st_size == 0 || vaddr < sym[k].st_value ||
                    vaddr - sym[k].st_value >= sym[k].st_size || sym[k].st_name >= str->sh_size)
                    continue;
                const char *s = (const char *)img + str->sh_offset + sym[k].st_name;
                size_t n = strnlen(s, str->sh_size - sym[k].st_name);
                if (n == 0) continue;
                snprintf(name, size, "%.*s", (int)n, s);
                *off = vaddr - sym[k].st_value;
                return 1;
            }
        }
    return 0;
}

/* hx_elf_symbol over the file `path` (mapped read-only), false when it cannot be read. */
static bool symbol_at(const char *path, uint64_t addr, uint64_t base, char *name, size_t size,
                      uint64_t *off)
{
    /* the path comes from CMD's map: never block on a FIFO, read only a plain file */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0) return false;
    void *m = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0
                  ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED) return false;
    bool found = hx_elf_symbol(m, (size_t)st.st_size, addr, base, name, size, off) == 1;
    munmap(m, (size_t)st.st_size);
    return found;
}

/* Rust's legacy symbols end in "::h" and 16 hex digits, a hash of the crate: cut, in place. */
static void drop_rust_hash(char *name)
{
    size_t n = strlen(name);
    if (n > 19 && !strncmp(name + n - 19, "::h", 3) &&
        strspn(name + n - 16, "0123456789abcdef") == 16)
        name[n - 19] = '\0';
}

/* A C++ or Rust symbol made readable by c++filt (binutils, as addr2line is), in place. */
static void demangle(char *name, size_t size)
{
    if (strncmp(name, "_Z", 2) != 0 || strspn(name, "_ZNSt0123456789abcdefghijklmnopqrstuvwxyz"
                                                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ$.") != strlen(name))
        return;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "c++filt '%s' 2>/dev/null", name);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char out[512];
    if (fgets(out, sizeof out, p)) {
        out[strcspn(out, "\n")] = '\0';
        if (out[0]) snprintf(name, size, "%s", out);
    }
    pclose(p);
    drop_rust_hash(name);
}

/* ---- the note -------------------------------------------------------------------------------- */

/* Whether a frame is the language's allocation plumbing (std::allocator and make_shared
 * inlined into the program, Rust's alloc and core), not the program's own code. */
static bool plumbing(const char *frame, size_t n)
{
    static const char *const prefixes[] = {
        "std::", "__gnu_cxx::", "alloc::", "core::", "<alloc::", "<T as alloc::", "<T as core::"};
    for (size_t i = 0; i < LG_ARRAY_LEN(prefixes); i++)
        if (n >= strlen(prefixes[i]) && !strncmp(frame, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

/* The first frame of the program's own code in a raw stack, symbolised ("keep_block
 * (census.c:26)"), into buf. */
static void frame_of(const struct hx_maps *maps, const char *raw, char *buf, size_t size)
{
    char *text = raw && raw[0] && maps ? hx_symbolize_text(maps, raw) : NULL;
    const char *f = text ? text : "";
    for (const char *next; *f && plumbing(f, strcspn(f, "\n")) && *(next = f + strcspn(f, "\n"));)
        f = next + 1;
    if (!*f) f = text ? text : ""; /* nothing but plumbing: its first frame */
    snprintf(buf, size, "%.*s", (int)strcspn(f, "\n"), f);
    if (!buf[0]) snprintf(buf, size, "an unnamed stack");
    free(text);
}

/* The root's words: "global census_kept+40 (exec_census)", "the stack of the thread that ended
 * the session", or an address in a module. */
static void root_of(const struct hx_keep_path *p, char *buf, size_t size)
{
    if (p->kind == HX_KEEP_STACK) {
        snprintf(buf, size, "a local on the stack of the thread that ended the session");
        return;
    }
    const char *base = strrchr(p->module, '/');
    base = base ? base + 1 : p->module;
    char name[512];
    uint64_t off = 0;
    if (symbol_at(p->module, p->addr, p->base, name, sizeof name, &off)) {
        demangle(name, sizeof name);
        if (off)
            snprintf(buf, size, "global %s+%llu (%s)", name, (unsigned long long)off, base);
        else
            snprintf(buf, size, "global %s (%s)", name, base);
    } else {
        snprintf(buf, size, "the data of %s at +0x%llx", base,
                 (unsigned long long)(p->addr - p->base));
    }
}

int hx_keep_notes(const struct hx_keep *k, pid_t pid, int born_run, struct rpt_session *s)
{
    if (k->n == 0) return LG_OK;
    char *maps_text = hx_read_maps(pid);
    /* a Python interpreter holds its objects through its own heap: say so where no root is seen */
    char comm[64] = "", path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *cf = fopen(path, "re");
    if (cf) {
        if (!fgets(comm, sizeof comm, cf)) comm[0] = '\0';
        fclose(cf);
    }
    bool python = strncmp(comm, "python", 6) == 0;
    struct hx_maps maps;
    bool have = maps_text && hx_maps_parse(&maps, maps_text) == LG_OK;
    char **v = realloc(s->notes, (size_t)(s->n_notes + k->n) * sizeof *v);
    int rc = v ? LG_OK : LG_ENOMEM;
    if (v) s->notes = v;
    for (int i = 0; i < k->n && rc == LG_OK; i++) {
        const struct hx_keep_path *p = &k->p[i];
        char at[600], by[4096], bytes[32];
        frame_of(have ? &maps : NULL, p->stack, at, sizeof at);
        lg_fmt_bytes(bytes, sizeof bytes, (double)p->bytes);
        size_t n = 0;
        if (p->kind == HX_KEEP_NONE) {
            snprintf(by, sizeof by,
                     "no root found in the loaded objects' data and bss or the ending thread's "
                     "stack (%lld words scanned): %s",
                     (long long)k->words,
                     python ? "in a Python program the holder is a Python object, which this "
                              "scan cannot see (the python: notes name it: exec loads the "
                              "binding into a Python CMD unless --no-python or LEAKGATE_PY=0; "
                              "a CMD that runs Python through a wrapper needs "
                              "leakgate.session() or python -m leakgate PROG)"
                            : "held from another thread's stack, a register, or a small block "
                              "born in another session");
        } else {
            root_of(p, by, sizeof by);
            n = strlen(by);
            for (int j = 0; j < p->n_links && n < sizeof by; j++) {
                char sz[32], fr[600];
                lg_fmt_bytes(sz, sizeof sz, (double)p->links[j].size);
                frame_of(have ? &maps : NULL, p->links[j].stack, fr, sizeof fr);
                n += (size_t)snprintf(by + n, sizeof by - n, " → %s block at %s", sz, fr);
            }
        }
        char line[5000];
        snprintf(line, sizeof line,
                 "native: %lld block%s (%s) born in session %d at %s %s kept alive by: %s",
                 (long long)p->blocks, p->blocks == 1 ? "" : "s", bytes, born_run, at,
                 p->blocks == 1 ? "is" : "are", by);
        if (!(s->notes[s->n_notes] = strdup(line)))
            rc = LG_ENOMEM;
        else
            s->n_notes++;
    }
    if (have) hx_maps_fini(&maps);
    free(maps_text);
    return rc == LG_OK ? LG_OK : lg_fail(rc, "out of memory naming the kept blocks' roots");
}
