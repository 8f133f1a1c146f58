#include <math.h>
#include <stddef.h>

#include "cpu.h"

/* As in gelu.c: declaring expf an OpenMP simd function lets the row loop call
 * glibc's vector expf without -ffast-math. */
#pragma omp declare simd notinbranch
float expf(float x);

/* probs[i,:] = exp(x - max) / sum(exp(x - max)); losses[i] = log(sum) - (x[target] - max).
 * The loss comes from the logit, not log(probs[target]), so it stays finite when
 * the probability underflows. probs may alias logits: each element is read
 * before it is overwritten, and x[target] is kept aside first. The sum is in
 * double since V can be 50257 terms. */
static void softmax_crossentropy_forward(float *probs, float *losses, const float *logits, const int *targets, int N,
                                  int V) {
#pragma omp parallel for
  for (int i = 0; i < N; i++) {
    const float *x = logits + (size_t)i * V;
    float *p = probs + (size_t)i * V;
    float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
    for (int j = 0; j < V; j++) maxval = x[j] > maxval ? x[j] : maxval;
    float target_logit = x[targets[i]];
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < V; j++) {
      p[j] = expf(x[j] - maxval);
      sum += p[j];
    }
    float inv = (float)(1.0 / sum);
#pragma omp simd
    for (int j = 0; j < V; j++) p[j] *= inv;
    losses[i] = (float)(log(sum) - (double)(target_logit - maxval));
  }
}

/* dlogits[i,:] += (probs[i,:] - onehot(targets[i])) * dloss */
static void softmax_crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N,
                                   int V) {
#pragma omp parallel for
  for (int i = 0; i < N; i++) {
    const float *p = probs + (size_t)i * V;
    float *dl = dlogits + (size_t)i * V;
    for (int j = 0; j < V; j++) dl[j] += p[j] * dloss;
    dl[targets[i]] -= dloss;
  }
}

void cpu_softmax_crossentropy_forward(void *p) {
  const struct crossentropy_args *a = p;
  softmax_crossentropy_forward(f32(a->probs), f32(a->losses), f32(a->logits), i32(a->targets), rows(a->logits),
                               cols(a->logits));
}

void cpu_softmax_crossentropy_backward(void *p) {
  const struct crossentropy_backward_args *a = p;
  softmax_crossentropy_backward(f32(a->dlogits), f32(a->probs), i32(a->targets), a->dloss, rows(a->probs),
                                cols(a->probs));
}
