#include <math.h>
#include <stddef.h>

#include "typed.h"

/* Query i of n (position p = L - n + i), head h with kv head g = h / (NH / NKV):
 * s_j = q . k_j / sqrt(hd) for j <= p, out = softmax(s) v, in one pass over the keys with
 * the online softmax of the training attention (attention.c): a running maximum m and
 * sum l, the row o rescaled by exp(m - m') when the maximum grows, divided by l at the
 * end. k and v: the kv head's rows, ldkv floats apart. */
static void cached_head(float *o, const float *qi, const float *k, const float *v, size_t ldkv, int last, int hd,
                        float scale) {
  float m = -INFINITY, l = 0.0f;
  for (int e = 0; e < hd; e++) o[e] = 0.0f;
  for (int j = 0; j <= last; j++) {
    const float *kj = k + (size_t)j * ldkv, *vj = v + (size_t)j * ldkv;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int e = 0; e < hd; e++) s += qi[e] * kj[e];
    s *= scale;
    if (s > m) {
      float rescale = expf(m - s);
      l *= rescale;
      for (int e = 0; e < hd; e++) o[e] *= rescale;
      m = s;
    }
    float w = expf(s - m);
    l += w;
#pragma omp simd
    for (int e = 0; e < hd; e++) o[e] += w * vj[e];
  }
  float inv = 1.0f / l;
  for (int e = 0; e < hd; e++) o[e] *= inv;
}

/* A task takes query i and kv head g with the query heads that share it: a 16-bit call
 * widens the kv head's keys and values up to the query's position once for them, and
 * each head's out row is summed in fp32 and stored rounded once. */
static void cached_attention_forward(struct tensor out, struct tensor q, struct tensor k, struct tensor v, int n,
                                     int L, int NH, int NKV, int hd) {
  int group = NH / NKV;
  float scale = 1.0f / sqrtf((float)hd);
  size_t kvs = (size_t)NKV * hd;
#pragma omp parallel for collapse(2)
  for (int i = 0; i < n; i++) {
    for (int g = 0; g < NKV; g++) {
      int last = L - n + i;
      float *buf = span_scratch(q.dtype, 2 * (size_t)(last + 1) * hd + 2 * (size_t)hd);
      const float *kg, *vg;
      size_t ldkv = kvs;
      if (q.dtype == DTYPE_F32) {
        kg = f32(k) + (size_t)g * hd;
        vg = f32(v) + (size_t)g * hd;
      } else {
        rows_in(k, (size_t)g * hd, last + 1, hd, kvs, buf);
        rows_in(v, (size_t)g * hd, last + 1, hd, kvs, buf + (size_t)(last + 1) * hd);
        kg = buf;
        vg = buf + (size_t)(last + 1) * hd;
        ldkv = (size_t)hd;
      }
      float *rows = scratch_at(buf, 2 * (size_t)(last + 1) * hd);
      for (int h = g * group; h < (g + 1) * group; h++) {
        size_t row = ((size_t)i * NH + h) * hd;
        const float *qi = span_in(q, row, (size_t)hd, rows);
        float *o = span_out(out, row, scratch_at(rows, (size_t)hd));
        cached_head(o, qi, kg, vg, ldkv, last, hd, scale);
        span_store(out, row, (size_t)hd, o);
      }
    }
  }
}

void cpu_cached_attention_forward(void *p) {
  const struct cached_attention_args *a = p;
  cached_attention_forward(a->out, a->q, a->k, a->v, dim(a->q, 0), dim(a->k, 0), dim(a->q, 1), dim(a->k, 1),
                           dim(a->q, 2));
}
