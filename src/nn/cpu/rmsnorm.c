#include <math.h>
#include <stddef.h>

#include "cpu.h"

/* Columns per task in the weight gradient, as in layernorm.c: each task owns a block
 * of columns, so threads never share an accumulator. */
#define RMS_COL_BLOCK 64

/* rstd = 1 / sqrt(sum(x^2) / C + eps), out = x * rstd * weight. */
static void rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, float eps, int N,
                            int C) {
#pragma omp parallel for
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float ss = 0.0f;
    for (int c = 0; c < C; c++) ss += x[c] * x[c];
    float s = 1.0f / sqrtf(ss / C + eps);
    float *o = out + (size_t)i * C;
    for (int c = 0; c < C; c++) o[c] = x[c] * s * weight[c];
    rstd[i] = s;
  }
}

/* With norm = x * rstd and dnorm = dout * weight: dweight += sum_rows dout * norm,
 * dx += rstd * (dnorm - norm * mean(dnorm * norm)) (rstd's own gradient is the second
 * term: there is no mean to subtract, unlike layernorm). */
static void rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp, const float *weight,
                             const float *rstd, int N, int C) {
  if (dinp) {
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
      const float *x = inp + (size_t)i * C;
      const float *d = dout + (size_t)i * C;
      float s = rstd[i];
      float dnorm_norm_mean = 0.0f;
      for (int c = 0; c < C; c++) dnorm_norm_mean += d[c] * weight[c] * x[c] * s;
      dnorm_norm_mean /= C;
      float *dx = dinp + (size_t)i * C;
      for (int c = 0; c < C; c++) dx[c] += s * (d[c] * weight[c] - x[c] * s * dnorm_norm_mean);
    }
  }
  if (dweight) {
    int nblocks = (C + RMS_COL_BLOCK - 1) / RMS_COL_BLOCK;
#pragma omp parallel for
    for (int blk = 0; blk < nblocks; blk++) {
      int c0 = blk * RMS_COL_BLOCK;
      int c1 = c0 + RMS_COL_BLOCK < C ? c0 + RMS_COL_BLOCK : C;
      for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        const float *d = dout + (size_t)i * C;
        float s = rstd[i];
        for (int c = c0; c < c1; c++) dweight[c] += d[c] * x[c] * s;
      }
    }
  }
}

void cpu_rmsnorm_forward(void *p) {
  const struct rmsnorm_args *a = p;
  rmsnorm_forward(f32(a->out), f32(a->rstd), f32(a->inp), f32(a->weight), a->eps, rows(a->inp), cols(a->inp));
}

void cpu_rmsnorm_backward(void *p) {
  const struct rmsnorm_backward_args *a = p;
  rmsnorm_backward(f32(a->dinp), f32(a->dweight), f32(a->dout), f32(a->inp), f32(a->weight),
                   f32(a->rstd), rows(a->inp), cols(a->inp));
}
