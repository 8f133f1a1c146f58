/* AdamW on the fp32 shards, the one runtime kernel that runs on OpenMP's threads: it is
 * launched only on the home stream, the calling thread (runtime.c's others run on the comm
 * streams' threads too, where a team of their own would fight the compute thread's):
 *   g = grad * grad_scale,  m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2,
 *   param = param (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 * The AVX-512 loop performs each element's operations in the scalar loop's order, with no
 * fused multiply-add (the C is not contracted either), and IEEE square roots and
 * divisions: the two give the same bits (fsdp/simd.h). */
#include <immintrin.h>
#include <math.h>

#include "cpu.h"
#include "fsdp/dtype.h"
#include "fsdp/simd.h"

/* Elements [first, n) of the update. */
static void adamw_scalar(float *param, const float *grad, float grad_scale, float *m, float *v, size_t first,
                         size_t n, const struct nn_adamw *h) {
  float decay = 1.0f - h->lr * h->weight_decay;
  float step_size = h->lr / h->bias_correction1;
  for (size_t i = first; i < n; i++) {
    float g = grad[i] * grad_scale;
    param[i] *= decay;
    m[i] = h->beta1 * m[i] + (1.0f - h->beta1) * g;
    v[i] = h->beta2 * v[i] + (1.0f - h->beta2) * g * g;
    param[i] -= step_size * m[i] / (sqrtf(v[i]) / h->bias_correction2_sqrt + h->eps);
  }
}

__attribute__((target("avx512f"))) static void adamw_avx512(float *param, const float *grad, float grad_scale,
                                                            float *m, float *v, size_t n, const struct nn_adamw *h) {
  __m512 scale = _mm512_set1_ps(grad_scale);
  __m512 decay = _mm512_set1_ps(1.0f - h->lr * h->weight_decay);
  __m512 step_size = _mm512_set1_ps(h->lr / h->bias_correction1);
  __m512 b1 = _mm512_set1_ps(h->beta1), b2 = _mm512_set1_ps(h->beta2);
  __m512 rest1 = _mm512_set1_ps(1.0f - h->beta1), rest2 = _mm512_set1_ps(1.0f - h->beta2);
  __m512 bc2 = _mm512_set1_ps(h->bias_correction2_sqrt), eps = _mm512_set1_ps(h->eps);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 g = _mm512_mul_ps(_mm512_loadu_ps(grad + i), scale);
    __m512 p = _mm512_mul_ps(_mm512_loadu_ps(param + i), decay);
    __m512 mi = _mm512_add_ps(_mm512_mul_ps(b1, _mm512_loadu_ps(m + i)), _mm512_mul_ps(rest1, g));
    __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_loadu_ps(v + i)), _mm512_mul_ps(_mm512_mul_ps(rest2, g), g));
    __m512 denominator = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bc2), eps);
    p = _mm512_sub_ps(p, _mm512_div_ps(_mm512_mul_ps(step_size, mi), denominator));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    _mm512_storeu_ps(param + i, p);
  }
  adamw_scalar(param, grad, grad_scale, m, v, i, n, h);
}

/* Elements a chunk at a time, the chunks spread over the threads (one core alone does not
 * reach the memory's bandwidth); a chunk's rounded copy is made while it is in cache. */
enum { ADAMW_CHUNK = 1 << 14 };

void cpu_adamw(void *p) {
  const struct adamw_args *a = p;
  size_t n = tensor_numel(&a->param), chunks = (n + ADAMW_CHUNK - 1) / ADAMW_CHUNK;
  /* A product by 1 is exact: without a scale, g is grad. */
  float grad_scale = a->grad_scale.data ? *f32(a->grad_scale) : 1.0f;
  float *param = f32(a->param), *m = f32(a->m), *v = f32(a->v);
  const float *grad = f32(a->grad);
  int avx512 = simd_isa() >= SIMD_AVX512;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (size_t c = 0; c < chunks; c++) {
    size_t first = c * ADAMW_CHUNK, count = n - first < ADAMW_CHUNK ? n - first : ADAMW_CHUNK;
    if (avx512)
      adamw_avx512(param + first, grad + first, grad_scale, m + first, v + first, count, &a->h);
    else
      adamw_scalar(param + first, grad + first, grad_scale, m + first, v + first, 0, count, &a->h);
    if (a->rounded.data) dtype_pack(a->rounded.dtype, param + first, (uint16_t *)a->rounded.data + first, count);
  }
}
