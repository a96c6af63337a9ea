/* fuzz_suppressions.c — libFuzzer target for the suppression rules reader (`--suppressions`).
 * The input is a rules file; it must either read — and then every rule is whole, and matching it
 * against a session of leak groups, stacks and shared objects takes no more than each leaked
 * and never makes a figure negative — or fail with LG_EFORMAT naming the file and the line.
 * ASan and LSan watch every path; the run's tracker must stay empty.
 *
 *   ci/fuzz 60 fuzz_suppressions
 * Seeds: tests/data/gate/suppressions.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "lg_fuzz.h"

static struct rpt_suppressions rules;

/* A session that left two groups (one with a stack) and an object. */
static void session(struct rpt_session *s)
{
    static struct lg_stack stack = {1, (char *)"leak_256k (leaky.c:14)\nmain (leaky.c:60)"};
    static struct lg_retain retain = {NULL, "tr_new (trainer.c:55)", 1, NULL};
    static struct lg_leak_group groups[2] = {
        {.tag = "varmap/enc.w", .space = "host", .bytes = 4096, .count = 2},
        {.tag = "act/x",
         .space = "device",
         .bytes = 512,
         .count = 1,
         .n_stacks = 1,
         .stacks = &stack},
    };
    static struct lg_ref_leak refs[1] = {
        {.kind = "varmap", .name = "tft.varmap", .refs = 1, .n_retains = 1, .retains = &retain}};
    memset(s, 0, sizeof *s);
    s->groups = groups;
    s->n_groups = 2;
    s->refs = refs;
    s->n_refs = 1;
    s->leaked_host_bytes = 4096;
    s->leaked_device_bytes = 512;
    for (int c = 0; c < RPT_NCHANNELS; c++) s->absolute[c] = s->delta[c] = 8192;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    lg_fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = lg_fuzz_file(data, size);
    int rc = rpt_suppressions_load(&rules, path, "2026-06-15");
    if (rc == LG_OK) {
        for (int i = 0; i < rules.n; i++)
            if (!rules.rules[i].glob[0] || strlen(rules.rules[i].expires) != 10 ||
                !rules.rules[i].reason[0] || rules.rules[i].allow == 0)
                lg_fuzz_die("a rule read without its glob, expiry or reason");
        struct rpt_session s;
        int64_t since[2] = {0, 0};
        session(&s);
        if (rpt_suppress_session(&rules, &s, since, NULL) != LG_OK) lg_fuzz_die("matching failed");
        for (int c = 0; c < RPT_NCHANNELS; c++) {
            int64_t v;
            if (rpt_session_value(&s, (enum rpt_channel)c, &v) && v < 0)
                lg_fuzz_die("a rule took more than was leaked");
        }
        free(s.suppressed);
    } else if (rc != LG_EFORMAT) {
        lg_fuzz_die("refused, but not as malformed input");
    } else if (!strstr(lg_errmsg(), path) || !strstr(lg_errmsg(), ":")) {
        lg_fuzz_die("the message does not name the file and line");
    }
    lg_fuzz_check_tracker();
    return 0;
}
