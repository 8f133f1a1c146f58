/* AdamW on the fp32 shards, the one runtime kernel that runs on OpenMP's threads: it is
 * launched only on the home stream, the calling thread (runtime.c's others run on the comm
 * streams' threads too, where a team of their own would fight the compute thread's):
 *   g = grad * grad_scale,  m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2,
 *   param = param (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 * One loop, which the compiler vectorizes for each instruction set (fsdp/simd.h's
 * clones): every element's operations in the written order, not contracted into fused
 * multiply-adds, IEEE square roots and divisions, so every path gives the same bits. */
#include <math.h>

#include "cpu.h"
#include "fsdp/dtype.h"
#include "fsdp/simd.h"

/* n elements of the update. */
static inline __attribute__((always_inline)) void adamw_elements(float *restrict param, const float *restrict grad,
                                                                 float grad_scale, float *restrict m,
                                                                 float *restrict v, size_t n,
                                                                 const struct nn_adamw *h) {
  float decay = 1.0f - h->lr * h->weight_decay, step_size = h->lr / h->bias_correction1;
  float b1 = h->beta1, b2 = h->beta2, bc2 = h->bias_correction2_sqrt, eps = h->eps;
  for (size_t i = 0; i < n; i++) {
    float g = grad[i] * grad_scale;
    param[i] *= decay;
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    param[i] -= step_size * m[i] / (sqrtf(v[i]) / bc2 + eps);
  }
}

SIMD_CLONES(static void adamw, (float *param, const float *grad, float grad_scale, float *m, float *v, size_t n,
                                const struct nn_adamw *h),
            adamw_elements(param, grad, grad_scale, m, v, n, h))

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
  void (*update)(float *, const float *, float, float *, float *, size_t, const struct nn_adamw *) =
      SIMD_CLONE(adamw);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (size_t c = 0; c < chunks; c++) {
    size_t first = c * ADAMW_CHUNK, count = n - first < ADAMW_CHUNK ? n - first : ADAMW_CHUNK;
    update(param + first, grad + first, grad_scale, m + first, v + first, count, &a->h);
    if (a->rounded.data) dtype_pack(a->rounded.dtype, param + first, (uint16_t *)a->rounded.data + first, count);
  }
}
