/* Private to src/nn/cpu: one fp32 exp, exp(x) = 2^k exp(r): k = x log2(e) rounded to the
 * nearest integer, r = x - k ln 2 (ln 2 in two parts, so that r is exact to fp32's
 * precision), |r| <= ln(2) / 2, exp(r) = 1 + r + r^2 P(r) with Cephes' degree-5 P: within
 * 2 ulp where the result is a normal fp32 value. exp_row.c writes it in intrinsics;
 * exp_in_range is the same steps in C, which the compiler vectorizes in the kernels built
 * per instruction set (variant.h), with no libmvec (none on aarch64). */
#ifndef FSDP_NN_CPU_EXP_FP32_H
#define FSDP_NN_CPU_EXP_FP32_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static const float EXP_LOG2E = 1.44269504088896341f, EXP_LN2_HI = 0.693359375f, EXP_LN2_LO = -2.12194440e-4f;
static const float EXP_P[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
/* The range whose results are normal fp32 values (2^-126 .. 2^127 of 2^k). */
static const float EXP_IN_RANGE_LOWEST = -87.0f, EXP_IN_RANGE_HIGHEST = 88.0f;

/* p ? a : b by bits: GCC turns a float ?: into a branch, and then does not vectorize the
 * loop on AVX2, where it cannot mask. */
static inline float select_float(int p, float a, float b) {
  uint32_t mask = -(uint32_t)(p != 0), ua, ub;
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  uint32_t u = (ua & mask) | (ub & ~mask);
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* a b + c, fused where the instruction set has it; elsewhere (the scalar x86-64 build)
 * fmaf is a library call 10x slower than the rest of the exp, and a product then a sum
 * is within an ulp of it. */
#if defined(__FMA__) || defined(__aarch64__)
#define EXP_FMA(a, b, c) fmaf(a, b, c)
#else
#define EXP_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* exp(x) with x first clamped to [-87, 88]: exp(-87) below, exp(88) above; NaN for NaN. */
static inline float exp_in_range(float x) {
  x = select_float(x < EXP_IN_RANGE_LOWEST, EXP_IN_RANGE_LOWEST, x);
  x = select_float(x > EXP_IN_RANGE_HIGHEST, EXP_IN_RANGE_HIGHEST, x);
  /* Rounded to the nearest integer by adding and taking away 1.5 * 2^23, nearbyintf's
   * result for |x log2(e)| < 2^22 in one add and one sub: nearbyintf is a library call
   * without SSE4.1. */
  const float round_by = 12582912.0f;
  float k = (x * EXP_LOG2E + round_by) - round_by;
  float r = EXP_FMA(k, -EXP_LN2_HI, x);
  r = EXP_FMA(k, -EXP_LN2_LO, r);
  float p = EXP_P[0];
  for (int i = 1; i < 6; i++) p = EXP_FMA(p, r, EXP_P[i]);
  float y = EXP_FMA(p, r * r, r) + 1.0f;
  /* 2^k, k in [-126, 127], built from its exponent bits: normal, so the product is exact. */
  uint32_t bits = (uint32_t)((int32_t)k + 127) << 23;
  float two_k;
  memcpy(&two_k, &bits, sizeof two_k);
  return y * two_k;
}

#endif
