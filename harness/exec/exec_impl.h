/* exec_impl.h — `leakgate exec` (the parent side) and the heap-profile attribution it shares
 * with `leakgate run`; private to harness/exec/ (the rest of harness/ sees exec.h).
 *
 *   exec_cli.c    options and usage
 *   exec_spawn.c  finding CMD and checking it can carry the agent (ELF, static, setuid), the
 *                 agent's environment, fork and exec
 *   exec_py.c     a Python CMD: the binding's sitecustomize on its PYTHONPATH (--no-python)
 *   exec.c        the run: messages from the agent, sessions, the verdict, the reports
 *   exec_msg.c    a SESSION message into a struct rpt_session
 *   exec_sym.c    symbolising another process's addresses (its maps, ELF headers, addr2line)
 *   exec_prof.c   jemalloc heap profiles: loading, diffing by stack, the estimate and its
 *                 uncertainty, when to arm; in-process for `run` as well
 *   exec_tree.c   CMD's process tree at each session's end: its descendants' RSS from /proc
 */
#ifndef LG_HX_EXEC_IMPL_H
#define LG_HX_EXEC_IMPL_H

#include <stdio.h>
#include <sys/types.h>

#include "exec.h"
#include "hx_impl.h"
#include "lga_wire.h"

/* ---- options (exec_cli.c) ---------------------------------------------------------------- */

/* heap profile sampling: one sample per 2^17 = 128 KiB allocated, on average */
#define HX_EXEC_DEFAULT_LG_SAMPLE 17
/* the series holds --sessions + --warmup + this many sessions at first, and doubles whenever a
 * program runs more: every session is judged (16 figures a session: 1 MiB per 65,536) */
#define HX_EXEC_SERIES_START 1024

struct hx_exec_options {
    struct hx_options o; /* the options shared with run (--warmup, --out, --budgets, ...) */
    char marker[1024];   /* --session-marker REGEX ("" : sessions from the API) */
    int lg_sample;       /* --prof-sample LG: mean bytes between samples is 2^LG */
    bool tcache;         /* --tcache: keep jemalloc's thread caches (faster, less exact) */
    bool prof;           /* heap profiling available (off with --no-prof) */
    char agent[1024];    /* the agent library (found next to leakgate, or --agent PATH) */
    bool python;         /* load the Python binding into a Python CMD (off with --no-python) */
    char py_site[4096];  /* its site directory, first on CMD's PYTHONPATH ("" : not loaded) */
    char **argv;         /* CMD ARGS..., NULL-terminated (main's argv) */
};

/* ---- spawning (exec_spawn.c) ------------------------------------------------------------- */

struct hx_child {
    pid_t pid;
    int fd;           /* the parent's end of the socket */
    char path[4096];  /* CMD resolved on PATH */
    char elf[4096];   /* the ELF program that runs: path, or a #! script's interpreter */
    bool cuda_static; /* CMD carries CUDA's static runtime: its device memory is not seen */
};
/* Finds CMD, checks it can run the agent, finds the agent; LG_EINVAL (exit 2) with a message
 * naming what is wrong: not found, not executable, statically linked, setuid/setgid. */
int hx_exec_check(struct hx_exec_options *eo, struct hx_child *ch);
/* Forks and execs CMD with the agent preloaded and its socket; LG_EINVAL/LG_EIO with a message
 * when the exec itself failed. */
int hx_exec_spawn(const struct hx_exec_options *eo, struct hx_child *ch);
/* "exited with status 3", "was killed by signal 11 (Segmentation fault)" into buf. */
void hx_exec_describe_status(int status, char *buf, size_t size);
/* The MALLOC_CONF the child gets: the agent's options, then the user's own (which win). */
void hx_exec_malloc_conf(const struct hx_exec_options *eo, const char *user, char *buf,
                         size_t size);

/* ---- a Python CMD (exec_py.c) ------------------------------------------------------------ */

