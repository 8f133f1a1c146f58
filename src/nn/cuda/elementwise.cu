/* add and fill on fp32 buffers. The _rn intrinsics round each operation as the
 * CPU's C does, and are never contracted, so that results match it to the bit. */
#include "grid.cuh"
#include "kernels.h"

static __global__ void add_kernel(float *y, const float *x, size_t n) {
  GRID_STRIDE(i, 0, n) y[i] = __fadd_rn(y[i], x[i]);
}

static __global__ void fill_kernel(float *x, float value, size_t n) {
  GRID_STRIDE(i, 0, n) x[i] = value;
}

cudaError_t gpu_add(float *y, const float *x, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  add_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(y, x, n);
  return cudaGetLastError();
}

cudaError_t gpu_fill(float *x, float value, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  fill_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(x, value, n);
  return cudaGetLastError();
}
