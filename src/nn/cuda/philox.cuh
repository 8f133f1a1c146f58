/* Private to src/nn/cuda: src/core/rng.c's Philox4x32-10 and Box-Muller normal as device
 * code, for init_normal.cu and trunc_normal.cu. Why the normals can be an ulp from the
 * CPU's: init_normal.cu. */
#ifndef FSDP_NN_CUDA_PHILOX_CUH
#define FSDP_NN_CUDA_PHILOX_CUH

#include <stdint.h>

static const uint32_t PHILOX_M0 = 0xD2511F53u, PHILOX_M1 = 0xCD9E8D57u;
static const uint32_t PHILOX_W0 = 0x9E3779B9u, PHILOX_W1 = 0xBB67AE85u;

static __device__ inline void philox4x32(uint64_t seed, uint64_t stream, uint64_t index, uint32_t out[4]) {
  uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32);
  uint32_t c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; round++) {
    uint32_t hi0 = __umulhi(PHILOX_M0, c0), lo0 = PHILOX_M0 * c0;
    uint32_t hi1 = __umulhi(PHILOX_M1, c2), lo1 = PHILOX_M1 * c2;
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += PHILOX_W0;
    k1 += PHILOX_W1;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

static __device__ inline float to_unit(uint32_t x) { return __fmul_rn(__uint2float_rn(x >> 8), 1.0f / 16777216.0f); }

static __device__ inline float rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  uint32_t r[4];
  philox4x32(seed, stream, index, r);
  double u1 = __dsub_rn(1.0, (double)to_unit(r[0]));
  double u2 = (double)to_unit(r[1]);
  return __double2float_rn(__dmul_rn(sqrt(__dmul_rn(-2.0, log(u1))), cos(__dmul_rn(6.283185307179586, u2))));
}

#endif
