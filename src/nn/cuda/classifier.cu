/* The fused classifier over rows of Vp logits, the first V the vocabulary's and the rest
 * padding (outside the softmax), twin of ../cpu/classifier.c:
 *   loss = log(sum) - (x[target] - max),  sum = sum_{j < V} exp(x_j - max) (in fp64, as the
 *          CPU: V is 50257 terms; taken in one pass with the maximum, below, so that it
 *          agrees with the CPU's to fp32's rounding of the terms, not to the bit)
 *   d_j  = (exp(x_j - max) / sum - [j == target]) * dloss for j < V, 0 past V
 * The loss comes from the logit rather than log(p[target]), so that it stays finite where
 * the probability underflows; it is fp32 in every compute dtype (the op's contract). The
 * probabilities stay in fp32 registers between the softmax and the gradient: nothing of
 * B x T x V but the logits (then the gradient, in their place) is ever in memory. */
#include "typed.cuh"
#include "classifier_row.h"
#include "grid.cuh"
#include "layers.h"
#include "reduce.cuh"

/* A block per row: V is tens of thousands of columns, read twice (the maximum and the sum
 * in one pass, then the gradient) while the row sits in the L2 cache, in runs of W (16
 * bytes where the rows are on 16 bytes). Each thread sums exp(x - m) with m its own
 * running maximum, rescaling its sum when m moves (at most once a run); the block's sum
 * is the threads' sums each rescaled to the row's maximum. Those steps are
 * classifier_row.h's, which tests/cuda_classifier_test.c runs on the CPU. d may be x:
 * every thread reads the target's logit, and all of them have (block_max_all
 * synchronises the block) before the last pass, where each thread overwrites only the
 * elements it reads itself. */
template <enum dtype D, int W>
static __global__ void classifier_kernel(void *dlogits, float *losses, const void *logits, const int *targets, int V,
                                         int Vp, float dloss) {
  __shared__ float max_shared[WARP_SIZE];
  __shared__ double sum_shared[WARP_SIZE];
  size_t base = (size_t)blockIdx.x * Vp;
  int target = targets[blockIdx.x];
  float target_logit = load<D>(logits, base + target);
  float maxval = -INFINITY;
  double sum = 0.0;
  for (int j = threadIdx.x * W; j < V; j += blockDim.x * W) {
    float x[W];
    load_run<D, W>(logits, base + j, x);
    classifier_run(&maxval, &sum, x, W, V - j);
  }
  float row_max = block_max_all(maxval, max_shared);
  sum = block_sum_all(classifier_share(maxval, sum, row_max), sum_shared);
  if (losses && threadIdx.x == 0) losses[blockIdx.x] = classifier_loss(sum, target_logit, row_max);
  if (!dlogits) return;
  /* The CPU's roundings: the scale, each product, then the target's subtraction. */
  float scale = __fmul_rn((float)(1.0 / sum), dloss);
  for (int j = threadIdx.x * W; j < Vp; j += blockDim.x * W) {
    float x[W], d[W];
    load_run<D, W>(logits, base + j, x);
    for (int k = 0; k < W; k++) d[k] = classifier_grad(x[k], j + k, V, target, row_max, scale, dloss);
    store_run<D, W>(dlogits, base + j, d);
  }
}

/* Runs of 16 bytes where every row starts on 16 bytes, else of one element. */
template <enum dtype D>
static cudaError_t classifier(void *dlogits, void *losses, const void *logits, const int *targets, int N, int V,
                              int Vp, float dloss, cudaStream_t s) {
  if (N == 0) return cudaSuccess;
  int W = RUN16<D>;
  bool runs = Vp % W == 0 && (uintptr_t)logits % 16 == 0 && (uintptr_t)dlogits % 16 == 0;
  if (runs)
    classifier_kernel<D, RUN16<D>><<<N, CLASSIFIER_THREADS, 0, s>>>(dlogits, (float *)losses, logits, targets, V, Vp,
                                                                     dloss);
  else
    classifier_kernel<D, 1><<<N, CLASSIFIER_THREADS, 0, s>>>(dlogits, (float *)losses, logits, targets, V, Vp, dloss);
  return cudaGetLastError();
}

cudaError_t gpu_classifier(enum dtype d, void *dlogits, void *losses, const void *logits, const int *targets, int N,
                           int V, int Vp, float dloss, cudaStream_t s) {
  BY_DTYPE(d, classifier, dlogits, losses, logits, targets, N, V, Vp, dloss, s);
}
