#include <math.h>
#include <stddef.h>

#include "lanes.h"
#include "typed.h"

#define LN_EPS 1e-5f
/* Columns per task in the weight/bias gradient: each task owns a block of
 * columns, so threads never share an accumulator and rows stay contiguous. */
#define LN_COL_BLOCK 64

/* mean = sum(x) / C, var = sum((x - mean)^2) / C (biased, as PyTorch),
 * rstd = 1 / sqrt(var + eps). Two passes over the row: var from centred values does not
 * cancel. The scalar twin of lanes_layernorm_stats. */
static void layernorm_stats(float *mean, float *rstd, const float *x, int C) {
  float m = 0.0f;
  for (int c = 0; c < C; c++) m += x[c];
  m /= C;
  float v = 0.0f;
  for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
  v /= C;
  *mean = m;
  *rstd = 1.0f / sqrtf(v + LN_EPS);
}

/* out = (x - mean) * rstd * weight + bias */
static void layernorm_apply(float *o, const float *x, const float *weight, const float *bias, float m, float s,
                            int C) {
  for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
}

/* A task takes norm_rows_per_task() rows; a 16-bit one widens them (and, once per
 * thread, weight and bias) and rounds each row of out once. */
static void layernorm_forward(struct tensor out, float *mean, float *rstd, struct tensor inp, struct tensor weight,
                              struct tensor bias, int N, int C) {
  int block = norm_rows_per_task(), tasks = (N + block - 1) / block;
#pragma omp parallel
  {
    float *t = cpu_scratch((size_t)(LANES + 3 + block) * C * sizeof(float));
    float *wbuf = t + (size_t)LANES * C, *bbuf = wbuf + C, *obuf = bbuf + C, *xbuf = obuf + C;
    const float *w = span_in(weight, 0, (size_t)C, wbuf), *b = span_in(bias, 0, (size_t)C, bbuf);
#pragma omp for
    for (int task = 0; task < tasks; task++) {
      int i0 = task * block, n = N - i0 < block ? N - i0 : block;
      const float *x = span_in(inp, (size_t)i0 * C, (size_t)n * C, xbuf);
      if (n == LANES)
        lanes_layernorm_stats(mean + i0, rstd + i0, x, (size_t)C, C, LN_EPS, t);
      else
        for (int r = 0; r < n; r++) layernorm_stats(&mean[i0 + r], &rstd[i0 + r], x + (size_t)r * C, C);
      for (int r = 0; r < n; r++) {
        size_t row = (size_t)(i0 + r) * C;
        float *o = span_out(out, row, obuf);
        layernorm_apply(o, x + (size_t)r * C, w, b, mean[i0 + r], rstd[i0 + r], C);
        span_store(out, row, (size_t)C, o);
      }
    }
  }
}

/* With norm = (x - mean) * rstd and dnorm = dout * weight: mean(dnorm) and
 * mean(dnorm * norm). The scalar twin of lanes_layernorm_backward_means. */
static void layernorm_backward_means(float *dnorm_mean, float *dnorm_norm_mean, const float *d, const float *x,
                                     const float *weight, float m, float s, int C) {
  float sum = 0.0f, norm_sum = 0.0f;
  for (int c = 0; c < C; c++) {
    float dnorm = d[c] * weight[c];
    sum += dnorm;
    norm_sum += dnorm * (x[c] - m) * s;
  }
  *dnorm_mean = sum / C;
  *dnorm_norm_mean = norm_sum / C;
}

/* dx += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)). */
static void layernorm_backward_apply(float *dx, const float *d, const float *x, const float *weight, float m, float s,
                                     float dnorm_mean, float dnorm_norm_mean, int C) {
  for (int c = 0; c < C; c++) {
    float norm = (x[c] - m) * s;
    dx[c] += s * (d[c] * weight[c] - dnorm_mean - norm * dnorm_norm_mean);
  }
}

