/* init_normal on the GPU: src/core/rng.c's Philox4x32-10 and Box-Muller as device code,
 * so that a shard initialised on the GPU holds the CPU's values.
 *
 * Philox and the uniforms are integer steps and exact conversions: the GPU's bits are
 * the CPU's. Box-Muller then takes log and cos in fp64, and CUDA's (1 and 2 ulp of fp64
 * at most) are not glibc's: their fp64 product may differ from the CPU's in its last few
 * bits. Rounded to fp32 that is the CPU's float except where the product falls within
 * those bits of a rounding boundary (odds of about 2^-27 per value), where it is one
 * ulp away. The values are a pure function of (seed, stream, index) all the same. The
 * multiplications are _rn intrinsics, rounded as the CPU's C rounds them. */
#include "grid.cuh"
#include "kernels.h"

static const uint32_t PHILOX_M0 = 0xD2511F53u, PHILOX_M1 = 0xCD9E8D57u;
static const uint32_t PHILOX_W0 = 0x9E3779B9u, PHILOX_W1 = 0xBB67AE85u;

static __device__ void philox4x32(uint64_t seed, uint64_t stream, uint64_t index, uint32_t out[4]) {
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

static __device__ float to_unit(uint32_t x) { return __fmul_rn(__uint2float_rn(x >> 8), 1.0f / 16777216.0f); }

static __device__ float rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  uint32_t r[4];
  philox4x32(seed, stream, index, r);
  double u1 = __dsub_rn(1.0, (double)to_unit(r[0]));
  double u2 = (double)to_unit(r[1]);
  return __double2float_rn(__dmul_rn(sqrt(__dmul_rn(-2.0, log(u1))), cos(__dmul_rn(6.283185307179586, u2))));
}

static __global__ void init_normal_kernel(float *x, size_t n, uint64_t seed, uint64_t stream, uint64_t first,
                                          float std) {
  GRID_STRIDE(i, 0, n) x[i] = __fmul_rn(std, rng_normal(seed, stream, first + i));
}

cudaError_t gpu_init_normal(float *x, size_t n, uint64_t seed, uint64_t stream, uint64_t first, float std,
                            cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  init_normal_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(x, n, seed, stream, first, std);
  return cudaGetLastError();
}
