/* The norms' row sums sixteen rows at a time (lanes.h). Each sum mirrors its scalar twin
 * in layernorm.c or rmsnorm.c operation for operation: the same products in the same
 * order, added to the same accumulator in column order, with no fused multiply-add. */
#include "lanes.h"

#include <immintrin.h>

#include "avx512.h"

/* Columns c0 .. c0 + width - 1 (width at most 16) of the sixteen rows: col[j] holds
 * column c0 + j of every row, a lane per row. The loads stop at the rows' ends. */
AVX512 static inline void load_columns(__m512 col[LANES], const float *x, size_t stride, int c0, int width) {
  for (int r = 0; r < LANES; r++) col[r] = _mm512_maskz_loadu_ps(first16(width), x + (size_t)r * stride + c0);
  transpose16(col);
}

static int width_at(int c0, int C) { return C - c0 < LANES ? C - c0 : LANES; }

AVX512 void lanes_layernorm_stats(float *mean, float *rstd, const float *x, size_t stride, int C, float eps, float *t) {
  __m512 m = _mm512_setzero_ps(), col[LANES];
  for (int c0 = 0; c0 < C; c0 += LANES) {
    int width = width_at(c0, C);
    load_columns(col, x, stride, c0, width);
    for (int j = 0; j < width; j++) {
      _mm512_store_ps(t + (size_t)(c0 + j) * LANES, col[j]);
      m = _mm512_add_ps(m, col[j]);
    }
  }
  __m512 count = _mm512_set1_ps((float)C);
  m = _mm512_div_ps(m, count);
  __m512 v = _mm512_setzero_ps();
  for (int c = 0; c < C; c++) {
    __m512 centred = _mm512_sub_ps(_mm512_load_ps(t + (size_t)c * LANES), m);
    v = _mm512_add_ps(v, _mm512_mul_ps(centred, centred));
  }
  v = _mm512_div_ps(v, count);
  _mm512_storeu_ps(mean, m);
  __m512 root = _mm512_sqrt_ps(_mm512_add_ps(v, _mm512_set1_ps(eps)));
  _mm512_storeu_ps(rstd, _mm512_div_ps(_mm512_set1_ps(1.0f), root));
}

AVX512 void lanes_layernorm_backward_means(float *dnorm_mean, float *dnorm_norm_mean, const float *d, const float *x,
                                           size_t stride, const float *weight, const float *mean, const float *rstd,
                                           int C) {
  __m512 m = _mm512_loadu_ps(mean), s = _mm512_loadu_ps(rstd);
  __m512 sum = _mm512_setzero_ps(), norm_sum = _mm512_setzero_ps(), dcol[LANES], xcol[LANES];
  for (int c0 = 0; c0 < C; c0 += LANES) {
    int width = width_at(c0, C);
    load_columns(dcol, d, stride, c0, width);
    load_columns(xcol, x, stride, c0, width);
    for (int j = 0; j < width; j++) {
      __m512 dnorm = _mm512_mul_ps(dcol[j], _mm512_set1_ps(weight[c0 + j]));
      sum = _mm512_add_ps(sum, dnorm);
      norm_sum = _mm512_add_ps(norm_sum, _mm512_mul_ps(_mm512_mul_ps(dnorm, _mm512_sub_ps(xcol[j], m)), s));
    }
  }
  __m512 count = _mm512_set1_ps((float)C);
  _mm512_storeu_ps(dnorm_mean, _mm512_div_ps(sum, count));
  _mm512_storeu_ps(dnorm_norm_mean, _mm512_div_ps(norm_sum, count));
}

AVX512 void lanes_rmsnorm_rstd(float *rstd, const float *x, size_t stride, int C, float eps) {
  __m512 ss = _mm512_setzero_ps(), col[LANES];
  for (int c0 = 0; c0 < C; c0 += LANES) {
    int width = width_at(c0, C);
    load_columns(col, x, stride, c0, width);
    for (int j = 0; j < width; j++) ss = _mm512_add_ps(ss, _mm512_mul_ps(col[j], col[j]));
  }
  __m512 mean_square = _mm512_div_ps(ss, _mm512_set1_ps((float)C));
  __m512 root = _mm512_sqrt_ps(_mm512_add_ps(mean_square, _mm512_set1_ps(eps)));
  _mm512_storeu_ps(rstd, _mm512_div_ps(_mm512_set1_ps(1.0f), root));
}

AVX512 void lanes_rmsnorm_backward_mean(float *dnorm_norm_mean, const float *d, const float *x, size_t stride,
                                        const float *weight, const float *rstd, int C) {
  __m512 s = _mm512_loadu_ps(rstd), sum = _mm512_setzero_ps(), dcol[LANES], xcol[LANES];
  for (int c0 = 0; c0 < C; c0 += LANES) {
    int width = width_at(c0, C);
    load_columns(dcol, d, stride, c0, width);
    load_columns(xcol, x, stride, c0, width);
    for (int j = 0; j < width; j++) {
      __m512 dw = _mm512_mul_ps(dcol[j], _mm512_set1_ps(weight[c0 + j]));
      sum = _mm512_add_ps(sum, _mm512_mul_ps(_mm512_mul_ps(dw, xcol[j]), s));
    }
  }
  _mm512_storeu_ps(dnorm_norm_mean, _mm512_div_ps(sum, _mm512_set1_ps((float)C)));
}
