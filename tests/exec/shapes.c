/* shapes.c — the shapes of memory that stays (issue 33), one program: each keeps memory in a
 * different pattern across the sessions it runs through the leakgate.h API, so the tests can
 * hold every verdict to "returned to baseline only when it did".
 *
 *   exec_shapes SHAPE SESSIONS [BYTES]
 *
 *   last-step   96 MiB allocated in the last session only, kept
 *   kept-step   48 MiB allocated in session 6, kept to the end
 *   trickle     three blocks of 1 KiB kept every session
 *   steady4k    4 KiB kept every session
 *   steady      BYTES kept every session (ci/detection's sweep)
 *   sporadic    BYTES kept every other session (odd ones): a cache's trickle, below the budget
 *   spread      SPREAD_BLOCKS blocks of BYTES kept every session, each from a stack of its own
 *               (more stacks than a heap profile's top 16: the profiled session's promotion)
 *   late        1 MiB kept every session of the last quarter
 *   warm-cache  a 4 MiB cache filled in the first session (the warm-up), kept; clean after
 *   scratch     a 2 MiB buffer that lives one session and is freed in the next: clean
 *   clean       allocates and frees: clean
 *
 * Sessions count from 0; the first exec --warmup of them are its warm-up.
 */
#include <leakgate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024 * 1024)

void *shapes_kept[4096]; /* reachable, like the real thing (and not optimised away) */
static int n_kept;

__attribute__((noinline)) static void keep_block(size_t n)
{
    char *p = malloc(n);
    if (!p) exit(3);
    memset(p, 0x5a, n); /* touched: resident, not only reserved */
    shapes_kept[n_kept++ % 4096] = p;
}

#define SPREAD_BLOCKS 64

/* keep_block(n) under `depth` frames of its own: each depth is another allocation stack. */
__attribute__((noinline)) static void keep_at(int depth, size_t n)
{
    if (depth > 0)
        keep_at(depth - 1, n);
    else
        keep_block(n);
    __asm__ volatile("" ::: "memory"); /* no tail call: the frame stays on the stack */
}

/* Work that allocates and frees (the sawtooth of a healthy session): a list built and torn
 * down, its nodes of many sizes. */
struct node {
    struct node *next;
    size_t n;
};

__attribute__((noinline)) static size_t work(int s)
{
    struct node *head = NULL;
    for (int i = 0; i < 100; i++) {
        size_t n = sizeof(struct node) + (size_t)((i * 7919 + s * 104729) % 4096);
        struct node *x = malloc(n);
        if (!x) exit(3);
        x->n = n;
        x->next = head;
        head = x;
    }
    size_t sum = 0;
    while (head) {
        struct node *x = head->next;
        sum += head->n;
        free(head);
        head = x;
    }
    return sum;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: exec_shapes SHAPE SESSIONS [BYTES]\n");
        return 2;
    }
    const char *shape = argv[1];
    int n = atoi(argv[2]);
    size_t bytes = argc == 4 ? (size_t)strtoull(argv[3], NULL, 10) : 0;
    char *scratch = NULL;
    size_t sum = 0;
    for (int s = 0; s < n; s++) {
        if (leakgate_session_begin() != LEAKGATE_OK) return 4;
        sum += work(s);
        if (!strcmp(shape, "last-step") && s == n - 1) keep_block(96 * MiB);
        if (!strcmp(shape, "kept-step") && s == 6) keep_block(48 * MiB);
        if (!strcmp(shape, "trickle"))
            for (int k = 0; k < 3; k++) keep_block(1024);
        if (!strcmp(shape, "steady4k")) keep_block(4096);
        if (!strcmp(shape, "steady") && bytes) keep_block(bytes);
        if (!strcmp(shape, "sporadic") && bytes && s % 2) keep_block(bytes);
        if (!strcmp(shape, "spread") && bytes)
            for (int k = 0; k < SPREAD_BLOCKS; k++) keep_at(k, bytes);
        if (!strcmp(shape, "late") && s >= n - n / 4) keep_block(1 * MiB);
        if (!strcmp(shape, "warm-cache") && s == 0) keep_block(4 * MiB);
        if (!strcmp(shape, "scratch")) {
            free(scratch);
            scratch = malloc(2 * MiB);
            if (!scratch) return 3;
            memset(scratch, 1, 2 * MiB);
        }
        if (leakgate_session_end() != LEAKGATE_OK) return 4;
    }
    free(scratch);
    printf("%s: %d sessions (%zu bytes worked)\n", shape, n, sum);
    return 0;
}
