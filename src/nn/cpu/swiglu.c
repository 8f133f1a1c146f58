#include <math.h>
#include <stddef.h>

#include "typed.h"

/* As in classifier.c: declaring expf an OpenMP simd function lets the loops call glibc's
 * vector expf without -ffast-math. */
#if defined(__x86_64__) /* libmvec: Debian 12's glibc (2.36) has none for aarch64 */
#pragma omp declare simd notinbranch
#endif
float expf(float x);

/* For g below about -88, expf(-g) is inf and the sigmoid 0, which is silu's limit
 * there: no NaN. */
static inline float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

/* out = silu(g) * u, silu(g) = g * sigmoid(g). */
static void swiglu_forward(float *const *s, int n) {
  float *out = s[0];
  const float *gate = s[1], *up = s[2];
#pragma omp simd
  for (int i = 0; i < n; i++) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

/* d silu(g) / dg = sig (1 + g (1 - sig)): dgate += dout * u * that, dup += dout * silu(g). */
static void swiglu_backward_add(float *const *s, int n) {
  float *dgate = s[0], *dup = s[1];
  const float *dout = s[2], *gate = s[3], *up = s[4];
#pragma omp simd
  for (int i = 0; i < n; i++) {
    float g = gate[i], sig = sigmoid(g);
    dgate[i] += dout[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
    dup[i] += dout[i] * g * sig;
  }
}

/* The same, written (NN_GRAD_SET). */
static void swiglu_backward_set(float *const *s, int n) {
  float *dgate = s[0], *dup = s[1];
  const float *dout = s[2], *gate = s[3], *up = s[4];
#pragma omp simd
  for (int i = 0; i < n; i++) {
    float g = gate[i], sig = sigmoid(g);
    dgate[i] = dout[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
    dup[i] = dout[i] * g * sig;
  }
}

void cpu_swiglu_forward(void *p) {
  const struct swiglu_args *a = p;
  struct elementwise_operand operands[] = {{a->out, SPAN_WRITE}, {a->gate, SPAN_READ}, {a->up, SPAN_READ}};
  elementwise(swiglu_forward, tensor_numel(&a->gate), 3, operands);
}

void cpu_swiglu_backward(void *p) {
  const struct swiglu_backward_args *a = p;
  enum span_use grads = a->mode == NN_GRAD_ADD ? SPAN_UPDATE : SPAN_WRITE;
  struct elementwise_operand operands[] = {{a->dgate, grads}, {a->dup, grads},   {a->dout, SPAN_READ},
                                           {a->gate, SPAN_READ}, {a->up, SPAN_READ}};
  elementwise(a->mode == NN_GRAD_ADD ? swiglu_backward_add : swiglu_backward_set, tensor_numel(&a->gate), 5,
              operands);
}
