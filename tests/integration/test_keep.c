/* test_keep.c — who keeps it (issue 41, docs/exec.md "Who keeps it"): under exec, once the
 * census calls a leak, the kept blocks of one session are traced to their root, and the root is
 * named in the program's words — a C global, a chain through the heap, a local of main, a C++
 * static holding a shared_ptr cycle, a Rust static holding an Arc twice; the clean twins get no
 * path at all. The programs are tests/exec/keep.c, keep.cc and keep.rs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"
#include "lg_test.h"

TestSuite(keep, .init = lg_test_setup, .fini = lg_test_teardown, .timeout = 600);

#define SESSIONS "12"

static struct lg_out keep_run(const char *name, const char *opts, const char *cmd)
{
    return lg_runf(LEAKGATE_BIN, "exec --out '%s/%s' %s -- %s", lg_test_tmpdir(), name, opts, cmd);
}

/* Exit 1 and a "native:" note that says each of says[0..n). */
static void expect_path(struct lg_out o, const char *what, const char *const *says, int n)
{
    cr_expect_eq(o.status, 1, "%s: exit %d\n%s", what, o.status, o.text);
    const char *note = strstr(o.text, "native: ");
    cr_expect(note != NULL, "%s: no retention path printed\n%s", what, o.text);
    for (int i = 0; note && i < n; i++)
        cr_expect(strstr(note, says[i]) != NULL, "%s: the path lacks \"%s\"\n%s", what, says[i],
                  o.text);
    free(o.text);
}

static void expect_no_path(struct lg_out o, const char *what)
{
    cr_expect_eq(o.status, 0, "%s: exit %d\n%s", what, o.status, o.text);
    cr_expect(strstr(o.text, "native: ") == NULL, "%s: a path on a clean twin\n%s", what, o.text);
    free(o.text);
}

Test(keep, a_c_global_array_is_named_as_the_root)
{
    const char *says[] = {"kept alive by: global keep_registry+", "(exec_keep) → 96 B block at "
                                                                  "keep_block (keep.c:"};
    expect_path(keep_run("global", "", EXEC_KEEP " global " SESSIONS), "global", says, 2);
    /* summary.md and report.html have it too */
    const char *files[] = {"global/summary.md", "global/report.html"};
    for (int i = 0; i < 2; i++) {
        char *text = lg_slurp(lg_test_tmpfile(files[i]), NULL);
        cr_assert_not_null(text, "%s", files[i]);
        cr_expect(strstr(text, "Who keeps it") && strstr(text, "global keep") &&
                      strstr(text, "registry+"),
                  "%s lacks the path:\n%s", files[i], text);
        free(text);
    }
}

Test(keep, a_chain_through_the_heap_is_followed_block_by_block)
{
    /* a list of two nodes a session, its head in a global: global → node → node */
    struct node {
        void *next;
        char payload[48];
    };
    char link[64];
    snprintf(link, sizeof link, "→ %zu B block at keep_block (keep.c:", sizeof(struct node));
    char two[160];
    snprintf(two, sizeof two, "%s%s", link, link + strlen("→ "));
    const char *says[] = {"kept alive by: global keep_lists+", link};
    struct lg_out o = keep_run("chain", "--no-reports", EXEC_KEEP " chain " SESSIONS);
    /* one of the nodes is reached through the other: two links after the global */
    char *chain = strstr(o.text, "global keep_lists+");
    cr_expect(chain && strstr(chain, link) && strstr(strstr(chain, link) + 1, "→ "),
              "a path of two blocks:\n%s", o.text);
    expect_path(o, "chain", says, 2);
}

Test(keep, a_local_of_main_is_named_as_the_stack)
{
    const char *says[] = {"kept alive by: a local on the stack of the thread that ended the "
                          "session → 128 B block at keep_block (keep.c:"};
    expect_path(keep_run("local", "--no-reports", EXEC_KEEP " local " SESSIONS), "local", says, 1);
}

