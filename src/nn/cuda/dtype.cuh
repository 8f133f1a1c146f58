/* Private to src/nn/cuda: src/core/dtype.c's conversions as device code, on the same bit
 * patterns with the same integer steps, so that a GPU cast is the CPU's to the bit (NaN
 * payloads included, which CUDA's own __float2bfloat16_rn and __float2half_rn do not keep
 * as dtype.c does). dtype.c explains each step. */
#ifndef FSDP_NN_CUDA_DTYPE_CUH
#define FSDP_NN_CUDA_DTYPE_CUH

#include <stdint.h>

#include "fsdp/dtype.h"

static const uint32_t F32_ABS = 0x7fffffffu, F32_INF = 0x7f800000u;
static const uint32_t F16_REBIAS = 112u << 23;
static const uint32_t F32_OF_F16_MIN_NORMAL = 0x38800000u;
static const uint32_t F32_OF_F16_OVERFLOW = 0x477ff000u;

static __device__ inline uint32_t round_shift(uint32_t u, uint32_t shift) {
  return (u + ((1u << (shift - 1)) - 1) + ((u >> shift) & 1u)) >> shift;
}

static __device__ inline uint16_t bf16_of_bits(uint32_t u) {
  uint32_t quiet_nan = (u >> 16) | 0x0040u, rounded = round_shift(u, 16);
  return (uint16_t)((u & F32_ABS) > F32_INF ? quiet_nan : rounded);
}

static __device__ inline uint16_t f16_of_bits(uint32_t u) {
  uint32_t a = u & F32_ABS;
  uint32_t quiet_nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  uint32_t normal = round_shift(a - F16_REBIAS, 13);
  uint32_t e = a >> 23 < 112 ? a >> 23 : 112;
  uint32_t significand = e ? (a & 0x7fffffu) | 0x800000u : a;
  uint32_t shift = e ? 126 - e : 125;
  uint32_t subnormal = round_shift(significand, shift < 31 ? shift : 31);
  uint32_t magnitude = a > F32_INF                   ? quiet_nan
                       : a >= F32_OF_F16_OVERFLOW   ? 0x7c00u
                       : a >= F32_OF_F16_MIN_NORMAL ? normal
                                                    : subnormal;
  return (uint16_t)(((u >> 16) & 0x8000u) | magnitude);
}

static __device__ inline uint32_t bits_of_f16(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t rebias = e == 0x1f ? (255u - 31u) << 23 : F16_REBIAS;
  uint32_t normal = ((e << 23) | (m << 13)) + rebias;
  /* m units of 2^-24: exact, and a normal fp32 number. */
  uint32_t subnormal = __float_as_uint(__fmul_rn(__uint2float_rn(m), 0x1p-24f));
  return sign | (e ? normal : subnormal);
}

/* d is bf16 or fp16. */
static __device__ inline uint16_t narrow(enum dtype d, float x) {
  uint32_t u = __float_as_uint(x);
  return d == DTYPE_BF16 ? bf16_of_bits(u) : f16_of_bits(u);
}

static __device__ inline float widen(enum dtype d, uint16_t h) {
  return __uint_as_float(d == DTYPE_BF16 ? (uint32_t)h << 16 : bits_of_f16(h));
}

#endif
