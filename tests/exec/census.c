/* census.c — small leaks and their clean twins for exec's exact census (issue 33, item 2): each
 * shape keeps (or does not keep) untagged blocks across the sessions it runs through the
 * leakgate.h API; the census must count the first exactly and keep quiet on the others.
 *
 *   exec_census SHAPE SESSIONS
 *
 *   block64     one 64-byte block kept every session (keep_block)
 *   trickle     three blocks of 1 KiB kept every session
 *   warm-cache  a cache of 200 blocks filled in the first session (the warm-up), kept: clean
 *   free-list   nodes taken from and returned to the program's own free list: clean
 *   one-session a 4 KiB buffer that lives one session and is freed in the next: clean
 *   realloc     a buffer grown by realloc in place and moved, then freed: clean
 *   clean       allocates and frees: clean
 *   heavy       malloc-heavy work (the census's cost: tests/bench/census_cost.sh), clean
 *   heavy-big   the same with big blocks (≥ 256 KiB, whose stacks the agent takes at birth):
 *               a 1 MiB block kept from the warm-up, so every free looks for a big block, and
 *               a 512 KiB buffer made and freed every round; clean after the warm-up
 *   heavy-leak  malloc-heavy work that keeps one 64-byte block a session (what naming the root
 *               costs: tests/bench/keep_cost.sh)
 */
#include <leakgate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *census_kept[1 << 16]; /* reachable, like the real thing (and not optimised away) */
static int n_kept;

__attribute__((noinline)) void keep_block(size_t n)
{
    char *p = malloc(n);
    if (!p) exit(3);
    memset(p, 0x5a, n);
    census_kept[n_kept++ % (1 << 16)] = p;
}

/* Work that allocates and frees (the sawtooth of a healthy session); rounds of it. */
__attribute__((noinline)) static double work(int s, int rounds)
{
    double sum = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < 100; i++) {
            size_t n = 16 + (size_t)((i * 7919 + s * 104729 + r * 31) % 4096);
            char *v = malloc(n);
            if (!v) exit(3);
            v[0] = (char)i;
            v[n - 1] = (char)s;
            sum += v[0] + v[n - 1];
            free(v);
        }
    return sum;
}

struct node {
    struct node *next;
    char payload[120];
};
static struct node *free_nodes;

static struct node *node_get(void)
{
    struct node *n = free_nodes;
    if (n) {
        free_nodes = n->next;
        return n;
    }
    n = malloc(sizeof *n);
    if (!n) exit(3);
    return n;
}
static void node_put(struct node *n)
{
    n->next = free_nodes;
    free_nodes = n;
}

static void *one_session; /* the previous session's buffer */
static char *grown;

static void shape(const char *name, int s)
{
    if (!strcmp(name, "block64")) {
        keep_block(64);
    } else if (!strcmp(name, "trickle")) {
        for (int i = 0; i < 3; i++) keep_block(1024);
    } else if (!strcmp(name, "warm-cache")) {
        if (s == 0)
            for (int i = 0; i < 200; i++) keep_block(256);
    } else if (!strcmp(name, "free-list")) {
        struct node *held[64];
        for (int i = 0; i < 64; i++) held[i] = node_get();
        for (int i = 0; i < 64; i++) node_put(held[i]);
    } else if (!strcmp(name, "one-session")) {
        free(one_session);
        one_session = malloc(4096);
        if (!one_session) exit(3);
        memset(one_session, 1, 4096);
    } else if (!strcmp(name, "realloc")) {
        grown = malloc(100);
        for (size_t n = 200; n < (1u << 20); n *= 2)
            if (!(grown = realloc(grown, n))) exit(3);
        free(grown);
    } else if (!strcmp(name, "heavy")) {
        (void)work(s, 2000);
    } else if (!strcmp(name, "heavy-leak")) {
        (void)work(s, 2000);
        keep_block(64);
    } else if (!strcmp(name, "heavy-big")) {
        if (s == 0) keep_block(1 << 20);
        for (int r = 0; r < 200; r++) {
            char *big = malloc(512 << 10);
            if (!big) exit(3);
            big[r] = (char)r;
            (void)work(s + r, 10);
            free(big);
        }
    } else if (strcmp(name, "clean")) {
        fprintf(stderr, "exec_census: unknown shape %s\n", name);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: exec_census SHAPE SESSIONS\n");
        return 2;
    }
    int sessions = atoi(argv[2]);
    double total = 0;
    for (int s = 0; s < sessions; s++) {
        if (leakgate_session_begin() != LEAKGATE_OK) return 10;
        total += work(s, 1);
        shape(argv[1], s);
        if (leakgate_session_end() != LEAKGATE_OK) return 11;
    }
    printf("exec_census %s: %d sessions (%g)\n", argv[1], sessions, total);
    return 0;
}