static void layernorm_backward_input(struct tensor dinp, struct tensor dout, struct tensor inp, struct tensor weight,
                                     const float *mean, const float *rstd, int N, int C) {
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
      float dnorm_mean[LANES], dnorm_norm_mean[LANES];
      if (n == LANES)
        lanes_layernorm_backward_means(dnorm_mean, dnorm_norm_mean, d, x, (size_t)C, w, mean + i0, rstd + i0, C);
      else
        for (int r = 0; r < n; r++)
          layernorm_backward_means(&dnorm_mean[r], &dnorm_norm_mean[r], d + (size_t)r * C, x + (size_t)r * C, w,
                                   mean[i0 + r], rstd[i0 + r], C);
      for (int r = 0; r < n; r++) {
        size_t row = (size_t)(i0 + r) * C;
        float *dx = span_inout(dinp, row, (size_t)C, dxbuf);
        layernorm_backward_apply(dx, d + (size_t)r * C, x + (size_t)r * C, w, mean[i0 + r], rstd[i0 + r],
                                 dnorm_mean[r], dnorm_norm_mean[r], C);
        span_store(dinp, row, (size_t)C, dx);
      }
    }
  }
}

/* dbias += sum_rows dout, dweight += sum_rows dout * norm: each column's sum runs over
 * the rows in order, from the gradient's value, in a local block (the compiler keeps it
 * in registers: no store per row) and is stored once. */
static void layernorm_backward_params(struct tensor dweight, struct tensor dbias, struct tensor dout,
                                      struct tensor inp, const float *mean, const float *rstd, int N, int C) {
  int nblocks = (C + LN_COL_BLOCK - 1) / LN_COL_BLOCK;
#pragma omp parallel for
  for (int blk = 0; blk < nblocks; blk++) {
    int c0 = blk * LN_COL_BLOCK;
    int width = c0 + LN_COL_BLOCK < C ? LN_COL_BLOCK : C - c0;
    float *buf = span_scratch(inp.dtype, 2 * SUM_ROWS * LN_COL_BLOCK);
    float dw[LN_COL_BLOCK] = {0}, db[LN_COL_BLOCK] = {0};
    if (dweight.data) span_get(dweight, (size_t)c0, (size_t)width, dw);
    if (dbias.data) span_get(dbias, (size_t)c0, (size_t)width, db);
    for (int i0 = 0; i0 < N; i0 += SUM_ROWS) {
      int rows = N - i0 < SUM_ROWS ? N - i0 : SUM_ROWS;
      size_t at = (size_t)i0 * C + c0, ldx, ldd;
      const float *x = rows_view(inp, at, rows, width, (size_t)C, buf, &ldx);
      const float *d = rows_view(dout, at, rows, width, (size_t)C, scratch_at(buf, SUM_ROWS * LN_COL_BLOCK), &ldd);
      for (int r = 0; r < rows; r++) {
        float m = mean[i0 + r], s = rstd[i0 + r];
        for (int c = 0; c < width; c++) {
          db[c] += d[r * ldd + c];
          dw[c] += d[r * ldd + c] * (x[r * ldx + c] - m) * s;
        }
      }
    }
    if (dweight.data) span_put(dweight, (size_t)c0, (size_t)width, dw);
    if (dbias.data) span_put(dbias, (size_t)c0, (size_t)width, db);
  }
}

void cpu_layernorm_forward(void *p) {
  const struct layernorm_args *a = p;
  layernorm_forward(a->out, f32(a->mean), f32(a->rstd), a->inp, a->weight, a->bias, rows(a->inp), cols(a->inp));
}

void cpu_layernorm_backward(void *p) {
  const struct layernorm_backward_args *a = p;
  int N = rows(a->inp), C = cols(a->inp);
  if (a->dinp.data) layernorm_backward_input(a->dinp, a->dout, a->inp, a->weight, f32(a->mean), f32(a->rstd), N, C);
  if (a->dweight.data || a->dbias.data)
    layernorm_backward_params(a->dweight, a->dbias, a->dout, a->inp, f32(a->mean), f32(a->rstd), N, C);
}
