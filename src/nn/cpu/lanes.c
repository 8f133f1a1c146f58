/* The norms' row sums sixteen rows at a time (lanes.h): one AVX-512 vector of sixteen
 * lanes, or two AVX2 vectors of eight. Each sum mirrors its scalar twin in layernorm.c or
 * rmsnorm.c operation for operation: the same products in the same order, added to the
 * same accumulator in column order, with no fused multiply-add. */
#include "lanes.h"

#include "fsdp/error.h"

#if defined(__x86_64__)
#include "avx2.h"
#include "avx512.h"

static int width_at(int c0, int C, int lanes) { return C - c0 < lanes ? C - c0 : lanes; }

/* ---- AVX-512: a vector's lane a row ---- */

/* Columns c0 .. c0 + width - 1 (width at most 16) of the sixteen rows: col[j] holds
 * column c0 + j of every row, a lane per row. The loads stop at the rows' ends. */
AVX512 static inline void load_columns16(__m512 col[LANES], const float *x, size_t stride, int c0, int width) {
  for (int r = 0; r < LANES; r++) col[r] = _mm512_maskz_loadu_ps(first16(width), x + (size_t)r * stride + c0);
  transpose16(col);
}

AVX512 static void layernorm_stats_avx512(float *mean, float *rstd, const float *x, size_t stride, int C, float eps,
                                          float *t) {
  __m512 m = _mm512_setzero_ps(), col[LANES];
  for (int c0 = 0; c0 < C; c0 += LANES) {
    int width = width_at(c0, C, LANES);
    load_columns16(col, x, stride, c0, width);
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

AVX512 static void layernorm_backward_means_avx512(float *dnorm_mean, float *dnorm_norm_mean, const float *d,
                                                   const float *x, size_t stride, const float *weight,
                                                   const float *mean, const float *rstd, int C) {
  __m512 m = _mm512_loadu_ps(mean), s = _mm512_loadu_ps(rstd);
  __m512 sum = _mm512_setzero_ps(), norm_sum = _mm512_setzero_ps(), dcol[LANES], xcol[LANES];
  for (int c0 = 0; c0 < C; c0 += LANES) {
    int width = width_at(c0, C, LANES);
    load_columns16(dcol, d, stride, c0, width);
    load_columns16(xcol, x, stride, c0, width);
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

AVX512 static void rmsnorm_rstd_avx512(float *rstd, const float *x, size_t stride, int C, float eps) {
  __m512 ss = _mm512_setzero_ps(), col[LANES];
  for (int c0 = 0; c0 < C; c0 += LANES) {
    int width = width_at(c0, C, LANES);
    load_columns16(col, x, stride, c0, width);
    for (int j = 0; j < width; j++) ss = _mm512_add_ps(ss, _mm512_mul_ps(col[j], col[j]));
  }
  __m512 mean_square = _mm512_div_ps(ss, _mm512_set1_ps((float)C));
  __m512 root = _mm512_sqrt_ps(_mm512_add_ps(mean_square, _mm512_set1_ps(eps)));
  _mm512_storeu_ps(rstd, _mm512_div_ps(_mm512_set1_ps(1.0f), root));
}

AVX512 static void rmsnorm_backward_mean_avx512(float *dnorm_norm_mean, const float *d, const float *x, size_t stride,
                                                const float *weight, const float *rstd, int C) {
  __m512 s = _mm512_loadu_ps(rstd), sum = _mm512_setzero_ps(), dcol[LANES], xcol[LANES];
  for (int c0 = 0; c0 < C; c0 += LANES) {
    int width = width_at(c0, C, LANES);
    load_columns16(dcol, d, stride, c0, width);
    load_columns16(xcol, x, stride, c0, width);
    for (int j = 0; j < width; j++) {
      __m512 dw = _mm512_mul_ps(dcol[j], _mm512_set1_ps(weight[c0 + j]));
      sum = _mm512_add_ps(sum, _mm512_mul_ps(_mm512_mul_ps(dw, xcol[j]), s));
    }
  }
  _mm512_storeu_ps(dnorm_norm_mean, _mm512_div_ps(sum, _mm512_set1_ps((float)C)));
}

/* ---- AVX2: rows 0-7 in one vector's lanes, rows 8-15 in the other's ---- */

enum { HALF = LANES / 2 };

/* Columns c0 .. c0 + width - 1 (width at most 8) of the sixteen rows: col[g][j] holds
 * column c0 + j of rows 8g .. 8g + 7. The loads stop at the rows' ends. */
AVX2 static inline void load_columns8(__m256 col[2][HALF], const float *x, size_t stride, int c0, int width) {
  __m256i in = first8(width);
  for (int g = 0; g < 2; g++) {
    for (int r = 0; r < HALF; r++) col[g][r] = _mm256_maskload_ps(x + (size_t)(HALF * g + r) * stride + c0, in);
    transpose8(col[g]);
  }
}

AVX2 static void layernorm_stats_avx2(float *mean, float *rstd, const float *x, size_t stride, int C, float eps,
                                      float *t) {
  __m256 m[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, col[2][HALF];
  for (int c0 = 0; c0 < C; c0 += HALF) {
    int width = width_at(c0, C, HALF);
    load_columns8(col, x, stride, c0, width);
    for (int j = 0; j < width; j++)
      for (int g = 0; g < 2; g++) {
        _mm256_store_ps(t + (size_t)(c0 + j) * LANES + HALF * g, col[g][j]);
        m[g] = _mm256_add_ps(m[g], col[g][j]);
      }
  }
  __m256 count = _mm256_set1_ps((float)C), one = _mm256_set1_ps(1.0f), e = _mm256_set1_ps(eps);
  for (int g = 0; g < 2; g++) {
    __m256 mg = _mm256_div_ps(m[g], count), v = _mm256_setzero_ps();
    for (int c = 0; c < C; c++) {
      __m256 centred = _mm256_sub_ps(_mm256_load_ps(t + (size_t)c * LANES + HALF * g), mg);
      v = _mm256_add_ps(v, _mm256_mul_ps(centred, centred));
    }
    v = _mm256_div_ps(v, count);
    _mm256_storeu_ps(mean + HALF * g, mg);
    _mm256_storeu_ps(rstd + HALF * g, _mm256_div_ps(one, _mm256_sqrt_ps(_mm256_add_ps(v, e))));
  }
}

AVX2 static void layernorm_backward_means_avx2(float *dnorm_mean, float *dnorm_norm_mean, const float *d,
                                               const float *x, size_t stride, const float *weight, const float *mean,
                                               const float *rstd, int C) {
  __m256 m[2] = {_mm256_loadu_ps(mean), _mm256_loadu_ps(mean + HALF)};
  __m256 s[2] = {_mm256_loadu_ps(rstd), _mm256_loadu_ps(rstd + HALF)};
  __m256 sum[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, norm_sum[2] = {sum[0], sum[1]};
  __m256 dcol[2][HALF], xcol[2][HALF];
  for (int c0 = 0; c0 < C; c0 += HALF) {
    int width = width_at(c0, C, HALF);
    load_columns8(dcol, d, stride, c0, width);
    load_columns8(xcol, x, stride, c0, width);
    for (int j = 0; j < width; j++)
      for (int g = 0; g < 2; g++) {
        __m256 dnorm = _mm256_mul_ps(dcol[g][j], _mm256_set1_ps(weight[c0 + j]));
        sum[g] = _mm256_add_ps(sum[g], dnorm);
        norm_sum[g] =
            _mm256_add_ps(norm_sum[g], _mm256_mul_ps(_mm256_mul_ps(dnorm, _mm256_sub_ps(xcol[g][j], m[g])), s[g]));
      }
  }
  __m256 count = _mm256_set1_ps((float)C);
  for (int g = 0; g < 2; g++) {
    _mm256_storeu_ps(dnorm_mean + HALF * g, _mm256_div_ps(sum[g], count));
    _mm256_storeu_ps(dnorm_norm_mean + HALF * g, _mm256_div_ps(norm_sum[g], count));
  }
}

AVX2 static void rmsnorm_rstd_avx2(float *rstd, const float *x, size_t stride, int C, float eps) {
  __m256 ss[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, col[2][HALF];
  for (int c0 = 0; c0 < C; c0 += HALF) {
    int width = width_at(c0, C, HALF);
    load_columns8(col, x, stride, c0, width);
    for (int j = 0; j < width; j++)
      for (int g = 0; g < 2; g++) ss[g] = _mm256_add_ps(ss[g], _mm256_mul_ps(col[g][j], col[g][j]));
  }
  __m256 count = _mm256_set1_ps((float)C), one = _mm256_set1_ps(1.0f), e = _mm256_set1_ps(eps);
  for (int g = 0; g < 2; g++) {
    __m256 root = _mm256_sqrt_ps(_mm256_add_ps(_mm256_div_ps(ss[g], count), e));
    _mm256_storeu_ps(rstd + HALF * g, _mm256_div_ps(one, root));
  }
}

AVX2 static void rmsnorm_backward_mean_avx2(float *dnorm_norm_mean, const float *d, const float *x, size_t stride,
                                            const float *weight, const float *rstd, int C) {
  __m256 s[2] = {_mm256_loadu_ps(rstd), _mm256_loadu_ps(rstd + HALF)};
  __m256 sum[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, dcol[2][HALF], xcol[2][HALF];
  for (int c0 = 0; c0 < C; c0 += HALF) {
    int width = width_at(c0, C, HALF);
    load_columns8(dcol, d, stride, c0, width);
    load_columns8(xcol, x, stride, c0, width);
    for (int j = 0; j < width; j++)
      for (int g = 0; g < 2; g++) {
        __m256 dw = _mm256_mul_ps(dcol[g][j], _mm256_set1_ps(weight[c0 + j]));
        sum[g] = _mm256_add_ps(sum[g], _mm256_mul_ps(_mm256_mul_ps(dw, xcol[g][j]), s[g]));
      }
  }
  __m256 count = _mm256_set1_ps((float)C);
  for (int g = 0; g < 2; g++) _mm256_storeu_ps(dnorm_norm_mean + HALF * g, _mm256_div_ps(sum[g], count));
}

#define LANES_PATH(avx512, avx2, ...) (simd_isa() >= SIMD_AVX512 ? avx512 : avx2)(__VA_ARGS__)
#else
/* Unreached: norm_rows_per_task gives LANES only where a vector path exists. */
_Noreturn static void no_lanes(const char *path, ...) { fsdp_fatal("lanes: no %s on this CPU", path); }
#define LANES_PATH(avx512, avx2, ...) no_lanes(#avx2, __VA_ARGS__)
#endif

void lanes_layernorm_stats(float *mean, float *rstd, const float *x, size_t stride, int C, float eps, float *t) {
  LANES_PATH(layernorm_stats_avx512, layernorm_stats_avx2, mean, rstd, x, stride, C, eps, t);
}

void lanes_layernorm_backward_means(float *dnorm_mean, float *dnorm_norm_mean, const float *d, const float *x,
                                    size_t stride, const float *weight, const float *mean, const float *rstd, int C) {
  LANES_PATH(layernorm_backward_means_avx512, layernorm_backward_means_avx2, dnorm_mean, dnorm_norm_mean, d, x, stride,
             weight, mean, rstd, C);
}

void lanes_rmsnorm_rstd(float *rstd, const float *x, size_t stride, int C, float eps) {
  LANES_PATH(rmsnorm_rstd_avx512, rmsnorm_rstd_avx2, rstd, x, stride, C, eps);
}

void lanes_rmsnorm_backward_mean(float *dnorm_norm_mean, const float *d, const float *x, size_t stride,
                                 const float *weight, const float *rstd, int C) {
  LANES_PATH(rmsnorm_backward_mean_avx512, rmsnorm_backward_mean_avx2, dnorm_norm_mean, d, x, stride, weight, rstd, C);
}
