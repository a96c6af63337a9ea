/* kn_math.h — exp, sigmoid and tanh written so that GCC vectorises the loops that call them
 * (no libm calls, no branches: both sides computed, then selected). One definition for both
 * devices: the CPU kernels (kernels_cpu.c, kernels_cpu_nn.c) and the CUDA kernels (cuda/,
 * where KN_HD makes them __host__ __device__) compute the same formulas, operation for
 * operation, so both round alike. Accuracy (checked against libm in test_autograd): exp within 2
 * ulp on [−87.3, 88.3], 0 below, +inf above; tanh within 1e-6 relative; sigmoid within 2e-7
 * absolute. */
#ifndef LG_KN_MATH_H
#define LG_KN_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define KN_HD __host__ __device__
#else
#define KN_HD
#endif

KN_HD static inline float kn_bits_to_f32(uint32_t i)
{
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

KN_HD static inline uint32_t kn_f32_to_bits(float f)
{
    uint32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

/* e^x: x = n·ln2 + r with |r| ≤ ln2/2, e^r by Cephes' degree-6 polynomial, 2^n through the
 * exponent bits. NaN propagates (comparisons against NaN are false). */
KN_HD static inline float kn_exp(float x)
{
    const float hi = 88.3762626647949f, lo = -87.3365478515625f;
    float xc = x > hi ? hi : x;
    xc = xc < lo ? lo : xc;
    /* n = round(x/ln2) by the 1.5·2^23 trick: t2's low mantissa bits hold n (|n| < 2^22), so
     * 2^n's exponent bits come from an integer add and shift, without a float→int convert */
    float t2 = xc * 1.44269504088896341f + 12582912.0f;
    float fn = t2 - 12582912.0f;
    float r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    float res = p * kn_bits_to_f32((kn_f32_to_bits(t2) + 127u) << 23);
    res = x > hi ? kn_bits_to_f32(0x7f800000u) : res; /* +inf */
    return x < lo ? 0.0f : res;
}

KN_HD static inline float kn_sigmoid(float x) { return 1.0f / (1.0f + kn_exp(-x)); }

/* ELU (alpha 1), and its derivative from the output: y > 0 exactly where x > 0; below,
 * dy/dx = e^x = y + 1. */
KN_HD static inline float kn_elu(float x) { return x > 0.0f ? x : kn_exp(x) - 1.0f; }
KN_HD static inline float kn_delu(float y, float dy) { return y > 0.0f ? dy : dy * (y + 1.0f); }

/* tanh: an odd Taylor polynomial below |x| = 0.2 (where 1 − 2/(e^{2x}+1) would lose digits
 * to cancellation), 1 − 2/(e^{2|x|}+1) with the sign put back above. */
KN_HD static inline float kn_tanh(float x)
{
    float ax = x < 0 ? -x : x;
    float x2 = x * x;
    float poly =
        x * (1.0f + x2 * (-0.333333333f +
                          x2 * (0.133333333f + x2 * (-0.0539682540f + x2 * 0.0218694885f))));
    float big = 1.0f - 2.0f / (kn_exp(2.0f * ax) + 1.0f);
    big = x < 0 ? -big : big;
    return ax < 0.2f ? poly : big;
}

/* ---- shared by the CPU and CUDA kernels, so a seed drops the same elements and a step makes
 * the same update on both ----------------------------------------------------------------- */

/* A counter-based hash of element i under the seed's two halves (murmur3's finaliser, twice). */
KN_HD static inline uint32_t kn_hash(uint32_t i, uint32_t s0, uint32_t s1)
{
    uint32_t h = i * 0x9E3779B1u + s0;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    h ^= s1;
    h *= 0x27D4EB2Fu;
    h ^= h >> 15;
    return h;
}

/* Whether dropout keeps element i: u = the hash's top 24 bits in [0, 1), kept when u >= p. */
KN_HD static inline int8_t kn_dropout_keep(int64_t i, uint32_t s0, uint32_t s1, float p)
{
    float u = (float)(kn_hash((uint32_t)i, s0, s1) >> 8) * 0x1.0p-24f;
    return u >= p;
}

/* One element of PyTorch's AdamW: m, v updated, then p <- p*decay - step*m / (sqrt(v)/sqrt(bc2)
 * + eps), with decay = 1 - lr*wd, step = lr/bc1 and inv_sqrt_bc2 = 1/sqrt(bc2) computed once. */
KN_HD static inline void kn_adamw_elem(float *p, float *m, float *v, float g, float beta1,
                                       float beta2, float eps, float decay, float step,
                                       float inv_sqrt_bc2)
{
    float mi = beta1 * *m + (1.0f - beta1) * g;
    float vi = beta2 * *v + (1.0f - beta2) * g * g;
    *m = mi;
    *v = vi;
    *p = *p * decay - step * mi / (sqrtf(vi) * inv_sqrt_bc2 + eps);
}

#endif