/* Whether CMD (argv0 as given, ch's resolved paths) is a CPython interpreter: python,
 * python3, python3.11, by name or by the real path of its file or of its #! interpreter. */
bool hx_exec_is_python(const char *argv0, const struct hx_child *ch);
/* Sets eo->py_site when CMD is Python and the binding is wanted (--no-python, LEAKGATE_PY=0)
 * and found; says so on stderr when it is wanted but not found. */
void hx_exec_python_site(struct hx_exec_options *eo, const struct hx_child *ch);
/* In the child: eo->py_site first on PYTHONPATH, the user's entries after it; 0, or -1 with
 * errno set. */
int hx_exec_python_env(const struct hx_exec_options *eo);

/* ---- messages (exec_msg.c) ---------------------------------------------------------------- */

/* The agent's retention paths (agent/lga_keep.c): for the stacks that kept the most bytes of
 * the recorded session, one block's chain from its root (exec_keep.c names them). */
#define HX_KEEP_PATHS 3
#define HX_KEEP_LINKS 8
enum { HX_KEEP_NONE, HX_KEEP_DATA, HX_KEEP_STACK }; /* where a chain starts */
struct hx_keep_path {
    int64_t blocks, bytes; /* the kept blocks of this stack */
    char *stack;           /* their allocation stack, raw */
    uint32_t kind;         /* HX_KEEP_* */
    char module[512];      /* the root's module (HX_KEEP_DATA) */
    uint64_t addr, base;   /* the root word's address, the module's load address */
    int n_links;
    struct {
        int64_t size;
        char *stack;        /* raw */
    } links[HX_KEEP_LINKS]; /* from the root's block to a kept one */
};
struct hx_keep {
    int born;      /* the agent's index of the recorded session */
    int64_t words; /* words the scan read */
    int n;
    struct hx_keep_path p[HX_KEEP_PATHS];
};
struct lga_dec;
/* Reads the paths (none when the agent sent none); LG_EFORMAT on a malformed section. */
int hx_keep_get(struct lga_dec *d, struct hx_keep *k);
void hx_keep_fini(struct hx_keep *k);
/* The paths as lines of s's notes, named through CMD's map and symbol tables; born_run is the
 * recorded session's index in the run. */
int hx_keep_notes(const struct hx_keep *k, pid_t pid, int born_run, struct rpt_session *s);

/* The symbol of an ELF image (img, len bytes: a module's file) whose object holds the runtime
 * address addr, the module loaded at base (its offset-0 mapping): its name into name and the
 * offset into it. 1 when found, 0 otherwise; any bytes are safe (tests/fuzz/fuzz_elf.c). */
int hx_elf_symbol(const unsigned char *img, size_t len, uint64_t addr, uint64_t base, char *name,
                  size_t size, uint64_t *off);

/* What a SESSION message carries besides the channels. */
struct hx_exec_msg {
    int agent_index;     /* the agent's count of sessions in its process image */
    uint32_t used;       /* LGA_USED_* */
    char dump[600];      /* the heap profile it wrote ("" none) */
    char marker[512];    /* the output line that ended it ("" for the API) */
    bool has_begin;      /* begin[] holds the channels at the session's begin */
    bool at_exit;        /* ended by the program's exit (LGA_SESSION_AT_EXIT) */
    bool census_capped;  /* the agent's arena pool is full: later sessions are not counted */
    struct hx_keep keep; /* retention paths (hx_keep_fini) */
    int64_t begin[RPT_NCHANNELS];
};
/* Decodes a SESSION payload into s (index, warm-up and the deltas are the caller's), reading
 * the stacks' addresses through maps (the child's /proc/PID/maps text; NULL leaves them raw).
 * LG_EFORMAT on a malformed message. s is finished with rpt_session_fini either way. */
int hx_exec_decode_session(const unsigned char *p, size_t n, const char *maps,
                           struct rpt_session *s, struct hx_exec_msg *m);

