/* kernels_cpu.h — private to the CPU kernels: the members of kn_cpu that live in
 * kernels_cpu_nn.c (the LSTM cell, the losses, fake quantisation). Signatures and buffer
 * shapes as in struct kn_backend (kernels.h). */
#ifndef LG_KERNELS_CPU_H
#define LG_KERNELS_CPU_H

#include "kernels.h"

void kn_cpu_lstm_cell(float *gates, float *c, float *h, const float *c_prev, int64_t B, int64_t H,
                      int64_t ldg, int64_t ldc, int64_t ldh, int64_t ldcp);
void kn_cpu_dlstm_cell(float *dg, float *dc, const float *dout, const float *dh_rec,
                       const float *gates, const float *c, const float *c_prev, int64_t B,
                       int64_t H, int64_t ldg, int64_t ldc, int64_t ldh, int64_t ldcp);
void kn_cpu_pinball(float *loss, const float *yhat, const float *y, const float *q, int64_t rows,
                    int64_t nq);
void kn_cpu_dpinball(float *dyhat, float *dy, const float *dloss, const float *yhat, const float *y,
                     const float *q, int64_t rows, int64_t nq);
void kn_cpu_fake_quant(float *y, float *scale, const float *x, int64_t rows, int64_t n);
void kn_cpu_dfake_quant(float *dx, const float *dy, const float *x, const float *scale,
                        int64_t rows, int64_t n);

#endif
