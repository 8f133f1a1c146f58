#include <stddef.h>

#include "fsdp/nn.h"

/* out = a + b */
void residual_forward(float *out, const float *a, const float *b, int N) {
#pragma omp parallel for
  for (int i = 0; i < N; i++) out[i] = a[i] + b[i];
}

/* da += dout; db += dout */
void residual_backward(float *da, float *db, const float *dout, int N) {
#pragma omp parallel for
  for (int i = 0; i < N; i++) {
    if (da) da[i] += dout[i];
    if (db) db[i] += dout[i];
  }
}
