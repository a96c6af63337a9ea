/* cuda_static.cu — a CUDA program as nvcc builds it by default, with the static runtime
 * (libcudart_static): its cudaMalloc is inside the program, where leakgate exec's interposers
 * never reach. It need not reach a device (without one every call fails and it goes on): what is
 * tested is that exec says device memory went unmeasured. Sessions are marker lines.
 *
 *   exec_cuda_static [EPOCHS]
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

__global__ void touch(float *p) { p[threadIdx.x] = 1.0f; }

int main(int argc, char **argv)
{
    int epochs = argc > 1 ? atoi(argv[1]) : 4;
    for (int e = 0; e < epochs; e++) {
        float *d = NULL;
        cudaError_t rc = cudaMalloc(&d, 1 << 20);
        if (rc == cudaSuccess) {
            touch<<<1, 32>>>(d);
            cudaDeviceSynchronize();
            cudaFree(d);
        }
        printf("epoch %d done (%s)\n", e, cudaGetErrorName(rc));
    }
    return 0;
}
