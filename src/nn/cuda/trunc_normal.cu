/* init_trunc_normal on the GPU: src/core/rng.c's rng_trunc_normal as device code. Draw
 * k = 0, 1, ... of element i is std * normal(seed, stream, i + k * 2^48), the first
 * within [-bound, bound] wins: the resamples come from counters no element of a tensor
 * below 2^48 elements uses, so each value is a pure function of (seed, stream, i), the
 * same whichever thread or rank computes it.
 *
 * The normals are philox.cuh's, an ulp from the CPU's at odds of about 2^-27 per draw
 * (init_normal.cu), and so are the values here; a draw an ulp from the bound on one side
 * could in principle be kept by one and resampled by the other. The loop ends with
 * probability one and, as bound >= std keeps more than two draws in three, after a
 * couple of draws: threads of a warp wait for its slowest, which costs little. */
#include "grid.cuh"
#include "llama_kernels.h"
#include "philox.cuh"

static __device__ float trunc_normal(uint64_t seed, uint64_t stream, uint64_t index, float std, float bound) {
  for (uint64_t k = 0;; k++) {
    float x = __fmul_rn(std, rng_normal(seed, stream, index + (k << 48)));
    if (fabsf(x) <= bound) return x;
  }
}

static __global__ void init_trunc_normal_kernel(float *x, size_t n, uint64_t seed, uint64_t stream, uint64_t first,
                                                float std, float bound) {
  GRID_STRIDE(i, 0, n) x[i] = trunc_normal(seed, stream, first + i, std, bound);
}

cudaError_t gpu_init_trunc_normal(float *x, size_t n, uint64_t seed, uint64_t stream, uint64_t first, float std,
                                  float bound, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  init_trunc_normal_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(x, n, seed, stream, first, std, bound);
  return cudaGetLastError();
}
