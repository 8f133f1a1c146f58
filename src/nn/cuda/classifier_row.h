/* Private to src/nn/cuda: the steps of classifier.cu's row that decide what -inf logits and
 * a target past the vocabulary do, as functions the kernel calls and, being plain C too,
 * tests/cuda_classifier_test.c runs on the CPU against the CPU twin (../cpu/classifier.c)
 * where there is no GPU. */
#ifndef FSDP_NN_CUDA_CLASSIFIER_ROW_H
#define FSDP_NN_CUDA_CLASSIFIER_ROW_H

#include <math.h>

#ifdef __CUDACC__
#define CLASSIFIER_FN static __host__ __device__ inline
#else
#define CLASSIFIER_FN static inline
#endif
/* The CPU's roundings: a product and a difference each rounded, never fused. */
#ifdef __CUDA_ARCH__
#define CLASSIFIER_MUL(a, b) __fmul_rn(a, b)
#define CLASSIFIER_SUB(a, b) __fsub_rn(a, b)
#else
#define CLASSIFIER_MUL(a, b) ((a) * (b))
#define CLASSIFIER_SUB(a, b) ((a) - (b))
#endif

/* A block of this many threads takes a row; thread t its runs of W logits from t W, a
 * block's width apart. */
enum { CLASSIFIER_THREADS = 512 };

/* A thread's running maximum and its sum of exp(x - maximum), after a run x of w logits
 * of which the first n are the vocabulary's: the sum is rescaled where the maximum moves.
 * A run with no logit above -inf adds nothing and moves nothing: its terms are exp(-inf)
 * = 0, while taken against a maximum still -inf they would be exp(-inf - -inf) = NaN, and
 * every finite term of the thread lost with them (the review of 2026-11-28, item 1). */
CLASSIFIER_FN void classifier_run(float *maxval, double *sum, const float *x, int w, int n) {
  float run_max = -INFINITY;
  for (int k = 0; k < w; k++)
    if (k < n) run_max = fmaxf(run_max, x[k]);
  if (run_max == -INFINITY) return;
  if (run_max > *maxval) {
    *sum *= expf(*maxval - run_max);
    *maxval = run_max;
  }
  for (int k = 0; k < w; k++)
    if (k < n) *sum += expf(x[k] - *maxval);
}

/* A thread's sum rescaled to the row's maximum, its part of the row's sum: 0 from a
 * thread that saw no logit above -inf. */
CLASSIFIER_FN double classifier_share(float maxval, double sum, float row_max) {
  return sum > 0.0 ? sum * expf(maxval - row_max) : 0.0;
}

/* The row's loss, log(sum) - (x[target] - max): from the logit, finite where p underflows. */
CLASSIFIER_FN float classifier_loss(double sum, float target_logit, float row_max) {
  return (float)(log(sum) - (double)(target_logit - row_max));
}

/* The gradient of column j with logit x: (exp(x - max) / sum - [j == target]) dloss for j
 * < V, where scale is (1 / sum) dloss; 0 in the padding past V, a target there included,
 * as the CPU zeroes the padding last (the review of 2026-11-28, item 2). */
CLASSIFIER_FN float classifier_grad(float x, int j, int V, int target, float row_max, float scale, float dloss) {
  if (j >= V) return 0.0f;
  float d = CLASSIFIER_MUL(expf(x - row_max), scale);
  return j == target ? CLASSIFIER_SUB(d, dloss) : d;
}

#endif
