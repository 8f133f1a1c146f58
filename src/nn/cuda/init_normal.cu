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
#include "philox.cuh"

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
