#include <math.h>
#include <stddef.h>

#include "typed.h"

/* As in gelu.c: declaring expf an OpenMP simd function lets the row loop call
 * glibc's vector expf without -ffast-math. */
#pragma omp declare simd notinbranch
float expf(float x);

/* p = exp(x - max) / sum(exp(x - max)); loss = log(sum) - (x[target] - max).
 * The loss comes from the logit, not log(p[target]), so it stays finite when
 * the probability underflows. p may be x: each element is read before it is
 * overwritten, and x[target] is kept aside first. The sum is in double since V
 * can be 50257 terms. */
static void softmax_crossentropy_row(float *p, float *loss, const float *x, int target, int V) {
  float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
  for (int j = 0; j < V; j++) maxval = x[j] > maxval ? x[j] : maxval;
  float target_logit = x[target];
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < V; j++) {
    p[j] = expf(x[j] - maxval);
    sum += p[j];
  }
  float inv = (float)(1.0 / sum);
#pragma omp simd
  for (int j = 0; j < V; j++) p[j] *= inv;
  *loss = (float)(log(sum) - (double)(target_logit - maxval));
}

/* probs may be logits: a 16-bit row is widened whole before its probabilities are stored. */
static void softmax_crossentropy_forward(struct tensor probs, float *losses, struct tensor logits, const int *targets,
                                         int N, int V) {
#pragma omp parallel
  {
    float *buf = span_scratch(logits.dtype, 2 * (size_t)V);
#pragma omp for
    for (int i = 0; i < N; i++) {
      size_t row = (size_t)i * V;
      const float *x = span_in(logits, row, (size_t)V, buf);
      float *p = span_out(probs, row, scratch_at(buf, (size_t)V));
      softmax_crossentropy_row(p, &losses[i], x, targets[i], V);
      span_store(probs, row, (size_t)V, p);
    }
  }
}

/* dlogits[i,:] += (probs[i,:] - onehot(targets[i])) * dloss */
static void softmax_crossentropy_backward(struct tensor dlogits, struct tensor probs, const int *targets, float dloss,
                                          int N, int V) {
#pragma omp parallel
  {
    float *buf = span_scratch(probs.dtype, 2 * (size_t)V);
#pragma omp for
    for (int i = 0; i < N; i++) {
      size_t row = (size_t)i * V;
      const float *p = span_in(probs, row, (size_t)V, buf);
      float *dl = span_inout(dlogits, row, (size_t)V, scratch_at(buf, (size_t)V));
      for (int j = 0; j < V; j++) dl[j] += p[j] * dloss;
      dl[targets[i]] -= dloss;
      span_store(dlogits, row, (size_t)V, dl);
    }
  }
}

void cpu_softmax_crossentropy_forward(void *p) {
  const struct crossentropy_args *a = p;
  softmax_crossentropy_forward(a->probs, f32(a->losses), a->logits, i32(a->targets), rows(a->logits),
                               cols(a->logits));
}

void cpu_softmax_crossentropy_backward(void *p) {
  const struct crossentropy_backward_args *a = p;
  softmax_crossentropy_backward(a->dlogits, a->probs, i32(a->targets), a->dloss, rows(a->probs), cols(a->probs));
}
