/* exec_spawn.c — finding CMD, checking that the agent can be loaded into it, and starting it.
 *
 * The agent reaches CMD through LD_PRELOAD, which the dynamic linker honours only in a
 * dynamically linked program that does not change credentials at exec. So, before anything
 * runs: CMD is looked up on PATH (as execvp would), must be executable, and is read as an ELF
 * file — no PT_INTERP means statically linked (no dynamic linker, nothing to preload); a
 * set-user-ID or set-group-ID file that would change this process's credentials runs in
 * secure-execution mode, where LD_PRELOAD is ignored. A script (#!) is checked through its
 * interpreter. Each refusal is a usage error (exit 2) that says why and what to do.
 *
 * The child gets: LD_PRELOAD with the agent first (the user's own preloads after it),
 * LEAKGATE_AGENT_FD (its end of the socket, the only descriptor leakgate adds),
 * LEAKGATE_AGENT_PID (its own pid: descendants are inert), MALLOC_CONF (heap profiling
 * available but off, the sample interval, thread caches off; the user's MALLOC_CONF appended,
 * so their options win), PYTHONUNBUFFERED=1 (Python's print reaches write() at once, so a
 * marker line is seen when it is written) and LEAKGATE_WARMUP (--warmup: where a binding's own
 * attribution, such as Python's tracemalloc, takes its baseline); a Python CMD also gets the
 * binding's site directory first on PYTHONPATH (exec_py.c).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec_impl.h"

/* Resolves name as execvp would; LG_EINVAL with "command not found" when it is nowhere. */
static int find_on_path(const char *name, char *out, size_t size)
{
    if (strchr(name, '/')) {
        if (lg_strlcpy(out, name, size)) return lg_fail(LG_EINVAL, "%s: path too long", name);
        if (access(out, F_OK) != 0) return lg_fail(LG_EINVAL, "%s: no such file", name);
        return LG_OK;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char dir[2048];
        if (len == 0)
            lg_strlcpy(dir, ".", sizeof dir);
        else if (len < sizeof dir)
            memcpy(dir, p, len), dir[len] = '\0';
        else
            dir[0] = '\0';
        if (dir[0] && !lg_snprintf(out, size, "%s/%s", dir, name) && access(out, X_OK) == 0) {
            struct stat st;
            if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) return LG_OK;
        }
        p += len + (colon ? 1 : 0);
    }
    return lg_fail(LG_EINVAL, "%s: command not found (not on PATH)", name);
}

/* What an ELF file says about preloading: LG_OK for a dynamically linked program. */
static int check_elf(const char *path, int fd, const char *shown)
{
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || eh.e_ident[EI_CLASS] != ELFCLASS64)
        return lg_fail(LG_EINVAL, "%s: not a 64-bit ELF program", shown);
    if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
        return lg_fail(LG_EINVAL, "%s: an ELF file that is not a program", shown);
    if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096)
        return lg_fail(LG_EINVAL, "%s: unreadable ELF program headers", shown);
    for (int i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) !=
            (ssize_t)sizeof ph)
            return lg_fail(LG_EINVAL, "%s: unreadable ELF program headers", shown);
        if (ph.p_type == PT_INTERP) return LG_OK;
    }
    (void)path;
    return lg_fail(LG_EINVAL,
                   "%s is statically linked: it has no dynamic linker to preload leakgate's agent "
                   "into. Link it dynamically (the default of cc, or -C target-feature=-crt-static "
                   "for Rust on musl) to run it under leakgate exec",
                   shown);
}

/* Whether executing st would change this process's credentials (secure-execution mode). */
static bool changes_credentials(const struct stat *st)
{
    return ((st->st_mode & S_ISUID) && st->st_uid != geteuid()) ||
           ((st->st_mode & S_ISGID) && st->st_gid != getegid());
}

/* Checks path (and, for a script, its interpreter, up to 4 levels); the ELF program that runs
 * into elf (4096 bytes). */
