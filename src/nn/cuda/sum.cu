/* sum and sum_squares: fp64 sums of fp32 buffers, added to a one-element fp64 tensor, in
 * two passes with no atomics, so that a run's sums are the same bits every time: each of
 * a fixed number of blocks (a function of n alone) sums its grid-stride share into its
 * slot of the scratch, then one block adds the slots in a fixed order. The order differs
 * from the CPU's sequential loop, so the last bits may differ from the CPU's: by fp64
 * rounding errors, each at most 2^-53 of the magnitudes summed so far. A square is exact
 * in fp64 (24-bit significands), so squaring (fused into the add or not) rounds nothing. */
#include "grid.cuh"
#include "kernels.h"
#include "scratch.h"

static const unsigned WARP = 32, WARPS = BLOCK_THREADS / WARP;

static __device__ double warp_sum(double x) {
  for (unsigned offset = WARP / 2; offset > 0; offset /= 2) x += __shfl_down_sync(0xffffffffu, x, offset);
  return x;
}

/* The block's total, in thread 0: each warp's, then the warps' in order. */
static __device__ double block_sum(double acc) {
  __shared__ double warp_sums[WARPS];
  acc = warp_sum(acc);
  if (threadIdx.x % WARP == 0) warp_sums[threadIdx.x / WARP] = acc;
  __syncthreads();
  if (threadIdx.x < WARP) acc = warp_sum(threadIdx.x < WARPS ? warp_sums[threadIdx.x] : 0.0);
  return acc;
}

/* A thread's share in SUM_LANES sums, each fed by its own load, so that SUM_LANES loads are
 * in flight (one left the norm's pass at 1.2 TB/s on an H100: ncu, docs/benchmarks.md),
 * then added in a fixed order. */
static const int SUM_LANES = 4;
static_assert(SUM_LANES == 4, "partial_sums_kernel adds its lanes pairwise, as four");

static __global__ void partial_sums_kernel(double *partials, const float *x, size_t n, int squares) {
  double lane[SUM_LANES] = {};
  size_t stride = (size_t)gridDim.x * blockDim.x, i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (SUM_LANES - 1) * stride < n; i += SUM_LANES * stride) {
    float v[SUM_LANES];
#pragma unroll
    for (int k = 0; k < SUM_LANES; k++) v[k] = x[i + k * stride];
#pragma unroll
    for (int k = 0; k < SUM_LANES; k++) lane[k] += squares ? (double)v[k] * v[k] : (double)v[k];
  }
  for (; i < n; i += stride) lane[0] += squares ? (double)x[i] * x[i] : (double)x[i];
  double acc = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

static __global__ void add_partials_kernel(double *sum, const double *partials, unsigned count) {
  double acc = 0.0;
  for (unsigned i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *sum += acc;
}

cudaError_t gpu_sum(double *sum, const float *x, size_t n, int squares, double *scratch, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  unsigned blocks = sum_blocks(n);
  partial_sums_kernel<<<blocks, BLOCK_THREADS, 0, s>>>(scratch, x, n, squares);
  add_partials_kernel<<<1, BLOCK_THREADS, 0, s>>>(sum, scratch, blocks);
  return cudaGetLastError();
}
