/* leaky.c — a trainer-shaped program for leakgate exec's tests, built twice: exec_leaky leaks
 * 256 KiB of untagged memory per session from leak_256k(); exec_clean (LEAK 0) is its clean
 * twin. Sessions come from the leakgate.h API; a tag scope and a shared object show the exact
 * channels.
 *
 *   exec_leaky [SESSIONS] [tag-leak] [ref-leak]
 *
 * tag-leak: the tagged parameters are never freed; ref-leak: the trainer's reference to them is
 * never released, so they are never untracked nor freed either (the 815 MB VarMap bug's shape).
 */
#include <leakgate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LEAK
#define LEAK 1
#endif

void *leaky_kept[4096]; /* reachable, like the real thing (and not optimised away) */
int leaky_n_kept;

/* The leak the test must name: a scratch buffer nobody frees. */
__attribute__((noinline)) void leak_256k(void)
{
    char *p = malloc(256 * 1024);
    memset(p, 0x5a, 256 * 1024);
    leaky_kept[leaky_n_kept++ % 4096] = p;
}

/* Work that allocates and frees (the sawtooth of a healthy session). */
__attribute__((noinline)) static double train_step(int step)
{
    double sum = 0;
    for (int i = 0; i < 200; i++) {
        size_t n = 64 + (size_t)((i * 7919 + step * 104729) % 8192);
        double *v = malloc(n * sizeof *v);
        for (size_t k = 0; k < n; k++) v[k] = (double)(k ^ (size_t)i);
        sum += v[n / 2];
        free(v);
    }
    return sum;
}

int main(int argc, char **argv)
{
    int sessions = argc > 1 ? atoi(argv[1]) : 6;
    int tag_leak = argc > 2 && !strcmp(argv[2], "tag-leak");
    int ref_leak = argc > 3 && !strcmp(argv[3], "ref-leak");
    double total = 0;
    for (int s = 0; s < sessions; s++) {
        if (leakgate_session_begin() != LEAKGATE_OK) return 10;
        leakgate_tag_push("model/weights");
        float *w = calloc(1 << 16, sizeof *w);
        leakgate_tag_pop();
        LEAKGATE_TRACK(w, "params", "model.params", &w);
        static int trainer;
        LEAKGATE_RETAIN(w, &trainer);
        for (int step = 0; step < 20; step++) total += train_step(step);
        if (LEAK) leak_256k();
        LEAKGATE_RELEASE(w, &w); /* the model lets go of its parameters */
        if (!ref_leak) { /* ref-leak, the VarMap bug: the trainer never does, so they stay */
            LEAKGATE_RELEASE(w, &trainer);
            LEAKGATE_UNTRACK(w);
            if (!tag_leak) free(w);
        }
        int rc = leakgate_session_end();
        if (rc != LEAKGATE_OK) {
            fprintf(stderr, "leakgate_session_end: %d\n", rc);
            return 11;
        }
        printf("session %d done (%d)\n", s, leakgate_active());
    }
    printf("checksum %.0f\n", total);
    return 0;
}
