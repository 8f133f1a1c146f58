/* Private to src/nn/cuda: column sums over N rows (the gradients of norm weights and
 * biases), in two passes so that a model's few hundred columns still fill the GPU and no
 * atomics change the bits from run to run:
 *   1. the rows are cut into splits of consecutive rows (their count a function of N
 *      alone: colsum.h); a block takes 32 adjacent columns of one split (a warp reads 32
 *      neighbours of a row: one coalesced access), COLSUM_LANES warps share its rows, and
 *      their partial sums meet in shared memory in a fixed order; the split's sum goes to
 *      its slot of the scratch;
 *   2. a thread per column adds the splits' sums in split order and hands the total to
 *      the op, which adds it to its gradient once (a 16-bit gradient is rounded once).
 * An op sums K terms per element at once (LayerNorm: dweight's and dbias's): Term fills
 * term[K] for (row, column); Finish takes (k, column, total). */
#ifndef FSDP_NN_CUDA_COLSUM_CUH
#define FSDP_NN_CUDA_COLSUM_CUH

#include <cuda_runtime.h>

#include "colsum.h"
#include "reduce.cuh"

template <int K, typename Term>
static __global__ void colsum_partials_kernel(float *partials, Term term, int N, int C, int rows_per_split) {
  __shared__ float part[K][COLSUM_LANES][WARP_SIZE + 1];
  int c = blockIdx.x * WARP_SIZE + threadIdx.x, split = blockIdx.y;
  int first = split * rows_per_split, end = min(N, first + rows_per_split);
  float acc[K] = {0.0f};
  if (c < C)
    for (int i = first + threadIdx.y; i < end; i += COLSUM_LANES) {
      float t[K];
      term((size_t)i, c, t);
      for (int k = 0; k < K; k++) acc[k] += t[k];
    }
  for (int k = 0; k < K; k++) part[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  for (int k = 0; k < K; k++) {
    float sum = part[k][0][threadIdx.x];
    for (unsigned y = 1; y < COLSUM_LANES; y++) sum += part[k][y][threadIdx.x];
    partials[((size_t)k * gridDim.y + split) * C + c] = sum;
  }
}

template <int K, typename Finish>
static __global__ void colsum_finish_kernel(const float *partials, Finish finish, int C, int splits) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int k = 0; k < K; k++) {
    float total = 0.0f;
    for (int split = 0; split < splits; split++) total += partials[((size_t)k * splits + split) * C + c];
    finish(k, c, total);
  }
}

/* scratch: colsum_scratch_bytes(N, K * C). */
template <int K, typename Term, typename Finish>
static cudaError_t column_sums(Term term, Finish finish, int N, int C, void *scratch, cudaStream_t s) {
  if (N == 0 || C == 0) return cudaSuccess;
  int splits = (int)colsum_splits((size_t)N), rows_per_split = (N + splits - 1) / splits;
  dim3 grid((C + WARP_SIZE - 1) / WARP_SIZE, splits), block(WARP_SIZE, COLSUM_LANES);
  colsum_partials_kernel<K><<<grid, block, 0, s>>>((float *)scratch, term, N, C, rows_per_split);
  colsum_finish_kernel<K><<<(C + 255) / 256, 256, 0, s>>>((const float *)scratch, finish, C, splits);
  return cudaGetLastError();
}

#endif
