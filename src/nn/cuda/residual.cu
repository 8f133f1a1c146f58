/* The residual connection, twin of ../cpu/residual.c: out = a + b, elementwise (out may
 * be a or b). One rounding, as on the CPU: fp32 results are its own to the bit. */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"

template <enum dtype D>
static __global__ void residual_forward_kernel(void *out, const void *a, const void *b, size_t n) {
  GRID_STRIDE(i, 0, n) store<D>(out, i, load<D>(a, i) + load<D>(b, i));
}

template <enum dtype D>
static cudaError_t residual_forward(void *out, const void *a, const void *b, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  residual_forward_kernel<D><<<blocks_for(n), BLOCK_THREADS, 0, s>>>(out, a, b, n);
  return cudaGetLastError();
}

cudaError_t gpu_residual_forward(enum dtype d, void *out, const void *a, const void *b, size_t n, cudaStream_t s) {
  BY_DTYPE(d, residual_forward, out, a, b, n, s);
}
