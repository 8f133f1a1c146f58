#include <math.h>
#include <stddef.h>

#include "cpu.h"

#define LN_EPS 1e-5f
/* Columns per task in the weight/bias gradient: each task owns a block of
 * columns, so threads never share an accumulator and rows stay contiguous. */
#define LN_COL_BLOCK 64

/* mean = sum(x) / C, var = sum((x - mean)^2) / C (biased, as PyTorch),
 * rstd = 1 / sqrt(var + eps), out = (x - mean) * rstd * weight + bias.
 * Two passes over the row: var from centred values does not cancel. */
static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                       const float *bias, int N, int C) {
#pragma omp parallel for
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float m = 0.0f;
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    float v = 0.0f;
    for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
    v /= C;
    float s = 1.0f / sqrtf(v + LN_EPS);
    float *o = out + (size_t)i * C;
    for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

/* With norm = (x - mean) * rstd and dnorm = dout * weight:
 * dbias += sum_rows dout, dweight += sum_rows dout * norm,
 * dx += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)). */
static void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C) {
  if (dinp) {
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
      const float *x = inp + (size_t)i * C;
      const float *d = dout + (size_t)i * C;
      float m = mean[i], s = rstd[i];
      float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
      for (int c = 0; c < C; c++) {
        float dnorm = d[c] * weight[c];
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * (x[c] - m) * s;
      }
      dnorm_mean /= C;
      dnorm_norm_mean /= C;
      float *dx = dinp + (size_t)i * C;
      for (int c = 0; c < C; c++) {
        float norm = (x[c] - m) * s;
        dx[c] += s * (d[c] * weight[c] - dnorm_mean - norm * dnorm_norm_mean);
      }
    }
  }
  if (dweight || dbias) {
    int nblocks = (C + LN_COL_BLOCK - 1) / LN_COL_BLOCK;
#pragma omp parallel for
    for (int blk = 0; blk < nblocks; blk++) {
      int c0 = blk * LN_COL_BLOCK;
      int c1 = c0 + LN_COL_BLOCK < C ? c0 + LN_COL_BLOCK : C;
      for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        const float *d = dout + (size_t)i * C;
        float m = mean[i], s = rstd[i];
        for (int c = c0; c < c1; c++) {
          if (dbias) dbias[c] += d[c];
          if (dweight) dweight[c] += d[c] * (x[c] - m) * s;
        }
      }
    }
  }
}

void cpu_layernorm_forward(void *p) {
  const struct layernorm_args *a = p;
  layernorm_forward(f32(a->out), f32(a->mean), f32(a->rstd), f32(a->inp), f32(a->weight), f32(a->bias), rows(a->inp),
                    cols(a->inp));
}

void cpu_layernorm_backward(void *p) {
  const struct layernorm_backward_args *a = p;
  layernorm_backward(f32(a->dinp), f32(a->dweight), f32(a->dbias), f32(a->dout), f32(a->inp),
                     f32(a->weight), f32(a->mean), f32(a->rstd), rows(a->inp), cols(a->inp));
}
