/* Private to src/nn/cuda: sums and maxima across a warp and across a block, for the
 * row-wise layer kernels. Every lane (every thread) gets the result. */
#ifndef FSDP_NN_CUDA_REDUCE_CUH
#define FSDP_NN_CUDA_REDUCE_CUH

#include <cuda_runtime.h>
#include <math.h>

static const unsigned WARP_SIZE = 32, FULL_MASK = 0xffffffffu;

template <typename T>
static __device__ inline T warp_sum_all(T x) {
  for (unsigned offset = WARP_SIZE / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(FULL_MASK, x, offset);
  return x;
}

static __device__ inline float warp_max_all(float x) {
  for (unsigned offset = WARP_SIZE / 2; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(FULL_MASK, x, offset));
  return x;
}

/* The block's sum, or max, for every thread. blockDim.x is a multiple of 32, at most 1024;
 * shared holds 32 values. The leading __syncthreads lets a block reduce twice in a row
 * with the same shared array: no warp overwrites it while another still reads the last result. */
template <typename T>
static __device__ inline T block_sum_all(T x, T *shared) {
  unsigned lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE, warps = blockDim.x / WARP_SIZE;
  x = warp_sum_all(x);
  __syncthreads();
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  return warp_sum_all(lane < warps ? shared[lane] : (T)0);
}

static __device__ inline float block_max_all(float x, float *shared) {
  unsigned lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE, warps = blockDim.x / WARP_SIZE;
  x = warp_max_all(x);
  __syncthreads();
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  return warp_max_all(lane < warps ? shared[lane] : -INFINITY);
}

#endif
