#include <stddef.h>

#include "cpu.h"

/* out = a + b */
static void residual_forward(float *out, const float *a, const float *b, int N) {
#pragma omp parallel for
  for (int i = 0; i < N; i++) out[i] = a[i] + b[i];
}

void cpu_residual_forward(void *p) {
  const struct residual_args *a = p;
  residual_forward(f32(a->out), f32(a->a), f32(a->b), numel(a->out));
}