/* ---- symbols (exec_sym.c) ----------------------------------------------------------------- */

struct hx_module {
    uintptr_t start, end, offset;
    char *path; /* borrowed from the maps text copy */
};
struct hx_maps {
    char *text;          /* owned copy */
    struct hx_module *v; /* executable mappings with a file */
    size_t n;
};
/* Parses /proc/PID/maps text (or a heap profile's MAPPED_LIBRARIES); finished with
 * hx_maps_fini. */
int hx_maps_parse(struct hx_maps *m, const char *text);
void hx_maps_fini(struct hx_maps *m);
/* Reads /proc/PID/maps into a new string (the caller frees it); NULL when it cannot. */
char *hx_read_maps(pid_t pid);

/* One symbolised frame. */
struct hx_frame {
    char text[600];   /* "leak_256k (leaky.c:14)", "fn (libx.so+0x1234)", "0x7f... (?)" */
    char module[256]; /* the file's base name ("leaky", "libjemalloc.so.2") */
    bool is_main;     /* the program's main: nothing above it is worth showing */
};
/* The frames of one address: the function it is in and, when that was inlined, its callers
 * up to the real function (addr2line -i order). */
struct hx_frames {
    struct hx_frame *v;
    int n, cap;
};
/* Symbolises pcs[0..n) into (*out)[i] for each address; freed with hx_frames_free(*out, n). */
int hx_symbolize_each(const struct hx_maps *m, const uintptr_t *pcs, int n, struct hx_frames **out);
void hx_frames_free(struct hx_frames *per, int n);
/* Symbolises return addresses pcs[0..n) (each looked up at pc - 1) through maps, inlined
 * functions expanded (so *out may hold more frames than n); *out is freed with free(). One
 * addr2line call per module. LG_ENOMEM only: what cannot be named is shown as an address. */
int hx_symbolize(const struct hx_maps *m, const uintptr_t *pcs, int n, struct hx_frame **out,
                 int *n_out);
/* The text form of a stack: frames one a line, innermost first, leading frames in the
 * allocator (jemalloc, the agent, libstdc++'s operator new) dropped, nothing above main.
 * A new string (the caller frees it), NULL on ENOMEM. */
char *hx_frames_text(const struct hx_frame *f, int n);
/* A raw tracker stack ("0x...\n" lines) symbolised through maps: a new string or NULL. */
char *hx_symbolize_text(const struct hx_maps *m, const char *raw);

/* ---- the census's names (exec_census.c) ----------------------------------------------------- */

#define HX_CENSUS_NAMES 16
struct hx_census_names { /* raw stacks already symbolised, and their texts */
    int n, next;
    struct {
        char *raw, *text;
    } v[HX_CENSUS_NAMES];
};
/* Replaces the raw stacks s's census entries carry (agent/lga_big.c) by their text, through
 * CMD's map (pid, waiting for our reply); entries born before first_measured lose theirs. */
void hx_census_names_apply(struct hx_census_names *cn, pid_t pid, int first_measured,
                           struct rpt_session *s);
void hx_census_names_fini(struct hx_census_names *cn);

/* ---- the process tree (exec_tree.c) -------------------------------------------------------- */

#define HX_TREE_MAX 256 /* descendants read at one session's end; more are not listed */
/* Reads root's descendants (not root) from /proc into s->procs, parents before children, each
 * with its command, RSS and whether the file named like `agent` (a path) is mapped in it; sets
 * s->procs_walked. LG_EIO (no /proc) or LG_ENOMEM with a message; s is finished with
 * rpt_session_fini either way. */
int hx_tree_read(pid_t root, const char *agent, struct rpt_session *s);

/* Under --stacks each child dumps its heap profile at each new high of its mapped memory to
 * PREFIX.PID.SEQ.uN.heap (agent/lga_init.c); this names where each leaking child of pv grew:
 * its last dump diffed against its first (prof_sample: the mean bytes between samples), the top
 * stack appended to pv->why. Nothing for a child without dumps. */
