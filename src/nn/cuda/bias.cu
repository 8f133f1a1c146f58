/* The matmul's bias where cuBLASLt does not take it (matmul.c):
 *   broadcast: out[i, o] = bias[o], before a GEMM that adds its product (beta = 1);
 *   backward:  dbias[o] += sum_i dout[i, o], a column sum in two passes (colsum.cuh).
 * The backward is a kernel of its own rather than cuBLASLt's BGRADB epilogue, which
 * writes the bias gradient where the op must add to it (nn.h: every backward accumulates). */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"
#include "colsum.cuh"

template <enum dtype D>
static __global__ void bias_broadcast_kernel(void *out, const void *bias, int OC, size_t n) {
  GRID_STRIDE(i, 0, n) store<D>(out, i, load<D>(bias, i % OC));
}

template <enum dtype D>
struct bias_term {
  const void *dout;
  int OC;
  __device__ void operator()(size_t i, int o, float t[1]) const { t[0] = load<D>(dout, i * OC + o); }
};

template <enum dtype D>
struct bias_add {
  void *dbias;
  __device__ void operator()(int, int o, float total) const { store<D>(dbias, o, load<D>(dbias, o) + total); }
};

template <enum dtype D>
static cudaError_t bias_broadcast(void *out, const void *bias, int N, int OC, cudaStream_t s) {
  size_t n = (size_t)N * OC;
  bias_broadcast_kernel<D><<<blocks_for(n), BLOCK_THREADS, 0, s>>>(out, bias, OC, n);
  return cudaGetLastError();
}

template <enum dtype D>
static cudaError_t bias_backward(void *dbias, const void *dout, int N, int OC, void *scratch, cudaStream_t s) {
  return column_sums<1>(bias_term<D>{dout, OC}, bias_add<D>{dbias}, N, OC, scratch, s);
}

cudaError_t gpu_bias_broadcast(enum dtype d, void *out, const void *bias, int N, int OC, cudaStream_t s) {
  BY_DTYPE(d, bias_broadcast, out, bias, N, OC, s);
}

cudaError_t gpu_bias_backward(enum dtype d, void *dbias, const void *dout, int N, int OC, void *scratch,
                              cudaStream_t s) {
  BY_DTYPE(d, bias_backward, dbias, dout, N, OC, scratch, s);
}