static int check_program(const char *path, const char *shown, int depth, char *elf)
{
    struct stat st;
    if (stat(path, &st) != 0) return lg_fail(LG_EINVAL, "%s: %s", shown, strerror(errno));
    if (!S_ISREG(st.st_mode)) return lg_fail(LG_EINVAL, "%s: not a regular file", shown);
    if (access(path, X_OK) != 0)
        return lg_fail(LG_EINVAL, "%s: not executable (%s)", shown, strerror(errno));
    if (changes_credentials(&st))
        return lg_fail(LG_EINVAL,
                       "%s is set-%s-ID: it would run in secure-execution mode, where the dynamic "
                       "linker ignores LD_PRELOAD, so leakgate's agent could not load. Run a copy "
                       "without the bit, or run leakgate as its owner",
                       shown, (st.st_mode & S_ISUID) && st.st_uid != geteuid() ? "user" : "group");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return lg_fail(LG_EINVAL, "%s: cannot be read (%s)", shown, strerror(errno));
    char head[256] = {0};
    ssize_t k = pread(fd, head, sizeof head - 1, 0);
    int rc;
    if (k >= 4 && memcmp(head, ELFMAG, SELFMAG) == 0) {
        rc = check_elf(path, fd, shown);
        if (rc == LG_OK) lg_strlcpy(elf, path, 4096);
    } else if (k >= 2 && head[0] == '#' && head[1] == '!') {
        char *interp = head + 2, *end;
        while (*interp == ' ' || *interp == '\t') interp++;
        end = interp + strcspn(interp, " \t\r\n");
        char *arg = end + strspn(end, " \t");
        *end = '\0';
        char resolved[4096];
        rc = depth >= 4 ? lg_fail(LG_EINVAL, "%s: too many #! interpreters", shown) : LG_OK;
        /* "#!/usr/bin/env python3": the program is the first argument, found on PATH */
        if (rc == LG_OK && !strcmp(interp, "/usr/bin/env") && *arg && *arg != '\n') {
            arg[strcspn(arg, " \t\r\n")] = '\0';
            rc = find_on_path(arg, resolved, sizeof resolved);
        } else if (rc == LG_OK) {
            rc = find_on_path(interp, resolved, sizeof resolved);
        }
        if (rc == LG_OK) rc = check_program(resolved, resolved, depth + 1, elf);
        if (rc != LG_OK)
            lg_fail_ctx(rc, "%s runs through an interpreter that cannot carry the agent: ", shown);
    } else {
        rc = lg_fail(LG_EINVAL, "%s: neither an ELF program nor a #! script", shown);
    }
    close(fd);
    return rc;
}

/* The agent: --agent, LEAKGATE_AGENT, then beside an installed leakgate, then the build tree. */
static int find_agent(struct hx_exec_options *eo)
{
    if (eo->agent[0])
        return access(eo->agent, R_OK) == 0
                   ? LG_OK
                   : lg_fail(LG_EINVAL, "--agent %s: %s", eo->agent, strerror(errno));
    const char *env = getenv("LEAKGATE_AGENT");
    if (env && *env) {
        if (lg_strlcpy(eo->agent, env, sizeof eo->agent) || access(eo->agent, R_OK) != 0)
            return lg_fail(LG_EINVAL, "LEAKGATE_AGENT=%s: not readable", env);
        return LG_OK;
    }
    char self[2048];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) {
        self[k] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) *slash = '\0';
        if (!lg_snprintf(eo->agent, sizeof eo->agent, "%s/%s", self, LG_AGENT_FROM_BIN) &&
            access(eo->agent, R_OK) == 0)
            return LG_OK;
    }
    if (lg_strlcpy(eo->agent, LG_AGENT_BUILD_PATH, sizeof eo->agent) == 0 &&
        access(eo->agent, R_OK) == 0)
        return LG_OK;
    return lg_fail(LG_EINVAL,
                   "leakgate's agent (libleakgate-agent.so) was found neither beside this "
                   "leakgate (%s/%s) nor in its build tree (%s): reinstall leakgate, or give "
                   "--agent PATH",
                   k > 0 ? self : "?", LG_AGENT_FROM_BIN, LG_AGENT_BUILD_PATH);
}

/* ---- CUDA's static runtime ---------------------------------------------------------------- */

/* The section header ndx of the ELF image at (b, size), or NULL when outside it. */
static const Elf64_Shdr *section(const unsigned char *b, size_t size, const Elf64_Ehdr *eh,
                                 unsigned ndx)
{
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || ndx >= eh->e_shnum || eh->e_shoff > size ||
        (size - eh->e_shoff) / sizeof(Elf64_Shdr) <= ndx)
        return NULL;
    return (const Elf64_Shdr *)(b + eh->e_shoff) + ndx;
}

