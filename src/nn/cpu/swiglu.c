#include <math.h>
#include <stddef.h>

#include "cpu.h"

/* As in gelu.c: declaring expf an OpenMP simd function lets the loops call glibc's
 * vector expf without -ffast-math. */
#pragma omp declare simd notinbranch
float expf(float x);

/* out = silu(g) * u, silu(g) = g * sigmoid(g). For g below about -88, expf(-g) is inf
 * and sigmoid 0, which is silu's limit there: no NaN. */
static void swiglu_forward(float *out, const float *gate, const float *up, int N) {
#pragma omp parallel for simd
  for (int i = 0; i < N; i++) {
    float g = gate[i];
    float sig = 1.0f / (1.0f + expf(-g));
    out[i] = g * sig * up[i];
  }
}

/* d silu(g) / dg = sig (1 + g (1 - sig)): dgate += dout * u * that, dup += dout * silu(g). */
static void swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up, int N) {
#pragma omp parallel for simd
  for (int i = 0; i < N; i++) {
    float g = gate[i];
    float sig = 1.0f / (1.0f + expf(-g));
    dgate[i] += dout[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
    dup[i] += dout[i] * g * sig;
  }
}

void cpu_swiglu_forward(void *p) {
  const struct swiglu_args *a = p;
  swiglu_forward(f32(a->out), f32(a->gate), f32(a->up), numel(a->gate));
}

void cpu_swiglu_backward(void *p) {
  const struct swiglu_backward_args *a = p;
  swiglu_backward(f32(a->dgate), f32(a->dup), f32(a->dout), f32(a->gate), f32(a->up), numel(a->gate));
}