Test(keep, a_chain_through_a_big_block_born_before_is_followed)
{
    /* the table (512 KiB, born in the first session) is no recorded block, but its stack was
     * taken at its birth: it is a link of the chain */
    const char *says[] = {"kept alive by: global keep_table (exec_keep) → 512.00 KiB block at "
                          "make_table (keep.c:",
                          "→ 64 B block at keep_block (keep.c:"};
    expect_path(keep_run("bridge", "--no-reports", EXEC_KEEP " bridge " SESSIONS), "bridge", says,
                2);
}

Test(keep, the_c_clean_twin_has_no_path)
{
    expect_no_path(keep_run("clean", "--no-reports", EXEC_KEEP " clean " SESSIONS), "clean");
}

Test(keep, a_cxx_static_holding_a_shared_ptr_cycle_is_named)
{
    if (!EXEC_KEEP_CXX[0]) {
        printf("SKIP: no C++ compiler at configure time\n");
        cr_skip_test("no C++ compiler");
    }
    const char *says[] = {"kept alive by: global (anonymous namespace)::g_registry+",
                          "at make_pair_cycle (keep.cc:"};
    expect_path(keep_run("cxx", "--no-reports", EXEC_KEEP_CXX " " SESSIONS), "cxx", says, 2);
    expect_no_path(keep_run("cxx-clean", "--no-reports", EXEC_KEEP_CXX " " SESSIONS " clean"),
                   "cxx clean");
}

Test(keep, a_rust_static_holding_an_arc_twice_is_named)
{
    if (!EXEC_KEEP_RUST[0]) {
        printf("SKIP: no rustc at configure time\n");
        cr_skip_test("no rustc");
    }
    const char *marker = "--no-reports --session-marker '^epoch [0-9]+ done'";
    const char *says[] = {"kept alive by: global keep::REGISTRY+", "at keep::train (keep.rs:"};
    expect_path(keep_run("rust", marker, EXEC_KEEP_RUST " " SESSIONS), "rust", says, 2);
    expect_no_path(keep_run("rust-clean", marker, EXEC_KEEP_RUST " " SESSIONS " clean"),
                   "rust clean");
}

/* The root's name comes from the module's symbol table: checked against nm, an independent
 * reader, on a small executable with a global array (the fuzz target's seed). */
Test(keep, the_symbol_of_an_address_inside_a_global_is_found_as_nm_says)
{
    char path[4200], cmd[4400];
    snprintf(path, sizeof path, "%s/tests/fuzz/elf/tiny", LG_SOURCE_DIR);
    snprintf(cmd, sizeof cmd, "nm '%s' | awk '$3 == \"keep_registry\" {print $1}'", path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    unsigned long long at = 0;
    int got = fscanf(p, "%llx", &at);
    pclose(p);
    if (got != 1) {
        printf("SKIP: no nm to read the reference from\n");
        cr_skip_test("no nm");
    }
    size_t len = 0;
    unsigned char *img = (unsigned char *)lg_slurp(path, &len);
    cr_assert_not_null(img);
    char name[64];
    uint64_t off = 99;
    /* loaded at 0x555555554000: its first PT_LOAD (vaddr 0) is mapped there */
    const uint64_t base = 0x555555554000ull;
    cr_expect_eq(hx_elf_symbol(img, len, base + at + 12, base, name, sizeof name, &off), 1);
    cr_expect_str_eq(name, "keep_registry");
    cr_expect_eq(off, 12);
    /* stripped of .symtab, the executable's own globals are not in .dynsym: not found */
    snprintf(path, sizeof path, "%s/tests/fuzz/elf/tiny-stripped", LG_SOURCE_DIR);
    free(img);
    img = (unsigned char *)lg_slurp(path, &len);
    cr_assert_not_null(img);
    cr_expect_eq(hx_elf_symbol(img, len, base + at + 12, base, name, sizeof name, &off), 0);
    /* not an ELF image at all */
    cr_expect_eq(hx_elf_symbol((const unsigned char *)"\x7f"
                                                      "ELF",
                               4, 0, 0, name, sizeof name, &off),
                 0);
    free(img);
}