/* What a symbol table (SHT_SYMTAB or SHT_DYNSYM, its string table linked) says of the CUDA
 * runtime: *defines when it defines one of the runtime's entry points, *imports when it takes
 * __cudaRegisterFatBinary from a shared library. */
static void scan_symbols(const unsigned char *b, size_t size, const Elf64_Ehdr *eh,
                         const Elf64_Shdr *sh, bool *defines, bool *imports)
{
    static const char *const runtime[] = {"cudaMalloc", "cudaMallocAsync",
                                          "__cudaRegisterFatBinary", "cudaLaunchKernel", NULL};
    const Elf64_Shdr *str = section(b, size, eh, sh->sh_link);
    if (!str || sh->sh_offset > size || sh->sh_size > size - sh->sh_offset ||
        str->sh_offset > size || str->sh_size > size - str->sh_offset ||
        sh->sh_entsize != sizeof(Elf64_Sym))
        return;
    const Elf64_Sym *sym = (const Elf64_Sym *)(b + sh->sh_offset);
    const char *names = (const char *)(b + str->sh_offset);
    for (size_t i = 0; i < sh->sh_size / sizeof *sym; i++) {
        if (sym[i].st_name >= str->sh_size) continue;
        const char *name = names + sym[i].st_name;
        if (name[0] != 'c' && name[0] != '_') continue;
        if (strnlen(name, str->sh_size - sym[i].st_name) == str->sh_size - sym[i].st_name)
            continue; /* not terminated inside its table */
        for (const char *const *r = runtime; *r; r++) {
            if (strcmp(name, *r)) continue;
            if (sym[i].st_shndx != SHN_UNDEF)
                *defines = true;
            else if (!strcmp(name, "__cudaRegisterFatBinary"))
                *imports = true;
        }
    }
}

/* Whether the ELF program at path carries CUDA's static runtime (libcudart_static, nvcc's
 * default): its symbol tables define the runtime's entry points, or (stripped) it has device
 * code (.nv_fatbin) that it does not register through a shared libcudart. Its cudaMalloc calls
 * stay inside the program, where the agent's interposers never see them. */
static bool has_static_cudart(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    bool defines = false, imports = false, fatbin = false;
    if (fd < 0) return false;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return false;
    }
    size_t size = (size_t)st.st_size;
    const unsigned char *b = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (b == MAP_FAILED) return false;
    Elf64_Ehdr eh;
    memcpy(&eh, b, sizeof eh);
    const Elf64_Shdr *names = section(b, size, &eh, eh.e_shstrndx);
    for (unsigned i = 0; memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && i < eh.e_shnum; i++) {
        const Elf64_Shdr *sh = section(b, size, &eh, i);
        if (!sh) break;
        if (sh->sh_type == SHT_SYMTAB || sh->sh_type == SHT_DYNSYM)
            scan_symbols(b, size, &eh, sh, &defines, &imports);
        if (names && names->sh_offset < size && sh->sh_name < names->sh_size &&
            names->sh_size <= size - names->sh_offset) {
            const char *n = (const char *)b + names->sh_offset + sh->sh_name;
            size_t left = names->sh_size - sh->sh_name;
            fatbin |= strnlen(n, left) < left &&
                      (!strcmp(n, ".nv_fatbin") || !strcmp(n, ".nvFatBinSegment"));
        }
    }
    munmap((void *)b, size);
    return defines || (fatbin && !imports);
}

int hx_exec_check(struct hx_exec_options *eo, struct hx_child *ch)
{
    memset(ch, 0, sizeof *ch);
    ch->pid = -1;
    ch->fd = -1;
    if (!eo->argv || !eo->argv[0])
        return lg_fail(LG_EINVAL, "no command to run: leakgate exec [options] -- CMD [ARGS...]");
    int rc = find_on_path(eo->argv[0], ch->path, sizeof ch->path);
    if (rc == LG_OK) rc = check_program(ch->path, eo->argv[0], 0, ch->elf);
    if (rc == LG_OK) ch->cuda_static = has_static_cudart(ch->path);
    if (rc == LG_OK) rc = find_agent(eo);
    if (rc == LG_OK) hx_exec_python_site(eo, ch);
#ifdef LG_AGENT_JEMALLOC
    if (rc == LG_OK && access(LG_AGENT_JEMALLOC, R_OK) != 0)
        rc = lg_fail(LG_EINVAL,
                     "%s (the jemalloc leakgate's agent was linked with) is missing: "
                     "apt-get install libjemalloc2",
                     LG_AGENT_JEMALLOC);
#endif
    return rc;
}

