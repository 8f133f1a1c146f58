#include <math.h>
#include <stddef.h>

#include "cpu.h"

/* Query i of n (position p = L - n + i), head h with kv head g = h / (NH / NKV):
 * s_j = q . k_j / sqrt(hd) for j <= p, out = sum_j exp(s_j - max_j s_j) v_j / sum_j exp(s_j - max_j s_j).
 * Two passes over the keys (the maximum, then the weighted sum into out itself) need no
 * scratch; a decode step has few queries, so recomputing the dot products is cheap. */
static void cached_attention_forward(float *out, const float *q, const float *k, const float *v, int n, int L,
                                     int NH, int NKV, int hd) {
  int group = NH / NKV;
  float scale = 1.0f / sqrtf((float)hd);
#pragma omp parallel for collapse(2)
  for (int i = 0; i < n; i++) {
    for (int h = 0; h < NH; h++) {
      const float *qi = q + ((size_t)i * NH + h) * hd;
      float *o = out + ((size_t)i * NH + h) * hd;
      size_t g = (size_t)(h / group);
      int last = L - n + i;
      float maxval = -INFINITY;
      for (int j = 0; j <= last; j++) {
        const float *kj = k + ((size_t)j * NKV + g) * hd;
        float s = 0.0f;
        for (int e = 0; e < hd; e++) s += qi[e] * kj[e];
        s *= scale;
        maxval = s > maxval ? s : maxval;
      }
      float sum = 0.0f;
      for (int e = 0; e < hd; e++) o[e] = 0.0f;
      for (int j = 0; j <= last; j++) {
        const float *kj = k + ((size_t)j * NKV + g) * hd, *vj = v + ((size_t)j * NKV + g) * hd;
        float s = 0.0f;
        for (int e = 0; e < hd; e++) s += qi[e] * kj[e];
        float w = expf(s * scale - maxval);
        sum += w;
        for (int e = 0; e < hd; e++) o[e] += w * vj[e];
      }
      float inv = 1.0f / sum;
      for (int e = 0; e < hd; e++) o[e] *= inv;
    }
  }
}

void cpu_cached_attention_forward(void *p) {
  const struct cached_attention_args *a = p;
  cached_attention_forward(f32(a->out), f32(a->q), f32(a->k), f32(a->v), dim(a->q, 0), dim(a->k, 0), dim(a->q, 1),
                           dim(a->k, 1), dim(a->q, 2));
}
