/* threads.c — THREADS worker threads allocate at once, tagged ("worker/N") and untagged, in
 * every session; the main thread ends each session while they wait at a barrier. With `leak`,
 * worker 3 keeps 64 KiB of tagged memory per session (an exact leak, by tag).
 *
 *   exec_threads SESSIONS THREADS [leak]
 */
#include <leakgate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_barrier_t start, done;
static int sessions, threads, leak;
void *threads_kept[1 << 12];

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    char tag[32];
    snprintf(tag, sizeof tag, "worker/%d", id);
    for (int s = 0; s < sessions; s++) {
        pthread_barrier_wait(&start);
        for (int i = 0; i < 3000; i++) {
            size_t n = 16 + (size_t)((i * 131 + id * 977) % 20000);
            if (i % 3 == 0) leakgate_tag_push(tag);
            char *p = i % 5 ? malloc(n) : calloc(1, n);
            p[0] = (char)i;
            p = realloc(p, n + 100);
            if (i % 3 == 0) leakgate_tag_pop();
            free(p);
        }
        if (leak && id == 3) {
            leakgate_tag_push(tag);
            threads_kept[s % (1 << 12)] = malloc(64 << 10);
            leakgate_tag_pop();
        }
        pthread_barrier_wait(&done);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    sessions = argc > 1 ? atoi(argv[1]) : 5;
    threads = argc > 2 ? atoi(argv[2]) : 8;
    leak = argc > 3 && !strcmp(argv[3], "leak");
    pthread_t t[64];
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads && i < 64; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int s = 0; s < sessions; s++) {
        leakgate_session_begin();
        pthread_barrier_wait(&start);
        pthread_barrier_wait(&done);
        if (leakgate_session_end() != LEAKGATE_OK) return 40;
    }
    for (int i = 0; i < threads && i < 64; i++) pthread_join(t[i], NULL);
    printf("threads: %d sessions x %d threads\n", sessions, threads);
    return 0;
}