void hx_exec_malloc_conf(const struct hx_exec_options *eo, const char *user, char *buf, size_t size)
{
    snprintf(buf, size, "prof:%s,prof_active:false,lg_prof_sample:%d%s%s%s",
             eo->prof ? "true" : "false", eo->lg_sample, eo->tcache ? "" : ",tcache:false",
             user && *user ? "," : "", user ? user : "");
}

void hx_exec_describe_status(int status, char *buf, size_t size)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "was killed by signal %d (%s)%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
    else
        snprintf(buf, size, "ended with wait status 0x%x", status);
}

/* In the child: the environment, then exec; on failure errno goes up the pipe. The child dies
 * with leakgate (PR_SET_PDEATHSIG, kept across exec): killed with SIGKILL, leakgate leaves no
 * orphan measuring into a socket nobody reads. */
static void child(const struct hx_exec_options *eo, const struct hx_child *ch, int sock,
                  int err_pipe, pid_t parent)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
    char v[8192], fd_s[16], pid_s[24], warm_s[16];
    const char *pre = getenv("LD_PRELOAD");
    snprintf(v, sizeof v, "%s%s%s", eo->agent, pre && *pre ? ":" : "", pre ? pre : "");
    snprintf(fd_s, sizeof fd_s, "%d", sock);
    snprintf(pid_s, sizeof pid_s, "%d", (int)getpid());
    snprintf(warm_s, sizeof warm_s, "%d", eo->o.warmup); /* for the bindings' own baselines */
    int flags = fcntl(sock, F_GETFD);
    int ok = flags >= 0 && fcntl(sock, F_SETFD, flags & ~FD_CLOEXEC) == 0 &&
             setenv("LD_PRELOAD", v, 1) == 0 && setenv("LEAKGATE_AGENT_FD", fd_s, 1) == 0 &&
             setenv("LEAKGATE_AGENT_PID", pid_s, 1) == 0 &&
             setenv("PYTHONUNBUFFERED", "1", 1) == 0 && setenv("LEAKGATE_WARMUP", warm_s, 1) == 0;
    char conf[4096];
    hx_exec_malloc_conf(eo, getenv("MALLOC_CONF"), conf, sizeof conf);
    ok = ok && setenv("MALLOC_CONF", conf, 1) == 0 && hx_exec_python_env(eo) == 0;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (ok) execv(ch->path, eo->argv);
    int e = errno;
    if (write(err_pipe, &e, sizeof e) < 0) { /* the parent then sees a plain exit 127 */
    }
    _exit(127);
}

int hx_exec_spawn(const struct hx_exec_options *eo, struct hx_child *ch)
{
    int sv[2] = {-1, -1}, ep[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(ep, O_CLOEXEC) != 0) {
        int rc = lg_fail(LG_EIO, "cannot make the agent's socket: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (sv[i] >= 0) close(sv[i]);
            if (ep[i] >= 0) close(ep[i]);
        }
        return rc;
    }
    fflush(NULL);
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        int rc = lg_fail(LG_EIO, "cannot fork: %s", strerror(errno));
        close(sv[0]), close(sv[1]), close(ep[0]), close(ep[1]);
        return rc;
    }
    if (pid == 0) {
        close(sv[0]);
        close(ep[0]);
        child(eo, ch, sv[1], ep[1], parent);
    }
    close(sv[1]);
    close(ep[1]);
    int e = 0;
    ssize_t k;
    do k = read(ep[0], &e, sizeof e);
    while (k < 0 && errno == EINTR);
    close(ep[0]);
    if (k == (ssize_t)sizeof e) { /* the exec failed: the child is gone */
        waitpid(pid, NULL, 0);
        close(sv[0]);
        return lg_fail(e == ENOENT || e == EACCES || e == ENOEXEC ? LG_EINVAL : LG_EIO,
                       "cannot run %s: %s", ch->path, strerror(e));
    }
    ch->pid = pid;
    ch->fd = sv[0];
    return LG_OK;
}
