#include <stddef.h>

#include "cpu.h"

/* out[b,t,:] = wte[inp[b,t],:] + wpe[t,:], or without wpe (NULL) the token's row alone. */
static void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C) {
#pragma omp parallel for
  for (int bt = 0; bt < B * T; bt++) {
    float *o = out + (size_t)bt * C;
    const float *we = wte + (size_t)inp[bt] * C;
    const float *pe = wpe ? wpe + (size_t)(bt % T) * C : NULL;
    for (int c = 0; c < C; c++) o[c] = pe ? we[c] + pe[c] : we[c];
  }
}

/* dwte[inp[b,t],:] += dout[b,t,:]; dwpe[t,:] += sum_b dout[b,t,:].
 * Serial over rows: a token may repeat, so rows of dwte would race. The loop is
 * a few B*T*C additions, negligible next to the matmuls. */
static void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C) {
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

void cpu_encoder_forward(void *p) {
  const struct encoder_args *a = p;
  encoder_forward(f32(a->out), i32(a->inp), f32(a->wte), f32(a->wpe), dim(a->inp, 0), dim(a->inp, 1),
                  dim(a->wte, 1));
}

void cpu_encoder_backward(void *p) {
  const struct encoder_backward_args *a = p;
  encoder_backward(f32(a->dwte), f32(a->dwpe), f32(a->dout), i32(a->inp), dim(a->inp, 0),
                   dim(a->inp, 1), (int)tensor_cols(&a->dout));
}
