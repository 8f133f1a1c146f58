#include <stddef.h>

#include "fsdp/nn.h"

/* out[b,t,:] = wte[inp[b,t],:] + wpe[t,:] */
void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C) {
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++) {
    float *o = out + (size_t)bt * C;
    const float *we = wte + (size_t)inp[bt] * C;
    const float *pe = wpe + (size_t)(bt % T) * C;
    for (int c = 0; c < C; c++) o[c] = we[c] + pe[c];
  }
}

/* dwte[inp[b,t],:] += dout[b,t,:]; dwpe[t,:] += sum_b dout[b,t,:].
 * Serial over rows: a token may repeat, so rows of dwte would race. The loop is
 * a few B*T*C additions, negligible next to the matmuls. */
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C) {
  for (int bt = 0; bt < B * T; bt++) {
    const float *d = dout + (size_t)bt * C;
    if (dwte) {
      float *dwe = dwte + (size_t)inp[bt] * C;
      for (int c = 0; c < C; c++) dwe[c] += d[c];
    }
    if (dwpe) {
      float *dpe = dwpe + (size_t)(bt % T) * C;
      for (int c = 0; c < C; c++) dpe[c] += d[c];
    }
  }
}
