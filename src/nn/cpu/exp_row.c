/* exp_row.h, on exp_fp32.h's exp, 2^k applied by scalef (AVX-512), two exact products by
 * powers of two (AVX2) or ldexpf (the scalar twin). Below -87 the result is 0 rather than
 * a subnormal (under 2^-126): a weight that small moves no fp32 sum of the row's, and the
 * bf16 products read subnormals as 0 anyway (vdpbf16ps). Above 89 it is infinity; NaN
 * stays NaN. Each step is one fp32 operation, fused multiply-adds where written: the
 * twins' results are the same bits. */
#include "exp_row.h"

#include <math.h>

#include "exp_fp32.h"
#include "fsdp/simd.h"
#if defined(__x86_64__)
#include "avx2.h"
#include "avx512.h"
#endif

static const float LOWEST = -87.0f, HIGHEST = 89.0f;
enum { LANES = 16 };

static float exp_scalar(float x) {
  if (x < LOWEST) return 0.0f;
  x = x > HIGHEST ? HIGHEST : x;
  if (isnan(x)) return x;
  float k = nearbyintf(x * EXP_LOG2E);
  float r = fmaf(k, -EXP_LN2_HI, x);
  r = fmaf(k, -EXP_LN2_LO, r);
  float p = EXP_P[0];
  for (int i = 1; i < 6; i++) p = fmaf(p, r, EXP_P[i]);
  float y = fmaf(p, r * r, r) + 1.0f;
  return ldexpf(y, (int)k);
}

/* The twin's sum of its sixteen partial sums, in exp_row_avx512's order. */
static float sum_pairwise(float part[LANES]) {
  for (int w = LANES / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; i++) part[i] += part[i + w];
  return part[0];
}

static float exp_row_scalar(float *row, int n, int seen, float scale, float shift) {
  float part[LANES] = {0};
  for (int c = 0; c < n; c++) {
    row[c] = c < seen ? exp_scalar(row[c] * scale - shift) : 0.0f;
    part[c % LANES] += row[c];
  }
  return sum_pairwise(part);
}

#if defined(__x86_64__)
/* max(lo, x) and min(hi, x) return x where x is NaN: MAXPS and MINPS return their second
 * operand where either is NaN. */
AVX512 static __m512 exp_avx512(__m512 x) {
  __mmask16 underflows = _mm512_cmp_ps_mask(x, _mm512_set1_ps(LOWEST), _CMP_LT_OQ);
  x = _mm512_max_ps(_mm512_set1_ps(LOWEST), x);
  x = _mm512_min_ps(_mm512_set1_ps(HIGHEST), x);
  __m512 k =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(EXP_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(k, _mm512_set1_ps(-EXP_LN2_HI), x);
  r = _mm512_fmadd_ps(k, _mm512_set1_ps(-EXP_LN2_LO), r);
  __m512 p = _mm512_set1_ps(EXP_P[0]);
  for (int i = 1; i < 6; i++) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P[i]));
  __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  return _mm512_maskz_mov_ps(~underflows, _mm512_scalef_ps(y, k));
}

AVX512 static float exp_row_avx512(float *row, int n, int seen, float scale, float shift) {
  __m512 sum = _mm512_setzero_ps(), by = _mm512_set1_ps(scale), less = _mm512_set1_ps(shift);
  for (int c = 0; c < n; c += LANES) {
    __mmask16 visible = first16(seen - c);
    __m512 x = _mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(visible, row + c), by), less);
    __m512 e = _mm512_maskz_mov_ps(visible, exp_avx512(x));
    _mm512_mask_storeu_ps(row + c, first16(n - c), e);
    sum = _mm512_add_ps(sum, e);
  }
  __m256 half =
      _mm256_add_ps(_mm512_castps512_ps256(sum), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sum), 1)));
  __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
  quarter = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

/* exp_avx512's steps on eight lanes. 2^k, k in [-126, 128], is applied as 2^(k - h) 2^h
 * with h = floor(k / 2): both factors normal, each product exact where the result is
 * normal (every result here, above -87), so the two give scalef's and ldexpf's bits. */
AVX2 static __m256 exp_avx2(__m256 x) {
  __m256 underflows = _mm256_cmp_ps(x, _mm256_set1_ps(LOWEST), _CMP_LT_OQ);
  x = _mm256_max_ps(_mm256_set1_ps(LOWEST), x);
  x = _mm256_min_ps(_mm256_set1_ps(HIGHEST), x);
  __m256 k =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(EXP_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(k, _mm256_set1_ps(-EXP_LN2_HI), x);
  r = _mm256_fmadd_ps(k, _mm256_set1_ps(-EXP_LN2_LO), r);
  __m256 p = _mm256_set1_ps(EXP_P[0]);
  for (int i = 1; i < 6; i++) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P[i]));
  __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  __m256i ki = _mm256_cvtps_epi32(k), h = _mm256_srai_epi32(ki, 1), bias = _mm256_set1_epi32(127);
  __m256 low = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
  __m256 high = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ki, h), bias), 23));
  return _mm256_andnot_ps(underflows, _mm256_mul_ps(_mm256_mul_ps(y, low), high));
}

/* Sixteen columns a step as two vectors of eight, so that the partial sums are the
 * AVX-512 path's sixteen, added in its order. */
AVX2 static float exp_row_avx2(float *row, int n, int seen, float scale, float shift) {
  __m256 sum[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  __m256 by = _mm256_set1_ps(scale), less = _mm256_set1_ps(shift);
  for (int c = 0; c < n; c += LANES)
    for (int half = 0; half < 2; half++) {
      int c0 = c + half * 8;
      __m256i visible = first8(seen - c0);
      __m256 x = _mm256_sub_ps(_mm256_mul_ps(_mm256_maskload_ps(row + c0, visible), by), less);
      __m256 e = _mm256_and_ps(_mm256_castsi256_ps(visible), exp_avx2(x));
      _mm256_maskstore_ps(row + c0, first8(n - c0), e);
      sum[half] = _mm256_add_ps(sum[half], e);
    }
  __m256 half = _mm256_add_ps(sum[0], sum[1]);
  __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
  quarter = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

#endif

float exp_row(float *row, int n, int seen, float scale, float shift) {
#if defined(__x86_64__)
  enum simd_isa isa = simd_isa();
  if (isa >= SIMD_AVX512) return exp_row_avx512(row, n, seen, scale, shift);
  if (isa >= SIMD_AVX2) return exp_row_avx2(row, n, seen, scale, shift);
#endif
  return exp_row_scalar(row, n, seen, scale, shift);
}
