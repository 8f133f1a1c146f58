/* The fused classifier over rows of Vp logits, the first V the vocabulary's and the rest
 * padding (outside the softmax), twin of ../cpu/classifier.c:
 *   loss = log(sum) - (x[target] - max),  sum = sum_{j < V} exp(x_j - max) (in fp64, as the
 *          CPU: V is 50257 terms)
 *   d_j  = (exp(x_j - max) / sum - [j == target]) * dloss for j < V, 0 past V
 * The loss comes from the logit rather than log(p[target]), so that it stays finite where
 * the probability underflows; it is fp32 in every compute dtype (the op's contract). The
 * probabilities stay in fp32 registers between the softmax and the gradient: nothing of
 * B x T x V but the logits (then the gradient, in their place) is ever in memory. */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"
#include "reduce.cuh"

/* A block per row: V is tens of thousands of columns, read three times (the maximum, the
 * sum, the gradient) while the row sits in the L2 cache. d may be x: every thread reads
 * the target's logit, and all of them have (block_max_all synchronises the block) before
 * the last pass, where each thread overwrites only the elements it reads itself. */
template <enum dtype D>
static __global__ void classifier_kernel(void *dlogits, float *losses, const void *logits, const int *targets, int V,
                                         int Vp, float dloss) {
  __shared__ float max_shared[WARP_SIZE];
  __shared__ double sum_shared[WARP_SIZE];
  size_t base = (size_t)blockIdx.x * Vp;
  int target = targets[blockIdx.x];
  float target_logit = load<D>(logits, base + target);
  float maxval = -INFINITY;
  for (int j = threadIdx.x; j < V; j += blockDim.x) maxval = fmaxf(maxval, load<D>(logits, base + j));
  maxval = block_max_all(maxval, max_shared);
  double sum = 0.0;
  for (int j = threadIdx.x; j < V; j += blockDim.x) sum += expf(load<D>(logits, base + j) - maxval);
  sum = block_sum_all(sum, sum_shared);
  if (losses && threadIdx.x == 0) losses[blockIdx.x] = (float)(log(sum) - (double)(target_logit - maxval));
  if (!dlogits) return;
  /* The CPU's roundings: the scale, each product, then the target's subtraction. */
  float scale = __fmul_rn((float)(1.0 / sum), dloss);
  for (int j = threadIdx.x; j < Vp; j += blockDim.x) {
    float d = 0.0f;
    if (j < V) d = __fmul_rn(expf(load<D>(logits, base + j) - maxval), scale);
    if (j == target) d = __fsub_rn(d, dloss);
    store<D>(dlogits, base + j, d);
  }
}

static const unsigned CLASSIFIER_THREADS = 512;

template <enum dtype D>
static cudaError_t classifier(void *dlogits, void *losses, const void *logits, const int *targets, int N, int V,
                              int Vp, float dloss, cudaStream_t s) {
  if (N == 0) return cudaSuccess;
  classifier_kernel<D><<<N, CLASSIFIER_THREADS, 0, s>>>(dlogits, (float *)losses, logits, targets, V, Vp, dloss);
  return cudaGetLastError();
}

cudaError_t gpu_classifier(enum dtype d, void *dlogits, void *losses, const void *logits, const int *targets, int N,
                           int V, int Vp, float dloss, cudaStream_t s) {
  BY_DTYPE(d, classifier, dlogits, losses, logits, targets, N, V, Vp, dloss, s);
}
