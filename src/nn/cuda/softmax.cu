/* Attention's causal softmax, on the (T, T) score matrices of every (batch, head), in
 * place; twin of the softmax inside ../cpu/attention.c:
 *   forward:  att[t, s] = exp(x_s - max) / sum_{s' <= t} exp(x_s' - max) for s <= t, 0 after
 *   backward: dpreatt[t, s] = att[t, s] * (datt[t, s] - sum_{s' <= t} att[t, s'] datt[t, s'])
 *             for s <= t, 0 after (the softmax's Jacobian applied to datt)
 * A warp takes a row: T is at most a few thousand, a few dozen elements a lane. Within a
 * row each lane writes only the elements it has read itself, after the warp's shuffles,
 * which every lane reaches only once its reads are done: in place is safe. */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"
#include "reduce.cuh"

static const unsigned SOFTMAX_ROWS_PER_BLOCK = BLOCK_THREADS / 32;

template <enum dtype D>
static __global__ void causal_softmax_forward_kernel(void *att, size_t rows, int T) {
  size_t row = (size_t)blockIdx.x * SOFTMAX_ROWS_PER_BLOCK + threadIdx.x / WARP_SIZE;
  int lane = threadIdx.x % WARP_SIZE;
  if (row >= rows) return;
  size_t base = row * T;
  int t = (int)(row % T);
  float maxval = -INFINITY;
  for (int s = lane; s <= t; s += WARP_SIZE) maxval = fmaxf(maxval, load<D>(att, base + s));
  maxval = warp_max_all(maxval);
  float sum = 0.0f;
  for (int s = lane; s <= t; s += WARP_SIZE) sum += expf(load<D>(att, base + s) - maxval);
  float inv = 1.0f / warp_sum_all(sum);
  for (int s = lane; s < T; s += WARP_SIZE)
    store<D>(att, base + s, s <= t ? expf(load<D>(att, base + s) - maxval) * inv : 0.0f);
}

template <enum dtype D>
static __global__ void causal_softmax_backward_kernel(void *datt, const void *att, size_t rows, int T) {
  size_t row = (size_t)blockIdx.x * SOFTMAX_ROWS_PER_BLOCK + threadIdx.x / WARP_SIZE;
  int lane = threadIdx.x % WARP_SIZE;
  if (row >= rows) return;
  size_t base = row * T;
  int t = (int)(row % T);
  float dot = 0.0f;
  for (int s = lane; s <= t; s += WARP_SIZE) dot += load<D>(att, base + s) * load<D>(datt, base + s);
  dot = warp_sum_all(dot);
  for (int s = lane; s < T; s += WARP_SIZE)
    store<D>(datt, base + s, s <= t ? load<D>(att, base + s) * (load<D>(datt, base + s) - dot) : 0.0f);
}

static unsigned softmax_blocks(size_t rows) {
  return (unsigned)((rows + SOFTMAX_ROWS_PER_BLOCK - 1) / SOFTMAX_ROWS_PER_BLOCK);
}

template <enum dtype D>
static cudaError_t causal_softmax_forward(void *att, size_t rows, int T, cudaStream_t s) {
  causal_softmax_forward_kernel<D><<<softmax_blocks(rows), BLOCK_THREADS, 0, s>>>(att, rows, T);
  return cudaGetLastError();
}

template <enum dtype D>
static cudaError_t causal_softmax_backward(void *datt, const void *att, size_t rows, int T, cudaStream_t s) {
  causal_softmax_backward_kernel<D><<<softmax_blocks(rows), BLOCK_THREADS, 0, s>>>(datt, att, rows, T);
  return cudaGetLastError();
}

cudaError_t gpu_causal_softmax_forward(enum dtype d, void *att, size_t rows, int T, cudaStream_t s) {
  BY_DTYPE(d, causal_softmax_forward, att, rows, T, s);
}

cudaError_t gpu_causal_softmax_backward(enum dtype d, void *datt, const void *att, size_t rows, int T,
                                        cudaStream_t s) {
  BY_DTYPE(d, causal_softmax_backward, datt, att, rows, T, s);
}