#define HX_CHILD_PROF "child" /* PREFIX's file name, in the heap profiles' directory */
void hx_tree_name(const char *dir, int64_t prof_sample, struct rpt_procs_verdict *pv);
/* Removes each child's dumps in dir but its first and its last (a Python worker dumps hundreds
 * of half-megabyte profiles as it grows): called as each session ends. */
void hx_tree_prune(const char *dir);

/* ---- a Python child's lines (exec_child_py.c) ---------------------------------------------- */

/* Under --stacks a Python child traces itself (bindings/python/src/leakgate/_child.py) and writes
 * PREFIX.PID.py: the growth since the last warm-up by the line of its own code. */
struct hx_child_py {
    int from, to, frames;    /* sessions ended at its base and at its look; frames traced */
    long long bytes, blocks; /* its top line's growth between them */
    char where[320];         /* "loader.py:14 in Items.__getitem__"; "" when nothing grew */
};
/* Writes dir/PREFIX.sessions whole: the count of sessions ended (each child's clock), then
 * "arm PID..." the children whose series leak so far (a Python one among them traces itself). */
void hx_child_py_mark(const char *dir, int ended, const int *leaking, int n);
/* pid's file in dir into py: 1 named, 0 none (no file, nothing grew), -1 with why set (a file
 * that cannot be read, or not in its format). */
int hx_child_py_read(const char *dir, int pid, struct hx_child_py *py, char *why, size_t wsize);
/* Appends each leaking child's top Python line to pv->why (before its native stack). */
void hx_child_py_name(const char *dir, struct rpt_procs_verdict *pv);

/* The processes of CMD's tree that said they began (agent/lga_init.c appends "PID PPID" to
 * LEAKGATE_AGENT_TREE at each fork and each image's start), read as sessions end: a child is
 * pending until a reading of the tree finds it (it is then the tree's) or /proc has it no more
 * (it began and ended within the session: counted in s->procs_within). */
struct hx_births {
    char path[720]; /* the file ("" : not counting) */
    long at;        /* bytes of it read so far */
    int *pending;   /* owned */
    int n, cap;
    int *own; /* owned: leakgate's own processes ("-PID"): neither pending nor CMD's children */
    int n_own, cap_own;
};
/* Creates DIR/tree.log and puts it in this process's environment for CMD to inherit;
 * LG_EIO with a message when it cannot (b then counts nothing). Finished with hx_births_fini. */
int hx_births_init(struct hx_births *b, const char *dir);
/* Reads what began since the last call, takes leakgate's own processes out of s->procs and
 * settles the pending against it. */
void hx_births_session(struct hx_births *b, struct rpt_session *s);
void hx_births_fini(struct hx_births *b); /* removes the file */

/* ---- heap profiles (exec_prof.c; the part `run` uses is in exec.h) ------------------------- */

/* Whether the sessions so far show growth worth attributing: a statistical host channel whose
 * verdict on them is leak, with its latest delta above its floor. Judged after each of the
 * first 64 measured sessions, then 16 times per doubling (false in between). */
bool hx_prof_flagged(const struct rpt_series *ser, const struct rpt_budget *b);
/* Takes the session's dump (path, written after its snapshot): the first becomes the base;
 * later ones are diffed against it into s->alloc_stacks (top growth first, symbolised with
 * the dump's own MAPPED_LIBRARIES). Warm-up dumps replace the base. */
int hx_prof_session(struct hx_prof *p, const char *dump, struct rpt_session *s);

/* ---- the command (exec.c, exec_cli.c) ------------------------------------------------------- */

/* Runs CMD under the agent and judges its sessions; LG_OK when it ran (the verdict says
 * pass/leak/inconclusive, *cmd_failed whether CMD failed: exit 4), else a status. */
int hx_exec_run(struct hx_exec_options *eo, struct rpt_verdict *v, bool *cmd_failed);

#endif
