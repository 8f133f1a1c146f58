#include <stddef.h>

#include "fsdp/nn.h"

/* out = a + b */
void residual_forward(float *out, const float *a, const float *b, int N) {
#pragma omp parallel for
  for (int i = 0; i < N; i++) out[i] = a[i] + b[i];
}
