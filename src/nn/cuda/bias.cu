/* The matmul's bias where cuBLASLt does not take it (matmul.c):
 *   broadcast: out[i, o] = bias[o], before a GEMM that adds its product (beta = 1);
 *   backward:  dbias[o] += sum_i dout[i, o].
 * The backward is a kernel of its own rather than cuBLASLt's BGRADB epilogue, which
 * writes the bias gradient where the op must add to it (nn.h: every backward accumulates). */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"
#include "reduce.cuh"

template <enum dtype D>
static __global__ void bias_broadcast_kernel(void *out, const void *bias, int OC, size_t n) {
  GRID_STRIDE(i, 0, n) store<D>(out, i, load<D>(bias, i % OC));
}

/* As layernorm.cu's dweight and dbias: a block takes 32 columns, BIAS_LANES warps split
 * the rows, their partial sums add up in shared memory in a fixed order (the same result
 * every run), and the column's sum is added to dbias once. */
static const unsigned BIAS_LANES = 16;

template <enum dtype D>
static __global__ void bias_backward_kernel(void *dbias, const void *dout, int N, int OC) {
  __shared__ float part[BIAS_LANES][WARP_SIZE + 1];
  int o = blockIdx.x * WARP_SIZE + threadIdx.x;
  float sum = 0.0f;
  if (o < OC)
    for (int i = threadIdx.y; i < N; i += BIAS_LANES) sum += load<D>(dout, (size_t)i * OC + o);
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || o >= OC) return;
  for (unsigned y = 1; y < BIAS_LANES; y++) sum += part[y][threadIdx.x];
  store<D>(dbias, o, load<D>(dbias, o) + sum);
}

template <enum dtype D>
static cudaError_t bias_broadcast(void *out, const void *bias, int N, int OC, cudaStream_t s) {
  size_t n = (size_t)N * OC;
  bias_broadcast_kernel<D><<<blocks_for(n), BLOCK_THREADS, 0, s>>>(out, bias, OC, n);
  return cudaGetLastError();
}

template <enum dtype D>
static cudaError_t bias_backward(void *dbias, const void *dout, int N, int OC, cudaStream_t s) {
  dim3 block(WARP_SIZE, BIAS_LANES);
  bias_backward_kernel<D><<<(OC + WARP_SIZE - 1) / WARP_SIZE, block, 0, s>>>(dbias, dout, N, OC);
  return cudaGetLastError();
}

cudaError_t gpu_bias_broadcast(enum dtype d, void *out, const void *bias, int N, int OC, cudaStream_t s) {
  BY_DTYPE(d, bias_broadcast, out, bias, N, OC, s);
}

cudaError_t gpu_bias_backward(enum dtype d, void *dbias, const void *dout, int N, int OC, cudaStream_t s) {
  BY_DTYPE(d, bias_backward, dbias, dout, N, OC, s);
}
