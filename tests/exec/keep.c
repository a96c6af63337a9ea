/* keep.c — who keeps a leak (issue 41): each shape keeps blocks every session through a
 * different holder, so the retention paths of `leakgate exec` can be held to the holder's name.
 *
 *   exec_keep SHAPE SESSIONS
 *
 *   global  a 96-byte block a session, kept in a global array of pointers (keep_registry)
 *   chain   a list of two nodes a session, its head kept in a global array (keep_lists):
 *           global → node → node
 *   local   a 128-byte block a session, kept in an array local to main's frame
 *   bridge  a 64-byte block a session, kept in a 512 KiB table allocated in the first session
 *           (keep_table → table → block: the chain runs through a block born long before)
 *   clean   allocates and frees: no path is printed
 */
#include <leakgate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 1024

void *keep_registry[SLOTS]; /* the holder of `global` */

struct node {
    struct node *next;
    char payload[48];
};
struct node *keep_lists[SLOTS]; /* the holder of `chain` */
void **keep_table;              /* the holder of `bridge`'s table */

__attribute__((noinline)) static void **make_table(void)
{
    void **t = calloc(512 * 1024 / sizeof(void *), sizeof(void *));
    if (!t) exit(3);
    return t;
}

__attribute__((noinline)) static void *keep_block(size_t n)
{
    char *p = malloc(n);
    if (!p) exit(3);
    memset(p, 0x5a, n);
    return p;
}

__attribute__((noinline)) static struct node *push_node(struct node *next)
{
    struct node *x = keep_block(sizeof *x);
    x->next = next;
    return x;
}

/* Work that allocates and frees: the sawtooth of a healthy session. */
__attribute__((noinline)) static void work(int s)
{
    for (int i = 0; i < 200; i++) {
        char *v = malloc(16 + (size_t)((i * 7919 + s) % 2048));
        if (!v) exit(3);
        v[0] = (char)i;
        free(v);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: exec_keep SHAPE SESSIONS\n");
        return 2;
    }
    const char *shape = argv[1];
    int sessions = atoi(argv[2]);
    void *mine[SLOTS]; /* the holder of `local`: main's own frame */
    for (int s = 0; s < sessions && s < SLOTS; s++) {
        if (leakgate_session_begin() != LEAKGATE_OK) return 10;
        work(s);
        if (!strcmp(shape, "global"))
            keep_registry[s] = keep_block(96);
        else if (!strcmp(shape, "chain"))
            keep_lists[s] = push_node(push_node(NULL));
        else if (!strcmp(shape, "local"))
            mine[s] = keep_block(128);
        else if (!strcmp(shape, "bridge")) {
            if (!keep_table) keep_table = make_table();
            keep_table[s] = keep_block(64);
        } else if (strcmp(shape, "clean")) {
            fprintf(stderr, "exec_keep: unknown shape %s\n", shape);
            return 2;
        }
        if (leakgate_session_end() != LEAKGATE_OK) return 11;
    }
    printf("%s: %d sessions (%p)\n", shape, sessions, (void *)mine); /* mine stays live */
    return 0;
}
