/* sum and sum_squares: fp64 sums of fp32 buffers, added to a one-element fp64 tensor.
 * Each block sums its grid-stride share, then adds it to the result with one atomicAdd.
 * The additions happen in another order than the CPU's sequential loop, and the blocks'
 * atomics in no fixed order at all, so the result's last bits may differ from the CPU's
 * and from run to run: by fp64 rounding errors, each at most 2^-53 of the magnitudes
 * summed so far. A square is exact in fp64 (24-bit significands), so squaring (fused
 * into the add or not) rounds nothing. */
#include "grid.cuh"
#include "kernels.h"

static const unsigned WARP = 32, WARPS = BLOCK_THREADS / WARP;
/* Fewer blocks than the elementwise kernels: each costs an atomic on one address. */
static const unsigned SUM_MAX_BLOCKS = 132 * 4;

static __device__ double warp_sum(double x) {
  for (unsigned offset = WARP / 2; offset > 0; offset /= 2) x += __shfl_down_sync(0xffffffffu, x, offset);
  return x;
}

static __global__ void sum_kernel(double *sum, const float *x, size_t n, int squares) {
  __shared__ double warp_sums[WARPS];
  double acc = 0.0;
  GRID_STRIDE(i, 0, n) {
    double v = x[i];
    acc += squares ? v * v : v;
  }
  acc = warp_sum(acc);
  if (threadIdx.x % WARP == 0) warp_sums[threadIdx.x / WARP] = acc;
  __syncthreads();
  if (threadIdx.x < WARP) {
    acc = warp_sum(threadIdx.x < WARPS ? warp_sums[threadIdx.x] : 0.0);
    if (threadIdx.x == 0) atomicAdd(sum, acc);
  }
}

cudaError_t gpu_sum(double *sum, const float *x, size_t n, int squares, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  unsigned blocks = blocks_for(n);
  sum_kernel<<<blocks < SUM_MAX_BLOCKS ? blocks : SUM_MAX_BLOCKS, BLOCK_THREADS, 0, s>>>(sum, x, n, squares);
  return cudaGetLastError();
}
