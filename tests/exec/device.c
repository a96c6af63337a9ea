/* device.c — a program that allocates device memory through the CUDA runtime and driver calls
 * (against the test double fake_cudart.c): every API, freed each session, unless asked to keep
 * 4 MiB per session, untagged (`leak`) or inside a tag scope (`tag-leak`).
 *
 *   exec_device SESSIONS [clean|leak|tag-leak]
 */
#include <leakgate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
int cudaMallocAsync(void **p, size_t n, void *stream);
int cudaFreeAsync(void *p, void *stream);
int cuMemAlloc_v2(unsigned long long *p, size_t n);
int cuMemFree_v2(unsigned long long p);
size_t fake_cuda_live(void);
int fake_cuda_syncs(void);

int main(int argc, char **argv)
{
    int sessions = argc > 1 ? atoi(argv[1]) : 6;
    const char *mode = argc > 2 ? argv[2] : "clean";
    for (int s = 0; s < sessions; s++) {
        leakgate_session_begin();
        void *a = NULL, *b = NULL;
        unsigned long long c = 0;
        if (cudaMalloc(&a, 8 << 20) || cudaMallocAsync(&b, 1 << 20, NULL) ||
            cuMemAlloc_v2(&c, 2 << 20))
            return 20;
        if (!strcmp(mode, "tag-leak")) leakgate_tag_push("act/device.scratch");
        void *kept = NULL;
        if (strcmp(mode, "clean") && cudaMalloc(&kept, 4 << 20)) return 21;
        if (!strcmp(mode, "tag-leak")) leakgate_tag_pop();
        cudaFree(a);
        cudaFreeAsync(b, NULL);
        cuMemFree_v2(c);
        if (leakgate_session_end() != LEAKGATE_OK) return 22;
        printf("session %d: %zu device bytes live (double's count), %d syncs\n", s,
               fake_cuda_live(), fake_cuda_syncs());
    }
    return 0;
}
