#include <math.h>
#include <stddef.h>

#include "lanes.h"
#include "typed.h"

/* Columns per task in the weight gradient, as in layernorm.c: each task owns a block of
 * columns, so threads never share an accumulator. */
#define RMS_COL_BLOCK 64

/* rstd = 1 / sqrt(sum(x^2) / C + eps): the scalar twin of lanes_rmsnorm_rstd. */
static float rmsnorm_rstd(const float *x, float eps, int C) {
  float ss = 0.0f;
  for (int c = 0; c < C; c++) ss += x[c] * x[c];
  return 1.0f / sqrtf(ss / C + eps);
}

/* A task takes norm_rows_per_task() rows: out = x * rstd * weight. */
static void rmsnorm_forward(struct tensor out, float *rstd, struct tensor inp, struct tensor weight, float eps, int N,
                            int C) {
  int block = norm_rows_per_task(), tasks = (N + block - 1) / block;
#pragma omp parallel
  {
    float *wbuf = cpu_scratch((size_t)(2 + block) * C * sizeof(float));
    float *obuf = wbuf + C, *xbuf = obuf + C;
    const float *w = span_in(weight, 0, (size_t)C, wbuf);
#pragma omp for
    for (int task = 0; task < tasks; task++) {
      int i0 = task * block, n = N - i0 < block ? N - i0 : block;
      const float *x = span_in(inp, (size_t)i0 * C, (size_t)n * C, xbuf);
      if (n == LANES)
        lanes_rmsnorm_rstd(rstd + i0, x, (size_t)C, C, eps);
      else
        for (int r = 0; r < n; r++) rstd[i0 + r] = rmsnorm_rstd(x + (size_t)r * C, eps, C);
      for (int r = 0; r < n; r++) {
        size_t row = (size_t)(i0 + r) * C;
        const float *xr = x + (size_t)r * C;
        float *o = span_out(out, row, obuf), s = rstd[i0 + r];
        for (int c = 0; c < C; c++) o[c] = xr[c] * s * w[c];
        span_store(out, row, (size_t)C, o);
      }
    }
  }
}

/* With norm = x * rstd and dnorm = dout * weight: mean(dnorm * norm), the scalar twin of
 * lanes_rmsnorm_backward_mean. */
static float rmsnorm_backward_mean(const float *d, const float *x, const float *weight, float s, int C) {
  float sum = 0.0f;
  for (int c = 0; c < C; c++) sum += d[c] * weight[c] * x[c] * s;
  return sum / C;
}

/* dx += rstd * (dnorm - norm * mean(dnorm * norm)) (rstd's own gradient is the second
 * term: there is no mean to subtract, unlike layernorm). */
static void rmsnorm_backward_input(struct tensor dinp, struct tensor dout, struct tensor inp, struct tensor weight,
                                   const float *rstd, int N, int C) {
  int block = norm_rows_per_task(), tasks = (N + block - 1) / block;
#pragma omp parallel
  {
    float *wbuf = cpu_scratch((size_t)(2 + 2 * block) * C * sizeof(float));
    float *dxbuf = wbuf + C, *dbuf = dxbuf + C, *xbuf = dbuf + (size_t)block * C;
    const float *w = span_in(weight, 0, (size_t)C, wbuf);
#pragma omp for
    for (int task = 0; task < tasks; task++) {
      int i0 = task * block, n = N - i0 < block ? N - i0 : block;
      const float *d = span_in(dout, (size_t)i0 * C, (size_t)n * C, dbuf);
      const float *x = span_in(inp, (size_t)i0 * C, (size_t)n * C, xbuf);
      float dnorm_norm_mean[LANES];
      if (n == LANES)
        lanes_rmsnorm_backward_mean(dnorm_norm_mean, d, x, (size_t)C, w, rstd + i0, C);
      else
        for (int r = 0; r < n; r++)
          dnorm_norm_mean[r] = rmsnorm_backward_mean(d + (size_t)r * C, x + (size_t)r * C, w, rstd[i0 + r], C);
      for (int r = 0; r < n; r++) {
        size_t row = (size_t)(i0 + r) * C;
        const float *dr = d + (size_t)r * C, *xr = x + (size_t)r * C;
        float *dx = span_inout(dinp, row, (size_t)C, dxbuf), s = rstd[i0 + r];
        for (int c = 0; c < C; c++) dx[c] += s * (dr[c] * w[c] - xr[c] * s * dnorm_norm_mean[r]);
        span_store(dinp, row, (size_t)C, dx);
      }
    }
  }
}

/* dweight += sum_rows dout * norm, each column's sum over the rows in order, stored once. */
static void rmsnorm_backward_weight(struct tensor dweight, struct tensor dout, struct tensor inp, const float *rstd,
                                    int N, int C) {
  int nblocks = (C + RMS_COL_BLOCK - 1) / RMS_COL_BLOCK;
#pragma omp parallel for
  for (int blk = 0; blk < nblocks; blk++) {
    int c0 = blk * RMS_COL_BLOCK;
    int width = c0 + RMS_COL_BLOCK < C ? RMS_COL_BLOCK : C - c0;
    size_t rows_floats = SUM_ROWS * RMS_COL_BLOCK;
    float *buf = span_scratch(inp.dtype, RMS_COL_BLOCK + 2 * rows_floats);
    float *dw = span_inout(dweight, (size_t)c0, (size_t)width, buf);
    for (int i0 = 0; i0 < N; i0 += SUM_ROWS) {
      int rows = N - i0 < SUM_ROWS ? N - i0 : SUM_ROWS;
      size_t at = (size_t)i0 * C + c0, ldx, ldd;
      const float *x = rows_view(inp, at, rows, width, (size_t)C, scratch_at(buf, RMS_COL_BLOCK), &ldx);
      const float *d =
          rows_view(dout, at, rows, width, (size_t)C, scratch_at(buf, RMS_COL_BLOCK + rows_floats), &ldd);
      for (int r = 0; r < rows; r++) {
        float s = rstd[i0 + r];
        for (int c = 0; c < width; c++) dw[c] += d[r * ldd + c] * x[r * ldx + c] * s;
      }
    }
    span_store(dweight, (size_t)c0, (size_t)width, dw);
  }
}

void cpu_rmsnorm_forward(void *p) {
  const struct rmsnorm_args *a = p;
  rmsnorm_forward(a->out, f32(a->rstd), a->inp, a->weight, a->eps, rows(a->inp), cols(a->inp));
}

void cpu_rmsnorm_backward(void *p) {
  const struct rmsnorm_backward_args *a = p;
  int N = rows(a->inp), C = cols(a->inp);
  if (a->dinp.data) rmsnorm_backward_input(a->dinp, a->dout, a->inp, a->weight, f32(a->rstd), N, C);
  if (a->dweight.data) rmsnorm_backward_weight(a->dweight, a->dout, a->inp, f32(a->rstd), N, C);
}
