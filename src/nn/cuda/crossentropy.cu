/* Softmax and cross-entropy over the vocabulary, twin of ../cpu/crossentropy.c:
 *   forward:  probs[i,:] = exp(x - max) / sum,  sum = sum_j exp(x_j - max) (in fp64, as
 *             the CPU: V is 50257 terms),  losses[i] = log(sum) - (x[target] - max)
 *   backward: dlogits[i,:] += (probs[i,:] - onehot(targets[i])) * dloss
 * The loss comes from the logit rather than log(probs[target]), so that it stays finite
 * where the probability underflows; it is fp32 in every compute dtype (the op's contract). */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"
#include "reduce.cuh"

/* A block per row: V is tens of thousands of columns. probs may be logits: every thread
 * reads the target's logit, and all of them have (block_max_all synchronises the block)
 * before the last pass, where each thread overwrites only the elements it reads itself. */
template <enum dtype D>
static __global__ void crossentropy_forward_kernel(void *probs, void *losses, const void *logits,
                                                   const int *targets, int V) {
  __shared__ float max_shared[WARP_SIZE];
  __shared__ double sum_shared[WARP_SIZE];
  int row = blockIdx.x;
  size_t base = (size_t)row * V;
  float target_logit = load<D>(logits, base + targets[row]);
  float maxval = -INFINITY;
  for (int j = threadIdx.x; j < V; j += blockDim.x) maxval = fmaxf(maxval, load<D>(logits, base + j));
  maxval = block_max_all(maxval, max_shared);
  double sum = 0.0;
  for (int j = threadIdx.x; j < V; j += blockDim.x) sum += expf(load<D>(logits, base + j) - maxval);
  sum = block_sum_all(sum, sum_shared);
  float inv = (float)(1.0 / sum);
  for (int j = threadIdx.x; j < V; j += blockDim.x)
    store<D>(probs, base + j, expf(load<D>(logits, base + j) - maxval) * inv);
  if (threadIdx.x == 0) ((float *)losses)[row] = (float)(log(sum) - (double)(target_logit - maxval));
}

/* Elementwise. The target's element is rounded twice, as on the CPU (the add of p * dloss,
 * then the subtraction of dloss), and the _rn intrinsics keep both from fusing, so that
 * fp32 results are the CPU's to the bit. */
template <enum dtype D>
static __global__ void crossentropy_backward_kernel(void *dlogits, const void *probs, const int *targets,
                                                    float dloss, int V, size_t n) {
  GRID_STRIDE(i, 0, n) {
    float d = __fadd_rn(load<D>(dlogits, i), __fmul_rn(load<D>(probs, i), dloss));
    if ((int)(i % V) == targets[i / V]) d = __fsub_rn(d, dloss);
    store<D>(dlogits, i, d);
  }
}

static const unsigned CE_THREADS = 512;

template <enum dtype D>
static cudaError_t crossentropy_forward(void *probs, void *losses, const void *logits, const int *targets, int N,
                                        int V, cudaStream_t s) {
  crossentropy_forward_kernel<D><<<N, CE_THREADS, 0, s>>>(probs, losses, logits, targets, V);
  return cudaGetLastError();
}

template <enum dtype D>
static cudaError_t crossentropy_backward(void *dlogits, const void *probs, const int *targets, float dloss, int N,
                                         int V, cudaStream_t s) {
  size_t n = (size_t)N * V;
  crossentropy_backward_kernel<D><<<blocks_for(n), BLOCK_THREADS, 0, s>>>(dlogits, probs, targets, dloss, V, n);
  return cudaGetLastError();
}

cudaError_t gpu_crossentropy_forward(enum dtype d, void *probs, void *losses, const void *logits, const int *targets,
                                     int N, int V, cudaStream_t s) {
  BY_DTYPE(d, crossentropy_forward, probs, losses, logits, targets, N, V, s);
}

cudaError_t gpu_crossentropy_backward(enum dtype d, void *dlogits, const void *probs, const int *targets, float dloss,
                                      int N, int V, cudaStream_t s) {
  BY_DTYPE(d, crossentropy_backward, dlogits, probs, targets, dloss, N, V, s);
}
