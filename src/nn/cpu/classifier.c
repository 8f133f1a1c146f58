#include <math.h>
#include <stddef.h>

#include "typed.h"

/* glibc's libmvec has vector versions of expf, but math.h declares them only under
 * -ffast-math. Declaring expf an OpenMP simd function lets the row loop call the vector
 * version without fast-math (swiglu.c does the same). */
#if defined(__x86_64__) /* libmvec: Debian 12's glibc (2.36) has none for aarch64 */
#pragma omp declare simd notinbranch
#endif
float expf(float x);

/* The fused classifier on a row x of Vp logits, of which the first V are the vocabulary's
 * (the rest padding, outside the softmax):
 *   loss = log(sum) - (x[target] - max),  sum = sum_{j < V} exp(x_j - max)
 *   with d: d_j = (exp(x_j - max) / sum - [j == target]) * dloss for j < V, 0 past V.
 * The loss comes from the logit, not log(p[target]), so it stays finite where the
 * probability underflows; the sum is in double since V can be 50257 terms. d may be x:
 * x[target] is kept aside before anything is written. */
static void classifier_row(float *d, float *loss, const float *x, int target, int V, int Vp, float dloss) {
  float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
  for (int j = 0; j < V; j++) maxval = x[j] > maxval ? x[j] : maxval;
  float target_logit = x[target];
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < V; j++) sum += expf(x[j] - maxval);
  if (loss) *loss = (float)(log(sum) - (double)(target_logit - maxval));
  if (!d) return;
  float scale = (float)(1.0 / sum) * dloss;
#pragma omp simd
  for (int j = 0; j < V; j++) d[j] = expf(x[j] - maxval) * scale;
  d[target] -= dloss;
  for (int j = V; j < Vp; j++) d[j] = 0.0f;
}

/* A row at a time; dlogits may be logits (a 16-bit row is widened whole first). */
static void classifier(struct tensor dlogits, float *losses, struct tensor logits, const int *targets, int N, int V,
                       int Vp, float dloss) {
#pragma omp parallel
  {
    float *buf = span_scratch(logits.dtype, 2 * (size_t)Vp);
#pragma omp for
    for (int i = 0; i < N; i++) {
      size_t row = (size_t)i * Vp;
      const float *x = span_in(logits, row, (size_t)Vp, buf);
      float *d = dlogits.data ? span_out(dlogits, row, scratch_at(buf, (size_t)Vp)) : NULL;
      classifier_row(d, losses ? &losses[i] : NULL, x, targets[i], V, Vp, dloss);
      if (d) span_store(dlogits, row, (size_t)Vp, d);
    }
  }
}

void cpu_classifier(void *p) {
  const struct classifier_args *a = p;
  classifier(a->dlogits, a->losses.data ? f32(a->losses) : NULL, a->logits, i32(a->targets), rows(a->logits),
             a->vocab, cols(a->logits), a->dloss);
}
